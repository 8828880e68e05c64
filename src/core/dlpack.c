/* dlpack.c — borrowing a DLPack tensor (PyTorch, NumPy, JAX, ...) as a tl_tensor view.
 *
 * Invariants: the result is a row-major view (data + byte_offset, shape, strides in elements)
 * that passes tl_tensor_check; the memory stays owned by the producer; nothing is allocated or
 * copied. *out is written only on success, and every refusal leaves its reason in
 * tl_last_error().
 */
#include <stdio.h>
#include <string.h>

#include "core_impl.h"
#include "tilec_dlpack.h"

/* The tilec dtype for a DLPack (code, bits) with lanes == 1; TL_DTYPE_INVALID if tilec lacks it. */
static tl_dtype tl_dtype_from_dl(DLDataType t) {
  switch (t.code) {
  case kDLFloat: return t.bits == 32 ? TL_F32 : t.bits == 16 ? TL_F16 : TL_DTYPE_INVALID;
  case kDLBfloat: return t.bits == 16 ? TL_BF16 : TL_DTYPE_INVALID;
  case kDLInt: return t.bits == 8 ? TL_I8 : t.bits == 32 ? TL_I32 : TL_DTYPE_INVALID;
  case kDLUInt: return t.bits == 8 ? TL_U8 : TL_DTYPE_INVALID;
  default: return TL_DTYPE_INVALID;
  }
}

/* Name of a DLPack type code for messages. */
static const char *tl_dl_code_name(uint8_t code) {
  switch (code) {
  case kDLInt: return "int";
  case kDLUInt: return "uint";
  case kDLFloat: return "float";
  case kDLBfloat: return "bfloat";
  case kDLOpaqueHandle: return "opaque";
  case kDLComplex: return "complex";
  default: return "code";
  }
}

/* Fills *out with a view of t; see include/tilec_dlpack.h for the refusals. Negative strides
 * (a flipped NumPy array) are valid DLPack that tilec does not address: TL_ERR_UNSUPPORTED,
 * except on dims of size 0 or 1, where a stride is never used and becomes 0. */
tl_status tl_tensor_from_dlpack(const DLTensor *t, tl_tensor *out) {
  if (!t || !out) return tl_fail_tls(TL_ERR_INVALID, "tl_tensor_from_dlpack: %s is NULL", !t ? "t" : "out");
  if (t->device.device_type != kDLCPU && t->device.device_type != kDLCUDAHost)
    return tl_fail_tls(TL_ERR_UNSUPPORTED,
                       "tl_tensor_from_dlpack: device type %d is not host memory (kDLCPU or kDLCUDAHost)",
                       (int)t->device.device_type);
  if (t->dtype.lanes != 1)
    return tl_fail_tls(TL_ERR_DTYPE, "tl_tensor_from_dlpack: dtype has %u lanes (tilec needs 1)",
                       (unsigned)t->dtype.lanes);
  tl_dtype dt = tl_dtype_from_dl(t->dtype);
  if (dt == TL_DTYPE_INVALID)
    return tl_fail_tls(TL_ERR_DTYPE,
                       "tl_tensor_from_dlpack: dtype %s%u (code %u) is not one of float32, float16, "
                       "bfloat16, int8, uint8, int32",
                       tl_dl_code_name(t->dtype.code), (unsigned)t->dtype.bits, (unsigned)t->dtype.code);
  if (t->ndim < 0 || t->ndim > TL_MAX_DIMS)
    return tl_fail_tls(TL_ERR_SHAPE, "tl_tensor_from_dlpack: ndim %d is outside 0..%d", t->ndim, TL_MAX_DIMS);
  if (t->ndim > 0 && !t->shape)
    return tl_fail_tls(TL_ERR_INVALID, "tl_tensor_from_dlpack: shape is NULL with ndim %d", t->ndim);

  tl_tensor v;
  memset(&v, 0, sizeof v);
  v.dtype = dt;
  v.ndim = t->ndim;
  for (int d = 0; d < t->ndim; d++) {
    if (t->shape[d] < 0)
      return tl_fail_tls(TL_ERR_SHAPE, "tl_tensor_from_dlpack: dim %d has negative size %lld", d,
                         (long long)t->shape[d]);
    v.shape[d] = t->shape[d];
  }
  if (t->strides) {
    for (int d = 0; d < t->ndim; d++) {
      int64_t st = t->strides[d];
      if (st < 0 && v.shape[d] > 1)
        return tl_fail_tls(TL_ERR_UNSUPPORTED,
                           "tl_tensor_from_dlpack: dim %d has negative stride %lld (tilec needs strides >= 0; "
                           "make the array contiguous first)",
                           d, (long long)st);
      v.stride[d] = st < 0 ? 0 : st;
    }
  } else {
    /* Compact row-major; zero sizes count as 1 so an empty array's strides cannot overflow. */
    int64_t st = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
      v.stride[d] = st;
      if (d > 0 && tl_mul_ovf(st, TL_MAX(v.shape[d], 1), &st))
        return tl_fail_tls(TL_ERR_SHAPE, "tl_tensor_from_dlpack: stride of dim %d overflows int64", d - 1);
    }
  }

  int64_t esize = (int64_t)tl_dtype_size(dt);
  if (t->byte_offset % (uint64_t)esize)
    return tl_fail_tls(TL_ERR_INVALID,
                       "tl_tensor_from_dlpack: byte_offset %llu is not a multiple of the %s element size %lld",
                       (unsigned long long)t->byte_offset, tl_dtype_name(dt), (long long)esize);

  /* The extent first (tl_tensor_nbytes ignores data, so an overflow is reported as such even
   * when data is NULL), then the extent plus the byte offset. */
  char msg[256] = "";
  tl_status s;
  int64_t nbytes = tl_tensor_nbytes(&v), end;
  if (nbytes < 0) {
    s = tl_tensor_check(&v, "dlpack tensor", msg, sizeof msg);
    return tl_fail_tls(s != TL_OK ? s : TL_ERR_INTERNAL, "tl_tensor_from_dlpack: %s", msg);
  }
  if (t->byte_offset > (uint64_t)INT64_MAX || tl_add_ovf((int64_t)t->byte_offset, nbytes, &end) ||
      (t->data && (uintptr_t)t->data + (uint64_t)end < (uintptr_t)t->data))
    return tl_fail_tls(TL_ERR_SHAPE,
                       "tl_tensor_from_dlpack: byte_offset %llu plus the %lld bytes the tensor spans overflows",
                       (unsigned long long)t->byte_offset, (long long)nbytes);
  if (t->data) v.data = (char *)t->data + t->byte_offset;
  s = tl_tensor_check(&v, "dlpack tensor", msg, sizeof msg);
  if (s != TL_OK) return tl_fail_tls(s, "tl_tensor_from_dlpack: %s", msg);
  *out = v;
  return TL_OK;
}
