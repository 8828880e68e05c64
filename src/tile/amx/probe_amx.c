/* probe_amx.c — AMX probe microkernels (contract in tile_impl.h): the "amx-bf16" and "amx-int8"
 * units. No bandwidth kernels (the lower levels' serve).
 *
 * Tiles: 0-3 are 16x16 accumulators (16 rows x 64 bytes), 4-5 the A tiles (16 rows x 64 bytes),
 * 6-7 the B tiles (16 rows of 64 bytes, VNNI-packed). Each step issues four independent
 * products, C[i][j] += A[i] * B[j], so no product waits for the previous one on its accumulator.
 * Op counts per instruction (M = N = 16, 64-byte rows):
 *   TDPBF16PS: K = 32 bf16, 16 x 16 x 32 = 8192 multiply-adds  = 16384 ops
 *   TDPBSSD:   K = 64 i8,   16 x 16 x 64 = 16384 multiply-adds = 32768 ops
 * Each call loads its tile configuration (tl_amx_config, amx_impl.h) and ends with TILERELEASE. The
 * caller must hold AMX permission (tl_ctx_need_amx). Inputs are 1.0 (bf16) and 1 (i8).
 */
#include <immintrin.h>
#include <string.h>

#include "../tile_impl.h"
#include "amx_impl.h"

/* 16 rows x 64 bytes of bf16 1.0 / i8 1: enough for any A or B tile. */
static _Alignas(64) const uint16_t tl_probe_amx_bf16_ones[16 * 32] = {
#define TL_R8_ 0x3F80, 0x3F80, 0x3F80, 0x3F80, 0x3F80, 0x3F80, 0x3F80, 0x3F80
#define TL_R64_ TL_R8_, TL_R8_, TL_R8_, TL_R8_, TL_R8_, TL_R8_, TL_R8_, TL_R8_
    TL_R64_, TL_R64_, TL_R64_, TL_R64_, TL_R64_, TL_R64_, TL_R64_, TL_R64_
#undef TL_R64_
#undef TL_R8_
};
static _Alignas(64) const int8_t tl_probe_amx_i8_ones[16 * 64] = {
#define TL_R8_ 1, 1, 1, 1, 1, 1, 1, 1
#define TL_R64_ TL_R8_, TL_R8_, TL_R8_, TL_R8_, TL_R8_, TL_R8_, TL_R8_, TL_R8_
    TL_R64_, TL_R64_, TL_R64_, TL_R64_, TL_R64_, TL_R64_, TL_R64_, TL_R64_,
    TL_R64_, TL_R64_, TL_R64_, TL_R64_, TL_R64_, TL_R64_, TL_R64_, TL_R64_
#undef TL_R64_
#undef TL_R8_
};

/* Loads A and B tiles from src and zeroes the accumulators. */
static void tl_probe_amx_load(const void *src) {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, src, 64);
  _tile_loadd(5, src, 64);
  _tile_loadd(6, src, 64);
  _tile_loadd(7, src, 64);
}

/* iters steps of four independent TDPBF16PS. */
static double tl_probe_amx_bf16(int64_t iters) {
  tl_amx_config(16, 64, 64);
  tl_probe_amx_load(tl_probe_amx_bf16_ones);
  for (int64_t i = 0; i < iters; i++) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_release();
  return (double)iters * 4 * 16384;
}

/* iters steps of four independent TDPBSSD. */
static double tl_probe_amx_int8(int64_t iters) {
  tl_amx_config(16, 64, 64);
  tl_probe_amx_load(tl_probe_amx_i8_ones);
  for (int64_t i = 0; i < iters; i++) {
    _tile_dpbssd(0, 4, 6);
    _tile_dpbssd(1, 4, 7);
    _tile_dpbssd(2, 5, 6);
    _tile_dpbssd(3, 5, 7);
  }
  _tile_release();
  return (double)iters * 4 * 32768;
}

static const tl_probe_unit tl_probe_amx_units[] = {
    {"amx-bf16", TL_BF16, tl_probe_amx_bf16},
    {"amx-int8", TL_I8, tl_probe_amx_int8},
};

const tl_probe_impl tl_probe_amx_impl = {
    .isa = TL_ISA_AMX,
    .nunits = (int)TL_ARRAY_LEN(tl_probe_amx_units),
    .units = tl_probe_amx_units,
};
