/* fold.c: binding parameters to data, constant folding, and folding a
 * per-channel multiply into the preceding conv2d's weights:
 *
 *   multiply(conv2d(x, W), s[K,1,1])  →  conv2d(x, W·s)      (W, s constant,
 *                                                              conv used once)
 * Every op whose inputs are all constant is evaluated by the reference
 * interpreter at compile time (e.g. packing a weight into OIHW16o). */
#include <stdlib.h>
#include <string.h>
#include "compiler_int.h"

temper_status bind_params(temper_graph *g, float *const *values, diag *d) {
  node *fn = g->main;
  int kept = 0;
  node **vars = arena_alloc(&g->a, sizeof(node *) * (size_t)(fn->n_params ? fn->n_params : 1));
  node **memo_from = arena_alloc(&g->a, sizeof(node *) * (size_t)(fn->n_params ? fn->n_params : 1));
  node **memo_to = arena_alloc(&g->a, sizeof(node *) * (size_t)(fn->n_params ? fn->n_params : 1));
  if (!vars || !memo_from || !memo_to) return diag_fail(d, TEMPER_ENOMEM, "out of memory");
  int nb = 0;
  for (int i = 0; i < fn->n_params; i++) {
    node *p = fn->params[i];
    if (!values[i]) { vars[kept++] = p; continue; }
    node *c = ir_const(g, &p->ty.shape, values[i]);
    if (!c) return diag_fail(d, TEMPER_ENOMEM, "out of memory");
    c->name = p->name;
    memo_from[nb] = p;
    memo_to[nb++] = c;
  }
  /* substitute: vars are leaves, so one pass over the nodes suffices */
  arena scratch = {0};
  int n = 0;
  node **order = ir_topo(&scratch, fn->body, &n);
  if (!order) { arena_free(&scratch); return diag_fail(d, TEMPER_ENOMEM, "out of memory"); }
  for (int i = 0; i < n; i++)
    for (int j = 0; j < order[i]->n_args; j++)
      for (int k = 0; k < nb; k++)
        if (order[i]->args[j] == memo_from[k]) order[i]->args[j] = memo_to[k];
  for (int k = 0; k < nb; k++)
    if (fn->body == memo_from[k]) fn->body = memo_to[k];
  arena_free(&scratch);
  fn->params = vars;
  fn->n_params = kept;
  return TEMPER_OK;
}

typedef struct fold_ctx { int *uses; } fold_ctx;

static int all_const(node **args, int n) {
  for (int i = 0; i < n; i++)
    if (args[i]->kind != N_CONST) return 0;
  return 1;
}

static node *eval_const(temper_graph *g, node *n, node **args, diag *d) {
  node *call = ir_with_args(g, n, args);
  if (!call || (call != n && typeinfer_node(g, call, d))) return NULL;
  const float *ins[64];
  for (int i = 0; i < n->n_args; i++) ins[i] = args[i]->data;
  node *c = ir_const(g, &call->ty.shape, NULL);
  if (!c) return NULL;
  float *outs[1] = {c->data};
  return ref_eval_op(call, ins, outs, d) == TEMPER_OK ? c : NULL;
}

/* s broadcasts over [N, K, H, W] only along K: shape [K,1,1] or [1,K,1,1] */
static int per_channel(const shape_t *s, int64_t K) {
  if (s->ndim == 3) return s->d[0] == K && s->d[1] == 1 && s->d[2] == 1;
  if (s->ndim == 4) return s->d[0] == 1 && s->d[1] == K && s->d[2] == 1 && s->d[3] == 1;
  return 0;
}

static node *fold_scale(temper_graph *g, node *conv, node *s) {
  node *w = conv->args[1];
  if (strcmp(conv->attrs->v[ATTR_KERNEL_LAYOUT].s, "OIHW")) return NULL;
  int64_t K = w->ty.shape.d[0], per = shape_numel(&w->ty.shape) / K;
  node *nw = ir_const(g, &w->ty.shape, w->data);
  if (!nw) return NULL;
  for (int64_t k = 0; k < K; k++)
    for (int64_t i = 0; i < per; i++) nw->data[k * per + i] *= s->data[k];
  node *args[2] = {conv->args[0], nw};
  node *c = ir_call(g, OP_CONV2D, 2, args, conv->attrs);
  if (c) c->loc = conv->loc;
  return c;
}

static node *fold_node(temper_graph *g, node *n, node **args, void *vctx, diag *d) {
  fold_ctx *ctx = vctx;
  if (n->kind == N_CALL && n->op >= 0 && n->ty.kind == TY_TENSOR && all_const(args, n->n_args))
    return eval_const(g, n, args, d);
  if (n->kind == N_CALL && n->op == OP_MULTIPLY) {
    for (int i = 0; i < 2; i++) {
      node *c = args[i], *s = args[1 - i];
      if (c->kind == N_CALL && c->op == OP_CONV2D && s->kind == N_CONST && c->args[1]->kind == N_CONST &&
          ctx->uses[n->args[i]->id] == 1 && per_channel(&s->ty.shape, c->ty.shape.d[1]) &&
          shape_eq(&c->ty.shape, &n->ty.shape)) {
        node *f = fold_scale(g, c, s);
        if (f) return f;
      }
    }
  }
  return ir_with_args(g, n, args);
}

/* fold_constants: needs types; keeps types */
temper_status fold_constants(temper_graph *g, diag *d) {
  arena scratch = {0};
  int n = 0;
  node **order = ir_topo(&scratch, g->main->body, &n);
  fold_ctx ctx = {order ? ir_use_counts(&scratch, g, order, n) : NULL};
  if (!ctx.uses) { arena_free(&scratch); return diag_fail(d, TEMPER_ENOMEM, "out of memory"); }
  temper_status s = ir_rewrite(g, fold_node, &ctx, d);
  arena_free(&scratch);
  return s;
}
