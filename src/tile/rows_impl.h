/* rows_impl.h — the fused row kernels of softmax and the norms (src/kernels/softmax.c, norm.c),
 * one table of function pointers per ISA level.
 *
 * The kernels are written once, as static functions on vec_hooks.h's tl_rkv (the ISA's own
 * vector width: 16 lanes on AVX-512, 8 on AVX2, 4 in the baseline), in rows_kern.h; each ISA folder
 * instantiates them with its own compiler flags (src/tile/<isa>/rows_<isa>.c) and the portable
 * baseline instance is src/tile/rows_scalar.c. rows_registry.c lists the instances under the
 * TILEC_HAVE_<ISA> guards; tl_rows_impl_for picks the best one at or below a program's ISA.
 *
 * Contract shared by every function:
 * - x, y: contiguous runs of n >= 0 elements, f32 (xbf / ybf 0) or bf16 (1); y may be x itself
 *   (the same elements; never a partial overlap). f32 arrays (e, acc, m, c, g, b) are contiguous.
 * - Math in f32; bf16 loads are exact, bf16 stores round to nearest even (tl_vf32_to_bf16; the
 *   avx512bf16 instance's vcvtneps2bf16 also flushes outputs below 2^-126 to +-0). exp is f32
 *   accurate except where only bf16 outputs use it (ebf, bf16 y of the exp writers).
 * - Nothing is read or written outside [0, n) of each array; no allocation, no state.
 * - nt 1: the stores to y may be non-temporal (streaming, fenced before the call returns) where
 *   the ISA has them and y is suitably aligned; results are identical either way.
 * - NaN: max ignores NaN (a NaN then propagates through the sums: exp(NaN - m) is NaN); every
 *   other function propagates it lane by lane. */
#ifndef TL_ROWS_IMPL_H
#define TL_ROWS_IMPL_H

#include "tile_impl.h"

typedef struct tl_rows_impl {
  tl_isa isa;
  const char *name;
  /* ---- one row: scalars per row ---- */
  /* max of x[0..n) (-inf for n = 0; NaN ignored). */
  float (*max_row)(const void *x, int xbf, int64_t n);
  /* sum of exp(x[j] - m); e (may be NULL) receives the exponentials. pf (may be NULL): the
   * next row to be read (n elements of x's dtype), prefetched while this one computes. ebf 1:
   * the results only feed bf16 outputs, and exp may be accurate to bf16 (below 1e-5 relative,
   * vec_hooks.h's tl_rk_exp_bf16) instead of f32 (about 1 ulp). */
  float (*sumexp_row)(const void *x, int xbf, int64_t n, float m, float *e, const void *pf, int ebf);
  /* *sd = sum (x[j] - mh), *sd2 = sum (x[j] - mh)^2 (mh = 0: the sum of squares); pf as above. */
  void (*sumdev_row)(const void *x, int xbf, int64_t n, float mh, float *sd, float *sd2, const void *pf);
  /* One pass: *k = a shift near the mean (the mean of the first min(n, 16) elements, 0 for
   * n = 0), *sd = sum (x[j] - k), *sd2 = sum (x[j] - k)^2; pf as above. */
  void (*moments_row)(const void *x, int xbf, int64_t n, float *k, float *sd, float *sd2, const void *pf);
  /* y[j] = e[j] * c. */
  void (*scale_row)(void *y, int ybf, const float *e, int64_t n, float c, int nt);
  /* y[j] = exp(x[j] - m) * c (exp to bf16 accuracy when y is bf16, as sumexp_row's ebf). */
  void (*expscale_row)(void *y, int ybf, const void *x, int xbf, int64_t n, float m, float c, int nt);
  /* y[j] = (x[j] - a) - b. */
  void (*shift_row)(void *y, int ybf, const void *x, int xbf, int64_t n, float a, float b, int nt);
  /* y[j] = ((x[j] - mh) * r + c) * g[j] + b[j]; g and b may be NULL (1 and 0). */
  void (*norm_row)(void *y, int ybf, const void *x, int xbf, int64_t n, float mh, float r, float c, const float *g,
                   const float *b, int nt);
  /* ---- columns: one value per element, vectors m, c, acc of length n ---- */
  /* acc[j] = max(acc[j], x[j]) (NaN in x ignored). */
  void (*max_acc)(float *acc, const void *x, int xbf, int64_t n);
  /* t = exp(x[j] - m[j]); acc[j] += t; e (may be NULL): e[j] = t. ebf as sumexp_row's. */
  void (*sumexp_acc)(float *acc, float *e, const void *x, int xbf, int64_t n, const float *m, int ebf);
  /* y[j] = e[j] * c[j]. */
  void (*scale_vv)(void *y, int ybf, const float *e, int64_t n, const float *c, int nt);
  /* y[j] = exp(x[j] - m[j]) * c[j] (exp to bf16 accuracy when y is bf16). */
  void (*expscale_vv)(void *y, int ybf, const void *x, int xbf, int64_t n, const float *m, const float *c, int nt);
  /* y[j] = (x[j] - a[j]) - b[j]. */
  void (*shift_vv)(void *y, int ybf, const void *x, int xbf, int64_t n, const float *a, const float *b, int nt);
} tl_rows_impl;

extern const tl_rows_impl tl_rows_scalar_impl;
/* Defined by src/tile/<isa>/rows_<isa>.c when CMake builds that folder. */
extern const tl_rows_impl tl_rows_avx2_impl;
extern const tl_rows_impl tl_rows_avx512_impl;
extern const tl_rows_impl tl_rows_avx512bf16_impl;

/* The instance registered for exactly this level, or NULL (rows_registry.c). */
const tl_rows_impl *tl_rows_impl_at(tl_isa isa);
/* The best instance at or below isa (the scalar one at least). */
const tl_rows_impl *tl_rows_impl_for(tl_isa isa);

#endif /* TL_ROWS_IMPL_H */
