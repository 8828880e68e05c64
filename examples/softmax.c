/* examples/softmax.c — row softmax as a tilec kernel: a row-tiled grid, one pass over memory.
 *
 * Each step stages a block of BR whole rows (block dim 0 in the last axis means "the whole dim"),
 * so the max, the exponentials, the sum and the division all happen on the staged block, built
 * from tile operations: reduce max over the row into a [BR, 1] scratch column, subtract it
 * (broadcast along the row), exp, reduce sum, divide. Rows past the end of the array (the last
 * block) are padding: computed and dropped at write-back. Checked against a float64 reference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <tilec.h>

enum { ROWS = 1000, COLS = 777, BR = 16 };

static void softmax_rows(const tl_prog *p, tl_ref *refs, void *user) {
  (void)p, (void)user;
  tl_ref *x = &refs[0], *y = &refs[1], *stat = &refs[2]; /* scratch [BR, 1] */
  tl_tile_reduce(stat, x, 1, TL_REDUCE_MAX);
  tl_tile_binary(y, x, stat, TL_BINARY_SUB); /* column vector broadcast along each row */
  tl_tile_unary(y, y, TL_UNARY_EXP);
  tl_tile_reduce(stat, y, 1, TL_REDUCE_SUM);
  tl_tile_binary(y, y, stat, TL_BINARY_DIV);
}

int main(void) {
  float *x = malloc(sizeof(float) * ROWS * COLS), *y = malloc(sizeof(float) * ROWS * COLS);
  srand(2);
  for (int i = 0; i < ROWS * COLS; i++) x[i] = 20.0f * ((float)rand() / RAND_MAX - 0.5f) + (i / COLS % 7) * 100.0f;
  int64_t shape[2] = {ROWS, COLS};
  tl_tensor tx = tl_tensor_make(x, TL_F32, 2, shape), ty = tl_tensor_make(y, TL_F32, 2, shape);
  tl_blockspec spec = {.ndim = 2, .block = {BR, 0}, .map = "i -> i, 0"};
  tl_scratch stat = {.dtype = TL_F32, .ndim = 2, .shape = {BR, 1}};
  tl_kernel k = {.name = "softmax_rows", .body = softmax_rows, .grid_ndim = 1, .grid = {(ROWS + BR - 1) / BR},
                 .sem = {TL_PARALLEL}, .n_in = 1, .in = &spec, .n_out = 1, .out = &spec, .n_scratch = 1, .scratch = &stat,
                 .flops = 5LL * ROWS * COLS};
  tl_ctx *ctx;
  if (tl_ctx_new(NULL, &ctx) != TL_OK) {
    fprintf(stderr, "tl_ctx_new: %s\n", tl_last_error());
    return 1;
  }
  tl_status s = tl_call(ctx, &k, &tx, &ty);
  if (s != TL_OK) {
    fprintf(stderr, "softmax: %s: %s\n", tl_status_name(s), tl_ctx_error(ctx));
    return 1;
  }
  double num = 0, den = 0;
  for (int r = 0; r < ROWS; r++) {
    double m = -INFINITY, sum = 0;
    for (int c = 0; c < COLS; c++) m = fmax(m, x[r * COLS + c]);
    for (int c = 0; c < COLS; c++) sum += exp((double)x[r * COLS + c] - m);
    for (int c = 0; c < COLS; c++) {
      double ref = exp((double)x[r * COLS + c] - m) / sum, d = y[r * COLS + c] - ref;
      num += d * d, den += ref * ref;
    }
  }
  double err = sqrt(num / den);
  printf("softmax %dx%d in blocks of %d rows: rel. error %.2e\n", ROWS, COLS, BR, err);
  tl_ctx_free(ctx);
  free(x), free(y);
  int ok = err < 1e-5;
  printf("%s\n", ok ? "softmax: OK" : "softmax: FAILED");
  return ok ? 0 : 1;
}
