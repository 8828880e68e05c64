/* tilec_ops.h — ready-made operations built as kernels of the grid model. tilec.h includes it, so
 * `#include <tilec.h>` always brings the whole API. Each operation caches its plans in the
 * context by shape, dtype and config. */
#ifndef TILEC_OPS_H
#define TILEC_OPS_H

#include "tilec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tl_act { TL_ACT_NONE, TL_ACT_RELU, TL_ACT_GELU, TL_ACT_SILU } tl_act;

typedef struct tl_matmul_opts {
  float alpha, beta;         /* use TL_MATMUL_OPTS_INIT: alpha 1, beta 0; opts NULL means the same */
  const tl_tensor *bias;     /* optional [N] (borrowed) */
  tl_act act;
  const tl_tensor *residual; /* optional, shape of c (borrowed) */
  const tl_tensor *scale_a;  /* optional int8 dequantisation scales, [M] (f32) */
  const tl_tensor *scale_b;  /* optional [N] (f32) */
} tl_matmul_opts;
#define TL_MATMUL_OPTS_INIT {.alpha = 1.0f, .beta = 0.0f}

/* c = act(alpha * scale_a*(a @ b)*scale_b + beta * c + bias) + residual, computed in f32 (i32 for
 * integer c without scales) and stored in c's dtype. a: [..., M, K], b: [..., K, N] (row-major,
 * any strides, or prepacked by tl_matmul_pack_b), c: [..., M, N]; batch dims broadcast. beta == 0
 * never reads c. dtypes: f32 x f32; bf16 x bf16 -> f32 or bf16; u8/i8 x i8 -> i32, or -> f32 with
 * scales. Refused (TL_ERR_SHAPE / TL_ERR_DTYPE / TL_ERR_INVALID, c untouched) with a message. */
TL_API tl_status tl_matmul(tl_ctx *ctx, const tl_tensor *a, const tl_tensor *b, tl_tensor *c, const tl_matmul_opts *opts);

/* Packs b ([..., K, N]) once for repeated products with a of dtype a_dtype (weights): *packed
 * receives a tiled tensor whose data the caller frees with tl_free. */
TL_API tl_status tl_matmul_pack_b(tl_ctx *ctx, const tl_tensor *b, tl_dtype a_dtype, tl_tensor *packed);

/* Frees memory tilec allocated for the caller (tl_matmul_pack_b). NULL is a no-op. */
TL_API void tl_free(void *p);

#ifdef __cplusplus
}
#endif

#endif /* TILEC_OPS_H */
