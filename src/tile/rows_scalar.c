/* rows_scalar.c — the portable baseline instance of the fused row kernels (rows_kern.h),
 * compiled with the library's baseline flags (tl_vf32 becomes four SSE registers on x86-64):
 * the reference every ISA instance is tested against, and the path under TILEC_ISA=scalar.
 * No streaming stores. */
#include "rows_kern.h"

const tl_rows_impl tl_rows_scalar_impl = TL_RK_TABLE(TL_ISA_SCALAR, "scalar");
