/* bench_attention.c — the `attention` suite of `tilec bench`: o = softmax(scale q k^T) v, bf16
 * (default) or f32 (--dtype), prefill (Sq = Sk = S, causal or not) and decode (Sq = 1 against a
 * KV cache of length KV).
 *
 * Rows: tilec tl_attention (o f32); the unfused composition, per head: S = q k^T on a peer
 * matmul (oneDNN bf16 matmul, or OpenBLAS cblas_sgemm for f32), P = tl_softmax(S) (P in bf16 for
 * the bf16 product), o = P v on the peer again (causal: the whole S computed, then a timed pass
 * sets the keys past the diagonal to -inf before the softmax; prefill only up to S = 4096, whose
 * f32 S is 64 MiB); PyTorch scaled_dot_product_attention in its own process where torch is
 * installed. Prefill rates are
 * GFLOP/s = 4 H Sq Sk D (causal: the visible part) / median and the share of the bf16 (f32)
 * matrix-unit peak the machine probe measured; decode rates are GB/s of K and V read once and
 * the share of the bandwidth of the level the K/V cache lives in (DRAM when it exceeds the
 * last-level cache or with --cold).
 *
 * Invariants: every implementation is checked on buffer set 0 before timing: o poisoned (NaN),
 * then up to 8 query rows of 2 heads (first, last, evenly spaced) compared with a float64
 * reference (relative error <= 2e-2 bf16, 1e-4 f32); a mismatch is a WRONG row, never timed.
 * Inputs are integers / 128 (exact in bf16). Preparation (K^T for oneDNN, q pre-scaled for the
 * bf16 composition, whose matmul has no scale) is never timed: it favours the peer.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_gemm_impl.h"
#include "tools_impl.h"

enum { TL_A_TILEC, TL_A_UNFUSED_DNNL, TL_A_UNFUSED_OB };

#define TL_A_UNFUSED_MAX_S 4096

static struct {
  tl_gpeers gp;
  int loaded;
  double peak, bw_dram, bw_llc;
  int64_t llc_bytes;
  char peak_desc[320], bw_desc[320];
} tl_attn_state;

typedef struct tl_adata {
  tl_benv *env;
  int bf16, decode, causal;
  int64_t H, Sq, Sk, D, copies;
  float scale;
  void **q, **k, **v, **o; /* [copies]: q, k, v in the dtype, o f32 */
  void **qs, **kt;         /* oneDNN composition: q pre-scaled, K^T per head [D, Sk] */
  float *s;                /* composition: S [Sq, Sk] f32 */
  void *p;                 /* composition: P [Sq, Sk] (bf16 or f32) */
} tl_adata;

typedef struct tl_aimpl {
  tl_adata *d;
  int kind;
  tl_gdnnl_op *op1, *op2;
  char *note;
} tl_aimpl;

/* ---- sizes: "SxD", "SxDc" (causal), "dKVxD" (decode, Sq = 1) ---- */

static int tl_attn_parse(const char *tok, int *decode, int64_t *s, int64_t *d, int *causal, char *err, size_t errn) {
  const char *p = tok;
  *decode = *p == 'd' || *p == 'D';
  if (*decode) p++;
  char *end;
  if (!isdigit((unsigned char)*p)) goto bad;
  long long a = strtoll(p, &end, 10);
  if (*end != 'x' && *end != 'X') goto bad;
  p = end + 1;
  if (!isdigit((unsigned char)*p)) goto bad;
  long long b = strtoll(p, &end, 10);
  *causal = *end == 'c' || *end == 'C';
  if (*causal) end++;
  if (*end || a < 1 || a > (1 << 20) || b < 1 || b > 1024 || (*decode && *causal)) goto bad;
  *s = a, *d = b;
  return 0;
bad:
  snprintf(err, errn, "size '%s': expected SxD (prefill), SxDc (causal prefill) or dKVxD (decode, Sq = 1), "
                      "S, KV 1..2^20, D 1..1024, e.g. 2048x128, 2048x128c, d65536x128", tok);
  return -1;
}

static int tl_attn_size_check(const char *tok, char *err, size_t errn) {
  int dec, c;
  int64_t s, d;
  return tl_attn_parse(tok, &dec, &s, &d, &c, err, errn);
}

/* ---- inputs, reference, check ---- */

static float tl_attn_val(int64_t i, int64_t set, int which) {
  uint32_t h = (uint32_t)((uint64_t)(i + 1) * 2654435761u) ^ (uint32_t)((set * 3 + which + 1) * 40503u);
  h ^= h >> 13;
  return (float)((int)((h >> 8) & 0xff) - 128) / 128.0f; /* exact in bf16 */
}

static void tl_attn_fill(void *p, int bf16, int64_t n, int64_t set, int which) {
  for (int64_t i = 0; i < n; i++) {
    float f = tl_attn_val(i, set, which);
    if (bf16) ((uint16_t *)p)[i] = tl_f32_to_bf16(f);
    else ((float *)p)[i] = f;
  }
}

static double tl_attn_get(const void *p, int bf16, int64_t i) {
  return bf16 ? (double)tl_bf16_to_f32(((const uint16_t *)p)[i]) : (double)((const float *)p)[i];
}

/* Up to 8 sampled rows of 2 heads (0 and H-1) against float64: 0 right, 1 wrong. */
static int tl_attn_verify(const tl_adata *d, char *note, size_t n) {
  const int64_t D = d->D, Sq = d->Sq, Sk = d->Sk;
  double *sc = malloc((size_t)Sk * sizeof(double)), num = 0, den = 0;
  if (!sc) {
    snprintf(note, n, "out of memory for the reference");
    return 1;
  }
  int nr = Sq < 8 ? (int)Sq : 8;
  for (int hh = 0; hh < (d->H > 1 ? 2 : 1); hh++) {
    const int64_t h = hh ? d->H - 1 : 0;
    for (int r = 0; r < nr; r++) {
      const int64_t i = nr == 1 ? 0 : (int64_t)((double)(Sq - 1) * r / (nr - 1));
      double mx = -INFINITY, l = 0;
      for (int64_t j = 0; j < Sk; j++) {
        double acc = 0;
        for (int64_t e = 0; e < D; e++)
          acc += tl_attn_get(d->q[0], d->bf16, (h * Sq + i) * D + e) * tl_attn_get(d->k[0], d->bf16, (h * Sk + j) * D + e);
        sc[j] = d->causal && j > i + Sk - Sq ? -INFINITY : acc * (double)d->scale;
        if (sc[j] > mx) mx = sc[j];
      }
      for (int64_t j = 0; j < Sk; j++) l += sc[j] = exp(sc[j] - mx);
      for (int64_t e = 0; e < D; e++) {
        double want = 0;
        for (int64_t j = 0; j < Sk; j++) want += sc[j] * tl_attn_get(d->v[0], d->bf16, (h * Sk + j) * D + e);
        want /= l;
        double got = ((const float *)d->o[0])[(h * Sq + i) * D + e];
        if (!isfinite(got)) {
          snprintf(note, n, "o[%lld][%lld][%lld] is %g (not timed)", (long long)h, (long long)i, (long long)e, got);
          free(sc);
          return 1;
        }
        num += (got - want) * (got - want), den += want * want;
      }
    }
  }
  free(sc);
  double rel = den > 0 ? sqrt(num / den) : sqrt(num), tol = d->bf16 ? 2e-2 : 1e-4;
  if (rel > tol) {
    snprintf(note, n, "relative error %.3g on sampled rows, tolerance %.0e (not timed)", rel, tol);
    return 1;
  }
  return 0;
}

/* ---- the calls ---- */

static int tl_attn_call(void *arg, int64_t set) {
  tl_aimpl *s = arg;
  tl_adata *d = s->d;
  const int64_t H = d->H, Sq = d->Sq, Sk = d->Sk, D = d->D;
  const size_t es = d->bf16 ? 2 : 4;
  if (s->kind == TL_A_TILEC) {
    const tl_dtype dt = d->bf16 ? TL_BF16 : TL_F32;
    int64_t sq[4] = {1, H, Sq, D}, sk[4] = {1, H, Sk, D};
    tl_tensor q = tl_tensor_make(d->q[set], dt, 4, sq), k = tl_tensor_make(d->k[set], dt, 4, sk);
    tl_tensor v = tl_tensor_make(d->v[set], dt, 4, sk), o = tl_tensor_make(d->o[set], TL_F32, 4, sq);
    tl_attention_opts opts = {.causal = d->causal};
    tl_status st = tl_attention(d->env->ctx, &q, &k, &v, &o, &opts);
    if (st != TL_OK) {
      snprintf(s->note, sizeof((tl_bimpl *)0)->note, "tl_attention: %s: %.120s", tl_status_name(st), tl_ctx_error(d->env->ctx));
      return 1;
    }
    return 0;
  }
  tl_gpeers *gp = &tl_attn_state.gp;
  int64_t ss[2] = {Sq, Sk};
  tl_tensor st_ = tl_tensor_make(d->s, TL_F32, 2, ss), pt = tl_tensor_make(d->p, d->bf16 ? TL_BF16 : TL_F32, 2, ss);
  for (int64_t h = 0; h < H; h++) {
    const char *qh = (const char *)(s->kind == TL_A_UNFUSED_DNNL ? d->qs[set] : d->q[set]) + (size_t)(h * Sq * D) * es;
    const char *vh = (const char *)d->v[set] + (size_t)(h * Sk * D) * es;
    float *oh = (float *)d->o[set] + h * Sq * D;
    if (s->kind == TL_A_UNFUSED_DNNL) {
      const char *kth = (const char *)d->kt[set] + (size_t)(h * D * Sk) * es;
      if (tl_gdnnl_run(gp, s->op1, qh, kth, d->s) != 0) goto fail;
    } else {
      const float *kh = (const float *)d->k[set] + h * Sk * D;
      gp->ob_sgemm(101, 111, 112, (int)Sq, (int)Sk, (int)D, d->scale, (const float *)qh, (int)D, kh, (int)D, 0.0f, d->s, (int)Sk);
    }
    if (d->causal) /* the masking pass the composition needs: keys past i + Sk - Sq get -inf */
      for (int64_t i = 0; i < Sq; i++) {
        float *row = d->s + i * Sk;
        for (int64_t j = i + Sk - Sq + 1 > 0 ? i + Sk - Sq + 1 : 0; j < Sk; j++) row[j] = -INFINITY;
      }
    tl_status r = tl_softmax(d->env->ctx, &st_, &pt, -1);
    if (r != TL_OK) {
      snprintf(s->note, sizeof((tl_bimpl *)0)->note, "tl_softmax: %.140s", tl_ctx_error(d->env->ctx));
      return 1;
    }
    if (s->kind == TL_A_UNFUSED_DNNL) {
      if (tl_gdnnl_run(gp, s->op2, d->p, vh, oh) != 0) goto fail;
    } else {
      gp->ob_sgemm(101, 111, 111, (int)Sq, (int)D, (int)Sk, 1.0f, d->p, (int)Sk, (const float *)vh, (int)D, 0.0f, oh, (int)D);
    }
  }
  return 0;
fail:
  snprintf(s->note, sizeof((tl_bimpl *)0)->note, "dnnl_primitive_execute failed");
  return 1;
}

static tl_bimpl *tl_attn_add(tl_bgroup *g, tl_aimpl *st, tl_adata *d, int kind, int tilec, const char *name) {
  tl_bimpl *im = &g->impl[g->n];
  memset(im, 0, sizeof *im);
  snprintf(im->name, sizeof im->name, "%s", name);
  im->tilec = tilec, im->fn = tl_attn_call, im->arg = st, im->status = TL_BROW_OK;
  *st = (tl_aimpl){.d = d, .kind = kind, .note = im->note};
  g->n++;
  return im;
}

static void *tl_attn_alloc(size_t n) {
  size_t bytes = (n + 63) & ~(size_t)63;
  void *p = aligned_alloc(64, bytes ? bytes : 64);
  if (p) memset(p, 0, bytes);
  return p;
}

static void tl_attn_free(tl_adata *d) {
  void ***arrs[6] = {&d->q, &d->k, &d->v, &d->o, &d->qs, &d->kt};
  for (int a = 0; a < 6; a++) {
    if (!*arrs[a]) continue;
    for (int64_t c = 0; c < d->copies; c++) free((*arrs[a])[c]);
    free(*arrs[a]);
  }
  free(d->s), free(d->p);
}

/* The visible (query, key) pairs. */
static double tl_attn_pairs(int64_t Sq, int64_t Sk, int causal) {
  if (!causal) return (double)Sq * (double)Sk;
  double n = 0;
  for (int64_t i = 0; i < Sq; i++) {
    int64_t c = i + Sk - Sq + 1;
    n += (double)(c < 0 ? 0 : c > Sk ? Sk : c);
  }
  return n;
}

static int tl_attn_group(tl_benv *env, int decode, int64_t S, int64_t D, int causal) {
  int rc = -1;
  const int bf16 = !strcmp(env->dtype, "bf16");
  const size_t es = bf16 ? 2 : 4;
  tl_gpeers *gp = &tl_attn_state.gp;
  tl_adata d = {.env = env, .bf16 = bf16, .decode = decode, .causal = causal, .D = D};
  d.Sk = S, d.Sq = decode ? 1 : S;
  /* heads: 8, fewer past S = 2048 so one call stays near a second, but at least 2 (one causal
     head would leave the later, heavier Q blocks to one worker: static chunks) */
  d.H = decode || S <= 2048 ? 8 : (8 * 2048 / S > 2 ? 8 * 2048 / S : 2);
  d.scale = (float)(1.0 / sqrt((double)D));
  tl_bgroup g;
  memset(&g, 0, sizeof g);
  tl_aimpl st[TL_BGROUP_MAX];
  memset(st, 0, sizeof st);
  char err[200];
  g.op = decode ? "attention_decode" : causal ? "attention_causal" : "attention";
  g.title = decode ? "o = attn(q, K, V), Sq 1" : causal ? "o = attn(q, k, v), causal" : "o = attn(q, k, v)";
  g.dtype = bf16 ? "bf16 -> f32" : "f32";
  snprintf(g.size, sizeof g.size, "%sH%lld S%lldxD%lld", decode ? "KV " : "", (long long)d.H, (long long)S, (long long)D);
  const double kv_bytes = 2.0 * (double)(d.H * d.Sk * D) * (double)es;
  g.size_bytes = (int64_t)(kv_bytes + (double)(d.H * d.Sq * D) * ((double)es + 4));
  g.set_bytes = g.size_bytes;
  if (decode) {
    g.moved = kv_bytes; /* GB/s of K and V read once */
  } else {
    g.flops = 4.0 * (double)d.H * tl_attn_pairs(d.Sq, d.Sk, causal) * (double)D;
    g.peak = tl_attn_state.peak;
    g.moved = (double)g.size_bytes;
  }
  g.copies = d.copies = tl_bench_copies(env, g.set_bytes);
  tl_bench_progress(env, "attention %s: preparing %lld buffer set(s)", g.size, (long long)d.copies);
  const int64_t nq = d.H * d.Sq * D, nk = d.H * d.Sk * D;
  if (!(d.q = calloc((size_t)d.copies, sizeof(void *))) || !(d.k = calloc((size_t)d.copies, sizeof(void *))) ||
      !(d.v = calloc((size_t)d.copies, sizeof(void *))) || !(d.o = calloc((size_t)d.copies, sizeof(void *))))
    goto nomem;
  for (int64_t c = 0; c < d.copies; c++) {
    if (!(d.q[c] = tl_attn_alloc((size_t)nq * es)) || !(d.k[c] = tl_attn_alloc((size_t)nk * es)) ||
        !(d.v[c] = tl_attn_alloc((size_t)nk * es)) || !(d.o[c] = tl_attn_alloc((size_t)nq * 4)))
      goto nomem;
    tl_attn_fill(d.q[c], bf16, nq, c, 0), tl_attn_fill(d.k[c], bf16, nk, c, 1), tl_attn_fill(d.v[c], bf16, nk, c, 2);
  }
  tl_attn_add(&g, &st[g.n], &d, TL_A_TILEC, 1, "tilec tl_attention");
  /* the unfused composition */
  const int unfused = decode || S <= TL_A_UNFUSED_MAX_S;
  if (unfused && (bf16 ? gp->dnnl != NULL : gp->ob_sgemm != NULL)) {
    if (!(d.s = tl_attn_alloc((size_t)(d.Sq * d.Sk) * 4)) || !(d.p = tl_attn_alloc((size_t)(d.Sq * d.Sk) * es))) goto nomem;
    if (bf16) {
      tl_bimpl *im = tl_attn_add(&g, &st[g.n], &d, TL_A_UNFUSED_DNNL, 0, "onednn mm + tl_softmax + mm");
      tl_aimpl *ai = &st[g.n - 1];
      size_t wb;
      ai->op1 = tl_gdnnl_matmul(gp, TL_GEMM_BF16, d.Sq, d.Sk, D, 0, &wb, err, sizeof err);
      ai->op2 = ai->op1 ? tl_gdnnl_matmul(gp, TL_GEMM_BF16, d.Sq, D, d.Sk, 0, &wb, err, sizeof err) : NULL;
      if (!ai->op1 || !ai->op2) {
        im->status = TL_BROW_FAILED;
        snprintf(im->note, sizeof im->note, "%.150s", err);
      }
      if (!(d.qs = calloc((size_t)d.copies, sizeof(void *))) || !(d.kt = calloc((size_t)d.copies, sizeof(void *)))) goto nomem;
      for (int64_t c = 0; c < d.copies; c++) { /* untimed: q * scale, K^T per head */
        if (!(d.qs[c] = tl_attn_alloc((size_t)nq * 2)) || !(d.kt[c] = tl_attn_alloc((size_t)nk * 2))) goto nomem;
        for (int64_t i = 0; i < nq; i++)
          ((uint16_t *)d.qs[c])[i] = tl_f32_to_bf16(tl_bf16_to_f32(((uint16_t *)d.q[c])[i]) * d.scale);
        for (int64_t h = 0; h < d.H; h++)
          for (int64_t j = 0; j < d.Sk; j++)
            for (int64_t e = 0; e < D; e++)
              ((uint16_t *)d.kt[c])[(h * D + e) * d.Sk + j] = ((uint16_t *)d.k[c])[(h * d.Sk + j) * D + e];
      }
    } else {
      tl_attn_add(&g, &st[g.n], &d, TL_A_UNFUSED_OB, 0, "openblas sgemm + tl_softmax + sgemm");
    }
  }
  if (env->peers.torch) {
    tl_bimpl *im = tl_attn_add(&g, &st[g.n], &d, -1, 0, "torch sdpa");
    im->external = 1;
    im->torch = (tl_btorch_req){.op = causal ? "sdpa_causal" : "sdpa", .n = d.Sk, .m = d.Sq, .k = D, .a = (float)d.H,
                                .dtype = env->dtype, .threads = env->threads};
  }
  /* check every in-process implementation on set 0 before timing */
  tl_bench_progress(env, "attention %s: checking", g.size);
  for (int i = 0; i < g.n; i++) {
    tl_bimpl *ci = &g.impl[i];
    if (ci->status != TL_BROW_OK || ci->external) continue;
    for (int64_t e = 0; e < nq; e++) ((float *)d.o[0])[e] = NAN;
    if (tl_attn_call(ci->arg, 0) != 0) {
      ci->status = TL_BROW_FAILED;
      continue;
    }
    if (tl_attn_verify(&d, ci->note, sizeof ci->note) != 0) ci->status = TL_BROW_WRONG;
  }
  tl_bench_opts keep = env->opts;
  double est = decode ? 0 : g.flops / 50e9;
  if (!env->quick && 4 * est > env->opts.max_time_s) env->opts.max_time_s = 4 * est < 15 ? 4 * est : 15;
  const int first = env->nrows;
  rc = tl_bgroup_run(env, &g) != 0 ? -1 : env->status;
  env->opts = keep;
  if (rc >= 0 && decode && env->rows && env->nrows > first && env->rows[first].status == TL_BROW_OK) {
    /* the bound: K and V read once at the bandwidth of the level that holds them */
    const tl_brow *r = &env->rows[first];
    const int dram = env->cold || kv_bytes > (double)tl_attn_state.llc_bytes;
    const double bw = dram ? tl_attn_state.bw_dram : tl_attn_state.bw_llc;
    if (bw > 0 && r->median_s > 0)
      printf("  decode bound: K+V %s read once at %.1f GB/s (%s) = %.1f us; tilec %.1f us = %.2fx the bound (%.0f%%)\n",
             tl_bench_bytes_str(err, sizeof err, kv_bytes), bw / 1e9, dram ? "DRAM" : "last-level cache", kv_bytes / bw * 1e6,
             r->median_s * 1e6, r->median_s / (kv_bytes / bw), 100.0 * (kv_bytes / bw) / r->median_s);
  }
  goto out;
nomem:
  tl_tool_fail("bench", "attention %s: out of memory for %lld buffer set(s)", g.size, (long long)d.copies);
out:
  for (int i = 0; i < g.n; i++) {
    if (st[i].op1) tl_gdnnl_op_free(gp, st[i].op1);
    if (st[i].op2) tl_gdnnl_op_free(gp, st[i].op2);
  }
  tl_attn_free(&d);
  return rc;
}

static int tl_attn_run(tl_benv *env, const char *size) {
  int decode, causal;
  int64_t s, d;
  char err[200];
  if (tl_attn_parse(size, &decode, &s, &d, &causal, err, sizeof err) != 0) {
    tl_tool_fail("bench", "%s", err);
    return -1;
  }
  return tl_attn_group(env, decode, s, d, causal);
}

/* Peak of the dtype's fastest unit and the bandwidths of the last-level cache and DRAM, from the
 * machine probe (cached); not in --quick runs. */
static void tl_attn_machine(tl_benv *env, tl_dtype dt) {
  tl_attn_state.peak = tl_attn_state.bw_dram = tl_attn_state.bw_llc = 0;
  tl_attn_state.llc_bytes = env->llc_bytes;
  if (env->quick) {
    snprintf(tl_attn_state.peak_desc, sizeof tl_attn_state.peak_desc, "not looked up in --quick runs (the probe may take 30 s)");
    snprintf(tl_attn_state.bw_desc, sizeof tl_attn_state.bw_desc, "not looked up in --quick runs");
    return;
  }
  tl_machine mc;
  tl_status s = tl_machine_probe(env->ctx, 0, NULL, NULL, &mc);
  int u = s == TL_OK ? tl_machine_unit_for(&mc, dt) : -1;
  if (u < 0) {
    snprintf(tl_attn_state.peak_desc, sizeof tl_attn_state.peak_desc, "unknown (%s)",
             s == TL_OK ? "the probe has no unit for this dtype" : tl_ctx_error(env->ctx));
  } else {
    const tl_compute_unit *cu = &mc.units[u];
    int cores = mc.cores > 0 ? mc.cores : 1;
    double p = env->threads >= cores ? cu->peak : env->threads == 1 && cu->peak_1t > 0 ? cu->peak_1t : cu->peak * env->threads / cores;
    tl_attn_state.peak = p;
    snprintf(tl_attn_state.peak_desc, sizeof tl_attn_state.peak_desc, "%.1f GFLOP/s on %d thread%s: unit %.31s (%s) as measured by the probe",
             p / 1e9, env->threads, env->threads == 1 ? "" : "s", cu->name, tl_dtype_name(cu->dtype));
  }
  if (s == TL_OK && mc.nlevels >= 2) {
    const tl_mem_level *dr = &mc.levels[mc.nlevels - 1], *l3 = &mc.levels[mc.nlevels - 2];
    int cores = mc.cores > 0 ? mc.cores : 1;
    double f = env->threads >= cores ? 1.0 : (double)env->threads / cores;
    tl_attn_state.bw_dram = env->threads == 1 && dr->read_bw_1t > 0 ? dr->read_bw_1t : dr->read_bw * f;
    tl_attn_state.bw_llc = env->threads == 1 && l3->read_bw_1t > 0 ? l3->read_bw_1t : l3->read_bw * f;
    snprintf(tl_attn_state.bw_desc, sizeof tl_attn_state.bw_desc, "read bandwidth on %d thread%s: %s %.1f GB/s, %s %.1f GB/s (probe)",
             env->threads, env->threads == 1 ? "" : "s", l3->name, tl_attn_state.bw_llc / 1e9, dr->name, tl_attn_state.bw_dram / 1e9);
  } else {
    snprintf(tl_attn_state.bw_desc, sizeof tl_attn_state.bw_desc, "unknown (no probe)");
  }
}

static void tl_attn_header(tl_benv *env) {
  const int bf16 = !strcmp(env->dtype, "bf16");
  if (!tl_attn_state.loaded) {
    tl_gpeers_load(&tl_attn_state.gp, &env->peers, env->threads);
    tl_attn_state.loaded = 1;
  }
  tl_attn_machine(env, bf16 ? TL_BF16 : TL_F32);
  const tl_gpeers *gp = &tl_attn_state.gp;
  printf("attention: o = softmax(q k^T / sqrt(D)) v, q, k, v %s, o f32, B 1; prefill Sq = Sk = S with H 8 heads (8 * 2048 / S,\n"
         "  at least 2, past S = 2048), causal rows bottom-right aligned; decode Sq 1 against KV keys, H 8 (Hq = Hkv)\n",
         bf16 ? "bf16" : "f32");
  printf("check: o poisoned, then 8 query rows of heads 0 and H-1 against a float64 reference (relative error <= %s)\n"
         "  before any timing; a WRONG row is not timed\n", bf16 ? "2e-2" : "1e-4");
  printf("tilec: tl_attention on a context of %d thread%s (plan cached by shape on the first, untimed, call)\n", env->threads,
         env->threads == 1 ? "" : "s");
  printf("unfused: per head S = q k^T (%s), [causal: keys past the diagonal set to -inf, timed,]\n"
         "  P = tl_softmax(S)%s, o = P v (same peer); S <= %d;\n"
         "  untimed preparation: %s\n",
         bf16 ? "oneDNN matmul bf16 -> f32" : "OpenBLAS cblas_sgemm, alpha = scale", bf16 ? " -> bf16" : "", TL_A_UNFUSED_MAX_S,
         bf16 ? "K^T per head and q * scale rounded to bf16 (oneDNN's matmul here has no scale)" : "none");
  printf("peers: %s\n    %s\n  %s\n    %s\n  %s\n", env->peers.openblas_desc, gp->ob_desc, env->peers.dnnl_desc, gp->dnnl_desc,
         env->peers.torch_desc);
  if (env->peers.torch)
    printf("    torch sdpa: torch.nn.functional.scaled_dot_product_attention on its own inputs (o in the input dtype),\n"
           "    checked in the driver; its is_causal is top-left aligned, the same as bottom-right for Sq = Sk\n");
  tl_bpeers_print_env(&env->peers);
  printf("peak (prefill %% peak): %s\n", tl_attn_state.peak_desc);
  printf("bandwidth (decode bound: K and V read once): %s\n", tl_attn_state.bw_desc);
  printf("columns: median per call (min - max); prefill GFLOP/s = 4 H (visible pairs) D / median; decode GB/s = bytes of\n"
         "  K and V / median; vs best peer = best peer's median / this median\n");
}

const tl_bsuite tl_bsuite_attention = {
    .name = "attention",
    .summary = "flash attention prefill (causal or not) and decode vs the unfused matmul + softmax + matmul",
    .size_syntax = "SxD, SxDc (causal) or dKVxD (decode)",
    .sizes = "512x64,512x128,2048x64,2048x128,2048x128c,4096x128,4096x128c,8192x128c,16384x128c,"
             "d1024x128,d4096x128,d16384x128,d65536x128",
    .quick_sizes = "128x64,130x64c,d1000x64",
    .size_check = tl_attn_size_check,
    .run = tl_attn_run,
    .dtypes = "bf16,f32",
    .header = tl_attn_header,
};
