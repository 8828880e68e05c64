/* machine_fmt.c — printing machines and quantities for the subcommands (see machine_fmt.h).
 * Nothing here decides anything: every number comes from the tl_machine given. */
#include <math.h>
#include <string.h>

#include "machine_fmt.h"
#include "tools_impl.h"

const char *tl_fmt_bytes(char *buf, size_t n, double bytes) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = bytes;
  int u = 0;
  while (fabs(v) >= 1024.0 && u < 5) {
    v /= 1024.0;
    u++;
  }
  if (v == floor(v)) snprintf(buf, n, "%.0f %s", v, unit[u]);
  else if (fabs(v) >= 100) snprintf(buf, n, "%.0f %s", v, unit[u]);
  else snprintf(buf, n, "%.3g %s", v, unit[u]);
  return buf;
}

const char *tl_fmt_rate(char *buf, size_t n, double v, const char *unit) {
  static const char *const prefix[] = {"", "k", "M", "G", "T", "P", "E"};
  int p = 0;
  double x = v;
  while (fabs(x) >= 999.5 && p < 6) {
    x /= 1000.0;
    p++;
  }
  if (x == 0) snprintf(buf, n, "0 %s", unit);
  else if (fabs(x) >= 99.95) snprintf(buf, n, "%.0f %s%s", x, prefix[p], unit);
  else if (fabs(x) >= 9.995) snprintf(buf, n, "%.1f %s%s", x, prefix[p], unit);
  else snprintf(buf, n, "%.2f %s%s", x, prefix[p], unit);
  return buf;
}

const char *tl_fmt_seconds(char *buf, size_t n, double s) {
  if (s == 0) snprintf(buf, n, "0 s");
  else if (s < 1e-6) snprintf(buf, n, "%.3g ns", s * 1e9);
  else if (s < 1e-3) snprintf(buf, n, "%.3g us", s * 1e6);
  else if (s < 1) snprintf(buf, n, "%.3g ms", s * 1e3);
  else snprintf(buf, n, "%.3g s", s);
  return buf;
}

const char *tl_fmt_op_unit(tl_dtype dt) {
  return dt == TL_F32 || dt == TL_F16 || dt == TL_BF16 ? "FLOP/s" : "OP/s";
}

int tl_source_is_estimate(const char *source) { return source && strstr(source, "estimate") != NULL; }

void tl_machine_print_header(FILE *f) {
  fprintf(f, "%-10s %5s  %-60s %s\n", "NAME", "CORES", "UNITS (dtype peak op/s, dense)",
          "LEVELS (capacity @ read bandwidth)");
}

/* A peak as "197T" (SI prefix, no unit, no space). */
static const char *tl_fmt_peak(char *buf, size_t n, double v) {
  char tmp[32];
  tl_fmt_rate(tmp, sizeof tmp, v, "");
  size_t j = 0;
  for (size_t i = 0; tmp[i] && j + 1 < n; i++)
    if (tmp[i] != ' ') buf[j++] = tmp[i];
  buf[j] = 0;
  return buf;
}

void tl_machine_print_line(FILE *f, const tl_machine *m) {
  char units[512] = "", b1[32], b2[32];
  size_t used = 0;
  /* consecutive units of one name share it: "tensor-core bf16 312T f16 312T, cuda-core f32 19.5T" */
  for (int i = 0; i < m->nunits && used < sizeof units; i++) {
    const tl_compute_unit *u = &m->units[i];
    int same = i > 0 && !strcmp(u->name, m->units[i - 1].name);
    if (same) used += (size_t)snprintf(units + used, sizeof units - used, " ");
    else used += (size_t)snprintf(units + used, sizeof units - used, "%s%s ", i ? ", " : "", u->name);
    if (used < sizeof units)
      used += (size_t)snprintf(units + used, sizeof units - used, "%s %s", tl_dtype_name(u->dtype),
                               tl_fmt_peak(b1, sizeof b1, u->peak));
  }
  fprintf(f, "%-10s %5d  %-60s ", m->name, m->cores, units);
  for (int l = 0; l < m->nlevels; l++) {
    const tl_mem_level *lv = &m->levels[l];
    const char *cap = lv->capacity > 0 ? tl_fmt_bytes(b1, sizeof b1, (double)lv->capacity) : "unbounded";
    const char *bw = lv->read_bw > 0 ? tl_fmt_rate(b2, sizeof b2, lv->read_bw, "B/s") : "?";
    fprintf(f, "%s%s %s%s @ %s%s", l ? ", " : "", lv->name, cap, lv->per_core ? "/core" : "", bw,
            lv->read_bw > 0 && tl_source_is_estimate(lv->source) ? "*" : "");
  }
  fputc('\n', f);
}

void tl_machine_print_details(FILE *f, const tl_machine *m) {
  char b1[32], b2[32];
  fprintf(f, "%s: %s\n", m->name, m->description[0] ? m->description : "(no description)");
  fprintf(f, "  cores %d%s%s%s\n", m->cores, m->measured ? ", measured on this host" : ", modelled",
          m->cpu_key[0] ? ", key " : "", m->cpu_key);
  for (int i = 0; i < m->nunits; i++) {
    const tl_compute_unit *u = &m->units[i];
    fprintf(f, "  unit  %-14s %-5s %-14s", u->name, tl_dtype_name(u->dtype),
            tl_fmt_rate(b1, sizeof b1, u->peak, tl_fmt_op_unit(u->dtype)));
    if (u->peak_1t > 0) fprintf(f, " (1 core %s)", tl_fmt_rate(b2, sizeof b2, u->peak_1t, tl_fmt_op_unit(u->dtype)));
    if (u->spread > 0) fprintf(f, " spread %.1f%%", 100 * u->spread);
    fprintf(f, "\n        source: %s\n", u->source[0] ? u->source : "(none)");
  }
  for (int l = 0; l < m->nlevels; l++) {
    const tl_mem_level *lv = &m->levels[l];
    fprintf(f, "  level %-14s %-12s%s", lv->name,
            lv->capacity > 0 ? tl_fmt_bytes(b1, sizeof b1, (double)lv->capacity) : "unbounded",
            lv->per_core ? " per core" : " shared  ");
    if (lv->read_bw > 0) fprintf(f, "  read %s", tl_fmt_rate(b2, sizeof b2, lv->read_bw, "B/s"));
    else fprintf(f, "  read unknown (ignored by the bound)");
    if (lv->read_bw_1t > 0) fprintf(f, " (1 core %s)", tl_fmt_rate(b2, sizeof b2, lv->read_bw_1t, "B/s"));
    if (lv->write_bw > 0) fprintf(f, ", write %s", tl_fmt_rate(b2, sizeof b2, lv->write_bw, "B/s"));
    if (lv->copy_bw > 0) fprintf(f, ", copy %s", tl_fmt_rate(b2, sizeof b2, lv->copy_bw, "B/s"));
    if (lv->nt_copy_bw > 0) fprintf(f, ", nt copy %s", tl_fmt_rate(b2, sizeof b2, lv->nt_copy_bw, "B/s"));
    if (lv->spread > 0) fprintf(f, ", spread %.1f%%", 100 * lv->spread);
    fprintf(f, "\n        source: %s\n", lv->source[0] ? lv->source : "(none)");
  }
}

/* Newline and `indent` spaces. */
static void tl_json_nl(FILE *f, int indent) { fprintf(f, "\n%*s", indent, ""); }

void tl_machine_print_json(FILE *f, const tl_machine *m, int indent) {
  fputc('{', f);
  tl_json_nl(f, indent + 2);
  fputs("\"name\": ", f);
  tl_json_string(f, m->name);
  fputc(',', f);
  tl_json_nl(f, indent + 2);
  fputs("\"description\": ", f);
  tl_json_string(f, m->description);
  fprintf(f, ",");
  tl_json_nl(f, indent + 2);
  fprintf(f, "\"cores\": %d, \"measured\": %s,", m->cores, m->measured ? "true" : "false");
  tl_json_nl(f, indent + 2);
  fputs("\"cpu_key\": ", f);
  tl_json_string(f, m->cpu_key);
  fputc(',', f);
  tl_json_nl(f, indent + 2);
  fputs("\"units\": [", f);
  for (int i = 0; i < m->nunits; i++) {
    const tl_compute_unit *u = &m->units[i];
    fputs(i ? "," : "", f);
    tl_json_nl(f, indent + 4);
    fputs("{\"name\": ", f);
    tl_json_string(f, u->name);
    fputs(", \"dtype\": ", f);
    tl_json_string(f, tl_dtype_name(u->dtype));
    fprintf(f, ", \"peak\": %.6g, \"peak_1t\": %.6g, \"spread\": %.4g, \"source\": ", u->peak, u->peak_1t, u->spread);
    tl_json_string(f, u->source);
    fputc('}', f);
  }
  tl_json_nl(f, indent + 2);
  fputs("],", f);
  tl_json_nl(f, indent + 2);
  fputs("\"levels\": [", f);
  for (int l = 0; l < m->nlevels; l++) {
    const tl_mem_level *lv = &m->levels[l];
    fputs(l ? "," : "", f);
    tl_json_nl(f, indent + 4);
    fputs("{\"name\": ", f);
    tl_json_string(f, lv->name);
    fprintf(f,
            ", \"capacity\": %lld, \"per_core\": %s, \"read_bw\": %.6g, \"write_bw\": %.6g, \"copy_bw\": %.6g, "
            "\"nt_copy_bw\": %.6g, \"read_bw_1t\": %.6g, \"spread\": %.4g, \"estimate\": %s, \"source\": ",
            (long long)lv->capacity, lv->per_core ? "true" : "false", lv->read_bw, lv->write_bw, lv->copy_bw,
            lv->nt_copy_bw, lv->read_bw_1t, lv->spread, tl_source_is_estimate(lv->source) ? "true" : "false");
    tl_json_string(f, lv->source);
    fputc('}', f);
  }
  tl_json_nl(f, indent + 2);
  fputc(']', f);
  tl_json_nl(f, indent);
  fputc('}', f);
}
