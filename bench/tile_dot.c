/* tile_dot.c — micro-benchmark of tl_tile_dot per ISA level (tilec_bench_tile_dot; not run by
 * the tests). Operands stay in L1: f32 64x64x64 (b row-major), bf16 64x64x128 and u8 x s8
 * 64x64x128 (b tiled in the AMX B layout: 32x16 vnni 2 / 64x16 vnni 4), acc f32 / i32 with
 * TL_DOT_ACCUMULATE. A fourth case is tl_matmul's step with b pre-packed, operands in L2: f32
 * 128x128x512, a and acc rows 2048 floats apart (blocks of 2048-wide matrices), b in 16-column
 * tiles of 512 rows (tl_matmul_pack_b's layout). Each measurement is one tl_call of a one-step kernel on a context capped at
 * the level (threads 1) whose body times `reps` dots; levels and dtypes are interleaved over
 * rounds and the best round is reported, as GFLOP/s (a multiply-add counts 2). Two more tables:
 * bf16 and u8 x s8 with b row-major in place (the skinny products' kernels, 1-16 rows of a), M x
 * 512 x 256 (int8: M x 1024 x 256) with b's and acc's rows 4096 elements apart (a block of a
 * 4096-wide matrix; and 4096 + 64 apart, off the 4 KiB alias), in L2, on the best VNNI level,
 * next to the same product with b in tiles.
 *
 *   tilec_bench_tile_dot [rounds]     (default 7)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tilec.h>

typedef struct bench_job {
  tl_ref acc, a, b;
  int64_t reps;
  double seconds;
} bench_job;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The body: reps dots on the job's refs, timed. */
static void bench_body(const tl_prog *p, tl_ref *refs, void *user) {
  bench_job *j = user;
  tl_tile_dot(p, &j->acc, &j->a, &j->b, TL_DOT_ACCUMULATE); /* warm up */
  double t0 = now_s();
  for (int64_t r = 0; r < j->reps; r++) tl_tile_dot(p, &j->acc, &j->a, &j->b, TL_DOT_ACCUMULATE);
  j->seconds = now_s() - t0;
  ((float *)refs[1].data)[0] = 0.0f;
}

/* Times job j on ctx: one tl_call of a one-step kernel whose body runs the dots. Returns the
 * rate in G(FL)OP/s for `flop` per dot, or -1 with the error printed (level names ctx's cap). */
static double bench_run(tl_ctx *ctx, const char *level, bench_job *j, double flop) {
  static float din[1], dout[1];
  const int64_t one[1] = {1};
  tl_tensor x = tl_tensor_make(din, TL_F32, 1, one), y = tl_tensor_make(dout, TL_F32, 1, one);
  tl_blockspec spec = {.ndim = 1, .block = {1}};
  tl_kernel k = {.name = "bench_dot", .body = bench_body, .user = j, .n_in = 1, .in = &spec, .n_out = 1, .out = &spec};
  if (tl_call(ctx, &k, &x, &y) != TL_OK) {
    fprintf(stderr, "%s: %s\n", level, tl_ctx_error(ctx));
    return -1;
  }
  return flop * (double)j->reps / j->seconds * 1e-9;
}

/* A 2-D ref over data: row-major (layout zero) or tiled. */
static tl_ref make_ref(void *data, tl_dtype dt, int64_t r, int64_t c, tl_layout l) {
  tl_ref x;
  memset(&x, 0, sizeof x);
  x.data = data;
  x.dtype = dt;
  x.ndim = 2;
  x.shape[0] = x.valid[0] = r;
  x.shape[1] = x.valid[1] = c;
  if (!l.tiled) {
    x.stride[0] = c;
    x.stride[1] = 1;
  }
  x.layout = l;
  return x;
}

/* n elements at p: int8 small values (i % mod), or bf16 finite values near 1 (0x3C00 + small
 * mantissas, mod + 48 of them). */
static void rm_fill(char *p, int64_t n, int i8, int mod) {
  for (int64_t i = 0; i < n; i++)
    if (i8) p[i] = (char)(i % mod);
    else ((uint16_t *)p)[i] = 0x3C00 + (uint16_t)(i % (mod + 48));
}

/* One skinny table: bf16 M x 512 x 256 or u8 x s8 M x 1024 x 256, b row-major in place with rows
 * 4096 elements apart (a block of a 4096-wide matrix: rows on one page offset, which share their
 * cache sets) and 4096 + 64 apart (not), against the same b in 16-column tiles, in L2, 1-16
 * rows, 1 thread. Returns nonzero on failure (printed). */
static int rm_table(tl_ctx *ctx, const char *level, tl_dtype da, int rounds) {
  enum { RN = 256, RLD = 4096, RLDP = 4096 + 64 }; /* RLDP: the same rows off the 4 KiB alias */
  static const int64_t rms[] = {1, 3, 4, 5, 6, 8, 9, 12, 16};
  enum { NR = sizeof rms / sizeof rms[0] };
  const int i8 = da != TL_BF16;
  const int64_t rk = i8 ? 1024 : 512, es = i8 ? 1 : 2;
  const tl_dtype db = i8 ? TL_I8 : TL_BF16, dc = i8 ? TL_I32 : TL_F32;
  char *ra = aligned_alloc(64, (size_t)(es * 16 * rk)), *rb = aligned_alloc(64, (size_t)(es * rk * RLDP));
  char *rt = aligned_alloc(64, (size_t)(es * rk * RN)), *rc = aligned_alloc(64, sizeof(float) * 16 * RLD);
  if (!ra || !rb || !rt || !rc) {
    fprintf(stderr, "out of memory\n");
    free(ra), free(rb), free(rt), free(rc);
    return 1;
  }
  rm_fill(ra, 16 * rk, i8, 7);
  rm_fill(rb, rk * RLDP, i8, 5);
  rm_fill(rt, rk * RN, i8, 5);
  memset(rc, 0, sizeof(float) * 16 * RLD);
  double rbest[NR][3] = {{0}}; /* b row-major RLD apart, RLDP apart, tiled */
  for (int r = 0; r < rounds; r++)
    for (int i = 0; i < NR; i++)
      for (int t = 0; t < 3; t++) {
        bench_job j;
        j.a = make_ref(ra, da, rms[i], rk, (tl_layout){0});
        j.b = t == 2 ? make_ref(rt, db, rk, RN, (tl_layout){.tiled = 1, .vnni = (uint8_t)(i8 ? 4 : 2), .tile_r = (uint16_t)rk, .tile_c = 16})
                : make_ref(rb, db, rk, RN, (tl_layout){0});
        if (t < 2) j.b.stride[0] = t ? RLDP : RLD;
        j.acc = make_ref(rc, dc, rms[i], RN, (tl_layout){0});
        j.acc.stride[0] = RLD;
        const double flop = 2.0 * (double)rms[i] * RN * (double)rk;
        j.reps = (int64_t)((i8 ? 6e8 : 3e8) / flop);
        const double g = bench_run(ctx, level, &j, flop);
        if (g < 0) {
          free(ra), free(rb), free(rt), free(rc);
          return 1;
        }
        if (g > rbest[i][t]) rbest[i][t] = g;
      }
  printf("\n%s M x %lld x 256, b row-major in place (rows %d or %d elements apart) and in 16-column tiles, in "
         "L2, level %s, 1 thread (%s)\n%-6s %18s %18s %10s\n", i8 ? "u8 x s8" : "bf16", (long long)rk, RLD, RLDP, level,
         i8 ? "GOP/s" : "GFLOP/s", "rows", "b row-major", "b rows padded", "b tiled");
  for (int i = 0; i < NR; i++)
    printf("%-6lld %18.1f %18.1f %10.1f\n", (long long)rms[i], rbest[i][0], rbest[i][1], rbest[i][2]);
  free(ra), free(rb), free(rt), free(rc);
  return 0;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 7;
  if (rounds < 1) rounds = 1;
  static _Alignas(64) float fa[64 * 64], fb[64 * 64], fc[64 * 64];
  static _Alignas(64) uint16_t ha[64 * 128], hb[128 * 64];
  static _Alignas(64) uint8_t ia[64 * 128], ib[128 * 64];
  static _Alignas(64) int32_t ic[64 * 64];
  enum { LD = 2048, L2M = 128, L2N = 128, L2K = 512 };
  float *la = aligned_alloc(64, sizeof(float) * L2M * LD), *lc = aligned_alloc(64, sizeof(float) * L2M * LD);
  float *lb = aligned_alloc(64, sizeof(float) * L2K * L2N);
  if (!la || !lb || !lc) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  for (int i = 0; i < L2M * LD; i++) la[i] = 1.0f / (float)(1 + i % 13), lc[i] = 0;
  for (int i = 0; i < L2K * L2N; i++) lb[i] = 1.0f / (float)(1 + i % 11);
  for (int i = 0; i < 64 * 64; i++) fa[i] = fb[i] = 1.0f / (float)(1 + i % 13), fc[i] = 0;
  for (int i = 0; i < 64 * 128; i++) ha[i] = hb[i] = 0x3C00 + (uint16_t)(i % 61), ia[i] = (uint8_t)(i % 7), ib[i] = (uint8_t)(i % 5);
  const char *levels[] = {"scalar", "avx2", "avx2vnni", "avx512", "avx512vnni", "avx512bf16", "amx"};
  enum { NL = sizeof levels / sizeof levels[0] };
  const char *kinds[] = {"f32 64x64x64", "bf16 64x64x128", "u8xs8 64x64x128", "f32 L2 128x128x512"};
  double best[NL][4] = {{0}};
  int have[NL] = {0};
  tl_ctx *ctx[NL] = {0};
  for (int l = 0; l < NL; l++) {
    tl_ctx_opts o = {.threads = 1, .isa = levels[l]};
    if (tl_ctx_new(&o, &ctx[l]) != TL_OK) continue;
    tl_ctx_info info;
    tl_ctx_info_get(ctx[l], &info);
    have[l] = (int)info.isa == l;
  }
  for (int r = 0; r < rounds; r++) {
    for (int kind = 0; kind < 4; kind++) {
      for (int l = 0; l < NL; l++) {
        if (!have[l]) continue;
        bench_job j;
        int64_t kk = kind == 0 ? 64 : 128, mm = 64, nn = 64;
        if (kind == 3) {
          kk = L2K, mm = L2M, nn = L2N;
          j.a = make_ref(la, TL_F32, L2M, L2K, (tl_layout){0});
          j.b = make_ref(lb, TL_F32, L2K, L2N, (tl_layout){.tiled = 1, .vnni = 1, .tile_r = L2K, .tile_c = 16});
          j.acc = make_ref(lc, TL_F32, L2M, L2N, (tl_layout){0});
          j.a.stride[0] = j.acc.stride[0] = LD;
        } else if (kind == 0) {
          j.a = make_ref(fa, TL_F32, 64, 64, (tl_layout){0});
          j.b = make_ref(fb, TL_F32, 64, 64, (tl_layout){0});
          j.acc = make_ref(fc, TL_F32, 64, 64, (tl_layout){0});
        } else if (kind == 1) {
          j.a = make_ref(ha, TL_BF16, 64, 128, (tl_layout){0});
          j.b = make_ref(hb, TL_BF16, 128, 64, (tl_layout){.tiled = 1, .vnni = 2, .tile_r = 32, .tile_c = 16});
          j.acc = make_ref(fc, TL_F32, 64, 64, (tl_layout){0});
        } else {
          j.a = make_ref(ia, TL_U8, 64, 128, (tl_layout){0});
          j.b = make_ref(ib, TL_I8, 128, 64, (tl_layout){.tiled = 1, .vnni = 4, .tile_r = 64, .tile_c = 16});
          j.acc = make_ref(ic, TL_I32, 64, 64, (tl_layout){0});
        }
        double flop = 2.0 * (double)mm * (double)nn * (double)kk;
        j.reps = l == 0 ? (kind == 3 ? 2 : 20) : (int64_t)(2e8 / flop); /* ~2 ms per measurement on a vector path */
        const double g = bench_run(ctx[l], levels[l], &j, flop);
        if (g < 0) return 1;
        if (g > best[l][kind]) best[l][kind] = g;
      }
    }
  }
  printf("tl_tile_dot, 1 thread, operands in L1 (the last column: L2), best of %d interleaved rounds (GFLOP/s; "
         "int8: GOP/s)\n", rounds);
  printf("%-12s %16s %16s %16s %19s\n", "level", kinds[0], kinds[1], kinds[2], kinds[3]);
  for (int l = 0; l < NL; l++) {
    if (!have[l]) {
      printf("%-12s %16s\n", levels[l], "(not on this CPU)");
      continue;
    }
    printf("%-12s %16.1f %16.1f %16.1f %19.1f\n", levels[l], best[l][0], best[l][1], best[l][2], best[l][3]);
  }
  /* the skinny tables: b row-major in place against b tiled, 1-16 rows, on the best VNNI level */
  int lb16 = -1;
  for (int l = 0; l < NL; l++)
    if (have[l] && l >= TL_ISA_AVX512VNNI) lb16 = l;
  if (lb16 >= 0 && (rm_table(ctx[lb16], levels[lb16], TL_BF16, rounds) || rm_table(ctx[lb16], levels[lb16], TL_U8, rounds)))
    return 1;
  for (int l = 0; l < NL; l++) tl_ctx_free(ctx[l]);
  free(la), free(lb), free(lc);
  return 0;
}
