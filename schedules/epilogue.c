/* epilogue.c: dispatch to a template, and the fused ops evaluated at an
 * output point (in registers, vectorised along one axis when lanes > 1). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "schedules.h"
#include "space.h"

void sched_strides(const shape_t *s, int64_t *st) {
  int64_t acc = 1;
  for (int i = s->ndim - 1; i >= 0; i--) {
    st[i] = acc;
    acc *= s->d[i];
  }
}

int sched_block_lanes(int64_t b, int vec) {
  if (!(b & (b - 1)) || b <= vec) return (int)b;
  int L = vec;
  while (L > 4 && b % L) L /= 2;
  return b % L ? (int)b : L;
}

int epi_param_buf(const prim *p, const node *v) {
  for (int i = 0; i < p->fn->n_params; i++)
    if (p->fn->params[i] == v) return i;
  return -1;
}

/* the coordinates of an input of rank r broadcast into rank `rank` */
static void bcast_coord(lfunc *f, const shape_t *in, int rank, lexpr *const *coord, lexpr **out) {
  int off = rank - in->ndim;
  for (int i = 0; i < in->ndim; i++) out[i] = in->d[i] == 1 ? lx_int(f, 0) : coord[off + i];
}

/* eval an argument of x whose shape may broadcast into x's */
static lexpr *eval_arg(epi *e, const node *x, const node *a, lexpr *const *coord) {
  lfunc *f = e->p->f;
  lexpr *ac[TEMPER_MAX_DIMS];
  bcast_coord(f, &a->ty.shape, x->ty.shape.ndim, coord, ac);
  int lane_axis = e->lane_axis - (x->ty.shape.ndim - a->ty.shape.ndim);
  if (e->lanes > 1 && (lane_axis < 0 || a->ty.shape.d[lane_axis] == 1)) {
    epi sub = *e;
    sub.lanes = 1;
    sub.limit = NULL;
    return lx_bcast(f, epi_eval(&sub, a, ac), e->lanes);
  }
  epi sub = *e;
  sub.lane_axis = lane_axis;
  return epi_eval(&sub, a, ac);
}

static lexpr *flat_index(lfunc *f, const shape_t *s, lexpr *const *coord) {
  lexpr *idx = lx_int(f, 0);
  for (int i = 0; i < s->ndim; i++) idx = lx_add(f, lx_mul(f, idx, lx_int(f, s->d[i])), coord[i]);
  return idx;
}

static void unravel(lfunc *f, const shape_t *s, lexpr *flat, lexpr **coord) {
  for (int i = s->ndim - 1; i >= 0; i--) {
    coord[i] = i == 0 ? flat : lx_bin(f, LO_MOD, flat, lx_int(f, s->d[i]));
    flat = lx_bin(f, LO_DIV, flat, lx_int(f, s->d[i]));
  }
}

static lexpr *eval_injective(epi *e, const node *x, lexpr *const *coord) {
  lfunc *f = e->p->f;
  lexpr *ic[TEMPER_MAX_DIMS];
  switch (x->op) {
  case OP_RESHAPE: case OP_BATCH_FLATTEN:
    unravel(f, &x->args[0]->ty.shape, flat_index(f, &x->ty.shape, coord), ic);
    return epi_eval(e, x->args[0], ic);
  case OP_TRANSPOSE: {
    const attr_val *ax = &x->attrs->v[ATTR_AXES];
    int nd = x->ty.shape.ndim;
    for (int j = 0; j < nd; j++) {
      int64_t p = ax->n ? ax->i[j] : nd - 1 - j;
      ic[p < 0 ? p + nd : p] = coord[j];
    }
    return epi_eval(e, x->args[0], ic);
  }
  case OP_STRIDED_SLICE:
    for (int j = 0; j < x->ty.shape.ndim; j++)
      ic[j] = lx_add(f, lx_int(f, x->attrs->v[ATTR_BEGIN].i[j]), lx_mul(f, coord[j], lx_int(f, x->attrs->v[ATTR_STEP].i[j])));
    return epi_eval(e, x->args[0], ic);
  case OP_CONCATENATE: {
    int ax = (int)x->attrs->v[ATTR_AXIS].i[0];
    if (ax < 0) ax += x->ty.shape.ndim;
    lexpr *val = NULL;
    int64_t start = x->ty.shape.d[ax];
    for (int k = x->n_args - 1; k >= 0; k--) {   /* select chain, loads kept in bounds */
      const node *a = x->args[k];
      start -= a->ty.shape.d[ax];
      for (int i = 0; i < x->ty.shape.ndim; i++) ic[i] = coord[i];
      lexpr *rel = lx_bin(f, LO_SUB, coord[ax], lx_int(f, start));
      ic[ax] = lx_bin(f, LO_MIN, lx_bin(f, LO_MAX, rel, lx_int(f, 0)), lx_int(f, a->ty.shape.d[ax] - 1));
      lexpr *v = epi_eval(e, a, ic);
      val = val ? lx_select(f, lx_bin(f, LO_LT, coord[ax], lx_int(f, start + a->ty.shape.d[ax])), v, val) : v;
    }
    return val;
  }
  case OP_PAD: {
    const shape_t *xs = &x->args[0]->ty.shape;
    const int64_t *pw = x->attrs->v[ATTR_PAD_WIDTH].i;
    lexpr *ok = lx_int(f, 1);
    for (int k = 0; k < xs->ndim; k++) {
      lexpr *c = lx_bin(f, LO_SUB, coord[k], lx_int(f, pw[2 * k]));
      ok = lx_bin(f, LO_AND, ok, lx_bin(f, LO_AND, lx_bin(f, LO_LE, lx_int(f, 0), c), lx_bin(f, LO_LT, c, lx_int(f, xs->d[k]))));
      ic[k] = lx_bin(f, LO_MIN, lx_bin(f, LO_MAX, c, lx_int(f, 0)), lx_int(f, xs->d[k] - 1));
    }
    return lx_select(f, ok, epi_eval(e, x->args[0], ic), lx_flt(f, x->attrs->v[ATTR_PAD_VALUE].f, 1));
  }
  case OP_LAYOUT_TRANSFORM: {   /* physical dst coord → primal → physical src coord */
    layout_t ls, ld;
    layout_parse(x->attrs->v[ATTR_SRC_LAYOUT].s, &ls);
    layout_parse(x->attrs->v[ATTR_DST_LAYOUT].s, &ld);
    const shape_t *xs = &x->args[0]->ty.shape;
    char axes[9] = {0};
    int64_t dims[8], fsrc[8], fdst[8];
    int np = 0;
    for (int i = 0; i < ls.n; i++)
      if (!ls.factor[i]) dims[np] = xs->d[i], fsrc[np] = 1, fdst[np] = 1, axes[np++] = ls.axis[i];
    for (int i = 0; i < ls.n; i++)
      if (ls.factor[i]) {
        int pi = (int)(strchr(axes, ls.axis[i] - ('a' - 'A')) - axes);
        dims[pi] *= ls.factor[i];
        fsrc[pi] = ls.factor[i];
      }
    for (int i = 0; i < ld.n; i++)
      if (ld.factor[i]) fdst[strchr(axes, ld.axis[i] - ('a' - 'A')) - axes] = ld.factor[i];
    lexpr *prim[8];
    for (int p = 0; p < np; p++) prim[p] = lx_int(f, 0);
    for (int i = 0; i < ld.n; i++) {
      int pi = (int)(strchr(axes, ld.factor[i] ? ld.axis[i] - ('a' - 'A') : ld.axis[i]) - axes);
      prim[pi] = lx_add(f, prim[pi], ld.factor[i] ? coord[i] : lx_mul(f, coord[i], lx_int(f, fdst[pi])));
    }
    lexpr *ok = lx_int(f, 1);
    for (int p = 0; p < np; p++)
      if (fdst[p] > 1 && dims[p] % fdst[p]) {   /* dst pads this axis */
        ok = lx_bin(f, LO_AND, ok, lx_bin(f, LO_LT, prim[p], lx_int(f, dims[p])));
        prim[p] = lx_bin(f, LO_MIN, prim[p], lx_int(f, dims[p] - 1));
      }
    for (int i = 0; i < ls.n; i++) {
      int pi = (int)(strchr(axes, ls.factor[i] ? ls.axis[i] - ('a' - 'A') : ls.axis[i]) - axes);
      ic[i] = ls.factor[i] ? lx_bin(f, LO_MOD, prim[pi], lx_int(f, fsrc[pi])) : lx_bin(f, LO_DIV, prim[pi], lx_int(f, fsrc[pi]));
    }
    return lx_select(f, ok, epi_eval(e, x->args[0], ic), lx_flt(f, 0, 1));
  }
  }
  diag_fail(e->d, TEMPER_EINTERNAL, "epilogue: %s cannot be evaluated pointwise", ir_op_name(x));
  return lx_flt(f, 0, e->lanes);
}

/* max(0, min(1, alpha·x + beta)) */
static lexpr *hard_sigmoid(lfunc *f, lexpr *x, double alpha, double beta) {
  lexpr *v = lx_bin(f, LO_FADD, lx_bin(f, LO_FMUL, x, lx_flt(f, alpha, 1)), lx_flt(f, beta, 1));
  return lx_bin(f, LO_FMAX, lx_flt(f, 0, 1), lx_bin(f, LO_FMIN, lx_flt(f, 1, 1), v));
}

/* x · (c[0] + c[1]·x² + … + c[n-1]·x^(2n-2)), by Horner in x² */
static lexpr *odd_poly(lfunc *f, lexpr *x, const double *c, int n) {
  lexpr *x2 = lx_bin(f, LO_FMUL, x, x), *p = lx_flt(f, c[n - 1], 1);
  for (int i = n - 2; i >= 0; i--) p = lx_bin(f, LO_FADD, lx_bin(f, LO_FMUL, p, x2), lx_flt(f, c[i], 1));
  return lx_bin(f, LO_FMUL, x, p);
}

/* tanh x = 1 − 2 / (e^2x + 1): exact at both ends (e^2x overflows to ∞, or
 * is 0), but near 0 the difference cancels (relative error ~6e-8 / |x|: 6e-4
 * at x = 1e-4). Below |x| = 1/4 its Taylor series to x^11 instead (the next
 * term is below 1e-9 of the value there); the formula's error at 1/4 is a
 * few ulps */
static lexpr *tanh_of(lfunc *f, lexpr *x) {
  static const double c[6] = {1, -1.0 / 3, 2.0 / 15, -17.0 / 315, 62.0 / 2835, -1382.0 / 155925};
  lexpr *e2 = lx_un(f, LO_EXP, lx_bin(f, LO_FMUL, x, lx_flt(f, 2, 1)));
  lexpr *big = lx_bin(f, LO_FSUB, lx_flt(f, 1, 1), lx_bin(f, LO_FDIV, lx_flt(f, 2, 1), lx_bin(f, LO_FADD, e2, lx_flt(f, 1, 1))));
  lexpr *ax = lx_bin(f, LO_FMAX, x, lx_un(f, LO_NEG, x));
  return lx_select(f, lx_bin(f, LO_FLT, ax, lx_flt(f, 0.25, 1)), odd_poly(f, x, c, 6), big);
}

/* erf x = x·P(x²) / Q(x²), P and Q of degree 5: a rational fit of
 * erf(x)/x on |x| ≤ 4 weighted for relative error (scripts/fit_erf.py:
 * 9e-8 in exact arithmetic; evaluated in float, within 3.7e-7 of erf's
 * value, 3 ulps of 1, over |x| ≤ 6 and down to 1e-30), x clamped to ±4
 * first (erf 4 rounds to 1 in float) by selects that keep a NaN. Eleven
 * FMAs and one division. It replaced Abramowitz & Stegun 7.1.26 (a
 * division, an exp and a polynomial, with a Taylor series below |x| = 1/2
 * for its relative error near 0 — both computed, one selected): ConvNeXt's
 * 1×1 layers with the GELU after them spent a third of their time there
 * (bench/RESULTS.md, "GELU"). */
static lexpr *erf_of(lfunc *f, lexpr *x) {
  static const double p[6] = {1.1283791616797798, 0.18869446299472359, 0.052509686552803227, 0.0036908135569979133,
                              0.00028289611069748019, 2.057464483867788e-06};
  static const double q[6] = {1, 0.50055914186082684, 0.11339045034962131, 0.0148170363440522, 0.0011440092396198601,
                              3.8068802192266216e-05};
  lexpr *xc = lx_select(f, lx_bin(f, LO_FGT, x, lx_flt(f, 4, 1)), lx_flt(f, 4, 1),
                        lx_select(f, lx_bin(f, LO_FLT, x, lx_flt(f, -4, 1)), lx_flt(f, -4, 1), x));
  lexpr *t = lx_bin(f, LO_FMUL, xc, xc), *pp = lx_flt(f, p[5], 1), *qq = lx_flt(f, q[5], 1);
  for (int i = 4; i >= 0; i--) {
    pp = lx_bin(f, LO_FADD, lx_bin(f, LO_FMUL, pp, t), lx_flt(f, p[i], 1));
    qq = lx_bin(f, LO_FADD, lx_bin(f, LO_FMUL, qq, t), lx_flt(f, q[i], 1));
  }
  return lx_bin(f, LO_FDIV, lx_bin(f, LO_FMUL, xc, pp), qq);
}

lexpr *epi_eval(epi *e, const node *x, lexpr *const *coord) {
  lfunc *f = e->p->f;
  if (x == e->p->master) return e->master_val;
  if (x->kind == N_CONST && x->ty.shape.ndim == 0) return lx_flt(f, x->data[0], 1);
  if (x->kind == N_VAR) {
    int b = epi_param_buf(e->p, x);
    if (b < 0) {
      diag_fail(e->d, TEMPER_EINTERNAL, "epilogue: %%%s is not a parameter of the function", x->name);
      return lx_flt(f, 0, e->lanes);
    }
    int64_t st[TEMPER_MAX_DIMS];
    sched_strides(&x->ty.shape, st);
    lexpr *idx = lx_int(f, 0);
    for (int i = 0; i < x->ty.shape.ndim; i++)
      if (x->ty.shape.d[i] != 1) idx = lx_add(f, idx, lx_mul(f, coord[i], lx_int(f, st[i])));
    if (e->lanes == 1) return lx_load(f, b, idx, 1, 1, NULL);
    int64_t lane_stride = x->ty.shape.d[e->lane_axis] == 1 ? 0 : st[e->lane_axis];
    return lx_load(f, b, idx, e->lanes, lane_stride, lane_stride ? e->limit : NULL);
  }
  if (x->kind != N_CALL || x->op < 0) {
    diag_fail(e->d, TEMPER_EUNSUPPORTED, "epilogue: cannot evaluate a %s here", ir_op_name(x));
    return lx_flt(f, 0, e->lanes);
  }
  if (ops_table[x->op].pat == PAT_INJECTIVE) {
    if (e->lanes > 1) {
      diag_fail(e->d, TEMPER_EINTERNAL, "epilogue: injective %s in a vector epilogue", ir_op_name(x));
      return lx_flt(f, 0, e->lanes);
    }
    return eval_injective(e, x, coord);
  }
  lexpr *a = eval_arg(e, x, x->args[0], coord);
  switch (x->op) {
  case OP_RELU: return lx_bin(f, LO_FMAX, a, lx_flt(f, 0, 1));
  case OP_CLIP:
    return lx_bin(f, LO_FMIN, lx_bin(f, LO_FMAX, a, lx_flt(f, x->attrs->v[ATTR_A_MIN].f, 1)),
                  lx_flt(f, x->attrs->v[ATTR_A_MAX].f, 1));
  case OP_SIGMOID:
    return lx_bin(f, LO_FDIV, lx_flt(f, 1, 1), lx_bin(f, LO_FADD, lx_flt(f, 1, 1), lx_un(f, LO_EXP, lx_un(f, LO_NEG, a))));
  case OP_SQRT: return lx_un(f, LO_SQRT, a);
  case OP_HARD_SIGMOID: return hard_sigmoid(f, a, x->attrs->v[ATTR_ALPHA].f, x->attrs->v[ATTR_BETA].f);
  case OP_HARD_SWISH: return lx_bin(f, LO_FMUL, a, hard_sigmoid(f, a, 1.0 / 6, 0.5));
  case OP_LEAKY_RELU:   /* max(x, 0) + alpha·min(x, 0) */
    return lx_bin(f, LO_FADD, lx_bin(f, LO_FMAX, a, lx_flt(f, 0, 1)),
                  lx_bin(f, LO_FMUL, lx_flt(f, x->attrs->v[ATTR_ALPHA].f, 1), lx_bin(f, LO_FMIN, a, lx_flt(f, 0, 1))));
  case OP_TANH: return tanh_of(f, a);
  case OP_ERF: return erf_of(f, a);
  case OP_EXP: return lx_un(f, LO_EXP, a);
  case OP_BIAS_ADD: {   /* the bias is 1-d along axis: view it as broadcast to x's rank */
    int ax = (int)x->attrs->v[ATTR_AXIS].i[0];
    if (ax < 0) ax += x->ty.shape.ndim;
    const node *bn = x->args[1];
    lexpr *bc[1] = {coord[ax]};
    epi sub = *e;
    lexpr *bv;
    if (e->lanes > 1 && e->lane_axis == ax) {
      sub.lane_axis = 0;
      bv = epi_eval(&sub, bn, bc);
    } else {
      sub.lanes = 1;
      sub.limit = NULL;
      bv = lx_bcast(f, epi_eval(&sub, bn, bc), e->lanes);
    }
    return lx_bin(f, LO_FADD, a, bv);
  }
  case OP_PRELU: {   /* max(x, 0) + slope·min(x, 0), the slope broadcast */
    lexpr *b = eval_arg(e, x, x->args[1], coord);
    return lx_bin(f, LO_FADD, lx_bin(f, LO_FMAX, a, lx_flt(f, 0, 1)), lx_bin(f, LO_FMUL, b, lx_bin(f, LO_FMIN, a, lx_flt(f, 0, 1))));
  }
  case OP_ADD: case OP_SUBTRACT: case OP_MULTIPLY: case OP_DIVIDE: {
    static const lx_op fop[] = {[OP_ADD] = LO_FADD, [OP_SUBTRACT] = LO_FSUB, [OP_MULTIPLY] = LO_FMUL, [OP_DIVIDE] = LO_FDIV};
    lexpr *b = eval_arg(e, x, x->args[1], coord);
    /* by a constant: times its reciprocal (one rounding more, at most an
     * ulp; a division is 5–16 FMAs' time, and GELU divides every output by
     * √2) — where the reciprocal is a normal float: by a subnormal divisor
     * it would be ∞ (0 · ∞ is NaN where 0 / c is 0), by one above 1/FLT_MIN
     * subnormal (digits lost) */
    double r = b->k == LX_FLT && b->fval != 0 ? 1 / b->fval : 0;
    if (x->op == OP_DIVIDE && fabs(r) >= FLT_MIN && fabs(r) <= FLT_MAX) return lx_bin(f, LO_FMUL, a, lx_flt(f, r, b->lanes));
    return lx_bin(f, fop[x->op], a, b);
  }
  }
  diag_fail(e->d, TEMPER_EINTERNAL, "epilogue: %s is not elementwise", ir_op_name(x));
  return lx_flt(f, 0, e->lanes);
}

temper_status sched_prepare(const node *fn, prim *p, diag *d) {
  memset(p, 0, sizeof *p);
  p->fn = fn;
  arena scratch = {0};
  int n = 0;
  node **order = ir_topo(&scratch, fn->body, &n);
  if (!order) { arena_free(&scratch); return diag_fail(d, TEMPER_ENOMEM, "out of memory"); }
  const node *first = NULL;
  temper_status s = TEMPER_OK;
  for (int i = 0; i < n && s == TEMPER_OK; i++) {
    const node *x = order[i];
    if (x->kind == N_CALL && x->op == OP_FUNCALL)
      s = diag_error(d, x->loc, "a primitive function cannot call another function");
    if (x->kind == N_TUPLE || x->kind == N_GETITEM)
      s = diag_fail(d, TEMPER_EUNSUPPORTED, "%d:%d: tuples inside a primitive function are not supported", x->loc.line, x->loc.col);
    if (x->kind != N_CALL || x->op < 0) continue;
    int pat = ops_table[x->op].pat;
    if (pat < PAT_COMM_REDUCE) continue;
    if (first && !p->pre && op_is_conv(first->op) && x->op == OP_CONV2D && x->args[0]->kind == N_CALL) {
      p->pre = first;   /* a producer fused into its consumer: checked by the template */
      first = x;
      continue;
    }
    if (first) {
      s = diag_error(d, x->loc, "two complicated ops in one primitive function: %s at %d:%d and %s at %d:%d; "
                     "a primitive function holds one, or a conv2d and the conv2d it feeds (run fuse on the unfused "
                     "program instead)",
                     p->pre ? ir_op_name(p->pre) : ir_op_name(first), p->pre ? p->pre->loc.line : first->loc.line,
                     p->pre ? p->pre->loc.col : first->loc.col, ir_op_name(x), x->loc.line, x->loc.col);
      break;
    }
    first = x;
  }
  arena_free(&scratch);
  p->master = first;
  if (s == TEMPER_OK && first && (first->op == OP_BATCH_NORM || first->op == OP_DROPOUT))
    s = diag_error(d, first->loc, "%s must be simplified away before lowering (only its field 0 can be used)",
                   ir_op_name(first));
  if (s == TEMPER_OK && fn->body->ty.kind != TY_TENSOR)
    s = diag_fail(d, TEMPER_EUNSUPPORTED, "a primitive function must return one tensor");
  return s;
}

const conv_template_fn conv_templates[TMPL_COUNT] = {
    [TMPL_NCHWC] = sched_conv2d_nchwc,
    [TMPL_1X1] = sched_conv2d_1x1,
    [TMPL_DEPTHWISE] = sched_conv2d_depthwise,
    [TMPL_WINOGRAD] = sched_conv2d_winograd,
};

temper_status sched_config_of(const node *m, int vec, sched_config *buf, const sched_config **cfg, diag *d) {
  *cfg = NULL;
  if (!m || !op_is_conv(m->op)) return TEMPER_OK;
  if (m->attrs->config) {
    *cfg = m->attrs->config;
    return TEMPER_OK;
  }
  const char *text = m->attrs->v[ATTR_SCHEDULE].s;
  if (!text[0]) return TEMPER_OK;
  conv_workload w;
  task_space sp;
  char err[512];
  if (workload_of(m, &w)) return diag_error(d, m->loc, "%s: not a conv2d workload", ir_op_name(m));
  space_build(&w, vec, &sp);
  if (config_parse(&sp, text, buf, err, sizeof err)) return diag_error(d, m->loc, "%s schedule \"%s\": %s", ir_op_name(m), text, err);
  *cfg = buf;
  return TEMPER_OK;
}

temper_status sched_lower(const node *fn, const cg_target *t, const sched_config *cfg, const char *name, lfunc **out, diag *d) {
  return sched_lower_as(fn, t, cfg, name, SCHED_BEST, out, d);
}

temper_status sched_lower_as(const node *fn, const cg_target *t, const sched_config *cfg, const char *name, sched_pick pick,
                             lfunc **out, diag *d) {
  *out = NULL;
  prim p;
  temper_status s = sched_prepare(fn, &p, d);
  if (s) return s;
  int vec = t->vec;
  p.l1d = t->l1d;
  p.l2 = t->l2;
  const node *m = p.master;
  if (cfg && (!m || !op_is_conv(m->op) || cfg->tmpl < 0 || cfg->tmpl >= TMPL_COUNT))
    return diag_fail(d, TEMPER_EINTERNAL, "a conv2d schedule config for a function whose master is %s", m ? ir_op_name(m) : "none");
  p.cfg = cfg;
  p.f = lf_new(name, vec);
  if (!p.f) return diag_fail(d, TEMPER_ENOMEM, "out of memory");
  char bname[32];
  for (int i = 0; i < fn->n_params; i++) {
    snprintf(bname, sizeof bname, "%s", fn->params[i]->name);
    lf_buf(p.f, bname, shape_numel(&fn->params[i]->ty.shape));
  }
  p.out_buf = lf_buf(p.f, "out", shape_numel(&fn->body->ty.shape));
  if (cfg && p.pre) s = cfg->tmpl == TMPL_DEPTHWISE ? sched_conv2d_pwdw(&p, vec, d) : sched_conv2d_dwpw(&p, vec, d);
  else if (p.pre) s = diag_error(d, m->loc, "%s fed by %s in one function needs the schedules of both", ir_op_name(m), ir_op_name(p.pre));
  else if (cfg) s = conv_templates[cfg->tmpl](&p, vec, d);
  else if (m && m->op == OP_CONV2D_WINOGRAD) s = diag_error(d, m->loc, "%s needs a conv2d_winograd schedule", ir_op_name(m));
  else if (m && m->op == OP_DENSE) s = sched_dense(&p, vec, d);
  else if (m && m->op == OP_SOFTMAX) s = sched_softmax(&p, d);
  else if (m && m->op == OP_LAYER_NORM) s = sched_layer_norm(&p, d);
  else if (!m && pick == SCHED_BEST && sched_is_layout_copy(fn)) s = sched_layout_copy(&p, vec, d);
  else s = sched_generic(&p, d);
  if (s == TEMPER_OK) lf_simplify(p.f);
  if (s == TEMPER_OK && p.f->a.failed) s = diag_fail(d, TEMPER_ENOMEM, "out of memory building loops");
  if (s == TEMPER_OK && d->status) s = d->status;
  if (s) { lf_free(p.f); return s; }
  *out = p.f;
  return TEMPER_OK;
}
