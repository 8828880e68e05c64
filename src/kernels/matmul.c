/* matmul.c — tl_matmul: argument checks, the block-size config, the plan cache and the outer batch
 * loop. The kernel itself (grid, specs, body) is described in matmul_impl.h; the body and its
 * epilogue are in matmul_body.c, packing in matmul_pack.c.
 *
 * Invariants: every refusal happens before anything runs (c untouched) and names the operand,
 * the dims and the numbers; a plan is keyed by everything that shapes it (shapes, strides,
 * dtypes, layouts, which options are present, act, beta != 0), never by data pointers or the
 * values of alpha and beta, which the body reads from the run struct set before each run. The
 * cache holds TL_MM_CACHE plans per context, least recently used evicted; the context frees the
 * plans itself (before slots), so the slot's free_state only frees the cache memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matmul_impl.h"
#include "../runtime/plan_impl.h"
#include "../tune/tune_impl.h"

#define TL_MM_CACHE 32

/* ---- argument checks ---- */

/* 1 for the 8-bit integer input dtypes, 1 for the floating ones. */
static int tl_mm_is_int8(tl_dtype d) { return d == TL_I8 || d == TL_U8; }
static int tl_mm_is_float(tl_dtype d) { return d == TL_F32 || d == TL_BF16; }

/* Checks one optional vector operand ([len], dtype in the allowed set). */
static tl_status tl_mm_check_vec(tl_ctx *ctx, const tl_tensor *t, const char *name, int64_t len, const char *lenname,
                                 int allow_f32, int allow_bf16, int allow_i32) {
  char msg[256], sh[96];
  tl_status s = tl_tensor_check(t, name, msg, sizeof msg);
  if (s != TL_OK) return tl_ctx_fail(ctx, s, "tl_matmul: %s", msg);
  if (t->layout.tiled) return tl_ctx_fail(ctx, TL_ERR_INVALID, "tl_matmul: %s is tiled; it must be row-major", name);
  if (t->ndim != 1 || t->shape[0] != len)
    return tl_ctx_fail(ctx, TL_ERR_SHAPE, "tl_matmul: %s is %s, expected [%s] = [%lld]", name,
                       tl_shape_str(t, sh, sizeof sh), lenname, (long long)len);
  if (!((allow_f32 && t->dtype == TL_F32) || (allow_bf16 && t->dtype == TL_BF16) || (allow_i32 && t->dtype == TL_I32)))
    return tl_ctx_fail(ctx, TL_ERR_DTYPE, "tl_matmul: %s is %s; allowed here: %s%s%s", name, tl_dtype_name(t->dtype),
                       allow_f32 ? "f32 " : "", allow_bf16 ? "bf16 " : "", allow_i32 ? "i32" : "");
  if (!t->data && len > 0) return tl_ctx_fail(ctx, TL_ERR_INVALID, "tl_matmul: %s has NULL data", name);
  return TL_OK;
}

/* Checks a, b, c and the options; TL_OK or a refusal with the message in ctx. */
static tl_status tl_mm_check(tl_ctx *ctx, const tl_tensor *a, const tl_tensor *b, const tl_tensor *c,
                             const tl_matmul_opts *o) {
  const tl_tensor *t3[3] = {a, b, c};
  const char *nm[3] = {"a", "b", "c"};
  char msg[256], sa[96], sb[96], sc[96];
  for (int i = 0; i < 3; i++) {
    if (!t3[i]) return tl_ctx_fail(ctx, TL_ERR_INVALID, "tl_matmul: %s is NULL", nm[i]);
    tl_status s = tl_tensor_check(t3[i], nm[i], msg, sizeof msg);
    if (s != TL_OK) return tl_ctx_fail(ctx, s, "tl_matmul: %s", msg);
    if (t3[i]->ndim < 2)
      return tl_ctx_fail(ctx, TL_ERR_SHAPE, "tl_matmul: %s is %s, needs at least 2 dims", nm[i],
                         tl_shape_str(t3[i], sa, sizeof sa));
    if (!t3[i]->data && tl_tensor_numel(t3[i]) > 0)
      return tl_ctx_fail(ctx, TL_ERR_INVALID, "tl_matmul: %s has NULL data", nm[i]);
  }
  if (a->layout.tiled) return tl_ctx_fail(ctx, TL_ERR_INVALID, "tl_matmul: a is tiled; a must be row-major");
  if (c->layout.tiled) return tl_ctx_fail(ctx, TL_ERR_INVALID, "tl_matmul: c is tiled; c must be row-major");
  const int64_t M = a->shape[a->ndim - 2], K = a->shape[a->ndim - 1];
  const int64_t Kb = b->shape[b->ndim - 2], N = b->shape[b->ndim - 1];
  /* (every call comes here: the shapes are formatted in the refusals' arguments only; formatted
   * up front, their nine snprintf calls were a tenth of a cached 64x64x64 int8 call under perf) */
  if (K != Kb)
    return tl_ctx_fail(ctx, TL_ERR_SHAPE, "tl_matmul: K mismatch: a is %s (K = %lld) but b is %s (K = %lld)",
                       tl_shape_str(a, sa, sizeof sa), (long long)K, tl_shape_str(b, sb, sizeof sb), (long long)Kb);
  if (c->shape[c->ndim - 2] != M || c->shape[c->ndim - 1] != N)
    return tl_ctx_fail(ctx, TL_ERR_SHAPE, "tl_matmul: c is %s, expected [..., M = %lld, N = %lld] for a %s @ b %s",
                       tl_shape_str(c, sc, sizeof sc), (long long)M, (long long)N, tl_shape_str(a, sa, sizeof sa),
                       tl_shape_str(b, sb, sizeof sb));
  /* batch dims: a's and b's broadcast (size 1, or missing) against c's */
  const int nbc = c->ndim - 2;
  for (int i = 0; i < 2; i++) {
    const tl_tensor *t = t3[i];
    const int nbt = t->ndim - 2;
    if (nbt > nbc)
      return tl_ctx_fail(ctx, TL_ERR_SHAPE, "tl_matmul: batch mismatch: %s is %s with %d batch dims, c is %s with %d", nm[i],
                         tl_shape_str(t, sa, sizeof sa), nbt, tl_shape_str(c, sc, sizeof sc), nbc);
    for (int d = 0; d < nbt; d++) {
      int64_t ts = t->shape[d], cs = c->shape[nbc - nbt + d];
      if (ts != cs && ts != 1)
        return tl_ctx_fail(ctx, TL_ERR_SHAPE, "tl_matmul: batch mismatch: %s is %s, c is %s: %s's dim %d is %lld, c's is %lld (must be equal or 1)",
                           nm[i], tl_shape_str(t, sa, sizeof sa), tl_shape_str(c, sc, sizeof sc), nm[i], d, (long long)ts,
                           (long long)cs);
    }
  }
  /* dtypes */
  const tl_dtype da = a->dtype, db = b->dtype, dc = c->dtype;
  const int has_scales = o->scale_a || o->scale_b;
  if (tl_mm_is_float(da)) {
    if (db != da || !tl_mm_is_float(dc))
      return tl_ctx_fail(ctx, TL_ERR_DTYPE, "tl_matmul: dtypes a %s, b %s, c %s: floating a needs b of the same dtype and c f32 or bf16",
                         tl_dtype_name(da), tl_dtype_name(db), tl_dtype_name(dc));
    if (has_scales)
      return tl_ctx_fail(ctx, TL_ERR_INVALID, "tl_matmul: scale_a / scale_b are for int8 inputs only (a is %s)", tl_dtype_name(da));
  } else if (tl_mm_is_int8(da)) {
    if (db != TL_I8 || (dc != TL_I32 && dc != TL_F32))
      return tl_ctx_fail(ctx, TL_ERR_DTYPE, "tl_matmul: dtypes a %s, b %s, c %s: int8 a (u8 or i8) needs b i8 and c i32 or f32",
                         tl_dtype_name(da), tl_dtype_name(db), tl_dtype_name(dc));
    if (has_scales && dc != TL_F32)
      return tl_ctx_fail(ctx, TL_ERR_DTYPE, "tl_matmul: scale_a / scale_b need an f32 c (c is %s)", tl_dtype_name(dc));
  } else {
    return tl_ctx_fail(ctx, TL_ERR_DTYPE, "tl_matmul: a is %s; supported: f32, bf16, u8, i8", tl_dtype_name(da));
  }
  /* a tiled b must be what tl_matmul_pack_b makes (or tl_matmul's own packing: longer tile rows) */
  if (b->layout.tiled) {
    const tl_layout pl = tl_mm_pack_layout(db, K, 0);
    if ((db == TL_F32 ? b->layout.vnni > 1 : b->layout.vnni != pl.vnni) || b->layout.tile_c != 16 ||
        (b->layout.tile_r != pl.tile_r && b->layout.tile_r != tl_mm_pack_tile_r(db, K, 1)))
      return tl_ctx_fail(ctx, TL_ERR_INVALID,
                         "tl_matmul: b is tiled %ux%u vnni %u; a tiled b must come from tl_matmul_pack_b (%s: %ux16 vnni %u)",
                         b->layout.tile_r, b->layout.tile_c, b->layout.vnni, tl_dtype_name(db), pl.tile_r, pl.vnni);
  }
  if ((unsigned)o->act > TL_ACT_SILU) return tl_ctx_fail(ctx, TL_ERR_INVALID, "tl_matmul: act is %d, unknown", (int)o->act);
  const int int_out = dc == TL_I32;
  if (o->bias) {
    tl_status s = tl_mm_check_vec(ctx, o->bias, "bias", N, "N", 1, !int_out, int_out);
    if (s != TL_OK) return s;
  }
  if (o->scale_a) {
    tl_status s = tl_mm_check_vec(ctx, o->scale_a, "scale_a", M, "M", 1, 0, 0);
    if (s != TL_OK) return s;
  }
  if (o->scale_b) {
    tl_status s = tl_mm_check_vec(ctx, o->scale_b, "scale_b", N, "N", 1, 0, 0);
    if (s != TL_OK) return s;
  }
  if (o->residual) {
    const tl_tensor *r = o->residual;
    tl_status s = tl_tensor_check(r, "residual", msg, sizeof msg);
    if (s != TL_OK) return tl_ctx_fail(ctx, s, "tl_matmul: %s", msg);
    if (r->layout.tiled) return tl_ctx_fail(ctx, TL_ERR_INVALID, "tl_matmul: residual is tiled; it must be row-major");
    int same = r->ndim == c->ndim;
    for (int d = 0; same && d < c->ndim; d++) same = r->shape[d] == c->shape[d];
    if (!same)
      return tl_ctx_fail(ctx, TL_ERR_SHAPE, "tl_matmul: residual is %s, expected c's shape %s", tl_shape_str(r, sa, sizeof sa),
                         tl_shape_str(c, sc, sizeof sc));
    int ok = int_out ? (r->dtype == TL_I32 || r->dtype == TL_F32) : tl_mm_is_float(r->dtype);
    if (!ok)
      return tl_ctx_fail(ctx, TL_ERR_DTYPE, "tl_matmul: residual is %s; with c %s it must be %s", tl_dtype_name(r->dtype),
                         tl_dtype_name(dc), int_out ? "i32 or f32" : "f32 or bf16");
    if (!r->data && tl_tensor_numel(r) > 0) return tl_ctx_fail(ctx, TL_ERR_INVALID, "tl_matmul: residual has NULL data");
  }
  return TL_OK;
}

/* ---- config ---- */

/* The K block: K split into ceil(K / TL_MM_BK_<dtype>) blocks of about equal size, rounded up to
 * 16 (f32) / 32 (bf16) / 64 (int8), at least that and at most TL_MM_BK_<dtype> (2064 rows of
 * f32: five blocks of 416, not four of 512 and a last one of 16, which would load and store the
 * accumulator for 16 products); with long_k, at most TL_MM_LONG_K times that (bf16, int8). */
int64_t tl_mm_pack_tile_r(tl_dtype dt, int64_t K, int long_k) {
  const int64_t g = tl_mm_kgroup(dt);
  int64_t cap = dt == TL_F32 ? TL_MM_BK_F32 : dt == TL_BF16 ? TL_MM_BK_BF16 : TL_MM_BK_I8;
  if (long_k && dt != TL_F32) cap *= TL_MM_LONG_K;
  if (K <= g) return g;
  const int64_t nb = (K + cap - 1) / cap, r = ((K + nb - 1) / nb + g - 1) / g * g;
  return r > cap ? cap : r;
}

/* See matmul_impl.h. */
tl_layout tl_mm_pack_layout(tl_dtype dt, int64_t K, int long_k) {
  return (tl_layout){.tiled = 1, .vnni = (uint8_t)tl_mm_vnni(dt),
                     .tile_r = (uint16_t)tl_mm_pack_tile_r(dt, K, long_k), .tile_c = 16};
}


/* See matmul_impl.h. */
double tl_mm_balance(int64_t inner, int64_t M, int64_t N, int64_t BM, int64_t BN, int T) {
  const int64_t gi = TL_CDIV(M, BM), gj = TL_CDIV(N, BN), n = inner * gi * gj;
  const double total = (double)M * (double)N * (double)inner;
  double worst = 0;
  for (int w = 0; w < T; w++) {
    double work = 0;
    for (int64_t p = n * w / T; p < n * (w + 1) / T; p++) {
      const int64_t i = p % gi, j = (p / gi) % gj;
      work += (double)TL_MIN(BM, M - i * BM) * (double)TL_MIN(BN, N - j * BN);
    }
    if (work > worst) worst = work;
  }
  return worst > 0 ? total / T / worst : 1;
}

/* Picks BM, BN, BK: balanced blocks of at most 128 x 256 (M x N) and one K block of up to
 * TL_MM_BK_* rows; with fewer parallel blocks than 2 x threads N and then M blocks shrink
 * (skinny M gets N blocks); then the blocks shrink until the working set fits 90% of the VMEM
 * budget (K first, unless b is packed, whose K block is fixed). packed: 0, or a packed b's tile
 * rows (its K block). */
static void tl_mm_config(const tl_ctx_info *info, tl_mm_build *bd, int64_t inner, tl_dtype da, tl_dtype dc, int tiled_b,
                         int64_t packed, int nscratch, int has_res) {
  const int64_t M = bd->M, N = bd->N, K = bd->K;
  const int64_t ea = (int64_t)tl_dtype_size(da), ec = (int64_t)tl_dtype_size(dc);
  const int64_t gk = da == TL_F32 ? 8 : da == TL_BF16 ? 32 : 64;
  /* f32 b not packed: K itself up to TL_MM_BK_F32; past it equal blocks, not rounded to 16 when a
   * and b are read in place at every edge (K = 1000: two of 500, unless the VMEM fit below
   * halves them, as it does with 128 x 256 blocks: it counts a and b although they are not
   * staged; counting only staged blocks measured no faster) */
  int64_t BK = packed ? packed : tl_mm_pack_tile_r(da, K, 0);
  if (da == TL_F32 && !packed && K <= TL_MM_BK_F32) BK = K;
  else if (bd->run.edges && !packed) BK = TL_CDIV(K, TL_CDIV(K, TL_MM_BK_F32));
  /* N blocks: multiples of the 32-column register block, but never wider than N rounded up to
   * a 16-column tile (N = 16 would otherwise stage and compute 32 columns) */
  /* f32 at the AVX2 levels (the 6x16 kernel, docs/kernels.md), from TL_MM_BM_MAX rows: M blocks
   * of at most TL_MM_BM_A2 rows in whole 6-row register blocks (128 rows left a 2-row block), and
   * a packed b in N blocks of at most TL_MM_BN_PACKED_A2 (a 512 x 512 block of b is 1 MiB, the
   * whole L2 of the cores here). `tilec tune matmul --isa avx2 --threads 2` chose N blocks of
   * 128-256 on every large shape (M blocks 96-256: 4096^3 192 x 128, 5% over the heuristic;
   * 2048x4096x11008 256 x 256, 7%; 2048x4096x4096 96 x 256, 6%). `TILEC_ISA=avx2 tilec bench gemm
   * --threads 2 --dtype f32 --peers none`, 2 rounds: with 96 x 256 blocks 4096^3 584-594 -> 548
   * ms, 2048x4096x4096 285 -> 274, 2048x4096x11008 803 -> 816-828 (slower); M blocks of 192
   * against 96, builds alternating: 2048x4096x11008 815-834 -> 769-791, 2048x4096x4096, 2048^3
   * and 1000^3 within noise. bf16 and int8 at these levels measured slower with 96 x 256 (int8
   * 128x4096x11008 17.3 -> 23.0 ms plain); skinny pre-packed f32 products keep the wider N
   * blocks (16x4096x11008 7.0-7.2 ms against 7.2-7.3). */
  const int a2 = da == TL_F32 && info->isa >= TL_ISA_AVX2 && info->isa < TL_ISA_AVX512 && M > TL_MM_BM_MAX;
  const int64_t bn_cap = packed ? (a2 ? TL_MM_BN_PACKED_A2 : TL_MM_BN_PACKED) : 256;
  int64_t BN = (!tiled_b && N <= 256) ? N : TL_MIN(tl_mm_balanced(N, bn_cap, 32), tl_mm_round_up(N, 16));
  int64_t BM = M <= TL_MM_BM_MAX ? M : a2 ? tl_mm_balanced(M, TL_MM_BM_A2, 6) : tl_mm_balanced(M, TL_MM_BM_MAX, 8);
  /* bf16 / int8 b read by the row-major kernels (3-16 rows of a): blocks of up to 256 x 512
   * (K x N), each row of b a run of 1 KiB (bf16) / 512 bytes (int8). With b's rows a multiple of
   * 4 KiB apart they share their page offset, so line j of every row competes for the same 32 of
   * the L2's 2048 sets (the index bits above the offset come from the physical page): at most
   * 256 rows stay in L2, fewer in practice, and a block of 512 (bf16's VNNI K block) or 1024
   * rows (int8's), with the next one prefetched beside it, does not. The tuner's choice on every
   * skinny shape it was given (`tilec tune matmul S --dtype int8`: 4, 8, 16 x 4096 x 4096 and
   * 16 x 4096 x 11008 / 16 x 11008 x 4096, 5-38% over the heuristic; `tilec tune --compare
   * matmul 16x4096x4096 --dtype bf16`: 6%). `tilec bench gemm --threads 2 --dtype D --peers
   * none`, the VNNI K block x 256 against 256 x 512, builds alternating, 5-8 rounds, plain
   * medians: int8 4x4096x4096 0.76 -> 0.64 ms, 16 rows 1.22 -> 1.14, 16x4096x11008 3.10 ->
   * 2.88, 4x1024x1024 71 -> 49 us; bf16
   * 3x4096x4096 1.21 -> 1.15, 8 rows 1.47 -> 1.38, 16 rows 2.17 -> 1.96, 16x4096x11008 5.60 ->
   * 5.20, 12x1000x1000 171 -> 139 us; 16x11008x4096 within noise in both */
  if (bd->run.rm && !bd->run.stream && M > 2) {
    BK = tl_mm_balanced(K, 256, gk);
    BN = TL_MIN(tl_mm_balanced(N, 512, 32), tl_mm_round_up(N, 16));
  }
  if (BM < 1) BM = 1;
  if (BN < 1) BN = 1;
  if (bd->run.stream) { /* b read in place as long rows: a wide N block per thread, long K blocks */
    BN = tl_mm_stream_bn(N, info->threads);
    BK = K <= TL_MM_BK_STREAM ? K : TL_MM_BK_STREAM;
    /* b is never staged; a, c, the residual and the scratch blocks are a few rows each */
    const int64_t budget = (int64_t)(info->vmem_bytes * 9 / 10);
    for (;;) { /* a tiny budget: K blocks down to 256, then N blocks, then K again */
      if (BM * BK * ea + BM * BN * (ec * (1 + has_res) + nscratch * 4) + 2 * BN * 4 + BM * 4 <= budget) break;
      if (BK > 256) BK = tl_mm_round_up(BK / 2, gk);
      else if (BN > 16) BN = tl_mm_round_up(BN / 2, 16);
      else if (BK > gk) BK = tl_mm_round_up(BK / 2, gk);
      else break; /* the plan reports TL_ERR_VMEM with the numbers */
    }
    bd->run.BM = BM, bd->run.BN = BN, bd->run.BK = K == 0 ? 0 : BK;
    return;
  }
  const int64_t want = 2 * (int64_t)info->threads;
  if (bd->run.sweep) { /* b read in place over the whole of K, N blocks of the dot's window */
    /* blocks of at most TL_MM_SWEEP_BN, their count (with the batch's) rounded up to a multiple
     * of the threads where N's 32-column units allow: each thread one run of wide blocks (f32
     * 5x1000x8192, 2 threads: 2 blocks of 512 0.85 ms, 4 of 256 1.01). The build takes the sweep
     * only with at least one 32-column block per thread (M is never split here) */
    const int64_t T = TL_MAX(1, (int64_t)info->threads);
    const int64_t nb = TL_CDIV(TL_CDIV(inner * TL_CDIV(N, TL_MM_SWEEP_BN), T) * T, inner);
    BN = TL_MIN(tl_mm_round_up(TL_CDIV(N, nb), 32), tl_mm_round_up(N, 16));
    BK = K;
    /* a and b are never staged; c, the residual and the scratch blocks are M rows of BN */
    const int64_t budget = (int64_t)(info->vmem_bytes * 9 / 10);
    while (BN > 16 && BM * BN * (ec * (1 + has_res) + nscratch * 4) + 2 * BN * 4 + BM * 4 > budget)
      BN = tl_mm_round_up(BN / 2, 16);
    bd->run.BM = BM, bd->run.BN = BN, bd->run.BK = BK;
    return;
  }
  while (info->threads > 1 && inner * TL_CDIV(M, BM) * TL_CDIV(N, BN) < want) {
    if (BN > 32 && N > 32) BN = tl_mm_round_up(BN / 2, 16);
    else if (BM > 16) BM = tl_mm_round_up(BM / 2, 8);
    else break;
  }
  /* the threads' shares: each takes a contiguous run of the parallel blocks, so a narrow last N
   * block can leave one with more work (f32 4097^3, 2 threads, BN 480: the busier thread had 5%
   * more than the mean; 416: 1.5%). Of the N blocks from BN down to BN / 2 in steps of 32, the
   * widest within 0.5% of the best balance (only with few enough blocks to count), from 256
   * rows of a: with fewer the product streams b, and narrower blocks read it in shorter runs
   * (f32 16x11008x4096, BN 256 -> 128: 9% slower; 128x11008x4096 2.5%) */
  if (info->threads > 1 && M >= 256 && BN % 32 == 0 && BN > 32 && inner * TL_CDIV(M, BM) * TL_CDIV(N, BN) <= ((int64_t)1 << 16)) {
    double best = 0, bal[16];
    int nc = 0;
    for (int64_t b = BN; b >= TL_MAX(32, BN / 2) && nc < 16; b -= 32, nc++)
      bal[nc] = tl_mm_balance(inner, M, N, BM, b, info->threads), best = TL_MAX(best, bal[nc]);
    for (int c = 0; c < nc; c++)
      if (bal[c] >= best - 0.005) {
        BN -= 32 * c;
        break;
      }
  }
  const int64_t budget = (int64_t)(info->vmem_bytes * 9 / 10);
  for (;;) {
    /* a packed b is read in place panel by panel: two 32-column panels of it (the one computing,
     * the next one prefetched) share L2 with the a and c blocks */
    const int64_t bcols = packed ? TL_MIN(BN, 64) : BN;
    int64_t need = BM * BK * ea + BK * bcols * ea + BM * BN * ec * (1 + has_res) + nscratch * BM * BN * 4 + 2 * BN * 4 + BM * 4;
    if (need <= budget) break;
    if (!packed && BK > gk * 2 && BK > 64) BK = tl_mm_round_up(BK / 2, gk);
    else if (BN > 16) BN = tl_mm_round_up(BN / 2, 16);
    else if (BM > 8) BM = tl_mm_round_up(BM / 2, 8);
    else break; /* the plan reports TL_ERR_VMEM with the numbers */
  }
  bd->run.BM = BM, bd->run.BN = BN, bd->run.BK = K == 0 ? 0 : BK;
}

/* ---- the build ---- */

/* Byte strides of a's or b's batch dims against c's nbc batch dims (0 where broadcast). A
 * packed (tiled) b's batch dims are contiguous matrices of padded tiles. */
static void tl_mm_batch_strides(const tl_tensor *t, int nbc, int64_t *out) {
  const int nbt = t->ndim - 2;
  const int64_t es = (int64_t)tl_dtype_size(t->dtype);
  int64_t tiled_stride = 0;
  if (t->layout.tiled) {
    const int64_t R = t->shape[t->ndim - 2], C = t->shape[t->ndim - 1];
    tiled_stride = TL_CDIV(R, t->layout.tile_r) * t->layout.tile_r * TL_CDIV(C, t->layout.tile_c) * t->layout.tile_c;
  }
  for (int d = nbc - 1, e = nbt - 1; d >= 0; d--, e--) {
    if (e < 0 || t->shape[e] == 1) out[d] = 0;
    else out[d] = (t->layout.tiled ? tiled_stride : t->stride[e]) * es;
    if (e >= 0 && t->layout.tiled) tiled_stride *= t->shape[e];
  }
}

/* A 3-D plan tensor [inner, R, C] over t's last two dims with the inner batch byte stride. */
static tl_tensor tl_mm_view3(const tl_tensor *t, int64_t inner, int64_t inner_stride_bytes) {
  tl_tensor v;
  memset(&v, 0, sizeof v);
  v.data = t->data, v.dtype = t->dtype, v.ndim = 3;
  v.shape[0] = inner, v.shape[1] = t->shape[t->ndim - 2], v.shape[2] = t->shape[t->ndim - 1];
  v.stride[0] = inner_stride_bytes / (int64_t)tl_dtype_size(t->dtype);
  v.stride[1] = t->stride[t->ndim - 2], v.stride[2] = t->stride[t->ndim - 1];
  return v;
}

/* See matmul_impl.h. */
tl_status tl_mm_prepare(tl_ctx *ctx, const tl_tensor *a, const tl_tensor *b, const tl_tensor *c, const tl_matmul_opts *o,
                        tl_mm_build *bd) {
  return tl_mm_prepare_cfg(ctx, a, b, c, o, NULL, bd);
}

/* See matmul_impl.h: checks, then batch merging, config (cfg overrides the heuristic's), specs,
 * scratch and the kernel. */
tl_status tl_mm_prepare_cfg(tl_ctx *ctx, const tl_tensor *a, const tl_tensor *b, const tl_tensor *c,
                            const tl_matmul_opts *o, const int64_t *cfg, tl_mm_build *bd) {
  tl_status s = tl_mm_check(ctx, a, b, c, o);
  if (s != TL_OK) return s;
  tl_ctx_info info;
  tl_ctx_info_get(ctx, &info);
  memset(bd, 0, sizeof *bd);
  const int nbc = c->ndim - 2;
  bd->M = a->shape[a->ndim - 2], bd->K = a->shape[a->ndim - 1], bd->N = b->shape[b->ndim - 1];
  /* batch dims, merged where a, b, c and the residual all allow it, innermost first */
  int64_t st[4][TL_MAX_DIMS] = {{0}};
  tl_mm_batch_strides(a, nbc, st[0]);
  tl_mm_batch_strides(b, nbc, st[1]);
  for (int d = 0; d < nbc; d++) st[2][d] = c->stride[d] * (int64_t)tl_dtype_size(c->dtype);
  if (o->residual)
    for (int d = 0; d < nbc; d++) st[3][d] = o->residual->stride[d] * (int64_t)tl_dtype_size(o->residual->dtype);
  int nm = 0;
  int64_t msz[TL_MAX_DIMS], mst[4][TL_MAX_DIMS];
  bd->batch = 1;
  for (int d = nbc - 1; d >= 0; d--) {
    bd->batch *= c->shape[d];
    if (c->shape[d] == 1) continue;
    int merge = nm > 0;
    for (int x = 0; x < 4 && merge; x++) merge = st[x][d] == mst[x][nm - 1] * msz[nm - 1];
    if (merge) {
      msz[nm - 1] *= c->shape[d];
    } else {
      msz[nm] = c->shape[d];
      for (int x = 0; x < 4; x++) mst[x][nm] = st[x][d];
      nm++;
    }
  }
  const int64_t inner = nm ? msz[0] : 1;
  int64_t istr[4] = {0, 0, 0, 0};
  for (int x = 0; x < 4 && nm; x++) istr[x] = mst[x][0];
  bd->n_outer = nm > 1 ? nm - 1 : 0;
  for (int i = 0; i < bd->n_outer; i++) {
    bd->outer_shape[i] = msz[nm - 1 - i]; /* outermost first */
    for (int x = 0; x < 4; x++) bd->outer_stride[x][i] = mst[x][nm - 1 - i];
  }
  /* the run struct */
  tl_mm_run *r = &bd->run;
  const tl_dtype da = a->dtype, dc = c->dtype;
  const int int8 = tl_mm_is_int8(da), beta_nz = o->beta != 0.0f;
  r->alpha = o->alpha, r->beta = o->beta, r->act = o->act, r->c_dt = dc, r->int_out = dc == TL_I32;
  r->ia = r->ib = r->ibias = r->isa = r->isb = r->ires = r->ic = r->iacc = r->icvt = r->itmp = -1;
  r->packed = b->layout.tiled;
  const tl_dtype acc_dt = int8 ? TL_I32 : TL_F32;
  const int acc_in_c = dc == acc_dt && !beta_nz;
  const int cvt = int8 && dc == TL_F32 && beta_nz;
  const int tmp = beta_nz && !r->int_out;
  const int nscr = !acc_in_c + cvt + tmp;
  const int tiled_b = da != TL_F32 || r->packed;
  /* a few rows of a (TL_MM_STREAM_M) against a row-major b with unit column stride, b larger
   * than half the L3 (f32: a cached b is read faster in panels; bf16 / int8: below): the dot
   * streams b's rows in place (its streaming walk, taken for b blocks beyond 1 MiB), never
   * staged; measured f32 1x4096x4096 (64 MiB) 3.2 -> 1.9 ms */
  {
    const int64_t l3 = tl_kernels_l3_bytes(&info);
    /* up to TL_MM_STREAM_M rows, where carrying the accumulators through c between chunks of
     * rows of b costs little (at 3-4 rows: int8 slower; f32 2x slower than 32-column panels,
     * 4x4096x4096 3.3-4.7 -> 1.5-1.8 ms) */
    /* bf16 (1-2 rows) and int8 (1 row) stream b from an eighth of the L3 (CPUID's: 32 MiB here,
     * 18.6 measured): their walk beat the panels from there warm too. A throwaway harness, 2
     * threads, 5 rounds, l3 / 2 against l3 / 8, cold / warm medians: bf16 1x2048x2048 (8 MiB)
     * 0.45 -> 0.31 / 0.16 -> 0.14 ms, 1x4096x2048 1.26 -> 0.60 / 0.66 -> 0.27, 2x4096x2048 1.03
     * -> 0.63 / 0.51 -> 0.30; int8 1x4096x2048 0.52 -> 0.36 / 0.21 -> 0.22, 1x4096x4096 (16 MiB)
     * 0.95 -> 0.74 / 0.66 -> 0.34. int8 2 rows: cold faster, warm slower (2x4096x2048 0.49 ->
     * 0.42 / 0.16 -> 0.21), so l3 / 2 as f32 — but where the walk splits K (b's rows 4 KiB,
     * tl_mm_split_decide), which made it faster: 2x4096x1200 / 2048 / 3072, l3 / 2 against l3 /
     * 8, 5 rounds, cold 0.289 -> 0.205, 0.426 -> 0.325, 0.643 -> 0.494 ms, warm (7 rounds)
     * 0.118 -> 0.111, 0.233 -> 0.183, 0.439 -> 0.313; f32 one row so too (1x1024x2048 / 3072
     * cold 0.307 -> 0.259, 0.446 -> 0.388, warm 0.118 -> 0.112, 0.211 -> 0.162; two f32 rows
     * even: 0.284 -> 0.299, 0.440 -> 0.436). `tilec bench gemm --warm --threads 2 --peers
     * none`, builds alternating, 5 rounds: int8 1x4096x4096 0.65 -> 0.38 ms, bf16 1x4096x2048
     * 0.60 -> 0.27 (docs/matmul.md). Since the walks prefetch their next sweep and the K split
     * takes every b with contiguous rows (2026-11-26, measured on a Zen 5 VM, 2 threads,
     * environment toggles in one build, 3 rounds, cold / warm), such a b streams from a
     * sixteenth of the L3, 1 or 2 rows, any dtype: f32 2x1024x3072 0.369 -> 0.258 / 0.181 ->
     * 0.092 ms against l3 / 2, 1x1024x1024 (4 MiB) 0.129 -> 0.094 / 0.055 -> 0.038 against l3 /
     * 8, bf16 1x2048x1024 0.161 -> 0.094 / 0.069 -> 0.061, int8 1x2048x2048 0.173 -> 0.090 /
     * 0.048 -> 0.060 (warm slower there, as were two rows of int8 2x2048x2048, 0.051 -> 0.067,
     * and bf16 2x2048x1024, 0.064 -> 0.083; cold is the case the size suggests); from l3 / 32 slower both
     * ways (f32 1x512x1024: 0.052 -> 0.061 / 0.010 -> 0.018) */
    const int split_shape = tl_mm_split_shape(&info, bd, b);
    const int eighth = da == TL_BF16 || (da != TL_F32 && bd->M == 1);
    /* (f32 with 3-16 rows, walked on the K split since 2026-11-28, from where its sweep took b:
     * past half the L3; nearer the cache, in the panels as before, unmeasured walked) */
    const int64_t lim = split_shape && !(da == TL_F32 && bd->M > TL_MM_STREAM_M) ? l3 / 16 : eighth ? l3 / 8 : l3 / 2;
    /* 3-16 rows where the K split will take them (tl_mm_rows_split: bf16 and f32 walked in
     * place, int8 copied in chunks; a tuner's candidate or a tuned config never splits, so not
     * with cfg) */
    const int rows = bd->M <= TL_MM_STREAM_M || (!cfg && !r->packed && tl_mm_rows_split(&info, bd, a, b));
    r->stream = !r->packed && rows && b->stride[b->ndim - 1] == 1 && bd->K > 0 &&
                bd->K * bd->N * (int64_t)tl_dtype_size(b->dtype) > lim; /* b comes from memory */
  }
  /* bf16 / int8 a at the edges of a packed b: in place too (the AVX512-BF16 / VNNI dot reads
   * a's k tail element by element): 1000^3 staged every a block, its one K block of 1000 rows
   * padded to 1024. At the amx level only with K in whole pairs / quads, which the AMX dot's K
   * edge needs (else a is staged, zero-padded): until 2026-11-26 never there, the AMX dot then
   * taking whole tiles only (emulated amx level, multiply-adds on AMX, 1000^3 104% -> 100.8%;
   * 1023^3 staged as before, 100.3%; it would be 50% bf16 / 0% int8 in place) */
  r->edges = !r->stream && a->stride[a->ndim - 1] == 1 &&
             (da == TL_F32 ? r->packed || b->stride[b->ndim - 1] == 1
                           : r->packed && (info.isa < TL_ISA_AMX || bd->K % tl_mm_vnni(da) == 0));
  /* f32, 3-31 rows against a row-major b from memory (past half the L3) read in place (3-16 rows
   * at the AVX-512 levels on 2+ threads: the K split's walk instead, stream above): N
   * blocks of at most TL_MM_SWEEP_BN columns over the whole of K (tl_mm_config), which the
   * AVX-512 dot walks in sweeps of 8-16 rows of b (tl_a5_sweep, whose comment has the
   * measurements; 17-31 rows too, `TILEC_ISA=avx2` 17x4096x4096 3.12 -> 3.03 ms, 24 rows 4.42 ->
   * 4.31) and the AVX2 dot stages 256 columns x 32 rows at a time (tl_a2_dot_wide, for
   * 3-6 rows too since then), both for b blocks beyond 1 MiB. Before 2026-11-27 such a product
   * had the usual 256 x 512 blocks (N x K): the AVX-512 dot read them in 32-column panels, 128
   * bytes of each row of b a row stride apart, and the AVX2 dot 3-6 rows the same way in
   * 16-column panels, unprefetched (2.5-2.8x slower than now; 7-16 rows even). */
  r->sweep = da == TL_F32 && !r->packed && r->edges && bd->M >= 3 && bd->M <= TL_MM_SWEEP_M &&
             info.isa >= TL_ISA_AVX2 && bd->K * bd->N * 4 > tl_kernels_l3_bytes(&info) / 2 &&
             inner * TL_CDIV(bd->N, 32) >= info.threads;
  /* bf16 / int8 b is staged in the VNNI layout, except for few rows of a (a memory-bound
   * product, where staging would cost as much as the product) with b's columns at unit stride:
   * the AVX512-BF16 / VNNI dot reads row-major b then, building its pairs / quads in registers.
   * bf16 gains nothing from the VNNI staging up to 16 rows (3-4 rows 10-25% slower staged, 6-16
   * within noise). int8 took it from 3 rows until 2026-11-26, when its row-major kernel spent a
   * libc call on a's quad (a memcpy of a run-time size) every k step and row: see rm_copy
   * below for the rest. At the amx level 16 rows keep the VNNI tiles, which the AMX dot
   * takes (a row-major b it declines; bf16 16 rows read b in place there too until 2026-11-26,
   * all on AVX512-BF16). */
  r->rm = tiled_b && !r->packed && bd->M <= (info.isa >= TL_ISA_AMX ? 15 : 16) && b->stride[b->ndim - 1] == 1;
  tl_mm_config(&info, bd, inner, da, dc, tiled_b, r->packed ? b->layout.tile_r : 0, nscr, o->residual != NULL);
  if (cfg && bd->K > 0) { /* a tuned or candidate config; a packed b's K block is its tile row */
    if (cfg[0] > 0) r->BM = cfg[0];
    if (cfg[1] > 0) r->BN = cfg[1];
    if (cfg[2] > 0 && !r->packed) r->BK = cfg[2];
  }
  const int64_t BM = r->BM, BN = r->BN, BK = r->BK;
  const char *m3 = "z, j, i, k -> z, i, k", *mb = "z, j, i, k -> z, k, j", *mc = "z, j, i, k -> z, i, j";
  int n = 0;
  r->ia = n;
  bd->in[n] = (tl_blockspec){.ndim = 3, .block = {1, BM, BK}, .map = m3};
  /* the vector dot paths read a with unit column stride: a transposed (or strided) a is staged */
  if (a->stride[a->ndim - 1] != 1 && bd->K > 1) bd->in[n].stage = TL_STAGE_ALWAYS;
  /* edges, and a beside a b left row-major (rm): in place at the edges too, the body narrowing
   * the dot to the valid part. rm's edge blocks of a and b were staged, zero-padded, until
   * 2026-11-27: a K short of the K block (int8 1 row: 1024, K = 1000) copied all of b every call
   * (int8 1x1000x1000 cold, 2 threads: 103 -> 72 us; docs/matmul.md "Config") */
  if (r->edges || (r->rm && a->stride[a->ndim - 1] == 1)) bd->in[n].stage = TL_STAGE_NEVER;
  bd->tin[n++] = tl_mm_view3(a, inner, istr[0]);
  if (!r->packed) {
    r->ib = n;
    bd->in[n] = (tl_blockspec){.ndim = 3, .block = {1, BK, BN}, .map = mb};
    /* edge blocks too: the body narrows to valid */
    if (r->stream || r->edges || r->rm) bd->in[n].stage = TL_STAGE_NEVER;
    if (tiled_b && bd->K > 0 && !r->rm) {
      bd->in[n].layout = (tl_layout){.tiled = 1, .vnni = (uint8_t)tl_mm_vnni(da), .tile_r = (uint16_t)BK, .tile_c = 16};
      /* the next step's b rows (short runs a row stride apart, which the packer would wait on)
       * are prefetched while this step's dot runs (bf16 128x4096x11008, 2 threads: 36.6 -> 33.3
       * ms, 64x4096x4096 8.2 -> 7.1; int8 128x4096x11008 18.3 -> 17.1); f32 b staged in the dot
       * prefetches its own next panel, and a's blocks measured no gain */
      bd->in[n].prefetch = 1;
    }
    /* int8 with b's rows a multiple of 4 KiB apart: they share their page offset, so they fall
     * in one L1 set and in 32 of the L2's 2048 sets (the index bits above the offset come from
     * the physical page), and the kernel, 4 rows of a at a time, finds little of the block still
     * there on its next pass (`tilec_bench_tile_dot`, u8 x s8 16 x 1024 x 256 in L2, one core: 156
     * GOP/s with rows 4 KiB apart, 452 with 4160 bytes, tiled 447). Such a b is staged as a plain
     * row-major copy (rows BN bytes apart) that the kernel reads. `tilec bench gemm --threads 2
     * --dtype int8 --peers none`, 256 x 512 blocks, in place against the copy, 5 rounds
     * alternating, medians: 3x4096x4096 0.78 / 0.72 ms, 5 rows 1.01 / 0.84, 8 rows 1.05 / 0.91,
     * 16 rows 1.83 / 1.13, 16x4096x11008 4.96 / 3.61; other strides in place: 8x11008x4096 2.39 /
     * 2.85, 16x11008x4096 3.12 / 3.47, 16x1024x1024 71 / 75 us, 16x768x768 40 / 46, 8x2048x2048
     * 190 / 201, 12x1000x1000 78 / 77. bf16 (2 rows of b per step, 128-byte runs) measured slower
     * copied (5x4096x4096 1.33 -> 1.58 ms, 12 rows 1.67 -> 2.11, 16 rows even) */
    const int64_t ldb_bytes = b->stride[b->ndim - 2] * (int64_t)tl_dtype_size(b->dtype);
    /* (a streamed b: the K split copies it itself, chunk by chunk, tl_mm_chunk_k) */
    const int rm_copy = r->rm && !r->stream && da != TL_BF16 && bd->M >= 3 && ldb_bytes % 4096 == 0;
    if (rm_copy) bd->in[n].stage = TL_STAGE_ALWAYS;
    /* bf16 / int8 b read in place or copied (3-16 rows of a): its rows are a row stride apart too
     * (bf16, 2 threads, alternating builds: 16x4096x4096 3.16 -> 2.71 ms, 8x4096x4096 2.16 ->
     * 1.83, 16x11008x4096 7.6 -> 6.9, 1x1024x1024 112 -> 95 us, issued whole before each step;
     * the row-major kernels have issued them through their k loops since 2026-11-26, tl_bf_rm,
     * tl_q_rm). Not int8 below 3 rows (1-2 rows in place: 10-30% slower with it, 2x2048x2048
     * 178 -> 252 us) */
    if (r->rm && bd->K > 0 && !r->stream && (da == TL_BF16 || bd->M > 2)) bd->in[n].prefetch = 1;
    bd->tin[n++] = tl_mm_view3(b, inner, istr[1]);
  } else {
    /* packed b read in place (no VMEM): a block is one tile row (its K block) and BN / 16
     * consecutive tiles of it; [inner, K, N] when the inner batch has a matrix of b each, else
     * [K, N] (shared by the inner batch: tiled tensors have no strides to broadcast with) */
    r->ib = n;
    const int64_t shape3[3] = {inner, bd->K, bd->N};
    if (istr[1] != 0 && inner > 1) {
      bd->in[n] = (tl_blockspec){.ndim = 3, .block = {1, BK, BN}, .map = mb, .layout = b->layout, .stage = TL_STAGE_NEVER};
      bd->tin[n++] = tl_tensor_make_tiled(b->data, b->dtype, 3, shape3, b->layout);
    } else {
      bd->in[n] = (tl_blockspec){.ndim = 2, .block = {BK, BN}, .map = "z, j, i, k -> k, j", .layout = b->layout, .stage = TL_STAGE_NEVER};
      bd->tin[n++] = tl_tensor_make_tiled(b->data, b->dtype, 2, shape3 + 1, b->layout);
    }
  }
  if (o->bias) {
    r->ibias = n;
    bd->in[n] = (tl_blockspec){.ndim = 1, .block = {BN}, .map = "z, j, i, k -> j"};
    bd->tin[n++] = *o->bias;
  }
  if (o->scale_a) {
    r->isa = n;
    bd->in[n] = (tl_blockspec){.ndim = 1, .block = {BM}, .map = "z, j, i, k -> i"};
    bd->tin[n++] = *o->scale_a;
  }
  if (o->scale_b) {
    r->isb = n;
    bd->in[n] = (tl_blockspec){.ndim = 1, .block = {BN}, .map = "z, j, i, k -> j"};
    bd->tin[n++] = *o->scale_b;
  }
  if (o->residual) {
    r->ires = n;
    bd->in[n] = (tl_blockspec){.ndim = 3, .block = {1, BM, BN}, .map = mc};
    bd->tin[n++] = tl_mm_view3(o->residual, inner, istr[3]);
  }
  r->ic = n;
  bd->out[0] = (tl_blockspec){.ndim = 3, .block = {1, BM, BN}, .map = mc, .out = beta_nz ? TL_OUT_ACCUM_LOAD : TL_OUT_WRITE};
  bd->tout[0] = tl_mm_view3(c, inner, istr[2]);
  int ns = 0;
  if (!acc_in_c) {
    r->iacc = n + 1 + ns;
    bd->scr[ns++] = (tl_scratch){.dtype = acc_dt, .ndim = 2, .shape = {BM, BN}};
  }
  if (cvt) {
    r->icvt = n + 1 + ns;
    bd->scr[ns++] = (tl_scratch){.dtype = TL_F32, .ndim = 2, .shape = {BM, BN}};
  }
  if (tmp) {
    r->itmp = n + 1 + ns;
    bd->scr[ns++] = (tl_scratch){.dtype = TL_F32, .ndim = 2, .shape = {BM, BN}};
  }
  int64_t flops = 0;
  if (tl_mul_ovf(2 * bd->batch, bd->M, &flops) || tl_mul_ovf(flops, bd->N, &flops) || tl_mul_ovf(flops, bd->K, &flops))
    flops = 0;
  bd->k = (tl_kernel){.name = "matmul", .body = tl_mm_body, .grid_ndim = 4,
                      .grid = {inner, TL_CDIV(bd->N, BN), TL_CDIV(bd->M, BM), BK ? TL_CDIV(bd->K, BK) : 1},
                      .sem = {TL_PARALLEL, TL_PARALLEL, TL_PARALLEL, TL_ARBITRARY}, .n_in = n, .n_out = 1,
                      .n_scratch = ns, .flops = flops};
  if (!cfg) tl_mm_split_decide(&info, bd, a, b);
  tl_mm_build_fixup(bd, r);
  return TL_OK;
}

/* See matmul_impl.h. */
void tl_mm_build_fixup(tl_mm_build *bd, tl_mm_run *run) {
  bd->k.in = bd->in, bd->k.out = bd->out, bd->k.scratch = bd->k.n_scratch ? bd->scr : NULL;
  bd->k.user = run;
  if (bd->split) {
    for (int i = 0; i < 3; i++) (i < 2 ? &bd->ks_in[i] : &bd->ks_out[0])->map = bd->ks_map[i];
    bd->ks.in = bd->ks_in, bd->ks.out = bd->ks_out, bd->ks.user = &bd->ks_run;
    bd->ks.scratch = bd->ks.n_scratch ? bd->ks_scr : NULL;
  }
}

/* ---- the plan cache (a context slot) ---- */

typedef struct tl_mm_key {
  tl_tensor t[7]; /* a, b, c, bias, residual, scale_a, scale_b: data NULL, unused dims 0 */
  int act, beta_nz;
} tl_mm_key;

typedef struct tl_mm_entry {
  int used;
  uint64_t stamp;
  tl_mm_key key;
  tl_plan *plan;    /* the K split's second kernel when split */
  tl_plan *plan_ks; /* the K split's first kernel, or NULL */
  void *part;       /* the K split's partial products, [S, M, N] of the accumulator's dtype */
  tl_mm_build bd;
} tl_mm_entry;

typedef struct tl_mm_cache {
  uint64_t clock;
  tl_mm_entry e[TL_MM_CACHE];
} tl_mm_cache;

/* Plans are freed by tl_ctx_free before the slots: only the cache memory (and the K splits'
 * partial buffers) is ours. */
static void tl_mm_cache_free(void *state) {
  tl_mm_cache *cache = state;
  for (int i = 0; cache && i < TL_MM_CACHE; i++) tl_aligned_free(cache->e[i].part);
  tl_free_mem(state);
}
static const tl_slot_class tl_mm_slot = {.name = "matmul plans", .free_state = tl_mm_cache_free};

/* Copies the shape-defining fields of t (NULL: all zero) into dst. */
static void tl_mm_key_tensor(tl_tensor *dst, const tl_tensor *t) {
  memset(dst, 0, sizeof *dst);
  if (!t) return;
  dst->dtype = t->dtype, dst->ndim = t->ndim, dst->layout = t->layout;
  for (int d = 0; d < t->ndim && d < TL_MAX_DIMS; d++) dst->shape[d] = t->shape[d], dst->stride[d] = t->stride[d];
}

/* The plan-cache key of a call. */
static void tl_mm_make_key(tl_mm_key *key, const tl_tensor *a, const tl_tensor *b, const tl_tensor *c,
                           const tl_matmul_opts *o) {
  memset(key, 0, sizeof *key);
  const tl_tensor *kt[7] = {a, b, c, o->bias, o->residual, o->scale_a, o->scale_b};
  for (int i = 0; i < 7; i++) tl_mm_key_tensor(&key->t[i], kt[i]);
  key->act = (int)o->act, key->beta_nz = o->beta != 0.0f;
}

/* See matmul_impl.h. */
int tl_mm_cached_config(const tl_ctx *ctx, const tl_tensor *a, const tl_tensor *b, const tl_tensor *c,
                        const tl_matmul_opts *opts, int64_t *bm_bn_bk, int *split) {
  const tl_matmul_opts defaults = TL_MATMUL_OPTS_INIT;
  const tl_mm_cache *cache = tl_ctx_slot_get(ctx, &tl_mm_slot);
  tl_mm_key key;
  tl_mm_make_key(&key, a, b, c, opts ? opts : &defaults);
  for (int i = 0; cache && i < TL_MM_CACHE; i++) {
    const tl_mm_entry *e = &cache->e[i];
    if (e->used && !memcmp(&e->key, &key, sizeof key)) {
      bm_bn_bk[0] = e->bd.run.BM, bm_bn_bk[1] = e->bd.run.BN, bm_bn_bk[2] = e->bd.run.BK;
      if (split) *split = e->plan_ks ? e->bd.split : 0;
      return 1;
    }
  }
  return 0;
}

/* The cached entry for key, or a fresh (evicted) one with used == 0; NULL when out of memory. */
static tl_mm_entry *tl_mm_cache_lookup(tl_ctx *ctx, const tl_mm_key *key) {
  tl_mm_cache *cache = tl_ctx_slot_get(ctx, &tl_mm_slot);
  if (!cache) {
    cache = tl_calloc(1, sizeof *cache);
    if (!cache) return NULL;
    if (tl_ctx_slot_set(ctx, &tl_mm_slot, cache) != TL_OK) {
      tl_free_mem(cache);
      return NULL;
    }
  }
  tl_mm_entry *victim = &cache->e[0];
  for (int i = 0; i < TL_MM_CACHE; i++) {
    tl_mm_entry *e = &cache->e[i];
    if (e->used && !memcmp(&e->key, key, sizeof *key)) {
      e->stamp = ++cache->clock;
      return e;
    }
    if (!e->used) victim = e;
    else if (victim->used && e->stamp < victim->stamp) victim = e;
  }
  if (victim->used) tl_plan_free(victim->plan), tl_plan_free(victim->plan_ks);
  tl_aligned_free(victim->part);
  memset(victim, 0, sizeof *victim);
  victim->key = *key;
  victim->stamp = ++cache->clock;
  return victim;
}

/* ---- tuned configs (docs/tune.md) ---- */

/* See matmul_impl.h. */
void tl_mm_tune_key(const tl_mm_build *bd, char *key, size_t n) {
  const tl_mm_run *r = &bd->run;
  const tl_tensor *tb = &bd->tin[r->ib];
  const tl_dtype da = bd->tin[r->ia].dtype, db = tb->dtype;
  const char *pk = !r->packed ? "" : tb->layout.tile_r == tl_mm_pack_tile_r(db, bd->K, 0) ? " packed" : " packed-long-k";
  snprintf(key, n, "%s.%s.%s m%lld n%lld k%lld z%lld%s", tl_dtype_name(da), tl_dtype_name(db), tl_dtype_name(r->c_dt),
           (long long)bd->M, (long long)bd->N, (long long)bd->K, (long long)bd->k.grid[0], pk);
}

/* See matmul_impl.h. */
int tl_mm_tuned_build(tl_ctx *ctx, const tl_tensor *a, const tl_tensor *b, const tl_tensor *c, const tl_matmul_opts *o,
                      const tl_mm_build *heur, tl_mm_build *out) {
  if (!ctx->info.tune || heur->K == 0 || heur->split) return 0; /* the K split is not in the space */
  char key[TL_TUNE_KEY_MAX];
  tl_mm_tune_key(heur, key, sizeof key);
  const char *text = tl_tune_lookup(ctx, "matmul", TL_MM_TUNE_VERSION, key);
  if (!text) return 0;
  tl_tune_space names = {.nparams = 3, .params = {{.name = "BM"}, {.name = "BN"}, {.name = "BK"}}};
  int64_t cfg[3] = {heur->run.BM, heur->run.BN, heur->run.BK};
  if (tl_tune_cfg_parse(&names, text, cfg) != 0 || cfg[0] < 1 || cfg[1] < 1 || cfg[2] < 1) {
    tl_ctx_warn(ctx, "tl_matmul: tuned config '%.200s' for %s is malformed: using the heuristic's", text, key);
    return 0;
  }
  /* the DB is outside input: hold it to the rules the tuner's space keeps (a packed or staged-
   * tiled b is read in 16-column tiles; bf16 / int8 K blocks are whole VNNI groups of the tile) */
  const tl_dtype da = a->dtype;
  const int tiled = da != TL_F32 || heur->run.packed;
  const int64_t gk = da == TL_BF16 ? 32 : da == TL_F32 ? 1 : 64;
  if ((tiled && cfg[1] % 16 && cfg[1] < heur->N) || (!heur->run.packed && cfg[2] % gk && cfg[2] < heur->K)) {
    tl_ctx_warn(ctx, "tl_matmul: tuned config '%.200s' for %s breaks the tile alignment (BN a multiple of 16%s): using the heuristic's",
                text, key, gk > 1 ? ", BK of the VNNI group" : "");
    return 0;
  }
  if (cfg[0] == heur->run.BM && cfg[1] == heur->run.BN && (cfg[2] == heur->run.BK || heur->run.packed)) return 0;
  return tl_mm_prepare_cfg(ctx, a, b, c, o, cfg, out) == TL_OK;
}

/* See matmul_impl.h. */
tl_status tl_mm_config_used(tl_ctx *ctx, const tl_tensor *a, const tl_tensor *b, const tl_tensor *c,
                            const tl_matmul_opts *opts, int64_t *bm_bn_bk, int *tuned) {
  const tl_matmul_opts defaults = TL_MATMUL_OPTS_INIT;
  const tl_matmul_opts *o = opts ? opts : &defaults;
  tl_mm_build bd, tb;
  tl_status s = tl_mm_prepare(ctx, a, b, c, o, &bd);
  if (s != TL_OK) return s;
  *tuned = tl_mm_tuned_build(ctx, a, b, c, o, &bd, &tb);
  const tl_mm_run *r = *tuned ? &tb.run : &bd.run;
  bm_bn_bk[0] = r->BM, bm_bn_bk[1] = r->BN, bm_bn_bk[2] = r->BK;
  return TL_OK;
}

/* See matmul_impl.h. */
tl_status tl_mm_plan_make(tl_ctx *ctx, const tl_tensor *a, const tl_tensor *b, const tl_tensor *c,
                          const tl_matmul_opts *o, const tl_mm_build *heur, tl_mm_build *out, tl_plan **plan, int *tuned) {
  tl_mm_build tb;
  int tu = tl_mm_tuned_build(ctx, a, b, c, o, heur, &tb);
  *out = tu ? tb : *heur;
  tl_mm_build_fixup(out, &out->run);
  tl_status s = tl_plan_new(ctx, &out->k, out->tin, out->tout, plan);
  if (s != TL_OK && tu) {
    tl_ctx_warn(ctx, "tl_matmul: tuned config BM=%lld BN=%lld BK=%lld refused (%s): using the heuristic's",
                (long long)tb.run.BM, (long long)tb.run.BN, (long long)tb.run.BK, tl_ctx_error(ctx));
    tu = 0;
    *out = *heur;
    tl_mm_build_fixup(out, &out->run);
    s = tl_plan_new(ctx, &out->k, out->tin, out->tout, plan);
  }
  if (tuned) *tuned = tu && s == TL_OK;
  return s;
}

/* ---- memory overlap of c with the inputs, over the whole call ---- */

/* A byte range [lo, hi). */
typedef struct tl_mm_span {
  uintptr_t lo, hi;
} tl_mm_span;

static int tl_mm_span_cmp(const void *x, const void *y) {
  const tl_mm_span *p = x, *q = y;
  return p->lo < q->lo ? -1 : p->lo > q->lo;
}

/* The byte offset of outer iteration it (row-major over outer_shape) for operand slot x of
 * outer_stride (0 a, 1 b, 2 c, 3 residual; -1: not walked, offset 0). */
static int64_t tl_mm_outer_off(const tl_mm_build *nb, int x, int64_t it) {
  int64_t off = 0;
  for (int d = nb->n_outer - 1; d >= 0; d--) {
    const int64_t i = it % nb->outer_shape[d];
    it /= nb->outer_shape[d];
    if (x >= 0) off += i * nb->outer_stride[x][d];
  }
  return off;
}

/* The span of t (the executor's, tl_tensor_span) moved by off bytes. */
static tl_mm_span tl_mm_span_of(const tl_tensor *t, int64_t off) {
  tl_mm_span sp;
  tl_tensor_span(t, &sp.lo, &sp.hi);
  sp.lo += (uintptr_t)off, sp.hi += (uintptr_t)off;
  return sp;
}

/* Refuses c overlapping any input (a, b, bias, scales, residual — c's own storage included, so
 * a residual that is c is refused too) in any pair of outer iterations, before any run writes c.
 * The executor compares the views of one run only: before this, a c whose first batch held a's
 * second was computed from an a already overwritten (TL_OK, half of c wrong), an overlap found
 * at a later iteration was refused after earlier ones had written c, and a residual that was c
 * itself was accepted (the accumulator is c's block: the dot overwrote the residual before the
 * epilogue read it) and its plan then refused every later call of that shape. Like the
 * executor's rule, this compares spans (first to one past the last byte of each run's view). */
static tl_status tl_mm_check_overlap(tl_ctx *ctx, const tl_mm_build *nb) {
  const tl_mm_run *r = &nb->run;
  int64_t cnt = 1;
  for (int d = 0; d < nb->n_outer; d++) cnt *= nb->outer_shape[d];
  const tl_tensor *c = &nb->tout[0];
  /* the bounding span of c over every iteration (strides are >= 0) */
  const tl_mm_span cb = {tl_mm_span_of(c, 0).lo, tl_mm_span_of(c, tl_mm_outer_off(nb, 2, cnt - 1)).hi};
  const struct {
    int idx, slot;
    const char *name;
  } ops[6] = {{r->ia, 0, "a"}, {r->ib, 1, "b"}, {r->ibias, -1, "bias"}, {r->isa, -1, "scale_a"},
              {r->isb, -1, "scale_b"}, {r->ires, 3, "residual"}};
  tl_mm_span *cs = NULL; /* c's spans, sorted and merged, made when first needed */
  int64_t ncs = 0;
  tl_status st = TL_OK;
  for (int o = 0; o < 6 && st == TL_OK; o++) {
    if (ops[o].idx < 0) continue;
    const tl_tensor *x = &nb->tin[ops[o].idx];
    if (tl_tensor_numel(x) <= 0) continue;
    const int64_t xn = ops[o].slot >= 0 ? cnt : 1;
    const tl_mm_span xb = {tl_mm_span_of(x, 0).lo, tl_mm_span_of(x, tl_mm_outer_off(nb, ops[o].slot, xn - 1)).hi};
    if (xb.hi <= cb.lo || cb.hi <= xb.lo) continue; /* the usual case: apart */
    if (!cs) {
      cs = tl_calloc((size_t)cnt, sizeof *cs);
      if (!cs) return tl_ctx_fail(ctx, TL_ERR_NOMEM, "tl_matmul: out of memory checking c against the inputs");
      for (int64_t i = 0; i < cnt; i++) cs[i] = tl_mm_span_of(c, tl_mm_outer_off(nb, 2, i));
      qsort(cs, (size_t)cnt, sizeof *cs, tl_mm_span_cmp);
      for (int64_t i = 0; i < cnt; i++) { /* merge: disjoint and increasing */
        if (ncs && cs[i].lo < cs[ncs - 1].hi) {
          if (cs[i].hi > cs[ncs - 1].hi) cs[ncs - 1].hi = cs[i].hi;
        } else {
          cs[ncs++] = cs[i];
        }
      }
    }
    for (int64_t i = 0; i < xn && st == TL_OK; i++) {
      const tl_mm_span xs = tl_mm_span_of(x, tl_mm_outer_off(nb, ops[o].slot, i));
      int64_t lo = 0, hi = ncs; /* the first merged span of c ending past xs.lo */
      while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (cs[mid].hi <= xs.lo) lo = mid + 1;
        else hi = mid;
      }
      if (lo < ncs && cs[lo].lo < xs.hi)
        st = tl_ctx_fail(ctx, TL_ERR_INVALID, "tl_matmul: c overlaps %s in memory%s", ops[o].name,
                         ops[o].slot == 3 ? " (a residual must be a tensor of its own)" : "");
    }
  }
  tl_free_mem(cs);
  return st;
}

/* ---- tl_matmul ---- */

/* A new entry whose heuristic build splits K (split > 1): its two plans and the partial
 * buffer. On any failure (memory, the executor refusing either plan) the entry keeps the
 * unsplit plan it has, with split 0 and nothing reported. */
static void tl_mm_split_make(tl_ctx *ctx, tl_mm_entry *e) {
  /* the plans keep pointers into the build (the run structs, as their kernels' user data): made
   * on the entry's own build, which the unsplit copy restores on failure */
  tl_mm_build *sb = &e->bd;
  const tl_mm_build unsplit = *sb;
  const size_t bytes = (size_t)sb->split * (size_t)sb->M * (size_t)tl_mm_part_ld(sb->N) * 4;
  void *part = tl_aligned_alloc(64, bytes);
  tl_plan *pa = NULL, *pb = NULL;
  sb->ks_tout[0].data = part;
  int ok = part && tl_plan_new(ctx, &sb->ks, sb->ks_tin, sb->ks_tout, &pa) == TL_OK;
  if (ok) {
    tl_mm_split_sum(sb, part);
    ok = tl_plan_new(ctx, &sb->k, sb->tin, sb->tout, &pb) == TL_OK;
  }
  if (!ok) {
    tl_plan_free(pa);
    tl_aligned_free(part);
    *sb = unsplit;
    sb->split = 0;
    tl_mm_build_fixup(sb, &sb->run);
    return;
  }
  tl_plan_free(e->plan);
  e->plan = pb, e->plan_ks = pa, e->part = part;
}

/* Checks and builds (tl_mm_prepare), finds or makes the cached plan, sets alpha / beta, and runs
 * the plan once per outer batch index on offset tensors. */
tl_status tl_matmul(tl_ctx *ctx, const tl_tensor *a, const tl_tensor *b, tl_tensor *c, const tl_matmul_opts *opts) {
  if (!ctx) return tl_fail_tls(TL_ERR_INVALID, "tl_matmul: ctx is NULL");
  const tl_matmul_opts defaults = TL_MATMUL_OPTS_INIT;
  const tl_matmul_opts *o = opts ? opts : &defaults;
  tl_mm_build bd;
  tl_status s = tl_mm_prepare(ctx, a, b, c, o, &bd);
  if (s != TL_OK) return s;
  if (tl_tensor_numel(c) == 0) {
    tl_ctx_ok(ctx);
    return TL_OK;
  }
  if ((s = tl_mm_check_overlap(ctx, &bd)) != TL_OK) return s;
  tl_tensor bp;
  if (tl_mm_autopack(ctx, a, b, &bp)) return tl_matmul(ctx, a, &bp, c, opts);
  tl_mm_key key;
  tl_mm_make_key(&key, a, b, c, o);
  tl_mm_entry *e = tl_mm_cache_lookup(ctx, &key);
  if (!e) return tl_ctx_fail(ctx, TL_ERR_NOMEM, "tl_matmul: out of memory for the plan cache");
  if (!e->used) {
    /* a new plan (the tuning DB is looked up only here, so cached calls never pay for it) */
    int tuned = 0;
    s = tl_mm_plan_make(ctx, a, b, c, o, &bd, &e->bd, &e->plan, &tuned);
    if (s != TL_OK) {
      memset(e, 0, sizeof *e); /* the plan failed: the entry stays free */
      return s;
    }
    e->used = 1;
    if (e->bd.split && !tuned) tl_mm_split_make(ctx, e);
    else e->bd.split = 0;
  }
  /* the values that are not part of the key */
  tl_mm_run *r = &e->bd.run;
  r->alpha = o->alpha, r->beta = o->beta;
  const tl_mm_build *nb = &bd; /* this call's tensors (same shapes as the entry's) */
  tl_tensor tin[TL_MM_MAX_IN], tout[1];
  if (e->plan_ks) { /* the K split (no batch): the partial products, then their sum under the epilogue */
    const tl_tensor ka[2] = {nb->tin[nb->run.ia], nb->tin[nb->run.ib]};
    tl_tensor kp = e->bd.ks_tout[0];
    kp.data = e->part;
    tl_mm_split_tin(nb, nb->tin, e->part, tin);
    tout[0] = nb->tout[0];
    if ((s = tl_plan_run(e->plan_ks, ka, &kp)) != TL_OK || (s = tl_plan_run(e->plan, tin, tout)) != TL_OK) return s;
    tl_ctx_ok(ctx);
    return TL_OK;
  }
  int64_t idx[TL_MM_MAX_OUTER] = {0};
  for (;;) {
    int64_t off[4] = {0, 0, 0, 0};
    for (int d = 0; d < nb->n_outer; d++)
      for (int x = 0; x < 4; x++) off[x] += idx[d] * nb->outer_stride[x][d];
    memcpy(tin, nb->tin, sizeof tin);
    tout[0] = nb->tout[0];
    tin[r->ia].data = (char *)tin[r->ia].data + off[0];
    tin[r->ib].data = (char *)tin[r->ib].data + off[1];
    if (r->ires >= 0) tin[r->ires].data = (char *)tin[r->ires].data + off[3];
    tout[0].data = (char *)tout[0].data + off[2];
    s = tl_plan_run(e->plan, tin, tout);
    if (s != TL_OK) return s;
    int d = nb->n_outer - 1;
    while (d >= 0 && ++idx[d] == nb->outer_shape[d]) idx[d--] = 0;
    if (d < 0) break;
  }
  tl_ctx_ok(ctx);
  return TL_OK;
}
