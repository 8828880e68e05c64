/* test_cpu.c — CPU detection (cpu.c) and the ISA helpers (isa.c): detection is self-consistent,
 * stable and agrees with /proc/cpuinfo; ISA levels from synthetic feature masks; the ISA cap for
 * every name against every CPU level; names round-trip; AMX permission answers consistently. */
#include <pthread.h>
#include <string.h>
#include <strings.h>

#include "core/core_impl.h"
#include "test_util.h"

static const char *const isa_names[] = {"scalar", "avx2", "avx2vnni", "avx512", "avx512vnni", "avx512bf16", "amx"};

#define AVX512_ANY                                                                               \
  (TL_FEAT_AVX512F | TL_FEAT_AVX512BW | TL_FEAT_AVX512VL | TL_FEAT_AVX512DQ | TL_FEAT_AVX512BF16 | \
   TL_FEAT_AVX512VNNI)
#define F_AVX2 (TL_FEAT_SSE42 | TL_FEAT_AVX | TL_FEAT_AVX2 | TL_FEAT_FMA | TL_FEAT_F16C)
#define F_AVX512 (F_AVX2 | TL_FEAT_AVX512F | TL_FEAT_AVX512BW | TL_FEAT_AVX512VL | TL_FEAT_AVX512DQ)
#define F_AVX512BF16 (F_AVX512 | TL_FEAT_AVX512BF16 | TL_FEAT_AVX512VNNI)
#define F_AMX (F_AVX512BF16 | TL_FEAT_AMX_TILE | TL_FEAT_AMX_BF16 | TL_FEAT_AMX_INT8)

/* Detection is self-consistent and plausible. */
static void test_detect_consistent(void) {
  tl_cpu_info a, b;
  memset(&a, 0xAB, sizeof a);
  tl_cpu_detect(&a);
  tl_cpu_detect(&b);
  CHECK(memcmp(&a, &b, sizeof a) == 0, "two calls differ");
  tl_cpu_detect(NULL); /* no-op, must not crash */

  CHECK(memchr(a.vendor, '\0', sizeof a.vendor) != NULL, "vendor not terminated");
  CHECK(memchr(a.brand, '\0', sizeof a.brand) != NULL, "brand not terminated");
  CHECK(strlen(a.vendor) == 12 || strlen(a.vendor) == 0, "vendor '%s' length %zu", a.vendor, strlen(a.vendor));
  size_t bl = strlen(a.brand);
  CHECK(bl == 0 || (a.brand[0] != ' ' && a.brand[bl - 1] != ' '), "brand '%s' not trimmed", a.brand);
  CHECK(strstr(a.brand, "  ") == NULL, "brand '%s' has a run of spaces", a.brand);

  CHECK((a.features >> TL_FEATURE_COUNT) == 0, "unknown feature bits 0x%x", a.features);
  if (a.features & AVX512_ANY)
    CHECK((a.features & TL_FEAT_AVX) != 0, "AVX-512 features 0x%x without AVX state", a.features);
  if (a.features & TL_FEAT_AVX2) CHECK((a.features & TL_FEAT_AVX) != 0, "AVX2 without AVX");
  if (a.features & (TL_FEAT_AVX512BW | TL_FEAT_AVX512VL | TL_FEAT_AVX512DQ | TL_FEAT_AVX512BF16))
    CHECK((a.features & TL_FEAT_AVX512F) != 0, "AVX-512 extension without AVX512F");
  CHECK(a.isa_max == tl_isa_from_features(a.features), "isa_max %s vs features -> %s",
        tl_isa_name(a.isa_max), tl_isa_name(tl_isa_from_features(a.features)));
  CHECK((unsigned)a.isa_max < TL_ISA_COUNT, "isa_max %d", (int)a.isa_max);
#if defined(__x86_64__)
  /* x86-64 Linux machines that build this all have AVX2 today; SSE4.2 at least. */
  CHECK((a.features & TL_FEAT_SSE42) != 0, "no SSE4.2 on x86-64?");
#endif

  if (a.l1d_bytes) CHECK(a.l1d_bytes >= 4096 && a.l1d_bytes <= (1 << 20), "l1d %lld", (long long)a.l1d_bytes);
  if (a.l2_bytes)
    CHECK(a.l2_bytes >= (64 << 10) && a.l2_bytes <= (64ll << 20), "l2 %lld", (long long)a.l2_bytes);
  if (a.l3_bytes)
    CHECK(a.l3_bytes >= (256 << 10) && a.l3_bytes <= (16ll << 30), "l3 %lld", (long long)a.l3_bytes);
  if (a.l1d_bytes && a.l2_bytes) CHECK(a.l2_bytes > a.l1d_bytes, "l2 <= l1d");
  CHECK(a.cpus_online >= 1, "cpus_online %d", a.cpus_online);
  CHECK(a.cpus_allowed >= 1, "cpus_allowed %d", a.cpus_allowed);
  if (a.family) CHECK(a.family >= 5, "family %u", a.family);
  fprintf(stderr, "    %s / %s / family %u model %u stepping %u / features 0x%x / isa_max %s\n", a.vendor,
          a.brand, a.family, a.model, a.stepping, a.features, tl_isa_name(a.isa_max));
  fprintf(stderr, "    l1d %lld l2 %lld l3 %lld / cpus online %d allowed %d\n", (long long)a.l1d_bytes,
          (long long)a.l2_bytes, (long long)a.l3_bytes, a.cpus_online, a.cpus_allowed);
}

static void *detect_thread(void *arg) {
  tl_cpu_detect((tl_cpu_info *)arg);
  return NULL;
}

/* Concurrent first calls all see the same answer (pthread_once). */
static void test_detect_threads(void) {
  enum { N = 8 };
  pthread_t th[N];
  tl_cpu_info info[N], ref;
  int started[N];
  for (int i = 0; i < N; i++) started[i] = pthread_create(&th[i], NULL, detect_thread, &info[i]) == 0;
  for (int i = 0; i < N; i++)
    if (started[i]) pthread_join(th[i], NULL);
  tl_cpu_detect(&ref);
  for (int i = 0; i < N; i++)
    if (started[i]) CHECK(memcmp(&info[i], &ref, sizeof ref) == 0, "thread %d saw a different answer", i);
}

/* Features agree with the kernel's flags in /proc/cpuinfo (which are also masked by XCR0). */
static void test_proc_cpuinfo(void) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) {
    fprintf(stderr, "    /proc/cpuinfo not readable: skipped\n");
    return;
  }
  static char line[8192];
  char flags[8192] = "";
  while (fgets(line, sizeof line, f)) {
    if (!strncmp(line, "flags", 5)) {
      char *colon = strchr(line, ':');
      if (colon) snprintf(flags, sizeof flags, " %s", colon + 1);
      break;
    }
  }
  fclose(f);
  if (!flags[0]) {
    fprintf(stderr, "    no flags line in /proc/cpuinfo: skipped\n");
    return;
  }
  for (char *p = flags; *p; p++)
    if (*p == '\n' || *p == '\t') *p = ' ';
  size_t fl = strlen(flags);
  if (fl + 1 < sizeof flags) strcat(flags, " ");

  static const struct {
    const char *flag;
    uint32_t feat;
  } map[] = {
      {"avx2", TL_FEAT_AVX2},          {"avx512f", TL_FEAT_AVX512F},         {"avx512bw", TL_FEAT_AVX512BW},
      {"avx512vl", TL_FEAT_AVX512VL},  {"avx512dq", TL_FEAT_AVX512DQ},       {"avx512_bf16", TL_FEAT_AVX512BF16},
      {"avx512_vnni", TL_FEAT_AVX512VNNI}, {"amx_tile", TL_FEAT_AMX_TILE}, {"amx_bf16", TL_FEAT_AMX_BF16},
      {"avx_vnni", TL_FEAT_AVXVNNI},
      {"amx_int8", TL_FEAT_AMX_INT8},  {"fma", TL_FEAT_FMA},                 {"f16c", TL_FEAT_F16C},
      {"avx", TL_FEAT_AVX},            {"sse4_2", TL_FEAT_SSE42},
  };
  tl_cpu_info ci;
  tl_cpu_detect(&ci);
  for (size_t i = 0; i < TL_ARRAY_LEN(map); i++) {
    char word[64];
    snprintf(word, sizeof word, " %s ", map[i].flag);
    int in_proc = strstr(flags, word) != NULL;
    int in_ours = (ci.features & map[i].feat) != 0;
    CHECK(in_proc == in_ours, "/proc/cpuinfo says %s=%d, tl_cpu_detect says %s=%d", map[i].flag, in_proc,
          tl_feature_name(map[i].feat), in_ours);
  }
}

/* The ISA level synthetic feature masks allow. */
static void test_isa_from_features(void) {
  CHECK(tl_isa_from_features(0) == TL_ISA_SCALAR, "empty");
  CHECK(tl_isa_from_features(TL_FEAT_SSE42 | TL_FEAT_AVX) == TL_ISA_SCALAR, "avx only");
  CHECK(tl_isa_from_features(F_AVX2) == TL_ISA_AVX2, "avx2");
  CHECK(tl_isa_from_features(F_AVX2 & ~TL_FEAT_FMA) == TL_ISA_SCALAR, "avx2 without fma");
  CHECK(tl_isa_from_features(F_AVX2 & ~TL_FEAT_F16C) == TL_ISA_SCALAR, "avx2 without f16c");
  CHECK(tl_isa_from_features(F_AVX512) == TL_ISA_AVX512, "avx512");
  CHECK(tl_isa_from_features(F_AVX2 | TL_FEAT_AVXVNNI) == TL_ISA_AVX2VNNI, "avx2vnni");
  CHECK(tl_isa_from_features((F_AVX2 & ~TL_FEAT_FMA) | TL_FEAT_AVXVNNI) == TL_ISA_SCALAR, "avx-vnni without fma");
  CHECK(tl_isa_from_features(F_AVX512 | TL_FEAT_AVXVNNI) == TL_ISA_AVX512, "avx512 with avx-vnni");
  CHECK(tl_isa_from_features(F_AVX512BF16 | TL_FEAT_AVXVNNI) == TL_ISA_AVX512BF16, "avx512bf16 with avx-vnni");
  CHECK(tl_isa_usable(TL_ISA_AVX2VNNI, F_AVX512BF16) == TL_ISA_AVX2, "avx2vnni on an AVX-512 CPU without avx-vnni");
  CHECK(tl_isa_usable(TL_ISA_AVX2VNNI, F_AVX2 | TL_FEAT_AVXVNNI) == TL_ISA_AVX2VNNI, "avx2vnni usable");
  for (int l = 0; l < TL_ISA_COUNT; l++)
    if (l != TL_ISA_AVX2VNNI) CHECK(tl_isa_usable((tl_isa)l, 0) == (tl_isa)l, "usable(%s) changed", isa_names[l]);
  CHECK(tl_isa_from_features(F_AVX512 & ~TL_FEAT_AVX512DQ) == TL_ISA_AVX2, "avx512 without dq");
  CHECK(tl_isa_from_features(F_AVX512 & ~TL_FEAT_AVX512BW) == TL_ISA_AVX2, "avx512 without bw");
  CHECK(tl_isa_from_features(F_AVX512 & ~TL_FEAT_AVX512VL) == TL_ISA_AVX2, "avx512 without vl");
  CHECK(tl_isa_from_features(F_AVX512 & ~TL_FEAT_AVX2) == TL_ISA_SCALAR, "avx512 without avx2");
  CHECK(tl_isa_from_features(F_AVX512BF16) == TL_ISA_AVX512BF16, "avx512bf16");
  CHECK(tl_isa_from_features(F_AVX512BF16 & ~TL_FEAT_AVX512VNNI) == TL_ISA_AVX512, "bf16 without vnni");
  CHECK(tl_isa_from_features(F_AVX512BF16 & ~TL_FEAT_AVX512BF16) == TL_ISA_AVX512VNNI, "vnni without bf16");
  CHECK(tl_isa_from_features(F_AVX512 | TL_FEAT_AVX512VNNI) == TL_ISA_AVX512VNNI, "avx512vnni");
  CHECK(tl_isa_from_features((F_AVX512 & ~TL_FEAT_AVX512DQ) | TL_FEAT_AVX512VNNI) == TL_ISA_AVX2, "vnni without dq");
  CHECK(tl_isa_from_features(F_AMX) == TL_ISA_AMX, "amx");
  CHECK(tl_isa_from_features(F_AMX & ~TL_FEAT_AMX_INT8) == TL_ISA_AVX512BF16, "amx without int8");
  CHECK(tl_isa_from_features(F_AMX & ~TL_FEAT_AVX512BF16) == TL_ISA_AVX512VNNI, "amx without avx512bf16");
  CHECK(tl_isa_from_features(F_AMX & ~(TL_FEAT_AVX512BF16 | TL_FEAT_AVX512VNNI)) == TL_ISA_AVX512, "amx without bf16, vnni");
  CHECK(tl_isa_from_features(TL_FEAT_AMX_TILE | TL_FEAT_AMX_BF16 | TL_FEAT_AMX_INT8) == TL_ISA_SCALAR, "amx alone");
  CHECK(tl_isa_from_features(0xffffffffu) == TL_ISA_AMX, "all bits");
}

/* Every cap name against every CPU level: isa = min(cap, cpu max); NULL and "" are no cap. */
static void test_isa_resolve(void) {
  _Static_assert(TL_ARRAY_LEN(isa_names) == TL_ISA_COUNT, "test table");
  for (int c = 0; c < TL_ISA_COUNT; c++) {
    for (int m = 0; m < TL_ISA_COUNT; m++) {
      tl_isa cap = (tl_isa)99, isa = (tl_isa)99;
      char msg[256] = "junk";
      tl_status s = tl_isa_resolve(isa_names[c], (tl_isa)m, &cap, &isa, msg, sizeof msg);
      CHECK(s == TL_OK, "resolve %s on %s: %s", isa_names[c], isa_names[m], tl_status_name(s));
      CHECK(cap == (tl_isa)c, "cap %d for %s", (int)cap, isa_names[c]);
      CHECK(isa == (tl_isa)(c < m ? c : m), "cap %s on cpu %s gave %s", isa_names[c], isa_names[m],
            tl_isa_name(isa));
      CHECK(msg[0] == '\0', "message after success: '%s'", msg);
    }
  }
  for (int m = 0; m < TL_ISA_COUNT; m++) {
    tl_isa cap, isa;
    CHECK(tl_isa_resolve(NULL, (tl_isa)m, &cap, &isa, NULL, 0) == TL_OK, "NULL");
    CHECK(cap == TL_ISA_AMX && isa == (tl_isa)m, "NULL cap on %s: cap %s isa %s", isa_names[m],
          tl_isa_name(cap), tl_isa_name(isa));
    CHECK(tl_isa_resolve("", (tl_isa)m, &cap, &isa, NULL, 0) == TL_OK, "empty");
    CHECK(cap == TL_ISA_AMX && isa == (tl_isa)m, "empty cap on %s", isa_names[m]);
  }
  /* Case does not matter. */
  tl_isa cap, isa;
  CHECK(tl_isa_resolve("AVX2", TL_ISA_AMX, &cap, &isa, NULL, 0) == TL_OK && isa == TL_ISA_AVX2, "AVX2");
  /* NULL outputs are allowed. */
  CHECK(tl_isa_resolve("avx512", TL_ISA_AMX, NULL, NULL, NULL, 0) == TL_OK, "NULL outputs");

  static const char *const bad[] = {"bogus", "avx3", " avx2", "avx2 ", "amx-bf16", "avx-512", "sse"};
  for (size_t i = 0; i < TL_ARRAY_LEN(bad); i++) {
    char msg[256] = "";
    cap = (tl_isa)77;
    isa = (tl_isa)77;
    tl_status s = tl_isa_resolve(bad[i], TL_ISA_AMX, &cap, &isa, msg, sizeof msg);
    CHECK(s == TL_ERR_INVALID, "'%s' gave %s", bad[i], tl_status_name(s));
    CHECK(strstr(msg, bad[i]) != NULL, "message '%s' does not name '%s'", msg, bad[i]);
    CHECK(strstr(msg, "avx512bf16") && strstr(msg, "scalar") && strstr(msg, "avx2vnni") && strstr(msg, "avx512vnni"),
          "message '%s' does not list names", msg);
    CHECK(strstr(tl_last_error(), bad[i]) != NULL, "tl_last_error '%s'", tl_last_error());
    CHECK(cap == (tl_isa)77 && isa == (tl_isa)77, "outputs touched on failure");
  }
  /* A tiny message buffer is truncated, not overrun. */
  char small[8];
  memset(small, 'x', sizeof small);
  CHECK(tl_isa_resolve("bogus", TL_ISA_AMX, &cap, &isa, small, 4) == TL_ERR_INVALID, "small buffer");
  CHECK(small[3] == '\0' && small[4] == 'x', "small buffer overrun");
  /* A nonsense cpu_max is treated as scalar. */
  CHECK(tl_isa_resolve("amx", (tl_isa)42, &cap, &isa, NULL, 0) == TL_OK && isa == TL_ISA_SCALAR, "bad cpu_max");
}

/* tl_isa_parse / tl_isa_name round trip; unknown names refused with a message. */
static void test_isa_names(void) {
  for (int i = 0; i < TL_ISA_COUNT; i++) {
    tl_isa isa = (tl_isa)99;
    CHECK(!strcmp(tl_isa_name((tl_isa)i), isa_names[i]), "name %d: %s", i, tl_isa_name((tl_isa)i));
    CHECK(tl_isa_parse(tl_isa_name((tl_isa)i), &isa) == TL_OK && isa == (tl_isa)i, "round trip %d", i);
  }
  CHECK(!strcmp(tl_isa_name((tl_isa)TL_ISA_COUNT), "unknown"), "out of range");
  CHECK(!strcmp(tl_isa_name((tl_isa)-1), "unknown"), "negative");
  tl_isa isa = TL_ISA_AVX2;
  CHECK(tl_isa_parse("nope", &isa) == TL_ERR_INVALID, "nope");
  CHECK(isa == TL_ISA_AVX2, "output touched on failure");
  CHECK(strstr(tl_last_error(), "nope") && strstr(tl_last_error(), "amx"), "message '%s'", tl_last_error());
  CHECK(tl_isa_parse(NULL, &isa) == TL_ERR_INVALID, "NULL name");
  CHECK(tl_isa_parse("", &isa) == TL_ERR_INVALID, "empty name");
  CHECK(tl_isa_parse("avx512", NULL) == TL_OK, "NULL out");
}

/* Every feature bit has its own name; anything else is "unknown". */
static void test_feature_names(void) {
  static const char *const expect[TL_FEATURE_COUNT] = {
      "sse4.2",  "avx",        "avx2",       "fma",      "f16c",     "avx512f",  "avx512bw",
      "avx512vl", "avx512dq",  "avx512bf16", "avx512vnni", "amx-tile", "amx-bf16", "amx-int8", "avx-vnni"};
  for (int i = 0; i < TL_FEATURE_COUNT; i++) {
    const char *n = tl_feature_name(1u << i);
    CHECK(!strcmp(n, expect[i]), "bit %d: '%s' expected '%s'", i, n, expect[i]);
    for (int j = 0; j < i; j++)
      CHECK(strcmp(n, tl_feature_name(1u << j)) != 0, "bits %d and %d share '%s'", i, j, n);
  }
  CHECK(!strcmp(tl_feature_name(TL_FEAT_AVX2), "avx2"), "TL_FEAT_AVX2");
  CHECK(!strcmp(tl_feature_name(0), "unknown"), "0");
  CHECK(!strcmp(tl_feature_name(TL_FEAT_AVX | TL_FEAT_AVX2), "unknown"), "two bits");
  CHECK(!strcmp(tl_feature_name(1u << TL_FEATURE_COUNT), "unknown"), "past the table");
  CHECK(!strcmp(tl_feature_name(1u << 31), "unknown"), "bit 31");
}

/* tl_amx_request: the same answer every time; on a CPU without AMX, -1 with a message. */
static void test_amx_request(void) {
  tl_cpu_info ci;
  tl_cpu_detect(&ci);
  char m1[256] = "", m2[256] = "";
  int r1 = tl_amx_request(m1, sizeof m1);
  int r2 = tl_amx_request(m2, sizeof m2);
  CHECK(r1 == 1 || r1 == -1, "result %d", r1);
  CHECK(r1 == r2, "answers differ: %d then %d", r1, r2);
  CHECK(!strcmp(m1, m2), "messages differ: '%s' then '%s'", m1, m2);
  CHECK(tl_amx_request(NULL, 0) == r1, "NULL message buffer");
  int has_amx = (ci.features & (TL_FEAT_AMX_TILE | TL_FEAT_AMX_BF16 | TL_FEAT_AMX_INT8)) ==
                (TL_FEAT_AMX_TILE | TL_FEAT_AMX_BF16 | TL_FEAT_AMX_INT8);
  if (!has_amx) {
    CHECK(r1 == -1, "granted AMX on a CPU without it");
    CHECK(strstr(m1, "not present") != NULL, "message '%s'", m1);
  } else if (r1 == -1) {
    CHECK(m1[0] != '\0', "refused without a reason");
  } else {
    CHECK(m1[0] == '\0', "message after a grant: '%s'", m1);
  }
  fprintf(stderr, "    AMX: %s%s%s\n", r1 == 1 ? "granted" : "refused", m1[0] ? ": " : "", m1);
}

int main(void) {
  RUN(test_detect_threads); /* first: the threads race for the first detection */
  RUN(test_detect_consistent);
  RUN(test_proc_cpuinfo);
  RUN(test_isa_from_features);
  RUN(test_isa_resolve);
  RUN(test_isa_names);
  RUN(test_feature_names);
  RUN(test_amx_request);
  return test_summary("core_cpu");
}
