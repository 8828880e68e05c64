/* bench_norm.c — the `softmax` and `norm` suites of `tilec bench`: tl_softmax (last axis), and
 * tl_layernorm (gamma and beta) and tl_rmsnorm (gamma) over ROWSxCOLS f32 or bf16 arrays, next
 * to oneDNN 2.x's softmax (v2: softmax_accurate) and layer normalisation forward primitives
 * (inference, scale and shift) and a plain C loop on the same threads. oneDNN 2.6 has no RMS
 * normalisation: rmsnorm has no oneDNN row, and the table says so. PyTorch, where python3
 * imports torch: the shared driver (bench_peers.c) times aten::_softmax.out into a preallocated
 * output, and torch.nn.functional.layer_norm and rms_norm (the public calls, which allocate their
 * output; native_layer_norm.out into a preallocated output measured slower), in its own process
 * on its own inputs, checked against float64.
 *
 * Every implementation is checked on buffer set 0 before timing (output poisoned with NaN, up to
 * 512 rows spread over the array compared with a float64 reference, the input checked
 * unchanged); a mismatch is a WRONG row, not timed. GB/s counts reading x and writing y once.
 * After each table: tilec against its bound, the plan's own byte count (tl_plan_cost through the
 * op's plan cache) at the probed bandwidth of the level the data comes from (tl_roofline_bound_cost
 * on the cached machine probe; skipped with --quick).
 *
 * oneDNN is driven through its C API found by dlopen (libdnnl.so.2), like bench_peers.c, with its
 * own engine and stream; descriptors are opaque buffers (no dnnl.h needed to build). */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/norm_impl.h"
#include "bench_impl.h"
#include "tools_impl.h"

enum { TL_NB_SOFTMAX, TL_NB_LAYERNORM, TL_NB_RMSNORM };
enum { TL_NB_TILEC, TL_NB_TILEC_NONT, TL_NB_TILEC_NT, TL_NB_CLOOP, TL_NB_DNNL, TL_NB_TORCH /* external: never called here */ };

/* ---- oneDNN softmax and layer normalisation (2.x C API) ---- */

enum {
  TL_ND_BF16 = 2, TL_ND_F32 = 3,      /* dnnl_bf16, dnnl_f32 */
  TL_ND_TAG_A = 2, TL_ND_TAG_AB = 3,  /* dnnl_a, dnnl_ab */
  TL_ND_FWD_INFERENCE = 96,           /* dnnl_forward_inference */
  TL_ND_SOFTMAX_ACCURATE = 0x30000,   /* dnnl_softmax_accurate */
  TL_ND_USE_SCALE = 0x8, TL_ND_USE_SHIFT = 0x10, /* dnnl_use_scale, dnnl_use_shift */
  TL_ND_ARG_SRC = 1, TL_ND_ARG_DST = 17, TL_ND_ARG_SCALE = 51, TL_ND_ARG_SHIFT = 52,
  TL_ND_DESC_BYTES = 16384            /* room for any 2.6 op descriptor (a memory desc is 696 B) */
};

typedef struct tl_nd_arg { int arg; void *memory; } tl_nd_arg;

typedef struct tl_ndnn {
  void *h, *engine, *stream;
  int (*md_init)(void *md, int ndims, const int64_t *dims, int dt, int tag);
  int (*softmax_v2_init)(void *d, int prop, int alg, const void *src, const void *dst, int axis);
  int (*lnorm_init)(void *d, int prop, const void *data, const void *stat, float eps, unsigned flags);
  int (*pd_create)(void **pd, const void *op_desc, const void *attr, void *engine, const void *hint);
  int (*pd_destroy)(void *pd);
  int (*prim_create)(void **prim, const void *pd);
  int (*prim_destroy)(void *prim);
  int (*execute)(const void *prim, void *stream, int nargs, const tl_nd_arg *args);
  int (*mem_create)(void **mem, const void *md, void *engine, void *handle);
  int (*mem_set)(void *mem, void *handle);
  int (*mem_destroy)(void *mem);
  int (*stream_wait)(void *stream);
  int (*stream_destroy)(void *stream);
  int (*engine_destroy)(void *engine);
} tl_ndnn;

/* One primitive with its memories (src, dst, scale, shift; NULL when unused). */
typedef struct tl_ndop {
  void *prim, *mem[4];
} tl_ndop;

static void tl_ndnn_close(tl_ndnn *d) {
  if (!d->h) return;
  if (d->stream) d->stream_destroy(d->stream);
  if (d->engine) d->engine_destroy(d->engine);
  dlclose(d->h);
  memset(d, 0, sizeof *d);
}

/* Opens oneDNN with its own engine and stream; 0, or -1 with why in err. */
static int tl_ndnn_open(tl_ndnn *d, char *err, size_t errn) {
  memset(d, 0, sizeof *d);
  d->h = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!d->h) {
    snprintf(err, errn, "libdnnl.so.2 not found");
    return -1;
  }
  int (*engine_create)(void **, int, size_t) = (int (*)(void **, int, size_t))dlsym(d->h, "dnnl_engine_create");
  int (*stream_create)(void **, void *, unsigned) = (int (*)(void **, void *, unsigned))dlsym(d->h, "dnnl_stream_create");
  *(void **)&d->md_init = dlsym(d->h, "dnnl_memory_desc_init_by_tag");
  *(void **)&d->softmax_v2_init = dlsym(d->h, "dnnl_softmax_v2_forward_desc_init");
  *(void **)&d->lnorm_init = dlsym(d->h, "dnnl_layer_normalization_forward_desc_init");
  *(void **)&d->pd_create = dlsym(d->h, "dnnl_primitive_desc_create");
  *(void **)&d->pd_destroy = dlsym(d->h, "dnnl_primitive_desc_destroy");
  *(void **)&d->prim_create = dlsym(d->h, "dnnl_primitive_create");
  *(void **)&d->prim_destroy = dlsym(d->h, "dnnl_primitive_destroy");
  *(void **)&d->execute = dlsym(d->h, "dnnl_primitive_execute");
  *(void **)&d->mem_create = dlsym(d->h, "dnnl_memory_create");
  *(void **)&d->mem_set = dlsym(d->h, "dnnl_memory_set_data_handle");
  *(void **)&d->mem_destroy = dlsym(d->h, "dnnl_memory_destroy");
  *(void **)&d->stream_wait = dlsym(d->h, "dnnl_stream_wait");
  *(void **)&d->stream_destroy = dlsym(d->h, "dnnl_stream_destroy");
  *(void **)&d->engine_destroy = dlsym(d->h, "dnnl_engine_destroy");
  if (!engine_create || !stream_create || !d->md_init || !d->softmax_v2_init || !d->lnorm_init || !d->pd_create ||
      !d->pd_destroy || !d->prim_create || !d->prim_destroy || !d->execute || !d->mem_create || !d->mem_set ||
      !d->mem_destroy || !d->stream_wait || !d->stream_destroy || !d->engine_destroy) {
    snprintf(err, errn, "libdnnl.so.2 lacks dnnl_softmax_v2_forward_desc_init or another 2.6 entry point");
    dlclose(d->h);
    memset(d, 0, sizeof *d);
    return -1;
  }
  if (engine_create(&d->engine, 1 /* dnnl_cpu */, 0) != 0 || stream_create(&d->stream, d->engine, 1) != 0) {
    snprintf(err, errn, "could not create a oneDNN CPU engine and stream");
    tl_ndnn_close(d);
    return -1;
  }
  return 0;
}

static void tl_ndop_free(tl_ndnn *d, tl_ndop *op) {
  if (!op || !d->h) return;
  for (int i = 0; i < 4; i++)
    if (op->mem[i]) d->mem_destroy(op->mem[i]);
  if (op->prim) d->prim_destroy(op->prim);
  memset(op, 0, sizeof *op);
}

/* softmax over dim 1 of [rows, cols] (kind softmax) or layer normalisation over it with f32
 * scale and shift (layernorm), dt for src and dst; 0, or -1 with the status in err. */
static int tl_ndop_make(tl_ndnn *d, int kind, int64_t rows, int64_t cols, int dt, tl_ndop *op, char *err, size_t errn) {
  _Alignas(64) static unsigned char md[TL_ND_DESC_BYTES], vmd[TL_ND_DESC_BYTES], od[TL_ND_DESC_BYTES];
  int64_t dims[12] = {rows, cols}, vdims[12] = {cols};
  void *pd = NULL;
  int e;
  memset(op, 0, sizeof *op);
  if ((e = d->md_init(md, 2, dims, dt, TL_ND_TAG_AB)) != 0 || (e = d->md_init(vmd, 1, vdims, TL_ND_F32, TL_ND_TAG_A)) != 0)
    goto bad;
  if (kind == TL_NB_SOFTMAX) e = d->softmax_v2_init(od, TL_ND_FWD_INFERENCE, TL_ND_SOFTMAX_ACCURATE, md, md, 1);
  else e = d->lnorm_init(od, TL_ND_FWD_INFERENCE, md, NULL, 1e-5f, TL_ND_USE_SCALE | TL_ND_USE_SHIFT);
  if (e != 0 || (e = d->pd_create(&pd, od, NULL, d->engine, NULL)) != 0) goto bad;
  e = d->prim_create(&op->prim, pd);
  d->pd_destroy(pd);
  if (e != 0) goto bad;
  if ((e = d->mem_create(&op->mem[0], md, d->engine, NULL)) != 0 || (e = d->mem_create(&op->mem[1], md, d->engine, NULL)) != 0)
    goto bad;
  if (kind == TL_NB_LAYERNORM &&
      ((e = d->mem_create(&op->mem[2], vmd, d->engine, NULL)) != 0 || (e = d->mem_create(&op->mem[3], vmd, d->engine, NULL)) != 0))
    goto bad;
  return 0;
bad:
  snprintf(err, errn, "oneDNN %s primitive refused (dnnl status %d)", kind == TL_NB_SOFTMAX ? "softmax" : "layer normalization", e);
  tl_ndop_free(d, op);
  return -1;
}

static int tl_ndop_run(tl_ndnn *d, tl_ndop *op, const void *x, void *y, const float *g, const float *b) {
  void *h[4] = {(void *)x, y, (void *)g, (void *)b};
  static const int args[4] = {TL_ND_ARG_SRC, TL_ND_ARG_DST, TL_ND_ARG_SCALE, TL_ND_ARG_SHIFT};
  tl_nd_arg a[4];
  int n = 0;
  for (int i = 0; i < 4; i++) {
    if (!op->mem[i]) continue;
    if (d->mem_set(op->mem[i], h[i]) != 0) return -1;
    a[n++] = (tl_nd_arg){args[i], op->mem[i]};
  }
  if (d->execute(op->prim, d->stream, n, a) != 0) return -1;
  return d->stream_wait(d->stream) == 0 ? 0 : -1;
}

/* ---- one group's data ---- */

typedef struct tl_ndata {
  tl_benv *env;
  int op, bf;                  /* TL_NB_*, bf16 x and y */
  int64_t rows, cols, copies;
  void **x, **y;               /* [copies] */
  float *g, *b;                /* gamma, beta [cols] */
  tl_ndnn *dnn;
} tl_ndata;

typedef struct tl_nimpl {
  tl_ndata *d;
  int kind;
  tl_ndop dop;
  char *note;
} tl_nimpl;

/* x of set s, element i (the value written there): uniform in [-8, 8) for softmax, 3 + [-2, 2)
 * for the norms (a nonzero mean). */
static float tl_nb_value(const tl_ndata *d, int64_t i, int64_t s) {
  float u = tl_bench_pattern(i, s); /* [-0.5, 0.5) */
  return d->op == TL_NB_SOFTMAX ? 16.0f * u : 3.0f + 4.0f * u;
}

static double tl_nb_get(const void *p, int bf, int64_t i) {
  return bf ? tl_bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}
static void tl_nb_set(void *p, int bf, int64_t i, double v) {
  if (bf) ((uint16_t *)p)[i] = tl_f32_to_bf16((float)v);
  else ((float *)p)[i] = (float)v;
}

/* ---- the C loop: rows split over the threads, each row in three plain loops ---- */

typedef struct tl_nloop_job {
  const tl_ndata *d;
  const void *x;
  void *y;
} tl_nloop_job;

static void tl_nloop_fn(void *arg, int w, int nw) {
  const tl_nloop_job *j = arg;
  const tl_ndata *d = j->d;
  const int64_t C = d->cols, lo = d->rows * w / nw, hi = d->rows * (w + 1) / nw;
  for (int64_t r = lo; r < hi; r++) {
    const int64_t o = r * C;
    if (d->op == TL_NB_SOFTMAX) {
      float m = -INFINITY, s = 0;
      for (int64_t c = 0; c < C; c++) m = fmaxf(m, (float)tl_nb_get(j->x, d->bf, o + c));
      for (int64_t c = 0; c < C; c++) s += expf((float)tl_nb_get(j->x, d->bf, o + c) - m);
      const float inv = 1.0f / s;
      for (int64_t c = 0; c < C; c++) tl_nb_set(j->y, d->bf, o + c, expf((float)tl_nb_get(j->x, d->bf, o + c) - m) * inv);
    } else {
      float mean = 0, var = 0;
      if (d->op == TL_NB_LAYERNORM) {
        for (int64_t c = 0; c < C; c++) mean += (float)tl_nb_get(j->x, d->bf, o + c);
        mean /= (float)C;
      }
      for (int64_t c = 0; c < C; c++) {
        float t = (float)tl_nb_get(j->x, d->bf, o + c) - mean;
        var += t * t;
      }
      const float rs = 1.0f / sqrtf(var / (float)C + 1e-5f);
      for (int64_t c = 0; c < C; c++) {
        float v = ((float)tl_nb_get(j->x, d->bf, o + c) - mean) * rs * d->g[c];
        if (d->op == TL_NB_LAYERNORM) v += d->b[c];
        tl_nb_set(j->y, d->bf, o + c, v);
      }
    }
  }
}

/* ---- the calls ---- */

static int tl_nb_call(void *arg, int64_t set) {
  tl_nimpl *s = arg;
  tl_ndata *d = s->d;
  void *x = d->x[set], *y = d->y[set];
  switch (s->kind) {
  case TL_NB_TILEC:
  case TL_NB_TILEC_NONT:
  case TL_NB_TILEC_NT: {
    int64_t sh[2] = {d->rows, d->cols};
    const tl_dtype dt = d->bf ? TL_BF16 : TL_F32;
    tl_tensor tx = tl_tensor_make(x, dt, 2, sh), ty = tl_tensor_make(y, dt, 2, sh);
    tl_tensor tg = tl_tensor_make(d->g, TL_F32, 1, &d->cols), tb = tl_tensor_make(d->b, TL_F32, 1, &d->cols);
    if (s->kind != TL_NB_TILEC) tl_ro_set_nt(d->env->ctx, s->kind == TL_NB_TILEC_NT); /* the measured alternative */
    tl_status st = d->op == TL_NB_SOFTMAX     ? tl_softmax(d->env->ctx, &tx, &ty, -1)
                   : d->op == TL_NB_LAYERNORM ? tl_layernorm(d->env->ctx, &tx, &tg, &tb, 1e-5f, &ty)
                                              : tl_rmsnorm(d->env->ctx, &tx, &tg, 1e-5f, &ty);
    if (s->kind != TL_NB_TILEC) tl_ro_set_nt(d->env->ctx, -1);
    if (st != TL_OK) {
      snprintf(s->note, sizeof ((tl_bimpl *)0)->note, "%s: %s", tl_status_name(st), tl_ctx_error(d->env->ctx));
      return 1;
    }
    return 0;
  }
  case TL_NB_CLOOP: {
    tl_nloop_job j = {d, x, y};
    tl_bpool_run(d->env->pool, tl_nloop_fn, &j);
    return 0;
  }
  case TL_NB_DNNL:
    if (tl_ndop_run(d->dnn, &s->dop, x, y, d->g, d->b) != 0) {
      snprintf(s->note, sizeof ((tl_bimpl *)0)->note, "dnnl_primitive_execute failed");
      return 1;
    }
    return 0;
  default:
    return 1;
  }
}

/* ---- checking ---- */

/* ||y - ref|| / ||ref|| over up to 512 rows spread over set 0 (float64 reference); -1 when the
 * input changed. */
static double tl_nb_verify(const tl_ndata *d) {
  const int64_t C = d->cols, step = d->rows > 512 ? d->rows / 512 : 1;
  double num = 0, den = 0;
  for (int64_t r = 0; r < d->rows; r += step) {
    const int64_t o = r * C;
    double a = 0, v = 0;
    for (int64_t c = 0; c < C; c++)
      if (tl_nb_get(d->x[0], d->bf, o + c) != (d->bf ? tl_bf16_to_f32(tl_f32_to_bf16(tl_nb_value(d, o + c, 0)))
                                                      : tl_nb_value(d, o + c, 0)))
        return -1;
    if (d->op == TL_NB_SOFTMAX) {
      a = -INFINITY;
      for (int64_t c = 0; c < C; c++) a = fmax(a, tl_nb_get(d->x[0], d->bf, o + c));
      for (int64_t c = 0; c < C; c++) v += exp(tl_nb_get(d->x[0], d->bf, o + c) - a);
    } else {
      if (d->op == TL_NB_LAYERNORM) {
        for (int64_t c = 0; c < C; c++) a += tl_nb_get(d->x[0], d->bf, o + c);
        a /= (double)C;
      }
      for (int64_t c = 0; c < C; c++) v += (tl_nb_get(d->x[0], d->bf, o + c) - a) * (tl_nb_get(d->x[0], d->bf, o + c) - a);
      v = 1.0 / sqrt(v / (double)C + 1e-5);
    }
    for (int64_t c = 0; c < C; c++) {
      double xv = tl_nb_get(d->x[0], d->bf, o + c);
      double ref = d->op == TL_NB_SOFTMAX ? exp(xv - a) / v
                                          : (xv - a) * v * d->g[c] + (d->op == TL_NB_LAYERNORM ? d->b[c] : 0.0);
      double e = tl_nb_get(d->y[0], d->bf, o + c) - ref;
      num += e * e, den += ref * ref;
    }
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

static void tl_nb_fill(const tl_ndata *d, int64_t s) {
  const int64_t n = d->rows * d->cols;
  for (int64_t i = 0; i < n; i++) tl_nb_set(d->x[s], d->bf, i, tl_nb_value(d, i, s));
  for (int64_t i = 0; i < n; i++) tl_nb_set(d->y[s], d->bf, i, NAN);
}

/* ---- sizes ---- */

static int tl_nb_parse(const char *tok, int64_t *rows, int64_t *cols, char *err, size_t errn) {
  char *end;
  long long r = strtoll(tok, &end, 10);
  if (end == tok || r <= 0 || (*end != 'x' && *end != 'X')) goto bad;
  const char *p = end + 1;
  long long c = strtoll(p, &end, 10);
  if (end == p || c <= 0 || *end) goto bad;
  if (r > ((int64_t)1 << 32) || c > ((int64_t)1 << 32) || (double)r * (double)c > (double)((int64_t)1 << 32)) {
    snprintf(err, errn, "size '%s': at most 2^32 elements", tok);
    return -1;
  }
  *rows = r, *cols = c;
  return 0;
bad:
  snprintf(err, errn, "size '%s': expected ROWSxCOLS, e.g. 65536x1024", tok);
  return -1;
}

static int tl_nb_size_check(const char *tok, char *err, size_t errn) {
  int64_t r, c;
  return tl_nb_parse(tok, &r, &c, err, errn);
}

/* ---- the bound ---- */

/* The probed machine, once per process (NULL with --quick or when the probe fails). */
static const tl_machine *tl_nb_machine(tl_benv *env) {
  static tl_machine m;
  static int state; /* 0 not tried, 1 ok, -1 failed */
  if (env->quick) return NULL;
  if (state == 0) state = tl_machine_probe(env->ctx, 0, NULL, NULL, &m) == TL_OK ? 1 : -1;
  return state > 0 ? &m : NULL;
}

/* Prints tilec's attainment of the plan's byte-count bound for the group just run. */
static void tl_nb_print_bound(tl_benv *env, const tl_ndata *d, const tl_bgroup *g) {
  const tl_brow *row = NULL;
  for (int i = env->nrows - g->n; i < env->nrows; i++)
    if (env->rows[i].tilec && env->rows[i].status == TL_BROW_OK && !row) row = &env->rows[i]; /* "tilec" itself */
  const tl_machine *m = tl_nb_machine(env);
  if (!row || !m) {
    printf("  bound: %s\n", !row ? "no tilec time" : "not computed (--quick or no machine probe)");
    return;
  }
  int64_t sh[2] = {d->rows, d->cols};
  const tl_dtype dt = d->bf ? TL_BF16 : TL_F32;
  tl_tensor tx = tl_tensor_make(d->x[0], dt, 2, sh), ty = tl_tensor_make(d->y[0], dt, 2, sh);
  tl_tensor tg = tl_tensor_make(d->g, TL_F32, 1, &d->cols), tb = tl_tensor_make(d->b, TL_F32, 1, &d->cols);
  tl_ro_req rq = {.kind = d->op == TL_NB_SOFTMAX ? TL_RO_SOFTMAX : d->op == TL_NB_LAYERNORM ? TL_RO_LAYERNORM : TL_RO_RMSNORM,
                  .x = &tx, .y = &ty, .gamma = d->op == TL_NB_SOFTMAX ? NULL : &tg,
                  .beta = d->op == TL_NB_LAYERNORM ? &tb : NULL, .axis = -1, .eps = 1e-5f};
  tl_cost c;
  int np = 0;
  if (tl_ro_cost(env->ctx, &rq, &c, &np) != TL_OK) {
    printf("  bound: tl_plan_cost failed: %s\n", tl_ctx_error(env->ctx));
    return;
  }
  int64_t tb_bytes[4];
  int n = 0;
  tb_bytes[n++] = tl_tensor_nbytes(&tx);
  if (rq.gamma) tb_bytes[n++] = d->cols * 4;
  if (rq.beta) tb_bytes[n++] = d->cols * 4;
  tb_bytes[n++] = tl_tensor_nbytes(&ty);
  /* cold runs read everything from the level the whole rotation lives in */
  int64_t span = env->cold ? (int64_t)g->copies * g->set_bytes : tb_bytes[0] + tb_bytes[n - 1];
  tl_cost cc = c;
  tl_bound b;
  int64_t sizes[4];
  for (int i = 0; i < n; i++) sizes[i] = env->cold && g->copies > 1 ? span : tb_bytes[i];
  if (tl_roofline_bound_cost(m, &cc, n, sizes, TL_F32, &b) != TL_OK) {
    printf("  bound: tl_roofline_bound_cost failed\n");
    return;
  }
  const char *lvl = b.limiter >= 0 ? m->levels[b.limiter].name : "compute";
  double bw = b.limiter >= 0 ? m->levels[b.limiter].read_bw : 0;
  const double moved = (double)(c.bytes_read + c.bytes_written);
  printf("  bound: %lld plan%s moving %.1f MiB (tl_plan_cost) at %s %.1f GB/s (probed read bandwidth, as tilec roofline)\n"
         "         = %.3f ms; tilec median %.3f ms: %.0f%% of the bound\n",
         (long long)np, np == 1 ? "" : "s", moved / 1048576.0, lvl, bw / 1e9, b.seconds * 1e3, row->median_s * 1e3,
         100.0 * b.seconds / row->median_s);
  /* the same bytes at the level's probed copy rate with streaming stores (reads + writes counted) */
  double nt = b.limiter >= 0 ? m->levels[b.limiter].nt_copy_bw : 0;
  if (nt > 0)
    printf("         at %s's probed streaming-store copy rate %.1f GB/s: %.3f ms, tilec %.0f%% of that\n", lvl, nt / 1e9,
           moved / nt * 1e3, 100.0 * moved / nt / row->median_s);
}

/* ---- one group ---- */

static tl_bimpl *tl_nb_add(tl_bgroup *g, tl_nimpl *st, tl_ndata *d, int kind, int tilec, const char *name) {
  tl_bimpl *im = &g->impl[g->n];
  memset(im, 0, sizeof *im);
  snprintf(im->name, sizeof im->name, "%s", name);
  im->tilec = tilec;
  im->fn = tl_nb_call;
  im->arg = st;
  im->status = TL_BROW_OK;
  *st = (tl_nimpl){.d = d, .kind = kind, .note = im->note};
  g->n++;
  return im;
}

static int tl_nb_group(tl_benv *env, int op, int64_t rows, int64_t cols, tl_ndnn *dnn, const char *dnn_why) {
  int rc = -1;
  const int bf = env->dtype && !strcmp(env->dtype, "bf16");
  const int64_t es = bf ? 2 : 4, n = rows * cols;
  tl_ndata d = {.env = env, .op = op, .bf = bf, .rows = rows, .cols = cols, .dnn = dnn};
  tl_bgroup g;
  memset(&g, 0, sizeof g);
  tl_nimpl st[TL_BGROUP_MAX];
  memset(st, 0, sizeof st);
  static const char *ops[3] = {"softmax", "layernorm", "rmsnorm"};
  static const char *titles[3] = {"y = softmax(x), last axis", "y = layernorm(x)*g + b", "y = x/rms(x)*g"};
  g.op = ops[op];
  g.title = titles[op];
  g.dtype = bf ? "bf16" : "f32";
  g.size_bytes = n * es;
  snprintf(g.size, sizeof g.size, "%lldx%lld", (long long)rows, (long long)cols);
  g.moved = 2.0 * (double)(n * es);
  g.set_bytes = 2 * n * es;
  g.copies = d.copies = tl_bench_copies(env, g.set_bytes);
  char err[256];
  tl_bench_progress(env, "%s %s: preparing %lld buffer set(s)", g.op, g.size, (long long)d.copies);
  d.x = calloc((size_t)d.copies, sizeof *d.x);
  d.y = calloc((size_t)d.copies, sizeof *d.y);
  d.g = tl_bench_alloc_f32(cols);
  d.b = tl_bench_alloc_f32(cols);
  if (!d.x || !d.y || !d.g || !d.b) goto nomem;
  for (int64_t c = 0; c < cols; c++) d.g[c] = 1.0f + tl_bench_pattern(c, 101), d.b[c] = tl_bench_pattern(c, 102);
  for (int64_t c = 0; c < d.copies; c++) {
    if (!(d.x[c] = tl_bench_alloc_f32((n * es + 3) / 4)) || !(d.y[c] = tl_bench_alloc_f32((n * es + 3) / 4))) goto nomem;
    tl_nb_fill(&d, c);
  }
  tl_nb_add(&g, &st[g.n], &d, TL_NB_TILEC, 1, "tilec");
  /* where tilec streams its stores (tl_ro_nt_auto), the same without; where only the row length
   * kept it from them (x and y beyond tl_ro_nt_threshold), the same with */
  if (tl_ro_nt_auto(&env->info, 2 * n * es, bf, 0, cols))
    tl_nb_add(&g, &st[g.n], &d, TL_NB_TILEC_NONT, 1, "tilec, no streaming stores");
  else if (2 * n * es > tl_ro_nt_threshold(&env->info))
    tl_nb_add(&g, &st[g.n], &d, TL_NB_TILEC_NT, 1, "tilec, streaming stores");
  char name[40];
  snprintf(name, sizeof name, "C loop, %d thread%s", env->threads, env->threads == 1 ? "" : "s");
  tl_nb_add(&g, &st[g.n], &d, TL_NB_CLOOP, 0, name);
  if (op != TL_NB_RMSNORM && dnn && dnn->h) {
    tl_bimpl *im = tl_nb_add(&g, &st[g.n], &d, TL_NB_DNNL, 0, op == TL_NB_SOFTMAX ? "onednn softmax" : "onednn layer_norm");
    if (tl_ndop_make(dnn, op, rows, cols, bf ? TL_ND_BF16 : TL_ND_F32, &st[g.n - 1].dop, err, sizeof err) != 0) {
      im->status = TL_BROW_FAILED;
      snprintf(im->note, sizeof im->note, "%.150s", err);
    }
  }
  if (env->peers.torch) { /* timed in its own process, which checks itself */
    static const char *tnames[3] = {"torch softmax", "torch layer_norm", "torch rms_norm"};
    tl_bimpl *im = tl_nb_add(&g, &st[g.n], &d, TL_NB_TORCH, 0, tnames[op]);
    im->external = 1;
    im->torch = (tl_btorch_req){.op = ops[op], .n = cols, .m = rows, .dtype = bf ? "bf16" : "f32", .threads = env->threads};
  }
  /* check every in-process implementation on set 0 before timing anything */
  const double tol = bf ? 1e-2 : 2e-5;
  tl_bench_progress(env, "%s %s: checking", g.op, g.size);
  for (int i = 0; i < g.n; i++) {
    tl_bimpl *im = &g.impl[i];
    if (im->status != TL_BROW_OK || im->external) continue;
    tl_nb_fill(&d, 0);
    if (tl_nb_call(im->arg, 0) != 0) {
      im->status = TL_BROW_FAILED;
      continue;
    }
    double e = tl_nb_verify(&d);
    if (e < 0) {
      im->status = TL_BROW_WRONG;
      snprintf(im->note, sizeof im->note, "the input changed (not timed)");
    } else if (!(e <= tol)) {
      im->status = TL_BROW_WRONG;
      snprintf(im->note, sizeof im->note, "relative error %.3g > %.1g (not timed)", e, tol);
    } else {
      snprintf(im->note, sizeof im->note, "checked: rel. error %.2g", e);
    }
  }
  tl_nb_fill(&d, 0);
  if (tl_bgroup_run(env, &g) != 0) goto out;
  tl_nb_print_bound(env, &d, &g);
  if (op == TL_NB_RMSNORM) printf("  (no oneDNN row: oneDNN 2.6 has no RMS normalisation)\n");
  else if (!dnn || !dnn->h) printf("  (no oneDNN row: %s)\n", dnn_why);
  rc = env->status;
  goto out;
nomem:
  tl_tool_fail("bench", "%s %s: out of memory for %lld buffer set(s)", g.op, g.size, (long long)d.copies);
out:
  for (int i = 0; i < g.n; i++)
    if (dnn) tl_ndop_free(dnn, &st[i].dop);
  for (int64_t c = 0; c < d.copies; c++) {
    if (d.x) free(d.x[c]);
    if (d.y) free(d.y[c]);
  }
  free(d.x), free(d.y), free(d.g), free(d.b);
  return rc;
}

/* ---- the suites ---- */

static int tl_nb_run_ops(tl_benv *env, const char *size, const int *ops, int nops) {
  int64_t rows, cols;
  char err[160];
  if (tl_nb_parse(size, &rows, &cols, err, sizeof err) != 0) {
    tl_tool_fail("bench", "%s", err);
    return -1;
  }
  tl_ndnn dnn;
  char why[160] = "oneDNN not asked for (--peers)";
  memset(&dnn, 0, sizeof dnn);
  if (env->peers.dnnl && tl_ndnn_open(&dnn, why, sizeof why) != 0) memset(&dnn, 0, sizeof dnn);
  else if (!env->peers.dnnl) snprintf(why, sizeof why, "%.150s", env->peers.dnnl_desc);
  int any = 0;
  for (int i = 0; i < nops; i++) {
    int r = tl_nb_group(env, ops[i], rows, cols, &dnn, why);
    if (r < 0) {
      any = -1;
      break;
    }
    any |= r;
  }
  tl_ndnn_close(&dnn);
  return any;
}

static int tl_softmax_suite_run(tl_benv *env, const char *size) {
  static const int ops[1] = {TL_NB_SOFTMAX};
  return tl_nb_run_ops(env, size, ops, 1);
}

static int tl_norm_suite_run(tl_benv *env, const char *size) {
  static const int ops[2] = {TL_NB_LAYERNORM, TL_NB_RMSNORM};
  return tl_nb_run_ops(env, size, ops, 2);
}

static void tl_nb_header(tl_benv *env) {
  printf("tilec      tl_softmax / tl_layernorm / tl_rmsnorm through the public API (plan cache hit per call);\n"
         "           streaming stores when x and y together exceed half the L3 CPUID reports (bf16 rows:\n"
         "           from %d elements)\n", TL_RO_NT_BF16_ROW);
  printf("peers      %s\n", env->peers.dnnl_desc);
  printf("           C loop: one row at a time, max / sum exp / scale (mean / variance / apply) in plain C\n");
  printf("           %s\n", env->peers.torch_desc);
  if (env->peers.torch)
    printf("           torch: aten::_softmax.out into a preallocated output, torch.nn.functional.layer_norm and\n"
           "           rms_norm (they allocate their output), in its own process on its own inputs (checked\n"
           "           against float64 there), timed with the same rules but not interleaved\n");
  printf("GB/s       reading x and writing y once per call; ratio = best peer's median / this median\n");
}

const tl_bsuite tl_bsuite_softmax = {
    .name = "softmax",
    .summary = "y = softmax(x) over rows, f32 or bf16 (oneDNN softmax, C loop, torch)",
    .size_syntax = "ROWSxCOLS",
    .sizes = "256x1024,2048x1024,512x8192,65536x1024,16384x4096",
    .quick_sizes = "64x256,16x4100",
    .size_check = tl_nb_size_check,
    .run = tl_softmax_suite_run,
    .dtypes = "f32,bf16",
    .header = tl_nb_header,
};

const tl_bsuite tl_bsuite_norm = {
    .name = "norm",
    .summary = "layernorm (gamma, beta) and rmsnorm (gamma) over rows, f32 or bf16 (oneDNN layer_norm, C loop, torch)",
    .size_syntax = "ROWSxCOLS",
    .sizes = "256x1024,2048x1024,512x8192,65536x1024,16384x4096",
    .quick_sizes = "64x256,16x4100",
    .size_check = tl_nb_size_check,
    .run = tl_norm_suite_run,
    .dtypes = "f32,bf16",
    .header = tl_nb_header,
};
