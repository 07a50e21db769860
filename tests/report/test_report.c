/* test_report.c: report/ — the page and its plots are well-formed XML
 * (xmllint), the numbers on the page are the database's (read back from
 * the data- attributes and compared with db/ queries), the plots follow
 * the conventions (axis labels, a legend where errors are marked), every
 * way of asking works (with and without a model, --measure, --svg, tune
 * --report, a PostgreSQL URL is not needed here), and bad requests fail
 * cleanly without leaving a partial page. */
#include <sys/stat.h>
#include "helpers.h"
#include "report.h"
#include "tune.h"

static char dir[256];
#define MODEL "tests/data/tiny_classifier.relay"
#define T TEMPER_BINARY

static int setup(void **state) {
  (void)state;
  scratch_make(dir, sizeof dir, "temper_report");
  return 0;
}
static int teardown(void **state) {
  (void)state;
  scratch_remove(dir);
  return 0;
}

/* the value of attribute `name` in the tag that starts at p ("" if none) */
static void attr(const char *p, const char *name, char *out, size_t n) {
  const char *end = strchr(p, '>');
  char pat[64];
  snprintf(pat, sizeof pat, " %s=\"", name);
  const char *a = strstr(p, pat);
  out[0] = 0;
  if (!a || (end && a > end)) return;
  a += strlen(pat);
  const char *q = strchr(a, '"');
  snprintf(out, n, "%.*s", (int)(q - a), a);
}

typedef struct truth { const char *key; int trials, errors; } truth;

static temper_status count_trials(void *ctx, const db_record *r, const char *op, const char *desc, double flops) {
  (void)op, (void)desc, (void)flops;
  truth *t = ctx;
  if (!strcmp(r->workload, t->key) && !r->remeasure) t->trials++, t->errors += r->status != DB_OK;
  return TEMPER_OK;
}

/* every task row of the page against the database */
static void numbers_equal_the_database(const char *page, const char *db_path) {
  temper_db *db = NULL;
  char err[512];
  assert_int_equal(temper_db_open(db_path, tune_db_versions(), &db, err, sizeof err), TEMPER_OK);
  db_target_row *tg = NULL;
  int nt = 0;
  assert_int_equal(db_targets(db, &tg, &nt), TEMPER_OK);
  assert_true(nt >= 1);
  int rows = 0;
  for (const char *p = strstr(page, "<tr class=\"task\""); p; p = strstr(p + 1, "<tr class=\"task\"")) {
    char key[256], trials[32], errors[32], best[64];
    attr(p, "data-workload", key, sizeof key);
    attr(p, "data-trials", trials, sizeof trials);
    attr(p, "data-errors", errors, sizeof errors);
    attr(p, "data-best-s", best, sizeof best);
    truth t = {key, 0, 0};
    assert_int_equal(db_foreach(db, 0, count_trials, &t), TEMPER_OK);
    assert_int_equal(atoi(trials), t.trials);
    assert_int_equal(atoi(errors), t.errors);
    db_record r;
    if (db_best(db, key, tg[0].id, 1, &r)) assert_true(fabs(atof(best) - r.median_s) <= 1e-8 * r.median_s);
    else assert_true(atof(best) == 0);
    rows++;
  }
  assert_int_equal(rows, 2);   /* the tiny classifier's two conv2d workloads */
  free(tg);
  temper_db_close(db);
}


static void test_page_of_a_tuned_model(void **state) {
  (void)state;
  /* a real tune with --report: the page is written at the end of the run */
  expect(sh("cd %s && %s tune " MODEL " --db %s/t.db --trials 8 --top-k 1 --min-repeat-ms 1 --no-refine --report %s/tune.html 2>&1", TEMPER_SOURCE_DIR,
            T, dir, dir),
         0, "report: ");
  expect(sh("xmllint --noout %s/tune.html && echo well-formed", dir), 0, "well-formed");
  /* the full page: measured, with the plots as files */
  expect(sh("cd %s && %s report %s/t.db " MODEL " -o %s/r.html --measure --repeat 3 --svg %s/svg 2>&1", TEMPER_SOURCE_DIR, T, dir, dir,
            dir),
         0, "1 section");   /* target × threads: one machine, one thread count */
  expect(sh("xmllint --noout %s/r.html && echo well-formed", dir), 0, "well-formed");
  expect(sh("n=0; for f in %s/svg/*.svg; do xmllint --noout \"$f\" || exit 1; n=$((n+1)); done; echo $n plots", dir), 0, " plots");
  char path[512];
  snprintf(path, sizeof path, "%s/r.html", dir);
  char *page = read_file(path);
  assert_non_null(page);
  snprintf(path, sizeof path, "%s/t.db", dir);
  numbers_equal_the_database(page, path);
  /* the conventions: units on the axes, the measured latency, the kernels in sequence and alone */
  assert_non_null(strstr(page, "milliseconds per inference"));
  assert_non_null(strstr(page, "tuning time (minutes since the first record)"));
  assert_non_null(strstr(page, "best GFLOP/s"));
  assert_non_null(strstr(page, "class=\"measured\" data-latency-ms=\""));
  assert_non_null(strstr(page, "in sequence (as the model runs)"));
  assert_non_null(strstr(page, "What to tune next"));
  assert_null(strstr(page, "src=\""));   /* self-contained: nothing loaded from anywhere */
  assert_null(strstr(page, "<link"));
  assert_null(strstr(page, "<script"));
  free(page);
  /* a database with one of the two workloads, and a shipped log with both:
   * the build block names the log and the match level of the other */
  expect(sh("mkdir -p %s/logs && %s db export %s/t.db --best-only -o %s/logs/m.jsonl 2>&1", dir, T, dir, dir), 0, "exported");
  expect(sh("cd %s && %s tune " MODEL " --db %s/one.db --trials 2 --top-k 0 --min-repeat-ms 1 --no-pretuned --task c16_h8 2>&1",
            TEMPER_SOURCE_DIR, T, dir), 0, "");
  expect(sh("cd %s && TEMPER_PRETUNED=%s/logs %s report %s/one.db " MODEL " -o %s/pre.html 2>&1", TEMPER_SOURCE_DIR, dir, T, dir, dir),
         0, "1 section");
  snprintf(path, sizeof path, "%s/pre.html", dir);
  page = read_file(path);
  assert_non_null(page);
  const char *list = strstr(page, "<ul class=\"pretuned\">");
  assert_non_null(list);
  assert_non_null(strstr(list, "conv2d_n1_c3_h16_w16"));
  if (!strstr(list, "/logs/m.jsonl (exact target)")) fail_msg("%.600s", list);
  free(page);
  expect(sh("cd %s && %s report %s/one.db " MODEL " -o %s/nopre.html --no-pretuned 2>&1 && grep -c 'class=\"pretuned\"' %s/nopre.html",
            TEMPER_SOURCE_DIR, T, dir, dir, dir), 1, "0");
}

/* errors are marked on a task's curve by kind, with a legend */
static measure_result some_fail(void *ctx, const tune_task *t, const sched_config *cfg, int64_t index) {
  (void)ctx, (void)t, (void)cfg;
  measure_result m = {.status = index % 5 == 1 ? DB_COMPILE_ERROR : index % 5 == 2 ? DB_TIMEOUT : DB_OK, .rounds = 3};
  if (m.status) m.rounds = 0, strcpy(m.error, "fake");
  for (int i = 0; i < 3; i++) m.times[i] = 1e-3 * (1 + (double)(index % 97) / 97) * (1 + 0.01 * i);
  return m;
}

static void test_errors_marked_and_no_model(void **state) {
  (void)state;
  char path[512];
  snprintf(path, sizeof path, "%s/e.db", dir);
  temper_db *db = NULL;
  char err[512];
  assert_int_equal(temper_db_open(path, tune_db_versions(), &db, err, sizeof err), TEMPER_OK);
  tune_task t;
  memset(&t, 0, sizeof t);
  t.w = (conv_workload){1, 32, 28, 28, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  workload_key(&t.w, t.key, sizeof t.key);
  space_build(&t.w, 16, &t.space);
  t.count = 1;
  t.flops = workload_flops(&t.w);
  for (int threads = 1; threads <= 2; threads++) {
    tune_opts o = {.trials = 40, .search = SEARCH_RANDOM, .seed = 3, .m = {.threads = threads, .repeat = 3}, .measure = some_fail};
    tune_task_result r;
    diag d = {0};
    assert_int_equal(tune_run(db, &t, 1, &o, "fake", &r, &d), TEMPER_OK);
  }
  temper_db_close(db);
  expect(sh("%s report %s -o %s/e.html 2>&1", T, path, dir), 0, "2 sections");
  snprintf(path, sizeof path, "%s/e.html", dir);
  char *page = read_file(path);
  assert_non_null(page);
  assert_non_null(strstr(page, "data-threads=\"1\""));
  assert_non_null(strstr(page, "data-threads=\"2\""));
  assert_non_null(strstr(page, "<title>compile error</title>"));   /* a marked error, named on hover */
  assert_non_null(strstr(page, ">timeout</text>"));                /* and the legend */
  assert_non_null(strstr(page, "data-trials=\"40\""));
  free(page);
  expect(sh("xmllint --noout %s/e.html && echo well-formed", dir), 0, "well-formed");
}

static void test_bad_requests(void **state) {
  (void)state;
  expect(sh("%s report %s/nope.db -o %s/n.html 2>&1", T, dir, dir), 1, "no such database");
  expect(sh("test -e %s/n.html || echo absent", dir), 0, "absent");
  expect(sh("cd %s && %s report %s/t.db tests/data/missing.relay -o %s/n.html 2>&1", TEMPER_SOURCE_DIR, T, dir, dir), 1, "missing.relay");
  expect(sh("%s report %s/t.db -o /nonexistent/dir/r.html 2>&1", T, dir), 1, "cannot write");
  expect(sh("%s report %s/t.db 2>&1", T, dir), 2, "usage");
  expect(sh("%s report %s/t.db -o %s/m.html --measure 2>&1", T, dir, dir), 2, "--measure needs the MODEL");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_page_of_a_tuned_model),
      cmocka_unit_test(test_errors_marked_and_no_model),
      cmocka_unit_test(test_bad_requests),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
