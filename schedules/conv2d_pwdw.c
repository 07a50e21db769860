/* conv2d_pwdw.c: a 1×1 conv2d and the depthwise conv2d it feeds (fuse_with's
 * pair: MobileNet's expand → depthwise), one kernel. The expand's output —
 * six times its input's channels at the input's resolution, 4.8 MB an image
 * at MobileNetV2's 112×112×96 — is never written to memory. A depthwise
 * channel needs only the same channel of the expand, so the kernel is
 * parallel over channel blocks: each task computes the expanded rows of its
 * block, through the expand's epilogue, into a ring of R rows in a local
 * buffer ([R][W][ob], a few KB), as the depthwise's rows need them, and the
 * depthwise reads them from there.
 *
 *   parallel over (n, band of BR output rows, channel block kb)
 *     rows ih of the band's first output row but the last sh: expand(ih) → ring[ih % R]
 *     for oh in the band:
 *       the rows it adds, ih0 + R − sh .. ih0 + R − 1 (ih0 = oh·sh − pt), clipped
 *         to the input: expand(ih) → ring[ih % R]
 *       depthwise row (n, kb, oh) by its own config, from the ring → out
 *   expand(ih): for tiles of m_bn columns (the 1×1's config, at most a row):
 *       acc[t][j] = Σ_icb,ic bcast(X[n][icb][ih][ow0 + t][ic]) · W[kb][icb][ic][j]
 *       epilogue(acc) → ring[ih % R][ow0 + t][0:ob]
 *
 * Each task reads the whole input (the expand's, six times smaller) where
 * apart the expanded tensor was written and read back once. Bands split
 * the rows only where an image has too few channel blocks to share among
 * threads (band_rows): a band computes again the R − sh rows the band
 * above it did. Each
 * conv2d keeps its own config (the tuner measures them apart); the pair is
 * made only where the build's join allows (engine/layout.c, layout_join_dw):
 * a 1×1 stride-1 config whose output block is the depthwise's input block,
 * a depthwise config of dilation 1. */
#include "conv2d_common.h"

enum { PWDW_MIN_BAND = 4 };

/* Output rows per band. A band starts by computing again the R − sh rows
 * the band above it computed (3 rows of a 5×5 stride 2), which cost up to
 * 6 % of MNASNet's 56×56 pair at 8 tasks an image against 1 task a block
 * at one thread (bench/RESULTS.md): so one band where the channel blocks
 * alone make at least 4 tasks, an even number or 8 and more (two or four
 * threads share them evenly, or nearly), else the fewest bands that do, of
 * at least PWDW_MIN_BAND rows. */
static int64_t band_rows(int64_t OH, int64_t blocks) {
  int64_t bands = 1;
  while (blocks * bands < 4 || (blocks * bands < 8 && blocks * bands % 2)) bands++;
  int64_t br = (OH + bands - 1) / bands;
  if (br < PWDW_MIN_BAND) br = PWDW_MIN_BAND;
  return br < OH ? br : OH;
}

/* a tile of mn columns of expanded row (n, ih) for output channel block kb, into the ring */
static void pw_tile(conv_ctx *c, lstmt *blk, lexpr *n, lexpr *kb, lexpr *ih, lexpr *ow0, int mn, int unroll_ic) {
  lfunc *f = c->f;
  int acc[REG_BUDGET * 4];
  conv_acc_zero(c, blk, acc, mn * c->nv);
  int vb = lf_var(f, "icb");
  lstmt *lb = ls_add(f, blk, ls_for(f, vb, CI(c, 0), CI(c, c->CB), LOOP_SERIAL));
  int vxb = lf_var(f, "xbase"), vwb = lf_var(f, "wbase");
  ls_add(f, lb, ls_let(f, vxb, conv_x_index(c, n, CV(c, vb), CI(c, 0), ih, ow0)));
  ls_add(f, lb, ls_let(f, vwb, lx_mul(f, lx_add(f, lx_mul(f, kb, CI(c, c->CB)), CV(c, vb)), CI(c, c->ib * c->ob))));
  /* neighbouring positions sb apart in a blocked input, 1 in NCHW (whose channels are H·W apart) */
  conv_1x1_block(c, lb, c->xb, vxb, vwb, mn, NULL, c->x_nchw ? 1 : c->sb, c->x_nchw ? c->w.H * c->w.W : 1, unroll_ic, acc);
  for (int t = 0; t < mn; t++)
    for (int j = 0; j < c->nv; j++) conv_store(c, blk, acc[t * c->nv + j], n, kb, ih, lx_add(f, ow0, CI(c, t)), j);
}

/* expanded rows lo .. lo + ext − 1 of image n, channel block kb, into the ring; ext >= 0 */
static void pw_rows(conv_ctx *c, lstmt *blk, lexpr *n, int vkb, lexpr *lo, lexpr *ext, int64_t mb, int unroll) {
  lfunc *f = c->f;
  int vih = lf_var(f, "ih");
  lstmt *lr = ls_add(f, blk, ls_for(f, vih, lo, ext, LOOP_SERIAL));
  ls_add(f, lr, ls_let(f, c->row_slot, lx_bin(f, LO_MOD, CV(c, vih), CI(c, c->row_rows))));
  int64_t full = c->OW / mb, rem = c->OW % mb;
  if (full == 1) pw_tile(c, lr, n, CV(c, vkb), CV(c, vih), CI(c, 0), (int)mb, unroll);
  else if (full > 1) {
    int vm = lf_var(f, "mt");
    lstmt *lm = ls_add(f, lr, ls_for(f, vm, CI(c, 0), CI(c, full), LOOP_SERIAL));
    pw_tile(c, lm, n, CV(c, vkb), CV(c, vih), lx_mul(f, CV(c, vm), CI(c, mb)), (int)mb, unroll);
  }
  if (rem) pw_tile(c, lr, n, CV(c, vkb), CV(c, vih), CI(c, full * mb), (int)rem, unroll);
}

/* the rows [from, to) clipped to 0 .. H: (start, extent) as expressions of variables set in blk */
static void clipped(conv_ctx *c, lstmt *blk, lexpr *from, lexpr *to, int64_t H, lexpr **lo, lexpr **ext) {
  lfunc *f = c->f;
  int vlo = lf_var(f, "r_lo"), vext = lf_var(f, "r_ext");
  ls_add(f, blk, ls_let(f, vlo, lx_bin(f, LO_MAX, from, CI(c, 0))));
  ls_add(f, blk, ls_let(f, vext, lx_bin(f, LO_MAX, CI(c, 0), lx_bin(f, LO_SUB, lx_bin(f, LO_MIN, to, CI(c, H)), CV(c, vlo)))));
  *lo = CV(c, vlo);
  *ext = CV(c, vext);
}

temper_status sched_conv2d_pwdw(prim *p, int vec, diag *d) {
  const node *pwn = p->pre, *dwn = p->master;
  conv_pair pair;
  temper_status s = conv_pair_init(&pair, p, vec, d);
  if (s) return s;
  conv_ctx *cp = &pair.pre, *cd = &pair.cons;
  const conv_workload *pw = &cp->w, *dw = &cd->w;
  if (cp->cfg.tmpl != TMPL_1X1 || cd->cfg.tmpl != TMPL_DEPTHWISE || pw->R != 1 || pw->S != 1 || pw->sh != 1 || pw->sw != 1 ||
      pw->pt || pw->pl || pw->pb || pw->pr || pw->G != 1 || dw->dh != 1 || pw->N != dw->N || dw->C != pw->K ||
      dw->H != cp->OH || dw->W != cp->OW || cd->sb != cp->ob || !shape_eq(&dwn->args[0]->ty.shape, &pwn->ty.shape))
    return diag_fail(d, TEMPER_EINTERNAL, "conv2d_pwdw: %s (%s) cannot feed %s (%s) in one kernel: a 1×1 stride-1 conv2d and a "
                     "depthwise conv2d of dilation 1 reading its output block as it is",
                     ir_op_name(pwn), pwn->attrs->v[ATTR_SCHEDULE].s, ir_op_name(dwn), dwn->attrs->v[ATTR_SCHEDULE].s);
  lfunc *f = p->f;
  int64_t R = dw->R, sh = dw->sh, keep = R > sh ? R - sh : 0;   /* rows an output row shares with the one before */
  int ring = lf_local(f, "pw_ring", R * cp->OW * cp->ob);
  cp->to_row = 1;
  cp->row_buf = ring;
  cp->row_node = dwn->args[0];
  cp->row_rows = R;
  cp->row_slot = lf_var(f, "slot");
  cp->y_nchw = 0;
  cd->xb = ring;
  cd->ring_rows = R;
  int64_t mb = cfg_get(&cp->space, &cp->cfg, K_M_BN), unroll = cfg_get(&cp->space, &cp->cfg, K_UNROLL_IC);
  if (mb > cp->OW) mb = cp->OW;
  int64_t br = band_rows(cd->OH, cp->KB), bands = (cd->OH + br - 1) / br;
  int vt = lf_var(f, "n_band_kb"), vn = lf_var(f, "n"), vb0 = lf_var(f, "oh0"), vkb = lf_var(f, "kb"), voh = lf_var(f, "oh");
  lstmt *lt = ls_add(f, f->body, ls_for(f, vt, CI(cd, 0), CI(cd, dw->N * bands * cp->KB), LOOP_PARALLEL));
  ls_add(f, lt, ls_let(f, vn, lx_bin(f, LO_DIV, CV(cd, vt), CI(cd, bands * cp->KB))));
  ls_add(f, lt, ls_let(f, vb0, lx_mul(f, lx_bin(f, LO_MOD, lx_bin(f, LO_DIV, CV(cd, vt), CI(cd, cp->KB)), CI(cd, bands)), CI(cd, br))));
  ls_add(f, lt, ls_let(f, vkb, lx_bin(f, LO_MOD, CV(cd, vt), CI(cd, cp->KB))));
  ls_add(f, lt, ls_prefetch_next(f, dw->N * bands * cp->KB));
  lexpr *lo, *ext;
  if (keep) {   /* the rows the band's first output row shares with the row before it */
    lexpr *ih0 = lx_bin(f, LO_SUB, lx_mul(f, CV(cd, vb0), CI(cd, sh)), CI(cd, dw->pt));
    clipped(cp, lt, ih0, lx_add(f, lx_bin(f, LO_SUB, lx_mul(f, CV(cd, vb0), CI(cd, sh)), CI(cd, dw->pt)), CI(cd, keep)), dw->H, &lo, &ext);
    pw_rows(cp, lt, CV(cd, vn), vkb, lo, ext, mb, (int)unroll);
  }
  lexpr *rows = lx_bin(f, LO_MIN, CI(cd, br), lx_bin(f, LO_SUB, CI(cd, cd->OH), CV(cd, vb0)));
  lstmt *lo_oh = ls_add(f, lt, ls_for(f, voh, CV(cd, vb0), rows, LOOP_SERIAL));
  lexpr *from = lx_add(f, lx_bin(f, LO_SUB, lx_mul(f, CV(cd, voh), CI(cd, sh)), CI(cd, dw->pt)), CI(cd, keep));
  lexpr *to = lx_add(f, lx_bin(f, LO_SUB, lx_mul(f, CV(cd, voh), CI(cd, sh)), CI(cd, dw->pt)), CI(cd, R));
  clipped(cp, lo_oh, from, to, dw->H, &lo, &ext);
  pw_rows(cp, lo_oh, CV(cd, vn), vkb, lo, ext, mb, (int)unroll);
  dw_emit_row(cd, lo_oh, CV(cd, vn), CV(cd, vkb), CV(cd, voh));
  return d->status;
}
