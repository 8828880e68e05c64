/* test_norm.c — tl_layernorm and tl_rmsnorm against a float64 reference (two-pass mean and
 * variance), under a context capped at each ISA level the CPU has: random shapes with 1, primes
 * and sizes that are not multiples of 16 or of the block, padded and transposed views, f32/bf16
 * x, y, gamma and beta (gamma strided too), with and without gamma / beta, in place, large means
 * (1e4 + N(0,1) and 1e6 + U(-1,1): no cancellation), rows whose head sits far from the rest (the
 * second sweep of the moments), NaN and inf rows, the two-level path forced by a small staging
 * budget (chunk moments merged with Chan's formula), streaming stores and their automatic choice,
 * poisoned outputs, zero sizes and every refusal with y untouched. Tolerances
 * (||y - ref|| / ||ref||): f32 out 1e-5, bf16 out 5e-3 (measured maxima in docs/norms.md). */
#include "kernels/norm_impl.h"
#include "norm_test_util.h"
#include "test_isa.h"

static tl_ctx *g_ctx, *g_small;
static const char *g_isa;
static double g_max_err[2][2]; /* [rms][bf16 out] */

/* Reference over the last axis, in y's element order. gamma / beta may be NULL. */
static double *ref_norm(const tl_tensor *x, const tl_tensor *g, const tl_tensor *b, double eps, int rms) {
  const int nd = x->ndim, ax = nd - 1;
  const int64_t n = nt_numel(x), C = x->shape[ax];
  double *ref = malloc((size_t)(n ? n : 1) * sizeof *ref), *line = malloc((size_t)(C ? C : 1) * sizeof *line);
  int64_t idx[TL_MAX_DIMS] = {0}, lin = 0;
  if (n == 0) goto done;
  do {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < C; c++) idx[ax] = c, line[c] = nt_get(x, idx), mean += line[c];
    mean /= (double)C;
    for (int64_t c = 0; c < C; c++) {
      double d = rms ? line[c] : line[c] - mean;
      var += d * d;
    }
    var /= (double)C;
    double r = 1.0 / sqrt(var + eps);
    for (int64_t c = 0; c < C; c++) {
      int64_t gi[1] = {c};
      double v = (rms ? line[c] : line[c] - mean) * r;
      if (g) v *= nt_get(g, gi);
      if (b && !rms) v += nt_get(b, gi);
      ref[lin++] = v;
    }
    idx[ax] = 0;
  } while (nt_next(x, idx, ax));
done:
  free(line);
  return ref;
}

static double run_case(tl_ctx *ctx, const char *what, tl_tensor *x, const tl_tensor *g, const tl_tensor *b, float eps,
                       tl_tensor *y, int rms, double tol) {
  double *ref = ref_norm(x, g, b, eps, rms);
  tl_status s = rms ? tl_rmsnorm(ctx, x, g, eps, y) : tl_layernorm(ctx, x, g, b, eps, y);
  CHECK(s == TL_OK, "[%s] %s: %s: %s", g_isa, what, tl_status_name(s), tl_ctx_error(ctx));
  int nan_bad = 0;
  double err = nt_err(y, ref, &nan_bad);
  if (tol <= 0) tol = nt_tol(y->dtype);
  CHECK(err <= tol && nan_bad == 0, "[%s] %s%s %s->%s g %d b %d: err %.3g (tol %.1g), %d NaN/inf mismatches", g_isa, what,
        rms ? " (rms)" : "", tl_dtype_name(x->dtype), tl_dtype_name(y->dtype), g != NULL, b != NULL, err, tol, nan_bad);
  double *mx = &g_max_err[rms][y->dtype == TL_BF16];
  if (err > *mx) *mx = err;
  free(ref);
  return err;
}

static void test_shapes(void) {
  static const int64_t dims[] = {1, 2, 3, 13, 16, 17, 63, 64, 97, 256, 769, 2048};
  for (int it = 0; it < 48; it++) {
    int nd = 1 + (int)test_rng_int(&nt_rng, 0, 2);
    int64_t sh[3], tot = 1;
    for (int d = 0; d < nd; d++) {
      sh[d] = dims[test_rng_int(&nt_rng, 0, (int64_t)(sizeof dims / sizeof dims[0]) - 1)];
      if (tot * sh[d] > 60000) sh[d] = 1 + test_rng_int(&nt_rng, 0, 6);
      tot *= sh[d];
    }
    int lay = (int)test_rng_int(&nt_rng, 0, 2), rms = it % 2;
    tl_dtype xd = it % 3 == 2 ? TL_BF16 : TL_F32, yd = it % 4 == 3 ? TL_BF16 : TL_F32;
    int64_t C = sh[nd - 1];
    nt_t x = nt_make(xd, nd, sh, lay, -3, 5), y = nt_make(yd, nd, sh, (lay + 1) % 3, 0, 1);
    nt_t g = nt_make(it % 5 == 4 ? TL_BF16 : TL_F32, 1, &C, NT_CONTIG, 0.5, 1.5);
    nt_t b = nt_make(TL_F32, 1, &C, NT_CONTIG, -1, 1);
    nt_poison(&y);
    int use = it % 4; /* 0: none, 1: gamma, 2: beta, 3: both */
    run_case(g_ctx, "shapes", &x.t, use & 1 ? &g.t : NULL, use & 2 ? &b.t : NULL, 1e-5f, &y.t, rms, 0);
    nt_free(&x), nt_free(&y), nt_free(&g), nt_free(&b);
  }
}

static void test_gamma_beta(void) {
  int64_t sh[2] = {19, 333}, C = 333, C2 = 666;
  nt_t x = nt_make(TL_F32, 2, sh, NT_CONTIG, -2, 2), y = nt_make(TL_BF16, 2, sh, NT_PADDED, 0, 1);
  nt_t gb = nt_make(TL_BF16, 1, &C, NT_CONTIG, -2, 2), bb = nt_make(TL_BF16, 1, &C, NT_CONTIG, -2, 2);
  nt_t gs = nt_make(TL_F32, 1, &C2, NT_CONTIG, -2, 2); /* a strided view: every other element */
  tl_tensor gsv = gs.t;
  gsv.shape[0] = C, gsv.stride[0] = 2;
  for (int rms = 0; rms < 2; rms++) {
    nt_poison(&y);
    run_case(g_ctx, "bf16 gamma/beta", &x.t, &gb.t, &bb.t, 1e-3f, &y.t, rms, 0);
    nt_poison(&y);
    run_case(g_ctx, "strided gamma", &x.t, &gsv, &bb.t, 0.0f, &y.t, rms, 0);
    nt_poison(&y);
    run_case(g_small, "strided gamma two-level", &x.t, &gsv, &bb.t, 0.0f, &y.t, rms, 0);
  }
  nt_free(&x), nt_free(&y), nt_free(&gb), nt_free(&bb), nt_free(&gs);
}

static void test_inplace(void) {
  int64_t sh[2] = {23, 700}, C = 700;
  for (int rms = 0; rms < 2; rms++)
    for (int bf = 0; bf < 2; bf++)
      for (int c = 0; c < 2; c++) {
        tl_ctx *ctx = c ? g_small : g_ctx;
        nt_t x = nt_make(bf ? TL_BF16 : TL_F32, 2, sh, NT_PADDED, -4, 6), g = nt_make(TL_F32, 1, &C, NT_CONTIG, 0, 2);
        double *ref = ref_norm(&x.t, &g.t, NULL, 1e-5, rms);
        tl_status s = rms ? tl_rmsnorm(ctx, &x.t, &g.t, 1e-5f, &x.t) : tl_layernorm(ctx, &x.t, &g.t, NULL, 1e-5f, &x.t);
        CHECK(s == TL_OK, "[%s] in place: %s", g_isa, tl_ctx_error(ctx));
        int nan_bad;
        double err = nt_err(&x.t, ref, &nan_bad);
        CHECK(err <= nt_tol(x.t.dtype) && !nan_bad, "[%s] in place rms %d bf16 %d ctx %d: err %.3g", g_isa, rms, bf, c, err);
        free(ref), nt_free(&x), nt_free(&g);
      }
}

/* Large means: E[x^2] - E[x]^2 in f32 would lose every digit; the shifted sums (one pass and
 * the two-level path's Chan merge) must match the double reference tightly. */
static void test_large_means(void) {
  static const int64_t shapes[][2] = {{8, 1024}, {5, 3001}, {3, 16}};
  const double offs[2] = {1e4, 1e6};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (int o = 0; o < 2; o++)
      for (int c = 0; c < 2; c++) {
        nt_t x = nt_make(TL_F32, 2, shapes[i], NT_CONTIG, 0, 1), y = nt_make(TL_F32, 2, shapes[i], NT_CONTIG, 0, 1);
        for (int64_t k = 0; k < x.nmem; k++) { /* offset + N(0, 1) (Box-Muller) */
          double u1 = test_rng_uniform(&nt_rng, 1e-12, 1), u2 = test_rng_uniform(&nt_rng, 0, 1);
          ((float *)x.mem)[k] = (float)(offs[o] + sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2));
        }
        nt_poison(&y);
        /* at 1e6 an f32 input keeps 1/16 of a unit: the output is still exact to f32 rounding */
        run_case(c ? g_small : g_ctx, o ? "mean 1e6" : "mean 1e4", &x.t, NULL, NULL, 1e-6f, &y.t, 0, 1e-5);
        nt_free(&x), nt_free(&y);
      }
}

/* Rows whose first 16 elements sit far from the rest (1e4, then N(0, 1); x in f32 and in bf16):
 * layernorm's one sweep takes its moments about the mean of the first few elements, here about
 * 1e4 while the mean is near 1e4 * 16 / n, and must notice that and take them again about the
 * mean (the variance would otherwise lose log10(n / 16) more digits: without the second sweep
 * this test measured errors of 1.3e-5 to 1.2e-4 at 4096 and 16384 columns, against the tolerance
 * 1e-5). The small-budget
 * context runs it through the two-level path, whose chunks of about 200 take the second sweep
 * too, where skipping it would cost little (the ratio is at most chunk / 16). */
static void test_far_shift(void) {
  static const int64_t shapes[][2] = {{3, 16384}, {6, 4096}, {4, 1000}, {3, 20}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (int c = 0; c < 4; c++) { /* both contexts, x in f32 and in bf16 (its own loads) */
      const tl_dtype xd = c & 2 ? TL_BF16 : TL_F32;
      nt_t x = nt_make(xd, 2, shapes[i], NT_CONTIG, 0, 1), y = nt_make(TL_F32, 2, shapes[i], NT_CONTIG, 0, 1);
      for (int64_t k = 0; k < x.nmem; k++) {
        double u1 = test_rng_uniform(&nt_rng, 1e-12, 1), u2 = test_rng_uniform(&nt_rng, 0, 1);
        nt_set(x.mem, xd, k, k % shapes[i][1] < 16 ? 1e4 : sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2));
      }
      nt_poison(&y);
      run_case(c & 1 ? g_small : g_ctx, xd == TL_BF16 ? "far shift, bf16 x" : "far shift", &x.t, NULL, NULL, 1e-5f, &y.t, 0,
               1e-5);
      nt_free(&x), nt_free(&y);
    }
}

static void test_specials(void) {
  for (int c = 0; c < 2; c++) {
    tl_ctx *ctx = c ? g_small : g_ctx;
    int64_t sh[2] = {4, 1500};
    nt_t x = nt_make(TL_F32, 2, sh, NT_CONTIG, -1, 1), y = nt_make(TL_F32, 2, sh, NT_CONTIG, 0, 1);
    float *xm = x.mem;
    xm[1 * 1500 + 1400] = NAN;
    xm[2 * 1500 + 3] = INFINITY;
    for (int rms = 0; rms < 2; rms++) {
      nt_poison(&y);
      tl_status s = rms ? tl_rmsnorm(ctx, &x.t, NULL, 1e-5f, &y.t) : tl_layernorm(ctx, &x.t, NULL, NULL, 1e-5f, &y.t);
      CHECK(s == TL_OK, "[%s] specials: %s", g_isa, tl_ctx_error(ctx));
      const float *ym = y.mem;
      int nan1 = 1, nan2 = 1, fin = 1;
      for (int64_t k = 0; k < 1500; k++) {
        nan1 &= isnan(ym[1500 + k]) != 0;
        if (k != 3) nan2 &= rms ? ym[3000 + k] == 0.0f : isnan(ym[3000 + k]) != 0; /* rms: x / inf = 0 */
        fin &= isfinite(ym[k]) && isfinite(ym[4500 + k]);
      }
      CHECK(nan1, "[%s] NaN row not all NaN (rms %d, ctx %d)", g_isa, rms, c);
      CHECK(nan2, "[%s] +inf row: layernorm all NaN / rmsnorm 0 elsewhere (rms %d, ctx %d)", g_isa, rms, c);
      CHECK(isnan(ym[3000 + 3]), "[%s] the +inf element itself is NaN (inf/inf) (rms %d)", g_isa, rms);
      CHECK(fin, "[%s] clean rows have non-finite values (rms %d, ctx %d)", g_isa, rms, c);
    }
    nt_free(&x), nt_free(&y);
  }
}

static void test_two_level(void) {
  static const int64_t shapes[][2] = {{3, 1999}, {2, 4099}, {1, 9000}, {7, 1025}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (int k = 0; k < 4; k++) {
      int64_t C = shapes[i][1];
      nt_t x = nt_make(k & 1 ? TL_BF16 : TL_F32, 2, shapes[i], i % 2 ? NT_PADDED : NT_CONTIG, -5, 9);
      nt_t y = nt_make(k & 2 ? TL_BF16 : TL_F32, 2, shapes[i], NT_CONTIG, 0, 1);
      nt_t g = nt_make(TL_F32, 1, &C, NT_CONTIG, 0, 2), b = nt_make(TL_BF16, 1, &C, NT_CONTIG, -1, 1);
      for (int rms = 0; rms < 2; rms++) {
        nt_poison(&y);
        run_case(g_small, "two-level", &x.t, &g.t, &b.t, 1e-5f, &y.t, rms, 0);
        tl_ro_req rq = {.kind = rms ? TL_RO_RMSNORM : TL_RO_LAYERNORM, .x = &x.t, .gamma = &g.t, .y = &y.t, .eps = 1e-5f};
        tl_cost c;
        int np = 0;
        CHECK(tl_ro_cost(g_small, &rq, &c, &np) == TL_OK && np == 2, "[%s] small budget: %d plans", g_isa, np);
        CHECK(c.operand_bytes[0] + c.operand_bytes[1] + c.operand_bytes[2] == c.bytes_read + c.bytes_written &&
                  c.operand_bytes[0] >= 2 * nt_numel(&x.t) * (int64_t)tl_dtype_size(x.t.dtype) &&
                  c.operand_bytes[2] == nt_numel(&y.t) * (int64_t)tl_dtype_size(y.t.dtype),
              "[%s] cost by role: x %lld g %lld y %lld, total %lld", g_isa, (long long)c.operand_bytes[0],
              (long long)c.operand_bytes[1], (long long)c.operand_bytes[2], (long long)(c.bytes_read + c.bytes_written));
      }
      nt_free(&x), nt_free(&y), nt_free(&g), nt_free(&b);
    }
}

static void test_streaming(void) {
  static const int64_t shapes[][2] = {{9, 1000}, {40, 129}, {3, 5000}};
  tl_ro_set_nt(g_ctx, 1);
  tl_ro_set_nt(g_small, 1);
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (int k = 0; k < 4; k++) {
      int64_t C = shapes[i][1];
      nt_t x = nt_make(k & 1 ? TL_BF16 : TL_F32, 2, shapes[i], NT_PADDED, -3, 3);
      nt_t y = nt_make(k & 2 ? TL_BF16 : TL_F32, 2, shapes[i], k ? NT_PADDED : NT_CONTIG, 0, 1);
      nt_t g = nt_make(TL_F32, 1, &C, NT_CONTIG, 0, 2), b = nt_make(TL_F32, 1, &C, NT_CONTIG, -1, 1);
      for (int rms = 0; rms < 2; rms++) {
        nt_poison(&y);
        run_case(g_ctx, "streaming", &x.t, &g.t, &b.t, 1e-5f, &y.t, rms, 0);
        nt_poison(&y);
        run_case(g_small, "streaming two-level", &x.t, &g.t, &b.t, 1e-5f, &y.t, rms, 0);
      }
      nt_free(&x), nt_free(&y), nt_free(&g), nt_free(&b);
    }
  tl_ro_set_nt(g_ctx, -1);
  tl_ro_set_nt(g_small, -1);
}

/* The automatic choice (tl_ro_nt_auto): beyond tl_ro_nt_threshold, but not for bf16 rows shorter
 * than TL_RO_NT_BF16_ROW (f32 rows and the columns view keep streaming). */
static void test_nt_auto(void) {
  tl_ctx_info info;
  tl_ctx_info_get(g_ctx, &info);
  const int64_t big = 2 * tl_ro_nt_threshold(&info), small = tl_ro_nt_threshold(&info);
  CHECK(tl_ro_nt_auto(&info, big, 0, 0, 512) == 1, "[%s] f32 rows of 512 beyond the threshold stream", g_isa);
  CHECK(tl_ro_nt_auto(&info, small, 0, 0, 4096) == 0, "[%s] f32 at the threshold does not stream", g_isa);
  CHECK(tl_ro_nt_auto(&info, big, 1, 0, TL_RO_NT_BF16_ROW - 1) == 0, "[%s] bf16 rows below TL_RO_NT_BF16_ROW do not stream", g_isa);
  CHECK(tl_ro_nt_auto(&info, big, 1, 0, TL_RO_NT_BF16_ROW) == 1, "[%s] bf16 rows of TL_RO_NT_BF16_ROW stream", g_isa);
  CHECK(tl_ro_nt_auto(&info, big, 1, 1, 16) == 1, "[%s] bf16 columns beyond the threshold stream", g_isa);
  CHECK(tl_ro_nt_auto(&info, small, 1, 0, 8192) == 0, "[%s] bf16 at the threshold does not stream", g_isa);
}

/* The choice for public calls: what tl_ro_call decided and handed to its plans (tl_ro_last_nt;
 * the results with streaming stores are test_streaming's), beyond the threshold — bf16 softmax rows of
 * 1024 (below TL_RO_NT_BF16_ROW) without streaming stores, of 2048 with them, bf16 softmax over
 * columns (axis 0, 1024 of them) and f32 layernorm rows of 512 with them; a bf16 row of 1024
 * within the threshold without; and tl_ro_set_nt's forcing over the rule. */
static void test_nt_wiring(void) {
  tl_ctx_info info;
  tl_ctx_info_get(g_ctx, &info);
  const int64_t thr = tl_ro_nt_threshold(&info);
  if (thr > ((int64_t)48 << 20)) {
    fprintf(stderr, "    nt wiring: the threshold is %lld MiB here: skipped\n", (long long)(thr >> 20));
    return;
  }
  const int64_t R = thr / 4096 + 64; /* bf16 rows of 1024 (f32 rows of 512): x + y past thr */
  static const struct {
    tl_dtype dt;
    int op; /* 0 softmax over the last axis, 1 softmax over axis 0, 2 layernorm */
    int64_t rows, cols;
    int want;
  } cs[] = {{TL_BF16, 0, 0, 1024, 0}, {TL_BF16, 0, 0, 2048, 1}, {TL_BF16, 1, 0, 1024, 1},
            {TL_F32, 2, 0, 512, 1},   {TL_BF16, 0, 64, 1024, 0}};
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
    /* (softmax over axis 0: 1024 rows reduced, R columns, so that only the columns view streams) */
    const int64_t rows = cs[i].rows ? cs[i].rows : cs[i].op == 1 ? 1024 : R * 1024 / cs[i].cols;
    const int64_t sh[2] = {rows, cs[i].op == 1 ? R : cs[i].cols};
    nt_t x = nt_make(cs[i].dt, 2, sh, NT_CONTIG, -1, 1), y = nt_make(cs[i].dt, 2, sh, NT_CONTIG, 0, 1);
    for (int force = -1; force <= 1; force++) {
      tl_ro_set_nt(g_ctx, force);
      const tl_status st = cs[i].op == 2 ? tl_layernorm(g_ctx, &x.t, NULL, NULL, 1e-5f, &y.t)
                                         : tl_softmax(g_ctx, &x.t, &y.t, cs[i].op == 1 ? 0 : 1);
      const int want = force < 0 ? cs[i].want : force;
      CHECK(st == TL_OK && tl_ro_last_nt(g_ctx) == want, "[%s] %s %s %lldx%lld (forced %d): %s, streaming stores %d, want %d",
            g_isa, tl_dtype_name(cs[i].dt), cs[i].op == 2 ? "layernorm" : cs[i].op ? "softmax over axis 0" : "softmax",
            (long long)sh[0], (long long)sh[1], force, tl_status_name(st), tl_ro_last_nt(g_ctx), want);
    }
    tl_ro_set_nt(g_ctx, -1);
    nt_free(&x), nt_free(&y);
  }
}

static void refused(tl_status got, tl_status st, const char *word, const nt_t *y, const void *save, const char *what) {
  CHECK(got == st, "[%s] %s: got %s, want %s (%s)", g_isa, what, tl_status_name(got), tl_status_name(st), tl_ctx_error(g_ctx));
  CHECK(strstr(tl_ctx_error(g_ctx), word) != NULL, "[%s] %s: message '%s' lacks '%s'", g_isa, what, tl_ctx_error(g_ctx), word);
  CHECK(!memcmp(save, y->mem, (size_t)y->nmem * tl_dtype_size(y->t.dtype)), "[%s] %s: y was written", g_isa, what);
}

static void test_refusals_and_zero(void) {
  int64_t sh[2] = {4, 40}, C = 40, C1 = 39, sh3[3] = {2, 2, 40};
  nt_t x = nt_make(TL_F32, 2, sh, NT_CONTIG, -1, 1), y = nt_make(TL_F32, 2, sh, NT_CONTIG, 0, 1);
  nt_t g = nt_make(TL_F32, 1, &C, NT_CONTIG, 0, 1), g39 = nt_make(TL_F32, 1, &C1, NT_CONTIG, 0, 1);
  nt_t y3 = nt_make(TL_F32, 3, sh3, NT_CONTIG, 0, 1);
  size_t nb = (size_t)y.nmem * 4;
  void *save = malloc(nb);
  memcpy(save, y.mem, nb);
  refused(tl_layernorm(g_ctx, NULL, NULL, NULL, 1e-5f, &y.t), TL_ERR_INVALID, "x is NULL", &y, save, "NULL x");
  refused(tl_rmsnorm(g_ctx, &x.t, NULL, 1e-5f, NULL), TL_ERR_INVALID, "y is NULL", &y, save, "NULL y");
  refused(tl_layernorm(g_ctx, &x.t, &g39.t, NULL, 1e-5f, &y.t), TL_ERR_SHAPE, "gamma", &y, save, "gamma length");
  refused(tl_layernorm(g_ctx, &x.t, &g.t, &g39.t, 1e-5f, &y.t), TL_ERR_SHAPE, "beta", &y, save, "beta length");
  refused(tl_rmsnorm(g_ctx, &x.t, &g39.t, 1e-5f, &y.t), TL_ERR_SHAPE, "gamma", &y, save, "rms gamma length");
  tl_tensor gi = g.t;
  gi.dtype = TL_I32;
  refused(tl_layernorm(g_ctx, &x.t, &gi, NULL, 1e-5f, &y.t), TL_ERR_DTYPE, "gamma is i32", &y, save, "gamma dtype");
  refused(tl_layernorm(g_ctx, &x.t, NULL, NULL, -1e-5f, &y.t), TL_ERR_INVALID, "eps", &y, save, "negative eps");
  refused(tl_rmsnorm(g_ctx, &x.t, NULL, NAN, &y.t), TL_ERR_INVALID, "eps", &y, save, "NaN eps");
  refused(tl_rmsnorm(g_ctx, &x.t, NULL, INFINITY, &y.t), TL_ERR_INVALID, "eps", &y, save, "inf eps");
  void *save3 = malloc((size_t)y3.nmem * 4);
  memcpy(save3, y3.mem, (size_t)y3.nmem * 4);
  refused(tl_layernorm(g_ctx, &x.t, NULL, NULL, 1e-5f, &y3.t), TL_ERR_SHAPE, "expected x's shape", &y3, save3, "shape");
  free(save3);
  tl_tensor xf = x.t;
  xf.dtype = TL_F16;
  refused(tl_layernorm(g_ctx, &xf, NULL, NULL, 1e-5f, &y.t), TL_ERR_DTYPE, "x is f16", &y, save, "f16 x");
  tl_tensor xt = tl_tensor_make_tiled(x.mem, TL_F32, 2, sh, (tl_layout){.tiled = 1, .vnni = 1, .tile_r = 4, .tile_c = 8});
  refused(tl_rmsnorm(g_ctx, &xt, NULL, 1e-5f, &y.t), TL_ERR_INVALID, "tiled", &y, save, "tiled x");
  tl_tensor gy = g.t; /* gamma inside y */
  gy.data = y.mem;
  refused(tl_layernorm(g_ctx, &x.t, &gy, NULL, 1e-5f, &y.t), TL_ERR_INVALID, "overlaps gamma", &y, save, "gamma overlaps y");
  tl_tensor xs = y.t, ys = y.t;
  xs.shape[1] = ys.shape[1] = 39, ys.data = (float *)y.mem + 1;
  refused(tl_rmsnorm(g_ctx, &xs, NULL, 1e-5f, &ys), TL_ERR_INVALID, "overlaps x", &y, save, "partial overlap");
  tl_tensor xsc = tl_tensor_make(x.mem, TL_F32, 0, NULL), ysc = tl_tensor_make(y.mem, TL_F32, 0, NULL);
  refused(tl_layernorm(g_ctx, &xsc, NULL, NULL, 1e-5f, &ysc), TL_ERR_SHAPE, "scalar", &y, save, "0-d x");
  CHECK(tl_layernorm(NULL, &x.t, NULL, NULL, 1e-5f, &y.t) == TL_ERR_INVALID, "[%s] NULL ctx", g_isa);
  /* zero sizes: no-ops, also with gamma of length 0 */
  int64_t z0[2] = {0, 40}, z1[2] = {3, 0}, zc = 0;
  nt_t a = nt_make(TL_F32, 2, z0, NT_CONTIG, 0, 1), b = nt_make(TL_F32, 2, z1, NT_CONTIG, 0, 1);
  nt_t gz = nt_make(TL_F32, 1, &zc, NT_CONTIG, 0, 1);
  CHECK(tl_layernorm(g_ctx, &a.t, &g.t, NULL, 1e-5f, &a.t) == TL_OK, "[%s] 0 rows: %s", g_isa, tl_ctx_error(g_ctx));
  CHECK(tl_rmsnorm(g_ctx, &b.t, &gz.t, 1e-5f, &b.t) == TL_OK, "[%s] 0 cols: %s", g_isa, tl_ctx_error(g_ctx));
  free(save);
  nt_free(&x), nt_free(&y), nt_free(&g), nt_free(&g39), nt_free(&y3), nt_free(&a), nt_free(&b), nt_free(&gz);
}

int main(void) {
  for (int i = 0; (g_isa = test_isa_level(i)) != NULL; i++) {
    tl_ctx_opts opts = {.isa = g_isa, .threads = 2};
    tl_ctx_opts small = {.isa = g_isa, .threads = 2, .vmem_bytes = 4096};
    if (tl_ctx_new(&opts, &g_ctx) != TL_OK || tl_ctx_new(&small, &g_small) != TL_OK) {
      CHECK(0, "tl_ctx_new(%s): %s", g_isa, tl_last_error());
      break;
    }
    fprintf(stderr, "isa %s\n", g_isa);
    RUN(test_shapes);
    RUN(test_gamma_beta);
    RUN(test_inplace);
    RUN(test_large_means);
    RUN(test_far_shift);
    RUN(test_specials);
    RUN(test_two_level);
    RUN(test_streaming);
    RUN(test_nt_auto);
    RUN(test_nt_wiring);
    RUN(test_refusals_and_zero);
    tl_ctx_free(g_ctx);
    tl_ctx_free(g_small);
  }
  fprintf(stderr, "max errors: layernorm f32 %.3g bf16 %.3g; rmsnorm f32 %.3g bf16 %.3g\n", g_max_err[0][0], g_max_err[0][1],
          g_max_err[1][0], g_max_err[1][1]);
  return test_summary("kernels_norm");
}
