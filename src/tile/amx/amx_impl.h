/* amx_impl.h — what the AMX files share: the one tile configuration they load.
 *
 * Both dot_amx.c and probe_amx.c use palette 1 with tiles 0-7 all 16 rows x 64 bytes. The
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

/* Loads palette 1 with tiles 0-7 of 16 rows x 64 bytes. */
static inline void tl_amx_config(void) {
  _Alignas(64) unsigned char cfg[64];
  memset(cfg, 0, sizeof cfg);
  cfg[0] = 1; /* palette */
  for (int t = 0; t < 8; t++) {
    cfg[16 + 2 * t] = 64; /* colsb (little-endian uint16) */
    cfg[48 + t] = 16;     /* rows */
  }
  TL_AMX_LDTILECFG(cfg);
}

#endif /* TL_AMX_IMPL_H */
