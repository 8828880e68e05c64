/* test_exec.c — the grid executor against references: randomised grids, block shapes, maps,
 * staging modes, layouts and output modes with 1, 2 and more threads than cores; staging counts;
 * cost == stats; determinism; read-modify-write; zero-size no-ops; tl_prog_fail; tiled tensors in
 * place by blocks of one tile row and whole tiles of columns. */
#include <stdatomic.h>
#include <string.h>

#include "exec_util.h"
#include "test_util.h"

/* ---- the randomised gather test ----
 * out [R, C] is cut into blocks b0 x b1; grid (i, j[, k]); the input block each step reads is
 * given by one of several maps; the body copies (WRITE) or adds (ACCUM) the input block into the
 * output block. Values are small integers, so every sum is exact. */
enum { MAP_ID, MAP_T, MAP_OFF, MAP_DIV, MAP_CONST, MAP_COUNT };
static const char *map_name[] = {"identity", "transpose", "offset", "division", "constant"};

typedef struct gather {
  int kind;
  int have_k; /* grid has a third axis (k) the output map ignores */
  int korder; /* 0: (i, j, k); 1: (k, i, j) */
  float pad;
  int staged_reads; /* 1: the body may read the input's padding (not STAGE_NEVER) */
} gather;

static void gather_body(const tl_prog *p, tl_ref *refs, void *user) {
  const gather *g = user;
  tl_ref *in = &refs[0], *out = &refs[1];
  int accum = 0;
  (void)tl_first_visit(p, 0);
  accum = g->have_k;
  for (int64_t r = 0; r < out->valid[0]; r++)
    for (int64_t c = 0; c < out->valid[1]; c++) {
      int64_t ir = g->kind == MAP_T ? c : r, ic = g->kind == MAP_T ? r : c;
      float v;
      if (ir < in->shape[0] && ic < in->shape[1] && (g->staged_reads || (ir < in->valid[0] && ic < in->valid[1])))
        v = *ref_f32(in, ir, ic);
      else
        v = g->pad;
      if (accum) *ref_f32(out, r, c) += v;
      else *ref_f32(out, r, c) = v;
    }
}

static const int64_t block_choices[] = {1, 2, 3, 5, 7, 16, 33, 0};

static void random_layout(test_rng *rng, tl_layout *l) {
  memset(l, 0, sizeof *l);
  if (test_rng_int(rng, 0, 3) != 0) return;
  static const int vn[] = {1, 2, 4};
  l->tiled = 1;
  l->vnni = (uint8_t)vn[test_rng_int(rng, 0, 2)];
  l->tile_r = (uint16_t)(l->vnni * test_rng_int(rng, 1, 4));
  l->tile_c = (uint16_t)test_rng_int(rng, 1, 9);
}

static int gather_case(tl_ctx *ctx, test_rng *rng, int it) {
  int64_t R = test_rng_int(rng, 1, 70), C = test_rng_int(rng, 1, 70);
  int64_t b0 = block_choices[test_rng_int(rng, 0, 7)], b1 = block_choices[test_rng_int(rng, 0, 7)];
  if (b0 == 0) b0 = R;
  if (b1 == 0) b1 = C;
  if (test_rng_int(rng, 0, 9) == 0) b0 = R + test_rng_int(rng, 1, 5); /* larger than the array */
  int64_t nb0 = (R + b0 - 1) / b0, nb1 = (C + b1 - 1) / b1;
  gather g = {.kind = (int)test_rng_int(rng, 0, MAP_COUNT - 1), .have_k = (int)test_rng_int(rng, 0, 1)};
  g.korder = g.have_k ? (int)test_rng_int(rng, 0, 1) : 0;
  g.pad = (float)test_rng_int(rng, -9, 9);
  int64_t K = g.have_k ? test_rng_int(rng, 1, 4) : 1;
  /* input shape and block, map */
  int64_t IR = R, IC = C, ib0 = b0, ib1 = b1;
  const char *map = "i, j -> i, j";
  switch (g.kind) {
  case MAP_T: IR = C, IC = R, ib0 = b1, ib1 = b0, map = "i, j -> j, i"; break;
  case MAP_OFF: IR = R + b0, map = "i, j -> i + 1, j"; break;
  case MAP_DIV: IR = ((nb0 - 1) / 2 + 1) * b0 - test_rng_int(rng, 0, b0 - 1); map = "i, j -> i / 2, j"; break;
  case MAP_CONST: IR = test_rng_int(rng, 1, b0); map = "i, j -> 0, j"; break;
  }
  const char *mapk[MAP_COUNT] = {"i, j, k -> i, j", "i, j, k -> j, i", "i, j, k -> i + 1, j", "i,j,k->i/2,j", "i,j,k->0,j"};
  const char *mapk2[MAP_COUNT] = {"k, i, j -> i, j", "k, i, j -> j, i", "k, i, j -> i + 1, j", "k,i,j->i/2,j", "k,i,j->0,j"};
  if (g.have_k) map = g.korder ? mapk2[g.kind] : mapk[g.kind];
  float *x = malloc(sizeof(float) * (size_t)(IR * IC + 1));
  float *y = malloc(sizeof(float) * (size_t)(R * C));
  float *y0 = malloc(sizeof(float) * (size_t)(R * C));
  for (int64_t e = 0; e < IR * IC; e++) x[e] = (float)test_rng_int(rng, -100, 100);
  for (int64_t e = 0; e < R * C; e++) y0[e] = y[e] = (float)test_rng_int(rng, -100, 100);
  int64_t ish[2] = {IR, IC}, osh[2] = {R, C};
  tl_tensor ti = tl_tensor_make(x, TL_F32, 2, ish), to = tl_tensor_make(y, TL_F32, 2, osh);
  tl_blockspec is = {.ndim = 2, .block = {ib0, ib1}, .map = map, .pad = g.pad};
  is.stage = (tl_stage)test_rng_int(rng, 0, 2);
  if (is.stage != TL_STAGE_NEVER) random_layout(rng, &is.layout);
  g.staged_reads = is.stage != TL_STAGE_NEVER;
  tl_blockspec os = {.ndim = 2, .block = {b0, b1}, .map = g.have_k ? (g.korder ? "k,i,j->i,j" : "i,j,k->i,j") : "i,j->i,j"};
  os.stage = (tl_stage)test_rng_int(rng, 0, 2);
  if (g.have_k) os.out = test_rng_int(rng, 0, 1) ? TL_OUT_ACCUM_ZERO : TL_OUT_ACCUM_LOAD;
  tl_kernel k = {.name = "gather", .body = gather_body, .user = &g, .n_in = 1, .in = &is, .n_out = 1, .out = &os};
  if (g.have_k && g.korder) {
    k.grid_ndim = 3, k.grid[0] = K, k.grid[1] = nb0, k.grid[2] = nb1; /* all sequential */
  } else {
    k.grid_ndim = g.have_k ? 3 : 2, k.grid[0] = nb0, k.grid[1] = nb1, k.grid[2] = K;
    k.sem[0] = TL_PARALLEL;
    k.sem[1] = test_rng_int(rng, 0, 1) ? TL_PARALLEL : TL_ARBITRARY;
  }
  tl_plan *plan = NULL;
  tl_status s = tl_plan_new(ctx, &k, &ti, &to, &plan);
  int ok = 1;
  CHECK(s == TL_OK, "case %d (%s): plan: %s %s", it, map_name[g.kind], tl_status_name(s), tl_ctx_error(ctx));
  if (s == TL_OK) {
    s = tl_plan_run(plan, &ti, &to);
    CHECK(s == TL_OK, "case %d: run: %s %s", it, tl_status_name(s), tl_ctx_error(ctx));
    int64_t bad = 0;
    for (int64_t r = 0; r < R && s == TL_OK; r++)
      for (int64_t c = 0; c < C; c++) {
        int64_t bi = r / b0, rr = r % b0;
        int64_t sr, sc, srow_valid;
        float v;
        switch (g.kind) {
        case MAP_T: sr = c, sc = r; v = x[sr * IC + sc]; break;
        case MAP_OFF: sr = r + b0, sc = c; v = x[sr * IC + sc]; break;
        case MAP_DIV:
          sr = (bi / 2) * b0 + rr, sc = c;
          srow_valid = sr < IR;
          v = srow_valid ? x[sr * IC + sc] : g.pad;
          break;
        case MAP_CONST: sr = rr, sc = c; v = sr < IR ? x[sr * IC + sc] : g.pad; break;
        default: sr = r, sc = c; v = x[sr * IC + sc]; break;
        }
        float want = v;
        if (g.have_k) want = (os.out == TL_OUT_ACCUM_LOAD ? y0[r * C + c] : 0.0f) + (float)K * v;
        if (y[r * C + c] != want) {
          if (bad++ < 3)
            fprintf(stderr, "  case %d (%s, k=%d order %d, R=%lld C=%lld b=%lldx%lld, stage %d/%d, layout %d %ux%u v%u): y[%lld,%lld] = %g, want %g\n",
                    it, map_name[g.kind], g.have_k, g.korder, (long long)R, (long long)C, (long long)b0, (long long)b1, is.stage,
                    os.stage, is.layout.tiled, is.layout.tile_r, is.layout.tile_c, is.layout.vnni, (long long)r, (long long)c,
                    y[r * C + c], want);
        }
      }
    CHECK(bad == 0, "case %d: %lld wrong elements", it, (long long)bad);
    ok = bad == 0;
    tl_cost cost;
    tl_stats st;
    tl_plan_cost(plan, &cost);
    tl_plan_stats(plan, &st);
    CHECK(cost.bytes_read == st.bytes_read && cost.bytes_written == st.bytes_written,
          "case %d: cost %lld/%lld bytes read/written, stats %lld/%lld", it, (long long)cost.bytes_read,
          (long long)cost.bytes_written, (long long)st.bytes_read, (long long)st.bytes_written);
    CHECK(st.steps == nb0 * nb1 * K, "case %d: %lld steps", it, (long long)st.steps);
    tl_plan_free(plan);
  }
  free(x), free(y), free(y0);
  return ok;
}

static void test_random_gather(void) {
  int threads[] = {1, 2, 5};
  for (int t = 0; t < 3; t++) {
    tl_ctx *ctx = make_ctx(threads[t]);
    test_rng rng = {0x9E3779B97F4A7C15ull + (uint64_t)t};
    for (int it = 0; it < 400; it++) gather_case(ctx, &rng, it);
    tl_ctx_free(ctx);
  }
}

/* ---- matmul staging counts: k innermost (WRITE) and the BLIS order j, k, i (ACCUM_ZERO) ---- */
typedef struct mm { int64_t K; int blis; } mm;
static void mm_body(const tl_prog *p, tl_ref *refs, void *user) {
  const mm *m = user;
  tl_ref *a = &refs[0], *b = &refs[1], *c = &refs[2];
  int first = m->blis ? 0 : tl_program_id(p, 2) == 0;
  for (int64_t i = 0; i < c->shape[0]; i++)
    for (int64_t j = 0; j < c->shape[1]; j++) {
      float acc = first ? 0.0f : *ref_f32(c, i, j);
      for (int64_t k = 0; k < a->shape[1]; k++) acc += *ref_f32(a, i, k) * *ref_f32(b, k, j);
      *ref_f32(c, i, j) = acc;
    }
}

static void test_staging_counts(void) {
  int64_t M = 50, N = 37, K = 29, bm = 16, bn = 8, bk = 8;
  int64_t I = 4, J = 5, KB = 4;
  float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N), *Cm = malloc(sizeof(float) * M * N);
  test_rng rng = {77};
  for (int64_t e = 0; e < M * K; e++) A[e] = (float)test_rng_int(&rng, -3, 3);
  for (int64_t e = 0; e < K * N; e++) B[e] = (float)test_rng_int(&rng, -3, 3);
  int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
  tl_tensor in[2] = {tl_tensor_make(A, TL_F32, 2, sa), tl_tensor_make(B, TL_F32, 2, sb)};
  tl_tensor out = tl_tensor_make(Cm, TL_F32, 2, sc);
  for (int threads = 1; threads <= 2; threads++) {
    tl_ctx *ctx = make_ctx(threads);
    for (int blis = 0; blis <= 1; blis++) {
      mm m = {K, blis};
      tl_blockspec specs[3] = {
          {.ndim = 2, .block = {bm, bk}, .map = blis ? "j,k,i->i,k" : "i,j,k->i,k"},
          {.ndim = 2, .block = {bk, bn}, .map = blis ? "j,k,i->k,j" : "i,j,k->k,j"},
          {.ndim = 2, .block = {bm, bn}, .map = blis ? "j,k,i->i,j" : "i,j,k->i,j", .out = blis ? TL_OUT_ACCUM_ZERO : TL_OUT_WRITE}};
      tl_kernel k = {.name = blis ? "mm_blis" : "mm_kinner", .body = mm_body, .user = &m, .grid_ndim = 3,
                     .n_in = 2, .in = specs, .n_out = 1, .out = &specs[2], .flops = 2 * M * N * K};
      if (blis) k.grid[0] = J, k.grid[1] = KB, k.grid[2] = I, k.sem[0] = TL_PARALLEL;
      else k.grid[0] = I, k.grid[1] = J, k.grid[2] = KB, k.sem[0] = TL_PARALLEL, k.sem[1] = TL_PARALLEL;
      for (int64_t e = 0; e < M * N; e++) Cm[e] = NAN;
      tl_plan *plan;
      tl_status s = tl_plan_new(ctx, &k, in, &out, &plan);
      REQUIRE(s == TL_OK, "plan: %s", tl_ctx_error(ctx));
      s = tl_plan_run(plan, in, &out);
      CHECK(s == TL_OK, "run: %s", tl_ctx_error(ctx));
      double err = 0;
      for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
          double r = 0;
          for (int64_t q = 0; q < K; q++) r += (double)A[i * K + q] * B[q * N + j];
          err = fmax(err, fabs(r - Cm[i * N + j]));
        }
      CHECK(err == 0, "blis=%d threads=%d: max error %g", blis, threads, err);
      tl_stats st;
      tl_cost cost;
      tl_plan_stats(plan, &st);
      tl_plan_cost(plan, &cost);
      if (!blis) {
        CHECK(st.stage_events[0] == I * J * KB, "k-inner: A entered %lld times, want %lld (once per (i,k) change)",
              (long long)st.stage_events[0], (long long)(I * J * KB));
        CHECK(st.stage_events[2] == I * J, "k-inner: C entered %lld times, want %lld", (long long)st.stage_events[2], (long long)(I * J));
      } else {
        CHECK(st.stage_events[1] == J * KB, "BLIS order: B entered %lld times, want %lld (once per (j,k))",
              (long long)st.stage_events[1], (long long)(J * KB));
        CHECK(st.stage_events[0] == J * KB * I, "BLIS order: A entered %lld times", (long long)st.stage_events[0]);
      }
      CHECK(st.bytes_read == cost.bytes_read && st.bytes_written == cost.bytes_written,
            "blis=%d: stats %lld/%lld vs cost %lld/%lld", blis, (long long)st.bytes_read, (long long)st.bytes_written,
            (long long)cost.bytes_read, (long long)cost.bytes_written);
      int64_t sum = 0;
      for (int i = 0; i < 3; i++) sum += cost.operand_bytes[i];
      CHECK(sum == cost.bytes_read + cost.bytes_written, "operand bytes add up");
      CHECK(cost.flops == 2 * M * N * K, "flops carried");
      /* B in the BLIS order is read exactly once: K*N*4 bytes */
      if (blis) CHECK(cost.operand_bytes[1] == K * N * 4, "B read %lld bytes, want %lld", (long long)cost.operand_bytes[1], (long long)(K * N * 4));
      tl_plan_free(plan);
    }
    tl_ctx_free(ctx);
  }
  free(A), free(B), free(Cm);
}

/* ---- determinism: float sums in a fixed order, bitwise equal over runs ---- */
static void sum_body(const tl_prog *p, tl_ref *refs, void *user) {
  tl_ref *x = &refs[0], *y = &refs[1];
  if (tl_first_visit(p, 0)) *(float *)y->data = 0;
  float s = *(float *)y->data;
  for (int64_t c = 0; c < x->valid[1]; c++) s += *ref_f32(x, 0, c);
  *(float *)y->data = s;
}

static void test_determinism(void) {
  int64_t R = 257, C = 1031;
  float *x = malloc(sizeof(float) * R * C), y1[257], y2[257];
  test_rng rng = {5};
  for (int64_t e = 0; e < R * C; e++) x[e] = (float)test_rng_uniform(&rng, -1, 1);
  int64_t sx[2] = {R, C}, sy[2] = {R, 1};
  tl_tensor tx = tl_tensor_make(x, TL_F32, 2, sx);
  tl_blockspec specs[2] = {{.ndim = 2, .block = {1, 64}, .map = "i,j->i,j"}, {.ndim = 2, .block = {1, 1}, .map = "i,j->i,0", .out = TL_OUT_ACCUM_ZERO}};
  tl_kernel k = {.name = "rowsum", .body = sum_body, .grid_ndim = 2, .grid = {R, (C + 63) / 64}, .sem = {TL_PARALLEL},
                 .n_in = 1, .in = specs, .n_out = 1, .out = &specs[1]};
  tl_ctx *ctx = make_ctx(2);
  tl_tensor t1 = tl_tensor_make(y1, TL_F32, 2, sy), t2 = tl_tensor_make(y2, TL_F32, 2, sy);
  CHECK(tl_call(ctx, &k, &tx, &t1) == TL_OK, "%s", tl_ctx_error(ctx));
  for (int rep = 0; rep < 5; rep++) {
    CHECK(tl_call(ctx, &k, &tx, &t2) == TL_OK, "%s", tl_ctx_error(ctx));
    CHECK(!memcmp(y1, y2, sizeof y1), "run %d differs bitwise", rep);
  }
  double err = 0;
  for (int64_t r = 0; r < R; r++) {
    double s = 0;
    for (int64_t c = 0; c < C; c++) s += x[r * C + c];
    err = fmax(err, fabs(s - y1[r]));
  }
  CHECK(err < 1e-3, "row sums off by %g", err);
  tl_ctx_free(ctx);
  free(x);
}

/* ---- read-modify-write: the same tensor as input and output shares one staged buffer ---- */
static void double_body(const tl_prog *p, tl_ref *refs, void *user) {
  tl_ref *x = &refs[0], *y = &refs[1];
  CHECK(x->data == y->data, "in and out share a buffer");
  for (int64_t r = 0; r < y->valid[0]; r++)
    for (int64_t c = 0; c < y->valid[1]; c++) *ref_f32(y, r, c) = 2 * *ref_f32(x, r, c);
}

static void test_rmw(void) {
  int64_t sh[2] = {45, 31};
  float *x = malloc(sizeof(float) * 45 * 31), *ref = malloc(sizeof(float) * 45 * 31);
  for (int e = 0; e < 45 * 31; e++) ref[e] = x[e] = (float)(e % 17 - 8);
  tl_tensor t = tl_tensor_make(x, TL_F32, 2, sh);
  for (int stage = 0; stage <= 2; stage++) {
    tl_blockspec s = {.ndim = 2, .block = {8, 16}, .map = "i,j->i,j", .stage = (tl_stage)stage};
    tl_kernel k = {.name = "double", .body = double_body, .grid_ndim = 2, .grid = {6, 2}, .sem = {TL_PARALLEL, TL_PARALLEL},
                   .n_in = 1, .in = &s, .n_out = 1, .out = &s};
    tl_ctx *ctx = make_ctx(2);
    tl_plan *plan;
    REQUIRE(tl_plan_new(ctx, &k, &t, &t, &plan) == TL_OK, "%s", tl_ctx_error(ctx));
    tl_cost cost;
    tl_plan_cost(plan, &cost);
    /* one buffer for both; none when never staged (always in place) */
    const int64_t want = stage == TL_STAGE_NEVER ? 0 : 8 * 16 * 4;
    CHECK(cost.vmem_bytes == want, "shared buffer counted once (stage %d): %lld", stage, (long long)cost.vmem_bytes);
    CHECK(tl_plan_run(plan, &t, &t) == TL_OK, "%s", tl_ctx_error(ctx));
    int bad = 0;
    for (int e = 0; e < 45 * 31; e++) bad += x[e] != 2 * ref[e], ref[e] *= 2;
    CHECK(bad == 0, "stage %d: %d wrong", stage, bad);
    tl_ctx_free(ctx);
  }
  free(x), free(ref);
}

/* ---- zero-size tensors ---- */
static atomic_int calls;
static void count_body(const tl_prog *p, tl_ref *refs, void *user) {
  atomic_fetch_add(&calls, 1);
  tl_ref *c = &refs[1];
  if (c->valid[0] > 0) CHECK(refs[0].valid[1] == 0, "K = 0 block is empty");
  for (int64_t r = 0; r < c->valid[0]; r++)
    for (int64_t j = 0; j < c->valid[1]; j++) *ref_f32(c, r, j) = 7;
}

static void test_zero_size(void) {
  tl_ctx *ctx = make_ctx(2);
  float a[4], c[12];
  int64_t sa[2] = {4, 0}, sc[2] = {4, 3}, sz[2] = {0, 3};
  tl_tensor ta = tl_tensor_make(a, TL_F32, 2, sa), tc = tl_tensor_make(c, TL_F32, 2, sc), tz = tl_tensor_make(c, TL_F32, 2, sz);
  tl_blockspec specs[2] = {{.ndim = 2, .block = {2, 0}, .map = "i->i,0"}, {.ndim = 2, .block = {2, 3}, .map = "i->i,0"}};
  tl_kernel k = {.name = "k0", .body = count_body, .grid_ndim = 1, .grid = {2}, .sem = {TL_PARALLEL}, .n_in = 1, .in = specs,
                 .n_out = 1, .out = &specs[1]};
  atomic_store(&calls, 0);
  for (int e = 0; e < 12; e++) c[e] = 0;
  CHECK(tl_call(ctx, &k, &ta, &tc) == TL_OK, "K = 0 runs: %s", tl_ctx_error(ctx));
  CHECK(atomic_load(&calls) == 2, "K = 0: output visits still run (%d)", atomic_load(&calls));
  CHECK(c[0] == 7 && c[11] == 7, "K = 0: outputs written");
  atomic_store(&calls, 0);
  specs[1].block[0] = 1;
  CHECK(tl_call(ctx, &k, &ta, &tz) == TL_OK, "zero-size output is a no-op: %s", tl_ctx_error(ctx));
  CHECK(atomic_load(&calls) == 0, "no step ran");
  k.grid[0] = 0;
  CHECK(tl_call(ctx, &k, &ta, &tc) == TL_OK, "empty grid is a no-op: %s", tl_ctx_error(ctx));
  CHECK(atomic_load(&calls) == 0, "no step ran");
  tl_ctx_free(ctx);
}

/* ---- tl_prog_fail stops the run ---- */
static void fail_body(const tl_prog *p, tl_ref *refs, void *user) {
  atomic_fetch_add(&calls, 1);
  if (tl_program_id(p, 0) == 3) tl_prog_fail(p, TL_ERR_SHAPE, "step 3 refuses");
}

static void test_prog_fail(void) {
  for (int threads = 1; threads <= 3; threads++) {
    tl_ctx *ctx = make_ctx(threads);
    tl_kernel k = {.name = "failing", .body = fail_body, .grid_ndim = 1, .grid = {1000}, .sem = {TL_PARALLEL}};
    atomic_store(&calls, 0);
    tl_status s = tl_call(ctx, &k, NULL, NULL);
    CHECK(s == TL_ERR_SHAPE, "status %s", tl_status_name(s));
    CHECK(strstr(tl_ctx_error(ctx), "step 3 refuses") && strstr(tl_ctx_error(ctx), "failing"), "message: %s", tl_ctx_error(ctx));
    if (threads == 1) CHECK(atomic_load(&calls) == 4, "stopped after the failing step: %d", atomic_load(&calls));
    CHECK(tl_call(ctx, &k, NULL, NULL) == TL_ERR_SHAPE, "fails again");
    tl_ctx_free(ctx);
  }
}

/* ---- program ids, num_programs, first/last visit ---- */
static int64_t visits_seen[6][4][3];
static void ids_body(const tl_prog *p, tl_ref *refs, void *user) {
  int64_t i = tl_program_id(p, 0), j = tl_program_id(p, 1), k = tl_program_id(p, 2);
  CHECK(tl_num_programs(p, 0) == 6 && tl_num_programs(p, 2) == 3 && tl_num_programs(p, 3) == -1, "num_programs");
  CHECK(tl_program_id(p, -1) == -1 && tl_program_id(p, 3) == -1, "bad axis");
  CHECK(tl_first_visit(p, 0) == (k == 0), "first visit at k == 0");
  CHECK(tl_last_visit(p, 0) == (k == 2), "last visit at k == 2");
  CHECK(tl_first_visit(p, 1) == -1 && tl_last_visit(p, -1) == -1, "bad output index");
  CHECK(tl_worker_id(p) >= 0, "worker id");
  visits_seen[i][j][k]++;
  (void)refs;
}

static void test_program_ids(void) {
  tl_ctx *ctx = make_ctx(3);
  float y[24];
  int64_t sy[2] = {6, 4};
  tl_tensor ty = tl_tensor_make(y, TL_F32, 2, sy);
  tl_blockspec os = {.ndim = 2, .block = {1, 1}, .map = "i,j,k->i,j", .out = TL_OUT_ACCUM_ZERO};
  tl_kernel k = {.name = "ids", .body = ids_body, .grid_ndim = 3, .grid = {6, 4, 3}, .sem = {TL_PARALLEL, TL_PARALLEL},
                 .n_out = 1, .out = &os};
  memset(visits_seen, 0, sizeof visits_seen);
  CHECK(tl_call(ctx, &k, NULL, &ty) == TL_OK, "%s", tl_ctx_error(ctx));
  int bad = 0;
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 4; j++)
      for (int q = 0; q < 3; q++) bad += visits_seen[i][j][q] != 1;
  CHECK(bad == 0, "every step ran once");
  CHECK(tl_program_id(NULL, 0) == -1 && tl_first_visit(NULL, 0) == -1, "NULL prog");
  tl_ctx_free(ctx);
}

/* ---- padding: integers saturate, bf16 pads exactly ---- */
static void pad_body(const tl_prog *p, tl_ref *refs, void *user) {
  tl_ref *x = &refs[0];
  int64_t *out = user;
  if (x->dtype == TL_I8) *out = ((int8_t *)x->data)[x->shape[0] * x->stride[0] - 1];
  else *out = (int64_t)tl_bf16_to_f32(((uint16_t *)x->data)[x->shape[0] * x->stride[0] - 1]);
}

static void test_padding_values(void) {
  tl_ctx *ctx = make_ctx(1);
  int8_t xi[10] = {0};
  uint16_t xb[10] = {0};
  int64_t sh[2] = {5, 2};
  int64_t got = 0;
  tl_tensor ti = tl_tensor_make(xi, TL_I8, 2, sh), tb = tl_tensor_make(xb, TL_BF16, 2, sh);
  tl_blockspec s = {.ndim = 2, .block = {8, 2}, .map = "i->0,0", .pad = 1000};
  tl_kernel k = {.name = "pad", .body = pad_body, .user = &got, .grid_ndim = 1, .grid = {1}, .n_in = 1, .in = &s};
  CHECK(tl_call(ctx, &k, &ti, NULL) == TL_OK, "%s", tl_ctx_error(ctx));
  CHECK(got == 127, "i8 pad 1000 saturates to 127, got %lld", (long long)got);
  s.pad = -1000;
  CHECK(tl_call(ctx, &k, &ti, NULL) == TL_OK, "%s", tl_ctx_error(ctx));
  CHECK(got == -128, "i8 pad -1000 saturates to -128, got %lld", (long long)got);
  s.pad = 24;
  CHECK(tl_call(ctx, &k, &tb, NULL) == TL_OK, "%s", tl_ctx_error(ctx));
  CHECK(got == 24, "bf16 pad 24, got %lld", (long long)got);
  tl_ctx_free(ctx);
}

/* ---- more than two dims, tiled staging of a 3-D tensor, scratch ---- */
static void nd_body(const tl_prog *p, tl_ref *refs, void *user) {
  tl_ref *x = &refs[0], *y = &refs[1], *scr = &refs[2];
  float *acc = scr->data;
  for (int64_t b = 0; b < x->valid[0]; b++)
    for (int64_t r = 0; r < x->valid[1]; r++)
      for (int64_t c = 0; c < x->valid[2]; c++) {
        int64_t lead = b;
        const tl_ref *xr = x;
        float v = *(float *)((char *)tl_ref_tile_nd(xr, &lead, r / x->layout.tile_r, c / x->layout.tile_c) +
                             4 * tl_layout_tile_offset(x->layout, r % x->layout.tile_r, c % x->layout.tile_c));
        acc[0] = v;
        ((float *)y->data)[b * y->stride[0] + r * y->stride[1] + c * y->stride[2]] = acc[0] + 1;
      }
}

static void test_nd_tiled_scratch(void) {
  tl_ctx *ctx = make_ctx(2);
  int64_t sh[3] = {5, 13, 11};
  float *x = malloc(sizeof(float) * 5 * 13 * 11), *y = malloc(sizeof(float) * 5 * 13 * 11);
  for (int e = 0; e < 5 * 13 * 11; e++) x[e] = (float)e, y[e] = -1;
  tl_tensor tx = tl_tensor_make(x, TL_F32, 3, sh), ty = tl_tensor_make(y, TL_F32, 3, sh);
  tl_blockspec is = {.ndim = 3, .block = {2, 4, 4}, .map = "a,b,c->a,b,c", .layout = {.tiled = 1, .vnni = 2, .tile_r = 4, .tile_c = 3}};
  tl_blockspec os = {.ndim = 3, .block = {2, 4, 4}, .map = "a,b,c->a,b,c"};
  tl_scratch sc = {.dtype = TL_F32, .ndim = 1, .shape = {16}};
  tl_kernel k = {.name = "nd", .body = nd_body, .grid_ndim = 3, .grid = {3, 4, 3}, .sem = {TL_PARALLEL, TL_PARALLEL, TL_PARALLEL},
                 .n_in = 1, .in = &is, .n_out = 1, .out = &os, .n_scratch = 1, .scratch = &sc};
  CHECK(tl_call(ctx, &k, &tx, &ty) == TL_OK, "%s", tl_ctx_error(ctx));
  int bad = 0;
  for (int e = 0; e < 5 * 13 * 11; e++) bad += y[e] != x[e] + 1;
  CHECK(bad == 0, "3-D tiled staging: %d wrong", bad);
  free(x), free(y);
  tl_ctx_free(ctx);
}

/* y = x + 1 on the valid part of 2-D tiled refs (of any tiled layout). */
static void tiled_cols_body(const tl_prog *p, tl_ref *refs, void *user) {
  (void)p, (void)user;
  tl_ref *x = &refs[0], *y = &refs[1];
  for (int64_t r = 0; r < y->valid[y->ndim - 2]; r++)
    for (int64_t c = 0; c < y->valid[y->ndim - 1]; c++) {
      tl_ref x2 = *x, y2 = *y;
      if (x->ndim == 3) { /* one matrix of the leading dim: the last two dims as a 2-D ref */
        x2.ndim = y2.ndim = 2;
        for (int d = 0; d < 2; d++) x2.shape[d] = x->shape[d + 1], y2.shape[d] = y->shape[d + 1];
      }
      *ref_f32(&y2, r, c) = *ref_f32(&x2, r, c) + 1;
    }
}

/* Tiled tensors in place with blocks of one tile row and whole tiles of columns (what tl_matmul
 * reads a packed b by): every stage mode, 2-D and 3-D, the last column block reaching past the
 * tensor's last tile (20 columns in 5 tiles of 4, blocks of 8); blocks of two tile rows, or of
 * columns that are not whole tiles, are refused with NEVER and staged by AUTO. */
static void test_tiled_column_blocks(void) {
  const tl_layout l = {.tiled = 1, .vnni = 2, .tile_r = 4, .tile_c = 4};
  for (int nd = 2; nd <= 3; nd++) {
    const int64_t sh[3] = {2, 8, 20}, *s2 = nd == 3 ? sh : sh + 1;
    const int64_t nmat = nd == 3 ? 2 : 1, store = nmat * 2 * 5 * 16;
    float *x = calloc((size_t)store, sizeof(float)), *y = calloc((size_t)store, sizeof(float));
    tl_tensor tx = tl_tensor_make_tiled(x, TL_F32, nd, s2, l), ty = tl_tensor_make_tiled(y, TL_F32, nd, s2, l);
    for (int64_t z = 0; z < nmat; z++)
      for (int64_t r = 0; r < 8; r++)
        for (int64_t c = 0; c < 20; c++) {
          int64_t i3[3] = {z, r, c};
          *(float *)tl_tensor_at(&tx, nd == 3 ? i3 : i3 + 1) = (float)(z * 1000 + r * 100 + c);
        }
    const int64_t blocks[3][2] = {{4, 8}, {8, 8}, {4, 6}}; /* one tile row: in place; two; part tiles */
    for (int bsel = 0; bsel < 3; bsel++)
      for (int stage = 0; stage <= 2; stage++) {
        tl_blockspec s = {.ndim = nd, .layout = l, .stage = (tl_stage)stage};
        s.block[nd - 2] = blocks[bsel][0], s.block[nd - 1] = blocks[bsel][1];
        if (nd == 3) s.block[0] = 1;
        s.map = nd == 3 ? "z, i, j -> z, i, j" : "z, i, j -> i, j";
        tl_kernel k = {.name = "tiled_cols", .body = tiled_cols_body, .grid_ndim = 3,
                       .grid = {nmat, 8 / blocks[bsel][0], (20 + blocks[bsel][1] - 1) / blocks[bsel][1]},
                       .sem = {TL_PARALLEL, TL_PARALLEL, TL_PARALLEL}, .n_in = 1, .in = &s, .n_out = 1, .out = &s};
        memset(y, 0, (size_t)store * sizeof(float));
        tl_ctx *ctx = make_ctx(2);
        const tl_status st = tl_call(ctx, &k, &tx, &ty);
        if (bsel > 0 && stage == TL_STAGE_NEVER) {
          CHECK(st == TL_ERR_INVALID && strstr(tl_ctx_error(ctx), "NEVER"), "%d-D blocks %lldx%lld, NEVER: refused (%s)", nd,
                (long long)blocks[bsel][0], (long long)blocks[bsel][1], tl_ctx_error(ctx));
        } else {
          CHECK(st == TL_OK, "%d-D blocks %lldx%lld, stage %d: %s", nd, (long long)blocks[bsel][0], (long long)blocks[bsel][1],
                stage, tl_ctx_error(ctx));
          int bad = 0;
          for (int64_t z = 0; z < nmat; z++)
            for (int64_t r = 0; r < 8; r++)
              for (int64_t c = 0; c < 20; c++) {
                int64_t i3[3] = {z, r, c};
                bad += *(float *)tl_tensor_at(&ty, nd == 3 ? i3 : i3 + 1) != (float)(z * 1000 + r * 100 + c + 1);
              }
          CHECK(bad == 0, "%d-D blocks %lldx%lld, stage %d: %d wrong elements", nd, (long long)blocks[bsel][0],
                (long long)blocks[bsel][1], stage, bad);
        }
        tl_ctx_free(ctx);
      }
    free(x), free(y);
  }
}

int main(void) {
  RUN(test_random_gather);
  RUN(test_staging_counts);
  RUN(test_determinism);
  RUN(test_rmw);
  RUN(test_zero_size);
  RUN(test_prog_fail);
  RUN(test_program_ids);
  RUN(test_padding_values);
  RUN(test_nd_tiled_scratch);
  RUN(test_tiled_column_blocks);
  return test_summary("runtime_exec");
}
