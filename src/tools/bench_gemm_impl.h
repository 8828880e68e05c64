/* bench_gemm_impl.h — what the gemm suite of `tilec bench` (bench_gemm.c) shares with its peers
 * (bench_gemm_peers.c): the gemm entry points of OpenBLAS, BLIS, oneDNN's matmul primitive and
 * libxsmm, all found at run time (dlsym on the handles bench_peers.c opened, or dlopen here), so
 * building tilec needs none of them.
 *
 * Invariants: every matrix is row-major and contiguous: A [M, K], B [K, N], C [M, N]; the peers
 * compute C = A B (alpha 1, beta 0). A peer's pointers are all set or its desc says why not.
 */
#ifndef TL_BENCH_GEMM_IMPL_H
#define TL_BENCH_GEMM_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "bench_impl.h"

/* The dtypes of the suite: f32 x f32 -> f32, bf16 x bf16 -> f32, u8 x s8 -> i32. */
enum { TL_GEMM_F32, TL_GEMM_BF16, TL_GEMM_INT8 };

typedef struct tl_gdnnl tl_gdnnl;       /* oneDNN's matmul entry points, engine and stream */
typedef struct tl_gdnnl_op tl_gdnnl_op; /* one matmul primitive and its memories */

typedef struct tl_gpeers {
  /* OpenBLAS: cblas_sgemm (row-major order 101, no transpose 111); cblas_sbgemm when the build has it */
  void (*ob_sgemm)(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda, const float *b,
                   int ldb, float beta, float *c, int ldc);
  void (*ob_sbgemm)(int order, int ta, int tb, int m, int n, int k, float alpha, const uint16_t *a, int lda,
                    const uint16_t *b, int ldb, float beta, float *c, int ldc);
  /* BLIS native bli_sgemm (trans_t 0 = no transpose; row and column strides) */
  void (*bli_sgemm)(int ta, int tb, int64_t m, int64_t n, int64_t k, float *alpha, float *a, int64_t rsa, int64_t csa,
                    float *b, int64_t rsb, int64_t csb, float *beta, float *c, int64_t rsc, int64_t csc);
  /* libxsmm's f32 gemm through libtilec_xsmm_peer.so: c = a @ b, row-major, unit column strides */
  void (*xsmm_sgemm)(int m, int n, int k, const float *a, const float *b, float *c);
  tl_gdnnl *dnnl;
  char ob_desc[200], blis_desc[200], dnnl_desc[200], xsmm_desc[320];
} tl_gpeers;

/* Resolves the gemm entry points in the libraries bench_peers.c loaded (p), and loads libxsmm
 * when asked for. Never fails: absent entry points are NULL and the descs say why. */
void tl_gpeers_load(tl_gpeers *g, const tl_bpeers *p, int threads);
void tl_gpeers_close(tl_gpeers *g);

/* A oneDNN matmul for dtype dt (TL_GEMM_*) of M x N x K. packed 0: weights in plain row-major
 * [K, N]; 1: weights in the layout the primitive prefers (format_tag_any), their size in
 * *wbytes, filled by tl_gdnnl_pack. NULL with a message in err on failure. */
tl_gdnnl_op *tl_gdnnl_matmul(tl_gpeers *g, int dt, int64_t m, int64_t n, int64_t k, int packed, size_t *wbytes, char *err,
                             size_t errn);
/* Reorders plain row-major B into dst (wbytes bytes) for a packed op; 0 or -1. */
int tl_gdnnl_pack(tl_gpeers *g, tl_gdnnl_op *op, const void *b, void *dst);
/* C = A B with b plain or packed as the op was made; 0 or -1. */
int tl_gdnnl_run(tl_gpeers *g, tl_gdnnl_op *op, const void *a, const void *b, void *c);
void tl_gdnnl_op_free(tl_gpeers *g, tl_gdnnl_op *op);

#endif /* TL_BENCH_GEMM_IMPL_H */
