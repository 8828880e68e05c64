/* test_probe.c — tl_machine_probe: argument checks, one full probe (units and levels plausible,
 * cache written), the cache read back fast and unchanged, force, corrupt and foreign cache files
 * (warning, then measured again), a disturbed probe (cached, with a warning on every read), an
 * ISA-capped context (the scalar unit only), the cache file's writer and reader on their own
 * (exact round trip; garbage of every kind refused), and allocation failures. Every probe after
 * the first uses the quick mode (tl_machine_probe_opts, probe_impl.h) so the whole file stays
 * well under a minute; all probes write to a temporary cache dir. Peaks are compared with
 * 1-thread figures, which other work on a shared machine disturbs least. */
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "roofline/probe_impl.h"
#include "test_util.h"

static char tl_test_dir[256];

/* Counts progress notes; remembers whether one said the cache was read. */
typedef struct note_log {
  int notes, cache_read, measured;
} note_log;

static void note_cb(const char *note, void *arg) {
  note_log *l = arg;
  l->notes++;
  if (!strncmp(note, "read the probe cache", 20)) l->cache_read = 1;
  if (strstr(note, "L1 ")) l->measured = 1;
  if (getenv("TEST_PROBE_VERBOSE")) fprintf(stderr, "    %s\n", note);
}

/* A context on tl_test_dir, with an optional ISA cap. */
static tl_ctx *new_ctx(const char *isa) {
  tl_ctx_opts o = {.cache_dir = tl_test_dir, .isa = isa};
  tl_ctx *ctx = NULL;
  if (tl_ctx_new(&o, &ctx) != TL_OK) fprintf(stderr, "tl_ctx_new: %s\n", tl_last_error());
  return ctx;
}

static const tl_compute_unit *find_unit(const tl_machine *m, const char *name) {
  for (int i = 0; i < m->nunits; i++)
    if (!strcmp(m->units[i].name, name)) return &m->units[i];
  return NULL;
}

static const tl_mem_level *find_level(const tl_machine *m, const char *name) {
  for (int i = 0; i < m->nlevels; i++)
    if (!strcmp(m->levels[i].name, name)) return &m->levels[i];
  return NULL;
}

/* The cache file of a machine probed with ctx. */
static void cache_path(const tl_machine *m, char *buf, size_t n) {
  snprintf(buf, n, "%s/machine-%s.json", tl_test_dir, m->cpu_key);
}

/* 1 when two machines hold the same numbers and strings. */
static int same_machine(const tl_machine *a, const tl_machine *b) {
  if (strcmp(a->name, b->name) || strcmp(a->description, b->description) || strcmp(a->cpu_key, b->cpu_key) ||
      a->cores != b->cores || a->measured != b->measured || a->nunits != b->nunits || a->nlevels != b->nlevels)
    return 0;
  for (int i = 0; i < a->nunits; i++) {
    const tl_compute_unit *x = &a->units[i], *y = &b->units[i];
    if (strcmp(x->name, y->name) || x->dtype != y->dtype || x->peak != y->peak || x->peak_1t != y->peak_1t ||
        x->spread != y->spread || strcmp(x->source, y->source))
      return 0;
  }
  for (int i = 0; i < a->nlevels; i++) {
    const tl_mem_level *x = &a->levels[i], *y = &b->levels[i];
    if (strcmp(x->name, y->name) || x->capacity != y->capacity || x->per_core != y->per_core ||
        x->read_bw != y->read_bw || x->write_bw != y->write_bw || x->copy_bw != y->copy_bw ||
        x->nt_copy_bw != y->nt_copy_bw || x->read_bw_1t != y->read_bw_1t || x->write_bw_1t != y->write_bw_1t ||
        x->copy_bw_1t != y->copy_bw_1t || x->nt_copy_bw_1t != y->nt_copy_bw_1t || x->spread != y->spread ||
        strcmp(x->source, y->source))
      return 0;
  }
  return 1;
}

static void test_bad_args(void) {
  tl_machine m;
  CHECK(tl_machine_probe(NULL, 0, NULL, NULL, &m) == TL_ERR_INVALID, "NULL ctx");
  tl_ctx *ctx = new_ctx(NULL);
  REQUIRE(ctx, "ctx");
  CHECK(tl_machine_probe(ctx, 0, NULL, NULL, NULL) == TL_ERR_INVALID, "NULL out");
  CHECK(strstr(tl_ctx_error(ctx), "out") != NULL, "message names out: %s", tl_ctx_error(ctx));
  tl_ctx_free(ctx);
}

/* The full probe (the public entry), its plausibility, then the cache read back. */
static void test_full_probe_and_cache(void) {
  tl_ctx *ctx = new_ctx(NULL);
  REQUIRE(ctx, "ctx");
  tl_machine m, m2;
  note_log log = {0};
  double t0 = tl_probe_now();
  tl_status s = tl_machine_probe(ctx, 1, note_cb, &log, &m);
  double full_s = tl_probe_now() - t0;
  REQUIRE(s == TL_OK, "probe: %s", tl_ctx_error(ctx));
  tl_ctx_info in; /* after the probe: a refused AMX request lowers the ISA */
  tl_ctx_info_get(ctx, &in);
  fprintf(stderr, "    full probe: %.1f s, %d notes; warning: '%s'\n", full_s, log.notes, tl_ctx_warning(ctx));
  CHECK(full_s < 40, "the full probe takes %.1f s (budget about 30 s)", full_s);
  CHECK(log.measured && !log.cache_read, "measured (force)");
  CHECK(m.measured == 1 && m.cores == in.threads && !strcmp(m.name, "host"), "host, %d cores", m.cores);
  CHECK(m.cpu_key[0] && strstr(m.cpu_key, tl_isa_name(in.isa)), "key names the ISA: %s", m.cpu_key);

  /* units: every one positive; scalar always; the vector units as the CPU and cap allow */
  for (int i = 0; i < m.nunits; i++)
    CHECK(m.units[i].peak > 0 && m.units[i].peak_1t > 0 && m.units[i].spread >= 0 && m.units[i].source[0],
          "unit %s: peak %g, 1t %g", m.units[i].name, m.units[i].peak, m.units[i].peak_1t);
  const tl_compute_unit *sc = find_unit(&m, "scalar"), *a2 = find_unit(&m, "avx2-fma"), *a5 = find_unit(&m, "avx512-fma");
  REQUIRE(sc, "scalar unit present");
  CHECK(sc->dtype == TL_F32, "scalar is f32");
  CHECK((a2 != NULL) == (in.isa >= TL_ISA_AVX2), "avx2-fma iff the ISA allows it");
  CHECK((a5 != NULL) == (in.isa >= TL_ISA_AVX512), "avx512-fma iff the ISA allows it");
  CHECK((find_unit(&m, "avx512-bf16") != NULL) == (in.isa >= TL_ISA_AVX512BF16), "avx512-bf16 iff allowed");
  CHECK((find_unit(&m, "avx512-vnni") != NULL) == (in.isa >= TL_ISA_AVX512VNNI), "avx512-vnni iff allowed");
  CHECK((find_unit(&m, "avx2-vnni") != NULL) == (in.isa >= TL_ISA_AVX2VNNI && (in.cpu.features & TL_FEAT_AVXVNNI)),
        "avx2-vnni iff allowed and on the CPU");
  CHECK((find_unit(&m, "amx-bf16") != NULL) == (in.isa >= TL_ISA_AMX), "amx-bf16 iff AMX is in use");
#ifdef __OPTIMIZE__ /* an unoptimized (Debug, sanitizer) build measures its own -O0 kernels: no order to check */
  if (a2) CHECK(a2->peak_1t > 2 * sc->peak_1t, "avx2 FMA %g > 2 x scalar %g (1 thread)", a2->peak_1t, sc->peak_1t);
  /* On Zen 4 a 512-bit FMA is two 256-bit halves: AVX-512 only matches AVX2 there (docs/probe.md). */
  if (a2 && a5) CHECK(a5->peak_1t > 0.8 * a2->peak_1t, "avx512 FMA %g >= ~avx2 FMA %g (1 thread)", a5->peak_1t, a2->peak_1t);
#endif

  /* levels: L1, L2, L3, DRAM; bandwidth falls and capacity grows going down */
  const tl_mem_level *l1 = find_level(&m, "L1"), *l2 = find_level(&m, "L2"), *l3 = find_level(&m, "L3"),
                     *dram = find_level(&m, "DRAM");
  REQUIRE(l1 && l2 && dram, "L1, L2 and DRAM present");
  CHECK(&m.levels[m.nlevels - 1] == dram && dram->capacity == 0, "DRAM last, unbounded");
  for (int i = 0; i < m.nlevels; i++) {
    const tl_mem_level *l = &m.levels[i];
    CHECK(l->read_bw > 0 && l->write_bw > 0 && l->copy_bw > 0 && l->read_bw_1t > 0 && l->write_bw_1t > 0 &&
              l->copy_bw_1t > 0,
          "level %s bandwidths positive", l->name);
    if (in.isa >= TL_ISA_AVX2) CHECK(l->nt_copy_bw > 0 && l->nt_copy_bw_1t > 0, "level %s nt copy measured", l->name);
    if (i > 0 && i < m.nlevels - 1) CHECK(l->capacity > m.levels[i - 1].capacity, "capacities grow at %s", l->name);
  }
  CHECK(l1->per_core && l2->per_core && !dram->per_core, "L1, L2 per core");
  REQUIRE(l3, "an L3 level (found by the sweep or from CPUID)");
  CHECK(l3->capacity >= (1 << 20) && l3->capacity <= ((int64_t)2 << 30), "LLC %lld within [1 MiB, 2 GiB]",
        (long long)l3->capacity);
#ifdef __OPTIMIZE__
  /* The scalar read kernel is load-bound (the compiler vectorizes its sums to 16-byte loads at the
   * baseline), near L2's rate: there L1 and L2 come out within noise of each other (a CI run saw
   * 109 vs 110 GB/s), so only the vector kernels are held to the order (docs/probe.md). */
  if (in.isa >= TL_ISA_AVX2)
    CHECK(l1->read_bw_1t > l2->read_bw_1t, "L1 %g > L2 %g (read, 1 thread)", l1->read_bw_1t, l2->read_bw_1t);
  else
    CHECK(l1->read_bw_1t > 0.7 * l2->read_bw_1t, "L1 %g > 0.7 x L2 %g (read, 1 thread, scalar kernel)",
          l1->read_bw_1t, l2->read_bw_1t);
  CHECK(l2->read_bw_1t > dram->read_bw_1t, "L2 %g > DRAM %g (read, 1 thread)", l2->read_bw_1t, dram->read_bw_1t);
  CHECK(strstr(l3->source, "sweep") != NULL, "LLC from the sweep: %s", l3->source);
  CHECK(l3->read_bw_1t > dram->read_bw_1t, "L3 %g > DRAM %g (read, 1 thread)", l3->read_bw_1t, dram->read_bw_1t);
#endif

  /* the cache: written, then read back fast with the same numbers */
  char path[600];
  cache_path(&m, path, sizeof path);
  struct stat sb;
  CHECK(stat(path, &sb) == 0 && sb.st_size > 100, "cache file %s written", path);
  log = (note_log){0};
  t0 = tl_probe_now();
  s = tl_machine_probe(ctx, 0, note_cb, &log, &m2);
  double cached_s = tl_probe_now() - t0;
  CHECK(s == TL_OK, "cached probe: %s", tl_ctx_error(ctx));
  CHECK(cached_s < 0.5, "read from the cache in %.3f s", cached_s);
  CHECK(log.cache_read && !log.measured, "the note says the cache was read");
  CHECK(same_machine(&m, &m2), "the cache gives back the same numbers");
  tl_ctx_free(ctx);
}

/* force measures again (quick mode), and the new result replaces the cache. */
static void test_force(void) {
  tl_ctx *ctx = new_ctx(NULL);
  REQUIRE(ctx, "ctx");
  tl_probe_opts q = {.quick = 1};
  tl_machine m, m2;
  note_log log = {0};
  double t0 = tl_probe_now();
  REQUIRE(tl_machine_probe_opts(ctx, &q, 1, note_cb, &log, &m) == TL_OK, "%s", tl_ctx_error(ctx));
  fprintf(stderr, "    quick probe: %.1f s\n", tl_probe_now() - t0);
  CHECK(log.measured && !log.cache_read, "force measured");
  CHECK(strstr(m.description, "quick") != NULL, "quick probes say so: %s", m.description);
  log = (note_log){0};
  REQUIRE(tl_machine_probe(ctx, 0, note_cb, &log, &m2) == TL_OK, "%s", tl_ctx_error(ctx));
  CHECK(log.cache_read && same_machine(&m, &m2), "the forced result is the one cached");
  tl_ctx_free(ctx);
}

/* A corrupt, truncated or foreign cache file: a warning, then a new measurement. */
static void test_corrupt_cache(void) {
  tl_ctx *ctx = new_ctx(NULL);
  REQUIRE(ctx, "ctx");
  tl_probe_opts q = {.quick = 1};
  tl_machine m;
  REQUIRE(tl_machine_probe_opts(ctx, &q, 0, NULL, NULL, &m) == TL_OK, "%s", tl_ctx_error(ctx));
  char path[600];
  cache_path(&m, path, sizeof path);
  FILE *f = fopen(path, "w");
  REQUIRE(f, "open %s", path);
  fputs("{\"format\": \"tilec-machine-2\", \"units\": [{\"name\": \"x\", \"peak\": 1e", f);
  fclose(f);
  note_log log = {0};
  tl_status s = tl_machine_probe_opts(ctx, &q, 0, note_cb, &log, &m);
  CHECK(s == TL_OK, "a corrupt cache is no failure: %s", tl_ctx_error(ctx));
  CHECK(strstr(tl_ctx_warning(ctx), "ignored") && strstr(tl_ctx_warning(ctx), path), "warning: %s",
        tl_ctx_warning(ctx));
  CHECK(log.measured && !log.cache_read, "measured again");
  tl_machine back;
  char why[256];
  CHECK(tl_probe_cache_read(path, m.cpu_key, &back, why, sizeof why) == 1 && same_machine(&m, &back),
        "and the cache is good again");
  /* an unreadable cache path (a directory where the file should be) */
  CHECK(unlink(path) == 0 && mkdir(path, 0755) == 0, "make %s a directory", path);
  s = tl_machine_probe_opts(ctx, &q, 0, NULL, NULL, &m);
  CHECK(s == TL_OK, "an unreadable, unwritable cache is no failure: %s", tl_ctx_error(ctx));
  CHECK(strstr(tl_ctx_warning(ctx), "not cached") != NULL, "warning: %s", tl_ctx_warning(ctx));
  rmdir(path);
  tl_ctx_free(ctx);
}

/* A probe whose every run of some measurement was disturbed (forced here by opts.disturb) says so
 * in its description and warning; it is cached, and every read of that cache warns again. */
static void test_disturbed(void) {
  tl_ctx *ctx = new_ctx(NULL);
  REQUIRE(ctx, "ctx");
  tl_probe_opts qd = {.quick = 1, .disturb = 1};
  tl_machine m, m2;
  char path[600];
  note_log log = {0};
  REQUIRE(tl_machine_probe_opts(ctx, &qd, 1, note_cb, &log, &m) == TL_OK, "%s", tl_ctx_error(ctx));
  CHECK(log.measured && strstr(m.description, " disturbed"), "measured, and the description says so: %s",
        m.description);
  CHECK(strstr(tl_ctx_warning(ctx), "probe disturbed") && strstr(tl_ctx_warning(ctx), "tilec probe --force"),
        "warning: %s", tl_ctx_warning(ctx));
  for (int i = 0; i < m.nunits; i++)
    CHECK(m.units[i].peak > 0 && strstr(m.units[i].source, "disturbed"), "unit %s: peak %g, source '%s'",
          m.units[i].name, m.units[i].peak, m.units[i].source);
  cache_path(&m, path, sizeof path);
  log = (note_log){0};
  REQUIRE(tl_machine_probe(ctx, 0, note_cb, &log, &m2) == TL_OK, "%s", tl_ctx_error(ctx));
  CHECK(log.cache_read && !log.measured && same_machine(&m, &m2), "cached as measured");
  const char *w = tl_ctx_warning(ctx);
  CHECK(strstr(w, "was disturbed by other work (") && strstr(w, " measurements; ") && strstr(w, path) &&
            strstr(w, "tilec probe --force"),
        "the cache read warns: %s", w);
  /* an undisturbed probe replaces it, and reading that back warns of nothing */
  tl_probe_opts q = {.quick = 1};
  REQUIRE(tl_machine_probe_opts(ctx, &q, 1, NULL, NULL, &m) == TL_OK, "%s", tl_ctx_error(ctx));
  tl_ctx_free(ctx); /* a context keeps its last warning: a fresh one for the read */
  ctx = new_ctx(NULL);
  REQUIRE(ctx, "ctx");
  REQUIRE(tl_machine_probe(ctx, 0, NULL, NULL, &m2) == TL_OK, "%s", tl_ctx_error(ctx));
  CHECK(!!strstr(m2.description, " disturbed") == !!strstr(tl_ctx_warning(ctx), "was disturbed"),
        "a warning exactly when the cached probe was disturbed: '%s' / '%s'", m2.description, tl_ctx_warning(ctx));
  tl_ctx_free(ctx);
}

/* TILEC_ISA=scalar (as opts.isa): the scalar unit only, its own cache file. */
static void test_scalar_ctx(void) {
  tl_ctx *ctx = new_ctx("scalar");
  REQUIRE(ctx, "ctx");
  tl_probe_opts q = {.quick = 1};
  tl_machine m;
  REQUIRE(tl_machine_probe_opts(ctx, &q, 1, NULL, NULL, &m) == TL_OK, "%s", tl_ctx_error(ctx));
  CHECK(m.nunits == 1 && !strcmp(m.units[0].name, "scalar") && m.units[0].peak > 0, "only the scalar unit (%d units)",
        m.nunits);
  CHECK(strstr(m.cpu_key, "scalar") != NULL, "key names the cap: %s", m.cpu_key);
  CHECK(m.nlevels >= 3 && m.levels[0].read_bw > 0 && m.levels[0].nt_copy_bw == 0,
        "levels measured with the portable kernels (no streaming stores)");
  tl_ctx_free(ctx);
}

/* The cache file on its own: exact round trip, then garbage of every kind refused. */
static void test_cache_file(void) {
  tl_machine m;
  memset(&m, 0, sizeof m);
  snprintf(m.name, sizeof m.name, "host");
  snprintf(m.description, sizeof m.description, "quote \" backslash \\ tab \t newline \n end");
  snprintf(m.cpu_key, sizeof m.cpu_key, "Test-1-2-3-avx2-t2-0123456789abcdef");
  m.cores = 2;
  m.measured = 1;
  m.nunits = 2;
  m.units[0] = (tl_compute_unit){.name = "scalar", .dtype = TL_F32, .peak = 1.0 / 3.0 * 1e10, .peak_1t = 5e9, .spread = 0.01};
  m.units[1] = (tl_compute_unit){.name = "avx2-fma", .dtype = TL_F32, .peak = 2.3456789012345678e11, .peak_1t = 1e-300 * 1e300};
  snprintf(m.units[1].source, sizeof m.units[1].source, "probe: median");
  m.nlevels = 2;
  m.levels[0] = (tl_mem_level){.name = "L1", .capacity = 49152, .per_core = 1, .read_bw = 1.5e11, .write_bw = 1e11,
                               .copy_bw = 3e11, .nt_copy_bw = 0, .read_bw_1t = 7.7e10, .write_bw_1t = 1,
                               .copy_bw_1t = 2, .nt_copy_bw_1t = 3, .spread = 0.125};
  m.levels[1] = (tl_mem_level){.name = "DRAM", .capacity = 0, .read_bw = 2e10};
  char path[600], why[256];
  snprintf(path, sizeof path, "%s/sub/dir/m.json", tl_test_dir);
  REQUIRE(tl_probe_cache_write(path, &m, why, sizeof why) == 0, "write: %s", why);
  tl_machine back;
  memset(&back, 0x5a, sizeof back);
  CHECK(tl_probe_cache_read(path, m.cpu_key, &back, why, sizeof why) == 1, "read: %s", why);
  CHECK(same_machine(&m, &back), "exact round trip (doubles, escapes, parents created)");
  CHECK(tl_probe_cache_read(path, "another-key", &back, why, sizeof why) == -1 && strstr(why, "key"),
        "another key refused: %s", why);
  char missing[600];
  snprintf(missing, sizeof missing, "%s/none.json", tl_test_dir);
  CHECK(tl_probe_cache_read(missing, m.cpu_key, &back, why, sizeof why) == 0, "a missing file is 0");

  /* garbage: each must give -1 and leave *out alone */
  static const char *const bad[] = {
      "",
      "garbage",
      "{",
      "[]",
      "{\"format\": \"tilec-machine-9\"}",
      "{\"format\": \"tilec-machine-2\"}",
      "{\"format\": \"tilec-machine-2\", \"cpu_key\": \"K\", \"cores\": 2, \"units\": [], \"levels\": []}",
      "{\"format\": \"tilec-machine-2\", \"cpu_key\": \"K\", \"cores\": 2, \"units\": [{\"name\": \"s\", \"dtype\": "
      "\"f32\", \"peak\": -1}], \"levels\": [{\"name\": \"L1\", \"read_bw\": 1e9}]}",
      "{\"format\": \"tilec-machine-2\", \"cpu_key\": \"K\", \"cores\": 2, \"units\": [{\"name\": \"s\", \"dtype\": "
      "\"f99\", \"peak\": 1e9}], \"levels\": [{\"name\": \"L1\", \"read_bw\": 1e9}]}",
      "{\"format\": \"tilec-machine-2\", \"cpu_key\": \"K\", \"cores\": 2, \"units\": [{\"name\": \"s\", \"dtype\": "
      "\"f32\", \"peak\": 1e999}], \"levels\": [{\"name\": \"L1\", \"read_bw\": 1e9}]}",
      "{\"format\": \"tilec-machine-2\", \"cpu_key\": \"K\", \"cores\": 2, \"units\": [{\"name\": \"s\", \"dtype\": "
      "\"f32\", \"peak\": nan}], \"levels\": [{\"name\": \"L1\", \"read_bw\": 1e9}]}",
      "{\"format\": \"tilec-machine-2\", \"cpu_key\": \"K\", \"cores\": 0, \"units\": [{\"name\": \"s\", \"dtype\": "
      "\"f32\", \"peak\": 1e9}], \"levels\": [{\"name\": \"L1\", \"read_bw\": 1e9}]}",
      "{\"format\": \"tilec-machine-2\", \"cpu_key\": \"K\", \"cores\": 2, \"units\": [{\"name\": \"s\", \"dtype\": "
      "\"f32\", \"peak\": 1e9}], \"levels\": [{\"name\": \"L1\", \"read_bw\": 1e9, \"capacity\": 1.5}]}",
      "{\"format\": \"tilec-machine-2\", \"cpu_key\": \"K\", \"cores\": 2, \"units\": [{\"name\": \"s\", \"dtype\": "
      "\"f32\", \"peak\": 1e9}], \"levels\": [{\"name\": \"L1\", \"read_bw\": 1e9}]} trailing",
      "{\"format\": \"tilec-machine-2\", \"x\": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
      "{\"format\": \"tilec-machine-2\", \"cpu_key\": \"Kxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
      "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}",
      /* implausible numbers (edited or damaged files: bounds of 1e306 s, 60-digit peaks) */
      "{\"format\": \"tilec-machine-2\", \"cpu_key\": \"K\", \"cores\": 2, \"units\": [{\"name\": \"s\", \"dtype\": "
      "\"f32\", \"peak\": 1e308}], \"levels\": [{\"name\": \"L1\", \"read_bw\": 1e9}]}",
      "{\"format\": \"tilec-machine-2\", \"cpu_key\": \"K\", \"cores\": 2, \"units\": [{\"name\": \"s\", \"dtype\": "
      "\"f32\", \"peak\": 1e9, \"peak_1t\": 1e19}], \"levels\": [{\"name\": \"L1\", \"read_bw\": 1e9}]}",
      "{\"format\": \"tilec-machine-2\", \"cpu_key\": \"K\", \"cores\": 2, \"units\": [{\"name\": \"s\", \"dtype\": "
      "\"f32\", \"peak\": 1e9}], \"levels\": [{\"name\": \"L1\", \"read_bw\": 1e-300}]}",
      "{\"format\": \"tilec-machine-2\", \"cpu_key\": \"K\", \"cores\": 2, \"units\": [{\"name\": \"s\", \"dtype\": "
      "\"f32\", \"peak\": 1e9}], \"levels\": [{\"name\": \"L1\", \"read_bw\": 1e9, \"write_bw\": 1e16}]}",
      "{\"format\": \"tilec-machine-2\", \"cpu_key\": \"K\", \"cores\": 2, \"units\": [{\"name\": \"s\", \"dtype\": "
      "\"f32\", \"peak\": 1e9}], \"levels\": [{\"name\": \"L1\", \"read_bw\": 1e9, \"capacity\": 9e18}]}",
      "{\"format\": \"tilec-machine-2\", \"cpu_key\": \"K\", \"cores\": 2, \"units\": [{\"name\": \"s\", \"dtype\": "
      "\"f32\", \"peak\": 1e9}], \"levels\": [{\"name\": \"D\", \"read_bw\": 1e9, \"capacity\": 0}, {\"name\": "
      "\"L1\", \"read_bw\": 1e9, \"capacity\": 32768}]}",
      "{\"format\": \"tilec-machine-2\", \"cpu_key\": \"K\", \"cores\": 2, \"units\": [{\"name\": \"s\", \"dtype\": "
      "\"f32\", \"peak\": 1e9}], \"levels\": [{\"name\": \"L2\", \"read_bw\": 1e9, \"capacity\": 1048576}, {\"name\": "
      "\"L1\", \"read_bw\": 1e9, \"capacity\": 32768}, {\"name\": \"D\", \"read_bw\": 1e9}]}",
      "{\"format\": \"tilec-machine-2\", \"cpu_key\": \"K\\q\"}",
      "{\"format\": \"tilec-machine-2\", \"cpu_key\": \"K\\u00zz\"}",
      "{\"format\": \"tilec-machine-2\", \"cpu_key\": \"K",
  };
  for (size_t i = 0; i < TL_ARRAY_LEN(bad); i++) {
    FILE *f = fopen(path, "w");
    REQUIRE(f, "open");
    fputs(bad[i], f);
    fclose(f);
    memset(&back, 0x5a, sizeof back);
    unsigned char before = ((unsigned char *)&back)[7];
    why[0] = 0;
    CHECK(tl_probe_cache_read(path, "K", &back, why, sizeof why) == -1 && why[0], "garbage %zu refused: %s", i, why);
    CHECK(((unsigned char *)&back)[7] == before && back.nunits == (int)0x5a5a5a5a, "garbage %zu: out untouched", i);
  }
  /* the well-formed minimal file is accepted (the garbage above differs from it in one way each) */
  FILE *f = fopen(path, "w");
  REQUIRE(f, "open");
  fputs("{\"format\": \"tilec-machine-2\", \"cpu_key\": \"K\", \"cores\": 2, \"extra\": {\"a\": [1, true, null]}, "
        "\"units\": [{\"name\": \"s\", \"dtype\": \"f32\", \"peak\": 1e9}], \"levels\": [{\"name\": \"L1\", "
        "\"read_bw\": 1e9}]}",
        f);
  fclose(f);
  CHECK(tl_probe_cache_read(path, "K", &back, why, sizeof why) == 1, "minimal file accepted: %s", why);
  /* -0 (a hand-edited file) is accepted as 0, not kept negative: written back it must read again */
  f = fopen(path, "w");
  REQUIRE(f, "open");
  fputs("{\"format\": \"tilec-machine-2\", \"cpu_key\": \"K\", \"cores\": 2, \"units\": [{\"name\": \"s\", "
        "\"dtype\": \"f32\", \"peak\": 1e9, \"peak_1t\": -0, \"spread\": -0.0}], \"levels\": [{\"name\": \"L1\", "
        "\"read_bw\": 1e9, \"write_bw\": -0e5}]}",
        f);
  fclose(f);
  why[0] = 0;
  CHECK(tl_probe_cache_read(path, "K", &back, why, sizeof why) == 1 && !signbit(back.units[0].peak_1t) &&
            !signbit(back.units[0].spread) && !signbit(back.levels[0].write_bw) && back.levels[0].write_bw == 0,
        "-0 reads as +0: %s", why);
  /* a many-core part whose L2s together outsize its shared L3 (64 x 2 MiB > 100 MiB): in order */
  f = fopen(path, "w");
  REQUIRE(f, "open");
  fputs("{\"format\": \"tilec-machine-2\", \"cpu_key\": \"K\", \"cores\": 64, \"units\": [{\"name\": \"s\", "
        "\"dtype\": \"f32\", \"peak\": 1e12}], \"levels\": [{\"name\": \"L1\", \"read_bw\": 1e13, \"capacity\": 49152, "
        "\"per_core\": 1}, {\"name\": \"L2\", \"read_bw\": 5e12, \"capacity\": 2097152, \"per_core\": 1}, {\"name\": "
        "\"L3\", \"read_bw\": 1e12, \"capacity\": 104857600}, {\"name\": \"DRAM\", \"read_bw\": 2e11}]}",
        f);
  fclose(f);
  CHECK(tl_probe_cache_read(path, "K", &back, why, sizeof why) == 1, "many-core levels accepted: %s", why);
  /* binary junk with NUL bytes */
  f = fopen(path, "wb");
  REQUIRE(f, "open");
  test_rng r = {12345};
  for (int i = 0; i < 4096; i++) fputc((int)(test_rng_u64(&r) & 255), f);
  fclose(f);
  CHECK(tl_probe_cache_read(path, "K", &back, why, sizeof why) == -1, "binary junk refused: %s", why);
  unlink(path);
}

/* Allocation failures: TL_ERR_NOMEM with a message, never a crash (ASan checks for leaks). */
static void test_nomem(void) {
  tl_ctx *ctx = new_ctx(NULL);
  REQUIRE(ctx, "ctx");
  tl_probe_opts q = {.quick = 1};
  tl_machine m;
  for (int n = 1; n <= 2; n++) {
    tl_faultsim_fail_at(n);
    tl_status s = tl_machine_probe_opts(ctx, &q, 1, NULL, NULL, &m);
    tl_faultsim_fail_at(0);
    CHECK(s == TL_ERR_NOMEM && strstr(tl_ctx_error(ctx), "memory"), "allocation %d fails: %s: %s", n,
          tl_status_name(s), tl_ctx_error(ctx));
  }
  tl_faultsim_fail_at(3); /* the bandwidth buffer, after the compute units */
  tl_status s = tl_machine_probe_opts(ctx, &q, 1, NULL, NULL, &m);
  tl_faultsim_fail_at(0);
  CHECK(s == TL_ERR_NOMEM && strstr(tl_ctx_error(ctx), "buffer"), "buffer allocation fails: %s: %s",
        tl_status_name(s), tl_ctx_error(ctx));
  tl_ctx_free(ctx);
}

int main(void) {
  snprintf(tl_test_dir, sizeof tl_test_dir, "/tmp/tilec-test-probe-XXXXXX");
  if (!mkdtemp(tl_test_dir)) {
    perror("mkdtemp");
    return 1;
  }
  double t0 = tl_probe_now();
  RUN(test_bad_args);
  RUN(test_cache_file);
  RUN(test_full_probe_and_cache);
  RUN(test_force);
  RUN(test_corrupt_cache);
  RUN(test_disturbed);
  RUN(test_scalar_ctx);
  RUN(test_nomem);
  fprintf(stderr, "    total %.1f s\n", tl_probe_now() - t0);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tl_test_dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tl_test_dir);
  return test_summary("roofline_probe");
}
