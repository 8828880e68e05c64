/* tile_avx512vnni.c — the avx512vnni entry of the tile-operation table (contract in
 * tile_impl.h): AVX-512 with VNNI and without BF16. Only the dot has a path of its own (int8 on
 * VPDPBUSD, dot_avx512vnni.c); every other operation, and the dot of f32 and bf16, passes to the
 * avx512 level below. */
#include "../tile_impl.h"

int tl_avx512vnni_dot(tl_ref *acc, const tl_ref *a, const tl_ref *b, unsigned flags);

const tl_tile_impl tl_tile_avx512vnni_impl = {
    .isa = TL_ISA_AVX512VNNI,
    .name = "avx512vnni",
    .dot = tl_avx512vnni_dot,
};
