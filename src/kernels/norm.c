/* norm.c — tl_layernorm and tl_rmsnorm: the public entry points. Both normalise over the last
 * axis with the shared driver (rows_op.c, norm_impl.h): blocks of whole rows read once and
 * written once (the moments in one sweep about a shift near the mean, a second sweep where the
 * shift is far, then the apply with gamma / beta), or, for rows beyond the staging budget, chunk
 * moments merged with Chan's parallel formula and a second pass. Numerics and measured errors:
 * docs/norms.md. */
#include "norm_impl.h"

tl_status tl_layernorm(tl_ctx *ctx, const tl_tensor *x, const tl_tensor *gamma, const tl_tensor *beta, float eps,
                       tl_tensor *y) {
  tl_ro_req rq = {.kind = TL_RO_LAYERNORM, .x = x, .gamma = gamma, .beta = beta, .y = y, .eps = eps};
  return tl_ro_call(ctx, &rq);
}

tl_status tl_rmsnorm(tl_ctx *ctx, const tl_tensor *x, const tl_tensor *gamma, float eps, tl_tensor *y) {
  tl_ro_req rq = {.kind = TL_RO_RMSNORM, .x = x, .gamma = gamma, .y = y, .eps = eps};
  return tl_ro_call(ctx, &rq);
}
