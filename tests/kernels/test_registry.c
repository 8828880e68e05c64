/* test_registry.c — every kernel in the registry builds for its representative shapes and for
 * small odd shapes, runs, and matches its float64 reference; bad shapes are refused with a
 * message; cost equals stats for each. */
#include <tilec.h>

#include "kernels/kernels_impl.h"
#include "test_util.h"

static void run_one(tl_ctx *ctx, const tl_kernel_desc *d, const char *shape) {
  tl_kcase kc;
  char err[256] = "";
  tl_status s = d->make(ctx, shape, &kc, err, sizeof err);
  REQUIRE(s == TL_OK, "%s %s: make: %s %s", d->name, shape ? shape : "(default)", tl_status_name(s), err);
  CHECK(kc.desc == NULL || kc.desc == d, "desc");
  tl_plan *plan;
  s = tl_plan_new(ctx, &kc.k, kc.in, kc.out, &plan);
  CHECK(s == TL_OK, "%s %s: plan: %s", d->name, kc.shape, tl_ctx_error(ctx));
  if (s == TL_OK) {
    s = tl_plan_run(plan, kc.in, kc.out);
    CHECK(s == TL_OK, "%s %s: run: %s", d->name, kc.shape, tl_ctx_error(ctx));
    double e = d->check(&kc);
    CHECK(e <= d->tolerance + 1e-12, "%s %s: rel. error %g > %g", d->name, kc.shape, e, d->tolerance);
    tl_cost c;
    tl_stats st;
    tl_plan_cost(plan, &c);
    tl_plan_stats(plan, &st);
    CHECK(c.bytes_read == st.bytes_read && c.bytes_written == st.bytes_written, "%s: cost == stats", d->name);
    int64_t tb[TL_MAX_OPERANDS];
    int n = tl_kcase_tensor_bytes(&kc, tb);
    CHECK(n == kc.k.n_in + kc.k.n_out && tb[0] > 0, "tensor bytes");
    tl_plan_free(plan);
  }
  tl_kcase_free(&kc);
}

static void test_all_kernels(void) {
  tl_ctx *ctx;
  tl_ctx_opts o = {.threads = 2};
  REQUIRE(tl_ctx_new(&o, &ctx) == TL_OK, "%s", tl_last_error());
  /* (the matmul shapes: b packed first, as tl_matmul packs it, with edges in M, N and K) */
  const char *odd[] = {"copy",        "37x101",     "scale",       "1x1",         "matmul_grid", "67x45x129",
                       "softmax_rows", "13x777",    "matmul",      "300x77x1001", "matmul_bf16", "261x70x1000",
                       "matmul_u8i8", "257x66x1001"};
  int n = 0;
  for (const tl_kernel_desc *d; (d = tl_kernel_at(n)); n++) {
    CHECK(tl_kernel_find(d->name) == d, "find %s", d->name);
    CHECK(d->summary && d->shape_syntax && d->shapes && d->make && d->check, "%s: complete entry", d->name);
    /* every representative shape (the small ones; large ones are timed by tilec roofline) */
    run_one(ctx, d, NULL);
  }
  CHECK(n >= 4, "registry has the example kernels (%d)", n);
  for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i += 2) {
    const tl_kernel_desc *d = tl_kernel_find(odd[i]);
    REQUIRE(d != NULL, "%s registered", odd[i]);
    run_one(ctx, d, odd[i + 1]);
  }
  CHECK(tl_kernel_find("nope") == NULL && tl_kernel_find(NULL) == NULL && tl_kernel_at(-1) == NULL, "unknown names");
  /* bad shapes */
  const char *bad[] = {"", "0x5", "-3x4", "4x", "4y5", "1x2x3x4", "12345678901234x2", "4294967296x1x4294967296",
                       "1099511627776x1099511627776x2"};
  const tl_kernel_desc *mm = tl_kernel_find("matmul_grid");
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tl_kcase kc;
    char err[256] = "";
    tl_status s = mm->make(ctx, bad[i], &kc, err, sizeof err);
    CHECK(s != TL_OK && err[0], "matmul_grid '%s' refused with a message (%s: %s)", bad[i], tl_status_name(s), err);
  }
  tl_kcase kc;
  char err[256] = "";
  CHECK(mm->make(ctx, "64x64", &kc, err, sizeof err) == TL_ERR_SHAPE && strstr(err, "MxNxK"), "matmul needs 3 sizes: %s", err);
  /* products that overflow or exceed any memory are refused before allocating */
  const char *huge[] = {"scale", "2147483648x2147483648", "copy", "1099511627776x1099511627776", "softmax_rows", "2147483648x2147483648"};
  for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i += 2) {
    err[0] = 0;
    tl_status s = tl_kernel_find(huge[i])->make(ctx, huge[i + 1], &kc, err, sizeof err);
    CHECK(s == TL_ERR_SHAPE && strstr(err, "elements"), "%s %s refused: %s %s", huge[i], huge[i + 1], tl_status_name(s), err);
  }
  tl_ctx_free(ctx);
}

static void test_shape_parse(void) {
  int64_t d[4];
  char err[128];
  CHECK(tl_shape_parse("3x4x5", d, 4, err, sizeof err) == 3 && d[0] == 3 && d[2] == 5, "3x4x5");
  CHECK(tl_shape_parse("7", d, 4, err, sizeof err) == 1 && d[0] == 7, "7");
  CHECK(tl_shape_parse("2,3", d, 4, err, sizeof err) == 2, "commas");
  CHECK(tl_shape_parse("2x3x4", d, 2, err, sizeof err) == -1 && strstr(err, "at most"), "too many: %s", err);
  CHECK(tl_shape_parse(NULL, d, 2, err, sizeof err) == -1, "NULL");
}

int main(void) {
  RUN(test_all_kernels);
  RUN(test_shape_parse);
  return test_summary("kernels_registry");
}
