/* test_dtype.c — the dtype table, the f32 <-> bf16 / f16 conversions and scalar element access.
 *
 * The conversions are checked against a reference written independently here, in double
 * arithmetic: decoding by the formula (-1)^s * 2^(e - bias) * (1 + m / 2^mbits) (denormals
 * m * 2^(emin - mbits)), encoding by scaling |x| to units of the target ulp with frexp/ldexp and
 * rounding half to even. Coverage: every 16-bit pattern both ways, every round trip, the
 * midpoint between every pair of neighbouring values (and one f32 ulp either side), dense bands
 * around the f16 overflow, normal/denormal and zero thresholds, and 2^24 random f32 patterns
 * (NaN payloads, infinities, denormals, ties).
 */
#include <float.h>

#include "core/core_impl.h"
#include "test_util.h"

/* ---- the independent reference ---- */

typedef struct ref_fmt {
  const char *name;
  int ebits, mbits; /* exponent and stored mantissa bits */
} ref_fmt;

static const ref_fmt REF_F16 = {"f16", 5, 10};
static const ref_fmt REF_BF16 = {"bf16", 8, 7};

static int ref_bias(ref_fmt f) { return (1 << (f.ebits - 1)) - 1; }
static int ref_emin(ref_fmt f) { return 1 - ref_bias(f); }
static uint32_t ref_emask(ref_fmt f) { return (1u << f.ebits) - 1u; }
/* Largest finite value: (2 - 2^-mbits) * 2^emax. */
static double ref_maxfin(ref_fmt f) {
  return ldexp(2.0 - ldexp(1.0, -f.mbits), (int)ref_emask(f) - 1 - ref_bias(f));
}

static int ref_is_nan(ref_fmt f, uint32_t h) {
  return ((h >> f.mbits) & ref_emask(f)) == ref_emask(f) && (h & ((1u << f.mbits) - 1u)) != 0;
}

/* The value of bit pattern h, by the formula. NaN patterns give NaN. */
static double ref_decode(ref_fmt f, uint32_t h) {
  uint32_t s = (h >> (f.ebits + f.mbits)) & 1u;
  uint32_t e = (h >> f.mbits) & ref_emask(f);
  uint32_t m = h & ((1u << f.mbits) - 1u);
  double v;
  if (e == ref_emask(f))
    v = m ? NAN : INFINITY;
  else if (e == 0)
    v = ldexp((double)m, ref_emin(f) - f.mbits);
  else
    v = ldexp(1.0 + ldexp((double)m, -f.mbits), (int)e - ref_bias(f));
  return s ? -v : v;
}

/* x rounded to the format, to nearest with ties to even, Inf on overflow (the rounded value
 * with unbounded exponent exceeds the largest finite one). x finite or infinite, not NaN. */
static double ref_round(ref_fmt f, double x) {
  if (x == 0 || isinf(x)) return x;
  double a = fabs(x);
  int e2;
  frexp(a, &e2); /* a = frac * 2^e2, frac in [0.5, 1): the leading bit is 2^(e2 - 1) */
  int q = e2 - 1 < ref_emin(f) ? ref_emin(f) : e2 - 1;
  int ulp_exp = q - f.mbits;
  double s = ldexp(a, -ulp_exp); /* exact: a has 24 significant bits */
  double fl = floor(s), d = s - fl;
  if (d > 0.5 || (d == 0.5 && fmod(fl, 2.0) != 0.0)) fl += 1.0;
  double r = ldexp(fl, ulp_exp);
  if (r > ref_maxfin(f)) r = INFINITY;
  return copysign(r, x);
}

static float bits_f32(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}
static uint32_t f32_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

/* The library's encoder for a format. */
static uint32_t lib_encode(ref_fmt f, float x) {
  return f.ebits == 5 ? tl_f32_to_f16(x) : tl_f32_to_bf16(x);
}
static float lib_decode(ref_fmt f, uint32_t h) {
  return f.ebits == 5 ? tl_f16_to_f32((uint16_t)h) : tl_bf16_to_f32((uint16_t)h);
}

/* Checks one f32 -> format conversion against the reference; returns 1 if it matched. Counts
 * go to the harness once per call site (callers aggregate to keep the counts readable). */
static int check_encode_one(ref_fmt f, uint32_t xb) {
  float x = bits_f32(xb);
  uint32_t h = lib_encode(f, x);
  uint32_t sign_h = (h >> 15) & 1u, sign_x = xb >> 31;
  if (isnan(x)) {
    uint32_t quiet = 1u << (f.mbits - 1);
    return ref_is_nan(f, h) && (h & quiet) && sign_h == sign_x;
  }
  if (ref_is_nan(f, h)) return 0;
  double want = ref_round(f, (double)x);
  double got = ref_decode(f, h);
  return got == want && sign_h == sign_x;
}

static int g_first_fail_printed;
/* Runs check_encode_one and reports the first few mismatches in detail. */
static int check_encode(ref_fmt f, uint32_t xb) {
  int ok = check_encode_one(f, xb);
  if (!ok && g_first_fail_printed++ < 10) {
    float x = bits_f32(xb);
    fprintf(stderr, "  %s: x = %a (0x%08x) -> 0x%04x, reference %a\n", f.name, (double)x, xb,
            lib_encode(f, x), isnan(x) ? NAN : ref_round(f, (double)x));
  }
  return ok;
}

/* ---- tests ---- */

static void test_dtype_table(void) {
  static const struct { tl_dtype dt; const char *name; size_t size; } want[] = {
      {TL_F32, "f32", 4}, {TL_F16, "f16", 2}, {TL_BF16, "bf16", 2},
      {TL_I8, "i8", 1},   {TL_U8, "u8", 1},   {TL_I32, "i32", 4},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    CHECK(tl_dtype_size(want[i].dt) == want[i].size, "size of %s", want[i].name);
    CHECK(strcmp(tl_dtype_name(want[i].dt), want[i].name) == 0, "name of %d", (int)want[i].dt);
    CHECK(tl_dtype_parse(want[i].name) == want[i].dt, "parse %s", want[i].name);
  }
  CHECK(tl_dtype_size(TL_DTYPE_INVALID) == 0, "invalid size");
  CHECK(tl_dtype_size((tl_dtype)99) == 0, "size 99");
  CHECK(tl_dtype_size((tl_dtype)-1) == 0, "size -1");
  CHECK(strcmp(tl_dtype_name(TL_DTYPE_INVALID), "invalid") == 0, "invalid name");
  CHECK(strcmp(tl_dtype_name((tl_dtype)99), "invalid") == 0, "name 99");
  CHECK(strcmp(tl_dtype_name((tl_dtype)-5), "invalid") == 0, "name -5");
  CHECK(tl_dtype_parse(NULL) == TL_DTYPE_INVALID, "parse NULL");
  CHECK(tl_dtype_parse("") == TL_DTYPE_INVALID, "parse empty");
  CHECK(tl_dtype_parse("invalid") == TL_DTYPE_INVALID, "parse invalid");
  CHECK(tl_dtype_parse("F32") == TL_DTYPE_INVALID, "parse is case-sensitive");
  CHECK(tl_dtype_parse("f64") == TL_DTYPE_INVALID, "parse f64");
  CHECK(tl_dtype_parse("f3") == TL_DTYPE_INVALID, "parse prefix");
  CHECK(tl_dtype_parse("bf16 ") == TL_DTYPE_INVALID, "parse trailing space");
}

/* Every 16-bit pattern decodes exactly (bf16 and f16), NaN to a NaN of the same sign. */
static void test_decode_all(void) {
  const ref_fmt fmts[2] = {REF_F16, REF_BF16};
  for (int k = 0; k < 2; k++) {
    ref_fmt f = fmts[k];
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
      float got = lib_decode(f, h);
      uint32_t gb = f32_bits(got);
      int ok;
      if (ref_is_nan(f, h)) {
        /* NaN: sign and payload kept (upper mantissa bits); f16 NaNs come out quiet (as
         * VCVTPH2PS), bf16 ones unchanged (checked below). */
        uint32_t payload = h & ((1u << f.mbits) - 1u);
        ok = isnan(got) && (gb >> 31) == (h >> 15) && (f.ebits != 5 || (gb & 0x400000u)) &&
             (((gb & 0x7fffffu) >> (23 - f.mbits)) | (1u << (f.mbits - 1))) ==
                 (payload | (1u << (f.mbits - 1)));
      } else {
        double want = ref_decode(f, h);
        ok = (double)got == want && (gb >> 31) == (h >> 15);
      }
      if (!ok && bad++ < 5) fprintf(stderr, "  %s 0x%04x -> %a (0x%08x)\n", f.name, h, (double)got, gb);
    }
    CHECK(bad == 0, "%s decode: %d of 65536 patterns wrong", f.name, bad);
  }
  /* bf16 -> f32 is documented as the bits shifted up, NaN payloads included. */
  int bad = 0;
  for (uint32_t h = 0; h < 65536; h++) bad += f32_bits(tl_bf16_to_f32((uint16_t)h)) != h << 16;
  CHECK(bad == 0, "bf16 decode is not h << 16 for %d patterns", bad);
}

/* Every value survives f16/bf16 -> f32 -> f16/bf16 unchanged; NaNs stay NaN of the same sign. */
static void test_round_trip_all(void) {
  const ref_fmt fmts[2] = {REF_F16, REF_BF16};
  for (int k = 0; k < 2; k++) {
    ref_fmt f = fmts[k];
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
      uint32_t back = lib_encode(f, lib_decode(f, h));
      int ok = ref_is_nan(f, h) ? ref_is_nan(f, back) && (back >> 15) == (h >> 15) : back == h;
      if (!ok && bad++ < 5) fprintf(stderr, "  %s round trip 0x%04x -> 0x%04x\n", f.name, h, back);
    }
    CHECK(bad == 0, "%s round trip: %d of 65536 wrong", f.name, bad);
  }
}

/* Named special values, both formats. */
static void test_encode_specials(void) {
  static const uint32_t xs[] = {
      0x00000000, 0x80000000,             /* +-0 */
      0x7f800000, 0xff800000,             /* +-Inf */
      0x7fc00000, 0xffc00000,             /* quiet NaN */
      0x7f800001, 0xff800001, 0x7f801fff, /* signalling NaN, payload only in the low bits */
      0x7fa00000, 0x7fbfffff, 0x7fffffff, /* other payloads */
      0x00000001, 0x00400000, 0x007fffff, /* f32 denormals */
      0x00800000, 0x80800000,             /* smallest f32 normal */
      0x7f7fffff, 0xff7fffff,             /* FLT_MAX: bf16 rounds it to Inf */
      0x7f7f8000, 0x7f7f7fff, 0x7f7f8001, /* around the bf16 overflow tie */
      0x7f7e8000,                         /* bf16 tie that stays finite (even below) */
      0x477fe000, 0x477fefff, 0x477ff000, 0x477ff001, 0x47800000, /* 65504, 65519.99.., 65520, +, 65536 */
      0xc77ff000, 0xc77fefff,             /* negative side of the f16 overflow */
      0x33800000, 0x33000000, 0x33000001, 0x32ffffff, 0x33400000, /* 2^-24, 2^-25, ... 1.5*2^-25 */
      0x33c00000, 0x34200000,             /* 1.5 * 2^-24 (tie to even 2^-23), 2.5 * 2^-24 (tie to 2^-23) */
      0x387fe000, 0x387ff000, 0x387fffff, 0x38800000, /* largest f16 denormal .. smallest normal */
      0x3f800000, 0x3f801000, 0x3f803000, 0x3f808000, 0x3f818000, /* f16 / bf16 ties at 1.0 */
      0x3eaaaaab,                         /* 1/3 */
  };
  int bad = 0;
  for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
    bad += !check_encode(REF_F16, xs[i]);
    bad += !check_encode(REF_BF16, xs[i]);
  }
  CHECK(bad == 0, "%d special values wrong", bad);
  /* A few spelled out, independent of the reference. */
  CHECK(tl_f32_to_f16(65520.0f) == 0x7c00, "65520 -> Inf");
  CHECK(tl_f32_to_f16(nextafterf(65520.0f, 0.0f)) == 0x7bff, "just below 65520 -> 65504");
  CHECK(tl_f32_to_f16(-70000.0f) == 0xfc00, "-70000 -> -Inf");
  CHECK(tl_f32_to_f16(0x1p-24f) == 0x0001, "2^-24 -> smallest denormal");
  CHECK(tl_f32_to_f16(0x1p-25f) == 0x0000, "2^-25 ties to 0");
  CHECK(tl_f32_to_f16(-0x1p-25f) == 0x8000, "-2^-25 ties to -0");
  CHECK(tl_f32_to_f16(0x3p-25f) == 0x0002, "1.5 * 2^-24 ties to 2 * 2^-24");
  CHECK(tl_f32_to_f16(1.0f) == 0x3c00, "1.0 f16");
  CHECK(tl_f32_to_bf16(1.0f) == 0x3f80, "1.0 bf16");
  CHECK(tl_f32_to_bf16(bits_f32(0x3f808000)) == 0x3f80, "bf16 tie to even (down)");
  CHECK(tl_f32_to_bf16(bits_f32(0x3f818000)) == 0x3f82, "bf16 tie to even (up)");
  CHECK(tl_f32_to_bf16(FLT_MAX) == 0x7f80, "FLT_MAX -> bf16 Inf");
  CHECK(tl_f32_to_bf16(bits_f32(0x7f800001)) != 0x7f80, "sNaN with low payload must not become Inf");
  CHECK((tl_f32_to_bf16(bits_f32(0xff800001)) & 0xffc0) == 0xffc0, "negative sNaN -> negative quiet NaN");
  CHECK((tl_f32_to_f16(bits_f32(0x7f800001)) & 0x7e00) == 0x7e00, "sNaN -> quiet f16 NaN");
  CHECK(tl_f16_to_f32(0x0001) == 0x1p-24f, "smallest f16 denormal");
  CHECK(tl_f16_to_f32(0x03ff) == 0x3ffp-24f, "largest f16 denormal");
  CHECK(tl_f16_to_f32(0x7bff) == 65504.0f, "largest f16");
}

/* The midpoint between every pair of neighbouring non-negative finite values (a tie), and the f32
 * neighbours of each midpoint, both signs. */
static void test_encode_midpoints(void) {
  const ref_fmt fmts[2] = {REF_F16, REF_BF16};
  for (int k = 0; k < 2; k++) {
    ref_fmt f = fmts[k];
    uint32_t inf = ref_emask(f) << f.mbits;
    int bad = 0, n = 0;
    for (uint32_t h = 0; h < inf; h++) {
      double lo = ref_decode(f, h);
      double hi = h + 1 < inf ? ref_decode(f, h + 1) : 2.0 * ref_decode(f, h) - ref_decode(f, h - 1);
      float mid = (float)((lo + hi) / 2); /* exact: one more bit than the format has */
      CHECK((double)mid == (lo + hi) / 2, "%s midpoint above 0x%04x is not exact in f32", f.name, h);
      const float xs[3] = {mid, nextafterf(mid, 0.0f), nextafterf(mid, INFINITY)};
      for (int j = 0; j < 3; j++) {
        bad += !check_encode(f, f32_bits(xs[j]));
        bad += !check_encode(f, f32_bits(-xs[j]));
        n += 2;
      }
    }
    CHECK(bad == 0, "%s midpoints: %d of %d wrong", f.name, bad, n);
  }
}

/* Every f32 pattern in bands around the f16 thresholds, and around bf16's smallest normal. */
static void test_encode_bands(void) {
  static const struct { uint32_t lo, hi; } bands[] = {
      {0x477f0000, 0x47810000}, /* f16 overflow at 65520 */
      {0x387f0000, 0x38810000}, /* f16 denormal / normal */
      {0x32f00000, 0x33100000}, /* f16 zero / smallest denormal */
      {0x00000000, 0x00020000}, /* f32 denormals (bf16 denormals) */
      {0x007e0000, 0x00820000}, /* bf16 denormal / normal */
      {0x7f7e0000, 0x7f800000}, /* bf16 overflow */
  };
  int bad = 0, n = 0;
  for (size_t b = 0; b < sizeof bands / sizeof bands[0]; b++)
    for (uint32_t u = bands[b].lo; u <= bands[b].hi; u++)
      for (uint32_t s = 0; s < 2; s++) {
        bad += !check_encode(REF_F16, u | s << 31);
        bad += !check_encode(REF_BF16, u | s << 31);
        n += 2;
      }
  CHECK(bad == 0, "threshold bands: %d of %d wrong", bad, n);
}

/* 2^24 random f32 patterns: a quarter uniform over all bits (NaN payloads, infinities, f32
 * denormals included), a quarter with exponents around the f16 range, a quarter f16 ties +-1
 * and a quarter bf16 ties +-1 over the whole exponent range. */
static void test_encode_random(void) {
  test_rng rng = {0x9e3779b97f4a7c15ull};
  const int64_t count = (int64_t)1 << 24;
  int bad16 = 0, badbf = 0;
  for (int64_t i = 0; i < count; i++) {
    uint64_t r = test_rng_u64(&rng);
    uint32_t u = (uint32_t)r, sign = u & 0x80000000u;
    switch ((r >> 32) & 3) {
    case 0: break;
    case 1: u = sign | (uint32_t)test_rng_int(&rng, 95, 145) << 23 | (u & 0x7fffffu); break;
    case 2: {
      uint32_t e = (uint32_t)test_rng_int(&rng, 95, 145);
      int shift = e >= 113 ? 13 : (int)(126 - e); /* bits below the f16 ulp (denormals: more) */
      if (shift > 23) shift = 23;
      uint32_t m = (u & 0x7fffffu) & ~((1u << shift) - 1u);
      m |= 1u << (shift - 1);                          /* exactly half an ulp */
      m += (uint32_t)test_rng_int(&rng, -1, 1);        /* tie or a neighbour */
      u = sign | ((e << 23) + m);
      break;
    }
    default: u = (u & 0xffff0000u) | (uint32_t)(0x8000 + test_rng_int(&rng, -1, 1)); break;
    }
    bad16 += !check_encode(REF_F16, u);
    badbf += !check_encode(REF_BF16, u);
  }
  CHECK(bad16 == 0, "f16: %d of %lld random values wrong", bad16, (long long)count);
  CHECK(badbf == 0, "bf16: %d of %lld random values wrong", badbf, (long long)count);
}

/* tl_saturate: integers clamp, round half to even, NaN -> 0; floats unchanged. */
static void test_saturate(void) {
  CHECK(tl_saturate(TL_I8, 300) == 127, "i8 300");
  CHECK(tl_saturate(TL_I8, -300) == -128, "i8 -300");
  CHECK(tl_saturate(TL_I8, 127.4) == 127, "i8 127.4");
  CHECK(tl_saturate(TL_I8, 127.5) == 127, "i8 127.5");
  CHECK(tl_saturate(TL_I8, -128.5) == -128, "i8 -128.5");
  CHECK(tl_saturate(TL_I8, INFINITY) == 127, "i8 inf");
  CHECK(tl_saturate(TL_I8, -INFINITY) == -128, "i8 -inf");
  CHECK(tl_saturate(TL_I8, NAN) == 0, "i8 NaN");
  CHECK(tl_saturate(TL_U8, -1) == 0, "u8 -1");
  CHECK(tl_saturate(TL_U8, 255.5) == 255, "u8 255.5");
  CHECK(tl_saturate(TL_U8, 1e300) == 255, "u8 1e300");
  CHECK(tl_saturate(TL_U8, -NAN) == 0, "u8 -NaN");
  CHECK(tl_saturate(TL_I32, 1e10) == 2147483647.0, "i32 1e10");
  CHECK(tl_saturate(TL_I32, -1e10) == -2147483648.0, "i32 -1e10");
  CHECK(tl_saturate(TL_I32, 2147483647.5) == 2147483647.0, "i32 max + 0.5");
  CHECK(tl_saturate(TL_I32, NAN) == 0, "i32 NaN");
  static const double in[] = {2.5, 3.5, -2.5, -3.5, 0.5, 1.5, -0.5, 2.4999, 2.5001, -0.2};
  static const double out[] = {2, 4, -2, -4, 0, 2, 0, 2, 3, 0};
  for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
    CHECK(tl_saturate(TL_I32, in[i]) == out[i], "i32 RNE of %g: got %g, want %g", in[i],
          tl_saturate(TL_I32, in[i]), out[i]);
  CHECK(!signbit(tl_saturate(TL_I8, -0.4)), "integer -0.4 gives +0");
  CHECK(tl_saturate(TL_F32, 1e300) == 1e300, "f32 unchanged");
  CHECK(tl_saturate(TL_BF16, -7.25) == -7.25, "bf16 unchanged");
  CHECK(isnan(tl_saturate(TL_F16, NAN)), "f16 NaN unchanged");
}

/* tl_load_f64 / tl_store_f64 on every dtype, at an index > 0, touching only that element. */
static void test_load_store(void) {
  float f32[3] = {-1, -1, -1};
  tl_store_f64(f32, TL_F32, 1, 0.1);
  CHECK(f32[1] == 0.1f && f32[0] == -1 && f32[2] == -1, "f32 store");
  CHECK(tl_load_f64(f32, TL_F32, 1) == (double)0.1f, "f32 load");
  tl_store_f64(f32, TL_F32, 2, 1e300);
  CHECK(isinf(f32[2]) && f32[2] > 0, "f32 overflow -> inf");

  uint16_t h[3] = {0xaaaa, 0xaaaa, 0xaaaa};
  tl_store_f64(h, TL_F16, 1, 1.0 / 3.0);
  CHECK(h[1] == tl_f32_to_f16((float)(1.0 / 3.0)) && h[0] == 0xaaaa && h[2] == 0xaaaa, "f16 store");
  CHECK(tl_load_f64(h, TL_F16, 1) == (double)tl_f16_to_f32(h[1]), "f16 load");
  tl_store_f64(h, TL_F16, 1, 1e6);
  CHECK(h[1] == 0x7c00, "f16 overflow store -> Inf");
  tl_store_f64(h, TL_F16, 1, NAN);
  CHECK((h[1] & 0x7c00) == 0x7c00 && (h[1] & 0x3ff), "f16 NaN store");
  tl_store_f64(h, TL_BF16, 2, -2.0);
  CHECK(h[2] == 0xc000 && h[0] == 0xaaaa, "bf16 store -2");
  CHECK(tl_load_f64(h, TL_BF16, 2) == -2.0, "bf16 load");
  h[0] = 0x0001;
  CHECK(tl_load_f64(h, TL_F16, 0) == 0x1p-24, "f16 denormal load exact");

  int8_t i8[3] = {9, 9, 9};
  tl_store_f64(i8, TL_I8, 1, 1000);
  CHECK(i8[1] == 127 && i8[0] == 9 && i8[2] == 9, "i8 saturate high");
  tl_store_f64(i8, TL_I8, 1, -1000);
  CHECK(i8[1] == -128, "i8 saturate low");
  tl_store_f64(i8, TL_I8, 1, NAN);
  CHECK(i8[1] == 0, "i8 NaN -> 0");
  tl_store_f64(i8, TL_I8, 1, 2.5);
  CHECK(i8[1] == 2, "i8 2.5 -> 2");
  tl_store_f64(i8, TL_I8, 1, -3.5);
  CHECK(i8[1] == -4, "i8 -3.5 -> -4");
  CHECK(tl_load_f64(i8, TL_I8, 1) == -4, "i8 load");

  uint8_t u8[2] = {7, 7};
  tl_store_f64(u8, TL_U8, 1, -5);
  CHECK(u8[1] == 0 && u8[0] == 7, "u8 saturate low");
  tl_store_f64(u8, TL_U8, 1, 256);
  CHECK(u8[1] == 255, "u8 saturate high");
  CHECK(tl_load_f64(u8, TL_U8, 1) == 255, "u8 load");
  tl_store_f64(u8, TL_U8, 1, 0.5);
  CHECK(u8[1] == 0, "u8 0.5 -> 0");

  int32_t i32[2] = {5, 5};
  tl_store_f64(i32, TL_I32, 1, 3e9);
  CHECK(i32[1] == INT32_MAX && i32[0] == 5, "i32 saturate high");
  tl_store_f64(i32, TL_I32, 1, -3e9);
  CHECK(i32[1] == INT32_MIN, "i32 saturate low");
  tl_store_f64(i32, TL_I32, 1, NAN);
  CHECK(i32[1] == 0, "i32 NaN");
  tl_store_f64(i32, TL_I32, 1, 123456.5);
  CHECK(i32[1] == 123456, "i32 RNE");
  CHECK(tl_load_f64(i32, TL_I32, 1) == 123456, "i32 load");

  /* An invalid dtype writes nothing and loads NaN. */
  int32_t guard = 77;
  tl_store_f64(&guard, TL_DTYPE_INVALID, 0, 1);
  tl_store_f64(&guard, (tl_dtype)42, 0, 1);
  CHECK(guard == 77, "invalid dtype store writes nothing");
  CHECK(isnan(tl_load_f64(&guard, TL_DTYPE_INVALID, 0)), "invalid dtype load is NaN");
}

int main(void) {
  RUN(test_dtype_table);
  RUN(test_decode_all);
  RUN(test_round_trip_all);
  RUN(test_encode_specials);
  RUN(test_encode_midpoints);
  RUN(test_encode_bands);
  RUN(test_encode_random);
  RUN(test_saturate);
  RUN(test_load_store);
  return test_summary("core_dtype");
}
