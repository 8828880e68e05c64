/* test_util.h — the tiny test harness every tests/<area>/test_*.c uses.
 *
 *   static void test_something(void) { CHECK(1 + 1 == 2, "arithmetic %d", 2); }
 *   int main(void) { RUN(test_something); return test_summary("core_dtype"); }
 *
 * CHECK records a failure (file:line and the message) and goes on; REQUIRE returns from the test
 * function. test_summary prints "<name>: N passed, M failed" (checks) and returns the exit code. */
#ifndef TL_TEST_UTIL_H
#define TL_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Atomic int tl_test_passed, tl_test_failed, tl_test_fail_prints;
static const char *tl_test_current = "";

#define CHECK(cond, ...)                                                            \
  do {                                                                              \
    if (cond) {                                                                     \
      tl_test_passed++;                                                             \
    } else {                                                                        \
      tl_test_failed++;                                                             \
      if (tl_test_fail_prints++ < 50) {                                             \
        fprintf(stderr, "FAIL %s (%s:%d): %s: ", tl_test_current, __FILE__, __LINE__, #cond); \
        fprintf(stderr, __VA_ARGS__);                                               \
        fprintf(stderr, "\n");                                                      \
      }                                                                             \
    }                                                                               \
  } while (0)

#define REQUIRE(cond, ...)          \
  do {                              \
    int tl_ok_ = (cond) ? 1 : 0;    \
    CHECK(tl_ok_, __VA_ARGS__);     \
    if (!tl_ok_) return;            \
  } while (0)

#define RUN(fn)                                         \
  do {                                                  \
    tl_test_current = #fn;                              \
    int tl_before_ = tl_test_failed;                    \
    fn();                                               \
    fprintf(stderr, "  %-48s %s\n", #fn, tl_test_failed == tl_before_ ? "ok" : "FAILED"); \
  } while (0)

static inline int test_summary(const char *name) {
  printf("%s: %d passed, %d failed\n", name, tl_test_passed, tl_test_failed);
  return tl_test_failed ? 1 : 0;
}

/* xorshift64* — deterministic random numbers for tests (seed != 0). */
typedef struct { uint64_t s; } test_rng;
static inline uint64_t test_rng_u64(test_rng *r) {
  r->s ^= r->s >> 12; r->s ^= r->s << 25; r->s ^= r->s >> 27;
  return r->s * 2685821657736338717ull;
}
/* uniform in [lo, hi) */
static inline double test_rng_uniform(test_rng *r, double lo, double hi) {
  return lo + (hi - lo) * ((double)(test_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0));
}
/* integer in [lo, hi] */
static inline int64_t test_rng_int(test_rng *r, int64_t lo, int64_t hi) {
  return lo + (int64_t)(test_rng_u64(r) % (uint64_t)(hi - lo + 1));
}

/* ||out - ref|| / ||ref|| (ref norm 0: ||out||). */
static inline double test_rel_err(const double *out, const double *ref, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; i++) { double d = out[i] - ref[i]; num += d * d; den += ref[i] * ref[i]; }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

#endif /* TL_TEST_UTIL_H */
