/* layer_norm.c: a layer norm over one axis, then its epilogue.
 *
 * Over the channels of NCHW<b>c (ConvNeXt's, once its permutes have sunk:
 * compiler/sink.c) one pixel at a time, pixels parallel: its C / b blocks
 * are H·W·b floats apart, each read as vectors (sched_block_lanes); the
 * sum of the blocks, across the lanes, is the mean; the sum of the squared
 * deviations (a second pass, the pixel's few lines still in L1: no
 * cancellation of E[x²] − E[x]²) the variance; a third pass writes
 * (x − mean) / sqrt(var + ε) through the epilogue (γ, β). One read of the
 * tensor from memory and one write, where the ops it stands for made seven
 * kernels.
 *
 * Any other axis, or NCHW: rows of the axis (stride: the axes after it),
 * the same three passes, scalar — a layer norm the layout pass could not
 * block (its input in NCHW) or over an axis other than the channels. */
#include "schedules.h"

/* The three passes over one group of `count` values (a pixel's channels,
 * a row), inside the parallel loop body lo: vectors q in [0, n_vec) of L
 * lanes from element `at` (an expression of q's variable vq) — their sum,
 * the mean; the sum of squared deviations, 1 / sqrt(var + eps); then the
 * epilogue at coordinates c (lanes along lane_axis), stored at `at` */
static void normalise(prim *p, lstmt *lo, int vq, int64_t n_vec, lexpr *at, int L, int64_t count, double eps, lexpr *const *c,
                      int lane_axis, diag *d) {
  lfunc *f = p->f;
  int in = epi_param_buf(p, p->master->args[0]);
  int acc = lf_slot(f, L), mean = lf_slot(f, 1), rstd = lf_slot(f, 1);
  ls_add(f, lo, ls_decl(f, acc, lx_flt(f, 0, L)));
  lstmt *l1 = ls_add(f, lo, ls_for(f, vq, lx_int(f, 0), lx_int(f, n_vec), LOOP_SERIAL));
  ls_add(f, l1, ls_set(f, acc, lx_bin(f, LO_FADD, lx_slot(f, acc), lx_load(f, in, at, L, 1, NULL))));
  lexpr *sum = L > 1 ? lx_un(f, LO_HSUM, lx_slot(f, acc)) : lx_slot(f, acc);
  ls_add(f, lo, ls_decl(f, mean, lx_bin(f, LO_FMUL, sum, lx_flt(f, 1.0 / (double)count, 1))));
  lexpr *dev = lx_bin(f, LO_FSUB, lx_load(f, in, at, L, 1, NULL), lx_bcast(f, lx_slot(f, mean), L));
  ls_add(f, lo, ls_set(f, acc, lx_flt(f, 0, L)));
  lstmt *l2 = ls_add(f, lo, ls_for(f, vq, lx_int(f, 0), lx_int(f, n_vec), LOOP_SERIAL));
  ls_add(f, l2, ls_set(f, acc, lx_fma(f, dev, dev, lx_slot(f, acc))));
  lexpr *var = lx_bin(f, LO_FMUL, L > 1 ? lx_un(f, LO_HSUM, lx_slot(f, acc)) : lx_slot(f, acc), lx_flt(f, 1.0 / (double)count, 1));
  ls_add(f, lo, ls_decl(f, rstd, lx_bin(f, LO_FDIV, lx_flt(f, 1, 1), lx_un(f, LO_SQRT, lx_bin(f, LO_FADD, var, lx_flt(f, eps, 1))))));
  lstmt *l3 = ls_add(f, lo, ls_for(f, vq, lx_int(f, 0), lx_int(f, n_vec), LOOP_SERIAL));
  epi e = {.p = p, .lanes = L, .lane_axis = lane_axis, .d = d};
  e.master_val = lx_bin(f, LO_FMUL, dev, lx_bcast(f, lx_slot(f, rstd), L));
  ls_add(f, l3, ls_store(f, p->out_buf, at, epi_eval(&e, p->fn->body, c), 1, NULL));
}

/* over the channels of NCHW<b>c: a pixel per iteration, its blocks as vectors of sched_block_lanes */
static void blocked(prim *p, const shape_t *xs, double eps, diag *d) {
  lfunc *f = p->f;
  int64_t N = xs->d[0], CB = xs->d[1], H = xs->d[2], W = xs->d[3], b = xs->d[4], HW = H * W;
  int L = sched_block_lanes(b, f->vec);
  int64_t per = b / L;
  int vo = lf_var(f, "pix"), vq = lf_var(f, "q");
  lstmt *lo = ls_add(f, f->body, ls_for(f, vo, lx_int(f, 0), lx_int(f, N * HW), N * HW > 1 ? LOOP_PARALLEL : LOOP_SERIAL));
  lexpr *n = lx_bin(f, LO_DIV, lx_var(f, vo), lx_int(f, HW)), *hw = lx_bin(f, LO_MOD, lx_var(f, vo), lx_int(f, HW));
  /* vector q of the pixel: block q / per, lanes (q % per)·L on */
  lexpr *cb = lx_bin(f, LO_DIV, lx_var(f, vq), lx_int(f, per)), *j = lx_mul(f, lx_bin(f, LO_MOD, lx_var(f, vq), lx_int(f, per)), lx_int(f, L));
  lexpr *at = lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, n, lx_int(f, CB)), cb), lx_int(f, HW)), hw), lx_int(f, b)), j);
  lexpr *c[5] = {n, cb, lx_bin(f, LO_DIV, hw, lx_int(f, W)), lx_bin(f, LO_MOD, hw, lx_int(f, W)), j};
  normalise(p, lo, vq, CB * per, at, L, CB * b, eps, c, 4, d);
}

/* over axis ax of a plain tensor: a row (stride: the axes after ax) per iteration, scalar */
static void rows(prim *p, const shape_t *xs, int ax, double eps, diag *d) {
  lfunc *f = p->f;
  int r = xs->ndim;
  int64_t len = xs->d[ax], inner = 1, outer = 1;
  for (int i = 0; i < ax; i++) outer *= xs->d[i];
  for (int i = ax + 1; i < r; i++) inner *= xs->d[i];
  int vo = lf_var(f, "row"), vj = lf_var(f, "j");
  lstmt *lo = ls_add(f, f->body, ls_for(f, vo, lx_int(f, 0), lx_int(f, outer * inner), outer * inner > 1 ? LOOP_PARALLEL : LOOP_SERIAL));
  lexpr *o = lx_bin(f, LO_DIV, lx_var(f, vo), lx_int(f, inner)), *i = lx_bin(f, LO_MOD, lx_var(f, vo), lx_int(f, inner));
  lexpr *at = lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, o, lx_int(f, len)), lx_var(f, vj)), lx_int(f, inner)), i);
  /* the point's coordinates: the outer index over the axes before ax, j, the inner over those after */
  lexpr *c[TEMPER_MAX_DIMS];
  for (int k = ax - 1; k >= 0; k--) {
    c[k] = k == 0 ? o : lx_bin(f, LO_MOD, o, lx_int(f, xs->d[k]));
    o = lx_bin(f, LO_DIV, o, lx_int(f, xs->d[k]));
  }
  c[ax] = lx_var(f, vj);
  for (int k = r - 1; k > ax; k--) {
    c[k] = k == ax + 1 ? i : lx_bin(f, LO_MOD, i, lx_int(f, xs->d[k]));
    i = lx_bin(f, LO_DIV, i, lx_int(f, xs->d[k]));
  }
  normalise(p, lo, vj, len, at, 1, len, eps, c, r - 1, d);
}

temper_status sched_layer_norm(prim *p, diag *d) {
  const node *m = p->master;
  const shape_t *xs = &m->args[0]->ty.shape;
  /* a fused program written by hand (simplify splits γ and β off, and fuse
   * adds only elementwise ops of its shape) */
  if (m->n_args != 1)
    return diag_error(d, m->loc, "nn.layer_norm with gamma and beta in a primitive function: the schedule takes the data alone"
                                 " (gamma and beta as a multiply and an add after it)");
  if (!shape_eq(&m->ty.shape, &p->fn->body->ty.shape))
    return diag_error(d, m->loc, "nn.layer_norm: the ops after it in its primitive function change its shape");
  int ax = (int)m->attrs->v[ATTR_AXIS].i[0];
  if (ax < 0) ax += xs->ndim;
  double eps = m->attrs->v[ATTR_EPSILON].f;
  if (layout_block(m->attrs->v[ATTR_LAYOUT].s, 'c')) blocked(p, xs, eps, d);
  else rows(p, xs, ax, eps, d);
  return d->status;
}
