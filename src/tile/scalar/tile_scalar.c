/* tile_scalar.c — the scalar reference implementation of the tile operations: portable C, every
 * dtype and layout the checks in tile.c accept, and the numerics table of DESIGN.md §3 spelled
 * out. Faster ISA paths are tested against it, so it favours being obviously right over speed.
 *
 * Element access: row-major refs through stride[] (in elements); tiled refs through
 * tl_ref_tile_nd (the tile's address) plus tl_layout_tile_offset (the element inside the tile).
 * Values move through tl_load_f64 / tl_store_f64: loads are exact, stores round to nearest even,
 * integers saturate and NaN stores as 0 in integer dtypes.
 *
 * Numerics (what every ISA path must match up to rounding, and the tests check):
 * - dot, floating inputs: each acc(i, j) is one f32 sum, started from acc(i, j) (ACCUMULATE) or
 *   0 (acc never read), adding the f32 products a(i, k) * b(k, j) in increasing k. bf16 inputs
 *   with a zero exponent (denormals) are read as zero of the same sign, as AMX and AVX512-BF16
 *   do; f16 denormals are exact.
 * - dot, integer inputs (i8/u8 in any mix): the exact sum in int64, started from acc(i, j) or 0,
 *   stored to i32 saturating. Hardware int32 accumulation wraps instead; the two agree whenever
 *   the true value fits in int32 (always for K <= 65793 without a large starting acc).
 * - unary, binary: each value converted to f32, the op in f32 (libm's expf, logf, tanhf, erff;
 *   GELU 0.5*x*(1 + erf(x/sqrt2)), computed as 0.5*x*erfc(-x/sqrt2) to avoid the cancellation
 *   for negative x; SiLU x/(1 + exp(-x)); rsqrt 1/sqrtf; recip 1/x), stored to dst's dtype.
 *   IDENTITY is exact, as tl_tile_cast. NaN propagates through relu, max and min (the first NaN
 *   operand is returned). At -inf SiLU and GELU give NaN, as their formulas (and PyTorch's
 *   x*sigmoid(x)) do; large finite negative inputs give -0.
 * - reduce: sum in f32 for a float dst (increasing index), exact int64 for an integer src and dst
 *   (saturated at the store), f32 for a float src into an integer dst; max/min exact, NaN
 *   propagating (the first NaN). Over an empty axis: sum 0, max -inf, min +inf (integers
 *   saturate).
 * - fill and cast: exact value conversion (tl_store_f64).
 *
 * Every function returns 1: the reference handles every checked call. */
#include <math.h>
#include <string.h>

#include "../tile_rows.h"

/* ---- addressing ---- */

/* Number of elements of r's block (shape product; 1 for 0 dims). */
static int64_t tl_sc_numel(const tl_ref *r) {
  int64_t n = 1;
  for (int d = 0; d < r->ndim; d++) n *= r->shape[d];
  return n;
}


/* Address of element idx[0..ndim-1] of r: row-major through strides, tiled through the tile. */
static char *tl_sc_at(const tl_ref *r, const int64_t *idx) {
  size_t es = tl_dtype_size(r->dtype);
  if (!r->layout.tiled) {
    int64_t off = 0;
    for (int d = 0; d < r->ndim; d++) off += idx[d] * r->stride[d];
    return (char *)r->data + off * (int64_t)es;
  }
  int nd = r->ndim;
  int64_t tr = r->layout.tile_r, tc = r->layout.tile_c, i = idx[nd - 2], j = idx[nd - 1];
  char *tile = tl_ref_tile_nd(r, idx, i / tr, j / tc);
  return tile + tl_layout_tile_offset(r->layout, i % tr, j % tc) * (int64_t)es;
}

/* Address of element (i, j) of a 2-D ref. */
static const char *tl_sc_at2(const tl_ref *r, int64_t i, int64_t j) {
  int64_t idx[2] = {i, j};
  return tl_sc_at(r, idx);
}


/* ---- dot ---- */

/* A floating dot operand as f32; bf16 denormals read as signed zero. */
static inline float tl_sc_dot_f32(const char *p, tl_dtype dt) {
  uint16_t h;
  float f;
  switch (dt) {
  case TL_F16: memcpy(&h, p, 2); return tl_f16_to_f32(h);
  case TL_BF16: memcpy(&h, p, 2); return tl_tile_bf16_daz(h);
  default: memcpy(&f, p, 4); return f;
  }
}

/* An 8-bit integer dot operand. */
static inline int32_t tl_sc_dot_i8(const char *p, tl_dtype dt) {
  return dt == TL_U8 ? (int32_t) * (const uint8_t *)p : (int32_t) * (const int8_t *)p;
}

/* acc (+)= a @ b (b given as [N, K] with TL_DOT_TRANS_B); see the numerics above. */
static int tl_sc_dot(tl_ref *acc, const tl_ref *a, const tl_ref *b, unsigned flags) {
  int tb = (flags & TL_DOT_TRANS_B) != 0, accum = (flags & TL_DOT_ACCUMULATE) != 0;
  int64_t m = acc->shape[0], n = acc->shape[1], kk = a->shape[1];
  int isfloat = acc->dtype == TL_F32;
  for (int64_t i = 0; i < m; i++) {
    for (int64_t j = 0; j < n; j++) {
      char *c = (char *)acc->data + (i * acc->stride[0] + j * acc->stride[1]) * 4;
      if (isfloat) {
        float s = 0.0f;
        if (accum) memcpy(&s, c, 4);
        for (int64_t k = 0; k < kk; k++) {
          float x = tl_sc_dot_f32(tl_sc_at2(a, i, k), a->dtype);
          float y = tl_sc_dot_f32(tb ? tl_sc_at2(b, j, k) : tl_sc_at2(b, k, j), b->dtype);
          float prod = x * y;
          s = s + prod;
        }
        memcpy(c, &s, 4);
      } else {
        int64_t s = 0;
        if (accum) {
          int32_t v;
          memcpy(&v, c, 4);
          s = v;
        }
        for (int64_t k = 0; k < kk; k++) {
          int32_t x = tl_sc_dot_i8(tl_sc_at2(a, i, k), a->dtype);
          int32_t y = tl_sc_dot_i8(tb ? tl_sc_at2(b, j, k) : tl_sc_at2(b, k, j), b->dtype);
          s += (int64_t)x * y;
        }
        int32_t v = s > INT32_MAX ? INT32_MAX : s < INT32_MIN ? INT32_MIN : (int32_t)s;
        memcpy(c, &v, 4);
      }
    }
  }
  return 1;
}

/* ---- fill and cast ---- */

/* Every element of r's block (tiled: all its tiles, padding included) set to v in r's dtype. */
static int tl_sc_fill(tl_ref *r, double v) {
  union {
    float f;
    int32_t i;
    uint16_t h;
    unsigned char b[4];
  } pat;
  tl_store_f64(&pat, r->dtype, 0, v);
  size_t es = tl_dtype_size(r->dtype);
  int nd = r->ndim;
  if (r->layout.tiled) {
    int64_t tr = r->layout.tile_r, tc = r->layout.tile_c;
    int64_t total = TL_CDIV(r->shape[nd - 2], tr) * TL_CDIV(r->shape[nd - 1], tc) * tr * tc;
    for (int d = 0; d < nd - 2; d++) total *= r->shape[d];
    for (int64_t e = 0; e < total; e++) memcpy((char *)r->data + e * (int64_t)es, pat.b, es);
    return 1;
  }
  if (tl_sc_numel(r) == 0) return 1;
  int64_t n = nd ? r->shape[nd - 1] : 1, st = nd ? r->stride[nd - 1] : 0;
  int64_t idx[TL_MAX_DIMS] = {0};
  do {
    char *row = (char *)r->data + tl_row_off(nd, r->stride, idx) * (int64_t)es;
    for (int64_t j = 0; j < n; j++) memcpy(row + j * st * (int64_t)es, pat.b, es);
  } while (tl_idx_next(nd - 1, r->shape, idx));
  return 1;
}

/* dst = src converted, element by element over the shape (either may be tiled). */
static int tl_sc_cast(tl_ref *dst, const tl_ref *src) {
  if (tl_sc_numel(dst) == 0) return 1;
  int64_t idx[TL_MAX_DIMS] = {0};
  do {
    double v = tl_load_f64(tl_sc_at(src, idx), src->dtype, 0);
    tl_store_f64(tl_sc_at(dst, idx), dst->dtype, 0, v);
  } while (tl_idx_next(dst->ndim, dst->shape, idx));
  return 1;
}

/* ---- elementwise ---- */

/* op(x) in f32 (IDENTITY is handled exactly by the caller). */
static int tl_sc_is_int(tl_dtype dt) { return dt == TL_I8 || dt == TL_U8 || dt == TL_I32; }

static float tl_sc_unary1(tl_unary op, float x) {
  switch (op) {
  case TL_UNARY_EXP: return expf(x);
  case TL_UNARY_LOG: return logf(x);
  case TL_UNARY_TANH: return tanhf(x);
  case TL_UNARY_ERF: return erff(x);
  case TL_UNARY_GELU: return 0.5f * x * erfcf(x * -0.70710678118654752f); /* 1 + erf(z) = erfc(-z) */
  case TL_UNARY_SILU: return x / (1.0f + expf(-x));
  case TL_UNARY_RELU: return x > 0.0f || isnan(x) ? x : 0.0f;
  case TL_UNARY_NEG: return -x;
  case TL_UNARY_SQRT: return sqrtf(x);
  case TL_UNARY_RSQRT: return 1.0f / sqrtf(x);
  case TL_UNARY_RECIP: return 1.0f / x;
  default: return x;
  }
}

/* dst = op(src), row by row (dst may be src). */
static int tl_sc_unary(tl_ref *dst, const tl_ref *src, tl_unary op) {
  if (tl_sc_numel(dst) == 0) return 1;
  int nd = dst->ndim;
  int64_t n = nd ? dst->shape[nd - 1] : 1;
  int64_t sd = nd ? dst->stride[nd - 1] : 0, ss = nd ? src->stride[nd - 1] : 0;
  size_t ed = tl_dtype_size(dst->dtype), esrc = tl_dtype_size(src->dtype);
  const int ints = tl_sc_is_int(dst->dtype) && tl_sc_is_int(src->dtype);
  int64_t idx[TL_MAX_DIMS] = {0};
  do {
    char *d = (char *)dst->data + tl_row_off(nd, dst->stride, idx) * (int64_t)ed;
    const char *s = (const char *)src->data + tl_row_off(nd, src->stride, idx) * (int64_t)esrc;
    for (int64_t j = 0; j < n; j++) {
      double v = tl_load_f64(s, src->dtype, j * ss);
      if (ints && op == TL_UNARY_NEG) v = -v; /* exact for integers */
      else if (ints && op == TL_UNARY_RELU) v = v > 0 ? v : 0;
      else if (op != TL_UNARY_IDENTITY) v = tl_sc_unary1(op, (float)v);
      tl_store_f64(d, dst->dtype, j * sd, v);
    }
  } while (tl_idx_next(nd - 1, dst->shape, idx));
  return 1;
}

/* x op y; max and min return the first NaN operand. Callers pass f32 values and round the result
 * to f32 (computing +, -, *, / of f32 values in double and rounding once gives the correctly
 * rounded f32 result), or, when every operand is an integer, exact values (so i32 stays exact
 * beyond 2^24). */
static double tl_sc_binary1(tl_binary op, double x, double y) {
  switch (op) {
  case TL_BINARY_ADD: return x + y;
  case TL_BINARY_SUB: return x - y;
  case TL_BINARY_MUL: return x * y;
  case TL_BINARY_DIV: return x / y;
  case TL_BINARY_MAX: return isnan(x) ? x : isnan(y) ? y : x >= y ? x : y;
  case TL_BINARY_MIN: return isnan(x) ? x : isnan(y) ? y : x <= y ? x : y;
  default: return x;
  }
}

/* dst = a op b with b broadcast (tile.c's rule): b's strides are mapped onto dst's dims, 0 where
 * b has size 1 or no dim, and then every operand is walked alike. */
static int tl_sc_binary(tl_ref *dst, const tl_ref *a, const tl_ref *b, tl_binary op) {
  if (tl_sc_numel(dst) == 0) return 1;
  int nd = dst->ndim;
  int64_t bst[TL_MAX_DIMS] = {0};
  if (b->ndim == nd) {
    for (int d = 0; d < nd; d++) bst[d] = b->shape[d] == dst->shape[d] ? b->stride[d] : 0;
  } else { /* b is [C] against dst [..., C] */
    bst[nd - 1] = b->stride[0];
  }
  int64_t n = nd ? dst->shape[nd - 1] : 1;
  int64_t sd = nd ? dst->stride[nd - 1] : 0, sa = nd ? a->stride[nd - 1] : 0, sb = nd ? bst[nd - 1] : 0;
  size_t ed = tl_dtype_size(dst->dtype), ea = tl_dtype_size(a->dtype), eb = tl_dtype_size(b->dtype);
  const int ints = tl_sc_is_int(dst->dtype) && tl_sc_is_int(a->dtype) && tl_sc_is_int(b->dtype);
  int64_t idx[TL_MAX_DIMS] = {0};
  do {
    char *d = (char *)dst->data + tl_row_off(nd, dst->stride, idx) * (int64_t)ed;
    const char *pa = (const char *)a->data + tl_row_off(nd, a->stride, idx) * (int64_t)ea;
    const char *pb = (const char *)b->data + tl_row_off(nd, bst, idx) * (int64_t)eb;
    for (int64_t j = 0; j < n; j++) {
      double x = tl_load_f64(pa, a->dtype, j * sa), y = tl_load_f64(pb, b->dtype, j * sb);
      if (ints) {
        tl_store_f64(d, dst->dtype, j * sd, tl_sc_binary1(op, x, y));
      } else {
        tl_store_f64(d, dst->dtype, j * sd, (float)tl_sc_binary1(op, (float)x, (float)y));
      }
    }
  } while (tl_idx_next(nd - 1, dst->shape, idx));
  return 1;
}

/* ---- reduce ---- */

/* dst = reduce src over axis (0..ndim-1): for each index of src with idx[axis] = 0, the values
 * along axis are combined and stored at the matching dst index (axis kept as 1 or removed). */
static int tl_sc_reduce(tl_ref *dst, const tl_ref *src, int axis, tl_reduce op) {
  int nd = src->ndim;
  int64_t outer[TL_MAX_DIMS];
  for (int d = 0; d < nd; d++) outer[d] = d == axis ? 1 : src->shape[d];
  for (int d = 0; d < nd; d++)
    if (outer[d] == 0) return 1; /* no output elements */
  int64_t len = src->shape[axis], st = src->stride[axis];
  int exact = tl_sc_is_int(src->dtype) && tl_sc_is_int(dst->dtype);
  int64_t idx[TL_MAX_DIMS] = {0}, didx[TL_MAX_DIMS] = {0};
  do {
    const char *s = tl_sc_at(src, idx);
    double r;
    if (op == TL_REDUCE_SUM && exact) {
      int64_t acc = 0;
      for (int64_t k = 0; k < len; k++) acc += (int64_t)tl_load_f64(s, src->dtype, k * st);
      r = (double)acc;
    } else if (op == TL_REDUCE_SUM) {
      float acc = 0.0f;
      for (int64_t k = 0; k < len; k++) acc += (float)tl_load_f64(s, src->dtype, k * st);
      r = acc;
    } else {
      int mx = op == TL_REDUCE_MAX;
      r = mx ? -INFINITY : INFINITY;
      for (int64_t k = 0; k < len; k++) {
        double x = tl_load_f64(s, src->dtype, k * st);
        if (isnan(x)) {
          r = x;
          break;
        }
        if (mx ? x > r : x < r) r = x;
      }
    }
    int dn = 0;
    for (int d = 0; d < nd; d++)
      if (dst->ndim == nd || d != axis) didx[dn++] = idx[d];
    tl_store_f64(tl_sc_at(dst, didx), dst->dtype, 0, r);
  } while (tl_idx_next(nd, outer, idx));
  return 1;
}

const tl_tile_impl tl_tile_scalar_impl = {
    .isa = TL_ISA_SCALAR,
    .name = "scalar",
    .dot = tl_sc_dot,
    .fill = tl_sc_fill,
    .cast = tl_sc_cast,
    .unary = tl_sc_unary,
    .binary = tl_sc_binary,
    .reduce = tl_sc_reduce,
};
