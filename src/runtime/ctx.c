/* ctx.c — the context: reads the environment once, detects the CPU, applies the ISA cap, owns
 * the thread pool, the per-worker staging memory, the plans made from it, the messages and the
 * slots through which upper layers attach their state. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime_impl.h"

#define TL_MAX_THREADS 1024

tl_status tl_ctx_fail(tl_ctx *ctx, tl_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
  va_end(ap);
  return s;
}

void tl_ctx_ok(tl_ctx *ctx) { ctx->err[0] = 0; }

void tl_ctx_warn(tl_ctx *ctx, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ctx->warn, sizeof ctx->warn, fmt, ap);
  va_end(ap);
}

const char *tl_ctx_error(const tl_ctx *ctx) { return ctx ? ctx->err : "ctx is NULL"; }
const char *tl_ctx_warning(const tl_ctx *ctx) { return ctx ? ctx->warn : ""; }

/* The cache directory: opts, $TILEC_CACHE_DIR, $XDG_CACHE_HOME/tilec, ~/.cache/tilec. */
static void tl_ctx_cache_dir(const char *opt, char *out, size_t n) {
  const char *e;
  if (opt && *opt)
    snprintf(out, n, "%s", opt);
  else if ((e = getenv("TILEC_CACHE_DIR")) && *e)
    snprintf(out, n, "%s", e);
  else if ((e = getenv("XDG_CACHE_HOME")) && *e)
    snprintf(out, n, "%s/tilec", e);
  else if ((e = getenv("HOME")) && *e)
    snprintf(out, n, "%s/.cache/tilec", e);
  else /* no home: a per-user folder, not one shared name others could pre-create */
    snprintf(out, n, "/tmp/tilec-cache-%u", (unsigned)getuid());
}

tl_status tl_ctx_new(const tl_ctx_opts *opts, tl_ctx **out) {
  static const tl_ctx_opts defaults;
  tl_status s = TL_OK;
  tl_ctx *ctx = NULL;
  if (!out) return tl_fail_tls(TL_ERR_INVALID, "tl_ctx_new: out is NULL");
  *out = NULL;
  if (!opts) opts = &defaults;

  tl_cpu_info cpu;
  tl_cpu_detect(&cpu);
  int threads = opts->threads ? opts->threads : TL_MAX(1, TL_MIN(cpu.cpus_allowed, TL_MAX_THREADS));
  if (threads < 1 || threads > TL_MAX_THREADS)
    return tl_fail_tls(TL_ERR_INVALID, "tl_ctx_new: threads is %d, must be 0 (all allowed CPUs) or 1..%d",
                       opts->threads, TL_MAX_THREADS);
  const char *isa_name = opts->isa ? opts->isa : getenv("TILEC_ISA");
  tl_isa cap, isa;
  char msg[512];
  if (tl_isa_resolve(isa_name, cpu.isa_max, &cap, &isa, msg, sizeof msg) != TL_OK)
    return tl_fail_tls(TL_ERR_INVALID, "tl_ctx_new: %s%s", opts->isa ? "" : "TILEC_ISA: ", msg);
  isa = tl_isa_usable(isa, cpu.features); /* a cap of avx2vnni on an AVX-512 CPU without AVX-VNNI */

  ctx = tl_calloc(1, sizeof *ctx);
  if (!ctx) return tl_fail_tls(TL_ERR_NOMEM, "tl_ctx_new: out of memory");
  tl_ctx_info *in = &ctx->info;
  in->cpu = cpu;
  in->isa = isa;
  in->isa_cap = cap;
  in->threads = threads;
  in->vmem_bytes = opts->vmem_bytes ? opts->vmem_bytes
                   : cpu.l2_bytes > 0 ? (size_t)cpu.l2_bytes * 3 / 4 : (size_t)1 << 20;
  in->l1_bytes = opts->l1_bytes ? opts->l1_bytes
                 : cpu.l1d_bytes > 0 ? (size_t)cpu.l1d_bytes * 3 / 4 : (size_t)32 * 1024 * 3 / 4;
  in->spin_us = opts->spin_us ? opts->spin_us : 50;
  const char *interp = getenv("TILEC_INTERPRET");
  in->interpret = interp && *interp && strcmp(interp, "0") != 0;
  tl_ctx_cache_dir(opts->cache_dir, in->cache_dir, sizeof in->cache_dir);
  const char *tune = getenv("TILEC_TUNE"), *tune_db = opts->tune_db ? opts->tune_db : getenv("TILEC_TUNE_DB");
  in->tune = opts->tune ? opts->tune > 0 : !(tune && !strcmp(tune, "0"));
  if (tune_db && *tune_db) snprintf(in->tune_db, sizeof in->tune_db, "%s", tune_db);
  else snprintf(in->tune_db, sizeof in->tune_db, "%.500s/tune.db", in->cache_dir);

  ctx->worker_mem = tl_calloc((size_t)threads, sizeof *ctx->worker_mem);
  ctx->worker_mem_bytes = tl_calloc((size_t)threads, sizeof *ctx->worker_mem_bytes);
  ctx->nest_mem = tl_calloc((size_t)threads * TL_MAX_NEST, sizeof *ctx->nest_mem);
  ctx->nest_mem_bytes = tl_calloc((size_t)threads * TL_MAX_NEST, sizeof *ctx->nest_mem_bytes);
  if (!ctx->worker_mem || !ctx->worker_mem_bytes || !ctx->nest_mem || !ctx->nest_mem_bytes) {
    s = tl_fail_tls(TL_ERR_NOMEM, "tl_ctx_new: out of memory");
    goto out;
  }
  s = tl_pool_new(threads, in->spin_us, &ctx->pool);
  if (s != TL_OK) goto out; /* tl_pool_new set the message */
out:
  if (s != TL_OK) {
    tl_ctx_free(ctx);
    return s;
  }
  *out = ctx;
  return TL_OK;
}

void tl_ctx_free(tl_ctx *ctx) {
  if (!ctx || tl_prog_current()) return; /* freeing from inside a body would pull the pool away */
  while (ctx->plans) tl_plan_free(ctx->plans);
  for (int i = 0; i < TL_MAX_SLOTS; i++)
    if (ctx->slots[i].cls && ctx->slots[i].cls->free_state) ctx->slots[i].cls->free_state(ctx->slots[i].state);
  tl_pool_free(ctx->pool);
  if (ctx->worker_mem)
    for (int i = 0; i < ctx->info.threads; i++) tl_aligned_free(ctx->worker_mem[i]);
  tl_free_mem(ctx->worker_mem);
  tl_free_mem(ctx->worker_mem_bytes);
  if (ctx->nest_mem)
    for (int i = 0; i < ctx->info.threads * TL_MAX_NEST; i++) tl_aligned_free(ctx->nest_mem[i]);
  tl_free_mem(ctx->nest_mem);
  tl_free_mem(ctx->nest_mem_bytes);
  tl_free_mem(ctx);
}

tl_status tl_ctx_info_get(const tl_ctx *ctx, tl_ctx_info *out) {
  if (!ctx || !out) return tl_fail_tls(TL_ERR_INVALID, "tl_ctx_info_get: %s is NULL", ctx ? "out" : "ctx");
  *out = ctx->info;
  return TL_OK;
}

tl_isa tl_ctx_need_amx(tl_ctx *ctx) {
  if (ctx->info.isa != TL_ISA_AMX || ctx->info.amx_state != 0) return ctx->info.isa;
  char msg[256];
  if (tl_amx_request(msg, sizeof msg) == 1) {
    ctx->info.amx_state = 1;
  } else {
    ctx->info.amx_state = -1;
    ctx->info.isa = tl_isa_from_features(ctx->info.cpu.features &
                                         ~(uint32_t)(TL_FEAT_AMX_TILE | TL_FEAT_AMX_BF16 | TL_FEAT_AMX_INT8));
    if (ctx->info.isa > ctx->info.isa_cap) ctx->info.isa = tl_isa_usable(ctx->info.isa_cap, ctx->info.cpu.features);
    tl_ctx_warn(ctx, "AMX refused (%s): using the %s paths", msg, tl_isa_name(ctx->info.isa));
  }
  return ctx->info.isa;
}

void *tl_ctx_slot_get(const tl_ctx *ctx, const tl_slot_class *cls) {
  for (int i = 0; i < TL_MAX_SLOTS; i++)
    if (ctx->slots[i].cls == cls) return ctx->slots[i].state;
  return NULL;
}

tl_status tl_ctx_slot_set(tl_ctx *ctx, const tl_slot_class *cls, void *state) {
  int free_i = -1;
  for (int i = 0; i < TL_MAX_SLOTS; i++) {
    if (ctx->slots[i].cls == cls) {
      if (cls->free_state && ctx->slots[i].state != state) cls->free_state(ctx->slots[i].state);
      ctx->slots[i].state = state;
      return TL_OK;
    }
    if (!ctx->slots[i].cls && free_i < 0) free_i = i;
  }
  if (free_i < 0) return tl_ctx_fail(ctx, TL_ERR_NOMEM, "context slots: all %d are used (adding '%s')", TL_MAX_SLOTS, cls->name);
  ctx->slots[free_i].cls = cls;
  ctx->slots[free_i].state = state;
  return TL_OK;
}
