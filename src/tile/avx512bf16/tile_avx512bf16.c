/* tile_avx512bf16.c — the avx512bf16 entry of the tile-operation table (contract in tile_impl.h).
 *
 * The operations live in their own files of this folder (dot_avx512bf16.c); an
 * operation is listed below once its file exists. A NULL operation passes the call to the level
 * below (the scalar reference handles everything).
 */
#include "../tile_impl.h"

int tl_avx512bf16_dot(tl_ref *acc, const tl_ref *a, const tl_ref *b, unsigned flags);

const tl_tile_impl tl_tile_avx512bf16_impl = {
    .isa = TL_ISA_AVX512BF16,
    .name = "avx512bf16",
    .dot = tl_avx512bf16_dot,
};
