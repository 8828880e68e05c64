/* hooks_avx2.h — the AVX2 definitions of the row-code hooks (src/tile/vec_hooks.h) and of the
 * rows kernels' streaming stores, for the AVX2 instance files (rows_avx2.c, attn_avx2.c): a
 * 16-lane tl_vf32 is two ymm registers, and GNU C comparisons on it would be split into scalar
 * code by GCC 12, so max, min and exp's scaling are spelled with AVX2 intrinsics per half. */
#ifndef TL_HOOKS_AVX2_H
#define TL_HOOKS_AVX2_H

#include <immintrin.h>
#include <string.h>

#include <tilec_vec.h>

#pragma GCC diagnostic ignored "-Wpsabi"

/* A 16-lane vector as its two ymm halves. */
typedef union tl_rows_avx2_u {
  tl_vf32 v;
  __m256 h[2];
} tl_rows_avx2_u;

static inline __attribute__((always_inline)) tl_vf32 tl_rows_avx2_max(tl_vf32 a, tl_vf32 b) {
  tl_rows_avx2_u x = {a}, y = {b};
  x.h[0] = _mm256_max_ps(x.h[0], y.h[0]), x.h[1] = _mm256_max_ps(x.h[1], y.h[1]);
  return x.v;
}

static inline __attribute__((always_inline)) tl_vf32 tl_rows_avx2_min(tl_vf32 a, tl_vf32 b) {
  tl_rows_avx2_u x = {a}, y = {b};
  x.h[0] = _mm256_min_ps(x.h[0], y.h[0]), x.h[1] = _mm256_min_ps(x.h[1], y.h[1]);
  return x.v;
}

/* p * 2^n: the exponent built per half (n integral, in [-150, 128]), in two steps as the
 * generic code. */
static inline __attribute__((always_inline)) tl_vf32 tl_rows_avx2_ldexp(tl_vf32 p, tl_vf32 n) {
  tl_rows_avx2_u x = {p}, y = {n};
  for (int k = 0; k < 2; k++) {
    __m256i ni = _mm256_cvtps_epi32(y.h[k]);
    __m256i n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, _mm256_set1_epi32(127)), 23));
    __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, _mm256_set1_epi32(127)), 23));
    x.h[k] = _mm256_mul_ps(_mm256_mul_ps(x.h[k], s1), s2);
  }
  return x.v;
}

#define TL_RK_NT_F32(p, v)                                                         \
  do {                                                                             \
    tl_rows_avx2_u tl_nt_u_ = {(v)};                                               \
    _mm256_stream_ps((float *)(p), tl_nt_u_.h[0]);                                 \
    _mm256_stream_ps((float *)(p) + 8, tl_nt_u_.h[1]);                             \
  } while (0)
#define TL_RK_NT_BF16(p, h) _mm256_stream_si256((__m256i *)(void *)(p), (__m256i)(h))
#define TL_RK_NT_FENCE() _mm_sfence()
/* The selections as two vmaxps / vminps on the halves (see rows_kern.h). */
#define TL_RK_MAXPS(a, b) tl_rows_avx2_max((a), (b))
#define TL_RK_MINPS(a, b) tl_rows_avx2_min((a), (b))
#define TL_RK_LDEXP(p, n) tl_rows_avx2_ldexp((p), (n))

#endif /* TL_HOOKS_AVX2_H */
