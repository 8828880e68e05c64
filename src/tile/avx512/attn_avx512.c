/* attn_avx512.c — attention's online-softmax helpers (attn_kern.h) compiled with the avx512 flags
 * and the AVX-512 row hooks (vscalefps in exp). */
#include "hooks_avx512.h"
#include "../attn_kern.h"

const tl_attn_impl tl_attn_avx512_impl = TL_AK_TABLE(TL_ISA_AVX512, "avx512");
