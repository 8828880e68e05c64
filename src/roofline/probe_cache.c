/* probe_cache.c — the probe's cache file: one tl_machine as a small JSON object, written
 * atomically and read back by a strict little parser.
 *
 *   {"format": "tilec-machine-2", "cpu_key": "...", "name": "host", "description": "...",
 *    "cores": 2, "measured": 1,
 *    "units": [{"name": "avx512-fma", "dtype": "f32", "peak": 1.1e+11, "peak_1t": ...,
 *               "spread": 0.01, "source": "..."}, ...],
 *    "levels": [{"name": "L1", "capacity": 32768, "per_core": 1, "read_bw": ..., "write_bw": ...,
 *                "copy_bw": ..., "nt_copy_bw": ..., "read_bw_1t": ..., "write_bw_1t": ...,
 *                "copy_bw_1t": ..., "nt_copy_bw_1t": ..., "spread": ..., "source": "..."}, ...]}
 *
 * Invariants:
 * - Numbers are written with 17 significant digits and parsed in the "C" locale, so a read gives
 *   back exactly the doubles written, whatever the program's locale.
 * - The writer goes to a temporary file in the same directory and renames it over the target: a
 *   reader sees the old file or the new one, never half of one.
 * - The reader never trusts the file: size is capped, every string is bounded, nesting is
 *   bounded, unknown keys are skipped, and the result is used only when every required field is
 *   present and sane (finite, non-negative, peaks and read bandwidths positive, the key matches).
 */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probe_impl.h"

#define TL_CACHE_FORMAT "tilec-machine-2" /* bump whenever what is measured or how changes */
#define TL_CACHE_MAX_BYTES (1 << 20)
#define TL_CACHE_MAX_DEPTH 16

/* ---- writing ---- */

/* Writes s as a JSON string (quotes, escapes for '"', '\\' and control characters). */
static void tl_cache_put_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

/* Writes m to f (the caller set the C locale). */
static void tl_cache_put_machine(FILE *f, const tl_machine *m) {
  fprintf(f, "{\n  \"format\": \"%s\",\n  \"cpu_key\": ", TL_CACHE_FORMAT);
  tl_cache_put_str(f, m->cpu_key);
  fprintf(f, ",\n  \"name\": ");
  tl_cache_put_str(f, m->name);
  fprintf(f, ",\n  \"description\": ");
  tl_cache_put_str(f, m->description);
  fprintf(f, ",\n  \"cores\": %d,\n  \"measured\": %d,\n  \"units\": [", m->cores, m->measured);
  for (int i = 0; i < m->nunits; i++) {
    const tl_compute_unit *u = &m->units[i];
    fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
    tl_cache_put_str(f, u->name);
    fprintf(f, ", \"dtype\": ");
    tl_cache_put_str(f, tl_dtype_name(u->dtype));
    fprintf(f, ", \"peak\": %.17g, \"peak_1t\": %.17g, \"spread\": %.17g, \"source\": ", u->peak, u->peak_1t,
            u->spread);
    tl_cache_put_str(f, u->source);
    fputc('}', f);
  }
  fprintf(f, "\n  ],\n  \"levels\": [");
  for (int i = 0; i < m->nlevels; i++) {
    const tl_mem_level *l = &m->levels[i];
    fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
    tl_cache_put_str(f, l->name);
    fprintf(f, ", \"capacity\": %lld, \"per_core\": %d,\n     \"read_bw\": %.17g, \"write_bw\": %.17g, "
               "\"copy_bw\": %.17g, \"nt_copy_bw\": %.17g,\n     \"read_bw_1t\": %.17g, \"write_bw_1t\": %.17g, "
               "\"copy_bw_1t\": %.17g, \"nt_copy_bw_1t\": %.17g,\n     \"spread\": %.17g, \"source\": ",
            (long long)l->capacity, l->per_core, l->read_bw, l->write_bw, l->copy_bw, l->nt_copy_bw, l->read_bw_1t,
            l->write_bw_1t, l->copy_bw_1t, l->nt_copy_bw_1t, l->spread);
    tl_cache_put_str(f, l->source);
    fputc('}', f);
  }
  fprintf(f, "\n  ]\n}\n");
}

/* mkdir -p: creates dir and its missing parents. Returns 0 or -1 (errno set). */
static int tl_cache_mkdirs(const char *dir) {
  char buf[1024];
  size_t n = strlen(dir);
  if (n == 0 || n >= sizeof buf) {
    errno = ENAMETOOLONG;
    return -1;
  }
  memcpy(buf, dir, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] != '/' && buf[i] != 0) continue;
    char c = buf[i];
    buf[i] = 0;
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
    buf[i] = c;
  }
  struct stat sb;
  if (stat(dir, &sb) != 0) return -1;
  if (!S_ISDIR(sb.st_mode)) {
    errno = ENOTDIR;
    return -1;
  }
  return 0;
}

int tl_probe_cache_write(const char *path, const tl_machine *m, char *why, size_t why_size) {
  char dir[1024], tmp[1100];
  int rc = -1;
  FILE *f = NULL;
  locale_t c_loc = (locale_t)0, old = (locale_t)0;
  size_t n = strlen(path);
  const char *slash = strrchr(path, '/');
  if (n >= sizeof dir || !slash) {
    tl_msg(why, why_size, "bad cache path '%s'", path);
    return -1;
  }
  memcpy(dir, path, (size_t)(slash - path));
  dir[slash - path] = 0;
  if (dir[0] && tl_cache_mkdirs(dir) != 0) {
    tl_msg(why, why_size, "cannot create %s: %s", dir, strerror(errno));
    return -1;
  }
  static _Atomic unsigned tl_cache_seq;
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(), tl_cache_seq++);
  c_loc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
  if (c_loc) old = uselocale(c_loc);
  f = fopen(tmp, "w");
  if (!f) {
    tl_msg(why, why_size, "cannot write %s: %s", tmp, strerror(errno));
    goto out;
  }
  tl_cache_put_machine(f, m);
  if (fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0) {
    tl_msg(why, why_size, "cannot write %s: %s", tmp, strerror(errno));
    goto out;
  }
  int e = fclose(f);
  f = NULL;
  if (e != 0 || rename(tmp, path) != 0) {
    tl_msg(why, why_size, "cannot write %s: %s", path, strerror(errno));
    goto out;
  }
  rc = 0;
out:
  if (f) fclose(f);
  if (rc != 0) unlink(tmp);
  if (c_loc) {
    uselocale(old);
    freelocale(c_loc);
  }
  return rc;
}

/* ---- reading ---- */

/* The parser: a cursor over a NUL-terminated text; the first error stops everything. */
typedef struct tl_jp {
  const char *p;
  const char *err; /* NULL while fine */
} tl_jp;

/* Records the first error; returns 0 so callers can `return tl_jp_fail(...)`. */
static int tl_jp_fail(tl_jp *j, const char *what) {
  if (!j->err) j->err = what;
  return 0;
}

static void tl_jp_ws(tl_jp *j) {
  while (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t') j->p++;
}

/* Consumes c (after blanks); 1 if it was there. */
static int tl_jp_eat(tl_jp *j, char c) {
  tl_jp_ws(j);
  if (*j->p != c) return 0;
  j->p++;
  return 1;
}

/* A string into out (size n; out NULL: skipped). \uXXXX beyond ASCII becomes '?'. */
static int tl_jp_str(tl_jp *j, char *out, size_t n) {
  size_t k = 0;
  if (!tl_jp_eat(j, '"')) return tl_jp_fail(j, "expected a string");
  for (;;) {
    unsigned char c = (unsigned char)*j->p++;
    if (c == '"') break;
    if (c == 0 || c < 0x20) return tl_jp_fail(j, "bad string");
    if (c == '\\') {
      char e = *j->p++;
      switch (e) {
      case '"': case '\\': case '/': c = (unsigned char)e; break;
      case 'b': c = '\b'; break;
      case 'f': c = '\f'; break;
      case 'n': c = '\n'; break;
      case 'r': c = '\r'; break;
      case 't': c = '\t'; break;
      case 'u': {
        unsigned v = 0;
        for (int i = 0; i < 4; i++) {
          char h = *j->p++;
          int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
          if (d < 0) return tl_jp_fail(j, "bad \\u escape");
          v = v * 16 + (unsigned)d;
        }
        c = v > 0 && v < 0x80 ? (unsigned char)v : '?';
        break;
      }
      default: return tl_jp_fail(j, "bad escape");
      }
    }
    if (out) {
      if (k + 1 >= n) return tl_jp_fail(j, "string too long");
      out[k++] = (char)c;
    }
  }
  if (out) out[k] = 0;
  return 1;
}

/* A JSON number (strtod in the C locale, which the caller set). */
static int tl_jp_num(tl_jp *j, double *v) {
  tl_jp_ws(j);
  if (*j->p != '-' && !(*j->p >= '0' && *j->p <= '9')) return tl_jp_fail(j, "expected a number");
  char *end;
  errno = 0;
  *v = strtod(j->p, &end);
  if (end == j->p || errno == ERANGE || !isfinite(*v)) return tl_jp_fail(j, "bad number");
  j->p = end;
  return 1;
}

/* Skips any value (bounded nesting). */
static int tl_jp_skip(tl_jp *j, int depth) {
  if (depth > TL_CACHE_MAX_DEPTH) return tl_jp_fail(j, "nested too deep");
  tl_jp_ws(j);
  char c = *j->p;
  double d;
  if (c == '"') return tl_jp_str(j, NULL, 0);
  if (c == '-' || (c >= '0' && c <= '9')) return tl_jp_num(j, &d);
  if (!strncmp(j->p, "true", 4) || !strncmp(j->p, "null", 4)) return j->p += 4, 1;
  if (!strncmp(j->p, "false", 5)) return j->p += 5, 1;
  if (c == '[' || c == '{') {
    char close = c == '[' ? ']' : '}';
    j->p++;
    if (tl_jp_eat(j, close)) return 1;
    do {
      if (c == '{' && (!tl_jp_str(j, NULL, 0) || !(tl_jp_eat(j, ':') || tl_jp_fail(j, "expected ':'")))) return 0;
      if (!tl_jp_skip(j, depth + 1)) return 0;
    } while (tl_jp_eat(j, ','));
    return tl_jp_eat(j, close) || tl_jp_fail(j, "unclosed array or object");
  }
  return tl_jp_fail(j, "unexpected character");
}

/* Parses an object, calling member(j, key, ctx) for each key; member consumes the value. */
static int tl_jp_object(tl_jp *j, int (*member)(tl_jp *j, const char *key, void *ctx), void *ctx) {
  if (!tl_jp_eat(j, '{')) return tl_jp_fail(j, "expected an object");
  if (tl_jp_eat(j, '}')) return 1;
  do {
    char key[32];
    if (!tl_jp_str(j, key, sizeof key)) return 0;
    if (!tl_jp_eat(j, ':')) return tl_jp_fail(j, "expected ':'");
    if (!member(j, key, ctx)) return 0;
  } while (tl_jp_eat(j, ','));
  return tl_jp_eat(j, '}') || tl_jp_fail(j, "unclosed object");
}

/* A number that must be finite and >= 0 (lo) into *out. */
static int tl_jp_nonneg(tl_jp *j, double *out) {
  double v;
  if (!tl_jp_num(j, &v)) return 0;
  if (v < 0) return tl_jp_fail(j, "negative number");
  *out = v + 0.0; /* -0 reads as 0 */
  return 1;
}

/* Members of one unit. */
static int tl_jp_unit(tl_jp *j, const char *key, void *ctx) {
  tl_compute_unit *u = ctx;
  if (!strcmp(key, "name")) return tl_jp_str(j, u->name, sizeof u->name);
  if (!strcmp(key, "source")) return tl_jp_str(j, u->source, sizeof u->source);
  if (!strcmp(key, "dtype")) {
    char d[16];
    if (!tl_jp_str(j, d, sizeof d)) return 0;
    u->dtype = tl_dtype_parse(d);
    return u->dtype != TL_DTYPE_INVALID || tl_jp_fail(j, "bad dtype");
  }
  if (!strcmp(key, "peak")) return tl_jp_nonneg(j, &u->peak);
  if (!strcmp(key, "peak_1t")) return tl_jp_nonneg(j, &u->peak_1t);
  if (!strcmp(key, "spread")) return tl_jp_nonneg(j, &u->spread);
  return tl_jp_skip(j, 1);
}

/* Members of one level. */
static int tl_jp_level(tl_jp *j, const char *key, void *ctx) {
  tl_mem_level *l = ctx;
  double v;
  if (!strcmp(key, "name")) return tl_jp_str(j, l->name, sizeof l->name);
  if (!strcmp(key, "source")) return tl_jp_str(j, l->source, sizeof l->source);
  if (!strcmp(key, "capacity")) {
    if (!tl_jp_nonneg(j, &v)) return 0;
    if (v > 9e18 || v != floor(v)) return tl_jp_fail(j, "bad capacity");
    l->capacity = (int64_t)v;
    return 1;
  }
  if (!strcmp(key, "per_core")) {
    if (!tl_jp_nonneg(j, &v)) return 0;
    if (v != 0 && v != 1) return tl_jp_fail(j, "bad per_core");
    l->per_core = (int)v;
    return 1;
  }
  static const struct { const char *key; size_t off; } fields[] = {
      {"read_bw", offsetof(tl_mem_level, read_bw)},         {"write_bw", offsetof(tl_mem_level, write_bw)},
      {"copy_bw", offsetof(tl_mem_level, copy_bw)},         {"nt_copy_bw", offsetof(tl_mem_level, nt_copy_bw)},
      {"read_bw_1t", offsetof(tl_mem_level, read_bw_1t)},   {"write_bw_1t", offsetof(tl_mem_level, write_bw_1t)},
      {"copy_bw_1t", offsetof(tl_mem_level, copy_bw_1t)},   {"nt_copy_bw_1t", offsetof(tl_mem_level, nt_copy_bw_1t)},
      {"spread", offsetof(tl_mem_level, spread)},
  };
  for (size_t i = 0; i < TL_ARRAY_LEN(fields); i++)
    if (!strcmp(key, fields[i].key)) return tl_jp_nonneg(j, (double *)((char *)l + fields[i].off));
  return tl_jp_skip(j, 1);
}

/* Parsing state of the top object. */
typedef struct tl_jp_top {
  tl_machine *m;
  int format_ok;
  double cores, measured;
} tl_jp_top;

/* An array of objects, each parsed by member into consecutive elements of base. */
static int tl_jp_array(tl_jp *j, int (*member)(tl_jp *, const char *, void *), void *base, size_t elem, int max,
                       int *count) {
  *count = 0;
  if (!tl_jp_eat(j, '[')) return tl_jp_fail(j, "expected an array");
  if (tl_jp_eat(j, ']')) return 1;
  do {
    if (*count >= max) return tl_jp_fail(j, "too many entries");
    if (!tl_jp_object(j, member, (char *)base + elem * (size_t)*count)) return 0;
    (*count)++;
  } while (tl_jp_eat(j, ','));
  return tl_jp_eat(j, ']') || tl_jp_fail(j, "unclosed array");
}

/* Members of the top object. */
static int tl_jp_top_member(tl_jp *j, const char *key, void *ctx) {
  tl_jp_top *t = ctx;
  tl_machine *m = t->m;
  if (!strcmp(key, "format")) {
    char f[32];
    if (!tl_jp_str(j, f, sizeof f)) return 0;
    t->format_ok = !strcmp(f, TL_CACHE_FORMAT);
    return t->format_ok || tl_jp_fail(j, "unknown format");
  }
  if (!strcmp(key, "cpu_key")) return tl_jp_str(j, m->cpu_key, sizeof m->cpu_key);
  if (!strcmp(key, "name")) return tl_jp_str(j, m->name, sizeof m->name);
  if (!strcmp(key, "description")) return tl_jp_str(j, m->description, sizeof m->description);
  if (!strcmp(key, "cores")) return tl_jp_nonneg(j, &t->cores);
  if (!strcmp(key, "measured")) return tl_jp_nonneg(j, &t->measured);
  if (!strcmp(key, "units"))
    return tl_jp_array(j, tl_jp_unit, m->units, sizeof m->units[0], TL_MAX_UNITS, &m->nunits);
  if (!strcmp(key, "levels"))
    return tl_jp_array(j, tl_jp_level, m->levels, sizeof m->levels[0], TL_MAX_LEVELS, &m->nlevels);
  return tl_jp_skip(j, 1);
}

/* Checks a parsed machine; returns NULL when it is usable, else what is wrong. */
static const char *tl_cache_check(const tl_jp_top *t, const char *key) {
  const tl_machine *m = t->m;
  if (!t->format_ok) return "no format";
  if (strcmp(m->cpu_key, key) != 0) return "written for another CPU key";
  if (t->cores < 1 || t->cores > 1024 || t->cores != floor(t->cores)) return "bad cores";
  if (m->nunits < 1 || m->nlevels < 1) return "no units or no levels";
  for (int i = 0; i < m->nunits; i++)
    if (!m->units[i].name[0] || m->units[i].dtype == TL_DTYPE_INVALID || !(m->units[i].peak > 0))
      return "a unit without a name, dtype or peak";
  /* plausible numbers only (a file edited or damaged into 1e-300 B/s or 1e308 flop/s gave bounds
   * of 1e306 s and 60-digit peaks in the output until 2026-11-26, found by fuzzing): peaks in
   * [1e6, 1e18] flop/s (one thread's at most 1e18: a disturbed probe may have measured it above
   * the all-thread figure, and its own file must read back); bandwidths at most 1e15 B/s,
   * reads from 1e6; every level but the last sized, capacities growing down the levels, at most
   * 2^50 bytes in all; the last level unsized (memory) or larger still */
  for (int i = 0; i < m->nunits; i++) {
    const tl_compute_unit *u = &m->units[i];
    if (u->peak < 1e6 || u->peak > 1e18 || u->peak_1t > 1e18 || u->spread > 1e3) return "an implausible unit peak";
  }
  double prev = 0;
  for (int i = 0; i < m->nlevels; i++) {
    const tl_mem_level *l = &m->levels[i];
    if (!l->name[0] || !(l->read_bw >= 1e6)) return "a level without a name or read bandwidth";
    const double bw[] = {l->read_bw, l->write_bw, l->copy_bw, l->nt_copy_bw, l->read_bw_1t, l->write_bw_1t, l->copy_bw_1t,
                         l->nt_copy_bw_1t};
    for (size_t k = 0; k < TL_ARRAY_LEN(bw); k++)
      if (bw[k] > 1e15) return "an implausible bandwidth";
    /* the order compares a level's own capacity (per core for per-core levels): on many-core
     * parts the L2s together outsize the shared L3 */
    const double cap = (double)l->capacity;
    const int last = i == m->nlevels - 1;
    if (cap * (l->per_core ? t->cores : 1) > 0x1p50) return "a level capacity past 2^50 bytes";
    if ((!last && !(cap > prev)) || (last && l->capacity != 0 && !(cap > prev)))
      return "level capacities out of order (fastest and smallest first, memory last)";
    prev = cap;
  }
  return NULL;
}

int tl_probe_cache_read(const char *path, const char *key, tl_machine *m, char *why, size_t why_size) {
  int rc = -1;
  char *text = NULL;
  tl_machine *tmp = NULL;
  locale_t c_loc = (locale_t)0, old = (locale_t)0;
  FILE *f = fopen(path, "rb");
  if (!f) {
    if (errno == ENOENT) return 0;
    tl_msg(why, why_size, "cannot open: %s", strerror(errno));
    return -1;
  }
  text = tl_calloc(1, TL_CACHE_MAX_BYTES + 1);
  tmp = tl_calloc(1, sizeof *tmp);
  if (!text || !tmp) {
    tl_msg(why, why_size, "out of memory");
    goto out;
  }
  size_t n = fread(text, 1, TL_CACHE_MAX_BYTES + 1, f);
  if (ferror(f) || n > TL_CACHE_MAX_BYTES) {
    tl_msg(why, why_size, ferror(f) ? "read error" : "larger than 1 MiB");
    goto out;
  }
  text[n] = 0;
  if (strlen(text) != n) {
    tl_msg(why, why_size, "contains a NUL byte");
    goto out;
  }
  c_loc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
  if (c_loc) old = uselocale(c_loc);
  tl_jp j = {text, NULL};
  tl_jp_top top = {tmp, 0, 0, 0};
  int ok = tl_jp_object(&j, tl_jp_top_member, &top);
  if (ok) {
    tl_jp_ws(&j);
    if (*j.p) ok = tl_jp_fail(&j, "text after the object");
  }
  if (!ok) {
    tl_msg(why, why_size, "not a valid cache file: %s at byte %td", j.err ? j.err : "syntax error", j.p - text);
    goto out;
  }
  const char *bad = tl_cache_check(&top, key);
  if (bad) {
    tl_msg(why, why_size, "not a valid cache file: %s", bad);
    goto out;
  }
  tmp->cores = (int)top.cores;
  tmp->measured = top.measured != 0;
  *m = *tmp;
  rc = 1;
out:
  if (c_loc) {
    uselocale(old);
    freelocale(c_loc);
  }
  fclose(f);
  tl_free_mem(text);
  tl_free_mem(tmp);
  return rc;
}
