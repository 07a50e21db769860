/* test_layout_transform.c: every layout transform the compiler can emit
 * between activations — NCHW ↔ NCHW<b>c and NCHW<a>c ↔ NCHW<b>c — equals
 * the reference interpreter, lowered both by the vector-copy schedule
 * (schedules/layout_transform.c) and by the generic per-element one, run
 * inline and on two threads.
 *
 * Blocks are those the knob spaces produce: divisors of channel counts up
 * to 64, non-powers of two included (12, 13, 24 come from 24, 104, 120
 * channels). Channel counts: multiples of both blocks, and counts the
 * destination block does not divide (it pads with zeros). The bug this
 * guards against (issue 15): 12c → 8c copied runs of min(12, 8) = 8
 * channels, reading channels 8..15 from one 12-wide block. */
#include "engine.h"
#include "helpers.h"
#include "schedules.h"

static const int blocks[] = {0, 1, 2, 3, 4, 5, 7, 8, 12, 13, 16, 24, 32, 48};   /* 0: plain NCHW */
enum { N_BLOCKS = sizeof blocks / sizeof *blocks };

static void layout_of(char *buf, size_t n, int b) {
  if (b) snprintf(buf, n, "NCHW%dc", b);
  else snprintf(buf, n, "NCHW");
}

static int64_t gcd64(int64_t a, int64_t b) { return b ? gcd64(b, a % b) : a; }

/* compiles fn's one primitive function by `pick`, runs it inline or on a
 * pool, and returns the largest difference from ref (NaN counts as huge) */
static double run_kernel(const node *fn, sched_pick pick, temper_pool *pool, const float *x, const float *ref, int64_t n_out) {
  diag d = {0};
  static int serial;   /* kernel names are unique in one JIT */
  char name[32];
  snprintf(name, sizeof name, "lt_%d", serial++);
  lfunc *f = NULL;
  temper_status s = sched_lower_as(fn, &engine->target, NULL, name, pick, &f, &d);
  if (s) fprintf(stderr, "lowering failed: %s\n", d.msg);
  assert_int_equal(s, TEMPER_OK);
  temper_kernel_fn k = NULL;
  s = cg_jit_add(engine->jit, &f, 1, &k, &d);
  lf_free(f);
  assert_int_equal(s, TEMPER_OK);
  float *y = malloc(sizeof(float) * (size_t)n_out);
  for (int64_t i = 0; i < n_out; i++) y[i] = NAN;   /* an element never written shows */
  float *args[2] = {(float *)x, y};
  k(args, pool);
  double worst = 0;
  for (int64_t i = 0; i < n_out; i++) {
    double e = fabs((double)y[i] - (double)ref[i]);
    if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
  }
  free(y);
  return worst;
}

/* one transform of an (N, C, H, W) tensor from block a to block b */
static int check_one(int a, int b, int64_t C, int64_t H, int64_t W, temper_pool *pool, int *copies) {
  char src[32], dst[32], text[512];
  layout_of(src, sizeof src, a);
  layout_of(dst, sizeof dst, b);
  if (a) snprintf(text, sizeof text, "def @main(%%x: Tensor[(1, %lld, %lld, %lld, %d), float32]) {\n"
                  "  layout_transform(%%x, src_layout=\"%s\", dst_layout=\"%s\")\n}\n", (long long)(C / a), (long long)H, (long long)W, a, src, dst);
  else snprintf(text, sizeof text, "def @main(%%x: Tensor[(1, %lld, %lld, %lld), float32]) {\n"
                "  layout_transform(%%x, src_layout=\"%s\", dst_layout=\"%s\")\n}\n", (long long)C, (long long)H, (long long)W, src, dst);
  temper_graph *g = parse_ok(text);
  const node *call = g->main->body;
  int64_t n_in = shape_numel(&call->args[0]->ty.shape), n_out = shape_numel(&call->ty.shape);
  float *x = malloc(sizeof(float) * (size_t)n_in), *ref = malloc(sizeof(float) * (size_t)n_out);
  for (int64_t i = 0; i < n_in; i++) x[i] = (float)(i + 1);   /* every element distinct */
  diag d = {0};
  const float *ins[1] = {x};
  float *outs[1] = {ref};
  assert_int_equal(ref_eval_op(call, ins, outs, &d), TEMPER_OK);
  assert_int_equal(pipeline_optimize(g, engine->target.vec, &d), TEMPER_OK);
  const node *fn = g->main->body->callee;
  assert_non_null(fn);
  *copies += sched_is_layout_copy(fn);
  int bad = 0;
  const sched_pick picks[2] = {SCHED_BEST, SCHED_GENERIC};
  for (int k = 0; k < 2; k++) {
    double e = run_kernel(fn, picks[k], pool, x, ref, n_out);
    if (e != 0) {
      fprintf(stderr, "%s → %s, C=%lld H=%lld W=%lld, %s schedule, %s: max error %g\n", src, dst, (long long)C, (long long)H,
              (long long)W, k ? "generic" : "best", pool ? "2 threads" : "inline", e);
      bad = 1;
    }
  }
  free(x);
  free(ref);
  temper_graph_destroy(g);
  return bad;
}

/* every pair of blocks, with channel counts both divide and counts the
 * destination pads; odd widths so the copy's masked tail runs */
static void test_every_block_pair(void **state) {
  (void)state;
  temper_pool *pool = temper_pool_create(2);
  int bad = 0, n = 0, copies = 0;
  for (int i = 0; i < N_BLOCKS; i++)
    for (int j = 0; j < N_BLOCKS; j++) {
      int a = blocks[i], b = blocks[j];
      if (a == b) continue;
      int64_t ea = a ? a : 1, eb = b ? b : 1, l = ea / gcd64(ea, eb) * eb;
      int64_t cs[3] = {l, 2 * l, 0};
      /* a count a allows (a multiple of a; any for NCHW) that b does not divide */
      for (int64_t c = ea * 3; c < ea * 3 + 64 * ea && eb > 1; c += ea)
        if (c % eb) { cs[2] = c; break; }
      for (int k = 0; k < 3; k++) {
        if (!cs[k] || cs[k] > 512) continue;
        int64_t H = 1 + (i + j + k) % 3, W = 1 + (3 * i + j + 5 * k) % 19;
        bad += check_one(a, b, cs[k], H, W, (i + j + k) % 2 ? pool : NULL, &copies);
        n++;
      }
    }
  temper_pool_destroy(pool);
  fprintf(stderr, "%d transforms (%d by the copy schedule), each lowered both ways: %d wrong\n", n, copies, bad);
  assert_true(copies > 100);   /* the copy schedule is what is under test */
  assert_int_equal(bad, 0);
}

/* the reported case: 12c → 8c, the first wrong node of regnet_y_400mf */
static void test_12c_to_8c(void **state) {
  (void)state;
  int copies = 0;
  assert_int_equal(check_one(12, 8, 24, 2, 2, NULL, &copies), 0);
  assert_int_equal(check_one(13, 8, 104, 3, 5, NULL, &copies), 0);
  assert_int_equal(copies, 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_12c_to_8c),
      cmocka_unit_test(test_every_block_pair),
  };
  return cmocka_run_group_tests(tests, engine_setup, engine_teardown);
}
