/* rows_op.c — the driver shared by tl_softmax, tl_log_softmax, tl_layernorm and tl_rmsnorm
 * (norm_impl.h): argument checks, the [O, A, I] view, block sizes, the plan cache and the outer
 * loop; the step body is in rows_body.c. docs/norms.md has the grids and the numerics.
 *
 * Invariants: every refusal happens before anything runs (y untouched) and names the operand; a
 * plan is keyed by what shapes it (kind, axis, x's and y's dtype, shape and strides, whether
 * gamma / beta are present, whether y is x), never by data pointers or eps, which the body reads
 * from the run struct set before each run; gamma and beta reach the plans as f32 [A] with unit
 * stride (converted per call when they are not); blocks are used in place, so one pass reads x
 * once from memory and writes y once (the row stays in the staging budget between sweeps). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "norm_impl.h"

#define TL_RO_CACHE 32

static const char *tl_ro_fn(tl_ro_kind k) {
  switch (k) {
  case TL_RO_SOFTMAX: return "tl_softmax";
  case TL_RO_LOG_SOFTMAX: return "tl_log_softmax";
  case TL_RO_LAYERNORM: return "tl_layernorm";
  default: return "tl_rmsnorm";
  }
}

static int tl_ro_is_softmax(tl_ro_kind k) { return k == TL_RO_SOFTMAX || k == TL_RO_LOG_SOFTMAX; }

/* ---- argument checks ---- */

/* Lowest and one-past-highest byte a row-major tensor with elements touches (strides >= 0). */
static void tl_ro_span(const tl_tensor *t, const char **lo, const char **hi) {
  int64_t last = 0;
  for (int d = 0; d < t->ndim; d++) last += (t->shape[d] - 1) * t->stride[d];
  *lo = t->data;
  *hi = (const char *)t->data + (last + 1) * (int64_t)tl_dtype_size(t->dtype);
}

static int tl_ro_same_tensor(const tl_tensor *a, const tl_tensor *b) {
  if (a->data != b->data || a->dtype != b->dtype || a->ndim != b->ndim) return 0;
  for (int d = 0; d < a->ndim; d++)
    if (a->shape[d] != b->shape[d] || a->stride[d] != b->stride[d]) return 0;
  return 1;
}

/* Checks one tensor: valid, row-major, f32 or bf16, data present. */
static tl_status tl_ro_check_tensor(tl_ctx *ctx, const char *fn, const tl_tensor *t, const char *name) {
  char msg[256];
  if (!t) return tl_ctx_fail(ctx, TL_ERR_INVALID, "%s: %s is NULL", fn, name);
  tl_status s = tl_tensor_check(t, name, msg, sizeof msg);
  if (s != TL_OK) return tl_ctx_fail(ctx, s, "%s: %s", fn, msg);
  if (t->layout.tiled) return tl_ctx_fail(ctx, TL_ERR_INVALID, "%s: %s is tiled; it must be row-major", fn, name);
  if (t->dtype != TL_F32 && t->dtype != TL_BF16)
    return tl_ctx_fail(ctx, TL_ERR_DTYPE, "%s: %s is %s; supported: f32, bf16", fn, name, tl_dtype_name(t->dtype));
  if (!t->data && tl_tensor_numel(t) > 0) return tl_ctx_fail(ctx, TL_ERR_INVALID, "%s: %s has NULL data", fn, name);
  return TL_OK;
}

/* Everything a call is refused for, before anything runs. */
static tl_status tl_ro_check(tl_ctx *ctx, const tl_ro_req *rq, int *axis_out) {
  const char *fn = tl_ro_fn(rq->kind);
  const tl_tensor *x = rq->x, *y = rq->y;
  tl_status s;
  char sx[96], sy[96];
  if ((s = tl_ro_check_tensor(ctx, fn, x, "x")) != TL_OK) return s;
  if ((s = tl_ro_check_tensor(ctx, fn, y, "y")) != TL_OK) return s;
  if (x->ndim < 1) return tl_ctx_fail(ctx, TL_ERR_SHAPE, "%s: x is a scalar (0 dims); it needs at least 1 dim", fn);
  int same = x->ndim == y->ndim;
  for (int d = 0; same && d < x->ndim; d++) same = x->shape[d] == y->shape[d];
  if (!same)
    return tl_ctx_fail(ctx, TL_ERR_SHAPE, "%s: y is %s, expected x's shape %s", fn, tl_shape_str(y, sy, sizeof sy),
                       tl_shape_str(x, sx, sizeof sx));
  int axis = x->ndim - 1;
  if (tl_ro_is_softmax(rq->kind)) {
    if (rq->axis < -x->ndim || rq->axis >= x->ndim)
      return tl_ctx_fail(ctx, TL_ERR_INVALID, "%s: axis %d is out of range for x %s (%d dims: -%d..%d)", fn, rq->axis,
                         tl_shape_str(x, sx, sizeof sx), x->ndim, x->ndim, x->ndim - 1);
    axis = rq->axis < 0 ? rq->axis + x->ndim : rq->axis;
  } else {
    if (!(rq->eps >= 0.0f) || isinf(rq->eps))
      return tl_ctx_fail(ctx, TL_ERR_INVALID, "%s: eps is %g; it must be finite and >= 0", fn, (double)rq->eps);
    const int64_t C = x->shape[x->ndim - 1];
    const tl_tensor *gb[2] = {rq->gamma, rq->beta};
    const char *nm[2] = {"gamma", "beta"};
    for (int i = 0; i < 2; i++) {
      if (!gb[i]) continue;
      if ((s = tl_ro_check_tensor(ctx, fn, gb[i], nm[i])) != TL_OK) return s;
      if (gb[i]->ndim != 1 || gb[i]->shape[0] != C)
        return tl_ctx_fail(ctx, TL_ERR_SHAPE, "%s: %s is %s, expected [C] = [%lld] (x's last dim)", fn, nm[i],
                           tl_shape_str(gb[i], sy, sizeof sy), (long long)C);
    }
  }
  for (int d = 0; d < y->ndim && tl_tensor_numel(y) > 0; d++)
    if (y->stride[d] == 0 && y->shape[d] > 1)
      return tl_ctx_fail(ctx, TL_ERR_INVALID, "%s: y has stride 0 in dim %d (size %lld); outputs cannot broadcast", fn, d,
                         (long long)y->shape[d]);
  if (tl_view_self_overlaps(y, &(int){0}, &(int){0}))
    return tl_ctx_fail(ctx, TL_ERR_INVALID, "%s: y's strides make two of its elements share memory", fn);
  if (tl_tensor_numel(x) > 0 && !tl_ro_same_tensor(x, y)) {
    const tl_tensor *in[3] = {x, rq->gamma, rq->beta};
    const char *nm[3] = {"x", "gamma", "beta"};
    const char *ylo, *yhi;
    tl_ro_span(y, &ylo, &yhi);
    for (int i = 0; i < 3; i++) {
      if (!in[i] || tl_tensor_numel(in[i]) == 0) continue;
      const char *lo, *hi;
      tl_ro_span(in[i], &lo, &hi);
      if (lo < yhi && ylo < hi)
        return tl_ctx_fail(ctx, TL_ERR_INVALID, "%s: y overlaps %s; y may only be x itself (same data, dtype and strides)",
                           fn, nm[i]);
    }
  }
  *axis_out = axis;
  return TL_OK;
}

/* ---- the view and the blocks ---- */

/* Merges dims dims[0..nd) (outermost first) of x and y into groups, innermost first: sizes and
 * element strides; size-1 dims are dropped. Returns the group count. */
static int tl_ro_merge(const tl_tensor *x, const tl_tensor *y, const int *dims, int nd, int64_t *sz, int64_t *sx,
                       int64_t *sy) {
  int ng = 0;
  for (int k = nd - 1; k >= 0; k--) {
    const int d = dims[k];
    if (x->shape[d] == 1) continue;
    if (ng > 0 && sx[ng - 1] * sz[ng - 1] == x->stride[d] && sy[ng - 1] * sz[ng - 1] == y->stride[d]) {
      sz[ng - 1] *= x->shape[d];
      continue;
    }
    sz[ng] = x->shape[d], sx[ng] = x->stride[d], sy[ng] = y->stride[d];
    ng++;
  }
  return ng;
}

static tl_tensor tl_ro_view3(const tl_tensor *t, int64_t O, int64_t A, int64_t I, int64_t so, int64_t sa, int64_t si) {
  tl_tensor v;
  memset(&v, 0, sizeof v);
  v.data = t->data, v.dtype = t->dtype, v.ndim = 3;
  v.shape[0] = O, v.shape[1] = A, v.shape[2] = I;
  /* the real strides, 0 (a broadcast input) included: a stride-0 line is not a unit-stride one
   * and must be staged; only dims of size 1, whose stride is never used, get 1 */
  v.stride[0] = O == 1 ? 1 : so, v.stride[1] = A == 1 ? 1 : sa, v.stride[2] = I == 1 ? 1 : si;
  return v;
}

/* See norm_impl.h. */
void tl_ro_fixup(tl_ro_build *bd) {
  for (int i = 0; i < bd->nplans; i++) {
    tl_ro_desc *d = &bd->d[i];
    d->k.in = d->in, d->k.out = d->out, d->k.scratch = d->k.n_scratch ? d->scr : NULL, d->k.user = &d->run;
  }
}

tl_status tl_ro_prepare(tl_ctx *ctx, const tl_ro_req *rq, tl_ro_build *bd) {
  int axis = 0;
  tl_status s = tl_ro_check(ctx, rq, &axis);
  if (s != TL_OK) return s;
  const tl_tensor *x = rq->x, *y = rq->y;
  const int nd = x->ndim;
  tl_ctx_info info;
  tl_ctx_info_get(ctx, &info);
  memset(bd, 0, sizeof *bd);
  if (tl_tensor_numel(x) == 0) return TL_OK; /* nothing to build: the call is a no-op */
  /* the view: rows (A contiguous in x, or nothing after the axis) or columns */
  int64_t inner_n = 1;
  for (int d = axis + 1; d < nd; d++) inner_n *= x->shape[d];
  const int cols = inner_n > 1 && x->stride[axis] != 1;
  int dims_o[TL_MAX_DIMS], ndo = 0, dims_i[TL_MAX_DIMS], ndi = 0;
  for (int d = 0; d < nd; d++) {
    if (d == axis) continue;
    if (cols && d > axis) dims_i[ndi++] = d;
    else dims_o[ndo++] = d;
  }
  int64_t gz[2][TL_MAX_DIMS], gx[2][TL_MAX_DIMS], gy[2][TL_MAX_DIMS];
  int ngo = tl_ro_merge(x, y, dims_o, ndo, gz[0], gx[0], gy[0]);
  int ngi = tl_ro_merge(x, y, dims_i, ndi, gz[1], gx[1], gy[1]);
  const int64_t A = x->shape[axis], O = ngo ? gz[0][0] : 1, I = ngi ? gz[1][0] : 1;
  const int64_t ex = (int64_t)tl_dtype_size(x->dtype), ey = (int64_t)tl_dtype_size(y->dtype);
  for (int g = 1; g < ngo; g++)
    bd->loop_n[bd->nloop] = gz[0][g], bd->loop_sx[bd->nloop] = gx[0][g] * ex, bd->loop_sy[bd->nloop++] = gy[0][g] * ey;
  for (int g = 1; g < ngi; g++)
    bd->loop_n[bd->nloop] = gz[1][g], bd->loop_sx[bd->nloop] = gx[1][g] * ex, bd->loop_sy[bd->nloop++] = gy[1][g] * ey;
  const int64_t sox = ngo ? gx[0][0] : A * x->stride[axis], soy = ngo ? gy[0][0] : A * y->stride[axis];
  const int64_t six = ngi ? gx[1][0] : 1, siy = ngi ? gy[1][0] : 1;
  tl_tensor x3 = tl_ro_view3(x, O, A, I, sox, x->stride[axis], six);
  tl_tensor y3 = tl_ro_view3(y, O, A, I, soy, y->stride[axis], siy);
  /* the vector kernels want unit stride along rows (A) or columns (I): else stage the block */
  const int unit_x = cols ? x3.stride[2] == 1 : x3.stride[1] == 1 || A == 1;
  const int unit_y = cols ? y3.stride[2] == 1 : y3.stride[1] == 1 || A == 1;
  const int has_g = rq->gamma != NULL, has_b = rq->beta != NULL;
  bd->O = O, bd->A = A, bd->I = I;
  /* blocks: a whole line of A when it fits 90% of the budget with its scratch and gamma / beta */
  const int64_t budget = (int64_t)info.vmem_bytes * 9 / 10, T = info.threads > 0 ? info.threads : 1;
  const int64_t gbytes = (has_g + has_b) * A * 4;
  int64_t bo = 1, bi = 1, ca = A;
  int two = 0;
  if (!cols) {
    const int64_t row = A * (ex + ey), fixed = gbytes + (rq->kind == TL_RO_SOFTMAX ? A * 4 : 0);
    if (fixed + row <= budget) {
      int64_t bo_max = (budget - fixed) / row, nb = TL_MAX(TL_CDIV(O, bo_max), TL_MIN(O, 4 * T));
      if (nb < O) nb = TL_MIN(O, TL_CDIV(nb, T) * T); /* a multiple of the threads: equal shares */
      bo = TL_CDIV(O, nb);
    } else {
      two = 1;
      ca = budget / 2 / (ex + ey + (has_g + has_b) * 4) / 64 * 64;
      if (ca < 16) ca = budget / (ex + ey + (has_g + has_b) * 4);
    }
  } else {
    const int64_t col = A * (ex + ey + (rq->kind == TL_RO_SOFTMAX ? 4 : 0)) + 16;
    const int64_t bmin = TL_MIN(I, 16);
    if (col * bmin <= budget) {
      bi = budget / col;
      if (bi >= I) {
        bi = I;
        int64_t per_o = A * I * (ex + ey), scr = col * I - per_o;
        int64_t bo_max = TL_MAX(1, (budget - scr) / per_o), nb = TL_MAX(TL_CDIV(O, bo_max), TL_MIN(O, 4 * T));
        bo = TL_CDIV(O, nb);
      } else {
        bi = TL_MIN(bi / 16 * 16, 1024);
      }
      while (bi > 16 && O * TL_CDIV(I, bi) < 4 * T) bi = TL_MAX(16, (bi / 2 + 15) / 16 * 16);
    } else {
      two = 1;
      bi = bmin;
      ca = (budget - 16 * bi) / (bi * (ex + ey));
    }
  }
  if (ca < 1) ca = 1;
  if (ca > A) ca = A;
  bd->bo = bo, bd->bi = bi;
  /* blocks are used in place, edge blocks too (the body reads valid[] only, so nothing is staged
   * or copied); operands without the unit stride the kernels want are staged (packed) */
  const tl_stage stx = unit_x ? TL_STAGE_NEVER : TL_STAGE_ALWAYS, sty = unit_y ? TL_STAGE_NEVER : TL_STAGE_ALWAYS;
  const int64_t flops_per = rq->kind == TL_RO_LAYERNORM ? 8 : rq->kind == TL_RO_RMSNORM ? 5 : 6;
  int64_t flops = 0;
  if (tl_mul_ovf(O * A, I, &flops) || tl_mul_ovf(flops, flops_per, &flops)) flops = 0;
  tl_ro_run run0 = {.kind = rq->kind, .cols = cols, .xbf = x->dtype == TL_BF16, .ybf = y->dtype == TL_BF16, .A = A,
                    .ca = ca, .ig = -1, .ib = -1, .is = -1, .iy = -1, .ie = -1, .iv = -1, .eps = rq->eps};
  tl_tensor gt = {0}, bt = {0};
  if (has_g) {
    int64_t sh[1] = {A};
    gt = tl_tensor_make(rq->gamma->dtype == TL_F32 && rq->gamma->stride[0] == 1 ? rq->gamma->data : NULL, TL_F32, 1, sh);
    if (has_b) bt = tl_tensor_make(rq->beta->dtype == TL_F32 && rq->beta->stride[0] == 1 ? rq->beta->data : NULL, TL_F32, 1, sh);
  } else if (has_b) {
    int64_t sh[1] = {A};
    bt = tl_tensor_make(rq->beta->dtype == TL_F32 && rq->beta->stride[0] == 1 ? rq->beta->data : NULL, TL_F32, 1, sh);
  }
  if (!two) {
    tl_ro_desc *d = &bd->d[0];
    bd->nplans = 1;
    d->run = run0;
    int n = 0;
    d->in[n] = (tl_blockspec){.ndim = 3, .block = {bo, A, bi}, .map = "o, i -> o, 0, i", .stage = stx};
    d->tin[n++] = x3;
    if (has_g) {
      d->run.ig = n;
      d->in[n] = (tl_blockspec){.ndim = 1, .block = {A}, .map = "o, i -> 0"};
      d->tin[n++] = gt;
    }
    if (has_b) {
      d->run.ib = n;
      d->in[n] = (tl_blockspec){.ndim = 1, .block = {A}, .map = "o, i -> 0"};
      d->tin[n++] = bt;
    }
    d->run.iy = n;
    d->out[0] = (tl_blockspec){.ndim = 3, .block = {bo, A, bi}, .map = "o, i -> o, 0, i", .stage = sty};
    d->tout[0] = y3;
    int ns = 0;
    if (rq->kind == TL_RO_SOFTMAX) {
      d->run.ie = n + 1 + ns;
      d->scr[ns++] = (tl_scratch){.dtype = TL_F32, .ndim = 1, .shape = {A * bi}};
    }
    if (cols) {
      d->run.iv = n + 1 + ns;
      d->scr[ns++] = (tl_scratch){.dtype = TL_F32, .ndim = 1, .shape = {4 * bi}};
    }
    d->k = (tl_kernel){.name = tl_ro_fn(rq->kind) + 3, .body = tl_ro_body, .grid_ndim = 2,
                       .grid = {TL_CDIV(O, bo), TL_CDIV(I, bi)}, .sem = {TL_PARALLEL, TL_PARALLEL}, .n_in = n,
                       .n_out = 1, .n_scratch = ns, .flops = flops};
  } else {
    /* stats [O, 3, I] f32, data set per call */
    int64_t ssh[3] = {O, 3, I};
    tl_tensor st = tl_tensor_make(NULL, TL_F32, 3, ssh);
    const int64_t na = TL_CDIV(A, ca), ni = TL_CDIV(I, bi);
    tl_ro_desc *d = &bd->d[0];
    bd->nplans = 2;
    d->run = run0;
    d->run.phase = 1;
    d->in[0] = (tl_blockspec){.ndim = 3, .block = {1, ca, bi}, .map = "o, i, a -> o, a, i", .stage = stx};
    d->tin[0] = x3;
    d->run.is = 1;
    d->out[0] = (tl_blockspec){.ndim = 3, .block = {1, 3, bi}, .map = "o, i, a -> o, 0, i", .stage = TL_STAGE_NEVER};
    d->tout[0] = st;
    int ns = 0;
    if (cols) {
      d->run.iv = 2;
      d->scr[ns++] = (tl_scratch){.dtype = TL_F32, .ndim = 1, .shape = {4 * bi}};
    }
    d->k = (tl_kernel){.name = tl_ro_fn(rq->kind) + 3, .body = tl_ro_body, .grid_ndim = 3, .grid = {O, ni, na},
                       .sem = {TL_PARALLEL, TL_PARALLEL, TL_ARBITRARY}, .n_in = 1, .n_out = 1, .n_scratch = ns,
                       .flops = flops / 2};
    d = &bd->d[1];
    d->run = run0;
    d->run.phase = 2;
    int n = 0;
    d->in[n] = (tl_blockspec){.ndim = 3, .block = {1, ca, bi}, .map = "o, i, a -> o, a, i", .stage = stx};
    d->tin[n++] = x3;
    d->run.is = n;
    d->in[n] = (tl_blockspec){.ndim = 3, .block = {1, 3, bi}, .map = "o, i, a -> o, 0, i", .stage = TL_STAGE_NEVER};
    d->tin[n++] = st;
    if (has_g) {
      d->run.ig = n;
      d->in[n] = (tl_blockspec){.ndim = 1, .block = {ca}, .map = "o, i, a -> a", .stage = TL_STAGE_NEVER};
      d->tin[n++] = gt;
    }
    if (has_b) {
      d->run.ib = n;
      d->in[n] = (tl_blockspec){.ndim = 1, .block = {ca}, .map = "o, i, a -> a", .stage = TL_STAGE_NEVER};
      d->tin[n++] = bt;
    }
    d->run.iy = n;
    d->out[0] = (tl_blockspec){.ndim = 3, .block = {1, ca, bi}, .map = "o, i, a -> o, a, i", .stage = sty};
    d->tout[0] = y3;
    ns = 0;
    if (cols) {
      d->run.iv = n + 1;
      d->scr[ns++] = (tl_scratch){.dtype = TL_F32, .ndim = 1, .shape = {4 * bi}};
    }
    d->k = (tl_kernel){.name = tl_ro_fn(rq->kind) + 3, .body = tl_ro_body, .grid_ndim = 3, .grid = {O, ni, na},
                       .sem = {TL_PARALLEL, TL_PARALLEL, TL_ARBITRARY}, .n_in = n, .n_out = 1, .n_scratch = ns,
                       .flops = flops - flops / 2};
  }
  tl_ro_fixup(bd);
  return TL_OK;
}

/* ---- the plan cache (a context slot) ---- */

typedef struct tl_ro_key {
  int kind, axis, has_g, has_b;
  int in_place; /* y is x: the plan shares x's blocks with y (the executor decides at tl_plan_new) */
  tl_tensor x, y; /* data NULL, unused dims 0 */
} tl_ro_key;

typedef struct tl_ro_entry {
  int used;
  uint64_t stamp;
  tl_ro_key key;
  tl_plan *plan[2];
  tl_ro_build bd;
} tl_ro_entry;

typedef struct tl_ro_cache {
  uint64_t clock;
  int nt_mode; /* -1 auto, 0 never, 1 always */
  int last_nt;  /* the last call's choice (tl_ro_last_nt) */
  tl_ro_entry e[TL_RO_CACHE];
} tl_ro_cache;

/* Plans are freed by tl_ctx_free before the slots: only the cache memory is ours. */
static void tl_ro_cache_free(void *state) { tl_free_mem(state); }
static const tl_slot_class tl_ro_slot = {.name = "softmax and norm plans", .free_state = tl_ro_cache_free};

static tl_ro_cache *tl_ro_cache_get(tl_ctx *ctx) {
  tl_ro_cache *c = tl_ctx_slot_get(ctx, &tl_ro_slot);
  if (c) return c;
  c = tl_calloc(1, sizeof *c);
  if (!c) return NULL;
  c->nt_mode = -1, c->last_nt = -1;
  if (tl_ctx_slot_set(ctx, &tl_ro_slot, c) != TL_OK) {
    tl_free_mem(c);
    return NULL;
  }
  return c;
}

int64_t tl_ro_nt_threshold(const tl_ctx_info *info) {
  return tl_kernels_l3_bytes(info) / 2;
}

int tl_ro_nt_auto(const tl_ctx_info *info, int64_t traffic, int ybf, int colview, int64_t A) {
  if (traffic <= tl_ro_nt_threshold(info)) return 0;
  return !(ybf && !colview && A < TL_RO_NT_BF16_ROW);
}

void tl_ro_set_nt(tl_ctx *ctx, int mode) {
  tl_ro_cache *c = ctx ? tl_ro_cache_get(ctx) : NULL;
  if (c) c->nt_mode = mode < 0 ? -1 : mode > 0;
}

int tl_ro_last_nt(tl_ctx *ctx) {
  tl_ro_cache *c = ctx ? tl_ctx_slot_get(ctx, &tl_ro_slot) : NULL;
  return c ? c->last_nt : -1;
}

static void tl_ro_key_tensor(tl_tensor *dst, const tl_tensor *t) {
  memset(dst, 0, sizeof *dst);
  dst->dtype = t->dtype, dst->ndim = t->ndim;
  for (int d = 0; d < t->ndim; d++) dst->shape[d] = t->shape[d], dst->stride[d] = t->stride[d];
}

static void tl_ro_make_key(const tl_ro_req *rq, tl_ro_key *key) {
  memset(key, 0, sizeof *key);
  key->kind = (int)rq->kind, key->axis = tl_ro_is_softmax(rq->kind) ? rq->axis : 0;
  if (key->axis < 0) key->axis += rq->x->ndim;
  key->has_g = rq->gamma != NULL, key->has_b = rq->beta != NULL;
  key->in_place = rq->x->data == rq->y->data;
  tl_ro_key_tensor(&key->x, rq->x);
  tl_ro_key_tensor(&key->y, rq->y);
}

/* The cached entry for key, or NULL. */
static tl_ro_entry *tl_ro_find(tl_ro_cache *cache, const tl_ro_key *key) {
  for (int i = 0; i < TL_RO_CACHE; i++) {
    tl_ro_entry *e = &cache->e[i];
    if (e->used && !memcmp(&e->key, key, sizeof *key)) {
      e->stamp = ++cache->clock;
      return e;
    }
  }
  return NULL;
}

/* A new entry for key (the least recently used one evicted) with plans made from bd over this
 * call's tensors tin[p] / tout[p]; NULL with the message set. */
static tl_ro_entry *tl_ro_insert(tl_ctx *ctx, tl_ro_cache *cache, const tl_ro_key *key, const tl_ro_build *bd,
                                 tl_tensor (*tin)[4], tl_tensor (*tout)[1], tl_status *st) {
  tl_ro_entry *victim = &cache->e[0];
  for (int i = 0; i < TL_RO_CACHE; i++) {
    tl_ro_entry *e = &cache->e[i];
    if (!e->used) victim = e;
    else if (victim->used && e->stamp < victim->stamp) victim = e;
  }
  if (victim->used)
    for (int i = 0; i < 2; i++) tl_plan_free(victim->plan[i]);
  memset(victim, 0, sizeof *victim);
  victim->key = *key;
  victim->bd = *bd;
  tl_ro_fixup(&victim->bd);
  for (int i = 0; i < victim->bd.nplans; i++) {
    *st = tl_plan_new(ctx, &victim->bd.d[i].k, tin[i], tout[i], &victim->plan[i]);
    if (*st != TL_OK) {
      for (int j = 0; j < i; j++) tl_plan_free(victim->plan[j]);
      memset(victim, 0, sizeof *victim); /* the entry stays free */
      return NULL;
    }
  }
  victim->used = 1;
  victim->stamp = ++cache->clock;
  return victim;
}

/* ---- running ---- */

/* An f32 contiguous copy of a [C] gamma / beta that is bf16 or strided; NULL when out of memory. */
static float *tl_ro_f32_copy(const tl_tensor *t) {
  const int64_t n = t->shape[0];
  float *f = tl_aligned_alloc(64, (size_t)(n > 0 ? n : 1) * 4);
  if (!f) return NULL;
  for (int64_t i = 0; i < n; i++) f[i] = (float)tl_load_f64(t->data, t->dtype, i * t->stride[0]);
  return f;
}

/* This call's tensors for plan p at outer-loop byte offsets ox, oy. */
static void tl_ro_tensors(const tl_ro_build *bd, int p, const tl_ro_req *rq, int64_t ox, int64_t oy, const void *g,
                          const void *b, float *stats, tl_tensor *tin, tl_tensor *tout) {
  const tl_ro_desc *d = &bd->d[p];
  memcpy(tin, d->tin, sizeof d->tin);
  tout[0] = d->tout[0];
  tin[0].data = (char *)rq->x->data + ox;
  if (d->run.ig >= 0) tin[d->run.ig].data = (void *)g;
  if (d->run.ib >= 0) tin[d->run.ib].data = (void *)b;
  if (d->run.phase == 2) tin[d->run.is].data = stats;
  tout[0].data = d->run.phase == 1 ? (void *)stats : (char *)rq->y->data + oy;
}

tl_status tl_ro_call(tl_ctx *ctx, const tl_ro_req *rq) {
  if (!ctx) return tl_fail_tls(TL_ERR_INVALID, "%s: ctx is NULL", tl_ro_fn(rq->kind));
  tl_ro_build bd;
  tl_status s = tl_ro_prepare(ctx, rq, &bd);
  if (s != TL_OK) return s;
  if (tl_tensor_numel(rq->x) == 0) {
    tl_ctx_ok(ctx);
    return TL_OK;
  }
  const char *fn = tl_ro_fn(rq->kind);
  tl_ro_cache *cache = tl_ro_cache_get(ctx);
  if (!cache) return tl_ctx_fail(ctx, TL_ERR_NOMEM, "%s: out of memory for the plan cache", fn);
  float *gconv = NULL, *bconv = NULL, *stats = NULL;
  const void *gdata = NULL, *bdata = NULL;
  if (rq->gamma) {
    if (rq->gamma->dtype == TL_F32 && rq->gamma->stride[0] == 1) gdata = rq->gamma->data;
    else if (!(gdata = gconv = tl_ro_f32_copy(rq->gamma))) {
      s = tl_ctx_fail(ctx, TL_ERR_NOMEM, "%s: out of memory converting gamma", fn);
      goto out;
    }
  }
  if (rq->beta) {
    if (rq->beta->dtype == TL_F32 && rq->beta->stride[0] == 1) bdata = rq->beta->data;
    else if (!(bdata = bconv = tl_ro_f32_copy(rq->beta))) {
      s = tl_ctx_fail(ctx, TL_ERR_NOMEM, "%s: out of memory converting beta", fn);
      goto out;
    }
  }
  if (bd.nplans == 2) {
    int64_t n = bd.O * 3 * bd.I;
    if (!(stats = tl_aligned_alloc(64, (size_t)n * 4))) {
      s = tl_ctx_fail(ctx, TL_ERR_NOMEM, "%s: out of memory for the row statistics (%lld bytes)", fn, (long long)n * 4);
      goto out;
    }
  }
  tl_ro_key key;
  tl_ro_make_key(rq, &key);
  tl_ro_entry *e = tl_ro_find(cache, &key);
  if (!e) {
    tl_tensor tin[2][4], tout[2][1];
    for (int p = 0; p < bd.nplans; p++) tl_ro_tensors(&bd, p, rq, 0, 0, gdata, bdata, stats, tin[p], tout[p]);
    if (!(e = tl_ro_insert(ctx, cache, &key, &bd, tin, tout, &s))) goto out;
  }
  /* streaming stores as tl_ro_nt_auto says */
  tl_ctx_info info;
  tl_ctx_info_get(ctx, &info);
  const int64_t traffic = tl_tensor_nbytes(rq->x) + tl_tensor_nbytes(rq->y);
  const tl_ro_run *r0 = &bd.d[0].run;
  const int nt = cache->nt_mode >= 0 ? cache->nt_mode : tl_ro_nt_auto(&info, traffic, r0->ybf, r0->cols, r0->A);
  cache->last_nt = nt;
  int64_t idx[TL_MAX_DIMS] = {0};
  for (;;) {
    int64_t ox = 0, oy = 0;
    for (int d = 0; d < bd.nloop; d++) ox += idx[d] * bd.loop_sx[d], oy += idx[d] * bd.loop_sy[d];
    for (int p = 0; p < e->bd.nplans; p++) {
      tl_ro_run *r = &e->bd.d[p].run;
      tl_tensor tin[4], tout[1];
      tl_ro_tensors(&bd, p, rq, ox, oy, gdata, bdata, stats, tin, tout);
      r->eps = rq->eps;
      r->nt = nt && r->iy >= 0;
      if (r->iy >= 0) {
        int64_t last = 0;
        for (int k = 0; k < 3; k++) last += (tout[0].shape[k] - 1) * tout[0].stride[k];
        r->y_lo = tout[0].data;
        r->y_hi = (const char *)tout[0].data + (last + 1) * (int64_t)tl_dtype_size(tout[0].dtype);
      }
      s = tl_plan_run(e->plan[p], tin, tout);
      if (s != TL_OK) goto out;
    }
    int d = bd.nloop - 1;
    while (d >= 0 && ++idx[d] == bd.loop_n[d]) idx[d--] = 0;
    if (d < 0) break;
  }
  tl_ctx_ok(ctx);
out:
  tl_aligned_free(gconv);
  tl_aligned_free(bconv);
  tl_aligned_free(stats);
  return s;
}

tl_status tl_ro_cost(tl_ctx *ctx, const tl_ro_req *rq, tl_cost *cost, int *nplans) {
  if (!ctx) return tl_fail_tls(TL_ERR_INVALID, "%s: ctx is NULL", tl_ro_fn(rq->kind));
  memset(cost, 0, sizeof *cost);
  if (nplans) *nplans = 0;
  tl_ro_build bd;
  tl_status s = tl_ro_prepare(ctx, rq, &bd);
  if (s != TL_OK) return s;
  if (tl_tensor_numel(rq->x) == 0) return TL_OK;
  tl_ro_key key;
  tl_ro_make_key(rq, &key);
  tl_ro_cache *cache = tl_ro_cache_get(ctx);
  tl_ro_entry *e = cache ? tl_ro_find(cache, &key) : NULL;
  if (!e) { /* make the plans the way a call does (this writes y) */
    if ((s = tl_ro_call(ctx, rq)) != TL_OK) return s;
    if (!(e = tl_ro_find(cache ? cache : tl_ro_cache_get(ctx), &key)))
      return tl_ctx_fail(ctx, TL_ERR_INTERNAL, "%s: the plan left the cache", tl_ro_fn(rq->kind));
  }
  int64_t reps = 1;
  for (int d = 0; d < bd.nloop; d++) reps *= bd.loop_n[d];
  /* operand_bytes by role: x, gamma (if given), beta (if given), y; the two-level path's small
   * stats tensor is counted with x */
  const int ig = rq->gamma ? 1 : -1, ib = rq->beta ? 1 + (rq->gamma != NULL) : -1;
  const int iy = 1 + (rq->gamma != NULL) + (rq->beta != NULL);
  for (int p = 0; p < e->bd.nplans; p++) {
    tl_cost c;
    if ((s = tl_plan_cost(e->plan[p], &c)) != TL_OK) return s;
    cost->flops += c.flops * reps, cost->bytes_read += c.bytes_read * reps, cost->bytes_written += c.bytes_written * reps;
    cost->vmem_bytes = TL_MAX(cost->vmem_bytes, c.vmem_bytes), cost->l1_bytes = TL_MAX(cost->l1_bytes, c.l1_bytes);
    const tl_ro_run *r = &e->bd.d[p].run;
    const int nin = e->bd.d[p].k.n_in;
    for (int i = 0; i < nin + 1; i++) {
      int role = 0; /* x or stats */
      if (i == r->ig) role = ig;
      else if (i == r->ib) role = ib;
      else if (i == nin && r->iy >= 0) role = iy;
      cost->operand_bytes[role] += c.operand_bytes[i] * reps;
    }
  }
  if (nplans) *nplans = e->bd.nplans;
  tl_ctx_ok(ctx);
  return TL_OK;
}
