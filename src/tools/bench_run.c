/* bench_run.c — timing one group of `tilec bench` (one operation at one size, every
 * implementation of it) and what groups share: buffers, the rotation of buffer sets, the plain C
 * loop's persistent threads, rows and the per-size table.
 *
 * A group is timed in batches: one timed "call" of tl_bench_run is `inner` calls of the
 * implementation, inner chosen so a batch of the fastest implementation lasts about batch_s (a
 * 32 KiB copy takes a microsecond, far below what a timer read and a pause around it allow). Every
 * call takes the next buffer set from one counter shared by the whole group, so with cold
 * rotation no call finds its operands in cache from the call before, whichever implementation
 * made it. Reported times are per call (batch time / inner); min and max are those of batches.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench_impl.h"
#include "tools_impl.h"

/* ---- buffers and small helpers (declared in bench_impl.h) ---- */

int64_t tl_bench_copies(const tl_benv *env, int64_t set_bytes) {
  if (!env->cold || set_bytes <= 0) return 1;
  int64_t span = 2 * env->llc_bytes;
  int64_t c = (span + set_bytes - 1) / set_bytes;
  return c < 1 ? 1 : c > 16384 ? 16384 : c;
}

float *tl_bench_alloc_f32(int64_t n) {
  if (n < 1) n = 1;
  if ((uint64_t)n > SIZE_MAX / 4 - 64) return NULL;
  size_t bytes = ((size_t)n * 4 + 63) & ~(size_t)63;
  float *p = aligned_alloc(64, bytes);
  if (p) memset(p, 0, bytes); /* touch every page now, so no page fault is timed */
  return p;
}

const char *tl_bench_bytes_str(char *buf, size_t n, double b) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024.0 && u < 4) b /= 1024.0, u++;
  if (b == floor(b)) snprintf(buf, n, "%.0f %s", b, unit[u]);
  else snprintf(buf, n, "%.3g %s", b, unit[u]);
  return buf;
}

void tl_bench_progress(const tl_benv *env, const char *fmt, ...) {
  if (!env->progress || tl_bench_now() - env->t_start < 1.0) return;
  char msg[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\r\033[Ktilec bench: %s", msg);
  fflush(stderr);
}

/* Clears the progress line (if one may be showing). */
static void tl_bench_progress_clear(const tl_benv *env) {
  if (env->progress && tl_bench_now() - env->t_start >= 1.0) fputs("\r\033[K", stderr);
}

/* ---- the plain C loop's threads (tl_bpool_*, declared in bench_impl.h) ---- */

struct tl_bpool {
  int threads;
  pthread_t *tid;
  _Atomic uint32_t gen;  /* bumped for each run (futex word) */
  _Atomic int pending;   /* helper threads still working on this run */
  _Atomic int stop;
  void (*fn)(void *arg, int w, int n);
  void *arg;
};

typedef struct tl_bpool_thread {
  tl_bpool *pool;
  int w;
} tl_bpool_thread;

/* Helper thread: wait for a new generation (spin 50 us, then futex), run, count down. */
static void *tl_bpool_main(void *arg) {
  tl_bpool_thread *t = arg;
  tl_bpool *p = t->pool;
  int w = t->w;
  free(t);
  uint32_t seen = 0;
  for (;;) {
    double t0 = tl_bench_now();
    uint32_t g;
    while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen) {
      if (tl_bench_now() - t0 > 50e-6) syscall(SYS_futex, &p->gen, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
      else __builtin_ia32_pause();
    }
    seen = g;
    if (atomic_load(&p->stop)) return NULL;
    p->fn(p->arg, w, p->threads);
    atomic_fetch_sub_explicit(&p->pending, 1, memory_order_release);
  }
}

tl_bpool *tl_bpool_new(int threads) {
  tl_bpool *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->threads = threads < 1 ? 1 : threads;
  p->tid = calloc((size_t)p->threads, sizeof *p->tid);
  if (!p->tid) {
    free(p);
    return NULL;
  }
  for (int w = 1; w < p->threads; w++) {
    tl_bpool_thread *t = malloc(sizeof *t);
    if (t) *t = (tl_bpool_thread){p, w};
    if (!t || pthread_create(&p->tid[w], NULL, tl_bpool_main, t) != 0) {
      free(t);
      p->threads = w; /* tl_bpool_free joins the ones started */
      tl_bpool_free(p);
      return NULL;
    }
  }
  return p;
}

void tl_bpool_free(tl_bpool *p) {
  if (!p) return;
  atomic_store(&p->stop, 1);
  atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
  syscall(SYS_futex, &p->gen, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
  for (int w = 1; w < p->threads; w++) pthread_join(p->tid[w], NULL);
  free(p->tid);
  free(p);
}

void tl_bpool_run(tl_bpool *p, void (*fn)(void *arg, int w, int n), void *arg) {
  p->fn = fn;
  p->arg = arg;
  atomic_store_explicit(&p->pending, p->threads - 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
  if (p->threads > 1) syscall(SYS_futex, &p->gen, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
  fn(arg, 0, p->threads);
  while (atomic_load_explicit(&p->pending, memory_order_acquire) > 0) __builtin_ia32_pause();
}

/* ---- timing a group ---- */

/* What the batch wrapper of one implementation needs. */
typedef struct tl_bbatch {
  tl_bimpl *impl;
  int64_t *next;   /* the group's rotation counter */
  int64_t copies;
  int inner;
} tl_bbatch;

/* One timed "call": inner calls of the implementation on successive buffer sets. */
static int tl_bbatch_fn(void *arg, int64_t rep) {
  (void)rep;
  tl_bbatch *b = arg;
  for (int k = 0; k < b->inner; k++) {
    int64_t set = (*b->next)++ % b->copies;
    if (b->impl->fn(b->impl->arg, set) != 0) return 1;
  }
  return 0;
}

/* Prints t (seconds) with 4 significant digits in the unit of `ref`: "412.3 us". */
static const char *tl_bench_time_str(char *buf, size_t n, double t, double ref, int with_unit) {
  double scale = 1;
  const char *u = "s";
  if (ref < 1e-6) scale = 1e9, u = "ns";
  else if (ref < 1e-3) scale = 1e6, u = "us";
  else if (ref < 1) scale = 1e3, u = "ms";
  snprintf(buf, n, "%.4g%s%s", t * scale, with_unit ? " " : "", with_unit ? u : "");
  return buf;
}

/* Prints the group's table: one line per implementation. Bandwidth suites show GB/s; compute
 * suites (g->flops > 0) show GFLOP/s and the share of the machine's peak for the dtype. */
static void tl_bgroup_print(const tl_benv *env, const tl_bgroup *g, const tl_brow *rows) {
  char b1[32], b2[32], b3[32], b4[32];
  const char *mode = env->cold ? "cold" : "warm";
  int compute = g->flops > 0;
  printf("\n%s %s, %s, %s", env->suite->name, g->title, g->dtype ? g->dtype : "f32", g->size);
  if (compute) printf(" (%.4g GFLOP per call), %s", g->flops / 1e9, mode);
  else printf(" (%s moved per call), %s", tl_bench_bytes_str(b1, sizeof b1, g->moved), mode);
  if (env->cold)
    printf(": %lld buffer set%s of %s rotated", (long long)g->copies, g->copies == 1 ? "" : "s",
           tl_bench_bytes_str(b2, sizeof b2, (double)g->set_bytes));
  printf(", %d thread%s\n", env->threads, env->threads == 1 ? "" : "s");
  if (compute)
    printf("  %-26s %-28s %9s %7s  %s\n", "implementation", "median (min - max) per call", "GFLOP/s", "% peak", "vs best peer");
  else
    printf("  %-26s %-28s %9s  %s\n", "implementation", "median (min - max) per call", "GB/s", "vs best peer");
  for (int i = 0; i < g->n; i++) {
    const tl_brow *r = &rows[i];
    if (r->status != TL_BROW_OK) {
      const char *what = r->status == TL_BROW_WRONG ? "WRONG" : r->status == TL_BROW_FAILED ? "FAILED" : "skipped";
      printf("  %-26s %s: %s\n", r->impl, what, r->note);
      continue;
    }
    char cell[112], rate[48];
    snprintf(cell, sizeof cell, "%s (%s - %s)", tl_bench_time_str(b1, sizeof b1, r->median_s, r->median_s, 1),
             tl_bench_time_str(b2, sizeof b2, r->min_s, r->median_s, 0),
             tl_bench_time_str(b3, sizeof b3, r->max_s, r->median_s, 0));
    if (r->ratio > 0) snprintf(b4, sizeof b4, "%.2f", r->ratio);
    else snprintf(b4, sizeof b4, "-");
    if (compute) {
      double gf = r->flops / r->median_s / 1e9;
      char gfs[24];
      snprintf(gfs, sizeof gfs, gf >= 10 ? "%9.1f" : "%9.3g", gf);
      if (r->peak > 0) snprintf(rate, sizeof rate, "%s %6.1f%%", gfs, 100.0 * r->flops / r->median_s / r->peak);
      else snprintf(rate, sizeof rate, "%s %7s", gfs, "-");
    } else {
      snprintf(rate, sizeof rate, "%9.2f", r->moved / r->median_s / 1e9);
    }
    if (r->note[0]) printf("  %-26s %-28s %s  %-6s  %s\n", r->impl, cell, rate, b4, r->note);
    else printf("  %-26s %-28s %s  %s\n", r->impl, cell, rate, b4);
  }
  fflush(stdout);
}

/* Appends n rows to env (grows the array); -1 when out of memory. */
static int tl_bench_add_rows(tl_benv *env, const tl_brow *rows, int n) {
  if (env->nrows + n > env->cap) {
    int cap = env->cap ? env->cap * 2 : 64;
    while (cap < env->nrows + n) cap *= 2;
    tl_brow *r = realloc(env->rows, (size_t)cap * sizeof *r);
    if (!r) return -1;
    env->rows = r;
    env->cap = cap;
  }
  memcpy(env->rows + env->nrows, rows, (size_t)n * sizeof *rows);
  env->nrows += n;
  return 0;
}

/* Calls every OK implementation once (untimed) on the next set: the time of the fastest, which
 * sets the batch length; an implementation whose call fails is marked FAILED. */
static double tl_bgroup_calibrate(tl_bgroup *g, int64_t *next) {
  double best = 0;
  for (int i = 0; i < g->n; i++) {
    tl_bimpl *im = &g->impl[i];
    if (im->status != TL_BROW_OK || im->external) continue;
    double t0 = tl_bench_now();
    int r = im->fn(im->arg, (*next)++ % g->copies);
    double dt = tl_bench_now() - t0;
    if (r != 0) {
      im->status = TL_BROW_FAILED;
      if (!im->note[0]) snprintf(im->note, sizeof im->note, "its call failed");
      continue;
    }
    if (best == 0 || dt < best) best = dt;
  }
  return best;
}

/* Calibrate, time the in-process rows, ask PyTorch for its rows, rank, print, keep (bench_impl.h). */
int tl_bgroup_run(tl_benv *env, tl_bgroup *g) {
  tl_brow rows[TL_BGROUP_MAX];
  tl_bench_case cases[TL_BGROUP_MAX];
  tl_bbatch batch[TL_BGROUP_MAX];
  tl_bench_result res[TL_BGROUP_MAX];
  int idx[TL_BGROUP_MAX], m = 0;
  int64_t next = 0;
  if (g->copies < 1) g->copies = 1;

  tl_bench_progress(env, "%s %s, %s: calibrating", env->suite->name, g->title, g->size);
  double t1 = tl_bgroup_calibrate(g, &next);
  double want = env->batch_s / (t1 > 1e-9 ? t1 : 1e-9);
  int inner = want < 1 ? 1 : want > (1 << 20) ? (1 << 20) : (int)ceil(want);
  for (int i = 0; i < g->n; i++) {
    tl_bimpl *im = &g->impl[i];
    if (im->status != TL_BROW_OK || im->external) continue;
    batch[m] = (tl_bbatch){im, &next, g->copies, inner};
    cases[m] = (tl_bench_case){im->name, tl_bbatch_fn, &batch[m]};
    idx[m++] = i;
  }
  memset(res, 0, sizeof res);
  if (m > 0) {
    tl_bench_progress(env, "%s %s, %s: timing %d implementations (batches of %d call%s)", env->suite->name, g->title, g->size,
                      m, inner, inner == 1 ? "" : "s");
    tl_status s = tl_bench_run(&env->opts, m, cases, res);
    if (s != TL_OK) {
      tl_bench_progress_clear(env);
      tl_tool_fail("bench", "%s: %s", tl_status_name(s), tl_last_error());
      return -1;
    }
  }

  memset(rows, 0, sizeof rows);
  for (int i = 0; i < g->n; i++) {
    tl_brow *r = &rows[i];
    const tl_bimpl *im = &g->impl[i];
    snprintf(r->op, sizeof r->op, "%s", g->op);
    snprintf(r->title, sizeof r->title, "%s", g->title);
    snprintf(r->impl, sizeof r->impl, "%s", im->name);
    snprintf(r->size, sizeof r->size, "%s", g->size);
    snprintf(r->note, sizeof r->note, "%s", im->note);
    r->size_bytes = g->size_bytes;
    r->moved = g->moved;
    r->flops = g->flops;
    r->peak = g->peak;
    snprintf(r->dtype, sizeof r->dtype, "%s", g->dtype ? g->dtype : "f32");
    r->tilec = im->tilec;
    r->klass = im->klass;
    r->status = im->status;
    r->batch = inner;
  }
  for (int j = 0; j < m; j++) {
    tl_brow *r = &rows[idx[j]];
    if (res[j].failed) {
      r->status = TL_BROW_FAILED;
      if (!r->note[0]) snprintf(r->note, sizeof r->note, "a timed call failed");
      continue;
    }
    r->reps = res[j].reps;
    r->median_s = res[j].median_s / inner;
    r->min_s = res[j].min_s / inner;
    r->max_s = res[j].max_s / inner;
  }
  /* external rows (PyTorch): their own process times them with the same settings */
  for (int i = 0; i < g->n; i++) {
    tl_bimpl *im = &g->impl[i];
    if (!im->external || im->status != TL_BROW_OK) continue;
    tl_bench_progress(env, "%s %s, %s: timing %s in its own process", env->suite->name, g->title, g->size, im->name);
    tl_btorch_req q = im->torch;
    q.copies = g->copies;
    q.inner = inner;
    q.opts = env->opts;
    tl_bench_result tr;
    int rc = tl_btorch_run(&env->peers, &q, &tr, rows[i].note, sizeof rows[i].note);
    if (rc != 0) {
      rows[i].status = rc > 0 ? TL_BROW_WRONG : TL_BROW_FAILED;
      continue;
    }
    rows[i].reps = tr.reps;
    rows[i].median_s = tr.median_s;
    rows[i].min_s = tr.min_s;
    rows[i].max_s = tr.max_s;
  }
  /* each row against the best peer of its class (plain weights against plain, pre-packed against
   * pre-packed) */
  for (int i = 0; i < g->n; i++) {
    double best = 0;
    for (int j = 0; j < g->n; j++)
      if (!rows[j].tilec && rows[j].klass == rows[i].klass && rows[j].status == TL_BROW_OK && rows[j].median_s > 0 &&
          (best == 0 || rows[j].median_s < best))
        best = rows[j].median_s;
    if (rows[i].status == TL_BROW_OK && rows[i].median_s > 0 && best > 0) rows[i].ratio = best / rows[i].median_s;
    if (rows[i].tilec && rows[i].status != TL_BROW_OK && rows[i].status != TL_BROW_SKIPPED) env->status = 1;
  }
  tl_bench_progress_clear(env);
  tl_bgroup_print(env, g, rows);
  if (tl_bench_add_rows(env, rows, g->n) != 0) {
    tl_tool_fail("bench", "out of memory for the result rows");
    return -1;
  }
  return 0;
}
