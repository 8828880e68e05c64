/* rows_avx512bf16.c — the AVX512-BF16 instance of the fused row kernels (rows_kern.h, contract
 * in rows_impl.h): the AVX-512 instance (streaming stores, vscalefps in exp) with bf16 outputs
 * converted by vcvtneps2bf16, one instruction instead of the nine of tl_vf32_to_bf16 (bf16
 * layernorm's output sweep was 2.5x the f32 one without it). The instruction rounds to nearest
 * even and keeps NaN quiet like tl_vf32_to_bf16, but treats f32 denormal inputs as zero: an
 * output below 2^-126 in magnitude becomes +-0 instead of a bf16 denormal (as the AVX512-BF16 and
 * AMX dot instructions treat bf16 denormals, DESIGN.md "Numerics"). */
#include <immintrin.h>

#define TL_RK_NT_F32(p, v) _mm512_stream_ps((float *)(p), (__m512)(v))
#define TL_RK_NT_BF16(p, h) _mm256_stream_si256((__m256i *)(void *)(p), (__m256i)(h))
#define TL_RK_NT_FENCE() _mm_sfence()
#define TL_RK_LDEXP(p, n) ((tl_vf32)_mm512_scalef_ps((__m512)(p), (__m512)(n)))
#define TL_RK_TO_BF16(v) ((tl_vu16)_mm512_cvtneps_pbh((__m512)(v)))
#include "../rows_kern.h"

const tl_rows_impl tl_rows_avx512bf16_impl = {
    .isa = TL_ISA_AVX512BF16,
    .name = "avx512bf16",
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
