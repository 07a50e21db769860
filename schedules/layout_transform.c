/* layout_transform.c: moving an activation between NCHW and NCHW<b>c
 * layouts (the transforms between differently blocked convs) as vector
 * copies instead of the generic per-element index arithmetic. Plain NCHW is
 * block 1. From block a to block b, with g = gcd(a, b):
 *
 *   g > 1:   parallel over (n, h, output block); for each w, b/g copies of
 *            g contiguous floats. g divides both blocks, so a run of g
 *            channels starting at a multiple of g lies inside one input
 *            block and one output block (12c → 8c copies runs of 4: min(a, b)
 *            = 8 would read channels 8..15 from one 12-wide block)
 *   g = 1:   parallel over (n, h, output block); for each channel of the
 *            output block, the row in vectors along w: loads with stride a,
 *            stores with stride b (one side contiguous), the last one masked
 *
 * Rows outermost, as in the convs that split over rows: each thread moves
 * the rows its core wrote (a channel-block split read half of every row
 * from the other core: 0.025 ms in sequence against 0.004 alone on
 * ResNet-50's 14×14 transforms at two threads).
 *
 * Only for channel counts both blocks divide (no padding); anything else
 * takes the generic schedule. */
#include <string.h>
#include "schedules.h"

/* the block of an NCHW-family layout: 1 for NCHW, b for NCHW<b>c, 0 if neither */
static int64_t nchw_block(const char *l) {
  if (!strcmp(l, "NCHW")) return 1;
  layout_t t;
  if (layout_parse(l, &t) || t.n != 5 || strncmp(t.axis, "NCHWc", 5) || !t.factor[4]) return 0;
  return t.factor[4];
}

int sched_is_layout_copy(const node *fn) {
  const node *b = fn->body;
  if (b->kind != N_CALL || b->op != OP_LAYOUT_TRANSFORM || b->args[0]->kind != N_VAR) return 0;
  int64_t a = nchw_block(b->attrs->v[ATTR_SRC_LAYOUT].s), o = nchw_block(b->attrs->v[ATTR_DST_LAYOUT].s);
  if (!a || !o || a == o) return 0;
  const shape_t *xs = &b->args[0]->ty.shape;
  int64_t C = xs->d[1] * a;   /* NCHW is block 1 */
  return C % a == 0 && C % o == 0;
}

static int64_t gcd(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

temper_status sched_layout_copy(prim *p, int vec, diag *d) {
  lfunc *f = p->f;
  const node *b = p->fn->body;
  int64_t a = nchw_block(b->attrs->v[ATTR_SRC_LAYOUT].s), ob = nchw_block(b->attrs->v[ATTR_DST_LAYOUT].s);
  const shape_t *xs = &b->args[0]->ty.shape;
  int64_t N = xs->d[0], C = xs->d[1] * a, H = xs->d[2], W = xs->d[3], CBi = C / a, CBo = C / ob;
  int xb = epi_param_buf(p, b->args[0]);
  int vt = lf_var(f, "n_h_cb"), vn = lf_var(f, "n"), vc = lf_var(f, "cb"), vh = lf_var(f, "h");
  lstmt *lt = ls_add(f, f->body, ls_for(f, vt, lx_int(f, 0), lx_int(f, N * CBo * H), LOOP_PARALLEL));
  lexpr *t = lx_var(f, vt);
  ls_add(f, lt, ls_let(f, vc, lx_bin(f, LO_MOD, t, lx_int(f, CBo))));
  ls_add(f, lt, ls_let(f, vh, lx_bin(f, LO_MOD, lx_bin(f, LO_DIV, t, lx_int(f, CBo)), lx_int(f, H))));
  ls_add(f, lt, ls_let(f, vn, lx_bin(f, LO_DIV, t, lx_int(f, H * CBo))));
  lexpr *n = lx_var(f, vn), *cb = lx_var(f, vc), *h = lx_var(f, vh);
  /* element index of channel c at (n, h, w) in block k */
  #define AT(k, CB, c, w) lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, lx_add(f, lx_mul(f, n, lx_int(f, CB)), \
                          lx_bin(f, LO_DIV, c, lx_int(f, k))), lx_int(f, H)), h), lx_int(f, W)), w), lx_int(f, k)), lx_bin(f, LO_MOD, c, lx_int(f, k)))
  int64_t g = gcd(a, ob);
  if (g > 1) {
    int vw = lf_var(f, "w");
    lstmt *lw = ls_add(f, lt, ls_for(f, vw, lx_int(f, 0), lx_int(f, W), LOOP_SERIAL));
    lexpr *w = lx_var(f, vw);
    for (int64_t q = 0; q < ob / g; q++) {
      lexpr *c = lx_add(f, lx_mul(f, cb, lx_int(f, ob)), lx_int(f, q * g));
      lexpr *v = lx_load(f, xb, AT(a, CBi, c, w), (int)g, 1, NULL);
      ls_add(f, lw, ls_store(f, p->out_buf, AT(ob, CBo, c, w), v, 1, NULL));
    }
    return d->status;
  }
  int lanes = vec, vl = lf_var(f, "l"), vw = lf_var(f, "w0");
  lstmt *ll = ls_add(f, lt, ls_for(f, vl, lx_int(f, 0), lx_int(f, ob), ob <= 16 ? LOOP_UNROLL : LOOP_SERIAL));
  lstmt *lw = ls_add(f, ll, ls_for(f, vw, lx_int(f, 0), lx_int(f, (W + lanes - 1) / lanes), LOOP_SERIAL));
  lexpr *c = lx_add(f, lx_mul(f, cb, lx_int(f, ob)), lx_var(f, vl));
  lexpr *w0 = lx_mul(f, lx_var(f, vw), lx_int(f, lanes));
  lexpr *limit = W % lanes ? lx_bin(f, LO_SUB, lx_int(f, W), w0) : NULL;
  lexpr *v = lx_load(f, xb, AT(a, CBi, c, w0), lanes, a, limit);
  ls_add(f, lw, ls_store(f, p->out_buf, AT(ob, CBo, c, w0), v, ob, limit));
  #undef AT
  return d->status;
}
