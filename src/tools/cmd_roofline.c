/* cmd_roofline.c — `tilec roofline`, the main job: every kernel tilec has, at representative
 * sizes, measured on this machine and placed on its roofline. One row per (kernel, shape): median
 * time, GFLOP/s, GB/s, arithmetic intensity, the bound from the plan's exact byte count and the
 * probed ceilings, what sets it, and the attainment (bound / measured). Writes the rows as CSV and
 * a log-log roofline plot (ceilings as lines, kernels as points) through gnuplot when installed.
 * Every kernel's result is checked against its float64 reference before it is timed. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/kernels_impl.h"
#include "tools_impl.h"

const char tl_cmd_roofline_help[] =
    "usage: tilec roofline [--csv FILE] [--plot FILE.png | --no-plot] [--kernel NAME]... [--threads N]\n"
    "                      [--quick] [--json] [--force-probe]\n"
    "\n"
    "Runs every kernel in tilec's registry at its representative sizes and places each on this\n"
    "machine's roofline (ceilings measured by `tilec probe`, cached after the first run).\n"
    "\n"
    "  --csv FILE        write the rows as CSV (default: roofline.csv)\n"
    "  --plot FILE.png   write the log-log roofline plot (default: roofline.png; needs gnuplot)\n"
    "  --no-plot         do not plot\n"
    "  --kernel NAME     only this kernel (repeatable); `tilec explain --help` lists the kernels\n"
    "  --threads N       worker threads (default: the CPUs this process may use)\n"
    "  --quick           first representative shape of each kernel only, shorter timing\n"
    "  --json            print the rows as JSON instead of the table\n"
    "  --force-probe     measure the machine again instead of using the cached probe\n"
    "\n"
    "Columns: median time of a warm run (inputs stay where the previous run left them), GFLOP/s,\n"
    "GB/s (bytes the plan moves between memory and staging, per tl_plan_cost), intensity (FLOP per\n"
    "byte moved), the roofline bound and what sets it (a compute unit or a memory level), and\n"
    "attainment = bound / measured time. A row marked * is timed as the library call runs it where\n"
    "that is more than the kernel's one plan (tl_matmul's K split for a few rows of a: two plans);\n"
    "its bytes and bound stay the one plan's (what the product needs moved at least), and the\n"
    "note under the table says so.\n";

#define TL_RL_MAX_ROWS 64
#define TL_RL_MAX_KERNELS 16

typedef struct tl_rl_row {
  char kernel[48], shape[64], limiter[32];
  tl_dtype dtype;
  double median_s, min_s, max_s, gflops, gbs, intensity, bound_s, attain, error;
  int64_t flops, bytes;
  int status; /* 0 ok, 1 wrong result, 2 failed */
  char note[160];
} tl_rl_row;

typedef struct tl_rl_arg {
  tl_ctx *ctx;
  tl_plan *plan;
  const tl_kcase *kc;
} tl_rl_arg;

/* One timed run: the instance's public call where it has one (tl_kcase.call), else its plan. */
static tl_status tl_rl_run(tl_ctx *ctx, tl_plan *plan, const tl_kcase *kc) {
  return kc->call ? kc->call(ctx, kc) : tl_plan_run(plan, kc->in, kc->out);
}

static int tl_rl_call(void *arg, int64_t rep) {
  (void)rep;
  tl_rl_arg *a = arg;
  return tl_rl_run(a->ctx, a->plan, a->kc) != TL_OK;
}

static void tl_rl_progress(const char *note, void *arg) {
  (void)arg;
  fprintf(stderr, "  probe: %s\n", note);
}

/* Measures one (kernel, shape) into row. */
static void tl_rl_measure(tl_ctx *ctx, const tl_machine *m, const tl_kernel_desc *d, const char *shape, int quick,
                          tl_rl_row *row) {
  memset(row, 0, sizeof *row);
  snprintf(row->kernel, sizeof row->kernel, "%s", d->name);
  snprintf(row->shape, sizeof row->shape, "%s", shape);
  tl_kcase kc;
  char err[512] = "";
  tl_status s = d->make(ctx, shape, &kc, err, sizeof err);
  if (s != TL_OK) {
    row->status = 2;
    snprintf(row->note, sizeof row->note, "%s", err);
    return;
  }
  row->dtype = kc.dtype;
  tl_plan *plan = NULL;
  s = tl_plan_new(ctx, &kc.k, kc.in, kc.out, &plan);
  if (s == TL_OK) s = tl_rl_run(ctx, plan, &kc);
  if (s != TL_OK) {
    row->status = 2;
    snprintf(row->note, sizeof row->note, "%s: %s", tl_status_name(s), tl_ctx_error(ctx));
    goto out;
  }
  row->error = d->check(&kc);
  if (!(row->error <= d->tolerance + 1e-12)) {
    row->status = 1;
    snprintf(row->note, sizeof row->note, "WRONG: rel. error %.3g > %.3g", row->error, d->tolerance);
    goto out;
  }
  tl_rl_arg arg = {ctx, plan, &kc};
  tl_bench_case bc = {.name = d->name, .fn = tl_rl_call, .arg = &arg};
  tl_bench_opts bo = {.min_time_s = quick ? 0.1 : 0.3, .max_time_s = quick ? 0.5 : 2.0, .min_reps = 3};
  tl_bench_result br;
  s = tl_bench_run(&bo, 1, &bc, &br);
  if (s != TL_OK || br.failed) {
    row->status = 2;
    snprintf(row->note, sizeof row->note, "timing failed: %s", tl_ctx_error(ctx));
    goto out;
  }
  /* the bytes and the bound are the plan's (k's): with a call, what the product needs read and
   * written at least, which the call's own plans exceed by their intermediates */
  if (kc.call) snprintf(row->note, sizeof row->note, "timed as %s; bytes and bound: the one-plan kernel's", kc.call_what);
  tl_cost cost;
  tl_plan_cost(plan, &cost);
  tl_bound b;
  row->median_s = br.median_s, row->min_s = br.min_s, row->max_s = br.max_s;
  row->flops = cost.flops;
  row->bytes = cost.bytes_read + cost.bytes_written;
  row->gflops = cost.flops / br.median_s / 1e9;
  row->gbs = row->bytes / br.median_s / 1e9;
  row->intensity = row->bytes ? (double)cost.flops / row->bytes : 0;
  if (tl_roofline_bound(m, plan, kc.dtype, &b) == TL_OK) {
    row->bound_s = b.seconds;
    row->attain = b.seconds > 0 ? b.seconds / br.median_s : 0;
    if (b.limiter < 0 && b.unit >= 0) snprintf(row->limiter, sizeof row->limiter, "%s", m->units[b.unit].name);
    else if (b.limiter >= 0) snprintf(row->limiter, sizeof row->limiter, "%s bw", m->levels[b.limiter].name);
  }
out:
  tl_plan_free(plan);
  tl_kcase_free(&kc);
}

static void tl_rl_csv(FILE *f, const tl_rl_row *rows, int n) {
  fprintf(f, "kernel,shape,dtype,median_s,min_s,max_s,flops,bytes,gflops,gbs,intensity,bound_s,limiter,attainment,status\n");
  for (int i = 0; i < n; i++) {
    const tl_rl_row *r = &rows[i];
    fprintf(f, "%s,%s,%s,%.9g,%.9g,%.9g,%lld,%lld,%.6g,%.6g,%.6g,%.9g,%s,%.4f,%s\n", r->kernel, r->shape, tl_dtype_name(r->dtype),
            r->median_s, r->min_s, r->max_s, (long long)r->flops, (long long)r->bytes, r->gflops, r->gbs, r->intensity, r->bound_s,
            r->limiter, r->attain, r->status == 0 ? "ok" : r->status == 1 ? "wrong" : "failed");
  }
}

/* Plots the ceilings and the kernels with gnuplot, the script fed through a pipe (no shell sees
 * the file name) and the points given inline; returns 0 on success, 1 without gnuplot or when it
 * fails. */
static int tl_rl_plot(const char *png, const tl_machine *m, const tl_rl_row *rows, int n) {
  if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
    fprintf(stderr, "tilec roofline: gnuplot is not installed: no plot (the CSV has every number; "
                    "`apt-get install gnuplot-nox` or `make run` as root installs it)\n");
    return 1;
  }
  FILE *f = popen("gnuplot >/dev/null", "w"); /* its stdout (a PNG, when it cannot open the file) is not ours */
  if (!f) return fprintf(stderr, "tilec roofline: cannot start gnuplot: %s\n", strerror(errno)), 1;
  fprintf(f, "set terminal pngcairo size 1200,800 noenhanced font ',10'\nset output ");
  tl_gp_string(f, png);
  fprintf(f, "\nset title ");
  char title[300];
  snprintf(title, sizeof title, "tilec roofline: %s (%d threads)", m->description[0] ? m->description : m->name, m->cores);
  tl_gp_string(f, title);
  double top = 1;
  for (int u = 0; u < m->nunits; u++) top = fmax(top, m->units[u].peak / 1e9);
  fprintf(f, "\nset logscale xy\nset grid\nset key outside right top\n");
  fprintf(f, "set xlabel 'arithmetic intensity (FLOP per byte moved)'\nset ylabel 'GFLOP/s'\n");
  fprintf(f, "set xrange [0.01:1000]\nset yrange [0.1:%g]\n", top * 4);
  int points = 0;
  for (int i = 0; i < n; i++) points += rows[i].status == 0 && rows[i].flops > 0 && rows[i].intensity > 0;
  if (points) { /* inline data block: intensity, GFLOP/s, label */
    fprintf(f, "$kernels << EOD\n");
    for (int i = 0; i < n; i++)
      if (rows[i].status == 0 && rows[i].flops > 0 && rows[i].intensity > 0)
        fprintf(f, "%g %g \"%s %s\"\n", rows[i].intensity, rows[i].gflops, rows[i].kernel, rows[i].shape);
    fprintf(f, "EOD\n");
  }
  fprintf(f, "plot ");
  int first = 1;
  char t[96];
  for (int u = 0; u < m->nunits; u++) {
    if (m->units[u].peak <= 0) continue;
    snprintf(t, sizeof t, "%s %s: %.0f GFLOP/s", m->units[u].name, tl_dtype_name(m->units[u].dtype), m->units[u].peak / 1e9);
    fprintf(f, "%s%g title ", first ? "" : ", ", m->units[u].peak / 1e9);
    tl_gp_string(f, t);
    fprintf(f, " with lines lw 2");
    first = 0;
  }
  for (int l = 0; l < m->nlevels; l++) {
    if (m->levels[l].read_bw <= 0) continue;
    snprintf(t, sizeof t, "%s: %.0f GB/s", m->levels[l].name, m->levels[l].read_bw / 1e9);
    fprintf(f, "%s%g*x title ", first ? "" : ", ", m->levels[l].read_bw / 1e9);
    tl_gp_string(f, t);
    fprintf(f, " with lines dt 2 lw 2");
    first = 0;
  }
  if (points)
    fprintf(f, "%s$kernels using 1:2 title 'kernels' with points pt 7 ps 1.5, $kernels using 1:2:3 notitle with labels offset 1,1 left",
            first ? "" : ", ");
  fprintf(f, "\n");
  int rc = pclose(f);
  if (rc != 0) {
    fprintf(stderr, "tilec roofline: gnuplot failed (status %d): no plot\n", rc);
    return 1;
  }
  return 0;
}

int tl_cmd_roofline(int argc, char **argv) {
  const char *cmd = "roofline", *csv = "roofline.csv", *png = "roofline.png";
  const char *only[TL_RL_MAX_KERNELS];
  int nonly = 0, quick = 0, json = 0, force = 0, plot = 1;
  long threads = 0;
  for (int i = 1; i < argc;) { /* tl_tool_flag_value advances i past a flag and its value */
    const char *v;
    int r;
    if ((r = tl_tool_flag_value(cmd, argc, argv, &i, "--csv", &v))) {
      if (r < 0 || tl_tool_path_arg(cmd, "--csv", v) != 0) return TL_EXIT_USAGE;
      csv = v;
    } else if ((r = tl_tool_flag_value(cmd, argc, argv, &i, "--plot", &v))) {
      if (r < 0 || tl_tool_path_arg(cmd, "--plot", v) != 0) return TL_EXIT_USAGE;
      png = v;
    } else if ((r = tl_tool_flag_value(cmd, argc, argv, &i, "--kernel", &v))) {
      if (r < 0) return TL_EXIT_USAGE;
      if (!tl_kernel_find(v)) {
        char names[512] = "";
        for (int k = 0; tl_kernel_at(k); k++) strncat(names, k ? ", " : "", sizeof names - strlen(names) - 1),
                                             strncat(names, tl_kernel_at(k)->name, sizeof names - strlen(names) - 1);
        return tl_tool_usage_error(cmd, "unknown kernel '%s' (kernels: %s)", v, names);
      }
      if (nonly == TL_RL_MAX_KERNELS) return tl_tool_usage_error(cmd, "too many --kernel flags");
      only[nonly++] = v;
    } else if ((r = tl_tool_flag_value(cmd, argc, argv, &i, "--threads", &v))) {
      if (r < 0 || tl_tool_parse_int(cmd, "--threads", v, 1, 1024, &threads) < 0) return TL_EXIT_USAGE;
    } else if (!strcmp(argv[i], "--quick")) {
      quick = 1, i++;
    } else if (!strcmp(argv[i], "--json")) {
      json = 1, i++;
    } else if (!strcmp(argv[i], "--no-plot")) {
      plot = 0, i++;
    } else if (!strcmp(argv[i], "--force-probe")) {
      force = 1, i++;
    } else {
      return tl_tool_bad_arg(cmd, argv[i]);
    }
  }
  tl_ctx *ctx;
  tl_ctx_opts o = {.threads = (int)threads};
  tl_status s = tl_ctx_new(&o, &ctx);
  if (s != TL_OK) return s == TL_ERR_INVALID ? tl_tool_usage_error(cmd, "%s", tl_last_error()) : tl_tool_fail(cmd, "%s", tl_last_error());
  tl_machine m;
  int tty = isatty(2);
  fprintf(stderr, "tilec roofline: machine ceilings from `tilec probe` (measured once, then cached)\n");
  s = tl_machine_probe(ctx, force, tty ? tl_rl_progress : NULL, NULL, &m);
  if (s != TL_OK) {
    int rc = tl_tool_fail(cmd, "probe failed: %s", tl_ctx_error(ctx));
    tl_ctx_free(ctx);
    return rc;
  }
  if (tl_ctx_warning(ctx)[0]) fprintf(stderr, "tilec roofline: note: %s\n", tl_ctx_warning(ctx));
  static tl_rl_row rows[TL_RL_MAX_ROWS];
  int n = 0;
  for (int k = 0; tl_kernel_at(k) && n < TL_RL_MAX_ROWS; k++) {
    const tl_kernel_desc *d = tl_kernel_at(k);
    int want = nonly == 0;
    for (int j = 0; j < nonly; j++) want |= !strcmp(only[j], d->name);
    if (!want) continue;
    char shapes[256];
    snprintf(shapes, sizeof shapes, "%s", d->shapes);
    char *save = NULL;
    for (char *sh = strtok_r(shapes, " ", &save); sh && n < TL_RL_MAX_ROWS; sh = strtok_r(NULL, " ", &save)) {
      if (tty) fprintf(stderr, "  %s %s...\n", d->name, sh);
      tl_rl_measure(ctx, &m, d, sh, quick, &rows[n++]);
      if (quick) break;
    }
  }
  int bad = 0;
  if (json) {
    printf("{\"machine\": ");
    tl_json_string(stdout, m.name);
    printf(", \"threads\": %d, \"rows\": [", m.cores);
    for (int i = 0; i < n; i++) {
      const tl_rl_row *r = &rows[i];
      printf("%s\n  {\"kernel\": ", i ? "," : "");
      tl_json_string(stdout, r->kernel);
      printf(", \"shape\": ");
      tl_json_string(stdout, r->shape);
      printf(", \"dtype\": \"%s\", \"median_s\": %.9g, \"gflops\": %.6g, \"gbs\": %.6g, \"intensity\": %.6g, \"bound_s\": %.9g, "
             "\"limiter\": ", tl_dtype_name(r->dtype), r->median_s, r->gflops, r->gbs, r->intensity, r->bound_s);
      tl_json_string(stdout, r->limiter);
      printf(", \"attainment\": %.4f, \"status\": \"%s\", \"note\": ", r->attain,
             r->status == 0 ? "ok" : r->status == 1 ? "wrong" : "failed");
      tl_json_string(stdout, r->note);
      printf("}");
    }
    printf("\n]}\n");
  } else {
    printf("roofline of %s, %d threads (ceilings: `tilec probe`; warm runs, medians)\n\n", m.description[0] ? m.description : m.name,
           m.cores);
    printf("%-13s %-14s %-5s %10s %9s %8s %9s %10s %-14s %7s\n", "kernel", "shape", "dtype", "median", "GFLOP/s", "GB/s",
           "FLOP/B", "bound", "bound by", "attain");
    for (int i = 0; i < n; i++) {
      const tl_rl_row *r = &rows[i];
      if (r->status) {
        printf("%-13s %-14s %-5s %s\n", r->kernel, r->shape, tl_dtype_name(r->dtype), r->note);
        bad++;
        continue;
      }
      printf("%-13s %-14s %-5s %8.3f ms %9.2f %8.2f %9.3f %7.3f ms %-14s %6.1f%%%s\n", r->kernel, r->shape, tl_dtype_name(r->dtype),
             r->median_s * 1e3, r->gflops, r->gbs, r->intensity, r->bound_s * 1e3, r->limiter, 100 * r->attain,
             r->note[0] ? " *" : "");
    }
    for (int i = 0, first = 1; i < n; i++) /* the notes of rows that ran (failures carry theirs in the row) */
      if (!rows[i].status && rows[i].note[0]) {
        printf("%s* %s %s: %s\n", first ? "\n" : "", rows[i].kernel, rows[i].shape, rows[i].note);
        first = 0;
      }
  }
  FILE *f = fopen(csv, "w");
  if (!f) {
    fprintf(stderr, "tilec roofline: cannot write %s: %s\n", csv, strerror(errno));
    bad++;
  } else {
    tl_rl_csv(f, rows, n);
    fclose(f);
    fprintf(stderr, "tilec roofline: wrote %s\n", csv);
  }
  if (plot) {
    if (tl_rl_plot(png, &m, rows, n) == 0) fprintf(stderr, "tilec roofline: wrote %s\n", png);
    else if (system("command -v gnuplot >/dev/null 2>&1") == 0) bad++; /* gnuplot there but failed */
  }
  tl_ctx_free(ctx);
  return bad ? TL_EXIT_FAIL : TL_EXIT_OK;
}
