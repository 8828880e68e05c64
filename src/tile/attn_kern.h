/* attn_kern.h — attention's online-softmax vector code, written once on tl_vf32 (16 lanes).
 *
 * Included only by the per-ISA instance files (attn_scalar.c, <isa>/attn_<isa>.c), which define
 * TL_ATTN_IMPL_NAME / TL_ATTN_IMPL_ISA and get the table below compiled with their flags. The
 * contract of each function is in attn_impl.h. Tails (n % 16) go through a 16-lane stack copy
 * padded with a neutral value, so every element is computed by the same vector code. */
#ifndef TL_ATTN_KERN_H
#define TL_ATTN_KERN_H

/* tl_vf32 values cross these static functions by value; the ABI note GCC gives about it does not
 * apply (nothing leaves this translation unit as a vector). */
#pragma GCC diagnostic ignored "-Wpsabi"


#include <math.h>
#include <string.h>

#include "attn_impl.h"
#include "tilec_vec.h"

#define TL_AK_W 16
#define TL_AK_AI static inline __attribute__((always_inline))

TL_AK_AI tl_vf32 tl_ak_load(const float *p) {
  tl_vf32 v;
  memcpy(&v, p, sizeof v);
  return v;
}
TL_AK_AI void tl_ak_store(float *p, tl_vf32 v) { memcpy(p, &v, sizeof v); }
/* n (< 16) floats from p, the other lanes fill. */
TL_AK_AI tl_vf32 tl_ak_load_tail(const float *p, int64_t n, float fill) {
  float t[TL_AK_W];
  for (int i = 0; i < TL_AK_W; i++) t[i] = fill;
  memcpy(t, p, (size_t)n * sizeof(float));
  return tl_ak_load(t);
}
TL_AK_AI void tl_ak_store_tail(float *p, int64_t n, tl_vf32 v) {
  float t[TL_AK_W];
  tl_ak_store(t, v);
  memcpy(p, t, (size_t)n * sizeof(float));
}
/* max that propagates NaN from either side. */
TL_AK_AI tl_vf32 tl_ak_max(tl_vf32 a, tl_vf32 b) {
  tl_vi32 take_b = (b > a) | (b != b);
  return tl_vf32_sel(take_b, b, a);
}
TL_AK_AI float tl_ak_hmax(tl_vf32 v) {
  float r = v[0];
  for (int i = 1; i < TL_AK_W; i++) r = (v[i] > r || v[i] != v[i]) ? v[i] : r;
  return r;
}
TL_AK_AI float tl_ak_hsum(tl_vf32 v) { /* pairwise: halves, then quarters, ... */
  typedef float v8 __attribute__((vector_size(32)));
  typedef float v4 __attribute__((vector_size(16)));
  v8 a, b;
  memcpy(&a, &v, 32), memcpy(&b, (const char *)&v + 32, 32);
  a += b;
  v4 c, d;
  memcpy(&c, &a, 16), memcpy(&d, (const char *)&a + 16, 16);
  c += d;
  return (c[0] + c[2]) + (c[1] + c[3]);
}
/* 16 mask values as f32. */
TL_AK_AI tl_vf32 tl_ak_mask16(const void *mask, tl_dtype mdt, int64_t c, int64_t n) {
  if (mdt == TL_BF16) {
    uint16_t h[TL_AK_W] = {0};
    memcpy(h, (const uint16_t *)mask + c, (size_t)(n < TL_AK_W ? n : TL_AK_W) * 2);
    tl_vu16 hv;
    memcpy(&hv, h, sizeof hv);
    return tl_vf32_from_bf16(hv);
  }
  return n < TL_AK_W ? tl_ak_load_tail((const float *)mask + c, n, 0.0f) : tl_ak_load((const float *)mask + c);
}

static float tl_ak_prep(float *s, int64_t n, float scale, const void *mask, tl_dtype mdt, int64_t lim) {
  const tl_vf32 ninf = tl_vf32_splat(-INFINITY);
  tl_vf32 mx = ninf;
  tl_vf32 lane;
  for (int i = 0; i < TL_AK_W; i++) lane[i] = (float)i;
  for (int64_t c = 0; c < n; c += TL_AK_W) {
    const int64_t w = n - c < TL_AK_W ? n - c : TL_AK_W;
    tl_vf32 v = w < TL_AK_W ? tl_ak_load_tail(s + c, w, 0.0f) : tl_ak_load(s + c);
    v = v * scale;
    if (mask) v = v + tl_ak_mask16(mask, mdt, c, w);
    if (c + TL_AK_W > lim) {
      if (lim <= c) v = ninf; /* columns at or beyond lim see nothing */
      tl_vi32 dead = lane >= (float)(lim - c); /* lim - c < 16 here: exact in f32 */
      v = tl_vf32_sel(dead, ninf, v);
    }
    if (w < TL_AK_W) {
      tl_ak_store_tail(s + c, w, v);
      tl_vi32 pad = lane >= (float)w;
      v = tl_vf32_sel(pad, ninf, v); /* lanes past n do not count */
    } else {
      tl_ak_store(s + c, v);
    }
    mx = tl_ak_max(mx, v);
  }
  return tl_ak_hmax(mx);
}

/* flatten: the exp helpers are inlined here (an out-of-line clone would take vectors by value) */
__attribute__((flatten)) static float tl_ak_exp_sum(float *s, int64_t n, float m) {
  tl_vf32 acc = tl_vf32_splat(0.0f);
  int64_t c = 0;
  for (; c + TL_AK_W <= n; c += TL_AK_W) {
    tl_vf32 e = tl_vf32_exp(tl_ak_load(s + c) - m);
    tl_ak_store(s + c, e);
    acc += e;
  }
  if (c < n) {
    tl_vf32 e = tl_vf32_exp(tl_ak_load_tail(s + c, n - c, -INFINITY) - m); /* padding lanes: exp(-inf) = 0 */
    tl_ak_store_tail(s + c, n - c, e);
    acc += e;
  }
  return tl_ak_hsum(acc);
}

static void tl_ak_scale(float *x, int64_t n, float a) {
  int64_t c = 0;
  for (; c + TL_AK_W <= n; c += TL_AK_W) tl_ak_store(x + c, tl_ak_load(x + c) * a);
  if (c < n) tl_ak_store_tail(x + c, n - c, tl_ak_load_tail(x + c, n - c, 0.0f) * a);
}

static void tl_ak_to_bf16(uint16_t *dst, const float *src, int64_t n) {
  int64_t c = 0;
  for (; c + TL_AK_W <= n; c += TL_AK_W) {
    tl_vu16 h = tl_vf32_to_bf16(tl_ak_load(src + c));
    memcpy(dst + c, &h, sizeof h);
  }
  if (c < n) {
    tl_vu16 h = tl_vf32_to_bf16(tl_ak_load_tail(src + c, n - c, 0.0f));
    memcpy(dst + c, &h, (size_t)(n - c) * 2);
  }
}

static void tl_ak_store_row(void *dst, tl_dtype dt, const float *src, int64_t n, float a) {
  for (int64_t c = 0; c < n; c += TL_AK_W) {
    const int64_t w = n - c < TL_AK_W ? n - c : TL_AK_W;
    tl_vf32 v = (w < TL_AK_W ? tl_ak_load_tail(src + c, w, 0.0f) : tl_ak_load(src + c)) * a;
    if (dt == TL_BF16) {
      tl_vu16 h = tl_vf32_to_bf16(v);
      memcpy((uint16_t *)dst + c, &h, (size_t)w * 2);
    } else if (w < TL_AK_W) {
      tl_ak_store_tail((float *)dst + c, w, v);
    } else {
      tl_ak_store((float *)dst + c, v);
    }
  }
}

/* 16 (or the w < 16 left) elements of a K/V row at element offset c, as f32. */
TL_AK_AI tl_vf32 tl_ak_row16(const void *row, tl_dtype dt, int64_t c, int64_t w) {
  if (dt == TL_BF16) {
    tl_vu16 h;
    if (w < TL_AK_W) {
      uint16_t t[TL_AK_W] = {0};
      memcpy(t, (const uint16_t *)row + c, (size_t)w * 2);
      memcpy(&h, t, sizeof h);
    } else {
      memcpy(&h, (const uint16_t *)row + c, sizeof h);
    }
    return tl_vf32_from_bf16(h);
  }
  return w < TL_AK_W ? tl_ak_load_tail((const float *)row + c, w, 0.0f) : tl_ak_load((const float *)row + c);
}

static void tl_ak_qk(float *s, int64_t n, const float *q, const void *k, tl_dtype kdt, int64_t ks, int64_t D) {
  const size_t es = kdt == TL_BF16 ? 2 : 4;
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) { /* four keys at a time: one horizontal sum per key */
    const char *k0 = (const char *)k + (size_t)(j * ks) * es;
    const size_t kb = (size_t)ks * es;
    tl_vf32 a0 = tl_vf32_splat(0.0f), a1 = a0, a2 = a0, a3 = a0;
    for (size_t o = 0; o < 4 * kb; o += 64) __builtin_prefetch(k0 + 16 * kb + o); /* 16 keys ahead */
    for (int64_t c = 0; c < D; c += TL_AK_W) {
      const int64_t w = D - c < TL_AK_W ? D - c : TL_AK_W;
      const tl_vf32 qv = w < TL_AK_W ? tl_ak_load_tail(q + c, w, 0.0f) : tl_ak_load(q + c);
      a0 += qv * tl_ak_row16(k0, kdt, c, w);
      a1 += qv * tl_ak_row16(k0 + kb, kdt, c, w);
      a2 += qv * tl_ak_row16(k0 + 2 * kb, kdt, c, w);
      a3 += qv * tl_ak_row16(k0 + 3 * kb, kdt, c, w);
    }
    s[j] = tl_ak_hsum(a0), s[j + 1] = tl_ak_hsum(a1), s[j + 2] = tl_ak_hsum(a2), s[j + 3] = tl_ak_hsum(a3);
  }
  for (; j < n; j++) {
    const char *kr = (const char *)k + (size_t)(j * ks) * es;
    tl_vf32 a = tl_vf32_splat(0.0f);
    for (int64_t c = 0; c < D; c += TL_AK_W) {
      const int64_t w = D - c < TL_AK_W ? D - c : TL_AK_W;
      a += (w < TL_AK_W ? tl_ak_load_tail(q + c, w, 0.0f) : tl_ak_load(q + c)) * tl_ak_row16(kr, kdt, c, w);
    }
    s[j] = tl_ak_hsum(a);
  }
}

static void tl_ak_pv(float *acc, int64_t D, const float *p, const void *v, tl_dtype vdt, int64_t vs, int64_t n) {
  const size_t es = vdt == TL_BF16 ? 2 : 4;
  for (int64_t c = 0; c < D; c += 8 * TL_AK_W) { /* up to 128 columns held in 8 vectors */
    const int64_t cw = D - c < 8 * TL_AK_W ? D - c : 8 * TL_AK_W;
    const int nv = (int)TL_CDIV(cw, TL_AK_W);
    tl_vf32 a[8];
    for (int i = 0; i < nv; i++) {
      const int64_t w = cw - i * TL_AK_W < TL_AK_W ? cw - i * TL_AK_W : TL_AK_W;
      a[i] = w < TL_AK_W ? tl_ak_load_tail(acc + c + i * TL_AK_W, w, 0.0f) : tl_ak_load(acc + c + i * TL_AK_W);
    }
    for (int64_t j = 0; j < n; j++) {
      const char *vr = (const char *)v + (size_t)(j * vs) * es;
      if (c == 0)
        for (int64_t o = 0; o < D * (int64_t)es; o += 64) __builtin_prefetch(vr + 8 * (size_t)vs * es + o); /* 8 rows ahead */
      const float pj = p[j];
      for (int i = 0; i < nv; i++) {
        const int64_t w = cw - i * TL_AK_W < TL_AK_W ? cw - i * TL_AK_W : TL_AK_W;
        a[i] += pj * tl_ak_row16(vr, vdt, c + i * TL_AK_W, w);
      }
    }
    for (int i = 0; i < nv; i++) {
      const int64_t w = cw - i * TL_AK_W < TL_AK_W ? cw - i * TL_AK_W : TL_AK_W;
      if (w < TL_AK_W) tl_ak_store_tail(acc + c + i * TL_AK_W, w, a[i]);
      else tl_ak_store(acc + c + i * TL_AK_W, a[i]);
    }
  }
}

#endif /* TL_ATTN_KERN_H */
