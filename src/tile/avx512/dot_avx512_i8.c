/* dot_avx512_i8.c — tl_tile_dot for 8-bit integers on AVX-512 without VNNI (the avx512 level:
 * Skylake-SP, and the u8 x u8 mix that VPDPBUSD cannot take): acc (+)= a @ b, acc i32, a and b
 * u8 or i8 in any mix. The AVX2 dot's method (dot_avx2_i8.c) on zmm: per chunk of TL_A5Q_MC rows
 * of a and TL_A5Q_KC of k, a's pairs (k, k + 1) are widened to 16 bits and packed into one 32-bit
 * word per pair (32 KiB of stack), each 32-column panel of b into rows of 32 such pairs (16 KiB;
 * vector paths for tl_matmul's vnni 4 tiles of 16 columns and for row-major b, element by element
 * otherwise), and an 8x32 kernel multiplies them with VPMADDWD (two exact products summed per
 * 32-bit lane: |a b| <= 255 * 255) and adds with VPADDD.
 *
 * Contract (docs/kernels.md, "Tile dot"): called through tl_avx512_dot after tile.c's checks; a
 * row-major with unit column stride (else 0: the levels below take it), acc row-major with unit
 * column stride, b in any accepted layout. On a CPU with AVX-VNNI only u8 x u8 is taken here: the
 * other mixes are faster on the avx2vnni level below (a cap of avx512 on such a CPU: Zen 4/5).
 *
 * Invariants:
 * - int32 arithmetic that wraps: exact modulo 2^32, equal to the scalar reference (which sums in
 *   int64 and saturates) whenever the true result fits in int32, as on every level.
 * - acc is read only with TL_DOT_ACCUMULATE; nothing outside acc's M x N elements is read or
 *   written (masked loads and stores at the N edge); a is never read past column K - 1 (masked
 *   loads), b only at elements (k, j) with k < K, j < N, plus the padding of its tiles (allocated
 *   with the tiles: tile rows are whole 64-byte loads).
 * - No allocation, no locks; 48 KiB of stack.
 */
#include <immintrin.h>
#include <string.h>

#include "../tile_impl.h"

#define TL_A5Q_MR 8
#define TL_A5Q_NR 32
#define TL_A5Q_KC 256 /* even: whole pairs per chunk */
#define TL_A5Q_MC 64
#define TL_A5Q_NP (TL_A5Q_KC / 2) /* pair words per row of a chunk */

/* Mask of the first n (clamped to 0..16) lanes. */
static inline __mmask16 tl_a5q_mask(int64_t n) {
  return n >= 16 ? (__mmask16)0xFFFF : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1u);
}

/* 32 bytes widened to 32 x 16 bits (signed or not); bytes outside m read as zero. */
static inline __m512i tl_a5q_widen(const uint8_t *p, __mmask32 m, int sgn) {
  const __m256i x = _mm256_maskz_loadu_epi8(m, p);
  return sgn ? _mm512_cvtepi8_epi16(x) : _mm512_cvtepu8_epi16(x);
}

/* Stages b(k0..k0+kc, j0..j0+nr) as kc / 2 (rounded up) rows of 32 pair words (16-bit b(k, j)
 * low, b(k + 1, j) high; zero past kc and past nr). */
static void tl_a5q_stage_b(int32_t *buf, const tl_ref *b, int tb, int64_t k0, int64_t kc, int64_t j0, int64_t nr) {
  const tl_layout l = b->layout;
  const int sgn = b->dtype == TL_I8;
  int64_t p = 0;
  if (!tb && l.tiled && l.vnni == 4 && l.tile_c == 16 && l.tile_r % 4 == 0 && k0 % 4 == 0 && j0 % 16 == 0) {
    /* a tile row holds the quads (k..k+3) of 16 columns: widened, column c's pairs (k, k+1) and
     * (k+2, k+3) are words 2c and 2c + 1; the even ones of both halves make row p, the odd ones
     * row p + 1 (columns past nr: the tile's padding, never stored) */
    const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i od = _mm512_add_epi32(ev, _mm512_set1_epi32(1));
    for (; 2 * p + 4 <= kc; p += 2)
      for (int64_t h = 0; h < 2; h++) {
        if (16 * h >= nr) {
          _mm512_store_si512(buf + p * TL_A5Q_NR + 16 * h, _mm512_setzero_si512());
          _mm512_store_si512(buf + (p + 1) * TL_A5Q_NR + 16 * h, _mm512_setzero_si512());
          continue;
        }
        const uint8_t *row = (const uint8_t *)b->data + tl_tile_b_offset(b, 0, k0 + 2 * p, j0 + 16 * h);
        const __m512i x = tl_a5q_widen(row, ~(__mmask32)0, sgn), y = tl_a5q_widen(row + 32, ~(__mmask32)0, sgn);
        _mm512_store_si512(buf + p * TL_A5Q_NR + 16 * h, _mm512_permutex2var_epi32(x, ev, y));
        _mm512_store_si512(buf + (p + 1) * TL_A5Q_NR + 16 * h, _mm512_permutex2var_epi32(x, od, y));
      }
  } else if (!tb && !l.tiled && b->stride[1] == 1) { /* two rows of up to 32 bytes interleaved */
    const __mmask32 m = nr >= 32 ? ~(__mmask32)0 : (__mmask32)((1u << nr) - 1u);
    /* unpacks interleave within 128-bit lanes: lane L of lo holds columns 8L..8L+3, of hi 8L+4..7 */
    const __m512i i0 = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11), i1 = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
    for (; 2 * p + 2 <= kc; p++) {
      const uint8_t *r0 = (const uint8_t *)b->data + (k0 + 2 * p) * b->stride[0] + j0;
      const __m512i x = tl_a5q_widen(r0, m, sgn), y = tl_a5q_widen(r0 + b->stride[0], m, sgn);
      const __m512i lo = _mm512_unpacklo_epi16(x, y), hi = _mm512_unpackhi_epi16(x, y);
      _mm512_store_si512(buf + p * TL_A5Q_NR, _mm512_permutex2var_epi64(lo, i0, hi));
      _mm512_store_si512(buf + p * TL_A5Q_NR + 16, _mm512_permutex2var_epi64(lo, i1, hi));
    }
  }
  tl_tile_i8_pairs(buf, TL_A5Q_NR, b, tb, k0, kc, j0, nr, p); /* the rest element by element */
}

/* The kernel: c[0..mr) x [0..32) (+)= pairs of a (np words per row, row stride lda words) x the
 * staged panel, lanes limited by m0 / m1. mr is a compile-time constant at every call. */
static inline __attribute__((always_inline)) void tl_a5q_kern(int mr, int64_t np, const int32_t *a, int64_t lda,
                                                              const int32_t *b, int32_t *c, int64_t ldc, __mmask16 m0,
                                                              __mmask16 m1, int accum) {
  __m512i acc[TL_A5Q_MR][2];
#pragma GCC unroll 8
  for (int i = 0; i < TL_A5Q_MR; i++) {
    acc[i][0] = acc[i][1] = _mm512_setzero_si512();
    if (i < mr && accum) {
      acc[i][0] = _mm512_maskz_loadu_epi32(m0, c + i * ldc);
      acc[i][1] = _mm512_maskz_loadu_epi32(m1, c + i * ldc + 16);
    }
  }
  for (int64_t p = 0; p < np; p++) {
    const __m512i b0 = _mm512_load_si512(b + p * TL_A5Q_NR), b1 = _mm512_load_si512(b + p * TL_A5Q_NR + 16);
#pragma GCC unroll 8
    for (int i = 0; i < TL_A5Q_MR; i++) {
      if (i >= mr) break;
      const __m512i av = _mm512_set1_epi32(a[i * lda + p]);
      acc[i][0] = _mm512_add_epi32(acc[i][0], _mm512_madd_epi16(av, b0));
      acc[i][1] = _mm512_add_epi32(acc[i][1], _mm512_madd_epi16(av, b1));
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < TL_A5Q_MR; i++) {
    if (i >= mr) break;
    _mm512_mask_storeu_epi32(c + i * ldc, m0, acc[i][0]);
    _mm512_mask_storeu_epi32(c + i * ldc + 16, m1, acc[i][1]);
  }
}

/* See the opening comment. Returns 1 when it did the work. */
int tl_avx512_dot_i8(tl_ref *acc, const tl_ref *a, const tl_ref *b, unsigned flags) {
  if (a->layout.tiled || a->stride[1] != 1 || acc->stride[1] != 1) return 0;
  /* the mixes VPDPBUSD takes are avx2vnni's, where the CPU has it */
  if (!(a->dtype == TL_U8 && b->dtype == TL_U8) && tl_cpu_has(TL_FEAT_AVXVNNI)) return 0;
  const int tb = (flags & TL_DOT_TRANS_B) != 0, accum = (flags & TL_DOT_ACCUMULATE) != 0;
  const int64_t m = acc->shape[0], n = acc->shape[1], kk = a->shape[1], lda = a->stride[0], ldc = acc->stride[0];
  if (m == 0 || n == 0) return 1;
  const int sgn_a = a->dtype == TL_I8;
  int32_t *pc = (int32_t *)acc->data;
  _Alignas(64) int32_t af[TL_A5Q_MC * TL_A5Q_NP];
  _Alignas(64) int32_t bp[TL_A5Q_NP * TL_A5Q_NR];
  const int64_t pending = tl_prefetch_pending();
  const int64_t pq = pending ? TL_CDIV(pending, TL_CDIV(n, TL_A5Q_NR) * TL_MAX(1, TL_CDIV(kk, TL_A5Q_KC))) : 0;
  for (int64_t i0 = 0; i0 < m; i0 += TL_A5Q_MC) {
    const int64_t mc = m - i0 < TL_A5Q_MC ? m - i0 : TL_A5Q_MC;
    for (int64_t k0 = 0; k0 < kk || (k0 == 0 && kk == 0); k0 += TL_A5Q_KC) {
      const int64_t kc = kk - k0 < TL_A5Q_KC ? kk - k0 : TL_A5Q_KC, np = TL_CDIV(kc, 2);
      for (int64_t i = 0; i < mc; i++) { /* a's pairs as words: 16-bit a(i, k) low, a(i, k + 1) high */
        const uint8_t *src = (const uint8_t *)a->data + (i0 + i) * lda + k0;
        int32_t *dst = af + i * TL_A5Q_NP;
        for (int64_t p = 0; p < np; p += 16) { /* 32 bytes widened: 16 words (a partial last pair's high half 0) */
          const int64_t left = kc - 2 * p;
          _mm512_store_si512(dst + p, tl_a5q_widen(src + 2 * p, left >= 32 ? ~(__mmask32)0 : (__mmask32)((1u << left) - 1u), sgn_a));
        }
      }
      for (int64_t j0 = 0; j0 < n; j0 += TL_A5Q_NR) {
        const int64_t nr = n - j0 < TL_A5Q_NR ? n - j0 : TL_A5Q_NR;
        if (np > 0) tl_a5q_stage_b(bp, b, tb, k0, kc, j0, nr);
        const __mmask16 m0 = tl_a5q_mask(nr), m1 = tl_a5q_mask(nr - 16);
        const int acc_k = accum || k0 > 0;
        if (pq) tl_prefetch_pump(pq);
        for (int64_t r0 = 0; r0 < mc; r0 += TL_A5Q_MR) {
          const int64_t mr = mc - r0 < TL_A5Q_MR ? mc - r0 : TL_A5Q_MR;
          const int32_t *ar = af + r0 * TL_A5Q_NP;
          int32_t *cr = pc + (i0 + r0) * ldc + j0;
          switch (mr) {
          case 1: tl_a5q_kern(1, np, ar, TL_A5Q_NP, bp, cr, ldc, m0, m1, acc_k); break;
          case 2: tl_a5q_kern(2, np, ar, TL_A5Q_NP, bp, cr, ldc, m0, m1, acc_k); break;
          case 3: tl_a5q_kern(3, np, ar, TL_A5Q_NP, bp, cr, ldc, m0, m1, acc_k); break;
          case 4: tl_a5q_kern(4, np, ar, TL_A5Q_NP, bp, cr, ldc, m0, m1, acc_k); break;
          case 5: tl_a5q_kern(5, np, ar, TL_A5Q_NP, bp, cr, ldc, m0, m1, acc_k); break;
          case 6: tl_a5q_kern(6, np, ar, TL_A5Q_NP, bp, cr, ldc, m0, m1, acc_k); break;
          case 7: tl_a5q_kern(7, np, ar, TL_A5Q_NP, bp, cr, ldc, m0, m1, acc_k); break;
          default: tl_a5q_kern(8, np, ar, TL_A5Q_NP, bp, cr, ldc, m0, m1, acc_k); break;
          }
        }
      }
      if (kk == 0) break;
    }
  }
  return 1;
}
