/* test_log.c: tuner/log.c, sharing tuning logs: export → import → export is the
 * identity; merge keeps every record once; best-only logs rebuild the same
 * library; every kind of bad line is reported by number and nothing is
 * imported unless --skip-bad; graded target matching. */
#include <sys/wait.h>
#include <unistd.h>
#include "helpers.h"
#include "log.h"
#include "tune.h"

static char dir[256];

#define MODEL "tests/data/tiny_classifier.relay"
#define T TEMPER_BINARY


/* a database tuned with the fake runner: ok records and some timeouts (one
 * index in seven by a hash, so any shape of the space yields some) */
static measure_result fake(void *ctx, const tune_task *t, const sched_config *cfg, int64_t index) {
  (void)ctx;
  measure_result m = {.status = (index * 2654435761u) % 7 == 3 ? DB_TIMEOUT : DB_OK, .rounds = 3};
  if (m.status != DB_OK) { strcpy(m.error, "too slow"); m.rounds = 0; }
  for (int i = 0; i < 3; i++) m.times[i] = 1e-3 * (1 + (double)((index * 2654435761u) % 1000) / 1000) * (1 + 0.01 * i);
  (void)t, (void)cfg;
  return m;
}

static void fake_db(const char *name, uint64_t seed, int trials) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  temper_db *db = NULL;
  char err[4096];
  assert_int_equal(temper_db_open(path, tune_db_versions(), &db, err, sizeof err), TEMPER_OK);
  tune_task t;
  memset(&t, 0, sizeof t);
  t.w = (conv_workload){1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  workload_key(&t.w, t.key, sizeof t.key);
  space_build(&t.w, host_vec(), &t.space);
  t.count = 1;
  t.flops = workload_flops(&t.w);
  tune_opts o = {.trials = trials, .search = SEARCH_RANDOM, .seed = seed, .m = {.threads = 1, .repeat = 3}, .measure = fake, .top_k = 2};
  tune_task_result r;
  diag d = {0};
  assert_int_equal(tune_run(db, &t, 1, &o, "fake", &r, &d), TEMPER_OK);
  temper_db_close(db);
}

static int setup(void **state) {
  (void)state;
  scratch_make(dir, sizeof dir, "temper_logs");
  return 0;
}
static int teardown(void **state) {
  (void)state;
  scratch_remove(dir);
  return 0;
}

static void test_round_trip_is_byte_identical(void **state) {
  (void)state;
  fake_db("a.db", 1, 30);
  expect(sh("%s db export %s/a.db -o %s/a.jsonl", T, dir, dir), 0, "exported 32 records");
  expect(sh("grep -c '\"status\":\"timeout\"' %s/a.jsonl", dir), 0, NULL);
  expect(sh("%s db import %s/empty.db %s/a.jsonl", T, dir, dir), 0, "32 imported, 0 duplicates skipped");
  expect(sh("%s db export %s/empty.db -o %s/b.jsonl", T, dir, dir), 0, NULL);
  expect(sh("cmp %s/a.jsonl %s/b.jsonl && echo same", dir, dir), 0, "same");
  expect(sh("%s db import %s/empty.db %s/a.jsonl", T, dir, dir), 0, "0 imported, 32 duplicates skipped");
}

static void test_merge_keeps_every_record_once(void **state) {
  (void)state;
  fake_db("m1.db", 11, 25);
  fake_db("m2.db", 22, 25);
  expect(sh("%s db merge %s/m.db %s/m1.db %s/m2.db", T, dir, dir, dir), 0, "m2.db: 27 imported, 0 duplicates");
  expect(sh("sqlite3 %s/m.db 'SELECT count(*) FROM records'", dir), 0, "54");
  expect(sh("%s db merge %s/m.db %s/m1.db %s/m2.db", T, dir, dir, dir), 0, "m1.db: 0 imported, 27 duplicates skipped");
  expect(sh("sqlite3 %s/m.db 'SELECT count(*) FROM records'", dir), 0, "54");
  expect(sh("%s db targets %s/m.db", T, dir), 0, "54");
}

static void write_lines(const char *name, const char *const *lines, int n) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  for (int i = 0; i < n; i++) fprintf(f, "%s\n", lines[i]);
  fclose(f);
}

static void test_bad_lines(void **state) {
  (void)state;
  fake_db("g.db", 3, 6);
  expect(sh("%s db export %s/g.db -o %s/g.jsonl", T, dir, dir), 0, NULL);
  result r = sh("grep -m1 conv2d_nchwc %s/g.jsonl", dir);   /* a direct-template record: the edits below need its knobs */
  char good[8192];
  str_copy(good, sizeof good, r.out);
  good[strcspn(good, "\n")] = 0;
  free(r.out);
  /* variants of the good line, each broken in one way */
  char broken[7][8192];
  snprintf(broken[0], 8192, "%.*s", (int)strlen(good) - 5, good);   /* truncated JSON */
  char *p;
  str_copy(broken[1], 8192, good);
  p = strstr(broken[1], "\"threads\":1,");
  memmove(p, p + 12, strlen(p + 12) + 1);                            /* a missing field */
  p = strstr(good, "\"threads\":1,");                                /* a wrong type: "threads":"one" */
  snprintf(broken[2], 8192, "%.*s\"threads\":\"one\",%s", (int)(p - good), good, p + 12);
  str_copy(broken[3], 8192, good);
  p = strstr(broken[3], "\"version\":1");
  p[10] = '7';                                                       /* an unknown format version */
  str_copy(broken[4], 8192, good);
  p = strstr(broken[4], "\"oc_bn\":");
  memcpy(p, "\"oc_bn\":7", 9);                                       /* a config not in the space (7x) */
  str_copy(broken[5], 8192, good);
  p = strstr(broken[5], "\"template\":\"conv2d_nchwc\"");
  memcpy(p + 12, "conv2d_xxxxx", 12);                               /* an unknown template */
  p = strstr(good, "\"padding\":[") + 11;                            /* padding of 2^40: overflowed the output size */
  snprintf(broken[6], 8192, "%.*s1099511627776%s", (int)(p - good), good, p + strcspn(p, ","));
  const char *lines[9] = {good, broken[0], broken[1], broken[2], broken[3], broken[4], broken[5], broken[6], ""};
  write_lines("bad.jsonl", lines, 9);
  r = sh("%s db import %s/fresh.db %s/bad.jsonl", T, dir, dir);
  assert_int_equal(r.code, 1);
  assert_non_null(strstr(r.out, "7 bad lines, nothing imported"));
  assert_non_null(strstr(r.out, "bad.jsonl:8: workload.description: padding must be between 0 and 4096"));
  assert_non_null(strstr(r.out, "bad.jsonl:2: column"));
  assert_non_null(strstr(r.out, "bad.jsonl:3: field threads: missing"));
  assert_non_null(strstr(r.out, "bad.jsonl:4: field threads: expected an integer"));
  assert_non_null(strstr(r.out, "bad.jsonl:5: unknown format version 7"));
  assert_non_null(strstr(r.out, "bad.jsonl:6: config not in the space: knob oc_bn: 7"));
  assert_non_null(strstr(r.out, "bad.jsonl:7: unknown template \"conv2d_xxxxx\""));
  free(r.out);
  expect(sh("sqlite3 %s/fresh.db 'SELECT count(*) FROM records'", dir), 0, "0");
  expect(sh("%s db import %s/fresh.db %s/bad.jsonl --skip-bad", T, dir, dir), 0, "1 imported, 0 duplicates skipped, 7 bad lines skipped");
  expect(sh("sqlite3 %s/fresh.db 'SELECT count(*) FROM records'", dir), 0, "1");
}

static void test_best_only_rebuilds_and_graded_matching(void **state) {
  (void)state;
  expect(sh("%s tune " MODEL " --db %s/real.db --trials 6 --top-k 1 --min-repeat-ms 1 --no-refine", T, dir), 0, NULL);
  expect(sh("%s db export %s/real.db --best-only -o %s/best.jsonl", T, dir, dir), 0, "exported");
  expect(sh("%s db import %s/best.db %s/best.jsonl", T, dir, dir), 0, "imported, 0 duplicates");
  expect(sh("%s build " MODEL " --db %s/real.db -o %s/x.so | grep '^conv2d.*  record (' | sed 's/:.*ms//' > %s/r1 && "
            "%s build " MODEL " --db %s/best.db -o %s/y.so | grep '^conv2d.*  record (' | sed 's/:.*ms//' > %s/r2 && cmp %s/r1 %s/r2 && wc -l < %s/r1",
            T, dir, dir, dir, T, dir, dir, dir, dir, dir, dir), 0, "2");
  /* the same records under another CPU name with the same features */
  expect(sh("sed 's/\"cpu\":\"[^\"]*\"/\"cpu\":\"otherchip\"/' %s/best.jsonl > %s/other.jsonl && %s db import %s/other.db %s/other.jsonl",
            dir, dir, T, dir, dir), 0, "imported, 0 duplicates");
  expect(sh("%s build " MODEL " --db %s/other.db -o %s/o.so", T, dir, dir), 0, "record (same features, other CPU)");
  expect(sh("%s build " MODEL " --db %s/other.db -o %s/o.so --match exact", T, dir, dir), 0, "fallback: 2 of 2");
  /* AVX-512 records are not used for an AVX2 machine, whose library has no 512-bit instructions */
  expect(sh("%s build " MODEL " --db %s/real.db -o %s/h.so --target haswell", T, dir, dir), 0, "fallback: 2 of 2");
  expect(sh("objdump -d %s/h.so | grep -c zmm", dir), 1, "0");
  expect(sh("%s run %s/h.so --repeat 1", T, dir), 0, "checksum");
  /* and records tuned on an AVX2 machine (8-float vectors) are usable on this AVX-512 one */
  char path[512], err[4096];
  snprintf(path, sizeof path, "%s/avx2.db", dir);
  temper_db *db = NULL;
  assert_int_equal(temper_db_open(path, tune_db_versions(), &db, err, sizeof err), TEMPER_OK);
  char *text = read_text(MODEL);
  temper_graph *g = parse_ok(text);
  free(text);
  float *vals[9] = {0};
  for (int i = 1; i < g->main->n_params; i++) {
    node *pp = g->main->params[i];
    vals[i] = malloc(sizeof(float) * (size_t)shape_numel(&pp->ty.shape));
    data_random_param(vals[i], &pp->ty.shape, 1, 0, 1);
  }
  diag d = {0};
  assert_int_equal(bind_params(g, vals, &d), TEMPER_OK);
  tune_task *tasks = NULL;
  int nt = 0;
  assert_int_equal(tasks_extract(g, 8, &tasks, &nt, &d), TEMPER_OK);
  db_target haswell = {"x86_64-pc-linux-gnu", "haswell", "+avx,+avx2,+fma", "19", 4};
  tune_opts o = {.trials = 40, .search = SEARCH_RANDOM, .seed = 9, .m = {.threads = 1, .repeat = 3}, .measure = fake, .target = &haswell};
  tune_task_result res[4];
  assert_int_equal(tune_run(db, tasks, nt, &o, "avx2", res, &d), TEMPER_OK);
  temper_db_close(db);
  free(tasks);
  for (int i = 1; i < 9; i++) free(vals[i]);
  temper_graph_destroy(g);
  expect(sh("%s build " MODEL " --db %s/avx2.db -o %s/a.so", T, dir, dir), 0, "record (compatible subset of features)");
  expect(sh("%s build " MODEL " --db %s/avx2.db -o %s/a.so --match exact", T, dir, dir), 0, "fallback: 2 of 2");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip_is_byte_identical), cmocka_unit_test(test_merge_keeps_every_record_once),
      cmocka_unit_test(test_bad_lines), cmocka_unit_test(test_best_only_rebuilds_and_graded_matching),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
