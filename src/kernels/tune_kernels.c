/* tune_kernels.c — the table of tunable kernels (tune_kernels.h). */
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
