/* plan.c — tl_plan_new: a kernel checked against its tensors once, so that runs do no checking.
 *
 * It validates every argument (each refusal names the operand, the dim and the numbers), parses
 * the index maps, resolves block shapes, decides which outputs share an input's staged buffer
 * (read-modify-write), refuses overlaps and blocks wholly outside their tensor, checks the L2 and
 * L1 budgets, and then simulates the grid once in the order the workers will run it (static
 * chunks of the parallel index space) to (1) enforce the ownership rules — every output block
 * belongs to one parallel index, and TL_OUT_WRITE blocks are visited consecutively — (2) count
 * the steps touching each output block (first/last visit), and (3) compute the exact cost that
 * tl_plan_stats will count. Nothing the caller owns is touched. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plan_impl.h"

/* Messages go to the plan's error buffer: the context's for tl_plan_new, the caller's for a
 * nested plan (tl_pipeline_run), which must not touch the shared context. */
static tl_status tl_err(char *err, size_t errn, tl_status s, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static tl_status tl_err(char *err, size_t errn, tl_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errn, fmt, ap);
  va_end(ap);
  return s;
}
#define tl_plan_fail(pl, ...) tl_err((pl)->err, (pl)->errn, __VA_ARGS__)

static const char *tl_op_kind(const tl_plan *pl, int o) { return o < pl->n_in ? "input" : "output"; }
static int tl_op_num(const tl_plan *pl, int o) { return o < pl->n_in ? o : o - pl->n_in; }

/* "input 1" / "output 0" plus the kernel name, for messages. */
#define OPF "%s %d of kernel '%s'"
#define OPA(pl, o) tl_op_kind(pl, o), tl_op_num(pl, o), (pl)->name

static void tl_fmt_shape(char *buf, size_t n, int ndim, const int64_t *s) {
  size_t used = 0;
  buf[0] = 0;
  if (ndim == 0) snprintf(buf, n, "scalar");
  for (int d = 0; d < ndim && used < n; d++) used += (size_t)snprintf(buf + used, n - used, d ? "x%lld" : "%lld", (long long)s[d]);
}

static void tl_fmt_bytes(char *buf, size_t n, int64_t b) {
  if (b >= (1 << 20)) snprintf(buf, n, "%.1f MiB", b / 1048576.0);
  else if (b >= 1024) snprintf(buf, n, "%.1f KiB", b / 1024.0);
  else snprintf(buf, n, "%lld B", (long long)b);
}

void tl_tensor_span(const tl_tensor *t, uintptr_t *lo, uintptr_t *hi) {
  int64_t n = tl_tensor_nbytes(t);
  *lo = (uintptr_t)t->data;
  *hi = *lo + (uintptr_t)(n > 0 ? n : 0);
}

static int tl_spans_overlap(const tl_tensor *a, const tl_tensor *b) {
  if (tl_tensor_numel(a) <= 0 || tl_tensor_numel(b) <= 0) return 0;
  uintptr_t alo, ahi, blo, bhi;
  tl_tensor_span(a, &alo, &ahi);
  tl_tensor_span(b, &blo, &bhi);
  return alo < bhi && blo < ahi;
}

static int tl_same_view(const tl_tensor *a, const tl_tensor *b) {
  if (a->data != b->data || a->dtype != b->dtype || a->ndim != b->ndim) return 0;
  if (memcmp(&a->layout, &b->layout, sizeof a->layout)) return 0;
  for (int d = 0; d < a->ndim; d++)
    if (a->shape[d] != b->shape[d] || a->stride[d] != b->stride[d]) return 0;
  return 1;
}

/* See runtime_impl.h. */
int tl_view_self_overlaps(const tl_tensor *t, int *d0, int *d1) {
  int ord[TL_MAX_DIMS], n = 0;
  for (int d = 0; d < t->ndim; d++)
    if (t->shape[d] == 0) return 0; /* no elements */
  for (int d = 0; d < t->ndim; d++)
    if (t->shape[d] > 1) {
      if (t->stride[d] == 0) { /* a broadcast dim */
        *d0 = *d1 = d;
        return 1;
      }
      ord[n++] = d;
    }
  for (int a = 1; a < n; a++) /* insertion sort by stride */
    for (int b = a; b > 0 && t->stride[ord[b]] < t->stride[ord[b - 1]]; b--) {
      int x = ord[b];
      ord[b] = ord[b - 1], ord[b - 1] = x;
    }
  int64_t span = 0; /* largest offset reachable with the smaller dims */
  for (int a = 0; a < n; a++) {
    if (a > 0 && t->stride[ord[a]] <= span) {
      *d0 = ord[a], *d1 = ord[a - 1];
      return 1;
    }
    span += (t->shape[ord[a]] - 1) * t->stride[ord[a]];
  }
  return 0;
}

static tl_status tl_check_layout(tl_plan *pl, const tl_layout *l, int ndim, const char *what, int idx) {
  if (!l->tiled) {
    if (l->vnni > 1 || l->tile_r || l->tile_c)
      return tl_plan_fail(pl, TL_ERR_INVALID, "%s %d of kernel '%s': row-major layout with vnni/tile fields set (set tiled = 1)",
                         what, idx, pl->name);
    return TL_OK;
  }
  if (ndim < 2)
    return tl_plan_fail(pl, TL_ERR_INVALID, "%s %d of kernel '%s': a tiled layout needs >= 2 dims, has %d", what, idx, pl->name, ndim);
  int v = l->vnni ? l->vnni : 1;
  if (!l->tile_r || !l->tile_c || (v != 1 && v != 2 && v != 4) || l->tile_r % v)
    return tl_plan_fail(pl, TL_ERR_INVALID,
                       "%s %d of kernel '%s': bad tiled layout %ux%u vnni %u (tiles > 0, vnni 1/2/4 dividing tile_r)",
                       what, idx, pl->name, l->tile_r, l->tile_c, l->vnni);
  return TL_OK;
}

/* Valid bytes of block bi of operand o. */
static int64_t tl_block_valid_bytes(const tl_operand *o, const int64_t *bi) {
  int64_t n = (int64_t)o->esize;
  for (int d = 0; d < o->t.ndim; d++) {
    int64_t v = o->t.shape[d] - bi[d] * o->block[d];
    n *= v < o->block[d] ? v : o->block[d];
  }
  return n;
}

/* Linear id of the block at grid point g (its block index in bi). */
static int64_t tl_block_at(const tl_operand *o, const int64_t *g, int64_t *bi) {
  int64_t lin = 0;
  for (int d = 0; d < o->t.ndim; d++) {
    bi[d] = tl_map_eval(&o->map.e[d], g);
    lin = lin * o->nblk[d] + bi[d];
  }
  return lin;
}

/* Checks one operand (tensor + spec) and fills pl->op[i]. */
static tl_status tl_plan_operand(tl_plan *pl, int i, const tl_tensor *t, const tl_blockspec *bs, char **strp) {
  tl_operand *o = &pl->op[i];
  char msg[600];
  char what[128];
  snprintf(what, sizeof what, "%s %d of kernel '%s'", tl_op_kind(pl, i), tl_op_num(pl, i), pl->name);
  tl_status s = tl_tensor_check(t, what, msg, sizeof msg);
  if (s != TL_OK) return tl_plan_fail(pl, s, "%s", msg);
  if (bs->ndim != t->ndim)
    return tl_plan_fail(pl, TL_ERR_SHAPE, OPF ": blockspec has %d dims, the tensor %d", OPA(pl, i), bs->ndim, t->ndim);
  o->is_out = i >= pl->n_in;
  o->spec = *bs;
  o->t = *t;
  o->esize = tl_dtype_size(t->dtype);
  o->shares = o->shared_by = -1;
  if ((unsigned)bs->stage > TL_STAGE_NEVER || (unsigned)bs->level > TL_L1 || (unsigned)bs->out > TL_OUT_ACCUM_LOAD)
    return tl_plan_fail(pl, TL_ERR_INVALID, OPF ": blockspec has an unknown stage (%d), level (%d) or out mode (%d)",
                       OPA(pl, i), (int)bs->stage, (int)bs->level, (int)bs->out);
  if (!o->is_out && bs->out != TL_OUT_WRITE)
    return tl_plan_fail(pl, TL_ERR_INVALID, OPF ": out mode is for outputs only", OPA(pl, i));
  if (bs->buffers < 0 || bs->buffers > 2)
    return tl_plan_fail(pl, TL_ERR_INVALID, OPF ": buffers is %d, must be 0, 1 or 2", OPA(pl, i), bs->buffers);
  if (bs->prefetch < 0 || bs->prefetch > 1 || bs->pad_any < 0 || bs->pad_any > 1)
    return tl_plan_fail(pl, TL_ERR_INVALID, OPF ": prefetch and pad_any must be 0 or 1", OPA(pl, i));
  if (isnan(bs->pad) && t->dtype != TL_F32 && t->dtype != TL_F16 && t->dtype != TL_BF16)
    return tl_plan_fail(pl, TL_ERR_INVALID, OPF ": pad is NaN for integer dtype %s", OPA(pl, i), tl_dtype_name(t->dtype));
  o->nbuf = bs->buffers ? bs->buffers : 1;
  s = tl_check_layout(pl, &bs->layout, t->ndim, o->is_out ? "output" : "input", tl_op_num(pl, i));
  if (s != TL_OK) return s;
  if (t->layout.tiled && memcmp(&t->layout, &bs->layout, sizeof t->layout) &&
      !(t->layout.vnni <= 1 && bs->layout.vnni <= 1 && t->layout.tile_r == bs->layout.tile_r &&
        t->layout.tile_c == bs->layout.tile_c && bs->layout.tiled))
    return tl_plan_fail(pl, TL_ERR_INVALID, OPF ": the tensor is tiled %ux%u vnni %u; its blockspec must ask for the same layout",
                       OPA(pl, i), t->layout.tile_r, t->layout.tile_c, t->layout.vnni);
  if (bs->stage == TL_STAGE_NEVER && !t->layout.tiled && bs->layout.tiled)
    return tl_plan_fail(pl, TL_ERR_INVALID, OPF ": stage NEVER, but the blockspec asks for a tiled layout of a row-major tensor",
                       OPA(pl, i));
  if (o->is_out && !t->layout.tiled) {
    for (int d = 0; d < t->ndim; d++)
      if (t->stride[d] == 0 && t->shape[d] > 1)
        return tl_plan_fail(pl, TL_ERR_INVALID, OPF ": dim %d has stride 0 (outputs cannot broadcast)", OPA(pl, i), d);
    int d0, d1;
    if (tl_view_self_overlaps(t, &d0, &d1))
      return tl_plan_fail(pl, TL_ERR_INVALID,
                          OPF ": its elements overlap each other (dim %d, stride %lld, and dim %d, stride %lld x size %lld): two steps could write the same element",
                          OPA(pl, i), d0, (long long)t->stride[d0], d1, (long long)t->stride[d1], (long long)t->shape[d1]);
  }
  o->nblocks = 1;
  for (int d = 0; d < t->ndim; d++) {
    if (bs->block[d] < 0)
      return tl_plan_fail(pl, TL_ERR_SHAPE, OPF ": block dim %d is %lld", OPA(pl, i), d, (long long)bs->block[d]);
    o->block[d] = bs->block[d] ? bs->block[d] : t->shape[d];
    o->nblk[d] = t->shape[d] && o->block[d] ? (t->shape[d] - 1) / o->block[d] + 1 : 1;
    if (tl_mul_ovf(o->nblocks, o->nblk[d], &o->nblocks))
      return tl_plan_fail(pl, TL_ERR_SHAPE, OPF ": too many blocks", OPA(pl, i));
  }
  /* a block of a tiled tensor is itself a tiled block in place (contiguous, its tiles in the
     order of a tensor of the block's shape) when it spans every dim but the first and, for 2-D
     tensors, starts on a tile row (block rows a multiple of tile_r, or the whole dim); or when it
     is one matrix of the leading dims, one tile row (tile_r rows, or all of them when they fit in
     one) and whole tiles of columns (block columns a multiple of tile_c): consecutive tiles of
     one tile row */
  o->full_tiled_inplace = t->layout.tiled;
  for (int d = 1; d < t->ndim && o->full_tiled_inplace; d++)
    o->full_tiled_inplace = o->block[d] == t->shape[d];
  if (o->full_tiled_inplace && t->ndim == 2)
    o->full_tiled_inplace = o->block[0] >= t->shape[0] || o->block[0] % t->layout.tile_r == 0;
  if (!o->full_tiled_inplace && t->layout.tiled) {
    const int rd = t->ndim - 2, cd = t->ndim - 1;
    const int64_t tr = t->layout.tile_r, tc = t->layout.tile_c;
    int ok = (o->block[rd] == tr || (o->block[rd] >= t->shape[rd] && t->shape[rd] <= tr)) && o->block[cd] % tc == 0;
    for (int d = 0; d < rd && ok; d++) ok = o->block[d] == 1;
    o->full_tiled_inplace = ok;
  }
  /* the map */
  if (bs->map) {
    size_t n = strlen(bs->map) + 1;
    memcpy(*strp, bs->map, n);
    o->spec.map = *strp;
    *strp += n;
  }
  s = tl_map_parse(bs->map, pl->k.grid_ndim, t->ndim, &o->map, msg, sizeof msg);
  if (s != TL_OK) return tl_plan_fail(pl, s, OPF ": %s", OPA(pl, i), msg);
  if (t->layout.tiled && bs->stage == TL_STAGE_NEVER && !o->full_tiled_inplace)
    return tl_plan_fail(pl, TL_ERR_INVALID, OPF ": stage NEVER on a tiled tensor needs blocks spanning every dim but the first (2-D: starting on tile rows), or one matrix, one tile row and whole tiles of columns",
                       OPA(pl, i));
  if (!pl->empty)
    for (int d = 0; d < t->ndim; d++) {
      int64_t lo, hi;
      tl_map_expr_range(&o->map.e[d], pl->k.grid, &lo, &hi);
      if (lo < 0 || hi >= o->nblk[d])
        return tl_plan_fail(pl, TL_ERR_INVALID,
                           OPF ": the map gives block index %lld in dim %d, outside 0..%lld (size %lld, block %lld): such a step's block lies wholly outside the tensor",
                           OPA(pl, i), (long long)(lo < 0 ? lo : hi), d, (long long)o->nblk[d] - 1,
                           (long long)t->shape[d], (long long)o->block[d]);
    }
  /* pad and poison values in the tensor's dtype */
  tl_store_f64(o->pad, t->dtype, 0, bs->pad);
  /* interpret mode: padding and unwritten outputs get quiet NaNs with different payloads, so
     padding that leaks into an output reads as NaN there without looking unwritten */
  memset(o->poison, 0x5A, sizeof o->poison);
  memset(o->poison_pad, 0x5A, sizeof o->poison_pad);
  if (t->dtype == TL_F32) {
    uint32_t w = 0x7FC05A5Au, pw = 0x7FC0A0A0u;
    memcpy(o->poison, &w, 4), memcpy(o->poison_pad, &pw, 4);
  } else if (t->dtype == TL_BF16 || t->dtype == TL_F16) {
    uint16_t w = t->dtype == TL_BF16 ? 0x7FC5 : 0x7E05, pw = t->dtype == TL_BF16 ? 0x7FC1 : 0x7E01;
    memcpy(o->poison, &w, 2), memcpy(o->poison_pad, &pw, 2);
  }
  return TL_OK;
}

/* Read-modify-write sharing and overlap refusals. */
static tl_status tl_plan_aliasing(tl_plan *pl) {
  for (int oi = pl->n_in; oi < pl->nops; oi++) {
    tl_operand *o = &pl->op[oi];
    for (int j = 0; j < pl->nops; j++) {
      if (j == oi) continue;
      tl_operand *x = &pl->op[j];
      if (!tl_spans_overlap(&o->t, &x->t)) continue;
      if (j < pl->n_in && x->shared_by < 0 && o->shares < 0 && o->spec.out != TL_OUT_ACCUM_ZERO && tl_same_view(&o->t, &x->t) &&
          !memcmp(o->block, x->block, sizeof o->block) && !memcmp(&o->map, &x->map, sizeof o->map) &&
          !memcmp(&o->spec.layout, &x->spec.layout, sizeof o->spec.layout) && o->spec.level == x->spec.level) {
        o->shares = j;
        x->shared_by = oi;
        continue;
      }
      return tl_plan_fail(pl, TL_ERR_INVALID,
                         OPF " overlaps %s %d in memory (only an input and a TL_OUT_WRITE or TL_OUT_ACCUM_LOAD output with the same tensor, map, block and layout may share memory)",
                         OPA(pl, oi), tl_op_kind(pl, j), tl_op_num(pl, j));
    }
  }
  return TL_OK;
}

/* Bytes of one padded block (shape in layout, dtype dt), or -1 beyond TL_BLOCK_BYTES_CAP. */
#define TL_BLOCK_BYTES_CAP ((int64_t)1 << 50)
static int64_t tl_block_bytes(int ndim, const int64_t *shape, tl_layout layout, tl_dtype dt) {
  int64_t n = tl_block_elems(ndim, shape, layout), b;
  if (n < 0 || tl_mul_ovf(n, (int64_t)tl_dtype_size(dt), &b) || b > TL_BLOCK_BYTES_CAP) return -1;
  return b;
}

/* Per-worker arena layout and the budgets. Sizes are capped at 2^50 bytes each, so the sums
 * below cannot overflow. */
static tl_status tl_plan_budget(tl_plan *pl) {
  int64_t used[2] = {0, 0}, off = 0, big_bytes[2] = {0, 0};
  int big[2] = {-1, -1};
  char shp[96], a[32], bgt[32], bb[32];
  for (int i = 0; i < pl->nops; i++) {
    tl_operand *o = &pl->op[i];
    int64_t b = tl_block_bytes(o->t.ndim, o->block, o->spec.layout, o->t.dtype);
    if (b < 0) {
      tl_fmt_shape(shp, sizeof shp, o->t.ndim, o->block);
      return tl_plan_fail(pl, TL_ERR_VMEM, OPF ": block %s %s is larger than any staging budget", OPA(pl, i), shp,
                          tl_dtype_name(o->t.dtype));
    }
    o->buf_bytes = TL_CDIV(b, TL_BUF_ALIGN) * TL_BUF_ALIGN;
    tl_operand_geometry(o);
    if (o->spec.stage == TL_STAGE_NEVER) { /* always in place: no buffer, no VMEM */
      o->buf_bytes = 0;
      o->buf_off = -1;
      continue;
    }
    if (o->shares >= 0) {
      o->buf_off = -1;
      continue;
    }
    o->buf_off = off;
    off += o->buf_bytes * o->nbuf + TL_ALIAS_SLACK; /* room to place the buffers off the source's 4K alias */
    used[o->spec.level] += b * o->nbuf;
    if (b * o->nbuf > big_bytes[o->spec.level]) big[o->spec.level] = i, big_bytes[o->spec.level] = b * o->nbuf;
  }
  for (int i = 0; i < pl->n_scratch; i++) {
    const tl_scratch *sc = &pl->scratch[i];
    int64_t b = tl_block_bytes(sc->ndim, sc->shape, sc->layout, sc->dtype);
    if (b < 0) {
      tl_fmt_shape(shp, sizeof shp, sc->ndim, sc->shape);
      return tl_plan_fail(pl, TL_ERR_VMEM, "scratch %d of kernel '%s': %s %s is larger than any staging budget", i, pl->name, shp,
                          tl_dtype_name(sc->dtype));
    }
    pl->scratch_off[i] = off;
    pl->scratch_bytes[i] = b;
    off += TL_CDIV(b, TL_BUF_ALIGN) * TL_BUF_ALIGN;
    used[sc->level] += b;
  }
  pl->arena_bytes = off;
  pl->cost.vmem_bytes = used[TL_L2];
  pl->cost.l1_bytes = used[TL_L1];
  const tl_ctx_info *ci = &pl->ctx->info;
  const size_t budget[2] = {ci->vmem_bytes, ci->l1_bytes};
  static const char *const level_name[2] = {"VMEM (L2)", "L1"};
  for (int l = 0; l < 2; l++) {
    if ((uint64_t)used[l] <= budget[l]) continue;
    tl_fmt_bytes(a, sizeof a, used[l]);
    tl_fmt_bytes(bgt, sizeof bgt, (int64_t)budget[l]);
    if (big[l] < 0)
      return tl_plan_fail(pl, TL_ERR_VMEM, "kernel '%s': scratch needs %s of %s per thread, the budget is %s", pl->name, a,
                          level_name[l], bgt);
    const tl_operand *o = &pl->op[big[l]];
    tl_fmt_shape(shp, sizeof shp, o->t.ndim, o->block);
    tl_fmt_bytes(bb, sizeof bb, big_bytes[l]);
    return tl_plan_fail(pl, TL_ERR_VMEM,
                        "kernel '%s': blocks and scratch need %s of %s per thread, the budget is %s; the largest is %s %d: block %s %s x %d buffer(s) = %s",
                        pl->name, a, level_name[l], bgt, tl_op_kind(pl, big[l]), tl_op_num(pl, big[l]), shp, tl_dtype_name(o->t.dtype),
                        o->nbuf, bb);
  }
  return TL_OK;
}

/* Walks the grid in run order: ownership rules, visits per output block, exact cost. */
static tl_status tl_plan_simulate(tl_plan *pl) {
  tl_status s = TL_OK;
  int64_t *owner[TL_MAX_OPERANDS] = {0};
  uint8_t *left[TL_MAX_OPERANDS] = {0};
  int64_t cur[TL_MAX_OPERANDS], curbi[TL_MAX_OPERANDS][TL_MAX_DIMS], bi[TL_MAX_DIMS];
  tl_cost *c = &pl->cost;
  for (int i = pl->n_in; i < pl->nops; i++) {
    tl_operand *o = &pl->op[i];
    o->visits = tl_calloc((size_t)o->nblocks, sizeof(int64_t));
    o->done = tl_calloc((size_t)o->nblocks, sizeof(int64_t));
    owner[i] = tl_calloc((size_t)o->nblocks, sizeof(int64_t));
    left[i] = tl_calloc((size_t)o->nblocks, 1);
    if (!o->visits || !o->done || !owner[i] || !left[i]) {
      s = tl_plan_fail(pl, TL_ERR_NOMEM, "kernel '%s': out of memory for %lld output blocks", pl->name, (long long)o->nblocks);
      goto out;
    }
  }
  if (pl->empty) goto out;
  const int nd = pl->k.grid_ndim;
  for (int w = 0; w < pl->threads; w++) {
    int64_t p0 = pl->n_par * w / pl->threads, p1 = pl->n_par * (w + 1) / pl->threads;
    int64_t g[TL_MAX_DIMS] = {0};
    int64_t rest = p0 * pl->n_inner;
    for (int a = nd - 1; a >= 0; a--) g[a] = rest % pl->k.grid[a], rest /= pl->k.grid[a];
    for (int i = 0; i < pl->nops; i++) cur[i] = -1;
    for (int64_t step = p0 * pl->n_inner; step < p1 * pl->n_inner; step++) {
      int64_t pidx = step / pl->n_inner;
      for (int i = 0; i < pl->nops; i++) {
        tl_operand *o = &pl->op[i];
        int64_t lin = tl_block_at(o, g, bi);
        if (o->is_out) { /* checked every step: consecutive steps may belong to two parallel indices */
          if (o->visits[lin] && owner[i][lin] != pidx) {
            s = tl_plan_fail(pl, TL_ERR_INVALID,
                            OPF ": block %lld is visited from two parallel indices (%lld and %lld): an axis its map ignores is TL_PARALLEL (make it TL_ARBITRARY or move it after the parallel prefix)",
                            OPA(pl, i), (long long)lin, (long long)owner[i][lin], (long long)pidx);
            goto out;
          }
          owner[i][lin] = pidx;
        }
        if (lin != cur[i]) {
          if (o->is_out) {
            if (cur[i] >= 0) {
              c->operand_bytes[i] += tl_block_valid_bytes(o, curbi[i]);
              c->bytes_written += tl_block_valid_bytes(o, curbi[i]);
              left[i][cur[i]] = 1;
            }
            if (left[i][lin] && o->spec.out == TL_OUT_WRITE) {
              s = tl_plan_fail(pl, TL_ERR_INVALID,
                              OPF ": TL_OUT_WRITE block %lld is revisited after being left (its steps are not consecutive); use TL_OUT_ACCUM_ZERO/LOAD or reorder the grid",
                              OPA(pl, i), (long long)lin);
              goto out;
            }
            if (o->shares < 0 && (o->spec.out == TL_OUT_ACCUM_LOAD || (o->spec.out == TL_OUT_ACCUM_ZERO && o->visits[lin]))) {
              c->operand_bytes[i] += tl_block_valid_bytes(o, bi);
              c->bytes_read += tl_block_valid_bytes(o, bi);
            }
          } else {
            c->operand_bytes[i] += tl_block_valid_bytes(o, bi);
            c->bytes_read += tl_block_valid_bytes(o, bi);
          }
          cur[i] = lin;
          memcpy(curbi[i], bi, sizeof bi);
        }
        if (o->is_out) o->visits[lin]++;
      }
      for (int a = nd - 1; a >= 0; a--) {
        if (++g[a] < pl->k.grid[a]) break;
        g[a] = 0;
      }
    }
    for (int i = pl->n_in; i < pl->nops; i++)
      if (cur[i] >= 0) {
        int64_t b = tl_block_valid_bytes(&pl->op[i], curbi[i]);
        c->operand_bytes[i] += b;
        c->bytes_written += b;
        left[i][cur[i]] = 1;
      }
  }
out:
  for (int i = 0; i < TL_MAX_OPERANDS; i++) {
    tl_free_mem(owner[i]);
    tl_free_mem(left[i]);
  }
  return s;
}

tl_status tl_plan_build(tl_ctx *ctx, const tl_kernel *k, const tl_tensor *in, const tl_tensor *out, int nested, char *err,
                        size_t errn, tl_plan **plan) {
  *plan = NULL;
  if (!k) return tl_err(err, errn, TL_ERR_INVALID, "tl_plan_new: kernel is NULL");
  const char *name = k->name ? k->name : "kernel";
  if (!k->body) return tl_err(err, errn, TL_ERR_INVALID, "kernel '%s': body is NULL", name);
  if (k->n_in < 0 || k->n_out < 0 || k->n_in + k->n_out > TL_MAX_OPERANDS || k->n_scratch < 0 || k->n_scratch > TL_MAX_OPERANDS)
    return tl_err(err, errn, TL_ERR_INVALID, "kernel '%s': %d inputs, %d outputs, %d scratch: at most %d operands and %d scratch",
                       name, k->n_in, k->n_out, k->n_scratch, TL_MAX_OPERANDS, TL_MAX_OPERANDS);
  if ((k->n_in && (!k->in || !in)) || (k->n_out && (!k->out || !out)) || (k->n_scratch && !k->scratch))
    return tl_err(err, errn, TL_ERR_INVALID, "kernel '%s': a blockspec, scratch or tensor array is NULL", name);
  if (k->grid_ndim < 0 || k->grid_ndim > TL_MAX_DIMS)
    return tl_err(err, errn, TL_ERR_INVALID, "kernel '%s': grid_ndim is %d, must be 0..%d", name, k->grid_ndim, TL_MAX_DIMS);
  if (k->flops < 0) return tl_err(err, errn, TL_ERR_INVALID, "kernel '%s': flops is negative", name);

  tl_status s = TL_OK;
  size_t strbytes = 0;
  for (int i = 0; i < k->n_in; i++) strbytes += k->in[i].map ? strlen(k->in[i].map) + 1 : 0;
  for (int i = 0; i < k->n_out; i++) strbytes += k->out[i].map ? strlen(k->out[i].map) + 1 : 0;
  tl_plan *pl = tl_calloc(1, sizeof *pl);
  char *strings = tl_calloc(1, strbytes + 1);
  if (!pl || !strings) {
    tl_free_mem(pl);
    tl_free_mem(strings);
    return tl_err(err, errn, TL_ERR_NOMEM, "kernel '%s': out of memory", name);
  }
  pl->ctx = ctx;
  pl->err = err;
  pl->errn = errn;
  pl->nested = nested;
  pl->strings = strings;
  snprintf(pl->name, sizeof pl->name, "%s", name);
  pl->k = *k;
  pl->k.name = pl->name;
  pl->n_in = k->n_in;
  pl->n_out = k->n_out;
  pl->nops = k->n_in + k->n_out;
  pl->n_scratch = k->n_scratch;
  pl->interpret = ctx->info.interpret;
  pl->isa = nested ? ctx->info.isa : tl_ctx_need_amx(ctx); /* AMX permission before any body runs */

  /* grid and semantics */
  int seen_arbitrary = 0;
  pl->n_par = pl->n_inner = 1;
  for (int a = 0; a < k->grid_ndim; a++) {
    if (k->grid[a] < 0) {
      s = tl_err(err, errn, TL_ERR_INVALID, "kernel '%s': grid axis %d is %lld", name, a, (long long)k->grid[a]);
      goto out;
    }
    if ((unsigned)k->sem[a] > TL_PARALLEL) {
      s = tl_err(err, errn, TL_ERR_INVALID, "kernel '%s': grid axis %d has unknown semantics %d", name, a, (int)k->sem[a]);
      goto out;
    }
    if (k->sem[a] == TL_PARALLEL && seen_arbitrary) {
      s = tl_err(err, errn, TL_ERR_INVALID, "kernel '%s': grid axis %d is TL_PARALLEL after an TL_ARBITRARY axis (parallel axes form a prefix)",
                      name, a);
      goto out;
    }
    seen_arbitrary |= k->sem[a] != TL_PARALLEL;
    if (k->grid[a] == 0) pl->empty = 1;
    int64_t *acc = k->sem[a] == TL_PARALLEL ? &pl->n_par : &pl->n_inner;
    if (k->sem[a] == TL_PARALLEL) pl->par_axes = a + 1;
    if (tl_mul_ovf(*acc, k->grid[a] ? k->grid[a] : 1, acc)) {
      s = tl_err(err, errn, TL_ERR_INVALID, "kernel '%s': the grid has more than 2^63 steps", name);
      goto out;
    }
  }
  if (tl_mul_ovf(pl->n_par, pl->n_inner, &pl->n_steps)) {
    s = tl_err(err, errn, TL_ERR_INVALID, "kernel '%s': the grid has more than 2^63 steps", name);
    goto out;
  }
  if (pl->empty) pl->n_steps = 0;
  pl->threads = pl->interpret || nested ? 1 : (int)TL_MIN((int64_t)ctx->info.threads, pl->n_par);

  /* operands */
  char *strp = strings;
  for (int i = 0; i < k->n_out; i++)
    if (tl_tensor_numel(&out[i]) == 0) pl->empty = 1;
  for (int i = 0; i < pl->nops && s == TL_OK; i++) {
    const tl_tensor *t = i < k->n_in ? &in[i] : &out[i - k->n_in];
    const tl_blockspec *bs = i < k->n_in ? &k->in[i] : &k->out[i - k->n_in];
    s = tl_plan_operand(pl, i, t, bs, &strp);
  }
  if (s != TL_OK) goto out;
  for (int i = 0; i < k->n_scratch; i++) {
    const tl_scratch *sc = &k->scratch[i];
    char what[128];
    snprintf(what, sizeof what, "scratch %d of kernel '%s'", i, name);
    tl_tensor tmp = {.data = NULL, .dtype = sc->dtype, .ndim = sc->ndim, .layout = sc->layout};
    if (sc->ndim >= 0 && sc->ndim <= TL_MAX_DIMS) memcpy(tmp.shape, sc->shape, sizeof tmp.shape);
    char msg[512];
    tmp.data = (void *)16; /* a scratch buffer always exists; check the rest */
    if ((s = tl_tensor_check(&tmp, what, msg, sizeof msg)) != TL_OK) {
      s = tl_err(err, errn, s, "%s", msg);
      goto out;
    }
    if ((unsigned)sc->level > TL_L1) {
      s = tl_err(err, errn, TL_ERR_INVALID, "%s: unknown level %d", what, (int)sc->level);
      goto out;
    }
    pl->scratch[i] = *sc;
  }
  pl->k.in = NULL;
  pl->k.out = NULL;
  pl->k.scratch = NULL;
  for (int i = 0; i < pl->nops; i++)
    pl->op[i].pack = tl_packer_find(pl->op[i].esize, pl->op[i].spec.layout, pl->isa);
  if ((s = tl_plan_aliasing(pl)) != TL_OK) goto out;
  if ((s = tl_plan_budget(pl)) != TL_OK) goto out;
  pl->cost.flops = k->flops;
  if ((s = tl_plan_simulate(pl)) != TL_OK) goto out;
  pl->wstats = tl_aligned_alloc(64, sizeof(tl_wstats) * (size_t)TL_MAX(pl->threads, 1));
  if (!pl->wstats) {
    s = tl_err(err, errn, TL_ERR_NOMEM, "kernel '%s': out of memory", name);
    goto out;
  }
  for (int i = 0; i < pl->n_in; i++) {
    const tl_operand *o = &pl->op[i];
    pl->any_prefetch |= o->spec.prefetch;
    if (o->nbuf == 2 && !o->t.layout.tiled && o->spec.stage != TL_STAGE_NEVER) pl->pump_ops[pl->n_pump++] = i;
  }
out:
  if (s != TL_OK) {
    for (int i = 0; i < TL_MAX_OPERANDS; i++) {
      tl_free_mem(pl->op[i].visits);
      tl_free_mem(pl->op[i].done);
    }
    tl_free_mem(pl->strings);
    tl_aligned_free(pl->wstats);
    tl_free_mem(pl);
    return s;
  }
  if (!nested) {
    pl->next = ctx->plans;
    if (ctx->plans) ctx->plans->prev = pl;
    ctx->plans = pl;
  }
  *plan = pl;
  return TL_OK;
}

tl_status tl_plan_new(tl_ctx *ctx, const tl_kernel *k, const tl_tensor *in, const tl_tensor *out, tl_plan **plan) {
  if (!ctx) return tl_fail_tls(TL_ERR_INVALID, "tl_plan_new: ctx is NULL");
  if (tl_prog_current()) /* the context's lists and messages are not for workers */
    return tl_fail_tls(TL_ERR_INVALID, "tl_plan_new: called from inside a body (use tl_pipeline_run for a nested grid)");
  if (!plan) return tl_ctx_fail(ctx, TL_ERR_INVALID, "tl_plan_new: plan is NULL");
  tl_status s = tl_plan_build(ctx, k, in, out, 0, ctx->err, sizeof ctx->err, plan);
  if (s == TL_OK) tl_ctx_ok(ctx);
  return s;
}

void tl_plan_free(tl_plan *pl) {
  if (!pl) return;
  if (!pl->nested) {
    if (pl->prev) pl->prev->next = pl->next;
    else pl->ctx->plans = pl->next;
    if (pl->next) pl->next->prev = pl->prev;
  }
  for (int i = 0; i < TL_MAX_OPERANDS; i++) {
    tl_free_mem(pl->op[i].visits);
    tl_free_mem(pl->op[i].done);
  }
  tl_free_mem(pl->strings);
  tl_aligned_free(pl->wstats);
  tl_free_mem(pl);
}

tl_status tl_plan_cost(const tl_plan *pl, tl_cost *out) {
  if (!pl || !out) return tl_fail_tls(TL_ERR_INVALID, "tl_plan_cost: %s is NULL", pl ? "out" : "plan");
  *out = pl->cost;
  return TL_OK;
}

tl_status tl_plan_stats(const tl_plan *pl, tl_stats *out) {
  if (!pl || !out) return tl_fail_tls(TL_ERR_INVALID, "tl_plan_stats: %s is NULL", pl ? "out" : "plan");
  *out = pl->stats;
  return TL_OK;
}

tl_status tl_call(tl_ctx *ctx, const tl_kernel *k, const tl_tensor *in, const tl_tensor *out) {
  tl_plan *pl = NULL;
  tl_status s = tl_plan_new(ctx, k, in, out, &pl);
  if (s != TL_OK) return s;
  s = tl_plan_run(pl, in, out);
  tl_plan_free(pl);
  return s;
}

int tl_plan_tensor_bytes(const tl_plan *pl, int64_t *bytes) {
  for (int i = 0; i < pl->nops; i++) bytes[i] = tl_tensor_nbytes(&pl->op[i].t);
  return pl->nops;
}
