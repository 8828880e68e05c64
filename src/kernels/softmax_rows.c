/* softmax_rows.c — row softmax (f32) in one pass over memory: a row-tiled grid where each step
 * stages a block of whole rows and computes max, exp, sum and the division on it with tile
 * operations (examples/softmax.c as a registry entry). Rows must fit the staging budget; long
 * rows (an online two-level reduction) come with tl_softmax. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels_impl.h"

static void tl_softmax_body(const tl_prog *p, tl_ref *refs, void *user) {
  (void)p, (void)user;
  tl_ref *x = &refs[0], *y = &refs[1], *stat = &refs[2];
  tl_tile_reduce(stat, x, 1, TL_REDUCE_MAX);
  tl_tile_binary(y, x, stat, TL_BINARY_SUB);
  tl_tile_unary(y, y, TL_UNARY_EXP);
  tl_tile_reduce(stat, y, 1, TL_REDUCE_SUM);
  tl_tile_binary(y, y, stat, TL_BINARY_DIV);
}

static tl_status tl_softmax_make(tl_ctx *ctx, const char *shape, tl_kcase *kc, char *err, size_t errn) {
  int64_t d[2];
  int n = tl_shape_parse(shape ? shape : "4096x1024", d, 2, err, errn);
  if (n < 0) return TL_ERR_SHAPE;
  if (n != 2) {
    tl_msg(err, errn, "softmax_rows: shape is ROWSxCOLS, got %d sizes", n);
    return TL_ERR_SHAPE;
  }
  const int64_t rows = d[0], cols = d[1];
  if (tl_kcase_elems(rows, cols, "softmax_rows", err, errn) < 0) return TL_ERR_SHAPE;
  tl_ctx_info info;
  tl_ctx_info_get(ctx, &info);
  /* rows per block: input and output blocks within half the budget, at most 16 */
  int64_t br = TL_MAX(1, TL_MIN(16, (int64_t)info.vmem_bytes / 4 / (cols * 4)));
  memset(kc, 0, sizeof *kc);
  snprintf(kc->name, sizeof kc->name, "softmax_rows");
  snprintf(kc->shape, sizeof kc->shape, "%lldx%lld", (long long)rows, (long long)cols);
  kc->dtype = TL_F32;
  float *x = tl_kcase_alloc_f32(kc, 0, rows * cols, -8, 8, 6), *y = tl_kcase_alloc_f32(kc, 1, rows * cols, 0, 0, 7);
  if (!x || !y) {
    tl_kcase_free(kc);
    tl_msg(err, errn, "out of memory for %s", shape ? shape : "4096x1024");
    return TL_ERR_NOMEM;
  }
  int64_t sh[2] = {rows, cols};
  kc->in[0] = tl_tensor_make(x, TL_F32, 2, sh);
  kc->out[0] = tl_tensor_make(y, TL_F32, 2, sh);
  kc->specs[0] = (tl_blockspec){.ndim = 2, .block = {br, 0}, .map = "i -> i, 0"};
  kc->specs[1] = kc->specs[0];
  kc->scratch[0] = (tl_scratch){.dtype = TL_F32, .ndim = 2, .shape = {br, 1}};
  kc->k = (tl_kernel){.name = kc->name, .body = tl_softmax_body, .grid_ndim = 1, .grid = {TL_CDIV(rows, br)},
                      .sem = {TL_PARALLEL}, .n_in = 1, .in = &kc->specs[0], .n_out = 1, .out = &kc->specs[1],
                      .n_scratch = 1, .scratch = kc->scratch, .flops = 5 * rows * cols};
  return TL_OK;
}

static double tl_softmax_check(const tl_kcase *kc) {
  const float *x = kc->in[0].data, *y = kc->out[0].data;
  const int64_t rows = kc->in[0].shape[0], cols = kc->in[0].shape[1];
  double num = 0, den = 0;
  for (int64_t r = 0; r < rows; r++) {
    double m = -INFINITY, s = 0;
    for (int64_t c = 0; c < cols; c++) m = fmax(m, x[r * cols + c]);
    for (int64_t c = 0; c < cols; c++) s += exp((double)x[r * cols + c] - m);
    for (int64_t c = 0; c < cols; c++) {
      double ref = exp((double)x[r * cols + c] - m) / s, e = y[r * cols + c] - ref;
      num += e * e, den += ref * ref;
    }
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

const tl_kernel_desc tl_kernel_softmax_rows = {
    .name = "softmax_rows",
    .summary = "row softmax, f32, one pass, blocks of whole rows, tile operations",
    .shape_syntax = "ROWSxCOLS",
    .shapes = "4096x1024",
    .make = tl_softmax_make,
    .check = tl_softmax_check,
    .tolerance = 1e-5,
};
