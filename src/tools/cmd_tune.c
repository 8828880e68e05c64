/* cmd_tune.c — `tilec tune`: search a kernel's config space for the given shapes and keep the
 * winners in the tuning DB, list or clear the DB, or compare the tuner with exhaustive timing.
 *
 * For each (kernel, shape, dtype): makes the kernel's space (src/kernels/tune_kernels.h), runs
 * the search (src/tune/search.c: prune, rank by the roofline model of the probed host, time the
 * best few, refine) within --budget seconds, and writes (kernel, version, key, ISA, threads,
 * machine) -> config, time, heuristic time to the DB in one transaction. tl_matmul / tl_attention
 * then use the config for plans they make in contexts with the same ISA, threads and machine.
 * A SHAPE is the kernel's sizes, optionally followed by ":<variant>" (attention: ":causal").
 *
 * --compare (the evidence of docs/tune.md): over the reduced space, times every valid config
 * (exhaustive), runs the tuner, then re-times the exhaustive winner, the tuned winner and the
 * heuristic interleaved (tl_bench_run) and reports the ratios; it also measures tl_matmul's
 * per-call cost with a tuned config in the DB against TILEC_TUNE off. Nothing is written.
 *
 * Invariants: usage errors exit 2 with one line on stderr before any probe or timing; results go
 * to stdout, the progress bar (stderr is a terminal, or --verbose) to stderr. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../kernels/matmul_impl.h"
#include "../kernels/tune_kernels.h"
#include "tools_impl.h"

const char tl_cmd_tune_help[] =
    "usage: tilec tune KERNEL SHAPE... [--dtype D] [--budget SECONDS] [options]\n"
    "       tilec tune --suite gemm|attention [--budget SECONDS] [options]\n"
    "       tilec tune --list [--all] | --clear [--all]   [--db PATH]\n"
    "       tilec tune --compare (KERNEL SHAPE... | --suite gemm) [--dtype D] [options]\n"
    "\n"
    "Searches a kernel's block-size configs for each SHAPE and stores the fastest in the tuning\n"
    "DB, keyed by kernel and version, shape and dtypes, ISA level, thread count and this machine.\n"
    "tl_matmul and tl_attention use a stored config automatically when they make a plan for the\n"
    "same problem in a context with the same ISA, threads and machine (TILEC_TUNE=0 turns that off).\n"
    "\n"
    "The search: every config of the space is checked (tile alignment, then the plan: budgets),\n"
    "ranked by the roofline model on this host's probed peaks (`tilec probe`, cached), and the\n"
    "best few are timed (at most 15% of the valid configs, the heuristic's config included),\n"
    "then neighbours of the best measured; candidates slower than 2x the best stop early; large\n"
    "spaces are searched by beam. See docs/tune.md.\n"
    "\n"
    "kernels: matmul (SHAPE MxNxK; --dtype f32 (default), bf16, int8 = u8 x i8 -> i32; 1-2 rows,\n"
    "         3-16 of bf16 / int8 on AVX512-BF16 / VNNI (3-15 at the amx level) and 3-16 of f32\n"
    "         on AVX-512 (b past half the L3), against a b streamed from memory (past a sixteenth\n"
    "         of the L3), where tl_matmul splits K between the threads, are outside the space:\n"
    "         said (`not tuned: ...`), nothing stored)\n"
    "         attention (SHAPE BxHxSxD or BxHxSqxSkxD, :causal for causal, e.g. 1x8x2048x128:causal;\n"
    "         Hkv = H, o f32, no mask; --dtype bf16 (default), f32; params BQ, BK; Sq <= 16 is\n"
    "         the decode path: BK only)\n"
    "suites:  gemm (f32 512^3, 1024^3, 2048^3, 16x4096x4096, 4096x16x4096; bf16 1024^3, 2048^3;\n"
    "         int8 1024^3); attention (bf16 1x8x2048x128 and :causal, 1x8x512x64:causal,\n"
    "         decode 1x8x1x8192x128)\n"
    "\n"
    "options:\n"
    "  --dtype D        f32, bf16 or int8 (default: the kernel's first: matmul f32, attention bf16)\n"
    "  --budget S       seconds per shape for the search, 0.1..3600 (default 10)\n"
    "  --reduced        search the reduced space (the one --compare enumerates)\n"
    "  --db PATH        the tuning DB (default $TILEC_TUNE_DB, else <cache dir>/tune.db)\n"
    "  --threads N      worker threads, 1..1024 (default: the CPUs this process may run on)\n"
    "  --isa NAME       ISA cap: scalar, avx2, avx2vnni, avx512, avx512vnni, avx512bf16, amx\n"
    "  --list           print the DB's configs for this machine (--all: every machine)\n"
    "  --clear          delete the DB's configs for this machine (--all: every machine)\n"
    "  --compare        exhaustive vs tuned vs heuristic over the reduced space; writes nothing\n"
    "  --verbose        progress on stderr even when it is not a terminal\n"
    "  -h, --help       this help\n"
    "\n"
    "environment: TILEC_TUNE_DB, TILEC_CACHE_DIR, TILEC_ISA\n"
    "exit status: 0 ok, 1 a search, the probe or the DB failed, 2 bad usage\n";

#define TL_CMD "tune"
#define TL_TUNE_MAX_SHAPES 64

/* The suites: kernel, dtype, shape per row; a suite with no rows is announced as not ready. */
typedef struct tl_tune_suite_row {
  const char *kernel, *dtype, *shape;
} tl_tune_suite_row;
typedef struct tl_tune_suite {
  const char *name;
  const char *not_ready; /* NULL: available */
  tl_tune_suite_row rows[12];
} tl_tune_suite;

static const tl_tune_suite tl_tune_suites[] = {
    {"gemm", NULL,
     {{"matmul", "f32", "512x512x512"},
      {"matmul", "f32", "1024x1024x1024"},
      {"matmul", "f32", "2048x2048x2048"},
      {"matmul", "f32", "16x4096x4096"},
      {"matmul", "f32", "4096x16x4096"},
      {"matmul", "bf16", "1024x1024x1024"},
      {"matmul", "bf16", "2048x2048x2048"},
      {"matmul", "int8", "1024x1024x1024"}}},
    {"attention", NULL,
     {{"attention", "bf16", "1x8x2048x128"},
      {"attention", "bf16", "1x8x2048x128:causal"},
      {"attention", "bf16", "1x8x512x64:causal"},
      {"attention", "bf16", "1x8x1x8192x128"}}},
};

/* The parsed command line. */
typedef struct tl_tune_args {
  const tl_tune_kernel *kernel;
  const char *shapes[TL_TUNE_MAX_SHAPES];
  int nshapes;
  const char *dtype;   /* NULL: f32 */
  const tl_tune_suite *suite;
  double budget;
  int list, clear, all, compare, reduced, verbose;
  const char *db;      /* NULL: the context's */
  tl_ctx_opts opts;
} tl_tune_args;

/* "f32" / "bf16" / "int8" to the input dtype; TL_DTYPE_INVALID otherwise. */
static tl_dtype tl_tune_dtype(const char *s) {
  if (!s || !strcmp(s, "f32")) return TL_F32;
  if (!strcmp(s, "bf16")) return TL_BF16;
  if (!strcmp(s, "int8") || !strcmp(s, "u8")) return TL_U8;
  return TL_DTYPE_INVALID;
}

/* 1 when word is one of the space-separated words of list. */
static int tl_tune_has_word(const char *list, const char *word) {
  const size_t n = strlen(word);
  for (const char *p = list; p && *p;) {
    const char *e = strchr(p, ' ');
    const size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n && !strncmp(p, word, n)) return 1;
    p = e ? e + 1 : p + len;
  }
  return 0;
}

/* The kernel's default dtype: the first of its dtypes ("f32" / "bf16"). */
static const char *tl_tune_default_dtype(const tl_tune_kernel *k) {
  return !strncmp(k->dtypes, "bf16", 4) ? "bf16" : "f32";
}

/* Parses SHAPE[:VARIANT] for kernel k: sizes into d (at most 8), *variant 1 when the shape ends
 * in ":<k->variant>". Returns the number of sizes, or -1 (message in err). */
static int tl_tune_shape(const tl_tune_kernel *k, const char *shape, int64_t *d, int *variant, char *err, size_t errn) {
  char buf[128];
  *variant = 0;
  if (strlen(shape) >= sizeof buf) {
    tl_msg(err, errn, "shape '%.40s...' is too long", shape);
    return -1;
  }
  snprintf(buf, sizeof buf, "%s", shape);
  char *colon = strchr(buf, ':');
  if (colon) {
    if (!k->variant || strcmp(colon + 1, k->variant)) {
      if (k->variant) tl_msg(err, errn, "shape '%s': %s takes ':%s' after the sizes, not ':%s'", shape, k->name, k->variant, colon + 1);
      else tl_msg(err, errn, "shape '%s': %s takes no ':%s'", shape, k->name, colon + 1);
      return -1;
    }
    *colon = 0, *variant = 1;
  }
  return tl_shape_parse(buf, d, 8, err, errn);
}

/* Parses argv; TL_EXIT_OK or TL_EXIT_USAGE (message printed). */
static int tl_tune_parse(int argc, char **argv, tl_tune_args *a) {
  memset(a, 0, sizeof *a);
  a->budget = 10;
  for (int i = 1; i < argc;) {
    const char *v = NULL;
    int r;
    if ((r = tl_tool_ctx_flag(TL_CMD, argc, argv, &i, &a->opts)) != 0) {
      if (r < 0) return TL_EXIT_USAGE;
    } else if ((r = tl_tool_flag_value(TL_CMD, argc, argv, &i, "--dtype", &v)) != 0) {
      if (r < 0) return TL_EXIT_USAGE;
      if (tl_tune_dtype(v) == TL_DTYPE_INVALID) return tl_tool_usage_error(TL_CMD, "--dtype: '%s' is not f32, bf16 or int8", v);
      a->dtype = v;
    } else if ((r = tl_tool_flag_value(TL_CMD, argc, argv, &i, "--budget", &v)) != 0) {
      if (r < 0) return TL_EXIT_USAGE;
      char *end;
      double b = strtod(v, &end);
      if (!*v || *end || !(b >= 0.1 && b <= 3600)) return tl_tool_usage_error(TL_CMD, "--budget: '%s' is not a number of seconds in 0.1..3600", v);
      a->budget = b;
    } else if ((r = tl_tool_flag_value(TL_CMD, argc, argv, &i, "--db", &v)) != 0) {
      if (r < 0) return TL_EXIT_USAGE;
      if (!*v) return tl_tool_usage_error(TL_CMD, "--db: empty path");
      a->db = v;
    } else if ((r = tl_tool_flag_value(TL_CMD, argc, argv, &i, "--suite", &v)) != 0) {
      if (r < 0) return TL_EXIT_USAGE;
      for (size_t s = 0; s < TL_ARRAY_LEN(tl_tune_suites); s++)
        if (!strcmp(tl_tune_suites[s].name, v)) a->suite = &tl_tune_suites[s];
      if (!a->suite) return tl_tool_usage_error(TL_CMD, "--suite: unknown suite '%s' (gemm, attention)", v);
      if (a->suite->not_ready)
        return tl_tool_usage_error(TL_CMD, "--suite %s: not yet available (%s)", v, a->suite->not_ready);
    } else if (!strcmp(argv[i], "--list")) {
      a->list = 1, i++;
    } else if (!strcmp(argv[i], "--clear")) {
      a->clear = 1, i++;
    } else if (!strcmp(argv[i], "--all")) {
      a->all = 1, i++;
    } else if (!strcmp(argv[i], "--compare")) {
      a->compare = 1, i++;
    } else if (!strcmp(argv[i], "--reduced")) {
      a->reduced = 1, i++;
    } else if (!strcmp(argv[i], "--verbose") || !strcmp(argv[i], "-v")) {
      a->verbose = 1, i++;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return tl_tool_bad_arg(TL_CMD, argv[i]);
    } else if (!a->kernel && !a->nshapes) {
      a->kernel = tl_tune_kernel_find(argv[i]);
      if (!a->kernel) {
        char names[256] = "";
        for (int k = 0; tl_tune_kernel_at(k); k++)
          snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? ", " : "", tl_tune_kernel_at(k)->name);
        return tl_tool_usage_error(TL_CMD, "unknown or untunable kernel '%s' (tunable: %s)", argv[i], names);
      }
      i++;
    } else {
      if (a->nshapes == TL_TUNE_MAX_SHAPES) return tl_tool_usage_error(TL_CMD, "at most %d shapes", TL_TUNE_MAX_SHAPES);
      a->shapes[a->nshapes++] = argv[i++];
    }
  }
  const int modes = a->list + a->clear + (a->kernel || a->suite);
  if (modes == 0) return tl_tool_usage_error(TL_CMD, "give KERNEL SHAPE..., --suite, --list or --clear (see tilec tune --help)");
  if (modes > 1) return tl_tool_usage_error(TL_CMD, "--list, --clear and tuning go one at a time");
  if (a->all && !a->list && !a->clear) return tl_tool_usage_error(TL_CMD, "--all goes with --list or --clear");
  if (a->compare && (a->list || a->clear)) return tl_tool_usage_error(TL_CMD, "--compare tunes; it does not go with --list or --clear");
  if (a->kernel && a->suite) return tl_tool_usage_error(TL_CMD, "give KERNEL SHAPE... or --suite, not both");
  if (a->kernel && !a->nshapes) return tl_tool_usage_error(TL_CMD, "%s: give at least one SHAPE (%s)", a->kernel->name, a->kernel->shape_syntax);
  if (a->suite && a->dtype) return tl_tool_usage_error(TL_CMD, "--dtype does not go with --suite (the suite sets each dtype)");
  if ((a->list || a->clear) && a->nshapes) return tl_tool_usage_error(TL_CMD, "unexpected argument '%s'", a->shapes[0]);
  if (a->kernel && a->dtype && !tl_tune_has_word(a->kernel->dtypes, strcmp(a->dtype, "u8") ? a->dtype : "int8"))
    return tl_tool_usage_error(TL_CMD, "--dtype %s: %s takes %s", a->dtype, a->kernel->name, a->kernel->dtypes);
  /* shapes are checked now, before any probe */
  for (int s = 0; s < a->nshapes; s++) {
    int64_t d[8];
    char err[256];
    int variant = 0;
    int n = tl_tune_shape(a->kernel, a->shapes[s], d, &variant, err, sizeof err);
    if (n < 0) return tl_tool_usage_error(TL_CMD, "%s", err);
    if (n < a->kernel->min_dims || n > a->kernel->max_dims)
      return tl_tool_usage_error(TL_CMD, "shape '%s': %s takes %s", a->shapes[s], a->kernel->name, a->kernel->shape_syntax);
  }
  return TL_EXIT_OK;
}

/* ---- progress ---- */

typedef struct tl_tune_bar {
  int on;
  char what[96];
} tl_tune_bar;

static void tl_tune_progress(void *arg, double frac, const char *note) {
  tl_tune_bar *b = arg;
  if (!b->on) return;
  int w = 24, fill = (int)(fmin(1, fmax(0, frac)) * w + 0.5);
  char bar[32];
  for (int i = 0; i < w; i++) bar[i] = i < fill ? '#' : '.';
  bar[w] = 0;
  fprintf(stderr, "\r\033[K[%s] %3.0f%% %s  %.70s", bar, fmin(1, frac) * 100, b->what, note);
  fflush(stderr);
}

static void tl_tune_bar_done(tl_tune_bar *b) {
  if (b->on) fprintf(stderr, "\r\033[K");
}

static void tl_tune_probe_note(const char *note, void *arg) {
  tl_tune_bar *b = arg;
  if (b->on) fprintf(stderr, "\r\033[Kprobe: %.100s", note);
}

/* ---- list / clear ---- */

static void tl_tune_print_row(void *arg, const tl_tune_row *r) {
  int *n = arg;
  if (!(*n)++)
    printf("%-9s %-2s %-38s %-10s %3s  %-26s %10s %10s %6s %s\n", "kernel", "v", "key", "isa", "thr", "config", "time ms",
           "heur ms", "timed", "machine");
  printf("%-9s %-2d %-38s %-10s %3d  %-26s %10.4f %10.4f %6lld %s\n", r->kernel, r->version, r->key, r->isa, r->threads,
         r->config, r->time_s * 1e3, r->heuristic_s * 1e3, (long long)r->timed, r->machine);
}

static int tl_tune_list_clear(const tl_tune_args *a, tl_ctx *ctx, const char *path) {
  char why[512], machine[96];
  tl_ctx_info in;
  tl_ctx_info_get(ctx, &in);
  tl_tune_machine_key(&in, machine, sizeof machine);
  tl_tune_db *db = NULL;
  if (access(path, F_OK) != 0) {
    printf("no tuning DB at %s\n", path);
    return TL_EXIT_OK;
  }
  if (tl_tune_db_open(path, a->clear, &db, why, sizeof why) != TL_OK)
    return tl_tool_fail(TL_CMD, "cannot open the tuning DB: %s", why);
  int rc = TL_EXIT_OK;
  if (a->list) {
    int n = 0;
    int64_t r = tl_tune_db_list(db, a->all ? NULL : machine, tl_tune_print_row, &n, why, sizeof why);
    if (r < 0) rc = tl_tool_fail(TL_CMD, "%s: %s", path, why);
    else if (r == 0) printf("no tuned configs for %s in %s\n", a->all ? "any machine" : machine, path);
  } else {
    int64_t r = tl_tune_db_clear(db, a->all ? NULL : machine, why, sizeof why);
    if (r < 0) rc = tl_tool_fail(TL_CMD, "%s: %s", path, why);
    else printf("deleted %lld tuned config%s%s%s from %s\n", (long long)r, r == 1 ? "" : "s", a->all ? "" : " of ",
                a->all ? "" : machine, path);
  }
  tl_tune_db_close(db);
  return rc;
}

/* ---- tuning ---- */

/* One job: kernel, dtype, shape. */
typedef struct tl_tune_job {
  const tl_tune_kernel *kernel;
  const char *dtype, *shape;
} tl_tune_job;

/* A search space that could not be built: a shape or dtype the kernel refuses is a usage error
 * (exit 2, as explain gives), anything else (memory, the machine) a failure (exit 1). */
static int tl_tune_space_fail(tl_status s, const tl_tune_job *j, const char *err) {
  if (s == TL_ERR_SHAPE || s == TL_ERR_INVALID || s == TL_ERR_DTYPE)
    return tl_tool_usage_error(TL_CMD, "%s %s: %s", j->kernel->name, j->shape, err);
  return tl_tool_fail(TL_CMD, "%s %s: %s", j->kernel->name, j->shape, err);
}

/* A problem the kernel runs outside its config space: said on stdout, nothing stored, and the
 * other jobs go on (exit 0). */
static int tl_tune_not_tunable(const tl_tune_job *j, const char *why) {
  printf("%s %s %s: not tuned: %s\n", j->kernel->name, j->dtype ? j->dtype : "f32", j->shape, why);
  return TL_EXIT_OK;
}

/* Tunes one job and stores the winner (counted in *stored). */
static int tl_tune_one(tl_ctx *ctx, const tl_tune_args *a, const tl_tune_job *j, const tl_machine *m, tl_tune_db *db,
                       tl_tune_bar *bar, int *stored) {
  int64_t d[8];
  char err[512];
  int variant = 0;
  int n = tl_tune_shape(j->kernel, j->shape, d, &variant, err, sizeof err);
  tl_tune_space *sp = NULL;
  if (n < 0) return tl_tool_usage_error(TL_CMD, "%s", err);
  tl_status s = j->kernel->space(ctx, d, n, variant, tl_tune_dtype(j->dtype), a->reduced, &sp, err, sizeof err);
  if (s != TL_OK) return tl_tune_space_fail(s, j, err);
  if (!sp) return tl_tune_not_tunable(j, err);
  snprintf(bar->what, sizeof bar->what, "%s %s %s", j->kernel->name, j->dtype ? j->dtype : "f32", j->shape);
  tl_tune_opts o = {.budget_s = a->budget, .machine = m, .progress = tl_tune_progress, .arg = bar};
  tl_tune_result r;
  s = tl_tune_search(ctx, sp, &o, &r);
  tl_tune_bar_done(bar);
  int rc = TL_EXIT_OK;
  if (s != TL_OK) {
    rc = tl_tool_fail(TL_CMD, "%s: %s", bar->what, tl_ctx_error(ctx));
    goto out;
  }
  tl_tune_row row;
  tl_tune_row_key(ctx, sp->kernel, sp->version, sp->key, &row);
  tl_tune_cfg_format(sp, r.best, row.config, sizeof row.config);
  row.time_s = r.best_s, row.heuristic_s = r.heuristic_s, row.tuning_s = r.seconds;
  row.candidates = r.valid, row.timed = r.timed;
  if (tl_tune_db_put(db, &row, err, sizeof err) != TL_OK) {
    rc = tl_tool_fail(TL_CMD, "%s: cannot store the result: %s", bar->what, err);
    goto out;
  }
  (*stored)++;
  printf("%-28s %-22s %9.4f ms  heuristic %9.4f ms (x%.2f)  timed %lld of %lld valid (%lld in space%s)%s  %.1f s\n",
         bar->what, row.config, r.best_s * 1e3, r.heuristic_s * 1e3, r.heuristic_s > 0 ? r.heuristic_s / r.best_s : 0,
         (long long)r.timed, (long long)r.valid, (long long)r.space_size, r.beam ? ", beam" : "",
         r.budget_hit ? "  budget hit" : "", r.seconds);
  fflush(stdout);
out:
  tl_tune_space_free(sp);
  return rc;
}

/* ---- compare ---- */

typedef struct tl_tune_cmp_case {
  tl_tune_space *sp;
  void *cand;
} tl_tune_cmp_case;

static int tl_tune_cmp_fn(void *arg, int64_t rep) {
  (void)rep;
  tl_tune_cmp_case *c = arg;
  return c->sp->run(c->sp->user, c->cand);
}

/* Exhaustive vs tuned vs heuristic for one job (reduced space), winners re-timed interleaved. */
static int tl_tune_compare_one(tl_ctx *ctx, const tl_tune_args *a, const tl_tune_job *j, const tl_machine *m,
                               tl_tune_bar *bar) {
  int64_t d[8];
  char err[512];
  int variant = 0;
  int n = tl_tune_shape(j->kernel, j->shape, d, &variant, err, sizeof err);
  tl_tune_space *sp = NULL;
  if (n < 0) return tl_tool_usage_error(TL_CMD, "%s", err);
  tl_status s = j->kernel->space(ctx, d, n, variant, tl_tune_dtype(j->dtype), 1, &sp, err, sizeof err);
  if (s != TL_OK) return tl_tune_space_fail(s, j, err);
  if (!sp) return tl_tune_not_tunable(j, err);
  snprintf(bar->what, sizeof bar->what, "%s %s %s", j->kernel->name, j->dtype ? j->dtype : "f32", j->shape);
  int rc = TL_EXIT_OK;
  tl_tune_cmp_case cases[3] = {{sp, NULL}, {sp, NULL}, {sp, NULL}};
  tl_tune_result ex, tu;
  tl_tune_opts oe = {.budget_s = 3600, .exhaustive = 1, .min_rep_s = 0.02, .machine = m, .progress = tl_tune_progress, .arg = bar};
  char what[96];
  snprintf(what, sizeof what, "%s", bar->what);
  snprintf(bar->what, sizeof bar->what, "%.80s exhaustive", what);
  s = tl_tune_search(ctx, sp, &oe, &ex);
  tl_tune_bar_done(bar);
  if (s != TL_OK) {
    rc = tl_tool_fail(TL_CMD, "%s: %s", what, tl_ctx_error(ctx));
    goto out;
  }
  snprintf(bar->what, sizeof bar->what, "%.80s tuner", what);
  tl_tune_opts ot = {.budget_s = a->budget, .machine = m, .progress = tl_tune_progress, .arg = bar};
  s = tl_tune_search(ctx, sp, &ot, &tu);
  tl_tune_bar_done(bar);
  if (s != TL_OK) {
    rc = tl_tool_fail(TL_CMD, "%s: %s", what, tl_ctx_error(ctx));
    goto out;
  }
  const int64_t *cfgs[3] = {ex.best, tu.best, sp->heuristic};
  const char *names[3] = {"exhaustive", "tuned", "heuristic"};
  tl_bench_case bc[3];
  for (int i = 0; i < 3; i++) {
    tl_tune_built b;
    if (sp->build(sp->user, cfgs[i], &cases[i].cand, &b) != TL_OK) {
      rc = tl_tool_fail(TL_CMD, "%s: the %s config does not build: %s", what, names[i], tl_ctx_error(ctx));
      goto out;
    }
    bc[i] = (tl_bench_case){names[i], tl_tune_cmp_fn, &cases[i]};
  }
  tl_bench_result br[3];
  tl_bench_opts bo = {.min_time_s = 1, .max_time_s = 6, .min_reps = 7};
  if (tl_bench_run(&bo, 3, bc, br) != TL_OK || br[0].failed || br[1].failed || br[2].failed) {
    rc = tl_tool_fail(TL_CMD, "%s: re-timing failed", what);
    goto out;
  }
  char ce[TL_TUNE_CFG_TEXT], ct[TL_TUNE_CFG_TEXT], ch[TL_TUNE_CFG_TEXT];
  tl_tune_cfg_format(sp, ex.best, ce, sizeof ce);
  tl_tune_cfg_format(sp, tu.best, ct, sizeof ct);
  tl_tune_cfg_format(sp, sp->heuristic, ch, sizeof ch);
  /* the same config twice is one config: its ratio is 1 whatever the noise between two timings */
  const int same = !memcmp(ex.best, tu.best, sizeof ex.best);
  const double ratio = same ? 1.0 : br[1].median_s / br[0].median_s, ratio_min = same ? 1.0 : br[1].min_s / br[0].min_s;
  printf("%s\n", what);
  printf("  space (reduced)  %lld configs, %lld valid\n", (long long)ex.space_size, (long long)ex.valid);
  printf("  exhaustive       %-22s timed %lld of %lld in %.1f s (best-of %.4f ms)\n", ce, (long long)ex.timed,
         (long long)ex.valid, ex.seconds, ex.best_s * 1e3);
  printf("  tuner            %-22s timed %lld of %lld (%.1f%%) in %.1f s, %lld stopped early (best-of %.4f ms)\n", ct,
         (long long)tu.timed, (long long)tu.valid, 100.0 * (double)tu.timed / (double)tu.valid, tu.seconds,
         (long long)tu.stopped, tu.best_s * 1e3);
  printf("  heuristic        %s\n", ch);
  printf("  re-timed interleaved (median [min, max] of %d/%d/%d calls): exhaustive %.4f [%.4f, %.4f] ms, tuned %.4f [%.4f, "
         "%.4f] ms, heuristic %.4f [%.4f, %.4f] ms\n",
         br[0].reps, br[1].reps, br[2].reps, br[0].median_s * 1e3, br[0].min_s * 1e3, br[0].max_s * 1e3,
         br[1].median_s * 1e3, br[1].min_s * 1e3, br[1].max_s * 1e3, br[2].median_s * 1e3, br[2].min_s * 1e3,
         br[2].max_s * 1e3);
  printf("  tuned / exhaustive %.3f%s (%s 5%%; by min %.3f), heuristic / exhaustive %.3f (by min %.3f), timed fraction "
         "%.1f%% (%s 15%%)\n",
         ratio, same ? " (same config)" : "", ratio <= 1.05 ? "within" : "NOT within", ratio_min,
         br[2].median_s / br[0].median_s, br[2].min_s / br[0].min_s,
         100.0 * (double)tu.timed / (double)tu.valid, tu.timed * 100 <= tu.valid * 15 ? "within" : "NOT within");
  fflush(stdout);
out:
  for (int i = 0; i < 3; i++)
    if (cases[i].cand) sp->release(sp->user, cases[i].cand);
  tl_tune_space_free(sp);
  return rc;
}

typedef struct tl_tune_lk {
  tl_ctx *ctx;
  tl_tensor a, b, c;
} tl_tune_lk;

static int tl_tune_lk_fn(void *arg, int64_t rep) {
  (void)rep;
  tl_tune_lk *l = arg;
  return tl_matmul(l->ctx, &l->a, &l->b, &l->c, NULL) != TL_OK;
}

/* tl_matmul's per-call cost on a cached plan with a tuned config in the DB vs tuning off. */
static int tl_tune_lookup_overhead(const tl_tune_args *a, const char *dir) {
  char path[1100], why[512];
  snprintf(path, sizeof path, "%s/lookup.db", dir);
  int rc = TL_EXIT_FAIL;
  tl_ctx *on = NULL, *off = NULL;
  tl_tune_db *db = NULL;
  float A[32 * 32], B[32 * 32], C[32 * 32];
  for (int i = 0; i < 32 * 32; i++) A[i] = (float)(i % 7) * 0.25f, B[i] = (float)(i % 5) * 0.5f;
  int64_t s2[2] = {32, 32};
  tl_ctx_opts oo = a->opts, of = a->opts;
  /* one thread: a 2-thread pool hand-off adds microseconds of jitter unrelated to the lookup */
  oo.tune_db = path, oo.tune = 1, of.tune = -1, oo.threads = of.threads = 1;
  if (tl_ctx_new(&oo, &on) != TL_OK || tl_ctx_new(&of, &off) != TL_OK) {
    tl_tool_fail(TL_CMD, "lookup overhead: %s", tl_last_error());
    goto out;
  }
  tl_tune_lk l[2] = {{on, tl_tensor_make(A, TL_F32, 2, s2), tl_tensor_make(B, TL_F32, 2, s2), tl_tensor_make(C, TL_F32, 2, s2)},
                     {off, tl_tensor_make(A, TL_F32, 2, s2), tl_tensor_make(B, TL_F32, 2, s2), tl_tensor_make(C, TL_F32, 2, s2)}};
  tl_mm_build bd;
  const tl_matmul_opts mo = TL_MATMUL_OPTS_INIT;
  if (tl_mm_prepare(on, &l[0].a, &l[0].b, &l[0].c, &mo, &bd) != TL_OK) goto out;
  tl_tune_row row;
  tl_tune_row_key(on, "matmul", TL_MM_TUNE_VERSION, "", &row);
  tl_mm_tune_key(&bd, row.key, sizeof row.key);
  /* the heuristic's own config: both contexts run identical plans, so the difference is what
   * having a tuning DB costs a cached call */
  snprintf(row.config, sizeof row.config, "BM=%lld BN=%lld BK=%lld", (long long)bd.run.BM, (long long)bd.run.BN,
           (long long)bd.run.BK);
  if (tl_tune_db_open(path, 1, &db, why, sizeof why) != TL_OK || tl_tune_db_put(db, &row, why, sizeof why) != TL_OK) {
    tl_tool_fail(TL_CMD, "lookup overhead: %s", why);
    goto out;
  }
  /* what one in-memory lookup costs (tl_matmul makes one per new plan, none per cached call) */
  const char *hit = tl_tune_lookup(on, "matmul", TL_MM_TUNE_VERSION, row.key);
  const int nlk = 200000;
  double t0 = tl_bench_now();
  for (int i = 0; i < nlk; i++) hit = tl_tune_lookup(on, "matmul", TL_MM_TUNE_VERSION, row.key);
  const double lookup_ns = (tl_bench_now() - t0) / nlk * 1e9;
  tl_bench_case bc[2] = {{"tuned DB", tl_tune_lk_fn, &l[0]}, {"TILEC_TUNE=0", tl_tune_lk_fn, &l[1]}};
  /* 5 trials of interleaved calls; the differences of their medians, sorted */
  enum { NT = 5 };
  tl_bench_result br[2];
  double diff[NT], on_med = 0, off_med = 0;
  int reps = 0;
  tl_bench_opts bo = {.min_time_s = 0.3, .max_time_s = 1, .min_reps = 1000, .max_reps = 100000, .stable = 0.002};
  for (int t = 0; t < NT; t++) {
    if (tl_bench_run(&bo, 2, bc, br) != TL_OK || br[0].failed || br[1].failed) goto out;
    diff[t] = (br[0].median_s - br[1].median_s) * 1e6;
    on_med += br[0].median_s * 1e6 / NT, off_med += br[1].median_s * 1e6 / NT, reps += br[0].reps;
    for (int u = t; u > 0 && diff[u] < diff[u - 1]; u--) {
      double x = diff[u];
      diff[u] = diff[u - 1], diff[u - 1] = x;
    }
  }
  printf("lookup overhead: tl_matmul 32x32x32 f32, 1 thread, cached plan, %d trials of interleaved calls (%d per "
         "context): with a DB row for it (found: %s) %.3f us, TILEC_TUNE off %.3f us (means of trial medians); "
         "difference per call %+.3f us (median trial; range %+.3f..%+.3f); one in-memory tl_tune_lookup (made per "
         "new plan only) %.1f ns\n",
         NT, reps, hit ? "yes" : "NO", on_med, off_med, diff[NT / 2], diff[0], diff[NT - 1], lookup_ns);
  rc = TL_EXIT_OK;
out:
  tl_tune_db_close(db);
  tl_ctx_free(on);
  tl_ctx_free(off);
  unlink(path);
  return rc;
}

/* ---- entry ---- */

int tl_cmd_tune(int argc, char **argv) {
  tl_tune_args a;
  int rc = tl_tune_parse(argc, argv, &a);
  if (rc != TL_EXIT_OK) return rc;
  if (a.db) a.opts.tune_db = a.db;
  a.opts.tune = -1; /* the tuner times explicit configs; its own context never looks configs up */
  tl_ctx *ctx = NULL;
  if (tl_ctx_new(&a.opts, &ctx) != TL_OK) return tl_tool_fail(TL_CMD, "%s", tl_last_error());
  tl_ctx_info in;
  tl_ctx_info_get(ctx, &in);
  tl_tune_db *db = NULL;
  tl_machine *m = NULL;
  char why[512], tmpdir[] = "/tmp/tilec-tune-XXXXXX";
  int have_tmp = 0;
  if (a.list || a.clear) {
    rc = tl_tune_list_clear(&a, ctx, in.tune_db);
    goto out;
  }
  if (!a.compare && tl_tune_db_open(in.tune_db, 1, &db, why, sizeof why) != TL_OK) {
    rc = tl_tool_fail(TL_CMD, "cannot open the tuning DB: %s", why);
    goto out;
  }
  tl_tune_bar bar = {.on = a.verbose || isatty(2)};
  m = calloc(1, sizeof *m);
  if (!m) {
    rc = tl_tool_fail(TL_CMD, "out of memory");
    goto out;
  }
  if (tl_machine_probe(ctx, 0, tl_tune_probe_note, &bar, m) != TL_OK) {
    rc = tl_tool_fail(TL_CMD, "probe: %s", tl_ctx_error(ctx));
    goto out;
  }
  tl_tune_bar_done(&bar);
  tl_tune_job jobs[TL_TUNE_MAX_SHAPES];
  int njobs = 0, stored = 0;
  if (a.suite) {
    for (int r = 0; r < (int)TL_ARRAY_LEN(a.suite->rows) && a.suite->rows[r].kernel; r++)
      jobs[njobs++] = (tl_tune_job){tl_tune_kernel_find(a.suite->rows[r].kernel), a.suite->rows[r].dtype, a.suite->rows[r].shape};
  } else {
    for (int s = 0; s < a.nshapes; s++) jobs[njobs++] = (tl_tune_job){a.kernel, a.dtype ? a.dtype : tl_tune_default_dtype(a.kernel), a.shapes[s]};
  }
  if (a.compare) {
    printf("tilec tune --compare: %d threads, ISA %s, machine %s; budget %.1f s per shape for the tuner\n", in.threads,
           tl_isa_name(in.isa), m->cpu_key, a.budget);
    if (!mkdtemp(tmpdir)) {
      rc = tl_tool_fail(TL_CMD, "cannot make a temporary directory");
      goto out;
    }
    have_tmp = 1;
  }
  for (int j = 0; j < njobs && rc == TL_EXIT_OK; j++)
    rc = a.compare ? tl_tune_compare_one(ctx, &a, &jobs[j], m, &bar) : tl_tune_one(ctx, &a, &jobs[j], m, db, &bar, &stored);
  if (rc == TL_EXIT_OK && a.compare) rc = tl_tune_lookup_overhead(&a, tmpdir);
  if (rc == TL_EXIT_OK && !a.compare) {
    if (stored) printf("stored in %s\n", in.tune_db);
    else printf("nothing stored\n");
  }
out:
  if (have_tmp) rmdir(tmpdir);
  free(m);
  tl_tune_db_close(db);
  tl_ctx_free(ctx);
  return rc;
}
