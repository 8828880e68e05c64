/* bound.c — where a plan stands on a machine's roofline (see docs/roofline.md).
 *
 *   bound = max(flops / peak(unit), bytes_from_level / read_bw(level) for each level)
 *
 * The bytes are the plan's exact cost (tl_plan_cost: every staging event and write-back, per
 * operand). Each byte is attributed to the level it is served from, in a warm model (repeated
 * runs, as the benchmarks time them, so data that fits a level stays there):
 *  1. the working set W = the sum of the operands' tensor bytes. If some level holds W, every
 *     byte comes from the first (fastest, smallest) such level;
 *  2. otherwise each operand's bytes come from the first level that holds that operand's tensor,
 *     else from main memory (the last level).
 * A level "holds" b bytes when its effective capacity is >= b: capacity x cores for per-core
 * levels (each core's share of the data sits in its own level), capacity for shared ones, and
 * anything when the capacity is 0 (unbounded). A level whose read_bw is 0 (unknown) contributes
 * no time: the bound ignores it. The unit is tl_machine_unit_for(m, dtype).
 *
 * Invariants: a refused call leaves *out untouched; the result depends only on its arguments.
 */
#include <string.h>

#include "../runtime/runtime_impl.h"
#include "tilec_roofline.h"

/* 1 when level l of m holds `bytes` (see the file comment). */
static int tl_level_holds(const tl_machine *m, int l, int64_t bytes) {
  const tl_mem_level *lv = &m->levels[l];
  if (lv->capacity <= 0) return 1;
  int64_t cap = lv->capacity;
  if (lv->per_core && m->cores > 1 && tl_mul_ovf(cap, (int64_t)m->cores, &cap)) return 1;
  return bytes <= cap;
}

/* The first level of m that holds `bytes`, else the last level. */
static int tl_level_for(const tl_machine *m, int64_t bytes) {
  for (int l = 0; l < m->nlevels; l++)
    if (tl_level_holds(m, l, bytes)) return l;
  return m->nlevels - 1;
}

tl_status tl_roofline_bound_cost(const tl_machine *m, const tl_cost *cost, int n, const int64_t *tensor_bytes,
                                 tl_dtype dtype, tl_bound *out) {
  if (!m || !cost || !out || (!tensor_bytes && n > 0))
    return tl_fail_tls(TL_ERR_INVALID, "tl_roofline_bound_cost: %s is NULL",
                       !m ? "machine" : !cost ? "cost" : !out ? "out" : "tensor_bytes");
  if (n < 0 || n > TL_MAX_OPERANDS)
    return tl_fail_tls(TL_ERR_INVALID, "tl_roofline_bound_cost: %d operands (0..%d)", n, TL_MAX_OPERANDS);
  if (m->nlevels <= 0 || m->nlevels > TL_MAX_LEVELS)
    return tl_fail_tls(TL_ERR_INVALID, "tl_roofline_bound_cost: machine '%s' has %d memory levels (1..%d)", m->name,
                       m->nlevels, TL_MAX_LEVELS);
  if (m->nunits < 0 || m->nunits > TL_MAX_UNITS)
    return tl_fail_tls(TL_ERR_INVALID, "tl_roofline_bound_cost: machine '%s' has %d compute units (0..%d)", m->name,
                       m->nunits, TL_MAX_UNITS);
  if (cost->flops < 0)
    return tl_fail_tls(TL_ERR_INVALID, "tl_roofline_bound_cost: negative flops (%lld)", (long long)cost->flops);
  int64_t ws = 0;
  for (int i = 0; i < n; i++) {
    if (tensor_bytes[i] < 0 || cost->operand_bytes[i] < 0)
      return tl_fail_tls(TL_ERR_INVALID, "tl_roofline_bound_cost: operand %d: negative %s (%lld)", i,
                         tensor_bytes[i] < 0 ? "tensor bytes" : "operand bytes",
                         (long long)(tensor_bytes[i] < 0 ? tensor_bytes[i] : cost->operand_bytes[i]));
    if (tl_add_ovf(ws, tensor_bytes[i], &ws)) ws = INT64_MAX;
  }

  tl_bound b;
  memset(&b, 0, sizeof b);
  b.unit = -1;
  b.limiter = -1;

  /* bytes per level */
  int all = -1; /* the level serving the whole working set, or -1 */
  for (int l = 0; l < m->nlevels - 1 && all < 0; l++)
    if (tl_level_holds(m, l, ws)) all = l;
  int64_t total = 0;
  for (int i = 0; i < n; i++) {
    int l = all >= 0 ? all : tl_level_for(m, tensor_bytes[i]);
    if (tl_add_ovf(b.level_bytes[l], cost->operand_bytes[i], &b.level_bytes[l])) b.level_bytes[l] = INT64_MAX;
    if (tl_add_ovf(total, cost->operand_bytes[i], &total)) total = INT64_MAX;
  }
  for (int l = 0; l < m->nlevels; l++)
    b.level_s[l] = m->levels[l].read_bw > 0 ? (double)b.level_bytes[l] / m->levels[l].read_bw : 0.0;

  /* compute */
  if (cost->flops > 0) {
    b.unit = tl_machine_unit_for(m, dtype);
    if (b.unit >= 0 && m->units[b.unit].peak > 0) b.compute_s = (double)cost->flops / m->units[b.unit].peak;
  }

  /* the bound: compute wins ties (limiter -1) */
  b.seconds = b.compute_s;
  for (int l = 0; l < m->nlevels; l++) {
    if (b.level_s[l] > b.seconds) {
      b.seconds = b.level_s[l];
      b.limiter = l;
    }
  }
  b.intensity = total > 0 ? (double)cost->flops / (double)total : 0.0;
  *out = b;
  return TL_OK;
}

tl_status tl_roofline_bound(const tl_machine *m, const tl_plan *plan, tl_dtype dtype, tl_bound *out) {
  if (!m || !plan || !out)
    return tl_fail_tls(TL_ERR_INVALID, "tl_roofline_bound: %s is NULL", !m ? "machine" : !plan ? "plan" : "out");
  /* The operands' tensor sizes, as given at tl_plan_new (their data pointers are not used). */
  int64_t bytes[TL_MAX_OPERANDS];
  int n = tl_plan_tensor_bytes(plan, bytes);
  for (int i = 0; i < n; i++)
    if (bytes[i] < 0) bytes[i] = 0;
  tl_cost cost;
  tl_plan_cost(plan, &cost);
  return tl_roofline_bound_cost(m, &cost, n, bytes, dtype, out);
}
