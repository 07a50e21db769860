/* sink.c: transposes cancelled across elementwise ops.
 *
 *   transpose(f(transpose(x, p), c₁, c₂, …), q)  with p∘q the identity
 *     →  f(x, transpose(c₁, p⁻¹), transpose(c₂, p⁻¹), …)
 *
 * where f is a region of elementwise ops (unary, or add / subtract /
 * multiply / divide; or a layer norm, whose axis the transpose renames)
 * whose only data input is transpose(x, p), whose other operands are
 * constants broadcast against it, and whose values are used nowhere else.
 * Models written for NHWC do this around every linear layer (ConvNeXt:
 * permute, Linear, GELU, Linear, permute back; permute, LayerNorm, permute
 * back); the importer makes each Linear a 1×1 conv2d on NCHW between two
 * transposes (onnx.c), and here the transposes between two convs, and
 * between a conv and the permute back, meet and vanish — the bias and GELU
 * then fuse into the conv's epilogue, the layer norm runs over NCHW's
 * channels.
 * A constant of lower rank is first aligned to the right (broadcast rules),
 * then transposed; fold.c folds the transposes of constants away. */
#include <stdlib.h>
#include <string.h>
#include "compiler_int.h"

enum { REGION_MAX = 64 };

typedef struct sink {
  int *uses;          /* node id → uses in main */
  node **map;         /* node id → its rewrite (set as the rewrite goes) */
  int cap;
} sink;

static int is_elementwise(const node *n) {
  if (n->kind != N_CALL || n->op < 0) return 0;
  if (ops_table[n->op].pat == PAT_ELEMWISE && ops_table[n->op].max_args == 1) return 1;
  /* a layer norm over an axis moves with the transposes, its axis renamed */
  if (n->op == OP_LAYER_NORM) return n->n_args == 1 && !strcmp(n->attrs->v[ATTR_LAYOUT].s, "NCHW");
  return n->op == OP_ADD || n->op == OP_SUBTRACT || n->op == OP_MULTIPLY || n->op == OP_DIVIDE;
}

static void perm_of(const node *t, int r, int *p) {
  const attr_val *ax = &t->attrs->v[ATTR_AXES];
  for (int i = 0; i < r; i++) {
    int64_t v = ax->n ? ax->i[i] : r - 1 - i;
    p[i] = (int)(v < 0 ? v + r : v);
  }
}

typedef struct region {
  const node *entry;          /* transpose(x, p) */
  const node *nodes[REGION_MAX];
  int n;
  int refs[REGION_MAX];       /* references to nodes[i] from inside the region */
  int entry_refs;
} region;

static int region_index(const region *rg, const node *v) {
  for (int i = 0; i < rg->n; i++)
    if (rg->nodes[i] == v) return i;
  return -1;
}

/* v and what it reads, into the region; 0 if it is not a region */
static int collect(region *rg, const node *v, const shape_t *shape) {
  int k = region_index(rg, v);
  if (k >= 0) { rg->refs[k]++; return 1; }
  if (v->kind == N_CALL && v->op == OP_TRANSPOSE && (!rg->entry || rg->entry == v)) {
    if (!shape_eq(&v->ty.shape, shape)) return 0;
    rg->entry = v;
    rg->entry_refs++;
    return 1;
  }
  if (!is_elementwise(v) || !shape_eq(&v->ty.shape, shape) || rg->n == REGION_MAX) return 0;
  k = rg->n++;
  rg->nodes[k] = v;
  rg->refs[k] = 1;
  for (int i = 0; i < v->n_args; i++) {
    const node *a = v->args[i];
    if (a->kind == N_CONST) {
      if (a->ty.shape.ndim > shape->ndim) return 0;
      continue;
    }
    if (!collect(rg, a, shape)) return 0;
  }
  return 1;
}

/* a constant broadcast against the transposed value, for the value before it */
static node *constant_for(temper_graph *g, node *c, int r, const int *p) {
  if (c->ty.shape.ndim == 0) return c;
  node *v = c;
  if (c->ty.shape.ndim < r) {   /* right-aligned, as broadcasting reads it */
    v = ir_call(g, OP_RESHAPE, 1, &c, NULL);
    if (!v) return NULL;
    attr_val *ns = &v->attrs->v[ATTR_NEWSHAPE];
    ns->n = r;
    int off = r - c->ty.shape.ndim;
    for (int i = 0; i < r; i++) ns->i[i] = i < off ? 1 : c->ty.shape.d[i - off];
  }
  node *t = ir_call(g, OP_TRANSPOSE, 1, &v, NULL);
  if (!t) return NULL;
  int inv[TEMPER_MAX_DIMS];
  for (int i = 0; i < r; i++) inv[p[i]] = i;
  t->attrs->v[ATTR_AXES].n = r;
  for (int i = 0; i < r; i++) t->attrs->v[ATTR_AXES].i[i] = inv[i];
  return t;
}

/* the region again, reading x' (the rewritten x) for its entry */
static node *rebuild(temper_graph *g, sink *sk, const region *rg, node **done, const node *v, node *xr, int r, const int *p) {
  if (v == rg->entry) return xr;
  int k = region_index(rg, v);
  if (done[k]) return done[k];
  node *args[2];
  for (int i = 0; i < v->n_args; i++) {
    node *a = v->args[i];
    node *ar = sk->map[a->id] ? sk->map[a->id] : a;
    args[i] = a->kind == N_CONST ? constant_for(g, ar, r, p) : rebuild(g, sk, rg, done, a, xr, r, p);
    if (!args[i]) return NULL;
  }
  node *c = ir_call(g, v->op, v->n_args, args, v->attrs);
  if (c) c->loc = v->loc;
  if (c && v->op == OP_LAYER_NORM) {   /* axis a of transpose(x, p) is axis p[a] of x */
    int64_t ax = v->attrs->v[ATTR_AXIS].i[0];
    c->attrs->v[ATTR_AXIS].i[0] = p[ax < 0 ? ax + r : ax];
  }
  return done[k] = c;
}

static node *sink_node(temper_graph *g, node *n, node **args, void *ctx, diag *d) {
  (void)d;
  sink *sk = ctx;
  node *out = NULL;
  if (n->kind == N_CALL && n->op == OP_TRANSPOSE && n->ty.kind == TY_TENSOR && is_elementwise(n->args[0]) &&
      sk->uses[n->args[0]->id] == 1) {
    int r = n->ty.shape.ndim, q[TEMPER_MAX_DIMS], p[TEMPER_MAX_DIMS];
    region rg = {0};
    const node *z = n->args[0];
    int ok = collect(&rg, z, &z->ty.shape) && rg.entry;
    for (int i = 0; ok && i < rg.n; i++)   /* every value of the region is read only inside it (z: only by n) */
      ok = sk->uses[rg.nodes[i]->id] == rg.refs[i];
    ok = ok && sk->uses[rg.entry->id] == rg.entry_refs;
    if (ok) {
      perm_of(rg.entry, r, p);
      perm_of(n, r, q);
      for (int j = 0; j < r; j++) ok &= p[q[j]] == j;   /* the two transposes undo each other */
    }
    if (ok) {
      node *done[REGION_MAX] = {0};
      const node *x = rg.entry->args[0];
      node *xr = sk->map[x->id] ? sk->map[x->id] : (node *)x;
      out = rebuild(g, sk, &rg, done, z, xr, r, p);
      if (!out) return NULL;
    }
  }
  if (!out) out = ir_with_args(g, n, args);
  if (out) sk->map[n->id] = out;
  return out;
}

static void count_uses(node *root, int *uses, arena *scratch) {
  int n = 0;
  node **order = ir_topo(scratch, root, &n);
  for (int i = 0; order && i < n; i++)
    for (int j = 0; j < order[i]->n_args; j++) uses[order[i]->args[j]->id]++;
  uses[root->id]++;
}

/* sink_transposes: needs types; keeps types */
temper_status sink_transposes(temper_graph *g, diag *d) {
  sink sk = {0};
  sk.cap = g->n_nodes + 1;
  sk.uses = calloc((size_t)sk.cap, sizeof *sk.uses);
  sk.map = calloc((size_t)sk.cap, sizeof *sk.map);
  arena scratch = {0};
  temper_status s = TEMPER_OK;
  if (!sk.uses || !sk.map) s = diag_fail(d, TEMPER_ENOMEM, "out of memory");
  if (!s) count_uses(g->main->body, sk.uses, &scratch);
  if (!s && scratch.failed) s = diag_fail(d, TEMPER_ENOMEM, "out of memory");
  if (!s) s = ir_rewrite(g, sink_node, &sk, d);
  arena_free(&scratch);
  free(sk.uses);
  free(sk.map);
  return s;
}
