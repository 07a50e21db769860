/* tune.c: the tune loop. For each task: the search proposes a batch of new
 * configs, builder threads compile them to object code (each thread with its
 * own LLVM context and target machine), then the runner measures them one by
 * one — compilation is paused while a measurement runs — and every outcome
 * goes into the database the moment it exists. At the end the fastest
 * configs are measured again with more rounds. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "choose.h"
#include "cost_model.h"
#include "log.h"
#include "target.h"
#include "tune.h"

enum { BATCH = 8 };


const db_versions *tune_db_versions(void) {
  static const db_versions v = {TMPL_COUNT, tmpl_names, tmpl_versions};
  return &v;
}

int tune_tmpl_version(const char *name) {
  for (int i = 0; i < TMPL_COUNT; i++)
    if (!strcmp(tmpl_names[i], name)) return tmpl_versions[i];
  return -1;
}

/* ---- builder threads ---- */
typedef struct build_job {
  const tune_task *t;
  sched_config cfg;
  obj_code obj;
  temper_status status;
  char error[256];
} build_job;

typedef struct builders {
  int n;
  cg_compiler *cc[16];
  int vec;
  build_job *jobs;
  int n_jobs;
} builders;

typedef struct builder_arg { builders *b; int k; } builder_arg;

static void *builder_thread(void *arg) {
  builder_arg *a = arg;
  builders *b = a->b;
  for (int i = a->k; i < b->n_jobs; i += b->n) {
    build_job *j = &b->jobs[i];
    diag d = {0};
    j->status = build_object(b->cc[a->k], b->vec, j->t, &j->cfg, j->obj.name, &j->obj, &d);
    if (j->status) str_copy(j->error, sizeof j->error, d.msg);
  }
  return NULL;
}

static void build_all(builders *b) {
  pthread_t th[16];
  builder_arg args[16];
  int started = 0;
  for (int k = 1; k < b->n; k++) {
    args[k] = (builder_arg){b, k};
    if (!pthread_create(&th[k], NULL, builder_thread, &args[k])) started |= 1 << k;
  }
  args[0] = (builder_arg){b, 0};
  builder_thread(&args[0]);
  for (int k = 1; k < b->n; k++)
    if (started & (1 << k)) pthread_join(th[k], NULL);
    else { args[k] = (builder_arg){b, k}; builder_thread(&args[k]); }
}

/* ---- one measurement, recorded ---- */
/* ---- the lease heartbeat: a thread with its own connection renews this
 * tuner's leases every third of their life, so a long batch keeps them and
 * a dead tuner (kill -9, power lost, network cut) loses them ---- */
typedef struct heartbeat {
  temper_db *db;            /* the thread's own connection */
  const char *owner;
  double lease_s;
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int stop, running;
} heartbeat;

static void *heartbeat_thread(void *arg) {
  heartbeat *h = arg;
  pthread_mutex_lock(&h->mu);
  while (!h->stop) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double at = ts.tv_sec + ts.tv_nsec * 1e-9 + h->lease_s / 3;
    ts.tv_sec = (time_t)at;
    ts.tv_nsec = (long)((at - (double)ts.tv_sec) * 1e9);
    pthread_cond_timedwait(&h->cv, &h->mu, &ts);
    if (h->stop) break;
    pthread_mutex_unlock(&h->mu);
    db_lease_renew(h->db, h->owner, h->lease_s);   /* a failure: the next beat tries again */
    pthread_mutex_lock(&h->mu);
  }
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

static void heartbeat_start(heartbeat *h, temper_db *db, const char *owner, double lease_s) {
  memset(h, 0, sizeof *h);
  char err[256];
  if (db_reopen(db, &h->db, err, sizeof err)) return;   /* then the batches' own claims renew */
  db_set_wait(h->db, lease_s / 3);
  h->owner = owner, h->lease_s = lease_s;
  pthread_mutex_init(&h->mu, NULL);
  pthread_cond_init(&h->cv, NULL);
  h->running = !pthread_create(&h->th, NULL, heartbeat_thread, h);
  if (!h->running) {
    temper_db_close(h->db);
    h->db = NULL;
  }
}

static void heartbeat_stop(heartbeat *h) {
  if (!h->running) return;
  pthread_mutex_lock(&h->mu);
  h->stop = 1;
  pthread_cond_signal(&h->cv);
  pthread_mutex_unlock(&h->mu);
  pthread_join(h->th, NULL);
  pthread_mutex_destroy(&h->mu);
  pthread_cond_destroy(&h->cv);
  temper_db_close(h->db);
  h->running = 0;
}

typedef struct tuner {
  temper_db *db;
  const tune_opts *o;
  builders b;
  runner *r;
  int64_t target_id, run_id;
  char host[64];
  unsigned long counter;
  double t_compile, t_measure;
  db_lease_owner me;        /* this tuner in the leases table */
  double lease_s, round_start;   /* the round: leases finished after this are this round's */
  db_chooser *pre;          /* the shipped logs (tune_opts.pretuned), or NULL */
} tuner;

static int stopped(const tuner *tu) { return tu->o->stop && *tu->o->stop; }

static double median_of(const double *v, int n) {
  double tmp[MEASURE_MAX_ROUNDS];
  memcpy(tmp, v, sizeof(double) * (size_t)n);
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && tmp[j - 1] > tmp[j]; j--) {
      double x = tmp[j];
      tmp[j] = tmp[j - 1];
      tmp[j - 1] = x;
    }
  return n ? (n % 2 ? tmp[n / 2] : 0.5 * (tmp[n / 2 - 1] + tmp[n / 2])) : 0;
}

/* a measurement as the database keeps it */
static void make_record(tuner *tu, const tune_task *t, const sched_config *cfg, int64_t idx, const measure_result *m, int remeasure,
                        db_record *out) {
  db_record r = {0};
  snprintf(r.workload, sizeof r.workload, "%s", t->key);
  r.target_id = tu->target_id;
  snprintf(r.tmpl, sizeof r.tmpl, "%s", tmpl_names[cfg->tmpl]);
  r.tmpl_version = tmpl_versions[cfg->tmpl];
  config_json(&t->space, cfg, r.config, sizeof r.config);
  r.config_index = idx;
  r.threads = tu->o->m.threads;
  r.status = m->status;
  if (m->status == DB_OK && m->rounds > 0) {
    r.rounds = m->rounds;
    r.median_s = median_of(m->times, m->rounds);
    r.min_s = r.max_s = m->times[0];
    for (int i = 1; i < m->rounds; i++) {
      r.min_s = fmin(r.min_s, m->times[i]);
      r.max_s = fmax(r.max_s, m->times[i]);
    }
    r.gflops = t->flops / r.median_s * 1e-9;
  } else if (m->status == DB_OK) {
    r.status = DB_RUNTIME_ERROR;
    snprintf(r.error, sizeof r.error, "no timing rounds");
  }
  if (m->status != DB_OK) str_copy(r.error, sizeof r.error, m->error);
  snprintf(r.host, sizeof r.host, "%s", tu->host);
  snprintf(r.temper_version, sizeof r.temper_version, "%s", TEMPER_VERSION);
  r.run_id = tu->run_id;
  r.remeasure = remeasure;
  *out = r;
}

/* a batch's measurements, recorded in one transaction: each is measured
 * before any is written, so one commit loses nothing a commit per record
 * would keep, and costs a server's disk flush once per batch */
static temper_status record_batch(tuner *tu, const tune_task *t, const int64_t *idx, const measure_result *m, int n, int remeasure,
                                  db_record *out) {
  for (int i = 0; i < n; i++) {
    sched_config c;
    space_config(&t->space, idx[i], &c);
    make_record(tu, t, &c, idx[i], &m[i], remeasure, &out[i]);
  }
  return db_insert_batch(tu->db, out, n);
}

/* builds and measures a batch of configs; outcomes in res[] */
static void measure_batch(tuner *tu, const tune_task *t, const int64_t *idx, int n, int repeat_scale, measure_result *res) {
  const tune_opts *o = tu->o;
  sched_config cfg[BATCH * 2];
  for (int i = 0; i < n; i++) space_config(&t->space, idx[i], &cfg[i]);
  if (o->measure) {   /* a fake runner: no build, no process */
    for (int i = 0; i < n; i++) res[i] = o->measure(o->measure_ctx, t, &cfg[i], idx[i]);
    return;
  }
  build_job jobs[BATCH * 2];
  memset(jobs, 0, sizeof(build_job) * (size_t)n);
  for (int i = 0; i < n; i++) {
    jobs[i].t = t;
    jobs[i].cfg = cfg[i];
    snprintf(jobs[i].obj.name, sizeof jobs[i].obj.name, "k%lu_%lld", tu->counter++, (long long)idx[i]);
  }
  tu->b.jobs = jobs;
  tu->b.n_jobs = n;
  double t0 = data_now();
  build_all(&tu->b);
  double t1 = data_now();
  tu->t_compile += t1 - t0;
  measure_opts mo = o->m;
  mo.repeat = o->m.repeat * repeat_scale;
  if (mo.repeat > MEASURE_MAX_ROUNDS) mo.repeat = MEASURE_MAX_ROUNDS;
  for (int i = 0; i < n; i++) {
    if (jobs[i].status) {
      res[i] = (measure_result){.status = DB_COMPILE_ERROR};
      str_copy(res[i].error, sizeof res[i].error, jobs[i].error);
    } else {
      runner_hook h = o->hook ? o->hook(o->hook_ctx, t, idx[i]) : HOOK_NONE;
      res[i] = runner_measure(tu->r, t, &cfg[i], &jobs[i].obj, &mo, h);
    }
    free(jobs[i].obj.data);
  }
  tu->t_measure += data_now() - t1;
}

static int matches(const tune_opts *o, const tune_task *t) { return !o->task_pattern || strstr(t->key, o->task_pattern); }

static void progress(tuner *tu, int ti, int nt, const tune_task *t, int done, int budget, double best_s, int errors, double t_start,
                     double left_s) {
  FILE *f = tu->o->log;
  if (!f) return;
  double el = data_now() - t_start;
  double eta = done > 0 ? el / done * (budget - done) : 0;
  if (left_s >= 0 && eta > left_s) eta = left_s;
  char trials[48];   /* a time-bound task has no trial budget to show */
  if (budget >= 100000000) snprintf(trials, sizeof trials, "%d trials", done);
  else snprintf(trials, sizeof trials, "%d/%d trials", done, budget);
  if (tu->o->tty)
    fprintf(f, "\r[%d/%d] %-.58s %-14s best %6.1f GFLOP/s  errors %d  %3.0fs elapsed  ETA %3.0fs ", ti + 1, nt, t->key, trials,
            best_s > 0 ? t->flops / best_s * 1e-9 : 0.0, errors, el, eta);
  else
    fprintf(f, "[%d/%d] %s: %s, best %.1f GFLOP/s, errors %d, %.0fs elapsed, ETA %.0fs\n", ti + 1, nt, t->key, trials,
            best_s > 0 ? t->flops / best_s * 1e-9 : 0.0, errors, el, eta);
  fflush(f);
}

/* ---- transfer: what the database knows of other workloads on this target ---- */
temper_status tune_rows_add(tune_rows *tr, const db_record *r) {
  if (r->status != DB_OK || tune_tmpl_version(r->tmpl) != r->tmpl_version || r->gflops <= 0) return TEMPER_OK;
  conv_workload w;
  if (workload_from_key(r->workload, &w)) return TEMPER_OK;
  task_space sp;
  space_build(&w, tr->vec, &sp);
  sched_config c;
  char err[200];
  if (config_parse(&sp, r->config, &c, err, sizeof err)) return TEMPER_OK;
  if (tr->n == tr->cap) {
    tr->cap = tr->cap ? tr->cap * 2 : 256;
    float *nx = realloc(tr->x, sizeof(float) * (size_t)tr->cap * CM_FEATURES), *ny = realloc(tr->y, sizeof(float) * (size_t)tr->cap);
    unsigned *ng = realloc(tr->groups, sizeof(unsigned) * (size_t)tr->cap);
    if (nx) tr->x = nx;
    if (ny) tr->y = ny;
    if (ng) tr->groups = ng;
    if (!nx || !ny || !ng) return TEMPER_ENOMEM;
  }
  cm_features(&sp, &c, tr->x + (size_t)tr->n * CM_FEATURES);
  tr->y[tr->n++] = (float)log(r->gflops);
  if (strcmp(tr->last_key, r->workload)) {   /* records come ordered by workload: one query group each */
    str_copy(tr->last_key, sizeof tr->last_key, r->workload);
    tr->groups[tr->ng++] = 0;
  }
  tr->groups[tr->ng - 1]++;
  return TEMPER_OK;
}

void tune_rows_free(tune_rows *tr) {
  free(tr->x), free(tr->y), free(tr->groups);
  memset(tr, 0, sizeof *tr);
}

typedef struct transfer {
  const tune_task *t;
  int64_t target_id;
  int pretuned;            /* rows of the shipped logs: any matching target, this workload too */
  tune_rows rows;
} transfer;

static temper_status collect_transfer(void *ctx, const db_record *r, const char *op, const char *desc, double flops) {
  (void)op, (void)desc, (void)flops;
  transfer *tr = ctx;
  if (!tr->pretuned && (r->target_id != tr->target_id || !strcmp(r->workload, tr->t->key))) return TEMPER_OK;
  return tune_rows_add(&tr->rows, r);
}

/* ---- one task's tuning: begin (resume, transfer), batches, end (top-k) ---- */
typedef struct task_state {
  const tune_task *t;
  tune_task_result *res;
  search sr;
  int64_t def_idx;
  int64_t pre_idx;         /* a shipped log's config for it, -1: none */
  int ti, nt;
  double t0, c0, m0;
  double hist[4];          /* best time after each of the last batches, for the scheduler */
  int batches;
  int64_t seen_id;         /* --minutes: records up to this id are in the search */
} task_state;

/* the workload's description, as the database keeps it */
static void task_desc(const tune_task *t, char *desc, size_t n) {
  const conv_workload *w = &t->w;
  snprintf(desc, n,
           "{\"op\":\"conv2d\",\"N\":%lld,\"C\":%lld,\"H\":%lld,\"W\":%lld,\"K\":%lld,\"R\":%lld,\"S\":%lld,\"stride\":[%lld,%lld],"
           "\"padding\":[%lld,%lld,%lld,%lld],\"dilation\":[%lld,%lld],\"groups\":%lld,\"dtype\":\"float32\",\"layout\":\"NCHW\"}",
           (long long)w->N, (long long)w->C, (long long)w->H, (long long)w->W, (long long)w->K, (long long)w->R, (long long)w->S,
           (long long)w->sh, (long long)w->sw, (long long)w->pt, (long long)w->pl, (long long)w->pb, (long long)w->pr,
           (long long)w->dh, (long long)w->dw, (long long)w->G);
}

/* the task's workload in the database (a lease names it) */
static temper_status task_register(tuner *tu, const tune_task *t, diag *d) {
  char desc[512];
  task_desc(t, desc, sizeof desc);
  int64_t wid;
  temper_status s = db_workload_id(tu->db, t->key, "conv2d", desc, t->flops, &wid);
  return s ? diag_fail(d, s, "%s", db_errmsg(tu->db)) : TEMPER_OK;
}

static temper_status task_begin(tuner *tu, const tune_task *t, int ti, int nt, tune_task_result *res, task_state *st, diag *d) {
  const tune_opts *o = tu->o;
  temper_status s;
  memset(st, 0, sizeof *st);
  st->t = t, st->res = res, st->ti = ti, st->nt = nt;
  if ((s = task_register(tu, t, d))) return s;
  search_init(&st->sr, o->search, &t->space, o->seed ^ data_hash_name(t->key));
  /* resume: what the database already knows for this condition */
  int64_t *done_idx = NULL;
  int n_done = 0;
  db_record *oks = NULL;
  int n_ok = 0;
  if ((s = db_measured(tu->db, t->key, tu->target_id, o->m.threads, &done_idx, &n_done)) ||
      (s = db_ok_records(tu->db, t->key, tu->target_id, o->m.threads, &oks, &n_ok))) {
    free(done_idx);
    return diag_fail(d, s, "%s", db_errmsg(tu->db));
  }
  for (int i = 0; i < n_done; i++) search_mark(&st->sr, done_idx[i]);
  memset(res, 0, sizeof *res);
  if (o->search == SEARCH_XGB) {   /* start warm from other workloads' records */
    transfer tr = {.t = t, .target_id = tu->target_id, .rows = {.vec = t->space.vec}};
    temper_status ts = db_foreach(tu->db, 0, collect_transfer, &tr);
    if (!ts && tu->pre) {   /* and the shipped logs: a workload new here starts from what other machines of its kind learnt */
      tr.pretuned = 1;
      tr.rows.last_key[0] = 0;
      int before = tr.rows.n;
      ts = db_chooser_foreach_pretuned(tu->pre, collect_transfer, &tr);
      res->pretuned_rows = tr.rows.n - before;
    }
    if (!ts && tr.rows.n) search_set_transfer(&st->sr, tr.rows.x, tr.rows.y, tr.rows.n, tr.rows.groups, tr.rows.ng);
    res->transfer_rows = tr.rows.n;
    tune_rows_free(&tr.rows);
  }
  for (int i = 0; i < n_ok; i++) {
    search_update(&st->sr, oks[i].config_index, oks[i].median_s);
    if (!res->best_s || oks[i].median_s < res->best_s) {
      res->best_s = oks[i].median_s;
      str_copy(res->best_config, sizeof res->best_config, oks[i].config);
    }
  }
  sched_config def;
  config_default(&t->space, &def);
  st->def_idx = space_index(&t->space, &def);
  for (int i = 0; i < n_ok; i++)
    if (oks[i].config_index == st->def_idx && !oks[i].remeasure) res->default_s = oks[i].median_s;
  st->pre_idx = -1;
  if (tu->pre && !n_ok) {   /* nothing measured here yet: what the shipped logs know goes first */
    sched_config pc;
    char err[256];
    conv_site site = {0};
    if (db_chooser_choose(tu->pre, t->key, &t->space, &site, &pc, err, sizeof err) == 1) {
      st->pre_idx = space_index(&t->space, &pc);
      res->pretuned = st->pre_idx != st->def_idx;
    }
  }
  free(oks);
  free(done_idx);
  st->t0 = data_now(), st->c0 = tu->t_compile, st->m0 = tu->t_measure;
  return TEMPER_OK;
}

/* one batch of at most `want` new configs; *n_done = how many (0: the space is spent) */
static temper_status task_batch(tuner *tu, task_state *st, int want, int budget, double left_s, int *n_done, diag *d) {
  const tune_opts *o = tu->o;
  const tune_task *t = st->t;
  tune_task_result *res = st->res;
  int64_t idx[BATCH];
  int n = 0;
  *n_done = 0;
  if (want > BATCH) want = BATCH;
  if (!tu->o->no_default && !search_seen(&st->sr, st->def_idx)) {   /* the default config first: the baseline of the summary */
    search_mark(&st->sr, st->def_idx);
    idx[n++] = st->def_idx;
  }
  if (st->pre_idx >= 0 && n < want && !search_seen(&st->sr, st->pre_idx)) {
    search_mark(&st->sr, st->pre_idx);
    idx[n++] = st->pre_idx;
  }
  n += search_next(&st->sr, idx + n, want - n);
  if (!n) return TEMPER_OK;
  measure_result m[BATCH];
  measure_batch(tu, t, idx, n, 1, m);
  db_record recs[BATCH];
  temper_status s = record_batch(tu, t, idx, m, n, 0, recs);
  if (s) return diag_fail(d, s, "%s", db_errmsg(tu->db));
  for (int i = 0; i < n; i++) {
    const db_record r = recs[i];
    res->new_trials++;
    if (r.status != DB_OK) res->errors++;
    if (o->on_record) o->on_record(o->on_record_ctx, t, &r);
    search_update(&st->sr, idx[i], r.status == DB_OK ? r.median_s : INFINITY);
    if (r.status == DB_OK && (!res->best_s || r.median_s < res->best_s)) {
      res->best_s = r.median_s;
      str_copy(res->best_config, sizeof res->best_config, r.config);
    }
    if (r.status == DB_OK && idx[i] == st->def_idx) res->default_s = r.median_s;
  }
  *n_done = n;
  memmove(st->hist, st->hist + 1, sizeof st->hist - sizeof st->hist[0]);
  st->hist[3] = res->best_s;
  st->batches++;
  progress(tu, st->ti, st->nt, t, res->new_trials, budget, res->best_s, res->errors, st->t0, left_s);
  return TEMPER_OK;
}

/* the fastest few again, with more rounds: a noisy fluke must not win */
static temper_status task_end(tuner *tu, task_state *st, diag *d) {
  const tune_opts *o = tu->o;
  const tune_task *t = st->t;
  tune_task_result *res = st->res;
  temper_status s;
  search_free(&st->sr);
  res->compile_s = tu->t_compile - st->c0;
  res->measure_s = tu->t_measure - st->m0;
  if (o->top_k > 0 && !stopped(tu)) {
    db_record *top = NULL;
    int n_top = 0;
    if ((s = db_ok_records(tu->db, t->key, tu->target_id, o->m.threads, &top, &n_top))) return diag_fail(d, s, "%s", db_errmsg(tu->db));
    int64_t idx[BATCH * 2];
    int k = 0;
    for (int i = 0; i < n_top && k < o->top_k && k < BATCH * 2; i++) {
      int dup = 0;
      for (int j = 0; j < k; j++) dup |= idx[j] == top[i].config_index;
      if (!dup) idx[k++] = top[i].config_index;
    }
    free(top);
    if (k) {
      measure_result m[BATCH * 2];
      measure_batch(tu, t, idx, k, 3, m);
      db_record recs[BATCH * 2];
      if ((s = record_batch(tu, t, idx, m, k, 1, recs))) return diag_fail(d, s, "%s", db_errmsg(tu->db));
      db_record best;
      if (db_best(tu->db, t->key, tu->target_id, o->m.threads, &best)) {
        res->best_s = best.median_s;
        str_copy(res->best_config, sizeof res->best_config, best.config);
      }
    }
  }
  if (o->log && o->tty) fprintf(o->log, "\n");
  return TEMPER_OK;
}

/* still ours? A lease lost (expired while the server was away, taken by
 * another tuner) ends the task here. Not asked while records wait in the
 * spool: the server is away, and tuning goes on. */
static int lease_kept(tuner *tu, const tune_task *t) {
  if (db_pending(tu->db)) return 1;
  return db_lease_held(tu->db, t->key, tu->target_id, tu->o->m.threads, tu->me.owner) != 0;
}

/* a task tuned on its own within `budget` new measurements */
static temper_status tune_task_run(tuner *tu, const tune_task *t, int ti, int nt, int budget, tune_task_result *res, diag *d) {
  task_state st;
  temper_status s = task_begin(tu, t, ti, nt, res, &st, d);
  if (s) return s;
  while (res->new_trials < budget && !stopped(tu)) {
    if (!lease_kept(tu, t)) {
      if (tu->o->log) fprintf(tu->o->log, "%s: the lease on this task was lost (another tuner has it now); going on with the next\n", t->key);
      break;
    }
    int n;
    if ((s = task_batch(tu, &st, budget - res->new_trials, budget, -1, &n, d)) || !n) break;
  }
  temper_status e = task_end(tu, &st, d);
  return s ? s : e;
}

/* --trials: each task in turn, under its lease. A task another tuner holds
 * is put back and tried again after the others; one it finished in this
 * round is skipped; one a stopped tuner left is finished where it stopped. */
static temper_status tune_sequential(tuner *tu, tune_task *tasks, int n, tune_task_result *results, diag *d) {
  const tune_opts *o = tu->o;
  char *left = calloc((size_t)n + 1, 1);
  if (!left) return diag_fail(d, TEMPER_ENOMEM, "out of memory");
  int nt = 0, k = 0, n_left = 0, waited = 0;
  for (int i = 0; i < n; i++) nt += left[i] = (char)matches(o, &tasks[i]);
  n_left = nt;
  temper_status s = TEMPER_OK;
  while (n_left && !s && !stopped(tu)) {
    int progressed = 0, busy = 0;
    for (int i = 0; i < n && !s && !stopped(tu); i++) {
      if (!left[i]) continue;
      db_lease l;
      if ((s = task_register(tu, &tasks[i], d))) break;
      if ((s = db_lease_claim(tu->db, tasks[i].key, tu->target_id, o->m.threads, &tu->me, tu->lease_s, tu->round_start, &l))) {
        s = diag_fail(d, s, "%s", db_errmsg(tu->db));
        break;
      }
      if (l.state == DB_LEASE_BUSY) { busy++; continue; }
      left[i] = 0, n_left--, progressed = 1;
      if (l.state == DB_LEASE_DONE) {
        memset(&results[i], 0, sizeof results[i]);
        str_copy(results[i].tuned_by, sizeof results[i].tuned_by, l.holder);
        if (o->log) fprintf(o->log, "[%d/%d] %s: tuned by %s in this round\n", ++k, nt, tasks[i].key, l.holder);
        continue;
      }
      int budget = o->trials, before = 0;
      if (l.prev_run && !(s = db_count_run(tu->db, tasks[i].key, tu->target_id, o->m.threads, l.prev_run, &before))) {
        budget = before < o->trials ? o->trials - before : 0;
        if (o->log)
          fprintf(o->log, "%s: taking over from a tuner that stopped (run %lld, %d trials made): %d left\n", tasks[i].key,
                  (long long)l.prev_run, before, budget);
      }
      if (!s) s = tune_task_run(tu, &tasks[i], k++, nt, budget, &results[i], d);
      results[i].resumed_run = l.prev_run;
      db_lease_release(tu->db, tasks[i].key, tu->target_id, o->m.threads, tu->me.owner, !s && !stopped(tu));
    }
    if (!progressed && busy && !s) {   /* every task left is another tuner's now: wait for them */
      if (o->log && !waited++) fprintf(o->log, "waiting: %d task%s held by other tuners\n", busy, busy > 1 ? "s" : "");
      struct timespec ts = {0, 250 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
  }
  free(left);
  return s;
}

/* The expected gain of one more batch of a task, in model seconds, after
 * Ansor's task scheduler: the task's weight (occurrences) times how fast its
 * best time fell over its last batches, with an optimistic floor so no task
 * starves; a task not measured yet comes first. The floor (5 % of its model
 * time) shrinks as 1/batches — expected improvement decays with the trials
 * spent, as in Ansor — else, once every task had stopped improving, the task
 * with the largest model time would take every remaining batch. */
double tune_task_priority(const tune_task *t, const double *hist, int batches, double best_s) {
  if (!batches || best_s <= 0) return INFINITY;
  int k = batches < 4 ? batches : 4;
  double old = hist[4 - k] > 0 ? hist[4 - k] : best_s;
  double rate = (old - best_s) / k;
  double floor = 0.05 * best_s / batches;
  return t->count * (rate > floor ? rate : floor);
}

/* --minutes: a task's lease for one batch, and what other tuners measured
 * since this tuner's last batch folded into its search. 1: go; 0: another
 * tuner holds it now; -1: finished in this round by another tuner. */
static int sched_claim(tuner *tu, task_state *st, diag *d, temper_status *s) {
  const tune_task *t = st->t;
  db_lease l;
  if ((*s = db_lease_claim(tu->db, t->key, tu->target_id, tu->o->m.threads, &tu->me, tu->lease_s, tu->round_start, &l))) {
    diag_fail(d, *s, "%s", db_errmsg(tu->db));
    return 0;
  }
  if (l.state != DB_LEASE_MINE) return l.state == DB_LEASE_DONE ? -1 : 0;
  int64_t *done = NULL;
  int n_done = 0, n_ok = 0;
  db_record *oks = NULL;
  if (db_measured(tu->db, t->key, tu->target_id, tu->o->m.threads, &done, &n_done) ||
      db_ok_records(tu->db, t->key, tu->target_id, tu->o->m.threads, &oks, &n_ok))
    n_done = n_ok = 0;   /* the server is away: tune on what the search knows */
  for (int i = 0; i < n_done; i++) search_mark(&st->sr, done[i]);
  int64_t seen = st->seen_id;
  for (int i = 0; i < n_ok; i++) {
    if (oks[i].run_id == tu->run_id || oks[i].id <= seen) continue;
    search_update(&st->sr, oks[i].config_index, oks[i].median_s);
    if (!st->res->best_s || oks[i].median_s < st->res->best_s) {
      st->res->best_s = oks[i].median_s;
      str_copy(st->res->best_config, sizeof st->res->best_config, oks[i].config);
    }
    if (oks[i].id > st->seen_id) st->seen_id = oks[i].id;
  }
  free(done);
  free(oks);
  return 1;
}

/* --minutes: the scheduler spends the budget a batch at a time where the
 * expected gain in model latency is largest; a task another tuner is
 * measuring at that moment is passed over for a second */
static temper_status tune_scheduled(tuner *tu, tune_task *tasks, int n, tune_task_result *results, diag *d) {
  const tune_opts *o = tu->o;
  task_state *st = calloc((size_t)n + 1, sizeof *st);
  char *live = calloc((size_t)n + 1, 1);
  double *away = calloc((size_t)n + 1, sizeof *away);
  temper_status s = st && live && away ? TEMPER_OK : diag_fail(d, TEMPER_ENOMEM, "out of memory");
  int nt = 0;
  for (int i = 0; i < n; i++) nt += matches(o, &tasks[i]);
  for (int i = 0, k = 0; i < n && !s; i++)
    if (matches(o, &tasks[i]) && !(s = task_begin(tu, &tasks[i], k++, nt, &results[i], &st[i], d))) live[i] = 1;
  for (int i = 0; i < n && !s; i++) {   /* what the database holds now is known; later records are others' news */
    db_record *oks = NULL;
    int n_ok = 0;
    if (live[i] && !db_ok_records(tu->db, tasks[i].key, tu->target_id, o->m.threads, &oks, &n_ok))
      for (int j = 0; j < n_ok; j++) st[i].seen_id = oks[j].id > st[i].seen_id ? oks[j].id : st[i].seen_id;
    free(oks);
  }
  double end = data_now() + o->minutes * 60;
  while (!s && data_now() < end && !stopped(tu)) {
    int pick = -1;
    double best = -1, now = data_now();
    int waiting = 0;
    for (int i = 0; i < n; i++) {
      if (!live[i] || results[i].new_trials >= o->trials) continue;
      if (away[i] > now) { waiting++; continue; }
      double pr = tune_task_priority(&tasks[i], st[i].hist, st[i].batches, results[i].best_s);
      if (pr > best || (pr == best && pick >= 0 && tasks[i].flops * tasks[i].count > tasks[pick].flops * tasks[pick].count))
        best = pr, pick = i;
    }
    if (pick < 0) {
      if (!waiting) break;
      struct timespec ts = {0, 100 * 1000 * 1000};
      nanosleep(&ts, NULL);
      continue;
    }
    int go = sched_claim(tu, &st[pick], d, &s);
    if (s) break;
    if (go < 0) { live[pick] = 0; str_copy(results[pick].tuned_by, sizeof results[pick].tuned_by, "another tuner"); continue; }
    if (!go) { away[pick] = now + 1; continue; }
    int got;
    s = task_batch(tu, &st[pick], BATCH, o->trials, end - data_now(), &got, d);
    db_lease_release(tu->db, tasks[pick].key, tu->target_id, o->m.threads, tu->me.owner, 0);
    if (s) break;
    if (!got) live[pick] = 0;
  }
  for (int i = 0; i < n; i++)
    if (matches(o, &tasks[i]) && st[i].t) {
      if (o->log && o->tty) fprintf(o->log, "\n");
      temper_status e = task_end(tu, &st[i], d);
      if (!s) s = e;
    }
  free(st);
  free(live);
  free(away);
  return s;
}

/* this tuner in the leases table: host, pid and a random part, unique */
static void lease_owner(tuner *tu) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t h = data_hash_name(tu->host) ^ ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec * 2654435761u;
  snprintf(tu->me.owner, sizeof tu->me.owner, "%s:%d:%016llx", tu->host, (int)getpid(), (unsigned long long)h);
  str_copy(tu->me.host, sizeof tu->me.host, tu->host);
  tu->me.run_id = tu->run_id;
}

static temper_status save_pending(tuner *tu, const db_target *tg, const tune_task *tasks, int n, diag *d) {
  char path[64];
  snprintf(path, sizeof path, "temper-unwritten-%d.jsonl", (int)getpid());
  FILE *f = fopen(path, "w");
  int k = 0;
  const db_record *r = db_pending_records(tu->db);
  for (; f && k < db_pending(tu->db); k++) {
    int i = 0;
    while (i < n && strcmp(tasks[i].key, r[k].workload)) i++;
    if (i == n) continue;
    char desc[512];
    task_desc(&tasks[i], desc, sizeof desc);
    if (log_write_record(f, &r[k], tg, "conv2d", desc, tasks[i].flops)) break;
  }
  if (f && fclose(f)) k = -1;
  if (!f || k < db_pending(tu->db))
    return diag_fail(d, TEMPER_EDB, "%s; %d measurements could not be saved to %s either: they are lost", db_errmsg(tu->db),
                     db_pending(tu->db), path);
  return diag_fail(d, TEMPER_EDB, "%s; its %d unwritten measurements are saved in %s: `temper db import '%s' %s` adds them",
                   db_errmsg(tu->db), k, path, db_where(tu->db), path);
}

temper_status tune_run(temper_db *db, tune_task *tasks, int n, const tune_opts *o, const char *command,
                       tune_task_result *results, diag *d) {
  tuner tu = {.db = db, .o = o, .lease_s = o->lease_s > 0 ? o->lease_s : 60};
  gethostname(tu.host, sizeof tu.host - 1);
  db_target tg;
  if (o->target) tg = *o->target;
  else target_host(&tg);
  temper_status s = db_target_id(db, &tg, &tu.target_id);
  if (!s) s = db_run_begin(db, command, o->seed, tu.host, &tu.run_id);
  if (!s) lease_owner(&tu);
  if (!s) s = db_tuner_join(db, &tu.me, tu.lease_s, &tu.round_start);
  if (s) return diag_fail(d, s, "%s", db_errmsg(db));
  if (!o->measure) {
    cg_target ct;
    cg_host_target(&ct, d);
    tu.b.vec = ct.vec;
    tu.b.n = o->build_jobs < 1 ? 1 : o->build_jobs > 16 ? 16 : o->build_jobs;
    for (int k = 0; k < tu.b.n && !s; k++) s = cg_compiler_create(&tu.b.cc[k], &ct, d);
    char err[256];
    if (!s && !(tu.r = runner_start(o->runner_binary, err, sizeof err))) s = diag_fail(d, TEMPER_EIO, "%s", err);
  }
  if (!s && o->pretuned) {
    cg_target ct;
    char err[4096];
    cg_host_target(&ct, d);
    if (db_chooser_open(NULL, &ct, o->m.threads, 0, &tu.pre, err, sizeof err) || db_chooser_use_pretuned(tu.pre, o->pretuned, err, sizeof err))
      s = diag_fail(d, TEMPER_EINVAL, "%s", err);
  }
  heartbeat hb;
  heartbeat_start(&hb, db, tu.me.owner, tu.lease_s);
  if (!s && o->minutes > 0) s = tune_scheduled(&tu, tasks, n, results, d);
  else if (!s) s = tune_sequential(&tu, tasks, n, results, d);
  heartbeat_stop(&hb);
  if (db_pending(db) && o->log)
    fprintf(o->log, "%s is away: %d measurements wait to be written\n", db_where(db), db_pending(db));
  if (db_flush(db)) {   /* the server stayed away: the measurements go to a log the user can import */
    temper_status e = save_pending(&tu, &tg, tasks, n, d);
    if (!s) s = e;
  }
  db_lease_release_all(db, tu.me.owner);   /* stopped or failed: another tuner may take them at once */
  db_run_end(db, tu.run_id, tu.t_compile, tu.t_measure);
  if (o->log && !o->measure)
    fprintf(o->log, "time: compile %.1f s, measure %.1f s\n", tu.t_compile, tu.t_measure);
  runner_stop(tu.r);
  for (int k = 0; k < tu.b.n; k++) cg_compiler_destroy(tu.b.cc[k]);
  db_chooser_close(tu.pre);
  return s;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median_sorting(double *v, int n) {   /* sorts v */
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void tune_paired_compare(const double *base, const double *cand, int n, paired_result *r) {
  *r = (paired_result){.n = n};
  double *v = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
  if (!v || n <= 0) { free(v); return; }
  for (int i = 0; i < n; i++) v[i] = base[i];
  r->base_s = median_sorting(v, n);
  for (int i = 0; i < n; i++) {
    v[i] = base[i] - cand[i];
    r->wins += v[i] > 0;
  }
  r->gain_s = median_sorting(v, n);
  r->rel = r->base_s > 0 ? r->gain_s / r->base_s : 0;
  free(v);
}

int tune_paired_better(const paired_result *r, double min_rel) {
  return r->n > 0 && r->rel >= min_rel && (min_rel < 0 || r->wins * 10 >= r->n * 6);
}

int tune_paired_no_loss(const paired_result *r, double min_rel) {
  if (min_rel < 0) return tune_paired_better(r, min_rel);
  return r->n > 0 && r->rel > 0 && r->wins * 2 >= r->n;
}

