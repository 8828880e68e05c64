/* dot_avx512.c — tl_tile_dot for f32 on AVX-512: acc (+)= a @ b with an 8x32 FMA microkernel
 * (and a one-pass kernel of up to 16 rows x 16 columns for 5-16 rows over tiled b); bf16 x bf16
 * -> f32 on the same microkernel after converting to f32 (tl_a5_dot_bf16: the avx512 and
 * avx512vnni levels, which have no VDPBF16PS); 8-bit integers in dot_avx512_i8.c.
 *
 * Contract (docs/kernels.md, "Tile dot"): called after tile.c's checks. Handles acc, a, b all
 * f32 (and bf16 x bf16 -> f32 through tl_a5_dot_bf16, any accepted b; 8-bit integers through
 * dot_avx512_i8.c); a and acc row-major with unit column stride (any row stride). b: row-major with unit
 * column stride read in place below TL_A5_PACK_M rows (1-2 rows with a b block past
 * TL_A5_STREAM_BYTES: the streaming kernel; 3-16 rows with such a block whose rows are
 * contiguous: the walk; other 3-31 rows with such a block: the sweeping one; 1-4
 * rows with at most 128 / 64 columns: the skinny one; else 32-column panels), and from any row count when the block
 * is at most TL_TILE_SMALL_B bytes and its panels stay in L1 (tl_tile_b_fits_l1); tiled in
 * 16-column tiles without interleave read in place (5-16 rows: one tile at a time in one pass,
 * tl_a5_kern16, with a packed; otherwise 32-column panels of two tiles); anything else (row-major from TL_A5_PACK_M
 * rows, TL_DOT_TRANS_B, other tilings, strided) staged per panel of 32 columns x TL_A5_KC rows,
 * with a packed into 8-row micro-panels per TL_A5_MC x TL_A5_KC chunk. Other dtypes: 0.
 *
 * Invariants:
 * - acc is read only with TL_DOT_ACCUMULATE; every element of acc is written exactly once per
 *   k-chunk, nothing outside acc's M x N elements is read or written (masked loads and stores at
 *   the N edge, a shorter row count at the M edge).
 * - Each acc(i, j) is one f32 sum in increasing k, started from acc(i, j) or 0, with fused
 *   multiply-adds (the scalar reference rounds the product first: results differ by rounding).
 * - No allocation, no locks; the stack holds at most one 16 KiB b panel and 64 KiB of packed a
 *   (bf16: of a converted to f32).
 */
#include <immintrin.h>
#include <string.h>

#include "../tile_impl.h"
#include "transpose_avx512.h"

/* Where a panel's next panel is, for the kernel's prefetches: row k's bytes at p + k * ld, the
 * second vector's at + o, and a third line at + o3 (o + 63 for a row-major b, whose rows off a
 * 64-byte line span three; o for tiled b, the second vector's line again). */
typedef struct tl_a5_pf {
  const char *p;
  int64_t ld, o, o3;
  int single; /* prefetch also when the panel has one row block (measured: pays for row-major b
               * in place, 5-8 rows 3.5 -> 2.5 ms at 8x4096x4096; not for tiled b) */
} tl_a5_pf;

/* Blocking: TL_A5_MR rows x TL_A5_NR columns of acc live in 16 zmm registers over k; staged b
 * panels hold TL_A5_KC rows of TL_A5_NR columns (16 KiB, L1-resident). */
#define TL_A5_MR 8
#define TL_A5_NR 32
#define TL_A5_KC 128
/* From this many rows of acc on, row-major b is copied panel by panel too: a contiguous panel
 * stays in L1 across the row blocks (rows of b in place are a row stride apart, which for
 * power-of-two strides maps them to the same L1 sets). */
#define TL_A5_PACK_M 32
/* Rows of a packed at a time (a multiple of TL_A5_MR): 64 KiB of stack with TL_A5_KC. */
#define TL_A5_MC 128
/* A b block (in place, 1-31 rows of acc) beyond this many bytes comes from memory: it is walked
 * in row order (1-2 rows: tl_a5_stream; 3-8 with contiguous rows: tl_a5_walk; other 3-31:
 * tl_a5_sweep); a smaller one, in the caches, in panels. */
#define TL_A5_STREAM_BYTES ((int64_t)1 << 20)

/* How the microkernel reads a and b (a compile-time constant in every copy of it). */
enum {
  TL_A5_ROWS,   /* a row-major in place; b rows read with the column masks (b in place) */
  TL_A5_WHOLE,  /* a row-major in place; b rows are whole 16-column vectors (tiled, staged) */
  TL_A5_PACKED, /* a packed by tl_a5_pack_a; b rows whole vectors */
};

/* Mask of the first n (0..16) lanes. */
static inline __mmask16 tl_a5_mask(int64_t n) {
  return n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1u);
}

/* The microkernel: c[0..mr) x [0..16*nv) (+)= a[0..mr) x [0..kc) @ b[0..kc) x [0..16*nv), lanes
 * limited by m0 (first 16 columns) and m1 (next 16). Row strides lda, ldb, ldc in elements.
 * pfk (then pf != NULL): each row k of b read is followed by prefetches into L2 of pf->p + k *
 * pf->ld bytes (and + pf->o for the second vector): the next panel, in place or (staged b) its
 * source rows. pfk is a constant in each copy: testing pf in the k loop cost 5%, and masked loads
 * of whole b rows 3% (tilec_bench_tile_dot's L2 case, a step of tl_matmul with b pre-packed:
 * 104 -> 112 GFLOP/s with both changes).
 * tl_a5_panel gives it to the last full row block of two or more (or to a single block when
 * pf->single: row-major b in place, 5-8 rows), so that with few row blocks the
 * first one of the next panel does not wait on memory while the others computed with memory idle
 * (f32 pre-packed 16x4096x4096, 2 threads, 3.28 -> 2.83 ms, plain 4.69 -> 3.46), and a staged
 * panel's source rows, a row stride apart, come from L2.
 * mr, nv, form and pfk are compile-time constants at every call (tl_a5_block), so acc stays in
 * registers. */
static inline __attribute__((always_inline)) void tl_a5_kern(int mr, int nv, int form, int pfk, int64_t kc,
                                                             const float *a, int64_t lda, const float *b, int64_t ldb,
                                                             int64_t bo, float *c, int64_t ldc,
                                                             __mmask16 m0, __mmask16 m1, int accum, const tl_a5_pf *pf) {
  __m512 acc[TL_A5_MR][2];
#pragma GCC unroll 8
  for (int i = 0; i < TL_A5_MR; i++) {
    acc[i][0] = _mm512_setzero_ps();
    acc[i][1] = _mm512_setzero_ps();
    if (i < mr && accum) {
      acc[i][0] = _mm512_maskz_loadu_ps(m0, c + i * ldc);
      if (nv == 2) acc[i][1] = _mm512_maskz_loadu_ps(m1, c + i * ldc + 16);
    }
  }
  for (int64_t k = 0; k < kc; k++) {
    if (pfk) { /* the next panel's vectors, one per vector read, into L2 */
      _mm_prefetch(pf->p + k * pf->ld, _MM_HINT_T1);
      if (nv == 2) _mm_prefetch(pf->p + k * pf->ld + pf->o, _MM_HINT_T1);
      /* and the line after, which a row not aligned to 64 bytes reaches (b from malloc: 16
       * bytes off; `tilec bench gemm --offset 16`, f32 16x4096x4096 11.9 -> 5.8 ms,
       * 128x4096x4096 27.5 -> 25.4) */
      if (nv == 2) _mm_prefetch(pf->p + k * pf->ld + pf->o3, _MM_HINT_T1);
    }
    /* a staged or tiled b has whole 16-column vectors for rows: plain loads (lanes beyond the
     * masks only reach columns that are never stored) */
    const int whole = form != TL_A5_ROWS;
    const __m512 b0 = whole ? _mm512_loadu_ps(b + k * ldb) : _mm512_maskz_loadu_ps(m0, b + k * ldb);
    const __m512 b1 = nv == 2 ? (whole ? _mm512_loadu_ps(b + k * ldb + bo) : _mm512_maskz_loadu_ps(m1, b + k * ldb + bo))
                              : _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int i = 0; i < TL_A5_MR; i++) {
      if (i >= mr) break;
      const __m512 ai = _mm512_set1_ps(form == TL_A5_PACKED ? a[k * TL_A5_MR + i] : a[i * lda + k]);
      acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
      if (nv == 2) acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < TL_A5_MR; i++) {
    if (i >= mr) break;
    _mm512_mask_storeu_ps(c + i * ldc, m0, acc[i][0]);
    if (nv == 2) _mm512_mask_storeu_ps(c + i * ldc + 16, m1, acc[i][1]);
  }
}

/* One register block: dispatches (mr, nv, form, pf != NULL) to a specialised copy of the
 * microkernel. */
static void tl_a5_block(int mr, int nv, int form, int64_t kc, const float *a, int64_t lda, const float *b,
                        int64_t ldb, int64_t bo, float *c, int64_t ldc, __mmask16 m0, __mmask16 m1, int accum,
                        const tl_a5_pf *pf) {
#define TL_A5_FORMS(MR_, NV_) \
  do { \
    if (form == TL_A5_PACKED && pf) tl_a5_kern(MR_, NV_, TL_A5_PACKED, 1, kc, a, lda, b, ldb, bo, c, ldc, m0, m1, accum, pf); \
    else if (form == TL_A5_PACKED) tl_a5_kern(MR_, NV_, TL_A5_PACKED, 0, kc, a, lda, b, ldb, bo, c, ldc, m0, m1, accum, pf); \
    else if (form == TL_A5_WHOLE && pf) tl_a5_kern(MR_, NV_, TL_A5_WHOLE, 1, kc, a, lda, b, ldb, bo, c, ldc, m0, m1, accum, pf); \
    else if (form == TL_A5_WHOLE) tl_a5_kern(MR_, NV_, TL_A5_WHOLE, 0, kc, a, lda, b, ldb, bo, c, ldc, m0, m1, accum, pf); \
    else if (pf) tl_a5_kern(MR_, NV_, TL_A5_ROWS, 1, kc, a, lda, b, ldb, bo, c, ldc, m0, m1, accum, pf); \
    else tl_a5_kern(MR_, NV_, TL_A5_ROWS, 0, kc, a, lda, b, ldb, bo, c, ldc, m0, m1, accum, pf); \
  } while (0)
#define TL_A5_CASE(MR_, NV_) \
  case (MR_) * 2 + (NV_) - 1: TL_A5_FORMS(MR_, NV_); break;
  switch (mr * 2 + nv - 1) {
    TL_A5_CASE(1, 1) TL_A5_CASE(1, 2) TL_A5_CASE(2, 1) TL_A5_CASE(2, 2)
    TL_A5_CASE(3, 1) TL_A5_CASE(3, 2) TL_A5_CASE(4, 1) TL_A5_CASE(4, 2)
    TL_A5_CASE(5, 1) TL_A5_CASE(5, 2) TL_A5_CASE(6, 1) TL_A5_CASE(6, 2)
    TL_A5_CASE(7, 1) TL_A5_CASE(7, 2) TL_A5_CASE(8, 1)
  default: TL_A5_FORMS(8, 2); break;
  }
#undef TL_A5_CASE
#undef TL_A5_FORMS
}

/* Runs the row blocks of one panel: c[0..m) x [0..nr) (+)= a[0..m) x [0..kc) @ b (kc x nr),
 * issuing pq of the executor's queued prefetches (tl_prefetch_pump) before each row block. */
static void tl_a5_panel(int64_t m, int64_t nr, int64_t kc, int form, const float *a, int64_t lda, const float *b,
                        int64_t ldb, int64_t bo, float *c, int64_t ldc, int accum, const tl_a5_pf *pfn,
                        int64_t pq) {
  const int nv = nr > 16 ? 2 : 1;
  const __mmask16 m0 = tl_a5_mask(nr), m1 = nr > 16 ? tl_a5_mask(nr - 16) : 0;
  tl_tile_prefetch_c(c, ldc * 4, TL_MIN(m, TL_A5_MR), nv);
  for (int64_t i0 = 0; i0 < m; i0 += TL_A5_MR) {
    const int mr = (int)(m - i0 < TL_A5_MR ? m - i0 : TL_A5_MR);
    const float *ai = form == TL_A5_PACKED ? a + i0 * kc : a + i0 * lda;
    tl_tile_prefetch_c(c + (i0 + TL_A5_MR) * ldc, ldc * 4, TL_MIN(m - i0 - TL_A5_MR, TL_A5_MR), nv);
    /* the last full block of two or more, or the only one when pfn allows it */
    const int last_full = m > TL_A5_MR && i0 + TL_A5_MR <= m && i0 + 2 * TL_A5_MR > m;
    const tl_a5_pf *pf = last_full || (pfn && pfn->single && m <= TL_A5_MR) ? pfn : NULL;
    if (pq) tl_prefetch_pump(pq);
    tl_a5_block(mr, nv, form, kc, ai, lda, b, ldb, bo, c + i0 * ldc, ldc, m0, m1, accum, pf);
  }
}

/* 5-16 rows of acc over one 16-column tile of b read in place (tiled16: the tile's rows of 16
 * floats one after another), a packed by tl_a5_pack_a: every row of acc in one pass with up to 16
 * zmm accumulators, so each line of b is loaded once, and b's lines are prefetched
 * TL_TILE_STREAM_PF bytes ahead into L1 (into L2 where the L1 is small: tl_tile_pf_l1; past the
 * tile's end: the next tile of the tile row, which the caller reads next). The 8x32 panels ran
 * 9-16 rows as two passes over 64 KiB of b, only the second one prefetching (the next panel,
 * into L2), and 5-8 rows with no prefetch. A throwaway harness
 * streaming 64 MiB of such tiles on the 2 threads of the Zen 5 VM measured 16 rows in one pass at
 * 2.1-2.7 ms without prefetch, 1.9-2.0 with lines 2 KiB ahead, 1.62-1.79 at 4 KiB and 1.48-1.70
 * at 6-12 KiB; tl_matmul with b pre-packed (16x4096x4096, three alternating runs) 1.65-1.70 ms
 * at 4 KiB, 1.52-1.63 at 8, 1.52-1.58 at 12, 1.54-1.57 at 16, against 1.81-1.94 before. a is
 * packed because its rows, a row stride apart (16 KiB for K = 4096), would share one L1 set:
 * read in place, 16 of them measured slower than the two passes. The walk runs it over a
 * row-major b in place too (ldb: b's row stride in floats, 16 for a tile; pfs 0: no stream
 * prefetch, which the walk does per sweep, and the lanes past m0 not loaded). mr and pfs are
 * constants at every call (tl_a5_tile16, tl_a5_wide16). */
static inline __attribute__((always_inline)) void tl_a5_kern16(int mr, int64_t kc, const float *a, const float *b,
                                                               int64_t ldb, int pfs, float *c, int64_t ldc, __mmask16 m0,
                                                               int accum) {
  __m512 acc[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; i++) acc[i] = i < mr && accum ? _mm512_maskz_loadu_ps(m0, c + i * ldc) : _mm512_setzero_ps();
  const int l1 = tl_tile_pf_l1();
  for (int64_t k = 0; k < kc; k++) {
    if (pfs) tl_tile_pf_stream((const char *)(b + k * 16) + TL_TILE_STREAM_PF, l1);
    const __m512 bk = pfs || m0 == 0xffff ? _mm512_loadu_ps(b + k * ldb) : _mm512_maskz_loadu_ps(m0, b + k * ldb);
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++) {
      if (i >= mr) break;
      acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(a[(i / TL_A5_MR) * TL_A5_MR * kc + k * TL_A5_MR + i % TL_A5_MR]), bk, acc[i]);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < 16; i++) {
    if (i >= mr) break;
    _mm512_mask_storeu_ps(c + i * ldc, m0, acc[i]);
  }
}

/* Kept out of line: inlined into tl_avx512_dot, GCC kept the k counter on the stack (a review's
 * disassembly). */
static __attribute__((noinline)) void tl_a5_tile16(int mr, int64_t kc, const float *a, const float *b, float *c,
                                                   int64_t ldc, __mmask16 m0, int accum) {
  switch (mr) {
  case 5: tl_a5_kern16(5, kc, a, b, 16, 1, c, ldc, m0, accum); break;
  case 6: tl_a5_kern16(6, kc, a, b, 16, 1, c, ldc, m0, accum); break;
  case 7: tl_a5_kern16(7, kc, a, b, 16, 1, c, ldc, m0, accum); break;
  case 8: tl_a5_kern16(8, kc, a, b, 16, 1, c, ldc, m0, accum); break;
  case 9: tl_a5_kern16(9, kc, a, b, 16, 1, c, ldc, m0, accum); break;
  case 10: tl_a5_kern16(10, kc, a, b, 16, 1, c, ldc, m0, accum); break;
  case 11: tl_a5_kern16(11, kc, a, b, 16, 1, c, ldc, m0, accum); break;
  case 12: tl_a5_kern16(12, kc, a, b, 16, 1, c, ldc, m0, accum); break;
  case 13: tl_a5_kern16(13, kc, a, b, 16, 1, c, ldc, m0, accum); break;
  case 14: tl_a5_kern16(14, kc, a, b, 16, 1, c, ldc, m0, accum); break;
  case 15: tl_a5_kern16(15, kc, a, b, 16, 1, c, ldc, m0, accum); break;
  default: tl_a5_kern16(16, kc, a, b, 16, 1, c, ldc, m0, accum); break;
  }
}

/* 9-16 rows over one 16-column panel of a row-major b in place (row stride ldb; columns past
 * the mask m0 not read), a packed by tl_a5_pack_a: the walk's wide kernel (tl_a5_walk). */
static __attribute__((noinline)) void tl_a5_wide16(int mr, int64_t kc, const float *a, const float *b, int64_t ldb,
                                                   float *c, int64_t ldc, __mmask16 m0, int accum) {
  switch (mr) {
  case 9: tl_a5_kern16(9, kc, a, b, ldb, 0, c, ldc, m0, accum); break;
  case 10: tl_a5_kern16(10, kc, a, b, ldb, 0, c, ldc, m0, accum); break;
  case 11: tl_a5_kern16(11, kc, a, b, ldb, 0, c, ldc, m0, accum); break;
  case 12: tl_a5_kern16(12, kc, a, b, ldb, 0, c, ldc, m0, accum); break;
  case 13: tl_a5_kern16(13, kc, a, b, ldb, 0, c, ldc, m0, accum); break;
  case 14: tl_a5_kern16(14, kc, a, b, ldb, 0, c, ldc, m0, accum); break;
  case 15: tl_a5_kern16(15, kc, a, b, ldb, 0, c, ldc, m0, accum); break;
  default: tl_a5_kern16(16, kc, a, b, ldb, 0, c, ldc, m0, accum); break;
  }
}

/* The k chunk of the 5-16-row path from k0: within one tile row of b (tile_r tr), at most 512
 * (the packed a's 32 KiB). */
static inline int64_t tl_a5_t16_chunk(int64_t k0, int64_t kk, int64_t tr) {
  return TL_MIN(TL_MIN(tr - k0 % tr, kk - k0), 512);
}

/* Transposes 8 rows x 8 columns of a (row stride lda) into 8 groups of 8 floats, group k holding
 * column k of the 8 rows: two rounds of in-lane shuffles, then the 128-bit halves swapped. */
static inline void tl_a5_tr8(float *o, const float *a, int64_t lda) {
  __m256 r[8], t[8], u[8];
  for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(a + i * lda);
  for (int i = 0; i < 8; i += 2) { /* (row i, row i+1) interleaved: columns 0,1 | 4,5 and 2,3 | 6,7 */
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int h = 0; h < 8; h += 4) { /* rows h..h+3 of columns q | q+4, q = 0..3 */
    u[h + 0] = _mm256_shuffle_ps(t[h], t[h + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[h + 1] = _mm256_shuffle_ps(t[h], t[h + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[h + 2] = _mm256_shuffle_ps(t[h + 1], t[h + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[h + 3] = _mm256_shuffle_ps(t[h + 1], t[h + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int q = 0; q < 4; q++) {
    _mm256_storeu_ps(o + q * 8, _mm256_permute2f128_ps(u[q], u[q + 4], 0x20));
    _mm256_storeu_ps(o + (q + 4) * 8, _mm256_permute2f128_ps(u[q], u[q + 4], 0x31));
  }
}

/* Packs a[0..m) x [k0..k0+kc) (row stride lda) for the packed kernels: row block r (rows
 * r*MR..) holds kc groups of TL_A5_MR values, (i, k) at out[r*MR*kc + k*MR + i%MR]; rows beyond m
 * in the last block are left unwritten (the kernel never reads them). Whole row blocks go 8
 * columns at a time through tl_a5_tr8 (the element loop cost 2-5% of f32 64-128 x 4096 x 4096,
 * which packs a on every step). */
static void tl_a5_pack_a(float *out, const float *a, int64_t lda, int64_t m, int64_t k0, int64_t kc) {
  for (int64_t i0 = 0; i0 < m; i0 += TL_A5_MR) {
    const int64_t mr = m - i0 < TL_A5_MR ? m - i0 : TL_A5_MR;
    float *o = out + i0 * kc;
    int64_t kv = 0;
    if (mr == TL_A5_MR)
      for (; kv + 8 <= kc; kv += 8) tl_a5_tr8(o + kv * TL_A5_MR, a + i0 * lda + k0 + kv, lda);
    for (int64_t i = 0; i < mr; i++) {
      const float *src = a + (i0 + i) * lda + k0;
      for (int64_t k = kv; k < kc; k++) o[k * TL_A5_MR + i] = src[k];
    }
  }
}

/* The skinny microkernel (1..4 rows of acc, b read in place): c[0..mr) x [0..16*nv) (+)= a @ b
 * over kc, nv vectors of columns with lane masks mk[v]. Wide panels make each row of b one long
 * contiguous run, which is what a memory-bound product needs. mr and nv are compile-time
 * constants at every call (tl_a5_skinny). */
static inline __attribute__((always_inline)) void tl_a5_wide(int mr, int nv, int64_t kc, const float *a, int64_t lda,
                                                             const float *b, int64_t ldb, float *c, int64_t ldc,
                                                             const __mmask16 *mk, int accum) {
  __m512 acc[4][8];
#pragma GCC unroll 4
  for (int i = 0; i < 4; i++)
#pragma GCC unroll 8
    for (int v = 0; v < 8; v++)
      acc[i][v] = i < mr && v < nv && accum ? _mm512_maskz_loadu_ps(mk[v], c + i * ldc + 16 * v) : _mm512_setzero_ps();
  for (int64_t k = 0; k < kc; k++) {
    __m512 bv[8];
#pragma GCC unroll 8
    for (int v = 0; v < 8; v++) bv[v] = v < nv ? _mm512_maskz_loadu_ps(mk[v], b + k * ldb + 16 * v) : _mm512_setzero_ps();
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
      if (i >= mr) break;
      const __m512 ai = _mm512_set1_ps(a[i * lda + k]);
#pragma GCC unroll 8
      for (int v = 0; v < 8; v++)
        if (v < nv) acc[i][v] = _mm512_fmadd_ps(ai, bv[v], acc[i][v]);
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; i++) {
    if (i >= mr) break;
#pragma GCC unroll 8
    for (int v = 0; v < 8; v++)
      if (v < nv) _mm512_mask_storeu_ps(c + i * ldc + 16 * v, mk[v], acc[i][v]);
  }
}

/* acc (+)= a @ b for 1..4 rows with b row-major in place: panels of 128 columns (1-2 rows) or
 * 64 (3-4 rows); tl_avx512_dot calls it for blocks of one panel. */
static void tl_a5_skinny(int64_t m, int64_t n, int64_t kk, const float *a, int64_t lda, const float *b, int64_t ldb,
                         float *c, int64_t ldc, int accum) {
  const int64_t w = m <= 2 ? 128 : 64;
  for (int64_t j0 = 0; j0 < n; j0 += w) {
    __mmask16 mk[8];
    for (int v = 0; v < 8; v++) mk[v] = tl_a5_mask(TL_MAX(0, TL_MIN(16, n - j0 - 16 * v)));
    switch (m) {
    case 1: tl_a5_wide(1, 8, kk, a, lda, b + j0, ldb, c + j0, ldc, mk, accum); break;
    case 2: tl_a5_wide(2, 8, kk, a, lda, b + j0, ldb, c + j0, ldc, mk, accum); break;
    case 3: tl_a5_wide(3, 4, kk, a, lda, b + j0, ldb, c + j0, ldc, mk, accum); break;
    default: tl_a5_wide(4, 4, kk, a, lda, b + j0, ldb, c + j0, ldc, mk, accum); break;
    }
  }
}

/* The streaming skinny kernel (1-2 rows of acc, b row-major read in place): b is walked row
 * after row, TL_A5_SR rows per sweep (a's broadcasts and the rows of b stay in registers) over
 * all n columns, c(i, j) (+)= sum a(i, k) b(k, j) kept in c itself between sweeps (L1/L2), so b
 * is read as TL_A5_SR long runs at a time (the 64-128-column panels of tl_a5_skinny are short
 * runs a row stride apart, each in a new page: 16 GB/s of the 31.7 DRAM gave on Zen 4), and
 * each sweep prefetches the next one's rows as one run (tl_sweep_pf; measured on a Zen 5 VM,
 * 2 threads, with tl_matmul's K split, docs/matmul.md: 1x11008x4096 6.0 -> 4.2 ms, 1x4096x4096
 * 1.9 -> 1.5; 4 rows per sweep within noise of 2 and 8 there, ahead of 8 warm). mr is a
 * compile-time constant at every call. */
#define TL_A5_SR 4
/* 16 bf16 at p (unaligned; lanes outside m read as zero) as 16 f32 (below). */
static inline __m512 tl_a5_bf16x16(const uint16_t *p, __mmask16 m);
/* bf: a and b are bf16 (converted as they are read, denormals as zero: the bf16 dot's 1-2 rows),
 * else f32; c is f32 either way. */
static inline __attribute__((always_inline)) void tl_a5_stream(int bf, int mr, int64_t n, int64_t kk, const void *a,
                                                               int64_t lda, const void *b, int64_t ldb, float *c,
                                                               int64_t ldc, int accum) {
  const int64_t es = bf ? 2 : 4;
  for (int64_t k0 = 0; k0 < kk || (k0 == 0 && !accum); k0 += TL_A5_SR) {
    const int kr = (int)(kk - k0 < TL_A5_SR ? kk - k0 : TL_A5_SR); /* 0 only for kk == 0 */
    const int load = accum || k0 > 0;
    const int64_t kn = TL_MIN(TL_A5_SR, kk - k0 - TL_A5_SR); /* the next sweep's rows */
    tl_sweep_pf pf = tl_sweep_pf_at((const char *)b + (kn > 0 ? (k0 + TL_A5_SR) * ldb * es : 0), kn, n * es, ldb * es);
    __m512 av[2][TL_A5_SR];
#pragma GCC unroll 2
    for (int i = 0; i < 2; i++)
#pragma GCC unroll 8
      for (int q = 0; q < TL_A5_SR; q++)
        av[i][q] = _mm512_set1_ps(!(i < mr && q < kr) ? 0.0f
                                  : bf ? tl_tile_bf16_daz(((const uint16_t *)a)[i * lda + k0 + q])
                                       : ((const float *)a)[i * lda + k0 + q]);
    for (int64_t j = 0; j < n; j += 16) {
      const __mmask16 mk = tl_a5_mask(n - j);
      tl_sweep_pf_issue(&pf, kn * 16 * es);
      __m512 bv[TL_A5_SR];
#pragma GCC unroll 8
      for (int q = 0; q < TL_A5_SR; q++)
        bv[q] = !(q < kr) ? _mm512_setzero_ps()
                : bf      ? tl_a5_bf16x16((const uint16_t *)b + (k0 + q) * ldb + j, mk)
                          : _mm512_maskz_loadu_ps(mk, (const float *)b + (k0 + q) * ldb + j);
#pragma GCC unroll 2
      for (int i = 0; i < 2; i++) {
        if (i >= mr) break;
        __m512 acc = load ? _mm512_maskz_loadu_ps(mk, c + i * ldc + j) : _mm512_setzero_ps();
        if (kr == TL_A5_SR) { /* the k order of every other path: one fused multiply-add per k */
#pragma GCC unroll 8
          for (int q = 0; q < TL_A5_SR; q++) acc = _mm512_fmadd_ps(av[i][q], bv[q], acc);
        } else {
          for (int q = 0; q < kr; q++) acc = _mm512_fmadd_ps(av[i][q], bv[q], acc);
        }
        _mm512_mask_storeu_ps(c + i * ldc + j, mk, acc);
      }
    }
    if (kr == 0) break;
  }
}

/* The sweeping kernel (3-31 rows of acc, a row-major b block from memory read in place; 3-8 rows
 * of a block whose rows are contiguous take the walk below instead): the
 * block's columns in windows of TL_A5_SWEEP_N (half that past 16 rows), each accumulated in buf
 * (rows 16 floats more apart, off the 4 KiB alias that c's rows may share) over sweeps of
 * tl_a5_sweep_rows(m) rows of b: a packed for the sweep, then the 32-column panels of the window,
 * each prefetching the same columns of the next sweep's rows into L2. b is read as that many runs
 * of whole lines side by side (a window's share of each row), each line once from memory, where the
 * panels read a panel's 128 bytes of every row of the block, a row stride apart (`tilec bench gemm
 * --threads 2 --dtype f32 --peers none`, Zen 5 VM, environment toggles in one build, 3-5 rounds
 * alternating, medians, ms, with tl_matmul's blocks for it; docs/matmul.md has the builds against
 * each other, which this noisy VM put 5-20% apart from these: 3x4096x4096 1.92 -> 1.24-1.28, 4 rows
 * 2.07 -> 1.32, 8 rows 2.19 -> 1.21-1.23, 12 rows 2.43 -> 1.60, 16 rows 2.51-2.74 -> 1.84-1.96,
 * 8x11008x4096 5.42 -> 4.31-4.45, 16x4096x11008 7.93 -> 5.44; in the caches it is slower than the
 * panels: 16x1024x1024 with one core, b warm, 177 -> 214 us). The rows per sweep: 8 rows of b alias
 * one L1 set at a 4 KiB multiple of a row stride and stay there for the second row block of acc;
 * more rows of b save loads and stores of acc (16 rows of acc: 8 per sweep 2.11 ms, 12 1.89, 16
 * 1.84, 24 1.92; 8 rows: 4 1.75, 8 1.23, 12 1.47, 16 1.60; 14 rows: 8 1.82, 12 1.78, 16 1.89; 24
 * rows: 8 3.10, 12 2.85, 16 2.71). 17-31 rows since the same day, 256-column windows (before,
 * 32-column panels down the block: 17x4096x4096 2.92 -> 2.47 ms, 24 rows 3.31 -> 2.71, 31 rows 3.90
 * -> 3.69, 24x11008x4096 7.92 -> 6.34). Each acc(i, j) is still one sum in increasing k (stored and
 * reloaded exactly between sweeps). buf holds TL_A5_SWEEP_BUF floats. */
#define TL_A5_SWEEP_N 512
#define TL_A5_SWEEP_G 16 /* the most rows of b per sweep */
#define TL_A5_SWEEP_BUF (32 * TL_A5_SWEEP_G + TL_MAX(16 * (TL_A5_SWEEP_N + 16), 31 * (TL_A5_SWEEP_N / 2 + 16)))
static inline int64_t tl_a5_sweep_rows(int64_t m) { return m <= 8 ? 8 : m <= 14 ? 12 : TL_A5_SWEEP_G; }
/* (the sweep takes in-place blocks past TL_A5_STREAM_BYTES: from 32 rows only small ones are) */
_Static_assert(TL_TILE_SMALL_B <= TL_A5_STREAM_BYTES, "the sweep sees at most 31 rows");

static void tl_a5_sweep(int64_t m, int64_t n, int64_t kk, const float *a, int64_t lda, const float *b, int64_t ldb,
                        float *c, int64_t ldc, int accum, int64_t pq, float *buf) {
  const int64_t g = tl_a5_sweep_rows(m), win = m <= 16 ? TL_A5_SWEEP_N : TL_A5_SWEEP_N / 2, ldw = win + 16;
  float *ap = buf, *w = buf + 32 * TL_A5_SWEEP_G; /* a's sweep (up to four row blocks of 8 x g), the window */
  for (int64_t j0 = 0; j0 < n; j0 += win) {
    const int64_t nw = TL_MIN(win, n - j0);
    if (accum)
      for (int64_t i = 0; i < m; i++) memcpy(w + i * ldw, c + i * ldc + j0, (size_t)nw * 4);
    for (int64_t k0 = 0, kc; k0 < kk; k0 += kc) {
      kc = TL_MIN(g, kk - k0);
      tl_a5_pack_a(ap, a, lda, m, k0, kc);
      const float *bk = b + k0 * ldb + j0;
      const int next = k0 + 2 * kc <= kk; /* the next sweep has as many rows: prefetched */
      for (int64_t jj = 0, nr; jj < nw; jj += nr) {
        nr = TL_MIN(TL_A5_NR, nw - jj);
        const tl_a5_pf pf = {(const char *)(bk + kc * ldb + jj), ldb * 4, 64, 127, 1};
        /* a whole panel's rows are whole vectors (a packed); the N edge's, masked loads (a read in
         * place), which read nothing past b's last column */
        if (nr == TL_A5_NR)
          tl_a5_panel(m, nr, kc, TL_A5_PACKED, ap, 0, bk + jj, ldb, 16, w + jj, ldw, accum || k0 > 0, next ? &pf : NULL,
                      pq);
        else
          tl_a5_panel(m, nr, kc, TL_A5_ROWS, a + k0, lda, bk + jj, ldb, 16, w + jj, ldw, accum || k0 > 0,
                      next ? &pf : NULL, pq);
      }
    }
    for (int64_t i = 0; i < m; i++) memcpy(c + i * ldc + j0, w + i * ldw, (size_t)nw * 4);
  }
}

/* The walk (3 to TL_TILE_WALK_M (16) rows of acc, a row-major b block from memory whose rows are
 * contiguous, read in place: tl_matmul's K split hands each thread such a block of whole rows,
 * matmul_split.c): TL_A5_WALK_K rows of b at a time over all its columns, accumulated in acc
 * itself (the K split's partial rows are off the 4 KiB alias), a packed per sweep, the 32-column
 * panels of each sweep prefetching their share of the next sweep's rows in order (tl_sweep_pf):
 * memory sees one contiguous stream a sweep ahead, where the sweeping kernel above reads windows
 * of 512 columns, 2 KiB of each row, and prefetches the next sweep's rows at the same columns. In
 * the last sweep the thread's prefetch queue is pumped instead (the K split queues its next step's
 * first rows there). Each acc(i, j) is still one sum in increasing k. Measured: docs/matmul.md
 * "3-8 f32 rows: the walk". 9-16 rows: panels of 16 columns with every row in registers
 * (tl_a5_wide16), each line of b loaded once; as two 8-row blocks over the 32-column panels, 9,
 * 12 and 16 rows measured 17-23% slower (docs/matmul.md "9-16 rows: the wide walks"). */
#define TL_A5_WALK_K 8
static void tl_a5_walk(int64_t m, int64_t n, int64_t kk, const float *a, int64_t lda, const float *b, float *c,
                       int64_t ldc, int accum, float *ap) {
  for (int64_t k0 = 0, kc; k0 < kk; k0 += kc) {
    kc = TL_MIN(TL_A5_WALK_K, kk - k0);
    tl_a5_pack_a(ap, a, lda, m, k0, kc);
    const int64_t pfrows = TL_MIN(TL_A5_WALK_K, kk - k0 - kc);
    tl_sweep_pf pf = tl_sweep_pf_at(pfrows ? b + (k0 + kc) * n : b, pfrows, n * 4, n * 4);
    const int64_t pw = m > TL_A5_MR ? 16 : TL_A5_NR; /* the panels' width */
    const int64_t pending = pfrows ? 0 : tl_prefetch_pending(), pq = TL_CDIV(pending, TL_CDIV(n, pw));
    const float *bk = b + k0 * n;
    for (int64_t jj = 0, nr; jj < n; jj += nr) {
      nr = TL_MIN(pw, n - jj);
      tl_sweep_pf_issue(&pf, pfrows * nr * 4);
      if (pq) tl_prefetch_pump(pq);
      if (m > TL_A5_MR) { /* 9-16 rows: every row over 16 columns, each line of b loaded once */
        tl_a5_wide16((int)m, kc, ap, bk + jj, n, c + jj, ldc, tl_a5_mask(nr), accum || k0 > 0);
        continue;
      }
      const int nv = nr > 16 ? 2 : 1;
      const __mmask16 m0 = tl_a5_mask(nr), m1 = nr > 16 ? tl_a5_mask(nr - 16) : 0;
      if (nr == TL_A5_NR)
        tl_a5_block((int)m, nv, TL_A5_PACKED, kc, ap, 0, bk + jj, n, 16, c + jj, ldc, m0, m1, accum || k0 > 0, NULL);
      else /* the N edge: masked loads of a's rows in place, which read nothing past b's last column */
        tl_a5_block((int)m, nv, TL_A5_ROWS, kc, a + k0, lda, bk + jj, n, 16, c + jj, ldc, m0, m1, accum || k0 > 0, NULL);
    }
  }
}

/* Address of b(k, j) for any accepted b: TL_DOT_TRANS_B ([N, K] row-major), row-major [K, N]
 * with any strides, or tiled (vnni 1 for f32 is the only sensible one, any is honoured). */
static inline const float *tl_a5_b_at(const tl_ref *b, int tb, int64_t k, int64_t j) {
  return (const float *)b->data + tl_tile_b_offset(b, tb, k, j);
}

/* Stages b(k0..k0+kc, j0..j0+nr) as kc rows of TL_A5_NR floats (columns beyond nr untouched:
 * the kernel's masks never read them). Contiguous source runs use the fast loops. */
static void tl_a5_stage_b(float *buf, const tl_ref *b, int tb, int64_t k0, int64_t kc, int64_t j0, int64_t nr) {
  if (!tb && !b->layout.tiled && b->stride[1] == 1) { /* row-major: one contiguous run per row */
    const float *src = (const float *)b->data + k0 * b->stride[0] + j0;
    const __mmask16 m0 = tl_a5_mask(nr), m1 = nr > 16 ? tl_a5_mask(nr - 16) : 0;
    for (int64_t k = 0; k < kc; k++) { /* masked vector copies (memcpy of a short run became rep movs) */
      const float *r = src + k * b->stride[0];
      _mm512_store_ps(buf + k * TL_A5_NR, _mm512_maskz_loadu_ps(m0, r));
      _mm512_store_ps(buf + k * TL_A5_NR + 16, _mm512_maskz_loadu_ps(m1, r + 16));
    }
    return;
  }
  if (tb && b->stride[1] == 1) { /* b^T rows are k-contiguous: transpose 16 columns at a time */
    const float *bt = (const float *)b->data;
    const int64_t ldb = b->stride[0];
    for (int64_t j = 0; j < nr; j++) {
      const float *src = bt + (j0 + j) * ldb + k0;
      for (int64_t k = 0; k < kc; k++) buf[k * TL_A5_NR + j] = src[k];
    }
    return;
  }
  for (int64_t k = 0; k < kc; k++)
    for (int64_t j = 0; j < nr; j++) buf[k * TL_A5_NR + j] = *tl_a5_b_at(b, tb, k0 + k, j0 + j);
}

/* Columns of a row-major b (row stride ldb floats, n columns) before its rows' next 64-byte line
 * when they all sit at one offset off a line (0 when aligned, or when rows differ): the width of
 * a first panel after which every panel starts on a line. */
static int64_t tl_a5_lead(const float *b, int64_t ldb, int64_t n) {
  const int64_t mis = (int64_t)((uintptr_t)b & 63);
  return mis && mis % 4 == 0 && (ldb * 4) % 64 == 0 ? TL_MIN(n, (64 - mis) / 4) : 0;
}

/* ---- bf16 x bf16 -> f32 without a bf16 unit (avx512, avx512vnni): converted to f32 ----
 *
 * Per chunk of TL_A5_BF_MC rows of a and TL_A5_KC of k, a is converted into an f32 chunk (64 KiB
 * of stack) and each 32-column panel of b into an f32 panel (16 KiB), then the 8x32 microkernel
 * runs on them, a read as row-major (the AVX2 level does the same at 6x16 on ymm:
 * tl_a2_dot_bf16). `TILEC_ISA=avx512 tilec bench gemm --dtype bf16 --threads 2 --peers none` on
 * the Zen 5 VM, against the AVX2 path used before (2 rounds): 1024^3 8.9 -> 5.2 ms, 2048^3 71 ->
 * 41, 16x4096x4096 3.7 -> 2.3, 128x4096x4096 18.9 -> 10.9; chunks of 64 rows were 3-7% slower,
 * and a packed into 8-row micro-panels after the conversion no faster. bf16 -> f32 is
 * exact (the 16 bits shifted up) and so is each product; each acc(i, j) is one f32 sum in
 * increasing k with fused multiply-adds, as for f32; denormal bf16 inputs read as zero, as on
 * every level. */
#define TL_A5_BF_MC 128

/* 16 bf16 in the high halves of v's dwords as f32, denormals read as (signed) zero. */
static inline __m512 tl_a5_bf_daz(__m512i v) {
  const __mmask16 normal = _mm512_test_epi32_mask(v, _mm512_set1_epi32(0x7F800000));
  return _mm512_castsi512_ps(_mm512_mask_and_epi32(v, (__mmask16)~normal, v, _mm512_set1_epi32((int)0x80000000u)));
}

/* 16 bf16 at p (unaligned; lanes outside m read as zero) as 16 f32. */
static inline __m512 tl_a5_bf16x16(const uint16_t *p, __mmask16 m) {
  return tl_a5_bf_daz(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
}

/* Stages bf16 b(k0..k0+kc, j0..j0+nr) as kc rows of TL_A5_NR f32 (columns beyond nr zero or
 * untouched: never stored). Vector paths: row-major with unit column stride, and tiled with vnni
 * 2 and 16-column tiles (tl_matmul's bf16 staging and packing layout: a 64-byte tile row holds the
 * pairs (k, k + 1) of 16 columns), and TL_DOT_TRANS_B with unit column stride (16 x 16
 * transposes after the conversion); anything else element by element. */
static void tl_a5_bf_stage_b(float *buf, const tl_ref *b, int tb, int64_t k0, int64_t kc, int64_t j0, int64_t nr) {
  const tl_layout l = b->layout;
  int64_t k = 0; /* rows staged by a vector path; the rest element by element */
  if (!tb && !l.tiled && b->stride[1] == 1) {
    const uint16_t *src = (const uint16_t *)b->data + k0 * b->stride[0] + j0;
    const __mmask16 m0 = tl_a5_mask(nr), m1 = nr > 16 ? tl_a5_mask(nr - 16) : 0;
    for (; k < kc; k++, src += b->stride[0]) {
      _mm512_store_ps(buf + k * TL_A5_NR, tl_a5_bf16x16(src, m0));
      _mm512_store_ps(buf + k * TL_A5_NR + 16, tl_a5_bf16x16(src + 16, m1));
    }
  } else if (!tb && l.tiled && l.vnni == 2 && l.tile_c == 16 && l.tile_r % 2 == 0 && k0 % 2 == 0 && j0 % 16 == 0) {
    const __m512i hi = _mm512_set1_epi32((int)0xFFFF0000u);
    for (; k + 2 <= kc; k += 2) /* per 16-column tile: its row of the 16 pairs (k, k + 1) */
      for (int64_t h = 0; h < 2 && 16 * h < nr; h++) {
        const __m512i x = _mm512_loadu_si512((const uint16_t *)b->data + tl_tile_b_offset(b, 0, k0 + k, j0 + 16 * h));
        _mm512_store_ps(buf + k * TL_A5_NR + 16 * h, tl_a5_bf_daz(_mm512_slli_epi32(x, 16)));
        _mm512_store_ps(buf + (k + 1) * TL_A5_NR + 16 * h, tl_a5_bf_daz(_mm512_and_si512(x, hi)));
      }
  } else if (tb && b->stride[1] == 1) { /* b^T rows (attention's K) run along k: 16 x 16 f32 transposes */
    const uint16_t *bt = (const uint16_t *)b->data + j0 * b->stride[0] + k0;
    for (; k < kc; k += 16) {
      const __mmask16 km = tl_a5_mask(kc - k);
      for (int64_t h = 0; h < 2 && 16 * h < nr; h++) {
        __m512i v[16];
        for (int r = 0; r < 16; r++)
          v[r] = 16 * h + r < nr ? _mm512_castps_si512(tl_a5_bf16x16(bt + (16 * h + r) * b->stride[0] + k, km))
                                 : _mm512_setzero_si512();
        tl_t16_epi32(v);
        for (int64_t r = 0; r < 16 && k + r < kc; r++) _mm512_store_si512(buf + (k + r) * TL_A5_NR + 16 * h, v[r]);
      }
    }
  }
  for (; k < kc; k++)
    for (int64_t j = 0; j < nr; j++)
      buf[k * TL_A5_NR + j] = tl_tile_bf16_daz(((const uint16_t *)b->data)[tl_tile_b_offset(b, tb, k0 + k, j0 + j)]);
}

/* acc (+)= a @ b for bf16 a (row-major, unit column stride) and b (any accepted layout). */
static __attribute__((noinline)) void tl_a5_dot_bf16(tl_ref *acc, const tl_ref *a, const tl_ref *b, int tb,
                                                     int accum) {
  const int64_t m = acc->shape[0], n = acc->shape[1], kk = a->shape[1], lda = a->stride[0], ldc = acc->stride[0];
  float *pc = (float *)acc->data;
  if (m <= 2 && !tb && !b->layout.tiled && b->stride[1] == 1 && n * kk * 4 > TL_A5_STREAM_BYTES) {
    /* 1-2 rows against a row-major b block from memory (past 1 MiB as f32, as for the f32 dot):
     * the streaming walk, converting as it reads, so that b is read as a few long runs at a time;
     * its 32-column panels read 64 bytes of every row a row stride apart, each row in a page of
     * its own (`TILEC_ISA=avx512 tilec bench gemm --threads 2 --dtype bf16`, Zen 4 VM: 1x4096x4096
     * 4.78 ms, 0.26 of oneDNN's 1.26; see docs/matmul.md "bf16 on AVX-512 without AVX512-BF16") */
    if (m == 1) tl_a5_stream(1, 1, n, kk, a->data, lda, b->data, b->stride[0], pc, ldc, accum);
    else tl_a5_stream(1, 2, n, kk, a->data, lda, b->data, b->stride[0], pc, ldc, accum);
    return;
  }
  _Alignas(64) float af[TL_A5_BF_MC * TL_A5_KC];
  _Alignas(64) float bf[TL_A5_KC * TL_A5_NR];
  const int64_t pending = tl_prefetch_pending();
  const int64_t pq = pending ? TL_CDIV(pending, TL_CDIV(n, TL_A5_NR) * TL_CDIV(m, TL_A5_MR) * TL_MAX(1, TL_CDIV(kk, TL_A5_KC))) : 0;
  for (int64_t i0 = 0; i0 < m; i0 += TL_A5_BF_MC) {
    const int64_t mc = TL_MIN(m - i0, TL_A5_BF_MC);
    if (kk == 0)
      for (int64_t j0 = 0; j0 < n; j0 += TL_A5_NR)
        tl_a5_panel(mc, TL_MIN(TL_A5_NR, n - j0), 0, TL_A5_ROWS, af, TL_A5_KC, bf, TL_A5_NR, 16, pc + i0 * ldc + j0,
                    ldc, accum, NULL, 0);
    for (int64_t k0 = 0, kc; k0 < kk; k0 += kc) {
      kc = TL_MIN(kk - k0, TL_A5_KC);
      for (int64_t i = 0; i < mc; i++) { /* a's chunk as f32 rows of TL_A5_KC */
        const uint16_t *src = (const uint16_t *)a->data + (i0 + i) * lda + k0;
        for (int64_t k = 0; k < kc; k += 16) _mm512_store_ps(af + i * TL_A5_KC + k, tl_a5_bf16x16(src + k, tl_a5_mask(kc - k)));
      }
      for (int64_t j0 = 0; j0 < n; j0 += TL_A5_NR) {
        const int64_t nr = TL_MIN(TL_A5_NR, n - j0);
        tl_a5_bf_stage_b(bf, b, tb, k0, kc, j0, nr);
        tl_a5_panel(mc, nr, kc, TL_A5_WHOLE, af, TL_A5_KC, bf, TL_A5_NR, 16, pc + i0 * ldc + j0, ldc, accum || k0 > 0,
                    NULL, pq);
      }
    }
  }
}

/* The f32 dot (see the opening comment; its own frame, as tl_a5_dot_bf16 has, so that the stack
 * holds one path's buffers at a time). */
static __attribute__((noinline)) int tl_a5_dot_f32(tl_ref *acc, const tl_ref *a, const tl_ref *b, unsigned flags) {
  const int tb = (flags & TL_DOT_TRANS_B) != 0, accum = (flags & TL_DOT_ACCUMULATE) != 0;
  const int64_t m = acc->shape[0], n = acc->shape[1], kk = a->shape[1];
  if (m == 0 || n == 0) return 1;
  const float *pa = (const float *)a->data;
  float *pc = (float *)acc->data;
  const int64_t lda = a->stride[0], ldc = acc->stride[0];
  /* the executor's queued prefetches of the next step's blocks, spread over the row block calls:
   * one per row block of each panel and k chunk (row-major b in place: one k chunk; tiled b: one
   * per tile row, and per TL_A5_KC within it when a is packed); the executor issues what is left
   * when the step ends */
  const int tiled16 = !tb && b->layout.tiled && b->layout.tile_c == 16 && b->layout.vnni <= 1;
  const int64_t tr = b->layout.tile_r, tcols = TL_CDIV(b->shape[1], 16);
  const int in_place = !tb && !b->layout.tiled && b->stride[1] == 1 &&
                       (m < TL_A5_PACK_M || (kk * n * 4 <= TL_TILE_SMALL_B && tl_tile_b_fits_l1(kk, b->stride[0])));
  const int64_t kparts = in_place                      ? 1
                         : !tiled16                    ? TL_CDIV(kk, TL_A5_KC)
                         : m < TL_A5_PACK_M || tr <= TL_A5_KC ? TL_CDIV(kk, tr)
                                                       : TL_CDIV(kk, tr) * TL_CDIV(tr, TL_A5_KC);
  const int64_t pending = tl_prefetch_pending();
  const int64_t calls = TL_CDIV(n, TL_A5_NR) * TL_CDIV(m, TL_A5_MR) * TL_MAX(1, kparts);
  const int64_t pq = pending ? TL_CDIV(pending, calls) : 0;
  /* packed a (and the sweeping walk's buffer) */
  _Alignas(64) float abuf[TL_CDIV(TL_A5_MC, TL_A5_MR) * TL_A5_MR * TL_A5_KC];
  _Static_assert(TL_A5_SWEEP_BUF <= sizeof abuf / sizeof abuf[0], "the sweep's buffer fits abuf");
  if (in_place) { /* b in place */
    const float *pb = (const float *)b->data;
    /* 1-2 rows, a b block from memory: the streaming walk; 3-31 rows: the sweeping one. 1-4 rows
     * whose b rows fit one skinny panel (b read as one contiguous run when its row stride is n):
     * the skinny kernel. Any other b goes through the 32-column panels, whose next-panel
     * prefetches hide the row stride:
     * measured at 2 threads, f32 4x4096x4096 3.3-4.7 -> 1.5-1.8 ms (streamed 4 rows at a time),
     * 4x1024x1024 200 -> 115 us and 1x1024x1024 175 -> 135 us (skinny 64 / 128-column panels);
     * 2x64x4096 stays skinny (48 us; panels 65) */
    if (m <= 2 && n * kk * 4 > TL_A5_STREAM_BYTES) {
      if (m == 1) tl_a5_stream(0, 1, n, kk, pa, lda, pb, b->stride[0], pc, ldc, accum);
      else tl_a5_stream(0, 2, n, kk, pa, lda, pb, b->stride[0], pc, ldc, accum);
      return 1;
    }
    /* 3-16 rows, a b block from memory with contiguous rows (the K split's): the walk */
    if (m <= TL_TILE_WALK_M && b->stride[0] == n && n * kk * 4 > TL_A5_STREAM_BYTES) {
      tl_a5_walk(m, n, kk, pa, lda, pb, pc, ldc, accum, abuf);
      return 1;
    }
    /* other 3-31 rows (below TL_A5_PACK_M), a b block from memory: the sweeping walk */
    if (n * kk * 4 > TL_A5_STREAM_BYTES) {
      /* the queued prefetches spread over its panel calls (a row block each) */
      const int64_t sq = TL_CDIV(n, TL_A5_NR) * TL_CDIV(m, TL_A5_MR) * TL_CDIV(kk, tl_a5_sweep_rows(m));
      tl_a5_sweep(m, n, kk, pa, lda, pb, b->stride[0], pc, ldc, accum, pending ? TL_CDIV(pending, sq) : 0, abuf);
      return 1;
    }
    if (m <= 4 && n <= (m <= 2 ? 128 : 64)) {
      tl_a5_skinny(m, n, kk, pa, lda, pb, b->stride[0], pc, ldc, accum);
      return 1;
    }
    /* b's rows not on a 64-byte line but all at the same offset in one (a malloc'd b is 16 bytes
     * off): a first, narrower panel up to the next line, so that the others read whole lines
     * (every vector of a row otherwise straddles two). `tilec bench gemm --offset 16 --threads
     * 2`, f32 x 4096 x 4096: 8 rows 4.35 -> 3.60 ms, 16 rows 5.83 -> 5.08, 24 rows 6.95 -> 6.34,
     * 31 rows 8.92 -> 8.17 (docs/matmul.md; the two partial panels of each N block cost ~9% more
     * products, and with only b off 31 rows measured 5-8% slower) */
    const int64_t lead = tl_a5_lead(pb, b->stride[0], n);
    for (int64_t j0 = 0, nr; j0 < n; j0 += nr) {
      nr = j0 == 0 && lead ? lead : TL_MIN(TL_A5_NR, n - j0);
      const tl_a5_pf pf = {(const char *)(pb + j0 + nr), b->stride[0] * 4, 64, 127, 1};
      /* a whole panel's rows are whole vectors: plain loads (masks only at the N edge) */
      tl_a5_panel(m, nr, kk, nr == TL_A5_NR ? TL_A5_WHOLE : TL_A5_ROWS, pa, lda, pb + j0, b->stride[0], 16, pc + j0, ldc, accum,
                  j0 + nr < n ? &pf : NULL, pq);
    }
    return 1;
  }
  /* b tiled in 16-column tiles without interleave (what tl_matmul_pack_b makes for f32) is read
   * in place: a 32-column panel is two consecutive tiles of one tile row, so k chunks stop at
   * tile-row ends. */
  _Alignas(64) float buf[TL_A5_KC * TL_A5_NR];
  if (kk == 0) {
    for (int64_t j0 = 0; j0 < n; j0 += TL_A5_NR)
      tl_a5_panel(m, n - j0 < TL_A5_NR ? n - j0 : TL_A5_NR, 0, TL_A5_ROWS, pa, lda, buf, TL_A5_NR, 16, pc + j0, ldc, accum, NULL,
                  pq);
    return 1;
  }
  /* 5-16 rows: one pass per tile (tl_a5_kern16), a packed per k chunk of at most 512 (32 KiB of
   * stack), the tiles of a tile row read in order; `tilec bench gemm --dtype f32 --threads 2` b
   * pre-packed, 2026-11-27: 16x4096x4096 1.81-1.94 -> 1.52-1.58 ms, 16x11008x4096 5.07-5.17 ->
   * 4.21-4.32, 16x4096x11008 5.13-5.55 -> 4.54-4.61, 8 rows 1.82-1.95 -> 1.59-1.64, 5 rows a wash
   * (1-4 rows measured slower or the same this way). a16 is abuf's start (32 KiB of its 64). */
  if (tiled16 && m > 4 && m <= 16) {
    float *a16 = abuf; /* 16 x 512 of its 128 x 128 */
    int64_t chunks = 0; /* the queued prefetches spread over this path's calls */
    for (int64_t k0 = 0; k0 < kk; k0 += tl_a5_t16_chunk(k0, kk, tr)) chunks++;
    const int64_t pq16 = pending ? TL_CDIV(pending, TL_CDIV(n, 16) * chunks) : 0;
    for (int64_t k0 = 0, kc; k0 < kk; k0 += kc) {
      kc = tl_a5_t16_chunk(k0, kk, tr);
      tl_a5_pack_a(a16, pa, lda, m, k0, kc);
      for (int64_t j0 = 0; j0 < n; j0 += 16) {
        if (pq16) tl_prefetch_pump(pq16);
        tl_a5_tile16((int)m, kc, a16, tl_a5_b_at(b, 0, k0, j0), pc + j0, ldc, tl_a5_mask(n - j0), accum || k0 > 0);
      }
    }
    return 1;
  }
  /* few rows, or b already in contiguous 16-column tiles (then packing a measured 4-12% slower
   * at 256-2048 rows): a read in place, b panels in place or staged */
  if (m < TL_A5_PACK_M || tiled16) {
    for (int64_t j0 = 0; j0 < n; j0 += TL_A5_NR) {
      const int64_t nr = n - j0 < TL_A5_NR ? n - j0 : TL_A5_NR;
      for (int64_t k0 = 0, kc; k0 < kk; k0 += kc) {
        kc = kk - k0 < TL_A5_KC ? kk - k0 : TL_A5_KC;
        if (tiled16) {
          kc = tr - k0 % tr < kk - k0 ? tr - k0 % tr : kk - k0;
          const float *bp = (const float *)b->data + ((k0 / tr) * tcols + j0 / 16) * tr * 16 + (k0 % tr) * 16;
          /* the next panel is the next two tiles */
          const tl_a5_pf pf = {(const char *)(bp + 2 * tr * 16), 16 * 4, tr * 16 * 4, tr * 16 * 4, 0};
          tl_a5_panel(m, nr, kc, TL_A5_WHOLE, pa + k0, lda, bp, 16, tr * 16, pc + j0, ldc, accum || k0 > 0,
                      j0 + TL_A5_NR < n ? &pf : NULL, pq);
          continue;
        }
        tl_a5_stage_b(buf, b, tb, k0, kc, j0, nr);
        tl_a5_panel(m, nr, kc, TL_A5_WHOLE, pa + k0, lda, buf, TL_A5_NR, 16, pc + j0, ldc, accum || k0 > 0, NULL, pq);
      }
    }
    return 1;
  }
  /* a packed per (row chunk, k chunk), b per (k chunk, panel): both contiguous, L1-resident */
  for (int64_t i0 = 0; i0 < m; i0 += TL_A5_MC) {
    const int64_t mc = m - i0 < TL_A5_MC ? m - i0 : TL_A5_MC;
    for (int64_t k0 = 0, kc; k0 < kk; k0 += kc) {
      kc = kk - k0 < TL_A5_KC ? kk - k0 : TL_A5_KC;
      if (tiled16 && kc > tr - k0 % tr) kc = tr - k0 % tr;
      tl_a5_pack_a(abuf, pa + i0 * lda, lda, mc, k0, kc);
      /* (a row-major b off its lines is staged in the usual panels: line-aligned ones, as in
       * place, measured 4-7% slower at 64-128 rows, the partial panels costing more than the
       * straddling copies) */
      const int rm = !tiled16 && !tb && !b->layout.tiled && b->stride[1] == 1;
      for (int64_t j0 = 0, nr; j0 < n; j0 += nr) {
        nr = TL_MIN(TL_A5_NR, n - j0);
        const float *bp = buf;
        int64_t ldbp = TL_A5_NR, bo = 16;
        if (tiled16) { /* in place: two consecutive 16-column tiles of tile row k0 / tr */
          bp = (const float *)b->data + ((k0 / tr) * tcols + j0 / 16) * tr * 16 + (k0 % tr) * 16;
          ldbp = 16, bo = tr * 16;
        } else {
          tl_a5_stage_b(buf, b, tb, k0, kc, j0, nr);
        }
        /* staged row-major b: the last row block prefetches the next panel's source rows (this
         * k chunk's next 32 columns, or the next k chunk's first) */
        tl_a5_pf pf = {NULL, b->stride[0] * 4, 64, 127, 0}, *pfp = NULL;
        if (rm) {
          const float *pb = (const float *)b->data;
          if (j0 + nr < n) pf.p = (const char *)(pb + k0 * b->stride[0] + j0 + nr), pfp = &pf;
          else if (k0 + kc < kk && kk - k0 - kc >= kc) pf.p = (const char *)(pb + (k0 + kc) * b->stride[0]), pfp = &pf;
        }
        tl_a5_panel(mc, nr, kc, TL_A5_PACKED, abuf, 0, bp, ldbp, bo, pc + i0 * ldc + j0, ldc, accum || k0 > 0, pfp, pq);
      }
    }
  }
  return 1;
}

/* tl_tile_dot for 8-bit integers without VNNI (dot_avx512_i8.c). */
int tl_avx512_dot_i8(tl_ref *acc, const tl_ref *a, const tl_ref *b, unsigned flags);

/* tl_tile_dot's AVX-512 path: f32, bf16 converted to f32, and 8-bit integers widened to 16 bits
 * (dot_avx512_i8.c; see the opening comments). Returns 1 when it did the work. */
int tl_avx512_dot(tl_ref *acc, const tl_ref *a, const tl_ref *b, unsigned flags) {
  if (acc->dtype == TL_I32 && (a->dtype == TL_I8 || a->dtype == TL_U8) && (b->dtype == TL_I8 || b->dtype == TL_U8))
    return tl_avx512_dot_i8(acc, a, b, flags);
  if (acc->dtype != TL_F32 || a->layout.tiled || a->stride[1] != 1 || acc->stride[1] != 1) return 0;
  if (a->dtype == TL_BF16 && b->dtype == TL_BF16) {
    if (acc->shape[0] > 0 && acc->shape[1] > 0)
      tl_a5_dot_bf16(acc, a, b, (flags & TL_DOT_TRANS_B) != 0, (flags & TL_DOT_ACCUMULATE) != 0);
    return 1;
  }
  if (a->dtype != TL_F32 || b->dtype != TL_F32) return 0;
  return tl_a5_dot_f32(acc, a, b, flags);
}

/* Keeps src/tile/pack_register.c (and its constructor) in static links of tl_tile_dot users. */
extern const char tl_tile_pack_anchor;
__attribute__((used)) static const char *const tl_a5_keep_packers = &tl_tile_pack_anchor;
