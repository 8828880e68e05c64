/* test_pump.c — tl_stage_pump: with buffers = 2, a body stages the next step's input block in
 * pieces while it works; results equal the unpumped run bitwise, the pending byte count falls to
 * zero, and cost == stats. Row-major and tiled (VNNI) staging, edge blocks, several threads. */
#include "exec_util.h"
#include "test_util.h"
#include "runtime/runtime_impl.h"

typedef struct pump_cfg { int64_t chunk; int64_t first_left, steps_with_pending, nonmonotone; } pump_cfg;

static void copy_body(const tl_prog *p, tl_ref *refs, void *user) {
  pump_cfg *cfg = user;
  tl_ref *x = &refs[0], *y = &refs[1];
  for (int64_t r = 0; r < y->valid[0]; r++) {
    for (int64_t c = 0; c < y->valid[1]; c++) *ref_f32(y, r, c) = *ref_f32(x, r, c) * 2 + 1;
    if (cfg && cfg->chunk) { /* interleave: a little staging per row of work */
      int64_t before = tl_stage_pump(p, 0);
      int64_t left = tl_stage_pump(p, cfg->chunk);
      if (left > before) cfg->nonmonotone++;
    }
  }
  if (cfg && cfg->chunk) {
    int64_t left = tl_stage_pump(p, INT64_MAX);
    if (left != 0) cfg->nonmonotone++;
  }
}

static void run_case(int threads, tl_layout layout, int64_t chunk) {
  const int64_t R = 53, C = 37;
  float *x = malloc(sizeof(float) * R * C), *y1 = malloc(sizeof(float) * R * C), *y2 = malloc(sizeof(float) * R * C);
  for (int64_t e = 0; e < R * C; e++) x[e] = (float)(e % 101) - 50;
  int64_t sh[2] = {R, C};
  tl_tensor tx = tl_tensor_make(x, TL_F32, 2, sh), t1 = tl_tensor_make(y1, TL_F32, 2, sh), t2 = tl_tensor_make(y2, TL_F32, 2, sh);
  tl_blockspec is = {.ndim = 2, .block = {8, 16}, .map = "i, j -> i, j", .layout = layout, .stage = TL_STAGE_ALWAYS};
  tl_blockspec os = {.ndim = 2, .block = {8, 16}, .map = "i, j -> i, j"};
  pump_cfg cfg = {.chunk = chunk};
  tl_kernel k = {.name = "pump", .body = copy_body, .user = NULL, .grid_ndim = 2, .grid = {7, 3}, .sem = {TL_PARALLEL},
                 .n_in = 1, .in = &is, .n_out = 1, .out = &os};
  tl_ctx *ctx = make_ctx(threads);
  CHECK(tl_call(ctx, &k, &tx, &t1) == TL_OK, "%s", tl_ctx_error(ctx));
  is.buffers = 2;
  k.user = &cfg;
  tl_plan *plan;
  REQUIRE(tl_plan_new(ctx, &k, &tx, &t2, &plan) == TL_OK, "%s", tl_ctx_error(ctx));
  CHECK(tl_plan_run(plan, &tx, &t2) == TL_OK, "%s", tl_ctx_error(ctx));
  CHECK(!memcmp(y1, y2, sizeof(float) * R * C), "threads %d tiled %d chunk %lld: pumped result differs", threads, layout.tiled,
        (long long)chunk);
  if (threads == 1) CHECK(cfg.nonmonotone == 0, "pending bytes only fall and end at 0 (%lld violations)", (long long)cfg.nonmonotone);
  tl_cost cost;
  tl_stats st;
  tl_plan_cost(plan, &cost);
  tl_plan_stats(plan, &st);
  CHECK(cost.bytes_read == st.bytes_read && cost.bytes_written == st.bytes_written, "cost == stats with pumping");
  CHECK(cost.vmem_bytes >= 2 * 8 * 16 * 4, "two buffers counted: %lld", (long long)cost.vmem_bytes);
  tl_plan_free(plan);
  tl_ctx_free(ctx);
  free(x), free(y1), free(y2);
}

static void test_pump(void) {
  tl_layout rm = {0}, tiled = {.tiled = 1, .vnni = 2, .tile_r = 4, .tile_c = 8};
  int64_t chunks[] = {1, 64, 300, 100000};
  for (int threads = 1; threads <= 3; threads += 2)
    for (int c = 0; c < 4; c++) {
      run_case(threads, rm, chunks[c]);
      run_case(threads, tiled, chunks[c]);
    }
}

static void pending_body(const tl_prog *p, tl_ref *refs, void *user) {
  int64_t *log = user;
  int64_t i = tl_program_id(p, 0);
  log[i] = tl_stage_pump(p, 0);
  (void)refs;
}

static void test_pending_bytes(void) {
  /* 4 x 16 f32 blocks of a 10 x 16 array: the next block of step 0 and 1 is 256 bytes (padding
     included), the last step has nothing pending */
  float x[160];
  for (int e = 0; e < 160; e++) x[e] = (float)e;
  int64_t sh[2] = {10, 16}, log[3] = {-1, -1, -1};
  tl_tensor tx = tl_tensor_make(x, TL_F32, 2, sh);
  tl_blockspec is = {.ndim = 2, .block = {4, 16}, .map = "i -> i, 0", .buffers = 2, .stage = TL_STAGE_ALWAYS};
  tl_kernel k = {.name = "pending", .body = pending_body, .user = log, .grid_ndim = 1, .grid = {3}, .n_in = 1, .in = &is};
  tl_ctx *ctx = make_ctx(1);
  CHECK(tl_call(ctx, &k, &tx, NULL) == TL_OK, "%s", tl_ctx_error(ctx));
  CHECK(log[0] == 256 && log[1] == 256 && log[2] == 0, "pending bytes %lld %lld %lld", (long long)log[0], (long long)log[1],
        (long long)log[2]);
  is.buffers = 1;
  CHECK(tl_call(ctx, &k, &tx, NULL) == TL_OK && log[0] == 0, "one buffer: nothing to pump");
  CHECK(tl_stage_pump(NULL, 100) == 0, "NULL program");
  tl_ctx_free(ctx);
}

/* prefetch = 1: the next step's block is queued line by line for the tile ops to pump
 * (tl_prefetch_pump); a body that pumps nothing gets the block prefetched before it instead. */
typedef struct pf_log { int pump; int64_t at[3], after[3]; } pf_log;

static void prefetch_body(const tl_prog *p, tl_ref *refs, void *user) {
  pf_log *log = user;
  const int64_t i = tl_program_id(p, 0);
  log->at[i] = tl_prefetch_pending();
  if (log->pump) tl_prefetch_pump(1);
  log->after[i] = tl_prefetch_pending();
  (void)refs;
}

static void test_prefetch_queue(void) {
  /* rows of 16 f32 (one 64-byte line each), blocks of 4 rows: the next block is 4 lines after
   * step 0, 2 (the edge block) after step 1, nothing after the last */
  float *x = aligned_alloc(64, sizeof(float) * 256);
  for (int e = 0; e < 256; e++) x[e] = (float)e;
  int64_t sh[2] = {10, 16};
  tl_tensor tx = tl_tensor_make(x, TL_F32, 2, sh);
  tl_blockspec is = {.ndim = 2, .block = {4, 16}, .map = "i -> i, 0", .prefetch = 1};
  pf_log log = {.pump = 1};
  tl_kernel k = {.name = "prefetch", .body = prefetch_body, .user = &log, .grid_ndim = 1, .grid = {3},
                 .n_in = 1, .in = &is};
  tl_ctx *ctx = make_ctx(1);
  CHECK(tl_call(ctx, &k, &tx, NULL) == TL_OK, "%s", tl_ctx_error(ctx));
  CHECK(log.at[0] == 4 && log.at[1] == 2 && log.at[2] == 0, "queued lines %lld %lld %lld", (long long)log.at[0],
        (long long)log.at[1], (long long)log.at[2]);
  CHECK(log.after[0] == 3 && log.after[1] == 1 && log.after[2] == 0, "pumped one line: %lld %lld %lld",
        (long long)log.after[0], (long long)log.after[1], (long long)log.after[2]);
  /* a body that never pumps: queued on step 0, then issued before the body */
  log.pump = 0;
  CHECK(tl_call(ctx, &k, &tx, NULL) == TL_OK, "%s", tl_ctx_error(ctx));
  CHECK(log.at[0] == 4 && log.at[1] == 0 && log.at[2] == 0, "unpumped: %lld %lld %lld", (long long)log.at[0],
        (long long)log.at[1], (long long)log.at[2]);
  CHECK(tl_prefetch_pending() == 0, "nothing queued outside a run");
  /* rows of 25 f32 (100 bytes, not a multiple of 64): each row starts at another offset in its
   * line and needs 2 or 3 lines from the one holding its first byte to the one holding its last
   * (rows 4-7 start 16, 52, 24, 60 bytes into a line: 2 + 3 + 2 + 3; rows 8-9 at 32, 4: 3 + 2) */
  int64_t sh25[2] = {10, 25};
  tl_tensor t25 = tl_tensor_make(x, TL_F32, 2, sh25);
  tl_blockspec is25 = {.ndim = 2, .block = {4, 25}, .map = "i -> i, 0", .prefetch = 1};
  k.in = &is25;
  log.pump = 1;
  CHECK(tl_call(ctx, &k, &t25, NULL) == TL_OK, "%s", tl_ctx_error(ctx));
  CHECK(log.at[0] == 10 && log.at[1] == 5 && log.at[2] == 0, "100-byte rows: queued lines %lld %lld %lld",
        (long long)log.at[0], (long long)log.at[1], (long long)log.at[2]);
  tl_ctx_free(ctx);
  free(x);
}

int main(void) {
  RUN(test_pump);
  RUN(test_pending_bytes);
  RUN(test_prefetch_queue);
  return test_summary("runtime_pump");
}
