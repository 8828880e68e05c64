/* avx2_impl.h — what the AVX2 dots (dot_avx2.c, dot_avx2_i8.c) share. */
#ifndef TL_AVX2_IMPL_H
#define TL_AVX2_IMPL_H

#include <immintrin.h>

#include "../tile_impl.h"

/* Lane mask (all ones in lanes 0..n-1) for vmaskmov / vpmaskmov, n clamped to 0..8. */
static inline __m256i tl_a2_mask(int64_t n) {
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const int nn = n < 0 ? 0 : n > 8 ? 8 : (int)n;
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(nn), iota);
}

/* tl_tile_dot for 8-bit integers (dot_avx2_i8.c); called by tl_avx2_dot. */
int tl_avx2_dot_i8(tl_ref *acc, const tl_ref *a, const tl_ref *b, unsigned flags);

#endif
