/* walk_avx512bf16.h — the bf16 walk of tl_tile_dot's AVX512-BF16 path (3-16 rows of acc against
 * a row-major b block from memory read in place: tl_bf_walk), split out of dot_avx512bf16.c by
 * concept. Included by dot_avx512bf16.c only (outside TL_BF_VNNI_ONLY), after the pair-order
 * helpers it uses (tl_bf_to_pairs, tl_bf_from_pairs) and tl_sweep_pf / the prefetch queue
 * (tile_impl.h); everything here is static to that translation unit. */
#ifndef TILEC_WALK_AVX512BF16_H
#define TILEC_WALK_AVX512BF16_H

/* ---- bf16, 3-16 rows, b row-major from memory: the walk ----
 *
 * A row-major b block past TL_BF_STREAM_BYTES against 3 to TL_TILE_WALK_M rows of a (tl_matmul's
 * K split gives each thread such a block of whole rows: matmul_split.c) is walked TL_BF_WALK_K
 * rows at a time over all its columns, in panels of 32 columns, as the 1-2-row walk does
 * (tl_bf_sweep), and before each panel the matching share of the next sweep's rows is prefetched
 * (tl_sweep_pf): memory sees one stream a sweep ahead, a contiguous one when b's rows are (the K
 * split's). In the last sweep the thread's prefetch queue is pumped instead (the K split queues
 * its next step's first rows there). a is packed once per TL_BF_WALK_KA k into its pairs, row
 * after row per pair (a's rows, often a multiple of 4 KiB apart, would share their L1 sets with
 * b's), and the accumulators stay in the lo / hi order of tl_bf_rm between the sweeps of a piece
 * (a panel's 32 columns of acc hold that order in memory: stored as they are and loaded back; the
 * panel at the N edge and the first and last sweeps of a piece convert). Each acc(i, j) still sums
 * the pairs (k, k + 1) of even k in increasing order from acc or zero: the sums of tl_bf_rm.
 * Measured against the chunks it replaced (the K split copying b 128 rows by 256 columns at a
 * time into VMEM for tl_bf_rm): docs/matmul.md "3-8 bf16 rows: the walk". 9-16 rows walk
 * TL_BF_WIDE_K rows a sweep with every row in registers over each panel (tl_bf_walk_wide; at the
 * N edge the 8-row kernel twice): as two 8-row blocks, each reading the panel's lines again from
 * L2, they measured slower than the chunks; this way faster (docs/matmul.md "9-16 rows: the
 * wide walks"). */
#define TL_BF_WALK_K 32
#define TL_BF_WALK_KA 1024
/* 9-16 rows a sweep: 16 (20 and 24 even, 8 and 32 slower: docs/matmul.md) */
#define TL_BF_WIDE_K 16

/* How a panel's accumulators start: zero, from acc in column order, from acc in pair order. */
enum { TL_BF_W_ZERO, TL_BF_W_COLS, TL_BF_W_PAIRS };

/* Rows [0, mr) of the accumulators (lo / hi order) += the pair of b rows r0, r1 (32 columns) times
 * a's pairs w[0..mr). */
static inline __attribute__((always_inline)) void tl_bf_walk_pair(int mr, __m512 *lo, __m512 *hi, __m512i r0, __m512i r1,
                                                                  const uint32_t *w) {
  const __m512i bl = _mm512_unpacklo_epi16(r0, r1), bh = _mm512_unpackhi_epi16(r0, r1);
#pragma GCC unroll 8
  for (int i = 0; i < 8; i++) {
    if (i >= mr) break;
    const __m512bh av = (__m512bh)_mm512_set1_epi32((int)w[i]);
    lo[i] = _mm512_dpbf16_ps(lo[i], av, (__m512bh)bl);
    hi[i] = _mm512_dpbf16_ps(hi[i], av, (__m512bh)bh);
  }
}

/* c[0..mr) x [0..32) (+)= a @ b over kc rows of b (ldb apart), a packed as pairs (word (p, i)
 * at ap[p * m + i], a zero high half past kc), columns masked by mk (all 32: a whole panel, which
 * keeps the pair order unless out_cols). mr is a compile-time constant (tl_bf_walk). */
static inline __attribute__((always_inline)) void tl_bf_walk_kern(int mr, int64_t kc, const uint32_t *ap, int64_t m,
                                                                  const uint16_t *b, int64_t ldb, float *c,
                                                                  int64_t ldc, __mmask32 mk, int in, int out_cols) {
  const int full = mk == ~(__mmask32)0;
  __m512 lo[8], hi[8];
  const __mmask16 m0 = (__mmask16)mk, m1 = (__mmask16)(mk >> 16);
#pragma GCC unroll 8
  for (int i = 0; i < 8; i++) {
    if (i >= mr) break;
    if (in == TL_BF_W_ZERO) lo[i] = hi[i] = _mm512_setzero_ps();
    else if (in == TL_BF_W_COLS || !full)
      tl_bf_to_pairs(_mm512_maskz_loadu_ps(m0, c + i * ldc), _mm512_maskz_loadu_ps(m1, c + i * ldc + 16), &lo[i], &hi[i]);
    else lo[i] = _mm512_loadu_ps(c + i * ldc), hi[i] = _mm512_loadu_ps(c + i * ldc + 16);
  }
  int64_t k = 0;
  for (; k + 1 < kc; k += 2) {
    const __m512i r0 = full ? _mm512_loadu_si512(b + k * ldb) : _mm512_maskz_loadu_epi16(mk, b + k * ldb);
    const __m512i r1 = full ? _mm512_loadu_si512(b + (k + 1) * ldb) : _mm512_maskz_loadu_epi16(mk, b + (k + 1) * ldb);
    tl_bf_walk_pair(mr, lo, hi, r0, r1, ap + (k >> 1) * m);
  }
  if (k < kc) /* the last k of an odd count: b's next row zero (a's second half is) */
    tl_bf_walk_pair(mr, lo, hi, _mm512_maskz_loadu_epi16(mk, b + k * ldb), _mm512_setzero_si512(), ap + (k >> 1) * m);
#pragma GCC unroll 8
  for (int i = 0; i < 8; i++) {
    if (i >= mr) break;
    if (out_cols || !full) {
      __m512 c0, c1;
      tl_bf_from_pairs(lo[i], hi[i], &c0, &c1);
      _mm512_mask_storeu_ps(c + i * ldc, m0, c0);
      _mm512_mask_storeu_ps(c + i * ldc + 16, m1, c1);
    } else {
      _mm512_storeu_ps(c + i * ldc, lo[i]);
      _mm512_storeu_ps(c + i * ldc + 16, hi[i]);
    }
  }
}

/* tl_bf_walk_kern for mr (1-8) rows, as a constant (inlined: a call per panel cost up to 5% of
 * 8 rows). */
static inline __attribute__((always_inline)) void tl_bf_walk_rows(int64_t mr, int64_t kc, const uint32_t *ap, int64_t m,
                                                                  const uint16_t *b, int64_t ldb, float *c, int64_t ldc,
                                                                  __mmask32 mk, int in, int out_cols) {
  switch (mr) {
#define TL_BF_WALK_CASE(MR) tl_bf_walk_kern(MR, kc, ap, m, b, ldb, c, ldc, mk, in, out_cols)
  case 1: TL_BF_WALK_CASE(1); break;
  case 2: TL_BF_WALK_CASE(2); break;
  case 3: TL_BF_WALK_CASE(3); break;
  case 4: TL_BF_WALK_CASE(4); break;
  case 5: TL_BF_WALK_CASE(5); break;
  case 6: TL_BF_WALK_CASE(6); break;
  case 7: TL_BF_WALK_CASE(7); break;
  default: TL_BF_WALK_CASE(8); break;
#undef TL_BF_WALK_CASE
  }
}

/* v[0..mr) += a's pair words w[0..mr), each broadcast, times the pair vector bv (one pair of k
 * for 16 columns; tl_bf_walk_wkern's two halves). */
static inline __attribute__((always_inline)) void tl_bf_walk_rows_step(int mr, __m512 *v, const uint32_t *w,
                                                                       __m512bh bv) {
#pragma GCC unroll 16
  for (int i = 0; i < 16; i++) {
    if (i >= mr) break;
    v[i] = _mm512_dpbf16_ps(v[i], (__m512bh)_mm512_set1_epi32((int)w[i]), bv);
  }
}

/* 9-16 rows over a whole panel of 32 columns, every row in registers (16 accumulators at most):
 * the lo pairs of the panel first, the hi pairs then, each half's accumulators in pair order at
 * c + 16 * half (zero when zero), += kc (at most TL_BF_WIDE_K) rows of b. The first half unpacks
 * both and keeps the hi pairs in hb for the second, so each line of b is loaded once: read again
 * from b, the lines (rows a multiple of 4 KiB apart, one L1 set) came back from L2 (bf16
 * 16x4096x4096 2.7-3.3 ms against 1.9-2.2 this way: docs/matmul.md). mr is a compile-time
 * constant (tl_bf_walk_wide). */
static inline __attribute__((always_inline)) void tl_bf_walk_wkern(int mr, int64_t kc, const uint32_t *ap, int64_t m,
                                                                   const uint16_t *b, int64_t ldb, float *c, int64_t ldc,
                                                                   int zero) {
  __m512 v[16];
  __m512i hb[TL_BF_WIDE_K / 2];
#pragma GCC unroll 16
  for (int i = 0; i < 16; i++) {
    if (i >= mr) break;
    v[i] = zero ? _mm512_setzero_ps() : _mm512_loadu_ps(c + i * ldc);
  }
  for (int64_t k = 0; k < kc; k += 2) {
    const __m512i r0 = _mm512_loadu_si512(b + k * ldb);
    const __m512i r1 = k + 1 < kc ? _mm512_loadu_si512(b + (k + 1) * ldb) : _mm512_setzero_si512();
    const __m512bh bv = (__m512bh)_mm512_unpacklo_epi16(r0, r1);
    hb[k >> 1] = _mm512_unpackhi_epi16(r0, r1);
    tl_bf_walk_rows_step(mr, v, ap + (k >> 1) * m, bv);
  }
#pragma GCC unroll 16
  for (int i = 0; i < 16; i++) {
    if (i >= mr) break;
    _mm512_storeu_ps(c + i * ldc, v[i]);
    v[i] = zero ? _mm512_setzero_ps() : _mm512_loadu_ps(c + i * ldc + 16);
  }
  for (int64_t k = 0; k < kc; k += 2) {
    tl_bf_walk_rows_step(mr, v, ap + (k >> 1) * m, (__m512bh)hb[k >> 1]);
  }
#pragma GCC unroll 16
  for (int i = 0; i < 16; i++) {
    if (i >= mr) break;
    _mm512_storeu_ps(c + i * ldc + 16, v[i]);
  }
}

/* 9-16 rows over a whole panel: c's rows [0, mr) x [0, 32) converted to pair order first (in
 * TL_BF_W_COLS), the two halves, and back to column order last (out_cols). */
static void tl_bf_walk_wide(int64_t mr, int64_t kc, const uint32_t *ap, int64_t m, const uint16_t *b, int64_t ldb,
                            float *c, int64_t ldc, int in, int out_cols) {
  if (in == TL_BF_W_COLS)
    for (int64_t i = 0; i < mr; i++) {
      __m512 lo, hi;
      tl_bf_to_pairs(_mm512_loadu_ps(c + i * ldc), _mm512_loadu_ps(c + i * ldc + 16), &lo, &hi);
      _mm512_storeu_ps(c + i * ldc, lo);
      _mm512_storeu_ps(c + i * ldc + 16, hi);
    }
  switch (mr) {
#define TL_BF_WIDE_CASE(MR) tl_bf_walk_wkern(MR, kc, ap, m, b, ldb, c, ldc, in == TL_BF_W_ZERO)
  case 9: TL_BF_WIDE_CASE(9); break;
  case 10: TL_BF_WIDE_CASE(10); break;
  case 11: TL_BF_WIDE_CASE(11); break;
  case 12: TL_BF_WIDE_CASE(12); break;
  case 13: TL_BF_WIDE_CASE(13); break;
  case 14: TL_BF_WIDE_CASE(14); break;
  case 15: TL_BF_WIDE_CASE(15); break;
  default: TL_BF_WIDE_CASE(16); break;
#undef TL_BF_WIDE_CASE
  }
  if (out_cols)
    for (int64_t i = 0; i < mr; i++) {
      __m512 c0, c1;
      tl_bf_from_pairs(_mm512_loadu_ps(c + i * ldc), _mm512_loadu_ps(c + i * ldc + 16), &c0, &c1);
      _mm512_storeu_ps(c + i * ldc, c0);
      _mm512_storeu_ps(c + i * ldc + 16, c1);
    }
}

/* acc (+)= a @ b for 3 to TL_TILE_WALK_M (16) rows of bf16 a and a row-major b (unit column
 * stride, read in place) from memory, kk > 0: the walk above. The dot takes it for any such block
 * past TL_BF_STREAM_BYTES; tl_matmul gives it the K split's (rows contiguous) and, rarely, an N
 * block of an unsplit plan (rows a row stride apart, unmeasured walked). */
static void tl_bf_walk(int64_t m, int64_t n, int64_t kk, const uint16_t *a, int64_t lda, const uint16_t *b, int64_t ldb,
                       float *c, int64_t ldc, int accum) {
  _Alignas(64) uint32_t ap[TL_TILE_WALK_M * TL_BF_WALK_KA / 2];
  /* (kk > 0: the caller's block is past TL_BF_STREAM_BYTES, so the first sweep writes every
   * element of acc) */
  for (int64_t p0 = 0; p0 < kk; p0 += TL_BF_WALK_KA) {
    const int64_t pk = TL_MIN(TL_BF_WALK_KA, kk - p0);
    for (int64_t q = 0; q < TL_CDIV(pk, 2); q++)
      for (int64_t i = 0; i < m; i++) {
        const uint16_t *ai = a + i * lda + p0 + 2 * q;
        ap[q * m + i] = (uint32_t)ai[0] | (2 * q + 1 < pk ? (uint32_t)ai[1] << 16 : 0u);
      }
    const int64_t wk = m > 8 ? TL_BF_WIDE_K : TL_BF_WALK_K;
    for (int64_t k0 = 0; k0 < pk; k0 += wk) {
      const int64_t kc = TL_MIN(wk, pk - k0), kn = p0 + k0 + kc;
      const int in = k0 > 0 ? TL_BF_W_PAIRS : p0 > 0 || accum ? TL_BF_W_COLS : TL_BF_W_ZERO;
      const int out_cols = k0 + kc >= pk;
      const int64_t pfrows = TL_MIN(wk, kk - kn);
      tl_sweep_pf pf = tl_sweep_pf_at(pfrows ? b + kn * ldb : b, pfrows, n * 2, ldb * 2);
      /* the last sweep: what the thread's queue holds (the K split's next step's first rows,
       * matmul_body.c), spread over the panels */
      const int64_t pending = pfrows ? 0 : tl_prefetch_pending(), pq = TL_CDIV(pending, TL_CDIV(n, 32));
      tl_pfq *pfq = pq ? tl_prefetch_queue() : NULL;
      const uint16_t *bk = b + (p0 + k0) * ldb;
      const uint32_t *ak = ap + (k0 >> 1) * m;
      for (int64_t j0 = 0; j0 < n; j0 += 32) {
        const int64_t w = TL_MIN(32, n - j0);
        const __mmask32 mk = w == 32 ? ~(__mmask32)0 : (__mmask32)((1u << w) - 1u);
        tl_sweep_pf_issue(&pf, pfrows * w * 2);
        if (pq) tl_prefetch_pump_q(pfq, pq);
        if (m > 8 && w == 32) {
          tl_bf_walk_wide(m, kc, ak, m, bk + j0, ldb, c + j0, ldc, in, out_cols);
        } else { /* up to 8 rows; past 8 at the N edge, rows 0-7 and then the rest (column order) */
          tl_bf_walk_rows(TL_MIN(m, 8), kc, ak, m, bk + j0, ldb, c + j0, ldc, mk, in, out_cols);
          if (m > 8) tl_bf_walk_rows(m - 8, kc, ak + 8, m, bk + j0, ldb, c + 8 * ldc + j0, ldc, mk, in, out_cols);
        }
      }
    }
  }
}

#endif
