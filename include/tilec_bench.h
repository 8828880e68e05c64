/* tilec_bench.h — timing the way DESIGN.md §6 asks: warm up by time, repeat until the median is
 * stable, report median with min and max; run several candidates interleaved round by round (the
 * clock drifts between 3.3 and 4 GHz with the unit in use); cold runs rotate inputs across
 * buffers larger than the measured last-level cache, warm runs say they are warm. */
#ifndef TILEC_BENCH_H
#define TILEC_BENCH_H

#include "tilec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One timed call. rep counts calls (warm-up included); cold benchmarks use it to pick the input
 * copy (rep % copies). Return nonzero to stop the benchmark (an error). */
typedef int (*tl_bench_fn)(void *arg, int64_t rep);

typedef struct tl_bench_case {
  const char *name;     /* "tilec", "openblas", ... */
  tl_bench_fn fn;
  void *arg;
} tl_bench_case;

typedef struct tl_bench_opts {
  double warmup_s;      /* 0: 0.05 s of calls before timing (per case) */
  double min_time_s;    /* 0: 0.3 s of timed calls per case at least */
  double max_time_s;    /* 0: 3 s per case at most */
  int min_reps;         /* 0: 5 */
  int max_reps;         /* 0: 1000 */
  double stable;        /* stop once the median moved less than this between rounds; 0: 0.01 */
  double pause_s;       /* untimed sleep before each timed call, so threads the previous call left
                           spinning (tilec's pool, OpenMP, OpenBLAS) are asleep; 0: no pause */
} tl_bench_opts;

typedef struct tl_bench_result {
  double median_s, min_s, max_s;
  int reps;
  int failed;           /* the function returned nonzero */
} tl_bench_result;

/* Times n cases interleaved: each round calls every case once, in order, until each has had
 * min_reps calls and min_time_s, the medians are stable or max_time_s / max_reps is reached, or
 * the timing has taken n x max_time_s of wall time (pauses aside; the harness's own work with
 * many tiny calls included).
 * opts may be NULL. out[i] receives case i's result. A case whose fn returns nonzero is marked
 * failed and not called again (its times describe the calls before); the others go on.
 * TL_ERR_INVALID (tl_last_error says why) for n < 1, NULL cases, out or fn, negative or NaN
 * options, min_reps > max_reps or min_time_s > max_time_s; TL_ERR_NOMEM. Never prints. */
TL_API tl_status tl_bench_run(const tl_bench_opts *opts, int n, const tl_bench_case *cases, tl_bench_result *out);

/* Monotonic time in seconds. */
TL_API double tl_bench_now(void);

#ifdef __cplusplus
}
#endif

#endif /* TILEC_BENCH_H */
