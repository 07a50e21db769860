/* test_engine.c: the compile engine and codegen end to end. The seed case
 * through lower and the executor; the two-complex-ops error; the kernel
 * cache; every op against the reference interpreter on odd shapes. */
#include <math.h>
#include <stdint.h>
#include "codegen.h"
#include "engine.h"
#include "helpers.h"
#include "schedules.h"
#include "space.h"

/* lowering for 16-float vectors, with this machine's caches */
static const cg_target avx512 = {.vec = 16};

static void check_against_reference(const char *text, int threads) {
  pipeline_opts o = {.vec = engine->target.vec};
  check_against_reference_with(text, threads, &o, 1e-4);
}

static void test_seed_lower_and_run(void **state) {
  (void)state;
  char *t = read_text("examples/seed.relay");
  temper_graph *g = parse_ok(t);
  diag d = {0};
  float w[2 * 10 * 9], w1[2 * 2 * 9];
  for (int i = 0; i < 180; i++) w[i] = (float)(i % 7) - 3;
  for (int i = 0; i < 36; i++) w1[i] = (float)(i % 5) - 2;
  float *vals[3] = {NULL, w, w1};
  assert_int_equal(bind_params(g, vals, &d), TEMPER_OK);
  assert_int_equal(pipeline_optimize(g, engine->target.vec, &d), TEMPER_OK);
  /* lower on the non-primitive main: one kernel per primitive function */
  kernel **ks = NULL;
  int n = 0;
  assert_int_equal(engine_lower(engine, g->main, &ks, &n, &d), TEMPER_OK);
  assert_int_equal(n, 2);   /* the first conv reads NCHW, the second writes NCHW: no transforms */
  assert_ptr_not_equal(ks[0], ks[1]);
  assert_non_null(strstr(ks[0]->name, "fused_nn_conv2d"));
  /* lower on one primitive function: that one kernel, from the cache */
  node *first = g->main->body->args[0]->callee;   /* main's result calls conv 2 on conv 1's call */
  assert_true(first->primitive);
  kernel **one = NULL;
  int n1 = 0;
  int hits = engine->n_hits;
  assert_int_equal(engine_lower(engine, first, &one, &n1, &d), TEMPER_OK);
  assert_int_equal(n1, 1);
  assert_ptr_equal(one[0], ks[0]);
  assert_int_equal(engine->n_hits, hits + 1);
  /* the executor (what build runs) uses the same kernels */
  exec *x = NULL;
  assert_int_equal(exec_create(engine, g, 1, &x, &d), TEMPER_OK);
  assert_int_equal(x->n_steps, 2);
  assert_ptr_equal(x->steps[0].k, ks[0]);
  assert_ptr_equal(x->steps[1].k, ks[1]);
  /* each kernel knows the workload its conv2d computes (the key a chooser is asked for) */
  assert_true(strncmp(ks[0]->workload, "conv2d_n1_", 10) == 0);
  conv_workload cw;
  assert_int_equal(workload_from_key(ks[1]->workload, &cw), 0);
  /* timed per step: each step's time, and together the whole */
  double step_s[2], whole = exec_run_timed(x, step_s);
  assert_true(step_s[0] > 0 && step_s[1] > 0);
  assert_true(fabs(step_s[0] + step_s[1] - whole) <= 1e-9 * (1 + whole));
  /* every buffer in one block, at 64-byte boundaries, in creation order: a
   * second build of the program places its buffers at the same offsets */
  exec *y = NULL;
  assert_int_equal(exec_create(engine, g, 1, &y, &d), TEMPER_OK);
  assert_int_equal(y->n_bufs, x->n_bufs);
  for (int i = 0; i < x->n_bufs; i++) {
    assert_int_equal((uintptr_t)x->bufs[i] % 64, 0);
    assert_true((char *)x->bufs[i] >= (char *)x->block && (char *)x->bufs[i] < (char *)x->block + x->block_len);
    assert_int_equal((char *)x->bufs[i] - (char *)x->bufs[0], (char *)y->bufs[i] - (char *)y->bufs[0]);
  }
  exec_destroy(y);
  exec_destroy(x);
  free(ks);
  free(one);
  temper_graph_destroy(g);
  check_against_reference(t, 1);
  check_against_reference(t, 2);
  free(t);
}

/* lowering main of `text` fails with status `want` and a message holding `msg` */
static void lower_refused(const char *text, temper_status want, const char *msg) {
  temper_graph *g = parse_ok(text);
  diag d = {0};
  kernel **ks = NULL;
  int n = 0;
  temper_status got = engine_lower(engine, g->main, &ks, &n, &d);
  if (got != want) fail_msg("status %d, wanted %d: \"%s\"", (int)got, (int)want, d.msg);
  assert_null(ks);
  if (!strstr(d.msg, msg)) fprintf(stderr, "wanted \"%s\", got \"%s\"\n", msg, d.msg);
  assert_non_null(strstr(d.msg, msg));
  temper_graph_destroy(g);
}

static void test_two_complex_ops_refused(void **state) {
  (void)state;
  lower_refused(
      "def @main(%x: Tensor[(1, 4, 8, 8), float32], %w: Tensor[(4, 4, 3, 3), float32]) {\n"
      "  %0 = fn (%p0: Tensor[(1, 4, 8, 8), float32], %p1: Tensor[(4, 4, 3, 3), float32], Primitive=1) {\n"
      "    %1 = nn.conv2d(%p0, %p1, padding=[1, 1]);\n"
      "    nn.conv2d(%1, %p1, padding=[1, 1])\n"
      "  };\n"
      "  %0(%x, %w)\n}\n",
      TEMPER_EINVAL, "nn.conv2d fed by nn.conv2d in one function needs the schedules of both");
  lower_refused(
      "def @main(%x: Tensor[(1, 4, 8, 8), float32], %w: Tensor[(4, 4, 3, 3), float32]) {\n"
      "  %0 = fn (%p0: Tensor[(1, 4, 8, 8), float32], %p1: Tensor[(4, 4, 3, 3), float32], Primitive=1) {\n"
      "    %1 = nn.conv2d(%p0, %p1, padding=[1, 1]);\n"
      "    %2 = nn.conv2d(%1, %p1, padding=[1, 1]);\n"
      "    nn.conv2d(%2, %p1, padding=[1, 1])\n"
      "  };\n"
      "  %0(%x, %w)\n}\n",
      TEMPER_EINVAL, "two complicated ops in one primitive function: nn.conv2d at 3:10 and nn.conv2d at 5:5");
  /* a schedule text outside the conv2d's space, alone and as a joined pair's producer */
  lower_refused(
      "def @main(%x: Tensor[(1, 1, 8, 8, 16), float32], %w: Tensor[(1, 1, 3, 3, 16, 16), float32]) {\n"
      "  %0 = fn (%p0: Tensor[(1, 1, 8, 8, 16), float32], %p1: Tensor[(1, 1, 3, 3, 16, 16), float32], Primitive=1) {\n"
      "    nn.conv2d(%p0, %p1, padding=[1, 1], channels=16, data_layout=\"NCHW16c\", kernel_layout=\"OIHW16i16o\", out_layout=\"NCHW16c\",\n"
      "              schedule=\"conv2d_nchwc:ic_bn=3,oc_bn=16,ow_bn=4,oh_bn=1,unroll_kw=1,order=0,par=0\")\n"
      "  };\n"
      "  %0(%x, %w)\n}\n",
      TEMPER_EINVAL, "nn.conv2d schedule \"conv2d_nchwc:ic_bn=3,");
  lower_refused(
      "def @main(%x: Tensor[(1, 1, 8, 8, 16), float32], %w: Tensor[(1, 1, 3, 3, 16, 16), float32]) {\n"
      "  %0 = fn (%p0: Tensor[(1, 1, 8, 8, 16), float32], %p1: Tensor[(1, 1, 3, 3, 16, 16), float32], Primitive=1) {\n"
      "    %1 = nn.conv2d(%p0, %p1, padding=[1, 1], channels=16, data_layout=\"NCHW16c\", kernel_layout=\"OIHW16i16o\", out_layout=\"NCHW16c\",\n"
      "              schedule=\"conv2d_nchwc:ic_bn=3,oc_bn=16,ow_bn=4,oh_bn=1,unroll_kw=1,order=0,par=0\");\n"
      "    nn.conv2d(%1, %p1, padding=[1, 1], channels=16, data_layout=\"NCHW16c\", kernel_layout=\"OIHW16i16o\", out_layout=\"NCHW16c\",\n"
      "              schedule=\"conv2d_nchwc:ic_bn=16,oc_bn=16,ow_bn=4,oh_bn=1,unroll_kw=1,order=0,par=0\")\n"
      "  };\n"
      "  %0(%x, %w)\n}\n",
      TEMPER_EINVAL, "nn.conv2d schedule \"conv2d_nchwc:ic_bn=3,");
  /* the consumer's schedule alone is not enough */
  lower_refused(
      "def @main(%x: Tensor[(1, 1, 8, 8, 16), float32], %w: Tensor[(1, 1, 3, 3, 16, 16), float32]) {\n"
      "  %0 = fn (%p0: Tensor[(1, 1, 8, 8, 16), float32], %p1: Tensor[(1, 1, 3, 3, 16, 16), float32], Primitive=1) {\n"
      "    %1 = nn.conv2d(%p0, %p1, padding=[1, 1], channels=16, data_layout=\"NCHW16c\", kernel_layout=\"OIHW16i16o\", out_layout=\"NCHW16c\");\n"
      "    nn.conv2d(%1, %p1, padding=[1, 1], channels=16, data_layout=\"NCHW16c\", kernel_layout=\"OIHW16i16o\", out_layout=\"NCHW16c\",\n"
      "              schedule=\"conv2d_nchwc:ic_bn=16,oc_bn=16,ow_bn=4,oh_bn=1,unroll_kw=1,order=0,par=0\")\n"
      "  };\n"
      "  %0(%x, %w)\n}\n",
      TEMPER_EINVAL, "nn.conv2d fed into nn.conv2d in one function needs a schedule");
  /* a pair only where the first is a depthwise conv2d and the second a 1×1, or the reverse */
  lower_refused(
      "def @main(%x: Tensor[(1, 1, 8, 8, 16), float32], %w: Tensor[(1, 1, 3, 3, 16, 16), float32]) {\n"
      "  %0 = fn (%p0: Tensor[(1, 1, 8, 8, 16), float32], %p1: Tensor[(1, 1, 3, 3, 16, 16), float32], Primitive=1) {\n"
      "    %1 = nn.conv2d(%p0, %p1, padding=[1, 1], channels=16, data_layout=\"NCHW16c\", kernel_layout=\"OIHW16i16o\", out_layout=\"NCHW16c\",\n"
      "              schedule=\"conv2d_nchwc:ic_bn=16,oc_bn=16,ow_bn=4,oh_bn=1,unroll_kw=1,order=0,par=0\");\n"
      "    nn.conv2d(%1, %p1, padding=[1, 1], channels=16, data_layout=\"NCHW16c\", kernel_layout=\"OIHW16i16o\", out_layout=\"NCHW16c\",\n"
      "              schedule=\"conv2d_nchwc:ic_bn=16,oc_bn=16,ow_bn=4,oh_bn=1,unroll_kw=1,order=0,par=0\")\n"
      "  };\n"
      "  %0(%x, %w)\n}\n",
      TEMPER_EINTERNAL, "cannot feed nn.conv2d (conv2d_nchwc:ic_bn=16,oc_bn=16,ow_bn=4,oh_bn=1,unroll_kw=1,order=0,par=0) in one kernel");
  /* a 1×1 into a depthwise only where the depthwise is not dilated (conv2d_pwdw.c's ring holds consecutive rows);
   * blocks of 16, candidates with 8- and 16-float vectors alike */
  lower_refused(
      "def @main(%x: Tensor[(1, 16, 40, 40), float32], %w1: Tensor[(6, 2, 1, 1, 8, 16), float32], %w: Tensor[(6, 1, 3, 3, 1, 16), float32]) {\n"
      "  %0 = fn (%p0: Tensor[(1, 16, 40, 40), float32], %p1: Tensor[(6, 2, 1, 1, 8, 16), float32], %p2: Tensor[(6, 1, 3, 3, 1, 16), float32], Primitive=1) {\n"
      "    %1 = nn.conv2d(%p0, %p1, channels=96, kernel_layout=\"OIHW8i16o\", out_layout=\"NCHW16c\",\n"
      "              schedule=\"conv2d_1x1:ic_bn=8,oc_bn=16,m_bn=4,unroll_ic=0,loop=1\");\n"
      "    nn.conv2d(%1, %p2, strides=[2, 2], padding=[2, 2, 2, 2], dilation=[2, 2], groups=96, channels=96, data_layout=\"NCHW16c\",\n"
      "              kernel_layout=\"OIHW1i16o\", out_layout=\"NCHW16c\", schedule=\"conv2d_depthwise:c_bn=16,ow_bn=2,unroll_kw=1,par=0\")\n"
      "  };\n"
      "  %0(%x, %w1, %w)\n}\n",
      TEMPER_EINTERNAL, "conv2d_pwdw: nn.conv2d (conv2d_1x1:ic_bn=8,oc_bn=16,m_bn=4,unroll_ic=0,loop=1) cannot feed nn.conv2d");
}

/* a direct conv2d cannot read channel blocks smaller than its ic_bn as they
 * are (config_reads_block), nor one whose block spans groups NCHW: a layout
 * pass never makes one, and a hand-written one is refused with the layouts
 * and the schedule named, not miscompiled */
static void test_unreadable_input_block_refused(void **state) {
  (void)state;
  lower_refused(
      "def @main(%x: Tensor[(1, 4, 8, 8, 16), float32], %w: Tensor[(1, 2, 3, 3, 32, 16), float32]) {\n"
      "  %0 = fn (%p0: Tensor[(1, 4, 8, 8, 16), float32], %p1: Tensor[(1, 2, 3, 3, 32, 16), float32], Primitive=1) {\n"
      "    nn.conv2d(%p0, %p1, padding=[1, 1], channels=16, data_layout=\"NCHW16c\", kernel_layout=\"OIHW32i16o\", out_layout=\"NCHW16c\",\n"
      "              schedule=\"conv2d_nchwc:ic_bn=32,oc_bn=16,ow_bn=4,oh_bn=1,unroll_kw=1,order=0,par=0\")\n"
      "  };\n"
      "  %0(%x, %w)\n}\n",
      TEMPER_EINTERNAL, "the layouts (NCHW16c, OIHW32i16o, NCHW16c) do not match the schedule");
  /* a block spanning groups loads its lanes from one stored block: not from NCHW */
  lower_refused(
      "def @main(%x: Tensor[(1, 32, 8, 8), float32], %w: Tensor[(2, 1, 3, 3, 4, 16), float32]) {\n"
      "  %0 = fn (%p0: Tensor[(1, 32, 8, 8), float32], %p1: Tensor[(2, 1, 3, 3, 4, 16), float32], Primitive=1) {\n"
      "    nn.conv2d(%p0, %p1, padding=[1, 1], groups=8, channels=32, kernel_layout=\"OIHW4i16o\", out_layout=\"NCHW16c\",\n"
      "              schedule=\"conv2d_nchwc:ic_bn=4,oc_bn=16,ow_bn=2,oh_bn=3,unroll_kw=1,order=0,par=0\")\n"
      "  };\n"
      "  %0(%x, %w)\n}\n",
      TEMPER_EINTERNAL, "the layouts (NCHW, OIHW4i16o, NCHW16c) do not match the schedule");
}

/* an engine for a target wider than the host is refused by name; one for
 * the host's own target compiles */
static void test_engine_for_target(void **state) {
  (void)state;
  cg_target t;
  diag d = {0};
  assert_int_equal(cg_host_target(&t, &d), TEMPER_OK);
  t.vec *= 2;
  snprintf(t.cpu, sizeof t.cpu, "wider");
  temper_engine *e = NULL;
  assert_int_equal(engine_create_for(&e, &t, &d), TEMPER_EINVAL);
  assert_null(e);
  assert_non_null(strstr(d.msg, "cannot run code for wider"));
  t.vec /= 2;
  d = (diag){0};
  assert_int_equal(engine_create_for(&e, &t, &d), TEMPER_OK);
  assert_int_equal(e->target.vec, t.vec);
  engine_destroy(e);
}

static void test_unfused_op_in_main_refused(void **state) {
  (void)state;
  temper_graph *g = parse_ok("def @main(%x: Tensor[(4), float32]) { nn.relu(%x) }");
  diag d = {0};
  kernel **ks = NULL;
  int n = 0;
  assert_int_equal(engine_lower(engine, g->main, &ks, &n, &d), TEMPER_EINVAL);
  assert_non_null(strstr(d.msg, "run fuse first"));
  temper_graph_destroy(g);
}

/* ResNet-18's repeated blocks compile once */
static void test_cache_shares_identical_functions(void **state) {
  (void)state;
  char *t = read_text("examples/resnet18.relay");
  temper_graph *g = parse_ok(t);
  free(t);
  int np = g->main->n_params;
  float **vals = calloc((size_t)np, sizeof(float *));
  for (int i = 1; i < np; i++) {
    node *p = g->main->params[i];
    vals[i] = malloc(sizeof(float) * (size_t)shape_numel(&p->ty.shape));
    data_random_param(vals[i], &p->ty.shape, (uint64_t)i, 0, data_name_positive(p->name));
  }
  diag d = {0};
  assert_int_equal(bind_params(g, vals, &d), TEMPER_OK);
  assert_int_equal(pipeline_optimize(g, engine->target.vec, &d), TEMPER_OK);
  kernel **ks = NULL;
  int n = 0, before = engine->n_compiled;
  assert_int_equal(engine_lower(engine, g->main, &ks, &n, &d), TEMPER_OK);
  int compiled = engine->n_compiled - before;
  assert_true(n > compiled);   /* 25 calls, fewer distinct kernels */
  /* a second lowering compiles nothing */
  kernel **ks2 = NULL;
  int n2 = 0;
  before = engine->n_compiled;
  assert_int_equal(engine_lower(engine, g->main, &ks2, &n2, &d), TEMPER_OK);
  assert_int_equal(engine->n_compiled, before);
  assert_int_equal(n2, n);
  for (int i = 0; i < n; i++) assert_ptr_equal(ks[i], ks2[i]);
  free(ks);
  free(ks2);
  for (int i = 1; i < np; i++) free(vals[i]);
  free(vals);
  temper_graph_destroy(g);
}

#define CONV(xs, ws, attrs) \
  "def @main(%x: Tensor[" xs ", float32], %w: Tensor[" ws ", float32]) { nn.conv2d(%x, %w" attrs ") }"

static const char *const op_cases[] = {
    /* conv2d: odd widths and channels, strides, dilation, asymmetric padding, groups */
    CONV("(1, 3, 7, 7)", "(10, 3, 3, 3)", ""),
    CONV("(1, 10, 13, 13)", "(3, 10, 3, 3)", ", padding=[1, 1]"),
    CONV("(1, 3, 13, 7)", "(16, 3, 3, 3)", ", strides=[2, 2], padding=[1, 1]"),
    CONV("(1, 10, 13, 13)", "(32, 10, 3, 3)", ", dilation=[2, 2], padding=[2, 2]"),
    CONV("(1, 4, 9, 11)", "(48, 4, 3, 5)", ", padding=[0, 1, 2, 3]"),
    CONV("(2, 5, 13, 13)", "(20, 5, 1, 1)", ", strides=[2, 2]"),
    CONV("(1, 3, 29, 29)", "(64, 3, 7, 7)", ", strides=[2, 2], padding=[3, 3]"),
    CONV("(1, 4, 7, 13)", "(6, 2, 3, 3)", ", groups=2, padding=[1, 1]"),
    CONV("(1, 10, 13, 7)", "(10, 1, 3, 3)", ", groups=10, padding=[1, 1], strides=[2, 1]"),
    CONV("(1, 16, 14, 14)", "(32, 16, 3, 3)", ", padding=[1, 1]"),
    /* epilogues */
    "def @main(%x: Tensor[(1, 10, 7, 13), float32], %w: Tensor[(20, 10, 3, 3), float32], %b: Tensor[(20), float32]) {\n"
    "  %0 = nn.conv2d(%x, %w, padding=[1, 1]);\n  %1 = nn.bias_add(%0, %b);\n  nn.relu(%1)\n}",
    "def @main(%x: Tensor[(1, 10, 7, 13), float32], %w: Tensor[(10, 10, 3, 3), float32], %s: Tensor[(10, 7, 13), float32]) {\n"
    "  %0 = nn.conv2d(%x, %w, padding=[1, 1]);\n  %1 = add(%0, %x);\n  %2 = multiply(%1, %s);\n  clip(%2, a_min=-0.5f, a_max=0.5f)\n}",
    "def @main(%x: Tensor[(1, 3, 7, 7), float32], %w: Tensor[(5, 3, 3, 3), float32]) {\n"
    "  %0 = nn.conv2d(%x, %w);\n  %1 = sigmoid(%0);\n  %2 = subtract(%0, 1f);\n  divide(%1, %2)\n}",
    /* batch_norm on a conv (folded) and on its own (multiply + add kernel) */
    "def @main(%x: Tensor[(1, 3, 7, 7), float32], %w: Tensor[(10, 3, 3, 3), float32], %gamma: Tensor[(10), float32],\n"
    "          %beta: Tensor[(10), float32], %mean: Tensor[(10), float32], %var: Tensor[(10), float32]) {\n"
    "  %0 = nn.conv2d(%x, %w);\n  %1 = nn.batch_norm(%0, %gamma, %beta, %mean, %var);\n  %2 = %1.0;\n  nn.relu(%2)\n}",
    "def @main(%x: Tensor[(2, 3, 5, 5), float32], %gamma: Tensor[(3), float32], %beta: Tensor[(3), float32],\n"
    "          %mean: Tensor[(3), float32], %var: Tensor[(3), float32]) {\n"
    "  %0 = nn.batch_norm(%x, %gamma, %beta, %mean, %var, epsilon=0.01f);\n  %0.0\n}",
    /* dense */
    "def @main(%x: Tensor[(2, 37), float32], %w: Tensor[(10, 37), float32], %b: Tensor[(10), float32]) {\n"
    "  %0 = nn.dense(%x, %w);\n  %1 = nn.bias_add(%0, %b);\n  nn.relu(%1)\n}",
    "def @main(%x: Tensor[(1, 64), float32], %w: Tensor[(3, 64), float32]) { nn.dense(%x, %w, units=3) }",
    /* transposes around elementwise ops cancel (sink.c): a SiLU with a bias in NHWC between two convs;
     * and not when a value inside is used outside too */
    "def @main(%x: Tensor[(1, 8, 5, 6), float32], %b: Tensor[(8), float32], %w: Tensor[(8, 8, 1, 1), float32]) {\n"
    "  %0 = transpose(%x, axes=[0, 2, 3, 1]);\n  %1 = add(%0, %b);\n  %2 = sigmoid(%1);\n  %3 = multiply(%1, %2);\n"
    "  %4 = transpose(%3, axes=[0, 3, 1, 2]);\n  nn.conv2d(%4, %w, kernel_size=[1, 1])\n}",
    "def @main(%x: Tensor[(1, 8, 5, 6), float32], %b: Tensor[(6, 8), float32]) {\n"
    "  %0 = transpose(%x, axes=[0, 2, 3, 1]);\n  %1 = multiply(%b, %0);\n  %2 = tanh(%1);\n"
    "  %3 = transpose(%2, axes=[0, 3, 1, 2]);\n  (%3, %1)\n}",
    /* dense over many rows: a 1×1 conv2d (simplify.c), rows as square as they factor, or one row of 17 */
    "def @main(%x: Tensor[(35, 37), float32], %w: Tensor[(10, 37), float32], %b: Tensor[(10), float32]) {\n"
    "  %0 = nn.dense(%x, %w);\n  %1 = nn.bias_add(%0, %b);\n  nn.relu(%1)\n}",
    "def @main(%x: Tensor[(64, 48), float32], %w: Tensor[(40, 48), float32]) { nn.dense(%x, %w) }",
    "def @main(%x: Tensor[(17, 20), float32], %w: Tensor[(33, 20), float32]) { sigmoid(nn.dense(%x, %w)) }",
    /* pooling */
    "def @main(%x: Tensor[(1, 3, 13, 7), float32]) { nn.max_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1]) }",
    "def @main(%x: Tensor[(1, 3, 13, 7), float32]) { nn.avg_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1]) }",
    "def @main(%x: Tensor[(1, 3, 13, 7), float32]) { nn.avg_pool2d(%x, pool_size=[3, 2], strides=[2, 2], padding=[1, 1], ceil_mode=True, count_include_pad=True) }",
    "def @main(%x: Tensor[(2, 10, 7, 13), float32]) {\n  %0 = nn.global_avg_pool2d(%x);\n  nn.relu(%0)\n}",
    /* a global average in NCHW, a vector at a time: whole vectors (ConvNeXt's layer-norm mean over 96
     * channels per pixel), a plane below one vector (the scalar reduction) */
    "def @main(%x: Tensor[(1, 40, 96, 1), float32]) {\n  %0 = nn.global_avg_pool2d(%x);\n  %1 = reshape(%0, newshape=[1, 40, 1]);\n"
    "  %2 = reshape(%x, newshape=[1, 40, 96]);\n  subtract(%2, %1)\n}",
    "def @main(%x: Tensor[(2, 3, 2, 3), float32]) { nn.global_avg_pool2d(%x) }",
    /* a zero pad into an average pool: the pool with that padding counted (simplify.c) */
    "def @main(%x: Tensor[(1, 3, 13, 7), float32]) {\n  %0 = nn.relu(%x);\n"
    "  %1 = nn.pad(%0, pad_width=[[0, 0], [0, 0], [1, 2], [2, 1]]);\n  nn.avg_pool2d(%1, pool_size=[3, 3], strides=[2, 2])\n}",
    /* elementwise, broadcasting, injective */
    "def @main(%x: Tensor[(2, 3, 4), float32], %y: Tensor[(3, 1), float32]) {\n"
    "  %0 = add(%x, %y);\n  %1 = subtract(%0, %y);\n  %2 = multiply(%1, 2f);\n  %3 = divide(%2, %y);\n  sigmoid(%3)\n}",
    /* by a constant: times its reciprocal */
    "def @main(%x: Tensor[(2, 3, 4), float32]) {\n  %0 = divide(%x, 1.41421354f);\n  %1 = erf(%0);\n  divide(%1, 3f)\n}",
    "def @main(%x: Tensor[(2, 3, 4, 5), float32]) {\n  %0 = nn.relu(%x);\n  %1 = nn.batch_flatten(%0);\n  reshape(%1, newshape=[0, 5, -1])\n}",
    "def @main(%x: Tensor[(1, 3, 4, 5), float32], %y: Tensor[(1, 2, 4, 5), float32]) {\n"
    "  %0 = nn.relu(%x);\n  concatenate((%0, %y, %x), axis=1)\n}",
    "def @main(%x: Tensor[(3, 17), float32]) { nn.softmax(%x) }",
    "def @main(%x: Tensor[(1, 3, 5, 4), float32]) {\n  %0 = nn.relu(%x);\n  nn.pad(%0, pad_width=[[0, 0], [1, 0], [2, 1], [0, 3]], pad_value=0.5f)\n}",
    "def @main(%x: Tensor[(2, 5, 3, 3), float32]) { nn.softmax(%x, axis=1) }",
    /* layer norm: ConvNeXt's, as ONNX's opset 13 writes it, between two conv2d in NHWC permutes (one
     * nn.layer_norm, sunk to the channels of the blocked conv2d output); the same with its deviation also
     * an output; Relay's with gamma and beta over NCHW's channels, over a last axis */
    "def @main(%x: Tensor[(1, 8, 5, 6), float32], %w1: Tensor[(48, 8, 3, 3), float32], %g: Tensor[(48), float32],\n"
    "          %b: Tensor[(48), float32], %w2: Tensor[(16, 48, 1, 1), float32]) {\n"
    "  %0 = nn.conv2d(%x, %w1, padding=[1, 1]);\n  %1 = transpose(%0, axes=[0, 2, 3, 1]);\n"
    "  %2 = reshape(%1, newshape=[1, 30, 48, 1]);\n  %3 = nn.global_avg_pool2d(%2);\n  %4 = reshape(%3, newshape=[1, 5, 6, 1]);\n"
    "  %5 = subtract(%1, %4);\n  %6 = multiply(%5, %5);\n  %7 = reshape(%6, newshape=[1, 30, 48, 1]);\n"
    "  %8 = nn.global_avg_pool2d(%7);\n  %9 = reshape(%8, newshape=[1, 5, 6, 1]);\n  %10 = add(%9, 1e-06f);\n"
    "  %11 = sqrt(%10);\n  %12 = divide(%5, %11);\n  %13 = multiply(%12, %g);\n  %14 = add(%13, %b);\n"
    "  %15 = transpose(%14, axes=[0, 3, 1, 2]);\n  nn.conv2d(%15, %w2, kernel_size=[1, 1])\n}",
    "def @main(%x: Tensor[(2, 3, 4, 7), float32]) {\n"
    "  %0 = reshape(%x, newshape=[1, 24, 7, 1]);\n  %1 = nn.global_avg_pool2d(%0);\n  %2 = reshape(%1, newshape=[2, 3, 4, 1]);\n"
    "  %3 = subtract(%x, %2);\n  %4 = multiply(%3, %3);\n  %5 = reshape(%4, newshape=[1, 24, 7, 1]);\n"
    "  %6 = nn.global_avg_pool2d(%5);\n  %7 = reshape(%6, newshape=[2, 3, 4, 1]);\n  %8 = add(%7, 0.01f);\n"
    "  %9 = sqrt(%8);\n  %10 = divide(%3, %9);\n  (%10, %3)\n}",
    "def @main(%x: Tensor[(2, 5, 3, 4), float32], %g: Tensor[(5), float32], %b: Tensor[(5), float32]) {\n"
    "  nn.layer_norm(%x, %g, %b, axis=1)\n}",
    "def @main(%x: Tensor[(3, 17), float32]) {\n  %0 = nn.layer_norm(%x, epsilon=0.001f);\n  nn.relu(%0)\n}",
    /* several outputs */
    "def @main(%x: Tensor[(2, 5), float32]) {\n  %0 = nn.relu(%x);\n  %1 = sigmoid(%x);\n  (%0, %1)\n}",
};

static void test_every_op_against_reference(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof op_cases / sizeof *op_cases; i++) {
    check_against_reference(op_cases[i], 1);
    check_against_reference(op_cases[i], 2);
  }
}

static void test_resnet_block_against_reference(void **state) {
  (void)state;
  char *t = read_text("examples/resnet_block.relay");
  check_against_reference(t, 2);
  free(t);
}

/* the loop IR prints and names its loops */
/* activations between NCHW and NCHW<b>c in every direction (the vector-copy
 * schedule: slices, whole blocks, strided rows with a masked tail) */
static void test_layout_transforms(void **state) {
  (void)state;
  check_against_reference("def @main(%x: Tensor[(1, 48, 5, 13), float32]) {\n"
                "  %0 = layout_transform(%x, src_layout=\"NCHW\", dst_layout=\"NCHW8c\");\n"
                "  %1 = nn.max_pool2d(%0, layout=\"NCHW8c\");\n"
                "  %2 = layout_transform(%1, src_layout=\"NCHW8c\", dst_layout=\"NCHW16c\");\n"
                "  %3 = nn.max_pool2d(%2, layout=\"NCHW16c\");\n"
                "  %4 = layout_transform(%3, src_layout=\"NCHW16c\", dst_layout=\"NCHW4c\");\n"
                "  %5 = nn.max_pool2d(%4, layout=\"NCHW4c\");\n"
                "  %6 = layout_transform(%5, src_layout=\"NCHW4c\", dst_layout=\"NCHW48c\");\n"
                "  %7 = nn.max_pool2d(%6, layout=\"NCHW48c\");\n"
                "  %8 = layout_transform(%7, src_layout=\"NCHW48c\", dst_layout=\"NCHW\");\n"
                "  %9 = nn.max_pool2d(%8);\n"
                "  %10 = layout_transform(%9, src_layout=\"NCHW\", dst_layout=\"NCHW3c\");\n"
                "  %11 = nn.max_pool2d(%10, layout=\"NCHW3c\");\n"
                "  layout_transform(%11, src_layout=\"NCHW3c\", dst_layout=\"NCHW\")\n}\n", 2);
  /* and they take the copy schedule, not the generic one: a slice copy
   * (8c → 4c) and a strided row (NCHW → 16c); 10 channels do not divide
   * into 4c blocks, so that one (padded) stays generic */
  const char *cases[3][2] = {{"NCHW8c\", dst_layout=\"NCHW4c", "(1, 2, 5, 13, 8)"}, {"NCHW\", dst_layout=\"NCHW16c", "(1, 16, 5, 13)"},
                             {"NCHW\", dst_layout=\"NCHW4c", "(1, 10, 5, 13)"}};
  for (int i = 0; i < 3; i++) {
    char text[512];
    snprintf(text, sizeof text, "def @main(%%x: Tensor[%s, float32]) {\n  layout_transform(%%x, src_layout=\"%s\")\n}\n", cases[i][1], cases[i][0]);
    temper_graph *g = parse_ok(text);
    diag d = {0};
    assert_int_equal(pipeline_optimize(g, 16, &d), TEMPER_OK);
    node *fn = g->main->body->callee;
    assert_int_equal(sched_is_layout_copy(fn), i < 2);
    lfunc *f = NULL;
    assert_int_equal(engine_lower_one(fn, &avx512, "k", &f, &d), TEMPER_OK);
    char *loops = lf_print(f);
    assert_true((strstr(loops, "parallel for n_h_cb") != NULL) == (i < 2));
    free(loops);
    lf_free(f);
    temper_graph_destroy(g);
  }
}

/* a division by a constant is a multiplication by its reciprocal only where
 * that is a normal float: by 3 a product; by a subnormal (its reciprocal
 * past FLT_MAX: 0 · ∞ would be NaN where 0 / c is 0) and by 1e38 (its
 * reciprocal subnormal) still a division */
static void test_divide_by_constant(void **state) {
  (void)state;
  const char *divisor[3] = {"3f", "1e-39f", "1e+38f"};
  const char *want[3] = {"* 0.333333f", "/ 1e-39f", "/ 1e+38f"};
  for (int i = 0; i < 3; i++) {
    char text[256];
    snprintf(text, sizeof text, "def @main(%%x: Tensor[(1, 40), float32]) { divide(%%x, %s) }\n", divisor[i]);
    temper_graph *g = parse_ok(text);
    diag d = {0};
    assert_int_equal(pipeline_optimize(g, 16, &d), TEMPER_OK);
    lfunc *f = NULL;
    assert_int_equal(engine_lower_one(g->main->body->callee, &avx512, "k", &f, &d), TEMPER_OK);
    char *loops = lf_print(f);
    if (!strstr(loops, want[i])) fail_msg("divide by %s: no \"%s\" in\n%s", divisor[i], want[i], loops);
    free(loops);
    lf_free(f);
    temper_graph_destroy(g);
  }
}

/* a Winograd conv written by hand has no schedule to lower with: refused by name */
static void test_winograd_without_schedule_refused(void **state) {
  (void)state;
  temper_graph *g = parse_ok("def @main(%x: Tensor[(1, 16, 8, 8), float32], %u: Tensor[(6, 6, 16, 16), float32]) {\n"
                             "  nn.contrib_conv2d_winograd_without_weight_transform(%x, %u, tile_size=4, channels=16, padding=[1, 1, 1, 1])\n}\n");
  diag d = {0};
  assert_int_equal(pipeline_optimize(g, 16, &d), TEMPER_OK);
  exec *x = NULL;
  temper_status s = exec_create(engine, g, 1, &x, &d);
  assert_int_not_equal(s, TEMPER_OK);
  assert_null(x);
  assert_non_null(strstr(d.msg, "nn.contrib_conv2d_winograd_without_weight_transform needs a conv2d_winograd schedule"));
  temper_graph_destroy(g);
}

/* a layer norm in a fused program written by hand that its schedule does
 * not take: with γ and β (simplify splits them off), with an op after it
 * that changes its shape — refused at the op, by name */
static void test_layer_norm_hand_fused_refused(void **state) {
  (void)state;
  lower_refused("def @main(%x: Tensor[(2, 6), float32], %g: Tensor[(6), float32]) {\n"
                "  %0 = fn (%p0: Tensor[(2, 6), float32], %p1: Tensor[(6), float32], Primitive=1) {\n"
                "    nn.layer_norm(%p0, %p1, %p1)\n"
                "  };\n"
                "  %0(%x, %g)\n}\n",
                TEMPER_EINVAL, "3:5: error: nn.layer_norm with gamma and beta in a primitive function");
  lower_refused("def @main(%x: Tensor[(2, 6), float32]) {\n"
                "  %0 = fn (%p0: Tensor[(2, 6), float32], Primitive=1) {\n"
                "    %1 = nn.layer_norm(%p0);\n"
                "    reshape(%1, newshape=[12])\n"
                "  };\n"
                "  %0(%x)\n}\n",
                TEMPER_EINVAL, "3:10: error: nn.layer_norm: the ops after it in its primitive function change its shape");
}

static void test_loops_print(void **state) {
  (void)state;
  temper_graph *g = parse_ok(op_cases[10]);
  diag d = {0};
  assert_int_equal(pipeline_optimize(g, 16, &d), TEMPER_OK);
  node *fn = g->main->body->callee;
  lfunc *f = NULL;
  assert_int_equal(engine_lower_one(fn, &avx512, "k", &f, &d), TEMPER_OK);
  char *text = lf_print(f);
  assert_non_null(strstr(text, "parallel for n_oht_kb"));   /* the input outweighs the weights: rows outer */
  assert_non_null(strstr(text, "fma("));
  assert_non_null(strstr(text, "fmax("));   /* the relu, in the epilogue */
  free(text);
  lf_free(f);
  temper_graph_destroy(g);
}

/* the parallel split: rows outer when the input outweighs the weights (the
 * next layer reads what the same core wrote), output channels outer when
 * the weights dominate (each core reads only its half of them) */
static void test_parallel_split(void **state) {
  (void)state;
  /* a channel split reads the whole input: each thread prefetches it at its
   * first task; a row split prefetches a row tile's window as it starts */
  /* 256 channels at 28×28: 2.25 MiB of weights, a 784 KiB input — rows
   * outer unless only the input stays in half of this host's L2 */
  conv_workload w256 = {1, 256, 28, 28, 256, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  task_space sp;
  space_build(&w256, 16, &sp);
  int only_input = !conv_split_rows(&sp);
  const struct { const char *model; const char *loop; const char *prefetch; } cases[] = {
      {CONV("(1, 64, 56, 56)", "(64, 64, 3, 3)", ", padding=[1, 1]"), "parallel for n_oht", "if ((kb == 0) || (n_oht_kb == first))"},
      /* (split over channels, its 784 KiB input is past what a thread
       * prefetches at its first task, 512 KiB) */
      {CONV("(1, 256, 28, 28)", "(256, 256, 3, 3)", ", padding=[1, 1]"), only_input ? "parallel for n_kb" : "parallel for n_oht",
       only_input ? NULL : "if ((kb == 0) || (n_oht_kb == first))"},
      {CONV("(1, 512, 3, 3)", "(512, 512, 3, 3)", ", padding=[1, 1]"), "parallel for n_kb", "if (n_kb_oht == first)"},
      {CONV("(1, 64, 28, 28)", "(64, 64, 1, 1)", ""), "parallel for n_mt_kb", "if ((kb == 0) || (n_mt_kb == first))"},
      {CONV("(1, 512, 2, 2)", "(512, 512, 1, 1)", ""), "parallel for n_kb_mt", "if (n_kb_mt == first)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    temper_graph *g = parse_ok(cases[i].model);
    diag d = {0};
    assert_int_equal(pipeline_optimize_with(g, &(pipeline_opts){.vec = 16, .block_inputs = 1}, &d), TEMPER_OK);
    lfunc *f = NULL;
    assert_int_equal(engine_lower_one(g->main->body->callee, &avx512, "k", &f, &d), TEMPER_OK);
    char *text = lf_print(f);
    int found = strstr(text, cases[i].loop) != NULL;
    int prefetch = !cases[i].prefetch ||
                   (strstr(text, "prefetch p0[") != NULL && strstr(text, " first first") != NULL && strstr(text, cases[i].prefetch));
    /* and the next kernel's weights, a step in the reduction */
    prefetch = prefetch && strstr(text, "prefetch_next 1/") != NULL;
    if (!prefetch) fprintf(stderr, "%s", text);
    assert_true(prefetch);
    free(text);
    lf_free(f);
    temper_graph_destroy(g);
    assert_true(found);
  }
}


static uint32_t f2u(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  return u;
}

/* distance in units in the last place between two finite floats of one sign */
static int64_t ulps(float a, float b) { return llabs((int64_t)f2u(a) - (int64_t)f2u(b)); }

/* codegen's inline e^x (vector and scalar) against libm's expf: within 2
 * ulp wherever the result is normal, within 2 of the smallest denormal
 * below that, 0 and ∞ where expf gives them, NaN for NaN */
static void test_exp_against_libm(void **state) {
  (void)state;
  enum { N = 1 << 16, NS = 8 };
  static float in[N], out[N], sout[N];
  const float special[NS] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 88.72283f, 88.7229f, -103.9721f};
  for (int i = 0; i < NS; i++) in[i] = special[i];
  for (int i = NS; i < N; i++) in[i] = -110.0f + 200.0f * (float)(i - NS) / (float)(N - NS);
  lfunc *f = lf_new("exp_test", 16);
  int bi = lf_buf(f, "in", N), bo = lf_buf(f, "out", N), bs = lf_buf(f, "sout", N);
  int v = lf_var(f, "i"), w = lf_var(f, "j");
  lstmt *lv = ls_add(f, f->body, ls_for(f, v, lx_int(f, 0), lx_int(f, N / 16), LOOP_SERIAL));
  lexpr *at = lx_mul(f, lx_var(f, v), lx_int(f, 16));
  ls_add(f, lv, ls_store(f, bo, at, lx_un(f, LO_EXP, lx_load(f, bi, at, 16, 1, NULL)), 1, NULL));
  lstmt *lw = ls_add(f, f->body, ls_for(f, w, lx_int(f, 0), lx_int(f, N), LOOP_SERIAL));
  ls_add(f, lw, ls_store(f, bs, lx_var(f, w), lx_un(f, LO_EXP, lx_load(f, bi, lx_var(f, w), 1, 1, NULL)), 1, NULL));
  diag d = {0};
  cg_jit *j = NULL;
  temper_kernel_fn fn = NULL;
  assert_int_equal(cg_jit_create(&j, &engine->target, &d), TEMPER_OK);
  assert_int_equal(cg_jit_add(j, &f, 1, &fn, &d), TEMPER_OK);
  float *args[3] = {in, out, sout};
  fn(args, NULL);
  int64_t worst = 0;
  for (int i = 0; i < N; i++) {
    float want = expf(in[i]);
    for (int k = 0; k < 2; k++) {
      float got = k ? sout[i] : out[i];
      if (isnan(want)) { assert_true(isnan(got)); continue; }
      if (isinf(want) || want == 0) {
        if (got != want) fail_msg("exp(%.9g) = %.9g, libm %.9g", (double)in[i], (double)got, (double)want);
        continue;
      }
      int64_t u = ulps(got, want);
      if (want >= 1.17549435e-38f) {
        if (u > 2) fail_msg("exp(%.9g) = %.9g, libm %.9g: %lld ulp", (double)in[i], (double)got, (double)want, (long long)u);
        if (u > worst) worst = u;
      } else if (u > 2) fail_msg("exp(%.9g) = %.9g (denormal), libm %.9g", (double)in[i], (double)got, (double)want);
    }
  }
  print_message("inline exp: worst %lld ulp over %d points\n", (long long)worst, N);
  cg_jit_destroy(j);
  lf_free(f);
}

/* the epilogue's erf and tanh against libm, element by element, relative
 * to the value: near 0 their closed forms lose it (A&S erf's 1.5e-7
 * absolute is 1.5e-4 of erf(1e-3); tanh's 1 − 2/(e^2x + 1) cancels), where
 * a network whose outputs are all small compared wrong (difftest seed
 * 1371298); past erf's clamp at ±4 (up to ±6.3); ±1 at ±∞ (erf's sign was
 * x / |x|: NaN there); NaN stays NaN (the clamp is by selects, not
 * max/min); both vector and scalar code (4099 elements: a remainder) */
static void test_erf_tanh_relative_to_libm(void **state) {
  (void)state;
  enum { N = 4099 };
  static float in[N];
  for (int i = 0; i < N; i++) {   /* ±1e-7 … ±6.3, log-spaced, then NaN, ±∞ and 0 */
    double m = pow(10, -7 + 7.8 * (double)(i / 2) / (N / 2));
    in[i] = (float)(i % 2 ? -m : m);
  }
  in[N - 4] = NAN, in[N - 3] = INFINITY, in[N - 2] = -INFINITY, in[N - 1] = 0.0f;
  const char *ops[2] = {"erf", "tanh"};
  for (int k = 0; k < 2; k++) {
    char text[256];
    snprintf(text, sizeof text, "def @main(%%x: Tensor[(1, %d), float32]) { %s(%%x) }", N, ops[k]);
    temper_graph *g = parse_ok(text);
    diag d = {0};
    exec *x = NULL;
    assert_int_equal(pipeline_optimize(g, engine->target.vec, &d), TEMPER_OK);
    assert_int_equal(exec_create(engine, g, 1, &x, &d), TEMPER_OK);
    exec_set_input(x, 0, in);
    exec_run(x);
    const float *got = exec_output(x, 0);
    double worst = 0;
    for (int i = 0; i < N; i++) {
      if (isnan(in[i])) {
        if (!isnan(got[i])) fail_msg("%s(NaN) = %.9g", ops[k], (double)got[i]);
        continue;
      }
      double want = k ? tanh((double)in[i]) : erf((double)in[i]);
      double rel = want == 0 ? fabs((double)got[i]) : fabs((double)got[i] - want) / fabs(want);
      if (!(rel <= 1e-6)) fail_msg("%s(%.9g) = %.9g, libm %.9g: relative error %.3g", ops[k], (double)in[i], (double)got[i], want, rel);
      if (rel > worst) worst = rel;
    }
    print_message("inline %s: worst relative error %.3g over %d points\n", ops[k], worst, N);
    exec_destroy(x);
    temper_graph_destroy(g);
  }
}

/* the template splits over the target's caches, not this machine's: a 1×1
 * layer of 1024 → 512 channels at 14×14 (800 KB of input, 2 MB of weights)
 * splits over rows on a 1 MB L2 and over channel blocks on a 2 MB one,
 * where its input stays in L2 across the blocks */
static int choose_nchwc(void *ctx, const char *key, const struct task_space *s, const struct conv_site *site, struct sched_config *out,
                        char *err, size_t n) {
  (void)ctx, (void)key, (void)site;
  return config_parse(s, "conv2d_nchwc:ic_bn=16,oc_bn=32,ow_bn=7,oh_bn=1,unroll_kw=0,order=0,par=0", out, err, n) ? -1 : 1;
}
static void test_split_follows_target_caches(void **state) {
  (void)state;
  for (int i = 0; i < 2; i++) {
    temper_graph *g = parse_ok("def @main(%x: Tensor[(1, 1024, 14, 14), float32], %w: Tensor[(512, 1024, 1, 1), float32]) {\n"
                               "  nn.conv2d(%x, %w)\n}\n");
    cg_target t = {.vec = 16, .l1d = 48 << 10, .l2 = (int64_t)(1 + i) << 20};
    pipeline_opts o = {.vec = 16, .l1d = t.l1d, .l2 = t.l2, .choose = choose_nchwc};
    diag d = {0};
    assert_int_equal(pipeline_optimize_with(g, &o, &d), TEMPER_OK);
    lfunc *f = NULL;
    assert_int_equal(engine_lower_one(g->main->body->callee, &t, "k", &f, &d), TEMPER_OK);
    char *loops = lf_print(f);
    assert_int_equal(strstr(loops, "parallel for n_oht_kb") != NULL, i == 0);
    free(loops);
    lf_free(f);
    temper_graph_destroy(g);
  }
}

/* each conv2d's output block by its output channels (the workload's K):
 * the fields of a concatenation in different blocks */
static int choose_by_k(void *ctx, const char *key, const struct task_space *s, const struct conv_site *site, struct sched_config *out,
                       char *err, size_t n) {
  (void)ctx, (void)site;
  conv_workload w;
  if (workload_from_key(key, &w)) return 0;
  char text[160];
  /* 7 columns of two 8-float vectors would pass AVX2's 12 accumulators: 5 there */
  snprintf(text, sizeof text, "conv2d_nchwc:ic_bn=16,oc_bn=%d,ow_bn=%d,oh_bn=1,unroll_kw=0,order=0,par=0", w.K == 32 ? 16 : 8,
           s->vec < 16 ? 5 : 7);
  return config_parse(s, text, out, err, n) ? -1 : 1;
}

/* A concatenation along the channels of blocked values runs in a block
 * that divides every field (engine/layout.c: concat_block), each field in
 * its own loop nest (schedules/generic.c: concat_fields): a field in that
 * block read a vector at a time, one in larger blocks (16 → 8: %6) or
 * smaller (8 → 16: %3 in %5) moved a vector of the smaller block at a
 * time, an NCHW one gathered; axis -3 (C in NCHW, H in NCHW<b>c) as 1;
 * then a pool in the blocks; and elementwise ops after a concatenation,
 * evaluated per field. And the other kinds of field: injective ones (a
 * transpose) and a concatenation along the last axis, point by point. */
static void test_concatenation_in_blocks(void **state) {
  (void)state;
  const char *text =
      "def @main(%x: Tensor[(1, 16, 6, 7), float32], %w1: Tensor[(32, 16, 1, 1), float32], %w2: Tensor[(8, 16, 3, 3), float32],\n"
      "          %w3: Tensor[(8, 16, 1, 1), float32]) {\n"
      "  %0 = nn.conv2d(%x, %w1);\n  %1 = nn.conv2d(%x, %w2, padding=[1, 1, 1, 1]);\n  %2 = nn.conv2d(%x, %w3);\n"
      "  %3 = concatenate((%1, %2), axis=1);\n  %4 = nn.relu(%0);\n  %5 = concatenate((%4, %3, %x, %0), axis=-3);\n"
      "  %6 = concatenate((%1, %0), axis=1);\n  (nn.max_pool2d(%5, pool_size=[3, 3], padding=[1, 1]), %6)\n}";
  pipeline_opts o = {.vec = engine->target.vec, .choose = choose_by_k};
  check_against_reference_with(text, 1, &o, 1e-4);
  check_against_reference_with(text, 2, &o, 1e-4);
  /* DenseNet's: the batch norm and ReLU after the concatenation in its kernel, per field */
  const char *dense =
      "def @main(%x: Tensor[(1, 16, 6, 7), float32], %w1: Tensor[(32, 16, 1, 1), float32], %w2: Tensor[(8, 16, 3, 3), float32],\n"
      "          %w3: Tensor[(8, 16, 1, 1), float32], %s: Tensor[(64, 1, 1), float32], %t: Tensor[(64, 1, 1), float32],\n"
      "          %w4: Tensor[(32, 64, 1, 1), float32]) {\n"
      "  %0 = nn.conv2d(%x, %w1);\n  %1 = nn.conv2d(%x, %w2, padding=[1, 1, 1, 1]);\n  %2 = nn.conv2d(%x, %w3);\n"
      "  %3 = concatenate((%1, %2), axis=1);\n  %4 = concatenate((%0, %3, %x), axis=1);\n  %5 = multiply(%4, %s);\n"
      "  %6 = add(%5, %t);\n  %7 = nn.relu(%6);\n  nn.conv2d(%7, %w4)\n}";
  check_against_reference_with(dense, 1, &o, 1e-4);
  check_against_reference_with(dense, 2, &o, 1e-4);
  check_against_reference(dense, 1);
  check_against_reference("def @main(%x: Tensor[(1, 3, 4, 5), float32], %y: Tensor[(1, 3, 5, 2), float32]) {\n"
                          "  %0 = transpose(%y, axes=[0, 1, 3, 2]);\n  %1 = sigmoid(%x);\n"
                          "  concatenate((%1, %0, %x), axis=2)\n}", 1);
  check_against_reference("def @main(%x: Tensor[(2, 3, 4, 5), float32], %y: Tensor[(2, 3, 4, 2), float32]) {\n"
                          "  %0 = nn.relu(%x);\n  concatenate((%0, %y), axis=-1)\n}", 2);
}

/* A concatenation along the channels is one parallel loop over the rows
 * with every field inside (schedules/generic.c: concat_fields), not a
 * parallel loop per field: in NCHW (lanes along W) and in channel blocks
 * (DenseNet's, with the batch norm and ReLU after it), 17 fields; the
 * values as the reference's at one and two threads. A concatenation of
 * 1×1 images keeps its loop per field. */
static void test_concatenation_one_loop_over_rows(void **state) {
  (void)state;
  char text[4096];
  int at = snprintf(text, sizeof text, "def @main(%%x: Tensor[(1, 16, 24, 20), float32]");
  for (int i = 0; i < 16; i++) at += snprintf(text + at, sizeof text - (size_t)at, ", %%y%d: Tensor[(1, %d, 24, 20), float32]", i, 1 + i % 3);
  at += snprintf(text + at, sizeof text - (size_t)at, ") {\n  %%0 = nn.relu(%%x);\n  concatenate((%%0");
  for (int i = 0; i < 16; i++) at += snprintf(text + at, sizeof text - (size_t)at, ", %%y%d", i);
  snprintf(text + at, sizeof text - (size_t)at, "), axis=1)\n}");
  check_against_reference(text, 1);
  check_against_reference(text, 2);
  const char *loops_of[2] = {text,
                             "def @main(%x: Tensor[(1, 3, 1, 1), float32], %y: Tensor[(1, 5, 1, 1), float32]) {\n"
                             "  concatenate((%x, %y), axis=1)\n}"};
  for (int k = 0; k < 2; k++) {
    temper_graph *g = parse_ok(loops_of[k]);
    diag d = {0};
    assert_int_equal(pipeline_optimize(g, 16, &d), TEMPER_OK);
    lfunc *f = NULL;
    assert_int_equal(engine_lower_one(g->main->body->callee, &avx512, "k", &f, &d), TEMPER_OK);
    char *loops = lf_print(f);
    assert_int_equal(count_in(loops, "parallel for"), k == 0 ? 1 : 2);   /* 1×1 images: one per field */
    if (k == 0) assert_non_null(strstr(loops, "parallel for nh in [0, +24)"));
    free(loops);
    lf_free(f);
    temper_graph_destroy(g);
  }
  /* in channel blocks: DenseNet's, the concatenation of conv2d outputs (17
   * fields: %0 and 16 others of 8 channels) under a batch norm and ReLU */
  char dense[8192];
  at = snprintf(dense, sizeof dense,
                "def @main(%%x: Tensor[(1, 16, 12, 7), float32], %%s: Tensor[(144, 1, 1), float32], %%wf: Tensor[(8, 144, 1, 1), float32]");
  for (int i = 0; i < 16; i++) at += snprintf(dense + at, sizeof dense - (size_t)at, ", %%w%d: Tensor[(8, 16, 1, 1), float32]", i);
  at += snprintf(dense + at, sizeof dense - (size_t)at, ") {\n");
  for (int i = 0; i < 16; i++) at += snprintf(dense + at, sizeof dense - (size_t)at, "  %%%d = nn.conv2d(%%x, %%w%d);\n", i, i);
  at += snprintf(dense + at, sizeof dense - (size_t)at, "  %%16 = concatenate((%%x");
  for (int i = 0; i < 16; i++) at += snprintf(dense + at, sizeof dense - (size_t)at, ", %%%d", i);
  snprintf(dense + at, sizeof dense - (size_t)at, "), axis=1);\n  %%17 = multiply(%%16, %%s);\n  %%18 = nn.relu(%%17);\n"
                                                   "  nn.conv2d(%%18, %%wf)\n}");
  pipeline_opts o = {.vec = engine->target.vec, .choose = choose_by_k};
  check_against_reference_with(dense, 1, &o, 1e-4);
  check_against_reference_with(dense, 2, &o, 1e-4);
}

/* a layer norm over the channels of NCHW<b>c, for blocks of whole vectors
 * (48: three of 16), of part of one (24, 6), of odd lanes (3, and 29 in two
 * blocks: the schedule's vectors the widest power of two dividing b), with
 * its epilogue (γ in the blocks) — against the reference */
static void test_layer_norm_in_blocks(void **state) {
  (void)state;
  static const int blocks[][2] = {{48, 96}, {24, 24}, {6, 12}, {3, 3}, {29, 58}};
  for (size_t i = 0; i < sizeof blocks / sizeof *blocks; i++) {
    int b = blocks[i][0], C = blocks[i][1];
    char text[1024];
    snprintf(text, sizeof text,
             "def @main(%%x: Tensor[(2, %d, 3, 5), float32], %%g: Tensor[(%d, 1, 1, %d), float32]) {\n"
             "  %%0 = layout_transform(%%x, src_layout=\"NCHW\", dst_layout=\"NCHW%dc\");\n"
             "  %%1 = nn.layer_norm(%%0, axis=1, epsilon=1e-05f, layout=\"NCHW%dc\");\n  %%2 = multiply(%%1, %%g);\n"
             "  layout_transform(%%2, src_layout=\"NCHW%dc\", dst_layout=\"NCHW\")\n}",
             C, C / b, b, b, b, b);
    check_against_reference(text, 1);
    check_against_reference(text, 2);
  }
}

/* pooling in NCHW<b>c for blocks that are not a power of two (48: three
 * vectors, 24, 12, 15: vectors of 8, 4, 1 lanes), the window's max and
 * average and the global average, with an epilogue — against the reference */
static void test_pool_in_odd_blocks(void **state) {
  (void)state;
  static const int blocks[][2] = {{48, 96}, {24, 24}, {12, 36}, {15, 15}};
  static const char *const pools[] = {"nn.max_pool2d(%%0, pool_size=[3, 3], strides=[2, 2], padding=[1, 1], layout=\"NCHW%dc\")",
                                      "nn.avg_pool2d(%%0, pool_size=[2, 3], padding=[1, 0], layout=\"NCHW%dc\")",
                                      "nn.global_avg_pool2d(%%0, layout=\"NCHW%dc\")"};
  for (size_t i = 0; i < sizeof blocks / sizeof *blocks; i++)
    for (size_t k = 0; k < sizeof pools / sizeof *pools; k++) {
      int b = blocks[i][0], C = blocks[i][1];
      char pool[160], text[1024];
      snprintf(pool, sizeof pool, pools[k], b);
      snprintf(text, sizeof text,
               "def @main(%%x: Tensor[(2, %d, 7, 6), float32]) {\n"
               "  %%0 = layout_transform(%%x, src_layout=\"NCHW\", dst_layout=\"NCHW%dc\");\n"
               "  %%1 = %s;\n  %%2 = sigmoid(%%1);\n  layout_transform(%%2, src_layout=\"NCHW%dc\", dst_layout=\"NCHW\")\n}",
               C, b, pool, b);
      check_against_reference(text, 1 + (int)(k % 2));
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_seed_lower_and_run),
      cmocka_unit_test(test_two_complex_ops_refused),
      cmocka_unit_test(test_unfused_op_in_main_refused),
      cmocka_unit_test(test_unreadable_input_block_refused), cmocka_unit_test(test_engine_for_target),
      cmocka_unit_test(test_cache_shares_identical_functions),
      cmocka_unit_test(test_every_op_against_reference),
      cmocka_unit_test(test_resnet_block_against_reference),
      cmocka_unit_test(test_loops_print),
      cmocka_unit_test(test_split_follows_target_caches),
      cmocka_unit_test(test_parallel_split),
      cmocka_unit_test(test_layout_transforms),
      cmocka_unit_test(test_concatenation_in_blocks),
      cmocka_unit_test(test_concatenation_one_loop_over_rows),
      cmocka_unit_test(test_winograd_without_schedule_refused),
      cmocka_unit_test(test_layer_norm_hand_fused_refused),
      cmocka_unit_test(test_exp_against_libm),
      cmocka_unit_test(test_erf_tanh_relative_to_libm),
      cmocka_unit_test(test_divide_by_constant),
      cmocka_unit_test(test_layer_norm_in_blocks),
      cmocka_unit_test(test_pool_in_odd_blocks),
  };
  return cmocka_run_group_tests(tests, engine_setup, engine_teardown);
}
