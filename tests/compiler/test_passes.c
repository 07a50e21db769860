/* test_passes.c: before/expected graphs for simplify, fold and fuse,
 * compared structurally (as canonical printed text of the expected program
 * parsed and typed the same way). */
#include "helpers.h"
#include "engine.h"
#include <math.h>
#include "space.h"

/* runs passes on `before`; the result must print as `expected` does */
static void check_pass(const char *before, const char *expected, temper_status (*pass)(temper_graph *, diag *)) {
  temper_graph *g = parse_ok(before);
  diag d = {0};
  temper_status s = pass(g, &d);
  if (s) fprintf(stderr, "pass failed: %s\n", d.msg);
  assert_int_equal(s, TEMPER_OK);
  temper_graph *e = parse_ok(expected);
  char *got = temper_graph_print(g), *want = temper_graph_print(e);
  if (strcmp(got, want)) fprintf(stderr, "got:\n%s\nwant:\n%s\n", got, want);
  assert_string_equal(got, want);
  free(got);
  free(want);
  temper_graph_destroy(g);
  temper_graph_destroy(e);
}

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

/* the whole pipeline on a basic block: bn folds away, two fused groups */
static void test_pipeline_resnet_block(void **state) {
  (void)state;
  char *t = read_text("examples/resnet_block.relay");
  temper_graph *g = parse_ok(t);
  free(t);
  int n_params = g->main->n_params;
  float **vals = calloc((size_t)n_params, sizeof(float *));
  for (int i = 1; i < n_params; i++) {
    node *p = g->main->params[i];
    vals[i] = malloc(sizeof(float) * (size_t)shape_numel(&p->ty.shape));
    data_random_param(vals[i], &p->ty.shape, 7 + (uint64_t)i, 0, data_name_positive(p->name));
  }
  diag d = {0};
  assert_int_equal(bind_params(g, vals, &d), TEMPER_OK);
  assert_int_equal(pipeline_optimize(g, 16, &d), TEMPER_OK);
  char *p = print_graph(g);
  assert_null(strstr(p, "batch_norm"));
  assert_null(strstr(p, "multiply"));
  int groups = 0, convs = 0;
  for (char *q = p; (q = strstr(q, "Primitive=1")); q++) groups++;
  for (char *q = p; (q = strstr(q, "nn.contrib_conv2d_winograd_without_weight_transform(")); q++) convs++;
  /* two conv groups; NCHW → NCHW16c at the input and the residual input
   * NCHW → NCHW32c; the default Winograd config (ic_bn 16) writes NCHW32c,
   * which the second conv reads as it is (no transform between the convs);
   * the second conv stores NCHW itself */
  assert_int_equal(groups, 4);
  assert_int_equal(convs, 2);
  assert_non_null(strstr(p, "data_layout=\"NCHW32c\", kernel_layout=\"OHWI32o\", out_layout=\"NCHW32c\", schedule=\"conv2d_winograd:tile=4,ic_bn=16"));
  assert_null(strstr(p, "src_layout=\"NCHW32c\", dst_layout=\"NCHW16c\""));
  assert_non_null(strstr(p, "add(%10, %p3)"));   /* the residual add lives in the second conv group */
  /* 64-channel 3×3 stride-1 convs with constant weights: Winograd by default */
  assert_non_null(strstr(p, "schedule=\"conv2d_winograd:tile=4,"));
  free(p);
  for (int i = 1; i < n_params; i++) free(vals[i]);
  free(vals);
  temper_graph_destroy(g);
}

/* Aᵀ[(G g) ⊙ (Bᵀ d)] is the correlation of d with g, for every tile size */
static void test_winograd_matrices(void **state) {
  (void)state;
  pcg32 r;
  pcg32_seed(&r, 3, 1);
  for (int m = 2; m <= 6; m += 2) {
    wino_mats w;
    assert_int_equal(winograd_mats(m, &w), 0);
    assert_int_equal(w.a, m + 2);
    for (int trial = 0; trial < 20; trial++) {
      double d[8], g[3], gg[8], bd[8];
      for (int i = 0; i < w.a; i++) d[i] = pcg32_float(&r) * 2 - 1;
      for (int k = 0; k < 3; k++) g[k] = pcg32_float(&r) * 2 - 1;
      for (int x = 0; x < w.a; x++) {
        gg[x] = bd[x] = 0;
        for (int k = 0; k < 3; k++) gg[x] += w.G[x][k] * g[k];
        for (int j = 0; j < w.a; j++) bd[x] += w.BT[x][j] * d[j];
      }
      for (int i = 0; i < m; i++) {
        double y = 0, want = d[i] * g[0] + d[i + 1] * g[1] + d[i + 2] * g[2];
        for (int x = 0; x < w.a; x++) y += w.AT[i][x] * gg[x] * bd[x];
        assert_true(fabs(y - want) < 1e-9);
      }
    }
  }
  wino_mats w;
  assert_int_equal(winograd_mats(3, &w), -1);
  assert_int_equal(winograd_mats(8, &w), -1);
}

/* the Winograd reference through the transformed weights equals the direct conv2d */
static void test_winograd_reference(void **state) {
  (void)state;
  for (int m = 2; m <= 6; m += 2) {
    char text[1024];
    snprintf(text, sizeof text,
             "def @main(%%x: Tensor[(1, 5, 7, 9), float32], %%w: Tensor[(6, 5, 3, 3), float32]) {\n"
             "  %%0 = nn.contrib_conv2d_winograd_weight_transform(%%w, tile_size=%d);\n"
             "  %%1 = nn.contrib_conv2d_winograd_without_weight_transform(%%x, %%0, tile_size=%d, channels=6, padding=[2, 0, 1, 1], kernel_layout=\"HWIO\");\n"
             "  %%2 = nn.conv2d(%%x, %%w, padding=[2, 0, 1, 1]);\n"
             "  (%%1, %%2)\n}\n", m, m);
    temper_graph *g = parse_ok(text);
    float *vals[2];
    for (int i = 0; i < 2; i++) {
      node *p = g->main->params[i];
      vals[i] = malloc(sizeof(float) * (size_t)shape_numel(&p->ty.shape));
      data_random_param(vals[i], &p->ty.shape, 40 + (uint64_t)i, i == 0, 0);
    }
    float **out = NULL;
    int n = 0;
    diag d = {0};
    assert_int_equal(ref_eval_func(g->main, (const float *const *)vals, &out, &n, &d), TEMPER_OK);
    assert_int_equal(n, 2);
    int64_t cnt = 6 * 8 * 8;   /* OH = 7 + 2 + 1 - 2, OW = 9 + 0 + 1 - 2 */
    assert_int_equal(shape_numel(&g->main->body->args[0]->ty.shape), cnt);
    for (int64_t i = 0; i < cnt; i++) assert_true(fabs(out[0][i] - out[1][i]) < 1e-5);
    for (int i = 0; i < 2; i++) free(out[i]), free(vals[i]);
    free(out);
    temper_graph_destroy(g);
  }
}

static void test_winograd_op_errors(void **state) {
  (void)state;
  const char *h = "def @main(%x: Tensor[(1, 4, 8, 8), float32], %w: Tensor[(4, 4, 3, 3), float32], %u: Tensor[(6, 6, 4, 4), float32]) {\n";
  char t[1024];
  snprintf(t, sizeof t, "%s  nn.contrib_conv2d_winograd_weight_transform(%%w, tile_size=3)\n}\n", h);
  parse_fails(t, "tile_size must be 2, 4 or 6, got 3");
  snprintf(t, sizeof t, "%s  nn.contrib_conv2d_winograd_without_weight_transform(%%x, %%u, tile_size=2, channels=4, kernel_layout=\"HWIO\")\n}\n", h);
  parse_fails(t, "the transformed weight should be Tensor[(4, 4, 4, 4), float32] for tile_size=2");
  snprintf(t, sizeof t, "%s  nn.contrib_conv2d_winograd_without_weight_transform(%%x, %%u, tile_size=4, channels=4, strides=[2, 2], kernel_layout=\"HWIO\")\n}\n", h);
  parse_fails(t, "only stride 1, dilation 1 and groups 1");
  snprintf(t, sizeof t, "%s  nn.contrib_conv2d_winograd_without_weight_transform(%%x, %%u, tile_size=4, kernel_layout=\"HWIO\")\n}\n", h);
  parse_fails(t, "needs channels=");
  snprintf(t, sizeof t, "%s  nn.contrib_conv2d_winograd_without_weight_transform(%%x, %%u, tile_size=4, channels=4, kernel_layout=\"NCHW\")\n}\n", h);
  parse_fails(t, "is not a layout of the HWIO transformed weight");
}

/* a Winograd config rewrites the conv2d into the transform (folded to a
 * constant) and the conv on transformed weights, with its schedule */
static int choose_wino(void *ctx, const char *key, const struct task_space *s, const struct conv_site *site, struct sched_config *out,
                       char *err, size_t n) {
  (void)ctx, (void)key, (void)site;
  return config_parse(s, "conv2d_winograd:tile=4,ic_bn=8,oc_bn=8,t_bn=2,par=0,stage=0,unroll_c=0", out, err, n) ? -1 : 1;
}

static void test_pipeline_winograd(void **state) {
  (void)state;
  temper_graph *g = parse_ok(HDR ") {\n  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);\n  nn.relu(%0)\n}\n");
  float *w = malloc(sizeof(float) * 8 * 8 * 9);
  shape_t ws = {4, {8, 8, 3, 3}};
  data_random_param(w, &ws, 5, 0, 0);
  float *vals[3] = {NULL, w, NULL};
  diag d = {0};
  assert_int_equal(bind_params(g, vals, &d), TEMPER_OK);
  pipeline_opts o = {.vec = 16, .choose = choose_wino};
  assert_int_equal(pipeline_optimize_with(g, &o, &d), TEMPER_OK);
  char *p = print_graph(g);
  assert_non_null(strstr(p, "nn.contrib_conv2d_winograd_without_weight_transform("));
  assert_non_null(strstr(p, "kernel_layout=\"OHWI8o\""));
  assert_non_null(strstr(p, "schedule=\"conv2d_winograd:tile=4,"));
  assert_null(strstr(p, "winograd_weight_transform"));   /* folded */
  free(p);
  temper_graph_destroy(g);
  /* with the weight left a parameter, there is nothing to transform ahead: direct */
  g = parse_ok(HDR ") {\n  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);\n  nn.relu(%0)\n}\n");
  assert_int_equal(pipeline_optimize_with(g, &o, &d), TEMPER_OK);
  p = print_graph(g);
  assert_null(strstr(p, "winograd"));
  assert_non_null(strstr(p, "conv2d_nchwc:"));
  free(p);
  free(w);
  temper_graph_destroy(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fuse_conv_bias_relu), cmocka_unit_test(test_fuse_seed),
      cmocka_unit_test(test_fuse_residual),       cmocka_unit_test(test_fuse_diamond),
      cmocka_unit_test(test_fuse_two_convs_meet), cmocka_unit_test(test_fuse_injective_and_opaque),
      cmocka_unit_test(test_simplify_batch_norm), cmocka_unit_test(test_fold_scale_into_conv),
      cmocka_unit_test(test_pipeline_resnet_block), cmocka_unit_test(test_winograd_matrices),
      cmocka_unit_test(test_winograd_reference),  cmocka_unit_test(test_winograd_op_errors),
      cmocka_unit_test(test_pipeline_winograd),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
