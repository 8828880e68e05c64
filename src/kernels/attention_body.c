/* attention_body.c — the step bodies of tl_attention (attention_impl.h, docs/attention.md).
 *
 * tl_attn_block is the one step routine: for a group of M query rows (staged contiguously) and
 * one K/V block it computes S = Q K^T on the matrix unit (tl_tile_dot, K as [N, K] with
 * TL_DOT_TRANS_B), scales and masks S (additive mask, causal limit, keys beyond the valid ones),
 * updates each row's running max m and sum l, rescales that row of the O accumulator by
 * exp(m_old - m_new), and adds P V (P converted to bf16 first for bf16 inputs, as flash
 * attention does). All softmax arithmetic is f32 through the per-ISA vector table.
 *
 * Invariants: a row that has seen no key keeps m = -inf, l = 0 and acc = 0 (exp is taken against
 * 0 instead of -inf, so no -inf - -inf NaN appears); a NaN score makes m, l and the row's output
 * NaN; rows beyond the valid ones (edge Q blocks) are computed on zero padding and never
 * stored. */
#include <math.h>
#include <string.h>

#include "../tile/attn_impl.h"
#include "attention_impl.h"

/* Where the step's query rows come from: row r is query qbase + r % R of head r / R of the
 * group (prefill: one head, R = bq; decode: the group's heads, R = Sq). */
typedef struct tl_attn_rows {
  int64_t M, R, qbase;
} tl_attn_rows;

/* A 2-D ref over rows/cols of a 4-D ref's last two dims (leading block indices 0). */
static tl_ref tl_attn_ref2(const tl_ref *r4) {
  tl_ref r;
  memset(&r, 0, sizeof r);
  r.data = r4->data, r.dtype = r4->dtype, r.ndim = 2, r.layout = r4->layout;
  r.shape[0] = r4->shape[r4->ndim - 2], r.shape[1] = r4->shape[r4->ndim - 1];
  r.valid[0] = r4->valid[r4->ndim - 2], r.valid[1] = r4->valid[r4->ndim - 1];
  if (!r4->layout.tiled) r.stride[0] = r4->stride[r4->ndim - 2], r.stride[1] = r4->stride[r4->ndim - 1];
  return r;
}

/* A 2-D row-major f32/bf16 ref over scratch memory. */
static tl_ref tl_attn_scr2(void *data, tl_dtype dt, int64_t rows, int64_t cols) {
  tl_ref r;
  memset(&r, 0, sizeof r);
  r.data = data, r.dtype = dt, r.ndim = 2;
  r.shape[0] = r.valid[0] = rows, r.shape[1] = r.valid[1] = cols;
  r.stride[0] = cols, r.stride[1] = 1;
  return r;
}

/* m = -inf, l = 0, acc = 0 for the step's rows. */
static void tl_attn_init(const tl_attn_run *run, tl_ref *scr, int64_t M) {
  float *m = scr[TL_ATTN_SCR_ML].data, *l = m + run->rows;
  for (int64_t r = 0; r < M; r++) m[r] = -INFINITY, l[r] = 0.0f;
  memset(scr[TL_ATTN_SCR_ACC].data, 0, (size_t)(M * run->D) * sizeof(float));
}

/* One K/V block (keys k0 .. k0 + kvalid - 1) against the step's rows. q: 2-D [M, D]
 * contiguous rows; k4, v4: the 4-D blocks; m4: the 4-D mask block ([1, G, R, bk], staged
 * contiguously) or NULL. */
static void tl_attn_block(const tl_prog *p, const tl_attn_run *run, const tl_attn_impl *vec, const tl_ref *q,
                          const tl_ref *k4, const tl_ref *v4, const tl_ref *m4, tl_ref *scr, tl_attn_rows rows,
                          int64_t k0) {
  const int64_t M = rows.M, D = run->D, bk = k4->shape[2], kvalid = k4->valid[2];
  float *S = scr[TL_ATTN_SCR_S].data, *acc = scr[TL_ATTN_SCR_ACC].data;
  float *m = scr[TL_ATTN_SCR_ML].data, *l = m + run->rows;
  tl_ref sref = tl_attn_scr2(S, TL_F32, M, bk), kref = tl_attn_ref2(k4), vref = tl_attn_ref2(v4);
  tl_ref aref = tl_attn_scr2(acc, TL_F32, M, D);
  if (run->vec_rows) {
    /* a handful of rows: one pass over the K block with the vector unit, q in f32 */
    float *qf = S + 2 * M * bk;
    for (int64_t r = 0; r < M; r++) {
      for (int64_t d = 0; d < D; d++)
        qf[r * D + d] = run->dt == TL_BF16 ? tl_bf16_to_f32(((const uint16_t *)q->data)[r * q->stride[0] + d])
                                           : ((const float *)q->data)[r * q->stride[0] + d];
      vec->qk(S + r * bk, bk, qf + r * D, kref.data, run->dt, kref.stride[0], D);
    }
  } else if (run->decode) {
    /* few rows: S^T = K Q^T reads K in place as the A operand (a transposed K staged per call
       would cost more than the product); S^T sits after S in the S scratch */
    float *st = S + M * bk;
    tl_ref tref = tl_attn_scr2(st, TL_F32, bk, M);
    tl_tile_dot(p, &tref, &kref, q, TL_DOT_TRANS_B);
    for (int64_t r = 0; r < M; r++)
      for (int64_t c = 0; c < bk; c++) S[r * bk + c] = st[c * M + r];
  } else {
    tl_tile_dot(p, &sref, q, &kref, TL_DOT_TRANS_B);
  }
  const size_t mes = m4 ? tl_dtype_size(m4->dtype) : 0;
  const int64_t shift = run->Sk - run->Sq - k0;
  /* bf16 inputs through the matrix unit: P is written as bf16 for P V (f32: over S) */
  uint16_t *P = !run->vec_rows && run->dt == TL_BF16 ? scr[TL_ATTN_SCR_P].data : NULL;
  for (int64_t r = 0; r < M; r++) {
    int64_t lim = kvalid;
    if (run->causal) {
      int64_t c = rows.qbase + r % rows.R + shift + 1; /* query i sees keys j <= i + Sk - Sq */
      if (c < lim) lim = c;
    }
    const void *mrow = NULL;
    if (m4) mrow = (const char *)m4->data + (size_t)((r / rows.R) * m4->stride[1] + (r % rows.R) * m4->stride[2]) * mes;
    const float mo = m[r];
    float mn;
    const float sum =
        vec->row(S + r * bk, bk, run->scale, mrow, m4 ? m4->dtype : TL_F32, lim, mo, &mn, P ? P + r * bk : NULL);
    /* an unchanged max rescales nothing (exp(0) = 1; for -inf the row's l and acc are still 0) */
    const float alpha = mn == mo ? 1.0f : expf(mo - (mn == -INFINITY ? 0.0f : mn));
    l[r] = l[r] * alpha + sum;
    m[r] = mn;
    if (alpha != 1.0f) vec->scale(acc + r * D, D, alpha);
  }
  if (run->vec_rows) { /* P stays f32 here */
    for (int64_t r = 0; r < M; r++) vec->pv(acc + r * D, D, S + r * bk, vref.data, run->dt, vref.stride[0], bk);
  } else if (P) {
    tl_ref pref = tl_attn_scr2(P, TL_BF16, M, bk);
    tl_tile_dot(p, &aref, &pref, &vref, TL_DOT_ACCUMULATE);
  } else {
    tl_tile_dot(p, &aref, &sref, &vref, TL_DOT_ACCUMULATE);
  }
}

/* ---- prefill ---- */

/* What the inner grid's body needs from its outer step (on the outer body's stack). */
typedef struct tl_attn_step {
  const tl_attn_run *run;
  const tl_attn_impl *vec;
  tl_ref q;    /* 2-D [bq, D] */
  tl_ref *scr; /* the outer step's scratch refs */
  tl_attn_rows rows;
} tl_attn_step;

/* Inner body: refs K, V[, mask] blocks of the step's visible keys. */
static void tl_attn_inner_body(const tl_prog *p, tl_ref *refs, void *user) {
  tl_attn_step *st = user;
  const tl_attn_run *run = st->run;
  const int64_t j = tl_program_id(p, 0), k0 = j * run->bk;
  const tl_ref *mref = run->mdt != TL_DTYPE_INVALID ? &refs[2] : NULL;
  tl_attn_block(p, run, st->vec, &st->q, &refs[0], &refs[1], mref, st->scr, st->rows, k0);
  int w = tl_worker_id(p);
  if (w >= 0 && w < TL_ATTN_MAX_WORKERS) {
    tl_attn_wcount *wc = (tl_attn_wcount *)&run->wc[w]; /* this worker's own line */
    wc->kv_blocks++;
    wc->kv_bytes += 2 * refs[0].valid[2] * run->D * (int64_t)tl_dtype_size(run->dt);
    if (mref) wc->kv_bytes += mref->valid[2] * mref->valid[3] * (int64_t)tl_dtype_size(run->mdt);
  }
}

/* A 4-D view ref of t (4-D) at block offsets (b, h, s0) with sizes [1, 1, n, last]. */
static tl_ref tl_attn_view(const tl_tensor *t, int64_t b, int64_t h, int64_t s0, int64_t n, int64_t last) {
  tl_ref r;
  memset(&r, 0, sizeof r);
  const size_t es = tl_dtype_size(t->dtype);
  r.data = (char *)t->data + (size_t)(b * t->stride[0] + h * t->stride[1] + s0 * t->stride[2]) * es;
  r.dtype = t->dtype, r.ndim = 4;
  r.shape[0] = r.valid[0] = 1, r.shape[1] = r.valid[1] = 1;
  r.shape[2] = r.valid[2] = n, r.shape[3] = r.valid[3] = last;
  for (int d = 0; d < 4; d++) r.stride[d] = t->stride[d];
  return r;
}

void tl_attn_prefill_body(const tl_prog *p, tl_ref *refs, void *user) {
  const tl_attn_run *run = user;
  const tl_attn_impl *vec = tl_attn_impl_for(tl_prog_isa(p));
  const int64_t b = tl_program_id(p, 0), h = tl_program_id(p, 1), qb = tl_program_id(p, 2);
  const int64_t q0 = qb * run->bq, nrows = refs[0].valid[2], hk = h / run->group, D = run->D;
  tl_ref *scr = &refs[2];
  tl_attn_init(run, scr, run->bq);
  /* the keys the step's last valid row may see: all, or up to the diagonal */
  int64_t need = run->Sk;
  if (run->causal) {
    int64_t lim = q0 + nrows - 1 + run->Sk - run->Sq + 1;
    need = lim < 0 ? 0 : lim < need ? lim : need;
  }
  if (need > 0) {
    tl_attn_step st = {.run = run, .vec = vec, .q = tl_attn_ref2(&refs[0]), .scr = scr,
                       .rows = {.M = run->bq, .R = run->bq, .qbase = q0}};
    tl_ref in[3];
    in[0] = tl_attn_view(&run->k, b, hk, 0, need, D);
    in[1] = tl_attn_view(&run->v, b, hk, 0, need, D);
    tl_blockspec spec[3] = {
        {.ndim = 4, .block = {1, 1, run->bk, D}, .map = "j -> 0, 0, j, 0"},
        {.ndim = 4, .block = {1, 1, run->bk, D}, .map = "j -> 0, 0, j, 0", .layout = run->v_layout},
        {.ndim = 4, .block = {1, 1, run->bq, run->bk}, .map = "j -> 0, 0, 0, j", .stage = TL_STAGE_ALWAYS},
    };
    int n_in = 2;
    if (run->mdt != TL_DTYPE_INVALID) {
      in[2] = tl_attn_view(&run->mask, b, h, q0, nrows, need);
      n_in = 3;
    }
    tl_kernel inner = {.name = "attention kv", .body = tl_attn_inner_body, .user = &st, .grid_ndim = 1,
                       .grid = {TL_CDIV(need, run->bk)}, .sem = {TL_ARBITRARY}, .n_in = n_in, .in = spec};
    if (tl_pipeline_run(p, &inner, in) != TL_OK) return; /* the run stops with the inner message */
  }
  /* O written once: acc / l, 0 for rows that saw no key */
  const float *acc = scr[TL_ATTN_SCR_ACC].data, *l = (const float *)scr[TL_ATTN_SCR_ML].data + run->rows;
  const tl_ref *o = &refs[1];
  const size_t oes = tl_dtype_size(o->dtype);
  for (int64_t r = 0; r < nrows; r++) {
    char *orow = (char *)o->data + (size_t)(r * o->stride[2]) * oes;
    if (l[r] == 0.0f) { /* no key seen: zeros (acc may hold 0 x inf = NaN from a masked +-inf in V) */
      for (int64_t d = 0; d < D; d++) memset(orow + (size_t)(d * o->stride[3]) * oes, 0, oes);
      continue;
    }
    vec->store(orow, o->dtype, acc + r * D, D, 1.0f / l[r]);
  }
}

/* ---- decode ---- */

void tl_attn_decode_body(const tl_prog *p, tl_ref *refs, void *user) {
  const tl_attn_run *run = user;
  const tl_attn_impl *vec = tl_attn_impl_for(tl_prog_isa(p));
  const int64_t c = tl_program_id(p, 2), j = tl_program_id(p, 3), nj = tl_num_programs(p, 3);
  const int has_mask = run->mdt != TL_DTYPE_INVALID;
  const int io = 3 + has_mask; /* first output */
  tl_ref *scr = &refs[io + 2];
  const int64_t M = run->rows, D = run->D;
  if (j == 0) tl_attn_init(run, scr, M);
  const tl_ref q = {.data = refs[0].data, .dtype = refs[0].dtype, .ndim = 2, .shape = {M, D}, .valid = {M, D},
                    .stride = {D, 1}};
  tl_attn_rows rows = {.M = M, .R = run->Sq, .qbase = 0};
  tl_attn_block(p, run, vec, &q, &refs[1], &refs[2], has_mask ? &refs[3] : NULL, scr, rows,
                (c * run->chunk_blocks + j) * run->bk);
  if (j != nj - 1) return;
  /* this chunk's partial: acc (unnormalised), m, l */
  const tl_ref *po = &refs[io], *pml = &refs[io + 1];
  const float *acc = scr[TL_ATTN_SCR_ACC].data, *m = scr[TL_ATTN_SCR_ML].data, *l = m + M;
  for (int64_t r = 0; r < M; r++) {
    memcpy((float *)po->data + r * po->stride[3], acc + r * D, (size_t)D * sizeof(float));
    float *ml = (float *)pml->data + r * pml->stride[3];
    ml[0] = m[r], ml[pml->stride[4]] = l[r];
  }
}

void tl_attn_counts(const tl_attn_run *run, int64_t *kv_blocks, int64_t *kv_bytes) {
  int64_t nb = 0, by = 0;
  for (int w = 0; w < TL_ATTN_MAX_WORKERS; w++) nb += run->wc[w].kv_blocks, by += run->wc[w].kv_bytes;
  if (kv_blocks) *kv_blocks = nb;
  if (kv_bytes) *kv_bytes = by;
}
