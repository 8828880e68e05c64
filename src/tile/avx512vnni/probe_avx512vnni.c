/* probe_avx512vnni.c — the AVX512-VNNI probe microkernel (contract in tile_impl.h): the
 * "avx512-vnni" unit, measured from the avx512vnni level up. No bandwidth kernels (the avx512
 * level's serve).
 *
 * Op count, per instruction on zmm:
 *   VPDPBUSD: 16 i32 lanes, each += 4 u8 x i8 products -> 64 multiply-adds = 128 ops
 * 16 independent accumulator chains cover the latency (4-6 cycles) at up to two instructions per
 * cycle. Operands are 1 in bytes, hidden from the optimizer, and so are the accumulators (16
 * chains from equal values would otherwise be merged into one); they wrap harmlessly.
 */
#include <immintrin.h>

#include "../tile_impl.h"

/* 16 chains of acc += dot4(u8, i8) -> i32. */
static double tl_probe_avx512vnni_dot(int64_t iters) {
  __m512i a = _mm512_set1_epi8(1), b = _mm512_set1_epi8(1);
  __asm__("" : "+v"(a), "+v"(b));
  __m512i c0 = _mm512_setzero_si512(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
  __m512i c8 = c0, c9 = c0, c10 = c0, c11 = c0, c12 = c0, c13 = c0, c14 = c0, c15 = c0;
  __asm__("" : "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3), "+v"(c4), "+v"(c5), "+v"(c6), "+v"(c7));
  __asm__("" : "+v"(c8), "+v"(c9), "+v"(c10), "+v"(c11), "+v"(c12), "+v"(c13), "+v"(c14), "+v"(c15));
  for (int64_t i = 0; i < iters; i++) {
    c0 = _mm512_dpbusd_epi32(c0, a, b);
    c1 = _mm512_dpbusd_epi32(c1, a, b);
    c2 = _mm512_dpbusd_epi32(c2, a, b);
    c3 = _mm512_dpbusd_epi32(c3, a, b);
    c4 = _mm512_dpbusd_epi32(c4, a, b);
    c5 = _mm512_dpbusd_epi32(c5, a, b);
    c6 = _mm512_dpbusd_epi32(c6, a, b);
    c7 = _mm512_dpbusd_epi32(c7, a, b);
    c8 = _mm512_dpbusd_epi32(c8, a, b);
    c9 = _mm512_dpbusd_epi32(c9, a, b);
    c10 = _mm512_dpbusd_epi32(c10, a, b);
    c11 = _mm512_dpbusd_epi32(c11, a, b);
    c12 = _mm512_dpbusd_epi32(c12, a, b);
    c13 = _mm512_dpbusd_epi32(c13, a, b);
    c14 = _mm512_dpbusd_epi32(c14, a, b);
    c15 = _mm512_dpbusd_epi32(c15, a, b);
  }
  __m512i s0 = _mm512_add_epi32(_mm512_add_epi32(c0, c1), _mm512_add_epi32(c2, c3));
  __m512i s1 = _mm512_add_epi32(_mm512_add_epi32(c4, c5), _mm512_add_epi32(c6, c7));
  __m512i s2 = _mm512_add_epi32(_mm512_add_epi32(c8, c9), _mm512_add_epi32(c10, c11));
  __m512i s3 = _mm512_add_epi32(_mm512_add_epi32(c12, c13), _mm512_add_epi32(c14, c15));
  __m512i s = _mm512_add_epi32(_mm512_add_epi32(s0, s1), _mm512_add_epi32(s2, s3));
  __asm__ volatile("" : : "v"(s));
  return (double)iters * 16 * 128;
}

static const tl_probe_unit tl_probe_avx512vnni_units[] = {
    {"avx512-vnni", TL_I8, tl_probe_avx512vnni_dot},
};

const tl_probe_impl tl_probe_avx512vnni_impl = {
    .isa = TL_ISA_AVX512VNNI,
    .nunits = (int)TL_ARRAY_LEN(tl_probe_avx512vnni_units),
    .units = tl_probe_avx512vnni_units,
};
