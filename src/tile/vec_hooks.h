/* vec_hooks.h — the per-ISA hooks of the fused row code written on tl_vf32 (rows_kern.h: softmax
 * and the norms; attn_kern.h: attention's online softmax), their generic fallbacks, and the exp
 * built on them. An including instance file (src/tile/<isa>/...) may define, before the include
 * (src/tile/<isa>/hooks_<isa>.h holds its definitions), with the semantics of the x86 max/min
 * instructions (the second operand when either is NaN):
 *   TL_RK_MAXPS(a, b)    per lane a > b ? a : b
 *   TL_RK_MINPS(a, b)    per lane a < b ? a : b
 * The fallbacks are GNU C comparisons, which GCC 12 splits into scalar code for 64-byte vectors
 * on targets narrower than AVX-512 (measured 17x slower on AVX2): a narrower ISA defines them.
 * And the f32 -> bf16 conversion of stores:
 *   TL_RK_TO_BF16(v)     16 lanes to bf16 bit patterns, round to nearest even (fallback:
 *                        tl_vf32_to_bf16; AVX512-BF16: vcvtneps2bf16, which flushes f32
 *                        denormal inputs to zero, see avx512bf16/hooks_avx512bf16.h)
 * And the bf16 -> f32 widening of loads (exact):
 *   TL_RK_FROM_BF16(h)   16 bf16 bit patterns (tl_vu16) as f32 (fallback: tl_vf32_from_bf16,
 *                        which GCC 12 turns into two 256-bit widenings, an extract and an insert
 *                        on AVX-512; vpmovzxwd there)
 * And the last step of exp:
 *   TL_RK_LDEXP(p, n)    p * 2^n per lane, n an integer in [-150, 128] held in floats, the
 *                        result rounded once (vscalefps on AVX-512: one instruction instead of
 *                        eight; the fallback scales in two halves, as tl_vf32_exp does) */
#ifndef TL_VEC_HOOKS_H
#define TL_VEC_HOOKS_H

#include <tilec_vec.h>

/* 64-byte vectors cross static functions by value (never the ABI); the note GCC gives about it is
 * noise here, and it comes at the end of the including file, so it stays off there. */
#pragma GCC diagnostic ignored "-Wpsabi"

#ifndef TL_RK_TO_BF16
#define TL_RK_TO_BF16(v) tl_vf32_to_bf16(v)
#endif

#ifndef TL_RK_FROM_BF16
#define TL_RK_FROM_BF16(h) tl_vf32_from_bf16(h)
#endif

#ifndef TL_RK_LDEXP
#define TL_RK_LDEXP(p, n) tl_vf32_ldexp_((p), (n))
#endif

#ifndef TL_RK_MAXPS
#define TL_RK_MAXPS(a, b) tl_vf32_sel((a) > (b), (a), (b))
#define TL_RK_MINPS(a, b) tl_vf32_sel((a) < (b), (a), (b))
#endif

#define TL_RK_AI static inline __attribute__((always_inline))

/* e^x for the shifted arguments of softmax, x = t - max(t) (at most a rounding error above 0),
 * -inf or NaN: bit for bit tl_vf32_exp there (the same reduction, tilec_vec.h's always-inlined
 * polynomial and scaling), wrapped so it is always inlined (GCC keeps tl_vf32_exp out of line in
 * the baseline and AVX2 instances, where a call passes each 64-byte vector through memory).
 * Every caller (rows_kern.h, attn_kern.h) passes such x, so the clamp at 89 that tl_vf32_exp
 * needs for overflow is left out: one vector operation of about eighteen per element in softmax's
 * exponential sweep, which is compute-bound in bf16. x above 89 is outside the contract
 * (vscalefps still gives inf; the generic two-step scaling gives garbage, NaN at 178). Dead tail
 * lanes (fill 0 minus the max) may be out of it: their results are never kept. Attention keeps its
 * fused s * scale - ms within the contract by storing the products first when |ms| >= 2^20
 * (attn_kern.h). */
TL_RK_AI tl_vf32 tl_rk_exp(tl_vf32 x) {
  x = TL_RK_MAXPS(tl_vf32_splat(-104.0f), x); /* NaN: the second operand, x */
  const float magic = 12582912.0f;
  tl_vf32 n = (x * 1.44269504088896341f + magic) - magic;
  tl_vf32 r = x - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  return TL_RK_LDEXP(tl_vf32_exp_poly_(r), n);
}

/* e^x to bf16 accuracy, for exponentials whose only use is a bf16 output (softmax into bf16) or
 * a bf16 operand (attention's probabilities): the arguments of tl_rk_exp, a one-step reduction
 * (f32 ln 2 is 1.9e-9 off: at most 2.9e-7 relative at n = -150) and a degree-4 minimax
 * polynomial (5.3e-6 relative). Measured over every third f32 in [-104, 0]: at most 5.6e-6
 * relative where a*b+c is one FMA (the AVX2 and AVX-512 instances), 9.4e-6 in the baseline build
 * (n * ln 2 and the polynomial's steps rounded twice); 1/650 and 1/400 of a bf16 ulp (2^-8): the
 * bf16 result differs from the f32-accurate one's rounding only for values that close to a
 * rounding boundary. Five vector operations fewer than tl_rk_exp. */
TL_RK_AI tl_vf32 tl_rk_exp_bf16(tl_vf32 x) {
  x = TL_RK_MAXPS(tl_vf32_splat(-104.0f), x); /* NaN: the second operand, x */
  const float magic = 12582912.0f;
  tl_vf32 n = (x * 1.44269504088896341f + magic) - magic;
  tl_vf32 r = x - n * 0.693147182f;
  tl_vf32 p = tl_vf32_splat(4.12778109e-2f);
  p = p * r + 1.67535335e-1f;
  p = p * r + 5.00051200e-1f;
  p = p * r + 1.0f;
  return TL_RK_LDEXP(p * r + 1.0f, n);
}

/* tl_rk_exp_bf16 when bf (a constant in every instance), else tl_rk_exp. */
TL_RK_AI tl_vf32 tl_rk_exp_for(tl_vf32 x, int bf) { return bf ? tl_rk_exp_bf16(x) : tl_rk_exp(x); }

#endif /* TL_VEC_HOOKS_H */
