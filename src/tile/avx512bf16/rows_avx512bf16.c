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

const tl_rows_impl tl_rows_avx512bf16_impl = TL_RK_TABLE(TL_ISA_AVX512BF16, "avx512bf16");
