/* bench/executor.c — the executor's measured gates (issue: grid executor):
 *   1. overhead: an empty body over a 1,000,000-step grid, in µs per step per worker;
 *   2. staging efficiency: x *= 3 over 1 GiB of f32 through the executor (blocks used in place,
 *      and with staging forced) against a plain C loop on the same threads, interleaved round by
 *      round in one run; medians with min/max and the ratios.
 * Usage: tilec_bench_executor [--rounds N] [--mib M] [--threads T] [--block-rows R]
 *        (defaults 7 rounds, 1024 MiB, all CPUs, blocks of 64 rows x 1024 f32) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tilec.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void empty_body(const tl_prog *p, tl_ref *refs, void *user) { (void)p, (void)refs, (void)user; }

static void scale_body(const tl_prog *p, tl_ref *refs, void *user) {
  tl_ref *x = &refs[0], *y = &refs[1];
  const float a = *(const float *)user;
  for (int64_t r = 0; r < y->valid[0]; r++) {
    const float *xs = (const float *)x->data + r * x->stride[0];
    float *ys = (float *)y->data + r * y->stride[0];
    for (int64_t c = 0; c < y->valid[1]; c++) ys[c] = a * xs[c];
  }
  (void)p;
}

/* The same, staging the next step's block row by row between rows of work (buffers = 2). */
static void scale_pump_body(const tl_prog *p, tl_ref *refs, void *user) {
  tl_ref *x = &refs[0], *y = &refs[1];
  const float a = *(const float *)user;
  const int64_t row_bytes = x->shape[1] * 4;
  for (int64_t r = 0; r < y->valid[0]; r++) {
    const float *xs = (const float *)x->data + r * x->stride[0];
    float *ys = (float *)y->data + r * y->stride[0];
    for (int64_t c = 0; c < y->valid[1]; c++) ys[c] = a * xs[c];
    if ((r & 7) == 7) tl_stage_pump(p, 8 * row_bytes);
  }
}

typedef struct loop_arg { float *x; int64_t lo, hi; float a; } loop_arg;
static void *loop_thread(void *arg) {
  loop_arg *l = arg;
  for (int64_t i = l->lo; i < l->hi; i++) l->x[i] = l->a * l->x[i];
  return NULL;
}
/* The plain C loop: x *= a split evenly over `threads` pthreads (the caller takes the first part). */
static void plain_scale(float *x, int64_t n, float a, int threads) {
  pthread_t th[64];
  loop_arg args[64] = {0};
  if (threads > 64) threads = 64;
  for (int t = 0; t < threads; t++) args[t] = (loop_arg){x, n * t / threads, n * (t + 1) / threads, a};
  for (int t = 1; t < threads; t++) pthread_create(&th[t], NULL, loop_thread, &args[t]);
  loop_thread(&args[0]);
  for (int t = 1; t < threads; t++) pthread_join(th[t], NULL);
}

int main(int argc, char **argv) {
  int rounds = 7, threads = 0, brows = 64;
  int64_t mib = 1024;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--mib") && i + 1 < argc) mib = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--block-rows") && i + 1 < argc) brows = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: %s [--rounds N] [--mib M] [--threads T] [--block-rows R]\n", argv[0]);
      return strcmp(argv[i], "--help") ? 2 : 0;
    }
  }
  if (rounds < 1 || rounds > 1000 || mib < 1 || brows < 1) {
    fprintf(stderr, "%s: bad --rounds or --mib\n", argv[0]);
    return 2;
  }
  tl_ctx_opts o = {.threads = threads};
  tl_ctx *ctx;
  if (tl_ctx_new(&o, &ctx) != TL_OK) {
    fprintf(stderr, "%s\n", tl_last_error());
    return 1;
  }
  tl_ctx_info info;
  tl_ctx_info_get(ctx, &info);
  threads = info.threads;
  printf("threads %d, ISA %s, %d rounds, medians [min, max]\n", threads, tl_isa_name(info.isa), rounds);

  /* 1. overhead */
  {
    const int64_t steps = 1000000;
    tl_kernel k = {.name = "empty", .body = empty_body, .grid_ndim = 1, .grid = {steps}, .sem = {TL_PARALLEL}};
    tl_kernel k2 = {.name = "empty2d", .body = empty_body, .grid_ndim = 2, .grid = {1000, 1000}, .sem = {TL_PARALLEL}};
    tl_plan *p1, *p2;
    if (tl_plan_new(ctx, &k, NULL, NULL, &p1) != TL_OK || tl_plan_new(ctx, &k2, NULL, NULL, &p2) != TL_OK) {
      fprintf(stderr, "%s\n", tl_ctx_error(ctx));
      return 1;
    }
    double t1[1000], t2[1000];
    for (int r = 0; r < rounds; r++) {
      double t = now_s();
      tl_plan_run(p1, NULL, NULL);
      t1[r] = now_s() - t;
      t = now_s();
      tl_plan_run(p2, NULL, NULL);
      t2[r] = now_s() - t;
    }
    double m1 = median(t1, rounds), m2 = median(t2, rounds);
    printf("overhead, empty body, 1e6 steps, grid (1e6) parallel:        %.4f us/step/worker (%.2f ms per run)\n",
           m1 / steps * threads * 1e6, m1 * 1e3);
    printf("overhead, empty body, 1e6 steps, grid (1000 par, 1000 seq):  %.4f us/step/worker (%.2f ms per run)\n",
           m2 / steps * threads * 1e6, m2 * 1e3);
  }

  /* 2. staging efficiency */
  {
    const int64_t cols = 1024, rows = mib * 1024 * 1024 / 4 / cols, n = rows * cols;
    float *x = aligned_alloc(64, (size_t)n * 4);
    if (!x) {
      fprintf(stderr, "out of memory for %lld MiB\n", (long long)mib);
      return 1;
    }
    for (int64_t i = 0; i < n; i++) x[i] = (float)(i & 1023);
    float a = 1.0009765625f; /* exact-ish, keeps values finite over many rounds */
    int64_t shape[2] = {rows, cols};
    tl_tensor t = tl_tensor_make(x, TL_F32, 2, shape);
    tl_blockspec in_place = {.ndim = 2, .block = {brows, 0}, .map = "i -> i, 0"};
    tl_blockspec staged = in_place, pumped = in_place, prefetched = in_place;
    staged.stage = pumped.stage = prefetched.stage = TL_STAGE_ALWAYS;
    pumped.buffers = 2;
    prefetched.prefetch = 1;
    tl_kernel k = {.name = "scale", .body = scale_body, .user = &a, .grid_ndim = 1, .grid = {(rows + brows - 1) / brows},
                   .sem = {TL_PARALLEL}, .n_in = 1, .in = &in_place, .n_out = 1, .out = &in_place};
    enum { V = 5 };
    const char *names[V] = {"plain C loop", "tilec, blocks in place", "tilec, staging forced", "tilec, staging forced + pump",
                            "tilec, staging forced + prefetch"};
    tl_kernel kv[V] = {k, k, k, k, k};
    kv[4].in = &prefetched, kv[4].out = &staged;
    kv[2].in = kv[2].out = &staged;
    kv[3].in = kv[3].out = &pumped;
    kv[3].body = scale_pump_body;
    tl_plan *plans[V] = {0};
    for (int v = 1; v < V; v++)
      if (tl_plan_new(ctx, &kv[v], &t, &t, &plans[v]) != TL_OK) {
        fprintf(stderr, "%s\n", tl_ctx_error(ctx));
        return 1;
      }
    static double tm[V][1000];
    for (int v = 1; v < V; v++) tl_plan_run(plans[v], &t, &t); /* warm-up: arenas grown */
    plain_scale(x, n, a, threads);
    for (int r = 0; r < rounds; r++) /* interleaved, round by round */
      for (int v = 0; v < V; v++) {
        double s = now_s();
        if (v == 0) plain_scale(x, n, a, threads);
        else tl_plan_run(plans[v], &t, &t);
        tm[v][r] = now_s() - s;
      }
    double bytes = 2.0 * n * 4;
    printf("scale x *= a over %lld MiB f32 in blocks of %d x %lld (read + write %.1f GB per run):\n", (long long)mib, brows,
           (long long)cols, bytes / 1e9);
    double base = 0;
    for (int v = 0; v < V; v++) {
      double mn = 1e9, mx = 0;
      for (int r = 0; r < rounds; r++) mn = tm[v][r] < mn ? tm[v][r] : mn, mx = tm[v][r] > mx ? tm[v][r] : mx;
      double md = median(tm[v], rounds);
      if (v == 0) base = md;
      printf("  %-30s %8.2f ms [%.2f, %.2f]  %6.1f GB/s  ratio %.3f\n", names[v], md * 1e3, mn * 1e3, mx * 1e3, bytes / md / 1e9,
             base / md);
    }
    free(x);
  }
  tl_ctx_free(ctx);
  return 0;
}
