/* test_bench.c — the timing harness (tl_bench_run, tl_bench_now): synthetic cases of known
 * duration (busy spins) come out in the right order and ratio, min <= median <= max, repetitions
 * stay within the limits, calls are interleaved round by round, a failing case is marked and the
 * others go on, the pause is not timed, and bad arguments are refused without touching out. */
#include <math.h>

#include "core/core_impl.h"
#include "test_util.h"

/* Busy-waits d seconds on the harness's own clock. */
static void spin(double d) {
  double t0 = tl_bench_now();
  while (tl_bench_now() - t0 < d) {
  }
}

typedef struct spin_arg {
  double d;          /* seconds per call */
  int64_t calls;     /* calls seen */
  int64_t last_rep;  /* rep argument of the last call */
  int rep_ok;        /* every rep argument was the call count */
  int64_t fail_at;   /* return nonzero on this call (0-based); -1: never */
  int id;            /* for the order log */
} spin_arg;

static int order_log[4096];
static int order_n;

static int spin_case(void *arg, int64_t rep) {
  spin_arg *a = arg;
  if (rep != a->calls) a->rep_ok = 0;
  a->last_rep = rep;
  if (order_n < (int)(sizeof order_log / sizeof order_log[0])) order_log[order_n++] = a->id;
  int64_t c = a->calls++;
  if (c == a->fail_at) return 7;
  spin(a->d);
  return 0;
}

static spin_arg mk(double d, int id) { return (spin_arg){.d = d, .rep_ok = 1, .fail_at = -1, .id = id}; }

static void test_now(void) {
  double a = tl_bench_now(), b = tl_bench_now();
  CHECK(a > 0 && b >= a, "monotonic: %g then %g", a, b);
  spin(0.002);
  double c = tl_bench_now();
  CHECK(c - a >= 0.002 && c - a < 0.5, "2 ms spin measured as %g s", c - a);
}

static void test_order_and_ratio(void) {
  spin_arg a = mk(200e-6, 0), b = mk(400e-6, 1);
  tl_bench_case cs[2] = {{"fast", spin_case, &a}, {"slow", spin_case, &b}};
  tl_bench_opts o = {.warmup_s = 0.005, .min_time_s = 0.03, .max_time_s = 0.5, .min_reps = 5, .max_reps = 200};
  tl_bench_result r[2];
  tl_status s = tl_bench_run(&o, 2, cs, r);
  REQUIRE(s == TL_OK, "tl_bench_run: %s %s", tl_status_name(s), tl_last_error());
  for (int i = 0; i < 2; i++) {
    CHECK(!r[i].failed, "case %d failed", i);
    CHECK(r[i].min_s <= r[i].median_s && r[i].median_s <= r[i].max_s, "case %d: min %g median %g max %g", i, r[i].min_s,
          r[i].median_s, r[i].max_s);
    CHECK(r[i].reps >= 5 && r[i].reps <= 200, "case %d: %d reps outside 5..200", i, r[i].reps);
  }
  CHECK(r[0].median_s >= 200e-6 && r[1].median_s >= 400e-6, "medians %g %g below the spin", r[0].median_s, r[1].median_s);
  double ratio = r[1].median_s / r[0].median_s;
  CHECK(ratio > 1.5 && ratio < 2.8, "ratio of medians %g (expected about 2)", ratio);
  CHECK(r[0].reps == r[1].reps, "interleaved cases get the same number of timed calls: %d vs %d", r[0].reps, r[1].reps);
  CHECK(a.rep_ok && b.rep_ok, "rep counts every call, warm-up included");
  CHECK(a.calls >= r[0].reps + 1, "warm-up calls happened: %lld calls, %d timed", (long long)a.calls, r[0].reps);
}

static void test_interleaving(void) {
  spin_arg a[3] = {mk(20e-6, 0), mk(20e-6, 1), mk(20e-6, 2)};
  tl_bench_case cs[3] = {{"a", spin_case, &a[0]}, {"b", spin_case, &a[1]}, {"c", spin_case, &a[2]}};
  /* a warm-up shorter than one call: exactly one warm-up call each, so the whole log is rounds */
  tl_bench_opts o = {.warmup_s = 1e-9, .min_time_s = 1e-3, .max_time_s = 1, .min_reps = 10, .max_reps = 40};
  tl_bench_result r[3];
  order_n = 0;
  REQUIRE(tl_bench_run(&o, 3, cs, r) == TL_OK, "%s", tl_last_error());
  int ok = order_n % 3 == 0 && order_n >= 3 * 11;
  for (int i = 0; ok && i < order_n; i++) ok = order_log[i] == i % 3;
  CHECK(ok, "calls go a, b, c, a, b, c, ...: %d calls logged", order_n);
  for (int i = 0; i < 3; i++) CHECK(r[i].reps + 1 == a[i].calls, "case %d: %d timed + 1 warm-up = %lld calls", i, r[i].reps,
                                    (long long)a[i].calls);
}

static void test_limits(void) {
  /* max_reps: a long min_time cannot keep it going */
  spin_arg a = mk(10e-6, 0);
  tl_bench_case c1 = {"a", spin_case, &a};
  tl_bench_opts o = {.warmup_s = 1e-9, .min_time_s = 5, .max_time_s = 10, .min_reps = 3, .max_reps = 7};
  tl_bench_result r;
  REQUIRE(tl_bench_run(&o, 1, &c1, &r) == TL_OK, "%s", tl_last_error());
  CHECK(r.reps == 7, "max_reps 7: %d reps", r.reps);

  /* max_time: 2 ms calls, at most 20 ms of them */
  spin_arg b = mk(2e-3, 0);
  tl_bench_case c2 = {"b", spin_case, &b};
  tl_bench_opts o2 = {.warmup_s = 1e-9, .min_time_s = 0.01, .max_time_s = 0.02, .min_reps = 1000, .max_reps = 5000};
  double t0 = tl_bench_now();
  REQUIRE(tl_bench_run(&o2, 1, &c2, &r) == TL_OK, "%s", tl_last_error());
  double wall = tl_bench_now() - t0;
  CHECK(r.reps >= 5 && r.reps <= 11, "max_time 20 ms of 2 ms calls: %d reps", r.reps);
  CHECK(wall < 0.5, "run took %g s", wall);

  /* max_time with many tiny calls: the harness's own work (O(reps) per sorted insertion) counts
   * against the wall cap n x max_time_s; 10^6 empty calls under max_time 0.2 s took 19.5 s before
   * (2 x 10^6 would take minutes): the bound here is loose, for a loaded machine */
  spin_arg e = mk(0, 0);
  tl_bench_case c5 = {"e", spin_case, &e};
  tl_bench_opts o5 = {.warmup_s = 1e-9, .min_time_s = 0.1, .max_time_s = 0.1, .min_reps = 1, .max_reps = 2000000};
  t0 = tl_bench_now();
  REQUIRE(tl_bench_run(&o5, 1, &c5, &r) == TL_OK, "%s", tl_last_error());
  wall = tl_bench_now() - t0;
  CHECK(wall < 5 && r.reps >= 1, "2e6 tiny calls under max_time 0.1 s: %d reps in %g s", r.reps, wall);

  /* stable: a loose tolerance stops well before max_reps once min_time is met */
  spin_arg c = mk(50e-6, 0);
  tl_bench_case c3 = {"c", spin_case, &c};
  tl_bench_opts o3 = {.warmup_s = 1e-9, .min_time_s = 0.005, .max_time_s = 5, .min_reps = 5, .max_reps = 100000,
                      .stable = 0.5};
  REQUIRE(tl_bench_run(&o3, 1, &c3, &r) == TL_OK, "%s", tl_last_error());
  CHECK(r.reps >= 5 && r.reps < 2000, "stable 0.5: stopped after %d reps", r.reps);

  /* defaults (opts NULL): at least 5 reps and 0.3 s of calls */
  spin_arg d = mk(1e-3, 0);
  tl_bench_case c4 = {"d", spin_case, &d};
  REQUIRE(tl_bench_run(NULL, 1, &c4, &r) == TL_OK, "%s", tl_last_error());
  /* 0.3 s of timed calls: their sum lies between reps x min and reps x max (a loaded machine
     stretches some calls, so reps x median can fall short of it) */
  CHECK(r.reps >= 5 && r.reps <= 1000 && r.reps * r.max_s >= 0.3 * 0.999, "defaults: %d reps of %g s (max %g s)", r.reps,
        r.median_s, r.max_s);
}

static void test_failure(void) {
  spin_arg a = mk(50e-6, 0), b = mk(50e-6, 1), c = mk(50e-6, 2), w = mk(50e-6, 3);
  b.fail_at = 3; /* a timed call */
  w.fail_at = 0; /* its first (warm-up) call */
  tl_bench_case cs[4] = {{"a", spin_case, &a}, {"b", spin_case, &b}, {"c", spin_case, &c}, {"w", spin_case, &w}};
  tl_bench_opts o = {.warmup_s = 1e-9, .min_time_s = 0.005, .max_time_s = 1, .min_reps = 10, .max_reps = 50};
  tl_bench_result r[4];
  REQUIRE(tl_bench_run(&o, 4, cs, r) == TL_OK, "%s", tl_last_error());
  CHECK(!r[0].failed && !r[2].failed, "the others are not failed");
  CHECK(r[1].failed == 1 && r[3].failed == 1, "failing cases marked: %d %d", r[1].failed, r[3].failed);
  CHECK(b.calls == 4 && w.calls == 1, "a failed case is not called again: %lld, %lld calls", (long long)b.calls,
        (long long)w.calls);
  CHECK(r[1].reps == 2, "b: 2 timed calls before the failure, got %d", r[1].reps);
  CHECK(r[3].reps == 0 && r[3].median_s == 0, "w: no timed calls");
  CHECK(r[0].reps >= 10 && r[2].reps >= 10, "the others go on: %d, %d reps", r[0].reps, r[2].reps);

  /* every case failing is still a successful run of the harness */
  spin_arg x = mk(1e-6, 0);
  x.fail_at = 0;
  tl_bench_case cx = {"x", spin_case, &x};
  tl_bench_result rx;
  CHECK(tl_bench_run(&o, 1, &cx, &rx) == TL_OK && rx.failed == 1, "a lone failing case");
}

static void test_pause(void) {
  spin_arg a = mk(100e-6, 0);
  tl_bench_case c = {"a", spin_case, &a};
  tl_bench_opts o = {.warmup_s = 1e-9, .min_time_s = 1e-3, .max_time_s = 1, .min_reps = 20, .max_reps = 20, .pause_s = 2e-3};
  tl_bench_result r;
  double t0 = tl_bench_now();
  REQUIRE(tl_bench_run(&o, 1, &c, &r) == TL_OK, "%s", tl_last_error());
  double wall = tl_bench_now() - t0;
  CHECK(r.reps == 20, "%d reps", r.reps);
  CHECK(wall >= 20 * 2e-3, "the pause happened: %g s for 20 calls", wall);
  CHECK(r.median_s < 1e-3, "the pause is not timed: median %g s", r.median_s);
}

static void test_invalid(void) {
  spin_arg a = mk(1e-6, 0);
  tl_bench_case good = {"a", spin_case, &a}, nofn = {"b", NULL, NULL};
  tl_bench_result r, sentinel;
  memset(&sentinel, 0x5a, sizeof sentinel);
  struct {
    const char *what;
    tl_bench_opts o;
    int n;
    const tl_bench_case *cs;
    int null_out;
  } bad[] = {
      {"n = 0", {.warmup_s = 0}, 0, &good, 0},
      {"n < 0", {.warmup_s = 0}, -3, &good, 0},
      {"cases NULL", {.warmup_s = 0}, 1, NULL, 0},
      {"out NULL", {.warmup_s = 0}, 1, &good, 1},
      {"fn NULL", {.warmup_s = 0}, 1, &nofn, 0},
      {"negative warmup", {.warmup_s = -1}, 1, &good, 0},
      {"NaN min_time", {.min_time_s = NAN}, 1, &good, 0},
      {"infinite max_time", {.max_time_s = INFINITY}, 1, &good, 0},
      {"negative stable", {.stable = -0.1}, 1, &good, 0},
      {"negative pause", {.pause_s = -1e-3}, 1, &good, 0},
      {"negative min_reps", {.min_reps = -1}, 1, &good, 0},
      {"min_reps > max_reps", {.min_reps = 10, .max_reps = 5}, 1, &good, 0},
      {"min_time > max_time", {.min_time_s = 2, .max_time_s = 1}, 1, &good, 0},
      {"max_reps huge", {.max_reps = 2000000000}, 1, &good, 0},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    r = sentinel;
    tl_status s = tl_bench_run(&bad[i].o, bad[i].n, bad[i].cs, bad[i].null_out ? NULL : &r);
    CHECK(s == TL_ERR_INVALID, "%s: %s", bad[i].what, tl_status_name(s));
    CHECK(strstr(tl_last_error(), "tl_bench_run") != NULL, "%s: message '%s'", bad[i].what, tl_last_error());
    CHECK(!memcmp(&r, &sentinel, sizeof r), "%s: out untouched", bad[i].what);
  }
  CHECK(a.calls == 0, "no case was called for refused arguments (%lld calls)", (long long)a.calls);
}

static void test_nomem(void) {
  spin_arg a = mk(1e-6, 0);
  tl_bench_case c = {"a", spin_case, &a};
  tl_bench_opts o = {.warmup_s = 1e-9, .min_time_s = 1e-4, .max_reps = 10};
  tl_bench_result r;
  for (int k = 1; k <= 2; k++) {
    tl_faultsim_fail_at(k);
    tl_status s = tl_bench_run(&o, 1, &c, &r);
    tl_faultsim_fail_at(0);
    CHECK(s == TL_ERR_NOMEM, "allocation %d failing: %s", k, tl_status_name(s));
  }
  CHECK(a.calls == 0, "no calls when memory ran out");
  CHECK(tl_bench_run(&o, 1, &c, &r) == TL_OK, "fine again afterwards");
}

int main(void) {
  RUN(test_now);
  RUN(test_order_and_ratio);
  RUN(test_interleaving);
  RUN(test_limits);
  RUN(test_failure);
  RUN(test_pause);
  RUN(test_invalid);
  RUN(test_nomem);
  return test_summary("bench_harness");
}
