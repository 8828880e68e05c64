/* attention.c — tl_attention: argument checks, block sizes, the plan cache, the decode merge.
 * The kernels are described in attention_impl.h and docs/attention.md; the bodies are in
 * attention_body.c, the registry entry in attention_desc.c.
 *
 * Invariants: every refusal happens before anything runs (o untouched) and names the operand and
 * the numbers; a plan is keyed by everything that shapes it (shapes, strides, dtypes, causal,
 * mask presence, shape and strides), never by data pointers or the scale, which the body reads
 * from the run struct set before each run. Results depend on the ISA and the block sizes (fixed
 * per shape and budget), never on the thread count: the decode chunk count depends on Sk only
 * and the partials are merged on the calling thread in chunk order. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attention_impl.h"
#include "../tune/tune_impl.h"

#define TL_ATTN_CACHE 16

/* ---- checks ---- */

/* Byte span [lo, hi) of a row-major tensor with at least one element. */
static void tl_attn_span(const tl_tensor *t, uintptr_t *lo, uintptr_t *hi) {
  int64_t mn = 0, mx = 0;
  for (int d = 0; d < t->ndim; d++) {
    int64_t e = (t->shape[d] - 1) * t->stride[d];
    if (e < 0) mn += e;
    else mx += e;
  }
  const int64_t es = (int64_t)tl_dtype_size(t->dtype);
  *lo = (uintptr_t)t->data + (uintptr_t)(mn * es);
  *hi = (uintptr_t)t->data + (uintptr_t)((mx + 1) * es);
}

/* One of q, k, v, o: present, valid, row-major, 4-D, data unless empty. */
static tl_status tl_attn_check_t(tl_ctx *ctx, const tl_tensor *t, const char *name) {
  char msg[256], sh[96];
  if (!t) return tl_ctx_fail(ctx, TL_ERR_INVALID, "tl_attention: %s is NULL", name);
  tl_status s = tl_tensor_check(t, name, msg, sizeof msg);
  if (s != TL_OK) return tl_ctx_fail(ctx, s, "tl_attention: %s", msg);
  if (t->layout.tiled) return tl_ctx_fail(ctx, TL_ERR_INVALID, "tl_attention: %s is tiled; it must be row-major", name);
  if (t->ndim != 4)
    return tl_ctx_fail(ctx, TL_ERR_SHAPE, "tl_attention: %s is %s (%d dims); expected 4 dims [B, H, S, D]", name,
                       tl_shape_str(t, sh, sizeof sh), t->ndim);
  if (!t->data && tl_tensor_numel(t) > 0) return tl_ctx_fail(ctx, TL_ERR_INVALID, "tl_attention: %s has NULL data", name);
  return TL_OK;
}

/* Checks everything; on success *mask4 is the mask as a [B, Hq, Sq, Sk] view (zero strides where
 * it broadcasts), or has dtype TL_DTYPE_INVALID when there is no mask. */
static tl_status tl_attn_check(tl_ctx *ctx, const tl_tensor *q, const tl_tensor *k, const tl_tensor *v,
                               const tl_tensor *o, const tl_attention_opts *op, tl_tensor *mask4) {
  char sq[96], sk[96], sv[96], so[96], sm[96];
  tl_status s;
  if ((s = tl_attn_check_t(ctx, q, "q")) != TL_OK || (s = tl_attn_check_t(ctx, k, "k")) != TL_OK ||
      (s = tl_attn_check_t(ctx, v, "v")) != TL_OK || (s = tl_attn_check_t(ctx, o, "o")) != TL_OK)
    return s;
  /* (the shapes are formatted in the refusals' arguments only: every call comes here) */
  if (q->dtype != TL_F32 && q->dtype != TL_BF16)
    return tl_ctx_fail(ctx, TL_ERR_DTYPE, "tl_attention: q is %s; supported: f32, bf16", tl_dtype_name(q->dtype));
  if (k->dtype != q->dtype || v->dtype != q->dtype)
    return tl_ctx_fail(ctx, TL_ERR_DTYPE, "tl_attention: q, k, v must share a dtype (q %s, k %s, v %s)",
                       tl_dtype_name(q->dtype), tl_dtype_name(k->dtype), tl_dtype_name(v->dtype));
  if (o->dtype != TL_F32 && o->dtype != q->dtype)
    return tl_ctx_fail(ctx, TL_ERR_DTYPE, "tl_attention: o is %s; it must be f32 or q's dtype (%s)", tl_dtype_name(o->dtype),
                       tl_dtype_name(q->dtype));
  for (int d = 0; d < 4; d++)
    if (o->shape[d] != q->shape[d])
      return tl_ctx_fail(ctx, TL_ERR_SHAPE, "tl_attention: o is %s, expected q's shape %s", tl_shape_str(o, so, sizeof so),
                         tl_shape_str(q, sq, sizeof sq));
  for (int d = 0; d < 4; d++)
    if (v->shape[d] != k->shape[d])
      return tl_ctx_fail(ctx, TL_ERR_SHAPE, "tl_attention: v is %s, expected k's shape %s", tl_shape_str(v, sv, sizeof sv),
                         tl_shape_str(k, sk, sizeof sk));
  if (k->shape[0] != q->shape[0])
    return tl_ctx_fail(ctx, TL_ERR_SHAPE, "tl_attention: batch mismatch: q is %s (B = %lld), k is %s (B = %lld)",
                       tl_shape_str(q, sq, sizeof sq), (long long)q->shape[0], tl_shape_str(k, sk, sizeof sk),
                       (long long)k->shape[0]);
  if (k->shape[3] != q->shape[3])
    return tl_ctx_fail(ctx, TL_ERR_SHAPE, "tl_attention: head dim mismatch: q is %s (D = %lld), k is %s (D = %lld)",
                       tl_shape_str(q, sq, sizeof sq), (long long)q->shape[3], tl_shape_str(k, sk, sizeof sk),
                       (long long)k->shape[3]);
  const int64_t Hq = q->shape[1], Hkv = k->shape[1];
  if ((Hkv == 0 && Hq != 0) || (Hkv != 0 && Hq % Hkv != 0))
    return tl_ctx_fail(ctx, TL_ERR_SHAPE, "tl_attention: q has %lld heads and k %lld: Hq must be a multiple of Hkv (q %s, k %s)",
                       (long long)Hq, (long long)Hkv, tl_shape_str(q, sq, sizeof sq), tl_shape_str(k, sk, sizeof sk));
  if (op->causal != 0 && op->causal != 1)
    return tl_ctx_fail(ctx, TL_ERR_INVALID, "tl_attention: opts->causal is %d; expected 0 or 1", op->causal);
  if (!isfinite(op->scale))
    return tl_ctx_fail(ctx, TL_ERR_INVALID, "tl_attention: opts->scale is %g; it must be finite (0: 1/sqrt(D))", (double)op->scale);
  memset(mask4, 0, sizeof *mask4);
  mask4->dtype = TL_DTYPE_INVALID;
  const int64_t full[4] = {q->shape[0], Hq, q->shape[2], k->shape[2]};
  if (op->mask) {
    const tl_tensor *m = op->mask;
    char msg[256];
    s = tl_tensor_check(m, "mask", msg, sizeof msg);
    if (s != TL_OK) return tl_ctx_fail(ctx, s, "tl_attention: %s", msg);
    if (m->layout.tiled) return tl_ctx_fail(ctx, TL_ERR_INVALID, "tl_attention: mask is tiled; it must be row-major");
    if (m->dtype != TL_F32 && m->dtype != q->dtype)
      return tl_ctx_fail(ctx, TL_ERR_DTYPE, "tl_attention: mask is %s; it must be f32 or q's dtype (%s)", tl_dtype_name(m->dtype),
                         tl_dtype_name(q->dtype));
    if (m->ndim < 1 || m->ndim > 4)
      return tl_ctx_fail(ctx, TL_ERR_SHAPE, "tl_attention: mask is %s (%d dims); expected 1 to 4 dims broadcastable to [B, Hq, Sq, Sk] = [%lld, %lld, %lld, %lld]",
                         tl_shape_str(m, sm, sizeof sm), m->ndim, (long long)full[0], (long long)full[1], (long long)full[2],
                         (long long)full[3]);
    *mask4 = *m;
    mask4->ndim = 4;
    for (int d = 3, e = m->ndim - 1; d >= 0; d--, e--) {
      int64_t ms = e >= 0 ? m->shape[e] : 1;
      if (ms != full[d] && ms != 1)
        return tl_ctx_fail(ctx, TL_ERR_SHAPE, "tl_attention: mask is %s, not broadcastable to [B, Hq, Sq, Sk] = [%lld, %lld, %lld, %lld]: its dim %d is %lld",
                           tl_shape_str(m, sm, sizeof sm), (long long)full[0], (long long)full[1], (long long)full[2],
                           (long long)full[3], e, (long long)ms);
      mask4->shape[d] = full[d];
      mask4->stride[d] = (e >= 0 && ms == full[d] && full[d] != 1) ? m->stride[e] : 0;
    }
    if (!m->data && tl_tensor_numel(m) > 0) return tl_ctx_fail(ctx, TL_ERR_INVALID, "tl_attention: mask has NULL data");
  }
  /* o may not address one element twice, nor overlap an input (the kernel reads K, V and the
   * mask while O is written) */
  int d0, d1;
  if (tl_view_self_overlaps(o, &d0, &d1))
    return tl_ctx_fail(ctx, TL_ERR_INVALID, "tl_attention: o addresses some elements twice (dims %d and %d, strides %lld and %lld)",
                       d0, d1, (long long)o->stride[d0], (long long)o->stride[d1]);
  if (tl_tensor_numel(o) > 0) {
    uintptr_t olo, ohi, lo, hi;
    tl_attn_span(o, &olo, &ohi);
    const tl_tensor *ins[4] = {q, k, v, op->mask};
    const char *nm[4] = {"q", "k", "v", "mask"};
    for (int i = 0; i < 4; i++) {
      if (!ins[i] || tl_tensor_numel(ins[i]) <= 0) continue;
      tl_attn_span(ins[i], &lo, &hi);
      if (lo < ohi && olo < hi)
        return tl_ctx_fail(ctx, TL_ERR_INVALID, "tl_attention: o overlaps %s in memory (o spans %#lx..%#lx, %s %#lx..%#lx)", nm[i],
                           (unsigned long)olo, (unsigned long)ohi, nm[i], (unsigned long)lo, (unsigned long)hi);
    }
  }
  return TL_OK;
}

/* ---- config and build ---- */

typedef struct tl_attn_build {
  tl_kernel k;
  tl_blockspec in[4], out[2];
  tl_tensor tin[4], tout[2];
  tl_scratch scr[TL_ATTN_NSCR];
  int64_t ws_elems[3]; /* decode: partial O, (m, l), merge weights (floats) */
} tl_attn_build;

static int64_t tl_attn_round(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

/* Bytes a step keeps in the staging budget for rows x bk blocks (double: no overflow for any
 * shape the checks let through). */
static double tl_attn_need(const tl_attn_run *r, int64_t rows, int64_t bk) {
  const double es = (double)tl_dtype_size(r->dt), oes = r->decode ? 4 : (double)tl_dtype_size(r->odt);
  const double mes = r->mdt != TL_DTYPE_INVALID ? (double)tl_dtype_size(r->mdt) : 0;
  const double R = (double)rows, B = (double)bk, D = (double)r->D, Dp = (double)tl_attn_round(r->D, 16);
  return R * D * (es + oes + 4) + R * B * (4 * (1 + r->decode) + 2 + mes) + (r->decode ? R * D * 4 : 0) + 2 * B * Dp * es + R * 16;
}

/* Picks the blocks from the budget; decode stays off when its rows do not fit. cfg (NULL: none)
 * = {bq, bk}: an entry > 0 replaces the heuristic's value (bq on the prefill path only) after the
 * decode decision; whether the result fits is tl_attn_fits's to say. */
static void tl_attn_config(const tl_ctx_info *info, tl_attn_run *r, const int64_t *cfg) {
  const double budget = (double)info->vmem_bytes * 0.9;
  if (r->decode) {
    r->rows = r->group * r->Sq;
    r->bk = r->rows <= TL_ATTN_VEC_ROWS ? 512 : 128; /* vector path: longer blocks, fewer steps */
    while (r->bk > 32 && tl_attn_need(r, r->rows, r->bk) > budget) r->bk /= 2;
    if (tl_attn_need(r, r->rows, r->bk) > budget) r->decode = 0;
  }
  if (r->decode) {
    if (cfg && cfg[1] > 0) r->bk = cfg[1];
    /* chunks from Sk alone: about 16 of them, each a whole number of blocks */
    const int64_t nkb = TL_CDIV(r->Sk, r->bk);
    int64_t nb = nkb / 16 > 0 ? nkb / 16 : 1;
    for (int tries = 0; nkb % nb && tries < 4096; tries++) nb--;
    if (nkb % nb) nb = 1; /* no divisor near: one block per chunk */
    r->chunk_blocks = nb, r->nchunk = nkb / nb;
    return;
  }
  r->bq = r->Sq >= 256 ? 256 : tl_attn_round(r->Sq, 16); /* 256: +10% over 128 (K^T staged per Q block) */
  r->bk = 128;
  while (tl_attn_need(r, r->bq, r->bk) > budget) {
    if (r->bk > 32) r->bk /= 2;
    else if (r->bq > 16) r->bq = tl_attn_round(r->bq / 2, 16);
    else break; /* tl_attention refuses it (tl_attn_fits) before anything runs */
  }
  if (cfg && cfg[0] > 0) r->bq = cfg[0];
  if (cfg && cfg[1] > 0) r->bk = cfg[1];
  r->rows = r->bq;
}

/* 1 when the chosen blocks fit the staging budget: the outer plan checks only Q, O and the
 * scratch, the K / V / mask blocks are the inner grids' and would fail mid-run. */
static int tl_attn_fits(const tl_ctx_info *info, const tl_attn_run *r) {
  return tl_attn_need(r, r->rows, r->bk) <= (double)info->vmem_bytes * 0.9;
}

/* Fills run (geometry, dtypes, blocks) and the kernel. Tensors' data are the caller's. */
static void tl_attn_prepare(const tl_ctx_info *info, const tl_tensor *q, const tl_tensor *k, const tl_tensor *v,
                            const tl_tensor *o, const tl_tensor *mask4, int causal, int allow_decode, const int64_t *cfg,
                            tl_attn_run *r, tl_attn_build *bd) {
  memset(bd, 0, sizeof *bd);
  memset(r, 0, sizeof *r);
  r->B = q->shape[0], r->Hq = q->shape[1], r->Sq = q->shape[2], r->D = q->shape[3];
  r->Hkv = k->shape[1], r->Sk = k->shape[2], r->group = r->Hq / r->Hkv;
  r->causal = causal, r->dt = q->dtype, r->odt = o->dtype, r->mdt = mask4->dtype;
  r->k = *k, r->v = *v, r->mask = *mask4;
  r->decode = allow_decode && r->Sq <= TL_ATTN_DECODE_MAX_SQ;
  tl_attn_config(info, r, cfg);
  r->vec_rows = r->decode && r->rows <= TL_ATTN_VEC_ROWS;
  if (r->dt == TL_BF16 && !r->vec_rows) r->v_layout = (tl_layout){.tiled = 1, .vnni = 2, .tile_r = (uint16_t)r->bk, .tile_c = 16};
  const int has_mask = r->mdt != TL_DTYPE_INVALID;
  const int64_t D = r->D;
  int64_t flops = 0;
  if (tl_mul_ovf(4 * r->B * r->Hq, r->Sq, &flops) || tl_mul_ovf(flops, r->Sk, &flops) || tl_mul_ovf(flops, D, &flops)) flops = 0;
  if (causal && flops) { /* only the visible part: row i sees i + off keys, off = Sk - Sq + 1 (clamped at 0) */
    const int64_t off = r->Sk - r->Sq + 1, lo = off > 0 ? 0 : 1 - off; /* first row that sees a key */
    const double n = lo < r->Sq ? (double)(r->Sq - lo) : 0.0;
    const double seen = n * (double)(lo + off) + n * (n - 1) / 2;
    flops = (int64_t)((double)flops * seen / ((double)r->Sq * (double)r->Sk));
  }
  const int64_t rows = r->rows, bk = r->bk;
  bd->scr[TL_ATTN_SCR_ACC] = (tl_scratch){.dtype = TL_F32, .ndim = 2, .shape = {rows, D}};
  bd->scr[TL_ATTN_SCR_ML] = (tl_scratch){.dtype = TL_F32, .ndim = 2, .shape = {2, rows}};
  /* decode: S, S^T and q in f32 */
  bd->scr[TL_ATTN_SCR_S] = (tl_scratch){.dtype = TL_F32, .ndim = 2, .shape = {rows, r->decode ? 2 * bk + D : bk}};
  bd->scr[TL_ATTN_SCR_P] = (tl_scratch){.dtype = TL_BF16, .ndim = 2, .shape = {r->dt == TL_BF16 ? rows : 1, r->dt == TL_BF16 ? bk : 1}};
  if (!r->decode) {
    bd->in[0] = (tl_blockspec){.ndim = 4, .block = {1, 1, r->bq, D}, .map = "b, h, i -> b, h, i, 0", .stage = TL_STAGE_ALWAYS};
    bd->tin[0] = *q;
    bd->out[0] = (tl_blockspec){.ndim = 4, .block = {1, 1, r->bq, D}, .map = "b, h, i -> b, h, i, 0",
                                .stage = o->stride[3] == 1 ? TL_STAGE_AUTO : TL_STAGE_ALWAYS};
    bd->tout[0] = *o;
    bd->k = (tl_kernel){.name = "attention", .body = tl_attn_prefill_body, .grid_ndim = 3,
                        .grid = {r->B, r->Hq, TL_CDIV(r->Sq, r->bq)}, .sem = {TL_PARALLEL, TL_PARALLEL, TL_PARALLEL},
                        .n_in = 1, .n_out = 1, .n_scratch = TL_ATTN_NSCR, .flops = flops};
  } else {
    const int64_t g = r->group, nb = r->chunk_blocks;
    snprintf(r->map_kv, sizeof r->map_kv, "b, h, c, j -> b, h, %lld * c + j, 0", (long long)nb);
    snprintf(r->map_mask, sizeof r->map_mask, "b, h, c, j -> b, h, 0, %lld * c + j", (long long)nb);
    int n = 0;
    bd->in[n] = (tl_blockspec){.ndim = 4, .block = {1, g, r->Sq, D}, .map = "b, h, c, j -> b, h, 0, 0", .stage = TL_STAGE_ALWAYS};
    bd->tin[n++] = *q;
    bd->in[n] = (tl_blockspec){.ndim = 4, .block = {1, 1, bk, D}, .map = r->map_kv,
                               .stage = k->stride[3] == 1 ? TL_STAGE_AUTO : TL_STAGE_ALWAYS}; /* K is the A operand */
    bd->tin[n++] = *k;
    bd->in[n] = (tl_blockspec){.ndim = 4, .block = {1, 1, bk, D}, .map = r->map_kv, .layout = r->v_layout,
                               .stage = r->vec_rows && v->stride[3] != 1 ? TL_STAGE_ALWAYS : TL_STAGE_AUTO};
    bd->tin[n++] = *v;
    if (has_mask) {
      bd->in[n] = (tl_blockspec){.ndim = 4, .block = {1, g, r->Sq, bk}, .map = r->map_mask, .stage = TL_STAGE_ALWAYS};
      bd->tin[n++] = *mask4;
    }
    const int64_t po[5] = {r->B, r->Hkv, r->nchunk, rows, D}, pml[5] = {r->B, r->Hkv, r->nchunk, rows, 2};
    bd->out[0] = (tl_blockspec){.ndim = 5, .block = {1, 1, 1, rows, D}, .map = "b, h, c, j -> b, h, c, 0, 0"};
    bd->out[1] = (tl_blockspec){.ndim = 5, .block = {1, 1, 1, rows, 2}, .map = "b, h, c, j -> b, h, c, 0, 0"};
    bd->tout[0] = tl_tensor_make(NULL, TL_F32, 5, po);
    bd->tout[1] = tl_tensor_make(NULL, TL_F32, 5, pml);
    bd->ws_elems[0] = tl_tensor_numel(&bd->tout[0]), bd->ws_elems[1] = tl_tensor_numel(&bd->tout[1]);
    bd->ws_elems[2] = 2 * r->nchunk + 2; /* doubles, 8-byte aligned after the two float arrays */
    bd->k = (tl_kernel){.name = "attention decode", .body = tl_attn_decode_body, .grid_ndim = 4,
                        .grid = {r->B, r->Hkv, r->nchunk, nb}, .sem = {TL_PARALLEL, TL_PARALLEL, TL_PARALLEL, TL_ARBITRARY},
                        .n_in = n, .n_out = 2, .n_scratch = TL_ATTN_NSCR, .flops = flops};
  }
}

static void tl_attn_fixup(tl_attn_build *bd, tl_attn_run *r) {
  bd->k.in = bd->in, bd->k.out = bd->out, bd->k.scratch = bd->scr, bd->k.user = r;
}

/* ---- the plan cache (a context slot) ---- */

typedef struct tl_attn_key {
  tl_tensor t[5]; /* q, k, v, o, mask: data NULL */
  int causal;
} tl_attn_key;

typedef struct tl_attn_entry {
  int used;
  uint64_t stamp;
  tl_attn_key key;
  tl_plan *plan;
  tl_attn_build bd;
  tl_attn_run run;
  float *ws; /* decode partials, owned */
} tl_attn_entry;

typedef struct tl_attn_cache {
  uint64_t clock;
  int plans_made;
  tl_attn_entry *last;
  tl_attn_entry e[TL_ATTN_CACHE];
} tl_attn_cache;

/* Plans are freed by tl_ctx_free before the slots: the workspaces and the cache are ours. */
static void tl_attn_cache_free(void *state) {
  tl_attn_cache *c = state;
  for (int i = 0; c && i < TL_ATTN_CACHE; i++) tl_aligned_free(c->e[i].ws);
  tl_free_mem(c);
}
static const tl_slot_class tl_attn_slot = {.name = "attention plans", .free_state = tl_attn_cache_free};

static void tl_attn_key_tensor(tl_tensor *dst, const tl_tensor *t) {
  memset(dst, 0, sizeof *dst);
  if (!t || t->dtype == TL_DTYPE_INVALID) return;
  dst->dtype = t->dtype, dst->ndim = t->ndim;
  for (int d = 0; d < t->ndim && d < TL_MAX_DIMS; d++) dst->shape[d] = t->shape[d], dst->stride[d] = t->stride[d];
}

static tl_attn_cache *tl_attn_cache_get(tl_ctx *ctx, int create) {
  tl_attn_cache *cache = tl_ctx_slot_get(ctx, &tl_attn_slot);
  if (cache || !create) return cache;
  cache = tl_calloc(1, sizeof *cache);
  if (!cache) return NULL;
  if (tl_ctx_slot_set(ctx, &tl_attn_slot, cache) != TL_OK) {
    tl_free_mem(cache);
    return NULL;
  }
  return cache;
}

static tl_attn_entry *tl_attn_cache_lookup(tl_attn_cache *cache, const tl_attn_key *key) {
  tl_attn_entry *victim = &cache->e[0];
  for (int i = 0; i < TL_ATTN_CACHE; i++) {
    tl_attn_entry *e = &cache->e[i];
    if (e->used && !memcmp(&e->key, key, sizeof *key)) {
      e->stamp = ++cache->clock;
      return e;
    }
    if (!e->used) victim = e;
    else if (victim->used && e->stamp < victim->stamp) victim = e;
  }
  if (victim->used) tl_plan_free(victim->plan);
  tl_aligned_free(victim->ws);
  if (cache->last == victim) cache->last = NULL;
  memset(victim, 0, sizeof *victim);
  victim->key = *key;
  victim->stamp = ++cache->clock;
  return victim;
}

void tl_attn_last_get(const tl_ctx *ctx, tl_attn_last *out) {
  memset(out, 0, sizeof *out);
  tl_attn_cache *c = ctx ? tl_ctx_slot_get(ctx, &tl_attn_slot) : NULL;
  if (!c) return;
  out->plans_made = c->plans_made;
  if (!c->last) return;
  const tl_attn_entry *e = c->last;
  out->plan = e->plan, out->decode = e->run.decode;
  out->bq = e->run.bq, out->bk = e->run.bk, out->nchunk = e->run.nchunk;
  tl_attn_counts(&e->run, &out->kv_blocks, &out->kv_bytes);
}

/* ---- decode merge ---- */

/* o[b, h, s, :] from the chunks' (m, l, acc) in chunk order (log-sum-exp, in double). */
static void tl_attn_merge(const tl_attn_run *r, const float *po, const float *pml, double *w, const tl_tensor *o) {
  const int64_t NC = r->nchunk, M = r->rows, D = r->D;
  const size_t oes = tl_dtype_size(o->dtype);
  for (int64_t b = 0; b < r->B; b++)
    for (int64_t hk = 0; hk < r->Hkv; hk++)
      for (int64_t row = 0; row < M; row++) {
        const int64_t h = hk * r->group + row / r->Sq, s = row % r->Sq;
        const int64_t base = (b * r->Hkv + hk) * NC;
        float mx = -INFINITY;
        for (int64_t c = 0; c < NC; c++) {
          float mc = pml[((base + c) * M + row) * 2];
          mx = (mc > mx || mc != mc) ? mc : mx;
        }
        double L = 0;
        for (int64_t c = 0; c < NC; c++) {
          const float *ml = &pml[((base + c) * M + row) * 2];
          w[c] = ml[0] == -INFINITY ? 0.0 : exp((double)ml[0] - (double)mx);
          L += (double)ml[1] * w[c];
        }
        char *orow = (char *)o->data + (size_t)(b * o->stride[0] + h * o->stride[1] + s * o->stride[2]) * oes;
        for (int64_t d = 0; d < D; d++) {
          double acc = 0;
          if (mx != -INFINITY)
            for (int64_t c = 0; c < NC; c++) acc += w[c] == 0.0 ? 0.0 : w[c] * (double)po[((base + c) * M + row) * D + d];
          double val = mx == -INFINITY || L == 0.0 ? 0.0 : acc / L;
          tl_store_f64(orow, o->dtype, d * o->stride[3], val);
        }
      }
}

/* ---- building and running a plan (tl_attention's cache entries and the tuner's candidates) ---- */

/* Prepares with cfg (NULL: the heuristic), checks the staging budget, allocates the decode
 * workspace and makes the plan into r, bd, *plan, *ws (r and bd stay where they are: the kernel
 * points at them). On failure nothing is kept and the message is on ctx. */
static tl_status tl_attn_make(tl_ctx *ctx, const tl_ctx_info *info, const tl_tensor *q, const tl_tensor *k,
                              const tl_tensor *v, const tl_tensor *o, const tl_tensor *mask4, int causal, const int64_t *cfg,
                              tl_attn_run *r, tl_attn_build *bd, tl_plan **plan, float **ws) {
  *plan = NULL, *ws = NULL;
  tl_attn_prepare(info, q, k, v, o, mask4, causal, 1, cfg, r, bd);
  if (!tl_attn_fits(info, r)) {
    const double need = tl_attn_need(r, r->rows, r->bk);
    if (cfg)
      return tl_ctx_fail(ctx, TL_ERR_VMEM, "tl_attention: blocks of %lld query rows x %lld keys need %.0f KiB of staging per thread, the budget is %.0f KiB",
                         (long long)r->rows, (long long)r->bk, need / 1024, (double)info->vmem_bytes * 0.9 / 1024);
    return tl_ctx_fail(ctx, TL_ERR_VMEM,
                       "tl_attention: head dim D = %lld needs %.0f KiB of staging per thread with the smallest blocks "
                       "(%lld query rows x %lld keys), the budget is %.0f KiB",
                       (long long)q->shape[3], need / 1024, (long long)r->rows, (long long)r->bk,
                       (double)info->vmem_bytes * 0.9 / 1024);
  }
  tl_attn_fixup(bd, r);
  if (r->decode) {
    const int64_t n = bd->ws_elems[0] + bd->ws_elems[1] + 1 + bd->ws_elems[2];
    *ws = tl_aligned_alloc(64, (size_t)n * sizeof(float));
    if (!*ws) return tl_ctx_fail(ctx, TL_ERR_NOMEM, "tl_attention: out of memory for %lld bytes of decode partials", (long long)n * 4);
    bd->tout[0].data = *ws, bd->tout[1].data = *ws + bd->ws_elems[0];
  }
  tl_status s = tl_plan_new(ctx, &bd->k, bd->tin, bd->tout, plan);
  if (s != TL_OK) {
    tl_aligned_free(*ws);
    *ws = NULL, *plan = NULL;
  }
  return s;
}

/* One run of a made plan on these tensors' data (shapes as at make time) with this scale. */
static tl_status tl_attn_exec(tl_plan *plan, const tl_attn_build *bd, tl_attn_run *r, float *ws, const tl_tensor *q,
                              const tl_tensor *k, const tl_tensor *v, const tl_tensor *o, const void *mask_data, float scale) {
  r->scale = scale != 0.0f ? scale : (float)(1.0 / sqrt((double)r->D));
  r->k.data = k->data, r->v.data = v->data, r->mask.data = (void *)(uintptr_t)mask_data;
  memset(r->wc, 0, sizeof r->wc);
  tl_tensor tin[4], tout[2];
  memcpy(tin, bd->tin, sizeof tin);
  memcpy(tout, bd->tout, sizeof tout);
  if (!r->decode) {
    tin[0].data = q->data, tout[0].data = o->data;
    return tl_plan_run(plan, tin, tout);
  }
  tin[0].data = q->data, tin[1].data = k->data, tin[2].data = v->data;
  if (r->mdt != TL_DTYPE_INVALID) tin[3].data = (void *)(uintptr_t)mask_data;
  tl_status s = tl_plan_run(plan, tin, tout);
  if (s == TL_OK) {
    const int64_t woff = (bd->ws_elems[0] + bd->ws_elems[1] + 1) / 2 * 2; /* floats, even: 8-byte aligned */
    tl_attn_merge(r, ws, ws + bd->ws_elems[0], (double *)(void *)(ws + woff), o);
  }
  return s;
}

/* ---- tuned configs (docs/tune.md) ---- */

/* See attention_impl.h. */
void tl_attn_tune_key(const tl_tensor *q, const tl_tensor *k, const tl_tensor *o, tl_dtype mask_dt, int causal, char *key,
                      size_t n) {
  snprintf(key, n, "%s.%s b%lld hq%lld hkv%lld sq%lld sk%lld d%lld causal%d mask%s", tl_dtype_name(q->dtype),
           tl_dtype_name(o->dtype), (long long)q->shape[0], (long long)q->shape[1], (long long)k->shape[1],
           (long long)q->shape[2], (long long)k->shape[2], (long long)q->shape[3], causal,
           mask_dt == TL_DTYPE_INVALID ? "-" : tl_dtype_name(mask_dt));
}

/* The tuned {bq, bk} for this problem into cfg: 1, or 0 (tuning off, no row, or a row that is
 * malformed or breaks the alignment: then a warning on ctx) with cfg untouched. */
static int tl_attn_tuned_cfg(tl_ctx *ctx, const tl_tensor *q, const tl_tensor *k, const tl_tensor *o, const tl_tensor *mask4,
                             int causal, int64_t *cfg) {
  if (!ctx->info.tune) return 0;
  char key[TL_TUNE_KEY_MAX];
  tl_attn_tune_key(q, k, o, mask4->dtype, causal, key, sizeof key);
  const char *text = tl_tune_lookup(ctx, "attention", TL_ATTN_TUNE_VERSION, key);
  if (!text) return 0;
  tl_tune_space names = {.nparams = 2, .params = {{.name = "BQ"}, {.name = "BK"}}};
  int64_t c[2] = {0, 0}; /* 0: a name the row lacks keeps the heuristic's value */
  if (tl_tune_cfg_parse(&names, text, c) != 0 || c[0] < 0 || c[1] < 0 || (c[0] == 0 && c[1] == 0)) {
    tl_ctx_warn(ctx, "tl_attention: tuned config '%.200s' for %s is malformed: using the heuristic's", text, key);
    return 0;
  }
  /* the DB is outside input: hold it to the rules the tuner's space keeps (whole 16-row tiles) */
  if ((c[0] && (c[0] < 16 || c[0] % 16)) || (c[1] && (c[1] < 16 || c[1] % 16))) {
    tl_ctx_warn(ctx, "tl_attention: tuned config '%.200s' for %s breaks the tile alignment (BQ and BK multiples of 16, "
                "at least 16): using the heuristic's", text, key);
    return 0;
  }
  cfg[0] = c[0], cfg[1] = c[1];
  return 1;
}

/* tl_attn_make with the tuned blocks when the DB has them and the budget and the executor take
 * them, else (with a warning when tuned ones were refused) the heuristic's. *tuned (may be
 * NULL): 1 when the tuned blocks were taken. tl_attention and the registry's instance (explain,
 * roofline) both decide through it. */
static tl_status tl_attn_make_tuned(tl_ctx *ctx, const tl_tensor *q, const tl_tensor *k, const tl_tensor *v,
                                    const tl_tensor *o, const tl_tensor *mask4, int causal, tl_attn_run *r,
                                    tl_attn_build *bd, tl_plan **plan, float **ws, int *tuned) {
  tl_ctx_info info;
  tl_ctx_info_get(ctx, &info);
  int64_t cfg[2];
  int tu = tl_attn_tuned_cfg(ctx, q, k, o, mask4, causal, cfg);
  tl_status s = tl_attn_make(ctx, &info, q, k, v, o, mask4, causal, tu ? cfg : NULL, r, bd, plan, ws);
  if (s != TL_OK && tu) {
    tl_ctx_warn(ctx, "tl_attention: tuned config BQ=%lld BK=%lld refused (%s): using the heuristic's", (long long)cfg[0],
                (long long)cfg[1], tl_ctx_error(ctx));
    tu = 0;
    s = tl_attn_make(ctx, &info, q, k, v, o, mask4, causal, NULL, r, bd, plan, ws);
  }
  if (tuned) *tuned = tu && s == TL_OK;
  return s;
}

/* ---- the tuner's candidates ---- */

struct tl_attn_cand {
  tl_attn_run run;
  tl_attn_build bd;
  tl_plan *plan;
  float *ws;
};

/* See attention_impl.h. */
tl_status tl_attn_cand_new(tl_ctx *ctx, const tl_tensor *q, const tl_tensor *k, const tl_tensor *v, const tl_tensor *o,
                           int causal, const int64_t *cfg, tl_attn_cand **out) {
  *out = NULL;
  tl_attn_cand *c = tl_aligned_alloc(64, sizeof *c);
  if (!c) return tl_ctx_fail(ctx, TL_ERR_NOMEM, "tl_attention: out of memory for a tuning candidate");
  memset(c, 0, sizeof *c);
  tl_ctx_info info;
  tl_ctx_info_get(ctx, &info);
  tl_tensor m4;
  memset(&m4, 0, sizeof m4);
  m4.dtype = TL_DTYPE_INVALID;
  tl_status s = tl_attn_make(ctx, &info, q, k, v, o, &m4, causal, cfg, &c->run, &c->bd, &c->plan, &c->ws);
  if (s != TL_OK) {
    tl_aligned_free(c);
    return s;
  }
  *out = c;
  return TL_OK;
}

tl_status tl_attn_cand_run(tl_attn_cand *c, const tl_tensor *q, const tl_tensor *k, const tl_tensor *v, const tl_tensor *o) {
  return tl_attn_exec(c->plan, &c->bd, &c->run, c->ws, q, k, v, o, NULL, 0.0f);
}

void tl_attn_cand_info(const tl_attn_cand *c, tl_attn_cand_desc *d) {
  const tl_attn_run *r = &c->run;
  memset(d, 0, sizeof *d);
  d->plan = c->plan, d->decode = r->decode, d->bq = r->bq, d->bk = r->bk;
  const int64_t nkb = TL_CDIV(r->Sk, r->bk);
  if (r->decode) {
    d->par_blocks = r->B * r->Hkv * r->nchunk;
    d->steps = d->par_blocks * r->chunk_blocks;
  } else {
    d->par_blocks = r->B * r->Hq * TL_CDIV(r->Sq, r->bq);
    d->steps = d->par_blocks * (r->causal ? (nkb + 1) / 2 : nkb);
  }
}

void tl_attn_cand_free(tl_attn_cand *c) {
  if (!c) return;
  tl_plan_free(c->plan);
  tl_aligned_free(c->ws);
  tl_aligned_free(c);
}

/* ---- tl_attention ---- */

tl_status tl_attention(tl_ctx *ctx, const tl_tensor *q, const tl_tensor *k, const tl_tensor *v, tl_tensor *o,
                       const tl_attention_opts *opts) {
  if (!ctx) return tl_fail_tls(TL_ERR_INVALID, "tl_attention: ctx is NULL");
  const tl_attention_opts defaults = TL_ATTENTION_OPTS_INIT;
  const tl_attention_opts *op = opts ? opts : &defaults;
  tl_tensor mask4;
  tl_status s = tl_attn_check(ctx, q, k, v, o, op, &mask4);
  if (s != TL_OK) return s;
  if (tl_tensor_numel(o) == 0) {
    tl_ctx_ok(ctx);
    return TL_OK;
  }
  if (k->shape[2] == 0) { /* no keys: every row is fully masked, so it outputs 0 */
    const size_t oes = tl_dtype_size(o->dtype);
    for (int64_t b = 0; b < o->shape[0]; b++)
      for (int64_t h = 0; h < o->shape[1]; h++)
        for (int64_t i = 0; i < o->shape[2]; i++)
          for (int64_t d = 0; d < o->shape[3]; d++)
            memset((char *)o->data + (size_t)(b * o->stride[0] + h * o->stride[1] + i * o->stride[2] + d * o->stride[3]) * oes, 0, oes);
    tl_ctx_ok(ctx);
    return TL_OK;
  }
  tl_attn_cache *cache = tl_attn_cache_get(ctx, 1);
  if (!cache) return tl_ctx_fail(ctx, TL_ERR_NOMEM, "tl_attention: out of memory for the plan cache");
  tl_attn_key key;
  memset(&key, 0, sizeof key);
  const tl_tensor *kt[5] = {q, k, v, o, &mask4};
  for (int i = 0; i < 5; i++) tl_attn_key_tensor(&key.t[i], kt[i]);
  key.causal = op->causal;
  tl_attn_entry *e = tl_attn_cache_lookup(cache, &key);
  if (!e->used) {
    /* a new plan: the tuned config when the DB has one for this problem (looked up only here,
     * so cached calls never pay for it), else the heuristic's */
    s = tl_attn_make_tuned(ctx, q, k, v, o, &mask4, op->causal, &e->run, &e->bd, &e->plan, &e->ws, NULL);
    if (s != TL_OK) {
      memset(e, 0, sizeof *e); /* the entry stays free */
      return s;
    }
    e->used = 1;
    cache->plans_made++;
  }
  /* what is not part of the key: data and the scale */
  cache->last = e;
  s = tl_attn_exec(e->plan, &e->bd, &e->run, e->ws, q, k, v, o, mask4.data, op->scale);
  if (s != TL_OK) return s;
  tl_ctx_ok(ctx);
  return TL_OK;
}

/* ---- the registry entry (tilec explain / roofline) ---- */

/* Buffer slot `slot` of n random bf16 values in [-1, 1) (deterministic from seed). */
static uint16_t *tl_attn_kcase_bf16(tl_kcase *kc, int slot, int tmp_slot, int64_t n, uint64_t seed) {
  if (tl_kcase_dry()) /* allocated, not converted */
    return kc->bufs[slot] = tl_aligned_alloc(64, (size_t)(n > 0 ? n : 1) * 2);
  float *f = tl_kcase_alloc_f32(kc, tmp_slot, n, -1.0, 1.0, seed);
  uint16_t *h = f ? tl_aligned_alloc(64, (size_t)(n > 0 ? n : 1) * 2) : NULL;
  if (h)
    for (int64_t i = 0; i < n; i++) h[i] = tl_f32_to_bf16(f[i]);
  tl_aligned_free(f);
  kc->bufs[tmp_slot] = NULL;
  kc->bufs[slot] = h;
  return h;
}

/* "BxHxSxD" (Sq = Sk = S) or "BxHxSqxSkxD": bf16 q, k, v (Hkv = H), f32 o, full attention, the
 * prefill kernel (also for Sq <= 16; K/V stream through its inner grids, which the plan's cost
 * does not count: the cost holds Q and O only). */
static tl_status tl_attn_kmake(tl_ctx *ctx, const char *shape, tl_kcase *kc, char *err, size_t errn) {
  int64_t d[5];
  int n = tl_shape_parse(shape ? shape : "1x8x2048x128", d, 5, err, errn);
  if (n < 0) return TL_ERR_SHAPE;
  if (n != 4 && n != 5) {
    tl_msg(err, errn, "attention: shape is BxHxSxD or BxHxSqxSkxD, got %d sizes", n);
    return TL_ERR_SHAPE;
  }
  const int64_t B = d[0], H = d[1], Sq = d[2], Sk = n == 5 ? d[3] : d[2], D = d[n - 1];
  int64_t bh = tl_kcase_elems(B, H, "attention heads", err, errn);
  if (bh < 0 || tl_kcase_elems(bh * Sq, D, "attention q", err, errn) < 0 ||
      tl_kcase_elems(bh * Sk, D, "attention k", err, errn) < 0)
    return TL_ERR_SHAPE;
  memset(kc, 0, sizeof *kc);
  snprintf(kc->name, sizeof kc->name, "attention");
  snprintf(kc->shape, sizeof kc->shape, "%lldx%lldx%lldx%lldx%lld", (long long)B, (long long)H, (long long)Sq, (long long)Sk,
           (long long)D);
  kc->dtype = TL_BF16;
  uint16_t *qd = tl_attn_kcase_bf16(kc, 0, 4, bh * Sq * D, 11), *kd = tl_attn_kcase_bf16(kc, 1, 4, bh * Sk * D, 12);
  uint16_t *vd = tl_attn_kcase_bf16(kc, 2, 4, bh * Sk * D, 13);
  float *od = tl_aligned_alloc(64, (size_t)(bh * Sq * D > 0 ? bh * Sq * D : 1) * 4);
  kc->bufs[3] = od;
  tl_attn_run *run = tl_calloc(1, sizeof *run);
  kc->user = run;
  if (!qd || !kd || !vd || !od || !run) {
    tl_kcase_free(kc);
    tl_msg(err, errn, "out of memory for attention %s", kc->shape);
    return TL_ERR_NOMEM;
  }
  const int64_t sq[4] = {B, H, Sq, D}, sk[4] = {B, H, Sk, D};
  tl_tensor q = tl_tensor_make(qd, TL_BF16, 4, sq), k = tl_tensor_make(kd, TL_BF16, 4, sk);
  tl_tensor v = tl_tensor_make(vd, TL_BF16, 4, sk), o = tl_tensor_make(od, TL_F32, 4, sq), m4;
  memset(&m4, 0, sizeof m4);
  tl_ctx_info info;
  tl_ctx_info_get(ctx, &info);
  tl_attn_build *bd = tl_calloc(1, sizeof *bd);
  if (!bd) {
    tl_kcase_free(kc);
    tl_msg(err, errn, "out of memory for attention %s", kc->shape);
    return TL_ERR_NOMEM;
  }
  /* from Sq = 17 (prefill) the build tl_attention would plan, decided the same way (until
   * 2026-11-26 explain and roofline used the heuristic's blocks whatever the tuning DB held); the
   * plan is explain's to make. Up to 16 query rows tl_attention decodes, which is not this
   * kernel: the heuristic's prefill blocks */
  int tuned = 0;
  tl_plan *plan = NULL;
  float *ws = NULL;
  if (Sq <= TL_ATTN_DECODE_MAX_SQ || tl_attn_make_tuned(ctx, &q, &k, &v, &o, &m4, 0, run, bd, &plan, &ws, &tuned) != TL_OK)
    tl_attn_prepare(&info, &q, &k, &v, &o, &m4, 0, 0, NULL, run, bd);
  tl_plan_free(plan);
  tl_aligned_free(ws);
  if (tuned) snprintf(kc->config, sizeof kc->config, "tuning DB: BQ=%lld BK=%lld", (long long)run->bq, (long long)run->bk);
  if (!tl_attn_fits(&info, run)) {
    tl_msg(err, errn, "attention %s: head dim %lld does not fit the staging budget (%.0f KiB)", kc->shape, (long long)D,
           (double)info.vmem_bytes / 1024);
    tl_free_mem(bd);
    tl_kcase_free(kc);
    return TL_ERR_VMEM;
  }
  run->scale = (float)(1.0 / sqrt((double)D));
  kc->k = bd->k;
  kc->specs[0] = bd->in[0], kc->specs[1] = bd->out[0];
  kc->in[0] = bd->tin[0], kc->out[0] = bd->tout[0];
  for (int i = 0; i < TL_ATTN_NSCR; i++) kc->scratch[i] = bd->scr[i];
  tl_free_mem(bd);
  kc->k.name = kc->name, kc->k.user = run;
  kc->k.in = &kc->specs[0], kc->k.out = &kc->specs[1], kc->k.scratch = kc->scratch;
  return TL_OK;
}
_Static_assert(TL_ATTN_NSCR <= 4, "the registry's kernel instances hold 4 scratch buffers");

/* Relative error of o against float64 attention on up to 32 sampled rows per (b, h). */
static double tl_attn_kcheck(const tl_kcase *kc) {
  const tl_attn_run *r = kc->user;
  const tl_tensor *q = &kc->in[0], *o = &kc->out[0];
  const int64_t D = r->D, Sq = r->Sq, Sk = r->Sk;
  const int64_t step = Sq > 32 ? Sq / 32 : 1;
  double num = 0, den = 0;
  double *p = tl_calloc((size_t)Sk, sizeof(double)), *acc = tl_calloc((size_t)D, sizeof(double));
  if (!p || !acc) {
    tl_free_mem(p), tl_free_mem(acc);
    return INFINITY;
  }
  for (int64_t bh = 0; bh < r->B * r->Hq; bh++)
    for (int64_t i = 0; i < Sq; i += step) {
      const int64_t qo = (bh * Sq + i) * D;
      double mx = -INFINITY, l = 0;
      for (int64_t j = 0; j < Sk; j++) {
        double sdot = 0;
        for (int64_t d = 0; d < D; d++)
          sdot += tl_load_f64(q->data, TL_BF16, qo + d) * tl_load_f64(r->k.data, TL_BF16, (bh * Sk + j) * D + d);
        p[j] = sdot * (double)r->scale;
        if (p[j] > mx) mx = p[j];
      }
      memset(acc, 0, (size_t)D * sizeof(double));
      for (int64_t j = 0; j < Sk; j++) {
        double e = exp(p[j] - mx);
        l += e;
        for (int64_t d = 0; d < D; d++) acc[d] += e * tl_load_f64(r->v.data, TL_BF16, (bh * Sk + j) * D + d);
      }
      for (int64_t d = 0; d < D; d++) {
        double ref = acc[d] / l, got = tl_load_f64(o->data, TL_F32, qo + d);
        num += (got - ref) * (got - ref), den += ref * ref;
      }
    }
  tl_free_mem(p), tl_free_mem(acc);
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

const tl_kernel_desc tl_kernel_attention = {
    .name = "attention",
    .summary = "tl_attention's prefill kernel, bf16 -> f32: grid (B, H, Q blocks), inner grid over K/V blocks",
    .shape_syntax = "BxHxSxD or BxHxSqxSkxD",
    .shapes = "1x8x512x64 1x8x2048x128 1x4x4096x128",
    .make = tl_attn_kmake,
    .check = tl_attn_kcheck,
    .tolerance = 2e-2, /* P is rounded to bf16 before the P V product (docs/attention.md) */
};
