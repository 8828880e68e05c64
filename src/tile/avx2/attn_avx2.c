/* attn_avx2.c — attention's online-softmax helpers (attn_kern.h) compiled with the avx2 flags and
 * the AVX2 row hooks (max, min and exp's scaling per ymm half). */
#include "hooks_avx2.h"
#include "../attn_kern.h"

const tl_attn_impl tl_attn_avx2_impl = {.isa = TL_ISA_AVX2, .name = "avx2", .row = tl_ak_row, .scale = tl_ak_scale,
                                     .store = tl_ak_store_row, .qk = tl_ak_qk, .pv = tl_ak_pv};
