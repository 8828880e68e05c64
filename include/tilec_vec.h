/* tilec_vec.h — 16-lane f32 vectors for step bodies and ISA paths: GCC/Clang vector extensions
 * only (no intrinsics), so it compiles for any target and the compiler maps each operation to
 * the ISA of the including file (one zmm under -mavx512f; without AVX-512 each operation is split
 * into ymm or xmm halves, and GCC 12 keeps the values on the stack between them: see below).
 *
 *   tl_vf32 x;
 *   memcpy(&x, row + j, sizeof x);          // 16 floats, any alignment
 *   x = tl_vf32_exp(x);
 *   memcpy(row + j, &x, sizeof x);
 *
 * Helpers (measured accuracy against a float64 reference: docs/kernels.md, "Elementwise and
 * reductions"):
 *   tl_vf32_exp   overflow -> +inf, underflow -> +0 (denormal results rounded once), NaN kept
 *   tl_vf32_log   log(0) = -inf, log(x < 0) = NaN, log(+inf) = +inf, denormal inputs exact
 *   tl_vf32_tanh  odd; +-inf -> +-1; -0 -> -0
 *   tl_vf32_erf   odd; +-inf -> +-1
 *   tl_vf32_erfc  relative accuracy in the tail (erfc(x) for x up to ~10.05, then +0); -inf -> 2
 *   tl_vf32_gelu  0.5*x*erfc(-x/sqrt2) (the erf form, accurate for negative x); -inf -> NaN
 *   tl_vf32_silu  x*sigmoid(x) = x/(1 + exp(-x)), accurate for large negative x too; -inf ->
 *                 NaN (as the formula), +inf -> +inf, large negative x -> -0 (where x*e^x
 *                 rounds to 0; the f32 formula gives -0 from -88.7 down)
 *   tl_vf32_from_bf16 / tl_vf32_to_bf16: exact / round to nearest even, NaN kept quiet (the same
 *                 bits as tl_f32_to_bf16)
 * Also tl_vf32_splat (every lane), tl_vf32_sel (per lane m ? a : b, m a comparison's result),
 * tl_vf32_abs and tl_vf32_copysign. The bodies are in tilec_vec_fns.h (written once for any
 * lane count; the library also instantiates them at narrower widths for its AVX2 and baseline
 * code, where a 64-byte vector has no register and GCC keeps it on the stack: several times
 * slower there than one zmm is under AVX-512).
 * No helper reads or writes memory, allocates or depends on errno. Whether the compiler contracts
 * a*b+c into FMA (GNU C does where FMA is enabled) may change a result in its last bit; the
 * measured bounds are for the -mfma builds of the library. */
#ifndef TILEC_VEC_H
#define TILEC_VEC_H

#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)

/* Passing 64-byte vectors by value changes the ABI on targets without AVX-512; these functions
 * are static inline, so the note GCC gives about it does not apply. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

typedef float tl_vf32 __attribute__((vector_size(64)));
typedef int32_t tl_vi32 __attribute__((vector_size(64)));
typedef uint32_t tl_vu32 __attribute__((vector_size(64)));
typedef uint16_t tl_vu16 __attribute__((vector_size(32)));

/* The helpers for tl_vf32 (contracts above). */
#define TL_VF tl_vf32
#define TL_VI tl_vi32
#define TL_VU tl_vu32
#define TL_VH tl_vu16
#define TL_VFN(name) tl_vf32_##name
#include "tilec_vec_fns.h"
#undef TL_VF
#undef TL_VI
#undef TL_VU
#undef TL_VH
#undef TL_VFN

#pragma GCC diagnostic pop

#endif /* __GNUC__ || __clang__ */

#endif /* TILEC_VEC_H */
