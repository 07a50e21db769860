/* test_reference.c: compiler/reference.c — the reference interpreter's
 * errors: a result too large to allocate is an error naming the op and the
 * size, not a crash, and what was allocated before is freed (ASan). */
#include <sys/resource.h>
#include "helpers.h"

/* a broadcast add of two 2^16-float inputs to 2^32 floats (16 GiB), after
 * a relu whose result was allocated. The address space is capped 1 GiB
 * above what the process maps, so the allocation fails on any machine; under
 * ASan (which maps terabytes of shadow) its own cap does that instead
 * (max_allocation_size_mb, allocator_may_return_null in tests/CMakeLists.txt). */
static void test_reference_out_of_memory(void **state) {
  (void)state;
  temper_graph *g = parse_ok("def @main(%x: Tensor[(65536, 1), float32], %y: Tensor[(1, 65536), float32]) {\n"
                             "  %0 = nn.relu(%x);\n"
                             "  add(%0, %y)\n}\n");
  float *x = calloc(1 << 16, sizeof(float)), *y = calloc(1 << 16, sizeof(float));
  assert_true(x && y);
  const float *ins[2] = {x, y};
  float **out = NULL;
  int n_out = -1;
  diag d = {0};
  struct rlimit old;
  int capped = 0;
#ifndef __SANITIZE_ADDRESS__
  FILE *f = fopen("/proc/self/statm", "r");
  long pages = 0;
  if (f && fscanf(f, "%ld", &pages) == 1 && getrlimit(RLIMIT_AS, &old) == 0) {
    struct rlimit cap = old;
    cap.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + ((rlim_t)1 << 30);
    capped = setrlimit(RLIMIT_AS, &cap) == 0;
  }
  if (f) fclose(f);
  assert_true(capped);
#endif
  temper_status s = ref_eval_func(g->main, ins, &out, &n_out, &d);
  if (capped) setrlimit(RLIMIT_AS, &old);
  assert_int_equal(s, TEMPER_ENOMEM);
  assert_null(out);
  assert_int_equal(n_out, -1);
  assert_non_null(strstr(d.msg, "reference: out of memory for the result of add (4294967296 floats)"));
  free(x);
  free(y);
  temper_graph_destroy(g);
}

/* a small program evaluates exactly: relu, then a pad with a value */
static void test_reference_small(void **state) {
  (void)state;
  temper_graph *g = parse_ok("def @main(%x: Tensor[(1, 2), float32]) {\n"
                             "  %0 = nn.relu(%x);\n"
                             "  nn.pad(%0, pad_width=[[0, 1], [1, 0]], pad_value=0.5f)\n}\n");
  float x[2] = {-1, 2};
  const float *ins[1] = {x};
  float **out = NULL;
  int n_out = 0;
  diag d = {0};
  assert_int_equal(ref_eval_func(g->main, ins, &out, &n_out, &d), TEMPER_OK);
  assert_int_equal(n_out, 1);
  const float want[6] = {0.5f, 0, 2, 0.5f, 0.5f, 0.5f};
  for (int i = 0; i < 6; i++) assert_true(out[0][i] == want[i]);
  free(out[0]);
  free(out);
  temper_graph_destroy(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reference_out_of_memory),
      cmocka_unit_test(test_reference_small),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
