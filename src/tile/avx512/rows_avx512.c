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

const tl_rows_impl tl_rows_avx512_impl = TL_RK_TABLE(TL_ISA_AVX512, "avx512");
