/* conv2d_common.c: shared pieces of the conv2d templates. */
#include <stdio.h>
#include <string.h>
#include "conv2d_common.h"

temper_status conv_ctx_init(conv_ctx *c, prim *p, int vec, diag *d) {
  memset(c, 0, sizeof *c);
  c->p = p;
  c->f = p->f;
  c->d = d;
  const node *m = p->master;
  const attrs_t *a = m->attrs;
  if (workload_of(m, &c->w)) return diag_fail(d, TEMPER_EINTERNAL, "conv2d: not a conv2d");
  space_build_for(&c->w, vec, p->l1d, p->l2, &c->space);
  if (!p->cfg || !space_valid(&c->space, p->cfg))
    return diag_fail(d, TEMPER_EINTERNAL, "conv2d %s: %s", a->v[ATTR_SCHEDULE].s, p->cfg ? "the config is not a valid point of its space" : "no config");
  c->cfg = *p->cfg;
  c->OH = workload_out(&c->w, 2);
  c->OW = workload_out(&c->w, 3);
  c->Cg = c->w.C / c->w.G;
  c->Kg = c->w.K / c->w.G;
  c->sb = layout_block(a->v[ATTR_DATA_LAYOUT].s, 'c');
  c->x_nchw = !c->sb;
  c->ib = c->cfg.tmpl == TMPL_WINOGRAD ? cfg_get(&c->space, &c->cfg, K_IC_BN)
          : c->cfg.tmpl == TMPL_DEPTHWISE ? c->sb
                                          : layout_block(a->v[ATTR_KERNEL_LAYOUT].s, 'i');
  if (c->x_nchw) c->sb = c->ib;
  c->ob = layout_block(a->v[ATTR_OUT_LAYOUT].s, 'c');
  const node *b = p->fn->body;
  c->y_nchw = b->kind == N_CALL && b->op == OP_LAYOUT_TRANSFORM && !strcmp(b->attrs->v[ATTR_DST_LAYOUT].s, "NCHW");
  if (!c->ib || !c->ob || layout_block(a->v[ATTR_KERNEL_LAYOUT].s, 'o') != c->ob ||
      (c->x_nchw && c->cfg.tmpl == TMPL_DEPTHWISE) || (c->ob % (c->ob < vec ? c->ob : vec) && c->cfg.tmpl != TMPL_NCHWC && c->cfg.tmpl != TMPL_1X1 && c->cfg.tmpl != TMPL_DEPTHWISE) ||
      (c->cfg.tmpl == TMPL_WINOGRAD) != (m->op == OP_CONV2D_WINOGRAD) || (c->x_nchw && c->cfg.tmpl == TMPL_WINOGRAD) ||
      (!c->x_nchw && c->sb != c->ib && !config_reads_block(&c->space, &c->cfg, c->sb)) || c->w.C % c->ib || c->w.C % c->sb ||
      (config_spans_groups(&c->space, &c->cfg) && (c->x_nchw || c->sb % c->ob)))   /* a spanning block loads its lanes from one stored block */
    return diag_fail(d, TEMPER_EINTERNAL, "conv2d: the layouts (%s, %s, %s) do not match the schedule %s", a->v[ATTR_DATA_LAYOUT].s,
                     a->v[ATTR_KERNEL_LAYOUT].s, a->v[ATTR_OUT_LAYOUT].s, a->v[ATTR_SCHEDULE].s);
  c->CB = c->w.C / c->ib;
  c->SB = c->w.C / c->sb;
  c->KB = c->w.K / c->ob;
  c->lanes = (int)(c->ob < vec ? c->ob : vec);
  c->nv = (int)((c->ob + c->lanes - 1) / c->lanes);
  c->tail = (int)(c->ob % c->lanes);
  if (c->nv > CONV_MAX_NV)
    return diag_fail(d, TEMPER_EINTERNAL, "conv2d: an output block of %lld channels is %d vectors of %d, more than the templates hold (%d)",
                     (long long)c->ob, c->nv, c->lanes, CONV_MAX_NV);
  c->xb = epi_param_buf(p, m->args[0]);
  c->wb = epi_param_buf(p, m->args[1]);
  return TEMPER_OK;
}

temper_status conv_pair_init(conv_pair *cp, prim *p, int vec, diag *d) {
  const sched_config *cfg;
  temper_status s = sched_config_of(p->pre, vec, &cp->parsed, &cfg, d);
  if (s) return s;
  if (!cfg)
    return diag_error(d, p->pre->loc, "%s fed into %s in one function needs a schedule", ir_op_name(p->pre), ir_op_name(p->master));
  cp->pre_view = *p;
  cp->pre_view.master = p->pre;
  cp->pre_view.pre = NULL;
  cp->pre_view.cfg = cfg;
  s = conv_ctx_init(&cp->pre, &cp->pre_view, vec, d);
  return s ? s : conv_ctx_init(&cp->cons, p, vec, d);
}

lexpr *conv_in_range(conv_ctx *c, lexpr *v, int64_t hi) {
  lfunc *f = c->f;
  return lx_bin(f, LO_AND, lx_bin(f, LO_LE, CI(c, 0), v), lx_bin(f, LO_LT, v, CI(c, hi)));
}

lexpr *conv_clamp(conv_ctx *c, lexpr *v, int64_t hi) {
  return lx_bin(c->f, LO_MIN, lx_bin(c->f, LO_MAX, v, CI(c, 0)), CI(c, hi - 1));
}

lexpr *conv_x_index(conv_ctx *c, lexpr *n, lexpr *icb, lexpr *ici, lexpr *ih, lexpr *iw) {
  lfunc *f = c->f;
  const conv_workload *w = &c->w;
  if (c->x_nchw) {
    lexpr *ch = lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, n, CI(c, c->CB)), icb), CI(c, c->ib)), ici);
    return lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, ch, CI(c, w->H)), ih), CI(c, w->W)), iw);
  }
  lexpr *outer = icb, *inner = ici;   /* the storage block, and the channel within it */
  if (c->sb > c->ib) {                /* ic_bn divides the stored block: part of one */
    outer = lx_bin(f, LO_DIV, icb, CI(c, c->sb / c->ib));
    inner = lx_add(f, lx_mul(f, lx_bin(f, LO_MOD, icb, CI(c, c->sb / c->ib)), CI(c, c->ib)), ici);
  } else if (c->sb < c->ib) {         /* several stored blocks (Winograd: ici a constant multiple of sb's part) */
    outer = lx_add(f, lx_mul(f, icb, CI(c, c->ib / c->sb)), lx_bin(f, LO_DIV, ici, CI(c, c->sb)));
    inner = lx_bin(f, LO_MOD, ici, CI(c, c->sb));
  }
  lexpr *plane = lx_add(f, lx_mul(f, n, CI(c, c->SB)), outer);
  return lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, plane, CI(c, w->H)), ih), CI(c, w->W)), iw), CI(c, c->sb)), inner);
}

lexpr *conv_lane_limit(conv_ctx *c, int j) { return c->tail && j == c->nv - 1 ? CI(c, c->tail) : NULL; }

lexpr *conv_weight_vec(conv_ctx *c, lexpr *wi, int j) {
  return lx_load(c->f, c->wb, lx_add(c->f, wi, CI(c, (int64_t)j * c->lanes)), c->lanes, 1, conv_lane_limit(c, j));
}

void conv_acc_zero(conv_ctx *c, lstmt *blk, int *acc, int n) {
  for (int i = 0; i < n; i++) {
    acc[i] = lf_slot(c->f, c->lanes);
    ls_add(c->f, blk, ls_decl(c->f, acc[i], lx_flt(c->f, 0, c->lanes)));
  }
}

void conv_1x1_block(conv_ctx *c, lstmt *lb, int xbuf, int vxb, int vwb, int mn, const int *off_var, int64_t off_step,
                    int64_t ic_stride, int unroll_ic, const int *acc) {
  lfunc *f = c->f;
  int64_t copies = unroll_ic ? c->ib : 1;
  lstmt *li = lb;
  int vi = -1;
  if (!unroll_ic) {
    vi = lf_var(f, "ic");
    li = ls_add(f, lb, ls_for(f, vi, CI(c, 0), CI(c, c->ib), LOOP_SERIAL));
  }
  for (int64_t u = 0; u < copies; u++) {
    lexpr *ic = unroll_ic ? CI(c, u) : CV(c, vi);
    int ws[CONV_MAX_NV];
    for (int j = 0; j < c->nv; j++) {
      ws[j] = lf_slot(f, c->lanes);
      ls_add(f, li, ls_decl(f, ws[j], conv_weight_vec(c, lx_add(f, CV(c, vwb), lx_mul(f, ic, CI(c, c->ob))), j)));
    }
    for (int t = 0; t < mn; t++) {
      int xs = lf_slot(f, 1);
      lexpr *off = off_var ? CV(c, off_var[t]) : CI(c, t * off_step);
      lexpr *icoff = ic_stride == 1 ? ic : lx_mul(f, ic, CI(c, ic_stride));
      ls_add(f, li, ls_decl(f, xs, lx_load(f, xbuf, lx_add(f, lx_add(f, CV(c, vxb), off), icoff), 1, 1, NULL)));
      for (int j = 0; j < c->nv; j++) {
        int a = acc[t * c->nv + j];
        ls_add(f, li, ls_set(f, a, lx_fma(f, lx_slot(f, xs), lx_slot(f, ws[j]), lx_slot(f, a))));
      }
    }
  }
}

void conv_store(conv_ctx *c, lstmt *blk, int acc, lexpr *n, lexpr *kb, lexpr *oh, lexpr *ow, int j) {
  lfunc *f = c->f;
  lexpr *coord[5] = {n, kb, oh, ow, CI(c, (int64_t)j * c->lanes)};
  epi e = {.p = c->p, .master_val = lx_slot(f, acc), .lane_axis = 4, .lanes = c->lanes, .limit = conv_lane_limit(c, j), .d = c->d};
  const node *b = c->p->fn->body;
  if (c->to_row) {
    lexpr *v = epi_eval(&e, c->row_node, coord);
    lexpr *row = c->row_rows ? CV(c, c->row_slot) : kb;
    lexpr *idx = lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, row, CI(c, c->OW)), ow), CI(c, c->ob)), CI(c, (int64_t)j * c->lanes));
    ls_add(f, blk, ls_store(f, c->row_buf, idx, v, 1, e.limit));
    return;
  }
  if (c->y_nchw) {   /* the epilogue ends in NCHW<ob>c → NCHW: one strided store */
    lexpr *v = epi_eval(&e, b->args[0], coord);
    lexpr *ch = lx_add(f, lx_add(f, lx_mul(f, kb, CI(c, c->ob)), CI(c, (int64_t)j * c->lanes)), lx_mul(f, n, CI(c, c->w.K)));
    lexpr *idx = lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, ch, CI(c, c->OH)), oh), CI(c, c->OW)), ow);
    ls_add(f, blk, ls_store(f, c->p->out_buf, idx, v, c->OH * c->OW, e.limit));
    return;
  }
  lexpr *v = epi_eval(&e, b, coord);
  lexpr *pix = lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, n, CI(c, c->KB)), kb), CI(c, c->OH)), oh), CI(c, c->OW)), ow);
  lexpr *idx = lx_add(f, lx_mul(f, pix, CI(c, c->ob)), CI(c, (int64_t)j * c->lanes));
  ls_add(f, blk, ls_store(f, c->p->out_buf, idx, v, 1, e.limit));
}

void conv_prefetch_input(conv_ctx *c, lstmt *loop, lstmt *body, lexpr *n) {
  lfunc *f = c->f;
  int64_t floats = c->w.C * c->w.H * c->w.W, lines = (floats + 15) / 16;
  if (floats * 4 > CONV_PREFETCH_BYTES) return;
  int first = ls_first_var(f, loop, "first");
  lstmt *br = ls_add(f, body, ls_if(f, lx_bin(f, LO_EQ, lx_var(f, loop->id), lx_var(f, first))));
  int v = lf_var(f, "line");
  lstmt *l = ls_add(f, ls_then(br), ls_for(f, v, lx_int(f, 0), lx_int(f, lines), LOOP_SERIAL));
  ls_add(f, l, ls_prefetch(f, c->xb, lx_add(f, lx_mul(f, n, lx_int(f, floats)), lx_mul(f, lx_var(f, v), lx_int(f, 16)))));
}

void conv_prefetch_span(conv_ctx *c, lstmt *body, lexpr *cond, lexpr *n, lexpr *pos, int64_t span) {
  lfunc *f = c->f;
  if (c->x_nchw) return;
  int64_t plane = c->w.H * c->w.W, lines = (span * c->sb + 15) / 16;
  if (span > plane) lines = (plane * c->sb + 15) / 16;
  lstmt *at_start = cond->k == LX_INT && cond->ival ? body : ls_then(ls_add(f, body, ls_if(f, cond)));
  int vb = lf_var(f, "pcb"), vl = lf_var(f, "line");
  lstmt *lb = ls_add(f, at_start, ls_for(f, vb, lx_int(f, 0), lx_int(f, c->SB), LOOP_SERIAL));
  lstmt *ll = ls_add(f, lb, ls_for(f, vl, lx_int(f, 0), lx_int(f, lines), LOOP_SERIAL));
  /* ((n·SB + cb)·H·W + pos)·sb + line·16: past the plane's end it reaches
   * the next block's start (or past the buffer: a prefetch never faults) */
  lexpr *at = lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, n, lx_int(f, c->SB)), lx_var(f, vb)), lx_int(f, plane)), pos),
                             lx_int(f, c->sb)), lx_mul(f, lx_var(f, vl), lx_int(f, 16)));
  ls_add(f, ll, ls_prefetch(f, c->xb, at));
}
