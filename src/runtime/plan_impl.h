/* plan_impl.h — the plan (a kernel checked against its tensors, maps parsed, cost computed), the
 * run state shared by the workers, and the staging interface (stage.c). Internal to runtime/. */
#ifndef TL_PLAN_IMPL_H
#define TL_PLAN_IMPL_H

#include <string.h>

#include "runtime_impl.h"

#define TL_MAX_REFS (2 * TL_MAX_OPERANDS) /* operands + scratch */
#define TL_BUF_ALIGN 64
/* Staging buffers are placed half a page away from their tensor modulo 4 KiB: a copy whose source
 * and destination share their low 12 address bits stalls on 4K aliasing (bench/staging_ceiling.c,
 * blocks of one 4 KiB row: 0.64x of the plain loop with the buffer page-aligned, 0.91x shifted).
 * Each operand's arena region has this much slack for the shift. */
#define TL_ALIAS_SLACK 4096

/* ---- staging (stage.c) ---- */

/* One 2-D slab to pack: the valid rows x cols of a row-major source into a destination block of
 * dst_rows x dst_cols in `layout` (row-major: row stride dst_cols; tiled: tile storage padded to
 * whole tiles). Every destination element outside the valid region gets pad (esize bytes). */
typedef struct tl_pack_job {
  const char *src;
  int64_t src_rs, src_cs; /* source strides in elements (0 broadcasts) */
  int64_t rows, cols;     /* valid extent, <= dst_rows, dst_cols */
  char *dst;
  int64_t dst_rows, dst_cols;
  tl_layout layout;
  size_t esize;
  const void *pad;
  int64_t tile_stride; /* tiled: elements from a tile's start to the next one's (0: tile_r * tile_c,
                        * tiles back to back); larger packs rows of tiles that are taller */
  int nt;              /* 1: non-temporal stores where the packer has them (dst 64-byte aligned) */
} tl_pack_job;
typedef void (*tl_pack_fn)(const tl_pack_job *job);

/* Registered packers: the portable ones always; ISA layers add faster ones for their levels. */
typedef struct tl_packer {
  size_t esize;   /* 0: any */
  int tiled;      /* destination row-major (0) or tiled (1) */
  int vnni;       /* tiled only: 1, 2, 4; 0: any */
  tl_isa isa;     /* lowest ISA level that may use it */
  tl_pack_fn fn;
} tl_packer;
/* Adds a packer to the process-wide table (ISA layers call it from tl_layers_attach). Later
 * registrations win over earlier ones for the same key. */
void tl_packer_register(const tl_packer *p);
/* The best packer for (esize, layout) at ISA level isa. Never NULL (the portable one). */
tl_pack_fn tl_packer_find(size_t esize, tl_layout layout, tl_isa isa);
/* The portable packer. */
void tl_pack_portable(const tl_pack_job *job);

/* For the ISA vnni packers (src/tile/<isa>/pack_<isa>.c): a job's geometry, es bytes per element,
 * v of them per 4-byte group, tiles of tr x tc, trows x tcols of them `tile` bytes apart, the pad
 * element (0 without one). Returns 0 when the job is not theirs (untiled, a group not 4 bytes,
 * tile_c not a multiple of 16, a strided source): tl_pack_portable takes it. */
typedef struct tl_vnni_geom {
  int64_t es, v, tr, tc, trows, tcols, tile;
  uint32_t pad;
} tl_vnni_geom;
static inline int tl_vnni_geom_of(const tl_pack_job *j, tl_vnni_geom *g) {
  const tl_layout l = j->layout;
  g->es = (int64_t)j->esize, g->v = l.vnni ? l.vnni : 1;
  if (!l.tiled || g->es * g->v != 4 || l.tile_c % 16 || (j->src_cs != 1 && j->rows > 0 && j->cols > 1)) return 0;
  g->pad = 0;
  if (j->pad) memcpy(&g->pad, j->pad, (size_t)g->es);
  g->tr = l.tile_r, g->tc = l.tile_c;
  g->trows = TL_CDIV(j->dst_rows, g->tr), g->tcols = TL_CDIV(j->dst_cols, g->tc);
  g->tile = (j->tile_stride ? j->tile_stride : g->tr * g->tc) * g->es; /* bytes from tile to tile */
  return 1;
}

/* Elements of one padded block of `shape` staged in `layout`; -1 when the count overflows. */
int64_t tl_block_elems(int ndim, const int64_t *shape, tl_layout layout);

/* ---- the plan ---- */
/* What one worker counted during a run (its own cache lines). */
typedef struct tl_wstats {
  _Alignas(64) int64_t steps, bytes_read, bytes_written;
  int64_t events[TL_MAX_OPERANDS];
} tl_wstats;

typedef struct tl_operand {
  int is_out;
  tl_blockspec spec;           /* map points into the plan's own copy */
  tl_map map;
  tl_tensor t;                 /* as given at tl_plan_new; data replaced at each run */
  size_t esize;
  int64_t block[TL_MAX_DIMS];  /* resolved block shape (0 in the spec: the whole dim) */
  int64_t nblk[TL_MAX_DIMS];   /* blocks along each dim (1 for a zero-size dim) */
  int64_t nblocks;
  int64_t buf_bytes;           /* one staged block, rounded up to TL_BUF_ALIGN */
  int64_t slab_bytes, nslab;   /* staging geometry (tl_operand_geometry): bytes of one staged 2-D slab */
  int64_t rows_total, row_bytes; /* slab rows (tile-padded) and bytes per slab row */
  int64_t buf_off;             /* offset of its buffers in the worker arena (-1: none) */
  int64_t buf_shift;           /* set per run: 0..4032, moves the buffers off the tensor's 4K alias */
  int nbuf;                    /* buffers (>= 1) */
  int shares;                  /* output: index of the input whose buffer it shares, else -1 */
  int shared_by;               /* input: index of the output sharing it, else -1 */
  int64_t full_tiled_inplace;  /* tiled tensor whose blocks are contiguous in it (usable in place) */
  uint8_t pad[8];              /* pad value in the tensor's dtype */
  uint8_t poison[8];           /* interpret mode: unwritten TL_OUT_WRITE elements */
  uint8_t poison_pad[8];       /* interpret mode: pad_any padding */
  tl_pack_fn pack;
  int64_t *visits;             /* outputs: steps touching each block (counted at tl_plan_new) */
  int64_t *done;               /* outputs: steps run on each block in the current run */
} tl_operand;

struct tl_plan {
  tl_ctx *ctx;
  struct tl_plan *prev, *next; /* the context's list */
  char name[64];
  tl_kernel k;                 /* copy; body, user, grid, sem */
  int n_in, n_out, nops, n_scratch;
  tl_operand op[TL_MAX_OPERANDS];
  tl_scratch scratch[TL_MAX_OPERANDS];
  int64_t scratch_off[TL_MAX_OPERANDS], scratch_bytes[TL_MAX_OPERANDS];
  int par_axes;                /* leading TL_PARALLEL axes */
  int64_t n_par, n_inner, n_steps;
  int threads;                 /* workers a run uses (1 in interpret mode) */
  int interpret;
  tl_isa isa;
  int empty;                   /* zero-size grid axis or output: runs succeed doing nothing */
  int64_t arena_bytes;         /* per worker */
  tl_cost cost;
  tl_stats stats;
  tl_wstats *wstats;           /* per worker, counted during a run */
  char *strings;               /* copies of the map strings */
  int any_prefetch;
  int n_pump, pump_ops[TL_MAX_OPERANDS]; /* double-buffered inputs tl_stage_pump can fill */
  int nested;                  /* made by tl_pipeline_run: serial, not in the context's list */
  char *err;                   /* where messages go */
  size_t errn;
};

/* The run shared by the workers. */
typedef struct tl_run {
  tl_plan *plan;
  _Atomic int failed;
  tl_status fail_status;       /* written once, by the worker that set failed */
  char fail_msg[768];
} tl_run;

struct tl_prog {
  const tl_plan *plan;
  tl_run *run;
  int worker;
  int depth;                   /* 0: tl_plan_run; n: inside n tl_pipeline_run calls */
  int64_t g[TL_MAX_DIMS];
  int8_t first[TL_MAX_OPERANDS], last[TL_MAX_OPERANDS]; /* per output */
};

/* tl_plan_new's work with messages in err; nested plans (for tl_pipeline_run) run on one
 * worker and are not linked into the context. */
tl_status tl_plan_build(tl_ctx *ctx, const tl_kernel *k, const tl_tensor *in, const tl_tensor *out, int nested, char *err,
                        size_t errn, tl_plan **plan);
/* Fills o's staging geometry from its block shape and staging layout (exec.c). */
void tl_operand_geometry(tl_operand *o);
/* Executes the plan (exec.c); plan.c has checked everything. */
tl_status tl_plan_exec(tl_plan *plan);
/* Byte span [lo, hi) a row-major or tiled tensor's elements occupy. */
void tl_tensor_span(const tl_tensor *t, uintptr_t *lo, uintptr_t *hi);

#endif /* TL_PLAN_IMPL_H */
