/* pack_avx512.c — AVX-512 staging packers for the VNNI layouts the dot paths read: 2-byte
 * elements with vnni 2 (bf16 / f16 B operands) and 1-byte elements with vnni 4 (int8 B
 * operands). Registered by src/tile/pack_register.c for TL_ISA_AVX512 and above.
 *
 * Contract: tl_pack_job (src/runtime/plan_impl.h, reference tl_pack_portable in stage.c). Every
 * destination element of every tile is written exactly once: source values inside rows x cols,
 * pad (zero when job->pad is NULL) elsewhere, tile padding included. In the interleaved layouts
 * one column of a vnni group is 4 bytes, so 16 columns of a group are one 64-byte store built
 * from 2 (or 4) source rows; 64 bytes of each row are loaded at once and interleaved in
 * registers (unpacks, then 128-bit lane shuffles to restore the column order: 1.9x faster int8
 * 16x4096x4096 than 16-byte loads widened per row). Jobs this packer does not cover (source
 * column stride != 1, tile_c not a multiple of 16, other element sizes) go to tl_pack_portable.
 */
#include <immintrin.h>
#include <string.h>

#include "../../runtime/plan_impl.h"
#include "../tile_impl.h"

/* Source rows the packer does at a time, chunk by chunk: bf16 8 pairs, int8 16 quads. Source
 * rows a multiple of 4 KiB apart share L1 sets, so a chunk's column of 64-byte pieces is read
 * from L2 past 8 rows; 16 bf16 rows measured best of 8 / 16 / 32 (32 before), int8 64 of 16 /
 * 64 (`tilec bench gemm --sizes S --threads 2 --dtype D --peers none`, builds alternating, 4
 * rounds; bf16 32x4096x4096 4.08 / 3.81 / 3.93 ms, 128x4096x4096 11.6 / 11.3 / 11.4; int8
 * 8x4096x4096 1.32 / 1.16 ms, 16x4096x4096 1.60 / 1.52). */
#ifndef TL_P5_ROWS2
#define TL_P5_ROWS2 16
#endif
#ifndef TL_P5_ROWS1
#define TL_P5_ROWS1 64
#endif

/* 64 bytes of source row r from column c (pad elements beyond rows x cols); full: the row and
 * all 64 bytes are inside the source (a plain load). */
static inline __attribute__((always_inline)) __m512i tl_p5_row64(const tl_pack_job *j, int64_t r, int64_t c, int64_t es,
                                                                 __m512i padv, int full) {
  if (full) return _mm512_loadu_si512(j->src + (r * j->src_rs + c) * es);
  if (r >= j->rows || c >= j->cols) return padv;
  const int64_t left = (j->cols - c) * es;
  const __mmask64 m = left >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << left) - 1);
  return _mm512_mask_loadu_epi8(padv, m, j->src + (r * j->src_rs + c) * es);
}

/* One group of v rows (r0..) over 64 source bytes from column c: the v-interleaved groups of 16
 * columns each, in column order, into out (4 for int8, 64 columns; 2 for bf16, 32 columns).
 * int8: the byte / word unpacks interleave within 128-bit lanes (lane L of unpack x holds
 * columns 16L + 4x..), the lane shuffles put the columns back in order; bf16: one two-source
 * word permute per 16 columns (an unpack and three lane shuffles before 2026-11-26). */
static inline __attribute__((always_inline)) void tl_p5_group(const tl_pack_job *j, int64_t r0, int64_t c, int64_t es,
                                                              __m512i padv, int full, __m512i *out) {
  if (es == 1) {
    const __m512i r[4] = {tl_p5_row64(j, r0, c, 1, padv, full), tl_p5_row64(j, r0 + 1, c, 1, padv, full),
                          tl_p5_row64(j, r0 + 2, c, 1, padv, full), tl_p5_row64(j, r0 + 3, c, 1, padv, full)};
    tl_x512_quads(r, out);
    tl_x512_lanes_t(out);
    return;
  }
  /* word i of the result: word i / 2 of a (even i) or of b (odd), from column 0 or 16 */
  const __m512i i0 = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39, 7, 38, 6, 37,
                                      5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
  const __m512i i1 = _mm512_add_epi16(i0, _mm512_set1_epi16(16));
  const __m512i a = tl_p5_row64(j, r0, c, 2, padv, full), b = tl_p5_row64(j, r0 + 1, c, 2, padv, full);
  out[0] = _mm512_permutex2var_epi16(a, i0, b);
  out[1] = _mm512_permutex2var_epi16(a, i1, b);
}

/* gn groups from row r0 at column c, their nq 16-column vectors stored at dq[q] + g * dstep
 * (nt: non-temporal stores, every address 64-byte aligned). es, gn and full are constants for a
 * chunk wholly inside the source (full: plain loads, no bounds). */
static inline __attribute__((always_inline)) void tl_p5_chunk(const tl_pack_job *j, int64_t r0, int64_t c, int64_t es,
                                                              int64_t v, int64_t gn, __m512i padv, int full,
                                                              char *const *dq, int nq, int64_t dstep, int nt) {
  for (int64_t g = 0; g < gn; g++) {
    __m512i out[4];
    tl_p5_group(j, r0 + g * v, c, es, padv, full, out);
    for (int q = 0; q < nq; q++) {
      if (nt) _mm512_stream_si512((void *)(dq[q] + g * dstep), out[q]);
      else _mm512_storeu_si512(dq[q] + g * dstep, out[q]);
    }
  }
}

/* The vnni packer (see the opening comment). */
void tl_avx512_pack_vnni(const tl_pack_job *j) {
  tl_vnni_geom gm;
  if (!tl_vnni_geom_of(j, &gm)) {
    tl_pack_portable(j);
    return;
  }
  const int64_t es = gm.es, v = gm.v, tr = gm.tr, tc = gm.tc, trows = gm.trows, tcols = gm.tcols, tile = gm.tile;
  const uint32_t pad = gm.pad;
  /* non-temporal stores when asked and every 64-byte store lands on a line (dst and the tile
   * stride aligned; group rows are 64 bytes) */
  const int nt = j->nt && (uintptr_t)j->dst % 64 == 0 && tile % 64 == 0;
  /* v rows x 64 bytes at a time: whole-vector loads and in-register interleaves */
  const __m512i padv = es == 1 ? _mm512_set1_epi8((char)pad) : _mm512_set1_epi16((short)pad);
  const int64_t width = tcols * tc, step = 64 / es;
  const int64_t rowb = TL_MIN(width, j->cols) * es; /* bytes of a source row read */
  const int64_t ng = tr / v, G = (es == 1 ? TL_P5_ROWS1 : TL_P5_ROWS2) / v;
  /* G groups at a time, chunk by chunk: each chunk's stores then run down G consecutive group
   * rows of each of its tiles (contiguous), where a chunk per group would step from tile to tile
   * (tiles of a K block a multiple of 4 KiB apart: the same L1 sets). Chunks wholly inside the
   * source take plain loads and no per-row bounds (`tilec bench gemm --sizes S --threads 2
   * --dtype D --peers none`, builds alternating, 5 rounds, medians: int8 8x4096x4096 1.26 -> 1.18
   * ms, 16x4096x4096 1.54 -> 1.44; bf16 256x4096x4096 23.7 -> 22.8, 3 rounds) */
  for (int64_t ti = 0; ti < trows; ti++)
    for (int64_t g0 = 0; g0 < ng; g0 += G) {
      const int64_t gn = TL_MIN(G, ng - g0);
      /* the next block's rows (short runs a row stride apart, each in its own page: the hardware
       * prefetchers do not follow them) */
      for (int64_t r = ti * tr + (g0 + gn) * v; r < ti * tr + TL_MIN(g0 + gn + G, ng) * v && r < j->rows; r++)
        for (int64_t o = 0; o < rowb; o += 64) _mm_prefetch(j->src + r * j->src_rs * es + o, _MM_HINT_T0);
      for (int64_t c = 0; c < width; c += step) {
        char *dq[4]; /* where the chunk's 16-column vectors go, at group row g0 */
        const int nq = (int)TL_MIN(es == 1 ? 4 : 2, (width - c) / 16);
        for (int q = 0; q < nq; q++)
          dq[q] = j->dst + (ti * tcols + (c + 16 * q) / tc) * tile + (g0 * tc + (c + 16 * q) % tc) * 4;
        const int64_t r0 = ti * tr + g0 * v;
        if (gn == G && r0 + G * v <= j->rows && c + step <= j->cols) { /* interior */
          if (es == 1) tl_p5_chunk(j, r0, c, 1, 4, TL_P5_ROWS1 / 4, padv, 1, dq, 4, tc * 4, nt);
          else tl_p5_chunk(j, r0, c, 2, 2, TL_P5_ROWS2 / 2, padv, 1, dq, 2, tc * 4, nt);
        } else {
          tl_p5_chunk(j, r0, c, es, v, gn, padv, 0, dq, nq, tc * 4, nt);
        }
      }
    }
  if (nt) _mm_sfence();
}
