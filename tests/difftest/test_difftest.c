/* test_difftest.c: the differential tester in the suite. Random networks
 * (difftest/gen.c) in every mode against the reference interpreter; the
 * generator's determinism and coverage; a case written for a mismatch
 * replays through `temper run --config-file --check`. The long campaign is
 * bench/difftest (scripts/difftest.sh). */
#include "difftest.h"
#include "helpers.h"
#include "space.h"

/* networks per mode in the suite: the plain build runs more; under the
 * sanitizers fewer keep the suite inside its budget */
#ifdef TEMPER_SANITIZED
enum { NETWORKS = 60 };
#else
enum { NETWORKS = 150 };
#endif
enum { FIRST_SEED = 1000 };

/* the same seed gives the same text; every network parses and types */
static void test_generate_deterministic_and_valid(void **state) {
  (void)state;
  int convs = 0, grouped = 0, depthwise = 0, pools = 0, concats = 0, dense = 0, tuples = 0, strided = 0, dilated = 0, tiny = 0, pads = 0;
  for (uint64_t seed = 1; seed <= 400; seed++) {
    char *a = dt_generate(seed, NULL), *b = dt_generate(seed, NULL);
    assert_non_null(a);
    assert_string_equal(a, b);
    temper_graph *g = parse_ok(a);
    arena s = {0};
    int n = 0;
    node **order = ir_topo(&s, g->main->body, &n);
    for (int i = 0; i < n; i++) {
      const node *x = order[i];
      if (x->kind == N_TUPLE && x == g->main->body) tuples++;
      if (x->kind != N_CALL) continue;
      if (x->op == OP_CONV2D) {
        const attrs_t *at = x->attrs;
        convs++;
        int64_t G = at->v[ATTR_GROUPS].i[0], C = x->args[0]->ty.shape.d[1];
        grouped += G > 1 && G < C;
        depthwise += G > 1 && G == C;
        strided += at->v[ATTR_STRIDES].i[0] > 1 || at->v[ATTR_STRIDES].i[1] > 1;
        dilated += at->v[ATTR_DILATION].i[0] > 1 || at->v[ATTR_DILATION].i[1] > 1;
        tiny += x->args[0]->ty.shape.d[2] == 1 || x->args[0]->ty.shape.d[3] == 1;
      }
      pools += x->op == OP_MAX_POOL2D || x->op == OP_AVG_POOL2D;
      concats += x->op == OP_CONCATENATE;
      pads += x->op == OP_PAD;
      dense += x->op == OP_DENSE;
    }
    arena_free(&s);
    temper_graph_destroy(g);
    free(a);
    free(b);
  }
  fprintf(stderr, "400 networks: %d conv2d (%d grouped, %d depthwise, %d strided, %d dilated, %d on a 1-wide input), %d pools, "
          "%d concats, %d pads, %d dense, %d with several outputs\n", convs, grouped, depthwise, strided, dilated, tiny, pools, concats, pads,
          dense, tuples);
  /* what the generator is for: each feature shows up often */
  assert_true(convs > 800);
  assert_true(grouped > 40 && depthwise > 40 && strided > 100 && dilated > 40 && tiny > 20);
  assert_true(pools > 50 && concats > 20 && pads > 5 && dense > 100 && tuples > 20);
  char *x = dt_generate(1, NULL), *y = dt_generate(2, NULL);
  assert_string_not_equal(x, y);
  free(x);
  free(y);
}


/* the line after the first occurrence of `at` holds `want` */
static int next_line_has(const char *text, const char *at, const char *want) {
  for (const char *p = strstr(text, at); p; p = strstr(p + 1, at)) {
    const char *nl = strchr(p, '\n'), *end = nl ? strchr(nl + 1, '\n') : NULL;
    if (!nl || !end) continue;
    const char *w = strstr(nl, want);
    if (w && w < end) return 1;
  }
  return 0;
}

/* the generator draws the layers of newer networks too: NHWC permutes
 * around a bias and an activation, a linear layer on every pixel,
 * squeeze-excite with the scale first, layer norms (ConvNeXt's as ONNX
 * writes it, Relay's) */
static void test_generator_covers_newer_layers(void **state) {
  (void)state;
  int nhwc = 0, rows = 0, se = 0, ln = 0, relay_ln = 0;
  for (uint64_t seed = 1; seed <= 600; seed++) {
    char *t = dt_generate(seed, NULL);
    nhwc += next_line_has(t, "axes=[0, 2, 3, 1]);", "= add(%");
    rows += next_line_has(t, "= nn.dense(%", "newshape=[");
    se += next_line_has(t, "= nn.global_avg_pool2d(", "kernel_size=[1, 1]);");
    ln += next_line_has(t, "= sqrt(%", "= divide(%");
    relay_ln += strstr(t, "= nn.layer_norm(") != NULL;
    free(t);
  }
  print_message("of 600 networks: %d NHWC activations, %d linear layers on pixels, %d squeeze-excites, %d + %d layer norms\n", nhwc,
                rows, se, ln, relay_ln);
  assert_true(nhwc >= 3 && rows >= 3 && se >= 3 && ln >= 3 && relay_ln >= 2);
}

/* NETWORKS random networks in each mode equal the reference */
static void run_networks(dt_mode mode, int threads) {
  long kernels = 0, configs = 0;
  double worst = 0;
  int bad = 0;
  for (uint64_t seed = FIRST_SEED; seed < FIRST_SEED + NETWORKS; seed++) {
    char *text = dt_generate(seed, NULL);
    dt_result r;
    diag d = {0};
    temper_status s = dt_check(engine, text, NULL, seed, mode, threads, &r, &d);
    if (s || r.mismatch) {
      fprintf(stderr, "seed %llu, %s configs: %s\n%s\nconfigs: %s\n", (unsigned long long)seed, dt_mode_names[mode],
              s ? d.msg : r.detail, text, r.configs ? r.configs : "");
      bad++;
    }
    kernels += r.n_kernels;
    configs += r.n_configs;
    if (r.rel_err > worst) worst = r.rel_err;
    free(r.configs);
    free(text);
  }
  fprintf(stderr, "%d networks, %s configs, %d thread%s: %ld kernels, %ld configs drawn, worst relative error %.2g, %d wrong\n",
          NETWORKS, dt_mode_names[mode], threads, threads > 1 ? "s" : "", kernels, configs, worst, bad);
  assert_int_equal(bad, 0);
  assert_true(kernels >= NETWORKS);
  if (mode != DT_DEFAULT) assert_true(configs >= NETWORKS);
}

static void test_default_configs(void **state) { (void)state; run_networks(DT_DEFAULT, 2); }
static void test_random_configs(void **state) { (void)state; run_networks(DT_RANDOM, 1); }
static void test_mixed_blocks(void **state) { (void)state; run_networks(DT_MIXED_BLOCKS, 2); }

/* the regression networks kept under tests/data/difftest/ (each found a
 * miscompile once): with the configs that found it (NAME.json beside the
 * model, where there is one) and in every mode */
static void test_regressions(void **state) {
  (void)state;
  static const char *const cases[] = {"layout_12c_8c", "grouped_after_conv", "input_transform_in_epilogue", "winograd_ic_bn_23",
                                       "ceil_pool_trailing_window", "winograd_narrow_producer_blocks", "cancel_then_clip",
                                       "block_of_six_vectors"};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char path[256];
    snprintf(path, sizeof path, "tests/data/difftest/%s.relay", cases[i]);
    char *text = read_text(path);
    snprintf(path, sizeof path, "tests/data/difftest/%s.json", cases[i]);
    char *configs = read_text(path);
    assert_non_null(text);
    for (int m = 0; m < DT_MODE_COUNT; m++)
      for (uint64_t seed = 1; seed <= 6; seed++) {
        dt_result r;
        diag d = {0};
        temper_status s = dt_check(engine, text, configs, seed, (dt_mode)m, 2, &r, &d);
        if (s || r.mismatch) fprintf(stderr, "%s, seed %llu, %s: %s\n", cases[i], (unsigned long long)seed, dt_mode_names[m], s ? d.msg : r.detail);
        assert_int_equal(s, TEMPER_OK);
        assert_false(r.mismatch);
        free(r.configs);
      }
    free(text);
    free(configs);
  }
}

/* an output that is the small difference of large terms (here σ(x) −
 * (tanh(x/2) + 1)/2, zero but for rounding; cancel_then_clip was one until
 * tanh got accurate near 0) misses the normwise tolerance by rounding
 * alone: it is held to ten times the reference's own movement under
 * rounding-level changes of the parameters, counted, and not a mismatch;
 * a wrong answer on a well-conditioned output still is one */
static void test_ill_conditioned_output(void **state) {
  (void)state;
  char *text = read_text("tests/data/difftest/sigmoid_minus_tanh.relay");
  assert_non_null(text);
  dt_result r;
  diag d = {0};
  assert_int_equal(dt_check(engine, text, NULL, 1300606, DT_DEFAULT, 2, &r, &d), TEMPER_OK);
  assert_false(r.mismatch);
  assert_int_equal(r.ill_conditioned, 1);   /* output 1 only: output 0 (terms of its own size) is held to the tolerance */
  assert_true(r.rel_err > 0 && r.rel_err <= r.tolerance);
  free(r.configs);
  free(text);
}

/* a case written by the tester replays through the CLI with the same
 * configs and data: the model compiles with the configs of the file and
 * --check passes */
static void test_case_replays(void **state) {
  (void)state;
  char dir[256];
  scratch_make(dir, sizeof dir, "temper_difftest");
  uint64_t seed = 77;
  char *text = dt_generate(seed, NULL);
  dt_result r;
  diag d = {0};
  assert_int_equal(dt_check(engine, text, NULL, seed, DT_MIXED_BLOCKS, 1, &r, &d), TEMPER_OK);
  assert_true(r.n_configs > 0);
  char err[512];
  char *cmd = dt_write_case(dir, "case", text, r.configs, seed, 1, err, sizeof err);
  assert_non_null(cmd);
  assert_non_null(strstr(cmd, "--config-file"));
  const char *args = cmd + strlen("temper");
  expect(sh("%s%s", TEMPER_BINARY, args), 0, "(ok: within");
  /* the configs file names real workloads: a corrupted config is refused by name */
  result rr = sh("sed -i 's/\"template\": \"conv2d_[a-z0-9]*\"/\"template\": \"conv2d_bogus\"/' %s/case.json && %s%s", dir,
                 TEMPER_BINARY, args);
  int refused = rr.code != 0 && strstr(rr.out, "conv2d_bogus") != NULL;
  if (!refused) fprintf(stderr, "%s\n", rr.out);
  free(rr.out);
  assert_true(refused);
  free(cmd);
  free(r.configs);
  free(text);
  /* an unwritable directory is an error with the path, not a crash */
  assert_null(dt_write_case("/nonexistent/dir", "case", "x", "{}", 1, 1, err, sizeof err));
  assert_non_null(strstr(err, "/nonexistent/dir/case.relay"));
  scratch_remove(dir);
}

/* argv[1]: "base" (generator, regressions, replay), "regressions", or a mode's name, so
 * ctest runs the parts side by side; none: everything */
int main(int argc, char **argv) {
  const struct CMUnitTest base[] = {
      cmocka_unit_test(test_generate_deterministic_and_valid), cmocka_unit_test(test_generator_covers_newer_layers),
      cmocka_unit_test(test_regressions),
      cmocka_unit_test(test_ill_conditioned_output),
      cmocka_unit_test(test_case_replays),
  };
  const struct CMUnitTest modes[DT_MODE_COUNT][1] = {
      {cmocka_unit_test(test_default_configs)}, {cmocka_unit_test(test_random_configs)}, {cmocka_unit_test(test_mixed_blocks)}};
  const struct CMUnitTest regressions[] = {cmocka_unit_test(test_regressions)};
  const char *part = argc > 1 ? argv[1] : NULL;
  int rc = 0;
  if (!part || !strcmp(part, "base")) rc |= cmocka_run_group_tests_name("base", base, engine_setup, engine_teardown);
  /* the kept networks alone (ctest reruns them compiled for AVX2) */
  if (part && !strcmp(part, "regressions")) rc |= cmocka_run_group_tests_name("regressions", regressions, engine_setup, engine_teardown);
  for (int m = 0; m < DT_MODE_COUNT; m++)
    if (!part || !strcmp(part, dt_mode_names[m])) rc |= _cmocka_run_group_tests(dt_mode_names[m], modes[m], 1, engine_setup, engine_teardown);
  return rc;
}
