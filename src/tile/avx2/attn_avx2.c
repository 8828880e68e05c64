/* attn_avx2.c — attention's online-softmax helpers (attn_kern.h) compiled with the avx2 flags and
 * the AVX2 row settings (8-lane vectors, max and min as single instructions). */
#include "hooks_avx2.h"
#include "../attn_kern.h"

const tl_attn_impl tl_attn_avx2_impl = TL_AK_TABLE(TL_ISA_AVX2, "avx2");
