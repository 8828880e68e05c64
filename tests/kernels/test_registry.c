/* test_registry.c — every kernel in the registry builds for its representative shapes and for
 * small odd shapes, runs, and matches its float64 reference; bad shapes are refused with a
 * message; cost equals stats for each. */
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

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

/* Pages of [p, p + n) in RAM (mincore), and the pages of the range. */
static int64_t resident_pages(const void *p, int64_t n, int64_t *pages) {
  const uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), lo = (uintptr_t)p / pg * pg;
  const uintptr_t hi = ((uintptr_t)p + (uintptr_t)n + pg - 1) / pg * pg;
  *pages = (int64_t)((hi - lo) / pg);
  unsigned char *v = malloc((size_t)*pages + 1);
  int64_t r = 0;
  if (v && mincore((void *)lo, hi - lo, v) == 0)
    for (int64_t i = 0; i < *pages; i++) r += v[i] & 1;
  else
    r = -1;
  free(v);
  return r;
}

/* Dry instances (tilec explain --no-run and on presets): every kernel's operands are allocated
 * but never written, by the make function or by planning: of each operand's pages (64-256 MiB
 * each here, so the allocator maps them fresh) almost none are in RAM. Until 2026-11-26 they were
 * filled (and b packed): explain copy 100000000x1 --machine a100 took 1.6 s and 784 MB, and a
 * 65536^3 matmul on a preset 48 GiB. */
static void test_dry(void) {
  tl_ctx *ctx;
  tl_ctx_opts o = {.threads = 2};
  REQUIRE(tl_ctx_new(&o, &ctx) == TL_OK, "%s", tl_last_error());
  static const char *const cs[] = {"copy", "16384x1024", "scale", "16384x1024", "matmul_grid", "4096x4096x4096",
                                   "softmax_rows", "65536x1024", "softmax", "65536x1024", "layernorm", "65536x1024",
                                   "rmsnorm", "65536x1024", "matmul", "8192x8192x8192", "matmul_bf16", "8192x8192x8192",
                                   "matmul_u8i8", "8192x8192x8192", "attention", "1x32x16384x128"};
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i += 2) {
    const tl_kernel_desc *d = tl_kernel_find(cs[i]);
    REQUIRE(d != NULL, "%s registered", cs[i]);
    tl_kcase kc;
    char err[256] = "";
    tl_kcase_set_dry(1);
    tl_status s = d->make(ctx, cs[i + 1], &kc, err, sizeof err);
    tl_kcase_set_dry(0);
    CHECK(s == TL_OK, "%s %s dry: %s %s", cs[i], cs[i + 1], tl_status_name(s), err);
    if (s != TL_OK) continue;
    tl_plan *plan;
    s = tl_plan_new(ctx, &kc.k, kc.in, kc.out, &plan);
    CHECK(s == TL_OK, "%s %s dry: plan: %s", cs[i], cs[i + 1], tl_ctx_error(ctx));
    if (s == TL_OK) tl_plan_free(plan);
    for (int t = 0; t < kc.k.n_in + kc.k.n_out; t++) {
      const tl_tensor *x = t < kc.k.n_in ? &kc.in[t] : &kc.out[t - kc.k.n_in];
      const int64_t bytes = tl_tensor_nbytes(x);
      if (bytes < ((int64_t)32 << 20)) continue; /* (gamma, beta: small) */
      int64_t pages = 0;
      const int64_t res = resident_pages(x->data, bytes, &pages);
      CHECK(res >= 0 && res <= pages / 100 + 2, "%s %s dry: operand %d: %lld of %lld pages in RAM", cs[i], cs[i + 1], t,
            (long long)res, (long long)pages);
    }
    tl_kcase_free(&kc);
  }
  CHECK(!tl_kcase_dry(), "dry is off again");
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
  /* first: memory the other tests fill and free stays in the allocator's bins, which a later
   * large allocation may be served from (resident, though never written by it) */
  RUN(test_dry);
  RUN(test_all_kernels);
  RUN(test_shape_parse);
  return test_summary("kernels_registry");
}
