/* test_conv_configs.c: every schedule config computes the reference result.
 * A property test: for each conv2d shape (ResNet-50's layers, as in
 * bench/workloads.h, and odd ones), 24 random valid configs of the task's
 * space, each in a randomly chosen setting (NCHW or blocked input, with or
 * without an epilogue, NCHW or blocked output), against the reference
 * interpreter. Seeded: a failure prints the seed, shape and config. */
#include <math.h>
#include "engine.h"
#include "helpers.h"
#include "space.h"

/* every config is compiled by LLVM, which dominates the time; under the
 * sanitizers (a check of temper's own memory use, with the full coverage in
 * the plain build) fewer configs per shape keep the suite inside its budget */
#ifdef TEMPER_SANITIZED
enum { CONFIGS_PER_SHAPE = 6 };
#else
enum { CONFIGS_PER_SHAPE = 24 };
#endif

typedef struct shape_case { const char *name; int C, H, W, K, R, S, sh, sw, pt, pl, pb, pr, dh, G; } shape_case;

static const shape_case cases[] = {
    /* ResNet-50 layers (bench/workloads.h) */
    {"stem7x7", 3, 224, 224, 64, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1},
    {"s2_1x1_64", 64, 56, 56, 64, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1},
    {"s2_3x3_64", 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {"s2_1x1_256_64", 256, 56, 56, 64, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1},
    {"s3_3x3_128_s2", 128, 56, 56, 128, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
    {"s3_ds_256_512_s2", 256, 56, 56, 512, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1},
    {"s3_3x3_128", 128, 28, 28, 128, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {"s4_3x3_256_s2", 256, 28, 28, 256, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
    {"s4_1x1_1024_256", 1024, 14, 14, 256, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1},
    {"s5_3x3_512_s2", 512, 14, 14, 512, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
    {"s5_1x1_512_2048", 512, 7, 7, 2048, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1},
    {"s5_3x3_512", 512, 7, 7, 512, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    /* odd ones */
    {"c3_k10_w7", 3, 7, 7, 10, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {"c10_k3_w13_s2", 10, 13, 13, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
    {"c10_k20_w13_dil2", 10, 13, 13, 20, 3, 3, 1, 1, 2, 2, 2, 2, 2, 1},
    {"c16_k32_asym_pad", 16, 9, 13, 32, 3, 5, 1, 1, 0, 1, 2, 3, 1, 1},
    {"c32_k48_groups2", 32, 14, 14, 48, 3, 3, 1, 1, 1, 1, 1, 1, 1, 2},
    /* groups narrower than a vector (ResNeXt's 4 channels): blocks spanning groups among the configs (8-channel
     * groups at stride 2: test_group_spanning_blocks; one case here for the suite's time) */
    {"g4_c64_w13", 64, 13, 13, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 16},
    {"depthwise_c32", 32, 14, 13, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 32},
    {"depthwise_c48_s2", 48, 13, 13, 48, 3, 3, 2, 2, 1, 1, 1, 1, 1, 48},
    {"1x1_c24_k48_w7", 24, 7, 7, 48, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1},
    /* output channels no vector divides: blocks ending in part of a vector (24 = 16 + 8, 40) */
    {"1x1_c96_k24_w14", 96, 14, 14, 24, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1},
    {"c20_k40_w9", 20, 9, 9, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    /* 1×1 position tiles within a row (m_bn dividing 7), tested at run time (3), across row ends (8+) */
    {"1x1_c16_k32_w13_s2", 16, 13, 13, 32, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1},
    /* odd ones where Winograd applies: widths 7 and 13, channels 3 and 10, padding 0 and 2 */
    {"wino_c10_k16_w13_p0", 10, 13, 13, 16, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1},
    {"wino_c3_k10_h7_w13_p2", 3, 7, 13, 10, 3, 3, 1, 1, 2, 2, 2, 2, 1, 1},
    {"wino_c16_k10_w7_asym", 16, 7, 7, 10, 3, 3, 1, 1, 0, 2, 2, 0, 1, 1},
    /* Winograd at stride 2 (alpha 2m + 1): odd height, even width, padding on two sides only */
    {"wino_s2_c16_k24_h9_w14_asym", 16, 9, 14, 24, 3, 3, 2, 2, 0, 1, 1, 0, 1, 1},
    /* defaults of wider layers on larger images (the first config of a case is its default): C·K past 256²
     * in two tile blocks of up to 56 tiles, the second partial (64 tiles); C·K past 128² at tile 4 (49 tiles) */
    {"wide_c320_k320_w16", 320, 16, 16, 320, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {"wino4_c160_k160_w28", 160, 28, 28, 160, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
};

/* worst relative error seen per Winograd tile and stride (wino_slot), reported at the end */
static double wino_worst[6];
static int wino_count[6];
static const int wino_tile[6] = {2, 4, 6, 2, 3, 4}, wino_stride[6] = {1, 1, 1, 2, 2, 2};
static int wino_slot(int m, int s) { return s == 1 ? m / 2 - 1 : 3 + m - 2; }

typedef struct fixed { const char *key; sched_config cfg; } fixed;

static int choose_fixed(void *ctx, const char *key, const struct task_space *s, const struct conv_site *site, struct sched_config *out, char *err, size_t n) {
  (void)site;
  (void)s;
  (void)err;
  (void)n;
  fixed *fx = ctx;
  if (strcmp(key, fx->key)) return 0;
  *out = fx->cfg;
  return 1;
}

static int part = -1;   /* argv[1]: run only the cases (and fixed configs) with index % 2 == part */

static void run_case(const shape_case *sc, uint64_t seed) {
  float *ref_cache[4] = {0};   /* per setting: the reference does not depend on the config */
  conv_workload w = {1, sc->C, sc->H, sc->W, sc->K, sc->R, sc->S, sc->sh, sc->sw, sc->pt, sc->pl, sc->pb, sc->pr, sc->dh, sc->dh, sc->G};
  task_space sp;
  space_build(&w, engine->target.vec, &sp);
  char key[256];
  workload_key(&w, key, sizeof key);
  int64_t OH = workload_out(&w, 2), OW = workload_out(&w, 3);
  pcg32 rng;
  pcg32_seed(&rng, seed, 7);
  /* under TEMPER_TEST_TARGET (AVX2 on an AVX-512 machine) a third as many:
   * that run adds other tiles and blocks, the host's run the full count */
  int configs = getenv("TEMPER_TEST_TARGET") ? CONFIGS_PER_SHAPE / 3 : CONFIGS_PER_SHAPE;
  for (int k = 0; k < configs; k++) {
    sched_config cfg;
    const tmpl_space *wt = space_tmpl(&sp, TMPL_WINOGRAD);
    if (wt && k % 2)   /* half the configs from the Winograd template where it applies */
      do space_config(&sp, space_tmpl_point(wt, (int64_t)(pcg32_next(&rng) % (uint32_t)wt->size)), &cfg);
      while (!space_valid(&sp, &cfg));
    else
      do space_config(&sp, (int64_t)(pcg32_next(&rng) % (uint32_t)sp.size), &cfg);
      while (!space_valid(&sp, &cfg));
    if (k == 0) config_default(&sp, &cfg);
    int setting = (int)(pcg32_next(&rng) % 4);   /* bit 0: epilogue; bit 1: blocked output (pool after) */
    int block_in = (int)(pcg32_next(&rng) % 2);
    char text[2048];
    int m = snprintf(text, sizeof text,
                     "def @main(%%x: Tensor[(1, %d, %d, %d), float32], %%w: Tensor[(%d, %d, %d, %d), float32], "
                     "%%b: Tensor[(%d, 1, 1), float32], %%r: Tensor[(1, %d, %lld, %lld), float32]) {\n"
                     "  %%0 = nn.conv2d(%%x, %%w, strides=[%d, %d], padding=[%d, %d, %d, %d], dilation=[%d, %d], groups=%d);\n",
                     sc->C, sc->H, sc->W, sc->K, sc->C / sc->G, sc->R, sc->S, sc->K, sc->K, (long long)OH, (long long)OW, sc->sh,
                     sc->sw, sc->pt, sc->pl, sc->pb, sc->pr, sc->dh, sc->dh, sc->G);
    const char *last = "%0";
    if (setting & 1) {
      m += snprintf(text + m, sizeof text - (size_t)m, "  %%1 = add(%%0, %%b);\n  %%2 = add(%%1, %%r);\n  %%3 = clip(%%2, a_min=-0.5f, a_max=0.7f);\n");
      last = "%3";
    }
    if (setting & 2) snprintf(text + m, sizeof text - (size_t)m, "  nn.max_pool2d(%s)\n}\n", last);
    else snprintf(text + m, sizeof text - (size_t)m, "  %s\n}\n", last);
    temper_graph *g = parse_ok(text);
    int np = g->main->n_params;
    float *vals[4];
    for (int i = 0; i < np; i++) {
      node *p = g->main->params[i];
      vals[i] = malloc(sizeof(float) * (size_t)shape_numel(&p->ty.shape));
      data_random_param(vals[i], &p->ty.shape, seed * 31 + (uint64_t)i, i == 0, 0);
    }
    diag d = {0};
    if (!ref_cache[setting]) {
      float **ref = NULL;
      int n_ref = 0;
      assert_int_equal(ref_eval_func(g->main, (const float *const *)vals, &ref, &n_ref, &d), TEMPER_OK);
      ref_cache[setting] = ref[0];
      free(ref);
    }
    const float *ref0 = ref_cache[setting];
    float *input = vals[0];
    vals[0] = NULL;
    assert_int_equal(bind_params(g, vals, &d), TEMPER_OK);
    fixed fx = {key, cfg};
    pipeline_opts o = {.vec = engine->target.vec, .choose = choose_fixed, .ctx = &fx, .block_inputs = block_in};
    temper_status s = pipeline_optimize_with(g, &o, &d);
    exec *x = NULL;
    if (!s) s = exec_create(engine, g, 1 + (k % 2), &x, &d);
    char json[512];
    config_json(&sp, &cfg, json, sizeof json);
    if (s) fprintf(stderr, "%s seed %llu config %s: %s\n", sc->name, (unsigned long long)seed, json, d.msg);
    assert_int_equal(s, TEMPER_OK);
    exec_set_input(x, 0, input);
    exec_run(x);
    int64_t cnt = shape_numel(&x->output_shapes[0]);
    const float *got = exec_output(x, 0);
    double err = 0, scale = 1e-6;
    for (int64_t i = 0; i < cnt; i++) {
      double e = fabs((double)got[i] - ref0[i]);
      if (!(e <= err)) err = e;
      if (fabs(ref0[i]) > scale) scale = fabs(ref0[i]);
    }
    /* Winograd's error grows with the tile: its documented bound (compiler/winograd.c) */
    int tile = cfg.tmpl == TMPL_WINOGRAD ? (int)cfg_get(&sp, &cfg, K_TILE) : 0;
    double limit = tile ? winograd_tolerance(tile, sc->sh) : 1e-4;
    if (tile) {
      int slot = wino_slot(tile, sc->sh);
      if (err / scale > wino_worst[slot]) wino_worst[slot] = err / scale;
      wino_count[slot]++;
    }
    if (!(err / scale < limit))
      fprintf(stderr, "%s seed %llu setting %d blocked-input %d config %s: relative error %g (limit %g)\n", sc->name,
              (unsigned long long)seed, setting, block_in, json, err / scale, limit);
    assert_true(err / scale < limit);
    exec_destroy(x);
    free(input);
    for (int i = 1; i < np; i++) free(vals[i]);
    temper_graph_destroy(g);
  }
  for (int i = 0; i < 4; i++) free(ref_cache[i]);
}

static void test_random_configs_match_reference(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    if (part < 0 || (int)(i % 2) == part) run_case(&cases[i], 1000 + i);
  for (int t = 0; t < 6; t++)
    if (wino_count[t])
      printf("winograd tile %d stride %d: worst relative error %.2e over %d configs (bound %.0e)\n", wino_tile[t], wino_stride[t],
             wino_worst[t], wino_count[t], winograd_tolerance(wino_tile[t], wino_stride[t]));
}

/* index → config → index round-trips; text forms parse back; bad configs are refused by name */
static void test_space_round_trips(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const shape_case *sc = &cases[i];
    conv_workload w = {1, sc->C, sc->H, sc->W, sc->K, sc->R, sc->S, sc->sh, sc->sw, sc->pt, sc->pl, sc->pb, sc->pr, sc->dh, sc->dh, sc->G};
    task_space sp;
    space_build(&w, 16, &sp);
    assert_true(sp.size > 0);
    for (int64_t idx = 0; idx < sp.size; idx += 1 + sp.size / 97) {
      sched_config c, c2;
      assert_int_equal(space_config(&sp, idx, &c), 0);
      assert_int_equal(space_index(&sp, &c), idx);
      if (!space_valid(&sp, &c)) continue;
      char json[512], shrt[512], err[256];
      config_json(&sp, &c, json, sizeof json);
      assert_int_equal(config_parse(&sp, json, &c2, err, sizeof err), 0);
      assert_int_equal(space_index(&sp, &c2), idx);
      config_short(&sp, &c, shrt, sizeof shrt);
      assert_int_equal(config_parse(&sp, shrt, &c2, err, sizeof err), 0);
      assert_int_equal(space_index(&sp, &c2), idx);
    }
    sched_config def;
    config_default(&sp, &def);
    assert_true(space_valid(&sp, &def));
  }
  conv_workload w = {1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  task_space sp;
  space_build(&w, 16, &sp);
  sched_config c;
  char err[256];
  assert_int_not_equal(config_parse(&sp, "{\"template\":\"conv2d_nchwc\",\"ic_bn\":16,\"oc_bn\":24,\"ow_bn\":8,\"oh_bn\":1,\"unroll_kw\":true,\"order\":0,\"par\":0}", &c, err, sizeof err), 0);
  assert_non_null(strstr(err, "knob oc_bn: 24 is not a candidate"));
  assert_int_not_equal(config_parse(&sp, "{\"template\":\"conv2d_nchwc\",\"ic_bn\":16,\"oc_bn\":16,\"ow_bn\":8,\"oh_bn\":1,\"unroll_kw\":true,\"order\":0,\"par\":0,\"tile_x\":4}", &c, err, sizeof err), 0);
  assert_non_null(strstr(err, "has no knob \"tile_x\""));
  assert_int_not_equal(config_parse(&sp, "{\"template\":\"conv2d_nchwc\",\"ic_bn\":16}", &c, err, sizeof err), 0);
  assert_non_null(strstr(err, "knob oc_bn is missing"));
  assert_int_not_equal(config_parse(&sp, "{\"template\":\"conv2d_1x1\"}", &c, err, sizeof err), 0);
  assert_non_null(strstr(err, "does not apply"));
  assert_int_not_equal(config_parse(&sp, "{\"template\":\"winograd\"}", &c, err, sizeof err), 0);
  assert_non_null(strstr(err, "unknown template"));
  assert_int_not_equal(config_parse(&sp, "{\"template\": ", &c, err, sizeof err), 0);
  assert_non_null(strstr(err, "bad JSON at line 1"));
  assert_int_not_equal(config_parse(&sp, "conv2d_nchwc:ic_bn=16,oc_bn=64,ow_bn=28,oh_bn=4,unroll_kw=1,order=0,par=0", &c, err, sizeof err), 0);
  assert_non_null(strstr(err, "vector registers"));
  /* the same workload gives the same key */
  char k1[256], k2[256];
  workload_key(&w, k1, sizeof k1);
  workload_key(&sp.w, k2, sizeof k2);
  assert_string_equal(k1, k2);
  assert_string_equal(k1, "conv2d_n1_c64_h56_w56_k64_r3s3_st1x1_p1x1x1x1_d1x1_g1_f32_nchw");
}

/* oc_split and then t_blocks were appended to conv2d_winograd after records
 * of it existed: an older config text means oc_split=1 and t_blocks=1 with
 * the index it always had; the
 * knob's own limits are refused with a reason; the split decides how the
 * kernel divides over threads */
static void test_appended_knob_keeps_records(void **state) {
  (void)state;
  conv_workload w = {1, 256, 14, 14, 256, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  task_space sp;
  space_build(&w, 16, &sp);
  const tmpl_space *wt = space_tmpl(&sp, TMPL_WINOGRAD);
  assert_non_null(wt);
  assert_string_equal(wt->knobs[wt->n_knobs - 2].name, "oc_split");
  assert_string_equal(wt->knobs[wt->n_knobs - 1].name, "t_blocks");
  sched_config old, now;
  char err[512];
  const char *before = "{\"template\":\"conv2d_winograd\",\"tile\":2,\"ic_bn\":8,\"oc_bn\":32,\"t_bn\":14,\"par\":0,\"stage\":1,\"unroll_c\":false}";
  assert_int_equal(config_parse(&sp, before, &old, err, sizeof err), 0);
  assert_int_equal(cfg_get(&sp, &old, K_OC_SPLIT), 1);
  assert_int_equal(cfg_get(&sp, &old, K_T_BLK), 1);
  /* its index is what it was when oc_split did not exist: the radix of the
   * first seven knobs, the places of oc_split and t_blocks contributing 0 */
  int64_t idx = 0, radix = 1;
  for (int i = 0; i < wt->n_knobs - 2; i++) {
    int p = 0;
    while (wt->knobs[i].vals[p] != old.v[i]) p++;
    idx += p * radix;
    radix *= wt->knobs[i].n;
  }
  assert_int_equal(space_index(&sp, &old), wt->offset + idx);
  assert_true(config_splits_rows(&sp, &old));
  assert_int_equal(config_parse(&sp, "conv2d_winograd:tile=2,ic_bn=8,oc_bn=32,t_bn=14,par=0,stage=1,unroll_c=0,oc_split=2", &now, err, sizeof err), 0);
  assert_int_equal(space_index(&sp, &now), wt->offset + idx + 1 * radix);
  assert_false(config_splits_rows(&sp, &now));
  assert_int_equal(config_parse(&sp, "conv2d_winograd:tile=2,ic_bn=8,oc_bn=32,t_bn=14,par=0,stage=1,unroll_c=0,oc_split=2,t_blocks=2", &now, err,
                                sizeof err), 0);
  assert_int_equal(space_index(&sp, &now), wt->offset + idx + 1 * radix + 1 * radix * 3);
  /* par=1 already splits by oc-block */
  assert_int_not_equal(config_parse(&sp, "conv2d_winograd:tile=2,ic_bn=8,oc_bn=32,t_bn=14,par=1,stage=0,unroll_c=0,oc_split=2", &now, err, sizeof err), 0);
  assert_non_null(strstr(err, "oc_split"));
  /* 64 output channels in blocks of 32 cannot make 4 groups */
  conv_workload w64 = {1, 64, 14, 14, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  task_space sp64;
  space_build(&w64, 16, &sp64);
  assert_int_not_equal(config_parse(&sp64, "conv2d_winograd:tile=2,ic_bn=8,oc_bn=32,t_bn=7,par=0,stage=0,unroll_c=0,oc_split=4", &now, err, sizeof err), 0);
  assert_non_null(strstr(err, "oc_split does not divide"));
  assert_int_equal(config_parse(&sp64, "conv2d_winograd:tile=2,ic_bn=8,oc_bn=32,t_bn=7,par=0,stage=0,unroll_c=0,oc_split=2", &now, err, sizeof err), 0);
  assert_int_not_equal(config_parse(&sp, "conv2d_winograd:tile=2,ic_bn=8,oc_bn=32,t_bn=14,par=0,stage=1,unroll_c=0,oc_split=3", &now, err, sizeof err), 0);
  assert_non_null(strstr(err, "knob oc_split: 3 is not a candidate"));
  /* a knob that is not appended stays required */
  assert_int_not_equal(config_parse(&sp, "{\"template\":\"conv2d_winograd\",\"tile\":2,\"ic_bn\":8,\"oc_bn\":32,\"t_bn\":14,\"par\":0,\"stage\":1}", &now, err, sizeof err), 0);
  assert_non_null(strstr(err, "knob unroll_c is missing"));
  /* the canonical text names it */
  char json[512];
  config_json(&sp, &old, json, sizeof json);
  assert_non_null(strstr(json, "\"oc_split\":1,\"t_blocks\":1}"));
}

/* oc_bn candidates added to the direct templates after records existed
 * (24 for 24 output channels, where no 16-float vector divides them): the
 * configs that existed keep their indices — the records of the shipped
 * Intel log, config and index as measured — and the added ones come after
 * every older point of the task */
static void test_added_block_keeps_records(void **state) {
  (void)state;
  static const struct { conv_workload w; const char *config; int64_t index; } recs[] = {
      {{1, 144, 56, 56, 24, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},
       "{\"template\":\"conv2d_nchwc\",\"ic_bn\":12,\"oc_bn\":12,\"ow_bn\":28,\"oh_bn\":1,\"unroll_kw\":false,\"order\":0,\"par\":1}", 23199},
      {{1, 144, 56, 56, 24, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},
       "{\"template\":\"conv2d_nchwc\",\"ic_bn\":18,\"oc_bn\":12,\"ow_bn\":28,\"oh_bn\":1,\"unroll_kw\":true,\"order\":1,\"par\":1}", 39581},
      {{1, 72, 28, 28, 24, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},
       "{\"template\":\"conv2d_1x1\",\"ic_bn\":8,\"oc_bn\":12,\"m_bn\":28,\"unroll_ic\":false,\"loop\":1}", 40419},
      {{1, 96, 1, 1, 24, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},
       "{\"template\":\"conv2d_1x1\",\"ic_bn\":12,\"oc_bn\":12,\"m_bn\":1,\"unroll_ic\":true,\"loop\":0}", 765},
  };
  char err[512];
  for (size_t i = 0; i < sizeof recs / sizeof *recs; i++) {
    task_space sp;
    space_build(&recs[i].w, 16, &sp);
    sched_config c;
    assert_int_equal(config_parse(&sp, recs[i].config, &c, err, sizeof err), 0);
    assert_int_equal(space_index(&sp, &c), recs[i].index);
  }
  conv_workload w = {1, 144, 56, 56, 24, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1};
  task_space sp;
  space_build(&w, 16, &sp);
  const tmpl_space *t = space_tmpl(&sp, TMPL_1X1);
  int64_t base = 0;
  for (int i = 0; i < sp.n_tmpl; i++) base += sp.t[i].base;
  assert_true(base < sp.size);
  sched_config c;
  assert_int_equal(config_parse(&sp, "conv2d_1x1:ic_bn=16,oc_bn=24,m_bn=14,unroll_ic=0,loop=1", &c, err, sizeof err), 0);
  assert_true(space_index(&sp, &c) >= t->ext_offset && space_index(&sp, &c) >= base);
  assert_true(space_valid(&sp, &c));
  /* every point once: the template's i-th point round-trips, the regions tile the space */
  int64_t seen = 0;
  for (int k = 0; k < sp.n_tmpl; k++)
    for (int64_t i = 0; i < sp.t[k].size; i++) {
      int64_t idx = space_tmpl_point(&sp.t[k], i);
      assert_int_equal(space_config(&sp, idx, &c), 0);
      assert_int_equal(c.tmpl, sp.t[k].tmpl);
      assert_int_equal(space_index(&sp, &c), idx);
      seen++;
    }
  assert_int_equal(seen, sp.size);
  /* 24 in 16 + 8 lanes: 14 positions fill 28 accumulators, as 16-channel blocks would */
  assert_int_not_equal(config_parse(&sp, "conv2d_1x1:ic_bn=16,oc_bn=24,m_bn=16,unroll_ic=0,loop=1", &c, err, sizeof err), 0);
  assert_non_null(strstr(err, "vector registers"));
  /* with 8-float vectors 24 is three whole ones: nothing added */
  space_build(&w, 8, &sp);
  for (int k = 0; k < sp.n_tmpl; k++) assert_int_equal(sp.t[k].size, sp.t[k].base);
}

/* blocks ending in part of a vector, in every template that offers them,
 * against the reference: with a bias, a residual input and a clip (their
 * loads masked like the weights'), into blocked and NCHW outputs (the
 * transform after it fused: a strided store), at one and two threads */
static void test_partial_vector_blocks_match_reference(void **state) {
  (void)state;
  static const struct { int C, HW, K, R; const char *cfg; } cases2[] = {
      {96, 14, 24, 1, "conv2d_1x1:ic_bn=16,oc_bn=24,m_bn=14,unroll_ic=0,loop=1"},
      {96, 14, 24, 1, "conv2d_1x1:ic_bn=32,oc_bn=24,m_bn=5,unroll_ic=1,loop=0"},
      {20, 9, 40, 3, "conv2d_nchwc:ic_bn=4,oc_bn=40,ow_bn=3,oh_bn=2,unroll_kw=1,order=0,par=0"},
      {20, 9, 56, 3, "conv2d_nchwc:ic_bn=20,oc_bn=56,ow_bn=7,oh_bn=1,unroll_kw=0,order=1,par=1"},
      /* ShuffleNet's: 58 = 3 vectors + 10 lanes, 29 = 16 + 13 */
      {58, 9, 58, 1, "conv2d_1x1:ic_bn=58,oc_bn=58,m_bn=6,unroll_ic=0,loop=1"},
      {20, 9, 29, 3, "conv2d_nchwc:ic_bn=20,oc_bn=29,ow_bn=7,oh_bn=1,unroll_kw=1,order=0,par=0"},
  };
  if (engine->target.vec < 16) skip();
  for (size_t i = 0; i < sizeof cases2 / sizeof *cases2; i++) {
    if (part >= 0 && (int)(i % 2) != part) continue;
    int C = cases2[i].C, HW = cases2[i].HW, K = cases2[i].K, R = cases2[i].R;
    conv_workload w = {1, C, HW, HW, K, R, R, 1, 1, R / 2, R / 2, R / 2, R / 2, 1, 1, 1};
    task_space sp;
    space_build(&w, engine->target.vec, &sp);
    char key[256], err[512], text[1024];
    workload_key(&w, key, sizeof key);
    fixed fx = {key, {0}};
    assert_int_equal(config_parse(&sp, cases2[i].cfg, &fx.cfg, err, sizeof err), 0);
    pipeline_opts o = {.vec = engine->target.vec, .choose = choose_fixed, .ctx = &fx, .block_inputs = (int)(i % 2)};
    for (int pool = 0; pool < 2; pool++) {
      snprintf(text, sizeof text,
               "def @main(%%x: Tensor[(1, %d, %d, %d), float32], %%w: Tensor[(%d, %d, %d, %d), float32], %%b: Tensor[(%d, 1, 1), float32], "
               "%%r: Tensor[(1, %d, %d, %d), float32]) {\n"
               "  %%0 = nn.conv2d(%%x, %%w, padding=[%d, %d, %d, %d]);\n  %%1 = add(%%0, %%b);\n  %%2 = add(%%1, %%r);\n"
               "  %%3 = clip(%%2, a_min=-0.5f, a_max=0.7f);\n  %s\n}\n",
               C, HW, HW, K, C, R, R, K, K, HW, HW, R / 2, R / 2, R / 2, R / 2, pool ? "nn.max_pool2d(%3)" : "%3");
      check_against_reference_with(text, 1 + pool, &o, 1e-4);
    }
  }
}


/* parses config text in sp into *c and checks where its index lies: among
 * the template's points that existed before candidates were added (added
 * 0), or after every template's (added 1) */
static void expect_region(const task_space *sp, conv_tmpl tm, const char *text, int added, sched_config *c) {
  char err[512];
  const tmpl_space *t = space_tmpl(sp, tm);
  assert_non_null(t);
  if (config_parse(sp, text, c, err, sizeof err)) fail_msg("%s: %s", text, err);
  int64_t i = space_index(sp, c);
  if (added) assert_true(i >= t->ext_offset);
  else assert_true(i >= t->offset && i < t->offset + t->base);
}

/* A second generation of blocks ending in part of a vector, any size
 * above a vector, only where none of the first (multiples of 8) divides
 * the channels, so no record holds an added candidate of that knob: 58 =
 * 2·29 channels take 29 and 58 (the records' blocks of 1 and 2 keep their
 * indices, in the base region), 40 keeps its one added block (40, not
 * 20), 60 takes 20, 30 and 60; the depthwise template the second
 * generation only. Its blocks
 * against the reference: 58 and 29 in 16-lane vectors, the last masked. */
static void test_any_tail_blocks(void **state) {
  (void)state;
  char err[512];
  conv_workload w58 = {1, 58, 28, 28, 58, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1};
  task_space sp;
  space_build(&w58, 16, &sp);
  sched_config c;
  expect_region(&sp, TMPL_1X1, "conv2d_1x1:ic_bn=2,oc_bn=2,m_bn=14,unroll_ic=0,loop=1", 0, &c);
  expect_region(&sp, TMPL_1X1, "conv2d_1x1:ic_bn=2,oc_bn=58,m_bn=6,unroll_ic=0,loop=1", 1, &c);
  assert_int_equal(config_parse(&sp, "conv2d_1x1:ic_bn=2,oc_bn=29,m_bn=6,unroll_ic=0,loop=1", &c, err, sizeof err), 0);
  conv_workload w40 = {1, 16, 14, 14, 40, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1};
  space_build(&w40, 16, &sp);
  assert_int_equal(config_parse(&sp, "conv2d_1x1:ic_bn=16,oc_bn=40,m_bn=6,unroll_ic=0,loop=1", &c, err, sizeof err), 0);
  assert_int_not_equal(config_parse(&sp, "conv2d_1x1:ic_bn=16,oc_bn=20,m_bn=6,unroll_ic=0,loop=1", &c, err, sizeof err), 0);
  conv_workload w60 = {1, 16, 14, 14, 60, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1};
  space_build(&w60, 16, &sp);
  for (int b = 20; b <= 60; b += 10) {
    char text[128];
    snprintf(text, sizeof text, "conv2d_1x1:ic_bn=16,oc_bn=%d,m_bn=6,unroll_ic=0,loop=1", b);
    assert_int_equal(config_parse(&sp, text, &c, err, sizeof err), b == 40 || b == 50 ? -1 : 0);
  }
  conv_workload dw = {1, 58, 14, 14, 58, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 58};
  space_build(&dw, 16, &sp);
  assert_int_equal(config_parse(&sp, "conv2d_depthwise:c_bn=58,ow_bn=4,unroll_kw=1,par=0", &c, err, sizeof err), 0);
  /* but not the first generation: MobileNetV3's 72-channel depthwise keeps blocks of 8 (its join with the 1×1 after it) */
  conv_workload dw72 = {1, 72, 28, 28, 72, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 72};
  space_build(&dw72, 16, &sp);
  assert_int_not_equal(config_parse(&sp, "conv2d_depthwise:c_bn=24,ow_bn=4,unroll_kw=1,par=0", &c, err, sizeof err), 0);
  assert_int_equal(sp.t[0].size, sp.t[0].base);
  /* the depthwise in blocks of 58 and 29 against the reference, its input converted to them */
  if (engine->target.vec < 16) skip();
  static const char *cfgs[] = {"conv2d_depthwise:c_bn=58,ow_bn=4,unroll_kw=1,par=0", "conv2d_depthwise:c_bn=29,ow_bn=3,unroll_kw=0,par=1"};
  for (int i = 0; i < 2; i++) {
    space_build(&dw, engine->target.vec, &sp);
    char key[256];
    workload_key(&dw, key, sizeof key);
    fixed fx = {key, {0}};
    assert_int_equal(config_parse(&sp, cfgs[i], &fx.cfg, err, sizeof err), 0);
    pipeline_opts o = {.vec = engine->target.vec, .choose = choose_fixed, .ctx = &fx};
    const char *text = "def @main(%x: Tensor[(1, 58, 14, 14), float32], %w: Tensor[(58, 1, 3, 3), float32], %b: Tensor[(58, 1, 1), float32]) {\n"
                       "  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], groups=58);\n  %1 = add(%0, %b);\n  nn.relu(%1)\n}\n";
    check_against_reference_with(text, 1 + i, &o, 1e-4);
  }
}

/* oc_split=2 (channel groups outermost) and blocks of several register
 * tiles compute the reference result (the splits at one and two threads,
 * the blocks at two), on a layer
 * whose 49 tiles do not halve: blocks of 4 × 12 tiles (48 + 1), of 2 × 7
 * (49 = 3 · 14 + 7) and, at tile 4 (16 tiles), of 2 × 3 (6 + 6 + 3 + 1),
 * with stage, par and unroll; and the default of ResNet-50's 14×14 layers
 * on a 1 MB L2: one block of 4 × 14 (49 = 3 · 14 + 7) in two groups */
static void test_winograd_oc_split_matches_reference(void **state) {
  (void)state;
  shape_case sc = {"s4_3x3_256_small", 64, 14, 14, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
  conv_workload w = {1, sc.C, sc.H, sc.W, sc.K, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  task_space sp;
  space_build(&w, engine->target.vec, &sp);
  char key[256], err[512];
  workload_key(&w, key, sizeof key);
  /* [16-float vectors, 28 accumulators][8-float vectors, 12]: the same
   * block structures within AVX2's register tile (49 = 4 · 12 + 1 and
   * 3 · 14 + 7 with one-vector blocks of 8 channels; tile 4 in 6 + 6 + 4) */
  static const char *const cfgs_by_vec[2][6] = {
      {"conv2d_winograd:tile=2,ic_bn=8,oc_bn=16,t_bn=14,par=0,stage=1,unroll_c=0,oc_split=2",
       "conv2d_winograd:tile=4,ic_bn=16,oc_bn=16,t_bn=7,par=0,stage=0,unroll_c=1,oc_split=4",
       "conv2d_winograd:tile=2,ic_bn=8,oc_bn=16,t_bn=12,par=0,stage=1,unroll_c=0,oc_split=2,t_blocks=4",
       "conv2d_winograd:tile=2,ic_bn=16,oc_bn=32,t_bn=7,par=1,stage=0,unroll_c=1,oc_split=1,t_blocks=2",
       "conv2d_winograd:tile=4,ic_bn=8,oc_bn=16,t_bn=3,par=0,stage=0,unroll_c=0,oc_split=1,t_blocks=2",
       "conv2d_winograd:tile=2,ic_bn=8,oc_bn=32,t_bn=14,par=0,stage=0,unroll_c=0,oc_split=2,t_blocks=4"},
      {"conv2d_winograd:tile=2,ic_bn=8,oc_bn=8,t_bn=12,par=0,stage=1,unroll_c=0,oc_split=2",
       "conv2d_winograd:tile=4,ic_bn=16,oc_bn=16,t_bn=6,par=0,stage=0,unroll_c=1,oc_split=4",
       "conv2d_winograd:tile=2,ic_bn=8,oc_bn=8,t_bn=12,par=0,stage=1,unroll_c=0,oc_split=2,t_blocks=4",
       "conv2d_winograd:tile=2,ic_bn=16,oc_bn=8,t_bn=7,par=1,stage=0,unroll_c=1,oc_split=1,t_blocks=2",
       "conv2d_winograd:tile=4,ic_bn=8,oc_bn=16,t_bn=3,par=0,stage=0,unroll_c=0,oc_split=1,t_blocks=2",
       "conv2d_winograd:tile=2,ic_bn=8,oc_bn=16,t_bn=6,par=0,stage=0,unroll_c=0,oc_split=2,t_blocks=4"}};
  const char *const *cfgs = cfgs_by_vec[engine->target.vec >= 16 ? 0 : 1];
  for (int c = 0; c < 6; c++)
    for (int threads = c < 2 ? 1 : 2; threads <= 2 && (part < 0 || c % 2 == part); threads++) {   /* the blocks at two threads (LLVM compiles are the time) */
      fixed fx = {key, {0}};
      assert_int_equal(config_parse(&sp, cfgs[c], &fx.cfg, err, sizeof err), 0);
      pipeline_opts o = {.vec = engine->target.vec, .choose = choose_fixed, .ctx = &fx};
      check_against_reference_with("def @main(%x: Tensor[(1, 64, 14, 14), float32], %w: Tensor[(64, 64, 3, 3), float32]) {\n"
                                   "  nn.conv2d(%x, %w, padding=[1, 1, 1, 1])\n}\n",
                                   threads, &o, winograd_tolerance((int)cfg_get(&sp, &fx.cfg, K_TILE), 1));
    }
}

/* two chosen configs, by workload key */
typedef struct fixed2 { fixed a, b; char ka[256], kb[256]; } fixed2;

/* the two fixed configs of case i: text a for workload wa, b for wb, each
 * parsed in its space (wb's into *sb for the caller) */
static void fix_two(fixed2 *fx, size_t i, const conv_workload *wa, const char *a, const conv_workload *wb, const char *b, task_space *sb) {
  task_space sa;
  space_build(wa, engine->target.vec, &sa);
  space_build(wb, engine->target.vec, sb);
  memset(fx, 0, sizeof *fx);
  workload_key(wa, fx->ka, sizeof fx->ka);
  workload_key(wb, fx->kb, sizeof fx->kb);
  fx->a.key = fx->ka;
  fx->b.key = fx->kb;
  char err[512];
  if (config_parse(&sa, a, &fx->a.cfg, err, sizeof err) || config_parse(sb, b, &fx->b.cfg, err, sizeof err)) fail_msg("case %zu: %s", i, err);
}

static int choose_two(void *ctx, const char *key, const struct task_space *s, const struct conv_site *site, struct sched_config *out, char *err, size_t n) {
  fixed2 *f = ctx;
  return choose_fixed(&f->a, key, s, site, out, err, n) || choose_fixed(&f->b, key, s, site, out, err, n);
}

/* the printed program text optimizes to with options o, its weights
 * bound to zeros first where bind */
static char *optimized(const char *text, const pipeline_opts *o, int bind) {
  temper_graph *g = parse_ok(text);
  int np = bind ? g->main->n_params : 0;
  float **vals = calloc((size_t)np + 1, sizeof(float *));
  for (int i = 1; i < np; i++) vals[i] = calloc((size_t)shape_numel(&g->main->params[i]->ty.shape), sizeof(float));
  diag d = {0};
  if (bind) assert_int_equal(bind_params(g, vals, &d), TEMPER_OK);
  assert_int_equal(pipeline_optimize_with(g, o, &d), TEMPER_OK);
  char *p = print_graph(g);
  for (int i = 1; i < np; i++) free(vals[i]);
  free(vals);
  temper_graph_destroy(g);
  return p;
}

static int count_transforms(const char *text, const pipeline_opts *o) {
  char *p = optimized(text, o, 1);
  int k = count_in(p, "layout_transform(%");
  free(p);
  return k;
}

/* a conv2d reads its producer's channel blocks as they are where its
 * template can (Winograd: a block that divides ic_bn or that ic_bn divides;
 * direct and 1×1: a block that ic_bn divides), with no layout transform
 * between, and computes what the reference does; a block it cannot read
 * still gets its transform. Register tiles stay within AVX2's 12
 * accumulators, so every case holds with 8- and 16-float vectors. */
static void test_reads_producer_blocks(void **state) {
  (void)state;
  static const struct { const char *a, *b; int k3, transforms; } cases[] = {
      /* Winograd ic_bn 16 from NCHW32c, ic_bn 32 from NCHW16c */
      {"conv2d_nchwc:ic_bn=16,oc_bn=32,ow_bn=2,oh_bn=1,unroll_kw=1,order=0,par=0",
       "conv2d_winograd:tile=2,ic_bn=16,oc_bn=16,t_bn=6,par=0,stage=0,unroll_c=1,oc_split=1", 1, 1},
      {"conv2d_nchwc:ic_bn=16,oc_bn=16,ow_bn=3,oh_bn=2,unroll_kw=0,order=1,par=1",
       "conv2d_winograd:tile=4,ic_bn=32,oc_bn=16,t_bn=4,par=1,stage=0,unroll_c=0,oc_split=1", 1, 1},
      /* direct 3×3 with ic_bn 8 from NCHW32c, both loop orders */
      {"conv2d_nchwc:ic_bn=16,oc_bn=32,ow_bn=2,oh_bn=1,unroll_kw=1,order=0,par=0",
       "conv2d_nchwc:ic_bn=8,oc_bn=16,ow_bn=3,oh_bn=2,unroll_kw=1,order=0,par=1", 1, 1},
      {"conv2d_nchwc:ic_bn=16,oc_bn=32,ow_bn=2,oh_bn=1,unroll_kw=1,order=0,par=0",
       "conv2d_nchwc:ic_bn=8,oc_bn=16,ow_bn=6,oh_bn=1,unroll_kw=0,order=1,par=0", 1, 1},
      /* 1×1 with ic_bn 8 from NCHW32c, unrolled and not */
      {"conv2d_nchwc:ic_bn=16,oc_bn=32,ow_bn=2,oh_bn=1,unroll_kw=1,order=0,par=0", "conv2d_1x1:ic_bn=8,oc_bn=16,m_bn=6,unroll_ic=0,loop=1", 0, 1},
      {"conv2d_nchwc:ic_bn=16,oc_bn=32,ow_bn=2,oh_bn=1,unroll_kw=1,order=0,par=0", "conv2d_1x1:ic_bn=8,oc_bn=16,m_bn=5,unroll_ic=1,loop=0", 0, 1},
      /* direct with ic_bn 64 from NCHW32c: transformed first */
      {"conv2d_nchwc:ic_bn=16,oc_bn=32,ow_bn=2,oh_bn=1,unroll_kw=1,order=0,par=0",
       "conv2d_nchwc:ic_bn=64,oc_bn=16,ow_bn=3,oh_bn=2,unroll_kw=1,order=0,par=1", 1, 2},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    conv_workload wa = {1, 64, 14, 14, 64, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1};
    conv_workload wb = {1, 64, 14, 14, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    if (!cases[i].k3) wb = (conv_workload){1, 64, 14, 14, 32, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1};
    task_space sb;
    fixed2 fx;
    fix_two(&fx, i, &wa, cases[i].a, &wb, cases[i].b, &sb);
    pipeline_opts o = {.vec = engine->target.vec, .choose = choose_two, .ctx = &fx};
    char text[1024];
    snprintf(text, sizeof text,
             "def @main(%%x: Tensor[(1, 64, 14, 14), float32], %%w1: Tensor[(64, 64, 1, 1), float32], %%w2: Tensor[(32, 64, %d, %d), float32]) {\n"
             "  %%0 = nn.conv2d(%%x, %%w1);\n  %%1 = nn.relu(%%0);\n  nn.conv2d(%%1, %%w2%s)\n}\n",
             cases[i].k3 ? 3 : 1, cases[i].k3 ? 3 : 1, cases[i].k3 ? ", padding=[1, 1, 1, 1]" : "");
    assert_int_equal(count_transforms(text, &o), cases[i].transforms);
    double tol = fx.b.cfg.tmpl == TMPL_WINOGRAD ? winograd_tolerance((int)cfg_get(&sb, &fx.b.cfg, K_TILE), 1) : 1e-4;
    for (int threads = 1; threads <= 2; threads++) check_against_reference_with(text, threads, &o, tol);
  }
}

/* Groups narrower than a vector (ResNeXt's): blocks of whole vectors
 * spanning several groups are added candidates of oc_bn (the records'
 * blocks of one group keep their indices), valid with ic_bn = Cg only,
 * the default where they exist, reading any producer block they divide;
 * not offered where Cg ≠ Kg. Against the reference: 4-channel groups
 * (stride 1, the producer's blocks of 32 read as they are, and of 16
 * transformed for blocks of 32), 8-channel groups at stride 2 with asymmetric padding,
 * 2-channel groups, both loop orders, at one and two threads. */
static void test_group_spanning_blocks(void **state) {
  (void)state;
  char err[512];
  conv_workload w = {1, 128, 14, 14, 128, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 32};
  task_space sp;
  space_build(&w, 16, &sp);
  sched_config c;
  expect_region(&sp, TMPL_NCHWC, "conv2d_nchwc:ic_bn=4,oc_bn=4,ow_bn=2,oh_bn=3,unroll_kw=1,order=0,par=0", 0, &c);
  assert_false(config_spans_groups(&sp, &c));
  expect_region(&sp, TMPL_NCHWC, "conv2d_nchwc:ic_bn=4,oc_bn=16,ow_bn=2,oh_bn=3,unroll_kw=1,order=0,par=0", 1, &c);
  assert_true(config_spans_groups(&sp, &c) && space_valid(&sp, &c));
  assert_true(config_reads_block(&sp, &c, 16) && config_reads_block(&sp, &c, 32) && config_reads_block(&sp, &c, 128));
  assert_false(config_reads_block(&sp, &c, 8) || config_reads_block(&sp, &c, 0) || config_reads_block(&sp, &c, 24));
  c.v[0] = 2;   /* ic_bn (the first knob): a spanning block reduces over whole groups */
  assert_true(space_index(&sp, &c) >= 0 && !space_valid(&sp, &c));
  config_default(&sp, &c);
  assert_true(c.tmpl == TMPL_NCHWC && config_spans_groups(&sp, &c) && cfg_get(&sp, &c, K_OC_BN) == 16 && cfg_get(&sp, &c, K_IC_BN) == 4);
  conv_layouts l;
  config_layouts(&sp, &c, 8, &l);
  assert_true(l.in_blk == 16 && l.ki == 4 && l.ob == 16);
  config_layouts(&sp, &c, 64, &l);
  assert_int_equal(l.in_blk, 64);
  conv_workload uneven = {1, 64, 14, 14, 128, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 16};   /* Cg 4, Kg 8 */
  space_build(&uneven, 16, &sp);
  assert_int_not_equal(config_parse(&sp, "conv2d_nchwc:ic_bn=4,oc_bn=16,ow_bn=2,oh_bn=3,unroll_kw=1,order=0,par=0", &c, err, sizeof err), 0);
  if (engine->target.vec < 16) skip();
  static const struct { int G, s, pt, pl, pb, pr; const char *pre, *cfg; int transforms; } cases[] = {
      {32, 1, 1, 1, 1, 1, "conv2d_1x1:ic_bn=16,oc_bn=32,m_bn=6,unroll_ic=0,loop=1",
       "conv2d_nchwc:ic_bn=4,oc_bn=16,ow_bn=2,oh_bn=3,unroll_kw=1,order=0,par=0", 1},
      {32, 1, 1, 1, 1, 1, "conv2d_1x1:ic_bn=16,oc_bn=16,m_bn=6,unroll_ic=0,loop=1",
       "conv2d_nchwc:ic_bn=4,oc_bn=32,ow_bn=3,oh_bn=2,unroll_kw=0,order=1,par=1", 2},
      {16, 2, 0, 1, 2, 1, "conv2d_1x1:ic_bn=16,oc_bn=64,m_bn=4,unroll_ic=1,loop=0",
       "conv2d_nchwc:ic_bn=8,oc_bn=16,ow_bn=4,oh_bn=1,unroll_kw=1,order=1,par=0", 1},
      {64, 1, 2, 0, 0, 2, "conv2d_1x1:ic_bn=16,oc_bn=16,m_bn=6,unroll_ic=0,loop=1",
       "conv2d_nchwc:ic_bn=2,oc_bn=64,ow_bn=2,oh_bn=2,unroll_kw=1,order=0,par=1", 2},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (part >= 0 && (int)(i % 2) != part) continue;
    conv_workload wa = {1, 64, 14, 14, 128, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1};
    conv_workload wb = {1, 128, 14, 14, 128, 3, 3, cases[i].s, cases[i].s, cases[i].pt, cases[i].pl, cases[i].pb, cases[i].pr, 1, 1, cases[i].G};
    task_space sb;
    fixed2 fx;
    fix_two(&fx, i, &wa, cases[i].pre, &wb, cases[i].cfg, &sb);
    assert_true(config_spans_groups(&sb, &fx.b.cfg) && space_valid(&sb, &fx.b.cfg));
    pipeline_opts o = {.vec = engine->target.vec, .choose = choose_two, .ctx = &fx};
    char text[1024];
    snprintf(text, sizeof text,
             "def @main(%%x: Tensor[(1, 64, 14, 14), float32], %%w1: Tensor[(128, 64, 1, 1), float32], %%w2: Tensor[(128, %d, 3, 3), float32], "
             "%%b: Tensor[(128, 1, 1), float32]) {\n"
             "  %%0 = nn.conv2d(%%x, %%w1);\n  %%1 = nn.relu(%%0);\n"
             "  %%2 = nn.conv2d(%%1, %%w2, strides=[%d, %d], padding=[%d, %d, %d, %d], groups=%d);\n  %%3 = add(%%2, %%b);\n  nn.relu(%%3)\n}\n",
             128 / cases[i].G, cases[i].s, cases[i].s, cases[i].pt, cases[i].pl, cases[i].pb, cases[i].pr, cases[i].G);
    assert_int_equal(count_transforms(text, &o), cases[i].transforms);
    for (int threads = 1; threads <= 2; threads++) check_against_reference_with(text, threads, &o, 1e-4);
  }
}

/* functions of the optimized program holding two conv2d (a depthwise
 * joined with the 1×1 it feeds) */
static int count_joined(const char *text, const pipeline_opts *o) {
  char *p = optimized(text, o, 0);
  int k = 0;
  for (char *q = p; (q = strstr(q, "Primitive=1")); q++) {
    char *end = strstr(q, "};"), *c1 = strstr(q, "nn.conv2d(");
    k += c1 && c1 < end && strstr(c1 + 1, "nn.conv2d(") && strstr(c1 + 1, "nn.conv2d(") < end;
  }
  free(p);
  return k;
}

/* the program joins `joined` pairs under o and computes what the reference
 * does at one and two threads */
static void check_joined(const char *text, const pipeline_opts *o, int joined) {
  assert_int_equal(count_joined(text, o), joined);
  for (int threads = 1; threads <= 2; threads++) check_against_reference_with(text, threads, o, 1e-4);
}

/* A depthwise conv2d joined with the 1×1 it feeds (conv2d_dwpw.c) computes
 * what the reference does, at one and two threads: row tiles with a
 * remainder, unroll_kw on and off, kernels 3×3 and 5×5, stride 2, a 1×1
 * reading part of each stored block (ic_bn 8 of 16), output blocks ending
 * in part of a vector (24 = 16 + 8), a batch of 2, NCHW and blocked output;
 * where the depthwise output also feeds something else, or the join says
 * no, the two stay apart and still match. Register tiles stay within
 * AVX2's 12 accumulators, so every case holds with 8- and 16-float vectors. */
static void test_dw_into_1x1_matches_reference(void **state) {
  (void)state;
  static const struct {
    int N, C, H, W, R, st, K, pool, also, all, joined;
    const char *dw, *pw;
  } cases[] = {
      {1, 32, 14, 13, 3, 1, 24, 0, 0, 1, 1, "conv2d_depthwise:c_bn=16,ow_bn=6,unroll_kw=1,par=0",
       "conv2d_1x1:ic_bn=16,oc_bn=24,m_bn=4,unroll_ic=0,loop=1"},
      {1, 48, 13, 13, 3, 2, 32, 1, 0, 1, 1, "conv2d_depthwise:c_bn=16,ow_bn=3,unroll_kw=0,par=1",
       "conv2d_1x1:ic_bn=8,oc_bn=16,m_bn=5,unroll_ic=1,loop=0"},
      {2, 32, 9, 9, 5, 1, 16, 0, 0, 1, 1, "conv2d_depthwise:c_bn=32,ow_bn=3,unroll_kw=1,par=0",
       "conv2d_1x1:ic_bn=32,oc_bn=16,m_bn=6,unroll_ic=1,loop=1"},
      /* the depthwise output also read by the residual add: apart */
      {1, 32, 14, 13, 3, 1, 32, 0, 1, 1, 0, "conv2d_depthwise:c_bn=16,ow_bn=6,unroll_kw=1,par=0",
       "conv2d_1x1:ic_bn=16,oc_bn=16,m_bn=6,unroll_ic=0,loop=1"},
      /* small: the build's rule keeps them apart */
      {1, 32, 14, 13, 3, 1, 24, 0, 0, 0, 0, "conv2d_depthwise:c_bn=16,ow_bn=6,unroll_kw=1,par=0",
       "conv2d_1x1:ic_bn=16,oc_bn=24,m_bn=4,unroll_ic=0,loop=1"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (part >= 0 && (int)(i % 2) != part) continue;
    int N = cases[i].N, C = cases[i].C, K = cases[i].K, R = cases[i].R, st = cases[i].st, pad = R / 2;
    conv_workload wa = {N, C, cases[i].H, cases[i].W, C, R, R, st, st, pad, pad, pad, pad, 1, 1, C};
    int64_t OH = workload_out(&wa, 2), OW = workload_out(&wa, 3);
    conv_workload wb = {N, C, OH, OW, K, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1};
    task_space sb;
    fixed2 fx;
    fix_two(&fx, i, &wa, cases[i].dw, &wb, cases[i].pw, &sb);
    pipeline_opts o = {.vec = engine->target.vec, .choose = choose_two, .ctx = &fx, .dw_fusion_all = cases[i].all};
    char text[2048], res[128] = "";
    if (cases[i].also) snprintf(res, sizeof res, "  %%6 = add(%%5, %%2);\n");
    else snprintf(res, sizeof res, "  %%6 = add(%%5, %%r);\n");
    snprintf(text, sizeof text,
             "def @main(%%x: Tensor[(%d, %d, %d, %d), float32], %%w: Tensor[(%d, 1, %d, %d), float32], %%b: Tensor[(%d, 1, 1), float32], "
             "%%w2: Tensor[(%d, %d, 1, 1), float32], %%b2: Tensor[(%d, 1, 1), float32], %%r: Tensor[(%d, %d, %lld, %lld), float32]) {\n"
             "  %%0 = nn.conv2d(%%x, %%w, strides=[%d, %d], padding=[%d, %d, %d, %d], groups=%d);\n"
             "  %%1 = add(%%0, %%b);\n  %%2 = clip(%%1, a_min=0f, a_max=6f);\n"
             "  %%3 = nn.conv2d(%%2, %%w2);\n  %%5 = add(%%3, %%b2);\n%s  %s\n}\n",
             N, C, cases[i].H, cases[i].W, C, R, R, C, K, C, K, N, K, (long long)OH, (long long)OW, st, st, pad, pad, pad, pad, C, res,
             cases[i].pool ? "nn.max_pool2d(%6)" : "%6");
    check_joined(text, &o, cases[i].joined);
  }
}

/* A 1×1 conv2d joined with the depthwise it feeds (conv2d_pwdw.c) computes
 * what the reference does, at one and two threads: strides 1 and 2, kernels
 * 3×3 and 5×5 (rows shared with the row before: 1, 2 and 4), one band per
 * image and several (fewer channel blocks than tasks: rows computed again
 * at each band's start), expand tiles with a remainder within the row,
 * unroll_ic and unroll_kw on and off, output blocks ending in part of a
 * vector (24 = 16 + 8), a batch of 2, an expand reading NCHW input. Where
 * the expand's output also feeds
 * something else, the depthwise is dilated, or the build's rule says no
 * (stride 1; small), the two stay apart and still match. Register tiles
 * stay within AVX2's 12 accumulators. */
static void test_1x1_into_dw_matches_reference(void **state) {
  (void)state;
  static const struct {
    int N, C, H, W, E, R, st, dil, also, all, joined;
    const char *pw, *dw;
    const char *pw16, *dw16;   /* with 16-float vectors, where 8's configs are no candidates there */
  } cases[] = {
      {1, 16, 13, 13, 32, 3, 2, 1, 0, 1, 1, "conv2d_1x1:ic_bn=16,oc_bn=16,m_bn=5,unroll_ic=0,loop=1",
       "conv2d_depthwise:c_bn=16,ow_bn=3,unroll_kw=1,par=0", NULL, NULL},
      {1, 16, 12, 14, 32, 5, 1, 1, 0, 1, 1, "conv2d_1x1:ic_bn=8,oc_bn=16,m_bn=4,unroll_ic=1,loop=0",
       "conv2d_depthwise:c_bn=16,ow_bn=6,unroll_kw=0,par=1", NULL, NULL},
      /* 24 channels: three 8-float vectors, no candidate with 16 (the
       * suite runs again with 8-float vectors on AVX-512 hosts) */
      {2, 8, 9, 11, 48, 3, 2, 1, 0, 1, 1, "conv2d_1x1:ic_bn=8,oc_bn=24,m_bn=4,unroll_ic=1,loop=1",
       "conv2d_depthwise:c_bn=24,ow_bn=2,unroll_kw=1,par=0", "conv2d_1x1:ic_bn=8,oc_bn=48,m_bn=4,unroll_ic=1,loop=1",
       "conv2d_depthwise:c_bn=48,ow_bn=2,unroll_kw=1,par=0"},
      {1, 16, 20, 9, 16, 3, 1, 1, 0, 1, 1, "conv2d_1x1:ic_bn=16,oc_bn=16,m_bn=6,unroll_ic=0,loop=1",
       "conv2d_depthwise:c_bn=16,ow_bn=4,unroll_kw=1,par=0", NULL, NULL},
      /* the expand's output also read by the residual add: apart */
      {1, 16, 13, 13, 32, 3, 1, 1, 1, 1, 0, "conv2d_1x1:ic_bn=16,oc_bn=16,m_bn=5,unroll_ic=0,loop=1",
       "conv2d_depthwise:c_bn=16,ow_bn=3,unroll_kw=1,par=0", NULL, NULL},
      /* dilated: apart */
      {1, 16, 13, 13, 32, 3, 1, 2, 0, 1, 0, "conv2d_1x1:ic_bn=16,oc_bn=16,m_bn=5,unroll_ic=0,loop=1",
       "conv2d_depthwise:c_bn=16,ow_bn=3,unroll_kw=1,par=0", NULL, NULL},
      /* the build's rule: stride 1, or small — apart */
      {1, 16, 13, 13, 32, 3, 1, 1, 0, 0, 0, "conv2d_1x1:ic_bn=16,oc_bn=16,m_bn=5,unroll_ic=0,loop=1",
       "conv2d_depthwise:c_bn=16,ow_bn=3,unroll_kw=1,par=0", NULL, NULL},
      {1, 16, 13, 13, 32, 3, 2, 1, 0, 0, 0, "conv2d_1x1:ic_bn=16,oc_bn=16,m_bn=5,unroll_ic=0,loop=1",
       "conv2d_depthwise:c_bn=16,ow_bn=3,unroll_kw=1,par=0", NULL, NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (part >= 0 && (int)(i % 2) != part) continue;
    int N = cases[i].N, C = cases[i].C, E = cases[i].E, R = cases[i].R, st = cases[i].st, dil = cases[i].dil, pad = R / 2 * dil;
    conv_workload wa = {N, C, cases[i].H, cases[i].W, E, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1};
    conv_workload wb = {N, E, cases[i].H, cases[i].W, E, R, R, st, st, pad, pad, pad, pad, dil, dil, E};
    task_space sb;
    fixed2 fx;
    int v16 = engine->target.vec >= 16 && cases[i].pw16;
    fix_two(&fx, i, &wa, v16 ? cases[i].pw16 : cases[i].pw, &wb, v16 ? cases[i].dw16 : cases[i].dw, &sb);
    /* the expand reads the network's NCHW input as it is in case 3, blocked input in the rest */
    pipeline_opts o = {.vec = engine->target.vec, .choose = choose_two, .ctx = &fx, .block_inputs = i != 3, .pw_fusion_all = cases[i].all};
    char text[2048];
    snprintf(text, sizeof text,
             "def @main(%%x: Tensor[(%d, %d, %d, %d), float32], %%w1: Tensor[(%d, %d, 1, 1), float32], %%b1: Tensor[(%d, 1, 1), float32], "
             "%%w: Tensor[(%d, 1, %d, %d), float32], %%b: Tensor[(%d, 1, 1), float32]) {\n"
             "  %%0 = nn.conv2d(%%x, %%w1);\n  %%1 = add(%%0, %%b1);\n  %%2 = clip(%%1, a_min=0f, a_max=6f);\n"
             "  %%3 = nn.conv2d(%%2, %%w, strides=[%d, %d], padding=[%d, %d, %d, %d], dilation=[%d, %d], groups=%d);\n"
             "  %%4 = add(%%3, %%b);\n  %%5 = clip(%%4, a_min=0f, a_max=6f);\n  %s\n}\n",
             N, C, cases[i].H, cases[i].W, E, C, E, E, R, R, E, st, st, pad, pad, pad, pad, dil, dil, E,
             cases[i].also ? "add(%5, %2)" : "%5");
    check_joined(text, &o, cases[i].joined);
  }
}

int main(int argc, char **argv) {
  if (argc > 1) part = atoi(argv[1]);
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_space_round_trips), cmocka_unit_test(test_appended_knob_keeps_records),
                                     cmocka_unit_test(test_winograd_oc_split_matches_reference),
                                     cmocka_unit_test(test_added_block_keeps_records),
                                     cmocka_unit_test(test_partial_vector_blocks_match_reference),
      cmocka_unit_test(test_any_tail_blocks),
                                     cmocka_unit_test(test_reads_producer_blocks),
                                     cmocka_unit_test(test_group_spanning_blocks),
                                     cmocka_unit_test(test_dw_into_1x1_matches_reference),
                                     cmocka_unit_test(test_1x1_into_dw_matches_reference),
                                     cmocka_unit_test(test_random_configs_match_reference)};
  return cmocka_run_group_tests(tests, engine_setup, engine_teardown);
}
