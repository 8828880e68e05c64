/* test_exec_regress.c — one test per bug found in review of the executor (each failed before its
 * fix): tiled tensors used in place by row blocks, accumulating tiled outputs in place, block and
 * scratch sizes that overflow, nested grids over tiled edge blocks, outputs whose elements
 * overlap each other, read-modify-write with TL_OUT_ACCUM_LOAD. */
#include "exec_util.h"
#include "test_util.h"

/* y(r, c) = x(r, c) + 1 over tiled refs */
static void tiled_inc_body(const tl_prog *p, tl_ref *refs, void *user) {
  (void)p, (void)user;
  tl_ref *x = &refs[0], *y = &refs[1];
  for (int64_t r = 0; r < y->valid[0]; r++)
    for (int64_t c = 0; c < y->valid[1]; c++) *ref_f32(y, r, c) = *ref_f32(x, r, c) + 1;
}

/* 2-D tiled tensors in place with blocks of whole tile rows: each block at its own offset. */
static void test_tiled_2d_inplace_rows(void) {
  const int64_t R = 12, C = 6;
  tl_layout l = {.tiled = 1, .vnni = 2, .tile_r = 4, .tile_c = 4};
  int64_t sh[2] = {R, C};
  const int64_t store = 3 * 2 * 16; /* 3 x 2 tiles of 16 */
  float *x = calloc(store, sizeof(float)), *y = calloc(store, sizeof(float));
  tl_tensor tx = tl_tensor_make_tiled(x, TL_F32, 2, sh, l), ty = tl_tensor_make_tiled(y, TL_F32, 2, sh, l);
  for (int64_t r = 0; r < R; r++)
    for (int64_t c = 0; c < C; c++) *(float *)tl_tensor_at(&tx, (int64_t[]){r, c}) = (float)(r * 100 + c);
  for (int stage = 0; stage <= 2; stage++) {
    tl_blockspec s = {.ndim = 2, .block = {4, 0}, .map = "i -> i, 0", .layout = l, .stage = (tl_stage)stage};
    tl_kernel k = {.name = "tiled_rows", .body = tiled_inc_body, .grid_ndim = 1, .grid = {3}, .sem = {TL_PARALLEL}, .n_in = 1,
                   .in = &s, .n_out = 1, .out = &s};
    memset(y, 0, store * sizeof(float));
    tl_ctx *ctx = make_ctx(2);
    CHECK(tl_call(ctx, &k, &tx, &ty) == TL_OK, "stage %d: %s", stage, tl_ctx_error(ctx));
    int bad = 0;
    for (int64_t r = 0; r < R; r++)
      for (int64_t c = 0; c < C; c++) bad += *(float *)tl_tensor_at(&ty, (int64_t[]){r, c}) != r * 100 + c + 1;
    CHECK(bad == 0, "stage %d: %d wrong elements (blocks must not alias block 0)", stage, bad);
    tl_ctx_free(ctx);
  }
  /* blocks not on tile rows cannot be used in place: NEVER is refused, AUTO stages */
  tl_blockspec s = {.ndim = 2, .block = {3, 0}, .map = "i -> i, 0", .layout = l, .stage = TL_STAGE_NEVER};
  tl_kernel k = {.name = "tiled_rows3", .body = tiled_inc_body, .grid_ndim = 1, .grid = {4}, .n_in = 1, .in = &s, .n_out = 1, .out = &s};
  tl_ctx *ctx = make_ctx(1);
  CHECK(tl_call(ctx, &k, &tx, &ty) == TL_ERR_INVALID, "NEVER with 3-row blocks of 4-row tiles refused");
  s.stage = TL_STAGE_AUTO;
  memset(y, 0, store * sizeof(float));
  CHECK(tl_call(ctx, &k, &tx, &ty) == TL_OK, "AUTO stages them: %s", tl_ctx_error(ctx));
  int bad = 0;
  for (int64_t r = 0; r < R; r++)
    for (int64_t c = 0; c < C; c++) bad += *(float *)tl_tensor_at(&ty, (int64_t[]){r, c}) != r * 100 + c + 1;
  CHECK(bad == 0, "3-row blocks: %d wrong", bad);
  tl_ctx_free(ctx);
  free(x), free(y);
}

static void add_one_body(const tl_prog *p, tl_ref *refs, void *user) {
  (void)p, (void)user;
  tl_ref *y = &refs[0];
  int64_t lead = 0;
  for (int64_t r = 0; r < y->valid[1]; r++)
    for (int64_t c = 0; c < y->valid[2]; c++) {
      float *e = (float *)tl_ref_tile_nd(y, &lead, r / y->layout.tile_r, c / y->layout.tile_c) +
                 tl_layout_tile_offset(y->layout, r % y->layout.tile_r, c % y->layout.tile_c);
      *e += 1;
    }
}

/* ACCUM_ZERO on a tiled output used in place starts from zero in every element. */
static void test_tiled_accum_zero_inplace(void) {
  tl_layout l = {.tiled = 1, .vnni = 1, .tile_r = 4, .tile_c = 4};
  int64_t sh[3] = {2, 4, 4};
  float y[32];
  for (int e = 0; e < 32; e++) y[e] = 100;
  tl_tensor ty = tl_tensor_make_tiled(y, TL_F32, 3, sh, l);
  tl_blockspec s = {.ndim = 3, .block = {1, 4, 4}, .map = "i, k -> i, 0, 0", .layout = l, .out = TL_OUT_ACCUM_ZERO};
  tl_kernel k = {.name = "tiled_accum", .body = add_one_body, .grid_ndim = 2, .grid = {2, 3}, .sem = {TL_PARALLEL}, .n_out = 1, .out = &s};
  tl_ctx *ctx = make_ctx(2);
  CHECK(tl_call(ctx, &k, NULL, &ty) == TL_OK, "%s", tl_ctx_error(ctx));
  int bad = 0;
  for (int e = 0; e < 32; e++) bad += y[e] != 3;
  CHECK(bad == 0, "%d elements not 3 (the block was not zeroed on its first visit)", bad);
  tl_ctx_free(ctx);
}

static void nop_body(const tl_prog *p, tl_ref *refs, void *user) { (void)p, (void)refs, (void)user; }

/* Huge blocks and scratch are refused, never sized with a wrapped-around product. */
static void test_size_overflow(void) {
  float x[16];
  int64_t sh[2] = {4, 4};
  tl_tensor tx = tl_tensor_make(x, TL_F32, 2, sh);
  tl_blockspec s = {.ndim = 2, .block = {(int64_t)1 << 31, (int64_t)1 << 31}, .map = "i -> 0, 0", .stage = TL_STAGE_ALWAYS};
  tl_kernel k = {.name = "huge", .body = nop_body, .grid_ndim = 1, .grid = {1}, .n_in = 1, .in = &s};
  tl_ctx *ctx = make_ctx(1);
  CHECK(tl_call(ctx, &k, &tx, NULL) == TL_ERR_VMEM, "2^31 x 2^31 block refused: %s", tl_ctx_error(ctx));
  s.block[0] = s.block[1] = INT64_MAX;
  CHECK(tl_call(ctx, &k, &tx, NULL) == TL_ERR_VMEM, "INT64_MAX block refused: %s", tl_ctx_error(ctx));
  s.block[0] = s.block[1] = 0;
  tl_scratch sc = {.dtype = TL_F32, .ndim = 1, .shape = {(int64_t)1 << 62}};
  k.n_scratch = 1, k.scratch = &sc;
  CHECK(tl_call(ctx, &k, &tx, NULL) == TL_ERR_VMEM, "2^62 scratch refused: %s", tl_ctx_error(ctx));
  tl_ctx_free(ctx);
}

static void inner_fill(const tl_prog *p, tl_ref *refs, void *u) {
  (void)p, (void)u;
  tl_tile_fill(&refs[0], 1.0);
}
static void outer_tiled(const tl_prog *p, tl_ref *refs, void *u) {
  (void)u;
  tl_blockspec s = {.ndim = 3, .block = {1, 4, 4}, .map = "a -> a, 0, 0", .layout = refs[0].layout, .out = TL_OUT_ACCUM_ZERO};
  tl_kernel k = {.name = "inner", .body = inner_fill, .grid_ndim = 1, .grid = {refs[0].valid[0]}, .n_out = 1, .out = &s};
  tl_pipeline_run(p, &k, refs);
}

/* A nested grid over a tiled edge block used in place stays inside the tensor. */
static void test_pipeline_tiled_edge(void) {
  tl_layout l = {.tiled = 1, .vnni = 1, .tile_r = 4, .tile_c = 4};
  int64_t sh[3] = {3, 4, 4};
  float *y = malloc(sizeof(float) * 48);
  tl_tensor t = tl_tensor_make_tiled(y, TL_F32, 3, sh, l);
  tl_blockspec s = {.ndim = 3, .block = {2, 4, 4}, .map = "i -> i, 0, 0", .layout = l, .stage = TL_STAGE_NEVER};
  tl_kernel k = {.name = "outer", .body = outer_tiled, .grid_ndim = 1, .grid = {2}, .n_out = 1, .out = &s};
  tl_ctx *ctx = make_ctx(1);
  CHECK(tl_call(ctx, &k, NULL, &t) == TL_OK, "%s", tl_ctx_error(ctx));
  int bad = 0;
  for (int e = 0; e < 48; e++) bad += y[e] != 1;
  CHECK(bad == 0, "%d elements not filled", bad);
  tl_ctx_free(ctx);
  free(y);
}

static void one_body(const tl_prog *p, tl_ref *refs, void *user) {
  (void)user;
  tl_ref *y = &refs[0];
  for (int64_t c = 0; c < y->valid[1]; c++) *ref_f32(y, 0, c) = (float)tl_program_id(p, 0) + 1;
}

/* An output view whose elements overlap each other is refused (two steps would race on them). */
static void test_self_overlapping_output(void) {
  float y[8];
  tl_tensor t = tl_tensor_make(y, TL_F32, 2, (int64_t[]){2, 4});
  t.stride[0] = 2; /* rows overlap by two elements */
  tl_blockspec s = {.ndim = 2, .block = {1, 4}, .map = "i -> i, 0"};
  tl_kernel k = {.name = "overlap", .body = one_body, .grid_ndim = 1, .grid = {2}, .sem = {TL_PARALLEL}, .n_out = 1, .out = &s};
  tl_ctx *ctx = make_ctx(2);
  tl_status st = tl_call(ctx, &k, NULL, &t);
  CHECK(st == TL_ERR_INVALID && strstr(tl_ctx_error(ctx), "overlap each other"), "refused: %s %s", tl_status_name(st),
        tl_ctx_error(ctx));
  t.stride[0] = 4; /* contiguous again */
  CHECK(tl_call(ctx, &k, NULL, &t) == TL_OK && y[0] == 1 && y[7] == 2, "a proper view runs: %s", tl_ctx_error(ctx));
  t = tl_tensor_make(y, TL_F32, 2, (int64_t[]){4, 2});
  t.stride[0] = 1, t.stride[1] = 4; /* a transposed view is fine */
  s.block[0] = 1, s.block[1] = 2;
  k.grid[0] = 4;
  CHECK(tl_call(ctx, &k, NULL, &t) == TL_OK, "transposed view accepted: %s", tl_ctx_error(ctx));
  tl_ctx_free(ctx);
}

static void accum_body(const tl_prog *p, tl_ref *refs, void *user) {
  (void)p, (void)user;
  tl_ref *x = &refs[0], *y = &refs[1];
  for (int64_t r = 0; r < y->valid[0]; r++)
    for (int64_t c = 0; c < y->valid[1]; c++) *ref_f32(y, r, c) = *ref_f32(x, r, c) * 2;
}

/* Read-modify-write with an ACCUM_LOAD output shares the input's buffer; ACCUM_ZERO cannot. */
static void test_rmw_accum_load(void) {
  float x[30];
  for (int e = 0; e < 30; e++) x[e] = (float)e;
  tl_tensor t = tl_tensor_make(x, TL_F32, 2, (int64_t[]){5, 6});
  tl_blockspec s = {.ndim = 2, .block = {2, 4}, .map = "j, k, i -> i, j"}, o = s;
  o.out = TL_OUT_ACCUM_LOAD;
  /* grid (j, k, i): every block revisited twice (k), non-consecutively: x *= 4 */
  tl_kernel k = {.name = "rmw_load", .body = accum_body, .grid_ndim = 3, .grid = {2, 2, 3}, .sem = {TL_PARALLEL}, .n_in = 1, .in = &s,
                 .n_out = 1, .out = &o};
  tl_ctx *ctx = make_ctx(2);
  tl_plan *plan;
  REQUIRE(tl_plan_new(ctx, &k, &t, &t, &plan) == TL_OK, "%s", tl_ctx_error(ctx));
  CHECK(tl_plan_run(plan, &t, &t) == TL_OK, "%s", tl_ctx_error(ctx));
  int bad = 0;
  for (int e = 0; e < 30; e++) bad += x[e] != 4.0f * e;
  CHECK(bad == 0, "%d wrong", bad);
  tl_cost c;
  tl_stats st;
  tl_plan_cost(plan, &c);
  tl_plan_stats(plan, &st);
  CHECK(c.bytes_read == st.bytes_read && c.bytes_written == st.bytes_written, "cost %lld/%lld == stats %lld/%lld",
        (long long)c.bytes_read, (long long)c.bytes_written, (long long)st.bytes_read, (long long)st.bytes_written);
  CHECK(c.bytes_read == 2 * 30 * 4 && c.bytes_written == 2 * 30 * 4, "each element read and written once per k");
  tl_plan_free(plan);
  o.out = TL_OUT_ACCUM_ZERO;
  CHECK(tl_call(ctx, &k, &t, &t) == TL_ERR_INVALID, "ACCUM_ZERO cannot share an input's buffer");
  tl_ctx_free(ctx);
}

int main(void) {
  RUN(test_tiled_2d_inplace_rows);
  RUN(test_tiled_accum_zero_inplace);
  RUN(test_size_overflow);
  RUN(test_pipeline_tiled_edge);
  RUN(test_self_overlapping_output);
  RUN(test_rmw_accum_load);
  return test_summary("runtime_exec_regress");
}
