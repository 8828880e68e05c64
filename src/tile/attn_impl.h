/* attn_impl.h — the vector helpers of attention's online softmax, one table per ISA.
 *
 * The code is written once, as static-inline functions on tl_vf32 in attn_kern.h; each ISA
 * instantiates it in a two-line file compiled with that ISA's flags (src/tile/avx512/
 * attn_avx512.c, src/tile/avx2/attn_avx2.c) and attn_scalar.c is the baseline instance (the same
 * source lowered to the baseline vector width). attn_registry.c lists them under the
 * TILEC_HAVE_<ISA> guards. The kernel picks its table from the program's ISA (tl_prog_isa), so a
 * TILEC_ISA cap selects the path.
 *
 * Contract (every function): n >= 0 elements, any alignment, no allocation; -inf and NaN follow
 * IEEE (NaN propagates through max and exp). */
#ifndef TL_ATTN_IMPL_H
#define TL_ATTN_IMPL_H

#include "../runtime/runtime_impl.h"

typedef struct tl_attn_impl {
  tl_isa isa;
  const char *name;
  /* s[c] = s[c] * scale + mask[c] for c < lim, -inf for lim <= c < n; returns the row max of the
   * result (-inf for n == 0; NaN if any element is NaN). mask: NULL, or n values of mdt (TL_F32 or
   * TL_BF16, contiguous). lim may be <= 0 or >= n. */
  float (*prep)(float *s, int64_t n, float scale, const void *mask, tl_dtype mdt, int64_t lim);
  /* s[c] = exp(s[c] - m) in place; returns the f32 sum of the results. */
  float (*exp_sum)(float *s, int64_t n, float m);
  /* x[c] *= a. */
  void (*scale)(float *x, int64_t n, float a);
  /* dst[c] = bf16(src[c]), round to nearest even. */
  void (*to_bf16)(uint16_t *dst, const float *src, int64_t n);
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

/* The table for the highest level at or below isa that has one (the scalar instance always). */
const tl_attn_impl *tl_attn_impl_for(tl_isa isa);

#endif /* TL_ATTN_IMPL_H */
