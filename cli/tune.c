/* tune.c: temper tune MODEL --db FILE — tune every conv2d workload of a
 * model, recording every measurement; and temper db show FILE. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "log.h"
#include "tune.h"

static int usage(void) {
  fprintf(stderr,
          "usage: temper tune MODEL --db FILE [--trials N] [--minutes M] [--search xgb|ga|random|grid] [--seed S]\n"
          "                   [--threads T] [--build-jobs J] [--timeout SEC] [--repeat R] [--min-repeat-ms MS] [--warm]\n"
          "                   [--task PATTERN] [--top-k K] [--params DIR]\n");
  return 2;
}

static int num(const char *flag, const char *v, double lo, double hi, double *out) {
  char *end;
  double x = v ? strtod(v, &end) : 0;
  if (!v || *end || x < lo || x > hi) {
    fprintf(stderr, "temper tune: %s expects a number in [%g, %g], got '%s'\n", flag, lo, hi, v ? v : "");
    return 1;
  }
  *out = x;
  return 0;
}

int cmd_tune(int argc, char **argv) {
  const char *model = NULL, *dbpath = NULL;
  program_opts data = {.seed = 1};
  program p = {0};
  tune_opts o = {.trials = -1, .search = SEARCH_XGB, .seed = 1, .build_jobs = (int)sysconf(_SC_NPROCESSORS_ONLN), .top_k = 3,
                 .m = {.threads = 1, .repeat = 5, .min_repeat_ms = 10, .timeout_s = 10}};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    double x;
    if (!strcmp(a, "--db") && v) dbpath = v, i++;
    else if (!strcmp(a, "--trials")) { if (num(a, v, 1, 1e9, &x)) return 2; o.trials = (int)x; i++; }
    else if (!strcmp(a, "--minutes")) { if (num(a, v, 0.001, 1e6, &o.minutes)) return 2; i++; }
    else if (!strcmp(a, "--seed")) { if (num(a, v, 0, 1e18, &x)) return 2; o.seed = (uint64_t)x; data.seed = o.seed; i++; }
    else if (!strcmp(a, "--threads")) { if (num(a, v, 1, 256, &x)) return 2; o.m.threads = (int)x; i++; }
    else if (!strcmp(a, "--build-jobs")) { if (num(a, v, 1, 16, &x)) return 2; o.build_jobs = (int)x; i++; }
    else if (!strcmp(a, "--timeout")) { if (num(a, v, 0.1, 3600, &o.m.timeout_s)) return 2; i++; }
    else if (!strcmp(a, "--repeat")) { if (num(a, v, 1, MEASURE_MAX_ROUNDS, &x)) return 2; o.m.repeat = (int)x; i++; }
    else if (!strcmp(a, "--warm")) o.m.warm = 1;
    else if (!strcmp(a, "--min-repeat-ms")) { if (num(a, v, 0, 10000, &o.m.min_repeat_ms)) return 2; i++; }
    else if (!strcmp(a, "--top-k")) { if (num(a, v, 0, 16, &x)) return 2; o.top_k = (int)x; i++; }
    else if (!strcmp(a, "--task") && v) o.task_pattern = v, i++;
    else if (!strcmp(a, "--params") && v) data.params_dir = v, i++;
    else if (!strcmp(a, "--search") && v) {
      if (!strcmp(v, "random")) o.search = SEARCH_RANDOM;
      else if (!strcmp(v, "grid")) o.search = SEARCH_GRID;
      else if (!strcmp(v, "ga")) o.search = SEARCH_GA;
      else if (!strcmp(v, "xgb")) o.search = SEARCH_XGB;
      else { fprintf(stderr, "temper tune: --search expects random, grid, ga or xgb, got '%s'\n", v); return 2; }
      i++;
    } else if (a[0] == '-') { fprintf(stderr, "temper tune: unknown option '%s'\n", a); return usage(); }
    else if (!model) model = a;
    else return usage();
  }
  if (!model || !dbpath) return usage();
  if (o.trials < 0) o.trials = o.minutes > 0 ? 1000000000 : 64;
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) { fprintf(stderr, "temper tune: cannot find the temper binary for the runner\n"); return 1; }
  self[len] = 0;
  o.runner_binary = self;
  o.log = stderr;
  o.tty = isatty(2);
  tune_task *tasks = NULL;
  tune_task_result *res = NULL;
  temper_db *db = NULL;
  int n = 0, vec, rc = 1;
  if (cli_load_tasks(model, &data, &p, &tasks, &n, &vec)) goto out;
  char err[4096];
  if (temper_db_open(dbpath, tune_db_versions(), &db, err, sizeof err)) { fprintf(stderr, "temper: %s\n", err); goto out; }
  res = calloc((size_t)n + 1, sizeof *res);
  if (!res) goto out;
  char command[4096];
  size_t k = 0;
  for (int i = 0; i < argc && k + 2 < sizeof command; i++) k += (size_t)snprintf(command + k, sizeof command - k, "%s%s", i ? " " : "temper ", argv[i]);
  int matched = 0;
  for (int i = 0; i < n; i++) matched += !o.task_pattern || strstr(tasks[i].key, o.task_pattern) != NULL;
  fprintf(stderr, "tuning %d of %d tasks of %s into %s: %s search, %d trials per task%s, %d thread%s, seed %llu\n", matched, n,
          model, dbpath, search_names[o.search], o.trials > 100000000 ? 0 : o.trials, o.minutes > 0 ? " (time-bound)" : "",
          o.m.threads, o.m.threads > 1 ? "s" : "", (unsigned long long)o.seed);
  diag d = {0};
  temper_status s = tune_run(db, tasks, n, &o, command, res, &d);
  /* the summary, even after a failure: every record made is in the database */
  double t_best = 0, t_def = 0;
  int complete = 1;
  printf("\n%-3s %-66s %6s %6s %10s %10s %8s\n", "#", "workload", "trials", "errors", "default", "best", "speed-up");
  for (int i = 0; i < n; i++) {
    tune_task *t = &tasks[i];
    tune_task_result *r = &res[i];
    if (o.task_pattern && !strstr(t->key, o.task_pattern)) continue;
    double gb = r->best_s > 0 ? t->flops / r->best_s * 1e-9 : 0, gd = r->default_s > 0 ? t->flops / r->default_s * 1e-9 : 0;
    printf("%-3d %-66.66s %6d %6d %6.1f GF/s %6.1f GF/s %7.2fx\n", i, t->key, r->new_trials, r->errors, gd, gb,
           gd > 0 && gb > 0 ? gb / gd : 0);
    if (r->best_s > 0 && r->default_s > 0) {
      t_best += r->best_s * t->count;
      t_def += r->default_s * t->count;
    } else {
      complete = 0;
    }
  }
  if (t_best > 0)
    printf("estimated conv2d time of the model: %.2f ms with the best configs, %.2f ms with the defaults (%.2fx)%s\n",
           t_best * 1e3, t_def * 1e3, t_def / t_best, complete ? "" : " (tasks without both measurements left out)");
  if (s) { fprintf(stderr, "temper tune: %s\n", d.msg); goto out; }
  rc = 0;
out:
  free(res);
  free(tasks);
  temper_db_close(db);
  program_free(&p);
  return rc;
}

static int db_usage(void) {
  fprintf(stderr, "usage: temper db show FILE\n"
                  "       temper db export FILE [-o OUT.jsonl] [--best-only] [--task PATTERN] [--target CPU]\n"
                  "       temper db import FILE IN.jsonl... [--skip-bad]\n"
                  "       temper db merge OUT.db IN.db...\n"
                  "       temper db targets FILE\n");
  return 2;
}

static temper_db *open_db(const char *path, int must_exist) {
  if (must_exist && access(path, F_OK)) { fprintf(stderr, "temper: %s: no such database\n", path); return NULL; }
  temper_db *db = NULL;
  char err[4096];
  if (temper_db_open(path, tune_db_versions(), &db, err, sizeof err)) { fprintf(stderr, "temper: %s\n", err); return NULL; }
  return db;
}

static void print_result(const char *name, const log_result *r) {
  printf("%s: %d imported, %d duplicates skipped", name, r->imported, r->duplicates);
  if (r->n_bad) printf(", %d bad line%s skipped:", r->n_bad + r->more_bad, r->n_bad + r->more_bad > 1 ? "s" : "");
  printf("\n");
  for (int i = 0; i < r->n_bad; i++) printf("  %s:%d: %s\n", name, r->bad[i].line, r->bad[i].reason);
  if (r->more_bad) printf("  ... and %d more\n", r->more_bad);
}

int cmd_db(int argc, char **argv) {
  if (argc < 3) return db_usage();
  const char *sub = argv[1];
  if (!strcmp(sub, "show")) {
    temper_db *db = open_db(argv[2], 1);
    if (!db) return 1;
    temper_status s = db_show(db, stdout);
    if (s) fprintf(stderr, "temper: %s\n", db_errmsg(db));
    temper_db_close(db);
    return s ? 1 : 0;
  }
  if (!strcmp(sub, "targets")) {
    temper_db *db = open_db(argv[2], 1);
    if (!db) return 1;
    db_target_row *t = NULL;
    int n = 0;
    temper_status s = db_targets(db, &t, &n);
    if (!s) {
      printf("%-4s %-10s %-22s %-6s %5s %8s  %s\n", "id", "cpu", "triple", "llvm", "cores", "records", "features");
      for (int i = 0; i < n; i++)
        printf("%-4lld %-10s %-22s %-6s %5d %8d  %.100s%s\n", (long long)t[i].id, t[i].t.cpu, t[i].t.triple, t[i].t.llvm_version,
               t[i].t.cores, t[i].records, t[i].t.features, strlen(t[i].t.features) > 100 ? "..." : "");
    } else {
      fprintf(stderr, "temper: %s\n", db_errmsg(db));
    }
    free(t);
    temper_db_close(db);
    return s ? 1 : 0;
  }
  if (!strcmp(sub, "export")) {
    const char *out = NULL;
    log_filter f = {0};
    for (int i = 3; i < argc; i++) {
      if (!strcmp(argv[i], "-o") && i + 1 < argc) out = argv[++i];
      else if (!strcmp(argv[i], "--best-only")) f.best_only = 1;
      else if (!strcmp(argv[i], "--task") && i + 1 < argc) f.task = argv[++i];
      else if (!strcmp(argv[i], "--target") && i + 1 < argc) f.target = argv[++i];
      else return db_usage();
    }
    temper_db *db = open_db(argv[2], 1);
    if (!db) return 1;
    FILE *fo = out ? fopen(out, "w") : stdout;
    if (!fo) { fprintf(stderr, "temper: %s: cannot create\n", out); temper_db_close(db); return 1; }
    diag d = {0};
    int n = 0;
    temper_status s = log_export(db, fo, &f, &n, &d);
    if (out && fclose(fo)) s = diag_fail(&d, TEMPER_EIO, "%s: write failed", out);
    if (s) fprintf(stderr, "temper: %s\n", d.msg);
    else if (out) fprintf(stderr, "exported %d records to %s\n", n, out);
    temper_db_close(db);
    return s ? 1 : 0;
  }
  if (!strcmp(sub, "import") || !strcmp(sub, "merge")) {
    int skip_bad = 0, merge = !strcmp(sub, "merge"), n_in = 0;
    for (int i = 3; i < argc; i++) {
      if (!strcmp(argv[i], "--skip-bad") && !merge) skip_bad = 1;
      else n_in++;
    }
    if (!n_in) return db_usage();
    temper_db *db = open_db(argv[2], 0);
    if (!db) return 1;
    int rc = 0;
    for (int i = 3; i < argc; i++) {
      if (!strcmp(argv[i], "--skip-bad")) continue;
      log_result r;
      diag d = {0};
      temper_status s = merge ? log_merge(db, argv[i], &r, &d) : log_import(db, argv[i], skip_bad, &r, &d);
      if (s) {
        fprintf(stderr, "temper: %s\n", d.msg);
        rc = 1;
      } else {
        print_result(argv[i], &r);
      }
    }
    temper_db_close(db);
    return rc;
  }
  return db_usage();
}
