/* amx_emu.h — the AMX files (src/tile/amx/dot_amx.c, probe_amx.c) compiled over a software
 * emulation of the tile registers, so their indexing, tile shapes and configuration are tested on
 * machines without AMX (the dev and CI machines have none; the hardware path runs only where the
 * CPU has it).
 *
 * Include this in one file of a test program. It includes <immintrin.h> itself, replaces the
 * _tile_* intrinsics the AMX files use and the ldtilecfg hook of amx_impl.h with the functions
 * below, then includes the two files with their public symbols renamed: tl_amx_dot_emu and
 * tl_probe_amx_impl_emu (their permission check, tl_amx_request, reads as granted). Two uses:
 * - call them directly (test_tile_dot_isa: amx_emu, this thread's state, shows what they did);
 * - amx_emu_enable(): on a CPU with AVX512-BF16 and no AMX, the process then reports AMX and its
 *   contexts run the AMX level with these as its tile and probe entries (tl_amx_emulate,
 *   tl_tile_amx_override), so a kernel test's ISA loop (test_isa.h) covers the AMX level too;
 *   amx_emu_products, amx_emu_macs and amx_emu_faults count over all threads.
 *
 * The emulation follows the instructions' definitions (Intel SDM, "AMX"): eight tile registers
 * of up to 16 rows x 64 bytes shaped by the palette-1 configuration; TILELOADD / TILESTORED move
 * `rows` rows of `colsb` bytes at a byte stride; TDPBF16PS sums, for each output (m, n), the
 * pairs a[m][2k..2k+1] x b[k][2n..2n+1] over k in f32 (bf16 denormals read as zero); TDPB[SU][SU]D
 * the quads a[m][4k..4k+3] x b[k][4n..4n+3], signed or unsigned per operand, in wrapping int32.
 * These conditions, on which the hardware faults or whose result it leaves undefined (Intel SDM),
 * are recorded in amx_emu.fault (first message kept): a tile instruction with no configuration loaded; a configuration with a palette
 * other than 1, nonzero start_row or reserved bytes, a tile over 16 rows x 64 bytes or with
 * only one of rows / bytes zero; a tile used that the configuration left empty; products on a
 * tile used twice, with bytes a row not a multiple of 4, or whose shapes do not chain (a's
 * colsb / 4 != b's rows, c's rows != a's rows, c's colsb != b's colsb).
 */
#ifndef TL_AMX_EMU_H
#define TL_AMX_EMU_H

#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/core_impl.h"
#include "tile/tile_impl.h"

typedef struct amx_emu_state {
  int configured;             /* a valid configuration is loaded (cleared by TILERELEASE) */
  int loads, releases, dps;   /* counts since amx_emu_reset */
  uint8_t rows[8];            /* the configured shape of each tile */
  uint16_t colsb[8];
  _Alignas(64) uint8_t t[8][16][64];
  char fault[160]; /* the first violation, "" while none */
} amx_emu_state;

static _Thread_local amx_emu_state amx_emu; /* the calling thread's tiles */
/* all threads, since the start: tile products, their multiply-adds (rows x columns x k of
 * each), rule violations */
static _Atomic long amx_emu_products, amx_emu_macs, amx_emu_faults;
static int amx_emu_verbose; /* print the first faults (amx_emu_enable: they happen on workers) */

static inline void amx_emu_reset(void) { memset(&amx_emu, 0, sizeof amx_emu); }

static void amx_emu_fail(const char *what, int tile) {
  if (!amx_emu.fault[0]) snprintf(amx_emu.fault, sizeof amx_emu.fault, "%s (tile %d)", what, tile);
  if (amx_emu_faults++ < 5 && amx_emu_verbose) fprintf(stderr, "    amx emulation: %s (tile %d)\n", what, tile);
}

/* LDTILECFG: palette 1 only; rows <= 16, colsb <= 64 per tile. */
static void amx_emu_ldtilecfg(const unsigned char *cfg) {
  amx_emu.loads++;
  amx_emu.configured = 0;
  if (cfg[0] != 1) {
    amx_emu_fail("ldtilecfg: palette is not 1", -1);
    return;
  }
  for (int i = 1; i < 16; i++)
    if (cfg[i]) amx_emu_fail("ldtilecfg: start_row or reserved bytes 1-15 not zero", -1);
  for (int i = 32; i < 48; i++)
    if (cfg[i]) amx_emu_fail("ldtilecfg: reserved bytes 32-47 not zero", -1);
  for (int i = 0; i < 8; i++) {
    amx_emu.rows[i] = cfg[48 + i];
    amx_emu.colsb[i] = (uint16_t)(cfg[16 + 2 * i] | cfg[17 + 2 * i] << 8);
    if (amx_emu.rows[i] > 16 || amx_emu.colsb[i] > 64) amx_emu_fail("ldtilecfg: tile larger than 16 x 64 bytes", i);
    if ((amx_emu.rows[i] == 0) != (amx_emu.colsb[i] == 0)) amx_emu_fail("ldtilecfg: a tile with rows or bytes zero, not both", i);
  }
  amx_emu.configured = 1;
  memset(amx_emu.t, 0, sizeof amx_emu.t);
}

/* Whether tile t may be used (configuration loaded, t in 0-7, t configured non-empty). */
static int amx_emu_ok(int t, const char *op) {
  char msg[64];
  if (!amx_emu.configured) {
    snprintf(msg, sizeof msg, "%s with no tile configuration loaded", op);
    amx_emu_fail(msg, t);
    return 0;
  }
  if (t < 0 || t > 7 || amx_emu.rows[t] == 0 || amx_emu.colsb[t] == 0) {
    snprintf(msg, sizeof msg, "%s on an unconfigured tile", op);
    amx_emu_fail(msg, t);
    return 0;
  }
  return 1;
}

static void amx_emu_loadd(int t, const void *base, int64_t stride) {
  if (!amx_emu_ok(t, "tileloadd")) return;
  for (int r = 0; r < amx_emu.rows[t]; r++) memcpy(amx_emu.t[t][r], (const char *)base + r * stride, amx_emu.colsb[t]);
}

static void amx_emu_stored(int t, void *base, int64_t stride) {
  if (!amx_emu_ok(t, "tilestored")) return;
  for (int r = 0; r < amx_emu.rows[t]; r++) memcpy((char *)base + r * stride, amx_emu.t[t][r], amx_emu.colsb[t]);
}

static void amx_emu_zero(int t) {
  if (amx_emu_ok(t, "tilezero")) memset(amx_emu.t[t], 0, sizeof amx_emu.t[t]);
}

static void amx_emu_release(void) {
  amx_emu.releases++;
  amx_emu.configured = 0;
}

/* Whether c += a x b is defined: three distinct tiles, bytes a row multiples of 4, c rows = a
 * rows, a colsb / 4 = b rows, c colsb = b colsb. */
static int amx_emu_chain(int c, int a, int b, const char *op) {
  if (!amx_emu_ok(c, op) || !amx_emu_ok(a, op) || !amx_emu_ok(b, op)) return 0;
  if (c == a || c == b || a == b) {
    amx_emu_fail("tile product on a tile used twice", c);
    return 0;
  }
  if (amx_emu.colsb[c] % 4 || amx_emu.colsb[a] % 4 || amx_emu.colsb[b] % 4 ||
      amx_emu.rows[c] != amx_emu.rows[a] || amx_emu.colsb[a] / 4 != amx_emu.rows[b] ||
      amx_emu.colsb[c] != amx_emu.colsb[b]) {
    amx_emu_fail("tile product shapes do not chain", c);
    return 0;
  }
  return 1;
}

/* A bf16 value as the instruction reads it: denormals are zero. */
static float amx_emu_bf16(const uint8_t *p) {
  uint32_t u = (uint32_t)(p[0] | p[1] << 8) << 16;
  if ((u & 0x7F800000u) == 0) u &= 0x80000000u;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static void amx_emu_dpbf16ps(int c, int a, int b) {
  amx_emu.dps++;
  amx_emu_products++;
  if (!amx_emu_chain(c, a, b, "tdpbf16ps")) return;
  amx_emu_macs += (long)amx_emu.rows[c] * (amx_emu.colsb[c] / 4) * (amx_emu.colsb[a] / 2);
  for (int m = 0; m < amx_emu.rows[c]; m++)
    for (int n = 0; n < amx_emu.colsb[c] / 4; n++) {
      float acc;
      memcpy(&acc, &amx_emu.t[c][m][4 * n], 4);
      for (int k = 0; k < amx_emu.colsb[a] / 4; k++) {
        acc += amx_emu_bf16(&amx_emu.t[a][m][4 * k]) * amx_emu_bf16(&amx_emu.t[b][k][4 * n]);
        acc += amx_emu_bf16(&amx_emu.t[a][m][4 * k + 2]) * amx_emu_bf16(&amx_emu.t[b][k][4 * n + 2]);
      }
      memcpy(&amx_emu.t[c][m][4 * n], &acc, 4);
    }
}

/* TDPB<sa><sb>D: sa / sb nonzero for signed bytes. */
static void amx_emu_dpb(int c, int a, int b, int sa, int sb) {
  amx_emu.dps++;
  amx_emu_products++;
  if (!amx_emu_chain(c, a, b, "tdpb*d")) return;
  amx_emu_macs += (long)amx_emu.rows[c] * (amx_emu.colsb[c] / 4) * amx_emu.colsb[a];
  for (int m = 0; m < amx_emu.rows[c]; m++)
    for (int n = 0; n < amx_emu.colsb[c] / 4; n++) {
      uint32_t acc;
      memcpy(&acc, &amx_emu.t[c][m][4 * n], 4);
      for (int k = 0; k < amx_emu.colsb[a] / 4; k++)
        for (int q = 0; q < 4; q++) {
          const uint8_t x = amx_emu.t[a][m][4 * k + q], y = amx_emu.t[b][k][4 * n + q];
          const int32_t xv = sa ? (int8_t)x : (int32_t)x, yv = sb ? (int8_t)y : (int32_t)y;
          acc += (uint32_t)(xv * yv);
        }
      memcpy(&amx_emu.t[c][m][4 * n], &acc, 4);
    }
}

#undef _tile_loadd
#undef _tile_stored
#undef _tile_zero
#undef _tile_dpbf16ps
#undef _tile_dpbssd
#undef _tile_dpbsud
#undef _tile_dpbusd
#undef _tile_dpbuud
#define _tile_loadd(t, base, stride) amx_emu_loadd(t, base, stride)
#define _tile_stored(t, base, stride) amx_emu_stored(t, base, stride)
#define _tile_zero(t) amx_emu_zero(t)
#define _tile_release() amx_emu_release()
#define _tile_dpbf16ps(c, a, b) amx_emu_dpbf16ps(c, a, b)
#define _tile_dpbssd(c, a, b) amx_emu_dpb(c, a, b, 1, 1)
#define _tile_dpbsud(c, a, b) amx_emu_dpb(c, a, b, 1, 0)
#define _tile_dpbusd(c, a, b) amx_emu_dpb(c, a, b, 0, 1)
#define _tile_dpbuud(c, a, b) amx_emu_dpb(c, a, b, 0, 0)
#define TL_AMX_LDTILECFG(cfg) amx_emu_ldtilecfg(cfg)
#define tl_amx_request(msg, size) 1
#define tl_amx_dot tl_amx_dot_emu
#define tl_probe_amx_impl tl_probe_amx_impl_emu

#include "tile/amx/dot_amx.c"
#include "tile/amx/probe_amx.c"

#undef tl_amx_dot
#undef tl_probe_amx_impl
#undef tl_amx_request

/* Turns the emulation on for this process's contexts (above); 1 when on, 0 on a CPU without
 * AVX512-BF16 or with AMX of its own (which then runs the real thing). Call it before any
 * context exists. */
static inline int amx_emu_enable(void) {
  static const tl_tile_impl tile = {.isa = TL_ISA_AMX, .name = "amx (emulated)", .dot = tl_amx_dot_emu};
  if (!tl_amx_emulate()) return 0;
  tl_tile_amx_override(&tile, &tl_probe_amx_impl_emu);
  amx_emu_verbose = 1;
  return 1;
}

/* For a test's ISA loop under amx_emu_enable: whether ctx runs the amx level (not under a
 * TILEC_ISA cap below it). */
static inline int amx_emu_runs(const tl_ctx *ctx) {
  tl_ctx_info info;
  return tl_ctx_info_get(ctx, &info) == TL_OK && info.isa == TL_ISA_AMX;
}

/* After the loop, when the amx level ran: whether it issued tile products and broke no rule
 * (printing the count, and the first faults as they happened). */
static inline int amx_emu_level_ok(void) {
  fprintf(stderr, "  amx emulation: %ld tile products, %ld rule violations\n", (long)amx_emu_products,
          (long)amx_emu_faults);
  return amx_emu_products > 0 && amx_emu_faults == 0;
}

#endif /* TL_AMX_EMU_H */
