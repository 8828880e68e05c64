/* tools_impl.h — what the `tilec` subcommands share: the subcommand table and small helpers for
 * flags, errors and JSON output (defined in tilec.c). Tools use only the public API.
 *
 * Adding a subcommand = one file src/tools/cmd_<name>.c defining
 *     int tl_cmd_<name>(int argc, char **argv);     argv[0] is the subcommand's name
 *     const char tl_cmd_<name>_help[];              full help text, ends with a newline
 * plus one row in TL_TOOL_LIST below. The dispatcher handles `--help`/`-h` for every subcommand
 * (anywhere before a `--`), so a subcommand's function never sees them.
 *
 * Exit codes: 0 success, 1 runtime failure, 2 usage error (bad flag or value). Errors are one line
 * on stderr: "tilec <cmd>: <message>". Results go to stdout.
 */
#ifndef TL_TOOLS_IMPL_H
#define TL_TOOLS_IMPL_H

#include <stdio.h>

#include "tilec.h"

/* X(name, function, help text, one-line summary): the one table of subcommands, in the order
 * `tilec --help` lists them. */
#define TL_TOOL_LIST(X) \
  X("roofline", tl_cmd_roofline, tl_cmd_roofline_help, "run every kernel and place it on this machine's roofline (the main job)") \
  X("explain", tl_cmd_explain, tl_cmd_explain_help, "explain a kernel instance: blocks, bytes per operand and level, roofline bound, timed run") \
  X("machines", tl_cmd_machines, tl_cmd_machines_help, "list the machines to bound kernels on: the probed host and TPU/GPU presets") \
  X("bench", tl_cmd_bench, tl_cmd_bench_help, "time tilec next to the peer libraries present (copy, scale), size by size") \
  X("tune", tl_cmd_tune, tl_cmd_tune_help, "search block-size configs for shapes and keep the fastest in the tuning DB") \
  X("probe", tl_cmd_probe, tl_cmd_probe_help, "measure this machine's compute peaks and cache/DRAM bandwidths (cached)") \
  X("info", tl_cmd_info, tl_cmd_info_help, "show the CPU, its features, the ISA paths and the context settings")

#define TL_X_(name, fn, help, summary) \
  int fn(int argc, char **argv);       \
  extern const char help[];
TL_TOOL_LIST(TL_X_)
#undef TL_X_

/* One subcommand. */
typedef struct tl_tool_cmd {
  const char *name;
  int (*fn)(int argc, char **argv);
  const char *summary; /* one line, no trailing newline */
  const char *help;    /* full help text */
} tl_tool_cmd;

/* Exit codes. */
enum { TL_EXIT_OK = 0, TL_EXIT_FAIL = 1, TL_EXIT_USAGE = 2 };

/* Prints "tilec <cmd>: <message>" on stderr and returns TL_EXIT_USAGE. */
int tl_tool_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "tilec <cmd>: <message>" on stderr and returns TL_EXIT_FAIL. */
int tl_tool_fail(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Flag parsing for "--name VALUE" and "--name=VALUE". If argv[*i] is flag `name`, stores its value
 * in *value, advances *i past it and returns 1; returns 0 when argv[*i] is another argument;
 * returns -1 (after printing a usage error for cmd) when the value is missing. */
int tl_tool_flag_value(const char *cmd, int argc, char **argv, int *i, const char *name, const char **value);
/* Checks the value of a file-path flag `name` (--csv, --plot): 0, or -1 after printing a usage
 * error for cmd when it is empty or holds a control character (a newline in a name that goes
 * into a gnuplot script would end the string and start a command). */
int tl_tool_path_arg(const char *cmd, const char *name, const char *path);
/* Parses a decimal integer in [lo, hi] for flag `name`; returns 0, or -1 after printing a usage
 * error for cmd. */
int tl_tool_parse_int(const char *cmd, const char *name, const char *s, long lo, long hi, long *out);

/* The flags shared by subcommands that make a context: --isa NAME (checked) and --threads N
 * (1..1024), stored into *o. Returns 1 when argv[*i] was one of them (*i advanced), 0 when it is
 * something else, -1 after printing a usage error. */
int tl_tool_ctx_flag(const char *cmd, int argc, char **argv, int *i, tl_ctx_opts *o);
/* The usage error for an argument nothing matched ("unknown option" / "unexpected argument");
 * returns TL_EXIT_USAGE. */
int tl_tool_bad_arg(const char *cmd, const char *arg);

/* Writes s as a gnuplot single-quoted string (quotes doubled, control characters as '?'): file
 * names and titles go into scripts fed to gnuplot's stdin this way, never through a shell. */
void tl_gp_string(FILE *f, const char *s);

/* Writes s as a JSON string literal (quotes included, control characters and non-ASCII-safe
 * escapes applied; bytes >= 0x80 are copied, so valid UTF-8 stays valid). NULL writes null. */
void tl_json_string(FILE *f, const char *s);

#endif /* TL_TOOLS_IMPL_H */
