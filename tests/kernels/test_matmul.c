/* test_matmul.c — tl_matmul and tl_matmul_pack_b against a float64 reference, under a context
 * capped at each ISA level the CPU has (scalar, avx2, avx512, avx512vnni, avx512bf16; amx,
 * emulated where the CPU has AVX512-BF16 and no AMX: tests/tile/amx_emu.h): shapes with 1, primes
 * and sizes dividing no block size, skinny M, transposed and broadcast operands, batch broadcast,
 * beta over a NaN-filled c, every epilogue, bf16 and int8 paths, pre-packed b (bitwise equal to
 * unpacked; at the amx level float outputs within the tolerance), NaN/Inf propagation, K = 0, the
 * plan cache, and every refusal with c untouched.
 * Tolerances: f32 1e-5 relative (||out - ref|| / ||ref||), bf16 output 1e-2, int8 -> i32 exact. */
#include <tilec.h>

#include "test_util.h"
#include "test_isa.h"
#include "tile/amx_emu.h"
#include "kernels/matmul_impl.h"

#define TL_ARRAY_LEN_T(x) (sizeof(x) / sizeof((x)[0]))

static tl_ctx *g_ctx;
static const char *g_isa;
static int g_top; /* the highest level this CPU has: the large cases run in full only there */
static test_rng g_rng = {0x1234567ull};

/* ---- tensors ---- */

typedef struct mm_t {
  tl_tensor t;
  void *mem;
} mm_t;

/* Random tensor of dt and shape; trans: stored with the last two dims swapped (a transposed
 * view); bcast_dim >= 0: that dim has stride 0 (stored once). */
static mm_t mk(tl_dtype dt, int nd, const int64_t *shape, int trans, int bcast_dim) {
  mm_t m;
  int64_t sh[6], n = 1;
  for (int d = 0; d < nd; d++) sh[d] = shape[d];
  if (bcast_dim >= 0) sh[bcast_dim] = 1;
  if (trans) sh[nd - 1] = shape[nd - 2], sh[nd - 2] = shape[nd - 1];
  for (int d = 0; d < nd; d++) n *= sh[d];
  size_t es = tl_dtype_size(dt);
  m.mem = malloc((size_t)(n ? n : 1) * es);
  for (int64_t i = 0; i < n; i++) {
    switch (dt) {
    case TL_F32: ((float *)m.mem)[i] = (float)test_rng_uniform(&g_rng, -1, 1); break;
    case TL_BF16: ((uint16_t *)m.mem)[i] = tl_f32_to_bf16((float)test_rng_uniform(&g_rng, -1, 1)); break;
    case TL_I8: ((int8_t *)m.mem)[i] = (int8_t)test_rng_int(&g_rng, -128, 127); break;
    case TL_U8: ((uint8_t *)m.mem)[i] = (uint8_t)test_rng_int(&g_rng, 0, 255); break;
    case TL_I32: ((int32_t *)m.mem)[i] = (int32_t)test_rng_int(&g_rng, -1000, 1000); break;
    default: break;
    }
  }
  m.t = tl_tensor_make(m.mem, dt, nd, sh);
  if (trans) {
    int64_t s = m.t.stride[nd - 1];
    m.t.stride[nd - 1] = m.t.stride[nd - 2], m.t.stride[nd - 2] = s;
    m.t.shape[nd - 1] = shape[nd - 1], m.t.shape[nd - 2] = shape[nd - 2];
  }
  if (bcast_dim >= 0) m.t.shape[bcast_dim] = shape[bcast_dim], m.t.stride[bcast_dim] = 0;
  return m;
}

static double ld(const tl_tensor *t, const int64_t *idx) {
  const void *p = tl_tensor_at(t, idx);
  switch (t->dtype) {
  case TL_F32: return *(const float *)p;
  case TL_BF16: return tl_bf16_to_f32(*(const uint16_t *)p);
  case TL_I8: return *(const int8_t *)p;
  case TL_U8: return *(const uint8_t *)p;
  case TL_I32: return *(const int32_t *)p;
  default: return NAN;
  }
}

static void fill_nan(tl_tensor *t) {
  int64_t n = tl_tensor_nbytes(t);
  if (t->dtype == TL_F32)
    for (int64_t i = 0; i < n / 4; i++) ((float *)t->data)[i] = NAN;
  else if (t->dtype == TL_BF16)
    for (int64_t i = 0; i < n / 2; i++) ((uint16_t *)t->data)[i] = 0x7FC0;
  else memset(t->data, 0x5A, (size_t)n);
}

/* ---- the reference ---- */

typedef struct mm_case {
  tl_dtype da, db, dc;
  int nda, ndb, ndc;
  int64_t sa[6], sb[6], sc[6];
  int trans_a, trans_b, bcast_a, bcast_b; /* bcast: dim with stride 0, -1 none */
  int bias, res, scales;
  tl_act act;
  float alpha, beta;
} mm_case;

static double act_f64(tl_act a, double v) {
  if (a == TL_ACT_RELU) return v > 0 ? v : (v != v ? v : 0);
  if (a == TL_ACT_GELU) return 0.5 * v * (1 + erf(v / sqrt(2.0)));
  if (a == TL_ACT_SILU) return v / (1 + exp(-v));
  return v;
}

/* ref[] (numel of c) = the epilogue of a @ b in double; c_old holds c before the call. */
static void reference(const mm_case *mc, const tl_tensor *a, const tl_tensor *b, const tl_tensor *c_old, const tl_tensor *bias,
                      const tl_tensor *res, const tl_tensor *sa, const tl_tensor *sb, double *ref) {
  const int nbc = c_old->ndim - 2, nba = a->ndim - 2, nbb = b->ndim - 2;
  const int64_t M = a->shape[a->ndim - 2], K = a->shape[a->ndim - 1], N = b->shape[b->ndim - 1];
  int64_t nbatch = 1;
  for (int d = 0; d < nbc; d++) nbatch *= c_old->shape[d];
  int64_t ic[6] = {0}, ia[6], ib[6], o = 0;
  for (int64_t bt = 0; bt < nbatch; bt++) {
    for (int e = 0; e < nba; e++) ia[e] = a->shape[e] == 1 ? 0 : ic[e + nbc - nba];
    for (int e = 0; e < nbb; e++) ib[e] = b->shape[e] == 1 ? 0 : ic[e + nbc - nbb];
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double acc = 0;
        for (int64_t k = 0; k < K; k++) {
          ia[nba] = i, ia[nba + 1] = k, ib[nbb] = k, ib[nbb + 1] = j;
          acc += ld(a, ia) * ld(b, ib);
        }
        double v = acc;
        if (sa) v *= ld(sa, &i);
        if (sb) v *= ld(sb, &j);
        v *= (double)mc->alpha;
        ic[nbc] = i, ic[nbc + 1] = j;
        if (mc->beta != 0) v += (double)mc->beta * ld(c_old, ic);
        if (bias) v += ld(bias, &j);
        v = act_f64(mc->act, v);
        if (res) v += ld(res, ic);
        if (c_old->dtype == TL_I32) v = v > 2147483647.0 ? 2147483647.0 : v < -2147483648.0 ? -2147483648.0 : nearbyint(v);
        ref[o++] = v;
      }
    for (int d = nbc - 1; d >= 0 && ++ic[d] == c_old->shape[d]; d--) ic[d] = 0;
  }
}

/* Reads c into out[] in the reference's order. */
static void read_c(const tl_tensor *c, double *out) {
  int64_t n = tl_tensor_numel(c), idx[6] = {0};
  for (int64_t o = 0; o < n; o++) {
    out[o] = ld(c, idx);
    for (int d = c->ndim - 1; d >= 0 && ++idx[d] == c->shape[d]; d--) idx[d] = 0;
  }
}

static double tol_for(const mm_case *mc);

/* Runs one case (packed: b through tl_matmul_pack_b, and compared bitwise with the unpacked
 * run); returns the relative error (exact cases: max abs difference), or -1 on failure. */
static double run_case(const mm_case *mc, int packed) {
  mm_t a = mk(mc->da, mc->nda, mc->sa, mc->trans_a, mc->bcast_a), b = mk(mc->db, mc->ndb, mc->sb, mc->trans_b, mc->bcast_b);
  mm_t c = mk(mc->dc, mc->ndc, mc->sc, 0, -1);
  const int64_t M = mc->sa[mc->nda - 2], N = mc->sb[mc->ndb - 1];
  const int int_out = mc->dc == TL_I32;
  mm_t bias = {0}, res = {0}, sa = {0}, sb = {0};
  tl_matmul_opts o = TL_MATMUL_OPTS_INIT;
  o.alpha = mc->alpha, o.beta = mc->beta, o.act = mc->act;
  if (mc->bias) bias = mk(int_out ? TL_I32 : TL_F32, 1, &N, 0, -1), o.bias = &bias.t;
  if (mc->res) res = mk(int_out ? TL_I32 : mc->dc, mc->ndc, mc->sc, 1, -1), o.residual = &res.t; /* transposed view */
  if (mc->scales) {
    sa = mk(TL_F32, 1, &M, 0, -1), sb = mk(TL_F32, 1, &N, 0, -1);
    o.scale_a = &sa.t, o.scale_b = &sb.t;
  }
  if (mc->beta == 0) fill_nan(&c.t);
  const int64_t n = tl_tensor_numel(&c.t), cbytes = tl_tensor_nbytes(&c.t);
  void *c_old = malloc((size_t)cbytes + 1);
  memcpy(c_old, c.mem, (size_t)cbytes);
  tl_tensor cold = c.t;
  cold.data = c_old;
  double *ref = malloc(sizeof(double) * (size_t)(n + 1)), *out = malloc(sizeof(double) * (size_t)(n + 1));
  reference(mc, &a.t, &b.t, &cold, o.bias, o.residual, o.scale_a, o.scale_b, ref);
  double err = -1;
  tl_status s = tl_matmul(g_ctx, &a.t, &b.t, &c.t, &o);
  CHECK(s == TL_OK, "[%s] tl_matmul: %s: %s", g_isa, tl_status_name(s), tl_ctx_error(g_ctx));
  int64_t cfg[3];
  int split = 0; /* a K split sums per-thread parts: f32 / bf16 round differently from the packed run */
  if (s == TL_OK && tl_mm_cached_config(g_ctx, &a.t, &b.t, &c.t, &o, cfg, &split) != 1) split = 0;
  if (s == TL_OK) {
    read_c(&c.t, out);
    if (int_out) {
      err = 0;
      for (int64_t i = 0; i < n; i++) err = fmax(err, fabs(out[i] - ref[i]));
    } else {
      err = test_rel_err(out, ref, n);
    }
  }
  if (packed && s == TL_OK) {
    tl_tensor pb;
    s = tl_matmul_pack_b(g_ctx, &b.t, mc->da, &pb);
    CHECK(s == TL_OK, "[%s] pack_b: %s", g_isa, tl_ctx_error(g_ctx));
    if (s == TL_OK) {
      void *c2 = malloc((size_t)cbytes + 1);
      memcpy(c2, c.mem, (size_t)cbytes);
      memcpy(c.mem, c_old, (size_t)cbytes);
      s = tl_matmul(g_ctx, &a.t, &pb, &c.t, &o);
      CHECK(s == TL_OK, "[%s] tl_matmul packed: %s", g_isa, tl_ctx_error(g_ctx));
      if (s == TL_OK && !int_out && (!strcmp(g_isa, "amx") || split)) {
        /* on AMX the two runs may put a block on different units (the AMX dot takes the blocks
         * that fit its tiles, and b read in place never does), and a split run sums per-thread
         * parts (the packed b never splits), so they agree within rounding */
        read_c(&c.t, out);
        double e2 = test_rel_err(out, ref, n);
        CHECK(e2 <= tol_for(mc), "[%s] packed b: err %.3g > %.3g (%s, M %lld N %lld)", g_isa, e2, tol_for(mc),
              tl_dtype_name(mc->da), (long long)M, (long long)N);
      } else {
        CHECK(s != TL_OK || !memcmp(c2, c.mem, (size_t)cbytes), "[%s] packed b differs from unpacked (%s, M %lld N %lld)",
              g_isa, tl_dtype_name(mc->da), (long long)M, (long long)N);
      }
      free(c2);
      tl_free(pb.data);
    }
  }
  free(a.mem), free(b.mem), free(c.mem), free(bias.mem), free(res.mem), free(sa.mem), free(sb.mem);
  free(c_old), free(ref), free(out);
  return err;
}

static double tol_for(const mm_case *mc) {
  if (mc->dc == TL_I32) return 0;
  if (mc->dc == TL_BF16) return 1e-2;
  return 1e-5;
}

static void check_case(const mm_case *mc, int packed, const char *what) {
  double err = run_case(mc, packed), tol = tol_for(mc);
  CHECK(err >= 0 && err <= tol, "[%s] %s: %s x %s -> %s a%s b%s: err %.3g > %.3g", g_isa, what, tl_dtype_name(mc->da),
        tl_dtype_name(mc->db), tl_dtype_name(mc->dc), mc->trans_a ? "T" : "", mc->trans_b ? "T" : "", err, tol);
}

static mm_case plain(tl_dtype da, tl_dtype db, tl_dtype dc, int64_t M, int64_t N, int64_t K) {
  mm_case mc = {.da = da, .db = db, .dc = dc, .nda = 2, .ndb = 2, .ndc = 2, .sa = {M, K}, .sb = {K, N}, .sc = {M, N},
                .bcast_a = -1, .bcast_b = -1, .alpha = 1};
  return mc;
}

/* ---- tests ---- */

static void test_shapes(void) {
  static const int64_t Ms[] = {1, 3, 16, 17, 100}, Ns[] = {1, 7, 33, 300}, Ks[] = {1, 13, 64, 300};
  for (size_t im = 0; im < 5; im++)
    for (size_t in = 0; in < 4; in++) {
      int64_t K = Ks[(im + in) % 4];
      mm_case mc = plain(TL_F32, TL_F32, TL_F32, Ms[im], Ns[in], K);
      mc.trans_a = (im + in) % 3 == 1, mc.trans_b = (im + in) % 3 == 2;
      check_case(&mc, 0, "f32 shape");
    }
}

static void test_batch(void) {
  /* a [2, 1, M, K] broadcast against b [3, K, N] -> c [2, 3, M, N] */
  mm_case mc = {.da = TL_F32, .db = TL_F32, .dc = TL_F32, .nda = 4, .ndb = 3, .ndc = 4, .sa = {2, 1, 17, 29},
                .sb = {3, 29, 37}, .sc = {2, 3, 17, 37}, .bcast_a = -1, .bcast_b = -1, .alpha = 1};
  check_case(&mc, 0, "batch broadcast");
  mc.trans_a = 1, mc.trans_b = 1;
  check_case(&mc, 1, "batch broadcast transposed, packed");
  /* stride-0 batch dims */
  mm_case m2 = {.da = TL_F32, .db = TL_F32, .dc = TL_F32, .nda = 3, .ndb = 3, .ndc = 3, .sa = {4, 5, 19}, .sb = {4, 19, 23},
                .sc = {4, 5, 23}, .bcast_a = 0, .bcast_b = -1, .alpha = 1};
  check_case(&m2, 0, "stride-0 batch a");
  m2.bcast_a = -1, m2.bcast_b = 0;
  check_case(&m2, 1, "stride-0 batch b, packed");
  /* b 2-D for a batched a; and residual in a non-mergeable (transposed) layout: the outer loop */
  mm_case m3 = {.da = TL_BF16, .db = TL_BF16, .dc = TL_F32, .nda = 4, .ndb = 2, .ndc = 4, .sa = {2, 3, 9, 40}, .sb = {40, 21},
                .sc = {2, 3, 9, 21}, .bcast_a = 1, .bcast_b = -1, .res = 1, .alpha = 1};
  check_case(&m3, 1, "bf16 batch, 2-D b, packed");
}

static void test_epilogues(void) {
  for (int dcb = 0; dcb < 2; dcb++)
    for (int act = 0; act < 4; act++)
      for (int mask = 0; mask < 8; mask++) {
        mm_case mc = plain(TL_F32, TL_F32, dcb ? TL_BF16 : TL_F32, 17, 45, 70);
        mc.act = (tl_act)act;
        mc.bias = mask & 1, mc.res = (mask >> 1) & 1;
        mc.alpha = (mask & 4) ? 0.5f : 1.0f;
        mc.beta = (act + mask) % 3 == 0 ? 0.75f : 0.0f;
        check_case(&mc, 0, "epilogue");
      }
}

static void test_bf16(void) {
  static const int64_t sh[][3] = {{1, 64, 100}, {3, 17, 33}, {16, 100, 520}, {100, 33, 64}, {17, 1, 1}};
  for (size_t i = 0; i < TL_ARRAY_LEN_T(sh); i++) {
    mm_case mc = plain(TL_BF16, TL_BF16, TL_F32, sh[i][0], sh[i][1], sh[i][2]);
    mc.trans_a = i == 3, mc.trans_b = i == 1;
    check_case(&mc, 1, "bf16 -> f32");
    mc.dc = TL_BF16, mc.bias = 1, mc.act = TL_ACT_GELU;
    check_case(&mc, 1, "bf16 -> bf16");
  }
}

static void test_int8(void) {
  /* b as the row-major kernel reads it (3-16 rows, unit column stride): in place (4, 7 and 16
   * rows), copied (b's rows 4 KiB apart: 6 and 12 rows), transposed (VNNI staging); k tails */
  static const int64_t sh[][3] = {{1, 64, 100}, {3, 17, 33}, {16, 40, 1100}, {100, 33, 64}, {17, 1, 1},
                                  {4, 50, 70},  {7, 30, 45}, {6, 4096, 37},  {12, 4096, 70}};
  for (size_t i = 0; i < TL_ARRAY_LEN_T(sh); i++)
    for (int sgn = 0; sgn < 2; sgn++) {
      mm_case mc = plain(sgn ? TL_I8 : TL_U8, TL_I8, TL_I32, sh[i][0], sh[i][1], sh[i][2]);
      mc.trans_b = i == 1;
      check_case(&mc, 1, "int8 -> i32");
      mc.bias = 1, mc.res = 1, mc.act = TL_ACT_RELU, mc.beta = i == 2 ? 2.0f : 0.0f;
      check_case(&mc, 1, "int8 -> i32 epilogue");
      mm_case mf = plain(mc.da, TL_I8, TL_F32, sh[i][0], sh[i][1], sh[i][2]);
      mf.scales = 1, mf.alpha = 0.25f, mf.bias = i & 1, mf.act = TL_ACT_SILU, mf.beta = i == 3 ? 0.5f : 0.0f;
      check_case(&mf, 1, "int8 scales -> f32");
    }
}

static void test_packed_f32(void) {
  mm_case mc = plain(TL_F32, TL_F32, TL_F32, 33, 300, 270);
  check_case(&mc, 1, "f32 packed");
  mc.trans_b = 1;
  check_case(&mc, 1, "f32 packed from transposed");
  /* >= 256 rows of a share b: tl_matmul packs b itself (K and N not multiples of the tiles);
   * the result must equal the explicitly packed one bit for bit */
  mm_case big = plain(TL_F32, TL_F32, TL_F32, 300, 290, 230);
  check_case(&big, 1, "f32 packed per call");
  big.trans_b = 1, big.bias = 1, big.act = TL_ACT_GELU;
  check_case(&big, 1, "f32 packed per call, transposed b, epilogue");
  mm_case bat = {.da = TL_F32, .db = TL_F32, .dc = TL_F32, .nda = 3, .ndb = 2, .ndc = 3, .sa = {2, 150, 261},
                 .sb = {261, 270}, .sc = {2, 150, 270}, .bcast_a = -1, .bcast_b = -1, .alpha = 1};
  check_case(&bat, 1, "f32 packed per call, batched a");
}

/* a read in place at every edge with a packed b (per call, and tl_matmul_pack_b's): a is a window
 * [M, K] of a buffer filled with NaN (f32, bf16; int8: 0xFF) in the columns after K, in the row
 * after M and in the columns before the window, so a dot that read a past its valid rows or K
 * (the padded edge of a block, or K rounded up to a group) would put NaN into c. M, K, N divide
 * no block size; K spans two tile rows. f32, bf16 -> f32, u8 x i8 -> i32 (exact). */
static void test_packed_a_window(void) {
  /* b of 65536 elements and more with 256 rows of a and more is packed per call (tl_mm_autopack);
   * below the top ISA level only the first shape */
  const int64_t shapes[][3] = {{261, 125, 530}, {20, 45, 1000}, {300, 2000, 33}, {257, 66, 1001}};
  const tl_dtype das[3] = {TL_F32, TL_BF16, TL_U8}, dbs[3] = {TL_F32, TL_BF16, TL_I8}, dcs[3] = {TL_F32, TL_F32, TL_I32};
  for (int d = 0; d < 3; d++)
    for (size_t t = 0; t < (g_top ? TL_ARRAY_LEN_T(shapes) : 1); t++) {
      const int64_t M = shapes[t][0], N = shapes[t][1], K = shapes[t][2], ld = K + 21, off = 3;
      const int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N}, sw[2] = {M + 1, ld};
      mm_t w = mk(das[d], 2, sw, 0, -1), src = mk(das[d], 2, sa, 0, -1);
      fill_nan(&w.t);
      const size_t es = tl_dtype_size(das[d]);
      for (int64_t i = 0; i < M; i++) memcpy((char *)w.mem + (i * ld + off) * es, (char *)src.mem + i * K * es, (size_t)K * es);
      tl_tensor a = tl_tensor_make((char *)w.mem + off * es, das[d], 2, sa);
      a.stride[0] = ld;
      mm_t b = mk(dbs[d], 2, sb, 0, -1), c = mk(dcs[d], 2, sc, 0, -1), c2 = mk(dcs[d], 2, sc, 0, -1);
      double *ref = malloc(sizeof(double) * (size_t)(M * N)), *out = malloc(sizeof(double) * (size_t)(M * N));
      mm_case mc = plain(das[d], dbs[d], dcs[d], M, N, K);
      reference(&mc, &a, &b.t, &c.t, NULL, NULL, NULL, NULL, ref);
      tl_tensor pb;
      tl_status s = tl_matmul_pack_b(g_ctx, &b.t, das[d], &pb);
      CHECK(s == TL_OK, "[%s] pack_b: %s", g_isa, tl_ctx_error(g_ctx));
      if (s != TL_OK) pb.data = NULL;
      for (int packed = 0; packed < 2 && s == TL_OK; packed++) {
        tl_tensor *cc = packed ? &c2.t : &c.t;
        fill_nan(cc);
        s = tl_matmul(g_ctx, &a, packed ? &pb : &b.t, cc, NULL);
        CHECK(s == TL_OK, "[%s] a window: %s", g_isa, tl_ctx_error(g_ctx));
        if (s != TL_OK) break;
        read_c(cc, out);
        double err = 0;
        if (dcs[d] == TL_I32)
          for (int64_t i = 0; i < M * N; i++) err = fmax(err, fabs(out[i] - ref[i]));
        else
          err = test_rel_err(out, ref, M * N);
        CHECK(err >= 0 && err <= tol_for(&mc), "[%s] %s a window %lldx%lldx%lld%s: err %.3g", g_isa, tl_dtype_name(das[d]),
              (long long)M, (long long)N, (long long)K, packed ? " pre-packed" : "", err);
      }
      /* f32: the same sums either way; bf16 / int8 with few rows: a row-major b read in place
       * (pairs / quads built in registers) adds in the same order */
      CHECK(s != TL_OK || !memcmp(c.mem, c2.mem, (size_t)tl_tensor_nbytes(&c.t)),
            "[%s] %s a window %lldx%lldx%lld: pre-packed differs from plain", g_isa, tl_dtype_name(das[d]), (long long)M,
            (long long)N, (long long)K);
      tl_free(pb.data);
      free(w.mem), free(src.mem), free(b.mem), free(c.mem), free(c2.mem), free(ref), free(out);
    }
}

/* bf16 / int8 with b left row-major (up to 16 rows of a, b not streamed): a and b are windows
 * of larger buffers poisoned past K in a's rows, past N in b's rows and in the row after each
 * (NaN / 0x5A). Since 2026-11-27 both are read in place at the edge blocks too (the plan stages
 * neither), the dot narrowed to the valid part: a read past K or N shows in c (NaN, or a wrong
 * exact int8 sum). Shapes whose N and K divide no block, 1-16 rows. */
static void test_rm_window(void) {
  const int64_t shapes[][3] = {{1, 1000, 1000}, {2, 1000, 1000}, {3, 45, 333}, {7, 130, 77}, {16, 300, 1001}, {5, 17, 3}};
  const tl_dtype das[2] = {TL_BF16, TL_U8}, dbs[2] = {TL_BF16, TL_I8}, dcs[2] = {TL_F32, TL_I32};
  tl_ctx_info info;
  tl_ctx_info_get(g_ctx, &info);
  for (int d = 0; d < 2; d++)
    for (size_t t = 0; t < TL_ARRAY_LEN_T(shapes); t++) {
      const int64_t M = shapes[t][0], N = shapes[t][1], K = shapes[t][2], lda = K + 13, ldb = N + 19, oa = 3, ob = 5;
      const int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N}, swa[2] = {M + 1, lda}, swb[2] = {K + 1, ldb};
      mm_t wa = mk(das[d], 2, swa, 0, -1), wb = mk(dbs[d], 2, swb, 0, -1), srca = mk(das[d], 2, sa, 0, -1);
      mm_t srcb = mk(dbs[d], 2, sb, 0, -1), c = mk(dcs[d], 2, sc, 0, -1);
      fill_nan(&wa.t), fill_nan(&wb.t);
      const size_t es = tl_dtype_size(das[d]);
      for (int64_t i = 0; i < M; i++) memcpy((char *)wa.mem + (i * lda + oa) * es, (char *)srca.mem + i * K * es, (size_t)K * es);
      for (int64_t k = 0; k < K; k++) memcpy((char *)wb.mem + (k * ldb + ob) * es, (char *)srcb.mem + k * N * es, (size_t)N * es);
      tl_tensor a = tl_tensor_make((char *)wa.mem + oa * es, das[d], 2, sa), b = tl_tensor_make((char *)wb.mem + ob * es, dbs[d], 2, sb);
      a.stride[0] = lda, b.stride[0] = ldb;
      /* the plan: b left row-major, a and b in place */
      tl_mm_build bd;
      const tl_matmul_opts o = TL_MATMUL_OPTS_INIT;
      tl_status s = tl_mm_prepare(g_ctx, &a, &b, &c.t, &o, &bd);
      CHECK(s == TL_OK, "[%s] prepare: %s", g_isa, tl_ctx_error(g_ctx));
      if (s == TL_OK && M <= (info.isa >= TL_ISA_AMX ? 15 : 16))
        CHECK(bd.run.rm && !bd.run.stream && bd.in[bd.run.ia].stage == TL_STAGE_NEVER && bd.in[bd.run.ib].stage == TL_STAGE_NEVER,
              "[%s] %s %lldx%lldx%lld window: rm %d stream %d, a stage %d, b stage %d (expected rm, both in place)", g_isa,
              tl_dtype_name(das[d]), (long long)M, (long long)N, (long long)K, bd.run.rm, bd.run.stream,
              (int)bd.in[bd.run.ia].stage, (int)bd.in[bd.run.ib].stage);
      double *ref = malloc(sizeof(double) * (size_t)(M * N)), *out = malloc(sizeof(double) * (size_t)(M * N));
      mm_case mc = plain(das[d], dbs[d], dcs[d], M, N, K);
      reference(&mc, &srca.t, &srcb.t, &c.t, NULL, NULL, NULL, NULL, ref);
      fill_nan(&c.t);
      s = tl_matmul(g_ctx, &a, &b, &c.t, NULL);
      CHECK(s == TL_OK, "[%s] rm window: %s", g_isa, tl_ctx_error(g_ctx));
      if (s == TL_OK) {
        read_c(&c.t, out);
        double err = 0;
        if (dcs[d] == TL_I32)
          for (int64_t i = 0; i < M * N; i++) err = fmax(err, fabs(out[i] - ref[i]));
        else
          err = test_rel_err(out, ref, M * N);
        CHECK(err >= 0 && err <= tol_for(&mc), "[%s] %s windows of a and b %lldx%lldx%lld: err %.3g", g_isa,
              tl_dtype_name(das[d]), (long long)M, (long long)N, (long long)K, err);
      }
      free(wa.mem), free(wb.mem), free(srca.mem), free(srcb.mem), free(c.mem), free(ref), free(out);
    }
}

/* 9-31 rows of a over several panels and K blocks, b pre-packed (and f32 b row-major in place):
 * the paths where the last row block prefetches the next panel; equal to unpacked bit for bit.
 * Also the balanced K blocks (the packed tile row) of tl_mm_pack_tile_r. */
static void test_packed_skinny(void) {
  CHECK(tl_mm_pack_tile_r(TL_F32, 2064, 0) == 416 && tl_mm_pack_tile_r(TL_F32, 512, 0) == 512 &&
            tl_mm_pack_tile_r(TL_F32, 513, 0) == 272 && tl_mm_pack_tile_r(TL_F32, 1, 0) == 16 &&
            tl_mm_pack_tile_r(TL_BF16, 1100, 0) == 384 && tl_mm_pack_tile_r(TL_I8, 1025, 0) == 576 &&
            tl_mm_pack_tile_r(TL_I8, 1024, 0) == 1024,
        "[%s] tl_mm_pack_tile_r: balanced K blocks", g_isa);
  /* tl_matmul's own packing: longer tile rows for bf16 / int8 (f32 unchanged) */
  CHECK(tl_mm_pack_tile_r(TL_F32, 2064, 1) == 416 && tl_mm_pack_tile_r(TL_BF16, 1100, 1) == 576 &&
            tl_mm_pack_tile_r(TL_BF16, 4096, 1) == 1024 && tl_mm_pack_tile_r(TL_I8, 1100, 1) == 1152 &&
            tl_mm_pack_tile_r(TL_I8, 4097, 1) == 1408,
        "[%s] tl_mm_pack_tile_r: long-K tile rows", g_isa);
  static const int64_t ms[] = {9, 16, 24};
  for (size_t i = 0; i < TL_ARRAY_LEN_T(ms); i++) {
    mm_case mf = plain(TL_F32, TL_F32, TL_F32, ms[i], 200, 1100);
    check_case(&mf, 1, "f32 packed, 9-31 rows");
    if (!g_top && i > 0) continue;
    mm_case mb = plain(TL_BF16, TL_BF16, TL_F32, ms[i], 200, 1100);
    check_case(&mb, 1, "bf16 packed, 9-31 rows");
    mm_case mu = plain(TL_U8, TL_I8, TL_I32, ms[i], 200, 1100);
    check_case(&mu, 1, "u8 packed, 9-31 rows");
    mm_case mss = plain(TL_I8, TL_I8, TL_I32, ms[i], 200, 2100);
    check_case(&mss, 1, "s8 packed, 9-31 rows");
  }
}

/* >= 256 rows of a: tl_matmul packs bf16 / int8 b itself too (the staging packer's VNNI pairs and
 * quads, edge tiles of K and N, one or several of its longer tile rows); equal to the explicitly
 * packed b (tl_matmul_pack_b's shorter tile rows) bit for bit */
static void test_packed_per_call_vnni(void) {
  static const int64_t sh[][3] = {{300, 290, 230}, {260, 70, 1100}};
  /* below the top level (the portable packer; the scalar dot under the sanitizers is slow):
   * the first shape, plain bf16 and u8 only */
  for (size_t i = 0; i < (g_top ? TL_ARRAY_LEN_T(sh) : 1); i++) {
    mm_case mc = plain(TL_BF16, TL_BF16, TL_F32, sh[i][0], sh[i][1], sh[i][2]);
    check_case(&mc, 1, "bf16 packed per call");
    mc.trans_b = 1, mc.dc = TL_BF16, mc.bias = 1;
    if (g_top) check_case(&mc, 1, "bf16 packed per call, transposed b -> bf16");
    for (int sgn = 0; sgn < (g_top ? 2 : 1); sgn++) {
      mm_case mi = plain(sgn ? TL_I8 : TL_U8, TL_I8, TL_I32, sh[i][0], sh[i][1], sh[i][2]);
      mi.trans_b = sgn;
      check_case(&mi, 1, "int8 packed per call");
      if (!g_top) continue;
      mm_case mf = plain(mi.da, TL_I8, TL_F32, sh[i][0], sh[i][1], sh[i][2]);
      mf.scales = 1, mf.beta = 0.5f;
      check_case(&mf, 1, "int8 packed per call, scales -> f32");
    }
  }
}

/* When tl_matmul packs b per call: f32 from 256 rows of a; bf16 / int8 from 129 (more than one M
 * block) when b is large (2^20 / 2^23 elements), from 256 otherwise (int8 from 2^19 elements);
 * rows counted over a's batch;
 * and a 129-255-row bf16 product that packs equals the explicitly packed one bit for bit. */
static void test_autopack_rule(void) {
  static const struct {
    tl_dtype da, db;
    int64_t batch, m, k, n;
    int want;
  } cs[] = {
      {TL_F32, TL_F32, 1, 255, 1024, 1024, 0},   {TL_F32, TL_F32, 1, 256, 1024, 1024, 1},
      {TL_BF16, TL_BF16, 1, 128, 1024, 1024, 0}, {TL_BF16, TL_BF16, 1, 129, 1024, 1024, 1},
      {TL_BF16, TL_BF16, 1, 200, 512, 512, 0},   {TL_BF16, TL_BF16, 1, 256, 512, 512, 1},
      {TL_BF16, TL_BF16, 2, 80, 1024, 1024, 1},  {TL_U8, TL_I8, 1, 129, 2048, 4096, 1},
      {TL_U8, TL_I8, 1, 129, 2048, 2048, 0},     {TL_I8, TL_I8, 1, 256, 2048, 2048, 1},
      {TL_U8, TL_I8, 1, 128, 4096, 4096, 0},     {TL_U8, TL_I8, 1, 256, 512, 512, 0},
      {TL_U8, TL_I8, 1, 256, 512, 1024, 1},      {TL_F32, TL_F32, 1, 256, 256, 256, 1},
  };
  for (size_t i = 0; i < TL_ARRAY_LEN_T(cs); i++) {
    const int64_t sa[3] = {cs[i].batch, cs[i].m, cs[i].k}, sb[2] = {cs[i].k, cs[i].n};
    const tl_tensor a = tl_tensor_make(NULL, cs[i].da, 3, sa), b = tl_tensor_make(NULL, cs[i].db, 2, sb);
    CHECK(tl_mm_autopack_applies(&a, &b) == cs[i].want, "%s [%lld, %lld, %lld] x %lldx%lld: packs per call %d, want %d",
          tl_dtype_name(cs[i].da), (long long)cs[i].batch, (long long)cs[i].m, (long long)cs[i].k, (long long)cs[i].k,
          (long long)cs[i].n, tl_mm_autopack_applies(&a, &b), cs[i].want);
  }
  if (!g_top) return; /* (the scalar dot under the sanitizers is slow) */
  mm_case mc = plain(TL_BF16, TL_BF16, TL_F32, 136, 1030, 1030);
  check_case(&mc, 1, "bf16 packed per call, 136 rows");
  /* rows over a's batch: a [2, 70, K] with a 2-D b, beta over c */
  mm_case mb = {.da = TL_BF16, .db = TL_BF16, .dc = TL_F32, .nda = 3, .ndb = 2, .ndc = 3, .sa = {2, 70, 1030},
                .sb = {1030, 1030}, .sc = {2, 70, 1030}, .bcast_a = -1, .bcast_b = -1, .alpha = 1, .beta = 0.5f};
  check_case(&mb, 1, "bf16 batch packed per call, 2 x 70 rows");
}

/* b in the per-call packing's longer tile rows (tl_mm_pack_b with long_k), given to tl_matmul
 * directly (accepted, like tl_matmul_pack_b's): equal bit for bit to the shorter rows, for few
 * and many rows of a; the tuning key tells the two apart (" packed-long-k" / " packed"). */
static void test_packed_long_k(void) {
  static const tl_dtype das[] = {TL_BF16, TL_U8};
  static const int64_t ms[] = {20, 300};
  for (size_t d = 0; d < TL_ARRAY_LEN_T(das); d++)
    for (size_t i = 0; i < TL_ARRAY_LEN_T(ms); i++) {
      if (!g_top && i > 0) continue; /* (the scalar dot under the sanitizers is slow) */
      const tl_dtype da = das[d], db = da == TL_U8 ? TL_I8 : da, dc = da == TL_U8 ? TL_I32 : TL_F32;
      const int64_t M = ms[i], N = 70, K = 2100, sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
      mm_t a = mk(da, 2, sa, 0, -1), b = mk(db, 2, sb, 0, -1), c1 = mk(dc, 2, sc, 0, -1), c2 = mk(dc, 2, sc, 0, -1);
      tl_tensor ps, pl;
      const tl_status p1 = tl_matmul_pack_b(g_ctx, &b.t, da, &ps), p2 = tl_mm_pack_b(g_ctx, &b.t, da, 1, &pl);
      CHECK(p1 == TL_OK && p2 == TL_OK && pl.layout.tile_r == tl_mm_pack_tile_r(db, K, 1) &&
                ps.layout.tile_r == tl_mm_pack_tile_r(db, K, 0) && pl.layout.tile_r > ps.layout.tile_r,
            "[%s] %s long-K pack: tile rows %u / %u", g_isa, tl_dtype_name(da), pl.layout.tile_r, ps.layout.tile_r);
      if (p1 == TL_OK && p2 == TL_OK) {
        const tl_status s1 = tl_matmul(g_ctx, &a.t, &ps, &c1.t, NULL), s2 = tl_matmul(g_ctx, &a.t, &pl, &c2.t, NULL);
        CHECK(s1 == TL_OK && s2 == TL_OK && !memcmp(c1.mem, c2.mem, (size_t)tl_tensor_nbytes(&c1.t)),
              "[%s] %s M %lld: long-K packed b equals tl_matmul_pack_b's (%s)", g_isa, tl_dtype_name(da), (long long)M,
              tl_ctx_error(g_ctx));
        const tl_matmul_opts o = TL_MATMUL_OPTS_INIT;
        tl_mm_build bd;
        char k1[160] = "", k2[160] = "";
        if (tl_mm_prepare(g_ctx, &a.t, &ps, &c1.t, &o, &bd) == TL_OK) tl_mm_tune_key(&bd, k1, sizeof k1);
        if (tl_mm_prepare(g_ctx, &a.t, &pl, &c1.t, &o, &bd) == TL_OK) tl_mm_tune_key(&bd, k2, sizeof k2);
        const size_t n1 = strlen(k1), n2 = strlen(k2);
        CHECK(n1 > 7 && !strcmp(k1 + n1 - 7, " packed") && n2 > 14 && !strcmp(k2 + n2 - 14, " packed-long-k"),
              "[%s] tuning keys '%s' / '%s'", g_isa, k1, k2);
      }
      if (p1 == TL_OK) tl_free(ps.data);
      if (p2 == TL_OK) tl_free(pl.data);
      free(a.mem), free(b.mem), free(c1.mem), free(c2.mem);
    }
}

/* Elements of the nmat matrices of b ([nmat, K, N], or [K, N] when nmat is 1) not where
 * tl_matmul_pack_b's layout puts them in pb: matrix m at m * (tiles per matrix) * tile_r * 16,
 * element (r, c) in tile row r / tile_r, tile c / 16, at (r % tile_r / vnni) * 16 * vnni +
 * (c % 16) * vnni + r % vnni; *pad counts the bytes of every other element (padding) not zero. */
static int64_t pack_mismatches(const tl_tensor *b, const tl_tensor *pb, int64_t nmat, int64_t *pad) {
  const int nd = b->ndim;
  const int64_t K = b->shape[nd - 2], N = b->shape[nd - 1];
  const int64_t es = (int64_t)tl_dtype_size(pb->dtype), tr = pb->layout.tile_r, v = pb->layout.vnni, ntc = (N + 15) / 16;
  const int64_t mat = (K + tr - 1) / tr * tr * ntc * 16, total = nmat * mat;
  char *seen = calloc((size_t)total, 1);
  int64_t bad = 0;
  *pad = 0;
  for (int64_t m = 0; m < nmat; m++)
    for (int64_t r = 0; r < K; r++)
      for (int64_t c = 0; c < N; c++) {
        const int64_t idx3[3] = {m, r, c}, idx2[2] = {r, c};
        const int64_t at = m * mat + (r / tr) * ntc * tr * 16 + (c / 16) * tr * 16 + (r % tr / v) * 16 * v + (c % 16) * v + r % v;
        seen[at] = 1;
        bad += memcmp((const char *)pb->data + at * es, tl_tensor_at(b, nd == 3 ? idx3 : idx2), (size_t)es) != 0;
      }
  for (int64_t e = 0; e < total; e++)
    if (!seen[e])
      for (int64_t q = 0; q < es; q++) *pad += ((const char *)pb->data)[e * es + q] != 0;
  free(seen);
  return bad;
}

/* tl_matmul_pack_b's layout, element by element from its definition: matrix m of b at
 * m * (tiles per matrix) * tile_r * 16, element (r, c) in tile row r / tile_r, tile c / 16, at
 * (r % tile_r / vnni) * 16 * vnni + (c % 16) * vnni + r % vnni; every other element (padding)
 * zero. Batched, transposed and broadcast b, K and N that divide nothing, K over several tile
 * rows, on this context and on one with 4 KiB of VMEM (the pack kernel needs none). */
static void test_pack_layout(void) {
  static const tl_dtype dts[3][2] = {{TL_F32, TL_F32}, {TL_BF16, TL_BF16}, {TL_U8, TL_I8}};
  tl_ctx *tiny = NULL;
  tl_ctx_opts to = {.isa = g_isa, .vmem_bytes = 4096};
  CHECK(tl_ctx_new(&to, &tiny) == TL_OK, "tiny context: %s", tl_last_error());
  for (int d = 0; d < 3; d++)
    for (int form = 0; form < 5; form++) { /* plain; transposed; batch dim broadcast (stride 0);
                                             * several tile rows, the last partial, packed in
                                             * steps of rows (3: a last step of padding rows
                                             * only, for every dtype; 4: transposed, a tile row
                                             * not a whole number of steps for f32) */
      const int64_t K = form == 1 ? 70 : form == 3 ? 1057 : form == 4 ? 1100 : 37;
      const int64_t N = form == 2 ? 16 : form == 3 ? 1041 : form == 4 ? 300 : 45;
      const int64_t shape[3] = {2, K, N};
      mm_t b = mk(dts[d][1], 3, shape, form == 1 || form == 4, form == 2 ? 0 : -1);
      for (int cx = 0; cx < 2; cx++) {
        tl_ctx *ctx = cx ? tiny : g_ctx;
        if (!ctx) continue;
        tl_tensor pb;
        tl_status s = tl_matmul_pack_b(ctx, &b.t, dts[d][0], &pb);
        CHECK(s == TL_OK, "[%s] pack_b %s form %d ctx %d: %s", g_isa, tl_dtype_name(dts[d][1]), form, cx, tl_ctx_error(ctx));
        if (s != TL_OK) continue;
        const tl_layout l = pb.layout;
        const int64_t v = l.vnni, tr = l.tile_r;
        CHECK(l.tiled && l.tile_c == 16 && v == (d == 0 ? 1 : d == 1 ? 2 : 4) && tr % (16 * v) == 0 && pb.ndim == 3,
              "[%s] %s layout tile_r %d vnni %d", g_isa, tl_dtype_name(pb.dtype), l.tile_r, l.vnni);
        int64_t pad = 0;
        const int64_t bad = pack_mismatches(&b.t, &pb, 2, &pad);
        CHECK(bad == 0 && pad == 0, "[%s] %s form %d ctx %d: %lld elements misplaced, %lld padding bytes not zero", g_isa,
              tl_dtype_name(pb.dtype), form, cx, (long long)bad, (long long)pad);
        tl_free(pb.data);
      }
      free(b.mem);
    }
  tl_ctx_free(tiny);
}

/* bf16 / int8 b whose packed storage is past an eighth of the L3: the pack kernel writes it
 * with non-temporal stores (matmul_pack.c, TL_MM_PACK_NT_DIV); every element and padding byte
 * checked as in test_pack_layout (N not a multiple of 16, K not one of the tile rows). */
static void test_pack_nt(void) {
  tl_ctx_info info;
  tl_ctx_info_get(g_ctx, &info);
  const int64_t l3 = tl_kernels_l3_bytes(&info);
  for (int d = 0; d < 2; d++) {
    const tl_dtype da = d ? TL_U8 : TL_BF16, db = d ? TL_I8 : TL_BF16;
    const int64_t N = 1100, es = d ? 1 : 2, K = l3 / 8 / (1104 * es) + 77, shape[2] = {K, N};
    mm_t b = mk(db, 2, shape, 0, -1);
    tl_tensor pb;
    const tl_status s = tl_matmul_pack_b(g_ctx, &b.t, da, &pb);
    CHECK(s == TL_OK, "[%s] pack_b %s K %lld: %s", g_isa, tl_dtype_name(db), (long long)K, tl_ctx_error(g_ctx));
    if (s == TL_OK) {
      int64_t pad = 0;
      const int64_t bad = pack_mismatches(&b.t, &pb, 1, &pad);
      CHECK(bad == 0 && pad == 0, "[%s] %s K %lld N %lld (%lld MiB packed): %lld elements misplaced, %lld padding bytes not zero",
            g_isa, tl_dtype_name(db), (long long)K, (long long)N,
            (long long)((K + pb.layout.tile_r - 1) / pb.layout.tile_r * pb.layout.tile_r * 1104 * es >> 20), (long long)bad,
            (long long)pad);
      tl_free(pb.data);
    }
    free(b.mem);
  }
}

/* f32 b whose rows are not on 64-byte lines (the dot then runs a narrower first panel up to the
 * next line): c equal bit for bit to the same product with b aligned, for row counts of the
 * in-place panel path, N that are multiples of 16 (rows all at one offset in their lines) and
 * not, and b 4 to 60 bytes off. */
static void test_misaligned_b(void) {
  static const int64_t ms[] = {3, 5, 8, 13, 24, 31}, ns[] = {5, 16, 48, 272, 100};
  static const int offs[] = {1, 4, 13, 15};
  const int64_t K = 37;
  for (size_t im = 0; im < TL_ARRAY_LEN_T(ms); im++)
    for (size_t in = 0; in < TL_ARRAY_LEN_T(ns); in++) {
      const int64_t M = ms[im], N = ns[in], sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
      mm_t a = mk(TL_F32, 2, sa, 0, -1), b = mk(TL_F32, 2, sb, 0, -1);
      float *buf = aligned_alloc(64, (size_t)(K * N + 64 + 15) / 16 * 64); /* (a multiple of 64 bytes) */
      float *c0 = malloc(sizeof(float) * (size_t)(M * N)), *c1 = malloc(sizeof(float) * (size_t)(M * N));
      tl_tensor tc0 = tl_tensor_make(c0, TL_F32, 2, sc), tc1 = tl_tensor_make(c1, TL_F32, 2, sc);
      memcpy(buf, b.mem, sizeof(float) * (size_t)(K * N));
      tl_tensor tb = tl_tensor_make(buf, TL_F32, 2, sb);
      tl_status s = tl_matmul(g_ctx, &a.t, &tb, &tc0, NULL);
      CHECK(s == TL_OK, "[%s] aligned b %lldx%lld: %s", g_isa, (long long)M, (long long)N, tl_ctx_error(g_ctx));
      for (size_t io = 0; io < TL_ARRAY_LEN_T(offs) && s == TL_OK; io++) {
        memcpy(buf + offs[io], b.mem, sizeof(float) * (size_t)(K * N));
        tb.data = buf + offs[io];
        fill_nan(&tc1);
        tl_status s1 = tl_matmul(g_ctx, &a.t, &tb, &tc1, NULL);
        CHECK(s1 == TL_OK && !memcmp(c0, c1, sizeof(float) * (size_t)(M * N)),
              "[%s] b %d bytes off a line, %lldx%lldx%lld: %s, c %s the aligned run's", g_isa, offs[io] * 4, (long long)M,
              (long long)N, (long long)K, tl_status_name(s1), s1 == TL_OK ? "differs from" : "not compared with");
      }
      free(buf), free(c0), free(c1), free(a.mem), free(b.mem);
    }
}

/* 1-2 rows of a against a row-major b beyond half the L3: b streamed in place, never staged
 * (edge N and K blocks narrowed to their valid part); equal to the packed b bit for bit. 4 rows
 * (f32: b in place in 32-column panels) too. */
static void test_stream(void) {
  tl_ctx_info info;
  tl_ctx_info_get(g_ctx, &info);
  static const int64_t sh[][3] = {{1, 4099, 1100}, {2, 2100, 2100}, {4, 2100, 2100}};
  for (size_t i = 0; i < (g_top ? TL_ARRAY_LEN_T(sh) : 2); i++) { /* below the top level: 1-2 rows (the walks) */
    if (info.cpu.l3_bytes > 0 && sh[i][1] * sh[i][2] * 4 <= info.cpu.l3_bytes / 2) {
      fprintf(stderr, "    stream case %zu: b fits half this L3 (%lld MiB): not streamed here\n", i,
              (long long)(info.cpu.l3_bytes >> 20));
      continue;
    }
    mm_case mc = plain(TL_F32, TL_F32, TL_F32, sh[i][0], sh[i][1], sh[i][2]);
    check_case(&mc, 1, "f32 streamed b");
    mc.bias = 1, mc.act = TL_ACT_RELU, mc.res = (int)(i & 1), mc.beta = i ? 0.5f : 0.0f;
    check_case(&mc, 0, "f32 streamed b, epilogue");
  }
  /* a tiny staging budget: the streamed config's blocks shrink into it (K first) */
  if (g_top && !(info.cpu.l3_bytes > 0 && 2100 * 2100 * 4 <= info.cpu.l3_bytes / 2)) {
    tl_ctx *saved = g_ctx, *tiny = NULL;
    tl_ctx_opts to = {.isa = g_isa, .vmem_bytes = 8192};
    if (tl_ctx_new(&to, &tiny) == TL_OK) {
      g_ctx = tiny;
      mm_case mt = plain(TL_F32, TL_F32, TL_F32, 2, 2100, 2100);
      check_case(&mt, 0, "f32 streamed b, 8 KiB of VMEM");
      g_ctx = saved;
      tl_ctx_free(tiny);
    }
  }
  /* bf16 and int8 (1-2 rows): twice the elements for the same bytes */
  if (!g_top || (info.cpu.l3_bytes > 0 && 4099 * 2100 * 2 <= info.cpu.l3_bytes / 2)) return;
  mm_case mb = plain(TL_BF16, TL_BF16, TL_F32, 1, 4099, 2101);
  check_case(&mb, 1, "bf16 streamed b");
  mm_case mi = plain(TL_U8, TL_I8, TL_I32, 2, 4100, 4201);
  check_case(&mi, 1, "int8 streamed b");
}

/* f32, 3-31 rows against a row-major b past half the L3, from the AVX2 level: the plan's N
 * blocks of at most TL_MM_SWEEP_BN columns, as many as a multiple of the threads, over the whole
 * of K, a and b in place, neither streamed nor split (tl_mm_run.sweep: the AVX-512 dot's
 * sweeping walk, the AVX2 dot's wide staging); not so for 1-2 or 32 rows, at the scalar level, a
 * b within half the L3, (8 threads) N too narrow for a block per thread, or 3-8 rows on 2 threads
 * at the AVX-512 levels, which take the K split and its walk (builds only, 1, 2 and 8 threads). Against the reference at the top level (and at AVX2) with N not a multiple of
 * a panel or window, the epilogue with beta, a batch, and a budget that narrows the blocks. */
static void test_sweep(void) {
  tl_ctx_info info;
  tl_ctx_info_get(g_ctx, &info);
  const int64_t l3 = tl_kernels_l3_bytes(&info), kp = l3 / 2 / 4 / 1100 + 5; /* 1100 x kp: past half */
  const int vec = info.isa >= TL_ISA_AVX2;
  char dummy[64];
  /* 8 threads: 200 columns (7 blocks of 32) leave one idle, so not swept (M is never split
   * there); 300 columns are */
  {
    tl_ctx *ctx;
    tl_ctx_opts opts = {.isa = g_isa, .threads = 8, .tune = -1};
    REQUIRE(tl_ctx_new(&opts, &ctx) == TL_OK, "%s", tl_last_error());
    for (int64_t n = 200; n <= 300; n += 100) {
      const int64_t k = l3 / 2 / 4 / n + 1, sa[2] = {20, k}, sb[2] = {k, n}, sc[2] = {20, n};
      tl_tensor a = tl_tensor_make(dummy, TL_F32, 2, sa), b = tl_tensor_make(dummy, TL_F32, 2, sb);
      tl_tensor c = tl_tensor_make(dummy, TL_F32, 2, sc);
      tl_mm_build bd;
      const tl_matmul_opts mo = TL_MATMUL_OPTS_INIT;
      const tl_status st = tl_mm_prepare(ctx, &a, &b, &c, &mo, &bd);
      const int want = vec && n == 300;
      CHECK(st == TL_OK && bd.run.sweep == want, "[%s] f32 20x%lldx%lld, 8 threads: sweep %d, expected %d (%s)", g_isa,
            (long long)n, (long long)k, st == TL_OK ? bd.run.sweep : -1, want, tl_ctx_error(ctx));
    }
    tl_ctx_free(ctx);
  }
  for (int threads = 1; threads <= 2; threads++) {
    tl_ctx *ctx;
    tl_ctx_opts opts = {.isa = g_isa, .threads = threads, .tune = -1};
    REQUIRE(tl_ctx_new(&opts, &ctx) == TL_OK, "%s", tl_last_error());
    static const int64_t ms[] = {2, 3, 9, 16, 17, 31, 32};
    for (size_t i = 0; i < TL_ARRAY_LEN_T(ms); i++)
      for (int past = 0; past <= 1; past++)
        for (int wide = 0; wide <= 1; wide++) {
          const int64_t m = ms[i], n = wide ? 4096 : 1100, k = past ? kp * 1100 / n + 1 : l3 / 2 / 4 / n - 3;
          const int64_t sa[2] = {m, k}, sb[2] = {k, n}, sc[2] = {m, n};
          tl_tensor a = tl_tensor_make(dummy, TL_F32, 2, sa), b = tl_tensor_make(dummy, TL_F32, 2, sb);
          tl_tensor c = tl_tensor_make(dummy, TL_F32, 2, sc);
          tl_mm_build bd;
          const tl_matmul_opts mo = TL_MATMUL_OPTS_INIT;
          const tl_status st = tl_mm_prepare(ctx, &a, &b, &c, &mo, &bd);
          CHECK(st == TL_OK, "[%s] prepare f32 %lldx%lldx%lld: %s", g_isa, (long long)m, (long long)n, (long long)k,
                tl_ctx_error(ctx));
          if (st != TL_OK) continue;
          /* 3-8 rows on 2 threads at the AVX-512 levels: the K split, walked (tl_mm_rows_split) */
          const int walk = past && m >= 3 && m <= TL_MM_WALK_M && threads == 2 && info.isa >= TL_ISA_AVX512;
          const int want = vec && past && m >= 3 && m <= 31 && !walk;
          const int64_t BN = bd.run.BN, nb = TL_CDIV(n, BN);
          CHECK(bd.run.sweep == want, "[%s] f32 %lldx%lldx%lld (b %s half the L3), %d thread(s): sweep %d, expected %d", g_isa,
                (long long)m, (long long)n, (long long)k, past ? "past" : "within", threads, bd.run.sweep, want);
          CHECK(!walk || (bd.split == 2 && bd.run.stream && bd.ks_run.walk && bd.ks_run.chunk_k == 0),
                "[%s] f32 %lldx%lldx%lld, 2 threads: split %d stream %d walk %d chunk %lld, expected the walked K split", g_isa,
                (long long)m, (long long)n, (long long)k, bd.split, bd.run.stream, bd.ks_run.walk, (long long)bd.ks_run.chunk_k);
          if (want)
            CHECK(bd.run.BK == k && BN <= TL_MM_SWEEP_BN && BN % 32 == 0 && nb % threads == 0 && !bd.run.stream &&
                      bd.split == 0 && bd.in[bd.run.ib].stage == TL_STAGE_NEVER && bd.in[bd.run.ia].stage == TL_STAGE_NEVER,
                  "[%s] f32 %lldx%lldx%lld, %d thread(s): blocks %lld x %lld (%lld of them), stream %d split %d", g_isa,
                  (long long)m, (long long)n, (long long)k, threads, (long long)bd.run.BK, (long long)BN, (long long)nb,
                  bd.run.stream, bd.split);
        }
    tl_ctx_free(ctx);
  }
  if (!vec || (!g_top && info.isa != TL_ISA_AVX2)) return; /* the top level, and AVX2's dot */
  /* (few cases: each reference is 20-70 M multiply-adds here, slow under the sanitizers; an L3
   * past 64 MiB would make them longer still) */
  if (kp > 16384) {
    fprintf(stderr, "    sweep: an L3 of %lld MiB makes b too long for the references: skipped\n", (long long)(l3 >> 20));
    return;
  }
  /* (on 2 threads: 3 and 8 rows at the AVX-512 levels take the K split's walk; 8 rows with N
   * off a panel) */
  tl_ctx *outer = g_ctx, *two;
  tl_ctx_opts o2 = {.isa = g_isa, .threads = 2, .tune = -1};
  REQUIRE(tl_ctx_new(&o2, &two) == TL_OK, "%s", tl_last_error());
  g_ctx = two;
  static const int64_t rs[][2] = {{3, 1100}, {9, 1100}, {16, 1009}, {27, 1100}, {8, 1000}};
  for (size_t i = 0; i < TL_ARRAY_LEN_T(rs); i++) {
    if (!g_top && i != 1) continue; /* AVX2: 9 rows */
    mm_case mc = plain(TL_F32, TL_F32, TL_F32, rs[i][0], rs[i][1], kp * 1100 / rs[i][1] + 1);
    if (i & 1) mc.bias = 1, mc.act = TL_ACT_GELU, mc.res = (int)(i == 1), mc.beta = i == 3 ? 0.5f : 0.0f;
    if (i == 4) mc.beta = 0.25f, mc.bias = 1;
    check_case(&mc, 0, i & 1 || i == 4 ? "f32 swept b, epilogue" : "f32 swept b");
  }
  g_ctx = outer;
  tl_ctx_free(two);
  if (!g_top) return;
  /* a batch of 2 (each matrix of b past half the L3; the inner batch in the grid) */
  mm_case mb = {.da = TL_F32, .db = TL_F32, .dc = TL_F32, .nda = 3, .ndb = 3, .ndc = 3, .sa = {2, 5, kp}, .sb = {2, kp, 1100},
                .sc = {2, 5, 1100}, .bcast_a = -1, .bcast_b = -1, .alpha = 1};
  check_case(&mb, 0, "f32 swept b, batch of 2");
  /* a budget of 16 KiB: the blocks narrow until c's block and the scratch fit */
  tl_ctx *saved = g_ctx, *tiny = NULL;
  tl_ctx_opts to = {.isa = g_isa, .vmem_bytes = 16384};
  if (tl_ctx_new(&to, &tiny) == TL_OK) {
    g_ctx = tiny;
    mm_case mt = plain(TL_F32, TL_F32, TL_F32, 16, 1100, kp + 1);
    mt.beta = 2.0f;
    check_case(&mt, 0, "f32 swept b, 16 KiB of VMEM");
    g_ctx = saved;
    tl_ctx_free(tiny);
  }
}

/* One or two rows of a streaming a b with contiguous rows (from a sixteenth of the L3) on 2
 * threads: K is split between them (each reads whole rows of alternate K blocks), the partial
 * rows summed under the epilogue. Against the reference with every epilogue (int8 exact, and
 * equal to the packed b's unsplit run bit for bit); the split is what ran (the cached plan says
 * so); shapes beside the rule stay unsplit (their builds only). */
static void test_ksplit(void) {
  tl_ctx *saved = g_ctx, *ctx;
  tl_ctx_opts opts = {.isa = g_isa, .threads = 2, .tune = -1};
  REQUIRE(tl_ctx_new(&opts, &ctx) == TL_OK, "%s", tl_last_error());
  tl_ctx_info info;
  tl_ctx_info_get(ctx, &info);
  const int64_t l3 = tl_kernels_l3_bytes(&info);
  g_ctx = ctx;
  static const struct {
    tl_dtype da, db, dc;
    int64_t n, div; /* b streams past l3 / div */
  } cs[] = {{TL_U8, TL_I8, TL_I32, 4096, 16}, {TL_BF16, TL_BF16, TL_F32, 2048, 16}, {TL_F32, TL_F32, TL_F32, 1024, 16},
            {TL_F32, TL_F32, TL_F32, 3001, 16}};
  for (size_t i = 0; i < TL_ARRAY_LEN_T(cs); i++) {
    if (l3 / cs[i].div > ((int64_t)64 << 20)) {
      fprintf(stderr, "    ksplit case %zu: b would be past %lld MiB to stream here: skipped\n", i, (long long)(l3 / cs[i].div >> 20));
      continue;
    }
    const int64_t N = cs[i].n, K = l3 / cs[i].div / 4096 + 77;
    mm_case mc = plain(cs[i].da, cs[i].db, cs[i].dc, 1, N, K);
    check_case(&mc, cs[i].da == TL_U8, "K split");
    const int64_t sa[2] = {1, K}, sb[2] = {K, N}, sc[2] = {1, N};
    char dummy[64];
    tl_tensor a = tl_tensor_make(dummy, cs[i].da, 2, sa), b = tl_tensor_make(dummy, cs[i].db, 2, sb);
    tl_tensor c = tl_tensor_make(dummy, cs[i].dc, 2, sc);
    int64_t cfg[3];
    int split = -1;
    CHECK(tl_mm_cached_config(ctx, &a, &b, &c, NULL, cfg, &split) == 1 && split == 2, "[%s] %s 1x%lldx%lld: split %d, expected 2",
          g_isa, tl_dtype_name(cs[i].da), (long long)N, (long long)K, split);
    if (!g_top) continue; /* below the top level the plain split only (the sums and epilogue are ISA-free) */
    /* the epilogue over the summed parts: alpha, beta over the old c, bias, activation, residual */
    mc.alpha = 0.5f, mc.beta = 0.25f, mc.bias = 1, mc.res = 1, mc.act = cs[i].dc == TL_I32 ? TL_ACT_RELU : TL_ACT_GELU;
    check_case(&mc, 0, "K split, epilogue");
    if (cs[i].da == TL_U8) { /* int8 -> f32 with scales */
      mm_case ms = plain(TL_U8, TL_I8, TL_F32, 1, N, K);
      ms.scales = 1, ms.bias = 1, ms.act = TL_ACT_SILU;
      check_case(&ms, 0, "K split, int8 scales");
      mm_case m2 = plain(TL_U8, TL_I8, TL_I32, 2, N, K); /* two rows stream from a sixteenth of the L3 too */
      m2.bias = 1;
      check_case(&m2, 1, "K split, int8 two rows");
    } else { /* bf16 c: the parts summed in f32, rounded once */
      mm_case mb = plain(cs[i].da, cs[i].db, TL_BF16, 1, N, K);
      mb.bias = 1, mb.res = 1;
      check_case(&mb, 0, "K split, bf16 c");
      mm_case m2 = plain(cs[i].da, cs[i].db, cs[i].dc, 2, N, K); /* two rows of a: [S, 2, N] parts */
      m2.trans_a = 1, m2.bias = 1, m2.act = TL_ACT_RELU, m2.beta = 0.5f;
      check_case(&m2, 0, "K split, two rows");
      const int64_t sa2[2] = {2, K}, sc2[2] = {2, N};
      tl_tensor a2 = tl_tensor_make(dummy, cs[i].da, 2, sa2), c2 = tl_tensor_make(dummy, cs[i].dc, 2, sc2);
      tl_mm_build bd2;
      const tl_matmul_opts mo = TL_MATMUL_OPTS_INIT;
      CHECK(tl_mm_prepare(ctx, &a2, &b, &c2, &mo, &bd2) == TL_OK && bd2.split == 2, "[%s] %s 2x%lldx%lld: split %d, expected 2",
            g_isa, tl_dtype_name(cs[i].da), (long long)N, (long long)K, bd2.split);
    }
  }
  /* a staging budget too small for the split's plans (its partial row of 16 KiB): the call
   * runs the unsplit plan the budget takes, and says nothing */
  tl_ctx *tiny;
  tl_ctx_opts ot = {.isa = g_isa, .threads = 2, .tune = -1, .vmem_bytes = 8192};
  REQUIRE(tl_ctx_new(&ot, &tiny) == TL_OK, "%s", tl_last_error());
  if (l3 / 8 <= ((int64_t)64 << 20)) {
    g_ctx = tiny;
    const int64_t N = 4096, K = l3 / 8 / 4096 + 77;
    mm_case mt = plain(TL_U8, TL_I8, TL_I32, 1, N, K);
    mt.bias = 1;
    check_case(&mt, 0, "K split refused by the budget");
    const int64_t sa[2] = {1, K}, sb[2] = {K, N}, sc[2] = {1, N}, one = N;
    char dummy[64];
    tl_tensor a = tl_tensor_make(dummy, TL_U8, 2, sa), b = tl_tensor_make(dummy, TL_I8, 2, sb);
    tl_tensor c = tl_tensor_make(dummy, TL_I32, 2, sc), bias = tl_tensor_make(dummy, TL_I32, 1, &one);
    tl_matmul_opts mo = TL_MATMUL_OPTS_INIT;
    mo.bias = &bias;
    int64_t cfg[3];
    int split = -1;
    CHECK(tl_mm_cached_config(tiny, &a, &b, &c, &mo, cfg, &split) == 1 && split == 0,
          "[%s] 8 KiB of VMEM: split %d, expected the unsplit plan", g_isa, split);
    g_ctx = ctx;
  }
  tl_ctx_free(tiny);
  /* one or two rows of int8 a, rows of any length, stream and split; beside the rule: three
   * rows, b's rows padded (a row stride past N: streamed, not split), one thread */
  tl_ctx *one;
  tl_ctx_opts o1 = {.isa = g_isa, .threads = 1, .tune = -1};
  REQUIRE(tl_ctx_new(&o1, &one) == TL_OK, "%s", tl_last_error());
  const int64_t K = l3 / 8 / 4096 + 77;
  static const struct {
    int64_t m, n, ldb;
    int one_thread, split;
  } rs[] = {{1, 4096, 4096, 0, 2}, {1, 8192, 8192, 0, 2}, {2, 4096, 4096, 0, 2}, {1, 1000, 1000, 0, 2},
             {3, 4096, 4096, 0, -1}, {1, 4096, 8192, 0, 0}, {1, 4096, 4096, 1, 0}};
  char dummy[64];
  for (size_t i = 0; i < TL_ARRAY_LEN_T(rs); i++) {
    /* -1: three rows split where the level has the row-major int8 kernel (test_ksplit_rows) */
    const int want = rs[i].split >= 0 ? rs[i].split : info.isa >= TL_ISA_AVX512VNNI ? 2 : 0;
    const int64_t ki = TL_MAX(K, l3 / 16 / rs[i].n + 77); /* b past a sixteenth of the L3 */
    const int64_t sa[2] = {rs[i].m, ki}, sb[2] = {ki, rs[i].n}, sc[2] = {rs[i].m, rs[i].n};
    tl_tensor a = tl_tensor_make(dummy, TL_U8, 2, sa), b = tl_tensor_make(dummy, TL_I8, 2, sb);
    tl_tensor c = tl_tensor_make(dummy, TL_I32, 2, sc);
    b.stride[0] = rs[i].ldb;
    tl_mm_build bd;
    const tl_matmul_opts mo = TL_MATMUL_OPTS_INIT;
    tl_ctx *x = rs[i].one_thread ? one : ctx;
    const tl_status st = tl_mm_prepare(x, &a, &b, &c, &mo, &bd);
    CHECK(st == TL_OK && bd.split == want, "[%s] int8 %lldx%lldx%lld, row stride %lld, %d thread(s): split %d, expected %d (%s)",
          g_isa, (long long)rs[i].m, (long long)rs[i].n, (long long)ki, (long long)rs[i].ldb, rs[i].one_thread ? 1 : 2,
          st == TL_OK ? bd.split : -1, want, tl_ctx_error(x));
  }
  /* f32, one or two rows: such a b streams (and splits) past a sixteenth of the L3, not below it */
  for (int64_t m = 1; m <= 4; m++) {
    const int64_t kk = m <= 2 ? l3 / 16 / 4096 + 7 : l3 / 16 / 4096 - 7, sa[2] = {m & 1 ? 1 : 2, kk}, sb[2] = {kk, 1024},
                  sc[2] = {sa[0], 1024};
    const int past = m <= 2;
    tl_tensor a = tl_tensor_make(dummy, TL_F32, 2, sa), b = tl_tensor_make(dummy, TL_F32, 2, sb);
    tl_tensor c = tl_tensor_make(dummy, TL_F32, 2, sc);
    tl_mm_build bd;
    const tl_matmul_opts mo = TL_MATMUL_OPTS_INIT;
    const tl_status st = tl_mm_prepare(ctx, &a, &b, &c, &mo, &bd);
    CHECK(st == TL_OK && bd.run.stream == past && bd.split == (past ? 2 : 0),
          "[%s] f32 %lldx1024x%lld (b %s a sixteenth of the L3): stream %d split %d", g_isa, (long long)sa[0],
          (long long)kk, past ? "past" : "within", bd.run.stream, bd.split);
  }
  tl_ctx_free(one);
  g_ctx = saved;
  tl_ctx_free(ctx);
}

/* The plan tl_matmul builds for mc on ctx: whether K is split, the first kernel copies b in
 * chunks (tl_mm_run.chunk_k rows by chunk_n columns, both 0 without) and b is streamed. Returns
 * 0 when the build fails (checked). */
static int ksplit_build(tl_ctx *ctx, const mm_case *mc, int *split, int64_t *chunk, int64_t *slice, int *stream) {
  char dummy[64];
  tl_tensor a = tl_tensor_make(dummy, mc->da, 2, mc->sa), b = tl_tensor_make(dummy, mc->db, 2, mc->sb);
  tl_tensor c = tl_tensor_make(dummy, mc->dc, 2, mc->sc);
  if (mc->trans_a) a.stride[0] = 1, a.stride[1] = mc->sa[0];
  tl_mm_build bd;
  const tl_matmul_opts mo = TL_MATMUL_OPTS_INIT;
  const tl_status st = tl_mm_prepare(ctx, &a, &b, &c, &mo, &bd);
  CHECK(st == TL_OK, "[%s] build %lldx%lldx%lld: %s", g_isa, (long long)mc->sa[0], (long long)mc->sb[1], (long long)mc->sa[1],
        tl_ctx_error(ctx));
  *split = st == TL_OK ? bd.split : -1;
  *chunk = st == TL_OK && bd.split ? bd.ks_run.chunk_k : 0;
  *slice = st == TL_OK && bd.split && bd.ks_run.chunk_k ? bd.ks_run.chunk_n : 0;
  *stream = st == TL_OK && bd.run.stream;
  return st == TL_OK;
}

/* 3-16 rows of bf16 / int8 a against a b streamed with contiguous rows (past a sixteenth of the
 * L3) on 2 threads: where the level has a row-major kernel for them (bf16 AVX512-BF16, int8
 * AVX512-VNNI, at the amx level up to 15 rows: tl_mm_rows_split) K is split between the threads:
 * bf16 up to 8 rows walked in place by the dot (no chunk), int8 and 9-16 bf16 rows with each K
 * block copied into VMEM a chunk of rows at a time; else the product runs unsplit as before; all
 * against the reference (int8 exact, and equal to the packed b's run), with N not a multiple of
 * any panel, K blocks ending in a partial chunk, signed and unsigned int8, bf16 c, int8 scales to
 * f32, the epilogue; a transposed a (read in place only with unit column stride) and a VMEM
 * budget without room for the accumulator rows stay unsplit. */
static void test_ksplit_rows(void) {
  tl_ctx *saved = g_ctx, *ctx, *tiny;
  tl_ctx_opts opts = {.isa = g_isa, .threads = 2, .tune = -1, .vmem_bytes = 768 << 10}; /* (the slices below) */
  REQUIRE(tl_ctx_new(&opts, &ctx) == TL_OK, "%s", tl_last_error());
  tl_ctx_opts ot = {.isa = g_isa, .threads = 2, .tune = -1, .vmem_bytes = 64 << 10};
  REQUIRE(tl_ctx_new(&ot, &tiny) == TL_OK, "%s", tl_last_error());
  tl_ctx_info info;
  tl_ctx_info_get(ctx, &info);
  const int64_t l3 = tl_kernels_l3_bytes(&info);
  if (l3 / 16 > ((int64_t)64 << 20)) {
    fprintf(stderr, "    ksplit rows: b would be past %lld MiB to stream here: skipped\n", (long long)(l3 / 16 >> 20));
    tl_ctx_free(tiny), tl_ctx_free(ctx);
    return;
  }
  static const struct {
    tl_dtype da, db, dc;
    int64_t m, n;
    int scales, epi, trans_a;
  } cs[] = {{TL_U8, TL_I8, TL_I32, 3, 4096, 0, 0, 0},     {TL_U8, TL_I8, TL_I32, 16, 1000, 0, 1, 0},
            {TL_I8, TL_I8, TL_I32, 8, 4100, 0, 0, 0},     {TL_U8, TL_I8, TL_F32, 13, 2000, 1, 1, 0},
            {TL_BF16, TL_BF16, TL_F32, 5, 2048, 0, 0, 0}, {TL_BF16, TL_BF16, TL_F32, 16, 1009, 0, 1, 0},
            {TL_BF16, TL_BF16, TL_BF16, 12, 1024, 0, 0, 0}, {TL_BF16, TL_BF16, TL_F32, 7, 2048, 0, 0, 1},
            {TL_U8, TL_I8, TL_I32, 4, 4096, 0, 0, 1},       {TL_BF16, TL_BF16, TL_F32, 8, 1000, 0, 1, 0},
            {TL_BF16, TL_BF16, TL_BF16, 3, 4100, 0, 0, 0}};
  g_ctx = ctx;
  for (size_t i = 0; i < TL_ARRAY_LEN_T(cs); i++) {
    if (!g_top && i % 3 && cs[i].m != 16) continue; /* below the top level a third, and 16 rows (the amx rule) */
    const int i8 = cs[i].da != TL_BF16;
    const int unit = (i8 ? info.isa >= TL_ISA_AVX512VNNI : info.isa >= TL_ISA_AVX512BF16) &&
                     (info.isa < TL_ISA_AMX || cs[i].m < 16);
    const int want = unit && !cs[i].trans_a, chunks = want && i8;
    /* (walked bf16 rows: K of at least 4096, so that each thread's K blocks pass the dot's 1 MiB
     * and it has more than one of them, whatever the L3; 9-16 rows (N about 1000) at least
     * 2048, blocks still past 1 MiB; only where the walk runs, the references being slow under
     * the sanitizers) */
    const int64_t Kw = cs[i].m > 8 ? 2048 + 77 : 4096 + 77;
    const int64_t K = TL_MAX(l3 / 16 / (cs[i].n * (i8 ? 1 : 2)) + 77, want && !chunks ? Kw : 0);
    const int64_t N = cs[i].n;
    mm_case mc = plain(cs[i].da, cs[i].db, cs[i].dc, cs[i].m, N, K);
    mc.scales = cs[i].scales, mc.trans_a = cs[i].trans_a;
    if (cs[i].epi && g_top) mc.alpha = 0.5f, mc.beta = 0.25f, mc.bias = 1, mc.res = 1, mc.act = i8 ? TL_ACT_RELU : TL_ACT_GELU;
    int split, stream;
    int64_t chunk, slice;
    /* the chunks: up to 256 bytes of each column (bf16 128 rows, int8 256; K here depends on the
     * L3, and a shorter K block makes the chunk shorter and the slices wider) by slices of whole
     * 64 columns, the last one short where N is not a multiple (1000, 4100, 2000); K blocks
     * ending in a short chunk. The exact sizes: the builds after this loop. bf16: none (the
     * walk, 3-16 rows; 16x1009: the wide walk's N edge) */
    if (ksplit_build(ctx, &mc, &split, &chunk, &slice, &stream))
      CHECK(split == (want ? 2 : 0) && (chunk > 0) == chunks && chunk <= 256 / (i8 ? 1 : 2) &&
                (chunks ? slice > 0 && slice < N && slice % 64 == 0 : slice == 0),
            "[%s] %s %lldx%lldx%lld%s: split %d chunk %lld x %lld, expected %s", g_isa, tl_dtype_name(cs[i].da),
            (long long)cs[i].m, (long long)N, (long long)K, cs[i].trans_a ? " (a transposed)" : "", split, (long long)chunk,
            (long long)slice,
            chunks ? "2 and chunks of up to 256 bytes of K by slices of N" : want ? "2 without chunks" : "unsplit");
    check_case(&mc, mc.dc == TL_I32 && mc.beta == 0,
               chunks ? "K split, 3-16 rows in chunks" : want ? "K split, bf16 walked" : "3-16 rows, unsplit");
    { /* what ran: the split (its plans taken, not refused for the unsplit one) */
      char dummy[64];
      tl_tensor a = tl_tensor_make(dummy, mc.da, 2, mc.sa), b = tl_tensor_make(dummy, mc.db, 2, mc.sb);
      tl_tensor c = tl_tensor_make(dummy, mc.dc, 2, mc.sc), one = tl_tensor_make(dummy, mc.dc == TL_I32 ? TL_I32 : TL_F32, 1, &N);
      tl_tensor res = tl_tensor_make(dummy, mc.dc == TL_I32 ? TL_I32 : mc.dc, 2, mc.sc), sv = tl_tensor_make(dummy, TL_F32, 1, &N);
      const int64_t mm = cs[i].m;
      tl_tensor su = tl_tensor_make(dummy, TL_F32, 1, &mm);
      if (mc.trans_a) a.stride[0] = 1, a.stride[1] = mc.sa[0];
      res.stride[0] = 1, res.stride[1] = mc.sc[0]; /* run_case's residual: a transposed view */
      tl_matmul_opts mo = TL_MATMUL_OPTS_INIT;
      mo.alpha = mc.alpha, mo.beta = mc.beta, mo.act = mc.act;
      if (mc.bias) mo.bias = &one;
      if (mc.res) mo.residual = &res;
      if (mc.scales) mo.scale_a = &su, mo.scale_b = &sv;
      int64_t cfg[3];
      int ran = -1;
      CHECK(tl_mm_cached_config(ctx, &a, &b, &c, &mo, cfg, &ran) == 1 && ran == (want ? 2 : 0),
            "[%s] %s %lldx%lldx%lld: the cached plan's split %d, expected %d", g_isa, tl_dtype_name(cs[i].da),
            (long long)cs[i].m, (long long)N, (long long)K, ran, want ? 2 : 0);
    }
    if (i == 0) { /* 64 KiB of VMEM: no room for the accumulator rows (48 KiB, past half): unsplit */
      g_ctx = tiny;
      if (ksplit_build(tiny, &mc, &split, &chunk, &slice, &stream))
        CHECK(split == 0, "[%s] 64 KiB of VMEM: split %d, expected the unsplit plan", g_isa, split);
      check_case(&mc, 0, "3-16 rows, no room for a chunk");
      g_ctx = ctx;
    }
  }
  /* the chunk sizes on 768 KiB of VMEM, K at least 4096 (K blocks of 1024; builds only):
   * 256 bytes of K by slices of 256 columns (a twelfth of the budget) — int8 256 x 256 (N 4096:
   * 16 slices; 4100: 16 of 256 and one of 4; 3001 at 16 rows: 12 slices); bf16 walked without
   * chunks (16x3001, 10x8192: 320 KiB of accumulator rows); long rows (bf16 N 11008) at 12 and
   * 16 rows not split (528 and 704 KiB of accumulator rows, past half the budget: the N split
   * instead), at 8 rows (352 KiB) split and walked */
  static const struct {
    tl_dtype da, db;
    int64_t m, n, split, chunk, slice;
  } xs[] = {{TL_U8, TL_I8, 3, 4096, 1, 256, 256},      {TL_I8, TL_I8, 8, 4100, 1, 256, 256},
            {TL_U8, TL_I8, 16, 3001, 1, 256, 256},     {TL_BF16, TL_BF16, 16, 3001, 1, 0, 0},
            {TL_BF16, TL_BF16, 10, 8192, 1, 0, 0},
            {TL_BF16, TL_BF16, 8, 11008, 1, 0, 0},    {TL_BF16, TL_BF16, 12, 11008, 0, 0, 0},
            {TL_BF16, TL_BF16, 16, 11008, 0, 0, 0}};
  for (size_t i = 0; i < TL_ARRAY_LEN_T(xs); i++) {
    const int i8 = xs[i].da != TL_BF16;
    const int64_t N = xs[i].n, K = TL_MAX(4096, l3 / 16 / (N * (i8 ? 1 : 2)) + 77);
    mm_case mc = plain(xs[i].da, xs[i].db, i8 ? TL_I32 : TL_F32, xs[i].m, N, K);
    const int want = xs[i].split && (i8 ? info.isa >= TL_ISA_AVX512VNNI : info.isa >= TL_ISA_AVX512BF16) &&
                     (info.isa < TL_ISA_AMX || xs[i].m < 16);
    int split, stream;
    int64_t chunk, slice;
    if (ksplit_build(ctx, &mc, &split, &chunk, &slice, &stream))
      CHECK((split == 2) == want && chunk == (want ? xs[i].chunk : 0) && slice == (want ? xs[i].slice : 0),
            "[%s] %s %lldx%lldx%lld on 768 KiB: split %d chunk %lld x %lld, expected %s", g_isa, tl_dtype_name(xs[i].da),
            (long long)xs[i].m, (long long)N, (long long)K, split, (long long)chunk, (long long)slice,
            want ? "2 and the sizes above" : "unsplit, no chunks");
  }
  /* beside the rule (builds only): f32 past 16 rows (its N split kept), N of one 16-column
   * block, and a chunk past half the budget: int8 12x256 (12 KiB of accumulator rows) on 40
   * KiB (the narrowest chunk, 256 rows of 64 columns 128 bytes apart, is 32 KiB) unsplit, on 64
   * KiB split in such chunks; bf16 12x256 and 3x256, walked without a chunk, split on 40 KiB */
  static const struct {
    tl_dtype da, db, dc;
    int64_t m, n, vmem, split, chunk;
  } bs[] = {{TL_F32, TL_F32, TL_F32, 8, 4096, 0, 0, 0},         {TL_F32, TL_F32, TL_F32, 17, 2048, 0, 0, 0},
            {TL_U8, TL_I8, TL_I32, 8, 16, 0, 0, 0},             {TL_U8, TL_I8, TL_I32, 12, 256, 40 << 10, 0, 0},
            {TL_U8, TL_I8, TL_I32, 12, 256, 64 << 10, 1, 256},  {TL_BF16, TL_BF16, TL_F32, 12, 256, 40 << 10, 1, 0},
            {TL_BF16, TL_BF16, TL_F32, 3, 256, 40 << 10, 1, 0}};
  for (size_t i = 0; i < TL_ARRAY_LEN_T(bs); i++) {
    tl_ctx *x = ctx;
    if (bs[i].vmem) {
      tl_ctx_opts ov = {.isa = g_isa, .threads = 2, .tune = -1, .vmem_bytes = (size_t)bs[i].vmem};
      REQUIRE(tl_ctx_new(&ov, &x) == TL_OK, "%s", tl_last_error());
    }
    const int64_t es = (int64_t)tl_dtype_size(bs[i].db), N = bs[i].n, K = l3 / 16 / (N * es) + 77;
    mm_case mc = plain(bs[i].da, bs[i].db, bs[i].dc, bs[i].m, N, K);
    const int want = bs[i].split && info.isa >= (bs[i].da == TL_BF16 ? TL_ISA_AVX512BF16 : TL_ISA_AVX512VNNI);
    int split, stream;
    int64_t chunk, slice;
    if (ksplit_build(x, &mc, &split, &chunk, &slice, &stream))
      CHECK(split == (want ? 2 : 0) && chunk == (want ? bs[i].chunk : 0) && slice == (want && bs[i].chunk ? 64 : 0) &&
                stream == want,
            "[%s] %s %lldx%lldx%lld (VMEM %lld): split %d chunk %lld x %lld stream %d, expected %s", g_isa,
            tl_dtype_name(bs[i].da), (long long)bs[i].m, (long long)N, (long long)K, (long long)bs[i].vmem, split,
            (long long)chunk, (long long)slice, stream,
            want ? (bs[i].chunk ? "2 and 256 x 64" : "2 without chunks") : "unsplit, not streamed");
    if (x != ctx) tl_ctx_free(x);
  }
  /* the copy's rows never a multiple of 4 KiB apart (int8 rows of 4032 bytes: 4160, not 4096;
   * 12 MiB of VMEM, so that the whole of N is one slice) */
  if (info.isa >= TL_ISA_AVX512VNNI) {
    tl_ctx *big;
    tl_ctx_opts ob = {.isa = g_isa, .threads = 2, .tune = -1, .vmem_bytes = 12 << 20};
    REQUIRE(tl_ctx_new(&ob, &big) == TL_OK, "%s", tl_last_error());
    char dummy[64];
    const int64_t N = 4032, K = l3 / 16 / N + 77, sa[2] = {12, K}, sb[2] = {K, N}, sc[2] = {12, N};
    tl_tensor a = tl_tensor_make(dummy, TL_U8, 2, sa), b = tl_tensor_make(dummy, TL_I8, 2, sb);
    tl_tensor c = tl_tensor_make(dummy, TL_I32, 2, sc);
    tl_mm_build bd;
    const tl_matmul_opts mo = TL_MATMUL_OPTS_INIT;
    const tl_status st = tl_mm_prepare(big, &a, &b, &c, &mo, &bd);
    CHECK(st == TL_OK && bd.split == 2 && bd.ks_run.chunk_n == N && bd.ks_run.chunk_ld == 4160,
          "[%s] int8 12x4032x%lld: split %d, slices of %lld, copy rows %lld bytes apart (expected 4032 and 4160)", g_isa,
          (long long)K, st == TL_OK ? bd.split : -1, st == TL_OK ? (long long)bd.ks_run.chunk_n : -1LL,
          st == TL_OK ? (long long)bd.ks_run.chunk_ld : -1LL);
    tl_ctx_free(big);
  }
  g_ctx = saved;
  tl_ctx_free(tiny);
  tl_ctx_free(ctx);
}

static void test_k0_and_empty(void) {
  mm_case mc = plain(TL_F32, TL_F32, TL_F32, 5, 7, 0);
  check_case(&mc, 0, "K = 0");
  mc.bias = 1, mc.res = 1, mc.act = TL_ACT_SILU;
  check_case(&mc, 0, "K = 0 with epilogue");
  mm_case mb = plain(TL_BF16, TL_BF16, TL_BF16, 5, 20, 0);
  mb.bias = 1;
  check_case(&mb, 1, "bf16 K = 0 packed");
  mm_case mi = plain(TL_U8, TL_I8, TL_I32, 5, 20, 0);
  check_case(&mi, 1, "int8 K = 0 packed");
  float x = 1;
  int64_t s0[2] = {0, 4}, s1[2] = {4, 3}, s2[2] = {0, 3};
  tl_tensor a = tl_tensor_make(&x, TL_F32, 2, s0), b = tl_tensor_make(&x, TL_F32, 2, s1), c = tl_tensor_make(&x, TL_F32, 2, s2);
  CHECK(tl_matmul(g_ctx, &a, &b, &c, NULL) == TL_OK && x == 1, "[%s] M = 0: %s", g_isa, tl_ctx_error(g_ctx));
}

static void test_nan_inf(void) {
  for (int bf = 0; bf < 2; bf++) {
    tl_dtype dt = bf ? TL_BF16 : TL_F32;
    int64_t M = 9, N = 40, K = 50;
    int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
    mm_t a = mk(dt, 2, sa, 0, -1), b = mk(dt, 2, sb, 0, -1), c = mk(TL_F32, 2, sc, 0, -1);
    /* a[2, 5] = NaN: row 2 is NaN; b[7, 3] = +Inf with a[., 7] != 0: column 3 is +-Inf or NaN */
    if (bf) ((uint16_t *)a.mem)[2 * K + 5] = 0x7FC0, ((uint16_t *)b.mem)[7 * N + 3] = 0x7F80;
    else ((float *)a.mem)[2 * K + 5] = NAN, ((float *)b.mem)[7 * N + 3] = INFINITY;
    tl_status s = tl_matmul(g_ctx, &a.t, &b.t, &c.t, NULL);
    CHECK(s == TL_OK, "[%s] nan: %s", g_isa, tl_ctx_error(g_ctx));
    const float *cp = c.mem;
    int ok_row = 1, ok_col = 1, ok_rest = 1;
    for (int64_t j = 0; j < N; j++) ok_row &= isnan(cp[2 * N + j]);
    for (int64_t i = 0; i < M; i++) ok_col &= i == 2 ? 1 : isinf(cp[i * N + 3]);
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++)
        if (i != 2 && j != 3) ok_rest &= isfinite(cp[i * N + j]);
    CHECK(ok_row && ok_col && ok_rest, "[%s] %s NaN/Inf propagation: row %d col %d rest %d", g_isa, tl_dtype_name(dt), ok_row,
          ok_col, ok_rest);
    free(a.mem), free(b.mem), free(c.mem);
  }
}

/* The threads' shares of the parallel blocks (tl_mm_balance) and the N blocks picked for them:
 * f32 4097^3 with b packed on 2 threads took BN 480 (the busier thread 5% above the mean);
 * the config now picks a width whose shares are within 2%. */
static void test_balance(void) {
  CHECK(fabs(tl_mm_balance(1, 2048, 2048, 128, 512, 2) - 1.0) < 1e-12, "[%s] 2048^3: even shares", g_isa);
  const double b480 = tl_mm_balance(1, 4097, 4097, 128, 480, 2);
  CHECK(b480 > 0.94 && b480 < 0.96, "[%s] 4097^3, BN 480: balance %.4f", g_isa, b480);
  tl_ctx *ctx;
  tl_ctx_opts opts = {.isa = g_isa, .threads = 2, .tune = -1};
  REQUIRE(tl_ctx_new(&opts, &ctx) == TL_OK, "%s", tl_last_error());
  const int64_t n = 4097, sa[2] = {n, n};
  float da_[4], db_[4], dc_[4]; /* config only: never read */
  tl_tensor a = tl_tensor_make(da_, TL_F32, 2, sa), c = tl_tensor_make(dc_, TL_F32, 2, sa);
  tl_tensor b = tl_tensor_make_tiled(db_, TL_F32, 2, sa, tl_mm_pack_layout(TL_F32, n, 1));
  int64_t cfg[3];
  int tuned = -1;
  CHECK(tl_mm_config_used(ctx, &a, &b, &c, NULL, cfg, &tuned) == TL_OK && tuned == 0, "[%s] config: %s", g_isa, tl_ctx_error(ctx));
  const double bal = tl_mm_balance(1, n, n, cfg[0], cfg[1], 2);
  CHECK(bal >= 0.98 && cfg[1] % 32 == 0 && cfg[1] <= 512, "[%s] 4097^3 packed, 2 threads: BM %lld BN %lld, balance %.4f", g_isa,
        (long long)cfg[0], (long long)cfg[1], bal);
  /* fewer than 256 rows stream b: the N blocks stay wide (16x11008x4096: 256, not 128; at the
   * AVX2 and AVX-512 levels the sweep's 512, test_sweep) */
  const int64_t s16[2] = {16, 4096}, sb[2] = {4096, 11008}, sc[2] = {16, 11008};
  float d1[4], d2[4], d3[4];
  tl_tensor a16 = tl_tensor_make(d1, TL_F32, 2, s16), b16 = tl_tensor_make(d2, TL_F32, 2, sb), c16 = tl_tensor_make(d3, TL_F32, 2, sc);
  tl_ctx_info info;
  tl_ctx_info_get(ctx, &info);
  const int64_t wide = info.isa >= TL_ISA_AVX2 ? 512 : 256;
  CHECK(tl_mm_config_used(ctx, &a16, &b16, &c16, NULL, cfg, &tuned) == TL_OK && cfg[1] == wide,
        "[%s] 16x11008x4096: BN %lld, expected %lld (%s)", g_isa, (long long)cfg[1], (long long)wide, tl_ctx_error(ctx));
  tl_ctx_free(ctx);
}

/* How b is read by the skinny bf16 / int8 products (3-16 rows of a; docs/matmul.md): past a
 * sixteenth of the L3 where the level has the row-major kernels, the K split (int8 copying b in
 * chunks, bf16 walking it in place); else row-major (in place, or as a plain copy of each block when b's rows are a
 * multiple of 4 KiB apart: int8 only), blocks of 256 x 512, the executor's prefetch; past 16
 * rows (at the amx level: from 16)
 * the VNNI tiles; 1 row streams from an eighth of the L3 (bf16, int8) or half (f32). The plans
 * are only built (the data pointers are never read). */
static void test_skinny_plan(void) {
  tl_ctx *ctx;
  tl_ctx_opts opts = {.isa = g_isa, .threads = 2, .tune = -1};
  REQUIRE(tl_ctx_new(&opts, &ctx) == TL_OK, "%s", tl_last_error());
  tl_ctx_info info;
  tl_ctx_info_get(ctx, &info);
  const int amx = info.isa >= TL_ISA_AMX;
  const int64_t l3 = tl_kernels_l3_bytes(&info);
  static const struct {
    tl_dtype da;
    int64_t m, n, k;
  } cs[] = {{TL_U8, 6, 4096, 4096}, {TL_U8, 7, 300, 4096}, {TL_U8, 16, 4096, 1000}, {TL_U8, 17, 4096, 1000},
            {TL_BF16, 12, 4096, 4096}, {TL_BF16, 16, 2048, 700}, {TL_U8, 1, 4096, 4096}, {TL_BF16, 1, 1024, 4096},
            {TL_F32, 1, 4096, 4096}};
  char dummy[64];
  for (size_t i = 0; i < TL_ARRAY_LEN_T(cs); i++) {
    const tl_dtype da = cs[i].da, db = da == TL_U8 ? TL_I8 : da, dc = da == TL_U8 ? TL_I32 : TL_F32;
    const int64_t sa[2] = {cs[i].m, cs[i].k}, sb[2] = {cs[i].k, cs[i].n}, sc[2] = {cs[i].m, cs[i].n};
    tl_tensor a = tl_tensor_make(dummy, da, 2, sa), b = tl_tensor_make(dummy, db, 2, sb), c = tl_tensor_make(dummy, dc, 2, sc);
    tl_mm_build bd;
    const tl_matmul_opts o = TL_MATMUL_OPTS_INIT;
    const tl_status st = tl_mm_prepare(ctx, &a, &b, &c, &o, &bd);
    CHECK(st == TL_OK, "[%s] prepare: %s", g_isa, tl_ctx_error(ctx));
    if (st != TL_OK) continue;
    const tl_blockspec *bs = &bd.in[bd.run.ib];
    const int64_t m = cs[i].m, bytes = cs[i].n * cs[i].k * (int64_t)tl_dtype_size(db);
    const char *what = da == TL_U8 ? "int8" : da == TL_BF16 ? "bf16" : "f32";
    if (m == 1) {
      const int stream = bytes > (da == TL_F32 ? l3 / 2 : l3 / 8);
      CHECK(bd.run.stream == stream && (!stream || bs->stage == TL_STAGE_NEVER), "[%s] %s 1x%lldx%lld: stream %d, expected %d",
            g_isa, what, (long long)cs[i].n, (long long)cs[i].k, bd.run.stream, stream);
      continue;
    }
    /* past a sixteenth of the L3 (b's rows contiguous, 2 threads) at the levels with the
     * row-major kernels: the K split, int8 with b copied in chunks, bf16 walked in place
     * (test_ksplit_rows) */
    const int unit = da == TL_U8 ? info.isa >= TL_ISA_AVX512VNNI : da == TL_BF16 && info.isa >= TL_ISA_AVX512BF16;
    if (unit && m <= (amx ? 15 : 16) && bytes > l3 / 16) {
      const int walk = da == TL_BF16;
      CHECK(bd.run.stream && bs->stage == TL_STAGE_NEVER && bd.split == 2 && (bd.ks_run.chunk_k > 0) == !walk &&
                bd.ks_run.walk == walk,
            "[%s] %s %lldx%lldx%lld: stream %d stage %d split %d chunk %lld walk %d (expected the K split, %s)", g_isa, what,
            (long long)m, (long long)cs[i].n, (long long)cs[i].k, bd.run.stream, (int)bs->stage, bd.split,
            (long long)bd.ks_run.chunk_k, bd.ks_run.walk, walk ? "walked" : "in chunks");
      continue;
    }
    const int rm = m <= (amx ? 15 : 16);
    const int copy = rm && da == TL_U8 && cs[i].n % 4096 == 0;
    CHECK(bd.run.rm == rm && bs->layout.tiled == !rm && (bs->stage == TL_STAGE_ALWAYS) == copy && bs->prefetch == 1,
          "[%s] %s %lldx%lldx%lld: rm %d tiled %d stage %d prefetch %d (expected rm %d, copy %d)", g_isa, what, (long long)m,
          (long long)cs[i].n, (long long)cs[i].k, bd.run.rm, bs->layout.tiled, (int)bs->stage, bs->prefetch, rm, copy);
    if (rm)
      CHECK(bd.run.BK <= 256 && (cs[i].n >= 2048 ? bd.run.BN == 512 : bd.run.BN <= 512), "[%s] %s %lld rows: blocks %lld x %lld",
            g_isa, what, (long long)m, (long long)bd.run.BK, (long long)bd.run.BN);
  }
  tl_ctx_free(ctx);
}

static void test_cache(void) {
  /* more distinct shapes than the cache holds, then the first again */
  for (int r = 0; r < 2; r++)
    for (int i = 0; i < 40; i += r ? 13 : 1) {
      mm_case mc = plain(TL_F32, TL_F32, TL_F32, 1 + i % 5, 3 + i, 4);
      double err = run_case(&mc, 0);
      CHECK(err >= 0 && err <= 1e-5, "[%s] cache shape %d: err %g", g_isa, i, err);
    }
  /* same shapes, new alpha / beta values (not part of the key) */
  mm_case mc = plain(TL_F32, TL_F32, TL_F32, 20, 30, 40);
  mc.alpha = 2, mc.beta = 0.5f;
  check_case(&mc, 0, "cache alpha 2");
  mc.alpha = -1, mc.beta = 3;
  check_case(&mc, 0, "cache alpha -1");
}

/* One refusal: status st, message naming `word`, c untouched. */
static void refuse(const char *what, const tl_tensor *a, const tl_tensor *b, tl_tensor *c, const tl_matmul_opts *o, tl_status st,
                   const char *word) {
  int64_t nb = c && c->data ? tl_tensor_nbytes(c) : 0;
  void *save = nb > 0 ? malloc((size_t)nb) : NULL;
  if (save) memcpy(save, c->data, (size_t)nb);
  tl_status s = tl_matmul(g_ctx, a, b, c, o);
  CHECK(s == st, "[%s] %s: got %s, want %s (%s)", g_isa, what, tl_status_name(s), tl_status_name(st), tl_ctx_error(g_ctx));
  CHECK(strstr(tl_ctx_error(g_ctx), word) != NULL, "[%s] %s: message '%s' lacks '%s'", g_isa, what, tl_ctx_error(g_ctx), word);
  if (save) CHECK(!memcmp(save, c->data, (size_t)nb), "[%s] %s: c was written", g_isa, what);
  free(save);
}

static void test_refusals(void) {
  int64_t sa[2] = {4, 6}, sb[2] = {6, 5}, sc[2] = {4, 5}, sbad[2] = {7, 5}, s3a[3] = {2, 4, 6}, s3c[3] = {3, 4, 5};
  mm_t a = mk(TL_F32, 2, sa, 0, -1), b = mk(TL_F32, 2, sb, 0, -1), c = mk(TL_F32, 2, sc, 0, -1);
  mm_t bk = mk(TL_F32, 2, sbad, 0, -1), a3 = mk(TL_F32, 3, s3a, 0, -1), c3 = mk(TL_F32, 3, s3c, 0, -1);
  mm_t ab = mk(TL_BF16, 2, sa, 0, -1), bb = mk(TL_BF16, 2, sb, 0, -1), ai = mk(TL_I8, 2, sa, 0, -1), bu = mk(TL_U8, 2, sb, 0, -1);
  mm_t ci = mk(TL_I32, 2, sc, 0, -1), bi = mk(TL_I8, 2, sb, 0, -1);
  int64_t n4 = 4, n5 = 5, n6 = 6;
  mm_t v4 = mk(TL_F32, 1, &n4, 0, -1), v5 = mk(TL_F32, 1, &n5, 0, -1), v6 = mk(TL_F32, 1, &n6, 0, -1), r = mk(TL_F32, 2, sa, 0, -1);
  tl_matmul_opts o = TL_MATMUL_OPTS_INIT;
  refuse("K mismatch", &a.t, &bk.t, &c.t, NULL, TL_ERR_SHAPE, "a is [4, 6] (K = 6) but b is [7, 5] (K = 7)");
  refuse("c shape", &a.t, &b.t, &bk.t, NULL, TL_ERR_SHAPE, "c is [7, 5], expected [..., M = 4, N = 5] for a [4, 6] @ b [6, 5]");
  refuse("batch mismatch", &a3.t, &b.t, &c3.t, NULL, TL_ERR_SHAPE, "batch");
  refuse("f32 x bf16", &a.t, &bb.t, &c.t, NULL, TL_ERR_DTYPE, "bf16");
  refuse("bf16 -> i32", &ab.t, &bb.t, &ci.t, NULL, TL_ERR_DTYPE, "i32");
  refuse("i8 x u8", &ai.t, &bu.t, &ci.t, NULL, TL_ERR_DTYPE, "u8");
  refuse("NULL a", NULL, &b.t, &c.t, NULL, TL_ERR_INVALID, "a is NULL");
  refuse("NULL b", &a.t, NULL, &c.t, NULL, TL_ERR_INVALID, "b is NULL");
  refuse("NULL c", &a.t, &b.t, NULL, NULL, TL_ERR_INVALID, "c is NULL");
  tl_tensor an = a.t;
  an.data = NULL;
  refuse("NULL data", &an, &b.t, &c.t, NULL, TL_ERR_INVALID, "data is NULL");
  o.bias = &v4.t;
  refuse("bias length", &a.t, &b.t, &c.t, &o, TL_ERR_SHAPE, "bias");
  o = (tl_matmul_opts)TL_MATMUL_OPTS_INIT, o.residual = &r.t;
  refuse("residual shape", &a.t, &b.t, &c.t, &o, TL_ERR_SHAPE, "residual");
  o = (tl_matmul_opts)TL_MATMUL_OPTS_INIT, o.scale_a = &v4.t;
  refuse("scales with f32", &a.t, &b.t, &c.t, &o, TL_ERR_INVALID, "scale");
  refuse("scales with i32 c", &ai.t, &bi.t, &ci.t, &o, TL_ERR_DTYPE, "scale");
  mm_t cf = mk(TL_F32, 2, sc, 0, -1);
  o.scale_a = &v6.t;
  refuse("scale_a length", &ai.t, &bi.t, &cf.t, &o, TL_ERR_SHAPE, "scale_a");
  o = (tl_matmul_opts)TL_MATMUL_OPTS_INIT, o.scale_b = &v4.t;
  refuse("scale_b length", &ai.t, &bi.t, &cf.t, &o, TL_ERR_SHAPE, "scale_b");
  o = (tl_matmul_opts)TL_MATMUL_OPTS_INIT, o.act = (tl_act)9;
  refuse("act", &a.t, &b.t, &c.t, &o, TL_ERR_INVALID, "act");
  tl_tensor bt = bb.t;
  bt.layout = (tl_layout){.tiled = 1, .vnni = 2, .tile_r = 2, .tile_c = 16};
  bt.stride[0] = bt.stride[1] = 0;
  refuse("foreign tiled b", &ab.t, &bt, &c.t, NULL, TL_ERR_INVALID, "tl_matmul_pack_b");
  tl_tensor pb;
  CHECK(tl_matmul_pack_b(g_ctx, &b.t, TL_BF16, &pb) == TL_ERR_DTYPE, "[%s] pack_b f32 for bf16 a", g_isa);
  CHECK(tl_matmul_pack_b(g_ctx, NULL, TL_F32, &pb) == TL_ERR_INVALID, "[%s] pack_b NULL", g_isa);
  CHECK(tl_matmul(NULL, &a.t, &b.t, &c.t, NULL) == TL_ERR_INVALID, "[%s] NULL ctx", g_isa);
  (void)v5;
  mm_t *all[] = {&a, &b, &c, &bk, &a3, &c3, &ab, &bb, &ai, &bu, &ci, &bi, &v4, &v5, &v6, &r, &cf};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]->mem);
}


/* c overlapping an input over the whole call: refused before anything is written, whether the
 * overlap is within one run of the outer batch loop or across two of them; a valid call of the
 * same shapes afterwards is unaffected; c interleaved with a without overlapping still runs. */
static void test_overlap(void) {
  enum { B = 256 }; /* one 16 x 16 block of floats */
  float *buf = malloc(16 * B * sizeof *buf);
  for (int i = 0; i < 16 * B; i++) buf[i] = (float)test_rng_uniform(&g_rng, -1, 1);
  int64_t s4[4] = {2, 2, 16, 16}, s2[2] = {16, 16};
  mm_t b = mk(TL_F32, 2, s2, 0, -1), c2 = mk(TL_F32, 2, s2, 0, -1), r2 = mk(TL_F32, 2, s2, 0, -1);
  mm_t a2 = mk(TL_F32, 2, s2, 0, -1);
  /* a [2, 2, 16, 16] in blocks 0, 1, 10, 11 (batch strides 10 and 1 blocks: no merging, so
   * tl_matmul walks an outer batch loop) */
  tl_tensor a = tl_tensor_make(buf, TL_F32, 4, s4);
  a.stride[0] = 10 * B, a.stride[1] = B;
  float *save = malloc(16 * B * sizeof *save);
  memcpy(save, buf, 16 * B * sizeof *save);
  /* c's first batch on a's second (blocks 10, 11): its first run would overwrite what the second
   * reads */
  tl_tensor c = tl_tensor_make(buf + 10 * B, TL_F32, 4, s4);
  refuse("c over a's next batch", &a, &b.t, &c, NULL, TL_ERR_INVALID, "overlaps a");
  /* c's first batch free (blocks 4, 5), its second on a's second: refused before the first run */
  c = tl_tensor_make(buf + 4 * B, TL_F32, 4, s4);
  c.stride[0] = 6 * B, c.stride[1] = B;
  refuse("c over a in the last run", &a, &b.t, &c, NULL, TL_ERR_INVALID, "overlaps a");
  CHECK(!memcmp(save, buf, 16 * B * sizeof *save), "[%s] a refused call wrote the buffer", g_isa);
  /* a residual that is c (f32, beta 0: the accumulator is c's block), then the same shapes with
   * a residual of its own: computed as the reference says */
  tl_matmul_opts o = TL_MATMUL_OPTS_INIT;
  o.residual = &c2.t;
  refuse("residual is c", &a2.t, &b.t, &c2.t, &o, TL_ERR_INVALID, "residual");
  o.residual = &r2.t;
  mm_case mc = {.da = TL_F32, .db = TL_F32, .dc = TL_F32, .nda = 2, .ndb = 2, .ndc = 2, .sa = {16, 16}, .sb = {16, 16},
                .sc = {16, 16}, .bcast_a = -1, .bcast_b = -1, .res = 1, .alpha = 1};
  double ref[B], got[B];
  reference(&mc, &a2.t, &b.t, &c2.t, NULL, &r2.t, NULL, NULL, ref);
  tl_status st = tl_matmul(g_ctx, &a2.t, &b.t, &c2.t, &o);
  CHECK(st == TL_OK, "[%s] residual of its own after a refused residual: %s", g_isa, tl_ctx_error(g_ctx));
  read_c(&c2.t, got);
  double err = 0;
  for (int i = 0; i < B; i++) err = fmax(err, fabs(got[i] - ref[i]));
  CHECK(err < 1e-4, "[%s] residual of its own: max error %g", g_isa, err);
  /* c in blocks 2, 3, 12, 13: within a's bounding span, overlapping no block of it */
  c = tl_tensor_make(buf + 2 * B, TL_F32, 4, s4);
  c.stride[0] = 10 * B, c.stride[1] = B;
  mm_case m4 = {.da = TL_F32, .db = TL_F32, .dc = TL_F32, .nda = 4, .ndb = 2, .ndc = 4, .sa = {2, 2, 16, 16},
                .sb = {16, 16}, .sc = {2, 2, 16, 16}, .bcast_a = -1, .bcast_b = -1, .alpha = 1};
  double ref4[4 * B], got4[4 * B];
  reference(&m4, &a, &b.t, &c, NULL, NULL, NULL, NULL, ref4);
  st = tl_matmul(g_ctx, &a, &b.t, &c, NULL);
  CHECK(st == TL_OK, "[%s] c interleaved with a: %s", g_isa, tl_ctx_error(g_ctx));
  read_c(&c, got4);
  err = 0;
  for (int i = 0; i < 4 * B; i++) err = fmax(err, fabs(got4[i] - ref4[i]));
  CHECK(err < 1e-4, "[%s] c interleaved with a: max error %g", g_isa, err);
  free(buf), free(save), free(b.mem), free(c2.mem), free(r2.mem), free(a2.mem);
}

int main(void) {
  /* without AMX of its own, the CPU (with AVX512-BF16) runs the amx level over the emulation of
   * the tile registers (tests/tile/amx_emu.h) */
  const int emu = amx_emu_enable();
  int ran_amx = 0;
  if (emu) fprintf(stderr, "no AMX on this CPU: the amx level runs over tests/tile/amx_emu.h\n");
  for (int i = 0; (g_isa = test_isa_level(i)) != NULL; i++) {
    g_top = emu ? i == TL_ISA_AVX512BF16 : test_isa_level(i + 1) == NULL; /* the emulated amx level: small cases */
    tl_ctx_opts opts = {.isa = g_isa};
    if (tl_ctx_new(&opts, &g_ctx) != TL_OK) {
      CHECK(0, "tl_ctx_new(%s): %s", g_isa, tl_last_error());
      continue;
    }
    fprintf(stderr, "isa %s\n", g_isa);
    ran_amx |= emu && amx_emu_runs(g_ctx);
    RUN(test_shapes);
    RUN(test_batch);
    RUN(test_epilogues);
    RUN(test_bf16);
    RUN(test_int8);
    RUN(test_packed_f32);
    RUN(test_packed_a_window);
    RUN(test_rm_window);
    RUN(test_packed_per_call_vnni);
    RUN(test_autopack_rule);
    RUN(test_packed_skinny);
    RUN(test_packed_long_k);
    RUN(test_pack_layout);
    RUN(test_pack_nt);
    RUN(test_misaligned_b);
    RUN(test_stream);
    RUN(test_sweep);
    RUN(test_ksplit);
    RUN(test_ksplit_rows);
    RUN(test_k0_and_empty);
    RUN(test_nan_inf);
    RUN(test_balance);
    RUN(test_skinny_plan);
    RUN(test_cache);
    RUN(test_refusals);
    RUN(test_overlap);
    tl_ctx_free(g_ctx);
  }
  if (ran_amx) CHECK(amx_emu_level_ok(), "the emulated amx level issued no tile product or broke a tile rule");
  return test_summary("kernels_matmul");
}
