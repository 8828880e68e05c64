/* probe_avx2.c — AVX2 probe microkernels (contract in tile_impl.h): the "avx2-fma" unit and
 * 256-bit bandwidth kernels.
 *
 * avx2-fma: 12 independent chains of VFMADD (8 f32 lanes, 16 ops each): FMA latency is 4 cycles
 * and the machines we know issue 2 per cycle, so 8 chains keep both pipes busy; 12 leave margin
 * and still fit 16 ymm registers with the two operands. Operands and accumulators are hidden from
 * the optimizer with empty asm, so nothing is folded and no chains are merged. Bandwidth kernels move TL_PROBE_CHUNK (512) bytes per
 * step as 16 ymm loads or stores, with a compiler barrier between passes.
 */
#include <immintrin.h>

#include "../tile_impl.h"

/* 12 chains of acc = acc * m + c, 8 lanes each. */
static double tl_probe_avx2_fma(int64_t iters) {
  __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-6f);
  __asm__("" : "+x"(m), "+x"(c));
  __m256 a0 = _mm256_set1_ps(1), a1 = _mm256_set1_ps(2), a2 = _mm256_set1_ps(3), a3 = _mm256_set1_ps(4);
  __m256 a4 = _mm256_set1_ps(5), a5 = _mm256_set1_ps(6), a6 = _mm256_set1_ps(7), a7 = _mm256_set1_ps(8);
  __m256 a8 = _mm256_set1_ps(9), a9 = _mm256_set1_ps(10), a10 = _mm256_set1_ps(11), a11 = _mm256_set1_ps(12);
  __asm__("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5), "+x"(a6), "+x"(a7), "+x"(a8), "+x"(a9),
          "+x"(a10), "+x"(a11));
  for (int64_t i = 0; i < iters; i++) {
    a0 = _mm256_fmadd_ps(a0, m, c);
    a1 = _mm256_fmadd_ps(a1, m, c);
    a2 = _mm256_fmadd_ps(a2, m, c);
    a3 = _mm256_fmadd_ps(a3, m, c);
    a4 = _mm256_fmadd_ps(a4, m, c);
    a5 = _mm256_fmadd_ps(a5, m, c);
    a6 = _mm256_fmadd_ps(a6, m, c);
    a7 = _mm256_fmadd_ps(a7, m, c);
    a8 = _mm256_fmadd_ps(a8, m, c);
    a9 = _mm256_fmadd_ps(a9, m, c);
    a10 = _mm256_fmadd_ps(a10, m, c);
    a11 = _mm256_fmadd_ps(a11, m, c);
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                           _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
  s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
  __asm__ volatile("" : : "x"(s));
  return (double)iters * 12 * 8 * 2;
}

/* Loads every byte: 16 ymm per chunk into 4 integer sums. */
static double tl_probe_avx2_read(const void *buf, size_t bytes, int64_t passes) {
  const char *p = buf;
  __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
  for (int64_t r = 0; r < passes; r++) {
    for (size_t i = 0; i < bytes; i += TL_PROBE_CHUNK) {
      const __m256i *q = (const __m256i *)(p + i);
      for (int k = 0; k < 16; k += 4) {
        s0 = _mm256_add_epi32(s0, _mm256_load_si256(q + k));
        s1 = _mm256_add_epi32(s1, _mm256_load_si256(q + k + 1));
        s2 = _mm256_add_epi32(s2, _mm256_load_si256(q + k + 2));
        s3 = _mm256_add_epi32(s3, _mm256_load_si256(q + k + 3));
      }
    }
    __asm__ volatile("" : : : "memory");
  }
  __m256i s = _mm256_add_epi32(_mm256_add_epi32(s0, s1), _mm256_add_epi32(s2, s3));
  return (double)_mm256_extract_epi32(s, 0) + (double)_mm256_extract_epi32(s, 7);
}

/* Stores every byte: 16 ymm per chunk. */
static void tl_probe_avx2_write(void *buf, size_t bytes, int64_t passes) {
  char *p = buf;
  for (int64_t r = 0; r < passes; r++) {
    __m256i v = _mm256_set1_epi32((int)r);
    for (size_t i = 0; i < bytes; i += TL_PROBE_CHUNK) {
      __m256i *q = (__m256i *)(p + i);
      for (int k = 0; k < 16; k++) _mm256_store_si256(q + k, v);
    }
    __asm__ volatile("" : : : "memory");
  }
}

/* Copies with ymm loads and stores. */
static void tl_probe_avx2_copy(void *dst, const void *src, size_t bytes, int64_t passes) {
  for (int64_t r = 0; r < passes; r++) {
    for (size_t i = 0; i < bytes; i += TL_PROBE_CHUNK) {
      const __m256i *s = (const __m256i *)((const char *)src + i);
      __m256i *d = (__m256i *)((char *)dst + i);
      for (int k = 0; k < 16; k += 4) {
        __m256i x0 = _mm256_load_si256(s + k), x1 = _mm256_load_si256(s + k + 1);
        __m256i x2 = _mm256_load_si256(s + k + 2), x3 = _mm256_load_si256(s + k + 3);
        _mm256_store_si256(d + k, x0);
        _mm256_store_si256(d + k + 1, x1);
        _mm256_store_si256(d + k + 2, x2);
        _mm256_store_si256(d + k + 3, x3);
      }
    }
    __asm__ volatile("" : : : "memory");
  }
}

/* Copies with ymm loads and streaming stores; fenced at the end. */
static void tl_probe_avx2_nt_copy(void *dst, const void *src, size_t bytes, int64_t passes) {
  for (int64_t r = 0; r < passes; r++) {
    for (size_t i = 0; i < bytes; i += TL_PROBE_CHUNK) {
      const __m256i *s = (const __m256i *)((const char *)src + i);
      __m256i *d = (__m256i *)((char *)dst + i);
      for (int k = 0; k < 16; k += 4) {
        __m256i x0 = _mm256_load_si256(s + k), x1 = _mm256_load_si256(s + k + 1);
        __m256i x2 = _mm256_load_si256(s + k + 2), x3 = _mm256_load_si256(s + k + 3);
        _mm256_stream_si256(d + k, x0);
        _mm256_stream_si256(d + k + 1, x1);
        _mm256_stream_si256(d + k + 2, x2);
        _mm256_stream_si256(d + k + 3, x3);
      }
    }
    __asm__ volatile("" : : : "memory");
  }
  _mm_sfence();
}

static const tl_probe_unit tl_probe_avx2_units[] = {
    {"avx2-fma", TL_F32, tl_probe_avx2_fma},
};

const tl_probe_impl tl_probe_avx2_impl = {
    .isa = TL_ISA_AVX2,
    .nunits = (int)TL_ARRAY_LEN(tl_probe_avx2_units),
    .units = tl_probe_avx2_units,
    .read = tl_probe_avx2_read,
    .write = tl_probe_avx2_write,
    .copy = tl_probe_avx2_copy,
    .nt_copy = tl_probe_avx2_nt_copy,
};
