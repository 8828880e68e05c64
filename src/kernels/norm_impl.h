/* norm_impl.h — the shared driver of tl_softmax, tl_log_softmax, tl_layernorm and tl_rmsnorm
 * (rows_op.c), and what the registry and the bench need of it. Grids, blocks and numerics are in
 * docs/norms.md.
 *
 * Every op reduces a tensor along one axis. The driver views x and y as [O, A, I] (A the reduced
 * axis; O and I the merged dims before and after it, dims that cannot merge run as an outer C
 * loop of plan runs) and builds either one plan (a whole reduced line fits the staging budget:
 * one read, one write) or two (the stats plan walks chunks of A with an online merge into a
 * small f32 stats tensor, the apply plan reads x again and writes y). */
#ifndef TL_NORM_IMPL_H
#define TL_NORM_IMPL_H

#include "../tile/rows_impl.h"
#include "kernels_impl.h"

typedef enum tl_ro_kind { TL_RO_SOFTMAX, TL_RO_LOG_SOFTMAX, TL_RO_LAYERNORM, TL_RO_RMSNORM } tl_ro_kind;

/* One call as the public functions received it (borrowed pointers). */
typedef struct tl_ro_req {
  tl_ro_kind kind;
  const tl_tensor *x, *gamma, *beta, *y; /* gamma, beta: NULL when absent */
  int axis;                              /* as given (softmax); negative counts from the end */
  float eps;
} tl_ro_req;

/* What a step body reads (the apply-time values nt, y_lo, y_hi, eps are set before each run). */
typedef struct tl_ro_run {
  tl_ro_kind kind;
  int phase;             /* 0: one pass; 1: stats plan (online merge); 2: apply plan */
  int cols;              /* 1: the reduced axis is dim 1 of [O, A, I] with I > 1 (columns) */
  int xbf, ybf;
  int64_t A;             /* length of the reduced axis */
  int64_t ca;            /* chunk of A per step (A in one pass) */
  int ig, ib, is, iy;    /* ref index of gamma, beta, stats (input in phase 2, output in 1), y; -1 absent */
  int ie, iv;            /* scratch: exponentials [A*bi], column vectors [4*bi]; -1 absent */
  float eps;
  int nt;                /* streaming stores allowed for this call */
  const char *y_lo, *y_hi; /* y's bytes in this run: a block inside is written in place */
} tl_ro_run;

/* One plan's kernel with its specs, scratch and tensors. */
typedef struct tl_ro_desc {
  tl_kernel k;
  tl_blockspec in[4], out[1];
  tl_scratch scr[2];
  tl_tensor tin[4], tout[1];
  tl_ro_run run;
} tl_ro_desc;

/* Everything one call needs: the view, the plans' kernels and the outer loop. */
typedef struct tl_ro_build {
  int nplans;                    /* 1: one pass; 2: stats, then apply */
  tl_ro_desc d[2];
  int64_t O, A, I, bo, bi;       /* the [O, A, I] view, block sizes */
  int nloop;                     /* outer C loop over dims that do not merge */
  int64_t loop_n[TL_MAX_DIMS], loop_sx[TL_MAX_DIMS], loop_sy[TL_MAX_DIMS]; /* sizes, byte strides */
  int64_t x_off0, y_off0;        /* unused (0): the view starts at x->data / y->data */
} tl_ro_build;

/* The step body of every plan (rows_body.c); user is the desc's tl_ro_run. */
void tl_ro_body(const tl_prog *p, tl_ref *refs, void *user);
/* The public ops: checks (refusals name the operand; y untouched), then runs. */
tl_status tl_ro_call(tl_ctx *ctx, const tl_ro_req *rq);
/* Checks and builds without running (the registry makes its instances from this); gamma and
 * beta in the build are f32 [A] tensors over rq's data only when rq's are f32 with unit
 * stride (else their data is NULL: the caller converts). */
tl_status tl_ro_prepare(tl_ctx *ctx, const tl_ro_req *rq, tl_ro_build *bd);
/* Wires a build's kernels to its own specs, scratch and run structs (after a copy). */
void tl_ro_fixup(tl_ro_build *bd);
/* Sums the cost of the plans a call with rq makes (every plan, times the outer loop), from the
 * plan cache (making the plans when needed, which runs the call once): what `tilec bench`
 * compares against. operand_bytes is by role: x (with the two-level stats), gamma and beta when
 * given, y. */
tl_status tl_ro_cost(tl_ctx *ctx, const tl_ro_req *rq, tl_cost *cost, int *nplans);
/* Bytes of x plus y beyond which the outputs are written with streaming stores: half the L3
 * CPUID reports (32 MiB if none). Half, because a VM's CPUID may overstate the cache (32 MiB
 * reported, 17.7 MiB measured by tl_machine_probe on the Zen 4 dev VM) and the two arrays
 * compete with everything else for it; measured in docs/norms.md. */
int64_t tl_ro_nt_threshold(const tl_ctx_info *info);
/* The automatic choice of streaming stores for a call moving traffic bytes (x and y): beyond
 * tl_ro_nt_threshold, except bf16 outputs (ybf 1) along rows (colview 0: not the columns view)
 * of fewer than TL_RO_NT_BF16_ROW elements (A, the reduced axis). Such rows are compute-bound
 * enough that the streaming stores cost more than the reads for ownership they save
 * (docs/norms.md, "Streaming stores"). */
#define TL_RO_NT_BF16_ROW 2048
int tl_ro_nt_auto(const tl_ctx_info *info, int64_t traffic, int ybf, int colview, int64_t A);
/* Streaming stores for outputs: -1 automatic (tl_ro_nt_auto), 0 never, 1 always (where the ISA
 * path has them). Per context; for measuring. */
void tl_ro_set_nt(tl_ctx *ctx, int mode);
/* The streaming-store choice of ctx's last softmax / norm call that reached its plans (1 or 0),
 * -1 before any; for tests. */
int tl_ro_last_nt(tl_ctx *ctx);

#endif /* TL_NORM_IMPL_H */
