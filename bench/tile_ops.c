/* bench/tile_ops.c — the vectorised tile operations (issue "Matrix and vector units",
 * deliverable 3), per ISA level, in two modes:
 *   default  time unary exp, binary add and reduce sum (last axis) over a 64x1024 f32 block, each
 *            ISA level the CPU has run interleaved round by round (one context per level, capped
 *            with opts.isa; the op runs --reps times inside one body per round, block hot in
 *            L2); prints medians with min/max and the speedup over scalar.
 *   --ulp    accuracy of exp, log, tanh, erf, gelu, silu per level against a float64 reference
 *            over every S-th float bit pattern of the whole line (S = --stride, default 61) plus
 *            1M random values in [-20, 20]; prints the max error in ulp of the f32 result (ulp of
 *            2^-149 below 2^-126) and where, the max over normal results (|ref| >= 2^-126), the
 *            mean, and counts special-value mismatches (NaN / inf).
 * Usage: tilec_bench_tile_ops [--rounds N] [--reps R] | --ulp [--stride S]
 * Numbers in docs/kernels.md ("Elementwise and reductions"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tilec.h>

enum { OP_EXP, OP_ADD, OP_SUM, OP_UNARY };

typedef struct job {
  int kind;       /* OP_* */
  tl_unary uop;   /* OP_UNARY */
  tl_ref *d, *a, *b;
  int reps;
} job;

/* The body: runs the job's op `reps` times on the job's own refs (the kernel's are dummies). */
static void body(const tl_prog *p, tl_ref *refs, void *user) {
  (void)p, (void)refs;
  job *j = user;
  for (int r = 0; r < j->reps; r++) {
    switch (j->kind) {
    case OP_EXP: tl_tile_unary(j->d, j->a, TL_UNARY_EXP); break;
    case OP_ADD: tl_tile_binary(j->d, j->a, j->b, TL_BINARY_ADD); break;
    case OP_SUM: tl_tile_reduce(j->d, j->a, -1, TL_REDUCE_SUM); break;
    default: tl_tile_unary(j->d, j->a, j->uop); break;
    }
  }
}

/* Runs job once inside a one-step kernel on ctx. */
static tl_status run_job(tl_ctx *ctx, job *j) {
  static float din, dout;
  int64_t one[1] = {1};
  tl_tensor in = tl_tensor_make(&din, TL_F32, 1, one), out = tl_tensor_make(&dout, TL_F32, 1, one);
  tl_blockspec spec = {.ndim = 1};
  tl_kernel k = {.name = "tile_ops", .body = body, .user = j, .grid_ndim = 1, .grid = {1},
                 .n_in = 1, .in = &spec, .n_out = 1, .out = &spec};
  return tl_call(ctx, &k, &in, &out);
}

/* A contiguous row-major f32 ref over data. */
static tl_ref ref2(float *data, int64_t r, int64_t c) {
  tl_ref x;
  memset(&x, 0, sizeof x);
  x.data = data;
  x.dtype = TL_F32;
  x.ndim = 2;
  x.shape[0] = x.valid[0] = r;
  x.shape[1] = x.valid[1] = c;
  x.stride[0] = c;
  x.stride[1] = 1;
  return x;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Contexts for every level up to the CPU's best of scalar, avx2, avx512; returns how many. */
static int make_ctxs(tl_ctx **ctx, tl_isa *isa) {
  tl_cpu_info ci;
  tl_cpu_detect(&ci);
  const tl_isa levels[3] = {TL_ISA_SCALAR, TL_ISA_AVX2, TL_ISA_AVX512};
  int n = 0;
  for (int i = 0; i < 3; i++) {
    if (levels[i] > ci.isa_max) break;
    tl_ctx_opts o = {.threads = 1, .isa = tl_isa_name(levels[i])};
    if (tl_ctx_new(&o, &ctx[n]) != TL_OK) {
      fprintf(stderr, "tl_ctx_new(%s): %s\n", o.isa, tl_last_error());
      break;
    }
    isa[n++] = levels[i];
  }
  return n;
}

static int bench_time(int rounds, int reps) {
  enum { R = 64, C = 1024 };
  float *a = malloc(sizeof(float) * R * C), *b = malloc(sizeof(float) * R * C);
  float *d = malloc(sizeof(float) * R * C), *s = malloc(sizeof(float) * R);
  for (int64_t i = 0; i < R * C; i++) {
    a[i] = (float)((i * 7919 % 2000) - 1000) * 0.01f;
    b[i] = (float)((i * 104729 % 1000) - 500) * 0.003f;
  }
  tl_ref ra = ref2(a, R, C), rb = ref2(b, R, C), rd = ref2(d, R, C), rs = ref2(s, R, 1);
  tl_ctx *ctx[3];
  tl_isa isa[3];
  int nl = make_ctxs(ctx, isa);
  const char *names[3] = {"unary exp", "binary add", "reduce sum"};
  double *t = malloc(sizeof(double) * 3 * 3 * (size_t)rounds);
  for (int r = 0; r < rounds + 1; r++) /* round 0 warms up */
    for (int op = 0; op < 3; op++)
      for (int l = 0; l < nl; l++) {
        job j = {.kind = op, .d = op == OP_SUM ? &rs : &rd, .a = &ra, .b = &rb, .reps = reps};
        double t0 = now_s();
        if (run_job(ctx[l], &j) != TL_OK) fprintf(stderr, "run: %s\n", tl_ctx_error(ctx[l]));
        double dt = (now_s() - t0) / reps;
        if (r) t[(op * 3 + l) * rounds + r - 1] = dt;
      }
  printf("tile ops over a 64x1024 f32 block (one thread, block hot), %d rounds x %d reps, interleaved\n",
         rounds, reps);
  printf("%-12s %-8s %12s %12s %12s %10s %9s\n", "op", "isa", "median us", "min us", "max us", "GB/s", "speedup");
  for (int op = 0; op < 3; op++) {
    double base = 0;
    for (int l = 0; l < nl; l++) {
      double *v = &t[(op * 3 + l) * rounds];
      qsort(v, (size_t)rounds, sizeof *v, cmp_d);
      double med = rounds % 2 ? v[rounds / 2] : 0.5 * (v[rounds / 2 - 1] + v[rounds / 2]);
      if (l == 0) base = med;
      double bytes = (double)R * C * 4 * (op == OP_ADD ? 3 : op == OP_EXP ? 2 : 1);
      printf("%-12s %-8s %12.2f %12.2f %12.2f %10.1f %8.1fx\n", names[op], tl_isa_name(isa[l]), med * 1e6,
             v[0] * 1e6, v[rounds - 1] * 1e6, bytes / med * 1e-9, base / med);
    }
  }
  for (int l = 0; l < nl; l++) tl_ctx_free(ctx[l]);
  free(t), free(a), free(b), free(d), free(s);
  return 0;
}

/* ---- accuracy ---- */

static double ref_of(tl_unary op, double x) {
  switch (op) {
  case TL_UNARY_EXP: return exp(x);
  case TL_UNARY_LOG: return log(x);
  case TL_UNARY_TANH: return tanh(x);
  case TL_UNARY_ERF: return erf(x);
  case TL_UNARY_GELU: return 0.5 * x * erfc(-x / sqrt(2.0));
  case TL_UNARY_SILU: return x / (1.0 + exp(-x));
  default: return x;
  }
}

/* |out - ref| in units of the last place of ref rounded to f32 (2^-149 below 2^-126). Returns
 * -1 for a special-value mismatch (NaN against a number, inf against a finite value). */
static double ulp_err(float out, double ref) {
  if (isnan(ref)) return isnan(out) ? 0 : -1;
  if (isnan(out)) return -1;
  float rf = (float)ref;
  if (isinf(rf)) return out == rf ? 0 : (isinf(out) ? -1 : fabs((double)out - ref) / ldexp(1.0, 104));
  if (isinf(out)) return -1;
  int e;
  frexp(fabs(ref), &e); /* |ref| in [2^(e-1), 2^e) */
  if (e - 1 < -126) e = -125;
  return fabs((double)out - ref) / ldexp(1.0, e - 1 - 23);
}

static int bench_ulp(int64_t stride) {
  const tl_unary ops[6] = {TL_UNARY_EXP, TL_UNARY_LOG, TL_UNARY_TANH, TL_UNARY_ERF, TL_UNARY_GELU, TL_UNARY_SILU};
  enum { N = 1 << 20 };
  float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N);
  tl_ref rx = ref2(x, 1, N), ry = ref2(y, 1, N);
  tl_ctx *ctx[3];
  tl_isa isa[3];
  int nl = make_ctxs(ctx, isa);
  printf("max error against float64, every %lld-th f32 bit pattern + 1M uniform in [-20, 20]\n", (long long)stride);
  printf("%-6s %-8s %10s %16s %14s %10s %12s\n", "op", "isa", "max ulp", "at x", "max (normal)", "mean ulp",
         "special bad");
  for (int o = 0; o < 6; o++)
    for (int l = 0; l < nl; l++) {
      double maxu = 0, sumu = 0, at = 0, maxn = 0;
      int64_t cnt = 0, bad = 0;
      uint64_t pat = 0, rng = 88172645463325252ull;
      int random_done = 0;
      for (;;) {
        int n = 0;
        if (pat <= 0xffffffffull) {
          for (; n < N && pat <= 0xffffffffull; pat += (uint64_t)stride) {
            uint32_t u = (uint32_t)pat;
            memcpy(&x[n++], &u, 4);
          }
        } else if (!random_done) {
          for (; n < N; n++) {
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            x[n] = (float)(-20.0 + 40.0 * (double)(rng >> 11) * (1.0 / 9007199254740992.0));
          }
          random_done = 1;
        } else {
          break;
        }
        rx.shape[1] = rx.valid[1] = ry.shape[1] = ry.valid[1] = n;
        job j = {.kind = OP_UNARY, .uop = ops[o], .d = &ry, .a = &rx, .reps = 1};
        if (run_job(ctx[l], &j) != TL_OK) fprintf(stderr, "run: %s\n", tl_ctx_error(ctx[l]));
        for (int i = 0; i < n; i++) {
          double e = ulp_err(y[i], ref_of(ops[o], (double)x[i]));
          if (e < 0) {
            if (bad++ < 3)
              fprintf(stderr, "  %s %s: x=%a got %a want %a\n", tl_unary_name(ops[o]), tl_isa_name(isa[l]),
                      (double)x[i], (double)y[i], ref_of(ops[o], (double)x[i]));
            continue;
          }
          sumu += e;
          if (e > maxu) maxu = e, at = x[i];
          if (e > maxn && fabs(ref_of(ops[o], (double)x[i])) >= 0x1p-126) maxn = e;
        }
        cnt += n;
      }
      printf("%-6s %-8s %10.2f %16.8g %14.2f %10.3f %12lld\n", tl_unary_name(ops[o]), tl_isa_name(isa[l]), maxu, at,
             maxn, sumu / (double)cnt, (long long)bad);
      fflush(stdout);
    }
  for (int l = 0; l < nl; l++) tl_ctx_free(ctx[l]);
  free(x), free(y);
  return 0;
}

int main(int argc, char **argv) {
  int rounds = 15, reps = 200, ulp = 0;
  int64_t stride = 61;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--ulp")) ulp = 1;
    else if (!strcmp(argv[i], "--stride") && i + 1 < argc) stride = atoll(argv[++i]);
    else {
      fprintf(stderr, "usage: %s [--rounds N] [--reps R] | --ulp [--stride S]\n", argv[0]);
      return 2;
    }
  }
  if (rounds < 1) rounds = 1;
  if (reps < 1) reps = 1;
  if (stride < 1) stride = 1;
  return ulp ? bench_ulp(stride) : bench_time(rounds, reps);
}
