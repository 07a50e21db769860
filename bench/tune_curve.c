/* tune_curve.c: how fast the search finds good configs, and how many trials
 * per minute the tuner makes, on ResNet-50 layers. Real builds and
 * measurements through the runner; a fresh database per run. With --svg DIR
 * it draws the best-so-far curve of every run, one SVG per layer.
 *
 * usage: bench/tune_curve [--trials N] [--trials-of SEARCH=N]... [--seeds K] [--search random,ga,xgb]
 *                         [--svg DIR] [--layer NAME]... [--ref LAYER=GFLOPS]... [--no-default]
 * --trials-of gives one search a longer (or shorter) run, so that a slow
 * search's trials to 95 % are counted rather than cut off; --ref folds in the
 * best GFLOP/s an earlier, longer run found for a layer ("best known");
 * --no-default leaves out the default config the tuner measures first, so
 * that a good default does not hide how the searches differ. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "tune.h"
#include "workloads.h"

typedef struct curve { double best[4096]; int n; double flops; } curve;

static void on_record(void *ctx, const tune_task *t, const db_record *r) {
  curve *c = ctx;
  double g = r->status == DB_OK ? t->flops / r->median_s * 1e-9 : 0;
  double prev = c->n ? c->best[c->n - 1] : 0;
  if (c->n < 4096) c->best[c->n++] = g > prev ? g : prev;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  int trials = 150, seeds = 3, n_only = 0, n_kinds = 0, ktrials[4] = {0}, n_ref = 0, no_default = 0;
  const char *only[8], *svg = NULL, *ref_name[8];
  double ref_gflops[8];
  search_kind kinds[4];
  const char *klist = "random,ga";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--trials") && i + 1 < argc) trials = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--seeds") && i + 1 < argc) seeds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--layer") && i + 1 < argc && n_only < 8) only[n_only++] = argv[++i];
    else if (!strcmp(argv[i], "--search") && i + 1 < argc) klist = argv[++i];
    else if (!strcmp(argv[i], "--svg") && i + 1 < argc) svg = argv[++i];
    else if (!strcmp(argv[i], "--no-default")) no_default = 1;
    else if (!strcmp(argv[i], "--trials-of") && i + 1 < argc && strchr(argv[i + 1], '=')) {
      const char *v = argv[++i];
      for (int k = 0; k < 4; k++)
        if (!strncmp(v, search_names[k], strlen(search_names[k])) && v[strlen(search_names[k])] == '=') ktrials[k] = atoi(strchr(v, '=') + 1);
    } else if (!strcmp(argv[i], "--ref") && i + 1 < argc && strchr(argv[i + 1], '=') && n_ref < 8) {
      char *v = argv[++i], *eq = strchr(v, '=');
      *eq = 0;
      ref_name[n_ref] = v;
      ref_gflops[n_ref++] = atof(eq + 1);
    } else {
      fprintf(stderr, "usage: bench/tune_curve [--trials N] [--trials-of SEARCH=N]... [--seeds K] [--search random,ga,xgb] [--svg DIR]\n"
                      "                        [--layer NAME]... [--ref LAYER=GFLOPS]... [--no-default]\n");
      return 2;
    }
  }
  for (int k = 0; k < 4; k++)
    if (strstr(klist, search_names[k])) kinds[n_kinds++] = (search_kind)k;
  int max_trials = trials;
  for (int k = 0; k < 4; k++) {
    if (!ktrials[k]) ktrials[k] = trials;
    if (ktrials[k] > max_trials) max_trials = ktrials[k];
  }
  if (!n_only) only[n_only++] = "s2_3x3_64", only[n_only++] = "s3_1x1_128_512", only[n_only++] = "s4_3x3_256";
  char self[4096], runner[4200];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  self[len > 0 ? len : 0] = 0;
  char *slash = strrchr(self, '/');
  if (slash) *slash = 0;
  snprintf(runner, sizeof runner, "%s/../temper", self);   /* build/bench/tune_curve → build/temper */
  printf("| layer | search | seed | best GFLOP/s after 25 / 50 / 100 / all trials | trials to 95%% of the best known | trials/min | compile s | measure s |\n");
  printf("|---|---|---|---|---|---|---|---|\n");
  for (int li = 0; li < n_only; li++) {
    const bench_layer *L = NULL;
    for (size_t k = 0; k < sizeof bench_layers / sizeof *bench_layers; k++)
      if (!strcmp(bench_layers[k].name, only[li])) L = &bench_layers[k];
    if (!L) { fprintf(stderr, "unknown layer %s\n", only[li]); return 2; }
    tune_task t;
    memset(&t, 0, sizeof t);
    t.w = (conv_workload){1, L->C, L->H, L->W, L->K, L->k, L->k, L->stride, L->stride, L->pad, L->pad, L->pad, L->pad, 1, 1, 1};
    workload_key(&t.w, t.key, sizeof t.key);
    cg_target ct;
    diag d = {0};
    cg_host_target(&ct, &d);
    space_build(&t.w, ct.vec, &t.space);
    t.count = 1;
    t.flops = workload_flops(&t.w);
    static curve runs[4][8];
    double rate[4][8], comp[4][8], meas[4][8], overall = 0;
    for (int k = 0; k < n_kinds; k++)
      for (int s = 0; s < seeds && s < 8; s++) {
        char path[128];
        snprintf(path, sizeof path, "/tmp/temper_curve_%d.db", (int)getpid());
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "rm -f %s %s-wal %s-shm", path, path, path);
        if (system(cmd)) return 1;
        temper_db *db = NULL;
        char err[4096];
        if (temper_db_open(path, tune_db_versions(), &db, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
        curve *c = &runs[k][s];
        memset(c, 0, sizeof *c);
        tune_opts o = {.trials = ktrials[kinds[k]], .search = kinds[k], .seed = 100 + (uint64_t)s, .build_jobs = 2,
                       .m = {.threads = 1, .repeat = 5, .min_repeat_ms = 10, .timeout_s = 10}, .runner_binary = runner,
                       .on_record = on_record, .on_record_ctx = c, .no_default = no_default};
        tune_task_result r;
        double t0 = now();
        if (tune_run(db, &t, 1, &o, "tune_curve", &r, &d)) { fprintf(stderr, "%s\n", d.msg); return 1; }
        rate[k][s] = r.new_trials / (now() - t0) * 60;
        comp[k][s] = r.compile_s;
        meas[k][s] = r.measure_s;
        temper_db_close(db);
        remove(path);
        if (c->n && c->best[c->n - 1] > overall) overall = c->best[c->n - 1];
      }
    for (int i = 0; i < n_ref; i++)
      if (!strcmp(ref_name[i], L->name) && ref_gflops[i] > overall) overall = ref_gflops[i];
    int to95_sum[4] = {0};
    for (int k = 0; k < n_kinds; k++)
      for (int s = 0; s < seeds && s < 8; s++) {
        curve *c = &runs[k][s];
        int to95 = -1;
        for (int i = 0; i < c->n && to95 < 0; i++)
          if (c->best[i] >= 0.95 * overall) to95 = i + 1;
        int kt = ktrials[kinds[k]], at[4] = {25, 50, 100, kt};
        to95_sum[k] += to95 < 0 ? kt : to95;
        printf("| %s | %s | %d |", L->name, search_names[kinds[k]], s);
        for (int j = 0; j < 4; j++)
          if (at[j] <= c->n) printf(" %.1f%s", c->best[at[j] - 1], j < 3 ? " /" : "");
          else printf(" -%s", j < 3 ? " /" : "");
        printf(" | %d | %.0f | %.1f | %.1f |\n", to95, rate[k][s], comp[k][s], meas[k][s]);
        fflush(stdout);
      }
    printf("| %s | best known | | %.1f GFLOP/s | mean to 95%% (a miss counts as all trials):", L->name, overall);
    for (int k = 0; k < n_kinds; k++) printf(" %s %.1f", search_names[kinds[k]], (double)to95_sum[k] / seeds);
    printf(" | | | |\n");
    if (svg) {   /* best-so-far GFLOP/s against trials, every run */
      char path[600];
      snprintf(path, sizeof path, "%s/tune_curve_%s.svg", svg, L->name);
      FILE *f = fopen(path, "w");
      if (f) {
        static const char *colors[4] = {"#d62728", "#7f7f7f", "#1f77b4", "#2ca02c"};
        double lo = overall * 0.85;
        fprintf(f, "<svg xmlns='http://www.w3.org/2000/svg' width='640' height='400' font-family='sans-serif' font-size='12'>\n"
                   "<rect width='640' height='400' fill='white'/>\n<text x='320' y='20' text-anchor='middle'>%s: best GFLOP/s so far vs trials</text>\n"
                   "<line x1='60' y1='360' x2='620' y2='360' stroke='black'/><line x1='60' y1='40' x2='60' y2='360' stroke='black'/>\n"
                   "<text x='340' y='390' text-anchor='middle'>trials (0–%d)</text>\n<text x='10' y='45'>%.0f</text><text x='10' y='360'>%.0f</text>\n"
                   "<line x1='60' y1='%.1f' x2='620' y2='%.1f' stroke='#bbbbbb' stroke-dasharray='4'/><text x='565' y='%.1f'>95%% best</text>\n",
                L->name, max_trials, overall, lo, 360 - (0.95 * overall - lo) / (overall - lo) * 320, 360 - (0.95 * overall - lo) / (overall - lo) * 320,
                355 - (0.95 * overall - lo) / (overall - lo) * 320);
        for (int k = 0; k < n_kinds; k++) {
          fprintf(f, "<text x='%d' y='60' fill='%s'>%s</text>\n", 80 + 70 * k, colors[kinds[k]], search_names[kinds[k]]);
          for (int s2 = 0; s2 < seeds && s2 < 8; s2++) {
            curve *c = &runs[k][s2];
            fprintf(f, "<polyline fill='none' stroke='%s' stroke-width='1.5' points='", colors[kinds[k]]);
            for (int i = 0; i < c->n; i++) {
              double v = c->best[i] < lo ? lo : c->best[i];
              fprintf(f, "%.1f,%.1f ", 60 + 560.0 * (i + 1) / max_trials, 360 - (v - lo) / (overall - lo) * 320);
            }
            fprintf(f, "'/>\n");
          }
        }
        fprintf(f, "</svg>\n");
        fclose(f);
      }
    }
  }
  return 0;
}
