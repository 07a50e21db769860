/* ir.c: node constructors, traversal, and the public graph handle. */
#include <stdlib.h>
#include <string.h>
#include "compiler_int.h"

int64_t shape_numel(const shape_t *s) {
  int64_t n = 1;
  for (int i = 0; i < s->ndim; i++) {
    if (s->d[i] <= 0) return s->d[i] == 0 ? 0 : INT64_MAX;   /* a negative size is as bad as a huge one */
    if (n > INT64_MAX / s->d[i]) return INT64_MAX;          /* saturates: compared with TEMPER_MAX_ELEMS, never wraps */
    n *= s->d[i];
  }
  return n;
}

int shape_eq(const shape_t *a, const shape_t *b) {
  if (a->ndim != b->ndim) return 0;
  for (int i = 0; i < a->ndim; i++)
    if (a->d[i] != b->d[i]) return 0;
  return 1;
}

temper_graph *ir_graph_new(const char *path) {
  temper_graph *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->a.limit = arena_test_limit;
  g->path = strdup(path ? path : "<input>");
  if (!g->path) { free(g); return NULL; }
  return g;
}

node *ir_new(temper_graph *g, node_kind k, loc_t loc) {
  node *n = arena_alloc(&g->a, sizeof *n);
  if (!n) return NULL;
  n->kind = k;
  n->id = g->n_nodes++;
  n->loc = loc;
  n->op = OP_FUNCALL;
  return n;
}

node *ir_call(temper_graph *g, int op, int n_args, node **args, const attrs_t *attrs) {
  node *n = ir_new(g, N_CALL, (loc_t){0, 0});
  if (!n) return NULL;
  n->op = op;
  n->n_args = n_args;
  n->args = arena_alloc(&g->a, sizeof(node *) * (size_t)(n_args ? n_args : 1));
  n->attrs = arena_alloc(&g->a, sizeof *n->attrs);
  if (!n->args || !n->attrs) return NULL;
  memcpy(n->args, args, sizeof(node *) * (size_t)n_args);
  if (attrs) *n->attrs = *attrs;
  else if (op >= 0) ops_default_attrs(op, n->attrs);
  return n;
}

node *ir_const(temper_graph *g, const shape_t *s, const float *data) {
  node *n = ir_new(g, N_CONST, (loc_t){0, 0});
  if (!n) return NULL;
  n->ty.kind = TY_TENSOR;
  n->ty.shape = *s;
  int64_t cnt = shape_numel(s);
  n->data = arena_alloc(&g->a, sizeof(float) * (size_t)(cnt ? cnt : 1));
  if (!n->data) return NULL;
  if (data) memcpy(n->data, data, sizeof(float) * (size_t)cnt);
  return n;
}

node *ir_var(temper_graph *g, const char *name, const shape_t *s) {
  node *n = ir_new(g, N_VAR, (loc_t){0, 0});
  if (!n) return NULL;
  n->name = arena_strdup(&g->a, name);
  n->ty.kind = TY_TENSOR;
  n->ty.shape = *s;
  return n->name ? n : NULL;
}

/* Post-order DFS: every node after its inputs, inputs in argument order.
 * Iterative, so a model with 100k chained bindings cannot overflow the stack. */
typedef struct visit { node *n; int next; } visit;

node **ir_topo(arena *scratch, node *root, int *n) {
  int cap = 64, len = 0, sp = 0, scap = 64;
  node **out = malloc(sizeof(node *) * (size_t)cap);
  visit *stack = malloc(sizeof(visit) * (size_t)scap);
  size_t vcap = 256, vlen = 0;   /* visited: open addressing on the pointer */
  node **seen = calloc(vcap, sizeof(node *));
  if (!out || !stack || !seen) goto oom;
  stack[sp++] = (visit){root, 0};
  while (sp) {
    visit *top = &stack[sp - 1];
    node *x = top->n;
    if (top->next == 0) {   /* first visit: skip if already emitted */
      size_t h = ((uintptr_t)x >> 4) & (vcap - 1);
      while (seen[h] && seen[h] != x) h = (h + 1) & (vcap - 1);
      if (seen[h]) { sp--; continue; }
      seen[h] = x;
      if (++vlen * 2 > vcap) {
        size_t nc = vcap * 2;
        node **ns = calloc(nc, sizeof(node *));
        if (!ns) goto oom;
        for (size_t i = 0; i < vcap; i++) {
          if (!seen[i]) continue;
          size_t k = ((uintptr_t)seen[i] >> 4) & (nc - 1);
          while (ns[k]) k = (k + 1) & (nc - 1);
          ns[k] = seen[i];
        }
        free(seen);
        seen = ns;
        vcap = nc;
      }
    }
    /* children: the arguments, then the callee (so a function prints next to its call) */
    int n_child = x->n_args + (x->kind == N_CALL && x->callee ? 1 : 0);
    if (top->next < n_child) {
      int k = top->next++;
      node *c = k < x->n_args ? x->args[k] : x->callee;
      if (sp == scap) {
        visit *ns = realloc(stack, sizeof(visit) * (size_t)(scap *= 2));
        if (!ns) goto oom;
        stack = ns;
      }
      stack[sp++] = (visit){c, 0};
      continue;
    }
    sp--;
    if (len == cap) {
      node **no = realloc(out, sizeof(node *) * (size_t)(cap *= 2));
      if (!no) goto oom;
      out = no;
    }
    out[len++] = x;
  }
  node **res = arena_alloc(scratch, sizeof(node *) * (size_t)(len ? len : 1));
  if (res) memcpy(res, out, sizeof(node *) * (size_t)len);
  free(out);
  free(stack);
  free(seen);
  *n = res ? len : 0;
  return res;
oom:
  free(out);
  free(stack);
  free(seen);
  *n = 0;
  return NULL;
}

int *ir_use_counts(arena *scratch, temper_graph *g, node **order, int n) {
  int *uses = arena_alloc(scratch, sizeof(int) * (size_t)(g->n_nodes + 1));
  if (!uses) return NULL;
  for (int i = 0; i < n; i++) {
    node *x = order[i];
    if (x->kind == N_CALL || x->kind == N_TUPLE || x->kind == N_GETITEM)
      for (int j = 0; j < x->n_args; j++) uses[x->args[j]->id]++;
  }
  return uses;
}

const char *ir_op_name(const node *n) {
  if (n->kind != N_CALL) return "expression";
  return n->op >= 0 ? ops_table[n->op].name : "fn";
}

/* ---- public API ---- */
temper_status temper_graph_parse(const char *text, const char *path, temper_graph **graph,
                                 char **err) {
  diag d = {.path = path, .text = text};
  *graph = NULL;
  if (err) *err = NULL;
  temper_status s = parse_graph(text, path, graph, &d);
  if (s == TEMPER_OK) s = typeinfer(*graph, &d);
  if (s != TEMPER_OK) {
    temper_graph_destroy(*graph);
    *graph = NULL;
    if (err) *err = strdup(d.msg);
  }
  return s;
}

void temper_graph_destroy(temper_graph *g) {
  if (!g) return;
  arena_free(&g->a);
  free(g->path);
  free(g->text);
  free(g);
}

char *temper_graph_print(const temper_graph *g) { return print_graph(g); }

node *ir_with_args(temper_graph *g, node *n, node **args) {
  int same = 1;
  for (int i = 0; i < n->n_args; i++) same &= args[i] == n->args[i];
  if (same) return n;
  node *c = ir_new(g, n->kind, n->loc);
  if (!c) return NULL;
  node **na = arena_alloc(&g->a, sizeof(node *) * (size_t)(n->n_args ? n->n_args : 1));
  if (!na) return NULL;
  int id = c->id;
  *c = *n;
  c->id = id;
  c->ty = (type_t){0};
  memcpy(na, args, sizeof(node *) * (size_t)n->n_args);
  c->args = na;
  return c;
}

temper_status ir_rewrite(temper_graph *g, rewrite_fn f, void *ctx, diag *d) {
  arena scratch = {0};
  int n = 0;
  node **order = ir_topo(&scratch, g->main->body, &n);
  node **memo = arena_alloc(&scratch, sizeof(node *) * (size_t)(g->n_nodes + 1));
  node **args = arena_alloc(&scratch, sizeof(node *) * 64);
  if (!order || !memo || !args) { arena_free(&scratch); return diag_fail(d, TEMPER_ENOMEM, "out of memory"); }
  for (int i = 0; i < n; i++) {
    node *x = order[i];
    if (x->kind == N_VAR || x->kind == N_CONST || x->kind == N_FUNC) { memo[x->id] = x; continue; }
    for (int j = 0; j < x->n_args; j++) args[j] = memo[x->args[j]->id];
    node *r = f(g, x, args, ctx, d);
    if (!r) {
      arena_free(&scratch);
      return d->status != TEMPER_OK ? d->status : diag_fail(d, TEMPER_ENOMEM, "out of memory");
    }
    memo[x->id] = r;
    /* give the replacement a type at once so later steps can inspect it */
    if (r->ty.kind == TY_NONE || r != x) {
      temper_status s = typeinfer_node(g, r, d);
      if (s != TEMPER_OK) { arena_free(&scratch); return s; }
    }
  }
  g->main->body = memo[g->main->body->id];
  arena_free(&scratch);
  return g->a.failed ? diag_fail(d, TEMPER_ENOMEM, "out of memory") : TEMPER_OK;
}
