/* test_pool.c: the thread pool covers [0, n) exactly once, with any thread
 * count, back to back, and inline without a pool. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdatomic.h>
#include <stdlib.h>
#include "temper/runtime.h"

typedef struct cover { atomic_int *hits; atomic_int calls; } cover;

static void mark(void *ctx, int64_t lo, int64_t hi) {
  cover *c = ctx;
  atomic_fetch_add(&c->calls, 1);
  for (int64_t i = lo; i < hi; i++) atomic_fetch_add(&c->hits[i], 1);
}

static void test_covers_exactly_once(void **state) {
  (void)state;
  int threads[] = {1, 2, 3, 8};
  int64_t sizes[] = {0, 1, 2, 7, 1000};
  for (size_t t = 0; t < 4; t++) {
    temper_pool *p = temper_pool_create(threads[t]);
    assert_non_null(p);
    assert_int_equal(temper_pool_threads(p), threads[t]);
    for (size_t s = 0; s < 5; s++)
      for (int rep = 0; rep < 50; rep++) {
        int64_t n = sizes[s];
        cover c = {calloc((size_t)n + 1, sizeof(atomic_int)), 0};
        temper_parallel_for(p, mark, &c, n);
        for (int64_t i = 0; i < n; i++) assert_int_equal(atomic_load(&c.hits[i]), 1);
        free(c.hits);
      }
    temper_pool_destroy(p);
  }
}

static void test_no_pool_runs_inline(void **state) {
  (void)state;
  cover c = {calloc(10, sizeof(atomic_int)), 0};
  temper_parallel_for(NULL, mark, &c, 10);
  assert_int_equal(atomic_load(&c.calls), 1);
  for (int i = 0; i < 10; i++) assert_int_equal(atomic_load(&c.hits[i]), 1);
  free(c.hits);
  temper_pool_destroy(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_covers_exactly_once), cmocka_unit_test(test_no_pool_runs_inline)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
