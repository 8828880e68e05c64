/* test_exec_refuse.c — every refusal the executor promises (DESIGN.md §3), each with a status, a
 * message naming the problem and the caller's outputs untouched; and interpret mode
 * (TILEC_INTERPRET=1) catching bodies that read padding or forget to write. */
#include <stdatomic.h>

#include "exec_util.h"
#include "test_util.h"

static atomic_int calls;
static void write_body(const tl_prog *p, tl_ref *refs, void *user) {
  atomic_fetch_add(&calls, 1);
  int n_in = user ? *(int *)user : 1;
  tl_ref *y = &refs[n_in];
  for (int64_t r = 0; r < y->valid[0]; r++)
    for (int64_t c = 0; c < y->valid[1]; c++) *ref_f32(y, r, c) = 1;
}

#define N 64
static float X[N * N], Y[N * N], Z[N * N];

/* Expects tl_plan_new (and tl_call) to refuse with status want and a message containing frag;
 * the output buffer must be unchanged and no body may have run. */
static void expect_refused(tl_ctx *ctx, const tl_kernel *k, const tl_tensor *in, const tl_tensor *out, tl_status want,
                           const char *frag, const char *what) {
  for (int e = 0; e < N * N; e++) Y[e] = 42.0f;
  atomic_store(&calls, 0);
  tl_plan *plan = (tl_plan *)1;
  tl_status s = tl_plan_new(ctx, k, in, out, &plan);
  CHECK(s == want, "%s: got %s, want %s (%s)", what, tl_status_name(s), tl_status_name(want), tl_ctx_error(ctx));
  CHECK(plan == NULL, "%s: *plan is NULL on failure", what);
  CHECK(strlen(tl_ctx_error(ctx)) > 0, "%s: a message", what);
  if (frag) CHECK(strstr(tl_ctx_error(ctx), frag) != NULL, "%s: message '%s' lacks '%s'", what, tl_ctx_error(ctx), frag);
  s = tl_call(ctx, k, in, out);
  CHECK(s == want, "%s: tl_call got %s", what, tl_status_name(s));
  int touched = 0;
  for (int e = 0; e < N * N; e++) touched += Y[e] != 42.0f;
  CHECK(touched == 0, "%s: %d output elements modified", what, touched);
  CHECK(atomic_load(&calls) == 0, "%s: the body ran", what);
}

static void test_refusals(void) {
  tl_ctx *ctx = make_ctx(2);
  int64_t sh[2] = {N, N};
  tl_tensor tx = tl_tensor_make(X, TL_F32, 2, sh), ty = tl_tensor_make(Y, TL_F32, 2, sh);
  tl_blockspec is = {.ndim = 2, .block = {16, 16}, .map = "i,j->i,j"}, os = is;
  tl_kernel base = {.name = "w", .body = write_body, .grid_ndim = 2, .grid = {4, 4}, .sem = {TL_PARALLEL, TL_PARALLEL},
                    .n_in = 1, .in = &is, .n_out = 1, .out = &os};
  tl_kernel k;
  /* sanity: the base kernel runs */
  CHECK(tl_call(ctx, &base, &tx, &ty) == TL_OK, "base kernel: %s", tl_ctx_error(ctx));

  k = base, k.body = NULL;
  expect_refused(ctx, &k, &tx, &ty, TL_ERR_INVALID, "body", "NULL body");
  k = base, k.grid_ndim = 7;
  expect_refused(ctx, &k, &tx, &ty, TL_ERR_INVALID, "grid_ndim", "grid_ndim 7");
  k = base, k.grid[1] = -1;
  expect_refused(ctx, &k, &tx, &ty, TL_ERR_INVALID, "grid axis 1", "negative grid");
  k = base, k.sem[0] = TL_ARBITRARY;
  expect_refused(ctx, &k, &tx, &ty, TL_ERR_INVALID, "prefix", "parallel after arbitrary");
  k = base, k.sem[1] = (tl_dim_sem)9;
  expect_refused(ctx, &k, &tx, &ty, TL_ERR_INVALID, "semantics", "unknown semantics");
  k = base, k.n_in = 17;
  expect_refused(ctx, &k, &tx, &ty, TL_ERR_INVALID, "operands", "too many operands");
  k = base, k.n_in = -1;
  expect_refused(ctx, &k, &tx, &ty, TL_ERR_INVALID, NULL, "negative n_in");
  k = base;
  expect_refused(ctx, &k, NULL, &ty, TL_ERR_INVALID, "NULL", "NULL inputs");
  /* bad tensors */
  tl_tensor bad = tx;
  bad.dtype = TL_DTYPE_INVALID;
  k = base;
  expect_refused(ctx, &k, &bad, &ty, TL_ERR_DTYPE, "input 0", "dtype 0");
  bad = tx, bad.ndim = 0;
  expect_refused(ctx, &k, &bad, &ty, TL_ERR_SHAPE, "input 0", "ndim mismatch with blockspec");
  bad = tx, bad.ndim = 9;
  expect_refused(ctx, &k, &bad, &ty, TL_ERR_INVALID, "input 0", "ndim 9");
  bad = tx, bad.shape[0] = -4;
  expect_refused(ctx, &k, &bad, &ty, TL_ERR_SHAPE, "input 0", "negative size");
  bad = tx, bad.stride[0] = INT64_MAX / 2;
  expect_refused(ctx, &k, &bad, &ty, TL_ERR_SHAPE, "input 0", "stride overflow");
  bad = tx, bad.data = NULL;
  expect_refused(ctx, &k, &bad, &ty, TL_ERR_INVALID, "input 0", "NULL data");
  /* bad blockspecs */
  tl_blockspec b2 = is;
  k = base, k.in = &b2;
  b2.map = "i,j->i+";
  expect_refused(ctx, &k, &tx, &ty, TL_ERR_INVALID, "position", "bad map");
  b2 = is, b2.map = "i->i,0";
  expect_refused(ctx, &k, &tx, &ty, TL_ERR_INVALID, "input 0", "map with too few vars");
  b2 = is, b2.block[0] = -3;
  expect_refused(ctx, &k, &tx, &ty, TL_ERR_SHAPE, "block dim 0", "negative block");
  b2 = is, b2.layout.tiled = 1, b2.layout.tile_r = 3, b2.layout.tile_c = 4, b2.layout.vnni = 2;
  expect_refused(ctx, &k, &tx, &ty, TL_ERR_INVALID, "vnni", "vnni not dividing tile_r");
  b2 = is, b2.layout.vnni = 2;
  expect_refused(ctx, &k, &tx, &ty, TL_ERR_INVALID, "tiled", "vnni without tiled");
  b2 = is, b2.layout = (tl_layout){.tiled = 1, .vnni = 1, .tile_r = 4, .tile_c = 4}, b2.stage = TL_STAGE_NEVER;
  expect_refused(ctx, &k, &tx, &ty, TL_ERR_INVALID, "NEVER", "NEVER with a tiled staging layout");
  b2 = is, b2.buffers = 3;
  expect_refused(ctx, &k, &tx, &ty, TL_ERR_INVALID, "buffers", "3 buffers");
  b2 = is, b2.stage = (tl_stage)5;
  expect_refused(ctx, &k, &tx, &ty, TL_ERR_INVALID, "stage", "unknown stage");
  b2 = is, b2.out = TL_OUT_ACCUM_ZERO;
  expect_refused(ctx, &k, &tx, &ty, TL_ERR_INVALID, "outputs only", "out mode on an input");
  /* blocks wholly outside the tensor */
  b2 = is, b2.map = "i,j->i+1,j";
  expect_refused(ctx, &k, &tx, &ty, TL_ERR_INVALID, "outside", "block index past the end");
  b2 = is, b2.map = "i,j->i-1,j";
  expect_refused(ctx, &k, &tx, &ty, TL_ERR_INVALID, "outside", "negative block index");
  b2 = is, b2.map = "i,j->2*i,j";
  expect_refused(ctx, &k, &tx, &ty, TL_ERR_INVALID, "outside", "stride-2 map past the end");
  /* ownership: a parallel axis the output map ignores races */
  tl_blockspec o2 = os;
  k = base, k.out = &o2;
  o2.map = "i,j->i,0", o2.block[1] = 0;
  expect_refused(ctx, &k, &tx, &ty, TL_ERR_INVALID, "parallel", "racing map (parallel axis ignored by the output)");
  o2.out = TL_OUT_ACCUM_ZERO;
  expect_refused(ctx, &k, &tx, &ty, TL_ERR_INVALID, "parallel", "racing map, accumulating");
  /* ... the same map with the ignored axis sequential is accepted, whatever the thread count */
  k.sem[1] = TL_ARBITRARY;
  o2.out = TL_OUT_WRITE;
  CHECK(tl_call(ctx, &k, &tx, &ty) == TL_OK, "sequential reduction axis accepted: %s", tl_ctx_error(ctx));
  /* TL_OUT_WRITE revisited non-consecutively */
  o2 = os, o2.map = "i,j->j,0", o2.block[1] = 0;
  k = base, k.out = &o2, k.sem[0] = k.sem[1] = TL_ARBITRARY;
  expect_refused(ctx, &k, &tx, &ty, TL_ERR_INVALID, "consecutive", "non-consecutive WRITE revisits");
  o2.out = TL_OUT_ACCUM_ZERO;
  CHECK(tl_call(ctx, &k, &tx, &ty) == TL_OK, "the same with ACCUM_ZERO is fine: %s", tl_ctx_error(ctx));
  /* outputs with zero strides, overlapping outputs and inputs */
  tl_tensor bc = ty;
  bc.stride[0] = 0;
  k = base;
  expect_refused(ctx, &k, &tx, &bc, TL_ERR_INVALID, "stride 0", "broadcast output");
  tl_tensor half = tl_tensor_make(Y + N * N / 2, TL_F32, 2, (int64_t[]){N / 2, N});
  tl_blockspec hs = {.ndim = 2, .block = {16, 16}, .map = "i,j->i,j"};
  tl_blockspec outs2[2] = {os, hs};
  tl_tensor two[2] = {ty, half};
  int nin = 1;
  k = base, k.n_out = 2, k.out = outs2, k.grid[0] = 2, k.user = &nin;
  expect_refused(ctx, &k, &tx, two, TL_ERR_INVALID, "overlaps", "overlapping outputs");
  tl_tensor tyv = tl_tensor_make(Y, TL_F32, 2, sh);
  k = base;
  tl_blockspec shifted = is;
  shifted.map = "i,j->j,i";
  k.in = &shifted;
  expect_refused(ctx, &k, &tyv, &ty, TL_ERR_INVALID, "overlaps", "output aliasing an input with another map");
  /* budgets */
  tl_ctx_opts small = {.threads = 2, .vmem_bytes = 1500, .l1_bytes = 1024};
  tl_ctx *sctx = NULL;
  REQUIRE(tl_ctx_new(&small, &sctx) == TL_OK, "small ctx");
  k = base;
  expect_refused(sctx, &k, &tx, &ty, TL_ERR_VMEM, "budget", "VMEM budget");
  CHECK(strstr(tl_ctx_error(sctx), "KiB") != NULL, "VMEM message has the numbers: %s", tl_ctx_error(sctx));
  tl_blockspec l1 = {.ndim = 2, .block = {8, 8}, .map = "i,j->i,j", .level = TL_L1};
  tl_blockspec l1o = l1;
  k.in = &l1, k.out = &l1o, k.grid[0] = k.grid[1] = 8;
  CHECK(tl_call(sctx, &k, &tx, &ty) == TL_OK, "two 256 B L1 blocks fit 1 KiB: %s", tl_ctx_error(sctx));
  l1.buffers = 2, l1o.block[0] = 16, k.grid[0] = 4;
  l1.block[0] = 16;
  expect_refused(sctx, &k, &tx, &ty, TL_ERR_VMEM, "L1", "L1 budget");
  tl_scratch big = {.dtype = TL_F32, .ndim = 1, .shape = {2048}};
  k = base, k.in = &l1, k.out = &l1o, k.n_scratch = 1, k.scratch = &big, l1 = l1o = (tl_blockspec){.ndim = 2, .block = {8, 8}, .map = "i,j->i,j"};
  k.grid[0] = k.grid[1] = 8;
  expect_refused(sctx, &k, &tx, &ty, TL_ERR_VMEM, "budget", "scratch over budget");
  tl_ctx_free(sctx);
  /* tl_plan_run with other tensors than the plan's */
  k = base;
  tl_plan *plan;
  REQUIRE(tl_plan_new(ctx, &k, &tx, &ty, &plan) == TL_OK, "%s", tl_ctx_error(ctx));
  tl_tensor other = tl_tensor_make(Z, TL_F32, 2, (int64_t[]){N / 2, N * 2});
  for (int e = 0; e < N * N; e++) Z[e] = 42.0f;
  CHECK(tl_plan_run(plan, &tx, &other) == TL_ERR_SHAPE, "run with another shape refused");
  other = tl_tensor_make(Z, TL_BF16, 2, sh);
  CHECK(tl_plan_run(plan, &tx, &other) == TL_ERR_DTYPE, "run with another dtype refused");
  other = tl_tensor_make(X, TL_F32, 2, sh);
  CHECK(tl_plan_run(plan, &tx, &other) == TL_ERR_INVALID, "run with out == in (not shared at plan time) refused");
  other = tl_tensor_make(Z, TL_F32, 2, sh);
  CHECK(tl_plan_run(plan, &tx, &other) == TL_OK, "run on new data: %s", tl_ctx_error(ctx));
  CHECK(Z[0] == 1.0f, "new output written");
  CHECK(tl_plan_run(NULL, &tx, &ty) == TL_ERR_INVALID, "NULL plan");
  CHECK(tl_plan_run(plan, NULL, &ty) == TL_ERR_INVALID, "NULL inputs");
  tl_cost cost;
  CHECK(tl_plan_cost(NULL, &cost) == TL_ERR_INVALID && tl_plan_cost(plan, NULL) == TL_ERR_INVALID, "cost NULL args");
  CHECK(tl_plan_stats(NULL, NULL) == TL_ERR_INVALID, "stats NULL args");
  tl_plan_free(plan);
  tl_plan_free(NULL);
  CHECK(tl_plan_new(NULL, &k, &tx, &ty, &plan) == TL_ERR_INVALID, "NULL ctx");
  CHECK(tl_plan_new(ctx, NULL, &tx, &ty, &plan) == TL_ERR_INVALID, "NULL kernel");
  CHECK(tl_plan_new(ctx, &k, &tx, &ty, NULL) == TL_ERR_INVALID, "NULL plan out");
  /* plans left alive are freed with the context (ASan checks the leak) */
  REQUIRE(tl_plan_new(ctx, &k, &tx, &ty, &plan) == TL_OK, "%s", tl_ctx_error(ctx));
  tl_ctx_free(ctx);
}

/* ---- interpret mode ---- */
static void sum_all_body(const tl_prog *p, tl_ref *refs, void *user) {
  /* forgets to mask: sums the whole block including padding */
  tl_ref *x = &refs[0], *y = &refs[1];
  float s = 0;
  for (int64_t r = 0; r < x->shape[0]; r++)
    for (int64_t c = 0; c < x->shape[1]; c++) s += *ref_f32(x, r, c);
  *ref_f32(y, 0, 0) = s;
}

static void half_write_body(const tl_prog *p, tl_ref *refs, void *user) {
  tl_ref *y = &refs[1];
  for (int64_t r = 0; r < y->valid[0]; r++)
    for (int64_t c = 0; c < y->valid[1] / 2; c++) *ref_f32(y, r, c) = 3;
}

static void test_interpret(void) {
  int64_t sx[2] = {10, 7}, sy[2] = {3, 1};
  float x[70], y[3];
  for (int e = 0; e < 70; e++) x[e] = 1;
  tl_tensor tx = tl_tensor_make(x, TL_F32, 2, sx), ty = tl_tensor_make(y, TL_F32, 2, sy);
  tl_blockspec is = {.ndim = 2, .block = {4, 8}, .map = "i->i,0", .pad_any = 1}, os = {.ndim = 2, .block = {1, 1}, .map = "i->i,0"};
  tl_kernel k = {.name = "unmasked", .body = sum_all_body, .grid_ndim = 1, .grid = {3}, .sem = {TL_PARALLEL}, .n_in = 1, .in = &is,
                 .n_out = 1, .out = &os};
  unsetenv("TILEC_INTERPRET");
  tl_ctx *ctx = make_ctx(2);
  CHECK(tl_call(ctx, &k, &tx, &ty) == TL_OK, "%s", tl_ctx_error(ctx));
  CHECK(y[0] == 28 && y[2] == 14, "normal mode pads with 0: %g %g", y[0], y[2]);
  tl_ctx_free(ctx);
  setenv("TILEC_INTERPRET", "1", 1);
  ctx = make_ctx(2);
  tl_ctx_info info;
  tl_ctx_info_get(ctx, &info);
  CHECK(info.interpret == 1, "interpret mode on");
  CHECK(tl_call(ctx, &k, &tx, &ty) == TL_OK, "%s", tl_ctx_error(ctx));
  CHECK(isnan(y[0]) && isnan(y[2]), "interpret mode poisons pad_any padding: the unmasked sum is NaN (%g %g)", y[0], y[2]);
  is.pad_any = 0;
  CHECK(tl_call(ctx, &k, &tx, &ty) == TL_OK && y[0] == 28, "a real pad is not poisoned");
  /* a body that forgets to write part of its output */
  int64_t sz[2] = {10, 7};
  float z[70];
  tl_tensor tz = tl_tensor_make(z, TL_F32, 2, sz);
  tl_blockspec zs = {.ndim = 2, .block = {4, 7}, .map = "i->i,0"};
  k.body = half_write_body, k.out = &zs;
  tl_status s = tl_call(ctx, &k, &tx, &tz);
  CHECK(s == TL_ERR_INVALID, "unwritten output caught: %s", tl_status_name(s));
  CHECK(strstr(tl_ctx_error(ctx), "never written") != NULL, "message: %s", tl_ctx_error(ctx));
  tl_ctx_free(ctx);
  unsetenv("TILEC_INTERPRET");
  ctx = make_ctx(2);
  CHECK(tl_call(ctx, &k, &tx, &tz) == TL_OK, "outside interpret mode it is not checked");
  tl_ctx_free(ctx);
}

/* A body calling back into the API (other than tl_pipeline_run, tl_stage_pump, tl_prog_fail). */
typedef struct reentry { tl_ctx *ctx; const tl_kernel *k; tl_plan *plan; tl_status s_new, s_run; } reentry;
static void reentrant_body(const tl_prog *p, tl_ref *refs, void *user) {
  reentry *r = user;
  tl_plan *inner = NULL;
  r->s_new = tl_plan_new(r->ctx, r->k, NULL, NULL, &inner);
  r->s_run = tl_plan_run(r->plan, NULL, NULL);
  tl_ctx_free(r->ctx); /* a no-op from a body */
  (void)p, (void)refs;
}

static void test_reentry(void) {
  tl_ctx *ctx = make_ctx(2);
  reentry r = {.ctx = ctx};
  tl_kernel k = {.name = "reentrant", .body = reentrant_body, .user = &r, .grid_ndim = 1, .grid = {1}};
  r.k = &k;
  REQUIRE(tl_plan_new(ctx, &k, NULL, NULL, &r.plan) == TL_OK, "%s", tl_ctx_error(ctx));
  CHECK(tl_plan_run(r.plan, NULL, NULL) == TL_OK, "%s", tl_ctx_error(ctx));
  CHECK(r.s_new == TL_ERR_INVALID && r.s_run == TL_ERR_INVALID, "tl_plan_new/run from a body refused: %s %s",
        tl_status_name(r.s_new), tl_status_name(r.s_run));
  /* one parallel index: the body ran on the calling thread (worker 0), where the message is */
  CHECK(strstr(tl_last_error(), "inside a body") != NULL, "message: %s", tl_last_error());
  tl_ctx_free(ctx);
}

int main(void) {
  RUN(test_reentry);
  RUN(test_refusals);
  RUN(test_interpret);
  return test_summary("runtime_exec_refuse");
}
