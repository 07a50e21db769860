/* test_db.c: the database's edges: a future schema is refused, an older one
 * migrated, a corrupt file or a foreign database gets a clear error; records
 * round-trip; the best is a query that ignores old template versions. */
#include <unistd.h>
#include "db.h"
#include "helpers.h"

/* The tests of both backends run once on an SQLite file and once on a
 * PostgreSQL database of the throwaway server tests/pg/with_pg.sh starts
 * ($TEMPER_TEST_PG); `where` is the one in use. */
static char path[256];
static char where[1024];
static int on_pg;

static int setup(void **state) {
  (void)state;
  snprintf(path, sizeof path, "/tmp/temper_test_db_%d.db", (int)getpid());
  snprintf(where, sizeof where, "%s", path);
  on_pg = 0;
  return 0;
}

static int setup_pg(void **state) {
  (void)state;
  const char *url = getenv("TEMPER_TEST_PG");
  if (!url) return -1;
  snprintf(where, sizeof where, "%stemper_test_db", url);
  on_pg = 1;
  return 0;
}

static void clean(void) {
  char cmd[1024];
  if (on_pg) snprintf(cmd, sizeof cmd, "psql -q -c 'DROP DATABASE IF EXISTS temper_test_db WITH (FORCE)' -c 'CREATE DATABASE temper_test_db'");
  else snprintf(cmd, sizeof cmd, "rm -f %s %s-wal %s-shm", path, path, path);
  assert_int_equal(system(cmd), 0);
}

static void sql(const char *s) {
  char cmd[4096];
  if (on_pg) snprintf(cmd, sizeof cmd, "psql -q -d temper_test_db -c \"%s\" >/dev/null", s);
  else snprintf(cmd, sizeof cmd, "sqlite3 %s \"%s\"", path, s);
  assert_int_equal(system(cmd), 0);
}

/* one template in force: conv2d_nchwc at version 2 */
static const char *const tmpl_names_[] = {"conv2d_nchwc"};
static const int tmpl_versions_[] = {2};
static const db_versions versions = {1, tmpl_names_, tmpl_versions_};

/* a fresh database of the backend under test, with one target (*tid) */
static temper_db *fresh_db(const char *cpu, int64_t *tid) {
  clean();
  temper_db *db = NULL;
  char err[4096];
  assert_int_equal(temper_db_open(where, &versions, &db, err, sizeof err), TEMPER_OK);
  db_target t = {"x86_64-pc-linux-gnu", "", "+avx512f", "19", 2};
  snprintf(t.cpu, sizeof t.cpu, "%s", cpu);
  assert_int_equal(db_target_id(db, &t, tid), TEMPER_OK);
  return db;
}

static void test_records_and_best(void **state) {
  (void)state;
  clean();
  temper_db *db = NULL;
  char err[4096];
  assert_int_equal(temper_db_open(where, &versions, &db, err, sizeof err), TEMPER_OK);
  db_target t = {"x86_64-pc-linux-gnu", "znver4", "+avx512f", "19", 2};
  int64_t tid, tid2, wid;
  assert_int_equal(db_target_id(db, &t, &tid), TEMPER_OK);
  assert_int_equal(db_target_id(db, &t, &tid2), TEMPER_OK);
  assert_int_equal(tid, tid2);
  assert_int_equal(db_workload_id(db, "wk", "conv2d", "{}", 1e9, &wid), TEMPER_OK);
  double times[] = {3e-3, 2e-3, 1e-3, 5e-3};
  int versions[] = {2, 2, 1, 2};   /* the fastest is of an old template version */
  db_status st[] = {DB_OK, DB_OK, DB_OK, DB_TIMEOUT};
  for (int i = 0; i < 4; i++) {
    db_record r = {.target_id = tid, .tmpl_version = versions[i], .config_index = i, .threads = 1, .status = st[i],
                   .median_s = times[i], .min_s = times[i], .max_s = times[i], .rounds = 3, .gflops = 1e-9 / times[i]};
    strcpy(r.workload, "wk");
    strcpy(r.tmpl, "conv2d_nchwc");
    snprintf(r.config, sizeof r.config, "{\"i\":%d}", i);
    strcpy(r.host, "h");
    strcpy(r.temper_version, "0");
    assert_int_equal(db_insert(db, &r), TEMPER_OK);
  }
  db_record best;
  assert_int_equal(db_best(db, "wk", tid, 1, &best), 1);
  assert_int_equal(best.config_index, 1);   /* not the old-version record */
  assert_string_equal(best.config, "{\"i\":1}");
  assert_int_equal(db_best(db, "wk", tid, 2, &best), 0);   /* other threads: nothing */
  int64_t *m;
  int n;
  assert_int_equal(db_measured(db, "wk", tid, 1, &m, &n), TEMPER_OK);
  assert_int_equal(n, 3);   /* indices 0, 1 and 3: the old-version record does not count */
  free(m);
  int c[DB_STATUS_COUNT];
  assert_int_equal(db_counts(db, "wk", tid, 1, c), TEMPER_OK);
  assert_int_equal(c[DB_OK], 2);
  assert_int_equal(c[DB_TIMEOUT], 1);
  temper_db_close(db);
}

static void test_future_schema_refused(void **state) {
  (void)state;
  clean();
  temper_db *db = NULL;
  char err[4096];
  assert_int_equal(temper_db_open(where, &versions, &db, err, sizeof err), TEMPER_OK);
  temper_db_close(db);
  sql("UPDATE meta SET value='99' WHERE key='schema_version'");
  assert_int_equal(temper_db_open(where, &versions, &db, err, sizeof err), TEMPER_EDB);
  assert_null(db);
  assert_non_null(strstr(err, "schema version 99, newer than this temper understands (4)"));
}

/* a version 1 database (records without error text and re-measure flag, no
 * choices, no leases) is migrated through versions 2 and 3 to 4, data kept */
static void test_migration_from_v1(void **state) {
  (void)state;
  clean();
  sql("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
      "INSERT INTO meta VALUES('schema_version','1');"
      "CREATE TABLE targets(id INTEGER PRIMARY KEY, triple TEXT NOT NULL, cpu TEXT NOT NULL, features TEXT NOT NULL,"
      " llvm_version TEXT NOT NULL, cores INTEGER NOT NULL, UNIQUE(triple, cpu, features, llvm_version, cores));"
      "CREATE TABLE workloads(id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, op TEXT NOT NULL, description TEXT NOT NULL, flops REAL NOT NULL);"
      "CREATE TABLE runs(id INTEGER PRIMARY KEY, command TEXT NOT NULL, seed INTEGER NOT NULL, host TEXT NOT NULL, started_at TEXT NOT NULL, ended_at TEXT);"
      "CREATE TABLE records(id INTEGER PRIMARY KEY, workload_id INTEGER NOT NULL, target_id INTEGER NOT NULL, template TEXT NOT NULL,"
      " template_version INTEGER NOT NULL, config TEXT NOT NULL, config_index INTEGER NOT NULL, threads INTEGER NOT NULL,"
      " status TEXT NOT NULL, median_s REAL, min_s REAL, max_s REAL, rounds INTEGER, gflops REAL, measured_at TEXT NOT NULL,"
      " host TEXT NOT NULL, temper_version TEXT NOT NULL, run_id INTEGER);"
      "INSERT INTO targets VALUES(1,'t','c','f','19',2); INSERT INTO workloads VALUES(1,'wk','conv2d','{}',1);"
      "INSERT INTO records VALUES(1,1,1,'conv2d_nchwc',2,'{}',7,1,'ok',0.5,0.5,0.5,3,2,'2026','h','0',NULL);");
  temper_db *db = NULL;
  char err[4096];
  assert_int_equal(temper_db_open(path, &versions, &db, err, sizeof err), TEMPER_OK);
  db_record best;
  assert_int_equal(db_best(db, "wk", 1, 1, &best), 1);
  assert_int_equal(best.config_index, 7);
  assert_int_equal(best.remeasure, 0);
  /* the versions in force belong to the handle: another handle, opened
   * with conv2d_nchwc at version 3, finds the record stale meanwhile */
  static const int v3[] = {3};
  const db_versions newer = {1, versions.names, v3};
  temper_db *db3 = NULL;
  assert_int_equal(temper_db_open(path, &newer, &db3, err, sizeof err), TEMPER_OK);
  assert_int_equal(db_best(db3, "wk", 1, 1, &best), 0);
  assert_int_equal(db_tmpl_version(db3, "conv2d_nchwc"), 3);
  assert_int_equal(db_tmpl_version(db3, "conv2d_bogus"), -1);
  temper_db_close(db3);
  assert_int_equal(db_best(db, "wk", 1, 1, &best), 1);
  db_choice *ch = NULL;
  int nch = -1;
  assert_int_equal(db_choices_get(db, "m", 1, 1, &ch, &nch), TEMPER_OK);   /* the new table exists */
  assert_int_equal(nch, 0);
  free(ch);
  temper_db_close(db);
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "sqlite3 %s \"SELECT value FROM meta WHERE key='schema_version'\" | grep -qx 4", path);
  assert_int_equal(system(cmd), 0);
}

/* choices of `temper refine`: replaced as a set per (model, target,
 * threads), kept apart per model and thread count, refused for a workload
 * the database does not know (and then nothing of the set is written) */
static void test_choices(void **state) {
  (void)state;
  int64_t tid, wid;
  temper_db *db = fresh_db("znver5", &tid);
  assert_int_equal(db_workload_id(db, "wk1", "conv2d", "{}", 1, &wid), TEMPER_OK);
  assert_int_equal(db_workload_id(db, "wk2", "conv2d", "{}", 1, &wid), TEMPER_OK);
  db_choice c[2] = {{"wk1", "conv2d_nchwc", 2, "{\"a\":1}", "{\"a\":0}", 1e-4, "", ""},
                    {"wk2", "conv2d_1x1", 1, "{\"b\":1}", "{\"b\":0}", 2e-4, "", ""}};
  assert_int_equal(db_choices_replace(db, "sigA", tid, 2, c, 2, "host", "0.1"), TEMPER_OK);
  assert_int_equal(db_choices_replace(db, "sigA", tid, 1, c, 1, "host", "0.1"), TEMPER_OK);
  assert_int_equal(db_choices_replace(db, "sigB", tid, 2, c + 1, 1, "host", "0.1"), TEMPER_OK);
  db_choice *got = NULL;
  int n = 0;
  assert_int_equal(db_choices_get(db, "sigA", tid, 2, &got, &n), TEMPER_OK);
  assert_int_equal(n, 2);
  assert_string_equal(got[0].workload, "wk1");
  assert_string_equal(got[0].replaces, "{\"a\":0}");
  assert_string_equal(got[1].config, "{\"b\":1}");
  assert_int_equal(got[1].tmpl_version, 1);
  assert_true(got[1].gain_s > 1.9e-4 && got[1].gain_s < 2.1e-4);
  assert_true(got[0].measured_at[0] != 0);
  free(got);
  /* a new refine replaces the set: one choice left */
  assert_int_equal(db_choices_replace(db, "sigA", tid, 2, c + 1, 1, "host", "0.1"), TEMPER_OK);
  assert_int_equal(db_choices_get(db, "sigA", tid, 2, &got, &n), TEMPER_OK);
  assert_int_equal(n, 1);
  assert_string_equal(got[0].workload, "wk2");
  free(got);
  assert_int_equal(db_choices_get(db, "sigA", tid, 1, &got, &n), TEMPER_OK);
  assert_int_equal(n, 1);
  free(got);
  /* an unknown workload: an error naming it, the old set kept */
  db_choice bad = {"nope", "conv2d_nchwc", 2, "{}", "{}", 0, "", ""};
  db_choice two[2] = {c[0], bad};
  assert_int_not_equal(db_choices_replace(db, "sigA", tid, 2, two, 2, "host", "0.1"), TEMPER_OK);
  assert_non_null(strstr(db_errmsg(db), "inserting a choice"));
  assert_int_equal(db_choices_get(db, "sigA", tid, 2, &got, &n), TEMPER_OK);
  assert_int_equal(n, 1);
  assert_string_equal(got[0].workload, "wk2");
  free(got);
  temper_db_close(db);
}

static void test_corrupt_and_foreign_files(void **state) {
  (void)state;
  clean();
  FILE *f = fopen(path, "wb");
  for (int i = 0; i < 4096; i++) fputc(i * 7 & 255, f);
  fclose(f);
  temper_db *db = NULL;
  char err[4096];
  assert_int_equal(temper_db_open(path, &versions, &db, err, sizeof err), TEMPER_EDB);
  assert_null(db);
  assert_non_null(strstr(err, path));
  assert_non_null(strstr(err, "not a database"));
  clean();
  sql("CREATE TABLE other(x)");
  assert_int_equal(temper_db_open(path, &versions, &db, err, sizeof err), TEMPER_EDB);
  assert_non_null(strstr(err, "not a temper one"));
  clean();
  sql("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT); INSERT INTO meta VALUES('schema_version', NULL)");
  assert_int_equal(temper_db_open(path, &versions, &db, err, sizeof err), TEMPER_EDB);   /* once atoi(NULL) */
  assert_non_null(strstr(err, "the schema version in the meta table is not a number (NULL)"));
  clean();
  assert_int_equal(temper_db_open("/nonexistent/dir/x.db", &versions, &db, err, sizeof err), TEMPER_EDB);
  assert_non_null(strstr(err, "/nonexistent/dir/x.db"));
}

/* a temper database whose pages were damaged after it was written is
 * refused at open (PRAGMA quick_check), before any query reads it */
static void test_damaged_file_refused(void **state) {
  (void)state;
  clean();
  temper_db *db = NULL;
  char err[4096];
  assert_int_equal(temper_db_open(path, &versions, &db, err, sizeof err), TEMPER_OK);
  temper_db_close(db);
  /* a table of many pages, then garbage over a page in its middle */
  sql("PRAGMA journal_mode=DELETE; CREATE TABLE filler(x TEXT); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) "
      "INSERT INTO filler SELECT printf('%0200d', i) FROM n; CREATE INDEX filler_x ON filler(x);");
  FILE *f = fopen(path, "r+b");
  assert_non_null(f);
  fseek(f, 4096 * 40 + 100, SEEK_SET);
  for (int i = 0; i < 2000; i++) fputc(0x5a, f);
  fclose(f);
  assert_int_equal(temper_db_open(path, &versions, &db, err, sizeof err), TEMPER_EDB);
  assert_null(db);
  if (!strstr(err, "damaged") && !strstr(err, "malformed")) fprintf(stderr, "%s\n", err);
  assert_true(strstr(err, "damaged") || strstr(err, "malformed"));
  assert_non_null(strstr(err, path));
  clean();
}

static db_lease claim(temper_db *db, const char *wk, int64_t tid, const db_lease_owner *me, double ttl, double round) {
  db_lease l;
  assert_int_equal(db_lease_claim(db, wk, tid, 1, me, ttl, round, &l), TEMPER_OK);
  return l;
}

static void nap(double s) { usleep((useconds_t)(s * 1e6)); }

/* leases: one holder at a time; renewed, released, finished for the round,
 * expired and taken over (with the run to resume from); listed by show */
static void test_leases(void **state) {
  (void)state;
  int64_t tid, wid, runs[3];
  temper_db *db = fresh_db("sapphirerapids", &tid);
  const char *wks[] = {"wk1", "wk2", "wk3"};
  for (int i = 0; i < 3; i++) assert_int_equal(db_workload_id(db, wks[i], "conv2d", "{}", 1, &wid), TEMPER_OK);
  for (int i = 0; i < 3; i++) assert_int_equal(db_run_begin(db, "tune", 1, "h", &runs[i]), TEMPER_OK);
  db_lease_owner a = {"hostA:1:aa", "hostA", runs[0]}, b = {"hostB:2:bb", "hostB", runs[1]}, c = {"hostC:3:cc", "hostC", runs[2]};
  double round;
  assert_int_equal(db_now(db, &round), TEMPER_OK);
  assert_true(round > 1.7e9);
  nap(0.01);   /* the round began strictly before anything below finishes */
  assert_int_equal(claim(db, "wk1", tid, &a, 60, round).state, DB_LEASE_MINE);
  db_lease l = claim(db, "wk1", tid, &b, 60, round);
  assert_int_equal(l.state, DB_LEASE_BUSY);
  assert_string_equal(l.holder, "hostA");
  assert_int_equal(claim(db, "wk1", tid, &a, 60, round).state, DB_LEASE_MINE);   /* again: renewed */
  assert_int_equal(db_lease_held(db, "wk1", tid, 1, a.owner), 1);
  assert_int_equal(db_lease_held(db, "wk1", tid, 1, b.owner), 0);
  /* show lists the live lease */
  FILE *f = tmpfile();
  assert_int_equal(db_show(db, f), TEMPER_OK);
  rewind(f);
  char text[8192] = {0};
  assert_true(fread(text, 1, sizeof text - 1, f) > 0);
  fclose(f);
  assert_non_null(strstr(text, "leased task"));
  assert_non_null(strstr(text, "hostA"));
  /* finished: done for tuners of this round, free for a later round */
  assert_int_equal(db_lease_release(db, "wk1", tid, 1, a.owner, 1), TEMPER_OK);
  l = claim(db, "wk1", tid, &b, 60, round);
  assert_int_equal(l.state, DB_LEASE_DONE);
  assert_string_equal(l.holder, "hostA");
  nap(0.05);
  double later;
  assert_int_equal(db_now(db, &later), TEMPER_OK);
  l = claim(db, "wk1", tid, &b, 60, later);
  assert_int_equal(l.state, DB_LEASE_MINE);
  assert_int_equal(l.prev_run, 0);
  /* a tuner that stops renewing: its lease expires, another takes over and resumes its run */
  assert_int_equal(claim(db, "wk2", tid, &c, 0.3, round).state, DB_LEASE_MINE);
  assert_int_equal(claim(db, "wk2", tid, &b, 60, round).state, DB_LEASE_BUSY);
  nap(0.5);
  l = claim(db, "wk2", tid, &b, 60, round);
  assert_int_equal(l.state, DB_LEASE_MINE);
  assert_int_equal(l.prev_run, runs[2]);
  assert_int_equal(db_lease_held(db, "wk2", tid, 1, c.owner), 0);
  /* renewal keeps a short lease alive; releasing all frees it at once */
  assert_int_equal(claim(db, "wk3", tid, &a, 0.5, round).state, DB_LEASE_MINE);
  assert_int_equal(db_lease_renew(db, a.owner, 60), TEMPER_OK);
  nap(0.7);
  assert_int_equal(claim(db, "wk3", tid, &c, 60, round).state, DB_LEASE_BUSY);
  assert_int_equal(db_lease_release_all(db, a.owner), TEMPER_OK);
  l = claim(db, "wk3", tid, &c, 60, round);
  assert_int_equal(l.state, DB_LEASE_MINE);
  assert_int_equal(l.prev_run, runs[0]);
  /* a workload the database does not know cannot be leased */
  db_lease none;
  assert_int_equal(db_lease_claim(db, "nope", tid, 1, &a, 60, round, &none), TEMPER_EDB);
  assert_non_null(strstr(db_errmsg(db), "nope"));
  temper_db_close(db);
}

/* an unreachable server: exit with the URL named, its password hidden */
static void test_pg_unreachable(void **state) {
  (void)state;
  temper_db *db = NULL;
  char err[4096];
  assert_int_equal(temper_db_open("postgresql://temper:sekrit@/temper?host=/nonexistent/dir", &versions, &db, err, sizeof err),
                   TEMPER_EDB);
  assert_null(db);
  assert_non_null(strstr(err, "postgresql://temper:***@/temper?host=/nonexistent/dir"));
  assert_non_null(strstr(err, "cannot connect"));
  assert_null(strstr(err, "sekrit"));
  assert_int_equal(temper_db_open("postgres:///temper?host=/nonexistent/dir&password=sekrit2", &versions, &db, err, sizeof err),
                   TEMPER_EDB);
  assert_non_null(strstr(err, "password=***"));
  assert_null(strstr(err, "sekrit2"));
}

static db_record rec(int64_t tid, int i, const char *when) {
  db_record r = {.target_id = tid, .tmpl_version = 2, .config_index = i, .threads = 1, .status = DB_OK,
                 .median_s = 1e-3 * (i + 1), .min_s = 1e-3 * (i + 1), .max_s = 1e-3 * (i + 1), .rounds = 3, .gflops = 1};
  strcpy(r.workload, "wk");
  strcpy(r.tmpl, "conv2d_nchwc");
  snprintf(r.config, sizeof r.config, "{\"i\":%d}", i);
  strcpy(r.host, "h");
  strcpy(r.temper_version, "0");
  snprintf(r.measured_at, sizeof r.measured_at, "%s", when);
  return r;
}

static int count_records(temper_db *db, int64_t tid) {
  int64_t *m = NULL;
  int n = 0;
  assert_int_equal(db_measured(db, "wk", tid, 1, &m, &n), TEMPER_OK);
  free(m);
  return n;
}

static void pg_ctl(const char *what) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "%s %s >/dev/null 2>&1", getenv("TEMPER_TEST_PG_CTL"), what);
  assert_int_equal(system(cmd), 0);
}

/* the server stopped mid-run: records are held, written in order once it
 * is back; one that had reached the server before is not stored twice */
static void test_pg_server_restart(void **state) {
  (void)state;
  int64_t tid, wid;
  temper_db *db = fresh_db("sapphirerapids", &tid);
  assert_int_equal(db_workload_id(db, "wk", "conv2d", "{}", 1, &wid), TEMPER_OK);
  db_record r0 = rec(tid, 0, "2026-12-03T10:00:00.000Z");
  assert_int_equal(db_insert(db, &r0), TEMPER_OK);
  pg_ctl("stop -m fast");
  db_set_wait(db, 60);
  for (int i = 1; i <= 3; i++) {
    db_record r = rec(tid, i, "");
    assert_int_equal(db_insert(db, &r), TEMPER_OK);   /* held, not lost, not an error */
  }
  assert_int_equal(db_insert(db, &r0), TEMPER_OK);   /* as if its first insert had reached the server unacknowledged */
  assert_int_equal(db_pending(db), 4);
  pg_ctl("start");
  assert_int_equal(count_records(db, tid), 4);   /* the read reconnected and wrote the held records first */
  assert_int_equal(db_pending(db), 0);
  int c[DB_STATUS_COUNT];
  assert_int_equal(db_counts(db, "wk", tid, 1, c), TEMPER_OK);
  assert_int_equal(c[DB_OK], 4);   /* r0 once */
  /* a read with no wait while the server is away fails with the place named */
  pg_ctl("stop -m fast");
  db_set_wait(db, 0);
  int64_t *m = NULL;
  int n = 0;
  assert_int_equal(db_measured(db, "wk", tid, 1, &m, &n), TEMPER_EDB);
  assert_non_null(strstr(db_errmsg(db), "postgresql://"));
  pg_ctl("start");
  temper_db_close(db);
}

/* the server goes away inside a lease's transaction (stopped while the
 * lease read waits on a table lock another session holds, started again a
 * second later): the claim runs its transaction again once connected and
 * gets the lease — where it failed with "reading a lease" before, and a
 * tuner with it (test_team's server restart, now and then) */
static void test_pg_lost_inside_transaction(void **state) {
  (void)state;
  int64_t tid, wid, run;
  temper_db *db = fresh_db("sapphirerapids", &tid);
  assert_int_equal(db_workload_id(db, "wk", "conv2d", "{}", 1, &wid), TEMPER_OK);
  assert_int_equal(db_run_begin(db, "tune", 1, "hostA", &run), TEMPER_OK);
  db_set_wait(db, 30);
  char cmd[4096];
  snprintf(cmd, sizeof cmd,
           "(psql -q -d temper_test_db -c 'BEGIN; LOCK TABLE leases IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(5); COMMIT;' >/dev/null 2>&1 &);"
           " (sleep 1; %s stop -m fast; sleep 1; %s start) >/dev/null 2>&1 &",
           getenv("TEMPER_TEST_PG_CTL"), getenv("TEMPER_TEST_PG_CTL"));
  assert_int_equal(system(cmd), 0);
  usleep(300000);
  db_lease_owner me = {"hostA:1:aa", "hostA", run};
  db_lease l;
  temper_status s = db_lease_claim(db, "wk", tid, 1, &me, 60, 0, &l);
  if (s) fprintf(stderr, "%s\n", db_errmsg(db));
  assert_int_equal(s, TEMPER_OK);
  assert_int_equal(l.state, DB_LEASE_MINE);
  assert_int_equal(db_lease_held(db, "wk", tid, 1, me.owner), 1);
  temper_db_close(db);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_records_and_best), cmocka_unit_test(test_future_schema_refused),
      cmocka_unit_test(test_migration_from_v1), cmocka_unit_test(test_choices), cmocka_unit_test(test_corrupt_and_foreign_files),
      cmocka_unit_test(test_damaged_file_refused), cmocka_unit_test(test_leases),
  };
  const struct CMUnitTest pg_tests[] = {
      cmocka_unit_test(test_records_and_best), cmocka_unit_test(test_future_schema_refused), cmocka_unit_test(test_choices),
      cmocka_unit_test(test_leases), cmocka_unit_test(test_pg_unreachable), cmocka_unit_test(test_pg_server_restart),
      cmocka_unit_test(test_pg_lost_inside_transaction),
  };
  int rc = cmocka_run_group_tests_name("sqlite", tests, setup, NULL);
  clean();
  if (!getenv("TEMPER_TEST_PG")) {
    fprintf(stderr, "test_db: TEMPER_TEST_PG is not set: run under tests/pg/with_pg.sh for the PostgreSQL backend\n");
    return rc ? rc : 1;
  }
  rc |= cmocka_run_group_tests_name("postgresql", pg_tests, setup_pg, NULL);
  return rc;
}
