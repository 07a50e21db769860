/* test_simplify.c: compiler/simplify.c — SimplifyInference, before and expected. */
#include "helpers.h"

/* SimplifyInference: batch_norm(...).0 → x * scale + shift, reshaped to the axis */
static void test_simplify_batch_norm(void **state) {
  (void)state;
  check_pass("def @main(%x: Tensor[(1, 4, 2, 2), float32], %g: Tensor[(4), float32], %b: Tensor[(4), float32],\n"
             "          %m: Tensor[(4), float32], %v: Tensor[(4), float32]) {\n"
             "  %0 = nn.batch_norm(%x, %g, %b, %m, %v, epsilon=0.001f);\n"
             "  %1 = %0.0;\n"
             "  %2 = nn.dropout(%1);\n"
             "  %2.0\n}\n",
             "def @main(%x: Tensor[(1, 4, 2, 2), float32], %g: Tensor[(4), float32], %b: Tensor[(4), float32],\n"
             "          %m: Tensor[(4), float32], %v: Tensor[(4), float32]) {\n"
             "  %0 = add(%v, 0.001f);\n"
             "  %1 = sqrt(%0);\n"
             "  %2 = divide(%g, %1);\n"
             "  %3 = reshape(%2, newshape=[-1, 1, 1]);\n"
             "  %4 = multiply(%x, %3);\n"
             "  %5 = multiply(%m, %2);\n"
             "  %6 = subtract(%b, %5);\n"
             "  %7 = reshape(%6, newshape=[-1, 1, 1]);\n"
             "  add(%4, %7)\n}\n",
             simplify);
}

/* a dense layer over many rows is the 1×1 conv2d it is; over a few rows it stays */
static void test_simplify_dense_over_rows(void **state) {
  (void)state;
  check_pass("def @main(%x: Tensor[(35, 37), float32], %w: Tensor[(10, 37), float32]) {\n  nn.dense(%x, %w)\n}\n",
             "def @main(%x: Tensor[(35, 37), float32], %w: Tensor[(10, 37), float32]) {\n"
             "  %0 = transpose(%x, axes=[1, 0]);\n"
             "  %1 = reshape(%0, newshape=[1, 37, 7, 5]);\n"
             "  %2 = reshape(%w, newshape=[10, 37, 1, 1]);\n"
             "  %3 = nn.conv2d(%1, %2, channels=10, kernel_size=[1, 1]);\n"
             "  %4 = reshape(%3, newshape=[10, 35]);\n"
             "  transpose(%4, axes=[1, 0])\n}\n",
             simplify);
  check_pass("def @main(%x: Tensor[(15, 37), float32], %w: Tensor[(10, 37), float32]) {\n  nn.dense(%x, %w)\n}\n",
             "def @main(%x: Tensor[(15, 37), float32], %w: Tensor[(10, 37), float32]) {\n  nn.dense(%x, %w)\n}\n",
             simplify);
}

/* a pad of zero widths is its input; on a parameter, or with any width, it stays */
static void test_simplify_pad_of_nothing(void **state) {
  (void)state;
  check_pass("def @main(%x: Tensor[(1, 4, 2, 2), float32]) {\n  %0 = nn.relu(%x);\n"
             "  %1 = nn.pad(%0, pad_width=[[0, 0], [0, 0], [0, 0], [0, 0]]);\n  nn.avg_pool2d(%1, pool_size=[2, 2])\n}\n",
             "def @main(%x: Tensor[(1, 4, 2, 2), float32]) {\n  %0 = nn.relu(%x);\n  nn.avg_pool2d(%0, pool_size=[2, 2])\n}\n",
             simplify);
  const char *kept[2] = {"def @main(%x: Tensor[(1, 4, 2, 2), float32]) {\n  nn.pad(%x, pad_width=[[0, 0], [0, 0], [0, 0], [0, 0]])\n}\n",
                         "def @main(%x: Tensor[(1, 4, 2, 2), float32]) {\n  %0 = nn.relu(%x);\n"
                         "  nn.pad(%0, pad_width=[[0, 0], [0, 0], [0, 1], [0, 0]])\n}\n"};
  for (int i = 0; i < 2; i++) check_pass(kept[i], kept[i], simplify);
}

/* an average pool of a zero pad of H and W is the pool with the padding
 * counted; a pad of C, of another value, or a pool in ceil mode stays */
static void test_simplify_pad_into_avg_pool(void **state) {
  (void)state;
  check_pass("def @main(%x: Tensor[(1, 4, 5, 6), float32]) {\n  %0 = nn.relu(%x);\n"
             "  %1 = nn.pad(%0, pad_width=[[0, 0], [0, 0], [1, 2], [1, 0]]);\n  nn.avg_pool2d(%1, pool_size=[3, 3])\n}\n",
             "def @main(%x: Tensor[(1, 4, 5, 6), float32]) {\n  %0 = nn.relu(%x);\n"
             "  nn.avg_pool2d(%0, pool_size=[3, 3], padding=[1, 1, 2, 0], count_include_pad=True)\n}\n",
             simplify);
  const char *kept[3] = {
      "def @main(%x: Tensor[(1, 4, 5, 6), float32]) {\n  %0 = nn.relu(%x);\n"
      "  %1 = nn.pad(%0, pad_width=[[0, 0], [1, 0], [1, 1], [1, 1]]);\n  nn.avg_pool2d(%1, pool_size=[3, 3])\n}\n",
      "def @main(%x: Tensor[(1, 4, 5, 6), float32]) {\n  %0 = nn.relu(%x);\n"
      "  %1 = nn.pad(%0, pad_width=[[0, 0], [0, 0], [1, 1], [1, 1]], pad_value=1f);\n  nn.avg_pool2d(%1, pool_size=[3, 3])\n}\n",
      "def @main(%x: Tensor[(1, 4, 5, 6), float32]) {\n  %0 = nn.relu(%x);\n"
      "  %1 = nn.pad(%0, pad_width=[[0, 0], [0, 0], [1, 1], [1, 1]]);\n  nn.avg_pool2d(%1, pool_size=[3, 3], ceil_mode=True)\n}\n"};
  for (int i = 0; i < 3; i++) check_pass(kept[i], kept[i], simplify);
}
/* the layer norm ONNX's opset-13 export writes (mean over the last axis as
 * the importer makes ReduceMean: reshape, global average, reshape) is one
 * nn.layer_norm, ε on either side of its add; one that squares something
 * else is left as it is; nn.layer_norm with γ and β is the core op and the
 * affine ops after it, reshaped to broadcast along its axis */
#define LN_MEANS(x, sq)                                                                                                 \
  "  %%0 = reshape(" x ", newshape=[1, 30, 8, 1]);\n  %%1 = nn.global_avg_pool2d(%%0);\n"                               \
  "  %%2 = reshape(%%1, newshape=[1, 5, 6, 1]);\n  %%3 = subtract(" x ", %%2);\n  %%4 = multiply(%%3, " sq ");\n"        \
  "  %%5 = reshape(%%4, newshape=[1, 30, 8, 1]);\n  %%6 = nn.global_avg_pool2d(%%5);\n  %%7 = reshape(%%6, newshape=[1, 5, 6, 1]);\n"
static void test_simplify_layer_norm(void **state) {
  (void)state;
  const char *head = "def @main(%x: Tensor[(1, 5, 6, 8), float32]) {\n";
  char before[2048], after[512];
  snprintf(before, sizeof before, "%s" LN_MEANS("%%x", "%%3") "  %%8 = add(%%7, 0.125f);\n  %%9 = sqrt(%%8);\n  divide(%%3, %%9)\n}\n", head);
  snprintf(after, sizeof after, "%s  nn.layer_norm(%%x, axis=3, epsilon=0.125f)\n}\n", head);
  check_pass(before, after, simplify);
  snprintf(before, sizeof before, "%s" LN_MEANS("%%x", "%%3") "  %%8 = add(0.0078125f, %%7);\n  %%9 = sqrt(%%8);\n  divide(%%3, %%9)\n}\n", head);
  snprintf(after, sizeof after, "%s  nn.layer_norm(%%x, axis=3, epsilon=0.0078125f)\n}\n", head);
  check_pass(before, after, simplify);
  snprintf(before, sizeof before, "%s" LN_MEANS("%%x", "%%x") "  %%8 = add(%%7, 0.125f);\n  %%9 = sqrt(%%8);\n  divide(%%3, %%9)\n}\n", head);
  check_pass(before, before, simplify);
  check_pass("def @main(%x: Tensor[(1, 4, 2, 2), float32], %g: Tensor[(4), float32], %b: Tensor[(4), float32]) {\n"
             "  nn.layer_norm(%x, %g, %b, axis=1, epsilon=0.01f)\n}\n",
             "def @main(%x: Tensor[(1, 4, 2, 2), float32], %g: Tensor[(4), float32], %b: Tensor[(4), float32]) {\n"
             "  %0 = nn.layer_norm(%x, axis=1, epsilon=0.01f);\n  %1 = reshape(%g, newshape=[-1, 1, 1]);\n"
             "  %2 = multiply(%0, %1);\n  %3 = reshape(%b, newshape=[-1, 1, 1]);\n  add(%2, %3)\n}\n",
             simplify);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_simplify_batch_norm),
      cmocka_unit_test(test_simplify_dense_over_rows),
      cmocka_unit_test(test_simplify_pad_of_nothing),
      cmocka_unit_test(test_simplify_pad_into_avg_pool),
      cmocka_unit_test(test_simplify_layer_norm),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
