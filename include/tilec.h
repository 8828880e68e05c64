/* tilec.h — the public API of tilec, a tile-programming system for C.
 *
 * A kernel is a grid of steps plus one BlockSpec per operand: the BlockSpec says which block of
 * the operand a step needs (an affine "index map" from grid indices to block indices). tilec
 * stages those blocks into fast memory ("VMEM", the core's L2) in the layout the body wants,
 * runs the steps on a thread pool, writes outputs back, and accounts every byte it moves.
 *
 * A complete small example: y = 2 * x over a 1000 x 300 f32 array, in row blocks of 64 x 300.
 *
 *   #include <stdio.h>
 *   #include <tilec.h>
 *
 *   static void scale2(const tl_prog *p, tl_ref *refs, void *user) {
 *     tl_ref *x = &refs[0], *y = &refs[1];               // inputs first, then outputs
 *     for (int64_t i = 0; i < x->valid[0]; i++)          // edge blocks: valid < shape
 *       for (int64_t j = 0; j < x->valid[1]; j++)
 *         ((float *)y->data)[i * y->stride[0] + j] =
 *             2.0f * ((const float *)x->data)[i * x->stride[0] + j];
 *   }
 *
 *   int main(void) {
 *     static float xs[1000 * 300], ys[1000 * 300];
 *     int64_t shape[2] = {1000, 300};
 *     tl_tensor x = tl_tensor_make(xs, TL_F32, 2, shape);
 *     tl_tensor y = tl_tensor_make(ys, TL_F32, 2, shape);
 *     tl_blockspec spec = {.ndim = 2, .block = {64, 0}, .map = "i -> i, 0"};
 *     tl_kernel k = {.name = "scale2", .body = scale2, .grid_ndim = 1,
 *                    .grid = {(1000 + 63) / 64}, .sem = {TL_PARALLEL},
 *                    .n_in = 1, .in = &spec, .n_out = 1, .out = &spec};
 *     tl_ctx *ctx;
 *     if (tl_ctx_new(NULL, &ctx) != TL_OK) { fprintf(stderr, "%s\n", tl_last_error()); return 1; }
 *     tl_status s = tl_call(ctx, &k, &x, &y);
 *     if (s != TL_OK) fprintf(stderr, "%s: %s\n", tl_status_name(s), tl_ctx_error(ctx));
 *     tl_ctx_free(ctx);
 *     return s != TL_OK;
 *   }
 *
 * Conventions (see docs/ and ../shared/DESIGN.md):
 * - Every fallible call returns a tl_status; the context keeps a message naming what was wrong.
 *   No input aborts the process or prints to stdout. A call refused for its arguments leaves every
 *   buffer the caller owns untouched.
 * - Pointers are borrowed unless a comment says otherwise; _free(NULL) is a no-op.
 * - Zero-initialised structs are valid defaults: every enum's 0 is the harmless choice.
 * - A tl_ctx is used by one thread at a time; plans die with their context.
 */
#ifndef TILEC_H
#define TILEC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TILEC_VERSION_MAJOR 0
#define TILEC_VERSION_MINOR 1
#define TILEC_VERSION_PATCH 0
#define TILEC_VERSION "0.1.0"

#if defined(__GNUC__)
#define TL_API __attribute__((visibility("default")))
#else
#define TL_API
#endif

/* ---------------------------------------------------------------------------------------------
 * Status codes
 * ------------------------------------------------------------------------------------------- */

/* X(name, value, description): the one table of status codes. */
#define TL_STATUS_LIST(X)                                                          \
  X(TL_OK, 0, "success")                                                           \
  X(TL_ERR_INVALID, 1, "invalid argument or misuse")                               \
  X(TL_ERR_SHAPE, 2, "shape mismatch")                                             \
  X(TL_ERR_DTYPE, 3, "unsupported or mismatched dtype")                            \
  X(TL_ERR_VMEM, 4, "blocks do not fit the staging budget")                        \
  X(TL_ERR_NOMEM, 5, "out of memory")                                              \
  X(TL_ERR_UNSUPPORTED, 6, "valid, but not supported on this CPU or build")        \
  X(TL_ERR_COMPILE, 7, "compilation failed")                                       \
  X(TL_ERR_IO, 8, "input/output error")                                            \
  X(TL_ERR_INTERNAL, 9, "internal error")

typedef enum tl_status {
#define TL_X_(name, value, desc) name = value,
  TL_STATUS_LIST(TL_X_)
#undef TL_X_
} tl_status;
#define TL_STATUS_COUNT 10

/* The enumerator's name ("TL_ERR_SHAPE"); "TL_STATUS_UNKNOWN" for a value outside the table. */
TL_API const char *tl_status_name(tl_status s);

/* ---------------------------------------------------------------------------------------------
 * Data types
 * ------------------------------------------------------------------------------------------- */

/* X(enumerator, short name, size in bytes) */
#define TL_DTYPE_LIST(X)      \
  X(TL_DTYPE_INVALID, "invalid", 0) \
  X(TL_F32, "f32", 4)         \
  X(TL_F16, "f16", 2)         \
  X(TL_BF16, "bf16", 2)       \
  X(TL_I8, "i8", 1)           \
  X(TL_U8, "u8", 1)           \
  X(TL_I32, "i32", 4)

typedef enum tl_dtype {
#define TL_X_(e, name, size) e,
  TL_DTYPE_LIST(TL_X_)
#undef TL_X_
} tl_dtype;
#define TL_DTYPE_COUNT 7

/* Bytes per element; 0 for TL_DTYPE_INVALID or an unknown value. */
TL_API size_t tl_dtype_size(tl_dtype dt);
/* Short name ("bf16"); "invalid" for TL_DTYPE_INVALID or an unknown value. */
TL_API const char *tl_dtype_name(tl_dtype dt);
/* Parses a short name; TL_DTYPE_INVALID if unknown. */
TL_API tl_dtype tl_dtype_parse(const char *name);

/* Conversions. bf16 and f16 are stored as uint16_t bit patterns. f32 -> bf16/f16 rounds to
 * nearest even; NaN stays NaN (quiet), Inf stays Inf, f16 overflow gives Inf, f16 denormals are
 * produced and read exactly. bf16 -> f32 and f16 -> f32 are exact. */
TL_API uint16_t tl_f32_to_bf16(float x);
TL_API float tl_bf16_to_f32(uint16_t h);
TL_API uint16_t tl_f32_to_f16(float x);
TL_API float tl_f16_to_f32(uint16_t h);

/* ---------------------------------------------------------------------------------------------
 * Tensors and layouts
 * ------------------------------------------------------------------------------------------- */

#define TL_MAX_DIMS 6

/* Zero is row-major. tiled = 1: the last two dims [R, C] are cut into ceil(R/tile_r) x
 * ceil(C/tile_c) tiles stored tile-row-major, each tile contiguous and padded to full size; inside
 * a tile element (r, c) is at ((r / vnni) * tile_c + c) * vnni + r % vnni. Leading dims are
 * outermost. vnni is 1, 2 or 4 (0 means 1). */
typedef struct tl_layout {
  uint8_t tiled;
  uint8_t vnni;
  uint16_t tile_r, tile_c;
} tl_layout;

/* A view of memory the caller owns. data is borrowed: tilec never frees it or keeps it past the
 * call. stride[] is in elements and only used for row-major layouts; a zero stride broadcasts
 * (inputs only). For tiled tensors stride[] is 0. */
typedef struct tl_tensor {
  void *data;
  tl_dtype dtype;
  int ndim;
  int64_t shape[TL_MAX_DIMS];
  int64_t stride[TL_MAX_DIMS];
  tl_layout layout;
} tl_tensor;

/* A contiguous row-major tensor over data (borrowed). On bad arguments (dtype invalid, ndim
 * outside 0..TL_MAX_DIMS, shape NULL with ndim > 0, a negative size, an element count that
 * overflows) it returns a tensor whose dtype is TL_DTYPE_INVALID and sets tl_last_error(); any call
 * given that tensor is then refused with TL_ERR_DTYPE. ndim 0 is a scalar. */
TL_API tl_tensor tl_tensor_make(void *data, tl_dtype dt, int ndim, const int64_t *shape);

/* A contiguous tiled tensor (layout.tiled = 1) over data (borrowed); same rules as
 * tl_tensor_make, plus a layout check (tile sizes > 0, vnni 1/2/4 dividing tile_r, ndim >= 2). */
TL_API tl_tensor tl_tensor_make_tiled(void *data, tl_dtype dt, int ndim, const int64_t *shape,
                                      tl_layout layout);

/* Checks a tensor's fields: dtype, ndim, sizes >= 0, layout, and that the furthest element's
 * byte offset fits in int64. Returns TL_OK or a status, writing a message into msg (may be NULL)
 * naming the field. `what` names the tensor in the message ("a", "input 1"); it may be NULL. */
TL_API tl_status tl_tensor_check(const tl_tensor *t, const char *what, char *msg, size_t msg_size);

/* Number of elements (product of shape); 0 when any dim is 0; -1 for an invalid tensor. */
TL_API int64_t tl_tensor_numel(const tl_tensor *t);

/* Bytes a tensor's storage spans: for row-major tensors from the lowest to one past the highest
 * addressed element; for tiled tensors the padded tile storage. -1 for an invalid tensor. */
TL_API int64_t tl_tensor_nbytes(const tl_tensor *t);

/* Address of element idx[0..ndim-1] in a row-major or tiled tensor (no bounds checks: the caller
 * passes in-range indices). */
TL_API void *tl_tensor_at(const tl_tensor *t, const int64_t *idx);

/* Offset in elements of (r, c) inside one tile of a tiled layout. */
static inline int64_t tl_layout_tile_offset(tl_layout l, int64_t r, int64_t c) {
  int64_t v = l.vnni ? l.vnni : 1;
  return ((r / v) * (int64_t)l.tile_c + c) * v + r % v;
}

/* ---------------------------------------------------------------------------------------------
 * Context
 * ------------------------------------------------------------------------------------------- */

typedef struct tl_ctx tl_ctx;

typedef struct tl_ctx_opts {
  int threads;           /* 0: the CPUs this process may run on (sched_getaffinity) */
  size_t vmem_bytes;     /* per-thread L2 ("VMEM") staging budget; 0: 75% of the core's L2, 1 MiB if unknown */
  size_t l1_bytes;       /* per-thread L1 budget for TL_L1 blocks; 0: 75% of L1d (32 KiB if unknown) */
  const char *isa;       /* NULL: $TILEC_ISA, else the best available; else a cap (see tl_isa) */
  const char *cache_dir; /* NULL: $TILEC_CACHE_DIR, else $XDG_CACHE_HOME/tilec, else ~/.cache/tilec */
  int spin_us;           /* how long idle workers spin before sleeping; 0: 50; < 0: never spin */
  int tune;              /* tuned configs (docs/tune.md): 0: $TILEC_TUNE (unset or not "0": on); 1 on; -1 off */
  const char *tune_db;   /* NULL: $TILEC_TUNE_DB, else <cache_dir>/tune.db */
} tl_ctx_opts;

/* Creates a context: detects the CPU, applies the ISA cap, starts threads - 1 workers (the caller
 * is worker 0). opts may be NULL (all defaults). The environment (TILEC_ISA, TILEC_INTERPRET,
 * TILEC_CACHE_DIR, TILEC_TUNE, TILEC_TUNE_DB) is read here and only here. On failure *out is NULL and tl_last_error() says
 * why. Threads: 1..1024. */
TL_API tl_status tl_ctx_new(const tl_ctx_opts *opts, tl_ctx **out);
/* Stops the workers and frees the context and every plan made from it. NULL is a no-op, and so
 * is a call from inside a body. */
TL_API void tl_ctx_free(tl_ctx *ctx);
/* Message of the last failed call on this context; "" after a success. Valid until the next call. */
TL_API const char *tl_ctx_error(const tl_ctx *ctx);
/* Last non-fatal note (AMX refused, ...) or "". */
TL_API const char *tl_ctx_warning(const tl_ctx *ctx);
/* This thread's message for calls that have no context (tl_ctx_new, tl_tensor_make, ...). */
TL_API const char *tl_last_error(void);

/* ---------------------------------------------------------------------------------------------
 * Platform: CPU features and ISA paths
 * ------------------------------------------------------------------------------------------- */

/* The ISA paths, ordered: a cap allows its level and everything below it that the CPU has.
 * avx2vnni is AVX2 with AVX-VNNI (the VEX VPDPBUSD of Alder Lake, Sierra Forest, Zen 5): int8
 * products on ymm, the rest as avx2. It is a side branch: the AVX-512 levels do not need AVX-VNNI
 * (Ice Lake has none), and on such a CPU the avx2vnni paths step aside for avx2's.
 * avx512vnni is AVX-512 with VNNI but not BF16 (Cascade Lake, Ice Lake): int8 products on
 * VPDPBUSD, the rest as avx512. The numeric values are not stable before 1.0 (both levels were
 * inserted in 0.1): compare levels, and store names (tl_isa_name), not numbers. */
#define TL_ISA_LIST(X)                  \
  X(TL_ISA_SCALAR, "scalar")            \
  X(TL_ISA_AVX2, "avx2")                \
  X(TL_ISA_AVX2VNNI, "avx2vnni")        \
  X(TL_ISA_AVX512, "avx512")            \
  X(TL_ISA_AVX512VNNI, "avx512vnni")    \
  X(TL_ISA_AVX512BF16, "avx512bf16")    \
  X(TL_ISA_AMX, "amx")

typedef enum tl_isa {
#define TL_X_(e, name) e,
  TL_ISA_LIST(TL_X_)
#undef TL_X_
} tl_isa;
#define TL_ISA_COUNT 7

/* CPU features, one bit each: X(enumerator, bit, name). */
#define TL_FEATURE_LIST(X)               \
  X(TL_FEAT_SSE42, 0, "sse4.2")          \
  X(TL_FEAT_AVX, 1, "avx")               \
  X(TL_FEAT_AVX2, 2, "avx2")             \
  X(TL_FEAT_FMA, 3, "fma")               \
  X(TL_FEAT_F16C, 4, "f16c")             \
  X(TL_FEAT_AVX512F, 5, "avx512f")       \
  X(TL_FEAT_AVX512BW, 6, "avx512bw")     \
  X(TL_FEAT_AVX512VL, 7, "avx512vl")     \
  X(TL_FEAT_AVX512DQ, 8, "avx512dq")     \
  X(TL_FEAT_AVX512BF16, 9, "avx512bf16") \
  X(TL_FEAT_AVX512VNNI, 10, "avx512vnni") \
  X(TL_FEAT_AMX_TILE, 11, "amx-tile")    \
  X(TL_FEAT_AMX_BF16, 12, "amx-bf16")    \
  X(TL_FEAT_AMX_INT8, 13, "amx-int8")    \
  X(TL_FEAT_AVXVNNI, 14, "avx-vnni")

enum {
#define TL_X_(e, bit, name) e = 1u << (bit),
  TL_FEATURE_LIST(TL_X_)
#undef TL_X_
};
#define TL_FEATURE_COUNT 15

/* "avx512bf16"; "unknown" outside the table. */
TL_API const char *tl_isa_name(tl_isa isa);
/* Parses an ISA name; returns TL_ERR_INVALID (message in tl_last_error()) for an unknown one. */
TL_API tl_status tl_isa_parse(const char *name, tl_isa *out);
/* Name of one feature bit ("avx512bw"); "unknown" for anything else. */
TL_API const char *tl_feature_name(uint32_t bit);

/* What the host is and what a context will use. */
typedef struct tl_cpu_info {
  char vendor[16];        /* "GenuineIntel" */
  char brand[64];         /* CPUID brand string, trimmed */
  uint32_t family, model, stepping;
  uint32_t features;      /* TL_FEAT_* present in CPUID and enabled by the OS (XCR0) */
  tl_isa isa_max;         /* best ISA path the CPU and OS allow */
  int64_t l1d_bytes, l2_bytes, l3_bytes; /* per core (L1d, L2) and shared (L3), from CPUID; 0 unknown */
  int cpus_online;        /* sysconf(_SC_NPROCESSORS_ONLN) */
  int cpus_allowed;       /* CPUs in this process's affinity mask */
} tl_cpu_info;

/* Detects the host CPU (cached after the first call; thread-safe). Never fails. */
TL_API void tl_cpu_detect(tl_cpu_info *out);

typedef struct tl_ctx_info {
  tl_cpu_info cpu;
  tl_isa isa;             /* the ISA level this context uses: min(cap, cpu.isa_max) */
  tl_isa isa_cap;         /* the cap that was asked for (opts.isa or TILEC_ISA; TL_ISA_AMX if none) */
  int threads;
  size_t vmem_bytes, l1_bytes; /* per-thread staging budgets */
  int spin_us;
  int interpret;          /* TILEC_INTERPRET=1 */
  int amx_state;          /* 0: not requested yet, 1: granted, -1: refused or absent */
  char cache_dir[512];
  int tune;               /* 1: ops use tuned configs from the tuning DB (TILEC_TUNE=0 / opts.tune -1: 0) */
  char tune_db[512];      /* the tuning DB's path */
} tl_ctx_info;

/* Fills *out with what ctx runs on. */
TL_API tl_status tl_ctx_info_get(const tl_ctx *ctx, tl_ctx_info *out);

#ifdef __cplusplus
}
#endif

#include "tilec_kernel.h"
#include "tilec_tile.h"
#include "tilec_ops.h"
#include "tilec_roofline.h"
#include "tilec_bench.h"

#endif /* TILEC_H */
