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
#include "cli.h"
#include "log.h"
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
  double fastest_s;        /* the fastest record, when layout picked another */
  int level;               /* how the records' target matched */
  int in_context;          /* a choice of `temper refine` replaced the records' pick */
  double gain_s;           /* ... saving this much in the whole model */
  char refined_at[32];
  char replaced[512];      /* the records' pick it replaced */
  int n_alt;               /* alternatives for `temper refine`: the best record of other classes */
  char alt[REFINE_MAX_ALT][512];
  double alt_s[REFINE_MAX_ALT];
  char alt_tmpl[REFINE_MAX_ALT][32];   /* the alternative record's template and version */
  int alt_version[REFINE_MAX_ALT];
} choice;

/* graded target matching: ORDER LEVEL */
enum { LEVEL_EXACT, LEVEL_FEATURES, LEVEL_SUBSET, LEVEL_COUNT };
static const char *const level_names[LEVEL_COUNT] = {"exact target", "same features, other CPU", "compatible subset of features"};

struct db_chooser {
  temper_db *db;
  int64_t *targets[LEVEL_COUNT];   /* database targets at each level of match */
  int n_targets[LEVEL_COUNT];
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

static int pick_at_level(db_chooser *dc, choice *c, int lv, const char *key, const struct task_space *s, const conv_site *site,
                         struct sched_config *out);

/* What makes two configs worth measuring against each other in context:
 * the template, how the kernel splits over threads, and the channel blocks
 * it reads and writes (so the layout transforms around it). */
static int64_t config_class(const struct task_space *s, const struct sched_config *c) {
  int64_t ib = c->tmpl == TMPL_DEPTHWISE ? cfg_get(s, c, "c_bn") : cfg_get(s, c, "ic_bn");
  int64_t ob = c->tmpl == TMPL_DEPTHWISE ? cfg_get(s, c, "c_bn") : cfg_get(s, c, "oc_bn");
  return (((int64_t)c->tmpl * 2 + config_splits_rows(s, c)) * 4096 + ib) * 4096 + ob;
}

/* refine's choice for this workload, if it replaced what the records chose
 * now and is itself still a record: its config instead */
static void apply_choice(db_chooser *dc, choice *c, const char *key, const struct task_space *s, struct sched_config *out,
                         const db_record *recs, int nr) {
  for (int i = 0; i < dc->n_choices; i++) {
    const db_choice *ch = &dc->choices[i];
    if (strcmp(ch->workload, key)) continue;
    sched_config cfg;
    char perr[256];
    int rec = -1;
    for (int k = 0; k < nr && rec < 0; k++)
      if (!strcmp(recs[k].config, ch->config)) rec = k;
    if (strcmp(ch->replaces, c->config) || rec < 0 || tune_tmpl_version(ch->tmpl) != ch->tmpl_version ||
        config_parse(s, ch->config, &cfg, perr, sizeof perr)) {
      dc->stale_choices++;
      return;
    }
    *out = cfg;
    c->in_context = 1;
    c->gain_s = ch->gain_s;
    str_copy(c->refined_at, sizeof c->refined_at, ch->measured_at);
    str_copy(c->replaced, sizeof c->replaced, c->config);
    str_copy(c->config, sizeof c->config, ch->config);
    c->median_s = recs[rec].median_s;
    return;
  }
}

/* the fastest record of each class but the chosen config's, within
 * REFINE_SLOWER of the fastest record: first one per (template, split over
 * threads) — what a record alone cannot value — then per channel blocks;
 * recs are sorted fastest first */
static void collect_alternatives(db_chooser *dc, choice *c, const struct task_space *s, const struct sched_config *chosen,
                                 const db_record *recs, int nr) {
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
      str_copy(c->alt[c->n_alt], sizeof c->alt[0], recs[i].config);
      str_copy(c->alt_tmpl[c->n_alt], sizeof c->alt_tmpl[0], recs[i].tmpl);
      c->alt_version[c->n_alt] = recs[i].tmpl_version;
      c->alt_s[c->n_alt++] = recs[i].median_s;
    }
  }
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
  if (!dc->db) return 0;
  for (int lv = 0; lv <= dc->max_level; lv++) {
    for (int k = 0; k < dc->n_targets[lv]; k++) c->stale += db_count_stale(dc->db, key, dc->targets[lv][k]);
    if (pick_at_level(dc, c, lv, key, s, site, out)) return 1;
  }
  return 0;
}

/* the records of the targets at one level of match, at the build's thread
 * count or the nearest measured; the fastest counting a layout transform */
static int pick_at_level(db_chooser *dc, choice *c, int lv, const char *key, const struct task_space *s, const conv_site *site,
                         struct sched_config *out) {
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
  sched_config def;
  config_default(s, &def);
  int64_t ob_def = def.tmpl == TMPL_DEPTHWISE ? cfg_get(s, &def, "c_bn") : cfg_get(s, &def, "oc_bn");
  int found = 0;
  for (int k = 0; k < dc->n_targets[lv]; k++) {
    int64_t tid = dc->targets[lv][k];
    int *thr = NULL, nt = 0, use = dc->threads, have = 0;
    db_threads_measured(dc->db, key, tid, &thr, &nt);
    for (int i = 0; i < nt; i++) have |= thr[i] == use;
    if (!have && nt) {
      use = thr[0];
      for (int i = 1; i < nt; i++)
        if (abs(thr[i] - dc->threads) < abs(use - dc->threads)) use = thr[i];
    }
    free(thr);
    db_record *recs = NULL;
    int nr = 0;
    if (!nt || db_ok_records(dc->db, key, tid, use, &recs, &nr)) { free(recs); continue; }
    char perr[256];
    for (int i = 0; i < nr && i < 64; i++) {
      sched_config cfg;
      if (config_parse(s, recs[i].config, &cfg, perr, sizeof perr)) { c->unusable++; continue; }
      int free_read = config_reads_block(s, &cfg, site->in_block);   /* no transform before it */
      int64_t ob = cfg.tmpl == TMPL_DEPTHWISE ? cfg_get(s, &cfg, "c_bn") : cfg_get(s, &cfg, "oc_bn");
      double cost = recs[i].median_s + (free_read ? 0 : t_transform) + (ob == ob_def ? 0 : t_out);
      if (dc->threads > 1 && conv_split_rows(w) && !config_splits_rows(s, &cfg))
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
    if (found && dc->want_alt && lv == LEVEL_EXACT) collect_alternatives(dc, c, s, out, recs, nr);
    if (found && lv == LEVEL_EXACT && use == dc->threads) apply_choice(dc, c, key, s, out, recs, nr);
    free(recs);
  }
  if (found) {
    c->found = 1;
    c->level = lv;
  }
  return found;
}

/* the set of enabled features ("+x") of a feature string */
static int has_feature(const char *features, const char *f, size_t n) {
  for (const char *p = features; (p = strstr(p, "+")); p++)
    if (!strncmp(p + 1, f, n) && (p[1 + n] == ',' || !p[1 + n])) return 1;
  return 0;
}

static int features_subset(const char *a, const char *b) {   /* every +x of a is in b */
  for (const char *p = a; (p = strchr(p, '+'));) {
    p++;
    size_t n = strcspn(p, ",");
    if (!has_feature(b, p, n)) return 0;
    p += n;
  }
  return 1;
}

static int arch_of(const char *triple, char *out, size_t n) {
  size_t k = strcspn(triple, "-");
  snprintf(out, n, "%.*s", (int)k, triple);
  return 0;
}

static temper_status match_targets(db_chooser *dc, const cg_target *t) {
  db_target_row *rows = NULL;
  int n = 0;
  temper_status s = db_targets(dc->db, &rows, &n);
  if (s) return s;
  char arch[64], darch[64];
  arch_of(t->triple, arch, sizeof arch);
  for (int lv = 0; lv < LEVEL_COUNT; lv++) dc->targets[lv] = calloc((size_t)n + 1, sizeof(int64_t));
  for (int i = 0; i < n; i++) {
    const db_target *d = &rows[i].t;
    int same = features_subset(d->features, t->features) && features_subset(t->features, d->features);
    arch_of(d->triple, darch, sizeof darch);
    int lv = same && !strcmp(d->cpu, t->cpu) ? LEVEL_EXACT : same ? LEVEL_FEATURES
             : !strcmp(arch, darch) && features_subset(d->features, t->features) ? LEVEL_SUBSET : -1;
    if (lv >= 0 && dc->targets[lv]) dc->targets[lv][dc->n_targets[lv]++] = rows[i].id;
  }
  free(rows);
  return TEMPER_OK;
}

/* --target CPU[:FEATURES]: well-known CPUs need no feature list */
int cli_target_from_spec(const char *spec, cg_target *t) {
  static const char *const avx2[] = {"haswell", "broadwell", "skylake", "alderlake", "znver1", "znver2", "znver3", "x86-64-v3", 0};
  static const char *const avx512[] = {"skylake-avx512", "cascadelake", "icelake-server", "sapphirerapids", "znver4", "znver5",
                                       "x86-64-v4", 0};
  static const char *const base[] = {"x86-64", "x86-64-v2", "nehalem", "westmere", 0};
  const char *colon = strchr(spec, ':');
  snprintf(t->cpu, sizeof t->cpu, "%.*s", colon ? (int)(colon - spec) : (int)strlen(spec), spec);
  if (colon) snprintf(t->features, sizeof t->features, "%s", colon + 1);
  else {
    const char *f = NULL;
    for (int i = 0; avx2[i]; i++)
      if (!strcmp(t->cpu, avx2[i])) f = "+sse4.2,+popcnt,+avx,+avx2,+fma,+f16c,+bmi,+bmi2,+lzcnt,+movbe";
    for (int i = 0; avx512[i]; i++)
      if (!strcmp(t->cpu, avx512[i]))
        f = "+sse4.2,+popcnt,+avx,+avx2,+fma,+f16c,+bmi,+bmi2,+lzcnt,+movbe,+avx512f,+avx512bw,+avx512dq,+avx512vl,+avx512cd,+evex512";
    for (int i = 0; base[i]; i++)
      if (!strcmp(t->cpu, base[i])) f = "+sse4.2,+popcnt";
    if (!f) return -1;
    snprintf(t->features, sizeof t->features, "%s", f);
  }
  t->vec = log_vec_of_features(t->features);
  return 0;
}

db_chooser *db_chooser_open(const char *dbpath, const cg_target *t, int threads, int exact, const char *who) {
  if (dbpath && access(dbpath, F_OK)) {
    fprintf(stderr, "temper %s: %s: no such database (tune first, or leave out --db for the default configs)\n", who, dbpath);
    return NULL;
  }
  db_chooser *dc = calloc(1, sizeof *dc);
  if (!dc) return NULL;
  dc->threads = threads;
  dc->max_level = exact ? LEVEL_EXACT : LEVEL_SUBSET;
  if (!dbpath) return dc;   /* no database: the defaults, listed */
  char err[4096];
  if (temper_db_open(dbpath, tune_db_versions(), &dc->db, err, sizeof err)) {
    fprintf(stderr, "temper: %s\n", err);
    db_chooser_close(dc);
    return NULL;
  }
  if (match_targets(dc, t)) {
    fprintf(stderr, "temper: %s\n", db_errmsg(dc->db));
    db_chooser_close(dc);
    return NULL;
  }
  return dc;
}

/* the model's conv2d workloads in order, hashed: what refine's choices
 * belong to (weights do not matter, the sequence of layers does) */
int db_chooser_set_model(db_chooser *dc, temper_graph *g) {
  diag d = {.path = g->path, .text = g->text};
  if (typeinfer(g, &d)) { fprintf(stderr, "%s\n", d.msg); return -1; }
  arena scratch = {0};
  int n = 0;
  node **order = ir_topo(&scratch, g->main->body, &n);
  if (!order && n) { arena_free(&scratch); return -1; }
  uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < n; i++) {
    conv_workload w;
    if (workload_of(order[i], &w)) continue;
    char key[256];
    workload_key(&w, key, sizeof key);
    for (const char *p = key; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    h = (h ^ '\n') * 1099511628211ull;
  }
  arena_free(&scratch);
  snprintf(dc->model, sizeof dc->model, "%016llx", (unsigned long long)h);
  free(dc->choices);
  dc->choices = NULL;
  dc->n_choices = 0;
  for (int k = 0; dc->db && k < dc->n_targets[LEVEL_EXACT]; k++) {
    db_choice *got = NULL;
    int ng = 0;
    if (db_choices_get(dc->db, dc->model, dc->targets[LEVEL_EXACT][k], dc->threads, &got, &ng)) {
      fprintf(stderr, "temper: %s\n", db_errmsg(dc->db));
      return -1;
    }
    db_choice *all = realloc(dc->choices, sizeof *all * (size_t)(dc->n_choices + ng + 1));
    if (!all) { free(got); return -1; }
    dc->choices = all;
    if (ng) memcpy(dc->choices + dc->n_choices, got, sizeof *got * (size_t)ng);
    dc->n_choices += ng;
    free(got);
  }
  return 0;
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
                         .median_s = c->found ? c->median_s : 0, .n_alt = c->n_alt};
  for (int k = 0; k < c->n_alt; k++)
    out->alt[k] = c->alt[k], out->alt_s[k] = c->alt_s[k], out->alt_tmpl[k] = c->alt_tmpl[k], out->alt_version[k] = c->alt_version[k];
}

void db_chooser_close(db_chooser *dc) {
  if (!dc) return;
  free(dc->c);
  free(dc->choices);
  for (int lv = 0; lv < LEVEL_COUNT; lv++) free(dc->targets[lv]);
  temper_db_close(dc->db);
  free(dc);
}

int db_chooser_report(const db_chooser *dc) {
  double total = 0, fell = 0, est = 0;
  int n_fell = 0, n_stale = 0, est_complete = 1, threads = dc->threads, n_found = 0;
  for (int i = 0; i < dc->n; i++) total += dc->c[i].flops * dc->c[i].count;
  printf("%-66s %5s  %s\n", "workload", "count", "schedule");
  for (int i = 0; i < dc->n; i++) {
    const choice *c = &dc->c[i];
    n_stale += c->stale;
    if (c->found) {
      n_found++;
      printf("%-66.66s %5d  record (%s): %.3f ms (%.1f GFLOP/s)%s %s\n", c->key, c->count, level_names[c->level], c->median_s * 1e3,
             c->flops / c->median_s * 1e-9, c->threads != threads ? " [nearest measured thread count]" : "", c->config);
      if (c->threads != threads)
        printf("    measured at %d thread%s; this build runs %d\n", c->threads, c->threads > 1 ? "s" : "", threads);
      if (c->in_context)
        printf("    chosen in context by temper refine (%.10s): %.3f ms faster in the whole model than the records' pick %s\n",
               c->refined_at, c->gain_s * 1e3, c->replaced);
      else if (c->fastest_s < c->median_s)
        printf("    chosen over the fastest record (%.3f ms) to spare a layout transform or reads from other cores\n", c->fastest_s * 1e3);
      est += c->median_s * c->count;
    } else {
      printf("%-66.66s %5d  default config (no record)\n", c->key, c->count);
      fell += c->flops * c->count;
      n_fell++;
      est_complete = 0;
    }
  }
  if (n_stale) printf("ignored %d record%s of older template versions\n", n_stale, n_stale > 1 ? "s" : "");
  if (dc->db && dc->model[0] && n_found && !dc->n_choices && !dc->ignoring)
    printf("no choices of temper refine for this model at %d thread%s: `temper refine MODEL --db FILE --threads %d` times "
           "the records' alternatives in the whole model\n", threads, threads > 1 ? "s" : "", threads);
  if (dc->stale_choices)
    printf("ignored %d choice%s of temper refine: the records changed since (run temper refine again)\n", dc->stale_choices,
           dc->stale_choices > 1 ? "s" : "");
  if (n_fell)
    printf("fallback: %d of %d workloads use the default config: %.1f%% of the model's conv2d FLOPs\n", n_fell, dc->n,
           total > 0 ? 100 * fell / total : 0);
  if (est > 0)
    printf("estimated conv2d latency from the records: %.2f ms%s\n", est * 1e3, est_complete ? "" : " (workloads without records not counted)");
  return n_fell;
}
