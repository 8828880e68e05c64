/* hooks_avx2.h — the AVX2 settings of the row code (src/tile/vec_hooks.h) and the rows kernels'
 * streaming stores, for the AVX2 instance files (rows_avx2.c, attn_avx2.c): the row code's
 * vectors are 8 lanes wide, one ymm register each (16-lane GNU C vectors have no register here:
 * GCC 12 kept them on the stack, 5-30x the AVX-512 instance's cycles per element), max and min
 * are single instructions, bf16 loads widen in one instruction, bf16 stores round in AVX2
 * integer steps, and exp's 2^n is one multiply unless a lane's 2^n is denormal. */
#ifndef TL_HOOKS_AVX2_H
#define TL_HOOKS_AVX2_H

#include <immintrin.h>

#define TL_RK_W 8

/* vmaxps / vminps: the second operand when either is NaN, as vec_hooks.h asks. */
#define TL_RK_MAXPS(a, b) ((tl_rkv)_mm256_max_ps((__m256)(a), (__m256)(b)))
#define TL_RK_MINPS(a, b) ((tl_rkv)_mm256_min_ps((__m256)(a), (__m256)(b)))

/* bf16 -> f32 as one vpmovzxwd and a shift (GCC 12 widens the GNU C vector in two halves: four
 * instructions). */
#define TL_RK_FROM_BF16(h) ((tl_rkv)_mm256_slli_epi32(_mm256_cvtepu16_epi32((__m128i)(h)), 16))

/* Any lane of a comparison's result set (vmovmskps): exp's 2^n is then one multiply unless a
 * lane's 2^n would be denormal (vec_hooks.h's tl_rk_ldexp_normal). */
#define TL_RK_ANY(m) (_mm256_movemask_ps((__m256)(m)) != 0)

/* f32 -> bf16 rounded to nearest even, NaN made quiet (tl_vf32_to_bf16's bits, denormals kept),
 * still in 32-bit lanes: ten instructions for two vectors' worth fewer than the generic code,
 * whose unsigned NaN test and truncating narrowing cost five more per vector. */
static inline __attribute__((always_inline)) __m256i tl_rk_avx2_bf16_lanes(__m256 x) {
  const __m256i u = _mm256_castps_si256(x), hi = _mm256_srli_epi32(u, 16);
  const __m256i lsb = _mm256_and_si256(hi, _mm256_set1_epi32(1));
  const __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
  const __m256i q = _mm256_or_si256(hi, _mm256_set1_epi32(0x40));
  return _mm256_castps_si256(
      _mm256_blendv_ps(_mm256_castsi256_ps(r), _mm256_castsi256_ps(q), _mm256_cmp_ps(x, x, _CMP_UNORD_Q)));
}
static inline __attribute__((always_inline)) __m128i tl_rk_avx2_to_bf16(__m256 x) {
  const __m256i r = tl_rk_avx2_bf16_lanes(x);
  return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}
/* Two vectors as 16 bf16 in order (the pack interleaves 128-bit halves; the permute undoes it). */
static inline __attribute__((always_inline)) __m256i tl_rk_avx2_to_bf16x2(__m256 x0, __m256 x1) {
  return _mm256_permute4x64_epi64(_mm256_packus_epi32(tl_rk_avx2_bf16_lanes(x0), tl_rk_avx2_bf16_lanes(x1)), 0xd8);
}
#define TL_RK_TO_BF16(v) ((tl_rkh)tl_rk_avx2_to_bf16((__m256)(v)))

/* Streaming stores: 8 floats (32 bytes), 8 bf16 (16 bytes), and 16 bf16 converted from two
 * vectors as one 32-byte store. */
#define TL_RK_NT_F32(p, v) _mm256_stream_ps((float *)(p), (__m256)(v))
#define TL_RK_NT_BF16(p, h) _mm_stream_si128((__m128i *)(void *)(p), (__m128i)(h))
#define TL_RK_NT_BF16X2(p, v0, v1) \
  _mm256_stream_si256((__m256i *)(void *)(p), tl_rk_avx2_to_bf16x2((__m256)(v0), (__m256)(v1)))
#define TL_RK_NT_FENCE() _mm_sfence()

#endif /* TL_HOOKS_AVX2_H */
