/* tune.c: temper tune MODEL --db DB — tune every conv2d workload of a
 * model, recording every measurement (tuner/tune.c), and print the summary. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "report.h"
#include "log.h"
#include "refine.h"
#include "tune.h"

static int usage(void) {
  fprintf(stderr,
          "usage: temper tune MODEL --db DB [--trials N] [--minutes M] [--search xgb|ga|random|grid] [--seed S]\n"
          "                   [--threads T] [--build-jobs J] [--timeout SEC] [--repeat R] [--min-repeat-ms MS] [--warm]\n"
          "                   [--task PATTERN] [--top-k K] [--params DIR] [--lease SEC] [--report REPORT.html]\n"
          "                   [--no-pretuned | --pretuned PATH] [--refine | --no-refine]\n"
          "  --db takes a file (SQLite) or postgresql://user@host:port/dbname?sslmode=... (a database shared by many tuners)\n");
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

typedef struct tune_args {
  const char *model, *db, *report;
  program_opts data;
  tune_opts o;
  int refine;   /* refine the model at the end: 1, 0, or -1 for a local database only */
} tune_args;

/* 0, or 2 after printing the usage */
static int parse_args(int argc, char **argv, tune_args *t) {
  tune_opts *o = &t->o;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    double x;
    if (!strcmp(a, "--db") && v) t->db = v, i++;
    else if (!strcmp(a, "--trials")) { if (num(a, v, 1, 1e9, &x)) return 2; o->trials = (int)x; i++; }
    else if (!strcmp(a, "--minutes")) { if (num(a, v, 0.001, 1e6, &o->minutes)) return 2; i++; }
    else if (!strcmp(a, "--seed")) { if (num(a, v, 0, 1e18, &x)) return 2; o->seed = (uint64_t)x; t->data.seed = o->seed; i++; }
    else if (!strcmp(a, "--threads")) { if (num(a, v, 1, 256, &x)) return 2; o->m.threads = (int)x; i++; }
    else if (!strcmp(a, "--build-jobs")) { if (num(a, v, 1, 16, &x)) return 2; o->build_jobs = (int)x; i++; }
    else if (!strcmp(a, "--timeout")) { if (num(a, v, 0.1, 3600, &o->m.timeout_s)) return 2; i++; }
    else if (!strcmp(a, "--repeat")) { if (num(a, v, 1, MEASURE_MAX_ROUNDS, &x)) return 2; o->m.repeat = (int)x; i++; }
    else if (!strcmp(a, "--warm")) o->m.warm = 1;
    else if (!strcmp(a, "--refine")) t->refine = 1;
    else if (!strcmp(a, "--no-refine")) t->refine = 0;
    else if (!strcmp(a, "--no-pretuned")) o->pretuned = NULL;
    else if (!strcmp(a, "--pretuned") && v) o->pretuned = v, i++;
    else if (!strcmp(a, "--min-repeat-ms")) { if (num(a, v, 0, 10000, &o->m.min_repeat_ms)) return 2; i++; }
    else if (!strcmp(a, "--lease")) { if (num(a, v, 0.1, 86400, &o->lease_s)) return 2; i++; }
    else if (!strcmp(a, "--top-k")) { if (num(a, v, 0, 16, &x)) return 2; o->top_k = (int)x; i++; }
    else if (!strcmp(a, "--task") && v) o->task_pattern = v, i++;
    else if (!strcmp(a, "--report") && v) t->report = v, i++;
    else if (!strcmp(a, "--params") && v) t->data.params_dir = v, i++;
    else if (!strcmp(a, "--search") && v) {
      if (!strcmp(v, "random")) o->search = SEARCH_RANDOM;
      else if (!strcmp(v, "grid")) o->search = SEARCH_GRID;
      else if (!strcmp(v, "ga")) o->search = SEARCH_GA;
      else if (!strcmp(v, "xgb")) o->search = SEARCH_XGB;
      else { fprintf(stderr, "temper tune: --search expects random, grid, ga or xgb, got '%s'\n", v); return 2; }
      i++;
    } else if (a[0] == '-') { fprintf(stderr, "temper tune: unknown option '%s'\n", a); return usage(); }
    else if (!t->model) t->model = a;
    else return usage();
  }
  if (!t->model || !t->db) return usage();
  if (o->trials < 0) o->trials = o->minutes > 0 ? 1000000000 : 64;
  return 0;
}

/* per task: trials, errors, default and best speed; the model's estimate */
static void print_summary(const tune_opts *o, const tune_task *tasks, const tune_task_result *res, int n) {
  double t_best = 0, t_def = 0;
  int complete = 1;
  printf("\n%-3s %-66s %6s %6s %10s %10s %8s\n", "#", "workload", "trials", "errors", "default", "best", "speed-up");
  for (int i = 0; i < n; i++) {
    const tune_task *t = &tasks[i];
    const tune_task_result *r = &res[i];
    if (o->task_pattern && !strstr(t->key, o->task_pattern)) continue;
    double gb = r->best_s > 0 ? t->flops / r->best_s * 1e-9 : 0, gd = r->default_s > 0 ? t->flops / r->default_s * 1e-9 : 0;
    /* a speed that has no record (the default, when a run took over a
     * stopped tuner's task with its trials already spent) is a dash */
    char sd[16] = "     -     ", sb[16] = "     -     ", su[16] = "      -";
    if (gd > 0) snprintf(sd, sizeof sd, "%6.1f GF/s", gd);
    if (gb > 0) snprintf(sb, sizeof sb, "%6.1f GF/s", gb);
    if (gd > 0 && gb > 0) snprintf(su, sizeof su, "%7.2fx", gb / gd);
    printf("%-3d %-66.66s %6d %6d %s %s %s\n", i, t->key, r->new_trials, r->errors, sd, sb, su);
    if (r->best_s > 0 && r->default_s > 0) {
      t_best += r->best_s * t->count;
      t_def += r->default_s * t->count;
    } else {
      complete = 0;
    }
  }
  int n_pre = 0, rows = 0;
  for (int i = 0; i < n; i++) n_pre += res[i].pretuned, rows = res[i].pretuned_rows > rows ? res[i].pretuned_rows : rows;
  if (n_pre) printf("%d task%s began with the config of a shipped pre-tuned log (after the default)\n", n_pre, n_pre > 1 ? "s" : "");
  if (rows) printf("the cost model started from %d records of the shipped pre-tuned logs\n", rows);
  if (t_best > 0)
    printf("estimated conv2d time of the model: %.2f ms with the best configs, %.2f ms with the defaults (%.2fx)%s\n",
           t_best * 1e3, t_def * 1e3, t_def / t_best, complete ? "" : " (tasks without both measurements left out)");
}

/* Ctrl-C: the first stops after the batch in progress (the leases are
 * released, the summary printed); a second one ends the process at once */
static volatile int interrupted;
static void on_sigint(int sig) {
  (void)sig;
  interrupted = 1;
  static const char msg[] = "\ntemper tune: stopping after this batch (Ctrl-C again to quit now)\n";
  if (write(2, msg, sizeof msg - 1) < 0) {}
}

int cmd_tune(int argc, char **argv) {
  tune_args t = {.data = {.seed = 1}, .refine = -1,
                 .o = {.trials = -1, .search = SEARCH_XGB, .seed = 1, .build_jobs = (int)sysconf(_SC_NPROCESSORS_ONLN), .top_k = 3,
                       .m = {.threads = 1, .repeat = 5, .min_repeat_ms = 10, .timeout_s = 10},
                       .pretuned = db_chooser_pretuned_default()}};
  int rc = parse_args(argc, argv, &t);
  if (rc) return rc;
  tune_opts *o = &t.o;
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) { fprintf(stderr, "temper tune: cannot find the temper binary for the runner\n"); return 1; }
  self[len] = 0;
  o->runner_binary = self;
  o->log = stderr;
  o->tty = isatty(2);
  program p = {0};
  tune_task *tasks = NULL;
  tune_task_result *res = NULL;
  temper_db *db = NULL;
  int n = 0, vec;
  char err[4096], command[4096];
  rc = 1;
  if (cli_load_tasks(t.model, &t.data, &p, &tasks, &n, &vec)) goto out;
  if (temper_db_open(t.db, tune_db_versions(), &db, err, sizeof err)) { fprintf(stderr, "temper: %s\n", err); goto out; }
  if (!(res = calloc((size_t)n + 1, sizeof *res))) goto out;
  size_t k = 0;   /* the command as the runs table keeps it: the database's password hidden */
  for (int i = 0; i < argc && k + 2 < sizeof command; i++)
    k += (size_t)snprintf(command + k, sizeof command - k, "%s%s", i ? " " : "temper ", argv[i] == t.db ? db_where(db) : argv[i]);
  int matched = 0;
  for (int i = 0; i < n; i++) matched += !o->task_pattern || strstr(tasks[i].key, o->task_pattern) != NULL;
  fprintf(stderr, "tuning %d of %d tasks of %s into %s: %s search, %d trials per task%s, %d thread%s, seed %llu\n", matched, n,
          t.model, db_where(db), search_names[o->search], o->trials > 100000000 ? 0 : o->trials, o->minutes > 0 ? " (time-bound)" : "",
          o->m.threads, o->m.threads > 1 ? "s" : "", (unsigned long long)o->seed);
  diag d = {0};
  o->stop = &interrupted;
  struct sigaction sa = {.sa_handler = on_sigint, .sa_flags = SA_RESETHAND}, old;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old);
  temper_status s = tune_run(db, tasks, n, o, command, res, &d);
  sigaction(SIGINT, &old, NULL);
  print_summary(o, tasks, res, n);   /* even after a failure: every record made is in the database */
  if (s) fprintf(stderr, "temper tune: %s\n", d.msg);
  else rc = interrupted ? 130 : 0;
  if (interrupted) fprintf(stderr, "temper tune: interrupted; every measurement made is in %s, the leases are released\n", db_where(db));
  /* The records' picks were each measured alone; in the model, where a
   * layer reads what its producer wrote and its weights come from memory,
   * they ran slower after a tune on Zen 5 than what refine then chose,
   * mostly the defaults (MobileNetV2 at two threads 3.36 ms against 2.70,
   * ResNet-50 at one 33.3 against 31.1). So a tune of the whole model
   * ends with temper refine, which times the alternatives in the model: by
   * default where the database is a local file (this machine's); a shared
   * PostgreSQL database's tuners run on other machines than the one that
   * builds, which refines there. */
  int refine = t.refine >= 0 ? t.refine : !db_is_url(t.db);
  if (!rc && refine && !o->task_pattern) {
    temper_db_close(db);
    db = NULL;
    printf("\nrefining %s in context at %d thread%s (temper refine; --no-refine skips this)\n", t.model, o->m.threads,
           o->m.threads > 1 ? "s" : "");
    fflush(stdout);
    refine_opts ro = refine_defaults();
    ro.model = t.model, ro.db = t.db, ro.data = t.data, ro.threads = o->m.threads;
    if (cli_refine(&ro)) {
      char where[1024];
      db_shown(t.db, where, sizeof where);
      fprintf(stderr, "temper tune: the records are in %s; the refine after them failed (run temper refine again)\n", where);
      rc = 1;
    }
  }
  if (t.report) {   /* the page of this run, also after Ctrl-C or a failure */
    report_opts ro = {.db = t.db, .model = t.model, .data = t.data, .repeat = 10, .pretuned = o->pretuned};
    if (cli_write_report(&ro, t.report) && !rc) rc = 1;
  }
out:
  free(res);
  free(tasks);
  temper_db_close(db);
  program_free(&p);
  return rc;
}
