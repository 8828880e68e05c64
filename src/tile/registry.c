/* registry.c — the tables of tile-operation implementations and of probe microkernels, indexed
 * by tl_isa.
 *
 * The scalar reference is always present. An ISA folder src/tile/<isa>/ defines one tl_tile_impl
 * (tl_tile_<isa>_impl, declared in tile_impl.h) and gets one entry here under its
 * TILEC_HAVE_<ISA> guard, which CMake defines only when it builds that folder. A level without an
 * entry is NULL and dispatch skips it. The probe table (tl_probe_<isa>_impl, from
 * src/tile/<isa>/probe_<isa>.c) follows the same rules. */
#include "tile_impl.h"

static const tl_tile_impl *const tl_tile_impls[TL_ISA_COUNT] = {
    [TL_ISA_SCALAR] = &tl_tile_scalar_impl,
#if defined(TILEC_HAVE_AVX2) && TILEC_HAVE_AVX2
    [TL_ISA_AVX2] = &tl_tile_avx2_impl,
#endif
#if defined(TILEC_HAVE_AVX2VNNI) && TILEC_HAVE_AVX2VNNI
    [TL_ISA_AVX2VNNI] = &tl_tile_avx2vnni_impl,
#endif
#if defined(TILEC_HAVE_AVX512) && TILEC_HAVE_AVX512
    [TL_ISA_AVX512] = &tl_tile_avx512_impl,
#endif
#if defined(TILEC_HAVE_AVX512VNNI) && TILEC_HAVE_AVX512VNNI
    [TL_ISA_AVX512VNNI] = &tl_tile_avx512vnni_impl,
#endif
#if defined(TILEC_HAVE_AVX512BF16) && TILEC_HAVE_AVX512BF16
    [TL_ISA_AVX512BF16] = &tl_tile_avx512bf16_impl,
#endif
#if defined(TILEC_HAVE_AMX) && TILEC_HAVE_AMX
    [TL_ISA_AMX] = &tl_tile_amx_impl,
#endif
};
_Static_assert(TL_ARRAY_LEN(tl_tile_impls) == TL_ISA_COUNT, "one registry slot per ISA level");

/* tl_tile_amx_override's entries (tests only), NULL while none */
static const tl_tile_impl *_Atomic tl_tile_amx_over;
static const tl_probe_impl *_Atomic tl_probe_amx_over;

/* See tile_impl.h. */
void tl_tile_amx_override(const tl_tile_impl *tile, const tl_probe_impl *probe) {
  tl_tile_amx_over = tile;
  tl_probe_amx_over = probe;
}

/* See tile_impl.h. */
int tl_tile_pf_l1_v = -1;
int tl_tile_pf_l1_init(void) {
  tl_cpu_info ci;
  tl_cpu_detect(&ci);
  const int v = ci.l1d_bytes == 0 || ci.l1d_bytes >= TL_TILE_PF_L1_MIN;
  __atomic_store_n(&tl_tile_pf_l1_v, v, __ATOMIC_RELAXED);
  return v;
}

/* The implementation registered for exactly this level, or NULL (also for a level outside the
 * table). */
const tl_tile_impl *tl_tile_impl_at(tl_isa isa) {
  if ((unsigned)isa >= TL_ISA_COUNT) return NULL;
  if (isa == TL_ISA_AMX && tl_tile_amx_over) return tl_tile_amx_over;
  return tl_tile_impls[isa];
}

static const tl_probe_impl *const tl_probe_impls[TL_ISA_COUNT] = {
    [TL_ISA_SCALAR] = &tl_probe_scalar_impl,
#if defined(TILEC_HAVE_AVX2) && TILEC_HAVE_AVX2
    [TL_ISA_AVX2] = &tl_probe_avx2_impl,
#endif
#if defined(TILEC_HAVE_AVX2VNNI) && TILEC_HAVE_AVX2VNNI
    [TL_ISA_AVX2VNNI] = &tl_probe_avx2vnni_impl,
#endif
#if defined(TILEC_HAVE_AVX512) && TILEC_HAVE_AVX512
    [TL_ISA_AVX512] = &tl_probe_avx512_impl,
#endif
#if defined(TILEC_HAVE_AVX512VNNI) && TILEC_HAVE_AVX512VNNI
    [TL_ISA_AVX512VNNI] = &tl_probe_avx512vnni_impl,
#endif
#if defined(TILEC_HAVE_AVX512BF16) && TILEC_HAVE_AVX512BF16
    [TL_ISA_AVX512BF16] = &tl_probe_avx512bf16_impl,
#endif
#if defined(TILEC_HAVE_AMX) && TILEC_HAVE_AMX
    [TL_ISA_AMX] = &tl_probe_amx_impl,
#endif
};
_Static_assert(TL_ARRAY_LEN(tl_probe_impls) == TL_ISA_COUNT, "one probe slot per ISA level");

/* The probe kernels registered for exactly this level, or NULL (also outside the table). */
const tl_probe_impl *tl_probe_impl_at(tl_isa isa) {
  if ((unsigned)isa >= TL_ISA_COUNT) return NULL;
  if (isa == TL_ISA_AMX && tl_probe_amx_over) return tl_probe_amx_over;
  return tl_probe_impls[isa];
}
