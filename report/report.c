/* report.c: the tuning report (report.h). Gathers the database's records
 * into sections (target × threads) of tasks, each task's records in the
 * order they were measured; derives per task the best record, its spread,
 * errors by kind and whether the search has converged; per section the
 * model's estimate over tuning time; then writes tables (every number also
 * as a data- attribute, so a test can read the page back) and plots. */

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "choose.h"
#include "report.h"
#include "svg.h"
#include "target.h"
#include "tune.h"

typedef struct rrec {
  double t;                 /* seconds since 1970 */
  double median_s, min_s, max_s;
  db_status status;
  int remeasure, in_force;  /* in force: its template version is today's */
  int64_t run;
} rrec;

typedef struct rtask {
  char key[256];
  int count;                /* occurrences in the model (1 without one) */
  double flops;
  rrec *r;
  int n, cap;
  /* derived */
  int trials, errors[DB_STATUS_COUNT];
  const rrec *best;
  int converged;            /* -1: too few trials to say */
} rtask;

typedef struct section {
  int64_t target_id;
  int threads;
  db_target target;
  rtask *tasks;
  int n_tasks;
} section;

typedef struct gather {
  const report_opts *o;
  section *s;
  int n, cap;
  const tune_task *model_tasks;   /* NULL: every workload */
  int n_model_tasks;
  db_target_row *targets;
  int n_targets;
} gather;

static double iso_time(const char *s) {
  struct tm tm = {0};
  int ms = 0;
  if (sscanf(s, "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) < 6) return 0;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return (double)timegm(&tm) + ms * 1e-3;
}

static int model_index(const gather *g, const char *key) {
  for (int i = 0; i < g->n_model_tasks; i++)
    if (!strcmp(g->model_tasks[i].key, key)) return i;
  return -1;
}

static section *section_of(gather *g, int64_t tid, int threads) {
  for (int i = 0; i < g->n; i++)
    if (g->s[i].target_id == tid && g->s[i].threads == threads) return &g->s[i];
  if (g->n == g->cap) {
    int nc = g->cap ? g->cap * 2 : 4;
    section *ns = realloc(g->s, sizeof *ns * (size_t)nc);
    if (!ns) return NULL;
    g->s = ns, g->cap = nc;
  }
  section *s = &g->s[g->n++];
  memset(s, 0, sizeof *s);
  s->target_id = tid, s->threads = threads;
  for (int i = 0; i < g->n_targets; i++)
    if (g->targets[i].id == tid) s->target = g->targets[i].t;
  /* with a model, every task of it, in its order: those without records are the fallbacks */
  if (g->model_tasks) {
    s->tasks = calloc((size_t)g->n_model_tasks + 1, sizeof *s->tasks);
    if (!s->tasks) return NULL;
    for (int i = 0; i < g->n_model_tasks; i++) {
      snprintf(s->tasks[i].key, sizeof s->tasks[i].key, "%s", g->model_tasks[i].key);
      s->tasks[i].count = g->model_tasks[i].count;
      s->tasks[i].flops = g->model_tasks[i].flops;
    }
    s->n_tasks = g->n_model_tasks;
  }
  return s;
}

static rtask *task_of(section *s, const char *key, double flops, int may_add) {
  for (int i = s->n_tasks - 1; i >= 0; i--)
    if (!strcmp(s->tasks[i].key, key)) return &s->tasks[i];
  if (!may_add) return NULL;
  rtask *nt = realloc(s->tasks, sizeof *nt * (size_t)(s->n_tasks + 1));
  if (!nt) return NULL;
  s->tasks = nt;
  rtask *t = &s->tasks[s->n_tasks++];
  memset(t, 0, sizeof *t);
  snprintf(t->key, sizeof t->key, "%s", key);
  t->count = 1, t->flops = flops;
  return t;
}

static temper_status collect(void *ctx, const db_record *r, const char *op, const char *desc, double flops) {
  (void)op, (void)desc;
  gather *g = ctx;
  if (g->model_tasks && model_index(g, r->workload) < 0) return TEMPER_OK;
  section *s = section_of(g, r->target_id, r->threads);
  rtask *t = s ? task_of(s, r->workload, flops, !g->model_tasks) : NULL;
  if (!s || (!t && !g->model_tasks)) return TEMPER_ENOMEM;
  if (!t) return TEMPER_OK;
  if (t->n == t->cap) {
    int nc = t->cap ? t->cap * 2 : 64;
    rrec *nr = realloc(t->r, sizeof *nr * (size_t)nc);
    if (!nr) return TEMPER_ENOMEM;
    t->r = nr, t->cap = nc;
  }
  t->r[t->n++] = (rrec){iso_time(r->measured_at), r->median_s, r->min_s, r->max_s, r->status, r->remeasure,
                        tune_tmpl_version(r->tmpl) == r->tmpl_version, r->run_id};
  return TEMPER_OK;
}

static int by_time(const void *a, const void *b) {
  const rrec *x = a, *y = b;
  return (x->t > y->t) - (x->t < y->t);
}

/* best, errors, convergence: the best of the first half of the trials
 * within 2 % of the best of all (at least 16 trials to say) */
static void derive(rtask *t) {
  if (t->n) qsort(t->r, (size_t)t->n, sizeof *t->r, by_time);   /* a task without records has no array */
  double half_best = INFINITY;
  for (int i = 0; i < t->n; i++) {
    const rrec *r = &t->r[i];
    if (!r->remeasure) {
      t->trials++;
      t->errors[r->status]++;
    }
    if (r->status != DB_OK || !r->in_force) continue;
    if (!t->best || r->median_s < t->best->median_s) t->best = r;
  }
  int first_half = 0, k = 0;
  for (int i = 0; i < t->n; i++)
    if (!t->r[i].remeasure && ++k <= t->trials / 2 && t->r[i].status == DB_OK && t->r[i].in_force) {
      half_best = fmin(half_best, t->r[i].median_s);
      first_half = 1;
    }
  t->converged = t->trials < 16 || !t->best || !first_half ? -1 : half_best <= t->best->median_s * 1.02;
}

static const char *const status_label[DB_STATUS_COUNT] = {"ok", "compile error", "runtime error", "wrong answer", "timeout"};

/* a short label: c64 56×56 → k64 3×3 /2 g1 */
static void short_label(const char *key, char *out, size_t n) {
  conv_workload w;
  if (workload_from_key(key, &w)) { snprintf(out, n, "%.40s", key); return; }
  snprintf(out, n, "c%lld %lldx%lld k%lld %lldx%lld/%lld%s", (long long)w.C, (long long)w.H, (long long)w.W, (long long)w.K,
           (long long)w.R, (long long)w.S, (long long)w.sh, w.G > 1 ? (w.G == w.C ? " dw" : " grp") : "");
}

/* ---- the page ---- */
typedef struct page {
  strbuf b;
  const report_opts *o;
} page;

/* a plot just written (from `from` in the page) also as DIR/NAME.svg */
static void save_svg(page *pg, size_t from, const char *name) {
  if (!pg->o->svg_dir || pg->b.failed) return;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.svg", pg->o->svg_dir, name);
  FILE *f = fopen(path, "w");
  if (!f) return;
  fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
  fwrite(pg->b.s + from, 1, pg->b.len - from, f);
  fclose(f);
}

static void h(page *pg, const char *tag, const char *text) {
  strbuf_printf(&pg->b, "<%s>", tag);
  svg_text(&pg->b, text);
  strbuf_printf(&pg->b, "</%s>\n", tag);
}

static double task_ms(const rtask *t) { return t->best ? t->best->median_s * t->count * 1e3 : 0; }

static int by_share(const void *a, const void *b) {
  const rtask *x = *(rtask *const *)a, *y = *(rtask *const *)b;
  double ta = task_ms(x), tb = task_ms(y);
  if (ta != tb) return (ta < tb) - (ta > tb);
  return (x->flops * x->count < y->flops * y->count) - (x->flops * x->count > y->flops * y->count);
}

/* the model's estimate after each record: Σ count × best so far; a task
 * not measured yet counts with its first ok time (the default config,
 * measured first), so the curve starts at the untuned estimate */
static int estimate_curve(const section *s, double t0, double **xs, double **ys, double **xt) {
  int total = 0;
  for (int i = 0; i < s->n_tasks; i++) total += s->tasks[i].n;
  *xs = malloc(sizeof(double) * (size_t)(total + 1));
  *ys = malloc(sizeof(double) * (size_t)(total + 1));
  *xt = malloc(sizeof(double) * (size_t)(total + 1));
  double *cur = calloc((size_t)s->n_tasks + 1, sizeof *cur);
  int *pos = calloc((size_t)s->n_tasks + 1, sizeof *pos);
  if (!*xs || !*ys || !*xt || !cur || !pos) { free(cur), free(pos); return 0; }
  for (int i = 0; i < s->n_tasks; i++)
    for (int j = 0; j < s->tasks[i].n; j++)
      if (s->tasks[i].r[j].status == DB_OK && s->tasks[i].r[j].in_force) { cur[i] = s->tasks[i].r[j].median_s; break; }
  int n = 0, trials = 0;
  for (;;) {   /* merge the tasks' records by time */
    int pick = -1;
    for (int i = 0; i < s->n_tasks; i++)
      if (pos[i] < s->tasks[i].n && (pick < 0 || s->tasks[i].r[pos[i]].t < s->tasks[pick].r[pos[pick]].t)) pick = i;
    if (pick < 0) break;
    const rrec *r = &s->tasks[pick].r[pos[pick]++];
    if (!r->remeasure) trials++;
    if (r->status == DB_OK && r->in_force && r->median_s < cur[pick]) cur[pick] = r->median_s;
    double est = 0;
    for (int i = 0; i < s->n_tasks; i++) est += cur[i] * s->tasks[i].count;
    (*xs)[n] = (r->t - t0) / 60, (*xt)[n] = trials, (*ys)[n] = est * 1e3;
    n++;
  }
  free(cur), free(pos);
  return n;
}

static void plot_estimate(page *pg, const section *s, int idx, double t0) {
  double *x = NULL, *y = NULL, *xt = NULL;
  int n = estimate_curve(s, t0, &x, &y, &xt);
  if (n >= 2 && y[n - 1] > 0) {
    double lo = y[0], hi = y[0];
    for (int i = 0; i < n; i++) lo = fmin(lo, y[i]), hi = fmax(hi, y[i]);
    int lg = hi / lo > 20;
    char name[64];
    svg_plot p;
    size_t from = pg->b.len;
    strbuf_printf(&pg->b, "<div class=\"plots\">");
    from = pg->b.len;
    svg_begin(&p, &pg->b, 620, 300, "Estimated conv2d time of the model while tuning", "tuning time (minutes since the first record)",
              "estimated time (ms)", 0, x[n - 1] > 0 ? x[n - 1] : 1, lo * 0.95, hi * 1.02, 0, lg);
    svg_line(&p, x, y, n, 0, 0);
    svg_end(&p);
    snprintf(name, sizeof name, "section%d_estimate_vs_time", idx);
    save_svg(pg, from, name);
    from = pg->b.len;
    svg_begin(&p, &pg->b, 620, 300, "Estimated conv2d time of the model per trial", "trials (all tasks)", "estimated time (ms)", 0,
              xt[n - 1] > 0 ? xt[n - 1] : 1, lo * 0.95, hi * 1.02, 0, lg);
    svg_line(&p, xt, y, n, 1, 0);
    svg_end(&p);
    snprintf(name, sizeof name, "section%d_estimate_vs_trials", idx);
    save_svg(pg, from, name);
    strbuf_printf(&pg->b, "</div>\n");
  }
  free(x), free(y), free(xt);
}

/* the largest tasks' best GFLOP/s against tuning time, one line each */
static void plot_tasks_vs_time(page *pg, rtask **order, int n, int idx, double t0) {
  const char *names[SVG_STYLES];
  char labs[SVG_STYLES][64];
  int styles[SVG_STYLES], k = 0;
  double xmax = 0, ymax = 0;
  for (int i = 0; i < n && k < SVG_STYLES; i++) {
    const rtask *t = order[i];
    if (!t->best || !t->n) continue;
    xmax = fmax(xmax, (t->r[t->n - 1].t - t0) / 60);
    ymax = fmax(ymax, t->flops / t->best->median_s * 1e-9);
    short_label(t->key, labs[k], sizeof labs[k]);
    names[k] = labs[k], styles[k] = k;
    k++;
  }
  if (!k) return;
  svg_plot p;
  size_t from = pg->b.len;
  svg_begin(&p, &pg->b, 820, 320, "The largest tasks: best GFLOP/s found against tuning time", "tuning time (minutes since the first record)",
            "best GFLOP/s", 0, xmax > 0 ? xmax : 1, 0, ymax * 1.05, 0, 0);
  for (int i = 0, j = 0; i < n && j < k; i++) {
    const rtask *t = order[i];
    if (!t->best || !t->n) continue;
    double *x = malloc(sizeof(double) * (size_t)t->n * 2), *y = malloc(sizeof(double) * (size_t)t->n * 2);
    int m = 0;
    double best = 0;
    for (int r = 0; x && y && r < t->n; r++) {   /* a step curve: the best holds until the next is found */
      const rrec *rec = &t->r[r];
      double g = rec->status == DB_OK && rec->in_force && rec->median_s > 0 ? t->flops / rec->median_s * 1e-9 : 0;
      if (g <= best) continue;
      double tx = (rec->t - t0) / 60;
      if (best > 0) x[m] = tx, y[m++] = best;
      x[m] = tx, y[m++] = best = g;
    }
    if (x && y && m) {
      x[m] = (t->r[t->n - 1].t - t0) / 60, y[m++] = best;
      svg_line(&p, x, y, m, j, 0);
      svg_marker(&p, x[m - 1], y[m - 1], j);
    }
    free(x), free(y);
    j++;
  }
  svg_legend(&p, names, styles, k, 1);
  svg_end(&p);
  char name[64];
  snprintf(name, sizeof name, "section%d_tasks_vs_time", idx);
  save_svg(pg, from, name);
}

/* one small plot per task: best GFLOP/s so far against trials, errors
 * marked below by kind */
static void plot_task_curves(page *pg, rtask **order, int n, int idx) {
  strbuf_printf(&pg->b, "<div class=\"plots\">");
  for (int k = 0; k < n && k < 12; k++) {
    const rtask *t = order[k];
    if (!t->trials) continue;
    double *x = malloc(sizeof(double) * (size_t)t->n), *y = malloc(sizeof(double) * (size_t)t->n);
    if (!x || !y) { free(x), free(y); continue; }
    int m = 0, trial = 0;
    double best = 0, ymax = 0;
    for (int i = 0; i < t->n; i++) {
      const rrec *r = &t->r[i];
      if (r->remeasure) continue;
      trial++;
      if (r->status == DB_OK && r->in_force && r->median_s > 0) best = fmax(best, t->flops / r->median_s * 1e-9);
      if (best > 0) x[m] = trial, y[m++] = best;
      ymax = fmax(ymax, best);
    }
    char title[128], lab[64], name[64];
    short_label(t->key, lab, sizeof lab);
    snprintf(title, sizeof title, "#%d %s", k + 1, lab);
    svg_plot p;
    size_t from = pg->b.len;
    svg_begin(&p, &pg->b, 300, 200, title, "trials", "best GFLOP/s", 0, trial > 1 ? trial : 2, 0, ymax > 0 ? ymax * 1.05 : 1, 0, 0);
    svg_line(&p, x, y, m, 0, 0);
    trial = 0;
    int kinds = 0;
    for (int i = 0; i < t->n; i++) {
      const rrec *r = &t->r[i];
      if (r->remeasure) continue;
      trial++;
      if (r->status != DB_OK) svg_tick_mark(&p, trial, r->status, status_label[r->status]), kinds |= 1 << r->status;
    }
    const char *names[DB_STATUS_COUNT];
    int styles[DB_STATUS_COUNT], nl = 0;
    for (int st = 1; st < DB_STATUS_COUNT; st++)
      if (kinds & (1 << st)) names[nl] = status_label[st], styles[nl++] = st;
    if (nl) svg_legend(&p, names, styles, nl, 0);
    svg_end(&p);
    snprintf(name, sizeof name, "section%d_task%d", idx, k + 1);
    save_svg(pg, from, name);
    free(x), free(y);
  }
  strbuf_printf(&pg->b, "</div>\n");
}

static void task_table(page *pg, rtask **order, int n, double total_ms) {
  strbuf *b = &pg->b;
  strbuf_printf(b, "<table class=\"tasks\"><tr><th>#</th><th>workload</th><th>count</th><th>share</th><th>trials</th>"
                   "<th>errors c/r/w/t</th><th>best GFLOP/s</th><th>best ms</th><th>spread</th><th>converged</th></tr>\n");
  for (int k = 0; k < n; k++) {
    const rtask *t = order[k];
    double g = t->best ? t->flops / t->best->median_s * 1e-9 : 0, sp = t->best && t->best->median_s > 0
                                                                         ? (t->best->max_s - t->best->min_s) / t->best->median_s * 100
                                                                         : 0;
    strbuf_printf(b, "<tr class=\"task\" data-workload=\"");
    svg_text(b, t->key);
    strbuf_printf(b, "\" data-trials=\"%d\" data-errors=\"%d\" data-best-s=\"%.9g\" data-best-gflops=\"%.4f\">", t->trials,
                  t->trials - t->errors[DB_OK], t->best ? t->best->median_s : 0, g);
    strbuf_printf(b, "<td>%d</td><td class=\"key\">", k + 1);
    svg_text(b, t->key);
    strbuf_printf(b, "</td><td>%d</td><td>%.1f%%</td><td>%d</td><td>%d/%d/%d/%d</td>", t->count,
                  total_ms > 0 ? task_ms(t) / total_ms * 100 : 0, t->trials, t->errors[DB_COMPILE_ERROR], t->errors[DB_RUNTIME_ERROR],
                  t->errors[DB_WRONG_ANSWER], t->errors[DB_TIMEOUT]);
    if (t->best)
      strbuf_printf(b, "<td>%.1f</td><td>%.4f</td><td>%.1f%%</td><td>%s</td></tr>\n", g, t->best->median_s * 1e3, sp,
                    t->converged < 0 ? "too few trials" : t->converged ? "yes" : "<b>no</b>");
    else strbuf_printf(b, "<td colspan=\"4\"><b>no record: the default config (a fallback)</b></td></tr>\n");
  }
  strbuf_printf(b, "</table>\n");
}

static void runs_block(page *pg, temper_db *db, const section *s, int idx) {
  db_run_row *runs = NULL;
  int n = 0;
  if (db_runs(db, &runs, &n)) return;
  const char *labels[32];
  char lab[32][48];
  double v[64];
  int k = 0;
  double tc = 0, tm = 0, wall = 0;
  for (int i = n - 1; i >= 0 && k < 32; i--) {   /* the latest runs that recorded in this section */
    int mine = 0;
    for (int t = 0; t < s->n_tasks && !mine; t++)
      for (int j = 0; j < s->tasks[t].n && !mine; j++) mine = s->tasks[t].r[j].run == runs[i].id;
    if (!mine || (runs[i].compile_s <= 0 && runs[i].measure_s <= 0)) continue;
    snprintf(lab[k], sizeof lab[k], "run %lld, %.16s", (long long)runs[i].id, runs[i].started_at);
    labels[k] = lab[k];
    v[2 * k] = runs[i].compile_s, v[2 * k + 1] = runs[i].measure_s;
    tc += runs[i].compile_s, tm += runs[i].measure_s;
    double a = iso_time(runs[i].started_at), e = iso_time(runs[i].ended_at);
    if (a > 0 && e > a) wall += e - a;
    k++;
  }
  if (k) {
    strbuf_printf(&pg->b, "<p class=\"share\" data-compile-s=\"%.3f\" data-measure-s=\"%.3f\">The search's time: compiling %.0f s "
                          "(%.0f%%), measuring %.0f s (%.0f%%)%s.</p>\n",
                  tc, tm, tc, 100 * tc / (tc + tm), tm, 100 * tm / (tc + tm),
                  wall > tc + tm ? ", the rest of the runs' wall time in the search itself and the database" : "");
    static const char *const series[] = {"compile", "measure"};
    size_t from = pg->b.len;
    svg_hbars(&pg->b, 820, "Where the search spent its time, per run", "seconds", labels, v, k, 2, series, "s");
    char name[64];
    snprintf(name, sizeof name, "section%d_runs", idx);
    save_svg(pg, from, name);
  }
  free(runs);
}

static void section_block(page *pg, temper_db *db, section *s, int idx) {
  strbuf *b = &pg->b;
  double t0 = INFINITY, total_ms = 0;
  int trials = 0, errors = 0, missing = 0, not_conv = 0, unknown = 0;
  rtask **order = calloc((size_t)s->n_tasks + 1, sizeof *order);
  if (!order) { b->failed = 1; return; }
  for (int i = 0; i < s->n_tasks; i++) {
    rtask *t = &s->tasks[i];
    derive(t);
    order[i] = t;
    if (t->n) t0 = fmin(t0, t->r[0].t);
    total_ms += task_ms(t);
    trials += t->trials, errors += t->trials - t->errors[DB_OK];
    missing += !t->best;
    not_conv += t->converged == 0;
    unknown += t->best && t->converged < 0;
  }
  qsort(order, (size_t)s->n_tasks, sizeof *order, by_share);
  char title[512];
  snprintf(title, sizeof title, "%s, %d thread%s", s->target.cpu, s->threads, s->threads > 1 ? "s" : "");
  strbuf_printf(b, "<section class=\"target\" data-cpu=\"");
  svg_text(b, s->target.cpu);
  strbuf_printf(b, "\" data-threads=\"%d\" data-trials=\"%d\" data-estimate-ms=\"%.6f\">\n", s->threads, trials, total_ms);
  h(pg, "h2", title);
  strbuf_printf(b, "<p class=\"meta\">%s, LLVM %s, %d cores; features %.160s%s</p>\n", s->target.triple, s->target.llvm_version,
                s->target.cores, s->target.features, strlen(s->target.features) > 160 ? "…" : "");
  strbuf_printf(b, "<p class=\"summary\"><b>Estimated conv2d time: %.3f ms</b>%s, from the best record of each task × its count. "
                   "%d tasks, %d trials, %d errors. Converged: %d of %d tasks; still improving: %d; too few trials to tell: %d.</p>\n",
                total_ms, missing ? " (tasks without records not counted)" : "", s->n_tasks, trials, errors,
                s->n_tasks - missing - not_conv - unknown, s->n_tasks, not_conv, unknown);
  if (missing) strbuf_printf(b, "<p class=\"summary\">Tasks without a record fall back to the default config: %d.</p>\n", missing);
  if (total_ms > 0) {   /* the answer to "which layers dominate", before any plot */
    strbuf_printf(b, "<p class=\"summary\">Largest shares:");
    for (int i = 0; i < s->n_tasks && i < 3 && order[i]->best; i++) {
      char lab[64];
      short_label(order[i]->key, lab, sizeof lab);
      strbuf_printf(b, "%s <b>", i ? "," : "");
      svg_text(b, lab);
      strbuf_printf(b, "</b>%s %.1f%%", order[i]->count > 1 ? " (all its occurrences)" : "", task_ms(order[i]) / total_ms * 100);
    }
    strbuf_printf(b, ".</p>\n");
  }
  /* where the time goes */
  int nb = s->n_tasks < 25 ? s->n_tasks : 25;
  const char **labels = calloc((size_t)nb + 1, sizeof *labels);
  char(*lab)[64] = calloc((size_t)nb + 1, sizeof *lab);
  double *v = calloc((size_t)nb + 1, sizeof *v);
  if (labels && lab && v && nb) {
    for (int i = 0; i < nb; i++) {
      short_label(order[i]->key, lab[i], sizeof lab[i]);
      if (order[i]->count > 1) snprintf(lab[i] + strlen(lab[i]), sizeof lab[i] - strlen(lab[i]), " ×%d", order[i]->count);
      labels[i] = lab[i];
      v[i] = task_ms(order[i]);
    }
    static const char *const one[] = {"estimate"};
    size_t from = b->len;
    svg_hbars(b, 820, "Where the time goes: each task's best record × its count", "milliseconds per inference", labels, v, nb, 1, one,
              "ms");
    char name[64];
    snprintf(name, sizeof name, "section%d_time_per_task", idx);
    save_svg(pg, from, name);
    /* the records' spread */
    for (int i = 0; i < nb; i++) {
      const rrec *r = order[i]->best;
      v[i] = r && r->median_s > 0 ? (r->max_s - r->min_s) / r->median_s * 100 : 0;
    }
    static const char *const spread[] = {"spread"};
    from = b->len;
    svg_hbars(b, 820, "The best records' spread: (max − min) / median of their rounds", "percent", labels, v, nb, 1, spread, "%");
    snprintf(name, sizeof name, "section%d_spread", idx);
    save_svg(pg, from, name);
  }
  free(labels), free(lab), free(v);
  h(pg, "h3", "How tuning went");
  plot_estimate(pg, s, idx, t0);
  plot_tasks_vs_time(pg, order, s->n_tasks, idx, t0);
  plot_task_curves(pg, order, s->n_tasks, idx);
  runs_block(pg, db, s, idx);
  h(pg, "h3", "Tasks, by their share of the estimated time");
  task_table(pg, order, s->n_tasks, total_ms);
  /* what to tune next: the largest shares still improving, and the fallbacks */
  strbuf_printf(b, "<h3>What to tune next</h3>\n<ul class=\"next\">\n");
  int shown = 0;
  for (int i = 0; i < s->n_tasks && shown < 5; i++) {
    const rtask *t = order[i];
    if (t->best && t->converged == 1) continue;
    strbuf_printf(b, "<li>");
    svg_text(b, t->key);
    if (!t->best) strbuf_printf(b, ": no record at all — it runs with the default config");
    else strbuf_printf(b, ": %.1f%% of the time, %s after %d trials", total_ms > 0 ? task_ms(t) / total_ms * 100 : 0,
                         t->converged < 0 ? "too few trials to tell" : "still improving", t->trials);
    strbuf_printf(b, " — <code>temper tune ");
    svg_text(b, pg->o->model ? pg->o->model : "MODEL");
    strbuf_printf(b, " --db ");
    svg_text(b, db_where(db));
    strbuf_printf(b, " --threads %d --task ", s->threads);
    svg_text(b, t->key);
    strbuf_printf(b, " --trials %d</code></li>\n", t->trials < 32 ? 64 : t->trials * 2);
    shown++;
  }
  if (!shown) strbuf_printf(b, "<li>Every task has converged: more trials will not pay; <code>temper refine</code> may.</li>\n");
  strbuf_printf(b, "</ul>\n</section>\n");
  free(order);
}

/* "#12 conv2d+add+relu, 231 MFLOP": the call's place, its ops without the
 * kernel name's prefix and hash, and its size */
static void kernel_label(const kernel *k, int i, char *out, size_t n) {
  char ops[96];
  const char *nm = strncmp(k->name, "fused_", 6) ? k->name : k->name + 6;
  size_t len = strlen(nm), j = 0;
  const char *us = strrchr(nm, '_');
  if (us && len - (size_t)(us - nm) == 9) len = (size_t)(us - nm);   /* the hash */
  for (size_t a = 0; a < len && j + 1 < sizeof ops; a++) {
    if (!strncmp(nm + a, "nn_", 3) && (a == 0 || nm[a - 1] == '_')) { a += 2; continue; }
    if (!strncmp(nm + a, "contrib_conv2d_winograd_without_weight_transform", 48)) {
      j += (size_t)snprintf(ops + j, sizeof ops - j, "winograd");
      a += 47;
      continue;
    }
    ops[j++] = nm[a] == '_' ? '+' : nm[a];
  }
  ops[j] = 0;
  snprintf(out, n, "#%d %.40s, %.0f MFLOP", i, ops, k->flops * 1e-6);
}

/* what a build on this machine chooses at `threads`, and with measure its time */
static void build_block(page *pg, int threads, const cg_target *host, temper_engine *e) {
  const report_opts *o = pg->o;
  strbuf *b = &pg->b;
  char err[4096];
  db_chooser *dc = NULL;
  program p = {0};
  diag d = {0};
  if (db_chooser_open(o->db, host, threads, 0, &dc, err, sizeof err) || db_chooser_use_pretuned(dc, o->pretuned, err, sizeof err)) {
    h(pg, "p", err);
    db_chooser_close(dc);
    return;
  }
  if (program_read(&p, o->model, &d) || program_data(&p, &o->data, &d) || db_chooser_set_model(dc, p.g, &d)) {
    h(pg, "p", d.msg);
    goto out;
  }
  pipeline_opts po = {.vec = host->vec, .choose = db_chooser_choose, .ctx = dc};
  int compiled = 0;
  if (o->measure) compiled = !program_compile(&p, e, &po, threads, &d);
  else compiled = !program_optimize(&p, &po, &d);
  if (!compiled) { h(pg, "p", d.msg); goto out; }
  chooser_summary cs;
  db_chooser_summary(dc, &cs);
  char title[128];
  snprintf(title, sizeof title, "A build on this machine (%s) at %d thread%s", host->cpu, threads, threads > 1 ? "s" : "");
  strbuf_printf(b, "<section class=\"build\" data-threads=\"%d\" data-estimate-ms=\"%.6f\" data-fallbacks=\"%d\" "
                   "data-fallback-share=\"%.4f\">\n", threads, cs.est_s * 1e3, cs.n_fell, cs.fell_flops_share);
  h(pg, "h2", title);
  strbuf_printf(b, "<p class=\"summary\">The records' estimate of the conv2d time: <b>%.3f ms</b>%s. Fallbacks: %d of %d workloads "
                   "use the default config, %.1f%% of the model's conv2d FLOPs.</p>\n",
                cs.est_s * 1e3, cs.est_complete ? "" : " (workloads without records not counted)", cs.n_fell, cs.n_workloads,
                100 * cs.fell_flops_share);
  if (cs.n_pretuned) {   /* which shipped log, at which match level, for which workload */
    strbuf_printf(b, "<p>%d of %d workloads have no record of yours and take a shipped pre-tuned log's "
                     "(<code>--no-pretuned</code>: the default configs instead):</p><ul class=\"pretuned\">\n", cs.n_pretuned, cs.n_workloads);
    for (int i = 0; i < cs.n_workloads; i++) {
      chooser_entry c;
      db_chooser_get(dc, i, &c);
      if (!c.pretuned) continue;
      strbuf_printf(b, "<li data-level=\"%s\">", c.level_name);
      svg_text(b, c.key);
      strbuf_printf(b, ": ");
      svg_text(b, c.pretuned);
      strbuf_printf(b, " (%s), %.3f ms there</li>\n", c.level_name, c.median_s * 1e3);
    }
    strbuf_printf(b, "</ul>\n");
  }
  int changed = 0;
  for (int i = 0; i < cs.n_workloads; i++) {
    chooser_entry c;
    db_chooser_get(dc, i, &c);
    if (!c.in_context) continue;
    if (!changed++) strbuf_printf(b, "<p>What <code>temper refine</code> changed (timed in the whole model):</p><ul class=\"refine\">\n");
    strbuf_printf(b, "<li data-gain-ms=\"%.4f\">", c.gain_s * 1e3);
    svg_text(b, c.key);
    strbuf_printf(b, ": %.3f ms saved, on %.10s — ", c.gain_s * 1e3, c.refined_at);
    svg_text(b, c.config);
    strbuf_printf(b, " instead of ");
    svg_text(b, c.replaced);
    strbuf_printf(b, "</li>\n");
  }
  if (changed) strbuf_printf(b, "</ul>\n");
  else if (cs.refine_hint) strbuf_printf(b, "<p>No choices of <code>temper refine</code> for this model at this thread count.</p>\n");
  if (o->measure) {
    run_timing tm;
    step_timing *st = calloc((size_t)p.x->n_steps + 1, sizeof *st);
    if (st && !exec_time(p.x, o->repeat, &tm) && !exec_profile(p.x, o->repeat, st)) {
      strbuf_printf(b, "<p class=\"measured\" data-latency-ms=\"%.4f\">Measured latency of the whole model: <b>%.3f ms</b> "
                       "(median of %d runs, spread %.1f%%).</p>\n",
                    tm.median_s * 1e3, tm.median_s * 1e3, tm.repeat, tm.median_s > 0 ? (tm.max_s - tm.min_s) / tm.median_s * 100 : 0);
      /* the kernels that take the most, in sequence and alone */
      int n = p.x->n_steps, *idx = malloc(sizeof(int) * (size_t)(n + 1));
      if (idx) {
        for (int i = 0; i < n; i++) idx[i] = i;
        for (int i = 1; i < n; i++)   /* by time in sequence, descending */
          for (int j = i; j > 0 && st[idx[j - 1]].in_sequence_s < st[idx[j]].in_sequence_s; j--) {
            int x = idx[j];
            idx[j] = idx[j - 1], idx[j - 1] = x;
          }
        int nk = n < 25 ? n : 25;
        const char **labels = calloc((size_t)nk + 1, sizeof *labels);
        char(*lab)[64] = calloc((size_t)nk + 1, sizeof *lab);
        double *v = calloc((size_t)nk * 2 + 2, sizeof *v);
        if (labels && lab && v) {
          for (int i = 0; i < nk; i++) {
            kernel_label(p.x->steps[idx[i]].k, idx[i], lab[i], sizeof lab[i]);
            labels[i] = lab[i];
            v[2 * i] = st[idx[i]].in_sequence_s * 1e3, v[2 * i + 1] = st[idx[i]].alone_s * 1e3;
          }
          static const char *const series[] = {"in sequence (as the model runs)", "alone (hot caches)"};
          size_t from = b->len;
          svg_hbars(b, 820, "Measured: the kernels that take the most", "milliseconds", labels, v, nk, 2, series, "ms");
          char name[64];
          snprintf(name, sizeof name, "build%d_kernels", threads);
          save_svg(pg, from, name);
        }
        free(labels), free(lab), free(v), free(idx);
      }
    }
    free(st);
  }
  strbuf_printf(b, "</section>\n");
out:
  program_free(&p);
  db_chooser_close(dc);
}

static const char *style_css =
    "body{font-family:sans-serif;max-width:1280px;margin:1em auto;padding:0 1em;color:#222}"
    "table{border-collapse:collapse;font-size:12px;margin:0.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
    "td.key{text-align:left;font-family:monospace;font-size:11px}th{background:#eee}"
    ".plots{display:flex;flex-wrap:wrap;gap:8px}section{border-top:2px solid #1f3b73;margin-top:1.5em}"
    "code{font-size:12px;background:#f4f4f4}.meta{color:#555;font-size:12px}";

static temper_status tasks_of_model(const report_opts *o, tune_task **tasks, int *n, diag *d) {
  program p = {0};
  cg_target t;
  cg_host_target(&t, d);
  temper_status s = program_read(&p, o->model, d);
  if (!s) s = program_data(&p, &o->data, d);
  if (!s) s = program_bind(&p, d);
  if (!s) s = tasks_extract(p.g, t.vec, tasks, n, d);
  program_free(&p);
  return s;
}

temper_status report_write(const report_opts *o, FILE *out, int *n_sections, diag *d) {
  temper_db *db = NULL;
  char err[4096];
  gather g = {.o = o};
  tune_task *mt = NULL;
  int n_mt = 0;
  temper_engine *e = NULL;
  page pg = {.o = o};
  temper_status s = TEMPER_OK;
  if (o->svg_dir && mkdir(o->svg_dir, 0777) && errno != EEXIST) return diag_fail(d, TEMPER_EIO, "%s: cannot create: %s", o->svg_dir, strerror(errno));
  if (o->model && (s = tasks_of_model(o, &mt, &n_mt, d))) return s;
  if (!o->model && !db_is_url(o->db) && access(o->db, F_OK)) return diag_fail(d, TEMPER_EINVAL, "%s: no such database", o->db);
  if ((s = temper_db_open(o->db, tune_db_versions(), &db, err, sizeof err))) { diag_fail(d, s, "%s", err); goto out; }
  g.model_tasks = mt, g.n_model_tasks = n_mt;
  if ((s = db_targets(db, &g.targets, &g.n_targets)) || (s = db_foreach(db, 0, collect, &g))) {
    diag_fail(d, s, "%s", s == TEMPER_EDB ? db_errmsg(db) : "out of memory");
    goto out;
  }
  strbuf_printf(&pg.b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/><title>temper tuning report</title>"
                       "<style>%s</style></head><body>\n<h1>Tuning report</h1>\n<p class=\"meta\">database ", style_css);
  svg_text(&pg.b, db_where(db));
  if (o->model) {
    strbuf_printf(&pg.b, ", model ");
    svg_text(&pg.b, o->model);
  }
  char when[64];
  time_t now = time(NULL);
  strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", gmtime(&now));
  strbuf_printf(&pg.b, ", written %s by temper %s</p>\n", when, TEMPER_VERSION);
  if (!g.n) strbuf_printf(&pg.b, "<p>No records%s yet: run <code>temper tune</code> first.</p>\n", o->model ? " for this model" : "");
  if (o->model) {   /* what a build here does, at each thread count the records have */
    cg_target host;
    cg_host_target(&host, d);
    if (o->measure && (s = engine_create(&e, d))) goto out;
    int done[64] = {0}, nd = 0;
    for (int i = 0; i < g.n; i++) {
      int seen = 0;
      for (int j = 0; j < nd; j++) seen |= done[j] == g.s[i].threads;
      if (!seen && nd < 64) done[nd++] = g.s[i].threads;
    }
    if (!nd) done[nd++] = 1;
    for (int i = 0; i < nd; i++) build_block(&pg, done[i], &host, e);
  }
  for (int i = 0; i < g.n; i++) section_block(&pg, db, &g.s[i], i);
  strbuf_printf(&pg.b, "</body></html>\n");
  if (pg.b.failed) { s = diag_fail(d, TEMPER_ENOMEM, "out of memory writing the report"); goto out; }
  if (fwrite(pg.b.s, 1, pg.b.len, out) != pg.b.len) s = diag_fail(d, TEMPER_EIO, "cannot write the report");
  if (n_sections) *n_sections = g.n;
out:
  for (int i = 0; i < g.n; i++) {
    for (int j = 0; j < g.s[i].n_tasks; j++) free(g.s[i].tasks[j].r);
    free(g.s[i].tasks);
  }
  free(g.s);
  free(g.targets);
  free(mt);
  free(pg.b.s);
  engine_destroy(e);
  temper_db_close(db);
  return s;
}
