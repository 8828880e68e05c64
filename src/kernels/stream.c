/* stream.c — the streaming kernels: copy (y = x) and scale (y = a * x), f32 over a 2-D array in
 * blocks of whole rows (about 64 KiB each, used in place when they lie inside the array). They
 * move every byte once and do at most one flop per element: memory-bound by construction, the
 * reference points for the bandwidth ceilings of the roofline. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels_impl.h"

typedef struct tl_stream_user {
  float a; /* scale factor; copy ignores it */
} tl_stream_user;

static void tl_copy_body(const tl_prog *p, tl_ref *refs, void *user) {
  (void)p, (void)user;
  const tl_ref *x = &refs[0];
  tl_ref *y = &refs[1];
  for (int64_t r = 0; r < y->valid[0]; r++)
    memcpy((float *)y->data + r * y->stride[0], (const float *)x->data + r * x->stride[0], (size_t)y->valid[1] * sizeof(float));
}

static void tl_scale_body(const tl_prog *p, tl_ref *refs, void *user) {
  (void)p;
  const float a = ((const tl_stream_user *)user)->a;
  const tl_ref *x = &refs[0];
  tl_ref *y = &refs[1];
  for (int64_t r = 0; r < y->valid[0]; r++) {
    const float *xs = (const float *)x->data + r * x->stride[0];
    float *ys = (float *)y->data + r * y->stride[0];
    for (int64_t c = 0; c < y->valid[1]; c++) ys[c] = a * xs[c];
  }
}

/* Builds y = x or y = a*x for shape ROWSxCOLS (or N: one row of N). */
static tl_status tl_stream_make(tl_ctx *ctx, const char *shape, tl_kcase *kc, int scale, char *err, size_t errn) {
  (void)ctx;
  int64_t d[2];
  int n = tl_shape_parse(shape, d, 2, err, errn);
  if (n < 0) return TL_ERR_SHAPE;
  int64_t rows = n == 2 ? d[0] : 1, cols = n == 2 ? d[1] : d[0];
  if (tl_kcase_elems(rows, cols, scale ? "scale" : "copy", err, errn) < 0) return TL_ERR_SHAPE;
  memset(kc, 0, sizeof *kc);
  snprintf(kc->name, sizeof kc->name, "%s", scale ? "scale" : "copy");
  snprintf(kc->shape, sizeof kc->shape, "%lldx%lld", (long long)rows, (long long)cols);
  kc->dtype = TL_F32;
  tl_stream_user *u = tl_calloc(1, sizeof *u);
  float *x = tl_kcase_alloc_f32(kc, 0, rows * cols, -1, 1, 1);
  float *y = tl_kcase_alloc_f32(kc, 1, rows * cols, 0, 0, 2); /* touched, so no page faults are timed */
  kc->user = u;
  if (!u || !x || !y) {
    tl_kcase_free(kc);
    tl_msg(err, errn, "out of memory for %lld x %lld f32", (long long)rows, (long long)cols);
    return TL_ERR_NOMEM;
  }
  u->a = 2.0f;
  int64_t sh[2] = {rows, cols};
  kc->in[0] = tl_tensor_make(x, TL_F32, 2, sh);
  kc->out[0] = tl_tensor_make(y, TL_F32, 2, sh);
  int64_t br = TL_MAX(1, TL_MIN(rows, (int64_t)65536 / (cols * 4)));
  kc->specs[0] = (tl_blockspec){.ndim = 2, .block = {br, 0}, .map = "i -> i, 0"};
  kc->specs[1] = kc->specs[0];
  kc->k = (tl_kernel){.name = kc->name, .body = scale ? tl_scale_body : tl_copy_body, .user = u, .grid_ndim = 1,
                      .grid = {TL_CDIV(rows, br)}, .sem = {TL_PARALLEL}, .n_in = 1, .in = &kc->specs[0], .n_out = 1,
                      .out = &kc->specs[1], .flops = scale ? rows * cols : 0};
  return TL_OK;
}

static tl_status tl_copy_make(tl_ctx *ctx, const char *shape, tl_kcase *kc, char *err, size_t errn) {
  return tl_stream_make(ctx, shape ? shape : "2048x2048", kc, 0, err, errn);
}
static tl_status tl_scale_make(tl_ctx *ctx, const char *shape, tl_kcase *kc, char *err, size_t errn) {
  return tl_stream_make(ctx, shape ? shape : "2048x2048", kc, 1, err, errn);
}

/* Relative error of y against a * x in double. */
static double tl_stream_check(const tl_kcase *kc) {
  const float *x = kc->in[0].data, *y = kc->out[0].data;
  const double a = kc->k.flops ? ((const tl_stream_user *)kc->user)->a : 1.0;
  int64_t n = tl_tensor_numel(&kc->in[0]);
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; i++) {
    double r = a * x[i], e = y[i] - r;
    num += e * e, den += r * r;
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

const tl_kernel_desc tl_kernel_copy = {
    .name = "copy",
    .summary = "y = x, f32, blocks of whole rows (streaming)",
    .shape_syntax = "ROWSxCOLS",
    .shapes = "1024x1024 8192x4096", /* 8 MiB moved, within the LLC; 256 MiB, from DRAM */
    .make = tl_copy_make,
    .check = tl_stream_check,
    .tolerance = 0,
};

const tl_kernel_desc tl_kernel_scale = {
    .name = "scale",
    .summary = "y = 2x, f32, blocks of whole rows (streaming)",
    .shape_syntax = "ROWSxCOLS",
    .shapes = "1024x1024 8192x4096", /* 8 MiB moved, within the LLC; 256 MiB, from DRAM */
    .make = tl_scale_make,
    .check = tl_stream_check,
    .tolerance = 0,
};
