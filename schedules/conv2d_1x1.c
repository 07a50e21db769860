/* conv2d_1x1.c: a 1×1 conv2d (no padding, any stride) as a blocked GEMM.
 * The output positions are flattened (m = oh·OW + ow), so a register tile
 * of m_bn positions runs across row ends and small 7×7 outputs waste no
 * tile; each position's input offset is computed once per tile.
 *
 *   parallel over (n, oc-block, m-tile)    [loop=1: (n, m-tile, oc-block)]
 *     acc[t][j] = 0
 *     for ic-block, ic (unrolled when unroll_ic):
 *       w[j] = W[kb][icb][0][0][ic][j*16 : +16]
 *       acc[t][j] += bcast(X[n][icb][pos(m0 + t)][ic]) * w[j]
 *     epilogue(acc) → out[n][kb][m0 + t][0:ob]                           */
#include "conv2d_common.h"

/* in_row: the tile's positions lie in one output row, so each one's input
 * offset is the first's plus a constant — one address register for all the
 * broadcasts. Across row ends every position keeps its own offset, and 14
 * to 28 of them outnumber the general registers: spilled, each broadcast
 * loaded its address first (MobileNetV2's 32→16 layer at 112×112 ran at
 * 125 GFLOP/s where the direct template's rows ran at 165). */
static void tile(conv_ctx *c, lstmt *blk, int v_n, int v_kb, lexpr *m0, int mn, int unroll_ic, int in_row) {
  lfunc *f = c->f;
  const conv_workload *w = &c->w;
  int acc[REG_BUDGET * 4], off[REG_BUDGET * 4], oh[REG_BUDGET * 4], ow[REG_BUDGET * 4];
  int64_t step = c->x_nchw ? w->sw : w->sw * c->sb;   /* input elements between neighbouring positions of a row */
  for (int t = 0; t < mn; t++) {   /* per position: output row/column and input offset */
    oh[t] = lf_var(f, "oh");
    ow[t] = lf_var(f, "ow");
    off[t] = lf_var(f, "xoff");
    if (in_row && t > 0) {
      ls_add(f, blk, ls_let(f, oh[t], CV(c, oh[0])));
      ls_add(f, blk, ls_let(f, ow[t], lx_add(f, CV(c, ow[0]), CI(c, t))));
      ls_add(f, blk, ls_let(f, off[t], lx_add(f, CV(c, off[0]), CI(c, t * step))));
    } else {
      lexpr *m = lx_add(f, m0, CI(c, t));
      ls_add(f, blk, ls_let(f, oh[t], lx_bin(f, LO_DIV, m, CI(c, c->OW))));
      ls_add(f, blk, ls_let(f, ow[t], lx_bin(f, LO_MOD, m, CI(c, c->OW))));
      lexpr *pos = lx_add(f, lx_mul(f, lx_mul(f, CV(c, oh[t]), CI(c, w->sh)), CI(c, w->W)), lx_mul(f, CV(c, ow[t]), CI(c, w->sw)));
      ls_add(f, blk, ls_let(f, off[t], c->x_nchw ? pos : lx_mul(f, pos, CI(c, c->sb))));
    }
    for (int j = 0; j < c->nv; j++) {
      acc[t * c->nv + j] = lf_slot(f, c->lanes);
      ls_add(f, blk, ls_decl(f, acc[t * c->nv + j], lx_flt(f, 0, c->lanes)));
    }
  }
  int vb = lf_var(f, "icb");
  lstmt *lb = ls_add(f, blk, ls_for(f, vb, CI(c, 0), CI(c, c->CB), LOOP_SERIAL));
  ls_add(f, lb, ls_prefetch_next(f, c->pf_calls * c->CB));
  int vxb = lf_var(f, "xbase"), vwb = lf_var(f, "wbase");
  /* block vb's first channel: its stored block's plane, and where in it (sb = ib but where ic_bn divides the stored block) */
  int64_t r = c->sb / c->ib;
  lexpr *plane = lx_add(f, lx_mul(f, CV(c, v_n), CI(c, c->SB)), r > 1 ? lx_bin(f, LO_DIV, CV(c, vb), CI(c, r)) : CV(c, vb));
  lexpr *xb0 = lx_mul(f, plane, CI(c, w->H * w->W * c->sb));
  if (r > 1) xb0 = lx_add(f, xb0, lx_mul(f, lx_bin(f, LO_MOD, CV(c, vb), CI(c, r)), CI(c, c->ib)));
  ls_add(f, lb, ls_let(f, vxb, xb0));
  ls_add(f, lb, ls_let(f, vwb, lx_mul(f, lx_add(f, lx_mul(f, CV(c, v_kb), CI(c, c->CB)), CV(c, vb)), CI(c, c->ib * c->ob))));
  conv_1x1_block(c, lb, c->xb, vxb, vwb, mn, off, 0, c->x_nchw ? w->H * w->W : 1, unroll_ic, acc);
  for (int t = 0; t < mn; t++)
    for (int j = 0; j < c->nv; j++) conv_store(c, blk, acc[t * c->nv + j], CV(c, v_n), CV(c, v_kb), CV(c, oh[t]), CV(c, ow[t]), j);
}

/* a tile of mb positions: in one row where the rows are a whole number of
 * tiles; else in one row when it starts far enough from the row's end
 * (tested), across the row end otherwise */
static void full_tile(conv_ctx *c, lstmt *blk, int v_n, int v_kb, lexpr *m0, int64_t mb, int64_t unroll) {
  lfunc *f = c->f;
  if (c->OW % mb == 0) tile(c, blk, v_n, v_kb, m0, (int)mb, (int)unroll, 1);
  else if (mb > c->OW) tile(c, blk, v_n, v_kb, m0, (int)mb, (int)unroll, 0);
  else {
    lstmt *br = ls_add(f, blk, ls_if(f, lx_bin(f, LO_LE, lx_add(f, lx_bin(f, LO_MOD, m0, CI(c, c->OW)), CI(c, mb)), CI(c, c->OW))));
    tile(c, ls_then(br), v_n, v_kb, m0, (int)mb, (int)unroll, 1);
    tile(c, ls_else(br), v_n, v_kb, m0, (int)mb, (int)unroll, 0);
  }
}

temper_status sched_conv2d_1x1(prim *p, int vec, diag *d) {
  conv_ctx c;
  temper_status s = conv_ctx_init(&c, p, vec, d);
  if (s) return s;
  lfunc *f = c.f;
  int64_t mb = cfg_get(&c.space, &c.cfg, K_M_BN), unroll = cfg_get(&c.space, &c.cfg, K_UNROLL_IC),
          loop = cfg_get(&c.space, &c.cfg, K_LOOP);
  int64_t M = c.OH * c.OW, MT = (M + mb - 1) / mb, full = M / mb, rem = M % mb;
  c.pf_calls = c.w.N * c.KB * MT;   /* position tiles in the kernel */
  int v_n = lf_var(f, "n"), v_kb = lf_var(f, "kb"), v_mt = lf_var(f, "mt"), vt = lf_var(f, loop == 0 ? "n_kb_mt" : "n_mt_kb");
  lstmt *lt = ls_add(f, f->body, ls_for(f, vt, CI(&c, 0), CI(&c, c.w.N * c.KB * MT), LOOP_PARALLEL));
  lexpr *t = CV(&c, vt);
  ls_add(f, lt, ls_let(f, v_n, lx_bin(f, LO_DIV, t, CI(&c, c.KB * MT))));
  if (loop == 0) {
    conv_prefetch_input(&c, lt, lt, CV(&c, v_n));
    ls_add(f, lt, ls_let(f, v_kb, lx_bin(f, LO_MOD, lx_bin(f, LO_DIV, t, CI(&c, MT)), CI(&c, c.KB))));
    ls_add(f, lt, ls_let(f, v_mt, lx_bin(f, LO_MOD, t, CI(&c, MT))));
  } else {
    ls_add(f, lt, ls_let(f, v_mt, lx_bin(f, LO_MOD, lx_bin(f, LO_DIV, t, CI(&c, c.KB)), CI(&c, MT))));
    ls_add(f, lt, ls_let(f, v_kb, lx_bin(f, LO_MOD, t, CI(&c, c.KB))));
    if (c.w.sh == 1 && c.w.sw == 1) {   /* positions outer: the tile's positions, as it starts on this thread */
      int first = ls_first_var(f, lt, "first");
      lexpr *starts = lx_bin(f, LO_OR, lx_bin(f, LO_EQ, CV(&c, v_kb), CI(&c, 0)), lx_bin(f, LO_EQ, t, CV(&c, first)));
      conv_prefetch_span(&c, lt, starts, CV(&c, v_n), lx_mul(f, CV(&c, v_mt), CI(&c, mb)), mb);
    }
  }
  lexpr *m0 = lx_mul(f, CV(&c, v_mt), CI(&c, mb));
  if (!rem) full_tile(&c, lt, v_n, v_kb, m0, mb, unroll);
  else if (!full) tile(&c, lt, v_n, v_kb, m0, (int)rem, (int)unroll, c.OH == 1);
  else {
    lstmt *br = ls_add(f, lt, ls_if(f, lx_bin(f, LO_LT, CV(&c, v_mt), CI(&c, full))));
    full_tile(&c, ls_then(br), v_n, v_kb, m0, mb, unroll);
    tile(&c, ls_else(br), v_n, v_kb, m0, (int)rem, (int)unroll, 0);
  }
  return d->status;
}
