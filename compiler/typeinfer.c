/* typeinfer.c: shapes of every node, with a located error for every
 * inconsistency (channel mismatch, kernel larger than the padded input,
 * groups not dividing channels, broadcasting, arity, bad attributes). */
#include <stdio.h>
#include <string.h>
#include "compiler_int.h"

#define TRY(x) do { temper_status s_ = (x); if (s_ != TEMPER_OK) return s_; } while (0)

static temper_status want_tensor(diag *d, const node *call, int i, int ndim) {
  const node *a = call->args[i];
  if (a->ty.kind != TY_TENSOR)
    return diag_error(d, call->loc, "%s: argument %d must be a tensor, not a tuple", ir_op_name(call), i + 1);
  if (ndim >= 0 && a->ty.shape.ndim != ndim)
    return diag_error(d, call->loc, "%s: argument %d must have %d dimensions, has %d", ir_op_name(call), i + 1,
                      ndim, a->ty.shape.ndim);
  return TEMPER_OK;
}

static int norm_axis(int64_t axis, int ndim) { return (int)(axis < 0 ? axis + ndim : axis); }

/* numpy broadcasting of two shapes */
static temper_status broadcast(diag *d, const node *call, const shape_t *a, const shape_t *b, shape_t *out) {
  out->ndim = a->ndim > b->ndim ? a->ndim : b->ndim;
  for (int i = 0; i < out->ndim; i++) {
    int ia = a->ndim - out->ndim + i, ib = b->ndim - out->ndim + i;
    int64_t x = ia >= 0 ? a->d[ia] : 1, y = ib >= 0 ? b->d[ib] : 1;
    if (x != y && x != 1 && y != 1) {
      char sa[128], sbuf[128];
      type_t ta = {.kind = TY_TENSOR, .shape = *a}, tb = {.kind = TY_TENSOR, .shape = *b};
      print_type(sa, sizeof sa, &ta);
      print_type(sbuf, sizeof sbuf, &tb);
      return diag_error(d, call->loc, "%s: shapes %s and %s do not broadcast (dimension %d: %lld vs %lld)",
                        ir_op_name(call), sa, sbuf, i, (long long)x, (long long)y);
    }
    out->d[i] = x == 1 ? y : x;
  }
  return TEMPER_OK;
}

/* the primal NCHW shape of an activation in layout `name` */
static temper_status activation_primal(diag *d, const node *n, const char *what, const char *name, const shape_t *ps,
                                       int64_t *nchw) {
  layout_t l;
  if (layout_parse(name, &l) || l.n != ps->ndim || l.n < 4 || strncmp(l.axis, "NCHW", 4) || (l.n == 5 && l.axis[4] != 'c') ||
      l.n > 5)
    return diag_error(d, n->loc, "%s: %s \"%s\" is not supported for a %d-d input (use NCHW or NCHW<b>c)", ir_op_name(n), what,
                      name, ps->ndim);
  if (l.n == 5 && ps->d[4] != l.factor[4])
    return diag_error(d, n->loc, "%s: %s \"%s\" has blocks of %d channels but the input's last dimension is %lld", ir_op_name(n),
                      what, name, l.factor[4], (long long)ps->d[4]);
  for (int i = 0; i < 4; i++) nchw[i] = ps->d[i];
  if (l.n == 5) nchw[1] *= l.factor[4];
  return TEMPER_OK;
}

/* strides and dilations of a window op: 1 to 4096 (a stride 0 divides by zero) */
static temper_status positive_window(diag *d, const node *n, const int64_t *st, const int64_t *dil) {
  for (int i = 0; i < 2; i++)
    if (st[i] < 1 || st[i] > 4096 || dil[i] < 1 || dil[i] > 4096)
      return diag_error(d, n->loc, "%s: strides and dilations must be between 1 and 4096, got strides [%lld, %lld], dilation [%lld, %lld]",
                        ir_op_name(n), (long long)st[0], (long long)st[1], (long long)dil[0], (long long)dil[1]);
  return TEMPER_OK;
}

static temper_status infer_conv2d(diag *d, node *n, shape_t *o) {
  TRY(want_tensor(d, n, 0, -1));
  TRY(want_tensor(d, n, 1, -1));
  const attrs_t *a = n->attrs;
  const char *dl = a->v[ATTR_DATA_LAYOUT].s, *kl = a->v[ATTR_KERNEL_LAYOUT].s;
  const char *ol = a->v[ATTR_OUT_LAYOUT].s[0] ? a->v[ATTR_OUT_LAYOUT].s : dl;
  int64_t x[4];
  TRY(activation_primal(d, n, "data_layout", dl, &n->args[0]->ty.shape, x));
  layout_t wl, yl;
  const shape_t *w = &n->args[1]->ty.shape;
  int kl_ok = !layout_parse(kl, &wl) && !strncmp(wl.axis, "OIHW", 4) && wl.n == w->ndim;
  for (int i = 4; kl_ok && i < wl.n; i++)   /* OIHW<b>i<b>o: blocks of I and O, as the weight's last dimensions */
    kl_ok = (wl.axis[i] == 'i' || wl.axis[i] == 'o') && wl.factor[i] == w->d[i];
  if (!kl_ok)
    return diag_error(d, n->loc, "nn.conv2d: kernel_layout \"%s\" is not supported for a %d-d weight (use OIHW, or OIHW<b>i<b>o "
                      "with the blocks as its last dimensions)", kl, w->ndim);
  if (layout_parse(ol, &yl) || yl.n < 4 || yl.n > 5 || strncmp(yl.axis, "NCHW", 4) || (yl.n == 5 && yl.axis[4] != 'c'))
    return diag_error(d, n->loc, "nn.conv2d: out_layout \"%s\" is not supported (use NCHW or NCHW<b>c)", ol);
  int ob = layout_block(kl, 'o'), ib = layout_block(kl, 'i');
  int64_t C = x[1], G = a->v[ATTR_GROUPS].i[0];
  int64_t K = ob ? a->v[ATTR_CHANNELS].i[0] : w->d[0], Cw = w->d[1] * (ib ? ib : 1), R = w->d[2], S = w->d[3];
  if (ob && !K) return diag_error(d, n->loc, "nn.conv2d: a blocked kernel_layout needs channels=");
  if (G < 1) return diag_error(d, n->loc, "nn.conv2d: groups must be positive, got %lld", (long long)G);
  if (C % G) return diag_error(d, n->loc, "nn.conv2d: groups=%lld does not divide the %lld input channels", (long long)G, (long long)C);
  if (K % G) return diag_error(d, n->loc, "nn.conv2d: groups=%lld does not divide the %lld output channels", (long long)G, (long long)K);
  if (Cw != C / G)
    return diag_error(d, n->loc, "nn.conv2d: input has %lld channels (%lld per group), weight expects %lld",
                      (long long)C, (long long)(C / G), (long long)Cw);
  if (ob && w->d[0] * ob < K) return diag_error(d, n->loc, "nn.conv2d: packed weight too small");
  if (a->v[ATTR_CHANNELS].i[0] && a->v[ATTR_CHANNELS].i[0] != K)
    return diag_error(d, n->loc, "nn.conv2d: channels=%lld but the weight has %lld output channels",
                      (long long)a->v[ATTR_CHANNELS].i[0], (long long)K);
  const int64_t *ks = a->v[ATTR_KERNEL_SIZE].i;
  if ((ks[0] || ks[1]) && (ks[0] != R || ks[1] != S))
    return diag_error(d, n->loc, "nn.conv2d: kernel_size=[%lld, %lld] but the weight is %lldx%lld",
                      (long long)ks[0], (long long)ks[1], (long long)R, (long long)S);
  const int64_t *st = a->v[ATTR_STRIDES].i, *pad = a->v[ATTR_PADDING].i, *dil = a->v[ATTR_DILATION].i;
  TRY(positive_window(d, n, st, dil));
  int64_t eh = dil[0] * (R - 1) + 1, ew = dil[1] * (S - 1) + 1;
  int64_t ph = x[2] + pad[0] + pad[2], pw = x[3] + pad[1] + pad[3];
  if (eh > ph || ew > pw)
    return diag_error(d, n->loc, "nn.conv2d: the %lldx%lld kernel (dilated %lldx%lld) is larger than the padded "
                      "%lldx%lld input", (long long)R, (long long)S, (long long)eh, (long long)ew, (long long)ph, (long long)pw);
  int64_t y[4] = {x[0], K, (ph - eh) / st[0] + 1, (pw - ew) / st[1] + 1};
  if (yl.n == 5 && K % yl.factor[4])
    return diag_error(d, n->loc, "nn.conv2d: out_layout \"%s\" does not divide the %lld output channels", ol, (long long)K);
  layout_shape(&yl, "NCHW", y, o);
  return TEMPER_OK;
}

/* the tile size m and the stride s of a Winograd op, and its alpha */
static temper_status tile_size(diag *d, const node *n, int64_t *m, int64_t *s, int64_t *al) {
  const attrs_t *a = n->attrs;
  const int64_t *st = a->v[ATTR_STRIDES].i;
  *m = a->v[ATTR_TILE_SIZE].i[0];
  *s = st[0];
  if (st[0] != st[1] || (st[0] != 1 && st[0] != 2))
    return diag_error(d, n->loc, "%s: only strides [1, 1] and [2, 2], got [%lld, %lld]", ir_op_name(n), (long long)st[0], (long long)st[1]);
  *al = winograd_alpha((int)*m, (int)*s);
  if (*al < 0)
    return diag_error(d, n->loc, "%s: tile_size must be %s at stride %lld, got %lld", ir_op_name(n), *s == 1 ? "2, 4 or 6" : "2, 3 or 4",
                      (long long)*s, (long long)*m);
  return TEMPER_OK;
}

/* U[alpha, alpha, C, K] of OIHW 3×3 weights */
static temper_status infer_winograd_weight(diag *d, node *n, shape_t *o) {
  TRY(want_tensor(d, n, 0, 4));
  int64_t m, s, al;
  TRY(tile_size(d, n, &m, &s, &al));
  const shape_t *w = &n->args[0]->ty.shape;
  if (w->d[2] != 3 || w->d[3] != 3)
    return diag_error(d, n->loc, "%s: needs 3x3 OIHW weights, got %lldx%lld", ir_op_name(n), (long long)w->d[2], (long long)w->d[3]);
  *o = (shape_t){4, {al, al, w->d[1], w->d[0]}};
  return TEMPER_OK;
}

/* the 3×3 conv2d of stride 1 or 2 on transformed weights */
static temper_status infer_conv2d_winograd(diag *d, node *n, shape_t *o) {
  TRY(want_tensor(d, n, 0, -1));
  TRY(want_tensor(d, n, 1, -1));
  const attrs_t *a = n->attrs;
  const char *dl = a->v[ATTR_DATA_LAYOUT].s, *kl = a->v[ATTR_KERNEL_LAYOUT].s;
  const char *ol = a->v[ATTR_OUT_LAYOUT].s[0] ? a->v[ATTR_OUT_LAYOUT].s : dl;
  int64_t x[4], m, s, al;
  TRY(activation_primal(d, n, "data_layout", dl, &n->args[0]->ty.shape, x));
  TRY(tile_size(d, n, &m, &s, &al));
  const int64_t *dil = a->v[ATTR_DILATION].i, *pad = a->v[ATTR_PADDING].i, *ks = a->v[ATTR_KERNEL_SIZE].i;
  if (dil[0] != 1 || dil[1] != 1 || a->v[ATTR_GROUPS].i[0] != 1)
    return diag_error(d, n->loc, "%s: only dilation 1 and groups 1", ir_op_name(n));
  if ((ks[0] || ks[1]) && (ks[0] != 3 || ks[1] != 3)) return diag_error(d, n->loc, "%s: only 3x3 kernels", ir_op_name(n));
  int64_t K = a->v[ATTR_CHANNELS].i[0];
  if (K < 1) return diag_error(d, n->loc, "%s: needs channels=", ir_op_name(n));
  layout_t wl, yl;
  shape_t want;
  int64_t ud[4] = {al, al, x[1], K};
  if (layout_parse(kl, &wl) || wl.n < 4 || !strchr(wl.axis, 'H') || !strchr(wl.axis, 'W') || !strchr(wl.axis, 'I') ||
      !strchr(wl.axis, 'O') || layout_shape(&wl, "HWIO", ud, &want))
    return diag_error(d, n->loc, "%s: kernel_layout \"%s\" is not a layout of the HWIO transformed weight", ir_op_name(n), kl);
  if (!shape_eq(&want, &n->args[1]->ty.shape)) {
    char sw[128], sg[128];
    type_t tw = {.kind = TY_TENSOR, .shape = want}, tg = {.kind = TY_TENSOR, .shape = n->args[1]->ty.shape};
    print_type(sw, sizeof sw, &tw);
    print_type(sg, sizeof sg, &tg);
    return diag_error(d, n->loc, "%s: the transformed weight should be %s for tile_size=%lld at stride %lld, %lld input and %lld output channels, is %s",
                      ir_op_name(n), sw, (long long)m, (long long)s, (long long)x[1], (long long)K, sg);
  }
  if (layout_parse(ol, &yl) || yl.n < 4 || yl.n > 5 || strncmp(yl.axis, "NCHW", 4) || (yl.n == 5 && yl.axis[4] != 'c'))
    return diag_error(d, n->loc, "%s: out_layout \"%s\" is not supported (use NCHW or NCHW<b>c)", ir_op_name(n), ol);
  int64_t eh = x[2] + pad[0] + pad[2], ew = x[3] + pad[1] + pad[3];
  int64_t y[4] = {x[0], K, eh < 3 ? 0 : (eh - 3) / s + 1, ew < 3 ? 0 : (ew - 3) / s + 1};
  if (y[2] < 1 || y[3] < 1) return diag_error(d, n->loc, "%s: the 3x3 kernel is larger than the padded input", ir_op_name(n));
  if (yl.n == 5 && K % yl.factor[4])
    return diag_error(d, n->loc, "%s: out_layout \"%s\" does not divide the %lld output channels", ir_op_name(n), ol, (long long)K);
  layout_shape(&yl, "NCHW", y, o);
  return TEMPER_OK;
}

static temper_status infer_pool(diag *d, node *n, shape_t *o) {
  TRY(want_tensor(d, n, 0, -1));
  const shape_t *x = &n->args[0]->ty.shape;
  const attrs_t *a = n->attrs;
  int64_t nchw[4];
  TRY(activation_primal(d, n, "layout", a->v[ATTR_LAYOUT].s, x, nchw));
  *o = *x;
  if (n->op == OP_GLOBAL_AVG_POOL2D || n->op == OP_GLOBAL_MAX_POOL2D) { o->d[2] = o->d[3] = 1; return TEMPER_OK; }
  const int64_t *k = a->v[ATTR_POOL_SIZE].i, *st = a->v[ATTR_STRIDES].i, *pad = a->v[ATTR_PADDING].i,
                *dil = a->v[ATTR_DILATION].i;
  TRY(positive_window(d, n, st, dil));
  if (k[0] < 1 || k[1] < 1 || k[0] > 4096 || k[1] > 4096)
    return diag_error(d, n->loc, "%s: pool_size must be between 1 and 4096, got [%lld, %lld]", ir_op_name(n), (long long)k[0], (long long)k[1]);
  for (int i = 0; i < 2; i++) {
    int64_t e = dil[i] * (k[i] - 1) + 1, p = x->d[2 + i] + pad[i] + pad[i + 2];
    if (e > p)
      return diag_error(d, n->loc, "%s: pool_size %lld is larger than the padded input %lld", ir_op_name(n),
                        (long long)e, (long long)p);
    if (pad[i] >= e || pad[i + 2] >= e)
      return diag_error(d, n->loc, "%s: padding must be smaller than the pooling window", ir_op_name(n));
    int ceil = a->v[ATTR_CEIL_MODE].i[0] != 0;
    int64_t num = p - e + (ceil ? st[i] - 1 : 0);
    o->d[2 + i] = num / st[i] + 1;
    /* ceil_mode adds a window only where it starts inside the input or its
     * leading padding (PyTorch's rule, which its ONNX exports assume): a
     * window wholly in the trailing padding would pool nothing */
    if (ceil && (o->d[2 + i] - 1) * st[i] >= x->d[2 + i] + pad[i]) o->d[2 + i]--;
  }
  return TEMPER_OK;
}

static temper_status infer_reshape(diag *d, node *n, shape_t *o) {
  const shape_t *x = &n->args[0]->ty.shape;
  const attr_val *ns = &n->attrs->v[ATTR_NEWSHAPE];
  if (ns->n == 0) return diag_error(d, n->loc, "reshape: newshape is required");
  if (ns->n > TEMPER_MAX_DIMS) return diag_error(d, n->loc, "reshape: too many dimensions");
  int infer = -1;
  int64_t known = 1;
  o->ndim = ns->n;
  for (int i = 0; i < ns->n; i++) {
    int64_t v = ns->i[i];
    if (v == 0) {
      if (i >= x->ndim) return diag_error(d, n->loc, "reshape: newshape[%d]=0 copies a dimension the input lacks", i);
      v = x->d[i];
    } else if (v == -1) {
      if (infer >= 0) return diag_error(d, n->loc, "reshape: more than one -1 in newshape");
      infer = i;
      continue;
    } else if (v < 0) {
      return diag_error(d, n->loc, "reshape: newshape value %lld is not supported", (long long)v);
    }
    o->d[i] = v;
    known = known > TEMPER_MAX_ELEMS / v ? TEMPER_MAX_ELEMS + 1 : known * v;   /* no wrap: too large stays too large */
  }
  int64_t total = shape_numel(x);
  if (infer >= 0) {
    if (known == 0 || total % known) return diag_error(d, n->loc, "reshape: cannot infer -1 for %lld elements", (long long)total);
    o->d[infer] = total / known;
  } else if (known > TEMPER_MAX_ELEMS) {
    return diag_error(d, n->loc, "reshape: newshape has more than %lld elements, the input %lld", TEMPER_MAX_ELEMS, (long long)total);
  } else if (known != total) {
    return diag_error(d, n->loc, "reshape: newshape has %lld elements, the input %lld", (long long)known, (long long)total);
  }
  return TEMPER_OK;
}

/* src and dst name the same primal axes; src's splits divide their axes */
static temper_status infer_layout_transform(diag *d, node *n, shape_t *o) {
  const shape_t *x = &n->args[0]->ty.shape;
  const char *src = n->attrs->v[ATTR_SRC_LAYOUT].s, *dst = n->attrs->v[ATTR_DST_LAYOUT].s;
  layout_t ls, ld;
  char axes[9] = {0};
  int64_t dims[8];
  if (layout_parse(src, &ls) || layout_parse(dst, &ld) || ls.n != x->ndim)
    return diag_error(d, n->loc, "layout_transform from \"%s\" to \"%s\" is not supported for a %d-d input", src, dst, x->ndim);
  for (int i = 0; i < ls.n; i++)
    if (ls.factor[i] && x->d[i] != ls.factor[i])
      return diag_error(d, n->loc, "layout_transform: src_layout \"%s\" has blocks of %d along '%c' but the input's dimension %d is %lld",
                        src, ls.factor[i], ls.axis[i], i, (long long)x->d[i]);
  int np = 0;
  for (int i = 0; i < ls.n; i++)
    if (!ls.factor[i]) axes[np++] = ls.axis[i];
  for (int p = 0; p < np; p++) {
    int k = (int)(strchr(ls.axis, axes[p]) - ls.axis);
    dims[p] = x->d[k];
    for (int i = 0; i < ls.n; i++)
      if (ls.factor[i] && ls.axis[i] == axes[p] + ('a' - 'A')) dims[p] *= ls.factor[i];
  }
  if (layout_shape(&ld, axes, dims, o))
    return diag_error(d, n->loc, "layout_transform: \"%s\" and \"%s\" name different axes", src, dst);
  return TEMPER_OK;
}

static temper_status infer_op(diag *d, node *n) {
  shape_t o = {0};
  int k = n->n_args;
  for (int i = 0; i < k; i++)
    if (n->op != OP_CONCATENATE) {
      if (n->args[i]->ty.kind == TY_NONE) return diag_error(d, n->loc, "%s: argument %d has no type", ir_op_name(n), i + 1);
    }
  const attrs_t *a = n->attrs;
  switch ((op_id)n->op) {
  case OP_CONV2D: TRY(infer_conv2d(d, n, &o)); break;
  case OP_CONV2D_WINOGRAD: TRY(infer_conv2d_winograd(d, n, &o)); break;
  case OP_WINOGRAD_WEIGHT: TRY(infer_winograd_weight(d, n, &o)); break;
  case OP_DENSE: {
    TRY(want_tensor(d, n, 0, 2));
    TRY(want_tensor(d, n, 1, 2));
    const shape_t *x = &n->args[0]->ty.shape, *w = &n->args[1]->ty.shape;
    if (x->d[1] != w->d[1])
      return diag_error(d, n->loc, "nn.dense: input has %lld features, weight expects %lld", (long long)x->d[1], (long long)w->d[1]);
    if (a->v[ATTR_UNITS].i[0] && a->v[ATTR_UNITS].i[0] != w->d[0])
      return diag_error(d, n->loc, "nn.dense: units=%lld but the weight has %lld rows", (long long)a->v[ATTR_UNITS].i[0], (long long)w->d[0]);
    o.ndim = 2;
    o.d[0] = x->d[0];
    o.d[1] = w->d[0];
    break;
  }
  case OP_MAX_POOL2D: case OP_AVG_POOL2D: case OP_GLOBAL_AVG_POOL2D: case OP_GLOBAL_MAX_POOL2D: TRY(infer_pool(d, n, &o)); break;
  case OP_BIAS_ADD: {
    TRY(want_tensor(d, n, 0, -1));
    TRY(want_tensor(d, n, 1, 1));
    const shape_t *x = &n->args[0]->ty.shape;
    int ax = norm_axis(a->v[ATTR_AXIS].i[0], x->ndim);
    if (ax < 0 || ax >= x->ndim) return diag_error(d, n->loc, "nn.bias_add: axis %lld out of range", (long long)a->v[ATTR_AXIS].i[0]);
    if (n->args[1]->ty.shape.d[0] != x->d[ax])
      return diag_error(d, n->loc, "nn.bias_add: bias has %lld elements, axis %d has %lld", (long long)n->args[1]->ty.shape.d[0],
                        ax, (long long)x->d[ax]);
    o = *x;
    break;
  }
  case OP_RELU: case OP_SIGMOID: case OP_SQRT: case OP_CLIP: case OP_SOFTMAX: case OP_HARD_SIGMOID: case OP_HARD_SWISH:
  case OP_LEAKY_RELU: case OP_TANH: case OP_ERF: case OP_EXP:
    TRY(want_tensor(d, n, 0, -1));
    o = n->args[0]->ty.shape;
    if (n->op == OP_CLIP && a->v[ATTR_A_MIN].f > a->v[ATTR_A_MAX].f)
      return diag_error(d, n->loc, "clip: a_min is greater than a_max");
    if (n->op == OP_SOFTMAX) {
      int ax = norm_axis(a->v[ATTR_AXIS].i[0], o.ndim);
      if (ax < 0 || ax >= o.ndim) return diag_error(d, n->loc, "nn.softmax: axis %lld out of range", (long long)a->v[ATTR_AXIS].i[0]);
    }
    break;
  case OP_ADD: case OP_SUBTRACT: case OP_MULTIPLY: case OP_DIVIDE: case OP_PRELU:
    TRY(want_tensor(d, n, 0, -1));
    TRY(want_tensor(d, n, 1, -1));
    TRY(broadcast(d, n, &n->args[0]->ty.shape, &n->args[1]->ty.shape, &o));
    break;
  case OP_LAYER_NORM: {
    /* over one axis; in NCHW<b>c (the layout pass's) over the channels,
     * axes 1 and 4, axis=1; γ and β (both or neither) of that axis's length */
    TRY(want_tensor(d, n, 0, -1));
    o = n->args[0]->ty.shape;
    int ax = norm_axis(a->v[ATTR_AXIS].i[0], o.ndim);
    if (ax < 0 || ax >= o.ndim) return diag_error(d, n->loc, "nn.layer_norm: axis %lld out of range", (long long)a->v[ATTR_AXIS].i[0]);
    const char *l = a->v[ATTR_LAYOUT].s;
    if (strcmp(l, "NCHW") && (o.ndim != 5 || ax != 1 || layout_block(l, 'c') != o.d[4]))
      return diag_error(d, n->loc, "nn.layer_norm: layout %s needs a 5-d input in its blocks and axis=1", l);
    if (n->n_args == 2) return diag_error(d, n->loc, "nn.layer_norm: takes the data alone or with both gamma and beta");
    if (n->n_args == 3 && strcmp(l, "NCHW")) return diag_error(d, n->loc, "nn.layer_norm: gamma and beta only in layout NCHW");
    for (int i = 1; i < n->n_args; i++) {
      TRY(want_tensor(d, n, i, 1));
      if (n->args[i]->ty.shape.d[0] != o.d[ax])
        return diag_error(d, n->loc, "nn.layer_norm: argument %d has %lld elements, axis %d has %lld", i + 1,
                          (long long)n->args[i]->ty.shape.d[0], ax, (long long)o.d[ax]);
    }
    if (!(a->v[ATTR_EPSILON].f >= 0)) return diag_error(d, n->loc, "nn.layer_norm: epsilon must be at least 0");
    break;
  }
  case OP_BATCH_NORM: {
    TRY(want_tensor(d, n, 0, -1));
    const shape_t *x = &n->args[0]->ty.shape;
    int ax = norm_axis(a->v[ATTR_AXIS].i[0], x->ndim);
    if (ax < 0 || ax >= x->ndim) return diag_error(d, n->loc, "nn.batch_norm: axis out of range");
    for (int i = 1; i < 5; i++) {
      TRY(want_tensor(d, n, i, 1));
      if (n->args[i]->ty.shape.d[0] != x->d[ax])
        return diag_error(d, n->loc, "nn.batch_norm: argument %d has %lld elements, the input has %lld channels", i + 1,
                          (long long)n->args[i]->ty.shape.d[0], (long long)x->d[ax]);
    }
    n->ty.kind = TY_TUPLE;
    n->ty.n_fields = 3;
    return TEMPER_OK;   /* fields set by the caller */
  }
  case OP_DROPOUT:
    TRY(want_tensor(d, n, 0, -1));
    n->ty.kind = TY_TUPLE;
    n->ty.n_fields = 2;
    return TEMPER_OK;
  case OP_BATCH_FLATTEN: {
    TRY(want_tensor(d, n, 0, -1));
    const shape_t *x = &n->args[0]->ty.shape;
    if (x->ndim < 1) return diag_error(d, n->loc, "nn.batch_flatten: needs at least one dimension");
    o.ndim = 2;
    o.d[0] = x->d[0];
    o.d[1] = shape_numel(x) / (x->d[0] ? x->d[0] : 1);
    break;
  }
  case OP_RESHAPE: TRY(want_tensor(d, n, 0, -1)); TRY(infer_reshape(d, n, &o)); break;
  case OP_TRANSPOSE: {   /* axes: a permutation of the input's dimensions (none: reversed) */
    TRY(want_tensor(d, n, 0, -1));
    const shape_t *x = &n->args[0]->ty.shape;
    const attr_val *ax = &a->v[ATTR_AXES];
    o.ndim = x->ndim;
    if (ax->n && ax->n != x->ndim)
      return diag_error(d, n->loc, "transpose: axes has %d values for a %d-d input", ax->n, x->ndim);
    int seen[TEMPER_MAX_DIMS] = {0};
    for (int i = 0; i < x->ndim; i++) {
      int64_t p = ax->n ? ax->i[i] : x->ndim - 1 - i;
      if (p < 0) p += x->ndim;
      if (p < 0 || p >= x->ndim || seen[p]++) return diag_error(d, n->loc, "transpose: axes is not a permutation of 0..%d", x->ndim - 1);
      o.d[i] = x->d[p];
    }
    break;
  }
  case OP_STRIDED_SLICE: {   /* begin, end, step: one value per dimension, 0 <= begin < end <= size, step >= 1 */
    TRY(want_tensor(d, n, 0, -1));
    const shape_t *x = &n->args[0]->ty.shape;
    const attr_val *b = &a->v[ATTR_BEGIN], *e = &a->v[ATTR_END], *st = &a->v[ATTR_STEP];
    if (b->n != x->ndim || e->n != x->ndim || st->n != x->ndim)
      return diag_error(d, n->loc, "strided_slice: begin, end and step need %d values each (one per dimension)", x->ndim);
    o.ndim = x->ndim;
    for (int i = 0; i < x->ndim; i++) {
      if (st->i[i] < 1 || st->i[i] > x->d[i] + 1)
        return diag_error(d, n->loc, "strided_slice: step %lld of dimension %d is not supported (1 to the size)", (long long)st->i[i], i);
      if (b->i[i] < 0 || b->i[i] >= e->i[i] || e->i[i] > x->d[i])
        return diag_error(d, n->loc, "strided_slice: dimension %d: [%lld, %lld) is not a non-empty range of 0..%lld", i,
                          (long long)b->i[i], (long long)e->i[i], (long long)x->d[i]);
      o.d[i] = (e->i[i] - b->i[i] + st->i[i] - 1) / st->i[i];
    }
    break;
  }
  case OP_CONCATENATE: {
    for (int i = 0; i < k; i++) TRY(want_tensor(d, n, i, -1));
    o = n->args[0]->ty.shape;
    int ax = norm_axis(a->v[ATTR_AXIS].i[0], o.ndim);
    if (ax < 0 || ax >= o.ndim) return diag_error(d, n->loc, "concatenate: axis %lld out of range", (long long)a->v[ATTR_AXIS].i[0]);
    for (int i = 1; i < k; i++) {
      const shape_t *s = &n->args[i]->ty.shape;
      if (s->ndim != o.ndim) return diag_error(d, n->loc, "concatenate: field %d has %d dimensions, field 1 has %d", i + 1, s->ndim, o.ndim);
      for (int j = 0; j < o.ndim; j++)
        if (j != ax && s->d[j] != o.d[j])
          return diag_error(d, n->loc, "concatenate: field %d differs in dimension %d (%lld vs %lld)", i + 1, j,
                            (long long)s->d[j], (long long)o.d[j]);
      o.d[ax] += s->d[ax];
    }
    break;
  }
  case OP_LAYOUT_TRANSFORM: TRY(want_tensor(d, n, 0, -1)); TRY(infer_layout_transform(d, n, &o)); break;
  case OP_PAD: {
    TRY(want_tensor(d, n, 0, -1));
    const attr_val *pw = &a->v[ATTR_PAD_WIDTH];
    o = n->args[0]->ty.shape;
    if (pw->n != 2 * o.ndim)
      return diag_error(d, n->loc, "nn.pad: pad_width needs a (before, after) pair per dimension: %d values for %d dimensions", pw->n, o.ndim);
    for (int i = 0; i < o.ndim; i++) {
      if (pw->i[2 * i] < 0 || pw->i[2 * i + 1] < 0 || pw->i[2 * i] > 4096 || pw->i[2 * i + 1] > 4096)
        return diag_error(d, n->loc, "nn.pad: pad widths must be between 0 and 4096");
      o.d[i] += pw->i[2 * i] + pw->i[2 * i + 1];
    }
    break;
  }
  case OP_COUNT: case OP_FUNCALL: break;
  }
  if (shape_numel(&o) > TEMPER_MAX_ELEMS)
    return diag_error(d, n->loc, "%s: the result would have more than %lld elements", ir_op_name(n), TEMPER_MAX_ELEMS);
  n->ty.kind = TY_TENSOR;
  n->ty.shape = o;
  return TEMPER_OK;
}

static temper_status infer_fn(temper_graph *g, node *fn, diag *d);

static temper_status infer_node(temper_graph *g, node *n, diag *d) {
  switch (n->kind) {
  case N_VAR: case N_CONST: return TEMPER_OK;
  case N_FUNC: return infer_fn(g, n, d);
  case N_TUPLE:
    n->ty.kind = TY_TUPLE;
    n->ty.n_fields = n->n_args;
    n->ty.fields = arena_alloc(&g->a, sizeof(shape_t) * (size_t)(n->n_args ? n->n_args : 1));
    if (!n->ty.fields) return diag_fail(d, TEMPER_ENOMEM, "out of memory");
    for (int i = 0; i < n->n_args; i++) {
      if (n->args[i]->ty.kind != TY_TENSOR) return diag_error(d, n->loc, "tuple fields must be tensors");
      n->ty.fields[i] = n->args[i]->ty.shape;
    }
    return TEMPER_OK;
  case N_GETITEM: {
    const type_t *t = &n->args[0]->ty;
    if (t->kind != TY_TUPLE) return diag_error(d, n->loc, "'.%d' projects a field of a tuple, but the value is a tensor", n->index);
    if (n->index >= t->n_fields)
      return diag_error(d, n->loc, "field %d of a %d-tuple does not exist", n->index, t->n_fields);
    n->ty.kind = TY_TENSOR;
    n->ty.shape = t->fields[n->index];
    return TEMPER_OK;
  }
  case N_CALL:
    if (n->op == OP_FUNCALL) {
      node *fn = n->callee;
      if (fn->body->ty.kind == TY_NONE) TRY(infer_fn(g, fn, d));
      for (int i = 0; i < n->n_args; i++) {
        const type_t *at = &n->args[i]->ty;
        if (at->kind != TY_TENSOR || !shape_eq(&at->shape, &fn->params[i]->ty.shape)) {
          char want[128], got[128];
          print_type(want, sizeof want, &fn->params[i]->ty);
          print_type(got, sizeof got, at);
          return diag_error(d, n->loc, "argument %d of the call has type %s, the function expects %s", i + 1, got, want);
        }
      }
      n->ty = fn->body->ty;
      return TEMPER_OK;
    }
    TRY(infer_op(d, n));
    if (n->ty.kind == TY_TUPLE) {   /* batch_norm: (x, mean, var); dropout: (x, mask) */
      n->ty.fields = arena_alloc(&g->a, sizeof(shape_t) * 3);
      if (!n->ty.fields) return diag_fail(d, TEMPER_ENOMEM, "out of memory");
      n->ty.fields[0] = n->args[0]->ty.shape;
      n->ty.fields[1] = n->op == OP_BATCH_NORM ? n->args[1]->ty.shape : n->args[0]->ty.shape;
      n->ty.fields[2] = n->args[n->n_args - 1]->ty.shape;
    }
    return TEMPER_OK;
  }
  return TEMPER_OK;
}

static temper_status infer_fn(temper_graph *g, node *fn, diag *d) {
  arena scratch = {0};
  int n = 0;
  node **order = ir_topo(&scratch, fn->body, &n);
  if (!order) { arena_free(&scratch); return diag_fail(d, TEMPER_ENOMEM, "out of memory"); }
  temper_status s = TEMPER_OK;
  for (int i = 0; i < n && s == TEMPER_OK; i++) s = infer_node(g, order[i], d);
  arena_free(&scratch);
  TRY(s);
  if (fn->body->ty.kind == TY_NONE) return diag_error(d, fn->loc, "the function's result has no type");
  const type_t *dt = &fn->ret_ty_decl, *bt = &fn->body->ty;
  if (dt->kind != TY_NONE) {
    int same = dt->kind == bt->kind;
    if (same && dt->kind == TY_TENSOR) same = shape_eq(&dt->shape, &bt->shape);
    if (same && dt->kind == TY_TUPLE) {
      same = dt->n_fields == bt->n_fields;
      for (int i = 0; same && i < dt->n_fields; i++) same = shape_eq(&dt->fields[i], &bt->fields[i]);
    }
    if (!same) {
      char want[256], got[256];
      print_type(want, sizeof want, dt);
      print_type(got, sizeof got, bt);
      return diag_error(d, fn->loc, "the function is declared to return %s but returns %s", want, got);
    }
  }
  return TEMPER_OK;
}

/* typeinfer_node: for passes; the nodes a rewrite makes are typed bottom-up */
temper_status typeinfer_node(temper_graph *g, node *n, diag *d) {
  arena scratch = {0};
  int cnt = 0;
  node **order = ir_topo(&scratch, n, &cnt);
  if (!order) { arena_free(&scratch); return diag_fail(d, TEMPER_ENOMEM, "out of memory"); }
  temper_status s = TEMPER_OK;
  for (int i = 0; i < cnt && s == TEMPER_OK; i++)
    if (order[i]->ty.kind == TY_NONE || order[i] == n) s = infer_node(g, order[i], d);
  arena_free(&scratch);
  return s;
}

/* typeinfer: needs a parsed graph; fills ty of every node; changes nothing else */
temper_status typeinfer(temper_graph *g, diag *d) { return infer_fn(g, g->main, d); }
