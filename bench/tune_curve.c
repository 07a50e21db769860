/* tune_curve.c: how fast the search finds good configs, and how many trials
 * per minute the tuner makes, on ResNet-50 layers. Real builds and
 * measurements through the runner; a fresh database per run.
 *
 * usage: bench/tune_curve [--trials N] [--seeds K] [--layer NAME]... */
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
  int trials = 150, seeds = 3, n_only = 0;
  const char *only[8];
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--trials") && i + 1 < argc) trials = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--seeds") && i + 1 < argc) seeds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--layer") && i + 1 < argc && n_only < 8) only[n_only++] = argv[++i];
    else { fprintf(stderr, "usage: bench/tune_curve [--trials N] [--seeds K] [--layer NAME]...\n"); return 2; }
  }
  if (!n_only) only[n_only++] = "s2_3x3_64", only[n_only++] = "s3_1x1_128_512", only[n_only++] = "s4_3x3_256";
  char self[4096], runner[4200];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  self[len > 0 ? len : 0] = 0;
  char *slash = strrchr(self, '/');
  if (slash) *slash = 0;
  snprintf(runner, sizeof runner, "%s/../temper", self);   /* build/bench/tune_curve → build/temper */
  printf("| layer | search | seed | best GFLOP/s after 25 / 50 / 100 / %d trials | trials to 95%% of the best seen | trials/min | compile s | measure s |\n", trials);
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
    curve runs[2][8];
    double rate[2][8], comp[2][8], meas[2][8], overall = 0;
    for (int k = 0; k < 2; k++)
      for (int s = 0; s < seeds && s < 8; s++) {
        char path[128];
        snprintf(path, sizeof path, "/tmp/temper_curve_%d.db", (int)getpid());
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "rm -f %s %s-wal %s-shm", path, path, path);
        if (system(cmd)) return 1;
        temper_db *db = NULL;
        char err[4096];
        if (temper_db_open(path, &db, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
        curve *c = &runs[k][s];
        memset(c, 0, sizeof *c);
        tune_opts o = {.trials = trials, .search = k ? SEARCH_GA : SEARCH_RANDOM, .seed = 100 + (uint64_t)s, .build_jobs = 2,
                       .m = {.threads = 1, .repeat = 5, .min_repeat_ms = 10, .timeout_s = 10}, .runner_binary = runner,
                       .on_record = on_record, .on_record_ctx = c};
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
    for (int k = 0; k < 2; k++)
      for (int s = 0; s < seeds && s < 8; s++) {
        curve *c = &runs[k][s];
        int to95 = -1;
        for (int i = 0; i < c->n && to95 < 0; i++)
          if (c->best[i] >= 0.95 * overall) to95 = i + 1;
        int at[4] = {25, 50, 100, trials};
        printf("| %s | %s | %d |", L->name, k ? "ga" : "random", s);
        for (int j = 0; j < 4; j++) printf(" %.1f%s", at[j] <= c->n ? c->best[at[j] - 1] : 0.0, j < 3 ? " /" : "");
        printf(" | %d | %.0f | %.1f | %.1f |\n", to95, rate[k][s], comp[k][s], meas[k][s]);
        fflush(stdout);
      }
    printf("| %s | best seen | | %.1f GFLOP/s | | | | |\n", L->name, overall);
  }
  return 0;
}
