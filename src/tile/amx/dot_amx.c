/* dot_amx.c — tl_tile_dot on AMX: TDPBF16PS for bf16 and TDPBSSD / TDPBSUD / TDPBUSD /
 * TDPBUUD for 8-bit integers, with a 2x2 block of 16x16 accumulator tiles.
 *
 * Contract (docs/kernels.md, "Tile dot"): called after tile.c's checks. Handles what maps onto
 * AMX tiles:
 * - a row-major with unit column stride (any row stride: TILELOADD takes it), K whole pairs
 *   (bf16) / quads (int8): the tile steps of 32 / 64 k, then the K edge in one step of A tiles
 *   of fewer bytes a row and B tiles of fewer rows, under configurations of their own, over the
 *   sums the first pass stored (until 2026-11-26 K had to be a multiple of 32 / 64: attention's
 *   Q K^T at D = 80 ran on AVX512-BF16);
 * - b tiled in the AMX B layout: vnni 2 (bf16) / 4 (int8), tile_c 16, tile_r a multiple of 32
 *   (bf16) / 64 (int8), read in place; or TL_DOT_TRANS_B with unit column stride (b [N, K]:
 *   attention's keys), staged into that layout on the stack, TL_AMX_BT_COLS columns by 32 KiB
 *   at a time, by 16 x 16 dword transposes (until 2026-11-26 declined: attention's Q K^T ran on
 *   AVX512-BF16 at the amx level);
 * - acc row-major with unit column stride, M from 16, any N: 16 x 16 tiles over the first M / 16
 *   x N / 16 of them (2 x 2 blocks), then the last M % 16 rows and N % 16 columns with tiles of
 *   that many rows (C, A) and columns (C, B) under configurations of their own. Fewer than 16
 *   rows are left to the AVX512-BF16 / VNNI dots (a skinny product waits on b, and what tiles of
 *   a few rows cost on AMX was not measured: no AMX here). Until
 *   2026-11-26 M and N had to be multiples of 16: in tl_matmul at the amx level (emulated:
 *   docs/kernels.md) bf16 100x1024x1024 then ran none of its products on AMX, 200x1024x1024 48%,
 *   300x512x512 32%, int8 200x1024x1024 none.
 * Anything else returns 0 and the AVX512-BF16 / VNNI path below takes it.
 *
 * Invariants:
 * - The tile configuration (palette 1, tl_amx_config in amx_impl.h) is loaded before the full
 *   tiles and again for each edge shape (M, N, K), by every call that takes the work;
 *   TILERELEASE ends it.
 * - Tiles: 0-3 accumulators C[r][c], 4-5 A tiles, 6-7 B tiles. Nothing outside acc's M x N, a's
 *   M x K and b's valid columns is loaded or stored (B's padding columns are not loaded at the
 *   N edge).
 * - acc's incoming values are read (TILELOADD) only with TL_DOT_ACCUMULATE, else the
 *   accumulators start at zero; each C tile is stored once per pass over k (the tile steps, the
 *   K edge, each k chunk of a transposed b), and a later pass reads back what the one before
 *   stored.
 * - AMX permission: the context asks for it (tl_ctx_need_amx); as a safety net for calls outside
 *   a plan, the path returns 0 unless the process holds it (tl_amx_request, asked once).
 * - bf16: f32 sums per tile step in the instruction's order (pairs of k); denormal inputs read as
 *   zero. int8: int32 arithmetic that wraps (equal to the scalar reference while the result fits).
 * - No allocation, no locks; the stack holds one 32 KiB staged chunk of a transposed b.
 */
#include <immintrin.h>
#include <string.h>

#include "../avx512/transpose_avx512.h"
#include "../tile_impl.h"
#include "amx_impl.h"

/* Which TDP instruction a call uses. */
typedef enum tl_amx_op { TL_AMX_BF16, TL_AMX_SS, TL_AMX_SU, TL_AMX_US, TL_AMX_UU } tl_amx_op;

/* C tile t (+)= A tile ta x B tile tb in op's instruction (tile numbers are immediates, hence
 * the explicit cases). */
#define TL_AMX_DP(op, t, ta, tb)                 \
  do {                                           \
    switch (op) {                                \
    case TL_AMX_BF16: _tile_dpbf16ps(t, ta, tb); break; \
    case TL_AMX_SS: _tile_dpbssd(t, ta, tb); break;     \
    case TL_AMX_SU: _tile_dpbsud(t, ta, tb); break;     \
    case TL_AMX_US: _tile_dpbusd(t, ta, tb); break;     \
    default: _tile_dpbuud(t, ta, tb); break;            \
    }                                            \
  } while (0)

/* A 32 x 32 block of acc over the whole K (ksteps A tiles of 64 bytes per row). a: the block's
 * first row, lda bytes per row; b0, b1: the first B tiles of the two 16-column groups; a B tile
 * holds kper sub-tiles of 16 rows x 64 bytes (1 KiB each), and the tile below it in k starts
 * kstep_rows bytes later; c: the block's first element, ldc bytes per row. */
static void tl_amx_2x2(tl_amx_op op, int64_t ksteps, const char *a, int64_t lda, const char *b0,
                       const char *b1, int64_t kper, int64_t kstep_rows, char *c, int64_t ldc, int accum) {
  if (accum) {
    _tile_loadd(0, c, ldc);
    _tile_loadd(1, c + 64, ldc);
    _tile_loadd(2, c + 16 * ldc, ldc);
    _tile_loadd(3, c + 16 * ldc + 64, ldc);
  } else {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  }
  for (int64_t s = 0; s < ksteps; s++) {
    /* the B sub-tile of step s: tile (s / kper) in k, rows (s % kper) * 16.. of that tile */
    const int64_t boff = (s / kper) * kstep_rows + (s % kper) * 1024;
    _tile_loadd(4, a + s * 64, lda);
    _tile_loadd(5, a + 16 * lda + s * 64, lda);
    _tile_loadd(6, b0 + boff, 64);
    _tile_loadd(7, b1 + boff, 64);
    TL_AMX_DP(op, 0, 4, 6);
    TL_AMX_DP(op, 1, 4, 7);
    TL_AMX_DP(op, 2, 5, 6);
    TL_AMX_DP(op, 3, 5, 7);
  }
  _tile_stored(0, c, ldc);
  _tile_stored(1, c + 64, ldc);
  _tile_stored(2, c + 16 * ldc, ldc);
  _tile_stored(3, c + 16 * ldc + 64, ldc);
}

/* A 16 x 16 block of acc (the edges of the 32 x 32 grid); arguments as tl_amx_2x2. */
static void tl_amx_1x1(tl_amx_op op, int64_t ksteps, const char *a, int64_t lda, const char *b0,
                       int64_t kper, int64_t kstep_rows, char *c, int64_t ldc, int accum) {
  if (accum)
    _tile_loadd(0, c, ldc);
  else
    _tile_zero(0);
  for (int64_t s = 0; s < ksteps; s++) {
    const int64_t boff = (s / kper) * kstep_rows + (s % kper) * 1024;
    _tile_loadd(4, a + s * 64, lda);
    _tile_loadd(6, b0 + boff, 64);
    TL_AMX_DP(op, 0, 4, 6);
  }
  _tile_stored(0, c, ldc);
}

/* acc (+)= a @ b over tiles: b's tiles from pb (tile bytes per B tile of kper A-tile steps,
 * the tile below in k kstep_rows bytes later), ksteps A-tile steps of kb bytes of a row of a
 * (64, or the K edge's fewer in one step); m >= 1, n >= 1 (see the opening comment for the
 * order and the configurations). Leaves the tiles configured. */
static void tl_amx_grid(tl_amx_op op, int64_t m, int64_t n, int64_t ksteps, int kb, const char *pa, int64_t lda,
                        const char *pb, int64_t tile, int64_t kper, int64_t kstep_rows, char *pc, int64_t ldc,
                        int accum) {
  /* full 16 x 16 tiles: 2 x 2 blocks, then the 16-row / 16-column strips past them */
  const int64_t mf = m / 16 * 16, nf = n / 16 * 16, mt = m - mf, nt = n - nf;
  if (mf > 0 && nf > 0) tl_amx_config(16, 64, kb);
  int64_t i0 = 0;
  for (; i0 + 32 <= mf; i0 += 32) {
    int64_t j0 = 0;
    for (; j0 + 32 <= nf; j0 += 32)
      tl_amx_2x2(op, ksteps, pa + i0 * lda, lda, pb + (j0 / 16) * tile, pb + (j0 / 16 + 1) * tile, kper,
                 kstep_rows, pc + i0 * ldc + j0 * 4, ldc, accum);
    for (; j0 < nf; j0 += 16)
      for (int64_t r = i0; r < i0 + 32; r += 16)
        tl_amx_1x1(op, ksteps, pa + r * lda, lda, pb + (j0 / 16) * tile, kper, kstep_rows, pc + r * ldc + j0 * 4,
                   ldc, accum);
  }
  for (; i0 < mf; i0 += 16)
    for (int64_t j0 = 0; j0 < nf; j0 += 16)
      tl_amx_1x1(op, ksteps, pa + i0 * lda, lda, pb + (j0 / 16) * tile, kper, kstep_rows, pc + i0 * ldc + j0 * 4,
                 ldc, accum);
  /* the edges, each under its own configuration: the last nt < 16 columns (C and B tiles of nt
   * x 4 bytes a row: the B tile's padding columns are never loaded), the last mt < 16 rows (C
   * and A tiles of mt rows), and their corner */
  if (nt > 0 && mf > 0) {
    tl_amx_config(16, (int)nt * 4, kb);
    for (int64_t r = 0; r < mf; r += 16)
      tl_amx_1x1(op, ksteps, pa + r * lda, lda, pb + (nf / 16) * tile, kper, kstep_rows, pc + r * ldc + nf * 4, ldc,
                 accum);
  }
  if (mt > 0) {
    if (nf > 0) tl_amx_config((int)mt, 64, kb);
    for (int64_t j0 = 0; j0 < nf; j0 += 16)
      tl_amx_1x1(op, ksteps, pa + mf * lda, lda, pb + (j0 / 16) * tile, kper, kstep_rows, pc + mf * ldc + j0 * 4, ldc,
                 accum);
    if (nt > 0) {
      tl_amx_config((int)mt, (int)nt * 4, kb);
      tl_amx_1x1(op, ksteps, pa + mf * lda, lda, pb + (nf / 16) * tile, kper, kstep_rows, pc + mf * ldc + nf * 4, ldc,
                 accum);
    }
  }
}

/* tl_amx_grid over kk (a multiple of 4 / es): the whole tile steps, then the K edge's kk %
 * kstep in one step of fewer bytes of a (and rows of b) under configurations of their own,
 * accumulating over what the first pass stored. */
static void tl_amx_run(tl_amx_op op, int64_t m, int64_t n, int64_t kk, int64_t es, const char *pa, int64_t lda,
                       const char *pb, int64_t tile, int64_t kper, int64_t kstep_rows, char *pc, int64_t ldc, int accum) {
  const int64_t kstep = 64 / es, kf = kk / kstep, kt = kk % kstep;
  if (kf > 0) tl_amx_grid(op, m, n, kf, 64, pa, lda, pb, tile, kper, kstep_rows, pc, ldc, accum);
  if (kt > 0)
    tl_amx_grid(op, m, n, 1, (int)(kt * es), pa + kf * 64, lda, pb + (kf / kper) * kstep_rows + (kf % kper) * 1024,
                tile, kper, kstep_rows, pc, ldc, accum || kf > 0);
}

/* TL_DOT_TRANS_B's b staged per chunk: at most TL_AMX_BT_COLS columns of the product by
 * TL_AMX_BT_BYTES / (TL_AMX_BT_COLS x element size) k (128 bf16, 256 int8: 32 KiB of stack). */
#define TL_AMX_BT_COLS 128
#define TL_AMX_BT_BYTES 32768

/* Stages columns [j0, j0 + nc) and k [k0, k0 + kc) of the product's b = b^T (b [N, K] with unit
 * column stride: its rows are the product's columns, contiguous along k) into AMX B tiles, the
 * tiled layout tile_r = kc rounded up to the tile step, tile_c 16: tile t (columns j0 + 16t ..)
 * is rows of 64 bytes, row g holding dword g (a pair of bf16 / a quad of int8 along k) of each
 * of its 16 columns, zero past nc and past kc (kc * es a multiple of 4). One 16 x 16 dword
 * transpose per 1 KiB. */
static void tl_amx_stage_bt(char *buf, const tl_ref *b, int64_t es, int64_t j0, int64_t nc, int64_t k0, int64_t kc) {
  const int64_t ldb = b->stride[0] * es, rows = TL_CDIV(kc * es / 4, 16) * 16;
  tl_stage_bt_dwords(buf, (const char *)b->data + j0 * ldb + k0 * es, ldb, kc * es, nc, TL_CDIV(nc, 16) * 16, rows,
                     rows * 64, 64);
}

/* tl_tile_dot's AMX path (see the opening comment). Returns 1 when it did the work. */
int tl_amx_dot(tl_ref *acc, const tl_ref *a, const tl_ref *b, unsigned flags) {
  tl_amx_op op;
  if (a->dtype == TL_BF16 && b->dtype == TL_BF16) op = TL_AMX_BF16;
  else if (a->dtype == TL_I8 && b->dtype == TL_I8) op = TL_AMX_SS;
  else if (a->dtype == TL_I8 && b->dtype == TL_U8) op = TL_AMX_SU;
  else if (a->dtype == TL_U8 && b->dtype == TL_I8) op = TL_AMX_US;
  else if (a->dtype == TL_U8 && b->dtype == TL_U8) op = TL_AMX_UU;
  else return 0;
  const int tb = (flags & TL_DOT_TRANS_B) != 0;
  const int64_t m = acc->shape[0], n = acc->shape[1], kk = a->shape[1];
  const int64_t es = op == TL_AMX_BF16 ? 2 : 1, ge = op == TL_AMX_BF16 ? 2 : 4;
  const int64_t kstep = 64 / es; /* k per A tile: 32 bf16 or 64 int8 */
  const tl_layout bl = b->layout;
  if (a->layout.tiled || a->stride[1] != 1 || acc->stride[1] != 1) return 0;
  if (tb ? bl.tiled || b->stride[1] != 1 : !bl.tiled || bl.vnni != ge || bl.tile_c != 16 || bl.tile_r % kstep) return 0;
  if (kk * es % 4 || m < 16 || n == 0 || kk == 0) return 0;
  if (tl_amx_request(NULL, 0) != 1) return 0;
  const int accum = (flags & TL_DOT_ACCUMULATE) != 0;
  const char *pa = (const char *)a->data;
  char *pc = (char *)acc->data;
  const int64_t lda = a->stride[0] * es, ldc = acc->stride[0] * 4;
  if (tb) {
    _Alignas(64) char buf[TL_AMX_BT_BYTES];
    const int64_t kc_max = TL_AMX_BT_BYTES / (TL_AMX_BT_COLS * es);
    for (int64_t j0 = 0; j0 < n; j0 += TL_AMX_BT_COLS) {
      const int64_t nc = TL_MIN(TL_AMX_BT_COLS, n - j0);
      for (int64_t k0 = 0; k0 < kk; k0 += kc_max) {
        const int64_t kc = TL_MIN(kc_max, kk - k0), kpad = TL_CDIV(kc, kstep) * kstep, tile = kpad * 16 * es;
        tl_amx_stage_bt(buf, b, es, j0, nc, k0, kc);
        tl_amx_run(op, m, nc, kc, es, pa + k0 * es, lda, buf, tile, kpad / kstep, TL_CDIV(nc, 16) * tile, pc + j0 * 4,
                   ldc, accum || k0 > 0);
      }
    }
  } else {
    const int64_t tile = (int64_t)bl.tile_r * 16 * es; /* bytes per B tile */
    tl_amx_run(op, m, n, kk, es, pa, lda, (const char *)b->data, tile, bl.tile_r / kstep, TL_CDIV(n, 16) * tile, pc,
               ldc, accum);
  }
  _tile_release();
  return 1;
}
