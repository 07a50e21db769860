/* test_cli.c: the temper command as a user meets it: examples run and pass
 * --check, bad models exit 1 with a located message (never a crash), the
 * fused seed shows two primitive functions, outputs are saved as .npy. */
#include <sys/wait.h>
#include <unistd.h>
#include "helpers.h"



static void test_examples_pass_check(void **state) {
  (void)state;
  const char *ex[] = {"examples/seed.relay", "examples/resnet_block.relay", "examples/resnet18.relay"};
  for (int i = 0; i < 3; i++) {
    result r = sh("%s run %s --check --repeat 2 --threads 2", TEMPER_BINARY, ex[i]);
    if (r.code) fprintf(stderr, "%s\n", r.out);
    assert_int_equal(r.code, 0);
    assert_non_null(strstr(r.out, "check output 0: max abs error"));
    assert_non_null(strstr(r.out, "(ok: within"));
    assert_non_null(strstr(r.out, "latency: median"));
    free(r.out);
  }
}

static void test_lower_seed_shows_two_primitive_functions(void **state) {
  (void)state;
  result r = sh("%s lower examples/seed.relay --fused", TEMPER_BINARY);
  assert_int_equal(r.code, 0);
  int n = 0;
  for (char *p = r.out; (p = strstr(p, "Primitive=1")); p++) n++;
  assert_int_equal(n, 2);
  free(r.out);
  r = sh("%s lower examples/seed.relay --loops", TEMPER_BINARY);
  assert_int_equal(r.code, 0);
  assert_non_null(strstr(r.out, "parallel for"));
  free(r.out);
  /* a Winograd config: the kernel on transformed weights, with its scratch tiles */
  const char *wino = "conv2d_winograd:tile=4,ic_bn=2,oc_bn=2,t_bn=8,par=0,stage=0,unroll_c=0";
  expect(sh("%s lower examples/seed.relay --loops --task 1 --config '%s'", TEMPER_BINARY, wino), 0, "local V[576]");
  expect(sh("%s lower examples/seed.relay --loops --task 1 --config 'conv2d_winograd:tile=5,ic_bn=2,oc_bn=2,t_bn=8,par=0,stage=0,unroll_c=0'",
            TEMPER_BINARY), 1, "knob tile: 5 is not a candidate (candidates: 2 4 6)");
}

/* a projection to 24 channels: with 16-float vectors its templates take
 * blocks of 24 (16 + 8 lanes), listed in a second index range so recorded
 * indices stay; with 8-float vectors 24 is three whole ones. Either way the
 * default it runs by matches the reference. */
static void test_space_shows_added_blocks(void **state) {
  (void)state;
  result r = sh("%s space tests/data/projection24.relay --task 0", TEMPER_BINARY);
  assert_int_equal(r.code, 0);
  if (strstr(r.out, "oc_bn      split  1 2 3 4 6 8 12 24\n")) {
    assert_non_null(strstr(r.out, "template conv2d_1x1 (version 1): 5280 points, indices 27104..31723 and 35596..36255"));
    assert_non_null(strstr(r.out, "\"oc_bn\":24"));
  } else {
    assert_non_null(strstr(r.out, "oc_bn      split  8 24\n"));
    assert_null(strstr(r.out, " and "));
  }
  free(r.out);
  expect(sh("%s run tests/data/projection24.relay --check --threads 2", TEMPER_BINARY), 0, "(ok: within");
}

/* an expand 1×1 into a stride-2 depthwise (4.8 MB expanded: more than half
 * of any L2 here) runs as one kernel; --no-fuse-expand and
 * --no-fuse-depthwise keep the two apart; all three match the reference */
static void test_fuse_expand_option(void **state) {
  (void)state;
  static const struct { const char *opt, *want; } runs[] = {
      {"", "compiled 1 kernels"}, {"--no-fuse-expand", "compiled 2 kernels"}, {"--no-fuse-depthwise", "compiled 2 kernels"}};
  for (int i = 0; i < 3; i++) {
    result r = sh("%s run tests/data/expand_dw.relay --check --repeat 2 --threads 2 %s", TEMPER_BINARY, runs[i].opt);
    if (r.code || !strstr(r.out, runs[i].want)) fprintf(stderr, "%s\n", r.out);
    assert_int_equal(r.code, 0);
    assert_non_null(strstr(r.out, runs[i].want));
    assert_non_null(strstr(r.out, "(ok: within"));
    free(r.out);
  }
}

static void test_bad_models_exit_1(void **state) {
  (void)state;
  const char *bad[] = {
      "def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 2, 3, 3), float32]) {\n  nn.conv2d(%x, %w)\n}\n",
      "def @main(%x: Tensor[(1, 3), float32]) {\n  nn.gelu(%x)\n}\n",
      "def @main(%x: Tensor[(1, 3), float32]) {\n  %0 = nn.relu(%x)\n  %0\n}\n",
      "\x01\x02garbage",
      "",
  };
  for (int i = 0; i < 5; i++) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/temper_bad_%d_%d.relay", (int)getpid(), i);
    FILE *f = fopen(path, "w");
    fputs(bad[i], f);
    fclose(f);
    result r = sh("%s run %s", TEMPER_BINARY, path);
    if (r.code != 1) fprintf(stderr, "%s\n", r.out);
    assert_int_equal(r.code, 1);
    assert_non_null(strstr(r.out, path));
    assert_non_null(strstr(r.out, "error:"));
    free(r.out);
    r = sh("%s lower %s", TEMPER_BINARY, path);
    assert_int_equal(r.code, 1);
    free(r.out);
    remove(path);
  }
  result r = sh("%s run /nonexistent.relay", TEMPER_BINARY);
  assert_int_equal(r.code, 1);
  assert_non_null(strstr(r.out, "cannot open"));
  free(r.out);
}

static void test_inputs_params_and_outputs(void **state) {
  (void)state;
  char dir[256];
  snprintf(dir, sizeof dir, "/tmp/temper_cli_%d", (int)getpid());
  result r = sh("%s run examples/seed.relay --save-output %s --repeat 1 --seed 5", TEMPER_BINARY, dir);
  assert_int_equal(r.code, 0);
  free(r.out);
  /* feed the saved output back in as an input of the wrong shape: refused */
  r = sh("%s run examples/seed.relay --input x=%s/output_0.npy", TEMPER_BINARY, dir);
  assert_int_equal(r.code, 1);
  assert_non_null(strstr(r.out, "holds Tensor[(1, 2, 220, 220), float32] but %x is Tensor[(1, 10, 224, 224), float32]"));
  free(r.out);
  r = sh("%s run examples/seed.relay --input nope=%s/output_0.npy", TEMPER_BINARY, dir);
  assert_int_equal(r.code, 1);
  assert_non_null(strstr(r.out, "@main has no parameter %nope (parameters: %x %w %w1)"));
  free(r.out);
  r = sh("%s run examples/seed.relay --params /nonexistent", TEMPER_BINARY);
  assert_int_equal(r.code, 1);
  assert_non_null(strstr(r.out, "/nonexistent/w.npy: cannot open"));
  free(r.out);
  /* a bad .npy file */
  r = sh("echo garbage > %s/bad.npy && %s run examples/seed.relay --input x=%s/bad.npy", dir, TEMPER_BINARY, dir);
  assert_int_equal(r.code, 1);
  assert_non_null(strstr(r.out, "not a .npy file"));
  free(r.out);
  r = sh("%s run examples/seed.relay --threads zero", TEMPER_BINARY);
  assert_int_equal(r.code, 2);
  free(r.out);
  scratch_remove(dir);
}

/* an input read from .npy gives the same output as the same data generated */
static void test_npy_round_trip(void **state) {
  (void)state;
  char dir[256];
  scratch_make(dir, sizeof dir, "temper_npy");
  shape_t s = {4, {1, 10, 224, 224}};
  int64_t n = shape_numel(&s);
  float *x = malloc(sizeof(float) * (size_t)n);
  data_random_param(x, &s, 1 ^ data_hash_name("x"), 1, 0);
  char path[512], err[256];
  snprintf(path, sizeof path, "%s/x.npy", dir);
  assert_int_equal(npy_write(path, &s, x, err, sizeof err), TEMPER_OK);
  shape_t s2;
  float *y = NULL;
  assert_int_equal(npy_read(path, &s2, &y, err, sizeof err), TEMPER_OK);
  assert_true(shape_eq(&s, &s2));
  assert_memory_equal(x, y, sizeof(float) * (size_t)n);
  free(x);
  free(y);
  result a = sh("%s run examples/seed.relay --repeat 1 | grep checksum", TEMPER_BINARY);
  result b = sh("%s run examples/seed.relay --repeat 1 --input x=%s | grep checksum", TEMPER_BINARY, path);
  assert_string_equal(a.out, b.out);
  free(a.out);
  free(b.out);
  scratch_remove(dir);
}

/* every model in tests/data/bad/ (each once crashed temper: issue 18) is
 * refused by lower and by run --check with exit 1 and the message its
 * first line expects, at a file:line:col */
static void test_bad_models_refused(void **state) {
  (void)state;
  result ls = sh("ls tests/data/bad/*.relay");
  int n = 0;
  for (char *save, *f = strtok_r(ls.out, "\n", &save); f; f = strtok_r(NULL, "\n", &save), n++) {
    char *text = read_text(f), want[256] = "";
    assert_non_null(text);
    assert_int_equal(sscanf(text, "// expect: %255[^\n]", want), 1);
    free(text);
    expect(sh("%s lower %s", TEMPER_BINARY, f), 1, want);
    expect(sh("%s run %s --check --repeat 1", TEMPER_BINARY, f), 1, want);
    expect(sh("%s lower %s", TEMPER_BINARY, f), 1, ": error: ");
  }
  free(ls.out);
  assert_true(n >= 8);
  /* a path of 2 KB: the message keeps its end and the cause */
  char dir[256], deep[4096];
  scratch_make(dir, sizeof dir, "temper_longpath");
  size_t k = (size_t)snprintf(deep, sizeof deep, "%s", dir);
  for (int i = 0; i < 9; i++) k += (size_t)snprintf(deep + k, sizeof deep - k, "/%0200d", i);
  expect(sh("mkdir -p %s && cp tests/data/bad/out_layout_no_factor.relay %s/m.relay", deep, deep), 0, NULL);
  expect(sh("%s lower %s/m.relay", TEMPER_BINARY, deep), 1, "8/m.relay:3:3: error: nn.conv2d: out_layout \"NCHWX\" is not supported");
  scratch_remove(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_models_refused),
      cmocka_unit_test(test_examples_pass_check), cmocka_unit_test(test_lower_seed_shows_two_primitive_functions),
                                     cmocka_unit_test(test_space_shows_added_blocks), cmocka_unit_test(test_fuse_expand_option),
      cmocka_unit_test(test_bad_models_exit_1),   cmocka_unit_test(test_inputs_params_and_outputs),
      cmocka_unit_test(test_npy_round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
