/* test_parse.c: the text format: TVM's astext() output accepted, print →
 * parse → print a fixed point, every error located and explained. */
#include "helpers.h"

static void fixed_point(const char *text) {
  temper_graph *g = parse_ok(text);
  char *p1 = temper_graph_print(g);
  temper_graph *g2 = parse_ok(p1);
  char *p2 = temper_graph_print(g2);
  if (strcmp(p1, p2)) fprintf(stderr, "first:\n%s\nsecond:\n%s\n", p1, p2);
  assert_string_equal(p1, p2);
  free(p1);
  free(p2);
  temper_graph_destroy(g);
  temper_graph_destroy(g2);
}

static void test_examples_round_trip(void **state) {
  (void)state;
  const char *files[] = {"examples/seed.relay", "examples/resnet_block.relay", "examples/resnet18.relay",
                         "examples/resnet50.relay", "tests/data/tvm_fused.relay"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    char *t = read_text(files[i]);
    assert_non_null(t);
    fixed_point(t);
    free(t);
  }
}

/* what TVM prints: header, ty comments, 1e-05f literals, tuple projection */
static void test_tvm_syntax(void **state) {
  (void)state;
  const char *text =
      "#[version = \"0.0.5\"]\n"
      "def @main(%data: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32], %g: Tensor[(4), float32],\n"
      "          %b: Tensor[(4), float32], %m: Tensor[(4), float32], %v: Tensor[(4), float32]) -> Tensor[(1, 4, 8, 8), float32] {\n"
      "  %0 = nn.conv2d(%data, %w, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]) /* ty=Tensor[(1, 4, 8, 8), float32] */;\n"
      "  %1 = nn.batch_norm(%0, %g, %b, %m, %v, epsilon=1e-05f) /* ty=(Tensor[(1, 4, 8, 8), float32], Tensor[(4), float32], Tensor[(4), float32]) */;\n"
      "  %2 = %1.0;\n"
      "  %3 = clip(%2, a_min=0f, a_max=6f);\n"
      "  add(%3, 1f) // a scalar constant\n"
      "}\n";
  temper_graph *g = parse_ok(text);
  node *body = g->main->body;
  assert_int_equal(body->op, OP_ADD);
  assert_int_equal(body->args[1]->kind, N_CONST);
  assert_int_equal(body->args[0]->op, OP_CLIP);
  assert_true(body->args[0]->attrs->v[ATTR_A_MAX].f == 6.0);
  assert_int_equal(body->args[0]->args[0]->kind, N_GETITEM);
  assert_int_equal(body->ty.shape.d[1], 4);
  temper_graph_destroy(g);
  fixed_point(text);
}

/* padding with 1, 2 and 4 values, as Relay */
static void test_padding_forms(void **state) {
  (void)state;
  const char *fmt = "def @main(%%x: Tensor[(1, 1, 5, 5), float32], %%w: Tensor[(1, 1, 3, 3), float32]) {\n"
                    "  nn.conv2d(%%x, %%w, padding=%s)\n}\n";
  const char *forms[] = {"1", "[1, 2]", "[1, 2, 3, 4]"};
  const int64_t want[3][4] = {{1, 1, 1, 1}, {1, 2, 1, 2}, {1, 2, 3, 4}};
  for (int i = 0; i < 3; i++) {
    char text[512];
    snprintf(text, sizeof text, fmt, forms[i]);
    temper_graph *g = parse_ok(text);
    for (int k = 0; k < 4; k++) assert_int_equal(g->main->body->attrs->v[ATTR_PADDING].i[k], want[i][k]);
    temper_graph_destroy(g);
  }
}

static void test_fused_program(void **state) {
  (void)state;
  char *t = read_text("tests/data/tvm_fused.relay");
  assert_non_null(t);
  temper_graph *g = parse_ok(t);
  node *body = g->main->body;
  assert_int_equal(body->kind, N_CALL);
  assert_int_equal(body->op, OP_FUNCALL);
  assert_true(body->callee->primitive);
  assert_int_equal(body->ty.shape.d[1], 2);
  temper_graph_destroy(g);
  free(t);
}

typedef struct bad_case { const char *text; const char *want; } bad_case;

#define MAIN1 "def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) {\n"
static const bad_case bad_cases[] = {
    {"", "1:1: error: expected 'def @main(...)', found end of input"},
    {"def @foo() { %x }", "expected '@main' after 'def'"},
    {MAIN1 "  nn.conv2d(%x, %w\n}\n", "3:1: error: expected ',' between arguments, found '}'"},
    {MAIN1 "  nn.conv3d(%x, %w)\n}\n", "2:3: error: unknown operator 'nn.conv3d'"},
    {MAIN1 "  nn.conv2d(%x, %y)\n}\n", "'%y' is not defined"},
    {MAIN1 "  nn.conv2d(%x, %w, foo=1)\n}\n", "nn.conv2d has no attribute 'foo'"},
    {MAIN1 "  nn.conv2d(%x, %w, strides=\"two\")\n}\n", "attribute 'strides' expects"},
    {MAIN1 "  nn.conv2d(%x, %w, groups=[1, 2])\n}\n", "attribute 'groups' expects an integer"},
    {MAIN1 "  nn.conv2d(%x, %w, padding=[1, 2, 3])\n}\n", "padding expects 1, 2 or 4 values, got 3"},
    {MAIN1 "  nn.conv2d(%x, %w, groups=1, groups=1)\n}\n", "attribute 'groups' given twice"},
    {MAIN1 "  nn.conv2d(%x)\n}\n", "nn.conv2d expects 2 arguments, got 1"},
    {MAIN1 "  nn.relu(%x, %w)\n}\n", "nn.relu expects 1 argument, got 2"},
    {MAIN1 "  %0 = nn.relu(%x);\n  %0 = nn.relu(%x);\n  %0\n}\n", "'%0' is already defined"},
    {MAIN1 "  %0 = nn.relu(%x)\n  %0\n}\n", "3:3: error: expected ';' after the binding, found '%0'"},
    {MAIN1 "  nn.relu(%x).0\n}\n", "projects a field of a tuple"},
    {MAIN1 "  %x(%w)\n}\n", "'%x' is called but is not a function"},
    {"def @main(%x: Tensor[(1, 3), float16]) { %x }", "only float32 tensors are supported"},
    {"def @main(%x: Tensor[(1, 0), float32]) { %x }", "expected a positive dimension"},
    {"def @main(%x: Tensor[(1, 3), float32], %x: Tensor[(1), float32]) { %x }", "parameter '%x' given twice"},
    {"def @main(%x: Tensor[(1, 3), float32]) { meta[relay.Constant][0] }", "metadata constants"},
    {"def @main(%x: Tensor[(1, 3), float32]) { %x } trailing", "expected end of input after @main"},
    {"def @main(%x: Tensor[(1, 3), float32]) { \"str }", "unterminated string"},
    {"def @main(%x: Tensor[(1, 3), float32]) { $ }", "unexpected character '$'"},
    {"def @main(%x: Tensor[(1, 3), float32]) -> Tensor[(1, 4), float32] { %x }", "declared to return Tensor[(1, 4), float32] but returns Tensor[(1, 3), float32]"},
    /* typeinfer */
    {"def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 2, 3, 3), float32]) { nn.conv2d(%x, %w) }",
     "nn.conv2d: input has 3 channels (3 per group), weight expects 2"},
    {"def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) { nn.conv2d(%x, %w, groups=2) }",
     "groups=2 does not divide the 3 input channels"},
    {"def @main(%x: Tensor[(1, 3, 2, 2), float32], %w: Tensor[(4, 3, 3, 3), float32]) { nn.conv2d(%x, %w) }",
     "is larger than the padded 2x2 input"},
    {"def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) { nn.conv2d(%x, %w, channels=5) }",
     "channels=5 but the weight has 4 output channels"},
    {"def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) { nn.conv2d(%x, %w, kernel_size=[5, 5]) }",
     "kernel_size=[5, 5] but the weight is 3x3"},
    {"def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) { nn.conv2d(%x, %w, data_layout=\"NHWC\") }",
     "data_layout \"NHWC\" is not supported"},
    {"def @main(%x: Tensor[(1, 3, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) { nn.conv2d(%x, %w) }",
     "data_layout \"NCHW\" is not supported for a 3-d input"},
    {"def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(4, 3), float32]) { add(%x, %y) }",
     "do not broadcast (dimension 0: 2 vs 4)"},
    {"def @main(%x: Tensor[(2, 3), float32], %b: Tensor[(2), float32]) { nn.bias_add(%x, %b) }",
     "bias has 2 elements, axis 1 has 3"},
    {"def @main(%x: Tensor[(2, 3), float32], %w: Tensor[(4, 5), float32]) { nn.dense(%x, %w) }",
     "input has 3 features, weight expects 5"},
    {"def @main(%x: Tensor[(2, 6), float32]) { reshape(%x, newshape=[5, -1]) }", "cannot infer -1 for 12 elements"},
    {"def @main(%x: Tensor[(2, 6), float32]) { reshape(%x, newshape=[4, 4]) }", "newshape has 16 elements, the input 12"},
    {"def @main(%x: Tensor[(2, 6), float32], %y: Tensor[(3, 5), float32]) { concatenate((%x, %y), axis=1) }",
     "field 2 differs in dimension 0"},
    {"def @main(%x: Tensor[(1, 2, 4, 4), float32]) { nn.max_pool2d(%x, pool_size=[5, 5]) }", "is larger than the padded input"},
    {"def @main(%x: Tensor[(2, 6), float32]) { nn.softmax(%x, axis=3) }", "nn.softmax: axis 3 out of range"},
    {"def @main(%x: Tensor[(2, 6), float32]) { clip(%x, a_min=1f, a_max=0f) }", "a_min is greater than a_max"},
    {"def @main(%x: Tensor[(2, 6), float32]) { nn.layer_norm(%x, axis=2) }", "nn.layer_norm: axis 2 out of range"},
    {"def @main(%x: Tensor[(2, 6), float32], %g: Tensor[(6), float32]) { nn.layer_norm(%x, %g) }", "with both gamma and beta"},
    {"def @main(%x: Tensor[(2, 6), float32], %g: Tensor[(2), float32]) { nn.layer_norm(%x, %g, %g) }",
     "argument 2 has 2 elements, axis 1 has 6"},
    {"def @main(%x: Tensor[(1, 2, 3, 3, 8), float32]) { nn.layer_norm(%x, axis=1, layout=\"NCHW16c\") }",
     "layout NCHW16c needs a 5-d input in its blocks"},
    {"def @main(%x: Tensor[(2, 6), float32]) { nn.layer_norm(%x, epsilon=-1f) }", "epsilon must be at least 0"},
    {"def @main(%x: Tensor[(1, 2, 3, 3, 8), float32], %g: Tensor[(2), float32]) { nn.layer_norm(%x, %g, %g, axis=1, layout=\"NCHW8c\") }",
     "gamma and beta only in layout NCHW"},
};

/* ceil_mode pools: a window may start in the leading padding or inside
 * the input, never wholly in the trailing padding (PyTorch's rule, which
 * its ONNX exports of GoogLeNet and SqueezeNet assume) */
static void test_ceil_mode_pool_shapes(void **state) {
  (void)state;
  static const struct { int h, k, s, pt, pb, want; } cases[] = {
      {3, 2, 2, 1, 1, 2},     /* ceil((3+2-2)/2)+1 = 3, but window 3 starts at row 3, in the padding */
      {112, 3, 2, 0, 0, 56},  /* GoogLeNet's first pool: 55.5 → 56 */
      {5, 2, 2, 0, 0, 3},     /* the last window starts at row 4, inside */
      {4, 3, 2, 0, 0, 2},
      {6, 3, 3, 1, 1, 3},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char text[256];
    snprintf(text, sizeof text, "def @main(%%x: Tensor[(1, 2, %d, %d), float32]) { nn.max_pool2d(%%x, pool_size=[%d, %d], "
             "strides=[%d, %d], padding=[%d, %d, %d, %d], ceil_mode=True) }", cases[i].h, cases[i].h, cases[i].k, cases[i].k,
             cases[i].s, cases[i].s, cases[i].pt, cases[i].pt, cases[i].pb, cases[i].pb);
    temper_graph *g = parse_ok(text);
    if (g->main->body->ty.shape.d[2] != cases[i].want) fprintf(stderr, "%s: height %lld, want %d\n", text, (long long)g->main->body->ty.shape.d[2], cases[i].want);
    assert_int_equal(g->main->body->ty.shape.d[2], cases[i].want);
    assert_int_equal(g->main->body->ty.shape.d[3], cases[i].want);
    temper_graph_destroy(g);
  }
}

static void test_errors(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof bad_cases / sizeof *bad_cases; i++) parse_fails(bad_cases[i].text, bad_cases[i].want);
}

/* the message shows the line and a caret under the column */
static void test_error_shows_line(void **state) {
  (void)state;
  temper_graph *g = NULL;
  char *err = NULL;
  temper_graph_parse(MAIN1 "  nn.conv2d(%x, %w, foo=1)\n}\n", "m.relay", &g, &err);
  assert_non_null(err);
  assert_non_null(strstr(err, "m.relay:2:21: error:"));
  assert_non_null(strstr(err, "\n    nn.conv2d(%x, %w, foo=1)\n                      ^"));
  free(err);
}

/* a function marked primitive with two complex ops parses; lowering refuses it (test_engine) */
static void test_deep_nesting_is_an_error(void **state) {
  (void)state;
  size_t n = 5000;
  char *t = malloc(n * 10 + 200);
  strcpy(t, "def @main(%x: Tensor[(1), float32]) { ");
  for (size_t i = 0; i < n; i++) strcat(t, "nn.relu(");
  strcat(t, "%x");
  for (size_t i = 0; i < n; i++) strcat(t, ")");
  strcat(t, " }");
  parse_fails(t, "nested too deeply");
  free(t);
}

/* a long chain of bindings: no recursion limits in the passes */
static void test_long_chain(void **state) {
  (void)state;
  size_t n = 20000;
  char *t = malloc(n * 40 + 200);
  char *p = t + sprintf(t, "def @main(%%x: Tensor[(4), float32]) {\n  %%0 = nn.relu(%%x);\n");
  for (size_t i = 1; i < n; i++) p += sprintf(p, "  %%%zu = nn.relu(%%%zu);\n", i, i - 1);
  sprintf(p, "  %%%zu\n}\n", n - 1);
  temper_graph *g = parse_ok(t);
  char *printed = temper_graph_print(g);
  assert_non_null(printed);
  free(printed);
  temper_graph_destroy(g);
  free(t);
}

/* allocation failure at every point: an error, never a crash or a leak */
static void test_out_of_memory(void **state) {
  (void)state;
  char *t = read_text("examples/resnet_block.relay");
  assert_non_null(t);
  int failures = 0;
  for (size_t limit = 64; limit < 400000; limit = limit * 3 / 2) {
    temper_graph *g = NULL;
    diag d = {0};
    arena_test_limit = limit;
    temper_status s = parse_graph(t, "oom.relay", &g, &d);
    arena_test_limit = 0;
    if (s) {
      assert_int_equal(s, TEMPER_ENOMEM);
      assert_null(g);
      failures++;
    }
    temper_graph_destroy(g);
  }
  assert_true(failures > 5);
  free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_examples_round_trip), cmocka_unit_test(test_tvm_syntax),
      cmocka_unit_test(test_padding_forms),        cmocka_unit_test(test_fused_program),
      cmocka_unit_test(test_errors),               cmocka_unit_test(test_error_shows_line),
      cmocka_unit_test(test_deep_nesting_is_an_error), cmocka_unit_test(test_long_chain),
      cmocka_unit_test(test_out_of_memory),        cmocka_unit_test(test_ceil_mode_pool_shapes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
