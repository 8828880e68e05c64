/* machine.c — modelled machines (TPU and GPU presets from public datasheets) and the choice of the
 * compute unit that runs a dtype.
 *
 * A preset describes one chip (TPU) or one GPU: `cores` is TensorCores per chip or SMs per GPU,
 * peaks are for the whole chip, per-core levels (VMEM, shared memory) give the capacity of one
 * core. Every number carries its source in the `source` field; docs/machines.md has the same
 * table with links.
 *
 * Invariants kept here (tested in tests/roofline/test_machine.c):
 * - every preset has at least one unit and at least two levels, fastest first, main memory last;
 * - every unit and level has a non-empty source that fits its field (checked when it is copied);
 * - on-chip bandwidths that no vendor publishes are either 0 (unknown: the bound ignores the
 *   level) or marked "estimate: <how>" in their source;
 * - GPU tensor-core peaks are dense (without 2:4 structured sparsity).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "../core/core_impl.h"
#include "tilec_roofline.h"

#define TL_KIB ((int64_t)1024)
#define TL_MIB (1024 * TL_KIB)
#define TL_GIB (1024 * TL_MIB)

/* One compute unit of a preset, as written in the table below. */
typedef struct tl_unit_def {
  const char *name;
  tl_dtype dtype;
  double peak; /* op/s, whole chip */
  const char *source;
} tl_unit_def;

/* One memory level of a preset. */
typedef struct tl_level_def {
  const char *name;
  int64_t capacity; /* bytes; per core when per_core */
  int per_core;
  double read_bw;   /* bytes/s, whole chip; 0 unknown */
  const char *source;
} tl_level_def;

#define TL_PRESET_UNITS 4
#define TL_PRESET_LEVELS 3

/* A preset: units and levels end at the first entry whose name is NULL. */
typedef struct tl_preset_def {
  const char *name;
  const char *description;
  int cores;
  tl_unit_def units[TL_PRESET_UNITS];
  tl_level_def levels[TL_PRESET_LEVELS];
} tl_preset_def;

/* VMEM bandwidth is not published. "How to Scale Your Model" (jax-ml.github.io/scaling-book,
 * part 2) gives VMEM about 22x the HBM bandwidth on v5e; the v5p and v6e figures assume the same
 * ratio. */
#define TL_VMEM_HBM_RATIO 22.0

/* GPU shared memory: 32 banks x 4 bytes per clock per SM; the clock is the one the FP32 peak
 * implies (peak / (2 x FP32 lanes)): A100 19.5e12 / (2 x 6912) = 1.41 GHz, H100/H200 SXM
 * 66.9e12 / (2 x 16896) = 1.98 GHz. */
#define TL_SMEM_BYTES_PER_CLK 128.0

static const tl_preset_def tl_presets[] = {
    {
        .name = "tpu-v5e",
        .description = "Google Cloud TPU v5e, one chip (1 TensorCore, 4 MXUs)",
        .cores = 1,
        .units = {{"mxu", TL_BF16, 197e12, "Google Cloud TPU v5e docs: peak compute per chip 197 TFLOP/s bf16"},
                  {"mxu", TL_I8, 393e12,
                   "Google Cloud TPU v5e docs: peak compute per chip 393 TOP/s int8 (JAX pallas tpu_info.py: 3.94e14)"}},
        .levels = {{"VMEM", 128 * TL_MIB, 1, TL_VMEM_HBM_RATIO * 819e9,
                    "capacity: JAX pallas tpu_info.py, 128 MiB per core; estimate: bandwidth 22x HBM (How to Scale "
                    "Your Model, part 2)"},
                   {"HBM", 16 * TL_GIB, 0, 819e9,
                    "Google Cloud TPU v5e docs: HBM2 16 GB (16 GiB in JAX tpu_info.py), 819 GB/s per chip"}},
    },
    {
        .name = "tpu-v5p",
        .description = "Google Cloud TPU v5p, one chip (2 TensorCores, 4 MXUs each)",
        .cores = 2,
        .units = {{"mxu", TL_BF16, 459e12, "Google Cloud TPU v5p docs: peak compute per chip 459 TFLOP/s bf16"},
                  {"mxu", TL_I8, 918e12,
                   "JAX pallas tpu_info.py: 9.18e14 int8 op/s per chip (not in the Cloud TPU v5p table)"}},
        .levels = {{"VMEM", 64 * TL_MIB, 1, TL_VMEM_HBM_RATIO * 2765e9,
                    "capacity: JAX pallas tpu_info.py, 64 MiB per core; estimate: bandwidth 22x HBM (v5e ratio, "
                    "How to Scale Your Model)"},
                   {"HBM", 95 * TL_GIB, 0, 2765e9, "Google Cloud TPU v5p docs: HBM2e 95 GB, 2765 GB/s per chip"}},
    },
    {
        .name = "tpu-v6e",
        .description = "Google Cloud TPU v6e (Trillium), one chip (1 TensorCore, 2 256x256 MXUs)",
        .cores = 1,
        .units = {{"mxu", TL_BF16, 918e12, "Google Cloud TPU v6e docs: peak compute per chip 918 TFLOP/s bf16"},
                  {"mxu", TL_I8, 1836e12, "Google Cloud TPU v6e docs: peak compute per chip 1836 TOP/s int8"}},
        .levels = {{"VMEM", 128 * TL_MIB, 1, TL_VMEM_HBM_RATIO * 1640e9,
                    "capacity: JAX pallas tpu_info.py, 128 MiB per core; estimate: bandwidth 22x HBM (v5e ratio, "
                    "How to Scale Your Model)"},
                   {"HBM", 32 * TL_GIB, 0, 1640e9, "Google Cloud TPU v6e docs: HBM 32 GB, 1640 GB/s per chip"}},
    },
    {
        .name = "a100",
        .description = "NVIDIA A100 SXM4 80GB (108 SMs)",
        .cores = 108,
        .units = {{"tensor-core", TL_BF16, 312e12,
                   "NVIDIA A100 datasheet: 312 TFLOP/s bf16 tensor core, dense (624 with sparsity)"},
                  {"tensor-core", TL_F16, 312e12,
                   "NVIDIA A100 datasheet: 312 TFLOP/s fp16 tensor core, dense (624 with sparsity)"},
                  {"tensor-core", TL_I8, 624e12,
                   "NVIDIA A100 datasheet: 624 TOP/s int8 tensor core, dense (1248 with sparsity)"},
                  {"cuda-core", TL_F32, 19.5e12,
                   "NVIDIA A100 datasheet: 19.5 TFLOP/s FP32 on CUDA cores (TF32 tensor cores, 156 dense, not used "
                   "for f32)"}},
        .levels = {{"SMEM", 164 * TL_KIB, 1, TL_SMEM_BYTES_PER_CLK * 108 * 1.41e9,
                    "NVIDIA Ampere tuning guide: up to 164 KB shared memory per SM; estimate: bandwidth 32 banks x 4 "
                    "B/clk x 108 SMs x 1.41 GHz"},
                   {"L2", 40 * TL_MIB, 0, 0,
                    "NVIDIA A100 whitepaper: 40 MB L2; bandwidth not published (0: unknown, the bound ignores it)"},
                   {"HBM", 80 * TL_GIB, 0, 2039e9, "NVIDIA A100 datasheet: 80GB HBM2e SXM, 2,039 GB/s"}},
    },
    {
        .name = "h100",
        .description = "NVIDIA H100 SXM5 80GB (132 SMs)",
        .cores = 132,
        .units = {{"tensor-core", TL_BF16, 989.4e12,
                   "NVIDIA H100 SXM datasheet: 989 TFLOP/s bf16 tensor core, dense (1,979 with sparsity)"},
                  {"tensor-core", TL_F16, 989.4e12,
                   "NVIDIA H100 SXM datasheet: 989 TFLOP/s fp16 tensor core, dense (1,979 with sparsity)"},
                  {"tensor-core", TL_I8, 1978.9e12,
                   "NVIDIA H100 SXM datasheet: 1,979 TOP/s int8 tensor core, dense (3,958 with sparsity)"},
                  {"cuda-core", TL_F32, 66.9e12, "NVIDIA H100 SXM datasheet: 67 TFLOP/s FP32 on CUDA cores"}},
        .levels = {{"SMEM", 228 * TL_KIB, 1, TL_SMEM_BYTES_PER_CLK * 132 * 1.98e9,
                    "NVIDIA Hopper tuning guide: up to 228 KB shared memory per SM; estimate: bandwidth 32 banks x 4 "
                    "B/clk x 132 SMs x 1.98 GHz"},
                   {"L2", 50 * TL_MIB, 0, 0,
                    "NVIDIA H100 datasheet: 50 MB L2; bandwidth not published (0: unknown, the bound ignores it)"},
                   {"HBM", 80 * TL_GIB, 0, 3.35e12, "NVIDIA H100 SXM datasheet: 80 GB HBM3, 3.35 TB/s"}},
    },
    {
        .name = "h200",
        .description = "NVIDIA H200 SXM 141GB (132 SMs, the H100's GH100 with HBM3e)",
        .cores = 132,
        .units = {{"tensor-core", TL_BF16, 989.4e12,
                   "NVIDIA H200 datasheet: 989 TFLOP/s bf16 tensor core, dense (1,979 with sparsity)"},
                  {"tensor-core", TL_F16, 989.4e12,
                   "NVIDIA H200 datasheet: 989 TFLOP/s fp16 tensor core, dense (1,979 with sparsity)"},
                  {"tensor-core", TL_I8, 1978.9e12,
                   "NVIDIA H200 datasheet: 1,979 TOP/s int8 tensor core, dense (3,958 with sparsity)"},
                  {"cuda-core", TL_F32, 66.9e12, "NVIDIA H200 datasheet: 67 TFLOP/s FP32 on CUDA cores"}},
        .levels = {{"SMEM", 228 * TL_KIB, 1, TL_SMEM_BYTES_PER_CLK * 132 * 1.98e9,
                    "NVIDIA Hopper tuning guide: up to 228 KB shared memory per SM; estimate: bandwidth 32 banks x 4 "
                    "B/clk x 132 SMs x 1.98 GHz"},
                   {"L2", 50 * TL_MIB, 0, 0,
                    "GH100 as in H100: 50 MB L2; bandwidth not published (0: unknown, the bound ignores it)"},
                   {"HBM", 141 * TL_GIB, 0, 4.8e12, "NVIDIA H200 datasheet: 141 GB HBM3e, 4.8 TB/s"}},
    },
};

#define TL_NPRESETS ((int)TL_ARRAY_LEN(tl_presets))

const char *tl_machine_preset_name(int i) {
  if (i < 0 || i >= TL_NPRESETS) return NULL;
  return tl_presets[i].name;
}

/* Copies src into dst[n]; TL_ASSERTs that it fits (the table is ours: a too-long string is a bug). */
static void tl_copy_field(char *dst, size_t n, const char *src) {
  size_t len = strlen(src);
  TL_ASSERT(len < n);
  memcpy(dst, src, len + 1);
}

/* Fills *out from a preset definition. */
static void tl_preset_fill(const tl_preset_def *d, tl_machine *out) {
  memset(out, 0, sizeof *out);
  tl_copy_field(out->name, sizeof out->name, d->name);
  tl_copy_field(out->description, sizeof out->description, d->description);
  out->cores = d->cores;
  for (int i = 0; i < TL_PRESET_UNITS && d->units[i].name; i++) {
    tl_compute_unit *u = &out->units[out->nunits++];
    tl_copy_field(u->name, sizeof u->name, d->units[i].name);
    u->dtype = d->units[i].dtype;
    u->peak = d->units[i].peak;
    u->peak_1t = d->units[i].peak / d->cores; /* datasheets give the chip; one core is its share */
    tl_copy_field(u->source, sizeof u->source, d->units[i].source);
  }
  for (int i = 0; i < TL_PRESET_LEVELS && d->levels[i].name; i++) {
    tl_mem_level *l = &out->levels[out->nlevels++];
    tl_copy_field(l->name, sizeof l->name, d->levels[i].name);
    l->capacity = d->levels[i].capacity;
    l->per_core = d->levels[i].per_core;
    l->read_bw = d->levels[i].read_bw;
    if (l->per_core) l->read_bw_1t = l->read_bw / d->cores; /* each core has its own */
    tl_copy_field(l->source, sizeof l->source, d->levels[i].source);
  }
}

tl_status tl_machine_preset(const char *name, tl_machine *out) {
  if (!name || !out) return tl_fail_tls(TL_ERR_INVALID, "tl_machine_preset: %s is NULL", name ? "out" : "name");
  for (int i = 0; i < TL_NPRESETS; i++) {
    if (strcasecmp(name, tl_presets[i].name) == 0) {
      tl_preset_fill(&tl_presets[i], out);
      return TL_OK;
    }
  }
  char list[256] = "";
  size_t used = 0;
  for (int i = 0; i < TL_NPRESETS && used < sizeof list; i++)
    used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", tl_presets[i].name);
  return tl_fail_tls(TL_ERR_INVALID, "unknown machine '%s' (presets: %s)", name, list);
}

/* The unit dtype a request for `want` may run on at fallback step `step` (0: the dtype itself,
 * 1: the fallback), or TL_DTYPE_INVALID when that step has none. u8 runs on int8 units. */
static tl_dtype tl_unit_candidate(tl_dtype want, int step) {
  switch (want) {
  case TL_BF16:
  case TL_F16:
  case TL_I8:
    return step == 0 ? want : TL_F32;
  case TL_U8:
    return step == 0 ? TL_I8 : TL_F32;
  case TL_F32:
  case TL_I32:
    return step == 0 ? want : TL_DTYPE_INVALID;
  default:
    return TL_DTYPE_INVALID;
  }
}

/* Fastest unit for a dtype: units of that dtype first (u8 counts as i8); if there are none, a
 * bf16, f16, i8 or u8 request falls back to the f32 units (the host converts and uses FMA);
 * f32 and i32 have no fallback. Ties go to the unit listed first. */
int tl_machine_unit_for(const tl_machine *m, tl_dtype dtype) {
  if (!m || m->nunits <= 0) return -1;
  int n = TL_MIN(m->nunits, TL_MAX_UNITS);
  for (int step = 0; step < 2; step++) {
    tl_dtype want = tl_unit_candidate(dtype, step);
    if (want == TL_DTYPE_INVALID) return -1;
    int best = -1;
    for (int i = 0; i < n; i++)
      if (m->units[i].dtype == want && (best < 0 || m->units[i].peak > m->units[best].peak)) best = i;
    if (best >= 0) return best;
  }
  return -1;
}
