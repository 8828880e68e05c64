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
 * scales. c may not overlap a, b, bias, the scales or the residual in any batch. Refused
 * (TL_ERR_SHAPE / TL_ERR_DTYPE / TL_ERR_INVALID, c untouched) with a message. */
TL_API tl_status tl_matmul(tl_ctx *ctx, const tl_tensor *a, const tl_tensor *b, tl_tensor *c, const tl_matmul_opts *opts);

/* Packs b ([..., K, N]) once for repeated products with a of dtype a_dtype (weights): *packed
 * receives a tiled tensor whose data the caller frees with tl_free. Runs on ctx's threads and
 * needs no staging budget. Refused (TL_ERR_INVALID / TL_ERR_SHAPE / TL_ERR_DTYPE / TL_ERR_NOMEM,
 * *packed untouched) with a message. */
TL_API tl_status tl_matmul_pack_b(tl_ctx *ctx, const tl_tensor *b, tl_dtype a_dtype, tl_tensor *packed);

/* Frees memory tilec allocated for the caller (tl_matmul_pack_b). NULL is a no-op. */
TL_API void tl_free(void *p);

/* ---- softmax and norms (docs/norms.md) ----
 * x and y: same shape, any strides (row-major, not tiled), f32 or bf16 each (they may differ);
 * math in f32. y may be x itself (same data and strides); other overlaps are refused. A row that
 * fits the staging budget is read once and written once; longer rows use an online two-level
 * reduction (two reads). NaN propagates; an all -inf softmax row is NaN (and so is a row holding
 * +inf, as the formula gives). Refusals leave y untouched and name the operand. */

/* y = softmax(x) along axis (axis < 0 counts from the end): exp(x - max) / sum exp(x - max). */
TL_API tl_status tl_softmax(tl_ctx *ctx, const tl_tensor *x, tl_tensor *y, int axis);
/* y = log_softmax(x) along axis: x - max - log(sum exp(x - max)). */
TL_API tl_status tl_log_softmax(tl_ctx *ctx, const tl_tensor *x, tl_tensor *y, int axis);
/* y = (x - mean) / sqrt(var + eps) * gamma + beta over the last axis (biased variance, computed
 * without cancellation for large means). gamma and beta are optional [C] (f32 or bf16; NULL: 1
 * and 0). eps finite and >= 0 (squares summed in f32: rows whose deviations are all below ~1e-19
 * give inf / NaN with eps 0, inaccurate results with eps below ~1e-30; docs/norms.md). */
TL_API tl_status tl_layernorm(tl_ctx *ctx, const tl_tensor *x, const tl_tensor *gamma, const tl_tensor *beta, float eps,
                              tl_tensor *y);
/* y = x / sqrt(mean(x^2) + eps) * gamma over the last axis; gamma optional [C]; eps as for
 * tl_layernorm (rows of values all below ~1e-19 underflow: inf / NaN with eps 0). */
TL_API tl_status tl_rmsnorm(tl_ctx *ctx, const tl_tensor *x, const tl_tensor *gamma, float eps, tl_tensor *y);

/* ---- attention (docs/attention.md) ---- */
typedef struct tl_attention_opts {
  int causal;             /* 1: query i sees keys j <= i + Sk - Sq (bottom-right aligned) */
  float scale;            /* 0: 1/sqrt(D) */
  const tl_tensor *mask;  /* optional additive mask, f32 or q's dtype, broadcastable to [B, Hq, Sq, Sk] */
} tl_attention_opts;
#define TL_ATTENTION_OPTS_INIT {.causal = 0, .scale = 0.0f, .mask = NULL}

/* o = softmax(scale * q k^T + mask) v, flash-attention style (the Sq x Sk scores never reach
 * memory). q: [B, Hq, Sq, D], k and v: [B, Hkv, Sk, D] with Hq % Hkv == 0 (query head h uses
 * K/V head h / (Hq / Hkv)), o: [B, Hq, Sq, D]; any strides (row-major, not tiled); f32 or bf16
 * (q, k, v one dtype; o f32 or q's dtype; for bf16 the softmax weights are rounded to bf16 before
 * the product with v, docs/attention.md). The mask has 1 to 4 dims, right-aligned against
 * [B, Hq, Sq, Sk], each equal or 1. A row that sees no key (fully masked, causal with Sq > Sk, or
 * Sk = 0) outputs 0; a NaN score makes its row NaN. opts NULL: full attention, scale 1/sqrt(D), no
 * mask; the scale must be finite. Sq <= 16 takes the decode path (the KV length split into chunks
 * that depend on Sk only, partials merged in a fixed order: bitwise identical for any thread
 * count). Refused (TL_ERR_SHAPE / TL_ERR_DTYPE / TL_ERR_INVALID / TL_ERR_VMEM, o untouched) with
 * a message naming the operand; o may not overlap q, k, v or the mask. */
TL_API tl_status tl_attention(tl_ctx *ctx, const tl_tensor *q, const tl_tensor *k, const tl_tensor *v, tl_tensor *o,
                              const tl_attention_opts *opts);

#ifdef __cplusplus
}
#endif

#endif /* TILEC_OPS_H */
