/* status.c — status names, error messages (per context and thread-local), internal assertions,
 * and the allocation wrappers with fault injection that every allocation in tilec goes through. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core_impl.h"

static const char *const tl_status_names[] = {
#define TL_X_(name, value, desc) [value] = #name,
    TL_STATUS_LIST(TL_X_)
#undef TL_X_
};
_Static_assert(TL_ARRAY_LEN(tl_status_names) == TL_STATUS_COUNT, "status table out of sync");

const char *tl_status_name(tl_status s) {
  if ((unsigned)s >= TL_STATUS_COUNT) return "TL_STATUS_UNKNOWN";
  return tl_status_names[s];
}

void tl_assert_fail(const char *expr, const char *file, int line) {
  fprintf(stderr, "tilec: internal error at %s:%d: %s\n", file, line, expr);
  abort();
}

static _Thread_local char tl_tls_error[1024];

const char *tl_last_error(void) { return tl_tls_error; }

void tl_set_last_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tl_tls_error, sizeof tl_tls_error, fmt, ap);
  va_end(ap);
}

tl_status tl_fail_tls(tl_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tl_tls_error, sizeof tl_tls_error, fmt, ap);
  va_end(ap);
  return s;
}

void tl_msg(char *buf, size_t n, const char *fmt, ...) {
  if (!buf || !n) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, n, fmt, ap);
  va_end(ap);
}

/* ---- allocation with fault injection ---- */

static _Atomic int64_t tl_fault_at;    /* 0: off; else the allocation count that fails */
static _Atomic int64_t tl_alloc_count; /* allocations seen */

void tl_faultsim_fail_at(int64_t n) {
  atomic_store(&tl_fault_at, n > 0 ? atomic_load(&tl_alloc_count) + n : 0);
}
int64_t tl_faultsim_count(void) { return atomic_load(&tl_alloc_count); }

static bool tl_fault_now(void) {
  int64_t c = atomic_fetch_add(&tl_alloc_count, 1) + 1;
  int64_t at = atomic_load(&tl_fault_at);
  if (at && c == at) {
    atomic_store(&tl_fault_at, 0);
    return true;
  }
  return false;
}

void *tl_aligned_alloc(size_t align, size_t bytes) {
  if (tl_fault_now()) return NULL;
  void *p = NULL;
  if (align < sizeof(void *)) align = sizeof(void *);
  if (posix_memalign(&p, align, bytes ? bytes : 1) != 0) return NULL;
  return p;
}
void tl_aligned_free(void *p) { free(p); }

/* tl_alloc_huge's header, in the 64 bytes before the pointer it returns. */
typedef struct tl_huge_hdr {
  void *base; /* what posix_memalign or mmap returned */
  size_t len; /* the mapping's length; 0: from posix_memalign */
} tl_huge_hdr;
#define TL_HUGE_HDR ((size_t)64)

void *tl_alloc_huge(size_t bytes) {
  if (tl_fault_now()) return NULL;
  if (bytes > SIZE_MAX - 2 * TL_HUGE_MIN) return NULL;
  char *base, *p;
  size_t len = 0;
  if (bytes < TL_HUGE_MIN) {
    void *m = NULL;
    if (posix_memalign(&m, TL_HUGE_HDR, bytes + TL_HUGE_HDR) != 0) return NULL;
    base = m, p = base + TL_HUGE_HDR;
  } else { /* room for the header before a 2 MiB boundary */
    len = bytes + TL_HUGE_MIN;
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    base = m;
    p = (char *)(((uintptr_t)base + TL_HUGE_HDR + TL_HUGE_MIN - 1) & ~(uintptr_t)(TL_HUGE_MIN - 1));
#ifdef MADV_HUGEPAGE
    (void)madvise(p, bytes - bytes % TL_HUGE_MIN, MADV_HUGEPAGE); /* advice: failure changes nothing */
#endif
  }
  tl_huge_hdr h = {.base = base, .len = len};
  memcpy(p - TL_HUGE_HDR, &h, sizeof h);
  return p;
}

void tl_free_huge(void *p) {
  if (!p) return;
  tl_huge_hdr h;
  memcpy(&h, (char *)p - TL_HUGE_HDR, sizeof h);
  if (h.len) munmap(h.base, h.len);
  else free(h.base);
}

void *tl_calloc(size_t n, size_t size) {
  if (tl_fault_now()) return NULL;
  return calloc(n ? n : 1, size ? size : 1);
}
void tl_free_mem(void *p) { free(p); }
