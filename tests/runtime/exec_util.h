/* exec_util.h — helpers for the executor tests: element access in refs of any layout. */
#ifndef TL_EXEC_UTIL_H
#define TL_EXEC_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <tilec.h>

/* Address of element (i, j) of a 2-D ref, row-major (strided) or tiled. */
static inline void *ref_at2(const tl_ref *r, int64_t i, int64_t j) {
  size_t es = tl_dtype_size(r->dtype);
  if (!r->layout.tiled) return (char *)r->data + (i * r->stride[0] + j * r->stride[1]) * (int64_t)es;
  char *tile = tl_ref_tile(r, i / r->layout.tile_r, j / r->layout.tile_c);
  return tile + tl_layout_tile_offset(r->layout, i % r->layout.tile_r, j % r->layout.tile_c) * (int64_t)es;
}
static inline float *ref_f32(const tl_ref *r, int64_t i, int64_t j) { return (float *)ref_at2(r, i, j); }

static inline tl_ctx *make_ctx(int threads) {
  tl_ctx_opts o = {.threads = threads};
  tl_ctx *ctx = NULL;
  if (tl_ctx_new(&o, &ctx) != TL_OK) {
    fprintf(stderr, "tl_ctx_new: %s\n", tl_last_error());
    exit(1);
  }
  return ctx;
}

#endif
