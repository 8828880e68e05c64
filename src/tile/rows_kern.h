/* rows_kern.h — the fused row kernels of softmax and the norms, written once on tl_rkv (GNU C
 * vectors: the compiler maps them to the ISA of the including file). Included only by the files
 * that instantiate a tl_rows_impl (src/tile/rows_scalar.c and src/tile/<isa>/rows_<isa>.c), each
 * with its own flags; the contract is in rows_impl.h.
 *
 * An including file may define, before the include, non-temporal stores for its ISA:
 *   TL_RK_NT_F32(p, v)   TL_RK_W floats (tl_rkv v) at a 4 * TL_RK_W-byte aligned p
 *   TL_RK_NT_BF16(p, h)  TL_RK_W bf16 (tl_rkh h) at a 2 * TL_RK_W-byte aligned p
 *   TL_RK_NT_BF16X2(p, v0, v1)  2 * TL_RK_W bf16 converted from two tl_rkv at a 4 * TL_RK_W-byte
 *                        aligned p (with TL_RK_W = 16 one whole line; optional: two
 *                        TL_RK_NT_BF16 stores otherwise)
 *   TL_RK_NT_FENCE()     orders them before later stores (sfence)
 * Without them nt is ignored (ordinary stores). The ISA hooks (max/min, the bf16 conversion,
 * exp's scaling), the vector type tl_rkv of TL_RK_W lanes and tl_rk_exp are src/tile/vec_hooks.h's.
 *
 * Invariants: rows are walked TL_RK_W lanes at a time; the chunk at the end of a row (and, with
 * streaming stores, the unaligned head) goes through a TL_RK_W-element buffer, so nothing outside
 * [0, n) is touched. Reductions keep 4 vector accumulators (4 * TL_RK_W lanes) to cover the add
 * latency;
 * their lanes are combined pairwise at the end. The dtype of x and y is a compile-time constant
 * inside each loop (the wrappers branch once per call). */
#ifndef TL_ROWS_KERN_H
#define TL_ROWS_KERN_H

#include <string.h>

#include "rows_impl.h"
#include "vec_hooks.h"

#ifdef TL_RK_NT_F32
#define TL_RK_HAS_NT 1
#else
#define TL_RK_HAS_NT 0
#define TL_RK_NT_F32(p, v) memcpy((p), &(v), sizeof(tl_rkv))
#define TL_RK_NT_BF16(p, h) memcpy((p), &(h), sizeof(tl_rkh))
#define TL_RK_NT_FENCE() ((void)0)
#endif
#ifndef TL_RK_NT_BF16X2
#define TL_RK_NT_BF16X2(p, v0, v1)                                                 \
  do {                                                                             \
    tl_rkh tl_nt_h0_ = TL_RK_TO_BF16(v0), tl_nt_h1_ = TL_RK_TO_BF16(v1);          \
    TL_RK_NT_BF16((p), tl_nt_h0_);                                                 \
    TL_RK_NT_BF16((uint16_t *)(p) + TL_RK_W, tl_nt_h1_);                           \
  } while (0)
#endif

/* ---- loads and stores ---- */

/* An element count m (0..TL_RK_W at every call) as a size the compiler can see is bounded (GCC's
 * -Wstringop-overflow otherwise imagines a negative m in the unoptimised builds). */
TL_RK_AI size_t tl_rk_cnt(int64_t m) { return m <= 0 ? 0 : m >= TL_RK_W ? TL_RK_W : (size_t)m; }

/* TL_RK_W elements from element j of p (f32 or bf16) as f32. */
TL_RK_AI tl_rkv tl_rk_ld(const void *p, int bf, int64_t j) {
  if (bf) {
    tl_rkh h;
    memcpy(&h, (const uint16_t *)p + j, sizeof h);
    return TL_RK_FROM_BF16(h);
  }
  tl_rkv v;
  memcpy(&v, (const float *)p + j, sizeof v);
  return v;
}

/* m (0 < m < TL_RK_W) elements from element j; the other lanes hold fill. */
TL_RK_AI tl_rkv tl_rk_ld_n(const void *p, int bf, int64_t j, int64_t m, float fill) {
  float buf[TL_RK_W];
  for (int k = 0; k < TL_RK_W; k++) buf[k] = fill;
  if (bf) {
    const uint16_t *h = (const uint16_t *)p + j;
    for (int64_t k = 0; k < (int64_t)tl_rk_cnt(m); k++) {
      uint32_t u = (uint32_t)h[k] << 16;
      memcpy(&buf[k], &u, 4);
    }
  } else {
    memcpy(buf, (const float *)p + j, tl_rk_cnt(m) * 4);
  }
  tl_rkv v;
  memcpy(&v, buf, sizeof v);
  return v;
}

/* TL_RK_W or m (< TL_RK_W) elements, as the count says. */
TL_RK_AI tl_rkv tl_rk_ld_c(const void *p, int bf, int64_t j, int64_t m, float fill) {
  return m == TL_RK_W ? tl_rk_ld(p, bf, j) : tl_rk_ld_n(p, bf, j, m, fill);
}

TL_RK_AI void tl_rk_st(void *p, int bf, int64_t j, tl_rkv v) {
  if (bf) {
    tl_rkh h = TL_RK_TO_BF16(v);
    memcpy((uint16_t *)p + j, &h, sizeof h);
  } else {
    memcpy((float *)p + j, &v, sizeof v);
  }
}

/* The first m (0 < m <= TL_RK_W) lanes. */
TL_RK_AI void tl_rk_st_n(void *p, int bf, int64_t j, int64_t m, tl_rkv v) {
  if (bf) {
    tl_rkh h = TL_RK_TO_BF16(v);
    memcpy((uint16_t *)p + j, &h, tl_rk_cnt(m) * 2);
  } else {
    memcpy((float *)p + j, &v, tl_rk_cnt(m) * 4);
  }
}

/* Streaming store at an address aligned as TL_RK_NT_* need. */
TL_RK_AI void tl_rk_st_nt(void *p, int bf, int64_t j, tl_rkv v) {
  if (bf) {
    tl_rkh h = TL_RK_TO_BF16(v);
    TL_RK_NT_BF16((uint16_t *)p + j, h);
  } else {
    TL_RK_NT_F32((float *)p + j, v);
  }
}

/* Elements before the first 64-byte aligned address of y for streaming stores (may exceed n), or -1
 * when there are no streaming stores or y is not aligned to its element size. */
TL_RK_AI int64_t tl_rk_nt_head(const void *y, int bf) {
  if (!TL_RK_HAS_NT) return -1;
  const uintptr_t a = (uintptr_t)y, es = bf ? 2 : 4, al = 64;
  if (a % es) return -1;
  return (int64_t)(((al - a % al) % al) / es);
}

/* Lanes 0..m-1 set. */
TL_RK_AI tl_rki tl_rk_lanes(int64_t m) {
  tl_rki iota;
  for (int k = 0; k < TL_RK_W; k++) iota[k] = k;
  return iota < (int32_t)m;
}

/* max(acc, v) per lane; a NaN in v is ignored (acc kept). */
TL_RK_AI tl_rkv tl_rk_max(tl_rkv acc, tl_rkv v) { return TL_RK_MAXPS(v, acc); }

/* ---- per-row reductions ---- */

TL_RK_AI float tl_rk_max_row_(const void *x, int bf, int64_t n) {
  const float ninf = -__builtin_inff();
  tl_rkv a0 = tl_rkv_splat(ninf), a1 = a0, a2 = a0, a3 = a0;
  int64_t j = 0;
  for (; j + 4 * TL_RK_W <= n; j += 4 * TL_RK_W) {
    a0 = tl_rk_max(a0, tl_rk_ld(x, bf, j));
    a1 = tl_rk_max(a1, tl_rk_ld(x, bf, j + TL_RK_W));
    a2 = tl_rk_max(a2, tl_rk_ld(x, bf, j + 2 * TL_RK_W));
    a3 = tl_rk_max(a3, tl_rk_ld(x, bf, j + 3 * TL_RK_W));
  }
  for (; j + TL_RK_W <= n; j += TL_RK_W) a0 = tl_rk_max(a0, tl_rk_ld(x, bf, j));
  if (j < n) a1 = tl_rk_max(a1, tl_rk_ld_n(x, bf, j, n - j, ninf));
  return tl_rk_hmax(tl_rk_max(tl_rk_max(a0, a1), tl_rk_max(a2, a3)));
}

static float tl_rk_max_row(const void *x, int xbf, int64_t n) {
  return xbf ? tl_rk_max_row_(x, 1, n) : tl_rk_max_row_(x, 0, n);
}

/* Prefetches the lines of the 64 elements at element j of the next row pf (NULL: nothing). */
TL_RK_AI void tl_rk_prefetch64(const void *pf, int bf, int64_t j) {
  if (!pf) return;
  const char *p = (const char *)pf + j * (bf ? 2 : 4);
  for (int k = 0; k < (bf ? 128 : 256); k += 64) __builtin_prefetch(p + k, 0, 2);
}

TL_RK_AI float tl_rk_sumexp_row_(const void *x, int bf, int64_t n, float m, float *e, const void *pf, int ebf) {
  tl_rkv a0 = tl_rkv_splat(0.0f), a1 = a0, a2 = a0, a3 = a0;
  int64_t j = 0;
  for (; j + 4 * TL_RK_W <= n; j += 4 * TL_RK_W) {
    if ((j & 63) == 0) tl_rk_prefetch64(pf, bf, j);
    tl_rkv t0 = tl_rk_exp_for(tl_rk_ld(x, bf, j) - m, ebf);
    tl_rkv t1 = tl_rk_exp_for(tl_rk_ld(x, bf, j + TL_RK_W) - m, ebf);
    tl_rkv t2 = tl_rk_exp_for(tl_rk_ld(x, bf, j + 2 * TL_RK_W) - m, ebf);
    tl_rkv t3 = tl_rk_exp_for(tl_rk_ld(x, bf, j + 3 * TL_RK_W) - m, ebf);
    if (e) {
      memcpy(e + j, &t0, sizeof t0), memcpy(e + j + TL_RK_W, &t1, sizeof t1);
      memcpy(e + j + 2 * TL_RK_W, &t2, sizeof t2), memcpy(e + j + 3 * TL_RK_W, &t3, sizeof t3);
    }
    a0 += t0, a1 += t1, a2 += t2, a3 += t3;
  }
  for (; j + TL_RK_W <= n; j += TL_RK_W) {
    tl_rkv t = tl_rk_exp_for(tl_rk_ld(x, bf, j) - m, ebf);
    if (e) memcpy(e + j, &t, sizeof t);
    a0 += t;
  }
  if (j < n) {
    tl_rkv t = tl_rk_exp_for(tl_rk_ld_n(x, bf, j, n - j, 0.0f) - m, ebf);
    t = tl_rkv_sel(tl_rk_lanes(n - j), t, tl_rkv_splat(0.0f));
    if (e) memcpy(e + j, &t, tl_rk_cnt(n - j) * 4);
    a1 += t;
  }
  return tl_rk_hsum((a0 + a1) + (a2 + a3));
}

static float tl_rk_sumexp_row(const void *x, int xbf, int64_t n, float m, float *e, const void *pf, int ebf) {
  if (ebf) return xbf ? tl_rk_sumexp_row_(x, 1, n, m, e, pf, 1) : tl_rk_sumexp_row_(x, 0, n, m, e, pf, 1);
  return xbf ? tl_rk_sumexp_row_(x, 1, n, m, e, pf, 0) : tl_rk_sumexp_row_(x, 0, n, m, e, pf, 0);
}

TL_RK_AI void tl_rk_sumdev_row_(const void *x, int bf, int64_t n, float mh, float *sd, float *sd2, const void *pf) {
  tl_rkv s0 = tl_rkv_splat(0.0f), s1 = s0, s2 = s0, s3 = s0, q0 = s0, q1 = s0, q2 = s0, q3 = s0;
  int64_t j = 0;
  for (; j + 4 * TL_RK_W <= n; j += 4 * TL_RK_W) {
    if ((j & 63) == 0) tl_rk_prefetch64(pf, bf, j);
    tl_rkv d0 = tl_rk_ld(x, bf, j) - mh, d1 = tl_rk_ld(x, bf, j + TL_RK_W) - mh;
    tl_rkv d2 = tl_rk_ld(x, bf, j + 2 * TL_RK_W) - mh, d3 = tl_rk_ld(x, bf, j + 3 * TL_RK_W) - mh;
    s0 += d0, s1 += d1, s2 += d2, s3 += d3;
    q0 += d0 * d0, q1 += d1 * d1, q2 += d2 * d2, q3 += d3 * d3;
  }
  for (; j + TL_RK_W <= n; j += TL_RK_W) {
    if ((j & 63) == 0) tl_rk_prefetch64(pf, bf, j);
    tl_rkv d = tl_rk_ld(x, bf, j) - mh;
    s0 += d, q0 += d * d;
  }
  if (j < n) { /* the fill mh gives d = 0 in the missing lanes */
    tl_rkv d = tl_rk_ld_n(x, bf, j, n - j, mh) - mh;
    s1 += d, q1 += d * d;
  }
  *sd = tl_rk_hsum((s0 + s1) + (s2 + s3));
  *sd2 = tl_rk_hsum((q0 + q1) + (q2 + q3));
}

static void tl_rk_sumdev_row(const void *x, int xbf, int64_t n, float mh, float *sd, float *sd2, const void *pf) {
  if (xbf) tl_rk_sumdev_row_(x, 1, n, mh, sd, sd2, pf);
  else tl_rk_sumdev_row_(x, 0, n, mh, sd, sd2, pf);
}

/* The shift of moments_row: the mean of the first min(n, 16) elements (0 for n = 0), at every
 * width (4 lanes would leave the shift of a Gaussian row past one deviation from the mean, and so
 * a second sweep, in 4.6% of rows; 16 in 0.006%). */
TL_RK_AI float tl_rk_shift0(const void *x, int bf, int64_t n) {
  if (n <= 0) return 0.0f;
  const int64_t m = n < 16 ? n : 16;
  tl_rkv a = tl_rkv_splat(0.0f);
  for (int64_t j = 0; j < m; j += TL_RK_W) a += tl_rk_ld_c(x, bf, j, m - j < TL_RK_W ? m - j : TL_RK_W, 0.0f);
  return tl_rk_hsum(a) / (float)m;
}

TL_RK_AI void tl_rk_moments_row_(const void *x, int bf, int64_t n, float *k, float *sd, float *sd2, const void *pf) {
  *k = tl_rk_shift0(x, bf, n);
  tl_rk_sumdev_row_(x, bf, n, *k, sd, sd2, pf);
}

static void tl_rk_moments_row(const void *x, int xbf, int64_t n, float *k, float *sd, float *sd2, const void *pf) {
  if (xbf) tl_rk_moments_row_(x, 1, n, k, sd, sd2, pf);
  else tl_rk_moments_row_(x, 0, n, k, sd, sd2, pf);
}

/* ---- element-wise writers: one driver, the value per chunk chosen by a constant op ---- */

enum { TL_RK_SCALE, TL_RK_EXPSCALE, TL_RK_SHIFT, TL_RK_NORM, TL_RK_SCALE_VV, TL_RK_EXPSCALE_VV, TL_RK_SHIFT_VV };

typedef struct tl_rk_args {
  const void *x;                   /* the input row (xbf) */
  const float *e, *g, *b, *va, *vb; /* f32 rows: exponentials, gamma, beta, per-element a and b */
  float sa, sb, sc;                /* scalars */
} tl_rk_args;

/* The value of elements j..j+m-1 (m <= TL_RK_W) for op. */
TL_RK_AI tl_rkv tl_rk_val(int op, const tl_rk_args *a, int xbf, int ybf, int64_t j, int64_t m) {
  switch (op) {
  case TL_RK_SCALE: return tl_rk_ld_c(a->e, 0, j, m, 0.0f) * a->sc;
  case TL_RK_EXPSCALE: return tl_rk_exp_for(tl_rk_ld_c(a->x, xbf, j, m, 0.0f) - a->sa, ybf) * a->sc;
  case TL_RK_SHIFT: return (tl_rk_ld_c(a->x, xbf, j, m, 0.0f) - a->sa) - a->sb;
  case TL_RK_NORM: {
    tl_rkv t = (tl_rk_ld_c(a->x, xbf, j, m, 0.0f) - a->sa) * a->sb + a->sc;
    if (a->g) t *= tl_rk_ld_c(a->g, 0, j, m, 0.0f);
    if (a->b) t += tl_rk_ld_c(a->b, 0, j, m, 0.0f);
    return t;
  }
  case TL_RK_SCALE_VV: return tl_rk_ld_c(a->e, 0, j, m, 0.0f) * tl_rk_ld_c(a->va, 0, j, m, 0.0f);
  case TL_RK_EXPSCALE_VV:
    return tl_rk_exp_for(tl_rk_ld_c(a->x, xbf, j, m, 0.0f) - tl_rk_ld_c(a->va, 0, j, m, 0.0f), ybf) *
           tl_rk_ld_c(a->vb, 0, j, m, 0.0f);
  default: /* TL_RK_SHIFT_VV */
    return (tl_rk_ld_c(a->x, xbf, j, m, 0.0f) - tl_rk_ld_c(a->va, 0, j, m, 0.0f)) - tl_rk_ld_c(a->vb, 0, j, m, 0.0f);
  }
}

/* y[0..n) = the op's values; streaming stores from the first aligned element when nt. */
TL_RK_AI void tl_rk_apply_(void *y, int ybf, int64_t n, int nt, int op, const tl_rk_args *a, int xbf) {
  int64_t j = 0, h = nt ? tl_rk_nt_head(y, ybf) : -1;
  if (h >= 0 && n - h >= 64) { /* short rows keep ordinary stores */
    for (; j < h; j += TL_RK_W) { /* the head: up to 15 f32 or 31 bf16 */
      const int64_t m = h - j < TL_RK_W ? h - j : TL_RK_W;
      tl_rk_st_n(y, ybf, j, m, tl_rk_val(op, a, xbf, ybf, j, m));
    }
    j = h;
    if (ybf) /* 2 * TL_RK_W bf16 per streaming store: whole 64-byte lines with 16 lanes */
      for (; j + 2 * TL_RK_W <= n; j += 2 * TL_RK_W)
        TL_RK_NT_BF16X2((uint16_t *)y + j, tl_rk_val(op, a, xbf, ybf, j, TL_RK_W),
                        tl_rk_val(op, a, xbf, ybf, j + TL_RK_W, TL_RK_W));
    for (; j + TL_RK_W <= n; j += TL_RK_W) tl_rk_st_nt(y, ybf, j, tl_rk_val(op, a, xbf, ybf, j, TL_RK_W));
    if (j < n) tl_rk_st_n(y, ybf, j, n - j, tl_rk_val(op, a, xbf, ybf, j, n - j));
    TL_RK_NT_FENCE();
    return;
  }
  for (; j + TL_RK_W <= n; j += TL_RK_W) tl_rk_st(y, ybf, j, tl_rk_val(op, a, xbf, ybf, j, TL_RK_W));
  if (j < n) tl_rk_st_n(y, ybf, j, n - j, tl_rk_val(op, a, xbf, ybf, j, n - j));
}

/* The driver with x's and y's dtypes as constants (four instances per op). */
TL_RK_AI void tl_rk_apply(void *y, int ybf, int64_t n, int nt, int op, const tl_rk_args *a, int xbf) {
  if (xbf) {
    if (ybf) tl_rk_apply_(y, 1, n, nt, op, a, 1);
    else tl_rk_apply_(y, 0, n, nt, op, a, 1);
  } else {
    if (ybf) tl_rk_apply_(y, 1, n, nt, op, a, 0);
    else tl_rk_apply_(y, 0, n, nt, op, a, 0);
  }
}

static void tl_rk_scale_row(void *y, int ybf, const float *e, int64_t n, float c, int nt) {
  tl_rk_args a = {.e = e, .sc = c};
  tl_rk_apply(y, ybf, n, nt, TL_RK_SCALE, &a, 0);
}

static void tl_rk_expscale_row(void *y, int ybf, const void *x, int xbf, int64_t n, float m, float c, int nt) {
  tl_rk_args a = {.x = x, .sa = m, .sc = c};
  tl_rk_apply(y, ybf, n, nt, TL_RK_EXPSCALE, &a, xbf);
}

static void tl_rk_shift_row(void *y, int ybf, const void *x, int xbf, int64_t n, float sa, float sb, int nt) {
  tl_rk_args a = {.x = x, .sa = sa, .sb = sb};
  tl_rk_apply(y, ybf, n, nt, TL_RK_SHIFT, &a, xbf);
}

static void tl_rk_norm_row(void *y, int ybf, const void *x, int xbf, int64_t n, float mh, float r, float c,
                           const float *g, const float *b, int nt) {
  tl_rk_args a = {.x = x, .g = g, .b = b, .sa = mh, .sb = r, .sc = c};
  tl_rk_apply(y, ybf, n, nt, TL_RK_NORM, &a, xbf);
}

static void tl_rk_scale_vv(void *y, int ybf, const float *e, int64_t n, const float *c, int nt) {
  tl_rk_args a = {.e = e, .va = c};
  tl_rk_apply(y, ybf, n, nt, TL_RK_SCALE_VV, &a, 0);
}

static void tl_rk_expscale_vv(void *y, int ybf, const void *x, int xbf, int64_t n, const float *m, const float *c,
                              int nt) {
  tl_rk_args a = {.x = x, .va = m, .vb = c};
  tl_rk_apply(y, ybf, n, nt, TL_RK_EXPSCALE_VV, &a, xbf);
}

static void tl_rk_shift_vv(void *y, int ybf, const void *x, int xbf, int64_t n, const float *va, const float *vb,
                           int nt) {
  tl_rk_args a = {.x = x, .va = va, .vb = vb};
  tl_rk_apply(y, ybf, n, nt, TL_RK_SHIFT_VV, &a, xbf);
}

/* ---- column accumulators ---- */

TL_RK_AI void tl_rk_max_acc_(float *acc, const void *x, int bf, int64_t n) {
  int64_t j = 0;
  for (; j + TL_RK_W <= n; j += TL_RK_W) tl_rk_st(acc, 0, j, tl_rk_max(tl_rk_ld(acc, 0, j), tl_rk_ld(x, bf, j)));
  if (j < n) {
    const float ninf = -__builtin_inff();
    tl_rk_st_n(acc, 0, j, n - j, tl_rk_max(tl_rk_ld_n(acc, 0, j, n - j, ninf), tl_rk_ld_n(x, bf, j, n - j, ninf)));
  }
}

static void tl_rk_max_acc(float *acc, const void *x, int xbf, int64_t n) {
  if (xbf) tl_rk_max_acc_(acc, x, 1, n);
  else tl_rk_max_acc_(acc, x, 0, n);
}

TL_RK_AI void tl_rk_sumexp_acc_(float *acc, float *e, const void *x, int bf, int64_t n, const float *m, int ebf) {
  int64_t j = 0;
  for (; j + TL_RK_W <= n; j += TL_RK_W) {
    tl_rkv t = tl_rk_exp_for(tl_rk_ld(x, bf, j) - tl_rk_ld(m, 0, j), ebf);
    if (e) tl_rk_st(e, 0, j, t);
    tl_rk_st(acc, 0, j, tl_rk_ld(acc, 0, j) + t);
  }
  if (j < n) {
    tl_rkv t = tl_rk_exp_for(tl_rk_ld_n(x, bf, j, n - j, 0.0f) - tl_rk_ld_n(m, 0, j, n - j, 0.0f), ebf);
    if (e) tl_rk_st_n(e, 0, j, n - j, t);
    tl_rk_st_n(acc, 0, j, n - j, tl_rk_ld_n(acc, 0, j, n - j, 0.0f) + t);
  }
}

static void tl_rk_sumexp_acc(float *acc, float *e, const void *x, int xbf, int64_t n, const float *m, int ebf) {
  if (ebf) {
    if (xbf) tl_rk_sumexp_acc_(acc, e, x, 1, n, m, 1);
    else tl_rk_sumexp_acc_(acc, e, x, 0, n, m, 1);
  } else {
    if (xbf) tl_rk_sumexp_acc_(acc, e, x, 1, n, m, 0);
    else tl_rk_sumexp_acc_(acc, e, x, 0, n, m, 0);
  }
}

/* The tl_rows_impl of the including file's instance (each ISA file defines one with this). */
#define TL_RK_TABLE(isa_, name_) \
  { \
    .isa = (isa_), .name = (name_), .max_row = tl_rk_max_row, .sumexp_row = tl_rk_sumexp_row, \
    .sumdev_row = tl_rk_sumdev_row, .moments_row = tl_rk_moments_row, .scale_row = tl_rk_scale_row, \
    .expscale_row = tl_rk_expscale_row, .shift_row = tl_rk_shift_row, .norm_row = tl_rk_norm_row, \
    .max_acc = tl_rk_max_acc, .sumexp_acc = tl_rk_sumexp_acc, .scale_vv = tl_rk_scale_vv, \
    .expscale_vv = tl_rk_expscale_vv, .shift_vv = tl_rk_shift_vv \
  }

#endif /* TL_ROWS_KERN_H */
