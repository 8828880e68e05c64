/* lookup.c — tuned configs for ready-made operations: tl_tune_lookup.
 *
 * The first lookup on a context reads, in one query, every row of the tuning DB for this
 * context's machine, ISA and thread count into memory (a context slot); later lookups are a scan
 * of that small array. The DB is never opened again by that context, so a lookup never waits on a
 * process that is tuning (a WAL reader does not block on writers anyway, and the busy timeout
 * of a reader is 200 ms). Operations call this only when they make a plan, never per call.
 *
 * Failure policy: tuning off or no DB file: no rows, silently. A file that cannot be read or is
 * not a database: no rows and one tl_ctx_warning naming the file and the reason. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "tune_impl.h"

typedef struct tl_tune_mem_row {
  char kernel[32];
  int version;
  char key[TL_TUNE_KEY_MAX];
  char config[TL_TUNE_CFG_TEXT];
} tl_tune_mem_row;

typedef struct tl_tune_mem {
  int64_t n, cap;
  tl_tune_mem_row *rows;
  char isa[16];
  int threads;
} tl_tune_mem;

static void tl_tune_mem_free(void *state) {
  tl_tune_mem *m = state;
  if (!m) return;
  tl_free_mem(m->rows);
  tl_free_mem(m);
}
static const tl_slot_class tl_tune_slot = {.name = "tuned configs", .free_state = tl_tune_mem_free};

typedef struct tl_tune_load {
  tl_tune_mem *mem;
  int nomem;
} tl_tune_load;

/* Keeps the rows of the context's ISA and thread count. */
static void tl_tune_keep(void *arg, const tl_tune_row *row) {
  tl_tune_load *ld = arg;
  tl_tune_mem *m = ld->mem;
  if (strcmp(row->isa, m->isa) != 0 || row->threads != m->threads) return;
  if (m->n == m->cap) {
    int64_t cap = m->cap ? 2 * m->cap : 16;
    tl_tune_mem_row *r = tl_calloc((size_t)cap, sizeof *r);
    if (!r) {
      ld->nomem = 1;
      return;
    }
    if (m->n) memcpy(r, m->rows, (size_t)m->n * sizeof *r);
    tl_free_mem(m->rows);
    m->rows = r, m->cap = cap;
  }
  tl_tune_mem_row *d = &m->rows[m->n++];
  snprintf(d->kernel, sizeof d->kernel, "%s", row->kernel);
  d->version = row->version;
  snprintf(d->key, sizeof d->key, "%s", row->key);
  snprintf(d->config, sizeof d->config, "%s", row->config);
}

/* Reads ctx's rows into a new slot state; NULL only when out of memory. */
static tl_tune_mem *tl_tune_mem_load(tl_ctx *ctx) {
  tl_tune_mem *m = tl_calloc(1, sizeof *m);
  if (!m) return NULL;
  /* the level plans will run at: AMX permission may lower it (tilec tune asks first, so the DB
   * holds rows under the lowered level) */
  snprintf(m->isa, sizeof m->isa, "%s", tl_isa_name(tl_ctx_need_amx(ctx)));
  m->threads = ctx->info.threads;
  const char *path = ctx->info.tune_db;
  struct stat sb;
  if (!path[0] || (stat(path, &sb) != 0 && errno == ENOENT)) return m; /* no DB yet: nothing tuned */
  char why[384] = "", machine[96];
  tl_tune_db *db = NULL;
  if (tl_tune_db_open(path, 0, &db, why, sizeof why) != TL_OK) {
    tl_ctx_warn(ctx, "tuning DB unreadable (%s): using heuristic configs", why);
    return m;
  }
  tl_tune_machine_key(&ctx->info, machine, sizeof machine);
  tl_tune_load ld = {m, 0};
  if (tl_tune_db_list(db, machine, tl_tune_keep, &ld, why, sizeof why) < 0) {
    tl_ctx_warn(ctx, "tuning DB %s unreadable (%s): using heuristic configs", path, why);
    m->n = 0;
  } else if (ld.nomem) {
    tl_ctx_warn(ctx, "tuning DB %s: out of memory reading it: using heuristic configs", path);
    m->n = 0;
  }
  tl_tune_db_close(db);
  return m;
}

const char *tl_tune_lookup(tl_ctx *ctx, const char *kernel, int version, const char *key) {
  if (!ctx || !ctx->info.tune) return NULL;
  tl_tune_mem *m = tl_ctx_slot_get(ctx, &tl_tune_slot);
  if (!m) {
    m = tl_tune_mem_load(ctx);
    if (!m) return NULL;
    if (tl_ctx_slot_set(ctx, &tl_tune_slot, m) != TL_OK) {
      tl_tune_mem_free(m);
      return NULL;
    }
  }
  for (int64_t i = 0; i < m->n; i++) {
    const tl_tune_mem_row *r = &m->rows[i];
    if (r->version == version && !strcmp(r->kernel, kernel) && !strcmp(r->key, key)) return r->config;
  }
  return NULL;
}
