/* test_onnx.c: the ONNX importer on small models the test writes itself
 * with protobuf-c (no Python needed): each op against the reference
 * interpreter, and every kind of bad file; then ResNet-18 exported by
 * PyTorch, end to end, against PyTorch's output. */
#include <math.h>
#include <unistd.h>
#include "engine.h"
#include "helpers.h"
#include "onnx.h"
#include "onnx.pb-c.h"

/* ---- building models: everything allocated here is freed by mb_free ---- */
typedef struct mb {
  void *ptrs[4096];
  int n;
  Onnx__NodeProto *nodes[64];
  int n_nodes;
  Onnx__TensorProto *inits[64];
  int n_inits;
  Onnx__ValueInfoProto *ins[8], *outs[8];
  int n_ins, n_outs;
} mb;

static void *keep(mb *b, void *p) {
  b->ptrs[b->n++] = p;
  return p;
}
static char *kstr(mb *b, const char *s) { return keep(b, strdup(s)); }

static void mb_free(mb *b) {
  for (int i = 0; i < b->n; i++) free(b->ptrs[i]);
  memset(b, 0, sizeof *b);
}

static Onnx__TensorProto *tensor(mb *b, const char *name, int nd, const int64_t *dims, const float *data, int raw) {
  Onnx__TensorProto *t = keep(b, malloc(sizeof *t));
  onnx__tensor_proto__init(t);
  t->name = kstr(b, name);
  t->n_dims = (size_t)nd;
  t->dims = keep(b, malloc(sizeof(int64_t) * (size_t)(nd ? nd : 1)));
  int64_t n = 1;
  for (int i = 0; i < nd; i++) t->dims[i] = dims[i], n *= dims[i];
  t->has_data_type = 1;
  t->data_type = 1;
  float *copy = keep(b, malloc(sizeof(float) * (size_t)n));
  memcpy(copy, data, sizeof(float) * (size_t)n);
  if (raw) {
    t->has_raw_data = 1;
    t->raw_data.len = (size_t)n * 4;
    t->raw_data.data = (uint8_t *)copy;
  } else {
    t->n_float_data = (size_t)n;
    t->float_data = copy;
  }
  return t;
}

static Onnx__TensorProto *tensor_i64(mb *b, const char *name, int n, const int64_t *v) {
  Onnx__TensorProto *t = keep(b, malloc(sizeof *t));
  onnx__tensor_proto__init(t);
  t->name = kstr(b, name);
  t->n_dims = 1;
  t->dims = keep(b, malloc(sizeof(int64_t)));
  t->dims[0] = n;
  t->has_data_type = 1;
  t->data_type = 7;
  t->n_int64_data = (size_t)n;
  t->int64_data = keep(b, malloc(sizeof(int64_t) * (size_t)n));
  memcpy(t->int64_data, v, sizeof(int64_t) * (size_t)n);
  return t;
}

/* a random initializer */
static void init(mb *b, const char *name, int nd, const int64_t *dims, uint64_t seed, int positive) {
  shape_t s = {nd, {0}};
  for (int i = 0; i < nd; i++) s.d[i] = dims[i];
  float *d = malloc(sizeof(float) * (size_t)shape_numel(&s));
  data_random_param(d, &s, seed, 0, positive);
  b->inits[b->n_inits++] = tensor(b, name, nd, dims, d, (int)(seed & 1));
  free(d);
}

static Onnx__NodeProto *nodev(mb *b, const char *op, const char *name, const char *ins, const char *outs) {
  Onnx__NodeProto *n = keep(b, malloc(sizeof *n));
  onnx__node_proto__init(n);
  n->op_type = kstr(b, op);
  n->name = kstr(b, name);
  const char *lists[2] = {ins, outs};
  for (int k = 0; k < 2; k++) {   /* comma-separated names; an empty name is an absent optional input */
    char **arr = keep(b, calloc(16, sizeof(char *)));
    size_t cnt = 0;
    char *copy = kstr(b, lists[k]);
    for (char *save, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) arr[cnt++] = !strcmp(tok, "_") ? kstr(b, "") : tok;
    if (k == 0) n->input = arr, n->n_input = cnt;
    else n->output = arr, n->n_output = cnt;
  }
  b->nodes[b->n_nodes++] = n;
  return n;
}

static Onnx__AttributeProto *new_attr(mb *b, Onnx__NodeProto *n, const char *name, Onnx__AttributeProto__AttributeType t) {
  Onnx__AttributeProto *a = keep(b, malloc(sizeof *a));
  onnx__attribute_proto__init(a);
  a->name = kstr(b, name);
  a->has_type = 1;
  a->type = t;
  Onnx__AttributeProto **na = keep(b, malloc(sizeof(void *) * (n->n_attribute + 1)));
  for (size_t i = 0; i < n->n_attribute; i++) na[i] = n->attribute[i];
  na[n->n_attribute++] = a;
  n->attribute = na;
  return a;
}
static void attr_ints(mb *b, Onnx__NodeProto *n, const char *name, int cnt, const int64_t *v) {
  Onnx__AttributeProto *a = new_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
  a->n_ints = (size_t)cnt;
  a->ints = keep(b, malloc(sizeof(int64_t) * (size_t)cnt));
  memcpy(a->ints, v, sizeof(int64_t) * (size_t)cnt);
}
static void attr_int(mb *b, Onnx__NodeProto *n, const char *name, int64_t v) {
  Onnx__AttributeProto *a = new_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
  a->has_i = 1;
  a->i = v;
}
static void attr_float(mb *b, Onnx__NodeProto *n, const char *name, float v) {
  Onnx__AttributeProto *a = new_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
  a->has_f = 1;
  a->f = v;
}
static void attr_str(mb *b, Onnx__NodeProto *n, const char *name, const char *v) {
  Onnx__AttributeProto *a = new_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
  a->has_s = 1;
  a->s.data = (uint8_t *)kstr(b, v);
  a->s.len = strlen(v);
}

static Onnx__ValueInfoProto *vinfo(mb *b, const char *name, int nd, const int64_t *dims, const char *sym) {
  Onnx__ValueInfoProto *v = keep(b, malloc(sizeof *v));
  onnx__value_info_proto__init(v);
  v->name = kstr(b, name);
  Onnx__TypeProto *tp = keep(b, malloc(sizeof *tp));
  onnx__type_proto__init(tp);
  Onnx__TypeProto__Tensor *tt = keep(b, malloc(sizeof *tt));
  onnx__type_proto__tensor__init(tt);
  tt->has_elem_type = 1;
  tt->elem_type = 1;
  Onnx__TensorShapeProto *sp = keep(b, malloc(sizeof *sp));
  onnx__tensor_shape_proto__init(sp);
  sp->n_dim = (size_t)nd;
  sp->dim = keep(b, malloc(sizeof(void *) * (size_t)(nd ? nd : 1)));
  for (int i = 0; i < nd; i++) {
    Onnx__TensorShapeProto__Dimension *dm = keep(b, malloc(sizeof *dm));
    onnx__tensor_shape_proto__dimension__init(dm);
    if (sym && i == 0) {
      dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
      dm->dim_param = kstr(b, sym);
    } else {
      dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
      dm->dim_value = dims[i];
    }
    sp->dim[i] = dm;
  }
  tt->shape = sp;
  tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp->tensor_type = tt;
  v->type = tp;
  return v;
}

static char *write_model(mb *b, const char *file, int opset, size_t truncate) {
  static char path[512];
  snprintf(path, sizeof path, "/tmp/temper_onnx_%d_%s", (int)getpid(), file);
  Onnx__GraphProto g;
  onnx__graph_proto__init(&g);
  g.name = "test";
  g.n_node = (size_t)b->n_nodes;
  g.node = b->nodes;
  g.n_initializer = (size_t)b->n_inits;
  g.initializer = b->inits;
  g.n_input = (size_t)b->n_ins;
  g.input = b->ins;
  g.n_output = (size_t)b->n_outs;
  g.output = b->outs;
  Onnx__OperatorSetIdProto os;
  onnx__operator_set_id_proto__init(&os);
  os.domain = "";
  os.has_version = 1;
  os.version = opset;
  Onnx__OperatorSetIdProto *osp = &os;
  Onnx__ModelProto m;
  onnx__model_proto__init(&m);
  m.has_ir_version = 1;
  m.ir_version = 8;
  m.n_opset_import = 1;
  m.opset_import = &osp;
  m.graph = &g;
  size_t n = onnx__model_proto__get_packed_size(&m);
  uint8_t *buf = malloc(n);
  onnx__model_proto__pack(&m, buf);
  FILE *f = fopen(path, "wb");
  fwrite(buf, 1, truncate ? truncate : n, f);
  fclose(f);
  free(buf);
  return path;
}


/* import, then compile and run against the reference on seeded inputs */
static void check_model(const char *path) {
  temper_graph *g = NULL;
  diag d = {0};
  temper_status s = onnx_import(path, &g, &d);
  if (s) fprintf(stderr, "%s\n", d.msg);
  assert_int_equal(s, TEMPER_OK);
  int np = g->main->n_params;
  float *vals[8];
  for (int i = 0; i < np; i++) {
    node *p = g->main->params[i];
    vals[i] = malloc(sizeof(float) * (size_t)shape_numel(&p->ty.shape));
    data_random_param(vals[i], &p->ty.shape, 40 + (uint64_t)i, 1, 0);
  }
  float **ref = NULL;
  int n_ref = 0;
  assert_int_equal(ref_eval_func(g->main, (const float *const *)vals, &ref, &n_ref, &d), TEMPER_OK);
  node *params[8];
  for (int i = 0; i < np; i++) params[i] = g->main->params[i];
  assert_int_equal(pipeline_optimize(g, engine->target.vec, &d), TEMPER_OK);
  exec *x = NULL;
  s = exec_create(engine, g, 2, &x, &d);
  if (s) fprintf(stderr, "%s\n", d.msg);
  assert_int_equal(s, TEMPER_OK);
  for (int i = 0; i < x->n_inputs; i++)
    for (int k = 0; k < np; k++)
      if (x->inputs[i] == params[k]) exec_set_input(x, i, vals[k]);
  exec_run(x);
  for (int o = 0; o < n_ref; o++) {
    int64_t n = shape_numel(&x->output_shapes[o]);
    double err = 0, scale = 1e-6;
    for (int64_t i = 0; i < n; i++) {
      double e = fabs((double)exec_output(x, o)[i] - ref[o][i]);
      if (!(e <= err)) err = e;
      if (fabs(ref[o][i]) > scale) scale = fabs(ref[o][i]);
    }
    if (!(err / scale < 1e-4)) fprintf(stderr, "%s output %d: relative error %g\n", path, o, err / scale);
    assert_true(err / scale < 1e-4);
    free(ref[o]);
  }
  free(ref);
  exec_destroy(x);
  for (int i = 0; i < np; i++) free(vals[i]);
  temper_graph_destroy(g);
  unlink(path);
}

static const int64_t X4[4] = {1, 3, 13, 11};

static void test_classifier_ops(void **state) {
  (void)state;
  mb b = {0};
  b.ins[b.n_ins++] = vinfo(&b, "data", 4, X4, NULL);
  init(&b, "w", 4, (int64_t[]){8, 3, 3, 3}, 1, 0);
  init(&b, "bias", 1, (int64_t[]){8}, 2, 0);
  init(&b, "gamma", 1, (int64_t[]){8}, 3, 1);
  init(&b, "beta", 1, (int64_t[]){8}, 4, 0);
  init(&b, "mean", 1, (int64_t[]){8}, 5, 0);
  init(&b, "var", 1, (int64_t[]){8}, 6, 1);
  init(&b, "dw", 4, (int64_t[]){8, 1, 3, 3}, 7, 0);
  init(&b, "fc", 2, (int64_t[]){10, 8}, 8, 0);
  init(&b, "fcb", 1, (int64_t[]){10}, 9, 0);
  init(&b, "mm", 2, (int64_t[]){10, 4}, 10, 0);
  float lo = 0, hi = 6;
  b.inits[b.n_inits++] = tensor(&b, "lo", 0, NULL, &lo, 0);
  b.inits[b.n_inits++] = tensor(&b, "hi", 0, NULL, &hi, 1);
  Onnx__NodeProto *n = nodev(&b, "Conv", "conv1", "data,w,bias", "c1");
  attr_ints(&b, n, "pads", 4, (int64_t[]){1, 0, 2, 1});
  attr_ints(&b, n, "strides", 2, (int64_t[]){1, 2});
  n = nodev(&b, "BatchNormalization", "bn", "c1,gamma,beta,mean,var", "b1");
  attr_float(&b, n, "epsilon", 1e-3f);
  nodev(&b, "Clip", "relu6", "b1,lo,hi", "r1");
  n = nodev(&b, "Conv", "dwconv", "r1,dw", "c2");
  attr_int(&b, n, "group", 8);
  attr_str(&b, n, "auto_pad", "SAME_UPPER");
  nodev(&b, "Add", "res", "c2,r1", "a1");
  nodev(&b, "Identity", "alias", "fcb", "fcb2");
  n = nodev(&b, "AveragePool", "avg", "a1", "p1");
  attr_ints(&b, n, "kernel_shape", 2, (int64_t[]){3, 2});
  attr_ints(&b, n, "strides", 2, (int64_t[]){2, 2});
  attr_ints(&b, n, "pads", 4, (int64_t[]){1, 1, 1, 1});
  attr_int(&b, n, "ceil_mode", 1);
  attr_int(&b, n, "count_include_pad", 1);
  n = nodev(&b, "MaxPool", "max", "p1", "p2");
  attr_ints(&b, n, "kernel_shape", 2, (int64_t[]){2, 2});
  nodev(&b, "Sigmoid", "sig", "p2", "s1");
  nodev(&b, "GlobalAveragePool", "gap", "s1", "g1");
  nodev(&b, "Flatten", "flat", "g1", "f1");
  n = nodev(&b, "Gemm", "fc", "f1,fc,fcb2", "y1");
  attr_int(&b, n, "transB", 1);
  attr_float(&b, n, "alpha", 0.5f);
  attr_float(&b, n, "beta", 2.0f);
  nodev(&b, "Dropout", "drop", "y1", "y2");
  n = nodev(&b, "Softmax", "sm", "y2", "prob");
  attr_int(&b, n, "axis", -1);
  b.outs[b.n_outs++] = vinfo(&b, "prob", 2, (int64_t[]){1, 10}, NULL);
  check_model(write_model(&b, "classifier.onnx", 13, 0));
  mb_free(&b);
}

static void test_shape_ops(void **state) {
  (void)state;
  mb b = {0};
  b.ins[b.n_ins++] = vinfo(&b, "x", 4, (int64_t[]){2, 4, 3, 2}, NULL);
  b.ins[b.n_ins++] = vinfo(&b, "y", 4, (int64_t[]){2, 2, 3, 2}, NULL);
  b.inits[b.n_inits++] = tensor_i64(&b, "shape", 2, (int64_t[]){0, -1});
  init(&b, "mm", 2, (int64_t[]){36, 5}, 11, 0);
  init(&b, "s", 1, (int64_t[]){2}, 12, 1);
  nodev(&b, "Concat", "cat", "x,y", "c");
  attr_int(&b, b.nodes[b.n_nodes - 1], "axis", 1);
  nodev(&b, "Mul", "mul", "c,s", "m");   /* broadcasting along the last axis */
  nodev(&b, "Sub", "sub", "m,y2", "d");
  nodev(&b, "Reshape", "flat", "d,shape", "r");
  nodev(&b, "MatMul", "mm", "r,mm", "z");
  nodev(&b, "Div", "div", "z,s0", "q");
  /* y2: y three times over; s0: a Constant */
  Onnx__NodeProto *yy = nodev(&b, "Concat", "cat2", "y,y,y", "y2");
  attr_int(&b, yy, "axis", 1);
  Onnx__NodeProto *k = nodev(&b, "Constant", "two", "", "s0");
  Onnx__AttributeProto *a = new_attr(&b, k, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
  float two = 2;
  a->t = tensor(&b, "two", 0, NULL, &two, 0);
  /* order matters in ONNX: producers first */
  Onnx__NodeProto *order[8] = {b.nodes[0], b.nodes[6], b.nodes[1], b.nodes[2], b.nodes[3], b.nodes[4], b.nodes[7], b.nodes[5]};
  memcpy(b.nodes, order, sizeof order);
  b.outs[b.n_outs++] = vinfo(&b, "q", 2, (int64_t[]){2, 5}, NULL);
  check_model(write_model(&b, "shapes.onnx", 17, 0));
  mb_free(&b);
  /* Pad (constant) in front of a Conv, as TensorFlow exporters write it */
  b.ins[b.n_ins++] = vinfo(&b, "x", 4, X4, NULL);
  b.inits[b.n_inits++] = tensor_i64(&b, "pads", 8, (int64_t[]){0, 0, 1, 2, 0, 0, 2, 0});
  float pv = 0.25f;
  b.inits[b.n_inits++] = tensor(&b, "pv", 0, NULL, &pv, 0);
  init(&b, "w", 4, (int64_t[]){5, 3, 3, 3}, 21, 0);
  nodev(&b, "Pad", "pad", "x,pads,pv", "xp");
  nodev(&b, "Conv", "conv", "xp,w", "y");
  b.outs[b.n_outs++] = vinfo(&b, "y", 4, (int64_t[]){1, 5, 14, 11}, NULL);
  check_model(write_model(&b, "pad.onnx", 13, 0));
  mb_free(&b);
}

/* the activations of newer networks after a conv, each with its ONNX
 * attributes, and ReduceMean as a pool (opset 13: axes an attribute; 18:
 * an input), against the reference interpreter */
static void test_activations(void **state) {
  (void)state;
  for (int opset = 13; opset <= 18; opset += 5) {
    mb b = {0};
    b.ins[b.n_ins++] = vinfo(&b, "data", 4, X4, NULL);
    init(&b, "w", 4, (int64_t[]){6, 3, 3, 3}, 31, 0);
    init(&b, "slope", 3, (int64_t[]){6, 1, 1}, 32, 0);
    nodev(&b, "Conv", "conv", "data,w", "c");
    Onnx__NodeProto *n = nodev(&b, "HardSigmoid", "hs", "c", "h");
    attr_float(&b, n, "alpha", 1.0f / 6);
    nodev(&b, "Mul", "hswish", "c,h", "h2");   /* hard swish as PyTorch exports it */
    n = nodev(&b, "LeakyRelu", "lrelu", "h2", "l");
    attr_float(&b, n, "alpha", 0.2f);
    nodev(&b, "PRelu", "prelu", "l,slope", "pr");
    nodev(&b, "Tanh", "tanh", "pr", "t");
    nodev(&b, "Erf", "erf", "t", "e");
    nodev(&b, "Exp", "exp", "e", "x");
    nodev(&b, "HardSwish", "hsw", "x", "x1");
    nodev(&b, opset >= 18 ? "GlobalMaxPool" : "Identity", "gmp", "x1", "x2");   /* a global max pool, then the mean of one value */
    /* a round trip through Unsqueeze and Squeeze (axes an input from opset 13) */
    b.inits[b.n_inits++] = tensor_i64(&b, "uax", 1, (int64_t[]){0});
    nodev(&b, "Unsqueeze", "unsq", "x2,uax", "u5");
    nodev(&b, "Squeeze", "sq", "u5,uax", "x3");
    n = nodev(&b, "ReduceMean", "rm", opset >= 18 ? "x3,axes" : "x3", "y");
    if (opset >= 18) b.inits[b.n_inits++] = tensor_i64(&b, "axes", 2, (int64_t[]){-1, -2});
    else attr_ints(&b, n, "axes", 2, (int64_t[]){2, 3});
    attr_int(&b, n, "keepdims", 0);
    b.outs[b.n_outs++] = vinfo(&b, "y", 2, (int64_t[]){1, 6}, NULL);
    check_model(write_model(&b, "acts.onnx", opset, 0));
    mb_free(&b);
  }
}

static void import_fails(const char *path, const char *want);
static void one_conv(mb *b, const char *w_name);

/* convnext's block as exported: NCHW → NHWC, LayerNorm decomposed
 * (ReduceMean over the last axis, Pow 2, Sqrt) and as the opset-17 op,
 * linear layers as N-d MatMul, GELU with Erf; ReduceSum and ReduceMax over
 * other axes; back to NCHW */
static void test_reductions_and_layer_norm(void **state) {
  (void)state;
  mb b = {0};
  b.ins[b.n_ins++] = vinfo(&b, "data", 4, X4, NULL);
  init(&b, "w", 4, (int64_t[]){8, 3, 3, 3}, 51, 0);
  init(&b, "g", 1, (int64_t[]){8}, 52, 1);
  init(&b, "be", 1, (int64_t[]){8}, 53, 0);
  init(&b, "fc1", 2, (int64_t[]){8, 16}, 54, 0);
  init(&b, "fc2", 2, (int64_t[]){16, 8}, 55, 0);
  float two = 2, eps = 1e-6f, half = 0.5f, rsq2 = 0.70710678f, one = 1;
  b.inits[b.n_inits++] = tensor(&b, "two", 0, NULL, &two, 0);
  b.inits[b.n_inits++] = tensor(&b, "eps", 0, NULL, &eps, 0);
  b.inits[b.n_inits++] = tensor(&b, "half", 0, NULL, &half, 0);
  b.inits[b.n_inits++] = tensor(&b, "rsq2", 0, NULL, &rsq2, 0);
  b.inits[b.n_inits++] = tensor(&b, "one", 0, NULL, &one, 0);
  b.inits[b.n_inits++] = tensor_i64(&b, "ax01", 2, (int64_t[]){0, 1});
  Onnx__NodeProto *n = nodev(&b, "Conv", "conv", "data,w", "c");
  attr_ints(&b, n, "pads", 4, (int64_t[]){1, 1, 1, 1});
  n = nodev(&b, "Transpose", "to_nhwc", "c", "h");
  attr_ints(&b, n, "perm", 4, (int64_t[]){0, 2, 3, 1});
  attr_ints(&b, nodev(&b, "ReduceMean", "mu", "h", "mu"), "axes", 1, (const int64_t[]){-1});
  nodev(&b, "Sub", "d", "h,mu", "d");
  nodev(&b, "Pow", "sq", "d,two", "d2");
  attr_ints(&b, nodev(&b, "ReduceMean", "var", "d2", "var"), "axes", 1, (const int64_t[]){-1});
  nodev(&b, "Add", "ve", "var,eps", "ve");
  nodev(&b, "Sqrt", "sd", "ve", "sd");
  nodev(&b, "Div", "nrm", "d,sd", "nrm");
  nodev(&b, "Mul", "gm", "nrm,g", "gm");
  nodev(&b, "Add", "ln", "gm,be", "ln");
  nodev(&b, "MatMul", "lin1", "ln,fc1", "l1");
  nodev(&b, "Mul", "gx", "l1,rsq2", "gx");   /* GELU: x · ½ (1 + erf(x / √2)) */
  nodev(&b, "Erf", "ge", "gx", "ge");
  nodev(&b, "Add", "g1", "ge,one", "g1");
  nodev(&b, "Mul", "g2", "l1,g1", "g2");
  nodev(&b, "Mul", "gelu", "g2,half", "gelu");
  nodev(&b, "MatMul", "lin2", "gelu,fc2", "l2");
  n = nodev(&b, "LayerNormalization", "ln17", "l2,g,be", "l3");
  attr_float(&b, n, "epsilon", 1e-5f);
  n = nodev(&b, "Transpose", "to_nchw", "l3", "back");
  attr_ints(&b, n, "perm", 4, (int64_t[]){0, 3, 1, 2});
  n = nodev(&b, "ReduceSum", "rs", "back,ax01", "rsum");   /* opset 13: ReduceSum's axes are an input */
  attr_int(&b, n, "keepdims", 0);
  n = nodev(&b, "ReduceMax", "rmax", "rsum", "y");
  attr_ints(&b, n, "axes", 1, (int64_t[]){1});
  b.outs[b.n_outs++] = vinfo(&b, "y", 2, (int64_t[]){13, 1}, NULL);
  check_model(write_model(&b, "convnext_block.onnx", 17, 0));
  mb_free(&b);
  /* an exponent it cannot express is refused with its value */
  one_conv(&b, "");
  float e = 1.5f;
  b.inits[b.n_inits++] = tensor(&b, "e", 0, NULL, &e, 0);
  nodev(&b, "Pow", "pw", "y,e", "z");
  import_fails(write_model(&b, "pow.onnx", 13, 0), "node 'pw' (Pow): exponent 1.5 is not supported");
  mb_free(&b);
}

/* a channel shuffle and a split as exporters write them: the reshape's
 * shape computed from Shape → Gather → Div → Concat, a Transpose of 5-d,
 * Split into two, a strided Slice with negative bounds */
static void test_shuffle_and_slices(void **state) {
  (void)state;
  mb b = {0};
  b.ins[b.n_ins++] = vinfo(&b, "data", 4, X4, NULL);
  init(&b, "w", 4, (int64_t[]){8, 3, 3, 3}, 41, 0);
  init(&b, "w2", 4, (int64_t[]){4, 4, 1, 1}, 42, 0);
  b.inits[b.n_inits++] = tensor_i64(&b, "i0", 1, (int64_t[]){0});
  b.inits[b.n_inits++] = tensor_i64(&b, "i1", 1, (int64_t[]){1});
  b.inits[b.n_inits++] = tensor_i64(&b, "two", 1, (int64_t[]){2});
  b.inits[b.n_inits++] = tensor_i64(&b, "rest", 2, (int64_t[]){13, 11});
  b.inits[b.n_inits++] = tensor_i64(&b, "flat", 4, (int64_t[]){1, 8, 13, 11});
  b.inits[b.n_inits++] = tensor_i64(&b, "s_st", 2, (int64_t[]){-7, 1});
  b.inits[b.n_inits++] = tensor_i64(&b, "s_en", 2, (int64_t[]){INT64_MAX, -1});
  b.inits[b.n_inits++] = tensor_i64(&b, "s_ax", 2, (int64_t[]){2, 3});
  b.inits[b.n_inits++] = tensor_i64(&b, "s_sp", 2, (int64_t[]){2, 3});
  Onnx__NodeProto *n = nodev(&b, "Conv", "conv", "data,w", "c");
  attr_ints(&b, n, "pads", 4, (int64_t[]){1, 1, 1, 1});
  nodev(&b, "Shape", "shape", "c", "sh");
  nodev(&b, "Gather", "g0", "sh,i0", "n0");
  nodev(&b, "Gather", "g1", "sh,i1", "c0");
  nodev(&b, "Div", "div", "c0,two", "cg");
  nodev(&b, "Concat", "cat", "n0,two,cg,rest", "shp");
  attr_int(&b, b.nodes[b.n_nodes - 1], "axis", 0);
  nodev(&b, "Reshape", "r5", "c,shp", "c5");
  n = nodev(&b, "Transpose", "tr", "c5", "t5");
  attr_ints(&b, n, "perm", 5, (int64_t[]){0, 2, 1, 3, 4});
  nodev(&b, "Reshape", "r4", "t5,flat", "sh4");
  n = nodev(&b, "Split", "split", "sh4", "a,bb");
  attr_int(&b, n, "axis", 1);
  nodev(&b, "Conv", "conv2", "bb,w2", "c2");
  nodev(&b, "Add", "add", "a,c2", "sum");
  nodev(&b, "Slice", "slice", "sum,s_st,s_en,s_ax,s_sp", "y");
  b.outs[b.n_outs++] = vinfo(&b, "y", 4, (int64_t[]){1, 4, 4, 3}, NULL);
  check_model(write_model(&b, "shuffle.onnx", 13, 0));
  mb_free(&b);
  /* refused with the reason: a negative step, Gather of a float tensor */
  one_conv(&b, "");
  b.inits[b.n_inits++] = tensor_i64(&b, "st", 1, (int64_t[]){5});
  b.inits[b.n_inits++] = tensor_i64(&b, "en", 1, (int64_t[]){0});
  b.inits[b.n_inits++] = tensor_i64(&b, "ax", 1, (int64_t[]){3});
  b.inits[b.n_inits++] = tensor_i64(&b, "sp", 1, (int64_t[]){-1});
  nodev(&b, "Slice", "rev", "y,st,en,ax,sp", "z");
  import_fails(write_model(&b, "rev.onnx", 13, 0), "node 'rev' (Slice): step -1 is not supported (positive steps only)");
  mb_free(&b);
  one_conv(&b, "");
  b.inits[b.n_inits++] = tensor_i64(&b, "k", 1, (int64_t[]){0});
  nodev(&b, "Gather", "gf", "y,k", "z");
  import_fails(write_model(&b, "gf.onnx", 13, 0), "node 'gf' (Gather): Gather of a float tensor is not supported");
  mb_free(&b);
}

static void import_fails(const char *path, const char *want) {
  temper_graph *g = NULL;
  diag d = {0};
  temper_status s = onnx_import(path, &g, &d);
  if (!s || !strstr(d.msg, want)) fprintf(stderr, "wanted '%s', got '%s'\n", want, s ? d.msg : "(success)");
  assert_int_not_equal(s, TEMPER_OK);
  assert_null(g);
  assert_non_null(strstr(d.msg, want));
  unlink(path);
}

static void one_conv(mb *b, const char *w_name) {
  b->ins[b->n_ins++] = vinfo(b, "data", 4, X4, NULL);
  init(b, "w", 4, (int64_t[]){4, 3, 3, 3}, 1, 0);
  nodev(b, "Conv", "conv1", w_name[0] ? w_name : "data,w", "y");
  b->outs[b->n_outs++] = vinfo(b, "y", 4, (int64_t[]){1, 4, 11, 9}, NULL);
}

static void test_errors(void **state) {
  (void)state;
  mb b = {0};
  one_conv(&b, "");
  write_model(&b, "t.onnx", 13, 0);
  import_fails(write_model(&b, "trunc.onnx", 13, 40), "not a valid ONNX model (truncated or corrupt protobuf)");
  write_model(&b, "old9.onnx", 9, 0);   /* Conv reads the same since opset 1: an opset-9 model is read */
  temper_graph *g9 = NULL;
  diag d9 = {0};
  assert_int_equal(onnx_import(write_model(&b, "old9.onnx", 9, 0), &g9, &d9), TEMPER_OK);
  temper_graph_destroy(g9);
  mb_free(&b);
  one_conv(&b, "");
  nodev(&b, "Pad", "pad", "y,pads", "z");
  import_fails(write_model(&b, "old.onnx", 9, 0), "opset 9 is not supported for Pad (temper reads opsets 11 to 18, and older ones");
  mb_free(&b);
  one_conv(&b, "data,w_missing");
  import_fails(write_model(&b, "dangling.onnx", 13, 0),
               "node 'conv1' (Conv): input 'w_missing' is not produced by any earlier node, initializer or graph input");
  mb_free(&b);
  one_conv(&b, "");
  attr_float(&b, b.nodes[0], "group", 2.0f);
  import_fails(write_model(&b, "attr.onnx", 13, 0), "node 'conv1' (Conv): attribute 'group' must be an int");
  mb_free(&b);
  one_conv(&b, "");
  nodev(&b, "LSTM", "l1", "y", "z1");
  nodev(&b, "Einsum", "e1", "y", "z2");
  nodev(&b, "LSTM", "l2", "y", "z3");
  import_fails(write_model(&b, "unsup.onnx", 13, 0), "unsupported ONNX ops: LSTM (2 nodes: 'l1', 'l2'), Einsum (1 node: 'e1')");
  mb_free(&b);
  /* many unsupported types with long node names: every type is named (the
   * names give way), none cut off as convnext_tiny's Sqrt and Erf were */
  one_conv(&b, "");
  char types[30][24];
  for (int t = 0; t < 30; t++) {
    snprintf(types[t], sizeof types[t], "Fancy%02d", t);
    for (int k = 0; k < 2; k++) {
      char name[160], out[32];
      snprintf(name, sizeof name, "/stages/stage_%d/block_%d/layer_with_a_very_long_exported_name/%.15s", t, k, types[t]);
      snprintf(out, sizeof out, "o%d_%d", t, k);
      nodev(&b, types[t], name, "y", out);
    }
  }
  import_fails(write_model(&b, "many.onnx", 13, 0), "Fancy00 (2 nodes)");
  const char *many = write_model(&b, "many.onnx", 13, 0);
  temper_graph *g = NULL;
  diag d = {0};
  assert_int_not_equal(onnx_import(many, &g, &d), TEMPER_OK);
  for (int t = 0; t < 30; t++)
    if (!strstr(d.msg, types[t])) fail_msg("%s is not named in: %s", types[t], d.msg);
  unlink(many);
  mb_free(&b);
  /* absent proto2 strings (a node without op_type, an attribute without a
   * name), stride 0, huge or dataless initializers: errors, never a crash */
  one_conv(&b, "");
  b.nodes[0]->op_type = NULL;
  import_fails(write_model(&b, "noop.onnx", 13, 0), "unsupported ONNX op: (no op_type) (1 node: 'conv1')");
  mb_free(&b);
  one_conv(&b, "");
  attr_int(&b, b.nodes[0], "group", 1);
  b.nodes[0]->attribute[0]->name = NULL;
  b.nodes[0]->name = NULL;
  Onnx__NodeProto *relu = nodev(&b, "Relu", "r", "_", "z");   /* an empty input name */
  relu->name = NULL;
  import_fails(write_model(&b, "noname.onnx", 13, 0), "node '(unnamed)' (Relu): input 1 is missing");
  mb_free(&b);
  one_conv(&b, "");
  attr_ints(&b, b.nodes[0], "strides", 2, (int64_t[]){0, 1});
  import_fails(write_model(&b, "stride0.onnx", 13, 0), "strides and dilations must be between 1 and 4096, got strides [0, 1]");
  mb_free(&b);
  one_conv(&b, "");
  float one = 1;
  b.inits[b.n_inits++] = tensor(&b, "huge", 3, (int64_t[]){1, 1, 1}, &one, 0);
  b.inits[b.n_inits - 1]->dims[0] = 1ll << 31, b.inits[b.n_inits - 1]->dims[1] = 1ll << 31, b.inits[b.n_inits - 1]->dims[2] = 4;
  import_fails(write_model(&b, "huge.onnx", 13, 0), "tensor 'huge' has more than 8589934592 elements");
  mb_free(&b);
  one_conv(&b, "");
  b.inits[b.n_inits++] = tensor(&b, "empty", 1, (int64_t[]){1}, &one, 0);
  b.inits[b.n_inits - 1]->dims[0] = 1ll << 30;   /* 4 GiB declared, one float given */
  import_fails(write_model(&b, "dataless.onnx", 13, 0), "tensor 'empty': expected 1073741824 floats of data, found 1");
  mb_free(&b);
  /* BatchNormalization in training mode would need the batch's statistics:
   * refused, not run with the stored ones */
  for (int variant = 0; variant < 2; variant++) {
    one_conv(&b, "");
    float one4[4] = {1, 1, 1, 1};
    const char *stats[4] = {"gamma", "beta", "mean", "var"};
    for (int k = 0; k < 4; k++) b.inits[b.n_inits++] = tensor(&b, stats[k], 1, (int64_t[]){4}, one4, 0);
    Onnx__NodeProto *n = nodev(&b, "BatchNormalization", "bn_train", "y,gamma,beta,mean,var", variant ? "b,rm,rv" : "b");
    if (!variant) attr_int(&b, n, "training_mode", 1);
    import_fails(write_model(&b, "bn_train.onnx", variant ? 13 : 15, 0),
                 variant ? "node 'bn_train' (BatchNormalization): training mode (running-statistics outputs requested) is not supported"
                         : "node 'bn_train' (BatchNormalization): training mode (training_mode=1) is not supported");
    mb_free(&b);
  }
  b.ins[b.n_ins++] = vinfo(&b, "data", 4, X4, "batch");
  nodev(&b, "Relu", "r", "data", "y");
  b.outs[b.n_outs++] = vinfo(&b, "y", 4, X4, NULL);
  import_fails(write_model(&b, "sym.onnx", 13, 0), "dimension 0 is symbolic ('batch'): temper needs static shapes");
  mb_free(&b);
  one_conv(&b, "data,w2");
  init(&b, "w2", 4, (int64_t[]){4, 2, 3, 3}, 3, 0);   /* 2 input channels for a 3-channel input */
  import_fails(write_model(&b, "shape.onnx", 13, 0), "node 'conv1' (Conv): nn.conv2d: input has 3 channels (3 per group), weight expects 2");
  mb_free(&b);
  import_fails("/nonexistent.onnx", "cannot open");
}

/* weights in a file beside the model */
static void test_external_data(void **state) {
  (void)state;
  mb b = {0};
  one_conv(&b, "");
  Onnx__TensorProto *t = b.inits[0];
  char bin[512];
  snprintf(bin, sizeof bin, "/tmp/temper_onnx_%d_w.bin", (int)getpid());
  FILE *f = fopen(bin, "wb");
  fwrite("pad!", 1, 4, f);
  fwrite(t->has_raw_data ? (void *)t->raw_data.data : (void *)t->float_data, 4, 108, f);
  fclose(f);
  t->has_raw_data = 0;
  t->n_float_data = 0;
  t->has_data_location = 1;
  t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  t->n_external_data = 2;
  t->external_data = keep(&b, malloc(sizeof(void *) * 2));
  const char *kv[2][2] = {{"location", strrchr(bin, '/') + 1}, {"offset", "4"}};
  for (int i = 0; i < 2; i++) {
    Onnx__StringStringEntryProto *e = keep(&b, malloc(sizeof *e));
    onnx__string_string_entry_proto__init(e);
    e->key = kstr(&b, kv[i][0]);
    e->value = kstr(&b, kv[i][1]);
    t->external_data[i] = e;
  }
  check_model(write_model(&b, "ext.onnx", 13, 0));
  unlink(bin);
  import_fails(write_model(&b, "ext2.onnx", 13, 0), "cannot open its external data");
  mb_free(&b);
}

/* ResNet-18 exported by PyTorch: temper's logits equal PyTorch's */
/* torchvision's model `name`, exported by scripts/export_models.py into dir,
 * equals PyTorch: max abs difference within 1e-4 of the largest logit, the
 * same five top classes in the same order */
static void check_against_pytorch(const char *dir, const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s.onnx", dir, name);
  temper_graph *g = NULL;
  diag d = {0};
  assert_int_equal(onnx_import(path, &g, &d), TEMPER_OK);
  shape_t xs, ys;
  float *x = NULL, *want = NULL;
  char err[256];
  snprintf(path, sizeof path, "%s/%s.input.npy", dir, name);
  assert_int_equal(npy_read(path, &xs, &x, err, sizeof err), TEMPER_OK);
  snprintf(path, sizeof path, "%s/%s.output.npy", dir, name);
  assert_int_equal(npy_read(path, &ys, &want, err, sizeof err), TEMPER_OK);
  assert_int_equal(pipeline_optimize(g, engine->target.vec, &d), TEMPER_OK);
  exec *ex = NULL;
  assert_int_equal(exec_create(engine, g, 2, &ex, &d), TEMPER_OK);
  exec_set_input(ex, 0, x);
  exec_run(ex);
  const float *got = exec_output(ex, 0);
  double abs_err, rel = data_rel_error(got, want, 1000, &abs_err);
  if (!(rel <= 1e-4)) fprintf(stderr, "%s: max abs difference %g, %g of the largest logit\n", name, abs_err, rel);
  assert_true(rel <= 1e-4);
  int top_got[5], top_want[5];
  for (int k = 0; k < 5; k++) {   /* the same five classes, in the same order */
    top_got[k] = top_want[k] = 0;
    for (int i = 0; i < 1000; i++) {
      int seen_g = 0, seen_w = 0;
      for (int j = 0; j < k; j++) seen_g |= top_got[j] == i, seen_w |= top_want[j] == i;
      if (!seen_g && (got[i] > got[top_got[k]] || top_got[k] == -1)) top_got[k] = i;
      if (!seen_w && want[i] > want[top_want[k]]) top_want[k] = i;
    }
  }
  assert_memory_equal(top_got, top_want, sizeof top_got);
  exec_destroy(ex);
  free(x);
  free(want);
  temper_graph_destroy(g);
}

/* ResNet-18, and regnet_y_400mf: its grouped convs (104 channels, 13
 * groups) after convs once read past a 12-wide channel block (issue 15);
 * mobilenet_v3_small (HardSigmoid: hard swish and squeeze-excite) and
 * mnasnet1_0 (ReduceMean as its global pool), shufflenet_v2_x1_0 (the
 * channel shuffle: Reshape → Transpose → Reshape, Slice, and the Shape →
 * Gather → arithmetic chains folded at import), convnext_tiny (LayerNorm
 * decomposed, Pow, N-d MatMul, GELU with Erf, Transpose to NHWC and back) */
static void test_torchvision_against_pytorch(void **state) {
  (void)state;
  char dir[256], cmd[1024];
  snprintf(dir, sizeof dir, "/tmp/temper_onnx_models_%d", (int)getpid());
#ifdef TEMPER_SANITIZED   /* the sanitizers look at the importer's memory: the small models of each family suffice */
  static const char *const models[] = {"mobilenet_v3_small", "shufflenet_v2_x1_0"};
#else
  static const char *const models[] = {"resnet18", "regnet_y_400mf", "mobilenet_v3_small", "mnasnet1_0", "shufflenet_v2_x1_0", "convnext_tiny"};
#endif
  int k = snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/scripts/export_models.py %s", TEMPER_SOURCE_DIR, dir);
  for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) k += snprintf(cmd + k, sizeof cmd - (size_t)k, " %s", models[i]);
  snprintf(cmd + k, sizeof cmd - (size_t)k, " > /dev/null 2>&1");
  assert_int_equal(system(cmd), 0);
  for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) check_against_pytorch(dir, models[i]);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}


int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_classifier_ops), cmocka_unit_test(test_shape_ops),   cmocka_unit_test(test_errors),
      cmocka_unit_test(test_activations), cmocka_unit_test(test_shuffle_and_slices), cmocka_unit_test(test_reductions_and_layer_norm),
      cmocka_unit_test(test_external_data),  cmocka_unit_test(test_torchvision_against_pytorch),
  };
  return cmocka_run_group_tests(tests, engine_setup, engine_teardown);
}
