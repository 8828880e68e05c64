/* search.c — the tuner's search over a kernel's config space (tune_impl.h).
 *
 *   1. Score: every config of the space (or, past enum_max configs, those a beam search visits)
 *      goes through valid() and build(); survivors get a model time from the roofline bound of
 *      their plan's exact cost on the machine's peaks, adjusted for what the bound cannot see on
 *      a CPU: staging copies run on the computing core (a quarter of the smaller of compute and
 *      memory time is added), work that does not split evenly over the threads (the bound is
 *      divided by the load balance: mean / max work per thread, edge blocks included, as the
 *      kernel reports it), and a per-step cost of the executor (0.3 us).
 *   2. Time: the heuristic config first (the baseline every winner must beat), then the best by
 *      model, then the untimed neighbours (one parameter one step away) of the best measured,
 *      then further down the ranking — at most max_time_frac of the valid configs and within
 *      the budget. A candidate whose timed call takes over 2x the best so far is stopped early.
 *   3. Final round: the three fastest and the heuristic are re-timed interleaved (up to 3 rounds
 *      within the budget; the timing phase stops at 85% of it to leave room), and the fastest
 *      there wins (best of its calls: the least disturbed by other processes on a shared machine).
 *
 * Invariants: every built candidate is released before the next is built (one plan alive at a
 * time, so memory stays flat); the budget is checked before every timed call; nothing prints. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tune_impl.h"

#define TL_TUNE_STEP_S 0.3e-6 /* executor cost per grid step, per thread (model) */

/* One scored config. */
typedef struct tl_tune_cand {
  int16_t idx[TL_TUNE_MAX_PARAMS]; /* index of each value in its parameter's list */
  double score;                    /* model seconds; < 0: pruned */
  double time_s;                   /* measured; 0: not timed */
  int timed, stopped, heuristic;
} tl_tune_cand;

typedef struct tl_tune_state {
  tl_ctx *ctx;
  tl_tune_space *sp;
  const tl_tune_opts *o;
  tl_tune_cand *c;
  int64_t n, cap;
  double (*now)(void);
  double t0, deadline, best_s, min_rep_s;
  int64_t best, timed, max_timed, stopped;
  int budget_hit;
} tl_tune_state;

void tl_tune_space_free(tl_tune_space *space) {
  if (!space) return;
  if (space->free_user) space->free_user(space->user);
  tl_free_mem(space);
}

void tl_tune_cfg_format(const tl_tune_space *sp, const int64_t *cfg, char *buf, size_t n) {
  size_t off = 0;
  buf[0] = 0;
  for (int p = 0; p < sp->nparams && off < n; p++)
    off += (size_t)snprintf(buf + off, n - off, "%s%s=%lld", p ? " " : "", sp->params[p].name, (long long)cfg[p]);
}

int tl_tune_cfg_parse(const tl_tune_space *sp, const char *text, int64_t *cfg) {
  const char *s = text;
  while (*s) {
    while (*s == ' ') s++;
    if (!*s) break;
    const char *eq = strchr(s, '=');
    if (!eq || eq == s) return -1;
    char *end;
    long long v = strtoll(eq + 1, &end, 10);
    if (end == eq + 1 || (*end && *end != ' ')) return -1;
    for (int p = 0; p < sp->nparams; p++)
      if (strlen(sp->params[p].name) == (size_t)(eq - s) && !strncmp(sp->params[p].name, s, (size_t)(eq - s)))
        cfg[p] = v;
    s = end;
  }
  return 0;
}

/* The config of candidate c into cfg. */
static void tl_tune_cfg_of(const tl_tune_space *sp, const tl_tune_cand *c, int64_t *cfg) {
  for (int p = 0; p < sp->nparams; p++) cfg[p] = sp->params[p].values[c->idx[p]];
}

/* Model seconds of cfg, or -1 when valid() or build() prunes it. */
static double tl_tune_score(tl_tune_state *st, const int64_t *cfg) {
  tl_tune_space *sp = st->sp;
  char why[128];
  if (sp->valid && !sp->valid(sp->user, cfg, why, sizeof why)) return -1;
  if (sp->model) return sp->model(sp->user, cfg);
  void *cand = NULL;
  tl_tune_built b = {0};
  if (sp->build(sp->user, cfg, &cand, &b) != TL_OK) return -1;
  double score = -1;
  tl_bound bd;
  if (b.plan && st->o->machine && tl_roofline_bound(st->o->machine, b.plan, sp->dtype, &bd) == TL_OK) {
    double mem = 0;
    for (int l = 0; l < TL_MAX_LEVELS; l++) mem = fmax(mem, bd.level_s[l]);
    const int64_t T = st->ctx->info.threads, par = b.par_blocks > 0 ? b.par_blocks : 1;
    const double balance = b.balance > 0 ? fmin(1, b.balance) : (double)par / (double)(TL_CDIV(par, T) * T);
    score = (bd.seconds + 0.25 * fmin(bd.compute_s, mem)) / balance + (double)b.steps / (double)T * TL_TUNE_STEP_S;
  }
  sp->release(sp->user, cand);
  return score;
}

/* Appends a candidate (indices idx) scored now; returns its index or -1 when out of memory. */
static int64_t tl_tune_add(tl_tune_state *st, const int16_t *idx) {
  if (st->n == st->cap) {
    int64_t cap = st->cap ? 2 * st->cap : 256;
    tl_tune_cand *c = tl_calloc((size_t)cap, sizeof *c);
    if (!c) return -1;
    if (st->n) memcpy(c, st->c, (size_t)st->n * sizeof *c);
    tl_free_mem(st->c);
    st->c = c, st->cap = cap;
  }
  tl_tune_cand *c = &st->c[st->n];
  memset(c, 0, sizeof *c);
  memcpy(c->idx, idx, sizeof c->idx);
  int64_t cfg[TL_TUNE_MAX_PARAMS];
  tl_tune_cfg_of(st->sp, c, cfg);
  c->score = tl_tune_score(st, cfg);
  return st->n++;
}

/* Index of the candidate with these indices, or -1. */
static int64_t tl_tune_find(const tl_tune_state *st, const int16_t *idx) {
  for (int64_t i = 0; i < st->n; i++)
    if (!memcmp(st->c[i].idx, idx, sizeof st->c[i].idx)) return i;
  return -1;
}

/* Scores every config of the space. -1 when out of memory. */
static int tl_tune_enumerate(tl_tune_state *st) {
  const tl_tune_space *sp = st->sp;
  int16_t idx[TL_TUNE_MAX_PARAMS] = {0};
  for (;;) {
    if (tl_tune_add(st, idx) < 0) return -1;
    int p = sp->nparams - 1;
    while (p >= 0 && ++idx[p] == sp->params[p].nvalues) idx[p--] = 0;
    if (p < 0) return 0;
  }
}

/* Orders candidates by score (pruned last). */
static int tl_tune_by_score(const void *a, const void *b) {
  const tl_tune_cand *x = a, *y = b;
  double sx = x->score < 0 ? INFINITY : x->score, sy = y->score < 0 ? INFINITY : y->score;
  return (sx > sy) - (sx < sy);
}

/* Beam search over the index lattice: start from the heuristic and the corners/middle, expand
 * every beam member's neighbours (one parameter one or two steps away), keep the beam_width
 * best valid, until the beam stops changing or 64 rounds. */
static int tl_tune_beam(tl_tune_state *st, const int16_t *heur) {
  const tl_tune_space *sp = st->sp;
  const int width = st->o->beam_width > 0 ? st->o->beam_width : 8;
  int16_t seed[4][TL_TUNE_MAX_PARAMS] = {{0}};
  for (int p = 0; p < sp->nparams; p++) {
    seed[0][p] = heur[p];
    seed[1][p] = (int16_t)(sp->params[p].nvalues / 2);
    seed[2][p] = (int16_t)(sp->params[p].nvalues / 4);
    seed[3][p] = (int16_t)(sp->params[p].nvalues * 3 / 4);
  }
  for (int s = 0; s < 4; s++)
    if (tl_tune_find(st, seed[s]) < 0 && tl_tune_add(st, seed[s]) < 0) return -1;
  int64_t *beam = tl_calloc((size_t)width, sizeof *beam), *prev = tl_calloc((size_t)width, sizeof *prev);
  int rc = -1;
  if (!beam || !prev) goto out;
  for (int round = 0; round < 64; round++) {
    /* the beam: the width best valid candidates so far (selection by repeated minimum) */
    int nb = 0;
    for (; nb < width; nb++) {
      int64_t bi = -1;
      for (int64_t i = 0; i < st->n; i++) {
        if (st->c[i].score < 0) continue;
        int taken = 0;
        for (int j = 0; j < nb; j++) taken |= beam[j] == i;
        if (!taken && (bi < 0 || st->c[i].score < st->c[bi].score)) bi = i;
      }
      if (bi < 0) break;
      beam[nb] = bi;
    }
    if (round > 0 && !memcmp(beam, prev, (size_t)nb * sizeof *beam)) break;
    memcpy(prev, beam, (size_t)width * sizeof *beam);
    for (int j = 0; j < nb; j++) {
      for (int p = 0; p < sp->nparams; p++)
        for (int d = -2; d <= 2; d++) {
          if (!d) continue;
          int16_t idx[TL_TUNE_MAX_PARAMS];
          memcpy(idx, st->c[beam[j]].idx, sizeof idx);
          int v = idx[p] + d;
          if (v < 0 || v >= sp->params[p].nvalues) continue;
          idx[p] = (int16_t)v;
          if (tl_tune_find(st, idx) < 0 && tl_tune_add(st, idx) < 0) goto out;
        }
    }
  }
  rc = 0;
out:
  tl_free_mem(beam);
  tl_free_mem(prev);
  return rc;
}

/* Times a built candidate: one warm-up call, then calls until min_s and at least 3 timed (or 2
 * when the warm-up alone took over min_s / 2), stopping early when the warm-up took over
 * 2 x stop_s or two timed calls took over stop_s (> 0), or the deadline passes. Best call into *secs; *stopped = 1 when stopped early. 0 ok, -1 when
 * a call failed. */
static int tl_tune_measure(tl_tune_space *sp, void *cand, double (*now)(void), double min_s, double stop_s,
                           double deadline, double *secs, int *stopped) {
  double t = now();
  if (sp->run(sp->user, cand) != 0) return -1;
  double warm = now() - t, best = INFINITY, spent = 0;
  *stopped = 0;
  if (stop_s > 0 && warm > 2 * stop_s) { /* the first call also pays first-touch costs: 2x slack */
    *secs = warm, *stopped = 1;
    return 0;
  }
  const int min_reps = warm > min_s / 2 ? 2 : 3; /* and a stop needs two calls: see below */
  for (int r = 0; r < 1000; r++) {
    if (r >= min_reps && spent >= min_s) break;
    if (r >= 1 && now() > deadline) break;
    t = now();
    if (sp->run(sp->user, cand) != 0) return -1;
    double dt = now() - t;
    spent += dt;
    best = fmin(best, dt);
    if (stop_s > 0 && r >= 1 && best > stop_s) { /* two calls over 2x the best: not noise */
      *stopped = 1;
      break;
    }
  }
  *secs = best;
  return 0;
}

/* Times candidate i (build, measure, release) and updates the best. -1: out of budget. */
static int tl_tune_time(tl_tune_state *st, int64_t i) {
  tl_tune_space *sp = st->sp;
  tl_tune_cand *c = &st->c[i];
  if (c->timed) return 0;
  if (st->now() > st->deadline) {
    st->budget_hit = 1;
    return -1;
  }
  int64_t cfg[TL_TUNE_MAX_PARAMS];
  tl_tune_cfg_of(sp, c, cfg);
  void *cand = NULL;
  tl_tune_built b = {0};
  c->timed = 1;
  st->timed++;
  if (sp->build(sp->user, cfg, &cand, &b) != TL_OK) {
    c->score = -1;
    return 0;
  }
  double secs = 0;
  int stopped = 0;
  const double stop = st->o->exhaustive || st->best < 0 ? 0 : 2 * st->best_s;
  int r = tl_tune_measure(sp, cand, st->now, st->min_rep_s, stop, st->deadline, &secs, &stopped);
  sp->release(sp->user, cand);
  if (r != 0) {
    c->score = -1;
    return 0;
  }
  c->time_s = secs, c->stopped = stopped;
  st->stopped += stopped;
  if (!stopped && (st->best < 0 || secs < st->best_s)) st->best = i, st->best_s = secs;
  if (st->o->progress) {
    char note[TL_TUNE_CFG_TEXT + 96];
    tl_tune_cfg_format(sp, cfg, note, sizeof note);
    size_t l = strlen(note);
    snprintf(note + l, sizeof note - l, ": %.3f ms%s (best %.3f ms)", secs * 1e3, stopped ? " stopped" : "",
             st->best_s * 1e3);
    st->o->progress(st->o->arg, st->max_timed ? (double)st->timed / (double)st->max_timed : 1, note);
  }
  return 0;
}

/* Times the untimed valid neighbours of the best (nearest by model first) while allowed.
 * Returns -1 when the budget ran out. */
static int tl_tune_refine(tl_tune_state *st) {
  const tl_tune_space *sp = st->sp;
  for (int rounds = 0; rounds < 16 && st->best >= 0 && st->timed < st->max_timed; rounds++) {
    const int64_t center = st->best;
    int64_t nb[4 * TL_TUNE_MAX_PARAMS];
    int nn = 0;
    for (int p = 0; p < sp->nparams; p++)
      for (int d = -1; d <= 1; d += 2) {
        int16_t idx[TL_TUNE_MAX_PARAMS];
        memcpy(idx, st->c[center].idx, sizeof idx);
        int v = idx[p] + d;
        if (v < 0 || v >= sp->params[p].nvalues) continue;
        idx[p] = (int16_t)v;
        int64_t j = tl_tune_find(st, idx);
        if (j >= 0 && st->c[j].score >= 0 && !st->c[j].timed) nb[nn++] = j;
      }
    if (!nn) return 0;
    for (int a = 1; a < nn; a++) /* by model score, insertion sort */
      for (int b = a; b > 0 && st->c[nb[b]].score < st->c[nb[b - 1]].score; b--) {
        int64_t t = nb[b];
        nb[b] = nb[b - 1], nb[b - 1] = t;
      }
    for (int a = 0; a < nn && st->timed < st->max_timed; a++) {
      if (tl_tune_time(st, nb[a]) < 0) return -1;
      if (st->best != center) break; /* a new best: refine around it */
    }
    if (st->best == center) return 0;
  }
  return 0;
}

/* The final round: the three best measured candidates and the heuristic are built together and
 * re-timed interleaved, one call each per round, up to 3 rounds while the budget allows; each
 * gets the best of its final calls and the winner is chosen again on those alone. A lucky early
 * measurement on a busy machine cannot win this way. Nothing changes when no round fits. */
static void tl_tune_final(tl_tune_state *st, double deadline) {
  tl_tune_space *sp = st->sp;
  int64_t fin[4];
  void *cand[4] = {0};
  double fbest[4];
  int nf = 0, rounds = 0;
  for (; nf < 3; nf++) {
    int64_t bi = -1;
    for (int64_t i = 0; i < st->n; i++) {
      const tl_tune_cand *c = &st->c[i];
      int taken = 0;
      for (int j = 0; j < nf; j++) taken |= fin[j] == i;
      if (!taken && c->timed && !c->stopped && c->score >= 0 && c->time_s > 0 && (bi < 0 || c->time_s < st->c[bi].time_s))
        bi = i;
    }
    if (bi < 0) break;
    fin[nf] = bi;
  }
  for (int64_t i = 0; i < st->n && nf < 4; i++) {
    const tl_tune_cand *c = &st->c[i];
    int taken = 0;
    for (int j = 0; j < nf; j++) taken |= fin[j] == i;
    if (c->heuristic && !taken && c->timed && !c->stopped && c->score >= 0 && c->time_s > 0) fin[nf++] = i;
  }
  if (nf < 2) return;
  double sum = 0;
  for (int f = 0; f < nf; f++) {
    int64_t cfg[TL_TUNE_MAX_PARAMS];
    tl_tune_built b = {0};
    tl_tune_cfg_of(sp, &st->c[fin[f]], cfg);
    if (sp->build(sp->user, cfg, &cand[f], &b) != TL_OK) cand[f] = NULL;
    fbest[f] = INFINITY;
    sum += st->c[fin[f]].time_s;
  }
  for (; rounds < 3 && st->now() + sum < deadline; rounds++)
    for (int f = 0; f < nf; f++) {
      if (!cand[f]) continue;
      double t = st->now();
      if (sp->run(sp->user, cand[f]) != 0) {
        sp->release(sp->user, cand[f]);
        cand[f] = NULL;
        continue;
      }
      fbest[f] = fmin(fbest[f], st->now() - t);
    }
  int64_t best = -1;
  for (int f = 0; f < nf; f++) {
    if (cand[f]) sp->release(sp->user, cand[f]);
    if (!rounds || !isfinite(fbest[f])) continue;
    st->c[fin[f]].time_s = fbest[f];
    if (best < 0 || fbest[f] < st->best_s) best = fin[f], st->best_s = fbest[f];
  }
  if (best >= 0) st->best = best;
}

tl_status tl_tune_search(tl_ctx *ctx, tl_tune_space *sp, const tl_tune_opts *opts, tl_tune_result *out) {
  static const tl_tune_opts defaults;
  const tl_tune_opts *o = opts ? opts : &defaults;
  tl_tune_state st = {.ctx = ctx, .sp = sp, .o = o, .best = -1};
  tl_status s = TL_OK;
  memset(out, 0, sizeof *out);
  if (sp->nparams < 1 || sp->nparams > TL_TUNE_MAX_PARAMS || !sp->build || !sp->run || !sp->release)
    return tl_ctx_fail(ctx, TL_ERR_INVALID, "tune: space '%s' is incomplete", sp->kernel);
  if (!sp->model && !o->machine)
    return tl_ctx_fail(ctx, TL_ERR_INVALID, "tune: space '%s' needs a machine for its model", sp->kernel);
  int64_t size = 1;
  for (int p = 0; p < sp->nparams; p++) {
    if (sp->params[p].nvalues < 1 || sp->params[p].nvalues > TL_TUNE_MAX_VALUES)
      return tl_ctx_fail(ctx, TL_ERR_INVALID, "tune: parameter %s has %d values (1..%d)", sp->params[p].name,
                         sp->params[p].nvalues, TL_TUNE_MAX_VALUES);
    size *= sp->params[p].nvalues;
  }
  st.now = o->clock ? o->clock : tl_bench_now;
  st.t0 = st.now();
  const double budget = o->budget_s > 0 ? o->budget_s : 10;
  st.deadline = st.t0 + (o->exhaustive ? 1.0 : 0.85) * budget; /* the rest: the final round */
  const int64_t enum_max = o->enum_max > 0 ? o->enum_max : 4096;
  /* the heuristic's position (its values are in the lists when the kernel put them there) */
  int16_t heur[TL_TUNE_MAX_PARAMS] = {0};
  int heur_exact = 1;
  for (int p = 0; p < sp->nparams; p++) {
    int best = 0, found = 0;
    for (int v = 0; v < sp->params[p].nvalues; v++) {
      if (sp->params[p].values[v] == sp->heuristic[p]) best = v, found = 1;
      if (!found && llabs(sp->params[p].values[v] - sp->heuristic[p]) < llabs(sp->params[p].values[best] - sp->heuristic[p]))
        best = v;
    }
    heur[p] = (int16_t)best;
    heur_exact &= found;
  }
  out->beam = size > enum_max;
  if ((out->beam ? tl_tune_beam(&st, heur) : tl_tune_enumerate(&st)) != 0) {
    s = tl_ctx_fail(ctx, TL_ERR_NOMEM, "tune: out of memory scoring %s", sp->kernel);
    goto out;
  }
  out->space_size = size, out->scored = st.n;
  int64_t hi = heur_exact ? tl_tune_find(&st, heur) : -1;
  if (hi >= 0) st.c[hi].heuristic = 1;
  qsort(st.c, (size_t)st.n, sizeof *st.c, tl_tune_by_score);
  int64_t nvalid = 0;
  while (nvalid < st.n && st.c[nvalid].score >= 0) nvalid++;
  out->valid = nvalid;
  if (!nvalid) {
    s = tl_ctx_fail(ctx, TL_ERR_UNSUPPORTED, "tune: no valid config in %s's space for %s (%lld scored)", sp->kernel,
                    sp->key, (long long)st.n);
    goto out;
  }
  const double frac = o->max_time_frac > 0 ? o->max_time_frac : 0.15;
  st.max_timed = o->exhaustive ? nvalid : (int64_t)floor(frac * (double)nvalid);
  if (st.max_timed < 2) st.max_timed = nvalid < 2 ? nvalid : 2;
  st.min_rep_s = o->min_rep_s > 0 ? o->min_rep_s : fmin(0.1, fmax(0.004, budget / (double)st.max_timed / 4));
  /* 1. the heuristic, 2. the best 60% of the allowance by model, 3. refinement, 4. the rest */
  hi = -1;
  for (int64_t i = 0; i < nvalid; i++)
    if (st.c[i].heuristic) hi = i;
  if (hi >= 0 && tl_tune_time(&st, hi) < 0) goto done;
  const int64_t first = o->exhaustive ? nvalid : (st.max_timed * 6 + 9) / 10;
  for (int64_t i = 0; i < nvalid && st.timed < first; i++)
    if (tl_tune_time(&st, i) < 0) goto done;
  if (!o->exhaustive && tl_tune_refine(&st) < 0) goto done;
  for (int64_t i = 0; i < nvalid && st.timed < st.max_timed; i++)
    if (tl_tune_time(&st, i) < 0) goto done;
done:
  if (!o->exhaustive) tl_tune_final(&st, st.t0 + budget);
  if (st.best < 0) {
    s = tl_ctx_fail(ctx, TL_ERR_UNSUPPORTED, "tune: no candidate of %s for %s could be timed%s", sp->kernel, sp->key,
                    st.budget_hit ? " within the budget" : "");
    goto out;
  }
  tl_tune_cfg_of(sp, &st.c[st.best], out->best);
  out->best_s = st.best_s;
  for (int64_t i = 0; i < st.n; i++)
    if (st.c[i].heuristic && st.c[i].timed) out->heuristic_s = st.c[i].time_s;
  out->timed = st.timed, out->stopped = st.stopped, out->budget_hit = st.budget_hit;
  tl_ctx_ok(ctx);
out:
  out->seconds = st.now() - st.t0;
  tl_free_mem(st.c);
  return s;
}

tl_status tl_tune_time_config(tl_ctx *ctx, tl_tune_space *sp, const int64_t *cfg, double min_s, double *secs) {
  char why[128];
  if (sp->valid && !sp->valid(sp->user, cfg, why, sizeof why))
    return tl_ctx_fail(ctx, TL_ERR_INVALID, "tune: config not valid for %s: %s", sp->kernel, why);
  void *cand = NULL;
  tl_tune_built b = {0};
  tl_status s = sp->build(sp->user, cfg, &cand, &b);
  if (s != TL_OK) return s;
  int stopped = 0;
  int r = tl_tune_measure(sp, cand, tl_bench_now, min_s, 0, tl_bench_now() + 3600, secs, &stopped);
  sp->release(sp->user, cand);
  if (r != 0) return tl_ctx_fail(ctx, TL_ERR_INTERNAL, "tune: a run of %s failed", sp->kernel);
  tl_ctx_ok(ctx);
  return TL_OK;
}
