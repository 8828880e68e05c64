/* tilec_ops.h — ready-made operations built as kernels of the grid model (tl_matmul, softmax,
 * norms, attention). They land with their issues; this header is where they are declared, and
 * tilec.h includes it so `#include <tilec.h>` always brings the whole API. Nothing is declared
 * here that is not implemented. */
#ifndef TILEC_OPS_H
#define TILEC_OPS_H

#include "tilec.h"

#endif /* TILEC_OPS_H */
