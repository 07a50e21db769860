/* test_pipeline.c: engine/pipeline.c and engine/layout.c — the whole
 * column of passes on a ResNet block, and the layout pass making a
 * Winograd conv from a config. */
#include <math.h>
#include "engine.h"
#include "helpers.h"
#include "space.h"

#define HDR "def @main(%x: Tensor[(1, 8, 6, 6), float32], %w: Tensor[(8, 8, 3, 3), float32], %b: Tensor[(8), float32]"

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
  int groups = count_in(p, "Primitive=1"), convs = count_in(p, "nn.contrib_conv2d_winograd_without_weight_transform(");
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

/* a squeeze-excite scale first in the multiply (as PyTorch exports it):
 * the activation stays in its blocks, the scale [1, C, 1, 1] is reshaped to
 * them; no transform of the activation to NCHW and back */
static void test_pipeline_squeeze_excite(void **state) {
  (void)state;
  temper_graph *g = parse_ok(
      "def @main(%x: Tensor[(1, 32, 14, 14), float32], %w: Tensor[(32, 32, 1, 1), float32], %w1: Tensor[(32, 32, 1, 1), float32],\n"
      "          %w2: Tensor[(32, 32, 1, 1), float32]) {\n"
      "  %0 = nn.conv2d(%x, %w, kernel_size=[1, 1]);\n"
      "  %1 = nn.global_avg_pool2d(%0);\n"
      "  %2 = nn.conv2d(%1, %w1, kernel_size=[1, 1]);\n"
      "  %3 = sigmoid(%2);\n"
      "  %4 = multiply(%3, %0);\n"
      "  nn.conv2d(%4, %w2, kernel_size=[1, 1])\n}\n");
  diag d = {0};
  assert_int_equal(pipeline_optimize(g, 16, &d), TEMPER_OK);
  char *p = print_graph(g);
  int to_nchw = count_in(p, "dst_layout=\"NCHW\"");
  if (to_nchw != 2) fprintf(stderr, "%s", p);
  assert_int_equal(to_nchw, 2);   /* the scale (1×1: a copy), and the model's output */
  /* reshaped to the conv2d's channel blocks, whichever the default took */
  assert_true(strstr(p, "newshape=[2, 1, 1, 16]") || strstr(p, "newshape=[1, 1, 1, 32]"));
  free(p);
  temper_graph_destroy(g);
}


/* what a chooser is told of the joins each conv2d's config decides
 * (conv_site.join_loss): at stride 2 the expand sees the depthwise after it
 * and the depthwise its expand, and the default configs (the expand's 1×1
 * template, the depthwise reading its producer's block) make the join where
 * another template or block does not; the 1×1 after a depthwise already
 * joined to its expand sees none (a kernel joins two conv2d). At stride 1
 * only the depthwise → 1×1 join is made. */
typedef struct site_seen {
  int calls;
  int at_stake[4];
  int64_t def_loss[4], other_loss[4];
} site_seen;

static int seen_choose(void *ctx, const char *key, const struct task_space *s, const struct conv_site *site, struct sched_config *out,
                       char *err, size_t n) {
  (void)key, (void)out, (void)err, (void)n;
  site_seen *v = ctx;
  int k = v->calls++;
  if (k >= 4 || !site->join_loss) return 0;
  v->at_stake[k] = 1;
  sched_config def, c;
  config_default_at(s, site->in_block, 1, &def);
  v->def_loss[k] = site->join_loss(site, s, &def);
  v->other_loss[k] = -1;
  for (int pass = 0; pass < 2 && v->other_loss[k] < 0; pass++)   /* another template, else another block */
    for (int64_t i = 0; i < s->size; i++) {
      conv_layouts l;
      if (space_config(s, i, &c) || !space_valid(s, &c)) continue;
      config_layouts(s, &c, site->in_block, &l);
      if (pass == 0 ? c.tmpl == def.tmpl : c.tmpl != def.tmpl || l.in_blk == site->in_block) continue;
      v->other_loss[k] = site->join_loss(site, s, &c);
      break;
    }
  return 0;
}

/* primitive functions of a printed graph that hold two conv2d: joined kernels */
static int joined_kernels(const char *printed) {
  int joined = 0;
  for (const char *q = strstr(printed, "Primitive=1"); q; q = strstr(q + 1, "Primitive=1")) {
    const char *e = strstr(q + 1, "Primitive=1"), *c1 = strstr(q, "nn.conv2d("), *c2 = c1 ? strstr(c1 + 1, "nn.conv2d(") : NULL;
    joined += c2 && (!e || c2 < e);
  }
  return joined;
}

static void test_pipeline_join_sites(void **state) {
  (void)state;
  const char *text[2] = {
      "def @main(%x: Tensor[(1, 16, 56, 56), float32], %w1: Tensor[(96, 16, 1, 1), float32], %b1: Tensor[(96, 1, 1), float32],\n"
      "          %w2: Tensor[(96, 1, 3, 3), float32], %w3: Tensor[(24, 96, 1, 1), float32]) {\n"
      "  %0 = nn.conv2d(%x, %w1);\n  %1 = add(%0, %b1);\n  %2 = clip(%1, a_min=0f, a_max=6f);\n"
      "  %3 = nn.conv2d(%2, %w2, strides=[2, 2], padding=[1, 1, 1, 1], groups=96);\n  %4 = nn.relu(%3);\n"
      "  nn.conv2d(%4, %w3)\n}\n",
      "def @main(%x: Tensor[(1, 16, 56, 56), float32], %w1: Tensor[(96, 16, 1, 1), float32], %b1: Tensor[(96, 1, 1), float32],\n"
      "          %w2: Tensor[(96, 1, 3, 3), float32], %w3: Tensor[(24, 96, 1, 1), float32]) {\n"
      "  %0 = nn.conv2d(%x, %w1);\n  %1 = add(%0, %b1);\n  %2 = clip(%1, a_min=0f, a_max=6f);\n"
      "  %3 = nn.conv2d(%2, %w2, padding=[1, 1, 1, 1], groups=96);\n  %4 = nn.relu(%3);\n"
      "  nn.conv2d(%4, %w3)\n}\n"};
  for (int k = 0; k < 2; k++) {
    temper_graph *g = parse_ok(text[k]);
    site_seen v = {0};
    /* the joins whatever the sizes: stride 2 the expand's, stride 1 the depthwise's */
    pipeline_opts o = {.vec = 16, .choose = seen_choose, .ctx = &v, .pw_fusion_all = k == 0, .dw_fusion_all = k == 1};
    diag d = {0};
    assert_int_equal(pipeline_optimize_with(g, &o, &d), TEMPER_OK);
    assert_int_equal(v.calls, 3);
    int64_t expanded = 96 * 56 * 56;
    if (k == 0) {
      for (int i = 0; i < 2; i++) {   /* the expand and its depthwise: the expanded tensor at stake */
        assert_int_equal(v.at_stake[i], 1);
        assert_int_equal(v.def_loss[i], 0);
        if (v.other_loss[i] != expanded) fail_msg("site %d: another config loses %lld floats", i, (long long)v.other_loss[i]);
      }
      assert_int_equal(v.at_stake[2], 0);   /* its depthwise joined the expand */
    } else {
      /* the expand and the depthwise: no config joins them at stride 1 */
      for (int i = 0; i < 2; i++) assert_int_equal(v.def_loss[i], expanded);
      assert_int_equal(v.at_stake[2], 1);
      assert_int_equal(v.def_loss[2], 0);
      assert_int_equal(v.other_loss[2], expanded);   /* the depthwise's output, as large */
    }
    char *p = print_graph(g);
    int joined = joined_kernels(p);
    assert_int_equal(joined, 1);
    free(p);
    temper_graph_destroy(g);
  }
}

/* model text → its program after sink and fold, the second parameter bound
 * to 1…8 (printed; the caller frees) */
static char *sunk(const char *text) {
  temper_graph *g = parse_ok(text);
  float b[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  float *vals[2] = {NULL, b};
  diag d = {0};
  assert_int_equal(bind_params(g, vals, &d), TEMPER_OK);
  assert_int_equal(typeinfer(g, &d), TEMPER_OK);
  assert_int_equal(sink_transposes(g, &d), TEMPER_OK);
  assert_int_equal(fold_constants(g, &d), TEMPER_OK);
  char *p = print_graph(g);
  temper_graph_destroy(g);
  return p;
}

/* transposes around elementwise ops with constant operands cancel (sink.c);
 * a value of the region used outside it keeps them; a layer norm over
 * NHWC's last axis moves with them, over NCHW's channels */
static void test_pipeline_sink_transposes(void **state) {
  (void)state;
  char *p = sunk("def @main(%x: Tensor[(1, 8, 5, 6), float32], %b: Tensor[(8), float32]) {\n"
                 "  %0 = transpose(%x, axes=[0, 2, 3, 1]);\n  %1 = add(%b, %0);\n  %2 = erf(%1);\n  %3 = multiply(%1, %2);\n"
                 "  transpose(%3, axes=[0, 3, 1, 2])\n}\n");
  if (strstr(p, "transpose")) fprintf(stderr, "%s", p);
  assert_null(strstr(p, "transpose"));
  free(p);
  p = sunk("def @main(%x: Tensor[(1, 8, 5, 6), float32], %b: Tensor[(8), float32]) {\n"
           "  %0 = transpose(%x, axes=[0, 2, 3, 1]);\n  %1 = add(%b, %0);\n  %2 = erf(%1);\n  %3 = multiply(%1, %2);\n"
           "  %4 = transpose(%3, axes=[0, 3, 1, 2]);\n  (%4, %2)\n}\n");
  assert_non_null(strstr(p, "transpose(%x, axes=[0, 2, 3, 1])"));
  free(p);
  p = sunk("def @main(%x: Tensor[(1, 8, 5, 6), float32], %b: Tensor[(8), float32]) {\n"
           "  %0 = transpose(%x, axes=[0, 2, 3, 1]);\n  %1 = nn.layer_norm(%0, axis=-1);\n"
           "  %2 = multiply(%1, %b);\n  transpose(%2, axes=[0, 3, 1, 2])\n}\n");
  assert_null(strstr(p, "transpose"));
  assert_non_null(strstr(p, "nn.layer_norm(%x, axis=1)"));
  free(p);
}

/* the default configs fit the target's caches (pipeline_opts.l1d, .l2), not
 * this machine's: a build for an Intel server core (2 MB of L2) from a
 * machine with 1 MB picks the Intel defaults, and the reverse */
static char *schedule_for_caches(int64_t l2) {
  temper_graph *g = parse_ok("def @main(%x: Tensor[(1, 256, 28, 28), float32], %w: Tensor[(256, 256, 3, 3), float32]) {\n"
                             "  %0 = nn.conv2d(%x, %w, strides=[2, 2], padding=[1, 1, 1, 1]);\n  nn.relu(%0)\n}\n");
  diag d = {0};
  pipeline_opts o = {.vec = 16, .l1d = 48 << 10, .l2 = l2};
  assert_int_equal(pipeline_optimize_with(g, &o, &d), TEMPER_OK);
  char *p = print_graph(g), *q = strstr(p, "schedule=\""), *text = NULL;
  assert_non_null(q);
  q += strlen("schedule=\"");
  text = strndup(q, strcspn(q, "\""));
  free(p);
  temper_graph_destroy(g);
  return text;
}
static void test_pipeline_target_caches(void **state) {
  (void)state;
  conv_workload w = {.N = 1, .C = 256, .H = 28, .W = 28, .K = 256, .R = 3, .S = 3, .sh = 2, .sw = 2, .pt = 1, .pl = 1, .pb = 1,
                     .pr = 1, .dh = 1, .dw = 1, .G = 1};
  char *got[2];
  for (int i = 0; i < 2; i++) {
    int64_t l2 = (int64_t)(1 + i) << 20;
    got[i] = schedule_for_caches(l2);
    task_space sp;
    sched_config def;
    char want[512];
    space_build_for(&w, 16, 48 << 10, l2, &sp);
    assert_int_equal(sp.l2, l2);
    config_default_direct(&sp, &def, 0);   /* %w is not a constant: no Winograd */
    config_short(&sp, &def, want, sizeof want);
    assert_string_equal(got[i], want);
  }
  /* the stride-2 3×3 layer of ResNet-50's stage 4: two vectors by 7 × 2
   * positions on a 2 MB L2 (docs/design.md), other tiles on 1 MB */
  assert_string_not_equal(got[0], got[1]);
  assert_non_null(strstr(got[1], "oc_bn=32,ow_bn=7,oh_bn=2"));
  free(got[0]);
  free(got[1]);
}

/* output blocks by the conv2d's output channels: 32 → NCHW16c, 8 → NCHW8c, 24 → NCHW24c */
static int choose_blocks(void *ctx, const char *key, const struct task_space *s, const struct conv_site *site, struct sched_config *out,
                         char *err, size_t n) {
  (void)ctx, (void)site;
  conv_workload w;
  if (workload_from_key(key, &w)) return 0;
  char text[160];
  snprintf(text, sizeof text, "conv2d_nchwc:ic_bn=16,oc_bn=%d,ow_bn=6,oh_bn=1,unroll_kw=0,order=0,par=0", w.K == 32 ? 16 : w.K == 24 ? 24 : 8);
  return config_parse(s, text, out, err, n) ? -1 : 1;
}

/* A concatenation along the channels takes the block of its fields that
 * converts the fewest floats and divides them all (the first: 8, its two
 * fields of 8 channels in blocks of 8; the second: 16, the first's 16
 * channels in blocks of 8 converting, not the 32 in blocks of 16), and the pool after
 * it keeps it; with no such block (32 channels in blocks of 16, 24 in one
 * of 24) it stays NCHW */
static void test_pipeline_concat_blocks(void **state) {
  (void)state;
  const char *text[2] = {
      "def @main(%x: Tensor[(1, 16, 6, 6), float32], %w1: Tensor[(32, 16, 1, 1), float32], %w2: Tensor[(8, 16, 1, 1), float32],\n"
      "          %w3: Tensor[(8, 16, 3, 3), float32]) {\n"
      "  %0 = nn.conv2d(%x, %w1);\n  %1 = nn.conv2d(%x, %w2);\n  %2 = nn.conv2d(%x, %w3, padding=[1, 1, 1, 1]);\n"
      "  %3 = concatenate((%1, %2), axis=1);\n  %4 = concatenate((%0, %3), axis=1);\n"
      "  nn.max_pool2d(%4, pool_size=[3, 3], padding=[1, 1])\n}",
      "def @main(%x: Tensor[(1, 16, 6, 6), float32], %w1: Tensor[(32, 16, 1, 1), float32], %w2: Tensor[(24, 16, 1, 1), float32]) {\n"
      "  %0 = nn.conv2d(%x, %w1);\n  %1 = nn.conv2d(%x, %w2);\n  %2 = concatenate((%0, %1), axis=-3);\n"
      "  nn.max_pool2d(%2, pool_size=[3, 3], padding=[1, 1])\n}"};
  for (int k = 0; k < 2; k++) {
    temper_graph *g = parse_ok(text[k]);
    pipeline_opts o = {.vec = 16, .choose = choose_blocks};
    diag d = {0};
    assert_int_equal(pipeline_optimize_with(g, &o, &d), TEMPER_OK);
    char *p = print_graph(g);
    if (k == 0) {
      assert_non_null(strstr(p, "src_layout=\"NCHW8c\", dst_layout=\"NCHW16c\""));
      assert_null(strstr(p, "dst_layout=\"NCHW8c\""));
      assert_non_null(strstr(p, "layout=\"NCHW16c\")"));   /* the pool */
      assert_non_null(strstr(p, "concatenate((%"));
      assert_non_null(strstr(p, "axis=1)"));
    } else {
      assert_null(strstr(p, "layout=\"NCHW8c\")"));
      assert_null(strstr(p, "layout=\"NCHW16c\")"));   /* the pool reads NCHW */
      assert_non_null(strstr(p, "axis=-3)"));
    }
    free(p);
    temper_graph_destroy(g);
  }
}

/* the depthwise → 1×1 join follows the target's L2 (pipeline_opts.l2), not
 * this machine's: joined where the depthwise's output (294 KB here) would
 * not stay in half of it */
static void test_pipeline_join_follows_target_l2(void **state) {
  (void)state;
  const char *text =
      "def @main(%x: Tensor[(1, 16, 28, 28), float32], %w1: Tensor[(96, 16, 1, 1), float32], %w2: Tensor[(96, 1, 3, 3), float32],\n"
      "          %w3: Tensor[(24, 96, 1, 1), float32]) {\n"
      "  %0 = nn.conv2d(%x, %w1);\n  %1 = nn.relu(%0);\n  %2 = nn.conv2d(%1, %w2, padding=[1, 1, 1, 1], groups=96);\n"
      "  %3 = nn.relu(%2);\n  nn.conv2d(%3, %w3)\n}\n";
  for (int i = 0; i < 2; i++) {
    temper_graph *g = parse_ok(text);
    pipeline_opts o = {.vec = 16, .l1d = 48 << 10, .l2 = i ? 4 << 20 : 256 << 10};
    diag d = {0};
    assert_int_equal(pipeline_optimize_with(g, &o, &d), TEMPER_OK);
    char *p = print_graph(g);
    int joined = joined_kernels(p);
    if (joined != (i == 0)) fail_msg("L2 %lld: %d joined kernels\n%s", (long long)o.l2, joined, p);
    free(p);
    temper_graph_destroy(g);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pipeline_resnet_block),
      cmocka_unit_test(test_pipeline_winograd),
      cmocka_unit_test(test_pipeline_squeeze_excite),
      cmocka_unit_test(test_pipeline_join_sites),
      cmocka_unit_test(test_pipeline_sink_transposes),
      cmocka_unit_test(test_pipeline_target_caches),
      cmocka_unit_test(test_pipeline_concat_blocks),
      cmocka_unit_test(test_pipeline_join_follows_target_l2),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
