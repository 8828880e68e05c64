/* registry.c — the table of tilec's kernels (kernels_impl.h) and what the entries share: shape
 * parsing, owned buffers with random data, freeing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels_impl.h"

extern const tl_kernel_desc tl_kernel_copy, tl_kernel_scale, tl_kernel_matmul_grid, tl_kernel_softmax_rows;
extern const tl_kernel_desc tl_kernel_matmul, tl_kernel_matmul_bf16, tl_kernel_matmul_u8i8;
extern const tl_kernel_desc tl_kernel_attention;
extern const tl_kernel_desc tl_kernel_softmax, tl_kernel_layernorm, tl_kernel_rmsnorm;

static const tl_kernel_desc *const tl_kernels[] = {
    &tl_kernel_copy,
    &tl_kernel_scale,
    &tl_kernel_matmul_grid,
    &tl_kernel_softmax_rows,
    &tl_kernel_softmax,
    &tl_kernel_layernorm,
    &tl_kernel_rmsnorm,
    &tl_kernel_matmul,
    &tl_kernel_matmul_bf16,
    &tl_kernel_matmul_u8i8,
    &tl_kernel_attention,
};

const tl_kernel_desc *tl_kernel_at(int i) {
  return i >= 0 && (size_t)i < TL_ARRAY_LEN(tl_kernels) ? tl_kernels[i] : NULL;
}

const tl_kernel_desc *tl_kernel_find(const char *name) {
  for (size_t i = 0; name && i < TL_ARRAY_LEN(tl_kernels); i++)
    if (!strcmp(tl_kernels[i]->name, name)) return tl_kernels[i];
  return NULL;
}

void tl_kcase_free(tl_kcase *kc) {
  if (!kc) return;
  for (int i = 0; i < TL_KCASE_MAX_BUFS; i++) tl_aligned_free(kc->bufs[i]);
  tl_free_huge(kc->huge);
  tl_free_mem(kc->user);
  memset(kc, 0, sizeof *kc);
}

int tl_shape_parse(const char *s, int64_t *dims, int max, char *err, size_t errn) {
  int n = 0;
  const char *p = s;
  if (!s || !*s) {
    tl_msg(err, errn, "empty shape");
    return -1;
  }
  while (*p) {
    char *end;
    /* digits only: strtoll alone would take a sign or leading blanks */
    long long v = *p >= '0' && *p <= '9' ? strtoll(p, &end, 10) : (end = (char *)p, 0);
    if (end == p || v <= 0) {
      tl_msg(err, errn, "shape '%s': expected positive sizes separated by 'x' at position %d", s, (int)(p - s));
      return -1;
    }
    if (v > ((int64_t)1 << 40)) {
      tl_msg(err, errn, "shape '%s': size at position %d is larger than 2^40", s, (int)(p - s));
      return -1;
    }
    if (n == max) {
      tl_msg(err, errn, "shape '%s': at most %d sizes", s, max);
      return -1;
    }
    dims[n++] = v;
    p = end;
    if (*p == 'x' || *p == 'X' || *p == ',') {
      if (!*++p) {
        tl_msg(err, errn, "shape '%s': ends in a separator (a size is missing)", s);
        return -1;
      }
    } else if (*p) {
      tl_msg(err, errn, "shape '%s': unexpected '%c' at position %d", s, *p, (int)(p - s));
      return -1;
    }
  }
  return n;
}

int tl_kcase_tensor_bytes(const tl_kcase *kc, int64_t *bytes) {
  int n = 0;
  for (int i = 0; i < kc->k.n_in; i++) bytes[n++] = tl_tensor_nbytes(&kc->in[i]);
  for (int i = 0; i < kc->k.n_out; i++) bytes[n++] = tl_tensor_nbytes(&kc->out[i]);
  return n;
}

/* Allocates buffer slot `slot` of n f32 values, uniform in [lo, hi) from seed (xorshift64*);
 * NULL on failure. Values are written by rows so the pages are touched. */
int64_t tl_kcase_elems(int64_t a, int64_t b, const char *what, char *err, size_t errn) {
  int64_t n;
  if (tl_mul_ovf(a, b, &n) || n > TL_KCASE_MAX_ELEMS) {
    tl_msg(err, errn, "%s: %lld x %lld elements is more than the %lld a kernel instance may have", what, (long long)a,
           (long long)b, (long long)TL_KCASE_MAX_ELEMS);
    return -1;
  }
  return n;
}

static _Thread_local int tl_kcase_dry_on;

void tl_kcase_set_dry(int on) { tl_kcase_dry_on = on != 0; }
int tl_kcase_dry(void) { return tl_kcase_dry_on; }

float *tl_kcase_alloc_f32(tl_kcase *kc, int slot, int64_t n, double lo, double hi, uint64_t seed) {
  if (n < 0 || n > TL_KCASE_MAX_ELEMS) return NULL;
  float *p = tl_aligned_alloc(64, (size_t)(n > 0 ? n : 1) * sizeof(float));
  if (!p) return NULL;
  kc->bufs[slot] = p;
  if (tl_kcase_dry_on) return p;
  uint64_t s = seed ? seed : 0x9E3779B97F4A7C15ull;
  for (int64_t i = 0; i < n; i++) {
    s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
    double u = (double)((s * 2685821657736338717ull) >> 11) * (1.0 / 9007199254740992.0);
    p[i] = (float)(lo + (hi - lo) * u);
  }
  return p;
}

/* See kernels_impl.h. */
const char *tl_shape_str(const tl_tensor *t, char *buf, size_t n) {
  size_t off = (size_t)snprintf(buf, n, "[");
  for (int d = 0; d < t->ndim && off < n; d++)
    off += (size_t)snprintf(buf + off, n - off, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
  if (off < n) snprintf(buf + off, n - off, "]");
  return buf;
}
