/* kernels_impl.h — the registry of tilec's kernels, for the tools (`tilec roofline`, `explain`,
 * `bench`, later `tune`): each entry builds a ready-to-run instance of its kernel for a shape,
 * with tensors over buffers it owns, filled with random data, and can check a run's result
 * against a float64 reference. Ready-made operations (tl_matmul, tl_softmax...) add entries as
 * they land. */
#ifndef TL_KERNELS_IMPL_H
#define TL_KERNELS_IMPL_H

#include "../runtime/runtime_impl.h"

#define TL_KCASE_MAX_BUFS 8

/* A kernel instance: the kernel, its blockspecs and tensors over owned buffers. */
typedef struct tl_kcase {
  char name[48];
  char shape[64];                      /* as given, normalised ("1024x1024") */
  tl_kernel k;                         /* in/out/scratch point into this struct */
  tl_blockspec specs[TL_MAX_OPERANDS]; /* inputs, then outputs */
  tl_scratch scratch[4];
  tl_tensor in[TL_MAX_OPERANDS], out[TL_MAX_OPERANDS];
  tl_dtype dtype;                      /* dtype of the math (picks the roofline's unit) */
  void *bufs[TL_KCASE_MAX_BUFS];       /* owned (tl_aligned_free) */
  void *huge;                          /* owned (tl_free_huge): a packed b, or NULL */
  void *user;                          /* owned body data (tl_free_mem), may be NULL */
  const struct tl_kernel_desc *desc;
  char config[96];                     /* "" or where the blocks came from, when not the heuristic
                                        * ("tuning DB: BM=8 BN=16 BK=8"), as tl_matmul /
                                        * tl_attention would take them */
  /* NULL, or the public call the instance stands for where that runs more than k (tl_matmul's
   * K split: two plans of their own), on in / out: `tilec roofline` times and checks it in place
   * of k's plan, `tilec explain` beside it; call_what says what it runs ("tl_matmul: K split
   * between 2 threads, two plans") */
  tl_status (*call)(tl_ctx *ctx, const struct tl_kcase *kc);
  char call_what[96];
} tl_kcase;

typedef struct tl_kernel_desc {
  const char *name;          /* "scale" */
  const char *summary;       /* one line */
  const char *shape_syntax;  /* "ROWSxCOLS" */
  const char *shapes;        /* representative shapes for `tilec roofline`, separated by spaces */
  /* Builds an instance for shape (NULL: the first representative shape) on ctx's machine
   * (block sizes may depend on the budgets). Bad shapes: TL_ERR_INVALID / TL_ERR_SHAPE with a
   * message in err. */
  tl_status (*make)(tl_ctx *ctx, const char *shape, tl_kcase *kc, char *err, size_t errn);
  /* Relative error ||out - ref|| / ||ref|| of the last run against a float64 reference. */
  double (*check)(const tl_kcase *kc);
  double tolerance;          /* check() above this is a wrong result */
} tl_kernel_desc;

/* The kernel named name, or NULL. */
const tl_kernel_desc *tl_kernel_find(const char *name);
/* Entry i of the registry, NULL past the end. */
const tl_kernel_desc *tl_kernel_at(int i);
/* Frees what an instance owns (the struct itself is the caller's). NULL is a no-op. */
void tl_kcase_free(tl_kcase *kc);
/* Parses "AxBxC" into up to max positive sizes; returns the count, or -1 with a message. */
int tl_shape_parse(const char *s, int64_t *dims, int max, char *err, size_t errn);
/* A tensor's shape as "[2, 3, 4]" into buf (n bytes, truncated to fit); returns buf. For the ops'
 * refusal messages: format it on the refusal only (every call goes through the checks). */
const char *tl_shape_str(const tl_tensor *t, char *buf, size_t n);
/* Total bytes of each operand's tensor (inputs, then outputs) into bytes[]; returns the count. */
int tl_kcase_tensor_bytes(const tl_kcase *kc, int64_t *bytes);



/* The largest tensor (elements) a registry kernel builds: 2^36 (256 GiB of f32, beyond any machine
 * here); larger shapes are TL_ERR_SHAPE before anything is allocated. */
#define TL_KCASE_MAX_ELEMS ((int64_t)1 << 36)
/* a * b when it is at most TL_KCASE_MAX_ELEMS, else -1 (with a message in err). */
int64_t tl_kcase_elems(int64_t a, int64_t b, const char *what, char *err, size_t errn);
/* Allocates buffer slot `slot` of kc with n random f32 values in [lo, hi) (deterministic from
 * seed; dry: not filled); NULL when out of memory or n is outside 0..TL_KCASE_MAX_ELEMS. */
float *tl_kcase_alloc_f32(tl_kcase *kc, int slot, int64_t n, double lo, double hi, uint64_t seed);
/* Dry instances, for the calling thread while on (`tilec explain` with --no-run or a preset
 * machine, and its check of the shapes): make functions allocate their buffers but neither fill
 * nor convert them, nor pack b (a packed b's storage is allocated, untouched). Large
 * allocations are pages the OS commits on first touch, so a dry instance costs address space,
 * not RAM or time. It can be planned and bounded, not run (its data is undefined). */
void tl_kcase_set_dry(int on);
int tl_kcase_dry(void);
/* The last-level cache the kernels size their choices by: CPUID's L3 (tl_ctx_info), or 32 MiB
 * when CPUID gives none. */
static inline int64_t tl_kernels_l3_bytes(const tl_ctx_info *info) {
  return info->cpu.l3_bytes > 0 ? info->cpu.l3_bytes : (int64_t)32 << 20;
}

#endif /* TL_KERNELS_IMPL_H */
