/* tile_impl.h — how ISA paths plug into the tile operations.
 *
 * Each ISA folder (src/tile/<isa>/) defines one tl_tile_impl and registry.c lists them in one
 * table indexed by tl_isa. A public tile op checks its arguments once (misuse goes to
 * tl_prog_fail on the current program), then tries the implementations from the program's ISA
 * level downwards: the first whose function is non-NULL and returns 1 handles the call; the
 * scalar reference handles everything. */
#ifndef TL_TILE_IMPL_H
#define TL_TILE_IMPL_H

#include "../runtime/runtime_impl.h"

typedef struct tl_tile_impl {
  tl_isa isa;
  const char *name;
  /* Arguments are checked before these are called. Return 1: handled; 0: not for this path. */
  int (*dot)(tl_ref *acc, const tl_ref *a, const tl_ref *b, unsigned flags);
  int (*fill)(tl_ref *r, double v);
  int (*cast)(tl_ref *dst, const tl_ref *src);
  int (*unary)(tl_ref *dst, const tl_ref *src, tl_unary op);
  int (*binary)(tl_ref *dst, const tl_ref *a, const tl_ref *b, tl_binary op);
  int (*reduce)(tl_ref *dst, const tl_ref *src, int axis, tl_reduce op); /* axis in 0..ndim-1 */
} tl_tile_impl;

extern const tl_tile_impl tl_tile_scalar_impl;
/* Defined by src/tile/<isa>/ when CMake builds that folder (TILEC_HAVE_<ISA>=1); registry.c
 * lists only the ones built. */
extern const tl_tile_impl tl_tile_avx2_impl;
extern const tl_tile_impl tl_tile_avx512_impl;
extern const tl_tile_impl tl_tile_avx512bf16_impl;
extern const tl_tile_impl tl_tile_amx_impl;

/* The implementation registered for exactly this level, or NULL (registry.c). */
const tl_tile_impl *tl_tile_impl_at(tl_isa isa);

#endif /* TL_TILE_IMPL_H */
