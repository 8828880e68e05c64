/* rows_avx512bf16.c — the AVX512-BF16 instance of the fused row kernels (rows_kern.h, contract
 * in rows_impl.h): the AVX-512 instance with bf16 outputs converted by vcvtneps2bf16
 * (hooks_avx512bf16.h says what that changes for denormals). */
#include "hooks_avx512bf16.h"
#include "../rows_kern.h"

const tl_rows_impl tl_rows_avx512bf16_impl = TL_RK_TABLE(TL_ISA_AVX512BF16, "avx512bf16");
