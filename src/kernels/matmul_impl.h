/* matmul_impl.h — what matmul.c (checks, config, plan cache, tl_matmul), matmul_body.c (the
 * step body and its epilogue) and matmul_pack.c (tl_matmul_pack_b, the registry entry) share.
 *
 * The kernel: grid (batch, j, i, k) over C's inner batch dim, N blocks, M blocks, K blocks; the
 * first three TL_PARALLEL, k TL_ARBITRARY and innermost, so each C block's visits are
 * consecutive (TL_OUT_WRITE, or TL_OUT_ACCUM_LOAD when beta != 0) and its epilogue runs once, on
 * the last k step. With one K block, B's block (k, j) is the same for every i and stays staged.
 * Batch dims of c beyond the one in the grid (after merging mergeable dims) are walked by an
 * outer loop that runs the same plan on offset tensors. */
#ifndef TL_MATMUL_IMPL_H
#define TL_MATMUL_IMPL_H

#include "../tile/tile_impl.h" /* TL_TILE_WALK_M */
#include "kernels_impl.h"

/* Operand order of the kernel's inputs (absent ones are skipped; the run struct holds the ref
 * index of each, -1 when absent). */
enum { TL_MM_MAX_IN = 6, TL_MM_MAX_SCRATCH = 3, TL_MM_MAX_OUTER = 4 };

/* K rows per B block (and per tile row of a packed b) for each dtype: one tile row of the packed
 * layout is one K block, so packed b is read in place block by block. */
#define TL_MM_BK_F32 512
#define TL_MM_BK_BF16 512
#define TL_MM_BK_I8 1024
/* Rows of a per M block (at most): a b staged per step is staged again for every M block. */
#define TL_MM_BM_MAX 128
/* tl_matmul's own packing of a bf16 / int8 b (tl_mm_autopack: 256 rows of a and more, bf16 /
 * int8 with a large b from TL_MM_BM_MAX + 1) makes tile
 * rows up to this many times longer: each K block loads and stores the accumulator once per row
 * block, and with many row blocks a panel comes from L2 either way (bf16 2048^3, 2 threads:
 * 41.7 -> 40.0 ms). tl_matmul_pack_b keeps the shorter rows: with few rows of a a panel of
 * them stays in L1 between the row blocks (pre-packed bf16 16x4096x4096 measured 1.51 -> 1.78
 * ms with the longer rows). */
#define TL_MM_LONG_K 2
/* N blocks of a packed b: up to this many columns (staged b: 256) */
#define TL_MM_BN_PACKED 512
/* f32 at the AVX2 levels: M blocks (from TL_MM_BM_MAX rows) and packed-b N blocks (tl_mm_config). */
#define TL_MM_BM_A2 192
#define TL_MM_BN_PACKED_A2 256
/* Streaming skinny products (row-major b from DRAM read in place): up to this many rows of a,
 * K blocks of up to TL_MM_BK_STREAM rows (b is never staged: no VMEM). */
#define TL_MM_STREAM_M 2
#define TL_MM_BK_STREAM 1024
/* 3 to TL_MM_CHUNK_M rows against such a b with contiguous rows (the K split's shapes, where
 * the vector dots have row-major kernels for them: tl_mm_rows_split): each thread's K blocks are
 * copied a chunk at a time (int8; bf16 and f32 are walked: TL_MM_WALK_M), TL_MM_CHUNK_KB bytes of each
 * column (fewer rows when the K block is shorter) by a slice of the columns of at most a
 * TL_MM_CHUNK_DIV-th of the VMEM budget, into a VMEM scratch whose rows are off the 4 KiB alias,
 * which the dot reads (matmul_split.c). */
#define TL_MM_CHUNK_M 16
/* bf16 with 3 to TL_MM_WALK_M (16) rows takes no chunks: the AVX512-BF16 dot walks each step's K
 * block in place (tl_mm_rows_split; tl_bf_walk, avx512bf16/walk_avx512bf16.h, up to the same
 * rows), and so does f32 on AVX-512 (tl_a5_walk, dot_avx512.c) past half the L3; the body queues the first
 * TL_MM_WALK_PF bytes of each column of the thread's next step (bf16 32 rows, f32 16) for the
 * walk's last sweep to prefetch. 9-16 rows walk since 2026-11-28 with every row in registers
 * (bf16 until then in the chunks, f32 in the N split's sweep: docs/matmul.md "9-16 rows: the wide
 * walks"). */
#define TL_MM_WALK_M TL_TILE_WALK_M
#define TL_MM_WALK_PF 64
#define TL_MM_CHUNK_KB 256
#define TL_MM_CHUNK_DIV 12
/* The N block of a streamed b (tl_mm_config, before any budget shrinks it): one per thread,
 * whole 16-column tiles. tl_mm_chunk_k asks for at least 2 of them, as tl_mm_split_decide does. */
static inline int64_t tl_mm_stream_bn(int64_t N, int threads) {
  return TL_CDIV(TL_CDIV(N, TL_MAX(1, (int64_t)threads)), 16) * 16;
}
/* x rounded up to a multiple of m (> 0). */
static inline int64_t tl_mm_round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
/* Balanced blocks: ceil(n / cap) blocks of about equal size, rounded up to a multiple of m (the
 * last one shorter where that rounding overshoots). */
static inline int64_t tl_mm_balanced(int64_t n, int64_t cap, int64_t m) {
  return n <= 0 ? m : tl_mm_round_up(TL_CDIV(n, TL_CDIV(n, cap)), m);
}
/* The f32 sweep (tl_mm_run.sweep): up to TL_MM_SWEEP_M rows of a (below the AVX-512 dot's 32,
 * from which it packs b), N blocks of at most TL_MM_SWEEP_BN columns. */
#define TL_MM_SWEEP_M 31
#define TL_MM_SWEEP_BN 512

/* What the body reads (the kernel's user data). alpha and beta (and the packed base) are set
 * before each run, so they are not part of the plan's key. */
typedef struct tl_mm_run {
  float alpha, beta;
  tl_act act;
  tl_dtype c_dt;       /* c's dtype */
  int int_out;         /* c is i32: the epilogue runs in double per element (exact for i32) */
  int ia, ib, ibias, isa, isb, ires, ic; /* ref indices of the operands, -1 when absent */
  int iacc, icvt, itmp; /* scratch refs: accumulator (-1: accumulate in c), i32 -> f32, beta * c */
  /* packed b (tiled with tile_r = BK, tile_c = 16): an operand read in place (TL_STAGE_NEVER),
   * a block one tile row by BN / 16 tiles */
  int packed;
  /* b streamed in place (few rows, unit column stride, b from memory: past half, an eighth or
   * a sixteenth of the L3, matmul.c): TL_STAGE_NEVER, so the body narrows the dot's operands to
   * the valid extents of the step's blocks */
  int stream;
  /* a with unit column stride read in place at the edges of M, N and K too (TL_STAGE_NEVER),
   * the body narrowing the dot to the valid extents: f32 with a packed b or a row-major b with
   * unit column stride (also read in place, with K blocks of any length, not rounded to 16);
   * bf16 / int8 with a packed b below AMX (whose tiles want whole groups). A packed b is
   * narrowed to the exact valid rows and K: no padded copies of edge blocks */
  int edges;
  /* f32, 3-31 rows of a against a row-major b from memory read in place (edges), from the AVX2
   * level: N blocks of at most TL_MM_SWEEP_BN columns over the whole of K, which the AVX-512 dot
   * walks in sweeps of a few rows of b and the AVX2 dot stages in wide chunks (matmul.c) */
  int sweep;
  /* bf16 / int8 b left row-major for the AVX512-BF16 / VNNI row-major kernels (3-16 rows of a,
   * see matmul.c), read in place or as a plain row-major copy of each block; in place, edge
   * blocks too (and a with unit column stride beside it), the body narrowing the dot to their
   * valid part, as for stream */
  int rm;
  /* the K split (tl_mm_build.split): partial 1 in the split's first kernel (each step's product
   * into its own partial row, no epilogue); sum = S in its second (the step sums the S partial
   * rows of its block, the a operand, instead of a dot; no b; then the epilogue) */
  int partial, sum;
  /* the split's first kernel for 3-16 rows (tl_mm_chunk_k): the step's b block walked in slices
   * of chunk_n columns, chunk_k rows of a slice at a time copied into scratch ref ichunk (rows
   * chunk_ld bytes apart, never a multiple of 4 KiB), one dot per chunk; chunk_k 0: the dot
   * reads b in place; chunk_kall: K, all of b's rows (the next step's first chunk, which the
   * last chunk's dot prefetches, may be short) */
  int64_t chunk_k, chunk_n, chunk_ld, chunk_kall;
  int ichunk;
  /* the split's first kernel for 3-TL_MM_WALK_M (16) rows of bf16 / f32 (no chunks: the dot walks
   * the step's K block in place): the body queues the thread's next step's first rows of b
   * (TL_MM_WALK_PF bytes of each column) for the walk's last sweep to prefetch */
  int walk;
  int64_t BM, BN, BK;
} tl_mm_run;

/* Everything a plan of one call is built from: the kernel, its specs, the plan's tensors for
 * outer batch index 0, and the outer loop. in/out/scratch of k point into this struct (fix them
 * up after copying it). */
typedef struct tl_mm_build {
  tl_kernel k;
  tl_blockspec in[TL_MM_MAX_IN], out[1];
  tl_scratch scr[TL_MM_MAX_SCRATCH];
  tl_tensor tin[TL_MM_MAX_IN], tout[1];
  tl_mm_run run;
  int n_outer;                               /* outer batch dims walked by the loop */
  int64_t outer_shape[TL_MM_MAX_OUTER];
  int64_t outer_stride[4][TL_MM_MAX_OUTER];  /* bytes, for a, b, c, residual */
  int64_t batch, M, N, K;                    /* batch: product of c's batch dims */
  /* K split between split (> 1; 0: none) parallel steps, for 1-2 rows of a streaming a
   * row-major b whose rows are contiguous (and 3-16 rows of bf16 / int8, 3-8 of f32:
   * tl_mm_rows_split), where
   * the N split would leave each thread part of every row (docs/matmul.md): kernel ks (grid (s,
   * q), step (s, q) the K block S q + s, product into row s of a partial [S, M, N] tensor,
   * ks_tout, whose data tl_matmul provides),
   * then this build's kernel turned by tl_mm_split_sum into one that sums the S rows under the
   * epilogue. Decided by the heuristic (no cfg) only: such a shape takes no tuned config
   * (tl_mm_tuned_build) and the tuner refuses it. ks_* point into this struct after
   * tl_mm_build_fixup. */
  int split;
  tl_kernel ks;
  tl_blockspec ks_in[2], ks_out[1];
  tl_scratch ks_scr[1];
  char ks_map[3][48];
  tl_tensor ks_tin[2], ks_tout[1];
  tl_mm_run ks_run;
} tl_mm_build;

/* Checks the arguments of tl_matmul (message in ctx, nothing touched) and builds the kernel for
 * them on ctx's budgets and thread count. */
tl_status tl_mm_prepare(tl_ctx *ctx, const tl_tensor *a, const tl_tensor *b, const tl_tensor *c,
                        const tl_matmul_opts *o, tl_mm_build *out);
/* tl_mm_prepare with a config: cfg (NULL: none) = {BM, BN, BK}, each > 0 replacing the
 * heuristic's (BK is kept for a packed b, whose K block is its tile row). Used by the tuner's
 * candidates and by tuned configs. */
tl_status tl_mm_prepare_cfg(tl_ctx *ctx, const tl_tensor *a, const tl_tensor *b, const tl_tensor *c,
                            const tl_matmul_opts *o, const int64_t *cfg, tl_mm_build *out);

/* Tuning (matmul.c, matmul_tune.c; docs/tune.md). The DB key of a problem:
 * "<a>.<b>.<c> m<M> n<N> k<K> z<inner batch>[ packed| packed-long-k]" (packed-long-k: b in the
 * per-call packing's longer tile rows). Version 2: those rows and the wider packed N blocks. */
#define TL_MM_TUNE_VERSION 2
void tl_mm_tune_key(const tl_mm_build *bd, char *key, size_t n);
/* When ctx's tuning DB has a config for heur's problem that differs from heur's, builds it into
 * *out and returns 1; else 0 (then *out is unset). */
int tl_mm_tuned_build(tl_ctx *ctx, const tl_tensor *a, const tl_tensor *b, const tl_tensor *c, const tl_matmul_opts *o,
                      const tl_mm_build *heur, tl_mm_build *out);
/* The build and plan a new plan of this call takes: the tuned config when the DB has one and the
 * executor takes it, else (with a warning when a tuned one was refused) the heuristic's heur.
 * *out is fixed up (its kernel points into it; *plan reads it: keep *out in place while *plan
 * lives). *tuned (may be NULL): 1 when the tuned config was taken. tl_matmul and the registry's
 * instance (explain, roofline) both decide through it. */
tl_status tl_mm_plan_make(tl_ctx *ctx, const tl_tensor *a, const tl_tensor *b, const tl_tensor *c,
                          const tl_matmul_opts *o, const tl_mm_build *heur, tl_mm_build *out, tl_plan **plan, int *tuned);
/* Test hook: the BM, BN, BK a new tl_matmul plan for these arguments would use, and whether they
 * are tuned. */
tl_status tl_mm_config_used(tl_ctx *ctx, const tl_tensor *a, const tl_tensor *b, const tl_tensor *c,
                            const tl_matmul_opts *opts, int64_t *bm_bn_bk, int *tuned);
/* Test hook: the BM, BN, BK of the plan tl_matmul cached for these arguments and (split, may
 * be NULL) the number of parts its K is split into (0: unsplit): 1, or 0 when no plan is cached
 * for them. */
int tl_mm_cached_config(const tl_ctx *ctx, const tl_tensor *a, const tl_tensor *b, const tl_tensor *c,
                        const tl_matmul_opts *opts, int64_t *bm_bn_bk, int *split);
/* Mean work per thread over the busiest thread's (1: even) for blocks BM x BN of an [inner, M,
 * N] c on T threads: the executor gives worker w the parallel indices (z, j, i), i fastest,
 * [n * w / T, n * (w + 1) / T); an index's work is its c block's valid area. */
double tl_mm_balance(int64_t inner, int64_t M, int64_t N, int64_t BM, int64_t BN, int T);
/* Points k's in/out/scratch at the build's own arrays (after a copy) and k.user at run (ks's
 * at ks_run). */
void tl_mm_build_fixup(tl_mm_build *bd, tl_mm_run *run);
/* 1 when b's geometry admits the K split on info's threads (2-64 threads, no batch, b's rows
 * contiguous); tl_mm_split_decide also needs b streamed. matmul_split.c. */
int tl_mm_split_shape(const tl_ctx_info *info, const tl_mm_build *bd, const tl_tensor *b);
/* 1 when M rows of a (3..TL_MM_CHUNK_M) against b take the K split at info's ISA level: a with
 * unit column stride, b's geometry (tl_mm_split_shape), K blocks for every thread and at least 2
 * N blocks, a row-major kernel for a's dtype at the level (f32: AVX-512), the M x N
 * accumulator rows in half the VMEM budget; and for int8 a chunk (tl_mm_chunk_k). bf16 and f32
 * (up to TL_MM_WALK_M rows, all of them) need no chunk: the dot walks the step's K block in place. matmul.c streams b (tl_mm_run.stream) for such M
 * only when this is 1, so that tl_mm_split_decide then splits. */
int tl_mm_rows_split(const tl_ctx_info *info, const tl_mm_build *bd, const tl_tensor *a, const tl_tensor *b);
/* The chunk (rows of b per copy, tl_mm_run.chunk_k; its slice of columns in *nc,
 * tl_mm_run.chunk_n) the K split's first kernel takes for M rows of a (3..TL_MM_CHUNK_M, int8)
 * against b at info's ISA level, or 0 (*nc untouched) when it does not take that path (f32 and
 * bf16 never: they are walked, tl_mm_rows_split): tl_mm_rows_split's checks and the chunk in
 * half the VMEM budget. */
int64_t tl_mm_chunk_k(const tl_ctx_info *info, const tl_mm_build *bd, const tl_tensor *a, const tl_tensor *b,
                      int64_t *nc);
/* The row stride (elements) of the K split's partial products [S, M, N] (matmul_split.c). */
int64_t tl_mm_part_ld(int64_t N);
/* Sets bd->split and the first kernel (ks_*) when the K split applies (the heuristic's build,
 * after its config), else leaves split 0. */
void tl_mm_split_decide(const tl_ctx_info *info, tl_mm_build *bd, const tl_tensor *a, const tl_tensor *b);
/* Turns a build with split > 1 into the split's second kernel in place: input a becomes the
 * partial tensor (part: its data, [S, M, N] of the accumulator's dtype, contiguous), b is
 * dropped, one K step. tl_mm_split_tin makes its inputs from a call's unsplit inputs. */
void tl_mm_split_sum(tl_mm_build *bd, void *part);
void tl_mm_split_tin(const tl_mm_build *unsplit, const tl_tensor *tin, void *part, tl_tensor *out);
/* The step body (matmul_body.c). */
void tl_mm_body(const tl_prog *p, tl_ref *refs, void *user);
/* tl_matmul_pack_b with the tile rows of tl_mm_pack_layout(dtype, K, long_k): the tuner packs
 * with long_k 1 what tl_mm_autopack would. */
tl_status tl_mm_pack_b(tl_ctx *ctx, const tl_tensor *b, tl_dtype a_dtype, int long_k, tl_tensor *packed);
/* 1 when this call packs b first (b 2-D, shared by many rows of a): *packed is then b in
 * tl_mm_pack_layout(dtype, K, 1), in a buffer the context keeps until the next such call.
 * 0: run with b as given (also when the copy failed: nothing is reported). */
int tl_mm_autopack(tl_ctx *ctx, const tl_tensor *a, const tl_tensor *b, tl_tensor *packed);
/* 1 when tl_mm_autopack packs b for this a (the decision alone; the tuner tunes the packed
 * problem then, since that is the plan tl_matmul runs): b 2-D and at least 16 x 32, and either
 * 2^16 elements and 256 rows of a (all batches), or for bf16 / int8 b of 2^20 / 2^23 elements
 * from TL_MM_BM_MAX + 1 rows (matmul_pack.c says why). */
int tl_mm_autopack_applies(const tl_tensor *a, const tl_tensor *b);
/* The K group of a packed b of dtype dt: its tile rows are multiples of it (16 f32 rows, 32 bf16
 * rows = 16 vnni-2 pairs, 64 int8 rows = 16 vnni-4 quads: whole AMX tiles). */
static inline int64_t tl_mm_kgroup(tl_dtype dt) { return dt == TL_F32 ? 16 : dt == TL_BF16 ? 32 : 64; }
/* The vnni group of b for a of dtype dt: k per 32-bit lane (1 f32, 2 bf16, 4 int8). */
static inline int64_t tl_mm_vnni(tl_dtype dt) { return dt == TL_F32 ? 1 : dt == TL_BF16 ? 2 : 4; }
/* K rows per tile row of a packed b of dtype dt (f32, bf16, i8, u8) with K rows: the one
 * tl_matmul_pack_b makes (long_k 0) or the per-call packing's (long_k 1: TL_MM_LONG_K). */
int64_t tl_mm_pack_tile_r(tl_dtype dt, int64_t K, int long_k);
/* The layout tl_matmul_pack_b (long_k 0) and the per-call packing (long_k 1) make for a b of
 * dtype dt with K rows: tiled, tile_c 16, tile_r = tl_mm_pack_tile_r, vnni 1 (f32) / 2 (bf16) /
 * 4 (int8). */
tl_layout tl_mm_pack_layout(tl_dtype dt, int64_t K, int long_k);

#endif /* TL_MATMUL_IMPL_H */
