/* rows_avx512.c — the AVX-512 instance of the fused row kernels (rows_kern.h, contract in
 * rows_impl.h): the same source compiled with this folder's flags (tl_vf32 is one zmm), with
 * streaming stores (vmovntps / vmovntdq) for outputs the caller marks nt, and exp's 2^n applied
 * by vscalefps (one rounding, as the two-step scaling of the generic code). */
#include <immintrin.h>

#define TL_RK_NT_F32(p, v) _mm512_stream_ps((float *)(p), (__m512)(v))
#define TL_RK_NT_BF16(p, h) _mm256_stream_si256((__m256i *)(void *)(p), (__m256i)(h))
#define TL_RK_NT_FENCE() _mm_sfence()
#define TL_RK_LDEXP(p, n) ((tl_vf32)_mm512_scalef_ps((__m512)(p), (__m512)(n)))
#include "../rows_kern.h"

const tl_rows_impl tl_rows_avx512_impl = {
    .isa = TL_ISA_AVX512,
    .name = "avx512",
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
