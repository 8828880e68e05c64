/* attn_avx512bf16.c — attention's online-softmax helpers (attn_kern.h) with the AVX512-BF16 row
 * hooks: P rounded to bf16 by vcvtneps2bf16 (a probability below 2^-126 becomes 0). */
#include "hooks_avx512bf16.h"
#include "../attn_kern.h"

const tl_attn_impl tl_attn_avx512bf16_impl = TL_AK_TABLE(TL_ISA_AVX512BF16, "avx512bf16");
