/* simplify.c: SimplifyInference. batch_norm(x, γ, β, μ, σ²).0 becomes
 *   x * reshape(γ / sqrt(σ² + ε)) + reshape(β - μ·scale)
 * with the per-channel vectors reshaped to broadcast along the axis; the
 * constant parts fold away later (fold.c), and the multiply folds into a
 * preceding conv2d's weights. dropout(x).0 becomes x, a pad of zero widths
 * its input, an average pool of a zero pad of H and W the pool with that
 * padding (counted).
 *
 * And a dense layer over many rows (a linear layer applied at every pixel,
 * as ConvNeXt's MLPs are: MatMul on NHWC) becomes the 1×1 conv2d it is:
 *   dense(x[M, K], W[N, K]) = transpose(reshape(conv2d(reshape(transpose(x), [1, K, h, w]),
 *                                                       reshape(W, [N, K, 1, 1])), [N, M]))
 * with h·w = M as square as M allows. The conv2d gets the blocked layouts,
 * the templates and the tuning every conv2d gets; the two transposes are
 * copies (a few percent of the multiply); dense's own schedule is a dot
 * product per output, right for one row and slow for thousands. */
#include <math.h>
#include <string.h>
#include "compiler_int.h"

static node *call1(temper_graph *g, int op, node *a) { return ir_call(g, op, 1, &a, NULL); }
static node *call2(temper_graph *g, int op, node *a, node *b) {
  node *args[2] = {a, b};
  return ir_call(g, op, 2, args, NULL);
}

static node *expand_to_axis(temper_graph *g, node *v, int axis, int ndim) {
  if (axis == ndim - 1) return v;
  node *r = call1(g, OP_RESHAPE, v);
  if (!r) return NULL;
  attr_val *ns = &r->attrs->v[ATTR_NEWSHAPE];
  ns->n = ndim - axis;
  ns->i[0] = -1;
  for (int i = 1; i < ns->n; i++) ns->i[i] = 1;
  return r;
}

static node *lower_batch_norm(temper_graph *g, node *bn, node **a) {
  const attrs_t *at = bn->attrs;
  int ndim = bn->args[0]->ty.shape.ndim;
  int axis = (int)(at->v[ATTR_AXIS].i[0] < 0 ? at->v[ATTR_AXIS].i[0] + ndim : at->v[ATTR_AXIS].i[0]);
  shape_t s0 = {0};
  float eps = (float)at->v[ATTR_EPSILON].f;
  node *e = ir_const(g, &s0, &eps);
  node *std = e ? call1(g, OP_SQRT, call2(g, OP_ADD, a[4], e)) : NULL;
  node *scale = std ? (at->v[ATTR_SCALE].i[0] ? call2(g, OP_DIVIDE, a[1], std) : NULL) : NULL;
  if (std && !at->v[ATTR_SCALE].i[0]) {
    float one = 1.0f;
    node *c1 = ir_const(g, &s0, &one);
    scale = c1 ? call2(g, OP_DIVIDE, c1, std) : NULL;
  }
  if (!scale) return NULL;
  node *mean_scaled = call2(g, OP_MULTIPLY, a[3], scale);
  node *shift = NULL;
  if (mean_scaled) {
    if (at->v[ATTR_CENTER].i[0]) {
      shift = call2(g, OP_SUBTRACT, a[2], mean_scaled);
    } else {
      float zero = 0.0f;
      node *c0 = ir_const(g, &s0, &zero);
      shift = c0 ? call2(g, OP_SUBTRACT, c0, mean_scaled) : NULL;
    }
  }
  node *sc = expand_to_axis(g, scale, axis, ndim);
  node *sh = shift ? expand_to_axis(g, shift, axis, ndim) : NULL;
  if (!sc || !sh) return NULL;
  node *m = call2(g, OP_MULTIPLY, a[0], sc);
  return m ? call2(g, OP_ADD, m, sh) : NULL;
}

enum { DENSE_AS_CONV_ROWS = 16 };

static node *reshaped(temper_graph *g, node *v, int n, const int64_t *dims) {
  node *r = call1(g, OP_RESHAPE, v);
  if (!r) return NULL;
  attr_val *ns = &r->attrs->v[ATTR_NEWSHAPE];
  ns->n = n;
  for (int i = 0; i < n; i++) ns->i[i] = dims[i];
  return r;
}

static node *transposed(temper_graph *g, node *v) {
  node *t = v ? call1(g, OP_TRANSPOSE, v) : NULL;
  if (!t) return NULL;
  t->attrs->v[ATTR_AXES].n = 2;
  t->attrs->v[ATTR_AXES].i[0] = 1;
  t->attrs->v[ATTR_AXES].i[1] = 0;
  return t;
}

static node *dense_as_conv(temper_graph *g, const node *n, node **args) {
  int64_t M = n->args[0]->ty.shape.d[0], K = n->args[0]->ty.shape.d[1], N = n->ty.shape.d[1];
  int64_t h = 1;
  for (int64_t i = 1; i * i <= M; i++)
    if (M % i == 0) h = i;
  node *x = reshaped(g, transposed(g, args[0]), 4, (int64_t[]){1, K, M / h, h});
  node *w = reshaped(g, args[1], 4, (int64_t[]){N, K, 1, 1});
  if (!x || !w) return NULL;
  node *c = call2(g, OP_CONV2D, x, w);
  if (!c) return NULL;
  c->attrs->v[ATTR_CHANNELS].i[0] = N;
  c->attrs->v[ATTR_KERNEL_SIZE].i[0] = c->attrs->v[ATTR_KERNEL_SIZE].i[1] = 1;
  c->loc = n->loc;
  return transposed(g, reshaped(g, c, 2, (int64_t[]){N, M}));
}

/* nn.layer_norm(x, γ, β) as the core op on x and the affine ops after it,
 * which fuse into its epilogue and sink with it (sink.c) */
static node *layer_norm_affine(temper_graph *g, const node *n, node **args) {
  const attrs_t *at = n->attrs;
  int ndim = n->ty.shape.ndim;
  int axis = (int)(at->v[ATTR_AXIS].i[0] < 0 ? at->v[ATTR_AXIS].i[0] + ndim : at->v[ATTR_AXIS].i[0]);
  node *y = ir_call(g, OP_LAYER_NORM, 1, args, at);
  if (!y) return NULL;
  y->loc = n->loc;
  if (at->v[ATTR_SCALE].i[0]) {
    node *sc = expand_to_axis(g, args[1], axis, ndim);
    y = sc ? call2(g, OP_MULTIPLY, y, sc) : NULL;
  }
  if (y && at->v[ATTR_CENTER].i[0]) {
    node *sh = expand_to_axis(g, args[2], axis, ndim);
    y = sh ? call2(g, OP_ADD, y, sh) : NULL;
  }
  return y;
}

/* x where v is the mean of x over its last axis, kept — as the importer
 * makes ReduceMean(axes=[-1]): reshape(global_avg_pool2d(reshape(x, [1,
 * rows, n, 1])), x's shape with a last axis of 1); else NULL */
static const node *mean_of_last(const node *v) {
  if (v->kind != N_CALL || v->op != OP_RESHAPE) return NULL;
  const node *p = v->args[0];
  if (p->kind != N_CALL || p->op != OP_GLOBAL_AVG_POOL2D || strcmp(p->attrs->v[ATTR_LAYOUT].s, "NCHW")) return NULL;
  const node *r = p->args[0];
  if (r->kind != N_CALL || r->op != OP_RESHAPE) return NULL;
  const node *x = r->args[0];
  const shape_t *xs = &x->ty.shape, *rs = &r->ty.shape, *vs = &v->ty.shape;
  if (x->ty.kind != TY_TENSOR || xs->ndim < 1 || rs->ndim != 4 || vs->ndim != xs->ndim) return NULL;
  int64_t rows = shape_numel(xs) / (xs->d[xs->ndim - 1] ? xs->d[xs->ndim - 1] : 1);
  if (rs->d[0] != 1 || rs->d[1] != rows || rs->d[2] != xs->d[xs->ndim - 1] || rs->d[3] != 1) return NULL;
  for (int i = 0; i < xs->ndim; i++)
    if (vs->d[i] != (i == xs->ndim - 1 ? 1 : xs->d[i])) return NULL;
  return x;
}

/* the value of a one-element float constant in *v */
static int scalar_const(const node *c, float *v) {
  if (c->kind != N_CONST || shape_numel(&c->ty.shape) != 1 || !c->data) return 0;
  *v = c->data[0];
  return 1;
}

/* A layer norm over the last axis as ONNX's opset-13 export writes it
 * (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div; the importer's own
 * LayerNormalization is the same ops):
 *   d = x − mean(x);  d / sqrt(mean(d · d) + ε)   →   nn.layer_norm(x, axis=-1, epsilon=ε)
 * One op, which sinks through ConvNeXt's permutes (sink.c) and runs over
 * the channels of a blocked tensor in one kernel; as seven ops it was a
 * transpose, two reductions and four elementwise kernels per block. */
static node *layer_norm_of(temper_graph *g, const node *n, node **args) {
  const node *dv = args[0], *sq = args[1];
  if (dv->kind != N_CALL || dv->op != OP_SUBTRACT || sq->kind != N_CALL || sq->op != OP_SQRT) return NULL;
  const node *x = dv->args[0];
  if (mean_of_last(dv->args[1]) != x || !shape_eq(&x->ty.shape, &n->ty.shape)) return NULL;
  const node *e = sq->args[0];
  float eps;
  if (e->kind != N_CALL || e->op != OP_ADD) return NULL;
  const node *var = scalar_const(e->args[1], &eps) ? e->args[0] : scalar_const(e->args[0], &eps) ? e->args[1] : NULL;
  const node *dd = var ? mean_of_last(var) : NULL;
  if (!dd || dd->kind != N_CALL || dd->op != OP_MULTIPLY || dd->args[0] != dv || dd->args[1] != dv || !(eps >= 0) || isinf(eps))
    return NULL;
  node *xa = (node *)x;
  node *y = ir_call(g, OP_LAYER_NORM, 1, &xa, NULL);
  if (!y) return NULL;
  y->loc = n->loc;
  y->attrs->v[ATTR_AXIS].i[0] = x->ty.shape.ndim - 1;
  y->attrs->v[ATTR_EPSILON].f = eps;
  return y;
}

static node *simplify_node(temper_graph *g, node *n, node **args, void *ctx, diag *d) {
  (void)ctx;
  (void)d;
  if (n->kind == N_GETITEM && n->index == 0 && n->args[0]->kind == N_CALL) {
    node *t = args[0];
    if (t->kind == N_CALL && t->op == OP_DROPOUT) return t->args[0];
    if (t->kind == N_CALL && t->op == OP_BATCH_NORM) return lower_batch_norm(g, t, t->args);
  }
  /* a pad of nothing (PyTorch's export puts one before DenseNet's average
   * pools) is its input: left in, it read NCHW and cut the blocked layout
   * between the conv2d and the pool (engine/layout.c). Kept on a parameter,
   * so a function never returns its input. */
  if (n->kind == N_CALL && n->op == OP_PAD && args[0]->kind == N_CALL) {
    const attr_val *pw = &n->attrs->v[ATTR_PAD_WIDTH];
    int none = 1;
    for (int i = 0; i < pw->n; i++) none &= pw->i[i] == 0;
    if (none) return args[0];
  }
  /* an average pool over a zero pad of H and W is the pool with that
   * padding counted: PyTorch exports count_include_pad=True (Inception
   * v3's 3×3 stride-1 pools) as Pad + AveragePool, and the pad, an
   * injective op, read and wrote NCHW (Inception v3: 0.85 ms of pads and
   * 3.4 ms of NCHW pools at one thread on Zen 5) */
  if (n->kind == N_CALL && n->op == OP_AVG_POOL2D && args[0]->kind == N_CALL && args[0]->op == OP_PAD && n->ty.shape.ndim == 4 &&
      !strcmp(n->attrs->v[ATTR_LAYOUT].s, "NCHW") && !n->attrs->v[ATTR_CEIL_MODE].i[0]) {
    const node *pad = args[0];
    const attr_val *pw = &pad->attrs->v[ATTR_PAD_WIDTH], *pp = &n->attrs->v[ATTR_PADDING];
    int plain = pw->n == 8 && pad->attrs->v[ATTR_PAD_VALUE].f == 0 && !pw->i[0] && !pw->i[1] && !pw->i[2] && !pw->i[3];
    for (int i = 0; i < pp->n; i++) plain &= pp->i[i] == 0;
    if (plain) {
      node *c = ir_call(g, OP_AVG_POOL2D, 1, &pad->args[0], n->attrs);
      if (!c) return NULL;
      c->loc = n->loc;
      attr_val *np = &c->attrs->v[ATTR_PADDING];
      np->n = 4;
      np->i[0] = pw->i[4], np->i[1] = pw->i[6], np->i[2] = pw->i[5], np->i[3] = pw->i[7];
      c->attrs->v[ATTR_COUNT_INCLUDE_PAD].i[0] = 1;
      return c;
    }
  }
  if (n->kind == N_CALL && n->op == OP_LAYER_NORM && n->n_args == 3) return layer_norm_affine(g, n, args);
  if (n->kind == N_CALL && n->op == OP_DIVIDE && n->ty.kind == TY_TENSOR) {
    node *ln = layer_norm_of(g, n, args);
    if (ln) return ln;
  }
  if (n->kind == N_CALL && n->op == OP_DENSE && n->ty.kind == TY_TENSOR && n->args[0]->ty.shape.ndim == 2 &&
      n->args[0]->ty.shape.d[0] >= DENSE_AS_CONV_ROWS)
    return dense_as_conv(g, n, args);
  return ir_with_args(g, n, args);
}

/* simplify: needs types; keeps types; no batch_norm(.0) or dropout(.0) remains */
temper_status simplify(temper_graph *g, diag *d) { return ir_rewrite(g, simplify_node, NULL, d); }
