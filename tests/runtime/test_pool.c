/* test_pool.c — the persistent thread pool (src/runtime/pool.c): exact totals over many small
 * runs, worker indices, oversubscription, create/free churn, MXCSR propagation, nested runs,
 * idle CPU (sleeping workers), allocation failure, bad arguments. Prints the measured wake-up
 * latency to stderr (informational, not a gate). */
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <xmmintrin.h>

#include "runtime/runtime_impl.h"
#include "test_util.h"

#define MAXW 64

/* One counter per worker on its own cache line. */
typedef struct {
  alignas(64) int64_t v;
} slot;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ns(int64_t ns) {
  struct timespec ts = {ns / 1000000000, ns % 1000000000};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* process CPU time (user + system) in ns */
static int64_t cpu_ns(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000 +
         ((int64_t)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000;
}

/* ---- many small runs ---- */

typedef struct {
  slot s[MAXW];
  int64_t run;
  int bad_n;
} sum_arg;

static void sum_fn(void *p, int w, int n) {
  sum_arg *a = p;
  a->s[w].v += a->run * (w + 1) + 1;
}

static void check_many(int threads, int spin_us, int64_t runs) {
  tl_pool *pool = NULL;
  tl_status st = tl_pool_new(threads, spin_us, &pool);
  REQUIRE(st == TL_OK && pool, "tl_pool_new(%d, %d): %s", threads, spin_us, tl_last_error());
  CHECK(tl_pool_threads(pool) == threads, "threads %d", tl_pool_threads(pool));
  static sum_arg a;
  memset(&a, 0, sizeof a);
  for (int64_t r = 0; r < runs; r++) {
    a.run = r;
    tl_pool_run(pool, 0, sum_fn, &a);
  }
  int64_t tri = runs * (runs - 1) / 2;
  for (int w = 0; w < threads; w++)
    CHECK(a.s[w].v == tri * (w + 1) + runs, "threads %d spin %d worker %d: %lld, want %lld", threads, spin_us, w,
          (long long)a.s[w].v, (long long)(tri * (w + 1) + runs));
  tl_pool_free(pool);
}

static void test_many_small_runs(void) {
  check_many(2, 50, 100000);
  check_many(1, 50, 1000);
}

/* ---- worker indices ---- */

typedef struct {
  slot hits[MAXW];
  slot seen_n[MAXW];
} idx_arg;

static void idx_fn(void *p, int w, int n) {
  idx_arg *a = p;
  a->hits[w].v++;
  a->seen_n[w].v = n;
}

/* Runs `runs` times with nworkers drawn at random in [-1, threads + 2] and checks that workers
 * 0..n-1 each ran exactly once with the right n and the others not at all. */
static void check_indices(int threads, int spin_us, int runs, uint64_t seed) {
  tl_pool *pool = NULL;
  REQUIRE(tl_pool_new(threads, spin_us, &pool) == TL_OK, "%s", tl_last_error());
  test_rng rng = {seed};
  idx_arg a;
  int bad = 0;
  for (int r = 0; r < runs && bad < 5; r++) {
    int nw = (int)test_rng_int(&rng, -1, threads + 2);
    int n = (nw <= 0 || nw > threads) ? threads : nw;
    memset(&a, 0, sizeof a);
    tl_pool_run(pool, nw, idx_fn, &a);
    for (int w = 0; w < threads; w++) {
      int64_t want = w < n ? 1 : 0;
      if (a.hits[w].v != want || (w < n && a.seen_n[w].v != n)) {
        CHECK(0, "threads %d spin %d run %d nworkers %d: worker %d ran %lld times with n %lld", threads, spin_us, r,
              nw, w, (long long)a.hits[w].v, (long long)a.seen_n[w].v);
        bad++;
      }
    }
  }
  CHECK(bad == 0, "threads %d spin %d: %d bad runs", threads, spin_us, bad);
  tl_pool_free(pool);
}

static void test_worker_indices(void) {
  check_indices(4, 50, 3000, 11);
  check_indices(3, -1, 1000, 12);
  check_indices(2, 0, 1000, 13);
}

/* ---- more workers than cores ---- */

static void test_oversubscribed(void) {
  static const int threads[] = {8, 33};
  static const int spins[] = {-1, 1, 50};
  for (size_t t = 0; t < TL_ARRAY_LEN(threads); t++)
    for (size_t s = 0; s < TL_ARRAY_LEN(spins); s++) {
      check_many(threads[t], spins[s], 300);
      check_indices(threads[t], spins[s], 200, 100 + t * 10 + s);
    }
}

/* ---- create/free churn ---- */

static void test_create_free(void) {
  int fails = 0;
  for (int i = 0; i < 300; i++) {
    tl_pool *pool = NULL;
    int threads = 1 + i % 5;
    int spin = (i % 3 == 0) ? -1 : (i % 3 == 1 ? 0 : 50);
    if (tl_pool_new(threads, spin, &pool) != TL_OK) {
      fails++;
      continue;
    }
    if (i % 2) { /* half are never run */
      idx_arg a;
      memset(&a, 0, sizeof a);
      tl_pool_run(pool, 0, idx_fn, &a);
      for (int w = 0; w < threads; w++) fails += a.hits[w].v != 1;
    }
    tl_pool_free(pool);
  }
  CHECK(fails == 0, "%d failures", fails);
  tl_pool_free(NULL); /* no-op */
  CHECK(tl_pool_threads(NULL) == 1, "NULL pool threads");
}

/* ---- MXCSR ---- */

#define CSR_FTZ 0x8000u
#define CSR_DAZ 0x0040u
#define CSR_RC_ZERO 0x6000u
#define CSR_FLAGS 0x003Fu /* sticky exception flags: not compared */

typedef struct {
  slot csr[MAXW];
} csr_arg;

static void csr_fn(void *p, int w, int n) {
  csr_arg *a = p;
  a->csr[w].v = _mm_getcsr();
}

static void test_mxcsr(void) {
  tl_pool *pool = NULL;
  REQUIRE(tl_pool_new(4, 50, &pool) == TL_OK, "%s", tl_last_error());
  unsigned def = _mm_getcsr();
  unsigned mod = def | CSR_FTZ | CSR_DAZ | CSR_RC_ZERO;
  csr_arg a;
  for (int round = 0; round < 3; round++) {
    _mm_setcsr(mod);
    memset(&a, 0, sizeof a);
    tl_pool_run(pool, 0, csr_fn, &a);
    _mm_setcsr(def);
    for (int w = 0; w < 4; w++)
      CHECK((a.csr[w].v & ~CSR_FLAGS) == (mod & ~CSR_FLAGS), "round %d worker %d sees %#llx, caller had %#x", round,
            w, (unsigned long long)a.csr[w].v, mod);
    /* a later run with the caller's default: the helpers must not keep FTZ/DAZ/RC */
    memset(&a, 0, sizeof a);
    tl_pool_run(pool, 0, csr_fn, &a);
    for (int w = 0; w < 4; w++)
      CHECK((a.csr[w].v & ~CSR_FLAGS) == (def & ~CSR_FLAGS), "round %d worker %d sees %#llx, caller has %#x", round,
            w, (unsigned long long)a.csr[w].v, def);
  }
  CHECK(_mm_getcsr() == def || (_mm_getcsr() & ~CSR_FLAGS) == (def & ~CSR_FLAGS), "caller MXCSR changed");
  tl_pool_free(pool);
}

/* ---- nested runs ---- */

typedef struct {
  tl_pool *pool;
  slot inner[MAXW];     /* inner calls made by each outer worker */
  slot inner_sum[MAXW]; /* sum of inner worker indices seen by each outer worker */
  atomic_int inner_n_bad;
} nest_arg;

typedef struct {
  nest_arg *outer;
  int ow;
} nest_inner_arg;

static void nest_inner_fn(void *p, int w, int n) {
  nest_inner_arg *ia = p;
  if (n != tl_pool_threads(ia->outer->pool)) atomic_fetch_add(&ia->outer->inner_n_bad, 1);
  ia->outer->inner[ia->ow].v++;
  ia->outer->inner_sum[ia->ow].v += w;
}

static void nest_outer_fn(void *p, int w, int n) {
  nest_arg *a = p;
  nest_inner_arg ia = {a, w};
  tl_pool_run(a->pool, 0, nest_inner_fn, &ia); /* nested: runs serially on this thread */
}

static void test_nested(void) {
  const int T = 4;
  nest_arg a;
  memset(&a, 0, sizeof a);
  REQUIRE(tl_pool_new(T, 50, &a.pool) == TL_OK, "%s", tl_last_error());
  for (int r = 0; r < 50; r++) tl_pool_run(a.pool, 0, nest_outer_fn, &a);
  for (int w = 0; w < T; w++) {
    CHECK(a.inner[w].v == 50 * T, "outer worker %d made %lld inner calls", w, (long long)a.inner[w].v);
    CHECK(a.inner_sum[w].v == 50 * T * (T - 1) / 2, "outer worker %d inner index sum %lld", w,
          (long long)a.inner_sum[w].v);
  }
  CHECK(atomic_load(&a.inner_n_bad) == 0, "inner n wrong %d times", atomic_load(&a.inner_n_bad));
  /* the pool still works normally afterwards */
  idx_arg b;
  memset(&b, 0, sizeof b);
  tl_pool_run(a.pool, 0, idx_fn, &b);
  for (int w = 0; w < T; w++) CHECK(b.hits[w].v == 1, "after nesting: worker %d", w);
  tl_pool_free(a.pool);
}

/* ---- two threads calling tl_pool_run on one pool at once (misuse: must not crash) ---- */

typedef struct {
  tl_pool *pool;
  int64_t total;
} race_arg;

static void race_fn(void *p, int w, int n) {
  atomic_fetch_add((_Atomic int64_t *)p, 1);
}

static void *race_thread(void *p) {
  race_arg *ra = p;
  _Atomic int64_t count = 0;
  for (int i = 0; i < 2000; i++) tl_pool_run(ra->pool, 0, race_fn, (void *)&count);
  ra->total = atomic_load(&count);
  return NULL;
}

static void test_concurrent_callers(void) {
  tl_pool *pool = NULL;
  REQUIRE(tl_pool_new(3, 20, &pool) == TL_OK, "%s", tl_last_error());
  race_arg ra[2] = {{pool, 0}, {pool, 0}};
  pthread_t th;
  REQUIRE(pthread_create(&th, NULL, race_thread, &ra[1]) == 0, "pthread_create");
  race_thread(&ra[0]);
  pthread_join(th, NULL);
  CHECK(ra[0].total == 2000 * 3 && ra[1].total == 2000 * 3, "totals %lld %lld", (long long)ra[0].total,
        (long long)ra[1].total);
  tl_pool_free(pool);
}

/* ---- idle CPU: workers must be asleep ---- */

static void empty_fn(void *p, int w, int n) {}

static void test_idle_cpu(void) {
  tl_pool *pool = NULL;
  REQUIRE(tl_pool_new(4, 50, &pool) == TL_OK, "%s", tl_last_error());
  for (int i = 0; i < 100; i++) tl_pool_run(pool, 0, empty_fn, NULL);
  sleep_ns(20 * 1000000); /* let the spin phase end */
  int64_t c0 = cpu_ns(), t0 = now_ns();
  sleep_ns(1000000000);
  int64_t c1 = cpu_ns(), t1 = now_ns();
  double ms = (double)(c1 - c0) / 1e6;
  fprintf(stderr, "  [info] idle CPU over %.0f ms with 4 threads, spin 50 us: %.2f ms\n", (double)(t1 - t0) / 1e6, ms);
  CHECK(ms < 50.0, "idle pool used %.1f ms of CPU in 1 s", ms);
  /* and it still works */
  idx_arg a;
  memset(&a, 0, sizeof a);
  tl_pool_run(pool, 0, idx_fn, &a);
  for (int w = 0; w < 4; w++) CHECK(a.hits[w].v == 1, "after idle: worker %d", w);
  tl_pool_free(pool);
}

/* ---- allocation failure ---- */

static void test_alloc_failure(void) {
  static const int threads[] = {1, 2, 5};
  for (size_t t = 0; t < TL_ARRAY_LEN(threads); t++) {
    tl_pool *pool = NULL;
    int64_t before = tl_faultsim_count();
    REQUIRE(tl_pool_new(threads[t], 50, &pool) == TL_OK, "%s", tl_last_error());
    int64_t allocs = tl_faultsim_count() - before;
    tl_pool_free(pool);
    CHECK(allocs >= 1, "tl_pool_new(%d) made %lld allocations", threads[t], (long long)allocs);
    for (int64_t k = 1; k <= allocs; k++) {
      pool = (tl_pool *)1;
      tl_faultsim_fail_at(k);
      tl_status st = tl_pool_new(threads[t], 50, &pool);
      tl_faultsim_fail_at(0);
      CHECK(st == TL_ERR_NOMEM, "threads %d, allocation %lld fails: %s", threads[t], (long long)k, tl_status_name(st));
      CHECK(pool == NULL, "out not cleared");
      CHECK(strlen(tl_last_error()) > 0, "no message");
      if (st == TL_OK) tl_pool_free(pool);
    }
  }
}

/* ---- bad arguments ---- */

static void test_bad_args(void) {
  static const int bad[] = {0, -1, 100000, 1025, INT32_MIN};
  for (size_t i = 0; i < TL_ARRAY_LEN(bad); i++) {
    tl_pool *pool = (tl_pool *)1;
    tl_status st = tl_pool_new(bad[i], 50, &pool);
    CHECK(st == TL_ERR_INVALID, "threads %d: %s", bad[i], tl_status_name(st));
    CHECK(pool == NULL, "threads %d: out not cleared", bad[i]);
    CHECK(strstr(tl_last_error(), "threads") != NULL, "message '%s'", tl_last_error());
  }
  CHECK(tl_pool_new(2, 50, NULL) == TL_ERR_INVALID, "out NULL");
  /* fn NULL is a no-op; a NULL pool runs serially as one worker */
  tl_pool *pool = NULL;
  REQUIRE(tl_pool_new(2, 50, &pool) == TL_OK, "%s", tl_last_error());
  tl_pool_run(pool, 0, NULL, NULL);
  tl_pool_free(pool);
  idx_arg a;
  memset(&a, 0, sizeof a);
  tl_pool_run(NULL, 4, idx_fn, &a);
  CHECK(a.hits[0].v == 1 && a.seen_n[0].v == 1 && a.hits[1].v == 0, "NULL pool");
  /* the maximum is accepted */
  CHECK(tl_pool_new(1024, -1, &pool) == TL_OK, "1024 threads: %s", tl_last_error());
  if (pool) {
    memset(&a, 0, sizeof a);
    tl_pool_run(pool, 7, idx_fn, &a);
    int ok = 1;
    for (int w = 0; w < MAXW; w++) ok &= a.hits[w].v == (w < 7);
    CHECK(ok, "1024-thread pool, 7 workers");
    tl_pool_free(pool);
  }
}

/* ---- wake-up latency (informational) ---- */

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static double median_run_us(tl_pool *pool, int runs, int64_t gap_ns) {
  int64_t *t = calloc((size_t)runs, sizeof *t);
  if (!t) return -1;
  for (int i = 0; i < runs; i++) {
    if (gap_ns) sleep_ns(gap_ns);
    int64_t a = now_ns();
    tl_pool_run(pool, 0, empty_fn, NULL);
    t[i] = now_ns() - a;
  }
  qsort(t, (size_t)runs, sizeof *t, cmp_i64);
  double m = (double)t[runs / 2] / 1e3;
  free(t);
  return m;
}

static void test_latency(void) {
  tl_pool *pool = NULL;
  REQUIRE(tl_pool_new(2, 50, &pool) == TL_OK, "%s", tl_last_error());
  for (int i = 0; i < 1000; i++) tl_pool_run(pool, 0, empty_fn, NULL);
  double spin = median_run_us(pool, 20000, 0);
  double asleep = median_run_us(pool, 300, 1000000);
  fprintf(stderr, "  [info] empty tl_pool_run, 2 threads: median %.2f us back-to-back (spinning), %.2f us after 1 ms idle "
                  "(workers asleep, spin 50 us)\n", spin, asleep);
  tl_pool_free(pool);
  REQUIRE(tl_pool_new(2, -1, &pool) == TL_OK, "%s", tl_last_error());
  double nospin = median_run_us(pool, 3000, 0);
  fprintf(stderr, "  [info] empty tl_pool_run, 2 threads, spin -1: median %.2f us back-to-back\n", nospin);
  tl_pool_free(pool);
  CHECK(spin >= 0 && asleep >= 0, "timing");
}

int main(void) {
  RUN(test_bad_args);
  RUN(test_alloc_failure);
  RUN(test_many_small_runs);
  RUN(test_worker_indices);
  RUN(test_oversubscribed);
  RUN(test_create_free);
  RUN(test_mxcsr);
  RUN(test_nested);
  RUN(test_concurrent_callers);
  RUN(test_idle_cpu);
  RUN(test_latency);
  return test_summary("runtime_pool");
}
