/* examples/matmul.c — C = A @ B as a tilec kernel, in the two classic grid orders, checked against
 * a float64 reference.
 *
 *  1. k innermost, TL_OUT_WRITE: grid (i, j, k); the C block stays staged while k walks A's block
 *     row and B's block column; the body overwrites on the first k step and accumulates after.
 *  2. The BLIS order (j, k, i), TL_OUT_ACCUM_ZERO: each B block is staged once per (j, k) and
 *     reused for every i, while the C blocks are zeroed on their first visit, written back when
 *     left and read back when re-entered.
 *
 * Sizes divide nothing (300 x 200 x 150 with 64 x 48 x 32 blocks): edge blocks see valid < shape,
 * their padding is zero, so the tile product over whole blocks is exact. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <tilec.h>

enum { M = 300, N = 200, K = 150, BM = 64, BN = 48, BK = 32 };

/* k innermost: the first k step overwrites C's block, later ones accumulate. */
static void mm_kinner(const tl_prog *p, tl_ref *refs, void *user) {
  (void)user;
  tl_ref *a = &refs[0], *b = &refs[1], *c = &refs[2];
  tl_tile_dot(p, c, a, b, tl_first_visit(p, 0) ? 0 : TL_DOT_ACCUMULATE);
}

/* BLIS order: C's block arrives zeroed (first visit) or as left last time; always accumulate. */
static void mm_blis(const tl_prog *p, tl_ref *refs, void *user) {
  (void)user;
  tl_tile_dot(p, &refs[2], &refs[0], &refs[1], TL_DOT_ACCUMULATE);
}

static int check(const char *what, const float *a, const float *b, const float *c, const tl_stats *st) {
  double num = 0, den = 0;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double r = 0;
      for (int k = 0; k < K; k++) r += (double)a[i * K + k] * b[k * N + j];
      num += (c[i * N + j] - r) * (c[i * N + j] - r);
      den += r * r;
    }
  double err = sqrt(num / den);
  printf("%-34s rel. error %.2e  steps %lld, A blocks staged %lld, B blocks staged %lld, C blocks entered %lld\n", what, err,
         (long long)st->steps, (long long)st->stage_events[0], (long long)st->stage_events[1], (long long)st->stage_events[2]);
  return err < 1e-5;
}

int main(void) {
  float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * K * N), *c = malloc(sizeof(float) * M * N);
  srand(1);
  for (int i = 0; i < M * K; i++) a[i] = (float)rand() / RAND_MAX - 0.5f;
  for (int i = 0; i < K * N; i++) b[i] = (float)rand() / RAND_MAX - 0.5f;
  int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
  tl_tensor in[2] = {tl_tensor_make(a, TL_F32, 2, sa), tl_tensor_make(b, TL_F32, 2, sb)};
  tl_tensor out = tl_tensor_make(c, TL_F32, 2, sc);
  const int64_t I = (M + BM - 1) / BM, J = (N + BN - 1) / BN, KB = (K + BK - 1) / BK;
  tl_ctx *ctx;
  if (tl_ctx_new(NULL, &ctx) != TL_OK) {
    fprintf(stderr, "tl_ctx_new: %s\n", tl_last_error());
    return 1;
  }
  int ok = 1;

  /* 1. grid (i, j, k): i and j parallel, k sequential and innermost */
  tl_blockspec s1[3] = {
      {.ndim = 2, .block = {BM, BK}, .map = "i, j, k -> i, k"},
      {.ndim = 2, .block = {BK, BN}, .map = "i, j, k -> k, j"},
      {.ndim = 2, .block = {BM, BN}, .map = "i, j, k -> i, j"}, /* TL_OUT_WRITE */
  };
  tl_kernel k1 = {.name = "matmul_kinner", .body = mm_kinner, .grid_ndim = 3, .grid = {I, J, KB},
                  .sem = {TL_PARALLEL, TL_PARALLEL, TL_ARBITRARY}, .n_in = 2, .in = s1, .n_out = 1, .out = &s1[2],
                  .flops = 2LL * M * N * K};
  tl_plan *plan;
  tl_status s = tl_plan_new(ctx, &k1, in, &out, &plan);
  if (s == TL_OK) s = tl_plan_run(plan, in, &out);
  if (s != TL_OK) {
    fprintf(stderr, "matmul_kinner: %s: %s\n", tl_status_name(s), tl_ctx_error(ctx));
    return 1;
  }
  tl_stats st;
  tl_plan_stats(plan, &st);
  ok &= check("k innermost, TL_OUT_WRITE:", a, b, c, &st);
  tl_plan_free(plan);

  /* 2. grid (j, k, i): j parallel; B's block (k, j) is the same for every i, so it stays staged */
  tl_blockspec s2[3] = {
      {.ndim = 2, .block = {BM, BK}, .map = "j, k, i -> i, k"},
      {.ndim = 2, .block = {BK, BN}, .map = "j, k, i -> k, j"},
      {.ndim = 2, .block = {BM, BN}, .map = "j, k, i -> i, j", .out = TL_OUT_ACCUM_ZERO},
  };
  tl_kernel k2 = {.name = "matmul_blis", .body = mm_blis, .grid_ndim = 3, .grid = {J, KB, I},
                  .sem = {TL_PARALLEL, TL_ARBITRARY, TL_ARBITRARY}, .n_in = 2, .in = s2, .n_out = 1, .out = &s2[2],
                  .flops = 2LL * M * N * K};
  for (int i = 0; i < M * N; i++) c[i] = NAN; /* C is never read on a first visit */
  s = tl_plan_new(ctx, &k2, in, &out, &plan);
  if (s == TL_OK) s = tl_plan_run(plan, in, &out);
  if (s != TL_OK) {
    fprintf(stderr, "matmul_blis: %s: %s\n", tl_status_name(s), tl_ctx_error(ctx));
    return 1;
  }
  tl_plan_stats(plan, &st);
  ok &= check("BLIS order j,k,i, TL_OUT_ACCUM_ZERO:", a, b, c, &st);
  if (st.stage_events[1] != J * KB) {
    printf("B should be staged once per (j, k): %lld, want %lld\n", (long long)st.stage_events[1], (long long)(J * KB));
    ok = 0;
  }
  tl_plan_free(plan);
  tl_ctx_free(ctx);
  free(a), free(b), free(c);
  printf("%s\n", ok ? "matmul: OK" : "matmul: FAILED");
  return ok ? 0 : 1;
}
