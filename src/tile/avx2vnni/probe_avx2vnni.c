/* probe_avx2vnni.c — the AVX-VNNI probe microkernel (contract in tile_impl.h): the "avx2-vnni"
 * unit, VEX VPDPBUSD on ymm (8 i32 lanes, each += 4 u8 x i8 products: 64 ops), measured from the
 * avx2vnni level up on CPUs that have AVX-VNNI (tl_probe_compute skips the level otherwise). 12
 * independent chains cover the latency (4-5 cycles) at two instructions per cycle and fit the 16
 * ymm registers VEX can name with the two operands. Operands are 1 in bytes, hidden from the
 * optimizer, and so are the accumulators (equal chains would be merged); they wrap harmlessly.
 * No bandwidth kernels (the avx2 level's serve). */
#include <immintrin.h>

#include "../tile_impl.h"

/* acc += dot4(u8 a, i8 b) per 32-bit lane, VEX encoded (the EVEX form needs AVX512-VNNI). */
#define TL_PV_STEP(c) __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(c) : "x"(a), "x"(b))

/* 12 chains of acc += dot4(u8, i8) -> i32. */
static double tl_probe_avx2vnni_dot(int64_t iters) {
  __m256i a = _mm256_set1_epi8(1), b = _mm256_set1_epi8(1);
  __asm__("" : "+x"(a), "+x"(b));
  __m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0;
  __m256i c6 = c0, c7 = c0, c8 = c0, c9 = c0, c10 = c0, c11 = c0;
  __asm__("" : "+x"(c0), "+x"(c1), "+x"(c2), "+x"(c3), "+x"(c4), "+x"(c5));
  __asm__("" : "+x"(c6), "+x"(c7), "+x"(c8), "+x"(c9), "+x"(c10), "+x"(c11));
  for (int64_t i = 0; i < iters; i++) {
    TL_PV_STEP(c0);
    TL_PV_STEP(c1);
    TL_PV_STEP(c2);
    TL_PV_STEP(c3);
    TL_PV_STEP(c4);
    TL_PV_STEP(c5);
    TL_PV_STEP(c6);
    TL_PV_STEP(c7);
    TL_PV_STEP(c8);
    TL_PV_STEP(c9);
    TL_PV_STEP(c10);
    TL_PV_STEP(c11);
  }
  __m256i s = _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(c0, c1), _mm256_add_epi32(c2, c3)),
                               _mm256_add_epi32(_mm256_add_epi32(c4, c5), _mm256_add_epi32(c6, c7)));
  s = _mm256_add_epi32(s, _mm256_add_epi32(_mm256_add_epi32(c8, c9), _mm256_add_epi32(c10, c11)));
  __asm__ volatile("" : : "x"(s));
  return (double)iters * 12 * 64;
}
#undef TL_PV_STEP

static const tl_probe_unit tl_probe_avx2vnni_units[] = {
    {"avx2-vnni", TL_I8, tl_probe_avx2vnni_dot},
};

const tl_probe_impl tl_probe_avx2vnni_impl = {
    .isa = TL_ISA_AVX2VNNI,
    .nunits = (int)TL_ARRAY_LEN(tl_probe_avx2vnni_units),
    .units = tl_probe_avx2vnni_units,
};
