/* map.c — index maps: the parser for the BlockSpec map grammar (include/tilec_kernel.h) and the
 * range and dependence queries the executor uses to check a plan before running it.
 *
 *   map  := vars "->" exprs          vars  := ident ("," ident)*      exprs := expr ("," expr)*
 *   expr := ["-"] term (("+" | "-") term)*
 *   term := int | ident | int "*" ident | ident "*" int | ident "/" int
 *
 * Lexical rules: spaces (blank, tab, newline, carriage return) may appear between any two tokens;
 * identifiers are [A-Za-z_][A-Za-z0-9_]*; integers are unsigned decimal and must fit in int64.
 *
 * Decisions the grammar leaves open (tests in tests/runtime/test_map.c pin them):
 * - The vars list may be empty only for a grid of 0 axes ("-> 0, 1"); the exprs list may be
 *   empty only for a tensor of 0 dims ("i ->"). The empty string is always an error: pass NULL
 *   for "block index 0 in every dim".
 * - "int * int" ("2*3") is rejected: after "int *" a variable must follow. "ident * ident" is
 *   rejected likewise (the map is affine). A sign may not follow "+" or "-" ("i + -1" is an error).
 * - "ident / int" needs int > 0; "/0" and "/-2" are errors. A term ends after its last operand:
 *   "2*i/2" and "i/2*3" are errors.
 * - Variables are distinct; an identifier in an expression must be a variable.
 *
 * Invariants of a parsed tl_map (what tl_map_eval and the executor rely on):
 * - nvars == grid_ndim, nexprs == tensor_ndim, every term's axis < nvars.
 * - Within an expression the terms have distinct (axis, div) pairs (like terms are combined, in
 *   order of first appearance), div >= 1 and mul != 0 (terms that cancel are dropped); at most
 *   TL_MAP_MAX_TERMS distinct terms may appear before cancellation.
 * - konst and every mul fit in int64 (overflow is a parse error, never wraps).
 *
 * Every parse error is TL_ERR_INVALID with "map '<text>': position <n>: <reason>", n the 0-based
 * character position of the offending token (or of the end of the text). *out is written only on
 * success. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "runtime_impl.h"

/* ---- the parser's state ---- */

typedef struct tl_map_parser {
  const char *src;
  size_t pos;
  char *msg;
  size_t msg_size;
  int nvars;
  size_t var_at[TL_MAX_DIMS], var_len[TL_MAX_DIMS]; /* each variable's name: src[at .. at+len) */
} tl_map_parser;

/* Writes "map '<text>': position <pos>: <reason>" into the parser's msg buffer and returns
 * TL_ERR_INVALID. Text longer than 200 characters is shortened with "...". */
static tl_status tl_map_fail(tl_map_parser *mp, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static tl_status tl_map_fail(tl_map_parser *mp, size_t pos, const char *fmt, ...) {
  if (!mp->msg || !mp->msg_size) return TL_ERR_INVALID;
  char reason[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  size_t len = strlen(mp->src);
  int shown = len > 200 ? 200 : (int)len;
  tl_msg(mp->msg, mp->msg_size, "map '%.*s%s': position %zu: %s", shown, mp->src, len > 200 ? "..." : "", pos,
         reason);
  return TL_ERR_INVALID;
}

/* Character classes of the grammar (ASCII only; any other byte is a syntax error). */
static int tl_map_is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static int tl_map_is_digit(char c) { return c >= '0' && c <= '9'; }
static int tl_map_is_ident0(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
static int tl_map_is_ident1(char c) { return tl_map_is_ident0(c) || tl_map_is_digit(c); }

/* Skips spaces; returns the next character ('\0' at the end). */
static char tl_map_peek(tl_map_parser *mp) {
  while (tl_map_is_space(mp->src[mp->pos])) mp->pos++;
  return mp->src[mp->pos];
}

/* Consumes an identifier at the current position (spaces already skipped); returns its length. */
static size_t tl_map_ident(tl_map_parser *mp) {
  size_t at = mp->pos;
  while (tl_map_is_ident1(mp->src[mp->pos])) mp->pos++;
  return mp->pos - at;
}

/* Consumes a decimal integer at the current position (a digit is there) into *out. */
static tl_status tl_map_int(tl_map_parser *mp, int64_t *out) {
  size_t at = mp->pos;
  int64_t v = 0;
  while (tl_map_is_digit(mp->src[mp->pos])) {
    if (tl_mul_ovf(v, 10, &v) || tl_add_ovf(v, mp->src[mp->pos] - '0', &v))
      return tl_map_fail(mp, at, "integer does not fit in 64 bits");
    mp->pos++;
  }
  *out = v;
  return TL_OK;
}

/* The axis of the variable named src[at .. at+len), or -1. */
static int tl_map_lookup(const tl_map_parser *mp, size_t at, size_t len) {
  for (int v = 0; v < mp->nvars; v++)
    if (mp->var_len[v] == len && memcmp(mp->src + mp->var_at[v], mp->src + at, len) == 0) return v;
  return -1;
}

/* Adds mul * floor(g[axis] / div) to e, combining it with a like term (same axis and div). */
static tl_status tl_map_add_term(tl_map_parser *mp, size_t at, tl_map_expr *e, int axis, int64_t mul,
                                 int64_t div) {
  for (int t = 0; t < e->nterms; t++) {
    if (e->t[t].axis == axis && e->t[t].div == div) {
      if (tl_add_ovf(e->t[t].mul, mul, &e->t[t].mul))
        return tl_map_fail(mp, at, "coefficient does not fit in 64 bits");
      return TL_OK;
    }
  }
  if (e->nterms == TL_MAP_MAX_TERMS)
    return tl_map_fail(mp, at, "more than %d distinct terms in one expression", TL_MAP_MAX_TERMS);
  e->t[e->nterms++] = (tl_map_term){.axis = axis, .mul = mul, .div = div};
  return TL_OK;
}

/* term := int | ident | int "*" ident | ident "*" int | ident "/" int, added to e with sign. */
static tl_status tl_map_term_parse(tl_map_parser *mp, tl_map_expr *e, int64_t sign) {
  char c = tl_map_peek(mp);
  size_t at = mp->pos;
  tl_status s;
  if (tl_map_is_digit(c)) {
    int64_t n = 0;
    if ((s = tl_map_int(mp, &n)) != TL_OK) return s;
    if (tl_map_peek(mp) != '*') {
      if (tl_add_ovf(e->konst, sign * n, &e->konst))
        return tl_map_fail(mp, at, "constant does not fit in 64 bits");
      return TL_OK;
    }
    mp->pos++;
    tl_map_peek(mp);
    size_t vat = mp->pos;
    if (!tl_map_is_ident0(mp->src[vat])) return tl_map_fail(mp, vat, "expected a variable after '*'");
    size_t len = tl_map_ident(mp);
    int axis = tl_map_lookup(mp, vat, len);
    if (axis < 0) return tl_map_fail(mp, vat, "unknown variable '%.*s'", (int)len, mp->src + vat);
    return tl_map_add_term(mp, at, e, axis, sign * n, 1);
  }
  if (!tl_map_is_ident0(c)) return tl_map_fail(mp, at, "expected a term");
  size_t len = tl_map_ident(mp);
  int axis = tl_map_lookup(mp, at, len);
  if (axis < 0) return tl_map_fail(mp, at, "unknown variable '%.*s'", (int)len, mp->src + at);
  char op = tl_map_peek(mp);
  if (op != '*' && op != '/') return tl_map_add_term(mp, at, e, axis, sign, 1);
  mp->pos++;
  tl_map_peek(mp);
  size_t nat = mp->pos;
  if (op == '/' && mp->src[nat] == '-') return tl_map_fail(mp, nat, "divisor must be positive");
  if (!tl_map_is_digit(mp->src[nat])) return tl_map_fail(mp, nat, "expected an integer after '%c'", op);
  int64_t n = 0;
  if ((s = tl_map_int(mp, &n)) != TL_OK) return s;
  if (op == '/') {
    if (n == 0) return tl_map_fail(mp, nat, "division by zero");
    return tl_map_add_term(mp, at, e, axis, sign, n);
  }
  return tl_map_add_term(mp, at, e, axis, sign * n, 1);
}

/* expr := ["-"] term (("+" | "-") term)*; drops terms that cancelled to 0. */
static tl_status tl_map_expr_parse(tl_map_parser *mp, tl_map_expr *e) {
  memset(e, 0, sizeof *e);
  int64_t sign = 1;
  if (tl_map_peek(mp) == '-') {
    sign = -1;
    mp->pos++;
  }
  for (;;) {
    tl_status s = tl_map_term_parse(mp, e, sign);
    if (s != TL_OK) return s;
    char c = tl_map_peek(mp);
    if (c != '+' && c != '-') break;
    sign = c == '-' ? -1 : 1;
    mp->pos++;
  }
  int n = 0;
  for (int t = 0; t < e->nterms; t++)
    if (e->t[t].mul != 0) e->t[n++] = e->t[t];
  for (int t = n; t < e->nterms; t++) e->t[t] = (tl_map_term){0, 0, 0};
  e->nterms = n;
  return TL_OK;
}

/* vars := ident ("," ident)* followed by "->" (an empty list only for a 0-axis grid). */
static tl_status tl_map_vars_parse(tl_map_parser *mp, int grid_ndim) {
  char c = tl_map_peek(mp);
  if (!(c == '-' && mp->src[mp->pos + 1] == '>' && grid_ndim == 0)) {
    for (;;) {
      size_t at = mp->pos;
      if (!tl_map_is_ident0(mp->src[at])) return tl_map_fail(mp, at, "expected a variable name");
      size_t len = tl_map_ident(mp);
      if (tl_map_lookup(mp, at, len) >= 0)
        return tl_map_fail(mp, at, "variable '%.*s' appears twice", (int)len, mp->src + at);
      if (mp->nvars >= grid_ndim)
        return tl_map_fail(mp, at, "more variables than the grid's %d axes", grid_ndim);
      mp->var_at[mp->nvars] = at;
      mp->var_len[mp->nvars] = len;
      mp->nvars++;
      c = tl_map_peek(mp);
      if (c != ',') break;
      mp->pos++;
      tl_map_peek(mp);
    }
  }
  if (!(mp->src[mp->pos] == '-' && mp->src[mp->pos + 1] == '>'))
    return tl_map_fail(mp, mp->pos, mp->nvars ? "expected ',' or '->'" : "expected '->'");
  if (mp->nvars != grid_ndim)
    return tl_map_fail(mp, mp->pos, "%d variable%s for a grid of %d axes", mp->nvars,
                       mp->nvars == 1 ? "" : "s", grid_ndim);
  mp->pos += 2;
  return TL_OK;
}

/* Parses src (see the opening comment); NULL src maps every grid point to block index 0. */
tl_status tl_map_parse(const char *src, int grid_ndim, int tensor_ndim, tl_map *out, char *msg,
                       size_t msg_size) {
  if (!out) {
    tl_msg(msg, msg_size, "map: the output map is NULL");
    return TL_ERR_INVALID;
  }
  if (grid_ndim < 0 || grid_ndim > TL_MAX_DIMS || tensor_ndim < 0 || tensor_ndim > TL_MAX_DIMS) {
    tl_msg(msg, msg_size, "map '%.200s': grid of %d axes, tensor of %d dims (each 0..%d)",
           src ? src : "(null)", grid_ndim, tensor_ndim, TL_MAX_DIMS);
    return TL_ERR_INVALID;
  }
  tl_map m;
  memset(&m, 0, sizeof m);
  m.nvars = grid_ndim;
  m.nexprs = tensor_ndim;
  if (!src) {
    *out = m;
    return TL_OK;
  }
  tl_map_parser mp = {.src = src, .msg = msg, .msg_size = msg_size};
  tl_status s = tl_map_vars_parse(&mp, grid_ndim);
  if (s != TL_OK) return s;
  int n = 0;
  if (!(tl_map_peek(&mp) == '\0' && tensor_ndim == 0)) {
    for (;;) {
      if (n > 0 && tl_map_peek(&mp) == '\0')
        return tl_map_fail(&mp, mp.pos, "expected an expression after ','");
      if (n == tensor_ndim)
        return tl_map_fail(&mp, mp.pos, "more expressions than the tensor's %d dims", tensor_ndim);
      if ((s = tl_map_expr_parse(&mp, &m.e[n])) != TL_OK) return s;
      n++;
      char c = tl_map_peek(&mp);
      if (c == '\0') break;
      if (c != ',') return tl_map_fail(&mp, mp.pos, "expected ',', '+', '-' or the end");
      mp.pos++;
    }
  }
  if (n != tensor_ndim)
    return tl_map_fail(&mp, mp.pos, "%d expression%s for a tensor of %d dims", n, n == 1 ? "" : "s",
                       tensor_ndim);
  *out = m;
  return TL_OK;
}

/* ---- range and dependence ---- */

/* Products and sums below are in __int128 with each product clamped to +-2^120, so sums of up to
 * 2^6 of them cannot overflow; results are clamped to int64 at the end. */
#define TL_MAP_BIG ((__int128)1 << 120)

/* v clamped to +-2^120. */
static __int128 tl_map_clamp(__int128 v) {
  return v > TL_MAP_BIG ? TL_MAP_BIG : v < -TL_MAP_BIG ? -TL_MAP_BIG : v;
}

/* mul * floor(x / div) for x >= 0, clamped. */
static __int128 tl_map_term_at(const tl_map_term *t, int64_t x) {
  return tl_map_clamp((__int128)t->mul * (x / t->div));
}

/* Sum over the n terms ts[] (one axis) at axis value x. */
static __int128 tl_map_axis_at(const tl_map_term *const *ts, int n, int64_t x) {
  __int128 v = 0;
  for (int i = 0; i < n; i++) v += tl_map_term_at(ts[i], x);
  return tl_map_clamp(v);
}

/* Largest axis extent enumerated exactly, and largest period (lcm of the divisors) used. */
#define TL_MAP_ENUM_MAX 4096

/* Min and max over x in [0, g) of f(x) = sum of the n terms ts[] sharing one axis.
 * - All muls of one sign: f is monotone, the extremes are f(0) and f(g-1).
 * - Mixed signs, g <= 4096: every x is evaluated.
 * - Mixed signs, larger g, L = lcm(divs) <= 4096: f(q*L + r) = f(r) + q*s with s = f(L), linear
 *   in q, so for each residue r the extremes are at q = 0 and the largest q: exact.
 * - Otherwise a conservative bound: each term's own extremes added up (lo <= true min, hi >= true
 *   max). The executor then may refuse a map whose true range is fine; no such map is known to
 *   be useful. */
static void tl_map_axis_range(const tl_map_term *const *ts, int n, int64_t g, __int128 *lo, __int128 *hi) {
  int pos = 0, neg = 0;
  for (int i = 0; i < n; i++) {
    if (ts[i]->mul > 0)
      pos = 1;
    else
      neg = 1;
  }
  if (!(pos && neg)) {
    __int128 a = tl_map_axis_at(ts, n, 0), b = tl_map_axis_at(ts, n, g - 1);
    *lo = a < b ? a : b;
    *hi = a < b ? b : a;
    return;
  }
  __int128 mn = tl_map_axis_at(ts, n, 0), mx = mn;
  if (g <= TL_MAP_ENUM_MAX) {
    for (int64_t x = 1; x < g; x++) {
      __int128 v = tl_map_axis_at(ts, n, x);
      if (v < mn) mn = v;
      if (v > mx) mx = v;
    }
    *lo = mn;
    *hi = mx;
    return;
  }
  int64_t l = 1;
  for (int i = 0; i < n && l <= TL_MAP_ENUM_MAX; i++) {
    int64_t a = l, b = ts[i]->div;
    while (b) {
      int64_t t = a % b;
      a = b;
      b = t;
    }
    l = ts[i]->div > TL_MAP_ENUM_MAX ? TL_MAP_ENUM_MAX + 1 : l / a * ts[i]->div;
  }
  if (l <= TL_MAP_ENUM_MAX) { /* here g > 4096 >= l, so every residue r < l occurs */
    __int128 s = tl_map_axis_at(ts, n, l);
    for (int64_t r = 0; r < l; r++) {
      __int128 v0 = tl_map_axis_at(ts, n, r);
      __int128 v1 = tl_map_clamp(v0 + tl_map_clamp(s * (__int128)((g - 1 - r) / l)));
      __int128 a = v0 < v1 ? v0 : v1, b = v0 < v1 ? v1 : v0;
      if (a < mn) mn = a;
      if (b > mx) mx = b;
    }
    *lo = mn;
    *hi = mx;
    return;
  }
  *lo = *hi = 0;
  for (int i = 0; i < n; i++) {
    __int128 a = tl_map_term_at(ts[i], 0), b = tl_map_term_at(ts[i], g - 1);
    *lo += a < b ? a : b;
    *hi += a < b ? b : a;
  }
}

/* Smallest and largest value of e over the grid box [0, grid[a]) (see tl_map_axis_range for how
 * exact it is). The axes are independent, so the box's extremes are the constant plus each axis's
 * extremes. Values beyond int64 are clamped to INT64_MIN / INT64_MAX. A grid size below 1 is
 * treated as 1. */
void tl_map_expr_range(const tl_map_expr *e, const int64_t *grid, int64_t *lo, int64_t *hi) {
  __int128 l = e->konst, h = e->konst;
  for (int a = 0; a < TL_MAX_DIMS; a++) {
    const tl_map_term *ts[TL_MAP_MAX_TERMS];
    int n = 0;
    for (int t = 0; t < e->nterms; t++)
      if (e->t[t].axis == a && e->t[t].mul != 0) ts[n++] = &e->t[t];
    if (!n) continue;
    int64_t g = grid[a] < 1 ? 1 : grid[a];
    __int128 al, ah;
    tl_map_axis_range(ts, n, g, &al, &ah);
    l += al;
    h += ah;
  }
  *lo = l < INT64_MIN ? INT64_MIN : l > INT64_MAX ? INT64_MAX : (int64_t)l;
  *hi = h < INT64_MIN ? INT64_MIN : h > INT64_MAX ? INT64_MAX : (int64_t)h;
}

/* 1 when e depends on grid axis `axis` (some term on it with a nonzero coefficient). */
int tl_map_expr_uses(const tl_map_expr *e, int axis) {
  for (int t = 0; t < e->nterms; t++)
    if (e->t[t].axis == axis && e->t[t].mul != 0) return 1;
  return 0;
}
