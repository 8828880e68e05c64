/* matmul_grid.c — C = A @ B (f32) written in the grid model, the BLIS order (j, k, i): B's block
 * (k, j) stays staged while i walks the column of A and C blocks, C accumulates in
 * TL_OUT_ACCUM_ZERO blocks that are written back when left and read back when re-entered. The
 * body is one tl_tile_dot per step, so its speed is the tile layer's (the scalar reference until
 * the matrix-unit paths land). This is examples/matmul.c as a registry entry, not tl_matmul. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels_impl.h"

static void tl_mm_body(const tl_prog *p, tl_ref *refs, void *user) {
  (void)user;
  tl_tile_dot(p, &refs[2], &refs[0], &refs[1], TL_DOT_ACCUMULATE);
}

static tl_status tl_mm_make(tl_ctx *ctx, const char *shape, tl_kcase *kc, char *err, size_t errn) {
  (void)ctx;
  int64_t d[3];
  int n = tl_shape_parse(shape ? shape : "512x512x512", d, 3, err, errn);
  if (n < 0) return TL_ERR_SHAPE;
  if (n != 3) {
    tl_msg(err, errn, "matmul_grid: shape is MxNxK, got %d sizes", n);
    return TL_ERR_SHAPE;
  }
  const int64_t M = d[0], N = d[1], K = d[2], BM = 64, BN = 64, BK = 64;
  if (tl_kcase_elems(M, K, "matmul_grid A", err, errn) < 0 || tl_kcase_elems(K, N, "matmul_grid B", err, errn) < 0 ||
      tl_kcase_elems(M, N, "matmul_grid C", err, errn) < 0)
    return TL_ERR_SHAPE;
  memset(kc, 0, sizeof *kc);
  snprintf(kc->name, sizeof kc->name, "matmul_grid");
  snprintf(kc->shape, sizeof kc->shape, "%lldx%lldx%lld", (long long)M, (long long)N, (long long)K);
  kc->dtype = TL_F32;
  float *a = tl_kcase_alloc_f32(kc, 0, M * K, -1, 1, 3), *b = tl_kcase_alloc_f32(kc, 1, K * N, -1, 1, 4);
  float *c = tl_kcase_alloc_f32(kc, 2, M * N, 0, 0, 5);
  if (!a || !b || !c) {
    tl_kcase_free(kc);
    tl_msg(err, errn, "out of memory for %s", shape);
    return TL_ERR_NOMEM;
  }
  int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
  kc->in[0] = tl_tensor_make(a, TL_F32, 2, sa);
  kc->in[1] = tl_tensor_make(b, TL_F32, 2, sb);
  kc->out[0] = tl_tensor_make(c, TL_F32, 2, sc);
  kc->specs[0] = (tl_blockspec){.ndim = 2, .block = {BM, BK}, .map = "j, k, i -> i, k"};
  kc->specs[1] = (tl_blockspec){.ndim = 2, .block = {BK, BN}, .map = "j, k, i -> k, j"};
  kc->specs[2] = (tl_blockspec){.ndim = 2, .block = {BM, BN}, .map = "j, k, i -> i, j", .out = TL_OUT_ACCUM_ZERO};
  kc->k = (tl_kernel){.name = kc->name, .body = tl_mm_body, .grid_ndim = 3,
                      .grid = {TL_CDIV(N, BN), TL_CDIV(K, BK), TL_CDIV(M, BM)}, .sem = {TL_PARALLEL}, .n_in = 2,
                      .in = &kc->specs[0], .n_out = 1, .out = &kc->specs[2], .flops = 2 * M * N * K};
  return TL_OK;
}

/* Relative error of C against A @ B in double, on up to 64 sampled rows (all when M <= 64). */
static double tl_mm_check(const tl_kcase *kc) {
  const float *a = kc->in[0].data, *b = kc->in[1].data, *c = kc->out[0].data;
  const int64_t M = kc->in[0].shape[0], K = kc->in[0].shape[1], N = kc->in[1].shape[1];
  const int64_t step = M > 64 ? M / 64 : 1;
  double num = 0, den = 0;
  for (int64_t i = 0; i < M; i += step)
    for (int64_t j = 0; j < N; j++) {
      double r = 0;
      for (int64_t q = 0; q < K; q++) r += (double)a[i * K + q] * b[q * N + j];
      num += (c[i * N + j] - r) * (c[i * N + j] - r), den += r * r;
    }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

const tl_kernel_desc tl_kernel_matmul_grid = {
    .name = "matmul_grid",
    .summary = "C = A @ B, f32, BLIS grid order (j, k, i), one tl_tile_dot per step",
    .shape_syntax = "MxNxK",
    .shapes = "512x512x512",
    .make = tl_mm_make,
    .check = tl_mm_check,
    .tolerance = 1e-5,
};
