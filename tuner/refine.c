/* refine.c: `temper refine MODEL --db FILE` — choose each workload's
 * schedule by measuring the whole model.
 *
 * The tuner measures a kernel alone: its input hot, written by no one else.
 * In a network a kernel reads what the layer before wrote — on which core,
 * in which blocks, evicted by whose weights — and those costs belong to the
 * pair of layers, not to either record. So refine starts from the choice
 * `temper build` makes (choose.c), and for each workload, the largest share
 * of time first, compiles the model with each alternative in turn (the
 * fastest record of every other class: template, split over threads,
 * channel blocks), runs the two programs alternately, pair by pair, and
 * keeps the alternative when the median pairwise gain is at least
 * --min-gain and it won most pairs. The choices it keeps go into the
 * database for this model (its workload signature), target and thread
 * count, with the base choice they replace; `temper build` and `temper run
 * --db` use them while that base choice still stands. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "refine.h"
#include "target.h"
#include "tune.h"


/* the config of every workload, as text ("" for the default) */
typedef struct assign {
  int n;
  char key[256][256];
  char cfg[256][512];
} assign;

static int assign_choose(void *ctx, const char *key, const struct task_space *s, const struct conv_site *site,
                         struct sched_config *out, char *err, size_t n) {
  (void)site;
  const assign *a = ctx;
  for (int i = 0; i < a->n; i++)
    if (!strcmp(a->key[i], key)) {
      if (!a->cfg[i][0]) return 0;
      return config_parse(s, a->cfg[i], out, err, n) ? -1 : 1;
    }
  return 0;
}

/* the model compiled with po, on the shared pool; sig: a chooser that
 * takes the model's signature from this graph (and then ignores earlier
 * choices: refine starts from the records), or NULL */
static temper_status variant_build(const refine_opts *o, temper_engine *e, temper_pool *pool, const pipeline_opts *po,
                                   db_chooser *sig, program *v, diag *d) {
  temper_status s = program_read(v, o->model, d);
  if (!s && sig && !(s = db_chooser_set_model(sig, v->g, d))) db_chooser_ignore_choices(sig);
  if (!s) s = program_data(v, &o->data, d);
  if (!s) s = program_compile(v, e, po, 1, d);
  if (!s) exec_share_pool(v->x, pool);
  return s;
}

static double time_once(exec *x) {
  double t0 = data_now();
  exec_run(x);
  return data_now() - t0;
}

/* base and candidate alternately, the order swapped every pair. A
 * sequential stop (early): a candidate must win 60 % of the pairs
 * (tune_paired_better), so once it has lost more than 40 % of `pairs` it
 * cannot pass whatever the rest show, and the timing stops there; *stopped
 * says so. */
static void compare(exec *base, exec *cand, int pairs, int early, paired_result *r, int *stopped) {
  double *tb = calloc((size_t)pairs, sizeof(double)), *tc = calloc((size_t)pairs, sizeof(double));
  if (stopped) *stopped = 0;
  if (!tb || !tc) { free(tb), free(tc); *r = (paired_result){0}; return; }
  exec_run(base), exec_run(cand);
  int p = 0, lost = 0;
  for (; p < pairs; p++) {
    if (p % 2 == 0) tb[p] = time_once(base), tc[p] = time_once(cand);
    else tc[p] = time_once(cand), tb[p] = time_once(base);
    lost += tc[p] >= tb[p];
    if (early && lost * 10 > pairs * 4) {   /* wins ≤ pairs − lost < 60 %: decided */
      p++;
      if (stopped) *stopped = 1;
      break;
    }
  }
  tune_paired_compare(tb, tc, p, r);   /* stopped: wins < 60 % of the pairs timed too, a loss */
  free(tb), free(tc);
}

/* the candidate computes what the base computes: every output within the
 * loosest tolerance a template is held to (Winograd F(6×6, 3×3): 2e-3 of
 * the output's largest magnitude) */
static int same_outputs(const exec *a, const exec *b, double *worst) {
  *worst = 0;
  if (a->n_outputs != b->n_outputs) return 0;
  for (int i = 0; i < a->n_outputs; i++) {
    double e = data_rel_error(exec_output(b, i), exec_output(a, i), shape_numel(&a->output_shapes[i]), NULL);
    if (!(e <= *worst)) *worst = e;
  }
  return *worst <= 2e-3;
}

typedef struct order_item { int i; double t; } order_item;
static int by_time_desc(const void *a, const void *b) {
  double x = ((const order_item *)a)->t, y = ((const order_item *)b)->t;
  return (x < y) - (x > y);
}

/* the candidate against the base, twice: both runs must find it faster by
 * min_gain in most pairs (a winner of one noisy run is often a fluke) */
static int confirmed_better(exec *base, exec *cand, const refine_opts *o, paired_result *r, int *stopped) {
  compare(base, cand, o->pairs, o->min_gain >= 0, r, stopped);
  if (!tune_paired_better(r, o->min_gain)) return 0;
  paired_result again;
  compare(base, cand, o->pairs, o->min_gain >= 0, &again, NULL);
  int ok = tune_paired_better(&again, o->min_gain);
  r->gain_s = (r->gain_s + again.gain_s) / 2;
  r->rel = (r->rel + again.rel) / 2;
  r->wins += again.wins;
  r->n += again.n;
  return ok;
}

/* refine_run: see refine.h. One piece: the search is a single loop over
 * workloads and alternatives that keeps the current best program alive
 * (base) and compiles one candidate at a time; its state (cur, next, kept)
 * is shared across the loop, and splitting it would pass all of it around. */
temper_status refine_run(const refine_opts *o, refine_result *res, diag *d) {
  memset(res, 0, sizeof *res);
  FILE *log = o->log ? o->log : stdout;
  temper_engine *e = NULL;
  db_chooser *dc = NULL;
  temper_pool *pool = NULL;
  temper_db *db = NULL;
  program orig = {0}, base = {0}, cand = {0};
  assign *cur = calloc(1, sizeof *cur), *next = calloc(1, sizeof *next);
  db_choice *kept = NULL;
  order_item *ord = NULL;
  int n_kept = 0;
  temper_status s = TEMPER_OK;
  char err[4096];
  if (!cur || !next) { s = diag_fail(d, TEMPER_ENOMEM, "out of memory"); goto out; }
  if ((s = engine_create(&e, d))) goto out;
  if (!(pool = temper_pool_create(o->threads))) { s = diag_fail(d, TEMPER_ENOMEM, "out of memory"); goto out; }
  /* the records' choice (exact target: refine measures on this machine), not an earlier refine's */
  if ((s = db_chooser_open(o->db, &e->target, o->threads, 1, &dc, err, sizeof err))) { diag_fail(d, s, "%s", err); goto out; }
  db_chooser_want_alternatives(dc, o->alternatives);
  pipeline_opts po = {.vec = e->target.vec, .choose = db_chooser_choose, .ctx = dc};
  if ((s = variant_build(o, e, pool, &po, dc, &orig, d))) goto out;
  if (o->on_base) o->on_base(o->ctx, dc);
  int n = db_chooser_count(dc);
  if (n > 256) { s = diag_fail(d, TEMPER_EUNSUPPORTED, "the model has %d conv2d workloads; at most 256 are supported", n); goto out; }
  ord = calloc((size_t)n + 1, sizeof *ord);
  kept = calloc((size_t)n + 1, sizeof *kept);
  if (!ord || !kept) { s = diag_fail(d, TEMPER_ENOMEM, "out of memory"); goto out; }
  cur->n = n;
  int n_cand = 0;
  for (int i = 0; i < n; i++) {
    chooser_entry ce;
    db_chooser_get(dc, i, &ce);
    str_copy(cur->key[i], sizeof cur->key[i], ce.key);
    str_copy(cur->cfg[i], sizeof cur->cfg[i], ce.config ? ce.config : "");
    ord[i] = (order_item){i, ce.median_s * ce.count};
    n_cand += ce.n_alt;
  }
  qsort(ord, (size_t)n, sizeof *ord, by_time_desc);
  fprintf(log, "refining %s (signature %s) at %d thread%s: %d alternatives of %d workloads, %d pairs each, keeping gains of at "
          "least %.2f%% found twice\n", o->model, db_chooser_model(dc), o->threads, o->threads > 1 ? "s" : "", n_cand, n, o->pairs,
          o->min_gain * 100);
  fflush(log);
  /* the program every alternative is compared against: the current choice */
  pipeline_opts pa = {.vec = e->target.vec, .choose = assign_choose, .ctx = cur};
  if ((s = variant_build(o, e, pool, &pa, NULL, &base, d))) goto out;
  double t0 = data_now(), model_s = 0;
  for (int i = 0; i < n; i++) model_s += ord[i].t;
  for (int k = 0; k < n; k++) {
    int w = ord[k].i;
    chooser_entry ce;
    db_chooser_get(dc, w, &ce);
    /* A workload cannot save more than its own time and the layout
     * transforms beside it, bounded here by twice its time in the model:
     * if that is under the least gain kept, none of its alternatives can
     * win, and they are not timed */
    if (o->min_gain > 0 && ce.n_alt && 2 * ord[k].t < o->min_gain * model_s) {
      res->pruned += ce.n_alt;
      continue;
    }
    for (int a = 0; a < ce.n_alt; a++) {
      *next = *cur;
      str_copy(next->cfg[w], sizeof next->cfg[0], ce.alt[a]);
      pipeline_opts pn = {.vec = e->target.vec, .choose = assign_choose, .ctx = next};
      if ((s = variant_build(o, e, pool, &pn, NULL, &cand, d))) goto out;
      paired_result r;
      int stopped = 0;
      int better = confirmed_better(base.x, cand.x, o, &r, &stopped);
      res->stopped_early += stopped;
      double worst;
      if (!same_outputs(base.x, cand.x, &worst)) {   /* never keep a program that computes something else */
        fprintf(log, "%s with %s: the model's output differs from the current choice's by %.3g (relative): skipped\n", ce.key,
                ce.alt[a], worst);
        better = 0;
      }
      fprintf(log, "%-62.62s %s %+7.3f ms (%+.2f%%, won %d of %d pairs%s) %s\n", ce.key, better ? "kept" : "    ", -r.gain_s * 1e3,
              -r.rel * 100, r.wins, r.n, stopped ? ", stopped: it could no longer win" : "", ce.alt[a]);
      fflush(log);
      res->tried++;
      if (!better) {
        program_free(&cand);
        continue;
      }
      program_free(&base);
      base = cand;
      memset(&cand, 0, sizeof cand);
      *cur = *next;
      int slot = -1;   /* a later alternative of the same workload replaces an earlier one */
      for (int j = 0; j < n_kept; j++)
        if (!strcmp(kept[j].workload, ce.key)) slot = j;
      if (slot < 0) slot = n_kept++;
      db_choice *ch = &kept[slot];
      double before = ch->workload[0] ? ch->gain_s : 0;   /* new slots are zeroed */
      memset(ch, 0, sizeof *ch);
      str_copy(ch->workload, sizeof ch->workload, ce.key);
      str_copy(ch->config, sizeof ch->config, ce.alt[a]);
      str_copy(ch->replaces, sizeof ch->replaces, ce.config ? ce.config : "");
      ch->gain_s = before + r.gain_s;
      str_copy(ch->tmpl, sizeof ch->tmpl, ce.alt_tmpl[a]);
      ch->tmpl_version = ce.alt_version[a];
    }
  }
  paired_result tot;
  compare(orig.x, base.x, o->pairs * 2, 0, &tot, NULL);
  res->workloads = n;
  res->changed = n_kept;
  res->seconds = data_now() - t0;
  res->base_s = tot.base_s;
  res->refined_s = tot.base_s - tot.gain_s;
  res->rel = -tot.rel;
  res->wins = tot.wins;
  res->pairs = tot.n;
  /* kept only if the whole still wins: interactions between the changes can undo them */
  res->stored = n_kept > 0 && tune_paired_better(&tot, o->min_gain < 0 ? o->min_gain : 0) ? n_kept : 0;
  if ((s = temper_db_open(o->db, tune_db_versions(), &db, err, sizeof err))) { diag_fail(d, s, "%s", err); goto out; }
  db_target ht;
  int64_t tid;
  target_host(&ht);
  char host[64] = "unknown";
  gethostname(host, sizeof host - 1);
  if (db_target_id(db, &ht, &tid) || db_choices_replace(db, db_chooser_model(dc), tid, o->threads, kept, res->stored, host, TEMPER_VERSION))
    s = diag_fail(d, TEMPER_EDB, "%s", db_errmsg(db));
out:
  program_free(&orig);
  program_free(&base);
  program_free(&cand);
  db_chooser_close(dc);
  temper_db_close(db);
  engine_destroy(e);
  temper_pool_destroy(pool);
  free(ord);
  free(kept);
  free(cur);
  free(next);
  return s;
}
