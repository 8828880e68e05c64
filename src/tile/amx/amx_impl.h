/* amx_impl.h — what the AMX files share: the tile configurations they load.
 *
 * Both dot_amx.c and probe_amx.c use palette 1 with tiles 0-3 as accumulators, 4-5 as A and
 * 6-7 as B tiles, all 16 rows x 64 bytes but for the dot's edges (fewer rows of A and C at the M
 * edge, fewer bytes a row of B and C at the N edge, of A and fewer rows of B at the K edge). The
 * configuration is loaded with inline `ldtilecfg` on a 64-byte buffer the asm reads as a memory
 * operand, so the compiler must complete the stores that fill it (GCC 12 was seen dropping them
 * when the buffer went through _tile_loadconfig: DESIGN.md §8).
 *
 * TL_AMX_LDTILECFG(cfg) is the instruction unless defined before this header:
 * tests/tile/amx_emu.h compiles the AMX files over a software emulation of the tile registers
 * (no AMX on the machines the suite runs on), defining it and the _tile_* intrinsics the files
 * use. Nothing else defines it.
 */
#ifndef TL_AMX_IMPL_H
#define TL_AMX_IMPL_H

#include <string.h>

#ifndef TL_AMX_LDTILECFG
#define TL_AMX_LDTILECFG(cfg) __asm__ volatile("ldtilecfg %0" : : "m"(*(const unsigned char(*)[64])(cfg)))
#endif

/* Loads palette 1 for products of A tiles of mr rows x kb bytes and B tiles of kb / 4 rows x nb
 * bytes: tiles 0-3 (C) mr rows x nb bytes, 4-5 (A) mr rows x kb bytes, 6-7 (B) kb / 4 rows x
 * nb bytes. mr 1-16; nb, kb 4-64, multiples of 4; the full tiles are tl_amx_config(16, 64, 64).
 * Loading a configuration zeroes every tile. */
static inline void tl_amx_config(int mr, int nb, int kb) {
  _Alignas(64) unsigned char cfg[64];
  memset(cfg, 0, sizeof cfg);
  cfg[0] = 1; /* palette */
  for (int t = 0; t < 8; t++) {
    cfg[16 + 2 * t] = (unsigned char)(t >= 4 && t < 6 ? kb : nb); /* colsb (little-endian uint16) */
    cfg[48 + t] = (unsigned char)(t >= 6 ? kb / 4 : mr);           /* rows */
  }
  TL_AMX_LDTILECFG(cfg);
}

#endif /* TL_AMX_IMPL_H */
