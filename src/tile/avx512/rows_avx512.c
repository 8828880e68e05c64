/* rows_avx512.c — the AVX-512 instance of the fused row kernels (rows_kern.h, contract in
 * rows_impl.h): the same source compiled with this folder's flags (16-lane vectors, one zmm), with
 * streaming stores (vmovntps / vmovntdq) for outputs the caller marks nt, and exp's 2^n applied
 * by vscalefps (one rounding, as the two-step scaling of the generic code). */
#include "hooks_avx512.h"
#include "../rows_kern.h"

const tl_rows_impl tl_rows_avx512_impl = TL_RK_TABLE(TL_ISA_AVX512, "avx512");
