/* attention_tune.c — tl_attention's config space for the tuner (src/tune/, docs/tune.md).
 *
 * Parameters: BQ (query rows per block, prefill only) and BK (K/V rows per block).
 *   - prefill (Sq > 16): BQ in {16, 32, 64, 128, 256} up to Sq rounded up to 16, BK in {32, 64,
 *     128, 256, 512} up to Sk rounded up to 16; both multiples of 16 (whole tiles of the staged blocks);
 *   - decode (Sq <= 16): BK only (the query rows of a K/V head are one block);
 *   - the heuristic's values are always in the lists (so it is always a candidate and timed).
 * A config that does not fit the staging budget (tl_attention's tl_attn_fits) or that the
 * executor refuses is pruned by build. The reduced space is the same (it is small already).
 *
 * A candidate is the plan tl_attention makes (tl_attn_cand_new) on the space's own tensors:
 * q, k, v of the dtype (Hkv = H), o f32, no mask — the problem `tilec explain attention` runs. */
#include <stdio.h>
#include <string.h>

#include "attention_impl.h"
#include "tune_kernels.h"

typedef struct tl_attn_tune_user {
  tl_ctx *ctx;
  tl_tensor q, k, v, o;
  void *bufs[4];
  int causal, decode;
} tl_attn_tune_user;

static void tl_attn_tune_free_user(void *user) {
  tl_attn_tune_user *u = user;
  if (!u) return;
  for (int i = 0; i < 4; i++) tl_aligned_free(u->bufs[i]);
  tl_free_mem(u);
}

/* cfg: {BQ, BK} (prefill) or {BK} (decode). */
static void tl_attn_tune_cfg(const tl_attn_tune_user *u, const int64_t *cfg, int64_t *bqbk) {
  bqbk[0] = u->decode ? 0 : cfg[0];
  bqbk[1] = u->decode ? cfg[0] : cfg[1];
}

static int tl_attn_tune_valid(void *user, const int64_t *cfg, char *why, size_t n) {
  int64_t c[2];
  tl_attn_tune_cfg(user, cfg, c);
  if (!((tl_attn_tune_user *)user)->decode && (c[0] < 16 || c[0] % 16))
    return tl_msg(why, n, "BQ %lld is not a positive multiple of 16", (long long)c[0]), 0;
  if (c[1] < 16 || c[1] % 16) return tl_msg(why, n, "BK %lld is not a positive multiple of 16", (long long)c[1]), 0;
  return 1;
}

static tl_status tl_attn_tune_build(void *user, const int64_t *cfg, void **cand, tl_tune_built *out) {
  tl_attn_tune_user *u = user;
  int64_t c[2];
  tl_attn_tune_cfg(u, cfg, c);
  tl_attn_cand *ca = NULL;
  *cand = NULL;
  tl_status s = tl_attn_cand_new(u->ctx, &u->q, &u->k, &u->v, &u->o, u->causal, c, &ca);
  if (s != TL_OK) return s;
  tl_attn_cand_desc d;
  tl_attn_cand_info(ca, &d);
  out->plan = (tl_plan *)(uintptr_t)d.plan;
  out->par_blocks = d.par_blocks;
  out->steps = d.steps;
  out->balance = 0;
  *cand = ca;
  return TL_OK;
}

static int tl_attn_tune_run(void *user, void *cand) {
  tl_attn_tune_user *u = user;
  return tl_attn_cand_run(cand, &u->q, &u->k, &u->v, &u->o) != TL_OK;
}

static void tl_attn_tune_release(void *user, void *cand) {
  (void)user;
  tl_attn_cand_free(cand);
}

/* See tune_kernels.h. */
tl_status tl_attn_tune_space_new(tl_ctx *ctx, const int64_t *dims, int ndims, int variant, tl_dtype dt, int reduced,
                                 tl_tune_space **out, char *err, size_t errn) {
  (void)reduced;
  *out = NULL;
  if (ndims != 4 && ndims != 5) {
    tl_msg(err, errn, "attention: shape is BxHxSxD or BxHxSqxSkxD (optionally :causal), got %d sizes", ndims);
    return TL_ERR_SHAPE;
  }
  if (dt != TL_BF16 && dt != TL_F32) {
    tl_msg(err, errn, "attention: dtype %s is not tunable (bf16, f32)", tl_dtype_name(dt));
    return TL_ERR_DTYPE;
  }
  const int64_t B = dims[0], H = dims[1], Sq = dims[2], Sk = ndims == 5 ? dims[3] : dims[2], D = dims[ndims - 1];
  const int64_t lim = (int64_t)1 << 30;
  int64_t bh = 0, nq = 0, nk = 0;
  if (B < 1 || H < 1 || Sq < 1 || Sk < 1 || D < 1 || tl_mul_ovf(B, H, &bh) || tl_mul_ovf(bh, Sq, &nq) ||
      tl_mul_ovf(nq, D, &nq) || tl_mul_ovf(bh, Sk, &nk) || tl_mul_ovf(nk, D, &nk) || nq > lim || nk > lim) {
    tl_msg(err, errn, "attention: shape %lldx%lldx%lldx%lldx%lld: sizes must be positive and q, k, v at most 2^30 elements",
           (long long)B, (long long)H, (long long)Sq, (long long)Sk, (long long)D);
    return TL_ERR_SHAPE;
  }
  tl_status s = TL_ERR_NOMEM;
  tl_tune_space *sp = tl_calloc(1, sizeof *sp);
  tl_attn_tune_user *u = tl_calloc(1, sizeof *u);
  tl_attn_cand *heur = NULL;
  if (!sp || !u) goto fail;
  u->ctx = ctx, u->causal = variant != 0;
  u->bufs[0] = tl_tune_kernel_buf(dt, nq, 21);
  u->bufs[1] = tl_tune_kernel_buf(dt, nk, 22);
  u->bufs[2] = tl_tune_kernel_buf(dt, nk, 23);
  u->bufs[3] = tl_tune_kernel_buf(TL_F32, nq, 24);
  if (!u->bufs[0] || !u->bufs[1] || !u->bufs[2] || !u->bufs[3]) goto fail;
  const int64_t sq[4] = {B, H, Sq, D}, sk[4] = {B, H, Sk, D};
  u->q = tl_tensor_make(u->bufs[0], dt, 4, sq);
  u->k = tl_tensor_make(u->bufs[1], dt, 4, sk);
  u->v = tl_tensor_make(u->bufs[2], dt, 4, sk);
  u->o = tl_tensor_make(u->bufs[3], TL_F32, 4, sq);
  s = tl_attn_cand_new(ctx, &u->q, &u->k, &u->v, &u->o, u->causal, NULL, &heur);
  if (s != TL_OK) {
    tl_msg(err, errn, "%s", tl_ctx_error(ctx));
    goto fail;
  }
  tl_attn_cand_desc hd;
  tl_attn_cand_info(heur, &hd);
  tl_attn_cand_free(heur);
  u->decode = hd.decode;
  snprintf(sp->kernel, sizeof sp->kernel, "attention");
  sp->version = TL_ATTN_TUNE_VERSION;
  tl_attn_tune_key(&u->q, &u->k, &u->o, TL_DTYPE_INVALID, u->causal, sp->key, sizeof sp->key);
  sp->dtype = dt;
  static const int64_t bq_list[] = {16, 32, 64, 128, 256}, bk_list[] = {32, 64, 128, 256, 512};
  const int64_t bqcap = (Sq + 15) / 16 * 16, bkcap = (Sk + 15) / 16 * 16;
  if (u->decode) {
    sp->nparams = 1;
    sp->heuristic[0] = hd.bk;
    tl_tune_kernel_values(&sp->params[0], "BK", bk_list, 5, bkcap, hd.bk);
  } else {
    sp->nparams = 2;
    sp->heuristic[0] = hd.bq, sp->heuristic[1] = hd.bk;
    tl_tune_kernel_values(&sp->params[0], "BQ", bq_list, 5, bqcap, hd.bq);
    tl_tune_kernel_values(&sp->params[1], "BK", bk_list, 5, bkcap, hd.bk);
  }
  sp->user = u;
  sp->valid = tl_attn_tune_valid;
  sp->build = tl_attn_tune_build;
  sp->run = tl_attn_tune_run;
  sp->release = tl_attn_tune_release;
  sp->free_user = tl_attn_tune_free_user;
  *out = sp;
  return TL_OK;
fail:
  if (s == TL_ERR_NOMEM)
    tl_msg(err, errn, "attention: out of memory for %lldx%lldx%lldx%lldx%lld", (long long)B, (long long)H, (long long)Sq,
           (long long)Sk, (long long)D);
  tl_attn_tune_free_user(u);
  tl_free_mem(sp);
  return s;
}
