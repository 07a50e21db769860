/* layout.c: AlterOpLayout. Each conv2d takes the blocked layouts its
 * schedule config asks for (NCHW<ib>c in, OIHW<ib>i<ob>o weights, NCHW<ob>c
 * out); elementwise ops, bias and residual adds and pooling keep the blocked
 * layout; a layout_transform is inserted only where neighbours disagree (a
 * conv2d reads its producer's blocks as they are where its template can:
 * config_reads_block), and at the model's inputs and outputs, which stay NCHW:
 *
 *   %x ─▶ transform(NCHW→NCHW16c) ─▶ conv2d ─▶ add(bias[K/16,1,1,16]) ─▶ relu ─▶
 *         conv2d (ic_bn 16: no transform) ─▶ ... ─▶ transform(NCHW16c→NCHW) ─▶ dense
 *
 * Weight transforms and bias reshapes fold at compile time (fold.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine.h"
#include "space.h"

typedef struct conv_memo { int id, blk; node *v; } conv_memo;

typedef struct alter {
  const pipeline_opts *o;
  int *blk;            /* node id → channel block of its layout (0: NCHW) */
  int cap;
  conv_memo *memo;     /* layout conversions made, so a value converts once */
  int n_memo, cap_memo;
  const int *uses;     /* node id → uses, in the graph before the rewrite */
  node **users;        /* node id → its one user there (where uses is 1) */
  diag *d;
} alter;

static int get_blk(alter *a, const node *n) { return n->id < a->cap ? a->blk[n->id] : 0; }

static int set_blk(alter *a, const node *n, int b) {
  if (n->id >= a->cap) {
    int nc = (n->id + 1) * 2;
    int *nb = realloc(a->blk, sizeof(int) * (size_t)nc);
    if (!nb) return -1;
    memset(nb + a->cap, 0, sizeof(int) * (size_t)(nc - a->cap));
    a->blk = nb;
    a->cap = nc;
  }
  a->blk[n->id] = b;
  return 0;
}

static void layout_name(char *buf, size_t n, const char *base, int b, char sub) {
  if (b) snprintf(buf, n, "%s%d%c", base, b, sub);
  else snprintf(buf, n, "%s", base);
}

/* v in NCHW<b>c (b = 0: NCHW), converting once per value */
static node *to_block(temper_graph *g, alter *a, node *v, int b) {
  int have = get_blk(a, v);
  if (have == b) return v;
  for (int i = 0; i < a->n_memo; i++)
    if (a->memo[i].id == v->id && a->memo[i].blk == b) return a->memo[i].v;
  node *t = ir_call(g, OP_LAYOUT_TRANSFORM, 1, &v, NULL);
  if (!t) return NULL;
  layout_name(t->attrs->v[ATTR_SRC_LAYOUT].s, sizeof t->attrs->v[0].s, "NCHW", have, 'c');
  layout_name(t->attrs->v[ATTR_DST_LAYOUT].s, sizeof t->attrs->v[0].s, "NCHW", b, 'c');
  if (typeinfer_node(g, t, a->d) || set_blk(a, t, b)) return NULL;
  if (a->n_memo == a->cap_memo) {
    a->cap_memo = a->cap_memo ? a->cap_memo * 2 : 32;
    conv_memo *nm = realloc(a->memo, sizeof *nm * (size_t)a->cap_memo);
    if (!nm) return NULL;
    a->memo = nm;
  }
  a->memo[a->n_memo++] = (conv_memo){v->id, b, t};
  return t;
}

static int is_unary(int op) { return op >= 0 && ops_table[op].pat == PAT_ELEMWISE && ops_table[op].max_args == 1; }
static int is_binary(int op) { return op == OP_ADD || op == OP_SUBTRACT || op == OP_MULTIPLY || op == OP_DIVIDE || op == OP_PRELU; }

/* channels of a per-channel operand of an NCHW activation ([C,1,1], [1,C,1,1]), else 0 */
static int64_t per_channel(const shape_t *s, const shape_t *act) {
  int64_t C = act->d[1];
  if (s->ndim == 3 && s->d[0] == C && s->d[1] == 1 && s->d[2] == 1) return C;
  if (s->ndim == 4 && s->d[0] == 1 && s->d[1] == C && s->d[2] == 1 && s->d[3] == 1) return C;
  return 0;
}

static int all_ones(const shape_t *s) {
  for (int i = 0; i < s->ndim; i++)
    if (s->d[i] != 1) return 0;
  return 1;
}

static node *reshape_blocked(temper_graph *g, node *v, int64_t C, int b) {
  node *r = ir_call(g, OP_RESHAPE, 1, &v, NULL);
  if (!r) return NULL;
  attr_val *ns = &r->attrs->v[ATTR_NEWSHAPE];
  ns->n = 4;
  ns->i[0] = C / b;
  ns->i[1] = 1;
  ns->i[2] = 1;
  ns->i[3] = b;
  return r;
}

/* conv2d(x, w) → contrib_conv2d_winograd_without_weight_transform(x in
 * NCHW<ib>c — or in the producer's blocks, read as they are —,
 * layout_transform(winograd_weight_transform(w), HWIO → OHWI<ob>o)),
 * the weight side folding to one constant */
static node *alter_winograd(temper_graph *g, alter *a, node *n, node **args, const task_space *sp, const sched_config *cfg,
                            const conv_layouts *l) {
  node *x = to_block(g, a, args[0], (int)l->in_blk);
  node *u = ir_call(g, OP_WINOGRAD_WEIGHT, 1, &args[1], NULL);
  if (!x || !u) return NULL;
  u->attrs->v[ATTR_TILE_SIZE].i[0] = l->tile;
  u->attrs->v[ATTR_STRIDES].i[0] = sp->w.sh, u->attrs->v[ATTR_STRIDES].i[1] = sp->w.sw;
  node *ut = ir_call(g, OP_LAYOUT_TRANSFORM, 1, &u, NULL);
  if (!ut) return NULL;
  strcpy(ut->attrs->v[ATTR_SRC_LAYOUT].s, "HWIO");
  snprintf(ut->attrs->v[ATTR_DST_LAYOUT].s, sizeof ut->attrs->v[0].s, "OHWI%lldo", (long long)l->ob);
  node *nargs[2] = {x, ut};
  node *c = ir_call(g, OP_CONV2D_WINOGRAD, 2, nargs, n->attrs);
  if (!c) return NULL;
  c->loc = n->loc;
  config_set_attrs(sp, cfg, l, c->attrs);
  return set_blk(a, c, (int)l->out_blk) ? NULL : c;
}

static int join_rule(const conv_workload *wa, int ta, int64_t a_out, const conv_workload *wb, int tb, int64_t b_in, int64_t b_ki,
                     const pipeline_opts *o);

/* an elementwise op fuse would put in a conv2d's epilogue, reading the
 * conv2d's chain as its first argument: unary, or with a constant or a
 * parameter (a bias) */
static int epilogue_op(const node *x) {
  return is_unary(x->op) || ((is_binary(x->op) || x->op == OP_BIAS_ADD) && x->n_args == 2 && x->args[1]->kind != N_CALL);
}

/* The conv2d x comes from through its own elementwise ops (unary, or
 * with a constant or a parameter: a bias), each value on the way used
 * once — the pair fuse_with offers to a join. x is the rewritten value,
 * old the same value before the rewrite (whose use counts a->uses has);
 * *old_conv the producer before it. */
static const node *producer_conv(const alter *a, const node *x, const node *old, const node **old_conv) {
  for (;;) {
    if (!a->uses || x->kind != N_CALL || old->kind != N_CALL || a->uses[old->id] != 1 || x->n_args < 1 ||
        (x->op == OP_CONV2D) != (old->op == OP_CONV2D))
      return NULL;
    if (x->op == OP_CONV2D) {
      *old_conv = old;
      return x->attrs->config ? x : NULL;
    }
    /* the rewrite keeps each op's first argument first (a bias_add may become an add) */
    if (!epilogue_op(old)) return NULL;
    x = x->args[0];
    old = old->args[0];
  }
}

/* The conv2d that reads n's output through elementwise ops of n's own
 * (producer_conv's chain, forward), in the graph before the rewrite, each
 * value on the way used once: the consumer fuse_with would offer a join */
static const node *consumer_conv(const alter *a, const node *n) {
  for (const node *x = n;;) {
    if (!a->uses || a->uses[x->id] != 1 || !a->users[x->id]) return NULL;
    const node *u = a->users[x->id];
    if (u->kind != N_CALL || u->n_args < 1 || u->args[0] != x) return NULL;
    if (u->op == OP_CONV2D) return u;
    if (!epilogue_op(u)) return NULL;
    x = u;
  }
}

/* a conv2d's neighbours as its chooser's site sees them (conv_site.join_loss):
 * the producer it could join (p), the depthwise consumer that could join it (has_c) */
typedef struct join_site {
  const node *p;
  conv_workload wp;
  int64_t p_out;
  int has_c;
  task_space sc;             /* the consumer's space (its workload: sc.w) */
  int64_t out_floats;
  const pipeline_opts *o;
} join_site;

/* Whether config c of the expand 1×1 makes the join with the depthwise
 * conv2d after it: its output block, which the depthwise's default reads
 * as it is where it is one of its blocks (config_default_at) */
static int joins_consumer(const join_site *j, const task_space *s, const sched_config *c, const conv_layouts *l) {
  if (c->tmpl != TMPL_1X1) return 0;
  sched_config dc;
  config_default_at(&j->sc, l->out_blk, 1, &dc);
  return dc.tmpl == TMPL_DEPTHWISE && cfg_get(&j->sc, &dc, K_C_BN) == l->out_blk &&
         join_rule(&s->w, TMPL_1X1, l->out_blk, &j->sc.w, TMPL_DEPTHWISE, l->out_blk, 1, j->o);
}

static int64_t site_join_loss(const conv_site *site, const task_space *s, const sched_config *c) {
  const join_site *j = site->join_ctx;
  conv_layouts l;
  config_layouts(s, c, site->in_block, &l);
  int64_t loss = 0;
  if (j->p && !join_rule(&j->wp, j->p->attrs->config->tmpl, j->p_out, &s->w, c->tmpl, l.in_blk, l.ki, j->o)) loss += site->in_floats;
  if (j->has_c && !joins_consumer(j, s, c, &l)) loss += j->out_floats;
  return loss;
}

/* The joins a config of n decides: with its producer, where that is a
 * conv2d of a template that joins a consumer and is not itself joined to
 * its own producer (a kernel joins two conv2d, the producer side first:
 * fuse_with); with its consumer, where n is a 1×1 that could be the
 * expand of a strided depthwise after it (conv2d_pwdw.c). */
static void site_join(alter *a, node *n, node **args, join_site *j, conv_site *site) {
  j->p = NULL;
  j->has_c = 0;
  j->o = a->o;
  if (a->o->no_dw_fusion) return;
  const node *old_p = NULL, *old_q = NULL;
  const node *p = producer_conv(a, args[0], n->args[0], &old_p);
  int tp = p && !workload_of(p, &j->wp) ? (int)p->attrs->config->tmpl : -1;
  if (tp == TMPL_1X1 || tp == TMPL_DEPTHWISE) {
    const node *q = producer_conv(a, p->args[0], old_p->args[0], &old_q);
    conv_workload wq;
    if (!(q && !workload_of(q, &wq) &&
          join_rule(&wq, q->attrs->config->tmpl, layout_block(q->attrs->v[ATTR_OUT_LAYOUT].s, 'c'), &j->wp, tp,
                    layout_block(p->attrs->v[ATTR_DATA_LAYOUT].s, 'c'), layout_block(p->attrs->v[ATTR_KERNEL_LAYOUT].s, 'i'), a->o))) {
      j->p = p;
      j->p_out = layout_block(p->attrs->v[ATTR_OUT_LAYOUT].s, 'c');
    }
  }
  conv_workload w, wc;
  const node *u = consumer_conv(a, n);
  if (u && !workload_of(n, &w) && w.R == 1 && w.S == 1 && w.G == 1 && !workload_of(u, &wc) && wc.G > 1 && wc.G == wc.C && wc.G == wc.K) {
    j->has_c = 1;
    space_build_for(&wc, a->o->vec, a->o->l1d, a->o->l2, &j->sc);   /* once: each record the chooser weighs asks for the depthwise's default */
    j->out_floats = shape_numel(&n->ty.shape);
  }
  if (j->p || j->has_c) {
    site->join_loss = site_join_loss;
    site->join_ctx = j;
  }
}

/* the config of a conv2d: the chooser's, or the template default */
static int choose_config(alter *a, node *n, node **args, const task_space *sp, sched_config *cfg) {
  int chosen = 0;
  if (a->o->choose) {
    char key[256], err[512] = "";
    workload_key(&sp->w, key, sizeof key);
    conv_site site = {get_blk(a, args[0]), shape_numel(&args[0]->ty.shape), NULL, NULL};
    join_site j;
    site_join(a, n, args, &j, &site);
    chosen = a->o->choose(a->o->ctx, key, sp, &site, cfg, err, sizeof err);
    if (chosen < 0) {
      diag_error(a->d, n->loc, "nn.conv2d %s: %s", key, err);
      return -1;
    }
  }
  if (!chosen) config_default_at(sp, get_blk(a, args[0]), 1, cfg);
  /* the Winograd weight transform is made at compile time: constant weights only */
  if (cfg->tmpl == TMPL_WINOGRAD && args[1]->kind != N_CONST) config_default_at(sp, get_blk(a, args[0]), 0, cfg);
  return 0;
}

static node *alter_conv(temper_graph *g, alter *a, node *n, node **args) {
  conv_workload w;
  workload_of(n, &w);
  task_space sp;
  space_build_for(&w, a->o->vec, a->o->l1d, a->o->l2, &sp);
  sched_config *cfg = arena_alloc(&g->a, sizeof *cfg);   /* the node keeps it (attrs->config) */
  if (!cfg) return NULL;
  if (choose_config(a, n, args, &sp, cfg)) return NULL;
  /* the producer's blocks are read as they are where the template can
   * (config_reads_block); the test hook block_inputs refuses NCHW */
  int pb = get_blk(a, args[0]);
  conv_layouts l;
  config_layouts(&sp, cfg, pb == 0 && a->o->block_inputs ? -1 : pb, &l);
  if (cfg->tmpl == TMPL_WINOGRAD) return alter_winograd(g, a, n, args, &sp, cfg, &l);
  node *x = to_block(g, a, args[0], (int)l.in_blk);
  node *wt = ir_call(g, OP_LAYOUT_TRANSFORM, 1, &args[1], NULL);
  if (!x || !wt) return NULL;
  strcpy(wt->attrs->v[ATTR_SRC_LAYOUT].s, "OIHW");
  snprintf(wt->attrs->v[ATTR_DST_LAYOUT].s, sizeof wt->attrs->v[0].s, "OIHW%lldi%lldo", (long long)l.ki, (long long)l.ob);
  node *nargs[2] = {x, wt};
  node *c = ir_call(g, OP_CONV2D, 2, nargs, n->attrs);
  if (!c) return NULL;
  c->loc = n->loc;
  config_set_attrs(&sp, cfg, &l, c->attrs);
  return set_blk(a, c, (int)l.out_blk) ? NULL : c;
}

/* The channel block a concatenation along the channels of 4-d values
 * takes: one that divides every field's channels (so the blocked fields
 * concatenate along the channel-block axis), of the blocks its fields
 * have, the one that converts the fewest floats; 0 (NCHW) where no field
 * is blocked or no block divides them all. GoogLeNet's and DenseNet's
 * concatenations of conv2d outputs stayed NCHW: each branch's conv2d wrote
 * NCHW, and the pooling and conv2d after them read NCHW or converted it
 * back — the 3×3 max pools of GoogLeNet's inception blocks ran scalar in
 * NCHW, 10 of its 20 ms on Zen 5 (bench/RESULTS.md, "Every network of
 * a torchvision sample faster than ONNX Runtime untuned"). */
static int concat_block(alter *a, const node *n, node *const *args) {
  if (n->n_args < 1 || n->n_args > 64 || n->ty.shape.ndim != 4) return 0;
  int ax = (int)n->attrs->v[ATTR_AXIS].i[0];
  if (ax != 1 && ax != -3) return 0;
  int best = 0;
  int64_t best_cost = -1;
  for (int i = 0; i < n->n_args; i++) {
    int b = get_blk(a, args[i]);
    if (!b) continue;
    int64_t cost = 0;
    for (int k = 0; k < n->n_args && cost >= 0; k++) {
      const shape_t *s = &n->args[k]->ty.shape;   /* before the rewrite: NCHW */
      if (s->ndim != 4 || s->d[1] % b) cost = -1;
      else if (get_blk(a, args[k]) != b) cost += shape_numel(s);
    }
    if (cost >= 0 && (best_cost < 0 || cost < best_cost || (cost == best_cost && b > best))) best = b, best_cost = cost;
  }
  return best;
}

static node *alter_node(temper_graph *g, node *n, node **args, void *vctx, diag *d) {
  alter *a = vctx;
  (void)d;
  conv_workload w;
  if (n->kind == N_CALL && n->op == OP_CONV2D && !n->attrs->v[ATTR_SCHEDULE].s[0] && !workload_of(n, &w) &&
      !strcmp(n->attrs->v[ATTR_DATA_LAYOUT].s, "NCHW") && !strcmp(n->attrs->v[ATTR_KERNEL_LAYOUT].s, "OIHW"))
    return alter_conv(g, a, n, args);
  int b0 = n->n_args ? get_blk(a, args[0]) : 0;
  if (n->kind == N_CALL && is_unary(n->op) && b0) {
    node *c = ir_with_args(g, n, args);
    return c && !set_blk(a, c, b0) ? c : NULL;
  }
  if (n->kind == N_CALL && (is_binary(n->op) || n->op == OP_BIAS_ADD) && n->ty.shape.ndim == 4) {
    int b1 = n->op == OP_BIAS_ADD ? 0 : get_blk(a, args[1]);
    /* the blocked activation operand: blocked and of the result's shape (a
     * squeeze-excite scale [1, C, 1, 1] may come first and be blocked too) */
    int act = b0 && shape_eq(&n->args[0]->ty.shape, &n->ty.shape) ? 0 : 1, B = act ? b1 : b0;
    if (B && shape_eq(&n->args[act]->ty.shape, &n->ty.shape)) {
      node *o = args[1 - act], *oo = n->args[1 - act], *no;
      int64_t C = n->ty.shape.d[1];
      if (n->op == OP_BIAS_ADD && (n->attrs->v[ATTR_AXIS].i[0] == 1 || n->attrs->v[ATTR_AXIS].i[0] == -3))
        no = reshape_blocked(g, o, C, B);
      else if (n->op == OP_BIAS_ADD) no = NULL;
      else if (shape_eq(&oo->ty.shape, &n->ty.shape)) no = to_block(g, a, o, B);
      else if (per_channel(&oo->ty.shape, &n->ty.shape)) {   /* from NCHW: a [1, C, 1, 1] value in any blocks is one copy away */
        node *plain = to_block(g, a, o, 0);
        no = plain ? reshape_blocked(g, plain, C, B) : NULL;
      }
      else if (all_ones(&oo->ty.shape)) no = o;
      else no = NULL;
      if (no) {
        node *na[2];
        na[act] = args[act];
        na[1 - act] = no;
        node *c = ir_call(g, n->op == OP_BIAS_ADD ? OP_ADD : n->op, 2, na, n->op == OP_BIAS_ADD ? NULL : n->attrs);
        if (!c) return NULL;
        c->loc = n->loc;
        return set_blk(a, c, B) ? NULL : c;
      }
    }
  }
  if (n->kind == N_CALL && n->op == OP_CONCATENATE) {
    int b = concat_block(a, n, args);
    if (b) {
      node *blocked[64];
      for (int i = 0; i < n->n_args; i++)
        if (!(blocked[i] = to_block(g, a, args[i], b))) return NULL;
      node *c = ir_call(g, OP_CONCATENATE, n->n_args, blocked, n->attrs);
      if (!c) return NULL;
      c->loc = n->loc;
      c->attrs->v[ATTR_AXIS].i[0] = 1;   /* the channel-block axis of NCHW<b>c (an NCHW -3 is H there) */
      return set_blk(a, c, b) ? NULL : c;
    }
  }
  /* a layer norm over the channels (ConvNeXt's) in its producer's blocks,
   * each a vector of the schedule's (schedules/layer_norm.c) */
  if (n->kind == N_CALL && n->op == OP_LAYER_NORM && n->n_args == 1 && b0 && b0 <= 64 && n->ty.shape.ndim == 4 &&
      (n->attrs->v[ATTR_AXIS].i[0] == 1 || n->attrs->v[ATTR_AXIS].i[0] == -3) && !strcmp(n->attrs->v[ATTR_LAYOUT].s, "NCHW")) {
    node *c = ir_call(g, n->op, 1, args, n->attrs);
    if (!c) return NULL;
    c->loc = n->loc;
    c->attrs->v[ATTR_AXIS].i[0] = 1;
    layout_name(c->attrs->v[ATTR_LAYOUT].s, sizeof c->attrs->v[0].s, "NCHW", b0, 'c');
    return set_blk(a, c, b0) ? NULL : c;
  }
  if (n->kind == N_CALL && (n->op == OP_MAX_POOL2D || n->op == OP_AVG_POOL2D || n->op == OP_GLOBAL_AVG_POOL2D || n->op == OP_GLOBAL_MAX_POOL2D) && b0 &&
      !strcmp(n->attrs->v[ATTR_LAYOUT].s, "NCHW")) {
    node *c = ir_call(g, n->op, 1, args, n->attrs);
    if (!c) return NULL;
    c->loc = n->loc;
    layout_name(c->attrs->v[ATTR_LAYOUT].s, sizeof c->attrs->v[0].s, "NCHW", b0, 'c');
    return set_blk(a, c, b0) ? NULL : c;
  }
  /* anything else reads NCHW */
  node *plain[64];
  for (int i = 0; i < n->n_args; i++)
    if (!(plain[i] = to_block(g, a, args[i], 0))) return NULL;
  return ir_with_args(g, n, plain);
}

/* layout_alter: needs types; keeps types; conv2d in blocked layouts with a
 * schedule attribute; main's inputs and outputs stay NCHW */
temper_status layout_alter(temper_graph *g, const pipeline_opts *o, diag *d) {
  alter a = {.o = o, .d = d};
  arena scratch = {0};
  int n = 0;
  node **order = o->choose ? ir_topo(&scratch, g->main->body, &n) : NULL;
  a.uses = order ? ir_use_counts(&scratch, g, order, n) : NULL;   /* none: no join weighed */
  a.users = a.uses ? arena_alloc(&scratch, sizeof(node *) * (size_t)(g->n_nodes + 1)) : NULL;
  if (!a.users) a.uses = NULL;
  for (int i = 0; a.users && i < n; i++) {
    node *x = order[i];
    if (x->kind == N_CALL || x->kind == N_TUPLE || x->kind == N_GETITEM)
      for (int k = 0; k < x->n_args; k++) a.users[x->args[k]->id] = x;
  }
  temper_status s = ir_rewrite(g, alter_node, &a, d);
  arena_free(&scratch);
  if (!s && get_blk(&a, g->main->body)) {
    node *b = to_block(g, &a, g->main->body, 0);
    if (b) g->main->body = b;
    else s = d->status ? d->status : diag_fail(d, TEMPER_ENOMEM, "out of memory");
  }
  free(a.blk);
  free(a.memo);
  return s;
}

enum {
  DW_ROW_MAX_BYTES = 64 << 10,    /* the joined kernel's row of depthwise output: L1/L2-resident */
  PW_RING_MAX_BYTES = 64 << 10,   /* the expand → depthwise kernel's ring: R expanded rows of one block */
};

/* the L2 the build fits to: the target's (pipeline_opts.l2), else this machine's */
static int64_t target_l2(const pipeline_opts *o) {
  int64_t l1, l2;
  space_caches(&l1, &l2);
  return o && o->l2 ? o->l2 : l2;
}

/* A 1×1 conv2d (a) into the depthwise conv2d it feeds (b), where
 * schedules/conv2d_pwdw.c can run the pair: its config a 1×1 stride-1
 * GEMM whose output block is the depthwise's input block, the depthwise of
 * dilation 1, a ring of R expanded rows of one block within
 * PW_RING_MAX_BYTES. It is made where the depthwise has stride 2 or more
 * (docs/design.md, "The expand into the depthwise"): there the expanded
 * tensor is at least four times the depthwise's output, so this pair saves
 * more than joining the depthwise into the 1×1 after it (one of the two:
 * a kernel joins two conv2d); at stride 1 the two tensors are the same
 * size and the depthwise → 1×1 join, which computes nothing twice, is
 * kept. And, as there, where the expanded tensor, one image, would not
 * stay in L2 between the kernels. */
static int join_pw_dw(const conv_workload *wa, int64_t a_out, const conv_workload *wb, int64_t b_in, const pipeline_opts *o) {
  if (wa->R != 1 || wa->S != 1 || wa->sh != 1 || wa->sw != 1 || wa->pt || wa->pl || wa->pb || wa->pr || wa->G != 1 || wb->dh != 1 ||
      wb->dw != 1)
    return 0;
  if (!a_out || b_in != a_out) return 0;
  if (wb->R * wa->W * a_out * 4 > PW_RING_MAX_BYTES || (o && o->no_pw_fusion)) return 0;
  if (o && o->pw_fusion_all) return 1;
  int64_t l2 = target_l2(o);
  return wb->sh >= 2 && wa->K * wa->H * wa->W * 4 > l2 / 2;
}

/* Whether conv2d a (its workload, template and output block) and the
 * conv2d b it feeds (workload, template, input block and the weights'
 * input block) run as one kernel: the rule of layout_join_dw, on the
 * values a chooser also has for a config it weighs (conv_site.joins). */
static int join_rule(const conv_workload *wa, int ta, int64_t a_out, const conv_workload *wb, int tb, int64_t b_in, int64_t b_ki,
                     const pipeline_opts *o) {
  /* the joined templates run whole vectors of the block (a block of 58
   * channels, 3 vectors and part of one, runs apart) */
  int vec = o && o->vec ? o->vec : 16;
  if (a_out > vec && a_out % vec) return 0;
  if (ta == TMPL_1X1 && tb == TMPL_DEPTHWISE) return join_pw_dw(wa, a_out, wb, b_in, o);
  if (ta != TMPL_DEPTHWISE || tb != TMPL_1X1) return 0;
  if (wb->R != 1 || wb->S != 1 || wb->sh != 1 || wb->sw != 1 || wb->pt || wb->pl || wb->pb || wb->pr || wb->G != 1) return 0;
  if (!a_out || b_in != a_out || !b_ki || b_in % b_ki) return 0;
  /* joined where the depthwise output, one image, would not stay in L2
   * between the two kernels (more than half of it): there the round trip
   * costs; below, the 1×1 apart reads it from L2 and its own schedule
   * (whole-image loops, weights read once) wins (bench/RESULTS.md,
   * "depthwise into the 1×1") */
  int64_t l2 = target_l2(o);
  return wa->K * wb->W * 4 <= DW_ROW_MAX_BYTES && ((o && o->dw_fusion_all) || wa->K * wb->H * wb->W * 4 > l2 / 2);
}

int layout_join_dw(const node *a, const node *b, void *ctx) {
  const sched_config *ca = a->attrs->config, *cb = b->attrs->config;
  conv_workload wa, wb;
  if (a->op != OP_CONV2D || b->op != OP_CONV2D || !ca || !cb || workload_of(a, &wa) || workload_of(b, &wb)) return 0;
  return join_rule(&wa, ca->tmpl, layout_block(a->attrs->v[ATTR_OUT_LAYOUT].s, 'c'), &wb, cb->tmpl,
                   layout_block(b->attrs->v[ATTR_DATA_LAYOUT].s, 'c'), layout_block(b->attrs->v[ATTR_KERNEL_LAYOUT].s, 'i'), ctx);
}
