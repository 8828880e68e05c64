/* cpu.c — host CPU detection: vendor, brand, family/model/stepping, features, caches, CPU counts.
 *
 * Invariants:
 * - A feature is reported only when CPUID has it AND the OS enables its register state in XCR0
 *   (read with XGETBV, and only when CPUID says OSXSAVE): AVX/AVX2/FMA/F16C need the SSE and AVX
 *   state (XCR0 bits 1, 2); every AVX-512 feature also needs opmask, ZMM_Hi256 and Hi16_ZMM
 *   (bits 5, 6, 7); AMX needs XTILECFG and XTILEDATA (bits 17, 18). AMX *permission* (Linux
 *   arch_prctl) is a separate, later step: see tl_amx_request in isa.c.
 * - Detection runs once per process (pthread_once) and never fails: what cannot be found is 0.
 * - Cache sizes: L1d and L2 per core, L3 as CPUID reports it for one cache instance (it may be a
 *   VM artefact; `tilec probe` measures the real one).
 */
#include <cpuid.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core_impl.h"

/* CPUID bits used below (Intel SDM vol. 2A, "CPUID"; AMD APM vol. 3, appendix E). */
#define TL_CPUID1_ECX_FMA (1u << 12)
#define TL_CPUID1_ECX_SSE42 (1u << 20)
#define TL_CPUID1_ECX_OSXSAVE (1u << 27)
#define TL_CPUID1_ECX_AVX (1u << 28)
#define TL_CPUID1_ECX_F16C (1u << 29)
#define TL_CPUID7_EBX_AVX2 (1u << 5)
#define TL_CPUID7_EBX_AVX512F (1u << 16)
#define TL_CPUID7_EBX_AVX512DQ (1u << 17)
#define TL_CPUID7_EBX_AVX512BW (1u << 30)
#define TL_CPUID7_EBX_AVX512VL (1u << 31)
#define TL_CPUID7_ECX_AVX512VNNI (1u << 11)
#define TL_CPUID7_EDX_AMX_BF16 (1u << 22)
#define TL_CPUID7_EDX_AMX_TILE (1u << 24)
#define TL_CPUID7_EDX_AMX_INT8 (1u << 25)
#define TL_CPUID71_EAX_AVXVNNI (1u << 4)
#define TL_CPUID71_EAX_AVX512BF16 (1u << 5)
#define TL_CPUIDX1_ECX_TOPOEXT (1u << 22) /* 0x80000001.ECX: leaf 0x8000001D is valid */

/* XCR0 state components. */
#define TL_XCR0_AVX_STATE ((1ull << 1) | (1ull << 2))                /* SSE, AVX */
#define TL_XCR0_AVX512_STATE ((1ull << 5) | (1ull << 6) | (1ull << 7)) /* opmask, ZMM_Hi256, Hi16_ZMM */
#define TL_XCR0_AMX_STATE ((1ull << 17) | (1ull << 18))              /* XTILECFG, XTILEDATA */

/* One CPUID query; all four registers 0 when the leaf is out of range. */
typedef struct tl_cpuid_regs {
  uint32_t a, b, c, d;
} tl_cpuid_regs;

/* Runs CPUID(leaf, sub). __get_cpuid_count checks the leaf against the maximum of its range
 * (basic or extended) and returns 0 when it is above it; the registers are then zero. */
static tl_cpuid_regs tl_cpuid(uint32_t leaf, uint32_t sub) {
  tl_cpuid_regs r = {0, 0, 0, 0};
  unsigned a, b, c, d;
  if (__get_cpuid_count(leaf, sub, &a, &b, &c, &d)) {
    r.a = a;
    r.b = b;
    r.c = c;
    r.d = d;
  }
  return r;
}

/* Reads XCR0 with XGETBV(ECX=0). The caller makes sure CPUID.1.ECX.OSXSAVE is set (XGETBV
 * faults otherwise). Inline asm so that no -mxsave flag is needed for this portable file. */
static uint64_t tl_xgetbv0(void) {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

/* Copies the 12-byte vendor string (EBX, EDX, ECX of leaf 0). */
static void tl_cpu_vendor(const tl_cpuid_regs *r0, char out[16]) {
  memcpy(out + 0, &r0->b, 4);
  memcpy(out + 4, &r0->d, 4);
  memcpy(out + 8, &r0->c, 4);
  out[12] = '\0';
}

/* Reads the brand string (leaves 0x80000002..4) into out, trimming leading and trailing spaces
 * and collapsing runs of spaces ("      Intel(R) Xeon(R)  ..." -> "Intel(R) Xeon(R) ..."). */
static void tl_cpu_brand(uint32_t max_ext, char *out, size_t n) {
  char raw[49] = {0};
  out[0] = '\0';
  if (max_ext < 0x80000004u) return;
  for (uint32_t i = 0; i < 3; i++) {
    tl_cpuid_regs r = tl_cpuid(0x80000002u + i, 0);
    memcpy(raw + 16 * i + 0, &r.a, 4);
    memcpy(raw + 16 * i + 4, &r.b, 4);
    memcpy(raw + 16 * i + 8, &r.c, 4);
    memcpy(raw + 16 * i + 12, &r.d, 4);
  }
  raw[48] = '\0';
  size_t o = 0;
  int pending_space = 0;
  for (const char *p = raw; *p && o + 1 < n; p++) {
    if (*p == ' ' || *p == '\t') {
      pending_space = o > 0; /* drops leading spaces */
      continue;
    }
    if (pending_space && o + 2 < n) out[o++] = ' ';
    pending_space = 0;
    out[o++] = *p;
  }
  out[o] = '\0'; /* trailing spaces were never written */
}

/* Family, model and stepping from CPUID.1.EAX, with the extended fields applied as the SDM
 * says: extended family is added when the base family is 0xF; the extended model is prepended
 * when the base family is 6 or 0xF. */
static void tl_cpu_signature(uint32_t eax, tl_cpu_info *ci) {
  uint32_t base_family = (eax >> 8) & 0xf;
  uint32_t model = (eax >> 4) & 0xf;
  ci->stepping = eax & 0xf;
  ci->family = base_family == 0xf ? base_family + ((eax >> 20) & 0xff) : base_family;
  if (base_family == 6 || base_family == 0xf) model |= ((eax >> 16) & 0xf) << 4;
  ci->model = model;
}

/* Feature bits from CPUID leaves 1 and 7, masked by the state XCR0 enables. */
static uint32_t tl_cpu_features(uint32_t max_leaf) {
  uint32_t f = 0;
  if (max_leaf < 1) return 0;
  tl_cpuid_regs r1 = tl_cpuid(1, 0);
  if (r1.c & TL_CPUID1_ECX_SSE42) f |= TL_FEAT_SSE42; /* SSE state predates XSAVE */

  uint64_t xcr0 = (r1.c & TL_CPUID1_ECX_OSXSAVE) ? tl_xgetbv0() : 0;
  int os_avx = (xcr0 & TL_XCR0_AVX_STATE) == TL_XCR0_AVX_STATE;
  int os_avx512 = os_avx && (xcr0 & TL_XCR0_AVX512_STATE) == TL_XCR0_AVX512_STATE;
  int os_amx = (xcr0 & TL_XCR0_AMX_STATE) == TL_XCR0_AMX_STATE;

  if (os_avx) {
    if (r1.c & TL_CPUID1_ECX_AVX) f |= TL_FEAT_AVX;
    if (r1.c & TL_CPUID1_ECX_FMA) f |= TL_FEAT_FMA;
    if (r1.c & TL_CPUID1_ECX_F16C) f |= TL_FEAT_F16C;
  }
  if (max_leaf < 7) return f;

  tl_cpuid_regs r7 = tl_cpuid(7, 0);
  tl_cpuid_regs r71 = r7.a >= 1 ? tl_cpuid(7, 1) : (tl_cpuid_regs){0, 0, 0, 0};
  if (os_avx && (r7.b & TL_CPUID7_EBX_AVX2)) f |= TL_FEAT_AVX2;
  if (os_avx && (r71.a & TL_CPUID71_EAX_AVXVNNI)) f |= TL_FEAT_AVXVNNI;
  if (os_avx512) {
    if (r7.b & TL_CPUID7_EBX_AVX512F) f |= TL_FEAT_AVX512F;
    if (r7.b & TL_CPUID7_EBX_AVX512BW) f |= TL_FEAT_AVX512BW;
    if (r7.b & TL_CPUID7_EBX_AVX512VL) f |= TL_FEAT_AVX512VL;
    if (r7.b & TL_CPUID7_EBX_AVX512DQ) f |= TL_FEAT_AVX512DQ;
    if (r7.c & TL_CPUID7_ECX_AVX512VNNI) f |= TL_FEAT_AVX512VNNI;
    if (r71.a & TL_CPUID71_EAX_AVX512BF16) f |= TL_FEAT_AVX512BF16;
  }
  if (os_amx) {
    if (r7.d & TL_CPUID7_EDX_AMX_TILE) f |= TL_FEAT_AMX_TILE;
    if (r7.d & TL_CPUID7_EDX_AMX_BF16) f |= TL_FEAT_AMX_BF16;
    if (r7.d & TL_CPUID7_EDX_AMX_INT8) f |= TL_FEAT_AMX_INT8;
  }
  return f;
}

/* Walks a "deterministic cache parameters" leaf (Intel leaf 4, AMD 0x8000001D: same layout)
 * and records the L1 data, L2 and L3 sizes it lists. Sub-leaves end at cache type 0. */
static void tl_cache_walk(uint32_t leaf, tl_cpu_info *ci) {
  for (uint32_t sub = 0; sub < 16; sub++) {
    tl_cpuid_regs r = tl_cpuid(leaf, sub);
    uint32_t type = r.a & 0x1f; /* 0 none, 1 data, 2 instruction, 3 unified */
    if (type == 0) break;
    uint32_t level = (r.a >> 5) & 0x7;
    int64_t ways = ((r.b >> 22) & 0x3ff) + 1;
    int64_t parts = ((r.b >> 12) & 0x3ff) + 1;
    int64_t line = (r.b & 0xfff) + 1;
    int64_t sets = (int64_t)r.c + 1;
    int64_t size = ways * parts * line * sets;
    if (level == 1 && type == 1) ci->l1d_bytes = size;
    else if (level == 2 && type != 2) ci->l2_bytes = size;
    else if (level == 3 && type != 2) ci->l3_bytes = size;
  }
}

/* AMD's older cache leaves: 0x80000005.ECX[31:24] = L1d KiB, 0x80000006.ECX[31:16] = L2 KiB,
 * 0x80000006.EDX[31:18] = L3 in 512 KiB units. Fills only sizes still unknown. */
static void tl_cache_amd_legacy(uint32_t max_ext, tl_cpu_info *ci) {
  if (max_ext >= 0x80000005u && ci->l1d_bytes == 0) {
    tl_cpuid_regs r = tl_cpuid(0x80000005u, 0);
    ci->l1d_bytes = (int64_t)((r.c >> 24) & 0xff) * 1024;
  }
  if (max_ext >= 0x80000006u) {
    tl_cpuid_regs r = tl_cpuid(0x80000006u, 0);
    if (ci->l2_bytes == 0) ci->l2_bytes = (int64_t)((r.c >> 16) & 0xffff) * 1024;
    if (ci->l3_bytes == 0) ci->l3_bytes = (int64_t)((r.d >> 18) & 0x3fff) * 512 * 1024;
  }
}

/* sysconf's value for name, or 0 when unknown or non-positive. */
static int64_t tl_sysconf_pos(int name) {
  long v = sysconf(name);
  return v > 0 ? (int64_t)v : 0;
}

/* Cache sizes: CPUID first (Intel leaf 4; AMD/Hygon 0x8000001D with fallback to the legacy
 * leaves), then sysconf for any level CPUID left unknown. */
static void tl_cpu_caches(uint32_t max_leaf, uint32_t max_ext, tl_cpu_info *ci) {
  int amd_like = !strcmp(ci->vendor, "AuthenticAMD") || !strcmp(ci->vendor, "HygonGenuine");
  if (amd_like) {
    tl_cpuid_regs x1 = max_ext >= 0x80000001u ? tl_cpuid(0x80000001u, 0) : (tl_cpuid_regs){0, 0, 0, 0};
    if ((x1.c & TL_CPUIDX1_ECX_TOPOEXT) && max_ext >= 0x8000001Du) tl_cache_walk(0x8000001Du, ci);
    tl_cache_amd_legacy(max_ext, ci);
  } else if (max_leaf >= 4) {
    tl_cache_walk(4, ci);
  }
#ifdef _SC_LEVEL1_DCACHE_SIZE
  if (ci->l1d_bytes == 0) ci->l1d_bytes = tl_sysconf_pos(_SC_LEVEL1_DCACHE_SIZE);
#endif
#ifdef _SC_LEVEL2_CACHE_SIZE
  if (ci->l2_bytes == 0) ci->l2_bytes = tl_sysconf_pos(_SC_LEVEL2_CACHE_SIZE);
#endif
#ifdef _SC_LEVEL3_CACHE_SIZE
  if (ci->l3_bytes == 0) ci->l3_bytes = tl_sysconf_pos(_SC_LEVEL3_CACHE_SIZE);
#endif
}

/* CPUs in this process's affinity mask; grows the mask for machines with more than
 * CPU_SETSIZE CPUs. Falls back to cpus_online (at least 1) when the call fails. */
static int tl_cpus_allowed(int online) {
  for (int ncpu = CPU_SETSIZE; ncpu <= (1 << 16); ncpu *= 2) {
    cpu_set_t *set = CPU_ALLOC(ncpu);
    if (!set) break;
    size_t sz = CPU_ALLOC_SIZE(ncpu);
    CPU_ZERO_S(sz, set);
    int rc = sched_getaffinity(0, sz, set);
    int err = errno;
    int count = rc == 0 ? CPU_COUNT_S(sz, set) : 0;
    CPU_FREE(set);
    if (rc == 0) return count > 0 ? count : 1;
    if (err != EINVAL) break; /* EINVAL: the kernel's mask is larger than ours */
  }
  return online > 0 ? online : 1;
}

static tl_cpu_info tl_cpu_cached;
static pthread_once_t tl_cpu_once = PTHREAD_ONCE_INIT;

/* Fills tl_cpu_cached; runs once. */
static void tl_cpu_detect_once(void) {
  tl_cpu_info ci;
  memset(&ci, 0, sizeof ci);
  tl_cpuid_regs r0 = tl_cpuid(0, 0);
  uint32_t max_leaf = r0.a;
  uint32_t max_ext = __get_cpuid_max(0x80000000u, NULL);
  if (max_ext < 0x80000000u) max_ext = 0;

  tl_cpu_vendor(&r0, ci.vendor);
  tl_cpu_brand(max_ext, ci.brand, sizeof ci.brand);
  if (max_leaf >= 1) tl_cpu_signature(tl_cpuid(1, 0).a, &ci);
  ci.features = tl_cpu_features(max_leaf);
  ci.isa_max = tl_isa_from_features(ci.features);
  tl_cpu_caches(max_leaf, max_ext, &ci);

  long online = sysconf(_SC_NPROCESSORS_ONLN);
  ci.cpus_online = online > 0 ? (int)online : 1;
  ci.cpus_allowed = tl_cpus_allowed(ci.cpus_online);
  tl_cpu_cached = ci;
}

static _Atomic int tl_cpu_amx_emulated; /* tl_amx_emulate (tests only) */
static _Atomic uint32_t tl_cpu_hidden;   /* tl_cpu_hide (tests only) */

/* Copies the cached detection into *out (detecting on the first call); NULL is a no-op. With the
 * AMX emulation on, the copy reports AMX; features hidden by tl_cpu_hide are left out (core_impl.h). */
void tl_cpu_detect(tl_cpu_info *out) {
  if (!out) return;
  pthread_once(&tl_cpu_once, tl_cpu_detect_once);
  *out = tl_cpu_cached;
  if (tl_cpu_amx_emulated) {
    out->features |= TL_FEAT_AMX_TILE | TL_FEAT_AMX_BF16 | TL_FEAT_AMX_INT8;
    out->isa_max = tl_isa_from_features(out->features);
  }
  const uint32_t hidden = tl_cpu_hidden;
  if (hidden) {
    out->features &= ~hidden;
    out->isa_max = tl_isa_from_features(out->features);
  }
}

/* See core_impl.h. */
void tl_cpu_hide(uint32_t features) { tl_cpu_hidden |= features; }

/* See core_impl.h. */
int tl_cpu_has(uint32_t features) {
  tl_cpu_info ci;
  tl_cpu_detect(&ci);
  return (ci.features & features) == features;
}

/* See core_impl.h. */
int tl_amx_emulate(void) {
  tl_cpu_info ci;
  tl_cpu_detect(&ci);
  if (!tl_cpu_amx_emulated && ci.isa_max != TL_ISA_AVX512BF16) return 0;
  tl_cpu_amx_emulated = 1;
  return 1;
}

/* See core_impl.h. */
int tl_amx_emulated(void) { return tl_cpu_amx_emulated; }
