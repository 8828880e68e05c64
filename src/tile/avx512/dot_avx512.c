/* dot_avx512.c — tl_tile_dot for f32 on AVX-512: acc (+)= a @ b with an 8x32 FMA microkernel.
 *
 * Contract (docs/kernels.md, "Tile dot"): called after tile.c's checks. Handles acc, a, b all
 * f32; a and acc row-major with unit column stride (any row stride); b row-major with unit column
 * stride (read in place), or TL_DOT_TRANS_B / tiled / strided (a panel of 32 columns x
 * TL_A5_KC rows is staged on the stack first). Anything else returns 0 (lower levels take it).
 *
 * Invariants:
 * - acc is read only with TL_DOT_ACCUMULATE; every element of acc is written exactly once per
 *   k-chunk, nothing outside acc's M x N elements is read or written (masked loads and stores at
 *   the N edge, a shorter row count at the M edge).
 * - Each acc(i, j) is one f32 sum in increasing k, started from acc(i, j) or 0, with fused
 *   multiply-adds (the scalar reference rounds the product first: results differ by rounding).
 * - No allocation, no locks; the stack holds at most one 16 KiB panel.
 */
#include <immintrin.h>
#include <string.h>

#include "../tile_impl.h"

/* Blocking: TL_A5_MR rows x TL_A5_NR columns of acc live in 16 zmm registers over k; staged b
 * panels hold TL_A5_KC rows of TL_A5_NR columns (16 KiB, L1-resident). */
#define TL_A5_MR 8
#define TL_A5_NR 32
#define TL_A5_KC 128

/* Mask of the first n (0..16) lanes. */
static inline __mmask16 tl_a5_mask(int64_t n) {
  return n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1u);
}

/* The microkernel: c[0..mr) x [0..16*nv) (+)= a[0..mr) x [0..kc) @ b[0..kc) x [0..16*nv), lanes
 * limited by m0 (first 16 columns) and m1 (next 16). Row strides lda, ldb, ldc in elements.
 * mr and nv are compile-time constants at every call (tl_a5_block), so acc stays in registers. */
static inline __attribute__((always_inline)) void tl_a5_kern(int mr, int nv, int64_t kc, const float *a,
                                                             int64_t lda, const float *b, int64_t ldb,
                                                             float *c, int64_t ldc, __mmask16 m0,
                                                             __mmask16 m1, int accum) {
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
    const __m512 b0 = _mm512_maskz_loadu_ps(m0, b + k * ldb);
    const __m512 b1 = nv == 2 ? _mm512_maskz_loadu_ps(m1, b + k * ldb + 16) : _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int i = 0; i < TL_A5_MR; i++) {
      if (i >= mr) break;
      const __m512 ai = _mm512_set1_ps(a[i * lda + k]);
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

/* One register block: dispatches (mr, nv) to a specialised copy of the microkernel. */
static void tl_a5_block(int mr, int nv, int64_t kc, const float *a, int64_t lda, const float *b,
                        int64_t ldb, float *c, int64_t ldc, __mmask16 m0, __mmask16 m1, int accum) {
  switch (mr * 2 + nv - 1) {
  case 2: tl_a5_kern(1, 1, kc, a, lda, b, ldb, c, ldc, m0, m1, accum); break;
  case 3: tl_a5_kern(1, 2, kc, a, lda, b, ldb, c, ldc, m0, m1, accum); break;
  case 4: tl_a5_kern(2, 1, kc, a, lda, b, ldb, c, ldc, m0, m1, accum); break;
  case 5: tl_a5_kern(2, 2, kc, a, lda, b, ldb, c, ldc, m0, m1, accum); break;
  case 6: tl_a5_kern(3, 1, kc, a, lda, b, ldb, c, ldc, m0, m1, accum); break;
  case 7: tl_a5_kern(3, 2, kc, a, lda, b, ldb, c, ldc, m0, m1, accum); break;
  case 8: tl_a5_kern(4, 1, kc, a, lda, b, ldb, c, ldc, m0, m1, accum); break;
  case 9: tl_a5_kern(4, 2, kc, a, lda, b, ldb, c, ldc, m0, m1, accum); break;
  case 10: tl_a5_kern(5, 1, kc, a, lda, b, ldb, c, ldc, m0, m1, accum); break;
  case 11: tl_a5_kern(5, 2, kc, a, lda, b, ldb, c, ldc, m0, m1, accum); break;
  case 12: tl_a5_kern(6, 1, kc, a, lda, b, ldb, c, ldc, m0, m1, accum); break;
  case 13: tl_a5_kern(6, 2, kc, a, lda, b, ldb, c, ldc, m0, m1, accum); break;
  case 14: tl_a5_kern(7, 1, kc, a, lda, b, ldb, c, ldc, m0, m1, accum); break;
  case 15: tl_a5_kern(7, 2, kc, a, lda, b, ldb, c, ldc, m0, m1, accum); break;
  case 16: tl_a5_kern(8, 1, kc, a, lda, b, ldb, c, ldc, m0, m1, accum); break;
  default: tl_a5_kern(8, 2, kc, a, lda, b, ldb, c, ldc, m0, m1, accum); break;
  }
}

/* Runs the row blocks of one panel: c[0..m) x [0..nr) (+)= a[0..m) x [0..kc) @ b (kc x nr). */
static void tl_a5_panel(int64_t m, int64_t nr, int64_t kc, const float *a, int64_t lda, const float *b,
                        int64_t ldb, float *c, int64_t ldc, int accum) {
  const int nv = nr > 16 ? 2 : 1;
  const __mmask16 m0 = tl_a5_mask(nr), m1 = nr > 16 ? tl_a5_mask(nr - 16) : 0;
  for (int64_t i0 = 0; i0 < m; i0 += TL_A5_MR) {
    const int mr = (int)(m - i0 < TL_A5_MR ? m - i0 : TL_A5_MR);
    tl_a5_block(mr, nv, kc, a + i0 * lda, lda, b, ldb, c + i0 * ldc, ldc, m0, m1, accum);
  }
}

/* Address of b(k, j) for any accepted b: TL_DOT_TRANS_B ([N, K] row-major), row-major [K, N]
 * with any strides, or tiled (vnni 1 for f32 is the only sensible one, any is honoured). */
static inline const float *tl_a5_b_at(const tl_ref *b, int tb, int64_t k, int64_t j) {
  const float *base = (const float *)b->data;
  if (tb) return base + j * b->stride[0] + k * b->stride[1];
  if (!b->layout.tiled) return base + k * b->stride[0] + j * b->stride[1];
  const int64_t tr = b->layout.tile_r, tc = b->layout.tile_c, tcols = TL_CDIV(b->shape[1], tc);
  return base + ((k / tr) * tcols + j / tc) * tr * tc + tl_layout_tile_offset(b->layout, k % tr, j % tc);
}

/* Stages b(k0..k0+kc, j0..j0+nr) as kc rows of TL_A5_NR floats (columns beyond nr untouched:
 * the kernel's masks never read them). Contiguous source runs use the fast loops. */
static void tl_a5_stage_b(float *buf, const tl_ref *b, int tb, int64_t k0, int64_t kc, int64_t j0, int64_t nr) {
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

/* tl_tile_dot's AVX-512 f32 path (see the opening comment). Returns 1 when it did the work. */
int tl_avx512_dot(tl_ref *acc, const tl_ref *a, const tl_ref *b, unsigned flags) {
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
    for (int64_t j0 = 0; j0 < n; j0 += TL_A5_NR) {
      const int64_t nr = n - j0 < TL_A5_NR ? n - j0 : TL_A5_NR;
      tl_a5_panel(m, nr, kk, pa, lda, pb + j0, b->stride[0], pc + j0, ldc, accum);
    }
    return 1;
  }
  _Alignas(64) float buf[TL_A5_KC * TL_A5_NR];
  for (int64_t j0 = 0; j0 < n; j0 += TL_A5_NR) {
    const int64_t nr = n - j0 < TL_A5_NR ? n - j0 : TL_A5_NR;
    if (kk == 0) tl_a5_panel(m, nr, 0, pa, lda, buf, TL_A5_NR, pc + j0, ldc, accum);
    for (int64_t k0 = 0; k0 < kk; k0 += TL_A5_KC) {
      const int64_t kc = kk - k0 < TL_A5_KC ? kk - k0 : TL_A5_KC;
      tl_a5_stage_b(buf, b, tb, k0, kc, j0, nr);
      tl_a5_panel(m, nr, kc, pa + k0, lda, buf, TL_A5_NR, pc + j0, ldc, accum || k0 > 0);
    }
  }
  return 1;
}

/* Keeps src/tile/pack_register.c (and its constructor) in static links of tl_tile_dot users. */
extern const char tl_tile_pack_anchor;
__attribute__((used)) static const char *const tl_a5_keep_packers = &tl_tile_pack_anchor;
