/* matmul_pack.c — tl_matmul_pack_b, tl_free, and the "matmul" registry entries (f32, bf16, u8 x
 * i8) that build the same kernel tl_matmul builds, for `tilec roofline` / `tilec explain`.
 *
 * Packed layouts (what the kernel's B staging uses, so the body reads packed blocks in place):
 *   f32:  tiled, tile_c 16, no interleave (vnni 1), tile_r = tl_mm_pack_tile_r (panels of 16
 *         columns the f32 dot reads in place, two tiles at a time);
 *   bf16: tiled, vnni 2, tile_c 16, tile_r = tl_mm_pack_tile_r (the kernel's K block);
 *   int8: tiled, vnni 4, tile_c 16, tile_r likewise.
 * Tile padding is zero. Leading (batch) dims are kept, outermost. The buffer comes from
 * tl_alloc_huge (64-byte aligned; from 2 MiB on, 2 MiB aligned and advised as huge pages) and is
 * freed with tl_free. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../runtime/plan_impl.h"
#include "matmul_impl.h"

/* Frees what tl_matmul_pack_b allocated (tl_alloc_huge). NULL is a no-op. */
void tl_free(void *p) { tl_free_huge(p); }

/* 1 when b of db can be packed for a of da (the pairs tl_matmul multiplies with a tiled b). */
static int tl_mm_pack_pair(tl_dtype da, tl_dtype db) {
  return (da == TL_F32 && db == TL_F32) || (da == TL_BF16 && db == TL_BF16) || ((da == TL_I8 || da == TL_U8) && db == TL_I8);
}

/* ---- the pack kernel ----
 *
 * A row-major f32 b read in place puts consecutive rows of a panel a row stride apart (for
 * power-of-two N, in the same L1 sets), and the dot stages each panel again for every M block;
 * bf16 / int8 b is staged into the VNNI layout again for every M block. When enough rows of a
 * share b, tl_matmul packs b once into the layout tl_matmul_pack_b makes (with longer tile rows,
 * long_k), into a buffer the context keeps (a slot), and runs the packed plan. Both pack with the
 * same parallel grid kernel, which sees the packed storage of one matrix as a row-major
 * [K tiles, N tiles, tile_r * 16] tensor of b's dtype (one row per tile), so its output blocks are
 * plain row-major blocks; every element of every tile is written (padding zero). */

typedef struct tl_mm_pbuf {
  void *buf;
  size_t cap;      /* bytes */
  tl_plan *plan;   /* the pack kernel's plan for the b below (the context frees plans itself) */
  tl_dtype dt;
  int64_t K, N, rs, cs;
  tl_layout lay;   /* the packed layout (the pack body's user data: this struct) */
  tl_pack_fn pack; /* bf16 / int8: the staging packer for lay at the context's ISA */
  int64_t step;    /* rows of b per step of the pack kernel (tl_mm_pack_step) */
  int nt;          /* bf16 / int8: non-temporal stores (TL_MM_PACK_NT_DIV) */
} tl_mm_pbuf;

static void tl_mm_pbuf_free(void *state) {
  tl_mm_pbuf *pb = state;
  if (pb) tl_free_huge(pb->buf);
  tl_free_mem(pb);
}
static const tl_slot_class tl_mm_pbuf_slot = {.name = "matmul packed b", .free_state = tl_mm_pbuf_free};

/* bf16 / int8 packed storage larger than the L3 divided by this is written with non-temporal
 * stores (the staging packer's; f32 keeps plain copies): the product reads it back from memory
 * as fast as from the caches, and the stores skip reading their lines first. `tilec bench gemm --threads 2
 * --peers none`, plain, 4 rounds, builds alternating: bf16 200x2048x2048 4.53 -> 4.26 ms,
 * 200x4096x4096 17.60 -> 16.82, 2048x4096x4096 156.2 -> 155.5 (2 of 4); int8 136x4096x4096
 * 6.91 -> 6.14, 256x4096x11008 29.6 -> 28.4 (faster in 4 of 4 unless said). With the stores
 * on for every size (4 rounds, an environment switch): warm (--warm) 200x4096x4096 17.79 ->
 * 17.04, 200x2048x2048 even, and a 2 MiB b (bf16 200x1024x1024) 2-3% slower, cold and warm,
 * hence the threshold. f32 with them: within noise at 512^3-2048^3 (4 rounds). */
#define TL_MM_PACK_NT_DIV 8

/* Bytes of b the pack kernel packs per step (whole rows: TL_MM_PACK_STEP_BYTES / row bytes). */
#define TL_MM_PACK_STEP_BYTES ((int64_t)64 << 10)

/* Rows of b per step of the pack kernel: a multiple of g (tl_mm_kgroup; the tile rows tr are
 * one too) near TL_MM_PACK_STEP_BYTES of b, at least g, at most tr; the last step of a tile row
 * takes what is left of it. */
static int64_t tl_mm_pack_step(int64_t tr, int64_t N, int64_t es, int64_t g) {
  const int64_t r = TL_MAX(g, TL_MM_PACK_STEP_BYTES / TL_MAX(1, N * es) / g * g);
  return r < tr ? r : tr;
}

/* f32 (no interleave): rows g0 .. g0 + R of b (src: the whole of b) into rows 0 .. R of nt tiles
 * tstride elements apart from dst; rows past K and columns past N zero. */
static void tl_mm_pack_f32(const tl_ref *src, int64_t g0, int64_t R, float *dst, int64_t nt, int64_t tstride) {
  const int64_t K = src->valid[0], N = src->valid[1], rs = src->stride[0], cs = src->stride[1];
  for (int64_t r = 0; r < R; r++) {
    const int64_t g = g0 + r;
    const float *s = (const float *)src->data + (g < K ? g : 0) * rs; /* (rows past K: not read) */
    float *d = dst + r * 16;
    for (int64_t t = 0; t < nt; t++, d += tstride) {
      const int64_t w = g < K ? TL_MAX(0, TL_MIN(16, N - t * 16)) : 0;
      if (w == 16 && cs == 1) {
        memcpy(d, s + t * 16, 16 * sizeof(float)); /* constant size: vector moves */
        continue;
      }
      for (int64_t c = 0; c < 16; c++) d[c] = c < w ? s[(t * 16 + c) * cs] : 0.0f;
    }
  }
}

/* The pack kernel's step (kt, rc): rows kt * tr + rc * S .. + R of b (S = pb->step; R = S, or
 * what is left of the tile row), all of its columns (src: the whole of b, read in place), into
 * rows rc * S .. + R of every 16-column tile of tile row kt (dst: those rows of the tile row's
 * tiles, dst->stride[1] elements apart). Valid elements copied, the rest of each tile zero. f32 here (vnni 1: rows of 16 columns); bf16 / int8
 * through the staging packer, which interleaves pairs / quads of rows (R is a multiple of
 * them). Each step reads whole rows of b, contiguous runs the hardware prefetchers stream;
 * steps of tr rows x 128 columns, as before 2026-11-26, read a row-major b as runs of 512
 * (f32), 256 (bf16) or 128 bytes (int8) a row stride apart (measured in docs/matmul.md, "b
 * packed per call"). */
static void tl_mm_pack_body(const tl_prog *p, tl_ref *refs, void *user) {
  const tl_mm_pbuf *pb = user;
  const tl_ref *src = &refs[0], *dst = &refs[1];
  const int64_t R = dst->valid[2] / 16, nt = dst->valid[1], es = (int64_t)tl_dtype_size(src->dtype);
  const int64_t g0 = tl_program_id(p, 0) * pb->lay.tile_r + tl_program_id(p, 1) * pb->step;
  if (!pb->pack) {
    tl_mm_pack_f32(src, g0, R, (float *)dst->data, nt, dst->stride[1]);
    return;
  }
  static const uint32_t zero = 0; /* the padding (the portable packer pads only when given one) */
  tl_layout lay = pb->lay;
  lay.tile_r = (uint16_t)R;
  const int64_t rows = TL_MAX(0, TL_MIN(R, src->valid[0] - g0)); /* 0: all padding, src not read */
  const tl_pack_job job = {.src = (const char *)src->data + (rows ? g0 : 0) * src->stride[0] * es,
                           .src_rs = src->stride[0], .src_cs = src->stride[1], .rows = rows, .cols = src->valid[1],
                           .dst = dst->data, .dst_rows = R, .dst_cols = nt * 16, .layout = lay,
                           .esize = (size_t)es, .pad = &zero, .tile_stride = dst->stride[1], .nt = pb->nt};
  pb->pack(&job);
}

/* Packs the 2-D b ([K, N], K and N > 0, any strides) into dst (the packed storage of one matrix
 * in layout lay) with the pack kernel on ctx's threads. The plan, kept in pb, depends on b's
 * dtype, shape and strides and on lay: made when they change, rerun on each call's data. */
static tl_status tl_mm_pack_run(tl_ctx *ctx, tl_mm_pbuf *pb, const tl_tensor *b, tl_layout lay, void *dst) {
  const tl_dtype dt = b->dtype;
  const int64_t K = b->shape[0], N = b->shape[1], es = (int64_t)tl_dtype_size(dt);
  const int64_t tr = lay.tile_r, nkt = TL_CDIV(K, tr), ntc = TL_CDIV(N, 16);
  const int64_t R = tl_mm_pack_step(tr, N, es, tl_mm_kgroup(dt));
  const int64_t tshape[3] = {nkt, ntc, tr * 16};
  const tl_tensor tiles = tl_tensor_make(dst, dt, 3, tshape);
  /* both in place (b whole; the rows of every tile of a tile row): the kernel needs no VMEM, so
   * any staging budget packs. (The plan counts the whole of b as read once per worker: the
   * bytes it reports for this kernel are threads x b's, which nothing shows or compares.) */
  const tl_blockspec specs[2] = {
      {.ndim = 2, .block = {0, 0}, .map = NULL, .stage = TL_STAGE_NEVER},
      {.ndim = 3, .block = {1, 0, R * 16}, .map = "k, r -> k, 0, r", .stage = TL_STAGE_NEVER},
  };
  const tl_kernel k = {.name = "matmul_pack_b", .body = tl_mm_pack_body, .grid_ndim = 2, .grid = {nkt, TL_CDIV(tr, R)},
                       .sem = {TL_PARALLEL, TL_PARALLEL}, .n_in = 1, .in = &specs[0], .n_out = 1, .out = &specs[1],
                       .user = pb};
  if (!pb->plan || pb->dt != dt || pb->K != K || pb->N != N || pb->rs != b->stride[0] || pb->cs != b->stride[1] ||
      memcmp(&pb->lay, &lay, sizeof lay) != 0) {
    tl_plan_free(pb->plan);
    pb->plan = NULL;
    tl_ctx_info info;
    tl_ctx_info_get(ctx, &info);
    pb->lay = lay, pb->step = R;
    pb->nt = nkt * tr * ntc * 16 * es > tl_kernels_l3_bytes(&info) / TL_MM_PACK_NT_DIV;
    pb->pack = dt == TL_F32 ? NULL : tl_packer_find((size_t)es, lay, info.isa);
    tl_status s = tl_plan_new(ctx, &k, b, &tiles, &pb->plan);
    if (s != TL_OK) return s;
    pb->dt = dt, pb->K = K, pb->N = N, pb->rs = b->stride[0], pb->cs = b->stride[1];
  }
  return tl_plan_run(pb->plan, b, &tiles);
}

/* See matmul_impl.h: checks b and the dtype pair, allocates the packed storage and packs each
 * matrix of b into it with the pack kernel (layouts in the opening comment). */
tl_status tl_mm_pack_b(tl_ctx *ctx, const tl_tensor *b, tl_dtype a_dtype, int long_k, tl_tensor *packed) {
  if (!ctx) return tl_fail_tls(TL_ERR_INVALID, "tl_matmul_pack_b: ctx is NULL");
  if (!b || !packed) return tl_ctx_fail(ctx, TL_ERR_INVALID, "tl_matmul_pack_b: %s is NULL", b ? "packed" : "b");
  char msg[256];
  tl_status s = tl_tensor_check(b, "b", msg, sizeof msg);
  if (s != TL_OK) return tl_ctx_fail(ctx, s, "tl_matmul_pack_b: %s", msg);
  if (b->ndim < 2) return tl_ctx_fail(ctx, TL_ERR_SHAPE, "tl_matmul_pack_b: b has %d dims, needs at least 2 ([..., K, N])", b->ndim);
  if (b->layout.tiled) return tl_ctx_fail(ctx, TL_ERR_INVALID, "tl_matmul_pack_b: b is already tiled");
  const tl_dtype db = b->dtype;
  if (!tl_mm_pack_pair(a_dtype, db))
    return tl_ctx_fail(ctx, TL_ERR_DTYPE, "tl_matmul_pack_b: b is %s for a of %s; supported: f32 x f32, bf16 x bf16, u8/i8 x i8",
                       tl_dtype_name(db), tl_dtype_name(a_dtype));
  const int64_t numel = tl_tensor_numel(b);
  if (!b->data && numel > 0) return tl_ctx_fail(ctx, TL_ERR_INVALID, "tl_matmul_pack_b: b has NULL data");
  const int nd = b->ndim;
  const int64_t K = b->shape[nd - 2], N = b->shape[nd - 1], es = (int64_t)tl_dtype_size(db);
  int64_t nmat = 1;
  for (int d = 0; d < nd - 2; d++) nmat *= b->shape[d];
  const tl_layout lay = tl_mm_pack_layout(db, K, long_k);
  const int64_t mat_elems = TL_CDIV(K, lay.tile_r) * lay.tile_r * TL_CDIV(N, 16) * 16;
  int64_t bytes;
  if (tl_mul_ovf(mat_elems, nmat, &bytes) || tl_mul_ovf(bytes, es, &bytes) || bytes > ((int64_t)1 << 46))
    return tl_ctx_fail(ctx, TL_ERR_NOMEM, "tl_matmul_pack_b: b %lld x [%lld, %lld] is too large to pack", (long long)nmat,
                       (long long)K, (long long)N);
  char *dst = tl_alloc_huge((size_t)(bytes > 64 ? bytes : 64));
  if (!dst) return tl_ctx_fail(ctx, TL_ERR_NOMEM, "tl_matmul_pack_b: out of memory for %lld bytes", (long long)bytes);
  if (numel > 0) { /* (an empty b has no tiles, or only K = 0 / N = 0 ones: nothing to write) */
    tl_mm_pbuf pb = {0};
    int64_t idx[TL_MAX_DIMS] = {0};
    for (int64_t m = 0; m < nmat && s == TL_OK; m++) {
      const char *src = b->data;
      for (int d = 0; d < nd - 2; d++) src += idx[d] * b->stride[d] * es;
      const int64_t shape2[2] = {K, N};
      tl_tensor b2 = tl_tensor_make((void *)src, db, 2, shape2);
      b2.stride[0] = b->stride[nd - 2], b2.stride[1] = b->stride[nd - 1];
      s = tl_mm_pack_run(ctx, &pb, &b2, lay, dst + m * mat_elems * es);
      for (int d = nd - 3; d >= 0 && ++idx[d] == b->shape[d]; d--) idx[d] = 0;
    }
    tl_plan_free(pb.plan);
    if (s != TL_OK) {
      char why[256];
      snprintf(why, sizeof why, "%s", tl_ctx_error(ctx));
      tl_aligned_free(dst);
      return tl_ctx_fail(ctx, s, "tl_matmul_pack_b: packing b [%lld, %lld]: %s", (long long)K, (long long)N, why);
    }
  }
  memset(packed, 0, sizeof *packed);
  packed->data = dst, packed->dtype = db, packed->ndim = nd, packed->layout = lay;
  for (int d = 0; d < nd; d++) packed->shape[d] = b->shape[d];
  tl_ctx_ok(ctx);
  return TL_OK;
}

/* The public packer: tl_mm_pack_b with the tile rows every product takes well, skinny included. */
tl_status tl_matmul_pack_b(tl_ctx *ctx, const tl_tensor *b, tl_dtype a_dtype, tl_tensor *packed) {
  return tl_mm_pack_b(ctx, b, a_dtype, 0, packed);
}

/* ---- packing b inside a call (many rows of a) ---- */

/* Rows of a sharing b from which packing b per call pays (see docs/matmul.md, "Measured"). */
#define TL_MM_AUTOPACK_ROWS 256
/* ... and from this many elements of b (256 KiB of f32). */
#define TL_MM_AUTOPACK_ELEMS ((int64_t)1 << 16)
/* ... int8 from this many (512 KiB): below it the staging per M block costs less than a packing
 * run of its own per call (on the Zen 5 VM, `tilec bench gemm --dtype int8 --threads 2 --peers
 * none`, an environment toggle in one build, 5 rounds, medians: 256^3 26 -> 22 us, 384^3 76 ->
 * 72, 512^3 164 -> 159; 640^3 / 768^3 / 1024^3, 2048x256x256, 4096x512x256 within 1%; bf16 lost
 * without the packing, 256^3 49 -> 52 us, 1000^3 2.29 -> 3.33 ms with none below 2^30) */
#define TL_MM_AUTOPACK_ELEMS_I8_MANY ((int64_t)1 << 19)
/* bf16 / int8 b is staged into the VNNI layout once per M block (at most TL_MM_BM_MAX rows): from
 * two M blocks on, a large b is packed once instead (`tilec bench gemm --sizes S --threads 2
 * --dtype D --peers none`, builds alternating, 4 rounds, medians: bf16
 * 136x4096x4096 14.4 -> 13.2 ms, 200x4096x4096 19.4 -> 18.1, 200x1000x1000 1.21 -> 1.08,
 * 240x1000x1000 1.45 -> 1.25; int8 136x4096x4096 7.60 -> 6.98, 200x4096x4096 9.61 -> 9.13).
 * Smaller b lost (bf16 160x512x512 234 -> 250 us; int8 200x1000x1000 603 -> 665 us, 192x2048x2048
 * even), hence the element counts; with one M block (up to 128 rows) packing per call measured
 * 8-20% slower. */
#define TL_MM_AUTOPACK_ROWS_VNNI (TL_MM_BM_MAX + 1)
#define TL_MM_AUTOPACK_ELEMS_BF16 ((int64_t)1 << 20)
#define TL_MM_AUTOPACK_ELEMS_I8 ((int64_t)1 << 23)

/* See matmul_impl.h. */
int tl_mm_autopack_applies(const tl_tensor *a, const tl_tensor *b) {
  if (!tl_mm_pack_pair(a->dtype, b->dtype) || b->layout.tiled || b->ndim != 2) return 0;
  const int64_t K = b->shape[0], N = b->shape[1];
  if (K < 16 || N < 32) return 0;
  const int64_t rows = tl_tensor_numel(a) / K;
  /* a small b stays in cache anyway, and packing it is a kernel run of its own per call */
  const int64_t many = b->dtype == TL_I8 || b->dtype == TL_U8 ? TL_MM_AUTOPACK_ELEMS_I8_MANY : TL_MM_AUTOPACK_ELEMS;
  if (K * N >= many && rows >= TL_MM_AUTOPACK_ROWS) return 1;
  const int64_t vnni_elems = b->dtype == TL_BF16 ? TL_MM_AUTOPACK_ELEMS_BF16 : TL_MM_AUTOPACK_ELEMS_I8;
  return b->dtype != TL_F32 && K * N >= vnni_elems && rows >= TL_MM_AUTOPACK_ROWS_VNNI;
}

int tl_mm_autopack(tl_ctx *ctx, const tl_tensor *a, const tl_tensor *b, tl_tensor *packed) {
  if (!tl_mm_autopack_applies(a, b)) return 0;
  const tl_dtype dt = b->dtype;
  const int64_t K = b->shape[0], N = b->shape[1], es = (int64_t)tl_dtype_size(dt);
  const tl_layout lay = tl_mm_pack_layout(dt, K, 1);
  const int64_t tr = lay.tile_r, nkt = TL_CDIV(K, tr), ntc = TL_CDIV(N, 16);
  const size_t bytes = (size_t)(nkt * ntc * tr * 16 * es);
  tl_mm_pbuf *pb = tl_ctx_slot_get(ctx, &tl_mm_pbuf_slot);
  if (!pb) {
    pb = tl_calloc(1, sizeof *pb);
    if (!pb) return 0;
    if (tl_ctx_slot_set(ctx, &tl_mm_pbuf_slot, pb) != TL_OK) {
      tl_free_mem(pb);
      return 0;
    }
  }
  if (pb->cap < bytes) {
    void *nb = tl_alloc_huge(bytes);
    if (!nb) return 0; /* no memory for the copy: run unpacked */
    tl_free_huge(pb->buf);
    pb->buf = nb, pb->cap = bytes;
  }
  if (tl_mm_pack_run(ctx, pb, b, lay, pb->buf) != TL_OK) return 0;
  const int64_t shape[2] = {K, N};
  *packed = tl_tensor_make_tiled(pb->buf, dt, 2, shape, lay);
  return 1;
}

/* ---- registry entries ---- */

/* Allocates buffer slot `slot` of n elements of dt with random values in [-1, 1) (integers:
 * -100..100, u8: 0..200), from f32 slot `tmp_slot` (freed again). NULL when out of memory. */
static void *tl_mm_kcase_buf(tl_kcase *kc, int slot, int tmp_slot, tl_dtype dt, int64_t n, uint64_t seed) {
  if (tl_kcase_dry() && dt != TL_F32) /* allocated, not converted */
    return kc->bufs[slot] = tl_aligned_alloc(64, (size_t)(n > 0 ? n : 1) * tl_dtype_size(dt));
  float *f = tl_kcase_alloc_f32(kc, tmp_slot, n, -1, 1, seed);
  if (!f || dt == TL_F32) {
    if (f && slot != tmp_slot) kc->bufs[slot] = f, kc->bufs[tmp_slot] = NULL;
    return f;
  }
  void *p = tl_aligned_alloc(64, (size_t)(n > 0 ? n : 1) * tl_dtype_size(dt));
  if (p) {
    for (int64_t i = 0; i < n; i++) {
      if (dt == TL_BF16) ((uint16_t *)p)[i] = tl_f32_to_bf16(f[i]);
      else if (dt == TL_I8) ((int8_t *)p)[i] = (int8_t)lrintf(f[i] * 100);
      else ((uint8_t *)p)[i] = (uint8_t)lrintf(f[i] * 100 + 100);
    }
  }
  tl_aligned_free(f);
  kc->bufs[tmp_slot] = NULL;
  kc->bufs[slot] = p;
  return p;
}

/* tl_kcase.call of a K-split instance: tl_matmul itself on the instance's a, b and c (its plan
 * cache keeps both plans after the first call). */
static tl_status tl_mm_kcase_call(tl_ctx *ctx, const tl_kcase *kc) {
  const tl_matmul_opts o = TL_MATMUL_OPTS_INIT;
  tl_tensor c = kc->out[0]; /* (the view is the instance's; the data is written) */
  return tl_matmul(ctx, &kc->in[0], &kc->in[1], &c, &o);
}

/* Builds the tl_matmul kernel for "MxNxK" with a of dtype da (b: da, or i8 for u8; c: f32, or
 * i32 for u8). */
static tl_status tl_mm_make_dt(tl_ctx *ctx, const char *shape, tl_kcase *kc, char *err, size_t errn, tl_dtype da,
                               const char *name) {
  int64_t d[3];
  int n = tl_shape_parse(shape ? shape : "512x512x512", d, 3, err, errn);
  if (n < 0) return TL_ERR_SHAPE;
  if (n != 3) {
    tl_msg(err, errn, "%s: shape is MxNxK, got %d sizes", name, n);
    return TL_ERR_SHAPE;
  }
  const int64_t M = d[0], N = d[1], K = d[2];
  if (tl_kcase_elems(M, K, "matmul A", err, errn) < 0 || tl_kcase_elems(K, N, "matmul B", err, errn) < 0 ||
      tl_kcase_elems(M, N, "matmul C", err, errn) < 0)
    return TL_ERR_SHAPE;
  memset(kc, 0, sizeof *kc);
  snprintf(kc->name, sizeof kc->name, "%s", name);
  snprintf(kc->shape, sizeof kc->shape, "%lldx%lldx%lld", (long long)M, (long long)N, (long long)K);
  const tl_dtype db = da == TL_U8 ? TL_I8 : da, dc = da == TL_U8 ? TL_I32 : TL_F32;
  kc->dtype = da == TL_U8 ? TL_I8 : da;
  void *a = tl_mm_kcase_buf(kc, 0, 3, da, M * K, 3), *b = tl_mm_kcase_buf(kc, 1, 3, db, K * N, 4);
  void *c = tl_aligned_alloc(64, (size_t)(M * N) * 4);
  kc->bufs[2] = c;
  tl_mm_run *run = tl_calloc(1, sizeof *run);
  kc->user = run;
  if (!a || !b || !c || !run) {
    tl_kcase_free(kc);
    tl_msg(err, errn, "out of memory for %s", shape);
    return TL_ERR_NOMEM;
  }
  int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
  tl_tensor ta = tl_tensor_make(a, da, 2, sa), tb = tl_tensor_make(b, db, 2, sb), tc = tl_tensor_make(c, dc, 2, sc);
  tl_mm_build bd;
  const tl_matmul_opts o = TL_MATMUL_OPTS_INIT;
  /* the plan tl_matmul runs: with b packed first when it would pack it per call (256 rows of a
   * and more; bf16 / int8 with a large b from 129), into a buffer of the instance (packed once
   * here; not part of a timed run) */
  tl_status s = TL_OK;
  if (tl_mm_autopack_applies(&ta, &tb)) {
    tl_tensor packed;
    if (tl_kcase_dry()) { /* the packed storage, allocated and not written */
      const tl_layout lay = tl_mm_pack_layout(db, K, 1);
      const int64_t bytes = TL_CDIV(K, lay.tile_r) * lay.tile_r * TL_CDIV(N, 16) * 16 * (int64_t)tl_dtype_size(db);
      packed = tl_tensor_make_tiled(tl_alloc_huge((size_t)bytes), db, 2, sb, lay);
      s = packed.data ? TL_OK : tl_ctx_fail(ctx, TL_ERR_NOMEM, "out of memory for a packed b of %lld bytes", (long long)bytes);
    } else {
      s = tl_mm_pack_b(ctx, &tb, da, 1, &packed);
    }
    if (s == TL_OK) kc->huge = packed.data, tb = packed;
  }
  if (s == TL_OK) s = tl_mm_prepare(ctx, &ta, &tb, &tc, &o, &bd);
  /* the build tl_matmul would plan, decided the same way (until 2026-11-26 explain and roofline
   * showed the heuristic's blocks whatever the tuning DB held); the plan is explain's to make */
  if (s == TL_OK) {
    tl_mm_build used;
    tl_plan *plan = NULL;
    int tuned = 0;
    s = tl_mm_plan_make(ctx, &ta, &tb, &tc, &o, &bd, &used, &plan, &tuned);
    tl_plan_free(plan);
    if (s == TL_OK) bd = used;
    if (tuned)
      snprintf(kc->config, sizeof kc->config, "tuning DB: BM=%lld BN=%lld BK=%lld", (long long)bd.run.BM,
               (long long)bd.run.BN, (long long)bd.run.BK);
    else if (bd.split) { /* one plan here: tl_matmul's K split runs two (kc->call: tl_matmul itself) */
      snprintf(kc->config, sizeof kc->config, "shown unsplit: tl_matmul splits K between %d threads here", bd.split);
      snprintf(kc->call_what, sizeof kc->call_what, "tl_matmul: K split between %d threads, two plans", bd.split);
      kc->call = tl_mm_kcase_call;
    }
  }
  if (s != TL_OK) {
    tl_msg(err, errn, "%s", tl_ctx_error(ctx));
    tl_kcase_free(kc);
    return s;
  }
  *run = bd.run;
  kc->k = bd.k;
  for (int i = 0; i < bd.k.n_in; i++) kc->specs[i] = bd.in[i], kc->in[i] = bd.tin[i];
  kc->specs[bd.k.n_in] = bd.out[0];
  kc->out[0] = bd.tout[0];
  for (int i = 0; i < bd.k.n_scratch; i++) kc->scratch[i] = bd.scr[i];
  kc->k.name = kc->name;
  kc->k.in = kc->specs, kc->k.out = &kc->specs[bd.k.n_in], kc->k.scratch = bd.k.n_scratch ? kc->scratch : NULL;
  kc->k.user = run;
  return TL_OK;
}

/* The registry's three make functions: f32, bf16 -> f32, u8 x i8 -> i32. */
static tl_status tl_mm_make_f32(tl_ctx *ctx, const char *shape, tl_kcase *kc, char *err, size_t errn) {
  return tl_mm_make_dt(ctx, shape, kc, err, errn, TL_F32, "matmul");
}
static tl_status tl_mm_make_bf16(tl_ctx *ctx, const char *shape, tl_kcase *kc, char *err, size_t errn) {
  return tl_mm_make_dt(ctx, shape, kc, err, errn, TL_BF16, "matmul_bf16");
}
static tl_status tl_mm_make_u8(tl_ctx *ctx, const char *shape, tl_kcase *kc, char *err, size_t errn) {
  return tl_mm_make_dt(ctx, shape, kc, err, errn, TL_U8, "matmul_u8i8");
}

/* Relative error of C against A @ B in double (inputs read in their dtype), on up to 64 sampled
 * rows. The kernel's tensors are 3-D [1, R, C] views, but a packed b (2-D, tiled): b is then
 * read from its row-major source, the instance's buffer 1. */
static double tl_mm_kcase_check(const tl_kcase *kc) {
  const tl_tensor *a = &kc->in[0], *c = &kc->out[0];
  tl_tensor b = kc->in[1];
  if (b.layout.tiled) b.data = kc->bufs[1];
  const int64_t M = a->shape[1], K = a->shape[2], N = c->shape[2];
  const int64_t step = M > 64 ? M / 64 : 1;
  double num = 0, den = 0;
  for (int64_t i = 0; i < M; i += step)
    for (int64_t j = 0; j < N; j++) {
      double r = 0;
      for (int64_t q = 0; q < K; q++) r += tl_load_f64(a->data, a->dtype, i * K + q) * tl_load_f64(b.data, b.dtype, q * N + j);
      double o = tl_load_f64(c->data, c->dtype, i * N + j);
      num += (o - r) * (o - r), den += r * r;
    }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

const tl_kernel_desc tl_kernel_matmul = {
    .name = "matmul",
    .summary = "tl_matmul's kernel, f32: grid (batch, N, M, K blocks), epilogue on the last K step; b packed first "
               "from 256 rows of a, as tl_matmul packs it (the packing is not in the timed run)",
    .shape_syntax = "MxNxK",
    .shapes = "512x512x512 1024x1024x1024 16x4096x4096",
    .make = tl_mm_make_f32,
    .check = tl_mm_kcase_check,
    .tolerance = 1e-5,
};

const tl_kernel_desc tl_kernel_matmul_bf16 = {
    .name = "matmul_bf16",
    .summary = "tl_matmul's kernel, bf16 x bf16 -> f32, b staged tiled vnni 2 (up to 16 rows of a: read row-major in "
               "place; packed first where tl_matmul packs it per call, untimed)",
    .shape_syntax = "MxNxK",
    .shapes = "512x512x512 1024x1024x1024",
    .make = tl_mm_make_bf16,
    .check = tl_mm_kcase_check,
    .tolerance = 1e-5, /* the reference reads the same bf16 inputs: only f32 summation differs */
};

const tl_kernel_desc tl_kernel_matmul_u8i8 = {
    .name = "matmul_u8i8",
    .summary = "tl_matmul's kernel, u8 x i8 -> i32, b staged tiled vnni 4 (up to 16 rows of a: read row-major, in "
               "place or as a copy; packed first where tl_matmul packs it per call, untimed)",
    .shape_syntax = "MxNxK",
    .shapes = "512x512x512 1024x1024x1024",
    .make = tl_mm_make_u8,
    .check = tl_mm_kcase_check,
    .tolerance = 0,
};
