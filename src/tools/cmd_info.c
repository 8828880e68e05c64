/* cmd_info.c — `tilec info`: what the host is and what a context would run on.
 *
 * Creates a context with the flags given (so TILEC_ISA, TILEC_INTERPRET and TILEC_CACHE_DIR are
 * honoured exactly as the library honours them), reads tl_ctx_info_get and prints it as text or,
 * with --json, as one JSON object. Nothing here decides anything: every number comes from the
 * library, so `tilec info` shows what a program linked against it would get.
 */
#include <stdlib.h>
#include <string.h>

#include "tools_impl.h"

const char tl_cmd_info_help[] =
    "usage: tilec info [--json] [--isa NAME] [--threads N]\n"
    "\n"
    "Shows the CPU (vendor, brand, family/model), every feature tilec knows and whether the CPU\n"
    "and the OS provide it, the best ISA path the CPU allows, the ISA cap and the paths a context\n"
    "will use, threads and CPUs, cache sizes (from CPUID), staging budgets, spin time, interpret\n"
    "mode, AMX permission state and the cache directory.\n"
    "\n"
    "options:\n"
    "  --json         print one JSON object instead of text\n"
    "  --isa NAME     ISA cap: scalar, avx2, avx2vnni, avx512, avx512vnni, avx512bf16, amx\n"
    "                 (default: $TILEC_ISA, else no cap); a cap above the CPU means the best\n"
    "                 the CPU has\n"
    "  --threads N    worker threads, 1..1024 (default: the CPUs this process may run on)\n"
    "  -h, --help     this help\n"
    "\n"
    "exit status: 0 ok, 1 the context could not be created, 2 bad usage (flag, ISA name)\n";

#define TL_CMD "info"

/* The parsed command line. */
typedef struct tl_info_args {
  int json;
  const char *isa; /* NULL: not given */
  int threads;     /* 0: default */
} tl_info_args;

/* Parses argv into *a; returns TL_EXIT_OK or TL_EXIT_USAGE (message printed). */
static int tl_info_parse(int argc, char **argv, tl_info_args *a) {
  memset(a, 0, sizeof *a);
  tl_ctx_opts o = {0};
  for (int i = 1; i < argc;) {
    int r;
    if (!strcmp(argv[i], "--json")) {
      a->json = 1;
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

/* Where the ISA cap came from: "--isa", "TILEC_ISA" or "none". */
static const char *tl_info_cap_source(const tl_info_args *a) {
  if (a->isa) return "--isa";
  const char *e = getenv("TILEC_ISA");
  return e && *e ? "TILEC_ISA" : "none";
}

/* A byte count as "48 KiB", "2 MiB", "1.5 MiB"; "unknown" for 0. */
static const char *tl_info_bytes(char *buf, size_t n, long long b) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (b <= 0) {
    snprintf(buf, n, "unknown");
    return buf;
  }
  double v = (double)b;
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    u++;
  }
  if (v == (double)(long long)v) snprintf(buf, n, "%lld %s", (long long)v, unit[u]);
  else snprintf(buf, n, "%.1f %s", v, unit[u]);
  return buf;
}

/* The AMX permission state in words. */
static const char *tl_info_amx_state(const tl_ctx_info *in) {
  const uint32_t amx = TL_FEAT_AMX_TILE | TL_FEAT_AMX_BF16 | TL_FEAT_AMX_INT8;
  if (in->amx_state == 1) return "granted";
  if (in->amx_state < 0) return "refused";
  if ((in->cpu.features & amx) != amx) return "absent (this CPU has no AMX)";
  if (in->isa != TL_ISA_AMX) return "not requested (the ISA cap is below amx)";
  return "not requested yet (asked for at the first AMX plan)";
}

/* Short machine-readable AMX state for JSON. */
static const char *tl_info_amx_key(const tl_ctx_info *in) {
  const uint32_t amx = TL_FEAT_AMX_TILE | TL_FEAT_AMX_BF16 | TL_FEAT_AMX_INT8;
  if (in->amx_state == 1) return "granted";
  if (in->amx_state < 0) return "refused";
  if ((in->cpu.features & amx) != amx) return "absent";
  return "not-requested";
}

/* Whether the context runs level i's paths: up to its level, except avx2vnni on a CPU without
 * AVX-VNNI (a side branch the higher levels pass through without using). */
static int tl_info_level_used(const tl_ctx_info *in, int i) {
  return i <= (int)in->isa && (i != TL_ISA_AVX2VNNI || (in->cpu.features & TL_FEAT_AVXVNNI));
}

/* Prints the context info as text. */
static void tl_info_print_text(const tl_ctx_info *in, const char *cap_source, const char *warning) {
  const tl_cpu_info *c = &in->cpu;
  char b1[32], b2[32];
  printf("tilec %s\n\n", TILEC_VERSION);
  printf("cpu\n");
  printf("  vendor         %s\n", c->vendor[0] ? c->vendor : "unknown");
  printf("  brand          %s\n", c->brand[0] ? c->brand : "unknown");
  printf("  family/model   family %u (0x%x), model %u (0x%x), stepping %u\n", c->family, c->family, c->model,
         c->model, c->stepping);
  printf("  cpus           %d online, %d allowed for this process\n", c->cpus_online, c->cpus_allowed);
  printf("  caches         L1d %s per core, ", tl_info_bytes(b1, sizeof b1, c->l1d_bytes));
  printf("L2 %s per core, ", tl_info_bytes(b2, sizeof b2, c->l2_bytes));
  printf("L3 %s (as CPUID reports it)\n", tl_info_bytes(b1, sizeof b1, c->l3_bytes));

  printf("\nfeatures (CPUID and enabled by the OS)\n");
  for (int i = 0; i < TL_FEATURE_COUNT; i++) {
    uint32_t bit = 1u << i;
    int last = i % 4 == 3 || i == TL_FEATURE_COUNT - 1;
    int yes = (c->features & bit) != 0;
    printf("%s%-12s %s", i % 4 == 0 ? "  " : "", tl_feature_name(bit), yes ? "yes" : "no");
    printf("%s", last ? "\n" : yes ? "   " : "    ");
  }

  printf("\nisa\n");
  printf("  cpu best       %s\n", tl_isa_name(c->isa_max));
  if (!strcmp(cap_source, "none")) printf("  cap            none (every path up to %s)\n", tl_isa_name(in->isa_cap));
  else printf("  cap            %s (from %s)\n", tl_isa_name(in->isa_cap), cap_source);
  printf("  in use         %s\n", tl_isa_name(in->isa));
  printf("  paths          ");
  for (int i = 0; i < TL_ISA_COUNT; i++)
    printf("%s%s%s", i ? " < " : "", tl_isa_name((tl_isa)i), tl_info_level_used(in, i) ? "*" : "");
  printf("   (* = used)\n");
  printf("  amx permission %s\n", tl_info_amx_state(in));

  printf("\ncontext\n");
  printf("  threads        %d\n", in->threads);
  printf("  vmem budget    %s per thread (%zu bytes)\n", tl_info_bytes(b1, sizeof b1, (long long)in->vmem_bytes),
         in->vmem_bytes);
  printf("  l1 budget      %s per thread (%zu bytes)\n", tl_info_bytes(b1, sizeof b1, (long long)in->l1_bytes),
         in->l1_bytes);
  if (in->spin_us < 0) printf("  spin           never (workers sleep at once)\n");
  else printf("  spin           %d us\n", in->spin_us);
  printf("  interpret      %s\n", in->interpret ? "yes (TILEC_INTERPRET)" : "no");
  printf("  cache dir      %s\n", in->cache_dir);
  if (warning && *warning) printf("\nwarning: %s\n", warning);
}

/* Prints the context info as one JSON object. */
static void tl_info_print_json(const tl_ctx_info *in, const char *cap_source, const char *warning) {
  const tl_cpu_info *c = &in->cpu;
  printf("{\n  \"version\": ");
  tl_json_string(stdout, TILEC_VERSION);
  printf(",\n  \"cpu\": {\n    \"vendor\": ");
  tl_json_string(stdout, c->vendor);
  printf(",\n    \"brand\": ");
  tl_json_string(stdout, c->brand);
  printf(",\n    \"family\": %u,\n    \"model\": %u,\n    \"stepping\": %u,\n", c->family, c->model, c->stepping);
  printf("    \"features\": {");
  for (int i = 0; i < TL_FEATURE_COUNT; i++) {
    uint32_t bit = 1u << i;
    printf("%s", i ? ", " : "");
    tl_json_string(stdout, tl_feature_name(bit));
    printf(": %s", (c->features & bit) ? "true" : "false");
  }
  printf("},\n    \"features_mask\": %u,\n", c->features);
  printf("    \"isa_max\": ");
  tl_json_string(stdout, tl_isa_name(c->isa_max));
  printf(",\n    \"cpus_online\": %d,\n    \"cpus_allowed\": %d,\n", c->cpus_online, c->cpus_allowed);
  printf("    \"l1d_bytes\": %lld,\n    \"l2_bytes\": %lld,\n    \"l3_bytes\": %lld\n  },\n",
         (long long)c->l1d_bytes, (long long)c->l2_bytes, (long long)c->l3_bytes);
  printf("  \"isa\": ");
  tl_json_string(stdout, tl_isa_name(in->isa));
  printf(",\n  \"isa_cap\": ");
  tl_json_string(stdout, tl_isa_name(in->isa_cap));
  printf(",\n  \"isa_cap_source\": ");
  tl_json_string(stdout, cap_source);
  printf(",\n  \"isa_paths\": [");
  for (int i = 0; i < TL_ISA_COUNT; i++) {
    printf("%s{\"name\": ", i ? ", " : "");
    tl_json_string(stdout, tl_isa_name((tl_isa)i));
    printf(", \"used\": %s}", tl_info_level_used(in, i) ? "true" : "false");
  }
  printf("],\n");
  printf("  \"threads\": %d,\n  \"vmem_bytes\": %zu,\n  \"l1_bytes\": %zu,\n  \"spin_us\": %d,\n", in->threads,
         in->vmem_bytes, in->l1_bytes, in->spin_us);
  printf("  \"interpret\": %s,\n  \"amx_state\": ", in->interpret ? "true" : "false");
  tl_json_string(stdout, tl_info_amx_key(in));
  printf(",\n  \"cache_dir\": ");
  tl_json_string(stdout, in->cache_dir);
  printf(",\n  \"warning\": ");
  tl_json_string(stdout, warning ? warning : "");
  printf("\n}\n");
}

/* `tilec info`: parse flags, make a context, print what it runs on. argv[0] is "info". */
int tl_cmd_info(int argc, char **argv) {
  tl_info_args a;
  int rc = tl_info_parse(argc, argv, &a);
  if (rc != TL_EXIT_OK) return rc;

  tl_ctx_opts opts;
  memset(&opts, 0, sizeof opts);
  opts.isa = a.isa; /* NULL: the library reads TILEC_ISA */
  opts.threads = a.threads;
  tl_ctx *ctx = NULL;
  tl_status s = tl_ctx_new(&opts, &ctx);
  if (s != TL_OK) {
    /* TL_ERR_INVALID comes from what the user gave (a flag or TILEC_ISA): a usage error. */
    if (s == TL_ERR_INVALID) return tl_tool_usage_error(TL_CMD, "%s", tl_last_error());
    return tl_tool_fail(TL_CMD, "%s: %s", tl_status_name(s), tl_last_error());
  }
  tl_ctx_info in;
  s = tl_ctx_info_get(ctx, &in);
  if (s != TL_OK) {
    rc = tl_tool_fail(TL_CMD, "%s: %s", tl_status_name(s), tl_ctx_error(ctx));
    goto out;
  }
  const char *warning = tl_ctx_warning(ctx);
  if (a.json) tl_info_print_json(&in, tl_info_cap_source(&a), warning);
  else tl_info_print_text(&in, tl_info_cap_source(&a), warning);
  rc = TL_EXIT_OK;
out:
  tl_ctx_free(ctx);
  return rc;
}
