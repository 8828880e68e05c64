/* test_softmax.c — tl_softmax and tl_log_softmax against a float64 reference, under a context
 * capped at each ISA level the CPU has: random shapes with 1, primes and sizes that are not
 * multiples of 16 or of the block, every axis (negative too), padded and transposed views for x
 * and y, f32/bf16 in and out, in place, magnitudes up to 1e4, NaN rows, all -inf rows (NaN), rows
 * with -inf (exact 0 / -inf) and +inf (NaN, as the IEEE formula gives), the two-level path
 * forced by a small staging budget (rows and columns), poisoned outputs, the plan cache, zero
 * sizes and every refusal with y untouched. Tolerances (||y - ref|| / ||ref||): f32 out 1e-5,
 * bf16 out 5e-3 (measured maxima in docs/norms.md). */
#include "core/core_impl.h"
#include "kernels/norm_impl.h"
#include "norm_test_util.h"
#include "test_isa.h"

static tl_ctx *g_ctx, *g_small; /* g_small: 4 KiB staging budget, forces the two-level path */
static const char *g_isa;
static double g_max_err[2][2]; /* [log][bf16 out]: the largest error seen (for docs) */

/* The reference softmax / log_softmax of x along axis, in y's element order. */
static double *ref_softmax(const tl_tensor *x, int axis, int logsm) {
  const int64_t n = nt_numel(x), A = x->shape[axis];
  double *ref = malloc((size_t)(n ? n : 1) * sizeof *ref), *line = malloc((size_t)(A ? A : 1) * sizeof *line);
  int64_t cs[TL_MAX_DIMS], s = 1, idx[TL_MAX_DIMS] = {0};
  for (int d = x->ndim - 1; d >= 0; d--) cs[d] = s, s *= x->shape[d];
  if (n == 0) goto done;
  do {
    double m = -INFINITY, sum = 0;
    int nan = 0;
    for (int64_t a = 0; a < A; a++) {
      idx[axis] = a;
      line[a] = nt_get(x, idx);
      nan |= isnan(line[a]);
      if (line[a] > m) m = line[a];
    }
    for (int64_t a = 0; a < A; a++) sum += exp(line[a] - m);
    for (int64_t a = 0; a < A; a++) {
      idx[axis] = a;
      int64_t lin = 0;
      for (int d = 0; d < x->ndim; d++) lin += idx[d] * cs[d];
      double v = logsm ? (line[a] - m) - log(sum) : exp(line[a] - m) / sum;
      ref[lin] = (nan || m == -INFINITY || m == INFINITY) ? NAN : v;
    }
    idx[axis] = 0;
  } while (nt_next(x, idx, axis));
done:
  free(line);
  return ref;
}

/* Runs one case on ctx and checks it; returns the error. */
static double run_case(tl_ctx *ctx, const char *what, tl_tensor *x, tl_tensor *y, int axis, int logsm) {
  int ax = axis < 0 ? axis + x->ndim : axis;
  double *ref = ref_softmax(x, ax, logsm);
  tl_status s = logsm ? tl_log_softmax(ctx, x, y, axis) : tl_softmax(ctx, x, y, axis);
  CHECK(s == TL_OK, "[%s] %s: %s: %s", g_isa, what, tl_status_name(s), tl_ctx_error(ctx));
  int nan_bad = 0;
  double err = nt_err(y, ref, &nan_bad), tol = nt_tol(y->dtype);
  CHECK(err <= tol && nan_bad == 0, "[%s] %s%s axis %d %s->%s: err %.3g (tol %.1g), %d NaN/inf mismatches", g_isa, what,
        logsm ? " (log)" : "", axis, tl_dtype_name(x->dtype), tl_dtype_name(y->dtype), err, tol, nan_bad);
  double *mx = &g_max_err[logsm][y->dtype == TL_BF16];
  if (err > *mx) *mx = err;
  free(ref);
  return err;
}

/* x broadcast (stride 0) along rows, along the axis, along columns: the lines are staged, never
 * read as if contiguous (a review found them read in place past the buffer). */
static void test_broadcast_x(void) {
  const int64_t sh[3] = {4, 9, 37};
  static const int zero_dim[] = {0, 1, 2};
  for (size_t z = 0; z < 3; z++)
    for (int axis = 0; axis < 3; axis++) {
      nt_t x = nt_make(TL_F32, 3, sh, NT_CONTIG, -3, 3), y = nt_make(TL_F32, 3, sh, NT_CONTIG, 0, 0);
      x.t.stride[zero_dim[z]] = 0;
      char what[64];
      snprintf(what, sizeof what, "x stride 0 in dim %d", zero_dim[z]);
      run_case(g_ctx, what, &x.t, &y.t, axis, 0);
      run_case(g_small, what, &x.t, &y.t, axis, 1);
      nt_free(&x), nt_free(&y);
    }
}

static void test_shapes(void) {
  static const int64_t dims[] = {1, 2, 3, 7, 16, 17, 31, 64, 97, 131, 256, 1000};
  for (int it = 0; it < 40; it++) {
    int nd = 1 + (int)test_rng_int(&nt_rng, 0, 3);
    int64_t sh[4];
    int64_t tot = 1;
    for (int d = 0; d < nd; d++) {
      sh[d] = dims[test_rng_int(&nt_rng, 0, (int64_t)(sizeof dims / sizeof dims[0]) - 1)];
      if (tot * sh[d] > 60000) sh[d] = 1 + test_rng_int(&nt_rng, 0, 5);
      tot *= sh[d];
    }
    int axis = (int)test_rng_int(&nt_rng, -nd, nd - 1);
    int lay = (int)test_rng_int(&nt_rng, 0, 2);
    nt_t x = nt_make(TL_F32, nd, sh, lay, -8, 8);
    nt_t y = nt_make(TL_F32, nd, sh, (lay + it) % 3, 0, 1);
    nt_poison(&y);
    char what[64];
    snprintf(what, sizeof what, "shape %dd %lldx%lldx%lldx%lld lay %d", nd, (long long)sh[0], (long long)(nd > 1 ? sh[1] : 0),
             (long long)(nd > 2 ? sh[2] : 0), (long long)(nd > 3 ? sh[3] : 0), lay);
    run_case(g_ctx, what, &x.t, &y.t, axis, it % 2);
    nt_free(&x), nt_free(&y);
  }
}

static void test_every_axis(void) {
  int64_t sh[3] = {5, 33, 19};
  for (int axis = -3; axis < 3; axis++)
    for (int lay = 0; lay < 3; lay++) {
      nt_t x = nt_make(TL_F32, 3, sh, lay, -20, 20), y = nt_make(TL_F32, 3, sh, 2 - lay, 0, 1);
      nt_poison(&y);
      run_case(g_ctx, "every axis", &x.t, &y.t, axis, 0);
      run_case(g_ctx, "every axis", &x.t, &y.t, axis, 1);
      nt_free(&x), nt_free(&y);
    }
}

static void test_dtypes(void) {
  int64_t sh[2] = {37, 1023};
  const tl_dtype dts[2] = {TL_F32, TL_BF16};
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++)
      for (int axis = 0; axis < 2; axis++) {
        nt_t x = nt_make(dts[a], 2, sh, NT_CONTIG, -10, 10), y = nt_make(dts[b], 2, sh, NT_CONTIG, 0, 1);
        nt_poison(&y);
        run_case(g_ctx, "dtypes", &x.t, &y.t, axis, 0);
        run_case(g_ctx, "dtypes", &x.t, &y.t, axis, 1);
        nt_free(&x), nt_free(&y);
      }
}

static void test_inplace(void) {
  int64_t sh[2] = {29, 515};
  for (int logsm = 0; logsm < 2; logsm++)
    for (int axis = 0; axis < 2; axis++)
      for (int bf = 0; bf < 2; bf++) {
        nt_t x = nt_make(bf ? TL_BF16 : TL_F32, 2, sh, logsm ? NT_PADDED : NT_CONTIG, -30, 30);
        double *ref = ref_softmax(&x.t, axis, logsm);
        tl_status s = logsm ? tl_log_softmax(g_ctx, &x.t, &x.t, axis) : tl_softmax(g_ctx, &x.t, &x.t, axis);
        CHECK(s == TL_OK, "[%s] in place: %s", g_isa, tl_ctx_error(g_ctx));
        int nan_bad;
        double err = nt_err(&x.t, ref, &nan_bad);
        CHECK(err <= nt_tol(x.t.dtype) && !nan_bad, "[%s] in place log %d axis %d bf16 %d: err %.3g", g_isa, logsm, axis, bf, err);
        free(ref), nt_free(&x);
      }
}

/* The same shapes in place and not, in both orders: a plan made for one must not serve the other
 * (in place, the executor shares x's blocks with y). */
static void test_inplace_then_not(void) {
  int64_t sh[2] = {21, 613};
  for (int order = 0; order < 2; order++)
    for (int step = 0; step < 2; step++) {
      int inplace = step ^ order;
      nt_t x = nt_make(TL_F32, 2, sh, NT_CONTIG, -5, 5), y = nt_make(TL_F32, 2, sh, NT_CONTIG, 0, 1);
      double *ref = ref_softmax(&x.t, 1, 0);
      nt_t keep = nt_make(TL_F32, 2, sh, NT_CONTIG, 0, 1);
      memcpy(keep.mem, x.mem, (size_t)x.nmem * 4);
      tl_status s = tl_softmax(g_ctx, &x.t, inplace ? &x.t : &y.t, 1);
      int nan_bad;
      double err = nt_err(inplace ? &x.t : &y.t, ref, &nan_bad);
      CHECK(s == TL_OK && err <= 1e-5 && !nan_bad, "[%s] order %d in place %d: err %.3g (%s)", g_isa, order, inplace, err,
            tl_ctx_error(g_ctx));
      if (!inplace) CHECK(!memcmp(keep.mem, x.mem, (size_t)x.nmem * 4), "[%s] order %d: x was written", g_isa, order);
      free(ref), nt_free(&x), nt_free(&y), nt_free(&keep);
    }
}

static void test_large_magnitudes(void) {
  int64_t sh[2] = {16, 300};
  for (int axis = 0; axis < 2; axis++) {
    nt_t x = nt_make(TL_F32, 2, sh, NT_CONTIG, -1e4, 1e4), y = nt_make(TL_F32, 2, sh, NT_CONTIG, 0, 1);
    run_case(g_ctx, "magnitude 1e4", &x.t, &y.t, axis, 0);
    run_case(g_ctx, "magnitude 1e4", &x.t, &y.t, axis, 1);
    /* a narrow spread on a huge offset: only x - max matters */
    for (int64_t i = 0; i < x.nmem; i++) ((float *)x.mem)[i] = 9000.0f + (float)test_rng_uniform(&nt_rng, -5, 5);
    run_case(g_ctx, "offset 9000", &x.t, &y.t, axis, 0);
    run_case(g_ctx, "offset 9000", &x.t, &y.t, axis, 1);
    nt_free(&x), nt_free(&y);
  }
}

/* Rows with NaN, all -inf, some -inf and +inf, for both paths (ctx and the small budget). */
static void test_specials(void) {
  tl_ctx *ctxs[2] = {g_ctx, g_small};
  for (int c = 0; c < 2; c++)
    for (int axis = 0; axis < 2; axis++) {
      int64_t sh[2] = {6, 2000}; /* 2000 f32: beyond the small budget's rows */
      if (axis == 0) sh[0] = 2000, sh[1] = 6;
      nt_t x = nt_make(TL_F32, 2, sh, NT_CONTIG, -5, 5), y = nt_make(TL_F32, 2, sh, NT_CONTIG, 0, 1);
      float *xm = x.mem;
      const int64_t A = sh[axis];
      /* line k: element a is at a * sa + k * sk */
      const int64_t sa = axis == 1 ? 1 : sh[1], sk = axis == 1 ? sh[1] : 1;
      xm[1 * sk + 7 * sa] = NAN;                                      /* line 1: NaN -> all NaN */
      for (int64_t a = 0; a < A; a++) xm[2 * sk + a * sa] = -INFINITY; /* line 2: all -inf -> NaN */
      for (int64_t a = 0; a < A; a += 3) xm[3 * sk + a * sa] = -INFINITY; /* line 3: -inf -> 0 */
      xm[4 * sk + (A - 1) * sa] = INFINITY;                           /* line 4: +inf -> NaN */
      xm[5 * sk + 0] = NAN, xm[5 * sk + (A - 1) * sa] = -INFINITY;      /* line 5: NaN first */
      for (int logsm = 0; logsm < 2; logsm++) {
        nt_poison(&y);
        run_case(ctxs[c], c ? "specials (two-level)" : "specials", &x.t, &y.t, axis, logsm);
        const float *ym = y.mem;
        float z = ym[3 * sk + 0];
        CHECK(logsm ? (isinf(z) && z < 0) : z == 0.0f, "[%s] -inf element gives %g", g_isa, (double)z);
        int ok = 1;
        for (int64_t a = 0; a < A; a++) ok &= isnan(ym[2 * sk + a * sa]) && isnan(ym[1 * sk + a * sa]) && isnan(ym[4 * sk + a * sa]);
        CHECK(ok, "[%s] NaN / all -inf / +inf lines not all NaN (ctx %d axis %d log %d)", g_isa, c, axis, logsm);
        int fin = 1;
        for (int64_t a = 0; a < A; a++) fin &= isfinite(ym[0 * sk + a * sa]);
        CHECK(fin, "[%s] clean line 0 has non-finite values", g_isa);
      }
      nt_free(&x), nt_free(&y);
    }
}

/* The two-level path (rows and columns) against the one-pass path and the reference. */
static void test_two_level(void) {
  static const int64_t shapes[][3] = {{3, 1999, 1}, {2, 4099, 1}, {1, 5000, 1}, {2, 1500, 5}, {1, 3001, 33}, {2, 777, 3}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (int bf = 0; bf < 2; bf++) {
      const int64_t *sh = shapes[i];
      int nd = sh[2] == 1 ? 2 : 3;
      nt_t x = nt_make(bf ? TL_BF16 : TL_F32, nd, sh, i % 2 ? NT_PADDED : NT_CONTIG, -12, 12);
      nt_t y = nt_make(TL_F32, nd, sh, NT_CONTIG, 0, 1);
      for (int logsm = 0; logsm < 2; logsm++) {
        nt_poison(&y);
        run_case(g_small, "two-level", &x.t, &y.t, 1, logsm);
      }
      /* the small budget really takes two plans, the default one one */
      tl_ro_req rq = {.kind = TL_RO_SOFTMAX, .x = &x.t, .y = &y.t, .axis = 1};
      tl_cost c;
      int np_small = 0, np = 0;
      CHECK(tl_ro_cost(g_small, &rq, &c, &np_small) == TL_OK && np_small == 2, "[%s] small budget: %d plans (%s)", g_isa,
            np_small, tl_ctx_error(g_small));
      CHECK(tl_ro_cost(g_ctx, &rq, &c, &np) == TL_OK && np == 1, "[%s] default budget: %d plans", g_isa, np);
      /* two passes read x twice: the cost says so */
      CHECK(tl_ro_cost(g_small, &rq, &c, NULL) == TL_OK && c.bytes_read >= 2 * nt_numel(&x.t) * (int64_t)tl_dtype_size(x.t.dtype),
            "[%s] two-level bytes read %lld", g_isa, (long long)c.bytes_read);
      nt_free(&x), nt_free(&y);
    }
}

/* Streaming stores forced on: unaligned heads (padded rows), f32 and bf16 outputs, both paths. */
static void test_streaming(void) {
  static const int64_t shapes[][2] = {{7, 1000}, {33, 129}, {5, 4096}, {300, 70}};
  tl_ro_set_nt(g_ctx, 1);
  tl_ro_set_nt(g_small, 1);
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (int k = 0; k < 4; k++) {
      nt_t x = nt_make(k & 1 ? TL_BF16 : TL_F32, 2, shapes[i], NT_PADDED, -6, 6);
      nt_t y = nt_make(k & 2 ? TL_BF16 : TL_F32, 2, shapes[i], k ? NT_PADDED : NT_CONTIG, 0, 1);
      nt_poison(&y);
      run_case(g_ctx, "streaming", &x.t, &y.t, k == 3 ? 0 : 1, 0);
      run_case(g_small, "streaming two-level", &x.t, &y.t, 1, 1);
      nt_free(&x), nt_free(&y);
    }
  tl_ro_set_nt(g_ctx, -1);
  tl_ro_set_nt(g_small, -1);
}

/* The bf16 value nearest to v (ties to even) and its neighbours below and above (v > 0 finite). */
static double bf16_nearest(double v, double *below, double *above) {
  uint16_t h = tl_f32_to_bf16((float)v);
  double best = 0, bd = INFINITY;
  for (int d = -1; d <= 1; d++) {
    double c = tl_bf16_to_f32((uint16_t)(h + d)), dist = fabs(c - v);
    if (dist < bd || (dist == bd && ((h + d) & 1) == 0)) bd = dist, best = c;
  }
  uint16_t b = tl_f32_to_bf16((float)best);
  *below = tl_bf16_to_f32((uint16_t)(b - 1)), *above = tl_bf16_to_f32((uint16_t)(b + 1));
  return best;
}

/* softmax into bf16 computes its exponentials to bf16 accuracy (below 1e-5 relative, not f32's
 * ulp): every output is the float64 value rounded to bf16 or, rarely, its neighbour (the value
 * lay that close to a rounding boundary): about 0.05% here. A degree-3 exp (6e-4 relative error)
 * gave 2-3% and fails the 1% limit. One pass and two-level, rows and columns, f32 and bf16 x. */
static void test_bf16_rounding(void) {
  const int64_t sh[2] = {41, 1031};
  for (int k = 0; k < 8; k++) {
    const int axis = k & 1, two = (k >> 1) & 1;
    nt_t x = nt_make(k & 4 ? TL_BF16 : TL_F32, 2, sh, NT_CONTIG, -9, 9);
    nt_t y = nt_make(TL_BF16, 2, sh, NT_CONTIG, 0, 1);
    nt_poison(&y);
    double *ref = ref_softmax(&x.t, axis, 0);
    tl_status st = tl_softmax(two ? g_small : g_ctx, &x.t, &y.t, axis);
    CHECK(st == TL_OK, "[%s] bf16 rounding: %s", g_isa, tl_status_name(st));
    int64_t idx[TL_MAX_DIMS] = {0}, i = 0, off = 0, far = 0;
    do {
      double lo, hi, o = nt_get(&y.t, idx), near = bf16_nearest(ref[i++], &lo, &hi);
      off += o != near;
      far += o != near && o != lo && o != hi;
    } while (nt_next(&y.t, idx, -1));
    CHECK(far == 0 && off * 100 <= i,
          "[%s] softmax %s->bf16 axis %d%s: %lld of %lld outputs not the nearest bf16, %lld not even a neighbour", g_isa,
          tl_dtype_name(x.t.dtype), axis, two ? " two-level" : "", (long long)off, (long long)i, (long long)far);
    free(ref);
    nt_free(&x), nt_free(&y);
  }
}

static void test_zero_and_cache(void) {
  int64_t sh0[2] = {0, 17};
  nt_t x = nt_make(TL_F32, 2, sh0, NT_CONTIG, 0, 1), y = nt_make(TL_F32, 2, sh0, NT_CONTIG, 0, 1);
  CHECK(tl_softmax(g_ctx, &x.t, &y.t, 1) == TL_OK, "[%s] zero rows: %s", g_isa, tl_ctx_error(g_ctx));
  CHECK(tl_softmax(g_ctx, &x.t, &y.t, 0) == TL_OK, "[%s] zero rows, axis 0: %s", g_isa, tl_ctx_error(g_ctx));
  nt_free(&x), nt_free(&y);
  /* more shapes than the cache holds, then the first again with new data */
  for (int round = 0; round < 2; round++)
    for (int64_t c = 1; c <= 40; c++) {
      if (round == 1 && c > 3) break;
      int64_t sh[2] = {5, 10 * c + 1};
      nt_t a = nt_make(TL_F32, 2, sh, NT_CONTIG, -3, 3), b = nt_make(TL_F32, 2, sh, NT_CONTIG, 0, 1);
      nt_poison(&b);
      run_case(g_ctx, round ? "cache (again)" : "cache", &a.t, &b.t, -1, 0);
      nt_free(&a), nt_free(&b);
    }
}

/* The plan cache: a repeated call makes no allocation (its plan is reused); a first call whose
 * allocations fail (fault injection, every allocation in turn) returns TL_ERR_NOMEM with y
 * untouched, and the call works afterwards. */
static void test_plan_reuse_and_nomem(void) {
  int64_t sh[2] = {9, 333};
  nt_t x = nt_make(TL_F32, 2, sh, NT_CONTIG, -3, 3), y = nt_make(TL_F32, 2, sh, NT_CONTIG, 0, 1);
  CHECK(tl_softmax(g_ctx, &x.t, &y.t, -1) == TL_OK, "[%s] first call: %s", g_isa, tl_ctx_error(g_ctx));
  int64_t before = tl_faultsim_count();
  CHECK(tl_softmax(g_ctx, &x.t, &y.t, -1) == TL_OK, "[%s] second call", g_isa);
  CHECK(tl_faultsim_count() == before, "[%s] the second call allocated %lld times (plan not reused)", g_isa,
        (long long)(tl_faultsim_count() - before));
  int64_t sh2[2] = {5, 3001}; /* new shapes: the two-level path on g_small, with stats */
  nt_t x2 = nt_make(TL_F32, 2, sh2, NT_CONTIG, -3, 3), y2 = nt_make(TL_F32, 2, sh2, NT_CONTIG, 0, 1);
  size_t nb = (size_t)y2.nmem * 4;
  void *save = malloc(nb);
  memcpy(save, y2.mem, nb);
  int nomem = 0, ok_at = 0;
  for (int k = 1; k <= 40 && !ok_at; k++) {
    tl_faultsim_fail_at(k);
    tl_status s = tl_log_softmax(g_small, &x2.t, &y2.t, 1);
    tl_faultsim_fail_at(0);
    if (s == TL_OK) {
      ok_at = k;
      break;
    }
    nomem++;
    CHECK(s == TL_ERR_NOMEM, "[%s] allocation %d failing: %s (%s)", g_isa, k, tl_status_name(s), tl_ctx_error(g_small));
    CHECK(!memcmp(save, y2.mem, nb), "[%s] allocation %d failing: y was written", g_isa, k);
  }
  CHECK(nomem >= 1 && ok_at > 0, "[%s] fault injection: %d failures before success at %d", g_isa, nomem, ok_at);
  nt_poison(&y2);
  run_case(g_small, "after fault injection", &x2.t, &y2.t, 1, 1);
  free(save);
  nt_free(&x), nt_free(&y), nt_free(&x2), nt_free(&y2);
}

/* A refusal: status st, a message containing word, y untouched. */
static void refused(tl_status got, tl_status st, const char *word, const nt_t *y, const void *save, const char *what) {
  CHECK(got == st, "[%s] %s: got %s, want %s (%s)", g_isa, what, tl_status_name(got), tl_status_name(st), tl_ctx_error(g_ctx));
  CHECK(strstr(tl_ctx_error(g_ctx), word) != NULL, "[%s] %s: message '%s' lacks '%s'", g_isa, what, tl_ctx_error(g_ctx), word);
  CHECK(!memcmp(save, y->mem, (size_t)y->nmem * tl_dtype_size(y->t.dtype)), "[%s] %s: y was written", g_isa, what);
}

static void test_refusals(void) {
  int64_t sh[2] = {4, 40}, sh2[2] = {4, 41};
  nt_t x = nt_make(TL_F32, 2, sh, NT_CONTIG, -1, 1), y = nt_make(TL_F32, 2, sh, NT_CONTIG, 0, 1);
  nt_t y2 = nt_make(TL_F32, 2, sh2, NT_CONTIG, 0, 1);
  size_t nb = (size_t)y.nmem * 4;
  void *save = malloc(nb);
  memcpy(save, y.mem, nb);
  refused(tl_softmax(g_ctx, NULL, &y.t, 0), TL_ERR_INVALID, "x is NULL", &y, save, "NULL x");
  refused(tl_softmax(g_ctx, &x.t, NULL, 0), TL_ERR_INVALID, "y is NULL", &y, save, "NULL y");
  refused(tl_softmax(g_ctx, &x.t, &y.t, 2), TL_ERR_INVALID, "axis 2", &y, save, "axis 2");
  refused(tl_log_softmax(g_ctx, &x.t, &y.t, -3), TL_ERR_INVALID, "axis -3", &y, save, "axis -3");
  void *save2 = malloc((size_t)y2.nmem * 4);
  memcpy(save2, y2.mem, (size_t)y2.nmem * 4);
  refused(tl_softmax(g_ctx, &x.t, &y2.t, 1), TL_ERR_SHAPE, "expected x's shape", &y2, save2, "shape mismatch");
  free(save2);
  tl_tensor xi = x.t;
  xi.dtype = TL_I32;
  refused(tl_softmax(g_ctx, &xi, &y.t, 1), TL_ERR_DTYPE, "x is i32", &y, save, "i32 x");
  tl_tensor xt = tl_tensor_make_tiled(x.mem, TL_F32, 2, sh, (tl_layout){.tiled = 1, .vnni = 1, .tile_r = 4, .tile_c = 8});
  refused(tl_softmax(g_ctx, &xt, &y.t, 1), TL_ERR_INVALID, "tiled", &y, save, "tiled x");
  tl_tensor xn = x.t;
  xn.data = NULL;
  refused(tl_softmax(g_ctx, &xn, &y.t, 1), TL_ERR_INVALID, "data is NULL", &y, save, "NULL data");
  /* y overlapping x partly (shifted by one element) */
  tl_tensor ys = y.t;
  ys.shape[1] = 39, ys.data = (float *)y.mem + 1;
  tl_tensor xs = y.t;
  xs.shape[1] = 39;
  refused(tl_softmax(g_ctx, &xs, &ys, 1), TL_ERR_INVALID, "overlaps", &y, save, "partial overlap");
  tl_tensor yz = y.t;
  yz.stride[0] = 0;
  refused(tl_softmax(g_ctx, &x.t, &yz, 1), TL_ERR_INVALID, "stride 0", &y, save, "zero-stride y");
  tl_tensor yo = y.t;
  yo.stride[0] = 20; /* rows of 40 at a stride of 20: elements shared */
  refused(tl_softmax(g_ctx, &x.t, &yo, 1), TL_ERR_INVALID, "share memory", &y, save, "self-overlapping y");
  CHECK(tl_softmax(NULL, &x.t, &y.t, 0) == TL_ERR_INVALID, "[%s] NULL ctx", g_isa);
  free(save);
  nt_free(&x), nt_free(&y), nt_free(&y2);
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
    RUN(test_broadcast_x);
    RUN(test_every_axis);
    RUN(test_dtypes);
    RUN(test_inplace);
    RUN(test_inplace_then_not);
    RUN(test_large_magnitudes);
    RUN(test_specials);
    RUN(test_two_level);
    RUN(test_streaming);
    RUN(test_bf16_rounding);
    RUN(test_zero_and_cache);
    RUN(test_plan_reuse_and_nomem);
    RUN(test_refusals);
    tl_ctx_free(g_ctx);
    tl_ctx_free(g_small);
  }
  fprintf(stderr, "max errors: softmax f32 %.3g bf16 %.3g; log_softmax f32 %.3g bf16 %.3g\n", g_max_err[0][0],
          g_max_err[0][1], g_max_err[1][0], g_max_err[1][1]);
  return test_summary("kernels_softmax");
}
