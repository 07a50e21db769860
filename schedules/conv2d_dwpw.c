/* conv2d_dwpw.c: a depthwise conv2d and the 1×1 conv2d it feeds (fuse_with's
 * pair: MobileNet's depthwise → project), one kernel. Each output row of the
 * depthwise, all its channels, goes through the depthwise's epilogue into a
 * local buffer — a row of at most a few tens of KB, in L1 — and the 1×1
 * reads it from there: the depthwise output is never written to memory and
 * read back, which unfused costs a round trip through L2 or, for the large
 * early layers (1.6–1.8 MB at 112×112×32 and 56×56×144), through L3.
 *
 *   parallel over (n, oh)
 *     for cb: depthwise row (n, cb, oh) by its own config → epilogue → row[cb][ow][0:ob]
 *     for kb, for tiles of m_bn columns (the 1×1's config, at most a row):
 *       acc[t][j] = 0
 *       for icb, ic (unrolled when unroll_ic):
 *         w[j] = W[kb][icb][0][0][ic][j*16 : +16]
 *         acc[t][j] += bcast(row[icb][ow0 + t][ic]) * w[j]
 *       epilogue(acc) → out[n][kb][oh][ow0 + t][0:ob]
 *
 * Each conv2d keeps its own config (the tuner measures them apart); the
 * pair is made only where the build's join allows (engine/layout.c,
 * layout_join_dw): a depthwise config and a 1×1 stride-1 config reading the
 * depthwise's output block as it is. */
#include <string.h>
#include "conv2d_common.h"

/* a tile of mn columns of output row (n, oh) for output channel block kb */
static void pw_tile(conv_ctx *c, int rb, lstmt *blk, lexpr *n, lexpr *kb, lexpr *oh, lexpr *ow0, int mn, int unroll_ic) {
  lfunc *f = c->f;
  int acc[REG_BUDGET * 4];
  conv_acc_zero(c, blk, acc, mn * c->nv);
  int vb = lf_var(f, "icb");
  lstmt *lb = ls_add(f, blk, ls_for(f, vb, CI(c, 0), CI(c, c->CB), LOOP_SERIAL));
  /* block vb's first channel in the row: its stored block's columns, and where in it */
  int64_t r = c->sb / c->ib;
  lexpr *plane = r > 1 ? lx_bin(f, LO_DIV, CV(c, vb), CI(c, r)) : CV(c, vb);
  lexpr *xb0 = lx_mul(f, lx_add(f, lx_mul(f, plane, CI(c, c->w.W)), ow0), CI(c, c->sb));
  if (r > 1) xb0 = lx_add(f, xb0, lx_mul(f, lx_bin(f, LO_MOD, CV(c, vb), CI(c, r)), CI(c, c->ib)));
  int vxb = lf_var(f, "xbase"), vwb = lf_var(f, "wbase");
  ls_add(f, lb, ls_let(f, vxb, xb0));
  ls_add(f, lb, ls_let(f, vwb, lx_mul(f, lx_add(f, lx_mul(f, kb, CI(c, c->CB)), CV(c, vb)), CI(c, c->ib * c->ob))));
  conv_1x1_block(c, lb, rb, vxb, vwb, mn, NULL, c->sb, 1, unroll_ic, acc);
  for (int t = 0; t < mn; t++)
    for (int j = 0; j < c->nv; j++) conv_store(c, blk, acc[t * c->nv + j], n, kb, oh, lx_add(f, ow0, CI(c, t)), j);
}

temper_status sched_conv2d_dwpw(prim *p, int vec, diag *d) {
  const node *dwn = p->pre, *pwn = p->master;
  conv_pair pair;
  temper_status s = conv_pair_init(&pair, p, vec, d);
  if (s) return s;
  conv_ctx *cd = &pair.pre, *cp = &pair.cons;
  const conv_workload *dw = &cd->w, *pw = &cp->w;
  if (cd->cfg.tmpl != TMPL_DEPTHWISE || cp->cfg.tmpl != TMPL_1X1 || pw->R != 1 || pw->S != 1 || pw->sh != 1 || pw->sw != 1 ||
      pw->pt || pw->pl || pw->G != 1 || cp->x_nchw || pw->N != dw->N || pw->C != dw->K || pw->H != cd->OH || pw->W != cd->OW ||
      cp->sb != cd->ob || cp->sb % cp->ib || !shape_eq(&pwn->args[0]->ty.shape, &dwn->ty.shape))
    return diag_fail(d, TEMPER_EINTERNAL, "conv2d_dwpw: %s (%s) cannot feed %s (%s) in one kernel: a depthwise conv2d and a "
                     "1×1 stride-1 conv2d reading its output block as it is",
                     ir_op_name(dwn), dwn->attrs->v[ATTR_SCHEDULE].s, ir_op_name(pwn), pwn->attrs->v[ATTR_SCHEDULE].s);
  lfunc *f = p->f;
  int rb = lf_local(f, "dw_row", cd->KB * cd->OW * cd->ob);
  cd->to_row = 1;
  cd->row_buf = rb;
  cd->row_node = pwn->args[0];
  cd->y_nchw = 0;
  int64_t mb = cfg_get(&cp->space, &cp->cfg, K_M_BN), unroll = cfg_get(&cp->space, &cp->cfg, K_UNROLL_IC);
  if (mb > cp->OW) mb = cp->OW;
  int vt = lf_var(f, "n_oh"), vn = lf_var(f, "n"), voh = lf_var(f, "oh"), vcb = lf_var(f, "dcb"), vkb = lf_var(f, "kb");
  lstmt *lt = ls_add(f, f->body, ls_for(f, vt, CI(cp, 0), CI(cp, pw->N * cp->OH), LOOP_PARALLEL));
  ls_add(f, lt, ls_let(f, vn, lx_bin(f, LO_DIV, CV(cp, vt), CI(cp, cp->OH))));
  ls_add(f, lt, ls_let(f, voh, lx_bin(f, LO_MOD, CV(cp, vt), CI(cp, cp->OH))));
  ls_add(f, lt, ls_prefetch_next(f, pw->N * cp->OH));
  lstmt *lc = ls_add(f, lt, ls_for(f, vcb, CI(cp, 0), CI(cp, cd->KB), LOOP_SERIAL));
  dw_emit_row(cd, lc, CV(cp, vn), CV(cp, vcb), CV(cp, voh));
  lstmt *lk = ls_add(f, lt, ls_for(f, vkb, CI(cp, 0), CI(cp, cp->KB), LOOP_SERIAL));
  int64_t full = cp->OW / mb, rem = cp->OW % mb;
  if (full == 1) pw_tile(cp, rb, lk, CV(cp, vn), CV(cp, vkb), CV(cp, voh), CI(cp, 0), (int)mb, (int)unroll);
  else if (full > 1) {
    int vm = lf_var(f, "mt");
    lstmt *lm = ls_add(f, lk, ls_for(f, vm, CI(cp, 0), CI(cp, full), LOOP_SERIAL));
    pw_tile(cp, rb, lm, CV(cp, vn), CV(cp, vkb), CV(cp, voh), lx_mul(f, CV(cp, vm), CI(cp, mb)), (int)mb, (int)unroll);
  }
  if (rem) pw_tile(cp, rb, lk, CV(cp, vn), CV(cp, vkb), CV(cp, voh), CI(cp, full * mb), (int)rem, (int)unroll);
  return d->status;
}
