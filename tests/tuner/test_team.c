/* test_team.c: tuners sharing one database (tuner/tune.c's leases, db/'s
 * two backends): several tuners at once split the tasks, nothing measured
 * twice; a tuner killed with -9 loses its lease and another finishes its
 * task; a server stopped and started mid-run loses nothing; Ctrl-C
 * releases the leases; a build from PostgreSQL equals a build from its
 * SQLite export. Each runs on SQLite and on the throwaway PostgreSQL server
 * of tests/pg/with_pg.sh. The tuners are child processes with a fake
 * runner that takes a few milliseconds per measurement. */
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "helpers.h"
#include "tune.h"

static char dir[256];
static char where[1024];
static int on_pg;
#define MODEL "tests/data/tiny_classifier.relay"
#define T TEMPER_BINARY
enum { N_TASKS = 4, TRIALS = 24 };

static int setup_sqlite(void **state) {
  (void)state;
  scratch_make(dir, sizeof dir, "temper_team");
  on_pg = 0;
  return 0;
}

static int setup_pg(void **state) {
  if (!getenv("TEMPER_TEST_PG")) return -1;
  on_pg = 1;
  scratch_make(dir, sizeof dir, "temper_team_pg");
  (void)state;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  scratch_remove(dir);
  return 0;
}

/* a fresh, empty database named `name` of the backend under test */
static const char *fresh(const char *name) {
  if (on_pg) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "psql -q -c 'DROP DATABASE IF EXISTS %s WITH (FORCE)' -c 'CREATE DATABASE %s'", name, name);
    assert_int_equal(system(cmd), 0);
    snprintf(where, sizeof where, "%s%s", getenv("TEMPER_TEST_PG"), name);
  } else {
    snprintf(where, sizeof where, "%s/%s.db", dir, name);
  }
  return where;
}

static void make_tasks(tune_task *t) {
  for (int i = 0; i < N_TASKS; i++) {
    memset(&t[i], 0, sizeof t[i]);
    t[i].w = (conv_workload){1, 16 + 16 * i, 14, 14, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    workload_key(&t[i].w, t[i].key, sizeof t[i].key);
    space_build(&t[i].w, host_vec(), &t[i].space);
    t[i].count = 1;
    t[i].flops = workload_flops(&t[i].w);
  }
}

static measure_result slow_fake(void *ctx, const tune_task *t, const sched_config *cfg, int64_t index) {
  (void)t, (void)cfg;
  int ms = *(const int *)ctx;
  struct timespec ts = {0, ms * 1000000L};
  nanosleep(&ts, NULL);
  measure_result m = {.status = DB_OK, .rounds = 3};
  for (int i = 0; i < 3; i++) m.times[i] = 1e-3 * (1 + (double)((uint64_t)index * 2654435761u % 1000) / 1000);
  return m;
}

static volatile int stop_flag;
static void on_term(int sig) { (void)sig; stop_flag = 1; }

/* tuners started together wait at this gate until the parent opens it */
static int gate[2] = {-1, -1};
static void gate_arm(void) { assert_int_equal(pipe(gate), 0); }
static void gate_open(void) {
  close(gate[0]), close(gate[1]);
  gate[0] = gate[1] = -1;
}

/* a tuner in a child process: exit 0 if tune_run succeeded */
static pid_t tuner(const char *db_where, int ms, double lease_s, uint64_t seed, double minutes) {
  pid_t pid = fork();
  if (pid) return pid;
  if (gate[0] >= 0) {   /* wait for the others to start too */
    char c;
    close(gate[1]);
    if (read(gate[0], &c, 1) < 0) _exit(3);
  }
  signal(SIGTERM, on_term);   /* a polite stop, as Ctrl-C is in the CLI */
  tune_task t[N_TASKS];
  make_tasks(t);
  temper_db *db = NULL;
  char err[512];
  if (temper_db_open(db_where, tune_db_versions(), &db, err, sizeof err)) { fprintf(stderr, "%s\n", err); _exit(1); }
  db_set_wait(db, 60);
  tune_opts o = {.trials = TRIALS, .search = SEARCH_RANDOM, .seed = seed, .m = {.threads = 1, .repeat = 3}, .measure = slow_fake,
                 .measure_ctx = &ms, .lease_s = lease_s, .stop = &stop_flag, .minutes = minutes};
  if (minutes > 0) o.trials = 1000000;
  tune_task_result r[N_TASKS];
  diag d = {0};
  int rc = tune_run(db, t, N_TASKS, &o, "team", r, &d) ? 2 : 0;
  if (rc) fprintf(stderr, "tuner %d: %s\n", (int)getpid(), d.msg);
  temper_db_close(db);
  _exit(rc);
}

static void wait_ok(pid_t pid) {
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

typedef struct census {
  int records[N_TASKS];     /* first measurements per task */
  int dups;                 /* a (task, config) measured twice */
  int runs[N_TASKS];        /* distinct runs that measured the task */
  int all_runs;             /* distinct runs over all tasks */
} census;

typedef struct census_ctx {
  census *c;
  tune_task *t;
  int64_t seen[N_TASKS][512];
  int64_t run[N_TASKS][8];
  int64_t every_run[16];
} census_ctx;

static temper_status count(void *ctx, const db_record *r, const char *op, const char *desc, double flops) {
  (void)op, (void)desc, (void)flops;
  census_ctx *x = ctx;
  if (r->remeasure) return TEMPER_OK;
  for (int i = 0; i < N_TASKS; i++) {
    if (strcmp(r->workload, x->t[i].key)) continue;
    int n = x->c->records[i]++;
    for (int j = 0; j < n && j < 512; j++) x->c->dups += x->seen[i][j] == r->config_index;
    if (n < 512) x->seen[i][n] = r->config_index;
    int k = 0;
    while (k < x->c->runs[i] && x->run[i][k] != r->run_id) k++;
    if (k == x->c->runs[i] && k < 8) x->run[i][x->c->runs[i]++] = r->run_id;
  }
  int k = 0;
  while (k < x->c->all_runs && x->every_run[k] != r->run_id) k++;
  if (k == x->c->all_runs && k < 16) x->every_run[x->c->all_runs++] = r->run_id;
  return TEMPER_OK;
}

static census take_census(const char *db_where) {
  census c = {{0}, 0, {0}, 0};
  census_ctx *x = calloc(1, sizeof *x);
  tune_task t[N_TASKS];
  make_tasks(t);
  x->c = &c, x->t = t;
  temper_db *db = NULL;
  char err[512];
  assert_int_equal(temper_db_open(db_where, tune_db_versions(), &db, err, sizeof err), TEMPER_OK);
  assert_int_equal(db_foreach(db, 0, count, x), TEMPER_OK);
  temper_db_close(db);
  free(x);
  return c;
}

/* three tuners at once on one model: every task tuned once, by one tuner,
 * to its budget; no config measured twice */
static void test_three_tuners(void **state) {
  (void)state;
  const char *w = fresh("team_three");
  pid_t p[3];
  gate_arm();
  for (int k = 0; k < 3; k++) p[k] = tuner(w, 3, 30, 10 + (uint64_t)k, 0);
  gate_open();
  for (int k = 0; k < 3; k++) wait_ok(p[k]);
  census c = take_census(w);
  assert_int_equal(c.dups, 0);
  for (int i = 0; i < N_TASKS; i++) {
    assert_int_equal(c.records[i], TRIALS);
    assert_int_equal(c.runs[i], 1);   /* no task tuned by two tuners */
  }
  assert_true(c.all_runs >= 2);   /* and the work was shared */
  /* a tuner started after that round ended begins a new round: it tunes every task again, new configs only */
  wait_ok(tuner(w, 0, 30, 99, 0));
  c = take_census(w);
  assert_int_equal(c.dups, 0);
  for (int i = 0; i < N_TASKS; i++) assert_int_equal(c.records[i], 2 * TRIALS);
}

/* --minutes: tuners interleave on the tasks a batch at a time, each
 * batch under a lease, folding in what the others measured: still no
 * config measured twice */
static void test_scheduled_tuners(void **state) {
  (void)state;
  const char *w = fresh("team_sched");
  pid_t p[2];
  gate_arm();
  for (int k = 0; k < 2; k++) p[k] = tuner(w, 2, 30, 20 + (uint64_t)k, 0.02);
  gate_open();
  for (int k = 0; k < 2; k++) wait_ok(p[k]);
  census c = take_census(w);
  assert_int_equal(c.dups, 0);
  int total = 0;
  for (int i = 0; i < N_TASKS; i++) total += c.records[i];
  assert_true(total >= 16);
  assert_int_equal(c.all_runs, 2);
}

static int records_of(const char *db_where) {
  census c = take_census(db_where);
  int n = 0;
  for (int i = 0; i < N_TASKS; i++) n += c.records[i];
  return n;
}

/* kill -9 mid-task: the lease expires, the next tuner finishes that task
 * where it stopped — the task ends with its budget exactly, no doubles */
static void test_killed_tuner_taken_over(void **state) {
  (void)state;
  const char *w = fresh("team_kill");
  pid_t a = tuner(w, 20, 1.0, 1, 0);
  for (int i = 0; i < 400 && records_of(w) < 6; i++) usleep(10000);   /* mid first task */
  kill(a, SIGKILL);
  waitpid(a, NULL, 0);
  int made = records_of(w);
  assert_true(made >= 6 && made < TRIALS);
  pid_t b = tuner(w, 1, 1.0, 2, 0);
  wait_ok(b);
  census c = take_census(w);
  assert_int_equal(c.dups, 0);
  for (int i = 0; i < N_TASKS; i++) assert_int_equal(c.records[i], TRIALS);
  assert_int_equal(c.runs[0], 2);   /* the dead tuner's records, and the rest by the second */
}

/* a polite stop (Ctrl-C in the CLI) releases the leases at once: the next
 * tuner need not wait for them to expire */
static void test_stop_releases_leases(void **state) {
  (void)state;
  const char *w = fresh("team_stop");
  pid_t a = tuner(w, 20, 600, 1, 0);   /* a lease that would block the task for ten minutes */
  for (int i = 0; i < 400 && records_of(w) < 4; i++) usleep(10000);
  kill(a, SIGTERM);
  wait_ok(a);
  double t0 = data_now();
  pid_t b = tuner(w, 1, 600, 2, 0);
  wait_ok(b);
  assert_true(data_now() - t0 < 60);
  census c = take_census(w);
  assert_int_equal(c.dups, 0);
  for (int i = 0; i < N_TASKS; i++) assert_int_equal(c.records[i], TRIALS);
}

/* the server stopped for a second mid-run and started again: the tuner
 * goes on, holds its records, writes them when the server is back */
static void test_server_restart_mid_run(void **state) {
  (void)state;
  const char *w = fresh("team_restart");
  pid_t a = tuner(w, 10, 30, 1, 0);
  for (int i = 0; i < 400 && records_of(w) < 10; i++) usleep(10000);
  assert_int_equal(waitpid(a, NULL, WNOHANG), 0);   /* still tuning when the server goes */
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "%s stop -m fast >/dev/null 2>&1 && sleep 1 && %s start >/dev/null 2>&1", getenv("TEMPER_TEST_PG_CTL"),
           getenv("TEMPER_TEST_PG_CTL"));
  assert_int_equal(system(cmd), 0);
  wait_ok(a);
  census c = take_census(w);
  assert_int_equal(c.dups, 0);
  for (int i = 0; i < N_TASKS; i++) assert_int_equal(c.records[i], TRIALS);
}

/* the server gone for good: the tuner measures on, waits for it as long as
 * it is told, then saves what it could not write to a log in its working
 * directory, says so, and the log imports once the server is back */
static void test_server_never_returns(void **state) {
  (void)state;
  const char *w = fresh("team_gone");
  char url[1024];
  snprintf(url, sizeof url, "%s", w);
  pid_t a = fork();
  if (!a) {
    if (chdir(dir)) _exit(3);
    tune_task t[N_TASKS];
    make_tasks(t);
    temper_db *db = NULL;
    char err[512];
    if (temper_db_open(url, tune_db_versions(), &db, err, sizeof err)) _exit(1);
    db_set_wait(db, 1);   /* a second, not ten minutes */
    int ms = 10;
    tune_opts o = {.trials = TRIALS, .search = SEARCH_RANDOM, .seed = 5, .m = {.threads = 1, .repeat = 3}, .measure = slow_fake,
                   .measure_ctx = &ms, .lease_s = 30};
    tune_task_result r[N_TASKS];
    diag d = {0};
    temper_status s = tune_run(db, t, 1, &o, "gone", r, &d);   /* one task: the server goes during it */
    fprintf(stderr, "%s\n", d.msg);
    temper_db_close(db);
    _exit(s == TEMPER_EDB && strstr(d.msg, "temper-unwritten-") ? 0 : 2);
  }
  for (int i = 0; i < 400 && records_of(w) < 4; i++) usleep(10000);
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "%s stop -m fast >/dev/null 2>&1", getenv("TEMPER_TEST_PG_CTL"));
  assert_int_equal(system(cmd), 0);
  int st;
  assert_int_equal(waitpid(a, &st, 0), a);
  snprintf(cmd, sizeof cmd, "%s start >/dev/null 2>&1", getenv("TEMPER_TEST_PG_CTL"));
  assert_int_equal(system(cmd), 0);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  int before = records_of(w);
  assert_true(before < TRIALS);
  expect(sh("%s db import '%s' %s/temper-unwritten-%d.jsonl", T, url, dir, (int)a), 0, "imported");
  census c = take_census(w);
  assert_int_equal(c.records[0], TRIALS);   /* nothing lost */
  assert_int_equal(c.dups, 0);
}

/* records move between the backends byte-stable, and both build the same
 * library */
static void test_build_equals_sqlite_copy(void **state) {
  (void)state;
  const char *w = fresh("team_build");
  char url[1024];
  snprintf(url, sizeof url, "%s", w);
  expect(sh("cd %s && %s tune " MODEL " --db '%s' --trials 6 --top-k 1 --min-repeat-ms 1", TEMPER_SOURCE_DIR, T, url), 0, NULL);
  expect(sh("%s db export '%s' -o %s/pg.jsonl", T, url, dir), 0, "exported");
  expect(sh("%s db import %s/copy.db %s/pg.jsonl", T, dir, dir), 0, "0 duplicates");
  expect(sh("%s db export %s/copy.db -o %s/copy.jsonl && cmp %s/pg.jsonl %s/copy.jsonl && echo same", T, dir, dir, dir, dir), 0, "same");
  expect(sh("cd %s && %s build " MODEL " --db '%s' -o %s/pg.so && %s build " MODEL " --db %s/copy.db -o %s/copy.so && cmp %s/pg.so %s/copy.so"
            " && echo same",
            TEMPER_SOURCE_DIR, T, url, dir, T, dir, dir, dir, dir),
         0, "same");
  /* every command that takes --db takes the URL */
  expect(sh("cd %s && %s run " MODEL " --db '%s' --check 2>&1", TEMPER_SOURCE_DIR, T, url), 0, "check");
  expect(sh("cd %s && %s refine " MODEL " --db '%s' --pairs 3 2>&1", TEMPER_SOURCE_DIR, T, url), 0, NULL);
  expect(sh("%s db targets '%s'", T, url), 0, "records");
  /* merge from the file into the server: every record is there already */
  expect(sh("%s db merge '%s' %s/copy.db", T, url, dir), 0, "0 imported");
  expect(sh("%s db show '%s'", T, url), 0, "conv2d");
}

/* a server that is not there: exit 1 at once, the URL named, its password not */
static void test_unreachable_server(void **state) {
  (void)state;
  const char *url = "postgresql://temper:hunter2@/temper?host=/nonexistent/socket/dir";
  expect(sh("cd %s && %s tune " MODEL " --db '%s' --trials 1 2>&1", TEMPER_SOURCE_DIR, T, url), 1,
         "postgresql://temper:***@/temper?host=/nonexistent/socket/dir: cannot connect to the PostgreSQL server");
  expect(sh("cd %s && %s tune " MODEL " --db '%s' --trials 1 2>&1 | grep -c hunter2", TEMPER_SOURCE_DIR, T, url), 1, "0");
  expect(sh("%s db show '%s' 2>&1", T, url), 1, "cannot connect");
  expect(sh("cd %s && %s build " MODEL " --db '%s' -o %s/x.so 2>&1", TEMPER_SOURCE_DIR, T, url, dir), 1, "cannot connect");
}

/* docs/team.md's recipe as written: the roles and grants of docs/team/,
 * a tuner that writes, a build that only reads, a build role that cannot
 * tune */
static void test_docs_recipe(void **state) {
  (void)state;
  const char *host = getenv("PGHOST");
  expect(sh("psql -q -v ON_ERROR_STOP=1 -f %s/docs/team/roles.sql 2>&1", TEMPER_SOURCE_DIR), 0, NULL);
  char admin[512], tuner_url[512], build[512];
  snprintf(admin, sizeof admin, "postgresql://temper_admin@/temper?host=%s", host);
  snprintf(tuner_url, sizeof tuner_url, "postgresql://temper_tuner@/temper?host=%s", host);
  snprintf(build, sizeof build, "postgresql://temper_build@/temper?host=%s", host);
  expect(sh("%s db show '%s' 2>&1", T, admin), 0, "workload");   /* creates the schema */
  expect(sh("psql -q -v ON_ERROR_STOP=1 '%s' -f %s/docs/team/grants.sql 2>&1", admin, TEMPER_SOURCE_DIR), 0, NULL);
  result r = sh("cd %s && %s tune " MODEL " --db '%s' --trials 2 --top-k 1 --min-repeat-ms 1 2>&1", TEMPER_SOURCE_DIR, T, tuner_url);
  int ok = r.code == 0 && strstr(r.out, "estimated conv2d time") && !strstr(r.out, "refining");   /* a shared database: no refine */
  if (!ok) fprintf(stderr, "%s", r.out);
  free(r.out);
  assert_true(ok);
  /* --refine: the tuner refines there too; the URL it names keeps its password hidden */
  char secret_url[512];
  snprintf(secret_url, sizeof secret_url, "postgresql://temper_tuner:hunter2@/temper?host=%s", host);
  r = sh("cd %s && %s tune " MODEL " --db '%s' --trials 1 --top-k 0 --min-repeat-ms 1 --refine 2>&1", TEMPER_SOURCE_DIR, T, secret_url);
  ok = r.code == 0 && strstr(r.out, "postgresql://temper_tuner:***@/temper") && strstr(r.out, "for this model at 1 thread") &&
       !strstr(r.out, "hunter2");
  if (!ok) fprintf(stderr, "%s", r.out);
  free(r.out);
  assert_true(ok);
  /* a refine that cannot store its choices fails the run, the records kept */
  expect(sh("psql -q -v ON_ERROR_STOP=1 '%s' -c 'REVOKE DELETE ON choices FROM temper_tuner' 2>&1", admin), 0, NULL);
  r = sh("cd %s && %s tune " MODEL " --db '%s' --trials 1 --top-k 0 --min-repeat-ms 1 --refine 2>&1", TEMPER_SOURCE_DIR, T, secret_url);
  ok = r.code == 1 && strstr(r.out, "permission denied") &&
       strstr(r.out, "temper tune: the records are in postgresql://temper_tuner:***@/temper") &&
       strstr(r.out, "the refine after them failed (run temper refine again)") && !strstr(r.out, "hunter2");
  if (!ok) fprintf(stderr, "%s", r.out);
  free(r.out);
  assert_true(ok);
  expect(sh("psql -q -v ON_ERROR_STOP=1 '%s' -c 'GRANT DELETE ON choices TO temper_tuner' 2>&1", admin), 0, NULL);
  expect(sh("cd %s && %s build " MODEL " --db '%s' -o %s/r.so 2>&1", TEMPER_SOURCE_DIR, T, build, dir), 0, "record (");
  expect(sh("cd %s && %s tune " MODEL " --db '%s' --trials 1 2>&1", TEMPER_SOURCE_DIR, T, build), 1, "permission denied");
}

/* Ctrl-C in the CLI: the tuner stops after its batch, exits 130, and
 * leaves no live lease behind */
static void test_ctrl_c(void **state) {
  (void)state;
  const char *w = fresh("team_ctrl_c");
  char url[1024];
  snprintf(url, sizeof url, "%s", w);
  expect(sh("cd %s && (%s tune " MODEL " --db '%s' --trials 200 --min-repeat-ms 1 --report %s/c.html > %s/c.log 2>&1 & pid=$!; "
            "for i in $(seq 100); do sleep 0.1; grep -q 'trials' %s/c.log && break; done; kill -INT $pid; wait $pid; echo exit $?; "
            "cat %s/c.log)",
            TEMPER_SOURCE_DIR, T, url, dir, dir, dir, dir),
         0, "exit 130");
  expect(sh("xmllint --noout %s/c.html && echo 'the page of the interrupted run'", dir), 0, "the page");   /* written on Ctrl-C too */
  expect(sh("grep -c 'interrupted; every measurement made is in' %s/c.log", dir), 0, "1");
  expect(sh("%s db show '%s' | grep -c 'leased task'", T, url), 1, "0");
}

int main(void) {
  const struct CMUnitTest both[] = {
      cmocka_unit_test(test_three_tuners), cmocka_unit_test(test_scheduled_tuners), cmocka_unit_test(test_killed_tuner_taken_over),
      cmocka_unit_test(test_stop_releases_leases), cmocka_unit_test(test_ctrl_c),
  };
  const struct CMUnitTest pg_only[] = {
      cmocka_unit_test(test_server_restart_mid_run), cmocka_unit_test(test_server_never_returns),
      cmocka_unit_test(test_build_equals_sqlite_copy), cmocka_unit_test(test_unreachable_server),
      cmocka_unit_test(test_docs_recipe),
  };
  int rc = cmocka_run_group_tests_name("sqlite", both, setup_sqlite, teardown);
  if (!getenv("TEMPER_TEST_PG")) {
    fprintf(stderr, "test_team: TEMPER_TEST_PG is not set: run under tests/pg/with_pg.sh\n");
    return 1;
  }
  rc |= cmocka_run_group_tests_name("postgresql", both, setup_pg, teardown);
  rc |= cmocka_run_group_tests_name("postgresql only", pg_only, setup_pg, teardown);
  return rc;
}
