/* probe_impl.h — internals of tl_machine_probe, shared by probe.c (entry, cache key, timing,
 * compute peaks), probe_mem.c (bandwidths and the last-level-cache sweep) and probe_cache.c (the
 * JSON cache file). Not installed; tests include it for the quick mode.
 *
 * Measuring rules kept by every probe*.c: a kernel is timed on the calling thread (1 thread) or
 * on every worker of ctx's pool at once (all threads, each worker its own buffer); every
 * measurement is a calibrated warm-up and then `trials` timed runs of about `trial_s` seconds;
 * the reported rate is the median, the spread (max - min) / median. Work is counted before the
 * clock starts, so timing covers only the kernels (and, for all threads, the pool's hand-off).
 * A run is "disturbed" when some worker was off its CPU (thread CPU clock) for over 10% of its
 * own time, or started after 10% of the run: another process took the core. Disturbed runs
 * are re-run (up to 3 x trials runs in all, and only during the first 15 s of the probe, 4 s in
 * quick mode, so a busy machine cannot stretch it much past 30 s); when every run was disturbed,
 * the best of them is the result (kept = 0) and the probe ends with a warning. With more threads
 * than CPUs, all-thread runs share CPUs by design and are never counted as disturbed.
 * Nothing here names an ISA: kernels come from the probe table (src/tile/tile_impl.h). */
#ifndef TL_PROBE_IMPL_H
#define TL_PROBE_IMPL_H

#include "../tile/tile_impl.h"

/* How hard tl_machine_probe_opts measures. Zero-initialised = the full probe. */
typedef struct tl_probe_opts {
  int quick; /* 1: fewer and shorter trials, a coarser sweep and a smaller DRAM set (~4 s; tests) */
  int disturb; /* 1: count every timed run as disturbed (tests of what a disturbed probe does) */
} tl_probe_opts;

/* tl_machine_probe with options (tl_machine_probe is this with opts NULL). */
tl_status tl_machine_probe_opts(tl_ctx *ctx, const tl_probe_opts *opts, int force,
                                void (*progress)(const char *note, void *arg), void *arg, tl_machine *out);

/* One probe in progress. */
typedef struct tl_probe_state {
  tl_ctx *ctx;
  tl_ctx_info info;   /* after tl_ctx_need_amx */
  int threads;        /* ctx's pool size */
  int trials;         /* timed runs per measurement (odd) */
  double trial_s;     /* target length of one run */
  int quick;
  void (*progress)(const char *note, void *arg);
  void *arg;
  double *cpu;        /* per worker, of its last run: CPU seconds, wall seconds, start time (3 x threads) */
  int disturbed, runs; /* timed runs over the probe: disturbed, all */
  int failed, measurements; /* measurements whose every run was disturbed; all measurements */
  char warn[512];      /* warnings of this call, joined by "; " (ctx gets them at the end) */
  double retry_until;  /* disturbed runs are re-run only until this time (tl_probe_now) */
  int oversubscribed;  /* more threads than CPUs allowed: all-thread runs are never "disturbed" */
  int disturb;         /* tl_probe_opts.disturb */
} tl_probe_state;

/* What one worker runs: `reps` repetitions of a kernel; returns the work done (ops or bytes).
 * worker is 0..nworkers-1 (0: the calling thread). */
typedef struct tl_probe_task tl_probe_task;
struct tl_probe_task {
  double (*body)(const tl_probe_task *t, int worker, int nworkers, int64_t reps);
  const tl_probe_unit *unit; /* compute tasks */
  const tl_probe_impl *mem;  /* memory tasks: the kernels */
  int kind;                  /* memory tasks: TL_PROBE_READ.. */
  char *buf;                 /* memory tasks: worker w uses buf + w * stride */
  size_t bytes, stride;      /* per-worker working set (a multiple of 4 KiB) and slice stride */
  int64_t reps;              /* set by the timing loop */
  double work0;              /* worker 0's work in the last run */
  double *cpu;               /* = the state's cpu[] */
};

enum { TL_PROBE_READ, TL_PROBE_WRITE, TL_PROBE_COPY, TL_PROBE_NT_COPY, TL_PROBE_KINDS };

/* A measured rate over the undisturbed runs (work/s summed over workers): the best run (the
 * ceiling: what the machine can sustain), the median and the spread; kept = 0: every run was
 * disturbed, best and median are the best of them and spread 0. */
typedef struct tl_probe_rate {
  double best, median, spread;
  int kept, disturbed; /* runs in the median; runs dropped as disturbed */
} tl_probe_rate;

/* Seconds on a monotonic clock. */
double tl_probe_now(void);
/* Sends a note to the progress callback (no-op without one). */
void tl_probe_note(const tl_probe_state *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Calibrates t->reps to about st->trial_s, then times st->trials runs on 1 worker (all = 0) or on
 * every worker (all = 1). */
tl_probe_rate tl_probe_measure(tl_probe_state *st, tl_probe_task *t, int all);
/* Fills m->levels (L1, L2, L3, DRAM) with bandwidths; L3's capacity from a sweep.
 * TL_ERR_NOMEM (message set on ctx) when the buffers cannot be had. */
tl_status tl_probe_memory(tl_probe_state *st, tl_machine *m);

/* The cache file (probe_cache.c). Writes m as JSON to path atomically (a temporary file in the
 * same directory, then rename), creating the directory (and its parents) first. Returns 0, or -1
 * with the reason in why. */
int tl_probe_cache_write(const char *path, const tl_machine *m, char *why, size_t why_size);
/* Reads path into *m if it is a complete, valid cache file for key; returns 1 on success, 0 when
 * the file does not exist, -1 (reason in why) when it exists but is unreadable, corrupt or for
 * another key. *m is written only on success. */
int tl_probe_cache_read(const char *path, const char *key, tl_machine *m, char *why, size_t why_size);

#endif /* TL_PROBE_IMPL_H */
