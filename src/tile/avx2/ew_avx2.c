/* ew_avx2.c — AVX2 paths of tl_tile_fill, tl_tile_cast, tl_tile_unary, tl_tile_binary and
 * tl_tile_reduce (contract in tile_impl.h, numerics in tile_scalar.c and docs/kernels.md).
 *
 * The same cases as ew_avx512.c (everything else returns 0 and falls to the scalar reference):
 * - fill: any dtype, row-major with a unit last-dim stride, or tiled (the whole tile storage);
 * - cast, unary, binary: f32 and bf16 operands (any mix), row-major, unit last-dim stride (rows
 *   may have any stride), math in f32 as the scalar reference does; unary also takes other
 *   last-dim strides (through an 8-element buffer), so its results never depend on the layout;
 * - reduce: f32 src with a unit last-dim stride, over the last axis (any dst dtype) or over
 *   axis 0 of a 2-D src (f32 dst with a unit stride).
 * Invariants: the elementwise loops work on 8-lane vectors, one ymm each (vec_hooks.h's tl_rkv
 * with the AVX2 settings, and tilec_vec.h's helpers at that width: tl_rkv_exp, ...; 16-lane
 * vectors have no register on AVX2 and GCC 12 kept them on the stack: exp 5.5x and add 7.7x slower on a
 * 64x1024 block, docs/kernels.md); the
 * partial chunk at the end of a row goes through a zero-filled 8-lane buffer (only the row's own
 * elements are copied in and out); the reductions use 8-lane intrinsics with
 * _mm256_maskload_ps / _mm256_maskstore_ps tails. Nothing outside the block is read or written;
 * no allocation, no locks, no state. Exactness is as in ew_avx512.c (the helpers compute each
 * lane the same way at any width). */
#include <immintrin.h>
#include <string.h>

#include "../tile_rows.h"
#include "hooks_avx2.h"
#include "../vec_hooks.h"

/* ---- rows ---- */

/* m (1..8) elements from element j of a row of dtype dt (f32 or bf16) as f32; lanes >= m 0.
 * Signaling NaNs are made quiet, as the reference's trip through double does. */
static inline __attribute__((always_inline)) tl_rkv tl_x2_load(const void *row, tl_dtype dt, int64_t j, int64_t m) {
  tl_rkv v = tl_rkv_splat(0.0f);
  if (dt == TL_F32) {
    if (m == TL_RK_W)
      memcpy(&v, (const float *)row + j, sizeof v);
    else
      memcpy(&v, (const float *)row + j, (size_t)m * 4);
  } else {
    tl_rkh h = {0};
    if (m == TL_RK_W)
      memcpy(&h, (const uint16_t *)row + j, sizeof h);
    else
      memcpy(&h, (const uint16_t *)row + j, (size_t)m * 2);
    v = TL_RK_FROM_BF16(h);
  }
  return (tl_rkv)((tl_rki)v | ((v != v) & 0x400000));
}

/* Stores lanes 0..m-1 (1..8) at element j of a row of dtype dt (bf16: rounded to nearest
 * even). */
static inline __attribute__((always_inline)) void tl_x2_store(void *row, tl_dtype dt, int64_t j, int64_t m, tl_rkv v) {
  if (dt == TL_F32) {
    if (m == TL_RK_W)
      memcpy((float *)row + j, &v, sizeof v);
    else
      memcpy((float *)row + j, &v, (size_t)m * 4);
  } else {
    tl_rkh h = TL_RK_TO_BF16(v);
    if (m == TL_RK_W)
      memcpy((uint16_t *)row + j, &h, sizeof h);
    else
      memcpy((uint16_t *)row + j, &h, (size_t)m * 2);
  }
}

/* ---- fill ---- */

/* Writes `bytes` bytes at p with the 32-byte pattern pat (a whole number of elements). */
static void tl_x2_fill_bytes(char *p, int64_t bytes, __m256i pat) {
  int64_t i = 0;
  for (; i + 32 <= bytes; i += 32) _mm256_storeu_si256((__m256i *)(p + i), pat);
  if (i < bytes) memcpy(p + i, &pat, (size_t)(bytes - i));
}

/* r's block set to v in r's dtype (the value tl_store_f64 stores); tiled refs: all the tiles,
 * padding included, as the reference does. */
int tl_avx2_fill(tl_ref *r, double v) {
  if (!r->layout.tiled && !tl_ref_unit_rows(r)) return 0;
  uint32_t bits = 0;
  tl_store_f64(&bits, r->dtype, 0, v);
  size_t es = tl_dtype_size(r->dtype);
  __m256i pat = es == 4   ? _mm256_set1_epi32((int)bits)
                : es == 2 ? _mm256_set1_epi16((short)(uint16_t)bits)
                          : _mm256_set1_epi8((char)(uint8_t)bits);
  int nd = r->ndim;
  if (r->layout.tiled) {
    int64_t tr = r->layout.tile_r, tc = r->layout.tile_c;
    int64_t total = TL_CDIV(r->shape[nd - 2], tr) * TL_CDIV(r->shape[nd - 1], tc) * tr * tc;
    for (int d = 0; d < nd - 2; d++) total *= r->shape[d];
    tl_x2_fill_bytes(r->data, total * (int64_t)es, pat);
    return 1;
  }
  if (tl_ref_empty(r)) return 1;
  int64_t n = nd ? r->shape[nd - 1] : 1, idx[TL_MAX_DIMS] = {0};
  do {
    char *row = (char *)r->data + tl_row_off(nd, r->stride, idx) * (int64_t)es;
    tl_x2_fill_bytes(row, n * (int64_t)es, pat);
  } while (tl_idx_next(nd - 1, r->shape, idx));
  return 1;
}

/* ---- unary ---- */

/* Correctly rounded square root per lane (vsqrtps). */
static inline tl_rkv tl_x2_sqrt(tl_rkv x) { return (tl_rkv)_mm256_sqrt_ps((__m256)x); }

/* op(x) per lane, as tl_sc_unary1 in tile_scalar.c. */
static inline __attribute__((always_inline)) tl_rkv tl_x2_unary1(tl_unary op, tl_rkv x) {
  switch (op) {
  case TL_UNARY_EXP: return tl_rkv_exp(x);
  case TL_UNARY_LOG: return tl_rkv_log(x);
  case TL_UNARY_TANH: return tl_rkv_tanh(x);
  case TL_UNARY_ERF: return tl_rkv_erf(x);
  case TL_UNARY_GELU: return tl_rkv_gelu(x);
  case TL_UNARY_SILU: return tl_rkv_silu(x);
  case TL_UNARY_RELU: return tl_rkv_sel(x <= 0.0f, tl_rkv_splat(0.0f), x); /* NaN kept */
  case TL_UNARY_NEG: return -x;
  case TL_UNARY_SQRT: return tl_x2_sqrt(x);
  case TL_UNARY_RSQRT: return 1.0f / tl_x2_sqrt(x);
  case TL_UNARY_RECIP: return 1.0f / x;
  default: return x;
  }
}

/* dst = op(src) for one row of n elements whose last-dim strides (elements) are not both 1:
 * 8 elements gathered into a buffer, the same vector math, scattered back, so a result does not
 * depend on the layout. */
static void tl_x2_unary_row_strided(void *d, tl_dtype dd, int64_t sd, const void *s, tl_dtype sdt, int64_t ss,
                                    int64_t n, tl_unary op) {
  float in[TL_RK_W], out[TL_RK_W];
  for (int64_t j = 0; j < n; j += TL_RK_W) {
    int64_t m = n - j < TL_RK_W ? n - j : TL_RK_W;
    for (int64_t i = 0; i < m; i++) in[i] = (float)tl_load_f64(s, sdt, (j + i) * ss);
    tl_x2_store(out, TL_F32, 0, TL_RK_W, tl_x2_unary1(op, tl_x2_load(in, TL_F32, 0, m)));
    for (int64_t i = 0; i < m; i++) tl_store_f64(d, dd, (j + i) * sd, out[i]);
  }
}

/* dst = op(src) for one row of n elements (dst may be src). */
static void tl_x2_unary_row(void *d, tl_dtype dd, const void *s, tl_dtype sd, int64_t n, tl_unary op) {
  int64_t j = 0;
  for (; j + TL_RK_W <= n; j += TL_RK_W)
    tl_x2_store(d, dd, j, TL_RK_W, tl_x2_unary1(op, tl_x2_load(s, sd, j, TL_RK_W)));
  if (j < n) tl_x2_store(d, dd, j, n - j, tl_x2_unary1(op, tl_x2_load(s, sd, j, n - j)));
}

/* dst = op(src): f32/bf16 row-major operands (contiguous rows fast; other last-dim strides
 * through a buffer); else 0. */
int tl_avx2_unary(tl_ref *dst, const tl_ref *src, tl_unary op) {
  if (!tl_ew_dtype(dst->dtype) || !tl_ew_dtype(src->dtype) || dst->layout.tiled || src->layout.tiled)
    return 0;
  int unit = tl_ref_unit_rows(dst) && tl_ref_unit_rows(src);
  if (tl_ref_empty(dst)) return 1;
  int nd = dst->ndim;
  int64_t n = nd ? dst->shape[nd - 1] : 1, idx[TL_MAX_DIMS] = {0};
  size_t ed = tl_dtype_size(dst->dtype), es = tl_dtype_size(src->dtype);
  do {
    char *d = (char *)dst->data + tl_row_off(nd, dst->stride, idx) * (int64_t)ed;
    const char *s = (const char *)src->data + tl_row_off(nd, src->stride, idx) * (int64_t)es;
    if (unit)
      tl_x2_unary_row(d, dst->dtype, s, src->dtype, n, op);
    else
      tl_x2_unary_row_strided(d, dst->dtype, dst->stride[nd - 1], s, src->dtype, src->stride[nd - 1], n, op);
  } while (tl_idx_next(nd - 1, dst->shape, idx));
  return 1;
}

/* dst = src converted: f32/bf16 with contiguous rows (the identity of tl_tile_unary, which is
 * the same exact conversion); else 0. */
int tl_avx2_cast(tl_ref *dst, const tl_ref *src) {
  if (!tl_ref_unit_rows(dst) || !tl_ref_unit_rows(src)) return 0;
  return tl_avx2_unary(dst, src, TL_UNARY_IDENTITY);
}

/* ---- binary ---- */

/* x op y per lane, as tl_sc_binary1: max and min return x when x is NaN or wins (ties
 * included), else y (so a NaN y is returned when x is not NaN). */
static inline __attribute__((always_inline)) tl_rkv tl_x2_binary1(tl_binary op, tl_rkv x, tl_rkv y) {
  switch (op) {
  case TL_BINARY_ADD: return x + y;
  case TL_BINARY_SUB: return x - y;
  case TL_BINARY_MUL: return x * y;
  case TL_BINARY_DIV: return x / y;
  case TL_BINARY_MAX: return tl_rkv_sel((x != x) | (x >= y), x, y);
  case TL_BINARY_MIN: return tl_rkv_sel((x != x) | (x <= y), x, y);
  default: return x;
  }
}

/* One row: d = a op b, b either a row (bvec) or one value broadcast (bvec 0). */
static void tl_x2_binary_row(void *d, tl_dtype dd, const void *a, tl_dtype ad, const void *b, tl_dtype bd,
                             int bvec, int64_t n, tl_binary op) {
  tl_rkv bs = tl_rkv_splat(bvec ? 0.0f : (float)tl_load_f64(b, bd, 0));
  int64_t j = 0;
  for (; j + TL_RK_W <= n; j += TL_RK_W) {
    tl_rkv y = bvec ? tl_x2_load(b, bd, j, TL_RK_W) : bs;
    tl_x2_store(d, dd, j, TL_RK_W, tl_x2_binary1(op, tl_x2_load(a, ad, j, TL_RK_W), y));
  }
  if (j < n) {
    tl_rkv y = bvec ? tl_x2_load(b, bd, j, n - j) : bs;
    tl_x2_store(d, dd, j, n - j, tl_x2_binary1(op, tl_x2_load(a, ad, j, n - j), y));
  }
}

/* dst = a op b with tile.c's broadcasts: b's strides are mapped onto dst's dims (0 where b has
 * size 1 or no dim); along the last dim b is then contiguous or one value. f32/bf16 operands
 * with contiguous rows; else 0. */
int tl_avx2_binary(tl_ref *dst, const tl_ref *a, const tl_ref *b, tl_binary op) {
  if (!tl_ew_dtype(dst->dtype) || !tl_ew_dtype(a->dtype) || !tl_ew_dtype(b->dtype) ||
      !tl_ref_unit_rows(dst) || !tl_ref_unit_rows(a) || b->layout.tiled)
    return 0;
  int nd = dst->ndim;
  int64_t bst[TL_MAX_DIMS] = {0};
  if (b->ndim == nd) {
    for (int d = 0; d < nd; d++) bst[d] = b->shape[d] == dst->shape[d] ? b->stride[d] : 0;
  } else {
    bst[nd - 1] = b->stride[0];
  }
  int64_t n = nd ? dst->shape[nd - 1] : 1;
  int bvec = n > 1 && bst[nd - 1] != 0;
  if (bvec && bst[nd - 1] != 1) return 0;
  if (tl_ref_empty(dst)) return 1;
  size_t ed = tl_dtype_size(dst->dtype), ea = tl_dtype_size(a->dtype), eb = tl_dtype_size(b->dtype);
  int64_t idx[TL_MAX_DIMS] = {0};
  do {
    char *d = (char *)dst->data + tl_row_off(nd, dst->stride, idx) * (int64_t)ed;
    const char *pa = (const char *)a->data + tl_row_off(nd, a->stride, idx) * (int64_t)ea;
    const char *pb = (const char *)b->data + tl_row_off(nd, bst, idx) * (int64_t)eb;
    tl_x2_binary_row(d, dst->dtype, pa, a->dtype, pb, b->dtype, bvec, n, op);
  } while (tl_idx_next(nd - 1, dst->shape, idx));
  return 1;
}

/* ---- reduce ---- */

/* Lane mask of the first m (0..8) lanes for _mm256_maskload_ps / _mm256_maskstore_ps. */
static inline __m256i tl_x2_mask(int64_t m) {
  static const int32_t tab[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256((const __m256i *)(tab + 8 - m));
}

/* Sum of the 8 lanes: (l0 + l4) .. (l3 + l7), then pairs of those, then the last two. */
static inline float tl_x2_hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

/* Sum of a contiguous f32 row: four accumulators of 8 lanes (element j goes to lane j % 8 of
 * accumulator (j / 8) % 4, added in increasing j, the masked tail into accumulator 0), then
 * (acc0 + acc1) + (acc2 + acc3), then the lanes as tl_x2_hsum. */
static float tl_x2_sum_row(const float *s, int64_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) {
    a0 = _mm256_add_ps(a0, _mm256_loadu_ps(s + j));
    a1 = _mm256_add_ps(a1, _mm256_loadu_ps(s + j + 8));
    a2 = _mm256_add_ps(a2, _mm256_loadu_ps(s + j + 16));
    a3 = _mm256_add_ps(a3, _mm256_loadu_ps(s + j + 24));
  }
  for (; j + 8 <= n; j += 8) a0 = _mm256_add_ps(a0, _mm256_loadu_ps(s + j));
  if (j < n) a0 = _mm256_add_ps(a0, _mm256_maskload_ps(s + j, tl_x2_mask(n - j)));
  return tl_x2_hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
}

/* Max (mx) or min of a contiguous f32 row, as the reference: the first NaN if there is one,
 * else the extreme value; a zero extreme is the first zero of the row (its sign decides). */
static float tl_x2_maxmin_row(const float *s, int64_t n, int mx) {
  const __m256 ident = _mm256_set1_ps(mx ? -__builtin_inff() : __builtin_inff());
  __m256 acc = ident, nan = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j < n; j += 8) {
    __m256 x;
    if (n - j >= 8) {
      x = _mm256_loadu_ps(s + j);
    } else {
      __m256i k = tl_x2_mask(n - j);
      x = _mm256_blendv_ps(ident, _mm256_maskload_ps(s + j, k), _mm256_castsi256_ps(k));
    }
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    acc = mx ? _mm256_max_ps(acc, x) : _mm256_min_ps(acc, x);
  }
  if (_mm256_movemask_ps(nan)) {
    for (j = 0; j < n; j++)
      if (s[j] != s[j]) return s[j];
  }
  __m128 h = _mm256_castps256_ps128(acc), l = _mm256_extractf128_ps(acc, 1);
  h = mx ? _mm_max_ps(h, l) : _mm_min_ps(h, l);
  l = _mm_movehl_ps(h, h);
  h = mx ? _mm_max_ps(h, l) : _mm_min_ps(h, l);
  l = _mm_movehdup_ps(h);
  h = mx ? _mm_max_ss(h, l) : _mm_min_ss(h, l);
  float r = _mm_cvtss_f32(h);
  if (r == 0.0f) {
    for (j = 0; j < n; j++)
      if (s[j] == 0.0f) return s[j];
  }
  return r;
}

/* Over axis 0 of a contiguous [R, C] f32 src into a contiguous f32 row dst: 8 columns at a
 * time, rows in increasing order, so sums add in the reference's order; max/min keep a lane's
 * value unless the new one is greater/smaller or NaN, and freeze a lane at its first NaN. */
static void tl_x2_reduce_cols(float *dst, const float *src, int64_t rows, int64_t cols, int64_t rs,
                              tl_reduce op) {
  for (int64_t c = 0; c < cols; c += 8) {
    __m256i k = tl_x2_mask(cols - c >= 8 ? 8 : cols - c);
    __m256 acc;
    if (op == TL_REDUCE_SUM) {
      acc = _mm256_setzero_ps();
      for (int64_t i = 0; i < rows; i++) acc = _mm256_add_ps(acc, _mm256_maskload_ps(src + i * rs + c, k));
    } else {
      int mx = op == TL_REDUCE_MAX;
      acc = _mm256_set1_ps(mx ? -__builtin_inff() : __builtin_inff());
      __m256 live = _mm256_castsi256_ps(k);
      for (int64_t i = 0; i < rows && _mm256_movemask_ps(live); i++) {
        __m256 x = _mm256_maskload_ps(src + i * rs + c, k);
        __m256 isnan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
        __m256 better = mx ? _mm256_cmp_ps(x, acc, _CMP_GT_OQ) : _mm256_cmp_ps(x, acc, _CMP_LT_OQ);
        acc = _mm256_blendv_ps(acc, x, _mm256_and_ps(live, _mm256_or_ps(better, isnan)));
        live = _mm256_andnot_ps(isnan, live);
      }
    }
    _mm256_maskstore_ps(dst + c, k, acc);
  }
}

/* dst = reduce src over axis: the shared f32 driver (tile_rows.h) around this file's row kernels. */
int tl_avx2_reduce(tl_ref *dst, const tl_ref *src, int axis, tl_reduce op) {
  return tl_reduce_f32_rows(dst, src, axis, op, tl_x2_sum_row, tl_x2_maxmin_row, tl_x2_reduce_cols);
}
