/* generic.c: the straightforward schedule. One loop nest over the output:
 * the leading dimensions fused into a parallel loop, the last one innermost
 * (left to LLVM's vectorizer); the master op, if any (pooling, a grouped or
 * unpacked conv2d), is a reduction into a scalar register, then the
 * epilogue. */
#include <math.h>
#include <string.h>
#include "schedules.h"

/* in-bounds test 0 <= v < hi */
static lexpr *in_range(lfunc *f, lexpr *v, int64_t hi) {
  return lx_bin(f, LO_AND, lx_bin(f, LO_LE, lx_int(f, 0), v), lx_bin(f, LO_LT, v, lx_int(f, hi)));
}

static lexpr *clamp(lfunc *f, lexpr *v, int64_t hi) {
  return lx_bin(f, LO_MIN, lx_bin(f, LO_MAX, v, lx_int(f, 0)), lx_int(f, hi - 1));
}

/* pooling: a reduction over the window into a scalar slot */
static lexpr *pool_value(prim *p, lstmt *body, lexpr *const *c, int lanes) {
  lfunc *f = p->f;
  const node *m = p->master;
  const shape_t *xs = &m->args[0]->ty.shape;
  const attrs_t *a = m->attrs;
  int global = m->op == OP_GLOBAL_AVG_POOL2D || m->op == OP_GLOBAL_MAX_POOL2D;
  int is_max = m->op == OP_MAX_POOL2D || m->op == OP_GLOBAL_MAX_POOL2D;
  int64_t cb = xs->ndim == 5 ? xs->d[4] : 1;   /* NCHW<cb>c: the inner channel is coordinate 4 */
  int64_t H = xs->d[2], W = xs->d[3];
  int64_t kh = global ? H : a->v[ATTR_POOL_SIZE].i[0], kw = global ? W : a->v[ATTR_POOL_SIZE].i[1];
  int64_t sh = global ? 1 : a->v[ATTR_STRIDES].i[0], sw = global ? 1 : a->v[ATTR_STRIDES].i[1];
  int64_t ph = global ? 0 : a->v[ATTR_PADDING].i[0], pw = global ? 0 : a->v[ATTR_PADDING].i[1];
  int64_t pb = global ? 0 : a->v[ATTR_PADDING].i[2], pr = global ? 0 : a->v[ATTR_PADDING].i[3];
  int64_t dh = global ? 1 : a->v[ATTR_DILATION].i[0], dw = global ? 1 : a->v[ATTR_DILATION].i[1];
  int include_pad = !global && a->v[ATTR_COUNT_INCLUDE_PAD].i[0];
  int buf = epi_param_buf(p, m->args[0]);
  int acc = lf_slot(f, lanes), cnt = lf_slot(f, 1);
  ls_add(f, body, ls_decl(f, acc, lx_flt(f, is_max ? -INFINITY : 0, lanes)));
  ls_add(f, body, ls_decl(f, cnt, lx_flt(f, 0, 1)));
  int vr = lf_var(f, "r"), vs = lf_var(f, "s");
  lstmt *lr = ls_add(f, body, ls_for(f, vr, lx_int(f, 0), lx_int(f, kh), LOOP_SERIAL));
  lstmt *lsb = ls_add(f, lr, ls_for(f, vs, lx_int(f, 0), lx_int(f, kw), LOOP_SERIAL));
  lexpr *ih = lx_add(f, lx_bin(f, LO_SUB, lx_mul(f, c[2], lx_int(f, sh)), lx_int(f, ph)), lx_mul(f, lx_var(f, vr), lx_int(f, dh)));
  lexpr *iw = lx_add(f, lx_bin(f, LO_SUB, lx_mul(f, c[3], lx_int(f, sw)), lx_int(f, pw)), lx_mul(f, lx_var(f, vs), lx_int(f, dw)));
  lexpr *ok = lx_bin(f, LO_AND, in_range(f, ih, H), in_range(f, iw, W));
  lexpr *plane = lx_add(f, lx_mul(f, c[0], lx_int(f, xs->d[1])), c[1]);
  lexpr *idx = lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, plane, lx_int(f, H)), clamp(f, ih, H)), lx_int(f, W)), clamp(f, iw, W));
  if (cb > 1) idx = lx_add(f, lx_mul(f, idx, lx_int(f, cb)), c[4]);
  lexpr *x = lx_load(f, buf, idx, lanes, 1, NULL);   /* lanes > 1: the channel block, contiguous */
  if (is_max) {
    ls_add(f, lsb, ls_set(f, acc, lx_select(f, ok, lx_bin(f, LO_FMAX, lx_slot(f, acc), x), lx_slot(f, acc))));
    return lx_slot(f, acc);
  }
  ls_add(f, lsb, ls_set(f, acc, lx_select(f, ok, lx_bin(f, LO_FADD, lx_slot(f, acc), x), lx_slot(f, acc))));
  lexpr *counted = include_pad ? lx_bin(f, LO_AND, lx_bin(f, LO_LT, ih, lx_int(f, H + pb)), lx_bin(f, LO_LT, iw, lx_int(f, W + pr))) : ok;
  ls_add(f, lsb, ls_set(f, cnt, lx_select(f, counted, lx_bin(f, LO_FADD, lx_slot(f, cnt), lx_flt(f, 1, 1)), lx_slot(f, cnt))));
  return lx_bin(f, LO_FDIV, lx_slot(f, acc), lx_bin(f, LO_FMAX, lx_slot(f, cnt), lx_flt(f, 1, 1)));
}

/* any conv2d (groups, OIHW or packed weights): scalar direct reduction */
static lexpr *conv_value(prim *p, lstmt *body, lexpr *const *c) {
  lfunc *f = p->f;
  const node *m = p->master;
  const shape_t *xs = &m->args[0]->ty.shape, *ws = &m->args[1]->ty.shape;
  const attrs_t *a = m->attrs;
  int64_t C = xs->d[1], H = xs->d[2], W = xs->d[3], K = m->ty.shape.d[1];
  int64_t G = a->v[ATTR_GROUPS].i[0], Cg = C / G, Kg = K / G, R = ws->d[2], S = ws->d[3];
  int blk = 0;
  int xb = epi_param_buf(p, m->args[0]), wb = epi_param_buf(p, m->args[1]);
  int acc = lf_slot(f, 1);
  ls_add(f, body, ls_decl(f, acc, lx_flt(f, 0, 1)));
  int vc = lf_var(f, "c"), vr = lf_var(f, "r"), vs = lf_var(f, "s");
  lstmt *lc = ls_add(f, body, ls_for(f, vc, lx_int(f, 0), lx_int(f, Cg), LOOP_SERIAL));
  lstmt *lr = ls_add(f, lc, ls_for(f, vr, lx_int(f, 0), lx_int(f, R), LOOP_SERIAL));
  lstmt *ls = ls_add(f, lr, ls_for(f, vs, lx_int(f, 0), lx_int(f, S), LOOP_SERIAL));
  lexpr *ih = lx_add(f, lx_bin(f, LO_SUB, lx_mul(f, c[2], lx_int(f, a->v[ATTR_STRIDES].i[0])), lx_int(f, a->v[ATTR_PADDING].i[0])),
                     lx_mul(f, lx_var(f, vr), lx_int(f, a->v[ATTR_DILATION].i[0])));
  lexpr *iw = lx_add(f, lx_bin(f, LO_SUB, lx_mul(f, c[3], lx_int(f, a->v[ATTR_STRIDES].i[1])), lx_int(f, a->v[ATTR_PADDING].i[1])),
                     lx_mul(f, lx_var(f, vs), lx_int(f, a->v[ATTR_DILATION].i[1])));
  lexpr *ok = lx_bin(f, LO_AND, in_range(f, ih, H), in_range(f, iw, W));
  lexpr *ch = lx_add(f, lx_mul(f, lx_bin(f, LO_DIV, c[1], lx_int(f, Kg)), lx_int(f, Cg)), lx_var(f, vc));
  lexpr *xi = lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, c[0], lx_int(f, C)), ch), lx_int(f, H)), clamp(f, ih, H)),
                               lx_int(f, W)), clamp(f, iw, W));
  lexpr *crs = lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, lx_var(f, vc), lx_int(f, R)), lx_var(f, vr)), lx_int(f, S)), lx_var(f, vs));
  lexpr *wi = blk ? lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, lx_bin(f, LO_DIV, c[1], lx_int(f, blk)), lx_int(f, Cg * R * S)), crs), lx_int(f, blk)),
                           lx_bin(f, LO_MOD, c[1], lx_int(f, blk)))
                  : lx_add(f, lx_mul(f, c[1], lx_int(f, Cg * R * S)), crs);
  lexpr *prod = lx_bin(f, LO_FMUL, lx_load(f, xb, xi, 1, 1, NULL), lx_load(f, wb, wi, 1, 1, NULL));
  ls_add(f, ls, ls_set(f, acc, lx_select(f, ok, lx_bin(f, LO_FADD, lx_slot(f, acc), prod), lx_slot(f, acc))));
  return lx_slot(f, acc);
}

/* pooling in NCHW<cb>c: one vector of the cb channels per output position */
static temper_status pool_blocked(prim *p, diag *d) {
  lfunc *f = p->f;
  const shape_t *os = &p->fn->body->ty.shape;
  int64_t cb = os->d[4], outer = shape_numel(os) / cb;
  int vo = lf_var(f, "nchw");
  lstmt *lo = ls_add(f, f->body, ls_for(f, vo, lx_int(f, 0), lx_int(f, outer), LOOP_PARALLEL));
  lexpr *c[5], *o = lx_var(f, vo);
  for (int i = 3; i >= 0; i--) {
    c[i] = i == 0 ? o : lx_bin(f, LO_MOD, o, lx_int(f, os->d[i]));
    o = lx_bin(f, LO_DIV, o, lx_int(f, os->d[i]));
  }
  c[4] = lx_int(f, 0);
  epi e = {.p = p, .lanes = (int)cb, .lane_axis = 4, .d = d};
  e.master_val = pool_value(p, lo, c, (int)cb);
  lexpr *v = epi_eval(&e, p->fn->body, c);
  ls_add(f, lo, ls_store(f, p->out_buf, lx_mul(f, lx_var(f, vo), lx_int(f, cb)), v, 1, NULL));
  return d->status;
}

temper_status sched_generic(prim *p, diag *d) {
  lfunc *f = p->f;
  const shape_t *os = &p->fn->body->ty.shape;
  int r = os->ndim;
  const node *pm = p->master;
  if (pm && (pm->op == OP_MAX_POOL2D || pm->op == OP_AVG_POOL2D || pm->op == OP_GLOBAL_AVG_POOL2D || pm->op == OP_GLOBAL_MAX_POOL2D) && r == 5 &&
      pm->ty.shape.ndim == 5 && shape_eq(&pm->ty.shape, os) && os->d[4] <= 64)
    return pool_blocked(p, d);
  /* the inner loop runs along the last axis longer than 1 (a reduction's
   * [1, 3136, 96, 1] runs along the 96, not 301,056 times along a 1) */
  int ax = r - 1;
  while (ax > 0 && os->d[ax] == 1) ax--;
  int64_t inner = r ? os->d[ax] : 1, outer = 1;
  for (int i = 0; i < ax; i++) outer *= os->d[i];
  int vo = lf_var(f, "o"), vi = lf_var(f, "i");
  lstmt *lo = ls_add(f, f->body, ls_for(f, vo, lx_int(f, 0), lx_int(f, outer), outer > 1 ? LOOP_PARALLEL : LOOP_SERIAL));
  lstmt *li = ls_add(f, lo, ls_for(f, vi, lx_int(f, 0), lx_int(f, inner), outer > 1 ? LOOP_SERIAL : LOOP_PARALLEL));
  lexpr *c[TEMPER_MAX_DIMS];
  lexpr *o = lx_var(f, vo);
  for (int i = ax - 1; i >= 0; i--) {
    c[i] = i == 0 ? o : lx_bin(f, LO_MOD, o, lx_int(f, os->d[i]));
    o = lx_bin(f, LO_DIV, o, lx_int(f, os->d[i]));
  }
  if (r) c[ax] = lx_var(f, vi);
  for (int i = ax + 1; i < r; i++) c[i] = lx_int(f, 0);
  epi e = {.p = p, .lanes = 1, .d = d};
  const node *m = p->master;
  if (m && m->op == OP_CONV2D && (m->ty.shape.ndim != 4 || strcmp(m->attrs->v[ATTR_KERNEL_LAYOUT].s, "OIHW")))
    return diag_fail(d, TEMPER_EUNSUPPORTED, "conv2d in layout %s/%s needs a schedule attribute",
                     m->attrs->v[ATTR_DATA_LAYOUT].s, m->attrs->v[ATTR_KERNEL_LAYOUT].s);
  if (m && m->op == OP_CONV2D) e.master_val = conv_value(p, li, c);
  else if (m && (m->op == OP_MAX_POOL2D || m->op == OP_AVG_POOL2D || m->op == OP_GLOBAL_AVG_POOL2D || m->op == OP_GLOBAL_MAX_POOL2D)) e.master_val = pool_value(p, li, c, 1);
  else if (m) return diag_fail(d, TEMPER_EUNSUPPORTED, "no schedule for %s", ir_op_name(m));
  lexpr *v = epi_eval(&e, p->fn->body, c);
  lexpr *idx = lx_add(f, lx_mul(f, lx_var(f, vo), lx_int(f, inner)), lx_var(f, vi));
  ls_add(f, li, ls_store(f, p->out_buf, idx, v, 1, NULL));
  return d->status;
}
