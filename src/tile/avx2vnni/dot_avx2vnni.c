/* dot_avx2vnni.c — tl_tile_dot for 8-bit integers on AVX2 with AVX-VNNI (the avx2vnni level:
 * Alder Lake and later client cores, Sierra Forest, Zen 5): acc (+)= a @ b with the VEX VPDPBUSD
 * on ymm, four products of k per 32-bit lane where the avx2 level's VPMADDWD takes two.
 *
 * Contract (docs/kernels.md, "Tile dot"): called after tile.c's checks; takes acc i32 with a u8 x
 * b i8 (VPDPBUSD(acc, a, b)), a i8 x b u8 (the operands swapped: the product commutes) and i8 x i8
 * (a + 128 is u8: (a + 128) x b - 128 x colsum(b)); a row-major with unit column stride, acc with
 * unit column stride, b in any accepted layout. Declines (0: the avx2 level takes it) u8 x u8, any
 * other operand, and every call on a CPU without AVX-VNNI — the level is a side branch that the
 * AVX-512 levels pass through on CPUs that have AVX-512 and no AVX-VNNI (Ice Lake).
 * Per chunk of TL_V2_MC rows of a and TL_V2_KC of k, a's quads (k..k+3) are copied into one 32-bit
 * word per quad (32 KiB of stack; i8 x i8: each byte + 128), each 16-column panel of b into rows of
 * 16 quad words (8 KiB; tl_matmul's vnni 4 tiles of 16 columns copied whole, row-major b
 * interleaved by byte and word unpacks, anything else element by element; i8 x i8 also sums each
 * column), and a 6x16 kernel (12 ymm accumulators) multiplies them.
 *
 * Invariants:
 * - int32 arithmetic that wraps: exact modulo 2^32, equal to the scalar reference whenever the
 *   true result fits in int32, as on the other VNNI levels.
 * - acc is read only with TL_DOT_ACCUMULATE; nothing outside acc's M x N elements is read or
 *   written (masked loads and stores at the N edge); a is never read past column K - 1; b only at
 *   elements (k, j) with k < K, j < N, plus the padding of its tiles (whole 64-byte tile rows).
 * - No allocation, no locks; 40 KiB of stack.
 */
#include <immintrin.h>
#include <string.h>

#include "../avx2/avx2_impl.h"

#define TL_V2_MR 6
#define TL_V2_NR 16
#define TL_V2_KC 512 /* a multiple of 4: whole quads per chunk */
#define TL_V2_MC 64
#define TL_V2_NQ (TL_V2_KC / 4) /* quad words per row of a chunk */

/* How a quad enters the instruction (the product commutes; VPDPBUSD's first source is u8). */
enum { TL_V2_UB, TL_V2_BU, TL_V2_SS };

/* acc += dot4(u, s) per 32-bit lane: u's bytes unsigned, s's signed (VEX encoded). */
static inline __attribute__((always_inline)) __m256i tl_v2_dp(__m256i acc, __m256i u, __m256i s) {
  __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u), "x"(s));
  return acc;
}

/* Element (k, j) of b (any accepted layout), as its byte. */
static inline uint8_t tl_v2_b_at(const tl_ref *b, int tb, int64_t k, int64_t j) {
  return ((const uint8_t *)b->data)[tl_tile_b_offset(b, tb, k, j)];
}

/* Stages b(k0..k0+kc, j0..j0+nr) as kc / 4 (rounded up) rows of 16 quad words (byte t of word j:
 * b(k + t, j); zero past kc and past nr, tile padding where a tile row is copied whole), and for
 * ss the column sums of the staged rows into cs (8 + 8 lanes). */
static void tl_v2_stage_b(uint32_t *buf, __m256i *cs, const tl_ref *b, int tb, int64_t k0, int64_t kc, int64_t j0,
                          int64_t nr, int ss) {
  const tl_layout l = b->layout;
  const int64_t nq = TL_CDIV(kc, 4);
  int64_t q = 0;
  if (!tb && l.tiled && l.vnni == 4 && l.tile_c == TL_V2_NR && l.tile_r % 4 == 0 && k0 % 4 == 0 && j0 % 16 == 0) {
    for (; 4 * q + 4 <= kc; q++) { /* one tile row: the quads of 16 columns */
      const uint8_t *row = (const uint8_t *)b->data + tl_tile_b_offset(b, 0, k0 + 4 * q, j0);
      _mm256_store_si256((__m256i *)(buf + q * TL_V2_NR), _mm256_loadu_si256((const __m256i *)row));
      _mm256_store_si256((__m256i *)(buf + q * TL_V2_NR + 8), _mm256_loadu_si256((const __m256i *)(row + 32)));
    }
  } else if (!tb && !l.tiled && b->stride[1] == 1 && nr == TL_V2_NR) { /* four rows of 16 bytes interleaved */
    const int64_t ld = b->stride[0];
    for (; 4 * q + 4 <= kc; q++) {
      const uint8_t *r0 = (const uint8_t *)b->data + (k0 + 4 * q) * ld + j0;
      const __m128i x0 = _mm_loadu_si128((const __m128i *)r0), x1 = _mm_loadu_si128((const __m128i *)(r0 + ld));
      const __m128i x2 = _mm_loadu_si128((const __m128i *)(r0 + 2 * ld)), x3 = _mm_loadu_si128((const __m128i *)(r0 + 3 * ld));
      const __m128i t0 = _mm_unpacklo_epi8(x0, x1), t1 = _mm_unpackhi_epi8(x0, x1);
      const __m128i t2 = _mm_unpacklo_epi8(x2, x3), t3 = _mm_unpackhi_epi8(x2, x3);
      __m128i *o = (__m128i *)(buf + q * TL_V2_NR);
      _mm_store_si128(o, _mm_unpacklo_epi16(t0, t2));     /* columns 0-3 */
      _mm_store_si128(o + 1, _mm_unpackhi_epi16(t0, t2)); /* 4-7 */
      _mm_store_si128(o + 2, _mm_unpacklo_epi16(t1, t3)); /* 8-11 */
      _mm_store_si128(o + 3, _mm_unpackhi_epi16(t1, t3)); /* 12-15 */
    }
  }
  for (; q < nq; q++) /* the rest element by element */
    for (int64_t j = 0; j < TL_V2_NR; j++) {
      uint32_t w = 0;
      for (int t = 0; t < 4; t++)
        if (j < nr && 4 * q + t < kc) w |= (uint32_t)tl_v2_b_at(b, tb, k0 + 4 * q + t, j0 + j) << (8 * t);
      buf[q * TL_V2_NR + j] = w;
    }
  if (ss) { /* column sums: ones (u8) x b (s8); columns past nr are never stored */
    const __m256i ones = _mm256_set1_epi8(1);
    cs[0] = cs[1] = _mm256_setzero_si256();
    for (int64_t r = 0; r < nq; r++) {
      cs[0] = tl_v2_dp(cs[0], ones, _mm256_load_si256((const __m256i *)(buf + r * TL_V2_NR)));
      cs[1] = tl_v2_dp(cs[1], ones, _mm256_load_si256((const __m256i *)(buf + r * TL_V2_NR + 8)));
    }
  }
}

/* The kernel: c[0..mr) x [0..16) (+)= quads of a (nq words per row, row stride lda words) x the
 * staged panel, in mode (SS: minus 128 x the column sums cs), lanes limited by m0 / m1. mode and
 * mr are compile-time constants at every call. */
static inline __attribute__((always_inline)) void tl_v2_kern(int mode, int mr, int64_t nq, const uint32_t *a,
                                                             int64_t lda, const uint32_t *b, const __m256i *cs,
                                                             int32_t *c, int64_t ldc, __m256i m0, __m256i m1,
                                                             int accum) {
  __m256i acc[TL_V2_MR][2];
#pragma GCC unroll 6
  for (int i = 0; i < TL_V2_MR; i++) {
    acc[i][0] = acc[i][1] = _mm256_setzero_si256();
    if (i < mr && accum) {
      acc[i][0] = _mm256_maskload_epi32(c + i * ldc, m0);
      acc[i][1] = _mm256_maskload_epi32(c + i * ldc + 8, m1);
    }
  }
  for (int64_t q = 0; q < nq; q++) {
    const __m256i b0 = _mm256_load_si256((const __m256i *)(b + q * TL_V2_NR));
    const __m256i b1 = _mm256_load_si256((const __m256i *)(b + q * TL_V2_NR + 8));
#pragma GCC unroll 6
    for (int i = 0; i < TL_V2_MR; i++) {
      if (i >= mr) break;
      const __m256i av = _mm256_set1_epi32((int)a[i * lda + q]);
      if (mode == TL_V2_BU) {
        acc[i][0] = tl_v2_dp(acc[i][0], b0, av);
        acc[i][1] = tl_v2_dp(acc[i][1], b1, av);
      } else {
        acc[i][0] = tl_v2_dp(acc[i][0], av, b0);
        acc[i][1] = tl_v2_dp(acc[i][1], av, b1);
      }
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < TL_V2_MR; i++) {
    if (i >= mr) break;
    if (mode == TL_V2_SS) {
      acc[i][0] = _mm256_sub_epi32(acc[i][0], _mm256_slli_epi32(cs[0], 7));
      acc[i][1] = _mm256_sub_epi32(acc[i][1], _mm256_slli_epi32(cs[1], 7));
    }
    _mm256_maskstore_epi32(c + i * ldc, m0, acc[i][0]);
    _mm256_maskstore_epi32(c + i * ldc + 8, m1, acc[i][1]);
  }
}

/* One row block through the copy of the kernel for (mode, mr). */
static void tl_v2_rows(int mode, int64_t mr, int64_t nq, const uint32_t *a, const uint32_t *b, const __m256i *cs,
                       int32_t *c, int64_t ldc, __m256i m0, __m256i m1, int accum) {
#define TL_V2_MR_CASES(MODE)                                                                   \
  switch (mr) {                                                                                \
  case 1: tl_v2_kern(MODE, 1, nq, a, TL_V2_NQ, b, cs, c, ldc, m0, m1, accum); break;           \
  case 2: tl_v2_kern(MODE, 2, nq, a, TL_V2_NQ, b, cs, c, ldc, m0, m1, accum); break;           \
  case 3: tl_v2_kern(MODE, 3, nq, a, TL_V2_NQ, b, cs, c, ldc, m0, m1, accum); break;           \
  case 4: tl_v2_kern(MODE, 4, nq, a, TL_V2_NQ, b, cs, c, ldc, m0, m1, accum); break;           \
  case 5: tl_v2_kern(MODE, 5, nq, a, TL_V2_NQ, b, cs, c, ldc, m0, m1, accum); break;           \
  default: tl_v2_kern(MODE, 6, nq, a, TL_V2_NQ, b, cs, c, ldc, m0, m1, accum); break;          \
  }
  if (mode == TL_V2_UB) TL_V2_MR_CASES(TL_V2_UB)
  else if (mode == TL_V2_BU) TL_V2_MR_CASES(TL_V2_BU)
  else TL_V2_MR_CASES(TL_V2_SS)
#undef TL_V2_MR_CASES
}

/* tl_tile_dot's avx2vnni path (see the opening comment). Returns 1 when it did the work. */
int tl_avx2vnni_dot(tl_ref *acc, const tl_ref *a, const tl_ref *b, unsigned flags) {
  if (acc->dtype != TL_I32 || a->layout.tiled || a->stride[1] != 1 || acc->stride[1] != 1) return 0;
  int mode;
  if (a->dtype == TL_U8 && b->dtype == TL_I8) mode = TL_V2_UB;
  else if (a->dtype == TL_I8 && b->dtype == TL_U8) mode = TL_V2_BU;
  else if (a->dtype == TL_I8 && b->dtype == TL_I8) mode = TL_V2_SS;
  else return 0; /* u8 x u8 (and anything else): the avx2 level */
  if (!tl_cpu_has(TL_FEAT_AVXVNNI)) return 0; /* read on every call: tests may hide it, tl_cpu_hide */
  const int tb = (flags & TL_DOT_TRANS_B) != 0, accum = (flags & TL_DOT_ACCUMULATE) != 0;
  const int64_t m = acc->shape[0], n = acc->shape[1], kk = a->shape[1], lda = a->stride[0], ldc = acc->stride[0];
  if (m == 0 || n == 0) return 1;
  int32_t *pc = (int32_t *)acc->data;
  _Alignas(64) uint32_t af[TL_V2_MC * TL_V2_NQ];
  _Alignas(64) uint32_t bp[TL_V2_NQ * TL_V2_NR];
  __m256i cs[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
  const int64_t pending = tl_prefetch_pending();
  const int64_t pq = pending ? TL_CDIV(pending, TL_CDIV(n, TL_V2_NR) * TL_MAX(1, TL_CDIV(kk, TL_V2_KC))) : 0;
  const __m256i bias = _mm256_set1_epi8((char)0x80);
  for (int64_t i0 = 0; i0 < m; i0 += TL_V2_MC) {
    const int64_t mc = m - i0 < TL_V2_MC ? m - i0 : TL_V2_MC;
    for (int64_t k0 = 0; k0 < kk || (k0 == 0 && kk == 0); k0 += TL_V2_KC) {
      const int64_t kc = kk - k0 < TL_V2_KC ? kk - k0 : TL_V2_KC, nq = TL_CDIV(kc, 4);
      for (int64_t i = 0; i < mc; i++) { /* a's quads as words, zero past kc (i8 x i8: then + 128) */
        uint8_t *dst = (uint8_t *)(af + i * TL_V2_NQ);
        const uint8_t *src = (const uint8_t *)a->data + (i0 + i) * lda + k0;
        int64_t k = 0;
        for (; k + 32 <= kc; k += 32) _mm256_store_si256((__m256i *)(dst + k), _mm256_loadu_si256((const __m256i *)(src + k)));
        for (; k < kc; k++) dst[k] = src[k];
        for (; k < 4 * nq; k++) dst[k] = 0;
        if (mode == TL_V2_SS)
          for (k = 0; k < 4 * nq; k += 32) /* the padding too: 0x80 x a zero b adds nothing */
            _mm256_store_si256((__m256i *)(dst + k), _mm256_xor_si256(_mm256_load_si256((const __m256i *)(dst + k)), bias));
      }
      for (int64_t j0 = 0; j0 < n; j0 += TL_V2_NR) {
        const int64_t nr = n - j0 < TL_V2_NR ? n - j0 : TL_V2_NR;
        if (nq > 0) tl_v2_stage_b(bp, cs, b, tb, k0, kc, j0, nr, mode == TL_V2_SS);
        const __m256i m0 = tl_a2_mask(nr), m1 = tl_a2_mask(nr - 8);
        const int acc_k = accum || k0 > 0;
        if (pq) tl_prefetch_pump(pq);
        for (int64_t r0 = 0; r0 < mc; r0 += TL_V2_MR)
          tl_v2_rows(mode, TL_MIN(mc - r0, TL_V2_MR), nq, af + r0 * TL_V2_NQ, bp, cs, pc + (i0 + r0) * ldc + j0, ldc, m0,
                     m1, acc_k);
      }
      if (kk == 0) break;
    }
  }
  return 1;
}
