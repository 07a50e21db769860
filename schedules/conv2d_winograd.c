/* conv2d_winograd.c: 3×3 conv2d of stride 1 or 2 by Winograd's F(m×m, 3×3)
 * (compiler/winograd.c has the matrices; stride 2 through its four input
 * phases, alpha = 2m + 1). Input NCHW<ib>c, transformed
 * weights U in OHWI<ob>o ([K/ob][alpha][alpha][C][ob], made at compile time
 * by nn.contrib_conv2d_winograd_weight_transform), output NCHW<ob>c.
 *
 * The output is cut into m×m tiles (TH × TW per image, row-major, the last
 * ones partial); a task takes a block of t_bn · t_blocks consecutive tiles
 * (at most all), which read the transformed weights once between them:
 *
 *   parallel over (n, oc group, tile block)        [par=1: (n, tile block, oc-block)]
 *     V[e][icb][t][ic] = (Bᵀ d B)[e]   for its tiles, every input channel     (local)
 *     for each oc-block kb of the task (its group's KB/oc_split, or its one):
 *       for e in alpha²:                           batched GEMM, register tile t_bn × ob
 *         for each register tile r of the block (t_blocks of them):
 *           acc[t][j] = Σ_c  bcast(V[e][c][r·t_bn + t]) · U[kb][e][c][j*16 : +16]
 *           M[e][r·t_bn + t] = acc                                          (local)
 *       [stage=0] Y = Aᵀ M A, epilogue, store      (the output transform per oc-block)
 *     [stage=1] every oc-block multiplied first, then one output-transform pass
 *
 * The transforms are straight-line code with the matrices' constants
 * (zeros skipped, ±1 as add/sub); tiles inside the input load without bounds
 * tests, border tiles select zeros for the padding; output points past the
 * edge of a partial tile are not stored. */
#include "conv2d_common.h"

typedef struct wino {
  conv_ctx *c;
  wino_mats mt;
  int64_t m, s, a, tb, rt, par, stage, unroll_c, split;   /* s: stride; a: alpha; tb: tiles of a block; rt: of a register tile */
  int64_t TH, TW, P1, TB;
  int vb, mb;            /* local buffers V and M */
  int v_n, v_blk, v_kb, v_g;   /* v_g: the oc group (par=0) */
} wino;

/* Σ coef[i]·v[i] over the nonzero coefficients, as a new slot */
static lexpr *lin(lfunc *f, lstmt *blk, const double *coef, int cstride, lexpr **v, int n, int lanes) {
  lexpr *acc = NULL;
  for (int i = 0; i < n; i++) {
    double k = coef[i * cstride];
    if (k == 0) continue;
    if (!acc) acc = k == 1 ? v[i] : k == -1 ? lx_un(f, LO_NEG, v[i]) : lx_bin(f, LO_FMUL, lx_flt(f, k, lanes), v[i]);
    else if (k == 1) acc = lx_bin(f, LO_FADD, acc, v[i]);
    else if (k == -1) acc = lx_bin(f, LO_FSUB, acc, v[i]);
    else acc = lx_fma(f, lx_flt(f, k, lanes), v[i], acc);
  }
  if (!acc) acc = lx_flt(f, 0, lanes);
  int s = lf_slot(f, lanes);
  ls_add(f, blk, ls_decl(f, s, acc));
  return lx_slot(f, s);
}

/* the tile's first input row and column */
static void tile_origin(wino *k, lstmt *blk, lexpr *p, int *v_th, int *v_tw) {
  conv_ctx *c = k->c;
  lfunc *f = c->f;
  *v_th = lf_var(f, "th");
  *v_tw = lf_var(f, "tw");
  ls_add(f, blk, ls_let(f, *v_th, lx_bin(f, LO_DIV, p, CI(c, k->TW))));
  ls_add(f, blk, ls_let(f, *v_tw, lx_bin(f, LO_MOD, p, CI(c, k->TW))));
}

/* V for one tile t and one vector of li input channels (icb, off ...) */
static void input_tile(wino *k, lstmt *blk, lexpr *icb, lexpr *t, lexpr *ih0, lexpr *iw0, lexpr *off, int li, int border) {
  conv_ctx *c = k->c;
  lfunc *f = c->f;
  const conv_workload *w = &c->w;
  int a = (int)k->a;
  lexpr *d[81], *tmp[81];
  for (int i = 0; i < a; i++)
    for (int j = 0; j < a; j++) {
      lexpr *ih = lx_add(f, ih0, CI(c, i)), *iw = lx_add(f, iw0, CI(c, j));
      lexpr *hi = border ? conv_clamp(c, ih, w->H) : ih, *wi = border ? conv_clamp(c, iw, w->W) : iw;
      lexpr *x = lx_load(f, c->xb, conv_x_index(c, CV(c, k->v_n), icb, off, hi, wi), li, 1, NULL);
      if (border) x = lx_select(f, lx_bin(f, LO_AND, conv_in_range(c, ih, w->H), conv_in_range(c, iw, w->W)), x, lx_flt(f, 0, li));
      int s = lf_slot(f, li);
      ls_add(f, blk, ls_decl(f, s, x));
      d[i * a + j] = lx_slot(f, s);
    }
  /* tmp = Bᵀ d, then V = tmp B (V[i][j] = Σ_k tmp[i][k] Bᵀ[j][k]) */
  for (int i = 0; i < a; i++)
    for (int j = 0; j < a; j++) {
      lexpr *col[9];
      for (int r = 0; r < a; r++) col[r] = d[r * a + j];
      tmp[i * a + j] = lin(f, blk, k->mt.BT[i], 1, col, a, li);
    }
  for (int i = 0; i < a; i++)
    for (int j = 0; j < a; j++) {
      lexpr *v = lin(f, blk, k->mt.BT[j], 1, &tmp[i * a], a, li);
      lexpr *idx = lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, lx_add(f, CI(c, (int64_t)(i * a + j) * c->CB), icb), CI(c, k->tb)), t), CI(c, c->ib)),
                          off);
      ls_add(f, blk, ls_store(f, k->vb, idx, v, 1, NULL));
    }
}

/* the input transform of the block's tbn tiles, all channels */
static void input_transform(wino *k, lstmt *blk, lexpr *p0, int tbn) {
  conv_ctx *c = k->c;
  lfunc *f = c->f;
  const conv_workload *w = &c->w;
  /* the ib channels in runs contiguous in the input (part: the smaller of
   * the computation's and the stored block, one dividing the other), each
   * run in vectors of up to vec lanes, the last one shorter (23 = 16 + 7) */
  int64_t part = c->ib < c->sb ? c->ib : c->sb;
  int v_icb = lf_var(f, "icb"), v_t = lf_var(f, "t");
  lstmt *lc = ls_add(f, blk, ls_for(f, v_icb, CI(c, 0), CI(c, c->CB), LOOP_SERIAL));
  lstmt *lt = ls_add(f, lc, ls_for(f, v_t, CI(c, 0), CI(c, tbn), LOOP_SERIAL));
  int v_th, v_tw;
  tile_origin(k, lt, lx_add(f, p0, CV(c, v_t)), &v_th, &v_tw);
  lexpr *ih0 = lx_bin(f, LO_SUB, lx_mul(f, CV(c, v_th), CI(c, k->s * k->m)), CI(c, w->pt));
  lexpr *iw0 = lx_bin(f, LO_SUB, lx_mul(f, CV(c, v_tw), CI(c, k->s * k->m)), CI(c, w->pl));
  lexpr *inside = lx_bin(f, LO_AND, lx_bin(f, LO_AND, lx_bin(f, LO_LE, CI(c, 0), ih0), lx_bin(f, LO_LE, lx_add(f, ih0, CI(c, k->a)), CI(c, w->H))),
                         lx_bin(f, LO_AND, lx_bin(f, LO_LE, CI(c, 0), iw0), lx_bin(f, LO_LE, lx_add(f, iw0, CI(c, k->a)), CI(c, w->W))));
  lstmt *br = ls_add(f, lt, ls_if(f, inside));
  if (part <= f->vec && c->ib / part > 4) {
    /* many narrow runs (a producer's small blocks, 29 runs of 1 channel):
     * a loop over them, not ib / part unrolled tile transforms that would
     * outgrow the kernel's registers and the loop IR's slots */
    int v_r = lf_var(f, "run");
    lstmt *lr_in = ls_add(f, ls_then(br), ls_for(f, v_r, CI(c, 0), CI(c, c->ib / part), LOOP_SERIAL));
    lstmt *lr_bd = ls_add(f, ls_else(br), ls_for(f, v_r, CI(c, 0), CI(c, c->ib / part), LOOP_SERIAL));
    lexpr *off = lx_mul(f, CV(c, v_r), CI(c, part));
    input_tile(k, lr_in, CV(c, v_icb), CV(c, v_t), ih0, iw0, off, (int)part, 0);
    input_tile(k, lr_bd, CV(c, v_icb), CV(c, v_t), ih0, iw0, off, (int)part, 1);
    return;
  }
  for (int64_t run = 0; run < c->ib; run += part)
    for (int64_t off = run; off < run + part; off += f->vec) {
      int li = (int)(run + part - off < f->vec ? run + part - off : f->vec);
      input_tile(k, ls_then(br), CV(c, v_icb), CV(c, v_t), ih0, iw0, CI(c, off), li, 0);
      input_tile(k, ls_else(br), CV(c, v_icb), CV(c, v_t), ih0, iw0, CI(c, off), li, 1);
    }
}

/* M[mk][e][t0 + t] for every e and the register tile's tbn tiles from t0 */
static void multiply_tile(wino *k, lstmt *le, lexpr *e, lexpr *kb, lexpr *mk, int64_t t0, int tbn, int pf) {
  conv_ctx *c = k->c;
  lfunc *f = c->f;
  int64_t a2 = k->a * k->a;
  int acc[REG_BUDGET * 4];
  conv_acc_zero(c, le, acc, tbn * c->nv);
  int v_icb = lf_var(f, "icb");
  lstmt *lc = ls_add(f, le, ls_for(f, v_icb, CI(c, 0), CI(c, c->CB), LOOP_SERIAL));
  /* the weight stream a little per input-channel block: a few lines
   * between FMAs, not a burst that fills the core's miss buffers and stalls
   * it (one multiply per image, tile block, oc-block, e and ic-block) */
  if (pf) ls_add(f, lc, ls_prefetch_next(f, c->w.N * k->TB * c->KB * a2 * c->CB));
  int v_vb = lf_var(f, "vbase"), v_ub = lf_var(f, "ubase");
  /* V[e][icb][t0][0] and U[kb][e][icb·ib][0] */
  ls_add(f, lc, ls_let(f, v_vb, lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, e, CI(c, c->CB)), CV(c, v_icb)), CI(c, k->tb * c->ib)),
                                       CI(c, t0 * c->ib))));
  ls_add(f, lc, ls_let(f, v_ub, lx_mul(f, lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, kb, CI(c, a2)), e), CI(c, c->CB)), CV(c, v_icb)),
                                       CI(c, c->ib * c->ob))));
  lstmt *li = lc;
  int v_ic = -1;
  int64_t copies = k->unroll_c ? c->ib : 1;
  if (!k->unroll_c) {
    v_ic = lf_var(f, "ic");
    li = ls_add(f, lc, ls_for(f, v_ic, CI(c, 0), CI(c, c->ib), LOOP_SERIAL));
  }
  for (int64_t u = 0; u < copies; u++) {
    lexpr *ic = k->unroll_c ? CI(c, u) : CV(c, v_ic);
    int ws[CONV_MAX_NV];
    for (int j = 0; j < c->nv; j++) {
      ws[j] = lf_slot(f, c->lanes);
      lexpr *wi = lx_add(f, lx_add(f, CV(c, v_ub), lx_mul(f, ic, CI(c, c->ob))), CI(c, (int64_t)j * c->lanes));
      ls_add(f, li, ls_decl(f, ws[j], lx_load(f, c->wb, wi, c->lanes, 1, NULL)));
    }
    for (int t = 0; t < tbn; t++) {
      int xs = lf_slot(f, 1);
      lexpr *vi = lx_add(f, lx_add(f, CV(c, v_vb), CI(c, (int64_t)t * c->ib)), ic);
      ls_add(f, li, ls_decl(f, xs, lx_load(f, k->vb, vi, 1, 1, NULL)));
      for (int j = 0; j < c->nv; j++) {
        int s = acc[t * c->nv + j];
        ls_add(f, li, ls_set(f, s, lx_fma(f, lx_slot(f, xs), lx_slot(f, ws[j]), lx_slot(f, s))));
      }
    }
  }
  /* M[mk][e][t0 + t][0:ob] */
  for (int t = 0; t < tbn; t++)
    for (int j = 0; j < c->nv; j++) {
      lexpr *mi = lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, mk, CI(c, a2)), e), CI(c, k->tb)), CI(c, t0 + t)), CI(c, c->ob)),
                         CI(c, (int64_t)j * c->lanes));
      ls_add(f, le, ls_store(f, k->mb, mi, lx_slot(f, acc[t * c->nv + j]), 1, NULL));
    }
}

/* M[mk][e][t] for every e and the block's tbn tiles: the batched GEMM of
 * oc-block kb, register tile by register tile (the last one shorter) */
static void multiply(wino *k, lstmt *blk, lexpr *kb, lexpr *mk, int tbn) {
  conv_ctx *c = k->c;
  lfunc *f = c->f;
  int64_t a2 = k->a * k->a;
  int v_e = lf_var(f, "e");
  lstmt *le = ls_add(f, blk, ls_for(f, v_e, CI(c, 0), CI(c, a2), LOOP_SERIAL));
  for (int64_t t0 = 0; t0 < tbn; t0 += k->rt)
    multiply_tile(k, le, CV(c, v_e), kb, mk, t0, (int)(tbn - t0 < k->rt ? tbn - t0 : k->rt), t0 == 0);
}

/* Y = Aᵀ M A for the block's tiles of oc-block kb, through the epilogue */
static void output_transform(wino *k, lstmt *blk, lexpr *kb, lexpr *mk, lexpr *p0, int tbn) {
  conv_ctx *c = k->c;
  lfunc *f = c->f;
  int a = (int)k->a, m = (int)k->m;
  int v_t = lf_var(f, "t");
  lstmt *lt = ls_add(f, blk, ls_for(f, v_t, CI(c, 0), CI(c, tbn), LOOP_SERIAL));
  int v_th, v_tw;
  tile_origin(k, lt, lx_add(f, p0, CV(c, v_t)), &v_th, &v_tw);
  int ragged_h = c->OH % m != 0, ragged_w = c->OW % m != 0;
  for (int j = 0; j < c->nv; j++) {
    lexpr *mv[81], *tmp[54];
    for (int e = 0; e < a * a; e++) {
      lexpr *mi = lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, mk, CI(c, (int64_t)a * a)), CI(c, e)), CI(c, k->tb)), CV(c, v_t)),
                                   CI(c, c->ob)), CI(c, (int64_t)j * c->lanes));
      int s = lf_slot(f, c->lanes);
      ls_add(f, lt, ls_decl(f, s, lx_load(f, k->mb, mi, c->lanes, 1, NULL)));
      mv[e] = lx_slot(f, s);
    }
    for (int i = 0; i < m; i++)   /* tmp = Aᵀ M  (m × alpha) */
      for (int q = 0; q < a; q++) {
        lexpr *col[9];
        for (int r = 0; r < a; r++) col[r] = mv[r * a + q];
        tmp[i * a + q] = lin(f, lt, k->mt.AT[i], 1, col, a, c->lanes);
      }
    for (int i = 0; i < m; i++)
      for (int q = 0; q < m; q++) {
        lexpr *y = lin(f, lt, k->mt.AT[q], 1, &tmp[i * a], a, c->lanes);
        lexpr *oh = lx_add(f, lx_mul(f, CV(c, v_th), CI(c, m)), CI(c, i)), *ow = lx_add(f, lx_mul(f, CV(c, v_tw), CI(c, m)), CI(c, q));
        lstmt *at = lt;
        lexpr *ok = lx_int(f, 1);
        if (ragged_h && i > 0) ok = lx_bin(f, LO_LT, oh, CI(c, c->OH));
        if (ragged_w && q > 0) ok = lx_bin(f, LO_AND, ok, lx_bin(f, LO_LT, ow, CI(c, c->OW)));
        if (ok->k != LX_INT) at = ls_then(ls_add(f, lt, ls_if(f, ok)));
        int s = y->id;   /* lin() made y a fresh slot */
        conv_store(c, at, s, CV(c, k->v_n), kb, oh, ow, j);
      }
  }
}

/* one block of tbn tiles starting at tile p0 */
static void block(wino *k, lstmt *blk, lexpr *p0, int tbn) {
  conv_ctx *c = k->c;
  lfunc *f = c->f;
  input_transform(k, blk, p0, tbn);
  if (k->par == 1) {   /* the task's one oc-block */
    multiply(k, blk, CV(c, k->v_kb), CI(c, 0), tbn);
    output_transform(k, blk, CV(c, k->v_kb), CI(c, 0), p0, tbn);
    return;
  }
  /* the group's oc-blocks: kb = g·KBg + j, M's block j */
  int64_t KBg = c->KB / k->split;
  int v_j = lf_var(f, "j");
  lexpr *kb0 = lx_mul(f, CV(c, k->v_g), CI(c, KBg));
  lstmt *lk = ls_add(f, blk, ls_for(f, v_j, CI(c, 0), CI(c, KBg), LOOP_SERIAL));
  ls_add(f, lk, ls_let(f, k->v_kb, lx_add(f, kb0, CV(c, v_j))));
  lexpr *mk = k->stage ? CV(c, v_j) : CI(c, 0);
  multiply(k, lk, CV(c, k->v_kb), mk, tbn);
  if (!k->stage) {
    output_transform(k, lk, CV(c, k->v_kb), mk, p0, tbn);
    return;
  }
  int v_j2 = lf_var(f, "j"), v_kb2 = lf_var(f, "kb");
  lstmt *lo = ls_add(f, blk, ls_for(f, v_j2, CI(c, 0), CI(c, KBg), LOOP_SERIAL));
  ls_add(f, lo, ls_let(f, v_kb2, lx_add(f, kb0, CV(c, v_j2))));
  output_transform(k, lo, CV(c, v_kb2), CV(c, v_j2), p0, tbn);
}

temper_status sched_conv2d_winograd(prim *p, int vec, diag *d) {
  conv_ctx c;
  temper_status s = conv_ctx_init(&c, p, vec, d);
  if (s) return s;
  lfunc *f = c.f;
  wino k = {.c = &c, .m = cfg_get(&c.space, &c.cfg, K_TILE), .tb = winograd_block(&c.space, &c.cfg), .rt = cfg_get(&c.space, &c.cfg, K_T_BN),
            .par = cfg_get(&c.space, &c.cfg, K_PAR), .stage = cfg_get(&c.space, &c.cfg, K_STAGE),
            .unroll_c = cfg_get(&c.space, &c.cfg, K_UNROLL_C), .split = cfg_get(&c.space, &c.cfg, K_OC_SPLIT)};
  k.s = c.w.sh;
  if (c.x_nchw || c.w.sw != k.s || winograd_mats((int)k.m, (int)k.s, &k.mt))
    return diag_fail(d, TEMPER_EINTERNAL, "conv2d_winograd: needs a blocked input, one stride both ways and a tile of that stride");
  k.a = k.mt.a;
  k.TH = (c.OH + k.m - 1) / k.m;
  k.TW = (c.OW + k.m - 1) / k.m;
  k.P1 = k.TH * k.TW;
  if (k.tb > k.P1) k.tb = k.P1;
  k.TB = (k.P1 + k.tb - 1) / k.tb;
  int64_t v_floats, m_floats;
  winograd_scratch(&c.space, &c.cfg, &v_floats, &m_floats);
  k.vb = lf_local(f, "V", v_floats);
  k.mb = lf_local(f, "M", m_floats);
  k.v_n = lf_var(f, "n");
  k.v_blk = lf_var(f, "blk");
  k.v_kb = lf_var(f, "kb");
  k.v_g = lf_var(f, "g");
  int vt = lf_var(f, "task");
  int64_t tasks = c.w.N * k.TB * (k.par ? c.KB : k.split);
  lstmt *lt = ls_add(f, f->body, ls_for(f, vt, CI(&c, 0), CI(&c, tasks), LOOP_PARALLEL));
  lexpr *t = CV(&c, vt);
  if (k.par) {
    ls_add(f, lt, ls_let(f, k.v_kb, lx_bin(f, LO_MOD, t, CI(&c, c.KB))));
    t = lx_bin(f, LO_DIV, t, CI(&c, c.KB));
  }
  ls_add(f, lt, ls_let(f, k.v_blk, lx_bin(f, LO_MOD, t, CI(&c, k.TB))));
  t = lx_bin(f, LO_DIV, t, CI(&c, k.TB));
  if (!k.par) {   /* groups outer: a thread's range of tasks keeps to few groups */
    ls_add(f, lt, ls_let(f, k.v_g, lx_bin(f, LO_MOD, t, CI(&c, k.split))));
    t = lx_bin(f, LO_DIV, t, CI(&c, k.split));
  }
  ls_add(f, lt, ls_let(f, k.v_n, t));
  if (!k.par && k.split > 1) conv_prefetch_input(&c, lt, lt, CV(&c, k.v_n));   /* channel groups: every thread reads all input */
  lexpr *p0 = lx_mul(f, CV(&c, k.v_blk), CI(&c, k.tb));
  int64_t full = k.P1 / k.tb, rem = k.P1 % k.tb;
  if (!rem) block(&k, lt, p0, (int)k.tb);
  else if (!full) block(&k, lt, p0, (int)rem);
  else {
    lstmt *br = ls_add(f, lt, ls_if(f, lx_bin(f, LO_LT, CV(&c, k.v_blk), CI(&c, full))));
    block(&k, ls_then(br), p0, (int)k.tb);
    block(&k, ls_else(br), p0, (int)rem);
  }
  return d->status;
}
