/* attn_scalar.c — attention's online-softmax helpers (attn_kern.h) compiled with the baseline
 * flags: the reference instance the ISA instances are tested against. */
#include "attn_kern.h"

const tl_attn_impl tl_attn_scalar_impl = TL_AK_TABLE(TL_ISA_SCALAR, "scalar");
