/* pack_register.c — registers the ISA staging packers (src/tile/<isa>/pack_<isa>.c) with the
 * runtime's packer table (tl_packer_register, src/runtime/stage.c), so the runtime never names
 * an ISA. Portable code: each registration sits under its TILEC_HAVE_<ISA> guard.
 *
 * Invariants:
 * - Registration runs once, from a constructor, before main; tl_packer_find picks a packer by
 *   (element size, layout) among those whose isa is at most the plan's ISA level, so a context
 *   capped below a packer's level never uses it.
 * - Linking: libtilec.a members are pulled in only when referenced; tl_tile_pack_anchor is
 *   referenced by src/tile/avx512/dot_avx512.c (always linked with tl_tile_dot through the ISA
 *   table), so any program using tile ops gets the constructor.
 */
#include "../runtime/plan_impl.h"
#include "tile_impl.h"

#if defined(TILEC_HAVE_AVX2) && TILEC_HAVE_AVX2
void tl_avx2_pack_vnni(const tl_pack_job *j);
#endif
#if defined(TILEC_HAVE_AVX512) && TILEC_HAVE_AVX512
void tl_avx512_pack_vnni(const tl_pack_job *j);
#endif

/* Adds the packers built into this library (a no-op without ISA folders). */
__attribute__((constructor)) static void tl_tile_pack_register(void) {
  /* lowest level first: tl_packer_find takes the last registered one the plan's level allows */
#if defined(TILEC_HAVE_AVX2) && TILEC_HAVE_AVX2
  const tl_packer bf16_vnni2_avx2 = {.esize = 2, .tiled = 1, .vnni = 2, .isa = TL_ISA_AVX2, .fn = tl_avx2_pack_vnni};
  const tl_packer i8_vnni4_avx2 = {.esize = 1, .tiled = 1, .vnni = 4, .isa = TL_ISA_AVX2, .fn = tl_avx2_pack_vnni};
  tl_packer_register(&bf16_vnni2_avx2);
  tl_packer_register(&i8_vnni4_avx2);
#endif
#if defined(TILEC_HAVE_AVX512) && TILEC_HAVE_AVX512
  const tl_packer bf16_vnni2 = {.esize = 2, .tiled = 1, .vnni = 2, .isa = TL_ISA_AVX512, .fn = tl_avx512_pack_vnni};
  const tl_packer i8_vnni4 = {.esize = 1, .tiled = 1, .vnni = 4, .isa = TL_ISA_AVX512, .fn = tl_avx512_pack_vnni};
  tl_packer_register(&bf16_vnni2);
  tl_packer_register(&i8_vnni4);
#endif
}

/* Referenced from an always-linked ISA file so that static links keep this file (see above). */
const char tl_tile_pack_anchor = 1;
