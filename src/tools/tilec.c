/* tilec.c — the `tilec` command: dispatches to the subcommands listed in TL_TOOL_LIST
 * (tools_impl.h) and holds the helpers they share (errors, flag values, JSON strings).
 *
 *   tilec --help | -h | help          list the subcommands
 *   tilec help CMD | tilec CMD --help  a subcommand's help
 *   tilec --version                    the version
 *   tilec CMD [args...]                run a subcommand
 *
 * Exit codes: 0 ok, 1 runtime failure, 2 usage error (unknown subcommand, bad flag).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "tools_impl.h"

static const tl_tool_cmd tl_tools[] = {
#define TL_X_(name, fn, help, summary) {name, fn, summary, help},
    TL_TOOL_LIST(TL_X_)
#undef TL_X_
};

/* ---- helpers shared by the subcommands (declared in tools_impl.h) ---- */

/* Prints "tilec <cmd>: <fmt...>" and a newline on stderr. */
static void tl_tool_vmsg(const char *cmd, const char *fmt, va_list ap) {
  fprintf(stderr, "tilec%s%s: ", cmd ? " " : "", cmd ? cmd : "");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
}

int tl_tool_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tl_tool_vmsg(cmd, fmt, ap);
  va_end(ap);
  return TL_EXIT_USAGE;
}

int tl_tool_fail(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tl_tool_vmsg(cmd, fmt, ap);
  va_end(ap);
  return TL_EXIT_FAIL;
}

int tl_tool_flag_value(const char *cmd, int argc, char **argv, int *i, const char *name, const char **value) {
  const char *a = argv[*i];
  size_t n = strlen(name);
  if (strncmp(a, name, n) != 0) return 0;
  if (a[n] == '=') {
    *value = a + n + 1;
    *i += 1;
    return 1;
  }
  if (a[n] != '\0') return 0; /* a longer flag that starts with name */
  if (*i + 1 >= argc) {
    tl_tool_usage_error(cmd, "%s needs a value", name);
    return -1;
  }
  *value = argv[*i + 1];
  *i += 2;
  return 1;
}

int tl_tool_path_arg(const char *cmd, const char *name, const char *path) {
  if (!*path) {
    tl_tool_usage_error(cmd, "%s: empty path", name);
    return -1;
  }
  for (const unsigned char *c = (const unsigned char *)path; *c; c++)
    if (*c < 0x20 || *c == 0x7f) {
      tl_tool_usage_error(cmd, "%s: the path holds a control character (byte %#x at position %d)", name, *c,
                          (int)(c - (const unsigned char *)path));
      return -1;
    }
  return 0;
}

int tl_tool_parse_int(const char *cmd, const char *name, const char *s, long lo, long hi, long *out) {
  char *end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (!*s || *end || errno == ERANGE || v < lo || v > hi) {
    tl_tool_usage_error(cmd, "%s: '%s' is not an integer in %ld..%ld", name, s, lo, hi);
    return -1;
  }
  *out = v;
  return 0;
}

int tl_tool_ctx_flag(const char *cmd, int argc, char **argv, int *i, tl_ctx_opts *o) {
  const char *v = NULL;
  int r;
  if ((r = tl_tool_flag_value(cmd, argc, argv, i, "--isa", &v)) != 0) {
    if (r < 0) return -1;
    tl_isa isa;
    if (tl_isa_parse(v, &isa) != TL_OK) return tl_tool_usage_error(cmd, "--isa: %s", tl_last_error()), -1;
    o->isa = v;
    return 1;
  }
  if ((r = tl_tool_flag_value(cmd, argc, argv, i, "--threads", &v)) != 0) {
    long n;
    if (r < 0 || tl_tool_parse_int(cmd, "--threads", v, 1, 1024, &n) != 0) return -1;
    o->threads = (int)n;
    return 1;
  }
  return 0;
}

void tl_gp_string(FILE *f, const char *s) {
  fputc('\'', f);
  for (; *s; s++) {
    if (*s == '\'') fputc('\'', f);
    /* a control character (a newline ends the string and starts a command) goes as '?': the
     * paths were refused before (tl_tool_path_arg), titles and labels only lose it */
    fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, f);
  }
  fputc('\'', f);
}

int tl_tool_bad_arg(const char *cmd, const char *arg) {
  if (arg[0] == '-') return tl_tool_usage_error(cmd, "unknown option '%s' (see tilec %s --help)", arg, cmd);
  return tl_tool_usage_error(cmd, "unexpected argument '%s' (see tilec %s --help)", arg, cmd);
}

/* Length of the valid UTF-8 sequence at s (2..4), or 0 when the bytes there are not one. */
static int tl_utf8_len(const unsigned char *s) {
  int n;
  unsigned min;
  unsigned cp;
  if (s[0] >= 0xc2 && s[0] <= 0xdf) n = 2, cp = s[0] & 0x1f, min = 0x80;
  else if ((s[0] & 0xf0) == 0xe0) n = 3, cp = s[0] & 0x0f, min = 0x800;
  else if (s[0] >= 0xf0 && s[0] <= 0xf4) n = 4, cp = s[0] & 0x07, min = 0x10000;
  else return 0;
  for (int k = 1; k < n; k++) {
    if ((s[k] & 0xc0) != 0x80) return 0; /* also stops at the terminating NUL */
    cp = (cp << 6) | (s[k] & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

void tl_json_string(FILE *f, const char *s) {
  if (!s) {
    fputs("null", f);
    return;
  }
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    unsigned char c = *p;
    if (c == '"' || c == '\\') {
      fputc('\\', f);
      fputc(c, f);
    } else if (c == '\n') {
      fputs("\\n", f);
    } else if (c == '\t') {
      fputs("\\t", f);
    } else if (c == '\r') {
      fputs("\\r", f);
    } else if (c < 0x20 || c == 0x7f) {
      fprintf(f, "\\u%04x", c);
    } else if (c >= 0x80) {
      int n = tl_utf8_len(p);
      if (n == 0) {
        fputs("\\ufffd", f); /* not UTF-8: keep the output valid JSON */
      } else {
        fwrite(p, 1, (size_t)n, f);
        p += n;
        continue;
      }
    } else {
      fputc(c, f);
    }
    p++;
  }
  fputc('"', f);
}

/* ---- dispatch ---- */

/* The subcommand called name, or NULL. */
static const tl_tool_cmd *tl_tool_find(const char *name) {
  for (size_t i = 0; i < sizeof tl_tools / sizeof tl_tools[0]; i++)
    if (!strcmp(tl_tools[i].name, name)) return &tl_tools[i];
  return NULL;
}

/* The general usage text, listing the subcommands. */
static void tl_tool_usage(FILE *f) {
  fprintf(f,
          "usage: tilec <command> [options]\n"
          "       tilec help <command>    help for one command (also: tilec <command> --help)\n"
          "       tilec --version\n"
          "\n"
          "tilec %s - tile programming for CPUs: grids, BlockSpecs, staging, AMX/AVX-512.\n"
          "\n"
          "commands:\n",
          TILEC_VERSION);
  for (size_t i = 0; i < sizeof tl_tools / sizeof tl_tools[0]; i++)
    fprintf(f, "  %-10s %s\n", tl_tools[i].name, tl_tools[i].summary);
  fprintf(f,
          "\n"
          "environment: TILEC_ISA (cap: scalar, avx2, avx2vnni, avx512, avx512vnni, avx512bf16, amx),\n"
          "             TILEC_INTERPRET=1, TILEC_CACHE_DIR, TILEC_TUNE=0 (ignore tuned configs),\n"
          "             TILEC_TUNE_DB\n");
}

/* 1 when args (up to a "--") ask for help. */
static int tl_tool_wants_help(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--")) return 0;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
  }
  return 0;
}

/* Top-level options, `help`, then the subcommand named by argv[1] with argv[1..] as its argv. */
int main(int argc, char **argv) {
  if (argc < 2) {
    tl_tool_usage(stderr);
    return TL_EXIT_USAGE;
  }
  const char *first = argv[1];
  if (!strcmp(first, "--help") || !strcmp(first, "-h")) {
    tl_tool_usage(stdout);
    return TL_EXIT_OK;
  }
  if (!strcmp(first, "--version") || !strcmp(first, "version")) {
    printf("tilec %s\n", TILEC_VERSION);
    return TL_EXIT_OK;
  }
  if (!strcmp(first, "help")) {
    if (argc < 3) {
      tl_tool_usage(stdout);
      return TL_EXIT_OK;
    }
    const tl_tool_cmd *c = tl_tool_find(argv[2]);
    if (!c) return tl_tool_usage_error(NULL, "no command '%s' (see tilec --help)", argv[2]);
    fputs(c->help, stdout);
    return TL_EXIT_OK;
  }
  if (first[0] == '-') return tl_tool_usage_error(NULL, "unknown option '%s' (see tilec --help)", first);
  const tl_tool_cmd *c = tl_tool_find(first);
  if (!c) return tl_tool_usage_error(NULL, "unknown command '%s' (see tilec --help)", first);
  if (tl_tool_wants_help(argc - 1, argv + 1)) {
    fputs(c->help, stdout);
    return TL_EXIT_OK;
  }
  int rc = c->fn(argc - 1, argv + 1);
  if (fflush(stdout) != 0 && rc == TL_EXIT_OK) rc = tl_tool_fail(c->name, "writing the output failed");
  return rc;
}
