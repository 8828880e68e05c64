/* db.c — the persistent tuning DB: one SQLite table of winning configs.
 *
 *   CREATE TABLE tune (kernel TEXT, version INTEGER, key TEXT, isa TEXT, threads INTEGER,
 *                      machine TEXT, config TEXT, time_s REAL, heuristic_s REAL, tuning_s REAL,
 *                      candidates INTEGER, timed INTEGER, created TEXT,
 *                      PRIMARY KEY (kernel, version, key, isa, threads, machine));
 *
 * Safety comes from SQLite itself: the DB is in WAL mode, every write is one IMMEDIATE
 * transaction, and a busy timeout lets a second writer wait for the first instead of failing, so
 * two processes tuning at once lose nothing; a process killed mid-write leaves a WAL whose
 * uncommitted frames are ignored at the next open, so the file stays valid (tests/tune).
 * synchronous=NORMAL in WAL mode keeps every committed row across a process crash (a power loss
 * may drop the last commits, never corrupt the file).
 *
 * Invariants: every statement is prepared with bound parameters (no SQL built from strings the
 * user gave); every failure comes back as a status with SQLite's message, never an abort. */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <time.h>

#include "tune_impl.h"

struct tl_tune_db {
  sqlite3 *db;
  int writable;
};

static const char tl_tune_schema[] =
    "CREATE TABLE IF NOT EXISTS tune ("
    " kernel TEXT NOT NULL, version INTEGER NOT NULL, key TEXT NOT NULL, isa TEXT NOT NULL,"
    " threads INTEGER NOT NULL, machine TEXT NOT NULL, config TEXT NOT NULL,"
    " time_s REAL, heuristic_s REAL, tuning_s REAL, candidates INTEGER, timed INTEGER, created TEXT,"
    " PRIMARY KEY (kernel, version, key, isa, threads, machine))";

/* mkdir -p for the directory part of path. 0 or -1 (errno set). */
static int tl_tune_mkdirs_for(const char *path) {
  char buf[1024];
  const char *slash = strrchr(path, '/');
  if (!slash || slash == path) return 0;
  size_t n = (size_t)(slash - path);
  if (n >= sizeof buf) {
    errno = ENAMETOOLONG;
    return -1;
  }
  memcpy(buf, path, n);
  buf[n] = 0;
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] != '/' && buf[i] != 0) continue;
    char c = buf[i];
    buf[i] = 0;
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
    buf[i] = c;
  }
  return 0;
}

/* Runs sql without results. 0 or -1 (why). */
static int tl_tune_exec(tl_tune_db *db, const char *sql, char *why, size_t whyn) {
  char *msg = NULL;
  if (sqlite3_exec(db->db, sql, NULL, NULL, &msg) == SQLITE_OK) return 0;
  tl_msg(why, whyn, "%s", msg ? msg : sqlite3_errmsg(db->db));
  sqlite3_free(msg);
  return -1;
}

/* 1 when path + suffix exists and is not empty. */
static int tl_tune_has_side_file(const char *path, const char *suffix) {
  char p[4200];
  struct stat sb;
  if ((size_t)snprintf(p, sizeof p, "%s%s", path, suffix) >= sizeof p) return 1; /* cannot tell: assume so */
  return stat(p, &sb) == 0 && sb.st_size > 0;
}

/* uri = "file:<path>?immutable=1" with path percent-encoded ("file://" before an absolute path);
 * 0, or -1 when it does not fit. */
static int tl_tune_uri(const char *path, char *uri, size_t n) {
  /* an absolute path after "file://" (an empty authority): "file:" + "//host/x" would name a host */
  size_t o = (size_t)snprintf(uri, n, path[0] == '/' ? "file://" : "file:");
  for (const unsigned char *c = (const unsigned char *)path; *c; c++) {
    const int plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || strchr("/-._~", *c);
    if (o + 4 >= n) return -1;
    o += (size_t)(plain ? snprintf(uri + o, n - o, "%c", *c) : snprintf(uri + o, n - o, "%%%02X", *c));
  }
  return o + sizeof "?immutable=1" <= n ? (snprintf(uri + o, n - o, "?immutable=1"), 0) : -1;
}

tl_status tl_tune_db_open(const char *path, int writable, tl_tune_db **out, char *why, size_t whyn) {
  *out = NULL;
  if (!path || !*path) {
    tl_msg(why, whyn, "no DB path");
    return TL_ERR_INVALID;
  }
  struct stat sb;
  if (!writable && stat(path, &sb) != 0) {
    tl_msg(why, whyn, "%s: %s", path, strerror(errno));
    return TL_ERR_IO;
  }
  if (writable && tl_tune_mkdirs_for(path) != 0) {
    tl_msg(why, whyn, "cannot create the directory of %s: %s", path, strerror(errno));
    return TL_ERR_IO;
  }
  tl_tune_db *db = tl_calloc(1, sizeof *db);
  if (!db) {
    tl_msg(why, whyn, "out of memory");
    return TL_ERR_NOMEM;
  }
  db->writable = writable;
  /* readers open read-write when they can (a WAL reader needs the -shm file), else read-only */
  int flags = SQLITE_OPEN_READWRITE | (writable ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX;
  int rc = sqlite3_open_v2(path, &db->db, flags, NULL);
  if (rc != SQLITE_OK && !writable) {
    sqlite3_close(db->db);
    db->db = NULL;
    rc = sqlite3_open_v2(path, &db->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
  }
  if (rc != SQLITE_OK) {
    tl_msg(why, whyn, "%s: %s", path, db->db ? sqlite3_errmsg(db->db) : "cannot open");
    goto fail;
  }
  sqlite3_busy_timeout(db->db, writable ? 10000 : 200);
  /* the first statement reads the header: a file that is not a database fails here */
  if (tl_tune_exec(db, "SELECT count(*) FROM sqlite_master", why, whyn) != 0) {
    /* a reader of a WAL DB in a directory it may not write (the -shm file cannot be made: even
     * SQLite's read-only mode fails) reads it as an immutable file, without locks */
    const int ec = sqlite3_errcode(db->db) & 0xff;
    if (writable || (ec != SQLITE_READONLY && ec != SQLITE_CANTOPEN)) goto fail;
    /* an immutable read sees the main file only: with committed rows still in a -wal file (or a
     * hot journal), it would silently miss them, so that stays a failure */
    if (tl_tune_has_side_file(path, "-wal") || tl_tune_has_side_file(path, "-journal")) {
      char tmp[200];
      snprintf(tmp, sizeof tmp, "%s", why && why[0] ? why : "cannot open");
      tl_msg(why, whyn, "%s (and its -wal / -journal holds rows a read-only reader cannot apply)", tmp);
      goto fail;
    }
    sqlite3_close(db->db);
    db->db = NULL;
    char uri[4200];
    if (tl_tune_uri(path, uri, sizeof uri) != 0 ||
        sqlite3_open_v2(uri, &db->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
      goto fail;
    if (tl_tune_exec(db, "SELECT count(*) FROM sqlite_master", why, whyn) != 0) goto fail;
    if (why && whyn) why[0] = 0;
  }
  if (writable) {
    /* switching to WAL takes an exclusive lock, and SQLite reports SQLITE_BUSY at once (without
     * the busy handler) when another process is doing the same switch or creating the schema:
     * retry for up to the writer's 10 s */
    for (int attempt = 0;; attempt++) {
      if (tl_tune_exec(db, "PRAGMA journal_mode=WAL", why, whyn) == 0 &&
          tl_tune_exec(db, "PRAGMA synchronous=NORMAL", why, whyn) == 0 && tl_tune_exec(db, tl_tune_schema, why, whyn) == 0)
        break;
      const int ec = sqlite3_errcode(db->db);
      if ((ec != SQLITE_BUSY && ec != SQLITE_LOCKED) || attempt >= 400) goto fail;
      usleep(25000);
    }
    if (why && whyn) why[0] = 0;
  }
  *out = db;
  return TL_OK;
fail:
  if (why && why[0] && !strstr(why, path)) {
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s", why);
    tl_msg(why, whyn, "%s: %s", path, tmp);
  }
  sqlite3_close(db->db);
  tl_free_mem(db);
  return TL_ERR_IO;
}

void tl_tune_db_close(tl_tune_db *db) {
  if (!db) return;
  sqlite3_close(db->db);
  tl_free_mem(db);
}

/* Prepares sql; NULL (why) on failure. */
static sqlite3_stmt *tl_tune_prepare(tl_tune_db *db, const char *sql, char *why, size_t whyn) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db->db, sql, -1, &st, NULL) != SQLITE_OK) {
    tl_msg(why, whyn, "%s", sqlite3_errmsg(db->db));
    sqlite3_finalize(st);
    return NULL;
  }
  return st;
}

/* Binds the six key fields of row at parameters 1..6. */
static void tl_tune_bind_key(sqlite3_stmt *st, const tl_tune_row *row) {
  sqlite3_bind_text(st, 1, row->kernel, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(st, 2, row->version);
  sqlite3_bind_text(st, 3, row->key, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 4, row->isa, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(st, 5, row->threads);
  sqlite3_bind_text(st, 6, row->machine, -1, SQLITE_TRANSIENT);
}

tl_status tl_tune_db_put(tl_tune_db *db, const tl_tune_row *row, char *why, size_t whyn) {
  tl_status s = TL_ERR_IO;
  sqlite3_stmt *st = NULL;
  int began = 0;
  if (!db->writable) {
    tl_msg(why, whyn, "the DB was opened read-only");
    return TL_ERR_INVALID;
  }
  if (tl_tune_exec(db, "BEGIN IMMEDIATE", why, whyn) != 0) goto out;
  began = 1;
  st = tl_tune_prepare(db,
                       "INSERT OR REPLACE INTO tune (kernel, version, key, isa, threads, machine, config, time_s,"
                       " heuristic_s, tuning_s, candidates, timed, created) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                       why, whyn);
  if (!st) goto out;
  tl_tune_bind_key(st, row);
  char created[24];
  time_t now = time(NULL);
  struct tm tm;
  if (row->created[0]) snprintf(created, sizeof created, "%s", row->created);
  else if (gmtime_r(&now, &tm)) strftime(created, sizeof created, "%Y-%m-%d %H:%M:%S", &tm);
  else snprintf(created, sizeof created, "?");
  sqlite3_bind_text(st, 7, row->config, -1, SQLITE_TRANSIENT);
  sqlite3_bind_double(st, 8, row->time_s);
  sqlite3_bind_double(st, 9, row->heuristic_s);
  sqlite3_bind_double(st, 10, row->tuning_s);
  sqlite3_bind_int64(st, 11, row->candidates);
  sqlite3_bind_int64(st, 12, row->timed);
  sqlite3_bind_text(st, 13, created, -1, SQLITE_TRANSIENT);
  if (sqlite3_step(st) != SQLITE_DONE) {
    tl_msg(why, whyn, "%s", sqlite3_errmsg(db->db));
    goto out;
  }
  if (tl_tune_exec(db, "COMMIT", why, whyn) != 0) goto out;
  began = 0;
  s = TL_OK;
out:
  sqlite3_finalize(st);
  if (began) sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
  return s;
}

/* Copies column i (text) into dst. */
static void tl_tune_col_text(sqlite3_stmt *st, int i, char *dst, size_t n) {
  const unsigned char *t = sqlite3_column_text(st, i);
  snprintf(dst, n, "%s", t ? (const char *)t : "");
}

/* Reads a full row (the column order of tl_tune_select) into *row. */
static void tl_tune_read_row(sqlite3_stmt *st, tl_tune_row *row) {
  tl_tune_col_text(st, 0, row->kernel, sizeof row->kernel);
  row->version = sqlite3_column_int(st, 1);
  tl_tune_col_text(st, 2, row->key, sizeof row->key);
  tl_tune_col_text(st, 3, row->isa, sizeof row->isa);
  row->threads = sqlite3_column_int(st, 4);
  tl_tune_col_text(st, 5, row->machine, sizeof row->machine);
  tl_tune_col_text(st, 6, row->config, sizeof row->config);
  row->time_s = sqlite3_column_double(st, 7);
  row->heuristic_s = sqlite3_column_double(st, 8);
  row->tuning_s = sqlite3_column_double(st, 9);
  row->candidates = sqlite3_column_int64(st, 10);
  row->timed = sqlite3_column_int64(st, 11);
  tl_tune_col_text(st, 12, row->created, sizeof row->created);
}

#define TL_TUNE_COLS                                                                                        \
  "kernel, version, key, isa, threads, machine, config, time_s, heuristic_s, tuning_s, candidates, timed, " \
  "created"

/* A DB that has no table yet (a reader came first) is empty, not an error. */
static int tl_tune_no_table(tl_tune_db *db) { return strstr(sqlite3_errmsg(db->db), "no such table") != NULL; }

int tl_tune_db_get(tl_tune_db *db, tl_tune_row *row, char *why, size_t whyn) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db->db,
                         "SELECT " TL_TUNE_COLS " FROM tune WHERE kernel = ? AND version = ? AND key = ? AND isa = ?"
                         " AND threads = ? AND machine = ?",
                         -1, &st, NULL) != SQLITE_OK) {
    int none = tl_tune_no_table(db);
    if (!none) tl_msg(why, whyn, "%s", sqlite3_errmsg(db->db));
    sqlite3_finalize(st);
    return none ? 0 : -1;
  }
  tl_tune_bind_key(st, row);
  int rc = sqlite3_step(st), r;
  if (rc == SQLITE_ROW) tl_tune_read_row(st, row), r = 1;
  else if (rc == SQLITE_DONE) r = 0;
  else tl_msg(why, whyn, "%s", sqlite3_errmsg(db->db)), r = -1;
  sqlite3_finalize(st);
  return r;
}

int64_t tl_tune_db_list(tl_tune_db *db, const char *machine, void (*fn)(void *arg, const tl_tune_row *row), void *arg,
                        char *why, size_t whyn) {
  sqlite3_stmt *st = NULL;
  const char *sql = machine ? "SELECT " TL_TUNE_COLS " FROM tune WHERE machine = ? ORDER BY kernel, key, isa, threads"
                            : "SELECT " TL_TUNE_COLS " FROM tune ORDER BY machine, kernel, key, isa, threads";
  if (sqlite3_prepare_v2(db->db, sql, -1, &st, NULL) != SQLITE_OK) {
    int none = tl_tune_no_table(db);
    if (!none) tl_msg(why, whyn, "%s", sqlite3_errmsg(db->db));
    sqlite3_finalize(st);
    return none ? 0 : -1;
  }
  if (machine) sqlite3_bind_text(st, 1, machine, -1, SQLITE_TRANSIENT);
  int64_t n = 0;
  int rc;
  tl_tune_row row;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    memset(&row, 0, sizeof row);
    tl_tune_read_row(st, &row);
    if (fn) fn(arg, &row);
    n++;
  }
  if (rc != SQLITE_DONE) {
    tl_msg(why, whyn, "%s", sqlite3_errmsg(db->db));
    n = -1;
  }
  sqlite3_finalize(st);
  return n;
}

int64_t tl_tune_db_clear(tl_tune_db *db, const char *machine, char *why, size_t whyn) {
  sqlite3_stmt *st = tl_tune_prepare(db, machine ? "DELETE FROM tune WHERE machine = ?" : "DELETE FROM tune", why, whyn);
  if (!st) return -1;
  if (machine) sqlite3_bind_text(st, 1, machine, -1, SQLITE_TRANSIENT);
  int64_t n = -1;
  if (sqlite3_step(st) == SQLITE_DONE) n = sqlite3_changes(db->db);
  else tl_msg(why, whyn, "%s", sqlite3_errmsg(db->db));
  sqlite3_finalize(st);
  return n;
}

int tl_tune_db_check(tl_tune_db *db, char *why, size_t whyn) {
  sqlite3_stmt *st = tl_tune_prepare(db, "PRAGMA integrity_check", why, whyn);
  if (!st) return -1;
  int r = -1;
  if (sqlite3_step(st) == SQLITE_ROW) {
    tl_tune_col_text(st, 0, why, whyn);
    r = !strcmp(why, "ok");
  } else {
    tl_msg(why, whyn, "%s", sqlite3_errmsg(db->db));
  }
  sqlite3_finalize(st);
  return r;
}

/* FNV-1a, 64 bits (the probe cache key's hash). */
static uint64_t tl_tune_hash(const char *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  return h;
}

void tl_tune_machine_key(const tl_ctx_info *in, char *out, size_t n) {
  char full[512], vendor[32];
  size_t j = 0;
  snprintf(full, sizeof full, "tilec-tune-1|%s|%s|%u|%u|%u|%u", in->cpu.vendor, in->cpu.brand, in->cpu.family,
           in->cpu.model, in->cpu.stepping, in->cpu.features);
  for (const char *s = in->cpu.vendor[0] ? in->cpu.vendor : "unknown"; *s && j + 1 < sizeof vendor; s++) {
    char c = *s;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) vendor[j++] = c;
  }
  vendor[j] = 0;
  snprintf(out, n, "%s-%u-%u-%u-%016llx", vendor, in->cpu.family, in->cpu.model, in->cpu.stepping,
           (unsigned long long)tl_tune_hash(full));
}

void tl_tune_row_key(const tl_ctx *ctx, const char *kernel, int version, const char *key, tl_tune_row *row) {
  memset(row, 0, sizeof *row);
  snprintf(row->kernel, sizeof row->kernel, "%s", kernel);
  row->version = version;
  snprintf(row->key, sizeof row->key, "%s", key);
  snprintf(row->isa, sizeof row->isa, "%s", tl_isa_name(ctx->info.isa));
  row->threads = ctx->info.threads;
  tl_tune_machine_key(&ctx->info, row->machine, sizeof row->machine);
}
