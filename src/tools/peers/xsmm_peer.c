/* xsmm_peer.c — libtilec_xsmm_peer.so: libxsmm for `tilec bench gemm`, built from the static
 * archives Debian's libxsmm-dev ships (libxsmm.a, libxsmmext.a, libxsmmnoblas.a), which dlopen
 * cannot load themselves. CMake builds this module only when those archives, libxsmm.h and
 * OpenMP are found; the bench dlopens it at run time like every other peer (nothing of tilec
 * links against it).
 *
 * The entry point is libxsmm's own parallel gemm (libxsmm_xgemm_omp, libxsmmext: OpenMP over
 * its JIT kernels), f32 only: libxsmm_sgemm hands products past its small-matrix threshold to a
 * BLAS sgemm, which this module does not link (libxsmmnoblas), and libxsmm 1.17's xgemm_omp
 * leaves c untouched for bf16 inputs (tried). */
#include <libxsmm.h>

/* c[m x n] = a[m x k] @ b[k x n], all row-major with unit column stride and leading dimensions
 * k / n / n, on OpenMP's threads (OMP_NUM_THREADS). libxsmm is column-major: it computes
 * c^T = b^T a^T. */
__attribute__((visibility("default"))) void tl_xsmm_peer_sgemm(int m, int n, int k, const float *a, const float *b,
                                                               float *c) {
  const libxsmm_blasint M = n, N = m, K = k, lda = n, ldb = k, ldc = n;
  const float one = 1.0f, zero = 0.0f;
  libxsmm_xgemm_omp(LIBXSMM_GEMM_PRECISION_F32, LIBXSMM_GEMM_PRECISION_F32, "N", "N", &M, &N, &K, &one, b, &lda, a,
                    &ldb, &zero, c, &ldc);
}

/* libxsmm's version, "major.minor.update". */
__attribute__((visibility("default"))) const char *tl_xsmm_peer_version(void) {
  return LIBXSMM_STRINGIFY(LIBXSMM_VERSION_MAJOR) "." LIBXSMM_STRINGIFY(LIBXSMM_VERSION_MINOR) "." LIBXSMM_STRINGIFY(
      LIBXSMM_VERSION_UPDATE);
}
