/* probe_avx512.c — AVX-512 probe microkernels (contract in tile_impl.h): the "avx512-fma" unit
 * and 512-bit bandwidth kernels.
 *
 * avx512-fma: 16 independent chains of VFMADD on zmm (16 f32 lanes, 32 ops each). FMA latency is
 * 4 cycles; Sapphire Rapids issues two 512-bit FMAs per cycle (8 chains needed), Zen 4 one (its
 * 512-bit FMA is two 256-bit halves), so 16 chains cover both with margin and leave 14 of the 32
 * zmm registers free. Operands and accumulators are hidden from the optimizer with empty asm (no
 * folding, no merging of chains). Bandwidth kernels
 * move TL_PROBE_CHUNK (512) bytes per step as 8 zmm loads or stores, with a compiler barrier
 * between passes; the non-temporal copy uses VMOVNTDQ and ends with SFENCE.
 */
#include <immintrin.h>

#include "../tile_impl.h"

/* 16 chains of acc = acc * m + c, 16 lanes each. */
static double tl_probe_avx512_fma(int64_t iters) {
  __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-6f);
  __asm__("" : "+v"(m), "+v"(c));
  __m512 a0 = _mm512_set1_ps(1), a1 = _mm512_set1_ps(2), a2 = _mm512_set1_ps(3), a3 = _mm512_set1_ps(4);
  __m512 a4 = _mm512_set1_ps(5), a5 = _mm512_set1_ps(6), a6 = _mm512_set1_ps(7), a7 = _mm512_set1_ps(8);
  __m512 a8 = _mm512_set1_ps(9), a9 = _mm512_set1_ps(10), a10 = _mm512_set1_ps(11), a11 = _mm512_set1_ps(12);
  __m512 a12 = _mm512_set1_ps(13), a13 = _mm512_set1_ps(14), a14 = _mm512_set1_ps(15), a15 = _mm512_set1_ps(16);
  __asm__("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5), "+v"(a6), "+v"(a7));
  __asm__("" : "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11), "+v"(a12), "+v"(a13), "+v"(a14), "+v"(a15));
  for (int64_t i = 0; i < iters; i++) {
    a0 = _mm512_fmadd_ps(a0, m, c);
    a1 = _mm512_fmadd_ps(a1, m, c);
    a2 = _mm512_fmadd_ps(a2, m, c);
    a3 = _mm512_fmadd_ps(a3, m, c);
    a4 = _mm512_fmadd_ps(a4, m, c);
    a5 = _mm512_fmadd_ps(a5, m, c);
    a6 = _mm512_fmadd_ps(a6, m, c);
    a7 = _mm512_fmadd_ps(a7, m, c);
    a8 = _mm512_fmadd_ps(a8, m, c);
    a9 = _mm512_fmadd_ps(a9, m, c);
    a10 = _mm512_fmadd_ps(a10, m, c);
    a11 = _mm512_fmadd_ps(a11, m, c);
    a12 = _mm512_fmadd_ps(a12, m, c);
    a13 = _mm512_fmadd_ps(a13, m, c);
    a14 = _mm512_fmadd_ps(a14, m, c);
    a15 = _mm512_fmadd_ps(a15, m, c);
  }
  __m512 s0 = _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3));
  __m512 s1 = _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7));
  __m512 s2 = _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11));
  __m512 s3 = _mm512_add_ps(_mm512_add_ps(a12, a13), _mm512_add_ps(a14, a15));
  __m512 s = _mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3));
  __asm__ volatile("" : : "v"(s));
  return (double)iters * 16 * 16 * 2;
}

/* Loads every byte: 8 zmm per chunk into 4 integer sums. */
static double tl_probe_avx512_read(const void *buf, size_t bytes, int64_t passes) {
  const char *p = buf;
  __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0;
  for (int64_t r = 0; r < passes; r++) {
    for (size_t i = 0; i < bytes; i += TL_PROBE_CHUNK) {
      const char *q = p + i;
      s0 = _mm512_add_epi32(s0, _mm512_load_si512(q));
      s1 = _mm512_add_epi32(s1, _mm512_load_si512(q + 64));
      s2 = _mm512_add_epi32(s2, _mm512_load_si512(q + 128));
      s3 = _mm512_add_epi32(s3, _mm512_load_si512(q + 192));
      s0 = _mm512_add_epi32(s0, _mm512_load_si512(q + 256));
      s1 = _mm512_add_epi32(s1, _mm512_load_si512(q + 320));
      s2 = _mm512_add_epi32(s2, _mm512_load_si512(q + 384));
      s3 = _mm512_add_epi32(s3, _mm512_load_si512(q + 448));
    }
    __asm__ volatile("" : : : "memory");
  }
  __m512i s = _mm512_add_epi32(_mm512_add_epi32(s0, s1), _mm512_add_epi32(s2, s3));
  uint32_t lanes[16]; /* summed as unsigned: wrapping is the point, not an overflow */
  _mm512_storeu_si512(lanes, s);
  uint32_t sum = 0;
  for (int i = 0; i < 16; i++) sum += lanes[i];
  return (double)sum;
}

/* Stores every byte: 8 zmm per chunk. */
static void tl_probe_avx512_write(void *buf, size_t bytes, int64_t passes) {
  char *p = buf;
  for (int64_t r = 0; r < passes; r++) {
    __m512i v = _mm512_set1_epi32((int)r);
    for (size_t i = 0; i < bytes; i += TL_PROBE_CHUNK)
      for (int k = 0; k < TL_PROBE_CHUNK; k += 64) _mm512_store_si512(p + i + k, v);
    __asm__ volatile("" : : : "memory");
  }
}

/* Copies with zmm loads and stores. */
static void tl_probe_avx512_copy(void *dst, const void *src, size_t bytes, int64_t passes) {
  for (int64_t r = 0; r < passes; r++) {
    for (size_t i = 0; i < bytes; i += TL_PROBE_CHUNK) {
      const char *s = (const char *)src + i;
      char *d = (char *)dst + i;
      for (int k = 0; k < TL_PROBE_CHUNK; k += 256) {
        __m512i x0 = _mm512_load_si512(s + k), x1 = _mm512_load_si512(s + k + 64);
        __m512i x2 = _mm512_load_si512(s + k + 128), x3 = _mm512_load_si512(s + k + 192);
        _mm512_store_si512(d + k, x0);
        _mm512_store_si512(d + k + 64, x1);
        _mm512_store_si512(d + k + 128, x2);
        _mm512_store_si512(d + k + 192, x3);
      }
    }
    __asm__ volatile("" : : : "memory");
  }
}

/* Copies with zmm loads and streaming stores; fenced at the end. */
static void tl_probe_avx512_nt_copy(void *dst, const void *src, size_t bytes, int64_t passes) {
  for (int64_t r = 0; r < passes; r++) {
    for (size_t i = 0; i < bytes; i += TL_PROBE_CHUNK) {
      const char *s = (const char *)src + i;
      char *d = (char *)dst + i;
      for (int k = 0; k < TL_PROBE_CHUNK; k += 256) {
        __m512i x0 = _mm512_load_si512(s + k), x1 = _mm512_load_si512(s + k + 64);
        __m512i x2 = _mm512_load_si512(s + k + 128), x3 = _mm512_load_si512(s + k + 192);
        _mm512_stream_si512((__m512i *)(d + k), x0);
        _mm512_stream_si512((__m512i *)(d + k + 64), x1);
        _mm512_stream_si512((__m512i *)(d + k + 128), x2);
        _mm512_stream_si512((__m512i *)(d + k + 192), x3);
      }
    }
    __asm__ volatile("" : : : "memory");
  }
  _mm_sfence();
}

static const tl_probe_unit tl_probe_avx512_units[] = {
    {"avx512-fma", TL_F32, tl_probe_avx512_fma},
};

const tl_probe_impl tl_probe_avx512_impl = {
    .isa = TL_ISA_AVX512,
    .nunits = (int)TL_ARRAY_LEN(tl_probe_avx512_units),
    .units = tl_probe_avx512_units,
    .read = tl_probe_avx512_read,
    .write = tl_probe_avx512_write,
    .copy = tl_probe_avx512_copy,
    .nt_copy = tl_probe_avx512_nt_copy,
};
