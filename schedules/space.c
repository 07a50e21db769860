/* space.c: knob spaces of the conv2d templates, config indexing and text
 * forms, workload keys, and the default config heuristic. */
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "space.h"
#include "loopir.h"
#include "codegen.h"

const char *const tmpl_names[TMPL_COUNT] = {
#define X(id, name, ver) name,
    CONV_TEMPLATES(X)
#undef X
};
const char *const knob_names[K_COUNT] = {
#define X(id, name) name,
    CONV_KNOBS(X)
#undef X
};
const int tmpl_versions[TMPL_COUNT] = {
#define X(id, name, ver) ver,
    CONV_TEMPLATES(X)
#undef X
};

int64_t workload_out(const conv_workload *w, int axis) {
  if (axis == 2) return (w->H + w->pt + w->pb - w->dh * (w->R - 1) - 1) / w->sh + 1;
  return (w->W + w->pl + w->pr - w->dw * (w->S - 1) - 1) / w->sw + 1;
}

int conv_split_rows(const task_space *s) {
  const conv_workload *w = &s->w;
  double in = 4.0 * (double)w->C * (double)w->H * (double)w->W, wt = 4.0 * (double)w->K * (double)(w->C / w->G) * (double)(w->R * w->S);
  double half_l2 = (double)s->l2 / 2;
  if (wt > half_l2 && in <= half_l2) return 0;   /* the input stays in L2 across the channel blocks, the weights would not */
  return in * 4 >= wt;
}

int config_spans_groups(const task_space *s, const sched_config *c) {
  return c->tmpl == TMPL_NCHWC && s->w.G > 1 && cfg_get(s, c, K_OC_BN) > s->w.K / s->w.G;
}

int config_reads_block(const task_space *s, const sched_config *c, int64_t blk) {
  if (c->tmpl == TMPL_DEPTHWISE) return blk == cfg_get(s, c, K_C_BN);
  if (config_spans_groups(s, c)) return blk > 0 && blk % cfg_get(s, c, K_OC_BN) == 0;   /* a block's lanes within one stored block */
  int64_t ib = cfg_get(s, c, K_IC_BN);
  if (c->tmpl == TMPL_WINOGRAD) return blk > 0 && (blk % ib == 0 || ib % blk == 0);
  return blk == 0 || (blk % ib == 0 && (blk == ib || s->w.G == 1));
}

void config_layouts(const task_space *s, const sched_config *c, int64_t producer_blk, conv_layouts *out) {
  int depthwise = c->tmpl == TMPL_DEPTHWISE;
  int64_t ib = cfg_get(s, c, depthwise ? K_C_BN : K_IC_BN);
  out->ob = out->out_blk = cfg_get(s, c, depthwise ? K_C_BN : K_OC_BN);
  out->ki = depthwise ? 1 : ib;
  out->tile = c->tmpl == TMPL_WINOGRAD ? cfg_get(s, c, K_TILE) : 0;
  out->in_blk = producer_blk >= 0 && config_reads_block(s, c, producer_blk) ? producer_blk : config_spans_groups(s, c) ? out->ob : ib;
}

static void blocked(char *buf, size_t n, const char *base, int64_t b, char sub) {
  if (b) snprintf(buf, n, "%s%lld%c", base, (long long)b, sub);
  else snprintf(buf, n, "%s", base);
}

void config_set_attrs(const task_space *s, const sched_config *c, const conv_layouts *l, attrs_t *a) {
  size_t n = sizeof a->v[0].s;
  blocked(a->v[ATTR_DATA_LAYOUT].s, n, "NCHW", l->in_blk, 'c');
  if (l->tile) snprintf(a->v[ATTR_KERNEL_LAYOUT].s, n, "OHWI%lldo", (long long)l->ob);
  else snprintf(a->v[ATTR_KERNEL_LAYOUT].s, n, "OIHW%lldi%lldo", (long long)l->ki, (long long)l->ob);
  blocked(a->v[ATTR_OUT_LAYOUT].s, n, "NCHW", l->out_blk, 'c');
  a->v[ATTR_TILE_SIZE].i[0] = l->tile;
  a->v[ATTR_CHANNELS].i[0] = s->w.K;
  config_short(s, c, a->v[ATTR_SCHEDULE].s, n);
  a->config = c;
}

int config_splits_rows(const task_space *s, const sched_config *c) {
  switch (c->tmpl) {
  case TMPL_NCHWC: return conv_split_rows(s);
  case TMPL_1X1: return cfg_get(s, c, K_LOOP) == 1;
  case TMPL_WINOGRAD: return cfg_get(s, c, K_OC_SPLIT) == 1;   /* tile blocks outer, or channel groups */
  default: return 0;              /* depthwise: channel blocks outer */
  }
}

int workload_of(const node *n, conv_workload *w) {
  if (n->kind != N_CALL || !op_is_conv(n->op)) return -1;
  const attrs_t *a = n->attrs;
  if (n->op == OP_CONV2D_WINOGRAD) {   /* 3×3, stride 1 or 2, dilation 1, one group; weights transformed */
    const shape_t *x = &n->args[0]->ty.shape;
    int xb = layout_block(a->v[ATTR_DATA_LAYOUT].s, 'c');
    const int64_t *p = a->v[ATTR_PADDING].i, *st = a->v[ATTR_STRIDES].i;
    *w = (conv_workload){x->d[0], x->d[1] * (xb ? xb : 1), x->d[2], x->d[3], a->v[ATTR_CHANNELS].i[0], 3, 3, st[0], st[1], p[0], p[1], p[2], p[3], 1, 1, 1};
    return 0;
  }
  const shape_t *x = &n->args[0]->ty.shape, *k = &n->args[1]->ty.shape;
  int xb = layout_block(a->v[ATTR_DATA_LAYOUT].s, 'c'), ob = layout_block(a->v[ATTR_KERNEL_LAYOUT].s, 'o');
  int64_t C = x->d[1] * (xb ? xb : 1), K = ob ? a->v[ATTR_CHANNELS].i[0] : k->d[0];
  *w = (conv_workload){x->d[0], C, x->d[2], x->d[3], K, k->d[2], k->d[3], a->v[ATTR_STRIDES].i[0],
                       a->v[ATTR_STRIDES].i[1], a->v[ATTR_PADDING].i[0], a->v[ATTR_PADDING].i[1], a->v[ATTR_PADDING].i[2],
                       a->v[ATTR_PADDING].i[3], a->v[ATTR_DILATION].i[0], a->v[ATTR_DILATION].i[1], a->v[ATTR_GROUPS].i[0]};
  return 0;
}

void workload_key(const conv_workload *w, char *buf, size_t n) {
  snprintf(buf, n, "conv2d_n%lld_c%lld_h%lld_w%lld_k%lld_r%llds%lld_st%lldx%lld_p%lldx%lldx%lldx%lld_d%lldx%lld_g%lld_f32_nchw",
           (long long)w->N, (long long)w->C, (long long)w->H, (long long)w->W, (long long)w->K, (long long)w->R,
           (long long)w->S, (long long)w->sh, (long long)w->sw, (long long)w->pt, (long long)w->pl, (long long)w->pb,
           (long long)w->pr, (long long)w->dh, (long long)w->dw, (long long)w->G);
}

int workload_valid(const conv_workload *w, char *why, size_t n) {
  const char *bad = NULL;
  if (w->N < 1 || w->C < 1 || w->H < 1 || w->W < 1 || w->K < 1 || w->R < 1 || w->S < 1 || w->G < 1) bad = "sizes must be positive";
  else if (w->N > 4096 || w->C > 1 << 20 || w->K > 1 << 20 || w->H > 1 << 16 || w->W > 1 << 16 || w->R > 64 || w->S > 64)
    bad = "a size is out of range";
  else if (w->sh < 1 || w->sw < 1 || w->dh < 1 || w->dw < 1 || w->sh > 4096 || w->sw > 4096 || w->dh > 4096 || w->dw > 4096)
    bad = "strides and dilations must be between 1 and 4096";
  else if (w->pt < 0 || w->pl < 0 || w->pb < 0 || w->pr < 0 || w->pt > 4096 || w->pl > 4096 || w->pb > 4096 || w->pr > 4096)
    bad = "padding must be between 0 and 4096";
  else if (w->C % w->G || w->K % w->G) bad = "groups must divide the input and output channels";
  else if (w->dh * (w->R - 1) + 1 > w->H + w->pt + w->pb || w->dw * (w->S - 1) + 1 > w->W + w->pl + w->pr)
    bad = "the kernel is larger than the padded input";
  if (bad && why) snprintf(why, n, "%s", bad);
  return bad ? -1 : 0;
}

int workload_from_key(const char *key, conv_workload *w) {
  long long v[16];
  int n = sscanf(key, "conv2d_n%lld_c%lld_h%lld_w%lld_k%lld_r%llds%lld_st%lldx%lld_p%lldx%lldx%lldx%lld_d%lldx%lld_g%lld_f32_nchw", &v[0],
                 &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10], &v[11], &v[12], &v[13], &v[14], &v[15]);
  if (n != 16) return -1;
  *w = (conv_workload){v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15]};
  if (workload_valid(w, NULL, 0)) return -1;   /* a key from a database or a log: every number checked */
  char back[256];
  workload_key(w, back, sizeof back);
  return strcmp(back, key) ? -1 : 0;
}

double workload_flops(const conv_workload *w) {
  return 2.0 * (double)w->N * (double)w->K * (double)workload_out(w, 2) * (double)workload_out(w, 3) *
         (double)(w->C / w->G) * (double)w->R * (double)w->S;
}

/* ---- knob construction ---- */
static knob *add_knob(tmpl_space *t, knob_id id, knob_kind k) {
  knob *kb = &t->knobs[t->n_knobs++];
  kb->id = id;
  kb->name = knob_names[id];
  kb->kind = k;
  kb->n = 0;
  return kb;
}

static void divisors(knob *k, int64_t x, int64_t max, int64_t multiple_of) {
  for (int64_t d = 1; d <= x && d <= max && k->n < SPACE_MAX_CANDS; d++)
    if (x % d == 0 && d % multiple_of == 0) k->vals[k->n++] = d;
}

/* channel blocks for vectors: multiples of vec dividing x, else divisors up to vec */
static void channel_blocks(knob *k, int64_t x, int vec) {
  divisors(k, x, 64, vec);
  if (k->n == 0) divisors(k, x, vec, 1);
}

/* the same, and for a direct template whose channels no multiple of a
 * 16-float vector divides (24, 40, 56: MobileNet's and EfficientNet's
 * projections), blocks of whole vectors and a half one — multiples of 8
 * above vec, up to 64 — added after records existed (knob.added): 24
 * channels in 16 + 8 lanes use 3/4 of two FMAs, in blocks of 8 half of one.
 * The depthwise template (whole_and_half 0) takes only the blocks below:
 * given 24 for MobileNetV3's 72-channel depthwise layers, it ran them in
 * its expand's blocks of 24 and lost their join with the 1×1 after them
 * (which runs whole vectors), 1.03–1.07× the model's time on Zen 5. */
static void channel_blocks_tail(knob *k, int64_t x, int vec, int whole_and_half) {
  channel_blocks(k, x, vec);
  if (vec < 16 || x % vec == 0) return;
  int n = k->n;
  for (int64_t d = vec + 8; d <= x && d <= 64 && k->n < SPACE_MAX_CANDS; d += 8)
    if (x % d == 0 && d % vec) k->vals[k->n++] = d;
  if (!whole_and_half && k->n > n) {   /* the depthwise template: where such a block exists, none (below) */
    k->n = n;
    return;
  }
  /* and, where none of those divides the channels (so no record holds an
   * added candidate of this knob and the added points are new), any block
   * of whole vectors and a part of one: ShuffleNet's 58, 116 and 232
   * channels (2·29) had blocks of at most 2 lanes of 16; in blocks of 58
   * three vectors and 10 lanes of a fourth are used */
  if (k->n == n)
    for (int64_t d = vec + 1; d <= x && d <= 64 && k->n < SPACE_MAX_CANDS; d++)
      if (x % d == 0 && d % 8) k->vals[k->n++] = d;
  k->added = k->n - n;
}

static void tiles(knob *k, int64_t limit) {
  static const int64_t c[] = {1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28};
  for (size_t i = 0; i < sizeof c / sizeof *c; i++)
    if (c[i] <= limit) k->vals[k->n++] = c[i];
}

static void choice(knob *k, int n) {
  for (int i = 0; i < n; i++) k->vals[k->n++] = i;
}

/* a template's points; base regions first (s->size counts them until
 * place_added puts the added points after all of them) */
static void finish(task_space *s, tmpl_space *t) {
  t->size = t->base = 1;
  for (int i = 0; i < t->n_knobs; i++) t->size *= t->knobs[i].n, t->base *= t->knobs[i].n - t->knobs[i].added;
  t->offset = s->size;
  s->size += t->base;
  s->n_tmpl++;
}

static void place_added(task_space *s) {
  for (int i = 0; i < s->n_tmpl; i++) {
    s->t[i].ext_offset = s->size;
    s->size += s->t[i].size - s->t[i].base;
  }
}

int64_t space_tmpl_point(const tmpl_space *t, int64_t i) { return i < t->base ? t->offset + i : t->ext_offset + (i - t->base); }

void space_caches(int64_t *l1d, int64_t *l2) { cg_host_caches(l1d, l2); }

void space_build(const conv_workload *w, int vec, task_space *s) { space_build_for(w, vec, 0, 0, s); }

void space_build_for(const conv_workload *w, int vec, int64_t l1d, int64_t l2, task_space *s) {
  memset(s, 0, sizeof *s);
  s->w = *w;
  s->vec = vec;
  /* AVX-512 has 32 vector registers: 28 accumulators leave room for the
   * weight vectors and a broadcast; AVX2 and SSE have 16 */
  s->regs = vec >= 16 ? REG_BUDGET : 12;
  space_caches(&s->l1d, &s->l2);
  if (l1d > 0) s->l1d = l1d;
  if (l2 > 0) s->l2 = l2;
  int64_t Cg = w->C / w->G, Kg = w->K / w->G, OH = workload_out(w, 2), OW = workload_out(w, 3);
  int depthwise = w->G == w->C && w->G == w->K && w->G > 1;
  int one = w->R == 1 && w->S == 1 && w->G == 1 && !w->pt && !w->pl && !w->pb && !w->pr;
  if (!depthwise) {
    tmpl_space *t = &s->t[s->n_tmpl];
    t->tmpl = TMPL_NCHWC;
    divisors(add_knob(t, K_IC_BN, KNOB_SPLIT), Cg, 64, 1);
    knob *ko = add_knob(t, K_OC_BN, KNOB_SPLIT);
    channel_blocks_tail(ko, Kg, vec, 1);
    /* groups narrower than a vector (Cg = Kg dividing it, ResNeXt's 4 and
     * 8): blocks of whole vectors spanning several groups
     * (config_spans_groups), added after records existed — only where the
     * knob had no added candidates, so no record's index moves */
    if (w->G > 1 && Cg == Kg && Kg < vec && vec % Kg == 0 && !ko->added) {
      int n = ko->n;
      for (int64_t d = vec; d <= w->K && d <= 64 && ko->n < SPACE_MAX_CANDS; d += vec)
        if (w->K % d == 0) ko->vals[ko->n++] = d;
      ko->added = ko->n - n;
    }
    tiles(add_knob(t, K_OW_BN, KNOB_SPLIT), OW);
    tiles(add_knob(t, K_OH_BN, KNOB_SPLIT), OH < 4 ? OH : 4);
    choice(add_knob(t, K_UNROLL_KW, KNOB_BOOL), 2);
    choice(add_knob(t, K_ORDER, KNOB_CHOICE), 2);   /* 0: ic-block outside the window; 1: window outside */
    choice(add_knob(t, K_PAR, KNOB_CHOICE), 2);     /* 0: (n, oc-block, oh) in parallel; 1: (n, oc-block) — rows
                                                       outer instead when conv_split_rows */
    finish(s, t);
  }
  if (one) {
    tmpl_space *t = &s->t[s->n_tmpl];
    t->tmpl = TMPL_1X1;
    divisors(add_knob(t, K_IC_BN, KNOB_SPLIT), w->C, 64, 1);
    channel_blocks_tail(add_knob(t, K_OC_BN, KNOB_SPLIT), w->K, vec, 1);
    tiles(add_knob(t, K_M_BN, KNOB_SPLIT), OH * OW);
    choice(add_knob(t, K_UNROLL_IC, KNOB_BOOL), 2);
    choice(add_knob(t, K_LOOP, KNOB_CHOICE), 2);    /* 0: oc-block outer (weights hot); 1: positions outer */
    finish(s, t);
  }
  if (winograd_applies(w)) {
    tmpl_space *t = &s->t[s->n_tmpl];
    t->tmpl = TMPL_WINOGRAD;
    knob *m = add_knob(t, K_TILE, KNOB_CHOICE);     /* the output tile m of F(m×m, 3×3) */
    if (w->sh == 1) m->vals[m->n++] = 2, m->vals[m->n++] = 4, m->vals[m->n++] = 6;
    else m->vals[m->n++] = 2, m->vals[m->n++] = 3, m->vals[m->n++] = 4;   /* stride 2: alpha 5, 7, 9 */
    divisors(add_knob(t, K_IC_BN, KNOB_SPLIT), w->C, 64, 1);
    channel_blocks(add_knob(t, K_OC_BN, KNOB_SPLIT), w->K, vec);
    tiles(add_knob(t, K_T_BN, KNOB_SPLIT), winograd_tiles(w, 2));   /* tiles per register block */
    choice(add_knob(t, K_PAR, KNOB_CHOICE), 2);     /* 0: (n, tile block) in parallel; 1: (n, tile block, oc-block) */
    choice(add_knob(t, K_STAGE, KNOB_CHOICE), 2);   /* 0: output transform after each oc-block; 1: after all */
    choice(add_knob(t, K_UNROLL_C, KNOB_BOOL), 2);
    /* output-channel groups, outermost in parallel (par=0 only): at two
     * threads each core then reads half the transformed weights (4.2 MB on
     * ResNet's 14×14 layers, where the tile split reads them twice) and the
     * work halves evenly even when the tile blocks do not (49 tiles) */
    knob *g = add_knob(t, K_OC_SPLIT, KNOB_CHOICE);
    g->vals[g->n++] = 1, g->vals[g->n++] = 2, g->vals[g->n++] = 4;
    g->appended = 1;
    /* register tiles per tile block: a block's tiles share one transformed
     * input and one pass over the weights, each register tile re-reading a
     * transformed weight row from L1 (64 KB at most) — fewer passes over
     * weights larger than L2 */
    knob *tb = add_knob(t, K_T_BLK, KNOB_CHOICE);
    tb->vals[tb->n++] = 1, tb->vals[tb->n++] = 2, tb->vals[tb->n++] = 4;
    tb->appended = 1;
    finish(s, t);
  }
  if (depthwise) {
    tmpl_space *t = &s->t[s->n_tmpl];
    t->tmpl = TMPL_DEPTHWISE;
    channel_blocks_tail(add_knob(t, K_C_BN, KNOB_SPLIT), w->C, vec, 0);
    tiles(add_knob(t, K_OW_BN, KNOB_SPLIT), OW);
    choice(add_knob(t, K_UNROLL_KW, KNOB_BOOL), 2);
    choice(add_knob(t, K_PAR, KNOB_CHOICE), 2);
    finish(s, t);
  }
  place_added(s);
}

const tmpl_space *space_tmpl(const task_space *s, conv_tmpl t) {
  for (int i = 0; i < s->n_tmpl; i++)
    if (s->t[i].tmpl == t) return &s->t[i];
  return NULL;
}

static int knob_pos(const knob *k, int64_t v) {
  for (int i = 0; i < k->n; i++)
    if (k->vals[i] == v) return i;
  return -1;
}

/* A template's base points are mixed-radix over the knobs' older
 * candidates; its added points (the one knob with added candidates taking
 * one of them) mixed-radix with that knob's digit over the added ones. */
static int is_added(const knob *k, int p) { return p >= k->n - k->added; }

int64_t space_index(const task_space *s, const sched_config *c) {
  const tmpl_space *t = space_tmpl(s, c->tmpl);
  if (!t) return -1;
  int p[SPACE_MAX_KNOBS], added = 0;
  for (int i = 0; i < t->n_knobs; i++) {
    if ((p[i] = knob_pos(&t->knobs[i], c->v[i])) < 0) return -1;
    added |= is_added(&t->knobs[i], p[i]);
  }
  int64_t idx = 0, radix = 1;
  for (int i = 0; i < t->n_knobs; i++) {
    const knob *k = &t->knobs[i];
    int64_t digit = p[i], n = k->n - k->added;
    if (added && k->added) digit -= n, n = k->added;
    idx += digit * radix;
    radix *= n;
  }
  return (added ? t->ext_offset : t->offset) + idx;
}

int space_config(const task_space *s, int64_t index, sched_config *c) {
  if (index < 0 || index >= s->size) return -1;
  for (int k = 0; k < s->n_tmpl; k++) {
    const tmpl_space *t = &s->t[k];
    int added = index >= t->ext_offset && index < t->ext_offset + t->size - t->base;
    if (!added && !(index >= t->offset && index < t->offset + t->base)) continue;
    int64_t r = index - (added ? t->ext_offset : t->offset);
    memset(c, 0, sizeof *c);
    c->tmpl = t->tmpl;
    for (int i = 0; i < t->n_knobs; i++) {
      const knob *kn = &t->knobs[i];
      int64_t n = kn->n - kn->added, first = 0;
      if (added && kn->added) first = n, n = kn->added;
      c->v[i] = kn->vals[first + r % n];
      r /= n;
    }
    return 0;
  }
  return -1;
}

int64_t cfg_get(const task_space *s, const sched_config *c, knob_id k) {
  const tmpl_space *t = space_tmpl(s, c->tmpl);
  for (int i = 0; t && i < t->n_knobs; i++)
    if (t->knobs[i].id == k) return c->v[i];
  return -1;
}

static int64_t lanes_of(int64_t bn, int vec) { return bn < vec ? bn : vec; }
/* vectors of a channel block: the last one partly filled where vec does not divide it (24 = 16 + 8) */
static int64_t vectors_of(int64_t bn, int vec) { return (bn + lanes_of(bn, vec) - 1) / lanes_of(bn, vec); }

/* the register tile fits: accumulators <= s->regs */
int space_valid(const task_space *s, const sched_config *c) {
  if (space_index(s, c) < 0) return 0;
  int vec = s->vec, regs = s->regs ? s->regs : REG_BUDGET;
  switch (c->tmpl) {
  case TMPL_NCHWC: {
    int64_t ob = cfg_get(s, c, K_OC_BN);
    if (config_spans_groups(s, c) && cfg_get(s, c, K_IC_BN) != s->w.C / s->w.G) return 0;   /* a group's inputs at once */
    return vectors_of(ob, vec) * cfg_get(s, c, K_OW_BN) * cfg_get(s, c, K_OH_BN) <= regs;
  }
  case TMPL_1X1: {
    int64_t ob = cfg_get(s, c, K_OC_BN);
    return vectors_of(ob, vec) * cfg_get(s, c, K_M_BN) <= regs;
  }
  case TMPL_DEPTHWISE: {
    int64_t cb = cfg_get(s, c, K_C_BN);
    return vectors_of(cb, vec) * cfg_get(s, c, K_OW_BN) <= regs;
  }
  case TMPL_WINOGRAD: {
    int64_t ob = cfg_get(s, c, K_OC_BN), m = cfg_get(s, c, K_TILE), tb = cfg_get(s, c, K_T_BN), tiles = winograd_tiles(&s->w, m);
    if (vectors_of(ob, vec) * tb > regs || tb > tiles) return 0;
    if (tb * (cfg_get(s, c, K_T_BLK) - 1) >= tiles) return 0;   /* a register tile of the block with no tile */
    if (cfg_get(s, c, K_PAR) == 1 && cfg_get(s, c, K_STAGE) == 1) return 0;   /* one oc-block per task: stage is moot */
    int64_t split = cfg_get(s, c, K_OC_SPLIT);
    if (split > 1 && (cfg_get(s, c, K_PAR) != 0 || (s->w.K / ob) % split)) return 0;
    int64_t v, m2;
    winograd_scratch(s, c, &v, &m2);
    return 4 * (v + m2) <= LF_MAX_LOCAL_BYTES;
  }
  case TMPL_COUNT: break;
  }
  return 0;
}

int winograd_applies(const conv_workload *w) {
  return w->R == 3 && w->S == 3 && w->sh == w->sw && (w->sh == 1 || w->sh == 2) && w->dh == 1 && w->dw == 1 && w->G == 1;
}

int64_t winograd_tiles(const conv_workload *w, int64_t m) {
  return ((workload_out(w, 2) + m - 1) / m) * ((workload_out(w, 3) + m - 1) / m);
}

int64_t winograd_block(const task_space *s, const sched_config *c) {
  int64_t tb = cfg_get(s, c, K_T_BN) * cfg_get(s, c, K_T_BLK), tiles = winograd_tiles(&s->w, cfg_get(s, c, K_TILE));
  return tb < tiles ? tb : tiles;
}

void winograd_scratch(const task_space *s, const sched_config *c, int64_t *v_floats, int64_t *m_floats) {
  const conv_workload *w = &s->w;
  int64_t m = cfg_get(s, c, K_TILE), ob = cfg_get(s, c, K_OC_BN), al = winograd_alpha((int)m, (int)w->sh), a2 = al * al;
  int64_t tiles = winograd_tiles(w, m), tb = winograd_block(s, c);
  if (tb > tiles) tb = tiles;
  /* M holds every oc-block of the task when they are all multiplied first */
  int64_t blocks = cfg_get(s, c, K_PAR) == 0 && cfg_get(s, c, K_STAGE) ? w->K / ob / cfg_get(s, c, K_OC_SPLIT) : 1;
  *v_floats = a2 * w->C * tb;
  *m_floats = a2 * tb * ob * blocks;
}

/* the candidate of knob `name` closest to `want` from below (or the smallest) */
static void set_knob(const tmpl_space *t, sched_config *c, knob_id k, int64_t want) {
  for (int i = 0; i < t->n_knobs; i++) {
    if (t->knobs[i].id != k) continue;
    /* the largest candidate ≤ want, else the smallest (added candidates
     * come last, not always in order) */
    const knob *kn = &t->knobs[i];
    int64_t best = -1, least = kn->vals[0];
    for (int j = 0; j < kn->n; j++) {
      if (kn->vals[j] <= want && kn->vals[j] > best) best = kn->vals[j];
      if (kn->vals[j] < least) least = kn->vals[j];
    }
    c->v[i] = best >= 0 ? best : least;
  }
}

/* a register tile for `extent` columns with at most `cap` of them: a divisor
 * of the extent if one is at least half the cap, else the cap itself */
static int64_t pick_tile(int64_t extent, int64_t cap) {
  if (extent <= cap) return extent;
  for (int64_t t = cap; t >= (cap + 1) / 2; t--)
    if (extent % t == 0) return t;
  return cap;
}

/* the candidates of knob k of t, as a list */
static const knob *knob_of(const tmpl_space *t, knob_id k) {
  for (int i = 0; i < t->n_knobs; i++)
    if (t->knobs[i].id == k) return &t->knobs[i];
  return NULL;
}

/* the smallest candidate v of knob k of t, at most max, with v·each ≥ need
 * (how many register tiles, or tiles per register tile, cover a block);
 * the largest at most max where none does */
static int64_t fewest_covering(const tmpl_space *t, knob_id k, int64_t each, int64_t need, int64_t max) {
  const knob *kn = knob_of(t, k);
  int64_t best = kn->vals[0];
  for (int j = 0; j < kn->n && kn->vals[j] <= max; j++) {
    best = kn->vals[j];
    if (best * each >= need) break;
  }
  return best;
}

/* The cost model of the default direct configs, in cycles of one core.
 * Compute: a register tile of nv accumulator vectors (output channels) by p
 * positions loads nv weight vectors and p broadcasts per reduction step for
 * nv·p FMAs. A core with two FMA units and two load units (every AVX-512
 * core temper targets) runs an FMA whose broadcast comes from memory at 86 %
 * of its register speed (bench/peak: 183 of 213 GFLOP/s on Sapphire
 * Rapids), and whole kernels lose more: the old default (one vector by 28
 * positions, 1.04 loads per FMA) ran 1×1 layers at 0.6–0.7× oneDNN, four
 * vectors by 7 (0.39 loads per FMA) at 0.9–1.0× (bench/RESULTS.md). So an
 * FMA costs (1 + loads per FMA) / 2 cycles, and a tile that overhangs the
 * output computes its overhang for nothing. Traffic: whatever a loop
 * re-reads that does not stay in half of L2 comes again from L3 at about 16
 * bytes per cycle (measured: ResNet-50's s4_3x3_256_s2 lost 0.4 ms reading
 * its 2.4 MB of weights once per row, 33 MB). */
typedef struct tile_cost {
  double fma_vecs;
  double l2_half;
  double l1;
  double l2_weight_load;   /* a weight vector streamed from L2, in loads (below) */
} tile_cost;
/* Latency: each accumulator is a chain of dependent FMAs (4 cycles each),
 * so two FMA units need 8 chains in flight and run short of them, with the
 * loads that feed them, below about 10. Only AVX2's 16 registers leave so
 * few: four vectors by two positions (8 accumulators) ran ResNet-50's
 * deep 1×1 layers at 44–49 GFLOP/s where two vectors by six ran them at
 * 72–95, on a Zen 3 core of 100 (bench/RESULTS.md, 2026-12-06). */
enum { FMA_CHAINS = 10 };
/* Where the weights a register tile reduces over (one output-channel
 * block's: wblock bytes) do not fit L1, every tile streams them from L2
 * as whole vectors, while its broadcasts come from L1. On an Intel core
 * with 2 MB of L2 (Sapphire Rapids class, 238 GFLOP/s) such a weight
 * vector costs about three broadcasts: two vectors by 14 positions ran
 * ResNet-50's 1×1 layers of stages 3–5 and its 3×3 stride-2 layers 5–18 %
 * faster than the four by six (or by 2 × 2) the load count alone picked,
 * as oneDNN's brgconv blocks them (bench/RESULTS.md, 2026-12-07); stage 2's
 * 1×1 layers, whose 16 KB blocks stay in L1, did not gain, nor the 7×7
 * stem (38 KB blocks: 1.04× slower counted as streamed). Elsewhere (Zen
 * 5's 1 MB L2, Zen 3) not measured: a weight vector counts as one load. */
static double weight_load(const tile_cost *tc, double wblock) { return wblock > tc->l1 ? tc->l2_weight_load : 1.0; }
static double tile_cycles(const tile_cost *tc, int64_t nv, int64_t p, double waste, double traffic_bytes, double wl) {
  double acc = (double)(nv * p), short_of_chains = acc < FMA_CHAINS ? FMA_CHAINS / acc : 1.0;
  return tc->fma_vecs * 0.5 * (1.0 + ((double)nv * wl + (double)p) / (double)(nv * p)) * short_of_chains * waste + traffic_bytes / 16.0;
}
/* blocks narrower than a vector, or ending in part of one, use part of their FMAs */
static double lane_waste(int64_t ob, int vec) { return (double)(vectors_of(ob, vec) * vec) / (double)ob; }
/* bytes read when `bytes` are read `passes` times: once if they stay in half of L2 */
static double reread(const tile_cost *tc, double bytes, int64_t passes) { return bytes > tc->l2_half ? bytes * (double)passes : bytes; }

static double overhang(int64_t extent, int64_t tile) { return (double)((extent + tile - 1) / tile * tile) / (double)extent; }

/* the largest candidate of knob k that divides x and is at most cap (the smallest if none) */
static int64_t largest_dividing(const knob *k, int64_t x, int64_t cap) {
  int64_t best = k->vals[0];
  for (int j = 0; j < k->n; j++)
    if (k->vals[j] <= cap && x % k->vals[j] == 0) best = k->vals[j];
  return best;
}

/* the vector register file: AVX-512's 32, AVX2's and SSE's 16 */
static int64_t vector_registers(const task_space *s) { return s->vec >= 16 ? 32 : 16; }

/* accumulators a default register tile of nv vectors takes: the rest of
 * the vector registers hold the nv weight vectors and the broadcast (four
 * vectors by 7 positions, 28 accumulators, spilled: 4 % slower than by 6 on
 * s4_1x1_1024_256, five runs each) */
static int64_t acc_cap(const task_space *s, int64_t nv) {
  int64_t cap = vector_registers(s) - nv - 1;
  return cap < s->regs ? cap : s->regs;
}

static tile_cost cost_of(const task_space *s) {
  return (tile_cost){workload_flops(&s->w) / 2.0 / (double)s->vec, (double)s->l2 / 2.0, (double)s->l1d,
                     s->vec >= 16 && s->l2 >= (2 << 20) ? 3.0 : 1.0};
}

/* NCHWc direct: output channels in up to 4 vectors, rows × columns of the
 * register tile, chosen together by tile_cycles. Split over rows, a task
 * reads all the weights per row tile; over channels, all the input per
 * channel block. Input channel blocks of one vector, fewer where the
 * weights of one block (R·S·ib·ob floats, read for every tile) and the
 * tile's input window would not fit half of L1. */
static void default_nchwc(const task_space *s, const tmpl_space *t, sched_config *c) {
  const conv_workload *w = &s->w;
  int64_t OH = workload_out(w, 2), OW = workload_out(w, 3);
  const knob *ko = knob_of(t, K_OC_BN), *kw = knob_of(t, K_OW_BN), *kh = knob_of(t, K_OH_BN), *ki = knob_of(t, K_IC_BN);
  if (w->G > 1 && w->K / w->G < s->vec && knob_pos(ko, s->vec) >= 0) {
    /* groups narrower than a vector: one vector spanning vec/Kg groups
     * (config_spans_groups), a tile of 3 rows × 2 columns. Each FMA takes
     * its own input vector (a load and a lane splat, shared only by the s
     * of a window column), so the tile buys no reuse of broadcasts, and
     * the measured optimum is small: ResNeXt-50's 3×3 layers on Zen 5 ran
     * 172–188 / 136–144 / 125–130 GFLOP/s (4-channel groups at 56×56,
     * 8-channel at 28×28, 8-channel stride 2) in tiles of 6–12
     * accumulators, against 49 / 88–100 / 77 in blocks of one group
     * (bench/RESULTS.md, "Groups narrower than a vector") */
    set_knob(t, c, K_OC_BN, s->vec);
    set_knob(t, c, K_IC_BN, w->C / w->G);
    set_knob(t, c, K_OW_BN, 2);
    set_knob(t, c, K_OH_BN, 3);
    set_knob(t, c, K_UNROLL_KW, w->S <= 3);
    return;
  }
  tile_cost tc = cost_of(s);
  double wbytes = 4.0 * (double)w->K * (double)(w->C / w->G) * (double)(w->R * w->S), xbytes = 4.0 * (double)(w->N * w->C * w->H * w->W);
  int rows = conv_split_rows(s);
  double best = 1e300;
  int64_t b_ob = ko->vals[0], b_ow = 1, b_oh = 1;
  for (int i = 0; i < ko->n; i++) {
    int64_t ob = ko->vals[i], nv = vectors_of(ob, s->vec);
    if (nv > 4 || acc_cap(s, nv) < nv) continue;
    for (int j = 0; j < kw->n; j++)
      for (int h = 0; h < kh->n; h++) {
        int64_t ow = kw->vals[j], oh = kh->vals[h];
        if (ow * oh * nv > acc_cap(s, nv)) continue;
        double traffic = rows ? reread(&tc, wbytes, (OH + oh - 1) / oh) : reread(&tc, xbytes, w->K / ob);
        double cy = tile_cycles(&tc, nv, ow * oh, overhang(OW, ow) * overhang(OH, oh) * lane_waste(ob, s->vec), traffic,
                                weight_load(&tc, wbytes / (double)w->K * (double)ob));
        if (cy < best * (1 - 1e-9)) best = cy, b_ob = ob, b_ow = ow, b_oh = oh;
      }
  }
  set_knob(t, c, K_OC_BN, b_ob);
  set_knob(t, c, K_OW_BN, b_ow);
  set_knob(t, c, K_OH_BN, b_oh);
  int64_t Cg = w->C / w->G, ib = largest_dividing(ki, Cg, s->vec);
  for (;;) {
    int64_t wb = 4 * w->R * w->S * ib * b_ob;
    int64_t xb = 4 * ib * ((b_oh - 1) * w->sh + (w->R - 1) * w->dh + 1) * ((b_ow - 1) * w->sw + (w->S - 1) * w->dw + 1);
    int64_t smaller = largest_dividing(ki, Cg, ib - 1);
    if (wb + xb <= s->l1d / 2 || smaller >= ib) break;
    ib = smaller;
  }
  set_knob(t, c, K_IC_BN, ib);
  set_knob(t, c, K_UNROLL_KW, w->S <= 3);
  /* Split over channels with weights past twice L2 that few register tiles
   * re-read per block: the kernel-position loops outside the input-channel
   * blocks (order 1). In a whole network such weights come from memory as
   * each block starts, and this order reads a block as one short run per
   * input-channel block — many streams at once — where order 0 reads it as
   * one long one. ResNet-50's s5_3x3_512_s2 (9.4 MB, 7 tiles per 32-channel
   * block) took 0.88× as long in the model at one thread and 0.87× at two
   * on an Emerald Rapids-class core, 0.85–0.90× at one on Zen 5 (unchanged
   * at two), alone 1.02–1.04× (bench/RESULTS.md, 2026-12-05 and -06);
   * s4_3x3_256_s2 (2.4 MB, 49 tiles per block) gained nothing (0.98×). */
  int64_t tiles = ((OH + b_oh - 1) / b_oh) * ((OW + b_ow - 1) / b_ow);
  if (!rows && wbytes > 2.0 * (double)s->l2 && tiles <= 8) set_knob(t, c, K_ORDER, 1);
}

/* 1×1: the same register tile over flattened positions, and the loop order
 * that re-reads less: positions outer reads all the weights per position
 * tile, output-channel blocks outer all the input per block */
static void default_1x1(const task_space *s, const tmpl_space *t, sched_config *c) {
  const conv_workload *w = &s->w;
  int64_t M = workload_out(w, 2) * workload_out(w, 3);
  const knob *ko = knob_of(t, K_OC_BN), *km = knob_of(t, K_M_BN);
  tile_cost tc = cost_of(s);
  double wbytes = 4.0 * (double)w->K * (double)w->C, xbytes = 4.0 * (double)(w->N * w->C * w->H * w->W);
  double best = 1e300;
  int64_t b_ob = ko->vals[0], b_m = 1, b_loop = 0;
  for (int i = 0; i < ko->n; i++) {
    int64_t ob = ko->vals[i], nv = vectors_of(ob, s->vec);
    if (nv > 4 || acc_cap(s, nv) < nv) continue;
    /* one vector of 8 channels: a broadcast from memory per FMA, which a
     * Zen 3 core runs at 74 % of its register speed (bench/peak); 8 × 10
     * ran ResNet-50's deep 1×1 layers at 0.57–0.77× oneDNN where 16 × 5
     * ran them at 0.67–1.00× (5 of 6 pairs), in spite of twice the passes
     * over the weights. Where two vectors fit the channels, not one. */
    if (s->vec < 16 && nv == 1 && w->K >= 2 * s->vec) continue;
    for (int j = 0; j < km->n; j++)
      for (int loop = 0; loop < 2; loop++) {
        int64_t m = km->vals[j];
        if (m * nv > acc_cap(s, nv)) continue;
        /* output-channel blocks outer re-read the input as gathers (each
         * tile takes m positions' ib channels from every one of C / ib
         * planes), positions outer the weights as one stream that the
         * runtime prefetches: with 8-float vectors a gathered byte is
         * charged as 4. On Zen 3 (AVX2: blocks of 16 channels, K / 16
         * passes over the input) positions outer ran ResNet-50's deep 1×1
         * layers at 0.76–1.07× oneDNN and channels outer at 0.60–0.82×
         * (18 of 18 pairs). With AVX-512 (blocks of 64, a quarter of the
         * passes) the same charge would move 5 of ResNet-50's and
         * MobileNetV2's defaults that were measured as they are: kept
         * until measured there. */
        double gather = s->vec < 16 ? 4 : 1;
        double traffic = loop ? reread(&tc, wbytes, (M + m - 1) / m) : gather * reread(&tc, xbytes, w->K / ob);
        /* narrower outputs (under 256 channels) keep their blocks: they
         * feed residual adds and depthwise layers fitted with them
         * (MobileNetV2's 64- and 96-channel projections in blocks of 32
         * took 3 layout transforms more, 1.004× as a whole) */
        double wl = weight_load(&tc, w->K < 256 ? 0 : 4.0 * (double)w->C * (double)ob);
        double cy = tile_cycles(&tc, nv, m, overhang(M, m) * lane_waste(ob, s->vec), traffic, wl);
        if (cy < best * (1 - 1e-9)) best = cy, b_ob = ob, b_m = m, b_loop = loop;
      }
  }
  set_knob(t, c, K_OC_BN, b_ob);
  set_knob(t, c, K_M_BN, b_m);
  set_knob(t, c, K_IC_BN, s->vec);
  /* the ic loop stays a loop: unrolled, 24 accumulators spill (ResNet-50's
   * 1×1 layers 2–25 % slower, worst with positions outer) */
  set_knob(t, c, K_UNROLL_IC, 0);
  set_knob(t, c, K_LOOP, b_loop);
}

void config_default(const task_space *s, sched_config *c) { config_default_at(s, -1, 1, c); }
void config_default_direct(const task_space *s, sched_config *c, int allow_winograd) { config_default_at(s, -1, allow_winograd, c); }

/* Winograd where output-channel groups would not fit L2: instead one tile
 * block of all the tiles (register tiles of about equal size, at most tb
 * tiles each), so that the transformed weights stream from memory once,
 * and two groups, so that two threads each stream half of them — where
 * the block's transformed input fits L2 and the weights (wt floats) are at
 * least four times it, so that reading them once is worth the block's
 * hold on L2 (any_l2: whatever that hold, for stride 2, below). Keeps c
 * and returns 1 if it applies; else leaves c as it was. ResNet-50's 14×14
 * layers on Zen 5 (1 MB L2; 4.2 MB of weights, 800 KB of transformed
 * input): in the model, against one group of 14-tile blocks, 0.89–0.90×
 * at one thread and 0.69–0.78× at two (bench/RESULTS.md).
 * With an odd number of oc-blocks there are no two groups, and one block
 * in one group is one task — the layer on one thread: then two blocks of
 * half the tiles each, one group, reading the weights twice. GoogLeNet's
 * 14×14 layers of 208, 224 and 288 channels (13, 7, 9 blocks) on Zen 5, in
 * the model: 0.64–0.69× the one block's time at two threads, 1.01–1.07× at
 * one (14-tile blocks: 0.65–0.73×, 1.05–1.17×; bench/RESULTS.md). */
static int few_tile_blocks(const task_space *s, const tmpl_space *t, sched_config *c, int64_t tiles, int64_t tb, int64_t wt, int any_l2) {
  sched_config was = *c;
  int64_t ob = cfg_get(s, c, K_OC_BN), v, m2;
  int odd = (s->w.K / ob) % 2 != 0;
  int64_t per = odd ? (tiles + 1) / 2 : tiles;   /* the tiles a block covers */
  set_knob(t, c, K_T_BLK, (per + tb - 1) / tb);
  int64_t r = cfg_get(s, c, K_T_BLK);
  set_knob(t, c, K_T_BN, fewest_covering(t, K_T_BN, r, per, tb));
  set_knob(t, c, K_STAGE, 0);
  set_knob(t, c, K_OC_SPLIT, odd ? 1 : 2);
  winograd_scratch(s, c, &v, &m2);
  int l2_ok = any_l2 || (4 * v <= s->l2 && (wt >= 4 * v || 8 * v <= s->l2));
  int64_t blk = cfg_get(s, c, K_T_BN) * r;
  int shape_ok = odd ? blk < tiles && 2 * blk >= tiles : r > 1 && blk >= tiles;
  if (shape_ok && l2_ok && space_valid(s, c)) return 1;
  *c = was;
  return 0;
}

void config_default_at(const task_space *s, int64_t in_blk, int allow_winograd, sched_config *c) {
  const conv_workload *w = &s->w;
  int vec = s->vec;
  const tmpl_space *t = space_tmpl(s, TMPL_DEPTHWISE);
  if (!t) t = space_tmpl(s, TMPL_1X1);
  /* wide layers: Winograd where the transformed input of one tile block
   * fits L2, or twice L2 past 16 tiles a block (below) */
  int wide = w->sh == 1 && w->C * w->K > 256 * 256;
  /* the tile: stride 1, 4 up to C·K = 128², 2 beyond (below, and 4 again
   * on larger images); stride 2,
   * 2 (alpha 5: 25 points, 1.44× fewer multiplications than direct, its
   * transformed weights 25/9 of the direct ones), where each transformed
   * weight meets at least 32 tiles. ResNet-50's 3×3 stride-2 layers on Zen
   * 5, best Winograd against best direct alone (bench/conv2d --winograd):
   * 56×56×128 1.37× (tile 4: alpha 9, 81 points, 1.78× fewer), 28×28×256
   * 1.37× (tile 2), 14×14×512 (16 tiles, 26 MB of weights for 16 uses each)
   * 0.79×. In the model (weights from memory, 5.3 MB at tile 4) the
   * 56×56×128 layer took 0.90 ms in sequence at tile 2, 1.04 at 3, 1.07 at
   * 4, 1.21 direct (bench/RESULTS.md). On an Ice Lake-class Xeon (1.25
   * MB L2) the same two defaults ran in the model 0.97 / 0.87× (56×56)
   * and 1.17 / 1.16× (28×28) the direct default's time at one / two
   * threads: not taken there. On a 2 MB L2 (the other Intel kinds, whose
   * direct defaults for these layers were fitted there) and with AVX2 the
   * direct default stays until measured; the space has the template
   * everywhere */
  int64_t m = w->sh == 2 ? 2 : w->C * w->K <= 128 * 128 ? 4 : 2;
  /* up to 256² on larger images, where tile 4 makes at least 49 tiles (a
   * 28×28 image), tile 4: its transformed weights (4× the direct ones) are
   * read for many tiles, and it multiplies 1.8× less than tile 2. VGG-16's
   * 56×56 layers of 128 → 256 and 256 channels in the model on Zen 5:
   * 0.56–0.65× the tile-2 time at one thread, 0.64–0.73× at two; a chain of
   * 28×28 × 256 ones 0.83–0.86× / 0.75–0.83×. ResNet's 14×14 layers of 256
   * (16 tiles) keep tile 2 (bench/RESULTS.md, "Wide layers on larger
   * images") */
  if (m == 2 && w->sh == 1 && w->C * w->K <= 256 * 256 && winograd_tiles(w, 4) >= 49) m = 4;
  /* small layers on small images: where tile 4 makes at most 16 tiles
   * (a 14×14 image in 4×4 tiles computes 16×16, and the 16 tiles are two
   * blocks of 14 and 2 — one thread's work at two threads) and C·K is at
   * most 64², tile 2 (49 tiles, none wasted, four blocks). DenseNet-121's
   * 24 layers of 128→32 at 14×14, in the model: 0.93–1.02× their time at
   * one thread and 0.54–0.61× at two on Zen 5, about 0.81× and 0.77× on
   * an Ice Lake-class Xeon (1.25 MB L2); GoogLeNet's five 16–32→48–128
   * layers likewise. Not SqueezeNet's 48–64→192–256 expand layers at 13×13,
   * where tile 4's oc-blocks are shared between the threads (1.14–1.25×
   * slower at two threads at tile 2 on Zen 5; bench/RESULTS.md, "Small
   * 3×3 layers at tile 2"). AVX-512 only: AVX2's register tiles of 6
   * tiles make three blocks of 16, and it is not measured there */
  if (m == 4 && vec >= 16 && winograd_tiles(w, 4) <= 16 && w->C * w->K <= 64 * 64) m = 2;
  int stride2 = w->sh == 2 && vec >= 16 && s->l2 <= 1 << 20 && w->C * w->K <= 256 * 256 && winograd_tiles(w, m) >= 32;
  if (!t && allow_winograd && w->C >= vec && w->K >= vec &&
      ((w->sh == 1 && ((w->C * w->K <= 256 * 256 && workload_out(w, 2) * workload_out(w, 3) >= 64) || wide)) || stride2))
    t = space_tmpl(s, TMPL_WINOGRAD);
  if (!t) t = &s->t[0];
  memset(c, 0, sizeof *c);
  c->tmpl = t->tmpl;
  for (int i = 0; i < t->n_knobs; i++) c->v[i] = t->knobs[i].vals[0];
  int64_t OW = workload_out(w, 3);
  if (t->tmpl == TMPL_WINOGRAD) {
    /* Winograd for 3×3 stride-1 layers up to C·K = 256² with at least 8×8
     * outputs: tile 4 up to 128² (ResNet's 56×56 and 28×28 layers) and on
     * images of 28×28 or more, tile 2 beyond (14×14: its transformed
     * weights, 16/9 of the direct ones, come from memory in a whole
     * network; tile 4's are 4×). Wider layers: tile blocks of up to 4 × 14
     * tiles where a block's input fits L2 (twice past 16 tiles; below), else
     * direct. The
     * blocks and register tile are what tuning ResNet-50 found
     * best on all four 3×3 layers at one and two threads (bench/RESULTS.md):
     * output channels in two vectors, 14 tiles per register block, input
     * blocks of half a vector for wide layers; all oc-blocks multiplied
     * before one output-transform pass (stage 1) where the scratch allows.
     * Input and output blocks then differ, and chained layers need a
     * layout transform (~0.02 ms): input blocks equal to the output's (32)
     * measured 2–7 % slower on whole untuned ResNets than these blocks with
     * the transforms. The layout pass falls back to direct for weights that
     * are not constants. */
    set_knob(t, c, K_TILE, m);
    if (wide) {
      /* Wider than 256² (ResNet's 7×7 layers of 512 channels, 16 tiles of
       * F(2×2, 3×3)), where a direct convolution read 9.4 MB of weights
       * and Winograd reads 16 MB, from memory in a whole network: one tile
       * block of all the tiles in register tiles of about equal size (8 +
       * 8; with AVX2's 6-tile register tiles, 4 × 4: the knob has no 3),
       * so that the weights are read once, and two output-channel
       * groups for two threads. Stage 0 keeps M to one oc-block. ResNet-50
       * on Zen 5: 0.95× at one thread, 0.99× at two (bench/RESULTS.md);
       * 1.0–1.3 ms per layer in sequence against 1.3–1.6 direct. The
       * block's transformed input may fill L2: on Zen 3 (512 KB L2, the
       * input 512 KB) 1.5 ms in sequence at two threads against 2.6 direct.
       * Larger images make larger blocks (up to t_blocks 4 of 14 tiles), the
       * weights read once per block, and a block of more than 16 tiles may
       * have its transformed input pass L2 up to twice (a 16-tile block,
       * whose weights weigh more per tile, keeps the bound of L2 it was
       * measured at): on Zen 5 (1 MB) wide_resnet50_2's 14×14 layers
       * of 512 channels (49 tiles, 1.6 MB) ran 0.43× / 0.42× the direct
       * default's time in the model at one / two threads, VGG-16's 28×28
       * ones (4 blocks of 56 tiles, 1.8 MB) 0.47× / 0.46×, AlexNet's 13×13
       * 384 → 256 0.63× / 0.65× (bench/RESULTS.md, "Wide layers on larger
       * images") */
      int64_t tiles = winograd_tiles(w, 2), ob, nv, tbmax, r, per;
      set_knob(t, c, K_IC_BN, vec);
      set_knob(t, c, K_OC_BN, w->K % (2 * vec) == 0 ? 2 * vec : vec);
      ob = cfg_get(s, c, K_OC_BN), nv = vectors_of(ob, vec);
      tbmax = s->regs / nv < 14 ? s->regs / nv : 14;
      int odd = (w->K / ob) % 2 != 0;   /* no two groups: two blocks of half the tiles (few_tile_blocks) */
      per = odd && tiles > 1 ? (tiles + 1) / 2 : tiles;
      r = (per + tbmax - 1) / tbmax;
      set_knob(t, c, K_T_BLK, fewest_covering(t, K_T_BLK, 1, r, INT64_MAX));
      r = cfg_get(s, c, K_T_BLK);
      set_knob(t, c, K_T_BN, fewest_covering(t, K_T_BN, r, per, tbmax));
      set_knob(t, c, K_PAR, 0);
      set_knob(t, c, K_STAGE, 0);
      set_knob(t, c, K_UNROLL_C, 0);
      set_knob(t, c, K_OC_SPLIT, odd ? 1 : 2);
      int64_t v, m2;   /* the block's transformed input: within twice L2 past 16 tiles a block, else L2 (above) */
      winograd_scratch(s, c, &v, &m2);
      if (4 * v <= (winograd_block(s, c) > 16 ? 2 : 1) * s->l2 && space_valid(s, c)) return;
      goto direct;
    }
    set_knob(t, c, K_IC_BN, w->C >= 128 && w->C % (vec / 2) == 0 ? vec / 2 : vec);
    set_knob(t, c, K_OC_BN, w->K % (2 * vec) == 0 ? 2 * vec : vec);
    int64_t ob = cfg_get(s, c, K_OC_BN), tiles = winograd_tiles(w, m), tb = s->regs / vectors_of(ob, vec);
    if (tb > 14) tb = 14;
    set_knob(t, c, K_T_BN, tb < tiles ? tb : tiles);
    set_knob(t, c, K_PAR, 0);
    set_knob(t, c, K_STAGE, 1);
    set_knob(t, c, K_UNROLL_C, 0);
    /* every tile block reads all the transformed weights ((m+2)²·C·K
     * floats) besides its own transformed input and products. Where that
     * working set passes L2, output-channel groups outermost, each reading
     * its part of the weights for every tile block: doubling while a group's
     * weights pass half of L2, up to four (ResNet-50's 14×14 layers on a
     * 2 MB L2, 4.2 MB of weights: 1.6 ms in the model against 0.77 alone
     * with one group, 1.2 with four). But where a group's working set still
     * passes 3/4 of L2, none: the groups would only re-read the input. On
     * Zen 5's 1 MB L2 the 28×28 and 14×14 layers ran 0.2 ms each slower in
     * the model with four groups, the 56×56 ones (848 KB) 0.02 ms with two.
     * Where the transformed input of all the tiles fits L2 and the
     * weights are four times it or more, or it fits half of L2, one block
     * of all the tiles in two groups (few_tile_blocks), before any
     * groups: on Zen 5's 1 MB L2 the 14×14 layers, not the 28×28 ones (2.6
     * times, 882 KB: 1.19× slower at one thread so). On an Emerald
     * Rapids-class core (2 MB L2), where the four groups fit, the one block
     * still ran the 14×14 layers 0.75–0.79× as long in the model as four
     * groups at one thread and 0.74–0.78× at two, and the 28×28 ones, whose
     * input fits half of that L2, 0.76–0.80× and 0.78× (bench/RESULTS.md,
     * 2026-12-06) */
    int64_t al = winograd_alpha((int)m, (int)w->sh), wt = al * al * w->C * w->K, split = 1, v, m2;
    set_knob(t, c, K_OC_SPLIT, 1);
    winograd_scratch(s, c, &v, &m2);
    if (w->sh == 2) {
      /* stride 2: a group transforms its blocks' input again, 25 points
       * from 25 inputs per tile (stride 1 at tile 4: 36 from 36 for 16
       * outputs, not 4): no groups, but two where fewer than 8 tile blocks
       * cannot keep two threads even. ResNet-50's 56×56×128 layer (14
       * blocks) in the model, Zen 5: 0.91 / 0.49 ms at one / two threads
       * with one group against 1.09 / 0.60 with the groups below; the
       * 28×28×256 one (4 blocks, the last of 7 tiles) 0.58 ms at two threads
       * with two groups against 0.66, 1.02–1.06 at one either way */
      int64_t blocks = (tiles + tb - 1) / tb;
      split = blocks < 8 && (w->K / ob) % 2 == 0 ? 2 : 1;
      /* and there one block of all the tiles (up to 4 register tiles),
       * reading the weights once: what refine kept for the 28×28×256
       * layer at one thread (−0.61 % of the model, 31 of 40 pairs) and
       * the best of the sweep at two */
      if (blocks < 8 && few_tile_blocks(s, t, c, tiles, tb, wt, 1)) return;
    } else if (tiles > tb && 4 * (wt + v + m2) > s->l2) {
      if (few_tile_blocks(s, t, c, tiles, tb, wt, 0)) return;
      while (split < 4 && 4 * wt / split > s->l2 / 2 && (w->K / ob) % (split * 2) == 0) split *= 2;
      set_knob(t, c, K_OC_SPLIT, split);
      winograd_scratch(s, c, &v, &m2);
      if (4 * (wt / split + v + m2) > s->l2 / 4 * 3) split = 1;
    }
    set_knob(t, c, K_OC_SPLIT, split);
    if (!space_valid(s, c)) set_knob(t, c, K_STAGE, 0);
    if (space_valid(s, c)) return;
  direct:
    t = &s->t[0];   /* not valid (scratch too large): the direct default */
    memset(c, 0, sizeof *c);
    c->tmpl = t->tmpl;
    for (int i = 0; i < t->n_knobs; i++) c->v[i] = t->knobs[i].vals[0];
  }
  if (t->tmpl == TMPL_NCHWC || t->tmpl == TMPL_1X1) {
    if (t->tmpl == TMPL_NCHWC) default_nchwc(s, t, c);
    else default_1x1(s, t, c);
    /* an input block that reads the producer's blocks as they are, where
     * the default's does not and one at least half as long does: RegNetY's
     * 1×1 layers after a squeeze-excite scale took blocks of 15 of 120
     * channels from blocks of 24, and the scale ran as a scalar layout
     * transform, 0.17 ms for 94 K floats (bench/RESULTS.md, "Input blocks
     * that read the producer's") */
    int64_t ib = cfg_get(s, c, K_IC_BN), want = ib < vec ? ib : vec;
    if (in_blk > 0 && !config_reads_block(s, c, in_blk)) {
      const knob *ki = knob_of(t, K_IC_BN);
      for (int j = ki->n - 1; j >= 0; j--) {
        int64_t v = ki->vals[j];
        if (v > ib || 2 * v < want) continue;
        sched_config trial = *c;
        set_knob(t, &trial, K_IC_BN, v);
        if (space_valid(s, &trial) && config_reads_block(s, &trial, in_blk)) {
          *c = trial;
          break;
        }
      }
    }
  } else {
    /* depthwise: the producer's block where it is a candidate (no transform
     * before a memory-bound layer), else one vector */
    const knob *kc = knob_of(t, K_C_BN);
    int64_t cb = vec;
    for (int j = 0; in_blk > 0 && j < kc->n; j++)
      if (kc->vals[j] == in_blk && vectors_of(in_blk, vec) <= s->regs) cb = in_blk;
    set_knob(t, c, K_C_BN, cb);
    /* the row's S·nv weight vectors stay in registers beside the
     * accumulators and one input vector (conv2d_depthwise.c walks a row by
     * input column): 8 columns of 48 channels spilled on 56×56×144 */
    int64_t nv = vectors_of(cfg_get(s, c, K_C_BN), vec);
    int64_t cap = (vector_registers(s) - 1) / nv - w->S;
    if (cap > s->regs / nv || cap < 2) cap = s->regs / nv;   /* weights too many to keep: the widest tile */
    set_knob(t, c, K_OW_BN, pick_tile(OW, cap));
    set_knob(t, c, K_UNROLL_KW, 1);
  }
}

/* ---- text forms ---- */
void config_json(const task_space *s, const sched_config *c, char *buf, size_t n) {
  const tmpl_space *t = space_tmpl(s, c->tmpl);
  size_t k = (size_t)snprintf(buf, n, "{\"template\":\"%s\"", tmpl_names[c->tmpl]);
  for (int i = 0; t && i < t->n_knobs && k < n; i++) {
    if (t->knobs[i].kind == KNOB_BOOL) k += (size_t)snprintf(buf + k, n - k, ",\"%s\":%s", t->knobs[i].name, c->v[i] ? "true" : "false");
    else k += (size_t)snprintf(buf + k, n - k, ",\"%s\":%lld", t->knobs[i].name, (long long)c->v[i]);
  }
  if (k < n) snprintf(buf + k, n - k, "}");
}

void config_short(const task_space *s, const sched_config *c, char *buf, size_t n) {
  const tmpl_space *t = space_tmpl(s, c->tmpl);
  size_t k = (size_t)snprintf(buf, n, "%s:", tmpl_names[c->tmpl]);
  for (int i = 0; t && i < t->n_knobs && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%s=%lld", i ? "," : "", t->knobs[i].name, (long long)c->v[i]);
}

static int find_tmpl(const task_space *s, const char *name, size_t len, sched_config *c, char *err, size_t n) {
  for (int i = 0; i < TMPL_COUNT; i++)
    if (strlen(tmpl_names[i]) == len && !strncmp(tmpl_names[i], name, len)) {
      if (!space_tmpl(s, (conv_tmpl)i)) {
        snprintf(err, n, "template %s does not apply to this workload", tmpl_names[i]);
        return -1;
      }
      c->tmpl = (conv_tmpl)i;
      return 0;
    }
  snprintf(err, n, "unknown template \"%.*s\"", (int)len, name);
  return -1;
}

static int set_value(const tmpl_space *t, sched_config *c, const char *name, int64_t v, uint32_t *seen, char *err, size_t n) {
  for (int i = 0; i < t->n_knobs; i++) {
    if (strcmp(t->knobs[i].name, name)) continue;
    if (knob_pos(&t->knobs[i], v) < 0) {
      size_t k = (size_t)snprintf(err, n, "knob %s: %lld is not a candidate (candidates:", name, (long long)v);
      for (int j = 0; j < t->knobs[i].n && k < n; j++) k += (size_t)snprintf(err + k, n - k, " %lld", (long long)t->knobs[i].vals[j]);
      if (k < n) snprintf(err + k, n - k, ")");
      return -1;
    }
    c->v[i] = v;
    *seen |= 1u << i;
    return 0;
  }
  snprintf(err, n, "template %s has no knob \"%s\"", tmpl_names[c->tmpl], name);
  return -1;
}

/* every knob given, or an appended one left to its first value */
static int check_complete(const task_space *s, sched_config *c, uint32_t seen, char *err, size_t n) {
  const tmpl_space *t = space_tmpl(s, c->tmpl);
  for (int i = 0; i < t->n_knobs; i++)
    if (!(seen & (1u << i)) && t->knobs[i].appended) c->v[i] = t->knobs[i].vals[0];
    else if (!(seen & (1u << i))) {
      snprintf(err, n, "knob %s is missing", t->knobs[i].name);
      return -1;
    }
  if (!space_valid(s, c)) {
    if (c->tmpl == TMPL_WINOGRAD)
      snprintf(err, n, "this config is not valid: its register tile needs more than %d vector registers, its scratch "
               "more than %d KiB, or it combines par=1 with stage=1 or with oc_split, or oc_split does not divide the "
               "output-channel blocks", s->regs, LF_MAX_LOCAL_BYTES / 1024);
    else snprintf(err, n, "the register tile of this config needs more than %d vector registers", s->regs);
    return -1;
  }
  return 0;
}

int config_parse(const task_space *s, const char *text, sched_config *c, char *err, size_t n) {
  memset(c, 0, sizeof *c);
  uint32_t seen = 0;
  while (isspace((unsigned char)*text)) text++;
  if (*text != '{') {   /* short form: template:k=v,k=v */
    const char *colon = strchr(text, ':');
    if (!colon) { snprintf(err, n, "expected a JSON object or template:knob=value,..."); return -1; }
    if (find_tmpl(s, text, (size_t)(colon - text), c, err, n)) return -1;
    const tmpl_space *t = space_tmpl(s, c->tmpl);
    for (const char *p = colon + 1; *p;) {
      const char *eq = strchr(p, '=');
      if (!eq) { snprintf(err, n, "expected knob=value at \"%s\"", p); return -1; }
      char name[32];
      snprintf(name, sizeof name, "%.*s", (int)(eq - p < 31 ? eq - p : 31), p);
      char *end;
      long long v = strtoll(eq + 1, &end, 10);
      if (end == eq + 1) { snprintf(err, n, "knob %s: expected an integer", name); return -1; }
      if (set_value(t, c, name, v, &seen, err, n)) return -1;
      p = *end == ',' ? end + 1 : end;
      if (*end && *end != ',') { snprintf(err, n, "unexpected \"%s\"", end); return -1; }
    }
    return check_complete(s, c, seen, err, n);
  }
  json_error_t je;
  json_t *o = json_loads(text, 0, &je);
  if (!o || !json_is_object(o)) {
    if (o) snprintf(err, n, "a config must be a JSON object");
    else snprintf(err, n, "bad JSON at line %d column %d: %s", je.line, je.column, je.text);
    json_decref(o);
    return -1;
  }
  json_t *tv = json_object_get(o, "template");
  int rc = -1;
  if (!json_is_string(tv)) { snprintf(err, n, "knob template is missing (a string naming the algorithm)"); goto out; }
  if (find_tmpl(s, json_string_value(tv), strlen(json_string_value(tv)), c, err, n)) goto out;
  const tmpl_space *t = space_tmpl(s, c->tmpl);
  const char *key;
  json_t *val;
  json_object_foreach(o, key, val) {
    if (!strcmp(key, "template")) continue;
    int64_t v;
    if (json_is_integer(val)) v = json_integer_value(val);
    else if (json_is_boolean(val)) v = json_is_true(val);
    else { snprintf(err, n, "knob %s: expected an integer or a boolean", key); goto out; }
    if (set_value(t, c, key, v, &seen, err, n)) goto out;
  }
  rc = check_complete(s, c, seen, err, n);
out:
  json_decref(o);
  return rc;
}
