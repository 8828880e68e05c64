/* attn_kern.h — attention's online-softmax vector code, written once on vec_hooks.h's tl_rkv
 * (TL_RK_W lanes: 16 on AVX-512, 8 on AVX2, 4 in the baseline instance).
 *
 * Included only by the per-ISA instance files (attn_scalar.c, <isa>/attn_<isa>.c), which define
 * TL_ATTN_IMPL_NAME / TL_ATTN_IMPL_ISA and get the table below compiled with their flags. The
 * contract of each function is in attn_impl.h. Tails (n % TL_RK_W) go through a TL_RK_W-lane
 * stack copy padded with a neutral value, so every element is computed by the same vector code. */
#ifndef TL_ATTN_KERN_H
#define TL_ATTN_KERN_H

#include <math.h>
#include <string.h>

#include "attn_impl.h"
#include "vec_hooks.h"

TL_RK_AI tl_rkv tl_ak_load(const float *p) {
  tl_rkv v;
  memcpy(&v, p, sizeof v);
  return v;
}
TL_RK_AI void tl_ak_store(float *p, tl_rkv v) { memcpy(p, &v, sizeof v); }
/* n (< TL_RK_W) floats from p, the other lanes fill. */
TL_RK_AI tl_rkv tl_ak_load_tail(const float *p, int64_t n, float fill) {
  float t[TL_RK_W];
  for (int i = 0; i < TL_RK_W; i++) t[i] = fill;
  memcpy(t, p, (size_t)n * sizeof(float));
  return tl_ak_load(t);
}
TL_RK_AI void tl_ak_store_tail(float *p, int64_t n, tl_rkv v) {
  float t[TL_RK_W];
  tl_ak_store(t, v);
  memcpy(p, t, (size_t)n * sizeof(float));
}
/* TL_RK_W mask values as f32. */
TL_RK_AI tl_rkv tl_ak_maskv(const void *mask, tl_dtype mdt, int64_t c, int64_t n) {
  if (mdt == TL_BF16) {
    uint16_t h[TL_RK_W] = {0};
    memcpy(h, (const uint16_t *)mask + c, (size_t)(n < TL_RK_W ? n : TL_RK_W) * 2);
    tl_rkh hv;
    memcpy(&hv, h, sizeof hv);
    return TL_RK_FROM_BF16(hv);
  }
  return n < TL_RK_W ? tl_ak_load_tail((const float *)mask + c, n, 0.0f) : tl_ak_load((const float *)mask + c);
}

/* Stores TL_RK_W probabilities at column c of the P row: bf16 into pb, or f32 into s (w <
 * TL_RK_W: the first w). */
TL_RK_AI void tl_ak_put(float *s, uint16_t *pb, int64_t c, int64_t w, tl_rkv e) {
  if (pb) {
    tl_rkh h = TL_RK_TO_BF16(e);
    memcpy(pb + c, &h, (size_t)w * 2);
  } else if (w < TL_RK_W) {
    tl_ak_store_tail(s + c, w, e);
  } else {
    tl_ak_store(s + c, e);
  }
}

/* Pass 1: the row max of t = s * scale + mask over the visible columns [0, L) (with no mask and
 * scale > 0 the max of s itself, scaled once: rounding is monotone, so this is the max of t, and
 * s is not rewritten), NaN lanes ignored. Pass 2: exp(t - ms) for the visible columns, 0 beyond,
 * stored as P and summed in f32; a NaN score (or +inf, whose exp(inf - inf) is NaN) makes the
 * sum NaN, and then m_new too. Two vectors per iteration in both passes (max and exp latency). */
TL_RK_AI float tl_ak_row_(float *s, int64_t n, float scale, const void *mask, tl_dtype mdt, int64_t lim, float m_old,
                          float *m_new, uint16_t *pb, int ebf) {
  const tl_rkv ninf = tl_rkv_splat(-INFINITY);
  const int64_t L = lim < 0 ? 0 : lim < n ? lim : n;
  int stored = mask != NULL || !(scale > 0.0f);
  tl_rkv lane;
  for (int i = 0; i < TL_RK_W; i++) lane[i] = (float)i;
  tl_rkv mx0 = ninf, mx1 = ninf;
  int64_t c = 0;
  if (!stored) {
    for (; c + 2 * TL_RK_W <= L; c += 2 * TL_RK_W)
      mx0 = TL_RK_MAXPS(tl_ak_load(s + c), mx0), mx1 = TL_RK_MAXPS(tl_ak_load(s + c + TL_RK_W), mx1);
    for (; c < L; c += TL_RK_W) {
      const int64_t w = L - c < TL_RK_W ? L - c : TL_RK_W;
      mx0 = TL_RK_MAXPS(w < TL_RK_W ? tl_ak_load_tail(s + c, w, -INFINITY) : tl_ak_load(s + c), mx0);
    }
  } else {
    for (; c < L; c += TL_RK_W) {
      const int64_t w = L - c < TL_RK_W ? L - c : TL_RK_W;
      tl_rkv v = (w < TL_RK_W ? tl_ak_load_tail(s + c, w, 0.0f) : tl_ak_load(s + c)) * scale;
      if (mask) v = v + tl_ak_maskv(mask, mdt, c, w);
      if (w < TL_RK_W) {
        tl_ak_store_tail(s + c, w, v);
        v = tl_rkv_sel(lane >= (float)w, ninf, v); /* lanes past L do not count */
      } else {
        tl_ak_store(s + c, v);
      }
      mx0 = TL_RK_MAXPS(v, mx0);
    }
  }
  float mx = tl_rk_hmax(TL_RK_MAXPS(mx1, mx0));
  if (!stored && !(fabsf(mx = mx * scale) < 1048576.0f)) {
    /* s * scale - ms is fused into one multiply-add where the ISA has FMA, so the max score's
     * argument is the rounding error of ms = fl(mx * scale), up to half its ulp on either side
     * of 0: beyond 2^20 that could leave tl_rk_exp's domain (above 89: garbage from the generic
     * scaling; a review measured NaN and wrong outputs for scores of 1e9), and a product that
     * overflows must give exp(inf - inf) = NaN, which the fused form would not (-inf). So for
     * |mx * scale| >= 2^20, inf and -inf the products are stored first and the subtraction is
     * exact for the max (t <= 0 everywhere). */
    for (c = 0; c < L; c++) s[c] *= scale;
    stored = 1;
  }
  const float mn = mx > m_old ? mx : m_old; /* a NaN m_old stays */
  const float ms = mn == -INFINITY ? 0.0f : mn; /* a row with no key yet: exp(-inf - 0) = 0 */
  const float sc = stored ? 1.0f : scale;
  tl_rkv a0 = tl_rkv_splat(0.0f), a1 = a0;
  for (c = 0; c + 2 * TL_RK_W <= L; c += 2 * TL_RK_W) {
    const tl_rkv e0 = tl_rk_exp_for(tl_ak_load(s + c) * sc - ms, ebf);
    const tl_rkv e1 = tl_rk_exp_for(tl_ak_load(s + c + TL_RK_W) * sc - ms, ebf);
    tl_ak_put(s, pb, c, TL_RK_W, e0);
    tl_ak_put(s, pb, c + TL_RK_W, TL_RK_W, e1);
    a0 += e0, a1 += e1;
  }
  for (; c < n; c += TL_RK_W) { /* the last visible vector (lanes past L: -inf), then zeros */
    const int64_t w = n - c < TL_RK_W ? n - c : TL_RK_W;
    tl_rkv e = tl_rkv_splat(0.0f);
    if (c < L) {
      const tl_rkv t = (w < TL_RK_W ? tl_ak_load_tail(s + c, w, 0.0f) : tl_ak_load(s + c)) * sc - ms;
      e = tl_rk_exp_for(tl_rkv_sel(lane >= (float)(L - c), ninf, t), ebf);
    }
    tl_ak_put(s, pb, c, w, e);
    a0 += e;
  }
  const float sum = tl_rk_hsum(a0 + a1);
  *m_new = sum != sum ? sum : mn;
  return sum;
}

/* tl_ak_row with exp to bf16 accuracy (vec_hooks.h's tl_rk_exp_bf16, < 1e-5 relative) when the
 * probabilities are stored as bf16 (pb): the rounding to bf16 (up to 2^-9) dwarfs it, and the f32
 * row sum differs by as little. */
static float tl_ak_row(float *s, int64_t n, float scale, const void *mask, tl_dtype mdt, int64_t lim, float m_old,
                       float *m_new, uint16_t *pb) {
  if (pb) return tl_ak_row_(s, n, scale, mask, mdt, lim, m_old, m_new, pb, 1);
  return tl_ak_row_(s, n, scale, mask, mdt, lim, m_old, m_new, NULL, 0);
}

static void tl_ak_scale(float *x, int64_t n, float a) {
  int64_t c = 0;
  for (; c + TL_RK_W <= n; c += TL_RK_W) tl_ak_store(x + c, tl_ak_load(x + c) * a);
  if (c < n) tl_ak_store_tail(x + c, n - c, tl_ak_load_tail(x + c, n - c, 0.0f) * a);
}

static void tl_ak_store_row(void *dst, tl_dtype dt, const float *src, int64_t n, float a) {
  for (int64_t c = 0; c < n; c += TL_RK_W) {
    const int64_t w = n - c < TL_RK_W ? n - c : TL_RK_W;
    tl_rkv v = (w < TL_RK_W ? tl_ak_load_tail(src + c, w, 0.0f) : tl_ak_load(src + c)) * a;
    if (dt == TL_BF16) {
      tl_rkh h = tl_rkv_to_bf16(v);
      memcpy((uint16_t *)dst + c, &h, (size_t)w * 2);
    } else if (w < TL_RK_W) {
      tl_ak_store_tail((float *)dst + c, w, v);
    } else {
      tl_ak_store((float *)dst + c, v);
    }
  }
}

/* TL_RK_W (or the w < TL_RK_W left) elements of a K/V row at element offset c, as f32. */
TL_RK_AI tl_rkv tl_ak_rowv(const void *row, tl_dtype dt, int64_t c, int64_t w) {
  if (dt == TL_BF16) {
    tl_rkh h;
    if (w < TL_RK_W) {
      uint16_t t[TL_RK_W] = {0};
      memcpy(t, (const uint16_t *)row + c, (size_t)w * 2);
      memcpy(&h, t, sizeof h);
    } else {
      memcpy(&h, (const uint16_t *)row + c, sizeof h);
    }
    return TL_RK_FROM_BF16(h);
  }
  return w < TL_RK_W ? tl_ak_load_tail((const float *)row + c, w, 0.0f) : tl_ak_load((const float *)row + c);
}

static void tl_ak_qk(float *s, int64_t n, const float *q, const void *k, tl_dtype kdt, int64_t ks, int64_t D) {
  const size_t es = kdt == TL_BF16 ? 2 : 4;
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) { /* four keys at a time: one horizontal sum per key */
    const char *k0 = (const char *)k + (size_t)(j * ks) * es;
    const size_t kb = (size_t)ks * es;
    tl_rkv a0 = tl_rkv_splat(0.0f), a1 = a0, a2 = a0, a3 = a0;
    for (size_t o = 0; o < 4 * kb; o += 64) __builtin_prefetch(k0 + 16 * kb + o); /* 16 keys ahead */
    for (int64_t c = 0; c < D; c += TL_RK_W) {
      const int64_t w = D - c < TL_RK_W ? D - c : TL_RK_W;
      const tl_rkv qv = w < TL_RK_W ? tl_ak_load_tail(q + c, w, 0.0f) : tl_ak_load(q + c);
      a0 += qv * tl_ak_rowv(k0, kdt, c, w);
      a1 += qv * tl_ak_rowv(k0 + kb, kdt, c, w);
      a2 += qv * tl_ak_rowv(k0 + 2 * kb, kdt, c, w);
      a3 += qv * tl_ak_rowv(k0 + 3 * kb, kdt, c, w);
    }
    s[j] = tl_rk_hsum(a0), s[j + 1] = tl_rk_hsum(a1), s[j + 2] = tl_rk_hsum(a2), s[j + 3] = tl_rk_hsum(a3);
  }
  for (; j < n; j++) {
    const char *kr = (const char *)k + (size_t)(j * ks) * es;
    tl_rkv a = tl_rkv_splat(0.0f);
    for (int64_t c = 0; c < D; c += TL_RK_W) {
      const int64_t w = D - c < TL_RK_W ? D - c : TL_RK_W;
      a += (w < TL_RK_W ? tl_ak_load_tail(q + c, w, 0.0f) : tl_ak_load(q + c)) * tl_ak_rowv(kr, kdt, c, w);
    }
    s[j] = tl_rk_hsum(a);
  }
}

static void tl_ak_pv(float *acc, int64_t D, const float *p, const void *v, tl_dtype vdt, int64_t vs, int64_t n) {
  const size_t es = vdt == TL_BF16 ? 2 : 4;
  for (int64_t c = 0; c < D; c += 8 * TL_RK_W) { /* up to 8 vectors of columns (128 with 16 lanes) */
    const int64_t cw = D - c < 8 * TL_RK_W ? D - c : 8 * TL_RK_W;
    const int nv = (int)TL_CDIV(cw, TL_RK_W);
    tl_rkv a[8];
    for (int i = 0; i < nv; i++) {
      const int64_t w = cw - i * TL_RK_W < TL_RK_W ? cw - i * TL_RK_W : TL_RK_W;
      a[i] = w < TL_RK_W ? tl_ak_load_tail(acc + c + i * TL_RK_W, w, 0.0f) : tl_ak_load(acc + c + i * TL_RK_W);
    }
    for (int64_t j = 0; j < n; j++) {
      const char *vr = (const char *)v + (size_t)(j * vs) * es;
      if (c == 0)
        for (int64_t o = 0; o < D * (int64_t)es; o += 64) __builtin_prefetch(vr + 8 * (size_t)vs * es + o); /* 8 rows ahead */
      const float pj = p[j];
      for (int i = 0; i < nv; i++) {
        const int64_t w = cw - i * TL_RK_W < TL_RK_W ? cw - i * TL_RK_W : TL_RK_W;
        a[i] += pj * tl_ak_rowv(vr, vdt, c + i * TL_RK_W, w);
      }
    }
    for (int i = 0; i < nv; i++) {
      const int64_t w = cw - i * TL_RK_W < TL_RK_W ? cw - i * TL_RK_W : TL_RK_W;
      if (w < TL_RK_W) tl_ak_store_tail(acc + c + i * TL_RK_W, w, a[i]);
      else tl_ak_store(acc + c + i * TL_RK_W, a[i]);
    }
  }
}

/* The tl_attn_impl of the including file's instance (each ISA file defines one with this). */
#define TL_AK_TABLE(isa_, name_) \
  { \
    .isa = (isa_), .name = (name_), .row = tl_ak_row, .scale = tl_ak_scale, .store = tl_ak_store_row, .qk = tl_ak_qk, \
    .pv = tl_ak_pv \
  }

#endif /* TL_ATTN_KERN_H */
