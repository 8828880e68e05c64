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

/* The f32 reduce driver the vector paths share, around their row kernels: over the last axis
 * (one value per row, stored in dst's dtype as the reference stores it) or over axis 0 of a 2-D
 * src into a contiguous f32 dst. Returns 1 when it did the work, 0 for other cases. Called with
 * the ISA file's own static kernels, so the compiler inlines them. */
static inline int tl_reduce_f32_rows(tl_ref *dst, const tl_ref *src, int axis, tl_reduce op,
                                     float (*sum_row)(const float *, int64_t),
                                     float (*maxmin_row)(const float *, int64_t, int),
                                     void (*reduce_cols)(float *, const float *, int64_t, int64_t, int64_t, tl_reduce)) {
  if (src->dtype != TL_F32 || !tl_ref_unit_rows(src) || dst->layout.tiled) return 0;
  const int nd = src->ndim;
  if (axis == nd - 1) {
    for (int d = 0; d < nd - 1; d++)
      if (src->shape[d] == 0) return 1;
    int64_t n = src->shape[nd - 1], idx[TL_MAX_DIMS] = {0};
    size_t ed = tl_dtype_size(dst->dtype);
    do {
      const float *s = (const float *)src->data + tl_row_off(nd, src->stride, idx);
      float r = op == TL_REDUCE_SUM ? sum_row(s, n) : maxmin_row(s, n, op == TL_REDUCE_MAX);
      /* dst's dims 0..nd-2 are src's (the reduced one is last: kept as 1 or removed) */
      char *d = (char *)dst->data + tl_row_off(nd, dst->stride, idx) * (int64_t)ed;
      tl_store_f64(d, dst->dtype, 0, r);
    } while (tl_idx_next(nd - 1, src->shape, idx));
    return 1;
  }
  if (axis == 0 && nd == 2 && dst->dtype == TL_F32 && tl_ref_unit_rows(dst)) {
    reduce_cols(dst->data, src->data, src->shape[0], src->shape[1], src->stride[0], op);
    return 1;
  }
  return 0;
}

#endif /* TL_TILE_ROWS_H */
