/* machine_fmt.h — printing machines and quantities for the `tilec` subcommands (machines,
 * explain, and any other that shows a tl_machine): byte counts, rates and times with binary or
 * SI prefixes, a machine as one table line, with its sources, or as JSON. Defined in
 * machine_fmt.c; results go to the FILE given (stdout for results). */
#ifndef TL_MACHINE_FMT_H
#define TL_MACHINE_FMT_H

#include <stdio.h>

#include "tilec.h"

/* A byte count with binary prefixes: "48 KiB", "1.5 MiB", "512 B". Returns buf. */
const char *tl_fmt_bytes(char *buf, size_t n, double bytes);
/* A rate with SI prefixes and the unit given: tl_fmt_rate(b, n, 819e9, "B/s") is "819 GB/s".
 * Three significant digits. 0 gives "0 <unit>". Returns buf. */
const char *tl_fmt_rate(char *buf, size_t n, double v, const char *unit);
/* A duration: "850 ns", "12.3 us", "4.56 ms", "1.20 s". Returns buf. */
const char *tl_fmt_seconds(char *buf, size_t n, double s);
/* "FLOP/s" for float dtypes, "OP/s" for integer ones. */
const char *tl_fmt_op_unit(tl_dtype dt);

/* 1 when a source string marks its number as an estimate. */
int tl_source_is_estimate(const char *source);

/* The header line matching tl_machine_print_line. */
void tl_machine_print_header(FILE *f);
/* One line: name, cores, units ("mxu bf16 197 T"), levels ("VMEM 128 MiB/core @ 18.0 TB/s*");
 * '*' marks an estimated bandwidth, '?' an unknown one. */
void tl_machine_print_line(FILE *f, const tl_machine *m);
/* Every unit and level on its own line with its source. */
void tl_machine_print_details(FILE *f, const tl_machine *m);
/* One JSON object (no trailing newline), indented by `indent` spaces after each newline. */
void tl_machine_print_json(FILE *f, const tl_machine *m, int indent);

#endif /* TL_MACHINE_FMT_H */
