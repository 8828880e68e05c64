/* matmul_split.c — the K split of tl_matmul (tl_mm_build.split, docs/matmul.md "K split"): for
 * 1-2 rows of a streaming a b whose rows are contiguous (3-16 of bf16 / int8 / f32 where
 * tl_mm_rows_split says so), the threads split K instead of N. The rule
 * (tl_mm_split_shape, tl_mm_rows_split, tl_mm_split_decide), the first kernel's build (ks: each
 * step's product into its own part of a [S, M, N] buffer, rows tl_mm_part_ld apart), and the
 * second kernel made from the ordinary build
 * (tl_mm_split_sum: the parts summed under the epilogue). The plans and the buffer belong to
 * tl_matmul's plan-cache entry (matmul.c). */
#include <stdio.h>

#include "matmul_impl.h"

/* See matmul_impl.h. */
int tl_mm_split_shape(const tl_ctx_info *info, const tl_mm_build *bd, const tl_tensor *b) {
  const int64_t S = info->threads, es = (int64_t)tl_dtype_size(b->dtype), N = bd->N;
  const int64_t ldb = b->stride[b->ndim - 2] * es;
  return bd->batch == 1 && S >= 2 && S <= 64 && ldb == N * es;
}

/* K blocks of about TL_MM_BK_STREAM rows (multiples of 64) in a multiple of S, so every split
 * has as many: their count (0: K is too short for S blocks), the block in *bk. */
static int64_t tl_mm_split_blocks(int64_t K, int64_t S, int64_t *bk) {
  const int64_t g = 64;
  for (int64_t nb = TL_CDIV(TL_CDIV(K, TL_MM_BK_STREAM), S) * S; nb >= S; nb -= S) { /* the most that tile K exactly */
    *bk = TL_CDIV(TL_CDIV(K, nb), g) * g;
    if (TL_CDIV(K, *bk) == nb) return nb;
  }
  return 0;
}

/* The row stride (bytes) of the K split's copy of b's rows of N elements of es bytes: whole
 * 64-byte lines, then one more, and one more again should that be a multiple of 4 KiB (N * es
 * just under one), so that the copy's rows never share their page offset. */
static int64_t tl_mm_chunk_ld(int64_t N, int64_t es) {
  const int64_t ld = TL_CDIV(N * es, 64) * 64 + 64;
  return ld % 4096 ? ld : ld + 64;
}

/* The rows of the K split's partial products (elements): N rounded up to whole 64-byte lines,
 * then one line more, and one more again should that be a multiple of 4 KiB, so that the rows
 * of a partial never share their page offset. At N = 4096 the 8 rows of f32 were 16 KiB apart:
 * the 16 lines of an 8 x 32 block of accumulators then share two L1 sets, with b's lines beside
 * them (the bf16 walk over 8 rows read them back slower: a throwaway harness of the walk, 2
 * threads, bf16 8x4096x4096, 4 rounds, medians: 1.30 ms with rows 16 KiB apart, 1.21 with 64
 * bytes more). */
int64_t tl_mm_part_ld(int64_t N) { return tl_mm_chunk_ld(N, 4) / 4; }

/* The checks every 3-16-row K split shares (tl_mm_rows_split, tl_mm_chunk_k): M rows of a with
 * unit column stride, b's geometry (tl_mm_split_shape), K blocks for every thread (their size in
 * *bk) and at least 2 N blocks, a row-major kernel for a's dtype at the level, the M x N
 * accumulator rows in half the VMEM budget. */
static int tl_mm_rows_ok(const tl_ctx_info *info, const tl_mm_build *bd, const tl_tensor *a, const tl_tensor *b,
                         int64_t *bk) {
  const int64_t S = info->threads, M = bd->M, N = bd->N;
  const tl_dtype da = a->dtype;
  if (M <= TL_MM_STREAM_M || M > TL_MM_CHUNK_M || a->stride[a->ndim - 1] != 1 || !tl_mm_split_shape(info, bd, b) ||
      !tl_mm_split_blocks(bd->K, S, bk) || TL_CDIV(N, tl_mm_stream_bn(N, info->threads)) < 2)
    return 0;
  const int amx_rows = info->isa < TL_ISA_AMX || M < 16; /* 16 rows: AMX tiles at the amx level */
  const int unit = da == TL_BF16  ? info->isa >= TL_ISA_AVX512BF16 && amx_rows
                   : da == TL_F32 ? info->isa >= TL_ISA_AVX512 && M <= TL_MM_WALK_M /* the AVX-512 walk */
                                  : info->isa >= TL_ISA_AVX512VNNI && amx_rows;
  /* the accumulator rows within half the budget, else the N split: 16x11008x4096 (704 KiB of
   * rows) measured slower split, bf16 5.13 -> 6.50 ms with the chunks below (6 rounds, medians),
   * int8 even (2.93 -> 3.03); with the earlier whole-row chunks of 64 rows bf16 3.56 -> 3.71,
   * int8 2.27 -> 2.09 */
  return unit && M * N * 4 <= (int64_t)info->vmem_bytes / 2;
}

/* 1 when the K split's first kernel leaves M rows of a to the dot's walk (no chunks): bf16 and
 * f32 up to TL_MM_WALK_M rows, which is every row count tl_mm_rows_ok admits (TL_MM_CHUNK_M):
 * only int8 takes the chunks. */
static int tl_mm_walked(const tl_tensor *a, int64_t M) {
  return (a->dtype == TL_BF16 || a->dtype == TL_F32) && M <= TL_MM_WALK_M;
}

/* See matmul_impl.h. Walked (tl_mm_walked): the AVX512-BF16 / AVX-512 dot (tl_bf_walk,
 * tl_a5_walk) over the step's K block in place; 8-bit integers: tl_mm_chunk_k's chunks. */
int tl_mm_rows_split(const tl_ctx_info *info, const tl_mm_build *bd, const tl_tensor *a, const tl_tensor *b) {
  int64_t bk, nc;
  if (tl_mm_walked(a, bd->M)) return tl_mm_rows_ok(info, bd, a, b, &bk);
  return tl_mm_chunk_k(info, bd, a, b, &nc) > 0;
}

/* See matmul_impl.h. 3-16 rows of a against a row-major b from memory read it in place badly:
 * one thread's share of each row is a short run a row stride apart (each row its own page),
 * and at a stride of a multiple of 4 KiB the lines the kernel walks down a panel share their L1
 * and L2 sets (`tilec_bench_tile_dot`: bf16 16 rows with b in L2, 302 GFLOP/s at rows 8 KiB
 * apart against 510 at 8 KiB + 128 bytes). Split over K instead, each thread reads runs of its
 * own rows, copied a chunk at a time into rows off the alias. Measured on a Zen 5 VM (2
 * threads, `tilec bench gemm --dtype D --peers none`, the in-place N split against this, cold):
 * see docs/matmul.md "K split". The chunk: TL_MM_CHUNK_KB bytes of each column (int8 256 rows;
 * the K block when shorter) by a slice of the columns, N cut into slices of whole 64
 * columns, as equal as that allows (the last one shorter), of at most a TL_MM_CHUNK_DIV-th of
 * the VMEM budget per chunk (its rows' padding aside, tl_mm_chunk_ld): the dot keeps
 * each slice's accumulators over as many k as the chunk has, and the chunk, the next one being
 * prefetched beside it (matmul_body.c) and the slice's accumulator rows stay in the caches. The
 * dot that reads such a copy well: int8 on AVX512-VNNI (tl_q_rm; at the amx level up to 15
 * rows, which the AMX dot leaves to it). bf16 took these chunks too until 2026-11-28 and walks
 * its K block in place since (tl_mm_rows_split; 9-16 rows with the wide walk, also
 * 2026-11-28). f32 on AVX-512 measured no faster in chunks (16x4096x4096 2.5-2.6 ms either
 * way; 32-row chunks copied into 16-column tiles for the one-pass tile kernel: 3.9-4.1): 3-16
 * rows walk their K blocks in place since 2026-11-28, 17-31 keep the N split with its own walk
 * over b in place (tl_mm_run.sweep, matmul.c). */
int64_t tl_mm_chunk_k(const tl_ctx_info *info, const tl_mm_build *bd, const tl_tensor *a, const tl_tensor *b,
                      int64_t *nc) {
  const int64_t N = bd->N, es = (int64_t)tl_dtype_size(b->dtype);
  int64_t bk;
  if (tl_mm_walked(a, bd->M) || !tl_mm_rows_ok(info, bd, a, b, &bk)) return 0;
  const int64_t kc = TL_MIN(bk, TL_MM_CHUNK_KB / es); /* (bk: a multiple of 64, whole pairs / quads) */
  const int64_t widest = TL_MAX(64, (int64_t)info->vmem_bytes / TL_MM_CHUNK_DIV / (kc * es) / 64 * 64);
  const int64_t ns = TL_MIN(N, tl_mm_balanced(N, widest, 64));
  /* within half the budget (a small one: 64 columns may be more than the twelfth) */
  if (kc * tl_mm_chunk_ld(ns, es) > (int64_t)info->vmem_bytes / 2) return 0;
  *nc = ns;
  return kc;
}

/* Sets up the K split when it applies (else leaves split 0): b streamed (1-2 rows of a, no
 * batch; row-major; 3-16 rows where tl_mm_rows_split says so) with contiguous rows, so that each
 * thread reads one run of whole rows per K block rather than its share of every row (3-16 rows
 * in chunks: runs of a slice of its own rows, a chunk at a time, tl_mm_chunks; walked: whole
 * rows, as for 1-2). Measured
 * on 2 threads only: on a Zen 4 VM, for b
 * rows of 4 KiB of which each thread read 2 KiB, 10-27% faster (int8 1x4096x4096, 1x4096x11008,
 * 2x4096x8192; bf16 1x2048x4096, 2x2048x8192; f32 1x1024x8192, 2x1024x16384), for longer rows
 * slower without the walks' next-sweep prefetch (int8 1x2048x8192 0.85 -> 1.26 ms); on a Zen 5
 * VM, with that prefetch, faster for every row length (docs/matmul.md: f32 1x11008x4096 5.0 ->
 * 4.0 ms against the prefetch alone, bf16 2.76 -> 2.24, int8 1.44 -> 1.07). The K blocks
 * (tl_mm_split_blocks) come in a multiple of S, so every split has as many. */
void tl_mm_split_decide(const tl_ctx_info *info, tl_mm_build *bd, const tl_tensor *a, const tl_tensor *b) {
  const tl_mm_run *r = &bd->run;
  const int64_t S = info->threads, K = bd->K, N = bd->N;
  if (!r->stream || !tl_mm_split_shape(info, bd, b) || TL_CDIV(N, r->BN) < 2) return;
  int64_t bk = 0;
  const int64_t nb = tl_mm_split_blocks(K, S, &bk);
  if (nb < S) return;
  int64_t nc = 0;
  const int rows = bd->M > TL_MM_STREAM_M; /* 3-16 rows: tl_mm_rows_split said so (matmul.c) */
  const int64_t kc = rows ? tl_mm_chunk_k(info, bd, a, b, &nc) : 0;
  bd->split = (int)S;
  tl_mm_run *kr = &bd->ks_run;
  *kr = *r;
  kr->partial = 1, kr->sum = 0;
  kr->ia = 0, kr->ib = 1, kr->ic = 2, kr->iacc = kr->icvt = kr->itmp = kr->ibias = kr->isa = kr->isb = kr->ires = -1;
  kr->alpha = 1.0f, kr->beta = 0.0f, kr->act = TL_ACT_NONE;
  kr->BM = bd->M, kr->BN = N, kr->BK = bk;
  kr->chunk_k = kc, kr->chunk_n = nc, kr->chunk_ld = 0, kr->chunk_kall = K, kr->ichunk = -1;
  kr->walk = rows && kc == 0;
  const tl_dtype acc_dt = a->dtype == TL_I8 || a->dtype == TL_U8 ? TL_I32 : TL_F32;
  kr->c_dt = acc_dt, kr->int_out = acc_dt == TL_I32;
  snprintf(bd->ks_map[0], sizeof bd->ks_map[0], "s, q -> 0, 0, %lld*q + s", (long long)S);
  snprintf(bd->ks_map[1], sizeof bd->ks_map[1], "s, q -> 0, %lld*q + s, 0", (long long)S);
  snprintf(bd->ks_map[2], sizeof bd->ks_map[2], "s, q -> s, 0, 0");
  bd->ks_in[0] = bd->in[r->ia], bd->ks_in[0].block[2] = bk;
  bd->ks_in[1] = bd->in[r->ib], bd->ks_in[1].block[1] = bk, bd->ks_in[1].block[2] = N;
  bd->ks_in[0].block[0] = bd->ks_in[1].block[0] = 1, bd->ks_in[0].block[1] = bd->M;
  bd->ks_out[0] = (tl_blockspec){.ndim = 3, .block = {1, bd->M, N}, .out = TL_OUT_WRITE};
  bd->ks_tin[0] = bd->tin[r->ia], bd->ks_tin[1] = bd->tin[r->ib];
  const int64_t pshape[3] = {S, bd->M, N}, ld = tl_mm_part_ld(N);
  bd->ks_tout[0] = tl_tensor_make(NULL, acc_dt, 3, pshape);
  bd->ks_tout[0].stride[0] = bd->M * ld, bd->ks_tout[0].stride[1] = ld;
  bd->ks = (tl_kernel){.name = "matmul_ksplit", .body = tl_mm_body, .grid_ndim = 2, .grid = {S, nb / S},
                       .sem = {TL_PARALLEL, TL_ARBITRARY}, .n_in = 2, .n_out = 1, .flops = bd->k.flops};
  if (rows) {
    /* 3-16 rows: a (unit column stride, tl_mm_rows_split) and the partial rows are read and
     * accumulated in place, so the chunk (int8, bf16 past TL_MM_WALK_M rows) is the kernel's
     * only VMEM and the walks (bf16, f32) have none */
    bd->ks_in[0].stage = TL_STAGE_NEVER;
    bd->ks_out[0].stage = TL_STAGE_NEVER;
    /* the body owns the thread's prefetch queue (tl_mm_chunks queues each next chunk and drops
     * what a dot left of the last): no spec may queue the next step's blocks there (b streamed
     * never asks; said here so that it stays so) */
    bd->ks_in[0].prefetch = bd->ks_in[1].prefetch = 0;
  }
  if (kc > 0) { /* the chunk in VMEM */
    kr->chunk_ld = tl_mm_chunk_ld(nc, (int64_t)tl_dtype_size(b->dtype));
    kr->ichunk = 3;
    bd->ks_scr[0] = (tl_scratch){.dtype = TL_U8, .ndim = 2, .shape = {kc, kr->chunk_ld}};
    bd->ks.n_scratch = 1;
  }
}

/* See matmul_impl.h. */
void tl_mm_split_tin(const tl_mm_build *unsplit, const tl_tensor *tin, void *part, tl_tensor *out) {
  const tl_mm_run *r = &unsplit->run;
  int n = 0;
  for (int i = 0; i < unsplit->k.n_in; i++) {
    if (i == r->ib) continue;
    out[n] = tin[i];
    if (i == r->ia) { /* the partial products as the first kernel wrote them (tl_mm_part_ld) */
      out[n] = unsplit->ks_tout[0];
      out[n].data = part;
    }
    n++;
  }
}

/* See matmul_impl.h. */
void tl_mm_split_sum(tl_mm_build *bd, void *part) {
  tl_mm_run *r = &bd->run;
  tl_mm_split_tin(bd, bd->tin, part, bd->tin);
  bd->in[r->ia] = (tl_blockspec){.ndim = 3, .block = {bd->split, r->BM, r->BN}, .map = "z, j, i, k -> 0, i, j",
                                 .stage = TL_STAGE_NEVER};
  for (int i = r->ib; i + 1 < bd->k.n_in; i++) bd->in[i] = bd->in[i + 1];
  int *idx[] = {&r->ibias, &r->isa, &r->isb, &r->ires, &r->ic, &r->iacc, &r->icvt, &r->itmp};
  for (size_t i = 0; i < sizeof idx / sizeof idx[0]; i++)
    if (*idx[i] > r->ib) (*idx[i])--;
  r->ib = -1, r->sum = bd->split;
  bd->k.n_in--;
  bd->k.grid[3] = 1;
  bd->k.name = "matmul_ksum";
  tl_mm_build_fixup(bd, r);
}
