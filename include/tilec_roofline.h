/* tilec_roofline.h — machines (measured or modelled) and where a plan stands on their roofline.
 *
 * A tl_machine lists compute units (peak op/s per operand dtype; a multiply-add counts 2 ops)
 * and memory levels (capacity and bandwidth), fastest level first, main memory last. The host is
 * measured by tl_machine_probe (and cached); presets describe TPU and GPU parts from public
 * datasheets, each number with its source. A plan's bound on a machine is
 *
 *   bound = max(flops / peak(unit), bytes_from_level / bandwidth(level) for each level)
 *
 * with each operand's bytes (tl_plan_cost, exact) attributed to the level it is served from: the
 * smallest level that holds the plan's whole working set, else, per operand, the smallest level
 * that holds that operand's tensor (see docs/roofline.md). */
#ifndef TILEC_ROOFLINE_H
#define TILEC_ROOFLINE_H

#include "tilec.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TL_MAX_UNITS 12
#define TL_MAX_LEVELS 6

typedef struct tl_compute_unit {
  char name[32];        /* "avx512-fma", "amx-bf16", "mxu", "tensor-core" */
  tl_dtype dtype;       /* operand dtype the peak is for (f32, bf16, i8) */
  double peak;          /* op/s with every core (all threads) */
  double peak_1t;       /* op/s of one core; 0 unknown */
  double spread;        /* relative spread of the measurement ((max - min) / median); 0 for presets */
  char source[160];     /* "probe" or the datasheet the number comes from */
} tl_compute_unit;

typedef struct tl_mem_level {
  char name[16];        /* "L1", "L2", "L3", "DRAM", "VMEM", "HBM", "SMEM" */
  int64_t capacity;     /* bytes: per core when per_core, else shared; 0: unbounded (main memory) */
  int per_core;
  double read_bw;       /* bytes/s with every core */
  double write_bw, copy_bw, nt_copy_bw; /* 0: not measured */
  double read_bw_1t;    /* one core; 0 unknown */
  double write_bw_1t, copy_bw_1t, nt_copy_bw_1t; /* one core; 0: not measured */
  double spread;        /* relative spread of read_bw */
  char source[160];
} tl_mem_level;

typedef struct tl_machine {
  char name[48];        /* "host", "tpu-v5e", "h100-sxm" */
  char description[128];
  int cores;            /* cores (threads) the peaks are for */
  int nunits;
  tl_compute_unit units[TL_MAX_UNITS];
  int nlevels;          /* fastest first; the last is main memory */
  tl_mem_level levels[TL_MAX_LEVELS];
  int measured;         /* 1: probed on this host */
  char cpu_key[160];    /* probe cache key: CPU model and features (host only) */
} tl_machine;

/* Measures this host (compute peaks for the ISA paths the CPU has, bandwidths of each cache
 * level and DRAM for 1..N threads, the real last-level cache size by a working-set sweep) within
 * about 30 s, or reads the cached result from ctx's cache dir (keyed by CPU model and features)
 * unless force is 1. progress (may be NULL) receives short notes as the probe goes. */
TL_API tl_status tl_machine_probe(tl_ctx *ctx, int force, void (*progress)(const char *note, void *arg), void *arg,
                                  tl_machine *out);
/* A modelled machine by name ("tpu-v5e", "tpu-v5p", "tpu-v6e", "a100", "h100", "h200");
 * TL_ERR_INVALID for an unknown name (the message lists them). */
TL_API tl_status tl_machine_preset(const char *name, tl_machine *out);
/* Preset names, for listing: i from 0 until NULL. */
TL_API const char *tl_machine_preset_name(int i);
/* The unit that runs `dtype` fastest on m (-1 if none). */
TL_API int tl_machine_unit_for(const tl_machine *m, tl_dtype dtype);

typedef struct tl_bound {
  double seconds;                       /* the bound: the largest of the terms below */
  double compute_s;                     /* flops / peak of the unit */
  int unit;                             /* unit used (-1: no flops or no unit) */
  double level_s[TL_MAX_LEVELS];        /* bytes served from each level / its bandwidth */
  int64_t level_bytes[TL_MAX_LEVELS];
  int limiter;                          /* -1: compute bound; else the level that sets the bound */
  double intensity;                     /* flops / bytes moved (all levels) */
} tl_bound;

/* The roofline bound of a plan (its tl_plan_cost) on m for operands of dtype `dtype` (the unit
 * is the fastest for that dtype). */
TL_API tl_status tl_roofline_bound(const tl_machine *m, const tl_plan *plan, tl_dtype dtype, tl_bound *out);
/* The same from a cost and the tensors' sizes in bytes (n operands, inputs then outputs). */
TL_API tl_status tl_roofline_bound_cost(const tl_machine *m, const tl_cost *cost, int n, const int64_t *tensor_bytes,
                                        tl_dtype dtype, tl_bound *out);

#ifdef __cplusplus
}
#endif

#endif /* TILEC_ROOFLINE_H */
