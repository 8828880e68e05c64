/* test_pipeline.c — tl_pipeline_run: a nested grid over a step's refs, staging sub-blocks into
 * L1 (Pallas emit_pipeline). An outer matmul in L2 blocks whose body runs an inner matmul grid
 * in L1 blocks, against a float64 reference; failures inside the inner grid stop the outer run. */
#include "exec_util.h"
#include "test_util.h"

enum { IBM = 8, IBN = 16, IBK = 8 };

static void inner_body(const tl_prog *p, tl_ref *refs, void *user) {
  (void)user;
  tl_tile_dot(p, &refs[2], &refs[0], &refs[1], TL_DOT_ACCUMULATE);
}

typedef struct outer_cfg { int mode; } outer_cfg; /* 0: ok, 1: inner fails, 2: bad inner map, 3: nest too deep */

static void failing_inner(const tl_prog *p, tl_ref *refs, void *user) {
  (void)refs, (void)user;
  if (tl_program_id(p, 0) == 1) tl_prog_fail(p, TL_ERR_UNSUPPORTED, "inner step refuses");
}

static void deep_body(const tl_prog *p, tl_ref *refs, void *user) {
  tl_kernel k = {.name = "deeper", .body = deep_body, .grid_ndim = 1, .grid = {1}};
  (void)user;
  tl_pipeline_run(p, &k, refs);
}

static void outer_body(const tl_prog *p, tl_ref *refs, void *user) {
  const outer_cfg *cfg = user;
  tl_ref *a = &refs[0], *c = &refs[2];
  /* the inner grid covers this step's valid extents */
  int64_t M = c->valid[0], N = c->valid[1], K = a->valid[1];
  tl_blockspec specs[3] = {
      {.ndim = 2, .block = {IBM, IBK}, .map = "i, j, k -> i, k", .level = TL_L1},
      {.ndim = 2, .block = {IBK, IBN}, .map = "i, j, k -> k, j", .level = TL_L1, .stage = TL_STAGE_ALWAYS},
      {.ndim = 2, .block = {IBM, IBN}, .map = "i, j, k -> i, j", .level = TL_L1, .out = TL_OUT_ACCUM_LOAD},
  };
  if (cfg->mode == 2) specs[0].map = "i, j -> i";
  tl_kernel k = {.name = "inner_mm", .body = inner_body, .grid_ndim = 3,
                 .grid = {(M + IBM - 1) / IBM, (N + IBN - 1) / IBN, (K + IBK - 1) / IBK}, .n_in = 2, .in = specs, .n_out = 1,
                 .out = &specs[2]};
  if (cfg->mode == 1) k.body = failing_inner;
  if (cfg->mode == 3) k.body = deep_body;
  tl_status s = tl_pipeline_run(p, &k, refs);
  if (cfg->mode == 0) CHECK(s == TL_OK, "inner grid: %s", tl_status_name(s));
}

static void test_nested_matmul(void) {
  const int64_t M = 77, N = 61, K = 45;
  float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N), *C = malloc(sizeof(float) * M * N);
  test_rng rng = {11};
  for (int64_t e = 0; e < M * K; e++) A[e] = (float)test_rng_uniform(&rng, -1, 1);
  for (int64_t e = 0; e < K * N; e++) B[e] = (float)test_rng_uniform(&rng, -1, 1);
  int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
  tl_tensor in[2] = {tl_tensor_make(A, TL_F32, 2, sa), tl_tensor_make(B, TL_F32, 2, sb)};
  tl_tensor out = tl_tensor_make(C, TL_F32, 2, sc);
  tl_blockspec specs[3] = {{.ndim = 2, .block = {32, 16}, .map = "j, k, i -> i, k"},
                           {.ndim = 2, .block = {16, 32}, .map = "j, k, i -> k, j"},
                           {.ndim = 2, .block = {32, 32}, .map = "j, k, i -> i, j", .out = TL_OUT_ACCUM_ZERO}};
  outer_cfg cfg = {0};
  tl_kernel k = {.name = "outer_mm", .body = outer_body, .user = &cfg, .grid_ndim = 3, .grid = {2, 3, 3}, .sem = {TL_PARALLEL},
                 .n_in = 2, .in = specs, .n_out = 1, .out = &specs[2]};
  for (int threads = 1; threads <= 3; threads++) {
    tl_ctx *ctx = make_ctx(threads);
    for (int64_t e = 0; e < M * N; e++) C[e] = NAN;
    cfg.mode = 0;
    tl_status s = tl_call(ctx, &k, in, &out);
    CHECK(s == TL_OK, "threads %d: %s", threads, tl_ctx_error(ctx));
    double ref[77 * 61], got[77 * 61];
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double r = 0;
        for (int64_t q = 0; q < K; q++) r += (double)A[i * K + q] * B[q * N + j];
        ref[i * N + j] = r, got[i * N + j] = C[i * N + j];
      }
    double err = test_rel_err(got, ref, M * N);
    CHECK(err < 1e-5, "threads %d: nested matmul rel. error %g", threads, err);
    cfg.mode = 1;
    s = tl_call(ctx, &k, in, &out);
    CHECK(s == TL_ERR_UNSUPPORTED, "inner failure propagates: %s", tl_status_name(s));
    CHECK(strstr(tl_ctx_error(ctx), "inner step refuses") && strstr(tl_ctx_error(ctx), "outer_mm"), "message: %s", tl_ctx_error(ctx));
    cfg.mode = 2;
    s = tl_call(ctx, &k, in, &out);
    CHECK(s == TL_ERR_INVALID && strstr(tl_ctx_error(ctx), "inner_mm"), "bad inner kernel refused: %s %s", tl_status_name(s),
          tl_ctx_error(ctx));
    cfg.mode = 3;
    s = tl_call(ctx, &k, in, &out);
    CHECK(s == TL_ERR_INVALID && strstr(tl_ctx_error(ctx), "nesting"), "unbounded nesting refused: %s %s", tl_status_name(s),
          tl_ctx_error(ctx));
    tl_ctx_free(ctx);
  }
  CHECK(tl_pipeline_run(NULL, &k, NULL) == TL_ERR_INVALID, "outside a body");
  free(A), free(B), free(C);
}

int main(void) {
  RUN(test_nested_matmul);
  return test_summary("runtime_pipeline");
}
