/* gen.c: random networks in the text format for the differential tester.
 *
 * A network is grown op by op from one NCHW input. Each step picks an op
 * and its operands among the values made so far (the newest most often, so
 * chains are deep and branches happen), and appends a binding:
 *
 *   %x ─ conv2d ─ [bias | batch_norm | relu | clip | ×scale | + residual]* ─┐
 *            └──── max/avg pool ── conv2d (groups, depthwise) ─ concat ◀───┘
 *                                                             └─ head: global pool → flatten → dense → softmax
 *   and the layers of newer networks: channel shuffles and slices, NHWC
 *   permutes around a bias and GELU or SiLU, a linear layer on every pixel,
 *   a layer norm over the channels (ConvNeXt's, as ONNX writes it),
 *   squeeze-excite; a depthwise conv2d often followed by a 1×1 (MobileNet's
 *   project) and often after one (its expand), which the build may fuse with it
 *
 * Shapes are drawn so every op is valid: kernels 1×1 to 7×7 (non-square
 * too), strides 1–3, dilation 1–2, asymmetric padding, channel counts odd
 * and prime as well as round, groups from 1 to depthwise, inputs down to
 * 1×1. The result is every value no op consumed (a tuple when there are
 * several), so nothing computed goes unchecked. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "difftest.h"

const dt_gen_opts dt_gen_defaults = {.max_ops = 7, .max_hw = 20, .max_channels = 48};

enum { MAX_VALUES = 64 };

typedef struct val {
  char name[32];       /* "%x", "%3" */
  int rank;            /* 4: (N, C, H, W); 2: (N, F) */
  int64_t N, C, H, W;  /* rank 2: C is F */
  int used;            /* consumed by a later op */
} val;

typedef struct gen {
  pcg32 rng;
  const dt_gen_opts *o;
  strbuf params;         /* ", %w1: Tensor[...]" */
  strbuf body;           /* "  %1 = ...;\n" */
  val v[MAX_VALUES];
  int n;
  int next_id;
} gen;

static int rnd(gen *g, int n) { return n > 0 ? (int)(pcg32_next(&g->rng) % (uint32_t)n) : 0; }
static int chance(gen *g, int percent) { return rnd(g, 100) < percent; }
static int pick_of(gen *g, const int *xs, int n) { return xs[rnd(g, n)]; }

/* a new parameter; its name carries the id so names are unique */
static void param(gen *g, char *name, size_t n, const char *stem, int id, const char *shape) {
  snprintf(name, n, "%%%s%d", stem, id);
  strbuf_printf(&g->params, ",\n          %s: Tensor[%s, float32]", name, shape);
}

/* a value made by the binding named `name` */
static void add_val(gen *g, const char *name, int rank, int64_t N, int64_t C, int64_t H, int64_t W) {
  val *v = &g->v[g->n++];
  *v = (val){.rank = rank, .N = N, .C = C, .H = H, .W = W};
  snprintf(v->name, sizeof v->name, "%s", name);
}

static void add_val_id(gen *g, int id, int rank, int64_t N, int64_t C, int64_t H, int64_t W) {
  char name[16];
  snprintf(name, sizeof name, "%%%d", id);
  add_val(g, name, rank, N, C, H, W);
}

/* an operand of rank 4: the newest most often, else any */
static val *pick4(gen *g) {
  int cand[MAX_VALUES], k = 0;
  for (int i = 0; i < g->n; i++)
    if (g->v[i].rank == 4) cand[k++] = i;
  if (!k) return NULL;
  return &g->v[chance(g, 60) ? cand[k - 1] : cand[rnd(g, k)]];
}

static int64_t rand_channels(gen *g) {
  static const int cs[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 16, 17, 20, 24, 29, 32, 40, 48, 56, 64};
  int64_t c;
  do c = pick_of(g, cs, (int)(sizeof cs / sizeof *cs));
  while (c > g->o->max_channels);
  return c;
}

/* output size of a window op, or 0 if it does not fit */
static int64_t out_size(int64_t in, int64_t pa, int64_t pb, int64_t k, int64_t dil, int64_t st) {
  int64_t e = dil * (k - 1) + 1, p = in + pa + pb;
  return e > p ? 0 : (p - e) / st + 1;
}

/* the elementwise chain after a conv2d: bias, batch_norm, relu, clip,
 * a per-channel scale, a residual add of a same-shaped earlier value, and
 * the activations of newer networks (hard sigmoid and swish, leaky relu,
 * tanh, erf, exp, x·sigmoid(x), PReLU) */
static void epilogue(gen *g, char *cur, size_t n, const val *shape) {
  int steps = rnd(g, 4);
  for (int s = 0; s < steps; s++) {
    int k = rnd(g, 7), t = g->next_id++;
    char p[32], q[32], r[32], u[32], sh[64];
    switch (k) {
    case 0:
      snprintf(sh, sizeof sh, "(%lld)", (long long)shape->C);
      param(g, p, sizeof p, "bias", t, sh);
      strbuf_printf(&g->body, "  %%%d = nn.bias_add(%s, %s);\n", t, cur, p);
      break;
    case 1:
      snprintf(sh, sizeof sh, "(%lld)", (long long)shape->C);
      param(g, p, sizeof p, "bn_gamma", t, sh);
      param(g, q, sizeof q, "bn_beta", t, sh);
      param(g, r, sizeof r, "bn_mean", t, sh);
      param(g, u, sizeof u, "bn_var", t, sh);
      strbuf_printf(&g->body, "  %%%d = nn.batch_norm(%s, %s, %s, %s, %s);\n", t, cur, p, q, r, u);
      t = g->next_id++;
      strbuf_printf(&g->body, "  %%%d = %%%d.0;\n", t, t - 1);
      break;
    case 2: strbuf_printf(&g->body, "  %%%d = nn.relu(%s);\n", t, cur); break;
    case 3: strbuf_printf(&g->body, "  %%%d = clip(%s, a_min=%df, a_max=%df);\n", t, cur, -rnd(g, 3), 1 + rnd(g, 6)); break;
    case 4:
      snprintf(sh, sizeof sh, "(%lld, 1, 1)", (long long)shape->C);
      param(g, p, sizeof p, "mul", t, sh);
      strbuf_printf(&g->body, "  %%%d = multiply(%s, %s);\n", t, cur, p);
      break;
    case 6: {
      static const char *const act[] = {"nn.hard_sigmoid(%s, alpha=0.1666667f, beta=0.5f)", "nn.hard_swish(%s)",
                                        "nn.leaky_relu(%s, alpha=0.1f)", "tanh(%s)", "erf(%s)", "exp(%s)", "silu", "prelu"};
      int a = rnd(g, 8);
      if (a == 7) {   /* PReLU: a slope per channel */
        snprintf(sh, sizeof sh, "(%lld, 1, 1)", (long long)shape->C);
        param(g, p, sizeof p, "slope", t, sh);
        strbuf_printf(&g->body, "  %%%d = nn.prelu(%s, %s);\n", t, cur, p);
        break;
      }
      if (a == 6) {   /* SiLU: x · sigmoid(x), the conv's output used twice */
        strbuf_printf(&g->body, "  %%%d = sigmoid(%s);\n", t, cur);
        t = g->next_id++;
        strbuf_printf(&g->body, "  %%%d = multiply(%s, %%%d);\n", t, cur, t - 1);
        break;
      }
      char line[128];
      snprintf(line, sizeof line, act[a], cur);
      strbuf_printf(&g->body, "  %%%d = %s;\n", t, line);
      break;
    }
    default: {   /* residual: an earlier value of the same shape, else skip */
      int cand[MAX_VALUES], c = 0;
      for (int i = 0; i < g->n; i++)
        if (g->v[i].rank == 4 && g->v[i].N == shape->N && g->v[i].C == shape->C && g->v[i].H == shape->H && g->v[i].W == shape->W)
          cand[c++] = i;
      if (!c) { strbuf_printf(&g->body, "  %%%d = nn.relu(%s);\n", t, cur); break; }
      val *o = &g->v[cand[rnd(g, c)]];
      o->used = 1;
      if (chance(g, 50)) strbuf_printf(&g->body, "  %%%d = add(%s, %s);\n", t, cur, o->name);
      else strbuf_printf(&g->body, "  %%%d = add(%s, %s);\n", t, o->name, cur);
    }
    }
    snprintf(cur, n, "%%%d", g->next_id - 1);
  }
}

/* a 1×1 conv2d of x to K channels and an epilogue, the newest value */
static val *gen_1x1(gen *g, val *x, int64_t K) {
  x->used = 1;
  int id = g->next_id++;
  char w[32], sh_[96], cur[32];
  snprintf(sh_, sizeof sh_, "(%lld, %lld, 1, 1)", (long long)K, (long long)x->C);
  param(g, w, sizeof w, "w", id, sh_);
  strbuf_printf(&g->body, "  %%%d = nn.conv2d(%s, %s, channels=%lld, kernel_size=[1, 1]);\n", id, x->name, w, (long long)K);
  snprintf(cur, sizeof cur, "%%%d", id);
  val shape = {.rank = 4, .N = x->N, .C = K, .H = x->H, .W = x->W};
  epilogue(g, cur, sizeof cur, &shape);
  add_val(g, cur, 4, x->N, K, x->H, x->W);
  return &g->v[g->n - 1];
}

/* MobileNet's project: a 1×1 conv2d on a depthwise conv2d's output (the
 * pair the build may fuse into one kernel, conv2d_dwpw.c) */
static void gen_project(gen *g, val *x) { gen_1x1(g, x, rand_channels(g)); }

/* MobileNet's expand: a 1×1 conv2d widening x by 2 to 6 times, whose
 * output a depthwise conv2d reads next (the pair the build may fuse into
 * one kernel, conv2d_pwdw.c) */
static val *gen_expand(gen *g, val *x) {
  int64_t K = x->C * (2 + rnd(g, 5)), most = 2 * g->o->max_channels;
  return gen_1x1(g, x, K <= most ? K : x->C > most ? x->C : most);
}

static int gen_conv(gen *g) {
  val *x = pick4(g);
  int64_t C = x->C, G = 1, K;
  int kind = rnd(g, 10);
  if (kind >= 5 && kind < 7 && chance(g, 60)) x = gen_expand(g, x), C = x->C;
  if (kind < 5) K = rand_channels(g);                        /* one group */
  else if (kind < 7 && C > 1) G = C, K = C * (chance(g, 75) ? 1 : 2);   /* depthwise, or a channel multiplier */
  else {                                                     /* another divisor of C */
    int ds[64], nd = 0;
    for (int64_t d = 2; d < C; d++)
      if (C % d == 0) ds[nd++] = (int)d;
    G = nd ? ds[rnd(g, nd)] : 1;
    K = G * (1 + rnd(g, 4));
    if (chance(g, 35)) {   /* ResNeXt's groups: as many outputs as inputs, often 2, 4 or 8 channels each */
      static const int narrow[] = {2, 4, 8};
      int64_t cg = pick_of(g, narrow, 3);
      if (C % cg == 0 && C > cg && chance(g, 70)) G = C / cg;
      K = C;
    }
  }
  if (K > 2 * g->o->max_channels) K = G;
  int64_t R, S;
  if (chance(g, 65)) { static const int ks[] = {1, 3, 3, 5, 7}; R = S = pick_of(g, ks, 5); }
  else R = 1 + rnd(g, 7), S = 1 + rnd(g, 7);
  int64_t sh = chance(g, 60) ? 1 : 2 + rnd(g, 2), sw = chance(g, 80) ? sh : 1 + rnd(g, 3);
  int64_t dh = chance(g, 80) ? 1 : 2, dw = chance(g, 80) ? dh : 1 + rnd(g, 2);
  int64_t pt, pl, pb, pr;
  if (chance(g, 50)) pt = pb = (dh * (R - 1)) / 2, pl = pr = (dw * (S - 1)) / 2;   /* "same" */
  else pt = rnd(g, (int)R), pb = rnd(g, (int)R), pl = rnd(g, (int)S), pr = rnd(g, (int)S);
  int64_t OH = out_size(x->H, pt, pb, R, dh, sh), OW = out_size(x->W, pl, pr, S, dw, sw);
  if (!OH || !OW) {   /* the window does not fit: a 1×1 conv instead */
    R = S = 1, dh = dw = 1, pt = pl = pb = pr = 0;
    OH = out_size(x->H, 0, 0, 1, 1, sh), OW = out_size(x->W, 0, 0, 1, 1, sw);
  }
  x->used = 1;
  int id = g->next_id++;
  char w[32], sh_[96], cur[32];
  snprintf(sh_, sizeof sh_, "(%lld, %lld, %lld, %lld)", (long long)K, (long long)(C / G), (long long)R, (long long)S);
  param(g, w, sizeof w, "w", id, sh_);
  strbuf_printf(&g->body, "  %%%d = nn.conv2d(%s, %s, strides=[%lld, %lld], padding=[%lld, %lld, %lld, %lld], dilation=[%lld, %lld], "
                      "groups=%lld, channels=%lld, kernel_size=[%lld, %lld]);\n",
            id, x->name, w, (long long)sh, (long long)sw, (long long)pt, (long long)pl, (long long)pb, (long long)pr, (long long)dh,
            (long long)dw, (long long)G, (long long)K, (long long)R, (long long)S);
  snprintf(cur, sizeof cur, "%%%d", id);
  val shape = {.rank = 4, .N = x->N, .C = K, .H = OH, .W = OW};
  epilogue(g, cur, sizeof cur, &shape);
  add_val(g, cur, 4, x->N, K, OH, OW);
  if (G == C && K == C && C > 1 && chance(g, 50)) gen_project(g, &g->v[g->n - 1]);
  return 0;
}

static void gen_pool(gen *g) {
  val *x = pick4(g);
  int kind = rnd(g, 5);
  x->used = 1;
  int id = g->next_id++;
  if (kind == 4) {
    strbuf_printf(&g->body, "  %%%d = nn.global_%s_pool2d(%s);\n", id, chance(g, 30) ? "max" : "avg", x->name);
    add_val_id(g, id, 4, x->N, x->C, 1, 1);
    return;
  }
  int64_t k = 1 + rnd(g, 3), st = 1 + rnd(g, 2), p = rnd(g, (int)k), ceil = chance(g, 25);
  int64_t pt = p, pl = chance(g, 70) ? p : rnd(g, (int)k), pb = chance(g, 70) ? p : rnd(g, (int)k), pr = chance(g, 70) ? pl : rnd(g, (int)k);
  int64_t OH = out_size(x->H, pt, pb, k, 1, st), OW = out_size(x->W, pl, pr, k, 1, st);
  if (!OH || !OW) k = 1, pt = pl = pb = pr = 0, OH = out_size(x->H, 0, 0, 1, 1, st), OW = out_size(x->W, 0, 0, 1, 1, st);
  if (ceil) {   /* ceil_mode adds a window that starts inside the input or its leading padding */
    OH = (x->H + pt + pb - k + st - 1) / st + 1;
    OW = (x->W + pl + pr - k + st - 1) / st + 1;
    if ((OH - 1) * st >= x->H + pt) OH--;
    if ((OW - 1) * st >= x->W + pl) OW--;
  }
  int avg = kind >= 2;
  if (avg && !ceil && chance(g, 25)) {   /* PyTorch's count_include_pad=True: a zero pad (maybe of nothing), then the pool */
    strbuf_printf(&g->body, "  %%%d = nn.pad(%s, pad_width=[[0, 0], [0, 0], [%lld, %lld], [%lld, %lld]]);\n", id, x->name, (long long)pt,
                  (long long)pb, (long long)pl, (long long)pr);
    int id2 = g->next_id++;
    strbuf_printf(&g->body, "  %%%d = nn.avg_pool2d(%%%d, pool_size=[%lld, %lld], strides=[%lld, %lld]);\n", id2, id, (long long)k, (long long)k,
                  (long long)st, (long long)st);
    add_val_id(g, id2, 4, x->N, x->C, OH, OW);
    return;
  }
  strbuf_printf(&g->body, "  %%%d = nn.%s_pool2d(%s, pool_size=[%lld, %lld], strides=[%lld, %lld], padding=[%lld, %lld, %lld, %lld]%s%s);\n",
            id, avg ? "avg" : "max", x->name, (long long)k, (long long)k, (long long)st, (long long)st, (long long)pt, (long long)pl,
            (long long)pb, (long long)pr, ceil ? ", ceil_mode=True" : "", avg && chance(g, 50) ? ", count_include_pad=True" : "");
  add_val_id(g, id, 4, x->N, x->C, OH, OW);
}

/* concatenate along channels every earlier value of the same (N, H, W) as
 * the newest one, when there is another; else nothing */
static void gen_concat(gen *g) {
  val *x = pick4(g);
  int cand[MAX_VALUES], k = 0;
  for (int i = 0; i < g->n; i++)
    if (g->v[i].rank == 4 && &g->v[i] != x && g->v[i].N == x->N && g->v[i].H == x->H && g->v[i].W == x->W) cand[k++] = i;
  if (!k) return;
  int m = 1 + rnd(g, k < 3 ? k : 3);
  int64_t C = x->C;
  int id = g->next_id++;
  strbuf_printf(&g->body, "  %%%d = concatenate((%s", id, x->name);
  x->used = 1;
  for (int j = 0; j < m; j++) {
    val *o = &g->v[cand[rnd(g, k)]];
    o->used = 1;
    C += o->C;
    strbuf_printf(&g->body, ", %s", o->name);
  }
  strbuf_printf(&g->body, "), axis=%d);\n", chance(g, 25) ? -3 : 1);   /* -3: the layout pass's NCHW<b>c concatenation takes axis 1 */
  add_val_id(g, id, 4, x->N, C, x->H, x->W);
}

/* the classifier head: (global pool) → flatten → dense (+ bias) (→ softmax) */
static void gen_head(gen *g) {
  val *x = pick4(g);
  x->used = 1;
  const char *cur = x->name;
  char buf[32];
  int64_t F = x->C * x->H * x->W;
  if (chance(g, 60) || F > 4096) {
    int id = g->next_id++;
    strbuf_printf(&g->body, "  %%%d = nn.global_avg_pool2d(%s);\n", id, cur);
    snprintf(buf, sizeof buf, "%%%d", id);
    cur = buf;
    F = x->C;
  }
  int id = g->next_id++;
  strbuf_printf(&g->body, "  %%%d = nn.batch_flatten(%s);\n", id, cur);
  int64_t U = 1 + rnd(g, 20);
  int dn = g->next_id++;
  char w[32], sh[64];
  snprintf(sh, sizeof sh, "(%lld, %lld)", (long long)U, (long long)F);
  param(g, w, sizeof w, "fc_w", dn, sh);
  strbuf_printf(&g->body, "  %%%d = nn.dense(%%%d, %s, units=%lld);\n", dn, id, w, (long long)U);
  int last = dn;
  if (chance(g, 70)) {
    int b = g->next_id++;
    char bn[32];
    snprintf(sh, sizeof sh, "(%lld)", (long long)U);
    param(g, bn, sizeof bn, "fc_b", b, sh);
    strbuf_printf(&g->body, "  %%%d = nn.bias_add(%%%d, %s);\n", b, last, bn);
    last = b;
  }
  if (chance(g, 60)) {
    int s = g->next_id++;
    strbuf_printf(&g->body, "  %%%d = nn.softmax(%%%d);\n", s, last);
    last = s;
  }
  add_val_id(g, last, 2, x->N, U, 1, 1);
}

/* a standalone elementwise op or softmax over channels */
static void gen_elementwise(gen *g) {
  val *x = pick4(g);
  x->used = 1;
  int id = g->next_id++;
  switch (rnd(g, 3)) {
  case 0: strbuf_printf(&g->body, "  %%%d = sigmoid(%s);\n", id, x->name); break;
  case 1: strbuf_printf(&g->body, "  %%%d = nn.softmax(%s, axis=1);\n", id, x->name); break;
  default: strbuf_printf(&g->body, "  %%%d = multiply(%s, %s);\n", id, x->name, x->name); break;
  }
  add_val_id(g, id, 4, x->N, x->C, x->H, x->W);
}

/* ShuffleNet's channel shuffle (reshape to 5-d, transpose the groups,
 * reshape back), or a slice of channels and rows with steps */
static void gen_shuffle_or_slice(gen *g) {
  val *x = pick4(g);
  x->used = 1;
  int id = g->next_id++;
  int64_t gr = x->C % 2 == 0 ? 2 : x->C % 3 == 0 ? 3 : 0;
  if (gr && chance(g, 50)) {
    strbuf_printf(&g->body, "  %%%d = reshape(%s, newshape=[%lld, %lld, %lld, %lld, %lld]);\n", id, x->name, (long long)x->N, (long long)gr,
                  (long long)(x->C / gr), (long long)x->H, (long long)x->W);
    int t = g->next_id++;
    strbuf_printf(&g->body, "  %%%d = transpose(%%%d, axes=[0, 2, 1, 3, 4]);\n", t, id);
    int r = g->next_id++;
    strbuf_printf(&g->body, "  %%%d = reshape(%%%d, newshape=[%lld, %lld, %lld, %lld]);\n", r, t, (long long)x->N, (long long)x->C,
                  (long long)x->H, (long long)x->W);
    add_val_id(g, r, 4, x->N, x->C, x->H, x->W);
    return;
  }
  int64_t c0 = rnd(g, (int)x->C), c1 = c0 + 1 + rnd(g, (int)(x->C - c0));
  int64_t h0 = rnd(g, (int)x->H), sh = 1 + rnd(g, 2), sw = 1 + rnd(g, 2);
  int64_t oh = (x->H - h0 + sh - 1) / sh, ow = (x->W + sw - 1) / sw;
  strbuf_printf(&g->body, "  %%%d = strided_slice(%s, begin=[0, %lld, %lld, 0], end=[%lld, %lld, %lld, %lld], step=[1, 1, %lld, %lld]);\n", id,
                x->name, (long long)c0, (long long)h0, (long long)x->N, (long long)c1, (long long)x->H, (long long)x->W, (long long)sh,
                (long long)sw);
  add_val_id(g, id, 4, x->N, c1 - c0, oh, ow);
}


/* layers written for NHWC, as ConvNeXt's: a permute, a bias and an
 * activation, a permute back (the sink pass cancels the two); or a linear
 * layer on every pixel, as a dense over N·H·W rows (a 1×1 conv2d once there
 * are 16 of them); or squeeze-excite with the scale first in the multiply,
 * as PyTorch exports it */
/* ConvNeXt's layer norm: over NHWC's last axis between permutes, as ONNX's
 * opset 13 writes it (ReduceMean as the importer makes it: reshape, global
 * average, reshape; then Sub, Pow, ReduceMean, Add, Sqrt, Div, γ, β); or
 * Relay's nn.layer_norm over NCHW's channels */
static void gen_layer_norm(gen *g, val *x) {
  char gm[48], bt[48], shape[64];
  int64_t N = x->N, C = x->C, H = x->H, W = x->W, M = N * H * W;
  int t = g->next_id;
  snprintf(shape, sizeof shape, "(%lld)", (long long)C);
  param(g, gm, sizeof gm, "g", t, shape);
  param(g, bt, sizeof bt, "b", t, shape);
  if (chance(g, 30)) {
    strbuf_printf(&g->body, "  %%%d = nn.layer_norm(%s, %s, %s, axis=1, epsilon=%s);\n", t, x->name, gm, bt, chance(g, 50) ? "1e-05f" : "0.001f");
    g->next_id = t + 1;
    add_val_id(g, t, 4, N, C, H, W);
    return;
  }
  strbuf_printf(&g->body, "  %%%d = transpose(%s, axes=[0, 2, 3, 1]);\n", t, x->name);
  for (int k = 0; k < 2; k++) {   /* the mean of x, then of the squared deviation */
    int src = k ? t + 5 : t, at = t + 1 + 5 * k;
    if (k) strbuf_printf(&g->body, "  %%%d = multiply(%%%d, %%%d);\n", t + 5, t + 4, t + 4);
    strbuf_printf(&g->body, "  %%%d = reshape(%%%d, newshape=[1, %lld, %lld, 1]);\n", at, src, (long long)M, (long long)C);
    strbuf_printf(&g->body, "  %%%d = nn.global_avg_pool2d(%%%d);\n", at + 1, at);
    strbuf_printf(&g->body, "  %%%d = reshape(%%%d, newshape=[%lld, %lld, %lld, 1]);\n", at + 2, at + 1, (long long)N, (long long)H,
                  (long long)W);
    if (!k) strbuf_printf(&g->body, "  %%%d = subtract(%%%d, %%%d);\n", t + 4, t, t + 3);
  }
  strbuf_printf(&g->body, "  %%%d = add(%%%d, 1e-06f);\n  %%%d = sqrt(%%%d);\n", t + 9, t + 8, t + 10, t + 9);
  strbuf_printf(&g->body, "  %%%d = divide(%%%d, %%%d);\n", t + 11, t + 4, t + 10);
  strbuf_printf(&g->body, "  %%%d = multiply(%%%d, %s);\n  %%%d = add(%%%d, %s);\n", t + 12, t + 11, gm, t + 13, t + 12, bt);
  strbuf_printf(&g->body, "  %%%d = transpose(%%%d, axes=[0, 3, 1, 2]);\n", t + 14, t + 13);
  g->next_id = t + 15;
  add_val_id(g, t + 14, 4, N, C, H, W);
}

static void gen_nhwc_or_se(gen *g) {
  val *x = pick4(g);
  x->used = 1;
  char b[48], w[48];
  int64_t N = x->N, C = x->C, H = x->H, W = x->W;
  int k = rnd(g, 4);
  if (k == 3) {
    gen_layer_norm(g, x);
    return;
  }
  int t = g->next_id++;
  if (k == 0) {
    char shape[64];
    snprintf(shape, sizeof shape, "(%lld)", (long long)C);
    param(g, b, sizeof b, "b", t, shape);
    strbuf_printf(&g->body, "  %%%d = transpose(%s, axes=[0, 2, 3, 1]);\n", t, x->name);
    strbuf_printf(&g->body, "  %%%d = add(%%%d, %s);\n", t + 1, t, b);
    int last = t + 3;
    if (chance(g, 50)) {   /* GELU as PyTorch exports it: x · 0.5 · (1 + erf(x / √2)), the value used twice */
      strbuf_printf(&g->body, "  %%%d = divide(%%%d, 1.41421354f);\n", t + 2, t + 1);
      strbuf_printf(&g->body, "  %%%d = erf(%%%d);\n", t + 3, t + 2);
      strbuf_printf(&g->body, "  %%%d = add(%%%d, 1f);\n", t + 4, t + 3);
      strbuf_printf(&g->body, "  %%%d = multiply(%%%d, %%%d);\n", t + 5, t + 1, t + 4);
      strbuf_printf(&g->body, "  %%%d = multiply(%%%d, 0.5f);\n", t + 6, t + 5);
      last = t + 6;
    } else {
      strbuf_printf(&g->body, "  %%%d = sigmoid(%%%d);\n", t + 2, t + 1);
      strbuf_printf(&g->body, "  %%%d = multiply(%%%d, %%%d);\n", t + 3, t + 2, t + 1);
    }
    strbuf_printf(&g->body, "  %%%d = transpose(%%%d, axes=[0, 3, 1, 2]);\n", last + 1, last);
    g->next_id = last + 2;
    add_val_id(g, last + 1, 4, N, C, H, W);
    return;
  }
  if (k == 1) {
    int64_t U = rand_channels(g), M = N * H * W;
    char shape[64];
    snprintf(shape, sizeof shape, "(%lld, %lld)", (long long)U, (long long)C);
    param(g, w, sizeof w, "w", t, shape);
    strbuf_printf(&g->body, "  %%%d = transpose(%s, axes=[0, 2, 3, 1]);\n", t, x->name);
    strbuf_printf(&g->body, "  %%%d = reshape(%%%d, newshape=[%lld, %lld]);\n", t + 1, t, (long long)M, (long long)C);
    strbuf_printf(&g->body, "  %%%d = nn.dense(%%%d, %s, units=%lld);\n", t + 2, t + 1, w, (long long)U);
    strbuf_printf(&g->body, "  %%%d = reshape(%%%d, newshape=[%lld, %lld, %lld, %lld]);\n", t + 3, t + 2, (long long)N, (long long)H,
                  (long long)W, (long long)U);
    strbuf_printf(&g->body, "  %%%d = transpose(%%%d, axes=[0, 3, 1, 2]);\n", t + 4, t + 3);
    g->next_id = t + 5;
    add_val_id(g, t + 4, 4, N, U, H, W);
    return;
  }
  char shape[64];
  snprintf(shape, sizeof shape, "(%lld, %lld, 1, 1)", (long long)C, (long long)C);
  param(g, w, sizeof w, "w", t, shape);
  strbuf_printf(&g->body, "  %%%d = nn.global_avg_pool2d(%s);\n", t, x->name);
  strbuf_printf(&g->body, "  %%%d = nn.conv2d(%%%d, %s, channels=%lld, kernel_size=[1, 1]);\n", t + 1, t, w, (long long)C);
  strbuf_printf(&g->body, "  %%%d = sigmoid(%%%d);\n", t + 2, t + 1);
  strbuf_printf(&g->body, "  %%%d = multiply(%%%d, %s);\n", t + 3, t + 2, x->name);
  g->next_id = t + 4;
  add_val_id(g, t + 3, 4, N, C, H, W);
}

/* dt_generate: seed → model text; deterministic */
char *dt_generate(uint64_t seed, const dt_gen_opts *o) {
  gen g = {.o = o ? o : &dt_gen_defaults};
  pcg32_seed(&g.rng, seed, 0x5eed);
  int64_t N = chance(&g, 85) ? 1 : 2, C = rand_channels(&g);
  int64_t H = chance(&g, 10) ? 1 + rnd(&g, 3) : 1 + rnd(&g, g.o->max_hw), W = chance(&g, 70) ? H : 1 + rnd(&g, g.o->max_hw);
  val *x = &g.v[g.n++];
  *x = (val){.rank = 4, .N = N, .C = C, .H = H, .W = W};
  snprintf(x->name, sizeof x->name, "%%x");
  int ops = 1 + rnd(&g, g.o->max_ops);
  for (int i = 0; i < ops && g.n < MAX_VALUES - 4; i++) {
    int k = rnd(&g, 100);
    if (k < 60 || i == 0) gen_conv(&g);
    else if (k < 75) gen_pool(&g);
    else if (k < 86) gen_concat(&g);
    else if (k < 91) gen_elementwise(&g);
    else if (k < 96) gen_shuffle_or_slice(&g);
    else gen_nhwc_or_se(&g);
  }
  if (chance(&g, 45)) gen_head(&g);
  strbuf out = {0};
  strbuf_printf(&out, "// difftest seed %llu\ndef @main(%%x: Tensor[(%lld, %lld, %lld, %lld), float32]%s) {\n%s",
            (unsigned long long)seed, (long long)N, (long long)C, (long long)H, (long long)W, g.params.s ? g.params.s : "",
            g.body.s ? g.body.s : "");
  int leaves[MAX_VALUES], nl = 0;
  for (int i = 1; i < g.n; i++)
    if (!g.v[i].used) leaves[nl++] = i;
  if (nl == 1) strbuf_printf(&out, "  %s\n}\n", g.v[leaves[0]].name);
  else {
    strbuf_printf(&out, "  (");
    for (int i = 0; i < nl; i++) strbuf_printf(&out, "%s%s", i ? ", " : "", g.v[leaves[i]].name);
    strbuf_printf(&out, ")\n}\n");
  }
  int failed = out.failed || g.params.failed || g.body.failed;
  free(g.params.s);
  free(g.body.s);
  if (failed) { free(out.s); return NULL; }
  return out.s;
}
