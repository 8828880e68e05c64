/* cmd_explain.c — `tilec explain KERNEL SHAPE...`: what a kernel instance does and where it stands
 * on a machine's roofline.
 *
 * For each shape: builds the instance from the kernel registry (src/kernels/), makes its plan,
 * and reports the grid and semantics, every operand's tensor, block, map, layout, staging mode and
 * level, the staging budgets used, the bytes each operand moves (tl_plan_cost, exact), the bytes
 * each memory level serves and the time they take, the arithmetic intensity and the bound with
 * what sets it (tl_roofline_bound). On the host (the default machine) it also runs the plan —
 * warm-up, then timed runs (tl_bench_run) — and prints the median, GFLOP/s, GB/s and attainment
 * (bound / measured), checks the result against the kernel's float64 reference, and checks that
 * the bytes tl_plan_stats counted in the run equal the plan's cost ("bytes: stats == cost").
 * Where the instance stands for a library call that runs more than its one plan (tl_kcase.call:
 * tl_matmul's K split), the call is timed and checked after the plan ("as run").
 *
 * Invariants: usage errors (unknown kernel, machine or flag, bad shape) exit 2 with one line on
 * stderr and nothing on stdout, before any probe or run; every number printed comes from the
 * library (plan cost, stats, bound, machine).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../kernels/kernels_impl.h"
#include "machine_fmt.h"
#include "tools_impl.h"

const char tl_cmd_explain_help[] =
    "usage: tilec explain KERNEL [SHAPE...] [--machine NAME] [--threads N] [--no-run] [--json]\n"
    "\n"
    "Explains one kernel instance per SHAPE (none: the kernel's first representative shape):\n"
    "  - the grid, its semantics (parallel / arbitrary) and the number of steps;\n"
    "  - each operand: tensor, block shape, index map, staging layout, stage mode, budget level,\n"
    "    output mode, the bytes it moves (tl_plan_cost, exact) and how often its tensor is read;\n"
    "  - the staging footprint per thread against the context's VMEM (L2) and L1 budgets;\n"
    "  - the bytes each memory level of the machine serves and the time they take, the arithmetic\n"
    "    intensity, and the roofline bound with the unit or level that sets it (docs/roofline.md).\n"
    "On the host (the default machine) it also runs the plan: warm-up, then timed runs; it prints\n"
    "the median time, GFLOP/s, GB/s and attainment (bound / measured), checks the result against\n"
    "a float64 reference and checks that the bytes counted in the run equal the plan's cost\n"
    "(\"bytes: stats == cost\"). Where the library call runs more than that one plan (tl_matmul's\n"
    "K split for a few rows of a: two plans; the plan is shown unsplit and the config line says so),\n"
    "it also times and checks the call itself on the same tensors (\"as run\"; JSON \"as_run\").\n"
    "\n"
    "The host machine is `tilec probe`'s for the context's thread count (cached; measured first,\n"
    "about 30 s, when nothing is cached for that count: said on stderr). Presets are modelled:\n"
    "the plan is still made on this host (its block sizes and budgets), then bounded there.\n"
    "A report on the host builds the kernel's tensors in memory (a shape of N elements needs its\n"
    "operands' bytes of RAM); with --no-run or a preset they are allocated but never written,\n"
    "which costs address space, not RAM or time (a buffer larger than RAM + swap may still be\n"
    "refused by the OS).\n"
    "\n"
    "options:\n"
    "  --machine NAME  host (default) or a preset: see `tilec machines`\n"
    "  --threads N     worker threads, 1..1024 (default: the CPUs this process may run on)\n"
    "  --no-run        on the host, do not run the plan (no timing, no stats check)\n"
    "  --json          one JSON object {\"machine\": ..., \"reports\": [...]}\n"
    "  -h, --help      this help\n"
    "\n"
    "Kernels and their shapes: run `tilec explain` with an unknown name, or see `tilec roofline`.\n"
    "\n"
    "exit status: 0 ok, 1 a plan, run or check failed (or stats != cost), 2 bad usage (unknown\n"
    "kernel or machine, bad shape or flag)\n";

#define TL_CMD "explain"
#define TL_EXPLAIN_MAX_SHAPES 64

/* The parsed command line. */
typedef struct tl_explain_args {
  const tl_kernel_desc *kernel;
  const char *shapes[TL_EXPLAIN_MAX_SHAPES];
  int nshapes;
  const char *machine; /* NULL or "host": the host */
  int threads, json, no_run;
} tl_explain_args;

/* What one report measured and found; filled by tl_explain_one, printed by the printers. */
typedef struct tl_explain_report {
  const tl_kcase *kc;
  tl_cost cost;
  tl_bound bound;
  int64_t tensor_bytes[TL_MAX_OPERANDS];
  int nops;
  int ran;                 /* 1 when the plan was run and timed */
  tl_bench_result bench;
  tl_stats stats;
  int stats_equal;
  double error;            /* check() of the last run; NAN when not checked */
  int check_ok;
  /* the instance's public call (tl_kcase.call), timed and checked after the plan: */
  int call_ran;
  tl_bench_result call_bench;
  double call_error;
  int call_ok;
} tl_explain_report;

/* The names of the registry's kernels, ", "-separated, into buf. */
static const char *tl_explain_kernel_list(char *buf, size_t n) {
  size_t used = 0;
  buf[0] = 0;
  for (int i = 0; tl_kernel_at(i) && used < n; i++)
    used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "", tl_kernel_at(i)->name);
  return buf;
}

/* Parses argv into *a; returns TL_EXIT_OK or TL_EXIT_USAGE (message printed). */
static int tl_explain_parse(int argc, char **argv, tl_explain_args *a) {
  memset(a, 0, sizeof *a);
  const char *kernel = NULL;
  char list[512];
  for (int i = 1; i < argc;) {
    const char *v = NULL;
    int r;
    if (!strcmp(argv[i], "--json")) {
      a->json = 1;
      i++;
    } else if (!strcmp(argv[i], "--no-run")) {
      a->no_run = 1;
      i++;
    } else if ((r = tl_tool_flag_value(TL_CMD, argc, argv, &i, "--machine", &v)) != 0) {
      if (r < 0) return TL_EXIT_USAGE;
      a->machine = v;
    } else if ((r = tl_tool_flag_value(TL_CMD, argc, argv, &i, "--threads", &v)) != 0) {
      long n;
      if (r < 0 || tl_tool_parse_int(TL_CMD, "--threads", v, 1, 1024, &n) != 0) return TL_EXIT_USAGE;
      a->threads = (int)n;
    } else if (argv[i][0] == '-' && argv[i][1] != 0) {
      return tl_tool_usage_error(TL_CMD, "unknown option '%s' (see tilec explain --help)", argv[i]);
    } else if (!kernel) {
      kernel = argv[i++];
    } else {
      if (a->nshapes == TL_EXPLAIN_MAX_SHAPES)
        return tl_tool_usage_error(TL_CMD, "at most %d shapes", TL_EXPLAIN_MAX_SHAPES);
      a->shapes[a->nshapes++] = argv[i++];
    }
  }
  if (!kernel)
    return tl_tool_usage_error(TL_CMD, "which kernel? (kernels: %s)", tl_explain_kernel_list(list, sizeof list));
  a->kernel = tl_kernel_find(kernel);
  if (!a->kernel)
    return tl_tool_usage_error(TL_CMD, "unknown kernel '%s' (kernels: %s)", kernel,
                               tl_explain_kernel_list(list, sizeof list));
  if (a->machine && !strcasecmp(a->machine, "host")) a->machine = NULL;
  return TL_EXIT_OK;
}

/* Probe progress: the first note of a measurement (not of a cache read) says on stderr that the
 * host is being measured. */
static void tl_explain_progress(const char *note, void *arg) {
  int *announced = arg;
  if (!strncmp(note, "read the probe cache", 20)) return; /* cached: nothing to announce */
  if (!strncmp(note, "probe cache", 11)) { /* a cache file not used, and why */
    fprintf(stderr, "tilec explain: %s\n", note);
    return;
  }
  if (!*announced) {
    fprintf(stderr, "tilec explain: measuring the host (nothing usable cached; about 30 s, cached afterwards)\n");
    *announced = 1;
  }
}

/* The host as the plans see it: with fewer threads than the probe measured, every peak and
 * per-core bandwidth is scaled to `threads` (one core's figure x threads when the probe measured
 * it, else the all-core figure pro rata); shared levels keep their capacity and take the
 * one-core bandwidth x threads when known, capped at the all-core figure. */
static void tl_explain_scale_host(tl_machine *m, int threads) {
  if (m->cores <= 0 || threads <= 0 || threads >= m->cores) return;
  double f = (double)threads / m->cores;
  for (int i = 0; i < m->nunits; i++) {
    tl_compute_unit *u = &m->units[i];
    u->peak = u->peak_1t > 0 ? fmin(u->peak, u->peak_1t * threads) : u->peak * f;
  }
  for (int l = 0; l < m->nlevels; l++) {
    tl_mem_level *lv = &m->levels[l];
    if (lv->read_bw_1t > 0) lv->read_bw = fmin(lv->read_bw, lv->read_bw_1t * threads);
    else if (lv->per_core) lv->read_bw *= f;
  }
  m->cores = threads;
}

/* One call of the plan for tl_bench_run. */
typedef struct tl_explain_call {
  tl_plan *plan;
  const tl_kcase *kc;
} tl_explain_call;

static int tl_explain_run_once(void *arg, int64_t rep) {
  (void)rep;
  tl_explain_call *c = arg;
  return tl_plan_run(c->plan, c->kc->in, c->kc->out) != TL_OK;
}

typedef struct tl_explain_pcall {
  tl_ctx *ctx;
  const tl_kcase *kc;
} tl_explain_pcall;

/* One run of the instance's public call (tl_kcase.call). */
static int tl_explain_call_once(void *arg, int64_t rep) {
  (void)rep;
  tl_explain_pcall *c = arg;
  return c->kc->call(c->ctx, c->kc) != TL_OK;
}

/* ---- text output ---- */

/* Sizes joined by sep ("512x512", "8, 8, 8"); "scalar" for none. */
static const char *tl_explain_join(char *buf, size_t n, int ndim, const int64_t *d, const char *sep) {
  size_t used = 0;
  buf[0] = 0;
  if (ndim == 0) snprintf(buf, n, "scalar");
  for (int i = 0; i < ndim && used < n; i++)
    used += (size_t)snprintf(buf + used, n - used, "%s%lld", i ? sep : "", (long long)d[i]);
  return buf;
}

/* A shape as "512x512". */
static const char *tl_explain_dims(char *buf, size_t n, int ndim, const int64_t *d) {
  return tl_explain_join(buf, n, ndim, d, "x");
}

/* The layout in words: "row-major" or "tiled 16x32 vnni2". */
static const char *tl_explain_layout(char *buf, size_t n, tl_layout l) {
  if (!l.tiled) snprintf(buf, n, "row-major");
  else if (l.vnni > 1) snprintf(buf, n, "tiled %ux%u vnni%u", l.tile_r, l.tile_c, l.vnni);
  else snprintf(buf, n, "tiled %ux%u", l.tile_r, l.tile_c);
  return buf;
}

static const char *tl_explain_stage(tl_stage s) {
  return s == TL_STAGE_ALWAYS ? "always" : s == TL_STAGE_NEVER ? "never" : "auto";
}

static const char *tl_explain_level(tl_level l) { return l == TL_L1 ? "L1" : "L2"; }

static const char *tl_explain_out_mode(tl_out_mode m) {
  return m == TL_OUT_ACCUM_ZERO ? "accum-zero" : m == TL_OUT_ACCUM_LOAD ? "accum-load" : "write";
}

/* The spec and tensor of operand i (inputs, then outputs). */
static void tl_explain_operand(const tl_kcase *kc, int i, const tl_blockspec **spec, const tl_tensor **t) {
  int in = i < kc->k.n_in;
  *spec = in ? &kc->k.in[i] : &kc->k.out[i - kc->k.n_in];
  *t = in ? &kc->in[i] : &kc->out[i - kc->k.n_in];
}

/* The block a spec resolves to on tensor t (0 in a dim: the whole dim). */
static void tl_explain_block(const tl_blockspec *s, const tl_tensor *t, int64_t *block) {
  for (int d = 0; d < t->ndim; d++) block[d] = d < s->ndim && s->block[d] > 0 ? s->block[d] : t->shape[d];
}

/* The name of what sets the bound: the unit or the level. */
static const char *tl_explain_limiter(char *buf, size_t n, const tl_machine *m, const tl_bound *b) {
  if (b->limiter >= 0) snprintf(buf, n, "%s bandwidth", m->levels[b->limiter].name);
  else if (b->unit >= 0) snprintf(buf, n, "%s compute", m->units[b->unit].name);
  else snprintf(buf, n, "nothing known (no flops, no known bandwidth)");
  return buf;
}

static void tl_explain_print_text(const tl_explain_report *r, const tl_machine *m, const tl_ctx_info *info,
                                  int first) {
  const tl_kcase *kc = r->kc;
  const tl_kernel *k = &kc->k;
  char b1[64], b2[64], b3[64], b4[64];
  if (!first) printf("\n");
  if (m->measured)
    printf("%s %s on %s (%d thread%s, isa %s)\n", kc->name, kc->shape, m->name, info->threads,
           info->threads == 1 ? "" : "s", tl_isa_name(info->isa));
  else
    printf("%s %s on %s (modelled; the plan is this host's: %d thread%s, isa %s)\n", kc->name, kc->shape, m->name,
           info->threads, info->threads == 1 ? "" : "s", tl_isa_name(info->isa));
  if (kc->desc && kc->desc->summary) printf("  kernel     %s\n", kc->desc->summary);
  if (kc->config[0]) printf("  config     %s\n", kc->config);
  int64_t steps = 1;
  for (int d = 0; d < k->grid_ndim; d++) steps *= k->grid[d];
  printf("  grid       (%s) [", tl_explain_join(b1, sizeof b1, k->grid_ndim, k->grid, ", "));
  for (int d = 0; d < k->grid_ndim; d++) printf("%s%s", d ? ", " : "", k->sem[d] == TL_PARALLEL ? "parallel" : "arbitrary");
  printf("], %lld step%s, math in %s\n", (long long)steps, steps == 1 ? "" : "s", tl_dtype_name(kc->dtype));

  printf("  operands\n");
  printf("    %-6s %-18s %-12s %-24s %-18s %-6s %-5s %-10s %11s %8s\n", "", "tensor", "block", "map", "layout",
         "stage", "level", "out", "bytes", "x tensor");
  for (int i = 0; i < r->nops; i++) {
    const tl_blockspec *s;
    const tl_tensor *t;
    tl_explain_operand(kc, i, &s, &t);
    int64_t block[TL_MAX_DIMS];
    tl_explain_block(s, t, block);
    char role[16], tensor[48];
    int in = i < k->n_in;
    snprintf(role, sizeof role, "%s%d", in ? "in" : "out", in ? i : i - k->n_in);
    snprintf(tensor, sizeof tensor, "%s[%s]", tl_dtype_name(t->dtype), tl_explain_dims(b1, sizeof b1, t->ndim, t->shape));
    double reads = r->tensor_bytes[i] > 0 ? (double)r->cost.operand_bytes[i] / (double)r->tensor_bytes[i] : 0;
    printf("    %-6s %-18s %-12s %-24s %-18s %-6s %-5s %-10s %11s %7.2fx\n", role, tensor,
           tl_explain_dims(b2, sizeof b2, t->ndim, block), s->map ? s->map : "(block 0)",
           tl_explain_layout(b3, sizeof b3, s->layout), tl_explain_stage(s->stage), tl_explain_level(s->level),
           in ? "-" : tl_explain_out_mode(s->out), tl_fmt_bytes(b4, sizeof b4, (double)r->cost.operand_bytes[i]),
           reads);
  }

  printf("  budgets    vmem %s of %s per thread (%.0f%%), l1 %s of %s (%.0f%%)\n",
         tl_fmt_bytes(b1, sizeof b1, (double)r->cost.vmem_bytes), tl_fmt_bytes(b2, sizeof b2, (double)info->vmem_bytes),
         info->vmem_bytes ? 100.0 * (double)r->cost.vmem_bytes / (double)info->vmem_bytes : 0.0,
         tl_fmt_bytes(b3, sizeof b3, (double)r->cost.l1_bytes), tl_fmt_bytes(b4, sizeof b4, (double)info->l1_bytes),
         info->l1_bytes ? 100.0 * (double)r->cost.l1_bytes / (double)info->l1_bytes : 0.0);
  printf("  cost       %lld flop, read %s, written %s, intensity %.3g flop/byte\n", (long long)r->cost.flops,
         tl_fmt_bytes(b1, sizeof b1, (double)r->cost.bytes_read), tl_fmt_bytes(b2, sizeof b2, (double)r->cost.bytes_written),
         r->bound.intensity);

  const tl_bound *b = &r->bound;
  printf("  levels    ");
  int any = 0;
  for (int l = 0; l < m->nlevels; l++) {
    if (b->level_bytes[l] == 0) continue;
    const tl_mem_level *lv = &m->levels[l];
    if (lv->read_bw > 0)
      printf("%s %s %s at %s -> %s", any ? "," : "", lv->name, tl_fmt_bytes(b1, sizeof b1, (double)b->level_bytes[l]),
             tl_fmt_rate(b2, sizeof b2, lv->read_bw, "B/s"), tl_fmt_seconds(b3, sizeof b3, b->level_s[l]));
    else
      printf("%s %s %s at unknown bandwidth (ignored)", any ? "," : "", lv->name,
             tl_fmt_bytes(b1, sizeof b1, (double)b->level_bytes[l]));
    any = 1;
  }
  printf("%s\n", any ? "" : " (no bytes)");
  if (b->unit >= 0) {
    const tl_compute_unit *u = &m->units[b->unit];
    printf("  compute    %s on %s (%s, %s)\n", tl_fmt_seconds(b1, sizeof b1, b->compute_s), u->name,
           tl_dtype_name(u->dtype), tl_fmt_rate(b2, sizeof b2, u->peak, tl_fmt_op_unit(u->dtype)));
  } else if (r->cost.flops > 0) {
    printf("  compute    no unit on %s runs %s: not bounded by compute\n", m->name, tl_dtype_name(kc->dtype));
  } else {
    printf("  compute    no flops\n");
  }
  printf("  bound      %s, set by %s\n", tl_fmt_seconds(b1, sizeof b1, b->seconds),
         tl_explain_limiter(b2, sizeof b2, m, b));

  if (!r->ran) return;
  const tl_bench_result *br = &r->bench;
  double bytes = (double)(r->cost.bytes_read + r->cost.bytes_written);
  printf("  measured   median %s (min %s, max %s, %d runs): %.3g GFLOP/s, %.3g GB/s, attainment %.0f%%\n",
         tl_fmt_seconds(b1, sizeof b1, br->median_s), tl_fmt_seconds(b2, sizeof b2, br->min_s),
         tl_fmt_seconds(b3, sizeof b3, br->max_s), br->reps, (double)r->cost.flops / br->median_s * 1e-9,
         bytes / br->median_s * 1e-9, 100.0 * b->seconds / br->median_s);
  if (r->stats_equal)
    printf("  bytes: stats == cost (read %lld, written %lld)\n", (long long)r->stats.bytes_read,
           (long long)r->stats.bytes_written);
  else
    printf("  bytes: stats != cost: read %lld vs %lld, written %lld vs %lld\n", (long long)r->stats.bytes_read,
           (long long)r->cost.bytes_read, (long long)r->stats.bytes_written, (long long)r->cost.bytes_written);
  if (kc->desc && kc->desc->check)
    printf("  check      relative error %.3g (tolerance %.3g): %s\n", r->error, kc->desc->tolerance,
           r->check_ok ? "ok" : "WRONG");
  if (!r->call_ran) return;
  const tl_bench_result *cb = &r->call_bench;
  printf("  as run     %s: median %s (min %s, max %s, %d runs): %.3g GFLOP/s, attainment %.0f%%", kc->call_what,
         tl_fmt_seconds(b1, sizeof b1, cb->median_s), tl_fmt_seconds(b2, sizeof b2, cb->min_s),
         tl_fmt_seconds(b3, sizeof b3, cb->max_s), cb->reps, (double)r->cost.flops / cb->median_s * 1e-9,
         100.0 * b->seconds / cb->median_s);
  if (kc->desc && kc->desc->check)
    printf("; relative error %.3g: %s", r->call_error, r->call_ok ? "ok" : "WRONG");
  printf("\n");
}

/* ---- JSON output ---- */

static void tl_explain_json_dims(int ndim, const int64_t *d) {
  printf("[");
  for (int i = 0; i < ndim; i++) printf("%s%lld", i ? ", " : "", (long long)d[i]);
  printf("]");
}

/* A finite number, or null. */
static void tl_explain_json_num(double v) {
  if (isfinite(v)) printf("%.9g", v);
  else printf("null");
}

static void tl_explain_print_json(const tl_explain_report *r, const tl_machine *m, const tl_ctx_info *info) {
  const tl_kcase *kc = r->kc;
  const tl_kernel *k = &kc->k;
  char b1[64];
  printf("{\n      \"kernel\": ");
  tl_json_string(stdout, kc->name);
  printf(", \"shape\": ");
  tl_json_string(stdout, kc->shape);
  printf(", \"dtype\": ");
  tl_json_string(stdout, tl_dtype_name(kc->dtype));
  printf(", \"config\": ");
  tl_json_string(stdout, kc->config[0] ? kc->config : "heuristic");
  printf(",\n      \"grid\": ");
  tl_explain_json_dims(k->grid_ndim, k->grid);
  printf(", \"semantics\": [");
  for (int d = 0; d < k->grid_ndim; d++) printf("%s\"%s\"", d ? ", " : "", k->sem[d] == TL_PARALLEL ? "parallel" : "arbitrary");
  printf("],\n      \"operands\": [");
  for (int i = 0; i < r->nops; i++) {
    const tl_blockspec *s;
    const tl_tensor *t;
    tl_explain_operand(kc, i, &s, &t);
    int64_t block[TL_MAX_DIMS];
    tl_explain_block(s, t, block);
    int in = i < k->n_in;
    printf("%s\n        {\"role\": \"%s\", \"index\": %d, \"dtype\": ", i ? "," : "", in ? "in" : "out",
           in ? i : i - k->n_in);
    tl_json_string(stdout, tl_dtype_name(t->dtype));
    printf(", \"shape\": ");
    tl_explain_json_dims(t->ndim, t->shape);
    printf(", \"block\": ");
    tl_explain_json_dims(t->ndim, block);
    printf(", \"map\": ");
    tl_json_string(stdout, s->map);
    printf(", \"layout\": ");
    tl_json_string(stdout, tl_explain_layout(b1, sizeof b1, s->layout));
    printf(", \"stage\": \"%s\", \"level\": \"%s\", \"out\": ", tl_explain_stage(s->stage), tl_explain_level(s->level));
    if (in) printf("null");
    else printf("\"%s\"", tl_explain_out_mode(s->out));
    printf(", \"buffers\": %d, \"tensor_bytes\": %lld, \"bytes\": %lld}", s->buffers > 0 ? s->buffers : 1,
           (long long)r->tensor_bytes[i], (long long)r->cost.operand_bytes[i]);
  }
  printf("\n      ],\n");
  printf("      \"budgets\": {\"vmem_bytes\": %lld, \"vmem_budget\": %zu, \"l1_bytes\": %lld, \"l1_budget\": %zu},\n",
         (long long)r->cost.vmem_bytes, info->vmem_bytes, (long long)r->cost.l1_bytes, info->l1_bytes);
  printf("      \"flops\": %lld, \"bytes_read\": %lld, \"bytes_written\": %lld, \"intensity\": ", (long long)r->cost.flops,
         (long long)r->cost.bytes_read, (long long)r->cost.bytes_written);
  tl_explain_json_num(r->bound.intensity);
  printf(",\n      \"levels\": [");
  for (int l = 0; l < m->nlevels; l++) {
    printf("%s{\"name\": ", l ? ", " : "");
    tl_json_string(stdout, m->levels[l].name);
    printf(", \"bytes\": %lld, \"seconds\": ", (long long)r->bound.level_bytes[l]);
    tl_explain_json_num(r->bound.level_s[l]);
    printf(", \"read_bw\": ");
    tl_explain_json_num(m->levels[l].read_bw);
    printf("}");
  }
  printf("],\n      \"compute\": {\"unit\": ");
  if (r->bound.unit >= 0) tl_json_string(stdout, m->units[r->bound.unit].name);
  else printf("null");
  printf(", \"seconds\": ");
  tl_explain_json_num(r->bound.compute_s);
  printf("},\n      \"bound\": {\"seconds\": ");
  tl_explain_json_num(r->bound.seconds);
  printf(", \"limiter\": ");
  if (r->bound.limiter >= 0) tl_json_string(stdout, m->levels[r->bound.limiter].name);
  else printf("\"compute\"");
  printf("},\n      \"measured\": ");
  if (!r->ran) {
    printf("null, \"stats\": null, \"check\": null, \"as_run\": null\n    }");
    return;
  }
  const tl_bench_result *br = &r->bench;
  double bytes = (double)(r->cost.bytes_read + r->cost.bytes_written);
  printf("{\"median_s\": ");
  tl_explain_json_num(br->median_s);
  printf(", \"min_s\": ");
  tl_explain_json_num(br->min_s);
  printf(", \"max_s\": ");
  tl_explain_json_num(br->max_s);
  printf(", \"reps\": %d, \"gflops\": ", br->reps);
  tl_explain_json_num((double)r->cost.flops / br->median_s * 1e-9);
  printf(", \"gbs\": ");
  tl_explain_json_num(bytes / br->median_s * 1e-9);
  printf(", \"attainment\": ");
  tl_explain_json_num(r->bound.seconds / br->median_s);
  printf("},\n      \"stats\": {\"bytes_read\": %lld, \"bytes_written\": %lld, \"equal_to_cost\": %s},\n",
         (long long)r->stats.bytes_read, (long long)r->stats.bytes_written, r->stats_equal ? "true" : "false");
  printf("      \"check\": {\"error\": ");
  tl_explain_json_num(r->error);
  printf(", \"tolerance\": ");
  tl_explain_json_num(kc->desc ? kc->desc->tolerance : NAN);
  printf(", \"ok\": %s},\n      \"as_run\": ", r->check_ok ? "true" : "false");
  if (!r->call_ran) {
    printf("null\n    }");
    return;
  }
  const tl_bench_result *cb = &r->call_bench;
  printf("{\"what\": ");
  tl_json_string(stdout, kc->call_what);
  printf(", \"median_s\": ");
  tl_explain_json_num(cb->median_s);
  printf(", \"min_s\": ");
  tl_explain_json_num(cb->min_s);
  printf(", \"max_s\": ");
  tl_explain_json_num(cb->max_s);
  printf(", \"reps\": %d, \"attainment\": ", cb->reps);
  tl_explain_json_num(r->bound.seconds / cb->median_s);
  printf(", \"error\": ");
  tl_explain_json_num(r->call_error);
  printf(", \"ok\": %s}\n    }", r->call_ok ? "true" : "false");
}

/* ---- one report ---- */

/* Builds, plans, bounds and (on the host) runs one shape. Returns TL_EXIT_OK, TL_EXIT_FAIL or
 * TL_EXIT_USAGE (bad shape), with the message printed; *r is filled on TL_EXIT_OK (and on a
 * failed check or stats mismatch, which return TL_EXIT_FAIL after filling it). */
static int tl_explain_one(tl_ctx *ctx, const tl_explain_args *a, const tl_machine *m, const char *shape,
                          tl_kcase *kc, tl_explain_report *r, tl_plan **plan) {
  char err[512] = "";
  memset(r, 0, sizeof *r);
  r->error = NAN;
  /* what is not run is not filled (dry: the buffers allocated, untouched) */
  tl_kcase_set_dry(a->machine || a->no_run);
  tl_status s = a->kernel->make(ctx, shape, kc, err, sizeof err);
  tl_kcase_set_dry(0);
  if (s != TL_OK) {
    const char *syn = a->kernel->shape_syntax ? a->kernel->shape_syntax : "?";
    if (s == TL_ERR_SHAPE || s == TL_ERR_INVALID)
      return tl_tool_usage_error(TL_CMD, "%s: bad shape '%s' (%s): %s", a->kernel->name, shape ? shape : "", syn,
                                 err[0] ? err : tl_status_name(s));
    return tl_tool_fail(TL_CMD, "%s %s: %s: %s", a->kernel->name, shape ? shape : "", tl_status_name(s), err);
  }
  if (!kc->desc) kc->desc = a->kernel;
  r->kc = kc;
  s = tl_plan_new(ctx, &kc->k, kc->in, kc->out, plan);
  if (s != TL_OK) return tl_tool_fail(TL_CMD, "%s %s: plan: %s: %s", kc->name, kc->shape, tl_status_name(s), tl_ctx_error(ctx));
  r->nops = tl_kcase_tensor_bytes(kc, r->tensor_bytes);
  if (tl_plan_cost(*plan, &r->cost) != TL_OK || tl_roofline_bound(m, *plan, kc->dtype, &r->bound) != TL_OK)
    return tl_tool_fail(TL_CMD, "%s %s: bound: %s", kc->name, kc->shape, tl_last_error());
  if (a->machine || a->no_run) return TL_EXIT_OK;

  /* on the host: run, time, check */
  tl_explain_call call = {*plan, kc};
  tl_bench_case bc = {"tilec", tl_explain_run_once, &call};
  tl_bench_opts bo = {.warmup_s = 0.02, .min_time_s = 0.2, .max_time_s = 2.0, .min_reps = 5, .max_reps = 500};
  s = tl_bench_run(&bo, 1, &bc, &r->bench);
  if (s != TL_OK || r->bench.failed) {
    /* run once more to get the plan's own message */
    tl_status rs = tl_plan_run(*plan, kc->in, kc->out);
    return tl_tool_fail(TL_CMD, "%s %s: run failed: %s: %s", kc->name, kc->shape, tl_status_name(rs != TL_OK ? rs : s),
                        rs != TL_OK ? tl_ctx_error(ctx) : tl_last_error());
  }
  r->ran = 1;
  tl_plan_stats(*plan, &r->stats);
  r->stats_equal = r->stats.bytes_read == r->cost.bytes_read && r->stats.bytes_written == r->cost.bytes_written;
  if (kc->desc->check) {
    r->error = kc->desc->check(kc);
    r->check_ok = r->error <= kc->desc->tolerance;
  } else {
    r->check_ok = 1;
  }
  r->call_ok = 1;
  if (kc->call) { /* the public call the plan stands for (its own plans), timed and checked as well */
    tl_explain_pcall pc = {ctx, kc};
    tl_bench_case cc = {"call", tl_explain_call_once, &pc};
    s = tl_bench_run(&bo, 1, &cc, &r->call_bench);
    if (s != TL_OK || r->call_bench.failed) {
      tl_status rs = kc->call(ctx, kc);
      return tl_tool_fail(TL_CMD, "%s %s: %s failed: %s: %s", kc->name, kc->shape, kc->call_what,
                          tl_status_name(rs != TL_OK ? rs : s), rs != TL_OK ? tl_ctx_error(ctx) : tl_last_error());
    }
    r->call_ran = 1;
    r->call_error = kc->desc->check ? kc->desc->check(kc) : 0;
    r->call_ok = !kc->desc->check || r->call_error <= kc->desc->tolerance;
  }
  return r->stats_equal && r->check_ok && r->call_ok ? TL_EXIT_OK : TL_EXIT_FAIL;
}

/* `tilec explain`. argv[0] is "explain". */
int tl_cmd_explain(int argc, char **argv) {
  tl_explain_args a;
  int rc = tl_explain_parse(argc, argv, &a);
  if (rc != TL_EXIT_OK) return rc;

  tl_machine m;
  if (a.machine && tl_machine_preset(a.machine, &m) != TL_OK)
    return tl_tool_usage_error(TL_CMD, "--machine: %s", tl_last_error());

  tl_ctx_opts opts;
  memset(&opts, 0, sizeof opts);
  opts.threads = a.threads;
  tl_ctx *ctx = NULL;
  tl_status s = tl_ctx_new(&opts, &ctx);
  if (s != TL_OK) {
    if (s == TL_ERR_INVALID) return tl_tool_usage_error(TL_CMD, "%s", tl_last_error());
    return tl_tool_fail(TL_CMD, "%s: %s", tl_status_name(s), tl_last_error());
  }
  tl_ctx_info info;
  tl_ctx_info_get(ctx, &info);
  /* every shape is checked before anything is probed or printed (bad usage: exit 2, no output) */
  for (int i = 0; i < a.nshapes; i++) {
    tl_kcase kc;
    char err[512] = "";
    tl_kcase_set_dry(1);
    s = a.kernel->make(ctx, a.shapes[i], &kc, err, sizeof err);
    tl_kcase_set_dry(0);
    if (s == TL_OK) {
      tl_kcase_free(&kc);
    } else {
      rc = s == TL_ERR_NOMEM ? tl_tool_fail(TL_CMD, "%s %s: %s", a.kernel->name, a.shapes[i], err)
                             : tl_tool_usage_error(TL_CMD, "%s: bad shape '%s' (%s): %s", a.kernel->name, a.shapes[i],
                                                   a.kernel->shape_syntax, err);
      goto out;
    }
  }
  if (!a.machine) {
    int announced = 0;
    s = tl_machine_probe(ctx, 0, tl_explain_progress, &announced, &m);
    if (s != TL_OK) {
      rc = tl_tool_fail(TL_CMD, "host: probe failed: %s: %s", tl_status_name(s), tl_ctx_error(ctx));
      goto out;
    }
    /* why a cache file was not used (damaged, implausible), as roofline says it */
    if (tl_ctx_warning(ctx)[0]) fprintf(stderr, "tilec explain: note: %s\n", tl_ctx_warning(ctx));
    tl_explain_scale_host(&m, info.threads);
  }

  int n = a.nshapes ? a.nshapes : 1, printed = 0;
  for (int i = 0; i < n; i++) {
    tl_kcase kc;
    memset(&kc, 0, sizeof kc);
    tl_explain_report r;
    tl_plan *plan = NULL;
    int one = tl_explain_one(ctx, &a, &m, a.nshapes ? a.shapes[i] : NULL, &kc, &r, &plan);
    if (r.kc && (one == TL_EXIT_OK || r.ran)) {
      if (a.json) {
        if (!printed) {
          printf("{\n  \"machine\": ");
          tl_machine_print_json(stdout, &m, 2);
          printf(",\n  \"threads\": %d,\n  \"isa\": \"%s\",\n  \"reports\": [", info.threads, tl_isa_name(info.isa));
        }
        printf("%s\n    ", printed ? "," : "");
        tl_explain_print_json(&r, &m, &info);
      } else {
        tl_explain_print_text(&r, &m, &info, !printed);
      }
      printed++;
    }
    if (one != TL_EXIT_OK) {
      if (r.ran) tl_tool_fail(TL_CMD, "%s %s: %s", kc.name, kc.shape, r.stats_equal ? "wrong result" : "stats != cost");
      if (rc == TL_EXIT_OK || one == TL_EXIT_USAGE) rc = one;
    }
    tl_plan_free(plan);
    tl_kcase_free(&kc);
    if (one == TL_EXIT_USAGE) break;
  }
  if (a.json && printed) printf("\n  ]\n}\n");
  fflush(stdout);
out:
  tl_ctx_free(ctx);
  return rc;
}
