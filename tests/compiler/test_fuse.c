/* test_fuse.c: compiler/fuse.c — before/expected graphs, compared
 * structurally (as canonical printed text of the expected program parsed
 * and typed the same way). */
#include "helpers.h"

#define HDR "def @main(%x: Tensor[(1, 8, 6, 6), float32], %w: Tensor[(8, 8, 3, 3), float32], %b: Tensor[(8), float32]"

static void test_fuse_conv_bias_relu(void **state) {
  (void)state;
  check_pass(HDR ") {\n"
                 "  %0 = nn.conv2d(%x, %w, padding=[1, 1]);\n"
                 "  %1 = nn.bias_add(%0, %b);\n"
                 "  nn.relu(%1)\n}\n",
             HDR ") {\n"
                 "  %0 = fn (%p0: Tensor[(1, 8, 6, 6), float32], %p1: Tensor[(8, 8, 3, 3), float32], %p2: Tensor[(8), float32], Primitive=1) {\n"
                 "    %1 = nn.conv2d(%p0, %p1, padding=[1, 1]);\n"
                 "    %2 = nn.bias_add(%1, %p2);\n"
                 "    nn.relu(%2)\n"
                 "  };\n"
                 "  %0(%x, %w, %b)\n}\n",
             fuse);
}
/* the seed case: two chained conv2d → two primitive functions */
static void test_fuse_seed(void **state) {
  (void)state;
  check_pass("def @main(%x: Tensor[(1, 10, 12, 12), float32], %w: Tensor[(2, 10, 3, 3), float32], %w1: Tensor[(2, 2, 3, 3), float32]) {\n"
             "  %0 = nn.conv2d(%x, %w, channels=2, kernel_size=[3, 3]);\n"
             "  nn.conv2d(%0, %w1, channels=2, kernel_size=[3, 3])\n}\n",
             "def @main(%x: Tensor[(1, 10, 12, 12), float32], %w: Tensor[(2, 10, 3, 3), float32], %w1: Tensor[(2, 2, 3, 3), float32]) {\n"
             "  %0 = fn (%p0: Tensor[(1, 10, 12, 12), float32], %p1: Tensor[(2, 10, 3, 3), float32], Primitive=1) {\n"
             "    nn.conv2d(%p0, %p1, channels=2, kernel_size=[3, 3])\n  };\n"
             "  %1 = %0(%x, %w);\n"
             "  %2 = fn (%p0: Tensor[(1, 2, 10, 10), float32], %p1: Tensor[(2, 2, 3, 3), float32], Primitive=1) {\n"
             "    nn.conv2d(%p0, %p1, channels=2, kernel_size=[3, 3])\n  };\n"
             "  %2(%1, %w1)\n}\n",
             fuse);
}
/* residual block: the identity is used by the next conv and by the add, so
 * it ends its group; the second conv absorbs bias, the residual add, relu */
static void test_fuse_residual(void **state) {
  (void)state;
  check_pass(HDR ", %w2: Tensor[(8, 8, 3, 3), float32]) {\n"
                 "  %0 = nn.relu(%x);\n"
                 "  %1 = nn.conv2d(%0, %w, padding=[1, 1]);\n"
                 "  %2 = nn.relu(%1);\n"
                 "  %3 = nn.conv2d(%2, %w2, padding=[1, 1]);\n"
                 "  %4 = nn.bias_add(%3, %b);\n"
                 "  %5 = add(%4, %0);\n"
                 "  nn.relu(%5)\n}\n",
             HDR ", %w2: Tensor[(8, 8, 3, 3), float32]) {\n"
                 "  %0 = fn (%p0: Tensor[(1, 8, 6, 6), float32], Primitive=1) { nn.relu(%p0) };\n"
                 "  %1 = %0(%x);\n"
                 "  %2 = fn (%p0: Tensor[(1, 8, 6, 6), float32], %p1: Tensor[(8, 8, 3, 3), float32], Primitive=1) {\n"
                 "    %3 = nn.conv2d(%p0, %p1, padding=[1, 1]);\n    nn.relu(%3)\n  };\n"
                 "  %4 = %2(%1, %w);\n"
                 "  %5 = fn (%p0: Tensor[(1, 8, 6, 6), float32], %p1: Tensor[(8, 8, 3, 3), float32], %p2: Tensor[(8), float32], %p3: Tensor[(1, 8, 6, 6), float32], Primitive=1) {\n"
                 "    %6 = nn.conv2d(%p0, %p1, padding=[1, 1]);\n"
                 "    %7 = nn.bias_add(%6, %p2);\n"
                 "    %8 = add(%7, %p3);\n"
                 "    nn.relu(%8)\n  };\n"
                 "  %5(%4, %w2, %b, %1)\n}\n",
             fuse);
}
/* a diamond of elementwise ops after a conv: the conv's post-dominator is the
 * add, every path to it is elementwise, so all four ops form one group */
static void test_fuse_diamond(void **state) {
  (void)state;
  check_pass(HDR ") {\n"
                 "  %0 = nn.conv2d(%x, %w, padding=[1, 1]);\n"
                 "  %1 = nn.relu(%0);\n"
                 "  %2 = sigmoid(%0);\n"
                 "  add(%1, %2)\n}\n",
             HDR ") {\n"
                 "  %0 = fn (%p0: Tensor[(1, 8, 6, 6), float32], %p1: Tensor[(8, 8, 3, 3), float32], Primitive=1) {\n"
                 "    %1 = nn.conv2d(%p0, %p1, padding=[1, 1]);\n"
                 "    %2 = nn.relu(%1);\n"
                 "    %3 = sigmoid(%1);\n"
                 "    add(%2, %3)\n  };\n"
                 "  %0(%x, %w)\n}\n",
             fuse);
}
/* two convs meeting in an add: the first claims the add, the second stays
 * alone (never two complex ops in a group) */
static void test_fuse_two_convs_meet(void **state) {
  (void)state;
  check_pass(HDR ", %w2: Tensor[(8, 8, 3, 3), float32]) {\n"
                 "  %0 = nn.conv2d(%x, %w, padding=[1, 1]);\n"
                 "  %1 = nn.conv2d(%x, %w2, padding=[1, 1]);\n"
                 "  add(%0, %1)\n}\n",
             HDR ", %w2: Tensor[(8, 8, 3, 3), float32]) {\n"
                 "  %0 = fn (%p0: Tensor[(1, 8, 6, 6), float32], %p1: Tensor[(8, 8, 3, 3), float32], Primitive=1) {\n"
                 "    nn.conv2d(%p0, %p1, padding=[1, 1])\n  };\n"
                 "  %1 = %0(%x, %w2);\n"
                 "  %2 = fn (%p0: Tensor[(1, 8, 6, 6), float32], %p1: Tensor[(8, 8, 3, 3), float32], %p2: Tensor[(1, 8, 6, 6), float32], Primitive=1) {\n"
                 "    %3 = nn.conv2d(%p0, %p1, padding=[1, 1]);\n    add(%3, %p2)\n  };\n"
                 "  %2(%x, %w, %1)\n}\n",
             fuse);
}
/* injective ops chain together; opaque softmax stands alone */
static void test_fuse_injective_and_opaque(void **state) {
  (void)state;
  check_pass("def @main(%x: Tensor[(2, 3, 2, 2), float32]) {\n"
             "  %0 = nn.relu(%x);\n"
             "  %1 = nn.batch_flatten(%0);\n"
             "  nn.softmax(%1)\n}\n",
             "def @main(%x: Tensor[(2, 3, 2, 2), float32]) {\n"
             "  %0 = fn (%p0: Tensor[(2, 3, 2, 2), float32], Primitive=1) {\n"
             "    %1 = nn.relu(%p0);\n    nn.batch_flatten(%1)\n  };\n"
             "  %2 = %0(%x);\n"
             "  %3 = fn (%p0: Tensor[(2, 12), float32], Primitive=1) { nn.softmax(%p0) };\n"
             "  %3(%2)\n}\n",
             fuse);
}
/* a group that joins a conv2d's must bring only elementwise and broadcast
 * ops of its shape: an input's layout_transform fused into the add it
 * feeds stays out of the conv's epilogue (found by the differential
 * tester: the conv's kernel could not evaluate it) */
static void test_fuse_joined_group_stays_elementwise(void **state) {
  (void)state;
  temper_graph *g = parse_ok("def @main(%x: Tensor[(1, 16, 6, 6), float32], %w: Tensor[(1, 1, 3, 3, 16, 16), float32]) {\n"
                             "  %0 = layout_transform(%x, src_layout=\"NCHW\", dst_layout=\"NCHW16c\");\n"
                             "  %1 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=16, kernel_size=[3, 3], kernel_layout=\"OIHW16i16o\", out_layout=\"NCHW16c\");\n"
                             "  %2 = add(%0, %1);\n"
                             "  sigmoid(%2)\n}\n");
  diag d = {0};
  assert_int_equal(fuse(g, &d), TEMPER_OK);
  char *text = temper_graph_print(g);
  /* two functions: the transform alone, and conv + add + sigmoid reading it */
  const char *conv_fn = strstr(text, "nn.conv2d");
  assert_non_null(conv_fn);
  const char *fn_start = conv_fn;
  while (fn_start > text && strncmp(fn_start, "fn (", 4)) fn_start--;
  const char *fn_end = strstr(conv_fn, "};");
  assert_non_null(fn_end);
  for (const char *p = fn_start; p < fn_end; p++) assert_false(!strncmp(p, "layout_transform", 16));
  free(text);
  temper_graph_destroy(g);
}

static int joins;
static int join_yes(const node *a, const node *b, void *ctx) {
  joins++;
  return a->op == OP_CONV2D && b->op == OP_CONV2D && *(int *)ctx;
}

/* primitive functions in the fused program, and those holding two conv2d */
static void count_functions(temper_graph *g, int *fns, int *pairs) {
  char *p = temper_graph_print(g);
  *fns = *pairs = 0;
  for (char *q = p; (q = strstr(q, "Primitive=1")); q++) {
    char *end = strstr(q, "};"), *c1 = strstr(q, "nn.conv2d(");
    (*fns)++;
    *pairs += c1 && c1 < end && strstr(c1 + 1, "nn.conv2d(") && strstr(c1 + 1, "nn.conv2d(") < end;
  }
  free(p);
}

/* fuse_with: a group whose one output feeds only the data input of the next
 * group's conv2d joins it where the caller says so; never where that output
 * has another consumer (asked nothing then) */
static void test_fuse_with_joins_producer(void **state) {
  (void)state;
  static const char *text =
      "def @main(%x: Tensor[(1, 8, 6, 6), float32], %w: Tensor[(8, 1, 3, 3), float32], %w2: Tensor[(4, 8, 1, 1), float32],\n"
      "          %b: Tensor[(8, 1, 1), float32]) {\n"
      "  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], groups=8);\n"
      "  %1 = add(%0, %b);\n"
      "  %2 = clip(%1, a_min=0f, a_max=6f);\n"
      "  %3 = nn.conv2d(%2, %w2);\n"
      "  nn.relu(%3)\n}\n";
  for (int yes = 0; yes <= 1; yes++) {
    temper_graph *g = parse_ok(text);
    diag d = {0};
    joins = 0;
    assert_int_equal(typeinfer(g, &d), TEMPER_OK);
    assert_int_equal(fuse_with(g, join_yes, &yes, &d), TEMPER_OK);
    int fns, pairs;
    count_functions(g, &fns, &pairs);
    assert_int_equal(joins, 1);
    assert_int_equal(fns, yes ? 1 : 2);
    assert_int_equal(pairs, yes);
    temper_graph_destroy(g);
  }
  /* the clipped value also leaves the program: two consumers, no join */
  temper_graph *g = parse_ok("def @main(%x: Tensor[(1, 8, 6, 6), float32], %w: Tensor[(8, 1, 3, 3), float32], %w2: Tensor[(8, 8, 1, 1), float32]) {\n"
                             "  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], groups=8);\n"
                             "  %1 = clip(%0, a_min=0f, a_max=6f);\n"
                             "  %2 = nn.conv2d(%1, %w2);\n"
                             "  add(%2, %1)\n}\n");
  diag d = {0};
  int yes = 1, fns, pairs;
  joins = 0;
  assert_int_equal(typeinfer(g, &d), TEMPER_OK);
  assert_int_equal(fuse_with(g, join_yes, &yes, &d), TEMPER_OK);
  count_functions(g, &fns, &pairs);
  assert_int_equal(joins, 0);
  assert_int_equal(pairs, 0);
  temper_graph_destroy(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fuse_conv_bias_relu),
      cmocka_unit_test(test_fuse_seed),
      cmocka_unit_test(test_fuse_residual),
      cmocka_unit_test(test_fuse_diamond),
      cmocka_unit_test(test_fuse_two_convs_meet),
      cmocka_unit_test(test_fuse_injective_and_opaque),
      cmocka_unit_test(test_fuse_joined_group_stays_elementwise),
      cmocka_unit_test(test_fuse_with_joins_producer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
