/* test_tile_scalar.c — tl_tile_dot, tl_tile_fill, tl_tile_cast, the op names and misuse, called
 * outside a body (p NULL), which runs the best registered path for this CPU (today the scalar
 * reference, src/tile/scalar/). Every result is compared with a float64 reference computed here
 * from the values actually stored in the inputs, on random data, odd shapes, strided and tiled
 * refs and every dtype; outputs start poisoned and the gaps of strided refs and the padding of
 * tiled refs must stay poisoned. Misuse outside a body must leave outputs untouched. The
 * elementwise ops and reductions are in test_tile_elementwise.c. */
#include "tile_test_util.h"

/* ---- names ---- */

static void test_names(void) {
  CHECK(strcmp(tl_unary_name(TL_UNARY_EXP), "exp") == 0, "exp");
  CHECK(strcmp(tl_unary_name(TL_UNARY_GELU), "gelu") == 0, "gelu");
  CHECK(strcmp(tl_unary_name(TL_UNARY_RECIP), "recip") == 0, "recip");
  CHECK(strcmp(tl_unary_name(TL_UNARY_IDENTITY), "identity") == 0, "identity");
  CHECK(strcmp(tl_unary_name((tl_unary)TL_UNARY_COUNT), "unknown") == 0, "unary out of range");
  CHECK(strcmp(tl_unary_name((tl_unary)-1), "unknown") == 0, "unary -1");
  CHECK(strcmp(tl_binary_name(TL_BINARY_ADD), "add") == 0, "add");
  CHECK(strcmp(tl_binary_name(TL_BINARY_MIN), "min") == 0, "min");
  CHECK(strcmp(tl_binary_name((tl_binary)TL_BINARY_COUNT), "unknown") == 0, "binary out of range");
  CHECK(strcmp(tl_reduce_name(TL_REDUCE_SUM), "sum") == 0, "sum");
  CHECK(strcmp(tl_reduce_name(TL_REDUCE_MAX), "max") == 0, "max");
  CHECK(strcmp(tl_reduce_name((tl_reduce)99), "unknown") == 0, "reduce out of range");
  for (int i = 0; i < TL_UNARY_COUNT; i++)
    CHECK(strcmp(tl_unary_name((tl_unary)i), "unknown") != 0, "unary %d", i);
  CHECK(tl_tile_impl_at(TL_ISA_SCALAR) == &tl_tile_scalar_impl, "scalar registered");
  CHECK(tl_tile_impl_at((tl_isa)TL_ISA_COUNT) == NULL && tl_tile_impl_at((tl_isa)-1) == NULL,
        "outside the table");
}

/* ---- dot ---- */

typedef struct dot_case {
  tl_dtype ta, tb;
  int64_t m, n, k;
  unsigned flags;
  int a_tiled, b_tiled, vnni; /* b_tiled: tiles with this vnni */
} dot_case;

static void run_dot(const dot_case *c, test_rng *rng) {
  int integer = is_int(c->ta);
  tl_dtype tacc = integer ? TL_I32 : TL_F32;
  int tb = (c->flags & TL_DOT_TRANS_B) != 0;
  tbuf acc = tb_rm2(tacc, c->m, c->n, 3);
  int64_t ash[2] = {c->m, c->k}, bsh[2] = {tb ? c->n : c->k, tb ? c->k : c->n};
  tbuf a = c->a_tiled ? tb_tiled(c->ta, 2, ash, 4, 8, 1) : tb_rm(c->ta, 2, ash, 5, 1);
  int v = c->vnni;
  tbuf b = c->b_tiled ? tb_tiled(c->tb, 2, bsh, 4 * v, 5, v) : tb_rm(c->tb, 2, bsh, 2, 1);
  tb_rand(&a, rng, -2, 2);
  tb_rand(&b, rng, -2, 2);
  if (c->flags & TL_DOT_ACCUMULATE) tb_rand(&acc, rng, -3, 3);
  if (integer && (c->flags & TL_DOT_ACCUMULATE)) { /* i32 random values are +-1e6: fine */
  }
  int64_t mn = c->m * c->n;
  double *ref = malloc((size_t)(mn ? mn : 1) * sizeof *ref),
         *out = malloc((size_t)(mn ? mn : 1) * sizeof *out);
  for (int64_t i = 0; i < c->m; i++)
    for (int64_t j = 0; j < c->n; j++) {
      double s = (c->flags & TL_DOT_ACCUMULATE) ? tb_get2(&acc, i, j) : 0.0;
      for (int64_t k = 0; k < c->k; k++)
        s += tb_get2(&a, i, k) * (tb ? tb_get2(&b, j, k) : tb_get2(&b, k, j));
      ref[i * c->n + j] = s;
    }
  tl_tile_dot(NULL, &acc.r, &a.r, &b.r, c->flags);
  int exact = 1;
  for (int64_t i = 0; i < c->m; i++)
    for (int64_t j = 0; j < c->n; j++) {
      out[i * c->n + j] = tb_get2(&acc, i, j);
      if (out[i * c->n + j] != ref[i * c->n + j]) exact = 0;
    }
  char what[160];
  snprintf(what, sizeof what, "dot %s x %s %lldx%lldx%lld flags %u a_tiled %d b_tiled %d vnni %d",
           tl_dtype_name(c->ta), tl_dtype_name(c->tb), (long long)c->m, (long long)c->n, (long long)c->k,
           c->flags, c->a_tiled, c->b_tiled, c->vnni);
  if (integer) {
    CHECK(exact, "%s: not exact", what);
  } else {
    double e = test_rel_err(out, ref, mn);
    CHECK(e <= 1e-5, "%s: rel err %g", what, e);
  }
  CHECK(tb_gaps_intact(&acc), "%s: acc gaps written", what);
  CHECK(tb_gaps_intact(&a) && tb_gaps_intact(&b), "%s: inputs written", what);
  free(ref);
  free(out);
  tb_free(&acc);
  tb_free(&a);
  tb_free(&b);
}

static void test_dot(void) {
  test_rng rng = {12345};
  const tl_dtype pairs[][2] = {{TL_F32, TL_F32}, {TL_BF16, TL_BF16}, {TL_F16, TL_F16}, {TL_I8, TL_I8},
                               {TL_U8, TL_I8},   {TL_I8, TL_U8},     {TL_U8, TL_U8}};
  const int64_t sizes[][3] = {{1, 1, 1},   {17, 33, 5}, {3, 1, 13},  {1, 7, 32},
                              {8, 16, 64}, {5, 3, 0},   {13, 11, 37}};
  int ncases = 0;
  for (size_t p = 0; p < TL_ARRAY_LEN(pairs); p++)
    for (size_t s = 0; s < TL_ARRAY_LEN(sizes); s++)
      for (unsigned flags = 0; flags < 4; flags++)
        for (int layout = 0; layout < 5; layout++) { /* 0 row-major, 1 a tiled, 2..4 b tiled vnni 1/2/4 */
          if (layout >= 2 && (flags & TL_DOT_TRANS_B)) continue;
          dot_case c = {pairs[p][0], pairs[p][1], sizes[s][0],
                        sizes[s][1], sizes[s][2], flags,
                        layout == 1, layout >= 2, layout == 2 ? 1 : layout == 3 ? 2 : 4};
          if (layout < 2) c.vnni = 1;
          run_dot(&c, &rng);
          ncases++;
        }
  CHECK(ncases > 400, "%d cases", ncases);
}

/* bf16 denormals count as zero in dot (as AMX / AVX512-BF16); f16 denormals are exact. */
static void test_dot_denormals(void) {
  tbuf a = tb_rm2(TL_BF16, 1, 4, 0), b = tb_rm2(TL_BF16, 4, 1, 0), acc = tb_rm2(TL_F32, 1, 1, 0);
  uint16_t *ah = (uint16_t *)a.r.data, *bh = (uint16_t *)b.r.data;
  ah[0] = 0x0001; /* smallest positive denormal */
  ah[1] = 0x807f; /* largest negative denormal */
  ah[2] = 0x0080; /* smallest normal: 2^-126 */
  ah[3] = 0x3f80; /* 1 */
  bh[0] = 0x7f00; /* 2^127 */
  bh[1] = 0x7f00;
  bh[2] = 0x7f00;
  bh[3] = 0x3f80;
  tl_tile_dot(NULL, &acc.r, &a.r, &b.r, 0);
  float got = *(float *)acc.r.data;
  CHECK(got == 3.0f, "bf16 denormals not flushed: %a", (double)got); /* 0 + 0 + 2^-126 * 2^127 + 1 */
  tb_free(&a);
  tb_free(&b);
  tb_free(&acc);

  tbuf fa = tb_rm2(TL_F16, 1, 2, 0), fb = tb_rm2(TL_F16, 2, 1, 0), facc = tb_rm2(TL_F32, 1, 1, 0);
  uint16_t *fah = (uint16_t *)fa.r.data, *fbh = (uint16_t *)fb.r.data;
  fah[0] = 0x0001; /* 2^-24 */
  fah[1] = 0x3c00; /* 1 */
  fbh[0] = 0x7800; /* 2^15 */
  fbh[1] = 0x3c00;
  tl_tile_dot(NULL, &facc.r, &fa.r, &fb.r, 0);
  got = *(float *)facc.r.data;
  CHECK(got == 1.0f + 0x1p-9f, "f16 denormal: %a", (double)got);
  tb_free(&fa);
  tb_free(&fb);
  tb_free(&facc);
}

/* Integer dot: exact int64 sums saturated into i32 at the store. */
static void test_dot_int_saturate(void) {
  tbuf a = tb_rm2(TL_I8, 2, 4, 0), b = tb_rm2(TL_U8, 4, 1, 0), acc = tb_rm2(TL_I32, 2, 1, 0);
  for (int k = 0; k < 4; k++) {
    ((int8_t *)a.r.data)[k] = 127;
    ((int8_t *)a.r.data)[4 + k] = -128;
    ((uint8_t *)b.r.data)[k] = 255;
  }
  ((int32_t *)acc.r.data)[0] = INT32_MAX - 1000;
  ((int32_t *)acc.r.data)[1] = INT32_MIN + 1000;
  tl_tile_dot(NULL, &acc.r, &a.r, &b.r, TL_DOT_ACCUMULATE);
  CHECK(((int32_t *)acc.r.data)[0] == INT32_MAX, "saturate high: %d", ((int32_t *)acc.r.data)[0]);
  CHECK(((int32_t *)acc.r.data)[1] == INT32_MIN, "saturate low: %d", ((int32_t *)acc.r.data)[1]);
  tl_tile_dot(NULL, &acc.r, &a.r, &b.r, 0);
  CHECK(((int32_t *)acc.r.data)[0] == 4 * 127 * 255 && ((int32_t *)acc.r.data)[1] == -4 * 128 * 255,
        "overwrite");
  tb_free(&a);
  tb_free(&b);
  tb_free(&acc);
}

/* ---- fill ---- */

static void test_fill(void) {
  const double vals[] = {1.5, -2.25, 300, -300, 2.5, NAN, INFINITY, -1e10, 0.1};
  for (size_t t = 0; t < TL_ARRAY_LEN(all_dtypes); t++) {
    tl_dtype dt = all_dtypes[t];
    for (size_t vi = 0; vi < TL_ARRAY_LEN(vals); vi++) {
      double v = vals[vi], want = quant(dt, v);
      int64_t sh[3] = {3, 7, 5};
      tbuf b = tb_rm(dt, 3, sh, 2, vi % 2 ? 2 : 1); /* half with a column stride of 2 */
      tl_tile_fill(&b.r, v);
      int ok = 1;
      int64_t idx[TL_MAX_DIMS];
      for (int64_t n = 0; n < tb_numel(&b); n++) {
        tb_index(&b, n, idx);
        double g = tb_get(&b, idx);
        if (!(g == want || (isnan(g) && isnan(want)))) ok = 0;
      }
      CHECK(ok, "fill %s with %g: want %g", tl_dtype_name(dt), v, want);
      CHECK(tb_gaps_intact(&b), "fill %s: gaps written", tl_dtype_name(dt));
      tb_free(&b);
      /* tiled: the whole padded storage */
      int64_t tsh[3] = {2, 5, 7};
      tbuf tbf = tb_tiled(dt, 3, tsh, 4, 3, dt == TL_I8 || dt == TL_U8 ? 4 : 2);
      tl_tile_fill(&tbf.r, v);
      ok = 1;
      for (int64_t e = 0; e < tbf.nelem; e++) {
        double g = tl_load_f64(tbf.r.data, dt, e);
        if (!(g == want || (isnan(g) && isnan(want)))) ok = 0;
      }
      CHECK(ok, "fill tiled %s with %g", tl_dtype_name(dt), v);
      tb_free(&tbf);
    }
  }
  /* hand-checked conversions: saturation, round to nearest even, NaN -> 0 */
  struct {
    tl_dtype dt;
    double v, want;
  } hc[] = {{TL_I8, 300, 127},
            {TL_I8, -300, -128},
            {TL_I8, 2.5, 2},
            {TL_I8, 3.5, 4},
            {TL_I8, NAN, 0},
            {TL_U8, -5, 0},
            {TL_U8, 255.7, 255},
            {TL_U8, 254.5, 254},
            {TL_I32, 1e10, 2147483647.0},
            {TL_I32, -1e10, -2147483648.0},
            {TL_I32, NAN, 0},
            {TL_F32, 0.1, (float)0.1}};
  for (size_t i = 0; i < TL_ARRAY_LEN(hc); i++) {
    tbuf b = tb_rm2(hc[i].dt, 2, 3, 1);
    tl_tile_fill(&b.r, hc[i].v);
    CHECK(tb_get2(&b, 1, 2) == hc[i].want && tb_get2(&b, 0, 0) == hc[i].want, "fill %s %g: %g, want %g",
          tl_dtype_name(hc[i].dt), hc[i].v, tb_get2(&b, 1, 2), hc[i].want);
    tb_free(&b);
  }
  /* 0 dims (a scalar) and an empty block */
  tbuf s = tb_rm(TL_F32, 0, NULL, 0, 1);
  tl_tile_fill(&s.r, 4.0);
  CHECK(*(float *)s.r.data == 4.0f, "0-dim fill");
  tb_free(&s);
  int64_t esh[2] = {0, 5};
  tbuf e = tb_rm(TL_F32, 2, esh, 0, 1);
  tl_tile_fill(&e.r, 4.0);
  CHECK(e.mem[0] == POISON, "empty fill writes nothing");
  tb_free(&e);
}

/* ---- cast ---- */

static void test_cast(void) {
  test_rng rng = {777};
  for (size_t s = 0; s < TL_ARRAY_LEN(all_dtypes); s++)
    for (size_t d = 0; d < TL_ARRAY_LEN(all_dtypes); d++)
      for (int lay = 0; lay < 3; lay++) { /* 0 rm -> rm, 1 rm -> tiled, 2 tiled -> rm */
        tl_dtype ts = all_dtypes[s], td = all_dtypes[d];
        int64_t sh[3] = {2, 17, 33};
        tbuf src = lay == 2 ? tb_tiled(ts, 3, sh, 8, 16, 2) : tb_rm(ts, 3, sh, 3, 1);
        tbuf dst = lay == 1 ? tb_tiled(td, 3, sh, 4, 16, 4) : tb_rm(td, 3, sh, 1, 2);
        tb_rand(&src, &rng, -300, 300);
        tl_tile_cast(&dst.r, &src.r);
        int bad = 0;
        int64_t idx[TL_MAX_DIMS];
        for (int64_t n = 0; n < tb_numel(&src); n++) {
          tb_index(&src, n, idx);
          double want = quant(td, tb_get(&src, idx)), got = tb_get(&dst, idx);
          if (got != want) bad++;
        }
        CHECK(bad == 0, "cast %s -> %s layout %d: %d wrong", tl_dtype_name(ts), tl_dtype_name(td), lay, bad);
        CHECK(tb_gaps_intact(&dst), "cast %s -> %s layout %d: gaps/padding written", tl_dtype_name(ts),
              tl_dtype_name(td), lay);
        tb_free(&src);
        tb_free(&dst);
      }
  /* saturation and rounding from f32, by hand */
  const float in[] = {300.f,    -300.f,    127.5f, 126.5f, -128.5f, NAN,
                      INFINITY, -INFINITY, 0.5f,   1.5f,   -0.5f,   3e9f};
  const double want_i8[] = {127, -128, 127, 126, -128, 0, 127, -128, 0, 2, 0, 127};
  const double want_u8[] = {255, 0, 128, 126, 0, 0, 255, 0, 0, 2, 0, 255};
  const double want_i32[] = {300,          -300,          128, 126, -128, 0,
                             2147483647.0, -2147483648.0, 0,   2,   0,    2147483647.0};
  int64_t n = (int64_t)TL_ARRAY_LEN(in);
  tbuf src = tb_rm2(TL_F32, 1, n, 0);
  memcpy(src.r.data, in, sizeof in);
  const tl_dtype ds[3] = {TL_I8, TL_U8, TL_I32};
  const double *wants[3] = {want_i8, want_u8, want_i32};
  for (int t = 0; t < 3; t++) {
    tbuf dst = tb_rm2(ds[t], 1, n, 0);
    tl_tile_cast(&dst.r, &src.r);
    for (int64_t j = 0; j < n; j++)
      CHECK(tb_get2(&dst, 0, j) == wants[t][j], "cast f32 %g -> %s: %g, want %g", (double)in[j],
            tl_dtype_name(ds[t]), tb_get2(&dst, 0, j), wants[t][j]);
    tb_free(&dst);
  }
  tb_free(&src);
}

/* ---- misuse outside a body: nothing is touched ---- */

/* Snapshot of a buffer's bytes. */
typedef struct snap {
  unsigned char *bytes;
  size_t n;
} snap;
static snap snap_take(const tbuf *b) {
  snap s = {malloc((size_t)b->nelem * tl_dtype_size(b->r.dtype)),
            (size_t)b->nelem * tl_dtype_size(b->r.dtype)};
  memcpy(s.bytes, b->mem, s.n);
  return s;
}
static int snap_same(snap *s, const tbuf *b) {
  int same = memcmp(s->bytes, b->mem, s->n) == 0;
  free(s->bytes);
  return same;
}

static void test_misuse(void) {
  test_rng rng = {5};
  tbuf acc = tb_rm2(TL_F32, 4, 6, 1), a = tb_rm2(TL_F32, 4, 5, 0), b = tb_rm2(TL_F32, 5, 6, 0);
  tbuf bad_b = tb_rm2(TL_F32, 4, 6, 0), i8a = tb_rm2(TL_I8, 4, 5, 0), i8b = tb_rm2(TL_I8, 5, 6, 0);
  int64_t b_sh[2] = {5, 6}, a_sh[2] = {4, 5};
  tbuf bt = tb_tiled(TL_F32, 2, b_sh, 4, 4, 2), at2 = tb_tiled(TL_BF16, 2, a_sh, 4, 4, 2);
  tbuf bfb = tb_rm2(TL_BF16, 5, 6, 0);
  tb_rand(&acc, &rng, -1, 1);
  tb_rand(&a, &rng, -1, 1);
  tb_rand(&b, &rng, -1, 1);
  snap s;
#define DOT_MISUSE(what, ACC, A, B, F)                                                                       \
  do {                                                                                                       \
    s = snap_take(&ACC);                                                                                     \
    tl_tile_dot(NULL, &ACC.r, A, B, F);                                                                      \
    CHECK(snap_same(&s, &ACC), "dot misuse %s touched acc", what);                                           \
  } while (0)
  DOT_MISUSE("K mismatch", acc, &a.r, &bad_b.r, 0);
  DOT_MISUSE("K mismatch transposed", acc, &a.r, &b.r, TL_DOT_TRANS_B);
  DOT_MISUSE("int acc f32", acc, &i8a.r, &i8b.r, 0);
  DOT_MISUSE("mixed float dtypes", acc, &a.r, &bfb.r, 0);
  DOT_MISUSE("float and int", acc, &a.r, &i8b.r, 0);
  DOT_MISUSE("tiled b with TRANS_B", acc, &a.r, &bt.r, TL_DOT_TRANS_B);
  DOT_MISUSE("a vnni 2", acc, &at2.r, &bfb.r, 0);
  DOT_MISUSE("unknown flag", acc, &a.r, &b.r, 8);
  DOT_MISUSE("NULL a", acc, NULL, &b.r, 0);
  DOT_MISUSE("NULL b", acc, &a.r, NULL, 0);
  tl_tile_dot(NULL, NULL, &a.r, &b.r, 0); /* must not crash */
  tl_ref a3 = a.r;
  a3.ndim = 3;
  a3.shape[2] = 1;
  DOT_MISUSE("3-D a", acc, &a3, &b.r, 0);
  tl_ref anull = a.r;
  anull.data = NULL;
  DOT_MISUSE("a without data", acc, &anull, &b.r, 0);
  tl_ref aneg = a.r;
  aneg.shape[1] = -5;
  DOT_MISUSE("negative size", acc, &aneg, &b.r, 0);
  tl_ref abad = a.r;
  abad.dtype = (tl_dtype)42;
  DOT_MISUSE("bad dtype", acc, &abad, &b.r, 0);
  tbuf acc_small = tb_rm2(TL_F32, 4, 5, 0);
  DOT_MISUSE("acc shape", acc_small, &a.r, &b.r, 0);
  tl_ref bvnni3 = bt.r;
  bvnni3.layout.vnni = 3;
  DOT_MISUSE("vnni 3", acc, &a.r, &bvnni3, 0);
  tl_ref bodd = bt.r;
  bodd.layout.tile_r = 5; /* vnni 2 does not divide 5 */
  DOT_MISUSE("vnni not dividing tile_r", acc, &a.r, &bodd, 0);
  /* acc tiled */
  int64_t acc_sh[2] = {4, 6};
  tbuf acct = tb_tiled(TL_F32, 2, acc_sh, 4, 4, 1);
  DOT_MISUSE("tiled acc", acct, &a.r, &b.r, 0);
  /* the valid call does write */
  s = snap_take(&acc);
  tl_tile_dot(NULL, &acc.r, &a.r, &b.r, 0);
  CHECK(!snap_same(&s, &acc), "valid dot wrote nothing");

  /* fill */
  tl_ref fbad = acc.r;
  fbad.dtype = TL_DTYPE_INVALID;
  s = snap_take(&acc);
  tl_tile_fill(&fbad, 1.0);
  tl_tile_fill(NULL, 1.0);
  tl_ref fnd = acc.r;
  fnd.ndim = 7;
  tl_tile_fill(&fnd, 1.0);
  CHECK(snap_same(&s, &acc), "fill misuse touched r");

  /* cast */
  s = snap_take(&acc);
  tl_tile_cast(&acc.r, &a.r);
  tl_tile_cast(&acc.r, NULL);
  CHECK(snap_same(&s, &acc), "cast misuse touched dst");

  /* unary */
  s = snap_take(&acc);
  tl_tile_unary(&acc.r, &a.r, TL_UNARY_EXP);
  tl_tile_unary(&acc.r, &bad_b.r, (tl_unary)TL_UNARY_COUNT);
  tl_tile_unary(&acct.r, &acct.r, TL_UNARY_EXP);
  CHECK(snap_same(&s, &acc), "unary misuse touched dst");
  s = snap_take(&acct);
  tl_tile_unary(&acct.r, &bad_b.r, TL_UNARY_EXP);
  CHECK(snap_same(&s, &acct), "unary on a tiled dst touched it");

  /* binary */
  int64_t col5[2] = {5, 1}, row7[1] = {7};
  tbuf bcol5 = tb_rm(TL_F32, 2, col5, 0, 1), brow7 = tb_rm(TL_F32, 1, row7, 0, 1);
  s = snap_take(&acc);
  tl_tile_binary(&acc.r, &bad_b.r, &bcol5.r, TL_BINARY_ADD); /* column of 5 for 4 rows */
  tl_tile_binary(&acc.r, &bad_b.r, &brow7.r, TL_BINARY_ADD); /* row of 7 for 6 columns */
  tl_tile_binary(&acc.r, &a.r, &bad_b.r, TL_BINARY_ADD); /* a's shape */
  tl_tile_binary(&acc.r, &bad_b.r, &bad_b.r, (tl_binary)-1); /* op */
  tl_tile_binary(&acc.r, &bad_b.r, &bt.r, TL_BINARY_ADD); /* tiled b */
  CHECK(snap_same(&s, &acc), "binary misuse touched dst");

  /* reduce */
  int64_t r4[2] = {4, 1}, r6[1] = {6};
  tbuf red4 = tb_rm(TL_F32, 2, r4, 0, 1), red6 = tb_rm(TL_F32, 1, r6, 0, 1);
  snap s4 = snap_take(&red4), s6 = snap_take(&red6);
  tl_tile_reduce(&red4.r, &acc.r, 2, TL_REDUCE_SUM); /* axis out of range */
  tl_tile_reduce(&red4.r, &acc.r, -3, TL_REDUCE_SUM);
  tl_tile_reduce(&red4.r, &acc.r, 0, TL_REDUCE_SUM); /* [4, 1] is not [1, 6] */
  tl_tile_reduce(&red6.r, &acc.r, 1, TL_REDUCE_SUM); /* [6] is not [4] */
  tl_tile_reduce(&red6.r, &acc.r, 0, (tl_reduce)7);
  CHECK(snap_same(&s4, &red4) && snap_same(&s6, &red6), "reduce misuse touched dst");
  /* and the valid forms work */
  tl_tile_reduce(&red4.r, &acc.r, 1, TL_REDUCE_MAX);
  tl_tile_reduce(&red6.r, &acc.r, 0, TL_REDUCE_MAX);
  CHECK(((float *)red4.r.data)[0] == ((float *)red4.r.data)[0] &&
            ((float *)red6.r.data)[5] == ((float *)red6.r.data)[5],
        "valid reduce wrote values");
#undef DOT_MISUSE
  tbuf *all[] = {&acc, &a,         &b,    &bad_b, &i8a,   &i8b,  &bt,  &at2,
                 &bfb, &acc_small, &acct, &bcol5, &brow7, &red4, &red6};
  for (size_t i = 0; i < TL_ARRAY_LEN(all); i++) tb_free(all[i]);
}

int main(void) {
  RUN(test_names);
  RUN(test_dot);
  RUN(test_dot_denormals);
  RUN(test_dot_int_saturate);
  RUN(test_fill);
  RUN(test_cast);
  RUN(test_misuse);
  return test_summary("tile_scalar");
}
