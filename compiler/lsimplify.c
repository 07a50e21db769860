/* lsimplify.c: integer index arithmetic simplified with the ranges of loop
 * variables.
 *
 * Schedules compute coordinates by composing maps: a reshape flattens its
 * output coordinate and unravels it in its input's shape with / and %, a
 * transpose permutes, a concatenate clamps into each input. Composed, a
 * channel shuffle's element costs a dozen divisions, none of which LLVM can
 * remove (it does not know that `i` in `(o·28 + i) % 28` stays below 28).
 * Here it is known: every statement is visited with the ranges of the loop
 * variables and lets around it, and
 *
 *   (Q·k + R) / k  →  Q + R / k,   (Q·k + R) % k  →  R % k      (floor semantics)
 *   R / k → 0,  R % k → R                      when 0 <= R < k by the ranges
 *   (x / a) / b    →  x / (a·b)
 *   (x % a) % b    →  x % b                    when a % b == 0
 *   min, max, <, <= decided by the ranges      (a concatenate's clamps and selects)
 *
 * Only an integer node a rule changes is rebuilt (its parents with it);
 * anything else keeps its node, so a template's arithmetic stays as written.
 * A variable bound nowhere around a use has no range, and nothing is
 * assumed of it. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "loopir.h"

enum { LIN_MAX = 24 };
typedef struct lin {     /* Σ coef[i]·atom[i] + c */
  int n;
  lexpr *atom[LIN_MAX];
  int64_t coef[LIN_MAX];
  int64_t c;
} lin;

typedef struct range { int64_t lo, hi; int known; } range;

typedef struct simp {
  lfunc *f;
  range var[LF_MAX_VARS];
  /* memo: a node's result in the current scope; the scope changes whenever a
   * range does, and then every node is looked at again */
  int gen;
} simp;

static const range unknown = {0, 0, 0};

static int add_ov(int64_t a, int64_t b, int64_t *r) { return __builtin_add_overflow(a, b, r); }
static int mul_ov(int64_t a, int64_t b, int64_t *r) { return __builtin_mul_overflow(a, b, r); }

static int64_t floordiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

static range r_add(range a, range b) {
  range r = {0, 0, a.known && b.known};
  if (r.known && (add_ov(a.lo, b.lo, &r.lo) || add_ov(a.hi, b.hi, &r.hi))) r.known = 0;
  return r;
}

static range r_scale(range a, int64_t k) {
  range r = {0, 0, a.known};
  int64_t x, y;
  if (!r.known || mul_ov(a.lo, k, &x) || mul_ov(a.hi, k, &y)) return unknown;
  r.lo = x < y ? x : y;
  r.hi = x < y ? y : x;
  return r;
}

/* structural equality of integer expressions (vars by id) */
static int same(const lexpr *a, const lexpr *b) {
  if (a == b) return 1;
  if (!a || !b || a->k != b->k || a->is_float || b->is_float || a->lanes != 1 || b->lanes != 1) return 0;
  switch (a->k) {
  case LX_INT: return a->ival == b->ival;
  case LX_VAR: return a->id == b->id;
  case LX_BIN: return a->op == b->op && same(a->a, b->a) && same(a->b, b->b);
  default: return 0;
  }
}

static range range_of(simp *s, const lexpr *e);

/* e as a linear form; an operand that is not one is an atom */
static void lin_of(const lexpr *e, int64_t scale, lin *l, int *ok) {
  if (!*ok) return;
  if (e->k == LX_INT) {
    int64_t t;
    if (mul_ov(e->ival, scale, &t) || add_ov(l->c, t, &l->c)) *ok = 0;
    return;
  }
  if (e->k == LX_BIN && (e->op == LO_ADD || e->op == LO_SUB)) {
    lin_of(e->a, scale, l, ok);
    lin_of(e->b, e->op == LO_SUB ? -scale : scale, l, ok);
    return;
  }
  if (e->k == LX_BIN && e->op == LO_MUL && (e->a->k == LX_INT || e->b->k == LX_INT)) {
    const lexpr *k = e->a->k == LX_INT ? e->a : e->b, *x = e->a->k == LX_INT ? e->b : e->a;
    int64_t t;
    if (mul_ov(scale, k->ival, &t)) { *ok = 0; return; }
    lin_of(x, t, l, ok);
    return;
  }
  for (int i = 0; i < l->n; i++)
    if (same(l->atom[i], e)) {
      if (add_ov(l->coef[i], scale, &l->coef[i])) *ok = 0;
      return;
    }
  if (l->n == LIN_MAX) { *ok = 0; return; }
  l->atom[l->n] = (lexpr *)e;
  l->coef[l->n++] = scale;
}

static range lin_range(simp *s, const lin *l) {
  range r = {l->c, l->c, 1};
  for (int i = 0; i < l->n && r.known; i++)
    if (l->coef[i]) r = r_add(r, r_scale(range_of(s, l->atom[i]), l->coef[i]));
  return r;
}

static lexpr *lin_build(lfunc *f, const lin *l) {
  lexpr *e = NULL;
  for (int i = 0; i < l->n; i++) {
    if (!l->coef[i]) continue;
    lexpr *t = l->coef[i] == 1 ? l->atom[i] : lx_mul(f, l->atom[i], lx_int(f, l->coef[i]));
    e = e ? lx_add(f, e, t) : t;
  }
  if (!e) return lx_int(f, l->c);
  return l->c ? lx_add(f, e, lx_int(f, l->c)) : e;
}

static range range_uncached(simp *s, const lexpr *e);

static range range_of(simp *s, const lexpr *e) {
  if (e->is_float || e->lanes != 1) return unknown;
  if (e->k == LX_INT || e->k == LX_VAR) return range_uncached(s, e);
  if (e->range_gen == s->gen) return (range){e->range_lo, e->range_hi, e->range_known};
  range r = range_uncached(s, e);
  lexpr *w = (lexpr *)e;   /* a memo, not a change of the expression */
  w->range_gen = s->gen, w->range_lo = r.lo, w->range_hi = r.hi, w->range_known = r.known;
  return r;
}

static range range_uncached(simp *s, const lexpr *e) {
  switch (e->k) {
  case LX_INT: return (range){e->ival, e->ival, 1};
  case LX_VAR: return e->id >= 0 && e->id < LF_MAX_VARS ? s->var[e->id] : unknown;
  case LX_SELECT: {
    range a = range_of(s, e->a), b = range_of(s, e->b);
    if (!a.known || !b.known) return unknown;
    return (range){a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi, 1};
  }
  case LX_BIN: break;
  default: return unknown;
  }
  range a = range_of(s, e->a), b = range_of(s, e->b);
  switch (e->op) {
  case LO_ADD: return r_add(a, b);
  case LO_SUB: return r_add(a, r_scale(b, -1));
  case LO_MUL:
    if (e->b->k == LX_INT) return r_scale(a, e->b->ival);
    if (e->a->k == LX_INT) return r_scale(b, e->a->ival);
    return unknown;
  case LO_DIV:
    if (e->b->k != LX_INT || e->b->ival <= 0 || !a.known) return unknown;
    return (range){floordiv(a.lo, e->b->ival), floordiv(a.hi, e->b->ival), 1};
  case LO_MOD: {
    if (e->b->k != LX_INT || e->b->ival <= 0) return unknown;
    range r = {0, e->b->ival - 1, 1};
    if (a.known && a.lo >= 0 && a.hi < r.hi) r.hi = a.hi;
    if (a.known && a.lo >= 0 && floordiv(a.lo, e->b->ival) == floordiv(a.hi, e->b->ival)) r.lo = a.lo % e->b->ival;
    return r;
  }
  case LO_MIN:
    if (!a.known || !b.known) return a.known ? (range){INT64_MIN, a.hi, 1} : b.known ? (range){INT64_MIN, b.hi, 1} : unknown;
    return (range){a.lo < b.lo ? a.lo : b.lo, a.hi < b.hi ? a.hi : b.hi, 1};
  case LO_MAX:
    if (!a.known || !b.known) return a.known ? (range){a.lo, INT64_MAX, 1} : b.known ? (range){b.lo, INT64_MAX, 1} : unknown;
    return (range){a.lo > b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi, 1};
  case LO_LT: case LO_LE: case LO_EQ: case LO_AND: case LO_OR: return (range){0, 1, 1};
  default: return unknown;
  }
}

/* x / k and x % k for a constant k > 0, x already simplified */
static lexpr *divmod(simp *s, lexpr *x, int64_t k, int is_mod) {
  lfunc *f = s->f;
  if (x->k == LX_BIN && x->op == LO_DIV && x->b->k == LX_INT && x->b->ival > 0 && !is_mod) {
    int64_t kk;   /* (y / a) / k = y / (a·k) */
    if (!mul_ov(x->b->ival, k, &kk)) {
      lexpr *r = divmod(s, x->a, kk, 0);
      return r ? r : lx_bin(f, LO_DIV, x->a, lx_int(f, kk));
    }
  }
  if (x->k == LX_BIN && x->op == LO_MOD && x->b->k == LX_INT && x->b->ival > 0 && is_mod && x->b->ival % k == 0) {
    lexpr *r = divmod(s, x->a, k, 1);   /* (y % (m·k)) % k = y % k */
    return r ? r : lx_bin(f, LO_MOD, x->a, lx_int(f, k));
  }
  lin l = {0};
  int ok = 1;
  lin_of(x, 1, &l, &ok);
  if (!ok) return NULL;
  lin q = {0}, r = {0};
  q.c = floordiv(l.c, k);
  r.c = l.c - q.c * k;
  for (int i = 0; i < l.n; i++) {
    if (!l.coef[i]) continue;
    if (l.coef[i] % k == 0) {
      q.atom[q.n] = l.atom[i];
      q.coef[q.n++] = l.coef[i] / k;
    } else {
      r.atom[r.n] = l.atom[i];
      r.coef[r.n++] = l.coef[i];
    }
  }
  range rr = lin_range(s, &r);
  int small = rr.known && rr.lo >= 0 && rr.hi < k;
  if (is_mod) {
    if (small) return lin_build(f, &r);
    if (!q.n && !q.c) return NULL;   /* nothing changed */
    return lx_bin(f, LO_MOD, lin_build(f, &r), lx_int(f, k));
  }
  if (small) return lin_build(f, &q);
  if (!q.n && !q.c) return NULL;
  return lx_add(f, lin_build(f, &q), lx_bin(f, LO_DIV, lin_build(f, &r), lx_int(f, k)));
}

static lexpr *simp_expr(simp *s, lexpr *e);

static lexpr *simplify_bin(simp *s, lexpr *e, lexpr *a, lexpr *b) {
  lfunc *f = s->f;
  if (!e->is_float && e->lanes == 1) {
    if ((e->op == LO_DIV || e->op == LO_MOD) && b->k == LX_INT && b->ival > 0) {
      lexpr *r = divmod(s, a, b->ival, e->op == LO_MOD);
      if (r) return r;
    }
    range ra = range_of(s, a), rb = range_of(s, b);
    if (ra.known && rb.known) {
      switch (e->op) {
      case LO_MIN: if (ra.hi <= rb.lo) return a; if (rb.hi <= ra.lo) return b; break;
      case LO_MAX: if (ra.lo >= rb.hi) return a; if (rb.lo >= ra.hi) return b; break;
      case LO_LT: if (ra.hi < rb.lo) return lx_int(f, 1); if (ra.lo >= rb.hi) return lx_int(f, 0); break;
      case LO_LE: if (ra.hi <= rb.lo) return lx_int(f, 1); if (ra.lo > rb.hi) return lx_int(f, 0); break;
      default: break;
      }
    }
  }
  if (a == e->a && b == e->b) return e;
  return lx_bin(f, e->op, a, b);
}

static lexpr *simp_expr(simp *s, lexpr *e) {
  if (!e) return e;
  switch (e->k) {
  case LX_INT: case LX_FLT: case LX_VAR: case LX_SLOT: return e;
  default: break;
  }
  if (e->simp_gen == s->gen && e->simp) return e->simp;
  lexpr *r = e;
  lfunc *f = s->f;
  switch (e->k) {
  case LX_BIN: r = simplify_bin(s, e, simp_expr(s, e->a), simp_expr(s, e->b)); break;
  case LX_UN: {
    lexpr *a = simp_expr(s, e->a);
    if (a != e->a) r = lx_un(f, e->op, a);
    break;
  }
  case LX_SELECT: {
    lexpr *c = simp_expr(s, e->c), *a = simp_expr(s, e->a), *b = simp_expr(s, e->b);
    if (c != e->c || a != e->a || b != e->b) r = lx_select(f, c, a, b);
    break;
  }
  case LX_LOAD: {
    lexpr *i = simp_expr(s, e->a), *lim = simp_expr(s, e->limit);
    if (i != e->a || lim != e->limit) r = lx_load(f, e->id, i, e->lanes, e->stride, lim);
    break;
  }
  case LX_BCAST: {
    lexpr *a = simp_expr(s, e->a);
    if (a != e->a) r = lx_bcast(f, a, e->lanes);
    break;
  }
  case LX_SPLAT_GROUPS: {
    lexpr *a = simp_expr(s, e->a);
    if (a != e->a) r = lx_splat_groups(f, a, (int)e->stride, (int)e->ival);
    break;
  }
  case LX_FMA: {
    lexpr *a = simp_expr(s, e->a), *b = simp_expr(s, e->b), *c = simp_expr(s, e->c);
    if (a != e->a || b != e->b || c != e->c) r = lx_fma(f, a, b, c);
    break;
  }
  case LX_I2F: {
    lexpr *a = simp_expr(s, e->a);
    if (a != e->a) {
      r = arena_alloc(&f->a, sizeof *r);
      if (r) { *r = *e; r->a = a; } else r = e;
    }
    break;
  }
  default: break;
  }
  e->simp = r;
  e->simp_gen = s->gen;
  return r;
}

static void set_var(simp *s, int v, range r) {
  if (v < 0 || v >= LF_MAX_VARS) return;
  s->var[v] = r;
  s->gen++;
}

static void visit(simp *s, lstmt *st);

/* statements i.. of a body; a let binds until the end of it */
static void visit_body(simp *s, lstmt **body, int i, int n) {
  for (; i < n; i++) {
    lstmt *c = body[i];
    if (!c || c->k != LS_LET) { visit(s, c); continue; }
    c->val = simp_expr(s, c->val);
    if (c->id < 0 || c->id >= LF_MAX_VARS) continue;
    range saved = s->var[c->id];
    set_var(s, c->id, range_of(s, c->val));
    visit_body(s, body, i + 1, n);
    set_var(s, c->id, saved);
    return;
  }
}

static void visit(simp *s, lstmt *st) {
  if (!st) return;
  switch (st->k) {
  case LS_SEQ: visit_body(s, st->body, 0, st->n_body); return;
  case LS_FOR: {
    st->lo = simp_expr(s, st->lo);
    st->ext = simp_expr(s, st->ext);
    range lo = range_of(s, st->lo), ext = range_of(s, st->ext);
    range r = unknown;
    if (lo.known && ext.known && ext.hi >= 1) {
      r = r_add(lo, (range){0, ext.hi - 1, 1});
      r.lo = lo.lo;
    }
    range saved = s->var[st->id], saved_first = st->first_var >= 0 ? s->var[st->first_var] : unknown;
    set_var(s, st->id, r);
    if (st->first_var >= 0) set_var(s, st->first_var, r);
    visit_body(s, st->body, 0, st->n_body);
    set_var(s, st->id, saved);
    if (st->first_var >= 0) set_var(s, st->first_var, saved_first);
    return;
  }
  case LS_IF:
    st->cond = simp_expr(s, st->cond);
    for (int i = 0; i < st->n_body; i++) visit(s, st->body[i]);
    return;
  case LS_LET: case LS_DECL: case LS_SET:
    st->val = simp_expr(s, st->val);
    return;
  case LS_STORE:
    st->idx = simp_expr(s, st->idx);
    st->val = simp_expr(s, st->val);
    st->limit = simp_expr(s, st->limit);
    return;
  case LS_PREFETCH:
    st->idx = simp_expr(s, st->idx);
    return;
  case LS_PREFETCH_NEXT: return;
  }
}

void lf_simplify(lfunc *f) {
  simp *s = calloc(1, sizeof *s);
  if (!s) return;   /* the kernel stays as built: correct, only slower */
  s->f = f;
  s->gen = 1;
  visit(s, f->body);
  free(s);
}
