/* tile.c — the public tile operations (include/tilec_tile.h): argument checks and dispatch.
 *
 * Each op checks its refs exactly once, here, so the ISA paths see only valid arguments:
 * - a ref is non-NULL, has a known dtype, 0..TL_MAX_DIMS dims (dot: exactly 2), sizes >= 0 whose
 *   product fits in int64, data non-NULL unless it has no elements, and a valid layout (tiled:
 *   at least 2 dims, tile_r and tile_c > 0, vnni 0/1/2/4 dividing tile_r);
 * - op-specific rules (below, at each op) on shapes, dtypes and layouts.
 * Misuse is reported with tl_prog_fail on the program (tl_tile_dot: its p argument; the others:
 * tl_prog_current()), with a message naming the op, the operand and the numbers; the op then does
 * nothing. Outside a body (program NULL) misuse is silently ignored, again touching nothing.
 *
 * Dispatch: the implementations are tried from the program's ISA level (outside a body: only the
 * scalar reference, since no context says which paths are allowed) down to TL_ISA_SCALAR; the first whose function is non-NULL and returns 1 has done
 * the work. The scalar reference accepts everything that passes the checks.
 *
 * Strides are not checked: a row-major output whose strides make distinct indices share memory
 * (a zero stride, overlapping rows) gets one of the values written there; an output that
 * partially overlaps an input gives unspecified results (dst equal to an input, same strides, is
 * allowed where the op says so). */
#include <stdarg.h>
#include <stdio.h>

#include "tile_impl.h"

/* ---- names ---- */

static const char *const tl_unary_names[] = {
#define TL_X_(e, n) [e] = n,
    TL_UNARY_LIST(TL_X_)
#undef TL_X_
};
_Static_assert(TL_ARRAY_LEN(tl_unary_names) == TL_UNARY_COUNT, "unary table out of sync");

static const char *const tl_binary_names[] = {
#define TL_X_(e, n) [e] = n,
    TL_BINARY_LIST(TL_X_)
#undef TL_X_
};
_Static_assert(TL_ARRAY_LEN(tl_binary_names) == TL_BINARY_COUNT, "binary table out of sync");

static const char *const tl_reduce_names[] = {
#define TL_X_(e, n) [e] = n,
    TL_REDUCE_LIST(TL_X_)
#undef TL_X_
};
_Static_assert(TL_ARRAY_LEN(tl_reduce_names) == TL_REDUCE_COUNT, "reduce table out of sync");

/* "exp"; "unknown" outside the table. */
const char *tl_unary_name(tl_unary op) {
  return (unsigned)op < TL_UNARY_COUNT ? tl_unary_names[op] : "unknown";
}
/* "add"; "unknown" outside the table. */
const char *tl_binary_name(tl_binary op) {
  return (unsigned)op < TL_BINARY_COUNT ? tl_binary_names[op] : "unknown";
}
/* "sum"; "unknown" outside the table. */
const char *tl_reduce_name(tl_reduce op) {
  return (unsigned)op < TL_REDUCE_COUNT ? tl_reduce_names[op] : "unknown";
}

/* ---- reporting misuse ---- */

/* Formats the message and fails the program; nothing when p is NULL. Returns 0 (for "return
 * tl_tile_misuse(...)" in the checks). */
static int tl_tile_misuse(const tl_prog *p, tl_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int tl_tile_misuse(const tl_prog *p, tl_status s, const char *fmt, ...) {
  if (!p) return 0;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  tl_prog_fail(p, s, msg);
  return 0;
}

/* A shape as "[3, 4]" ("[]" for 0 dims) in buf. */
typedef struct tl_shape_str {
  char s[128];
} tl_shape_str;
static tl_shape_str tl_shape_fmt(int ndim, const int64_t *shape) {
  tl_shape_str r;
  int n = snprintf(r.s, sizeof r.s, "[");
  for (int d = 0; d < ndim && d < TL_MAX_DIMS; d++)
    n += snprintf(r.s + n, sizeof r.s - (size_t)n, "%s%lld", d ? ", " : "", (long long)shape[d]);
  snprintf(r.s + n, sizeof r.s - (size_t)n, "]");
  return r;
}
#define TL_SHAPE(r) (tl_shape_fmt((r)->ndim, (r)->shape).s)

/* 1 for f32, f16, bf16. */
static int tl_is_float(tl_dtype dt) { return dt == TL_F32 || dt == TL_F16 || dt == TL_BF16; }

/* ---- checks shared by the ops ---- */

/* The generic ref rules (see the opening comment). rowmajor: the op needs a row-major ref. */
static int tl_tile_check_ref(const tl_prog *p, const char *op, const char *what, const tl_ref *r,
                             int rowmajor) {
  if (!r) return tl_tile_misuse(p, TL_ERR_INVALID, "%s: %s is NULL", op, what);
  if (r->dtype <= TL_DTYPE_INVALID || (unsigned)r->dtype >= TL_DTYPE_COUNT)
    return tl_tile_misuse(p, TL_ERR_DTYPE, "%s: %s has an invalid dtype (%d)", op, what, (int)r->dtype);
  if (r->ndim < 0 || r->ndim > TL_MAX_DIMS)
    return tl_tile_misuse(p, TL_ERR_SHAPE, "%s: %s has %d dims (0..%d)", op, what, r->ndim, TL_MAX_DIMS);
  int64_t n = 1;
  for (int d = 0; d < r->ndim; d++) {
    if (r->shape[d] < 0)
      return tl_tile_misuse(p, TL_ERR_SHAPE, "%s: %s is %s, a negative size", op, what, TL_SHAPE(r));
    if (tl_mul_ovf(n, r->shape[d], &n))
      return tl_tile_misuse(p, TL_ERR_SHAPE, "%s: %s is %s, too many elements", op, what, TL_SHAPE(r));
  }
  if (!r->data && n > 0) return tl_tile_misuse(p, TL_ERR_INVALID, "%s: %s has no data", op, what);
  const tl_layout *l = &r->layout;
  if (l->tiled) {
    if (rowmajor)
      return tl_tile_misuse(p, TL_ERR_INVALID, "%s: %s must be row-major (it is tiled %ux%u)", op, what,
                            (unsigned)l->tile_r, (unsigned)l->tile_c);
    int v = l->vnni ? l->vnni : 1;
    if (r->ndim < 2 || !l->tile_r || !l->tile_c || (v != 1 && v != 2 && v != 4) || l->tile_r % v)
      return tl_tile_misuse(p, TL_ERR_INVALID,
                            "%s: %s has a bad tiled layout (%d dims, tiles %ux%u, vnni %u)", op, what,
                            r->ndim, (unsigned)l->tile_r, (unsigned)l->tile_c, (unsigned)l->vnni);
  }
  return 1;
}

/* 1 when x and y have the same ndim and sizes. */
static int tl_same_shape(const tl_ref *x, const tl_ref *y) {
  if (x->ndim != y->ndim) return 0;
  for (int d = 0; d < x->ndim; d++)
    if (x->shape[d] != y->shape[d]) return 0;
  return 1;
}

/* The ISA level to start dispatch at: the program's; outside a body no context says which paths
 * are allowed (TILEC_ISA caps a context), so the scalar reference runs. */
static tl_isa tl_tile_start(const tl_prog *p) {
  tl_isa isa = p ? tl_prog_isa(p) : TL_ISA_SCALAR;
  if ((int)isa < 0) isa = TL_ISA_SCALAR;
  if ((int)isa >= TL_ISA_COUNT) isa = (tl_isa)(TL_ISA_COUNT - 1);
  return isa;
}

/* Reports that no implementation took a checked call (cannot happen while the scalar reference
 * accepts everything). */
static void tl_tile_unhandled(const tl_prog *p, const char *op) {
  tl_tile_misuse(p, TL_ERR_INTERNAL, "%s: no implementation handled the call", op);
}

/* ---- dot ---- */

/* acc (+)= a @ b. Rules: 2-D refs; acc row-major; a row-major or tiled with vnni 1; b row-major
 * or tiled (any vnni), row-major with TL_DOT_TRANS_B; a and b of one floating dtype with acc f32,
 * or both 8-bit integers (i8/u8, mixed allowed) with acc i32; K and the acc shape agree; no
 * flags beyond TL_DOT_ACCUMULATE | TL_DOT_TRANS_B. */
void tl_tile_dot(const tl_prog *p, tl_ref *acc, const tl_ref *a, const tl_ref *b, unsigned flags) {
  const char *op = "tl_tile_dot";
  if (!tl_tile_check_ref(p, op, "acc", acc, 1) || !tl_tile_check_ref(p, op, "a", a, 0) ||
      !tl_tile_check_ref(p, op, "b", b, 0))
    return;
  if (flags & ~(unsigned)(TL_DOT_ACCUMULATE | TL_DOT_TRANS_B)) {
    tl_tile_misuse(p, TL_ERR_INVALID, "%s: unknown flags 0x%x", op, flags);
    return;
  }
  if ((flags & TL_DOT_TRANS_B) && b->layout.tiled) {
    tl_tile_misuse(p, TL_ERR_INVALID, "%s: b is tiled %ux%u, but TL_DOT_TRANS_B needs a row-major b", op,
                   (unsigned)b->layout.tile_r, (unsigned)b->layout.tile_c);
    return;
  }
  const tl_ref *refs[3] = {acc, a, b};
  const char *names[3] = {"acc", "a", "b"};
  for (int i = 0; i < 3; i++) {
    if (refs[i]->ndim != 2) {
      tl_tile_misuse(p, TL_ERR_SHAPE, "%s: %s is %s, expected 2 dims", op, names[i], TL_SHAPE(refs[i]));
      return;
    }
  }
  if (a->layout.tiled && a->layout.vnni > 1) {
    tl_tile_misuse(p, TL_ERR_INVALID, "%s: a is tiled with vnni %u (only 1 is allowed for a)", op,
                   (unsigned)a->layout.vnni);
    return;
  }
  int fa = tl_is_float(a->dtype), fb = tl_is_float(b->dtype);
  int ok;
  if (fa || fb)
    ok = a->dtype == b->dtype && acc->dtype == TL_F32;
  else
    ok = a->dtype != TL_I32 && b->dtype != TL_I32 && acc->dtype == TL_I32;
  if (!ok) {
    tl_tile_misuse(p, TL_ERR_DTYPE,
                   "%s: acc %s, a %s, b %s (a and b share a floating dtype with acc f32, or are i8/u8 "
                   "with acc i32)",
                   op, tl_dtype_name(acc->dtype), tl_dtype_name(a->dtype), tl_dtype_name(b->dtype));
    return;
  }
  int tb = (flags & TL_DOT_TRANS_B) != 0;
  int64_t m = a->shape[0], k = a->shape[1];
  int64_t bk = tb ? b->shape[1] : b->shape[0], n = tb ? b->shape[0] : b->shape[1];
  if (bk != k) {
    tl_tile_misuse(p, TL_ERR_SHAPE, "%s: a is %s but b is %s%s", op, TL_SHAPE(a), TL_SHAPE(b),
                   tb ? " with TL_DOT_TRANS_B" : "");
    return;
  }
  if (acc->shape[0] != m || acc->shape[1] != n) {
    tl_tile_misuse(p, TL_ERR_SHAPE, "%s: acc is %s but a @ b is [%lld, %lld]", op, TL_SHAPE(acc),
                   (long long)m, (long long)n);
    return;
  }
  for (int isa = tl_tile_start(p); isa >= TL_ISA_SCALAR; isa--) {
    const tl_tile_impl *impl = tl_tile_impl_at((tl_isa)isa);
    if (impl && impl->dot && impl->dot(acc, a, b, flags)) return;
  }
  tl_tile_unhandled(p, op);
}

/* ---- fill and cast ---- */

/* r's whole block set to v (tiled refs: every tile in full, padding included). */
void tl_tile_fill(tl_ref *r, double v) {
  const tl_prog *p = tl_prog_current();
  if (!tl_tile_check_ref(p, "tl_tile_fill", "r", r, 0)) return;
  for (int isa = tl_tile_start(p); isa >= TL_ISA_SCALAR; isa--) {
    const tl_tile_impl *impl = tl_tile_impl_at((tl_isa)isa);
    if (impl && impl->fill && impl->fill(r, v)) return;
  }
  tl_tile_unhandled(p, "tl_tile_fill");
}

/* dst = src converted. Rules: same shape; any dtypes; any layouts (tiled dst: the padding inside
 * its tiles is not written). */
void tl_tile_cast(tl_ref *dst, const tl_ref *src) {
  const tl_prog *p = tl_prog_current();
  const char *op = "tl_tile_cast";
  if (!tl_tile_check_ref(p, op, "dst", dst, 0) || !tl_tile_check_ref(p, op, "src", src, 0)) return;
  if (!tl_same_shape(dst, src)) {
    tl_tile_misuse(p, TL_ERR_SHAPE, "%s: dst is %s but src is %s", op, TL_SHAPE(dst), TL_SHAPE(src));
    return;
  }
  for (int isa = tl_tile_start(p); isa >= TL_ISA_SCALAR; isa--) {
    const tl_tile_impl *impl = tl_tile_impl_at((tl_isa)isa);
    if (impl && impl->cast && impl->cast(dst, src)) return;
  }
  tl_tile_unhandled(p, op);
}

/* ---- elementwise ---- */

/* dst = op(src). Rules: a known op; both row-major, same shape, any dtypes. */
void tl_tile_unary(tl_ref *dst, const tl_ref *src, tl_unary uop) {
  const tl_prog *p = tl_prog_current();
  const char *op = "tl_tile_unary";
  if ((unsigned)uop >= TL_UNARY_COUNT) {
    tl_tile_misuse(p, TL_ERR_INVALID, "%s: unknown op %d", op, (int)uop);
    return;
  }
  if (!tl_tile_check_ref(p, op, "dst", dst, 1) || !tl_tile_check_ref(p, op, "src", src, 1)) return;
  if (!tl_same_shape(dst, src)) {
    tl_tile_misuse(p, TL_ERR_SHAPE, "%s (%s): dst is %s but src is %s", op, tl_unary_name(uop), TL_SHAPE(dst),
                   TL_SHAPE(src));
    return;
  }
  for (int isa = tl_tile_start(p); isa >= TL_ISA_SCALAR; isa--) {
    const tl_tile_impl *impl = tl_tile_impl_at((tl_isa)isa);
    if (impl && impl->unary && impl->unary(dst, src, uop)) return;
  }
  tl_tile_unhandled(p, op);
}

/* 1 when b broadcasts onto dst: same ndim with equal leading dims and each of the last two (the
 * last one for 1-D) equal to dst's or 1 (same shape, row [1, C], column [R, 1], scalar [1, 1]);
 * or 1-D [C] against a dst of 2+ dims whose last dim is C (a row vector for every row). */
static int tl_broadcasts(const tl_ref *dst, const tl_ref *b) {
  int nd = dst->ndim;
  if (b->ndim == 1 && nd >= 2) return b->shape[0] == dst->shape[nd - 1];
  if (b->ndim != nd) return 0;
  for (int d = 0; d < nd; d++) {
    int bcast_ok = d >= nd - 2 && b->shape[d] == 1;
    if (b->shape[d] != dst->shape[d] && !bcast_ok) return 0;
  }
  return 1;
}

/* dst = a op b. Rules: a known op; all row-major; a has dst's shape; b broadcasts (above); any
 * dtypes. */
void tl_tile_binary(tl_ref *dst, const tl_ref *a, const tl_ref *b, tl_binary bop) {
  const tl_prog *p = tl_prog_current();
  const char *op = "tl_tile_binary";
  if ((unsigned)bop >= TL_BINARY_COUNT) {
    tl_tile_misuse(p, TL_ERR_INVALID, "%s: unknown op %d", op, (int)bop);
    return;
  }
  if (!tl_tile_check_ref(p, op, "dst", dst, 1) || !tl_tile_check_ref(p, op, "a", a, 1) ||
      !tl_tile_check_ref(p, op, "b", b, 1))
    return;
  if (!tl_same_shape(dst, a)) {
    tl_tile_misuse(p, TL_ERR_SHAPE, "%s (%s): dst is %s but a is %s", op, tl_binary_name(bop), TL_SHAPE(dst),
                   TL_SHAPE(a));
    return;
  }
  if (!tl_broadcasts(dst, b)) {
    tl_tile_misuse(p, TL_ERR_SHAPE,
                   "%s (%s): dst is %s but b is %s (b must have dst's shape, or be a row vector [1, C] / "
                   "[C] or a column vector [R, 1])",
                   op, tl_binary_name(bop), TL_SHAPE(dst), TL_SHAPE(b));
    return;
  }
  for (int isa = tl_tile_start(p); isa >= TL_ISA_SCALAR; isa--) {
    const tl_tile_impl *impl = tl_tile_impl_at((tl_isa)isa);
    if (impl && impl->binary && impl->binary(dst, a, b, bop)) return;
  }
  tl_tile_unhandled(p, op);
}

/* dst = reduce src over axis. Rules: a known op; both row-major; src has at least one dim and
 * -ndim <= axis < ndim; dst is src's shape with that dim 1 (same ndim) or removed (ndim - 1).
 * The implementations receive the axis normalised to 0..ndim-1. */
void tl_tile_reduce(tl_ref *dst, const tl_ref *src, int axis, tl_reduce rop) {
  const tl_prog *p = tl_prog_current();
  const char *op = "tl_tile_reduce";
  if ((unsigned)rop >= TL_REDUCE_COUNT) {
    tl_tile_misuse(p, TL_ERR_INVALID, "%s: unknown op %d", op, (int)rop);
    return;
  }
  if (!tl_tile_check_ref(p, op, "dst", dst, 1) || !tl_tile_check_ref(p, op, "src", src, 1)) return;
  int nd = src->ndim;
  if (axis < -nd || axis >= nd) {
    tl_tile_misuse(p, TL_ERR_INVALID, "%s (%s): axis %d for src %s of %d dims", op, tl_reduce_name(rop), axis,
                   TL_SHAPE(src), nd);
    return;
  }
  if (axis < 0) axis += nd;
  int ok = 1;
  if (dst->ndim == nd) {
    for (int d = 0; d < nd; d++) ok &= dst->shape[d] == (d == axis ? 1 : src->shape[d]);
  } else if (dst->ndim == nd - 1) {
    for (int d = 0; d < nd - 1; d++) ok &= dst->shape[d] == src->shape[d < axis ? d : d + 1];
  } else {
    ok = 0;
  }
  if (!ok) {
    tl_tile_misuse(p, TL_ERR_SHAPE, "%s (%s): dst is %s but src is %s reduced over axis %d", op,
                   tl_reduce_name(rop), TL_SHAPE(dst), TL_SHAPE(src), axis);
    return;
  }
  for (int isa = tl_tile_start(p); isa >= TL_ISA_SCALAR; isa--) {
    const tl_tile_impl *impl = tl_tile_impl_at((tl_isa)isa);
    if (impl && impl->reduce && impl->reduce(dst, src, axis, rop)) return;
  }
  tl_tile_unhandled(p, op);
}
