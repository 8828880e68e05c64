/* probe_mem.c — the memory half of tl_machine_probe: read, write, copy and non-temporal copy
 * bandwidth at working sets inside L1, L2, L3 and DRAM, for 1 thread and all threads, and the
 * last-level cache's real size from a read-bandwidth sweep (CPUID's may be a VM artefact).
 *
 * Invariants:
 * - One buffer (2 MiB aligned, huge pages advised, pre-faulted by every worker) serves every
 *   measurement. Worker w works on buf + w * stride, its own slice; slices are 4 KiB multiples
 *   apart plus one spare page, so no two workers share a line.
 * - A working set W is what a kernel touches per pass: read and write sweep W bytes, copies read
 *   W/2 and write the other W/2 (placed 1 KiB off the 4 KiB alias of the source). Every kind
 *   counts W bytes moved per pass (a copy's reads plus its writes, as STREAM counts them).
 * - Per-core levels (L1, L2) get half their capacity per worker; shared ones (L3, DRAM) half the
 *   L3 (or the DRAM set) in total, split between the workers.
 * - The L3 size is where the read bandwidth of one thread, swept from 4 x L2 upwards, falls
 *   halfway from its plateau to the DRAM rate, interpolated in log(size). Without such a drop
 *   the CPUID value is kept, and the level's source says so.
 * - Kernels come from the highest ISA level at or below ctx's that has them (per kind).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "probe_impl.h"

#define TL_KIB ((size_t)1024)
#define TL_MIB ((size_t)1024 * 1024)
#define TL_PROBE_PAGE (4 * TL_KIB)
#define TL_PROBE_COPY_SKEW TL_KIB /* copy destinations sit this far off the source's 4 KiB alias */
#define TL_PROBE_SWEEP_MAX 64     /* sweep points */

/* The memory side of one probe. */
typedef struct tl_probe_mem {
  tl_probe_state *st;
  const tl_probe_impl *kern[TL_PROBE_KINDS]; /* per kind; NULL: no kernel at this ISA */
  char *buf;
  size_t buf_bytes;
} tl_probe_mem;

/* Memory task body: one kernel over worker w's slice, reps passes; returns bytes moved. */
static double tl_probe_mem_body(const tl_probe_task *t, int worker, int nworkers, int64_t reps) {
  char *p = t->buf + (size_t)worker * t->stride;
  size_t half = t->bytes / 2;
  switch (t->kind) {
  case TL_PROBE_READ: {
    volatile double sink = t->mem->read(p, t->bytes, reps);
    (void)sink;
    break;
  }
  case TL_PROBE_WRITE:
    t->mem->write(p, t->bytes, reps);
    break;
  case TL_PROBE_COPY:
    t->mem->copy(p + half + TL_PROBE_COPY_SKEW, p, half, reps);
    break;
  default:
    t->mem->nt_copy(p + half + TL_PROBE_COPY_SKEW, p, half, reps);
    break;
  }
  return (double)t->bytes * (double)reps;
}

/* Rounds a working set down to a positive multiple of 4 KiB (copies need halves that are
 * multiples of TL_PROBE_CHUNK). */
static size_t tl_probe_round(size_t w) {
  w -= w % TL_PROBE_PAGE;
  return w ? w : TL_PROBE_PAGE;
}

/* Measures one kind over a working set of `total` bytes: 1 worker, or all workers with
 * total / threads each (per_worker: every worker gets `total`). */
static tl_probe_rate tl_probe_bw(tl_probe_mem *pm, int kind, size_t total, int all, int per_worker) {
  tl_probe_state *st = pm->st;
  int n = all ? st->threads : 1;
  tl_probe_task t;
  memset(&t, 0, sizeof t);
  t.body = tl_probe_mem_body;
  t.mem = pm->kern[kind];
  t.kind = kind;
  t.buf = pm->buf;
  t.bytes = tl_probe_round(per_worker ? total : total / (size_t)n);
  t.stride = t.bytes + TL_PROBE_PAGE;
  TL_ASSERT((size_t)n * t.stride <= pm->buf_bytes);
  return tl_probe_measure(st, &t, all);
}

/* Pool entry: worker w writes its share of the buffer (faults the pages in). */
static void tl_probe_fault_fn(void *arg, int worker, int nworkers) {
  tl_probe_mem *pm = arg;
  size_t share = pm->buf_bytes / (size_t)nworkers;
  size_t lo = share * (size_t)worker, hi = worker == nworkers - 1 ? pm->buf_bytes : lo + share;
  memset(pm->buf + lo, 1, hi - lo);
}

/* "1.5 MiB" for notes and sources. */
static const char *tl_probe_bytes(char *buf, size_t n, double b) {
  if (b >= (double)TL_MIB) snprintf(buf, n, "%.3g MiB", b / (double)TL_MIB);
  else snprintf(buf, n, "%.3g KiB", b / (double)TL_KIB);
  return buf;
}

/* Sweeps the read bandwidth of one thread from lo to hi bytes by factors of 2^(1/steps) and
 * returns the size where it falls halfway from its plateau (the best point) to the DRAM rate (the
 * mean of the last two points), or 0 when there is no clear drop (plateau < 1.3 x DRAM). One
 * thread: the L3 is shared, one core reaches all of it, and one thread is the least exposed to
 * other work on the machine. */
static size_t tl_probe_sweep(tl_probe_mem *pm, size_t lo, size_t hi, int steps) {
  tl_probe_state *st = pm->st;
  double size[TL_PROBE_SWEEP_MAX], bw[TL_PROBE_SWEEP_MAX];
  int n = 0;
  for (double s = (double)lo; s <= (double)hi * 1.0001 && n < TL_PROBE_SWEEP_MAX; s *= exp2(1.0 / steps)) {
    size_t total = tl_probe_round((size_t)s);
    if (total > hi) total = tl_probe_round(hi); /* the buffer holds hi, not the 1.0001 slack */
    size[n] = (double)total;
    bw[n] = tl_probe_bw(pm, TL_PROBE_READ, total, 0, 0).median;
    char b1[32];
    tl_probe_note(st, "sweep %10s: read %.1f GB/s", tl_probe_bytes(b1, sizeof b1, size[n]), bw[n] * 1e-9);
    n++;
  }
  if (n < 4) return 0;
  double plateau = 0;
  for (int i = 0; i < n - 2; i++)
    if (bw[i] > plateau) plateau = bw[i];
  double dram = 0.5 * (bw[n - 1] + bw[n - 2]);
  if (!(plateau > 1.3 * dram)) return 0;
  double mid = 0.5 * (plateau + dram);
  int top = 0; /* the plateau's first point: the crossing is searched after it */
  while (bw[top] < plateau) top++;
  for (int i = top + 1; i < n; i++) {
    if (bw[i] < mid) {
      double f = (bw[i - 1] - mid) / (bw[i - 1] - bw[i]); /* 0..1 between points i-1 and i */
      return (size_t)exp2(log2(size[i - 1]) + f * (log2(size[i]) - log2(size[i - 1])));
    }
  }
  return 0;
}

/* One level to measure. */
typedef struct tl_probe_level_def {
  const char *name;
  int64_t capacity; /* 0: main memory */
  int per_core;
  size_t ws;        /* working set: per worker when per_core, else in total */
  const char *cap_note;
} tl_probe_level_def;

/* Measures the four kinds at one level (1 thread and all threads) into *l. */
static void tl_probe_level(tl_probe_mem *pm, const tl_probe_level_def *d, tl_mem_level *l) {
  tl_probe_state *st = pm->st;
  double bw[TL_PROBE_KINDS] = {0}, bw1[TL_PROBE_KINDS] = {0};
  double spread = 0;
  int disturbed = 0, lost = 0; /* lost: measurements with every run disturbed */
  for (int k = 0; k < TL_PROBE_KINDS; k++) {
    if (!pm->kern[k]) continue;
    tl_probe_rate one = tl_probe_bw(pm, k, d->ws, 0, d->per_core);
    tl_probe_rate all = st->threads > 1 ? tl_probe_bw(pm, k, d->ws, 1, d->per_core) : one;
    bw[k] = all.best; /* ceilings: the best undisturbed run (see probe.c) */
    bw1[k] = one.best;
    disturbed += all.disturbed + (st->threads > 1 ? one.disturbed : 0);
    if (all.kept == 0 || one.kept == 0) lost++;
    if (k == TL_PROBE_READ) spread = all.spread > one.spread ? all.spread : one.spread;
  }
  memset(l, 0, sizeof *l);
  snprintf(l->name, sizeof l->name, "%s", d->name);
  l->capacity = d->capacity;
  l->per_core = d->per_core;
  l->read_bw = bw[TL_PROBE_READ];
  l->write_bw = bw[TL_PROBE_WRITE];
  l->copy_bw = bw[TL_PROBE_COPY];
  l->nt_copy_bw = bw[TL_PROBE_NT_COPY];
  l->read_bw_1t = bw1[TL_PROBE_READ];
  l->write_bw_1t = bw1[TL_PROBE_WRITE];
  l->copy_bw_1t = bw1[TL_PROBE_COPY];
  l->nt_copy_bw_1t = bw1[TL_PROBE_NT_COPY];
  l->spread = spread;
  char b1[32];
  tl_msg(l->source, sizeof l->source, "probe: %s; working set %s%s; best of %d runs (%d disturbed%s)",
         d->cap_note, tl_probe_bytes(b1, sizeof b1, (double)d->ws), d->per_core ? " per thread" : " in total",
         st->trials, disturbed, lost ? "; some figures may be low" : "");
  tl_probe_note(st, "%-4s GB/s all threads: read %.1f write %.1f copy %.1f nt-copy %.1f; 1 thread: read %.1f write %.1f copy %.1f nt-copy %.1f",
                d->name, bw[0] * 1e-9, bw[1] * 1e-9, bw[2] * 1e-9, bw[3] * 1e-9, bw1[0] * 1e-9, bw1[1] * 1e-9,
                bw1[2] * 1e-9, bw1[3] * 1e-9);
}

/* The kernel of one kind in impl, or NULL. */
static int tl_probe_has(const tl_probe_impl *impl, int kind) {
  switch (kind) {
  case TL_PROBE_READ: return impl->read != NULL;
  case TL_PROBE_WRITE: return impl->write != NULL;
  case TL_PROBE_COPY: return impl->copy != NULL;
  default: return impl->nt_copy != NULL;
  }
}

tl_status tl_probe_memory(tl_probe_state *st, tl_machine *m) {
  tl_probe_mem pm;
  memset(&pm, 0, sizeof pm);
  pm.st = st;
  for (int k = 0; k < TL_PROBE_KINDS; k++)
    for (int lv = (int)st->info.isa; lv >= 0 && !pm.kern[k]; lv--) {
      const tl_probe_impl *impl = tl_probe_impl_at((tl_isa)lv);
      if (impl && tl_probe_has(impl, k)) pm.kern[k] = impl;
    }
  TL_ASSERT(pm.kern[TL_PROBE_READ]); /* the scalar entry has one */

  const tl_cpu_info *cpu = &st->info.cpu;
  size_t l1 = cpu->l1d_bytes > 0 ? (size_t)cpu->l1d_bytes : 32 * TL_KIB;
  size_t l2 = cpu->l2_bytes > 0 ? (size_t)cpu->l2_bytes : TL_MIB;
  size_t l3_cpuid = cpu->l3_bytes > 0 ? (size_t)cpu->l3_bytes : 0;
  /* The sweep goes to 8x the larger of CPUID's L3 and 32 MiB, within [256 MiB, 1 GiB] (quick:
   * half), and never past a quarter of physical memory. */
  size_t hi = 8 * (l3_cpuid > 32 * TL_MIB ? l3_cpuid : 32 * TL_MIB);
  size_t hi_min = (st->quick ? 128 : 256) * TL_MIB, hi_max = (st->quick ? 512 : 1024) * TL_MIB;
  hi = hi < hi_min ? hi_min : hi > hi_max ? hi_max : hi;
  long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  if (pages > 0 && psz > 0 && (double)pages * (double)psz / 4 < (double)hi)
    hi = tl_probe_round((size_t)((double)pages * (double)psz / 4));
  if (hi < 8 * l2) hi = 8 * l2;
  /* The buffer holds the largest set (the sweep's end, or every worker's half of L2) plus a
   * spare page per worker slice. */
  size_t per_core = (size_t)st->threads * (l2 / 2 + TL_PROBE_PAGE);
  pm.buf_bytes = (hi > per_core ? hi : per_core) + (size_t)(st->threads + 1) * 2 * TL_PROBE_PAGE;
  pm.buf = tl_alloc_huge(pm.buf_bytes); /* 2 MiB aligned, huge pages advised (the buffer is large) */
  if (!pm.buf) {
    char b1[32];
    return tl_ctx_fail(st->ctx, TL_ERR_NOMEM, "tl_machine_probe: cannot allocate the %s bandwidth buffer",
                       tl_probe_bytes(b1, sizeof b1, (double)pm.buf_bytes));
  }
  tl_pool_run(st->ctx->pool, st->threads, tl_probe_fault_fn, &pm);

  /* L3: the sweep starts at 4 x L2, where L2 hits no longer lift the plateau. */
  char b1[32], b2[32], l3_note[128];
  size_t lo = 4 * l2;
  tl_probe_note(st, "sweeping the read bandwidth from %s to %s for the last-level cache", tl_probe_bytes(b1, sizeof b1, (double)lo),
                tl_probe_bytes(b2, sizeof b2, (double)hi));
  size_t l3 = tl_probe_sweep(&pm, lo, hi, st->quick ? 1 : 2);
  if (l3) {
    tl_msg(l3_note, sizeof l3_note, "capacity %s from a read-bandwidth sweep (CPUID: %s)",
             tl_probe_bytes(b1, sizeof b1, (double)l3), l3_cpuid ? tl_probe_bytes(b2, sizeof b2, (double)l3_cpuid) : "none");
  } else {
    l3 = l3_cpuid;
    tl_msg(l3_note, sizeof l3_note, "capacity from CPUID: the sweep found no drop to DRAM speed");
  }
  tl_probe_note(st, "last-level cache: %s", l3_note);

  /* DRAM: 4x the L3 and at least 256 MiB (quick: 128), within the buffer. */
  size_t dram = 4 * l3 > hi_min ? 4 * l3 : hi_min;
  if (dram > hi) dram = hi;
  tl_probe_level_def defs[4];
  int nd = 0;
  defs[nd++] = (tl_probe_level_def){"L1", (int64_t)l1, 1, l1 / 2, cpu->l1d_bytes > 0 ? "capacity from CPUID (L1d)" : "capacity assumed (CPUID has none)"};
  defs[nd++] = (tl_probe_level_def){"L2", (int64_t)l2, 1, l2 / 2, cpu->l2_bytes > 0 ? "capacity from CPUID" : "capacity assumed (CPUID has none)"};
  if (l3 > 2 * l2) defs[nd++] = (tl_probe_level_def){"L3", (int64_t)l3, 0, l3 / 2, l3_note};
  defs[nd++] = (tl_probe_level_def){"DRAM", 0, 0, dram, "main memory"};
  m->nlevels = 0;
  for (int i = 0; i < nd && m->nlevels < TL_MAX_LEVELS; i++) tl_probe_level(&pm, &defs[i], &m->levels[m->nlevels++]);
  tl_free_huge(pm.buf);
  return TL_OK;
}
