/* tilec_vec.h — 16-lane f32 vectors for step bodies and ISA paths: GCC/Clang vector extensions
 * only (no intrinsics), so it compiles for any target and the compiler maps each operation to
 * the ISA of the including file (one zmm under -mavx512f, two ymm under -mavx2, four xmm on the
 * x86-64 baseline).
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

/* Internal: the bodies of tl_vf32_exp_poly_, tl_vf32_ldexp_, tl_vf32_from_bf16 and
 * tl_vf32_to_bf16 on GNU C vectors of any lane count (VF float, VI int32_t, VU uint32_t, VH
 * uint16_t vectors of one count), for the library's row kernels, which instantiate them at each
 * ISA's own register width (src/tile/vec_hooks.h). Each argument is evaluated more than once. */
#define TL_VEC_EXP_POLY_(r)                                                                        \
  (((((((r) * 1.38146209e-3f + 8.36871378e-3f) * (r) + 4.16683890e-2f) * (r) + 1.66665211e-1f) * (r) + \
     4.99999940e-1f) * (r) + 1.0f) * (r) + 1.0f)
#define TL_VEC_LDEXP_(VF, VI, p, n)                                                                  \
  __extension__({                                                                                    \
    VI tl_ni_ = __builtin_convertvector((n), VI);                                                    \
    VI tl_n1_ = tl_ni_ >> 1, tl_n2_ = tl_ni_ - tl_n1_;                                               \
    (p) * (VF)((tl_n1_ + 127) << 23) * (VF)((tl_n2_ + 127) << 23);                                   \
  })
#define TL_VEC_FROM_BF16_(VF, VU, h) ((VF)(__builtin_convertvector((h), VU) << 16))
#define TL_VEC_TO_BF16_(VU, VI, VH, x)                                                               \
  __extension__({                                                                                    \
    VU tl_u_ = (VU)(x);                                                                              \
    VI tl_nan_ = (VI)((tl_u_ & 0x7fffffffu) > 0x7f800000u);                                          \
    VU tl_r_ = (tl_u_ + 0x7fffu + ((tl_u_ >> 16) & 1u)) >> 16;                                       \
    VU tl_q_ = (tl_u_ >> 16) | 0x0040u;                                                              \
    tl_r_ = (VU)(((VI)tl_q_ & tl_nan_) | ((VI)tl_r_ & ~tl_nan_));                                    \
    __builtin_convertvector(tl_r_, VH);                                                              \
  })

/* Every lane set to v. */
static inline tl_vf32 tl_vf32_splat(float v) {
  tl_vf32 r = {v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v};
  return r;
}

/* Per lane: m (all ones / all zeros, as a comparison gives) ? a : b. */
static inline tl_vf32 tl_vf32_sel(tl_vi32 m, tl_vf32 a, tl_vf32 b) {
  return (tl_vf32)((m & (tl_vi32)a) | (~m & (tl_vi32)b));
}

/* |x| (the sign bit cleared; NaN payloads kept). */
static inline tl_vf32 tl_vf32_abs(tl_vf32 x) { return (tl_vf32)((tl_vi32)x & 0x7fffffff); }

/* |mag| with the sign bit of sgn. */
static inline tl_vf32 tl_vf32_copysign(tl_vf32 mag, tl_vf32 sgn) {
  return (tl_vf32)(((tl_vi32)mag & 0x7fffffff) | ((tl_vi32)sgn & (int32_t)0x80000000u));
}

/* tl_vf32_exp_poly_(r): e^r for |r| <= ~0.35, 1 + r + c2 r^2 + ... + c6 r^6 with c2..c6 a
 * minimax fit of the relative error rounded to f32 (3.8e-9 relative before the f32 evaluation's
 * own rounding; the degree-7 Taylor series it replaced was at 7.3e-9 with one multiply-add more),
 * always inlined (the fused row kernels build their exp on it). tl_vf32_ldexp_(p, n): p times
 * 2^n, n an integer in [-150, 128] held in floats (also always inlined); tl_vf32_exp_scale_: the
 * two together; 2^n is applied in two halves so that results below 2^-126 are
 * rounded once and n = 128 still overflows to inf. */
static inline __attribute__((always_inline)) tl_vf32 tl_vf32_exp_poly_(tl_vf32 r) { return TL_VEC_EXP_POLY_(r); }
static inline __attribute__((always_inline)) tl_vf32 tl_vf32_ldexp_(tl_vf32 p, tl_vf32 n) {
  return TL_VEC_LDEXP_(tl_vf32, tl_vi32, p, n);
}
static inline tl_vf32 tl_vf32_exp_scale_(tl_vf32 r, tl_vf32 n) { return tl_vf32_ldexp_(tl_vf32_exp_poly_(r), n); }

/* e^(hi + lo) * 2^k where hi and lo are already clamped to [-104, 89] together, hi is such that
 * hi - n*0.693359375 is exact (hi a float with <= 24 significant bits of magnitude < 128) and
 * lo is the small rest; the reduction keeps lo's bits that a single float sum would lose. k (an
 * integer in [0, 64]) is applied with the exponent, as in tl_vf32_exp2k_. */
static inline tl_vf32 tl_vf32_exp_hilo_(tl_vf32 hi, tl_vf32 lo, float k) {
  const float magic = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
  tl_vf32 n = ((hi + lo) * 1.44269504088896341f + magic) - magic;
  tl_vf32 r = hi - n * 0.693359375f; /* exact: ln2 split as 0.693359375 - 2.12194440e-4 */
  r = r + lo;
  r = r + n * 2.12194440e-4f;
  return tl_vf32_exp_scale_(r, n + k);
}

/* e^x * 2^k per lane for an integer k in [0, 64] (x clamped to [-104 - k ln2, 89] first): the
 * scaling is applied with the exponent, so e^x below 2^-126 keeps its full precision when k
 * lifts it. */
static inline tl_vf32 tl_vf32_exp2k_(tl_vf32 x, float k) {
  float lo = -104.0f - k * 0.693147181f;
  x = tl_vf32_sel(x > 89.0f, tl_vf32_splat(89.0f), x); /* comparisons are false for NaN */
  x = tl_vf32_sel(x < lo, tl_vf32_splat(lo), x);
  const float magic = 12582912.0f;
  tl_vf32 n = (x * 1.44269504088896341f + magic) - magic;
  tl_vf32 r = x - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  return tl_vf32_exp_scale_(r, n + k);
}

/* e^x per lane: overflow -> +inf, underflow -> +0, NaN -> NaN. */
static inline tl_vf32 tl_vf32_exp(tl_vf32 x) { return tl_vf32_exp2k_(x, 0.0f); }

/* Natural log per lane (the Cephes logf reduction: x = m * 2^e, m in [sqrt(1/2), sqrt(2)),
 * log(m) = f - f^2/2 + f^3 P(f) with f = m - 1). log(0) = -inf, log(x < 0) = NaN, log(+inf) =
 * +inf, NaN -> NaN; denormal inputs are scaled by 2^23 first. */
static inline tl_vf32 tl_vf32_log(tl_vf32 x) {
  tl_vi32 den = (x < 1.17549435e-38f) & (x > 0.0f);
  tl_vf32 xs = tl_vf32_sel(den, x * 8388608.0f, x);
  tl_vi32 u = (tl_vi32)xs;
  tl_vf32 e = __builtin_convertvector(((u >> 23) & 0xff) - 126, tl_vf32);
  e = e - tl_vf32_sel(den, tl_vf32_splat(23.0f), tl_vf32_splat(0.0f));
  tl_vf32 m = (tl_vf32)((u & 0x007fffff) | 0x3f000000); /* [0.5, 1) */
  tl_vi32 small = m < 0.707106781186547524f;
  e = e - tl_vf32_sel(small, tl_vf32_splat(1.0f), tl_vf32_splat(0.0f));
  tl_vf32 f = tl_vf32_sel(small, m + m, m) - 1.0f;
  tl_vf32 z = f * f;
  tl_vf32 p = tl_vf32_splat(7.0376836292e-2f);
  p = p * f - 1.1514610310e-1f;
  p = p * f + 1.1676998740e-1f;
  p = p * f - 1.2420140846e-1f;
  p = p * f + 1.4249322787e-1f;
  p = p * f - 1.6668057665e-1f;
  p = p * f + 2.0000714765e-1f;
  p = p * f - 2.4999993993e-1f;
  p = p * f + 3.3333331174e-1f;
  tl_vf32 y = p * f * z;
  y = y - e * 2.12194440e-4f;
  y = y - 0.5f * z;
  tl_vf32 r = (f + y) + e * 0.693359375f;
  const float inf = __builtin_inff();
  r = tl_vf32_sel(x == inf, tl_vf32_splat(inf), r);
  r = tl_vf32_sel(x == 0.0f, tl_vf32_splat(-inf), r);
  r = tl_vf32_sel(x < 0.0f, tl_vf32_splat(__builtin_nanf("")), r);
  return tl_vf32_sel(x != x, x + x, r);
}

/* tanh per lane: |x| < 0.625: x + x^3 P(x^2) (Cephes tanhf); else 1 - 2/(e^(2|x|) + 1) with x's
 * sign. +-inf -> +-1, NaN -> NaN, -0 -> -0. */
static inline tl_vf32 tl_vf32_tanh(tl_vf32 x) {
  tl_vf32 z = x * x;
  tl_vf32 p = tl_vf32_splat(-5.70498872745e-3f);
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  tl_vf32 small = p * z * x + x;
  tl_vf32 a = tl_vf32_abs(x);
  tl_vf32 big = 1.0f - 2.0f / (tl_vf32_exp(a + a) + 1.0f);
  big = tl_vf32_copysign(big, x);
  return tl_vf32_sel(a < 0.625f, small, big); /* NaN: big is NaN */
}

/* erf for |x| < 0.9 (Taylor series to x^21; truncation < 2e-9 relative there). */
static inline tl_vf32 tl_vf32_erf_small_(tl_vf32 x) {
  tl_vf32 z = x * x;
  tl_vf32 p = tl_vf32_splat(1.4807192815879216e-08f);
  p = p * z - 1.6365844691234924e-07f;
  p = p * z + 1.6462114365889248e-06f;
  p = p * z - 1.4925650358406252e-05f;
  p = p * z + 1.2055332981789664e-04f;
  p = p * z - 8.5483270234508533e-04f;
  p = p * z + 5.2239776254421879e-03f;
  p = p * z - 2.6866170645131252e-02f;
  p = p * z + 1.1283791670955126e-01f;
  p = p * z - 3.7612638903183754e-01f;
  p = p * z + 1.1283791670955126f;
  return p * x;
}

/* erfc(a) * 2^k for 0 <= a <= 10.5 with relative accuracy: t * e^(-a^2 + P(t)), t = 1/(1 + a/2)
 * (the Chebyshev fit of Numerical Recipes' erfcc, fractional error < 1.2e-7), with -a^2 given as
 * nh + nl, nh exact (<= 24 significant bits): e^-a^2 falls by a factor 2a*ulp(a) per ulp of a^2,
 * so a^2 rounded to f32 alone would cost ~100 ulp near a = 9. k as in tl_vf32_exp_hilo_ (a
 * caller that multiplies further scales the result back once, at the end). */
static inline tl_vf32 tl_vf32_erfc_core_(tl_vf32 a, tl_vf32 nh, tl_vf32 nl, float k) {
  tl_vf32 t = 1.0f / (1.0f + 0.5f * a);
  tl_vf32 p = tl_vf32_splat(0.17087277f);
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  return t * tl_vf32_exp_hilo_(nh, nl + p, k);
}

/* a with its low 12 significand bits cleared (12 significant bits: its square is exact). */
static inline tl_vf32 tl_vf32_hi12_(tl_vf32 a) { return (tl_vf32)((tl_vi32)a & (int32_t)0xfffff000u); }

/* erfc(a) for a >= 0 (a clamped to 10.5, where erfc is below half the smallest denormal); -a^2
 * split as -ah^2 - (a - ah)(a + ah). */
static inline tl_vf32 tl_vf32_erfc_pos_(tl_vf32 a) {
  a = tl_vf32_sel(a > 10.5f, tl_vf32_splat(10.5f), a);
  tl_vf32 ah = tl_vf32_hi12_(a);
  return tl_vf32_erfc_core_(a, -(ah * ah), -((a - ah) * (a + ah)), 0.0f);
}

/* erf per lane: the Taylor series for |x| < 0.9, else sign(x) * (1 - erfc(|x|)). */
static inline tl_vf32 tl_vf32_erf(tl_vf32 x) {
  tl_vf32 a = tl_vf32_abs(x);
  tl_vf32 big = tl_vf32_copysign(1.0f - tl_vf32_erfc_pos_(a), x);
  return tl_vf32_sel(a < 0.9f, tl_vf32_erf_small_(x), big); /* NaN: both are NaN */
}

/* erfc per lane: 1 - erf(x) for |x| < 0.5; the fit above for x >= 0.5; 2 - erfc(-x) for
 * x <= -0.5 (no cancellation: the result is >= 1 there). */
static inline tl_vf32 tl_vf32_erfc(tl_vf32 x) {
  tl_vf32 a = tl_vf32_abs(x);
  tl_vf32 c = tl_vf32_erfc_pos_(a);
  c = tl_vf32_sel(x < 0.0f, 2.0f - c, c);
  return tl_vf32_sel(a < 0.5f, 1.0f - tl_vf32_erf_small_(x), c);
}

/* GELU (erf form) per lane: 0.5*x*(1 + erf(x/sqrt2)) = 0.5*x*erfc(-x/sqrt2). For |x| < 0.707 the
 * erf series; else c = erfc(|x|/sqrt2) with the exponent -x^2/2 formed from x itself (x split
 * into two 12-bit halves, so x/sqrt2 rounded to f32 costs nothing), and 0.5*x*c for x < 0,
 * 0.5*x*(2 - c) for x > 0. c is made 2^64 times larger and 0.5*x*c scaled back last, so a result
 * below 2^-126 (x < -13.0) is rounded into the denormals once (before 2026-11-26 c and the
 * products were rounded there each: 8.4 ulp at x = -13.096, found by fuzzing). -inf -> NaN (as
 * the formula), +inf -> +inf, x < -14.9 -> -0. */
static inline tl_vf32 tl_vf32_gelu(tl_vf32 x) {
  tl_vf32 xa = tl_vf32_abs(x);
  xa = tl_vf32_sel(xa > 14.9f, tl_vf32_splat(14.9f), xa);
  tl_vf32 xh = tl_vf32_hi12_(xa), xl = xa - xh;
  tl_vf32 nh = -0.5f * (xh * xh), nl = -(xh * xl + 0.5f * (xl * xl));
  tl_vf32 c = tl_vf32_erfc_core_(xa * 0.70710678118654752f, nh, nl, 64.0f); /* erfc * 2^64 */
  const float down = 5.42101086242752217e-20f;                                /* 2^-64 */
  tl_vf32 big = tl_vf32_sel(x < 0.0f, 0.5f * x * c * down, 0.5f * x * (2.0f - c * down));
  big = tl_vf32_sel(x < -14.9f, x * 0.0f, big); /* -0, and NaN for -inf (c is no longer 0 there) */
  tl_vf32 small = 0.5f * x * (1.0f + tl_vf32_erf_small_(x * 0.70710678118654752f));
  return tl_vf32_sel(xa < 0.70710678f, small, big); /* NaN: big is NaN */
}

/* SiLU per lane: x * sigmoid(x), sigmoid from e = e^-|x| as 1/(1 + e) for x >= 0 and e/(1 + e)
 * for x < 0, so large negative x keep their relative accuracy (x/(1 + e^-x) in f32 gives -0
 * below -88.7; this gives x*e^x rounded once, -0 from about -110 down): for x < 0 the product
 * is formed as (x * (e*2^64) * r) * 2^-64. -inf -> NaN, +inf -> +inf. */
static inline tl_vf32 tl_vf32_silu(tl_vf32 x) {
  tl_vf32 es = tl_vf32_exp2k_(-tl_vf32_abs(x), 64.0f); /* e * 2^64, never denormal */
  es = tl_vf32_sel(x < -148.0f, tl_vf32_splat(0.0f), es); /* below the clamp: x*e^x rounds to 0 */
  tl_vf32 r = 1.0f / (1.0f + es * 0x1p-64f);
  return tl_vf32_sel(x < 0.0f, (x * (es * r)) * 0x1p-64f, x * r);
}

/* 16 bf16 bit patterns -> f32 (exact). */
static inline tl_vf32 tl_vf32_from_bf16(tl_vu16 h) { return TL_VEC_FROM_BF16_(tl_vf32, tl_vu32, h); }

/* f32 -> 16 bf16 bit patterns: round to nearest even; NaN -> quiet NaN with its sign and top
 * payload bits (bit for bit tl_f32_to_bf16). */
static inline tl_vu16 tl_vf32_to_bf16(tl_vf32 x) { return TL_VEC_TO_BF16_(tl_vu32, tl_vi32, tl_vu16, x); }

#pragma GCC diagnostic pop

#endif /* __GNUC__ || __clang__ */

#endif /* TILEC_VEC_H */
