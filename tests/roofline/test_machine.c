/* test_machine.c — machine presets, the unit choice for a dtype and the roofline bound on
 * hand-built machines and costs with known answers (compute bound, memory bound, a working set
 * that fits a middle level, per-operand attribution, unknown bandwidths, zero flops, misuse). */
#include <string.h>

#include "test_util.h"
#include "tilec.h"

static int close_to(double a, double b) { return fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b)) + 1e-300; }

/* Every preset loads with units, levels (main memory last) and sources. */
static void test_presets_load(void) {
  int n = 0;
  for (int i = 0; tl_machine_preset_name(i); i++, n++) {
    const char *name = tl_machine_preset_name(i);
    tl_machine m;
    memset(&m, 0x5a, sizeof m);
    REQUIRE(tl_machine_preset(name, &m) == TL_OK, "%s: %s", name, tl_last_error());
    CHECK(!strcmp(m.name, name), "name %s vs %s", m.name, name);
    CHECK(m.description[0] != 0, "%s: no description", name);
    CHECK(m.cores >= 1, "%s: cores %d", name, m.cores);
    CHECK(m.nunits >= 2 && m.nunits <= TL_MAX_UNITS, "%s: %d units", name, m.nunits);
    CHECK(m.nlevels >= 2 && m.nlevels <= TL_MAX_LEVELS, "%s: %d levels", name, m.nlevels);
    CHECK(m.measured == 0, "%s: a preset is not measured", name);
    for (int u = 0; u < m.nunits; u++) {
      CHECK(m.units[u].peak > 1e12, "%s unit %d: peak %g", name, u, m.units[u].peak);
      CHECK(strlen(m.units[u].source) > 10, "%s unit %d: source '%s'", name, u, m.units[u].source);
      CHECK(m.units[u].name[0] != 0, "%s unit %d: no name", name, u);
    }
    for (int l = 0; l < m.nlevels; l++) {
      CHECK(m.levels[l].capacity > 0, "%s level %d: capacity", name, l);
      CHECK(strlen(m.levels[l].source) > 10, "%s level %d: source '%s'", name, l, m.levels[l].source);
      /* a bandwidth is published, an estimate that says how, or 0 (unknown) and said so */
      CHECK(m.levels[l].read_bw > 0 ? 1 : strstr(m.levels[l].source, "unknown") != NULL, "%s level %d: '%s'", name, l,
            m.levels[l].source);
    }
    const tl_mem_level *last = &m.levels[m.nlevels - 1];
    CHECK(!strcmp(last->name, "HBM") && !last->per_core && last->read_bw > 1e11, "%s: main memory last", name);
    CHECK(tl_machine_unit_for(&m, TL_BF16) >= 0, "%s: no bf16 unit", name);
    CHECK(tl_machine_unit_for(&m, TL_I8) >= 0, "%s: no int8 unit", name);
  }
  CHECK(n == 6, "%d presets", n);
  CHECK(tl_machine_preset_name(-1) == NULL, "negative index");
  CHECK(tl_machine_preset_name(n) == NULL, "past the end");
}

/* Spot checks of datasheet numbers. */
static void test_preset_numbers(void) {
  tl_machine m;
  REQUIRE(tl_machine_preset("tpu-v5e", &m) == TL_OK, "%s", tl_last_error());
  int u = tl_machine_unit_for(&m, TL_BF16);
  CHECK(u >= 0 && close_to(m.units[u].peak, 197e12), "v5e bf16");
  CHECK(close_to(m.levels[m.nlevels - 1].read_bw, 819e9), "v5e HBM");
  CHECK(!strcmp(m.levels[0].name, "VMEM") && m.levels[0].per_core && m.levels[0].capacity == 128ll << 20, "v5e VMEM");
  REQUIRE(tl_machine_preset("H100", &m) == TL_OK, "case-insensitive: %s", tl_last_error());
  u = tl_machine_unit_for(&m, TL_BF16);
  CHECK(u >= 0 && close_to(m.units[u].peak, 989.4e12), "h100 bf16 dense");
  CHECK(strstr(m.units[u].source, "dense") != NULL, "h100 says dense");
  u = tl_machine_unit_for(&m, TL_F32);
  CHECK(u >= 0 && !strcmp(m.units[u].name, "cuda-core"), "h100 f32 on CUDA cores");
  CHECK(m.cores == 132, "h100 SMs");
  CHECK(close_to(m.levels[m.nlevels - 1].read_bw, 3.35e12), "h100 HBM");
  REQUIRE(tl_machine_preset("h200", &m) == TL_OK, "%s", tl_last_error());
  CHECK(close_to(m.levels[m.nlevels - 1].read_bw, 4.8e12), "h200 HBM");
}

static void test_preset_unknown(void) {
  tl_machine m;
  memset(&m, 0x77, sizeof m);
  tl_machine before = m;
  CHECK(tl_machine_preset("tpu-v9", &m) == TL_ERR_INVALID, "unknown name");
  const char *e = tl_last_error();
  CHECK(strstr(e, "tpu-v9") && strstr(e, "tpu-v5e") && strstr(e, "h200") && strstr(e, "a100"), "message: %s", e);
  CHECK(!memcmp(&m, &before, sizeof m), "out untouched");
  CHECK(tl_machine_preset(NULL, &m) == TL_ERR_INVALID, "NULL name");
  CHECK(tl_machine_preset("a100", NULL) == TL_ERR_INVALID, "NULL out");
  CHECK(strstr(tl_last_error(), "NULL") != NULL, "says NULL: %s", tl_last_error());
}

/* Adds a unit to a hand-built machine. */
static void add_unit(tl_machine *m, const char *name, tl_dtype dt, double peak) {
  tl_compute_unit *u = &m->units[m->nunits++];
  snprintf(u->name, sizeof u->name, "%s", name);
  u->dtype = dt;
  u->peak = peak;
  snprintf(u->source, sizeof u->source, "test");
}

/* Adds a level to a hand-built machine. */
static void add_level(tl_machine *m, const char *name, int64_t cap, int per_core, double bw) {
  tl_mem_level *l = &m->levels[m->nlevels++];
  snprintf(l->name, sizeof l->name, "%s", name);
  l->capacity = cap;
  l->per_core = per_core;
  l->read_bw = bw;
  snprintf(l->source, sizeof l->source, "test");
}

static void test_unit_for(void) {
  tl_machine m;
  memset(&m, 0, sizeof m);
  CHECK(tl_machine_unit_for(&m, TL_F32) == -1, "no units");
  CHECK(tl_machine_unit_for(NULL, TL_F32) == -1, "NULL machine");
  add_unit(&m, "fma", TL_F32, 100);
  add_unit(&m, "fma-fast", TL_F32, 300);
  add_unit(&m, "vnni", TL_I8, 1000);
  add_unit(&m, "amx-int8", TL_I8, 9000);
  CHECK(tl_machine_unit_for(&m, TL_F32) == 1, "fastest f32");
  CHECK(tl_machine_unit_for(&m, TL_I8) == 3, "fastest i8");
  CHECK(tl_machine_unit_for(&m, TL_U8) == 3, "u8 runs on i8 units");
  CHECK(tl_machine_unit_for(&m, TL_BF16) == 1, "bf16 falls back to the fastest f32 unit");
  CHECK(tl_machine_unit_for(&m, TL_F16) == 1, "f16 falls back to f32");
  CHECK(tl_machine_unit_for(&m, TL_I32) == -1, "i32: no fallback");
  CHECK(tl_machine_unit_for(&m, TL_DTYPE_INVALID) == -1, "invalid dtype");
  add_unit(&m, "amx-bf16", TL_BF16, 5000);
  CHECK(tl_machine_unit_for(&m, TL_BF16) == 4, "bf16 unit preferred over f32");
  CHECK(tl_machine_unit_for(&m, TL_F16) == 1, "f16 does not use the bf16 unit");

  tl_machine t;
  memset(&t, 0, sizeof t);
  add_unit(&t, "mxu", TL_BF16, 100);
  CHECK(tl_machine_unit_for(&t, TL_F32) == -1, "f32 does not fall back to bf16");
  CHECK(tl_machine_unit_for(&t, TL_I8) == -1, "i8 without i8 or f32 units");
  add_unit(&t, "mxu2", TL_BF16, 100);
  CHECK(tl_machine_unit_for(&t, TL_BF16) == 0, "ties: the first");
}

/* A CPU-like machine: L1 32 KiB/core at 400, L2 1 MiB/core at 200, L3 8 MiB at 100, DRAM at 10
 * (bytes/s), 2 cores, f32 unit at 1000 op/s. */
static tl_machine cpu_machine(void) {
  tl_machine m;
  memset(&m, 0, sizeof m);
  snprintf(m.name, sizeof m.name, "test-cpu");
  m.cores = 2;
  add_unit(&m, "fma", TL_F32, 1000);
  add_level(&m, "L1", 32 << 10, 1, 400);
  add_level(&m, "L2", 1 << 20, 1, 200);
  add_level(&m, "L3", 8 << 20, 0, 100);
  add_level(&m, "DRAM", 0, 0, 10);
  return m;
}

static void test_bound_compute(void) {
  tl_machine m = cpu_machine();
  tl_cost c;
  memset(&c, 0, sizeof c);
  c.flops = 1000000;
  c.operand_bytes[0] = 1000, c.operand_bytes[1] = 1000;
  int64_t tb[2] = {1000, 1000}; /* 2000 bytes: fits L1 (2 x 32 KiB) */
  tl_bound b;
  REQUIRE(tl_roofline_bound_cost(&m, &c, 2, tb, TL_F32, &b) == TL_OK, "%s", tl_last_error());
  CHECK(b.unit == 0, "unit %d", b.unit);
  CHECK(close_to(b.compute_s, 1000.0), "compute_s %g", b.compute_s);
  CHECK(b.level_bytes[0] == 2000 && b.level_bytes[1] == 0 && b.level_bytes[3] == 0, "all from L1");
  CHECK(close_to(b.level_s[0], 5.0), "L1 time %g", b.level_s[0]);
  CHECK(b.limiter == -1 && close_to(b.seconds, 1000.0), "compute bound: limiter %d, %g s", b.limiter, b.seconds);
  CHECK(close_to(b.intensity, 500.0), "intensity %g", b.intensity);
}

static void test_bound_memory(void) {
  tl_machine m = cpu_machine();
  tl_cost c;
  memset(&c, 0, sizeof c);
  c.flops = 1000;
  c.operand_bytes[0] = 100000000, c.operand_bytes[1] = 100000000;
  int64_t tb[2] = {100000000, 100000000}; /* 200 MB: nothing but DRAM */
  tl_bound b;
  REQUIRE(tl_roofline_bound_cost(&m, &c, 2, tb, TL_F32, &b) == TL_OK, "%s", tl_last_error());
  CHECK(b.level_bytes[3] == 200000000, "from DRAM: %lld", (long long)b.level_bytes[3]);
  CHECK(b.limiter == 3 && close_to(b.seconds, 2e7), "DRAM bound: limiter %d, %g", b.limiter, b.seconds);
  CHECK(close_to(b.compute_s, 1.0), "compute %g", b.compute_s);
  CHECK(close_to(b.intensity, 1000.0 / 2e8), "intensity %g", b.intensity);
}

/* 3 MiB: more than L2 x 2 cores (2 MiB), fits L3 (8 MiB): everything from L3. */
static void test_bound_middle_level(void) {
  tl_machine m = cpu_machine();
  tl_cost c;
  memset(&c, 0, sizeof c);
  c.operand_bytes[0] = 4 << 20, c.operand_bytes[1] = 2 << 20; /* bytes moved may exceed the tensor (re-reads) */
  int64_t tb[2] = {2 << 20, 1 << 20};
  tl_bound b;
  REQUIRE(tl_roofline_bound_cost(&m, &c, 2, tb, TL_F32, &b) == TL_OK, "%s", tl_last_error());
  CHECK(b.level_bytes[2] == 6 << 20 && b.level_bytes[0] == 0 && b.level_bytes[1] == 0 && b.level_bytes[3] == 0,
        "from L3: %lld %lld %lld %lld", (long long)b.level_bytes[0], (long long)b.level_bytes[1],
        (long long)b.level_bytes[2], (long long)b.level_bytes[3]);
  CHECK(b.limiter == 2 && close_to(b.seconds, (6 << 20) / 100.0), "L3 bound");
  CHECK(b.unit == -1 && b.compute_s == 0, "zero flops: no unit");
  /* per-core capacity: 1.5 MiB fits L2 with 2 cores (2 MiB), not with 1 */
  tb[0] = 1 << 20, tb[1] = 1 << 19;
  REQUIRE(tl_roofline_bound_cost(&m, &c, 2, tb, TL_F32, &b) == TL_OK, "%s", tl_last_error());
  CHECK(b.level_bytes[1] == 6 << 20, "L2 x cores");
  m.cores = 1;
  REQUIRE(tl_roofline_bound_cost(&m, &c, 2, tb, TL_F32, &b) == TL_OK, "%s", tl_last_error());
  CHECK(b.level_bytes[2] == 6 << 20, "L3 with one core");
}

/* Working set 20 MiB fits no cache: a small operand (512 KiB) is served from L2, a 6 MiB one from
 * L3, a 14 MiB one from DRAM. */
static void test_bound_per_operand(void) {
  tl_machine m = cpu_machine();
  tl_cost c;
  memset(&c, 0, sizeof c);
  c.flops = 10;
  c.operand_bytes[0] = 1000, c.operand_bytes[1] = 2000, c.operand_bytes[2] = 4000;
  int64_t tb[3] = {512 << 10, 6 << 20, 14 << 20};
  tl_bound b;
  REQUIRE(tl_roofline_bound_cost(&m, &c, 3, tb, TL_F32, &b) == TL_OK, "%s", tl_last_error());
  CHECK(b.level_bytes[0] == 0 && b.level_bytes[1] == 1000 && b.level_bytes[2] == 2000 && b.level_bytes[3] == 4000,
        "per operand: %lld %lld %lld %lld", (long long)b.level_bytes[0], (long long)b.level_bytes[1],
        (long long)b.level_bytes[2], (long long)b.level_bytes[3]);
  CHECK(close_to(b.level_s[1], 5.0) && close_to(b.level_s[2], 20.0) && close_to(b.level_s[3], 400.0), "times");
  CHECK(b.limiter == 3 && close_to(b.seconds, 400.0), "DRAM sets it");
  CHECK(close_to(b.intensity, 10.0 / 7000.0), "intensity over all levels");
  /* a main memory with a capacity still serves what fits nowhere */
  m.levels[3].capacity = 1 << 20;
  REQUIRE(tl_roofline_bound_cost(&m, &c, 3, tb, TL_F32, &b) == TL_OK, "%s", tl_last_error());
  CHECK(b.level_bytes[3] == 4000, "last level takes the rest");
}

/* A level with unknown bandwidth takes its bytes but no time. */
static void test_bound_unknown_bw(void) {
  tl_machine m = cpu_machine();
  m.levels[2].read_bw = 0; /* L3 unknown */
  tl_cost c;
  memset(&c, 0, sizeof c);
  c.flops = 5000;
  c.operand_bytes[0] = 3 << 20;
  int64_t tb[1] = {3 << 20};
  tl_bound b;
  REQUIRE(tl_roofline_bound_cost(&m, &c, 1, tb, TL_F32, &b) == TL_OK, "%s", tl_last_error());
  CHECK(b.level_bytes[2] == 3 << 20 && b.level_s[2] == 0, "L3 bytes, no time");
  CHECK(b.limiter == -1 && close_to(b.seconds, 5.0), "compute sets it: %d %g", b.limiter, b.seconds);
  c.flops = 0;
  REQUIRE(tl_roofline_bound_cost(&m, &c, 1, tb, TL_F32, &b) == TL_OK, "%s", tl_last_error());
  CHECK(b.seconds == 0 && b.limiter == -1 && b.unit == -1 && b.intensity == 0, "nothing known: 0");
}

/* No unit for the dtype: the compute term is 0, memory sets the bound. */
static void test_bound_no_unit(void) {
  tl_machine m = cpu_machine();
  tl_cost c;
  memset(&c, 0, sizeof c);
  c.flops = 1 << 30;
  c.operand_bytes[0] = 100;
  int64_t tb[1] = {100};
  tl_bound b;
  REQUIRE(tl_roofline_bound_cost(&m, &c, 1, tb, TL_I32, &b) == TL_OK, "%s", tl_last_error());
  CHECK(b.unit == -1 && b.compute_s == 0 && b.limiter == 0, "no i32 unit: %d %g %d", b.unit, b.compute_s, b.limiter);
  /* equal terms: compute wins the tie */
  tl_machine e;
  memset(&e, 0, sizeof e);
  e.cores = 1;
  add_unit(&e, "u", TL_F32, 100);
  add_level(&e, "MEM", 0, 0, 100);
  c.flops = 100;
  REQUIRE(tl_roofline_bound_cost(&e, &c, 1, tb, TL_F32, &b) == TL_OK, "%s", tl_last_error());
  CHECK(b.limiter == -1 && close_to(b.seconds, 1.0), "tie: compute");
}

static void test_bound_misuse(void) {
  tl_machine m = cpu_machine();
  tl_cost c;
  memset(&c, 0, sizeof c);
  int64_t tb[1] = {10};
  tl_bound b, before;
  memset(&b, 0x33, sizeof b);
  before = b;
  CHECK(tl_roofline_bound_cost(NULL, &c, 1, tb, TL_F32, &b) == TL_ERR_INVALID, "NULL machine");
  CHECK(strstr(tl_last_error(), "machine") != NULL, "%s", tl_last_error());
  CHECK(tl_roofline_bound_cost(&m, NULL, 1, tb, TL_F32, &b) == TL_ERR_INVALID, "NULL cost");
  CHECK(tl_roofline_bound_cost(&m, &c, 1, NULL, TL_F32, &b) == TL_ERR_INVALID, "NULL tensor bytes");
  CHECK(tl_roofline_bound_cost(&m, &c, 1, tb, TL_F32, NULL) == TL_ERR_INVALID, "NULL out");
  CHECK(tl_roofline_bound_cost(&m, &c, -1, tb, TL_F32, &b) == TL_ERR_INVALID, "n < 0");
  CHECK(tl_roofline_bound_cost(&m, &c, TL_MAX_OPERANDS + 1, tb, TL_F32, &b) == TL_ERR_INVALID, "n too big");
  tb[0] = -1;
  CHECK(tl_roofline_bound_cost(&m, &c, 1, tb, TL_F32, &b) == TL_ERR_INVALID, "negative tensor bytes");
  tb[0] = 10;
  c.flops = -5;
  CHECK(tl_roofline_bound_cost(&m, &c, 1, tb, TL_F32, &b) == TL_ERR_INVALID, "negative flops");
  c.flops = 0;
  tl_machine empty = m;
  empty.nlevels = 0;
  CHECK(tl_roofline_bound_cost(&empty, &c, 1, tb, TL_F32, &b) == TL_ERR_INVALID, "no levels");
  CHECK(strstr(tl_last_error(), "levels") != NULL, "%s", tl_last_error());
  CHECK(!memcmp(&b, &before, sizeof b), "out untouched on refusal");
  CHECK(tl_roofline_bound_cost(&m, &c, 0, NULL, TL_F32, &b) == TL_OK, "no operands is fine");
  CHECK(b.seconds == 0 && b.intensity == 0, "empty");
  CHECK(tl_roofline_bound(NULL, NULL, TL_F32, &b) == TL_ERR_INVALID, "bound: NULL machine");
  CHECK(tl_roofline_bound(&m, NULL, TL_F32, &b) == TL_ERR_INVALID, "bound: NULL plan");
}

/* tl_roofline_bound on a real plan agrees with tl_roofline_bound_cost on its cost. */
static void body_copy(const tl_prog *p, tl_ref *refs, void *user) {
  (void)p, (void)user;
  for (int64_t i = 0; i < refs[0].valid[0]; i++)
    for (int64_t j = 0; j < refs[0].valid[1]; j++)
      ((float *)refs[1].data)[i * refs[1].stride[0] + j] = ((float *)refs[0].data)[i * refs[0].stride[0] + j];
}

static void test_bound_plan(void) {
  static float xs[256 * 64], ys[256 * 64];
  int64_t shape[2] = {256, 64};
  tl_tensor x = tl_tensor_make(xs, TL_F32, 2, shape), y = tl_tensor_make(ys, TL_F32, 2, shape);
  tl_blockspec spec = {.ndim = 2, .block = {32, 0}, .map = "i -> i, 0"};
  tl_kernel k = {.name = "copy", .body = body_copy, .grid_ndim = 1, .grid = {8}, .sem = {TL_PARALLEL},
                 .n_in = 1, .in = &spec, .n_out = 1, .out = &spec, .flops = 12345};
  tl_ctx_opts o = {.threads = 2};
  tl_ctx *ctx = NULL;
  REQUIRE(tl_ctx_new(&o, &ctx) == TL_OK, "%s", tl_last_error());
  tl_plan *pl = NULL;
  if (tl_plan_new(ctx, &k, &x, &y, &pl) != TL_OK) {
    CHECK(0, "plan: %s", tl_ctx_error(ctx));
    tl_ctx_free(ctx);
    return;
  }
  tl_machine m = cpu_machine();
  tl_cost c;
  tl_bound b1, b2;
  int64_t tb[2] = {256 * 64 * 4, 256 * 64 * 4};
  CHECK(tl_plan_cost(pl, &c) == TL_OK, "cost");
  CHECK(tl_roofline_bound(&m, pl, TL_F32, &b1) == TL_OK, "%s", tl_last_error());
  CHECK(tl_roofline_bound_cost(&m, &c, 2, tb, TL_F32, &b2) == TL_OK, "%s", tl_last_error());
  CHECK(!memcmp(&b1, &b2, sizeof b1), "plan and cost agree");
  CHECK(b1.level_bytes[1] == 2 * 256 * 64 * 4, "128 KiB: L2 (L1 x 2 is 64 KiB): %lld", (long long)b1.level_bytes[1]);
  CHECK(c.flops == 12345 && b1.unit == 0, "flops from the kernel");
  tl_ctx_free(ctx);
}

/* Every preset bounds a large bf16 matmul-like cost sensibly: compute bound, and a streaming
 * cost is HBM bound. */
static void test_bound_presets(void) {
  for (int i = 0; tl_machine_preset_name(i); i++) {
    tl_machine m;
    REQUIRE(tl_machine_preset(tl_machine_preset_name(i), &m) == TL_OK, "%s", tl_last_error());
    tl_cost c;
    memset(&c, 0, sizeof c);
    int64_t n = 8192;
    c.flops = 2 * n * n * n;
    c.operand_bytes[0] = c.operand_bytes[1] = c.operand_bytes[2] = n * n * 2;
    int64_t tb[3] = {n * n * 2, n * n * 2, n * n * 2};
    tl_bound b;
    REQUIRE(tl_roofline_bound_cost(&m, &c, 3, tb, TL_BF16, &b) == TL_OK, "%s", tl_last_error());
    CHECK(b.limiter == -1 && b.unit >= 0, "%s: 8192^3 bf16 matmul is compute bound", m.name);
    c.flops = n * n;
    int64_t big[3] = {4 * n * n * 2, 4 * n * n * 2, 4 * n * n * 2};
    REQUIRE(tl_roofline_bound_cost(&m, &c, 3, big, TL_F32, &b) == TL_OK, "%s", tl_last_error());
    CHECK(b.limiter == m.nlevels - 1, "%s: streaming 1.5 GiB is HBM bound (limiter %d)", m.name, b.limiter);
  }
}

int main(void) {
  RUN(test_presets_load);
  RUN(test_preset_numbers);
  RUN(test_preset_unknown);
  RUN(test_unit_for);
  RUN(test_bound_compute);
  RUN(test_bound_memory);
  RUN(test_bound_middle_level);
  RUN(test_bound_per_operand);
  RUN(test_bound_unknown_bw);
  RUN(test_bound_no_unit);
  RUN(test_bound_misuse);
  RUN(test_bound_plan);
  RUN(test_bound_presets);
  return test_summary("roofline_machine");
}
