/* norm_test_util.h — tensors and checks shared by test_softmax.c and test_norm.c: random tensors
 * in f32 or bf16, contiguous, padded (every row stride larger than the row) or transposed (the
 * last two dims swapped in memory), element access in double, and the comparison of a result
 * with a float64 reference by ||out - ref|| / ||ref|| over the tensor's elements. */
#ifndef TL_NORM_TEST_UTIL_H
#define TL_NORM_TEST_UTIL_H

#include <tilec.h>

#include "test_util.h"

enum { NT_CONTIG, NT_PADDED, NT_TRANS };

typedef struct nt_t {
  tl_tensor t;
  void *mem;
  int64_t nmem; /* elements allocated */
} nt_t;

static test_rng nt_rng = {0x9e3779b97f4a7c15ull};

static void nt_set(void *mem, tl_dtype dt, int64_t i, double v) {
  if (dt == TL_F32) ((float *)mem)[i] = (float)v;
  else ((uint16_t *)mem)[i] = tl_f32_to_bf16((float)v);
}

static double nt_get(const tl_tensor *t, const int64_t *idx) {
  const void *p = tl_tensor_at(t, idx);
  return t->dtype == TL_F32 ? *(const float *)p : tl_bf16_to_f32(*(const uint16_t *)p);
}

/* A tensor of shape[0..nd) in layout lay, every allocated element uniform in [lo, hi). */
static nt_t nt_make(tl_dtype dt, int nd, const int64_t *shape, int lay, double lo, double hi) {
  nt_t m;
  int64_t ext[TL_MAX_DIMS], n = 1;
  for (int d = 0; d < nd; d++) ext[d] = shape[d];
  if (lay == NT_PADDED) {
    ext[nd - 1] += 3;
    if (nd >= 3) ext[nd - 2] += 1;
  }
  if (lay == NT_TRANS && nd >= 2) ext[nd - 1] = shape[nd - 2], ext[nd - 2] = shape[nd - 1];
  for (int d = 0; d < nd; d++) n *= ext[d];
  m.nmem = n;
  m.mem = malloc((size_t)(n ? n : 1) * tl_dtype_size(dt));
  for (int64_t i = 0; i < n; i++) nt_set(m.mem, dt, i, test_rng_uniform(&nt_rng, lo, hi));
  int64_t st[TL_MAX_DIMS], s = 1;
  for (int d = nd - 1; d >= 0; d--) st[d] = s, s *= ext[d];
  m.t = tl_tensor_make(m.mem, dt, nd, shape);
  for (int d = 0; d < nd; d++) m.t.stride[d] = st[d];
  if (lay == NT_TRANS && nd >= 2) m.t.stride[nd - 1] = st[nd - 2], m.t.stride[nd - 2] = st[nd - 1];
  return m;
}

static void nt_free(nt_t *m) { free(m->mem), m->mem = NULL; }

static int64_t nt_numel(const tl_tensor *t) {
  int64_t n = 1;
  for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
  return n;
}

/* Advances idx over shape (last fastest), skipping dim `skip` (-1: none); 0 after the last. */
static int nt_next(const tl_tensor *t, int64_t *idx, int skip) {
  for (int d = t->ndim - 1; d >= 0; d--) {
    if (d == skip) continue;
    if (++idx[d] < t->shape[d]) return 1;
    idx[d] = 0;
  }
  return 0;
}

/* Fills every allocated element of m with NaN (poison: an unwritten output shows). */
static void nt_poison(nt_t *m) {
  for (int64_t i = 0; i < m->nmem; i++) nt_set(m->mem, m->t.dtype, i, NAN);
}

/* ||out - ref|| / ||ref|| with ref in the tensor's element order (NaN if out has a NaN where ref
 * does not); ref NaN must be matched by out NaN, counted in *nan_bad otherwise. */
static double nt_err(const tl_tensor *y, const double *ref, int *nan_bad) {
  int64_t idx[TL_MAX_DIMS] = {0}, i = 0, n = nt_numel(y);
  double num = 0, den = 0;
  *nan_bad = 0;
  if (n == 0) return 0;
  do {
    double o = nt_get(y, idx), r = ref[i++];
    if (isnan(r) || isnan(o)) {
      *nan_bad += isnan(r) != isnan(o);
      continue;
    }
    if (isinf(r) || isinf(o)) {
      *nan_bad += r != o;
      continue;
    }
    num += (o - r) * (o - r), den += r * r;
  } while (nt_next(y, idx, -1));
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* The rel tolerance for an output dtype (f32 math; bf16 output rounding). */
static double nt_tol(tl_dtype ydt) { return ydt == TL_BF16 ? 5e-3 : 1e-5; }

#endif /* TL_NORM_TEST_UTIL_H */
