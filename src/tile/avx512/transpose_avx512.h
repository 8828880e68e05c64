/* transpose_avx512.h — the 16 x 16 dword transpose the dots stage a transposed b with (b^T rows
 * contiguous along k: a pair of bf16 / a quad of int8 is one dword): dot_avx512bf16.c into its
 * panels, dot_amx.c into AMX B tiles. AVX-512F by attribute as well as by the files' flags: the
 * AMX tests compile dot_amx.c without them (tests/tile/amx_emu.h). */
#ifndef TL_TRANSPOSE_AVX512_H
#define TL_TRANSPOSE_AVX512_H

#include <immintrin.h>

/* 16 x 16 transpose of dwords: row r of the result is dword r of every v[0..15]. */
static inline __attribute__((target("avx512f"))) void tl_t16_epi32(__m512i *v) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(v[i], v[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(v[i], v[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    v[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    v[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    v[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    v[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  /* v[4q + x] holds dword x of the 128-bit lanes of rows 4q..4q+3: regroup the 128-bit lanes */
  for (int i = 0; i < 4; i++) {
    t[i] = _mm512_shuffle_i32x4(v[i], v[i + 4], 0x88);
    t[i + 4] = _mm512_shuffle_i32x4(v[i], v[i + 4], 0xDD);
    t[i + 8] = _mm512_shuffle_i32x4(v[i + 8], v[i + 12], 0x88);
    t[i + 12] = _mm512_shuffle_i32x4(v[i + 8], v[i + 12], 0xDD);
  }
  for (int i = 0; i < 4; i++) {
    v[i] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0x88);
    v[i + 8] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0xDD);
    v[i + 4] = _mm512_shuffle_i32x4(t[i + 4], t[i + 12], 0x88);
    v[i + 12] = _mm512_shuffle_i32x4(t[i + 4], t[i + 12], 0xDD);
  }
}

#endif /* TL_TRANSPOSE_AVX512_H */
