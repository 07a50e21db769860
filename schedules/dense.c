/* dense.c: y[b, u] = Σ_i x[b, i]·W[u, i]. Both rows are contiguous along i,
 * so the reduction runs in vector lanes along i (masked tail) and ends in a
 * horizontal sum; output rows u run in parallel. */
#include "schedules.h"

temper_status sched_dense(prim *p, int vec, diag *d) {
  lfunc *f = p->f;
  const node *m = p->master;
  int64_t B = m->ty.shape.d[0], U = m->ty.shape.d[1], I = m->args[0]->ty.shape.d[1];
  int xb = epi_param_buf(p, m->args[0]), wb = epi_param_buf(p, m->args[1]);
  int vu = lf_var(f, "u"), vb = lf_var(f, "b"), vi = lf_var(f, "ib");
  lstmt *lu = ls_add(f, f->body, ls_for(f, vu, lx_int(f, 0), lx_int(f, U), LOOP_PARALLEL));
  lstmt *lb = ls_add(f, lu, ls_for(f, vb, lx_int(f, 0), lx_int(f, B), LOOP_SERIAL));
  int acc = lf_slot(f, vec);
  ls_add(f, lb, ls_decl(f, acc, lx_flt(f, 0, vec)));
  int64_t nib = (I + vec - 1) / vec;
  lstmt *li = ls_add(f, lb, ls_for(f, vi, lx_int(f, 0), lx_int(f, nib), LOOP_SERIAL));
  lexpr *i0 = lx_mul(f, lx_var(f, vi), lx_int(f, vec));
  lexpr *lim = I % vec ? lx_bin(f, LO_SUB, lx_int(f, I), i0) : NULL;
  lexpr *xv = lx_load(f, xb, lx_add(f, lx_mul(f, lx_var(f, vb), lx_int(f, I)), i0), vec, 1, lim);
  lexpr *wv = lx_load(f, wb, lx_add(f, lx_mul(f, lx_var(f, vu), lx_int(f, I)), i0), vec, 1, lim);
  ls_add(f, li, ls_set(f, acc, lx_fma(f, xv, wv, lx_slot(f, acc))));
  epi e = {.p = p, .lanes = 1, .d = d, .master_val = lx_un(f, LO_HSUM, lx_slot(f, acc))};
  lexpr *c[2] = {lx_var(f, vb), lx_var(f, vu)};
  lexpr *v = epi_eval(&e, p->fn->body, c);
  ls_add(f, lb, ls_store(f, p->out_buf, lx_add(f, lx_mul(f, lx_var(f, vb), lx_int(f, U)), lx_var(f, vu)), v, 1, NULL));
  return d->status;
}
