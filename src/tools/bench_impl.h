/* bench_impl.h — what the pieces of `tilec bench` share:
 *   cmd_bench.c    the command: flags, the header that states every setting, tables, CSV, plot;
 *   bench_run.c    groups of implementations timed together through tl_bench_run (batches,
 *                  rotation of buffer sets for cold runs, rows, the per-size table), buffers, and
 *                  the plain C loop's persistent threads;
 *   bench_peers.c  the peers found at run time: OpenBLAS, BLIS and oneDNN through dlopen/dlsym
 *                  (no link-time dependency), PyTorch through a Python subprocess;
 *   bench_<suite>.c one file per suite (bench_stream.c: copy and scale; bench_gemm.c with
 *                  bench_gemm_peers.c: matrix products, which report GFLOP/s, not GB/s).
 *
 * Adding a suite = one file defining a `const tl_bsuite tl_bsuite_<name>` and one row in
 * TL_BENCH_SUITE_LIST. A suite parses its own sizes (a gemm size is not a byte count), builds
 * one tl_bgroup per operation and size (tilec's rows and the peers' rows for the same work),
 * checks every implementation's output against a reference before timing (a mismatch is a WRONG
 * row, never timed), and hands the group to tl_bgroup_run.
 *
 * Invariants: every timed call of a group is interleaved round by round with the others; before
 * each timed batch the harness sleeps (opts.pause_s) so the threads of the previous batch (tilec's
 * pool, OpenMP, OpenBLAS) are asleep; cold groups rotate buffer sets through one counter shared
 * by all implementations, so no call finds its operands in cache from the previous call.
 */
#ifndef TL_BENCH_IMPL_H
#define TL_BENCH_IMPL_H

#include <stdint.h>
#include <stdio.h>

#include "tilec.h"

struct tl_benv;

/* One suite: a family of operations benchmarked over sizes. */
typedef struct tl_bsuite {
  const char *name;        /* "copy" */
  const char *summary;     /* one line, for --help */
  const char *size_syntax; /* how a size is written, for messages: "BYTES[K|M|G]" */
  const char *sizes;       /* default sizes, comma-separated */
  const char *quick_sizes; /* sizes for --quick */
  /* 0 when tok is a valid size, else -1 with a message in err. */
  int (*size_check)(const char *tok, char *err, size_t errn);
  /* Runs every operation of the suite at one size (appending rows, printing tables). Returns 0,
   * or 1 when a tilec row was WRONG or failed, or -1 when the size could not be run at all
   * (the message is printed on stderr). */
  int (*run)(struct tl_benv *env, const char *size);
  /* Optional. dtypes: the --dtype values the suite takes, comma-separated, the first the
   * default (NULL: "f32" only). header: prints the suite's own header lines (tilec's settings,
   * the peers, the columns) after the shared timing lines (NULL: the streaming suites' lines). */
  const char *dtypes;
  void (*header)(struct tl_benv *env);
} tl_bsuite;

/* X(the suite's tl_bsuite object): the one table of suites, in the order --help lists them.
 * Later suites (gemm, softmax, norms, attention) add one file and one row. */
#define TL_BENCH_SUITE_LIST(X) \
  X(tl_bsuite_copy)            \
  X(tl_bsuite_scale)           \
  X(tl_bsuite_softmax)         \
  X(tl_bsuite_norm)            \
  X(tl_bsuite_gemm)            \
  X(tl_bsuite_attention)

#define TL_X_(s) extern const tl_bsuite s;
TL_BENCH_SUITE_LIST(TL_X_)
#undef TL_X_

/* ---- peers (bench_peers.c) ---- */

typedef struct tl_bdnnl tl_bdnnl;   /* oneDNN's entry points and its engine and stream */
typedef struct tl_bdnnl_op tl_bdnnl_op; /* one oneDNN primitive with its source and destination memory */

typedef struct tl_bpeers {
  /* OpenBLAS (libopenblas.so.0): NULL handle when absent */
  void *openblas;
  void (*ob_scopy)(int n, const float *x, int incx, float *y, int incy);
  void (*ob_sscal)(int n, float alpha, float *x, int incx);
  void (*ob_saxpby)(int n, float alpha, const float *x, int incx, float beta, float *y, int incy);
  /* BLIS (libblis.so.4, else libblis.so): native API, dim_t and inc_t are 64-bit */
  void *blis;
  void (*bli_scopyv)(int conjx, int64_t n, float *x, int64_t incx, float *y, int64_t incy);
  void (*bli_sscalv)(int conjalpha, int64_t n, float *alpha, float *x, int64_t incx);
  void (*bli_sscal2v)(int conjx, int64_t n, float *alpha, float *x, int64_t incx, float *y, int64_t incy);
  /* oneDNN 2.x (libdnnl.so.2), C API */
  tl_bdnnl *dnnl;
  /* PyTorch: python3 that can import torch (run as a subprocess) */
  int torch;
  char torch_version[32];
  /* one line each for the header: what was found, where, and its settings; or why not */
  char openblas_desc[256], blis_desc[256], dnnl_desc[256], torch_desc[256];
  char env_desc[640]; /* the OpenMP / OpenBLAS environment the peers run with */
  char cap_desc[384]; /* the peers' ISA switches set to match TILEC_ISA ("" when not capped) */
  int cap_level;      /* the tl_isa level the peers are capped at, -1 when not capped */
  unsigned want;      /* the TL_BPEER_LIST bits asked for (suites load their own extra peers) */
} tl_bpeers;

/* The peers that can be asked for (--peers), one bit each: X(bit, name). */
#define TL_BPEER_LIST(X) \
  X(1, "openblas")        \
  X(2, "blis")            \
  X(4, "onednn")          \
  X(8, "torch")           \
  X(16, "libxsmm")
#define TL_BPEER_ALL 31

/* Finds the peers in `want` (TL_BPEER_LIST bits) present now. Sets, when the user has not, the
 * environment they read when loaded (OMP_NUM_THREADS=threads, GOMP_SPINCOUNT,
 * OPENBLAS_THREAD_TIMEOUT, BLIS_ARCH_TYPE for AVX-512 CPUs where BLIS picks an AVX2
 * configuration; with TILEC_ISA below the CPU's best level, each peer's ISA switch at the same
 * level: cap_desc, cap_level) and says so in the descriptions. Never fails: an absent or unwanted peer has a
 * NULL handle and a description saying why. */
void tl_bpeers_load(tl_bpeers *p, int threads, unsigned want);
/* Prints the header's "environment:" line and, when the peers are capped, its "ISA cap:" line. */
void tl_bpeers_print_env(const tl_bpeers *p);
void tl_bpeers_close(tl_bpeers *p);

/* oneDNN primitives over n f32 (1-D, format a). eltwise: dst = alpha * src + beta (the
 * eltwise_linear algorithm); reorder: dst = src. NULL with a message in err on failure. */
tl_bdnnl_op *tl_bdnnl_eltwise_linear(tl_bpeers *p, int64_t n, float alpha, float beta, char *err, size_t errn);
tl_bdnnl_op *tl_bdnnl_reorder(tl_bpeers *p, int64_t n, char *err, size_t errn);
/* Runs op on src -> dst (dst may equal src for eltwise); 0 or -1. */
int tl_bdnnl_run(tl_bpeers *p, tl_bdnnl_op *op, const float *src, float *dst);
void tl_bdnnl_op_free(tl_bpeers *p, tl_bdnnl_op *op);

/* What the PyTorch driver is asked to time: op is "copy", "scale" (y = a*x), "scale_inplace" or
 * "gemm" (C [m, n] = A [m, k] B [k, n] in dtype "f32" or "bf16", torch.matmul with out=).
 * "sdpa" / "sdpa_causal": scaled_dot_product_attention with a = heads, m = Sq, n = Sk, k = D. */
typedef struct tl_btorch_req {
  const char *op;
  int64_t n;        /* f32 elements; gemm: N */
  int64_t m, k;     /* gemm only */
  const char *dtype; /* gemm only: "f32" or "bf16" (NULL: f32) */
  float a;
  int threads;
  int64_t copies;   /* buffer sets rotated (1: warm) */
  int inner;        /* calls per timed batch */
  tl_bench_opts opts;
} tl_btorch_req;
/* Runs the driver; 0 with *r filled (per-call times), 1 when torch's output was wrong, -1 when
 * it could not run; note says what happened (version, or the error). */
int tl_btorch_run(const tl_bpeers *p, const tl_btorch_req *q, tl_bench_result *r, char *note, size_t noten);

/* ---- groups, rows, buffers, the C loop's threads (bench_run.c) ---- */

enum { TL_BROW_OK, TL_BROW_WRONG, TL_BROW_FAILED, TL_BROW_SKIPPED };

/* One implementation of a group's operation. */
typedef struct tl_bimpl {
  char name[40];     /* "tilec (in place)", "openblas scopy" */
  int tilec;         /* 1: tilec's row; 0: a peer */
  int klass;         /* what it is compared with: the best peer of the same class (gemm: 0 plain
                        weights, 1 pre-packed weights; every other suite: 0) */
  /* One call on buffer set `set` (0..copies-1); nonzero: it failed (note says why). */
  int (*fn)(void *arg, int64_t set);
  void *arg;
  int status;        /* TL_BROW_*: the suite sets WRONG / FAILED / SKIPPED after its check */
  char note[160];
  int external;      /* timed elsewhere (ext filled by the suite after tl_bgroup_run's timing) */
  tl_btorch_req torch; /* for external rows: what to ask the PyTorch driver */
} tl_bimpl;

#define TL_BGROUP_MAX 16

/* The implementations of one operation at one size, timed together. */
typedef struct tl_bgroup {
  const char *op;       /* CSV key: "copy", "scale", "scale_inplace" */
  const char *title;    /* "y = x" */
  int64_t size_bytes;   /* the problem size (bytes of x) */
  char size[24];        /* as printed: "8 MiB" */
  double moved;         /* bytes moved per call, for GB/s (reads + writes, no write-allocate) */
  int64_t copies;       /* buffer sets rotated (1: warm) */
  int64_t set_bytes;    /* bytes of one set */
  double flops;         /* compute suites: operations per call (2MNK), reported as GFLOP/s instead
                           of GB/s; 0 for bandwidth suites */
  double peak;          /* compute suites: the machine's peak op/s for dtype (0: unknown) */
  const char *dtype;    /* as printed: "f32", "bf16 x bf16 -> f32" (NULL: "f32") */
  int n;
  tl_bimpl impl[TL_BGROUP_MAX];
} tl_bgroup;

/* One result row (every implementation of every group, in order). */
typedef struct tl_brow {
  char op[24], title[32], impl[40], size[24];
  int64_t size_bytes;
  double moved;
  double flops, peak;            /* as in tl_bgroup */
  char dtype[24];
  int tilec, klass, status, reps, batch; /* klass: as in tl_bimpl */
  double median_s, min_s, max_s; /* per call */
  double ratio;                  /* the best peer's (of its klass) median / this median; 0: none */
  char note[160];
} tl_brow;

/* The plain C loop's threads: persistent pthreads that spin up to 50 us for work and then
 * sleep (futex), as tilec's pool does by default. */
typedef struct tl_bpool tl_bpool;
tl_bpool *tl_bpool_new(int threads); /* NULL on failure */
void tl_bpool_free(tl_bpool *pool);
/* Runs fn(arg, w, n) for w = 0..n-1 (w = 0 on the caller) and waits for all. */
void tl_bpool_run(tl_bpool *pool, void (*fn)(void *arg, int w, int n), void *arg);

/* Everything a run shares. */
typedef struct tl_benv {
  const tl_bsuite *suite;
  tl_ctx *ctx;
  tl_ctx_info info;
  int threads;
  int cold;              /* 1: rotate buffer sets larger than the last-level cache */
  int quick;
  int offset;            /* --offset: gemm operands this many bytes past a 64-byte line */
  const char *dtype;     /* --dtype (the suite's first dtype by default) */
  int64_t llc_bytes;     /* last-level cache used to size the rotation */
  char llc_source[128];
  tl_bench_opts opts;    /* for tl_bench_run */
  double batch_s;        /* target length of one timed batch */
  tl_bpeers peers;
  tl_bpool *pool;
  tl_brow *rows;
  int nrows, cap;
  int progress;          /* stderr is a terminal */
  double t_start;
  int status;            /* 1 once a tilec row was WRONG or failed */
} tl_benv;

/* Buffer sets to rotate for a set of set_bytes: 1 when warm; cold: enough sets to span twice the
 * last-level cache (at least 1, at most 16384). */
int64_t tl_bench_copies(const tl_benv *env, int64_t set_bytes);
/* 64-byte aligned allocation of n floats (pages touched); NULL on failure. Free with free(). */
float *tl_bench_alloc_f32(int64_t n);
/* The test pattern: an exactly representable value in [-0.5, 0.5) for element i of set s. */
static inline float tl_bench_pattern(int64_t i, int64_t s) {
  uint32_t h = (uint32_t)((uint64_t)(i + 1) * 2654435761u) ^ (uint32_t)(s * 40503u);
  return (float)(int32_t)((h >> 8) & 0xffff) / 65536.0f - 0.5f;
}
/* Times the group's implementations whose status is OK (interleaved, in batches), then asks the
 * PyTorch driver for external rows, appends one row per implementation and prints the table.
 * Returns 0, or -1 on a harness failure (message printed). */
int tl_bgroup_run(tl_benv *env, tl_bgroup *g);
/* A byte count as "512 KiB", "1 GiB", "1.5 MiB", "100 B". */
const char *tl_bench_bytes_str(char *buf, size_t n, double bytes);
/* Prints a progress note on stderr (a terminal only, once the run has taken over a second). */
void tl_bench_progress(const tl_benv *env, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* TL_BENCH_IMPL_H */
