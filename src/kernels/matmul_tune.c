/* matmul_tune.c — tl_matmul's config space for the tuner (src/tune/, docs/tune.md).
 *
 * Parameters: BM (rows of A and C per block), BN (columns of B and C), BK (K rows per block).
 * Candidate values respect what the kernel and the tile layer need:
 *   - BN: multiples of 16 (a staged bf16/int8 B block is tiled in 16-column tiles, a packed b is
 *     read in place by whole tiles; f32 keeps the same grain so its vector loops see whole zmm
 *     rows), or N itself with b not packed;
 *   - BK: multiples of the dtype's K group: 8 (f32), 32 (bf16: vnni 2 pairs, 64-byte rows), 64
 *     (int8: vnni 4 quads) — the bf16/int8 B staging layout is tiled BK x 16;
 *   - BM: multiples of 8 (8 or 16 rows: the microkernel's row blocking), or M itself when small;
 *   - the heuristic's own values are always in the lists (so it is always a candidate and timed).
 * A config the executor refuses (VMEM budget, L1 budget...) is pruned by build (tl_plan_new).
 * The "reduced" space (BM 16..256, BN 32..512, BK 64..512, powers of two) is the one the
 * tuned-vs-exhaustive comparison enumerates.
 *
 * A candidate is the kernel tl_matmul builds (tl_mm_prepare_cfg) planned on the space's own
 * tensors (random data, owned here), run with tl_plan_run. */
#include <stdio.h>
#include <string.h>

#include "matmul_impl.h"
#include "tune_kernels.h"

typedef struct tl_mm_tune_user {
  tl_ctx *ctx;
  tl_tensor a, b, c;
  void *bufs[3];
  int64_t M, N, K;
  tl_dtype da;
  int64_t gk;           /* BK grain */
  int packed;           /* b is packed (f32 with many rows: what tl_matmul runs); BK is fixed */
} tl_mm_tune_user;

typedef struct tl_mm_tune_cand {
  tl_mm_build bd;
  tl_plan *plan;
} tl_mm_tune_cand;

static void tl_mm_tune_free_user(void *user) {
  tl_mm_tune_user *u = user;
  if (!u) return;
  for (int i = 0; i < 3; i++) {
    if (i == 1 && u->packed) tl_free_huge(u->bufs[i]); /* tl_mm_pack_b's */
    else tl_aligned_free(u->bufs[i]);
  }
  tl_free_mem(u);
}

static int tl_mm_tune_valid(void *user, const int64_t *cfg, char *why, size_t n) {
  const tl_mm_tune_user *u = user;
  const int64_t BM = cfg[0], BN = cfg[1], BK = cfg[2];
  if (BM < 1 || BN < 1 || BK < 1) return tl_msg(why, n, "blocks must be positive"), 0;
  /* (a packed b is read in place by blocks of whole 16-column tiles) */
  if (BN % 16 && (BN != u->N || u->packed)) return tl_msg(why, n, "BN %lld is not a multiple of 16", (long long)BN), 0;
  if (BM % 8 && BM != u->M) return tl_msg(why, n, "BM %lld is not a multiple of 8", (long long)BM), 0;
  if (u->packed) return 1; /* BK is the packed tile row */
  if (BK % u->gk && !(u->da == TL_F32 && BK == u->K))
    return tl_msg(why, n, "BK %lld is not a multiple of %lld", (long long)BK, (long long)u->gk), 0;
  if (BK > TL_CDIV(u->K, u->gk) * u->gk && BK != u->K) return tl_msg(why, n, "BK %lld exceeds K", (long long)BK), 0;
  return 1;
}

static void tl_mm_tune_release(void *user, void *cand) {
  (void)user;
  tl_mm_tune_cand *c = cand;
  if (!c) return;
  tl_plan_free(c->plan);
  tl_free_mem(c);
}

static tl_status tl_mm_tune_build(void *user, const int64_t *cfg, void **cand, tl_tune_built *out) {
  tl_mm_tune_user *u = user;
  *cand = NULL;
  tl_mm_tune_cand *c = tl_calloc(1, sizeof *c);
  if (!c) return TL_ERR_NOMEM;
  const tl_matmul_opts o = TL_MATMUL_OPTS_INIT;
  tl_status s = tl_mm_prepare_cfg(u->ctx, &u->a, &u->b, &u->c, &o, cfg, &c->bd);
  if (s == TL_OK) {
    tl_mm_build_fixup(&c->bd, &c->bd.run);
    s = tl_plan_new(u->ctx, &c->bd.k, c->bd.tin, c->bd.tout, &c->plan);
  }
  if (s != TL_OK) {
    tl_mm_tune_release(user, c);
    return s;
  }
  const int64_t *g = c->bd.k.grid;
  out->plan = c->plan;
  out->par_blocks = g[0] * g[1] * g[2];
  out->steps = out->par_blocks * g[3];
  out->balance = tl_mm_balance(c->bd.k.grid[0], c->bd.M, c->bd.N, c->bd.run.BM, c->bd.run.BN, u->ctx->info.threads);
  *cand = c;
  return TL_OK;
}

static int tl_mm_tune_run(void *user, void *cand) {
  (void)user;
  tl_mm_tune_cand *c = cand;
  return tl_plan_run(c->plan, c->bd.tin, c->bd.tout) != TL_OK;
}

/* A shape where tl_matmul splits K: no space (*out stays NULL), why in err. */
static tl_status tl_mm_tune_unsplit(int split, char *err, size_t errn) {
  tl_msg(err, errn,
         "tl_matmul splits K between the %d threads here (docs/matmul.md, K split), which the config space does "
         "not cover; it takes no tuned config for this shape",
         split);
  return TL_OK;
}

/* See tune_kernels.h. */
tl_status tl_mm_tune_space_new(tl_ctx *ctx, const int64_t *dims, int ndims, int variant, tl_dtype da, int reduced,
                               tl_tune_space **out, char *err, size_t errn) {
  *out = NULL;
  if (ndims != 3 || variant) {
    tl_msg(err, errn, "matmul: shape is MxNxK, got %d sizes", ndims);
    return TL_ERR_SHAPE;
  }
  if (da != TL_F32 && da != TL_BF16 && da != TL_U8) {
    tl_msg(err, errn, "matmul: dtype %s is not tunable (f32, bf16, int8)", tl_dtype_name(da));
    return TL_ERR_DTYPE;
  }
  const int64_t M = dims[0], N = dims[1], K = dims[2];
  const int64_t lim = (int64_t)1 << 30;
  int64_t mk = 0, kn = 0, mn = 0;
  if (M < 1 || N < 1 || K < 1 || tl_mul_ovf(M, K, &mk) || tl_mul_ovf(K, N, &kn) || tl_mul_ovf(M, N, &mn) || mk > lim ||
      kn > lim || mn > lim) {
    tl_msg(err, errn, "matmul: shape %lldx%lldx%lld: each operand must have 1..2^30 elements", (long long)M,
           (long long)N, (long long)K);
    return TL_ERR_SHAPE;
  }
  const tl_dtype db = da == TL_U8 ? TL_I8 : da, dc = da == TL_U8 ? TL_I32 : TL_F32;
  int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
  tl_mm_build heur;
  const tl_matmul_opts o = TL_MATMUL_OPTS_INIT;
  { /* a shape tl_matmul splits is said before any buffer is made (its build reads shapes and
     * strides only; b is packed only for more rows than the split takes) */
    _Alignas(64) char pa[64], pb[64], pc[64];
    tl_tensor a = tl_tensor_make(pa, da, 2, sa), b = tl_tensor_make(pb, db, 2, sb), c = tl_tensor_make(pc, dc, 2, sc);
    if (!tl_mm_autopack_applies(&a, &b) && tl_mm_prepare(ctx, &a, &b, &c, &o, &heur) == TL_OK && heur.split)
      return tl_mm_tune_unsplit(heur.split, err, errn);
  }
  tl_status s = TL_ERR_NOMEM;
  tl_tune_space *sp = tl_calloc(1, sizeof *sp);
  tl_mm_tune_user *u = tl_calloc(1, sizeof *u);
  if (!sp || !u) goto fail;
  u->ctx = ctx, u->M = M, u->N = N, u->K = K, u->da = da;
  u->gk = da == TL_F32 ? 8 : da == TL_BF16 ? 32 : 64;
  u->bufs[0] = tl_tune_kernel_buf(da, M * K, 1);
  u->bufs[1] = tl_tune_kernel_buf(db, K * N, 2);
  u->bufs[2] = tl_tune_kernel_buf(dc, M * N, 3);
  if (!u->bufs[0] || !u->bufs[1] || !u->bufs[2]) goto fail;
  u->a = tl_tensor_make(u->bufs[0], da, 2, sa);
  u->b = tl_tensor_make(u->bufs[1], db, 2, sb);
  u->c = tl_tensor_make(u->bufs[2], dc, 2, sc);
  if (tl_mm_autopack_applies(&u->a, &u->b)) { /* tl_matmul runs this problem with b packed: tune that */
    tl_tensor pb;
    s = tl_mm_pack_b(ctx, &u->b, da, 1, &pb);
    if (s != TL_OK) {
      tl_msg(err, errn, "%s", tl_ctx_error(ctx));
      goto fail;
    }
    tl_aligned_free(u->bufs[1]);
    u->bufs[1] = pb.data, u->b = pb, u->packed = 1;
  }
  s = tl_mm_prepare(ctx, &u->a, &u->b, &u->c, &o, &heur);
  if (s != TL_OK) {
    tl_msg(err, errn, "%s", tl_ctx_error(ctx));
    goto fail;
  }
  if (heur.split) { /* (as above, should the real tensors' build differ) */
    tl_mm_tune_free_user(u);
    tl_free_mem(sp);
    return tl_mm_tune_unsplit(heur.split, err, errn);
  }
  snprintf(sp->kernel, sizeof sp->kernel, "matmul");
  sp->version = TL_MM_TUNE_VERSION;
  tl_mm_tune_key(&heur, sp->key, sizeof sp->key);
  sp->dtype = db;
  sp->nparams = 3;
  sp->heuristic[0] = heur.run.BM, sp->heuristic[1] = heur.run.BN, sp->heuristic[2] = heur.run.BK;
  static const int64_t bm_full[] = {8, 16, 32, 48, 64, 96, 128, 192, 256};
  static const int64_t bn_full[] = {16, 32, 48, 64, 96, 128, 192, 256, 384, 512};
  static const int64_t bk_full[] = {32, 64, 128, 256, 512, 1024, 2048};
  static const int64_t bm_red[] = {16, 32, 64, 128, 256}, bn_red[] = {32, 64, 128, 256, 512};
  const int64_t mcap = M < 8 ? M : TL_CDIV(M, 8) * 8, ncap = TL_CDIV(N, 16) * 16, kcap = TL_CDIV(K, u->gk) * u->gk;
  tl_tune_kernel_values(&sp->params[0], "BM", reduced ? bm_red : bm_full, reduced ? 5 : 9, mcap, heur.run.BM);
  tl_tune_kernel_values(&sp->params[1], "BN", reduced ? bn_red : bn_full, reduced ? 5 : 10, ncap, heur.run.BN);
  int64_t bkl[8];
  int nbk = 0;
  for (int i = 0; i < (int)TL_ARRAY_LEN(bk_full); i++)
    if (bk_full[i] % u->gk == 0 && (!reduced || (bk_full[i] >= 64 && bk_full[i] <= 1024))) bkl[nbk++] = bk_full[i];
  if (heur.run.packed) bkl[0] = heur.run.BK, nbk = 1; /* a packed b's K block is its tile row */
  tl_tune_kernel_values(&sp->params[2], "BK", bkl, nbk, kcap, heur.run.BK);
  sp->user = u;
  sp->valid = tl_mm_tune_valid;
  sp->build = tl_mm_tune_build;
  sp->run = tl_mm_tune_run;
  sp->release = tl_mm_tune_release;
  sp->free_user = tl_mm_tune_free_user;
  *out = sp;
  return TL_OK;
fail:
  if (s == TL_ERR_NOMEM) tl_msg(err, errn, "matmul: out of memory for %lldx%lldx%lld", (long long)M, (long long)N, (long long)K);
  tl_mm_tune_free_user(u);
  tl_free_mem(sp);
  return s;
}
