/* fuse.c: FuseOps. Groups main's operators into primitive functions.
 *
 * Algorithm (after TVM's fuse_ops.cc, one pass):
 *   1. Index the body's nodes topologically; record each node's consumers.
 *   2. Post-dominator tree: ipdom(n) = the lowest common ancestor of n's
 *      consumers (the output, or a node used by a tuple, has none).
 *   3. Visit nodes in order; n may merge with everything on the paths from n
 *      to ipdom(n) when
 *        n is complex (conv2d, dense, pool):  path and ipdom are elementwise
 *                                             or broadcast, same shape as n;
 *        n is elementwise/broadcast/injective: path and ipdom are at most
 *                                             injective;
 *      never two complex ops in one group, at most 256 nodes per group.
 *   4. (fuse_with) A group whose one output feeds only the data input of the
 *      next group's complex op joins that group where the caller's join
 *      says so: producer and consumer in one kernel, the producer's output
 *      never written to memory (depthwise → 1×1, see conv2d_dwpw.c).
 *
 *       conv2d                    ┌──── group ────┐
 *         │                       │ conv2d        │
 *        add(bias)      ──▶       │ add(bias)     │   identity ─┐
 *         │                       │ add(identity) │◀────────────┘
 *        add ◀── identity         │ relu          │
 *         │                       └───────────────┘
 *        relu
 *
 * Because ipdom(n) post-dominates every node on those paths, only it can
 * have users outside the group: each group has one output and merging never
 * creates a cycle. Each group becomes fn (..., Primitive=1) called from main;
 * its parameters are the values it reads from outside (0-d constants stay
 * inside). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "compiler_int.h"

enum { MAX_GROUP = 256 };

typedef struct fgraph {
  int n;
  node **order;
  int *pos;          /* node id → index in order, -1 outside */
  int **cons;        /* consumers (indices) */
  int *n_cons;
  int *barrier;      /* used by a tuple/getitem or is the output: no fusion past it */
  int *ipdom, *depth;
  int *parent, *size, *complex;   /* union-find over groups */
  int *master;                    /* per root: index of its complex op, -1 if none */
} fgraph;

static int find(fgraph *f, int i) {
  while (f->parent[i] != i) i = f->parent[i] = f->parent[f->parent[i]];
  return i;
}

static int pattern_of(const node *x) {
  if (x->kind != N_CALL || x->op < 0) return PAT_OPAQUE;
  return ops_table[x->op].pat;
}

static int lca(fgraph *f, int a, int b) {
  while (a != b) {
    if (a < 0 || b < 0) return -1;
    if (f->depth[a] >= f->depth[b]) a = f->ipdom[a];
    else b = f->ipdom[b];
  }
  return a;
}

static void post_dominators(fgraph *f) {
  for (int i = f->n - 1; i >= 0; i--) {
    int p = -1;
    if (!f->barrier[i] && f->n_cons[i] > 0) {
      p = f->cons[i][0];
      for (int j = 1; j < f->n_cons[i] && p >= 0; j++) p = lca(f, p, f->cons[i][j]);
    }
    f->ipdom[i] = p;
    f->depth[i] = p < 0 ? 0 : f->depth[p] + 1;
  }
}

/* Every node on a path from `from` to `to` (exclusive) satisfies the mid
 * condition; collects them in path[]. Returns -1 if a node fails. */
static int check_path(fgraph *f, int from, int to, int max_mid, const shape_t *same, int *path, char *seen) {
  int n_path = 0, sp = 0;
  int *stack = path + f->n;     /* second half of the buffer */
  for (int j = 0; j < f->n_cons[from]; j++) stack[sp++] = f->cons[from][j];
  while (sp) {
    int v = stack[--sp];
    if (v == to || seen[v]) continue;
    seen[v] = 1;
    node *x = f->order[v];
    if (pattern_of(x) > max_mid || (same && !shape_eq(&x->ty.shape, same)) || f->barrier[v]) { n_path = -1; break; }
    path[n_path++] = v;
    for (int j = 0; j < f->n_cons[v]; j++) stack[sp++] = f->cons[v][j];
  }
  for (int i = 0; i < f->n; i++) seen[i] = 0;
  return n_path;
}

static void merge(fgraph *f, int a, int b) {
  a = find(f, a);
  b = find(f, b);
  if (a == b) return;
  f->parent[b] = a;
  f->size[a] += f->size[b];
  f->complex[a] += f->complex[b];
  if (f->master[a] < 0) f->master[a] = f->master[b];
}

/* t turns the blocked output of conv2d m back into NCHW: the conv's kernel
 * can store there directly, so the transform may end its group */
static int unblocks(const node *m, const node *t) {
  return op_is_conv(m->op) && t->kind == N_CALL && t->op == OP_LAYOUT_TRANSFORM &&
         !strcmp(t->attrs->v[ATTR_DST_LAYOUT].s, "NCHW") && shape_eq(&t->args[0]->ty.shape, &m->ty.shape) &&
         m->attrs->v[ATTR_SCHEDULE].s[0];
}

static void try_fuse(fgraph *f, int i, int *path, char *seen) {
  node *x = f->order[i];
  int target = f->ipdom[i], pat = pattern_of(x);
  if (target < 0 || pat == PAT_OPAQUE || x->ty.kind != TY_TENSOR) return;
  if (find(f, i) == find(f, target)) return;
  node *t = f->order[target];
  int max_mid, max_sink;
  const shape_t *same = NULL;
  if (pat == PAT_OUT_EWISE || pat == PAT_COMM_REDUCE) {
    max_mid = max_sink = PAT_BROADCAST;
    same = &x->ty.shape;
  } else if (pat <= PAT_INJECTIVE) {
    max_mid = max_sink = PAT_INJECTIVE;
  } else {
    return;
  }
  if (!(same && unblocks(x, t)) && (pattern_of(t) > max_sink || (same && !shape_eq(&t->ty.shape, same)))) return;
  int n_path = check_path(f, i, target, max_mid, same, path, seen);
  if (n_path < 0) return;
  /* the union may hold one complex op and MAX_GROUP nodes */
  int roots[MAX_GROUP + 2], nr = 0, total = 0, cplx = 0;
  int cand[MAX_GROUP + 2];
  if (n_path > MAX_GROUP) return;
  cand[0] = i;
  cand[1] = target;
  memcpy(cand + 2, path, sizeof(int) * (size_t)n_path);
  for (int k = 0; k < n_path + 2; k++) {
    int r = find(f, cand[k]), dup = 0;
    for (int j = 0; j < nr; j++) dup |= roots[j] == r;
    if (dup) continue;
    roots[nr++] = r;
    total += f->size[r];
    cplx += f->complex[r];
  }
  if (cplx > 1 || total > MAX_GROUP) return;
  if (cplx == 1) {   /* joining a complex op's group: only its epilogue may come along */
    int m = -1;
    for (int k = 0; k < nr; k++)
      if (f->master[roots[k]] >= 0) m = f->master[roots[k]];
    const shape_t *ms = &f->order[m]->ty.shape;
    if (!unblocks(f->order[m], t) && (pattern_of(t) > PAT_BROADCAST || !shape_eq(&t->ty.shape, ms))) return;
    if (i != m && find(f, i) != find(f, m) && (pat > PAT_BROADCAST || !shape_eq(&x->ty.shape, ms))) return;
    for (int k = 0; k < n_path; k++) {
      node *y = f->order[path[k]];
      if (pattern_of(y) > PAT_BROADCAST || !shape_eq(&y->ty.shape, ms)) return;
    }
    /* so must every member of the groups joined with it: a group made
     * earlier (an input's layout_transform fused into the add it feeds)
     * brings its members along, not only the path */
    int mr = find(f, m);
    for (int v = 0; v < f->n; v++) {
      int r = find(f, v), joined = 0;
      for (int k = 0; k < nr && !joined; k++) joined = roots[k] == r;
      if (!joined || r == mr || v == target) continue;
      node *y = f->order[v];
      if (pattern_of(y) > PAT_BROADCAST || !shape_eq(&y->ty.shape, ms)) return;
    }
  }
  for (int k = 1; k < nr; k++) merge(f, roots[0], roots[k]);
}

/* Builds fn (params, Primitive=1) for one group and the call of it. */
static node *make_group(temper_graph *g, fgraph *f, int *members, int m, node **memo, diag *d) {
  node **inputs = arena_alloc(&g->a, sizeof(node *) * 64 * (size_t)m);
  node **params = arena_alloc(&g->a, sizeof(node *) * 64 * (size_t)m);
  node **inner = calloc((size_t)g->n_nodes + 1, sizeof(node *));
  node *args[64];
  int n_in = 0;
  char pname[32];
  if (!inputs || !params || !inner) { free(inner); return NULL; }
  node *last = NULL;
  for (int k = 0; k < m; k++) {
    node *x = f->order[members[k]];
    for (int j = 0; j < x->n_args; j++) {
      node *a = x->args[j];
      if (a->kind == N_CONST && a->ty.shape.ndim == 0) { args[j] = a; continue; }
      if (!inner[a->id]) {    /* from outside the group: a new parameter */
        snprintf(pname, sizeof pname, "p%d", n_in);
        node *p = ir_var(g, pname, &a->ty.shape);
        if (!p) { free(inner); return NULL; }
        inputs[n_in] = memo[a->id] ? memo[a->id] : a;
        params[n_in++] = p;
        inner[a->id] = p;
      }
      args[j] = inner[a->id];
    }
    node *c = ir_call(g, x->op, x->n_args, args, x->attrs);
    if (!c) { free(inner); return NULL; }
    c->loc = x->loc;
    c->ty = x->ty;
    inner[x->id] = c;
    last = c;
  }
  free(inner);
  node *fn = ir_new(g, N_FUNC, (loc_t){0, 0});
  node *call = fn ? ir_new(g, N_CALL, (loc_t){0, 0}) : NULL;
  if (!call) return NULL;
  fn->params = params;
  fn->n_params = n_in;
  fn->body = last;
  fn->primitive = 1;
  call->op = OP_FUNCALL;
  call->callee = fn;
  call->args = inputs;
  call->n_args = n_in;
  call->ty = last->ty;
  (void)d;
  return call;
}

static int fgraph_build(fgraph *f, arena *s, temper_graph *g) {
  f->order = ir_topo(s, g->main->body, &f->n);
  int n = f->n;
  f->pos = arena_alloc(s, sizeof(int) * (size_t)(g->n_nodes + 1));
  f->cons = arena_alloc(s, sizeof(int *) * (size_t)(n + 1));
  f->n_cons = arena_alloc(s, sizeof(int) * (size_t)(n + 1));
  f->barrier = arena_alloc(s, sizeof(int) * (size_t)(n + 1));
  f->ipdom = arena_alloc(s, sizeof(int) * (size_t)(n + 1));
  f->depth = arena_alloc(s, sizeof(int) * (size_t)(n + 1));
  f->parent = arena_alloc(s, sizeof(int) * (size_t)(n + 1));
  f->size = arena_alloc(s, sizeof(int) * (size_t)(n + 1));
  f->complex = arena_alloc(s, sizeof(int) * (size_t)(n + 1));
  f->master = arena_alloc(s, sizeof(int) * (size_t)(n + 1));
  int *uses = f->order ? ir_use_counts(s, g, f->order, n) : NULL;
  if (!uses || !f->master || s->failed) return -1;
  for (int i = 0; i < g->n_nodes; i++) f->pos[i] = -1;
  for (int i = 0; i < n; i++) {
    f->pos[f->order[i]->id] = i;
    f->cons[i] = arena_alloc(s, sizeof(int) * (size_t)(uses[f->order[i]->id] + 1));
    f->parent[i] = i;
    f->size[i] = 1;
    f->complex[i] = ops_is_complex(f->order[i]->kind == N_CALL ? f->order[i]->op : -1);
    f->master[i] = f->complex[i] ? i : -1;
  }
  for (int i = 0; i < n; i++) {
    node *x = f->order[i];
    for (int j = 0; j < x->n_args; j++) {
      int p = f->pos[x->args[j]->id];
      f->cons[p][f->n_cons[p]++] = i;
      if (x->kind != N_CALL || x->op < 0) f->barrier[p] = 1;
    }
  }
  f->barrier[n - 1] = 1;
  return s->failed ? -1 : 0;
}

/* step 4: group r's output node (the member with consumers outside it, or
 * the program's output), -1 if there are several */
static int group_output(fgraph *f, int r) {
  int out = -1;
  for (int i = 0; i < f->n; i++) {
    if (find(f, i) != r) continue;
    int outside = i == f->n - 1 || f->barrier[i];
    for (int j = 0; j < f->n_cons[i]; j++) outside |= find(f, f->cons[i][j]) != r;
    if (!outside) continue;
    if (out >= 0) return -1;
    out = i;
  }
  return out;
}

static void join_producers(fgraph *f, fuse_join_fn join, void *ctx) {
  for (int i = 0; i < f->n; i++) {
    node *m1 = f->order[i];
    if (!f->complex[i] || m1->kind != N_CALL) continue;
    int r1 = find(f, i);
    if (f->complex[r1] != 1) continue;
    int o = group_output(f, r1);
    if (o < 0 || o == f->n - 1 || f->barrier[o] || f->n_cons[o] != 1) continue;
    int c = f->cons[o][0], r2 = find(f, c);
    node *m2 = f->order[c];
    if (r2 == r1 || f->complex[r2] != 1 || f->master[r2] != c || m2->n_args < 1 || m2->args[0] != f->order[o]) continue;
    for (int j = 1; j < m2->n_args; j++)
      if (m2->args[j] == f->order[o]) c = -1;
    if (c < 0 || f->size[r1] + f->size[r2] > MAX_GROUP || !join(m1, m2, ctx)) continue;
    f->parent[r1] = r2;   /* r2 keeps its master: the consumer */
    f->size[r2] += f->size[r1];
    f->complex[r2] += f->complex[r1];
  }
}

/* fuse: needs types; keeps types; every op call of main moves into a
 * function marked Primitive=1 that main calls */
temper_status fuse(temper_graph *g, diag *d) { return fuse_with(g, NULL, NULL, d); }

temper_status fuse_with(temper_graph *g, fuse_join_fn join, void *ctx, diag *d) {
  arena s = {0};
  fgraph f = {0};
  if (fgraph_build(&f, &s, g)) { arena_free(&s); return diag_fail(d, TEMPER_ENOMEM, "out of memory"); }
  int *path = arena_alloc(&s, sizeof(int) * (size_t)(2 * f.n + 2));
  char *seen = arena_alloc(&s, (size_t)f.n + 1);
  int *members = arena_alloc(&s, sizeof(int) * (size_t)(f.n + 1));
  node **memo = arena_alloc(&s, sizeof(node *) * (size_t)(g->n_nodes + 1));
  if (!path || !seen || !members || !memo) { arena_free(&s); return diag_fail(d, TEMPER_ENOMEM, "out of memory"); }
  post_dominators(&f);
  for (int i = 0; i < f.n; i++)
    if (f.order[i]->kind == N_CALL && f.order[i]->op >= 0) try_fuse(&f, i, path, seen);
  if (join) join_producers(&f, join, ctx);
  /* emit groups in order of their output node; other nodes are rebuilt */
  for (int i = 0; i < f.n; i++) {
    node *x = f.order[i];
    if (x->kind == N_VAR || x->kind == N_CONST || x->kind == N_FUNC) { memo[x->id] = x; continue; }
    if (x->kind == N_CALL && x->op >= 0) {
      int r = find(&f, i), m = 0, is_out = 1;
      for (int j = 0; j < f.n_cons[i]; j++) is_out &= find(&f, f.cons[i][j]) != r;
      if (i == f.n - 1) is_out = 1;
      if (!is_out) continue;   /* an inner node: emitted with its group's output */
      for (int k = 0; k <= i; k++)
        if (f.order[k]->kind == N_CALL && f.order[k]->op >= 0 && find(&f, k) == r) members[m++] = k;
      node *call = make_group(g, &f, members, m, memo, d);
      if (!call) { arena_free(&s); return diag_fail(d, TEMPER_ENOMEM, "out of memory"); }
      memo[x->id] = call;
      continue;
    }
    node *args[64];
    for (int j = 0; j < x->n_args; j++) args[j] = memo[x->args[j]->id];
    node *c = ir_with_args(g, x, args);
    if (!c) { arena_free(&s); return diag_fail(d, TEMPER_ENOMEM, "out of memory"); }
    if (c != x) c->ty = x->ty;
    memo[x->id] = c;
  }
  g->main->body = memo[g->main->body->id];
  arena_free(&s);
  return g->a.failed ? diag_fail(d, TEMPER_ENOMEM, "out of memory") : TEMPER_OK;
}
