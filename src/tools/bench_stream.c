/* bench_stream.c — the `copy` and `scale` suites of `tilec bench`: y = x, y = a*x and x *= a over
 * f32 arrays of a given byte size, tilec next to every peer present.
 *
 * tilec's rows run the registry's streaming kernels (src/kernels/stream.c: a grid over blocks of
 * whole rows of a [n/1024, 1024] view, about 64 KiB per block) through the executor: the plan is
 * made once per group and only tl_plan_run is timed, once with the blocks used in place
 * (TL_STAGE_AUTO) and once staged (TL_STAGE_ALWAYS: each block copied into the worker's VMEM
 * buffer, computed there and written back). x *= a gives the same tensor as input and output, so
 * staging shares one buffer (read-modify-write). The peers: a plain C loop on the same number of
 * threads (persistent pthreads), memcpy (copy; one thread), OpenBLAS, BLIS, oneDNN and PyTorch
 * when present (bench_peers.c).
 *
 * Invariants: every implementation is checked on buffer set 0 before any timing — output poisoned
 * with NaN first, compared element by element with the exact expected value (a = 2, so a*x is
 * exact) and the input checked unchanged — and a mismatch is a WRONG row that is not timed.
 * In-place rows keep scaling their buffers while timed (values grow to inf, which costs nothing
 * on x86; no denormals appear). GB/s counts 2 x size per call (read x, write y or x), not the
 * write-allocate reads of the destination.
 */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/kernels_impl.h"
#include "bench_impl.h"
#include "tools_impl.h"

enum { TL_OP_COPY, TL_OP_SCALE, TL_OP_SCALE_INPLACE };
enum { TL_K_TILEC, TL_K_CLOOP, TL_K_MEMCPY, TL_K_OPENBLAS, TL_K_BLIS, TL_K_DNNL, TL_K_TORCH };

/* The factor of the registry's scale kernel (y = 2x, src/kernels/stream.c); every row uses it.
 * Checked: were the registry to change it, tilec's rows would come out WRONG. */
#define TL_STREAM_A 2.0f

/* One group's data: the buffer sets and what every implementation shares. */
typedef struct tl_sdata {
  tl_benv *env;
  int op;
  int64_t n, rows, cols;
  int64_t copies;
  float **x, **y;   /* [copies]; y == x for in place; set 0 is the registry instance's buffers */
  float a;
} tl_sdata;

/* One implementation's state (the arg of its call). */
typedef struct tl_simpl {
  tl_sdata *d;
  int kind;
  tl_plan *plan;
  tl_bdnnl_op *dop;
  char *note;       /* the row's note: where a failing call says why */
} tl_simpl;

/* ---- sizes ---- */

/* Parses "32K", "8MiB", "1G", "4096" (K/M/G are binary) into bytes; 0 or -1 with a message. */
static int tl_stream_parse(const char *tok, int64_t *bytes, char *err, size_t errn) {
  char *end;
  double v = strtod(tok, &end);
  int64_t mul = 1;
  if (end == tok || !(v > 0)) goto bad;
  switch (toupper((unsigned char)*end)) {
  case 'K': mul = (int64_t)1 << 10, end++; break;
  case 'M': mul = (int64_t)1 << 20, end++; break;
  case 'G': mul = (int64_t)1 << 30, end++; break;
  default: break;
  }
  if (mul > 1 && *end == 'i') end++;
  if (*end == 'B' || *end == 'b') end++;
  if (*end) goto bad;
  double b = v * (double)mul;
  if (b > (double)((int64_t)16 << 30) || b != floor(b) || (int64_t)b % 4 != 0 || b < 4) {
    snprintf(err, errn, "size '%s': need a multiple of 4 bytes from 4 B to 16 GiB", tok);
    return -1;
  }
  *bytes = (int64_t)b;
  return 0;
bad:
  snprintf(err, errn, "size '%s': expected BYTES with an optional K, M or G (KiB, MiB, GiB), e.g. 32K, 8M, 1G", tok);
  return -1;
}

/* The suites' size_check: 0 when tok parses (tl_stream_parse). */
static int tl_stream_size_check(const char *tok, char *err, size_t errn) {
  int64_t b;
  return tl_stream_parse(tok, &b, err, errn);
}

/* ---- the calls ---- */

/* The C loop's work for worker w of nw: its slice of the array, in 16-element units. */
typedef struct tl_cloop_job {
  const float *x;
  float *y;
  int64_t n;
  float a;
  int op;
} tl_cloop_job;

/* The C loop on one worker: y = x or y = a*x over its slice (y may be x). */
static void tl_cloop_fn(void *arg, int w, int nw) {
  const tl_cloop_job *j = arg;
  int64_t units = (j->n + 15) / 16;
  int64_t lo = units * w / nw * 16, hi = units * (w + 1) / nw * 16;
  if (hi > j->n) hi = j->n;
  const float *x = j->x;
  float *y = j->y;
  const float a = j->a;
  if (j->op == TL_OP_COPY)
    for (int64_t i = lo; i < hi; i++) y[i] = x[i];
  else
    for (int64_t i = lo; i < hi; i++) y[i] = a * x[i];
}

/* A BLAS call in chunks an int can count. */
#define TL_BLAS_CHUNK ((int64_t)1 << 30)

/* One call of implementation s on buffer set `set`. */
static int tl_stream_call(void *arg, int64_t set) {
  tl_simpl *s = arg;
  tl_sdata *d = s->d;
  tl_bpeers *p = &d->env->peers;
  float *x = d->x[set], *y = d->y[set];
  float a = d->a;
  switch (s->kind) {
  case TL_K_TILEC: {
    int64_t shape[2] = {d->rows, d->cols};
    tl_tensor tx = tl_tensor_make(x, TL_F32, 2, shape), ty = tl_tensor_make(y, TL_F32, 2, shape);
    tl_status st = tl_plan_run(s->plan, &tx, &ty);
    if (st != TL_OK) {
      snprintf(s->note, sizeof ((tl_bimpl *)0)->note, "tl_plan_run: %s: %s", tl_status_name(st), tl_ctx_error(d->env->ctx));
      return 1;
    }
    return 0;
  }
  case TL_K_CLOOP: {
    tl_cloop_job j = {x, y, d->n, a, d->op};
    tl_bpool_run(d->env->pool, tl_cloop_fn, &j);
    return 0;
  }
  case TL_K_MEMCPY:
    memcpy(y, x, (size_t)d->n * sizeof(float));
    return 0;
  case TL_K_OPENBLAS:
    for (int64_t o = 0; o < d->n; o += TL_BLAS_CHUNK) {
      int m = (int)(d->n - o < TL_BLAS_CHUNK ? d->n - o : TL_BLAS_CHUNK);
      if (d->op == TL_OP_COPY) p->ob_scopy(m, x + o, 1, y + o, 1);
      else if (d->op == TL_OP_SCALE) p->ob_saxpby(m, a, x + o, 1, 0.0f, y + o, 1);
      else p->ob_sscal(m, a, x + o, 1);
    }
    return 0;
  case TL_K_BLIS:
    if (d->op == TL_OP_COPY) p->bli_scopyv(0, d->n, x, 1, y, 1);
    else if (d->op == TL_OP_SCALE) p->bli_sscal2v(0, d->n, &a, x, 1, y, 1);
    else p->bli_sscalv(0, d->n, &a, x, 1);
    return 0;
  case TL_K_DNNL:
    if (tl_bdnnl_run(p, s->dop, x, y) != 0) {
      snprintf(s->note, sizeof ((tl_bimpl *)0)->note, "dnnl_primitive_execute failed");
      return 1;
    }
    return 0;
  default:
    return 1;
  }
}

/* ---- checking ---- */

/* Checks set 0 after one call of impl: 0 (right), 1 (wrong, note says where). */
static int tl_stream_verify(const tl_sdata *d, char *note, size_t n) {
  const float *x = d->x[0], *y = d->y[0];
  const float mul = d->op == TL_OP_COPY ? 1.0f : d->a;
  for (int64_t i = 0; i < d->n; i++) {
    float want = tl_bench_pattern(i, 0) * mul;
    if (y[i] != want) {
      snprintf(note, n, "element %lld is %g, expected %g (not timed)", (long long)i, (double)y[i], (double)want);
      return 1;
    }
    if (d->op != TL_OP_SCALE_INPLACE && x[i] != tl_bench_pattern(i, 0)) {
      snprintf(note, n, "input element %lld changed to %g (not timed)", (long long)i, (double)x[i]);
      return 1;
    }
  }
  return 0;
}

/* Restores set 0 (x to its pattern, y to NaN) so the next check starts clean. */
static void tl_stream_reset0(const tl_sdata *d) {
  for (int64_t i = 0; i < d->n; i++) d->x[0][i] = tl_bench_pattern(i, 0);
  if (d->op != TL_OP_SCALE_INPLACE)
    for (int64_t i = 0; i < d->n; i++) d->y[0][i] = NAN;
}

/* ---- one group ---- */

/* Adds an implementation row to g (status OK) with its state in st. */
static tl_bimpl *tl_stream_add(tl_bgroup *g, tl_simpl *st, tl_sdata *d, int kind, int tilec, const char *name) {
  tl_bimpl *im = &g->impl[g->n];
  memset(im, 0, sizeof *im);
  snprintf(im->name, sizeof im->name, "%s", name);
  im->tilec = tilec;
  im->fn = tl_stream_call;
  im->arg = st;
  im->status = TL_BROW_OK;
  *st = (tl_simpl){.d = d, .kind = kind, .note = im->note};
  g->n++;
  return im;
}

/* Runs one operation at one size: buffers, plans, checks, timing, cleanup. Returns 0, 1 (a tilec
 * row was wrong or failed: env->status says so too) or -1 (could not run; message printed). */
static int tl_stream_group(tl_benv *env, int op, int64_t bytes) {
  const char *cmd = "bench";
  int rc = -1;
  tl_sdata d = {.env = env, .op = op, .n = bytes / 4, .a = op == TL_OP_COPY ? 1.0f : TL_STREAM_A};
  d.cols = 1024; /* rows of up to 4 KiB: the largest power of two <= 1024 that divides n */
  while (d.n % d.cols) d.cols /= 2;
  d.rows = d.n / d.cols;
  tl_kcase kc;
  memset(&kc, 0, sizeof kc);
  tl_bgroup g;
  memset(&g, 0, sizeof g);
  tl_simpl st[TL_BGROUP_MAX];
  memset(st, 0, sizeof st);
  g.op = op == TL_OP_COPY ? "copy" : op == TL_OP_SCALE ? "scale" : "scale_inplace";
  g.title = op == TL_OP_COPY ? "y = x" : op == TL_OP_SCALE ? "y = a*x" : "x *= a (in place)";
  g.size_bytes = bytes;
  tl_bench_bytes_str(g.size, sizeof g.size, (double)bytes);
  g.moved = 2.0 * (double)bytes;
  g.set_bytes = op == TL_OP_SCALE_INPLACE ? bytes : 2 * bytes;
  g.copies = d.copies = tl_bench_copies(env, g.set_bytes);
  tl_bench_progress(env, "%s %s, %s: preparing %lld buffer set(s)", env->suite->name, g.title, g.size, (long long)d.copies);

  /* tilec's kernel from the registry; its buffers are set 0 */
  const tl_kernel_desc *desc = tl_kernel_find(op == TL_OP_COPY ? "copy" : "scale");
  char shape[64], err[256];
  snprintf(shape, sizeof shape, "%lldx%lld", (long long)d.rows, (long long)d.cols);
  if (!desc) {
    tl_tool_fail(cmd, "the kernel registry has no '%s' kernel", op == TL_OP_COPY ? "copy" : "scale");
    goto out;
  }
  tl_status s = desc->make(env->ctx, shape, &kc, err, sizeof err);
  if (s != TL_OK) {
    tl_tool_fail(cmd, "%s %s: %s: %s", env->suite->name, g.size, tl_status_name(s), err);
    goto out;
  }
  d.x = calloc((size_t)d.copies, sizeof *d.x);
  d.y = calloc((size_t)d.copies, sizeof *d.y);
  if (!d.x || !d.y) goto nomem;
  d.x[0] = kc.in[0].data;
  d.y[0] = op == TL_OP_SCALE_INPLACE ? d.x[0] : kc.out[0].data;
  for (int64_t c = 1; c < d.copies; c++) {
    if (!(d.x[c] = tl_bench_alloc_f32(d.n))) goto nomem;
    if (op == TL_OP_SCALE_INPLACE) d.y[c] = d.x[c];
    else if (!(d.y[c] = tl_bench_alloc_f32(d.n))) goto nomem;
    for (int64_t i = 0; i < d.n; i++) d.x[c][i] = tl_bench_pattern(i, c);
  }

  /* tilec: the registry kernel with its blocks in place, then staged */
  char tnote[96];
  snprintf(tnote, sizeof tnote, "blocks of %lld x %lld, grid %lld", (long long)kc.k.in[0].block[0], (long long)d.cols,
           (long long)kc.k.grid[0]);
  for (int v = 0; v < 2; v++) {
    tl_blockspec specs[2] = {kc.k.in[0], kc.k.out[0]};
    specs[0].stage = specs[1].stage = v ? TL_STAGE_ALWAYS : TL_STAGE_AUTO;
    tl_kernel k = kc.k;
    k.in = &specs[0];
    k.out = &specs[1];
    tl_bimpl *im = tl_stream_add(&g, &st[g.n], &d, TL_K_TILEC, 1, v ? "tilec, blocks staged" : "tilec, blocks in place");
    snprintf(im->note, sizeof im->note, "%s", tnote);
    int64_t sh[2] = {d.rows, d.cols};
    tl_tensor tx = tl_tensor_make(d.x[0], TL_F32, 2, sh), ty = tl_tensor_make(d.y[0], TL_F32, 2, sh);
    s = tl_plan_new(env->ctx, &k, &tx, &ty, &st[g.n - 1].plan);
    if (s != TL_OK) {
      im->status = TL_BROW_FAILED;
      snprintf(im->note, sizeof im->note, "tl_plan_new: %s: %s", tl_status_name(s), tl_ctx_error(env->ctx));
    }
  }
  /* the peers */
  char name[40];
  snprintf(name, sizeof name, "C loop, %d thread%s", env->threads, env->threads == 1 ? "" : "s");
  tl_stream_add(&g, &st[g.n], &d, TL_K_CLOOP, 0, name);
  if (op == TL_OP_COPY) tl_stream_add(&g, &st[g.n], &d, TL_K_MEMCPY, 0, "memcpy, 1 thread");
  tl_bpeers *p = &env->peers;
  if (p->openblas)
    tl_stream_add(&g, &st[g.n], &d, TL_K_OPENBLAS, 0,
                  op == TL_OP_COPY ? "openblas scopy" : op == TL_OP_SCALE ? "openblas saxpby (beta 0)" : "openblas sscal");
  if (p->blis)
    tl_stream_add(&g, &st[g.n], &d, TL_K_BLIS, 0,
                  op == TL_OP_COPY ? "blis scopyv" : op == TL_OP_SCALE ? "blis sscal2v" : "blis sscalv");
  if (p->dnnl) {
    tl_bimpl *im = tl_stream_add(&g, &st[g.n], &d, TL_K_DNNL, 0, op == TL_OP_COPY ? "onednn reorder" : "onednn eltwise_linear");
    tl_simpl *ds = &st[g.n - 1];
    ds->dop = op == TL_OP_COPY ? tl_bdnnl_reorder(p, d.n, err, sizeof err)
                               : tl_bdnnl_eltwise_linear(p, d.n, d.a, 0.0f, err, sizeof err);
    if (!ds->dop) {
      im->status = TL_BROW_FAILED;
      snprintf(im->note, sizeof im->note, "%.150s", err);
    }
  }
  if (p->torch) {
    tl_bimpl *im = tl_stream_add(&g, &st[g.n], &d, TL_K_TORCH, 0,
                                 op == TL_OP_COPY ? "torch copy_" : op == TL_OP_SCALE ? "torch mul(out=)" : "torch mul_");
    im->external = 1;
    im->torch = (tl_btorch_req){.op = g.op, .n = d.n, .a = d.a, .threads = env->threads};
  }

  /* check every in-process implementation on set 0 before timing anything */
  tl_bench_progress(env, "%s %s, %s: checking", env->suite->name, g.title, g.size);
  for (int i = 0; i < g.n; i++) {
    tl_bimpl *im = &g.impl[i];
    if (im->status != TL_BROW_OK || im->external) continue;
    tl_stream_reset0(&d);
    char keep[sizeof im->note];
    snprintf(keep, sizeof keep, "%s", im->note);
    if (tl_stream_call(im->arg, 0) != 0) {
      im->status = TL_BROW_FAILED;
      continue;
    }
    if (tl_stream_verify(&d, im->note, sizeof im->note) != 0) im->status = TL_BROW_WRONG;
    else snprintf(im->note, sizeof im->note, "%s", keep);
  }
  tl_stream_reset0(&d);
  rc = tl_bgroup_run(env, &g) != 0 ? -1 : env->status;
  goto out;
nomem:
  tl_tool_fail(cmd, "%s %s: out of memory for %lld buffer set(s) of %s", env->suite->name, g.size, (long long)d.copies,
               tl_bench_bytes_str(err, sizeof err, (double)g.set_bytes));
out:
  for (int i = 0; i < g.n; i++) {
    tl_plan_free(st[i].plan);
    if (st[i].dop) tl_bdnnl_op_free(&env->peers, st[i].dop);
  }
  for (int64_t c = 1; d.x && c < d.copies; c++) {
    free(d.x[c]);
    if (d.y && d.y[c] != d.x[c]) free(d.y[c]);
  }
  free(d.x);
  free(d.y);
  tl_kcase_free(&kc);
  return rc;
}

/* ---- the suites ---- */

/* The copy suite at one size: y = x. */
static int tl_copy_run(tl_benv *env, const char *size) {
  int64_t bytes;
  char err[160];
  if (tl_stream_parse(size, &bytes, err, sizeof err) != 0) {
    tl_tool_fail("bench", "%s", err);
    return -1;
  }
  return tl_stream_group(env, TL_OP_COPY, bytes);
}

/* The scale suite at one size: y = a*x, then x *= a. */
static int tl_scale_run(tl_benv *env, const char *size) {
  int64_t bytes;
  char err[160];
  if (tl_stream_parse(size, &bytes, err, sizeof err) != 0) {
    tl_tool_fail("bench", "%s", err);
    return -1;
  }
  int r1 = tl_stream_group(env, TL_OP_SCALE, bytes);
  if (r1 < 0) return -1;
  int r2 = tl_stream_group(env, TL_OP_SCALE_INPLACE, bytes);
  if (r2 < 0) return -1;
  return r1 || r2;
}

const tl_bsuite tl_bsuite_copy = {
    .name = "copy",
    .summary = "y = x, f32 (memcpy, OpenBLAS scopy, BLIS scopyv, oneDNN reorder, torch copy_)",
    .size_syntax = "BYTES[K|M|G]",
    .sizes = "32K,512K,8M,64M,1G",
    .quick_sizes = "4K,64K,1M",
    .size_check = tl_stream_size_check,
    .run = tl_copy_run,
};

const tl_bsuite tl_bsuite_scale = {
    .name = "scale",
    .summary = "y = a*x and x *= a, f32 (OpenBLAS saxpby/sscal, BLIS sscal2v/sscalv, oneDNN eltwise_linear, torch mul)",
    .size_syntax = "BYTES[K|M|G]",
    .sizes = "32K,512K,8M,64M,1G",
    .quick_sizes = "4K,64K,1M",
    .size_check = tl_stream_size_check,
    .run = tl_scale_run,
};
