/* refine.c: temper refine MODEL --db FILE — choose each workload's schedule
 * by measuring the whole model.
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
#include <unistd.h>
#include "cli.h"
#include "target.h"
#include "tune.h"

typedef struct refine_opts {
  const char *model, *db;
  const char *params_dir;
  uint64_t seed;
  int threads, pairs, alternatives;
  double min_gain;          /* relative */
} refine_opts;

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

/* one compiled program of the model with its own graph and data */
typedef struct variant {
  temper_graph *g;
  model_data md;
  exec *x;
} variant;

static void variant_free(variant *v) {
  exec_destroy(v->x);
  cli_model_data_free(&v->md);
  temper_graph_destroy(v->g);
  memset(v, 0, sizeof *v);
}

/* sig: a chooser that takes the model's signature from this graph (and
 * then ignores earlier choices: refine starts from the records), or NULL */
static int variant_build(const refine_opts *o, temper_engine *e, temper_pool *pool, const pipeline_opts *po, db_chooser *sig,
                         variant *v) {
  memset(v, 0, sizeof *v);
  v->md = (model_data){.params_dir = o->params_dir, .seed = o->seed};
  if (cli_read_model(o->model, &v->g)) return 1;
  if (sig) {
    diag d = {.path = v->g->path, .text = v->g->text};
    if (db_chooser_set_model(sig, v->g, &d)) { fprintf(stderr, "%s\n", d.msg); return 1; }
    db_chooser_ignore_choices(sig);
  }
  if (cli_model_data(v->g, &v->md)) return 1;
  node *in_nodes[64];
  const float *in_vals[64];
  int n_in = 0;
  for (int i = 0; i < v->md.n_params && n_in < 64; i++)
    if (v->md.is_input[i]) in_nodes[n_in] = v->g->main->params[i], in_vals[n_in++] = v->md.values[i];
  if (cli_bind_and_optimize(v->g, &v->md, po)) return 1;
  diag d = {.path = v->g->path, .text = v->g->text};
  if (exec_create(e, v->g, 1, &v->x, &d)) { fprintf(stderr, "temper refine: %s\n", d.msg); return 1; }
  exec_share_pool(v->x, pool);
  for (int i = 0; i < v->x->n_inputs; i++)
    for (int j = 0; j < n_in; j++)
      if (v->x->inputs[i] == in_nodes[j]) exec_set_input(v->x, i, in_vals[j]);
  return 0;
}

static double time_once(exec *x) {
  double t0 = cli_now();
  exec_run(x);
  return cli_now() - t0;
}

/* base and candidate alternately, the order swapped every pair */
static void compare(exec *base, exec *cand, int pairs, paired_result *r) {
  double *tb = calloc((size_t)pairs, sizeof(double)), *tc = calloc((size_t)pairs, sizeof(double));
  if (!tb || !tc) { free(tb), free(tc); *r = (paired_result){0}; return; }
  exec_run(base), exec_run(cand);
  for (int p = 0; p < pairs; p++) {
    if (p % 2 == 0) tb[p] = time_once(base), tc[p] = time_once(cand);
    else tc[p] = time_once(cand), tb[p] = time_once(base);
  }
  tune_paired_compare(tb, tc, pairs, r);
  free(tb), free(tc);
}

/* the candidate computes what the base computes: every output within the
 * loosest tolerance a template is held to (Winograd F(6×6, 3×3): 2e-3 of
 * the output's largest magnitude) */
static int same_outputs(const exec *a, const exec *b, double *worst) {
  *worst = 0;
  if (a->n_outputs != b->n_outputs) return 0;
  for (int i = 0; i < a->n_outputs; i++) {
    double e = tune_rel_diff(exec_output(a, i), exec_output(b, i), shape_numel(&a->output_shapes[i]));
    if (!(e <= *worst)) *worst = e;
  }
  return *worst <= 2e-3;
}

static int usage(void) {
  fprintf(stderr, "usage: temper refine MODEL --db FILE [--threads N] [--pairs P] [--alternatives K] [--min-gain PCT]\n"
                  "                     [--params DIR] [--seed S]\n");
  return 2;
}

typedef struct order_item { int i; double t; } order_item;
static int by_time_desc(const void *a, const void *b) {
  double x = ((const order_item *)a)->t, y = ((const order_item *)b)->t;
  return (x < y) - (x > y);
}

/* the candidate against the base, twice: both runs must find it faster by
 * min_gain in most pairs (a winner of one noisy run is often a fluke) */
static int confirmed_better(exec *base, exec *cand, const refine_opts *o, paired_result *r) {
  compare(base, cand, o->pairs, r);
  if (!tune_paired_better(r, o->min_gain)) return 0;
  paired_result again;
  compare(base, cand, o->pairs, &again);
  int ok = tune_paired_better(&again, o->min_gain);
  r->gain_s = (r->gain_s + again.gain_s) / 2;
  r->rel = (r->rel + again.rel) / 2;
  r->wins += again.wins;
  r->n += again.n;
  return ok;
}

int cmd_refine(int argc, char **argv) {
  refine_opts o = {.seed = 1, .threads = 1, .pairs = 20, .alternatives = 4, .min_gain = 0.005};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--db") && v) o.db = v, i++;
    else if (!strcmp(a, "--threads") && v) o.threads = atoi(v), i++;
    else if (!strcmp(a, "--pairs") && v) o.pairs = atoi(v), i++;
    else if (!strcmp(a, "--alternatives") && v) o.alternatives = atoi(v), i++;
    else if (!strcmp(a, "--min-gain") && v) o.min_gain = atof(v) / 100, i++;
    else if (!strcmp(a, "--params") && v) o.params_dir = v, i++;
    else if (!strcmp(a, "--seed") && v) o.seed = strtoull(v, NULL, 10), i++;
    else if (a[0] == '-') { fprintf(stderr, "temper refine: unknown option '%s'\n", a); return usage(); }
    else if (!o.model) o.model = a;
    else return usage();
  }
  if (!o.model || !o.db) return usage();
  if (o.threads < 1 || o.threads > 256 || o.pairs < 2 || o.pairs > 100000 || o.alternatives < 1 || o.alternatives > REFINE_MAX_ALT) {
    fprintf(stderr, "temper refine: --threads expects 1..256, --pairs at least 2, --alternatives 1..%d\n", REFINE_MAX_ALT);
    return 2;
  }
  int rc = 1;
  temper_engine *e = NULL;
  db_chooser *dc = NULL;
  temper_pool *pool = NULL;
  temper_db *db = NULL;
  variant orig = {0}, base = {0}, cand = {0};
  assign *cur = calloc(1, sizeof *cur), *next = calloc(1, sizeof *next);
  db_choice *kept = NULL;
  order_item *ord = NULL;
  int n_kept = 0;
  diag d = {0};
  if (!cur || !next) goto out;
  if (engine_create(&e, &d)) { fprintf(stderr, "temper: %s\n", d.msg); goto out; }
  if (!(pool = temper_pool_create(o.threads))) { fprintf(stderr, "temper refine: out of memory\n"); goto out; }
  /* the records' choice (exact target: refine measures on this machine), not an earlier refine's */
  char cerr[4096];
  if (db_chooser_open(o.db, &e->target, o.threads, 1, &dc, cerr, sizeof cerr)) { fprintf(stderr, "temper refine: %s\n", cerr); goto out; }
  db_chooser_want_alternatives(dc, o.alternatives);
  pipeline_opts po = {.vec = e->target.vec, .choose = db_chooser_choose, .ctx = dc};
  if (variant_build(&o, e, pool, &po, dc, &orig)) goto out;
  cli_print_choices(dc);
  int n = db_chooser_count(dc);
  if (n > 256) { fprintf(stderr, "temper refine: the model has %d conv2d workloads; at most 256 are supported\n", n); goto out; }
  ord = calloc((size_t)n + 1, sizeof *ord);
  kept = calloc((size_t)n + 1, sizeof *kept);
  if (!ord || !kept) goto out;
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
  printf("refining %s (signature %s) at %d thread%s: %d alternatives of %d workloads, %d pairs each, keeping gains of at "
         "least %.2f%% found twice\n", o.model, db_chooser_model(dc), o.threads, o.threads > 1 ? "s" : "", n_cand, n, o.pairs,
         o.min_gain * 100);
  fflush(stdout);
  /* the program every alternative is compared against: the current choice */
  pipeline_opts pa = {.vec = e->target.vec, .choose = assign_choose, .ctx = cur};
  if (variant_build(&o, e, pool, &pa, NULL, &base)) goto out;
  double t0 = cli_now();
  for (int k = 0; k < n; k++) {
    int w = ord[k].i;
    chooser_entry ce;
    db_chooser_get(dc, w, &ce);
    for (int a = 0; a < ce.n_alt; a++) {
      *next = *cur;
      str_copy(next->cfg[w], sizeof next->cfg[0], ce.alt[a]);
      pipeline_opts pn = {.vec = e->target.vec, .choose = assign_choose, .ctx = next};
      if (variant_build(&o, e, pool, &pn, NULL, &cand)) goto out;
      paired_result r;
      int better = confirmed_better(base.x, cand.x, &o, &r);
      double worst;
      if (!same_outputs(base.x, cand.x, &worst)) {   /* never keep a program that computes something else */
        fprintf(stderr, "temper refine: %s with %s: the model's output differs from the current choice's by %.3g "
                        "(relative): skipped\n", ce.key, ce.alt[a], worst);
        better = 0;
      }
      printf("%-62.62s %s %+7.3f ms (%+.2f%%, won %d of %d pairs) %s\n", ce.key, better ? "kept" : "    ", -r.gain_s * 1e3,
             -r.rel * 100, r.wins, r.n, ce.alt[a]);
      fflush(stdout);
      if (!better) {
        variant_free(&cand);
        continue;
      }
      variant_free(&base);
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
  compare(orig.x, base.x, o.pairs * 2, &tot);
  printf("refined in %.0f s: %d of %d workloads changed; the model runs %.3f ms against %.3f ms with the records' choice "
         "(%+.2f%%, won %d of %d pairs)\n", cli_now() - t0, n_kept, n, (tot.base_s - tot.gain_s) * 1e3, tot.base_s * 1e3,
         -tot.rel * 100, tot.wins, tot.n);
  /* kept only if the whole still wins: interactions between the changes can undo them */
  int store = n_kept > 0 && tune_paired_better(&tot, o.min_gain < 0 ? o.min_gain : 0);
  if (n_kept && !store) printf("not kept: together the changes did not beat the records' choice\n");
  char err[4096];
  if (temper_db_open(o.db, tune_db_versions(), &db, err, sizeof err)) { fprintf(stderr, "temper: %s\n", err); goto out; }
  db_target ht;
  int64_t tid;
  target_host(&ht);
  char host[64] = "unknown";
  gethostname(host, sizeof host - 1);
  if (db_target_id(db, &ht, &tid) ||
      db_choices_replace(db, db_chooser_model(dc), tid, o.threads, kept, store ? n_kept : 0, host, TEMPER_VERSION)) {
    fprintf(stderr, "temper refine: %s\n", db_errmsg(db));
    goto out;
  }
  printf("%s: %d choice%s for this model at %d thread%s (temper build and temper run --db use them)\n", o.db, store ? n_kept : 0,
         (store ? n_kept : 0) == 1 ? "" : "s", o.threads, o.threads > 1 ? "s" : "");
  rc = 0;
out:
  variant_free(&orig);
  variant_free(&base);
  variant_free(&cand);
  db_chooser_close(dc);
  temper_db_close(db);
  engine_destroy(e);
  temper_pool_destroy(pool);
  free(ord);
  free(kept);
  free(cur);
  free(next);
  return rc;
}
