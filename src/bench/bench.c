/* bench.c — the timing harness of tilec_bench.h (DESIGN.md §6): tl_bench_run and tl_bench_now.
 *
 * How a run goes:
 *   1. warm-up: round by round, every case that has not yet spent warmup_s in calls is called
 *      once (untimed for the result), so all of them warm up interleaved too;
 *   2. timing: round by round, every live case is called once, in order; before each timed call
 *      the harness sleeps pause_s (untimed) when asked, so threads the previous call left spinning
 *      are asleep. After each round it stops when every live case has had min_reps calls and
 *      min_time_s of timed calls and its median moved less than `stable` (relative) during the
 *      round, or when some live case reached max_reps or max_time_s (all live cases then have the
 *      same number of calls: rounds keep the interleaving even), or when the timing phase has
 *      taken n x max_time_s of wall time, pauses aside (the harness's own work included).
 * Invariants: memory is bounded by n x max_reps samples (one sorted array per case, kept sorted by
 * insertion, so the median is read in O(1)); nothing is printed; a case whose fn returns nonzero
 * is marked failed and never called again, the others go on; arguments are checked before `out`
 * is touched. rep, the second argument of fn, counts the case's calls, warm-up included. */
#include <errno.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "../core/core_impl.h"

/* Monotonic seconds (CLOCK_MONOTONIC). */
double tl_bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Options with the zero fields replaced by their defaults. */
typedef struct tl_bench_cfg {
  double warmup_s, min_time_s, max_time_s, stable, pause_s;
  int min_reps, max_reps;
} tl_bench_cfg;

/* Per-case state during a run. */
typedef struct tl_bench_state {
  double *sorted;   /* the case's timed samples, ascending (max_reps slots) */
  int count;        /* timed samples so far */
  int64_t rep;      /* calls so far, warm-up included */
  double warm_s;    /* time spent in warm-up calls */
  double timed_s;   /* sum of the timed samples */
  double prev_med;  /* median before the last round; 0 while unknown */
  int failed;
} tl_bench_state;

#define TL_BENCH_MAX_REPS 10000000
#define TL_BENCH_MAX_CASES 4096

/* A double that is negative or NaN. */
static int tl_bench_bad(double v) { return !(v >= 0.0); }

/* Fills *c from opts (NULL: all defaults) and checks it; TL_OK or TL_ERR_INVALID with a message. */
static tl_status tl_bench_config(const tl_bench_opts *opts, tl_bench_cfg *c) {
  tl_bench_opts o;
  memset(c, 0, sizeof *c);
  if (opts) o = *opts;
  else memset(&o, 0, sizeof o);
  if (tl_bench_bad(o.warmup_s) || tl_bench_bad(o.min_time_s) || tl_bench_bad(o.max_time_s) || tl_bench_bad(o.stable) ||
      tl_bench_bad(o.pause_s) || isinf(o.warmup_s) || isinf(o.min_time_s) || isinf(o.max_time_s) || isinf(o.pause_s) ||
      isinf(o.stable) || o.pause_s > 3600 || o.warmup_s > 1e6 || o.min_time_s > 1e6 || o.max_time_s > 1e6)
    return tl_fail_tls(TL_ERR_INVALID, "tl_bench_run: times and stable must be finite and >= 0, pause_s at most 3600 s (warmup_s %g, min_time_s %g, "
                                       "max_time_s %g, stable %g, pause_s %g)",
                       o.warmup_s, o.min_time_s, o.max_time_s, o.stable, o.pause_s);
  if (o.min_reps < 0 || o.max_reps < 0 || o.max_reps > TL_BENCH_MAX_REPS)
    return tl_fail_tls(TL_ERR_INVALID, "tl_bench_run: min_reps %d and max_reps %d must be in 0..%d", o.min_reps, o.max_reps,
                       TL_BENCH_MAX_REPS);
  c->warmup_s = o.warmup_s > 0 ? o.warmup_s : 0.05;
  c->min_time_s = o.min_time_s > 0 ? o.min_time_s : 0.3;
  c->max_time_s = o.max_time_s > 0 ? o.max_time_s : 3.0;
  c->stable = o.stable > 0 ? o.stable : 0.01;
  c->pause_s = o.pause_s;
  c->min_reps = o.min_reps > 0 ? o.min_reps : 5;
  c->max_reps = o.max_reps > 0 ? o.max_reps : 1000;
  if (c->min_reps > c->max_reps)
    return tl_fail_tls(TL_ERR_INVALID, "tl_bench_run: min_reps %d > max_reps %d", c->min_reps, c->max_reps);
  if (c->min_time_s > c->max_time_s)
    return tl_fail_tls(TL_ERR_INVALID, "tl_bench_run: min_time_s %g > max_time_s %g", c->min_time_s, c->max_time_s);
  return TL_OK;
}

/* Inserts v into the ascending array a of n elements (room for n + 1). */
static void tl_bench_insert(double *a, int n, double v) {
  int lo = 0, hi = n;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (a[mid] <= v) lo = mid + 1;
    else hi = mid;
  }
  memmove(a + lo + 1, a + lo, (size_t)(n - lo) * sizeof *a);
  a[lo] = v;
}

/* Median of an ascending array (n >= 1). */
static double tl_bench_median(const double *a, int n) { return n % 2 ? a[n / 2] : 0.5 * (a[n / 2 - 1] + a[n / 2]); }

/* Sleeps s seconds (s > 0), resuming after signals. */
static void tl_bench_sleep(double s) {
  struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* Calls case i once; returns its duration, or -1 when it returned nonzero (then marks it failed). */
static double tl_bench_call(const tl_bench_case *cs, tl_bench_state *st) {
  double t0 = tl_bench_now();
  int r = cs->fn(cs->arg, st->rep);
  double dt = tl_bench_now() - t0;
  st->rep++;
  if (r != 0) {
    st->failed = 1;
    return -1;
  }
  return dt;
}

/* Warm-up: rounds over the cases that still need warm-up time, until none does. */
static void tl_bench_warmup(const tl_bench_cfg *c, int n, const tl_bench_case *cases, tl_bench_state *st) {
  for (;;) {
    int any = 0;
    for (int i = 0; i < n; i++) {
      if (st[i].failed || st[i].warm_s >= c->warmup_s) continue;
      double dt = tl_bench_call(&cases[i], &st[i]);
      if (dt >= 0) st[i].warm_s += dt;
      any = 1;
    }
    if (!any) return;
  }
}

/* After a round: 1 when timing should stop (see the file comment). Updates prev_med. */
static int tl_bench_done(const tl_bench_cfg *c, int n, tl_bench_state *st) {
  int live = 0, limit = 0, satisfied = 1;
  for (int i = 0; i < n; i++) {
    tl_bench_state *s = &st[i];
    if (s->failed) continue;
    live++;
    if (s->count >= c->max_reps || s->timed_s >= c->max_time_s) limit = 1;
    if (s->count < 1) {
      satisfied = 0;
      continue;
    }
    double med = tl_bench_median(s->sorted, s->count);
    int stable = s->prev_med > 0 && fabs(med - s->prev_med) <= c->stable * s->prev_med;
    if (s->prev_med == 0 && med == 0) stable = 1; /* a clock too coarse for the call: nothing will move */
    if (s->count < c->min_reps || s->timed_s < c->min_time_s || !stable) satisfied = 0;
    s->prev_med = med;
  }
  return live == 0 || limit || satisfied;
}

/* The harness (tilec_bench.h): check, warm up, time in rounds, report. */
tl_status tl_bench_run(const tl_bench_opts *opts, int n, const tl_bench_case *cases, tl_bench_result *out) {
  tl_bench_cfg c;
  tl_status s = tl_bench_config(opts, &c);
  if (s != TL_OK) return s;
  if (n < 1 || n > TL_BENCH_MAX_CASES)
    return tl_fail_tls(TL_ERR_INVALID, "tl_bench_run: n = %d cases, expected 1..%d", n, TL_BENCH_MAX_CASES);
  if (!cases || !out) return tl_fail_tls(TL_ERR_INVALID, "tl_bench_run: %s is NULL", !cases ? "cases" : "out");
  for (int i = 0; i < n; i++)
    if (!cases[i].fn) return tl_fail_tls(TL_ERR_INVALID, "tl_bench_run: case %d (%s) has no function", i, cases[i].name ? cases[i].name : "unnamed");

  tl_bench_state *st = tl_calloc((size_t)n, sizeof *st);
  double *samples = tl_calloc((size_t)n * (size_t)c.max_reps, sizeof *samples);
  if (!st || !samples) {
    s = tl_fail_tls(TL_ERR_NOMEM, "tl_bench_run: out of memory for %d cases x %d samples", n, c.max_reps);
    goto out;
  }
  for (int i = 0; i < n; i++) st[i].sorted = samples + (size_t)i * (size_t)c.max_reps;

  tl_bench_warmup(&c, n, cases, st);
  /* the timing phase's wall time, pauses aside, is held to n x max_time_s as well: max_time_s
   * alone counts the calls, and with many tiny calls the harness's own work (the sorted
   * insertion is O(reps)) dominated — 10^6 empty calls took 19.5 s under a 0.2 s max_time_s
   * until 2026-11-26, 0.31 s since (a throwaway program timing tl_bench_run on an empty case;
   * found by fuzzing) */
  const double t_start = tl_bench_now(), wall_cap = (double)n * c.max_time_s;
  double paused = 0;
  do {
    for (int i = 0; i < n; i++) {
      if (st[i].failed) continue;
      if (c.pause_s > 0) {
        const double p0 = tl_bench_now();
        tl_bench_sleep(c.pause_s);
        paused += tl_bench_now() - p0;
      }
      double dt = tl_bench_call(&cases[i], &st[i]);
      if (dt < 0) continue;
      tl_bench_insert(st[i].sorted, st[i].count++, dt);
      st[i].timed_s += dt;
    }
  } while (!tl_bench_done(&c, n, st) && tl_bench_now() - t_start - paused < wall_cap);

  for (int i = 0; i < n; i++) {
    tl_bench_result *r = &out[i];
    memset(r, 0, sizeof *r);
    r->reps = st[i].count;
    r->failed = st[i].failed;
    if (st[i].count > 0) {
      r->median_s = tl_bench_median(st[i].sorted, st[i].count);
      r->min_s = st[i].sorted[0];
      r->max_s = st[i].sorted[st[i].count - 1];
    }
  }
  s = TL_OK;
out:
  tl_free_mem(samples);
  tl_free_mem(st);
  return s;
}
