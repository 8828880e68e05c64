/* test_dlpack.c — tl_tensor_from_dlpack: the dtype mapping, compact and strided views, byte
 * offsets, and every refusal (status, a message in tl_last_error(), *out untouched).
 */
#include "core/core_impl.h"
#include "test_util.h"
#include "tilec_dlpack.h"

static float g_buf[256];

/* A compact 2-d CPU float32 DLTensor over g_buf; shape points at the caller's array. */
static DLTensor dl2(int64_t *shape) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = g_buf;
  t.device.device_type = kDLCPU;
  t.ndim = 2;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  return t;
}

/* Expects t to be refused with status want and a message containing needle (may be NULL),
 * leaving *out exactly as it was. */
static void expect_refused(const DLTensor *t, tl_status want, const char *needle, const char *label) {
  tl_tensor out, before;
  memset(&out, 0xab, sizeof out);
  before = out;
  tl_set_last_error("%s", "");
  tl_status s = tl_tensor_from_dlpack(t, &out);
  CHECK(s == want, "%s: status %s, want %s (%s)", label, tl_status_name(s), tl_status_name(want), tl_last_error());
  CHECK(memcmp(&out, &before, sizeof out) == 0, "%s: *out was written", label);
  CHECK(tl_last_error()[0] != 0, "%s: no message", label);
  if (needle)
    CHECK(strstr(tl_last_error(), needle) != NULL, "%s: message lacks '%s': %s", label, needle, tl_last_error());
}

static void test_compact(void) {
  int64_t shape[2] = {3, 5};
  DLTensor d = dl2(shape);
  tl_tensor t;
  REQUIRE(tl_tensor_from_dlpack(&d, &t) == TL_OK, "compact: %s", tl_last_error());
  CHECK(t.data == g_buf && t.dtype == TL_F32 && t.ndim == 2, "fields");
  CHECK(t.shape[0] == 3 && t.shape[1] == 5 && t.stride[0] == 5 && t.stride[1] == 1, "shape/strides");
  CHECK(t.layout.tiled == 0 && t.layout.vnni == 0 && t.layout.tile_r == 0, "row-major layout");
  CHECK(tl_tensor_check(&t, "t", NULL, 0) == TL_OK, "result passes tl_tensor_check");
  int64_t idx[2] = {2, 4};
  CHECK(tl_tensor_at(&t, idx) == (void *)(g_buf + 14), "at");

  /* Shape and strides are copied, not borrowed. */
  shape[0] = 99;
  CHECK(t.shape[0] == 3, "shape copied");

  /* ndim 0 with a NULL shape: a scalar. */
  DLTensor s = dl2(NULL);
  s.ndim = 0;
  REQUIRE(tl_tensor_from_dlpack(&s, &t) == TL_OK, "scalar: %s", tl_last_error());
  CHECK(t.ndim == 0 && tl_tensor_numel(&t) == 1, "scalar");

  /* Pinned host memory is host memory. */
  int64_t sh[2] = {2, 2};
  DLTensor p = dl2(sh);
  p.device.device_type = kDLCUDAHost;
  CHECK(tl_tensor_from_dlpack(&p, &t) == TL_OK, "kDLCUDAHost: %s", tl_last_error());

  /* Empty: NULL data and a zero dim are fine. */
  int64_t es[2] = {0, 4};
  DLTensor e = dl2(es);
  e.data = NULL;
  REQUIRE(tl_tensor_from_dlpack(&e, &t) == TL_OK, "empty: %s", tl_last_error());
  CHECK(t.data == NULL && tl_tensor_numel(&t) == 0, "empty view");
}

static void test_strided_and_offset(void) {
  int64_t shape[2] = {4, 3}, strides[2] = {1, 4}; /* a transposed 3 x 4 array */
  DLTensor d = dl2(shape);
  d.strides = strides;
  tl_tensor t;
  REQUIRE(tl_tensor_from_dlpack(&d, &t) == TL_OK, "strided: %s", tl_last_error());
  CHECK(t.stride[0] == 1 && t.stride[1] == 4, "strides copied");
  CHECK(tl_tensor_nbytes(&t) == 12 * 4, "strided nbytes");
  int64_t idx[2] = {3, 2};
  CHECK(tl_tensor_at(&t, idx) == (void *)(g_buf + 3 + 8), "strided at");

  /* Broadcast (zero stride). */
  int64_t bst[2] = {0, 1};
  d.strides = bst;
  REQUIRE(tl_tensor_from_dlpack(&d, &t) == TL_OK, "broadcast: %s", tl_last_error());
  CHECK(t.stride[0] == 0 && tl_tensor_nbytes(&t) == 12, "broadcast view");

  /* byte_offset moves data. */
  d.strides = NULL;
  d.byte_offset = 8;
  REQUIRE(tl_tensor_from_dlpack(&d, &t) == TL_OK, "offset: %s", tl_last_error());
  CHECK(t.data == (void *)(g_buf + 2), "byte_offset 8 on f32 -> data + 2 elements");
  int64_t s1[1] = {6};
  DLTensor h = dl2(s1);
  h.ndim = 1;
  h.dtype.bits = 16;
  h.byte_offset = 6;
  REQUIRE(tl_tensor_from_dlpack(&h, &t) == TL_OK, "f16 offset: %s", tl_last_error());
  CHECK(t.dtype == TL_F16 && t.data == (void *)((char *)g_buf + 6), "byte_offset 6 on f16");

  /* A negative stride on a size-1 dim is never used: it becomes 0. */
  int64_t s3[2] = {1, 5}, st3[2] = {-7, 1};
  DLTensor n = dl2(s3);
  n.strides = st3;
  REQUIRE(tl_tensor_from_dlpack(&n, &t) == TL_OK, "size-1 negative stride: %s", tl_last_error());
  CHECK(t.stride[0] == 0 && t.stride[1] == 1, "size-1 negative stride -> 0");
}

static void test_dtypes(void) {
  static const struct { uint8_t code, bits; tl_dtype want; } map[] = {
      {kDLFloat, 32, TL_F32}, {kDLFloat, 16, TL_F16}, {kDLBfloat, 16, TL_BF16},
      {kDLInt, 8, TL_I8},     {kDLUInt, 8, TL_U8},    {kDLInt, 32, TL_I32},
  };
  int64_t shape[2] = {2, 2};
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
    DLTensor d = dl2(shape);
    d.dtype.code = map[i].code;
    d.dtype.bits = map[i].bits;
    tl_tensor t;
    tl_status s = tl_tensor_from_dlpack(&d, &t);
    CHECK(s == TL_OK && t.dtype == map[i].want, "code %u bits %u -> %s", map[i].code, map[i].bits,
          tl_dtype_name(map[i].want));
  }
  static const struct { uint8_t code, bits; } bad[] = {
      {kDLFloat, 64}, {kDLFloat, 8},   {kDLBfloat, 32}, {kDLInt, 16}, {kDLInt, 64},
      {kDLUInt, 16},  {kDLUInt, 32},   {kDLComplex, 64}, {kDLOpaqueHandle, 64}, {200, 32},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    DLTensor d = dl2(shape);
    d.dtype.code = bad[i].code;
    d.dtype.bits = bad[i].bits;
    char label[64];
    snprintf(label, sizeof label, "dtype code %u bits %u", bad[i].code, bad[i].bits);
    expect_refused(&d, TL_ERR_DTYPE, "dtype", label);
  }
  DLTensor l = dl2(shape);
  l.dtype.lanes = 4;
  expect_refused(&l, TL_ERR_DTYPE, "4 lanes", "lanes 4");
  l.dtype.lanes = 0;
  expect_refused(&l, TL_ERR_DTYPE, "0 lanes", "lanes 0");
}

static void test_refusals(void) {
  int64_t shape[2] = {3, 4};
  DLTensor d = dl2(shape);
  tl_tensor out;
  expect_refused(NULL, TL_ERR_INVALID, "t is NULL", "t NULL");
  tl_set_last_error("%s", "");
  CHECK(tl_tensor_from_dlpack(&d, NULL) == TL_ERR_INVALID && strstr(tl_last_error(), "out"), "out NULL");

  d.device.device_type = kDLCUDA;
  expect_refused(&d, TL_ERR_UNSUPPORTED, "device type 2", "CUDA device");
  d = dl2(shape);
  d.device.device_type = kDLROCM;
  expect_refused(&d, TL_ERR_UNSUPPORTED, "device", "ROCm device");

  d = dl2(shape);
  d.ndim = -1;
  expect_refused(&d, TL_ERR_SHAPE, "ndim -1", "ndim -1");
  d.ndim = 7;
  expect_refused(&d, TL_ERR_SHAPE, "ndim 7", "ndim 7");
  d = dl2(NULL);
  expect_refused(&d, TL_ERR_INVALID, "shape is NULL", "NULL shape");

  int64_t neg[2] = {3, -2};
  d = dl2(neg);
  expect_refused(&d, TL_ERR_SHAPE, "dim 1 has negative size -2", "negative size");

  d = dl2(shape);
  d.byte_offset = 2;
  expect_refused(&d, TL_ERR_INVALID, "byte_offset 2", "misaligned byte_offset");
  d.byte_offset = (uint64_t)1 << 63;
  expect_refused(&d, TL_ERR_SHAPE, "byte_offset", "byte_offset past int64");
  d.byte_offset = (uint64_t)INT64_MAX - 7; /* a multiple of 4; plus 48 bytes overflows */
  expect_refused(&d, TL_ERR_SHAPE, "overflow", "byte_offset plus extent overflows");

  int64_t nst[2] = {4, -1};
  d = dl2(shape);
  d.strides = nst;
  expect_refused(&d, TL_ERR_UNSUPPORTED, "negative stride -1", "negative stride");

  int64_t ost[2] = {INT64_MAX / 2 + 1, 1};
  d = dl2(shape);
  d.strides = ost;
  expect_refused(&d, TL_ERR_SHAPE, "overflow", "stride overflow");

  int64_t huge[2] = {(int64_t)1 << 40, (int64_t)1 << 40};
  d = dl2(huge);
  expect_refused(&d, TL_ERR_SHAPE, "overflow", "element count overflow");
  int64_t huge3[3] = {0, (int64_t)1 << 40, (int64_t)1 << 40};
  d = dl2(huge3);
  d.ndim = 3;
  expect_refused(&d, TL_ERR_SHAPE, "overflow", "compact stride overflow");

  d = dl2(shape);
  d.data = NULL;
  expect_refused(&d, TL_ERR_INVALID, "NULL", "NULL data");

  /* A refusal after a success: *out keeps the earlier view. */
  d = dl2(shape);
  REQUIRE(tl_tensor_from_dlpack(&d, &out) == TL_OK, "good: %s", tl_last_error());
  tl_tensor keep = out;
  d.dtype.bits = 64;
  CHECK(tl_tensor_from_dlpack(&d, &out) == TL_ERR_DTYPE && memcmp(&keep, &out, sizeof out) == 0,
        "refusal keeps *out");
}

int main(void) {
  RUN(test_compact);
  RUN(test_strided_and_offset);
  RUN(test_dtypes);
  RUN(test_refusals);
  return test_summary("core_dlpack");
}
