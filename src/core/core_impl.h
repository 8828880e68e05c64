/* core_impl.h — internals shared by every layer: error messages, checked arithmetic, aligned
 * allocation with fault injection, CPU detection details and the ISA cap. Not installed. */
#ifndef TL_CORE_IMPL_H
#define TL_CORE_IMPL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tilec.h"

/* Internal invariants only (never for input checking): prints file:line and aborts. */
#define TL_ASSERT(c)                                           \
  do {                                                         \
    if (!(c)) tl_assert_fail(#c, __FILE__, __LINE__);          \
  } while (0)
void tl_assert_fail(const char *expr, const char *file, int line) __attribute__((noreturn));

#define TL_MIN(a, b) ((a) < (b) ? (a) : (b))
#define TL_MAX(a, b) ((a) > (b) ? (a) : (b))
#define TL_CDIV(a, b) ((a) / (b) + ((a) % (b) != 0)) /* a >= 0, b > 0; no overflow near INT64_MAX */
#define TL_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Thread-local message for calls without a context (tl_last_error). */
void tl_set_last_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Sets the thread-local message and returns s. */
tl_status tl_fail_tls(tl_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* snprintf into buf (n may be 0 / buf NULL: nothing written). */
void tl_msg(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Checked int64 arithmetic: return true on overflow. */
static inline bool tl_mul_ovf(int64_t a, int64_t b, int64_t *out) { return __builtin_mul_overflow(a, b, out); }
static inline bool tl_add_ovf(int64_t a, int64_t b, int64_t *out) { return __builtin_add_overflow(a, b, out); }

/* Aligned allocation (align a power of two >= sizeof(void*)); NULL on failure or when fault
 * injection says so. Memory is not zeroed. tl_aligned_free(NULL) is a no-op. */
void *tl_aligned_alloc(size_t align, size_t bytes);
void tl_aligned_free(void *p);
/* A large buffer the kernels stream many times (packed weights), 64-byte aligned; from
 * TL_HUGE_MIN bytes on, a mapping of its own (mmap), 2 MiB aligned, its whole 2 MiB pages advised
 * as transparent huge pages (MADV_HUGEPAGE, where the system has it; advice only), so that a
 * stream takes one TLB entry per 2 MiB instead of per 4 KiB, and the advice leaves with the
 * mapping (none lingers on heap memory malloc hands out later). A 64-byte header before the
 * pointer says how it was made. NULL on failure or when fault injection says so. Freed with
 * tl_free_huge only (not tl_aligned_free); tl_free_huge(NULL) is a no-op. */
#define TL_HUGE_MIN ((size_t)2 << 20)
void *tl_alloc_huge(size_t bytes);
void tl_free_huge(void *p);
/* calloc/free through the same fault injection. */
void *tl_calloc(size_t n, size_t size);
void tl_free_mem(void *p);
/* Fault injection for tests: the n-th allocation from now (1 = the next) fails, then all succeed
 * again; 0 disables. Process-wide (tests only). tl_faultsim_count returns allocations seen. */
void tl_faultsim_fail_at(int64_t n);
int64_t tl_faultsim_count(void);

/* Element access by dtype, for portable (scalar) code paths. Integers saturate on store; NaN
 * stores as 0 in integer dtypes; float -> int rounds to nearest even. */
double tl_load_f64(const void *base, tl_dtype dt, int64_t i);
void tl_store_f64(void *base, tl_dtype dt, int64_t i, double v);
/* Saturating conversion of v to an integer dtype's range (returns v unchanged for floats). */
double tl_saturate(tl_dtype dt, double v);

/* ---- CPU and ISA (src/core/cpu.c, src/core/isa.c) ---- */

/* The ISA level the features allow (the highest whose requirements are all present):
 * avx2: AVX+AVX2+FMA+F16C; avx2vnni: avx2 + AVX-VNNI (a side branch: not needed above it);
 * avx512: avx2 + AVX512F/BW/VL/DQ; avx512vnni: + AVX512-VNNI; avx512bf16: + AVX512-BF16;
 * amx: +AMX-TILE/BF16/INT8. */
tl_isa tl_isa_from_features(uint32_t features);
/* isa, or the level below it when the CPU (features) cannot run isa's own paths although it runs
 * higher levels: avx2vnni without AVX-VNNI gives avx2. */
tl_isa tl_isa_usable(tl_isa isa, uint32_t features);
/* Resolves a cap: name NULL or "" means no cap (TL_ISA_AMX). Unknown name: TL_ERR_INVALID with a
 * message listing the valid names. *isa = min(cap, cpu_max). */
tl_status tl_isa_resolve(const char *name, tl_isa cpu_max, tl_isa *cap, tl_isa *isa, char *msg, size_t msg_size);
/* Asks the kernel for AMX tile data permission (process-wide, once; later calls return the first
 * answer). Returns 1 when granted, -1 when refused or unavailable, with the reason in msg. */
int tl_amx_request(char *msg, size_t msg_size);

/* The AMX emulation seam, for tests only (tests/tile/amx_emu.h; the library never calls it).
 * tl_amx_emulate turns it on for the rest of the process on a CPU with AVX512-BF16 and no AMX
 * of its own: tl_cpu_detect then adds the AMX features and reports isa_max TL_ISA_AMX, and
 * tl_amx_request grants, so contexts run the AMX level (whose tile operations the test has
 * replaced by ones over an emulation of the tile registers, tl_tile_amx_override; the levels
 * below run their real instructions). Returns 1 when on, 0 (nothing changed) on any other CPU.
 * Call it before any context exists. tl_amx_emulated: whether it is on. */
int tl_amx_emulate(void);
int tl_amx_emulated(void);
/* Tests only: tl_cpu_detect reports the CPU without these features from now on, for the rest of
 * the process (a CPU without AVX-VNNI on one that has it; contexts made before keep their
 * level). Paths that check a feature at run time (the avx2vnni dot) see it at their next call. */
void tl_cpu_hide(uint32_t features);
/* Whether tl_cpu_detect reports all of features (hidden ones not): for paths that check a
 * feature their ISA level does not imply at run time (the avx2vnni side branch). */
int tl_cpu_has(uint32_t features);

#endif /* TL_CORE_IMPL_H */
