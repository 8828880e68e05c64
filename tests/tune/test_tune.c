/* test_tune.c — the tuner and its DB (src/tune/, docs/tune.md):
 *   - DB round trip, list, clear; bad paths give statuses, never crashes;
 *   - two writer processes at once lose nothing; kill -9 in the middle of writes leaves a DB
 *     that reopens, passes integrity_check and takes new writes;
 *   - a corrupt DB file (garbage bytes) or a directory as the DB: tl_matmul succeeds with the
 *     heuristic config and a warning;
 *   - key separation: another ISA, thread count, machine, version or shape key is not reused;
 *   - a tuned config (BM 8, BN 16) is the one tl_matmul's cached plan uses, and its result is
 *     right; TILEC_TUNE=0 (and opts.tune -1) ignore the DB;
 *   - the search: finds the optimum of a synthetic space, times at most 15% of it, stops slow
 *     candidates early, respects its budget, searches large spaces by beam; the real matmul
 *     space respects the tile alignment (BN % 16, BK % 32 for bf16, % 64 for int8) and its
 *     winner computes the right product;
 *   - tl_attention: a tuned BQ/BK (prefill) or BK (decode) is the one its cached plan uses, with a
 *     right result against float64; a misaligned (BQ 24) or refused config falls back with a
 *     warning; TILEC_TUNE=0 ignores the DB; the attention space's candidates are aligned.
 * Everything lives in a temporary directory; the user's cache is never touched. */
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernels/attention_impl.h"
#include "kernels/matmul_impl.h"
#include "kernels/tune_kernels.h"
#include "test_util.h"
#include "tune/tune_impl.h"

static char tmpdir[256];

/* path = tmpdir/name */
static void tpath(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", tmpdir, name); }

static void remove_db(const char *path) {
  char p[600];
  unlink(path);
  snprintf(p, sizeof p, "%s-wal", path), unlink(p);
  snprintf(p, sizeof p, "%s-shm", path), unlink(p);
  snprintf(p, sizeof p, "%s-journal", path), unlink(p);
}

static tl_ctx *new_ctx(int threads, const char *db, int tune) {
  tl_ctx_opts o = {.threads = threads, .tune_db = db, .tune = tune};
  tl_ctx *ctx = NULL;
  if (tl_ctx_new(&o, &ctx) != TL_OK) fprintf(stderr, "tl_ctx_new: %s\n", tl_last_error());
  return ctx;
}

static tl_tune_row make_row(const char *kernel, const char *key, const char *isa, int threads, const char *machine,
                            const char *config) {
  tl_tune_row r;
  memset(&r, 0, sizeof r);
  snprintf(r.kernel, sizeof r.kernel, "%s", kernel);
  r.version = 1;
  snprintf(r.key, sizeof r.key, "%s", key);
  snprintf(r.isa, sizeof r.isa, "%s", isa);
  r.threads = threads;
  snprintf(r.machine, sizeof r.machine, "%s", machine);
  snprintf(r.config, sizeof r.config, "%s", config);
  r.time_s = 1e-3, r.heuristic_s = 2e-3;
  return r;
}

static int64_t count_rows(const char *path) {
  tl_tune_db *db = NULL;
  char why[256];
  if (tl_tune_db_open(path, 0, &db, why, sizeof why) != TL_OK) return -1;
  int64_t n = tl_tune_db_list(db, NULL, NULL, NULL, why, sizeof why);
  tl_tune_db_close(db);
  return n;
}

/* ---- the DB ---- */

static void test_db_roundtrip(void) {
  char path[512], why[256];
  tpath(path, sizeof path, "sub/dir/rt.db"); /* directories are created */
  tl_tune_db *db = NULL;
  REQUIRE(tl_tune_db_open(path, 1, &db, why, sizeof why) == TL_OK, "open: %s", why);
  tl_tune_row r = make_row("matmul", "f32.f32.f32 m8 n8 k8 z1", "avx512", 2, "m1", "BM=8 BN=16 BK=32");
  CHECK(tl_tune_db_put(db, &r, why, sizeof why) == TL_OK, "put: %s", why);
  snprintf(r.config, sizeof r.config, "BM=16 BN=16 BK=32"); /* replaces */
  CHECK(tl_tune_db_put(db, &r, why, sizeof why) == TL_OK, "put again: %s", why);
  tl_tune_row q = make_row("matmul", "f32.f32.f32 m8 n8 k8 z1", "avx512", 2, "m1", "");
  CHECK(tl_tune_db_get(db, &q, why, sizeof why) == 1, "get");
  CHECK(!strcmp(q.config, "BM=16 BN=16 BK=32"), "config '%s'", q.config);
  CHECK(fabs(q.time_s - 1e-3) < 1e-12 && fabs(q.heuristic_s - 2e-3) < 1e-12, "times %g %g", q.time_s, q.heuristic_s);
  CHECK(q.created[0] != 0, "created is set");
  q = make_row("matmul", "other", "avx512", 2, "m1", "");
  CHECK(tl_tune_db_get(db, &q, why, sizeof why) == 0, "absent key");
  tl_tune_row r2 = make_row("matmul", "k2", "avx512", 2, "m2", "BM=8");
  CHECK(tl_tune_db_put(db, &r2, why, sizeof why) == TL_OK, "put m2");
  CHECK(tl_tune_db_list(db, "m1", NULL, NULL, why, sizeof why) == 1, "list m1");
  CHECK(tl_tune_db_list(db, NULL, NULL, NULL, why, sizeof why) == 2, "list all");
  CHECK(tl_tune_db_clear(db, "m1", why, sizeof why) == 1, "clear m1");
  CHECK(tl_tune_db_list(db, NULL, NULL, NULL, why, sizeof why) == 1, "m2 stays");
  CHECK(tl_tune_db_check(db, why, sizeof why) == 1, "integrity: %s", why);
  tl_tune_db_close(db);
  tl_tune_db_close(NULL);
}

static void test_db_bad_paths(void) {
  char path[600], file[512], why[256];
  tl_tune_db *db = NULL;
  tpath(file, sizeof file, "plainfile");
  FILE *f = fopen(file, "w");
  REQUIRE(f, "fopen");
  for (int i = 0; i < 512; i++) fputs("not a db", f);
  fclose(f);
  snprintf(path, sizeof path, "%s/tune.db", file); /* under a regular file */
  CHECK(tl_tune_db_open(path, 1, &db, why, sizeof why) == TL_ERR_IO && !db, "under a file: IO");
  CHECK(strstr(why, "plainfile") != NULL, "message names the path: %s", why);
  tpath(path, sizeof path, "missing.db");
  CHECK(tl_tune_db_open(path, 0, &db, why, sizeof why) == TL_ERR_IO && !db, "missing, read-only: IO");
  CHECK(tl_tune_db_open("", 1, &db, why, sizeof why) == TL_ERR_INVALID, "empty path");
  CHECK(tl_tune_db_open(file, 0, &db, why, sizeof why) == TL_ERR_IO, "a text file is not a DB: %s", why);
  tl_tune_db_close(db);
  tl_tune_space sp = {.nparams = 2, .params = {{.name = "BM"}, {.name = "BN"}}};
  int64_t cfg[2] = {1, 2};
  CHECK(tl_tune_cfg_parse(&sp, "BM=8 BN=16 XX=3", cfg) == 0 && cfg[0] == 8 && cfg[1] == 16, "parse");
  CHECK(tl_tune_cfg_parse(&sp, "BM=", cfg) == -1, "malformed");
  CHECK(tl_tune_cfg_parse(&sp, "BM8", cfg) == -1, "no '='");
  CHECK(tl_tune_cfg_parse(&sp, "BM=8x", cfg) == -1, "junk after a number");
}

/* A DB in a directory the reader may not write (its -shm file cannot be made; a WAL DB then
 * failed to open even read-only, and tl_matmul ignored its rows as "unreadable"): the reader gets
 * the row; with a -wal file beside the DB (rows an immutable read would not see) it is refused,
 * naming it. The reading child runs as user nobody when the test runs as root (root writes
 * anywhere), else with the directory made read-only; skipped when neither works. */
static void test_db_readonly_dir(void) {
  char dir[512], path[600], wal[640], why[256];
  tpath(dir, sizeof dir, "rodir");
  REQUIRE(mkdir(dir, 0755) == 0 || errno == EEXIST, "mkdir %s", dir);
  snprintf(path, sizeof path, "%s/ro.db", dir);
  snprintf(wal, sizeof wal, "%s-wal", path);
  tl_tune_db *db = NULL;
  REQUIRE(tl_tune_db_open(path, 1, &db, why, sizeof why) == TL_OK, "open: %s", why);
  tl_tune_row r = make_row("matmul", "f32.f32.f32 m8 n8 k8 z1", "avx512", 2, "m1", "BM=8 BN=16 BK=32");
  CHECK(tl_tune_db_put(db, &r, why, sizeof why) == TL_OK, "put: %s", why);
  tl_tune_db_close(db);
  chmod(path, 0644), chmod(tmpdir, 0755), chmod(dir, 0755); /* whatever the umask */
  const int root = geteuid() == 0;
  if (!root) chmod(dir, 0555);
  /* twice: the DB alone (the row is read), then with a -wal beside it, which an immutable read
   * would ignore (refused) */
  for (int with_wal = 0; with_wal < 2; with_wal++) {
    if (with_wal) {
      if (!root) chmod(dir, 0755);
      FILE *f = fopen(wal, "w");
      REQUIRE(f, "fopen %s", wal);
      fputs("not applied", f);
      fclose(f);
      chmod(wal, 0644);
      if (!root) chmod(dir, 0555);
    }
    pid_t pid = fork();
    REQUIRE(pid >= 0, "fork");
    if (pid == 0) {
      if (root && (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)) _exit(3);
      if (access(dir, W_OK) == 0) _exit(3); /* could write after all: nothing to test */
      tl_tune_db *rd = NULL;
      if (tl_tune_db_open(path, 0, &rd, why, sizeof why) != TL_OK) {
        if (with_wal && strstr(why, "-wal")) _exit(0);
        fprintf(stderr, "read-only open: %s\n", why);
        _exit(1);
      }
      tl_tune_row q = make_row("matmul", "f32.f32.f32 m8 n8 k8 z1", "avx512", 2, "m1", "");
      const int got = tl_tune_db_get(rd, &q, why, sizeof why);
      tl_tune_db_close(rd);
      _exit(!with_wal && got == 1 && !strcmp(q.config, "BM=8 BN=16 BK=32") ? 0 : 2);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 3) {
      fprintf(stderr, "  (skipped: no user to read as without write permission)\n");
      break;
    }
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "reader in a read-only directory%s: status %d",
          with_wal ? ", a -wal beside the DB (refused, naming it)" : "", st);
  }
  if (!root) chmod(dir, 0755);
  unlink(wal);
}

/* Writes n rows with keys "w<w> i<i>" in separate transactions; exits 0 when all succeeded. */
static void writer_child(const char *path, int w, int n, int forever) {
  char why[256];
  tl_tune_db *db = NULL;
  if (tl_tune_db_open(path, 1, &db, why, sizeof why) != TL_OK) {
    fprintf(stderr, "writer %d: %s\n", w, why);
    _exit(2);
  }
  int bad = 0;
  for (int i = 0; forever || i < n; i++) {
    char key[64];
    snprintf(key, sizeof key, "w%d i%d", w, i);
    tl_tune_row r = make_row("matmul", key, "avx512", 2, "m", "BM=64 BN=128 BK=256 and some padding text for size");
    if (tl_tune_db_put(db, &r, why, sizeof why) != TL_OK) {
      fprintf(stderr, "writer %d row %d: %s\n", w, i, why);
      bad++;
    }
  }
  tl_tune_db_close(db);
  _exit(bad ? 1 : 0);
}

static void test_two_writers(void) {
  char path[512];
  tpath(path, sizeof path, "two.db");
  remove_db(path);
  const int n = 150;
  pid_t pid[2];
  for (int w = 0; w < 2; w++) {
    pid[w] = fork();
    REQUIRE(pid[w] >= 0, "fork");
    if (pid[w] == 0) writer_child(path, w, n, 0);
  }
  for (int w = 0; w < 2; w++) {
    int st = 0;
    waitpid(pid[w], &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer %d exit status %d", w, st);
  }
  CHECK(count_rows(path) == 2 * n, "rows %lld, expected %d", (long long)count_rows(path), 2 * n);
}

static void test_kill9(void) {
  char path[512], why[256];
  tpath(path, sizeof path, "crash.db");
  remove_db(path);
  for (int round = 0; round < 3; round++) {
    pid_t pid = fork();
    REQUIRE(pid >= 0, "fork");
    if (pid == 0) writer_child(path, 10 + round, 0, 1);
    /* well into the writes: wait until the child has committed some rows (a busy machine may
     * start it late), then a little more so the kill lands mid-transaction at some point */
    int64_t before = count_rows(path) > 0 ? count_rows(path) : 0;
    for (int t = 0; t < 500 && count_rows(path) < before + 5; t++) usleep(10000);
    usleep(10000 + 20000 * round);
    kill(pid, SIGKILL);
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "child killed by SIGKILL (status %d)", st);
    tl_tune_db *db = NULL;
    REQUIRE(tl_tune_db_open(path, 1, &db, why, sizeof why) == TL_OK, "reopen after kill -9: %s", why);
    CHECK(tl_tune_db_check(db, why, sizeof why) == 1, "integrity after kill -9: %s", why);
    int64_t n = tl_tune_db_list(db, NULL, NULL, NULL, why, sizeof why);
    CHECK(n > 0, "rows readable after kill -9: %lld (%s)", (long long)n, why);
    tl_tune_row r = make_row("matmul", "after crash", "avx512", 2, "m", "BM=8");
    CHECK(tl_tune_db_put(db, &r, why, sizeof why) == TL_OK, "write after kill -9: %s", why);
    tl_tune_db_close(db);
  }
}

/* ---- tl_matmul and the DB ---- */

typedef struct mm_case {
  float *a, *b, *c;
  tl_tensor ta, tb, tc;
  int64_t M, N, K;
} mm_case;

static void mm_make(mm_case *m, int64_t M, int64_t N, int64_t K) {
  m->M = M, m->N = N, m->K = K;
  m->a = malloc(sizeof(float) * M * K), m->b = malloc(sizeof(float) * K * N), m->c = malloc(sizeof(float) * M * N);
  test_rng r = {77};
  for (int64_t i = 0; i < M * K; i++) m->a[i] = (float)test_rng_uniform(&r, -1, 1);
  for (int64_t i = 0; i < K * N; i++) m->b[i] = (float)test_rng_uniform(&r, -1, 1);
  int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
  m->ta = tl_tensor_make(m->a, TL_F32, 2, sa), m->tb = tl_tensor_make(m->b, TL_F32, 2, sb);
  m->tc = tl_tensor_make(m->c, TL_F32, 2, sc);
}

static void mm_free(mm_case *m) { free(m->a), free(m->b), free(m->c); }

/* ||c - a @ b|| / ||a @ b|| after poisoning c and calling tl_matmul. */
static double mm_run_err(tl_ctx *ctx, mm_case *m, tl_status *s) {
  for (int64_t i = 0; i < m->M * m->N; i++) m->c[i] = NAN;
  *s = tl_matmul(ctx, &m->ta, &m->tb, &m->tc, NULL);
  double num = 0, den = 0;
  for (int64_t i = 0; i < m->M; i++)
    for (int64_t j = 0; j < m->N; j++) {
      double r = 0;
      for (int64_t k = 0; k < m->K; k++) r += (double)m->a[i * m->K + k] * m->b[k * m->N + j];
      double d = m->c[i * m->N + j] - r;
      num += d * d, den += r * r;
    }
  return sqrt(num / den);
}

/* The DB key of tl_matmul for m on ctx. */
static void mm_key(tl_ctx *ctx, mm_case *m, char *key, size_t n) {
  tl_mm_build bd;
  const tl_matmul_opts o = TL_MATMUL_OPTS_INIT;
  key[0] = 0;
  if (tl_mm_prepare(ctx, &m->ta, &m->tb, &m->tc, &o, &bd) == TL_OK) tl_mm_tune_key(&bd, key, n);
}

/* Puts a matmul row for ctx's isa/threads/machine (each overridable) into path. */
static void put_mm_row(const char *path, tl_ctx *ctx, const char *key, const char *cfg, const char *isa, int threads,
                       const char *machine, int version) {
  char why[256];
  tl_tune_db *db = NULL;
  if (tl_tune_db_open(path, 1, &db, why, sizeof why) != TL_OK) {
    CHECK(0, "open %s: %s", path, why);
    return;
  }
  tl_tune_row r;
  tl_tune_row_key(ctx, "matmul", version, key, &r);
  snprintf(r.config, sizeof r.config, "%s", cfg);
  if (isa) snprintf(r.isa, sizeof r.isa, "%s", isa);
  if (threads) r.threads = threads;
  if (machine) snprintf(r.machine, sizeof r.machine, "%s", machine);
  CHECK(tl_tune_db_put(db, &r, why, sizeof why) == TL_OK, "put: %s", why);
  tl_tune_db_close(db);
}

static void test_tuned_config_used(void) {
  char path[512], key[TL_TUNE_KEY_MAX];
  tpath(path, sizeof path, "used.db");
  remove_db(path);
  mm_case m;
  mm_make(&m, 64, 48, 40);
  tl_ctx *ctx = new_ctx(2, path, 0);
  REQUIRE(ctx, "ctx");
  mm_key(ctx, &m, key, sizeof key);
  CHECK(!strcmp(key, "f32.f32.f32 m64 n48 k40 z1"), "key '%s'", key);
  int64_t cfg[3] = {0}, heur[3] = {0};
  int tuned = -1;
  /* no DB file yet: the heuristic, silently */
  CHECK(tl_mm_config_used(ctx, &m.ta, &m.tb, &m.tc, NULL, heur, &tuned) == TL_OK && tuned == 0, "untuned");
  CHECK(tl_ctx_warning(ctx)[0] == 0, "no warning without a DB: '%s'", tl_ctx_warning(ctx));
  tl_ctx_free(ctx);
  put_mm_row(path, ctx = new_ctx(2, path, 0), key, "BM=8 BN=16 BK=24", NULL, 0, NULL, TL_MM_TUNE_VERSION);
  tl_ctx_free(ctx);
  ctx = new_ctx(2, path, 0);
  REQUIRE(ctx, "ctx");
  CHECK(tl_mm_config_used(ctx, &m.ta, &m.tb, &m.tc, NULL, cfg, &tuned) == TL_OK && tuned == 1, "tuned");
  CHECK(cfg[0] == 8 && cfg[1] == 16 && cfg[2] == 24, "config used %lld %lld %lld", (long long)cfg[0], (long long)cfg[1],
        (long long)cfg[2]);
  tl_status s;
  double err = mm_run_err(ctx, &m, &s);
  CHECK(s == TL_OK && err < 1e-5, "tuned result: %s, err %g", tl_status_name(s), err);
  int64_t cached[3] = {0};
  CHECK(tl_mm_cached_config(ctx, &m.ta, &m.tb, &m.tc, NULL, cached, NULL) == 1, "a plan is cached");
  CHECK(cached[0] == 8 && cached[1] == 16 && cached[2] == 24, "the cached plan's blocks %lld %lld %lld",
        (long long)cached[0], (long long)cached[1], (long long)cached[2]);
  CHECK(!(heur[0] == 8 && heur[1] == 16), "the heuristic differs (%lld %lld)", (long long)heur[0], (long long)heur[1]);
  err = mm_run_err(ctx, &m, &s); /* cached plan, second call */
  CHECK(s == TL_OK && err < 1e-5, "second call: err %g", err);
  /* the registry's instance (tilec explain, roofline) takes the tuned blocks too and says so
   * (until 2026-11-26 it showed the heuristic's whatever the DB held) */
  tl_kcase kc;
  char kerr[256];
  REQUIRE(tl_kernel_find("matmul")->make(ctx, "64x48x40", &kc, kerr, sizeof kerr) == TL_OK, "registry matmul: %s", kerr);
  CHECK(strstr(kc.config, "BM=8 BN=16 BK=24") != NULL, "registry config '%s'", kc.config);
  CHECK(kc.specs[0].block[1] == 8 && kc.specs[1].block[2] == 16, "registry blocks a %lld, b %lld",
        (long long)kc.specs[0].block[1], (long long)kc.specs[1].block[2]);
  tl_kcase_free(&kc);
  tl_ctx_free(ctx);

  /* TILEC_TUNE=0 (read at tl_ctx_new) and opts.tune = -1 ignore the DB */
  setenv("TILEC_TUNE", "0", 1);
  ctx = new_ctx(2, path, 0);
  unsetenv("TILEC_TUNE");
  REQUIRE(ctx, "ctx");
  CHECK(tl_mm_config_used(ctx, &m.ta, &m.tb, &m.tc, NULL, cfg, &tuned) == TL_OK && tuned == 0, "TILEC_TUNE=0: untuned");
  err = mm_run_err(ctx, &m, &s);
  CHECK(tl_mm_cached_config(ctx, &m.ta, &m.tb, &m.tc, NULL, cached, NULL) == 1 && cached[0] == heur[0] && cached[1] == heur[1],
        "TILEC_TUNE=0: the heuristic's plan (%lld %lld)", (long long)cached[0], (long long)cached[1]);
  tl_ctx_free(ctx);
  ctx = new_ctx(2, path, -1);
  CHECK(ctx && tl_mm_config_used(ctx, &m.ta, &m.tb, &m.tc, NULL, cfg, &tuned) == TL_OK && tuned == 0, "opts.tune -1");
  tl_ctx_free(ctx);
  setenv("TILEC_TUNE", "0", 1);
  ctx = new_ctx(2, path, 1); /* opts win over the environment */
  unsetenv("TILEC_TUNE");
  CHECK(ctx && tl_mm_config_used(ctx, &m.ta, &m.tb, &m.tc, NULL, cfg, &tuned) == TL_OK && tuned == 1, "opts.tune 1");
  tl_ctx_free(ctx);
  /* TILEC_TUNE_DB names the DB when opts do not */
  setenv("TILEC_TUNE_DB", path, 1);
  ctx = new_ctx(2, NULL, 0);
  unsetenv("TILEC_TUNE_DB");
  CHECK(ctx && tl_mm_config_used(ctx, &m.ta, &m.tb, &m.tc, NULL, cfg, &tuned) == TL_OK && tuned == 1, "TILEC_TUNE_DB");
  tl_ctx_free(ctx);
  /* a config the executor refuses (VMEM) falls back to the heuristic with a warning */
  tl_ctx_opts o = {.threads = 2, .tune_db = path, .vmem_bytes = 8192}; /* c's 64x48 block: 12 KiB */
  ctx = NULL;
  tl_ctx_new(&o, &ctx);
  REQUIRE(ctx, "small-VMEM ctx");
  put_mm_row(path, ctx, key, "BM=64 BN=48 BK=40", NULL, 0, NULL, TL_MM_TUNE_VERSION);
  tl_ctx_free(ctx);
  ctx = NULL;
  tl_ctx_new(&o, &ctx);
  err = mm_run_err(ctx, &m, &s);
  CHECK(s == TL_OK && err < 1e-5, "refused tuned config: the call still succeeds (%s: %s)", tl_status_name(s), tl_ctx_error(ctx));
  CHECK(strstr(tl_ctx_warning(ctx), "tuned config") != NULL, "warning: '%s'", tl_ctx_warning(ctx));
  tl_ctx_free(ctx);
  mm_free(&m);
  /* a DB row that breaks the tile alignment (BN 24 where b is packed per call in 16-column tiles)
   * is not applied: the heuristic's blocks, a right result and a warning (it read wrong tiles) */
  mm_make(&m, 256, 256, 256);
  ctx = new_ctx(2, path, 0);
  REQUIRE(ctx, "ctx");
  put_mm_row(path, ctx, "f32.f32.f32 m256 n256 k256 z1 packed", "BM=64 BN=24 BK=256", NULL, 0, NULL, TL_MM_TUNE_VERSION);
  tl_ctx_free(ctx);
  ctx = new_ctx(2, path, 0);
  REQUIRE(ctx, "ctx");
  err = mm_run_err(ctx, &m, &s);
  CHECK(s == TL_OK && err < 1e-5, "misaligned tuned config: %s, err %g", tl_status_name(s), err);
  CHECK(strstr(tl_ctx_warning(ctx), "tile alignment") != NULL, "misaligned config warning: '%s'", tl_ctx_warning(ctx));
  tl_ctx_free(ctx);
  mm_free(&m);
}

/* A tuned config for a shape the heuristic sweeps (f32, 3-31 rows against a row-major b past half
 * the L3: tl_mm_run.sweep, N blocks over the whole of K): the sweep stays (it is decided before
 * the blocks), the DB's blocks replace the sweep's (K in blocks of 1024, at least 3 of them, so
 * the dot accumulates across K steps; N blocks of 512, so that a whole block, 2 MiB, is past the
 * 1 MiB from which the AVX-512 dot sweeps and the AVX2 dot stages wide), and the result matches
 * the reference. */
static void test_tuned_sweep(void) {
  char path[512], key[TL_TUNE_KEY_MAX];
  tpath(path, sizeof path, "sweep.db");
  remove_db(path);
  tl_ctx *ctx = new_ctx(2, path, 0);
  REQUIRE(ctx, "ctx");
  tl_ctx_info info;
  tl_ctx_info_get(ctx, &info);
  const int64_t l3 = tl_kernels_l3_bytes(&info), N = 1100, K = TL_MAX(3000, l3 / 2 / 4 / N + 1);
  if (l3 > ((int64_t)64 << 20)) {
    fprintf(stderr, "    tuned sweep: an L3 of %lld MiB makes b too long for the reference: skipped\n", (long long)(l3 >> 20));
    tl_ctx_free(ctx);
    return;
  }
  mm_case m;
  mm_make(&m, 20, N, K); /* (20 rows: up to 16 the AVX-512 levels take the K split, untuned) */
  mm_key(ctx, &m, key, sizeof key);
  tl_mm_build bd;
  const tl_matmul_opts o = TL_MATMUL_OPTS_INIT;
  const int vec = info.isa >= TL_ISA_AVX2;
  CHECK(tl_mm_prepare(ctx, &m.ta, &m.tb, &m.tc, &o, &bd) == TL_OK && bd.run.sweep == vec && (!vec || bd.run.BK == K),
        "20x%lldx%lld untuned: sweep %d BK %lld, expected %d and K", (long long)N, (long long)K, bd.run.sweep,
        (long long)bd.run.BK, vec);
  put_mm_row(path, ctx, key, "BM=20 BN=512 BK=1024", NULL, 0, NULL, TL_MM_TUNE_VERSION);
  tl_ctx_free(ctx);
  ctx = new_ctx(2, path, 0);
  REQUIRE(ctx, "ctx");
  int64_t cfg[3] = {0};
  int tuned = -1;
  CHECK(tl_mm_config_used(ctx, &m.ta, &m.tb, &m.tc, NULL, cfg, &tuned) == TL_OK && tuned == 1 && cfg[0] == 20 &&
            cfg[1] == 512 && cfg[2] == 1024,
        "tuned sweep: tuned %d, blocks %lld %lld %lld (%s)", tuned, (long long)cfg[0], (long long)cfg[1], (long long)cfg[2],
        tl_ctx_error(ctx));
  const int64_t want[3] = {20, 512, 1024};
  CHECK(tl_mm_prepare_cfg(ctx, &m.ta, &m.tb, &m.tc, &o, want, &bd) == TL_OK && bd.run.sweep == vec && bd.run.BN == 512 &&
            bd.run.BK == 1024,
        "the tuned build: sweep %d, blocks %lld x %lld", bd.run.sweep, (long long)bd.run.BK, (long long)bd.run.BN);
  tl_status s;
  double err = mm_run_err(ctx, &m, &s);
  CHECK(s == TL_OK && err < 1e-5, "tuned sweep result: %s, err %g", tl_status_name(s), err);
  int64_t cached[3] = {0};
  CHECK(tl_mm_cached_config(ctx, &m.ta, &m.tb, &m.tc, NULL, cached, NULL) == 1 && cached[1] == 512 && cached[2] == 1024,
        "the cached plan's blocks %lld %lld %lld", (long long)cached[0], (long long)cached[1], (long long)cached[2]);
  tl_ctx_free(ctx);
  mm_free(&m);
  remove_db(path);
}

static void test_key_separation(void) {
  char path[512], key[TL_TUNE_KEY_MAX];
  tpath(path, sizeof path, "sep.db");
  remove_db(path);
  mm_case m;
  mm_make(&m, 64, 48, 40);
  tl_ctx *ctx = new_ctx(2, path, 0);
  REQUIRE(ctx, "ctx");
  mm_key(ctx, &m, key, sizeof key);
  tl_ctx_info in;
  tl_ctx_info_get(ctx, &in);
  const char *other_isa = in.isa == TL_ISA_AVX2 ? "avx512" : "avx2";
  put_mm_row(path, ctx, key, "BM=8 BN=16 BK=8", other_isa, 0, NULL, TL_MM_TUNE_VERSION);
  put_mm_row(path, ctx, key, "BM=8 BN=16 BK=8", NULL, 3, NULL, TL_MM_TUNE_VERSION);
  put_mm_row(path, ctx, key, "BM=8 BN=16 BK=8", NULL, 0, "GenuineIntel-6-143-8-0123456789abcdef", TL_MM_TUNE_VERSION);
  put_mm_row(path, ctx, key, "BM=8 BN=16 BK=8", NULL, 0, NULL, TL_MM_TUNE_VERSION + 1);
  put_mm_row(path, ctx, "f32.f32.f32 m64 n48 k41 z1", "BM=8 BN=16 BK=8", NULL, 0, NULL, TL_MM_TUNE_VERSION);
  tl_ctx_free(ctx);
  ctx = new_ctx(2, path, 0);
  int64_t cfg[3];
  int tuned = -1;
  CHECK(tl_mm_config_used(ctx, &m.ta, &m.tb, &m.tc, NULL, cfg, &tuned) == TL_OK && tuned == 0,
        "rows for another ISA, thread count, machine, version or shape are not used");
  CHECK(count_rows(path) == 5, "5 rows");
  tl_ctx_free(ctx);
  /* the row for 1 thread is used by a 1-thread context only */
  ctx = new_ctx(1, path, 0);
  put_mm_row(path, ctx, key, "BM=8 BN=32 BK=8", NULL, 0, NULL, TL_MM_TUNE_VERSION);
  tl_ctx_free(ctx);
  ctx = new_ctx(2, path, 0);
  CHECK(tl_mm_config_used(ctx, &m.ta, &m.tb, &m.tc, NULL, cfg, &tuned) == TL_OK && tuned == 0, "2 threads: not the 1-thread row");
  tl_ctx_free(ctx);
  ctx = new_ctx(1, path, 0);
  CHECK(tl_mm_config_used(ctx, &m.ta, &m.tb, &m.tc, NULL, cfg, &tuned) == TL_OK && tuned == 1 && cfg[1] == 32,
        "1 thread: its row");
  /* the machine key is stable and names the CPU */
  char mk1[96], mk2[96];
  tl_ctx_info_get(ctx, &in);
  tl_tune_machine_key(&in, mk1, sizeof mk1);
  tl_tune_machine_key(&in, mk2, sizeof mk2);
  CHECK(!strcmp(mk1, mk2) && strlen(mk1) > 16, "machine key '%s'", mk1);
  in.cpu.features ^= 1;
  tl_tune_machine_key(&in, mk2, sizeof mk2);
  CHECK(strcmp(mk1, mk2) != 0, "another feature mask, another machine key");
  tl_ctx_free(ctx);
  mm_free(&m);
}

static void test_corrupt_db(void) {
  char path[512];
  tpath(path, sizeof path, "corrupt.db");
  remove_db(path);
  FILE *f = fopen(path, "wb");
  REQUIRE(f, "fopen");
  test_rng r = {99};
  for (int i = 0; i < 8192; i++) fputc((int)(test_rng_u64(&r) & 0xff), f);
  fclose(f);
  mm_case m;
  mm_make(&m, 33, 20, 17);
  tl_ctx *ctx = new_ctx(2, path, 0);
  REQUIRE(ctx, "ctx");
  tl_status s;
  double err = mm_run_err(ctx, &m, &s);
  CHECK(s == TL_OK && err < 1e-5, "garbage DB: the call succeeds (%s, err %g)", tl_status_name(s), err);
  CHECK(strstr(tl_ctx_warning(ctx), "tuning DB") != NULL, "warning: '%s'", tl_ctx_warning(ctx));
  tl_ctx_free(ctx);
  /* a real SQLite file whose pages are damaged past the header */
  char path2[512], why[256];
  tpath(path2, sizeof path2, "damaged.db");
  remove_db(path2);
  tl_tune_db *db = NULL;
  REQUIRE(tl_tune_db_open(path2, 1, &db, why, sizeof why) == TL_OK, "open");
  for (int i = 0; i < 200; i++) {
    char key[32];
    snprintf(key, sizeof key, "k%d", i);
    tl_tune_row row = make_row("matmul", key, "avx512", 2, "m", "BM=8");
    tl_tune_db_put(db, &row, why, sizeof why);
  }
  tl_tune_db_close(db);
  f = fopen(path2, "r+b");
  REQUIRE(f, "fopen damaged");
  fseek(f, 1024, SEEK_SET); /* keep the 100-byte header, smash the schema page and beyond */
  for (int i = 0; i < 16384; i++) fputc((int)(test_rng_u64(&r) & 0xff), f);
  fclose(f);
  ctx = new_ctx(2, path2, 0);
  err = mm_run_err(ctx, &m, &s);
  CHECK(s == TL_OK && err < 1e-5, "damaged DB: the call succeeds (%s)", tl_status_name(s));
  CHECK(strstr(tl_ctx_warning(ctx), "tuning DB") != NULL, "damaged: warning '%s'", tl_ctx_warning(ctx));
  tl_ctx_free(ctx);
  /* a directory where the DB should be */
  char dir[512];
  tpath(dir, sizeof dir, "a-directory.db");
  mkdir(dir, 0755);
  ctx = new_ctx(2, dir, 0);
  err = mm_run_err(ctx, &m, &s);
  CHECK(s == TL_OK && err < 1e-5, "directory as DB: the call succeeds");
  CHECK(strstr(tl_ctx_warning(ctx), "tuning DB") != NULL, "directory: warning '%s'", tl_ctx_warning(ctx));
  tl_ctx_free(ctx);
  mm_free(&m);
}

/* ---- the search on a synthetic space ---- */

typedef struct syn {
  int opt[3];      /* the fastest config's indices */
  int slow_cfg;    /* 1: the config the model likes best is 20x slower than the model says */
  int calls;
} syn;

static double syn_time(const syn *s, const int64_t *cfg) {
  double t = 1e-3;
  for (int p = 0; p < 3; p++) t += 0.15e-3 * (double)llabs(cfg[p] - s->opt[p]);
  if (s->slow_cfg && cfg[0] == 0 && cfg[1] == 0 && cfg[2] == 0) t = 20e-3;
  return t;
}

static double syn_model(void *user, const int64_t *cfg) {
  const syn *s = user;
  if (s->slow_cfg && cfg[0] == 0 && cfg[1] == 0 && cfg[2] == 0) return 1e-6; /* the model is wrong here */
  if (cfg[0] == 9 && cfg[1] == 9) return -1;                                  /* "breaks a budget" */
  return syn_time(s, cfg);
}

static int syn_valid(void *user, const int64_t *cfg, char *why, size_t n) {
  (void)user;
  if (cfg[2] == 7) return tl_msg(why, n, "misaligned"), 0;
  return 1;
}

static tl_status syn_build(void *user, const int64_t *cfg, void **cand, tl_tune_built *out) {
  (void)user;
  int64_t *c = malloc(3 * sizeof *c);
  memcpy(c, cfg, 3 * sizeof *c);
  *cand = c;
  memset(out, 0, sizeof *out);
  return TL_OK;
}

/* A virtual clock: a synthetic run advances it by the config's time, so the search's decisions
 * do not depend on how busy the machine is. */
static double syn_clock_s;
static double syn_clock(void) { return syn_clock_s; }

static int syn_run(void *user, void *cand) {
  syn *s = user;
  s->calls++;
  syn_clock_s += syn_time(s, cand);
  return 0;
}

static void syn_release(void *user, void *cand) {
  (void)user;
  free(cand);
}

static void syn_space(tl_tune_space *sp, syn *s, int nvalues) {
  memset(sp, 0, sizeof *sp);
  snprintf(sp->kernel, sizeof sp->kernel, "synthetic");
  snprintf(sp->key, sizeof sp->key, "test");
  sp->nparams = 3;
  const char *names[3] = {"X", "Y", "Z"};
  for (int p = 0; p < 3; p++) {
    snprintf(sp->params[p].name, sizeof sp->params[p].name, "%s", names[p]);
    sp->params[p].nvalues = nvalues;
    for (int v = 0; v < nvalues; v++) sp->params[p].values[v] = v;
    sp->heuristic[p] = nvalues / 2;
  }
  sp->user = s, sp->valid = syn_valid, sp->build = syn_build, sp->run = syn_run, sp->release = syn_release;
  sp->model = syn_model;
}

static void test_search_synthetic(void) {
  tl_ctx *ctx = new_ctx(1, NULL, -1);
  REQUIRE(ctx, "ctx");
  syn s = {.opt = {3, 5, 2}};
  tl_tune_space sp;
  syn_space(&sp, &s, 10);
  tl_tune_opts o = {.budget_s = 5, .min_rep_s = 0.003, .clock = syn_clock};
  tl_tune_result r;
  REQUIRE(tl_tune_search(ctx, &sp, &o, &r) == TL_OK, "search: %s", tl_ctx_error(ctx));
  CHECK(r.space_size == 1000 && !r.beam, "enumerated %lld", (long long)r.space_size);
  CHECK(r.valid == 1000 - 100 - 10 + 1, "valid %lld (misaligned Z=7 and X=Y=9 pruned)", (long long)r.valid);
  CHECK(r.best[0] == 3 && r.best[1] == 5 && r.best[2] == 2, "best %lld %lld %lld", (long long)r.best[0],
        (long long)r.best[1], (long long)r.best[2]);
  CHECK(r.timed <= r.valid * 15 / 100, "timed %lld of %lld", (long long)r.timed, (long long)r.valid);
  CHECK(r.heuristic_s > r.best_s, "heuristic timed: %g > %g", r.heuristic_s, r.best_s);

  /* a wrong model: the config it ranks first is slow and is stopped early */
  syn s2 = {.opt = {3, 5, 2}, .slow_cfg = 1};
  syn_space(&sp, &s2, 10);
  double t0 = syn_clock();
  REQUIRE(tl_tune_search(ctx, &sp, &o, &r) == TL_OK, "search 2");
  CHECK(r.stopped >= 1, "slow candidate stopped early (%lld)", (long long)r.stopped);
  CHECK(r.best[0] == 3 && r.best[1] == 5 && r.best[2] == 2, "best despite the wrong model");
  CHECK(syn_clock() - t0 < 2, "took %.2f s of virtual time", syn_clock() - t0);

  /* the budget: 1000 candidates, exhaustive, 0.3 s */
  syn s3 = {.opt = {3, 5, 2}};
  syn_space(&sp, &s3, 10);
  tl_tune_opts ob = {.budget_s = 0.3, .exhaustive = 1, .min_rep_s = 0.003, .clock = syn_clock};
  t0 = syn_clock();
  tl_status st = tl_tune_search(ctx, &sp, &ob, &r);
  double took = syn_clock() - t0;
  CHECK(st == TL_OK && r.budget_hit, "budget hit (%s)", tl_status_name(st));
  CHECK(took < 0.3 + 0.01 && fabs(r.seconds - took) < 1e-9, "the search took %.3f s for a 0.3 s budget", took);
  CHECK(r.timed < r.valid, "timed %lld of %lld", (long long)r.timed, (long long)r.valid);

  /* beam search when the space is large */
  syn s4 = {.opt = {13, 4, 17}};
  syn_space(&sp, &s4, 20);
  tl_tune_opts obm = {.budget_s = 5, .enum_max = 500, .min_rep_s = 0.002, .clock = syn_clock};
  REQUIRE(tl_tune_search(ctx, &sp, &obm, &r) == TL_OK, "beam search");
  CHECK(r.beam && r.scored < 8000 / 2, "beam: scored %lld of %lld", (long long)r.scored, (long long)r.space_size);
  CHECK(r.best[0] == 13 && r.best[1] == 4 && r.best[2] == 17, "beam best %lld %lld %lld", (long long)r.best[0],
        (long long)r.best[1], (long long)r.best[2]);

  /* bad spaces are statuses */
  tl_tune_space bad;
  memset(&bad, 0, sizeof bad);
  CHECK(tl_tune_search(ctx, &bad, &o, &r) == TL_ERR_INVALID, "empty space");
  syn_space(&sp, &s, 10);
  sp.model = NULL;
  CHECK(tl_tune_search(ctx, &sp, &o, &r) == TL_ERR_INVALID, "no model and no machine");
  tl_ctx_free(ctx);
}

/* ---- the matmul space ---- */

/* A plausible 2-core machine for the model (numbers of DESIGN.md section 8). */
static void fake_machine(tl_machine *m) {
  memset(m, 0, sizeof *m);
  snprintf(m->name, sizeof m->name, "test");
  m->cores = 2;
  const tl_dtype dts[3] = {TL_F32, TL_BF16, TL_I8};
  const double peaks[3] = {4.7e11, 2.37e11, 1.9e12};
  for (int i = 0; i < 3; i++) {
    snprintf(m->units[i].name, sizeof m->units[i].name, "u%d", i);
    m->units[i].dtype = dts[i], m->units[i].peak = peaks[i];
  }
  m->nunits = 3;
  const char *names[4] = {"L1", "L2", "L3", "DRAM"};
  const int64_t cap[4] = {48 << 10, 2 << 20, 16 << 20, 0};
  const double bw[4] = {1e12, 3.7e11, 5.8e10, 3.2e10};
  for (int i = 0; i < 4; i++) {
    snprintf(m->levels[i].name, sizeof m->levels[i].name, "%s", names[i]);
    m->levels[i].capacity = cap[i], m->levels[i].per_core = i < 2, m->levels[i].read_bw = bw[i];
  }
  m->nlevels = 4;
}

static void test_matmul_space(void) {
  tl_ctx *ctx = new_ctx(2, NULL, -1);
  REQUIRE(ctx, "ctx");
  const tl_tune_kernel *k = tl_tune_kernel_find("matmul");
  REQUIRE(k, "matmul is tunable");
  CHECK(tl_tune_kernel_find("nope") == NULL, "unknown kernel");
  char err[256];
  tl_tune_space *sp = NULL;
  const int64_t bad[2] = {4, 4};
  CHECK(k->space(ctx, bad, 2, 0, TL_F32, 0, &sp, err, sizeof err) == TL_ERR_SHAPE && !sp, "2 sizes refused");
  const int64_t huge[3] = {(int64_t)1 << 20, (int64_t)1 << 20, 4};
  CHECK(k->space(ctx, huge, 3, 0, TL_F32, 0, &sp, err, sizeof err) == TL_ERR_SHAPE && !sp, "huge refused: %s", err);
  CHECK(k->space(ctx, bad, 3, 0, TL_I32, 0, &sp, err, sizeof err) != TL_OK && !sp, "i32 refused");
  /* alignment of the candidate values */
  const tl_dtype dts[2] = {TL_BF16, TL_U8};
  const int64_t grain[2] = {32, 64};
  for (int d = 0; d < 2; d++) {
    const int64_t dims[3] = {200, 300, 500};
    REQUIRE(k->space(ctx, dims, 3, 0, dts[d], 0, &sp, err, sizeof err) == TL_OK, "space: %s", err);
    for (int v = 0; v < sp->params[1].nvalues; v++)
      CHECK(sp->params[1].values[v] % 16 == 0, "BN %lld", (long long)sp->params[1].values[v]);
    for (int v = 0; v < sp->params[2].nvalues; v++)
      CHECK(sp->params[2].values[v] % grain[d] == 0, "%s BK %lld", tl_dtype_name(dts[d]), (long long)sp->params[2].values[v]);
    char why[64];
    int64_t c[3] = {16, 24, grain[d]};
    CHECK(!sp->valid(sp->user, c, why, sizeof why), "BN 24 is invalid");
    int64_t c2[3] = {16, 32, grain[d] + 8};
    CHECK(!sp->valid(sp->user, c2, why, sizeof why), "misaligned BK is invalid");
    tl_tune_space_free(sp);
    sp = NULL;
  }
  /* a small real search; its winner stored and used by tl_matmul gives the right product */
  const int64_t dims[3] = {96, 80, 72};
  REQUIRE(k->space(ctx, dims, 3, 0, TL_F32, 0, &sp, err, sizeof err) == TL_OK, "space: %s", err);
  tl_machine m;
  fake_machine(&m);
  tl_tune_opts o = {.budget_s = 1.5, .machine = &m, .min_rep_s = 0.002};
  tl_tune_result r;
  double t0 = tl_bench_now();
  tl_status s = tl_tune_search(ctx, sp, &o, &r);
  CHECK(s == TL_OK, "matmul search: %s", tl_ctx_error(ctx));
  CHECK(tl_bench_now() - t0 < 1.5 + 0.5, "within its budget: %.2f s", tl_bench_now() - t0);
  CHECK(r.valid > 10 && r.timed >= 2 && r.timed <= r.valid * 15 / 100 + 1, "timed %lld of %lld valid", (long long)r.timed,
        (long long)r.valid);
  CHECK(r.best_s > 0 && r.heuristic_s > 0, "times %g %g", r.best_s, r.heuristic_s);
  char path[512], cfgtext[TL_TUNE_CFG_TEXT], why[256];
  tpath(path, sizeof path, "search.db");
  remove_db(path);
  tl_tune_db *db = NULL;
  REQUIRE(tl_tune_db_open(path, 1, &db, why, sizeof why) == TL_OK, "open");
  tl_tune_row row;
  tl_tune_row_key(ctx, sp->kernel, sp->version, sp->key, &row);
  tl_tune_cfg_format(sp, r.best, cfgtext, sizeof cfgtext);
  snprintf(row.config, sizeof row.config, "%s", cfgtext);
  CHECK(tl_tune_db_put(db, &row, why, sizeof why) == TL_OK, "put");
  tl_tune_db_close(db);
  tl_tune_space_free(sp);
  tl_ctx_free(ctx);
  ctx = new_ctx(2, path, 0);
  mm_case mc;
  mm_make(&mc, 96, 80, 72);
  double e = mm_run_err(ctx, &mc, &s);
  int64_t cached[3] = {0};
  CHECK(s == TL_OK && e < 1e-5, "tuned matmul: err %g", e);
  CHECK(tl_mm_cached_config(ctx, &mc.ta, &mc.tb, &mc.tc, NULL, cached, NULL) && cached[0] == r.best[0] && cached[1] == r.best[1] &&
            cached[2] == r.best[2],
        "the plan uses %s", cfgtext);
  mm_free(&mc);
  tl_ctx_free(ctx);
}

/* ---- tl_attention and the DB ---- */

typedef struct at_case {
  float *q, *k, *v, *o;
  tl_tensor tq, tk, tv, to;
  int64_t B, H, Sq, Sk, D;
  int causal;
} at_case;

static void at_make(at_case *c, int64_t B, int64_t H, int64_t Sq, int64_t Sk, int64_t D, int causal) {
  c->B = B, c->H = H, c->Sq = Sq, c->Sk = Sk, c->D = D, c->causal = causal;
  const int64_t nq = B * H * Sq * D, nk = B * H * Sk * D;
  c->q = malloc(sizeof(float) * nq), c->o = malloc(sizeof(float) * nq);
  c->k = malloc(sizeof(float) * nk), c->v = malloc(sizeof(float) * nk);
  test_rng r = {91};
  for (int64_t i = 0; i < nq; i++) c->q[i] = (float)test_rng_uniform(&r, -1, 1);
  for (int64_t i = 0; i < nk; i++) c->k[i] = (float)test_rng_uniform(&r, -1, 1), c->v[i] = (float)test_rng_uniform(&r, -1, 1);
  int64_t sq[4] = {B, H, Sq, D}, sk[4] = {B, H, Sk, D};
  c->tq = tl_tensor_make(c->q, TL_F32, 4, sq), c->to = tl_tensor_make(c->o, TL_F32, 4, sq);
  c->tk = tl_tensor_make(c->k, TL_F32, 4, sk), c->tv = tl_tensor_make(c->v, TL_F32, 4, sk);
}

static void at_free(at_case *c) { free(c->q), free(c->k), free(c->v), free(c->o); }

/* Relative error of tl_attention (o poisoned first) against float64 attention. */
static double at_run_err(tl_ctx *ctx, at_case *c, tl_status *s) {
  const int64_t D = c->D, Sq = c->Sq, Sk = c->Sk;
  for (int64_t i = 0; i < c->B * c->H * Sq * D; i++) c->o[i] = NAN;
  tl_attention_opts op = TL_ATTENTION_OPTS_INIT;
  op.causal = c->causal;
  *s = tl_attention(ctx, &c->tq, &c->tk, &c->tv, &c->to, &op);
  double num = 0, den = 0, p[512], acc[128];
  for (int64_t bh = 0; bh < c->B * c->H; bh++)
    for (int64_t i = 0; i < Sq; i++) {
      const float *qr = c->q + (bh * Sq + i) * D;
      const int64_t last = c->causal ? i + Sk - Sq : Sk - 1; /* bottom-right aligned */
      double mx = -INFINITY, l = 0;
      for (int64_t j = 0; j <= last && j < Sk; j++) {
        double d = 0;
        for (int64_t x = 0; x < D; x++) d += (double)qr[x] * c->k[(bh * Sk + j) * D + x];
        p[j] = d / sqrt((double)D);
        if (p[j] > mx) mx = p[j];
      }
      for (int64_t x = 0; x < D; x++) acc[x] = 0;
      for (int64_t j = 0; j <= last && j < Sk; j++) {
        const double e = exp(p[j] - mx);
        l += e;
        for (int64_t x = 0; x < D; x++) acc[x] += e * c->v[(bh * Sk + j) * D + x];
      }
      for (int64_t x = 0; x < D; x++) {
        const double ref = l > 0 ? acc[x] / l : 0, got = c->o[(bh * Sq + i) * D + x];
        num += (got - ref) * (got - ref), den += ref * ref;
      }
    }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

static void put_at_row(const char *path, tl_ctx *ctx, const at_case *c, const char *cfg) {
  char why[256], key[TL_TUNE_KEY_MAX];
  tl_attn_tune_key(&c->tq, &c->tk, &c->to, TL_DTYPE_INVALID, c->causal, key, sizeof key);
  tl_tune_db *db = NULL;
  if (tl_tune_db_open(path, 1, &db, why, sizeof why) != TL_OK) {
    CHECK(0, "open %s: %s", path, why);
    return;
  }
  tl_tune_row r;
  tl_tune_row_key(ctx, "attention", TL_ATTN_TUNE_VERSION, key, &r);
  snprintf(r.config, sizeof r.config, "%s", cfg);
  CHECK(tl_tune_db_put(db, &r, why, sizeof why) == TL_OK, "put: %s", why);
  tl_tune_db_close(db);
}

/* A fresh context on path runs c: returns its error and what the cached plan used (in *last). */
static double at_run_fresh(const char *path, int tune, at_case *c, tl_attn_last *last, char *warn, size_t wn) {
  tl_ctx *ctx = new_ctx(2, path, tune);
  if (!ctx) return INFINITY;
  tl_status s;
  double err = at_run_err(ctx, c, &s);
  if (s != TL_OK) err = INFINITY, fprintf(stderr, "tl_attention: %s\n", tl_ctx_error(ctx));
  tl_attn_last_get(ctx, last);
  snprintf(warn, wn, "%s", tl_ctx_warning(ctx));
  tl_ctx_free(ctx);
  return err;
}

/* Stores cfg as the tuned row of the registry's attention instance 1x2x40x72x32 (bf16 q, k, v;
 * f32 o) in the DB at path, then makes that instance into *kc on a fresh context, which it
 * returns (the caller frees kc, then the context); NULL on failure (checked here). */
static tl_ctx *registry_attention(const char *path, const char *cfg, tl_kcase *kc) {
  char why[256] = "", kerr[256] = "";
  tl_ctx *ctx = new_ctx(2, path, 0);
  tl_tune_db *db = NULL;
  if (!ctx || tl_tune_db_open(path, 1, &db, why, sizeof why) != TL_OK) {
    CHECK(0, "open %s: %s", path, why);
    tl_ctx_free(ctx);
    return NULL;
  }
  tl_tune_row r;
  tl_tune_row_key(ctx, "attention", TL_ATTN_TUNE_VERSION, "bf16.f32 b1 hq2 hkv2 sq40 sk72 d32 causal0 mask-", &r);
  snprintf(r.config, sizeof r.config, "%s", cfg);
  CHECK(tl_tune_db_put(db, &r, why, sizeof why) == TL_OK, "put: %s", why);
  tl_tune_db_close(db);
  tl_ctx_free(ctx);
  ctx = new_ctx(2, path, 0); /* a context reads the DB at its first lookup */
  if (!ctx || tl_kernel_find("attention")->make(ctx, "1x2x40x72x32", kc, kerr, sizeof kerr) != TL_OK) {
    CHECK(0, "registry attention: %s", kerr);
    tl_ctx_free(ctx);
    return NULL;
  }
  return ctx;
}

static void test_attention_tuned(void) {
  char path[512], warn[512], key[TL_TUNE_KEY_MAX];
  tpath(path, sizeof path, "attn.db");
  remove_db(path);
  at_case c;
  at_make(&c, 1, 2, 40, 72, 32, 0);
  tl_attn_tune_key(&c.tq, &c.tk, &c.to, TL_DTYPE_INVALID, 0, key, sizeof key);
  CHECK(!strcmp(key, "f32.f32 b1 hq2 hkv2 sq40 sk72 d32 causal0 mask-"), "key '%s'", key);
  tl_attn_last heur, last;
  double err = at_run_fresh(path, 0, &c, &heur, warn, sizeof warn);
  CHECK(err < 1e-4 && !warn[0], "untuned: err %g, warning '%s'", err, warn);
  CHECK(heur.bq == 48 && heur.bk == 128, "heuristic blocks %lld %lld", (long long)heur.bq, (long long)heur.bk);
  tl_ctx *ctx = new_ctx(2, path, 0);
  REQUIRE(ctx, "ctx");
  put_at_row(path, ctx, &c, "BQ=16 BK=32");
  tl_ctx_free(ctx);
  err = at_run_fresh(path, 0, &c, &last, warn, sizeof warn);
  CHECK(err < 1e-4 && !warn[0], "tuned: err %g, warning '%s'", err, warn);
  CHECK(last.bq == 16 && last.bk == 32 && last.plans_made == 1, "the cached plan uses BQ=16 BK=32: %lld %lld",
        (long long)last.bq, (long long)last.bk);
  /* TILEC_TUNE=0 ignores the DB */
  setenv("TILEC_TUNE", "0", 1);
  err = at_run_fresh(path, 0, &c, &last, warn, sizeof warn);
  unsetenv("TILEC_TUNE");
  CHECK(err < 1e-4 && !warn[0] && last.bq == heur.bq && last.bk == heur.bk, "TILEC_TUNE=0: heuristic %lld %lld, err %g",
        (long long)last.bq, (long long)last.bk, err);
  /* a misaligned row (BQ 24) is not applied: the heuristic, a right result, a warning */
  ctx = new_ctx(2, path, 0);
  put_at_row(path, ctx, &c, "BQ=24 BK=32");
  tl_ctx_free(ctx);
  err = at_run_fresh(path, 0, &c, &last, warn, sizeof warn);
  CHECK(err < 1e-4 && last.bq == heur.bq && last.bk == heur.bk, "misaligned: heuristic %lld %lld, err %g",
        (long long)last.bq, (long long)last.bk, err);
  CHECK(strstr(warn, "tile alignment") != NULL, "misaligned warning: '%s'", warn);
  /* a row the staging budget refuses: the heuristic with a warning */
  ctx = new_ctx(2, path, 0);
  put_at_row(path, ctx, &c, "BQ=16 BK=1048576");
  tl_ctx_free(ctx);
  err = at_run_fresh(path, 0, &c, &last, warn, sizeof warn);
  CHECK(err < 1e-4 && last.bq == heur.bq && last.bk == heur.bk, "refused: heuristic %lld %lld, err %g", (long long)last.bq,
        (long long)last.bk, err);
  CHECK(strstr(warn, "refused") != NULL, "refused warning: '%s'", warn);
  /* the registry's instance (bf16 q, k, v; f32 o: tilec explain, roofline) takes a tuned row of
   * its problem and says so; a row the budget refuses leaves the heuristic's blocks, no config */
  tl_kcase kc;
  if ((ctx = registry_attention(path, "BQ=16 BK=32", &kc)) != NULL) {
    const tl_attn_run *run = kc.user;
    CHECK(strstr(kc.config, "BQ=16 BK=32") != NULL && run->bq == 16 && run->bk == 32,
          "registry attention config '%s' (%lld %lld)", kc.config, (long long)run->bq, (long long)run->bk);
    tl_kcase_free(&kc);
    tl_ctx_free(ctx);
  }
  if ((ctx = registry_attention(path, "BQ=16 BK=1048576", &kc)) != NULL) {
    const tl_attn_run *run = kc.user;
    CHECK(!kc.config[0] && run->bq == heur.bq && run->bk == heur.bk, "registry, refused row: config '%s' (%lld %lld)",
          kc.config, (long long)run->bq, (long long)run->bk);
    tl_kcase_free(&kc);
    tl_ctx_free(ctx);
  }
  at_free(&c);
  /* causal prefill and decode (BK only) */
  at_make(&c, 1, 2, 33, 50, 32, 1);
  ctx = new_ctx(2, path, 0);
  put_at_row(path, ctx, &c, "BQ=32 BK=16");
  tl_ctx_free(ctx);
  err = at_run_fresh(path, 0, &c, &last, warn, sizeof warn);
  CHECK(err < 1e-4 && !warn[0] && last.bq == 32 && last.bk == 16, "causal tuned %lld %lld, err %g, '%s'", (long long)last.bq,
        (long long)last.bk, err, warn);
  at_free(&c);
  at_make(&c, 1, 2, 1, 200, 32, 0);
  err = at_run_fresh(path, 0, &c, &heur, warn, sizeof warn);
  ctx = new_ctx(2, path, 0);
  put_at_row(path, ctx, &c, "BK=32");
  tl_ctx_free(ctx);
  err = at_run_fresh(path, 0, &c, &last, warn, sizeof warn);
  CHECK(err < 1e-4 && !warn[0] && last.decode && last.bk == 32 && heur.bk != 32, "decode tuned BK %lld (heuristic %lld), err %g",
        (long long)last.bk, (long long)heur.bk, err);
  at_free(&c);
}

/* The attention space: aligned candidates, the heuristic among them, and a search whose winner
 * tl_attention then uses. */
static void test_attention_space(void) {
  const tl_tune_kernel *k = tl_tune_kernel_find("attention");
  REQUIRE(k, "attention is tunable");
  tl_ctx *ctx = new_ctx(1, NULL, -1);
  REQUIRE(ctx, "ctx");
  char err[256];
  tl_tune_space *sp = NULL;
  const int64_t bad[3] = {1, 2, 3}, pre[4] = {1, 2, 100, 32}, dec[5] = {1, 2, 1, 300, 32};
  CHECK(k->space(ctx, bad, 3, 0, TL_BF16, 0, &sp, err, sizeof err) == TL_ERR_SHAPE && !sp, "3 sizes refused");
  CHECK(k->space(ctx, pre, 4, 0, TL_U8, 0, &sp, err, sizeof err) == TL_ERR_DTYPE && !sp, "int8 refused");
  for (int t = 0; t < 2; t++) {
    REQUIRE(k->space(ctx, t ? dec : pre, t ? 5 : 4, 1 - t, t ? TL_F32 : TL_BF16, 0, &sp, err, sizeof err) == TL_OK,
            "space: %s", err);
    CHECK(sp->nparams == (t ? 1 : 2), "%s: %d params", sp->key, sp->nparams);
    CHECK(!strcmp(sp->key, t ? "f32.f32 b1 hq2 hkv2 sq1 sk300 d32 causal0 mask-" : "bf16.f32 b1 hq2 hkv2 sq100 sk100 d32 causal1 mask-"),
          "key '%s'", sp->key);
    for (int p = 0; p < sp->nparams; p++) {
      int have = 0;
      for (int i = 0; i < sp->params[p].nvalues; i++) {
        CHECK(sp->params[p].values[i] % 16 == 0, "%s %s=%lld aligned", sp->key, sp->params[p].name, (long long)sp->params[p].values[i]);
        have |= sp->params[p].values[i] == sp->heuristic[p];
      }
      CHECK(have, "%s: the heuristic's %s is a candidate", sp->key, sp->params[p].name);
    }
    tl_tune_space_free(sp);
    sp = NULL;
  }
  tl_ctx_free(ctx);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/tilec-test-tune-XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  RUN(test_db_roundtrip);
  RUN(test_db_bad_paths);
  RUN(test_db_readonly_dir);
  RUN(test_two_writers);
  RUN(test_kill9);
  RUN(test_tuned_config_used);
  RUN(test_tuned_sweep);
  RUN(test_key_separation);
  RUN(test_corrupt_db);
  RUN(test_search_synthetic);
  RUN(test_matmul_space);
  RUN(test_attention_tuned);
  RUN(test_attention_space);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return test_summary("tune_test_tune");
}
