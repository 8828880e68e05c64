/* norm_registry.c — registry entries `softmax`, `layernorm` and `rmsnorm` (kernels_impl.h): the
 * one-pass kernels tl_softmax / tl_layernorm / tl_rmsnorm run (rows_op.c), built for a ROWSxCOLS
 * f32 instance with random data (layernorm: random gamma and beta; rmsnorm: random gamma), each
 * with a float64 check, for `tilec roofline`, `tilec explain` and the tools. A COLS whose rows do
 * not fit the staging budget in one pass is refused here (tl_softmax itself runs the two-level
 * path for it). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "norm_impl.h"

static tl_status tl_nr_make(tl_ctx *ctx, const char *shape, tl_kcase *kc, char *err, size_t errn, tl_ro_kind kind,
                            const char *name) {
  int64_t d[2];
  int n = tl_shape_parse(shape ? shape : "4096x1024", d, 2, err, errn);
  if (n < 0) return TL_ERR_SHAPE;
  if (n != 2) {
    tl_msg(err, errn, "%s: shape is ROWSxCOLS, got %d sizes", name, n);
    return TL_ERR_SHAPE;
  }
  const int64_t rows = d[0], cols = d[1];
  if (tl_kcase_elems(rows, cols, name, err, errn) < 0) return TL_ERR_SHAPE;
  memset(kc, 0, sizeof *kc);
  snprintf(kc->name, sizeof kc->name, "%s", name);
  snprintf(kc->shape, sizeof kc->shape, "%lldx%lld", (long long)rows, (long long)cols);
  kc->dtype = TL_F32;
  const int sm = kind == TL_RO_SOFTMAX;
  float *x = tl_kcase_alloc_f32(kc, 0, rows * cols, sm ? -8 : -2, sm ? 8 : 6, 11);
  float *y = tl_kcase_alloc_f32(kc, 1, rows * cols, 0, 0, 12);
  float *g = sm ? NULL : tl_kcase_alloc_f32(kc, 2, cols, 0.5, 1.5, 13);
  float *b = kind == TL_RO_LAYERNORM ? tl_kcase_alloc_f32(kc, 3, cols, -1, 1, 14) : NULL;
  if (!x || !y || (!sm && !g) || (kind == TL_RO_LAYERNORM && !b)) {
    tl_kcase_free(kc);
    tl_msg(err, errn, "out of memory for %s %s", name, kc->shape);
    return TL_ERR_NOMEM;
  }
  int64_t sh[2] = {rows, cols};
  tl_tensor xt = tl_tensor_make(x, TL_F32, 2, sh), yt = tl_tensor_make(y, TL_F32, 2, sh);
  tl_tensor gt = tl_tensor_make(g, TL_F32, 1, &cols), bt = tl_tensor_make(b, TL_F32, 1, &cols);
  tl_ro_req rq = {.kind = kind, .x = &xt, .y = &yt, .gamma = g ? &gt : NULL, .beta = b ? &bt : NULL, .axis = -1, .eps = 1e-5f};
  tl_ro_build bd;
  tl_status s = tl_ro_prepare(ctx, &rq, &bd);
  if (s != TL_OK || bd.nplans != 1) {
    if (s == TL_OK) {
      s = TL_ERR_VMEM;
      tl_msg(err, errn, "%s: rows of %lld f32 do not fit the staging budget in one pass (tl_%s runs them in two)", name,
             (long long)cols, name);
    } else {
      tl_msg(err, errn, "%s", tl_ctx_error(ctx));
    }
    tl_kcase_free(kc);
    return s;
  }
  tl_ro_desc *dd = &bd.d[0];
  tl_ro_run *run = tl_calloc(1, sizeof *run);
  if (!run) {
    tl_kcase_free(kc);
    tl_msg(err, errn, "out of memory");
    return TL_ERR_NOMEM;
  }
  *run = dd->run;
  tl_ctx_info info;
  tl_ctx_info_get(ctx, &info);
  run->nt = tl_ro_nt_auto(&info, 2 * rows * cols * 4, run->ybf, run->cols, run->A); /* as tl_softmax decides */
  run->y_lo = (const char *)y, run->y_hi = (const char *)(y + rows * cols);
  kc->user = run;
  kc->k = dd->k;
  for (int i = 0; i < dd->k.n_in; i++) kc->specs[i] = dd->in[i], kc->in[i] = dd->tin[i];
  kc->specs[dd->k.n_in] = dd->out[0];
  kc->out[0] = dd->tout[0];
  for (int i = 0; i < dd->k.n_scratch; i++) kc->scratch[i] = dd->scr[i];
  kc->k.name = kc->name, kc->k.user = run;
  kc->k.in = kc->specs, kc->k.out = &kc->specs[dd->k.n_in], kc->k.scratch = dd->k.n_scratch ? kc->scratch : NULL;
  return TL_OK;
}

static tl_status tl_nr_make_softmax(tl_ctx *ctx, const char *shape, tl_kcase *kc, char *err, size_t errn) {
  return tl_nr_make(ctx, shape, kc, err, errn, TL_RO_SOFTMAX, "softmax");
}
static tl_status tl_nr_make_layernorm(tl_ctx *ctx, const char *shape, tl_kcase *kc, char *err, size_t errn) {
  return tl_nr_make(ctx, shape, kc, err, errn, TL_RO_LAYERNORM, "layernorm");
}
static tl_status tl_nr_make_rmsnorm(tl_ctx *ctx, const char *shape, tl_kcase *kc, char *err, size_t errn) {
  return tl_nr_make(ctx, shape, kc, err, errn, TL_RO_RMSNORM, "rmsnorm");
}

/* ||y - ref|| / ||ref|| over every row, ref in float64 (two-pass statistics). */
static double tl_nr_check(const tl_kcase *kc) {
  const tl_ro_run *run = kc->user;
  const float *x = kc->bufs[0], *y = kc->bufs[1], *g = kc->bufs[2], *b = kc->bufs[3];
  const int64_t rows = kc->out[0].shape[0], cols = kc->out[0].shape[1];
  double num = 0, den = 0;
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x + r * cols, *yr = y + r * cols;
    double a = 0, v = 0;
    if (run->kind == TL_RO_SOFTMAX) {
      a = -INFINITY;
      for (int64_t c = 0; c < cols; c++) a = fmax(a, xr[c]);
      for (int64_t c = 0; c < cols; c++) v += exp(xr[c] - a);
    } else {
      if (run->kind == TL_RO_LAYERNORM) {
        for (int64_t c = 0; c < cols; c++) a += xr[c];
        a /= (double)cols;
      }
      for (int64_t c = 0; c < cols; c++) v += (xr[c] - a) * (xr[c] - a);
      v = 1.0 / sqrt(v / (double)cols + 1e-5);
    }
    for (int64_t c = 0; c < cols; c++) {
      double ref = run->kind == TL_RO_SOFTMAX ? exp(xr[c] - a) / v : (xr[c] - a) * v * g[c] + (b ? b[c] : 0.0);
      double e = yr[c] - ref;
      num += e * e, den += ref * ref;
    }
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

const tl_kernel_desc tl_kernel_softmax = {
    .name = "softmax",
    .summary = "tl_softmax's one-pass kernel: blocks of whole rows, fused max / sum-exp / scale (f32)",
    .shape_syntax = "ROWSxCOLS",
    .shapes = "4096x1024 16384x4096",
    .make = tl_nr_make_softmax,
    .check = tl_nr_check,
    .tolerance = 1e-5,
};

const tl_kernel_desc tl_kernel_layernorm = {
    .name = "layernorm",
    .summary = "tl_layernorm's one-pass kernel: whole rows, moments in one sweep (a second when the shift is far), gamma and beta (f32)",
    .shape_syntax = "ROWSxCOLS",
    .shapes = "4096x1024 16384x4096",
    .make = tl_nr_make_layernorm,
    .check = tl_nr_check,
    .tolerance = 1e-5,
};

const tl_kernel_desc tl_kernel_rmsnorm = {
    .name = "rmsnorm",
    .summary = "tl_rmsnorm's one-pass kernel: whole rows, sum of squares, gamma (f32)",
    .shape_syntax = "ROWSxCOLS",
    .shapes = "4096x1024 16384x4096",
    .make = tl_nr_make_rmsnorm,
    .check = tl_nr_check,
    .tolerance = 1e-5,
};
