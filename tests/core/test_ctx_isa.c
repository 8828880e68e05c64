/* test_ctx_isa.c — the ISA cap as a context applies it: opts.isa for every name, TILEC_ISA when
 * opts.isa is NULL, opts.isa over TILEC_ISA, and unknown names refused with TL_ERR_INVALID and a
 * message. A context reports isa = min(cap, cpu max) and the cap it was asked for. */
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "tilec.h"

static const char *const isa_names[] = {"scalar", "avx2", "avx2vnni", "avx512", "avx512vnni", "avx512bf16", "amx"};

/* The level a context runs for cap a on a CPU whose best is b: min(a, b), avx2vnni lowered to
 * avx2 on a CPU without AVX-VNNI (its side branch). */
static tl_cpu_info g_cpu;
static tl_isa isa_min(tl_isa a, tl_isa b) {
  const tl_isa m = a < b ? a : b;
  return m == TL_ISA_AVX2VNNI && !(g_cpu.features & TL_FEAT_AVXVNNI) ? TL_ISA_AVX2 : m;
}

/* Creates a context with opts (may be NULL), returns its info in *in; 0 on failure. */
static int ctx_info(const tl_ctx_opts *opts, tl_ctx_info *in) {
  tl_ctx *ctx = NULL;
  tl_status s = tl_ctx_new(opts, &ctx);
  CHECK(s == TL_OK, "tl_ctx_new: %s: %s", tl_status_name(s), tl_last_error());
  if (s != TL_OK) return 0;
  s = tl_ctx_info_get(ctx, in);
  CHECK(s == TL_OK, "tl_ctx_info_get: %s", tl_status_name(s));
  tl_ctx_free(ctx);
  return s == TL_OK;
}

/* opts.isa = every cap name: isa = min(cap, cpu max). */
static void test_opts_isa(void) {
  tl_cpu_info cpu;
  tl_cpu_detect(&cpu);
  unsetenv("TILEC_ISA");
  for (int i = 0; i < TL_ISA_COUNT; i++) {
    tl_ctx_opts o = {.threads = 1, .isa = isa_names[i]};
    tl_ctx_info in;
    if (!ctx_info(&o, &in)) continue;
    CHECK(in.isa_cap == (tl_isa)i, "cap %s reported as %s", isa_names[i], tl_isa_name(in.isa_cap));
    CHECK(in.isa == isa_min((tl_isa)i, cpu.isa_max), "cap %s on a %s CPU: isa %s", isa_names[i],
          tl_isa_name(cpu.isa_max), tl_isa_name(in.isa));
    CHECK(in.cpu.isa_max == cpu.isa_max && in.cpu.features == cpu.features, "cpu info differs from tl_cpu_detect");
    CHECK(in.amx_state == 0 || in.amx_state == -1, "amx_state %d before any AMX plan", in.amx_state);
  }
  /* No cap: NULL opts, NULL isa and "" all mean the CPU's best. */
  tl_ctx_info in;
  if (ctx_info(NULL, &in))
    CHECK(in.isa == cpu.isa_max && in.isa_cap == TL_ISA_AMX, "NULL opts: isa %s cap %s", tl_isa_name(in.isa),
          tl_isa_name(in.isa_cap));
  tl_ctx_opts o = {.threads = 1, .isa = ""};
  if (ctx_info(&o, &in))
    CHECK(in.isa == cpu.isa_max && in.isa_cap == TL_ISA_AMX, "isa \"\": isa %s", tl_isa_name(in.isa));
}

/* TILEC_ISA is honoured when opts is NULL or opts.isa is NULL; opts.isa wins over it. */
static void test_env_isa(void) {
  tl_cpu_info cpu;
  tl_cpu_detect(&cpu);
  tl_ctx_info in;
  setenv("TILEC_ISA", "scalar", 1);
  if (ctx_info(NULL, &in))
    CHECK(in.isa == TL_ISA_SCALAR && in.isa_cap == TL_ISA_SCALAR, "TILEC_ISA=scalar, NULL opts: isa %s",
          tl_isa_name(in.isa));
  tl_ctx_opts o = {.threads = 1};
  if (ctx_info(&o, &in)) CHECK(in.isa == TL_ISA_SCALAR, "TILEC_ISA=scalar, opts.isa NULL: isa %s", tl_isa_name(in.isa));
  o.isa = "avx2";
  if (ctx_info(&o, &in))
    CHECK(in.isa == isa_min(TL_ISA_AVX2, cpu.isa_max) && in.isa_cap == TL_ISA_AVX2,
          "opts.isa avx2 over TILEC_ISA=scalar: isa %s", tl_isa_name(in.isa));
  for (int i = 0; i < TL_ISA_COUNT; i++) {
    setenv("TILEC_ISA", isa_names[i], 1);
    if (ctx_info(NULL, &in))
      CHECK(in.isa == isa_min((tl_isa)i, cpu.isa_max), "TILEC_ISA=%s: isa %s", isa_names[i], tl_isa_name(in.isa));
  }
  setenv("TILEC_ISA", "", 1);
  if (ctx_info(NULL, &in)) CHECK(in.isa == cpu.isa_max, "TILEC_ISA empty: isa %s", tl_isa_name(in.isa));
  unsetenv("TILEC_ISA");
}

/* Unknown names: TL_ERR_INVALID, *out NULL, a message naming the value and the valid names. */
static void test_bogus_isa(void) {
  unsetenv("TILEC_ISA");
  tl_ctx_opts o = {.threads = 1, .isa = "bogus"};
  tl_ctx *ctx = (tl_ctx *)&o; /* not NULL: tl_ctx_new must clear it */
  tl_status s = tl_ctx_new(&o, &ctx);
  CHECK(s == TL_ERR_INVALID, "opts.isa bogus: %s", tl_status_name(s));
  CHECK(ctx == NULL, "*out not NULL after a failure");
  CHECK(strstr(tl_last_error(), "bogus") != NULL, "message '%s' does not name the value", tl_last_error());
  CHECK(strstr(tl_last_error(), "avx512bf16") != NULL, "message '%s' does not list the names", tl_last_error());
  if (s == TL_OK) tl_ctx_free(ctx);

  setenv("TILEC_ISA", "bogus", 1);
  ctx = NULL;
  s = tl_ctx_new(NULL, &ctx);
  CHECK(s == TL_ERR_INVALID, "TILEC_ISA=bogus: %s", tl_status_name(s));
  CHECK(ctx == NULL, "*out not NULL after a failure");
  CHECK(strstr(tl_last_error(), "TILEC_ISA") && strstr(tl_last_error(), "bogus"), "message '%s'", tl_last_error());
  if (s == TL_OK) tl_ctx_free(ctx);
  /* opts.isa valid: TILEC_ISA is not even read. */
  o.isa = "scalar";
  ctx = NULL;
  s = tl_ctx_new(&o, &ctx);
  CHECK(s == TL_OK, "opts.isa scalar with TILEC_ISA=bogus: %s: %s", tl_status_name(s), tl_last_error());
  tl_ctx_free(ctx);
  unsetenv("TILEC_ISA");
}

int main(void) {
  tl_cpu_detect(&g_cpu);
  RUN(test_opts_isa);
  RUN(test_env_isa);
  RUN(test_bogus_isa);
  return test_summary("core_ctx_isa");
}
