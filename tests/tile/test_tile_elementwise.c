/* test_tile_elementwise.c — tl_tile_unary, tl_tile_binary and tl_tile_reduce outside a body (p
 * NULL), on the best registered path for this CPU (today the scalar reference). Each op against a
 * float64 reference on random data in every float dtype (and integers where the op is exact),
 * odd and 3-D shapes, strided refs (row gaps, a column stride of 2), in place, broadcasting b as
 * a row, a column, [C] and [1, 1], and NaN propagation through relu, max, min and the reductions.
 * Tolerances on ||out - ref|| / ||ref||: f32 1e-5, f16 2e-3, bf16 1e-2 (the op is in f32, then
 * the result is stored in dst's dtype). */
#include "tile_test_util.h"

/* ---- unary ---- */

static double ref_unary(tl_unary op, double x) {
  switch (op) {
  case TL_UNARY_IDENTITY: return x;
  case TL_UNARY_EXP: return exp(x);
  case TL_UNARY_LOG: return log(x);
  case TL_UNARY_TANH: return tanh(x);
  case TL_UNARY_ERF: return erf(x);
  case TL_UNARY_GELU: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
  case TL_UNARY_SILU: return x / (1.0 + exp(-x));
  case TL_UNARY_RELU: return isnan(x) ? x : x > 0 ? x : 0;
  case TL_UNARY_NEG: return -x;
  case TL_UNARY_SQRT: return sqrt(x);
  case TL_UNARY_RSQRT: return 1.0 / sqrt(x);
  case TL_UNARY_RECIP: return 1.0 / x;
  default: return NAN;
  }
}

static void test_unary(void) {
  test_rng rng = {4242};
  const tl_dtype fl[] = {TL_F32, TL_F16, TL_BF16};
  for (int op = 0; op < TL_UNARY_COUNT; op++)
    for (int si = 0; si < 3; si++)
      for (int di = 0; di < 3; di++)
        for (int shape_i = 0; shape_i < 3; shape_i++) {
          tl_unary u = (tl_unary)op;
          double lo = -4, hi = 4;
          if (u == TL_UNARY_LOG || u == TL_UNARY_SQRT || u == TL_UNARY_RSQRT) lo = 0.05;
          if (u == TL_UNARY_RECIP) lo = 0.25;
          const int64_t shapes[3][3] = {{17, 33, 0}, {1, 1, 0}, {3, 5, 7}};
          int nd = shape_i == 2 ? 3 : 2;
          tbuf src = tb_rm(fl[si], nd, shapes[shape_i], 3, 1);
          tbuf dst = tb_rm(fl[di], nd, shapes[shape_i], 1, shape_i == 1 ? 1 : 2);
          tb_rand(&src, &rng, lo, hi);
          if (u == TL_UNARY_RECIP) /* both signs */
            for (int64_t n = 0, idx[TL_MAX_DIMS]; n < tb_numel(&src); n += 2) {
              tb_index(&src, n, idx);
              tb_set(&src, idx, -tb_get(&src, idx));
            }
          double *in = tb_values(&src);
          int64_t cnt = tb_numel(&src);
          double *ref = malloc((size_t)cnt * sizeof *ref);
          for (int64_t i = 0; i < cnt; i++) ref[i] = ref_unary(u, in[i]);
          tl_tile_unary(&dst.r, &src.r, u);
          double *out = tb_values(&dst);
          double e = test_rel_err(out, ref, cnt);
          /* the op in f32 then the store into dst; identity is exact then the store */
          double tol = tol_of(fl[di]) + 1e-6;
          CHECK(e <= tol, "unary %s %s -> %s shape %d: rel err %g", tl_unary_name(u), tl_dtype_name(fl[si]),
                tl_dtype_name(fl[di]), shape_i, e);
          CHECK(tb_gaps_intact(&dst), "unary %s: gaps written", tl_unary_name(u));
          /* in place */
          tl_tile_unary(&src.r, &src.r, u);
          double *inplace = tb_values(&src);
          if (fl[si] == fl[di])
            CHECK(memcmp(inplace, out, (size_t)cnt * sizeof *out) == 0, "unary %s in place",
                  tl_unary_name(u));
          free(in);
          free(ref);
          free(out);
          free(inplace);
          tb_free(&src);
          tb_free(&dst);
        }
  /* integer dtypes, where the op is exact */
  const tl_unary exact_ops[] = {TL_UNARY_IDENTITY, TL_UNARY_NEG, TL_UNARY_RELU};
  for (size_t oi = 0; oi < TL_ARRAY_LEN(exact_ops); oi++)
    for (size_t si = 3; si < 6; si++)
      for (size_t di = 3; di < 6; di++) {
        tbuf src = tb_rm2(all_dtypes[si], 5, 9, 2), dst = tb_rm2(all_dtypes[di], 5, 9, 0);
        tb_rand(&src, &rng, 0, 0);
        tl_tile_unary(&dst.r, &src.r, exact_ops[oi]);
        int bad = 0;
        for (int64_t i = 0; i < 5; i++)
          for (int64_t j = 0; j < 9; j++)
            if (tb_get2(&dst, i, j) != quant(all_dtypes[di], ref_unary(exact_ops[oi], tb_get2(&src, i, j))))
              bad++;
        CHECK(bad == 0, "unary %s %s -> %s: %d wrong", tl_unary_name(exact_ops[oi]),
              tl_dtype_name(all_dtypes[si]), tl_dtype_name(all_dtypes[di]), bad);
        tb_free(&src);
        tb_free(&dst);
      }
  /* identity is exact on i32 values beyond f32's integers */
  tbuf s32 = tb_rm2(TL_I32, 1, 2, 0), d32 = tb_rm2(TL_I32, 1, 2, 0);
  ((int32_t *)s32.r.data)[0] = 16777217;
  ((int32_t *)s32.r.data)[1] = -2147483647;
  tl_tile_unary(&d32.r, &s32.r, TL_UNARY_IDENTITY);
  CHECK(((int32_t *)d32.r.data)[0] == 16777217 && ((int32_t *)d32.r.data)[1] == -2147483647,
        "identity i32 exact");
  tb_free(&s32);
  tb_free(&d32);
}

/* NaN in, NaN out, for every op (relu included); specials of each op. */
static void test_unary_nan(void) {
  tbuf src = tb_rm2(TL_F32, 1, 4, 0), dst = tb_rm2(TL_F32, 1, 4, 0);
  float *s = src.r.data, *d = dst.r.data;
  for (int op = 0; op < TL_UNARY_COUNT; op++) {
    s[0] = NAN;
    s[1] = -NAN;
    s[2] = 1.0f;
    s[3] = NAN;
    tl_tile_unary(&dst.r, &src.r, (tl_unary)op);
    CHECK(isnan(d[0]) && isnan(d[1]) && isnan(d[3]), "%s(NaN) = %g", tl_unary_name((tl_unary)op),
          (double)d[0]);
    CHECK(!isnan(d[2]), "%s(1) is NaN", tl_unary_name((tl_unary)op));
  }
  s[0] = -0.0f;
  s[1] = -INFINITY;
  s[2] = INFINITY;
  s[3] = -3.0f;
  tl_tile_unary(&dst.r, &src.r, TL_UNARY_RELU);
  CHECK(d[0] == 0 && d[1] == 0 && d[2] == INFINITY && d[3] == 0, "relu specials");
  tl_tile_unary(&dst.r, &src.r, TL_UNARY_EXP);
  CHECK(d[1] == 0 && d[2] == INFINITY, "exp at +-inf");
  /* silu and gelu: +inf stays, large negative values give (-)0; at -inf the formulas give NaN */
  s[1] = -200.0f;
  tl_tile_unary(&dst.r, &src.r, TL_UNARY_SILU);
  CHECK(d[1] == 0 && d[2] == INFINITY, "silu at -200, +inf: %g %g", (double)d[1], (double)d[2]);
  tl_tile_unary(&dst.r, &src.r, TL_UNARY_GELU);
  CHECK(d[1] == 0 && d[2] == INFINITY, "gelu at -200, +inf: %g %g", (double)d[1], (double)d[2]);
  /* NaN into an integer dst stores 0 */
  tbuf i8 = tb_rm2(TL_I8, 1, 4, 0);
  s[0] = NAN;
  tl_tile_unary(&i8.r, &src.r, TL_UNARY_RELU);
  CHECK(((int8_t *)i8.r.data)[0] == 0, "NaN -> i8 0");
  tb_free(&i8);
  tb_free(&src);
  tb_free(&dst);
}

/* ---- binary ---- */

static double ref_binary(tl_binary op, double x, double y) {
  switch (op) {
  case TL_BINARY_ADD: return x + y;
  case TL_BINARY_SUB: return x - y;
  case TL_BINARY_MUL: return x * y;
  case TL_BINARY_DIV: return x / y;
  case TL_BINARY_MAX: return isnan(x) || isnan(y) ? NAN : x > y ? x : y;
  case TL_BINARY_MIN: return isnan(x) || isnan(y) ? NAN : x < y ? x : y;
  default: return NAN;
  }
}

/* b's shape for broadcast mode bm against dst [.., R, C]: 0 same, 1 [.., 1, C], 2 [C], 3 [.., R, 1],
 * 4 [.., 1, 1]; returns b's ndim. */
static int bshape(int bm, int nd, const int64_t *dsh, int64_t *out) {
  if (bm == 2) {
    out[0] = dsh[nd - 1];
    return 1;
  }
  for (int d = 0; d < nd; d++) out[d] = dsh[d];
  if (bm == 1 || bm == 4) out[nd - 2] = 1;
  if (bm == 3 || bm == 4) out[nd - 1] = 1;
  return nd;
}

/* The element of b that dst index idx reads under mode bm. */
static double bget(const tbuf *b, int bm, int nd, const int64_t *idx) {
  int64_t bi[TL_MAX_DIMS];
  if (bm == 2) {
    bi[0] = idx[nd - 1];
    return tb_get(b, bi);
  }
  for (int d = 0; d < nd; d++) bi[d] = b->r.shape[d] == 1 ? 0 : idx[d];
  return tb_get(b, bi);
}

static void test_binary(void) {
  test_rng rng = {99};
  const tl_dtype dts[] = {TL_F32, TL_BF16, TL_F16, TL_I8, TL_I32};
  const int64_t shapes[3][3] = {{17, 33, 0}, {1, 7, 0}, {3, 5, 4}};
  for (int op = 0; op < TL_BINARY_COUNT; op++)
    for (size_t ti = 0; ti < TL_ARRAY_LEN(dts); ti++)
      for (int bm = 0; bm < 5; bm++)
        for (int si = 0; si < 3; si++) {
          tl_binary o = (tl_binary)op;
          tl_dtype dt = dts[ti];
          if (is_int(dt) && o == TL_BINARY_DIV) continue; /* f32 division then rounding: not exact */
          int nd = si == 2 ? 3 : 2;
          int64_t bsh[TL_MAX_DIMS];
          int bnd = bshape(bm, nd, shapes[si], bsh);
          tbuf dst = tb_rm(dt, nd, shapes[si], 2, 1), a = tb_rm(dt, nd, shapes[si], 1, 1);
          tbuf b = tb_rm(ti == 0 ? TL_BF16 : dt, bnd, bsh, 3, bm == 2 ? 2 : 1); /* f32 dst with a bf16 b */
          tb_rand(&a, &rng, -4, 4);
          tb_rand(&b, &rng, 0.5, 4);
          if (!is_int(dt)) /* both signs for b, away from 0 for div */
            for (int64_t n = 0, idx[TL_MAX_DIMS]; n < tb_numel(&b); n += 3) {
              tb_index(&b, n, idx);
              tb_set(&b, idx, -tb_get(&b, idx));
            }
          int64_t cnt = tb_numel(&dst), idx[TL_MAX_DIMS];
          double *ref = malloc((size_t)cnt * sizeof *ref);
          for (int64_t n = 0; n < cnt; n++) {
            tb_index(&dst, n, idx);
            ref[n] = ref_binary(o, tb_get(&a, idx), bget(&b, bm, nd, idx));
            if (is_int(dt)) ref[n] = quant(dt, ref[n]);
          }
          tl_tile_binary(&dst.r, &a.r, &b.r, o);
          double *out = tb_values(&dst);
          double e = test_rel_err(out, ref, cnt);
          CHECK(e <= tol_of(dt) + 1e-6, "binary %s %s mode %d shape %d: rel err %g", tl_binary_name(o),
                tl_dtype_name(dt), bm, si, e);
          CHECK(tb_gaps_intact(&dst), "binary %s: gaps written", tl_binary_name(o));
          /* dst aliasing a */
          tl_tile_binary(&a.r, &a.r, &b.r, o);
          double *out2 = tb_values(&a);
          if (a.r.dtype == dst.r.dtype)
            CHECK(memcmp(out2, out, (size_t)cnt * sizeof *out) == 0, "binary %s: dst = a differs",
                  tl_binary_name(o));
          free(ref);
          free(out);
          free(out2);
          tb_free(&dst);
          tb_free(&a);
          tb_free(&b);
        }
}

static void test_binary_nan(void) {
  tbuf a = tb_rm2(TL_F32, 1, 4, 0), b = tb_rm2(TL_F32, 1, 4, 0), d = tb_rm2(TL_F32, 1, 4, 0);
  float *pa = a.r.data, *pb = b.r.data, *pd = d.r.data;
  pa[0] = NAN, pb[0] = 1;
  pa[1] = 1, pb[1] = NAN;
  pa[2] = NAN, pb[2] = NAN;
  pa[3] = -1, pb[3] = 2;
  for (int op = 0; op < TL_BINARY_COUNT; op++) {
    tl_tile_binary(&d.r, &a.r, &b.r, (tl_binary)op);
    CHECK(isnan(pd[0]) && isnan(pd[1]) && isnan(pd[2]) && !isnan(pd[3]), "%s with NaN: %g %g %g",
          tl_binary_name((tl_binary)op), (double)pd[0], (double)pd[1], (double)pd[2]);
  }
  tb_free(&a);
  tb_free(&b);
  tb_free(&d);
}

/* ---- reduce ---- */

static void test_reduce(void) {
  test_rng rng = {31337};
  const struct {
    tl_dtype src, dst;
  } pairs[] = {{TL_F32, TL_F32}, {TL_BF16, TL_F32}, {TL_F16, TL_BF16}, {TL_I8, TL_I32},
               {TL_U8, TL_I32},  {TL_U8, TL_I8},    {TL_F32, TL_I32},  {TL_I32, TL_F32}};
  const int64_t shapes[3][3] = {{17, 33, 0}, {1, 5, 0}, {4, 7, 6}};
  for (size_t pi = 0; pi < TL_ARRAY_LEN(pairs); pi++)
    for (int op = 0; op < TL_REDUCE_COUNT; op++)
      for (int si = 0; si < 3; si++)
        for (int axis = -1; axis < (si == 2 ? 3 : 2); axis++)
          for (int keep = 0; keep < 2; keep++) {
            tl_reduce o = (tl_reduce)op;
            int nd = si == 2 ? 3 : 2, ax = axis < 0 ? axis + nd : axis;
            int64_t dsh[TL_MAX_DIMS];
            int dnd = 0;
            for (int d = 0; d < nd; d++) {
              if (d == ax && !keep) continue;
              dsh[dnd++] = d == ax ? 1 : shapes[si][d];
            }
            tbuf src = tb_rm(pairs[pi].src, nd, shapes[si], 2, 1), dst = tb_rm(pairs[pi].dst, dnd, dsh, 1, 1);
            tb_rand(&src, &rng, -3, 3);
            int64_t cnt = tb_numel(&dst), idx[TL_MAX_DIMS], sidx[TL_MAX_DIMS];
            double *ref = malloc((size_t)cnt * sizeof *ref);
            for (int64_t n = 0; n < cnt; n++) {
              tb_index(&dst, n, idx);
              for (int d = 0; d < nd; d++) sidx[d] = keep || d < ax ? idx[d] : d > ax ? idx[d - 1] : 0;
              double r = o == TL_REDUCE_SUM ? 0 : o == TL_REDUCE_MAX ? -INFINITY : INFINITY;
              for (int64_t k = 0; k < shapes[si][ax]; k++) {
                sidx[ax] = k;
                double x = tb_get(&src, sidx);
                r = o == TL_REDUCE_SUM ? r + x : o == TL_REDUCE_MAX ? (x > r ? x : r) : (x < r ? x : r);
              }
              ref[n] = is_int(pairs[pi].dst) || o != TL_REDUCE_SUM ? quant(pairs[pi].dst, r) : r;
            }
            tl_tile_reduce(&dst.r, &src.r, axis, o);
            double *out = tb_values(&dst);
            int exact = is_int(pairs[pi].dst) || o != TL_REDUCE_SUM;
            /* a float sum into an integer dst is an f32 sum, rounded: allow 1 off */
            int slack = o == TL_REDUCE_SUM && is_int(pairs[pi].dst) && !is_int(pairs[pi].src);
            if (exact) {
              int bad = 0;
              for (int64_t n = 0; n < cnt; n++)
                if (fabs(out[n] - ref[n]) > (slack ? 1 : 0)) bad++;
              CHECK(bad == 0, "reduce %s %s -> %s shape %d axis %d keep %d: %d wrong", tl_reduce_name(o),
                    tl_dtype_name(pairs[pi].src), tl_dtype_name(pairs[pi].dst), si, axis, keep, bad);
            } else {
              double e = test_rel_err(out, ref, cnt);
              CHECK(e <= tol_of(pairs[pi].dst) + 1e-6, "reduce %s %s -> %s shape %d axis %d: rel err %g",
                    tl_reduce_name(o), tl_dtype_name(pairs[pi].src), tl_dtype_name(pairs[pi].dst), si, axis,
                    e);
            }
            CHECK(tb_gaps_intact(&dst), "reduce: gaps written");
            free(ref);
            free(out);
            tb_free(&src);
            tb_free(&dst);
          }
}

static void test_reduce_special(void) {
  /* NaN propagates through sum, max and min */
  tbuf src = tb_rm2(TL_F32, 2, 4, 0), dst = tb_rm2(TL_F32, 2, 1, 0);
  float *s = src.r.data, *d = dst.r.data;
  const float row[8] = {1, NAN, 3, -2, 5, 6, 7, 8};
  memcpy(s, row, sizeof row);
  for (int op = 0; op < TL_REDUCE_COUNT; op++) {
    tl_tile_reduce(&dst.r, &src.r, 1, (tl_reduce)op);
    CHECK(isnan(d[0]) && !isnan(d[1]), "%s over a NaN: %g", tl_reduce_name((tl_reduce)op), (double)d[0]);
  }
  tl_tile_reduce(&dst.r, &src.r, -1, TL_REDUCE_MAX);
  CHECK(d[1] == 8, "max 8");
  tl_tile_reduce(&dst.r, &src.r, -1, TL_REDUCE_MIN);
  CHECK(d[1] == 5, "min 5");
  tb_free(&src);
  tb_free(&dst);
  /* u8 sums saturate into i8; i8 sums stay exact in i32 */
  tbuf u = tb_rm2(TL_U8, 1, 100, 0), i8 = tb_rm2(TL_I8, 1, 1, 0), i32 = tb_rm2(TL_I32, 1, 1, 0);
  memset(u.r.data, 200, 100);
  tl_tile_reduce(&i8.r, &u.r, 1, TL_REDUCE_SUM);
  CHECK(((int8_t *)i8.r.data)[0] == 127, "u8 sum into i8 saturates");
  tl_tile_reduce(&i32.r, &u.r, 1, TL_REDUCE_SUM);
  CHECK(((int32_t *)i32.r.data)[0] == 20000, "u8 sum into i32");
  tb_free(&u);
  tb_free(&i8);
  tb_free(&i32);
  /* an empty axis: sum 0, max -inf, min +inf */
  int64_t esh[2] = {3, 0}, dsh[1] = {3};
  tbuf e = tb_rm(TL_F32, 2, esh, 0, 1), ed = tb_rm(TL_F32, 1, dsh, 0, 1);
  tl_tile_reduce(&ed.r, &e.r, 1, TL_REDUCE_SUM);
  CHECK(((float *)ed.r.data)[2] == 0, "empty sum");
  tl_tile_reduce(&ed.r, &e.r, 1, TL_REDUCE_MAX);
  CHECK(((float *)ed.r.data)[2] == -INFINITY, "empty max");
  tb_free(&e);
  tb_free(&ed);
  /* 1-D to 0-D */
  int64_t sh1[1] = {9};
  tbuf v = tb_rm(TL_F32, 1, sh1, 0, 3), sc = tb_rm(TL_F32, 0, NULL, 0, 1);
  for (int i = 0; i < 9; i++) ((float *)v.r.data)[i * 3] = (float)i;
  tl_tile_reduce(&sc.r, &v.r, 0, TL_REDUCE_SUM);
  CHECK(*(float *)sc.r.data == 36.0f, "1-D sum into a scalar: %g", (double)*(float *)sc.r.data);
  tb_free(&v);
  tb_free(&sc);
}

int main(void) {
  RUN(test_unary);
  RUN(test_unary_nan);
  RUN(test_binary);
  RUN(test_binary_nan);
  RUN(test_reduce);
  RUN(test_reduce_special);
  return test_summary("tile_elementwise");
}
