/* runtime_impl.h — the context, the thread pool, context slots and the index-map parser.
 * Internal to libtilec; upper layers (tile/, kernels/, tune/...) include it to attach state to a
 * context through slots. Nothing here names an ISA. */
#ifndef TL_RUNTIME_IMPL_H
#define TL_RUNTIME_IMPL_H

#include "../core/core_impl.h"

/* ---- thread pool (pool.c) ----
 * A persistent pool: the calling thread is worker 0, threads-1 helper threads wait for work,
 * spinning spin_us microseconds, then sleeping on a futex. tl_pool_run neither locks nor
 * allocates. Each worker applies the caller's MXCSR for the duration of the run. */
typedef struct tl_pool tl_pool;
typedef void (*tl_pool_fn)(void *arg, int worker, int nworkers);
/* threads >= 1; spin_us < 0: never spin. Message via tl_set_last_error on failure. */
tl_status tl_pool_new(int threads, int spin_us, tl_pool **out);
void tl_pool_free(tl_pool *pool); /* joins the threads; NULL is a no-op */
int tl_pool_threads(const tl_pool *pool);
/* Runs fn(arg, w, n) for w = 0..n-1 where n = min(nworkers, threads) (nworkers <= 0: all),
 * worker 0 on the calling thread; returns when every call has returned. Not reentrant: one
 * run at a time per pool (a nested call from inside fn runs fn serially on the caller). */
void tl_pool_run(tl_pool *pool, int nworkers, tl_pool_fn fn, void *arg);

/* 1 when two different indices of a row-major view address the same element (a sufficient test:
 * with the dims of size > 1 sorted by stride, each stride must exceed the span of the smaller
 * ones; a stride 0 on a dim of size > 1 always overlaps); *d0, *d1 name the offending pair
 * (plan.c; the executor refuses such outputs, and ops check their outputs with it first). */
int tl_view_self_overlaps(const tl_tensor *t, int *d0, int *d1);

/* ---- context slots: upper layers hang state off a context ---- */
typedef struct tl_slot_class {
  const char *name;
  void (*free_state)(void *state); /* called by tl_ctx_free; may be NULL */
} tl_slot_class;
#define TL_MAX_SLOTS 16
/* The state attached for cls, or NULL. */
void *tl_ctx_slot_get(const tl_ctx *ctx, const tl_slot_class *cls);
/* Attaches state (ownership passes to the context); replaces and frees an earlier one.
 * TL_ERR_NOMEM when all slots are used. */
tl_status tl_ctx_slot_set(tl_ctx *ctx, const tl_slot_class *cls, void *state);

/* ---- the context (ctx.c) ---- */
#define TL_MAX_NEST 4 /* grid nesting levels: tl_plan_run plus up to 3 tl_pipeline_run */
struct tl_plan;
struct tl_ctx {
  tl_ctx_info info;
  tl_pool *pool;
  char err[1024];
  char warn[512];
  struct { const tl_slot_class *cls; void *state; } slots[TL_MAX_SLOTS];
  struct tl_plan *plans;      /* every live plan (doubly linked), freed with the context */
  void **worker_mem;          /* per worker: the executor's staging arena (exec.c owns it) */
  size_t *worker_mem_bytes;
  void **nest_mem;            /* per worker x TL_MAX_NEST: arenas of nested grids (tl_pipeline_run) */
  size_t *nest_mem_bytes;
};

/* Sets ctx's error message and returns s (s must not be TL_OK). */
tl_status tl_ctx_fail(tl_ctx *ctx, tl_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Clears the error message (a call succeeded). */
void tl_ctx_ok(tl_ctx *ctx);
/* Records a non-fatal note. */
void tl_ctx_warn(tl_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Asks for AMX once for this context when its ISA is amx; on refusal lowers ctx's ISA to
 * avx512bf16 (or what the CPU has below amx) and sets a warning. Returns the ISA now in force. */
tl_isa tl_ctx_need_amx(tl_ctx *ctx);

/* ---- index maps (map.c) ----
 * A parsed map: expression d gives the block index of tensor dim d as
 *   konst + sum_t mul_t * floor(g[axis_t] / div_t)      (div_t >= 1; grid indices are >= 0) */
#define TL_MAP_MAX_TERMS 8
typedef struct tl_map_term {
  int axis;
  int64_t mul;
  int64_t div;
} tl_map_term;
typedef struct tl_map_expr {
  int64_t konst;
  int nterms;
  tl_map_term t[TL_MAP_MAX_TERMS];
} tl_map_expr;
typedef struct tl_map {
  int nvars;  /* = grid ndim */
  int nexprs; /* = tensor ndim */
  tl_map_expr e[TL_MAX_DIMS];
} tl_map;
/* Parses src for a grid of grid_ndim axes and a tensor of tensor_ndim dims. src NULL: every
 * expression is the constant 0. Errors: TL_ERR_INVALID with "map 'i,j->i+': position 7:
 * expected a term" style messages in msg. Like terms are combined (i + i -> 2*i). */
tl_status tl_map_parse(const char *src, int grid_ndim, int tensor_ndim, tl_map *out, char *msg, size_t msg_size);
/* Block index of one expression at grid point g. */
static inline int64_t tl_map_eval(const tl_map_expr *e, const int64_t *g) {
  int64_t v = e->konst;
  for (int i = 0; i < e->nterms; i++) { /* most terms do not divide: skip the slow idiv */
    const int64_t x = g[e->t[i].axis];
    v += e->t[i].mul * (e->t[i].div == 1 ? x : x / e->t[i].div);
  }
  return v;
}
/* Smallest and largest value of e over the grid box [0, grid[a]) (every grid[a] >= 1). */
void tl_map_expr_range(const tl_map_expr *e, const int64_t *grid, int64_t *lo, int64_t *hi);
/* 1 when e depends on axis a. */
int tl_map_expr_uses(const tl_map_expr *e, int axis);



/* Bytes each operand's tensor spans (tl_tensor_nbytes of the tensors given at tl_plan_new;
 * inputs, then outputs) into bytes[TL_MAX_OPERANDS]; returns the operand count. */
int tl_plan_tensor_bytes(const tl_plan *pl, int64_t *bytes);

/* ---- the running program (exec.c) ---- */
/* The program whose body runs on this thread, or NULL outside a body (tile ops report misuse
 * through it). */
const tl_prog *tl_prog_current(void);
/* The ISA level the program's context allows. */
tl_isa tl_prog_isa(const tl_prog *p);
/* Cache lines of the next step's input blocks (specs with prefetch = 1) still queued on this
 * thread, and tl_prefetch_pump issuing up to `lines` of them (prefetcht1): the tile ops call it
 * between pieces of their work (or tl_prefetch_pump_q inside their loops, below), so the next
 * block arrives during this step. */
int64_t tl_prefetch_pending(void);
void tl_prefetch_pump(int64_t lines);
/* Queues `rows` rows of `len` bytes, the first at p, rs bytes apart, behind what this thread's
 * queue holds (past TL_PFQ_REGIONS runs: prefetched at once), for the tile ops to pump: how the
 * executor queues the next step's blocks, and how a body queues what its own next piece of work
 * will read (the K split's next chunk of b, matmul_body.c). Nothing for rows or len <= 0. */
void tl_prefetch_queue_rows(const void *p, int64_t rows, int64_t len, int64_t rs);

/* The queue behind them: up to TL_PFQ_REGIONS runs of rows (one per slab of a block), walked
 * line by line. */
#define TL_PFQ_REGIONS 8
typedef struct tl_pfq {
  int n, r;               /* regions queued, the current one */
  int64_t row, off, left; /* position in region r; lines left in all */
  struct {
    const char *p;         /* row 0's first byte */
    int64_t rows, len, rs; /* each row's bytes: from its first byte's line to its last's */
  } reg[TL_PFQ_REGIONS];
} tl_pfq;

/* This thread's queue, for a kernel that pumps it between iterations of its own loop with
 * tl_prefetch_pump_q: a call there (tl_prefetch_pump, or a thread-local's address in a PIC
 * build) would clobber the vector registers holding its accumulators, all caller-saved. */
tl_pfq *tl_prefetch_queue(void);
static inline __attribute__((always_inline)) void tl_prefetch_pump_q(tl_pfq *q, int64_t lines) {
  for (; lines > 0 && q->left > 0; lines--, q->left--) {
    const char *row = q->reg[q->r].p + q->row * q->reg[q->r].rs;
    const int64_t mis = (int64_t)((uintptr_t)row & 63);
    __builtin_prefetch(row - mis + q->off, 0, 2); /* into L2: the block is used from the next step on */
    if ((q->off += 64) >= q->reg[q->r].len + mis) {
      q->off = 0;
      if (++q->row == q->reg[q->r].rows) q->row = 0, q->r++;
    }
  }
}
#endif /* TL_RUNTIME_IMPL_H */
