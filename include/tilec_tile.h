/* tilec_tile.h — what a step body calls: tile operations on refs.
 *
 * Each op checks its refs (shapes, dtypes, layouts) and reports misuse through tl_prog_fail on
 * the step's program (never an abort); p may be NULL outside a body, then misuse is ignored and
 * the op does nothing, and valid calls run the scalar reference (no context says which ISA paths
 * are allowed there). Ops work on the full block shape (shape[], not valid[]): staged padding
 * holds the BlockSpec's pad value, so a dot over zero-padded blocks is exact, and writes beyond
 * valid are dropped at write-back. Floating work is in f32; integer dot products accumulate in
 * int32. The implementation for each op is chosen per context from the ISA paths the CPU has
 * (scalar reference always present; faster paths register themselves, see docs/kernels.md). */
#ifndef TILEC_TILE_H
#define TILEC_TILE_H

#include "tilec.h"
#include "tilec_vec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(enumerator, name) */
#define TL_UNARY_LIST(X) \
  X(TL_UNARY_IDENTITY, "identity") \
  X(TL_UNARY_EXP, "exp")     \
  X(TL_UNARY_LOG, "log")     \
  X(TL_UNARY_TANH, "tanh")   \
  X(TL_UNARY_ERF, "erf")     \
  X(TL_UNARY_GELU, "gelu")   \
  X(TL_UNARY_SILU, "silu")   \
  X(TL_UNARY_RELU, "relu")   \
  X(TL_UNARY_NEG, "neg")     \
  X(TL_UNARY_SQRT, "sqrt")   \
  X(TL_UNARY_RSQRT, "rsqrt") \
  X(TL_UNARY_RECIP, "recip")
typedef enum tl_unary {
#define TL_X_(e, n) e,
  TL_UNARY_LIST(TL_X_)
#undef TL_X_
} tl_unary;
#define TL_UNARY_COUNT 12

#define TL_BINARY_LIST(X) \
  X(TL_BINARY_ADD, "add") \
  X(TL_BINARY_SUB, "sub") \
  X(TL_BINARY_MUL, "mul") \
  X(TL_BINARY_DIV, "div") \
  X(TL_BINARY_MAX, "max") \
  X(TL_BINARY_MIN, "min")
typedef enum tl_binary {
#define TL_X_(e, n) e,
  TL_BINARY_LIST(TL_X_)
#undef TL_X_
} tl_binary;
#define TL_BINARY_COUNT 6

#define TL_REDUCE_LIST(X) \
  X(TL_REDUCE_SUM, "sum") \
  X(TL_REDUCE_MAX, "max") \
  X(TL_REDUCE_MIN, "min")
typedef enum tl_reduce {
#define TL_X_(e, n) e,
  TL_REDUCE_LIST(TL_X_)
#undef TL_X_
} tl_reduce;
#define TL_REDUCE_COUNT 3

/* tl_tile_dot flags */
enum {
  TL_DOT_ACCUMULATE = 1u, /* acc += a @ b (else acc = a @ b) */
  TL_DOT_TRANS_B = 2u     /* b is given as [N, K] (row-major only) */
};

/* acc (+)= a @ b (2-D refs). a: [M, K] row-major or tiled (vnni 1); b: [K, N] row-major, or
 * tiled with vnni 1/2/4 (the AMX B layout), or [N, K] with TL_DOT_TRANS_B; acc: [M, N]
 * row-major, f32 for f32/f16/bf16 inputs, i32 for i8/u8 inputs (a and b may mix i8 and u8). a
 * and b share a floating dtype, or are both 8-bit integers. Floating sums run in f32 in
 * increasing k (bf16 denormals read as zero, as the AMX and AVX512-BF16 instructions do);
 * integer sums are exact and saturate when stored to i32 (the hardware wraps instead: the two
 * agree while the true result fits in int32). */
TL_API void tl_tile_dot(const tl_prog *p, tl_ref *acc, const tl_ref *a, const tl_ref *b, unsigned flags);
/* Every element of r's full block (row-major or tiled) set to v, converted to r's dtype
 * (integers saturate, NaN becomes 0 for integers). */
TL_API void tl_tile_fill(tl_ref *r, double v);
/* dst = src converted to dst's dtype (same shape; layouts may differ). Float -> int rounds to
 * nearest even and saturates; NaN -> 0. */
TL_API void tl_tile_cast(tl_ref *dst, const tl_ref *src);
/* dst = op(src), elementwise in f32 (same shape; row-major; dst may be src). */
TL_API void tl_tile_unary(tl_ref *dst, const tl_ref *src, tl_unary op);
/* dst = a op b, elementwise in f32 (a has dst's shape). b has dst's number of dims with equal
 * leading dims and each of the last two equal to dst's or 1 (a row vector [1, C], a column vector
 * [R, 1], a scalar [1, 1]), or b is 1-D [C] against a dst of >= 2 dims. dst may alias a or b.
 * max and min return the first NaN operand. */
TL_API void tl_tile_binary(tl_ref *dst, const tl_ref *a, const tl_ref *b, tl_binary op);
/* dst = reduce src over `axis` (negative counts from the end). dst has src's shape with that dim
 * 1 (or the dim removed). Results in dst's dtype: float sums in f32; integer src into integer dst
 * sums exactly and saturates; float src into integer dst sums in f32, then rounds and saturates.
 * An empty axis gives sum 0, max -inf, min +inf; max and min propagate NaN. */
TL_API void tl_tile_reduce(tl_ref *dst, const tl_ref *src, int axis, tl_reduce op);

/* Names, for messages and tools. */
TL_API const char *tl_unary_name(tl_unary op);
TL_API const char *tl_binary_name(tl_binary op);
TL_API const char *tl_reduce_name(tl_reduce op);

#ifdef __cplusplus
}
#endif

#endif /* TILEC_TILE_H */
