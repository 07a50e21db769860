/* print.c: graph IR → the text format. Bindings are numbered with one counter
 * across nested functions, as TVM's astext() does; print∘parse∘print = print. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "compiler_int.h"

typedef struct printer {
  strbuf out;
  int *num;        /* binding number per node id, -1 if none */
  int counter;
  int n_meta;
} printer;

static void print_shape(strbuf *b, const shape_t *s) {
  if (s->ndim == 0) { strbuf_printf(b, "float32"); return; }
  strbuf_printf(b, "Tensor[(");
  for (int i = 0; i < s->ndim; i++) strbuf_printf(b, "%s%lld", i ? ", " : "", (long long)s->d[i]);
  strbuf_printf(b, "), float32]");
}

static void print_ty(strbuf *b, const type_t *t) {
  if (t->kind == TY_TUPLE) {
    strbuf_printf(b, "(");
    for (int i = 0; i < t->n_fields; i++) {
      if (i) strbuf_printf(b, ", ");
      print_shape(b, &t->fields[i]);
    }
    strbuf_printf(b, "%s)", t->n_fields == 1 ? "," : "");
  } else {
    print_shape(b, &t->shape);
  }
}

void print_type(char *buf, size_t n, const type_t *t) {
  strbuf b = {0};
  print_ty(&b, t);
  snprintf(buf, n, "%s", b.s ? b.s : "?");
  free(b.s);
}

static void print_float(strbuf *b, double f) { strbuf_printf(b, "%.9gf", f); }

static void print_attrs(strbuf *b, const node *n) {
  attrs_t def;
  ops_default_attrs(n->op, &def);
  for (int id = 0; id < ATTR_COUNT; id++) {
    if (!(ops_table[n->op].attrs & (1ull << id))) continue;
    const attr_val *v = &n->attrs->v[id], *dv = &def.v[id];
    int same = v->n == dv->n && !memcmp(v->i, dv->i, sizeof v->i) && v->f == dv->f && !strcmp(v->s, dv->s);
    if (same) continue;
    strbuf_printf(b, ", %s=", attr_names[id]);
    switch (attr_kinds[id]) {
    case AK_INT: strbuf_printf(b, "%lld", (long long)v->i[0]); break;
    case AK_BOOL: strbuf_printf(b, "%s", v->i[0] ? "True" : "False"); break;
    case AK_FLOAT: print_float(b, v->f); break;
    case AK_STR: strbuf_printf(b, "\"%s\"", v->s); break;
    case AK_INT2: case AK_PAD: case AK_INTS:
      strbuf_printf(b, "[");
      for (int i = 0; i < v->n; i++) strbuf_printf(b, "%s%lld", i ? ", " : "", (long long)v->i[i]);
      strbuf_printf(b, "]");
      break;
    }
  }
}

static void print_ref(printer *p, const node *n) {
  if (n->kind == N_VAR) strbuf_printf(&p->out, "%%%s", n->name);
  else if (n->kind == N_CONST && n->ty.shape.ndim == 0) print_float(&p->out, n->data[0]);
  else if (n->kind == N_CONST) strbuf_printf(&p->out, "meta[relay.Constant][%d]", p->num[n->id]);
  else if (p->num[n->id] >= 0) strbuf_printf(&p->out, "%%%d", p->num[n->id]);
  else strbuf_printf(&p->out, "<unbound>");
}

static void print_fn(printer *p, const node *fn, int indent, int is_main);

/* the right-hand side of a binding (or the result expression) */
static void print_value(printer *p, const node *n, int indent) {
  strbuf *b = &p->out;
  switch (n->kind) {
  case N_CALL:
    if (n->op >= 0) {
      strbuf_printf(b, "%s(", ops_table[n->op].name);
      if (n->op == OP_CONCATENATE) strbuf_printf(b, "(");
      for (int i = 0; i < n->n_args; i++) {
        if (i) strbuf_printf(b, ", ");
        print_ref(p, n->args[i]);
      }
      if (n->op == OP_CONCATENATE) strbuf_printf(b, n->n_args == 1 ? ",)" : ")");
      print_attrs(b, n);
    } else {
      print_ref(p, n->callee);
      strbuf_printf(b, "(");
      for (int i = 0; i < n->n_args; i++) {
        if (i) strbuf_printf(b, ", ");
        print_ref(p, n->args[i]);
      }
    }
    strbuf_printf(b, ")");
    break;
  case N_TUPLE:
    strbuf_printf(b, "(");
    for (int i = 0; i < n->n_args; i++) {
      if (i) strbuf_printf(b, ", ");
      print_ref(p, n->args[i]);
    }
    strbuf_printf(b, "%s)", n->n_args == 1 ? "," : "");
    break;
  case N_GETITEM:
    print_ref(p, n->args[0]);
    strbuf_printf(b, ".%d", n->index);
    break;
  case N_FUNC:
    strbuf_printf(b, "fn ");
    print_fn(p, n, indent, 0);
    break;
  case N_CONST:
    if (n->ty.shape.ndim != 0 && p->num[n->id] < 0) p->num[n->id] = p->n_meta++;
    print_ref(p, n);
    break;
  case N_VAR:
    print_ref(p, n);
    break;
  }
}

static void print_fn(printer *p, const node *fn, int indent, int is_main) {
  strbuf *b = &p->out;
  strbuf_printf(b, "(");
  for (int i = 0; i < fn->n_params; i++) {
    strbuf_printf(b, "%s%%%s: ", i ? ", " : "", fn->params[i]->name);
    print_ty(b, &fn->params[i]->ty);
  }
  if (fn->primitive) strbuf_printf(b, "%sPrimitive=1", fn->n_params ? ", " : "");
  strbuf_printf(b, ")");
  const type_t *rt = fn->body && fn->body->ty.kind != TY_NONE ? &fn->body->ty : &fn->ret_ty_decl;
  if (rt->kind != TY_NONE) {
    strbuf_printf(b, " -> ");
    print_ty(b, rt);
  }
  strbuf_printf(b, " {\n");
  arena scratch = {0};
  int n = 0;
  node **order = ir_topo(&scratch, fn->body, &n);
  if (!order) b->failed = 1;
  for (int i = 0; i < n; i++) {
    node *x = order[i];
    if (x == fn->body || x->kind == N_VAR) continue;
    if (x->kind == N_CONST && x->ty.shape.ndim == 0) continue;
    if (x->kind == N_CONST) {   /* tensors print inline as metadata references */
      if (p->num[x->id] < 0) p->num[x->id] = p->n_meta++;
      continue;
    }
    p->num[x->id] = p->counter++;
    strbuf_printf(b, "%*s%%%d = ", indent + 2, "", p->num[x->id]);
    print_value(p, x, indent + 2);
    strbuf_printf(b, ";\n");
  }
  strbuf_printf(b, "%*s", indent + 2, "");
  print_value(p, fn->body, indent + 2);
  strbuf_printf(b, "\n%*s}", indent, "");
  (void)is_main;
  arena_free(&scratch);
}

char *print_func(const node *fn, int is_main) {
  int max_id = 0;
  arena scratch = {0};
  /* ids can be anything below the graph's counter; size the table by scan */
  int n = 0;
  node **order = ir_topo(&scratch, (node *)fn, &n);
  for (int i = 0; i < n; i++) {
    if (order[i]->id > max_id) max_id = order[i]->id;
    if (order[i]->kind == N_FUNC && order[i]->body) {
      int m = 0;
      node **inner = ir_topo(&scratch, order[i]->body, &m);
      for (int j = 0; j < m; j++)
        if (inner[j]->id > max_id) max_id = inner[j]->id;
    }
  }
  printer p = {0};
  p.num = malloc(sizeof(int) * (size_t)(max_id + 1));
  if (!p.num || scratch.failed) { arena_free(&scratch); free(p.num); return NULL; }
  for (int i = 0; i <= max_id; i++) p.num[i] = -1;
  if (is_main) strbuf_printf(&p.out, "#[version = \"0.0.5\"]\ndef @main");
  else strbuf_printf(&p.out, "fn ");
  print_fn(&p, fn, 0, is_main);
  strbuf_printf(&p.out, "\n");
  arena_free(&scratch);
  free(p.num);
  if (p.out.failed) { free(p.out.s); return NULL; }
  return p.out.s;
}

char *print_graph(const temper_graph *g) { return print_func(g->main, 1); }
