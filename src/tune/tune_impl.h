/* tune_impl.h — the tuner: config spaces that kernels describe, the model-ranked measured search,
 * and the persistent tuning DB (docs/tune.md). Internal to libtilec; kernels (src/kernels/<name>_tune.c)
 * describe their spaces through tl_tune_space, the `tilec tune` command drives the search and the
 * DB, and ready-made operations look configs up through tl_tune_lookup.
 *
 * Layering: tune/ sits above runtime/ and roofline/ and below kernels/; nothing here names a
 * kernel. A kernel hands over named integer parameters with candidate values and four callbacks
 * (valid, build, run, release); tune/ prunes, ranks by the roofline model, times, and stores.
 *
 * Invariants:
 * - A config is an array of int64 values, one per parameter of its space, in the space's order;
 *   in the DB it is text "NAME=VALUE NAME=VALUE ..." so a row stays readable and survives a
 *   space gaining a parameter (missing names keep the kernel's heuristic value).
 * - Lookups never fail a call and never wait for tuning: any DB problem is a warning on the
 *   context and "no tuned config".
 * - The DB key is (kernel, version, key, isa, threads, machine); a config is used only when all
 *   six match. */
#ifndef TL_TUNE_IMPL_H
#define TL_TUNE_IMPL_H

#include "../runtime/runtime_impl.h"

#define TL_TUNE_MAX_PARAMS 8
#define TL_TUNE_MAX_VALUES 24
#define TL_TUNE_KEY_MAX 160
#define TL_TUNE_CFG_TEXT 256

/* One parameter: a name ("BM") and its candidate values, ascending. */
typedef struct tl_tune_param {
  char name[16];
  int nvalues;
  int64_t values[TL_TUNE_MAX_VALUES];
} tl_tune_param;

/* What a built candidate reports for the model. */
typedef struct tl_tune_built {
  tl_plan *plan;         /* borrowed (the candidate owns it): its tl_plan_cost feeds the roofline */
  int64_t par_blocks;    /* independent units of parallel work (load balance over threads) */
  int64_t steps;         /* grid steps of one run (per-step overhead) */
  double balance;        /* mean / max work per thread in (0, 1] (edge blocks, chunking); 0: from par_blocks */
} tl_tune_built;

/* A kernel's config space for one problem (shape, dtypes, flags) on one context. */
typedef struct tl_tune_space {
  char kernel[32];                 /* "matmul" */
  int version;                     /* bump when the kernel's blocking changes meaning */
  char key[TL_TUNE_KEY_MAX];       /* shape/dtype/flags, e.g. "f32.f32.f32 m1024 n1024 k1024 z1" */
  tl_dtype dtype;                  /* dtype of the math: picks the machine's compute unit */
  int nparams;
  tl_tune_param params[TL_TUNE_MAX_PARAMS];
  int64_t heuristic[TL_TUNE_MAX_PARAMS]; /* the config the kernel picks untuned */
  void *user;                      /* the kernel's state: tensors, buffers, its context */
  /* Cheap structural check (alignment, ranges): 1 keeps cfg, 0 prunes it (reason in why). */
  int (*valid)(void *user, const int64_t *cfg, char *why, size_t whyn);
  /* Builds the candidate (its plan: a refusal such as TL_ERR_VMEM prunes cfg). *cand receives
   * the kernel's handle, *out what the model needs. */
  tl_status (*build)(void *user, const int64_t *cfg, void **cand, tl_tune_built *out);
  /* One timed call of a built candidate; 0 ok, nonzero a failure (the candidate is dropped). */
  int (*run)(void *user, void *cand);
  /* Frees a candidate (and its plan). */
  void (*release)(void *user, void *cand);
  /* Optional model instead of the roofline (tests, kernels without a plan): seconds, < 0 to prune. */
  double (*model)(void *user, const int64_t *cfg);
  /* Frees user (tl_tune_space_free). May be NULL. */
  void (*free_user)(void *user);
} tl_tune_space;

/* Frees space->user through free_user and the space itself. NULL is a no-op. */
void tl_tune_space_free(tl_tune_space *space);
/* "BM=64 BN=128 BK=256" into buf. */
void tl_tune_cfg_format(const tl_tune_space *space, const int64_t *cfg, char *buf, size_t n);
/* Parses text written by tl_tune_cfg_format into cfg (names not in the text keep cfg's values;
 * unknown names are ignored). Returns 0, or -1 for malformed text. */
int tl_tune_cfg_parse(const tl_tune_space *space, const char *text, int64_t *cfg);

/* ---- the search (search.c) ---- */

typedef struct tl_tune_opts {
  double budget_s;          /* wall-time budget for the whole search; 0: 10 s */
  double max_time_frac;     /* at most this fraction of the valid candidates are timed; 0: 0.15 */
  int exhaustive;           /* 1: time every valid candidate (for comparisons), no early stop */
  int beam_width;           /* beam search when the space is larger than enum_max; 0: 8 */
  int64_t enum_max;         /* spaces up to this many configs are enumerated; 0: 4096 */
  double min_rep_s;         /* per timed candidate: repeat calls until this much time; 0: from the budget */
  const tl_machine *machine;/* peaks for the model (borrowed; required unless space->model) */
  void (*progress)(void *arg, double frac, const char *note); /* may be NULL */
  void *arg;
  double (*clock)(void);    /* seconds; NULL: tl_bench_now (tests pass a virtual clock) */
} tl_tune_opts;

typedef struct tl_tune_result {
  int64_t best[TL_TUNE_MAX_PARAMS];
  double best_s;            /* measured time of best (best of its timed calls) */
  double heuristic_s;       /* measured time of the heuristic config (0: not timed) */
  int64_t space_size;       /* configs in the space */
  int64_t scored;           /* configs the model scored (enumerated or visited by the beam) */
  int64_t valid;            /* scored configs that passed valid() and build() */
  int64_t timed;            /* candidates timed (the heuristic included) */
  int64_t stopped;          /* timed candidates stopped early (slower than 2x the best) */
  int beam;                 /* 1: the space was searched by beam, not enumerated */
  double seconds;           /* wall time of the search */
  int budget_hit;           /* 1: timing stopped because the budget ran out */
} tl_tune_result;

/* Prunes, ranks by the model, times the best few, refines around the best measured, and returns
 * the fastest measured config (never slower than the heuristic when that was valid: it is always
 * timed). TL_ERR_UNSUPPORTED when no candidate is valid; message on ctx. */
tl_status tl_tune_search(tl_ctx *ctx, tl_tune_space *space, const tl_tune_opts *opts, tl_tune_result *out);

/* Times one config of space: builds, warms up, and returns the best of its timed calls over
 * about min_s seconds (at least 3 calls) in *secs. */
tl_status tl_tune_time_config(tl_ctx *ctx, tl_tune_space *space, const int64_t *cfg, double min_s, double *secs);

/* ---- the DB (db.c) ---- */

/* One row. */
typedef struct tl_tune_row {
  char kernel[32];
  int version;
  char key[TL_TUNE_KEY_MAX];
  char isa[16];
  int threads;
  char machine[96];
  char config[TL_TUNE_CFG_TEXT];
  double time_s, heuristic_s, tuning_s;
  int64_t candidates, timed;
  char created[24];          /* "2026-11-22 03:10:00" (UTC) */
} tl_tune_row;

typedef struct tl_tune_db tl_tune_db;

/* Opens (writable = 1: creates the file and its directory, WAL mode) the DB at path. Errors
 * (unwritable directory, not a database...) return TL_ERR_IO with the reason in why. */
tl_status tl_tune_db_open(const char *path, int writable, tl_tune_db **out, char *why, size_t whyn);
void tl_tune_db_close(tl_tune_db *db); /* NULL is a no-op */
/* Inserts or replaces a row in one transaction (waits up to 10 s for another writer). */
tl_status tl_tune_db_put(tl_tune_db *db, const tl_tune_row *row, char *why, size_t whyn);
/* The row for the six key fields of *row (kernel, version, key, isa, threads, machine) into
 * *row: 1 found, 0 absent, -1 error (why). */
int tl_tune_db_get(tl_tune_db *db, tl_tune_row *row, char *why, size_t whyn);
/* Calls fn for each row (machine NULL: every machine), ordered by kernel and key. Returns the
 * row count, or -1 (why). */
int64_t tl_tune_db_list(tl_tune_db *db, const char *machine, void (*fn)(void *arg, const tl_tune_row *row), void *arg,
                        char *why, size_t whyn);
/* Deletes the rows of machine (NULL: all). Returns the count deleted, or -1 (why). */
int64_t tl_tune_db_clear(tl_tune_db *db, const char *machine, char *why, size_t whyn);
/* "ok" from PRAGMA integrity_check into why: 1 ok, 0 damaged, -1 error. */
int tl_tune_db_check(tl_tune_db *db, char *why, size_t whyn);

/* This host's machine fingerprint: "<vendor>-<family>-<model>-<stepping>-<hash>", the hash over
 * vendor, brand, family/model/stepping and the feature mask (the probe cache key's CPU part;
 * ISA and threads are separate DB columns). */
void tl_tune_machine_key(const tl_ctx_info *info, char *out, size_t n);
/* Fills the key fields of row for ctx: isa, threads and machine from the context. */
void tl_tune_row_key(const tl_ctx *ctx, const char *kernel, int version, const char *key, tl_tune_row *row);

/* ---- lookups from operations (lookup.c) ---- */

/* The tuned config text for (kernel, version, key) on ctx, or NULL (tuning off, no DB, no row,
 * or an unreadable DB: then a warning on ctx, once). The DB is read once per context, on the
 * first lookup, and kept in memory; the text stays valid while ctx lives. */
const char *tl_tune_lookup(tl_ctx *ctx, const char *kernel, int version, const char *key);

#endif /* TL_TUNE_IMPL_H */
