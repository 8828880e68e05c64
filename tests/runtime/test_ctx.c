/* test_ctx.c — the context: options and defaults, bad arguments, the environment read at
 * creation, slots for upper layers, and every allocation path under fault injection (each
 * failing allocation gives TL_ERR_NOMEM with a message, never a crash or a leak: ASan checks). */
#include "exec_util.h"
#include "runtime/runtime_impl.h"
#include "test_util.h"

static void test_bad_options(void) {
  tl_ctx *ctx = (tl_ctx *)1;
  tl_ctx_opts o = {.threads = -1};
  CHECK(tl_ctx_new(&o, &ctx) == TL_ERR_INVALID && ctx == NULL, "threads -1 refused, *out NULL");
  CHECK(strstr(tl_last_error(), "threads") != NULL, "message names threads: %s", tl_last_error());
  o.threads = 1025;
  CHECK(tl_ctx_new(&o, &ctx) == TL_ERR_INVALID, "threads 1025 refused");
  CHECK(tl_ctx_new(NULL, NULL) == TL_ERR_INVALID, "out NULL refused");
  o = (tl_ctx_opts){.isa = "sse9"};
  CHECK(tl_ctx_new(&o, &ctx) == TL_ERR_INVALID && strstr(tl_last_error(), "sse9"), "unknown ISA: %s", tl_last_error());
  tl_ctx_free(NULL);
  CHECK(strlen(tl_ctx_error(NULL)) > 0, "tl_ctx_error(NULL) says so");
  CHECK(tl_ctx_warning(NULL)[0] == 0, "tl_ctx_warning(NULL) is empty");
  tl_ctx_info info;
  CHECK(tl_ctx_info_get(NULL, &info) == TL_ERR_INVALID, "info of NULL");
}

static void test_defaults(void) {
  tl_ctx *ctx;
  REQUIRE(tl_ctx_new(NULL, &ctx) == TL_OK, "%s", tl_last_error());
  tl_ctx_info in;
  REQUIRE(tl_ctx_info_get(ctx, &in) == TL_OK, "info");
  CHECK(in.threads == in.cpu.cpus_allowed && in.threads >= 1, "threads default to the affinity mask: %d vs %d", in.threads,
        in.cpu.cpus_allowed);
  if (in.cpu.l2_bytes > 0) CHECK(in.vmem_bytes == (size_t)in.cpu.l2_bytes * 3 / 4, "VMEM budget 75%% of L2");
  if (in.cpu.l1d_bytes > 0) CHECK(in.l1_bytes == (size_t)in.cpu.l1d_bytes * 3 / 4, "L1 budget 75%% of L1d");
  CHECK(in.spin_us == 50, "spin default 50");
  CHECK(in.isa <= in.cpu.isa_max, "ISA within the CPU's");
  CHECK(tl_ctx_error(ctx)[0] == 0 && tl_ctx_warning(ctx)[0] == 0, "no messages");
  tl_ctx_free(ctx);
  tl_ctx_opts o = {.threads = 3, .vmem_bytes = 12345, .l1_bytes = 999, .spin_us = -1, .cache_dir = "/tmp/x"};
  REQUIRE(tl_ctx_new(&o, &ctx) == TL_OK, "%s", tl_last_error());
  tl_ctx_info_get(ctx, &in);
  CHECK(in.threads == 3 && in.vmem_bytes == 12345 && in.l1_bytes == 999 && in.spin_us == -1, "options kept");
  CHECK(!strcmp(in.cache_dir, "/tmp/x"), "cache dir from opts");
  tl_ctx_free(ctx);
  setenv("TILEC_CACHE_DIR", "/tmp/tc", 1);
  REQUIRE(tl_ctx_new(NULL, &ctx) == TL_OK, "%s", tl_last_error());
  tl_ctx_info_get(ctx, &in);
  CHECK(!strcmp(in.cache_dir, "/tmp/tc"), "cache dir from TILEC_CACHE_DIR: %s", in.cache_dir);
  tl_ctx_free(ctx);
  unsetenv("TILEC_CACHE_DIR");
  setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  REQUIRE(tl_ctx_new(NULL, &ctx) == TL_OK, "%s", tl_last_error());
  tl_ctx_info_get(ctx, &in);
  CHECK(!strcmp(in.cache_dir, "/tmp/xdg/tilec"), "cache dir from XDG_CACHE_HOME: %s", in.cache_dir);
  tl_ctx_free(ctx);
  unsetenv("XDG_CACHE_HOME");
}

static int freed_states;
static void free_state(void *s) {
  freed_states++;
  free(s);
}
static const tl_slot_class slot_a = {"a", free_state}, slot_b = {"b", free_state};

static void test_slots(void) {
  tl_ctx *ctx = make_ctx(1);
  freed_states = 0;
  CHECK(tl_ctx_slot_get(ctx, &slot_a) == NULL, "empty slot");
  void *s1 = malloc(8), *s2 = malloc(8), *s3 = malloc(8);
  CHECK(tl_ctx_slot_set(ctx, &slot_a, s1) == TL_OK && tl_ctx_slot_get(ctx, &slot_a) == s1, "set a");
  CHECK(tl_ctx_slot_set(ctx, &slot_b, s2) == TL_OK && tl_ctx_slot_get(ctx, &slot_b) == s2, "set b");
  CHECK(tl_ctx_slot_set(ctx, &slot_a, s3) == TL_OK && tl_ctx_slot_get(ctx, &slot_a) == s3 && freed_states == 1,
        "replacing frees the old state");
  tl_slot_class many[TL_MAX_SLOTS];
  int refused = 0;
  for (int i = 0; i < TL_MAX_SLOTS; i++) {
    many[i] = (tl_slot_class){"many", NULL};
    refused += tl_ctx_slot_set(ctx, &many[i], NULL) != TL_OK;
  }
  CHECK(refused == 2, "slots run out after %d: %d refused", TL_MAX_SLOTS, refused);
  tl_ctx_free(ctx);
  CHECK(freed_states == 3, "states freed with the context (%d)", freed_states);
}

static void body(const tl_prog *p, tl_ref *refs, void *user) {
  tl_ref *x = &refs[0], *y = &refs[1];
  for (int64_t r = 0; r < y->valid[0]; r++)
    for (int64_t c = 0; c < y->valid[1]; c++) *ref_f32(y, r, c) = *ref_f32(x, r, c) + 1;
  (void)p, (void)user;
}

static void test_fault_injection(void) {
  float x[100], y[100];
  for (int i = 0; i < 100; i++) x[i] = (float)i;
  int64_t sh[2] = {10, 10};
  tl_tensor tx = tl_tensor_make(x, TL_F32, 2, sh), ty = tl_tensor_make(y, TL_F32, 2, sh);
  tl_blockspec s = {.ndim = 2, .block = {4, 4}, .map = "i,j->i,j", .stage = TL_STAGE_ALWAYS};
  tl_kernel k = {.name = "fi", .body = body, .grid_ndim = 2, .grid = {3, 3}, .sem = {TL_PARALLEL}, .n_in = 1, .in = &s,
                 .n_out = 1, .out = &s};
  int nomem = 0, ok = 0, other = 0;
  for (int64_t n = 1; n < 200; n++) {
    int64_t c0 = tl_faultsim_count();
    tl_faultsim_fail_at(n);
    tl_ctx *ctx = NULL;
    tl_ctx_opts o = {.threads = 2};
    tl_status st = tl_ctx_new(&o, &ctx);
    if (st == TL_OK) {
      for (int i = 0; i < 100; i++) y[i] = -7;
      st = tl_call(ctx, &k, &tx, &ty);
      if (st == TL_OK) {
        int bad = 0;
        for (int i = 0; i < 100; i++) bad += y[i] != x[i] + 1;
        CHECK(bad == 0, "n=%lld: result", (long long)n);
      } else {
        CHECK(st == TL_ERR_NOMEM && strstr(tl_ctx_error(ctx), "memory"), "n=%lld: %s %s", (long long)n, tl_status_name(st),
              tl_ctx_error(ctx));
        int touched = 0;
        for (int i = 0; i < 100; i++) touched += y[i] != -7;
        CHECK(touched == 0, "n=%lld: outputs untouched on NOMEM", (long long)n);
      }
      tl_ctx_free(ctx);
    } else {
      CHECK(ctx == NULL && strlen(tl_last_error()) > 0, "n=%lld: failed ctx_new says why", (long long)n);
    }
    nomem += st == TL_ERR_NOMEM;
    ok += st == TL_OK;
    other += st != TL_OK && st != TL_ERR_NOMEM;
    if (tl_faultsim_count() - c0 < n) {
      /* the injected failure was never reached: every allocation path has been exercised */
      CHECK(st == TL_OK, "n=%lld: no failure injected, yet %s", (long long)n, tl_status_name(st));
      break;
    }
  }
  tl_faultsim_fail_at(0);
  CHECK(nomem > 5, "allocation failures were exercised (%d)", nomem);
  fprintf(stderr, "  fault injection: %d allocations failed one at a time, %d runs succeeded anyway\n", nomem + other, ok - 1);
  CHECK(other == 0, "only NOMEM on allocation failure (%d others)", other);
  CHECK(ok >= 1, "the last run succeeded");
}

int main(void) {
  RUN(test_bad_options);
  RUN(test_defaults);
  RUN(test_slots);
  RUN(test_fault_injection);
  return test_summary("runtime_ctx");
}
