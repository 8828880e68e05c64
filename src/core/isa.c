/* isa.c — ISA path names, feature names, the ISA a feature set allows, the ISA cap, and the
 * process-wide AMX permission request.
 *
 * Invariants:
 * - The ISA levels are ordered (scalar < avx2 < avx2vnni < avx512 < avx512vnni < avx512bf16 < amx);
 *   each level needs all the features of the levels below it except avx2vnni's AVX-VNNI (a side
 *   branch: Ice Lake has AVX-512 and no AVX-VNNI). min(cap, cpu max) never uses a feature the CPU
 *   lacks: a context lowers an avx2vnni it cannot run to avx2 (tl_isa_usable), and the avx2vnni
 *   paths step aside on such a CPU when a higher level passes through them.
 * - Name tables are generated from the X-macros in tilec.h and checked against the counts.
 * - AMX permission is asked for once per process (arch_prctl affects the whole process); every
 *   later call returns the first answer and its message.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core_impl.h"

static const char *const tl_isa_names[] = {
#define TL_X_(e, name) [e] = name,
    TL_ISA_LIST(TL_X_)
#undef TL_X_
};
_Static_assert(TL_ARRAY_LEN(tl_isa_names) == TL_ISA_COUNT, "ISA table out of sync with TL_ISA_COUNT");

static const struct {
  uint32_t bit;
  const char *name;
} tl_features[] = {
#define TL_X_(e, bit, name) {e, name},
    TL_FEATURE_LIST(TL_X_)
#undef TL_X_
};
_Static_assert(TL_ARRAY_LEN(tl_features) == TL_FEATURE_COUNT, "feature table out of sync with TL_FEATURE_COUNT");

/* The valid ISA names, comma separated, for messages. */
#define TL_ISA_VALID_NAMES "scalar, avx2, avx2vnni, avx512, avx512vnni, avx512bf16, amx"

/* The ISA's name; "unknown" outside the table. */
const char *tl_isa_name(tl_isa isa) {
  if ((unsigned)isa >= TL_ISA_COUNT) return "unknown";
  return tl_isa_names[isa];
}

/* Looks a name up (case-insensitive); -1 when unknown. */
static int tl_isa_lookup(const char *name) {
  if (!name) return -1;
  for (int i = 0; i < TL_ISA_COUNT; i++)
    if (!strcasecmp(name, tl_isa_names[i])) return i;
  return -1;
}

/* Parses a name (case-insensitive); unknown: TL_ERR_INVALID, *out untouched, tl_last_error set. */
tl_status tl_isa_parse(const char *name, tl_isa *out) {
  int i = tl_isa_lookup(name);
  if (i < 0)
    return tl_fail_tls(TL_ERR_INVALID, "unknown ISA '%.64s' (valid: " TL_ISA_VALID_NAMES ")",
                       name ? name : "(null)");
  if (out) *out = (tl_isa)i;
  return TL_OK;
}

/* Name of one TL_FEAT_* value (a single bit); "unknown" for 0, several bits or an unknown bit. */
const char *tl_feature_name(uint32_t bit) {
  for (size_t i = 0; i < TL_ARRAY_LEN(tl_features); i++)
    if (tl_features[i].bit == bit) return tl_features[i].name;
  return "unknown";
}

/* The highest ISA level all of whose features (cumulative, see core_impl.h; avx2vnni's AVX-VNNI
 * is not needed above it) are in f. */
tl_isa tl_isa_from_features(uint32_t f) {
  /* F16C too: the avx2 files are built with -mf16c, so the compiler may emit it there. */
  const uint32_t avx2 = TL_FEAT_AVX | TL_FEAT_AVX2 | TL_FEAT_FMA | TL_FEAT_F16C;
  const uint32_t avx512 = avx2 | TL_FEAT_AVX512F | TL_FEAT_AVX512BW | TL_FEAT_AVX512VL | TL_FEAT_AVX512DQ;
  const uint32_t avx512vnni = avx512 | TL_FEAT_AVX512VNNI;
  const uint32_t avx512bf16 = avx512vnni | TL_FEAT_AVX512BF16;
  const uint32_t amx = avx512bf16 | TL_FEAT_AMX_TILE | TL_FEAT_AMX_BF16 | TL_FEAT_AMX_INT8;
  if ((f & amx) == amx) return TL_ISA_AMX;
  if ((f & avx512bf16) == avx512bf16) return TL_ISA_AVX512BF16;
  if ((f & avx512vnni) == avx512vnni) return TL_ISA_AVX512VNNI;
  if ((f & avx512) == avx512) return TL_ISA_AVX512;
  if ((f & (avx2 | TL_FEAT_AVXVNNI)) == (avx2 | TL_FEAT_AVXVNNI)) return TL_ISA_AVX2VNNI;
  if ((f & avx2) == avx2) return TL_ISA_AVX2;
  return TL_ISA_SCALAR;
}

/* See core_impl.h. */
tl_isa tl_isa_usable(tl_isa isa, uint32_t f) {
  if (isa == TL_ISA_AVX2VNNI && !(f & TL_FEAT_AVXVNNI)) return TL_ISA_AVX2;
  return isa;
}

/* Applies a cap (NULL/"": none) to cpu_max. On an unknown name nothing is written to cap/isa;
 * msg and tl_last_error get the reason. On success msg is "". */
tl_status tl_isa_resolve(const char *name, tl_isa cpu_max, tl_isa *cap, tl_isa *isa, char *msg,
                         size_t msg_size) {
  tl_isa c = TL_ISA_AMX;
  if (name && *name) {
    int i = tl_isa_lookup(name);
    if (i < 0) {
      tl_msg(msg, msg_size, "unknown ISA '%.64s' (valid: " TL_ISA_VALID_NAMES ")", name);
      return tl_fail_tls(TL_ERR_INVALID, "unknown ISA '%.64s' (valid: " TL_ISA_VALID_NAMES ")", name);
    }
    c = (tl_isa)i;
  }
  if ((unsigned)cpu_max >= TL_ISA_COUNT) cpu_max = TL_ISA_SCALAR; /* nonsense in: assume nothing */
  if (cap) *cap = c;
  if (isa) *isa = c < cpu_max ? c : cpu_max;
  tl_msg(msg, msg_size, "%s", "");
  return TL_OK;
}

/* ---- AMX permission ---- */

#define TL_ARCH_GET_XCOMP_PERM 0x1022
#define TL_ARCH_REQ_XCOMP_PERM 0x1023
#define TL_XFEATURE_XTILEDATA 18

static pthread_once_t tl_amx_once = PTHREAD_ONCE_INIT;
static int tl_amx_result;        /* 1 granted, -1 refused or absent */
static char tl_amx_message[256]; /* the reason when refused */

/* Asks the kernel once; records the answer in tl_amx_result / tl_amx_message. */
static void tl_amx_request_once(void) {
  tl_cpu_info ci;
  tl_cpu_detect(&ci);
  const uint32_t need = TL_FEAT_AMX_TILE | TL_FEAT_AMX_BF16 | TL_FEAT_AMX_INT8;
  tl_amx_result = -1;
  if ((ci.features & need) != need) {
    tl_msg(tl_amx_message, sizeof tl_amx_message, "AMX not present on this CPU");
    return;
  }
#ifdef SYS_arch_prctl
  if (syscall(SYS_arch_prctl, TL_ARCH_REQ_XCOMP_PERM, TL_XFEATURE_XTILEDATA) != 0) {
    int e = errno;
    const char *why = e == ENOSPC  ? " (a thread has an alternate signal stack too small for the AMX state)"
                      : e == EINVAL ? " (the kernel does not support AMX permission: Linux 5.16 or later is needed)"
                                    : "";
    tl_msg(tl_amx_message, sizeof tl_amx_message, "arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA): %s%s",
           strerror(e), why);
    return;
  }
  unsigned long perm = 0;
  if (syscall(SYS_arch_prctl, TL_ARCH_GET_XCOMP_PERM, &perm) != 0) {
    tl_msg(tl_amx_message, sizeof tl_amx_message, "arch_prctl(ARCH_GET_XCOMP_PERM): %s", strerror(errno));
    return;
  }
  if (!(perm & (1ul << TL_XFEATURE_XTILEDATA))) {
    tl_msg(tl_amx_message, sizeof tl_amx_message,
           "arch_prctl(ARCH_GET_XCOMP_PERM): XTILEDATA not permitted after the request (mask 0x%lx)", perm);
    return;
  }
  tl_amx_result = 1;
  tl_amx_message[0] = '\0';
#else
  tl_msg(tl_amx_message, sizeof tl_amx_message, "arch_prctl is not available on this platform");
#endif
}

/* 1 when AMX tile data is permitted for this process, -1 (reason in msg) otherwise; asks once. */
int tl_amx_request(char *msg, size_t msg_size) {
  if (tl_amx_emulated()) { /* tests only: the AMX level's tile operations are emulated */
    tl_msg(msg, msg_size, "%s", "");
    return 1;
  }
  pthread_once(&tl_amx_once, tl_amx_request_once);
  tl_msg(msg, msg_size, "%s", tl_amx_message);
  return tl_amx_result;
}
