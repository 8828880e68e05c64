/* rows_scalar.c — the portable baseline instance of the fused row kernels (rows_kern.h),
 * compiled with the library's baseline flags: the path under TILEC_ISA=scalar. Its vectors are
 * 4 lanes, one SSE register on x86-64 (a 128-bit register on other targets too); 16-lane ones
 * were four registers kept on the stack, 2-7x the cycles per element on a Zen 5 core.
 * No streaming stores. */
#define TL_RK_W 4
#include "rows_kern.h"

const tl_rows_impl tl_rows_scalar_impl = TL_RK_TABLE(TL_ISA_SCALAR, "scalar");
