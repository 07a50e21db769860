/* reference.c: the reference interpreter. Plain C loops, written to be
 * obviously correct rather than fast: the oracle for tests, --check and
 * constant folding. NCHW float32. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "compiler_int.h"

/* index of `out` coordinate in an input broadcast to out's rank */
static int64_t bcast_index(const shape_t *in, const shape_t *out, const int64_t *coord) {
  int64_t idx = 0;
  for (int i = 0; i < in->ndim; i++) {
    int oi = out->ndim - in->ndim + i;
    int64_t c = in->d[i] == 1 ? 0 : coord[oi];
    idx = idx * in->d[i] + c;
  }
  return idx;
}

static void unravel(int64_t flat, const shape_t *s, int64_t *coord) {
  for (int i = s->ndim - 1; i >= 0; i--) {
    coord[i] = flat % s->d[i];
    flat /= s->d[i];
  }
}

/* Moves a tensor between layouts of the same primal axes. The primal sizes
 * come from `dims`; padding in dst is zero. The source index is a sum of one
 * term per primal axis, tabulated once, so the walk over dst is cheap. */
void ref_relayout(const float *src, const char *sl, float *dst, const char *dl, const char *axes, const int64_t *dims) {
  layout_t ls, ld;
  layout_parse(sl, &ls);
  layout_parse(dl, &ld);
  shape_t ss, ds;
  layout_shape(&ls, axes, dims, &ss);
  layout_shape(&ld, axes, dims, &ds);
  int np = (int)strlen(axes);
  int64_t *tab[8] = {0}, sstride[8];
  for (int i = ss.ndim - 1, acc = 1; i >= 0; i--) sstride[i] = acc, acc *= (int)ss.d[i];
  for (int p = 0; p < np; p++) {   /* tab[p][x]: contribution of primal coordinate x of axis p */
    tab[p] = calloc((size_t)dims[p] + 1, sizeof(int64_t));
    if (!tab[p]) goto out;
    int64_t f = 1, outer = 0, inner = 0;
    for (int i = 0; i < ls.n; i++) {
      if (ls.factor[i] && ls.axis[i] == axes[p] + ('a' - 'A')) f = ls.factor[i], inner = sstride[i];
      if (!ls.factor[i] && ls.axis[i] == axes[p]) outer = sstride[i];
    }
    for (int64_t x = 0; x < dims[p]; x++) tab[p][x] = (x / f) * outer + (x % f) * inner;
  }
  int pmap[8];
  int64_t mul[8], pc[8] = {0}, P[8] = {0};
  for (int i = 0; i < ld.n; i++) {
    pmap[i] = (int)(strchr(axes, ld.factor[i] ? ld.axis[i] - ('a' - 'A') : ld.axis[i]) - axes);
    mul[i] = 1;
    if (!ld.factor[i])
      for (int k = 0; k < ld.n; k++)
        if (ld.factor[k] && ld.axis[k] == ld.axis[i] + ('a' - 'A')) mul[i] = ld.factor[k];
  }
  int64_t total = shape_numel(&ds);
  for (int64_t e = 0; e < total; e++) {
    int ok = 1;
    int64_t idx = 0;
    for (int p = 0; p < np; p++) {
      if (P[p] >= dims[p]) { ok = 0; break; }
      idx += tab[p][P[p]];
    }
    dst[e] = ok ? src[idx] : 0.0f;
    for (int i = ds.ndim - 1; i >= 0; i--) {   /* odometer over dst, keeping P in step */
      pc[i]++;
      P[pmap[i]] += mul[i];
      if (pc[i] < ds.d[i]) break;
      P[pmap[i]] -= mul[i] * pc[i];
      pc[i] = 0;
    }
  }
out:
  for (int p = 0; p < np; p++) free(tab[p]);
}

static int is_plain(const char *l) { return !l[0] || !strcmp(l, "NCHW") || !strcmp(l, "OIHW"); }

typedef struct conv_dims { int64_t N, C, H, W, K, OH, OW, R, S, G, sh, sw, ph, pw, dh, dw; } conv_dims;

/* y[k][oh][ow] = sum over (ci, r, s), in that order, in double. A whole
 * output row accumulates at once (one double per column), so the inner loop
 * runs along the row: every output sees the same additions in the same
 * order as one dot product at a time, and the result is the same bit for bit;
 * the columns a kernel tap reaches inside the image are worked out once per
 * tap instead of tested per multiply. */
static int conv_plain(const conv_dims *c, const float *x, const float *w, float *y) {
  int64_t Cg = c->C / c->G, Kg = c->K / c->G;
  double *acc = malloc(sizeof(double) * (size_t)(c->OW ? c->OW : 1));
  if (!acc) return 0;
  for (int64_t nn = 0; nn < c->N; nn++)
    for (int64_t k = 0; k < c->K; k++)
      for (int64_t oh = 0; oh < c->OH; oh++) {
        int64_t g = k / Kg;
        for (int64_t ow = 0; ow < c->OW; ow++) acc[ow] = 0;
        for (int64_t ci = 0; ci < Cg; ci++)
          for (int64_t r = 0; r < c->R; r++) {
            int64_t ih = oh * c->sh - c->ph + r * c->dh;
            if (ih < 0 || ih >= c->H) continue;
            const float *xrow = x + ((nn * c->C + g * Cg + ci) * c->H + ih) * c->W;
            for (int64_t s = 0; s < c->S; s++) {
              /* iw = ow * sw + off inside [0, W) for ow in [lo, hi) */
              int64_t off = s * c->dw - c->pw;
              int64_t lo = off >= 0 ? 0 : (-off + c->sw - 1) / c->sw;
              int64_t hi = c->W - 1 - off < 0 ? 0 : (c->W - 1 - off) / c->sw + 1;
              if (hi > c->OW) hi = c->OW;
              double wv = w[((k * Cg + ci) * c->R + r) * c->S + s];
              for (int64_t ow = lo; ow < hi; ow++) acc[ow] += (double)xrow[ow * c->sw + off] * wv;
            }
          }
        float *yrow = y + ((nn * c->K + k) * c->OH + oh) * c->OW;
        for (int64_t ow = 0; ow < c->OW; ow++) yrow[ow] = (float)acc[ow];
      }
  free(acc);
  return 1;
}

/* any layouts: unpack to NCHW / OIHW, convolve, pack the result */
static temper_status ref_conv2d(const node *n, const float *x, const float *w, float *y) {
  const attrs_t *a = n->attrs;
  const char *dl = a->v[ATTR_DATA_LAYOUT].s, *kl = a->v[ATTR_KERNEL_LAYOUT].s;
  const char *ol = a->v[ATTR_OUT_LAYOUT].s[0] ? a->v[ATTR_OUT_LAYOUT].s : dl;
  const shape_t *xs = &n->args[0]->ty.shape, *ws = &n->args[1]->ty.shape;
  int xb = layout_block(dl, 'c'), ib = layout_block(kl, 'i'), ob = layout_block(kl, 'o');
  conv_dims c = {xs->d[0], xs->d[1] * (xb ? xb : 1), xs->d[2], xs->d[3], 0, 0, 0, ws->d[2], ws->d[3],
                 a->v[ATTR_GROUPS].i[0], a->v[ATTR_STRIDES].i[0], a->v[ATTR_STRIDES].i[1], a->v[ATTR_PADDING].i[0],
                 a->v[ATTR_PADDING].i[1], a->v[ATTR_DILATION].i[0], a->v[ATTR_DILATION].i[1]};
  c.K = ob ? a->v[ATTR_CHANNELS].i[0] : ws->d[0];
  c.OH = (c.H + a->v[ATTR_PADDING].i[0] + a->v[ATTR_PADDING].i[2] - c.dh * (c.R - 1) - 1) / c.sh + 1;
  c.OW = (c.W + a->v[ATTR_PADDING].i[1] + a->v[ATTR_PADDING].i[3] - c.dw * (c.S - 1) - 1) / c.sw + 1;
  int64_t Cg = ws->d[1] * (ib ? ib : 1);
  int64_t xd[4] = {c.N, c.C, c.H, c.W}, wd[4] = {c.K, Cg, c.R, c.S}, yd[4] = {c.N, c.K, c.OH, c.OW};
  float *xp = (float *)x, *wp = (float *)w, *yp = y;
  if (!is_plain(dl) && !(xp = malloc(sizeof(float) * (size_t)(c.N * c.C * c.H * c.W)))) return TEMPER_ENOMEM;
  if (!is_plain(kl) && !(wp = malloc(sizeof(float) * (size_t)(c.K * Cg * c.R * c.S)))) goto oom;
  if (!is_plain(ol) && !(yp = malloc(sizeof(float) * (size_t)(c.N * c.K * c.OH * c.OW)))) goto oom;
  if (xp != x) ref_relayout(x, dl, xp, "NCHW", "NCHW", xd);
  if (wp != w) ref_relayout(w, kl, wp, "OIHW", "OIHW", wd);
  if (!conv_plain(&c, xp, wp, yp)) goto oom;
  if (yp != y) ref_relayout(yp, "NCHW", y, ol, "NCHW", yd);
  if (xp != x) free(xp);
  if (wp != w) free(wp);
  if (yp != y) free(yp);
  return TEMPER_OK;
oom:
  if (xp != x) free(xp);
  if (wp != w) free(wp);
  if (yp != y) free(yp);
  return TEMPER_ENOMEM;
}

/* the Winograd conv2d: x and U to NCHW / HWIO, the algorithm in double, back */
static temper_status ref_conv2d_winograd(const node *n, const float *x, const float *u, float *y) {
  const attrs_t *a = n->attrs;
  const char *dl = a->v[ATTR_DATA_LAYOUT].s, *kl = a->v[ATTR_KERNEL_LAYOUT].s;
  const char *ol = a->v[ATTR_OUT_LAYOUT].s[0] ? a->v[ATTR_OUT_LAYOUT].s : dl;
  const shape_t *xs = &n->args[0]->ty.shape;
  int xb = layout_block(dl, 'c');
  int64_t m = a->v[ATTR_TILE_SIZE].i[0], s = a->v[ATTR_STRIDES].i[0], al = winograd_alpha((int)m, (int)s), K = a->v[ATTR_CHANNELS].i[0];
  int64_t N = xs->d[0], C = xs->d[1] * (xb ? xb : 1), H = xs->d[2], W = xs->d[3];
  const int64_t *pad = a->v[ATTR_PADDING].i;
  int64_t OH = (H + pad[0] + pad[2] - 3) / s + 1, OW = (W + pad[1] + pad[3] - 3) / s + 1;
  int64_t xd[4] = {N, C, H, W}, ud[4] = {al, al, C, K}, yd[4] = {N, K, OH, OW};
  float *xp = malloc(sizeof(float) * (size_t)(N * C * H * W)), *up = malloc(sizeof(float) * (size_t)(al * al * C * K));
  float *yp = malloc(sizeof(float) * (size_t)(N * K * OH * OW));
  int rc = -1;
  if (xp && up && yp) {
    ref_relayout(x, dl, xp, "NCHW", "NCHW", xd);
    ref_relayout(u, kl, up, "HWIO", "HWIO", ud);
    rc = winograd_conv_ref(xp, up, yp, N, C, H, W, K, pad, (int)m, (int)s);
    if (!rc) ref_relayout(yp, "NCHW", y, ol, "NCHW", yd);
  }
  free(xp);
  free(up);
  free(yp);
  return rc ? TEMPER_ENOMEM : TEMPER_OK;
}

static void pool_plain(const node *n, const float *x, float *y, int64_t NC, int64_t H, int64_t W, int64_t OH, int64_t OW) {
  const attrs_t *a = n->attrs;
  int is_max = n->op == OP_MAX_POOL2D || n->op == OP_GLOBAL_MAX_POOL2D;
  int global = n->op == OP_GLOBAL_AVG_POOL2D || n->op == OP_GLOBAL_MAX_POOL2D;
  int64_t kh = global ? H : a->v[ATTR_POOL_SIZE].i[0], kw = global ? W : a->v[ATTR_POOL_SIZE].i[1];
  int64_t sh = global ? 1 : a->v[ATTR_STRIDES].i[0], sw = global ? 1 : a->v[ATTR_STRIDES].i[1];
  int64_t ph = global ? 0 : a->v[ATTR_PADDING].i[0], pw = global ? 0 : a->v[ATTR_PADDING].i[1];
  int64_t pb = global ? 0 : a->v[ATTR_PADDING].i[2], pr = global ? 0 : a->v[ATTR_PADDING].i[3];
  int64_t dh = global ? 1 : a->v[ATTR_DILATION].i[0], dw = global ? 1 : a->v[ATTR_DILATION].i[1];
  int include_pad = !global && a->v[ATTR_COUNT_INCLUDE_PAD].i[0];
  for (int64_t p = 0; p < NC; p++)
    for (int64_t oh = 0; oh < OH; oh++)
      for (int64_t ow = 0; ow < OW; ow++) {
        double acc = is_max ? -INFINITY : 0;
        int64_t cnt = 0, padded = 0;
        for (int64_t r = 0; r < kh; r++)
          for (int64_t s = 0; s < kw; s++) {
            int64_t ih = oh * sh - ph + r * dh, iw = ow * sw - pw + s * dw;
            /* count_include_pad counts window cells inside the padded input */
            if (ih < H + pb && iw < W + pr) padded++;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            float v = x[(p * H + ih) * W + iw];
            if (is_max) acc = v > acc ? v : acc;
            else acc += v;
            cnt++;
          }
        if (!is_max) {
          int64_t div = include_pad ? padded : cnt;
          acc = div ? acc / (double)div : 0;
        }
        y[(p * OH + oh) * OW + ow] = (float)acc;
      }
}

static temper_status ref_pool(const node *n, const float *x, float *y) {
  const shape_t *xs = &n->args[0]->ty.shape, *ys = &n->ty.shape;
  const char *l = n->attrs->v[ATTR_LAYOUT].s;
  int b = layout_block(l, 'c');
  int64_t N = xs->d[0], C = xs->d[1] * (b ? b : 1), H = xs->d[2], W = xs->d[3], OH = ys->d[2], OW = ys->d[3];
  if (!b) { pool_plain(n, x, y, N * C, H, W, OH, OW); return TEMPER_OK; }
  float *xp = malloc(sizeof(float) * (size_t)(N * C * H * W)), *yp = malloc(sizeof(float) * (size_t)(N * C * OH * OW));
  if (!xp || !yp) { free(xp); free(yp); return TEMPER_ENOMEM; }
  int64_t xd[4] = {N, C, H, W}, yd[4] = {N, C, OH, OW};
  ref_relayout(x, l, xp, "NCHW", "NCHW", xd);
  pool_plain(n, xp, yp, N * C, H, W, OH, OW);
  ref_relayout(yp, "NCHW", y, l, "NCHW", yd);
  free(xp);
  free(yp);
  return TEMPER_OK;
}

/* layer norm over one axis of a plain tensor: rows of len values, stride
 * inner; the mean and variance in double, two passes */
static void layer_norm_plain(const float *x, float *y, int64_t outer, int64_t len, int64_t inner, double eps, const float *g,
                             const float *b) {
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      const float *xr = x + o * len * inner + i;
      float *yr = y + o * len * inner + i;
      double mean = 0, var = 0;
      for (int64_t j = 0; j < len; j++) mean += xr[j * inner];
      mean /= (double)len;
      for (int64_t j = 0; j < len; j++) var += (xr[j * inner] - mean) * (xr[j * inner] - mean);
      double rstd = 1 / sqrt(var / (double)len + eps);
      for (int64_t j = 0; j < len; j++) yr[j * inner] = (float)((xr[j * inner] - mean) * rstd * (g ? g[j] : 1) + (b ? b[j] : 0));
    }
}

static temper_status ref_layer_norm(const node *n, const float *const *in, float *y) {
  const shape_t *xs = &n->args[0]->ty.shape;
  const attrs_t *a = n->attrs;
  int ax = (int)(a->v[ATTR_AXIS].i[0] < 0 ? a->v[ATTR_AXIS].i[0] + xs->ndim : a->v[ATTR_AXIS].i[0]);
  double eps = a->v[ATTR_EPSILON].f;
  const float *g = n->n_args == 3 && a->v[ATTR_SCALE].i[0] ? in[1] : NULL, *b = n->n_args == 3 && a->v[ATTR_CENTER].i[0] ? in[2] : NULL;
  int blk = layout_block(a->v[ATTR_LAYOUT].s, 'c');
  if (!blk) {
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < ax; i++) outer *= xs->d[i];
    for (int i = ax + 1; i < xs->ndim; i++) inner *= xs->d[i];
    layer_norm_plain(in[0], y, outer, xs->d[ax], inner, eps, g, b);
    return TEMPER_OK;
  }
  /* NCHW<b>c: over the channels, in NCHW and back */
  int64_t N = xs->d[0], C = xs->d[1] * blk, H = xs->d[2], W = xs->d[3], cnt = N * C * H * W;
  float *xp = malloc(sizeof(float) * (size_t)cnt), *yp = malloc(sizeof(float) * (size_t)cnt);
  if (!xp || !yp) { free(xp); free(yp); return TEMPER_ENOMEM; }
  int64_t dims[4] = {N, C, H, W};
  ref_relayout(in[0], a->v[ATTR_LAYOUT].s, xp, "NCHW", "NCHW", dims);
  layer_norm_plain(xp, yp, N, C, H * W, eps, NULL, NULL);
  ref_relayout(yp, "NCHW", y, a->v[ATTR_LAYOUT].s, "NCHW", dims);
  free(xp);
  free(yp);
  return TEMPER_OK;
}

static float ref_unary(int op, const attrs_t *a, float v) {
  switch (op) {
  case OP_RELU: return v > 0 ? v : 0;
  case OP_SIGMOID: return 1.0f / (1.0f + expf(-v));
  case OP_SQRT: return sqrtf(v);
  case OP_HARD_SIGMOID: return fmaxf(0.0f, fminf(1.0f, (float)a->v[ATTR_ALPHA].f * v + (float)a->v[ATTR_BETA].f));
  case OP_HARD_SWISH: return v * fmaxf(0.0f, fminf(6.0f, v + 3.0f)) / 6.0f;
  case OP_LEAKY_RELU: return v >= 0 ? v : (float)a->v[ATTR_ALPHA].f * v;
  case OP_TANH: return tanhf(v);
  case OP_ERF: return erff(v);
  case OP_EXP: return expf(v);
  case OP_CLIP: {
    float lo = (float)a->v[ATTR_A_MIN].f, hi = (float)a->v[ATTR_A_MAX].f;
    return v < lo ? lo : v > hi ? hi : v;
  }
  default: return v;
  }
}

static float ref_binary(int op, float x, float y) {
  switch (op) {
  case OP_ADD: case OP_BIAS_ADD: return x + y;
  case OP_SUBTRACT: return x - y;
  case OP_MULTIPLY: return x * y;
  case OP_DIVIDE: return x / y;
  case OP_PRELU: return x >= 0 ? x : y * x;
  default: return 0;
  }
}

temper_status ref_eval_op(const node *n, const float *const *in, float **outs, diag *d) {
  const shape_t *ys = &n->ty.shape;
  float *y = outs[0];
  int64_t total = n->ty.kind == TY_TENSOR ? shape_numel(ys) : 0;
  int64_t coord[TEMPER_MAX_DIMS];
  const attrs_t *a = n->attrs;
  switch ((op_id)n->op) {
  case OP_CONV2D:
    if (ref_conv2d(n, in[0], in[1], y)) return diag_fail(d, TEMPER_ENOMEM, "reference: out of memory for nn.conv2d's working copies in NCHW");
    break;
  case OP_CONV2D_WINOGRAD:
    if (ref_conv2d_winograd(n, in[0], in[1], y)) return diag_fail(d, TEMPER_ENOMEM, "reference: out of memory for the Winograd conv2d's working copies");
    break;
  case OP_WINOGRAD_WEIGHT: {
    const shape_t *ws = &n->args[0]->ty.shape;
    winograd_weight(in[0], ws->d[0], ws->d[1], (int)a->v[ATTR_TILE_SIZE].i[0], (int)a->v[ATTR_STRIDES].i[0], y);
    break;
  }
  case OP_DENSE: {
    int64_t B = ys->d[0], U = ys->d[1], I = n->args[0]->ty.shape.d[1];
    for (int64_t b = 0; b < B; b++)
      for (int64_t u = 0; u < U; u++) {
        double acc = 0;
        for (int64_t i = 0; i < I; i++) acc += (double)in[0][b * I + i] * in[1][u * I + i];
        y[b * U + u] = (float)acc;
      }
    break;
  }
  case OP_MAX_POOL2D: case OP_AVG_POOL2D: case OP_GLOBAL_AVG_POOL2D: case OP_GLOBAL_MAX_POOL2D:
    if (ref_pool(n, in[0], y)) return diag_fail(d, TEMPER_ENOMEM, "reference: out of memory for the pool's working copies in NCHW");
    break;
  case OP_RELU: case OP_SIGMOID: case OP_SQRT: case OP_CLIP: case OP_HARD_SIGMOID: case OP_HARD_SWISH: case OP_LEAKY_RELU: case OP_TANH:
  case OP_ERF: case OP_EXP:
    for (int64_t i = 0; i < total; i++) y[i] = ref_unary(n->op, a, in[0][i]);
    break;
  case OP_BIAS_ADD: {
    const shape_t *xs = &n->args[0]->ty.shape;
    int ax = (int)(a->v[ATTR_AXIS].i[0] < 0 ? a->v[ATTR_AXIS].i[0] + xs->ndim : a->v[ATTR_AXIS].i[0]);
    for (int64_t i = 0; i < total; i++) {
      unravel(i, ys, coord);
      y[i] = in[0][i] + in[1][coord[ax]];
    }
    break;
  }
  case OP_ADD: case OP_SUBTRACT: case OP_MULTIPLY: case OP_DIVIDE: case OP_PRELU: {
    const shape_t *as = &n->args[0]->ty.shape, *bs = &n->args[1]->ty.shape;
    for (int64_t i = 0; i < total; i++) {
      unravel(i, ys, coord);
      y[i] = ref_binary(n->op, in[0][bcast_index(as, ys, coord)], in[1][bcast_index(bs, ys, coord)]);
    }
    break;
  }
  case OP_LAYER_NORM:
    if (ref_layer_norm(n, in, y)) return diag_fail(d, TEMPER_ENOMEM, "reference: out of memory for the layer norm's copies in NCHW");
    break;
  case OP_BATCH_NORM: {
    const shape_t *xs = &n->args[0]->ty.shape;
    int ax = (int)(a->v[ATTR_AXIS].i[0] < 0 ? a->v[ATTR_AXIS].i[0] + xs->ndim : a->v[ATTR_AXIS].i[0]);
    int64_t cnt = shape_numel(xs);
    for (int64_t i = 0; i < cnt; i++) {
      unravel(i, xs, coord);
      int64_t c = coord[ax];
      float g = a->v[ATTR_SCALE].i[0] ? in[1][c] : 1.0f, b = a->v[ATTR_CENTER].i[0] ? in[2][c] : 0.0f;
      outs[0][i] = (in[0][i] - in[3][c]) / sqrtf(in[4][c] + (float)a->v[ATTR_EPSILON].f) * g + b;
    }
    int64_t C = xs->d[ax];
    if (outs[1]) memcpy(outs[1], in[3], sizeof(float) * (size_t)C);
    if (outs[2]) memcpy(outs[2], in[4], sizeof(float) * (size_t)C);
    break;
  }
  case OP_DROPOUT: {
    int64_t cnt = shape_numel(&n->args[0]->ty.shape);
    memcpy(outs[0], in[0], sizeof(float) * (size_t)cnt);
    if (outs[1]) for (int64_t i = 0; i < cnt; i++) outs[1][i] = 1.0f;
    break;
  }
  case OP_BATCH_FLATTEN: case OP_RESHAPE: memcpy(y, in[0], sizeof(float) * (size_t)total); break;
  case OP_TRANSPOSE: case OP_STRIDED_SLICE: {   /* each output element from its input coordinate */
    const shape_t *xs = &n->args[0]->ty.shape;
    const attr_val *ax = &a->v[ATTR_AXES];
    int64_t ic[TEMPER_MAX_DIMS];
    for (int64_t i = 0; i < total; i++) {
      unravel(i, ys, coord);
      for (int j = 0; j < ys->ndim; j++) {
        if (n->op == OP_STRIDED_SLICE) ic[j] = a->v[ATTR_BEGIN].i[j] + coord[j] * a->v[ATTR_STEP].i[j];
        else {
          int64_t p = ax->n ? ax->i[j] : ys->ndim - 1 - j;
          ic[p < 0 ? p + ys->ndim : p] = coord[j];
        }
      }
      int64_t idx = 0;
      for (int j = 0; j < xs->ndim; j++) idx = idx * xs->d[j] + ic[j];
      y[i] = in[0][idx];
    }
    break;
  }
  case OP_CONCATENATE: {
    int ax = (int)(a->v[ATTR_AXIS].i[0] < 0 ? a->v[ATTR_AXIS].i[0] + ys->ndim : a->v[ATTR_AXIS].i[0]);
    for (int64_t i = 0; i < total; i++) {
      unravel(i, ys, coord);
      int f = 0;
      while (coord[ax] >= n->args[f]->ty.shape.d[ax]) coord[ax] -= n->args[f++]->ty.shape.d[ax];
      const shape_t *fs = &n->args[f]->ty.shape;
      int64_t idx = 0;
      for (int j = 0; j < fs->ndim; j++) idx = idx * fs->d[j] + coord[j];
      y[i] = in[f][idx];
    }
    break;
  }
  case OP_SOFTMAX: {
    int ax = (int)(a->v[ATTR_AXIS].i[0] < 0 ? a->v[ATTR_AXIS].i[0] + ys->ndim : a->v[ATTR_AXIS].i[0]);
    int64_t len = ys->d[ax], inner = 1;
    for (int j = ax + 1; j < ys->ndim; j++) inner *= ys->d[j];
    int64_t outer = total / (len * inner);
    for (int64_t o = 0; o < outer; o++)
      for (int64_t i = 0; i < inner; i++) {
        const float *x = in[0] + o * len * inner + i;
        float *yy = y + o * len * inner + i;
        float m = -INFINITY;
        for (int64_t j = 0; j < len; j++) m = x[j * inner] > m ? x[j * inner] : m;
        double s = 0;
        for (int64_t j = 0; j < len; j++) s += exp((double)x[j * inner] - m);
        for (int64_t j = 0; j < len; j++) yy[j * inner] = (float)(exp((double)x[j * inner] - m) / s);
      }
    break;
  }
  case OP_LAYOUT_TRANSFORM: {
    const char *src = a->v[ATTR_SRC_LAYOUT].s, *dst = a->v[ATTR_DST_LAYOUT].s;
    layout_t ls;
    layout_parse(src, &ls);
    char axes[9] = {0};
    int64_t dims[8];
    int np = 0;
    const shape_t *xs = &n->args[0]->ty.shape;
    for (int i = 0; i < ls.n; i++)
      if (!ls.factor[i]) dims[np] = xs->d[i], axes[np++] = ls.axis[i];
    for (int i = 0; i < ls.n; i++)
      if (ls.factor[i]) dims[strchr(axes, ls.axis[i] - ('a' - 'A')) - axes] *= ls.factor[i];
    ref_relayout(in[0], src, y, dst, axes, dims);
    break;
  }
  case OP_PAD: {
    const shape_t *xs = &n->args[0]->ty.shape;
    const int64_t *pw = a->v[ATTR_PAD_WIDTH].i;
    for (int64_t i = 0; i < total; i++) {
      unravel(i, ys, coord);
      int64_t idx = 0, inside = 1;
      for (int k = 0; k < ys->ndim; k++) {
        int64_t c = coord[k] - pw[2 * k];
        inside &= c >= 0 && c < xs->d[k];
        idx = idx * xs->d[k] + (c < 0 ? 0 : c >= xs->d[k] ? xs->d[k] - 1 : c);
      }
      y[i] = inside ? in[0][idx] : (float)a->v[ATTR_PAD_VALUE].f;
    }
    break;
  }
  case OP_COUNT: case OP_FUNCALL: return diag_fail(d, TEMPER_EINTERNAL, "reference: bad op");
  }
  return TEMPER_OK;
}

/* per node: its value buffers (one per tuple field) */
typedef struct value { float **bufs; int n; int owned; } value;

static void value_free(value *v) {
  if (v->owned)
    for (int i = 0; i < v->n; i++) free(v->bufs[i]);
  free(v->bufs);
  v->bufs = NULL;
}

/* the floats of a value of type t (every field of a tuple) */
static int64_t type_floats(const type_t *t) {
  if (t->kind != TY_TUPLE) return shape_numel(&t->shape);
  int64_t n = 0;
  for (int i = 0; i < t->n_fields; i++) n += shape_numel(&t->fields[i]);
  return n;
}

static int value_alloc(value *v, const type_t *t) {
  v->n = t->kind == TY_TUPLE ? t->n_fields : 1;
  v->bufs = calloc((size_t)v->n, sizeof(float *));
  v->owned = 1;
  if (!v->bufs) return -1;
  for (int i = 0; i < v->n; i++) {
    const shape_t *s = t->kind == TY_TUPLE ? &t->fields[i] : &t->shape;
    int64_t cnt = shape_numel(s);
    v->bufs[i] = malloc(sizeof(float) * (size_t)(cnt ? cnt : 1));
    if (!v->bufs[i]) return -1;
  }
  return 0;
}

temper_status ref_eval_func(const node *fn, const float *const *inputs, float ***outputs, int *n_outputs, diag *d) {
  arena scratch = {0};
  int n = 0;
  node **order = ir_topo(&scratch, fn->body, &n);
  int max_id = 0;
  for (int i = 0; i < n; i++) max_id = order[i]->id > max_id ? order[i]->id : max_id;
  for (int i = 0; i < fn->n_params; i++) max_id = fn->params[i]->id > max_id ? fn->params[i]->id : max_id;
  value *vals = calloc((size_t)max_id + 1, sizeof *vals);
  temper_status s = TEMPER_OK;
  if (!order || !vals) { s = diag_fail(d, TEMPER_ENOMEM, "reference: out of memory"); goto done; }
  for (int i = 0; i < fn->n_params; i++) {
    value *v = &vals[fn->params[i]->id];
    v->n = 1;
    v->bufs = malloc(sizeof(float *));
    if (!v->bufs) { s = diag_fail(d, TEMPER_ENOMEM, "reference: out of memory"); goto done; }
    v->bufs[0] = (float *)inputs[i];
  }
  for (int i = 0; i < n && s == TEMPER_OK; i++) {
    node *x = order[i];
    value *v = &vals[x->id];
    switch (x->kind) {
    case N_VAR:
      if (!v->bufs) s = diag_fail(d, TEMPER_EINTERNAL, "reference: free variable %%%s", x->name);
      break;
    case N_FUNC: break;
    case N_CONST:
      v->n = 1;
      if (!(v->bufs = malloc(sizeof(float *)))) { s = diag_fail(d, TEMPER_ENOMEM, "reference: out of memory"); break; }
      v->bufs[0] = x->data;
      break;
    case N_TUPLE: case N_GETITEM: {
      int cnt = x->kind == N_TUPLE ? x->n_args : 1;
      v->n = cnt;
      if (!(v->bufs = malloc(sizeof(float *) * (size_t)(cnt ? cnt : 1)))) { s = diag_fail(d, TEMPER_ENOMEM, "reference: out of memory"); break; }
      for (int j = 0; j < cnt; j++)
        v->bufs[j] = x->kind == N_TUPLE ? vals[x->args[j]->id].bufs[0] : vals[x->args[0]->id].bufs[x->index];
      break;
    }
    case N_CALL: {
      const float *ins[64];
      for (int j = 0; j < x->n_args; j++) ins[j] = vals[x->args[j]->id].bufs[0];
      if (x->op == OP_FUNCALL) {
        float **res = NULL;
        int nr = 0;
        s = ref_eval_func(x->callee, ins, &res, &nr, d);
        if (s == TEMPER_OK) { v->bufs = res; v->n = nr; v->owned = 1; }
        break;
      }
      if (value_alloc(v, &x->ty)) {
        s = diag_fail(d, TEMPER_ENOMEM, "reference: out of memory for the result of %s (%lld floats)", ops_table[x->op].name,
                      (long long)type_floats(&x->ty));
        break;
      }
      s = ref_eval_op(x, ins, v->bufs, d);
      break;
    }
    }
  }
  if (s == TEMPER_OK) {   /* copy the results out: they may alias inputs or constants */
    const node *b = fn->body;
    const type_t *t = &b->ty;
    int cnt = t->kind == TY_TUPLE ? t->n_fields : 1;
    float **res = calloc((size_t)cnt, sizeof(float *));
    if (!res) { s = diag_fail(d, TEMPER_ENOMEM, "reference: out of memory"); goto done; }
    for (int j = 0; j < cnt; j++) {
      const shape_t *sh = t->kind == TY_TUPLE ? &t->fields[j] : &t->shape;
      size_t bytes = sizeof(float) * (size_t)(shape_numel(sh) ? shape_numel(sh) : 1);
      res[j] = malloc(bytes);
      if (!res[j]) {
        for (int k = 0; k < j; k++) free(res[k]);
        free(res);
        s = diag_fail(d, TEMPER_ENOMEM, "reference: out of memory for output %d (%lld floats)", j, (long long)shape_numel(sh));
        goto done;
      }
      memcpy(res[j], vals[b->id].bufs[j], bytes);
    }
    *outputs = res;
    *n_outputs = cnt;
  }
done:
  if (vals)
    for (int i = 0; i <= max_id; i++) value_free(&vals[i]);
  free(vals);
  arena_free(&scratch);
  return s;
}
