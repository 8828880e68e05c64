/* attn_impl.h — the vector helpers of attention's online softmax, one table per ISA.
 *
 * The code is written once, as static-inline functions on vec_hooks.h's tl_rkv (16 lanes on
 * AVX-512, 8 on AVX2, 4 in the baseline) in attn_kern.h; each ISA
 * instantiates it in a short file compiled with that ISA's flags and row hooks
 * (src/tile/<isa>/attn_<isa>.c with hooks_<isa>.h; see src/tile/vec_hooks.h) and attn_scalar.c
 * is the baseline instance.
 * attn_registry.c lists them under the TILEC_HAVE_<ISA> guards. The kernel picks its table from
 * the program's ISA (tl_prog_isa), so a TILEC_ISA cap selects the path.
 *
 * Contract (every function): n >= 0 elements, any alignment, no allocation; -inf and NaN follow
 * IEEE (NaN propagates through max and exp). */
#ifndef TL_ATTN_IMPL_H
#define TL_ATTN_IMPL_H

#include "../runtime/runtime_impl.h"

typedef struct tl_attn_impl {
  tl_isa isa;
  const char *name;
  /* One row of scores against the row's running max m_old: with t[c] = s[c] * scale + mask[c]
   * for c < lim (keys at or past lim are masked out), *m_new = max(m_old, max t), ms = *m_new or
   * 0 when that is -inf, and the probabilities p[c] = exp(t[c] - ms) for c < lim, 0 for
   * lim <= c < n, are written as bf16 into pb (round to nearest even) or, pb NULL, as f32 over s.
   * Returns the f32 sum of p (before any rounding to bf16); a NaN sum (a NaN score, a +inf one,
   * or a NaN m_old) makes *m_new NaN. s may be rewritten either way. mask: NULL, or n values of
   * mdt (TL_F32 or TL_BF16, contiguous); lim may be <= 0 or >= n. */
  float (*row)(float *s, int64_t n, float scale, const void *mask, tl_dtype mdt, int64_t lim, float m_old,
               float *m_new, uint16_t *pb);
  /* x[c] *= a. */
  void (*scale)(float *x, int64_t n, float a);
  /* dst[c] = src[c] * a stored as dt (TL_F32 or TL_BF16), contiguous. */
  void (*store)(void *dst, tl_dtype dt, const float *src, int64_t n, float a);
  /* Rows of few queries (decode), K and V streamed once with no staging:
   * qk: s[j] = sum_d q[d] * k[j * ks + d] for j < n (k of kdt: TL_F32 or TL_BF16, unit stride in d);
   * pv: acc[d] += sum_j p[j] * v[j * vs + d] for d < D, j in increasing order. */
  void (*qk)(float *s, int64_t n, const float *q, const void *k, tl_dtype kdt, int64_t ks, int64_t D);
  void (*pv)(float *acc, int64_t D, const float *p, const void *v, tl_dtype vdt, int64_t vs, int64_t n);
} tl_attn_impl;

extern const tl_attn_impl tl_attn_scalar_impl;
extern const tl_attn_impl tl_attn_avx2_impl;
extern const tl_attn_impl tl_attn_avx512_impl;
extern const tl_attn_impl tl_attn_avx512bf16_impl;

/* The table for the highest level at or below isa that has one (the scalar instance always). */
const tl_attn_impl *tl_attn_impl_for(tl_isa isa);

#endif /* TL_ATTN_IMPL_H */
