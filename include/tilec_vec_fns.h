/* tilec_vec_fns.h — the bodies of tilec_vec.h's helpers, written once for GNU C vectors of any
 * lane count; tilec_vec.h includes it for its 16-lane tl_vf32 (use that header, not this one).
 * The including file defines, and undefines after:
 *   TL_VF, TL_VI, TL_VU, TL_VH   float, int32_t, uint32_t and uint16_t vectors of one lane count
 *   TL_VFN(name)                 the function names (tilec_vec.h: tl_vf32_##name)
 * The library instantiates it again at each ISA's register width for its own row and elementwise
 * code (src/tile/vec_hooks.h), where 16-lane vectors would have no register of their own. No
 * include guard: each inclusion defines one family. Contracts and measured errors: tilec_vec.h. */

#if !defined(TL_VF) || !defined(TL_VI) || !defined(TL_VU) || !defined(TL_VH) || !defined(TL_VFN)
#error "tilec_vec_fns.h is included by tilec_vec.h: include that header instead"
#endif

/* Every lane set to v. */
static inline TL_VF TL_VFN(splat)(float v) {
  TL_VF r = {0};
  unsigned k;
  for (k = 0; k < sizeof r / sizeof v; k++) r[k] = v;
  return r;
}

/* Per lane: m (all ones / all zeros, as a comparison gives) ? a : b. */
static inline TL_VF TL_VFN(sel)(TL_VI m, TL_VF a, TL_VF b) {
  return (TL_VF)((m & (TL_VI)a) | (~m & (TL_VI)b));
}

/* |x| (the sign bit cleared; NaN payloads kept). */
static inline TL_VF TL_VFN(abs)(TL_VF x) { return (TL_VF)((TL_VI)x & 0x7fffffff); }

/* |mag| with the sign bit of sgn. */
static inline TL_VF TL_VFN(copysign)(TL_VF mag, TL_VF sgn) {
  return (TL_VF)(((TL_VI)mag & 0x7fffffff) | ((TL_VI)sgn & (int32_t)0x80000000u));
}

/* TL_VFN(exp_poly_)(r): e^r for |r| <= ~0.35, 1 + r + c2 r^2 + ... + c6 r^6 with c2..c6 a
 * minimax fit of the relative error rounded to f32 (3.8e-9 relative before the f32 evaluation's
 * own rounding; the degree-7 Taylor series it replaced was at 7.3e-9 with one multiply-add more),
 * always inlined (the fused row kernels build their exp on it). TL_VFN(ldexp_)(p, n): p times
 * 2^n, n an integer in [-150, 128] held in floats (also always inlined); TL_VFN(exp_scale_): the
 * two together; 2^n is applied in two halves so that results below 2^-126 are
 * rounded once and n = 128 still overflows to inf. */
static inline __attribute__((always_inline)) TL_VF TL_VFN(exp_poly_)(TL_VF r) {
  TL_VF p = TL_VFN(splat)(1.38146209e-3f);
  p = p * r + 8.36871378e-3f;
  p = p * r + 4.16683890e-2f;
  p = p * r + 1.66665211e-1f;
  p = p * r + 4.99999940e-1f;
  p = p * r + 1.0f;
  return p * r + 1.0f;
}
static inline __attribute__((always_inline)) TL_VF TL_VFN(ldexp_)(TL_VF p, TL_VF n) {
  TL_VI ni = __builtin_convertvector(n, TL_VI);
  TL_VI n1 = ni >> 1, n2 = ni - n1;
  TL_VF s1 = (TL_VF)((n1 + 127) << 23), s2 = (TL_VF)((n2 + 127) << 23);
  return p * s1 * s2;
}
static inline TL_VF TL_VFN(exp_scale_)(TL_VF r, TL_VF n) { return TL_VFN(ldexp_)(TL_VFN(exp_poly_)(r), n); }

/* e^(hi + lo) * 2^k where hi and lo are already clamped to [-104, 89] together, hi is such that
 * hi - n*0.693359375 is exact (hi a float with <= 24 significant bits of magnitude < 128) and
 * lo is the small rest; the reduction keeps lo's bits that a single float sum would lose. k (an
 * integer in [0, 64]) is applied with the exponent, as in TL_VFN(exp2k_). */
static inline TL_VF TL_VFN(exp_hilo_)(TL_VF hi, TL_VF lo, float k) {
  const float magic = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
  TL_VF n = ((hi + lo) * 1.44269504088896341f + magic) - magic;
  TL_VF r = hi - n * 0.693359375f; /* exact: ln2 split as 0.693359375 - 2.12194440e-4 */
  r = r + lo;
  r = r + n * 2.12194440e-4f;
  return TL_VFN(exp_scale_)(r, n + k);
}

/* e^x * 2^k per lane for an integer k in [0, 64] (x clamped to [-104 - k ln2, 89] first): the
 * scaling is applied with the exponent, so e^x below 2^-126 keeps its full precision when k
 * lifts it. */
static inline TL_VF TL_VFN(exp2k_)(TL_VF x, float k) {
  float lo = -104.0f - k * 0.693147181f;
  x = TL_VFN(sel)(x > 89.0f, TL_VFN(splat)(89.0f), x); /* comparisons are false for NaN */
  x = TL_VFN(sel)(x < lo, TL_VFN(splat)(lo), x);
  const float magic = 12582912.0f;
  TL_VF n = (x * 1.44269504088896341f + magic) - magic;
  TL_VF r = x - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  return TL_VFN(exp_scale_)(r, n + k);
}

/* e^x per lane: overflow -> +inf, underflow -> +0, NaN -> NaN. */
static inline TL_VF TL_VFN(exp)(TL_VF x) { return TL_VFN(exp2k_)(x, 0.0f); }

/* Natural log per lane (the Cephes logf reduction: x = m * 2^e, m in [sqrt(1/2), sqrt(2)),
 * log(m) = f - f^2/2 + f^3 P(f) with f = m - 1). log(0) = -inf, log(x < 0) = NaN, log(+inf) =
 * +inf, NaN -> NaN; denormal inputs are scaled by 2^23 first. */
static inline TL_VF TL_VFN(log)(TL_VF x) {
  TL_VI den = (x < 1.17549435e-38f) & (x > 0.0f);
  TL_VF xs = TL_VFN(sel)(den, x * 8388608.0f, x);
  TL_VI u = (TL_VI)xs;
  TL_VF e = __builtin_convertvector(((u >> 23) & 0xff) - 126, TL_VF);
  e = e - TL_VFN(sel)(den, TL_VFN(splat)(23.0f), TL_VFN(splat)(0.0f));
  TL_VF m = (TL_VF)((u & 0x007fffff) | 0x3f000000); /* [0.5, 1) */
  TL_VI small = m < 0.707106781186547524f;
  e = e - TL_VFN(sel)(small, TL_VFN(splat)(1.0f), TL_VFN(splat)(0.0f));
  TL_VF f = TL_VFN(sel)(small, m + m, m) - 1.0f;
  TL_VF z = f * f;
  TL_VF p = TL_VFN(splat)(7.0376836292e-2f);
  p = p * f - 1.1514610310e-1f;
  p = p * f + 1.1676998740e-1f;
  p = p * f - 1.2420140846e-1f;
  p = p * f + 1.4249322787e-1f;
  p = p * f - 1.6668057665e-1f;
  p = p * f + 2.0000714765e-1f;
  p = p * f - 2.4999993993e-1f;
  p = p * f + 3.3333331174e-1f;
  TL_VF y = p * f * z;
  y = y - e * 2.12194440e-4f;
  y = y - 0.5f * z;
  TL_VF r = (f + y) + e * 0.693359375f;
  const float inf = __builtin_inff();
  r = TL_VFN(sel)(x == inf, TL_VFN(splat)(inf), r);
  r = TL_VFN(sel)(x == 0.0f, TL_VFN(splat)(-inf), r);
  r = TL_VFN(sel)(x < 0.0f, TL_VFN(splat)(__builtin_nanf("")), r);
  return TL_VFN(sel)(x != x, x + x, r);
}

/* tanh per lane: |x| < 0.625: x + x^3 P(x^2) (Cephes tanhf); else 1 - 2/(e^(2|x|) + 1) with x's
 * sign. +-inf -> +-1, NaN -> NaN, -0 -> -0. */
static inline TL_VF TL_VFN(tanh)(TL_VF x) {
  TL_VF z = x * x;
  TL_VF p = TL_VFN(splat)(-5.70498872745e-3f);
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  TL_VF small = p * z * x + x;
  TL_VF a = TL_VFN(abs)(x);
  TL_VF big = 1.0f - 2.0f / (TL_VFN(exp)(a + a) + 1.0f);
  big = TL_VFN(copysign)(big, x);
  return TL_VFN(sel)(a < 0.625f, small, big); /* NaN: big is NaN */
}

/* erf for |x| < 0.9 (Taylor series to x^21; truncation < 2e-9 relative there). */
static inline TL_VF TL_VFN(erf_small_)(TL_VF x) {
  TL_VF z = x * x;
  TL_VF p = TL_VFN(splat)(1.4807192815879216e-08f);
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
 * so a^2 rounded to f32 alone would cost ~100 ulp near a = 9. k as in TL_VFN(exp_hilo_) (a
 * caller that multiplies further scales the result back once, at the end). */
static inline TL_VF TL_VFN(erfc_core_)(TL_VF a, TL_VF nh, TL_VF nl, float k) {
  TL_VF t = 1.0f / (1.0f + 0.5f * a);
  TL_VF p = TL_VFN(splat)(0.17087277f);
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  return t * TL_VFN(exp_hilo_)(nh, nl + p, k);
}

/* a with its low 12 significand bits cleared (12 significant bits: its square is exact). */
static inline TL_VF TL_VFN(hi12_)(TL_VF a) { return (TL_VF)((TL_VI)a & (int32_t)0xfffff000u); }

/* erfc(a) for a >= 0 (a clamped to 10.5, where erfc is below half the smallest denormal); -a^2
 * split as -ah^2 - (a - ah)(a + ah). */
static inline TL_VF TL_VFN(erfc_pos_)(TL_VF a) {
  a = TL_VFN(sel)(a > 10.5f, TL_VFN(splat)(10.5f), a);
  TL_VF ah = TL_VFN(hi12_)(a);
  return TL_VFN(erfc_core_)(a, -(ah * ah), -((a - ah) * (a + ah)), 0.0f);
}

/* erf per lane: the Taylor series for |x| < 0.9, else sign(x) * (1 - erfc(|x|)). */
static inline TL_VF TL_VFN(erf)(TL_VF x) {
  TL_VF a = TL_VFN(abs)(x);
  TL_VF big = TL_VFN(copysign)(1.0f - TL_VFN(erfc_pos_)(a), x);
  return TL_VFN(sel)(a < 0.9f, TL_VFN(erf_small_)(x), big); /* NaN: both are NaN */
}

/* erfc per lane: 1 - erf(x) for |x| < 0.5; the fit above for x >= 0.5; 2 - erfc(-x) for
 * x <= -0.5 (no cancellation: the result is >= 1 there). */
static inline TL_VF TL_VFN(erfc)(TL_VF x) {
  TL_VF a = TL_VFN(abs)(x);
  TL_VF c = TL_VFN(erfc_pos_)(a);
  c = TL_VFN(sel)(x < 0.0f, 2.0f - c, c);
  return TL_VFN(sel)(a < 0.5f, 1.0f - TL_VFN(erf_small_)(x), c);
}

/* GELU (erf form) per lane: 0.5*x*(1 + erf(x/sqrt2)) = 0.5*x*erfc(-x/sqrt2). For |x| < 0.707 the
 * erf series; else c = erfc(|x|/sqrt2) with the exponent -x^2/2 formed from x itself (x split
 * into two 12-bit halves, so x/sqrt2 rounded to f32 costs nothing), and 0.5*x*c for x < 0,
 * 0.5*x*(2 - c) for x > 0. c is made 2^64 times larger and 0.5*x*c scaled back last, so a result
 * below 2^-126 (x < -13.0) is rounded into the denormals once (before 2026-11-26 c and the
 * products were rounded there each: 8.4 ulp at x = -13.096, found by fuzzing). -inf -> NaN (as
 * the formula), +inf -> +inf, x < -14.9 -> -0. */
static inline TL_VF TL_VFN(gelu)(TL_VF x) {
  TL_VF xa = TL_VFN(abs)(x);
  xa = TL_VFN(sel)(xa > 14.9f, TL_VFN(splat)(14.9f), xa);
  TL_VF xh = TL_VFN(hi12_)(xa), xl = xa - xh;
  TL_VF nh = -0.5f * (xh * xh), nl = -(xh * xl + 0.5f * (xl * xl));
  TL_VF c = TL_VFN(erfc_core_)(xa * 0.70710678118654752f, nh, nl, 64.0f); /* erfc * 2^64 */
  const float down = 5.42101086242752217e-20f;                                /* 2^-64 */
  TL_VF big = TL_VFN(sel)(x < 0.0f, 0.5f * x * c * down, 0.5f * x * (2.0f - c * down));
  big = TL_VFN(sel)(x < -14.9f, x * 0.0f, big); /* -0, and NaN for -inf (c is no longer 0 there) */
  TL_VF small = 0.5f * x * (1.0f + TL_VFN(erf_small_)(x * 0.70710678118654752f));
  return TL_VFN(sel)(xa < 0.70710678f, small, big); /* NaN: big is NaN */
}

/* SiLU per lane: x * sigmoid(x), sigmoid from e = e^-|x| as 1/(1 + e) for x >= 0 and e/(1 + e)
 * for x < 0, so large negative x keep their relative accuracy (x/(1 + e^-x) in f32 gives -0
 * below -88.7; this gives x*e^x rounded once, -0 from about -110 down): for x < 0 the product
 * is formed as (x * (e*2^64) * r) * 2^-64. -inf -> NaN, +inf -> +inf. */
static inline TL_VF TL_VFN(silu)(TL_VF x) {
  const float down = 5.42101086242752217e-20f; /* 2^-64 (no hex literal: C++ before 17) */
  TL_VF es = TL_VFN(exp2k_)(-TL_VFN(abs)(x), 64.0f); /* e * 2^64, never denormal */
  TL_VF r;
  es = TL_VFN(sel)(x < -148.0f, TL_VFN(splat)(0.0f), es); /* below the clamp: x*e^x rounds to 0 */
  r = 1.0f / (1.0f + es * down);
  return TL_VFN(sel)(x < 0.0f, (x * (es * r)) * down, x * r);
}

/* bf16 bit patterns -> f32 (exact). */
static inline TL_VF TL_VFN(from_bf16)(TL_VH h) {
  return (TL_VF)(__builtin_convertvector(h, TL_VU) << 16);
}

/* f32 -> bf16 bit patterns: round to nearest even; NaN -> quiet NaN with its sign and top
 * payload bits (bit for bit tl_f32_to_bf16). */
static inline TL_VH TL_VFN(to_bf16)(TL_VF x) {
  TL_VU u = (TL_VU)x;
  TL_VI nan = (TL_VI)((u & 0x7fffffffu) > 0x7f800000u);
  TL_VU r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  TL_VU q = (u >> 16) | 0x0040u;
  r = (TL_VU)(((TL_VI)q & nan) | ((TL_VI)r & ~nan));
  return __builtin_convertvector(r, TL_VH);
}
