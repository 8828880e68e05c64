/* tile_avx2.c — the avx2 entry of the tile-operation table (contract in tile_impl.h).
 *
 * The operations live in their own files of this folder (dot_avx2.c, ew_avx2.c); an
 * operation is listed below once its file exists. A NULL operation passes the call to the level
 * below (the scalar reference handles everything).
 */
#include "../tile_impl.h"

int tl_avx2_dot(tl_ref *acc, const tl_ref *a, const tl_ref *b, unsigned flags);
int tl_avx2_fill(tl_ref *r, double v);
int tl_avx2_cast(tl_ref *dst, const tl_ref *src);
int tl_avx2_unary(tl_ref *dst, const tl_ref *src, tl_unary op);
int tl_avx2_binary(tl_ref *dst, const tl_ref *a, const tl_ref *b, tl_binary op);
int tl_avx2_reduce(tl_ref *dst, const tl_ref *src, int axis, tl_reduce op);

const tl_tile_impl tl_tile_avx2_impl = {
    .isa = TL_ISA_AVX2,
    .name = "avx2",
    .dot = tl_avx2_dot,
    /* .dot = tl_avx2_dot, ... : added with their files */
    .fill = tl_avx2_fill,
    .cast = tl_avx2_cast,
    .unary = tl_avx2_unary,
    .binary = tl_avx2_binary,
    .reduce = tl_avx2_reduce,
};
