/* bench_gemm.c — the `gemm` suite of `tilec bench`: C = A B over square, LLM-shaped and odd sizes,
 * in f32, bf16 x bf16 -> f32 and u8 x s8 -> i32 (--dtype), tilec next to every peer present.
 *
 * tilec's rows: tl_matmul on row-major A [M, K], B [K, N], C [M, N] (plain), and tl_matmul on a B
 * packed once by tl_matmul_pack_b (pre-packed, as weights are). The peers (bench_gemm_peers.c):
 * OpenBLAS cblas_sgemm, BLIS bli_sgemm, oneDNN matmul with plain and pre-packed weights, libxsmm
 * when a shared library exists, PyTorch (torch.matmul in its own process, f32 and bf16) when
 * installed. Rates are GFLOP/s = 2MNK / median, and the share of the peak the
 * machine probe measured for the dtype's fastest unit (tl_machine_probe, tl_machine_unit_for;
 * not in --quick runs, whose probe could take 30 s).
 *
 * Invariants: every implementation is checked on buffer set 0 before any timing: C poisoned
 * first (NaN, or 0x55555555 for i32), then up to 8 sampled rows (the first, the last, evenly
 * spaced ones) compared with a float64 reference: ‖c - ref‖ / ‖ref‖ <= 1e-4 (f32), 2e-2 (bf16),
 * exact for int8 (i32 sums of u8 x s8 with K < 2^16 cannot overflow). A mismatch is a WRONG row,
 * never timed. Inputs are exactly representable in their dtype (f32: 16-bit patterns; bf16 and
 * int8: integers / 128 and integers), so the reference is exact. Every set of a cold rotation
 * has its own A, B, C and packed copies of B; packing is never timed.
 */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_gemm_impl.h"
#include "tools_impl.h"

enum { TL_G_TILEC, TL_G_TILEC_PACKED, TL_G_OPENBLAS, TL_G_OPENBLAS_SB, TL_G_BLIS, TL_G_DNNL, TL_G_DNNL_PACKED, TL_G_XSMM };

/* What the suite keeps for the whole run: the gemm peers and the peak (set by the header). */
static struct {
  tl_gpeers gp;
  int loaded;
  double peak;    /* op/s for the dtype and the thread count; 0: unknown */
  char peak_desc[320];
} tl_gemm_state;

/* One group's data: the buffer sets. */
typedef struct tl_gdata {
  tl_benv *env;
  int dt;
  int64_t m, n, k, copies;
  void **a, **b, **c, **dpack; /* [copies]; dpack: oneDNN's packed B (NULL without that row) */
  tl_tensor *tpack;            /* [copies]: tilec's packed B (data NULL without that row) */
} tl_gdata;

/* One implementation's state. */
typedef struct tl_gimpl {
  tl_gdata *d;
  int kind;
  tl_gdnnl_op *op;
  char *note;
} tl_gimpl;

/* ---- dtypes and sizes ---- */

static int tl_gemm_dt(const char *s) { return !strcmp(s, "bf16") ? TL_GEMM_BF16 : !strcmp(s, "int8") ? TL_GEMM_INT8 : TL_GEMM_F32; }
static size_t tl_gemm_esz(int dt) { return dt == TL_GEMM_F32 ? 4 : dt == TL_GEMM_BF16 ? 2 : 1; }
static const char *tl_gemm_dt_long(int dt) {
  return dt == TL_GEMM_F32 ? "f32" : dt == TL_GEMM_BF16 ? "bf16 x bf16 -> f32" : "u8 x s8 -> i32";
}

/* Parses "N" (square) or "MxNxK" (1..65536 each, no operand over 2^31 elements); 0 or -1. */
static int tl_gemm_parse(const char *tok, int64_t *m, int64_t *n, int64_t *k, char *err, size_t errn) {
  int64_t v[3];
  int nv = 0;
  const char *s = tok;
  while (nv < 3) {
    if (!isdigit((unsigned char)*s)) goto bad;
    char *end;
    long long x = strtoll(s, &end, 10);
    if (x < 1 || x > 65536) goto bad;
    v[nv++] = x;
    s = end;
    if (*s == 0) break;
    if (*s != 'x' && *s != 'X') goto bad;
    s++;
  }
  if (*s || (nv != 1 && nv != 3)) goto bad;
  if (nv == 1) v[1] = v[2] = v[0];
  *m = v[0], *n = v[1], *k = v[2];
  if (*m * *k > INT_MAX || *k * *n > INT_MAX || *m * *n > INT_MAX) {
    snprintf(err, errn, "size '%s': an operand over 2^31 elements", tok);
    return -1;
  }
  return 0;
bad:
  snprintf(err, errn, "size '%s': expected N (square) or MxNxK, each 1..65536, e.g. 1024 or 16x4096x4096", tok);
  return -1;
}

/* The suite's size_check. */
static int tl_gemm_size_check(const char *tok, char *err, size_t errn) {
  int64_t m, n, k;
  return tl_gemm_parse(tok, &m, &n, &k, err, errn);
}

/* ---- inputs and the reference ---- */

/* The integer pattern in [-128, 127] of element i of operand `which` (0: A, 1: B) of set s. */
static int tl_gemm_ival(int64_t i, int64_t s, int which) {
  uint32_t h = (uint32_t)((uint64_t)(i + 1) * 2654435761u) ^ (uint32_t)((s * 2 + which + 1) * 40503u);
  h ^= h >> 13;
  return (int)((h >> 8) & 0xff) - 128;
}

/* Fills operand `which` (n elements) of set s in the suite's dtype. */
static void tl_gemm_fill(void *p, int dt, int64_t n, int64_t s, int which) {
  for (int64_t i = 0; i < n; i++) {
    if (dt == TL_GEMM_F32) {
      ((float *)p)[i] = tl_bench_pattern(i, s * 2 + which);
    } else if (dt == TL_GEMM_BF16) {
      float f = (float)tl_gemm_ival(i, s, which) / 128.0f; /* 8 significant bits: exact in bf16 */
      uint32_t u;
      memcpy(&u, &f, 4);
      ((uint16_t *)p)[i] = (uint16_t)(u >> 16);
    } else if (which == 0) {
      ((uint8_t *)p)[i] = (uint8_t)(tl_gemm_ival(i, s, 0) + 128);
    } else {
      ((int8_t *)p)[i] = (int8_t)tl_gemm_ival(i, s, 1);
    }
  }
}

/* Element i of an operand as a double. */
static double tl_gemm_get(const void *p, int dt, int64_t i, int which) {
  if (dt == TL_GEMM_F32) return ((const float *)p)[i];
  if (dt == TL_GEMM_BF16) {
    uint32_t u = (uint32_t)((const uint16_t *)p)[i] << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  return which == 0 ? ((const uint8_t *)p)[i] : ((const int8_t *)p)[i];
}

/* The sampled rows: up to 8, the first and the last among them. */
static int tl_gemm_rows(int64_t m, int64_t *rows) {
  int n = m < 8 ? (int)m : 8;
  for (int i = 0; i < n; i++) rows[i] = n == 1 ? 0 : (int64_t)((double)(m - 1) * i / (n - 1));
  return n;
}

/* ref[r][j] (double, nr x n) = the sampled rows of A B for set 0. */
static void tl_gemm_reference(const tl_gdata *d, const int64_t *rows, int nr, double *ref) {
  double *brow = malloc((size_t)d->n * sizeof *brow);
  memset(ref, 0, (size_t)nr * (size_t)d->n * sizeof *ref);
  for (int64_t kk = 0; kk < d->k; kk++) {
    if (brow)
      for (int64_t j = 0; j < d->n; j++) brow[j] = tl_gemm_get(d->b[0], d->dt, kk * d->n + j, 1);
    for (int r = 0; r < nr; r++) {
      double av = tl_gemm_get(d->a[0], d->dt, rows[r] * d->k + kk, 0);
      double *out = ref + (size_t)r * (size_t)d->n;
      if (brow)
        for (int64_t j = 0; j < d->n; j++) out[j] += av * brow[j];
      else
        for (int64_t j = 0; j < d->n; j++) out[j] += av * tl_gemm_get(d->b[0], d->dt, kk * d->n + j, 1);
    }
  }
  free(brow);
}

/* Poisons C of set 0. */
static void tl_gemm_poison(const tl_gdata *d) {
  int64_t n = d->m * d->n;
  if (d->dt == TL_GEMM_INT8)
    for (int64_t i = 0; i < n; i++) ((int32_t *)d->c[0])[i] = 0x55555555;
  else
    for (int64_t i = 0; i < n; i++) ((float *)d->c[0])[i] = NAN;
}

/* Compares the sampled rows of C (set 0) with ref: 0 right, 1 wrong (note says how). */
static int tl_gemm_verify(const tl_gdata *d, const int64_t *rows, int nr, const double *ref, char *note, size_t n) {
  double num = 0, den = 0;
  for (int r = 0; r < nr; r++) {
    for (int64_t j = 0; j < d->n; j++) {
      double want = ref[(size_t)r * (size_t)d->n + j];
      int64_t at = rows[r] * d->n + j;
      double got = d->dt == TL_GEMM_INT8 ? (double)((const int32_t *)d->c[0])[at] : (double)((const float *)d->c[0])[at];
      if (d->dt == TL_GEMM_INT8 ? got != want : !isfinite(got)) {
        snprintf(note, n, "C[%lld][%lld] is %.9g, expected %.9g (not timed)", (long long)rows[r], (long long)j, got, want);
        return 1;
      }
      num += (got - want) * (got - want);
      den += want * want;
    }
  }
  double rel = den > 0 ? sqrt(num / den) : sqrt(num), tol = d->dt == TL_GEMM_F32 ? 1e-4 : 2e-2;
  if (rel > tol) {
    snprintf(note, n, "relative error %.3g on %d sampled rows, tolerance %.0e (not timed)", rel, nr, tol);
    return 1;
  }
  return 0;
}

/* ---- the calls ---- */

/* One call of implementation s on buffer set `set`: C = A B. */
static int tl_gemm_call(void *arg, int64_t set) {
  tl_gimpl *s = arg;
  tl_gdata *d = s->d;
  tl_gpeers *gp = &tl_gemm_state.gp;
  void *a = d->a[set], *b = d->b[set], *c = d->c[set];
  int m = (int)d->m, n = (int)d->n, k = (int)d->k;
  switch (s->kind) {
  case TL_G_TILEC:
  case TL_G_TILEC_PACKED: {
    static const tl_dtype ta[] = {TL_F32, TL_BF16, TL_U8}, tb[] = {TL_F32, TL_BF16, TL_I8};
    int64_t sa[2] = {d->m, d->k}, sb[2] = {d->k, d->n}, sc[2] = {d->m, d->n};
    tl_tensor ta_ = tl_tensor_make(a, ta[d->dt], 2, sa), tb_ = tl_tensor_make(b, tb[d->dt], 2, sb);
    tl_tensor tc_ = tl_tensor_make(c, d->dt == TL_GEMM_INT8 ? TL_I32 : TL_F32, 2, sc);
    tl_status st = tl_matmul(d->env->ctx, &ta_, s->kind == TL_G_TILEC ? &tb_ : &d->tpack[set], &tc_, NULL);
    if (st != TL_OK) {
      snprintf(s->note, sizeof ((tl_bimpl *)0)->note, "tl_matmul: %s: %.120s", tl_status_name(st), tl_ctx_error(d->env->ctx));
      return 1;
    }
    return 0;
  }
  case TL_G_OPENBLAS:
    gp->ob_sgemm(101, 111, 111, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
    return 0;
  case TL_G_OPENBLAS_SB:
    gp->ob_sbgemm(101, 111, 111, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
    return 0;
  case TL_G_BLIS: {
    float one = 1.0f, zero = 0.0f;
    gp->bli_sgemm(0, 0, d->m, d->n, d->k, &one, a, d->k, 1, b, d->n, 1, &zero, c, d->n, 1);
    return 0;
  }
  case TL_G_XSMM:
    gp->xsmm_sgemm(m, n, k, a, b, c);
    return 0;
  case TL_G_DNNL:
  case TL_G_DNNL_PACKED:
    if (tl_gdnnl_run(gp, s->op, a, s->kind == TL_G_DNNL ? b : d->dpack[set], c) != 0) {
      snprintf(s->note, sizeof ((tl_bimpl *)0)->note, "dnnl_primitive_execute failed");
      return 1;
    }
    return 0;
  default:
    return 1;
  }
}

/* Adds an implementation row to g (status OK) with its state in st. */
static tl_bimpl *tl_gemm_add(tl_bgroup *g, tl_gimpl *st, tl_gdata *d, int kind, int tilec, const char *name) {
  tl_bimpl *im = &g->impl[g->n];
  memset(im, 0, sizeof *im);
  snprintf(im->name, sizeof im->name, "%s", name);
  im->tilec = tilec;
  im->klass = kind == TL_G_TILEC_PACKED || kind == TL_G_DNNL_PACKED; /* compared with pre-packed peers */
  im->fn = tl_gemm_call;
  im->arg = st;
  im->status = TL_BROW_OK;
  *st = (tl_gimpl){.d = d, .kind = kind, .note = im->note};
  g->n++;
  return im;
}

/* Allocates n bytes starting off bytes past a 64-byte line (--offset), pages touched; NULL on
 * failure. Free with tl_gemm_free(p, off). */
static void *tl_gemm_alloc(size_t n, int off) {
  size_t bytes = (n + (size_t)off + 63) & ~(size_t)63;
  char *p = aligned_alloc(64, bytes ? bytes : 64);
  if (p) memset(p, 0, bytes);
  return p ? p + off : NULL;
}
static void tl_gemm_free(void *p, int off) {
  if (p) free((char *)p - off);
}

/* Frees every buffer set of d. */
static void tl_gemm_free_sets(tl_gdata *d) {
  for (int64_t c = 0; c < d->copies; c++) {
    const int off = d->env->offset;
    if (d->a) tl_gemm_free(d->a[c], off);
    if (d->b) tl_gemm_free(d->b[c], off);
    if (d->c) tl_gemm_free(d->c[c], off);
    if (d->dpack) tl_gemm_free(d->dpack[c], 0);
    if (d->tpack && d->tpack[c].data) tl_free(d->tpack[c].data);
  }
  free(d->a), free(d->b), free(d->c), free(d->dpack), free(d->tpack);
}

/* Runs C = A B at one size: buffers, packing, checks, timing, cleanup. Returns 0, 1 (a tilec row
 * was wrong or failed) or -1 (could not run; message printed). */
static int tl_gemm_group(tl_benv *env, const char *size, int64_t m, int64_t n, int64_t k) {
  const char *cmd = "bench";
  int rc = -1, dt = tl_gemm_dt(env->dtype);
  size_t esz = tl_gemm_esz(dt);
  tl_gpeers *gp = &tl_gemm_state.gp;
  tl_gdata d = {.env = env, .dt = dt, .m = m, .n = n, .k = k};
  tl_bgroup g;
  memset(&g, 0, sizeof g);
  tl_gimpl st[TL_BGROUP_MAX];
  memset(st, 0, sizeof st);
  double *ref = NULL;
  char err[200];
  g.op = "gemm";
  g.title = "C = A B";
  g.dtype = tl_gemm_dt_long(dt);
  snprintf(g.size, sizeof g.size, "%lldx%lldx%lld", (long long)m, (long long)n, (long long)k);
  (void)size;
  g.size_bytes = (int64_t)((double)(m * k + k * n) * (double)esz + (double)(m * n) * 4);
  g.flops = 2.0 * (double)m * (double)n * (double)k;
  g.peak = tl_gemm_state.peak;
  g.moved = (double)g.size_bytes;
  g.set_bytes = g.size_bytes;
  g.copies = d.copies = tl_bench_copies(env, g.set_bytes);
  tl_bench_progress(env, "gemm %s: preparing %lld buffer set(s)", g.size, (long long)d.copies);
  if (!(d.a = calloc((size_t)d.copies, sizeof *d.a)) || !(d.b = calloc((size_t)d.copies, sizeof *d.b)) ||
      !(d.c = calloc((size_t)d.copies, sizeof *d.c)) || !(d.dpack = calloc((size_t)d.copies, sizeof *d.dpack)) ||
      !(d.tpack = calloc((size_t)d.copies, sizeof *d.tpack)))
    goto nomem;
  for (int64_t c = 0; c < d.copies; c++) {
    if (!(d.a[c] = tl_gemm_alloc((size_t)(m * k) * esz, env->offset)) ||
        !(d.b[c] = tl_gemm_alloc((size_t)(k * n) * esz, env->offset)) || !(d.c[c] = tl_gemm_alloc((size_t)(m * n) * 4, env->offset)))
      goto nomem;
    tl_gemm_fill(d.a[c], dt, m * k, c, 0);
    tl_gemm_fill(d.b[c], dt, k * n, c, 1);
  }

  /* tilec: plain, then B packed once per set (untimed) */
  tl_gemm_add(&g, &st[g.n], &d, TL_G_TILEC, 1, "tilec tl_matmul");
  tl_bimpl *im = tl_gemm_add(&g, &st[g.n], &d, TL_G_TILEC_PACKED, 1, "tilec, B pre-packed");
  {
    static const tl_dtype ta[] = {TL_F32, TL_BF16, TL_U8}, tb[] = {TL_F32, TL_BF16, TL_I8};
    int64_t sb[2] = {k, n};
    for (int64_t c = 0; c < d.copies; c++) {
      tl_tensor bt = tl_tensor_make(d.b[c], tb[dt], 2, sb);
      tl_status s = tl_matmul_pack_b(env->ctx, &bt, ta[dt], &d.tpack[c]);
      if (s != TL_OK) {
        d.tpack[c].data = NULL;
        im->status = TL_BROW_FAILED;
        snprintf(im->note, sizeof im->note, "tl_matmul_pack_b: %s: %.120s", tl_status_name(s), tl_ctx_error(env->ctx));
        break;
      }
    }
  }
  /* the peers */
  if (dt == TL_GEMM_F32 && gp->ob_sgemm) tl_gemm_add(&g, &st[g.n], &d, TL_G_OPENBLAS, 0, "openblas cblas_sgemm");
  if (dt == TL_GEMM_BF16 && gp->ob_sbgemm) tl_gemm_add(&g, &st[g.n], &d, TL_G_OPENBLAS_SB, 0, "openblas cblas_sbgemm");
  if (dt == TL_GEMM_F32 && gp->bli_sgemm) tl_gemm_add(&g, &st[g.n], &d, TL_G_BLIS, 0, "blis bli_sgemm");
  if (dt == TL_GEMM_F32 && gp->xsmm_sgemm) tl_gemm_add(&g, &st[g.n], &d, TL_G_XSMM, 0, "libxsmm xgemm_omp");
  for (int packed = 0; gp->dnnl && packed < 2; packed++) {
    im = tl_gemm_add(&g, &st[g.n], &d, packed ? TL_G_DNNL_PACKED : TL_G_DNNL, 0,
                     packed ? "onednn, B pre-packed" : "onednn matmul");
    tl_gimpl *ds = &st[g.n - 1];
    size_t wbytes = 0;
    ds->op = tl_gdnnl_matmul(gp, dt, m, n, k, packed, &wbytes, err, sizeof err);
    if (!ds->op) {
      im->status = TL_BROW_FAILED;
      snprintf(im->note, sizeof im->note, "%.150s", err);
      continue;
    }
    for (int64_t c = 0; packed && c < d.copies; c++) {
      if (!(d.dpack[c] = tl_gemm_alloc(wbytes, 0))) goto nomem;
      if (tl_gdnnl_pack(gp, ds->op, d.b[c], d.dpack[c]) != 0) {
        im->status = TL_BROW_FAILED;
        snprintf(im->note, sizeof im->note, "the reorder of B into the primitive's layout failed");
        break;
      }
    }
  }

  if (env->peers.torch && dt != TL_GEMM_INT8) { /* timed in its own process, which checks itself */
    im = tl_gemm_add(&g, &st[g.n], &d, -1, 0, "torch matmul");
    im->external = 1;
    im->torch = (tl_btorch_req){.op = "gemm", .n = n, .m = m, .k = k, .dtype = env->dtype, .threads = env->threads};
  }

  /* check every in-process implementation on set 0 before timing anything */
  tl_bench_progress(env, "gemm %s: computing the float64 reference", g.size);
  int64_t rows[8];
  int nr = tl_gemm_rows(m, rows);
  if (!(ref = malloc((size_t)nr * (size_t)n * sizeof *ref))) goto nomem;
  tl_gemm_reference(&d, rows, nr, ref);
  tl_bench_progress(env, "gemm %s: checking", g.size);
  for (int i = 0; i < g.n; i++) {
    tl_bimpl *ci = &g.impl[i];
    if (ci->status != TL_BROW_OK || ci->external) continue;
    tl_gemm_poison(&d);
    if (tl_gemm_call(ci->arg, 0) != 0) {
      ci->status = TL_BROW_FAILED;
      continue;
    }
    if (tl_gemm_verify(&d, rows, nr, ref, ci->note, sizeof ci->note) != 0) ci->status = TL_BROW_WRONG;
  }
  /* long products: room for about 4 batches each (the shared 2 s cap would allow one) */
  tl_bench_opts keep = env->opts;
  double est = g.flops / 50e9; /* seconds per call at 50 GFLOP/s, below every row here */
  if (!env->quick && 4 * est > env->opts.max_time_s) env->opts.max_time_s = 4 * est < 15 ? 4 * est : 15;
  rc = tl_bgroup_run(env, &g) != 0 ? -1 : env->status;
  env->opts = keep;
  goto out;
nomem:
  tl_tool_fail(cmd, "gemm %s: out of memory for %lld buffer set(s) of %s", g.size, (long long)d.copies,
               tl_bench_bytes_str(err, sizeof err, (double)g.set_bytes));
out:
  for (int i = 0; i < g.n; i++)
    if (st[i].op) tl_gdnnl_op_free(gp, st[i].op);
  tl_gemm_free_sets(&d);
  free(ref);
  return rc;
}

/* The suite at one size. */
static int tl_gemm_run(tl_benv *env, const char *size) {
  int64_t m, n, k;
  char err[160];
  if (tl_gemm_parse(size, &m, &n, &k, err, sizeof err) != 0) {
    tl_tool_fail("bench", "%s", err);
    return -1;
  }
  return tl_gemm_group(env, size, m, n, k);
}

/* The peak op/s of the dtype's fastest unit for env->threads threads, from the machine probe
 * (cached after its first run); not in --quick runs. Fills the state's peak and its description. */
static void tl_gemm_peak(tl_benv *env, int dt) {
  tl_gemm_state.peak = 0;
  if (env->quick) {
    snprintf(tl_gemm_state.peak_desc, sizeof tl_gemm_state.peak_desc, "not looked up in --quick runs (the probe may take 30 s)");
    return;
  }
  tl_machine mc;
  tl_status s = tl_machine_probe(env->ctx, 0, NULL, NULL, &mc);
  tl_dtype want = dt == TL_GEMM_F32 ? TL_F32 : dt == TL_GEMM_BF16 ? TL_BF16 : TL_I8;
  int u = s == TL_OK ? tl_machine_unit_for(&mc, want) : -1;
  if (u < 0) {
    snprintf(tl_gemm_state.peak_desc, sizeof tl_gemm_state.peak_desc, "unknown (%s)",
             s == TL_OK ? "the probe has no unit for this dtype" : tl_ctx_error(env->ctx));
    return;
  }
  const tl_compute_unit *cu = &mc.units[u];
  int cores = mc.cores > 0 ? mc.cores : 1;
  double p = env->threads >= cores ? cu->peak : env->threads == 1 && cu->peak_1t > 0 ? cu->peak_1t
                                                                                      : cu->peak * env->threads / cores;
  tl_gemm_state.peak = p;
  snprintf(tl_gemm_state.peak_desc, sizeof tl_gemm_state.peak_desc,
           "%.1f GFLOP/s on %d thread%s: unit %.31s (%s) as tl_machine_probe measured it (%.160s)", p / 1e9, env->threads,
           env->threads == 1 ? "" : "s", cu->name, tl_dtype_name(cu->dtype), cu->source);
}

/* The suite's header lines (after the shared timing lines): tilec's settings, the peers, the
 * peak, the columns. Loads the gemm peers (once). */
static void tl_gemm_header(tl_benv *env) {
  int dt = tl_gemm_dt(env->dtype);
  if (!tl_gemm_state.loaded) {
    tl_gpeers_load(&tl_gemm_state.gp, &env->peers, env->threads);
    tl_gemm_state.loaded = 1;
  }
  tl_gemm_peak(env, dt);
  const tl_gpeers *gp = &tl_gemm_state.gp;
  printf("gemm: C = A B, %s, row-major A [M, K], B [K, N], C [M, N], alpha 1, beta 0; sizes MxNxK\n", tl_gemm_dt_long(dt));
  printf("check: C poisoned, then up to 8 sampled rows against a float64 reference (relative error <= %s) before any\n"
         "  timing; a WRONG row is not timed\n",
         dt == TL_GEMM_F32 ? "1e-4" : dt == TL_GEMM_BF16 ? "2e-2" : "0: exact");
  printf("tilec: tl_matmul(ctx, a, b, c, NULL) on a context of %d thread%s, workers spin %d us then sleep; its plan\n"
         "  cached by shape on the first (untimed) call; pre-packed: tl_matmul_pack_b once per buffer set, untimed\n",
         env->threads, env->threads == 1 ? "" : "s", env->info.spin_us);
  printf("peers (found now by dlopen/subprocess; absent ones have no row):\n");
  printf("  %s\n    %s\n  %s\n    %s\n  %s\n    %s\n  %s\n", env->peers.openblas_desc, gp->ob_desc, env->peers.blis_desc,
         gp->blis_desc, env->peers.dnnl_desc, gp->dnnl_desc, gp->xsmm_desc);
  printf("  %s\n", env->peers.torch_desc);
  if (env->peers.torch)
    printf("    torch gemm: torch.matmul(a, b, out=c) on its own inputs, checked in the driver the same way; %s\n",
           dt == TL_GEMM_F32 ? "f32" : dt == TL_GEMM_BF16 ? "bf16: torch writes C in bf16 (rounded), not f32" : "no row: torch has no u8 x s8 -> i32 CPU matmul");
  tl_bpeers_print_env(&env->peers);
  printf("peak: %s\n", tl_gemm_state.peak_desc);
  if (!env->quick)
    printf("long products: the time cap per implementation is raised to 4 x 2MNK / 50 GFLOP/s (at most 15 s), so\n"
           "  each gets a few batches\n");
  printf("columns: median per call (min - max of batches, per call); GFLOP/s = 2MNK / median; %% peak = GFLOP/s / the peak\n"
         "  above; vs best peer = best peer's median / this median (tilec above 1: faster than every peer), plain\n"
         "  rows against the best plain peer, pre-packed rows against the best pre-packed one\n");
}

const tl_bsuite tl_bsuite_gemm = {
    .name = "gemm",
    .summary = "C = A B, f32, bf16 -> f32, u8 x s8 -> i32 (OpenBLAS, BLIS, oneDNN matmul, libxsmm)",
    .size_syntax = "N or MxNxK",
    .sizes = "256,512,1024,2048,4096,"
             "1x4096x4096,1x11008x4096,1x4096x11008,16x4096x4096,16x11008x4096,16x4096x11008,"
             "128x4096x4096,128x11008x4096,128x4096x11008,2048x4096x4096,2048x11008x4096,2048x4096x11008,"
             "1000,1023,4097",
    .quick_sizes = "256,1023,16x4096x4096",
    .size_check = tl_gemm_size_check,
    .run = tl_gemm_run,
    .dtypes = "f32,bf16,int8",
    .header = tl_gemm_header,
};
