/* test_map.c — the index-map parser (src/runtime/map.c): good maps evaluated over many grid
 * points against hand-written formulas, bad maps refused with TL_ERR_INVALID and a message giving
 * the position, and tl_map_expr_range against brute force over random small grids. */
#include <limits.h>

#include "runtime/runtime_impl.h"
#include "test_util.h"

/* A hand-written map: the block index of dim d at grid point g. */
typedef int64_t (*ref_fn)(int d, const int64_t *g);

static int64_t ref_identity(int d, const int64_t *g) { return g[d]; }
static int64_t ref_transpose(int d, const int64_t *g) { return d == 0 ? g[1] : g[0]; }
static int64_t ref_const(int d, const int64_t *g) { return d == 0 ? 0 : g[0]; }
static int64_t ref_offset(int d, const int64_t *g) { return g[0] + 1; }
static int64_t ref_affine(int d, const int64_t *g) { return 2 * g[0] - 1; }
static int64_t ref_gqa(int d, const int64_t *g) {
  const int64_t v[4] = {g[0], g[1] / 4, g[3], 0};
  return v[d];
}
static int64_t ref_multi(int d, const int64_t *g) {
  /* "i, j, k -> 3*i + j/2 - 4 + k*5 - j, -i - 7, 17" */
  const int64_t v[3] = {3 * g[0] + g[1] / 2 - 4 + 5 * g[2] - g[1], -g[0] - 7, 17};
  return v[d];
}
static int64_t ref_like(int d, const int64_t *g) {
  /* "a, b -> a + a + 2*a - b/3 + b/3 + b / 3, b/2 + 1 + 2 + 3" */
  const int64_t v[2] = {4 * g[0] + g[1] / 3, g[1] / 2 + 6};
  return v[d];
}

/* Parses src and checks tl_map_eval against ref at every point of grid (up to ~4096 points). */
static void check_good(const char *src, int gnd, const int64_t *grid, int tnd, ref_fn ref) {
  tl_map m;
  char msg[512] = "";
  tl_status s = tl_map_parse(src, gnd, tnd, &m, msg, sizeof msg);
  REQUIRE(s == TL_OK, "'%s' refused: %s", src, msg);
  CHECK(m.nvars == gnd && m.nexprs == tnd, "'%s': %d vars %d exprs", src, m.nvars, m.nexprs);
  int64_t total = 1;
  for (int a = 0; a < gnd; a++) total *= grid[a];
  int64_t g[TL_MAX_DIMS] = {0};
  int bad = 0;
  for (int64_t n = 0; n < total; n++) {
    int64_t r = n;
    for (int a = gnd - 1; a >= 0; a--) {
      g[a] = r % grid[a];
      r /= grid[a];
    }
    for (int d = 0; d < tnd; d++) {
      int64_t got = tl_map_eval(&m.e[d], g), want = ref(d, g);
      if (got != want && bad++ < 5)
        CHECK(got == want, "'%s' dim %d at point %lld: %lld, want %lld", src, d, (long long)n, (long long)got,
              (long long)want);
    }
  }
  CHECK(bad == 0, "'%s': %d wrong values", src, bad);
  /* the parsed form's invariants */
  for (int d = 0; d < tnd; d++)
    for (int t = 0; t < m.e[d].nterms; t++) {
      const tl_map_term *x = &m.e[d].t[t];
      CHECK(x->axis >= 0 && x->axis < gnd && x->div >= 1 && x->mul != 0, "'%s' term %d", src, t);
      for (int u = 0; u < t; u++)
        CHECK(!(m.e[d].t[u].axis == x->axis && m.e[d].t[u].div == x->div), "'%s': like terms kept", src);
    }
}

static void test_good_maps(void) {
  int64_t g2[] = {7, 5}, g1[] = {40}, g3[] = {6, 9, 4}, g4[] = {2, 9, 3, 5};
  check_good("i,j->i,j", 2, g2, 2, ref_identity);
  check_good("i, j -> i, j", 2, g2, 2, ref_identity);
  check_good("i,j->j,i", 2, g2, 2, ref_transpose);
  check_good("  i  ,\tj\n->\rj ,i  ", 2, g2, 2, ref_transpose);
  check_good("i->0,i", 1, g1, 2, ref_const);
  check_good("i->i+1", 1, g1, 1, ref_offset);
  check_good("i -> 1 + i", 1, g1, 1, ref_offset);
  check_good("i->2*i-1", 1, g1, 1, ref_affine);
  check_good("i -> i*2 - 1", 1, g1, 1, ref_affine);
  check_good("i -> -1 + 2 * i", 1, g1, 1, ref_affine);
  check_good("b,h,q,k->b, h/4, k, 0", 4, g4, 4, ref_gqa);
  check_good("i, j, k -> 3*i + j/2 - 4 + k*5 - j, -i - 7, 17", 3, g3, 3, ref_multi);
  check_good("a, b -> a + a + 2*a - b/3 + b/3 + b / 3, b/2 + 1 + 2 + 3", 2, g2, 2, ref_like);
  check_good("long_name_1, _x9 -> _x9, long_name_1", 2, g2, 2, ref_transpose);
}

/* Like terms are combined and cancelling terms dropped. */
static void test_combine(void) {
  tl_map m;
  char msg[256];
  REQUIRE(tl_map_parse("i, j -> i + i + j - 2*i + 3, j/2 + j / 2 - j/3", 2, 2, &m, msg, sizeof msg) == TL_OK,
          "%s", msg);
  CHECK(m.e[0].nterms == 1 && m.e[0].t[0].axis == 1 && m.e[0].t[0].mul == 1 && m.e[0].konst == 3,
        "expr 0: %d terms", m.e[0].nterms);
  CHECK(m.e[1].nterms == 2 && m.e[1].t[0].mul == 2 && m.e[1].t[0].div == 2 && m.e[1].t[1].mul == -1 &&
            m.e[1].t[1].div == 3,
        "expr 1: %d terms", m.e[1].nterms);
  CHECK(!tl_map_expr_uses(&m.e[0], 0) && tl_map_expr_uses(&m.e[0], 1), "uses");
  /* nine distinct terms on the way are too many, even if some cancel later */
  CHECK(tl_map_parse("i -> i + i/2 + i/3 + i/4 + i/5 + i/6 + i/7 + i/8 + i/9", 1, 1, &m, msg, sizeof msg) ==
                TL_ERR_INVALID &&
            strstr(msg, "position 51"),
        "%s", msg);
  CHECK(tl_map_parse("i -> i + i/2 + i/3 + i/4 + i/5 + i/6 + i/7 + i/8 + 2*i", 1, 1, &m, msg, sizeof msg) ==
            TL_OK,
        "%s", msg);
  /* NULL: block index 0 everywhere */
  memset(&m, 0x5a, sizeof m);
  REQUIRE(tl_map_parse(NULL, 3, 2, &m, msg, sizeof msg) == TL_OK, "NULL map");
  int64_t g[3] = {4, 5, 6};
  CHECK(m.nvars == 3 && m.nexprs == 2 && tl_map_eval(&m.e[0], g) == 0 && tl_map_eval(&m.e[1], g) == 0 &&
            m.e[0].nterms == 0,
        "NULL map is zeros");
  /* empty lists only where the grid / tensor has no dims */
  REQUIRE(tl_map_parse("-> 0, 1", 0, 2, &m, msg, sizeof msg) == TL_OK, "%s", msg);
  CHECK(tl_map_eval(&m.e[0], g) == 0 && tl_map_eval(&m.e[1], g) == 1, "0-axis grid");
  CHECK(tl_map_parse("  ->  ", 0, 0, &m, msg, sizeof msg) == TL_OK, "%s", msg);
  CHECK(tl_map_parse("i ->", 1, 0, &m, msg, sizeof msg) == TL_OK && m.nexprs == 0, "%s", msg);
  /* large but representable numbers */
  REQUIRE(tl_map_parse("i -> 9223372036854775807, -9223372036854775807 + i*0", 1, 2, &m, msg, sizeof msg) ==
              TL_OK,
          "%s", msg);
  CHECK(m.e[0].konst == INT64_MAX && m.e[1].konst == -INT64_MAX && m.e[1].nterms == 0, "big constants");
  CHECK(!tl_map_expr_uses(&m.e[1], 0), "0*i does not use i");
}

/* A bad map: TL_ERR_INVALID, "position <pos>" (pos >= 0) in the message, *out untouched. */
static void check_bad(const char *src, int gnd, int tnd, int pos, const char *why) {
  tl_map m, before;
  memset(&m, 0x33, sizeof m);
  before = m;
  char msg[512] = "";
  tl_status s = tl_map_parse(src, gnd, tnd, &m, msg, sizeof msg);
  CHECK(s == TL_ERR_INVALID, "'%s' gave %s", src, tl_status_name(s));
  CHECK(strstr(msg, "position") != NULL, "'%s': message '%s'", src, msg);
  CHECK(strstr(msg, src) != NULL, "'%s': message '%s' does not quote the map", src, msg);
  if (pos >= 0) {
    char want[64];
    snprintf(want, sizeof want, "position %d:", pos);
    CHECK(strstr(msg, want) != NULL, "'%s': message '%s', want %s", src, msg, want);
  }
  if (why) CHECK(strstr(msg, why) != NULL, "'%s': message '%s', want '%s'", src, msg, why);
  CHECK(memcmp(&m, &before, sizeof m) == 0, "'%s': output written on error", src);
}

static void test_bad_maps(void) {
  check_bad("i, j", 2, 2, 4, "'->'");
  check_bad("i, j i, j", 2, 2, 5, "expected ',' or '->'");
  check_bad("i, j -> i +", 2, 1, 11, "expected a term");
  check_bad("i,j->i+", 2, 1, 7, "expected a term");
  check_bad("i -> i", 2, 1, 2, "1 variable for a grid of 2 axes");
  check_bad("i, j, k -> i", 2, 1, 6, "more variables");
  check_bad("i, j -> i", 2, 2, 9, "1 expression for a tensor of 2 dims");
  check_bad("i, j -> i, j, 0", 2, 2, 14, "more expressions");
  check_bad("i, j -> i, j,", 2, 2, 13, "expected an expression");
  check_bad("i, j -> i, k", 2, 2, 11, "unknown variable 'k'");
  check_bad("i, i -> i, i", 2, 2, 3, "appears twice");
  check_bad("i -> i/0", 1, 1, 7, "division by zero");
  check_bad("i -> i / -2", 1, 1, 9, "positive");
  check_bad("i -> i/x", 1, 1, 7, "expected an integer");
  check_bad("i, j -> i*j", 2, 1, 10, "expected an integer after '*'");
  check_bad("i -> 2*3", 1, 1, 7, "expected a variable after '*'");
  check_bad("i -> 2*i/2", 1, 1, 8, "expected ','");
  check_bad("i -> i/2*3", 1, 1, 8, "expected ','");
  check_bad("i -> i 1", 1, 1, 7, "expected ','");
  check_bad("i -> i )", 1, 1, 7, NULL);
  check_bad("i -> i + -1", 1, 1, 9, "expected a term");
  check_bad("i -> --i", 1, 1, 6, "expected a term");
  check_bad("i -> 9223372036854775808", 1, 1, 5, "64 bits");
  check_bad("i -> 99999999999999999999999 * i", 1, 1, 5, "64 bits");
  check_bad("i -> 9223372036854775807 + 1", 1, 1, 27, "64 bits");
  check_bad("i -> -9223372036854775807 - 2", 1, 1, 28, "64 bits");
  check_bad("i -> 9223372036854775807*i + i", 1, 1, 29, "64 bits");
  check_bad("", 1, 1, 0, NULL);
  check_bad("", 0, 0, 0, NULL);
  check_bad("   ", 1, 1, 3, NULL);
  check_bad("-> 0", 1, 1, 0, "expected a variable name");
  check_bad("i -> 0", 0, 1, 0, "more variables");
  check_bad("i -> 0", 1, 0, 5, "more expressions");
  check_bad("1i -> i", 1, 1, 0, "expected a variable name");
  check_bad("i, -> i", 1, 1, 3, "expected a variable name");
  check_bad("i -> i,, i", 1, 2, 7, "expected a term");
  check_bad("i - > i", 1, 1, 2, NULL);
  check_bad("i -> é", 1, 1, 5, "expected a term");
  check_bad("a,b,c,d,e,f,g -> a", 6, 1, 12, "more variables");

  /* bad arguments (no text to point into) */
  tl_map m;
  char msg[256] = "";
  CHECK(tl_map_parse("i -> i", 1, 1, NULL, msg, sizeof msg) == TL_ERR_INVALID, "NULL out");
  CHECK(tl_map_parse("i -> i", -1, 1, &m, msg, sizeof msg) == TL_ERR_INVALID, "grid ndim -1");
  CHECK(tl_map_parse("i -> i", 1, TL_MAX_DIMS + 1, &m, msg, sizeof msg) == TL_ERR_INVALID, "tensor ndim 7");
  CHECK(tl_map_parse(NULL, 7, 1, &m, msg, sizeof msg) == TL_ERR_INVALID, "NULL map, grid ndim 7");
  /* msg may be NULL or tiny */
  CHECK(tl_map_parse("i ->", 1, 1, &m, NULL, 0) == TL_ERR_INVALID, "NULL msg");
  char tiny[8];
  CHECK(tl_map_parse("i ->", 1, 1, &m, tiny, sizeof tiny) == TL_ERR_INVALID && strlen(tiny) == 7, "tiny msg");
  /* a very long map is quoted shortened */
  char longmap[1200];
  snprintf(longmap, sizeof longmap, "i -> i");
  for (int n = 0; n < 200; n++) strcat(longmap, " + i");
  strcat(longmap, " +");
  char big[1024];
  CHECK(tl_map_parse(longmap, 1, 1, &m, big, sizeof big) == TL_ERR_INVALID && strstr(big, "...") &&
            strstr(big, "position 808"),
        "%s", big);
}

/* Brute-force min/max of e over the grid box. */
static void brute_range(const tl_map_expr *e, int gnd, const int64_t *grid, int64_t *lo, int64_t *hi) {
  int64_t total = 1;
  for (int a = 0; a < gnd; a++) total *= grid[a];
  int64_t g[TL_MAX_DIMS] = {0};
  for (int64_t n = 0; n < total; n++) {
    int64_t r = n;
    for (int a = gnd - 1; a >= 0; a--) {
      g[a] = r % grid[a];
      r /= grid[a];
    }
    int64_t v = tl_map_eval(e, g);
    if (n == 0 || v < *lo) *lo = v;
    if (n == 0 || v > *hi) *hi = v;
  }
}

static void test_range_random(void) {
  test_rng rng = {0x9e3779b97f4a7c15ull};
  int bad = 0;
  for (int it = 0; it < 3000; it++) {
    int gnd = (int)test_rng_int(&rng, 1, 4);
    int64_t grid[TL_MAX_DIMS] = {0};
    /* 1-D grids up to 6000 cover both the enumeration and the periodic case */
    for (int a = 0; a < gnd; a++)
      grid[a] = test_rng_int(&rng, 1, gnd == 1 && it % 3 == 0 ? 6000 : gnd <= 2 && it % 3 == 1 ? 40 : 9);
    /* build a random map text, so the parser is exercised too */
    char src[512];
    int len = 0;
    const char *names[] = {"i", "j", "k", "l"};
    for (int a = 0; a < gnd; a++)
      len += snprintf(src + len, sizeof src - len, "%s%s", a ? ", " : "", names[a]);
    len += snprintf(src + len, sizeof src - len, " -> ");
    int nterms = (int)test_rng_int(&rng, 1, 6);
    for (int t = 0; t < nterms; t++) {
      const char *op =
          t == 0 ? (test_rng_int(&rng, 0, 1) ? "-" : "") : (test_rng_int(&rng, 0, 1) ? " - " : " + ");
      const char *v = names[test_rng_int(&rng, 0, gnd - 1)];
      int64_t c = test_rng_int(&rng, 0, 7);
      switch (test_rng_int(&rng, 0, 3)) {
      case 0: len += snprintf(src + len, sizeof src - len, "%s%lld", op, (long long)c); break;
      case 1: len += snprintf(src + len, sizeof src - len, "%s%s", op, v); break;
      case 2: len += snprintf(src + len, sizeof src - len, "%s%lld*%s", op, (long long)c, v); break;
      default: len += snprintf(src + len, sizeof src - len, "%s%s/%lld", op, v, (long long)c + 1); break;
      }
    }
    tl_map m;
    char msg[512];
    tl_status s = tl_map_parse(src, gnd, 1, &m, msg, sizeof msg);
    if (s != TL_OK) {
      /* only the 8-distinct-terms rule can refuse these */
      CHECK(strstr(msg, "distinct terms") != NULL, "'%s': %s", src, msg);
      continue;
    }
    int64_t lo, hi, blo, bhi;
    tl_map_expr_range(&m.e[0], grid, &lo, &hi);
    brute_range(&m.e[0], gnd, grid, &blo, &bhi);
    if ((lo != blo || hi != bhi) && bad++ < 5)
      CHECK(0, "'%s' grid %lld,%lld,%lld,%lld: range [%lld, %lld], brute force [%lld, %lld]", src,
            (long long)grid[0], (long long)grid[1], (long long)grid[2], (long long)grid[3], (long long)lo,
            (long long)hi, (long long)blo, (long long)bhi);
  }
  CHECK(bad == 0, "%d wrong ranges", bad);
}

/* Axes larger than the enumeration limit: the periodic case is exact, and a bound always holds. */
static void test_range_large(void) {
  tl_map m;
  char msg[256];
  int64_t lo, hi;
  /* i - 2*(i/2) is i % 2: range [0, 1] however large the grid */
  REQUIRE(tl_map_parse("i -> i - 2*i + 0*i + i + 5", 1, 1, &m, msg, sizeof msg) == TL_OK, "%s", msg);
  int64_t big[1] = {1000000007};
  tl_map_expr_range(&m.e[0], big, &lo, &hi);
  CHECK(lo == 5 && hi == 5, "cancelled: [%lld, %lld]", (long long)lo, (long long)hi);
  REQUIRE(tl_map_parse("i -> i - i/2 - i/2", 1, 1, &m, msg, sizeof msg) == TL_OK, "%s", msg);
  tl_map_expr_range(&m.e[0], big, &lo, &hi);
  CHECK(lo == 0 && hi == 1, "i %% 2: [%lld, %lld]", (long long)lo, (long long)hi);
  /* i - i/2 = ceil(i/2), monotone but mixed signs: exact via the period 2 */
  REQUIRE(tl_map_parse("i -> i - i/2", 1, 1, &m, msg, sizeof msg) == TL_OK, "%s", msg);
  tl_map_expr_range(&m.e[0], big, &lo, &hi);
  CHECK(lo == 0 && hi == 500000003, "ceil(i/2): [%lld, %lld]", (long long)lo, (long long)hi);
  /* divisors with a huge lcm: conservative, still a bound containing the true values */
  REQUIRE(tl_map_parse("i -> i/4999 - i/4993", 1, 1, &m, msg, sizeof msg) == TL_OK, "%s", msg);
  int64_t g[1] = {100000};
  tl_map_expr_range(&m.e[0], g, &lo, &hi);
  int64_t blo, bhi;
  brute_range(&m.e[0], 1, g, &blo, &bhi);
  CHECK(lo <= blo && hi >= bhi, "bound [%lld, %lld] vs [%lld, %lld]", (long long)lo, (long long)hi,
        (long long)blo, (long long)bhi);
  /* several axes, each monotone */
  REQUIRE(tl_map_parse("i, j -> 3*i - j + 2", 2, 1, &m, msg, sizeof msg) == TL_OK, "%s", msg);
  int64_t g2[2] = {1 << 20, 1 << 30};
  tl_map_expr_range(&m.e[0], g2, &lo, &hi);
  CHECK(lo == 2 - ((1 << 30) - 1) && hi == 3 * ((1 << 20) - 1) + 2, "[%lld, %lld]", (long long)lo,
        (long long)hi);
  /* values beyond int64 are clamped, not wrapped */
  REQUIRE(tl_map_parse("i, j -> 9223372036854775807*i + 9223372036854775807*j", 2, 1, &m, msg, sizeof msg) ==
              TL_OK,
          "%s", msg);
  tl_map_expr_range(&m.e[0], g2, &lo, &hi);
  CHECK(lo == 0 && hi == INT64_MAX, "clamped: [%lld, %lld]", (long long)lo, (long long)hi);
  REQUIRE(tl_map_parse("i -> -9223372036854775807*i - 9223372036854775807", 1, 1, &m, msg, sizeof msg) ==
              TL_OK,
          "%s", msg);
  tl_map_expr_range(&m.e[0], g2, &lo, &hi);
  CHECK(lo == INT64_MIN && hi == -INT64_MAX, "clamped low: [%lld, %lld]", (long long)lo, (long long)hi);
  /* a constant expression and a size-1 grid */
  REQUIRE(tl_map_parse("i -> -4", 1, 1, &m, msg, sizeof msg) == TL_OK, "%s", msg);
  int64_t one[1] = {1};
  tl_map_expr_range(&m.e[0], one, &lo, &hi);
  CHECK(lo == -4 && hi == -4, "constant");
}

int main(void) {
  RUN(test_good_maps);
  RUN(test_combine);
  RUN(test_bad_maps);
  RUN(test_range_random);
  RUN(test_range_large);
  return test_summary("runtime_map");
}
