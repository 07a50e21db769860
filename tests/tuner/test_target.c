/* test_target.c: tuner/target.c — the host as records name it, --target
 * specs, vector widths from feature strings, graded matching. */
#include "helpers.h"
#include "target.h"

static void test_host(void **state) {
  (void)state;
  db_target t;
  target_host(&t);
  assert_true(strlen(t.triple) > 0 && strlen(t.cpu) > 0 && strlen(t.features) > 0);
  assert_true(atoi(t.llvm_version) >= 19);
  assert_null(strchr(t.llvm_version, '.'));   /* the major version only: records name targets by it */
  assert_true(t.cores >= 1);
  cg_target c;
  target_to_cg(&t, &c);
  cg_target h;
  diag d = {0};
  cg_host_target(&h, &d);
  assert_int_equal(c.vec, h.vec);
  assert_int_equal(target_match(&t, &h), TARGET_EXACT);
}

static void test_vector_widths(void **state) {
  (void)state;
  assert_int_equal(cg_vec_of_features("+sse4.2,+avx,+avx2,+fma,+avx512f,+avx512bw"), 16);
  assert_int_equal(cg_vec_of_features("+sse4.2,+avx,+avx2,+fma,-avx512f"), 8);
  assert_int_equal(cg_vec_of_features("+sse4.2,+avx"), 8);
  assert_int_equal(cg_vec_of_features("+sse4.2,-avx,-avx2"), 4);
  assert_int_equal(cg_vec_of_features("+avx512fp16"), 4);   /* a longer name is not +avx512f */
  assert_int_equal(cg_vec_of_features(""), 4);
}

static void test_specs(void **state) {
  (void)state;
  cg_target t;
  int64_t host_l1d, host_l2;
  cg_host_caches(&host_l1d, &host_l2);
  assert_int_equal(target_from_spec("znver4", &t), 0);
  assert_string_equal(t.cpu, "znver4");
  assert_int_equal(t.vec, 16);
  assert_int_equal(t.l1d, 32 << 10);   /* the CPU's own caches, whatever this machine has */
  assert_int_equal(t.l2, 1 << 20);
  assert_int_equal(target_from_spec("sapphirerapids", &t), 0);
  assert_int_equal(t.l1d, 48 << 10);
  assert_int_equal(t.l2, 2 << 20);
  assert_int_equal(target_from_spec("haswell", &t), 0);
  assert_int_equal(t.vec, 8);
  assert_int_equal(t.l2, 256 << 10);
  assert_int_equal(target_from_spec("mycpu:+sse4.2,+avx,+avx2,+fma", &t), 0);
  assert_string_equal(t.cpu, "mycpu");
  assert_string_equal(t.features, "+sse4.2,+avx,+avx2,+fma");
  assert_int_equal(t.vec, 8);
  assert_int_equal(t.l1d, host_l1d);   /* a CPU not in the table: this machine's caches */
  assert_int_equal(t.l2, host_l2);
  assert_int_equal(target_from_spec("x86-64-v3", &t), 0);   /* a generic one too */
  assert_int_equal(t.l2, host_l2);
  assert_int_equal(target_from_spec("znver5:+avx2,+fma", &t), 0);   /* its own features, its CPU's caches */
  assert_int_equal(t.l2, 1 << 20);
  assert_int_equal(t.l1d, 48 << 10);
  assert_int_equal(target_from_spec("nosuchcpu", &t), -1);
  int64_t l1d = 1, l2 = 1;
  assert_int_equal(target_cpu_caches("nosuchcpu", &l1d, &l2), 0);
  assert_int_equal(l1d, 1);   /* untouched */
}

static void test_graded_matching(void **state) {
  (void)state;
  cg_target t = {.triple = "x86_64-pc-linux-gnu", .cpu = "sapphirerapids", .features = "+avx,+avx2,+avx512f", .vec = 16};
  db_target same = {"x86_64-pc-linux-gnu", "sapphirerapids", "+avx,+avx2,+avx512f", "19", 2};
  db_target other_cpu = {"x86_64-pc-linux-gnu", "rocketlake", "+avx512f,+avx,+avx2", "19", 2};   /* order does not matter */
  db_target subset = {"x86_64-pc-linux-gnu", "haswell", "+avx,+avx2", "19", 2};
  db_target superset = {"x86_64-pc-linux-gnu", "znver5", "+avx,+avx2,+avx512f,+avx512vnni", "19", 2};
  db_target other_arch = {"aarch64-linux-gnu", "neoverse", "+avx", "19", 2};
  assert_int_equal(target_match(&same, &t), TARGET_EXACT);
  assert_int_equal(target_match(&other_cpu, &t), TARGET_FEATURES);
  assert_int_equal(target_match(&subset, &t), TARGET_SUBSET);
  assert_int_equal(target_match(&superset, &t), -1);   /* its code may use what this machine lacks */
  assert_int_equal(target_match(&other_arch, &t), -1);
  assert_string_equal(target_level_names[TARGET_SUBSET], "compatible subset of features");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_host), cmocka_unit_test(test_vector_widths), cmocka_unit_test(test_specs),
      cmocka_unit_test(test_graded_matching),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
