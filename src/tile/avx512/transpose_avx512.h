/* transpose_avx512.h — how the dots stage a transposed b (b^T rows contiguous along k: a pair of
 * bf16 / a quad of int8 is one dword): a 16 x 16 dword transpose, and the staging built on it,
 * for dot_avx512bf16.c's panels and dot_amx.c's B tiles. AVX-512F by attribute as well as by the files' flags: the
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

/* Stages a transposed b for a dot: src holds ncols rows (the product's columns) of kb bytes of
 * k each, ldb bytes apart; each dword (a pair of bf16 / a quad of int8 along k) of row j goes to
 * dst + (j / 16) * cstride + g * gstride + (j % 16) * 4 for group g: 16 columns of one group side
 * by side. Columns 0 .. cols_out - 1 (a multiple of 16, >= ncols) and groups 0 .. rows - 1
 * (>= ceil(kb / 4)) are written, zero past ncols and past kb; a 16 x 16 dword transpose per
 * 16 x 16 block. The
 * AVX512-BF16 dot's panels (32 columns: cstride 64, gstride 128) and the AMX dot's B tiles
 * (cstride one tile, gstride 64) both take it. */
static inline __attribute__((target("avx512f,avx512bw"))) void tl_stage_bt_dwords(char *dst, const char *src, int64_t ldb,
                                                                                   int64_t kb, int64_t ncols, int64_t cols_out,
                                                                                   int64_t rows, int64_t cstride,
                                                                                   int64_t gstride) {
  for (int64_t c0 = 0; c0 < cols_out; c0 += 16)
    for (int64_t g0 = 0; g0 < rows; g0 += 16) {
      const int64_t left = kb - g0 * 4; /* bytes of k left from this group on */
      const __mmask64 km = left >= 64 ? ~(__mmask64)0 : left <= 0 ? 0 : (((__mmask64)1 << left) - 1);
      __m512i v[16];
      for (int64_t r = 0; r < 16; r++)
        v[r] = c0 + r < ncols ? _mm512_maskz_loadu_epi8(km, src + (c0 + r) * ldb + g0 * 4) : _mm512_setzero_si512();
      tl_t16_epi32(v);
      const int64_t ng = rows - g0 < 16 ? rows - g0 : 16;
      for (int64_t g = 0; g < ng; g++) _mm512_storeu_si512(dst + (c0 / 16) * cstride + (g0 + g) * gstride, v[g]);
    }
}

#endif /* TL_TRANSPOSE_AVX512_H */
