/* dtype.c — the dtype table (sizes, names), the f32 <-> bf16 / f16 conversions and scalar element
 * access by dtype (tl_load_f64, tl_store_f64, tl_saturate).
 *
 * Invariants:
 * - The tables are generated from TL_DTYPE_LIST, so they cannot drift from the enum.
 * - The conversions are portable C on the bit patterns (integer arithmetic only): they never
 *   depend on F16C or other ISA flags, nor on MXCSR (flush-to-zero / denormals-are-zero) or the
 *   floating-point rounding mode. Checked against the hardware over all 2^32 inputs:
 *     f32 -> bf16: round to nearest even, f32 denormals rounded like any other value; NaN ->
 *                  quiet NaN, sign and top payload bits kept. Equal to VCVTNEPS2BF16 except
 *                  that the instruction flushes f32 denormal inputs (|x| < 2^-126) to +-0.
 *     f32 -> f16:  round to nearest even, overflow (|x| >= 65520) -> Inf, denormals produced;
 *                  NaN -> quiet NaN, sign and top payload bits kept. Equal to VCVTPS2PH (RNE)
 *                  for every input.
 *     bf16 -> f32: exact (the bits shifted up, NaN payloads unchanged).
 *     f16 -> f32:  exact for every non-NaN value, denormals included; a NaN becomes a quiet NaN
 *                  with the same sign and payload (as VCVTPH2PS).
 * - Stores to integer dtypes round to nearest even and saturate; NaN stores as 0.
 */
#include <math.h>
#include <string.h>

#include "core_impl.h"

/* ---- the dtype table ---- */

static const size_t tl_dtype_sizes[] = {
#define TL_X_(e, name, size) [e] = size,
    TL_DTYPE_LIST(TL_X_)
#undef TL_X_
};
static const char *const tl_dtype_names[] = {
#define TL_X_(e, name, size) [e] = name,
    TL_DTYPE_LIST(TL_X_)
#undef TL_X_
};
_Static_assert(TL_ARRAY_LEN(tl_dtype_sizes) == TL_DTYPE_COUNT, "dtype size table out of sync");
_Static_assert(TL_ARRAY_LEN(tl_dtype_names) == TL_DTYPE_COUNT, "dtype name table out of sync");

/* Bytes per element; 0 for TL_DTYPE_INVALID and values outside the table. */
size_t tl_dtype_size(tl_dtype dt) {
  if ((unsigned)dt >= TL_DTYPE_COUNT) return 0;
  return tl_dtype_sizes[dt];
}

/* Short name ("bf16"); "invalid" for TL_DTYPE_INVALID and values outside the table. */
const char *tl_dtype_name(tl_dtype dt) {
  if ((unsigned)dt >= TL_DTYPE_COUNT) return tl_dtype_names[TL_DTYPE_INVALID];
  return tl_dtype_names[dt];
}

/* Parses a short name (exact, case-sensitive); TL_DTYPE_INVALID for NULL, "invalid" or unknown. */
tl_dtype tl_dtype_parse(const char *name) {
  if (!name) return TL_DTYPE_INVALID;
  for (int i = 1; i < TL_DTYPE_COUNT; i++)
    if (strcmp(name, tl_dtype_names[i]) == 0) return (tl_dtype)i;
  return TL_DTYPE_INVALID;
}

/* ---- bit casts ---- */

static inline uint32_t tl_f32_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

static inline float tl_bits_f32(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* ---- bf16: the top half of an f32 ---- */

/* f32 -> bf16, round to nearest even. Adding 0x7fff plus the lowest kept bit rounds the low half
 * away exactly at ties-to-even; a carry out of the mantissa bumps the exponent, and out of the
 * largest finite value gives Inf, as IEEE requires. NaN keeps its sign and top payload bits and
 * gets the quiet bit, so a payload living only in the low bits cannot turn into Inf. */
uint16_t tl_f32_to_bf16(float x) {
  uint32_t u = tl_f32_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

/* bf16 -> f32: exact. */
float tl_bf16_to_f32(uint16_t h) { return tl_bits_f32((uint32_t)h << 16); }

/* ---- f16: 1 sign, 5 exponent (bias 15), 10 mantissa bits ---- */

/* f32 -> f16, round to nearest even, by cases on |x|:
 *   NaN            -> quiet NaN (sign, top 9 payload bits kept)
 *   >= 65520       -> Inf (65520 is the halfway point above 65504, the largest finite f16; the
 *                     tie goes to the even neighbour, 2^16, which is out of range)
 *   >= 2^-14       -> normal: rebias the exponent, round 13 mantissa bits away
 *   <= 2^-25       -> zero (2^-25 is half the smallest denormal; the tie goes to even, 0)
 *   otherwise      -> denormal: shift the significand (implicit bit included) right and round;
 *                     rounding up from the largest denormal gives the smallest normal, correctly. */
uint16_t tl_f32_to_f16(float x) {
  uint32_t u = tl_f32_bits(x);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* 65520 and up, Inf included */
  if (a >= 0x38800000u) {                                  /* 2^-14: smallest normal f16 */
    uint32_t r = a - ((uint32_t)(127 - 15) << 23);         /* rebias: exponent 127 -> 15 */
    r += 0x0fffu + ((r >> 13) & 1u);
    return (uint16_t)(sign | (r >> 13));
  }
  if (a <= 0x33000000u) return sign; /* |x| <= 2^-25 */
  /* Denormal result: |x| = m * 2^(e - 150) with m the 24-bit significand, and the f16 denormal
   * with integer mantissa q is q * 2^-24, so q = m * 2^(e - 126) = m >> (126 - e). Here
   * e is in 102..112, so the shift is 14..24. */
  uint32_t e = a >> 23;
  uint32_t m = (a & 0x7fffffu) | 0x800000u;
  uint32_t shift = 126 - e;
  uint32_t q = m >> shift;
  uint32_t rem = m & ((1u << shift) - 1u);
  uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1u))) q++;
  return (uint16_t)(sign | q);
}

/* f16 -> f32: exact. A denormal m * 2^-24 is a normal f32: shift m up until its leading bit
 * reaches the implicit-bit position (bit 10); each shift lowers the exponent by one from
 * 2^-14. NaN gets the quiet bit (as VCVTPH2PS). */
float tl_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu;
  uint32_t m = h & 0x3ffu;
  if (e == 0x1f) {
    if (m) return tl_bits_f32(sign | 0x7fc00000u | (m << 13));
    return tl_bits_f32(sign | 0x7f800000u);
  }
  if (e == 0) {
    if (m == 0) return tl_bits_f32(sign);
    uint32_t fe = 127 - 14;
    while (!(m & 0x400u)) {
      m <<= 1;
      fe--;
    }
    return tl_bits_f32(sign | (fe << 23) | ((m & 0x3ffu) << 13));
  }
  return tl_bits_f32(sign | ((e + 127 - 15) << 23) | (m << 13));
}

/* ---- scalar element access ---- */

/* Rounds v to the nearest integer, ties to even, whatever the current rounding mode. v must be
 * finite. For |v| >= 2^52 v is already an integer; below, v - floor(v) is exact. */
static double tl_round_even(double v) {
  double f = floor(v);
  double d = v - f;
  if (d > 0.5 || (d == 0.5 && fmod(f, 2.0) != 0.0)) f += 1.0;
  return f;
}

/* Clamps to [lo, hi] (integer bounds), NaN -> 0, then rounds to nearest even. */
static double tl_sat_range(double v, double lo, double hi) {
  if (isnan(v)) return 0.0;
  if (v <= lo) return lo;
  if (v >= hi) return hi;
  return tl_round_even(v) + 0.0; /* + 0.0: -0 -> +0 */
}

/* Saturating conversion to an integer dtype's range: NaN -> 0, out of range -> the nearest
 * bound, in range -> rounded to nearest even (the value tl_store_f64 would store). Float dtypes
 * (and invalid ones) return v unchanged. */
double tl_saturate(tl_dtype dt, double v) {
  switch (dt) {
  case TL_I8: return tl_sat_range(v, -128.0, 127.0);
  case TL_U8: return tl_sat_range(v, 0.0, 255.0);
  case TL_I32: return tl_sat_range(v, -2147483648.0, 2147483647.0);
  default: return v;
  }
}

/* Element i (in elements, not bytes) of the array at base, as a double (exact for every dtype).
 * An invalid dtype reads nothing and returns NaN. */
double tl_load_f64(const void *base, tl_dtype dt, int64_t i) {
  switch (dt) {
  case TL_F32: return ((const float *)base)[i];
  case TL_F16: return tl_f16_to_f32(((const uint16_t *)base)[i]);
  case TL_BF16: return tl_bf16_to_f32(((const uint16_t *)base)[i]);
  case TL_I8: return ((const int8_t *)base)[i];
  case TL_U8: return ((const uint8_t *)base)[i];
  case TL_I32: return ((const int32_t *)base)[i];
  default: return NAN;
  }
}

/* v rounded to f32 with round-to-odd (truncate, then set the last bit if inexact): rounding that
 * result again to bf16/f16 with round-to-nearest-even gives the correctly rounded value of v (a
 * plain f64 -> f32 -> 16-bit chain can round twice and miss by one ulp). */
static float tl_f64_to_f32_odd(double v) {
  float f = (float)v;
  if (!isfinite(v) || (double)f == v) return f;
  uint32_t u;
  memcpy(&u, &f, 4);
  if (fabs((double)f) > fabs(v)) u -= 1; /* rounded away from zero: step back toward it */
  u |= 1;
  memcpy(&f, &u, 4);
  return f;
}

/* Stores v as element i of the array at base. f32: f64 -> f32 under the current rounding mode
 * (nearest even by default; out of range gives Inf); bf16/f16: correctly rounded (nearest even)
 * from the double. Integers: tl_saturate. An invalid dtype writes nothing. */
void tl_store_f64(void *base, tl_dtype dt, int64_t i, double v) {
  switch (dt) {
  case TL_F32: ((float *)base)[i] = (float)v; break;
  case TL_F16: ((uint16_t *)base)[i] = tl_f32_to_f16(tl_f64_to_f32_odd(v)); break;
  case TL_BF16: ((uint16_t *)base)[i] = tl_f32_to_bf16(tl_f64_to_f32_odd(v)); break;
  case TL_I8: ((int8_t *)base)[i] = (int8_t)tl_saturate(TL_I8, v); break;
  case TL_U8: ((uint8_t *)base)[i] = (uint8_t)tl_saturate(TL_U8, v); break;
  case TL_I32: ((int32_t *)base)[i] = (int32_t)tl_saturate(TL_I32, v); break;
  default: break;
  }
}
