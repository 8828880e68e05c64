/* rows_scalar.c — the portable baseline instance of the fused row kernels (rows_kern.h),
 * compiled with the library's baseline flags (tl_vf32 becomes four SSE registers on x86-64):
 * the reference every ISA instance is tested against, and the path under TILEC_ISA=scalar.
 * No streaming stores. */
#include "rows_kern.h"

const tl_rows_impl tl_rows_scalar_impl = {
    .isa = TL_ISA_SCALAR,
    .name = "scalar",
    .max_row = tl_rk_max_row,
    .sumexp_row = tl_rk_sumexp_row,
    .sum_row = tl_rk_sum_row,
    .sumdev_row = tl_rk_sumdev_row,
    .scale_row = tl_rk_scale_row,
    .expscale_row = tl_rk_expscale_row,
    .shift_row = tl_rk_shift_row,
    .norm_row = tl_rk_norm_row,
    .max_acc = tl_rk_max_acc,
    .sumexp_acc = tl_rk_sumexp_acc,
    .scale_vv = tl_rk_scale_vv,
    .expscale_vv = tl_rk_expscale_vv,
    .shift_vv = tl_rk_shift_vv,
};
