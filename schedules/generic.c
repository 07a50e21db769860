/* generic.c: the straightforward schedule. One loop nest over the output:
 * the leading dimensions fused into a parallel loop, the last one innermost
 * (left to LLVM's vectorizer); the master op, if any (pooling, a grouped or
 * unpacked conv2d), is a reduction into a scalar register, then the
 * epilogue. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "schedules.h"

/* in-bounds test 0 <= v < hi */
static lexpr *in_range(lfunc *f, lexpr *v, int64_t hi) {
  return lx_bin(f, LO_AND, lx_bin(f, LO_LE, lx_int(f, 0), v), lx_bin(f, LO_LT, v, lx_int(f, hi)));
}

static lexpr *clamp(lfunc *f, lexpr *v, int64_t hi) {
  return lx_bin(f, LO_MIN, lx_bin(f, LO_MAX, v, lx_int(f, 0)), lx_int(f, hi - 1));
}

/* pooling: a reduction over the window into a scalar slot */
static lexpr *pool_value(prim *p, lstmt *body, lexpr *const *c, int lanes) {
  lfunc *f = p->f;
  const node *m = p->master;
  const shape_t *xs = &m->args[0]->ty.shape;
  const attrs_t *a = m->attrs;
  int global = m->op == OP_GLOBAL_AVG_POOL2D || m->op == OP_GLOBAL_MAX_POOL2D;
  int is_max = m->op == OP_MAX_POOL2D || m->op == OP_GLOBAL_MAX_POOL2D;
  int64_t cb = xs->ndim == 5 ? xs->d[4] : 1;   /* NCHW<cb>c: the inner channel is coordinate 4 */
  int64_t H = xs->d[2], W = xs->d[3];
  int64_t kh = global ? H : a->v[ATTR_POOL_SIZE].i[0], kw = global ? W : a->v[ATTR_POOL_SIZE].i[1];
  int64_t sh = global ? 1 : a->v[ATTR_STRIDES].i[0], sw = global ? 1 : a->v[ATTR_STRIDES].i[1];
  int64_t ph = global ? 0 : a->v[ATTR_PADDING].i[0], pw = global ? 0 : a->v[ATTR_PADDING].i[1];
  int64_t pb = global ? 0 : a->v[ATTR_PADDING].i[2], pr = global ? 0 : a->v[ATTR_PADDING].i[3];
  int64_t dh = global ? 1 : a->v[ATTR_DILATION].i[0], dw = global ? 1 : a->v[ATTR_DILATION].i[1];
  int include_pad = !global && a->v[ATTR_COUNT_INCLUDE_PAD].i[0];
  int buf = epi_param_buf(p, m->args[0]);
  int64_t HW = H * W, vec = f->vec;
  if (global && !is_max && lanes == 1 && cb == 1 && vec > 1 && HW >= vec) {
    /* a global average in NCHW: the plane is one run of H·W floats, summed
     * a vector at a time (then across its lanes, and the tail) — the
     * scalar chain's latency bound made ConvNeXt's layer norms, a mean over
     * 96–768 channels per pixel, run at 9 GB/s (bench/RESULTS.md, "GELU") */
    lexpr *base = lx_mul(f, lx_add(f, lx_mul(f, c[0], lx_int(f, xs->d[1])), c[1]), lx_int(f, HW));
    int vacc = lf_slot(f, (int)vec), sacc = lf_slot(f, 1), vi = lf_var(f, "v");
    ls_add(f, body, ls_decl(f, vacc, lx_flt(f, 0, (int)vec)));
    lstmt *lv = ls_add(f, body, ls_for(f, vi, lx_int(f, 0), lx_int(f, HW / vec), LOOP_SERIAL));
    ls_add(f, lv, ls_set(f, vacc, lx_bin(f, LO_FADD, lx_slot(f, vacc), lx_load(f, buf, lx_add(f, base, lx_mul(f, lx_var(f, vi), lx_int(f, vec))), (int)vec, 1, NULL))));
    ls_add(f, body, ls_decl(f, sacc, lx_un(f, LO_HSUM, lx_slot(f, vacc))));
    if (HW % vec) {
      int vt = lf_var(f, "t");
      lstmt *lt = ls_add(f, body, ls_for(f, vt, lx_int(f, HW / vec * vec), lx_int(f, HW % vec), LOOP_SERIAL));
      ls_add(f, lt, ls_set(f, sacc, lx_bin(f, LO_FADD, lx_slot(f, sacc), lx_load(f, buf, lx_add(f, base, lx_var(f, vt)), 1, 1, NULL))));
    }
    return lx_bin(f, LO_FMUL, lx_slot(f, sacc), lx_flt(f, 1.0 / (double)HW, 1));
  }
  int acc = lf_slot(f, lanes), cnt = lf_slot(f, 1);
  ls_add(f, body, ls_decl(f, acc, lx_flt(f, is_max ? -INFINITY : 0, lanes)));
  ls_add(f, body, ls_decl(f, cnt, lx_flt(f, 0, 1)));
  int vr = lf_var(f, "r"), vs = lf_var(f, "s");
  lstmt *lr = ls_add(f, body, ls_for(f, vr, lx_int(f, 0), lx_int(f, kh), LOOP_SERIAL));
  lstmt *lsb = ls_add(f, lr, ls_for(f, vs, lx_int(f, 0), lx_int(f, kw), LOOP_SERIAL));
  lexpr *ih = lx_add(f, lx_bin(f, LO_SUB, lx_mul(f, c[2], lx_int(f, sh)), lx_int(f, ph)), lx_mul(f, lx_var(f, vr), lx_int(f, dh)));
  lexpr *iw = lx_add(f, lx_bin(f, LO_SUB, lx_mul(f, c[3], lx_int(f, sw)), lx_int(f, pw)), lx_mul(f, lx_var(f, vs), lx_int(f, dw)));
  lexpr *ok = lx_bin(f, LO_AND, in_range(f, ih, H), in_range(f, iw, W));
  lexpr *plane = lx_add(f, lx_mul(f, c[0], lx_int(f, xs->d[1])), c[1]);
  lexpr *idx = lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, plane, lx_int(f, H)), clamp(f, ih, H)), lx_int(f, W)), clamp(f, iw, W));
  if (cb > 1) idx = lx_add(f, lx_mul(f, idx, lx_int(f, cb)), c[4]);
  lexpr *x = lx_load(f, buf, idx, lanes, 1, NULL);   /* lanes > 1: the channel block, contiguous */
  if (is_max) {
    ls_add(f, lsb, ls_set(f, acc, lx_select(f, ok, lx_bin(f, LO_FMAX, lx_slot(f, acc), x), lx_slot(f, acc))));
    return lx_slot(f, acc);
  }
  ls_add(f, lsb, ls_set(f, acc, lx_select(f, ok, lx_bin(f, LO_FADD, lx_slot(f, acc), x), lx_slot(f, acc))));
  lexpr *counted = include_pad ? lx_bin(f, LO_AND, lx_bin(f, LO_LT, ih, lx_int(f, H + pb)), lx_bin(f, LO_LT, iw, lx_int(f, W + pr))) : ok;
  ls_add(f, lsb, ls_set(f, cnt, lx_select(f, counted, lx_bin(f, LO_FADD, lx_slot(f, cnt), lx_flt(f, 1, 1)), lx_slot(f, cnt))));
  return lx_bin(f, LO_FDIV, lx_slot(f, acc), lx_bin(f, LO_FMAX, lx_slot(f, cnt), lx_flt(f, 1, 1)));
}

/* any conv2d (groups, OIHW or packed weights): scalar direct reduction */
static lexpr *conv_value(prim *p, lstmt *body, lexpr *const *c) {
  lfunc *f = p->f;
  const node *m = p->master;
  const shape_t *xs = &m->args[0]->ty.shape, *ws = &m->args[1]->ty.shape;
  const attrs_t *a = m->attrs;
  int64_t C = xs->d[1], H = xs->d[2], W = xs->d[3], K = m->ty.shape.d[1];
  int64_t G = a->v[ATTR_GROUPS].i[0], Cg = C / G, Kg = K / G, R = ws->d[2], S = ws->d[3];
  int blk = 0;
  int xb = epi_param_buf(p, m->args[0]), wb = epi_param_buf(p, m->args[1]);
  int acc = lf_slot(f, 1);
  ls_add(f, body, ls_decl(f, acc, lx_flt(f, 0, 1)));
  int vc = lf_var(f, "c"), vr = lf_var(f, "r"), vs = lf_var(f, "s");
  lstmt *lc = ls_add(f, body, ls_for(f, vc, lx_int(f, 0), lx_int(f, Cg), LOOP_SERIAL));
  lstmt *lr = ls_add(f, lc, ls_for(f, vr, lx_int(f, 0), lx_int(f, R), LOOP_SERIAL));
  lstmt *ls = ls_add(f, lr, ls_for(f, vs, lx_int(f, 0), lx_int(f, S), LOOP_SERIAL));
  lexpr *ih = lx_add(f, lx_bin(f, LO_SUB, lx_mul(f, c[2], lx_int(f, a->v[ATTR_STRIDES].i[0])), lx_int(f, a->v[ATTR_PADDING].i[0])),
                     lx_mul(f, lx_var(f, vr), lx_int(f, a->v[ATTR_DILATION].i[0])));
  lexpr *iw = lx_add(f, lx_bin(f, LO_SUB, lx_mul(f, c[3], lx_int(f, a->v[ATTR_STRIDES].i[1])), lx_int(f, a->v[ATTR_PADDING].i[1])),
                     lx_mul(f, lx_var(f, vs), lx_int(f, a->v[ATTR_DILATION].i[1])));
  lexpr *ok = lx_bin(f, LO_AND, in_range(f, ih, H), in_range(f, iw, W));
  lexpr *ch = lx_add(f, lx_mul(f, lx_bin(f, LO_DIV, c[1], lx_int(f, Kg)), lx_int(f, Cg)), lx_var(f, vc));
  lexpr *xi = lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, c[0], lx_int(f, C)), ch), lx_int(f, H)), clamp(f, ih, H)),
                               lx_int(f, W)), clamp(f, iw, W));
  lexpr *crs = lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, lx_var(f, vc), lx_int(f, R)), lx_var(f, vr)), lx_int(f, S)), lx_var(f, vs));
  lexpr *wi = blk ? lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, lx_bin(f, LO_DIV, c[1], lx_int(f, blk)), lx_int(f, Cg * R * S)), crs), lx_int(f, blk)),
                           lx_bin(f, LO_MOD, c[1], lx_int(f, blk)))
                  : lx_add(f, lx_mul(f, c[1], lx_int(f, Cg * R * S)), crs);
  lexpr *prod = lx_bin(f, LO_FMUL, lx_load(f, xb, xi, 1, 1, NULL), lx_load(f, wb, wi, 1, 1, NULL));
  ls_add(f, ls, ls_set(f, acc, lx_select(f, ok, lx_bin(f, LO_FADD, lx_slot(f, acc), prod), lx_slot(f, acc))));
  return lx_slot(f, acc);
}

/* pooling in NCHW<cb>c: the cb channels of an output position as vectors of
 * sched_block_lanes (EfficientNet's and RegNetY's squeeze-excite averages
 * in blocks of 48 and 24 ran lane by lane as one vector of the block) */
static temper_status pool_blocked(prim *p, diag *d) {
  lfunc *f = p->f;
  const shape_t *os = &p->fn->body->ty.shape;
  int64_t cb = os->d[4];
  int L = sched_block_lanes(cb, f->vec);
  int64_t per = cb / L, outer = shape_numel(os) / cb * per;
  int vo = lf_var(f, "nchw");
  lstmt *lo = ls_add(f, f->body, ls_for(f, vo, lx_int(f, 0), lx_int(f, outer), LOOP_PARALLEL));
  lexpr *c[5], *o = lx_bin(f, LO_DIV, lx_var(f, vo), lx_int(f, per));
  for (int i = 3; i >= 0; i--) {
    c[i] = i == 0 ? o : lx_bin(f, LO_MOD, o, lx_int(f, os->d[i]));
    o = lx_bin(f, LO_DIV, o, lx_int(f, os->d[i]));
  }
  c[4] = lx_mul(f, lx_bin(f, LO_MOD, lx_var(f, vo), lx_int(f, per)), lx_int(f, L));
  epi e = {.p = p, .lanes = L, .lane_axis = 4, .d = d};
  e.master_val = pool_value(p, lo, c, L);
  lexpr *v = epi_eval(&e, p->fn->body, c);
  ls_add(f, lo, ls_store(f, p->out_buf, lx_mul(f, lx_var(f, vo), lx_int(f, L)), v, 1, NULL));
  return d->status;
}

/* whether x evaluates with lanes along the last axis: elementwise and broadcast ops of
 * parameters (an injective op's index maps are scalar) */
static int lanes_ok(const prim *p, const node *x) {
  if (x->kind == N_CONST && x->ty.shape.ndim == 0) return 1;
  if (x->kind == N_VAR) return epi_param_buf(p, x) >= 0;
  if (x->kind != N_CALL || x->op < 0 || ops_table[x->op].pat > PAT_BROADCAST) return 0;
  for (int i = 0; i < x->n_args; i++)
    if (!lanes_ok(p, x->args[i]) || (x->args[i]->ty.shape.ndim && x->args[i]->ty.shape.ndim != x->ty.shape.ndim)) return 0;
  return 1;
}

/* the channel block of a layout named "NCHW" (0) or "NCHW<b>c"; -1 otherwise */
static int nchw_block(const char *layout) {
  if (!strcmp(layout, "NCHW")) return 0;
  if (strncmp(layout, "NCHW", 4)) return -1;
  int b = layout_block(layout, 'c');
  char want[32];
  snprintf(want, sizeof want, "NCHW%dc", b);
  return b > 0 && !strcmp(layout, want) ? b : -1;
}

/* one field's loop nest: its innermost body, the field's value there (of
 * `lanes` lanes along the last axis), and that point's coordinates in the
 * concatenation */
typedef struct field_nest {
  lstmt *body;
  lexpr *val;
  lexpr *oc[TEMPER_MAX_DIMS];
  int lanes;
} field_nest;

/* a row of a concatenation along the channels (concat_fields): image n, row h */
typedef struct conc_row {
  lexpr *n, *h;
} conc_row;

/* A field of a concatenation along the channel blocks of NCHW<b>c that is
 * a parameter in other channel blocks (NCHW<B>c, B a multiple or a
 * divisor of b, or NCHW): vectors of min(B, b) lanes (of b from NCHW, a
 * gather), each read and written whole; its first block in the
 * concatenation `start`. 0: not such a field. */
static int concat_relayout(prim *p, const node *a, int64_t start, const conc_row *row, lstmt *parent, field_nest *fn) {
  if (a->kind != N_CALL || a->op != OP_LAYOUT_TRANSFORM || a->args[0]->kind != N_VAR) return 0;
  const shape_t *ds = &a->ty.shape, *ss = &a->args[0]->ty.shape;
  int b = nchw_block(a->attrs->v[ATTR_DST_LAYOUT].s), B = nchw_block(a->attrs->v[ATTR_SRC_LAYOUT].s);
  int buf = epi_param_buf(p, a->args[0]);
  if (buf < 0 || b <= 0 || B < 0 || ds->ndim != 5 || (B && (b % B && B % b)) || b > 64) return 0;
  lfunc *f = p->f;
  int64_t N = ds->d[0], CB = ds->d[1], H = ds->d[2], W = ds->d[3], C = CB * b;
  if (B ? (ss->ndim != 5 || ss->d[1] * B != C || ss->d[4] != B) : (ss->ndim != 4 || ss->d[1] != C)) return 0;
  int L = B && B < b ? B : b;
  int64_t per = b / L;
  int vo = lf_var(f, "o");
  int64_t total = row ? CB * W * per : N * CB * H * W * per;   /* under a row, the row's */
  fn->body = ls_add(f, parent, ls_for(f, vo, lx_int(f, 0), lx_int(f, total), total > 1 && !row ? LOOP_PARALLEL : LOOP_SERIAL));
  lexpr *o = lx_var(f, vo);
  lexpr *j = lx_bin(f, LO_MOD, o, lx_int(f, per));
  o = lx_bin(f, LO_DIV, o, lx_int(f, per));
  lexpr *w = lx_bin(f, LO_MOD, o, lx_int(f, W)), *h, *cb, *n;
  o = lx_bin(f, LO_DIV, o, lx_int(f, W));
  if (row) h = row->h, cb = o, n = row->n;
  else {
    h = lx_bin(f, LO_MOD, o, lx_int(f, H));
    o = lx_bin(f, LO_DIV, o, lx_int(f, H));
    cb = lx_bin(f, LO_MOD, o, lx_int(f, CB)), n = lx_bin(f, LO_DIV, o, lx_int(f, CB));
  }
  lexpr *c0 = lx_add(f, lx_mul(f, cb, lx_int(f, b)), lx_mul(f, j, lx_int(f, L)));   /* the vector's first channel */
  lexpr *hw = lx_add(f, lx_mul(f, h, lx_int(f, W)), w);
  if (B) {
    lexpr *plane = lx_add(f, lx_mul(f, n, lx_int(f, C / B)), lx_bin(f, LO_DIV, c0, lx_int(f, B)));
    lexpr *si = lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, plane, lx_int(f, H * W)), hw), lx_int(f, B)), lx_bin(f, LO_MOD, c0, lx_int(f, B)));
    fn->val = lx_load(f, buf, si, L, 1, NULL);
  } else {
    lexpr *si = lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, n, lx_int(f, C)), c0), lx_int(f, H * W)), hw);
    fn->val = lx_load(f, buf, si, L, H * W, NULL);
  }
  lexpr *oc[5] = {n, lx_add(f, cb, lx_int(f, start)), h, w, lx_mul(f, j, lx_int(f, L))};
  memcpy(fn->oc, oc, sizeof oc);
  fn->lanes = L;
  return 1;
}

/* The concatenation a kernel's value is, directly or under elementwise
 * ops (DenseNet's batch norm and ReLU after each of its concatenations):
 * each op's first argument the chain, of the value's shape, its others
 * evaluable with lanes (parameters, broadcast). NULL: none. */
static const node *concat_under(const prim *p, const node *root) {
  const node *x = root;
  while (x->kind == N_CALL && x->op != OP_CONCATENATE) {
    if (x->op < 0 || ops_table[x->op].pat > PAT_BROADCAST || x->n_args < 1 || !shape_eq(&x->args[0]->ty.shape, &root->ty.shape))
      return NULL;
    for (int i = 1; i < x->n_args; i++)
      if (!lanes_ok(p, x->args[i]) || x->args[i]->ty.shape.ndim > root->ty.shape.ndim) return NULL;
    x = x->args[0];
  }
  return x->kind == N_CALL && x->op == OP_CONCATENATE ? x : NULL;
}

/* A concatenation (the function's value, or under elementwise ops: no
 * master op): one loop nest per field over its own part of the output, so
 * each point evaluates its field alone — the generic nest's select chain
 * evaluated every field's index maps and loads at every point and did not
 * vectorise (GoogLeNet's blocked concatenations, 0.63 ms for 1.5 MB on
 * Zen 5). A field of elementwise ops on parameters is read a vector of the
 * last axis at a time (the channel block of NCHW<b>c), a parameter in other
 * channel blocks a vector of the smaller block at a time (concat_relayout);
 * others point by point along the last axis. The ops above the
 * concatenation take the field's value as the master's. */
static temper_status concat_fields(prim *p, const node *x, diag *d) {
  lfunc *f = p->f;
  const node *root = p->fn->body;
  const shape_t *os = &x->ty.shape;
  int r = os->ndim, ax = (int)x->attrs->v[ATTR_AXIS].i[0];
  if (ax < 0) ax += r;
  int64_t ost[TEMPER_MAX_DIMS], start = 0;
  sched_strides(os, ost);
  /* Along the channels of NCHW or NCHW<b>c: one parallel loop over the
   * rows (n, h), every field's nest inside it — not a parallel loop per
   * field, each a wait for every thread: DenseNet-121's last
   * concatenations have 17–33 fields of 32 channels, and at two threads on
   * Zen 5 its 58 concatenations took 1.7–4.2 ms in sequence against 1.3–1.5
   * at one. A thread also keeps to rows, as the convolutions that wrote the
   * fields mostly split theirs (conv_split_rows, the 1×1's loop=1,
   * Winograd's tile blocks), instead of taking a field's first channel
   * blocks from both cores. (Blocks of H/8 rows, for longer runs of each
   * field in memory, measured no better: 1.6–1.8 ms against 1.5–1.8 at two
   * threads, the same at one.) */
  conc_row row = {NULL, NULL};
  lstmt *parent = f->body;
  if (ax == 1 && (r == 4 || r == 5) && os->d[0] * os->d[2] > 1) {
    int vr = lf_var(f, "nh"), vn = lf_var(f, "n"), vh = lf_var(f, "h");
    parent = ls_add(f, f->body, ls_for(f, vr, lx_int(f, 0), lx_int(f, os->d[0] * os->d[2]), LOOP_PARALLEL));
    ls_add(f, parent, ls_let(f, vn, lx_bin(f, LO_DIV, lx_var(f, vr), lx_int(f, os->d[2]))));
    ls_add(f, parent, ls_let(f, vh, lx_bin(f, LO_MOD, lx_var(f, vr), lx_int(f, os->d[2]))));
    row = (conc_row){lx_var(f, vn), lx_var(f, vh)};
  }
  for (int k = 0; k < x->n_args; k++) {
    const node *a = x->args[k];
    const shape_t *as = &a->ty.shape;
    field_nest fn;
    if (!(r == 5 && ax == 1 && concat_relayout(p, a, start, row.n ? &row : NULL, parent, &fn))) {
      int64_t last = as->d[r - 1], ext[TEMPER_MAX_DIMS];
      fn.lanes = ax != r - 1 && last > 1 && last <= 64 && lanes_ok(p, a) ? (int)last : 1;
      /* the dims but the last; under a row, but n and h */
      int64_t outer = 1;
      for (int i = 0; i < r - 1; i++) ext[i] = row.n && (i == 0 || i == 2) ? 1 : as->d[i], outer *= ext[i];
      int vo = lf_var(f, "o");
      fn.body = ls_add(f, parent, ls_for(f, vo, lx_int(f, 0), lx_int(f, outer), outer > 1 && !row.n ? LOOP_PARALLEL : LOOP_SERIAL));
      lexpr *c[TEMPER_MAX_DIMS], *o = lx_var(f, vo);
      for (int i = r - 2; i >= 0; i--) {
        c[i] = i == 0 ? o : lx_bin(f, LO_MOD, o, lx_int(f, ext[i]));
        o = lx_bin(f, LO_DIV, o, lx_int(f, ext[i]));
      }
      if (row.n) c[0] = row.n, c[2] = row.h;
      if (fn.lanes > 1) c[r - 1] = lx_int(f, 0);
      else {
        int vi = lf_var(f, "i");
        fn.body = ls_add(f, fn.body, ls_for(f, vi, lx_int(f, 0), lx_int(f, last), LOOP_SERIAL));
        c[r - 1] = lx_var(f, vi);
      }
      epi e = {.p = p, .lanes = fn.lanes, .lane_axis = r - 1, .d = d};
      fn.val = epi_eval(&e, a, c);
      for (int i = 0; i < r; i++) fn.oc[i] = i == ax ? lx_add(f, c[i], lx_int(f, start)) : c[i];
    }
    lexpr *v = fn.val;
    if (root != x) {   /* the ops above, at the point of the concatenation */
      p->master = x;
      epi e = {.p = p, .lanes = fn.lanes, .lane_axis = r - 1, .master_val = v, .d = d};
      v = epi_eval(&e, root, fn.oc);
      p->master = NULL;
    }
    lexpr *idx = lx_int(f, 0);
    for (int i = 0; i < r; i++) idx = lx_add(f, idx, lx_mul(f, fn.oc[i], lx_int(f, ost[i])));
    ls_add(f, fn.body, ls_store(f, p->out_buf, idx, v, 1, NULL));
    start += as->d[ax];
  }
  return d->status;
}

temper_status sched_generic(prim *p, diag *d) {
  lfunc *f = p->f;
  const shape_t *os = &p->fn->body->ty.shape;
  int r = os->ndim;
  const node *pm = p->master;
  if (pm && (pm->op == OP_MAX_POOL2D || pm->op == OP_AVG_POOL2D || pm->op == OP_GLOBAL_AVG_POOL2D || pm->op == OP_GLOBAL_MAX_POOL2D) && r == 5 &&
      pm->ty.shape.ndim == 5 && shape_eq(&pm->ty.shape, os) && os->d[4] <= 64)
    return pool_blocked(p, d);
  const node *cat = pm || !r ? NULL : concat_under(p, p->fn->body);
  if (cat) return concat_fields(p, cat, d);
  /* the inner loop runs along the last axis longer than 1 (a reduction's
   * [1, 3136, 96, 1] runs along the 96, not 301,056 times along a 1) */
  int ax = r - 1;
  while (ax > 0 && os->d[ax] == 1) ax--;
  int64_t inner = r ? os->d[ax] : 1, outer = 1;
  for (int i = 0; i < ax; i++) outer *= os->d[i];
  int vo = lf_var(f, "o"), vi = lf_var(f, "i");
  lstmt *lo = ls_add(f, f->body, ls_for(f, vo, lx_int(f, 0), lx_int(f, outer), outer > 1 ? LOOP_PARALLEL : LOOP_SERIAL));
  lstmt *li = ls_add(f, lo, ls_for(f, vi, lx_int(f, 0), lx_int(f, inner), outer > 1 ? LOOP_SERIAL : LOOP_PARALLEL));
  lexpr *c[TEMPER_MAX_DIMS];
  lexpr *o = lx_var(f, vo);
  for (int i = ax - 1; i >= 0; i--) {
    c[i] = i == 0 ? o : lx_bin(f, LO_MOD, o, lx_int(f, os->d[i]));
    o = lx_bin(f, LO_DIV, o, lx_int(f, os->d[i]));
  }
  if (r) c[ax] = lx_var(f, vi);
  for (int i = ax + 1; i < r; i++) c[i] = lx_int(f, 0);
  epi e = {.p = p, .lanes = 1, .d = d};
  const node *m = p->master;
  if (m && m->op == OP_CONV2D && (m->ty.shape.ndim != 4 || strcmp(m->attrs->v[ATTR_KERNEL_LAYOUT].s, "OIHW")))
    return diag_fail(d, TEMPER_EUNSUPPORTED, "conv2d in layout %s/%s needs a schedule attribute",
                     m->attrs->v[ATTR_DATA_LAYOUT].s, m->attrs->v[ATTR_KERNEL_LAYOUT].s);
  if (m && m->op == OP_CONV2D) e.master_val = conv_value(p, li, c);
  else if (m && (m->op == OP_MAX_POOL2D || m->op == OP_AVG_POOL2D || m->op == OP_GLOBAL_AVG_POOL2D || m->op == OP_GLOBAL_MAX_POOL2D)) e.master_val = pool_value(p, li, c, 1);
  else if (m) return diag_fail(d, TEMPER_EUNSUPPORTED, "no schedule for %s", ir_op_name(m));
  lexpr *v = epi_eval(&e, p->fn->body, c);
  lexpr *idx = lx_add(f, lx_mul(f, lx_var(f, vo), lx_int(f, inner)), lx_var(f, vi));
  ls_add(f, li, ls_store(f, p->out_buf, idx, v, 1, NULL));
  return d->status;
}
