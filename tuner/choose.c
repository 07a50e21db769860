/* choose.c: the schedule of every conv2d from a tuning database — the
 * choice `temper build` makes and `temper run --db` repeats: the best usable
 * record for this machine (graded target matching), the template versions
 * in force, the thread count (or the nearest measured), weighing the layout
 * transforms and cross-core reads a config would add; the template's
 * default where there is none. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/stat.h>
#include "log.h"
#include "search.h"
#include "choose.h"
#include "target.h"
#include "tune.h"

typedef struct choice {
  char key[256];
  int count;               /* conv2d nodes of this workload */
  double flops;            /* per occurrence */
  int found;               /* a record was used */
  int threads;             /* the record's thread count */
  double median_s;
  char config[512];
  int stale;               /* records of older template versions, ignored */
  int unusable;            /* records whose config today's space does not hold */
  int default_unmeasured;  /* records, but none of today's default config (tuned with other defaults) */
  double fastest_s;        /* the fastest record, when layout picked another */
  int level;               /* how the records' target matched */
  int pretuned;            /* 1 + the shipped log the record came from; 0: the user's database */
  int predicted;           /* no record anywhere: the cost model's pick (config), not measured */
  int in_context;          /* a choice of `temper refine` replaced the records' pick */
  int default_moved;       /* ... choosing a default that is not the site's now: today's default runs instead */
  double gain_s;           /* ... saving this much in the whole model */
  char refined_at[32];
  char replaced[512];      /* the records' pick it replaced */
  int n_alt;               /* alternatives for `temper refine`: the best record of other classes */
  char alt[REFINE_MAX_ALT][512];
  double alt_s[REFINE_MAX_ALT];
  char alt_tmpl[REFINE_MAX_ALT][32];   /* the alternative record's template and version */
  int alt_version[REFINE_MAX_ALT];
  int def_alt;             /* 1 + the default config's place among alt, 0: not there */
} choice;

enum { LEVEL_EXACT = TARGET_EXACT, LEVEL_SUBSET = TARGET_SUBSET, LEVEL_COUNT = TARGET_LEVEL_COUNT };

/* shipped pre-tuned logs: each read into a database of its own in memory */
enum { PRETUNED_MAX = 16 };
typedef struct pretuned_log {
  char path[4096];
  temper_db *db;
  int64_t *targets[LEVEL_COUNT];
  int n_targets[LEVEL_COUNT];
} pretuned_log;

struct db_chooser {
  temper_db *db;
  int64_t *targets[LEVEL_COUNT];   /* database targets at each level of match */
  int n_targets[LEVEL_COUNT];
  pretuned_log pre[PRETUNED_MAX];  /* where db has nothing for a workload */
  int n_pre;
  int predict;             /* where nothing has a record: ask the cost model trained on the logs */
  int rows_read;           /* the logs' records read into rows (at the first such workload) */
  tune_rows rows;
  cg_target target;
  int max_level;           /* --match exact: LEVEL_EXACT */
  int threads;
  int want_alt;            /* alternatives to collect per workload (refine) */
  char model[24];          /* the model's signature (db_chooser_set_model), "" if not set */
  db_choice *choices;      /* refine's choices for it at the exact target and this thread count */
  int n_choices;
  int stale_choices;       /* choices whose records' pick changed since */
  int ignoring;            /* refine itself: choices not applied, no hint to refine */
  choice *c;
  int n, cap;
};

static choice *choice_for(db_chooser *dc, const char *key) {
  for (int i = 0; i < dc->n; i++)
    if (!strcmp(dc->c[i].key, key)) return &dc->c[i];
  if (dc->n == dc->cap) {
    dc->cap = dc->cap ? dc->cap * 2 : 32;
    choice *nc = realloc(dc->c, sizeof(choice) * (size_t)dc->cap);
    if (!nc) return NULL;
    dc->c = nc;
  }
  choice *c = &dc->c[dc->n++];
  memset(c, 0, sizeof *c);
  str_copy(c->key, sizeof c->key, key);
  return c;
}

static int pick_at_level(db_chooser *dc, temper_db *db, int64_t *const *targets, const int *n_targets, choice *c, int lv,
                         const char *key, const struct task_space *s, const conv_site *site, struct sched_config *out);

/* What makes two configs worth measuring against each other in context:
 * the template, how the kernel splits over threads, and the channel blocks
 * it reads and writes (so the layout transforms around it). */
static int64_t config_class(const struct task_space *s, const struct sched_config *c) {
  conv_layouts l;
  config_layouts(s, c, -1, &l);
  return (((int64_t)c->tmpl * 2 + config_splits_rows(s, c)) * 4096 + l.in_blk) * 4096 + l.out_blk;
}

/* refine's choice for this workload, unless the records changed since
 * (below), if it is itself still a record (or the default config at this
 * site, which refine may choose without a record): its config instead.
 * Refine chooses among records and the site's default, so a choice of the
 * same template version with no record that is not the site's default now
 * was a default: an older temper's, or the site's at another producer
 * block (a depthwise default takes its producer's block and has no record
 * of its own). Refine found the default better in the whole model than the
 * records' pick, and the default now is what an untuned build runs, so the
 * build runs it and says so. It used to drop such a choice and run the
 * records' pick, which refine had found slower.
 * The records changed since when a record measured after the choice beats
 * the config refine replaced (any later record, if that config has no
 * record). Not "the records' pick is no longer what refine replaced": that
 * pick depends on the neighbours' blocks, and a build that applies refine's
 * choice to a producer moves its consumer's pick — MobileNetV2's refine on
 * Zen 5 had 4 of its 29 choices ignored so, each a 1×1 after a depthwise
 * conv2d whose choice changed its output block. */
static void apply_choice(db_chooser *dc, choice *c, const char *key, const struct task_space *s, const conv_site *site,
                         struct sched_config *out, const db_record *recs, int nr) {
  for (int i = 0; i < dc->n_choices; i++) {
    const db_choice *ch = &dc->choices[i];
    if (strcmp(ch->workload, key)) continue;
    sched_config cfg, def;
    char perr[256];
    int rec = -1, parsed = !config_parse(s, ch->config, &cfg, perr, sizeof perr), beaten = 0;
    double replaced_s = 0;
    for (int k = 0; k < nr; k++) {
      if (rec < 0 && !strcmp(recs[k].config, ch->config)) rec = k;
      if (replaced_s <= 0 && !strcmp(recs[k].config, ch->replaces)) replaced_s = recs[k].median_s;
    }
    for (int k = 0; k < nr; k++)
      if (strcmp(recs[k].measured_at, ch->measured_at) > 0 && (replaced_s <= 0 || recs[k].median_s < replaced_s)) beaten = 1;
    config_default_at(s, site->in_block, 1, &def);
    int64_t def_idx = space_index(s, &def);
    int unmeasured_default = rec < 0 && parsed && space_index(s, &cfg) == def_idx;   /* refine measured it in the model */
    if (beaten || tune_tmpl_version(ch->tmpl) != ch->tmpl_version || !parsed) {
      dc->stale_choices++;
      return;
    }
    if (rec < 0 && !unmeasured_default) {   /* a default, not the site's now: the default now (and its record, if any) */
      cfg = def;
      c->default_moved = 1;
      for (int k = 0; k < nr && rec < 0; k++)
        if (recs[k].config_index == def_idx) rec = k;
    }
    *out = cfg;
    c->in_context = 1;
    c->gain_s = ch->gain_s;
    str_copy(c->refined_at, sizeof c->refined_at, ch->measured_at);
    str_copy(c->replaced, sizeof c->replaced, c->config);
    if (c->default_moved) config_json(s, &cfg, c->config, sizeof c->config);
    else str_copy(c->config, sizeof c->config, ch->config);
    c->median_s = rec >= 0 ? recs[rec].median_s : 0;   /* 0: the default, no record of it here */
    return;
  }
}

/* the fastest record of each class but the chosen config's, within
 * REFINE_SLOWER of the fastest record: first one per (template, split over
 * threads) — what a record alone cannot value — then per channel blocks;
 * recs are sorted fastest first. Before them the default config (what an
 * untuned build runs, here), however slow its record: a record alone can
 * undervalue it (one measured by an older template of the same version, a
 * kernel whose neighbours it suits), and a tuned build should not run
 * slower than an untuned one without the whole model having said so —
 * MobileNetV2 at two threads ran 3.16 ms tuned against 2.78 untuned on Zen 5
 * before refine weighed the defaults. */
static void add_alt(choice *c, const char *config, const char *tmpl, int version, double median_s) {
  str_copy(c->alt[c->n_alt], sizeof c->alt[0], config);
  str_copy(c->alt_tmpl[c->n_alt], sizeof c->alt_tmpl[0], tmpl);
  c->alt_version[c->n_alt] = version;
  c->alt_s[c->n_alt++] = median_s;
}

static void collect_alternatives(db_chooser *dc, choice *c, const struct task_space *s, const conv_site *site,
                                 const struct sched_config *chosen, const db_record *recs, int nr) {
  sched_config def;
  config_default_at(s, site->in_block, 1, &def);
  int64_t def_idx = space_index(s, &def);
  if (!c->def_alt && def_idx != space_index(s, chosen) && c->n_alt < dc->want_alt) {
    int rec = -1;
    for (int i = 0; i < nr && rec < 0; i++) {
      sched_config cfg;
      char perr[256];
      if (!config_parse(s, recs[i].config, &cfg, perr, sizeof perr) && space_index(s, &cfg) == def_idx) rec = i;
    }
    c->def_alt = c->n_alt + 1;
    if (rec >= 0) add_alt(c, recs[rec].config, recs[rec].tmpl, recs[rec].tmpl_version, recs[rec].median_s);
    else {   /* no record of it: a depthwise conv2d's default takes its producer's block, which the
                tuner (measuring the default for an input of its own block) never saw; refine
                measures it in the model all the same */
      char text[512];
      config_json(s, &def, text, sizeof text);
      add_alt(c, text, tmpl_names[def.tmpl], tmpl_versions[def.tmpl], 0);
    }
  }
  int64_t seen[64];
  for (int pass = 0; pass < 2; pass++) {
    int64_t coarse = pass == 0 ? 4096 * 4096 : 1;   /* pass 0 compares template and split only */
    int n_seen = 0;
    seen[n_seen++] = config_class(s, chosen) / coarse;
    for (int a = 0; a < c->n_alt && n_seen < 64; a++) {   /* what pass 0 took */
      sched_config cfg;
      char perr[256];
      if (!config_parse(s, c->alt[a], &cfg, perr, sizeof perr)) seen[n_seen++] = config_class(s, &cfg) / coarse;
    }
    for (int i = 0; i < nr && c->n_alt < dc->want_alt && c->n_alt < REFINE_MAX_ALT; i++) {
      if (recs[i].median_s > recs[0].median_s * REFINE_SLOWER) break;
      sched_config cfg;
      char perr[256];
      if (config_parse(s, recs[i].config, &cfg, perr, sizeof perr)) continue;
      int64_t k = config_class(s, &cfg) / coarse;
      int dup = 0;
      for (int j = 0; j < n_seen; j++) dup |= seen[j] == k;
      if (dup || n_seen == 64) continue;
      seen[n_seen++] = k;
      add_alt(c, recs[i].config, recs[i].tmpl, recs[i].tmpl_version, recs[i].median_s);
    }
  }
}

typedef struct pre_walk { const pretuned_log *pl; int max_level; db_record_fn fn; void *ctx; } pre_walk;

/* a record of a log whose target matches this machine, to w->fn */
static temper_status pre_record(void *ctx, const db_record *r, const char *op, const char *desc, double flops) {
  pre_walk *w = ctx;
  for (int lv = 0; lv <= w->max_level; lv++)
    for (int k = 0; k < w->pl->n_targets[lv]; k++)
      if (w->pl->targets[lv][k] == r->target_id) return w->fn(w->ctx, r, op, desc, flops);
  return TEMPER_OK;
}

static temper_status rows_of_record(void *ctx, const db_record *r, const char *op, const char *desc, double flops) {
  (void)op, (void)desc, (void)flops;
  return tune_rows_add(ctx, r);
}

/* the cost model, trained once on every record of the logs that match this
 * machine, picks the config it predicts fastest in the workload's space
 * (the tuner's xgb search with no measurement of its own: its first pick) */
static int predict_config(db_chooser *dc, const struct task_space *s, struct sched_config *out) {
  if (!dc->rows_read) {
    dc->rows_read = 1;
    dc->rows.vec = s->vec;
    if (db_chooser_foreach_pretuned(dc, rows_of_record, &dc->rows)) return 0;
  }
  if (dc->rows.n < 16) return 0;
  search sr;
  search_init(&sr, SEARCH_XGB, s, 1);
  search_set_transfer(&sr, dc->rows.x, dc->rows.y, dc->rows.n, dc->rows.groups, dc->rows.ng);
  int64_t idx = -1;
  int got = search_next(&sr, &idx, 1) == 1 && idx >= 0 && !space_config(s, idx, out) && space_valid(s, out);
  search_free(&sr);
  return got;
}

/* the best usable record: exact target first, then other levels of match */
int db_chooser_choose(void *ctx, const char *key, const struct task_space *s, const struct conv_site *site, struct sched_config *out, char *err, size_t n) {
  db_chooser *dc = ctx;
  choice *c = choice_for(dc, key);
  if (!c) { snprintf(err, n, "out of memory"); return -1; }
  c->count++;
  c->flops = workload_flops(&s->w);
  if (c->count > 1) {   /* decided at the first occurrence */
    if (!c->found) return 0;
    return config_parse(s, c->config, out, err, n) ? -1 : 1;
  }
  for (int lv = 0; dc->db && lv <= dc->max_level; lv++) {
    for (int k = 0; k < dc->n_targets[lv]; k++) c->stale += db_count_stale(dc->db, key, dc->targets[lv][k]);
    if (pick_at_level(dc, dc->db, dc->targets, dc->n_targets, c, lv, key, s, site, out)) return 1;
  }
  /* nothing of the user's: the shipped logs, in order, each at every level */
  for (int p = 0; p < dc->n_pre; p++)
    for (int lv = 0; lv <= dc->max_level; lv++)
      if (pick_at_level(dc, dc->pre[p].db, dc->pre[p].targets, dc->pre[p].n_targets, c, lv, key, s, site, out)) {
        c->pretuned = 1 + p;
        return 1;
      }
  if (dc->predict && predict_config(dc, s, out)) {
    c->predicted = 1;
    config_json(s, out, c->config, sizeof c->config);
    return 1;
  }
  return 0;
}

/* the records of the targets at one level of match, at the build's thread
 * count or the nearest measured; the fastest counting a layout transform */
static int pick_at_level(db_chooser *dc, temper_db *db, int64_t *const *targets, const int *n_targets, choice *c, int lv,
                         const char *key, const struct task_space *s, const conv_site *site, struct sched_config *out) {
  int own = db == dc->db;   /* refine's choices and alternatives are the user's database's */
  /* a layout transform reads and writes a tensor (8 bytes a float) at about
   * 60 GB/s — the rate the vector-copy schedule of layout_transform reaches
   * in ResNet-50 in sequence, from L2 (0.01–0.05 ms each, `temper run
   * --profile`): one on the input when the config's input block differs from
   * what the producer writes, and, likely, one on the output when its block
   * differs from the default block the neighbours use */
  const double transform_bytes_per_s = 60e9;
  double t_transform = (double)site->in_floats * 8 / transform_bytes_per_s, best_cost = 0;
  const conv_workload *w = &s->w;
  double t_out = (double)(w->N * w->K * workload_out(w, 2) * workload_out(w, 3)) * 8 / transform_bytes_per_s;
  /* at several threads, a kernel split over output channels reads every
   * input channel, (T-1)/T of them from the other cores' caches, when the
   * producer split its rows (conv_split_rows): ~1.5 GB/s measured on
   * ResNet-50 at two threads (`temper run --profile`, a 1×1 conv of stage 2:
   * 1.67 ms in sequence, 0.54 ms alone), which the tuner's runner, feeding
   * one hot input, never sees */
  double t_remote = (double)site->in_floats * 4 * (dc->threads - 1) / dc->threads / 1.5e9;
  /* a config that breaks a join the pipeline would make with its producer
   * or its consumer (site->join_loss) pays the round trip the joined
   * kernel saves: the tensor between them written and read again, charged
   * as a layout transform of it (the same bytes). Records time each conv2d
   * alone, so without this the fastest record could break a join that
   * saves more: MobileNetV2's tuned build at one thread on Zen 3 gave two
   * 14×14×576 depthwise layers 32-channel blocks after a 24-channel expand
   * (23 µs alone against 28 for the best with 24) and lost their joins */
  const double join_s_per_float = 8 / transform_bytes_per_s;
  sched_config def;
  config_default(s, &def);
  conv_layouts ldef;
  config_layouts(s, &def, -1, &ldef);
  int found = 0;
  for (int k = 0; k < n_targets[lv]; k++) {
    int64_t tid = targets[lv][k];
    int *thr = NULL, nt = 0, use = dc->threads, have = 0;
    db_threads_measured(db, key, tid, &thr, &nt);
    for (int i = 0; i < nt; i++) have |= thr[i] == use;
    if (!have && nt) {
      use = thr[0];
      for (int i = 1; i < nt; i++)
        if (abs(thr[i] - dc->threads) < abs(use - dc->threads)) use = thr[i];
    }
    free(thr);
    db_record *recs = NULL;
    int nr = 0;
    if (!nt || db_ok_records(db, key, tid, use, &recs, &nr)) { free(recs); continue; }
    char perr[256];
    for (int i = 0; i < nr && i < 64; i++) {
      sched_config cfg;
      if (config_parse(s, recs[i].config, &cfg, perr, sizeof perr)) { c->unusable++; continue; }
      conv_layouts l;
      config_layouts(s, &cfg, site->in_block, &l);
      int free_read = l.in_blk == site->in_block;   /* no transform before it */
      double cost = recs[i].median_s + (free_read ? 0 : t_transform) + (l.out_blk == ldef.out_blk ? 0 : t_out);
      if (site->join_loss) cost += (double)site->join_loss(site, s, &cfg) * join_s_per_float;
      if (dc->threads > 1 && conv_split_rows(s) && !config_splits_rows(s, &cfg))
        cost += t_remote;   /* splits over channels where the producer split over rows */
      if (!found || cost < best_cost) {
        found = 1;
        best_cost = cost;
        *out = cfg;
        c->threads = use;
        c->median_s = recs[i].median_s;
        str_copy(c->config, sizeof c->config, recs[i].config);
      }
      if (!c->fastest_s || recs[i].median_s < c->fastest_s) c->fastest_s = recs[i].median_s;
    }
    if (own && found && dc->want_alt && lv == LEVEL_EXACT) collect_alternatives(dc, c, s, site, out, recs, nr);
    if (own && found && lv == LEVEL_EXACT && use == dc->threads) apply_choice(dc, c, key, s, site, out, recs, nr);
    /* The tuner measures the default config first, so records without
     * one of today's default were made with other defaults (an older
     * temper's), and so may refine's choices be: where the build then
     * runs another config than an untuned build would, the report says
     * so; the choice stands. (A depthwise default takes its producer's
     * block, which the tuner never measures: not counted.) */
    int64_t def_idx = space_index(s, &def);
    if (own && found && lv == LEVEL_EXACT && use == dc->threads && def.tmpl != TMPL_DEPTHWISE && space_index(s, out) != def_idx) {
      int have_def = 0;
      for (int i = 0; i < nr && !have_def; i++) have_def = recs[i].config_index == def_idx;
      c->default_unmeasured = !have_def;
    }
    free(recs);
  }
  if (found) {
    c->found = 1;
    c->level = lv;
  }
  return found;
}

static temper_status match_targets(temper_db *db, int64_t **targets, int *n_targets, const cg_target *t) {
  db_target_row *rows = NULL;
  int n = 0;
  temper_status s = db_targets(db, &rows, &n);
  if (s) return s;
  for (int lv = 0; lv < LEVEL_COUNT; lv++)
    if (!(targets[lv] = calloc((size_t)n + 1, sizeof(int64_t)))) s = TEMPER_ENOMEM;
  for (int i = 0; !s && i < n; i++) {
    int lv = target_match(&rows[i].t, t);
    if (lv >= 0) targets[lv][n_targets[lv]++] = rows[i].id;
  }
  free(rows);
  return s;
}

temper_status db_chooser_open(const char *dbpath, const cg_target *t, int threads, int exact, db_chooser **out, char *err, size_t n) {
  *out = NULL;
  if (dbpath && !db_is_url(dbpath) && access(dbpath, F_OK)) {
    snprintf(err, n, "%s: no such database (tune first, or leave out --db for the default configs)", dbpath);
    return TEMPER_EINVAL;
  }
  db_chooser *dc = calloc(1, sizeof *dc);
  if (!dc) { snprintf(err, n, "out of memory"); return TEMPER_ENOMEM; }
  dc->threads = threads;
  dc->max_level = exact ? LEVEL_EXACT : LEVEL_SUBSET;
  temper_status s = TEMPER_OK;
  dc->target = *t;
  if (dbpath && !(s = temper_db_open(dbpath, tune_db_versions(), &dc->db, err, n)) &&
      (s = match_targets(dc->db, dc->targets, dc->n_targets, t)))
    snprintf(err, n, "%s", s == TEMPER_ENOMEM ? "out of memory" : db_errmsg(dc->db));
  if (s) {
    db_chooser_close(dc);
    return s;
  }
  *out = dc;
  return TEMPER_OK;
}

/* the model's conv2d workloads in order, hashed: what refine's choices
 * belong to (weights do not matter, the sequence of layers does) */
temper_status db_chooser_set_model(db_chooser *dc, temper_graph *g, diag *d) {
  temper_status s = typeinfer(g, d);
  if (s) return s;
  arena scratch = {0};
  int n = 0;
  node **order = ir_topo(&scratch, g->main->body, &n);
  if (!order && n) { arena_free(&scratch); return diag_fail(d, TEMPER_ENOMEM, "out of memory"); }
  uint64_t h = DATA_HASH_INIT;
  for (int i = 0; i < n; i++) {
    conv_workload w;
    if (workload_of(order[i], &w)) continue;
    char key[256];
    workload_key(&w, key, sizeof key);
    h = data_hash(key, strlen(key), h);
    h = data_hash("\n", 1, h);
  }
  arena_free(&scratch);
  snprintf(dc->model, sizeof dc->model, "%016llx", (unsigned long long)h);
  free(dc->choices);
  dc->choices = NULL;
  dc->n_choices = 0;
  for (int k = 0; dc->db && k < dc->n_targets[LEVEL_EXACT]; k++) {
    db_choice *got = NULL;
    int ng = 0;
    if (db_choices_get(dc->db, dc->model, dc->targets[LEVEL_EXACT][k], dc->threads, &got, &ng))
      return diag_fail(d, TEMPER_EDB, "%s", db_errmsg(dc->db));
    db_choice *all = realloc(dc->choices, sizeof *all * (size_t)(dc->n_choices + ng + 1));
    if (!all) { free(got); return diag_fail(d, TEMPER_ENOMEM, "out of memory"); }
    dc->choices = all;
    if (ng) memcpy(dc->choices + dc->n_choices, got, sizeof *got * (size_t)ng);
    dc->n_choices += ng;
    free(got);
  }
  return TEMPER_OK;
}

const char *db_chooser_model(const db_chooser *dc) { return dc->model; }

void db_chooser_ignore_choices(db_chooser *dc) {
  dc->ignoring = 1;
  free(dc->choices);
  dc->choices = NULL;
  dc->n_choices = 0;
}

void db_chooser_want_alternatives(db_chooser *dc, int k) { dc->want_alt = k < REFINE_MAX_ALT ? k : REFINE_MAX_ALT; }

int db_chooser_count(const db_chooser *dc) { return dc->n; }

void db_chooser_get(const db_chooser *dc, int i, chooser_entry *out) {
  const choice *c = &dc->c[i];
  *out = (chooser_entry){.key = c->key, .count = c->count, .flops = c->flops, .config = c->found ? c->config : NULL,
                         .median_s = c->found ? c->median_s : 0, .threads = c->threads, .level = c->level,
                         .level_name = target_level_names[c->level], .stale = c->stale, .unusable = c->unusable,
                         .fastest_s = c->fastest_s, .in_context = c->in_context, .gain_s = c->gain_s,
                         .refined_at = c->refined_at, .replaced = c->replaced, .n_alt = c->n_alt,
                         .pretuned = c->pretuned ? dc->pre[c->pretuned - 1].path : NULL, .predicted = c->predicted,
                         .predicted_config = c->predicted ? c->config : NULL, .default_alt = c->def_alt - 1,
                         .default_unmeasured = c->default_unmeasured, .default_moved = c->default_moved};
  for (int k = 0; k < c->n_alt; k++)
    out->alt[k] = c->alt[k], out->alt_s[k] = c->alt_s[k], out->alt_tmpl[k] = c->alt_tmpl[k], out->alt_version[k] = c->alt_version[k];
}

void db_chooser_summary(const db_chooser *dc, chooser_summary *out) {
  double total = 0, fell = 0;
  *out = (chooser_summary){.threads = dc->threads, .n_workloads = dc->n, .stale_choices = dc->stale_choices, .est_complete = 1};
  for (int i = 0; i < dc->n; i++) {
    const choice *c = &dc->c[i];
    total += c->flops * c->count;
    out->n_stale += c->stale;
    out->default_unmeasured += c->default_unmeasured;
    out->default_moved += c->default_moved;
    if (c->found) {
      out->n_found++;
      out->n_pretuned += c->pretuned > 0;
      out->est_s += c->median_s * c->count;
    } else {
      out->n_fell++;
      out->n_predicted += c->predicted;
      fell += c->flops * c->count;
      out->est_complete = 0;
    }
  }
  out->fell_flops_share = total > 0 ? fell / total : 0;
  /* a database with records but no refine choices for this model: say how to get them */
  out->refine_hint = dc->db && dc->model[0] && out->n_found && !dc->n_choices && !dc->ignoring;
}

void db_chooser_close(db_chooser *dc) {
  if (!dc) return;
  free(dc->c);
  free(dc->choices);
  tune_rows_free(&dc->rows);
  for (int lv = 0; lv < LEVEL_COUNT; lv++) free(dc->targets[lv]);
  for (int p = 0; p < dc->n_pre; p++) {
    for (int lv = 0; lv < LEVEL_COUNT; lv++) free(dc->pre[p].targets[lv]);
    temper_db_close(dc->pre[p].db);
  }
  temper_db_close(dc->db);
  free(dc);
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* one log into a database in memory of its own; a log that does not read
 * is an error naming it and the line (a shipped log is checked by the tests) */
static temper_status add_pretuned(db_chooser *dc, const char *path, char *err, size_t n) {
  if (dc->n_pre == PRETUNED_MAX) { snprintf(err, n, "%s: more than %d pre-tuned logs", path, PRETUNED_MAX); return TEMPER_EINVAL; }
  pretuned_log *pl = &dc->pre[dc->n_pre];
  memset(pl, 0, sizeof *pl);
  str_copy(pl->path, sizeof pl->path, path);
  temper_status s = temper_db_open(":memory:", tune_db_versions(), &pl->db, err, n);
  if (s) return s;
  dc->n_pre++;   /* closed with the chooser from here on */
  log_result res;
  diag d = {0};
  if ((s = log_import(pl->db, path, 0, &res, &d))) {
    snprintf(err, n, "pre-tuned log %s", d.msg);
    return s;
  }
  if ((s = match_targets(pl->db, pl->targets, pl->n_targets, &dc->target))) snprintf(err, n, "%s: %s", path, db_errmsg(pl->db));
  return s;
}

temper_status db_chooser_use_pretuned(db_chooser *dc, const char *path, char *err, size_t n) {
  if (!path || !*path || !strcmp(path, "off")) return TEMPER_OK;
  struct stat st;
  if (stat(path, &st)) {
    snprintf(err, n, "%s: no such pre-tuned log or directory", path);
    return TEMPER_EINVAL;
  }
  if (!S_ISDIR(st.st_mode)) return add_pretuned(dc, path, err, n);
  DIR *dir = opendir(path);
  if (!dir) { snprintf(err, n, "%s: cannot read the directory", path); return TEMPER_EINVAL; }
  char *names[PRETUNED_MAX];
  int k = 0;
  temper_status s = TEMPER_OK;
  for (struct dirent *e; (e = readdir(dir)) && !s;) {
    size_t len = strlen(e->d_name);
    if (len < 7 || strcmp(e->d_name + len - 6, ".jsonl")) continue;
    if (k == PRETUNED_MAX) {
      snprintf(err, n, "%s: more than %d pre-tuned logs", path, PRETUNED_MAX);
      s = TEMPER_EINVAL;
    } else if (!(names[k] = malloc(strlen(path) + len + 2))) {
      snprintf(err, n, "%s: out of memory", path);
      s = TEMPER_ENOMEM;
    } else {
      sprintf(names[k++], "%s/%s", path, e->d_name);
    }
  }
  closedir(dir);
  qsort(names, (size_t)k, sizeof *names, by_name);
  for (int i = 0; i < k; i++) {
    if (!s) s = add_pretuned(dc, names[i], err, n);
    free(names[i]);
  }
  return s;
}

const char *db_chooser_pretuned_default(void) {
  const char *env = getenv("TEMPER_PRETUNED");
  if (env) return env;
#ifdef TEMPER_LOGS_DIR
  return access(TEMPER_LOGS_DIR, F_OK) ? NULL : TEMPER_LOGS_DIR;   /* a binary away from its source tree: none */
#else
  return NULL;
#endif
}

void db_chooser_predict_defaults(db_chooser *dc, int on) { dc->predict = on; }

temper_status db_chooser_foreach_pretuned(db_chooser *dc, db_record_fn fn, void *ctx) {
  temper_status s = TEMPER_OK;
  for (int p = 0; p < dc->n_pre && !s; p++) {
    pre_walk w = {&dc->pre[p], dc->max_level, fn, ctx};
    s = db_foreach(dc->pre[p].db, 0, pre_record, &w);
  }
  return s;
}
