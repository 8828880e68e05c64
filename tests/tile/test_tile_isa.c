/* test_tile_isa.c — the vectorised tile operations (src/tile/avx2/ew_avx2.c,
 * src/tile/avx512/ew_avx512.c) against the scalar reference and a float64 reference, run inside
 * a body through tl_call under one context per ISA level the CPU has (opts.isa = "scalar",
 * "avx2", "avx512"), so the dispatch from the program's level is what is tested.
 *
 * - exact ops (fill, cast, identity, neg, relu, sqrt, rsqrt, recip, add/sub/mul/div/max/min,
 *   reduce max/min, reduce sum over axis 0): bit for bit the scalar context's output, row gaps
 *   included (two NaN operands of an arithmetic op may give either payload);
 * - exp, log, tanh, erf, gelu, silu: every f32 element within 8 ulp of float64 (bf16 results:
 *   within 1 bf16 ulp), NaN and inf where the reference has them (silu of large negative x
 *   included, where the reference's f32 formula gives -0 from -88.7 down);
 * - reduce sum over the last axis: within 1e-6 * sum|x| of float64 (the order differs).
 * Shapes: 1, 7, 15, 16, 17, 33, 100 columns, rows with gaps, a column stride of 2 (unary: the
 * buffered path; the others fall back),
 * 3-D, in place; broadcasts of b as a row, [C], a column and [1, 1]; inputs with NaN, +-inf,
 * +-0, denormals and large magnitudes. */
#include "tile_test_util.h"

#include <tilec.h>

/* ---- running a callback inside a body on a context ---- */

typedef void (*case_fn)(void *arg);
typedef struct body_job {
  case_fn fn;
  void *arg;
} body_job;

static void body(const tl_prog *p, tl_ref *refs, void *user) {
  (void)p, (void)refs;
  body_job *j = user;
  j->fn(j->arg);
}

/* Runs fn(arg) inside a one-step kernel on ctx; returns the status. */
static tl_status in_body(tl_ctx *ctx, case_fn fn, void *arg) {
  static float din, dout;
  int64_t one[1] = {1};
  tl_tensor in = tl_tensor_make(&din, TL_F32, 1, one), out = tl_tensor_make(&dout, TL_F32, 1, one);
  tl_blockspec spec = {.ndim = 1};
  body_job j = {fn, arg};
  tl_kernel k = {.name = "isa", .body = body, .user = &j, .grid_ndim = 1, .grid = {1},
                 .n_in = 1, .in = &spec, .n_out = 1, .out = &spec};
  return tl_call(ctx, &k, &in, &out);
}

static tl_ctx *g_ctx[3];
static const char *g_name[3];
static int g_nl;

/* One context per level up to the CPU's best of scalar, avx2, avx512. */
static void make_ctxs(void) {
  tl_cpu_info ci;
  tl_cpu_detect(&ci);
  const tl_isa lv[3] = {TL_ISA_SCALAR, TL_ISA_AVX2, TL_ISA_AVX512};
  for (int i = 0; i < 3 && lv[i] <= ci.isa_max; i++) {
    tl_ctx_opts o = {.threads = 1, .isa = tl_isa_name(lv[i])};
    if (tl_ctx_new(&o, &g_ctx[g_nl]) != TL_OK) break;
    g_name[g_nl++] = o.isa;
  }
}

/* ---- values ---- */

static float f_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* Special inputs every elementwise test mixes into random data. */
static float special(int i) {
  const float v[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, -3e-42f, 1e30f, -1e30f, 88.8f, -88.8f,
                     100.0f, -95.0f, -103.5f, 1e-20f, 3.0e38f, f_bits(0x7fc00123u), f_bits(0xffc00456u),
                     0.5f, -0.5f, 0.9f, -0.9f, 0.625f, 14.0f, -14.0f, 9.5f, -9.5f, 1.17549435e-38f};
  return v[i % (int)(sizeof v / sizeof v[0])];
}

/* Fills b (f32 or bf16) with uniform values in [lo, hi), every 5th one a special value. */
static void fill_mixed(tbuf *b, test_rng *rng, double lo, double hi, int specials) {
  int64_t idx[TL_MAX_DIMS];
  for (int64_t n = 0; n < tb_numel(b); n++) {
    tb_index(b, n, idx);
    double v = test_rng_uniform(rng, lo, hi);
    if (specials && n % 5 == 3) v = special((int)(n / 5));
    tb_set(b, idx, v);
  }
}

/* 1 when the two buffers hold the same bytes, treating two NaN f32 elements as equal when
 * nan_any (arithmetic on two NaN operands may return either payload). */
static int same_bits(const tbuf *x, const tbuf *y, int nan_any) {
  size_t bytes = (size_t)x->nelem * tl_dtype_size(x->r.dtype);
  if (!memcmp(x->mem, y->mem, bytes)) return 1;
  if (!nan_any || (x->r.dtype != TL_F32 && x->r.dtype != TL_BF16)) return 0;
  size_t es = tl_dtype_size(x->r.dtype);
  for (int64_t i = 0; i < x->nelem; i++) {
    double a = tl_load_f64(x->mem, x->r.dtype, i), b = tl_load_f64(y->mem, y->r.dtype, i);
    if (memcmp(x->mem + es * (size_t)i, y->mem + es * (size_t)i, es) && !(isnan(a) && isnan(b))) return 0;
  }
  return 1;
}

/* ulp of ref rounded to f32 (2^-149 in the denormal range). */
static double ulp_f32(double ref) {
  int e;
  frexp(fabs(ref), &e);
  if (e - 1 < -126) e = -125;
  return ldexp(1.0, e - 1 - 23);
}

/* ---- unary ---- */

typedef struct un_args {
  tl_ref *d, *s;
  tl_unary op;
} un_args;
static void run_unary(void *p) {
  un_args *a = p;
  tl_tile_unary(a->d, a->s, a->op);
}

static double ref_unary(tl_unary op, double x) {
  switch (op) {
  case TL_UNARY_EXP: return exp(x);
  case TL_UNARY_LOG: return log(x);
  case TL_UNARY_TANH: return tanh(x);
  case TL_UNARY_ERF: return erf(x);
  case TL_UNARY_GELU: return 0.5 * x * erfc(-x / sqrt(2.0));
  case TL_UNARY_SILU: return x / (1.0 + exp(-x));
  default: return NAN;
  }
}

static int is_approx(tl_unary op) {
  return op == TL_UNARY_EXP || op == TL_UNARY_LOG || op == TL_UNARY_TANH || op == TL_UNARY_ERF ||
         op == TL_UNARY_GELU || op == TL_UNARY_SILU;
}

/* Checks out against float64 op(in), element by element (approximate ops, vector levels). */
static int check_approx(const tbuf *out, const tbuf *in, tl_unary op, const char *what) {
  int64_t idx[TL_MAX_DIMS];
  int bad = 0;
  for (int64_t n = 0; n < tb_numel(in); n++) {
    tb_index(in, n, idx);
    double x = tb_get(in, idx), y = tb_get(out, idx), r = ref_unary(op, x);
    int ok;
    if (isnan(r)) ok = isnan(y);
    else if (isinf((float)r)) ok = y == (double)(float)r;
    else if (out->r.dtype == TL_BF16) ok = fabs(y - r) <= fabs(r) * (1.0 / 256) + 1e-38;
    else ok = fabs(y - r) <= 8 * ulp_f32(r);
    if (!ok && bad++ < 3)
      fprintf(stderr, "  %s %s: x=%a got %a want %a\n", what, tl_unary_name(op), x, y, r);
  }
  return bad == 0;
}

static void test_unary(void) {
  test_rng rng = {777};
  const int64_t cols[] = {1, 7, 15, 16, 17, 33, 100};
  const tl_dtype dts[2] = {TL_F32, TL_BF16};
  for (int op = 0; op < TL_UNARY_COUNT; op++)
    for (size_t ci = 0; ci < TL_ARRAY_LEN(cols) + 2; ci++)
      for (int sd = 0; sd < 2; sd++)
        for (int dd = 0; dd < 2; dd++) {
          tl_unary u = (tl_unary)op;
          int three = ci == TL_ARRAY_LEN(cols), cstride = ci == TL_ARRAY_LEN(cols) + 1 ? 2 : 1;
          int64_t shape3[3] = {2, 3, 19}, shape2[2] = {3, ci < TL_ARRAY_LEN(cols) ? cols[ci] : 21};
          int nd = three ? 3 : 2;
          const int64_t *shape = three ? shape3 : shape2;
          tbuf src = tb_rm(dts[sd], nd, shape, 5, 1);
          double lo = -12, hi = 12;
          if (u == TL_UNARY_EXP) lo = -110, hi = 95;
          fill_mixed(&src, &rng, lo, hi, 1);
          tbuf out[3];
          for (int l = 0; l < g_nl; l++) {
            out[l] = tb_rm(dts[dd], nd, shape, 3, cstride);
            un_args a = {&out[l].r, &src.r, u};
            tl_status s = in_body(g_ctx[l], run_unary, &a);
            CHECK(s == TL_OK, "unary %s on %s: %s", tl_unary_name(u), g_name[l], tl_ctx_error(g_ctx[l]));
            CHECK(tb_gaps_intact(&out[l]), "unary %s on %s: gaps written", tl_unary_name(u), g_name[l]);
            if (l == 0) continue;
            if (is_approx(u)) {
              CHECK(check_approx(&out[l], &src, u, g_name[l]), "unary %s %s->%s cols %lld on %s", tl_unary_name(u),
                    tl_dtype_name(dts[sd]), tl_dtype_name(dts[dd]), (long long)shape[nd - 1], g_name[l]);
            } else {
              CHECK(same_bits(&out[l], &out[0], 0), "unary %s %s->%s cols %lld on %s differs from scalar",
                    tl_unary_name(u), tl_dtype_name(dts[sd]), tl_dtype_name(dts[dd]), (long long)shape[nd - 1],
                    g_name[l]);
            }
          }
          /* in place, same dtype: equal to the out-of-place result of the same level */
          if (sd == dd && cstride == 1)
            for (int l = 1; l < g_nl; l++) {
              tbuf ip = tb_rm(dts[sd], nd, shape, 5, 1);
              memcpy(ip.mem, src.mem, (size_t)src.nelem * tl_dtype_size(dts[sd]));
              un_args a = {&ip.r, &ip.r, u};
              in_body(g_ctx[l], run_unary, &a);
              double *v1 = tb_values(&ip), *v2 = tb_values(&out[l]);
              int eq = 1;
              for (int64_t i = 0; i < tb_numel(&ip); i++) eq &= v1[i] == v2[i] || (isnan(v1[i]) && isnan(v2[i]));
              CHECK(eq, "unary %s in place on %s", tl_unary_name(u), g_name[l]);
              free(v1), free(v2);
              tb_free(&ip);
            }
          for (int l = 0; l < g_nl; l++) tb_free(&out[l]);
          tb_free(&src);
        }
}

/* The dispatch itself: silu(-95) is -0 in the reference's f32 formula and -95*e^-95 (a
 * denormal) on the vector paths, so the result shows which path ran. */
static void test_dispatch(void) {
  float x[16], y[16];
  for (int i = 0; i < 16; i++) x[i] = -95.0f;
  tbuf s = tb_rm2(TL_F32, 1, 16, 0);
  memcpy(s.mem, x, sizeof x);
  for (int l = 0; l < g_nl; l++) {
    tbuf d = tb_rm2(TL_F32, 1, 16, 0);
    un_args a = {&d.r, &s.r, TL_UNARY_SILU};
    CHECK(in_body(g_ctx[l], run_unary, &a) == TL_OK, "silu on %s", g_name[l]);
    memcpy(y, d.mem, sizeof y);
    if (l == 0)
      CHECK(y[0] == 0.0f && signbit(y[0]), "a scalar-capped context ran the reference (%a)", (double)y[0]);
    else
      CHECK(y[0] < 0.0f && y[15] < 0.0f, "the %s context ran its vector path (%a)", g_name[l], (double)y[0]);
    tb_free(&d);
  }
  tb_free(&s);
  CHECK(tl_tile_impl_at(TL_ISA_SCALAR)->unary != NULL, "scalar registered");
  for (int isa = TL_ISA_AVX2; isa <= TL_ISA_AVX512; isa++) {
    if (isa == TL_ISA_AVX2VNNI) continue; /* a dot only: its other operations are avx2's */
    const tl_tile_impl *im = tl_tile_impl_at((tl_isa)isa);
    CHECK(!im || (im->fill && im->cast && im->unary && im->binary && im->reduce), "%s ops registered",
          tl_isa_name((tl_isa)isa));
  }
}

/* ---- binary ---- */

typedef struct bin_args {
  tl_ref *d, *a, *b;
  tl_binary op;
} bin_args;
static void run_binary(void *p) {
  bin_args *a = p;
  tl_tile_binary(a->d, a->a, a->b, a->op);
}

/* gelu's denormal tail, every f32 from -13.25 to -12.95 (a result below 2^-126 from about -13.0):
 * until 2026-11-26 erfc and the products were each rounded into the denormals there (8.39 ulp
 * at x = -13.0961151, found by fuzzing; test_unary's inputs stop at -12). */
static void test_gelu_tail(void) {
  const float x0 = -13.25f, x1 = -12.95f;
  int64_t n = 0;
  for (float x = x0; x < x1; x = nextafterf(x, 0.0f)) n++;
  int64_t shape[2] = {1, n};
  tbuf src = tb_rm(TL_F32, 2, shape, 0, 1);
  int64_t idx[2] = {0, 0};
  for (float x = x0; x < x1; x = nextafterf(x, 0.0f), idx[1]++) tb_set(&src, idx, x);
  for (int l = 1; l < g_nl; l++) {
    tbuf out = tb_rm(TL_F32, 2, shape, 0, 1);
    un_args a = {&out.r, &src.r, TL_UNARY_GELU};
    tl_status s = in_body(g_ctx[l], run_unary, &a);
    CHECK(s == TL_OK, "gelu tail on %s: %s", g_name[l], tl_ctx_error(g_ctx[l]));
    CHECK(check_approx(&out, &src, TL_UNARY_GELU, g_name[l]), "gelu tail (%lld values) on %s", (long long)n, g_name[l]);
    tb_free(&out);
  }
  tb_free(&src);
}

static void test_binary(void) {
  test_rng rng = {99};
  const int64_t cols[] = {1, 7, 15, 16, 17, 33, 100};
  const tl_dtype dts[2] = {TL_F32, TL_BF16};
  for (int op = 0; op < TL_BINARY_COUNT; op++)
    for (size_t ci = 0; ci < TL_ARRAY_LEN(cols); ci++)
      for (int bk = 0; bk < 5; bk++) /* b: same shape, [1, C], [C], [R, 1], [1, 1] */
        for (int dt = 0; dt < 3; dt++) { /* all f32; all bf16; a bf16, b f32, dst f32 */
          tl_binary bo = (tl_binary)op;
          int64_t R = 4, C = cols[ci];
          tl_dtype tda = dt == 0 ? TL_F32 : TL_BF16, tdb = dt == 1 ? TL_BF16 : TL_F32, tdd = dt == 1 ? TL_BF16 : TL_F32;
          (void)dts;
          tbuf a = tb_rm2(tda, R, C, 3), b;
          if (bk == 0) b = tb_rm2(tdb, R, C, 2);
          else if (bk == 1) b = tb_rm2(tdb, 1, C, 0);
          else if (bk == 2) b = tb_rm(tdb, 1, &C, 0, 1);
          else if (bk == 3) b = tb_rm2(tdb, R, 1, 1);
          else b = tb_rm2(tdb, 1, 1, 0);
          fill_mixed(&a, &rng, -5, 5, 1);
          fill_mixed(&b, &rng, -5, 5, 1);
          if (bo == TL_BINARY_DIV) { /* some zeros to divide by */
            int64_t i0[2] = {0, 0};
            tb_set(&b, i0, 0.0);
          }
          tbuf out[3];
          for (int l = 0; l < g_nl; l++) {
            out[l] = tb_rm2(tdd, R, C, 1);
            bin_args x = {&out[l].r, &a.r, &b.r, bo};
            CHECK(in_body(g_ctx[l], run_binary, &x) == TL_OK, "binary on %s: %s", g_name[l], tl_ctx_error(g_ctx[l]));
            if (l)
              CHECK(same_bits(&out[l], &out[0], bo != TL_BINARY_MAX && bo != TL_BINARY_MIN),
                    "binary %s b kind %d dtypes %d cols %lld on %s differs from scalar", tl_binary_name(bo), bk, dt,
                    (long long)C, g_name[l]);
            CHECK(tb_gaps_intact(&out[l]), "binary gaps on %s", g_name[l]);
          }
          /* in place into a (same dtype as dst) */
          if (tda == tdd)
            for (int l = 1; l < g_nl; l++) {
              tbuf ip = tb_rm2(tda, R, C, 3);
              memcpy(ip.mem, a.mem, (size_t)a.nelem * tl_dtype_size(tda));
              bin_args x = {&ip.r, &ip.r, &b.r, bo};
              in_body(g_ctx[l], run_binary, &x);
              double *v1 = tb_values(&ip), *v2 = tb_values(&out[l]);
              int eq = 1;
              for (int64_t i = 0; i < R * C; i++) eq &= v1[i] == v2[i] || (isnan(v1[i]) && isnan(v2[i]));
              CHECK(eq, "binary %s in place on %s", tl_binary_name(bo), g_name[l]);
              free(v1), free(v2);
              tb_free(&ip);
            }
          for (int l = 0; l < g_nl; l++) tb_free(&out[l]);
          tb_free(&a);
          tb_free(&b);
        }
}

/* max/min return the first NaN operand, bit for bit; +0/-0 ties return a. */
static void test_binary_nan_order(void) {
  tbuf a = tb_rm2(TL_F32, 1, 20, 0), b = tb_rm2(TL_F32, 1, 20, 0);
  float av[20], bv[20];
  for (int i = 0; i < 20; i++) {
    av[i] = (float)i;
    bv[i] = (float)(20 - i);
  }
  av[1] = f_bits(0x7fc00001u), bv[1] = f_bits(0x7fc00002u); /* both NaN: a's */
  bv[2] = f_bits(0xffc00003u);                               /* b NaN */
  av[3] = f_bits(0x7fc00004u);                               /* a NaN */
  av[4] = 0.0f, bv[4] = -0.0f, av[17] = -0.0f, bv[17] = 0.0f;
  memcpy(a.mem, av, sizeof av);
  memcpy(b.mem, bv, sizeof bv);
  for (int op = TL_BINARY_MAX; op <= TL_BINARY_MIN; op++)
    for (int l = 0; l < g_nl; l++) {
      tbuf d = tb_rm2(TL_F32, 1, 20, 0);
      bin_args x = {&d.r, &a.r, &b.r, (tl_binary)op};
      in_body(g_ctx[l], run_binary, &x);
      uint32_t got[20];
      memcpy(got, d.mem, sizeof got);
      CHECK(got[1] == 0x7fc00001u && got[2] == 0xffc00003u && got[3] == 0x7fc00004u,
            "%s NaN order on %s: %08x %08x %08x", tl_binary_name((tl_binary)op), g_name[l], got[1], got[2], got[3]);
      CHECK(got[4] == 0 && got[17] == 0x80000000u, "%s zero ties on %s", tl_binary_name((tl_binary)op), g_name[l]);
      tb_free(&d);
    }
  tb_free(&a);
  tb_free(&b);
}

/* ---- reduce ---- */

typedef struct red_args {
  tl_ref *d, *s;
  int axis;
  tl_reduce op;
} red_args;
static void run_reduce(void *p) {
  red_args *a = p;
  tl_tile_reduce(a->d, a->s, a->axis, a->op);
}

static void test_reduce(void) {
  test_rng rng = {5150};
  const int64_t cols[] = {0, 1, 7, 15, 16, 17, 33, 100, 1000};
  for (int op = 0; op < TL_REDUCE_COUNT; op++)
    for (size_t ci = 0; ci < TL_ARRAY_LEN(cols); ci++)
      for (int mode = 0; mode < 6; mode++) {
        /* mode 0: last axis, keepdim; 1: last axis, dim removed; 2: axis 0 keepdim; 3: axis 0 into
         * [C]; 4: 3-D last axis; 5: last axis into bf16 */
        tl_reduce ro = (tl_reduce)op;
        int64_t R = 5, C = cols[ci];
        int64_t s3[3] = {2, 3, C};
        tbuf src = mode == 4 ? tb_rm(TL_F32, 3, s3, 4, 1) : tb_rm2(TL_F32, R, C, 4);
        fill_mixed(&src, &rng, -3, 3, 0);
        int64_t idx[3] = {0, 0, 0};
        if (C > 3 && mode != 4) { /* row 1: two NaNs (the first must win); row 2: zeros only */
          idx[0] = 1, idx[1] = 2;
          memcpy(src.mem + 4 * tb_off(&src.r, idx), &(uint32_t){0x7fc0beefu}, 4);
          idx[1] = C - 1;
          memcpy(src.mem + 4 * tb_off(&src.r, idx), &(uint32_t){0xffc0cafeu}, 4);
          for (idx[0] = 2, idx[1] = 0; idx[1] < C; idx[1]++) tb_set(&src, idx, idx[1] % 3 ? 0.0 : -0.0);
          idx[0] = 3, idx[1] = 1;
          tb_set(&src, idx, INFINITY);
        }
        int axis = mode == 2 || mode == 3 ? 0 : -1;
        tbuf out[3];
        for (int l = 0; l < g_nl; l++) {
          if (mode == 0) out[l] = tb_rm2(TL_F32, R, 1, 2);
          else if (mode == 1) out[l] = tb_rm(TL_F32, 1, &R, 0, 1);
          else if (mode == 2) out[l] = tb_rm2(TL_F32, 1, C, 0);
          else if (mode == 3) out[l] = tb_rm(TL_F32, 1, &C, 0, 1);
          else if (mode == 4) out[l] = tb_rm2(TL_F32, 2, 3, 1);
          else out[l] = tb_rm2(TL_BF16, R, 1, 0);
          red_args x = {&out[l].r, &src.r, axis, ro};
          CHECK(in_body(g_ctx[l], run_reduce, &x) == TL_OK, "reduce on %s: %s", g_name[l], tl_ctx_error(g_ctx[l]));
          CHECK(tb_gaps_intact(&out[l]), "reduce gaps on %s", g_name[l]);
          if (!l) continue;
          if (ro != TL_REDUCE_SUM || axis == 0) {
            CHECK(same_bits(&out[l], &out[0], 0), "reduce %s mode %d cols %lld on %s differs from scalar",
                  tl_reduce_name(ro), mode, (long long)C, g_name[l]);
          } else {
            /* sum over the last axis: against float64 with a tolerance */
            double *v = tb_values(&out[l]), *v0 = tb_values(&out[0]);
            int64_t nrow = tb_numel(&out[l]);
            int ok = 1;
            for (int64_t r = 0; r < nrow; r++) {
              double ref = 0, mag = 0;
              int64_t si[3];
              for (int64_t c = 0; c < C; c++) {
                if (mode == 4) si[0] = r / 3, si[1] = r % 3, si[2] = c;
                else si[0] = r, si[1] = c;
                double xv = tb_get(&src, si);
                ref += xv, mag += fabs(xv);
              }
              double tol = (mode == 5 ? 1.0 / 128 : 1e-6) * mag + 1e-30;
              if (isnan(ref) || isinf(ref)) ok &= isnan(ref) ? isnan(v[r]) : v[r] == ref;
              else ok &= fabs(v[r] - ref) <= tol && fabs(v0[r] - ref) <= tol;
            }
            CHECK(ok, "reduce sum mode %d cols %lld on %s", mode, (long long)C, g_name[l]);
            free(v), free(v0);
          }
        }
        for (int l = 0; l < g_nl; l++) tb_free(&out[l]);
        tb_free(&src);
      }
}

/* ---- fill and cast ---- */

typedef struct fill_args {
  tl_ref *r;
  double v;
} fill_args;
static void run_fill(void *p) {
  fill_args *a = p;
  tl_tile_fill(a->r, a->v);
}

static void test_fill(void) {
  const double vals[] = {1.5, NAN, -0.0, 1e10, -3.25, 1e-40};
  for (size_t di = 0; di < TL_ARRAY_LEN(all_dtypes); di++)
    for (size_t vi = 0; vi < TL_ARRAY_LEN(vals); vi++)
      for (int kind = 0; kind < 4; kind++) { /* rows with gaps; 3-D; tiled; column stride 2 */
        tl_dtype dt = all_dtypes[di];
        int64_t s3[3] = {2, 3, 37};
        tbuf out[3];
        for (int l = 0; l < g_nl; l++) {
          if (kind == 0) out[l] = tb_rm2(dt, 5, 67, 3);
          else if (kind == 1) out[l] = tb_rm(dt, 3, s3, 1, 1);
          else if (kind == 2) out[l] = tb_tiled(dt, 2, (int64_t[]){19, 21}, 8, 16, 1);
          else out[l] = tb_rm(dt, 2, (int64_t[]){3, 17}, 1, 2);
          fill_args a = {&out[l].r, vals[vi]};
          CHECK(in_body(g_ctx[l], run_fill, &a) == TL_OK, "fill on %s", g_name[l]);
          if (l)
            CHECK(same_bits(&out[l], &out[0], 0), "fill %s %g kind %d on %s differs from scalar", tl_dtype_name(dt),
                  vals[vi], kind, g_name[l]);
        }
        for (int l = 0; l < g_nl; l++) tb_free(&out[l]);
      }
}

typedef struct cast_args {
  tl_ref *d, *s;
} cast_args;
static void run_cast(void *p) {
  cast_args *a = p;
  tl_tile_cast(a->d, a->s);
}

static void test_cast(void) {
  test_rng rng = {31337};
  const tl_dtype dts[3] = {TL_F32, TL_BF16, TL_F16};
  for (int sd = 0; sd < 3; sd++)
    for (int dd = 0; dd < 3; dd++)
      for (int64_t C = 1; C <= 70; C += 23) {
        tbuf src = tb_rm2(dts[sd], 3, C, 2);
        fill_mixed(&src, &rng, -1e3, 1e3, 1);
        if (dts[sd] == TL_F32) /* bf16 rounding ties and near-ties, NaN payloads */
          for (int64_t i = 0; i < 3 * C; i += 2) {
            uint32_t u = 0x3f808000u + (uint32_t)(i % 4) * 0x8000u + (uint32_t)(i % 3 == 0);
            if (i % 11 == 0) u = 0x7f80beefu; /* signaling NaN payload */
            int64_t idx[2] = {i / C, i % C};
            memcpy(src.mem + 4 * tb_off(&src.r, idx), &u, 4);
          }
        tbuf out[3];
        for (int l = 0; l < g_nl; l++) {
          out[l] = tb_rm2(dts[dd], 3, C, 1);
          cast_args a = {&out[l].r, &src.r};
          CHECK(in_body(g_ctx[l], run_cast, &a) == TL_OK, "cast on %s", g_name[l]);
          if (l)
            CHECK(same_bits(&out[l], &out[0], 0), "cast %s->%s cols %lld on %s differs from scalar",
                  tl_dtype_name(dts[sd]), tl_dtype_name(dts[dd]), (long long)C, g_name[l]);
        }
        for (int l = 0; l < g_nl; l++) tb_free(&out[l]);
        tb_free(&src);
      }
}

int main(void) {
  make_ctxs();
  fprintf(stderr, "levels:");
  for (int l = 0; l < g_nl; l++) fprintf(stderr, " %s", g_name[l]);
  fprintf(stderr, "\n");
  RUN(test_dispatch);
  RUN(test_unary);
  RUN(test_gelu_tail);
  RUN(test_binary);
  RUN(test_binary_nan_order);
  RUN(test_reduce);
  RUN(test_fill);
  RUN(test_cast);
  for (int l = 0; l < g_nl; l++) tl_ctx_free(g_ctx[l]);
  return test_summary("tile_isa");
}
