/* db_overhead.c: what the database costs a tuner, per record and per lease,
 * on each backend: bench/db_overhead DB [N]. DB is a path or a URL; N
 * records are inserted one by one, each in its own transaction as the
 * tuner does, then N/10 lease claims and releases. Prints the median, the
 * 90th percentile and the mean, in milliseconds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "db.h"
#include "tune.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void report(const char *what, double *t, int n) {
  double sum = 0;
  for (int i = 0; i < n; i++) sum += t[i];
  qsort(t, (size_t)n, sizeof *t, cmp);
  printf("%-28s n=%5d  median %.3f ms  p90 %.3f ms  mean %.3f ms\n", what, n, t[n / 2] * 1e3, t[n * 9 / 10] * 1e3, sum / n * 1e3);
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: db_overhead DB [N]\n"); return 2; }
  int n = argc > 2 ? atoi(argv[2]) : 2000;
  if (n < 10) n = 10;
  temper_db *db = NULL;
  char err[4096];
  if (temper_db_open(argv[1], tune_db_versions(), &db, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
  db_target t = {"x86_64-pc-linux-gnu", "bench", "+avx512f", "19", 2};
  int64_t tid, wid, run;
  char key[64];
  snprintf(key, sizeof key, "bench_%ld", (long)time(NULL));
  if (db_target_id(db, &t, &tid) || db_workload_id(db, key, "conv2d", "{}", 1e9, &wid) || db_run_begin(db, "bench", 1, "h", &run)) {
    fprintf(stderr, "%s\n", db_errmsg(db));
    return 1;
  }
  double *ts = malloc(sizeof(double) * (size_t)n);
  for (int i = 0; i < n; i++) {
    db_record r = {.target_id = tid, .tmpl_version = 1, .config_index = i, .threads = 1, .status = DB_OK, .median_s = 1e-3,
                   .min_s = 1e-3, .max_s = 1e-3, .rounds = 5, .gflops = 100, .run_id = run};
    snprintf(r.workload, sizeof r.workload, "%s", key);
    snprintf(r.tmpl, sizeof r.tmpl, "conv2d_nchwc");
    snprintf(r.config, sizeof r.config, "{\"ic_bn\":16,\"oc_bn\":32,\"i\":%d}", i);
    snprintf(r.host, sizeof r.host, "bench");
    snprintf(r.temper_version, sizeof r.temper_version, "0");
    double t0 = now();
    if (db_insert(db, &r)) { fprintf(stderr, "%s\n", db_errmsg(db)); return 1; }
    ts[i] = now() - t0;
  }
  printf("%s (%s)\n", db_where(db), db_backend_name(db));
  report("insert a record", ts, n);
  /* as the tuner writes them: a batch of 8 measurements in one transaction */
  int nb = n / 8;
  for (int b = 0; b < nb; b++) {
    db_record r[8];
    for (int i = 0; i < 8; i++) {
      r[i] = (db_record){.target_id = tid, .tmpl_version = 1, .config_index = n + b * 8 + i, .threads = 1, .status = DB_OK,
                         .median_s = 1e-3, .min_s = 1e-3, .max_s = 1e-3, .rounds = 5, .gflops = 100, .run_id = run};
      snprintf(r[i].workload, sizeof r[i].workload, "%s", key);
      snprintf(r[i].tmpl, sizeof r[i].tmpl, "conv2d_nchwc");
      snprintf(r[i].config, sizeof r[i].config, "{\"ic_bn\":16,\"oc_bn\":32,\"i\":%d}", n + b * 8 + i);
      snprintf(r[i].host, sizeof r[i].host, "bench");
      snprintf(r[i].temper_version, sizeof r[i].temper_version, "0");
    }
    double t0 = now();
    if (db_insert_batch(db, r, 8)) { fprintf(stderr, "%s\n", db_errmsg(db)); return 1; }
    ts[b] = (now() - t0) / 8;
  }
  report("a batch of 8, per record", ts, nb);
  int m = n / 10;
  db_lease_owner me = {"bench:1:x", "bench", run};
  double round;
  db_now(db, &round);
  for (int i = 0; i < m; i++) {
    double t0 = now();
    db_lease l;
    if (db_lease_claim(db, key, tid, 1 + i, &me, 60, round, &l) || db_lease_release(db, key, tid, 1 + i, me.owner, 1)) {
      fprintf(stderr, "%s\n", db_errmsg(db));
      return 1;
    }
    ts[i] = now() - t0;
  }
  report("claim + release a lease", ts, m);
  for (int i = 0; i < m; i++) {
    double t0 = now();
    int64_t *idx = NULL;
    int k = 0;
    db_measured(db, key, tid, 1, &idx, &k);
    free(idx);
    ts[i] = now() - t0;
  }
  report("read a task's measured set", ts, m);
  free(ts);
  temper_db_close(db);
  return 0;
}
