/* exec.c — tl_plan_run: the workers walk the grid and move the blocks.
 *
 * Each worker takes a static chunk of the parallel index space and runs its steps in
 * lexicographic order (last axis fastest). Per step and operand it evaluates the index map; when
 * the block index differs from the worker's previous step it leaves the old output block
 * (write-back), then enters the new blocks: inputs are mapped in place or packed into the
 * worker's staging buffer with padding; outputs are mapped or staged and, in the accumulating
 * modes, zeroed on the first visit or read back. The order of moves is fixed, so results are
 * bitwise identical for a fixed ISA, thread count and plan. Counters live in per-worker cache
 * lines and are summed after the run. Nothing here allocates or locks. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "plan_impl.h"

void tl_unpack_portable(char *dst, int64_t dst_rs, int64_t dst_cs, const char *src, int64_t src_rows,
                        int64_t src_cols, tl_layout l, int64_t rows, int64_t cols, size_t esize);

static _Thread_local const tl_prog *tl_cur_prog;

const tl_prog *tl_prog_current(void) { return tl_cur_prog; }
tl_isa tl_prog_isa(const tl_prog *p) { return p ? p->plan->isa : TL_ISA_SCALAR; }

/* ---- the program handle ---- */

int64_t tl_program_id(const tl_prog *p, int axis) {
  if (!p || axis < 0 || axis >= p->plan->k.grid_ndim) return -1;
  return p->g[axis];
}

int64_t tl_num_programs(const tl_prog *p, int axis) {
  if (!p || axis < 0 || axis >= p->plan->k.grid_ndim) return -1;
  return p->plan->k.grid[axis];
}

int tl_first_visit(const tl_prog *p, int out_index) {
  if (!p || out_index < 0 || out_index >= p->plan->n_out) return -1;
  return p->first[out_index];
}

int tl_last_visit(const tl_prog *p, int out_index) {
  if (!p || out_index < 0 || out_index >= p->plan->n_out) return -1;
  return p->last[out_index];
}

int tl_worker_id(const tl_prog *p) { return p ? p->worker : -1; }

int tl_prog_failed(const tl_prog *p) { return p && atomic_load_explicit(&p->run->failed, memory_order_relaxed); }

void tl_prog_fail(const tl_prog *p, tl_status s, const char *msg) {
  if (!p) return;
  int expected = 0;
  if (!atomic_compare_exchange_strong(&p->run->failed, &expected, 1)) return; /* the first wins */
  tl_run *run = p->run;
  const tl_plan *pl = p->plan;
  run->fail_status = s == TL_OK ? TL_ERR_INTERNAL : s;
  char where[160];
  size_t n = (size_t)snprintf(where, sizeof where, "kernel '%s' at step (", pl->name);
  for (int a = 0; a < pl->k.grid_ndim && n < sizeof where; a++)
    n += (size_t)snprintf(where + n, sizeof where - n, a ? ", %lld" : "%lld", (long long)p->g[a]);
  snprintf(run->fail_msg, sizeof run->fail_msg, "%s): %s", where, msg ? msg : "tl_prog_fail");
}

/* ---- per-worker state ---- */

/* Progress through the staging of one block: slab and row (a multiple of tile_r when tiled). */
typedef struct tl_stage_cursor {
  int64_t slab, row;
} tl_stage_cursor;


typedef struct tl_pending {
  int active;
  int64_t lin;
  int64_t bi[TL_MAX_DIMS], valid[TL_MAX_DIMS];
  tl_stage_cursor c;
} tl_pending;

typedef struct tl_wstate {
  tl_prog prog; /* first: tl_stage_pump finds the state from the program */
  tl_ref refs[TL_MAX_REFS];
  int64_t cur[TL_MAX_OPERANDS];              /* linear block index, -1: none */
  int64_t bi[TL_MAX_OPERANDS][TL_MAX_DIMS];  /* block index */
  uint8_t inplace[TL_MAX_OPERANDS];
  uint8_t cur_buf[TL_MAX_OPERANDS];          /* which of an operand's buffers holds its block */
  tl_pending pend[TL_MAX_OPERANDS];          /* the next step's block being staged by tl_stage_pump */
  char *arena;
  tl_wstats *ws;
} tl_wstate;

/* Visits every 2-D slab of a block: lead is the index over the leading (ndim - 2) block dims,
 * slab its position in the staged buffer. Returns the number of slabs. */
static int64_t tl_slabs(const tl_operand *o) {
  int64_t n = 1;
  for (int d = 0; d < o->t.ndim - 2; d++) n *= o->block[d];
  return n;
}

/* Rows, columns and their strides for the last two dims (1-D: one row; 0-D: one element). */
typedef struct tl_rc { int64_t rows, cols, rs, cs, brows, bcols; } tl_rc;
static tl_rc tl_rc_of(const tl_operand *o, const int64_t *valid, const int64_t *stride) {
  tl_rc r = {1, 1, 0, 1, 1, 1};
  int nd = o->t.ndim;
  if (nd >= 2) {
    r.rows = valid[nd - 2], r.cols = valid[nd - 1];
    r.rs = stride[nd - 2], r.cs = stride[nd - 1];
    r.brows = o->block[nd - 2], r.bcols = o->block[nd - 1];
  } else if (nd == 1) {
    r.cols = valid[0], r.cs = stride[0], r.bcols = o->block[0];
  }
  return r;
}

/* Element offset in the tensor of the first element of slab `lead` (-1 when the slab lies beyond
 * the valid region); lead is decomposed over the block's leading dims. */
static int64_t tl_slab_src(const tl_operand *o, const int64_t *bi, const int64_t *valid, int64_t lead) {
  int nd = o->t.ndim, lastd = nd >= 2 ? nd - 2 : 0;
  int64_t off = 0;
  for (int d = lastd - 1; d >= 0; d--) {
    int64_t l = lead % o->block[d];
    lead /= o->block[d];
    if (l >= valid[d]) return -1;
    off += (bi[d] * o->block[d] + l) * o->t.stride[d];
  }
  for (int d = lastd; d < nd; d++) off += bi[d] * o->block[d] * o->t.stride[d];
  return off;
}

static int64_t tl_slab_elems(const tl_operand *o) {
  int nd = o->t.ndim;
  if (nd < 2) return nd == 1 ? o->block[0] : 1;
  int64_t sh[2] = {o->block[nd - 2], o->block[nd - 1]};
  return tl_block_elems(2, sh, o->spec.layout);
}

/* Copies block bi of a tiled tensor into a staged buffer of the same layout, element by element. */
static void tl_stage_from_tiled(const tl_operand *o, const int64_t *bi, const int64_t *valid, char *buf, const void *pad) {
  const int nd = o->t.ndim;
  const int64_t es = (int64_t)o->esize, total = tl_block_elems(nd, o->block, o->spec.layout);
  const uint8_t *pb = pad;
  for (int64_t e = 0; e < total; e++) memcpy(buf + e * es, pb, (size_t)es);
  tl_tensor blk = {.data = buf, .dtype = o->t.dtype, .ndim = nd, .layout = o->spec.layout};
  memcpy(blk.shape, o->block, sizeof blk.shape);
  int64_t idx[TL_MAX_DIMS] = {0}, src[TL_MAX_DIMS];
  int64_t n = 1;
  for (int d = 0; d < nd; d++) n *= valid[d];
  for (int64_t e = 0; e < n; e++) {
    for (int d = 0; d < nd; d++) src[d] = bi[d] * o->block[d] + idx[d];
    memcpy(tl_tensor_at(&blk, idx), tl_tensor_at(&o->t, src), (size_t)es);
    for (int d = nd - 1; d >= 0; d--) {
      if (++idx[d] < valid[d]) break;
      idx[d] = 0;
    }
  }
}

/* The reverse, for a tiled output tensor. */
static void tl_unstage_to_tiled(const tl_operand *o, const int64_t *bi, const int64_t *valid, const char *buf) {
  const int nd = o->t.ndim;
  tl_tensor blk = {.data = (void *)buf, .dtype = o->t.dtype, .ndim = nd, .layout = o->spec.layout};
  memcpy(blk.shape, o->block, sizeof blk.shape);
  int64_t idx[TL_MAX_DIMS] = {0}, dst[TL_MAX_DIMS];
  int64_t n = 1;
  for (int d = 0; d < nd; d++) n *= valid[d];
  for (int64_t e = 0; e < n; e++) {
    for (int d = 0; d < nd; d++) dst[d] = bi[d] * o->block[d] + idx[d];
    memcpy(tl_tensor_at(&o->t, dst), tl_tensor_at(&blk, idx), o->esize);
    for (int d = nd - 1; d >= 0; d--) {
      if (++idx[d] < valid[d]) break;
      idx[d] = 0;
    }
  }
}

void tl_operand_geometry(tl_operand *o) {
  const tl_layout l = o->spec.layout;
  const int nd = o->t.ndim;
  o->slab_bytes = tl_slab_elems(o) * (int64_t)o->esize;
  o->nslab = tl_slabs(o);
  const int64_t brows = nd >= 2 ? o->block[nd - 2] : 1;
  o->rows_total = l.tiled ? TL_CDIV(brows, l.tile_r) * l.tile_r : brows;
  o->row_bytes = o->rows_total ? o->slab_bytes / o->rows_total : 0;
}

/* Bytes of staging left from cursor c (destination bytes, padding included). */
static int64_t tl_stage_left(const tl_operand *o, const tl_stage_cursor *c) {
  if (c->slab >= o->nslab) return 0;
  return (o->nslab - c->slab) * o->slab_bytes - c->row * o->row_bytes;
}

/* Packs block bi (valid extent) of a row-major tensor into buf from cursor c, about `budget`
 * destination bytes (at least one row, or one tile row when tiled); returns the bytes packed.
 * pad NULL leaves the padding alone. The block is complete when c->slab reaches the slab count. */
static int64_t tl_stage_some(const tl_operand *o, const int64_t *bi, const int64_t *valid, char *buf, const void *pad,
                             tl_stage_cursor *c, int64_t budget) {
  const int64_t es = (int64_t)o->esize, slab = o->slab_bytes, nslab = o->nslab;
  const tl_layout l = o->spec.layout;
  tl_rc rc = tl_rc_of(o, valid, o->t.stride);
  const int64_t granule = l.tiled ? l.tile_r : 1;
  const int64_t rows_total = o->rows_total, row_bytes = o->row_bytes;
  tl_pack_job j = {.src_rs = rc.rs, .src_cs = rc.cs, .dst_cols = rc.bcols, .layout = l, .esize = o->esize, .pad = pad};
  int64_t done = 0;
  while (c->slab < nslab && (done == 0 || done < budget)) {
    if (c->row >= rows_total) {
      c->slab++, c->row = 0;
      continue;
    }
    int64_t n = budget == INT64_MAX || !row_bytes ? rows_total : (budget - done) / row_bytes / granule * granule;
    n = TL_MIN(TL_MAX(n, granule), rows_total - c->row);
    int64_t off = tl_slab_src(o, bi, valid, c->slab);
    int64_t vr = off >= 0 ? TL_MIN(TL_MAX(rc.rows - c->row, 0), n) : 0;
    j.dst = buf + c->slab * slab + c->row * row_bytes;
    j.src = vr ? (const char *)o->t.data + (off + c->row * rc.rs) * es : NULL;
    j.rows = vr;
    j.cols = vr ? rc.cols : 0;
    j.dst_rows = n;
    o->pack(&j);
    done += n * row_bytes;
    c->row += n;
    if (c->row >= rows_total) c->slab++, c->row = 0;
  }
  return done;
}

/* Packs block bi (valid extent) of operand o into buf; pad NULL leaves the padding alone. */
static void tl_stage_block(const tl_operand *o, const int64_t *bi, const int64_t *valid, char *buf, const void *pad) {
  if (o->t.layout.tiled) {
    tl_stage_from_tiled(o, bi, valid, buf, pad ? pad : o->pad);
    return;
  }
  tl_stage_cursor c = {0, 0};
  tl_stage_some(o, bi, valid, buf, pad, &c, INT64_MAX);
}

/* Writes the valid region of a staged block back to the tensor. */
static void tl_unstage_block(const tl_operand *o, const int64_t *bi, const int64_t *valid, const char *buf) {
  if (o->t.layout.tiled) {
    tl_unstage_to_tiled(o, bi, valid, buf);
    return;
  }
  const int64_t slab = o->slab_bytes, nslab = o->nslab;
  tl_rc rc = tl_rc_of(o, valid, o->t.stride);
  for (int64_t s = 0; s < nslab; s++) {
    int64_t off = tl_slab_src(o, bi, valid, s);
    if (off < 0) continue;
    tl_unpack_portable((char *)o->t.data + off * (int64_t)o->esize, rc.rs, rc.cs, buf + s * slab, rc.brows, rc.bcols,
                       o->spec.layout, rc.rows, rc.cols, o->esize);
  }
}

/* Zeroes the valid region of an in-place block (accumulating outputs, first visit), row-major
 * (strided) or tiled. */
static void tl_zero_inplace(const tl_operand *o, const tl_ref *r) {
  const int nd = o->t.ndim;
  tl_tensor blk = {.data = r->data, .dtype = r->dtype, .ndim = nd, .layout = r->layout};
  memcpy(blk.shape, r->shape, sizeof blk.shape);
  memcpy(blk.stride, r->stride, sizeof blk.stride);
  int64_t idx[TL_MAX_DIMS] = {0}, n = 1;
  for (int d = 0; d < nd; d++) n *= r->valid[d];
  for (int64_t e = 0; e < n; e++) {
    memset(tl_tensor_at(&blk, idx), 0, o->esize);
    for (int d = nd - 1; d >= 0; d--) {
      if (++idx[d] < r->valid[d]) break;
      idx[d] = 0;
    }
  }
}

/* Interpret mode: the first element of a staged output block's valid region still holding the
 * poison, or -1. 8-bit integer outputs are not checked (any byte value is plausible). */
static int64_t tl_find_poison(const tl_operand *o, const tl_ref *r) {
  if (o->esize == 1) return -1;
  const int nd = o->t.ndim;
  tl_tensor blk = {.data = r->data, .dtype = r->dtype, .ndim = nd, .layout = r->layout};
  memcpy(blk.shape, r->shape, sizeof blk.shape);
  memcpy(blk.stride, r->stride, sizeof blk.stride);
  int64_t idx[TL_MAX_DIMS] = {0}, n = 1;
  for (int d = 0; d < nd; d++) n *= r->valid[d];
  for (int64_t e = 0; e < n; e++) {
    if (!memcmp(tl_tensor_at(&blk, idx), o->poison, o->esize)) return e;
    for (int d = nd - 1; d >= 0; d--) {
      if (++idx[d] < r->valid[d]) break;
      idx[d] = 0;
    }
  }
  return -1;
}

static int64_t tl_valid_bytes(const tl_operand *o, const int64_t *valid) {
  int64_t n = (int64_t)o->esize;
  for (int d = 0; d < o->t.ndim; d++) n *= valid[d];
  return n;
}

/* Leaves output i's current block: write-back (staged) and counting. */
static void tl_leave(tl_wstate *st, const tl_plan *pl, int i) {
  const tl_operand *o = &pl->op[i];
  tl_ref *r = &st->refs[i];
  if (pl->interpret && o->spec.out == TL_OUT_WRITE && !st->inplace[i]) {
    int64_t e = tl_find_poison(o, r);
    if (e >= 0 && !tl_prog_failed(&st->prog)) {
      char msg[256];
      snprintf(msg, sizeof msg, "interpret mode: output %d, block %lld: element %lld of the block's valid region was never written",
               i - pl->n_in, (long long)st->cur[i], (long long)e);
      tl_prog_fail(&st->prog, TL_ERR_INVALID, msg);
    }
  }
  if (!st->inplace[i]) tl_unstage_block(o, st->bi[i], r->valid, r->data);
  int64_t b = tl_valid_bytes(o, r->valid);
  st->ws->bytes_written += b;
  st->cur[i] = -1;
}

/* Enters block bi of operand i (input or output). */
static void tl_enter(tl_wstate *st, const tl_plan *pl, int i, int64_t lin) {
  const tl_operand *o = &pl->op[i];
  tl_ref *r = &st->refs[i];
  const int64_t *bi = st->bi[i];
  const int nd = o->t.ndim;
  int full = 1;
  for (int d = 0; d < nd; d++) {
    int64_t v = o->t.shape[d] - bi[d] * o->block[d];
    r->valid[d] = v < o->block[d] ? v : o->block[d];
    full &= r->valid[d] == o->block[d];
  }
  st->cur[i] = lin;
  st->ws->events[i]++;
  if (o->shares >= 0) { /* read-modify-write: the input's block, already entered */
    const tl_ref *src = &st->refs[o->shares];
    r->data = src->data;
    memcpy(r->stride, src->stride, sizeof r->stride);
    st->inplace[i] = st->inplace[o->shares];
    return;
  }
  int inplace;
  if (o->spec.stage == TL_STAGE_NEVER) inplace = 1;
  else if (o->spec.stage == TL_STAGE_ALWAYS) inplace = 0;
  else inplace = full && (o->t.layout.tiled ? o->full_tiled_inplace : !o->spec.layout.tiled);
  if (pl->interpret && o->is_out && o->spec.out == TL_OUT_WRITE && o->spec.stage != TL_STAGE_NEVER) inplace = 0;
  st->inplace[i] = (uint8_t)inplace;
  const int first = o->is_out && o->done[lin] == 0;
  const int reads = !o->is_out || o->spec.out == TL_OUT_ACCUM_LOAD || (o->spec.out == TL_OUT_ACCUM_ZERO && !first);
  if (reads) st->ws->bytes_read += tl_valid_bytes(o, r->valid);
  if (inplace) {
    int64_t off = 0;
    if (o->t.layout.tiled) { /* the block's first tile (plan.c: blocks start on tiles) */
      const tl_layout l = o->t.layout;
      const int64_t tiles_r = TL_CDIV(o->t.shape[nd - 2], l.tile_r), tiles_c = TL_CDIV(o->t.shape[nd - 1], l.tile_c);
      int64_t lead = 0;
      for (int d = 0; d < nd - 2; d++) lead = lead * o->t.shape[d] + bi[d] * o->block[d];
      const int64_t tile = (lead * tiles_r + bi[nd - 2] * o->block[nd - 2] / l.tile_r) * tiles_c + bi[nd - 1] * o->block[nd - 1] / l.tile_c;
      off = tile * l.tile_r * l.tile_c;
    } else {
      for (int d = 0; d < nd; d++) off += bi[d] * o->block[d] * o->t.stride[d];
    }
    r->data = (char *)o->t.data + off * (int64_t)o->esize;
    memcpy(r->stride, o->t.stride, sizeof r->stride);
    if (o->is_out && o->spec.out == TL_OUT_ACCUM_ZERO && first) tl_zero_inplace(o, r);
    return;
  }
  tl_pending *pd = &st->pend[i];
  const int pumped = pd->active && pd->lin == lin; /* tl_stage_pump began it in the other buffer */
  if (pumped) st->cur_buf[i] ^= 1;
  pd->active = 0;
  char *buf = st->arena + o->buf_off + o->buf_shift + st->cur_buf[i] * o->buf_bytes;
  r->data = buf;
  if (!o->spec.layout.tiled) {
    int64_t s = 1;
    for (int d = nd - 1; d >= 0; d--) r->stride[d] = s, s *= o->block[d];
  }
  const void *pad = pl->interpret && o->spec.pad_any ? o->poison_pad : o->pad;
  if (pumped) {
    tl_stage_some(o, bi, r->valid, buf, pad, &pd->c, INT64_MAX); /* the rest */
  } else if (reads) {
    tl_stage_block(o, bi, r->valid, buf, pad);
  } else if (o->spec.out == TL_OUT_ACCUM_ZERO) {
    memset(buf, 0, (size_t)(tl_block_elems(nd, o->block, o->spec.layout) * (int64_t)o->esize));
  } else if (pl->interpret) { /* TL_OUT_WRITE: poison, checked at write-back */
    int64_t n = tl_block_elems(nd, o->block, o->spec.layout);
    for (int64_t e = 0; e < n; e++) memcpy(buf + e * (int64_t)o->esize, o->poison, o->esize);
  }
}

/* Marks the next step's blocks of double-buffered inputs as pending, for tl_stage_pump. */
static void tl_pump_prepare(tl_wstate *st, const tl_plan *pl, const int64_t *gnext) {
  for (int q = 0; q < pl->n_pump; q++) {
    const int i = pl->pump_ops[q];
    const tl_operand *o = &pl->op[i];
    tl_pending *pd = &st->pend[i];
    int64_t lin = 0;
    for (int d = 0; d < o->t.ndim; d++) pd->bi[d] = tl_map_eval(&o->map.e[d], gnext), lin = lin * o->nblk[d] + pd->bi[d];
    int full = 1;
    for (int d = 0; d < o->t.ndim; d++) {
      pd->valid[d] = TL_MIN(o->block[d], o->t.shape[d] - pd->bi[d] * o->block[d]);
      full &= pd->valid[d] == o->block[d];
    }
    const int staged = o->spec.stage == TL_STAGE_ALWAYS || !full || o->spec.layout.tiled;
    pd->active = staged && lin != st->cur[i];
    pd->lin = lin;
    pd->c = (tl_stage_cursor){0, 0};
  }
}

int64_t tl_stage_pump(const tl_prog *p, int64_t bytes) {
  if (!p) return 0;
  tl_wstate *st = (tl_wstate *)p; /* p is the first member of the worker's state */
  const tl_plan *pl = p->plan;
  int64_t left = 0;
  for (int q = 0; q < pl->n_pump; q++) {
    const int i = pl->pump_ops[q];
    const tl_operand *o = &pl->op[i];
    tl_pending *pd = &st->pend[i];
    if (!pd->active) continue;
    char *buf = st->arena + o->buf_off + o->buf_shift + (st->cur_buf[i] ^ 1) * o->buf_bytes;
    if (bytes > 0)
      bytes -= tl_stage_some(o, pd->bi, pd->valid, buf, pl->interpret && o->spec.pad_any ? o->poison_pad : o->pad, &pd->c, bytes);
    left += tl_stage_left(o, &pd->c);
  }
  return left;
}

/* ---- software prefetch of the next step's input blocks (opt-in per blockspec) ----
 * Issued all at once before the body, a block's worth of prefetches would wait for the few miss
 * buffers a core has; instead the executor queues the rows (per worker thread) and the tile ops
 * drain the queue as they compute (tl_prefetch_pump), spreading them over the step. What the
 * body left is issued when it returns. */
static _Thread_local tl_pfq tl_pf_q;

/* See runtime_impl.h. */
int64_t tl_prefetch_pending(void) { return tl_pf_q.left; }

/* See runtime_impl.h. */
tl_pfq *tl_prefetch_queue(void) { return &tl_pf_q; }

/* See runtime_impl.h. */
void tl_prefetch_pump(int64_t lines) { tl_prefetch_pump_q(&tl_pf_q, lines); }

/* Queues (or, past TL_PFQ_REGIONS slabs, prefetches at once) the rows of the next step's input
 * blocks whose spec asks for it. */
static void tl_prefetch_next(const tl_wstate *st, const tl_plan *pl, const int64_t *gnext) {
  int64_t bi[TL_MAX_DIMS];
  tl_pfq *q = &tl_pf_q;
  q->n = q->r = 0, q->row = q->off = q->left = 0;
  for (int i = 0; i < pl->n_in; i++) {
    const tl_operand *o = &pl->op[i];
    if (!o->spec.prefetch || o->t.layout.tiled) continue;
    int64_t lin = 0;
    for (int d = 0; d < o->t.ndim; d++) bi[d] = tl_map_eval(&o->map.e[d], gnext), lin = lin * o->nblk[d] + bi[d];
    if (lin == st->cur[i]) continue;
    int64_t valid[TL_MAX_DIMS];
    for (int d = 0; d < o->t.ndim; d++) valid[d] = TL_MIN(o->block[d], o->t.shape[d] - bi[d] * o->block[d]);
    tl_rc rc = tl_rc_of(o, valid, o->t.stride);
    for (int64_t s = 0; s < tl_slabs(o); s++) {
      int64_t off = tl_slab_src(o, bi, valid, s);
      if (off < 0) continue;
      const char *p0 = (const char *)o->t.data + off * (int64_t)o->esize;
      tl_prefetch_queue_rows(p0, rc.rows, ((rc.cols - 1) * rc.cs + 1) * (int64_t)o->esize, rc.rs * (int64_t)o->esize);
    }
  }
}

/* See runtime_impl.h. */
void tl_prefetch_queue_rows(const void *p, int64_t rows, int64_t len, int64_t rs) {
  tl_pfq *q = &tl_pf_q;
  const char *p0 = p;
  if (rows <= 0 || len <= 0) return;
  if (q->left == 0) q->n = q->r = 0, q->row = q->off = 0; /* drained: its runs are free again */
  /* each row from the line holding its first byte to the one holding its last (rows whose
   * stride is not a multiple of 64 bytes start at different offsets in their lines) */
  if (q->n < TL_PFQ_REGIONS) {
    q->reg[q->n].p = p0, q->reg[q->n].rows = rows, q->reg[q->n].len = len;
    q->reg[q->n++].rs = rs;
    if (rs % 64 == 0) q->left += rows * (((int64_t)((uintptr_t)p0 & 63) + len + 63) / 64);
    else
      for (int64_t r = 0; r < rows; r++) q->left += ((int64_t)((uintptr_t)(p0 + r * rs) & 63) + len + 63) / 64;
    return;
  }
  for (int64_t r = 0; r < rows; r++) {
    const char *row = p0 + r * rs - ((uintptr_t)(p0 + r * rs) & 63);
    for (int64_t b = 0; b < (p0 + r * rs - row) + len; b += 64) __builtin_prefetch(row + b, 0, 3);
  }
}

/* Runs chunk w of nw of the plan's parallel index space with the given staging arena and
 * counters; worker is the pool worker running it, depth the nesting level (0: tl_plan_run). */
static void tl_exec_chunk(tl_run *run, int w, int nw, char *arena, tl_wstats *ws, int worker, int depth) {
  const tl_plan *pl = run->plan;
  tl_wstate st;
  memset(&st, 0, sizeof st);
  st.prog.plan = pl;
  st.prog.run = run;
  st.prog.worker = worker;
  st.prog.depth = depth;
  st.arena = arena;
  st.ws = ws;
  memset(st.ws, 0, sizeof *st.ws);
  for (int i = 0; i < pl->nops; i++) {
    const tl_operand *o = &pl->op[i];
    tl_ref *r = &st.refs[i];
    r->dtype = o->t.dtype;
    r->ndim = o->t.ndim;
    memcpy(r->shape, o->block, sizeof r->shape);
    memset(r->stride, 0, sizeof r->stride);
    r->layout = o->spec.layout;
    st.cur[i] = -1;
  }
  for (int s = 0; s < pl->n_scratch; s++) {
    const tl_scratch *sc = &pl->scratch[s];
    tl_ref *r = &st.refs[pl->nops + s];
    r->data = st.arena + pl->scratch_off[s];
    r->dtype = sc->dtype;
    r->ndim = sc->ndim;
    r->layout = sc->layout;
    int64_t str = 1;
    for (int d = sc->ndim - 1; d >= 0; d--) {
      r->shape[d] = r->valid[d] = sc->shape[d];
      r->stride[d] = sc->layout.tiled ? 0 : str;
      str *= sc->shape[d];
    }
  }
  const int nd = pl->k.grid_ndim;
  const int64_t p0 = pl->n_par * w / nw, p1 = pl->n_par * (w + 1) / nw;
  int64_t *g = st.prog.g;
  int64_t rest = p0 * pl->n_inner;
  for (int a = nd - 1; a >= 0; a--) g[a] = rest % pl->k.grid[a], rest /= pl->k.grid[a];
  const int64_t s0 = p0 * pl->n_inner, s1 = p1 * pl->n_inner;
  const tl_body_fn body = pl->k.body;
  void *user = pl->k.user;
  const tl_prog *saved = tl_cur_prog;
  const tl_pfq saved_q = tl_pf_q; /* a nested grid keeps the outer step's queue */
  tl_pf_q.left = 0;
  int pf_burst = 0;
  tl_cur_prog = &st.prog;
  int64_t bi[TL_MAX_DIMS];
  for (int64_t step = s0; step < s1; step++) {
    if (atomic_load_explicit(&run->failed, memory_order_relaxed)) break;
    /* outputs whose block changes are left first (write-back before any restaging) */
    for (int i = pl->n_in; i < pl->nops; i++) {
      const tl_operand *o = &pl->op[i];
      int64_t lin = 0;
      for (int d = 0; d < o->t.ndim; d++) bi[d] = tl_map_eval(&o->map.e[d], g), lin = lin * o->nblk[d] + bi[d];
      if (lin != st.cur[i]) {
        if (st.cur[i] >= 0) tl_leave(&st, pl, i);
        memcpy(st.bi[i], bi, sizeof bi);
        st.cur[i] = -2 - lin; /* pending entry */
      }
    }
    for (int i = 0; i < pl->n_in; i++) {
      const tl_operand *o = &pl->op[i];
      int64_t lin = 0;
      for (int d = 0; d < o->t.ndim; d++) bi[d] = tl_map_eval(&o->map.e[d], g), lin = lin * o->nblk[d] + bi[d];
      if (lin != st.cur[i]) {
        memcpy(st.bi[i], bi, sizeof bi);
        tl_enter(&st, pl, i, lin);
      }
    }
    for (int i = pl->n_in; i < pl->nops; i++) {
      tl_operand *o = (tl_operand *)&pl->op[i];
      if (st.cur[i] <= -2) tl_enter(&st, pl, i, -2 - st.cur[i]);
      int64_t lin = st.cur[i], done = o->done[lin]++;
      st.prog.first[i - pl->n_in] = done == 0;
      st.prog.last[i - pl->n_in] = done + 1 == o->visits[lin];
    }
    tl_pf_q.left = 0;
    if ((pl->any_prefetch || pl->n_pump) && step + 1 < s1) {
      int64_t gn[TL_MAX_DIMS];
      memcpy(gn, g, sizeof gn);
      for (int a = nd - 1; a >= 0; a--) {
        if (++gn[a] < pl->k.grid[a]) break;
        gn[a] = 0;
      }
      if (pl->any_prefetch) {
        tl_prefetch_next(&st, pl, gn);
        if (pf_burst) tl_prefetch_pump(INT64_MAX);
      }
      if (pl->n_pump) tl_pump_prepare(&st, pl, gn);
    }
    const int64_t pf_queued = tl_pf_q.left;
    body(&st.prog, st.refs, user);
    /* a body that drained none of the queue (no tile op pumps it) gets the whole next block
     * prefetched before it from the next step on; what a body left is issued now, so the next
     * block is always asked for whole */
    if (pf_queued > 0 && tl_pf_q.left == pf_queued) pf_burst = 1;
    tl_prefetch_pump(tl_pf_q.left);
    st.ws->steps++;
    for (int a = nd - 1; a >= 0; a--) {
      if (++g[a] < pl->k.grid[a]) break;
      g[a] = 0;
    }
  }
  if (!atomic_load_explicit(&run->failed, memory_order_relaxed))
    for (int i = pl->n_in; i < pl->nops; i++)
      if (st.cur[i] >= 0) tl_leave(&st, pl, i);
  tl_cur_prog = saved;
  tl_pf_q = saved_q;
}

static void tl_exec_worker(void *arg, int w, int nw) {
  tl_run *run = arg;
  tl_exec_chunk(run, w, nw, run->plan->ctx->worker_mem[w], &run->plan->wstats[w], w, 0);
}

/* "[3, 4]" */
static void tl_fmt_dims(char *buf, size_t n, int ndim, const int64_t *v) {
  size_t u = (size_t)snprintf(buf, n, "[");
  for (int d = 0; d < ndim && d < TL_MAX_DIMS && u < n; d++) u += (size_t)snprintf(buf + u, n - u, d ? ", %lld" : "%lld", (long long)v[d]);
  if (u < n) snprintf(buf + u, n - u, "]");
}

/* Checks that the run's tensors match the plan's and do not alias differently. */
static tl_status tl_plan_check_run(tl_plan *pl, const tl_tensor *in, const tl_tensor *out) {
  for (int i = 0; i < pl->nops; i++) {
    const tl_tensor *t = i < pl->n_in ? &in[i] : &out[i - pl->n_in];
    const tl_tensor *p = &pl->op[i].t;
    const char *kind = i < pl->n_in ? "input" : "output";
    int num = i < pl->n_in ? i : i - pl->n_in;
    if (t->dtype != p->dtype)
      return tl_ctx_fail(pl->ctx, TL_ERR_DTYPE, "tl_plan_run '%s': %s %d is %s, the plan was made for %s", pl->name, kind, num,
                         tl_dtype_name(t->dtype), tl_dtype_name(p->dtype));
    char got[96], want[96];
    if (t->ndim != p->ndim || memcmp(t->shape, p->shape, sizeof(int64_t) * (size_t)TL_MAX(0, TL_MIN(t->ndim, TL_MAX_DIMS)))) {
      tl_fmt_dims(got, sizeof got, t->ndim, t->shape);
      tl_fmt_dims(want, sizeof want, p->ndim, p->shape);
      return tl_ctx_fail(pl->ctx, TL_ERR_SHAPE, "tl_plan_run '%s': %s %d is %s, the plan was made for %s", pl->name, kind, num, got,
                         want);
    }
    if (memcmp(t->stride, p->stride, sizeof(int64_t) * (size_t)t->ndim)) {
      tl_fmt_dims(got, sizeof got, t->ndim, t->stride);
      tl_fmt_dims(want, sizeof want, p->ndim, p->stride);
      return tl_ctx_fail(pl->ctx, TL_ERR_INVALID, "tl_plan_run '%s': %s %d has strides %s, the plan was made for %s", pl->name, kind,
                         num, got, want);
    }
    if (memcmp(&t->layout, &p->layout, sizeof t->layout))
      return tl_ctx_fail(pl->ctx, TL_ERR_INVALID, "tl_plan_run '%s': %s %d has another layout than at tl_plan_new (tiled %u %ux%u vnni %u)",
                         pl->name, kind, num, p->layout.tiled, p->layout.tile_r, p->layout.tile_c, p->layout.vnni);
    if (!t->data && tl_tensor_numel(t) > 0)
      return tl_ctx_fail(pl->ctx, TL_ERR_INVALID, "tl_plan_run '%s': %s %d: data is NULL", pl->name, kind, num);
  }
  for (int oi = pl->n_in; oi < pl->nops; oi++) {
    const tl_tensor *o = &out[oi - pl->n_in];
    if (tl_tensor_numel(o) <= 0) continue;
    uintptr_t olo, ohi;
    tl_tensor_span(o, &olo, &ohi);
    for (int j = 0; j < pl->nops; j++) {
      if (j == oi) continue;
      const tl_tensor *x = j < pl->n_in ? &in[j] : &out[j - pl->n_in];
      if (pl->op[oi].shares == j) {
        if (x->data != o->data)
          return tl_ctx_fail(pl->ctx, TL_ERR_INVALID, "tl_plan_run '%s': output %d and input %d shared memory at tl_plan_new but not now",
                             pl->name, oi - pl->n_in, j);
        continue;
      }
      if (tl_tensor_numel(x) <= 0) continue;
      uintptr_t xlo, xhi;
      tl_tensor_span(x, &xlo, &xhi);
      if (olo < xhi && xlo < ohi)
        return tl_ctx_fail(pl->ctx, TL_ERR_INVALID, "tl_plan_run '%s': output %d overlaps %s %d in memory", pl->name,
                           oi - pl->n_in, j < pl->n_in ? "input" : "output", j < pl->n_in ? j : j - pl->n_in);
    }
  }
  return TL_OK;
}

/* Points the plan's operands at this run's tensors and places each staging buffer half a page
 * from its tensor modulo 4 KiB (arenas are page-aligned). */
static void tl_plan_bind(tl_plan *pl, const tl_tensor *in, const tl_tensor *out) {
  for (int i = 0; i < pl->nops; i++) {
    tl_operand *o = &pl->op[i];
    o->t.data = i < pl->n_in ? in[i].data : out[i - pl->n_in].data;
    if (o->buf_off >= 0)
      o->buf_shift = (int64_t)(((uintptr_t)o->t.data + 2048 - (uintptr_t)o->buf_off) & 4095) & ~(int64_t)(TL_BUF_ALIGN - 1);
  }
}

tl_status tl_plan_run(tl_plan *pl, const tl_tensor *in, const tl_tensor *out) {
  if (!pl) return tl_fail_tls(TL_ERR_INVALID, "tl_plan_run: plan is NULL");
  if (tl_cur_prog) /* a run from a body would share the plan's counters and the pool */
    return tl_fail_tls(TL_ERR_INVALID, "tl_plan_run '%s': called from inside a body (use tl_pipeline_run for a nested grid)", pl->name);
  tl_ctx *ctx = pl->ctx;
  if ((pl->n_in && !in) || (pl->n_out && !out))
    return tl_ctx_fail(ctx, TL_ERR_INVALID, "tl_plan_run '%s': %s is NULL", pl->name, pl->n_in && !in ? "in" : "out");
  tl_status s = tl_plan_check_run(pl, in, out);
  if (s != TL_OK) return s;
  /* staging memory: grown before the run, never during it */
  for (int w = 0; w < pl->threads; w++) {
    if ((int64_t)ctx->worker_mem_bytes[w] >= pl->arena_bytes) continue;
    void *m = tl_aligned_alloc(4096, (size_t)pl->arena_bytes);
    if (!m) return tl_ctx_fail(ctx, TL_ERR_NOMEM, "tl_plan_run '%s': out of memory for %lld bytes of staging", pl->name,
                               (long long)pl->arena_bytes);
    tl_aligned_free(ctx->worker_mem[w]);
    ctx->worker_mem[w] = m;
    ctx->worker_mem_bytes[w] = (size_t)pl->arena_bytes;
  }
  tl_plan_bind(pl, in, out);
  memset(&pl->stats, 0, sizeof pl->stats);
  if (pl->empty) {
    tl_ctx_ok(ctx);
    return TL_OK;
  }
  for (int i = pl->n_in; i < pl->nops; i++) memset(pl->op[i].done, 0, sizeof(int64_t) * (size_t)pl->op[i].nblocks);
  tl_run run = {.plan = pl};
  atomic_init(&run.failed, 0);
  tl_pool_run(ctx->pool, pl->threads, tl_exec_worker, &run);
  for (int w = 0; w < pl->threads; w++) {
    const tl_wstats *ws = &pl->wstats[w];
    pl->stats.steps += ws->steps;
    pl->stats.bytes_read += ws->bytes_read;
    pl->stats.bytes_written += ws->bytes_written;
    for (int i = 0; i < pl->nops; i++) pl->stats.stage_events[i] += ws->events[i];
  }
  if (atomic_load(&run.failed)) return tl_ctx_fail(ctx, run.fail_status, "%s", run.fail_msg);
  tl_ctx_ok(ctx);
  return TL_OK;
}

/* ---- nested grids ---- */

tl_status tl_pipeline_run(const tl_prog *p, const tl_kernel *inner, tl_ref *refs) {
  if (!p) return tl_fail_tls(TL_ERR_INVALID, "tl_pipeline_run: called outside a body (p is NULL)");
  tl_ctx *ctx = p->plan->ctx;
  char err[768];
  tl_status s = TL_OK;
  if (p->depth + 1 >= TL_MAX_NEST) {
    snprintf(err, sizeof err, "tl_pipeline_run: nesting deeper than %d levels", TL_MAX_NEST - 1);
    tl_prog_fail(p, TL_ERR_INVALID, err);
    return TL_ERR_INVALID;
  }
  if (!inner || (!refs && inner->n_in + inner->n_out > 0) || inner->n_in < 0 || inner->n_out < 0 ||
      inner->n_in + inner->n_out > TL_MAX_OPERANDS) {
    if (!inner || !refs)
      snprintf(err, sizeof err, "tl_pipeline_run: %s is NULL", !inner ? "the inner kernel" : "refs");
    else
      snprintf(err, sizeof err, "tl_pipeline_run: inner kernel has %d inputs and %d outputs (0..%d operands)", inner->n_in, inner->n_out,
               TL_MAX_OPERANDS);
    tl_prog_fail(p, TL_ERR_INVALID, err);
    return TL_ERR_INVALID;
  }
  /* the outer refs as tensors over their valid extent (never beyond the memory the step owns),
     except the last two dims of tiled refs, whose whole block the tile addressing depends on */
  tl_tensor t[TL_MAX_OPERANDS];
  for (int i = 0; i < inner->n_in + inner->n_out; i++) {
    const tl_ref *r = &refs[i];
    memset(&t[i], 0, sizeof t[i]);
    t[i].data = r->data;
    t[i].dtype = r->dtype;
    t[i].ndim = r->ndim;
    t[i].layout = r->layout;
    for (int d = 0; d < r->ndim && d < TL_MAX_DIMS; d++) {
      t[i].shape[d] = r->layout.tiled && d >= r->ndim - 2 ? r->shape[d] : r->valid[d];
      t[i].stride[d] = r->layout.tiled ? 0 : r->stride[d];
    }
  }
  tl_plan *pl = NULL;
  s = tl_plan_build(ctx, inner, t, t + inner->n_in, 1, err, sizeof err, &pl);
  if (s != TL_OK) {
    tl_prog_fail(p, s, err);
    return s;
  }
  /* this worker's arena for this depth, grown (rarely) before the inner grid runs */
  const int slot = p->worker * TL_MAX_NEST + p->depth + 1;
  if ((int64_t)ctx->nest_mem_bytes[slot] < pl->arena_bytes) {
    void *m = tl_aligned_alloc(4096, (size_t)pl->arena_bytes);
    if (!m) {
      snprintf(err, sizeof err, "tl_pipeline_run '%s': out of memory for %lld bytes of staging", pl->name, (long long)pl->arena_bytes);
      tl_plan_free(pl);
      tl_prog_fail(p, TL_ERR_NOMEM, err);
      return TL_ERR_NOMEM;
    }
    tl_aligned_free(ctx->nest_mem[slot]);
    ctx->nest_mem[slot] = m;
    ctx->nest_mem_bytes[slot] = (size_t)pl->arena_bytes;
  }
  tl_plan_bind(pl, t, t + inner->n_in);
  if (!pl->empty) {
    tl_run run = {.plan = pl};
    atomic_init(&run.failed, 0);
    for (int i = pl->n_in; i < pl->nops; i++) memset(pl->op[i].done, 0, sizeof(int64_t) * (size_t)pl->op[i].nblocks);
    tl_exec_chunk(&run, 0, 1, ctx->nest_mem[slot], &pl->wstats[0], p->worker, p->depth + 1);
    if (atomic_load(&run.failed)) {
      s = run.fail_status;
      tl_prog_fail(p, s, run.fail_msg);
    }
  }
  tl_plan_free(pl);
  return s;
}
