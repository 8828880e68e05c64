/* attn_registry.c — the attention vector-helper tables (attn_impl.h) by ISA level. The scalar
 * (baseline) instance is always present; the others only when CMake built their folder
 * (TILEC_HAVE_<ISA>). Levels without their own table use the next one down. */
#include "attn_impl.h"

static const tl_attn_impl *const tl_attn_impls[TL_ISA_COUNT] = {
    [TL_ISA_SCALAR] = &tl_attn_scalar_impl,
#if defined(TILEC_HAVE_AVX2) && TILEC_HAVE_AVX2
    [TL_ISA_AVX2] = &tl_attn_avx2_impl,
#endif
#if defined(TILEC_HAVE_AVX512) && TILEC_HAVE_AVX512
    [TL_ISA_AVX512] = &tl_attn_avx512_impl,
#endif
#if defined(TILEC_HAVE_AVX512BF16) && TILEC_HAVE_AVX512BF16
    [TL_ISA_AVX512BF16] = &tl_attn_avx512bf16_impl,
#endif
};
_Static_assert(TL_ARRAY_LEN(tl_attn_impls) == TL_ISA_COUNT, "one registry slot per ISA level");

const tl_attn_impl *tl_attn_impl_for(tl_isa isa) {
  int i = (unsigned)isa < TL_ISA_COUNT ? (int)isa : TL_ISA_COUNT - 1;
  for (; i > 0; i--)
    if (tl_attn_impls[i]) return tl_attn_impls[i];
  return &tl_attn_scalar_impl;
}
