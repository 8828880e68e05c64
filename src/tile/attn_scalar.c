/* attn_scalar.c — attention's online-softmax helpers (attn_kern.h) compiled with the baseline
 * flags: the reference instance the ISA instances are tested against. */
#include "attn_kern.h"

const tl_attn_impl tl_attn_scalar_impl = {.isa = TL_ISA_SCALAR, .name = "scalar", .row = tl_ak_row, .scale = tl_ak_scale,
                                     .store = tl_ak_store_row, .qk = tl_ak_qk, .pv = tl_ak_pv};
