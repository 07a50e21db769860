/* test_build.c: tune → build → run a library; records are used; fallbacks,
 * --strict, bad databases and targets; only libc, libm and pthreads needed;
 * the C example; weights beside the library; the C API's size check. */
#include <dlfcn.h>
#include <math.h>
#include <sys/wait.h>
#include <unistd.h>
#include "helpers.h"

static char dir[256];

#define MODEL "tests/data/tiny_classifier.relay"
#define T TEMPER_BINARY


static int setup(void **state) {
  (void)state;
  scratch_make(dir, sizeof dir, "temper_build");
  return 0;
}
static int teardown(void **state) {
  (void)state;
  scratch_remove(dir);
  return 0;
}

static void npy_equal(const char *a, const char *b, double tol) {
  shape_t sa, sb;
  float *x = NULL, *y = NULL;
  char err[512];
  assert_int_equal(npy_read(a, &sa, &x, err, sizeof err), TEMPER_OK);
  assert_int_equal(npy_read(b, &sb, &y, err, sizeof err), TEMPER_OK);
  assert_true(shape_eq(&sa, &sb));
  for (int64_t i = 0; i < shape_numel(&sa); i++) assert_true(fabsf(x[i] - y[i]) <= tol);
  free(x);
  free(y);
}

static void test_tune_build_run(void **state) {
  (void)state;
  expect(sh("%s tune " MODEL " --db %s/t.db --trials 4 --top-k 1 --min-repeat-ms 1 --no-refine", T, dir), 0, "estimated conv2d time");
  expect(sh("%s build " MODEL " --db %s/t.db -o %s/m.so", T, dir, dir), 0, "record (exact target)");
  expect(sh("%s run %s/m.so --repeat 3 --save-output %s/lib", T, dir, dir), 0, "checksum");
  expect(sh("%s run " MODEL " --repeat 1 --check --save-output %s/mem", T, dir), 0, "(ok: within");
  char a[512], b[512];
  snprintf(a, sizeof a, "%s/lib/output_0.npy", dir);
  snprintf(b, sizeof b, "%s/mem/output_0.npy", dir);
  npy_equal(a, b, 1e-6f);
  /* a tune of the whole model into a local database ends with refine; --no-refine and --task skip it */
  expect(sh("%s tune " MODEL " --db %s/t.db --trials 1 --top-k 0 --min-repeat-ms 1", T, dir), 0,
         "(temper refine; --no-refine skips this)");
  expect(sh("%s tune " MODEL " --db %s/t.db --trials 1 --top-k 0 --min-repeat-ms 1", T, dir), 0, "for this model at 1 thread");
  result r = sh("%s tune " MODEL " --db %s/t.db --trials 1 --top-k 0 --min-repeat-ms 1 --no-refine", T, dir);
  int quiet = r.code == 0 && !strstr(r.out, "refin");
  free(r.out);
  r = sh("%s tune " MODEL " --db %s/t.db --trials 1 --top-k 0 --min-repeat-ms 1 --task c16_h8", T, dir);
  quiet = quiet && r.code == 0 && !strstr(r.out, "refin");
  free(r.out);
  assert_true(quiet);
}

/* insert an ok record of the workload whose key contains `like` with this config and time */
static void insert_record_of(const char *db, const char *like, const char *cfg, double median_s) {
  char sqlpath[512];
  snprintf(sqlpath, sizeof sqlpath, "%s/insert.sql", dir);
  FILE *f = fopen(sqlpath, "w");
  fprintf(f, "INSERT INTO records(workload_id, target_id, template, template_version, config, config_index, threads,"
             " status, median_s, min_s, max_s, rounds, gflops, measured_at, host, temper_version)"
             " SELECT r.workload_id, r.target_id, r.template, r.template_version, '%s', 0, 1, 'ok', %g, %g, %g, 3, 1, strftime('%%Y-%%m-%%dT%%H:%%M:%%fZ', 'now'), 'test', '0'"
             " FROM records r JOIN workloads w ON w.id = r.workload_id WHERE w.key LIKE '%%%s%%' LIMIT 1;\n",
          cfg, median_s, median_s, median_s, like);
  fclose(f);
  expect(sh("sqlite3 %s < %s", db, sqlpath), 0, NULL);
}
static void insert_record(const char *db, const char *cfg, double median_s) { insert_record_of(db, "c16_h8", cfg, median_s); }

/* a record whose config is not the default is what the build uses: in the
 * report and in the loop IR (par=1 parallelises over (n, oc-block) only) */
static void test_hand_inserted_record_is_used(void **state) {
  (void)state;
  expect(sh("%s tune " MODEL " --db %s/h.db --trials 1 --top-k 0 --min-repeat-ms 1 --task c16_h8", T, dir), 0, NULL);
  /* the channel blocks of the defaults, so no layout transform weighs against it */
  char db[512];
  snprintf(db, sizeof db, "%s/h.db", dir);
  insert_record(db, "{\"template\":\"conv2d_nchwc\",\"ic_bn\":16,\"oc_bn\":16,\"ow_bn\":2,\"oh_bn\":1,\"unroll_kw\":false,\"order\":1,\"par\":1}", 1e-9);
  expect(sh("%s build " MODEL " --db %s/h.db -o %s/h.so", T, dir, dir), 0, "\"ic_bn\":16,\"oc_bn\":16,\"ow_bn\":2");
  expect(sh("%s build " MODEL " --db %s/h.db -o %s/h.loops --emit loops", T, dir, dir), 0, "wrote");
  expect(sh("grep -c 'parallel for n_kb in' %s/h.loops", dir), 0, "1");
  /* temper run --db chooses as the build does, and says so */
  expect(sh("%s run " MODEL " --db %s/h.db --repeat 1 --check", T, dir), 0, "\"ic_bn\":16,\"oc_bn\":16,\"ow_bn\":2");
  expect(sh("%s run " MODEL " --db %s/nope.db --repeat 1", T, dir), 1, "no such database");
  expect(sh("%s run " MODEL " --db %s/h.db --config-file x.json", T, dir), 2, "give one");
  expect(sh("%s run %s/h.so --db %s/h.db", T, dir, dir), 2, "need the model's source");
}

/* a run that takes over a stopped tuner's task whose trials are already
 * spent measures nothing new: the default it never measured is a dash in
 * the summary, not "0.0 GF/s" and "0.00x" */
static void test_tune_takeover_summary(void **state) {
  (void)state;
  char db[512];
  snprintf(db, sizeof db, "%s/k.db", dir);
  expect(sh("%s tune " MODEL " --db %s --trials 2 --top-k 0 --min-repeat-ms 1 --task c16_h8", T, db), 0, NULL);
  /* the default (measured first) gone, the lease left as a tuner that died holds it */
  expect(sh("sqlite3 %s \"DELETE FROM records WHERE id = (SELECT min(id) FROM records);"
            " UPDATE leases SET owner = 'gone', done_at = NULL, expires = 0;\"", db), 0, NULL);
  result r = sh("%s tune " MODEL " --db %s --trials 1 --top-k 0 --min-repeat-ms 1 --task c16_h8", T, db);
  int dash = strstr(r.out, "taking over") && strstr(r.out, "     -      ") && !strstr(r.out, " 0.0 GF/s") && !strstr(r.out, "0.00x");
  if (!dash) fprintf(stderr, "%s", r.out);
  free(r.out);
  assert_int_equal(r.code, 0);
  assert_true(dash);
}

/* temper refine: the alternatives of a workload are compiled and timed in
 * the whole model; what it keeps is stored for the model and used by
 * build and run --db while the records' pick it replaced still stands.
 * --min-gain -1000 keeps every alternative, so the test does not depend on
 * which program this machine happens to run faster. */
static void test_refine_choices(void **state) {
  (void)state;
  char db[512];
  snprintf(db, sizeof db, "%s/r.db", dir);
  expect(sh("%s tune " MODEL " --db %s --trials 1 --top-k 0 --min-repeat-ms 1 --task c16_h8", T, db), 0, NULL);
  const char *a = "{\"template\":\"conv2d_nchwc\",\"ic_bn\":16,\"oc_bn\":16,\"ow_bn\":2,\"oh_bn\":1,\"unroll_kw\":false,\"order\":1,\"par\":1}";
  /* b's class (channel blocks 4 and 32) is neither a's nor the default's with
   * 16-float vectors (8, 32) or with 8-float ones (8, 16) */
  const char *b = "{\"template\":\"conv2d_nchwc\",\"ic_bn\":4,\"oc_bn\":32,\"ow_bn\":2,\"oh_bn\":1,\"unroll_kw\":true,\"order\":0,\"par\":0}";
  insert_record(db, a, 1e-9);
  insert_record(db, b, 1.2e-9);   /* within REFINE_SLOWER of the fastest, another class (input blocks) */
  /* the alternatives: the default config (without a record: the tuner's first is deleted) and b */
  expect(sh("sqlite3 %s 'DELETE FROM records WHERE id = (SELECT min(id) FROM records)'", db), 0, NULL);
  expect(sh("%s refine " MODEL " --db %s --pairs 2 --min-gain -1000", T, db), 0, "kept");
  /* the screen passes them on (any gain is enough at -1000 %); --exhaustive compares them without one */
  expect(sh("%s refine " MODEL " --db %s --pairs 2 --min-gain -1000", T, db), 0,
         "screened 2 alternatives in 2 programs: 2 go on to the whole-model comparison");
  expect(sh("%s refine " MODEL " --db %s --pairs 2 --min-gain -1000 --exhaustive", T, db), 0,
         "compared 2 alternatives in the whole model; skipped 0 whose workload's share of the model bounds the gain under --min-gain "
         "and 0 whose own steps");
  /* at 60 %: the workload's share (all of the model's conv2d) may hold such a gain, so it is screened; its
   * steps gain nowhere near 30 % of the model, so it is not compared */
  expect(sh("%s refine " MODEL " --db %s/r2.db --pairs 2 --min-gain 60", T, dir), 1, "no such database");
  expect(sh("cp %s %s/r2.db && %s refine " MODEL " --db %s/r2.db --pairs 4 --min-gain 60", db, dir, T, dir), 0,
         "screened out (a gain under");
  /* nothing kept: no comparison of the records' choice against itself */
  expect(sh("%s refine " MODEL " --db %s/r2.db --pairs 4 --min-gain 60", T, dir), 0,
         "0 of 2 workloads changed; no alternative beat the records' choice twice");
  /* exhaustive: in the alternatives' order, so b, compared last, is the choice kept */
  expect(sh("%s refine " MODEL " --db %s --pairs 2 --min-gain -1000 --exhaustive", T, db), 0, "1 choice for this model at 1 thread");
  expect(sh("sqlite3 %s 'SELECT count(*) FROM choices'", db), 0, "1");
  expect(sh("%s db show %s", T, db), 0, "refined model");
  expect(sh("%s build " MODEL " --db %s -o %s/r.so", T, db, dir), 0, "chosen in context by temper refine");
  expect(sh("%s build " MODEL " --db %s -o %s/r.so", T, db, dir), 0, "\"ic_bn\":4,\"oc_bn\":32,\"ow_bn\":2");
  expect(sh("%s run " MODEL " --db %s --repeat 1 --check", T, db), 0, "chosen in context by temper refine");
  /* only at the thread count refine measured */
  result r = sh("%s build " MODEL " --db %s -o %s/r.so --threads 2", T, db, dir);
  assert_int_equal(r.code, 0);
  assert_null(strstr(r.out, "chosen in context"));
  assert_non_null(strstr(r.out, "no choices of temper refine for this model at 2 threads"));
  free(r.out);
  /* the records change: a record measured since beats what refine replaced */
  insert_record(db, "{\"template\":\"conv2d_nchwc\",\"ic_bn\":16,\"oc_bn\":16,\"ow_bn\":1,\"oh_bn\":1,\"unroll_kw\":false,\"order\":0,\"par\":0}", 1e-10);
  expect(sh("%s build " MODEL " --db %s -o %s/r.so", T, db, dir), 0, "ignored 1 choice of temper refine: the records changed since");
  /* bad use */
  expect(sh("%s refine " MODEL, T), 2, "usage: temper refine");
  expect(sh("%s refine " MODEL " --db %s/none.db", T, dir), 1, "no such database");
  expect(sh("%s refine " MODEL " --db %s --alternatives 99", T, db), 2, "--alternatives 1..");
}

/* refine tries every workload at its default config at once (what an
 * untuned build runs), which one alternative at a time cannot reach; kept
 * (at -1000 %), the build then runs the defaults, chosen in context */
static void test_refine_tries_defaults(void **state) {
  (void)state;
  char db[512];
  snprintf(db, sizeof db, "%s/d.db", dir);
  expect(sh("%s tune " MODEL " --db %s --trials 1 --top-k 0 --min-repeat-ms 1 --no-refine", T, db), 0, NULL);
  insert_record_of(db, "c16_h8", "{\"template\":\"conv2d_nchwc\",\"ic_bn\":16,\"oc_bn\":16,\"ow_bn\":2,\"oh_bn\":1,\"unroll_kw\":false,\"order\":1,\"par\":1}", 1e-9);
  insert_record_of(db, "c3_h16", "{\"template\":\"conv2d_nchwc\",\"ic_bn\":1,\"oc_bn\":16,\"ow_bn\":2,\"oh_bn\":1,\"unroll_kw\":false,\"order\":1,\"par\":1}", 1e-9);
  result r = sh("%s refine " MODEL " --db %s --pairs 2 --min-gain -1000", T, db);
  int ok = r.code == 0 && strstr(r.out, "every workload at its default config") && strstr(r.out, "2 choices for this model at 1 thread");
  if (!ok) fprintf(stderr, "%s", r.out);
  free(r.out);
  assert_true(ok);
  r = sh("%s build " MODEL " --db %s -o %s/d.so", T, db, dir);
  const char *first = strstr(r.out, "chosen in context by temper refine");   /* both workloads */
  ok = r.code == 0 && first && strstr(first + 1, "chosen in context by temper refine");
  if (!ok) fprintf(stderr, "%s", r.out);
  free(r.out);
  assert_true(ok);
  /* the records' pick in the build is not what refine replaced (a producer's
   * choice moves its consumer's pick): the choice stands all the same */
  expect(sh("sqlite3 %s \"UPDATE choices SET replaces = 'another pick'\"", db), 0, NULL);
  expect(sh("%s build " MODEL " --db %s -o %s/d.so", T, db, dir), 0, "chosen in context by temper refine");
  /* a record measured since that is slower than what refine replaced: it stands */
  expect(sh("sqlite3 %s \"UPDATE choices SET replaces = (SELECT r.config FROM records r WHERE r.workload_id = choices.workload_id "
            "ORDER BY r.median_s LIMIT 1)\"", db), 0, NULL);
  insert_record_of(db, "c16_h8", "{\"template\":\"conv2d_nchwc\",\"ic_bn\":8,\"oc_bn\":16,\"ow_bn\":1,\"oh_bn\":1,\"unroll_kw\":false,\"order\":0,\"par\":0}", 1);
  r = sh("%s build " MODEL " --db %s -o %s/d.so", T, db, dir);
  first = strstr(r.out, "chosen in context by temper refine");
  ok = r.code == 0 && first && strstr(first + 1, "chosen in context by temper refine") && !strstr(r.out, "ignored");
  if (!ok) fprintf(stderr, "%s", r.out);
  free(r.out);
  assert_true(ok);
  /* one that beats it: the records changed, that choice is ignored */
  insert_record_of(db, "c16_h8", "{\"template\":\"conv2d_nchwc\",\"ic_bn\":8,\"oc_bn\":16,\"ow_bn\":2,\"oh_bn\":1,\"unroll_kw\":false,\"order\":0,\"par\":0}", 1e-12);
  expect(sh("%s build " MODEL " --db %s -o %s/d.so", T, db, dir), 0, "ignored 1 choice of temper refine: the records changed since");
  /* a choice with no record that is not today's default: a default of an
   * older temper, or at another producer block (refine chooses records and
   * the default), so today's runs */
  expect(sh("sqlite3 %s \"UPDATE choices SET config = '{\\\"template\\\":\\\"conv2d_nchwc\\\",\\\"ic_bn\\\":1,"
            "\\\"oc_bn\\\":16,\\\"ow_bn\\\":4,\\\"oh_bn\\\":1,\\\"unroll_kw\\\":false,\\\"order\\\":0,\\\"par\\\":0}' "
            "WHERE workload_id = (SELECT id FROM workloads WHERE key LIKE '%%c3_h16%%')\"", db), 0, NULL);
  r = sh("%s build " MODEL " --db %s -o %s/d.so", T, db, dir);
  ok = r.code == 0 && strstr(r.out, "chose the default config over the records' pick") &&
       strstr(r.out, "1 choice of temper refine took a default config that is not the default here now") &&
       !strstr(r.out, "\"ic_bn\":1,\"oc_bn\":16,\"ow_bn\":4,\"oh_bn\":1,\"unroll_kw\":false,\"order\":0,\"par\":0}");
  if (!ok) fprintf(stderr, "%s", r.out);
  free(r.out);
  assert_true(ok);
}

static void test_fallback_and_strict(void **state) {
  (void)state;
  expect(sh("%s build " MODEL " -o %s/f.so", T, dir), 0, "fallback: 2 of 2 workloads use the default config: 100.0% of the model's conv2d FLOPs");
  expect(sh("%s build " MODEL " -o %s/f.so --strict", T, dir), 1, "--strict: 2 workloads have no tuning record");
  expect(sh("%s build " MODEL " --db %s/nope.db -o %s/f.so", T, dir, dir), 1, "no such database");
  expect(sh("head -c 3000 /dev/urandom > %s/bad.db; %s build " MODEL " --db %s/bad.db -o %s/f.so", dir, T, dir, dir), 1, "not a database");
  expect(sh("%s build " MODEL " -o %s/f.so --target avx1024", T, dir), 1, "unknown target 'avx1024'");
  /* a build for another machine fits its defaults to that CPU's caches, or to --caches */
  expect(sh("%s build " MODEL " -o %s/f.so --target haswell", T, dir), 0, "32 KB L1d and 256 KB L2 per core (its CPU's)");
  expect(sh("%s build " MODEL " -o %s/f.so --caches 48K,2M", T, dir), 0, "48 KB L1d and 2048 KB L2 per core (--caches)");
  expect(sh("%s build " MODEL " -o %s/f.so --caches 48K", T, dir), 2, "--caches '48K': expected the L1 data cache and the L2 per core");
  expect(sh("%s build " MODEL " -o %s/f.so --caches 1K,2M", T, dir), 2, "--caches '1K,2M'");
  expect(sh("%s build " MODEL " -o %s/f.so --caches 48K,2Mx", T, dir), 2, "--caches '48K,2Mx'");
  expect(sh("%s build " MODEL " -o /nonexistent/dir/f.so", T), 1, "/nonexistent/dir/f.so: cannot resolve the output directory");
}

static void test_library_needs_only_libc(void **state) {
  (void)state;
  expect(sh("%s build " MODEL " -o %s/l.so", T, dir), 0, NULL);
  result r = sh("ldd %s/l.so | grep '=>' | grep -v -E 'libc\\.so|libm\\.so|libpthread\\.so' | wc -l", dir);
  expect(r, 0, "0");
  expect(sh("ldd %s/l.so | grep -c libc.so", dir), 0, "1");
}

static void test_c_example(void **state) {
  (void)state;
  expect(sh("%s build " MODEL " -o %s/model.so", T, dir), 0, NULL);
  expect(sh("cc -O2 -Wall -Wextra -Werror -I%s examples/c_app/main.c %s/model.so -Wl,-rpath,%s -o %s/classify", dir, dir, dir, dir), 0, NULL);
  /* the same input as `temper run` (seed 1): the same top class */
  expect(sh("%s run " MODEL " --repeat 1 --save-output %s/ref", T, dir), 0, NULL);
  shape_t s = {4, {1, 3, 16, 16}};
  float x[768];
  data_random_param(x, &s, 1 ^ data_hash_name("data"), 1, 0);
  char path[512], err[256];
  snprintf(path, sizeof path, "%s/in.npy", dir);
  assert_int_equal(npy_write(path, &s, x, err, sizeof err), TEMPER_OK);
  shape_t os;
  float *y = NULL;
  snprintf(path, sizeof path, "%s/ref/output_0.npy", dir);
  assert_int_equal(npy_read(path, &os, &y, err, sizeof err), TEMPER_OK);
  int best = 0;
  for (int i = 1; i < 10; i++)
    if (y[i] > y[best]) best = i;
  free(y);
  char want[64];
  snprintf(want, sizeof want, "top-5:\n  class %4d", best);
  expect(sh("%s/classify %s/in.npy", dir, dir), 0, want);
}

static void test_weights_beside_and_size_checks(void **state) {
  (void)state;
  expect(sh("%s build " MODEL " -o %s/p.so --embed-limit 0", T, dir), 0, "in a .params file beside it");
  expect(sh("test -s %s/p.params", dir), 0, NULL);
  result a = sh("%s run %s/p.so --repeat 1 | grep checksum", T, dir);
  result b = sh("%s run " MODEL " --repeat 1 | grep checksum", T);
  assert_string_equal(a.out, b.out);
  free(a.out);
  free(b.out);
  char so[512];
  snprintf(so, sizeof so, "%s/p.so", dir);
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  assert_non_null(h);
  void *(*create)(int) = (void *(*)(int))dlsym(h, "temper_model_create");
  int (*run)(void *, const float *const *, const size_t *, float *const *, const size_t *) =
      (int (*)(void *, const float *const *, const size_t *, float *const *, const size_t *))dlsym(h, "temper_model_run");
  const char *(*error)(const void *) = (const char *(*)(const void *))dlsym(h, "temper_model_error");
  void (*destroy)(void *) = (void (*)(void *))dlsym(h, "temper_model_destroy");
  void *m = create(2);
  assert_non_null(m);
  float x[768] = {0}, y[10];
  const float *in[1] = {x};
  float *out[1] = {y};
  size_t bad = 767, good = 768, ny = 10;
  assert_int_equal(run(m, in, &bad, out, &ny), -1);
  assert_non_null(strstr(error(m), "input 0 (data): expected 768 floats, got 767"));
  assert_int_equal(run(m, in, &good, out, &ny), 0);
  destroy(m);
  dlclose(h);
  /* without its weights the library says which file it missed */
  expect(sh("rm %s/p.params && %s run %s/p.so --repeat 1", dir, T, dir), 1, "p.params: cannot open the weights");
}

/* build --check runs the built library on the model's seeded data and
 * compares with the reference: it passes for a good library (and for a
 * tuned one, and an ONNX-free text model with several outputs), and fails
 * with exit 1 when the library computes something else — here, weights
 * beside the library replaced by zeros (TEMPER_MODEL_PARAMS) */
static void test_build_check(void **state) {
  (void)state;
  expect(sh("%s build " MODEL " -o %s/c.so --check", T, dir), 0, "check");
  expect(sh("%s build " MODEL " -o %s/c.so --check --threads 2", T, dir), 0, "(ok: within");
  expect(sh("%s build tests/data/difftest/winograd_ic_bn_23.relay -o %s/w.so --check", T, dir), 0, "(ok: within");
  expect(sh("%s build " MODEL " -o %s/p.so --embed-limit 0 --check", T, dir), 0, "(ok: within");
  expect(sh("head -c $(stat -c %%s %s/p.params) /dev/zero > %s/zero.params", dir, dir), 0, NULL);
  expect(sh("TEMPER_MODEL_PARAMS=%s/zero.params %s build " MODEL " -o %s/q.so --embed-limit 0 --check", dir, T, dir), 1,
         "FAILED: over");
  /* a check needs a library for this machine */
  expect(sh("%s build " MODEL " -o %s/c.ll --emit llvm --check", T, dir), 2, "--check runs the library on this machine");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tune_build_run),         cmocka_unit_test(test_hand_inserted_record_is_used),
      cmocka_unit_test(test_tune_takeover_summary),
      cmocka_unit_test(test_refine_choices), cmocka_unit_test(test_refine_tries_defaults), cmocka_unit_test(test_fallback_and_strict),    cmocka_unit_test(test_library_needs_only_libc),
      cmocka_unit_test(test_c_example),              cmocka_unit_test(test_weights_beside_and_size_checks),
      cmocka_unit_test(test_build_check),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
