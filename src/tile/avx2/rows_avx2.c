/* rows_avx2.c — the AVX2 + FMA instance of the fused row kernels (rows_kern.h, contract in
 * rows_impl.h): the same source compiled with this folder's flags (8-lane vectors, one ymm
 * each), with streaming stores for outputs the caller marks nt. */
#include "hooks_avx2.h"
#include "../rows_kern.h"

const tl_rows_impl tl_rows_avx2_impl = TL_RK_TABLE(TL_ISA_AVX2, "avx2");
