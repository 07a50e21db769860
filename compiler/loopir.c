/* loopir.c: builders (with integer constant folding) and the printer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "loopir.h"

lfunc *lf_new(const char *name, int vec) {
  lfunc *f = calloc(1, sizeof *f);
  if (!f) return NULL;
  f->vec = vec;
  f->name = arena_strdup(&f->a, name);
  f->body = ls_seq(f);
  return f;
}

void lf_free(lfunc *f) {
  if (!f) return;
  arena_free(&f->a);
  free(f);
}

int lf_buf(lfunc *f, const char *name, int64_t size) {
  if (f->n_bufs == (int)(sizeof f->bufs / sizeof f->bufs[0])) { f->a.failed = 1; return 0; }
  f->bufs[f->n_bufs] = (lbuf){arena_strdup(&f->a, name), size, 0};
  return f->n_bufs++;
}

int lf_local(lfunc *f, const char *name, int64_t size) {
  int b = lf_buf(f, name, size);
  if (!f->a.failed) f->bufs[b].local = 1;
  return b;
}

int lf_n_args(const lfunc *f) {
  int n = 0;
  while (n < f->n_bufs && !f->bufs[n].local) n++;
  return n;
}

int lf_var(lfunc *f, const char *name) {
  if (f->n_vars == LF_MAX_VARS) { f->a.failed = 1; return 0; }
  f->var_names[f->n_vars] = arena_strdup(&f->a, name);
  return f->n_vars++;
}

int lf_slot(lfunc *f, int lanes) {
  if (f->n_slots == LF_MAX_SLOTS) { f->a.failed = 1; return 0; }
  f->slot_lanes[f->n_slots] = lanes;
  return f->n_slots++;
}

static lexpr *ex(lfunc *f, lx_kind k, int lanes, int is_float) {
  lexpr *e = arena_alloc(&f->a, sizeof *e);
  if (!e) return &f->oom_e;
  e->k = k;
  e->lanes = lanes;
  e->is_float = is_float;
  return e;
}

lexpr *lx_int(lfunc *f, int64_t v) {
  lexpr *e = ex(f, LX_INT, 1, 0);
  e->ival = v;
  return e;
}

lexpr *lx_flt(lfunc *f, double v, int lanes) {
  lexpr *e = ex(f, LX_FLT, lanes, 1);
  e->fval = v;
  return e;
}

lexpr *lx_var(lfunc *f, int var) {
  lexpr *e = ex(f, LX_VAR, 1, 0);
  e->id = var;
  return e;
}

lexpr *lx_slot(lfunc *f, int slot) {
  lexpr *e = ex(f, LX_SLOT, f->slot_lanes[slot], 1);
  e->id = slot;
  return e;
}

static int64_t fold_int(lx_op op, int64_t a, int64_t b, int *ok) {
  *ok = 1;
  switch (op) {
  case LO_ADD: return a + b;
  case LO_SUB: return a - b;
  case LO_MUL: return a * b;
  case LO_DIV: if (b > 0) return a >= 0 ? a / b : -((-a + b - 1) / b); break;
  case LO_MOD: if (b > 0) return ((a % b) + b) % b; break;
  case LO_MIN: return a < b ? a : b;
  case LO_MAX: return a > b ? a : b;
  case LO_LT: return a < b;
  case LO_LE: return a <= b;
  case LO_EQ: return a == b;
  case LO_AND: return a && b;
  case LO_OR: return a || b;
  default: break;
  }
  *ok = 0;
  return 0;
}

lexpr *lx_bin(lfunc *f, lx_op op, lexpr *a, lexpr *b) {
  int is_float = op >= LO_FADD && op <= LO_FMIN;
  if (!is_float) {
    int ok;
    if (a->k == LX_INT && b->k == LX_INT) {
      int64_t v = fold_int(op, a->ival, b->ival, &ok);
      if (ok) return lx_int(f, v);
    }
    if (op == LO_ADD && a->k == LX_INT && a->ival == 0) return b;
    if ((op == LO_ADD || op == LO_SUB) && b->k == LX_INT && b->ival == 0) return a;
    if (op == LO_MUL && ((a->k == LX_INT && a->ival == 0) || (b->k == LX_INT && b->ival == 0))) return lx_int(f, 0);
    if (op == LO_MUL && a->k == LX_INT && a->ival == 1) return b;
    if ((op == LO_MUL || op == LO_DIV) && b->k == LX_INT && b->ival == 1) return a;
    if (op == LO_AND && a->k == LX_INT) return a->ival ? b : a;
    if (op == LO_AND && b->k == LX_INT) return b->ival ? a : b;
  }
  int lanes = a->lanes > b->lanes ? a->lanes : b->lanes;
  if (is_float || op == LO_FLT || op == LO_FGT) {   /* float operands of one width (a comparison's result: i1 lanes) */
    a = lx_bcast(f, a, lanes);
    b = lx_bcast(f, b, lanes);
  }
  lexpr *e = ex(f, LX_BIN, lanes, is_float);
  e->op = op;
  e->a = a;
  e->b = b;
  return e;
}

lexpr *lx_un(lfunc *f, lx_op op, lexpr *a) {
  lexpr *e = ex(f, LX_UN, op == LO_HSUM ? 1 : a->lanes, 1);
  e->op = op;
  e->a = a;
  return e;
}

lexpr *lx_select(lfunc *f, lexpr *c, lexpr *a, lexpr *b) {
  if (c->k == LX_INT) return c->ival ? a : b;
  int lanes = a->lanes > b->lanes ? a->lanes : b->lanes;
  if (a->is_float) {
    a = lx_bcast(f, a, lanes);
    b = lx_bcast(f, b, lanes);
  }
  lexpr *e = ex(f, LX_SELECT, lanes, a->is_float);
  e->a = a;
  e->b = b;
  e->c = c;
  return e;
}

lexpr *lx_load(lfunc *f, int buf, lexpr *idx, int lanes, int64_t stride, lexpr *limit) {
  if (limit && limit->k == LX_INT && limit->ival >= lanes) limit = NULL;
  lexpr *e = ex(f, LX_LOAD, lanes, 1);
  e->id = buf;
  e->a = idx;
  e->stride = lanes > 1 ? stride : 1;
  e->limit = limit;
  return e;
}

lexpr *lx_bcast(lfunc *f, lexpr *a, int lanes) {
  if (a->lanes == lanes) return a;
  if (a->k == LX_FLT) return lx_flt(f, a->fval, lanes);
  lexpr *e = ex(f, LX_BCAST, lanes, a->is_float);
  e->a = a;
  return e;
}

lexpr *lx_splat_groups(lfunc *f, lexpr *a, int group, int k) {
  if (group == 1) return a;
  lexpr *e = ex(f, LX_SPLAT_GROUPS, a->lanes, a->is_float);
  e->a = a;
  e->stride = group;
  e->ival = k;
  return e;
}

lexpr *lx_fma(lfunc *f, lexpr *a, lexpr *b, lexpr *c) {
  int lanes = a->lanes > b->lanes ? a->lanes : b->lanes;
  lanes = c->lanes > lanes ? c->lanes : lanes;
  lexpr *e = ex(f, LX_FMA, lanes, 1);
  e->a = lx_bcast(f, a, lanes);
  e->b = lx_bcast(f, b, lanes);
  e->c = lx_bcast(f, c, lanes);
  return e;
}

static lstmt *st(lfunc *f, ls_kind k) {
  lstmt *s = arena_alloc(&f->a, sizeof *s);
  if (!s) return &f->oom_s;
  s->k = k;
  return s;
}

lstmt *ls_seq(lfunc *f) { return st(f, LS_SEQ); }

lstmt *ls_for(lfunc *f, int var, lexpr *lo, lexpr *ext, loop_kind k) {
  lstmt *s = st(f, LS_FOR);
  s->id = var;
  s->lo = lo;
  s->ext = ext;
  s->loop = k;
  s->first_var = -1;
  return s;
}

int ls_first_var(lfunc *f, lstmt *loop, const char *name) {
  int v = lf_var(f, name);
  if (loop != &f->oom_s) loop->first_var = v;
  return v;
}

lstmt *ls_prefetch(lfunc *f, int buf, lexpr *idx) {
  lstmt *s = st(f, LS_PREFETCH);
  s->id = buf;
  s->idx = idx;
  return s;
}

lstmt *ls_prefetch_next(lfunc *f, int64_t calls) {
  lstmt *s = st(f, LS_PREFETCH_NEXT);
  s->val = lx_int(f, calls < 1 ? 1 : calls);
  return s;
}

lstmt *ls_let(lfunc *f, int var, lexpr *v) {
  lstmt *s = st(f, LS_LET);
  s->id = var;
  s->val = v;
  return s;
}

lstmt *ls_decl(lfunc *f, int slot, lexpr *init) {
  lstmt *s = st(f, LS_DECL);
  s->id = slot;
  s->val = lx_bcast(f, init, f->slot_lanes[slot]);
  return s;
}

lstmt *ls_set(lfunc *f, int slot, lexpr *v) {
  lstmt *s = st(f, LS_SET);
  s->id = slot;
  s->val = lx_bcast(f, v, f->slot_lanes[slot]);
  return s;
}

lstmt *ls_store(lfunc *f, int buf, lexpr *idx, lexpr *v, int64_t stride, lexpr *limit) {
  if (limit && limit->k == LX_INT && limit->ival >= v->lanes) limit = NULL;
  lstmt *s = st(f, LS_STORE);
  s->id = buf;
  s->idx = idx;
  s->val = v;
  s->stride = v->lanes > 1 ? stride : 1;
  s->limit = limit;
  return s;
}

lstmt *ls_if(lfunc *f, lexpr *cond) {
  lstmt *s = st(f, LS_IF);
  s->cond = cond;
  ls_add(f, s, ls_seq(f));
  ls_add(f, s, ls_seq(f));
  return s;
}

lstmt *ls_then(lstmt *s) { return s->n_body > 0 ? s->body[0] : s; }
lstmt *ls_else(lstmt *s) { return s->n_body > 1 ? s->body[1] : s; }

lstmt *ls_add(lfunc *f, lstmt *seq, lstmt *s) {
  if (seq == &f->oom_s) return s;
  if (seq->n_body == seq->cap) {
    int nc = seq->cap ? seq->cap * 2 : 4;
    lstmt **nb = arena_alloc(&f->a, sizeof(lstmt *) * (size_t)nc);
    if (!nb) return &f->oom_s;
    if (seq->n_body) memcpy(nb, seq->body, sizeof(lstmt *) * (size_t)seq->n_body);
    seq->body = nb;
    seq->cap = nc;
  }
  seq->body[seq->n_body++] = s;
  return s;
}

/* ---- printer ---- */
typedef struct pbuf { char *s; size_t len, cap; } pbuf;

static void pr(pbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void pr(pbuf *b, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (b->s && b->len + (size_t)n < b->cap) { b->len += (size_t)n; return; }
    size_t nc = b->cap * 2 + (size_t)n + 256;
    char *ns = realloc(b->s, nc);
    if (!ns) return;
    b->s = ns;
    b->cap = nc;
  }
}

static const char *op_str[] = {"+", "-", "*", "/", "%", "min", "max", "<", "<=", "==", "&&", "||",
                               "+", "-", "*", "/", "fmax", "fmin", "<", ">", "exp", "sqrt", "-", "hsum"};

static void pe(pbuf *b, const lfunc *f, const lexpr *e) {
  switch (e->k) {
  case LX_INT: pr(b, "%lld", (long long)e->ival); break;
  case LX_FLT: pr(b, e->lanes > 1 ? "%gf x%d" : "%gf", e->fval, e->lanes); break;
  case LX_VAR: pr(b, "%s", f->var_names[e->id]); break;
  case LX_SLOT: pr(b, "acc%d", e->id); break;
  case LX_BIN:
    if (e->op == LO_MIN || e->op == LO_MAX || e->op == LO_FMAX || e->op == LO_FMIN) {
      pr(b, "%s(", op_str[e->op]);
      pe(b, f, e->a);
      pr(b, ", ");
      pe(b, f, e->b);
      pr(b, ")");
    } else {
      pr(b, "(");
      pe(b, f, e->a);
      pr(b, " %s ", op_str[e->op]);
      pe(b, f, e->b);
      pr(b, ")");
    }
    break;
  case LX_UN: pr(b, "%s(", op_str[e->op]); pe(b, f, e->a); pr(b, ")"); break;
  case LX_SELECT:
    pr(b, "select(");
    pe(b, f, e->c);
    pr(b, ", ");
    pe(b, f, e->a);
    pr(b, ", ");
    pe(b, f, e->b);
    pr(b, ")");
    break;
  case LX_LOAD:
    pr(b, "%s[", f->bufs[e->id].name);
    pe(b, f, e->a);
    if (e->lanes > 1) pr(b, " : x%d stride %lld", e->lanes, (long long)e->stride);
    if (e->limit) { pr(b, " lanes < "); pe(b, f, e->limit); }
    pr(b, "]");
    break;
  case LX_BCAST: pr(b, "bcast%d(", e->lanes); pe(b, f, e->a); pr(b, ")"); break;
  case LX_FMA:
    pr(b, "fma(");
    pe(b, f, e->a);
    pr(b, ", ");
    pe(b, f, e->b);
    pr(b, ", ");
    pe(b, f, e->c);
    pr(b, ")");
    break;
  case LX_I2F: pr(b, "float("); pe(b, f, e->a); pr(b, ")"); break;
  case LX_SPLAT_GROUPS:
    pr(b, "splat_groups%lld.%lld(", (long long)e->stride, (long long)e->ival);
    pe(b, f, e->a);
    pr(b, ")");
    break;
  }
}

static void ps(pbuf *b, const lfunc *f, const lstmt *s, int ind) {
  static const char *kinds[] = {"for", "parallel for", "unrolled for"};
  switch (s->k) {
  case LS_SEQ:
    for (int i = 0; i < s->n_body; i++) ps(b, f, s->body[i], ind);
    break;
  case LS_FOR:
    pr(b, "%*s%s %s in [", ind, "", kinds[s->loop], f->var_names[s->id]);
    pe(b, f, s->lo);
    pr(b, ", +");
    pe(b, f, s->ext);
    pr(b, ")");
    if (s->first_var >= 0) pr(b, " first %s", f->var_names[s->first_var]);
    pr(b, ":\n");
    for (int i = 0; i < s->n_body; i++) ps(b, f, s->body[i], ind + 2);
    break;
  case LS_LET: pr(b, "%*s%s = ", ind, "", f->var_names[s->id]); pe(b, f, s->val); pr(b, "\n"); break;
  case LS_DECL: case LS_SET:
    pr(b, "%*s%sacc%d = ", ind, "", s->k == LS_DECL ? (f->slot_lanes[s->id] > 1 ? "vec " : "float ") : "", s->id);
    pe(b, f, s->val);
    pr(b, "\n");
    break;
  case LS_STORE:
    pr(b, "%*s%s[", ind, "", f->bufs[s->id].name);
    pe(b, f, s->idx);
    if (s->val->lanes > 1) pr(b, " : x%d stride %lld", s->val->lanes, (long long)s->stride);
    if (s->limit) { pr(b, " lanes < "); pe(b, f, s->limit); }
    pr(b, "] = ");
    pe(b, f, s->val);
    pr(b, "\n");
    break;
  case LS_PREFETCH:
    pr(b, "%*sprefetch %s[", ind, "", f->bufs[s->id].name);
    pe(b, f, s->idx);
    pr(b, "]\n");
    break;
  case LS_PREFETCH_NEXT:
    pr(b, "%*sprefetch_next 1/%lld\n", ind, "", (long long)s->val->ival);
    break;
  case LS_IF:
    pr(b, "%*sif ", ind, "");
    pe(b, f, s->cond);
    pr(b, ":\n");
    ps(b, f, s->body[0], ind + 2);
    if (s->body[1]->n_body) {
      pr(b, "%*selse:\n", ind, "");
      ps(b, f, s->body[1], ind + 2);
    }
    break;
  }
}

char *lf_print(const lfunc *f) {
  pbuf b = {0};
  pr(&b, "kernel %s(", f->name);
  int na = lf_n_args(f);
  for (int i = 0; i < na; i++)
    pr(&b, "%s%s%s[%lld]", i ? ", " : "", i == na - 1 ? "out " : "", f->bufs[i].name, (long long)f->bufs[i].size);
  pr(&b, ")  /* vector width %d */\n", f->vec);
  for (int i = na; i < f->n_bufs; i++) pr(&b, "  local %s[%lld]\n", f->bufs[i].name, (long long)f->bufs[i].size);
  ps(&b, f, f->body, 2);
  return b.s;
}
