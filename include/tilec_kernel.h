/* tilec_kernel.h — kernels as a grid + BlockSpecs + a body (the Pallas model), plans, cost.
 * Included by tilec.h; see docs/executor.md for the rules with pictures. */
#ifndef TILEC_KERNEL_H
#define TILEC_KERNEL_H

#include "tilec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One block as the body sees it. data points at the block's first element (staged copy or the
 * tensor itself when used in place). Row-major refs: honour stride[] (a block used in place has
 * the tensor's strides). Tiled refs: use tl_ref_tile(). valid[d] < shape[d] only in edge blocks;
 * elements beyond valid hold the BlockSpec's pad (inputs) and are dropped on write (outputs). */
typedef struct tl_ref {
  void *data;
  tl_dtype dtype;
  int ndim;
  int64_t shape[TL_MAX_DIMS];
  int64_t stride[TL_MAX_DIMS];
  int64_t valid[TL_MAX_DIMS];
  tl_layout layout;
} tl_ref;

/* Where a body is in the grid (opaque; valid only during the body call). */
typedef struct tl_prog tl_prog;

/* This step's index along grid axis `axis`; -1 for an axis outside the grid. */
TL_API int64_t tl_program_id(const tl_prog *p, int axis);
/* The grid's size along `axis`; -1 outside the grid. */
TL_API int64_t tl_num_programs(const tl_prog *p, int axis);
/* 1 when this step is the first to touch output `out_index`'s current block (initialise it), 0
 * otherwise, -1 for an out_index that does not name an output. */
TL_API int tl_first_visit(const tl_prog *p, int out_index);
/* 1 when this step is the last step of the whole grid to touch output `out_index`'s current
 * block (finalise it: apply an epilogue), 0 otherwise, -1 for a bad out_index. With accumulating
 * outputs revisited non-consecutively, earlier visits that end in a write-back return 0. */
TL_API int tl_last_visit(const tl_prog *p, int out_index);
/* Worker (thread) running this step, 0..threads-1. */
TL_API int tl_worker_id(const tl_prog *p);
/* Address of tile (tile_row, tile_col) of a tiled ref's last two dims, leading indices 0 (for
 * refs with more dims, index the leading dims with tl_ref_tile_nd). NULL for a row-major ref or
 * an index outside the block. */
TL_API void *tl_ref_tile(const tl_ref *r, int64_t tile_row, int64_t tile_col);
/* Same, with leading indices lead[0..ndim-3]. */
TL_API void *tl_ref_tile_nd(const tl_ref *r, const int64_t *lead, int64_t tile_row, int64_t tile_col);
/* Stops the run: no new steps start, tl_plan_run returns s (TL_ERR_INTERNAL if s is TL_OK) with
 * msg (copied) in tl_ctx_error. Outputs may be partly written. The first failure wins. */
TL_API void tl_prog_fail(const tl_prog *p, tl_status s, const char *msg);
/* 1 once some step of this run failed (a body may stop early), else 0. */
TL_API int tl_prog_failed(const tl_prog *p);

/* The body: refs holds the inputs, then the outputs, then the scratch buffers. user is
 * tl_kernel.user. Bodies run concurrently on different workers for different parallel indices. */
typedef void (*tl_body_fn)(const tl_prog *p, tl_ref *refs, void *user);

typedef enum tl_dim_sem { TL_ARBITRARY, TL_PARALLEL } tl_dim_sem; /* 0 is the safe, sequential one */
typedef enum tl_out_mode { TL_OUT_WRITE, TL_OUT_ACCUM_ZERO, TL_OUT_ACCUM_LOAD } tl_out_mode;
typedef enum tl_stage { TL_STAGE_AUTO, TL_STAGE_ALWAYS, TL_STAGE_NEVER } tl_stage;
typedef enum tl_level { TL_L2, TL_L1 } tl_level; /* which budget a block counts against */

/* Which block of a tensor each grid step needs.
 * map grammar (spaces anywhere):
 *   map  := vars "->" exprs        vars := ident ("," ident)*      exprs := expr ("," expr)*
 *   expr := ["-"] term (("+" | "-") term)*
 *   term := int | ident | int "*" ident | ident "*" int | ident "/" int   (floor division, > 0)
 * one var per grid axis, one expr per tensor dim; element offset = block index x block shape. */
typedef struct tl_blockspec {
  int ndim;                   /* must equal the tensor's ndim */
  int64_t block[TL_MAX_DIMS]; /* 0 in a dim: the whole dim */
  const char *map;            /* NULL: block index 0 in every dim */
  double pad;                 /* value staged beyond valid (default 0; integers saturate) */
  int pad_any;                /* 1: padding is "don't care" (interpret mode poisons it) */
  tl_layout layout;           /* staging layout the body wants */
  tl_stage stage;             /* AUTO: in place when row-major, in bounds, else staged */
  tl_level level;
  tl_out_mode out;            /* outputs only */
  int buffers;                /* 0 means 1; 2 lets tl_stage_pump fill the next block */
  int prefetch;               /* 1: software-prefetch the next step's block (opt-in) */
} tl_blockspec;

/* Per-worker scratch: persists across that worker's steps; the body initialises it. */
typedef struct tl_scratch {
  tl_dtype dtype;
  int ndim;
  int64_t shape[TL_MAX_DIMS];
  tl_layout layout;
  tl_level level;
} tl_scratch;

typedef struct tl_kernel {
  const char *name;             /* for messages and the roofline; NULL: "kernel" */
  tl_body_fn body;
  void *user;                   /* borrowed, passed to body */
  int grid_ndim;                /* 0..TL_MAX_DIMS; 0 is one step */
  int64_t grid[TL_MAX_DIMS];
  tl_dim_sem sem[TL_MAX_DIMS];  /* TL_PARALLEL axes must form a prefix */
  int n_in;
  const tl_blockspec *in;
  int n_out;
  const tl_blockspec *out;
  int n_scratch;
  const tl_scratch *scratch;
  int64_t flops;                /* for the roofline; 0: unknown */
} tl_kernel;

#define TL_MAX_OPERANDS 16

typedef struct tl_plan tl_plan;

/* Checks kernel k against the tensors (n_in inputs, n_out outputs: shapes, dtypes, layouts,
 * maps, ownership, overlap, budgets), parses the maps once and computes the cost. The kernel
 * struct, its specs and map strings are copied; tensors' data pointers are not kept. The plan
 * belongs to ctx (freed by tl_ctx_free at the latest). */
TL_API tl_status tl_plan_new(tl_ctx *ctx, const tl_kernel *k, const tl_tensor *in,
                             const tl_tensor *out, tl_plan **plan);
/* Runs the plan on new data: same shapes, dtypes, layouts and strides as at tl_plan_new (checked). */
TL_API tl_status tl_plan_run(tl_plan *plan, const tl_tensor *in, const tl_tensor *out);
/* Frees a plan. NULL is a no-op. */
TL_API void tl_plan_free(tl_plan *plan);
/* tl_plan_new + tl_plan_run + tl_plan_free. */
TL_API tl_status tl_call(tl_ctx *ctx, const tl_kernel *k, const tl_tensor *in, const tl_tensor *out);

/* Inside a body: runs an inner grid whose tensors are this step's refs (inputs then outputs, as
 * the inner kernel's n_in/n_out say) serially on this worker, staging sub-blocks into TL_L1 or
 * another layout (Pallas emit_pipeline). */
TL_API tl_status tl_pipeline_run(const tl_prog *p, const tl_kernel *inner, tl_ref *refs);
/* Inside a body: copies up to `bytes` of the next step's pending staging (blocks with buffers >=
 * 2) now; returns the bytes still pending. */
TL_API int64_t tl_stage_pump(const tl_prog *p, int64_t bytes);

typedef struct tl_cost {
  int64_t flops;
  int64_t bytes_read, bytes_written;      /* memory <-> staging over the whole grid */
  int64_t operand_bytes[TL_MAX_OPERANDS]; /* the same per operand: inputs, then outputs */
  int64_t vmem_bytes, l1_bytes;           /* footprint per thread in each budget */
} tl_cost;
/* The plan's cost, computed at tl_plan_new for its thread count with static chunks. */
TL_API tl_status tl_plan_cost(const tl_plan *plan, tl_cost *out);

typedef struct tl_stats {
  int64_t steps;
  int64_t stage_events[TL_MAX_OPERANDS]; /* blocks entered per operand (inputs, outputs) */
  int64_t bytes_read, bytes_written;
} tl_stats;
/* What the last tl_plan_run counted. */
TL_API tl_status tl_plan_stats(const tl_plan *plan, tl_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* TILEC_KERNEL_H */
