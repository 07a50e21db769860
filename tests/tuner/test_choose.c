/* test_choose.c: tuner/choose.c — which record a build uses: the fastest
 * usable one at the exact target; stale template versions ignored; the
 * nearest measured thread count; the default where there is none; the
 * report as data. */
#include <dirent.h>
#include <sys/stat.h>
#include "choose.h"
#include "log.h"
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
  conv_site site = {.in_block = 0, .in_floats = 16 * 8 * 8};
  return db_chooser_choose(dc, key, &sp, &site, out, err, sizeof err);
}

/* a fresh database path, the host target, and the space and key of the
 * test's 3×3 workload (16 → 32 channels at 8×8) */
static const conv_workload test_w = {1, 16, 8, 8, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
static void set_up(const char *name, cg_target *host) {
  snprintf(path, sizeof path, "/tmp/temper_%s_%d.db", name, (int)getpid());
  unlink(path);
  diag d = {0};
  cg_host_target(host, &d);
  space_build(&test_w, host->vec, &sp);
  workload_key(&test_w, key, sizeof key);
}

/* the database at path with the host's target and the workload: *tid */
static temper_db *open_with_workload(int64_t *tid) {
  temper_db *db = NULL;
  char err[4096];
  assert_int_equal(temper_db_open(path, tune_db_versions(), &db, err, sizeof err), TEMPER_OK);
  db_target ht;
  target_host(&ht);
  int64_t wid;
  assert_int_equal(db_target_id(db, &ht, tid), TEMPER_OK);
  assert_int_equal(db_workload_id(db, key, "conv2d", "{}", workload_flops(&test_w), &wid), TEMPER_OK);
  return db;
}

static void test_choices(void **state) {
  (void)state;
  cg_target host;
  set_up("choose", &host);
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
  int64_t tid;
  temper_db *db = open_with_workload(&tid);
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
  /* records, none of today's default config: tuned with other defaults, said so */
  assert_int_equal(e.default_unmeasured, 1);
  assert_int_equal(s.default_unmeasured, 1);
  db_chooser_close(dc);
  /* at three threads, the nearest measured thread count (two) */
  assert_int_equal(db_chooser_open(path, &host, 3, 0, &dc, err, sizeof err), TEMPER_OK);
  assert_int_equal(choose(dc, &got), 1);
  assert_int_equal(space_index(&sp, &got), space_index(&sp, &c[2]));
  db_chooser_get(dc, 0, &e);
  assert_int_equal(e.threads, 2);
  db_chooser_close(dc);
  /* refine's alternatives: the default config's record first, though far
   * slower than the fastest (an untuned build runs it), then the fastest of
   * each other class within REFINE_SLOWER */
  sched_config def;
  config_default_at(&sp, 0, 1, &def);
  assert_int_not_equal(space_index(&sp, &def), space_index(&sp, &c[1]));
  assert_int_equal(temper_db_open(path, tune_db_versions(), &db, err, sizeof err), TEMPER_OK);
  add(db, tid, &def, tmpl_versions[def.tmpl], 1, 9e-6);
  temper_db_close(db);
  assert_int_equal(db_chooser_open(path, &host, 1, 0, &dc, err, sizeof err), TEMPER_OK);
  db_chooser_want_alternatives(dc, REFINE_MAX_ALT);
  assert_int_equal(choose(dc, &got), 1);
  assert_int_equal(space_index(&sp, &got), space_index(&sp, &c[1]));
  db_chooser_get(dc, 0, &e);
  assert_true(e.n_alt >= 1);
  char def_json[512];
  config_json(&sp, &def, def_json, sizeof def_json);
  assert_string_equal(e.alt[0], def_json);
  assert_true(e.alt_s[0] == 9e-6);
  for (int k = 1; k < e.n_alt; k++) assert_string_not_equal(e.alt[k], def_json);
  db_chooser_close(dc);
  /* without alternatives wanted, none */
  assert_int_equal(db_chooser_open(path, &host, 1, 0, &dc, err, sizeof err), TEMPER_OK);
  assert_int_equal(choose(dc, &got), 1);
  db_chooser_get(dc, 0, &e);
  assert_int_equal(e.n_alt, 0);
  assert_int_equal(e.default_unmeasured, 0);   /* the default's record is there now */
  db_chooser_close(dc);
  /* a database that is not there: an error naming it */
  assert_int_equal(db_chooser_open("/nonexistent/t.db", &host, 1, 0, &dc, err, sizeof err), TEMPER_EINVAL);
  assert_null(dc);
  assert_non_null(strstr(err, "/nonexistent/t.db: no such database"));
  unlink(path);
}


/* a join at stake (conv_site.join_loss): a record that breaks it pays the
 * round trip of the tensor it would keep; the fastest record wins where
 * none is at stake, or where the gap passes the round trip */
static int64_t joining_index;
static int64_t loss_one(const conv_site *site, const struct task_space *s, const struct sched_config *c) {
  return space_index(s, c) == joining_index ? 0 : site->in_floats;
}

static void test_join_at_stake(void **state) {
  (void)state;
  cg_target host;
  set_up("choose_join", &host);
  /* two configs that read and write the same blocks: only the join tells them apart */
  sched_config c[64], a = {0}, b = {0};
  valid_configs(c, 64);
  int found = 0;
  conv_layouts la, lb;
  for (int i = 0; i < 64 && !found; i++)
    for (int j = i + 1; j < 64 && !found; j++) {
      config_layouts(&sp, &c[i], -1, &la);
      config_layouts(&sp, &c[j], -1, &lb);
      if (la.in_blk == lb.in_blk && la.out_blk == lb.out_blk) a = c[i], b = c[j], found = 1;
    }
  assert_true(found);
  char err[4096];
  int64_t tid;
  temper_db *db = open_with_workload(&tid);
  add(db, tid, &a, tmpl_versions[TMPL_NCHWC], 1, 20e-6);
  add(db, tid, &b, tmpl_versions[TMPL_NCHWC], 1, 24e-6);   /* b makes the join */
  temper_db_close(db);
  joining_index = space_index(&sp, &b);
  /* the producer's output: 112 896 floats (14×14×576), 15 µs as a round trip */
  conv_site plain = {.in_block = (int)la.in_blk, .in_floats = 14 * 14 * 576}, joined = plain, small = plain;
  joined.join_loss = loss_one;
  small.join_loss = loss_one;
  small.in_floats = 14 * 14 * 24;   /* 0.6 µs: the 4 µs gap wins */
  const conv_site *sites[3] = {&plain, &joined, &small};
  const sched_config *want[3] = {&a, &b, &a};
  for (int i = 0; i < 3; i++) {   /* a chooser per site: it keeps a workload's first choice */
    db_chooser *dc = NULL;
    sched_config got;
    assert_int_equal(db_chooser_open(path, &host, 1, 0, &dc, err, sizeof err), TEMPER_OK);
    assert_int_equal(db_chooser_choose(dc, key, &sp, sites[i], &got, err, sizeof err), 1);
    if (space_index(&sp, &got) != space_index(&sp, want[i])) fail_msg("site %d: not the expected record", i);
    db_chooser_close(dc);
  }
  unlink(path);
}


/* the workload's description, as the tuner records it (import checks it) */
static const char *desc_of(const conv_workload *w) {
  static char buf[512];
  snprintf(buf, sizeof buf,
           "{\"op\":\"conv2d\",\"N\":%lld,\"C\":%lld,\"H\":%lld,\"W\":%lld,\"K\":%lld,\"R\":%lld,\"S\":%lld,\"stride\":[%lld,%lld],"
           "\"padding\":[%lld,%lld,%lld,%lld],\"dilation\":[%lld,%lld],\"groups\":%lld,\"dtype\":\"float32\",\"layout\":\"NCHW\"}",
           (long long)w->N, (long long)w->C, (long long)w->H, (long long)w->W, (long long)w->K, (long long)w->R, (long long)w->S,
           (long long)w->sh, (long long)w->sw, (long long)w->pt, (long long)w->pl, (long long)w->pb, (long long)w->pr,
           (long long)w->dh, (long long)w->dw, (long long)w->G);
  return buf;
}

/* a database of records, exported as a log file (what logs/ ships) */
static void write_log(const char *dbfile, const char *logfile) {
  temper_db *db = NULL;
  char err[4096];
  assert_int_equal(temper_db_open(dbfile, tune_db_versions(), &db, err, sizeof err), TEMPER_OK);
  FILE *f = fopen(logfile, "w");
  assert_non_null(f);
  diag d = {0};
  int n = 0;
  log_filter lf = {.best_only = 1};
  assert_int_equal(log_export(db, f, &lf, &n, &d), TEMPER_OK);
  fclose(f);
  temper_db_close(db);
}

/* the shipped logs: used where the user's database has nothing for a
 * workload, never over a record of the user's; named in the report; off;
 * a missing path and a bad line are errors naming them */
static void test_pretuned(void **state) {
  (void)state;
  char user[256], other[256], dir[256], log1[300], bad[300];
  snprintf(user, sizeof user, "/tmp/temper_pre_user_%d.db", (int)getpid());
  snprintf(other, sizeof other, "/tmp/temper_pre_other_%d.db", (int)getpid());
  snprintf(dir, sizeof dir, "/tmp/temper_pre_logs_%d", (int)getpid());
  snprintf(log1, sizeof log1, "%s/machine.jsonl", dir);
  unlink(user), unlink(other), mkdir(dir, 0700);
  cg_target host;
  diag d = {0};
  cg_host_target(&host, &d);
  conv_workload w = {1, 16, 8, 8, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  conv_workload w2 = {1, 32, 8, 8, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  task_space sp2;
  char key2[256];
  space_build(&w2, host.vec, &sp2);
  workload_key(&w2, key2, sizeof key2);
  space_build(&w, host.vec, &sp);
  workload_key(&w, key, sizeof key);
  sched_config c[3], got;
  valid_configs(c, 3);
  char err[4096];
  db_target ht;
  target_host(&ht);
  int64_t tid, wid;
  int v = tmpl_versions[TMPL_NCHWC];
  /* the log: c[0] for w, and a record for w2 */
  temper_db *db = NULL;
  assert_int_equal(temper_db_open(other, tune_db_versions(), &db, err, sizeof err), TEMPER_OK);
  assert_int_equal(db_target_id(db, &ht, &tid), TEMPER_OK);
  assert_int_equal(db_workload_id(db, key, "conv2d", desc_of(&w), workload_flops(&w), &wid), TEMPER_OK);
  add(db, tid, &c[0], v, 1, 1e-6);
  char saved_key[256];
  snprintf(saved_key, sizeof saved_key, "%s", key);
  task_space saved_sp = sp;
  snprintf(key, sizeof key, "%s", key2);
  sp = sp2;
  sched_config c2[1];
  valid_configs(c2, 1);
  assert_int_equal(db_workload_id(db, key, "conv2d", desc_of(&w2), workload_flops(&w2), &wid), TEMPER_OK);
  add(db, tid, &c2[0], v, 1, 5e-6);
  snprintf(key, sizeof key, "%s", saved_key);
  sp = saved_sp;
  temper_db_close(db);
  write_log(other, log1);
  /* the user's database: c[1] for w, nothing for w2 */
  assert_int_equal(temper_db_open(user, tune_db_versions(), &db, err, sizeof err), TEMPER_OK);
  assert_int_equal(db_target_id(db, &ht, &tid), TEMPER_OK);
  assert_int_equal(db_workload_id(db, key, "conv2d", desc_of(&w), workload_flops(&w), &wid), TEMPER_OK);
  add(db, tid, &c[1], v, 1, 2e-6);
  temper_db_close(db);

  db_chooser *dc = NULL;
  assert_int_equal(db_chooser_open(user, &host, 1, 0, &dc, err, sizeof err), TEMPER_OK);
  if (db_chooser_use_pretuned(dc, dir, err, sizeof err)) fail_msg("%s", err);
  assert_int_equal(choose(dc, &got), 1);   /* the user's record wins, though the log's is faster */
  assert_int_equal(space_index(&sp, &got), space_index(&sp, &c[1]));
  conv_site site = {.in_block = 0, .in_floats = 32 * 8 * 8};
  assert_int_equal(db_chooser_choose(dc, key2, &sp2, &site, &got, err, sizeof err), 1);   /* nothing of the user's: the log's */
  assert_int_equal(space_index(&sp2, &got), space_index(&sp2, &c2[0]));
  chooser_entry e;
  db_chooser_get(dc, 0, &e);
  assert_null(e.pretuned);
  db_chooser_get(dc, 1, &e);
  assert_string_equal(e.pretuned, log1);
  assert_int_equal(e.level, TARGET_EXACT);
  chooser_summary s;
  db_chooser_summary(dc, &s);
  assert_int_equal(s.n_found, 2);
  assert_int_equal(s.n_pretuned, 1);
  assert_int_equal(s.n_fell, 0);
  db_chooser_close(dc);
  /* no database at all: the log for both; "off": the defaults */
  assert_int_equal(db_chooser_open(NULL, &host, 1, 0, &dc, err, sizeof err), TEMPER_OK);
  assert_int_equal(db_chooser_use_pretuned(dc, log1, err, sizeof err), TEMPER_OK);
  assert_int_equal(choose(dc, &got), 1);
  assert_int_equal(space_index(&sp, &got), space_index(&sp, &c[0]));
  db_chooser_close(dc);
  assert_int_equal(db_chooser_open(NULL, &host, 1, 0, &dc, err, sizeof err), TEMPER_OK);
  assert_int_equal(db_chooser_use_pretuned(dc, "off", err, sizeof err), TEMPER_OK);
  assert_int_equal(choose(dc, &got), 0);
  /* a path that is not there, a log with a bad line: errors naming them */
  assert_int_equal(db_chooser_use_pretuned(dc, "/nonexistent/logs", err, sizeof err), TEMPER_EINVAL);
  assert_non_null(strstr(err, "/nonexistent/logs"));
  db_chooser_close(dc);
  snprintf(bad, sizeof bad, "%s/broken.jsonl", dir);
  FILE *f = fopen(bad, "w");
  fputs("{\"format\":\"temper-log\",\"version\":1,\"workload\":\n", f);
  fclose(f);
  assert_int_equal(db_chooser_open(NULL, &host, 1, 0, &dc, err, sizeof err), TEMPER_OK);
  assert_int_not_equal(db_chooser_use_pretuned(dc, dir, err, sizeof err), TEMPER_OK);
  if (!strstr(err, "broken.jsonl") || !strstr(err, ":1")) fail_msg("error: %s", err);
  db_chooser_close(dc);
  unlink(bad);
  /* more logs than the chooser holds: an error naming the limit, not a silent cut */
  char many[300];
  for (int i = 0; i < 17; i++) {
    snprintf(many, sizeof many, "%s/m%02d.jsonl", dir, i);
    fclose(fopen(many, "w"));
  }
  assert_int_equal(db_chooser_open(NULL, &host, 1, 0, &dc, err, sizeof err), TEMPER_OK);
  assert_int_not_equal(db_chooser_use_pretuned(dc, dir, err, sizeof err), TEMPER_OK);
  if (!strstr(err, "more than 16 pre-tuned logs")) fail_msg("error: %s", err);
  db_chooser_close(dc);
  for (int i = 0; i < 17; i++) {
    snprintf(many, sizeof many, "%s/m%02d.jsonl", dir, i);
    unlink(many);
  }
  unlink(log1), rmdir(dir), unlink(user), unlink(other);
}

typedef struct log_check { int records, stale; } log_check;
static temper_status check_record(void *ctx, const db_record *r, const char *op, const char *desc, double flops) {
  (void)op, (void)desc, (void)flops;
  log_check *c = ctx;
  c->records++;
  if (r->tmpl_version != tune_tmpl_version(r->tmpl)) {
    fprintf(stderr, "%s: %s version %d, in force %d\n", r->workload, r->tmpl, r->tmpl_version, tune_tmpl_version(r->tmpl));
    c->stale++;
  }
  return TEMPER_OK;
}

/* the logs the repository ships (logs/): they parse, their template versions
 * are in force, and a build from them equals the reference — taking them
 * where one matches this machine */
static void test_shipped_logs(void **state) {
  (void)state;
  DIR *dir = opendir(TEMPER_SOURCE_DIR "/logs");
  assert_non_null(dir);
  cg_target host;
  diag d = {0};
  cg_host_target(&host, &d);
  int n_logs = 0, matches = 0;
  for (struct dirent *e; (e = readdir(dir));) {
    size_t len = strlen(e->d_name);
    if (len < 7 || strcmp(e->d_name + len - 6, ".jsonl")) continue;
    char path[4096], err[4096];
    snprintf(path, sizeof path, "%s/logs/%s", TEMPER_SOURCE_DIR, e->d_name);
    temper_db *db = NULL;
    assert_int_equal(temper_db_open(":memory:", tune_db_versions(), &db, err, sizeof err), TEMPER_OK);
    log_result res;
    if (log_import(db, path, 0, &res, &d)) fail_msg("%s", d.msg);
    log_check c = {0};
    assert_int_equal(db_foreach(db, 0, check_record, &c), TEMPER_OK);
    assert_true(c.records > 0);
    assert_int_equal(c.records, res.imported);
    if (c.stale) fail_msg("%s: %d records of template versions no longer in force (re-tune, or drop them)", path, c.stale);
    db_target_row *rows = NULL;
    int nt = 0;
    assert_int_equal(db_targets(db, &rows, &nt), TEMPER_OK);
    for (int i = 0; i < nt; i++) matches += target_match(&rows[i].t, &host) >= 0;
    free(rows);
    temper_db_close(db);
    n_logs++;
  }
  closedir(dir);
  assert_true(n_logs > 0);
  /* ResNet-18's first stage: in every shipped log */
  result r = sh("cd %s && %s build examples/resnet_block.relay --pretuned logs --check -o /tmp/temper_shipped_%d.so 2>&1; "
                "rm -f /tmp/temper_shipped_%d.so /tmp/temper_shipped_%d.h", TEMPER_SOURCE_DIR, TEMPER_BINARY, (int)getpid(),
                (int)getpid(), (int)getpid());
  if (r.code || !strstr(r.out, "ok: within") || (matches && !strstr(r.out, "pre-tuned ("))) fail_msg("%s", r.out);
  free(r.out);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_choices), cmocka_unit_test(test_join_at_stake), cmocka_unit_test(test_pretuned),
                                     cmocka_unit_test(test_shipped_logs)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
