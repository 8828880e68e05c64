/* tensor.c — tensor views: construction (tl_tensor_make, tl_tensor_make_tiled), validation
 * (tl_tensor_check), sizes (tl_tensor_numel, tl_tensor_nbytes) and addressing (tl_tensor_at).
 *
 * Invariants a tensor that passes tl_tensor_check keeps (every other layer relies on them):
 * - dtype is a real dtype (not TL_DTYPE_INVALID), 0 <= ndim <= TL_MAX_DIMS, every size >= 0.
 * - Row-major: every stride >= 0 (0 broadcasts); the offset of the furthest element, in elements
 *   and in bytes (plus one element), fits in int64, so (idx * stride) sums never overflow for
 *   in-range indices. vnni, tile_r and tile_c are 0.
 * - Tiled: ndim >= 2, tile_r, tile_c > 0, vnni in {0, 1, 2, 4} dividing tile_r, every stride 0,
 *   and the padded tile storage in bytes fits in int64.
 * - The element count fits in int64; data is non-NULL when it is > 0.
 * Fields past ndim (shape, stride) are ignored. Nothing here allocates.
 */
#include <stdio.h>
#include <string.h>

#include "core_impl.h"

/* Extents of a tensor, computed by tl_tensor_validate. */
typedef struct tl_extent {
  int64_t numel;  /* product of the sizes */
  int64_t nbytes; /* bytes spanned (row-major) or padded tile storage (tiled) */
} tl_extent;

/* Padded size of n elements cut into tiles of t: ceil(n / t) * t; true on overflow. */
static bool tl_round_up_ovf(int64_t n, int64_t t, int64_t *out) {
  return tl_mul_ovf(TL_CDIV(n, t), t, out);
}

/* Checks the layout fields; returns TL_OK or TL_ERR_INVALID with a message. */
static tl_status tl_layout_validate(const tl_tensor *t, const char *w, char *msg, size_t n) {
  const tl_layout *l = &t->layout;
  if (l->tiled > 1) {
    tl_msg(msg, n, "%s: layout.tiled is %u (must be 0 for row-major or 1 for tiled)", w, l->tiled);
    return TL_ERR_INVALID;
  }
  if (!l->tiled) {
    if (l->vnni || l->tile_r || l->tile_c) {
      tl_msg(msg, n, "%s: row-major layout has vnni %u, tile_r %u, tile_c %u (all must be 0 unless tiled)",
             w, l->vnni, l->tile_r, l->tile_c);
      return TL_ERR_INVALID;
    }
    return TL_OK;
  }
  if (t->ndim < 2) {
    tl_msg(msg, n, "%s: tiled layout needs ndim >= 2, got ndim %d", w, t->ndim);
    return TL_ERR_INVALID;
  }
  if (l->tile_r == 0 || l->tile_c == 0) {
    tl_msg(msg, n, "%s: tiled layout has tile %u x %u (both sizes must be > 0)", w, l->tile_r, l->tile_c);
    return TL_ERR_INVALID;
  }
  if (l->vnni != 0 && l->vnni != 1 && l->vnni != 2 && l->vnni != 4) {
    tl_msg(msg, n, "%s: layout.vnni is %u (must be 1, 2 or 4; 0 means 1)", w, l->vnni);
    return TL_ERR_INVALID;
  }
  if (l->vnni && l->tile_r % l->vnni) {
    tl_msg(msg, n, "%s: layout.vnni %u does not divide tile_r %u", w, l->vnni, l->tile_r);
    return TL_ERR_INVALID;
  }
  for (int d = 0; d < t->ndim; d++)
    if (t->stride[d]) {
      tl_msg(msg, n, "%s: tiled tensor has stride %lld in dim %d (strides must be 0 when tiled)", w,
             (long long)t->stride[d], d);
      return TL_ERR_INVALID;
    }
  return TL_OK;
}

/* The whole check behind tl_tensor_check; need_data = false skips the data != NULL rule (for
 * sizes of a tensor not yet given memory). Fills *ext on success (ext may be NULL). */
static tl_status tl_tensor_validate(const tl_tensor *t, const char *what, bool need_data, char *msg,
                                    size_t n, tl_extent *ext) {
  const char *w = what ? what : "tensor";
  if (!t) {
    tl_msg(msg, n, "%s: tensor pointer is NULL", w);
    return TL_ERR_INVALID;
  }
  if (t->dtype == TL_DTYPE_INVALID) {
    tl_msg(msg, n, "%s: dtype is TL_DTYPE_INVALID (a tensor made from bad arguments? see tl_last_error())", w);
    return TL_ERR_DTYPE;
  }
  if ((unsigned)t->dtype >= TL_DTYPE_COUNT) {
    tl_msg(msg, n, "%s: dtype %d is not a tl_dtype (valid: 1..%d)", w, (int)t->dtype, TL_DTYPE_COUNT - 1);
    return TL_ERR_DTYPE;
  }
  if (t->ndim < 0 || t->ndim > TL_MAX_DIMS) {
    tl_msg(msg, n, "%s: ndim %d is outside 0..%d", w, t->ndim, TL_MAX_DIMS);
    return TL_ERR_INVALID;
  }
  for (int d = 0; d < t->ndim; d++)
    if (t->shape[d] < 0) {
      tl_msg(msg, n, "%s: dim %d has negative size %lld", w, d, (long long)t->shape[d]);
      return TL_ERR_SHAPE;
    }
  tl_status s = tl_layout_validate(t, w, msg, n);
  if (s != TL_OK) return s;
  if (!t->layout.tiled)
    for (int d = 0; d < t->ndim; d++)
      if (t->stride[d] < 0) {
        tl_msg(msg, n, "%s: dim %d has negative stride %lld (strides must be >= 0; 0 broadcasts)", w, d,
               (long long)t->stride[d]);
        return TL_ERR_INVALID;
      }

  /* Element count: 0 as soon as one size is 0, so huge sizes beside a zero are fine. */
  int64_t numel = 1;
  bool empty = false;
  for (int d = 0; d < t->ndim; d++) empty |= t->shape[d] == 0;
  if (empty) numel = 0;
  for (int d = 0; d < t->ndim && !empty; d++)
    if (tl_mul_ovf(numel, t->shape[d], &numel)) {
      tl_msg(msg, n, "%s: element count overflows int64 at dim %d (size %lld)", w, d, (long long)t->shape[d]);
      return TL_ERR_SHAPE;
    }

  const int64_t esize = (int64_t)tl_dtype_size(t->dtype);
  int64_t nbytes = 0;
  if (t->layout.tiled) {
    /* Padded storage: leading sizes x padded R x padded C elements. */
    int64_t elems = 1, pr, pc;
    int r = t->ndim - 2, c = t->ndim - 1;
    bool ovf = tl_round_up_ovf(t->shape[r], t->layout.tile_r, &pr) ||
               tl_round_up_ovf(t->shape[c], t->layout.tile_c, &pc);
    for (int d = 0; d < r && !ovf; d++) ovf = tl_mul_ovf(elems, t->shape[d], &elems);
    ovf = ovf || tl_mul_ovf(elems, pr, &elems) || tl_mul_ovf(elems, pc, &elems) ||
          tl_mul_ovf(elems, esize, &nbytes);
    if (ovf) {
      tl_msg(msg, n, "%s: padded tile storage (tiles %u x %u) overflows int64 bytes", w, t->layout.tile_r,
             t->layout.tile_c);
      return TL_ERR_SHAPE;
    }
  } else if (numel > 0) {
    /* Furthest element: sum of (size - 1) * stride, then bytes up to one past it. */
    int64_t last = 0;
    for (int d = 0; d < t->ndim; d++) {
      int64_t span;
      if (tl_mul_ovf(t->shape[d] - 1, t->stride[d], &span) || tl_add_ovf(last, span, &last)) {
        tl_msg(msg, n, "%s: the furthest element's offset overflows int64 at dim %d (size %lld, stride %lld)", w, d,
               (long long)t->shape[d], (long long)t->stride[d]);
        return TL_ERR_SHAPE;
      }
    }
    if (tl_add_ovf(last, 1, &nbytes) || tl_mul_ovf(nbytes, esize, &nbytes)) {
      tl_msg(msg, n, "%s: byte offset of the furthest element (element %lld, %s) overflows int64", w,
             (long long)last, tl_dtype_name(t->dtype));
      return TL_ERR_SHAPE;
    }
  }
  if (need_data && !t->data && numel > 0) {
    tl_msg(msg, n, "%s: data is NULL but the tensor has %lld elements", w, (long long)numel);
    return TL_ERR_INVALID;
  }
  if (ext) {
    ext->numel = numel;
    ext->nbytes = nbytes;
  }
  return TL_OK;
}

/* Checks every field (see the invariants above). On failure writes a message naming `what`
 * (NULL: "tensor"), the field, the dim and the numbers into msg (may be NULL); on success msg is
 * left as it was. */
tl_status tl_tensor_check(const tl_tensor *t, const char *what, char *msg, size_t msg_size) {
  return tl_tensor_validate(t, what, true, msg, msg_size, NULL);
}

/* Product of the sizes (1 for a scalar, 0 with a zero dim); -1 when the tensor is invalid.
 * data is not looked at, so a shape-only tensor (data NULL) has a size. */
int64_t tl_tensor_numel(const tl_tensor *t) {
  tl_extent e;
  if (tl_tensor_validate(t, NULL, false, NULL, 0, &e) != TL_OK) return -1;
  return e.numel;
}

/* Bytes from data to one past the highest addressed element (row-major; 0 when empty) or the
 * padded tile storage (tiled); -1 when the tensor is invalid. data is not looked at. */
int64_t tl_tensor_nbytes(const tl_tensor *t) {
  tl_extent e;
  if (tl_tensor_validate(t, NULL, false, NULL, 0, &e) != TL_OK) return -1;
  return e.nbytes;
}

/* Builds a contiguous tensor of the given layout; on bad arguments a zeroed tensor (dtype
 * TL_DTYPE_INVALID) with the reason in tl_last_error(). Row-major strides are those of a
 * compact array, computed with zero sizes counted as 1 (as PyTorch does) so that they never
 * overflow when the element count is 0 only thanks to a zero dim. */
static tl_tensor tl_tensor_build(void *data, tl_dtype dt, int ndim, const int64_t *shape, tl_layout layout,
                                 const char *fn) {
  tl_tensor t, bad;
  memset(&t, 0, sizeof t);
  memset(&bad, 0, sizeof bad);
  if ((unsigned)dt >= TL_DTYPE_COUNT || dt == TL_DTYPE_INVALID) {
    tl_set_last_error("%s: dtype %d is not a valid tl_dtype", fn, (int)dt);
    return bad;
  }
  if (ndim < 0 || ndim > TL_MAX_DIMS) {
    tl_set_last_error("%s: ndim %d is outside 0..%d", fn, ndim, TL_MAX_DIMS);
    return bad;
  }
  if (ndim > 0 && !shape) {
    tl_set_last_error("%s: shape is NULL with ndim %d", fn, ndim);
    return bad;
  }
  t.data = data;
  t.dtype = dt;
  t.ndim = ndim;
  t.layout = layout;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] < 0) {
      tl_set_last_error("%s: dim %d has negative size %lld", fn, d, (long long)shape[d]);
      return bad;
    }
    t.shape[d] = shape[d];
  }
  if (!layout.tiled) {
    int64_t st = 1;
    for (int d = ndim - 1; d >= 0; d--) {
      t.stride[d] = st;
      if (d > 0 && tl_mul_ovf(st, TL_MAX(shape[d], 1), &st)) {
        tl_set_last_error("%s: stride of dim %d overflows int64 (sizes from dim %d on multiply past int64)", fn,
                          d - 1, d);
        return bad;
      }
    }
  }
  char msg[256];
  if (tl_tensor_validate(&t, fn, false, msg, sizeof msg, NULL) != TL_OK) {
    tl_set_last_error("%s", msg);
    return bad;
  }
  return t;
}

/* A contiguous row-major tensor over data (borrowed; may be NULL, tl_tensor_check then refuses
 * it unless it is empty). */
tl_tensor tl_tensor_make(void *data, tl_dtype dt, int ndim, const int64_t *shape) {
  tl_layout rm = {0, 0, 0, 0};
  return tl_tensor_build(data, dt, ndim, shape, rm, "tl_tensor_make");
}

/* A contiguous tiled tensor over data (borrowed). layout.tiled is set to 1 and vnni 0 becomes 1;
 * the other fields are checked (tile sizes > 0, vnni 1/2/4 dividing tile_r, ndim >= 2). */
tl_tensor tl_tensor_make_tiled(void *data, tl_dtype dt, int ndim, const int64_t *shape, tl_layout layout) {
  layout.tiled = 1;
  if (layout.vnni == 0) layout.vnni = 1;
  return tl_tensor_build(data, dt, ndim, shape, layout, "tl_tensor_make_tiled");
}

/* Address of element idx[0..ndim-1]; no checks (the caller passes a valid tensor and in-range
 * indices). Tiled: leading dims are outermost over whole padded matrices; within one, the tile
 * (r / tile_r, c / tile_c) is at tile-row-major position, and the element inside it at
 * tl_layout_tile_offset. */
void *tl_tensor_at(const tl_tensor *t, const int64_t *idx) {
  int64_t esize = (int64_t)tl_dtype_size(t->dtype);
  int64_t off = 0;
  if (!t->layout.tiled) {
    for (int d = 0; d < t->ndim; d++) off += idx[d] * t->stride[d];
    return (char *)t->data + off * esize;
  }
  const tl_layout l = t->layout;
  int rd = t->ndim - 2, cd = t->ndim - 1;
  int64_t tr = l.tile_r, tc = l.tile_c;
  int64_t tiles_r = TL_CDIV(t->shape[rd], tr), tiles_c = TL_CDIV(t->shape[cd], tc);
  int64_t lead = 0;
  for (int d = 0; d < rd; d++) lead = lead * t->shape[d] + idx[d];
  int64_t r = idx[rd], c = idx[cd];
  int64_t tile = (lead * tiles_r + r / tr) * tiles_c + c / tc;
  off = tile * tr * tc + tl_layout_tile_offset(l, r % tr, c % tc);
  return (char *)t->data + off * esize;
}
