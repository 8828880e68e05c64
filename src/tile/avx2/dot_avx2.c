/* dot_avx2.c — tl_tile_dot for f32 on AVX2 + FMA: acc (+)= a @ b with a 6x16 FMA microkernel;
 * bf16 x bf16 -> f32 through the same kernel on f32 copies (tl_a2_dot_bf16, below); 8-bit
 * integers in dot_avx2_i8.c.
 *
 * Contract (docs/kernels.md, "Tile dot"): called after tile.c's checks. Handles acc, a, b all
 * f32; a and acc row-major with unit column stride (any row stride); b row-major with unit column
 * stride (read in place for one row block of acc, TL_A2_MR rows, with a block of at most
 * TL_A2_STREAM_BYTES, or a small block that stays in L1, tl_tile_b_fits_l1; for 1-2 rows of acc, a
 * block past TL_A2_STREAM_BYTES walked a few rows at a time: tl_a2_stream; otherwise staged
 * TL_A2_SW columns at a time, tl_a2_dot_wide), 16-column
 * tiles without interleave (read in place), or TL_DOT_TRANS_B / other tilings / strided (a panel
 * of 16 columns x TL_A2_KC rows is staged on the stack first). Anything else returns 0 (the
 * scalar path takes it).
 *
 * Invariants:
 * - acc is read only with TL_DOT_ACCUMULATE; nothing outside acc's M x N elements is read or
 *   written (vmaskmov loads and stores at the N edge, which do not fault on masked lanes; a
 *   shorter row count at the M edge).
 * - Each acc(i, j) is one f32 sum in increasing k, started from acc(i, j) or 0, with fused
 *   multiply-adds.
 * - No allocation, no locks; the stack holds at most one 8 KiB panel, or it and the 32 KiB wide
 *   staging buffer of tl_a2_dot_wide below it (about 42 KiB of frames, f32), or 40 KiB of f32
 *   copies (bf16: a 64 x 128 chunk of a and a 128 x 16 panel of b; about 49 KiB of frames).
 */
#include <immintrin.h>

#include "avx2_impl.h"

/* Blocking: TL_A2_MR rows x TL_A2_NR columns of acc in 12 ymm registers over k; staged b panels
 * hold TL_A2_KC rows of TL_A2_NR columns. */
#define TL_A2_MR 6
#define TL_A2_NR 16
#define TL_A2_KC 128


/* Loads 8 floats: all of them when full (plain vmovups; vmaskmovps is much slower on some
 * cores), else the lanes of m. */
static inline __attribute__((always_inline)) __m256 tl_a2_load(int full, const float *p, __m256i m) {
  return full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, m);
}

/* Stores the lanes of m (all 8 when full). */
static inline __attribute__((always_inline)) void tl_a2_store(int full, float *p, __m256i m, __m256 v) {
  if (full)
    _mm256_storeu_ps(p, v);
  else
    _mm256_maskstore_ps(p, m, v);
}

/* The microkernel: c[0..mr) x [0..8*nv) (+)= a[0..mr) x [0..kc) @ b[0..kc) x [0..8*nv), lanes
 * limited by m0 and m1 (full: all 16 columns, masks unused). With pf, step k < pfk also
 * prefetches the 64-byte run at pf + k * pfld into L1 (both lines it may touch): the first row
 * block of a panel fetching the next chunk's columns. mr, nv and full are compile-time
 * constants at every call (tl_a2_block). */
static inline __attribute__((always_inline)) void tl_a2_kern(int full, int mr, int nv, int64_t kc, const float *a,
                                                             int64_t lda, const float *b, int64_t ldb,
                                                             float *c, int64_t ldc, __m256i m0,
                                                             __m256i m1, int accum, const char *pf, int64_t pfld,
                                                             int64_t pfk) {
  __m256 acc[TL_A2_MR][2];
#pragma GCC unroll 6
  for (int i = 0; i < TL_A2_MR; i++) {
    acc[i][0] = _mm256_setzero_ps();
    acc[i][1] = _mm256_setzero_ps();
    if (i < mr && accum) {
      acc[i][0] = tl_a2_load(full, c + i * ldc, m0);
      if (nv == 2) acc[i][1] = tl_a2_load(full, c + i * ldc + 8, m1);
    }
  }
  for (int64_t k = 0; k < kc; k++) {
    if (pf && k < pfk) {
      _mm_prefetch(pf + k * pfld, _MM_HINT_T0);
      _mm_prefetch(pf + k * pfld + 63, _MM_HINT_T0);
    }
    const __m256 b0 = tl_a2_load(full, b + k * ldb, m0);
    const __m256 b1 = nv == 2 ? tl_a2_load(full, b + k * ldb + 8, m1) : _mm256_setzero_ps();
#pragma GCC unroll 6
    for (int i = 0; i < TL_A2_MR; i++) {
      if (i >= mr) break;
      const __m256 ai = _mm256_broadcast_ss(a + i * lda + k);
      acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
      if (nv == 2) acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < TL_A2_MR; i++) {
    if (i >= mr) break;
    tl_a2_store(full, c + i * ldc, m0, acc[i][0]);
    if (nv == 2) tl_a2_store(full, c + i * ldc + 8, m1, acc[i][1]);
  }
}

/* One register block: dispatches (mr, nv) to a specialised copy of the microkernel; a block of
 * all 16 columns (nr == 16) runs the unmasked copies. */
static void tl_a2_block(int mr, int64_t nr, int64_t kc, const float *a, int64_t lda, const float *b,
                        int64_t ldb, float *c, int64_t ldc, __m256i m0, __m256i m1, int accum, const char *pf,
                        int64_t pfld, int64_t pfk) {
#define TL_A2_K(full, r, v) tl_a2_kern(full, r, v, kc, a, lda, b, ldb, c, ldc, m0, m1, accum, pf, pfld, pfk)
  if (nr == TL_A2_NR) {
    switch (mr) {
    case 1: TL_A2_K(1, 1, 2); break;
    case 2: TL_A2_K(1, 2, 2); break;
    case 3: TL_A2_K(1, 3, 2); break;
    case 4: TL_A2_K(1, 4, 2); break;
    case 5: TL_A2_K(1, 5, 2); break;
    default: TL_A2_K(1, 6, 2); break;
    }
    return;
  }
  const int nv = nr > 8 ? 2 : 1;
  switch (mr * 2 + nv - 1) {
  case 2: TL_A2_K(0, 1, 1); break;
  case 3: TL_A2_K(0, 1, 2); break;
  case 4: TL_A2_K(0, 2, 1); break;
  case 5: TL_A2_K(0, 2, 2); break;
  case 6: TL_A2_K(0, 3, 1); break;
  case 7: TL_A2_K(0, 3, 2); break;
  case 8: TL_A2_K(0, 4, 1); break;
  case 9: TL_A2_K(0, 4, 2); break;
  case 10: TL_A2_K(0, 5, 1); break;
  case 11: TL_A2_K(0, 5, 2); break;
  case 12: TL_A2_K(0, 6, 1); break;
  default: TL_A2_K(0, 6, 2); break;
  }
#undef TL_A2_K
}

/* Runs the row blocks of one panel: c[0..m) x [0..nr) (+)= a[0..m) x [0..kc) @ b (kc x nr); the
 * first one prefetches pf's rows (see tl_a2_kern; pf NULL: none). tl_a2_panel: no prefetch. */
static void tl_a2_panel_pf(int64_t m, int64_t nr, int64_t kc, const float *a, int64_t lda, const float *b,
                           int64_t ldb, float *c, int64_t ldc, int accum, const char *pf, int64_t pfld,
                           int64_t pfk) {
  const __m256i m0 = tl_a2_mask(nr), m1 = tl_a2_mask(nr - 8);
  for (int64_t i0 = 0; i0 < m; i0 += TL_A2_MR) {
    const int mr = (int)(m - i0 < TL_A2_MR ? m - i0 : TL_A2_MR);
    tl_a2_block(mr, nr, kc, a + i0 * lda, lda, b, ldb, c + i0 * ldc, ldc, m0, m1, accum, i0 == 0 ? pf : NULL, pfld, pfk);
  }
}
static void tl_a2_panel(int64_t m, int64_t nr, int64_t kc, const float *a, int64_t lda, const float *b,
                        int64_t ldb, float *c, int64_t ldc, int accum) {
  tl_a2_panel_pf(m, nr, kc, a, lda, b, ldb, c, ldc, accum, NULL, 0, 0);
}

/* A b block in place past this many bytes comes from memory: against 1-2 rows of acc it is
 * walked in row order (tl_a2_stream), as the AVX-512 dot walks it (dot_avx512.c); against 3-6
 * rows it goes through the wide staging as more rows do (tl_a2_dot_wide). */
#define TL_A2_STREAM_BYTES ((int64_t)1 << 20)
/* Rows of b per sweep of the walk. */
#define TL_A2_SR 4

/* The streaming walk (1-2 rows of acc, b row-major in place): TL_A2_SR rows of b per sweep over
 * all n columns, c carried in c between sweeps (each acc(i, j) the same sum in increasing k as
 * the panels give), the next sweep's rows prefetched as one run (tl_sweep_pf). The panels read
 * each 16-column strip of every row of b in turn, a row stride apart: on a Zen 5 VM at the avx2
 * level, 2 threads, f32 1x4096x4096 3.2 ms plain against 1.5 with b pre-packed. mr is a
 * compile-time constant at every call. */
static inline __attribute__((always_inline)) void tl_a2_stream(int mr, int64_t n, int64_t kk, const float *a,
                                                               int64_t lda, const float *b, int64_t ldb, float *c,
                                                               int64_t ldc, int accum) {
  for (int64_t k0 = 0; k0 < kk || (k0 == 0 && !accum); k0 += TL_A2_SR) {
    const int kr = (int)(kk - k0 < TL_A2_SR ? kk - k0 : TL_A2_SR); /* 0 only for kk == 0 */
    const int load = accum || k0 > 0;
    const int64_t kn = TL_MIN(TL_A2_SR, kk - k0 - TL_A2_SR); /* the next sweep's rows */
    tl_sweep_pf pf = tl_sweep_pf_at(kn > 0 ? b + (k0 + TL_A2_SR) * ldb : b, kn, n * 4, ldb * 4);
    __m256 av[2][TL_A2_SR];
#pragma GCC unroll 2
    for (int i = 0; i < 2; i++)
#pragma GCC unroll 4
      for (int q = 0; q < TL_A2_SR; q++) av[i][q] = _mm256_set1_ps(i < mr && q < kr ? a[i * lda + k0 + q] : 0.0f);
    const float *br = b + k0 * ldb;
    for (int64_t j = 0; j < n; j += 8) {
      const int full = n - j >= 8;
      const __m256i mk = tl_a2_mask(n - j);
      tl_sweep_pf_issue(&pf, kn * 32);
      __m256 bv[TL_A2_SR];
#pragma GCC unroll 4
      for (int q = 0; q < TL_A2_SR; q++) bv[q] = q < kr ? tl_a2_load(full, br + q * ldb + j, mk) : _mm256_setzero_ps();
#pragma GCC unroll 2
      for (int i = 0; i < 2; i++) {
        if (i >= mr) break;
        __m256 acc = load ? tl_a2_load(full, c + i * ldc + j, mk) : _mm256_setzero_ps();
#pragma GCC unroll 4
        for (int q = 0; q < TL_A2_SR; q++)
          if (q < kr) acc = _mm256_fmadd_ps(av[i][q], bv[q], acc);
        tl_a2_store(full, c + i * ldc + j, mk, acc);
      }
    }
    if (kr == 0) break;
  }
}

/* Row-major b against more than one row block of acc (unless small: tl_tile_b_fits_l1), or against
 * one of 3-6 rows with a block past TL_A2_STREAM_BYTES, is staged TL_A2_SW columns x TL_A2_WKC rows
 * at a time (32 KiB, L1-resident): each row of b is read as one run of TL_A2_SW floats (16 lines of
 * 64 bytes) into the 16-column panels that the row blocks then share, with the rows TL_A2_SPF ahead
 * prefetched (rows a row stride apart, each on its own page, which the hardware's prefetchers do
 * not cross), and the first row block of each panel prefetches the next chunk's 16 columns, a row
 * per k. Read in place, every row block walked the panel again a row stride apart, on lines that
 * share L1 and L2 sets for power-of-two strides. Measured (`TILEC_ISA=avx2 tilec bench gemm
 * --threads 2 --dtype f32 --peers none`, Zen 5 VM, 2 rounds): in place 16x4096x4096 7.8 ms,
 * 8x4096x4096 6.9, 16x4096x11008 20.9, 128x4096x4096 25.9; staged 128 x 128 at a time 3.9-4.1,
 * 3.2-3.3, 11.0, 19.1; 256 x 32 at a time 3.05, 2.2-2.4, 8.4-8.5, 19.4 (64 x 1024 x 1024 unchanged:
 * 0.63 ms). Chunks of 256 x 16 (8 rows 2.1-2.2 ms) made 128 rows slower (23.1-23.7: acc reloaded
 * every 16 k), 512 x 16, 128 x 32, 256 x 48 and 256 x 64 were slower at 16 rows (3.2-3.4, 3.4-3.5,
 * 3.3-3.4, 4.0); double-buffered staging interleaved with the row blocks gained nothing. Both
 * prefetches pay, though they reach the same rows (environment toggles, 3 rounds, 16x4096x4096 /
 * 16x4096x11008 / 8x4096x4096 ms): both 3.0-3.2 / 8.2-8.6 / 2.2-2.4; without the kernel's 4.0-4.1 /
 * 11.0-11.2 / 3.1-3.2; without the staging's 3.5 / 10.3-10.4 / 2.8-2.9. */
#define TL_A2_SW 256
#define TL_A2_WKC 32
#define TL_A2_SPF 32
/* From TL_A2_DEEP_M rows of acc (past the 3-31 rows that tl_matmul's sweep sends here from
 * memory) the same buffer holds TL_A2_DEEP_KC rows x 32 columns instead: with many row blocks the
 * kernel runs longer between reloads of its accumulators, and each row block's stretch of a is
 * 256 k. The 32-row chunks reloaded 12 accumulators every 32 k, for every row block of every
 * panel. `TILEC_ISA=avx2 tilec bench gemm --threads 2 --dtype f32 --peers none`, an environment
 * toggle in one build, 5 rounds, cold, medians of plain / pre-packed per round (the pre-packed
 * rows, unchanged, set the pace of each round on this noisy Zen 4 VM), 32-row chunks against
 * these: 128x4096x4096 1.51 -> 1.13 (33.1 -> 24.7 ms), 64 rows 1.09 -> 0.90 (17.0 -> 14.7), 32
 * rows 1.10 -> 1.02 (9.5 -> 8.8); warm (`--warm`) 128x1024x1024 1.42 -> 1.19, 96x2048x1024 1.48
 * -> 1.21, 64x1024x1024 1.06 -> 0.90, 32x1024x1024 1.10 -> 0.93. Below 32 rows (the sweep) it
 * lost: 24x4096x4096 1.10 -> 1.39, 31 rows 1.08 -> 1.27, 16x4096x11008 1.13 -> 1.63, 7x4096x4096
 * 1.03 -> 1.79. */
#define TL_A2_DEEP_M 32
#define TL_A2_DEEP_KC 256

/* Stages b(k0..k0+kc, j0..j0+w) (row-major, unit column stride, w * wkc <= TL_A2_SW * TL_A2_WKC)
 * as panels of kc rows x TL_A2_NR floats, panel p at buf + p * wkc * TL_A2_NR (a partial last panel's lanes
 * past w are zero); kk is b's row count (the prefetches stay inside b). Addresses are formed only
 * inside b's rows: at the N edge the second half is loaded only when it holds columns. */
static void tl_a2_stage_wide(float *buf, const float *b, int64_t ldb, int64_t kk, int64_t k0, int64_t kc, int64_t j0,
                             int64_t w, int64_t wkc) {
  const int np = (int)TL_CDIV(w, TL_A2_NR);
  for (int64_t k = 0; k < kc; k++) {
    const float *src = b + (k0 + k) * ldb + j0;
    if (k0 + k + TL_A2_SPF < kk) {
      const char *pf = (const char *)(src + TL_A2_SPF * ldb);
      for (int64_t x = 0; x < w * 4; x += 64) _mm_prefetch(pf + x, _MM_HINT_T0);
      _mm_prefetch(pf + w * 4 - 1, _MM_HINT_T0); /* the run's last line, when it is not 64-byte aligned */
    }
    for (int p = 0; p < np; p++) {
      float *dst = buf + p * wkc * TL_A2_NR + k * TL_A2_NR;
      const int64_t c = w - p * TL_A2_NR;
      if (c >= TL_A2_NR) {
        _mm256_store_ps(dst, _mm256_loadu_ps(src + p * TL_A2_NR));
        _mm256_store_ps(dst + 8, _mm256_loadu_ps(src + p * TL_A2_NR + 8));
      } else {
        _mm256_store_ps(dst, _mm256_maskload_ps(src + p * TL_A2_NR, tl_a2_mask(c)));
        _mm256_store_ps(dst + 8, c > 8 ? _mm256_maskload_ps(src + p * TL_A2_NR + 8, tl_a2_mask(c - 8)) : _mm256_setzero_ps());
      }
    }
  }
}

/* acc (+)= a @ b through the wide staging (see TL_A2_SW), b row-major with unit column stride
 * and kk >= 1, wkc rows of b a chunk (TL_A2_WKC, or TL_A2_DEEP_KC) over as many columns as the
 * buffer holds; out of line, so that its 32 KiB buffer is on the stack only while it runs. */
static __attribute__((noinline)) void tl_a2_dot_wide(int64_t m, int64_t n, int64_t kk, const float *pa, int64_t lda,
                                                     const float *pb, int64_t ldb, float *pc, int64_t ldc, int accum,
                                                     int64_t wkc) {
  const int64_t sw = TL_A2_WKC * TL_A2_SW / wkc;
  _Alignas(64) float wb[TL_A2_WKC * TL_A2_SW];
  for (int64_t j0 = 0; j0 < n; j0 += sw) {
    const int64_t w = TL_MIN(sw, n - j0);
    for (int64_t k0 = 0; k0 < kk; k0 += wkc) {
      const int64_t kc = TL_MIN(wkc, kk - k0);
      tl_a2_stage_wide(wb, pb, ldb, kk, k0, kc, j0, w, wkc);
      /* the next chunk (the next k rows of these columns, else the next columns' first rows):
       * the first row block of each panel prefetches its 16 columns of it, a row per k */
      const int64_t nk0 = k0 + kc < kk ? k0 + kc : 0, nj0 = k0 + kc < kk ? j0 : j0 + sw;
      const int64_t nkc = TL_MIN(wkc, kk - nk0), nw = TL_MIN(sw, n - nj0);
      for (int64_t p = 0; p * TL_A2_NR < w; p++) {
        const int pfon = nj0 < n && (p + 1) * TL_A2_NR <= nw; /* whole 16-column runs only */
        tl_a2_panel_pf(m, TL_MIN(TL_A2_NR, w - p * TL_A2_NR), kc, pa + k0, lda, wb + p * wkc * TL_A2_NR, TL_A2_NR,
                       pc + j0 + p * TL_A2_NR, ldc, accum || k0 > 0,
                       pfon ? (const char *)(pb + nk0 * ldb + nj0 + p * TL_A2_NR) : NULL, ldb * 4, nkc);
      }
    }
  }
}

/* Up to this many rows of acc, b in 16-column tiles is walked as the wide staging walks a
 * row-major one: TL_A2_WKC rows of every tile of the block, the next chunk prefetched by each
 * tile's first row block; from more rows, a whole tile row per tile (the accumulators reloaded
 * per chunk cost more than the walk gains). `TILEC_ISA=avx2 tilec bench gemm --threads 2 --dtype
 * f32 --peers none`, b pre-packed, 2 rounds: 8x4096x4096 2.75-2.80 -> 1.92-1.98 ms, 12 rows
 * 3.23-3.31 -> 2.36-2.46, 16 rows 3.64-3.68 -> 2.78-2.79, 16x4096x11008 9.54-9.60 -> 7.22-7.23,
 * 32 rows 6.11-6.15 -> 5.51-5.72, 64 rows 10.2-10.3 -> 9.9; 128 rows 18.1 -> 18.9-19.1 and 2048^3
 * 69.1-69.3 -> 74.8-76.2 (so not there); chunks of 64 rows gained less (16 rows 2.90-3.03). Up to
 * 64 rows until 2026-11-28, when the Zen 4 VM measured 32-64 rows faster by whole tile rows (an
 * environment toggle in one build, 7 rounds, cold, medians: 32x4096x4096 9.83 -> 7.28 ms, 40 rows
 * 11.8 -> 9.7, 64 rows 17.4 -> 12.8; 24 rows, walked either way, 1.10 of the plain product in
 * both), as the row-major b's deep chunks did (TL_A2_DEEP_M). */
#define TL_A2_TM 31

/* Address of b(k, j) for any accepted b: TL_DOT_TRANS_B ([N, K] row-major), row-major [K, N]
 * with any strides, or tiled (any vnni is honoured). */
static inline const float *tl_a2_b_at(const tl_ref *b, int tb, int64_t k, int64_t j) {
  return (const float *)b->data + tl_tile_b_offset(b, tb, k, j);
}

/* Stages b(k0..k0+kc, j0..j0+nr) as kc rows of TL_A2_NR floats (columns beyond nr untouched). */
static void tl_a2_stage_b(float *buf, const tl_ref *b, int tb, int64_t k0, int64_t kc, int64_t j0, int64_t nr) {
  if (tb && b->stride[1] == 1) {
    const float *bt = (const float *)b->data;
    for (int64_t j = 0; j < nr; j++) {
      const float *src = bt + (j0 + j) * b->stride[0] + k0;
      for (int64_t k = 0; k < kc; k++) buf[k * TL_A2_NR + j] = src[k];
    }
    return;
  }
  for (int64_t k = 0; k < kc; k++)
    for (int64_t j = 0; j < nr; j++) buf[k * TL_A2_NR + j] = *tl_a2_b_at(b, tb, k0 + k, j0 + j);
}

/* ---- bf16 x bf16 -> f32 without a bf16 unit: converted to f32 on the stack, the f32 kernel ----
 *
 * For the AVX2 levels (avx2, avx2vnni; the AVX-512 levels without AVX512-BF16 convert bf16
 * themselves, tl_a5_dot_bf16 in dot_avx512.c): per chunk of TL_A2_BF_MC rows of a and TL_A2_KC of k, a is converted into an f32 chunk
 * (32 KiB of stack) and each 16-column panel of b into an f32 panel (8 KiB), then the 6x16
 * microkernel runs on them. bf16 -> f32 is exact (the 16 bits shifted up) and so is each product;
 * each acc(i, j) is one f32 sum in increasing k with fused multiply-adds (VDPBF16PS adds each
 * pair k + 1 then k, so the two levels round differently); denormal bf16 inputs read as zero,
 * as on every level. */
#define TL_A2_BF_MC 64

/* 8 bf16 already in the high halves of v's dwords as f32, denormals read as zero. */
static inline __m256i tl_a2_bf_daz(__m256i v) {
  const __m256i den = _mm256_cmpeq_epi32(_mm256_and_si256(v, _mm256_set1_epi32(0x7F800000)), _mm256_setzero_si256());
  return _mm256_andnot_si256(_mm256_and_si256(den, _mm256_set1_epi32(0x7FFFFFFF)), v);
}

/* bf16 b(k, j) of any accepted b (see tl_a2_b_at), as f32. */
static inline float tl_a2_bf_at(const tl_ref *b, int tb, int64_t k, int64_t j) {
  return tl_tile_bf16_daz(((const uint16_t *)b->data)[tl_tile_b_offset(b, tb, k, j)]);
}

/* 8 bf16 at p (unaligned) as 8 f32, denormals read as zero. */
static inline __m256 tl_a2_bf8(const uint16_t *p) {
  return _mm256_castsi256_ps(tl_a2_bf_daz(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16)));
}

/* Stages bf16 b(k0..k0+kc, j0..j0+nr) as kc rows of TL_A2_NR f32 (columns beyond nr untouched).
 * Vector paths: row-major with unit column stride (whole 16-column rows), and tiled with vnni 2
 * and 16-column tiles (tl_matmul's bf16 staging and packing layout: each 64-byte tile row holds
 * the pairs (k, k + 1) of 16 columns); anything else element by element. */
static void tl_a2_bf_stage_b(float *buf, const tl_ref *b, int tb, int64_t k0, int64_t kc, int64_t j0, int64_t nr) {
  const tl_layout l = b->layout;
  int64_t k = 0; /* rows staged by a vector path; the rest element by element */
  if (!tb && !l.tiled && b->stride[1] == 1 && nr == TL_A2_NR) {
    const uint16_t *src = (const uint16_t *)b->data + k0 * b->stride[0] + j0;
    for (; k < kc; k++, src += b->stride[0]) {
      _mm256_store_ps(buf + k * TL_A2_NR, tl_a2_bf8(src));
      _mm256_store_ps(buf + k * TL_A2_NR + 8, tl_a2_bf8(src + 8));
    }
  } else if (!tb && l.tiled && l.vnni == 2 && l.tile_c == TL_A2_NR && l.tile_r % 2 == 0 && k0 % 2 == 0 && j0 % TL_A2_NR == 0) {
    const __m256i hi = _mm256_set1_epi32((int)0xFFFF0000u);
    for (; k + 2 <= kc; k += 2) { /* one tile row: the 16 pairs (k, k + 1) from b(k, j0) on */
      const uint16_t *row = (const uint16_t *)b->data + tl_tile_b_offset(b, 0, k0 + k, j0);
      for (int h = 0; h < 2; h++) {
        const __m256i x = _mm256_loadu_si256((const __m256i *)(row + 16 * h));
        _mm256_store_ps(buf + k * TL_A2_NR + 8 * h, _mm256_castsi256_ps(tl_a2_bf_daz(_mm256_slli_epi32(x, 16))));
        _mm256_store_ps(buf + (k + 1) * TL_A2_NR + 8 * h, _mm256_castsi256_ps(tl_a2_bf_daz(_mm256_and_si256(x, hi))));
      }
    }
  }
  for (; k < kc; k++)
    for (int64_t j = 0; j < nr; j++) buf[k * TL_A2_NR + j] = tl_a2_bf_at(b, tb, k0 + k, j0 + j);
}

/* acc (+)= a @ b for bf16 a (row-major, unit column stride) and b (any accepted layout). */
static __attribute__((noinline)) void tl_a2_dot_bf16(tl_ref *acc, const tl_ref *a, const tl_ref *b, int tb, int accum) {
  const int64_t m = acc->shape[0], n = acc->shape[1], kk = a->shape[1], lda = a->stride[0], ldc = acc->stride[0];
  float *pc = (float *)acc->data;
  _Alignas(64) float af[TL_A2_BF_MC * TL_A2_KC];
  _Alignas(64) float bf[TL_A2_KC * TL_A2_NR];
  for (int64_t i0 = 0; i0 < m; i0 += TL_A2_BF_MC) {
    const int64_t mc = m - i0 < TL_A2_BF_MC ? m - i0 : TL_A2_BF_MC;
    if (kk == 0)
      for (int64_t j0 = 0; j0 < n; j0 += TL_A2_NR)
        tl_a2_panel(mc, TL_MIN(TL_A2_NR, n - j0), 0, af, TL_A2_KC, bf, TL_A2_NR, pc + i0 * ldc + j0, ldc, accum);
    for (int64_t k0 = 0; k0 < kk; k0 += TL_A2_KC) {
      const int64_t kc = kk - k0 < TL_A2_KC ? kk - k0 : TL_A2_KC;
      for (int64_t i = 0; i < mc; i++) { /* a's chunk as f32 rows of TL_A2_KC */
        const uint16_t *src = (const uint16_t *)a->data + (i0 + i) * lda + k0;
        float *dst = af + i * TL_A2_KC;
        int64_t k = 0;
        for (; k + 8 <= kc; k += 8) _mm256_store_ps(dst + k, tl_a2_bf8(src + k));
        for (; k < kc; k++) dst[k] = tl_tile_bf16_daz(src[k]);
      }
      for (int64_t j0 = 0; j0 < n; j0 += TL_A2_NR) {
        const int64_t nr = n - j0 < TL_A2_NR ? n - j0 : TL_A2_NR;
        tl_a2_bf_stage_b(bf, b, tb, k0, kc, j0, nr);
        tl_a2_panel(mc, nr, kc, af, TL_A2_KC, bf, TL_A2_NR, pc + i0 * ldc + j0, ldc, accum || k0 > 0);
      }
    }
  }
}

/* tl_tile_dot's AVX2 path (see the opening comment). Returns 1 when it did the work. */
int tl_avx2_dot(tl_ref *acc, const tl_ref *a, const tl_ref *b, unsigned flags) {
  if (acc->dtype == TL_I32 && (a->dtype == TL_I8 || a->dtype == TL_U8) && (b->dtype == TL_I8 || b->dtype == TL_U8))
    return tl_avx2_dot_i8(acc, a, b, flags);
  if (acc->dtype == TL_F32 && a->dtype == TL_BF16 && b->dtype == TL_BF16 && !a->layout.tiled && a->stride[1] == 1 &&
      acc->stride[1] == 1) {
    if (acc->shape[0] > 0 && acc->shape[1] > 0)
      tl_a2_dot_bf16(acc, a, b, (flags & TL_DOT_TRANS_B) != 0, (flags & TL_DOT_ACCUMULATE) != 0);
    return 1;
  }
  if (acc->dtype != TL_F32 || a->dtype != TL_F32 || b->dtype != TL_F32) return 0;
  if (a->layout.tiled || a->stride[1] != 1 || acc->stride[1] != 1) return 0;
  const int tb = (flags & TL_DOT_TRANS_B) != 0, accum = (flags & TL_DOT_ACCUMULATE) != 0;
  const int64_t m = acc->shape[0], n = acc->shape[1], kk = a->shape[1];
  if (m == 0 || n == 0) return 1;
  const float *pa = (const float *)a->data;
  float *pc = (float *)acc->data;
  const int64_t lda = a->stride[0], ldc = acc->stride[0];
  if (!tb && !b->layout.tiled && b->stride[1] == 1) { /* b in place */
    const float *pb = (const float *)b->data;
    if (m <= 2 && n * kk * 4 > TL_A2_STREAM_BYTES) { /* from memory: the streaming walk */
      if (m == 1) tl_a2_stream(1, n, kk, pa, lda, pb, b->stride[0], pc, ldc, accum);
      else tl_a2_stream(2, n, kk, pa, lda, pb, b->stride[0], pc, ldc, accum);
      return 1;
    }
    /* 3-6 rows (one row block) with a block from memory: staged wide too. In place, each 16-column
     * panel walks down the block's rows a row stride apart, unprefetched (`TILEC_ISA=avx2 tilec
     * bench gemm --threads 2 --dtype f32 --peers none`, Zen 5 VM, with tl_matmul's blocks of 512 x
     * K for such a b, 3 rounds alternating, medians: 3x4096x4096 4.99 -> 1.94 ms, 4 rows 5.38 ->
     * 2.01, 6 rows 6.09 -> 2.15, 5x11008x4096 13.4 -> 4.8). A block in the caches reads faster in
     * place (warm, the wide staging for every block: 3x512x512 11.6 -> 18.2 us, 6x1000x1000 65 ->
     * 91), hence the size */
    const int mem = n * kk * 4 > TL_A2_STREAM_BYTES;
    if ((m <= TL_A2_MR && !mem) || kk == 0 || (kk * n * 4 <= TL_TILE_SMALL_B && tl_tile_b_fits_l1(kk, b->stride[0]))) {
      for (int64_t j0 = 0; j0 < n; j0 += TL_A2_NR) {
        const int64_t nr = n - j0 < TL_A2_NR ? n - j0 : TL_A2_NR;
        tl_a2_panel(m, nr, kk, pa, lda, pb + j0, b->stride[0], pc + j0, ldc, accum);
      }
      return 1;
    }
    tl_a2_dot_wide(m, n, kk, pa, lda, pb, b->stride[0], pc, ldc, accum, m >= TL_A2_DEEP_M ? TL_A2_DEEP_KC : TL_A2_WKC);
    return 1;
  }
  if (!tb && b->layout.tiled && b->layout.tile_c == TL_A2_NR && b->layout.vnni <= 1 && kk > 0) {
    /* 16-column tiles without interleave (tl_matmul_pack_b's f32 layout): each panel is one
     * tile column, read in place tile row by tile row; up to TL_A2_TM rows a chunk of TL_A2_WKC
     * rows of every tile at a time, as the wide staging walks a row-major b (see TL_A2_TM) */
    const int64_t tr = b->layout.tile_r;
    if (m > TL_A2_MR && m <= TL_A2_TM) { /* a few row blocks: TL_A2_WKC rows of every tile at a time */
      for (int64_t k0 = 0, kc; k0 < kk; k0 += kc) {
        kc = TL_MIN(TL_A2_WKC, TL_MIN(tr - k0 % tr, kk - k0));
        const int64_t nk0 = k0 + kc, nkc = nk0 < kk ? TL_MIN(TL_A2_WKC, TL_MIN(tr - nk0 % tr, kk - nk0)) : 0;
        for (int64_t j0 = 0; j0 < n; j0 += TL_A2_NR) {
          const float *bp = tl_a2_b_at(b, 0, k0, j0);
          tl_a2_panel_pf(m, TL_MIN(TL_A2_NR, n - j0), kc, pa + k0, lda, bp, TL_A2_NR, pc + j0, ldc, accum || k0 > 0,
                         nkc ? (const char *)tl_a2_b_at(b, 0, nk0, j0) : NULL, TL_A2_NR * 4, nkc);
        }
      }
      return 1;
    }
    for (int64_t j0 = 0; j0 < n; j0 += TL_A2_NR) {
      const int64_t nr = n - j0 < TL_A2_NR ? n - j0 : TL_A2_NR;
      for (int64_t k0 = 0, kc; k0 < kk; k0 += kc) {
        kc = tr - k0 % tr < kk - k0 ? tr - k0 % tr : kk - k0;
        tl_a2_panel(m, nr, kc, pa + k0, lda, tl_a2_b_at(b, 0, k0, j0), TL_A2_NR, pc + j0, ldc, accum || k0 > 0);
      }
    }
    return 1;
  }
  _Alignas(64) float buf[TL_A2_KC * TL_A2_NR];
  for (int64_t j0 = 0; j0 < n; j0 += TL_A2_NR) {
    const int64_t nr = n - j0 < TL_A2_NR ? n - j0 : TL_A2_NR;
    if (kk == 0) tl_a2_panel(m, nr, 0, pa, lda, buf, TL_A2_NR, pc + j0, ldc, accum);
    for (int64_t k0 = 0; k0 < kk; k0 += TL_A2_KC) {
      const int64_t kc = kk - k0 < TL_A2_KC ? kk - k0 : TL_A2_KC;
      tl_a2_stage_b(buf, b, tb, k0, kc, j0, nr);
      tl_a2_panel(m, nr, kc, pa + k0, lda, buf, TL_A2_NR, pc + j0, ldc, accum || k0 > 0);
    }
  }
  return 1;
}
