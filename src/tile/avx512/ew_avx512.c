/* ew_avx512.c — AVX-512 paths of tl_tile_fill, tl_tile_cast, tl_tile_unary, tl_tile_binary and
 * tl_tile_reduce (contract in tile_impl.h, numerics in tile_scalar.c and docs/kernels.md).
 *
 * What is handled here (everything else returns 0 and falls to the scalar reference):
 * - fill: any dtype, row-major with a unit last-dim stride, or tiled (the whole tile storage);
 * - cast, unary, binary: f32 and bf16 operands (any mix), row-major, unit last-dim stride (rows
 *   may have any stride), math in f32 as the scalar reference does; unary also takes other
 *   last-dim strides (through a 16-element buffer), so its results never depend on the layout;
 * - reduce: f32 src with a unit last-dim stride, over the last axis (any dst dtype, one value
 *   per row) or over axis 0 of a 2-D src (f32 dst with a unit stride).
 * Invariants: rows are walked 16 lanes at a time; the partial chunk at the end of a row uses
 * masked loads and stores, so nothing outside the block is read or written. No allocation, no
 * locks, no state. Results are bit for bit the scalar reference's for fill, cast, identity,
 * neg, relu, sqrt, rsqrt, recip, the binary ops and axis-0 reductions; exp, log, tanh, erf,
 * gelu and silu use the tilec_vec.h helpers (errors measured in docs/kernels.md); a sum over
 * the last axis adds in another order (below). */
#include <immintrin.h>
#include <string.h>

#include "../tile_rows.h"

/* ---- rows ---- */


/* Mask of the first m (0..16) lanes. */
static inline __mmask16 tl_x5_mask(int64_t m) { return (__mmask16)((1u << m) - 1u); }

/* Lanes of mask k from element j of a row of dtype dt (f32 or bf16) as f32; other lanes 0.
 * Signaling NaNs are made quiet, as the reference's trip through double does. */
static inline tl_vf32 tl_x5_load(const void *row, tl_dtype dt, int64_t j, __mmask16 k) {
  __m512 x;
  if (dt == TL_F32) {
    x = _mm512_maskz_loadu_ps(k, (const float *)row + j);
  } else {
    __m256i h = _mm256_maskz_loadu_epi16(k, (const uint16_t *)row + j);
    x = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  __m512i q = _mm512_mask_or_epi32(_mm512_castps_si512(x), nan, _mm512_castps_si512(x), _mm512_set1_epi32(0x400000));
  return (tl_vf32)_mm512_castsi512_ps(q);
}

/* Stores the lanes of mask k at element j of a row of dtype dt (bf16: rounded to nearest even). */
static inline void tl_x5_store(void *row, tl_dtype dt, int64_t j, __mmask16 k, tl_vf32 v) {
  if (dt == TL_F32) {
    _mm512_mask_storeu_ps((float *)row + j, k, (__m512)v);
  } else {
    tl_vu16 h = tl_vf32_to_bf16(v);
    _mm256_mask_storeu_epi16((uint16_t *)row + j, k, (__m256i)h);
  }
}

/* ---- fill ---- */

/* Writes `bytes` bytes at p with the 64-byte pattern pat (a whole number of elements). */
static void tl_x5_fill_bytes(char *p, int64_t bytes, __m512i pat) {
  int64_t i = 0;
  for (; i + 64 <= bytes; i += 64) _mm512_storeu_si512(p + i, pat);
  if (i < bytes) _mm512_mask_storeu_epi8(p + i, (__mmask64)((1ull << (bytes - i)) - 1ull), pat);
}

/* r's block set to v in r's dtype (the value tl_store_f64 stores); tiled refs: all the tiles,
 * padding included, as the reference does. */
int tl_avx512_fill(tl_ref *r, double v) {
  if (!r->layout.tiled && !tl_ref_unit_rows(r)) return 0;
  uint32_t bits = 0;
  tl_store_f64(&bits, r->dtype, 0, v);
  size_t es = tl_dtype_size(r->dtype);
  __m512i pat = es == 4   ? _mm512_set1_epi32((int)bits)
                : es == 2 ? _mm512_set1_epi16((short)(uint16_t)bits)
                          : _mm512_set1_epi8((char)(uint8_t)bits);
  int nd = r->ndim;
  if (r->layout.tiled) {
    int64_t tr = r->layout.tile_r, tc = r->layout.tile_c;
    int64_t total = TL_CDIV(r->shape[nd - 2], tr) * TL_CDIV(r->shape[nd - 1], tc) * tr * tc;
    for (int d = 0; d < nd - 2; d++) total *= r->shape[d];
    tl_x5_fill_bytes(r->data, total * (int64_t)es, pat);
    return 1;
  }
  if (tl_ref_empty(r)) return 1;
  int64_t n = nd ? r->shape[nd - 1] : 1, idx[TL_MAX_DIMS] = {0};
  do {
    char *row = (char *)r->data + tl_row_off(nd, r->stride, idx) * (int64_t)es;
    tl_x5_fill_bytes(row, n * (int64_t)es, pat);
  } while (tl_idx_next(nd - 1, r->shape, idx));
  return 1;
}

/* ---- unary ---- */

/* op(x) per lane, as tl_sc_unary1 in tile_scalar.c. */
static inline tl_vf32 tl_x5_unary1(tl_unary op, tl_vf32 x) {
  switch (op) {
  case TL_UNARY_EXP: return tl_vf32_exp(x);
  case TL_UNARY_LOG: return tl_vf32_log(x);
  case TL_UNARY_TANH: return tl_vf32_tanh(x);
  case TL_UNARY_ERF: return tl_vf32_erf(x);
  case TL_UNARY_GELU: return tl_vf32_gelu(x);
  case TL_UNARY_SILU: return tl_vf32_silu(x);
  case TL_UNARY_RELU: return tl_vf32_sel(x <= 0.0f, tl_vf32_splat(0.0f), x); /* NaN kept */
  case TL_UNARY_NEG: return -x;
  case TL_UNARY_SQRT: return (tl_vf32)_mm512_sqrt_ps((__m512)x);
  case TL_UNARY_RSQRT: return 1.0f / (tl_vf32)_mm512_sqrt_ps((__m512)x);
  case TL_UNARY_RECIP: return 1.0f / x;
  default: return x;
  }
}

/* dst = op(src) for one row of n elements whose last-dim strides (elements) are not both 1:
 * 16 elements gathered into a buffer, the same vector math, scattered back, so a result does not
 * depend on the layout. */
static void tl_x5_unary_row_strided(void *d, tl_dtype dd, int64_t sd, const void *s, tl_dtype sdt, int64_t ss,
                                    int64_t n, tl_unary op) {
  float in[16], out[16];
  for (int64_t j = 0; j < n; j += 16) {
    int64_t m = n - j < 16 ? n - j : 16;
    for (int64_t i = 0; i < m; i++) in[i] = (float)tl_load_f64(s, sdt, (j + i) * ss);
    __mmask16 k = tl_x5_mask(m);
    tl_x5_store(out, TL_F32, 0, k, tl_x5_unary1(op, tl_x5_load(in, TL_F32, 0, k)));
    for (int64_t i = 0; i < m; i++) tl_store_f64(d, dd, (j + i) * sd, out[i]);
  }
}

/* dst = op(src) for one row of n elements (dst may be src). */
static void tl_x5_unary_row(void *d, tl_dtype dd, const void *s, tl_dtype sd, int64_t n, tl_unary op) {
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) tl_x5_store(d, dd, j, 0xffff, tl_x5_unary1(op, tl_x5_load(s, sd, j, 0xffff)));
  if (j < n) {
    __mmask16 k = tl_x5_mask(n - j);
    tl_x5_store(d, dd, j, k, tl_x5_unary1(op, tl_x5_load(s, sd, j, k)));
  }
}

/* dst = op(src): f32/bf16 row-major operands (contiguous rows fast; other last-dim strides
 * through a buffer); else 0. */
int tl_avx512_unary(tl_ref *dst, const tl_ref *src, tl_unary op) {
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
      tl_x5_unary_row(d, dst->dtype, s, src->dtype, n, op);
    else
      tl_x5_unary_row_strided(d, dst->dtype, dst->stride[nd - 1], s, src->dtype, src->stride[nd - 1], n, op);
  } while (tl_idx_next(nd - 1, dst->shape, idx));
  return 1;
}

/* dst = src converted: f32/bf16 with contiguous rows (the identity of tl_tile_unary, which is
 * the same exact conversion); else 0. */
int tl_avx512_cast(tl_ref *dst, const tl_ref *src) {
  if (!tl_ref_unit_rows(dst) || !tl_ref_unit_rows(src)) return 0;
  return tl_avx512_unary(dst, src, TL_UNARY_IDENTITY);
}

/* ---- binary ---- */

/* x op y per lane, as tl_sc_binary1: max and min return x when x is NaN or wins (ties
 * included), else y (so a NaN y is returned when x is not NaN). */
static inline tl_vf32 tl_x5_binary1(tl_binary op, tl_vf32 x, tl_vf32 y) {
  switch (op) {
  case TL_BINARY_ADD: return x + y;
  case TL_BINARY_SUB: return x - y;
  case TL_BINARY_MUL: return x * y;
  case TL_BINARY_DIV: return x / y;
  case TL_BINARY_MAX: return tl_vf32_sel((x != x) | (x >= y), x, y);
  case TL_BINARY_MIN: return tl_vf32_sel((x != x) | (x <= y), x, y);
  default: return x;
  }
}

/* One row: d = a op b, b either a row (bvec) or one value broadcast (bvec 0). */
static void tl_x5_binary_row(void *d, tl_dtype dd, const void *a, tl_dtype ad, const void *b, tl_dtype bd,
                             int bvec, int64_t n, tl_binary op) {
  tl_vf32 bs = tl_vf32_splat(bvec ? 0.0f : (float)tl_load_f64(b, bd, 0));
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    tl_vf32 y = bvec ? tl_x5_load(b, bd, j, 0xffff) : bs;
    tl_x5_store(d, dd, j, 0xffff, tl_x5_binary1(op, tl_x5_load(a, ad, j, 0xffff), y));
  }
  if (j < n) {
    __mmask16 k = tl_x5_mask(n - j);
    tl_vf32 y = bvec ? tl_x5_load(b, bd, j, k) : bs;
    tl_x5_store(d, dd, j, k, tl_x5_binary1(op, tl_x5_load(a, ad, j, k), y));
  }
}

/* dst = a op b with tile.c's broadcasts: b's strides are mapped onto dst's dims (0 where b has
 * size 1 or no dim); along the last dim b is then contiguous or one value. f32/bf16 operands
 * with contiguous rows; else 0. */
int tl_avx512_binary(tl_ref *dst, const tl_ref *a, const tl_ref *b, tl_binary op) {
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
    tl_x5_binary_row(d, dst->dtype, pa, a->dtype, pb, b->dtype, bvec, n, op);
  } while (tl_idx_next(nd - 1, dst->shape, idx));
  return 1;
}

/* ---- reduce ---- */

/* Sum of a contiguous f32 row: four accumulators of 16 lanes (element j goes to lane j % 16 of
 * accumulator (j / 16) % 4, added in increasing j, the masked tail into accumulator 0), then
 * (acc0 + acc1) + (acc2 + acc3), then the 16 lanes pairwise (_mm512_reduce_add_ps). */
static float tl_x5_sum_row(const float *s, int64_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t j = 0;
  for (; j + 64 <= n; j += 64) {
    a0 = _mm512_add_ps(a0, _mm512_loadu_ps(s + j));
    a1 = _mm512_add_ps(a1, _mm512_loadu_ps(s + j + 16));
    a2 = _mm512_add_ps(a2, _mm512_loadu_ps(s + j + 32));
    a3 = _mm512_add_ps(a3, _mm512_loadu_ps(s + j + 48));
  }
  for (; j + 16 <= n; j += 16) a0 = _mm512_add_ps(a0, _mm512_loadu_ps(s + j));
  if (j < n) a0 = _mm512_add_ps(a0, _mm512_maskz_loadu_ps(tl_x5_mask(n - j), s + j));
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

/* Max (mx) or min of a contiguous f32 row, as the reference: the first NaN if there is one,
 * else the extreme value; a zero extreme is the first zero of the row (its sign decides). */
static float tl_x5_maxmin_row(const float *s, int64_t n, int mx) {
  __m512 acc = _mm512_set1_ps(mx ? -__builtin_inff() : __builtin_inff());
  __mmask16 nan = 0;
  int64_t j = 0;
  for (; j < n; j += 16) {
    __mmask16 k = n - j >= 16 ? 0xffff : tl_x5_mask(n - j);
    __m512 x = _mm512_maskz_loadu_ps(k, s + j);
    nan |= _mm512_mask_cmp_ps_mask(k, x, x, _CMP_UNORD_Q);
    acc = mx ? _mm512_mask_max_ps(acc, k, acc, x) : _mm512_mask_min_ps(acc, k, acc, x);
  }
  if (nan) {
    for (j = 0; j < n; j++)
      if (s[j] != s[j]) return s[j];
  }
  float r = mx ? _mm512_reduce_max_ps(acc) : _mm512_reduce_min_ps(acc);
  if (r == 0.0f) {
    for (j = 0; j < n; j++)
      if (s[j] == 0.0f) return s[j];
  }
  return r;
}

/* Over axis 0 of a contiguous [R, C] f32 src into a contiguous f32 row dst: 16 columns at a
 * time, rows in increasing order, so sums add in the reference's order; max/min keep a lane's
 * value unless the new one is greater/smaller or NaN, and freeze a lane at its first NaN. */
static void tl_x5_reduce_cols(float *dst, const float *src, int64_t rows, int64_t cols, int64_t rs,
                              tl_reduce op) {
  for (int64_t c = 0; c < cols; c += 16) {
    __mmask16 k = cols - c >= 16 ? 0xffff : tl_x5_mask(cols - c);
    __m512 acc;
    if (op == TL_REDUCE_SUM) {
      acc = _mm512_setzero_ps();
      for (int64_t i = 0; i < rows; i++) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(k, src + i * rs + c));
    } else {
      int mx = op == TL_REDUCE_MAX;
      acc = _mm512_set1_ps(mx ? -__builtin_inff() : __builtin_inff());
      __mmask16 live = k;
      for (int64_t i = 0; i < rows && live; i++) {
        __m512 x = _mm512_maskz_loadu_ps(live, src + i * rs + c);
        __mmask16 isnan = _mm512_mask_cmp_ps_mask(live, x, x, _CMP_UNORD_Q);
        __mmask16 better = mx ? _mm512_mask_cmp_ps_mask(live, x, acc, _CMP_GT_OQ)
                              : _mm512_mask_cmp_ps_mask(live, x, acc, _CMP_LT_OQ);
        acc = _mm512_mask_mov_ps(acc, better | isnan, x);
        live &= (__mmask16)~isnan;
      }
    }
    _mm512_mask_storeu_ps(dst + c, k, acc);
  }
}

/* dst = reduce src over axis: the shared f32 driver (tile_rows.h) around this file's row kernels. */
int tl_avx512_reduce(tl_ref *dst, const tl_ref *src, int axis, tl_reduce op) {
  return tl_reduce_f32_rows(dst, src, axis, op, tl_x5_sum_row, tl_x5_maxmin_row, tl_x5_reduce_cols);
}
