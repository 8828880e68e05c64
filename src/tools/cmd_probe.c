/* cmd_probe.c — `tilec probe`: measure this host (or read the cached measurement) and show it.
 *
 * Calls tl_machine_probe on a context made with the flags given, then prints the compute units
 * (peak with all threads, with 1 thread, spread) and the memory levels (capacity; read, write,
 * copy and non-temporal copy bandwidth with all threads and 1 thread; spread), the sources of the
 * numbers and the cache file, as text or one JSON object. Progress notes go to stderr when
 * stderr is a terminal or with --verbose. Every number comes from the library.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools_impl.h"

const char tl_cmd_probe_help[] =
    "usage: tilec probe [--force] [--json] [--verbose] [--isa NAME] [--threads N]\n"
    "\n"
    "Measures this machine for the roofline: the peak of every compute unit the CPU has and the\n"
    "ISA cap allows (scalar, avx2-fma, avx2-vnni, avx512-fma, avx512-vnni, avx512-bf16, amx-bf16,\n"
    "amx-int8)\n"
    "and the read, write, copy and non-temporal copy bandwidth of L1, L2, L3 and DRAM, each with\n"
    "1 thread and with all threads (medians of short runs, with their spread). The L3 size comes\n"
    "from a bandwidth sweep, not from CPUID. Takes 10-30 s; the result is cached in\n"
    "<cache dir>/machine-<cpu key>.json and read back on later calls.\n"
    "\n"
    "options:\n"
    "  --force        measure again even when a cached result exists\n"
    "  --json         print one JSON object instead of tables\n"
    "  --verbose      print progress notes on stderr (default: only when stderr is a terminal)\n"
    "  --isa NAME     ISA cap: scalar, avx2, avx2vnni, avx512, avx512vnni, avx512bf16, amx\n"
    "                 (default: $TILEC_ISA)\n"
    "  --threads N    threads, 1..1024 (default: the CPUs this process may run on)\n"
    "  -h, --help     this help\n"
    "\n"
    "Bandwidths count bytes read plus bytes written (a copy of N bytes moves 2N). Spread is\n"
    "(max - min) / median over the runs kept; runs disturbed by other work are re-run.\n"
    "\n"
    "environment: TILEC_CACHE_DIR (where the cache file goes), TILEC_ISA\n"
    "exit status: 0 ok, 1 the probe failed, 2 bad usage\n";

#define TL_CMD "probe"

/* The parsed command line. */
typedef struct tl_probe_args {
  int force, json, verbose;
  const char *isa; /* NULL: not given */
  int threads;     /* 0: default */
} tl_probe_args;

/* Parses argv into *a; returns TL_EXIT_OK or TL_EXIT_USAGE (message printed). */
static int tl_probe_parse(int argc, char **argv, tl_probe_args *a) {
  memset(a, 0, sizeof *a);
  tl_ctx_opts o = {0};
  for (int i = 1; i < argc;) {
    int r;
    if (!strcmp(argv[i], "--force")) {
      a->force = 1;
      i++;
    } else if (!strcmp(argv[i], "--json")) {
      a->json = 1;
      i++;
    } else if (!strcmp(argv[i], "--verbose") || !strcmp(argv[i], "-v")) {
      a->verbose = 1;
      i++;
    } else if ((r = tl_tool_ctx_flag(TL_CMD, argc, argv, &i, &o)) != 0) {
      if (r < 0) return TL_EXIT_USAGE;
      a->isa = o.isa;
      a->threads = o.threads;
    } else {
      return tl_tool_bad_arg(TL_CMD, argv[i]);
    }
  }
  return TL_EXIT_OK;
}

/* Progress callback: one note per line on stderr. */
static void tl_probe_progress(const char *note, void *arg) {
  (void)arg;
  fprintf(stderr, "tilec probe: %s\n", note);
}

/* A rate with an SI prefix and the unit: "228 GFLOP/s", "1.21 TFLOP/s"; "-" for 0. */
static const char *tl_probe_fmt_rate(char *buf, size_t n, double v, const char *unit) {
  static const char *const pre[] = {"", "k", "M", "G", "T", "P", "E"};
  if (!(v > 0)) {
    snprintf(buf, n, "-");
    return buf;
  }
  int p = 0;
  while (v >= 999.5 && p < 6) {
    v /= 1000;
    p++;
  }
  if (v >= 99.95) snprintf(buf, n, "%.0f %s%s", v, pre[p], unit);
  else if (v >= 9.995) snprintf(buf, n, "%.1f %s%s", v, pre[p], unit);
  else snprintf(buf, n, "%.2f %s%s", v, pre[p], unit);
  return buf;
}

/* A bandwidth in GB/s, 3 significant digits; "-" for 0. */
static const char *tl_probe_fmt_gbs(char *buf, size_t n, double bps) {
  double v = bps * 1e-9;
  if (!(v > 0)) snprintf(buf, n, "-");
  else if (v >= 99.95) snprintf(buf, n, "%.0f", v);
  else if (v >= 9.995) snprintf(buf, n, "%.1f", v);
  else snprintf(buf, n, "%.2f", v);
  return buf;
}

/* A capacity: "32 KiB/core", "16.3 MiB", "-" for main memory. */
static const char *tl_probe_fmt_cap(char *buf, size_t n, const tl_mem_level *l) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (l->capacity <= 0) {
    snprintf(buf, n, "-");
    return buf;
  }
  double v = (double)l->capacity;
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    u++;
  }
  const char *per = l->per_core ? "/core" : "";
  if (v == (double)(long long)v) snprintf(buf, n, "%lld %s%s", (long long)v, unit[u], per);
  else snprintf(buf, n, "%.1f %s%s", v, unit[u], per);
  return buf;
}

/* "GFLOP/s"-style unit for a dtype: FLOP for floats, OP for integers. */
static const char *tl_probe_op_unit(tl_dtype dt) {
  return dt == TL_I8 || dt == TL_U8 || dt == TL_I32 ? "OP/s" : "FLOP/s";
}

/* "all / 1t" for one bandwidth pair into buf. */
static const char *tl_probe_pair(char *buf, size_t n, double all, double one) {
  char a[16], b[16];
  snprintf(buf, n, "%s / %s", tl_probe_fmt_gbs(a, sizeof a, all), tl_probe_fmt_gbs(b, sizeof b, one));
  return buf;
}

/* Prints the machine as tables. */
static void tl_probe_print_text(const tl_machine *m, const char *cache_file, const char *warning) {
  char b1[48], b2[48], b3[48], b4[48];
  printf("machine  %s (%s)\n", m->name, m->description);
  printf("key      %s\n", m->cpu_key);
  printf("cache    %s\n\n", cache_file);
  printf("compute units (%d threads)\n", m->cores);
  printf("  %-13s %-5s %15s %15s %8s\n", "unit", "dtype", "all threads", "1 thread", "spread");
  for (int i = 0; i < m->nunits; i++) {
    const tl_compute_unit *u = &m->units[i];
    const char *ou = tl_probe_op_unit(u->dtype);
    printf("  %-13s %-5s %15s %15s %7.1f%%\n", u->name, tl_dtype_name(u->dtype),
           tl_probe_fmt_rate(b1, sizeof b1, u->peak, ou), tl_probe_fmt_rate(b2, sizeof b2, u->peak_1t, ou),
           u->spread * 100);
  }
  printf("\nmemory levels (GB/s: all threads / 1 thread; copies count bytes read + written)\n");
  printf("  %-5s %-13s %-15s %-15s %-15s %-15s %7s\n", "level", "capacity", "read", "write", "copy", "nt-copy",
         "spread");
  for (int i = 0; i < m->nlevels; i++) {
    const tl_mem_level *l = &m->levels[i];
    char c[32];
    printf("  %-5s %-13s %-15s %-15s %-15s %-15s %6.1f%%\n", l->name, tl_probe_fmt_cap(c, sizeof c, l),
           tl_probe_pair(b1, sizeof b1, l->read_bw, l->read_bw_1t),
           tl_probe_pair(b2, sizeof b2, l->write_bw, l->write_bw_1t),
           tl_probe_pair(b3, sizeof b3, l->copy_bw, l->copy_bw_1t),
           tl_probe_pair(b4, sizeof b4, l->nt_copy_bw, l->nt_copy_bw_1t), l->spread * 100);
  }
  printf("\nsources\n");
  for (int i = 0; i < m->nunits; i++) printf("  %-13s %s\n", m->units[i].name, m->units[i].source);
  for (int i = 0; i < m->nlevels; i++) printf("  %-13s %s\n", m->levels[i].name, m->levels[i].source);
  if (warning && *warning) printf("\nwarning: %s\n", warning);
}

/* Prints the machine as one JSON object. */
static void tl_probe_print_json(const tl_machine *m, const char *cache_file, const char *warning) {
  printf("{\n  \"name\": ");
  tl_json_string(stdout, m->name);
  printf(",\n  \"description\": ");
  tl_json_string(stdout, m->description);
  printf(",\n  \"cpu_key\": ");
  tl_json_string(stdout, m->cpu_key);
  printf(",\n  \"cache_file\": ");
  tl_json_string(stdout, cache_file);
  printf(",\n  \"cores\": %d,\n  \"measured\": %s,\n  \"units\": [", m->cores, m->measured ? "true" : "false");
  for (int i = 0; i < m->nunits; i++) {
    const tl_compute_unit *u = &m->units[i];
    printf("%s\n    {\"name\": ", i ? "," : "");
    tl_json_string(stdout, u->name);
    printf(", \"dtype\": ");
    tl_json_string(stdout, tl_dtype_name(u->dtype));
    printf(", \"peak\": %.6g, \"peak_1t\": %.6g, \"spread\": %.4g, \"source\": ", u->peak, u->peak_1t, u->spread);
    tl_json_string(stdout, u->source);
    printf("}");
  }
  printf("\n  ],\n  \"levels\": [");
  for (int i = 0; i < m->nlevels; i++) {
    const tl_mem_level *l = &m->levels[i];
    printf("%s\n    {\"name\": ", i ? "," : "");
    tl_json_string(stdout, l->name);
    printf(", \"capacity\": %lld, \"per_core\": %s,\n", (long long)l->capacity, l->per_core ? "true" : "false");
    printf("     \"read_bw\": %.6g, \"write_bw\": %.6g, \"copy_bw\": %.6g, \"nt_copy_bw\": %.6g,\n", l->read_bw,
           l->write_bw, l->copy_bw, l->nt_copy_bw);
    printf("     \"read_bw_1t\": %.6g, \"write_bw_1t\": %.6g, \"copy_bw_1t\": %.6g, \"nt_copy_bw_1t\": %.6g,\n",
           l->read_bw_1t, l->write_bw_1t, l->copy_bw_1t, l->nt_copy_bw_1t);
    printf("     \"spread\": %.4g, \"source\": ", l->spread);
    tl_json_string(stdout, l->source);
    printf("}");
  }
  printf("\n  ],\n  \"warning\": ");
  tl_json_string(stdout, warning ? warning : "");
  printf("\n}\n");
}

/* `tilec probe`: parse flags, make a context, probe, print. argv[0] is "probe". */
int tl_cmd_probe(int argc, char **argv) {
  tl_probe_args a;
  int rc = tl_probe_parse(argc, argv, &a);
  if (rc != TL_EXIT_OK) return rc;

  tl_ctx_opts opts;
  memset(&opts, 0, sizeof opts);
  opts.isa = a.isa;
  opts.threads = a.threads;
  tl_ctx *ctx = NULL;
  tl_status s = tl_ctx_new(&opts, &ctx);
  if (s != TL_OK) {
    if (s == TL_ERR_INVALID) return tl_tool_usage_error(TL_CMD, "%s", tl_last_error());
    return tl_tool_fail(TL_CMD, "%s: %s", tl_status_name(s), tl_last_error());
  }
  tl_machine *m = calloc(1, sizeof *m);
  if (!m) {
    rc = tl_tool_fail(TL_CMD, "out of memory");
    goto out;
  }
  int notes = a.verbose || isatty(STDERR_FILENO);
  s = tl_machine_probe(ctx, a.force, notes ? tl_probe_progress : NULL, NULL, m);
  if (s != TL_OK) {
    rc = tl_tool_fail(TL_CMD, "%s: %s", tl_status_name(s), tl_ctx_error(ctx));
    goto out;
  }
  tl_ctx_info in;
  char cache_file[1200];
  if (tl_ctx_info_get(ctx, &in) == TL_OK)
    snprintf(cache_file, sizeof cache_file, "%s/machine-%s.json", in.cache_dir, m->cpu_key);
  else
    snprintf(cache_file, sizeof cache_file, "?");
  const char *warning = tl_ctx_warning(ctx);
  if (a.json) tl_probe_print_json(m, cache_file, warning);
  else tl_probe_print_text(m, cache_file, warning);
  rc = TL_EXIT_OK;
out:
  free(m);
  tl_ctx_free(ctx);
  return rc;
}
