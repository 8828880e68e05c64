/* bench/staging_ceiling.c — how fast can staging be at all on this machine? Plain C, no tilec:
 * x *= a over 512 MiB of f32 (one thread) three ways, interleaved round by round:
 *   plain    the loop over x itself;
 *   staged   per block: memcpy the block into a buffer, scale it there, memcpy it back — what any
 *            executor that stages a block must do, with nothing in between;
 *   shifted  the same with the buffer half a page off the source (no 4K aliasing).
 * The best of the rounds is reported with ratio plain/staged: the ceiling for the executor's
 * forced-staging gate on a streaming kernel (issue: grid executor, "staging efficiency").
 * Usage: tilec_bench_staging_ceiling [--block-rows R] [--rounds N]   (blocks of R x 4 KiB rows) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  long rb = 16, rounds = 7;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--block-rows") && i + 1 < argc) rb = atol(argv[++i]);
    else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atol(argv[++i]);
    else {
      fprintf(stderr, "usage: %s [--block-rows R] [--rounds N]\n", argv[0]);
      return strcmp(argv[i], "--help") ? 2 : 0;
    }
  }
  if (rb < 1 || rb > 4096 || rounds < 1) return fprintf(stderr, "%s: bad arguments\n", argv[0]), 2;
  const long rows = 131072, cols = 1024; /* 512 MiB */
  float *x = aligned_alloc(4096, (size_t)rows * cols * 4);
  char *mem = aligned_alloc(4096, (size_t)rb * cols * 4 + 8192);
  if (!x || !mem) return fprintf(stderr, "out of memory\n"), 1;
  for (long i = 0; i < rows * cols; i++) x[i] = 1;
  float *bufs[3] = {NULL, (float *)mem, (float *)(mem + 2048)};
  const char *names[3] = {"plain", "staged (page-aligned buffer)", "staged (buffer half a page off)"};
  double best[3] = {1e9, 1e9, 1e9};
  for (long r = 0; r < rounds; r++)
    for (int m = 0; m < 3; m++) {
      double t = now_s();
      for (long row = 0; row < rows; row += rb) {
        float *xr = x + row * cols, *b = bufs[m];
        long n = (row + rb <= rows ? rb : rows - row) * cols;
        if (m == 0) {
          for (long i = 0; i < n; i++) xr[i] *= 1.0001f;
        } else {
          memcpy(b, xr, (size_t)n * 4);
          for (long i = 0; i < n; i++) b[i] *= 1.0001f;
          memcpy(xr, b, (size_t)n * 4);
        }
      }
      double e = now_s() - t;
      if (e < best[m]) best[m] = e;
    }
  printf("x *= a over 512 MiB f32, one thread, blocks of %ld x 4 KiB, best of %ld rounds:\n", rb, rounds);
  for (int m = 0; m < 3; m++)
    printf("  %-34s %7.2f ms  %6.1f GB/s  ratio %.2f\n", names[m], best[m] * 1e3, 2.0 * rows * cols * 4 / best[m] / 1e9,
           best[0] / best[m]);
  free(x), free(mem);
  return 0;
}
