/* dot_avx2_i8.c — tl_tile_dot for 8-bit integers on AVX2: acc (+)= a @ b, acc i32, a and b u8 or
 * i8 in any mix, at the avx2 level (avx2vnni takes the mixes VPDPBUSD can, on CPUs with
 * AVX-VNNI; the AVX-512 levels widen on zmm themselves, dot_avx512_i8.c).
 *
 * Contract (docs/kernels.md, "Tile dot"): called through tl_avx2_dot after tile.c's checks; a
 * row-major with unit column stride (else 0: the scalar path takes it), acc row-major with unit
 * column stride, b in any accepted layout. Per chunk of TL_A2Q_MC rows of a and TL_A2Q_KC of k,
 * a's pairs (k, k + 1) are widened to 16 bits and packed into one 32-bit word per pair (16 KiB of
 * stack), each 16-column panel of b into rows of 16 such pairs (4 KiB; vector paths for
 * tl_matmul's vnni 4 tiles of 16 columns and for row-major b, element by element otherwise), and
 * a 6x16 kernel multiplies them with VPMADDWD (two exact products summed per 32-bit lane: |a b|
 * <= 255 * 255) and adds with VPADDD.
 *
 * Invariants:
 * - int32 arithmetic that wraps: exact modulo 2^32, equal to the scalar reference (which sums in
 *   int64 and saturates) whenever the true result fits in int32 — the contract of VPDPBUSD's
 *   level too.
 * - acc is read only with TL_DOT_ACCUMULATE; nothing outside acc's M x N elements is read or
 *   written (masked loads and stores at the N edge); a is never read past column K - 1, b only
 *   at elements (k, j) with k < K, j < N.
 * - No allocation, no locks; at most 20 KiB of stack.
 */
#include <immintrin.h>
#include <string.h>

#include "avx2_impl.h"

#define TL_A2Q_MR 6
#define TL_A2Q_NR 16
#define TL_A2Q_KC 128 /* even: whole pairs per chunk */
#define TL_A2Q_MC 64

/* 16 bytes widened to 16 x 16 bits (signed or not). */
static inline __m256i tl_a2q_widen(__m128i x, int sgn) { return sgn ? _mm256_cvtepi8_epi16(x) : _mm256_cvtepu8_epi16(x); }

/* Stages b(k0..k0+kc, j0..j0+nr) as kc / 2 (rounded up) rows of 16 pair words (16-bit b(k, j) low,
 * b(k + 1, j) high; zero past kc and past nr). */
static void tl_a2q_stage_b(int32_t *buf, const tl_ref *b, int tb, int64_t k0, int64_t kc, int64_t j0, int64_t nr) {
  const tl_layout l = b->layout;
  const int sgn = b->dtype == TL_I8;
  int64_t p = 0;
  if (!tb && l.tiled && l.vnni == 4 && l.tile_c == TL_A2Q_NR && l.tile_r % 4 == 0 && k0 % 4 == 0 && nr == TL_A2Q_NR) {
    /* one tile row holds the quads (k..k+3) of 16 columns: widened, each column's two pairs are
     * adjacent words; even words (k, k+1) and odd ones (k+2, k+3) are gathered into two rows */
    const __m256i gather = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    for (; 2 * p + 4 <= kc; p += 2) {
      const uint8_t *row = (const uint8_t *)b->data + tl_tile_b_offset(b, 0, k0 + 2 * p, j0); /* quads from b(k, j0) */
      for (int h = 0; h < 2; h++) { /* columns 8h .. 8h + 7 */
        const __m256i x = _mm256_permutevar8x32_epi32(tl_a2q_widen(_mm_loadu_si128((const __m128i *)(row + 32 * h)), sgn), gather);
        const __m256i y = _mm256_permutevar8x32_epi32(tl_a2q_widen(_mm_loadu_si128((const __m128i *)(row + 32 * h + 16)), sgn), gather);
        _mm256_store_si256((__m256i *)(buf + p * TL_A2Q_NR + 8 * h), _mm256_permute2x128_si256(x, y, 0x20));
        _mm256_store_si256((__m256i *)(buf + (p + 1) * TL_A2Q_NR + 8 * h), _mm256_permute2x128_si256(x, y, 0x31));
      }
    }
  } else if (!tb && !l.tiled && b->stride[1] == 1 && nr == TL_A2Q_NR) { /* two rows of 16 bytes interleaved */
    for (; 2 * p + 2 <= kc; p++) {
      const uint8_t *r0 = (const uint8_t *)b->data + (k0 + 2 * p) * b->stride[0] + j0;
      const __m256i x = tl_a2q_widen(_mm_loadu_si128((const __m128i *)r0), sgn);
      const __m256i y = tl_a2q_widen(_mm_loadu_si128((const __m128i *)(r0 + b->stride[0])), sgn);
      const __m256i lo = _mm256_unpacklo_epi16(x, y), hi = _mm256_unpackhi_epi16(x, y); /* per 128-bit lane */
      _mm256_store_si256((__m256i *)(buf + p * TL_A2Q_NR), _mm256_permute2x128_si256(lo, hi, 0x20));
      _mm256_store_si256((__m256i *)(buf + p * TL_A2Q_NR + 8), _mm256_permute2x128_si256(lo, hi, 0x31));
    }
  }
  tl_tile_i8_pairs(buf, TL_A2Q_NR, b, tb, k0, kc, j0, nr, p); /* the rest element by element */
}

/* The kernel: c[0..mr) x [0..16) (+)= pairs of a (np words per row, row stride lda words) x the
 * staged panel, lanes limited by m0 / m1. mr is a compile-time constant at every call. */
static inline __attribute__((always_inline)) void tl_a2q_kern(int mr, int64_t np, const int32_t *a, int64_t lda,
                                                              const int32_t *b, int32_t *c, int64_t ldc, __m256i m0,
                                                              __m256i m1, int accum) {
  __m256i acc[TL_A2Q_MR][2];
#pragma GCC unroll 6
  for (int i = 0; i < TL_A2Q_MR; i++) {
    acc[i][0] = acc[i][1] = _mm256_setzero_si256();
    if (i < mr && accum) {
      acc[i][0] = _mm256_maskload_epi32(c + i * ldc, m0);
      acc[i][1] = _mm256_maskload_epi32(c + i * ldc + 8, m1);
    }
  }
  for (int64_t p = 0; p < np; p++) {
    const __m256i b0 = _mm256_load_si256((const __m256i *)(b + p * TL_A2Q_NR));
    const __m256i b1 = _mm256_load_si256((const __m256i *)(b + p * TL_A2Q_NR + 8));
#pragma GCC unroll 6
    for (int i = 0; i < TL_A2Q_MR; i++) {
      if (i >= mr) break;
      const __m256i av = _mm256_set1_epi32(a[i * lda + p]);
      acc[i][0] = _mm256_add_epi32(acc[i][0], _mm256_madd_epi16(av, b0));
      acc[i][1] = _mm256_add_epi32(acc[i][1], _mm256_madd_epi16(av, b1));
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < TL_A2Q_MR; i++) {
    if (i >= mr) break;
    _mm256_maskstore_epi32(c + i * ldc, m0, acc[i][0]);
    _mm256_maskstore_epi32(c + i * ldc + 8, m1, acc[i][1]);
  }
}

/* See the opening comment. Returns 1 when it did the work. */
int tl_avx2_dot_i8(tl_ref *acc, const tl_ref *a, const tl_ref *b, unsigned flags) {
  if (a->layout.tiled || a->stride[1] != 1 || acc->stride[1] != 1) return 0;
  const int tb = (flags & TL_DOT_TRANS_B) != 0, accum = (flags & TL_DOT_ACCUMULATE) != 0;
  const int64_t m = acc->shape[0], n = acc->shape[1], kk = a->shape[1], lda = a->stride[0], ldc = acc->stride[0];
  if (m == 0 || n == 0) return 1;
  const int sgn_a = a->dtype == TL_I8;
  int32_t *pc = (int32_t *)acc->data;
  _Alignas(64) int32_t af[TL_A2Q_MC * (TL_A2Q_KC / 2)];
  _Alignas(64) int32_t bp[(TL_A2Q_KC / 2) * TL_A2Q_NR];
  for (int64_t i0 = 0; i0 < m; i0 += TL_A2Q_MC) {
    const int64_t mc = m - i0 < TL_A2Q_MC ? m - i0 : TL_A2Q_MC;
    for (int64_t k0 = 0; k0 < kk || (k0 == 0 && kk == 0); k0 += TL_A2Q_KC) {
      const int64_t kc = kk - k0 < TL_A2Q_KC ? kk - k0 : TL_A2Q_KC, np = TL_CDIV(kc, 2);
      for (int64_t i = 0; i < mc; i++) { /* a's pairs as words: 16-bit a(i, k) low, a(i, k + 1) high */
        const uint8_t *src = (const uint8_t *)a->data + (i0 + i) * lda + k0;
        int32_t *dst = af + i * (TL_A2Q_KC / 2);
        int64_t p = 0;
        for (; 2 * p + 16 <= kc; p += 8) /* 16 bytes widened: 8 words */
          _mm256_store_si256((__m256i *)(dst + p), tl_a2q_widen(_mm_loadu_si128((const __m128i *)(src + 2 * p)), sgn_a));
        for (; p < np; p++) {
          const int32_t lo = sgn_a ? (int8_t)src[2 * p] : src[2 * p];
          const int32_t hi = 2 * p + 1 < kc ? (sgn_a ? (int8_t)src[2 * p + 1] : src[2 * p + 1]) : 0;
          dst[p] = (int32_t)((uint32_t)(uint16_t)lo | (uint32_t)hi << 16);
        }
      }
      for (int64_t j0 = 0; j0 < n; j0 += TL_A2Q_NR) {
        const int64_t nr = n - j0 < TL_A2Q_NR ? n - j0 : TL_A2Q_NR;
        if (np > 0) tl_a2q_stage_b(bp, b, tb, k0, kc, j0, nr);
        const __m256i m0 = tl_a2_mask(nr), m1 = tl_a2_mask(nr - 8);
        const int acc_k = accum || k0 > 0;
        for (int64_t r0 = 0; r0 < mc; r0 += TL_A2Q_MR) {
          const int64_t mr = mc - r0 < TL_A2Q_MR ? mc - r0 : TL_A2Q_MR;
          const int32_t *ar = af + r0 * (TL_A2Q_KC / 2);
          int32_t *cr = pc + (i0 + r0) * ldc + j0;
          switch (mr) {
          case 1: tl_a2q_kern(1, np, ar, TL_A2Q_KC / 2, bp, cr, ldc, m0, m1, acc_k); break;
          case 2: tl_a2q_kern(2, np, ar, TL_A2Q_KC / 2, bp, cr, ldc, m0, m1, acc_k); break;
          case 3: tl_a2q_kern(3, np, ar, TL_A2Q_KC / 2, bp, cr, ldc, m0, m1, acc_k); break;
          case 4: tl_a2q_kern(4, np, ar, TL_A2Q_KC / 2, bp, cr, ldc, m0, m1, acc_k); break;
          case 5: tl_a2q_kern(5, np, ar, TL_A2Q_KC / 2, bp, cr, ldc, m0, m1, acc_k); break;
          default: tl_a2q_kern(6, np, ar, TL_A2Q_KC / 2, bp, cr, ldc, m0, m1, acc_k); break;
          }
        }
      }
      if (kk == 0) break;
    }
  }
  return 1;
}
