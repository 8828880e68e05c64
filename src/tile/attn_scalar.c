/* attn_scalar.c — attention's online-softmax helpers (attn_kern.h) compiled with the baseline
 * flags: the reference instance the ISA instances are tested against. */
#include "attn_kern.h"

const tl_attn_impl tl_attn_scalar_impl = {.isa = TL_ISA_SCALAR, .name = "scalar", .prep = tl_ak_prep,
                                     .exp_sum = tl_ak_exp_sum, .scale = tl_ak_scale, .to_bf16 = tl_ak_to_bf16,
                                     .store = tl_ak_store_row, .qk = tl_ak_qk, .pv = tl_ak_pv};
