/* tune_kernels.c — the table of tunable kernels (tune_kernels.h). */
#include <stdio.h>
#include <string.h>

#include "tune_kernels.h"

static const tl_tune_kernel tl_tune_kernels[] = {
    {"matmul", "MxNxK", "f32 bf16 int8", NULL, 3, 3, tl_mm_tune_space_new},
    {"attention", "BxHxSxD or BxHxSqxSkxD, optionally :causal", "bf16 f32", "causal", 4, 5, tl_attn_tune_space_new},
};

const tl_tune_kernel *tl_tune_kernel_at(int i) {
  return i >= 0 && (size_t)i < TL_ARRAY_LEN(tl_tune_kernels) ? &tl_tune_kernels[i] : NULL;
}

const tl_tune_kernel *tl_tune_kernel_find(const char *name) {
  for (size_t i = 0; name && i < TL_ARRAY_LEN(tl_tune_kernels); i++)
    if (!strcmp(tl_tune_kernels[i].name, name)) return &tl_tune_kernels[i];
  return NULL;
}

/* See tune_kernels.h. */
void tl_tune_kernel_values(tl_tune_param *p, const char *name, const int64_t *list, int n, int64_t cap, int64_t extra) {
  snprintf(p->name, sizeof p->name, "%s", name);
  p->nvalues = 0;
  for (int i = 0; i < n && p->nvalues < TL_TUNE_MAX_VALUES - 1; i++)
    if (list[i] <= cap) p->values[p->nvalues++] = list[i];
  if (!p->nvalues) p->values[p->nvalues++] = cap;
  int have = 0;
  for (int i = 0; i < p->nvalues; i++) have |= p->values[i] == extra;
  if (!have && extra > 0) {
    int i = p->nvalues++;
    while (i > 0 && p->values[i - 1] > extra) p->values[i] = p->values[i - 1], i--;
    p->values[i] = extra;
  }
}

/* See tune_kernels.h. */
void *tl_tune_kernel_buf(tl_dtype dt, int64_t n, uint64_t seed) {
  void *p = tl_aligned_alloc(64, (size_t)(n > 0 ? n : 1) * tl_dtype_size(dt));
  if (!p) return NULL;
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (int64_t i = 0; i < n; i++) {
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    const float f = (float)((double)((x * 2685821657736338717ull) >> 11) / 9007199254740992.0 * 2 - 1);
    if (dt == TL_F32) ((float *)p)[i] = f;
    else if (dt == TL_BF16) ((uint16_t *)p)[i] = tl_f32_to_bf16(f);
    else if (dt == TL_I8) ((int8_t *)p)[i] = (int8_t)(f * 100);
    else if (dt == TL_U8) ((uint8_t *)p)[i] = (uint8_t)(f * 100 + 100);
    else ((float *)p)[i] = 0;
  }
  return p;
}
