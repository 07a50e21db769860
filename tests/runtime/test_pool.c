/* test_pool.c: the thread pool covers [0, n) exactly once, with any thread
 * count, back to back, and inline without a pool; a thread that finishes
 * early takes over the rest of a slow thread's share; temper_task_first
 * marks each thread's first chunk only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
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

/* the caller's first chunk is slow: the worker runs the rest of the
 * caller's share meanwhile; every thread sees its first chunk's begin from
 * temper_task_first once, -1 in later chunks */
typedef struct steal {
  pthread_t caller;
  atomic_int by_worker[64];
  atomic_int firsts_caller, firsts_worker, later_ok, later_bad;
} steal;

static void slow_start(void *ctx, int64_t lo, int64_t hi) {
  steal *s = ctx;
  int on_caller = pthread_equal(pthread_self(), s->caller);
  int64_t f = temper_task_first();
  if (f == lo) atomic_fetch_add(on_caller ? &s->firsts_caller : &s->firsts_worker, 1);
  else atomic_fetch_add(f == -1 ? &s->later_ok : &s->later_bad, 1);
  if (on_caller && f == 0) nanosleep(&(struct timespec){0, 200 * 1000 * 1000}, NULL);
  for (int64_t i = lo; i < hi; i++) atomic_fetch_add(&s->by_worker[i], on_caller ? 100 : 1);
}

static void test_balances_a_slow_thread(void **state) {
  (void)state;
  temper_pool *p = temper_pool_create(2);
  assert_non_null(p);
  steal s = {.caller = pthread_self()};
  temper_parallel_for(p, slow_start, &s, 64);
  int stolen = 0;
  for (int i = 0; i < 64; i++) {
    int v = atomic_load(&s.by_worker[i]);
    assert_true(v == 1 || v == 100);    /* exactly once, by one thread */
    if (i < 32 && v == 1) stolen++;
  }
  assert_int_equal(stolen, 16);         /* the caller's share after its first chunk [0, 16) */
  assert_int_equal(atomic_load(&s.firsts_caller), 1);
  assert_int_equal(atomic_load(&s.firsts_worker), 1);
  assert_true(atomic_load(&s.later_ok) >= 1);
  assert_int_equal(atomic_load(&s.later_bad), 0);
  temper_pool_destroy(p);
}

/* back-to-back loops see each other's writes, whichever thread ran what:
 * a loop is over only when all its iterations are done */
typedef struct chain { int *a, *b; int64_t n; int rep; atomic_int bad; } chain;

static void write_a(void *ctx, int64_t lo, int64_t hi) {
  chain *c = ctx;
  for (int64_t i = lo; i < hi; i++) c->a[i] = (int)i + c->rep;
}

static void read_a(void *ctx, int64_t lo, int64_t hi) {
  chain *c = ctx;
  for (int64_t i = lo; i < hi; i++) {
    int64_t j = c->n - 1 - i;   /* written by another thread's share */
    if (c->a[j] != (int)j + c->rep) atomic_fetch_add(&c->bad, 1);
    c->b[i] = c->a[j];
  }
}

static void test_loops_see_each_other(void **state) {
  (void)state;
  for (int t = 2; t <= 3; t++) {
    temper_pool *p = temper_pool_create(t);
    assert_non_null(p);
    chain c = {calloc(97, sizeof(int)), calloc(97, sizeof(int)), 97, 0, 0};
    for (c.rep = 0; c.rep < 3000; c.rep++) {
      cover k = {calloc(8, sizeof(atomic_int)), 0};
      temper_parallel_for(p, mark, &k, 1 + c.rep % 7);   /* a loop of another length between */
      free(k.hits);
      temper_parallel_for(p, write_a, &c, c.n);
      temper_parallel_for(p, read_a, &c, c.n);
      if (c.rep % 1000 == 999) nanosleep(&(struct timespec){0, 2 * 1000 * 1000}, NULL);   /* workers fall asleep */
    }
    assert_int_equal(atomic_load(&c.bad), 0);
    free(c.a);
    free(c.b);
    temper_pool_destroy(p);
  }
}

/* temper_pool_prefetch with small next weights: the next loop's threads
 * get disjoint parts of the region that together cover it, each from its
 * first chunk on; the loop after has none */
typedef struct stream { const char *at[4], *end[4]; int64_t lines[4]; pthread_t who[4]; atomic_int n; } stream;

static void take_state(void *ctx, int64_t lo, int64_t hi) {
  (void)hi;
  stream *s = ctx;
  if (temper_task_first() != lo) return;   /* the state as a thread's first chunk sees it */
  int i = atomic_fetch_add(&s->n, 1);
  if (i < 4) {
    temper_prefetch_state(&s->at[i], &s->end[i], &s->lines[i]);
    s->who[i] = pthread_self();
  }
  nanosleep(&(struct timespec){0, 2 * 1000 * 1000}, NULL);   /* let every thread take a chunk */
}

static void test_prefetch_stream(void **state) {
  (void)state;
  static char region[64 * 100];
  for (int t = 1; t <= 3; t++) {
    temper_pool *p = temper_pool_create(t);
    assert_non_null(p);
    stream s = {0};
    temper_pool_prefetch(p, NULL, 0, region, sizeof region);
    temper_parallel_for(p, take_state, &s, 64);
    int n = atomic_load(&s.n);
    assert_true(n >= 1 && n <= t);
    int64_t covered = 0;
    for (int i = 0; i < n; i++) {
      assert_int_equal(s.lines[i], 100);
      assert_true(s.at[i] >= region && s.end[i] <= region + sizeof region && s.at[i] <= s.end[i]);
      assert_int_equal((s.at[i] - region) % 64, 0);
      covered += s.end[i] - s.at[i];
      for (int j = 0; j < i; j++) assert_true(s.end[j] <= s.at[i] || s.end[i] <= s.at[j]);   /* disjoint */
    }
    if (n == t) assert_int_equal(covered, (int64_t)sizeof region);
    stream s2 = {0};
    temper_parallel_for(p, take_state, &s2, 64);   /* the region served one loop */
    for (int i = 0; i < atomic_load(&s2.n) && i < 4; i++) assert_true(s2.at[i] >= s2.end[i]);
    temper_pool_destroy(p);
  }
}

/* large weights: each thread fetches its n-th of the running kernel's past
 * the first cap bytes (which the loop before fetched), then the first cap
 * bytes of its n-th of the next kernel's; a later entry of the kernel on
 * that thread, once the first range is done, starts the second */
typedef struct stream2 { const char *at[4], *end[4], *at2[4], *end2[4]; int64_t lines[4]; atomic_int n; } stream2;
static void take_both(void *ctx, int64_t lo, int64_t hi) {
  (void)hi;
  stream2 *s = ctx;
  if (temper_task_first() != lo) return;
  int i = atomic_fetch_add(&s->n, 1);
  if (i < 4) {
    temper_prefetch_state(&s->at[i], &s->end[i], &s->lines[i]);
    temper_prefetch_save(s->end[i]);   /* as if the kernel had fetched it all */
    int64_t l;
    temper_prefetch_state(&s->at2[i], &s->end2[i], &l);
  }
  nanosleep(&(struct timespec){0, 2 * 1000 * 1000}, NULL);
}

static void test_prefetch_stream_slides(void **state) {
  (void)state;
  const int64_t W = 64 << 20;   /* more than the lead (at most 512 KB) per thread */
  char *cur = malloc((size_t)W), *next = malloc((size_t)W);
  assert_non_null(cur);
  assert_non_null(next);
  for (int t = 1; t <= 2; t++) {
    temper_pool *p = temper_pool_create(t);
    stream2 s = {0};
    temper_pool_prefetch(p, cur, W, next, W);
    temper_parallel_for(p, take_both, &s, 64);
    int n = atomic_load(&s.n);
    assert_true(n >= 1 && n <= t);
    for (int i = 0; i < n; i++) {
      int64_t part = (s.end[i] - cur) / (W / t) - 1;   /* which n-th: the range ends where that part ends */
      assert_true(part >= 0 && part < t);
      assert_true(s.end[i] == cur + W / t * (part + 1));
      int64_t cap = s.at[i] - (cur + W / t * part);   /* how far ahead it starts */
      assert_true(cap > 0 && cap % 64 == 0 && cap < W / t);
      assert_true(s.at2[i] == next + W / t * part);   /* then the start of its part of the next */
      assert_true(s.end2[i] == s.at2[i] + cap);
      assert_int_equal(s.lines[i], t * ((W / t - cap) + cap) / 64);   /* the whole stream, over all threads */
    }
    temper_pool_destroy(p);
  }
  free(cur);
  free(next);
}

/* the lead: half of L2 up to 512 KB (Zen's 1 MB and smaller), 64 KB from
 * 2 MB on (Intel's server cores), half of 1 MB where L2 is not known */
static void test_prefetch_lead_by_l2(void **state) {
  (void)state;
  assert_int_equal(temper_prefetch_lead(256L << 10), 128 << 10);
  assert_int_equal(temper_prefetch_lead(1L << 20), 512 << 10);
  assert_int_equal(temper_prefetch_lead((2L << 20) - 1), 512 << 10);
  assert_int_equal(temper_prefetch_lead(2L << 20), 64 << 10);
  assert_int_equal(temper_prefetch_lead(4L << 20), 64 << 10);
  assert_int_equal(temper_prefetch_lead(-1), 512 << 10);
  assert_int_equal(temper_prefetch_lead(0), 512 << 10);
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
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_covers_exactly_once), cmocka_unit_test(test_balances_a_slow_thread),
                                     cmocka_unit_test(test_loops_see_each_other),
                                     cmocka_unit_test(test_prefetch_stream), cmocka_unit_test(test_prefetch_stream_slides),
                                     cmocka_unit_test(test_prefetch_lead_by_l2),
                                     cmocka_unit_test(test_no_pool_runs_inline)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
