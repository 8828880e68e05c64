/* test_tile_misuse.c — tile operations misused inside a real body: the run stops with the op's
 * status, tl_ctx_error names the op and the shapes, and nothing crashes. */
#include <stdio.h>
#include <tilec.h>

#include "test_util.h"

typedef enum { DOT_SHAPES, DOT_ACC_DTYPE, BINARY_SHAPES, REDUCE_AXIS, UNARY_OP, CAST_SHAPES, OK_BODY } misuse;

static void body(const tl_prog *p, tl_ref *refs, void *user) {
  misuse m = *(misuse *)user;
  tl_ref *a = &refs[0], *b = &refs[1], *c = &refs[2], *s = &refs[3];
  tl_ref wrong = *c;
  switch (m) {
  case DOT_SHAPES: tl_tile_dot(p, c, a, a, 0); break;           /* [8,4] @ [8,4] */
  case DOT_ACC_DTYPE: wrong.dtype = TL_BF16; tl_tile_dot(p, &wrong, a, b, 0); break;
  case BINARY_SHAPES: tl_tile_binary(c, c, a, TL_BINARY_ADD); break; /* [8,5] op [8,4] */
  case REDUCE_AXIS: tl_tile_reduce(s, c, 5, TL_REDUCE_SUM); break;
  case UNARY_OP: tl_tile_unary(c, c, (tl_unary)99); break;
  case CAST_SHAPES: tl_tile_cast(c, a); break;
  case OK_BODY: tl_tile_dot(p, c, a, b, 0); break;
  }
}

static void test_misuse_in_body(void) {
  float A[32], B[20], C[40];
  for (int i = 0; i < 32; i++) A[i] = (float)i;
  for (int i = 0; i < 20; i++) B[i] = 1;
  int64_t sa[2] = {8, 4}, sb[2] = {4, 5}, sc[2] = {8, 5};
  tl_tensor in[2] = {tl_tensor_make(A, TL_F32, 2, sa), tl_tensor_make(B, TL_F32, 2, sb)};
  tl_tensor out = tl_tensor_make(C, TL_F32, 2, sc);
  tl_blockspec specs[3] = {{.ndim = 2, .map = "i -> 0, 0"}, {.ndim = 2, .map = "i -> 0, 0"}, {.ndim = 2, .map = "i -> 0, 0"}};
  tl_scratch scr = {.dtype = TL_F32, .ndim = 2, .shape = {8, 1}};
  misuse m;
  tl_kernel k = {.name = "misuse", .body = body, .user = &m, .grid_ndim = 1, .grid = {1}, .n_in = 2, .in = specs,
                 .n_out = 1, .out = &specs[2], .n_scratch = 1, .scratch = &scr};
  tl_ctx *ctx;
  REQUIRE(tl_ctx_new(NULL, &ctx) == TL_OK, "%s", tl_last_error());
  struct { misuse m; tl_status want; const char *frag; } cases[] = {
      {DOT_SHAPES, TL_ERR_SHAPE, "tl_tile_dot"},   {DOT_ACC_DTYPE, TL_ERR_DTYPE, "tl_tile_dot"},
      {BINARY_SHAPES, TL_ERR_SHAPE, "tl_tile_binary"}, {REDUCE_AXIS, TL_ERR_INVALID, "tl_tile_reduce"},
      {UNARY_OP, TL_ERR_INVALID, "tl_tile_unary"}, {CAST_SHAPES, TL_ERR_SHAPE, "tl_tile_cast"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    m = cases[i].m;
    tl_status s = tl_call(ctx, &k, in, &out);
    CHECK(s == cases[i].want, "case %zu: %s, want %s (%s)", i, tl_status_name(s), tl_status_name(cases[i].want), tl_ctx_error(ctx));
    CHECK(strstr(tl_ctx_error(ctx), cases[i].frag) != NULL, "case %zu: message '%s' names %s", i, tl_ctx_error(ctx), cases[i].frag);
    CHECK(strstr(tl_ctx_error(ctx), "kernel 'misuse'") != NULL, "case %zu: message names the kernel", i);
  }
  m = OK_BODY;
  CHECK(tl_call(ctx, &k, in, &out) == TL_OK, "a correct body runs: %s", tl_ctx_error(ctx));
  CHECK(C[0] == 0 + 1 + 2 + 3 && C[39] == 28 + 29 + 30 + 31, "dot result");
  tl_ctx_free(ctx);
}

int main(void) {
  RUN(test_misuse_in_body);
  return test_summary("tile_misuse");
}
