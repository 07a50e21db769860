/* softmax.c: softmax along one axis: max, sum of exp, scale; rows parallel. */
#include <math.h>
#include "schedules.h"

temper_status sched_softmax(prim *p, diag *d) {
  lfunc *f = p->f;
  const node *m = p->master;
  if (p->fn->body != m) return diag_fail(d, TEMPER_EINTERNAL, "softmax cannot have an epilogue");
  const shape_t *s = &m->ty.shape;
  int ax = (int)m->attrs->v[ATTR_AXIS].i[0];
  if (ax < 0) ax += s->ndim;
  int64_t len = s->d[ax], inner = 1, outer = 1;
  for (int i = 0; i < ax; i++) outer *= s->d[i];
  for (int i = ax + 1; i < s->ndim; i++) inner *= s->d[i];
  int in = epi_param_buf(p, m->args[0]);
  int vo = lf_var(f, "row"), vj = lf_var(f, "j");
  lstmt *lo = ls_add(f, f->body, ls_for(f, vo, lx_int(f, 0), lx_int(f, outer * inner), LOOP_PARALLEL));
  /* row start: (o / inner) * len * inner + o % inner, step inner */
  lexpr *o = lx_var(f, vo);
  lexpr *base = lx_add(f, lx_mul(f, lx_bin(f, LO_DIV, o, lx_int(f, inner)), lx_int(f, len * inner)), lx_bin(f, LO_MOD, o, lx_int(f, inner)));
  int vb = lf_var(f, "base");
  ls_add(f, lo, ls_let(f, vb, base));
  lexpr *at = lx_add(f, lx_var(f, vb), lx_mul(f, lx_var(f, vj), lx_int(f, inner)));
  int mx = lf_slot(f, 1), sum = lf_slot(f, 1);
  ls_add(f, lo, ls_decl(f, mx, lx_flt(f, -INFINITY, 1)));
  lstmt *l1 = ls_add(f, lo, ls_for(f, vj, lx_int(f, 0), lx_int(f, len), LOOP_SERIAL));
  ls_add(f, l1, ls_set(f, mx, lx_bin(f, LO_FMAX, lx_slot(f, mx), lx_load(f, in, at, 1, 1, NULL))));
  ls_add(f, lo, ls_decl(f, sum, lx_flt(f, 0, 1)));
  lstmt *l2 = ls_add(f, lo, ls_for(f, vj, lx_int(f, 0), lx_int(f, len), LOOP_SERIAL));
  lexpr *ex = lx_un(f, LO_EXP, lx_bin(f, LO_FSUB, lx_load(f, in, at, 1, 1, NULL), lx_slot(f, mx)));
  ls_add(f, l2, ls_store(f, p->out_buf, at, ex, 1, NULL));
  ls_add(f, l2, ls_set(f, sum, lx_bin(f, LO_FADD, lx_slot(f, sum), lx_load(f, p->out_buf, at, 1, 1, NULL))));
  lstmt *l3 = ls_add(f, lo, ls_for(f, vj, lx_int(f, 0), lx_int(f, len), LOOP_SERIAL));
  ls_add(f, l3, ls_store(f, p->out_buf, at, lx_bin(f, LO_FDIV, lx_load(f, p->out_buf, at, 1, 1, NULL), lx_slot(f, sum)), 1, NULL));
  return d->status;
}
