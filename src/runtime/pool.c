/* pool.c — the persistent thread pool (contract in runtime_impl.h).
 *
 * The calling thread is worker 0; threads-1 helper threads live as long as the pool. One
 * tl_pool_run is one "generation": the caller writes the job (fn, arg, its MXCSR), publishes a
 * 64-bit job word (sequence number << TL_POOL_N_BITS | n) and bumps a 32-bit futex word; helpers
 * 1..n-1 call fn, helpers >= n only note the sequence number and go back to waiting; the caller
 * runs worker 0's share and then waits until the n-1 participants have counted themselves done.
 * Waiting (helpers for a job, the caller for `done`) spins for spin_us microseconds on a pause
 * loop that reads the clock every TL_POOL_SPIN_CHECK iterations and yields the CPU every
 * TL_POOL_SPIN_YIELD, then sleeps on a futex.
 *
 * Invariants — who writes which field, and with which memory order:
 * - threads, spin_ns, workers, started: written by tl_pool_new before the helpers start
 *   (pthread_create orders them); read-only afterwards.
 * - seq, busy: the caller's line. seq is touched only by the thread holding `busy` (or by
 *   tl_pool_new/free). busy is exchanged to 1 (acquire) at the start of a parallel run and stored
 *   0 (release) at its end; a caller that finds it set runs serially instead of racing.
 * - fn, arg, mxcsr (plain fields): written by the caller only while no helper can read them —
 *   before the release store of `job`, and after the previous run's participants were all seen
 *   done (acquire). A helper reads them only after an acquire load of `job` shows a new sequence
 *   number whose n includes it. Non-participants read `job` and nothing else, which is why n
 *   travels inside the job word: a late non-participant never reads a field being rewritten.
 * - job: stored by the caller (release), loaded by helpers (acquire). n == 0 means "stop".
 * - wake (the helpers' futex word): incremented by the caller after storing `job` (seq_cst).
 *   sleepers: a helper increments it (seq_cst), re-reads `wake` (seq_cst) and calls FUTEX_WAIT
 *   only if `wake` is unchanged; the caller reads `sleepers` (seq_cst) after bumping `wake` and
 *   calls FUTEX_WAKE only when it is > 0. By the store-buffer (Dekker) argument one of the two
 *   sees the other, so no wake-up is lost, and a run with every helper spinning makes no syscall.
 * - done (the caller's futex word): stored 0 by the caller before `job` (relaxed, ordered by the
 *   release); each participant adds 1 (seq_cst, which releases fn's writes) exactly once per run;
 *   the caller waits until it reads n-1 (acquire). caller_sleeping: set 1 by the caller (seq_cst)
 *   before it re-reads `done` and sleeps; the last participant reads it (seq_cst) after its add
 *   and wakes the caller only then. A stray wake-up from a late participant is harmless.
 * Each group of hot shared words has its own cache line (alignas(64)), and so does each worker.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <xmmintrin.h>

#include "runtime_impl.h"

#define TL_POOL_MAX_THREADS 1024
#define TL_POOL_N_BITS 11 /* n <= 1024 < 2^11; the rest of the job word is the sequence number */
#define TL_POOL_N_MASK ((UINT64_C(1) << TL_POOL_N_BITS) - 1)
#define TL_POOL_SPIN_CHECK 64  /* pause iterations between clock reads while spinning (~40 ns each) */
#define TL_POOL_SPIN_YIELD 256 /* pause iterations between sched_yield calls while spinning */

/* One helper thread. Aligned so that per-worker state never shares a line with another's. */
typedef struct tl_pool_worker {
  alignas(64) struct tl_pool *pool;
  pthread_t thread;
  int index; /* 1..threads-1 */
} tl_pool_worker;

struct tl_pool {
  /* read-only after tl_pool_new */
  int threads;
  int started;     /* helpers successfully created (threads-1 after a successful new) */
  int64_t spin_ns; /* < 0: never spin */
  tl_pool_worker *workers;
  /* the caller's line */
  alignas(64) uint64_t seq;
  atomic_int busy;
  /* the job line: written by the caller once per run, read by every helper */
  alignas(64) _Atomic uint64_t job;
  _Atomic uint32_t wake;
  tl_pool_fn fn;
  void *arg;
  unsigned mxcsr;
  /* written by participants as they finish */
  alignas(64) _Atomic uint32_t done;
  _Atomic uint32_t caller_sleeping;
  /* written by helpers when they go to sleep or wake up */
  alignas(64) atomic_int sleepers;
};

/* 1 while this thread is inside a run (worker 0 during tl_pool_run; helpers always). */
static _Thread_local int tl_pool_inside;

/* ---- small helpers ---- */

/* Sleeps while *word == val (or until woken; spurious returns are fine: callers re-check). */
static void tl_futex_wait(_Atomic uint32_t *word, uint32_t val) {
  syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

/* Wakes up to `count` threads sleeping on word. */
static void tl_futex_wake(_Atomic uint32_t *word, int count) {
  syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
}

/* Monotonic clock in nanoseconds (vDSO, no syscall). */
static int64_t tl_pool_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One step of a spin loop: a pause, and every TL_POOL_SPIN_YIELD steps a sched_yield, so that
 * a spinning thread does not hold a CPU that a thread of the same run is queued on (more threads
 * than CPUs, or a woken helper placed on its waker's CPU). Costs ~1 us per ~10 us of spinning. */
static void tl_pool_pause(unsigned i) {
  if (i % TL_POOL_SPIN_YIELD == 0)
    sched_yield();
  else
    _mm_pause();
}

/* The two halves of a job word: the run's sequence number and its worker count n (0: stop). */
static uint64_t tl_job_seq(uint64_t job) { return job >> TL_POOL_N_BITS; }
static int tl_job_n(uint64_t job) { return (int)(job & TL_POOL_N_MASK); }

/* Runs fn(arg, w, n) for w = 0..n-1 on this thread, marked as inside a run so that anything
 * fn calls runs serially too. */
static void tl_pool_serial(int n, tl_pool_fn fn, void *arg) {
  int saved = tl_pool_inside;
  tl_pool_inside = 1;
  for (int w = 0; w < n; w++) fn(arg, w, n);
  tl_pool_inside = saved;
}

/* ---- helpers' side ---- */

/* Waits until the job word carries a sequence number other than `seen`, and returns it (loaded
 * with acquire, so the job fields it covers are visible). Spins first, then sleeps on `wake`. */
static uint64_t tl_pool_wait_job(tl_pool *pool, uint64_t seen) {
  uint64_t job;
  if (pool->spin_ns > 0) {
    int64_t start = tl_pool_now_ns();
    for (unsigned i = 1;; i++) {
      job = atomic_load_explicit(&pool->job, memory_order_acquire);
      if (tl_job_seq(job) != seen) return job;
      tl_pool_pause(i);
      if (i % TL_POOL_SPIN_CHECK == 0 && tl_pool_now_ns() - start >= pool->spin_ns) break;
    }
  }
  for (;;) {
    uint32_t w = atomic_load(&pool->wake);
    job = atomic_load_explicit(&pool->job, memory_order_acquire);
    if (tl_job_seq(job) != seen) return job;
    atomic_fetch_add(&pool->sleepers, 1);
    if (atomic_load(&pool->wake) == w) tl_futex_wait(&pool->wake, w);
    atomic_fetch_sub(&pool->sleepers, 1);
  }
}

/* A helper thread's life: wait for a generation, take part if its index is below n, count
 * itself done, repeat until the stop job (n == 0). Runs fn under the caller's MXCSR. */
static void *tl_pool_main(void *p) {
  tl_pool_worker *me = p;
  tl_pool *pool = me->pool;
  const int w = me->index;
  uint64_t seen = 0;
  tl_pool_inside = 1; /* any tl_pool_run from fn on this thread is nested */
  for (;;) {
    uint64_t job = tl_pool_wait_job(pool, seen);
    seen = tl_job_seq(job);
    int n = tl_job_n(job);
    if (n == 0) break;
    if (w >= n) continue;
    tl_pool_fn fn = pool->fn;
    void *arg = pool->arg;
    unsigned own = _mm_getcsr();
    _mm_setcsr(pool->mxcsr);
    fn(arg, w, n);
    _mm_setcsr(own);
    uint32_t d = atomic_fetch_add(&pool->done, 1) + 1;
    if (d == (uint32_t)(n - 1) && atomic_load(&pool->caller_sleeping)) tl_futex_wake(&pool->done, 1);
  }
  return NULL;
}

/* ---- caller's side ---- */

/* Waits until `done` reaches target: spins, then sleeps on `done`. `woke`: this run woke
 * sleeping helpers. The kernel tends to queue a woken helper on the waker's CPU (wake-affine),
 * where a pause loop would keep it off the CPU for the whole spin; so after a wake-up the spin
 * yields instead of pausing (measured on 2 vCPUs: start of the woken helper ~spin_us -> ~tens of
 * us). */
static void tl_pool_wait_done(tl_pool *pool, uint32_t target, int woke) {
  if (pool->spin_ns > 0) {
    int64_t start = tl_pool_now_ns();
    for (unsigned i = 1;; i++) {
      if (atomic_load_explicit(&pool->done, memory_order_acquire) == target) return;
      if (woke) {
        sched_yield();
        if (tl_pool_now_ns() - start >= pool->spin_ns) break;
        continue;
      }
      tl_pool_pause(i);
      if (i % TL_POOL_SPIN_CHECK == 0 && tl_pool_now_ns() - start >= pool->spin_ns) break;
    }
  }
  for (;;) {
    atomic_store(&pool->caller_sleeping, 1);
    uint32_t d = atomic_load(&pool->done);
    if (d == target) break;
    tl_futex_wait(&pool->done, d);
  }
  atomic_store_explicit(&pool->caller_sleeping, 0, memory_order_relaxed);
}

/* Publishes a job word with a fresh sequence number and wakes sleeping helpers (all of them
 * when `force`, else only if some are asleep). Returns 1 when it made the FUTEX_WAKE call. The
 * caller must hold the pool (busy, or be the only thread that knows it). */
static int tl_pool_publish(tl_pool *pool, int n, int force) {
  pool->seq++;
  atomic_store_explicit(&pool->job, pool->seq << TL_POOL_N_BITS | (uint64_t)n, memory_order_release);
  atomic_fetch_add(&pool->wake, 1);
  if (!force && atomic_load(&pool->sleepers) == 0) return 0;
  tl_futex_wake(&pool->wake, INT_MAX);
  return 1;
}

/* Tells the first `started` helpers to exit and joins them. */
static void tl_pool_stop(tl_pool *pool, int started) {
  if (started <= 0) return;
  tl_pool_publish(pool, 0, 1);
  for (int i = 0; i < started; i++) pthread_join(pool->workers[i].thread, NULL);
}

/* ---- the API ---- */

/* Creates the pool and its threads-1 helper threads (signals blocked in them, so handlers run
 * on the application's threads). On failure nothing is left behind: started helpers are joined
 * and memory freed; the message is in tl_last_error. */
tl_status tl_pool_new(int threads, int spin_us, tl_pool **out) {
  tl_status st = TL_OK;
  tl_pool *pool = NULL;
  sigset_t all, old;
  int masked = 0;
  if (!out) return tl_fail_tls(TL_ERR_INVALID, "tl_pool_new: out is NULL");
  *out = NULL;
  if (threads < 1 || threads > TL_POOL_MAX_THREADS)
    return tl_fail_tls(TL_ERR_INVALID, "tl_pool_new: threads is %d, must be in 1..%d", threads,
                       TL_POOL_MAX_THREADS);

  pool = tl_aligned_alloc(64, sizeof *pool);
  if (!pool) {
    st = tl_fail_tls(TL_ERR_NOMEM, "tl_pool_new: cannot allocate the pool (%zu bytes)", sizeof *pool);
    goto out;
  }
  memset(pool, 0, sizeof *pool);
  pool->threads = threads;
  pool->spin_ns = spin_us < 0 ? -1 : (int64_t)spin_us * 1000;
  atomic_init(&pool->busy, 0);
  atomic_init(&pool->job, 0);
  atomic_init(&pool->wake, 0);
  atomic_init(&pool->done, 0);
  atomic_init(&pool->caller_sleeping, 0);
  atomic_init(&pool->sleepers, 0);
  if (threads == 1) goto out;

  size_t wbytes = (size_t)(threads - 1) * sizeof(tl_pool_worker);
  pool->workers = tl_aligned_alloc(64, wbytes);
  if (!pool->workers) {
    st = tl_fail_tls(TL_ERR_NOMEM, "tl_pool_new: cannot allocate %d workers (%zu bytes)", threads - 1, wbytes);
    goto out;
  }
  memset(pool->workers, 0, wbytes);

  sigfillset(&all);
  masked = pthread_sigmask(SIG_SETMASK, &all, &old) == 0;
  for (int i = 0; i < threads - 1; i++) {
    tl_pool_worker *wk = &pool->workers[i];
    wk->pool = pool;
    wk->index = i + 1;
    int rc = pthread_create(&wk->thread, NULL, tl_pool_main, wk);
    if (rc != 0) {
      st = tl_fail_tls(rc == EAGAIN ? TL_ERR_NOMEM : TL_ERR_INTERNAL,
                       "tl_pool_new: cannot start worker thread %d of %d: %s", i + 1, threads - 1, strerror(rc));
      goto out;
    }
    char name[32];
    snprintf(name, sizeof name, "tilec-w%d", i + 1);
    name[15] = '\0'; /* the kernel's limit */
    pthread_setname_np(wk->thread, name); /* cosmetic; failure is harmless */
    pool->started++;
  }

out:
  if (masked) pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (st != TL_OK) {
    if (pool) {
      tl_pool_stop(pool, pool->started);
      tl_aligned_free(pool->workers);
      tl_aligned_free(pool);
    }
    return st;
  }
  *out = pool;
  return TL_OK;
}

/* Stops and joins the helpers, then frees the pool. Must not be called during a run of the same
 * pool (in particular not from inside fn). NULL is a no-op. */
void tl_pool_free(tl_pool *pool) {
  if (!pool) return;
  tl_pool_stop(pool, pool->started);
  tl_aligned_free(pool->workers);
  tl_aligned_free(pool);
}

/* Worker count, the caller included; 1 for NULL (which tl_pool_run treats as a serial pool). */
int tl_pool_threads(const tl_pool *pool) { return pool ? pool->threads : 1; }

/* Runs fn(arg, w, n) for w = 0..n-1, n = min(nworkers, threads) (nworkers <= 0: all), worker 0
 * on the calling thread, and returns when all have returned. No locks, no allocation.
 * Serial fallbacks (each documented in runtime_impl.h), all on the calling thread, in order
 * w = 0..n-1: n == 1; pool NULL (n = 1); a call made from inside fn of any pool's run (nested use
 * would otherwise deadlock waiting for workers that are busy running the outer fn); a call that
 * finds the pool already running on another thread (misuse, but not a crash). fn NULL: no-op. */
void tl_pool_run(tl_pool *pool, int nworkers, tl_pool_fn fn, void *arg) {
  if (!fn) return;
  int threads = tl_pool_threads(pool);
  int n = (nworkers <= 0 || nworkers > threads) ? threads : nworkers;
  if (n == 1 || tl_pool_inside) {
    tl_pool_serial(n, fn, arg);
    return;
  }
  if (atomic_exchange_explicit(&pool->busy, 1, memory_order_acquire)) {
    tl_pool_serial(n, fn, arg);
    return;
  }
  pool->fn = fn;
  pool->arg = arg;
  pool->mxcsr = _mm_getcsr();
  atomic_store_explicit(&pool->done, 0, memory_order_relaxed);
  int woke = tl_pool_publish(pool, n, 0);

  tl_pool_inside = 1;
  fn(arg, 0, n);
  tl_pool_inside = 0;

  tl_pool_wait_done(pool, (uint32_t)(n - 1), woke);
  atomic_store_explicit(&pool->busy, 0, memory_order_release);
}
