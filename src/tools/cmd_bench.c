/* cmd_bench.c — `tilec bench SUITE`: perf_report-style sweeps of tilec next to every peer present
 * (DESIGN.md §6). This file is the command: flags, the header that states every setting the
 * numbers depend on, the CSV and the plot. The suites (TL_BENCH_SUITE_LIST, bench_impl.h) run the
 * groups; bench_run.c times them and prints one table per operation and size.
 *
 * Invariants: results go to stdout, progress and errors to stderr; exit 0 when every tilec row
 * ran and was right, 1 on a runtime failure (a tilec row WRONG or failed, memory, a file), 2 on
 * bad usage. Peers are found at run time (bench_peers.c) before tilec's context exists, so the
 * forked probes of BLIS run in a process without threads.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_impl.h"
#include "tools_impl.h"

#define TL_CMD "bench"

static const tl_bsuite *const tl_bench_suites[] = {
#define TL_X_(s) &s,
    TL_BENCH_SUITE_LIST(TL_X_)
#undef TL_X_
};
#define TL_BENCH_NSUITES (int)(sizeof tl_bench_suites / sizeof tl_bench_suites[0])

const char tl_cmd_bench_help[] =
    "usage: tilec bench SUITE [--sizes LIST] [--cold | --warm] [--quick] [--threads N]\n"
    "                         [--dtype T] [--peers LIST] [--offset BYTES] [--csv FILE]\n"
    "                         [--plot FILE.png]\n"
    "\n"
    "Times tilec's kernels next to every peer library present on this machine, size by size,\n"
    "interleaved round by round in one process, and prints one table per operation and size:\n"
    "median per call (min - max), GB/s (gemm: GFLOP/s and % of the probed peak), and the ratio\n"
    "to the best peer (best peer's median / this median: above 1 is faster than every peer; gemm's\n"
    "pre-packed rows are compared with the pre-packed peers, its plain rows with the plain ones).\n"
    "Every implementation's output is checked against a reference before it is timed; a\n"
    "mismatch is a WRONG row, not timed.\n"
    "\n"
    "suites:\n"
    "  copy           y = x, f32 (memcpy, OpenBLAS scopy, BLIS scopyv, oneDNN reorder, torch)\n"
    "  scale          y = a*x and x *= a, f32 (OpenBLAS, BLIS, oneDNN eltwise_linear, torch)\n"
    "  softmax        y = softmax(x) over rows (ROWSxCOLS), f32 or bf16 (oneDNN softmax, C loop)\n"
    "  norm           layernorm and rmsnorm over rows (ROWSxCOLS), f32 or bf16 (oneDNN layer_norm,\n"
    "                 C loop; rmsnorm has no oneDNN peer)\n"
    "  gemm           C = A B: f32, bf16 x bf16 -> f32, u8 x s8 -> i32 (OpenBLAS sgemm, BLIS sgemm,\n"
    "                 oneDNN matmul plain and with pre-packed weights, libxsmm, torch)\n"
    "  attention      flash attention, bf16 or f32: prefill (causal or not) and decode, against the\n"
    "                 unfused oneDNN matmul / OpenBLAS sgemm + tl_softmax + matmul, and torch sdpa\n"
    "\n"
    "Peers are found when the command runs (dlopen; none is needed to build or run tilec):\n"
    "OpenBLAS (libopenblas.so.0), BLIS (libblis.so.4), oneDNN 2.x (libdnnl.so.2), libxsmm\n"
    "(gemm, f32: libtilec_xsmm_peer.so, which the build makes from Debian's static libxsmm when\n"
    "libxsmm-dev is installed), PyTorch (a python3 subprocess, when `import torch` works), plus\n"
    "(copy, scale) a plain C loop on the same threads and memcpy. The header states each one's\n"
    "version, threads and the environment set for them. With TILEC_ISA below the CPU's best level the\n"
    "peers are capped at the same instruction sets (their own switches; header line \"ISA cap:\").\n"
    "\n"
    "options:\n"
    "  --sizes LIST   comma-separated sizes in bytes, K/M/G suffixes binary (copy, scale default:\n"
    "                 32K,512K,8M,64M,1G; with --quick: 4K,64K,1M); gemm: N (square) or MxNxK\n"
    "                 (default: squares 256..4096, LLM shapes M = 1..2048 with N, K = 4096 or 11008,\n"
    "                 odd sizes 1000, 1023, 4097; with --quick: 256,1023,16x4096x4096)\n"
    "                 attention: SxD, SxDc (causal) or dKVxD (decode, Sq 1), e.g. 2048x128c\n"
    "                 softmax, norm: ROWSxCOLS (default 256x1024,2048x1024,512x8192,65536x1024,\n"
    "                 16384x4096; with --quick: 64x256,16x4100)\n"
    "  --cold         rotate buffer sets spanning twice the last-level cache, so every call\n"
    "                 reads from memory (default)\n"
    "  --warm         one buffer set, reused: operands stay in cache where they fit\n"
    "  --quick        small sizes and short timing (a smoke test, not a measurement)\n"
    "  --threads N    threads for tilec, the C loop and the peers, 1..1024 (default: the CPUs\n"
    "                 this process may run on)\n"
    "  --dtype T      gemm: f32 (default), bf16 (bf16 x bf16 -> f32) or int8 (u8 x s8 -> i32);\n"
    "                 copy and scale: f32 only\n"
    "                 attention: bf16 (default) or f32\n"
    "                 softmax and norm: f32 (default) or bf16 (x and y)\n"
    "  --peers LIST   which peer libraries to look for: comma-separated openblas, blis, onednn,\n"
    "                 torch, libxsmm, or all (default) or none; the C loop and memcpy always run\n"
    "  --offset BYTES gemm: A, B and C each start BYTES (0..60, a multiple of 4) past a 64-byte\n"
    "                 line, as memory from malloc may (16); every peer in this process reads the\n"
    "                 same buffers, torch its own (default 0: on a line)\n"
    "  --csv FILE     also write every row as CSV\n"
    "  --plot FILE    also plot GB/s (gemm: GFLOP/s) against size as a PNG (needs gnuplot;\n"
    "                 skipped without it)\n"
    "  -h, --help     this help\n"
    "\n"
    "exit status: 0 ok, 1 a tilec row was WRONG or failed, or a runtime failure, 2 bad usage\n";

/* The parsed command line. */
typedef struct tl_bench_args {
  const tl_bsuite *suite;
  const char *sizes; /* NULL: the suite's defaults */
  const char *csv, *plot;
  const char *dtype; /* NULL: the suite's first */
  int cold, quick, threads;
  int offset;     /* --offset: bytes past a 64-byte line (gemm) */
  unsigned peers; /* TL_BPEER_LIST bits */
} tl_bench_args;

/* The suite called name, or NULL. */
static const tl_bsuite *tl_bench_find(const char *name) {
  for (int i = 0; i < TL_BENCH_NSUITES; i++)
    if (!strcmp(tl_bench_suites[i]->name, name)) return tl_bench_suites[i];
  return NULL;
}

/* Checks every size of a comma-separated list against the suite; 0 or a usage error. */
static int tl_bench_check_sizes(const tl_bsuite *s, const char *list) {
  char buf[1024], err[256];
  const size_t len = strlen(list);
  if (!len || len >= sizeof buf) return tl_tool_usage_error(TL_CMD, "--sizes: expected a comma-separated list");
  if (list[0] == ',' || list[len - 1] == ',' || strstr(list, ",,"))
    return tl_tool_usage_error(TL_CMD, "--sizes '%s': an empty entry (a comma too many)", list);
  snprintf(buf, sizeof buf, "%s", list);
  char *save = NULL;
  int n = 0;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save), n++)
    if (s->size_check(t, err, sizeof err) != 0) return tl_tool_usage_error(TL_CMD, "--sizes: %s", err);
  if (n == 0) return tl_tool_usage_error(TL_CMD, "--sizes: expected a comma-separated list");
  return TL_EXIT_OK;
}

/* Parses a --peers list into TL_BPEER_LIST bits; 0 or a usage error. */
static int tl_bench_parse_peers(const char *list, unsigned *out) {
  char buf[256];
  if (!*list || strlen(list) >= sizeof buf) return tl_tool_usage_error(TL_CMD, "--peers: expected a comma-separated list");
  snprintf(buf, sizeof buf, "%s", list);
  unsigned m = 0;
  int names = 0;
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save), names++) {
    unsigned bit = 0;
    if (!strcmp(t, "all")) bit = TL_BPEER_ALL;
    else if (!strcmp(t, "none")) bit = 0;
#define TL_X_(b, name) else if (!strcmp(t, name)) bit = b;
    TL_BPEER_LIST(TL_X_)
#undef TL_X_
    else return tl_tool_usage_error(TL_CMD, "--peers: unknown peer '%s' (openblas, blis, onednn, torch, libxsmm, all, none)", t);
    m |= bit;
  }
  if (!names) return tl_tool_usage_error(TL_CMD, "--peers: expected a comma-separated list, got '%s'", list);
  *out = m;
  return TL_EXIT_OK;
}

/* The suite's dtypes (the first is the default). */
static const char *tl_bench_dtypes(const tl_bsuite *s) {
  return s->dtypes ? s->dtypes : "f32";
}

/* Checks --dtype against the suite's list; 0 or a usage error. */
static int tl_bench_check_dtype(const tl_bsuite *s, const char *dt) {
  char buf[128];
  snprintf(buf, sizeof buf, "%s", tl_bench_dtypes(s));
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
    if (!strcmp(t, dt)) return TL_EXIT_OK;
  return tl_tool_usage_error(TL_CMD, "--dtype: '%s' is not a dtype of %s (%s)", dt, s->name, tl_bench_dtypes(s));
}

/* Parses argv into *a; TL_EXIT_OK or TL_EXIT_USAGE (message printed). */
static int tl_bench_parse(int argc, char **argv, tl_bench_args *a) {
  memset(a, 0, sizeof *a);
  a->cold = 1;
  a->peers = TL_BPEER_ALL;
  int cold_set = 0, warm_set = 0;
  for (int i = 1; i < argc;) {
    const char *v = NULL;
    int r;
    if (!strcmp(argv[i], "--cold")) cold_set = 1, a->cold = 1, i++;
    else if (!strcmp(argv[i], "--warm")) warm_set = 1, a->cold = 0, i++;
    else if (!strcmp(argv[i], "--quick")) a->quick = 1, i++;
    else if ((r = tl_tool_flag_value(TL_CMD, argc, argv, &i, "--sizes", &v)) != 0) {
      if (r < 0) return TL_EXIT_USAGE;
      a->sizes = v;
    } else if ((r = tl_tool_flag_value(TL_CMD, argc, argv, &i, "--peers", &v)) != 0) {
      if (r < 0 || tl_bench_parse_peers(v, &a->peers) != TL_EXIT_OK) return TL_EXIT_USAGE;
    } else if ((r = tl_tool_flag_value(TL_CMD, argc, argv, &i, "--dtype", &v)) != 0) {
      if (r < 0) return TL_EXIT_USAGE;
      a->dtype = v;
    } else if ((r = tl_tool_flag_value(TL_CMD, argc, argv, &i, "--csv", &v)) != 0) {
      if (r < 0 || tl_tool_path_arg(TL_CMD, "--csv", v) != 0) return TL_EXIT_USAGE;
      a->csv = v;
    } else if ((r = tl_tool_flag_value(TL_CMD, argc, argv, &i, "--plot", &v)) != 0) {
      if (r < 0 || tl_tool_path_arg(TL_CMD, "--plot", v) != 0) return TL_EXIT_USAGE;
      a->plot = v;
    } else if ((r = tl_tool_flag_value(TL_CMD, argc, argv, &i, "--offset", &v)) != 0) {
      long n;
      if (r < 0 || tl_tool_parse_int(TL_CMD, "--offset", v, 0, 60, &n) != 0) return TL_EXIT_USAGE;
      if (n % 4) return tl_tool_usage_error(TL_CMD, "--offset: %ld is not a multiple of 4 (the f32 / i32 elements of C)", n);
      a->offset = (int)n;
    } else if ((r = tl_tool_flag_value(TL_CMD, argc, argv, &i, "--threads", &v)) != 0) {
      long n;
      if (r < 0 || tl_tool_parse_int(TL_CMD, "--threads", v, 1, 1024, &n) != 0) return TL_EXIT_USAGE;
      a->threads = (int)n;
    } else if (argv[i][0] == '-') {
      return tl_tool_usage_error(TL_CMD, "unknown option '%s' (see tilec bench --help)", argv[i]);
    } else if (a->suite) {
      return tl_tool_usage_error(TL_CMD, "one suite at a time: '%s' after '%s'", argv[i], a->suite->name);
    } else if (!(a->suite = tl_bench_find(argv[i]))) {
      char names[256] = "";
      for (int k = 0; k < TL_BENCH_NSUITES; k++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? ", " : "", tl_bench_suites[k]->name);
      return tl_tool_usage_error(TL_CMD, "unknown suite '%s' (suites: %s)", argv[i], names);
    } else {
      i++;
    }
  }
  if (cold_set && warm_set) return tl_tool_usage_error(TL_CMD, "--cold and --warm exclude each other");
  if (!a->suite) return tl_tool_usage_error(TL_CMD, "which suite? (see tilec bench --help)");
  if (a->sizes && tl_bench_check_sizes(a->suite, a->sizes) != TL_EXIT_OK) return TL_EXIT_USAGE;
  if (a->dtype && tl_bench_check_dtype(a->suite, a->dtype) != TL_EXIT_OK) return TL_EXIT_USAGE;
  if (a->offset && strcmp(a->suite->name, "gemm") != 0)
    return tl_tool_usage_error(TL_CMD, "--offset: gemm only (not %s)", a->suite->name);
  return TL_EXIT_OK;
}

/* Prints the header: every setting the numbers below depend on. */
static void tl_bench_header(const tl_benv *env, const char *sizes) {
  const tl_ctx_info *in = &env->info;
  const tl_bench_opts *o = &env->opts;
  char b[32];
  printf("tilec bench %s: tilec %s on %s, %d thread%s, ISA %s; sizes %s; %s\n", env->suite->name, TILEC_VERSION,
         in->cpu.brand[0] ? in->cpu.brand : "unknown CPU", env->threads, env->threads == 1 ? "" : "s", tl_isa_name(in->isa),
         sizes, env->cold ? "cold" : "warm");
  printf("timing: implementations interleaved round by round, each timed call a batch of calls (about %.1f ms of the\n"
         "  fastest); warm-up %.2f s each; then %.2f..%.2f s and %d..%d batches each, stopping once the medians move\n"
         "  < %.0f%%; %.1f ms untimed pause before every timed batch (threads left spinning fall asleep)%s\n",
         env->batch_s * 1e3, o->warmup_s, o->min_time_s, o->max_time_s, o->min_reps, o->max_reps, o->stable * 100,
         o->pause_s * 1e3, env->quick ? "; --quick: a smoke test" : "");
  if (env->cold)
    printf("cold: every call takes the next of the buffer sets spanning >= 2 x %s (%s)\n",
           tl_bench_bytes_str(b, sizeof b, (double)env->llc_bytes), env->llc_source);
  else
    printf("warm: one buffer set, reused by every call (operands stay in cache where they fit)\n");
  if (env->offset)
    printf("offset: A, B and C start %d bytes past a 64-byte line (the buffers of every implementation in this\n"
           "  process; torch allocates its own)\n", env->offset);
  if (env->suite->header) {
    env->suite->header((tl_benv *)env);
    fflush(stdout);
    return;
  }
  printf("tilec: kernels from the registry (src/kernels) run by tl_plan_run on a context of %d thread%s, workers\n"
         "  spin %d us then sleep; plan made once, not timed\n",
         env->threads, env->threads == 1 ? "" : "s", in->spin_us);
  printf("peers (found now by dlopen/subprocess; absent ones have no row):\n");
  printf("  C loop: y[i] = x[i] or a*x[i], built with the flags tilec's bodies get (baseline x86-64), split over %d\n"
         "    persistent pthread%s (spin 50 us, then sleep)\n",
         env->threads, env->threads == 1 ? "" : "s");
  printf("  %s\n  %s\n  %s\n  %s\n", env->peers.openblas_desc, env->peers.blis_desc, env->peers.dnnl_desc,
         env->peers.torch_desc);
  tl_bpeers_print_env(&env->peers);
  printf("columns: median per call (min - max of batches, per call); GB/s = 2 x size / median (reads + writes, no\n"
         "  write-allocate); vs best peer = best peer's median / this median (tilec above 1: faster than every peer)\n");
  fflush(stdout);
}

/* Writes s as one CSV field (quoted when it holds a comma, quote or newline). */
static void tl_csv_field(FILE *f, const char *s) {
  if (!strpbrk(s, ",\"\n")) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"') fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

/* A row status as the CSV writes it. */
static const char *tl_row_status(int s) {
  return s == TL_BROW_OK ? "ok" : s == TL_BROW_WRONG ? "WRONG" : s == TL_BROW_FAILED ? "failed" : "skipped";
}

/* Writes every row as CSV to f (opened before the run, so a bad path fails early) and closes
 * it; TL_EXIT_OK or TL_EXIT_FAIL (message printed). */
static int tl_bench_write_csv(const tl_benv *env, FILE *f, const char *path) {
  int compute = env->nrows > 0 && env->rows[0].flops > 0;
  if (compute)
    fprintf(f, "suite,op,size_bytes,size,dtype,mode,threads,impl,kind,status,median_s,min_s,max_s,reps,batch,flops,"
               "gflops,pct_peak,vs_best_peer,note\n");
  else
    fprintf(f, "suite,op,size_bytes,size,dtype,mode,threads,impl,kind,status,median_s,min_s,max_s,reps,batch,moved_bytes,"
               "gbps,vs_best_peer,note\n");
  for (int i = 0; i < env->nrows; i++) {
    const tl_brow *r = &env->rows[i];
    int ok = r->status == TL_BROW_OK;
    fprintf(f, "%s,%s,%lld,", env->suite->name, r->op, (long long)r->size_bytes);
    tl_csv_field(f, r->size);
    fprintf(f, ",%s,%s,%d,", env->dtype, env->cold ? "cold" : "warm", env->threads);
    tl_csv_field(f, r->impl);
    fprintf(f, ",%s,%s,", r->tilec ? "tilec" : "peer", tl_row_status(r->status));
    if (ok) fprintf(f, "%.6e,%.6e,%.6e,%d,%d,", r->median_s, r->min_s, r->max_s, r->reps, r->batch);
    else fprintf(f, ",,,,,");
    if (compute) {
      fprintf(f, "%.0f,", r->flops);
      if (ok) fprintf(f, "%.3f,", r->flops / r->median_s / 1e9);
      else fprintf(f, ",");
      if (ok && r->peak > 0) fprintf(f, "%.2f,", 100.0 * r->flops / r->median_s / r->peak);
      else fprintf(f, ",");
    } else {
      fprintf(f, "%.0f,", r->moved);
      if (ok) fprintf(f, "%.3f,", r->moved / r->median_s / 1e9);
      else fprintf(f, ",");
    }
    if (ok && r->ratio > 0) fprintf(f, "%.4f,", r->ratio);
    else fprintf(f, ",");
    tl_csv_field(f, r->note);
    fputc('\n', f);
  }
  if (fclose(f) != 0) return tl_tool_fail(TL_CMD, "writing %s failed", path);
  return TL_EXIT_OK;
}

/* The position of size among the distinct sizes of the rows, in the order they came. */
static int tl_bench_size_index(const tl_benv *env, const char *size) {
  int n = 0;
  for (int i = 0; i < env->nrows; i++) {
    int seen = 0;
    for (int k = 0; k < i; k++) seen |= !strcmp(env->rows[k].size, env->rows[i].size);
    if (seen) continue;
    if (!strcmp(env->rows[i].size, size)) return n;
    n++;
  }
  return n;
}

/* Plots GB/s against size, one panel per operation, one line per implementation, with gnuplot.
 * Without gnuplot: a note on stderr, TL_EXIT_OK. */
static int tl_bench_plot(const tl_benv *env, const char *path) {
  if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
    fprintf(stderr, "tilec bench: gnuplot is not installed: no plot written (apt-get install gnuplot-nox)\n");
    return TL_EXIT_OK;
  }
  char data[] = "/tmp/tilec-bench-XXXXXX";
  int fd = mkstemp(data);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f) return tl_tool_fail(TL_CMD, "cannot write a temporary file for gnuplot");
  /* the distinct operations and, per operation, implementations, in the order rows came */
  const char *ops[16], *titles[16];
  int nops = 0;
  for (int i = 0; i < env->nrows && nops < 16; i++) {
    int seen = 0;
    for (int k = 0; k < nops; k++) seen |= !strcmp(ops[k], env->rows[i].op);
    if (!seen) titles[nops] = env->rows[i].title, ops[nops++] = env->rows[i].op;
  }
  int compute = env->nrows > 0 && env->rows[0].flops > 0; /* x: the sizes in order, y: GFLOP/s */
  FILE *gp = popen("gnuplot >/dev/null", "w"); /* its stdout (a PNG, when it cannot open the file) is not ours */
  if (!gp) {
    fclose(f);
    unlink(data);
    return tl_tool_fail(TL_CMD, "cannot run gnuplot");
  }
  fprintf(gp, "set terminal pngcairo size 1100,%d noenhanced\nset output ", 60 + 400 * (nops ? nops : 1));
  tl_gp_string(gp, path);
  fprintf(gp, "\nset multiplot layout %d,1 title 'tilec bench %s (%s, %s, %d thread%s): %s against size'\n", nops ? nops : 1,
          env->suite->name, env->dtype, env->cold ? "cold" : "warm", env->threads, env->threads == 1 ? "" : "s",
          compute ? "GFLOP/s" : "GB/s");
  if (compute)
    fprintf(gp, "set grid\nset key outside right\nset xlabel 'size (M x N x K)'\nset ylabel 'GFLOP/s'\nset xtics rotate by -30\n");
  else
    fprintf(gp, "set logscale x 2\nset grid\nset key outside right\nset xlabel 'size (bytes of x)'\nset ylabel 'GB/s'\n");
  fprintf(gp, "set offsets graph 0.04, graph 0.04, 0, 0\nset yrange [0:*]\n"); /* end tics inside the frame */
  fprintf(gp, "set xtics (");
  for (int i = 0, n = 0; i < env->nrows; i++) {
    int seen = 0;
    for (int k = 0; k < i; k++) seen |= compute ? !strcmp(env->rows[k].size, env->rows[i].size) : env->rows[k].size_bytes == env->rows[i].size_bytes;
    if (seen) continue;
    fprintf(gp, "%s", n ? ", " : "");
    tl_gp_string(gp, env->rows[i].size);
    if (compute) fprintf(gp, " %d", n);
    else fprintf(gp, " %lld", (long long)env->rows[i].size_bytes);
    n++;
  }
  fprintf(gp, ")\n");
  int index = 0;
  for (int k = 0; k < nops; k++) {
    const char *impls[TL_BGROUP_MAX];
    int nimpl = 0;
    for (int i = 0; i < env->nrows; i++) {
      const tl_brow *r = &env->rows[i];
      if (strcmp(r->op, ops[k])) continue;
      int seen = 0;
      for (int j = 0; j < nimpl; j++) seen |= !strcmp(impls[j], r->impl);
      if (!seen && nimpl < TL_BGROUP_MAX) impls[nimpl++] = r->impl;
    }
    fprintf(gp, "set title ");
    tl_gp_string(gp, titles[k]);
    fprintf(gp, "\nplot ");
    for (int j = 0; j < nimpl; j++) {
      int pts = 0;
      for (int i = 0; i < env->nrows; i++) {
        const tl_brow *r = &env->rows[i];
        if (strcmp(r->op, ops[k]) || strcmp(r->impl, impls[j]) || r->status != TL_BROW_OK) continue;
        if (compute) fprintf(f, "%d %.4f\n", tl_bench_size_index(env, r->size), r->flops / r->median_s / 1e9);
        else fprintf(f, "%lld %.4f\n", (long long)r->size_bytes, r->moved / r->median_s / 1e9);
        pts++;
      }
      if (!pts) fprintf(f, "nan nan\n");
      fprintf(f, "\n\n");
      fprintf(gp, "%s", j ? ", " : "");
      tl_gp_string(gp, data);
      fprintf(gp, " index %d with linespoints lw 2 title ", index++);
      tl_gp_string(gp, impls[j]);
    }
    fprintf(gp, "\n");
  }
  fclose(f);
  fprintf(gp, "unset multiplot\n");
  int rc = pclose(gp);
  unlink(data);
  if (rc != 0) return tl_tool_fail(TL_CMD, "gnuplot failed writing %s", path);
  fprintf(stderr, "tilec bench: plot written to %s\n", path);
  return TL_EXIT_OK;
}

/* Progress callback for the probe: its notes go to the progress line. */
static void tl_bench_probe_note(const char *note, void *arg) {
  tl_bench_progress((const tl_benv *)arg, "probing the machine (once; cached): %s", note);
}

/* The last-level cache size that sizes cold rotation, and where it came from. Cold runs take the
 * probe's measured last level before main memory (tl_machine_probe, cached after its first run,
 * which takes about 30 s), raised to CPUID's L3 when that is at most 4x larger: a bandwidth sweep
 * can see the drop before the full capacity (measured 14 MiB against CPUID's 32 MiB on a Zen 4
 * VM), and a colder run costs only memory; a CPUID L3 beyond 4x the measurement is taken for the
 * VM artefact it is on the Intel dev machines (480 MiB advertised). --quick and warm runs, or a
 * failed probe, use CPUID's L3 alone. */
static void tl_bench_llc(tl_benv *env) {
  if (env->cold && !env->quick) {
    tl_machine m;
    tl_status s = tl_machine_probe(env->ctx, 0, tl_bench_probe_note, env, &m);
    if (s == TL_OK && m.nlevels >= 2 && m.levels[m.nlevels - 2].capacity > 0) {
      const tl_mem_level *l = &m.levels[m.nlevels - 2];
      int64_t meas = l->capacity * (l->per_core ? (m.cores > 0 ? m.cores : 1) : 1), l3 = env->info.cpu.l3_bytes;
      char b1[32], b2[32];
      tl_bench_bytes_str(b1, sizeof b1, (double)meas);
      tl_bench_bytes_str(b2, sizeof b2, (double)l3);
      if (l3 > meas && l3 <= 4 * meas) {
        env->llc_bytes = l3;
        snprintf(env->llc_source, sizeof env->llc_source, "L3 from CPUID; tl_machine_probe measured %s: the larger is kept", b1);
      } else {
        env->llc_bytes = meas;
        snprintf(env->llc_source, sizeof env->llc_source, "%.15s as tl_machine_probe measured it; CPUID says %s", l->name,
                 l3 > 0 ? b2 : "nothing");
      }
      return;
    }
    fprintf(stderr, "tilec bench: the machine probe failed (%s): sizing cold runs from CPUID\n",
            s == TL_OK ? "no cache level" : tl_ctx_error(env->ctx));
  }
  int64_t l3 = env->info.cpu.l3_bytes;
  if (l3 > 0) {
    env->llc_bytes = l3;
    snprintf(env->llc_source, sizeof env->llc_source, "L3 as CPUID reports it: an upper-bound estimate of the LLC");
  } else {
    env->llc_bytes = (int64_t)64 << 20;
    snprintf(env->llc_source, sizeof env->llc_source, "CPUID reports no L3: 64 MiB assumed");
  }
}

/* `tilec bench`: argv[0] is "bench". */
int tl_cmd_bench(int argc, char **argv) {
  tl_bench_args a;
  int rc = tl_bench_parse(argc, argv, &a);
  if (rc != TL_EXIT_OK) return rc;

  FILE *csv = NULL;
  if (a.csv && !(csv = fopen(a.csv, "w"))) return tl_tool_fail(TL_CMD, "cannot write %s", a.csv);
  tl_benv env;
  memset(&env, 0, sizeof env);
  env.suite = a.suite;
  env.cold = a.cold;
  env.quick = a.quick;
  env.offset = a.offset;
  {
    static char dt0[16]; /* the suite's default dtype: the first of its list */
    snprintf(dt0, sizeof dt0, "%s", tl_bench_dtypes(a.suite));
    char *comma = strchr(dt0, ',');
    if (comma) *comma = 0;
    env.dtype = a.dtype ? a.dtype : dt0;
  }
  env.progress = isatty(2);
  env.t_start = tl_bench_now();
  if (a.quick) {
    env.opts = (tl_bench_opts){.warmup_s = 0.01, .min_time_s = 0.04, .max_time_s = 0.3, .min_reps = 3, .max_reps = 50,
                               .stable = 0.02, .pause_s = 0.5e-3};
    env.batch_s = 0.5e-3;
  } else {
    env.opts = (tl_bench_opts){.warmup_s = 0.05, .min_time_s = 0.3, .max_time_s = 2.0, .min_reps = 5, .max_reps = 300,
                               .stable = 0.01, .pause_s = 1e-3};
    env.batch_s = 2e-3;
  }
  const char *sizes = a.sizes ? a.sizes : a.quick ? a.suite->quick_sizes : a.suite->sizes;

  /* threads first (the peers need the count), peers before tilec's context (no threads yet) */
  tl_cpu_info cpu;
  tl_cpu_detect(&cpu);
  env.threads = a.threads ? a.threads : cpu.cpus_allowed > 0 ? cpu.cpus_allowed : 1;
  tl_bpeers_load(&env.peers, env.threads, a.peers);

  tl_ctx_opts co;
  memset(&co, 0, sizeof co);
  co.threads = env.threads;
  tl_status s = tl_ctx_new(&co, &env.ctx);
  if (s != TL_OK) {
    rc = s == TL_ERR_INVALID ? tl_tool_usage_error(TL_CMD, "%s", tl_last_error())
                             : tl_tool_fail(TL_CMD, "%s: %s", tl_status_name(s), tl_last_error());
    goto out;
  }
  tl_ctx_info_get(env.ctx, &env.info);
  env.pool = tl_bpool_new(env.threads);
  if (!env.pool) {
    rc = tl_tool_fail(TL_CMD, "cannot start %d threads for the C loop", env.threads);
    goto out;
  }
  tl_bench_llc(&env);
  tl_bench_header(&env, sizes);

  char buf[1024], *save = NULL;
  snprintf(buf, sizeof buf, "%s", sizes);
  rc = TL_EXIT_OK;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (a.suite->run(&env, t) < 0) {
      rc = TL_EXIT_FAIL;
      break;
    }
  }
  if (csv) {
    FILE *f = csv;
    csv = NULL;
    if (tl_bench_write_csv(&env, f, a.csv) != TL_EXIT_OK) rc = TL_EXIT_FAIL;
  }
  if (a.plot && env.nrows > 0 && tl_bench_plot(&env, a.plot) != TL_EXIT_OK) rc = TL_EXIT_FAIL;
  if (rc == TL_EXIT_OK && env.status) rc = tl_tool_fail(TL_CMD, "a tilec row was WRONG or failed (see the tables)");
out:
  if (csv) fclose(csv);
  tl_bpool_free(env.pool);
  tl_ctx_free(env.ctx);
  tl_bpeers_close(&env.peers);
  free(env.rows);
  return rc;
}
