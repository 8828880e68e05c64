/* matmul_body.c — the step body of tl_matmul's kernel (matmul_impl.h): one tl_tile_dot per step
 * into the accumulator (c's own block when c has the accumulator's dtype and beta == 0, else an
 * f32 / i32 scratch block), then, on the block's last visit, the epilogue
 *   c = act(alpha * scale_a * acc * scale_b + beta * c + bias) + residual
 * with tile ops on f32 blocks (floating c) or in double per element (i32 c: exact), and the
 * cast into c's dtype (bf16: round to nearest even).
 *
 * Invariants: c is read only when beta != 0 (its block is then TL_OUT_ACCUM_LOAD); the
 * accumulator is overwritten on the first visit (so a NaN-filled c or stale scratch never
 * leaks in); K = 0 fills the accumulator with zeros. Packed b is read in place (its block: tile
 * row kb, the K block kb, and the tiles of N block j, consecutive in it). */
#include <math.h>
#include <string.h>

#include "matmul_impl.h"

/* The last two dims of a 3-D ref [1, R, C] as a 2-D ref (same data: leading index 0). */
static tl_ref tl_mm_2d(const tl_ref *r) {
  tl_ref v = *r;
  if (r->ndim == 3) {
    v.ndim = 2;
    for (int d = 0; d < 2; d++) v.shape[d] = r->shape[d + 1], v.stride[d] = r->stride[d + 1], v.valid[d] = r->valid[d + 1];
    v.shape[2] = v.stride[2] = v.valid[2] = 0;
  }
  return v;
}

/* A [1, 1] f32 ref over *v (a scalar operand for tl_tile_binary). */
static tl_ref tl_mm_scalar(float *v) {
  tl_ref r;
  memset(&r, 0, sizeof r);
  r.data = v, r.dtype = TL_F32, r.ndim = 2;
  r.shape[0] = r.shape[1] = r.stride[0] = r.stride[1] = r.valid[0] = r.valid[1] = 1;
  return r;
}

/* The activation in double (for the i32 epilogue). */
static double tl_mm_act_f64(tl_act act, double v) {
  switch (act) {
  case TL_ACT_RELU: return v > 0 ? v : 0;
  case TL_ACT_GELU: return 0.5 * v * (1.0 + erf(v * 0.70710678118654752440));
  case TL_ACT_SILU: return v / (1.0 + exp(-v));
  default: return v;
  }
}

/* i32 c: the epilogue per element in double (exact for every i32 value), stored with rounding
 * to nearest even and saturation. acc may be c itself (then beta is 0 and c is not read). */
static void tl_mm_epilogue_int(const tl_mm_run *r, tl_ref *refs, const tl_ref *acc, tl_ref *c) {
  const int plain = r->alpha == 1.0f && r->beta == 0.0f && r->ibias < 0 && r->ires < 0 && r->act == TL_ACT_NONE;
  if (plain && acc->data == c->data) return;
  const tl_ref *bias = r->ibias >= 0 ? &refs[r->ibias] : NULL;
  tl_ref res;
  if (r->ires >= 0) res = tl_mm_2d(&refs[r->ires]);
  for (int64_t i = 0; i < c->valid[0]; i++)
    for (int64_t j = 0; j < c->valid[1]; j++) {
      const int64_t ci = i * c->stride[0] + j * c->stride[1];
      double v = tl_load_f64(acc->data, acc->dtype, i * acc->stride[0] + j * acc->stride[1]);
      if (r->alpha != 1.0f) v *= r->alpha;
      if (r->beta != 0.0f) v += (double)r->beta * tl_load_f64(c->data, c->dtype, ci);
      if (bias) v += tl_load_f64(bias->data, bias->dtype, j * bias->stride[0]);
      v = tl_mm_act_f64(r->act, v);
      if (r->ires >= 0) v += tl_load_f64(res.data, res.dtype, i * res.stride[0] + j * res.stride[1]);
      tl_store_f64(c->data, c->dtype, ci, v);
    }
}

/* Floating c: the epilogue on an f32 block F (the accumulator, a conversion scratch or c's own
 * f32 block) with tile ops, then F cast into c. */
static void tl_mm_epilogue_float(const tl_prog *p, const tl_mm_run *r, tl_ref *refs, tl_ref *acc, tl_ref *c) {
  tl_ref F;
  if (acc->dtype == TL_F32) {
    F = *acc;
  } else { /* i32 accumulator of an int8 product into f32 */
    F = r->icvt >= 0 ? refs[r->icvt] : *c;
    tl_tile_cast(&F, acc);
  }
  if (r->isa >= 0) { /* scale_a as a column [BM, 1] */
    const tl_ref *s = &refs[r->isa];
    tl_ref col = *s;
    col.ndim = 2;
    col.shape[0] = s->shape[0], col.shape[1] = 1;
    col.stride[0] = s->stride[0], col.stride[1] = 1;
    col.valid[0] = s->valid[0], col.valid[1] = 1;
    tl_tile_binary(&F, &F, &col, TL_BINARY_MUL);
  }
  if (r->isb >= 0) tl_tile_binary(&F, &F, &refs[r->isb], TL_BINARY_MUL);
  if (r->alpha != 1.0f) {
    float al = r->alpha;
    tl_ref s = tl_mm_scalar(&al);
    tl_tile_binary(&F, &F, &s, TL_BINARY_MUL);
  }
  if (r->itmp >= 0) { /* beta != 0: c's block was loaded */
    float be = r->beta;
    tl_ref s = tl_mm_scalar(&be), *T = &refs[r->itmp];
    tl_tile_binary(T, c, &s, TL_BINARY_MUL);
    tl_tile_binary(&F, &F, T, TL_BINARY_ADD);
  }
  if (r->ibias >= 0) tl_tile_binary(&F, &F, &refs[r->ibias], TL_BINARY_ADD);
  static const tl_unary act_op[] = {TL_UNARY_IDENTITY, TL_UNARY_RELU, TL_UNARY_GELU, TL_UNARY_SILU};
  if (r->act != TL_ACT_NONE) tl_tile_unary(&F, &F, act_op[r->act]);
  if (r->ires >= 0) {
    tl_ref res = tl_mm_2d(&refs[r->ires]);
    tl_tile_binary(&F, &F, &res, TL_BINARY_ADD);
  }
  if (F.data != c->data) tl_tile_cast(c, &F);
  (void)p;
}

/* acc = the sum over s of the [S, R, C] block P's parts s (the K split's partial products, of
 * acc's dtype; over c's valid part), in order s = 0, 1, ...: i32 wrapping as the vector dots'
 * accumulation does (the unsplit sum bit for bit whenever it fits in i32, the dots' contract;
 * past it the scalar / AVX2 dots saturate each part, whose sum then wraps), f32 rounded once
 * more per part. */
#define TL_MM_SUM_ROW(T)                                                                   \
  do {                                                                                     \
    T *d = (T *)acc->data + i * acc->stride[0];                                            \
    const T *x = (const T *)P->data + i * P->stride[1];                                    \
    for (int64_t j = 0; j < C; j++) d[j * acc->stride[1]] = x[j * P->stride[2]];           \
    for (int s = 1; s < r->sum; s++) {                                                     \
      x += P->stride[0];                                                                   \
      for (int64_t j = 0; j < C; j++) d[j * acc->stride[1]] += x[j * P->stride[2]];        \
    }                                                                                      \
  } while (0)
static void tl_mm_sum_parts(const tl_mm_run *r, const tl_ref *P, tl_ref *acc, const tl_ref *c) {
  const int64_t R = c->valid[0], C = c->valid[1];
  for (int64_t i = 0; i < R; i++) {
    if (acc->dtype == TL_I32) TL_MM_SUM_ROW(uint32_t); /* (unsigned: wrapping is defined) */
    else TL_MM_SUM_ROW(float);
  }
}
#undef TL_MM_SUM_ROW

/* In the K split's first kernel: queues up to `rows` rows of `len` bytes of b at the start of
 * this thread's next step, when it has one (step (s, q + 1): K block S (q + 1) + s, S blocks
 * on from this step's b), on the thread's prefetch queue (the body's own: the split's specs
 * queue nothing, tl_mm_split_decide). */
static void tl_mm_queue_next_step(const tl_prog *p, const tl_mm_run *r, const tl_ref *b, int64_t rows, int64_t len) {
  if (tl_program_id(p, 1) + 1 >= tl_num_programs(p, 1)) return;
  const int64_t S = tl_num_programs(p, 0), next = S * (tl_program_id(p, 1) + 1) + tl_program_id(p, 0);
  const int64_t rs = b->stride[0] * (int64_t)tl_dtype_size(b->dtype);
  tl_prefetch_queue_rows((const char *)b->data + S * r->BK * rs, TL_MIN(rows, r->chunk_kall - next * r->BK), len, rs);
}

/* The K split's first kernel for 3-16 rows (tl_mm_run.chunk_k): acc (+)= a @ b over the step's
 * K block, slice by slice of r->chunk_n columns, each slice's rows of b copied r->chunk_k at a
 * time into the scratch chunk (rows r->chunk_ld bytes apart, off the 4 KiB alias that b's may be
 * on) and multiplied from there into the slice's columns of acc; first: overwrite acc with the
 * first chunk's product. a and b are the valid extents, b with unit column stride. While a
 * chunk's product runs, the rows of the next chunk (the next slice's first, after a slice's
 * last; the next step's first, after the step's last) are queued for the row-major dots to
 * prefetch into L2 as they go (tl_prefetch_queue_rows; the split's specs queue nothing), so
 * that memory is busy during the product and the copy reads from L2: `tilec bench gemm --threads
 * 2 --dtype D --peers none`, against whole rows in chunks of 64 copied from memory, builds
 * alternating, 6-8 rounds, medians (a noisy VM): see docs/matmul.md "Slices and the next
 * chunk's prefetch". */
static void tl_mm_chunks(const tl_prog *p, const tl_mm_run *r, const tl_ref *chunk, tl_ref *acc, const tl_ref *a,
                         const tl_ref *b, int first) {
  const int64_t es = (int64_t)tl_dtype_size(b->dtype), ea = (int64_t)tl_dtype_size(a->dtype);
  const int64_t ec = (int64_t)tl_dtype_size(acc->dtype), kv = b->valid[0], nv = b->valid[1], rs = b->stride[0] * es;
  const int64_t ns = r->chunk_n;
  for (int64_t j0 = 0; j0 < nv || j0 == 0; j0 += ns) {
    const int64_t nc = TL_MIN(ns, nv - j0), row = nc * es;
    const char *bj = (const char *)b->data + j0 * es;
    for (int64_t k0 = 0; k0 < kv || k0 == 0; k0 += r->chunk_k) {
      const int64_t kc = TL_MIN(r->chunk_k, kv - k0);
      for (int64_t i = 0; i < kc; i++) memcpy((char *)chunk->data + i * r->chunk_ld, bj + (k0 + i) * rs, (size_t)row);
      /* what the last dot left of this chunk's lines: copied now (the queue is the body's own:
       * the split's specs queue nothing, tl_mm_split_decide) */
      tl_prefetch_queue()->left = 0;
      if (k0 + kc < kv) {
        tl_prefetch_queue_rows(bj + (k0 + kc) * rs, TL_MIN(r->chunk_k, kv - k0 - kc), row, rs);
      } else if (j0 + nc < nv) {
        tl_prefetch_queue_rows(bj + row, TL_MIN(r->chunk_k, kv), TL_MIN(ns, nv - j0 - nc) * es, rs);
      } else {
        tl_mm_queue_next_step(p, r, b, r->chunk_k, TL_MIN(ns, nv) * es);
      }
      tl_ref bc = *b, ac = *a, cc = *acc;
      bc.data = chunk->data;
      bc.shape[0] = bc.valid[0] = kc, bc.stride[0] = r->chunk_ld / es;
      bc.shape[1] = bc.valid[1] = nc;
      cc.data = (char *)acc->data + j0 * acc->stride[1] * ec;
      cc.shape[1] = cc.valid[1] = nc;
      ac.data = (char *)a->data + k0 * a->stride[1] * ea;
      ac.shape[1] = ac.valid[1] = kc;
      tl_tile_dot(p, &cc, &ac, &bc, first && k0 == 0 ? 0u : (unsigned)TL_DOT_ACCUMULATE);
      if (kv == 0) break;
    }
    if (nv == 0) break;
  }
}

/* One step: the dot into the accumulator (overwrite on the first K step), the epilogue on the
 * last. */
void tl_mm_body(const tl_prog *p, tl_ref *refs, void *user) {
  const tl_mm_run *r = user;
  tl_ref c = tl_mm_2d(&refs[r->ic]);
  tl_ref acc = r->iacc >= 0 ? refs[r->iacc] : c;
  const int first = tl_first_visit(p, 0) == 1;
  if (r->sum) { /* the K split's second kernel: the S partial rows of this block summed */
    tl_mm_sum_parts(r, &refs[r->ia], &acc, &c);
  } else if (r->BK == 0) { /* K = 0: the product is zero */
    if (first) tl_tile_fill(&acc, 0.0);
  } else {
    tl_ref a = tl_mm_2d(&refs[r->ia]), b, accv = acc;
    if (r->packed) {
      /* the tiles that exist: the N edge block's last ones are past the tensor */
      b = tl_mm_2d(&refs[r->ib]);
      b.shape[1] = (b.valid[1] + 15) / 16 * 16;
      accv.shape[1] = b.shape[1];
      if (accv.valid[1] > b.shape[1]) accv.valid[1] = b.shape[1];
      /* compute only the valid rows and K of edge blocks: a staged with zero padding, rounded up
       * to 16 rows (AMX tiles) and to b's K group (the packed tile row's padding rows, zero too,
       * still fill the last group): 4097^3 had 127 padded rows of 128 in its last M block and
       * 79-223 padded K rows. a read in place (edges: f32, and bf16 / int8 below AMX): exactly
       * the valid ones, nothing past them is a's */
      const int64_t gk = r->edges ? 1 : tl_mm_kgroup(b.dtype), gm = r->edges ? 1 : 16;
      const int64_t mv = TL_MIN(a.shape[0], (a.valid[0] + gm - 1) / gm * gm);
      const int64_t kv = TL_MIN(a.shape[1], (a.valid[1] + gk - 1) / gk * gk);
      a.shape[0] = accv.shape[0] = mv, a.shape[1] = b.shape[0] = kv;
      a.valid[0] = TL_MIN(a.valid[0], mv), accv.valid[0] = TL_MIN(accv.valid[0], mv);
      b.valid[0] = TL_MIN(b.valid[0], kv);
    } else {
      b = tl_mm_2d(&refs[r->ib]);
      if (r->stream || r->edges || r->rm) { /* a, b in place even at the edges: the product over their valid part */
        b.shape[0] = b.valid[0], b.shape[1] = b.valid[1];
        a.shape[0] = a.valid[0], a.shape[1] = a.valid[1] = b.valid[0];
        accv.shape[0] = accv.valid[0] = a.valid[0];
        accv.shape[1] = accv.valid[1] = b.valid[1];
      }
    }
    if (r->chunk_k) {
      tl_mm_chunks(p, r, &refs[r->ichunk], &accv, &a, &b, first);
      return; /* (the split's first kernel: no epilogue) */
    }
    if (r->walk) /* the next step's first rows for the walk's last sweep */
      tl_mm_queue_next_step(p, r, &b, TL_MM_WALK_PF / (int64_t)tl_dtype_size(b.dtype),
                            b.valid[1] * (int64_t)tl_dtype_size(b.dtype));
    tl_tile_dot(p, &accv, &a, &b, first ? 0u : (unsigned)TL_DOT_ACCUMULATE);
  }
  if (r->partial || tl_last_visit(p, 0) != 1) return;
  if (r->int_out) tl_mm_epilogue_int(r, refs, &acc, &c);
  else tl_mm_epilogue_float(p, r, refs, &acc, &c);
}
