/* test_attention.c — tl_attention against a float64 reference on every ISA path (the cap loops
 * like test_matmul): random shapes (Sq != Sk both ways, sizes off the block multiples, D from 1
 * to 256), causal edges, GQA, masks of both dtypes with broadcast dims, fully masked rows, NaN
 * rows, strided views, bf16 and f32, the decode path bitwise across thread counts, refusals with o
 * untouched, the plan cache, and causal blocks above the diagonal never entered (inner-grid
 * counters and the outer plan's stats). */
#include <tilec.h>

#include "kernels/attention_impl.h"
#include "test_util.h"
#include "test_isa.h"
#include "tile/amx_emu.h"

#include <time.h>

/* RUN with the wall time of the test. */
#define RUN_T(fn)                                                                                 \
  do {                                                                                            \
    struct timespec t0_, t1_;                                                                     \
    clock_gettime(CLOCK_MONOTONIC, &t0_);                                                         \
    RUN(fn);                                                                                      \
    clock_gettime(CLOCK_MONOTONIC, &t1_);                                                         \
    fprintf(stderr, "    %.2f s\n", (double)(t1_.tv_sec - t0_.tv_sec) + 1e-9 * (double)(t1_.tv_nsec - t0_.tv_nsec)); \
  } while (0)

static tl_ctx *g_ctx;
static const char *g_isa;
static test_rng g_rng = {0x5eed1234ull};

/* ---- tensors over owned memory, any strides ---- */

typedef struct at_t {
  tl_tensor t;
  void *mem;
  int64_t bytes;
} at_t;

/* A 4-D (or ndim) tensor; strided: dims padded and the last two dims possibly swapped in memory. */
static at_t at_make(tl_dtype dt, int ndim, const int64_t *shape, int strided) {
  at_t a;
  memset(&a, 0, sizeof a);
  int64_t ext[TL_MAX_DIMS], order[TL_MAX_DIMS];
  for (int d = 0; d < ndim; d++) ext[d] = shape[d] + (strided ? (d % 2) + 1 : 0), order[d] = d;
  if (strided && ndim >= 2 && (test_rng_u64(&g_rng) & 1)) order[ndim - 2] = ndim - 1, order[ndim - 1] = ndim - 2;
  int64_t st = 1, total = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    int d = (int)order[i];
    a.t.stride[d] = st;
    st *= ext[d];
  }
  total = st;
  a.t.ndim = ndim, a.t.dtype = dt;
  for (int d = 0; d < ndim; d++) a.t.shape[d] = shape[d];
  a.bytes = (total > 0 ? total : 1) * (int64_t)tl_dtype_size(dt);
  a.mem = malloc((size_t)a.bytes);
  memset(a.mem, 0x7f, (size_t)a.bytes);
  a.t.data = a.mem;
  return a;
}

static int64_t at_off(const tl_tensor *t, const int64_t *idx) {
  int64_t o = 0;
  for (int d = 0; d < t->ndim; d++) o += idx[d] * t->stride[d];
  return o;
}

static void at_set(at_t *a, const int64_t *idx, double v) {
  int64_t o = at_off(&a->t, idx);
  if (a->t.dtype == TL_F32) ((float *)a->mem)[o] = (float)v;
  else ((uint16_t *)a->mem)[o] = tl_f32_to_bf16((float)v);
}

static double at_get(const tl_tensor *t, const int64_t *idx) {
  int64_t o = at_off(t, idx);
  if (t->dtype == TL_F32) return ((const float *)t->data)[o];
  return tl_bf16_to_f32(((const uint16_t *)t->data)[o]);
}

static void at_fill(at_t *a, double lo, double hi) {
  int64_t idx[TL_MAX_DIMS] = {0}, n = tl_tensor_numel(&a->t);
  for (int64_t e = 0; e < n; e++) {
    at_set(a, idx, test_rng_uniform(&g_rng, lo, hi));
    for (int d = a->t.ndim - 1; d >= 0; d--) {
      if (++idx[d] < a->t.shape[d]) break;
      idx[d] = 0;
    }
  }
}

/* every element of o's memory NaN (bf16: a NaN pattern) */
static void at_poison(at_t *a) {
  if (a->t.dtype == TL_F32)
    for (int64_t i = 0; i < a->bytes / 4; i++) ((float *)a->mem)[i] = NAN;
  else
    for (int64_t i = 0; i < a->bytes / 2; i++) ((uint16_t *)a->mem)[i] = 0x7fc1;
}

/* ---- the float64 reference ---- */

/* t (4-D) as a dense double array [A, B, C, D]. */
static double *dense(const tl_tensor *t) {
  const int64_t n = tl_tensor_numel(t);
  double *x = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
  int64_t idx[4] = {0};
  for (int64_t e = 0; e < n; e++) {
    x[e] = at_get(t, idx);
    for (int d = 3; d >= 0; d--) {
      if (++idx[d] < t->shape[d]) break;
      idx[d] = 0;
    }
  }
  return x;
}

/* ref [B, Hq, Sq, D] from the tensors as stored (bf16 inputs read exactly). */
static void ref_attention(const tl_tensor *q, const tl_tensor *k, const tl_tensor *v, const tl_tensor *mask, int causal,
                          double scale, double *ref) {
  const int64_t B = q->shape[0], Hq = q->shape[1], Sq = q->shape[2], D = q->shape[3], Hkv = k->shape[1], Sk = k->shape[2];
  double *s = malloc((size_t)(Sk > 0 ? Sk : 1) * sizeof(double));
  double *qd = dense(q), *kd = dense(k), *vd = dense(v);
  for (int64_t b = 0; b < B; b++)
    for (int64_t h = 0; h < Hq; h++)
      for (int64_t i = 0; i < Sq; i++) {
        const int64_t hk = h / (Hq / Hkv);
        const double *qr = qd + ((b * Hq + h) * Sq + i) * D;
        double mx = -INFINITY;
        int nan = 0;
        for (int64_t j = 0; j < Sk; j++) {
          const double *kr = kd + ((b * Hkv + hk) * Sk + j) * D;
          double acc = 0;
          for (int64_t d = 0; d < D; d++) acc += qr[d] * kr[d];
          acc *= scale;
          if (mask) {
            int64_t full[4] = {b, h, i, j}, im[4];
            for (int d = 0; d < mask->ndim; d++) {
              int64_t fd = full[4 - mask->ndim + d];
              im[d] = mask->shape[d] == 1 ? 0 : fd;
            }
            acc += at_get(mask, im);
          }
          if (causal && j > i + Sk - Sq) acc = -INFINITY;
          s[j] = acc;
          if (acc != acc) nan = 1;
          else if (acc > mx) mx = acc;
        }
        double l = 0;
        for (int64_t j = 0; j < Sk; j++) {
          s[j] = mx == -INFINITY ? 0 : exp(s[j] - mx);
          l += s[j];
        }
        double *out = ref + ((b * Hq + h) * Sq + i) * D;
        for (int64_t d = 0; d < D; d++) out[d] = 0;
        for (int64_t j = 0; j < Sk; j++) {
          if (s[j] == 0) continue;
          const double *vr = vd + ((b * Hkv + hk) * Sk + j) * D;
          for (int64_t d = 0; d < D; d++) out[d] += s[j] * vr[d];
        }
        for (int64_t d = 0; d < D; d++) out[d] = nan ? NAN : (l > 0 ? out[d] / l : 0.0);
      }
  free(s), free(qd), free(kd), free(vd);
}

static void read_out(const tl_tensor *o, double *out) {
  const int64_t B = o->shape[0], H = o->shape[1], S = o->shape[2], D = o->shape[3];
  for (int64_t b = 0; b < B; b++)
    for (int64_t h = 0; h < H; h++)
      for (int64_t i = 0; i < S; i++)
        for (int64_t d = 0; d < D; d++) {
          int64_t idx[4] = {b, h, i, d};
          out[((b * H + h) * S + i) * D + d] = at_get(o, idx);
        }
}

/* ---- one case ---- */

typedef struct at_case {
  tl_dtype dt, odt, mdt; /* mdt TL_DTYPE_INVALID: no mask */
  int64_t B, Hq, Hkv, Sq, Sk, D;
  int causal, strided, mask_nd;
  int64_t mask_shape[4];
  float scale;
} at_case;

static const char *case_str(const at_case *c, char *buf, size_t n) {
  snprintf(buf, n, "%s->%s B%lld Hq%lld Hkv%lld Sq%lld Sk%lld D%lld%s%s mask %s%s", tl_dtype_name(c->dt), tl_dtype_name(c->odt),
           (long long)c->B, (long long)c->Hq, (long long)c->Hkv, (long long)c->Sq, (long long)c->Sk, (long long)c->D,
           c->causal ? " causal" : "", c->strided ? " strided" : "", c->mdt == TL_DTYPE_INVALID ? "none" : tl_dtype_name(c->mdt),
           c->mdt != TL_DTYPE_INVALID && c->mask_nd < 4 ? " (broadcast)" : "");
  return buf;
}

/* Runs the case; returns the relative error (or -1 when the call failed). */
static double run_case(const at_case *c, int check_written) {
  int64_t sq[4] = {c->B, c->Hq, c->Sq, c->D}, sk[4] = {c->B, c->Hkv, c->Sk, c->D};
  at_t q = at_make(c->dt, 4, sq, c->strided), k = at_make(c->dt, 4, sk, c->strided), v = at_make(c->dt, 4, sk, c->strided);
  at_t o = at_make(c->odt, 4, sq, c->strided), m;
  memset(&m, 0, sizeof m);
  at_fill(&q, -2, 2), at_fill(&k, -2, 2), at_fill(&v, -1, 1);
  at_poison(&o);
  tl_attention_opts opts = {.causal = c->causal, .scale = c->scale};
  if (c->mdt != TL_DTYPE_INVALID) {
    m = at_make(c->mdt, c->mask_nd, c->mask_shape, c->strided);
    at_fill(&m, -3, 3);
    opts.mask = &m.t;
  }
  const int64_t n = c->B * c->Hq * c->Sq * c->D;
  double *out = malloc((size_t)(n > 0 ? n : 1) * sizeof(double)), *ref = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
  double err = -1;
  char cs[200];
  tl_status s = tl_attention(g_ctx, &q.t, &k.t, &v.t, &o.t, &opts);
  CHECK(s == TL_OK, "[%s] %s: %s: %s", g_isa, case_str(c, cs, sizeof cs), tl_status_name(s), tl_ctx_error(g_ctx));
  if (s == TL_OK) {
    read_out(&o.t, out);
    const double scale = c->scale != 0 ? c->scale : 1.0 / sqrt((double)c->D);
    ref_attention(&q.t, &k.t, &v.t, opts.mask, c->causal, (double)(float)scale, ref);
    int written = 1;
    for (int64_t i = 0; i < n && check_written; i++) written &= !isnan(out[i]);
    CHECK(written, "[%s] %s: some output left unwritten (NaN poison)", g_isa, case_str(c, cs, sizeof cs));
    err = test_rel_err(out, ref, n);
  }
  free(out), free(ref), free(q.mem), free(k.mem), free(v.mem), free(o.mem), free(m.mem);
  return err;
}

static double tol_for(const at_case *c) { return c->dt == TL_F32 && c->odt == TL_F32 ? 2e-5 : 1.2e-2; }

/* ---- tests ---- */

static void test_random(void) {
  static const int64_t seqs[] = {1, 5, 16, 17, 33, 64, 100, 129, 200};
  static const int64_t dims[] = {1, 3, 64, 80, 96, 128, 256};
  static const int64_t groups[] = {1, 2, 4};
  for (int it = 0; it < 24; it++) {
    at_case c = {0};
    c.dt = it % 2 ? TL_BF16 : TL_F32;
    c.odt = (it / 2) % 2 ? c.dt : TL_F32;
    c.B = test_rng_int(&g_rng, 1, 2);
    c.Hkv = test_rng_int(&g_rng, 1, 2);
    c.Hq = c.Hkv * groups[test_rng_int(&g_rng, 0, 2)];
    c.D = dims[it % 7];
    int64_t big = c.D >= 128 ? 6 : 8;
    c.Sq = seqs[test_rng_int(&g_rng, 0, big)];
    c.Sk = seqs[test_rng_int(&g_rng, 0, big)];
    c.causal = (int)test_rng_int(&g_rng, 0, 1);
    c.strided = it % 5 == 3;
    c.mdt = TL_DTYPE_INVALID;
    if (it % 3 == 1) {
      c.mdt = test_rng_int(&g_rng, 0, 1) ? TL_F32 : c.dt;
      int kind = (int)test_rng_int(&g_rng, 0, 2);
      if (kind == 0) { /* full */
        c.mask_nd = 4;
        int64_t ms[4] = {c.B, c.Hq, c.Sq, c.Sk};
        memcpy(c.mask_shape, ms, sizeof ms);
      } else if (kind == 1) { /* [Sq, Sk] */
        c.mask_nd = 2;
        c.mask_shape[0] = c.Sq, c.mask_shape[1] = c.Sk;
      } else { /* [B, 1, 1, Sk] (padding mask) */
        c.mask_nd = 4;
        int64_t ms[4] = {c.B, 1, 1, c.Sk};
        memcpy(c.mask_shape, ms, sizeof ms);
      }
    }
    if (it % 7 == 5) c.scale = 0.3f;
    double err = run_case(&c, 1);
    char cs[200];
    CHECK(err >= 0 && err <= tol_for(&c), "[%s] %s: err %.3g > %.3g", g_isa, case_str(&c, cs, sizeof cs), err, tol_for(&c));
  }
}

/* The required head dims at sizes that span several blocks, both dtypes, causal and not. */
static void test_head_dims(void) {
  static const int64_t dims[] = {64, 80, 96, 128, 256};
  for (int i = 0; i < 5; i++)
    for (int dt = 0; dt < 2; dt++) {
      at_case c = {.dt = dt ? TL_BF16 : TL_F32, .B = 1, .Hq = 2, .Hkv = 1, .Sq = 130, .Sk = 140, .D = dims[i], .causal = i % 2,
                   .mdt = TL_DTYPE_INVALID};
      c.odt = c.dt;
      double err = run_case(&c, 1);
      char cs[200];
      CHECK(err >= 0 && err <= tol_for(&c), "[%s] %s: err %.3g", g_isa, case_str(&c, cs, sizeof cs), err);
    }
}

/* GQA: Hq = 8 against Hkv = 2 and 1, prefill and decode. */
static void test_gqa(void) {
  for (int hk = 1; hk <= 2; hk++)
    for (int sq = 0; sq < 2; sq++) {
      at_case c = {.dt = TL_F32, .odt = TL_F32, .B = 2, .Hq = 8, .Hkv = hk, .Sq = sq ? 40 : 3, .Sk = 77, .D = 16,
                   .mdt = TL_DTYPE_INVALID, .causal = sq};
      double err = run_case(&c, 1);
      char cs[200];
      CHECK(err >= 0 && err <= 2e-5, "[%s] %s: err %.3g", g_isa, case_str(&c, cs, sizeof cs), err);
    }
}

/* Causal with Sq > Sk: rows i < Sq - Sk see no key and output exactly 0; Sq < Sk sees the tail. */
static void test_causal_edges(void) {
  const int64_t pairs[][2] = {{300, 130}, {130, 300}, {20, 3}, {5, 40}, {129, 129}, {1, 1}};
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    const int64_t Sq = pairs[i][0], Sk = pairs[i][1], D = 8;
    int64_t sq[4] = {1, 1, Sq, D}, sk[4] = {1, 1, Sk, D};
    at_t q = at_make(TL_F32, 4, sq, 0), k = at_make(TL_F32, 4, sk, 0), v = at_make(TL_F32, 4, sk, 0), o = at_make(TL_F32, 4, sq, 0);
    at_fill(&q, -1, 1), at_fill(&k, -1, 1), at_fill(&v, -1, 1), at_poison(&o);
    tl_attention_opts opts = {.causal = 1};
    tl_status s = tl_attention(g_ctx, &q.t, &k.t, &v.t, &o.t, &opts);
    CHECK(s == TL_OK, "[%s] causal %lldx%lld: %s", g_isa, (long long)Sq, (long long)Sk, tl_ctx_error(g_ctx));
    double *ref = malloc((size_t)(Sq * D) * sizeof(double)), *out = malloc((size_t)(Sq * D) * sizeof(double));
    ref_attention(&q.t, &k.t, &v.t, NULL, 1, (double)(float)(1.0 / sqrt((double)D)), ref);
    read_out(&o.t, out);
    int zeros = 1;
    for (int64_t r = 0; r < Sq - Sk; r++)
      for (int64_t d = 0; d < D; d++) zeros &= out[r * D + d] == 0.0;
    CHECK(zeros, "[%s] causal %lldx%lld: rows that see no key are not 0", g_isa, (long long)Sq, (long long)Sk);
    double err = test_rel_err(out, ref, Sq * D);
    CHECK(err <= 2e-5, "[%s] causal %lldx%lld: err %.3g", g_isa, (long long)Sq, (long long)Sk, err);
    free(ref), free(out), free(q.mem), free(k.mem), free(v.mem), free(o.mem);
  }
}

/* A row whose mask is all -inf outputs 0; a NaN in q makes that row (only) NaN. Every path:
 * decode on the matrix unit (6 rows), prefill, decode on the vector unit (2 rows). */
static void test_masked_and_nan(void) {
  for (int path = 0; path < 3; path++)
    for (int dt = 0; dt < 2; dt++) {
      const tl_dtype t = dt ? TL_BF16 : TL_F32;
      const int64_t Sq = path == 1 ? 40 : path == 2 ? 2 : 6, Sk = 150, D = 32;
      const int64_t dead = path == 2 ? 0 : 2, bad = path == 2 ? 1 : 4; /* the masked row, the NaN row */
      int64_t sq[4] = {1, 2, Sq, D}, sk[4] = {1, 2, Sk, D}, sm[2] = {Sq, Sk};
      at_t q = at_make(t, 4, sq, 0), k = at_make(t, 4, sk, 0), v = at_make(t, 4, sk, 0), o = at_make(TL_F32, 4, sq, 0);
      at_t m = at_make(t, 2, sm, 0);
      at_fill(&q, -1, 1), at_fill(&k, -1, 1), at_fill(&v, -1, 1), at_fill(&m, -1, 1), at_poison(&o);
      for (int64_t j = 0; j < Sk; j++) {
        int64_t im[2] = {dead, j};
        at_set(&m, im, -INFINITY);
      }
      int64_t iq[4] = {0, 1, bad, 7};
      at_set(&q, iq, NAN);
      /* +inf in V: a fully masked row still outputs 0, not 0 x inf (a review found NaN there) */
      int64_t iv[4] = {0, 0, 3, 5};
      if (t == TL_F32) at_set(&v, iv, INFINITY);
      tl_attention_opts opts = {.mask = &m.t};
      tl_status s = tl_attention(g_ctx, &q.t, &k.t, &v.t, &o.t, &opts);
      CHECK(s == TL_OK, "[%s] masked/nan: %s", g_isa, tl_ctx_error(g_ctx));
      const float *op = o.mem;
      int zero_rows = 1, nan_row = 1, finite_rest = 1;
      for (int64_t h = 0; h < 2; h++)
        for (int64_t i = 0; i < Sq; i++)
          for (int64_t d = 0; d < D; d++) {
            float x = op[((h * Sq) + i) * D + d];
            if (i == dead) zero_rows &= x == 0.0f;
            else if (h == 1 && i == bad) nan_row &= isnan(x);
            else if (!(t == TL_F32 && h == 0 && d == 5)) finite_rest &= isfinite(x); /* (the +inf column) */
          }
      CHECK(zero_rows && nan_row && finite_rest, "[%s] %s %s: fully masked rows 0: %d, NaN row NaN: %d, other rows finite: %d", g_isa,
            path == 1 ? "prefill" : path == 2 ? "decode (vector)" : "decode", tl_dtype_name(t), zero_rows, nan_row, finite_rest);
      free(q.mem), free(k.mem), free(v.mem), free(o.mem), free(m.mem);
    }
}

/* A score that overflows f32 once scaled (q.k = 1e38, scale 4, no mask) makes its row NaN, as a
 * NaN score does, on every path (a fused s * scale - max once turned it into a row of zeros). */
static void test_score_overflow(void) {
  for (int path = 0; path < 3; path++) {
    const int64_t Sq = path == 1 ? 40 : path == 2 ? 2 : 6, Sk = 70, D = 16, bad = 1;
    int64_t sq[4] = {1, 1, Sq, D}, sk[4] = {1, 1, Sk, D};
    at_t q = at_make(TL_F32, 4, sq, 0), k = at_make(TL_F32, 4, sk, 0), v = at_make(TL_F32, 4, sk, 0), o = at_make(TL_F32, 4, sq, 0);
    at_fill(&q, -1, 1), at_fill(&k, -1, 1), at_fill(&v, -1, 1), at_poison(&o);
    int64_t iq[4] = {0, 0, bad, 0}, ik[4] = {0, 0, 5, 0};
    at_set(&q, iq, 1e19);
    at_set(&k, ik, 1e19);
    tl_attention_opts opts = {.scale = 4.0f};
    tl_status s = tl_attention(g_ctx, &q.t, &k.t, &v.t, &o.t, &opts);
    CHECK(s == TL_OK, "[%s] overflow: %s", g_isa, tl_ctx_error(g_ctx));
    const float *op = o.mem;
    int nan_row = 1, finite_rest = 1;
    for (int64_t i = 0; i < Sq; i++)
      for (int64_t d = 0; d < D; d++) {
        if (i == bad) nan_row &= isnan(op[i * D + d]);
        else finite_rest &= isfinite(op[i * D + d]);
      }
    CHECK(nan_row && finite_rest, "[%s] %s: overflowing score row NaN: %d, other rows finite: %d", g_isa,
          path == 1 ? "prefill" : path == 2 ? "decode (vector)" : "decode", nan_row, finite_rest);
    free(q.mem), free(k.mem), free(v.mem), free(o.mem);
  }
}

/* Huge finite scores (q.k * scale from 5e4 to 5e15, key 5 ahead of the others by 1%): each row's
 * softmax is one-hot on key 5, so o is its v row (checked against the largest double q.k). Where the ISA has FMA, s * scale - max is one
 * multiply-add whose max-row argument is the rounding error of the max, up to half its ulp: past
 * 2^20 that left exp's domain (NaN or wrong rows at 1e9 on avx2 and avx512, found by a review). */
static void test_score_huge(void) {
  static const double mags[] = {1e4, 1e8, 1e14};
  for (int path = 0; path < 3; path++)
    for (int mi = 0; mi < 3; mi++) {
      const int64_t Sq = path == 1 ? 40 : path == 2 ? 2 : 6, Sk = 70, D = 16;
      int64_t sq[4] = {1, 1, Sq, D}, sk[4] = {1, 1, Sk, D};
      at_t q = at_make(TL_F32, 4, sq, 0), k = at_make(TL_F32, 4, sk, 0), v = at_make(TL_F32, 4, sk, 0);
      at_t o = at_make(TL_F32, 4, sq, 0);
      at_fill(&q, 0.5 * mags[mi], 1.5 * mags[mi]), at_fill(&k, 1.0, 1.01), at_fill(&v, -1, 1), at_poison(&o);
      for (int64_t c = 0; c < D; c++) { /* key 5 the largest by >= 0.01 * sum(q) * scale: one-hot */
        int64_t ik[4] = {0, 0, 5, c};
        at_set(&k, ik, 1.02);
      }
      tl_attention_opts opts = {.scale = 0.3f};
      tl_status s = tl_attention(g_ctx, &q.t, &k.t, &v.t, &o.t, &opts);
      CHECK(s == TL_OK, "[%s] huge scores: %s", g_isa, tl_ctx_error(g_ctx));
      const float *qp = q.mem, *kp = k.mem, *vp = v.mem, *op = o.mem;
      double worst = 0;
      for (int64_t i = 0; i < Sq; i++) {
        int64_t best = 0;
        double bs = -INFINITY;
        for (int64_t j = 0; j < Sk; j++) {
          double d = 0;
          for (int64_t c = 0; c < D; c++) d += (double)qp[i * D + c] * kp[j * D + c];
          if (d > bs) bs = d, best = j;
        }
        for (int64_t c = 0; c < D; c++) {
          double e = fabs(op[i * D + c] - vp[best * D + c]);
          if (!(e <= worst)) worst = e; /* NaN stays */
        }
      }
      CHECK(worst <= 1e-6, "[%s] %s, scores ~%.0e: o is not the top key's v (max error %.3g)", g_isa,
            path == 1 ? "prefill" : path == 2 ? "decode (vector)" : "decode", 4.8 * mags[mi], worst);
      free(q.mem), free(k.mem), free(v.mem), free(o.mem);
    }
}

/* The decode path: Sq 1..16, bitwise identical for 1, 2 and 3 threads, and correct. */
static void test_decode_threads(void) {
  const int64_t sqs[] = {1, 4, 16};
  for (int dt = 0; dt < 2; dt++)
    for (size_t si = 0; si < 3; si++) {
      const tl_dtype t = dt ? TL_BF16 : TL_F32;
      const int64_t Sq = sqs[si], Sk = 1100 + 37 * (int64_t)si, D = 64;
      int64_t sq[4] = {1, 4, Sq, D}, sk[4] = {1, 2, Sk, D};
      at_t q = at_make(t, 4, sq, 0), k = at_make(t, 4, sk, 0), v = at_make(t, 4, sk, 0);
      at_fill(&q, -2, 2), at_fill(&k, -2, 2), at_fill(&v, -1, 1);
      void *first = NULL;
      const size_t ob = (size_t)(4 * Sq * D) * sizeof(float);
      for (int th = 1; th <= 3; th++) {
        tl_ctx *ctx = NULL;
        tl_ctx_opts op = {.threads = th, .isa = g_isa};
        if (tl_ctx_new(&op, &ctx) != TL_OK) {
          CHECK(0, "ctx %d threads: %s", th, tl_last_error());
          continue;
        }
        at_t o = at_make(TL_F32, 4, sq, 0);
        at_poison(&o);
        tl_attention_opts opts = {.causal = si == 1};
        tl_status s = tl_attention(ctx, &q.t, &k.t, &v.t, &o.t, &opts);
        CHECK(s == TL_OK, "[%s] decode %d threads: %s", g_isa, th, tl_ctx_error(ctx));
        tl_attn_last last;
        tl_attn_last_get(ctx, &last);
        CHECK(last.decode == 1 && last.nchunk > 1, "[%s] Sq %lld took the decode path with %lld chunks", g_isa, (long long)Sq,
              (long long)last.nchunk);
        if (th == 1) {
          first = o.mem;
          double *ref = malloc((size_t)(4 * Sq * D) * sizeof(double)), *out = malloc((size_t)(4 * Sq * D) * sizeof(double));
          ref_attention(&q.t, &k.t, &v.t, NULL, opts.causal, (double)(float)(1.0 / sqrt((double)D)), ref);
          read_out(&o.t, out);
          double err = test_rel_err(out, ref, 4 * Sq * D);
          CHECK(err <= (dt ? 1.2e-2 : 2e-5), "[%s] decode %s Sq %lld: err %.3g", g_isa, tl_dtype_name(t), (long long)Sq, err);
          free(ref), free(out);
        } else {
          CHECK(!memcmp(first, o.mem, ob), "[%s] decode %s Sq %lld: %d threads differ from 1 thread", g_isa, tl_dtype_name(t),
                (long long)Sq, th);
          free(o.mem);
        }
        tl_ctx_free(ctx);
      }
      free(first), free(q.mem), free(k.mem), free(v.mem);
    }
}

/* Causal blocks wholly above the diagonal are never entered: the inner grids visit exactly the
 * blocks up to the diagonal (half of them, plus the diagonal) and move that many bytes; the
 * outer plan stages each Q block once. */
static void test_causal_skip(void) {
  const int64_t B = 1, H = 1, S = 1280, D = 16;
  int64_t sh[4] = {B, H, S, D};
  at_t q = at_make(TL_BF16, 4, sh, 0), k = at_make(TL_BF16, 4, sh, 0), v = at_make(TL_BF16, 4, sh, 0), o = at_make(TL_BF16, 4, sh, 0);
  at_fill(&q, -1, 1), at_fill(&k, -1, 1), at_fill(&v, -1, 1);
  int64_t blocks[2], bytes[2];
  for (int causal = 0; causal < 2; causal++) {
    tl_attention_opts opts = {.causal = causal};
    tl_status s = tl_attention(g_ctx, &q.t, &k.t, &v.t, &o.t, &opts);
    CHECK(s == TL_OK, "[%s] causal skip: %s", g_isa, tl_ctx_error(g_ctx));
    tl_attn_last last;
    tl_attn_last_get(g_ctx, &last);
    REQUIRE(last.plan && !last.decode && last.bq > 0 && last.bk > 0, "[%s] last call info", g_isa);
    const int64_t nq = TL_CDIV(S, last.bq), nk = TL_CDIV(S, last.bk);
    int64_t want = 0;
    for (int64_t i = 0; i < nq; i++) {
      int64_t lim = (i + 1) * last.bq; /* keys the block's last row sees (Sq == Sk) */
      want += causal ? TL_CDIV(lim < S ? lim : S, last.bk) : nk;
    }
    want *= B * H;
    blocks[causal] = last.kv_blocks, bytes[causal] = last.kv_bytes;
    CHECK(last.kv_blocks == want, "[%s] causal %d: inner grids entered %lld K/V blocks, expected %lld", g_isa, causal,
          (long long)last.kv_blocks, (long long)want);
    tl_stats st;
    CHECK(tl_plan_stats(last.plan, &st) == TL_OK && st.stage_events[0] == B * H * nq && st.steps == B * H * nq,
          "[%s] causal %d: outer plan stats: %lld steps, %lld Q blocks staged (want %lld each)", g_isa, causal, (long long)st.steps,
          (long long)st.stage_events[0], (long long)(B * H * nq));
  }
  CHECK(bytes[1] < bytes[0] * 65 / 100 && blocks[1] < blocks[0] * 65 / 100, "[%s] causal moved %lld K/V bytes vs %lld full", g_isa,
        (long long)bytes[1], (long long)bytes[0]);
  free(q.mem), free(k.mem), free(v.mem), free(o.mem);
}

/* Same shapes reuse the plan (no new plan), the scale is read per call, Sk = 0 gives zeros. */
static void test_cache_and_empty(void) {
  at_case c = {.dt = TL_F32, .odt = TL_F32, .B = 1, .Hq = 2, .Hkv = 2, .Sq = 50, .Sk = 70, .D = 24, .mdt = TL_DTYPE_INVALID};
  double err = run_case(&c, 1);
  tl_attn_last a, b;
  tl_attn_last_get(g_ctx, &a);
  c.scale = 0.05f;
  double err2 = run_case(&c, 1);
  tl_attn_last_get(g_ctx, &b);
  CHECK(err <= 2e-5 && err2 <= 2e-5, "[%s] cache: errors %.3g %.3g", g_isa, err, err2);
  CHECK(a.plans_made == b.plans_made && a.plan == b.plan, "[%s] same shape made a new plan (%d -> %d)", g_isa, a.plans_made, b.plans_made);
  c.Sq = 51;
  run_case(&c, 1);
  tl_attn_last_get(g_ctx, &b);
  CHECK(b.plans_made == a.plans_made + 1, "[%s] new shape: plans %d -> %d", g_isa, a.plans_made, b.plans_made);
  /* Sk = 0: every row sees nothing -> 0 */
  int64_t sq[4] = {1, 2, 5, 8}, sk[4] = {1, 2, 0, 8};
  at_t q = at_make(TL_F32, 4, sq, 0), k = at_make(TL_F32, 4, sk, 0), v = at_make(TL_F32, 4, sk, 0), o = at_make(TL_F32, 4, sq, 0);
  at_fill(&q, -1, 1), at_poison(&o);
  CHECK(tl_attention(g_ctx, &q.t, &k.t, &v.t, &o.t, NULL) == TL_OK, "[%s] Sk = 0: %s", g_isa, tl_ctx_error(g_ctx));
  int zero = 1;
  for (int i = 0; i < 2 * 5 * 8; i++) zero &= ((float *)o.mem)[i] == 0.0f;
  CHECK(zero, "[%s] Sk = 0 did not output zeros", g_isa);
  /* Sq = 0: a no-op */
  int64_t s0[4] = {1, 2, 0, 8};
  at_t q0 = at_make(TL_F32, 4, s0, 0), o0 = at_make(TL_F32, 4, s0, 0);
  tl_status s0s = tl_attention(g_ctx, &q0.t, &q.t, &q.t, &o0.t, NULL);
  CHECK(s0s == TL_OK, "[%s] Sq = 0 is a no-op: %s", g_isa, tl_ctx_error(g_ctx));
  free(q.mem), free(k.mem), free(v.mem), free(o.mem), free(q0.mem), free(o0.mem);
}

static void expect_refusal(const char *what, tl_status want, const char *word, const tl_tensor *q, const tl_tensor *k,
                           const tl_tensor *v, at_t *o, const tl_attention_opts *opts) {
  void *save = malloc((size_t)o->bytes);
  memcpy(save, o->mem, (size_t)o->bytes);
  tl_status s = tl_attention(g_ctx, q, k, v, &o->t, opts);
  CHECK(s == want, "[%s] %s: got %s, want %s (%s)", g_isa, what, tl_status_name(s), tl_status_name(want), tl_ctx_error(g_ctx));
  CHECK(strstr(tl_ctx_error(g_ctx), word) != NULL, "[%s] %s: message '%s' lacks '%s'", g_isa, what, tl_ctx_error(g_ctx), word);
  CHECK(!memcmp(save, o->mem, (size_t)o->bytes), "[%s] %s: o was written", g_isa, what);
  free(save);
}

static void test_refusals(void) {
  int64_t sq[4] = {2, 4, 8, 16}, sk[4] = {2, 2, 10, 16}, s3[3] = {4, 8, 16}, sd[4] = {2, 4, 8, 8}, sh3[4] = {2, 3, 10, 16};
  int64_t sb[4] = {1, 2, 10, 16}, sm_bad[2] = {8, 9}, sm_ok[2] = {8, 10};
  at_t q = at_make(TL_F32, 4, sq, 0), k = at_make(TL_F32, 4, sk, 0), v = at_make(TL_F32, 4, sk, 0), o = at_make(TL_F32, 4, sq, 0);
  at_t q3 = at_make(TL_F32, 3, s3, 0), kd = at_make(TL_F32, 4, sd, 0), k3 = at_make(TL_F32, 4, sh3, 0), kb = at_make(TL_F32, 4, sb, 0);
  at_t qb = at_make(TL_BF16, 4, sq, 0), oi = at_make(TL_I32, 4, sq, 0), mbad = at_make(TL_F32, 2, sm_bad, 0);
  at_t mok = at_make(TL_F32, 2, sm_ok, 0), mi8 = at_make(TL_I8, 2, sm_ok, 0), ob = at_make(TL_BF16, 4, sq, 0);
  at_fill(&q, -1, 1), at_fill(&k, -1, 1), at_fill(&v, -1, 1), at_fill(&o, -1, 1), at_fill(&mok, -1, 1);
  tl_attention_opts opts = {0};
  expect_refusal("q 3-D", TL_ERR_SHAPE, "q", &q3.t, &k.t, &v.t, &o, NULL);
  expect_refusal("D mismatch", TL_ERR_SHAPE, "D = 8", &q.t, &kd.t, &kd.t, &o, NULL);
  expect_refusal("Hq % Hkv", TL_ERR_SHAPE, "multiple of Hkv", &q.t, &k3.t, &k3.t, &o, NULL);
  expect_refusal("B mismatch", TL_ERR_SHAPE, "batch", &q.t, &kb.t, &kb.t, &o, NULL);
  expect_refusal("v shape", TL_ERR_SHAPE, "v is [2, 4, 8, 8], expected k's shape [2, 2, 10, 16]", &q.t, &k.t, &kd.t, &o, NULL);
  expect_refusal("dtype mix", TL_ERR_DTYPE, "share a dtype", &qb.t, &k.t, &v.t, &o, NULL);
  expect_refusal("o dtype", TL_ERR_DTYPE, "o is i32", &q.t, &k.t, &v.t, &oi, NULL);
  expect_refusal("o bf16 for f32 q", TL_ERR_DTYPE, "o is bf16", &q.t, &k.t, &v.t, &ob, NULL);
  at_t os = at_make(TL_F32, 4, sq, 0);
  at_fill(&os, -1, 1);
  os.t.stride[2] = 0;
  expect_refusal("o stride 0", TL_ERR_INVALID, "o addresses", &q.t, &k.t, &v.t, &os, NULL);
  int64_t sq_s[4] = {2, 4, 4, 16};
  at_t q_s = at_make(TL_F32, 4, sq_s, 0), o_s = at_make(TL_F32, 4, sq_s, 0);
  at_fill(&q_s, -1, 1), at_fill(&o_s, -1, 1);
  o_s.t.stride[2] = 0;
  expect_refusal("o stride 0, decode", TL_ERR_INVALID, "o addresses", &q_s.t, &k.t, &v.t, &o_s, NULL);
  free(os.mem), free(q_s.mem), free(o_s.mem);
  { /* a head dim whose K / V blocks cannot fit the budget: refused before anything runs (causal
     * Q blocks that see no key used to be zeroed first) */
    int64_t bq4[4] = {1, 1, 64, 3500}, bk4[4] = {1, 1, 16, 3500};
    at_t bq = at_make(TL_F32, 4, bq4, 0), bkk = at_make(TL_F32, 4, bk4, 0), bv = at_make(TL_F32, 4, bk4, 0),
         bo = at_make(TL_F32, 4, bq4, 0);
    at_fill(&bq, -1, 1), at_fill(&bkk, -1, 1), at_fill(&bv, -1, 1), at_fill(&bo, -1, 1);
    tl_attention_opts co = {.causal = 1};
    expect_refusal("D 3500 beyond the budget", TL_ERR_VMEM, "D = 3500", &bq.t, &bkk.t, &bv.t, &bo, &co);
    free(bq.mem), free(bkk.mem), free(bv.mem), free(bo.mem);
  }
  opts.mask = &mbad.t;
  expect_refusal("mask shape", TL_ERR_SHAPE, "mask is [8, 9], not broadcastable", &q.t, &k.t, &v.t, &o, &opts);
  opts.mask = &mi8.t;
  expect_refusal("mask dtype", TL_ERR_DTYPE, "mask is i8", &q.t, &k.t, &v.t, &o, &opts);
  opts.mask = &mok.t;
  opts.scale = NAN;
  expect_refusal("scale NaN", TL_ERR_INVALID, "scale", &q.t, &k.t, &v.t, &o, &opts);
  opts.scale = INFINITY;
  expect_refusal("scale inf", TL_ERR_INVALID, "scale", &q.t, &k.t, &v.t, &o, &opts);
  opts.scale = 0, opts.causal = 2;
  expect_refusal("causal 2", TL_ERR_INVALID, "causal", &q.t, &k.t, &v.t, &o, &opts);
  opts.causal = 0;
  expect_refusal("NULL k", TL_ERR_INVALID, "k is NULL", &q.t, NULL, &v.t, &o, &opts);
  /* o overlapping q: q used as o */
  at_t alias = q;
  expect_refusal("o overlaps q", TL_ERR_INVALID, "overlaps q", &q.t, &k.t, &v.t, &alias, &opts);
  /* o overlapping the mask */
  int64_t smo[4] = {2, 4, 8, 10};
  at_t big = at_make(TL_F32, 4, sq, 0);
  tl_tensor mview = tl_tensor_make(big.mem, TL_F32, 4, smo);
  opts.mask = &mview;
  expect_refusal("o overlaps mask", TL_ERR_INVALID, "overlaps mask", &q.t, &k.t, &v.t, &big, &opts);
  CHECK(tl_attention(NULL, &q.t, &k.t, &v.t, &o.t, NULL) == TL_ERR_INVALID, "NULL ctx");
  /* a head dim whose blocks cannot fit the staging budget: refused before running */
  int64_t shuge[4] = {1, 1, 40, 60000};
  at_t qh = at_make(TL_F32, 4, shuge, 0), kh = at_make(TL_F32, 4, shuge, 0), oh = at_make(TL_F32, 4, shuge, 0);
  at_fill(&qh, -1, 1), at_fill(&kh, -1, 1), at_fill(&oh, -1, 1);
  expect_refusal("D 60000", TL_ERR_VMEM, "budget", &qh.t, &kh.t, &kh.t, &oh, NULL);
  free(qh.mem), free(kh.mem), free(oh.mem);
  at_t *all[] = {&q, &k, &v, &o, &q3, &kd, &k3, &kb, &qb, &oi, &mbad, &mok, &mi8, &ob, &big};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]->mem);
}

int main(void) {
  /* without AMX of its own, the CPU (with AVX512-BF16) runs the amx level over the emulation of
   * the tile registers (tests/tile/amx_emu.h) */
  const int emu = amx_emu_enable();
  int ran_amx = 0;
  if (emu) fprintf(stderr, "no AMX on this CPU: the amx level runs over tests/tile/amx_emu.h\n");
  for (int i = 0; (g_isa = test_isa_level(i)) != NULL; i++) {
    tl_ctx_opts opts = {.isa = g_isa};
    if (tl_ctx_new(&opts, &g_ctx) != TL_OK) {
      CHECK(0, "tl_ctx_new(%s): %s", g_isa, tl_last_error());
      continue;
    }
    fprintf(stderr, "isa %s\n", g_isa);
    ran_amx |= emu && amx_emu_runs(g_ctx);
    RUN_T(test_random);
    RUN_T(test_head_dims);
    RUN_T(test_gqa);
    RUN_T(test_causal_edges);
    RUN_T(test_masked_and_nan);
    RUN_T(test_score_overflow);
    RUN_T(test_score_huge);
    RUN_T(test_decode_threads);
    RUN_T(test_causal_skip);
    RUN_T(test_cache_and_empty);
    RUN_T(test_refusals);
    tl_ctx_free(g_ctx);
  }
  if (ran_amx) CHECK(amx_emu_level_ok(), "the emulated amx level issued no tile product or broke a tile rule");
  return test_summary("kernels_attention");
}
