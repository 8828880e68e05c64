/* ref.c — addressing inside refs: tiles of a tiled ref (layout in tilec.h). A tiled ref with
 * shape [..., R, C] holds ceil(R/tile_r) x ceil(C/tile_c) tiles per leading index, tile-row-major,
 * each tile_r*tile_c elements, leading dims outermost. */
#include "runtime_impl.h"

void *tl_ref_tile_nd(const tl_ref *r, const int64_t *lead, int64_t tile_row, int64_t tile_col) {
  if (!r || !r->data || !r->layout.tiled || r->ndim < 2 || !r->layout.tile_r || !r->layout.tile_c)
    return NULL;
  int64_t tr = r->layout.tile_r, tc = r->layout.tile_c;
  int64_t rows = TL_CDIV(r->shape[r->ndim - 2], tr), cols = TL_CDIV(r->shape[r->ndim - 1], tc);
  if (tile_row < 0 || tile_row >= rows || tile_col < 0 || tile_col >= cols) return NULL;
  int64_t idx = 0;
  for (int d = 0; d < r->ndim - 2; d++) {
    int64_t l = lead ? lead[d] : 0;
    if (l < 0 || l >= r->shape[d]) return NULL;
    idx = idx * r->shape[d] + l;
  }
  idx = (idx * rows + tile_row) * cols + tile_col;
  return (char *)r->data + idx * tr * tc * (int64_t)tl_dtype_size(r->dtype);
}

void *tl_ref_tile(const tl_ref *r, int64_t tile_row, int64_t tile_col) {
  return tl_ref_tile_nd(r, NULL, tile_row, tile_col);
}
