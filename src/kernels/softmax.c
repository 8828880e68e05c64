/* softmax.c — tl_softmax and tl_log_softmax: the public entry points. Both are kernels of the
 * grid model built by the shared driver (rows_op.c, norm_impl.h): rows of the reduced axis in
 * blocks of whole rows (or, along a non-last axis, blocks [1, A, columns]) read once and written
 * once when a row fits the staging budget, an online two-level reduction when it does not.
 * Grids, numerics and measured errors: docs/norms.md. */
#include "norm_impl.h"

tl_status tl_softmax(tl_ctx *ctx, const tl_tensor *x, tl_tensor *y, int axis) {
  tl_ro_req rq = {.kind = TL_RO_SOFTMAX, .x = x, .y = y, .axis = axis};
  return tl_ro_call(ctx, &rq);
}

tl_status tl_log_softmax(tl_ctx *ctx, const tl_tensor *x, tl_tensor *y, int axis) {
  tl_ro_req rq = {.kind = TL_RO_LOG_SOFTMAX, .x = x, .y = y, .axis = axis};
  return tl_ro_call(ctx, &rq);
}
