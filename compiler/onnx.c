/* onnx.c: the ONNX importer. Opsets 11–18; float32 tensors; initializers
 * (inline, raw, or external data beside the model) become constants;
 * Identity of an initializer is an alias. A model with unsupported ops is
 * refused with one message listing every such op and its nodes. */
#include <errno.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "onnx.h"
#include "onnx.pb-c.h"

#define TRY(x) do { temper_status s_ = (x); if (s_ != TEMPER_OK) return s_; } while (0)

enum { ELEM_FLOAT = 1, ELEM_INT64 = 7, ELEM_INT32 = 6 };

/* a named value: a node, or an int64 constant (shapes, pads) */
typedef struct value {
  const char *name;
  node *n;
  int64_t *ints;
  int n_ints;
  int is_ints;
} value;

typedef struct imp {
  temper_graph *g;
  diag *d;
  const char *path;
  char dir[4096];         /* the model's directory, for external data */
  value *vals;
  int n_vals, cap_vals;
  int opset;
  const Onnx__NodeProto *cur;   /* the node being imported, for messages */
  const Onnx__NodeProto **by_line;   /* loc.line - 1 → node */
  int n_lines;
} imp;

static temper_status node_err(imp *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static temper_status node_err(imp *m, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (m->cur)
    return diag_fail(m->d, TEMPER_EINVAL, "%s: node '%s' (%s): %s", m->path, m->cur->name && m->cur->name[0] ? m->cur->name : "(unnamed)",
                     m->cur->op_type, msg);
  return diag_fail(m->d, TEMPER_EINVAL, "%s: %s", m->path, msg);
}

static value *lookup(imp *m, const char *name) {
  for (int i = m->n_vals - 1; i >= 0; i--)
    if (!strcmp(m->vals[i].name, name)) return &m->vals[i];
  return NULL;
}

static value *define(imp *m, const char *name) {
  if (m->n_vals == m->cap_vals) {
    m->cap_vals = m->cap_vals ? m->cap_vals * 2 : 256;
    value *nv = realloc(m->vals, sizeof(value) * (size_t)m->cap_vals);
    if (!nv) return NULL;
    m->vals = nv;
  }
  value *v = &m->vals[m->n_vals++];
  memset(v, 0, sizeof *v);
  v->name = arena_strdup(&m->g->a, name);
  return v;
}

/* ---- tensors ---- */
static temper_status read_external(imp *m, const Onnx__TensorProto *t, unsigned char **buf, size_t *len) {
  const char *loc = NULL;
  long long off = 0, length = -1;
  for (size_t i = 0; i < t->n_external_data; i++) {
    const char *k = t->external_data[i]->key, *v = t->external_data[i]->value;
    if (!strcmp(k, "location")) loc = v;
    else if (!strcmp(k, "offset")) off = atoll(v);
    else if (!strcmp(k, "length")) length = atoll(v);
  }
  if (!loc || strstr(loc, "..") || loc[0] == '/')
    return node_err(m, "initializer '%s': external data needs a relative 'location' beside the model", t->name);
  char path[8300];
  snprintf(path, sizeof path, "%s/%s", m->dir, loc);
  FILE *f = fopen(path, "rb");
  if (!f) return node_err(m, "initializer '%s': cannot open its external data %s: %s", t->name, path, strerror(errno));
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  if (length < 0) length = size - off;
  if (off < 0 || length < 0 || off + length > size) {
    fclose(f);
    return node_err(m, "initializer '%s': external data %s is too short (offset %lld, length %lld, file %ld bytes)", t->name, path, off,
                    length, size);
  }
  *buf = malloc((size_t)length + 1);
  fseek(f, off, SEEK_SET);
  size_t got = *buf ? fread(*buf, 1, (size_t)length, f) : 0;
  fclose(f);
  if (got != (size_t)length) { free(*buf); return node_err(m, "initializer '%s': reading %s failed", t->name, path); }
  *len = (size_t)length;
  return TEMPER_OK;
}

static temper_status tensor_value(imp *m, const Onnx__TensorProto *t, value *v) {
  shape_t s = {(int)t->n_dims, {0}};
  if (t->n_dims > TEMPER_MAX_DIMS) return node_err(m, "tensor '%s' has %zu dimensions (at most %d)", t->name, t->n_dims, TEMPER_MAX_DIMS);
  for (size_t i = 0; i < t->n_dims; i++) {
    if (t->dims[i] < 0 || t->dims[i] > (1ll << 31)) return node_err(m, "tensor '%s': bad dimension %lld", t->name, (long long)t->dims[i]);
    s.d[i] = t->dims[i];
  }
  int64_t n = shape_numel(&s);
  unsigned char *ext = NULL;
  size_t ext_len = 0;
  const unsigned char *raw = t->has_raw_data ? t->raw_data.data : NULL;
  size_t raw_len = t->has_raw_data ? t->raw_data.len : 0;
  if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
    TRY(read_external(m, t, &ext, &ext_len));
    raw = ext, raw_len = ext_len;
  }
  temper_status st = TEMPER_OK;
  if (n > TEMPER_MAX_ELEMS) {
    free(ext);
    return node_err(m, "tensor '%s' has more than %lld elements", t->name, TEMPER_MAX_ELEMS);
  }
  /* the data must be there before anything is allocated for it */
  if (t->data_type == ELEM_FLOAT && (raw ? raw_len != (size_t)n * 4 : t->n_float_data != (size_t)n)) {
    free(ext);
    return node_err(m, "tensor '%s': expected %lld floats of data, found %zu", t->name, (long long)n, raw ? raw_len / 4 : t->n_float_data);
  }
  if ((t->data_type == ELEM_INT64 || t->data_type == ELEM_INT32) &&
      (raw ? raw_len != (size_t)n * (t->data_type == ELEM_INT64 ? 8 : 4)
           : (t->data_type == ELEM_INT64 ? t->n_int64_data : t->n_int32_data) != (size_t)n)) {
    free(ext);
    return node_err(m, "tensor '%s': expected %lld integers of data", t->name, (long long)n);
  }
  if (t->data_type == ELEM_FLOAT) {
    node *c = ir_const(m->g, &s, NULL);
    if (!c) { free(ext); return diag_fail(m->d, TEMPER_ENOMEM, "out of memory"); }
    if (n == 0) {   /* an empty tensor: nothing to copy (and its data pointer may be NULL) */
    } else if (raw && raw_len == (size_t)n * 4) memcpy(c->data, raw, (size_t)n * 4);
    else if (!raw && t->n_float_data == (size_t)n) memcpy(c->data, t->float_data, (size_t)n * 4);
    else st = node_err(m, "tensor '%s': expected %lld floats of data", t->name, (long long)n);
    c->name = arena_strdup(&m->g->a, t->name ? t->name : "");
    v->n = c;
  } else if (t->data_type == ELEM_INT64 || t->data_type == ELEM_INT32) {
    v->is_ints = 1;
    v->n_ints = (int)n;
    v->ints = arena_alloc(&m->g->a, sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!v->ints) { free(ext); return diag_fail(m->d, TEMPER_ENOMEM, "out of memory"); }
    size_t w = t->data_type == ELEM_INT64 ? 8 : 4;
    if (raw && raw_len == (size_t)n * w) {
      for (int64_t i = 0; i < n; i++) {
        if (w == 8) memcpy(&v->ints[i], raw + i * 8, 8);
        else { int32_t x; memcpy(&x, raw + i * 4, 4); v->ints[i] = x; }
      }
    } else if (!raw && w == 8 && t->n_int64_data == (size_t)n) {
      if (n) memcpy(v->ints, t->int64_data, (size_t)n * 8);
    }
    else if (!raw && w == 4 && t->n_int32_data == (size_t)n) for (int64_t i = 0; i < n; i++) v->ints[i] = t->int32_data[i];
    else st = node_err(m, "tensor '%s': expected %lld integers of data", t->name, (long long)n);
  } else {
    st = node_err(m, "tensor '%s': element type %d is not supported (float32 and int64 only)", t->name, t->data_type);
  }
  free(ext);
  return st;
}

/* ---- absent strings ----
 * proto2's optional strings are NULL when a file leaves them out (a node
 * without op_type or name, an attribute or a value without a name). They
 * become "" once, where the model enters, so the importer compares and
 * prints them without a check at every use; protobuf-c frees them with the
 * rest (they are malloc'd, as it would have). */
static int fill(char **s) { return !*s && !(*s = strdup("")); }

static int fill_values(Onnx__ValueInfoProto **v, size_t n) {
  int bad = 0;
  for (size_t i = 0; i < n; i++) bad |= fill(&v[i]->name);
  return bad;
}

static int fill_strings(Onnx__ModelProto *mp) {
  Onnx__GraphProto *g = mp->graph;
  int bad = 0;
  for (size_t i = 0; i < mp->n_opset_import; i++) bad |= fill(&mp->opset_import[i]->domain);
  if (!g) return bad;
  bad |= fill(&g->name);
  for (size_t i = 0; i < g->n_node; i++) {
    Onnx__NodeProto *n = g->node[i];
    bad |= fill(&n->name) | fill(&n->op_type) | fill(&n->domain);
    for (size_t k = 0; k < n->n_input; k++) bad |= fill(&n->input[k]);
    for (size_t k = 0; k < n->n_output; k++) bad |= fill(&n->output[k]);
    for (size_t k = 0; k < n->n_attribute; k++) bad |= fill(&n->attribute[k]->name);
  }
  for (size_t i = 0; i < g->n_initializer; i++) bad |= fill(&g->initializer[i]->name);
  bad |= fill_values(g->input, g->n_input) | fill_values(g->output, g->n_output) | fill_values(g->value_info, g->n_value_info);
  return bad;
}

/* ---- attributes ---- */
static const Onnx__AttributeProto *attr(const Onnx__NodeProto *n, const char *name) {
  for (size_t i = 0; i < n->n_attribute; i++)
    if (!strcmp(n->attribute[i]->name, name)) return n->attribute[i];
  return NULL;
}

static temper_status attr_int(imp *m, const char *name, int64_t def, int64_t *out) {
  const Onnx__AttributeProto *a = attr(m->cur, name);
  *out = def;
  if (!a) return TEMPER_OK;
  if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT) return node_err(m, "attribute '%s' must be an int", name);
  *out = a->i;
  return TEMPER_OK;
}

static temper_status attr_float(imp *m, const char *name, double def, double *out) {
  const Onnx__AttributeProto *a = attr(m->cur, name);
  *out = def;
  if (!a) return TEMPER_OK;
  if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT) return node_err(m, "attribute '%s' must be a float", name);
  *out = a->f;
  return TEMPER_OK;
}

/* ints attribute into out[n] (default fill when absent); count must be n */
static temper_status attr_ints(imp *m, const char *name, int n, int64_t def, int64_t *out, int *present) {
  const Onnx__AttributeProto *a = attr(m->cur, name);
  for (int i = 0; i < n; i++) out[i] = def;
  if (present) *present = a != NULL;
  if (!a) return TEMPER_OK;
  if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS) return node_err(m, "attribute '%s' must be ints", name);
  if ((int)a->n_ints != n) return node_err(m, "attribute '%s' must have %d values, has %zu (2-d only)", name, n, a->n_ints);
  for (int i = 0; i < n; i++) out[i] = a->ints[i];
  return TEMPER_OK;
}

static temper_status attr_str(imp *m, const char *name, const char *def, char *out, size_t n) {
  const Onnx__AttributeProto *a = attr(m->cur, name);
  snprintf(out, n, "%s", def);
  if (!a) return TEMPER_OK;
  if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING) return node_err(m, "attribute '%s' must be a string", name);
  snprintf(out, n, "%.*s", (int)a->s.len, (const char *)a->s.data);
  return TEMPER_OK;
}

/* ---- inputs ---- */
static temper_status input(imp *m, size_t i, node **out) {
  if (i >= m->cur->n_input || !m->cur->input[i][0]) return node_err(m, "input %zu is missing", i + 1);
  value *v = lookup(m, m->cur->input[i]);
  if (!v) return node_err(m, "input '%s' is not produced by any earlier node, initializer or graph input", m->cur->input[i]);
  if (!v->n) return node_err(m, "input '%s' must be a float tensor", m->cur->input[i]);
  *out = v->n;
  return TEMPER_OK;
}

static temper_status const_input(imp *m, size_t i, node **out) {
  TRY(input(m, i, out));
  if ((*out)->kind != N_CONST) return node_err(m, "input '%s' must be an initializer or a Constant", m->cur->input[i]);
  return TEMPER_OK;
}

static temper_status ints_input(imp *m, size_t i, value **out) {
  if (i >= m->cur->n_input || !m->cur->input[i][0]) return node_err(m, "input %zu is missing", i + 1);
  value *v = lookup(m, m->cur->input[i]);
  if (!v) return node_err(m, "input '%s' is not produced by any earlier node, initializer or graph input", m->cur->input[i]);
  if (!v->is_ints) return node_err(m, "input '%s' must be a constant int64 tensor", m->cur->input[i]);
  *out = v;
  return TEMPER_OK;
}

static node *call(imp *m, int op, int n, node **args) {
  node *c = ir_call(m->g, op, n, args, NULL);
  if (c) c->loc = (loc_t){m->n_lines, 0};   /* line: the ONNX node's number */
  return c;
}

static temper_status set_out(imp *m, size_t i, node *v) {
  if (!v) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
  if (i >= m->cur->n_output) return node_err(m, "has no output %zu", i + 1);
  value *o = define(m, m->cur->output[i]);
  if (!o) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
  o->n = v;
  return TEMPER_OK;
}

static node *scalar(imp *m, float v) {
  shape_t s = {0};
  return ir_const(m->g, &s, &v);
}

/* SAME_UPPER / SAME_LOWER / VALID into explicit pads (t, l, b, r) */
static temper_status auto_pads(imp *m, const node *x, const int64_t *k, const int64_t *st, const int64_t *dil, int64_t *pads) {
  char ap[32];
  TRY(attr_str(m, "auto_pad", "NOTSET", ap, sizeof ap));
  if (!strcmp(ap, "NOTSET")) return TEMPER_OK;
  if (!strcmp(ap, "VALID")) { memset(pads, 0, sizeof(int64_t) * 4); return TEMPER_OK; }
  if (strcmp(ap, "SAME_UPPER") && strcmp(ap, "SAME_LOWER")) return node_err(m, "auto_pad '%s' is not supported", ap);
  for (int i = 0; i < 2; i++) {
    int64_t in = x->ty.shape.d[2 + i], out = (in + st[i] - 1) / st[i];
    int64_t total = (out - 1) * st[i] + (k[i] - 1) * dil[i] + 1 - in;
    if (total < 0) total = 0;
    int64_t small = total / 2, big = total - small;
    pads[i] = strcmp(ap, "SAME_UPPER") ? big : small;
    pads[i + 2] = strcmp(ap, "SAME_UPPER") ? small : big;
  }
  return TEMPER_OK;
}

static void set2(attrs_t *a, attr_id id, const int64_t *v) { a->v[id].n = 2, a->v[id].i[0] = v[0], a->v[id].i[1] = v[1]; }
static void set4(attrs_t *a, attr_id id, const int64_t *v) {
  a->v[id].n = 4;
  for (int i = 0; i < 4; i++) a->v[id].i[i] = v[i];
}

static temper_status typed(imp *m, node *n) { return n ? typeinfer_node(m->g, n, m->d) : diag_fail(m->d, TEMPER_ENOMEM, "out of memory"); }
static temper_status reshape_to(imp *m, node *x, int nd, const int64_t *dims, node **y);

static temper_status conv(imp *m) {
  node *x, *w, *b = NULL;
  TRY(input(m, 0, &x));
  TRY(input(m, 1, &w));
  if (m->cur->n_input > 2 && m->cur->input[2][0]) TRY(const_input(m, 2, &b));
  if (x->ty.shape.ndim != 4 || w->ty.shape.ndim != 4) return node_err(m, "only 2-d convolutions (4-d tensors) are supported");
  int64_t st[2], dil[2], pads[4], ks[2], group;
  int has_ks;
  TRY(attr_ints(m, "strides", 2, 1, st, NULL));
  TRY(attr_ints(m, "dilations", 2, 1, dil, NULL));
  TRY(attr_ints(m, "pads", 4, 0, pads, NULL));
  TRY(attr_ints(m, "kernel_shape", 2, 0, ks, &has_ks));
  TRY(attr_int(m, "group", 1, &group));
  if (!has_ks) ks[0] = w->ty.shape.d[2], ks[1] = w->ty.shape.d[3];
  TRY(auto_pads(m, x, ks, st, dil, pads));
  node *args[2] = {x, w};
  node *c = call(m, OP_CONV2D, 2, args);
  if (!c) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
  set2(c->attrs, ATTR_STRIDES, st);
  set2(c->attrs, ATTR_DILATION, dil);
  set4(c->attrs, ATTR_PADDING, pads);
  set2(c->attrs, ATTR_KERNEL_SIZE, ks);
  c->attrs->v[ATTR_GROUPS].i[0] = group;
  TRY(typed(m, c));
  if (b) {
    node *ba[2] = {c, b};
    c = call(m, OP_BIAS_ADD, 2, ba);
    TRY(typed(m, c));
  }
  return set_out(m, 0, c);
}

static temper_status pool(imp *m, int op) {
  node *x;
  TRY(input(m, 0, &x));
  if (x->ty.shape.ndim != 4) return node_err(m, "only 2-d pooling (4-d tensors) is supported");
  if (m->cur->n_output > 1 && m->cur->output[1][0]) return node_err(m, "the Indices output is not supported");
  node *c = call(m, op, 1, &x);
  if (!c) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
  if (op != OP_GLOBAL_AVG_POOL2D && op != OP_GLOBAL_MAX_POOL2D) {
    int64_t ks[2], st[2], dil[2], pads[4], ceil, cip;
    TRY(attr_ints(m, "kernel_shape", 2, 1, ks, NULL));
    TRY(attr_ints(m, "strides", 2, 1, st, NULL));
    TRY(attr_ints(m, "dilations", 2, 1, dil, NULL));
    TRY(attr_ints(m, "pads", 4, 0, pads, NULL));
    TRY(attr_int(m, "ceil_mode", 0, &ceil));
    TRY(attr_int(m, "count_include_pad", 0, &cip));
    TRY(auto_pads(m, x, ks, st, dil, pads));
    set2(c->attrs, ATTR_POOL_SIZE, ks);
    set2(c->attrs, ATTR_STRIDES, st);
    set2(c->attrs, ATTR_DILATION, dil);
    set4(c->attrs, ATTR_PADDING, pads);
    c->attrs->v[ATTR_CEIL_MODE].i[0] = ceil;
    c->attrs->v[ATTR_COUNT_INCLUDE_PAD].i[0] = cip;
  }
  TRY(typed(m, c));
  return set_out(m, 0, c);
}

/* W of a dense layer from a constant: transposed when the ONNX op multiplies by B[K, U] */
static node *dense_weight(imp *m, node *b, int transpose) {
  if (!transpose) return b;
  shape_t s = {2, {b->ty.shape.d[1], b->ty.shape.d[0]}};
  node *t = ir_const(m->g, &s, NULL);
  if (!t) return NULL;
  int64_t K = b->ty.shape.d[0], U = b->ty.shape.d[1];
  for (int64_t k = 0; k < K; k++)
    for (int64_t u = 0; u < U; u++) t->data[u * K + k] = b->data[k * U + u];
  return t;
}

static temper_status transpose4(imp *m, node *x, const int64_t *axes, node **y) {
  *y = call(m, OP_TRANSPOSE, 1, &x);
  if (!*y) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
  (*y)->attrs->v[ATTR_AXES].n = 4;
  for (int i = 0; i < 4; i++) (*y)->attrs->v[ATTR_AXES].i[i] = axes[i];
  return typed(m, *y);
}

/* y[n, h, w, :] = a[n, h, w, :] · B as transpose(conv2d(transpose(a), Bᵀ as [N, C, 1, 1])) */
static temper_status matmul_as_conv(imp *m, node *a, node *b) {
  int64_t C = b->ty.shape.d[0], N = b->ty.shape.d[1];
  node *wt = dense_weight(m, b, 1), *x, *y;
  if (!wt) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
  wt->ty.shape = (shape_t){4, {N, C, 1, 1}};   /* [N, C] row-major is [N, C, 1, 1] */
  TRY(transpose4(m, a, (int64_t[]){0, 3, 1, 2}, &x));
  node *args[2] = {x, wt};
  node *c = call(m, OP_CONV2D, 2, args);
  if (!c) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
  c->attrs->v[ATTR_CHANNELS].i[0] = N;
  c->attrs->v[ATTR_KERNEL_SIZE].i[0] = c->attrs->v[ATTR_KERNEL_SIZE].i[1] = 1;
  TRY(typed(m, c));
  TRY(transpose4(m, c, (int64_t[]){0, 2, 3, 1}, &y));
  return set_out(m, 0, y);
}

static temper_status gemm(imp *m, int matmul) {
  node *a, *b, *cc = NULL;
  TRY(input(m, 0, &a));
  TRY(const_input(m, 1, &b));
  int64_t ta = 0, tb = 0;
  double alpha = 1, beta = 1;
  if (!matmul) {
    TRY(attr_int(m, "transA", 0, &ta));
    TRY(attr_int(m, "transB", 0, &tb));
    TRY(attr_float(m, "alpha", 1, &alpha));
    TRY(attr_float(m, "beta", 1, &beta));
    if (m->cur->n_input > 2 && m->cur->input[2][0]) TRY(const_input(m, 2, &cc));
  }
  if (ta) {   /* Aᵀ: a transpose of the input */
    if (a->ty.shape.ndim != 2) return node_err(m, "transA=1 needs a 2-d input");
    node *t = call(m, OP_TRANSPOSE, 1, &a);
    TRY(typed(m, t));
    a = t;
  }
  /* MatMul of a 4-d input by a constant matrix: a linear layer at every
   * pixel of an NHWC tensor (ConvNeXt's MLPs) is a 1×1 conv2d on NCHW, between
   * two transposes that the sink pass (sink.c) cancels against their
   * neighbours where elementwise ops sit between */
  if (matmul && a->ty.shape.ndim == 4 && b->ty.shape.ndim == 2 && b->ty.shape.d[0] == a->ty.shape.d[3])
    return matmul_as_conv(m, a, b);
  /* MatMul of an N-d input by a constant matrix (a linear layer on NHWC):
   * the leading dimensions flattened into rows, and restored after */
  shape_t lead = a->ty.shape;
  if (matmul && a->ty.shape.ndim > 2 && b->ty.shape.ndim == 2) {
    int64_t rows = 1, K = a->ty.shape.d[a->ty.shape.ndim - 1];
    for (int i = 0; i + 1 < a->ty.shape.ndim; i++) rows *= a->ty.shape.d[i];
    TRY(reshape_to(m, a, 2, (int64_t[]){rows, K}, &a));
  }
  if (a->ty.shape.ndim != 2 || b->ty.shape.ndim != 2)
    return node_err(m, "only a 2-d (or N-d) input times a constant 2-d matrix is supported (a batched MatMul of two inputs is not)");
  node *w = dense_weight(m, b, !tb);
  if (!w) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
  node *args[2] = {a, w};
  node *y = call(m, OP_DENSE, 2, args);
  TRY(typed(m, y));
  if (alpha != 1) {
    node *ma[2] = {y, scalar(m, (float)alpha)};
    y = call(m, OP_MULTIPLY, 2, ma);
    TRY(typed(m, y));
  }
  if (cc) {
    node *bias = cc;
    if (beta != 1) {
      bias = ir_const(m->g, &cc->ty.shape, cc->data);
      if (!bias) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
      for (int64_t i = 0; i < shape_numel(&cc->ty.shape); i++) bias->data[i] *= (float)beta;
    }
    node *aa[2] = {y, bias};
    y = call(m, OP_ADD, 2, aa);
    TRY(typed(m, y));
  }
  if (lead.ndim > 2) {
    lead.d[lead.ndim - 1] = y->ty.shape.d[1];
    TRY(reshape_to(m, y, lead.ndim, lead.d, &y));
  }
  return set_out(m, 0, y);
}

/* the elementwise ops of one input, with their attributes */
static temper_status unary(imp *m, int op) {
  node *x, *y;
  TRY(input(m, 0, &x));
  y = call(m, op, 1, &x);
  if (!y) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
  if (op == OP_HARD_SIGMOID) {
    TRY(attr_float(m, "alpha", 0.2, &y->attrs->v[ATTR_ALPHA].f));
    TRY(attr_float(m, "beta", 0.5, &y->attrs->v[ATTR_BETA].f));
  } else if (op == OP_LEAKY_RELU) {
    TRY(attr_float(m, "alpha", 0.01, &y->attrs->v[ATTR_ALPHA].f));
  }
  TRY(typed(m, y));
  return set_out(m, 0, y);
}

/* y = op(x) for the IR ops of one or two arguments, typed */
static temper_status op1(imp *m, int op, node *x, node **y) {
  *y = call(m, op, 1, &x);
  return typed(m, *y);
}
static temper_status op2(imp *m, int op, node *x, node *z, node **y) {
  node *a[2] = {x, z};
  *y = call(m, op, 2, a);
  return typed(m, *y);
}
static temper_status reshape_to(imp *m, node *x, int nd, const int64_t *dims, node **y) {
  *y = call(m, OP_RESHAPE, 1, &x);
  if (!*y) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
  (*y)->attrs->v[ATTR_NEWSHAPE].n = nd;
  for (int i = 0; i < nd; i++) (*y)->attrs->v[ATTR_NEWSHAPE].i[i] = dims[i];
  return typed(m, *y);
}

enum { RED_MEAN, RED_SUM, RED_MAX };

/* A reduction over any axes (mask: bit i for axis i) with the global pools:
 * the kept axes first and the reduced ones last (a transpose if they are not
 * already), reshaped to [1, kept, reduced, 1], pooled over the reduced
 * "rows", reshaped to the result (keepdims: the reduced axes as 1). Over the
 * spatial axes of a 4-d tensor the pool applies directly. */
static temper_status reduce_nodes(imp *m, node *x, int mask, int keep, int kind, node **out) {
  const shape_t *xs = &x->ty.shape;
  int nd = xs->ndim, pool = kind == RED_MAX ? OP_GLOBAL_MAX_POOL2D : OP_GLOBAL_AVG_POOL2D;
  node *y;
  int64_t kept = 1, red = 1, dims[TEMPER_MAX_DIMS];
  int nk = 0;
  for (int i = 0; i < nd; i++)
    if (mask >> i & 1) red *= xs->d[i];
    else kept *= xs->d[i], dims[nk++] = xs->d[i];
  if (nd == 4 && mask == 0xc) TRY(op1(m, pool, x, &y));
  else {
    node *t = x;
    int perm[TEMPER_MAX_DIMS], k = 0, identity = 1;
    for (int i = 0; i < nd; i++)
      if (!(mask >> i & 1)) perm[k++] = i;
    for (int i = 0; i < nd; i++)
      if (mask >> i & 1) perm[k++] = i;
    for (int i = 0; i < nd; i++) identity &= perm[i] == i;
    if (!identity) {
      t = call(m, OP_TRANSPOSE, 1, &x);
      if (!t) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
      t->attrs->v[ATTR_AXES].n = nd;
      for (int i = 0; i < nd; i++) t->attrs->v[ATTR_AXES].i[i] = perm[i];
      TRY(typed(m, t));
    }
    TRY(reshape_to(m, t, 4, (int64_t[]){1, kept, red, 1}, &t));
    TRY(op1(m, pool, t, &y));
  }
  if (kind == RED_SUM) TRY(op2(m, OP_MULTIPLY, y, scalar(m, (float)red), &y));
  if (keep) {
    for (int i = 0; i < nd; i++) dims[i] = mask >> i & 1 ? 1 : xs->d[i];
    nk = nd;
  }
  if (!nk) dims[nk++] = 1;   /* every axis reduced, keepdims=0: one value (as a 1-d tensor) */
  if (nd == 4 && mask == 0xc && keep) { *out = y; return TEMPER_OK; }
  return reshape_to(m, y, nk, dims, out);
}

/* the 'axes' of a node: an attribute (older opsets) or the second input
 * (newer); at most 8; none given: *n = 0 */
static temper_status read_axes(imp *m, int64_t *axes, int *n) {
  *n = 0;
  const Onnx__AttributeProto *a = attr(m->cur, "axes");
  if (a) {
    if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS || a->n_ints > 8) return node_err(m, "attribute 'axes' must be at most 8 ints");
    for (size_t i = 0; i < a->n_ints; i++) axes[(*n)++] = a->ints[i];
  } else if (m->cur->n_input > 1 && m->cur->input[1][0]) {
    value *v;
    TRY(ints_input(m, 1, &v));
    if (v->n_ints > 8) return node_err(m, "input 'axes' must have at most 8 values");
    for (int i = 0; i < v->n_ints; i++) axes[(*n)++] = v->ints[i];
  }
  return TEMPER_OK;
}

/* ReduceMean / ReduceSum / ReduceMax: axes an attribute (opsets 11–17; 13+
 * for ReduceSum) or the second input; none: every axis */
static temper_status reduce(imp *m, int kind) {
  node *x, *y;
  TRY(input(m, 0, &x));
  int64_t keep, axes[8];
  int n_axes = 0;
  TRY(attr_int(m, "keepdims", 1, &keep));
  TRY(read_axes(m, axes, &n_axes));
  int nd = x->ty.shape.ndim, mask = 0;
  for (int i = 0; i < n_axes; i++) {
    int64_t ax = axes[i] < 0 ? axes[i] + nd : axes[i];
    if (ax < 0 || ax >= nd) return node_err(m, "axis %lld out of range for a %d-d input", (long long)axes[i], nd);
    mask |= 1 << ax;
  }
  int64_t noop = 0;
  TRY(attr_int(m, "noop_with_empty_axes", 0, &noop));
  if (!mask && noop) return set_out(m, 0, x);
  if (!mask) mask = (1 << nd) - 1;
  TRY(reduce_nodes(m, x, mask, (int)keep, kind, &y));
  return set_out(m, 0, y);
}

/* Pow with a constant exponent, as the ops it stands for */
static temper_status power(imp *m) {
  node *x, *e, *y;
  TRY(input(m, 0, &x));
  TRY(const_input(m, 1, &e));
  int64_t cnt = shape_numel(&e->ty.shape);
  if (cnt < 1) return node_err(m, "the exponent is empty");
  float p = e->data[0];
  for (int64_t i = 1; i < cnt; i++)
    if (e->data[i] != p) return node_err(m, "an exponent that varies is not supported (one constant value)");
  if (p == 1) return set_out(m, 0, x);
  if (p == 2 || p == 3) {
    TRY(op2(m, OP_MULTIPLY, x, x, &y));
    if (p == 3) TRY(op2(m, OP_MULTIPLY, y, x, &y));
  } else if (p == 0.5f || p == -0.5f) {
    TRY(op1(m, OP_SQRT, x, &y));
    if (p < 0) TRY(op2(m, OP_DIVIDE, scalar(m, 1), y, &y));
  } else if (p == -1) TRY(op2(m, OP_DIVIDE, scalar(m, 1), x, &y));
  else return node_err(m, "exponent %g is not supported (1, 2, 3, 0.5, -0.5 or -1)", (double)p);
  return set_out(m, 0, y);
}

/* LayerNormalization (opset 17) in the ops it stands for: the mean and
 * variance over the axes from `axis` on — the decomposition opset 13's
 * exporters write, which simplify makes one nn.layer_norm where it is
 * over the last axis alone */
static temper_status layer_norm(imp *m) {
  node *x, *sc, *bias = NULL, *mu, *d, *var, *y;
  TRY(input(m, 0, &x));
  TRY(input(m, 1, &sc));
  if (m->cur->n_input > 2 && m->cur->input[2][0]) TRY(input(m, 2, &bias));
  int64_t axis, stash;
  double eps;
  TRY(attr_int(m, "axis", -1, &axis));
  TRY(attr_float(m, "epsilon", 1e-5, &eps));
  TRY(attr_int(m, "stash_type", 1, &stash));
  int nd = x->ty.shape.ndim;
  if (axis < 0) axis += nd;
  if (axis < 0 || axis >= nd) return node_err(m, "axis out of range");
  int mask = ((1 << nd) - 1) & ~((1 << axis) - 1);
  TRY(reduce_nodes(m, x, mask, 1, RED_MEAN, &mu));
  TRY(op2(m, OP_SUBTRACT, x, mu, &d));
  TRY(op2(m, OP_MULTIPLY, d, d, &var));
  TRY(reduce_nodes(m, var, mask, 1, RED_MEAN, &var));
  TRY(op2(m, OP_ADD, var, scalar(m, (float)eps), &var));
  TRY(op1(m, OP_SQRT, var, &var));
  TRY(op2(m, OP_DIVIDE, d, var, &y));
  TRY(op2(m, OP_MULTIPLY, y, sc, &y));
  if (bias) TRY(op2(m, OP_ADD, y, bias, &y));
  if (m->cur->n_output > 1 && m->cur->output[1][0]) TRY(set_out(m, 1, mu));   /* the mean, and 1 / the deviation */
  if (m->cur->n_output > 2 && m->cur->output[2][0]) {
    node *inv;
    TRY(op2(m, OP_DIVIDE, scalar(m, 1), var, &inv));
    TRY(set_out(m, 2, inv));
  }
  return set_out(m, 0, y);
}

/* Squeeze / Unsqueeze of a float tensor: a reshape to the static shape
 * they make; axes an attribute (opset 11–12) or an input (13+) */
static temper_status squeeze(imp *m, int unsqueeze) {
  node *x, *y;
  TRY(input(m, 0, &x));
  int64_t axes[8];
  int n_axes = 0;
  TRY(read_axes(m, axes, &n_axes));
  if (!n_axes && unsqueeze) return node_err(m, "axes are required");
  const shape_t *xs = &x->ty.shape;
  int out_nd = unsqueeze ? xs->ndim + n_axes : xs->ndim;
  if (out_nd > TEMPER_MAX_DIMS) return node_err(m, "the result would have %d dimensions (at most %d)", out_nd, TEMPER_MAX_DIMS);
  int mark[TEMPER_MAX_DIMS + 8] = {0};
  for (int i = 0; i < n_axes; i++) {
    int64_t ax = axes[i] < 0 ? axes[i] + (unsqueeze ? out_nd : xs->ndim) : axes[i];
    if (ax < 0 || ax >= (unsqueeze ? out_nd : xs->ndim) || mark[ax]) return node_err(m, "axis %lld is out of range or repeated", (long long)axes[i]);
    if (!unsqueeze && xs->d[ax] != 1) return node_err(m, "axis %lld has size %lld, not 1", (long long)axes[i], (long long)xs->d[ax]);
    mark[ax] = 1;
  }
  y = call(m, OP_RESHAPE, 1, &x);
  if (!y) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
  attr_val *ns = &y->attrs->v[ATTR_NEWSHAPE];
  ns->n = 0;
  if (unsqueeze)
    for (int o = 0, k = 0; o < out_nd; o++) ns->i[ns->n++] = mark[o] ? 1 : xs->d[k++];
  else
    for (int k = 0; k < xs->ndim; k++)
      if (!(n_axes ? mark[k] : xs->d[k] == 1)) ns->i[ns->n++] = xs->d[k];
  if (!ns->n) return node_err(m, "squeezing every axis (a scalar) is not supported");
  TRY(typed(m, y));
  return set_out(m, 0, y);
}

/* an integer output: what shape arithmetic makes (Shape, Gather, ...) */
static temper_status set_ints_out(imp *m, size_t i, const int64_t *ints, int n) {
  if (i >= m->cur->n_output) return node_err(m, "has no output %zu", i + 1);
  value *o = define(m, m->cur->output[i]);
  if (!o || !(o->ints = arena_alloc(&m->g->a, sizeof(int64_t) * (size_t)(n ? n : 1)))) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
  memcpy(o->ints, ints, sizeof(int64_t) * (size_t)n);
  o->n_ints = n;
  o->is_ints = 1;
  return TEMPER_OK;
}

static value *maybe_ints(imp *m, size_t i) {
  if (i >= m->cur->n_input || !m->cur->input[i][0]) return NULL;
  value *v = lookup(m, m->cur->input[i]);
  return v && v->is_ints ? v : NULL;
}

/* Shape → Gather → Add/Sub/Mul/Div → Unsqueeze → Concat → Reshape: exported
 * models compute shapes that are static here, so they fold at import into
 * integer values (an op on them with a float tensor is refused) */
static temper_status shape_chain(imp *m, const char *op, int *done) {
  *done = 1;
  int64_t out[16];
  int n = 0;
  if (!strcmp(op, "Shape")) {
    value *v = m->cur->n_input ? lookup(m, m->cur->input[0]) : NULL;
    if (!v) return node_err(m, "input 1 is missing or unknown");
    int64_t start, end, nd = v->is_ints ? 1 : v->n->ty.shape.ndim;
    TRY(attr_int(m, "start", 0, &start));
    TRY(attr_int(m, "end", nd, &end));
    if (start < 0) start += nd;
    if (end < 0) end += nd;
    start = start < 0 ? 0 : start > nd ? nd : start;
    end = end < start ? start : end > nd ? nd : end;
    for (int64_t i = start; i < end; i++) out[n++] = v->is_ints ? v->n_ints : v->n->ty.shape.d[i];
    return set_ints_out(m, 0, out, n);
  }
  value *a = maybe_ints(m, 0);
  if (!a) { *done = 0; return TEMPER_OK; }   /* a float tensor: the op's own import */
  if (!strcmp(op, "Gather")) {
    value *idx;
    int64_t axis;
    TRY(ints_input(m, 1, &idx));
    TRY(attr_int(m, "axis", 0, &axis));
    if (axis != 0 || idx->n_ints > 16) return node_err(m, "gathering integers: only along axis 0, at most 16 indices");
    for (int i = 0; i < idx->n_ints; i++) {
      int64_t k = idx->ints[i] < 0 ? idx->ints[i] + a->n_ints : idx->ints[i];
      if (k < 0 || k >= a->n_ints) return node_err(m, "index %lld out of range (%d values)", (long long)idx->ints[i], a->n_ints);
      out[n++] = a->ints[k];
    }
    return set_ints_out(m, 0, out, n);
  }
  if (!strcmp(op, "Add") || !strcmp(op, "Sub") || !strcmp(op, "Mul") || !strcmp(op, "Div")) {
    value *b;
    TRY(ints_input(m, 1, &b));
    n = a->n_ints > b->n_ints ? a->n_ints : b->n_ints;
    if ((a->n_ints != n && a->n_ints != 1) || (b->n_ints != n && b->n_ints != 1) || n > 16) return node_err(m, "integer operands of %d and %d values do not broadcast", a->n_ints, b->n_ints);
    for (int i = 0; i < n; i++) {
      int64_t x = a->ints[a->n_ints == 1 ? 0 : i], y = b->ints[b->n_ints == 1 ? 0 : i];
      if (op[0] == 'D' && y == 0) return node_err(m, "integer division by zero");
      out[i] = op[0] == 'A' ? x + y : op[0] == 'S' ? x - y : op[0] == 'M' ? x * y : x / y;
    }
    return set_ints_out(m, 0, out, n);
  }
  if (!strcmp(op, "Unsqueeze") || !strcmp(op, "Squeeze") || !strcmp(op, "Cast") || !strcmp(op, "Identity"))
    return set_ints_out(m, 0, a->ints, a->n_ints);
  if (!strcmp(op, "Concat")) {
    for (size_t i = 0; i < m->cur->n_input; i++) {
      value *v;
      TRY(ints_input(m, i, &v));
      if (n + v->n_ints > 16) return node_err(m, "concatenating more than 16 integers");
      for (int k = 0; k < v->n_ints; k++) out[n++] = v->ints[k];
    }
    return set_ints_out(m, 0, out, n);
  }
  *done = 0;
  return TEMPER_OK;
}

/* Slice: starts, ends, axes, steps (inputs, opset 10+) into one
 * strided_slice of every dimension, clamped as ONNX says */
static temper_status slice(imp *m) {
  node *x, *y;
  value *st, *en, *ax = NULL, *sp = NULL;
  TRY(input(m, 0, &x));
  TRY(ints_input(m, 1, &st));
  TRY(ints_input(m, 2, &en));
  if (m->cur->n_input > 3 && m->cur->input[3][0]) TRY(ints_input(m, 3, &ax));
  if (m->cur->n_input > 4 && m->cur->input[4][0]) TRY(ints_input(m, 4, &sp));
  const shape_t *xs = &x->ty.shape;
  int k = st->n_ints;
  if (en->n_ints != k || (ax && ax->n_ints != k) || (sp && sp->n_ints != k) || k > xs->ndim)
    return node_err(m, "starts, ends, axes and steps must have the same length, at most the rank");
  y = call(m, OP_STRIDED_SLICE, 1, &x);
  if (!y) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
  attr_val *b = &y->attrs->v[ATTR_BEGIN], *e = &y->attrs->v[ATTR_END], *s = &y->attrs->v[ATTR_STEP];
  b->n = e->n = s->n = xs->ndim;
  for (int i = 0; i < xs->ndim; i++) b->i[i] = 0, e->i[i] = xs->d[i], s->i[i] = 1;
  for (int i = 0; i < k; i++) {
    int64_t a = ax ? ax->ints[i] : i;
    if (a < 0) a += xs->ndim;
    if (a < 0 || a >= xs->ndim) return node_err(m, "axis %lld out of range", (long long)(ax ? ax->ints[i] : i));
    int64_t dim = xs->d[a], step = sp ? sp->ints[i] : 1, lo = st->ints[i], hi = en->ints[i];
    if (step < 1) return node_err(m, "step %lld is not supported (positive steps only)", (long long)step);
    if (lo < 0) lo += dim;
    if (hi < 0) hi += dim;
    lo = lo < 0 ? 0 : lo > dim ? dim : lo;
    hi = hi < 0 ? 0 : hi > dim ? dim : hi;
    if (hi <= lo) return node_err(m, "an empty slice of axis %lld is not supported", (long long)a);
    b->i[a] = lo, e->i[a] = hi, s->i[a] = step;
  }
  TRY(typed(m, y));
  return set_out(m, 0, y);
}

/* Split into strided slices: sizes from the 'split' input (13+), the
 * attribute (11–12), or equal parts, one per output */
static temper_status split(imp *m) {
  node *x;
  TRY(input(m, 0, &x));
  int64_t axis, sizes[64];
  TRY(attr_int(m, "axis", 0, &axis));
  const shape_t *xs = &x->ty.shape;
  if (axis < 0) axis += xs->ndim;
  if (axis < 0 || axis >= xs->ndim) return node_err(m, "axis out of range");
  int nout = (int)m->cur->n_output;
  if (nout < 1 || nout > 64) return node_err(m, "1 to 64 outputs are supported");
  const Onnx__AttributeProto *sa = attr(m->cur, "split");
  value *sv = m->cur->n_input > 1 && m->cur->input[1][0] ? lookup(m, m->cur->input[1]) : NULL;
  if (sv && !sv->is_ints) return node_err(m, "input 'split' must be a constant int64 tensor");
  int have = sv ? sv->n_ints : sa ? (int)sa->n_ints : 0;
  if ((sv || sa) && have != nout) return node_err(m, "split has %d sizes for %d outputs", have, nout);
  int64_t total = 0;
  for (int i = 0; i < nout; i++) {
    sizes[i] = sv ? sv->ints[i] : sa ? sa->ints[i] : xs->d[axis] / nout + (i < xs->d[axis] % nout);
    if (sizes[i] < 1) return node_err(m, "part %d is empty", i + 1);
    total += sizes[i];
  }
  if (total != xs->d[axis]) return node_err(m, "the parts add up to %lld, the axis has %lld", (long long)total, (long long)xs->d[axis]);
  int64_t at = 0;
  for (int i = 0; i < nout; i++) {
    node *y = call(m, OP_STRIDED_SLICE, 1, &x);
    if (!y) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
    attr_val *b = &y->attrs->v[ATTR_BEGIN], *e = &y->attrs->v[ATTR_END], *s = &y->attrs->v[ATTR_STEP];
    b->n = e->n = s->n = xs->ndim;
    for (int j = 0; j < xs->ndim; j++) b->i[j] = 0, e->i[j] = xs->d[j], s->i[j] = 1;
    b->i[axis] = at, e->i[axis] = at += sizes[i];
    TRY(typed(m, y));
    if (m->cur->output[i][0]) TRY(set_out(m, (size_t)i, y));
  }
  return TEMPER_OK;
}

static temper_status import_node(imp *m) {
  const Onnx__NodeProto *n = m->cur;
  const char *op = n->op_type;
  node *x, *y;
  int done = 0;
  TRY(shape_chain(m, op, &done));   /* integers: shape arithmetic, folded here */
  if (done) return TEMPER_OK;
  if (!strcmp(op, "Conv")) return conv(m);
  if (!strcmp(op, "MaxPool")) return pool(m, OP_MAX_POOL2D);
  if (!strcmp(op, "AveragePool")) return pool(m, OP_AVG_POOL2D);
  if (!strcmp(op, "GlobalAveragePool")) return pool(m, OP_GLOBAL_AVG_POOL2D);
  if (!strcmp(op, "GlobalMaxPool")) return pool(m, OP_GLOBAL_MAX_POOL2D);
  if (!strcmp(op, "Gemm")) return gemm(m, 0);
  if (!strcmp(op, "MatMul")) return gemm(m, 1);
  static const struct { const char *name; int op; } unaries[] = {
      {"HardSigmoid", OP_HARD_SIGMOID}, {"HardSwish", OP_HARD_SWISH}, {"LeakyRelu", OP_LEAKY_RELU},
      {"Tanh", OP_TANH}, {"Erf", OP_ERF}, {"Exp", OP_EXP}, {"Sqrt", OP_SQRT}};
  for (size_t i = 0; i < sizeof unaries / sizeof unaries[0]; i++)
    if (!strcmp(op, unaries[i].name)) return unary(m, unaries[i].op);
  if (!strcmp(op, "ReduceMean")) return reduce(m, RED_MEAN);
  if (!strcmp(op, "ReduceSum")) return reduce(m, RED_SUM);
  if (!strcmp(op, "ReduceMax")) return reduce(m, RED_MAX);
  if (!strcmp(op, "Pow")) return power(m);
  if (!strcmp(op, "LayerNormalization")) return layer_norm(m);
  if (!strcmp(op, "Relu") || !strcmp(op, "Sigmoid")) {
    TRY(input(m, 0, &x));
    y = call(m, !strcmp(op, "Relu") ? OP_RELU : OP_SIGMOID, 1, &x);
    TRY(typed(m, y));
    return set_out(m, 0, y);
  }
  if (!strcmp(op, "Add") || !strcmp(op, "Sub") || !strcmp(op, "Mul") || !strcmp(op, "Div") || !strcmp(op, "PRelu")) {
    node *a[2];
    TRY(input(m, 0, &a[0]));
    TRY(input(m, 1, &a[1]));
    int code = op[0] == 'A' ? OP_ADD : op[0] == 'S' ? OP_SUBTRACT : op[0] == 'M' ? OP_MULTIPLY : op[0] == 'D' ? OP_DIVIDE : OP_PRELU;
    y = call(m, code, 2, a);
    TRY(typed(m, y));
    return set_out(m, 0, y);
  }
  if (!strcmp(op, "BatchNormalization")) {
    node *a[5];
    for (int i = 0; i < 5; i++) TRY(input(m, (size_t)i, &a[i]));
    double eps;
    int64_t training;
    TRY(attr_float(m, "epsilon", 1e-5, &eps));
    TRY(attr_int(m, "training_mode", 0, &training));
    /* training mode normalises by the batch's own statistics and updates the
     * running ones: running it with the stored statistics would be silently
     * wrong, so it is refused (opset 14+: training_mode; older: the extra
     * outputs mean, var, saved_mean, saved_var) */
    int stats_out = 0;
    for (size_t i = 1; i < m->cur->n_output; i++) stats_out |= m->cur->output[i] && m->cur->output[i][0];
    if (training || stats_out)
      return node_err(m, "training mode (%s) is not supported: temper runs inference; export the model in eval mode",
                      training ? "training_mode=1" : "running-statistics outputs requested");
    y = call(m, OP_BATCH_NORM, 5, a);
    if (!y) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
    y->attrs->v[ATTR_EPSILON].f = eps;
    TRY(typed(m, y));
    node *gi = ir_new(m->g, N_GETITEM, y->loc);
    if (!gi || !(gi->args = arena_alloc(&m->g->a, sizeof(node *)))) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
    gi->n_args = 1;
    gi->args[0] = y;
    TRY(typed(m, gi));
    return set_out(m, 0, gi);
  }
  if (!strcmp(op, "Clip")) {
    TRY(input(m, 0, &x));
    double lo = -FLT_MAX, hi = FLT_MAX;
    node *c;
    if (n->n_input > 1 && n->input[1][0]) { TRY(const_input(m, 1, &c)); lo = c->data[0]; }
    if (n->n_input > 2 && n->input[2][0]) { TRY(const_input(m, 2, &c)); hi = c->data[0]; }
    TRY(attr_float(m, "min", lo, &lo));
    TRY(attr_float(m, "max", hi, &hi));
    y = call(m, OP_CLIP, 1, &x);
    if (!y) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
    y->attrs->v[ATTR_A_MIN].f = lo;
    y->attrs->v[ATTR_A_MAX].f = hi;
    TRY(typed(m, y));
    return set_out(m, 0, y);
  }
  if (!strcmp(op, "Flatten")) {
    TRY(input(m, 0, &x));
    int64_t axis;
    TRY(attr_int(m, "axis", 1, &axis));
    int nd = x->ty.shape.ndim;
    if (axis < 0) axis += nd;
    if (axis < 0 || axis > nd) return node_err(m, "axis %lld out of range", (long long)axis);
    if (axis == 1) y = call(m, OP_BATCH_FLATTEN, 1, &x);
    else {
      int64_t a = 1;
      for (int i = 0; i < axis; i++) a *= x->ty.shape.d[i];
      y = call(m, OP_RESHAPE, 1, &x);
      if (!y) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
      y->attrs->v[ATTR_NEWSHAPE].n = 2;
      y->attrs->v[ATTR_NEWSHAPE].i[0] = a;
      y->attrs->v[ATTR_NEWSHAPE].i[1] = -1;
    }
    TRY(typed(m, y));
    return set_out(m, 0, y);
  }
  if (!strcmp(op, "Slice")) return slice(m);
  if (!strcmp(op, "Split")) return split(m);
  if (!strcmp(op, "Transpose")) {
    TRY(input(m, 0, &x));
    y = call(m, OP_TRANSPOSE, 1, &x);
    if (!y) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
    const Onnx__AttributeProto *pa = attr(n, "perm");
    if (pa) {
      if (pa->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS || pa->n_ints > TEMPER_MAX_DIMS) return node_err(m, "attribute 'perm' must be at most %d ints", TEMPER_MAX_DIMS);
      y->attrs->v[ATTR_AXES].n = (int)pa->n_ints;
      for (size_t i = 0; i < pa->n_ints; i++) y->attrs->v[ATTR_AXES].i[i] = pa->ints[i];
    }
    TRY(typed(m, y));
    return set_out(m, 0, y);
  }
  if (!strcmp(op, "Squeeze") || !strcmp(op, "Unsqueeze")) return squeeze(m, op[0] == 'U');
  if (!strcmp(op, "Reshape")) {
    value *shp = NULL;
    TRY(input(m, 0, &x));
    TRY(ints_input(m, 1, &shp));
    if (shp->n_ints < 1 || shp->n_ints > 8) return node_err(m, "shape must have 1 to 8 values");
    y = call(m, OP_RESHAPE, 1, &x);
    if (!y) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
    y->attrs->v[ATTR_NEWSHAPE].n = shp->n_ints;
    for (int i = 0; i < shp->n_ints; i++) y->attrs->v[ATTR_NEWSHAPE].i[i] = shp->ints[i];
    TRY(typed(m, y));
    return set_out(m, 0, y);
  }
  if (!strcmp(op, "Concat")) {
    node *a[64];
    if (n->n_input > 64 || n->n_input < 1) return node_err(m, "1 to 64 inputs are supported");
    for (size_t i = 0; i < n->n_input; i++) TRY(input(m, i, &a[i]));
    int64_t axis;
    if (!attr(n, "axis")) return node_err(m, "attribute 'axis' is required");
    TRY(attr_int(m, "axis", 0, &axis));
    y = call(m, OP_CONCATENATE, (int)n->n_input, a);
    if (!y) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
    y->attrs->v[ATTR_AXIS].i[0] = axis;
    TRY(typed(m, y));
    return set_out(m, 0, y);
  }
  if (!strcmp(op, "Softmax")) {
    TRY(input(m, 0, &x));
    int64_t axis;
    TRY(attr_int(m, "axis", m->opset >= 13 ? -1 : 1, &axis));
    if (m->opset < 13 && axis != x->ty.shape.ndim - 1 && axis != -1)
      return node_err(m, "Softmax before opset 13 over axes %lld.. of a %d-d tensor is not supported", (long long)axis, x->ty.shape.ndim);
    y = call(m, OP_SOFTMAX, 1, &x);
    if (!y) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
    y->attrs->v[ATTR_AXIS].i[0] = axis;
    TRY(typed(m, y));
    return set_out(m, 0, y);
  }
  if (!strcmp(op, "Dropout") || !strcmp(op, "Identity")) {   /* inference: the input itself */
    value *v = n->n_input ? lookup(m, n->input[0]) : NULL;
    if (!v) return node_err(m, "input '%s' is not produced by any earlier node, initializer or graph input", n->n_input ? n->input[0] : "");
    if (n->n_output > 1 && n->output[1][0]) return node_err(m, "the mask output is not supported");
    value *o = define(m, n->output[0]);
    if (!o) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
    const char *name = o->name;
    *o = *v;
    o->name = name;
    return TEMPER_OK;
  }
  if (!strcmp(op, "Constant")) {
    const Onnx__AttributeProto *a = attr(n, "value");
    if (!a || a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR || !a->t)
      return node_err(m, "attribute 'value' must be a tensor (other Constant forms are not supported)");
    value *o = define(m, n->output[0]);
    if (!o) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
    return tensor_value(m, a->t, o);
  }
  if (!strcmp(op, "Pad")) {
    value *pads;
    char mode[32];
    TRY(input(m, 0, &x));
    TRY(attr_str(m, "mode", "constant", mode, sizeof mode));
    if (strcmp(mode, "constant")) return node_err(m, "mode '%s' is not supported (constant only)", mode);
    TRY(ints_input(m, 1, &pads));
    if (n->n_input > 3 && n->input[3][0]) return node_err(m, "the axes input (opset 18) is not supported: give pads for every axis");
    int nd = x->ty.shape.ndim;
    if (pads->n_ints != 2 * nd || nd > 4) return node_err(m, "pads must hold 2 values per dimension (at most 4 dimensions)");
    float value = 0;
    if (n->n_input > 2 && n->input[2][0]) {
      node *cv;
      TRY(const_input(m, 2, &cv));
      value = cv->data[0];
    }
    y = call(m, OP_PAD, 1, &x);
    if (!y) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
    attr_val *pw = &y->attrs->v[ATTR_PAD_WIDTH];   /* ONNX: all begins, then all ends */
    pw->n = 2 * nd;
    for (int i = 0; i < nd; i++) pw->i[2 * i] = pads->ints[i], pw->i[2 * i + 1] = pads->ints[nd + i];
    y->attrs->v[ATTR_PAD_VALUE].f = value;
    TRY(typed(m, y));
    return set_out(m, 0, y);
  }
  if (!strcmp(op, "Gather") || !strcmp(op, "Cast"))
    return node_err(m, "%s of a float tensor is not supported (only of integers: the shape arithmetic of exported models)", op);
  return node_err(m, "unsupported op");
}

static const char *const supported[] = {"Conv", "BatchNormalization", "Relu", "Clip", "Add", "Sub", "Mul", "Div", "Sigmoid",
                                        "MaxPool", "AveragePool", "GlobalAveragePool", "Flatten", "Reshape", "Gemm", "MatMul",
                                        "Concat", "Softmax", "Dropout", "Constant", "Identity", "Pad", "HardSigmoid",
                                        "HardSwish", "LeakyRelu", "Tanh", "Erf", "Exp", "Sqrt", "ReduceMean", "PRelu", "GlobalMaxPool", "Squeeze", "Unsqueeze", "Transpose",
                                        "Slice", "Split", "Shape", "Gather", "Cast", "ReduceSum", "ReduceMax", "Pow",
                                        "LayerNormalization", NULL};

static int is_supported(const char *op) {
  for (int i = 0; supported[i]; i++)
    if (!strcmp(supported[i], op)) return 1;
  return 0;
}

/* The opset from which temper reads each op: a model of an older opset is
 * read where the definitions of its ops did not change since (in what
 * temper reads) */
static const struct { const char *op; int since; } op_since[] = {
    {"Conv", 1}, {"BatchNormalization", 9}, {"Relu", 6}, {"Clip", 6}, {"Add", 7}, {"Sub", 7}, {"Mul", 7}, {"Div", 7},
    {"Sigmoid", 6}, {"MaxPool", 8}, {"AveragePool", 7}, {"GlobalAveragePool", 1}, {"GlobalMaxPool", 1}, {"Flatten", 1},
    {"Reshape", 5}, {"Gemm", 7}, {"MatMul", 1}, {"Concat", 4}, {"Softmax", 1}, {"Dropout", 7}, {"Constant", 9},
    {"Identity", 1}, {"Pad", 11}, {"HardSigmoid", 6}, {"HardSwish", 14}, {"LeakyRelu", 6}, {"Tanh", 6}, {"Erf", 9},
    {"Exp", 6}, {"Sqrt", 6}, {"ReduceMean", 1}, {"ReduceSum", 1}, {"ReduceMax", 1}, {"PRelu", 7}, {"Pow", 7},
    {"Squeeze", 1}, {"Unsqueeze", 1}, {"Transpose", 1}, {"Slice", 10}, {"Split", 2}, {"Shape", 1}, {"Gather", 1},
    {"Cast", 6}, {"LayerNormalization", 17}, {NULL, 0}};

static int read_since(const char *op) {
  for (int i = 0; op_since[i].op; i++)
    if (!strcmp(op_since[i].op, op)) return op_since[i].since;
  return 0;
}

/* one message listing every unsupported op type, each with its count and
 * its first nodes' names; every type is named however many there are (the
 * names go first when the message would not fit) */
static temper_status check_ops(imp *m, const Onnx__GraphProto *gp) {
  enum { NAMES_PER_OP = 3, BUDGET = 1500 };
  char msg[1900];
  int bad = 0;
  for (int names = NAMES_PER_OP; names >= 0; names -= NAMES_PER_OP) {
    size_t k = 0;
    bad = 0;
    msg[0] = 0;
    for (size_t i = 0; i < gp->n_node; i++) {
      const char *op = gp->node[i]->op_type ? gp->node[i]->op_type : "";
      int first = !is_supported(op);
      for (size_t j = 0; j < i && first; j++) first = strcmp(gp->node[j]->op_type ? gp->node[j]->op_type : "", op) != 0;
      if (!first) continue;
      int count = 0;
      for (size_t j = i; j < gp->n_node; j++) count += !strcmp(gp->node[j]->op_type ? gp->node[j]->op_type : "", op);
      k += (size_t)snprintf(msg + k, k < sizeof msg ? sizeof msg - k : 0, "%s%s (%d node%s", bad++ ? ", " : "", op[0] ? op : "(no op_type)", count,
                            count > 1 ? "s" : "");
      for (size_t j = i, shown = 0; j < gp->n_node && (int)shown < names; j++)
        if (!strcmp(gp->node[j]->op_type ? gp->node[j]->op_type : "", op)) {
          const char *nm = gp->node[j]->name && gp->node[j]->name[0] ? gp->node[j]->name : "(unnamed)";
          size_t len = strlen(nm);   /* a long exported name: its end tells the nodes apart */
          k += (size_t)snprintf(msg + k, k < sizeof msg ? sizeof msg - k : 0, "%s '%s%s'", shown++ ? "," : ":", len > 60 ? "..." : "",
                                len > 60 ? nm + len - 57 : nm);
        }
      k += (size_t)snprintf(msg + k, k < sizeof msg ? sizeof msg - k : 0, "%s)", count > names && names ? ", ..." : "");
    }
    if (k < BUDGET) break;
  }
  if (bad) return diag_fail(m->d, TEMPER_EUNSUPPORTED, "%s: unsupported ONNX op%s: %s", m->path, bad > 1 ? "s" : "", msg);
  return TEMPER_OK;
}

static temper_status import_graph(imp *m, const Onnx__ModelProto *mp) {
  const Onnx__GraphProto *gp = mp->graph;
  if (!gp) return node_err(m, "the model has no graph");
  m->opset = -1;
  for (size_t i = 0; i < mp->n_opset_import; i++) {
    const char *dom = mp->opset_import[i]->domain;
    if (!dom || !dom[0] || !strcmp(dom, "ai.onnx")) m->opset = (int)mp->opset_import[i]->version;
  }
  if (m->opset < 1 || m->opset > 18)
    return diag_fail(m->d, TEMPER_EUNSUPPORTED, "%s: opset %d is not supported (temper reads opsets 11 to 18)", m->path, m->opset);
  TRY(check_ops(m, gp));
  for (size_t i = 0; m->opset < 11 && i < gp->n_node; i++) {   /* older: only ops that read the same since */
    const char *op = gp->node[i]->op_type ? gp->node[i]->op_type : "";
    if (read_since(op) > m->opset)
      return diag_fail(m->d, TEMPER_EUNSUPPORTED,
                       "%s: opset %d is not supported for %s (temper reads opsets 11 to 18, and older ones where an op's "
                       "definition did not change since: %s from opset %d)",
                       m->path, m->opset, op, op, read_since(op));
  }
  for (size_t i = 0; i < gp->n_initializer; i++) {
    value *v = define(m, gp->initializer[i]->name ? gp->initializer[i]->name : "");
    if (!v) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
    TRY(tensor_value(m, gp->initializer[i], v));
  }
  node **params = arena_alloc(&m->g->a, sizeof(node *) * (gp->n_input + 1));
  int np = 0;
  if (!params) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
  for (size_t i = 0; i < gp->n_input; i++) {
    const Onnx__ValueInfoProto *vi = gp->input[i];
    if (lookup(m, vi->name)) continue;   /* an initializer listed as an input too */
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type || !tp->tensor_type->shape)
      return node_err(m, "input '%s' must be a tensor with a shape", vi->name);
    if (tp->tensor_type->elem_type != ELEM_FLOAT) return node_err(m, "input '%s' must be float32", vi->name);
    const Onnx__TensorShapeProto *sp = tp->tensor_type->shape;
    shape_t s = {(int)sp->n_dim, {0}};
    if (sp->n_dim > TEMPER_MAX_DIMS) return node_err(m, "input '%s' has too many dimensions", vi->name);
    for (size_t k = 0; k < sp->n_dim; k++) {
      if (sp->dim[k]->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE || sp->dim[k]->dim_value <= 0)
        return node_err(m, "input '%s' dimension %zu is symbolic ('%s'): temper needs static shapes", vi->name, k,
                        sp->dim[k]->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM ? sp->dim[k]->dim_param : "?");
      s.d[k] = sp->dim[k]->dim_value;
    }
    node *v = ir_var(m->g, vi->name, &s);
    value *val = v ? define(m, vi->name) : NULL;
    if (!val) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
    val->n = v;
    params[np++] = v;
  }
  m->by_line = calloc(gp->n_node + 1, sizeof *m->by_line);
  if (!m->by_line) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
  for (size_t i = 0; i < gp->n_node; i++) {
    m->cur = gp->node[i];
    m->by_line[i] = m->cur;
    m->n_lines = (int)i + 1;
    if (!m->cur->n_output) return node_err(m, "has no outputs");
    temper_status s = import_node(m);
    if (s) {
      if (strncmp(m->d->msg, m->path, strlen(m->path))) {   /* a typeinfer message: name the node instead of a line */
        char inner[2048];
        const char *e = strstr(m->d->msg, "error: ");
        snprintf(inner, sizeof inner, "%s", e ? e + 7 : m->d->msg);
        m->d->status = TEMPER_OK;
        node_err(m, "%s", inner);
      }
      return m->d->status;
    }
  }
  m->cur = NULL;
  if (!gp->n_output) return node_err(m, "the graph has no outputs");
  node *outs[64];
  if (gp->n_output > 64) return node_err(m, "too many outputs");
  for (size_t i = 0; i < gp->n_output; i++) {
    value *v = lookup(m, gp->output[i]->name);
    if (!v || !v->n) return node_err(m, "graph output '%s' is not produced by any node", gp->output[i]->name);
    outs[i] = v->n;
  }
  node *body = outs[0];
  if (gp->n_output > 1) {
    body = ir_new(m->g, N_TUPLE, (loc_t){0, 0});
    if (!body || !(body->args = arena_alloc(&m->g->a, sizeof(node *) * gp->n_output))) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
    body->n_args = (int)gp->n_output;
    memcpy(body->args, outs, sizeof(node *) * gp->n_output);
  }
  node *fn = ir_new(m->g, N_FUNC, (loc_t){0, 0});
  if (!fn) return diag_fail(m->d, TEMPER_ENOMEM, "out of memory");
  fn->params = params;
  fn->n_params = np;
  fn->body = body;
  m->g->main = fn;
  m->g->all_inputs = 1;
  return typeinfer(m->g, m->d);
}

temper_status onnx_import(const char *path, temper_graph **out, diag *d) {
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) return diag_fail(d, TEMPER_EIO, "%s: cannot open: %s", path, strerror(errno));
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *buf = size > 0 ? malloc((size_t)size) : NULL;
  size_t got = buf ? fread(buf, 1, (size_t)size, f) : 0;
  fclose(f);
  if (!buf || got != (size_t)size) {
    free(buf);
    return diag_fail(d, size <= 0 ? TEMPER_EINVAL : TEMPER_EIO, "%s: %s", path, size <= 0 ? "empty file" : "cannot read");
  }
  temper_status s = onnx_import_mem(buf, (size_t)size, path, out, d);
  free(buf);
  return s;
}

temper_status onnx_import_mem(const void *data, size_t size, const char *path, temper_graph **out, diag *d) {
  *out = NULL;
  Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, size, data);
  if (!mp) return diag_fail(d, TEMPER_EINVAL, "%s: not a valid ONNX model (truncated or corrupt protobuf)", path);
  if (fill_strings(mp)) {
    onnx__model_proto__free_unpacked(mp, NULL);
    return diag_fail(d, TEMPER_ENOMEM, "out of memory");
  }
  imp m = {.d = d, .path = path};
  snprintf(m.dir, sizeof m.dir, "%s", path);
  char *slash = strrchr(m.dir, '/');
  if (slash) *slash = 0;
  else strcpy(m.dir, ".");
  m.g = ir_graph_new(path);
  temper_status s = m.g ? import_graph(&m, mp) : diag_fail(d, TEMPER_ENOMEM, "out of memory");
  onnx__model_proto__free_unpacked(mp, NULL);
  free(m.vals);
  free(m.by_line);
  if (s) {
    temper_graph_destroy(m.g);
    return s;
  }
  *out = m.g;
  return TEMPER_OK;
}
