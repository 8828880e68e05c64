/* hooks_avx512.h — the AVX-512 definitions of the row-code hooks (src/tile/vec_hooks.h) and of
 * the rows kernels' streaming stores, for the AVX-512 instance files (rows_avx512.c,
 * attn_avx512.c; the AVX512-BF16 ones add to it): streaming stores (vmovntps / vmovntdq), exp's
 * 2^n applied by vscalefps (one rounding, as the two-step scaling of the generic code), and max /
 * min as single instructions. */
#ifndef TL_HOOKS_AVX512_H
#define TL_HOOKS_AVX512_H

#include <immintrin.h>

#define TL_RK_W 16 /* one zmm per vector */

#define TL_RK_NT_F32(p, v) _mm512_stream_ps((float *)(p), (__m512)(v))
#define TL_RK_NT_BF16(p, h) _mm256_stream_si256((__m256i *)(void *)(p), (__m256i)(h))
#define TL_RK_NT_FENCE() _mm_sfence()
/* bf16 -> f32 as one vpmovzxwd and a shift (GCC 12's own widening of the GNU C vector takes five
 * instructions, three of them shuffles) */
#define TL_RK_FROM_BF16(h) ((tl_rkv)_mm512_slli_epi32(_mm512_cvtepu16_epi32((__m256i)(h)), 16))
#define TL_RK_LDEXP(p, n) ((tl_rkv)_mm512_scalef_ps((__m512)(p), (__m512)(n)))
/* vmaxps / vminps (the second operand when either is NaN, as vec_hooks.h asks): one instruction
 * where GCC makes a compare and a masked move of the generic selection */
#define TL_RK_MAXPS(a, b) ((tl_rkv)_mm512_max_ps((__m512)(a), (__m512)(b)))
#define TL_RK_MINPS(a, b) ((tl_rkv)_mm512_min_ps((__m512)(a), (__m512)(b)))

#endif /* TL_HOOKS_AVX512_H */
