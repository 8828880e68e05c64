/* examples/hello.c — the smallest complete tilec kernel (the one in README.md): y = 2x over a
 * 1000 x 300 f32 array, one block of 64 whole rows per step, the last block a partial one. */
#include <stdio.h>
#include <tilec.h>

/* y = 2x, one block of 64 whole rows per step */
static void scale2(const tl_prog *p, tl_ref *refs, void *user) {
  (void)p, (void)user;
  tl_ref *x = &refs[0], *y = &refs[1];      /* inputs, then outputs */
  for (int64_t i = 0; i < x->valid[0]; i++) /* edge blocks: valid < shape */
    for (int64_t j = 0; j < x->valid[1]; j++)
      ((float *)y->data)[i * y->stride[0] + j] = 2 * ((float *)x->data)[i * x->stride[0] + j];
}

int main(void) {
  static float xs[1000 * 300], ys[1000 * 300];
  for (int i = 0; i < 1000 * 300; i++) xs[i] = (float)(i % 1000);
  int64_t shape[2] = {1000, 300};
  tl_tensor x = tl_tensor_make(xs, TL_F32, 2, shape), y = tl_tensor_make(ys, TL_F32, 2, shape);
  tl_blockspec spec = {.ndim = 2, .block = {64, 0}, .map = "i -> i, 0"}; /* 0: the whole dim */
  tl_kernel k = {.name = "scale2", .body = scale2, .grid_ndim = 1, .grid = {16}, .sem = {TL_PARALLEL},
                 .n_in = 1, .in = &spec, .n_out = 1, .out = &spec};
  tl_ctx *ctx;
  if (tl_ctx_new(NULL, &ctx) != TL_OK) return fprintf(stderr, "%s\n", tl_last_error()), 1;
  tl_status s = tl_call(ctx, &k, &x, &y);
  if (s != TL_OK) fprintf(stderr, "%s: %s\n", tl_status_name(s), tl_ctx_error(ctx));
  tl_ctx_free(ctx);
  int bad = 0;
  for (int i = 0; i < 1000 * 300; i++) bad += ys[i] != 2 * xs[i];
  printf("hello: %s\n", s == TL_OK && !bad ? "OK" : "FAILED");
  return s != TL_OK || bad;
}
