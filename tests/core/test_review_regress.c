/* test_review_regress.c — bugs found in review of core and the scalar tile reference, one test
 * each: 16-bit stores from double rounded twice, a tiled tensor whose tile count overflowed,
 * integer elementwise ops that went through f32; and tl_alloc_huge, whose first version advised
 * heap memory that malloc later handed to others. */
#include <string.h>
#include <tilec.h>
#include <tilec_ops.h>

#include "core/core_impl.h"
#include "test_util.h"

static void test_store_rounds_once(void) {
  uint16_t h;
  tl_store_f64(&h, TL_BF16, 0, 1.0 + ldexp(1, -8) + ldexp(1, -30)); /* just above the bf16 halfway point */
  CHECK(h == 0x3f81, "bf16 store: 0x%04x, want 0x3f81", h);
  tl_store_f64(&h, TL_BF16, 0, -(1.0 + ldexp(1, -8) + ldexp(1, -30)));
  CHECK(h == 0xbf81, "bf16 store, negative: 0x%04x", h);
  tl_store_f64(&h, TL_BF16, 0, 1.0 + ldexp(1, -8)); /* exactly halfway: to even */
  CHECK(h == 0x3f80, "bf16 tie to even: 0x%04x", h);
  tl_store_f64(&h, TL_F16, 0, 1.0 + ldexp(1, -11) + ldexp(1, -40));
  CHECK(h == 0x3c01, "f16 store: 0x%04x, want 0x3c01", h);
  tl_store_f64(&h, TL_F16, 0, 1e300);
  CHECK(h == 0x7c00, "f16 overflow to inf: 0x%04x", h);
  tl_store_f64(&h, TL_BF16, 0, NAN);
  CHECK((h & 0x7f80) == 0x7f80 && (h & 0x7f), "bf16 NaN stays NaN: 0x%04x", h);
}

static void test_tiled_tile_count_overflow(void) {
  static int8_t buf[64];
  tl_layout l = {.tiled = 1, .vnni = 1, .tile_r = 16, .tile_c = 1};
  tl_tensor t = tl_tensor_make_tiled(buf, TL_I8, 2, (int64_t[]){INT64_MAX, 1}, l);
  CHECK(t.dtype == TL_DTYPE_INVALID, "a tiled tensor of INT64_MAX rows is refused");
  t = (tl_tensor){.data = buf, .dtype = TL_I8, .ndim = 2, .shape = {INT64_MAX, 1}, .layout = l};
  char msg[256];
  CHECK(tl_tensor_check(&t, "t", msg, sizeof msg) == TL_ERR_SHAPE, "tl_tensor_check refuses it: %s", msg);
  CHECK(tl_tensor_nbytes(&t) < 0, "no negative byte count passed off as valid");
}

static void test_integer_ops_exact(void) {
  int32_t a[2] = {16777217, -16777219}, b[2] = {16777217, 3}, d[2];
  tl_ref ra = {.data = a, .dtype = TL_I32, .ndim = 1, .shape = {2}, .stride = {1}, .valid = {2}};
  tl_ref rb = ra, rd = ra;
  rb.data = b, rd.data = d;
  tl_ctx *ctx;
  tl_ctx_opts o = {.isa = "scalar"};
  REQUIRE(tl_ctx_new(&o, &ctx) == TL_OK, "%s", tl_last_error());
  tl_tile_binary(&rd, &ra, &rb, TL_BINARY_MAX);
  CHECK(d[0] == 16777217 && d[1] == 3, "i32 max exact: %d %d", d[0], d[1]);
  tl_tile_binary(&rd, &ra, &rb, TL_BINARY_ADD);
  CHECK(d[0] == 33554434 && d[1] == -16777216, "i32 add exact: %d %d", d[0], d[1]);
  tl_tile_unary(&rd, &ra, TL_UNARY_RELU);
  CHECK(d[0] == 16777217 && d[1] == 0, "i32 relu exact: %d %d", d[0], d[1]);
  tl_tile_unary(&rd, &ra, TL_UNARY_NEG);
  CHECK(d[0] == -16777217 && d[1] == 16777219, "i32 neg exact: %d %d", d[0], d[1]);
  tl_ctx_free(ctx);
}

/* tl_alloc_huge: 64-byte aligned below TL_HUGE_MIN, 2 MiB aligned from it (its own mapping),
 * every byte writable, NULL under fault injection, freed by tl_free_huge (and by tl_free, the
 * public free of packed b). */
static void test_alloc_huge(void) {
  const size_t sizes[] = {1, 100, TL_HUGE_MIN - 1, TL_HUGE_MIN, TL_HUGE_MIN + 4096 + 7, 3 * TL_HUGE_MIN};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    unsigned char *p = tl_alloc_huge(sizes[i]);
    CHECK(p != NULL, "tl_alloc_huge(%zu) failed", sizes[i]);
    if (!p) continue;
    const uintptr_t al = sizes[i] >= TL_HUGE_MIN ? TL_HUGE_MIN : 64;
    CHECK((uintptr_t)p % al == 0, "tl_alloc_huge(%zu) = %p, not %zu-byte aligned", sizes[i], (void *)p, (size_t)al);
    memset(p, 0xa5, sizes[i]);
    CHECK(p[0] == 0xa5 && p[sizes[i] - 1] == 0xa5, "tl_alloc_huge(%zu): first and last byte written", sizes[i]);
    if (i % 2) tl_free_huge(p);
    else tl_free(p);
  }
  tl_free_huge(NULL);
  tl_faultsim_fail_at(1); /* the next allocation fails */
  void *f = tl_alloc_huge(3 * TL_HUGE_MIN);
  CHECK(f == NULL, "tl_alloc_huge under fault injection returned memory");
  tl_free_huge(f);
  tl_faultsim_fail_at(0);
}

int main(void) {
  RUN(test_store_rounds_once);
  RUN(test_tiled_tile_count_overflow);
  RUN(test_integer_ops_exact);
  RUN(test_alloc_huge);
  return test_summary("core_review_regress");
}
