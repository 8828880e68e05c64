/* tile_test_util.h — test buffers for the tile-op tests (tests/tile/test_tile_*.c): a tl_ref over
 * its own allocation, poisoned (all bytes 0xFF: NaN for floats) so that unwritten outputs, reads
 * of accumulators that should not be read and writes into row gaps or tile padding show. Element
 * addressing here is written independently of the library's (only tl_layout_tile_offset, the
 * contract, is shared). Values go through tl_load_f64 / tl_store_f64. */
#ifndef TL_TILE_TEST_UTIL_H
#define TL_TILE_TEST_UTIL_H

#include "test_util.h"
#include "tile/tile_impl.h"

/* ---- test buffers: a ref over its own poisoned allocation ---- */

typedef struct tbuf {
  tl_ref r;
  unsigned char *mem;
  int64_t nelem; /* elements allocated */
} tbuf;

#define POISON 0xFF

/* Row-major block of shape[0..nd-1]: the last dim has stride cstride (>= 1), each row is padded
 * by rowpad elements, outer dims are dense over that. */
static inline tbuf tb_rm(tl_dtype dt, int nd, const int64_t *shape, int64_t rowpad, int64_t cstride) {
  tbuf b;
  memset(&b, 0, sizeof b);
  b.r.dtype = dt;
  b.r.ndim = nd;
  int64_t st = 1;
  for (int d = nd - 1; d >= 0; d--) {
    b.r.shape[d] = shape[d];
    b.r.valid[d] = shape[d];
    if (d == nd - 1) {
      b.r.stride[d] = cstride;
      st = shape[d] * cstride + rowpad;
    } else {
      b.r.stride[d] = st;
      st *= shape[d];
    }
  }
  b.nelem = nd ? b.r.stride[0] * shape[0] + cstride + rowpad : 1;
  if (b.nelem < 1) b.nelem = 1;
  b.mem = malloc((size_t)b.nelem * tl_dtype_size(dt));
  memset(b.mem, POISON, (size_t)b.nelem * tl_dtype_size(dt));
  b.r.data = b.mem;
  return b;
}

static inline tbuf tb_rm2(tl_dtype dt, int64_t r, int64_t c, int64_t rowpad) {
  int64_t s[2] = {r, c};
  return tb_rm(dt, 2, s, rowpad, 1);
}

/* Tiled block (ndim >= 2) with tiles tr x tc and the given vnni; padding poisoned. */
static inline tbuf tb_tiled(tl_dtype dt, int nd, const int64_t *shape, int tr, int tc, int vnni) {
  tbuf b;
  memset(&b, 0, sizeof b);
  b.r.dtype = dt;
  b.r.ndim = nd;
  b.r.layout = (tl_layout){.tiled = 1, .vnni = (uint8_t)vnni, .tile_r = (uint16_t)tr, .tile_c = (uint16_t)tc};
  int64_t n = TL_CDIV(shape[nd - 2], tr) * TL_CDIV(shape[nd - 1], tc) * tr * tc;
  for (int d = 0; d < nd; d++) {
    b.r.shape[d] = b.r.valid[d] = shape[d];
    if (d < nd - 2) n *= shape[d];
  }
  b.nelem = n ? n : 1;
  b.mem = malloc((size_t)b.nelem * tl_dtype_size(dt));
  memset(b.mem, POISON, (size_t)b.nelem * tl_dtype_size(dt));
  b.r.data = b.mem;
  return b;
}

static inline void tb_free(tbuf *b) { free(b->mem); }

/* The element offset of idx, computed here independently of the library's addressing. */
static inline int64_t tb_off(const tl_ref *r, const int64_t *idx) {
  int64_t off = 0;
  if (!r->layout.tiled) {
    for (int d = 0; d < r->ndim; d++) off += idx[d] * r->stride[d];
    return off;
  }
  int nd = r->ndim;
  int64_t tr = r->layout.tile_r, tc = r->layout.tile_c;
  int64_t rows = TL_CDIV(r->shape[nd - 2], tr), cols = TL_CDIV(r->shape[nd - 1], tc);
  int64_t lead = 0;
  for (int d = 0; d < nd - 2; d++) lead = lead * r->shape[d] + idx[d];
  int64_t i = idx[nd - 2], j = idx[nd - 1];
  int64_t tile = (lead * rows + i / tr) * cols + j / tc;
  return tile * tr * tc + tl_layout_tile_offset(r->layout, i % tr, j % tc);
}

static inline double tb_get(const tbuf *b, const int64_t *idx) {
  return tl_load_f64(b->r.data, b->r.dtype, tb_off(&b->r, idx));
}
static inline void tb_set(tbuf *b, const int64_t *idx, double v) {
  tl_store_f64(b->r.data, b->r.dtype, tb_off(&b->r, idx), v);
}
static inline double tb_get2(const tbuf *b, int64_t i, int64_t j) {
  int64_t idx[2] = {i, j};
  return tb_get(b, idx);
}

static inline int64_t tb_numel(const tbuf *b) {
  int64_t n = 1;
  for (int d = 0; d < b->r.ndim; d++) n *= b->r.shape[d];
  return n;
}

/* Index number n of the shape, row-major. */
static inline void tb_index(const tbuf *b, int64_t n, int64_t *idx) {
  for (int d = b->r.ndim - 1; d >= 0; d--) {
    idx[d] = n % b->r.shape[d];
    n /= b->r.shape[d];
  }
}

static inline int is_int(tl_dtype dt) { return dt == TL_I8 || dt == TL_U8 || dt == TL_I32; }

/* Random values: floats in [lo, hi), integers over their range (i32: +-1e6). Never all zero. */
static inline void tb_rand(tbuf *b, test_rng *rng, double lo, double hi) {
  int64_t idx[TL_MAX_DIMS];
  for (int64_t n = 0; n < tb_numel(b); n++) {
    tb_index(b, n, idx);
    double v;
    switch (b->r.dtype) {
    case TL_I8: v = (double)test_rng_int(rng, -128, 127); break;
    case TL_U8: v = (double)test_rng_int(rng, 0, 255); break;
    case TL_I32: v = (double)test_rng_int(rng, -1000000, 1000000); break;
    default: v = test_rng_uniform(rng, lo, hi); break;
    }
    tb_set(b, idx, v);
  }
}

/* 1 when every byte outside the elements (row gaps, tile padding) still holds the poison. */
static inline int tb_gaps_intact(const tbuf *b) {
  size_t es = tl_dtype_size(b->r.dtype), bytes = (size_t)b->nelem * es;
  unsigned char *used = calloc(bytes, 1);
  int64_t idx[TL_MAX_DIMS];
  for (int64_t n = 0; n < tb_numel(b); n++) {
    tb_index(b, n, idx);
    memset(used + tb_off(&b->r, idx) * (int64_t)es, 1, es);
  }
  int ok = 1;
  for (size_t i = 0; i < bytes; i++)
    if (!used[i] && b->mem[i] != POISON) ok = 0;
  free(used);
  return ok;
}

/* Copies b's element values out as doubles (row-major order). */
static inline double *tb_values(const tbuf *b) {
  int64_t n = tb_numel(b), idx[TL_MAX_DIMS];
  double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
  for (int64_t i = 0; i < n; i++) {
    tb_index(b, i, idx);
    v[i] = tb_get(b, idx);
  }
  return v;
}

/* The value v becomes when stored in dtype dt. */
static inline double quant(tl_dtype dt, double v) {
  union {
    float f;
    int32_t i;
    uint16_t h;
  } u;
  tl_store_f64(&u, dt, 0, v);
  return tl_load_f64(&u, dt, 0);
}

/* Tolerance of ||out - ref|| / ||ref|| for results stored in dt (op computed in f32). */
static inline double tol_of(tl_dtype dt) {
  switch (dt) {
  case TL_BF16: return 1e-2;
  case TL_F16: return 2e-3;
  case TL_F32: return 1e-5;
  default: return 0;
  }
}

static const tl_dtype all_dtypes[] __attribute__((unused)) = {TL_F32, TL_F16, TL_BF16, TL_I8, TL_U8, TL_I32};

#endif /* TL_TILE_TEST_UTIL_H */
