/* tile_rows.h — walking the rows of row-major refs, shared by the scalar reference and the ISA
 * paths (portable C, static inline: each ISA file compiles it with its own flags). A "row" is the
 * last dim; idx[0..nd-2] names one. */
#ifndef TL_TILE_ROWS_H
#define TL_TILE_ROWS_H

#include "tile_impl.h"

/* Offset in elements of the row idx[0..nd-2] (idx[nd-1] is not used) under strides st. */
static inline int64_t tl_row_off(int nd, const int64_t *st, const int64_t *idx) {
  int64_t off = 0;
  for (int d = 0; d < nd - 1; d++) off += idx[d] * st[d];
  return off;
}

/* Advances idx over the first n dims of shape, last fastest; 0 after the last index. */
static inline int tl_idx_next(int n, const int64_t *shape, int64_t *idx) {
  for (int d = n - 1; d >= 0; d--) {
    if (++idx[d] < shape[d]) return 1;
    idx[d] = 0;
  }
  return 0;
}

/* 1 when r has no elements. */
static inline int tl_ref_empty(const tl_ref *r) {
  for (int d = 0; d < r->ndim; d++)
    if (r->shape[d] == 0) return 1;
  return 0;
}

/* 1 when r's rows are contiguous: row-major with last-dim stride 1 (or rows of <= 1 element). */
static inline int tl_ref_unit_rows(const tl_ref *r) {
  if (r->layout.tiled) return 0;
  return r->ndim == 0 || r->shape[r->ndim - 1] <= 1 || r->stride[r->ndim - 1] == 1;
}

/* 1 for the dtypes the vector elementwise loops load and store (f32, bf16). */
static inline int tl_ew_dtype(tl_dtype dt) { return dt == TL_F32 || dt == TL_BF16; }

#endif /* TL_TILE_ROWS_H */
