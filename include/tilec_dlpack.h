/* tilec_dlpack.h — borrow a DLPack tensor (PyTorch, NumPy, JAX, ...) as a tl_tensor.
 * Needs dlpack/dlpack.h (Debian: libdlpack-dev). */
#ifndef TILEC_DLPACK_H
#define TILEC_DLPACK_H

#include <dlpack/dlpack.h>

#include "tilec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fills *out with a view of t (data + byte_offset, shape, strides; NULL strides mean compact
 * row-major). The memory stays owned by t's producer. Refused: t or out NULL (TL_ERR_INVALID), a
 * device other than kDLCPU / kDLCUDAHost (TL_ERR_UNSUPPORTED), lanes != 1 or a dtype tilec lacks
 * (TL_ERR_DTYPE), ndim outside 0..TL_MAX_DIMS, negative sizes or overflowing extents
 * (TL_ERR_SHAPE), a negative stride on a dim of size > 1 (TL_ERR_UNSUPPORTED), byte_offset not a multiple of the element size (TL_ERR_INVALID). The message
 * is in tl_last_error(); *out is untouched on failure. */
TL_API tl_status tl_tensor_from_dlpack(const DLTensor *t, tl_tensor *out);

#ifdef __cplusplus
}
#endif

#endif /* TILEC_DLPACK_H */
