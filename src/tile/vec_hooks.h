/* vec_hooks.h — the vector type of the fused row code (rows_kern.h: softmax and the norms;
 * attn_kern.h: attention's online softmax), its per-ISA hooks with their generic fallbacks, and
 * the exp built on them.
 *
 * The row code works on tl_rkv, a GNU C vector of TL_RK_W floats (tl_rki / tl_rku: int32_t /
 * uint32_t lanes, tl_rkh: uint16_t), TL_RK_W the register width of the including instance: an
 * instance file (src/tile/<isa>/...) may define it before the include, 16 by default (one zmm
 * under AVX-512, tilec_vec.h's tl_vf32). The AVX2 instance sets 8, one ymm: 16-lane vectors there
 * have no register of their own, and GCC 12 kept them on the stack (its row kernels measured
 * 5-30x the AVX-512 cycles per element on one Zen 5 core, where 2x is the width's share).
 *
 * An instance may also define, before the include (src/tile/<isa>/hooks_<isa>.h holds its
 * definitions), with the semantics of the x86 max/min instructions (the second operand when
 * either is NaN):
 *   TL_RK_MAXPS(a, b)    per lane a > b ? a : b
 *   TL_RK_MINPS(a, b)    per lane a < b ? a : b
 * (the fallbacks are a GNU C comparison and a bitwise selection, four instructions where one
 * does); the f32 -> bf16 conversion of stores:
 *   TL_RK_TO_BF16(v)     TL_RK_W lanes to bf16 bit patterns (tl_rkh), round to nearest even
 *                        (fallback: tl_vf32_to_bf16's code at this width; AVX512-BF16:
 *                        vcvtneps2bf16, which flushes f32 denormal inputs to zero, see
 *                        avx512bf16/hooks_avx512bf16.h)
 * the bf16 -> f32 widening of loads (exact):
 *   TL_RK_FROM_BF16(h)   TL_RK_W bf16 bit patterns (tl_rkh) as f32 (fallback: tl_vf32_from_bf16's
 *                        code at this width, which GCC 12 turns into two 256-bit widenings, an extract
 *                        and an insert on AVX-512; vpmovzxwd there)
 * and the last step of exp:
 *   TL_RK_LDEXP(p, n)    p * 2^n per lane, n an integer in [-150, 128] held in floats, the
 *                        result rounded once (vscalefps on AVX-512: one instruction instead of
 *                        eight; the fallback scales in two halves, as tl_vf32_exp does, or with
 *                        TL_RK_ANY in one multiply where no lane's 2^n is denormal)
 *   TL_RK_ANY(m)         nonzero when any lane of the comparison result m (tl_rki) is set
 *                        (optional; AVX2: vmovmskps)
 * The fallbacks are tilec_vec.h's helpers instantiated at this width (tl_rkv_to_bf16,
 * tl_rkv_from_bf16, tl_rkv_ldexp_, ...: tilec_vec_fns.h), which the elementwise AVX2 code
 * (avx2/ew_avx2.c) uses too. */
#ifndef TL_VEC_HOOKS_H
#define TL_VEC_HOOKS_H

#include <string.h>

#include <tilec_vec.h>

/* 64-byte vectors cross static functions by value (never the ABI); the note GCC gives about it is
 * noise here, and it comes at the end of the including file, so it stays off there. */
#pragma GCC diagnostic ignored "-Wpsabi"

#define TL_RK_AI static inline __attribute__((always_inline))

#ifndef TL_RK_W
#define TL_RK_W 16
#endif
#if TL_RK_W != 4 && TL_RK_W != 8 && TL_RK_W != 16
#error "vec_hooks.h: TL_RK_W must be 4, 8 or 16 (the horizontal reductions halve it)"
#endif
typedef float tl_rkv __attribute__((vector_size(4 * TL_RK_W)));
typedef int32_t tl_rki __attribute__((vector_size(4 * TL_RK_W)));
typedef uint32_t tl_rku __attribute__((vector_size(4 * TL_RK_W)));
typedef uint16_t tl_rkh __attribute__((vector_size(2 * TL_RK_W)));

/* tilec_vec.h's helpers at this width: tl_rkv_splat, tl_rkv_sel, tl_rkv_exp, ... (the same
 * bodies as tl_vf32_*, tilec_vec_fns.h). */
#define TL_VF tl_rkv
#define TL_VI tl_rki
#define TL_VU tl_rku
#define TL_VH tl_rkh
#define TL_VFN(name) tl_rkv_##name
#include <tilec_vec_fns.h>
#undef TL_VF
#undef TL_VI
#undef TL_VU
#undef TL_VH
#undef TL_VFN

#ifndef TL_RK_TO_BF16
#define TL_RK_TO_BF16(v) tl_rkv_to_bf16(v)
#endif

#ifndef TL_RK_FROM_BF16
#define TL_RK_FROM_BF16(h) tl_rkv_from_bf16(h)
#endif

/* exp's 2^n: where the instance can test a comparison's lanes at once (TL_RK_ANY(m): any lane of
 * m set), one multiply by 2^n built from n's integer, and the two-step scaling only when some
 * lane's 2^n would be denormal (n < -126): the same bits (p * 2^n1 is exact, so the two steps
 * round once too). n = 128 would give inf where the two steps give p * 2^128, finite for p < 1:
 * tl_rk_exp's arguments stay below 88, so n <= 127 there. AVX2: 16-19% fewer cycles for exp on
 * a Zen 5 core (nine vector operations become four and a branch). */
#ifdef TL_RK_ANY
TL_RK_AI tl_rkv tl_rk_ldexp_normal(tl_rkv p, tl_rkv n) {
  const tl_rki ni = __builtin_convertvector(n, tl_rki);
  if (__builtin_expect(TL_RK_ANY(ni < -126), 0)) return tl_rkv_ldexp_(p, n);
  return p * (tl_rkv)((ni + 127) << 23);
}
#endif

#ifndef TL_RK_LDEXP
#ifdef TL_RK_ANY
#define TL_RK_LDEXP(p, n) tl_rk_ldexp_normal((p), (n))
#else
#define TL_RK_LDEXP(p, n) tl_rkv_ldexp_((p), (n))
#endif
#endif

#ifndef TL_RK_MAXPS
#define TL_RK_MAXPS(a, b) tl_rkv_sel((a) > (b), (a), (b))
#define TL_RK_MINPS(a, b) tl_rkv_sel((a) < (b), (a), (b))
#endif

/* Horizontal reductions in registers, for the row kernels and attention alike (permutes and
 * halves; the row kernels' former stack-array loops compiled to store-to-load chains of scalar
 * adds, though end to end the change measured within noise on a Zen 4 core). */

/* The largest of the lanes. A NaN lane may or may not come out (a NaN in lane 0 does): callers
 * rely on neither (attention catches NaN through its sum; rows_kern.h's accumulators never hold
 * NaN). */
TL_RK_AI float tl_rk_hmax(tl_rkv v) {
#if TL_RK_W == 16
  const tl_rki h8 = {8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7};
  v = TL_RK_MAXPS(__builtin_shuffle(v, h8), v);
  const tl_rki h4 = {4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11};
  const tl_rki h2 = {2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13};
  const tl_rki h1 = {1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14};
#elif TL_RK_W == 8
  const tl_rki h4 = {4, 5, 6, 7, 0, 1, 2, 3};
  const tl_rki h2 = {2, 3, 0, 1, 6, 7, 4, 5};
  const tl_rki h1 = {1, 0, 3, 2, 5, 4, 7, 6};
#else /* 4 (checked above) */
  const tl_rki h2 = {2, 3, 0, 1};
  const tl_rki h1 = {1, 0, 3, 2};
#endif
#if TL_RK_W >= 8
  v = TL_RK_MAXPS(__builtin_shuffle(v, h4), v);
#endif
  v = TL_RK_MAXPS(__builtin_shuffle(v, h2), v);
  v = TL_RK_MAXPS(__builtin_shuffle(v, h1), v);
  return v[0];
}
TL_RK_AI float tl_rk_hsum(tl_rkv v) { /* pairwise: lane k + lane k + W/2, then quarters, ... */
  typedef float v4 __attribute__((vector_size(16)));
  v4 c;
#if TL_RK_W >= 8
  typedef float v8 __attribute__((vector_size(32)));
  v8 a;
#if TL_RK_W == 16
  v8 b;
  memcpy(&a, &v, 32), memcpy(&b, (const char *)&v + 32, 32);
  a += b;
#else
  memcpy(&a, &v, 32);
#endif
  v4 d;
  memcpy(&c, &a, 16), memcpy(&d, (const char *)&a + 16, 16);
  c += d;
#else
  memcpy(&c, &v, 16);
#endif
  return (c[0] + c[2]) + (c[1] + c[3]);
}

/* e^x for the shifted arguments of softmax, x = t - max(t) (at most a rounding error above 0),
 * -inf or NaN: bit for bit tl_vf32_exp there (the same reduction, polynomial and scaling, at
 * this width), always inlined (GCC kept tl_vf32_exp out of line in the baseline and AVX2 builds).
 * Every caller (rows_kern.h, attn_kern.h) passes such x, so the clamp at 89 that tl_vf32_exp
 * needs for overflow is left out: one vector operation of about eighteen per element in softmax's
 * exponential sweep, which is compute-bound in bf16. x above 88 is outside the contract
 * (vscalefps gives e^x up to 88.72 and inf beyond; the AVX2 scaling inf from 88.38, the generic
 * two-step one garbage from 178, NaN). Dead tail
 * lanes (fill 0 minus the max) may be out of it: their results are never kept. Attention keeps its
 * fused s * scale - ms within the contract by storing the products first when |ms| >= 2^20
 * (attn_kern.h). */
TL_RK_AI tl_rkv tl_rk_exp(tl_rkv x) {
  x = TL_RK_MAXPS(tl_rkv_splat(-104.0f), x); /* NaN: the second operand, x */
  const float magic = 12582912.0f;
  tl_rkv n = (x * 1.44269504088896341f + magic) - magic;
  tl_rkv r = x - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  return TL_RK_LDEXP(tl_rkv_exp_poly_(r), n);
}

/* e^x to bf16 accuracy, for exponentials whose only use is a bf16 output (softmax into bf16) or
 * a bf16 operand (attention's probabilities): the arguments of tl_rk_exp, a one-step reduction
 * (f32 ln 2 is 1.9e-9 off: at most 2.9e-7 relative at n = -150) and a degree-4 minimax
 * polynomial (5.3e-6 relative). Measured over every third f32 in [-104, 0]: at most 5.6e-6
 * relative where a*b+c is one FMA (the AVX2 and AVX-512 instances), 9.4e-6 in the baseline build
 * (n * ln 2 and the polynomial's steps rounded twice); 1/650 and 1/400 of a bf16 ulp (2^-8): the
 * bf16 result differs from the f32-accurate one's rounding only for values that close to a
 * rounding boundary. Five vector operations fewer than tl_rk_exp. */
TL_RK_AI tl_rkv tl_rk_exp_bf16(tl_rkv x) {
  x = TL_RK_MAXPS(tl_rkv_splat(-104.0f), x); /* NaN: the second operand, x */
  const float magic = 12582912.0f;
  tl_rkv n = (x * 1.44269504088896341f + magic) - magic;
  tl_rkv r = x - n * 0.693147182f;
  tl_rkv p = tl_rkv_splat(4.12778109e-2f);
  p = p * r + 1.67535335e-1f;
  p = p * r + 5.00051200e-1f;
  p = p * r + 1.0f;
  return TL_RK_LDEXP(p * r + 1.0f, n);
}

/* tl_rk_exp_bf16 when bf (a constant in every instance), else tl_rk_exp. */
TL_RK_AI tl_rkv tl_rk_exp_for(tl_rkv x, int bf) { return bf ? tl_rk_exp_bf16(x) : tl_rk_exp(x); }

#endif /* TL_VEC_HOOKS_H */
