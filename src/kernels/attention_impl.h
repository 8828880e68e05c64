/* attention_impl.h — tl_attention's kernels (docs/attention.md), internal to kernels/.
 *
 * Two kernels of the grid model share one step routine (tl_attn_block: one K/V block against a
 * group of query rows, online softmax in scratch):
 *
 * - prefill (Sq > 16): outer grid (B, Hq, Q blocks), all parallel. Each step stages its Q block
 *   and runs an inner grid (tl_pipeline_run) over exactly the K/V blocks its rows can see: all of
 *   them, or under causal only those up to the diagonal, so wholly masked blocks are neither
 *   staged nor computed. The online-softmax state (row max m, row sum l, the O accumulator) lives
 *   in the outer kernel's scratch, persisting across the inner K/V axis; O is written once.
 * - decode (Sq <= 16): grid (B, Hkv, chunks, K/V blocks of the chunk); the query rows of all
 *   query heads sharing one K/V head form one block, so K and V are read once. The chunk count
 *   depends on Sk only (never on threads); each chunk leaves (m, l, partial O) in a workspace and
 *   tl_attention merges them with log-sum-exp in chunk order: bitwise identical for any thread
 *   count.
 *
 * tl_attn_run is read by the bodies; everything in it is fixed per plan except the data pointers
 * and the scale, which tl_attention sets before each run. */
#ifndef TL_ATTENTION_IMPL_H
#define TL_ATTENTION_IMPL_H

#include "kernels_impl.h"

/* Sq at or below this takes the decode path. */
#define TL_ATTN_DECODE_MAX_SQ 16
/* Decode steps with at most this many query rows stream K and V through vector code (a
 * matrix-unit product would stage or transpose each block for a handful of rows). */
#define TL_ATTN_VEC_ROWS 4
/* Per-worker counters of the inner grid (prefill), padded to a cache line each. */
#define TL_ATTN_MAX_WORKERS 256

typedef struct tl_attn_wcount {
  _Alignas(64) int64_t kv_blocks, kv_bytes;
} tl_attn_wcount;

typedef struct tl_attn_run {
  int decode;
  int64_t B, Hq, Hkv, group, Sq, Sk, D;
  int64_t bq, bk;          /* Q rows per block (prefill) / K,V rows per block */
  int64_t rows;            /* query rows per step: bq (prefill), group * Sq (decode) */
  int64_t nchunk, chunk_blocks; /* decode: chunks and K/V blocks per chunk */
  int causal;
  int vec_rows;            /* decode with <= TL_ATTN_VEC_ROWS rows: Q K^T and P V on the vector unit */
  float scale;             /* set per call */
  tl_dtype dt, odt, mdt;   /* q/k/v, o, mask (TL_DTYPE_INVALID: no mask) */
  /* prefill: K, V and the mask as 4-D [B, H, S, D] / [B, Hq, Sq, Sk] views (mask broadcast with
   * zero strides); the inner grid cuts views of them (data set per call) */
  tl_tensor k, v, mask;
  tl_layout v_layout;      /* staging layout of V blocks (bf16: AMX B layout, vnni 2) */
  tl_attn_wcount wc[TL_ATTN_MAX_WORKERS];
  char map_kv[96], map_mask[96]; /* decode maps (they hold the chunk length) */
} tl_attn_run;

/* Scratch, after the operands in refs: acc [rows, D] f32, ml [2, rows] f32 (row max m, then row
 * sum l), S [rows, bk] f32, P [rows, bk] (bf16 for bf16 inputs, else an unused element). */
enum { TL_ATTN_SCR_ACC, TL_ATTN_SCR_ML, TL_ATTN_SCR_S, TL_ATTN_SCR_P, TL_ATTN_NSCR };

/* Bodies (attention_body.c). Prefill refs: Q, O, scratch. Decode refs: Q, K, V, [mask], partial
 * O [B, Hkv, chunks, rows, D] f32, partial (m, l) [B, Hkv, chunks, rows, 2] f32, scratch. */
void tl_attn_prefill_body(const tl_prog *p, tl_ref *refs, void *user);
void tl_attn_decode_body(const tl_prog *p, tl_ref *refs, void *user);

/* Sums the inner-grid counters of the last run (K/V blocks staged, K/V/mask bytes entered). */
void tl_attn_counts(const tl_attn_run *run, int64_t *kv_blocks, int64_t *kv_bytes);

/* What the last tl_attention on ctx did, for tests and tools: the plan (outer kernel), whether
 * it was the decode path, and the K/V blocks the inner grids entered (prefill). 0 / NULL when
 * no call has run. */
typedef struct tl_attn_last {
  const tl_plan *plan;
  int decode;
  int64_t kv_blocks, kv_bytes;
  int64_t bq, bk, nchunk;
  int plans_made; /* plans built by tl_attention on this context so far */
} tl_attn_last;
void tl_attn_last_get(const tl_ctx *ctx, tl_attn_last *out);

/* Tuning (attention.c, attention_tune.c; docs/tune.md). Parameters BQ (query rows per block,
 * prefill only) and BK (K/V rows per block). The DB key of a problem:
 * "<q>.<o> b<B> hq<Hq> hkv<Hkv> sq<Sq> sk<Sk> d<D> causal<0|1> mask<dtype or ->". tl_attention
 * looks it up when it makes a plan; a config whose BQ or BK is not a multiple of 16 (at least 16),
 * or that the budget or the executor refuses, falls back to the heuristic with a warning. */
#define TL_ATTN_TUNE_VERSION 1
void tl_attn_tune_key(const tl_tensor *q, const tl_tensor *k, const tl_tensor *o, tl_dtype mask_dt, int causal, char *key,
                      size_t n);

/* A tuning candidate: the plan tl_attention would make for q, k, v, o (no mask) with cfg = {bq,
 * bk} (NULL or entries 0: the heuristic's), run on the tensors' data. Refusals (budget, plan)
 * return their status with the message on ctx. */
typedef struct tl_attn_cand tl_attn_cand;
typedef struct tl_attn_cand_desc {
  const tl_plan *plan;
  int decode;
  int64_t bq, bk;
  int64_t par_blocks, steps; /* independent parallel units; grid steps of one run (inner K/V steps included) */
} tl_attn_cand_desc;
tl_status tl_attn_cand_new(tl_ctx *ctx, const tl_tensor *q, const tl_tensor *k, const tl_tensor *v, const tl_tensor *o,
                           int causal, const int64_t *cfg, tl_attn_cand **out);
tl_status tl_attn_cand_run(tl_attn_cand *c, const tl_tensor *q, const tl_tensor *k, const tl_tensor *v, const tl_tensor *o);
void tl_attn_cand_info(const tl_attn_cand *c, tl_attn_cand_desc *d);
void tl_attn_cand_free(tl_attn_cand *c); /* NULL is a no-op */

#endif /* TL_ATTENTION_IMPL_H */
