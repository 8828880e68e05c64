/* dot_avx512bf16.c — tl_tile_dot for bf16 (VDPBF16PS) and 8-bit integers (VPDPBUSD) on
 * AVX512-BF16 / AVX512-VNNI: acc (+)= a @ b with an 8x32 microkernel over pairs (bf16) or quads
 * (int8) of k (and a one-pass 16x16 or 8x16 one for 3-16 rows over tiled b).
 *
 * Contract (docs/kernels.md, "Tile dot"): called after tile.c's checks. a and acc row-major with
 * unit column stride (any row stride). b is read in place when it is tiled in the layout the
 * instruction wants (bf16: vnni 2, int8: vnni 4) with tile_c a multiple of 16 — the AMX B layout
 * (tile_r x 16) is one such; with up to 16 rows of acc a row-major b with unit column stride is
 * read in place too (pairs / quads built in registers; a block past TL_BF_STREAM_BYTES walked
 * TL_BF_STREAM_K rows at a time, bf16 with 3-16 rows TL_BF_WALK_K / TL_BF_WIDE_K rows at a time
 * with the accumulators kept in pair order: tl_bf_walk); 3-16 rows over tiles with tile_c 16 go one tile at a time in
 * one pass with a packed (tl_bf_tile16); any other b (row-major with more rows, strided, TL_DOT_TRANS_B —
 * by dword transposes when its column stride is 1 —, other tilings) is staged per panel of 32
 * columns on the stack in that layout first. Integer sign combinations:
 * u8 x s8 directly; s8 x u8 with the operands swapped in VPDPBUSD (the product commutes); s8 x s8
 * as (a + 128) x b - 128 * colsum(b); u8 x u8 returns 0 (the avx512 level's widening dot,
 * dot_avx512_i8.c, takes it). f16 and f32 return 0.
 *
 * Invariants:
 * - acc is read only with TL_DOT_ACCUMULATE; nothing outside acc's M x N elements is written
 *   (masked stores at the N edge); a is never read past column K-1 (the k tail is a masked load
 *   of the valid elements), b's padding rows beyond K may be read but are multiplied by masked-out
 *   lanes (bf16: and-ed away, since padding may hold NaN; int8: times 0).
 * - bf16: each acc(i, j) is one f32 sum over pairs of k in increasing order, each pair added as
 *   the instruction does (Intel: k+1 then k); products of bf16 are exact in f32. bf16 denormal
 *   inputs read as zero and denormal results flush to zero (instruction semantics).
 * - int8: int32 arithmetic that wraps (exact modulo 2^32): equal to the scalar reference while
 *   the true result fits in int32.
 * - No allocation, no locks; the stack holds one 16 KiB panel and 32 KiB of packed a (the walk:
 *   32 KiB of packed a).
 */
#include <immintrin.h>
#include <string.h>

/* This file is built twice: here, for the avx512bf16 level, and through
 * ../avx512vnni/dot_avx512vnni.c with TL_BF_VNNI_ONLY 1 for the avx512vnni level (AVX512-VNNI
 * without AVX512-BF16: Cascade Lake, Ice Lake), where bf16 is declined (the avx512 level takes it)
 * and no BF16 instruction is compiled in. */
#ifndef TL_BF_VNNI_ONLY
#define TL_BF_VNNI_ONLY 0
#define TL_BF_DOT_ENTRY tl_avx512bf16_dot
#endif

#include "../avx512/transpose_avx512.h"
#include "../tile_impl.h"

/* Blocking: TL_BF_MR rows x TL_BF_NR columns of acc in 16 zmm registers. A staged b panel is
 * TL_BF_KG groups (pairs or quads of k) of TL_BF_NR columns: 64 dwords x 32 = ... 16 KiB. */
#define TL_BF_MR 8
#define TL_BF_NR 32
#define TL_BF_KG 128
/* Row-major b read in place by few rows of a: a block past this many bytes is walked
 * TL_BF_STREAM_K rows at a time over all its columns (a multiple of 4: whole quads and pairs;
 * 8 measured faster than 16 for one row: bf16 1x8192x8192 17 -> 24 GB/s, int8 14.5 -> 23; with
 * the next sweep's prefetch, 4 no faster than 8 on a Zen 5 VM, int8 2x4096x4096 0.41 -> 0.58 ms). */
#define TL_BF_STREAM_BYTES ((int64_t)1 << 20)
#define TL_BF_STREAM_K 8

/* How a group of k enters the instruction. */
typedef enum tl_bf_mode {
  TL_BF_BF16, /* VDPBF16PS, pairs of k */
  TL_BF_UB,   /* u8 a x s8 b: VPDPBUSD(acc, a, b) */
  TL_BF_BU,   /* s8 a x u8 b: VPDPBUSD(acc, b, a) */
  TL_BF_SS    /* s8 a x s8 b: VPDPBUSD(acc, a ^ 0x80, b), minus 128 * column sums of b */
} tl_bf_mode;

/* Where b's groups are: group row g of the 16 columns [0, 16) at b0 + g * rowb bytes, of the
 * next 16 at b1 + g * rowb; after every kseg groups the next segment starts segb bytes after the
 * current one (tiled b: the tile below). A staged panel is one long segment. */
typedef struct tl_bf_bsrc {
  const char *b0, *b1;
  int64_t rowb, kseg, segb;
} tl_bf_bsrc;

/* A 32-bit word at any 2-byte-aligned address, read through any type (a bf16 pair). */
typedef uint32_t tl_bf_u32a __attribute__((aligned(2), may_alias));

/* Mask of the first n (0..16) lanes. */
static inline __mmask16 tl_bf_mask(int64_t n) {
  return n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1u);
}

/* acc += u8 quads of u x s8 quads of s (VPDPBUSD). Inline asm ties acc to one register: with the
 * intrinsic, GCC 12 copied every accumulator through another register (and the stack) on each
 * k step of the microkernel (measured: int8 1024^3 with b pre-packed, 2 threads, 603 -> 750
 * GOP/s). */
static inline __attribute__((always_inline)) __m512i tl_bf_dpbusd(__m512i acc, __m512i u, __m512i s) {
  __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "v"(s));
  return acc;
}

/* One step: acc += a-group x b-group for one row in the given mode. */
static inline __attribute__((always_inline)) __m512i tl_bf_step(tl_bf_mode mode, __m512i acc, __m512i av,
                                                                __m512i bv) {
  switch (mode) {
  case TL_BF_BF16:
#if TL_BF_VNNI_ONLY
    __builtin_unreachable(); /* bf16 is declined at the entry */
#else
    return _mm512_castps_si512(_mm512_dpbf16_ps(_mm512_castsi512_ps(acc), (__m512bh)av, (__m512bh)bv));
#endif
  case TL_BF_BU: return tl_bf_dpbusd(acc, bv, av);
  default: return tl_bf_dpbusd(acc, av, bv); /* UB; SS with av already biased */
  }
}

/* The microkernel: c[0..ms) x [0..16*nv) (+)= a[0..mr) x [0..kk) @ b, b as described by src,
 * in mode; a's row i, group g at a + i * ldab + g * ags bytes (4 for a row-major a, 64 for the
 * packed a of tl_bf_tile16); rows ms..mr-1 (ms <= mr <= 16; mr * nv <= 16) are computed but c is
 * never loaded or stored there. m0/m1 mask the stored columns. ge = elements per group (2 or 4),
 * esz = bytes per element (2 or 1). kk may be any count >= 0; the last group may be partial.
 * pfk 1 (pfo != 0): every vector of b read is followed by a prefetch into L2 of the one pfo bytes
 * further (the next panel; tl_bf_kern gives it); pfk 2: of the same stream pfo bytes ahead, into
 * L1 (tl_bf_tile16; into L2 where the L1 is small, tl_tile_pf_l1). mode, mr, nv and pfk are
 * compile-time constants at every call. */
static inline __attribute__((always_inline)) void tl_bf_kern_pf(tl_bf_mode mode, int mr, int nv, int pfk, int64_t kk,
                                                                const char *a, int64_t ldab, int64_t ags,
                                                                const tl_bf_bsrc *src, char *c, int64_t ldcb,
                                                                __mmask16 m0, __mmask16 m1, int accum, int64_t pfo,
                                                                int ms) {
  const int ge = mode == TL_BF_BF16 ? 2 : 4, esz = mode == TL_BF_BF16 ? 2 : 1;
  __m512i acc[16][2], cs[2];
  cs[0] = cs[1] = _mm512_setzero_si512();
#pragma GCC unroll 16
  for (int i = 0; i < 16; i++) {
    if (i >= mr) break;
    acc[i][0] = acc[i][1] = _mm512_setzero_si512();
    if (i < ms && accum) {
      acc[i][0] = _mm512_maskz_loadu_epi32(m0, c + i * ldcb);
      if (nv == 2) acc[i][1] = _mm512_maskz_loadu_epi32(m1, c + i * ldcb + 64);
    }
  }
  const __m512i bias = _mm512_set1_epi32((int)0x80808080u), ones = _mm512_set1_epi32(0x01010101);
  const int64_t full = kk / ge, rest = kk % ge;
  const char *s0 = src->b0, *s1 = src->b1;
  const int pl1 = pfk == 2 && tl_tile_pf_l1();
  int64_t g = 0;
  while (g < full) {
    const int64_t cnt = full - g < src->kseg ? full - g : src->kseg;
    for (int64_t q = 0; q < cnt; q++) {
      if (pfk == 1) { /* the next panel's vectors, one group each, into L2 */
        _mm_prefetch(s0 + q * src->rowb + pfo, _MM_HINT_T1);
        if (nv == 2) _mm_prefetch(s1 + q * src->rowb + pfo, _MM_HINT_T1);
      } else if (pfk == 2) { /* this stream, pfo bytes ahead, into L1 (tl_bf_tile16; L2 with a small L1) */
        tl_tile_pf_stream(s0 + q * src->rowb + pfo, pl1);
      }
      const __m512i bv0 = _mm512_loadu_si512(s0 + q * src->rowb);
      const __m512i bv1 = nv == 2 ? _mm512_loadu_si512(s1 + q * src->rowb) : _mm512_setzero_si512();
      if (mode == TL_BF_SS) {
        cs[0] = tl_bf_dpbusd(cs[0], ones, bv0);
        if (nv == 2) cs[1] = tl_bf_dpbusd(cs[1], ones, bv1);
      }
      const int64_t off = (g + q) * ags;
#pragma GCC unroll 16
      for (int i = 0; i < 16; i++) {
        if (i >= mr) break;
        int32_t w;
        memcpy(&w, a + i * ldab + off, 4);
        __m512i av = _mm512_set1_epi32(w);
        if (mode == TL_BF_SS) av = _mm512_xor_si512(av, bias);
        acc[i][0] = tl_bf_step(mode, acc[i][0], av, bv0);
        if (nv == 2) acc[i][1] = tl_bf_step(mode, acc[i][1], av, bv1);
      }
    }
    g += cnt;
    if (cnt == src->kseg) {
      s0 += src->segb;
      s1 += src->segb;
    } else {
      s0 += cnt * src->rowb;
      s1 += cnt * src->rowb;
    }
  }
  if (rest) { /* partial last group: valid elements from a, the rest zero; b's tail lanes masked */
    const uint32_t keep = (uint32_t)((1ull << (8 * esz * rest)) - 1u);
    __m512i bv0 = _mm512_loadu_si512(s0), bv1 = nv == 2 ? _mm512_loadu_si512(s1) : _mm512_setzero_si512();
    if (mode == TL_BF_BF16) { /* padding may be NaN: 0 x NaN is NaN, so clear it */
      bv0 = _mm512_and_si512(bv0, _mm512_set1_epi32((int)keep));
      bv1 = _mm512_and_si512(bv1, _mm512_set1_epi32((int)keep));
    }
    if (mode == TL_BF_SS) {
      const __m512i ones_t = _mm512_set1_epi32((int)(0x01010101u & keep));
      cs[0] = tl_bf_dpbusd(cs[0], ones_t, bv0);
      if (nv == 2) cs[1] = tl_bf_dpbusd(cs[1], ones_t, bv1);
    }
    const int64_t off = full * ags;
    /* the valid bytes by a masked load (one that never faults past them): a memcpy of a size
     * known only at run time was a call to libc's per row (int8 1023^3 with a read in place:
     * 2.6% slower than a staged a padded to whole quads) */
    const __mmask16 tm = (__mmask16)((1u << (esz * rest)) - 1u);
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++) {
      if (i >= mr) break;
      uint32_t w = (uint32_t)_mm_cvtsi128_si32(_mm_maskz_loadu_epi8(tm, a + i * ldab + off));
      if (mode == TL_BF_SS) w ^= 0x80808080u & keep;
      const __m512i av = _mm512_set1_epi32((int)w);
      acc[i][0] = tl_bf_step(mode, acc[i][0], av, bv0);
      if (nv == 2) acc[i][1] = tl_bf_step(mode, acc[i][1], av, bv1);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < 16; i++) {
    if (i >= mr || i >= ms) break;
    if (mode == TL_BF_SS) {
      acc[i][0] = _mm512_sub_epi32(acc[i][0], _mm512_slli_epi32(cs[0], 7));
      if (nv == 2) acc[i][1] = _mm512_sub_epi32(acc[i][1], _mm512_slli_epi32(cs[1], 7));
    }
    _mm512_mask_storeu_epi32(c + i * ldcb, m0, acc[i][0]);
    if (nv == 2) _mm512_mask_storeu_epi32(c + i * ldcb + 64, m1, acc[i][1]);
  }
}

/* tl_bf_kern_pf with pfk a constant in each copy, the prefetch compiled in or out: testing pfo
 * in the k loop measured 3-6% slower for int8 (u8 x s8, 2 threads: 1024^3 2.70 -> 2.53 ms with
 * b pre-packed, 2048^3 21.1 -> 20.3) and no different for bf16. */
static inline __attribute__((always_inline)) void tl_bf_kern(tl_bf_mode mode, int mr, int nv, int64_t kk,
                                                             const char *a, int64_t ldab, const tl_bf_bsrc *src,
                                                             char *c, int64_t ldcb, __mmask16 m0, __mmask16 m1,
                                                             int accum, int64_t pfo) {
  /* a's groups 4 bytes apart in a row (a bf16 pair, an int8 quad) */
  if (pfo) tl_bf_kern_pf(mode, mr, nv, 1, kk, a, ldab, 4, src, c, ldcb, m0, m1, accum, pfo, mr);
  else tl_bf_kern_pf(mode, mr, nv, 0, kk, a, ldab, 4, src, c, ldcb, m0, m1, accum, 0, mr);
}

/* One call of the microkernel copy for (mode, MR_, nv): MR_ a constant. */
#define TL_BF_DISPATCH(MR_)                                                                                      \
  switch (mode * 2 + nv - 1) {                                                                                   \
  case 0: tl_bf_kern(TL_BF_BF16, MR_, 1, kk, ai, ldab, src, ci, ldcb, m0, m1, accum, pf); break;                 \
  case 1: tl_bf_kern(TL_BF_BF16, MR_, 2, kk, ai, ldab, src, ci, ldcb, m0, m1, accum, pf); break;                 \
  case 2: tl_bf_kern(TL_BF_UB, MR_, 1, kk, ai, ldab, src, ci, ldcb, m0, m1, accum, pf); break;                   \
  case 3: tl_bf_kern(TL_BF_UB, MR_, 2, kk, ai, ldab, src, ci, ldcb, m0, m1, accum, pf); break;                   \
  case 4: tl_bf_kern(TL_BF_BU, MR_, 1, kk, ai, ldab, src, ci, ldcb, m0, m1, accum, pf); break;                   \
  case 5: tl_bf_kern(TL_BF_BU, MR_, 2, kk, ai, ldab, src, ci, ldcb, m0, m1, accum, pf); break;                   \
  case 6: tl_bf_kern(TL_BF_SS, MR_, 1, kk, ai, ldab, src, ci, ldcb, m0, m1, accum, pf); break;                   \
  default: tl_bf_kern(TL_BF_SS, MR_, 2, kk, ai, ldab, src, ci, ldcb, m0, m1, accum, pf); break;                  \
  }

/* Dispatches (mode, mr, nv) to a specialised copy of the microkernel, one row block at a time
 * over m rows, the last 1-7 rows as blocks of 4, 2 and 1 (one row at a time left 2 accumulator
 * chains per instruction latency: 100x4096x4096, 2 threads, bf16 10.12 -> 9.23 ms, int8 5.12 ->
 * 4.83); the last full row block (with fewer rows than a block, the last call) prefetches pfo
 * bytes ahead (0: none; see tl_bf_kern). */
static void tl_bf_rows(tl_bf_mode mode, int64_t m, int nv, int64_t kk, const char *a, int64_t ldab,
                       const tl_bf_bsrc *src, char *c, int64_t ldcb, __mmask16 m0, __mmask16 m1, int accum,
                       int64_t pfo, int64_t pq) {
  int64_t i0 = 0;
  tl_tile_prefetch_c(c, ldcb, TL_MIN(m, TL_BF_MR), nv);
  for (; i0 + TL_BF_MR <= m; i0 += TL_BF_MR) {
    const char *ai = a + i0 * ldab;
    char *ci = c + i0 * ldcb;
    const int64_t pf = i0 + 2 * TL_BF_MR > m ? pfo : 0; /* the last full block */
    if (pq) tl_prefetch_pump(pq);
    tl_tile_prefetch_c(ci + TL_BF_MR * ldcb, ldcb, TL_MIN(m - i0 - TL_BF_MR, TL_BF_MR), nv);
    TL_BF_DISPATCH(TL_BF_MR)
  }
  /* the M edge: at most TL_BF_MR - 1 rows */
  for (int64_t r = TL_BF_MR / 2; r > 0 && i0 < m; r /= 2) {
    if (m - i0 < r) continue;
    const char *ai = a + i0 * ldab;
    char *ci = c + i0 * ldcb;
    const int64_t pf = m < TL_BF_MR && i0 + r == m ? pfo : 0; /* fewer rows than a block: the last */
    if (pq) tl_prefetch_pump(pq);
    if (r == 4) TL_BF_DISPATCH(4)
    else if (r == 2) TL_BF_DISPATCH(2)
    else TL_BF_DISPATCH(1)
    i0 += r;
  }
}
#undef TL_BF_DISPATCH

/* 3-16 rows of acc over one 16-column tile of b in place (tile_c 16), a packed by tl_bf_pack_a16
 * (group g of row i at a16[g * 16 + i], rows past m zero): all the rows in one pass (16 or 8
 * accumulators; the rows past m are computed on zeros and never loaded or stored), each line of b
 * loaded once and prefetched TL_TILE_STREAM_PF bytes ahead into L1 (past the tile: the next tile
 * of the tile row, which the caller reads next). As tl_a5_kern16 for f32 (dot_avx512.c), where the two
 * passes of the 8x32 panels over 9-16 rows left memory idle during the second. */
static void tl_bf_tile16(tl_bf_mode mode, int64_t m, int64_t kk, const char *a16, const tl_bf_bsrc *src, char *c,
                         int64_t ldcb, __mmask16 m0, int accum) {
  const int ms = (int)m;
#define TL_BF_T16(MODE)                                                                                          \
  do {                                                                                                           \
    if (m > 8) tl_bf_kern_pf(MODE, 16, 1, 2, kk, a16, 4, 64, src, c, ldcb, m0, 0, accum, TL_TILE_STREAM_PF, ms);\
    else tl_bf_kern_pf(MODE, 8, 1, 2, kk, a16, 4, 64, src, c, ldcb, m0, 0, accum, TL_TILE_STREAM_PF, ms);       \
  } while (0)
  switch (mode) {
  case TL_BF_BF16: TL_BF_T16(TL_BF_BF16); break;
  case TL_BF_UB: TL_BF_T16(TL_BF_UB); break;
  case TL_BF_BU: TL_BF_T16(TL_BF_BU); break;
  default: TL_BF_T16(TL_BF_SS); break;
  }
#undef TL_BF_T16
}

/* The k chunk (elements) of the 3-16-row path from k0: within one tile row of b (tile_r tr), at
 * most 512 groups of ge (the packed a's 32 KiB). */
static inline int64_t tl_bf_t16_chunk(int64_t k0, int64_t kk, int64_t tr, int64_t ge) {
  return TL_MIN(TL_MIN(kk - k0, tr - k0 % tr), 512 * ge);
}

/* Rows [0, m) (m <= 16) of a (row stride ldab bytes), elements [k0, k0 + kc), as 4-byte groups:
 * group g of row i at out[g * 16 + i]; the bytes of a partial last group past kc, and the rows
 * from m to 16, zero. es: bytes per element. */
static void tl_bf_pack_a16(uint32_t *out, const char *a, int64_t ldab, int64_t m, int64_t k0, int64_t kc, int64_t es) {
  const int64_t ng = TL_CDIV(kc * es, 4), full = kc * es / 4;
  int64_t g0 = 0;
  for (; g0 + 16 <= full; g0 += 16) { /* 16 whole groups of every row: one 16 x 16 dword transpose */
    __m512i v[16];
    for (int64_t i = 0; i < 16; i++)
      v[i] = i < m ? _mm512_loadu_si512(a + i * ldab + k0 * es + g0 * 4) : _mm512_setzero_si512();
    tl_t16_epi32(v);
    for (int r = 0; r < 16; r++) _mm512_storeu_si512(out + (g0 + r) * 16, v[r]);
  }
  for (int64_t i = 0; i < 16; i++) {
    const char *row = a + i * ldab + k0 * es;
    for (int64_t g = g0; g < ng; g++) {
      uint32_t w = 0;
      if (i < m) memcpy(&w, row + g * 4, g < full ? 4 : (size_t)(kc * es - full * 4));
      out[g * 16 + i] = w;
    }
  }
}

/* ---- bf16 with b row-major in place (few rows of a: a memory-bound product) ----
 *
 * VDPBF16PS wants (b[k][j], b[k+1][j]) in each dword: two rows of b interleaved by
 * VPUNPCKLWD / VPUNPCKHWD give those pairs for 32 columns in two registers, lo holding columns
 * {0-3, 8-11, 16-19, 24-27} and hi {4-7, 12-15, 20-23, 28-31}; the accumulators live in that
 * order and are permuted back at the end (and c into it at the start, so each sum still starts
 * from c and adds pairs in increasing k: bit for bit what the tiled path computes). */

/* c columns [0, 32) <-> the lo/hi order above. */
static inline void tl_bf_to_pairs(__m512 c0, __m512 c1, __m512 *lo, __m512 *hi) {
  const __m512i il = _mm512_setr_epi32(0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27);
  const __m512i ih = _mm512_setr_epi32(4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
  *lo = _mm512_permutex2var_ps(c0, il, c1);
  *hi = _mm512_permutex2var_ps(c0, ih, c1);
}
static inline void tl_bf_from_pairs(__m512 lo, __m512 hi, __m512 *c0, __m512 *c1) {
  const __m512i i0 = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
  const __m512i i1 = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
  *c0 = _mm512_permutex2var_ps(lo, i0, hi);
  *c1 = _mm512_permutex2var_ps(lo, i1, hi);
}

/* Rows k and k + 1 of b (bk: row k; two = 0: row k + 1 taken as zero) for ng groups of 32
 * columns, interleaved into pairs in the lo / hi order above. */
static inline __attribute__((always_inline)) void tl_bf_rm_b(int ng, const uint16_t *bk, int64_t ldb, int two,
                                                             const __mmask16 *mk, __m512i *bl, __m512i *bh) {
#pragma GCC unroll 4
  for (int g = 0; g < 4; g++) {
    if (g >= ng) break;
    const __mmask32 m32 = (__mmask32)mk[2 * g] | ((__mmask32)mk[2 * g + 1] << 16);
    const __m512i r0 = _mm512_maskz_loadu_epi16(m32, bk + 32 * g);
    const __m512i r1 = two ? _mm512_maskz_loadu_epi16(m32, bk + ldb + 32 * g) : _mm512_setzero_si512();
    bl[g] = _mm512_unpacklo_epi16(r0, r1);
    bh[g] = _mm512_unpackhi_epi16(r0, r1);
  }
}

/* One row's accumulators (ng groups) += the pair av x b's pairs. */
static inline __attribute__((always_inline)) void tl_bf_rm_acc(int ng, __m512 *lo, __m512 *hi, __m512i av,
                                                               const __m512i *bl, const __m512i *bh) {
#if TL_BF_VNNI_ONLY
  (void)ng, (void)av, (void)bl, (void)bh, (void)lo, (void)hi;
  __builtin_unreachable(); /* bf16 is declined at the entry */
#else
#pragma GCC unroll 4
  for (int g = 0; g < 4; g++) {
    if (g >= ng) break;
    lo[g] = _mm512_dpbf16_ps(lo[g], (__m512bh)av, (__m512bh)bl[g]);
    hi[g] = _mm512_dpbf16_ps(hi[g], (__m512bh)av, (__m512bh)bh[g]);
  }
#endif
}

/* c[0..mr) x [0..32*ng) (+)= a[0..mr) x [0..kk) @ b (row-major bf16, row stride ldb elements),
 * column masks mk[2 * ng] (16 columns each), issuing pq lines of the thread's prefetch queue
 * pfq every 16 k (pq 0: none). mr and ng are compile-time constants (tl_bf_rm). */
static inline __attribute__((always_inline)) void tl_bf_rm_kern(int mr, int ng, int64_t kk, const uint16_t *a,
                                                                int64_t lda, const uint16_t *b, int64_t ldb, float *c,
                                                                int64_t ldc, const __mmask16 *mk, int accum,
                                                                tl_pfq *pfq, int64_t pq) {
  __m512 lo[8][4], hi[8][4];
#pragma GCC unroll 8
  for (int i = 0; i < 8; i++)
#pragma GCC unroll 4
    for (int g = 0; g < 4; g++) {
      lo[i][g] = hi[i][g] = _mm512_setzero_ps();
      if (i < mr && g < ng && accum)
        tl_bf_to_pairs(_mm512_maskz_loadu_ps(mk[2 * g], c + i * ldc + 32 * g),
                       _mm512_maskz_loadu_ps(mk[2 * g + 1], c + i * ldc + 32 * g + 16), &lo[i][g], &hi[i][g]);
    }
  /* 5-8 rows, whole pairs: a's pair (a[k], a[k + 1]) is one 32-bit word in memory, broadcast by
   * the load (a pair built in a general register is broadcast from there, one more shuffle per
   * row and pair next to the unpacks; this, the panels and the row blocks below together: see
   * tl_bf_rm) */
  __m512i bl[4], bh[4];
  int64_t k = 0;
  for (; mr > 4 && k + 1 < kk; k += 2) {
    if (pq && (k & 15) == 0) tl_prefetch_pump_q(pfq, pq);
    tl_bf_rm_b(ng, b + k * ldb, ldb, 1, mk, bl, bh);
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
      if (i >= mr) break;
      tl_bf_rm_acc(ng, lo[i], hi[i], _mm512_set1_epi32((int)*(const tl_bf_u32a *)(a + i * lda + k)), bl, bh);
    }
  }
  /* 3-4 rows (with the pair from memory, an experiment not kept, 4 rows ran 6-11% slower in the
   * case of tl_bf_rm's comment), and the last k of an odd count (b's next row and a's second
   * half zero) */
  for (; k < kk; k += 2) {
    const int pair = k + 1 < kk;
    if (pq && (k & 15) == 0) tl_prefetch_pump_q(pfq, pq);
    tl_bf_rm_b(ng, b + k * ldb, ldb, pair, mk, bl, bh);
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
      if (i >= mr) break;
      uint32_t w = a[i * lda + k];
      if (pair) w |= (uint32_t)a[i * lda + k + 1] << 16;
      tl_bf_rm_acc(ng, lo[i], hi[i], _mm512_set1_epi32((int)w), bl, bh);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < 8; i++) {
    if (i >= mr) break;
#pragma GCC unroll 4
    for (int g = 0; g < 4; g++) {
      if (g >= ng) break;
      __m512 c0, c1;
      tl_bf_from_pairs(lo[i][g], hi[i][g], &c0, &c1);
      _mm512_mask_storeu_ps(c + i * ldc + 32 * g, mk[2 * g], c0);
      _mm512_mask_storeu_ps(c + i * ldc + 32 * g + 16, mk[2 * g + 1], c1);
    }
  }
}

/* acc (+)= a @ b, bf16, b row-major with unit column stride, read in place: row blocks of up
 * to 8 (past 8 rows: balanced blocks of up to 7) with panels of 128 (1-3 rows), 64 (4-7) or 32
 * (8) columns, at most 28 accumulators. Until 2026-11-26: blocks of 8 and the rest, panels of 128
 * (1-2 rows), 64 (3-4) and 32 (5-8), and a's pairs built in a register for every row count;
 * a's broadcasts and the loop's overhead then weighed on half as many products. The second table
 * of `tilec_bench_tile_dot 5` (one core, M x 512 x 256, b rows 8 KiB apart, in L2; GFLOP/s, two
 * runs each): 3 rows 101 -> 183-203, 5 rows 112-117 -> 199-211, 9 rows 136-139 -> 179-191, 12
 * rows 163-166 -> 222-224, 16 rows 171-179 -> 208-217 (b tiled: 224); 1, 4 and 8 rows within
 * noise. tl_matmul (`tilec bench gemm --sizes S --threads 2 --dtype bf16 --peers none`, builds
 * alternating, 3-4 rounds per step, b from DRAM): 5x4096x4096 1.81 -> 1.57 ms, 6 rows 1.78 ->
 * 1.54, 7 rows 1.78 -> 1.64, 12 rows 2.31 -> 2.08, 13-15 rows 5-7%, 12x1000x1000 203 -> 174 us;
 * 16x4096x4096 within noise (2.6 ms; 1.46 with b pre-packed). */
/* tl_bf_rm's panel width for a row block of mr rows (all blocks of a call past 8 rows have 4-7). */
static inline int64_t tl_bf_rm_width(int64_t mr) { return mr <= 3 ? 128 : mr <= 7 ? 64 : 32; }

static void tl_bf_rm(int64_t m, int64_t n, int64_t kk, const uint16_t *a, int64_t lda, const uint16_t *b, int64_t ldb,
                     float *c, int64_t ldc, int accum) {
  /* past 8 rows, balanced blocks of at most 7 (64-column panels) rather than 8 and the rest:
   * each block reads b again from the caches, but 4-7-row blocks with 64-column panels run
   * faster than 8 rows with 32 */
  const int64_t nb = m <= 8 ? 1 : TL_CDIV(m, 7);
  /* the thread's queued prefetches (the executor's of the next step's blocks, b's rows a row
   * stride apart; or the K split's of its next chunk, matmul_body.c), spread over every 16 k of
   * each (row block, panel) call, from inside the k loop (a call there would spill the
   * accumulators: tl_prefetch_pump_q); what is left the executor issues when the step ends (the
   * K split drops it: its chunk is copied by then). Before 2026-11-26 this kernel pumped none,
   * so the executor issued the whole next block before each step, and the core waited on it (`tilec bench gemm --threads 2 --dtype bf16
   * --peers none`, builds alternating, 6-8 rounds, medians: 16x4096x4096 2.49 -> 2.22 ms,
   * 16x11008x4096 6.51 -> 5.58, 12 rows 2.03 -> 1.80, 8 rows 1.76 -> 1.65, 7 rows 1.71 -> 1.56,
   * 6 rows 1.57 -> 1.41, 5 rows 1.55 -> 1.31, 4 rows 1.45 -> 1.39, 3 rows 1.42 -> 1.35; faster in
   * 5 of 6 to 8 of 8 rounds from 5 rows, 4 of 6 and 6 of 8 at 3 and 4 rows; pre-packed rows
   * unchanged) */
  const int64_t pending = tl_prefetch_pending();
  /* pumps: per row block, panel and 16 k */
  const int64_t calls = nb * TL_CDIV(n, tl_bf_rm_width(nb == 1 ? m : 7)) * TL_MAX(1, TL_CDIV(kk, 16));
  const int64_t pq = pending ? TL_CDIV(pending, calls) : 0;
  tl_pfq *pfq = pq ? tl_prefetch_queue() : NULL;
  /* (1-2 rows pump nothing: their copies, which the streaming walk of 1-2 rows runs too, stay
   * as they were; with the queue checked in their k loop 1x4096x4096 measured 3-7% slower) */
  for (int64_t i0 = 0, mr, bi = 0; i0 < m; i0 += mr, bi++) {
    mr = nb == 1 ? m : TL_CDIV(m - i0, nb - bi);
    const int64_t w = tl_bf_rm_width(mr);
    const uint16_t *ai = a + i0 * lda;
    float *ci = c + i0 * ldc;
    for (int64_t j0 = 0; j0 < n; j0 += w) {
      __mmask16 mk[8];
      for (int v = 0; v < 8; v++) mk[v] = tl_bf_mask(TL_MAX(0, TL_MIN(16, n - j0 - 16 * v)));
      const uint16_t *bj = b + j0;
      float *cj = ci + j0;
      switch (mr) {
      case 1: tl_bf_rm_kern(1, 4, kk, ai, lda, bj, ldb, cj, ldc, mk, accum, NULL, 0); break;
      case 2: tl_bf_rm_kern(2, 4, kk, ai, lda, bj, ldb, cj, ldc, mk, accum, NULL, 0); break;
      case 3: tl_bf_rm_kern(3, 4, kk, ai, lda, bj, ldb, cj, ldc, mk, accum, pfq, pq); break;
      case 4: tl_bf_rm_kern(4, 2, kk, ai, lda, bj, ldb, cj, ldc, mk, accum, pfq, pq); break;
      case 5: tl_bf_rm_kern(5, 2, kk, ai, lda, bj, ldb, cj, ldc, mk, accum, pfq, pq); break;
      case 6: tl_bf_rm_kern(6, 2, kk, ai, lda, bj, ldb, cj, ldc, mk, accum, pfq, pq); break;
      case 7: tl_bf_rm_kern(7, 2, kk, ai, lda, bj, ldb, cj, ldc, mk, accum, pfq, pq); break;
      default: tl_bf_rm_kern(8, 1, kk, ai, lda, bj, ldb, cj, ldc, mk, accum, pfq, pq); break;
      }
    }
  }
}

#if !TL_BF_VNNI_ONLY
#include "walk_avx512bf16.h" /* tl_bf_walk: 3-16 rows, b row-major from memory */
#endif

/* ---- 8-bit integers with b row-major in place (few rows of a) ----
 *
 * VPDPBUSD wants (b[k][j], .., b[k+3][j]) in each dword: four rows of b (64 columns each) are
 * interleaved by byte then word unpacks into q0..q3, where q_x holds columns 16L + 4x .. + 3 of
 * each 128-bit lane L. The accumulators live in that order; at the end a 4 x 4 transpose of
 * 128-bit lanes puts columns back (c enters the same way first, so each sum starts from c and
 * adds quads in increasing k, as the tiled path does; int32 wraps, so the order does not change
 * the result anyway). */

/* Rows k..k+rows-1 of b (bk: row k; rows 1-4, the missing ones zero) for ng groups of 64 columns,
 * interleaved into quads q[g][0..3] in the order above; SS mode adds each quad's byte sums to cs. */
static inline __attribute__((always_inline)) void tl_q_rm_b(tl_bf_mode mode, int ng, const uint8_t *bk, int64_t ldb,
                                                            int rows, const __mmask16 *mk, __m512i q[2][4],
                                                            __m512i cs[2][4]) {
  const __m512i ones = _mm512_set1_epi32(0x01010101);
#pragma GCC unroll 2
  for (int g = 0; g < 2; g++) {
    if (g >= ng) break;
    const __mmask64 m64 = (__mmask64)mk[4 * g] | ((__mmask64)mk[4 * g + 1] << 16) | ((__mmask64)mk[4 * g + 2] << 32) |
                          ((__mmask64)mk[4 * g + 3] << 48);
    __m512i r[4];
#pragma GCC unroll 4
    for (int t = 0; t < 4; t++) r[t] = t < rows ? _mm512_maskz_loadu_epi8(m64, bk + t * ldb + 64 * g) : _mm512_setzero_si512();
    tl_x512_quads(r, q[g]);
    if (mode == TL_BF_SS)
#pragma GCC unroll 4
      for (int x = 0; x < 4; x++) cs[g][x] = tl_bf_dpbusd(cs[g][x], ones, q[g][x]);
  }
}

/* One row's accumulators (ng groups of 4) += a's quad w x b's quads (SS: w biased by 0x80 per
 * byte here; a partial last quad passes mode UB with its valid bytes biased by the caller). */
static inline __attribute__((always_inline)) void tl_q_rm_acc(tl_bf_mode mode, int ng, __m512i acc[2][4], uint32_t w,
                                                              __m512i q[2][4]) {
  if (mode == TL_BF_SS) w ^= 0x80808080u;
  const __m512i av = _mm512_set1_epi32((int)w);
#pragma GCC unroll 2
  for (int g = 0; g < 2; g++) {
    if (g >= ng) break;
#pragma GCC unroll 4
    for (int x = 0; x < 4; x++) acc[g][x] = tl_bf_step(mode, acc[g][x], av, q[g][x]); /* SS: av is biased */
  }
}

/* c[0..mr) x [0..64*ng) (+)= a @ b (8-bit, b row-major with row stride ldb bytes), in mode,
 * column masks mk[4 * ng] (16 columns each). Compile-time mode, mr, ng (tl_q_rm). */
static inline __attribute__((always_inline)) void tl_q_rm_kern(tl_bf_mode mode, int mr, int ng, int64_t kk,
                                                               const uint8_t *a, int64_t lda, const uint8_t *b,
                                                               int64_t ldb, int32_t *c, int64_t ldc,
                                                               const __mmask16 *mk, int accum, tl_pfq *pfq,
                                                               int64_t pq) {
  __m512i acc[4][2][4], cs[2][4];
#pragma GCC unroll 2
  for (int g = 0; g < 2; g++)
#pragma GCC unroll 4
    for (int x = 0; x < 4; x++) cs[g][x] = _mm512_setzero_si512();
#pragma GCC unroll 4
  for (int i = 0; i < 4; i++)
#pragma GCC unroll 2
    for (int g = 0; g < 2; g++) {
#pragma GCC unroll 4
      for (int x = 0; x < 4; x++)
        acc[i][g][x] = i < mr && g < ng && accum ? _mm512_maskz_loadu_epi32(mk[4 * g + x], c + i * ldc + 64 * g + 16 * x)
                                                 : _mm512_setzero_si512();
      if (i < mr && g < ng && accum) tl_x512_lanes_t(acc[i][g]);
    }
  int64_t k = 0;
  for (; k + 4 <= kk; k += 4) { /* whole quads: a's quad is one 32-bit word */
    if (pq && (k & 15) == 0) tl_prefetch_pump_q(pfq, pq);
    __m512i q[2][4];
    tl_q_rm_b(mode, ng, b + k * ldb, ldb, 4, mk, q, cs);
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
      if (i >= mr) break;
      uint32_t w;
      memcpy(&w, a + i * lda + k, 4);
      tl_q_rm_acc(mode, ng, acc[i], w, q);
    }
  }
  if (k < kk) { /* the last 1-3 k: b's missing rows and a's missing bytes zero */
    const int64_t left = kk - k;
    __m512i q[2][4];
    tl_q_rm_b(mode, ng, b + k * ldb, ldb, (int)left, mk, q, cs);
    const __mmask16 tm = (__mmask16)((1u << left) - 1u);
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
      if (i >= mr) break;
      /* a masked load of the valid bytes (a memcpy of a run-time size is a libc call) */
      uint32_t w = (uint32_t)_mm_cvtsi128_si32(_mm_maskz_loadu_epi8(tm, a + i * lda + k));
      if (mode == TL_BF_SS) w ^= 0x80808080u & (uint32_t)((1ull << (8 * left)) - 1u); /* the bias of valid bytes */
      tl_q_rm_acc(mode == TL_BF_SS ? TL_BF_UB : mode, ng, acc[i], w, q);
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; i++) {
    if (i >= mr) break;
#pragma GCC unroll 2
    for (int g = 0; g < 2; g++) {
      if (g >= ng) break;
      if (mode == TL_BF_SS)
#pragma GCC unroll 4
        for (int x = 0; x < 4; x++) acc[i][g][x] = _mm512_sub_epi32(acc[i][g][x], _mm512_slli_epi32(cs[g][x], 7));
      tl_x512_lanes_t(acc[i][g]);
#pragma GCC unroll 4
      for (int x = 0; x < 4; x++) _mm512_mask_storeu_epi32(c + i * ldc + 64 * g + 16 * x, mk[4 * g + x], acc[i][g][x]);
    }
  }
}

/* acc (+)= a @ b for 8-bit a and b (mode UB, BU or SS), b row-major with unit column stride,
 * read in place: row blocks of up to 4 with panels of 128 (1-2 rows) or 64 (3-4) columns. From 3
 * rows the thread's queued prefetches (the executor's of the next step's b, or the K split's of
 * its next chunk) are issued every 16 k of each (row block, panel) call, as tl_bf_rm does,
 * spread over every block, a last block of 1-2 rows too (the 1-2-row copies of a call of 1-2
 * rows pump none, as there). Until 2026-11-27 a last block of 1-2 rows pumped none either, and
 * its share was left for the executor to issue when the step ended; the K split's chunks, queued
 * one after another within a step, then fell behind (int8 5x2048x2048: see docs/matmul.md "3-16
 * rows in chunks"). Until 2026-11-26 a's
 * quad was read by a memcpy of a run-time size, a libc call per row and k step: u8 x s8 16 x 1024
 * x 1024 with b in L2, 2 threads, 101 -> 728 GOP/s; 4 rows 92 -> 470. */
/* tl_q_rm's panel width for a row block of mr rows (2 or 1 groups of 64 columns). */
static inline int64_t tl_q_rm_width(int64_t mr) { return mr <= 2 ? 128 : 64; }

static void tl_q_rm(tl_bf_mode mode, int64_t m, int64_t n, int64_t kk, const uint8_t *a, int64_t lda, const uint8_t *b,
                    int64_t ldb, int32_t *c, int64_t ldc, int accum) {
  const int64_t pending = m > 2 ? tl_prefetch_pending() : 0;
  /* pumps: per row block (the last one's panels may be wider), panel and 16 k of whole quads
   * (the kernel pumps at k = 0, 16, ... while k + 4 <= kk) */
  const int64_t calls = ((m / 4) * TL_CDIV(n, tl_q_rm_width(4)) + (m % 4 ? TL_CDIV(n, tl_q_rm_width(m % 4)) : 0)) *
                        TL_MAX(1, kk >= 4 ? (kk - 4) / 16 + 1 : 0);
  const int64_t pq = pending ? TL_CDIV(pending, calls) : 0;
  tl_pfq *pfq = pq ? tl_prefetch_queue() : NULL;
  for (int64_t i0 = 0; i0 < m; i0 += 4) {
    const int64_t mr = m - i0 < 4 ? m - i0 : 4;
    const int64_t w = tl_q_rm_width(mr);
    for (int64_t j0 = 0; j0 < n; j0 += w) {
      __mmask16 mk[8];
      for (int v = 0; v < 8; v++) mk[v] = tl_bf_mask(TL_MAX(0, TL_MIN(16, n - j0 - 16 * v)));
      const uint8_t *ai = a + i0 * lda, *bj = b + j0;
      int32_t *cj = c + i0 * ldc + j0;
#define TL_Q_CASE(MODE) \
  switch (mr) { \
  case 1: \
    if (pq) tl_q_rm_kern(MODE, 1, 2, kk, ai, lda, bj, ldb, cj, ldc, mk, accum, pfq, pq); \
    else tl_q_rm_kern(MODE, 1, 2, kk, ai, lda, bj, ldb, cj, ldc, mk, accum, NULL, 0); \
    break; \
  case 2: \
    if (pq) tl_q_rm_kern(MODE, 2, 2, kk, ai, lda, bj, ldb, cj, ldc, mk, accum, pfq, pq); \
    else tl_q_rm_kern(MODE, 2, 2, kk, ai, lda, bj, ldb, cj, ldc, mk, accum, NULL, 0); \
    break; \
  case 3: tl_q_rm_kern(MODE, 3, 1, kk, ai, lda, bj, ldb, cj, ldc, mk, accum, pfq, pq); break; \
  default: tl_q_rm_kern(MODE, 4, 1, kk, ai, lda, bj, ldb, cj, ldc, mk, accum, pfq, pq); break; \
  }
      if (mode == TL_BF_UB) TL_Q_CASE(TL_BF_UB)
      else if (mode == TL_BF_BU) TL_Q_CASE(TL_BF_BU)
      else TL_Q_CASE(TL_BF_SS)
#undef TL_Q_CASE
    }
  }
}

/* One sweep of the streaming walk for 1-2 rows of a (tl_bf_rm's / tl_q_rm's panels of 128
 * columns) that prefetches the next sweep's rows as it goes: before each panel, as many bytes
 * of the cursor's run as the panel reads of it (tl_sweep_pf). Separate from tl_bf_rm / tl_q_rm,
 * whose code for more rows stays as it was (a first version with the cursor inside them seemed
 * to slow bf16 16x4096x4096 from 1.5 to 2.0 ms; later runs put both builds at 1.4-2.1 ms, so that
 * was this machine's noise, but the split keeps the many-row code unchanged). The same panels
 * and kernels as tl_bf_rm / tl_q_rm for 1-2 rows: the same sums. */
static void tl_bf_sweep(tl_bf_mode mode, int64_t m, int64_t n, int64_t kk, const char *a, int64_t lda,
                        const char *b, int64_t ldb, char *c, int64_t ldc, int accum, tl_sweep_pf *pf, int64_t pfrows) {
  const int64_t w = 128, es = mode == TL_BF_BF16 ? 2 : 1;
  for (int64_t j0 = 0; j0 < n; j0 += w) {
    __mmask16 mk[8];
    for (int v = 0; v < 8; v++) mk[v] = tl_bf_mask(TL_MAX(0, TL_MIN(16, n - j0 - 16 * v)));
    tl_sweep_pf_issue(pf, pfrows * TL_MIN(w, n - j0) * es);
    const char *bj = b + j0 * es;
    char *cj = c + j0 * 4;
    if (mode == TL_BF_BF16) {
      if (m == 1) tl_bf_rm_kern(1, 4, kk, (const uint16_t *)a, lda, (const uint16_t *)bj, ldb, (float *)cj, ldc, mk, accum, NULL, 0);
      else tl_bf_rm_kern(2, 4, kk, (const uint16_t *)a, lda, (const uint16_t *)bj, ldb, (float *)cj, ldc, mk, accum, NULL, 0);
      continue;
    }
#define TL_Q_SWEEP(MODE) \
  if (m == 1) tl_q_rm_kern(MODE, 1, 2, kk, (const uint8_t *)a, lda, (const uint8_t *)bj, ldb, (int32_t *)cj, ldc, mk, accum, NULL, 0); \
  else tl_q_rm_kern(MODE, 2, 2, kk, (const uint8_t *)a, lda, (const uint8_t *)bj, ldb, (int32_t *)cj, ldc, mk, accum, NULL, 0);
    if (mode == TL_BF_UB) { TL_Q_SWEEP(TL_BF_UB) }
    else if (mode == TL_BF_BU) { TL_Q_SWEEP(TL_BF_BU) }
    else { TL_Q_SWEEP(TL_BF_SS) }
#undef TL_Q_SWEEP
  }
}

/* Address of b(k, j) for any accepted b: TL_DOT_TRANS_B, row-major with any strides, or tiled
 * with any vnni. */
static inline const char *tl_bf_b_at(const tl_ref *b, int tb, int64_t k, int64_t j, int64_t es) {
  return (const char *)b->data + tl_tile_b_offset(b, tb, k, j) * es;
}

/* Stages b(k0..k0+kc, j0..j0+nr) into buf as groups of ge k (vnni ge) for TL_BF_NR columns:
 * element (k, j) at ((k / ge) * TL_BF_NR + j) * ge + k % ge. Positions outside kc x nr are
 * zeroed (never NaN, so the kernel's masks are a second line only). */
static void tl_bf_stage_b(char *buf, const tl_ref *b, int tb, int64_t k0, int64_t kc, int64_t j0, int64_t nr,
                          int ge, int64_t es) {
  const int64_t groups = TL_CDIV(kc, ge);
  memset(buf, 0, (size_t)(groups * TL_BF_NR * ge * es));
  for (int64_t k = 0; k < kc; k++) {
    char *row = buf + ((k / ge) * TL_BF_NR * ge + k % ge) * es;
    if (es == 2) {
      for (int64_t j = 0; j < nr; j++) memcpy(row + j * ge * 2, tl_bf_b_at(b, tb, k0 + k, j0 + j, 2), 2);
    } else {
      for (int64_t j = 0; j < nr; j++) row[j * ge] = *tl_bf_b_at(b, tb, k0 + k, j0 + j, 1);
    }
  }
}

/* tl_bf_stage_b for TL_DOT_TRANS_B with unit column stride (b^T rows, e.g. the keys of attention,
 * are contiguous along k): a group of k (a pair of bf16, a quad of int8) is one dword of a row of
 * b^T, so the panel is a dword transpose, done 16 x 16 at a time; bytes past kc and columns past
 * nr load as zero. Measured: the element-wise staging took 13% of attention's time. */
static void tl_bf_stage_bt(char *buf, const tl_ref *b, int64_t k0, int64_t kc, int64_t j0, int64_t nr, int64_t es) {
  const int64_t ldb = b->stride[0] * es;
  tl_stage_bt_dwords(buf, (const char *)b->data + j0 * ldb + k0 * es, ldb, kc * es, nr, TL_BF_NR,
                     TL_CDIV(kc * es, 4), 64, TL_BF_NR * 4);
}

/* tl_tile_dot's AVX512-BF16 / VNNI path (see the opening comment). Returns 1 when it did the
 * work. */
int TL_BF_DOT_ENTRY(tl_ref *acc, const tl_ref *a, const tl_ref *b, unsigned flags) {
  tl_bf_mode mode;
  if (a->dtype == TL_BF16 && b->dtype == TL_BF16 && !TL_BF_VNNI_ONLY) mode = TL_BF_BF16;
  else if (a->dtype == TL_U8 && b->dtype == TL_I8) mode = TL_BF_UB;
  else if (a->dtype == TL_I8 && b->dtype == TL_U8) mode = TL_BF_BU;
  else if (a->dtype == TL_I8 && b->dtype == TL_I8) mode = TL_BF_SS;
  else return 0;
  if (a->layout.tiled || a->stride[1] != 1 || acc->stride[1] != 1) return 0;
  const int tb = (flags & TL_DOT_TRANS_B) != 0, accum = (flags & TL_DOT_ACCUMULATE) != 0;
  const int64_t m = acc->shape[0], n = acc->shape[1], kk = a->shape[1];
  if (m == 0 || n == 0) return 1;
  const int ge = mode == TL_BF_BF16 ? 2 : 4;
  const int64_t es = mode == TL_BF_BF16 ? 2 : 1;
  const char *pa = (const char *)a->data;
  char *pc = (char *)acc->data;
  const int64_t ldab = a->stride[0] * es, ldcb = acc->stride[0] * 4;
  const tl_layout bl = b->layout;
  if (!tb && !bl.tiled && b->stride[1] == 1 && m <= 16) { /* few rows: b row-major in place */
    /* a b block past TL_BF_STREAM_BYTES comes from memory: TL_BF_STREAM_K rows of b at a time over
     * all n columns (acc carried in acc between the chunks, which start on whole pairs / quads, so
     * every sum is the same sequence of instructions), so b is read as a few long contiguous runs
     * at a time, as the f32 streaming kernel does */
    const int stream = n * kk * es > TL_BF_STREAM_BYTES;
#if !TL_BF_VNNI_ONLY
    if (stream && mode == TL_BF_BF16 && m >= 3 && m <= TL_TILE_WALK_M) {
      tl_bf_walk(m, n, kk, (const uint16_t *)a->data, a->stride[0], (const uint16_t *)b->data, b->stride[0],
                 (float *)acc->data, acc->stride[0], accum);
      return 1;
    }
#endif
    const int64_t kstep = stream ? TL_BF_STREAM_K : kk;
    for (int64_t k0 = 0; k0 < kk || k0 == 0; k0 += kstep) {
      const int64_t kc = kk - k0 < kstep ? kk - k0 : kstep;
      const int acc_k = accum || k0 > 0;
      /* 1-2 rows: each sweep prefetches the next one's rows as one run, spread over its panels
       * (tl_sweep_pf; docs/matmul.md: on a Zen 5 VM, 2 threads, with tl_matmul's K split, int8
       * 1x11008x4096 2.36 -> 1.07 ms, bf16 3.49 -> 2.24) */
      const int64_t kn = stream && m <= 2 ? TL_MIN(kstep, kk - k0 - kstep) : 0;
      tl_sweep_pf pf = tl_sweep_pf_at((const char *)b->data + (kn > 0 ? (k0 + kstep) * b->stride[0] * es : 0), kn,
                                      n * es, b->stride[0] * es);
      const char *bk = (const char *)b->data + k0 * b->stride[0] * es;
      if (kn > 0)
        tl_bf_sweep(mode, m, n, kc, pa + k0 * es, a->stride[0], bk, b->stride[0], pc, acc->stride[0], acc_k, &pf, kn);
      else if (mode == TL_BF_BF16)
        tl_bf_rm(m, n, kc, (const uint16_t *)a->data + k0, a->stride[0], (const uint16_t *)bk, b->stride[0],
                 (float *)acc->data, acc->stride[0], acc_k);
      else
        tl_q_rm(mode, m, n, kc, (const uint8_t *)a->data + k0, a->stride[0], (const uint8_t *)bk, b->stride[0],
                (int32_t *)acc->data, acc->stride[0], acc_k);
      if (kk == 0) break;
    }
    return 1;
  }
  const int direct = !tb && bl.tiled && bl.vnni == ge && bl.tile_c % 16 == 0;
  /* the executor's queued prefetches of the next step's blocks, spread over the kernel calls of
   * the direct path (a row block, or a block of 4, 2 or 1 rows at the M edge; the staged path
   * pumps none): the
   * executor issues what is left when the step ends */
  const int64_t pending = tl_prefetch_pending(), calls = TL_CDIV(n, TL_BF_NR) * (m / TL_BF_MR + __builtin_popcountll((unsigned long long)(m % TL_BF_MR)));
  const int64_t pq = TL_CDIV(pending, calls);
  _Alignas(64) char buf[TL_BF_KG * TL_BF_NR * 4];
  /* 3-16 rows over b's 16-column tiles in place: tile after tile in one pass each (tl_bf_tile16),
   * a packed per k chunk of at most 512 groups (32 KiB), within one tile row. `tilec bench gemm
   * --threads 2` with b pre-packed, three alternating runs on the Zen 5 VM, before -> after: bf16
   * 16x4096x4096 1.01-1.10 -> 0.73-0.82 ms, 16x11008x4096 2.69-2.96 -> 2.01-2.31, 16x4096x11008
   * 2.99-3.36 -> 2.33-2.37, 12 rows 1.00-1.20 -> 0.84, 8 rows 0.84-0.98 -> 0.82-0.87, 5 rows
   * 1.04-1.20 -> 0.82-0.83; int8 (u8 x s8) 16x4096x4096 489-543 -> 420-455 us, 16x11008x4096
   * 1.33-1.50 -> 1.11-1.13 ms, 16x4096x11008 1.60-1.63 -> 1.16-1.23, 12 rows 501-547 -> 430-437
   * us, 8 rows 457-463 -> 442-452, 5 rows 507-536 -> 425-433. 3-4 rows too since 2026-11-27
   * (the 8-row kernel, 4-5 of its rows on zeros: the product waits on b anyway), same command,
   * 3 rounds alternating: bf16 3x4096x4096 0.82-0.89 -> 0.66-0.69 ms, 4 rows 0.76-0.77 ->
   * 0.64-0.70, 4x11008x4096 2.18-2.26 -> 2.04-2.12, 3x1024x1024 64-66 -> 56-59 us; int8
   * 3x4096x4096 383-412 -> 255-376 us, 4x11008x4096 0.91-1.12 -> 0.70-0.88 ms, 3x1024x1024
   * 30-33 -> 23-25 us; 1-2 rows so measured no faster (int8 1x4096x4096 361-380 -> 375-391 us,
   * 1x1024x1024 25-27 -> 27-28; bf16 too noisy that run to say), and keep the 8x32 rows */
  if (direct && bl.tile_c == 16 && m > 2 && m <= 16) {
    _Alignas(64) uint32_t a16[16 * 512];
    const int64_t tr = bl.tile_r;
    int64_t chunks = 0; /* the queued prefetches spread over this path's calls */
    for (int64_t k0 = 0; k0 < kk; k0 += tl_bf_t16_chunk(k0, kk, tr, ge)) chunks++;
    const int64_t pq16 = TL_CDIV(pending, TL_CDIV(n, 16) * TL_MAX(chunks, 1));
    for (int64_t k0 = 0, kc; k0 < kk || k0 == 0; k0 += kc) {
      kc = tl_bf_t16_chunk(k0, kk, tr, ge);
      tl_bf_pack_a16(a16, pa, ldab, m, k0, kc, es);
      for (int64_t j0 = 0; j0 < n; j0 += 16) {
        const char *b0 = tl_bf_b_at(b, 0, k0, j0, es); /* the tile's group row k0 / ge */
        const tl_bf_bsrc src = {.b0 = b0, .b1 = b0, .rowb = 16 * ge * es, .kseg = TL_CDIV(kc, ge) + 1, .segb = 0};
        if (pq16) tl_prefetch_pump(pq16);
        tl_bf_tile16(mode, m, kc, (const char *)a16, &src, pc + j0 * 4, ldcb, tl_bf_mask(n - j0), accum || k0 > 0);
      }
      if (kk == 0) break;
    }
    return 1;
  }
  for (int64_t j0 = 0; j0 < n; j0 += TL_BF_NR) {
    const int64_t nr = n - j0 < TL_BF_NR ? n - j0 : TL_BF_NR;
    const int nv = nr > 16 ? 2 : 1;
    const __mmask16 m0 = tl_bf_mask(nr), m1 = nr > 16 ? tl_bf_mask(nr - 16) : 0;
    if (direct) { /* b's tiles in place: 16 columns never straddle a tile (tile_c % 16 == 0) */
      const int64_t tr = bl.tile_r, tc = bl.tile_c, tcols = TL_CDIV(n, tc), tile = tr * tc * es;
      const int64_t j1 = j0 + 16;
      tl_bf_bsrc src = {
          .b0 = (const char *)b->data + (j0 / tc) * tile + (j0 % tc) * ge * es,
          .b1 = (const char *)b->data + (j1 / tc) * tile + (j1 % tc) * ge * es,
          .rowb = tc * ge * es, .kseg = tr / ge, .segb = tcols * tile};
      if (nv == 1) src.b1 = src.b0;
      /* the last row block prefetches the next panel into L2 as it goes, one vector per vector
       * it reads: with few row blocks (skinny M) the first block of each panel otherwise waits
       * on memory and the others compute with memory idle (pre-packed int8 16x4096x4096, 2
       * threads, b from DRAM: 0.95 -> 0.73 ms; bf16 1.92 -> 1.47 ms; 24-32 rows 13-30%) */
      const int64_t jn = j0 + TL_BF_NR;
      const int64_t pfo = jn < n ? (jn / tc - j0 / tc) * tile + (jn % tc - j0 % tc) * ge * es : 0;
      tl_bf_rows(mode, m, nv, kk, pa, ldab, &src, pc + j0 * 4, ldcb, m0, m1, accum, pfo, pq);
      continue;
    }
    if (kk == 0) {
      tl_bf_bsrc src = {.b0 = buf, .b1 = buf, .rowb = 0, .kseg = 1, .segb = 0};
      tl_bf_rows(mode, m, nv, 0, pa, ldab, &src, pc + j0 * 4, ldcb, m0, m1, accum, 0, 0);
    }
    const int64_t kc_max = (int64_t)TL_BF_KG * ge;
    for (int64_t k0 = 0; k0 < kk; k0 += kc_max) {
      const int64_t kc = kk - k0 < kc_max ? kk - k0 : kc_max;
      if (tb && b->stride[1] == 1) tl_bf_stage_bt(buf, b, k0, kc, j0, nr, es);
      else tl_bf_stage_b(buf, b, tb, k0, kc, j0, nr, ge, es);
      const int64_t rowb = TL_BF_NR * ge * es;
      tl_bf_bsrc src = {.b0 = buf, .b1 = buf + 16 * ge * es, .rowb = rowb, .kseg = TL_BF_KG, .segb = TL_BF_KG * rowb};
      tl_bf_rows(mode, m, nv, kc, pa + k0 * es, ldab, &src, pc + j0 * 4, ldcb, m0, m1, accum || k0 > 0, 0, 0);
    }
  }
  return 1;
}
