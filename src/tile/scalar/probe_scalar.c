/* probe_scalar.c — the portable probe microkernels (contract in tile_impl.h): the "scalar" compute
 * unit and the bandwidth kernels every context can fall back to.
 *
 * The scalar unit is a mul-add estimate for code built with the baseline flags: 12 independent
 * chains of x = x * m + c in f32 (the baseline has no FMA, so a mul and an add; 2 ops per chain
 * step). An empty asm that names every chain keeps each in its own register, so the compiler can
 * neither vectorize nor fold the chains. The bandwidth kernels move uint64_t words, 8 per step,
 * with a compiler barrier between passes (no pass may be merged with or dropped for the next);
 * they are built without loop-to-memcpy/memset rewriting, so they measure this code, not libc's.
 */
#include <string.h>

#include "../tile_impl.h"

#if defined(__GNUC__) && !defined(__clang__)
#define TL_PROBE_PLAIN_LOOPS __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define TL_PROBE_PLAIN_LOOPS
#endif

/* 12 chains of x = x * m + c; m and c are hidden from the optimizer. */
static double tl_probe_scalar_muladd(int64_t iters) {
  float m = 0.999999f, c = 1e-6f;
  __asm__("" : "+x"(m), "+x"(c));
  float a0 = 1, a1 = 2, a2 = 3, a3 = 4, a4 = 5, a5 = 6, a6 = 7, a7 = 8, a8 = 9, a9 = 10, a10 = 11, a11 = 12;
  for (int64_t i = 0; i < iters; i++) {
    a0 = a0 * m + c;
    a1 = a1 * m + c;
    a2 = a2 * m + c;
    a3 = a3 * m + c;
    a4 = a4 * m + c;
    a5 = a5 * m + c;
    a6 = a6 * m + c;
    a7 = a7 * m + c;
    a8 = a8 * m + c;
    a9 = a9 * m + c;
    a10 = a10 * m + c;
    a11 = a11 * m + c;
    __asm__("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5), "+x"(a6), "+x"(a7), "+x"(a8),
            "+x"(a9), "+x"(a10), "+x"(a11));
  }
  float s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;
  __asm__ volatile("" : : "x"(s));
  return (double)iters * 12 * 2;
}

/* Sums every 64-bit word, 4 independent sums. */
static TL_PROBE_PLAIN_LOOPS double tl_probe_scalar_read(const void *buf, size_t bytes, int64_t passes) {
  const uint64_t *p = buf;
  size_t n = bytes / sizeof(uint64_t);
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (int64_t r = 0; r < passes; r++) {
    for (size_t i = 0; i < n; i += 8) {
      s0 += p[i] + p[i + 4];
      s1 += p[i + 1] + p[i + 5];
      s2 += p[i + 2] + p[i + 6];
      s3 += p[i + 3] + p[i + 7];
    }
    __asm__ volatile("" : : : "memory");
  }
  return (double)(s0 ^ s1 ^ s2 ^ s3);
}

/* Stores a pattern into every 64-bit word. */
static TL_PROBE_PLAIN_LOOPS void tl_probe_scalar_write(void *buf, size_t bytes, int64_t passes) {
  uint64_t *p = buf;
  size_t n = bytes / sizeof(uint64_t);
  for (int64_t r = 0; r < passes; r++) {
    uint64_t v = (uint64_t)r * 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < n; i += 8) {
      p[i] = v;
      p[i + 1] = v;
      p[i + 2] = v;
      p[i + 3] = v;
      p[i + 4] = v;
      p[i + 5] = v;
      p[i + 6] = v;
      p[i + 7] = v;
    }
    __asm__ volatile("" : : : "memory");
  }
}

/* Copies word by word. */
static TL_PROBE_PLAIN_LOOPS void tl_probe_scalar_copy(void *dst, const void *src, size_t bytes, int64_t passes) {
  uint64_t *d = dst;
  const uint64_t *s = src;
  size_t n = bytes / sizeof(uint64_t);
  for (int64_t r = 0; r < passes; r++) {
    for (size_t i = 0; i < n; i += 8) {
      d[i] = s[i];
      d[i + 1] = s[i + 1];
      d[i + 2] = s[i + 2];
      d[i + 3] = s[i + 3];
      d[i + 4] = s[i + 4];
      d[i + 5] = s[i + 5];
      d[i + 6] = s[i + 6];
      d[i + 7] = s[i + 7];
    }
    __asm__ volatile("" : : : "memory");
  }
}

static const tl_probe_unit tl_probe_scalar_units[] = {
    {"scalar", TL_F32, tl_probe_scalar_muladd},
};

/* No portable streaming store: nt_copy is left to the vector paths. */
const tl_probe_impl tl_probe_scalar_impl = {
    .isa = TL_ISA_SCALAR,
    .nunits = (int)TL_ARRAY_LEN(tl_probe_scalar_units),
    .units = tl_probe_scalar_units,
    .read = tl_probe_scalar_read,
    .write = tl_probe_scalar_write,
    .copy = tl_probe_scalar_copy,
    .nt_copy = NULL,
};
