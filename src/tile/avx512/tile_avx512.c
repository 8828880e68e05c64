/* tile_avx512.c — the avx512 entry of the tile-operation table (contract in tile_impl.h).
 *
 * The operations live in their own files of this folder (dot_avx512.c, ew_avx512.c); an
 * operation is listed below once its file exists. A NULL operation passes the call to the level
 * below (the scalar reference handles everything).
 */
#include "../tile_impl.h"

int tl_avx512_dot(tl_ref *acc, const tl_ref *a, const tl_ref *b, unsigned flags);
int tl_avx512_fill(tl_ref *r, double v);
int tl_avx512_cast(tl_ref *dst, const tl_ref *src);
int tl_avx512_unary(tl_ref *dst, const tl_ref *src, tl_unary op);
int tl_avx512_binary(tl_ref *dst, const tl_ref *a, const tl_ref *b, tl_binary op);
int tl_avx512_reduce(tl_ref *dst, const tl_ref *src, int axis, tl_reduce op);

const tl_tile_impl tl_tile_avx512_impl = {
    .isa = TL_ISA_AVX512,
    .name = "avx512",
    .dot = tl_avx512_dot,
    /* .dot = tl_avx512_dot, ... : added with their files */
    .fill = tl_avx512_fill,
    .cast = tl_avx512_cast,
    .unary = tl_avx512_unary,
    .binary = tl_avx512_binary,
    .reduce = tl_avx512_reduce,
};
