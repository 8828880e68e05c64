/* test_tile_dot_isa.c — the ISA paths of tl_tile_dot (src/tile/<isa>/dot_<isa>.c) against a
 * float64 / int64 reference, at every ISA level this CPU has (contexts capped with opts.isa).
 *
 * Each case runs tl_tile_dot inside a body (tl_call, one step) on refs built here: random shapes
 * (1, primes, register block +-1, a few larger, 1-4 rows against a b block past 1 MiB), row gaps (strided a, b, acc), ACCUMULATE over a
 * random acc or overwrite over a poisoned (NaN / -1) acc, b row-major, TL_DOT_TRANS_B or tiled
 * (f32 vnni 1, bf16 vnni 2, int8 vnni 4, the AMX B layouts among them). The level's own function
 * is also called directly to check it takes the cases it claims (docs/kernels.md). Checks:
 * f32 / bf16 ||out - ref|| / ||ref|| <= 1e-6 * sqrt(K + 1) and per element within K * 2^-23 of
 * the sum of |terms| (bf16 products are exact in f32, so bf16 is held to the f32 bound against
 * the reference of the bf16 values, denormals read as zero); int8 exact; acc's row gaps intact;
 * NaN and Inf propagate. Also: the AVX-512 VNNI packers against tl_pack_portable, byte for byte,
 * and a staged kernel whose b BlockSpec asks for the vnni layouts. The AMX path runs at its level
 * only where the CPU has AMX; test_amx_emulated also runs it everywhere over an emulation of
 * the tile registers (amx_emu.h). */
#include <sys/mman.h>
#include <unistd.h>

#include "amx_emu.h"
#include "runtime/plan_impl.h"
#include "tile_test_util.h"

static const char *const level_names[] = {"scalar", "avx2", "avx2vnni", "avx512", "avx512vnni", "avx512bf16", "amx"};

/* ---- running a dot inside a body ---- */

typedef struct dot_job {
  tl_ref *acc;
  const tl_ref *a, *b;
  unsigned flags;
} dot_job;

static void dot_body(const tl_prog *p, tl_ref *refs, void *user) {
  dot_job *j = user;
  if (tl_program_id(p, 0) == 0) tl_tile_dot(p, j->acc, j->a, j->b, j->flags);
  ((float *)refs[1].data)[0] = 1.0f;
}

/* tl_tile_dot(acc, a, b, flags) in the first step of a two-step kernel on ctx whose input asks
 * for prefetch = 1, so the dot runs with the executor's prefetch queue holding the next step's
 * block (the dots drain it between row blocks: tl_prefetch_pump). */
static tl_status run_dot(tl_ctx *ctx, tl_ref *acc, const tl_ref *a, const tl_ref *b, unsigned flags) {
  static float din[2 * 64] = {0}, dout[2];
  int64_t ishape[2] = {2, 64}, oshape[1] = {2};
  tl_tensor x = tl_tensor_make(din, TL_F32, 2, ishape), y = tl_tensor_make(dout, TL_F32, 1, oshape);
  tl_blockspec ispec = {.ndim = 2, .block = {1, 64}, .map = "i -> i, 0", .prefetch = 1};
  tl_blockspec ospec = {.ndim = 1, .block = {1}};
  dot_job j = {acc, a, b, flags};
  tl_kernel k = {.name = "dot", .body = dot_body, .user = &j, .grid_ndim = 1, .grid = {2}, .n_in = 1, .in = &ispec,
                 .n_out = 1, .out = &ospec};
  return tl_call(ctx, &k, &x, &y);
}

/* A context capped at level `isa`, or NULL when the CPU lacks that level. */
static tl_ctx *ctx_at(tl_isa isa) {
  tl_ctx_opts o = {.threads = 1, .isa = level_names[isa]};
  tl_ctx *ctx = NULL;
  if (tl_ctx_new(&o, &ctx) != TL_OK) return NULL;
  tl_ctx_info info;
  tl_ctx_info_get(ctx, &info);
  if (info.isa != isa) {
    tl_ctx_free(ctx);
    return NULL;
  }
  return ctx;
}

/* ---- cases ---- */

enum { B_ROW, B_TRANS, B_TILED };

typedef struct dot_case {
  tl_dtype ta, tb;
  int64_t m, n, k;
  int accum, bkind, tile_r, tile_c, vnni;
  int64_t pad_a, pad_b, pad_c; /* row gaps */
} dot_case;

/* A value read as the dot does: bf16 denormals are zero. */
static double dot_val(const tbuf *t, int64_t i, int64_t j) {
  double v = tb_get2(t, i, j);
  if (t->r.dtype == TL_BF16 && v != 0 && fabs(v) < 0x1p-126) v = 0 * v;
  return v;
}

/* Builds the operands of a case: a [m, k], b per bkind, acc [m, n] (random when accumulating,
 * else left poisoned). */
static void make_case(const dot_case *c, test_rng *rng, tbuf *a, tbuf *b, tbuf *acc0) {
  *a = tb_rm2(c->ta, c->m, c->k, c->pad_a);
  if (c->bkind == B_TRANS)
    *b = tb_rm2(c->tb, c->n, c->k, c->pad_b);
  else if (c->bkind == B_TILED) {
    int64_t s[2] = {c->k, c->n};
    *b = tb_tiled(c->tb, 2, s, c->tile_r, c->tile_c, c->vnni);
  } else
    *b = tb_rm2(c->tb, c->k, c->n, c->pad_b);
  tl_dtype tc = is_int(c->ta) ? TL_I32 : TL_F32;
  *acc0 = tb_rm2(tc, c->m, c->n, c->pad_c);
  tb_rand(a, rng, -1, 1);
  tb_rand(b, rng, -1, 1);
  if (c->accum) tb_rand(acc0, rng, -4, 4);
}

/* Fresh acc for one run: acc0's bytes (poison included). */
static tbuf acc_copy(const tbuf *acc0) {
  tbuf r = *acc0;
  size_t bytes = (size_t)acc0->nelem * tl_dtype_size(acc0->r.dtype);
  r.mem = malloc(bytes);
  memcpy(r.mem, acc0->mem, bytes);
  r.r.data = r.mem;
  return r;
}

/* Checks acc against the reference of the case; `what` names the run in messages. */
static void check_case(const dot_case *c, const tbuf *a, const tbuf *b, const tbuf *acc0, const tbuf *acc,
                       const char *what) {
  int64_t m = c->m, n = c->n, kk = c->k;
  double *out = malloc((size_t)(m * n + 1) * sizeof *out), *ref = malloc((size_t)(m * n + 1) * sizeof *ref);
  int bad = 0;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = c->accum ? tb_get2(acc0, i, j) : 0, sabs = fabs(s);
      for (int64_t k = 0; k < kk; k++) {
        double x = dot_val(a, i, k), y = c->bkind == B_TRANS ? dot_val(b, j, k) : dot_val(b, k, j);
        s += x * y;
        sabs += fabs(x * y);
      }
      double o = tb_get2(acc, i, j);
      out[i * n + j] = o;
      ref[i * n + j] = s;
      double tol = is_int(c->ta) ? 0 : (double)(kk + 1) * 0x1p-23 * sabs;
      if (!(fabs(o - s) <= tol) && bad++ < 3)
        CHECK(0, "%s: %s x %s %lldx%lldx%lld accum %d bkind %d: (%lld, %lld) = %.9g, ref %.9g", what,
              tl_dtype_name(c->ta), tl_dtype_name(c->tb), (long long)m, (long long)n, (long long)kk, c->accum,
              c->bkind, (long long)i, (long long)j, o, s);
    }
  CHECK(!bad, "%s: %d elements off", what, bad);
  if (!is_int(c->ta)) {
    double e = test_rel_err(out, ref, m * n);
    CHECK(e <= 1e-6 * sqrt((double)kk + 1), "%s: rel err %g (K %lld)", what, e, (long long)kk);
  }
  CHECK(tb_gaps_intact(acc), "%s: acc's row gaps were written", what);
  free(out);
  free(ref);
}

/* Whether level isa's own function must take the case (what docs/kernels.md promises). */
static int claims(tl_isa isa, const dot_case *c) {
  switch (isa) {
  case TL_ISA_AVX2: return c->ta == TL_F32;
  case TL_ISA_AVX2VNNI: { /* int8 but u8 x u8, on a CPU with AVX-VNNI (a side branch: else it declines) */
    tl_cpu_info ci;
    tl_cpu_detect(&ci);
    return (ci.features & TL_FEAT_AVXVNNI) && is_int(c->ta) && !(c->ta == TL_U8 && c->tb == TL_U8);
  }
  case TL_ISA_AVX512: { /* int8: the mixes VPDPBUSD takes only without AVX-VNNI (avx2vnni's there) */
    tl_cpu_info ci;
    tl_cpu_detect(&ci);
    return c->ta == TL_F32 || c->ta == TL_BF16 || (c->ta == TL_U8 && c->tb == TL_U8) ||
           (is_int(c->ta) && !(ci.features & TL_FEAT_AVXVNNI));
  }
  case TL_ISA_AVX512VNNI: return is_int(c->ta) && !(c->ta == TL_U8 && c->tb == TL_U8);
  case TL_ISA_AVX512BF16:
    return c->ta == TL_BF16 || (is_int(c->ta) && !(c->ta == TL_U8 && c->tb == TL_U8));
  case TL_ISA_AMX: {
    if (c->ta == TL_F32 || c->bkind == B_ROW) return 0;
    int ks = c->ta == TL_BF16 ? 32 : 64, v = c->ta == TL_BF16 ? 2 : 4;
    return (c->bkind == B_TRANS || (c->vnni == v && c->tile_c == 16 && c->tile_r % ks == 0)) && c->k % v == 0 &&
           c->m >= 16 && c->n && c->k;
  }
  default: return 1;
  }
}

/* Runs one case at level isa: through tl_call, then the level's function directly. */
static void run_case(tl_ctx *ctx, tl_isa isa, const dot_case *c, test_rng *rng) {
  tbuf a, b, acc0;
  make_case(c, rng, &a, &b, &acc0);
  unsigned flags = (c->accum ? TL_DOT_ACCUMULATE : 0) | (c->bkind == B_TRANS ? TL_DOT_TRANS_B : 0);
  char what[96];
  tbuf acc = acc_copy(&acc0);
  tl_status s = run_dot(ctx, &acc.r, &a.r, &b.r, flags);
  snprintf(what, sizeof what, "%s via tl_call", level_names[isa]);
  CHECK(s == TL_OK, "%s: %s: %s", what, tl_status_name(s), tl_ctx_error(ctx));
  if (s == TL_OK) check_case(c, &a, &b, &acc0, &acc, what);
  tb_free(&acc);
  const tl_tile_impl *impl = tl_tile_impl_at(isa);
  if (impl && impl->dot) {
    acc = acc_copy(&acc0);
    int took = impl->dot(&acc.r, &a.r, &b.r, flags);
    snprintf(what, sizeof what, "%s direct", level_names[isa]);
    if (claims(isa, c) && isa != TL_ISA_AMX)
      CHECK(took, "%s: %s x %s %lldx%lldx%lld bkind %d not taken", what, tl_dtype_name(c->ta),
            tl_dtype_name(c->tb), (long long)c->m, (long long)c->n, (long long)c->k, c->bkind);
    /* the avx512vnni level has no BF16 instruction: it must decline bf16, leaving acc as it was */
    if (isa == TL_ISA_AVX512VNNI && c->ta == TL_BF16)
      CHECK(!took && !memcmp(acc.mem, acc0.mem, (size_t)acc0.nelem * tl_dtype_size(acc0.r.dtype)),
            "%s: bf16 %lldx%lldx%lld taken or acc written", what,
            (long long)c->m, (long long)c->n, (long long)c->k);
    if (took) check_case(c, &a, &b, &acc0, &acc, what);
    tb_free(&acc);
  } else if (isa != TL_ISA_AMX) {
    CHECK(0, "%s: no dot in the table", level_names[isa]);
  }
  tb_free(&a);
  tb_free(&b);
  tb_free(&acc0);
}

/* One case through the AMX dot compiled over the emulation: a case the AMX contract claims is
 * taken, matches the reference, loads the configuration once and releases it, and breaks no
 * tile rule; any other is declined with acc untouched and no tile instruction issued. */
static void run_amx_emu(const dot_case *c, test_rng *rng) {
  tbuf a, b, acc0;
  make_case(c, rng, &a, &b, &acc0);
  unsigned flags = (c->accum ? TL_DOT_ACCUMULATE : 0) | (c->bkind == B_TRANS ? TL_DOT_TRANS_B : 0);
  tbuf acc = acc_copy(&acc0);
  amx_emu_reset();
  int took = tl_amx_dot_emu(&acc.r, &a.r, &b.r, flags), want = claims(TL_ISA_AMX, c);
  char what[128];
  snprintf(what, sizeof what, "amx emulated, %s x %s %lldx%lldx%lld tile %dx%d vnni %d bkind %d",
           tl_dtype_name(c->ta), tl_dtype_name(c->tb), (long long)c->m, (long long)c->n, (long long)c->k, c->tile_r,
           c->tile_c, c->vnni, c->bkind);
  CHECK(took == want, "%s: %s", what, took ? "taken, outside the contract" : "declined");
  CHECK(!amx_emu.fault[0], "%s: %s", what, amx_emu.fault);
  if (took) {
    /* one configuration per tile shape present (whole tiles, the N edge beside them, the M edge
     * below them, the corner) for the whole tile steps and again for the K edge, per chunk of a
     * transposed b (128 columns x 32 KiB) */
    int shapes = 0;
    const int64_t cols = c->bkind == B_TRANS ? 128 : c->n, es = c->ta == TL_BF16 ? 2 : 1, ks = 64 / es;
    const int64_t kcm = c->bkind == B_TRANS ? 32768 / (128 * es) : c->k;
    for (int64_t j0 = 0; j0 < c->n; j0 += cols)
      for (int64_t k0 = 0; k0 < c->k; k0 += kcm) {
        const int64_t nc = TL_MIN(cols, c->n - j0), mf = c->m / 16, nf = nc / 16, mt = c->m % 16, nt = nc % 16;
        const int64_t kc = TL_MIN(kcm, c->k - k0), passes = (kc >= ks) + (kc % ks != 0);
        shapes += (int)passes * ((mf && nf) + (mf && nt) + (mt && nf) + (mt && nt));
      }
    CHECK(amx_emu.loads == shapes && amx_emu.releases == 1 && !amx_emu.configured,
          "%s: %d configurations loaded (want %d), %d releases, configured at return %d", what, amx_emu.loads, shapes,
          amx_emu.releases, amx_emu.configured);
    check_case(c, &a, &b, &acc0, &acc, what);
  } else {
    CHECK(amx_emu.loads == 0 && amx_emu.dps == 0, "%s: declined after issuing tile instructions", what);
    CHECK(memcmp(acc.mem, acc0.mem, (size_t)acc0.nelem * tl_dtype_size(acc0.r.dtype)) == 0, "%s: declined, acc written",
          what);
  }
  tb_free(&acc);
  tb_free(&a);
  tb_free(&b);
  tb_free(&acc0);
}

static const int64_t sizes[] = {1, 2, 3, 5, 7, 8, 9, 13, 15, 16, 17, 23, 31, 32, 33, 37, 47, 48, 63, 64, 65, 70};

static int64_t pick_size(test_rng *rng) {
  if (test_rng_int(rng, 0, 9) == 0) return test_rng_int(rng, 71, 260);
  return sizes[test_rng_int(rng, 0, (int64_t)TL_ARRAY_LEN(sizes) - 1)];
}

/* A random case of dtypes (ta, tb); tiled b gets one of the tile shapes listed. */
static dot_case random_case(test_rng *rng, tl_dtype ta, tl_dtype tb) {
  dot_case c = {.ta = ta, .tb = tb, .m = pick_size(rng), .n = pick_size(rng), .k = pick_size(rng)};
  c.accum = (int)test_rng_int(rng, 0, 1);
  c.bkind = (int)test_rng_int(rng, 0, 2);
  if (test_rng_int(rng, 0, 1)) {
    c.pad_a = test_rng_int(rng, 1, 9);
    c.pad_b = test_rng_int(rng, 1, 9);
    c.pad_c = test_rng_int(rng, 1, 9);
  }
  int v = ta == TL_F32 ? 1 : ta == TL_BF16 ? 2 : 4;
  int amx_r = ta == TL_BF16 ? 32 : 64;
  switch (test_rng_int(rng, 0, 3)) {
  case 0: c.tile_r = amx_r, c.tile_c = 16; break;       /* the AMX B layout */
  case 1: c.tile_r = 2 * amx_r, c.tile_c = 32; break;
  case 2: c.tile_r = 4 * v, c.tile_c = 48; break;
  default: c.tile_r = 2 * v, c.tile_c = 8; break;       /* tile_c % 16 != 0: staged */
  }
  c.vnni = test_rng_int(rng, 0, 3) ? v : 1;             /* mostly the instruction's vnni */
  return c;
}

/* AMX-shaped cases (M, N multiples of 16, K of 64): exercised here at every level. */
static dot_case amx_case(test_rng *rng, tl_dtype ta, tl_dtype tb) {
  int v = ta == TL_BF16 ? 2 : 4;
  dot_case c = {.ta = ta, .tb = tb, .m = 16 * test_rng_int(rng, 1, 5), .n = 16 * test_rng_int(rng, 1, 5),
                .k = 64 * test_rng_int(rng, 1, 3), .accum = (int)test_rng_int(rng, 0, 1), .bkind = B_TILED,
                .tile_r = ta == TL_BF16 ? 32 : 64, .tile_c = 16, .vnni = v};
  c.pad_a = 16 * test_rng_int(rng, 0, 1);
  c.pad_c = 3 * test_rng_int(rng, 0, 1);
  return c;
}

static void test_random_cases(void) {
  static const tl_dtype pairs[][2] = {{TL_F32, TL_F32}, {TL_BF16, TL_BF16}, {TL_U8, TL_I8},
                                      {TL_I8, TL_I8},   {TL_I8, TL_U8},     {TL_U8, TL_U8}};
  for (int isa = TL_ISA_SCALAR; isa < TL_ISA_COUNT; isa++) {
    tl_ctx *ctx = ctx_at((tl_isa)isa);
    if (!ctx) {
      fprintf(stderr, "    level %s: not on this CPU, skipped\n", level_names[isa]);
      continue;
    }
    test_rng rng = {0x9E3779B97F4A7C15ull + (uint64_t)isa};
    int runs = isa == TL_ISA_SCALAR ? 12 : 40;
    for (size_t p = 0; p < TL_ARRAY_LEN(pairs); p++) {
      for (int r = 0; r < runs; r++) {
        dot_case c = random_case(&rng, pairs[p][0], pairs[p][1]);
        run_case(ctx, (tl_isa)isa, &c, &rng);
      }
      if (pairs[p][0] == TL_F32) {
        /* the f32 vector paths' branches: rows below / at / past the packed-a threshold and the
         * 128-row a chunk, b in place, staged, transposed and in 16-column tiles (tl_matmul_pack_b's
         * layout) with tile rows that split the k chunks */
        static const int64_t ms[] = {31, 32, 129, 260}, trs[] = {16, 48, 272};
        for (size_t i = 0; i < TL_ARRAY_LEN(ms); i++)
          for (int bk = 0; bk < 3; bk++) {
            dot_case c = {.ta = TL_F32, .tb = TL_F32, .m = ms[i], .n = 16 * (int64_t)i + 37, .k = 300,
                          .accum = (int)(i & 1), .bkind = bk, .tile_r = trs[i % 3], .tile_c = 16, .vnni = 1};
            run_case(ctx, (tl_isa)isa, &c, &rng);
          }
        /* 5-16 rows over 16-column tiles (the one-pass tile kernel): tile rows longer than its
         * 512-deep k chunks, k spanning several tile rows, n not a multiple of 16 */
        for (int64_t m = 5; m <= 16; m += m == 5 ? 4 : 7) {
          dot_case c = {.ta = TL_F32, .tb = TL_F32, .m = m, .n = m == 9 ? 40 : 17, .k = m == 16 ? 1300 : 611,
                        .accum = (int)(m & 1), .bkind = B_TILED, .tile_r = m == 16 ? 600 : 1100, .tile_c = 16,
                        .vnni = 1, .pad_a = 2, .pad_c = 1};
          run_case(ctx, (tl_isa)isa, &c, &rng);
        }
        /* one row block of 5-8 rows against row-major b in place (row gaps): the block prefetches
         * the next panel too */
        for (int64_t m = 5; m <= 8; m += 3) {
          dot_case c = {.ta = TL_F32, .tb = TL_F32, .m = m, .n = 70, .k = 37, .accum = (int)(m & 1), .bkind = B_ROW,
                        .pad_b = 3, .pad_c = 1};
          run_case(ctx, (tl_isa)isa, &c, &rng);
        }
        /* more than one 6-row block against a row-major b whose rows are 4 KiB apart (not kept in
         * L1 in place): the AVX2 dot stages it 256 columns x 32 rows at a time — n past one chunk
         * of columns with a last panel of 1-8 columns (530) and of 9-15 (300), k not a multiple of
         * 32; and 7-31 rows over 16-column tiles, walked 32 rows of every tile at a time with
         * tile rows (48) that cut the chunks (20 rows; 53 rows: whole tile rows) */
        for (int64_t m = 7; m <= 40; m += 33) {
          const int64_t n = m == 7 ? 530 : 300;
          dot_case c = {.ta = TL_F32, .tb = TL_F32, .m = m, .n = n, .k = 70, .accum = (int)(m & 1), .bkind = B_ROW,
                        .pad_a = 1, .pad_b = 1024 - n, .pad_c = 2};
          run_case(ctx, (tl_isa)isa, &c, &rng);
          dot_case t = {.ta = TL_F32, .tb = TL_F32, .m = m + 13, .n = 70, .k = 130, .accum = (int)(m == 40),
                        .bkind = B_TILED, .tile_r = 48, .tile_c = 16, .vnni = 1, .pad_a = 3, .pad_c = 1};
          run_case(ctx, (tl_isa)isa, &t, &rng);
        }
        /* from 32 rows the AVX2 dot stages 256 rows x 32 columns at a time instead: k past one
         * chunk and not a multiple of it, chunks of columns with a last one of 9 (105) and 6 (70)
         * columns, a last row block of 2 or 3 rows (32, 45), both flags */
        for (int64_t m = 32; m <= 45; m += 13) {
          dot_case c = {.ta = TL_F32, .tb = TL_F32, .m = m, .n = m == 32 ? 70 : 105, .k = m == 32 ? 257 : 600,
                        .accum = (int)(m & 1), .bkind = B_ROW, .pad_a = 2, .pad_b = 1024 - (m == 32 ? 70 : 105), .pad_c = 1};
          run_case(ctx, (tl_isa)isa, &c, &rng);
        }
        /* 1-4 rows against a row-major b block past 1 MiB: the streaming skinny kernel (k not a
         * multiple of its 8 / 4 rows per sweep, n not of 16, row gaps, both flags) */
        for (int64_t m = 1; m <= 4; m++) {
          dot_case c = {.ta = TL_F32, .tb = TL_F32, .m = m, .n = 1000 + 9 * m, .k = 270 + 3 * m, .accum = (int)(m & 1),
                        .bkind = B_ROW, .pad_a = m, .pad_b = 5 * (m & 1), .pad_c = 2};
          run_case(ctx, (tl_isa)isa, &c, &rng);
        }
        /* 3-31 rows against a row-major b block past 1 MiB: the sweeping walk (6, 8 and 16 rows,
         * without row gaps: the walk above; windows of 512
         * columns, 256 past 16 rows, the last one 76-77 wide: panels of 32 and 12-13 columns; k
         * not a multiple of the 8 / 12 / 16 rows per sweep; n 25000 with k 13: a sweep of 8 and
         * one of 5, neither prefetched; row gaps, both flags) */
        /* 3-8 rows against such a block with contiguous rows (no row gap, as the K split hands
         * them): the AVX-512 walk (8 rows of b a sweep over whole rows, k odd so that the last
         * sweep is short, n a multiple of the 32-column panels); 9-16 below */
        for (int64_t m = 3; m <= 7; m += 2) {
          dot_case c = {.ta = TL_F32, .tb = TL_F32, .m = m, .n = 1024 + 32 * m, .k = 300 + m, .accum = (int)(m == 5),
                        .bkind = B_ROW, .pad_a = 1, .pad_c = 2};
          run_case(ctx, (tl_isa)isa, &c, &rng);
        }
        /* 9-16 rows so: the walk's wide kernel (every row over 16-column panels): n a multiple
         * of them and not (a last panel of 1, 9, 15 columns), k odd and even */
        static const int64_t mx[] = {9, 11, 12, 14, 16}, nx[] = {1024, 1041, 1033, 1039, 1056};
        for (size_t mi = 0; mi < sizeof mx / sizeof mx[0]; mi++) {
          const int64_t m = mx[mi], n = nx[mi];
          dot_case c = {.ta = TL_F32, .tb = TL_F32, .m = m, .n = n, .k = 290 + m, .accum = (int)(m & 1),
                        .bkind = B_ROW, .pad_a = (int)(m & 3), .pad_c = 1};
          run_case(ctx, (tl_isa)isa, &c, &rng);
        }
        static const int64_t msw[] = {3, 6, 8, 9, 13, 15, 16, 20, 31};
        for (size_t mi = 0; mi < sizeof msw / sizeof msw[0]; mi++) {
          const int64_t m = msw[mi];
          dot_case c = {.ta = TL_F32, .tb = TL_F32, .m = m, .n = mi == 1 ? 25000 : 1100 + (m & 1), .k = mi == 1 ? 13 : 261 + 2 * m,
                        .accum = (int)(m & 1), .bkind = B_ROW, .pad_a = 2, .pad_b = 7 * (m & 1), .pad_c = 3};
          run_case(ctx, (tl_isa)isa, &c, &rng);
        }
      } else {
        for (int r = 0; r < 4; r++) {
          dot_case c = amx_case(&rng, pairs[p][0], pairs[p][1]);
          run_case(ctx, (tl_isa)isa, &c, &rng);
        }
        /* fewer rows than a row block against b in 16-column VNNI tiles over several panels: the
         * last row prefetches the next panel */
        for (int64_t m = 1; m <= 7; m += 6) {
          const int v = pairs[p][0] == TL_BF16 ? 2 : 4;
          dot_case c = {.ta = pairs[p][0], .tb = pairs[p][1], .m = m, .n = 70, .k = 130, .accum = (int)(m == 7),
                        .bkind = B_TILED, .tile_r = 16 * v, .tile_c = 16, .vnni = v, .pad_a = 2, .pad_c = 1};
          run_case(ctx, (tl_isa)isa, &c, &rng);
        }
        /* 3-16 rows over 16-column VNNI tiles (the one-pass tile kernel): tile rows longer than
         * its 512-group k chunks, k spanning tile rows and ending inside a pair / quad, n not a
         * multiple of 16, rows computed past m (3 rows run 8, 9 rows run 16) */
        static const int64_t ms16[] = {3, 4, 5, 8, 9, 16};
        for (size_t mi = 0; mi < sizeof ms16 / sizeof ms16[0]; mi++) {
          const int64_t m = ms16[mi];
          const int64_t v = pairs[p][0] == TL_BF16 ? 2 : 4, tr = m & 1 ? 520 * v : 16 * v;
          dot_case c = {.ta = pairs[p][0], .tb = pairs[p][1], .m = m, .n = m == 8 ? 40 : 17, .k = tr + 150 * v + 1,
                        .accum = (int)(m & 1), .bkind = B_TILED, .tile_r = (int)tr, .tile_c = 16, .vnni = (int)v,
                        .pad_a = 2, .pad_c = 1};
          run_case(ctx, (tl_isa)isa, &c, &rng);
        }
        /* few rows against a row-major b block past 1 MiB: walked 8 rows at a time (k odd and not
         * a multiple of 4, so the chunks end inside a pair / quad only at the last one) */
        const int64_t es = pairs[p][0] == TL_BF16 ? 2 : 1;
        for (int64_t m = 1; m <= 3; m++) { /* (1-2 rows of bf16 below AVX512-BF16: the f32 streaming walk) */
          dot_case c = {.ta = pairs[p][0], .tb = pairs[p][1], .m = m, .n = 1000 + 7 * m, .k = (int64_t)(1100 / es) + 1,
                        .accum = (int)(m >= 2), .bkind = B_ROW, .pad_a = 1, .pad_b = 3, .pad_c = m};
          run_case(ctx, (tl_isa)isa, &c, &rng);
        }
        /* 3-8 rows of bf16 against a row-major b block past 1 MiB: the walk (32 rows a sweep, a
         * packed 1024 k at a time, accumulators kept in pair order between sweeps): n a multiple
         * of its 32-column panels and not, k past one packed piece and odd (the last sweep ends
         * in a lone k), a single short sweep (k 13 over 50000 columns), row gaps, both flags */
        if (pairs[p][0] == TL_BF16) {
          static const int64_t mw[] = {3, 4, 5, 6, 7, 8};
          for (size_t mi = 0; mi < sizeof mw / sizeof mw[0]; mi++) {
            const int64_t m = mw[mi], n = mi == 5 ? 50000 : mi & 1 ? 512 : 530 + m, k = mi == 5 ? 13 : 1100 + 2 * m + 1;
            dot_case c = {.ta = TL_BF16, .tb = TL_BF16, .m = m, .n = n, .k = k, .accum = (int)(mi & 1), .bkind = B_ROW,
                          .pad_a = (int)mi, .pad_b = mi & 2 ? 9 : 0, .pad_c = 2};
            run_case(ctx, (tl_isa)isa, &c, &rng);
          }
          /* 9-16 rows: the wide walk (16 rows a sweep, every row in registers over each whole
           * 32-column panel, the hi pairs kept beside it; at the N edge rows 0-7 and the rest in
           * column order): n a multiple of the panels and not (a last panel of 1, 17, 31
           * columns), k past one packed piece and odd, a single short sweep (k 15), row gaps,
           * both flags */
          static const int64_t mwide[] = {9, 10, 12, 13, 15, 16};
          for (size_t mi = 0; mi < sizeof mwide / sizeof mwide[0]; mi++) {
            static const int64_t nw[] = {512, 545, 1024, 529, 1055, 40000};
            const int64_t m = mwide[mi], n = nw[mi], k = mi == 5 ? 15 : 1030 + 2 * m + (int64_t)(mi & 1);
            dot_case c = {.ta = TL_BF16, .tb = TL_BF16, .m = m, .n = n, .k = k, .accum = (int)(mi & 1), .bkind = B_ROW,
                          .pad_a = (int)mi, .pad_b = mi & 2 ? 5 : 0, .pad_c = 1 + (int)(mi & 1)};
            run_case(ctx, (tl_isa)isa, &c, &rng);
          }
          /* 8 rows past one packed piece, accumulating (pair order kept over many sweeps) */
          dot_case c8 = {.ta = TL_BF16, .tb = TL_BF16, .m = 8, .n = 520, .k = 1201, .accum = 1, .bkind = B_ROW,
                         .pad_a = 3, .pad_c = 1};
          run_case(ctx, (tl_isa)isa, &c8, &rng);
        }
        /* every row count up to 16 against a row-major b in place: each row block's panel width
         * (128 / 64 / 32 columns) and its last panel cut short (n 70, 135), k odd and even */
        for (int64_t m = 1; m <= 16; m++) {
          dot_case c = {.ta = pairs[p][0], .tb = pairs[p][1], .m = m, .n = m & 1 ? 70 : 135, .k = 37 + (m & 2),
                        .accum = (int)(m & 1), .bkind = B_ROW, .pad_a = 1, .pad_b = 2, .pad_c = 3};
          run_case(ctx, (tl_isa)isa, &c, &rng);
        }
      }
    }
    tl_ctx_free(ctx);
  }
}

/* f32 b row-major and contiguous, its last element the last of a page followed by an
 * inaccessible one (PROT_NONE): the walks that read b from memory (past 1 MiB: 1-2 rows
 * streamed, 3-31 rows swept on AVX-512 and staged wide on AVX2, 37 rows staged 256 deep on AVX2
 * and 32-row panels on AVX-512) and the panels read nothing
 * past it, at the N edge too (n 1000 and 1009: last panels of 8 and 17 columns), through
 * tl_tile_dot at every level this CPU has (the status checked: no level may decline); against a
 * float64 reference. */
static void test_b_guard(void) {
  const long pg = sysconf(_SC_PAGESIZE);
  static const int64_t ns[] = {1000, 1009}, ms[] = {1, 2, 3, 6, 9, 20, 31, 37};
  const int64_t k = 300;
  test_rng rng = {0x5EEDull};
  tl_ctx *ctxs[TL_ISA_AMX]; /* a context capped at each level this CPU has (NULL: not here) */
  for (int isa = TL_ISA_SCALAR; isa < TL_ISA_AMX; isa++) ctxs[isa] = ctx_at((tl_isa)isa);
  for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
    const int64_t n = ns[ni];
    const size_t bytes = (size_t)(k * n * 4), span = (bytes + (size_t)pg - 1) / (size_t)pg * (size_t)pg;
    char *map = mmap(NULL, span + (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(map != MAP_FAILED, "mmap of %zu bytes", span + (size_t)pg);
    REQUIRE(mprotect(map + span, (size_t)pg, PROT_NONE) == 0, "mprotect of the guard page");
    float *bp = (float *)(map + span - bytes);
    for (int64_t i = 0; i < k * n; i++) bp[i] = (float)test_rng_uniform(&rng, -1, 1);
    tl_ref b;
    memset(&b, 0, sizeof b);
    b.data = bp, b.dtype = TL_F32, b.ndim = 2;
    b.shape[0] = b.valid[0] = k, b.shape[1] = b.valid[1] = n, b.stride[0] = n, b.stride[1] = 1;
    for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
      const int64_t m = ms[mi];
      tbuf a = tb_rm2(TL_F32, m, k, 0), acc = tb_rm2(TL_F32, m, n, 0);
      float *pa = (float *)a.r.data;
      for (int64_t i = 0; i < m * k; i++) pa[i] = (float)test_rng_uniform(&rng, -1, 1);
      double *ref = malloc(sizeof(double) * (size_t)(m * n));
      REQUIRE(ref != NULL, "reference");
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
          double t = 0;
          for (int64_t q = 0; q < k; q++) t += (double)pa[i * k + q] * bp[q * n + j];
          ref[i * n + j] = t;
        }
      for (int isa = TL_ISA_SCALAR; isa < TL_ISA_AMX; isa++) {
        if (!ctxs[isa]) continue;
        memset(acc.mem, POISON, (size_t)acc.nelem * 4);
        const tl_status st = run_dot(ctxs[isa], &acc.r, &a.r, &b, 0);
        double num = 0, den = 0;
        const float *pc = (const float *)acc.r.data;
        for (int64_t i = 0; i < m * n; i++) {
          const double d = (double)pc[i] - ref[i];
          num += d * d, den += ref[i] * ref[i];
        }
        CHECK(st == TL_OK && num == num && sqrt(num / den) <= 1e-6 * sqrt((double)k + 1),
              "%s: f32 %lldx%lldx%lld, b against a guard page: %s, error %.3g", level_names[isa], (long long)m,
              (long long)n, (long long)k, tl_status_name(st), sqrt(num / den));
      }
      free(ref);
      tb_free(&a);
      tb_free(&acc);
    }
    munmap(map, span + (size_t)pg);
  }
  for (int isa = TL_ISA_SCALAR; isa < TL_ISA_AMX; isa++) tl_ctx_free(ctxs[isa]);
}

/* K = 0: overwrite gives zeros, accumulate leaves acc alone. */
static void test_empty_k(void) {
  for (int isa = TL_ISA_SCALAR; isa < TL_ISA_COUNT; isa++) {
    tl_ctx *ctx = ctx_at((tl_isa)isa);
    if (!ctx) continue;
    test_rng rng = {77};
    static const tl_dtype ds[] = {TL_F32, TL_BF16, TL_U8};
    for (int d = 0; d < 3; d++)
      for (int accum = 0; accum < 2; accum++) {
        dot_case c = {.ta = ds[d], .tb = ds[d] == TL_U8 ? TL_I8 : ds[d], .m = 9, .n = 33, .k = 0,
                      .accum = accum, .bkind = B_ROW};
        run_case(ctx, (tl_isa)isa, &c, &rng);
        /* b in tiles as tl_matmul_pack_b makes them (the f32 K = 0 prefetch share once divided
         * by zero) */
        c.bkind = B_TILED, c.tile_r = ds[d] == TL_F32 ? 16 : ds[d] == TL_BF16 ? 32 : 64, c.tile_c = 16;
        c.vnni = ds[d] == TL_F32 ? 1 : ds[d] == TL_BF16 ? 2 : 4;
        run_case(ctx, (tl_isa)isa, &c, &rng);
      }
    tl_ctx_free(ctx);
  }
}

/* NaN in a row of a and Inf in a column of b propagate (f32 and bf16). */
static void test_nan_inf(void) {
  for (int isa = TL_ISA_SCALAR; isa < TL_ISA_COUNT; isa++) {
    tl_ctx *ctx = ctx_at((tl_isa)isa);
    if (!ctx) continue;
    static const tl_dtype ds[] = {TL_F32, TL_BF16};
    for (int d = 0; d < 2; d++)
      for (int bk = 0; bk < 3; bk++) {
        int64_t m = 11, n = 37, kk = 19;
        tbuf a = tb_rm2(ds[d], m, kk, 0), acc = tb_rm2(TL_F32, m, n, 0), b;
        int64_t s[2] = {kk, n};
        b = bk == B_TILED ? tb_tiled(ds[d], 2, s, 32, 16, ds[d] == TL_BF16 ? 2 : 1)
                          : bk == B_TRANS ? tb_rm2(ds[d], n, kk, 0) : tb_rm2(ds[d], kk, n, 0);
        for (int64_t i = 0; i < m; i++)
          for (int64_t k = 0; k < kk; k++) {
            int64_t ix[2] = {i, k};
            tb_set(&a, ix, k == 3 ? 1.0 : 0.5);
          }
        for (int64_t k = 0; k < kk; k++)
          for (int64_t j = 0; j < n; j++) {
            int64_t ix[2] = {bk == B_TRANS ? j : k, bk == B_TRANS ? k : j};
            tb_set(&b, ix, k == 3 && j == 20 ? INFINITY : 0.25);
          }
        int64_t ix[2] = {5, 7};
        tb_set(&a, ix, NAN);
        tl_status st = run_dot(ctx, &acc.r, &a.r, &b.r, bk == B_TRANS ? TL_DOT_TRANS_B : 0);
        CHECK(st == TL_OK, "%s", tl_ctx_error(ctx));
        int ok = 1;
        for (int64_t i = 0; i < m; i++)
          for (int64_t j = 0; j < n; j++) {
            double o = tb_get2(&acc, i, j);
            if (i == 5) ok &= isnan(o);
            else if (j == 20) ok &= isinf(o) && o > 0;
            else ok &= fabs(o - 0.125 * (kk - 1) - 0.25) < 1e-5;
          }
        CHECK(ok, "%s: %s bkind %d: NaN / Inf did not propagate", level_names[isa], tl_dtype_name(ds[d]), bk);
        tb_free(&a);
        tb_free(&b);
        tb_free(&acc);
      }
    tl_ctx_free(ctx);
  }
}

/* bf16 denormals read as zero: a denormal times 2^100 adds nothing. */
static void test_bf16_denormal(void) {
  for (int isa = TL_ISA_SCALAR; isa < TL_ISA_COUNT; isa++) {
    tl_ctx *ctx = ctx_at((tl_isa)isa);
    if (!ctx) continue;
    int64_t m = 3, n = 20, kk = 4, s[2] = {kk, n};
    tbuf a = tb_rm2(TL_BF16, m, kk, 0), b = tb_tiled(TL_BF16, 2, s, 32, 16, 2), acc = tb_rm2(TL_F32, m, n, 0);
    uint16_t *pa = (uint16_t *)a.mem;
    for (int64_t e = 0; e < m * kk; e++) pa[e] = (e % 2) ? 0x0000 : 0x0001; /* smallest denormal, zero */
    pa[kk * 1 + 2] = 0x8040;                                               /* -denormal */
    for (int64_t k = 0; k < kk; k++)
      for (int64_t j = 0; j < n; j++) {
        int64_t ix[2] = {k, j};
        tb_set(&b, ix, 0x1p100);
      }
    CHECK(run_dot(ctx, &acc.r, &a.r, &b.r, 0) == TL_OK, "%s", tl_ctx_error(ctx));
    int ok = 1;
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) ok &= tb_get2(&acc, i, j) == 0.0;
    CHECK(ok, "%s: bf16 denormals were not read as zero", level_names[isa]);
    tb_free(&a);
    tb_free(&b);
    tb_free(&acc);
    /* the mirror: denormals in b (row-major, tiled vnni 2, transposed) times a = 2^100 */
    for (int bk = 0; bk < 3; bk++) {
      int64_t sb[2] = {kk, n};
      tbuf a2 = tb_rm2(TL_BF16, m, kk, 0), acc2 = tb_rm2(TL_F32, m, n, 0);
      tbuf b2 = bk == 0 ? tb_rm2(TL_BF16, kk, n, 0) : bk == 1 ? tb_tiled(TL_BF16, 2, sb, 32, 16, 2) : tb_rm2(TL_BF16, n, kk, 0);
      for (int64_t i = 0; i < m; i++)
        for (int64_t k = 0; k < kk; k++) {
          int64_t ix[2] = {i, k};
          tb_set(&a2, ix, 0x1p100);
        }
      for (int64_t k = 0; k < kk; k++)
        for (int64_t j = 0; j < n; j++) {
          int64_t ix[2] = {bk == 2 ? j : k, bk == 2 ? k : j};
          tb_set(&b2, ix, (k + j) % 3 == 0 ? 0x1p-133 : (k + j) % 3 == 1 ? -0x1p-130 : 0.0);
        }
      CHECK(run_dot(ctx, &acc2.r, &a2.r, &b2.r, bk == 2 ? TL_DOT_TRANS_B : 0) == TL_OK, "%s", tl_ctx_error(ctx));
      ok = 1;
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) ok &= tb_get2(&acc2, i, j) == 0.0;
      CHECK(ok, "%s: bf16 denormals in b (kind %d) were not read as zero", level_names[isa], bk);
      tb_free(&a2);
      tb_free(&b2);
      tb_free(&acc2);
    }
    tl_ctx_free(ctx);
  }
}

/* ---- packers ---- */

/* The registered vnni packers give tl_pack_portable's bytes, and only from their level up. */
static void test_packers_at(tl_isa lv);

/* A CPU without AVX-VNNI (tl_cpu_hide on this one): a context capped at avx2vnni runs avx2, the
 * avx2vnni dot declines every int8 mix with acc untouched (the AVX-512 levels pass through it on
 * such CPUs: Ice Lake), and the avx512 level's widening dot takes u8 x s8 again. */
static void test_avx2vnni_hidden(void) {
  tl_cpu_info ci;
  tl_cpu_detect(&ci);
  if (ci.isa_max < TL_ISA_AVX2) return;
  tl_cpu_hide(TL_FEAT_AVXVNNI);
  tl_cpu_detect(&ci);
  CHECK(!(ci.features & TL_FEAT_AVXVNNI) && ci.isa_max != TL_ISA_AVX2VNNI, "AVX-VNNI still reported");
  tl_ctx_opts o = {.threads = 1, .isa = "avx2vnni"};
  tl_ctx *ctx = NULL;
  if (tl_ctx_new(&o, &ctx) == TL_OK) {
    tl_ctx_info in;
    tl_ctx_info_get(ctx, &in);
    CHECK(in.isa == TL_ISA_AVX2 && in.isa_cap == TL_ISA_AVX2VNNI, "cap avx2vnni without AVX-VNNI: isa %s cap %s",
          tl_isa_name(in.isa), tl_isa_name(in.isa_cap));
    tl_ctx_free(ctx);
  } else {
    CHECK(0, "tl_ctx_new(avx2vnni): %s", tl_last_error());
  }
  test_rng rng = {77};
  static const tl_dtype mix[3][2] = {{TL_U8, TL_I8}, {TL_I8, TL_U8}, {TL_I8, TL_I8}};
  for (int x = 0; x < 3; x++) {
    dot_case c = {.ta = mix[x][0], .tb = mix[x][1], .m = 7, .n = 21, .k = 13, .accum = 1, .bkind = B_ROW};
    tbuf a, b, acc0;
    make_case(&c, &rng, &a, &b, &acc0);
    const tl_tile_impl *v2 = tl_tile_impl_at(TL_ISA_AVX2VNNI), *v5 = tl_tile_impl_at(TL_ISA_AVX512);
    if (v2 && v2->dot) {
      tbuf acc = acc_copy(&acc0);
      const int took = v2->dot(&acc.r, &a.r, &b.r, TL_DOT_ACCUMULATE);
      CHECK(!took && !memcmp(acc.mem, acc0.mem, (size_t)acc0.nelem * tl_dtype_size(acc0.r.dtype)),
            "avx2vnni without AVX-VNNI: %s x %s taken or acc written", tl_dtype_name(c.ta), tl_dtype_name(c.tb));
      tb_free(&acc);
    }
    if (v5 && v5->dot && ci.isa_max >= TL_ISA_AVX512) {
      tbuf acc = acc_copy(&acc0);
      CHECK(v5->dot(&acc.r, &a.r, &b.r, TL_DOT_ACCUMULATE), "avx512 without AVX-VNNI: %s x %s not taken",
            tl_dtype_name(c.ta), tl_dtype_name(c.tb));
      check_case(&c, &a, &b, &acc0, &acc, "avx512 without AVX-VNNI");
      tb_free(&acc);
    }
    tb_free(&a);
    tb_free(&b);
    tb_free(&acc0);
  }
}
static void test_packers(void) {
  tl_layout l2 = {.tiled = 1, .vnni = 2, .tile_r = 32, .tile_c = 16};
  tl_layout l4 = {.tiled = 1, .vnni = 4, .tile_r = 64, .tile_c = 16};
  CHECK(tl_packer_find(2, l2, TL_ISA_SCALAR) == tl_pack_portable, "a vnni packer at the scalar level");
  tl_cpu_info ci;
  tl_cpu_detect(&ci);
  /* the AVX2 packer (avx2, avx2vnni) and the AVX-512 one, each against the portable reference */
  for (int lv = TL_ISA_AVX2; lv <= TL_ISA_AVX512; lv += TL_ISA_AVX512 - TL_ISA_AVX2) {
    if ((int)ci.isa_max < lv) continue;
    CHECK(tl_packer_find(2, l2, (tl_isa)lv) != tl_pack_portable, "%s: no bf16 vnni 2 packer", level_names[lv]);
    CHECK(tl_packer_find(1, l4, (tl_isa)lv) != tl_pack_portable, "%s: no int8 vnni 4 packer", level_names[lv]);
    if (lv == TL_ISA_AVX512)
      CHECK(tl_packer_find(1, l4, TL_ISA_AVX512) != tl_packer_find(1, l4, TL_ISA_AVX2), "avx512 takes the avx2 packer");
    test_packers_at((tl_isa)lv);
  }
}

/* 300 random jobs through the vnni packer of level lv against tl_pack_portable. */
static void test_packers_at(tl_isa lv) {
  tl_layout l2 = {.tiled = 1, .vnni = 2, .tile_r = 32, .tile_c = 16};
  tl_layout l4 = {.tiled = 1, .vnni = 4, .tile_r = 64, .tile_c = 16};
  test_rng rng = {4242};
  for (int t = 0; t < 300; t++) {
    int es = t % 2 ? 1 : 2;
    tl_layout l = es == 2 ? l2 : l4;
    l.tile_c = (uint16_t)(16 * test_rng_int(&rng, 1, 3));
    l.tile_r = (uint16_t)(l.vnni * test_rng_int(&rng, 1, 20));
    if (t % 7 == 0) l.tile_c = 12; /* not a multiple of 16: the portable fallback */
    int64_t dr = test_rng_int(&rng, 1, 150), dc = test_rng_int(&rng, 1, 150);
    int64_t rows = test_rng_int(&rng, 0, dr), cols = test_rng_int(&rng, 0, dc), rs = dc + test_rng_int(&rng, 0, 5);
    if (t >= 200) { /* long tiles mostly inside the source: the packer's chunks of whole groups */
      l.tile_r = (uint16_t)(l.vnni * test_rng_int(&rng, 16, 80));
      dr = test_rng_int(&rng, 64, 330);
      rows = t % 3 ? dr : test_rng_int(&rng, 0, dr);
      cols = t % 5 ? dc : cols;
    }
    unsigned char *src = malloc((size_t)(dr * rs * es + 64));
    for (int64_t i = 0; i < dr * rs * es + 64; i++) src[i] = (unsigned char)test_rng_u64(&rng);
    /* every third job: tiles a tile stride apart that leaves a gap after each (as the rows of a
     * taller tile row, matmul_pack_b), which neither packer may write */
    const int64_t tile = (int64_t)l.tile_r * l.tile_c, ts = t % 3 == 2 ? tile + l.tile_c * test_rng_int(&rng, 1, 9) : 0;
    const int64_t ntiles = TL_CDIV(dr, l.tile_r) * TL_CDIV(dc, l.tile_c), nb = ntiles * (ts ? ts : tile) * es;
    /* 64-byte aligned, and every other job asks for non-temporal stores (the AVX-512 packer
     * takes them where its stores land on lines; tl_pack_portable ignores the flag) */
    unsigned char *d1 = aligned_alloc(64, (size_t)(nb + 63) / 64 * 64), *d2 = aligned_alloc(64, (size_t)(nb + 63) / 64 * 64);
    memset(d1, 0xA5, (size_t)nb);
    memset(d2, 0x5A, (size_t)nb);
    uint16_t pad = (uint16_t)test_rng_u64(&rng);
    tl_pack_job j = {.src = (const char *)src, .src_rs = rs, .src_cs = 1, .rows = rows, .cols = cols,
                     .dst_rows = dr, .dst_cols = dc, .layout = l, .esize = (size_t)es, .pad = &pad, .tile_stride = ts, .nt = t % 2};
    j.dst = (char *)d1;
    tl_pack_portable(&j);
    j.dst = (char *)d2;
    tl_packer_find((size_t)es, l, lv)(&j);
    int64_t differ = 0, gaps = 0;
    for (int64_t i = 0; i < nb; i++) {
      const int in_tile = !ts || (i / es) % ts < tile;
      if (in_tile) differ += d1[i] != d2[i];
      else gaps += d1[i] != 0xA5 || d2[i] != 0x5A;
    }
    CHECK(differ == 0 && gaps == 0,
          "%s packer es %d tile %ux%u vnni %u stride %lld, %lldx%lld of %lldx%lld: %lld bytes differ, %lld gap bytes written",
          level_names[lv], es, l.tile_r, l.tile_c, l.vnni, (long long)ts, (long long)rows, (long long)cols, (long long)dr, (long long)dc,
          (long long)differ, (long long)gaps);
    free(src);
    free(d1);
    free(d2);
  }
}

/* A staged kernel: a [M, K] row-major, b [K, N] staged tiled vnni 2 / 4 by the runtime, c [M, N]
 * f32 / i32; one step per 32 x 48 block of c, K whole. */
static void staged_body(const tl_prog *p, tl_ref *refs, void *user) {
  (void)user;
  tl_tile_dot(p, &refs[2], &refs[0], &refs[1], 0);
}

static void test_staged(void) {
  for (int isa = TL_ISA_SCALAR; isa < TL_ISA_COUNT; isa++) {
    tl_ctx *ctx = ctx_at((tl_isa)isa);
    if (!ctx) continue;
    for (int d = 0; d < 2; d++) {
      tl_dtype ta = d ? TL_U8 : TL_BF16, tb = d ? TL_I8 : TL_BF16, tc = d ? TL_I32 : TL_F32;
      int64_t m = 70, n = 100, kk = d ? 130 : 75;
      tbuf a = tb_rm2(ta, m, kk, 0), b = tb_rm2(tb, kk, n, 0), c = tb_rm2(tc, m, n, 0);
      test_rng rng = {991 + (uint64_t)d};
      tb_rand(&a, &rng, -1, 1);
      tb_rand(&b, &rng, -1, 1);
      tl_tensor ta_t = tl_tensor_make(a.mem, ta, 2, a.r.shape), tb_t = tl_tensor_make(b.mem, tb, 2, b.r.shape);
      tl_tensor tensors_in[2] = {ta_t, tb_t};
      tl_tensor tc_t = tl_tensor_make(c.mem, tc, 2, c.r.shape);
      tl_blockspec specs_in[2] = {
          {.ndim = 2, .block = {32, 0}, .map = "i, j -> i, 0"},
          {.ndim = 2, .block = {0, 48}, .map = "i, j -> 0, j",
           .layout = {.tiled = 1, .vnni = (uint8_t)(d ? 4 : 2), .tile_r = (uint16_t)(d ? 64 : 32), .tile_c = 16}}};
      tl_blockspec spec_out = {.ndim = 2, .block = {32, 48}, .map = "i, j -> i, j"};
      tl_kernel k = {.name = "staged_dot", .body = staged_body, .grid_ndim = 2,
                     .grid = {TL_CDIV(m, 32), TL_CDIV(n, 48)}, .sem = {TL_PARALLEL, TL_PARALLEL},
                     .n_in = 2, .in = specs_in, .n_out = 1, .out = &spec_out};
      tl_status s = tl_call(ctx, &k, tensors_in, &tc_t);
      CHECK(s == TL_OK, "%s: staged %s: %s", level_names[isa], tl_dtype_name(ta), tl_ctx_error(ctx));
      dot_case dc = {.ta = ta, .tb = tb, .m = m, .n = n, .k = kk, .bkind = B_ROW};
      char what[64];
      snprintf(what, sizeof what, "%s staged", level_names[isa]);
      if (s == TL_OK) check_case(&dc, &a, &b, &c, &c, what);
      tb_free(&a);
      tb_free(&b);
      tb_free(&c);
    }
    tl_ctx_free(ctx);
  }
}

/* The AMX path over the emulation (amx_emu.h), on every machine: shapes the contract claims
 * (the 2 x 2 tile blocks, their 16-row / 16-column strips, M and N edges of 1-15 rows / columns
 * and their corner, B tiles of 1-4 A-tile steps, row gaps, both flags, every dtype pair) against
 * the reference, shapes it must decline, and the AMX probe units. */
static void test_amx_emulated(void) {
  static const tl_dtype pairs[][2] = {{TL_BF16, TL_BF16}, {TL_U8, TL_I8}, {TL_I8, TL_I8}, {TL_I8, TL_U8}, {TL_U8, TL_U8}};
  test_rng rng = {0xA3C5};
  tl_cpu_info cpu;
  tl_cpu_detect(&cpu);
  const int avx512 = cpu.isa_max >= TL_ISA_AVX512; /* the transposed b's staging uses it */
  if (!avx512) fprintf(stderr, "    no AVX-512: transposed b not run over the emulation\n");
  for (size_t p = 0; p < TL_ARRAY_LEN(pairs); p++) {
    const tl_dtype ta = pairs[p][0], tb = pairs[p][1];
    const int v = ta == TL_BF16 ? 2 : 4, ks = ta == TL_BF16 ? 32 : 64;
    for (int r = 0; r < 24; r++) {
      /* M and N: whole tiles, or with an edge of 1-15 (half the cases each), from 1 */
      dot_case c = {.ta = ta, .tb = tb, .m = 16 * test_rng_int(&rng, 0, 5), .n = 16 * test_rng_int(&rng, 0, 5),
                    .accum = (int)test_rng_int(&rng, 0, 1), .bkind = B_TILED, .tile_c = 16, .vnni = v};
      if (c.m == 0 || test_rng_int(&rng, 0, 1)) c.m += test_rng_int(&rng, 1, 15); /* below 16: declined */
      if (c.n == 0 || test_rng_int(&rng, 0, 1)) c.n += test_rng_int(&rng, 1, 15);
      c.tile_r = ks * (int)test_rng_int(&rng, 1, 4);
      c.k = ks * test_rng_int(&rng, 0, 7); /* and a K edge of whole pairs / quads in half the cases */
      if (c.k == 0 || test_rng_int(&rng, 0, 1)) c.k += v * test_rng_int(&rng, 1, ks / v - 1);
      c.pad_a = test_rng_int(&rng, 0, 1) * test_rng_int(&rng, 1, 40);
      c.pad_c = test_rng_int(&rng, 0, 1) * test_rng_int(&rng, 1, 9);
      run_amx_emu(&c, &rng);
      /* the same shape with b transposed (staged into B tiles by an AVX-512 transpose): past
       * 128 columns and 128 / 256 k in chunks (k up to 9 tile steps) */
      if (!avx512) continue;
      c.bkind = B_TRANS, c.tile_r = c.tile_c = c.vnni = 0;
      c.pad_b = test_rng_int(&rng, 0, 1) * test_rng_int(&rng, 1, 9);
      if (r % 4 == 0) c.n += 128, c.k += 2 * ks;
      run_amx_emu(&c, &rng);
    }
    /* outside the contract: K off whole pairs / quads (b tiled or transposed), M below 16,
     * another B layout, b row-major, f32 */
    const dot_case off[] = {
        {.m = 17, .n = 32, .k = ks + v - 1, .tile_r = ks, .tile_c = 16, .vnni = v},
        {.m = 32, .n = 32, .k = v - 1, .tile_r = ks, .tile_c = 16, .vnni = v},
        {.m = 15, .n = 32, .k = ks, .tile_r = ks, .tile_c = 16, .vnni = v},
        {.m = 32, .n = 32, .k = 2 * ks, .tile_r = ks, .tile_c = 32, .vnni = v},
        {.m = 32, .n = 32, .k = 2 * ks, .tile_r = ks + v, .tile_c = 16, .vnni = v},
        {.m = 32, .n = 32, .k = ks, .tile_r = ks, .tile_c = 16, .vnni = 1},
        {.m = 32, .n = 32, .k = ks / 2 + 1, .bkind = B_TRANS},
        {.m = 32, .n = 32, .k = ks, .bkind = B_ROW},
    };
    for (size_t i = 0; i < TL_ARRAY_LEN(off); i++) {
      dot_case c = off[i];
      c.ta = ta, c.tb = tb, c.accum = (int)(i & 1);
      if (c.bkind == 0 && c.tile_r) c.bkind = B_TILED;
      run_amx_emu(&c, &rng);
    }
  }
  dot_case f = {.ta = TL_F32, .tb = TL_F32, .m = 32, .n = 32, .k = 64, .bkind = B_TILED, .tile_r = 64, .tile_c = 16, .vnni = 1};
  run_amx_emu(&f, &rng);
  /* the probe units: iters steps of four products on tiles of ones, configuration loaded once and
   * released; C tile 0 holds iters x 32 (bf16, K 32 a step) or iters x 64 (int8) */
  for (int u = 0; u < tl_probe_amx_impl_emu.nunits; u++) {
    amx_emu_reset();
    const int64_t iters = 3;
    double ops = tl_probe_amx_impl_emu.units[u].run(iters);
    const int bf = tl_probe_amx_impl_emu.units[u].dtype == TL_BF16;
    CHECK(ops == (double)iters * 4 * (bf ? 16384 : 32768), "probe %s: %g ops", tl_probe_amx_impl_emu.units[u].name, ops);
    CHECK(!amx_emu.fault[0], "probe %s: %s", tl_probe_amx_impl_emu.units[u].name, amx_emu.fault);
    CHECK(amx_emu.loads == 1 && amx_emu.releases == 1 && amx_emu.dps == 4 * iters, "probe %s: %d loads, %d releases, %d products",
          tl_probe_amx_impl_emu.units[u].name, amx_emu.loads, amx_emu.releases, amx_emu.dps);
    for (int t = 0; t < 4; t++) {
      float fv;
      int32_t iv;
      memcpy(&fv, &amx_emu.t[t][15][60], 4);
      memcpy(&iv, &amx_emu.t[t][15][60], 4);
      CHECK(bf ? fv == 32.0f * iters : iv == 64 * iters, "probe %s: C tile %d holds %g / %d", tl_probe_amx_impl_emu.units[u].name,
            t, (double)fv, (int)iv);
    }
  }
}

/* The emulation's own rules (so test_amx_emulated's "no fault" can fail): each misuse below is
 * recorded, and a well-formed sequence is not. */
static void test_amx_emulator_rules(void) {
  _Alignas(64) unsigned char cfg[64], mem[16 * 64];
  memset(mem, 0, sizeof mem);
  static const char *const what[] = {"no configuration", "palette 0", "reserved byte", "17 rows",
                                     "rows without bytes", "empty tile", "tile used twice", "shapes not chaining",
                                     "bytes not a multiple of 4", "used after release", "well-formed"};
  for (int t = 0; t < (int)TL_ARRAY_LEN(what); t++) {
    amx_emu_reset();
    memset(cfg, 0, sizeof cfg);
    cfg[0] = 1;
    for (int i = 0; i < 8; i++) cfg[16 + 2 * i] = 64, cfg[48 + i] = 16;
    switch (t) {
    case 1: cfg[0] = 0; break;
    case 2: cfg[5] = 1; break;
    case 3: cfg[48 + 2] = 17; break;
    case 4: cfg[16 + 2 * 3] = 0; break;
    case 5: cfg[16 + 2 * 7] = 0, cfg[48 + 7] = 0; break;
    case 7: cfg[48 + 0] = 8; break;                  /* C 8 rows against A 16 */
    case 8: cfg[16 + 2 * 0] = 62, cfg[16 + 2 * 6] = 62; break;
    default: break;
    }
    if (t > 0) amx_emu_ldtilecfg(cfg);
    if (t == 9) amx_emu_release();
    amx_emu_loadd(4, mem, 64);
    amx_emu_loadd(7, mem, 64);
    if (t == 6) amx_emu_dpbf16ps(0, 4, 4);
    else amx_emu_dpbf16ps(0, 4, 7);
    amx_emu_stored(0, mem, 64);
    if (t == (int)TL_ARRAY_LEN(what) - 1) CHECK(!amx_emu.fault[0], "emulator: %s: %s", what[t], amx_emu.fault);
    else CHECK(amx_emu.fault[0], "emulator: %s not recorded", what[t]);
  }
  amx_emu_faults = 0; /* the misuse above was deliberate */
  amx_emu_reset();
}

int main(void) {
  RUN(test_random_cases);
  RUN(test_empty_k);
  RUN(test_b_guard);
  RUN(test_nan_inf);
  RUN(test_bf16_denormal);
  RUN(test_packers);
  RUN(test_staged);
  RUN(test_amx_emulator_rules);
  RUN(test_amx_emulated);
  RUN(test_avx2vnni_hidden); /* last: it hides AVX-VNNI for the rest of the process */
  return test_summary("tile_dot_isa");
}
