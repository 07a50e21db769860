/* conv2d.c: temper's conv2d kernels against oneDNN and the FMA peak, side by
 * side in one process, for each ResNet-50 layer at 1 and 2 threads:
 * temper's default config, the best of a random sweep of N valid configs,
 * oneDNN (format_tag::any, forward inference). Medians of timed rounds.
 *
 * usage: bench/conv2d [--sweep N] [--seed S] [--layer NAME | --shape C,H,W,K,k,s,p] [--threads T] [--all] [--winograd] [--db DB] [--config TEXT]...
 * (--config: a config, timed on every layer it applies to and printed; one
 * that applies to no layer swept ends the run with status 1, naming it)
 * (--db adds, per layer and thread count, the best direct config a tuning
 * database recorded for the workload at that thread count, timed here with
 * the rest; --all adds the ResNet-18-only layers; --winograd: only the 3×3 layers
 * of stride 1 and 2, the best of N random direct and N random Winograd configs, each
 * then improved by coordinate descent over the knobs, against oneDNN, in
 * effective GFLOP/s: the direct FLOPs divided by the time) */
#include <dnnl.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "db.h"
#include "fma_peak.h"
#include "engine.h"
#include "space.h"
#include "tune.h"
#include "workloads.h"

/* ---- the best recorded direct configs (--db) ---- */
typedef struct rec_cfg { char key[256]; int threads; char config[512]; double median_s; } rec_cfg;
typedef struct rec_set { rec_cfg *r; int n, cap; } rec_set;
static temper_status keep_direct(void *ctx, const db_record *r, const char *op, const char *desc, double flops) {
  (void)op, (void)desc, (void)flops;
  rec_set *s = ctx;
  if (r->status != DB_OK || !strcmp(r->tmpl, "conv2d_winograd")) return TEMPER_OK;
  for (int i = 0; i < s->n; i++)   /* the fastest per (workload, threads), over every target and input block */
    if (s->r[i].threads == r->threads && !strcmp(s->r[i].key, r->workload)) {
      if (r->median_s < s->r[i].median_s) snprintf(s->r[i].config, sizeof s->r[i].config, "%s", r->config), s->r[i].median_s = r->median_s;
      return TEMPER_OK;
    }
  if (s->n == s->cap) {
    rec_cfg *g = realloc(s->r, sizeof *g * (size_t)(s->cap = s->cap ? 2 * s->cap : 64));
    if (!g) return TEMPER_ENOMEM;
    s->r = g;
  }
  rec_cfg *c = &s->r[s->n++];
  snprintf(c->key, sizeof c->key, "%s", r->workload);
  snprintf(c->config, sizeof c->config, "%s", r->config);
  c->threads = r->threads;
  c->median_s = r->median_s;
  return TEMPER_OK;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* median seconds per call: rounds of `number` calls, number grown until a
 * round lasts 10 ms */
typedef void (*call_fn)(void *);
static double time_median(call_fn fn, void *ctx, int rounds) {
  fn(ctx);
  int number = 1;
  for (;;) {
    double t0 = now();
    for (int i = 0; i < number; i++) fn(ctx);
    double t = now() - t0;
    if (t > 0.01 || number > 1 << 20) break;
    number = t < 1e-4 ? number * 10 : (int)(number * 0.0125 / t) + 1;
  }
  double r[64];
  for (int k = 0; k < rounds; k++) {
    double t0 = now();
    for (int i = 0; i < number; i++) fn(ctx);
    r[k] = (now() - t0) / number;
  }
  qsort(r, (size_t)rounds, sizeof(double), cmp_d);
  return r[rounds / 2];
}

/* ---- FMA peak per thread (fma_peak.h), summed over threads ---- */
typedef struct peak_job { double gflops; } peak_job;
static void *peak_thread(void *arg) {
  peak_job *j = arg;
  j->gflops = fma_peak_thread(0);
  return NULL;
}

static double fma_peak(int threads) {
  pthread_t th[8];
  peak_job jobs[8];
  double total = 0;
  for (int i = 0; i < threads; i++) pthread_create(&th[i], NULL, peak_thread, &jobs[i]);
  for (int i = 0; i < threads; i++) {
    pthread_join(th[i], NULL);
    total += jobs[i].gflops;
  }
  return total;
}

/* ---- temper ---- */
typedef struct fixed { const char *key; sched_config cfg; } fixed;
static int choose_fixed(void *ctx, const char *key, const struct task_space *s, const struct conv_site *site, struct sched_config *out, char *err, size_t n) {
  (void)site;
  (void)s, (void)err, (void)n;
  fixed *fx = ctx;
  if (strcmp(key, fx->key)) return 0;
  *out = fx->cfg;
  return 1;
}

typedef struct kcall { exec_step *st; temper_pool *pool; } kcall;
static void run_kernel(void *ctx) {
  kcall *k = ctx;
  k->st->k->fn(k->st->argv, k->pool);
}

/* seconds per call of the conv kernel under cfg, at each thread count */
static int time_temper(temper_engine *e, const bench_layer *L, const char *key, const sched_config *cfg, int n_thr,
                       const int *thr, double *out) {
  char text[1024];
  snprintf(text, sizeof text,
           "def @main(%%x: Tensor[(1, %d, %d, %d), float32], %%w: Tensor[(%d, %d, %d, %d), float32]) {\n"
           "  %%0 = nn.conv2d(%%x, %%w, strides=[%d, %d], padding=[%d, %d, %d, %d]);\n"
           "  %%1 = nn.relu(%%0);\n  nn.max_pool2d(%%1)\n}\n",
           L->C, L->H, L->W, L->K, L->C, L->k, L->k, L->stride, L->stride, L->pad, L->pad, L->pad, L->pad);
  temper_graph *g = NULL;
  char *err = NULL;
  if (temper_graph_parse(text, "bench", &g, &err)) { fprintf(stderr, "%s\n", err); free(err); return -1; }
  node *wp = g->main->params[1];
  float *w = malloc(sizeof(float) * (size_t)shape_numel(&wp->ty.shape));
  data_random_param(w, &wp->ty.shape, 5, 0, 0);
  float *vals[2] = {NULL, w};
  diag d = {0};
  fixed fx = {key, *cfg};
  pipeline_opts o = {.vec = e->target.vec, .choose = choose_fixed, .ctx = &fx, .block_inputs = 1};
  int rc = -1;
  if (bind_params(g, vals, &d) || pipeline_optimize_with(g, &o, &d)) { fprintf(stderr, "%s\n", d.msg); goto out; }
  for (int t = 0; t < n_thr; t++) {
    exec *x = NULL;
    if (exec_create(e, g, thr[t], &x, &d)) { fprintf(stderr, "%s\n", d.msg); goto out; }
    float *in = malloc(sizeof(float) * (size_t)L->C * L->H * L->W);
    shape_t xs = {4, {1, L->C, L->H, L->W}};
    data_random_param(in, &xs, 9, 1, 0);
    exec_set_input(x, 0, in);
    exec_run(x);
    free(in);
    kcall kc = {NULL, x->pool};
    for (int i = 0; i < x->n_steps; i++)
      if (strstr(x->steps[i].k->name, "conv2d")) kc.st = &x->steps[i];
    out[t] = time_median(run_kernel, &kc, 9);
    exec_destroy(x);
  }
  rc = 0;
out:
  free(w);
  temper_graph_destroy(g);
  return rc;
}

/* ---- oneDNN ---- */
typedef struct dnnl_run { dnnl_primitive_t prim; dnnl_stream_t stream; dnnl_exec_arg_t args[3]; } dnnl_run;
static void run_dnnl(void *ctx) {
  dnnl_run *r = ctx;
  dnnl_primitive_execute(r->prim, r->stream, 3, r->args);
  dnnl_stream_wait(r->stream);
}

static double time_dnnl(dnnl_engine_t eng, const bench_layer *L, int threads) {
  omp_set_num_threads(threads);
  int OH = (L->H + 2 * L->pad - L->k) / L->stride + 1, OW = (L->W + 2 * L->pad - L->k) / L->stride + 1;
  dnnl_dims_t sd = {1, L->C, L->H, L->W}, wd = {L->K, L->C, L->k, L->k}, dd = {1, L->K, OH, OW};
  dnnl_dims_t st = {L->stride, L->stride}, dil = {0, 0}, pl = {L->pad, L->pad}, pr = {L->pad, L->pad};
  dnnl_memory_desc_t smd, wmd, dmd;
  dnnl_memory_desc_init_by_tag(&smd, 4, sd, dnnl_f32, dnnl_format_tag_any);
  dnnl_memory_desc_init_by_tag(&wmd, 4, wd, dnnl_f32, dnnl_format_tag_any);
  dnnl_memory_desc_init_by_tag(&dmd, 4, dd, dnnl_f32, dnnl_format_tag_any);
  dnnl_convolution_desc_t cd;
  dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &smd, &wmd, NULL, &dmd, st, dil, pl, pr);
  dnnl_primitive_desc_t pd;
  if (dnnl_primitive_desc_create(&pd, &cd, NULL, eng, NULL) != dnnl_success) return NAN;
  dnnl_run r;
  dnnl_stream_create(&r.stream, eng, dnnl_stream_default_flags);
  dnnl_memory_t m[3];
  const dnnl_query_t q[3] = {dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_dst_md};
  const int argk[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
  for (int i = 0; i < 3; i++) {
    dnnl_memory_create(&m[i], dnnl_primitive_desc_query_md(pd, q[i], 0), eng, DNNL_MEMORY_ALLOCATE);
    void *h;
    dnnl_memory_get_data_handle(m[i], &h);
    memset(h, 0, dnnl_memory_desc_get_size(dnnl_primitive_desc_query_md(pd, q[i], 0)));
    r.args[i] = (dnnl_exec_arg_t){argk[i], m[i]};
  }
  dnnl_primitive_create(&r.prim, pd);
  double t = time_median(run_dnnl, &r, 9);
  dnnl_primitive_destroy(r.prim);
  for (int i = 0; i < 3; i++) dnnl_memory_destroy(m[i]);
  dnnl_stream_destroy(r.stream);
  dnnl_primitive_desc_destroy(pd);
  return t;
}

/* a random valid config of template t */
static void sample(const task_space *sp, conv_tmpl t, pcg32 *rng, sched_config *cfg) {
  const tmpl_space *ts = space_tmpl(sp, t);
  do space_config(sp, space_tmpl_point(ts, (int64_t)(pcg32_next(rng) % (uint32_t)ts->size)), cfg);
  while (!space_valid(sp, cfg));
}

/* one config timed at every thread count; the bests per thread count kept */
typedef struct best_set { double t[2]; sched_config cfg[2]; } best_set;
static int try_config(temper_engine *e, const bench_layer *L, const char *key, const sched_config *cfg, int n_thr, const int *thr,
                      best_set *b) {
  double t[2];
  if (time_temper(e, L, key, cfg, n_thr, thr, t)) return -1;
  for (int i = 0; i < n_thr; i++)
    if (t[i] < b->t[i]) b->t[i] = t[i], b->cfg[i] = *cfg;
  return 0;
}

/* coordinate descent from the best config at thread count i: every other
 * candidate of each knob in turn, twice over */
static int descend(temper_engine *e, const bench_layer *L, const char *key, const task_space *sp, int n_thr, const int *thr,
                   best_set *b, int i) {
  for (int round = 0; round < 2; round++) {
    sched_config start = b->cfg[i];
    const tmpl_space *ts = space_tmpl(sp, start.tmpl);
    for (int k = 0; k < ts->n_knobs; k++)
      for (int v = 0; v < ts->knobs[k].n; v++) {
        sched_config c = b->cfg[i];
        if (c.v[k] == ts->knobs[k].vals[v]) continue;
        c.v[k] = ts->knobs[k].vals[v];
        if (space_valid(sp, &c) && try_config(e, L, key, &c, n_thr, thr, b)) return -1;
      }
    if (!memcmp(&start, &b->cfg[i], sizeof start)) break;
  }
  return 0;
}

/* the layers a run covers: bench_layers, or the one --shape names */
static const bench_layer *layers = bench_layers;
static size_t n_layers_all = sizeof bench_layers / sizeof *bench_layers;
static bench_layer shape_layer;

/* Winograd rows: every 3×3 layer of stride 1 or 2, best direct vs best Winograd vs oneDNN */
static int winograd_rows(temper_engine *e, dnnl_engine_t eng, int sweep, uint64_t seed, const char *only, int all, int n_thr, const int *thr) {
  printf("| layer | thr | best direct GFLOP/s | best Winograd eff. GFLOP/s | oneDNN GFLOP/s | direct/oneDNN | Winograd/oneDNN | Winograd/direct | best Winograd config |\n");
  printf("|---|---|---|---|---|---|---|---|---|\n");
  for (size_t li = 0; li < n_layers_all; li++) {
    const bench_layer *L = &layers[li];
    if ((!all && !L->resnet50) || (only && strcmp(only, L->name)) || L->k != 3 || L->stride > 2) continue;
    conv_workload w = {1, L->C, L->H, L->W, L->K, 3, 3, L->stride, L->stride, L->pad, L->pad, L->pad, L->pad, 1, 1, 1};
    task_space sp;
    space_build(&w, e->target.vec, &sp);
    char key[256];
    workload_key(&w, key, sizeof key);
    double flops = workload_flops(&w), best[2][2], dn[2];
    sched_config cfg, best_cfg[2];
    pcg32 rng;
    pcg32_seed(&rng, seed + li, 5);
    for (int alg = 0; alg < 2; alg++) {   /* 0: direct (the default first), 1: Winograd */
      best_set b = {{1e9, 1e9}, {{0}, {0}}};
      for (int k = 0; k < sweep; k++) {
        if (alg == 0 && k == 0) config_default(&sp, &cfg);
        else sample(&sp, alg ? TMPL_WINOGRAD : TMPL_NCHWC, &rng, &cfg);
        if (try_config(e, L, key, &cfg, n_thr, thr, &b)) return 1;
      }
      for (int i = 0; i < n_thr; i++)
        if (descend(e, L, key, &sp, n_thr, thr, &b, i)) return 1;
      for (int i = 0; i < n_thr; i++) {
        best[alg][i] = b.t[i];
        if (alg) best_cfg[i] = b.cfg[i];
      }
    }
    for (int i = 0; i < n_thr; i++) dn[i] = time_dnnl(eng, L, thr[i]);
    for (int i = 0; i < n_thr; i++) {
      char sh[256];
      config_short(&sp, &best_cfg[i], sh, sizeof sh);
      printf("| %s | %d | %.1f | %.1f | %.1f | %.2f | %.2f | %.2f | `%s` |\n", L->name, thr[i], flops / best[0][i] * 1e-9,
             flops / best[1][i] * 1e-9, flops / dn[i] * 1e-9, dn[i] / best[0][i], dn[i] / best[1][i], best[0][i] / best[1][i], sh);
    }
    fflush(stdout);
  }
  return 0;
}

int main(int argc, char **argv) {
  int sweep = 30, all = 0, n_thr = 2, thr[2] = {1, 2}, wino = 0;
  uint64_t seed = 1;
  const char *only = NULL, *dbpath = NULL, *extra[8];
  char extra_err[8][256] = {{0}};   /* why each --config did not parse for the last layer it was tried on */
  int extra_used[8] = {0};
  int n_extra = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--sweep") && i + 1 < argc) sweep = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--layer") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--shape") && i + 1 < argc) {   /* C,H,W,K,kernel,stride,pad: a layer of another network */
      bench_layer *L = &shape_layer;
      if (sscanf(argv[++i], "%d,%d,%d,%d,%d,%d,%d", &L->C, &L->H, &L->W, &L->K, &L->k, &L->stride, &L->pad) != 7 || L->C < 1 || L->H < 1 ||
          L->W < 1 || L->K < 1 || L->k < 1 || L->stride < 1 || L->pad < 0) {
        fprintf(stderr, "bench/conv2d: --shape wants C,H,W,K,kernel,stride,pad (positive; pad 0 or more), not '%s'\n", argv[i]);
        return 2;
      }
      L->name = argv[i], L->resnet50 = 1, layers = &shape_layer, n_layers_all = 1;
    }
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) n_thr = 1, thr[0] = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--all")) all = 1;
    else if (!strcmp(argv[i], "--winograd")) wino = 1;
    else if (!strcmp(argv[i], "--db") && i + 1 < argc) dbpath = argv[++i];
    else if (!strcmp(argv[i], "--config") && i + 1 < argc && n_extra < 8) extra[n_extra++] = argv[++i];
    else { fprintf(stderr, "usage: bench/conv2d [--sweep N] [--seed S] [--layer NAME | --shape C,H,W,K,k,s,p] [--threads T] [--all] [--winograd] [--db DB] [--config TEXT]...\n"); return 2; }
  }
  rec_set recs = {0};
  if (dbpath) {
    char err[512];
    temper_db *db = NULL;
    if (temper_db_open(dbpath, tune_db_versions(), &db, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
    temper_status st = db_foreach(db, 1, keep_direct, &recs);
    if (st) fprintf(stderr, "%s: %s\n", dbpath, db_errmsg(db));
    temper_db_close(db);
    if (st) return 1;
  }
  temper_engine *e = NULL;
  diag d = {0};
  if (engine_create(&e, &d)) { fprintf(stderr, "%s\n", d.msg); return 1; }
  dnnl_engine_t eng;
  dnnl_engine_create(&eng, dnnl_cpu, 0);
  double peak[2] = {0};
  for (int t = 0; t < n_thr; t++)   /* the best of three: the machine is shared */
    for (int k = 0; k < 3; k++) {
      double p = fma_peak(thr[t]);
      if (p > peak[t]) peak[t] = p;
    }
  printf("FMA peak (measured now): ");
  for (int t = 0; t < n_thr; t++) printf("%s%d thread%s %.1f GFLOP/s", t ? ", " : "", thr[t], thr[t] > 1 ? "s" : "", peak[t]);
  printf("\nsweep: %d random valid configs per layer (seed %llu) plus the default%s%s\n\n", sweep, (unsigned long long)seed,
         dbpath ? " and the best direct record at each thread count in " : "", dbpath ? dbpath : "");
  if (wino) {
    int rc = winograd_rows(e, eng, sweep, seed, only, all, n_thr, thr);
    dnnl_engine_destroy(eng);
    engine_destroy(e);
    return rc;
  }
  printf("| layer | thr | default GFLOP/s | best GFLOP/s | oneDNN GFLOP/s | default/oneDNN | best/oneDNN | best %% of peak | best config |\n");
  printf("|---|---|---|---|---|---|---|---|---|\n");
  double lg_def[2] = {0}, lg_best[2] = {0};
  int n_layers = 0;
  for (size_t li = 0; li < n_layers_all; li++) {
    const bench_layer *L = &layers[li];
    if ((!all && !L->resnet50) || (only && strcmp(only, L->name))) continue;
    conv_workload w = {1, L->C, L->H, L->W, L->K, L->k, L->k, L->stride, L->stride, L->pad, L->pad, L->pad, L->pad, 1, 1, 1};
    task_space sp;
    space_build(&w, e->target.vec, &sp);
    char key[256];
    workload_key(&w, key, sizeof key);
    double flops = workload_flops(&w), best[2] = {1e9, 1e9}, def[2] = {0}, dn[2];
    sched_config cfg, best_cfg[2];
    pcg32 rng;
    pcg32_seed(&rng, seed + li, 3);
    for (int k = 0; k <= sweep; k++) {
      if (k == 0) config_default(&sp, &cfg);
      else do space_config(&sp, (int64_t)(pcg32_next(&rng) % (uint32_t)sp.size), &cfg);
        while (!space_valid(&sp, &cfg));
      double t[2];
      if (time_temper(e, L, key, &cfg, n_thr, thr, t)) return 1;
      for (int i = 0; i < n_thr; i++) {
        if (k == 0) def[i] = t[i];
        if (t[i] < best[i]) best[i] = t[i], best_cfg[i] = cfg;
      }
    }
    for (int x = 0; x < n_extra; x++) {   /* --config: each one that parses for this layer, printed with its times */
      if (config_parse(&sp, extra[x], &cfg, extra_err[x], sizeof extra_err[x])) continue;
      extra_used[x] = 1;
      double t[2];
      if (time_temper(e, L, key, &cfg, n_thr, thr, t)) return 1;
      for (int i = 0; i < n_thr; i++) {
        printf("  %s at %d thread%s: %.1f GFLOP/s\n", extra[x], thr[i], thr[i] > 1 ? "s" : "", flops / t[i] * 1e-9);
        if (t[i] < best[i]) best[i] = t[i], best_cfg[i] = cfg;
      }
    }
    for (int r = 0; r < recs.n; r++) {   /* what tuning recorded, at any of the thread counts timed */
      int used = 0;
      for (int i = 0; i < n_thr; i++) used |= recs.r[r].threads == thr[i];
      char err[256];
      if (!used || strcmp(recs.r[r].key, key) || config_parse(&sp, recs.r[r].config, &cfg, err, sizeof err)) continue;
      double t[2];
      if (time_temper(e, L, key, &cfg, n_thr, thr, t)) return 1;
      for (int i = 0; i < n_thr; i++)
        if (t[i] < best[i]) best[i] = t[i], best_cfg[i] = cfg;
    }
    for (int i = 0; i < n_thr; i++) dn[i] = time_dnnl(eng, L, thr[i]);
    for (int i = 0; i < n_thr; i++) {
      char sh[256];
      config_short(&sp, &best_cfg[i], sh, sizeof sh);
      printf("| %s | %d | %.1f | %.1f | %.1f | %.2f | %.2f | %.0f%% | `%s` |\n", L->name, thr[i], flops / def[i] * 1e-9,
             flops / best[i] * 1e-9, flops / dn[i] * 1e-9, dn[i] / def[i], dn[i] / best[i], flops / best[i] * 1e-9 / peak[i] * 100, sh);
      lg_def[i] += log(dn[i] / def[i]);
      lg_best[i] += log(dn[i] / best[i]);
    }
    fflush(stdout);
    n_layers++;
  }
  for (int i = 0; i < n_thr && n_layers; i++)
    printf("\ngeometric mean over %d layers at %d thread%s: default/oneDNN %.3f, best/oneDNN %.3f\n", n_layers, thr[i],
           thr[i] > 1 ? "s" : "", exp(lg_def[i] / n_layers), exp(lg_best[i] / n_layers));
  /* a --config no layer could run is an error, not a silent omission (a
   * reader of the table would take the default's row for it) */
  int rc = 0;
  for (int x = 0; x < n_extra; x++)
    if (!extra_used[x]) {
      fprintf(stderr, "bench/conv2d: --config %s: not a config of any layer swept (%s)\n", extra[x],
              extra_err[x][0] ? extra_err[x] : "no layer");
      rc = 1;
    }
  free(recs.r);
  dnnl_engine_destroy(eng);
  engine_destroy(e);
  return rc;
}
