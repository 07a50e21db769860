/* test_fold.c: compiler/fold.c — constant folding, and a per-channel multiply into the conv's weights. */
#include "helpers.h"

/* folding: constant subgraphs evaluate; a per-channel multiply folds into the conv */
static void test_fold_scale_into_conv(void **state) {
  (void)state;
  temper_graph *g = parse_ok("def @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(2, 2, 1, 1), float32], %s: Tensor[(2), float32]) {\n"
                             "  %0 = nn.conv2d(%x, %w);\n"
                             "  %1 = add(%s, 1f);\n"
                             "  %2 = reshape(%1, newshape=[-1, 1, 1]);\n"
                             "  multiply(%0, %2)\n}\n");
  float w[4] = {1, 2, 3, 4}, s[2] = {1, 2};
  float *vals[3] = {NULL, w, s};
  diag d = {0};
  assert_int_equal(bind_params(g, vals, &d), TEMPER_OK);
  assert_int_equal(typeinfer(g, &d), TEMPER_OK);
  assert_int_equal(fold_constants(g, &d), TEMPER_OK);
  node *b = g->main->body;
  assert_int_equal(b->op, OP_CONV2D);   /* the multiply is gone */
  assert_int_equal(b->args[1]->kind, N_CONST);
  /* scale = s + 1 = {2, 3}: rows of W scaled */
  assert_true(b->args[1]->data[0] == 2 && b->args[1]->data[1] == 4);
  assert_true(b->args[1]->data[2] == 9 && b->args[1]->data[3] == 12);
  assert_int_equal(g->main->n_params, 1);
  temper_graph_destroy(g);
}
int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fold_scale_into_conv),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
