/* stage.c — moving blocks between a tensor and a worker's staging buffer.
 *
 * A block of an N-d tensor is staged as a stack of 2-D slabs (the last two dims; 1-D blocks are
 * one row, 0-D one element), each packed by a packer into the staging layout: row-major with row
 * stride = block columns, or tiled (tiles of tile_r x tile_c, VNNI-interleaved, padded to whole
 * tiles). Everything outside the valid region gets the pad value, so a body may compute over the
 * whole block. Packers are looked up per (element size, layout) and ISA level; the portable one
 * handles everything, ISA layers register faster ones (tl_packer_register). Write-back copies
 * the valid region only. */
#include <string.h>

#include "plan_impl.h"

/* ---- packer registry ---- */

#define TL_MAX_PACKERS 32
static tl_packer tl_packers[TL_MAX_PACKERS];
static int tl_npackers;

void tl_packer_register(const tl_packer *p) {
  if (tl_npackers < TL_MAX_PACKERS) tl_packers[tl_npackers++] = *p;
}

tl_pack_fn tl_packer_find(size_t esize, tl_layout layout, tl_isa isa) {
  int vnni = layout.vnni ? layout.vnni : 1;
  for (int i = tl_npackers - 1; i >= 0; i--) {
    const tl_packer *p = &tl_packers[i];
    if (p->isa > isa || (p->esize && p->esize != esize) || p->tiled != (layout.tiled != 0)) continue;
    if (p->tiled && p->vnni && p->vnni != vnni) continue;
    return p->fn;
  }
  return tl_pack_portable;
}

/* ---- sizes ---- */

int64_t tl_block_elems(int ndim, const int64_t *shape, tl_layout layout) {
  int64_t n = 1;
  const int plain = layout.tiled ? ndim - 2 : ndim;
  for (int d = 0; d < plain; d++)
    if (tl_mul_ovf(n, shape[d], &n)) return -1;
  if (!layout.tiled) return n;
  const int64_t tr = layout.tile_r, tc = layout.tile_c;
  const int64_t rows = shape[ndim - 2] ? (shape[ndim - 2] - 1) / tr + 1 : 0, cols = shape[ndim - 1] ? (shape[ndim - 1] - 1) / tc + 1 : 0;
  if (tl_mul_ovf(n, rows, &n) || tl_mul_ovf(n, tr, &n) || tl_mul_ovf(n, cols, &n) || tl_mul_ovf(n, tc, &n)) return -1;
  return n;
}

/* ---- the portable packer ---- */

static inline void tl_copy_elem(char *dst, const char *src, size_t esize) {
  switch (esize) {
  case 1: *dst = *src; break;
  case 2: memcpy(dst, src, 2); break;
  case 4: memcpy(dst, src, 4); break;
  default: memcpy(dst, src, esize); break;
  }
}

/* Fills n elements of esize bytes at dst with the pattern at pad. */
static void tl_fill_pattern(char *dst, int64_t n, const void *pad, size_t esize) {
  if (n <= 0) return;
  const uint8_t *b = pad;
  int same = 1;
  for (size_t i = 1; i < esize; i++) same &= b[i] == b[0];
  if (same) {
    memset(dst, b[0], (size_t)n * esize);
    return;
  }
  for (int64_t i = 0; i < n; i++) memcpy(dst + i * (int64_t)esize, pad, esize);
}

void tl_pack_portable(const tl_pack_job *j) {
  const int64_t es = (int64_t)j->esize;
  if (!j->layout.tiled) {
    for (int64_t r = 0; r < j->rows; r++) {
      char *d = j->dst + r * j->dst_cols * es;
      const char *s = j->src + r * j->src_rs * es;
      if (j->src_cs == 1)
        memcpy(d, s, (size_t)(j->cols * es));
      else
        for (int64_t c = 0; c < j->cols; c++) tl_copy_elem(d + c * es, s + c * j->src_cs * es, j->esize);
      if (j->pad) tl_fill_pattern(d + j->cols * es, j->dst_cols - j->cols, j->pad, j->esize);
    }
    if (j->pad)
      tl_fill_pattern(j->dst + j->rows * j->dst_cols * es, (j->dst_rows - j->rows) * j->dst_cols, j->pad, j->esize);
    return;
  }
  const tl_layout l = j->layout;
  const int64_t tr = l.tile_r, tc = l.tile_c, v = l.vnni ? l.vnni : 1;
  const int64_t trows = TL_CDIV(j->dst_rows, tr), tcols = TL_CDIV(j->dst_cols, tc);
  const int64_t tile = tr * tc, ts = j->tile_stride ? j->tile_stride : tile;
  if (j->pad) { /* then overwrite */
    if (ts == tile) tl_fill_pattern(j->dst, trows * tcols * tile, j->pad, j->esize);
    else
      for (int64_t t = 0; t < trows * tcols; t++) tl_fill_pattern(j->dst + t * ts * es, tile, j->pad, j->esize);
  }
  for (int64_t r = 0; r < j->rows; r++) {
    const int64_t ti = r / tr, rr = r % tr;
    const char *s = j->src + r * j->src_rs * es;
    for (int64_t c = 0; c < j->cols; c++) {
      const int64_t tj = c / tc, cc = c % tc;
      const int64_t off = (ti * tcols + tj) * ts + ((rr / v) * tc + cc) * v + rr % v;
      tl_copy_elem(j->dst + off * es, s + c * j->src_cs * es, j->esize);
    }
  }
}

/* Copies the valid rows x cols of a staged slab (src_rows x src_cols in layout) to a row-major
 * destination with strides dst_rs, dst_cs. */
void tl_unpack_portable(char *dst, int64_t dst_rs, int64_t dst_cs, const char *src, int64_t src_rows,
                        int64_t src_cols, tl_layout l, int64_t rows, int64_t cols, size_t esize) {
  const int64_t es = (int64_t)esize;
  if (!l.tiled) {
    for (int64_t r = 0; r < rows; r++) {
      char *d = dst + r * dst_rs * es;
      const char *s = src + r * src_cols * es;
      if (dst_cs == 1)
        memcpy(d, s, (size_t)(cols * es));
      else
        for (int64_t c = 0; c < cols; c++) tl_copy_elem(d + c * dst_cs * es, s + c * es, esize);
    }
    return;
  }
  const int64_t tr = l.tile_r, tc = l.tile_c, v = l.vnni ? l.vnni : 1;
  const int64_t tcols = TL_CDIV(src_cols, tc), tile = tr * tc;
  (void)src_rows;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) {
      const int64_t ti = r / tr, rr = r % tr, tj = c / tc, cc = c % tc;
      const int64_t off = (ti * tcols + tj) * tile + ((rr / v) * tc + cc) * v + rr % v;
      tl_copy_elem(dst + (r * dst_rs + c * dst_cs) * es, src + off * es, esize);
    }
}
