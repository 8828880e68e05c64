/* rows_body.c — the step body of the softmax and norm kernels (norm_impl.h): per block of whole
 * rows (or columns), the fused row kernels of the program's ISA (tl_rows_impl_for) in one pass,
 * or the stats / apply halves of the two-level path. Grids, numerics: docs/norms.md.
 *
 * Invariants: only valid[] elements are read or written (blocks are used in place, edge blocks
 * too); a one-pass step writes every valid y element once; statistics are merged in double and
 * stored as f32 pairs where f32 alone would lose digits (means, sums of squares). */
#include <math.h>

#include "norm_impl.h"

static int tl_ro_is_softmax(tl_ro_kind k) { return k == TL_RO_SOFTMAX || k == TL_RO_LOG_SOFTMAX; }

/* 1 when the exponentials may be bf16-accurate (rows_impl.h's ebf): softmax into bf16. Not
 * log_softmax, whose outputs near 0 (-log s for s close to 1) carry the sum's error absolutely. */
static int tl_ro_ebf(const tl_ro_run *r) { return r->ybf && r->kind == TL_RO_SOFTMAX; }

/* ---- the step body ---- */

/* Address of element (o, a, i) of a 3-D ref. */
static inline char *tl_ro_at(const tl_ref *r, int64_t o, int64_t a, int64_t i, int bf) {
  return (char *)r->data + (o * r->stride[0] + a * r->stride[1] + i * r->stride[2]) * (bf ? 2 : 4);
}

/* Address of stats value k (0..2) of column i in a stats ref [1, 3, bi] (f32). */
static inline float *tl_ro_stat(const tl_ref *s, int k, int64_t i) {
  return (float *)s->data + k * s->stride[1] + i * s->stride[2];
}

/* The moments of x[0..n) for layernorm: the mean as k + *ml (k returned in *k), and M2 =
 * sum (x - mean)^2 (returned, >= 0). One sweep about a shift near the mean (moments_row: the mean
 * of the first 16 elements). M2 = sd2 - n d^2 (d = mean - k) then carries sd2's rounding error
 * times 1 + d^2 / var; where that factor would pass 2 (the shift further from the mean than one
 * standard deviation, or x not finite) a second sweep takes the sums about the mean found (the
 * corrected two-pass formula: the shift then within rounding of the mean). pf: the row to
 * prefetch meanwhile (may be NULL). */
static double tl_ro_moments(const tl_ro_run *r, const tl_rows_impl *im, const char *xr, int64_t n, const char *pf,
                            float *k, double *ml) {
  const double dn = (double)n;
  float sd, sd2;
  im->moments_row(xr, r->xbf, n, k, &sd, &sd2, pf);
  double d = sd / dn, m2 = sd2 - sd * d;
  if (!(d * d * dn <= m2)) {
    *k = (float)(*k + d);
    im->sumdev_row(xr, r->xbf, n, *k, &sd, &sd2, NULL);
    d = sd / dn, m2 = sd2 - sd * d;
  }
  *ml = d;
  return m2 < 0 ? 0.0 : m2;
}

/* norm_row's scalars (mh, r, c) for one row of a layernorm or rmsnorm; pf as tl_ro_moments'. */
static void tl_ro_norm_stats(const tl_ro_run *r, const tl_rows_impl *im, const char *xr, int64_t n, const char *pf,
                             float s[3]) {
  const double dn = (double)n;
  if (r->kind == TL_RO_RMSNORM) {
    float sd, sd2;
    im->sumdev_row(xr, r->xbf, n, 0.0f, &sd, &sd2, pf);
    s[0] = 0.0f, s[1] = (float)(1.0 / sqrt(sd2 / dn + r->eps)), s[2] = 0.0f;
    return;
  }
  float k;
  double ml, m2 = tl_ro_moments(r, im, xr, n, pf, &k, &ml);
  const double rr = 1.0 / sqrt(m2 / dn + r->eps);
  s[0] = k, s[1] = (float)rr, s[2] = (float)(-ml * rr);
}

/* One pass over whole rows (I = 1): stats and outputs of each row of the block. */
static void tl_ro_rows_once(const tl_ro_run *r, const tl_rows_impl *im, tl_ref *refs, int nt) {
  const tl_ref *x = &refs[0], *y = &refs[r->iy];
  const float *g = r->ig >= 0 ? refs[r->ig].data : NULL, *b = r->ib >= 0 ? refs[r->ib].data : NULL;
  float *e = r->ie >= 0 ? refs[r->ie].data : NULL;
  const int64_t n = x->valid[1];
  for (int64_t o = 0; o < x->valid[0]; o++) {
    const char *xr = tl_ro_at(x, o, 0, 0, r->xbf);
    char *yr = tl_ro_at(y, o, 0, 0, r->ybf);
    /* the next row (in this block) is prefetched while this one computes: the first sweep of a
     * row otherwise waits on memory with the vector unit idle, then computes with memory idle */
    const char *pf = o + 1 < x->valid[0] ? tl_ro_at(x, o + 1, 0, 0, r->xbf) : NULL;
    switch (r->kind) {
    case TL_RO_SOFTMAX: {
      float m = im->max_row(xr, r->xbf, n);
      float s = im->sumexp_row(xr, r->xbf, n, m, e, pf, tl_ro_ebf(r));
      im->scale_row(yr, r->ybf, e, n, 1.0f / s, nt);
      break;
    }
    case TL_RO_LOG_SOFTMAX: {
      float m = im->max_row(xr, r->xbf, n);
      float s = im->sumexp_row(xr, r->xbf, n, m, NULL, pf, 0);
      im->shift_row(yr, r->ybf, xr, r->xbf, n, m, logf(s), nt);
      break;
    }
    default: { /* the norms */
      float st[3];
      tl_ro_norm_stats(r, im, xr, n, pf, st);
      im->norm_row(yr, r->ybf, xr, r->xbf, n, st[0], st[1], st[2], g, r->kind == TL_RO_LAYERNORM ? b : NULL, nt);
      break;
    }
    }
  }
}

/* One pass over whole columns (softmax along dim 1 of [O, A, I], I > 1): per o, the column
 * maxima and sums as vectors over the block's columns, row by row. */
static void tl_ro_cols_once(const tl_ro_run *r, const tl_rows_impl *im, tl_ref *refs, int nt) {
  const tl_ref *x = &refs[0], *y = &refs[r->iy];
  const int64_t A = x->valid[1], n = x->valid[2];
  float *e = r->ie >= 0 ? refs[r->ie].data : NULL, *v = refs[r->iv].data;
  float *m = v, *s = v + x->shape[2], *c = v + 2 * x->shape[2];
  for (int64_t o = 0; o < x->valid[0]; o++) {
    for (int64_t i = 0; i < n; i++) m[i] = -INFINITY, s[i] = 0.0f;
    for (int64_t a = 0; a < A; a++) im->max_acc(m, tl_ro_at(x, o, a, 0, r->xbf), r->xbf, n);
    for (int64_t a = 0; a < A; a++)
      im->sumexp_acc(s, e ? e + a * n : NULL, tl_ro_at(x, o, a, 0, r->xbf), r->xbf, n, m, tl_ro_ebf(r));
    if (r->kind == TL_RO_SOFTMAX) {
      for (int64_t i = 0; i < n; i++) c[i] = 1.0f / s[i];
      for (int64_t a = 0; a < A; a++) im->scale_vv(tl_ro_at(y, o, a, 0, r->ybf), r->ybf, e + a * n, n, c, nt);
    } else {
      for (int64_t i = 0; i < n; i++) c[i] = logf(s[i]);
      for (int64_t a = 0; a < A; a++)
        im->shift_vv(tl_ro_at(y, o, a, 0, r->ybf), r->ybf, tl_ro_at(x, o, a, 0, r->xbf), r->xbf, n, m, c, nt);
    }
  }
}

/* The online softmax merge of one chunk's maximum cm into the running (m, s): returns the new
 * maximum, rescales *s, and gives the shift the chunk's exponentials use (0 while every value
 * seen is -inf or NaN, so that -inf contributes 0 and NaN stays NaN). */
static inline float tl_ro_sm_merge(float m, float cm, float *s, float *base) {
  float mn = cm > m ? cm : m;
  if (mn != m) *s *= expf(m - mn); /* m = -inf: *s is 0 and stays 0 */
  *base = mn == -INFINITY ? 0.0f : mn;
  return mn;
}

/* Stats plan, rows: merge this chunk of the row into the stats [m, s] (softmax), [mean_hi,
 * mean_lo, M2] (layernorm: chunk mean and M2 by tl_ro_moments, merged with Chan's parallel
 * formula) or [sumsq_hi, sumsq_lo] (rmsnorm). */
static void tl_ro_rows_stats(const tl_prog *p, const tl_ro_run *r, const tl_rows_impl *im, tl_ref *refs) {
  const tl_ref *x = &refs[0], *st = &refs[r->is];
  const int64_t n = x->valid[1], chunk = tl_program_id(p, 2);
  const int first = chunk == 0;
  const char *xr = tl_ro_at(x, 0, 0, 0, r->xbf);
  float *s0 = tl_ro_stat(st, 0, 0), *s1 = tl_ro_stat(st, 1, 0), *s2 = tl_ro_stat(st, 2, 0);
  if (tl_ro_is_softmax(r->kind)) {
    float m = first ? -INFINITY : *s0, s = first ? 0.0f : *s1, base;
    m = tl_ro_sm_merge(m, im->max_row(xr, r->xbf, n), &s, &base);
    s += im->sumexp_row(xr, r->xbf, n, base, NULL, NULL, tl_ro_ebf(r));
    *s0 = m, *s1 = s, *s2 = 0.0f;
    return;
  }
  const double dn = (double)n;
  if (r->kind == TL_RO_RMSNORM) {
    float sd, sd2;
    im->sumdev_row(xr, r->xbf, n, 0.0f, &sd, &sd2, NULL);
    double tot = first ? sd2 : (double)*s0 + (double)*s1 + sd2;
    *s0 = (float)tot, *s1 = isfinite(*s0) ? (float)(tot - (double)*s0) : 0.0f, *s2 = 0.0f; /* inf: lo 0, not NaN */
    return;
  }
  float k;
  double ml, m2b = tl_ro_moments(r, im, xr, n, NULL, &k, &ml), mb = k + ml;
  double mean = mb, m2 = m2b;
  if (!first) {
    double na = (double)(chunk * r->ca), tot = na + dn, ma = (double)*s0 + (double)*s1, delta = mb - ma;
    mean = ma + delta * (dn / tot);
    m2 = (double)*s2 + m2b + delta * delta * (na * dn / tot);
  }
  *s0 = (float)mean, *s1 = isfinite(*s0) ? (float)(mean - (double)*s0) : 0.0f, *s2 = (float)m2;
}

/* Stats plan, columns (softmax): the same merge per column, vectors over the block's columns. */
static void tl_ro_cols_stats(const tl_prog *p, const tl_ro_run *r, const tl_rows_impl *im, tl_ref *refs) {
  const tl_ref *x = &refs[0], *st = &refs[r->is];
  const int64_t A = x->valid[1], n = x->valid[2];
  const int first = tl_program_id(p, 2) == 0;
  float *cm = refs[r->iv].data, *base = cm + x->shape[2];
  for (int64_t i = 0; i < n; i++) cm[i] = -INFINITY;
  for (int64_t a = 0; a < A; a++) im->max_acc(cm, tl_ro_at(x, 0, a, 0, r->xbf), r->xbf, n);
  float *sm = tl_ro_stat(st, 0, 0), *ss = tl_ro_stat(st, 1, 0); /* unit stride along columns */
  for (int64_t i = 0; i < n; i++) {
    float m = first ? -INFINITY : sm[i], s = first ? 0.0f : ss[i];
    sm[i] = tl_ro_sm_merge(m, cm[i], &s, &base[i]);
    ss[i] = s, *tl_ro_stat(st, 2, i) = 0.0f;
  }
  for (int64_t a = 0; a < A; a++) im->sumexp_acc(ss, NULL, tl_ro_at(x, 0, a, 0, r->xbf), r->xbf, n, base, tl_ro_ebf(r));
}

/* Apply plan: y for this chunk from the finished stats. */
static void tl_ro_apply(const tl_ro_run *r, const tl_rows_impl *im, tl_ref *refs, int nt) {
  const tl_ref *x = &refs[0], *y = &refs[r->iy], *st = &refs[r->is];
  const float *g = r->ig >= 0 ? refs[r->ig].data : NULL, *b = r->ib >= 0 ? refs[r->ib].data : NULL;
  const char *xr = tl_ro_at(x, 0, 0, 0, r->xbf);
  char *yr = tl_ro_at(y, 0, 0, 0, r->ybf);
  if (r->cols) {
    const int64_t A = x->valid[1], n = x->valid[2];
    const float *m = tl_ro_stat(st, 0, 0), *s = tl_ro_stat(st, 1, 0);
    float *c = refs[r->iv].data;
    int sm = r->kind == TL_RO_SOFTMAX;
    for (int64_t i = 0; i < n; i++) c[i] = sm ? 1.0f / s[i] : logf(s[i]);
    for (int64_t a = 0; a < A; a++) {
      const char *xa = tl_ro_at(x, 0, a, 0, r->xbf);
      char *ya = tl_ro_at(y, 0, a, 0, r->ybf);
      if (sm) im->expscale_vv(ya, r->ybf, xa, r->xbf, n, m, c, nt);
      else im->shift_vv(ya, r->ybf, xa, r->xbf, n, m, c, nt);
    }
    return;
  }
  const int64_t n = x->valid[1];
  const float s0 = *tl_ro_stat(st, 0, 0), s1 = *tl_ro_stat(st, 1, 0), s2 = *tl_ro_stat(st, 2, 0);
  const double dA = (double)r->A;
  switch (r->kind) {
  case TL_RO_SOFTMAX: im->expscale_row(yr, r->ybf, xr, r->xbf, n, s0, 1.0f / s1, nt); break;
  case TL_RO_LOG_SOFTMAX: im->shift_row(yr, r->ybf, xr, r->xbf, n, s0, logf(s1), nt); break;
  case TL_RO_LAYERNORM: {
    double var = s2 / dA, rr = 1.0 / sqrt(var + r->eps);
    im->norm_row(yr, r->ybf, xr, r->xbf, n, s0, (float)rr, (float)(-(double)s1 * rr), g, b, nt);
    break;
  }
  default: {
    double rr = 1.0 / sqrt(((double)s0 + (double)s1) / dA + r->eps);
    im->norm_row(yr, r->ybf, xr, r->xbf, n, 0.0f, (float)rr, 0.0f, g, NULL, nt);
    break;
  }
  }
}

void tl_ro_body(const tl_prog *p, tl_ref *refs, void *user) {
  const tl_ro_run *r = user;
  const tl_rows_impl *im = tl_rows_impl_for(tl_prog_isa(p));
  int nt = 0;
  if (r->nt && r->iy >= 0) { /* streaming stores only into y itself (not into a staged copy) */
    const char *d = refs[r->iy].data;
    nt = d >= r->y_lo && d < r->y_hi;
  }
  if (r->phase == 0) {
    if (r->cols) tl_ro_cols_once(r, im, refs, nt);
    else tl_ro_rows_once(r, im, refs, nt);
  } else if (r->phase == 1) {
    if (r->cols) tl_ro_cols_stats(p, r, im, refs);
    else tl_ro_rows_stats(p, r, im, refs);
  } else {
    tl_ro_apply(r, im, refs, nt);
  }
}
