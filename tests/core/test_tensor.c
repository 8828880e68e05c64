/* test_tensor.c — tensor views: tl_tensor_make / make_tiled (good and bad arguments),
 * tl_tensor_check on hand-built tensors (every refusal, with its status and message),
 * tl_tensor_numel / nbytes for contiguous, strided, broadcast and tiled tensors, and
 * tl_tensor_at for row-major and tiled layouts (checked against an independent walk of the
 * tile storage).
 */
#include "core/core_impl.h"
#include "test_util.h"

static float g_buf[4096];

/* A valid row-major f32 tensor over g_buf with the given shape (compact strides). */
static tl_tensor mk(int ndim, const int64_t *shape) { return tl_tensor_make(g_buf, TL_F32, ndim, shape); }

/* Checks t and expects status want, with a message containing every non-NULL needle. */
static void expect_check(const tl_tensor *t, tl_status want, const char *n1, const char *n2, const char *label) {
  char msg[256];
  memset(msg, 0, sizeof msg);
  tl_status s = tl_tensor_check(t, "a", msg, sizeof msg);
  CHECK(s == want, "%s: status %s, want %s (%s)", label, tl_status_name(s), tl_status_name(want), msg);
  if (want == TL_OK) return;
  CHECK(msg[0] != 0, "%s: empty message", label);
  CHECK(strncmp(msg, "a:", 2) == 0, "%s: message does not name the tensor: %s", label, msg);
  if (n1) CHECK(strstr(msg, n1) != NULL, "%s: message lacks '%s': %s", label, n1, msg);
  if (n2) CHECK(strstr(msg, n2) != NULL, "%s: message lacks '%s': %s", label, n2, msg);
  CHECK(tl_tensor_check(t, "a", NULL, 0) == want, "%s: NULL msg", label);
  CHECK(tl_tensor_numel(t) == -1 || want == TL_ERR_INVALID, "%s: numel of an invalid tensor", label);
}

/* A zeroed tensor, as tl_tensor_make returns on bad arguments. */
static int is_zeroed(const tl_tensor *t) {
  static const tl_tensor zero;
  return memcmp(t, &zero, sizeof zero) == 0;
}

/* Calls tl_tensor_make with bad arguments and expects the zeroed tensor and a message. */
static void expect_make_fails(void *data, tl_dtype dt, int ndim, const int64_t *shape, const char *needle,
                              const char *label) {
  tl_set_last_error("%s", "");
  tl_tensor t = tl_tensor_make(data, dt, ndim, shape);
  CHECK(t.dtype == TL_DTYPE_INVALID && is_zeroed(&t), "%s: tensor not zeroed", label);
  CHECK(tl_last_error()[0] != 0, "%s: no message", label);
  if (needle) CHECK(strstr(tl_last_error(), needle) != NULL, "%s: message lacks '%s': %s", label, needle,
                    tl_last_error());
  CHECK(tl_tensor_check(&t, "a", NULL, 0) == TL_ERR_DTYPE, "%s: zeroed tensor is not refused as DTYPE", label);
}

static void test_make_good(void) {
  int64_t s3[3] = {2, 3, 5};
  tl_tensor t = mk(3, s3);
  CHECK(t.data == g_buf && t.dtype == TL_F32 && t.ndim == 3, "fields");
  CHECK(t.shape[0] == 2 && t.shape[1] == 3 && t.shape[2] == 5, "shape");
  CHECK(t.stride[0] == 15 && t.stride[1] == 5 && t.stride[2] == 1, "strides");
  CHECK(t.stride[3] == 0 && t.shape[3] == 0, "unused dims zero");
  CHECK(t.layout.tiled == 0 && t.layout.vnni == 0, "row-major layout");
  CHECK(tl_tensor_check(&t, "a", NULL, 0) == TL_OK, "check");
  CHECK(tl_tensor_numel(&t) == 30 && tl_tensor_nbytes(&t) == 120, "numel/nbytes");

  tl_tensor sc = tl_tensor_make(g_buf, TL_BF16, 0, NULL);
  CHECK(sc.dtype == TL_BF16 && sc.ndim == 0, "scalar");
  CHECK(tl_tensor_numel(&sc) == 1 && tl_tensor_nbytes(&sc) == 2, "scalar numel/nbytes");
  CHECK(tl_tensor_at(&sc, NULL) == g_buf, "scalar at");

  int64_t z[3] = {4, 0, 3};
  tl_tensor e = tl_tensor_make(NULL, TL_I8, 3, z);
  CHECK(e.dtype == TL_I8, "zero-size dim is valid");
  CHECK(e.stride[0] == 3 && e.stride[1] == 3 && e.stride[2] == 1, "zero dim counts as 1 in strides");
  CHECK(tl_tensor_numel(&e) == 0 && tl_tensor_nbytes(&e) == 0, "empty numel/nbytes");
  CHECK(tl_tensor_check(&e, "a", NULL, 0) == TL_OK, "empty tensor with NULL data is valid");

  /* Huge sizes beside a zero: numel 0, no overflow. */
  int64_t hz[3] = {0, (int64_t)1 << 40, (int64_t)1 << 20};
  tl_tensor h = tl_tensor_make(NULL, TL_F32, 3, hz);
  CHECK(h.dtype == TL_F32 && tl_tensor_numel(&h) == 0, "huge empty tensor");

  /* NULL data is accepted by make (a shape-only tensor) but refused by check. */
  int64_t s1[1] = {7};
  tl_tensor nd = tl_tensor_make(NULL, TL_I32, 1, s1);
  CHECK(nd.dtype == TL_I32 && tl_tensor_numel(&nd) == 7 && tl_tensor_nbytes(&nd) == 28, "shape-only tensor");
  expect_check(&nd, TL_ERR_INVALID, "NULL", "7", "NULL data");

  int64_t s6[6] = {1, 2, 1, 2, 1, 3};
  tl_tensor t6 = tl_tensor_make(g_buf, TL_U8, 6, s6);
  CHECK(t6.dtype == TL_U8 && tl_tensor_numel(&t6) == 12 && t6.stride[0] == 12, "ndim 6");

  /* The largest element count whose bytes still fit. */
  int64_t big[2] = {(int64_t)1 << 30, (int64_t)1 << 31};
  tl_tensor b = tl_tensor_make(NULL, TL_I8, 2, big);
  CHECK(b.dtype == TL_I8 && tl_tensor_nbytes(&b) == (int64_t)1 << 61, "2^61 bytes");
}

static void test_make_bad(void) {
  int64_t s2[2] = {2, 3};
  expect_make_fails(g_buf, TL_F32, 2, NULL, "shape", "NULL shape");
  expect_make_fails(g_buf, TL_F32, -1, s2, "-1", "ndim -1");
  expect_make_fails(g_buf, TL_F32, 7, s2, "7", "ndim 7");
  expect_make_fails(g_buf, TL_DTYPE_INVALID, 2, s2, "dtype", "dtype 0");
  expect_make_fails(g_buf, (tl_dtype)99, 2, s2, "99", "dtype 99");
  expect_make_fails(g_buf, (tl_dtype)-1, 2, s2, "dtype", "dtype -1");
  int64_t neg[3] = {2, -3, 4};
  expect_make_fails(g_buf, TL_F32, 3, neg, "dim 1 has negative size -3", "negative size");
  int64_t ovf[2] = {(int64_t)1 << 40, (int64_t)1 << 40};
  expect_make_fails(g_buf, TL_F32, 2, ovf, "overflow", "element count overflow");
  int64_t bytes_ovf[2] = {(int64_t)1 << 31, (int64_t)1 << 31}; /* 2^62 elements, 2^64 bytes */
  expect_make_fails(g_buf, TL_F32, 2, bytes_ovf, "overflow", "byte count overflow");
  int64_t max1[1] = {INT64_MAX};
  expect_make_fails(g_buf, TL_I32, 1, max1, "overflow", "INT64_MAX i32 elements");
  tl_tensor m8 = tl_tensor_make(NULL, TL_I8, 1, max1);
  CHECK(m8.dtype == TL_I8 && tl_tensor_nbytes(&m8) == INT64_MAX, "INT64_MAX i8 elements fit exactly");
  int64_t str_ovf[3] = {0, (int64_t)1 << 40, (int64_t)1 << 40};
  expect_make_fails(NULL, TL_F32, 3, str_ovf, "overflow", "stride overflow beside a zero dim");
}

static void test_check_fields(void) {
  int64_t s2[2] = {3, 4};
  expect_check(NULL, TL_ERR_INVALID, "NULL", NULL, "NULL tensor");
  CHECK(tl_tensor_check(NULL, NULL, NULL, 0) == TL_ERR_INVALID, "NULL everything");

  tl_tensor t = mk(2, s2);
  expect_check(&t, TL_OK, NULL, NULL, "good");
  char msg[64] = "untouched";
  CHECK(tl_tensor_check(&t, NULL, msg, sizeof msg) == TL_OK && strcmp(msg, "untouched") == 0,
        "success leaves msg alone");

  t.dtype = TL_DTYPE_INVALID;
  expect_check(&t, TL_ERR_DTYPE, "dtype", NULL, "dtype 0");
  t.dtype = (tl_dtype)7;
  expect_check(&t, TL_ERR_DTYPE, "dtype 7", NULL, "dtype 7");
  t.dtype = (tl_dtype)-3;
  expect_check(&t, TL_ERR_DTYPE, "dtype -3", NULL, "dtype -3");

  t = mk(2, s2);
  t.ndim = -1;
  expect_check(&t, TL_ERR_INVALID, "ndim -1", NULL, "ndim -1");
  t.ndim = 7;
  expect_check(&t, TL_ERR_INVALID, "ndim 7", NULL, "ndim 7");

  t = mk(2, s2);
  t.shape[1] = -3;
  expect_check(&t, TL_ERR_SHAPE, "dim 1 has negative size -3", NULL, "negative size");

  t = mk(2, s2);
  t.stride[0] = -4;
  expect_check(&t, TL_ERR_INVALID, "dim 0", "-4", "negative stride");

  /* Zero strides broadcast: valid, and nbytes covers only what is addressed. */
  t = mk(2, s2);
  t.stride[0] = 0;
  expect_check(&t, TL_OK, NULL, NULL, "broadcast");
  CHECK(tl_tensor_numel(&t) == 12 && tl_tensor_nbytes(&t) == 16, "broadcast rows: numel 12, 16 bytes");
  t.stride[1] = 0;
  CHECK(tl_tensor_nbytes(&t) == 4, "full broadcast: one element");

  /* Strides making the furthest element overflow. */
  t = mk(2, s2);
  t.stride[0] = INT64_MAX / 2 + 1; /* (3 - 1) * stride overflows */
  expect_check(&t, TL_ERR_SHAPE, "dim 0 (size 3, stride 4611686018427387904)", "overflow", "shape x stride overflow");
  t.stride[0] = INT64_MAX / 2; /* (3 - 1) * stride fits, adding dim 1's span does not */
  expect_check(&t, TL_ERR_SHAPE, "dim 1", "overflow", "offset sum overflow");
  t = mk(2, s2);
  t.stride[0] = (INT64_MAX - 100) / 2; /* (3-1) * stride fits, + (4-1) * 1 fits, bytes do not */
  expect_check(&t, TL_ERR_SHAPE, "overflow", NULL, "byte offset overflow");
  t = mk(2, s2);
  t.stride[0] = INT64_MAX / 4 / 3; /* fits in bytes */
  expect_check(&t, TL_OK, NULL, NULL, "large stride that fits");
  t = mk(2, s2);
  t.shape[0] = INT64_MAX / 2;
  t.shape[1] = 3;
  expect_check(&t, TL_ERR_SHAPE, "overflow", NULL, "element count overflow");

  /* Row-major tensors may not carry tile fields. */
  t = mk(2, s2);
  t.layout.vnni = 2;
  expect_check(&t, TL_ERR_INVALID, "vnni", NULL, "row-major with vnni");
  t = mk(2, s2);
  t.layout.tile_c = 16;
  expect_check(&t, TL_ERR_INVALID, "tile_c 16", NULL, "row-major with tile_c");
  t = mk(2, s2);
  t.layout.tiled = 2;
  expect_check(&t, TL_ERR_INVALID, "tiled", NULL, "tiled = 2");

  /* Fields past ndim are ignored. */
  t = mk(2, s2);
  t.shape[4] = -7;
  t.stride[5] = -1;
  expect_check(&t, TL_OK, NULL, NULL, "garbage past ndim");
}

static void test_check_tiled(void) {
  int64_t s2[2] = {5, 7};
  tl_layout l = {1, 2, 4, 8};
  tl_tensor good = tl_tensor_make_tiled(g_buf, TL_BF16, 2, s2, l);
  REQUIRE(good.dtype == TL_BF16, "make_tiled: %s", tl_last_error());
  expect_check(&good, TL_OK, NULL, NULL, "tiled good");

  tl_tensor t = good;
  t.layout.tile_r = 0;
  expect_check(&t, TL_ERR_INVALID, "tile 0 x 8", NULL, "tile_r 0");
  t = good;
  t.layout.tile_c = 0;
  expect_check(&t, TL_ERR_INVALID, "tile 4 x 0", NULL, "tile_c 0");
  t = good;
  t.layout.vnni = 3;
  expect_check(&t, TL_ERR_INVALID, "vnni is 3", NULL, "vnni 3");
  t.layout.vnni = 8;
  t.layout.tile_r = 8;
  expect_check(&t, TL_ERR_INVALID, "vnni is 8", NULL, "vnni 8");
  t = good;
  t.layout.vnni = 4;
  t.layout.tile_r = 6;
  expect_check(&t, TL_ERR_INVALID, "vnni 4 does not divide tile_r 6", NULL, "vnni not dividing");
  t = good;
  t.layout.vnni = 0; /* 0 means 1 */
  expect_check(&t, TL_OK, NULL, NULL, "vnni 0");
  t = good;
  t.stride[1] = 1;
  expect_check(&t, TL_ERR_INVALID, "stride 1 in dim 1", NULL, "tiled with stride");
  t = good;
  t.ndim = 1;
  expect_check(&t, TL_ERR_INVALID, "ndim >= 2", NULL, "tiled ndim 1");
  t.ndim = 0;
  expect_check(&t, TL_ERR_INVALID, "ndim >= 2", NULL, "tiled ndim 0");
  t = good;
  t.shape[0] = (int64_t)1 << 61;
  expect_check(&t, TL_ERR_SHAPE, "element count", "overflow", "tiled element count overflow");
  t.shape[0] = ((int64_t)1 << 59) + 1; /* 7 * (2^59 + 1) elements fit; padded (2^59 + 4) * 8 * 2 bytes do not */
  expect_check(&t, TL_ERR_SHAPE, "padded tile storage", "overflow", "tiled padded storage overflow");
  t = good;
  t.data = NULL;
  expect_check(&t, TL_ERR_INVALID, "NULL", NULL, "tiled NULL data");
}

static void test_make_tiled(void) {
  int64_t s3[3] = {3, 10, 33};
  tl_layout l = {0, 0, 16, 32}; /* tiled and vnni filled in by make_tiled */
  tl_tensor t = tl_tensor_make_tiled(g_buf, TL_BF16, 3, s3, l);
  REQUIRE(t.dtype == TL_BF16, "make_tiled: %s", tl_last_error());
  CHECK(t.layout.tiled == 1 && t.layout.vnni == 1 && t.layout.tile_r == 16 && t.layout.tile_c == 32, "layout");
  for (int d = 0; d < 3; d++) CHECK(t.stride[d] == 0, "tiled stride %d is 0", d);
  CHECK(tl_tensor_numel(&t) == 3 * 10 * 33, "tiled numel");
  CHECK(tl_tensor_nbytes(&t) == 3 * 16 * 64 * 2, "tiled nbytes: padded 16 x 64 per matrix");

  int64_t s2[2] = {4, 4};
  tl_layout bad = {1, 4, 2, 8};
  tl_set_last_error("%s", "");
  tl_tensor b = tl_tensor_make_tiled(g_buf, TL_BF16, 2, s2, bad);
  CHECK(is_zeroed(&b) && strstr(tl_last_error(), "vnni 4 does not divide tile_r 2"), "bad vnni: %s",
        tl_last_error());
  tl_layout zero_tile = {1, 1, 0, 8};
  b = tl_tensor_make_tiled(g_buf, TL_BF16, 2, s2, zero_tile);
  CHECK(is_zeroed(&b) && strstr(tl_last_error(), "tile"), "zero tile: %s", tl_last_error());
  b = tl_tensor_make_tiled(g_buf, TL_BF16, 1, s2, l);
  CHECK(is_zeroed(&b) && strstr(tl_last_error(), "ndim"), "ndim 1: %s", tl_last_error());
  int64_t neg[2] = {4, -1};
  b = tl_tensor_make_tiled(g_buf, TL_BF16, 2, neg, l);
  CHECK(is_zeroed(&b) && strstr(tl_last_error(), "negative"), "negative: %s", tl_last_error());

  int64_t empty[2] = {0, 5};
  tl_tensor e = tl_tensor_make_tiled(NULL, TL_I8, 2, empty, l);
  CHECK(e.dtype == TL_I8 && tl_tensor_numel(&e) == 0 && tl_tensor_nbytes(&e) == 0, "empty tiled");
}

static void test_numel_nbytes(void) {
  int64_t s3[3] = {2, 3, 4};
  tl_tensor t = tl_tensor_make(g_buf, TL_I32, 3, s3);
  CHECK(tl_tensor_numel(&t) == 24 && tl_tensor_nbytes(&t) == 96, "contiguous");
  /* A strided view: rows of a wider array (row pitch 10 elements). */
  t.stride[1] = 10;
  t.stride[0] = 30;
  CHECK(tl_tensor_numel(&t) == 24, "strided numel");
  CHECK(tl_tensor_nbytes(&t) == (1 * 30 + 2 * 10 + 3 * 1 + 1) * 4, "strided nbytes spans to the last element");
  /* Transposed view. */
  int64_t s2[2] = {3, 5};
  tl_tensor tt = tl_tensor_make(g_buf, TL_F16, 2, s2);
  tt.stride[0] = 1;
  tt.stride[1] = 3;
  CHECK(tl_tensor_nbytes(&tt) == 15 * 2, "transposed nbytes");
  CHECK(tl_tensor_numel(NULL) == -1 && tl_tensor_nbytes(NULL) == -1, "NULL tensor -> -1");
  tl_tensor z;
  memset(&z, 0, sizeof z);
  CHECK(tl_tensor_numel(&z) == -1 && tl_tensor_nbytes(&z) == -1, "zeroed tensor -> -1");
  tt.stride[0] = -1;
  CHECK(tl_tensor_numel(&tt) == -1, "negative stride -> -1");
}

static void test_at_row_major(void) {
  int64_t s3[3] = {3, 4, 5};
  tl_tensor t = tl_tensor_make(g_buf, TL_F32, 3, s3);
  for (int64_t i = 0; i < 3; i++)
    for (int64_t j = 0; j < 4; j++)
      for (int64_t k = 0; k < 5; k++) {
        int64_t idx[3] = {i, j, k};
        CHECK(tl_tensor_at(&t, idx) == (void *)(g_buf + (i * 4 + j) * 5 + k), "at %lld,%lld,%lld", (long long)i,
              (long long)j, (long long)k);
      }
  /* Strided and broadcast. */
  int64_t s2[2] = {4, 6};
  tl_tensor u = tl_tensor_make(g_buf, TL_U8, 2, s2);
  u.stride[0] = 0;
  u.stride[1] = 3;
  int64_t idx[2] = {3, 5};
  CHECK(tl_tensor_at(&u, idx) == (void *)((char *)g_buf + 15), "broadcast at");
  tl_tensor h = tl_tensor_make(g_buf, TL_BF16, 2, s2);
  CHECK(tl_tensor_at(&h, idx) == (void *)((char *)g_buf + (3 * 6 + 5) * 2), "bf16 at");
}

/* tl_tensor_at on tiled tensors against an independent enumeration: walk the storage in order
 * (matrix, tile row, tile column, then within a tile by row group of vnni rows, column, row in
 * the group) and check that the element met at storage position p is the one tl_tensor_at
 * puts at p; padding positions map to no element. Every element must be met exactly once. */
static void check_tiled_at(int64_t lead, int64_t R, int64_t C, int tr, int tc, int vnni, tl_dtype dt) {
  int64_t shape[3] = {lead, R, C};
  tl_layout l = {1, (uint8_t)vnni, (uint16_t)tr, (uint16_t)tc};
  static char mem[1 << 16];
  tl_tensor t = tl_tensor_make_tiled(mem, dt, 3, shape, l);
  REQUIRE(t.dtype == dt, "make_tiled %lldx%lldx%lld: %s", (long long)lead, (long long)R, (long long)C,
          tl_last_error());
  int64_t esize = (int64_t)tl_dtype_size(dt);
  int64_t tiles_r = (R + tr - 1) / tr, tiles_c = (C + tc - 1) / tc;
  int64_t total = lead * tiles_r * tiles_c * tr * tc;
  REQUIRE(total * esize <= (int64_t)sizeof mem, "test buffer too small");
  CHECK(tl_tensor_nbytes(&t) == total * esize, "nbytes %lld, want %lld", (long long)tl_tensor_nbytes(&t),
        (long long)(total * esize));
  int bad = 0;
  int64_t p = 0, met = 0;
  for (int64_t b = 0; b < lead; b++)
    for (int64_t ti = 0; ti < tiles_r; ti++)
      for (int64_t tj = 0; tj < tiles_c; tj++)
        for (int64_t g = 0; g < tr / vnni; g++)
          for (int64_t c = 0; c < tc; c++)
            for (int64_t v = 0; v < vnni; v++, p++) {
              int64_t row = ti * tr + g * vnni + v, col = tj * tc + c;
              if (row >= R || col >= C) continue; /* padding */
              int64_t idx[3] = {b, row, col};
              met++;
              if ((char *)tl_tensor_at(&t, idx) != mem + p * esize && bad++ < 3)
                fprintf(stderr, "  tiled %dx%d vnni %d: (%lld,%lld,%lld) at %td, want %lld\n", tr, tc, vnni,
                        (long long)b, (long long)row, (long long)col,
                        ((char *)tl_tensor_at(&t, idx) - mem) / esize, (long long)p);
            }
  CHECK(p == total && met == lead * R * C, "enumeration covers the storage");
  CHECK(bad == 0, "tiled %dx%d vnni %d over %lldx%lldx%lld: %d addresses wrong", tr, tc, vnni, (long long)lead,
        (long long)R, (long long)C, bad);
  /* The in-tile formula spelled out once. */
  int64_t idx[3] = {0, tr - 1, tc - 1};
  int64_t want = ((int64_t)(tr - 1) / vnni * tc + (tc - 1)) * vnni + (tr - 1) % vnni;
  if (R >= tr && C >= tc)
    CHECK((char *)tl_tensor_at(&t, idx) == mem + want * esize, "last element of tile 0");
}

static void test_at_tiled(void) {
  check_tiled_at(1, 8, 8, 4, 4, 1, TL_F32);
  check_tiled_at(2, 7, 9, 4, 4, 1, TL_F32);    /* partial tiles both ways */
  check_tiled_at(3, 16, 32, 16, 16, 2, TL_BF16);
  check_tiled_at(2, 13, 21, 8, 16, 2, TL_BF16); /* padding with vnni 2 */
  check_tiled_at(2, 17, 40, 16, 16, 4, TL_I8);  /* vnni 4, a lone row in the last tile row */
  check_tiled_at(1, 1, 1, 4, 2, 4, TL_U8);
  check_tiled_at(1, 5, 3, 1, 1, 1, TL_I32);     /* 1 x 1 tiles: row-major */

  /* 2-d tiled (no leading dim) and a 4-d one. */
  int64_t s2[2] = {6, 6};
  tl_layout l = {1, 2, 4, 4};
  tl_tensor t = tl_tensor_make_tiled(g_buf, TL_BF16, 2, s2, l);
  int64_t idx[2] = {5, 5}; /* tile (1, 1) = tile 3; in-tile (1, 1): (0 * 4 + 1) * 2 + 1 = 3 */
  CHECK((char *)tl_tensor_at(&t, idx) == (char *)g_buf + (3 * 16 + 3) * 2, "2-d tiled at");
  int64_t s4[4] = {2, 3, 5, 5};
  tl_tensor t4 = tl_tensor_make_tiled(g_buf, TL_F32, 4, s4, l);
  int64_t idx4[4] = {1, 2, 4, 0}; /* matrix 5, 4 tiles of 16 each; tile (1, 0) = 2; in-tile (0,0) */
  CHECK((float *)tl_tensor_at(&t4, idx4) == g_buf + 5 * 64 + 2 * 16, "4-d tiled at");
}

int main(void) {
  RUN(test_make_good);
  RUN(test_make_bad);
  RUN(test_check_fields);
  RUN(test_check_tiled);
  RUN(test_make_tiled);
  RUN(test_numel_nbytes);
  RUN(test_at_row_major);
  RUN(test_at_tiled);
  return test_summary("core_tensor");
}
