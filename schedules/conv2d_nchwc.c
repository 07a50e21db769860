/* conv2d_nchwc.c: direct conv2d in the blocked layouts, after AutoTVM's x86
 * template. Input NCHW<ib>c, weights OIHW<ib>i<ob>o, output NCHW<ob>c; any
 * stride, padding, dilation and groups (ob divides the output channels of a
 * group, ib its input channels).
 *
 *   parallel over (n, oc-block, row-tile)          [par=0; par=1: (n, oc-block)]
 *   or, when conv_split_rows (the input outweighs the weights, unless only
 *   the input stays in L2), rows outer:
 *   parallel over (n, row-tile, oc-block)          [par=0; par=1: (n, row-tile)]
 *   so that each thread reads the rows it wrote as the previous layer
 *     for each tile of oh_bn rows × ow_bn columns:  acc[h][t][j] = 0
 *       for ic-block, r, s, ic (order=0)  |  r, s, ic-block, ic (order=1)
 *         w[j] = W[kb][icb][r][s][ic][j*16 : j*16+16]
 *         acc[h][t][j] += bcast(X[n][icb][ih(h, r)][iw(t, s)][ic]) * w[j]
 *       epilogue(acc) → out[n][kb][oh][ow][0:ob]        (contiguous vector stores)
 *
 * Tiles whose window lies inside the input take a path without bounds
 * checks; border tiles select 0 for padding. unroll_kw replicates the s loop.
 *
 * Groups narrower than a vector (ResNeXt's 4 and 8 channels): a block of ob
 * output channels may span ob/Kg groups (config_spans_groups, Cg = Kg),
 * read in NCHW<ob>c. Lane l of an output vector reduces over its own
 * group's Cg inputs, which lie in the same lanes of the input block's
 * vector; for each ic of the group (unrolled):
 *         x = X[n][kb][ih][iw][j*16 : j*16+16]          (one vector load)
 *         acc[h][t][j] += splat_groups(x, Kg, ic) * w[j]  (lane l: x[l - l%Kg + ic])
 * instead of blocks of Kg lanes (a quarter of a vector for Kg = 4). With s
 * unrolled, the loads and splats of a window column are shared by every s
 * that reads it. */
#include "conv2d_common.h"

typedef struct nchwc {
  conv_ctx *c;
  int64_t oh_bn, ow_bn, unroll_kw, order, par, CBgb;
  int span;   /* the output block spans groups (config_spans_groups): each lane reads its own group's inputs */
  int v_n, v_kb;
} nchwc;

typedef struct red_pos { lexpr *icb_rel, *r, *s, *ici; } red_pos;

/* how a tile treats the input's borders */
typedef struct edges {
  int rows;   /* rows may fall in the padding: test them at run time */
  int cols;   /* columns may: constant ow0 and s resolve it now, else tested */
} edges;

static void body(nchwc *k, lstmt *blk, red_pos p, lexpr *oh0, lexpr *ow0, int ohn, int own, int *acc, edges e) {
  conv_ctx *c = k->c;
  lfunc *f = c->f;
  const conv_workload *w = &c->w;
  lexpr *kb = CV(c, k->v_kb), *n = CV(c, k->v_n);
  /* the group's first input block */
  lexpr *icb = lx_add(f, lx_mul(f, lx_bin(f, LO_DIV, lx_mul(f, kb, CI(c, c->ob)), CI(c, c->Kg)), CI(c, k->CBgb)), p.icb_rel);
  lexpr *wrow = lx_add(f, lx_mul(f, kb, CI(c, k->CBgb)), p.icb_rel);
  lexpr *wi = lx_mul(f, lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, wrow, CI(c, w->R)), p.r), CI(c, w->S)), p.s),
                                              CI(c, c->ib)), p.ici), CI(c, c->ob));
  int wslot[CONV_MAX_NV];
  for (int j = 0; j < c->nv; j++) {
    wslot[j] = lf_slot(f, c->lanes);
    ls_add(f, blk, ls_decl(f, wslot[j], conv_weight_vec(c, wi, j)));
  }
  for (int h = 0; h < ohn; h++) {
    lexpr *ih = lx_add(f, lx_bin(f, LO_SUB, lx_mul(f, lx_add(f, oh0, CI(c, h)), CI(c, w->sh)), CI(c, w->pt)), lx_mul(f, p.r, CI(c, w->dh)));
    for (int t = 0; t < own; t++) {
      lexpr *iw = lx_add(f, lx_bin(f, LO_SUB, lx_mul(f, lx_add(f, ow0, CI(c, t)), CI(c, w->sw)), CI(c, w->pl)), lx_mul(f, p.s, CI(c, w->dw)));
      int col_test = e.cols;
      if (e.cols && iw->k == LX_INT) {   /* resolved now: skip a column in the padding */
        if (iw->ival < 0 || iw->ival >= w->W) continue;
        col_test = 0;
      }
      lexpr *ihc = e.rows ? conv_clamp(c, ih, w->H) : ih, *iwc = col_test ? conv_clamp(c, iw, w->W) : iw;
      lexpr *ok = lx_int(f, 1);
      if (e.rows) ok = conv_in_range(c, ih, w->H);
      if (col_test) ok = lx_bin(f, LO_AND, ok, conv_in_range(c, iw, w->W));
      if (k->span) {   /* vector j's lanes over lanes/Kg groups: their inputs, each lane splatted its group's input ici */
        for (int j = 0; j < c->nv; j++) {
          lexpr *xi = conv_x_index(c, n, lx_add(f, icb, CI(c, (int64_t)j * c->lanes / c->ib)), CI(c, 0), ihc, iwc);
          lexpr *x = lx_select(f, ok, lx_load(f, c->xb, xi, c->lanes, 1, NULL), lx_flt(f, 0, c->lanes));
          x = lx_splat_groups(f, x, (int)c->Kg, (int)p.ici->ival);
          int a = acc[(h * own + t) * c->nv + j];
          ls_add(f, blk, ls_set(f, a, lx_fma(f, x, lx_slot(f, wslot[j]), lx_slot(f, a))));
        }
        continue;
      }
      lexpr *x = lx_select(f, ok, lx_load(f, c->xb, conv_x_index(c, n, icb, p.ici, ihc, iwc), 1, 1, NULL), lx_flt(f, 0, 1));
      int xs = lf_slot(f, 1);
      ls_add(f, blk, ls_decl(f, xs, x));
      for (int j = 0; j < c->nv; j++) {
        int a = acc[(h * own + t) * c->nv + j];
        ls_add(f, blk, ls_set(f, a, lx_fma(f, lx_slot(f, xs), lx_slot(f, wslot[j]), lx_slot(f, a))));
      }
    }
  }
}

/* the s loop: a real loop, or S copies of the body */
static void window_cols(nchwc *k, lstmt *blk, red_pos p, lexpr *oh0, lexpr *ow0, int ohn, int own, int *acc, edges e, int inner_ic) {
  conv_ctx *c = k->c;
  lfunc *f = c->f;
  int64_t S = c->w.S;
  for (int64_t s = 0; s < (k->unroll_kw ? S : 1); s++) {
    lstmt *sb = blk;
    if (k->unroll_kw) p.s = CI(c, s);
    else {
      int vs = lf_var(f, "s");
      sb = ls_add(f, blk, ls_for(f, vs, CI(c, 0), CI(c, S), LOOP_SERIAL));
      p.s = CV(c, vs);
    }
    lstmt *lb = sb;
    if (inner_ic && k->span) {   /* one ic-block (ic_bn = Cg): no loop, so that every s is one block of code */
      ls_add(f, sb, ls_prefetch_next(f, c->pf_calls * c->w.R * S));
      p.icb_rel = CI(c, 0);
    } else if (inner_ic) {   /* order 1: ic-block and ic inside the window */
      int vb = lf_var(f, "icb");
      lb = ls_add(f, sb, ls_for(f, vb, CI(c, 0), CI(c, k->CBgb), LOOP_SERIAL));
      ls_add(f, lb, ls_prefetch_next(f, c->pf_calls * c->w.R * S * k->CBgb));
      p.icb_rel = CV(c, vb);
    }
    if (k->span) {   /* ic unrolled: each a constant lane of the groups' splat (the window's columns
                      * loaded once per r and ic for every s: codegen's common subexpressions) */
      for (int64_t ic = 0; ic < c->ib; ic++) {
        p.ici = CI(c, ic);
        body(k, lb, p, oh0, ow0, ohn, own, acc, e);
      }
    } else {
      int vi = lf_var(f, "ic");
      lstmt *li = ls_add(f, lb, ls_for(f, vi, CI(c, 0), CI(c, c->ib), LOOP_SERIAL));
      p.ici = CV(c, vi);
      body(k, li, p, oh0, ow0, ohn, own, acc, e);
    }
  }
}

static void reduction(nchwc *k, lstmt *blk, lexpr *oh0, lexpr *ow0, int ohn, int own, int *acc, edges e) {
  conv_ctx *c = k->c;
  lfunc *f = c->f;
  red_pos p = {0};
  int vr = lf_var(f, "r");
  if (k->order == 0) {
    int vb = lf_var(f, "icb");
    lstmt *lb = ls_add(f, blk, ls_for(f, vb, CI(c, 0), CI(c, k->CBgb), LOOP_SERIAL));
    ls_add(f, lb, ls_prefetch_next(f, c->pf_calls * k->CBgb));
    lstmt *lr = ls_add(f, lb, ls_for(f, vr, CI(c, 0), CI(c, c->w.R), LOOP_SERIAL));
    p.icb_rel = CV(c, vb);
    p.r = CV(c, vr);
    window_cols(k, lr, p, oh0, ow0, ohn, own, acc, e, 0);
  } else {
    lstmt *lr = ls_add(f, blk, ls_for(f, vr, CI(c, 0), CI(c, c->w.R), LOOP_SERIAL));
    p.r = CV(c, vr);
    window_cols(k, lr, p, oh0, ow0, ohn, own, acc, e, 1);
  }
}

/* one tile; rows_border says whether its rows can reach the padding */
static void tile(nchwc *k, lstmt *blk, lexpr *oh0, lexpr *ow0, int ohn, int own, int cols_border) {
  conv_ctx *c = k->c;
  lfunc *f = c->f;
  const conv_workload *w = &c->w;
  int acc[REG_BUDGET * 4];
  conv_acc_zero(c, blk, acc, ohn * own * c->nv);
  lexpr *r0 = lx_bin(f, LO_SUB, lx_mul(f, oh0, CI(c, w->sh)), CI(c, w->pt));
  lexpr *r1 = lx_add(f, r0, CI(c, (ohn - 1) * w->sh + (w->R - 1) * w->dh));
  lexpr *rows_in = lx_bin(f, LO_AND, lx_bin(f, LO_LE, CI(c, 0), r0), lx_bin(f, LO_LT, r1, CI(c, w->H)));
  if (rows_in->k == LX_INT) {
    reduction(k, blk, oh0, ow0, ohn, own, acc, (edges){!rows_in->ival, cols_border});
  } else {
    lstmt *br = ls_add(f, blk, ls_if(f, rows_in));
    reduction(k, ls_then(br), oh0, ow0, ohn, own, acc, (edges){0, cols_border});
    reduction(k, ls_else(br), oh0, ow0, ohn, own, acc, (edges){1, cols_border});
  }
  for (int h = 0; h < ohn; h++)
    for (int t = 0; t < own; t++)
      for (int j = 0; j < c->nv; j++)
        conv_store(c, blk, acc[(h * own + t) * c->nv + j], CV(c, k->v_n), CV(c, k->v_kb), lx_add(f, oh0, CI(c, h)),
                   lx_add(f, ow0, CI(c, t)), j);
}

/* every column tile of a row tile: border tiles one by one with their
 * columns known now, the interior ones in a loop without tests */
static void row_tile(nchwc *k, lstmt *blk, lexpr *oh0, int ohn) {
  conv_ctx *c = k->c;
  lfunc *f = c->f;
  const conv_workload *w = &c->w;
  int64_t full = c->OW / k->ow_bn, rem = c->OW % k->ow_bn, lo = full, hi = full;
  for (int64_t t = 0; t < full; t++) {
    int64_t first = t * k->ow_bn * w->sw - w->pl, last = first + (k->ow_bn - 1) * w->sw + (w->S - 1) * w->dw;
    if (first >= 0 && last < w->W) {
      if (lo == full) lo = t;
      hi = t + 1;
    }
  }
  for (int64_t t = 0; t < lo; t++) tile(k, blk, oh0, CI(c, t * k->ow_bn), ohn, (int)k->ow_bn, 1);
  if (hi - lo == 1) tile(k, blk, oh0, CI(c, lo * k->ow_bn), ohn, (int)k->ow_bn, 0);
  else if (hi > lo) {
    int vo = lf_var(f, "owt");
    lstmt *l = ls_add(f, blk, ls_for(f, vo, CI(c, lo), CI(c, hi - lo), LOOP_SERIAL));
    tile(k, l, oh0, lx_mul(f, CV(c, vo), CI(c, k->ow_bn)), ohn, (int)k->ow_bn, 0);
  }
  for (int64_t t = hi; t < full; t++) tile(k, blk, oh0, CI(c, t * k->ow_bn), ohn, (int)k->ow_bn, 1);
  if (rem) tile(k, blk, oh0, CI(c, full * k->ow_bn), ohn, (int)rem, 1);
}

temper_status sched_conv2d_nchwc(prim *p, int vec, diag *d) {
  conv_ctx c;
  temper_status s = conv_ctx_init(&c, p, vec, d);
  if (s) return s;
  lfunc *f = c.f;
  nchwc k = {.c = &c, .oh_bn = cfg_get(&c.space, &c.cfg, K_OH_BN), .ow_bn = cfg_get(&c.space, &c.cfg, K_OW_BN),
             .unroll_kw = cfg_get(&c.space, &c.cfg, K_UNROLL_KW), .order = cfg_get(&c.space, &c.cfg, K_ORDER),
             .par = cfg_get(&c.space, &c.cfg, K_PAR), .CBgb = c.Cg / c.ib, .span = config_spans_groups(&c.space, &c.cfg)};
  int64_t OHT = (c.OH + k.oh_bn - 1) / k.oh_bn, full = c.OH / k.oh_bn, rem = c.OH % k.oh_bn;
  c.pf_calls = c.w.N * c.KB * OHT * ((c.OW + k.ow_bn - 1) / k.ow_bn);   /* register tiles in the kernel */
  k.v_n = lf_var(f, "n");
  k.v_kb = lf_var(f, "kb");
  int v_oht = lf_var(f, "oht");
  lstmt *blk;
  if (conv_split_rows(&c.space)) {   /* rows outer: each thread keeps to the rows it wrote before */
    int vt = lf_var(f, k.par == 0 ? "n_oht_kb" : "n_oht");
    int64_t inner = k.par == 0 ? c.KB : 1;
    lstmt *lt = ls_add(f, f->body, ls_for(f, vt, CI(&c, 0), CI(&c, c.w.N * OHT * inner), LOOP_PARALLEL));
    ls_add(f, lt, ls_let(f, k.v_n, lx_bin(f, LO_DIV, CV(&c, vt), CI(&c, OHT * inner))));
    ls_add(f, lt, ls_let(f, v_oht, lx_bin(f, LO_MOD, lx_bin(f, LO_DIV, CV(&c, vt), CI(&c, inner)), CI(&c, OHT))));
    /* the row tile's input window, prefetched as the tile starts on this thread */
    lexpr *r0 = lx_bin(f, LO_MAX, lx_bin(f, LO_SUB, lx_mul(f, lx_mul(f, CV(&c, v_oht), CI(&c, k.oh_bn)), CI(&c, c.w.sh)), CI(&c, c.w.pt)), CI(&c, 0));
    int64_t span = ((k.oh_bn - 1) * c.w.sh + (c.w.R - 1) * c.w.dh + 1) * c.w.W;
    if (k.par == 0) {
      ls_add(f, lt, ls_let(f, k.v_kb, lx_bin(f, LO_MOD, CV(&c, vt), CI(&c, c.KB))));
      int first = ls_first_var(f, lt, "first");
      lexpr *starts = lx_bin(f, LO_OR, lx_bin(f, LO_EQ, CV(&c, k.v_kb), CI(&c, 0)), lx_bin(f, LO_EQ, CV(&c, vt), CV(&c, first)));
      conv_prefetch_span(&c, lt, starts, CV(&c, k.v_n), lx_mul(f, r0, CI(&c, c.w.W)), span);
      blk = lt;
    } else {
      conv_prefetch_span(&c, lt, lx_int(f, 1), CV(&c, k.v_n), lx_mul(f, r0, CI(&c, c.w.W)), span);
      blk = ls_add(f, lt, ls_for(f, k.v_kb, CI(&c, 0), CI(&c, c.KB), LOOP_SERIAL));
    }
  } else if (k.par == 0) {
    int vt = lf_var(f, "n_kb_oht");
    blk = ls_add(f, f->body, ls_for(f, vt, CI(&c, 0), CI(&c, c.w.N * c.KB * OHT), LOOP_PARALLEL));
    ls_add(f, blk, ls_let(f, k.v_n, lx_bin(f, LO_DIV, CV(&c, vt), CI(&c, c.KB * OHT))));
    conv_prefetch_input(&c, blk, blk, CV(&c, k.v_n));
    ls_add(f, blk, ls_let(f, k.v_kb, lx_bin(f, LO_MOD, lx_bin(f, LO_DIV, CV(&c, vt), CI(&c, OHT)), CI(&c, c.KB))));
    ls_add(f, blk, ls_let(f, v_oht, lx_bin(f, LO_MOD, CV(&c, vt), CI(&c, OHT))));
  } else {
    int vt = lf_var(f, "n_kb");
    lstmt *lt = ls_add(f, f->body, ls_for(f, vt, CI(&c, 0), CI(&c, c.w.N * c.KB), LOOP_PARALLEL));
    ls_add(f, lt, ls_let(f, k.v_n, lx_bin(f, LO_DIV, CV(&c, vt), CI(&c, c.KB))));
    conv_prefetch_input(&c, lt, lt, CV(&c, k.v_n));
    ls_add(f, lt, ls_let(f, k.v_kb, lx_bin(f, LO_MOD, CV(&c, vt), CI(&c, c.KB))));
    blk = ls_add(f, lt, ls_for(f, v_oht, CI(&c, 0), CI(&c, OHT), LOOP_SERIAL));
  }
  lexpr *oh0 = lx_mul(f, CV(&c, v_oht), CI(&c, k.oh_bn));
  if (!rem) row_tile(&k, blk, oh0, (int)k.oh_bn);
  else if (!full) row_tile(&k, blk, oh0, (int)rem);
  else {
    lstmt *br = ls_add(f, blk, ls_if(f, lx_bin(f, LO_LT, CV(&c, v_oht), CI(&c, full))));
    row_tile(&k, ls_then(br), oh0, (int)k.oh_bn);
    row_tile(&k, ls_else(br), oh0, (int)rem);
  }
  return d->status;
}
