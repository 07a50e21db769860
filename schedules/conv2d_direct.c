/* conv2d_direct.c: the default conv2d schedule (groups == 1, NCHW input,
 * weights packed OIHW<v>o). Vectorised over output channels: a register tile
 * of `ocv` vectors of v channels × `T` output columns accumulates in
 * registers over (c, r, s); each step broadcasts one input value and loads
 * ocv weight vectors:
 *
 *   parallel over (n, k-block, oh):
 *     for each tile of T columns:            acc[ocv][T] = 0
 *       for c, r (rows clipped to the input), s:
 *         w[j]  = W[kb + j][c][r][s][0:v]
 *         acc[j][t] += bcast(X[n][c][ih][iw(t)]) * w[j]
 *       epilogue(acc) → out[n][k0 : k0+v][oh][ow(t)]   (one strided store)
 *
 * Tiles whose window lies inside the input take a path without bounds
 * checks; border tiles select 0 for padding. */
#include "schedules.h"

typedef struct conv_shape {
  int64_t N, C, H, W, K, OH, OW, R, S, sh, sw, pt, pl, dh, dw;
} conv_shape;

typedef struct tile_ctx {
  prim *p;
  conv_shape cs;
  int vec, ocv;
  int xb, wb;
  int v_n, v_ko, v_oh, v_ih0, v_rlo, v_rext;
  diag *d;
} tile_ctx;

static lexpr *V(lfunc *f, int v) { return lx_var(f, v); }
static lexpr *I(lfunc *f, int64_t v) { return lx_int(f, v); }

/* the reduction over (c, r, s) for T columns from ow0; checked adds bounds tests */
static void emit_reduction(tile_ctx *t, lstmt *blk, lexpr *ow0, int T, int *acc, int checked) {
  lfunc *f = t->p->f;
  const conv_shape *s = &t->cs;
  int vc = lf_var(f, "c"), vr = lf_var(f, "r"), vs = lf_var(f, "s"), vih = lf_var(f, "ih"), vx = lf_var(f, "xrow"),
      vw = lf_var(f, "wrow");
  lstmt *lc = ls_add(f, blk, ls_for(f, vc, I(f, 0), I(f, s->C), LOOP_SERIAL));
  lstmt *lr = ls_add(f, lc, ls_for(f, vr, V(f, t->v_rlo), V(f, t->v_rext), LOOP_SERIAL));
  ls_add(f, lr, ls_let(f, vih, lx_add(f, V(f, t->v_ih0), lx_mul(f, V(f, vr), I(f, s->dh)))));
  lexpr *plane = lx_add(f, lx_mul(f, V(f, t->v_n), I(f, s->C)), V(f, vc));
  lexpr *col0 = lx_bin(f, LO_SUB, lx_mul(f, ow0, I(f, s->sw)), I(f, s->pl));
  lexpr *row = lx_mul(f, lx_add(f, lx_mul(f, plane, I(f, s->H)), V(f, vih)), I(f, s->W));
  ls_add(f, lr, ls_let(f, vx, checked ? row : lx_add(f, row, col0)));
  lexpr *kb0 = lx_mul(f, V(f, t->v_ko), I(f, t->ocv));
  ls_add(f, lr, ls_let(f, vw, lx_mul(f, lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, kb0, I(f, s->C)), V(f, vc)), I(f, s->R)), V(f, vr)),
                                      I(f, s->S * t->vec))));
  lstmt *ls = ls_add(f, lr, ls_for(f, vs, I(f, 0), I(f, s->S), s->S <= 3 ? LOOP_UNROLL : LOOP_SERIAL));
  int wslot[4];
  for (int j = 0; j < t->ocv; j++) {
    wslot[j] = lf_slot(f, t->vec);
    lexpr *wi = lx_add(f, lx_add(f, V(f, vw), lx_mul(f, V(f, vs), I(f, t->vec))), I(f, (int64_t)j * s->C * s->R * s->S * t->vec));
    ls_add(f, ls, ls_decl(f, wslot[j], lx_load(f, t->wb, wi, t->vec, 1, NULL)));
  }
  for (int c = 0; c < T; c++) {
    lexpr *xv;
    lexpr *soff = lx_mul(f, V(f, vs), I(f, s->dw));
    if (checked) {
      lexpr *iw = lx_add(f, lx_add(f, col0, I(f, (int64_t)c * s->sw)), soff);
      lexpr *ok = lx_bin(f, LO_AND, lx_bin(f, LO_LE, I(f, 0), iw), lx_bin(f, LO_LT, iw, I(f, s->W)));
      lexpr *cl = lx_bin(f, LO_MIN, lx_bin(f, LO_MAX, iw, I(f, 0)), I(f, s->W - 1));
      xv = lx_select(f, ok, lx_load(f, t->xb, lx_add(f, V(f, vx), cl), 1, 1, NULL), lx_flt(f, 0, 1));
    } else {
      xv = lx_load(f, t->xb, lx_add(f, V(f, vx), lx_add(f, soff, I(f, (int64_t)c * s->sw))), 1, 1, NULL);
    }
    int xs = lf_slot(f, 1);
    ls_add(f, ls, ls_decl(f, xs, xv));
    for (int j = 0; j < t->ocv; j++) {
      int a = acc[j * T + c];
      ls_add(f, ls, ls_set(f, a, lx_fma(f, lx_slot(f, xs), lx_slot(f, wslot[j]), lx_slot(f, a))));
    }
  }
}

static void emit_tile(tile_ctx *t, lstmt *blk, lexpr *ow0, int T) {
  lfunc *f = t->p->f;
  const conv_shape *s = &t->cs;
  int acc[64];
  for (int i = 0; i < t->ocv * T; i++) {
    acc[i] = lf_slot(f, t->vec);
    ls_add(f, blk, ls_decl(f, acc[i], lx_flt(f, 0, t->vec)));
  }
  /* interior: every column of the tile reads inside the row */
  lexpr *first = lx_bin(f, LO_SUB, lx_mul(f, ow0, I(f, s->sw)), I(f, s->pl));
  lexpr *last = lx_add(f, first, I(f, (int64_t)(T - 1) * s->sw + (s->S - 1) * s->dw));
  lexpr *inside = lx_bin(f, LO_AND, lx_bin(f, LO_LE, I(f, 0), first), lx_bin(f, LO_LT, last, I(f, s->W)));
  if (inside->k == LX_INT) {
    emit_reduction(t, blk, ow0, T, acc, !inside->ival);
  } else {
    lstmt *br = ls_add(f, blk, ls_if(f, inside));
    emit_reduction(t, ls_then(br), ow0, T, acc, 0);
    emit_reduction(t, ls_else(br), ow0, T, acc, 1);
  }
  for (int j = 0; j < t->ocv; j++) {
    lexpr *k0 = lx_mul(f, lx_add(f, lx_mul(f, V(f, t->v_ko), I(f, t->ocv)), I(f, j)), I(f, t->vec));
    lexpr *limit = s->K % t->vec ? lx_bin(f, LO_SUB, I(f, s->K), k0) : NULL;
    for (int c = 0; c < T; c++) {
      lexpr *ow = lx_add(f, ow0, I(f, c));
      lexpr *coord[4] = {V(f, t->v_n), k0, V(f, t->v_oh), ow};
      epi e = {.p = t->p, .master_val = lx_slot(f, acc[j * T + c]), .lane_axis = 1, .lanes = t->vec, .limit = limit, .d = t->d};
      lexpr *v = epi_eval(&e, t->p->fn->body, coord);
      lexpr *idx = lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, V(f, t->v_n), I(f, s->K)), k0), I(f, s->OH)), V(f, t->v_oh)),
                                    I(f, s->OW)), ow);
      ls_add(f, blk, ls_store(f, t->p->out_buf, idx, v, s->OH * s->OW, limit));
    }
  }
}

temper_status sched_conv2d_direct(prim *p, int vec, diag *d) {
  lfunc *f = p->f;
  const node *m = p->master;
  const attrs_t *a = m->attrs;
  const shape_t *xs = &m->args[0]->ty.shape, *ws = &m->args[1]->ty.shape, *os = &m->ty.shape;
  tile_ctx t = {.p = p, .vec = vec, .d = d};
  t.cs = (conv_shape){xs->d[0], xs->d[1], xs->d[2], xs->d[3], os->d[1], os->d[2], os->d[3], ws->d[2], ws->d[3],
                      a->v[ATTR_STRIDES].i[0], a->v[ATTR_STRIDES].i[1], a->v[ATTR_PADDING].i[0], a->v[ATTR_PADDING].i[1],
                      a->v[ATTR_DILATION].i[0], a->v[ATTR_DILATION].i[1]};
  const conv_shape *s = &t.cs;
  int64_t KB = (s->K + vec - 1) / vec;
  t.ocv = KB % 2 == 0 ? 2 : 1;
  int T = t.ocv == 2 ? 8 : 12;
  if (T > s->OW) T = (int)s->OW;
  int64_t KO = KB / t.ocv;
  t.xb = epi_param_buf(p, m->args[0]);
  t.wb = epi_param_buf(p, m->args[1]);
  int vt = lf_var(f, "n_ko_oh");
  t.v_n = lf_var(f, "n");
  t.v_ko = lf_var(f, "ko");
  t.v_oh = lf_var(f, "oh");
  t.v_ih0 = lf_var(f, "ih0");
  t.v_rlo = lf_var(f, "r_lo");
  t.v_rext = lf_var(f, "r_ext");
  lstmt *lt = ls_add(f, f->body, ls_for(f, vt, I(f, 0), I(f, s->N * KO * s->OH), LOOP_PARALLEL));
  lexpr *tv = V(f, vt);
  ls_add(f, lt, ls_let(f, t.v_n, lx_bin(f, LO_DIV, tv, I(f, KO * s->OH))));
  ls_add(f, lt, ls_let(f, t.v_ko, lx_bin(f, LO_MOD, lx_bin(f, LO_DIV, tv, I(f, s->OH)), I(f, KO))));
  ls_add(f, lt, ls_let(f, t.v_oh, lx_bin(f, LO_MOD, tv, I(f, s->OH))));
  ls_add(f, lt, ls_let(f, t.v_ih0, lx_bin(f, LO_SUB, lx_mul(f, V(f, t.v_oh), I(f, s->sh)), I(f, s->pt))));
  /* rows r with 0 <= ih0 + r*dh < H */
  lexpr *rlo = lx_bin(f, LO_MAX, I(f, 0), lx_bin(f, LO_DIV, lx_add(f, lx_bin(f, LO_SUB, I(f, 0), V(f, t.v_ih0)), I(f, s->dh - 1)), I(f, s->dh)));
  lexpr *rhi = lx_bin(f, LO_MIN, I(f, s->R), lx_bin(f, LO_DIV, lx_add(f, lx_bin(f, LO_SUB, I(f, s->H), V(f, t.v_ih0)), I(f, s->dh - 1)), I(f, s->dh)));
  ls_add(f, lt, ls_let(f, t.v_rlo, rlo));
  ls_add(f, lt, ls_let(f, t.v_rext, lx_bin(f, LO_MAX, I(f, 0), lx_bin(f, LO_SUB, rhi, V(f, t.v_rlo)))));
  int64_t full = s->OW / T, rem = s->OW % T;
  if (full == 1) {
    emit_tile(&t, lt, I(f, 0), T);
  } else if (full > 1) {
    int vo = lf_var(f, "owt");
    lstmt *lo = ls_add(f, lt, ls_for(f, vo, I(f, 0), I(f, full), LOOP_SERIAL));
    emit_tile(&t, lo, lx_mul(f, V(f, vo), I(f, T)), T);
  }
  if (rem) emit_tile(&t, lt, I(f, full * T), (int)rem);
  return d->status;
}
