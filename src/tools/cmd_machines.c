/* cmd_machines.c — `tilec machines`: the machines tilec can bound a kernel on.
 *
 * Lists the host (from tl_machine_probe with force = 0: the cached probe, or a first measurement
 * of about 30 s, announced on stderr; --no-host skips it) and every preset (TPU and GPU parts
 * from public datasheets). One line per machine, or with --verbose every unit and level with its
 * source, or one JSON object with --json. Every number comes from the library.
 */
#include <string.h>

#include "machine_fmt.h"
#include "tools_impl.h"

const char tl_cmd_machines_help[] =
    "usage: tilec machines [--json] [--verbose] [--no-host] [--threads N]\n"
    "\n"
    "Lists the machines `tilec explain --machine NAME` can bound a kernel on: the host, as\n"
    "`tilec probe` measured it, and the presets (Google TPU v5e, v5p, v6e; NVIDIA A100, H100,\n"
    "H200), each with its compute units (peak op/s per operand dtype, dense, for the whole chip)\n"
    "and memory levels (capacity, read bandwidth), fastest first, main memory last.\n"
    "\n"
    "The host comes from the probe cache. When nothing is cached the probe runs first (about\n"
    "30 s, said on stderr) and caches its result; --no-host lists the presets only.\n"
    "\n"
    "In the table '*' marks an estimated bandwidth (the source says how it was estimated) and '?'\n"
    "a bandwidth nobody publishes (the roofline bound ignores that level). --verbose prints the\n"
    "source of every number. See docs/machines.md.\n"
    "\n"
    "options:\n"
    "  --json         print one JSON object {\"machines\": [...]} instead of the table\n"
    "  -v, --verbose  every unit and level on its own line, with its source\n"
    "  --no-host      do not list the host (never runs the probe)\n"
    "  --threads N    the host as probed with N threads, 1..1024 (default: the CPUs allowed;\n"
    "                 each thread count is probed and cached on its own)\n"
    "  -h, --help     this help\n"
    "\n"
    "exit status: 0 ok, 1 the host could not be probed (the presets are still listed), 2 bad usage\n";

#define TL_CMD "machines"

/* The parsed command line. */
typedef struct tl_machines_args {
  int json, verbose, no_host, threads;
} tl_machines_args;

/* Parses argv into *a; returns TL_EXIT_OK or TL_EXIT_USAGE (message printed). */
static int tl_machines_parse(int argc, char **argv, tl_machines_args *a) {
  memset(a, 0, sizeof *a);
  for (int i = 1; i < argc;) {
    const char *v = NULL;
    int r;
    if (!strcmp(argv[i], "--json")) {
      a->json = 1;
      i++;
    } else if (!strcmp(argv[i], "--verbose") || !strcmp(argv[i], "-v")) {
      a->verbose = 1;
      i++;
    } else if (!strcmp(argv[i], "--no-host")) {
      a->no_host = 1;
      i++;
    } else if ((r = tl_tool_flag_value(TL_CMD, argc, argv, &i, "--threads", &v)) != 0) {
      long n;
      if (r < 0 || tl_tool_parse_int(TL_CMD, "--threads", v, 1, 1024, &n) != 0) return TL_EXIT_USAGE;
      a->threads = (int)n;
    } else if (argv[i][0] == '-') {
      return tl_tool_usage_error(TL_CMD, "unknown option '%s' (see tilec machines --help)", argv[i]);
    } else {
      return tl_tool_usage_error(TL_CMD, "unexpected argument '%s' (see tilec machines --help)", argv[i]);
    }
  }
  return TL_EXIT_OK;
}

/* Probe progress: the first note of a measurement (not of a cache read) says on stderr that the
 * host is being measured. */
static void tl_machines_progress(const char *note, void *arg) {
  int *announced = arg;
  if (!strncmp(note, "read the probe cache", 20)) return; /* cached: nothing to announce */
  if (!*announced) {
    fprintf(stderr, "tilec machines: measuring the host (first run, about 30 s; cached afterwards)\n");
    *announced = 1;
  }
}

/* Probes the host into *m (cached or measured). Returns TL_EXIT_OK or TL_EXIT_FAIL (message
 * printed). */
static int tl_machines_host(const tl_machines_args *a, tl_machine *m) {
  tl_ctx_opts opts;
  memset(&opts, 0, sizeof opts);
  opts.threads = a->threads;
  tl_ctx *ctx = NULL;
  tl_status s = tl_ctx_new(&opts, &ctx);
  if (s != TL_OK) return tl_tool_fail(TL_CMD, "host: %s: %s", tl_status_name(s), tl_last_error());
  int announced = 0;
  s = tl_machine_probe(ctx, 0, tl_machines_progress, &announced, m);
  int rc = TL_EXIT_OK;
  if (s != TL_OK) rc = tl_tool_fail(TL_CMD, "host: probe failed: %s: %s", tl_status_name(s), tl_ctx_error(ctx));
  tl_ctx_free(ctx);
  return rc;
}

/* `tilec machines`. argv[0] is "machines". */
int tl_cmd_machines(int argc, char **argv) {
  tl_machines_args a;
  int rc = tl_machines_parse(argc, argv, &a);
  if (rc != TL_EXIT_OK) return rc;

  enum { TL_MAX_LISTED = 32 };
  tl_machine list[TL_MAX_LISTED];
  int n = 0;
  if (!a.no_host) {
    rc = tl_machines_host(&a, &list[n]);
    if (rc == TL_EXIT_OK) n++;
  }
  for (int i = 0; tl_machine_preset_name(i) && n < TL_MAX_LISTED; i++) {
    tl_status s = tl_machine_preset(tl_machine_preset_name(i), &list[n]);
    if (s != TL_OK) return tl_tool_fail(TL_CMD, "preset %s: %s", tl_machine_preset_name(i), tl_last_error());
    n++;
  }

  if (a.json) {
    printf("{\n  \"machines\": [");
    for (int i = 0; i < n; i++) {
      printf("%s\n    ", i ? "," : "");
      tl_machine_print_json(stdout, &list[i], 4);
    }
    printf("\n  ]\n}\n");
  } else if (a.verbose) {
    for (int i = 0; i < n; i++) {
      if (i) putchar('\n');
      tl_machine_print_details(stdout, &list[i]);
    }
  } else {
    tl_machine_print_header(stdout);
    for (int i = 0; i < n; i++) tl_machine_print_line(stdout, &list[i]);
    printf("\n* estimated bandwidth, ? unknown (ignored by the bound); --verbose shows every source\n");
  }
  return rc;
}
