/* layout.c: weight packing for the vectorized conv2d schedule. A conv2d with
 * groups == 1 reads its weight as OIHW<v>o (v = the target's vector width):
 *
 *   conv2d(x, W)  →  conv2d(x, layout_transform(W, "OIHW", "OIHW16o"))
 *
 * With W constant the transform folds at compile time (fold.c); otherwise it
 * becomes a kernel of its own. The NCHWc activation layout comes later. */
#include <stdio.h>
#include <string.h>
#include "compiler_int.h"

static node *pack_node(temper_graph *g, node *n, node **args, void *ctx, diag *d) {
  (void)d;
  int vec = *(int *)ctx;
  if (n->kind == N_CALL && n->op == OP_CONV2D && n->attrs->v[ATTR_GROUPS].i[0] == 1 &&
      !strcmp(n->attrs->v[ATTR_KERNEL_LAYOUT].s, "OIHW")) {
    node *lt = ir_call(g, OP_LAYOUT_TRANSFORM, 1, &args[1], NULL);
    if (!lt) return NULL;
    strcpy(lt->attrs->v[ATTR_SRC_LAYOUT].s, "OIHW");
    snprintf(lt->attrs->v[ATTR_DST_LAYOUT].s, sizeof lt->attrs->v[ATTR_DST_LAYOUT].s, "OIHW%do", vec);
    node *nargs[2] = {args[0], lt};
    node *c = ir_call(g, OP_CONV2D, 2, nargs, n->attrs);
    if (!c) return NULL;
    c->loc = n->loc;
    snprintf(c->attrs->v[ATTR_KERNEL_LAYOUT].s, sizeof c->attrs->v[ATTR_KERNEL_LAYOUT].s, "OIHW%do", vec);
    c->attrs->v[ATTR_CHANNELS].i[0] = n->ty.shape.d[1];
    return c;
  }
  return ir_with_args(g, n, args);
}

/* layout_pack: needs types; keeps types; conv2d weights become OIHW<vec>o */
temper_status layout_pack(temper_graph *g, int vec, diag *d) { return ir_rewrite(g, pack_node, &vec, d); }
