/* test_winograd.c: compiler/winograd.c — the transform matrices, the
 * reference Winograd convolution, and the Winograd ops' type errors. */
#include <math.h>
#include "helpers.h"

#define HDR "def @main(%x: Tensor[(1, 8, 6, 6), float32], %w: Tensor[(8, 8, 3, 3), float32], %b: Tensor[(8), float32]"

/* Aᵀ[(G g) ⊙ (Bᵀ d)] is the correlation of d with g, for every tile size
 * at stride 1 and stride 2 (y_i = Σ_k d[s·i + k]·g[k]) */
static void test_winograd_matrices(void **state) {
  (void)state;
  pcg32 r;
  pcg32_seed(&r, 3, 1);
  static const int tiles[2][3] = {{2, 4, 6}, {2, 3, 4}};
  for (int s = 1; s <= 2; s++)
    for (int ti = 0; ti < 3; ti++) {
      int m = tiles[s - 1][ti];
      wino_mats w;
      assert_int_equal(winograd_mats(m, s, &w), 0);
      assert_int_equal(w.a, s == 1 ? m + 2 : 2 * m + 1);
      assert_int_equal(winograd_alpha(m, s), w.a);
      for (int trial = 0; trial < 20; trial++) {
        double d[9], g[3], gg[9], bd[9];
        for (int i = 0; i < w.a; i++) d[i] = pcg32_float(&r) * 2 - 1;
        for (int k = 0; k < 3; k++) g[k] = pcg32_float(&r) * 2 - 1;
        for (int x = 0; x < w.a; x++) {
          gg[x] = bd[x] = 0;
          for (int k = 0; k < 3; k++) gg[x] += w.G[x][k] * g[k];
          for (int j = 0; j < w.a; j++) bd[x] += w.BT[x][j] * d[j];
        }
        for (int i = 0; i < m; i++) {
          double y = 0, want = d[s * i] * g[0] + d[s * i + 1] * g[1] + d[s * i + 2] * g[2];
          for (int x = 0; x < w.a; x++) y += w.AT[i][x] * gg[x] * bd[x];
          assert_true(fabs(y - want) < 1e-9);
        }
      }
    }
  wino_mats w;
  assert_int_equal(winograd_mats(3, 1, &w), -1);
  assert_int_equal(winograd_mats(8, 1, &w), -1);
  assert_int_equal(winograd_mats(6, 2, &w), -1);
  assert_int_equal(winograd_mats(2, 3, &w), -1);
  assert_int_equal(winograd_alpha(5, 2), -1);
}
/* the Winograd reference through the transformed weights equals the direct conv2d */
static void test_winograd_reference(void **state) {
  (void)state;
  static const int cases[6][2] = {{2, 1}, {4, 1}, {6, 1}, {2, 2}, {3, 2}, {4, 2}};
  for (int ci = 0; ci < 6; ci++) {
    int m = cases[ci][0], s = cases[ci][1];
    char text[1024];
    snprintf(text, sizeof text,
             "def @main(%%x: Tensor[(1, 5, 7, 9), float32], %%w: Tensor[(6, 5, 3, 3), float32]) {\n"
             "  %%0 = nn.contrib_conv2d_winograd_weight_transform(%%w, tile_size=%d, strides=[%d, %d]);\n"
             "  %%1 = nn.contrib_conv2d_winograd_without_weight_transform(%%x, %%0, tile_size=%d, strides=[%d, %d], channels=6, padding=[2, 0, 1, 1], kernel_layout=\"HWIO\");\n"
             "  %%2 = nn.conv2d(%%x, %%w, strides=[%d, %d], padding=[2, 0, 1, 1]);\n"
             "  (%%1, %%2)\n}\n", m, s, s, m, s, s, s, s);
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
    /* OH = (7 + 2 + 1 - 3) / s + 1, OW = (9 + 0 + 1 - 3) / s + 1: 8 × 8, or 4 × 4 */
    int64_t cnt = s == 1 ? 6 * 8 * 8 : 6 * 4 * 4;
    assert_int_equal(shape_numel(&g->main->body->args[0]->ty.shape), cnt);
    assert_int_equal(shape_numel(&g->main->body->args[1]->ty.shape), cnt);
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
  parse_fails(t, "tile_size must be 2, 4 or 6 at stride 1, got 3");
  snprintf(t, sizeof t, "%s  nn.contrib_conv2d_winograd_weight_transform(%%w, tile_size=6, strides=[2, 2])\n}\n", h);
  parse_fails(t, "tile_size must be 2, 3 or 4 at stride 2, got 6");
  snprintf(t, sizeof t, "%s  nn.contrib_conv2d_winograd_weight_transform(%%w, tile_size=2, strides=[1, 2])\n}\n", h);
  parse_fails(t, "only strides [1, 1] and [2, 2], got [1, 2]");
  snprintf(t, sizeof t, "%s  nn.contrib_conv2d_winograd_without_weight_transform(%%x, %%u, tile_size=2, channels=4, kernel_layout=\"HWIO\")\n}\n", h);
  parse_fails(t, "the transformed weight should be Tensor[(4, 4, 4, 4), float32] for tile_size=2 at stride 1");
  snprintf(t, sizeof t, "%s  nn.contrib_conv2d_winograd_without_weight_transform(%%x, %%u, tile_size=4, channels=4, strides=[2, 2], kernel_layout=\"HWIO\")\n}\n", h);
  parse_fails(t, "the transformed weight should be Tensor[(9, 9, 4, 4), float32] for tile_size=4 at stride 2");
  snprintf(t, sizeof t, "%s  nn.contrib_conv2d_winograd_without_weight_transform(%%x, %%u, tile_size=4, channels=4, strides=[3, 3], kernel_layout=\"HWIO\")\n}\n", h);
  parse_fails(t, "only strides [1, 1] and [2, 2], got [3, 3]");
  snprintf(t, sizeof t, "%s  nn.contrib_conv2d_winograd_without_weight_transform(%%x, %%u, tile_size=4, channels=4, dilation=[2, 2], kernel_layout=\"HWIO\")\n}\n", h);
  parse_fails(t, "only dilation 1 and groups 1");
  snprintf(t, sizeof t, "%s  nn.contrib_conv2d_winograd_without_weight_transform(%%x, %%u, tile_size=4, kernel_layout=\"HWIO\")\n}\n", h);
  parse_fails(t, "needs channels=");
  snprintf(t, sizeof t, "%s  nn.contrib_conv2d_winograd_without_weight_transform(%%x, %%u, tile_size=4, channels=4, kernel_layout=\"NCHW\")\n}\n", h);
  parse_fails(t, "is not a layout of the HWIO transformed weight");
}
int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_winograd_matrices),
      cmocka_unit_test(test_winograd_reference),
      cmocka_unit_test(test_winograd_op_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
