/* attn_scalar.c — attention's online-softmax helpers (attn_kern.h) compiled with the baseline
 * flags, on 4-lane vectors (rows_scalar.c says why): the path under TILEC_ISA=scalar. */
#define TL_RK_W 4
#include "attn_kern.h"

const tl_attn_impl tl_attn_scalar_impl = TL_AK_TABLE(TL_ISA_SCALAR, "scalar");
