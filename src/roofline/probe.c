/* probe.c — tl_machine_probe: measures this host once (compute peaks here, bandwidths in
 * probe_mem.c) and keeps the result in <cache_dir>/machine-<cpu_key>.json (probe_cache.c).
 *
 * Invariants:
 * - The probe measures what ctx would run: the ISA levels up to ctx's (after tl_ctx_need_amx, so
 *   AMX counts only with permission) and ctx's thread count. Both are part of the cache key, with
 *   the CPU's vendor, brand, family/model/stepping and feature mask; cpu_key is readable and ends
 *   with a hash of all of them, and the cache file is named after it.
 * - A cache file that is missing is measured silently; one that is unreadable, corrupt or for
 *   another key is ignored with a warning (tl_ctx_warning) and measured again. Failing to write
 *   the cache is a warning, not an error: the measurement stands.
 * - Every unit is measured with 1 thread and with all threads: peak and peak_1t are the best of
 *   the undisturbed runs (a ceiling is what the machine sustains at best; medians on this shared
 *   machine came out below what kernels then achieved), spread is the larger relative spread.
 * - The library never prints: notes go to the progress callback only.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "probe_impl.h"

#define TL_PROBE_MAX_TRIALS 15

double tl_probe_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void tl_probe_note(const tl_probe_state *st, const char *fmt, ...) {
  if (!st->progress) return;
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  st->progress(buf, st->arg);
}

/* Appends a warning to the probe's (joined by "; "); ctx gets them all at the end. */
static void tl_probe_warn(tl_probe_state *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tl_probe_warn(tl_probe_state *st, const char *fmt, ...) {
  size_t n = strlen(st->warn);
  if (n && n + 2 < sizeof st->warn) {
    memcpy(st->warn + n, "; ", 3);
    n += 2;
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(st->warn + n, sizeof st->warn - n, fmt, ap);
  va_end(ap);
}

/* Thread CPU seconds of the calling thread. */
static double tl_probe_cpu_now(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Pool entry: worker w runs the task's body and records when it started, how long it ran and
 * its CPU time; worker 0 (the caller) records its work. */
static void tl_probe_pool_fn(void *arg, int worker, int nworkers) {
  tl_probe_task *t = arg;
  double t0 = tl_probe_now(), c0 = tl_probe_cpu_now();
  double w = t->body(t, worker, nworkers, t->reps);
  double *rec = t->cpu + 3 * worker;
  rec[0] = tl_probe_cpu_now() - c0;
  rec[1] = tl_probe_now() - t0;
  rec[2] = t0;
  if (worker == 0) t->work0 = w;
}

/* The end of a probe's description when every run of some measurement was disturbed ("; N of M
 * disturbed"): tl_probe_host writes it, a read of the cache looks for it to warn. */
#define TL_PROBE_DISTURBED " disturbed"

/* Seconds one run of t takes on 1 worker or on all of them; *work gets the total work, *ok 0
 * when the run was disturbed: a worker started late (after 10% of the run) or was off its CPU
 * for over 10% of its own time. A worker that finishes early (shared bandwidth is not shared
 * evenly) is not a disturbance. */
static double tl_probe_time(const tl_probe_state *st, tl_probe_task *t, int all, double *work, int *ok) {
  int n = all ? st->threads : 1;
  t->cpu = st->cpu;
  double t0 = tl_probe_now();
  if (n > 1) tl_pool_run(st->ctx->pool, n, tl_probe_pool_fn, t);
  else tl_probe_pool_fn(t, 0, 1);
  double dt = tl_probe_now() - t0;
  *work = t->work0 * n; /* every worker does the same work */
  *ok = 1;
  for (int w = 0; w < n && !(all && st->oversubscribed); w++) {
    const double *rec = st->cpu + 3 * w;
    if (rec[0] < 0.9 * rec[1] || rec[2] - t0 > 0.1 * dt) *ok = 0;
  }
  if (st->disturb) *ok = 0;
  return dt > 1e-9 ? dt : 1e-9;
}

/* Sorts a few doubles ascending (insertion sort). */
static void tl_probe_sort(double *v, int n) {
  for (int i = 1; i < n; i++) {
    double x = v[i];
    int j = i - 1;
    for (; j >= 0 && v[j] > x; j--) v[j + 1] = v[j];
    v[j + 1] = x;
  }
}

tl_probe_rate tl_probe_measure(tl_probe_state *st, tl_probe_task *t, int all) {
  double work, dt;
  int ok;
  /* Calibrate: grow reps until a run takes a tenth of a trial, then scale to a trial. The length
   * is worker 0's CPU time, which neither a late helper nor another process on the core
   * stretches. These runs also warm the caches, the clock and (all threads) wake the workers. */
  t->reps = 1;
  for (;;) {
    tl_probe_time(st, t, all, &work, &ok);
    dt = st->cpu[0] > 1e-9 ? st->cpu[0] : 1e-9;
    if (dt >= st->trial_s * 0.1 || t->reps >= ((int64_t)1 << 40)) break;
    double grow = st->trial_s * 0.15 / dt;
    if (grow > 100) grow = 100;
    if (grow < 2) grow = 2;
    t->reps = (int64_t)((double)t->reps * grow) + 1;
  }
  double scaled = (double)t->reps * st->trial_s / dt;
  t->reps = scaled < 1 ? 1 : (int64_t)scaled;

  /* Timed runs: disturbed ones are set aside and re-run, up to 3 x trials runs in all. */
  double rates[TL_PROBE_MAX_TRIALS], best_dropped = 0;
  int want = st->trials < TL_PROBE_MAX_TRIALS ? st->trials : TL_PROBE_MAX_TRIALS;
  int n = 0, nd = 0;
  int max_runs = tl_probe_now() < st->retry_until ? 3 * want : want;
  for (int run = 0; run < max_runs && n < want; run++) {
    dt = tl_probe_time(st, t, all, &work, &ok);
    if (ok) rates[n++] = work / dt;
    else if (work / dt > best_dropped) best_dropped = work / dt;
    if (!ok) nd++;
  }
  st->runs += n + nd;
  st->disturbed += nd;
  st->measurements++;
  tl_probe_rate r = {.kept = n, .disturbed = nd};
  if (n == 0) { /* every run disturbed: the best of them, flagged by kept == 0 */
    st->failed++;
    r.best = r.median = best_dropped;
    return r;
  }
  tl_probe_sort(rates, n);
  r.median = n % 2 ? rates[n / 2] : 0.5 * (rates[n / 2 - 1] + rates[n / 2]);
  r.best = rates[n - 1];
  r.spread = r.median > 0 ? (rates[n - 1] - rates[0]) / r.median : 0;
  return r;
}

/* Compute task body: the unit's kernel, `reps` iterations. */
static double tl_probe_compute_body(const tl_probe_task *t, int worker, int nworkers, int64_t reps) {
  return t->unit->run(reps);
}

/* "1.23 T" style number for notes. */
static const char *tl_probe_si(char *buf, size_t n, double v) {
  static const char *const pre[] = {"", "k", "M", "G", "T", "P"};
  int p = 0;
  while (v >= 1000 && p < 5) {
    v /= 1000;
    p++;
  }
  snprintf(buf, n, "%.3g %s", v, pre[p]);
  return buf;
}

/* Measures every unit of every level up to st->info.isa into m->units. */
static void tl_probe_compute(tl_probe_state *st, tl_machine *m) {
  for (int lv = 0; lv <= (int)st->info.isa; lv++) {
    if (tl_isa_usable((tl_isa)lv, st->info.cpu.features) != (tl_isa)lv) continue; /* avx2vnni without AVX-VNNI */
    const tl_probe_impl *impl = tl_probe_impl_at((tl_isa)lv);
    if (!impl) continue;
    for (int u = 0; u < impl->nunits && m->nunits < TL_MAX_UNITS; u++) {
      const tl_probe_unit *pu = &impl->units[u];
      tl_probe_task t;
      memset(&t, 0, sizeof t);
      t.body = tl_probe_compute_body;
      t.unit = pu;
      tl_probe_rate one = tl_probe_measure(st, &t, 0);
      tl_probe_rate all = st->threads > 1 ? tl_probe_measure(st, &t, 1) : one;
      tl_compute_unit *cu = &m->units[m->nunits++];
      snprintf(cu->name, sizeof cu->name, "%s", pu->name);
      cu->dtype = pu->dtype;
      cu->peak = all.best; /* a ceiling is the best sustained rate; the spread says how noisy */
      cu->peak_1t = one.best;
      cu->spread = all.spread > one.spread ? all.spread : one.spread;
      int dist = all.disturbed + (st->threads > 1 ? one.disturbed : 0);
      if (all.kept > 0)
        snprintf(cu->source, sizeof cu->source,
                 "probe: %.0f ms runs, best of %d all-thread (spread %.1f%%) and %d 1-thread (%.1f%%); %d disturbed",
                 st->trial_s * 1e3, all.kept, all.spread * 100, one.kept, one.spread * 100, dist);
      else
        snprintf(cu->source, sizeof cu->source,
                 "probe: %.0f ms runs; every all-thread run disturbed (best of %d kept, may be low); best of %d "
                 "1-thread (%.1f%%)",
                 st->trial_s * 1e3, all.disturbed, one.kept, one.spread * 100);
      char b1[32], b2[32];
      tl_probe_note(st, "%-12s %sop/s all threads, %sop/s 1 thread (spread %.1f%%)", pu->name,
                    tl_probe_si(b1, sizeof b1, all.best), tl_probe_si(b2, sizeof b2, one.best),
                    cu->spread * 100);
    }
  }
}

/* FNV-1a, 64 bits. */
static uint64_t tl_probe_hash(const char *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++) {
    h ^= (unsigned char)*s;
    h *= 0x100000001b3ull;
  }
  return h;
}

/* Copies s into out keeping [A-Za-z0-9.] and mapping runs of anything else to one '_'. */
static void tl_probe_sanitize(const char *s, char *out, size_t n) {
  size_t j = 0;
  for (; *s && j + 1 < n; s++) {
    char c = *s;
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.';
    if (ok) out[j++] = c;
    else if (j > 0 && out[j - 1] != '_') out[j++] = '_';
  }
  out[j] = 0;
}

/* The cache key (also tl_machine.cpu_key and the cache file's name): readable, file-name safe,
 * "<vendor>-<family>-<model>-<stepping>-<isa>-t<threads>-<hash>". The hash covers the brand and
 * the feature mask too, and the cache format version. */
static void tl_probe_key(const tl_ctx_info *in, char *key, size_t n) {
  char full[512], vendor[32];
  snprintf(full, sizeof full, "tilec-machine-2|%s|%s|%u|%u|%u|%u|%s|%d", in->cpu.vendor, in->cpu.brand,
           in->cpu.family, in->cpu.model, in->cpu.stepping, in->cpu.features, tl_isa_name(in->isa), in->threads);
  tl_probe_sanitize(in->cpu.vendor[0] ? in->cpu.vendor : "unknown", vendor, sizeof vendor);
  snprintf(key, n, "%s-%u-%u-%u-%s-t%d-%016llx", vendor, in->cpu.family, in->cpu.model, in->cpu.stepping,
           tl_isa_name(in->isa), in->threads, (unsigned long long)tl_probe_hash(full));
}

/* Measures this host into *m (already zeroed, key set). */
static tl_status tl_probe_host(tl_probe_state *st, tl_machine *m) {
  double t0 = tl_probe_now();
  tl_probe_note(st, "probing %s: %d threads%s, ISA paths up to %s%s",
                st->info.cpu.brand[0] ? st->info.cpu.brand : "this CPU", st->threads,
                st->oversubscribed ? " (more than the CPUs allowed)" : "", tl_isa_name(st->info.isa),
                st->quick ? " (quick)" : "");
  tl_probe_compute(st, m);
  tl_status s = tl_probe_memory(st, m);
  if (s != TL_OK) return s;
  double secs = tl_probe_now() - t0;
  time_t now = time(NULL);
  struct tm tm;
  char when[32] = "?";
  if (gmtime_r(&now, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", &tm);
  snprintf(m->name, sizeof m->name, "host");
  char dist[48] = "";
  if (st->failed) snprintf(dist, sizeof dist, "; %d of %d" TL_PROBE_DISTURBED, st->failed, st->measurements);
  tl_msg(m->description, sizeof m->description, "%.48s; %d threads, %s; probed %s in %.1f s%s%s",
         st->info.cpu.brand[0] ? st->info.cpu.brand : "unknown CPU", st->threads, tl_isa_name(st->info.isa), when,
         secs, st->quick ? " (quick)" : "", dist);
  m->cores = st->threads;
  m->measured = 1;
  tl_probe_note(st, "probe done in %.1f s (%d of %d timed runs disturbed by other work and re-run)", secs,
                st->disturbed, st->runs);
  if (st->failed)
    tl_probe_warn(st, "probe disturbed: other work held the CPUs in every run of %d of %d measurements (those "
                  "numbers may be low); on a quiet machine run tilec probe --force", st->failed, st->measurements);
  return TL_OK;
}

tl_status tl_machine_probe_opts(tl_ctx *ctx, const tl_probe_opts *opts, int force,
                                void (*progress)(const char *note, void *arg), void *arg, tl_machine *out) {
  if (!ctx) return tl_fail_tls(TL_ERR_INVALID, "tl_machine_probe: ctx is NULL");
  if (!out) return tl_ctx_fail(ctx, TL_ERR_INVALID, "tl_machine_probe: out is NULL");
  static const tl_probe_opts full;
  if (!opts) opts = &full;

  tl_probe_state st;
  memset(&st, 0, sizeof st);
  st.ctx = ctx;
  char warn_before[sizeof ctx->warn];
  memcpy(warn_before, ctx->warn, sizeof warn_before);
  tl_ctx_need_amx(ctx); /* AMX counts only with permission; may lower ctx's ISA (with a warning) */
  if (strcmp(warn_before, ctx->warn) != 0) tl_probe_warn(&st, "%s", ctx->warn);
  st.info = ctx->info;
  st.threads = tl_pool_threads(ctx->pool);
  st.quick = opts->quick != 0;
  st.disturb = opts->disturb != 0;
  st.trials = st.quick ? 3 : 7;
  st.trial_s = st.quick ? 0.008 : 0.02;
  st.progress = progress;
  st.arg = arg;
  st.retry_until = tl_probe_now() + (st.quick ? 4 : 15);
  /* More threads than CPUs: all-thread runs time-share by design, so none counts as disturbed. */
  st.oversubscribed = st.info.cpu.cpus_allowed > 0 && st.threads > st.info.cpu.cpus_allowed;

  tl_status s = TL_OK;
  tl_machine *m = tl_calloc(1, sizeof *m);
  st.cpu = tl_calloc((size_t)st.threads * 3, sizeof *st.cpu);
  if (!m || !st.cpu) {
    s = tl_ctx_fail(ctx, TL_ERR_NOMEM, "tl_machine_probe: out of memory");
    goto out;
  }
  tl_probe_key(&st.info, m->cpu_key, sizeof m->cpu_key);
  char path[1024];
  int plen = snprintf(path, sizeof path, "%s/machine-%s.json", st.info.cache_dir, m->cpu_key);
  int have_path = plen > 0 && (size_t)plen < sizeof path && st.info.cache_dir[0];
  char why[256];

  if (!force && have_path) {
    int r = tl_probe_cache_read(path, m->cpu_key, m, why, sizeof why);
    if (r == 1) {
      tl_probe_note(&st, "read the probe cache %s", path);
      /* a result measured under other work stands for every later caller: say so each time */
      const char *d = strstr(m->description, TL_PROBE_DISTURBED);
      if (d) { /* the description ends "; N of M disturbed" (tl_probe_host) */
        const char *n = d;
        while (n > m->description && n[-1] != ';') n--;
        while (*n == ' ') n++;
        tl_probe_warn(&st, "the cached probe %s was disturbed by other work (%.*s measurements; its ceilings may "
                      "be low): on a quiet machine run tilec probe --force", path, (int)(d - n), n);
      }
      goto done;
    }
    if (r < 0) {
      tl_probe_warn(&st, "probe cache %s ignored (%s); measured again", path, why);
      tl_probe_note(&st, "probe cache %s ignored (%s); measuring again", path, why); /* said before the wait */
    }
  }
  s = tl_probe_host(&st, m);
  if (s != TL_OK) goto out;
  if (!have_path) {
    tl_probe_warn(&st, "probe result not cached: cache dir '%s' is empty or too long", st.info.cache_dir);
  } else if (tl_probe_cache_write(path, m, why, sizeof why) != 0) {
    tl_probe_warn(&st, "probe result not cached: %s", why);
  } else {
    tl_probe_note(&st, "wrote %s", path);
  }
done:
  *out = *m;
  if (st.warn[0]) tl_ctx_warn(ctx, "%s", st.warn);
  tl_ctx_ok(ctx);
out:
  tl_free_mem(st.cpu);
  tl_free_mem(m);
  return s;
}

tl_status tl_machine_probe(tl_ctx *ctx, int force, void (*progress)(const char *note, void *arg), void *arg,
                           tl_machine *out) {
  return tl_machine_probe_opts(ctx, NULL, force, progress, arg, out);
}
