/* probe_avx512bf16.c — the AVX512-BF16 probe microkernel (contract in tile_impl.h): the
 * "avx512-bf16" unit (the "avx512-vnni" unit is the avx512vnni level's, probe_avx512vnni.c). No
 * bandwidth kernels (the avx512 level's serve).
 *
 * Op count, per instruction on zmm:
 *   VDPBF16PS: 16 f32 lanes, each += 2 bf16 products        -> 32 multiply-adds = 64 ops
 * 16 independent accumulator chains cover the latency (4-6 cycles) at up to two instructions per
 * cycle. Operands are 1.0 in bf16, hidden from the optimizer, and so are the accumulators (16
 * chains from equal values would otherwise be merged into one); they grow by 2 a step and stall
 * far below inf (never denormal).
 */
#include <immintrin.h>

#include "../tile_impl.h"

/* 16 chains of acc += dot2(a, b) in bf16 -> f32. */
static double tl_probe_avx512bf16_dot(int64_t iters) {
  __m512i ai = _mm512_set1_epi32(0x3F803F80), bi = _mm512_set1_epi32(0x3F803F80); /* bf16 1.0 pairs */
  __asm__("" : "+v"(ai), "+v"(bi));
  __m512bh a = (__m512bh)ai, b = (__m512bh)bi;
  __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
  __m512 c8 = c0, c9 = c0, c10 = c0, c11 = c0, c12 = c0, c13 = c0, c14 = c0, c15 = c0;
  /* Equal chains would be merged into one (CSE): make each accumulator opaque. */
  __asm__("" : "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3), "+v"(c4), "+v"(c5), "+v"(c6), "+v"(c7));
  __asm__("" : "+v"(c8), "+v"(c9), "+v"(c10), "+v"(c11), "+v"(c12), "+v"(c13), "+v"(c14), "+v"(c15));
  for (int64_t i = 0; i < iters; i++) {
    c0 = _mm512_dpbf16_ps(c0, a, b);
    c1 = _mm512_dpbf16_ps(c1, a, b);
    c2 = _mm512_dpbf16_ps(c2, a, b);
    c3 = _mm512_dpbf16_ps(c3, a, b);
    c4 = _mm512_dpbf16_ps(c4, a, b);
    c5 = _mm512_dpbf16_ps(c5, a, b);
    c6 = _mm512_dpbf16_ps(c6, a, b);
    c7 = _mm512_dpbf16_ps(c7, a, b);
    c8 = _mm512_dpbf16_ps(c8, a, b);
    c9 = _mm512_dpbf16_ps(c9, a, b);
    c10 = _mm512_dpbf16_ps(c10, a, b);
    c11 = _mm512_dpbf16_ps(c11, a, b);
    c12 = _mm512_dpbf16_ps(c12, a, b);
    c13 = _mm512_dpbf16_ps(c13, a, b);
    c14 = _mm512_dpbf16_ps(c14, a, b);
    c15 = _mm512_dpbf16_ps(c15, a, b);
  }
  __m512 s0 = _mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3));
  __m512 s1 = _mm512_add_ps(_mm512_add_ps(c4, c5), _mm512_add_ps(c6, c7));
  __m512 s2 = _mm512_add_ps(_mm512_add_ps(c8, c9), _mm512_add_ps(c10, c11));
  __m512 s3 = _mm512_add_ps(_mm512_add_ps(c12, c13), _mm512_add_ps(c14, c15));
  __m512 s = _mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3));
  __asm__ volatile("" : : "v"(s));
  return (double)iters * 16 * 64;
}

static const tl_probe_unit tl_probe_avx512bf16_units[] = {
    {"avx512-bf16", TL_BF16, tl_probe_avx512bf16_dot},
};

const tl_probe_impl tl_probe_avx512bf16_impl = {
    .isa = TL_ISA_AVX512BF16,
    .nunits = (int)TL_ARRAY_LEN(tl_probe_avx512bf16_units),
    .units = tl_probe_avx512bf16_units,
};
