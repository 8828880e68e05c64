/* tune_kernels.h — the kernels `tilec tune` can tune: each entry makes the kernel's config space
 * (src/tune/tune_impl.h) for one problem. Adding a tunable kernel = one space constructor in its
 * kernel's *_tune.c and one row in tune_kernels.c. */
#ifndef TL_TUNE_KERNELS_H
#define TL_TUNE_KERNELS_H

#include "../tune/tune_impl.h"

typedef struct tl_tune_kernel {
  const char *name;          /* "matmul" */
  const char *shape_syntax;  /* "MxNxK" */
  const char *dtypes;        /* "f32 bf16 int8" (first: the default) */
  const char *variant;       /* a word a SHAPE may end in after ':' ("causal"); NULL: none */
  int min_dims, max_dims;    /* sizes a SHAPE has */
  /* Makes the space for dims (ndims sizes), variant (the SHAPE had ":<variant>"; 0 for kernels
   * without one) and the input dtype (int8 is u8 x i8); reduced: the smaller space of the
   * tuned-vs-exhaustive comparison. Bad shapes: TL_ERR_SHAPE / TL_ERR_DTYPE with a message in err.
   * A problem the kernel runs outside any config of its space (tl_matmul's K split): TL_OK with
   * *out NULL and the reason in err (nothing to tune; `tilec tune` says so and goes on). */
  tl_status (*space)(tl_ctx *ctx, const int64_t *dims, int ndims, int variant, tl_dtype dtype, int reduced,
                     tl_tune_space **out, char *err, size_t errn);
} tl_tune_kernel;

/* The tunable kernel called name, or NULL; tl_tune_kernel_at(i) lists them (NULL past the end). */
const tl_tune_kernel *tl_tune_kernel_find(const char *name);
const tl_tune_kernel *tl_tune_kernel_at(int i);

/* matmul_tune.c (variant: must be 0) */
tl_status tl_mm_tune_space_new(tl_ctx *ctx, const int64_t *dims, int ndims, int variant, tl_dtype da, int reduced,
                               tl_tune_space **out, char *err, size_t errn);
/* attention_tune.c: BxHxSxD or BxHxSqxSkxD; variant 1: causal */
tl_status tl_attn_tune_space_new(tl_ctx *ctx, const int64_t *dims, int ndims, int variant, tl_dtype dt, int reduced,
                                 tl_tune_space **out, char *err, size_t errn);

/* Helpers for the space constructors (tune_kernels.c). Sets param p to the values of list (n of
 * them) that are at most cap, plus extra (the heuristic's value), ascending and without repeats;
 * cap itself when no list value fits. */
void tl_tune_kernel_values(tl_tune_param *p, const char *name, const int64_t *list, int n, int64_t cap, int64_t extra);
/* n random values of dt (f32 in [-1, 1), bf16 of those, i8 / u8 small integers), deterministic
 * from seed; NULL when out of memory. */
void *tl_tune_kernel_buf(tl_dtype dt, int64_t n, uint64_t seed);

#endif /* TL_TUNE_KERNELS_H */
