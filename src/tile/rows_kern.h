/* rows_kern.h — the fused row kernels of softmax and the norms, written once on tl_vf32 (GNU C
 * vectors: the compiler maps them to the ISA of the including file). Included only by the files
 * that instantiate a tl_rows_impl (src/tile/rows_scalar.c and src/tile/<isa>/rows_<isa>.c), each
 * with its own flags; the contract is in rows_impl.h.
 *
 * An including file may define, before the include, non-temporal stores for its ISA:
 *   TL_RK_NT_F32(p, v)   16 floats (tl_vf32 v) at a 64-byte aligned p
 *   TL_RK_NT_BF16(p, h)  16 bf16 (tl_vu16 h) at a 32-byte aligned p
 *   TL_RK_NT_BF16X2(p, v0, v1)  32 bf16 converted from two tl_vf32 at a 64-byte aligned p, one
 *                        whole line (optional: two TL_RK_NT_BF16 stores otherwise)
 *   TL_RK_NT_FENCE()     orders them before later stores (sfence)
 * Without them nt is ignored (ordinary stores). The ISA hooks (max/min, the bf16 conversion,
 * exp's scaling) and tl_rk_exp are src/tile/vec_hooks.h's.
 *
 * Invariants: rows are walked 16 lanes at a time; the chunk at the end of a row (and, with
 * streaming stores, the unaligned head) goes through a 16-element buffer, so nothing outside
 * [0, n) is touched. Reductions keep 4 vector accumulators (64 lanes) to cover the add latency;
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
#define TL_RK_NT_F32(p, v) memcpy((p), &(v), 64)
#define TL_RK_NT_BF16(p, h) memcpy((p), &(h), 32)
#define TL_RK_NT_FENCE() ((void)0)
#endif
#ifndef TL_RK_NT_BF16X2
#define TL_RK_NT_BF16X2(p, v0, v1)                                                 \
  do {                                                                             \
    tl_vu16 tl_nt_h0_ = TL_RK_TO_BF16(v0), tl_nt_h1_ = TL_RK_TO_BF16(v1);          \
    TL_RK_NT_BF16((p), tl_nt_h0_);                                                 \
    TL_RK_NT_BF16((uint16_t *)(p) + 16, tl_nt_h1_);                                \
  } while (0)
#endif

/* ---- loads and stores ---- */

/* An element count m (0..16 at every call) as a size the compiler can see is bounded (GCC's
 * -Wstringop-overflow otherwise imagines a negative m in the unoptimised builds). */
TL_RK_AI size_t tl_rk_cnt(int64_t m) { return m <= 0 ? 0 : m >= 16 ? 16 : (size_t)m; }

/* 16 elements from element j of p (f32 or bf16) as f32. */
TL_RK_AI tl_vf32 tl_rk_ld(const void *p, int bf, int64_t j) {
  if (bf) {
    tl_vu16 h;
    memcpy(&h, (const uint16_t *)p + j, sizeof h);
    return TL_RK_FROM_BF16(h);
  }
  tl_vf32 v;
  memcpy(&v, (const float *)p + j, sizeof v);
  return v;
}

/* m (0 < m < 16) elements from element j; the other lanes hold fill. */
TL_RK_AI tl_vf32 tl_rk_ld_n(const void *p, int bf, int64_t j, int64_t m, float fill) {
  float buf[16];
  for (int k = 0; k < 16; k++) buf[k] = fill;
  if (bf) {
    const uint16_t *h = (const uint16_t *)p + j;
    for (int64_t k = 0; k < (int64_t)tl_rk_cnt(m); k++) {
      uint32_t u = (uint32_t)h[k] << 16;
      memcpy(&buf[k], &u, 4);
    }
  } else {
    memcpy(buf, (const float *)p + j, tl_rk_cnt(m) * 4);
  }
  tl_vf32 v;
  memcpy(&v, buf, sizeof v);
  return v;
}

/* 16 or m (< 16) elements, as the count says. */
TL_RK_AI tl_vf32 tl_rk_ld_c(const void *p, int bf, int64_t j, int64_t m, float fill) {
  return m == 16 ? tl_rk_ld(p, bf, j) : tl_rk_ld_n(p, bf, j, m, fill);
}

TL_RK_AI void tl_rk_st(void *p, int bf, int64_t j, tl_vf32 v) {
  if (bf) {
    tl_vu16 h = TL_RK_TO_BF16(v);
    memcpy((uint16_t *)p + j, &h, sizeof h);
  } else {
    memcpy((float *)p + j, &v, sizeof v);
  }
}

/* The first m (0 < m <= 16) lanes. */
TL_RK_AI void tl_rk_st_n(void *p, int bf, int64_t j, int64_t m, tl_vf32 v) {
  if (bf) {
    tl_vu16 h = TL_RK_TO_BF16(v);
    memcpy((uint16_t *)p + j, &h, tl_rk_cnt(m) * 2);
  } else {
    memcpy((float *)p + j, &v, tl_rk_cnt(m) * 4);
  }
}

/* Streaming store at an address aligned as TL_RK_NT_* need. */
TL_RK_AI void tl_rk_st_nt(void *p, int bf, int64_t j, tl_vf32 v) {
  if (bf) {
    tl_vu16 h = TL_RK_TO_BF16(v);
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
TL_RK_AI tl_vi32 tl_rk_lanes(int64_t m) {
  const tl_vi32 iota = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  return iota < (int32_t)m;
}

/* max(acc, v) per lane; a NaN in v is ignored (acc kept). */
TL_RK_AI tl_vf32 tl_rk_max(tl_vf32 acc, tl_vf32 v) { return TL_RK_MAXPS(v, acc); }

TL_RK_AI float tl_rk_hsum(tl_vf32 v) {
  float a[16];
  memcpy(a, &v, sizeof a);
  for (int w = 8; w >= 1; w /= 2)
    for (int k = 0; k < w; k++) a[k] += a[k + w];
  return a[0];
}

TL_RK_AI float tl_rk_hmax(tl_vf32 v) {
  float a[16];
  memcpy(a, &v, sizeof a);
  float m = a[0];
  for (int k = 1; k < 16; k++) m = a[k] > m ? a[k] : m;
  return m;
}

/* ---- per-row reductions ---- */

TL_RK_AI float tl_rk_max_row_(const void *x, int bf, int64_t n) {
  const float ninf = -__builtin_inff();
  tl_vf32 a0 = tl_vf32_splat(ninf), a1 = a0, a2 = a0, a3 = a0;
  int64_t j = 0;
  for (; j + 64 <= n; j += 64) {
    a0 = tl_rk_max(a0, tl_rk_ld(x, bf, j));
    a1 = tl_rk_max(a1, tl_rk_ld(x, bf, j + 16));
    a2 = tl_rk_max(a2, tl_rk_ld(x, bf, j + 32));
    a3 = tl_rk_max(a3, tl_rk_ld(x, bf, j + 48));
  }
  for (; j + 16 <= n; j += 16) a0 = tl_rk_max(a0, tl_rk_ld(x, bf, j));
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
  tl_vf32 a0 = tl_vf32_splat(0.0f), a1 = a0, a2 = a0, a3 = a0;
  int64_t j = 0;
  for (; j + 64 <= n; j += 64) {
    tl_rk_prefetch64(pf, bf, j);
    tl_vf32 t0 = tl_rk_exp_for(tl_rk_ld(x, bf, j) - m, ebf), t1 = tl_rk_exp_for(tl_rk_ld(x, bf, j + 16) - m, ebf);
    tl_vf32 t2 = tl_rk_exp_for(tl_rk_ld(x, bf, j + 32) - m, ebf), t3 = tl_rk_exp_for(tl_rk_ld(x, bf, j + 48) - m, ebf);
    if (e) {
      memcpy(e + j, &t0, 64), memcpy(e + j + 16, &t1, 64);
      memcpy(e + j + 32, &t2, 64), memcpy(e + j + 48, &t3, 64);
    }
    a0 += t0, a1 += t1, a2 += t2, a3 += t3;
  }
  for (; j + 16 <= n; j += 16) {
    tl_vf32 t = tl_rk_exp_for(tl_rk_ld(x, bf, j) - m, ebf);
    if (e) memcpy(e + j, &t, 64);
    a0 += t;
  }
  if (j < n) {
    tl_vf32 t = tl_rk_exp_for(tl_rk_ld_n(x, bf, j, n - j, 0.0f) - m, ebf);
    t = tl_vf32_sel(tl_rk_lanes(n - j), t, tl_vf32_splat(0.0f));
    if (e) memcpy(e + j, &t, tl_rk_cnt(n - j) * 4);
    a1 += t;
  }
  return tl_rk_hsum((a0 + a1) + (a2 + a3));
}

static float tl_rk_sumexp_row(const void *x, int xbf, int64_t n, float m, float *e, const void *pf, int ebf) {
  if (ebf) return xbf ? tl_rk_sumexp_row_(x, 1, n, m, e, pf, 1) : tl_rk_sumexp_row_(x, 0, n, m, e, pf, 1);
  return xbf ? tl_rk_sumexp_row_(x, 1, n, m, e, pf, 0) : tl_rk_sumexp_row_(x, 0, n, m, e, pf, 0);
}

TL_RK_AI float tl_rk_sum_row_(const void *x, int bf, int64_t n) {
  tl_vf32 a0 = tl_vf32_splat(0.0f), a1 = a0, a2 = a0, a3 = a0;
  int64_t j = 0;
  for (; j + 64 <= n; j += 64) {
    a0 += tl_rk_ld(x, bf, j), a1 += tl_rk_ld(x, bf, j + 16);
    a2 += tl_rk_ld(x, bf, j + 32), a3 += tl_rk_ld(x, bf, j + 48);
  }
  for (; j + 16 <= n; j += 16) a0 += tl_rk_ld(x, bf, j);
  if (j < n) a1 += tl_rk_ld_n(x, bf, j, n - j, 0.0f);
  return tl_rk_hsum((a0 + a1) + (a2 + a3));
}

static float tl_rk_sum_row(const void *x, int xbf, int64_t n) {
  return xbf ? tl_rk_sum_row_(x, 1, n) : tl_rk_sum_row_(x, 0, n);
}

TL_RK_AI void tl_rk_sumdev_row_(const void *x, int bf, int64_t n, float mh, float *sd, float *sd2, const void *pf) {
  tl_vf32 s0 = tl_vf32_splat(0.0f), s1 = s0, q0 = s0, q1 = s0;
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) {
    if ((j & 63) == 0) tl_rk_prefetch64(pf, bf, j);
    tl_vf32 d0 = tl_rk_ld(x, bf, j) - mh, d1 = tl_rk_ld(x, bf, j + 16) - mh;
    s0 += d0, s1 += d1;
    q0 += d0 * d0, q1 += d1 * d1;
  }
  for (; j + 16 <= n; j += 16) {
    tl_vf32 d = tl_rk_ld(x, bf, j) - mh;
    s0 += d, q0 += d * d;
  }
  if (j < n) { /* the fill mh gives d = 0 in the missing lanes */
    tl_vf32 d = tl_rk_ld_n(x, bf, j, n - j, mh) - mh;
    s1 += d, q1 += d * d;
  }
  *sd = tl_rk_hsum(s0 + s1);
  *sd2 = tl_rk_hsum(q0 + q1);
}

static void tl_rk_sumdev_row(const void *x, int xbf, int64_t n, float mh, float *sd, float *sd2, const void *pf) {
  if (xbf) tl_rk_sumdev_row_(x, 1, n, mh, sd, sd2, pf);
  else tl_rk_sumdev_row_(x, 0, n, mh, sd, sd2, pf);
}

/* ---- element-wise writers: one driver, the value per chunk chosen by a constant op ---- */

enum { TL_RK_SCALE, TL_RK_EXPSCALE, TL_RK_SHIFT, TL_RK_NORM, TL_RK_SCALE_VV, TL_RK_EXPSCALE_VV, TL_RK_SHIFT_VV };

typedef struct tl_rk_args {
  const void *x;                   /* the input row (xbf) */
  const float *e, *g, *b, *va, *vb; /* f32 rows: exponentials, gamma, beta, per-element a and b */
  float sa, sb, sc;                /* scalars */
} tl_rk_args;

/* The value of elements j..j+m-1 (m <= 16) for op. */
TL_RK_AI tl_vf32 tl_rk_val(int op, const tl_rk_args *a, int xbf, int ybf, int64_t j, int64_t m) {
  switch (op) {
  case TL_RK_SCALE: return tl_rk_ld_c(a->e, 0, j, m, 0.0f) * a->sc;
  case TL_RK_EXPSCALE: return tl_rk_exp_for(tl_rk_ld_c(a->x, xbf, j, m, 0.0f) - a->sa, ybf) * a->sc;
  case TL_RK_SHIFT: return (tl_rk_ld_c(a->x, xbf, j, m, 0.0f) - a->sa) - a->sb;
  case TL_RK_NORM: {
    tl_vf32 t = (tl_rk_ld_c(a->x, xbf, j, m, 0.0f) - a->sa) * a->sb + a->sc;
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
    for (; j < h; j += 16) { /* the head: up to 15 f32 or 31 bf16 */
      const int64_t m = h - j < 16 ? h - j : 16;
      tl_rk_st_n(y, ybf, j, m, tl_rk_val(op, a, xbf, ybf, j, m));
    }
    j = h;
    if (ybf) /* whole 64-byte lines: 32 bf16 per streaming store */
      for (; j + 32 <= n; j += 32)
        TL_RK_NT_BF16X2((uint16_t *)y + j, tl_rk_val(op, a, xbf, ybf, j, 16), tl_rk_val(op, a, xbf, ybf, j + 16, 16));
    for (; j + 16 <= n; j += 16) tl_rk_st_nt(y, ybf, j, tl_rk_val(op, a, xbf, ybf, j, 16));
    if (j < n) tl_rk_st_n(y, ybf, j, n - j, tl_rk_val(op, a, xbf, ybf, j, n - j));
    TL_RK_NT_FENCE();
    return;
  }
  for (; j + 16 <= n; j += 16) tl_rk_st(y, ybf, j, tl_rk_val(op, a, xbf, ybf, j, 16));
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
  for (; j + 16 <= n; j += 16) tl_rk_st(acc, 0, j, tl_rk_max(tl_rk_ld(acc, 0, j), tl_rk_ld(x, bf, j)));
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
  for (; j + 16 <= n; j += 16) {
    tl_vf32 t = tl_rk_exp_for(tl_rk_ld(x, bf, j) - tl_rk_ld(m, 0, j), ebf);
    if (e) tl_rk_st(e, 0, j, t);
    tl_rk_st(acc, 0, j, tl_rk_ld(acc, 0, j) + t);
  }
  if (j < n) {
    tl_vf32 t = tl_rk_exp_for(tl_rk_ld_n(x, bf, j, n - j, 0.0f) - tl_rk_ld_n(m, 0, j, n - j, 0.0f), ebf);
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
    .isa = (isa_), .name = (name_), .max_row = tl_rk_max_row, .sumexp_row = tl_rk_sumexp_row, .sum_row = tl_rk_sum_row, \
    .sumdev_row = tl_rk_sumdev_row, .scale_row = tl_rk_scale_row, .expscale_row = tl_rk_expscale_row, \
    .shift_row = tl_rk_shift_row, .norm_row = tl_rk_norm_row, .max_acc = tl_rk_max_acc, .sumexp_acc = tl_rk_sumexp_acc, \
    .scale_vv = tl_rk_scale_vv, .expscale_vv = tl_rk_expscale_vv, .shift_vv = tl_rk_shift_vv \
  }

#endif /* TL_ROWS_KERN_H */
