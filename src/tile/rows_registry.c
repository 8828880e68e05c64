/* rows_registry.c — the table of fused row-kernel instances (rows_impl.h), indexed by tl_isa.
 * The scalar (portable baseline) instance is always present; an ISA folder's instance is listed
 * under its TILEC_HAVE_<ISA> guard, which CMake defines only when it builds that folder. Levels
 * without an instance (avx2vnni, avx512vnni, amx: nothing there helps these kernels) use the next
 * one below. */
#include "rows_impl.h"

static const tl_rows_impl *const tl_rows_impls[TL_ISA_COUNT] = {
    [TL_ISA_SCALAR] = &tl_rows_scalar_impl,
#if defined(TILEC_HAVE_AVX2) && TILEC_HAVE_AVX2
    [TL_ISA_AVX2] = &tl_rows_avx2_impl,
#endif
#if defined(TILEC_HAVE_AVX512) && TILEC_HAVE_AVX512
    [TL_ISA_AVX512] = &tl_rows_avx512_impl,
#endif
#if defined(TILEC_HAVE_AVX512BF16) && TILEC_HAVE_AVX512BF16
    [TL_ISA_AVX512BF16] = &tl_rows_avx512bf16_impl,
#endif
};
_Static_assert(TL_ARRAY_LEN(tl_rows_impls) == TL_ISA_COUNT, "one rows slot per ISA level");

const tl_rows_impl *tl_rows_impl_at(tl_isa isa) {
  if ((unsigned)isa >= TL_ISA_COUNT) return NULL;
  return tl_rows_impls[isa];
}

const tl_rows_impl *tl_rows_impl_for(tl_isa isa) {
  int i = (int)isa;
  if (i >= TL_ISA_COUNT) i = TL_ISA_COUNT - 1;
  for (; i > 0; i--)
    if (tl_rows_impls[i]) return tl_rows_impls[i];
  return &tl_rows_scalar_impl;
}
