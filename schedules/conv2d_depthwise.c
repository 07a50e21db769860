/* conv2d_depthwise.c: depthwise conv2d (groups = channels = outputs) in
 * NCHW<cb>c: the lanes are channels, so both the input and the weight are
 * vector loads and no broadcast is needed.
 *
 *   parallel over (n, c-block, oh)       [par=1: (n, c-block), oh serial]
 *     for each tile of ow_bn columns:  acc[t][j] = 0
 *       for r (rows clipped to the input):
 *         [unroll_kw=1] w[s][j] = W[cb][0][r][s][0][j*16 : +16] for every s;
 *           for each input column i of the tile (unrolled):
 *             x[j] = X[n][cb][ih][iw0 + i][j*16 : +16]
 *             acc[t][j] += x[j] * w[s][j]   for every (t, s) with t·sw + s·dw = i
 *         [unroll_kw=0] for s: w[j] = W[...][s]; acc[t][j] += X[..][iw(t, s)] * w[j]
 *       epilogue(acc) → out[n][cb][oh][ow][0:cb]
 * Version 2: unroll_kw=1 walks by input column (version 1 walked s-outer
 * and spilled; see columns()).                                              */
#include "conv2d_common.h"

enum { DW_MAX_COLS = 16 };   /* kernel widths unrolled by column; wider ones loop over s */

typedef struct dw {
  conv_ctx *c;
  int64_t ow_bn, unroll;
  int v_n, v_cb, v_oh, v_ih0, v_rlo, v_rext;
} dw;

/* input vector j at (row, iw): clamped and zero outside the row's columns when checked */
static lexpr *input(conv_ctx *c, lexpr *row, lexpr *iw, int j, int checked) {
  lfunc *f = c->f;
  lexpr *iwc = checked ? conv_clamp(c, iw, c->w.W) : iw;
  lexpr *xi = lx_add(f, lx_mul(f, lx_add(f, row, iwc), CI(c, c->ib)), CI(c, (int64_t)j * c->lanes));
  lexpr *x = lx_load(f, c->xb, xi, c->lanes, 1, conv_lane_limit(c, j));   /* a block's last vector may be part of one */
  return checked ? lx_select(f, conv_in_range(c, iw, c->w.W), x, lx_flt(f, 0, c->lanes)) : x;
}

/* weight vector j of kernel row vr, column s */
static lexpr *weight(dw *k, int vr, lexpr *s, int j) {
  conv_ctx *c = k->c;
  lfunc *f = c->f;
  lexpr *wi = lx_mul(f, lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, CV(c, k->v_cb), CI(c, c->w.R)), CV(c, vr)), CI(c, c->w.S)), s), CI(c, c->ob));
  return lx_load(f, c->wb, lx_add(f, wi, CI(c, (int64_t)j * c->lanes)), c->lanes, 1, conv_lane_limit(c, j));
}

/* Row r of the kernel with its columns unrolled, walked by input column:
 * the tile's input columns i = 0 .. (own-1)·sw + (S-1)·dw, each vector
 * loaded once and multiplied into every (t, s) with t·sw + s·dw = i. Each
 * accumulator still takes its s in increasing order, as the s-outer walk
 * did, so the sums are the same bits; but an input vector now lives for
 * its own FMAs only. Walked s-outer, the loads of a column shared by
 * several s (the same address) were merged by LLVM and stayed live across
 * the whole row: with 24 accumulators that spilled (on 56×56×144 the
 * kernel ran at 40 % of peak from L2 with half its loads and stores to the
 * stack). The row's S·nv weight vectors are loaded first. */
static void columns(dw *k, lstmt *lr, int vr, lexpr *row, lexpr *ow0, int own, int *acc, int checked) {
  conv_ctx *c = k->c;
  lfunc *f = c->f;
  const conv_workload *w = &c->w;
  int ws[DW_MAX_COLS][CONV_MAX_NV];
  for (int64_t s = 0; s < w->S; s++)
    for (int j = 0; j < c->nv; j++) {
      ws[s][j] = lf_slot(f, c->lanes);
      ls_add(f, lr, ls_decl(f, ws[s][j], weight(k, vr, CI(c, s), j)));
    }
  int64_t ncol = (int64_t)(own - 1) * w->sw + (w->S - 1) * w->dw + 1;
  lexpr *iw0 = lx_bin(f, LO_SUB, lx_mul(f, ow0, CI(c, w->sw)), CI(c, w->pl));
  for (int64_t i = 0; i < ncol; i++) {
    int64_t ts[DW_MAX_COLS], ss[DW_MAX_COLS], n = 0;
    for (int64_t s = 0; s < w->S; s++) {
      int64_t d = i - s * w->dw;
      if (d >= 0 && d % w->sw == 0 && d / w->sw < own) ts[n] = d / w->sw, ss[n++] = s;
    }
    if (!n) continue;
    lexpr *iw = lx_add(f, iw0, CI(c, i));
    for (int j = 0; j < c->nv; j++) {
      int xs = lf_slot(f, c->lanes);
      ls_add(f, lr, ls_decl(f, xs, input(c, row, iw, j, checked)));
      for (int u = 0; u < n; u++) {
        int a = acc[ts[u] * c->nv + j];
        ls_add(f, lr, ls_set(f, a, lx_fma(f, lx_slot(f, xs), lx_slot(f, ws[ss[u]][j]), lx_slot(f, a))));
      }
    }
  }
}

static void reduction(dw *k, lstmt *blk, lexpr *ow0, int own, int *acc, int checked) {
  conv_ctx *c = k->c;
  lfunc *f = c->f;
  const conv_workload *w = &c->w;
  int vr = lf_var(f, "r");
  lstmt *lr = ls_add(f, blk, ls_for(f, vr, CV(c, k->v_rlo), CV(c, k->v_rext), LOOP_SERIAL));
  lexpr *ih = lx_add(f, CV(c, k->v_ih0), lx_mul(f, CV(c, vr), CI(c, w->dh)));
  lexpr *row = c->ring_rows   /* a ring of the producer's rows (conv2d_pwdw.c): ih >= 0 here */
                  ? lx_mul(f, lx_bin(f, LO_MOD, ih, CI(c, c->ring_rows)), CI(c, w->W))
                  : lx_mul(f, lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, CV(c, k->v_n), CI(c, c->CB)), CV(c, k->v_cb)), CI(c, w->H)), ih), CI(c, w->W));
  if (k->unroll && w->S <= DW_MAX_COLS) {
    columns(k, lr, vr, row, ow0, own, acc, checked);
    return;
  }
  int vs = lf_var(f, "s");
  lstmt *sb = ls_add(f, lr, ls_for(f, vs, CI(c, 0), CI(c, w->S), LOOP_SERIAL));
  lexpr *s = CV(c, vs);
  int ws[CONV_MAX_NV];
  for (int j = 0; j < c->nv; j++) {
    ws[j] = lf_slot(f, c->lanes);
    ls_add(f, sb, ls_decl(f, ws[j], weight(k, vr, s, j)));
  }
  for (int t = 0; t < own; t++) {
    lexpr *iw = lx_add(f, lx_bin(f, LO_SUB, lx_mul(f, lx_add(f, ow0, CI(c, t)), CI(c, w->sw)), CI(c, w->pl)), lx_mul(f, s, CI(c, w->dw)));
    for (int j = 0; j < c->nv; j++) {
      int a = acc[t * c->nv + j];
      ls_add(f, sb, ls_set(f, a, lx_fma(f, input(c, row, iw, j, checked), lx_slot(f, ws[j]), lx_slot(f, a))));
    }
  }
}

static void tile(dw *k, lstmt *blk, lexpr *ow0, int own) {
  conv_ctx *c = k->c;
  lfunc *f = c->f;
  const conv_workload *w = &c->w;
  int acc[REG_BUDGET * 4];
  conv_acc_zero(c, blk, acc, own * c->nv);
  lexpr *c0 = lx_bin(f, LO_SUB, lx_mul(f, ow0, CI(c, w->sw)), CI(c, w->pl));
  lexpr *c1 = lx_add(f, c0, CI(c, (own - 1) * w->sw + (w->S - 1) * w->dw));
  lexpr *inside = lx_bin(f, LO_AND, lx_bin(f, LO_LE, CI(c, 0), c0), lx_bin(f, LO_LT, c1, CI(c, w->W)));
  if (inside->k == LX_INT) reduction(k, blk, ow0, own, acc, !inside->ival);
  else {
    lstmt *br = ls_add(f, blk, ls_if(f, inside));
    reduction(k, ls_then(br), ow0, own, acc, 0);
    reduction(k, ls_else(br), ow0, own, acc, 1);
  }
  for (int t = 0; t < own; t++)
    for (int j = 0; j < c->nv; j++)
      conv_store(c, blk, acc[t * c->nv + j], CV(c, k->v_n), CV(c, k->v_cb), CV(c, k->v_oh), lx_add(f, ow0, CI(c, t)), j);
}

static dw dw_init(conv_ctx *c) {
  lfunc *f = c->f;
  dw k = {.c = c, .ow_bn = cfg_get(&c->space, &c->cfg, K_OW_BN), .unroll = cfg_get(&c->space, &c->cfg, K_UNROLL_KW)};
  k.v_n = lf_var(f, "n");
  k.v_cb = lf_var(f, "cb");
  k.v_oh = lf_var(f, "oh");
  k.v_ih0 = lf_var(f, "ih0");
  k.v_rlo = lf_var(f, "r_lo");
  k.v_rext = lf_var(f, "r_ext");
  return k;
}

/* output row (n, cb, oh): its kernel rows clipped to the input, then its
 * tiles of ow_bn columns */
static void row(dw *k, lstmt *blk) {
  conv_ctx *c = k->c;
  lfunc *f = c->f;
  const conv_workload *w = &c->w;
  /* rows r with 0 <= ih0 + r*dh < H */
  ls_add(f, blk, ls_let(f, k->v_ih0, lx_bin(f, LO_SUB, lx_mul(f, CV(c, k->v_oh), CI(c, w->sh)), CI(c, w->pt))));
  lexpr *rlo = lx_bin(f, LO_MAX, CI(c, 0), lx_bin(f, LO_DIV, lx_add(f, lx_bin(f, LO_SUB, CI(c, 0), CV(c, k->v_ih0)), CI(c, w->dh - 1)), CI(c, w->dh)));
  lexpr *rhi = lx_bin(f, LO_MIN, CI(c, w->R), lx_bin(f, LO_DIV, lx_add(f, lx_bin(f, LO_SUB, CI(c, w->H), CV(c, k->v_ih0)), CI(c, w->dh - 1)), CI(c, w->dh)));
  ls_add(f, blk, ls_let(f, k->v_rlo, rlo));
  ls_add(f, blk, ls_let(f, k->v_rext, lx_bin(f, LO_MAX, CI(c, 0), lx_bin(f, LO_SUB, rhi, CV(c, k->v_rlo)))));
  int64_t full = c->OW / k->ow_bn, rem = c->OW % k->ow_bn;
  if (full == 1) tile(k, blk, CI(c, 0), (int)k->ow_bn);
  else if (full > 1) {
    int vo = lf_var(f, "owt");
    lstmt *lo = ls_add(f, blk, ls_for(f, vo, CI(c, 0), CI(c, full), LOOP_SERIAL));
    tile(k, lo, lx_mul(f, CV(c, vo), CI(c, k->ow_bn)), (int)k->ow_bn);
  }
  if (rem) tile(k, blk, CI(c, full * k->ow_bn), (int)rem);
}

void dw_emit_row(conv_ctx *c, lstmt *blk, lexpr *n, lexpr *cb, lexpr *oh) {
  dw k = dw_init(c);
  ls_add(c->f, blk, ls_let(c->f, k.v_n, n));
  ls_add(c->f, blk, ls_let(c->f, k.v_cb, cb));
  ls_add(c->f, blk, ls_let(c->f, k.v_oh, oh));
  row(&k, blk);
}

temper_status sched_conv2d_depthwise(prim *p, int vec, diag *d) {
  conv_ctx c;
  temper_status s = conv_ctx_init(&c, p, vec, d);
  if (s) return s;
  lfunc *f = c.f;
  const conv_workload *w = &c.w;
  dw k = dw_init(&c);
  int64_t par = cfg_get(&c.space, &c.cfg, K_PAR);
  lstmt *blk;
  if (par == 0) {
    int vt = lf_var(f, "n_cb_oh");
    blk = ls_add(f, f->body, ls_for(f, vt, CI(&c, 0), CI(&c, w->N * c.KB * c.OH), LOOP_PARALLEL));
    ls_add(f, blk, ls_let(f, k.v_n, lx_bin(f, LO_DIV, CV(&c, vt), CI(&c, c.KB * c.OH))));
    ls_add(f, blk, ls_let(f, k.v_cb, lx_bin(f, LO_MOD, lx_bin(f, LO_DIV, CV(&c, vt), CI(&c, c.OH)), CI(&c, c.KB))));
    ls_add(f, blk, ls_let(f, k.v_oh, lx_bin(f, LO_MOD, CV(&c, vt), CI(&c, c.OH))));
  } else {
    int vt = lf_var(f, "n_cb");
    lstmt *lt = ls_add(f, f->body, ls_for(f, vt, CI(&c, 0), CI(&c, w->N * c.KB), LOOP_PARALLEL));
    ls_add(f, lt, ls_let(f, k.v_n, lx_bin(f, LO_DIV, CV(&c, vt), CI(&c, c.KB))));
    ls_add(f, lt, ls_let(f, k.v_cb, lx_bin(f, LO_MOD, CV(&c, vt), CI(&c, c.KB))));
    blk = ls_add(f, lt, ls_for(f, k.v_oh, CI(&c, 0), CI(&c, c.OH), LOOP_SERIAL));
  }
  row(&k, blk);
  return d->status;
}
