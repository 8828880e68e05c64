/* bench/matmul.c — times tl_matmul (f32, bf16 -> f32, u8 x i8 -> i32; b as given and pre-packed
 * with tl_matmul_pack_b) on squares and skinny-M shapes, next to this machine's probe peaks.
 * Not a test: prints a table. Usage: tilec_bench_matmul [reps (default 5)] [isa cap]. Plans are
 * cached by tl_matmul, so after the warm-up call each timed call runs the cached plan. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tilec.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Random bytes-ish data of dt (values small enough for every dtype). */
static void *rand_buf(tl_dtype dt, int64_t n, unsigned seed) {
  size_t es = tl_dtype_size(dt);
  void *p = aligned_alloc(64, ((size_t)n * es + 63) / 64 * 64);
  srand(seed);
  for (int64_t i = 0; i < n; i++) {
    float f = (float)rand() / (float)RAND_MAX - 0.5f;
    if (dt == TL_F32) ((float *)p)[i] = f;
    else if (dt == TL_BF16) ((uint16_t *)p)[i] = tl_f32_to_bf16(f);
    else ((int8_t *)p)[i] = (int8_t)(f * 200);
  }
  return p;
}

/* Median seconds of reps calls of tl_matmul (after one warm-up) and the fastest in *best, or -1
 * on failure. */
static double time_mm(tl_ctx *ctx, const tl_tensor *a, const tl_tensor *b, tl_tensor *c, int reps, double *best) {
  if (tl_matmul(ctx, a, b, c, NULL) != TL_OK) {
    fprintf(stderr, "tl_matmul: %s\n", tl_ctx_error(ctx));
    return -1;
  }
  double t[64];
  if (reps > 64) reps = 64;
  for (int r = 0; r < reps; r++) {
    double t0 = now_s();
    tl_matmul(ctx, a, b, c, NULL);
    t[r] = now_s() - t0;
  }
  qsort(t, (size_t)reps, sizeof t[0], cmp_d);
  *best = t[0];
  return t[reps / 2];
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 5;
  if (reps < 1) reps = 1;
  tl_ctx_opts opts = {.isa = argc > 2 ? argv[2] : NULL};
  tl_ctx *ctx;
  if (tl_ctx_new(&opts, &ctx) != TL_OK) {
    fprintf(stderr, "tl_ctx_new: %s\n", tl_last_error());
    return 1;
  }
  tl_ctx_info info;
  tl_ctx_info_get(ctx, &info);
  printf("tl_matmul, %d threads, isa %s, median of %d; peaks (tilec probe, 2 threads): avx512-fma 231 GFLOP/s, avx512-bf16 460, vnni 925 GOP/s\n",
         info.threads, tl_isa_name(info.isa), reps);
  printf("%-6s %-20s %-8s %10s %10s %7s %10s %7s\n", "dtype", "MxNxK", "b", "median ms", "GFLOP/s", "% peak", "best", "% peak");
  static const int64_t shapes[][3] = {{1024, 1024, 1024}, {2048, 2048, 2048}, {1, 4096, 4096}, {16, 4096, 4096}, {128, 4096, 4096}};
  static const tl_dtype dts[] = {TL_F32, TL_BF16, TL_U8};
  static const double peaks[] = {231, 460, 925};
  for (int di = 0; di < 3; di++)
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
      const int64_t M = shapes[si][0], N = shapes[si][1], K = shapes[si][2];
      const tl_dtype da = dts[di], db = da == TL_U8 ? TL_I8 : da, dc = da == TL_U8 ? TL_I32 : TL_F32;
      int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
      void *pa = rand_buf(da, M * K, 1), *pb = rand_buf(db, K * N, 2), *pc = malloc((size_t)(M * N) * 4);
      tl_tensor a = tl_tensor_make(pa, da, 2, sa), b = tl_tensor_make(pb, db, 2, sb), c = tl_tensor_make(pc, dc, 2, sc);
      tl_tensor packed;
      int have_packed = tl_matmul_pack_b(ctx, &b, da, &packed) == TL_OK;
      for (int p = 0; p < 1 + have_packed; p++) {
        double best = 0, s = time_mm(ctx, &a, p ? &packed : &b, &c, reps, &best);
        if (s <= 0) continue;
        double gf = 2.0 * (double)M * (double)N * (double)K / s * 1e-9, gfb = 2.0 * (double)M * (double)N * (double)K / best * 1e-9;
        char shp[48];
        snprintf(shp, sizeof shp, "%lldx%lldx%lld", (long long)M, (long long)N, (long long)K);
        printf("%-6s %-20s %-8s %10.3f %10.1f %6.0f%% %10.1f %6.0f%%\n", da == TL_U8 ? "u8i8" : tl_dtype_name(da), shp,
               p ? "packed" : "plain", s * 1e3, gf, 100 * gf / peaks[di], gfb, 100 * gfb / peaks[di]);
        fflush(stdout);
      }
      if (have_packed) tl_free(packed.data);
      free(pa), free(pb), free(pc);
    }
  tl_ctx_free(ctx);
  return 0;
}
