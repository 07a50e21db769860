/* test_choose.c: tuner/choose.c — which record a build uses: the fastest
 * usable one at the exact target; stale template versions ignored; the
 * nearest measured thread count; the default where there is none; the
 * report as data. */
#include "choose.h"
#include "helpers.h"
#include "target.h"
#include "tune.h"

static char path[256];
static task_space sp;
static char key[256];

/* the first n valid configs of the space */
static void valid_configs(sched_config *out, int n) {
  int k = 0;
  for (int64_t i = 0; k < n && i < sp.size; i++)
    if (!space_config(&sp, i, &out[k]) && space_valid(&sp, &out[k]) && out[k].tmpl == TMPL_NCHWC) k++;
  assert_int_equal(k, n);
}

static void add(temper_db *db, int64_t tid, const sched_config *c, int version, int threads, double t) {
  db_record r = {.target_id = tid, .tmpl_version = version, .config_index = space_index(&sp, c), .threads = threads,
                 .status = DB_OK, .median_s = t, .min_s = t, .max_s = t, .rounds = 3, .gflops = 1};
  snprintf(r.workload, sizeof r.workload, "%s", key);
  snprintf(r.tmpl, sizeof r.tmpl, "%s", tmpl_names[c->tmpl]);
  config_json(&sp, c, r.config, sizeof r.config);
  strcpy(r.host, "test");
  strcpy(r.temper_version, "0");
  assert_int_equal(db_insert(db, &r), TEMPER_OK);
}

static int choose(db_chooser *dc, sched_config *out) {
  char err[256];
  conv_site site = {0, 16 * 8 * 8};
  return db_chooser_choose(dc, key, &sp, &site, out, err, sizeof err);
}

static void test_choices(void **state) {
  (void)state;
  snprintf(path, sizeof path, "/tmp/temper_choose_%d.db", (int)getpid());
  unlink(path);
  cg_target host;
  diag d = {0};
  cg_host_target(&host, &d);
  conv_workload w = {1, 16, 8, 8, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  space_build(&w, host.vec, &sp);
  workload_key(&w, key, sizeof key);
  sched_config c[3], got;
  valid_configs(c, 3);
  char err[4096];
  /* no database: the default, reported as a fallback of all the FLOPs */
  db_chooser *dc = NULL;
  assert_int_equal(db_chooser_open(NULL, &host, 1, 0, &dc, err, sizeof err), TEMPER_OK);
  assert_int_equal(choose(dc, &got), 0);
  chooser_summary s;
  db_chooser_summary(dc, &s);
  assert_int_equal(s.n_fell, 1);
  assert_true(s.fell_flops_share == 1.0);
  db_chooser_close(dc);
  /* records: c[1] fastest at one thread; c[0] faster still but of an old
   * template version; c[2] only at two threads */
  temper_db *db = NULL;
  assert_int_equal(temper_db_open(path, tune_db_versions(), &db, err, sizeof err), TEMPER_OK);
  db_target ht;
  target_host(&ht);
  int64_t tid, wid;
  assert_int_equal(db_target_id(db, &ht, &tid), TEMPER_OK);
  assert_int_equal(db_workload_id(db, key, "conv2d", "{}", workload_flops(&w), &wid), TEMPER_OK);
  int v = tmpl_versions[TMPL_NCHWC];
  add(db, tid, &c[0], v - 1, 1, 1e-6);
  add(db, tid, &c[1], v, 1, 2e-6);
  add(db, tid, &c[2], v, 1, 3e-6);
  add(db, tid, &c[2], v, 2, 1e-6);
  temper_db_close(db);
  assert_int_equal(db_chooser_open(path, &host, 1, 0, &dc, err, sizeof err), TEMPER_OK);
  assert_int_equal(choose(dc, &got), 1);
  assert_int_equal(space_index(&sp, &got), space_index(&sp, &c[1]));
  assert_int_equal(choose(dc, &got), 1);   /* a second occurrence: the same, counted */
  chooser_entry e;
  db_chooser_get(dc, 0, &e);
  assert_int_equal(e.count, 2);
  assert_int_equal(e.level, TARGET_EXACT);
  assert_int_equal(e.stale, 1);
  assert_true(e.median_s == 2e-6);
  db_chooser_summary(dc, &s);
  assert_int_equal(s.n_found, 1);
  assert_int_equal(s.n_stale, 1);
  assert_true(fabs(s.est_s - 4e-6) < 1e-12);
  db_chooser_close(dc);
  /* at three threads, the nearest measured thread count (two) */
  assert_int_equal(db_chooser_open(path, &host, 3, 0, &dc, err, sizeof err), TEMPER_OK);
  assert_int_equal(choose(dc, &got), 1);
  assert_int_equal(space_index(&sp, &got), space_index(&sp, &c[2]));
  db_chooser_get(dc, 0, &e);
  assert_int_equal(e.threads, 2);
  db_chooser_close(dc);
  /* a database that is not there: an error naming it */
  assert_int_equal(db_chooser_open("/nonexistent/t.db", &host, 1, 0, &dc, err, sizeof err), TEMPER_EINVAL);
  assert_null(dc);
  assert_non_null(strstr(err, "/nonexistent/t.db: no such database"));
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_choices)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
