/* tile_avx2vnni.c — the avx2vnni entry of the tile-operation table (contract in tile_impl.h):
 * AVX2 with AVX-VNNI. Only the dot has a path of its own (int8 on the VEX VPDPBUSD,
 * dot_avx2vnni.c), and only on a CPU that has AVX-VNNI (the level is a side branch: an AVX-512
 * CPU without it passes through here); every other operation passes to the avx2 level below. */
#include "../tile_impl.h"

int tl_avx2vnni_dot(tl_ref *acc, const tl_ref *a, const tl_ref *b, unsigned flags);

const tl_tile_impl tl_tile_avx2vnni_impl = {
    .isa = TL_ISA_AVX2VNNI,
    .name = "avx2vnni",
    .dot = tl_avx2vnni_dot,
};
