/* test_api.c: the public API (api/temper.c) — the embedding example runs
 * end to end (tune, build, compile with the database's schedules, run,
 * check); errors come back as a status and a message, never a crash. */
#include "helpers.h"
#include "temper/temper.h"

static void test_example_end_to_end(void **state) {
  (void)state;
  char dir[256];
  scratch_make(dir, sizeof dir, "temper_api");
  expect(sh("%s tests/data/tiny_classifier.relay %s/t.db %s/m.so %s 3", TEMPER_EMBED, dir, dir, TEMPER_BINARY), 0, "check: relative error");
  expect(sh("ls %s/m.so %s/m.h && sqlite3 %s/t.db 'SELECT count(*) > 0 FROM records'", dir, dir, dir), 0, "1");
  /* the library built through the API runs like one built by the CLI */
  expect(sh("%s run %s/m.so --repeat 1", TEMPER_BINARY, dir), 0, "checksum");
  scratch_remove(dir);
}

static void test_errors(void **state) {
  (void)state;
  char *err = NULL;
  temper_program *p = NULL;
  assert_int_equal(temper_program_create("/nonexistent/m.relay", NULL, NULL, &p, &err), TEMPER_EIO);
  assert_null(p);
  assert_non_null(err);
  assert_non_null(strstr(err, "/nonexistent/m.relay"));
  free(err);
  /* a check needs the reference, computed only when asked for */
  assert_int_equal(temper_program_create(TEMPER_SOURCE_DIR "/examples/seed.relay", NULL, NULL, &p, &err), TEMPER_OK);
  assert_int_equal(temper_program_run(p), TEMPER_OK);
  assert_int_equal(temper_program_num_outputs(p), 1);
  int64_t n = 0;
  int ndim = 0;
  const int64_t *shape = NULL;
  assert_non_null(temper_program_output(p, 0, &n, &ndim, &shape));
  assert_int_equal(ndim, 4);
  assert_int_equal(n, shape[0] * shape[1] * shape[2] * shape[3]);
  assert_null(temper_program_output(p, 1, &n, NULL, NULL));
  double rel, tol;
  assert_int_equal(temper_program_check(p, &rel, &tol, &err), TEMPER_EINVAL);
  assert_non_null(strstr(err, "without check"));
  free(err);
  temper_program_destroy(p);
  temper_program_destroy(NULL);
  /* a database that is not there, for a build */
  temper_build_options bo = {0};
  assert_int_not_equal(temper_build(TEMPER_SOURCE_DIR "/examples/seed.relay", NULL, "/nonexistent/t.db", "/tmp/x.so", &bo, &err), TEMPER_OK);
  assert_non_null(strstr(err, "no such database"));
  free(err);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_errors), cmocka_unit_test(test_example_end_to_end)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
