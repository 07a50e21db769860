/* search.c: random (without repeats), grid, and a genetic search that
 * breeds from the fastest measured configs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cost_model.h"
#include "search.h"

const char *const search_names[4] = {"random", "grid", "ga", "xgb"};

enum { GA_PARENTS = 8, GA_MIN_POP = 6, TRIES = 2000 };

void search_init(search *s, search_kind kind, const task_space *sp, uint64_t seed) {
  memset(s, 0, sizeof *s);
  s->kind = kind;
  s->sp = sp;
  pcg32_seed(&s->rng, seed, 0x5eed);
}

void search_free(search *s) {
  free(s->seen);
  free(s->pop);
  cm_destroy(s->model);
  free(s->tx);
  free(s->ty);
  free(s->tgroups);
  memset(s, 0, sizeof *s);
}

static uint64_t mix(int64_t v) {
  uint64_t x = (uint64_t)v * 0x9E3779B97F4A7C15ull;
  return x ^ (x >> 29);
}

int search_seen(const search *s, int64_t index) {
  if (!s->seen_cap) return 0;
  for (int64_t i = (int64_t)(mix(index) & (uint64_t)(s->seen_cap - 1));; i = (i + 1) & (s->seen_cap - 1)) {
    if (s->seen[i] == -1) return 0;
    if (s->seen[i] == index) return 1;
  }
}

void search_mark(search *s, int64_t index) {
  if (search_seen(s, index)) return;
  if ((s->n_seen + 1) * 2 > s->seen_cap) {
    int64_t nc = s->seen_cap ? s->seen_cap * 2 : 1024;
    int64_t *ns = malloc(sizeof(int64_t) * (size_t)nc);
    if (!ns) return;
    for (int64_t i = 0; i < nc; i++) ns[i] = -1;
    int64_t *old = s->seen, oc = s->seen_cap;
    s->seen = ns;
    s->seen_cap = nc;
    s->n_seen = 0;
    for (int64_t i = 0; i < oc; i++)
      if (old[i] != -1) search_mark(s, old[i]);
    free(old);
  }
  int64_t i = (int64_t)(mix(index) & (uint64_t)(s->seen_cap - 1));
  while (s->seen[i] != -1) i = (i + 1) & (s->seen_cap - 1);
  s->seen[i] = index;
  s->n_seen++;
}

void search_update(search *s, int64_t index, double cost) {
  search_mark(s, index);
  if (!isfinite(cost)) return;
  if (s->n_pop == s->cap_pop) {
    s->cap_pop = s->cap_pop ? s->cap_pop * 2 : 64;
    scored *np = realloc(s->pop, sizeof(scored) * (size_t)s->cap_pop);
    if (!np) return;
    s->pop = np;
  }
  int i = s->n_pop++;   /* insertion keeps the population sorted by cost */
  while (i > 0 && (s->pop[i - 1].cost > cost || (s->pop[i - 1].cost == cost && s->pop[i - 1].index > index))) {
    s->pop[i] = s->pop[i - 1];
    i--;
  }
  s->pop[i] = (scored){index, cost};
}

static int fresh(search *s, int64_t idx) {
  sched_config c;
  return !search_seen(s, idx) && !space_config(s->sp, idx, &c) && space_valid(s->sp, &c);
}

static int64_t rand_index(search *s) {
  uint64_t r = ((uint64_t)pcg32_next(&s->rng) << 32) | pcg32_next(&s->rng);
  return (int64_t)(r % (uint64_t)s->sp->size);
}

static int64_t propose_random(search *s) {
  for (int k = 0; k < TRIES; k++) {
    int64_t idx = rand_index(s);
    if (fresh(s, idx)) return idx;
  }
  int64_t start = rand_index(s);   /* nearly exhausted: scan from a random point */
  for (int64_t k = 0; k < s->sp->size; k++) {
    int64_t idx = (start + k) % s->sp->size;
    if (fresh(s, idx)) return idx;
  }
  return -1;
}

static int64_t propose_grid(search *s) {
  while (s->grid_next < s->sp->size) {
    int64_t idx = s->grid_next++;
    if (fresh(s, idx)) return idx;
  }
  return -1;
}

/* tournament of two among the fastest GA_PARENTS */
static const scored *pick_parent(search *s) {
  int n = s->n_pop < GA_PARENTS ? s->n_pop : GA_PARENTS;
  int a = (int)(pcg32_next(&s->rng) % (uint32_t)n), b = (int)(pcg32_next(&s->rng) % (uint32_t)n);
  return &s->pop[a < b ? a : b];
}

static int64_t propose_ga(search *s) {
  if (s->n_pop < GA_MIN_POP) return propose_random(s);
  for (int k = 0; k < TRIES; k++) {
    sched_config pa, pb, child;
    space_config(s->sp, pick_parent(s)->index, &pa);
    space_config(s->sp, pick_parent(s)->index, &pb);
    child = pa;
    const tmpl_space *t = space_tmpl(s->sp, pa.tmpl);
    for (int i = 0; i < t->n_knobs; i++) {
      if (pb.tmpl == pa.tmpl && (pcg32_next(&s->rng) & 1)) child.v[i] = pb.v[i];   /* crossover */
      if (pcg32_float(&s->rng) < 0.15f)                                             /* mutation */
        child.v[i] = t->knobs[i].vals[pcg32_next(&s->rng) % (uint32_t)t->knobs[i].n];
    }
    int64_t idx = space_index(s->sp, &child);
    if (idx >= 0 && fresh(s, idx)) return idx;
  }
  return propose_random(s);
}

void search_set_transfer(search *s, const float *x, const float *y, int n, const unsigned *groups, int n_groups) {
  free(s->tx), free(s->ty), free(s->tgroups);
  s->tx = malloc(sizeof(float) * (size_t)(n * CM_FEATURES + 1));
  s->ty = malloc(sizeof(float) * (size_t)(n + 1));
  s->tgroups = malloc(sizeof(unsigned) * (size_t)(n_groups + 1));
  if (!s->tx || !s->ty || !s->tgroups) { s->tn = s->tng = 0; return; }
  memcpy(s->tx, x, sizeof(float) * (size_t)(n * CM_FEATURES));
  memcpy(s->ty, y, sizeof(float) * (size_t)n);
  memcpy(s->tgroups, groups, sizeof(unsigned) * (size_t)n_groups);
  s->tn = n;
  s->tng = n_groups;
}

/* retrains on the task's measurements (one group) and the transfer rows */
static int xgb_train(search *s) {
  int n = s->n_pop + s->tn;
  if (n < 4) return -1;
  if (!s->model && !(s->model = cm_create())) return -1;
  float *x = malloc(sizeof(float) * (size_t)n * CM_FEATURES), *y = malloc(sizeof(float) * (size_t)n);
  unsigned *g = malloc(sizeof(unsigned) * (size_t)(s->tng + 1));
  int rc = -1;
  if (x && y && g) {
    for (int i = 0; i < s->n_pop; i++) {
      sched_config c;
      space_config(s->sp, s->pop[i].index, &c);
      cm_features(s->sp, &c, x + (size_t)i * CM_FEATURES);
      y[i] = (float)-log(s->pop[i].cost);   /* log throughput, up to the workload's constant */
    }
    memcpy(x + (size_t)s->n_pop * CM_FEATURES, s->tx ? s->tx : x, sizeof(float) * (size_t)s->tn * CM_FEATURES);
    memcpy(y + s->n_pop, s->ty ? s->ty : y, sizeof(float) * (size_t)s->tn);
    int ng = 0;
    if (s->n_pop) g[ng++] = (unsigned)s->n_pop;
    for (int i = 0; i < s->tng; i++) g[ng++] = s->tgroups[i];
    rc = cm_train(s->model, x, y, n, g, ng);
  }
  free(x), free(y), free(g);
  return rc;
}

/* a random knob of c changed to a random candidate */
static void mutate(search *s, sched_config *c) {
  const tmpl_space *t = space_tmpl(s->sp, c->tmpl);
  int k = (int)(pcg32_next(&s->rng) % (uint32_t)t->n_knobs);
  c->v[k] = t->knobs[k].vals[pcg32_next(&s->rng) % (uint32_t)t->knobs[k].n];
}

enum { SA_CHAINS = 16, SA_STEPS = 60, XGB_EPSILON_PERCENT = 20 };

/* simulated annealing over predicted scores: chains start at the fastest
 * measured configs and random points; the best unmeasured configs seen are
 * the batch, less a fraction of random picks */
static int propose_xgb(search *s, int64_t *out, int n) {
  if (xgb_train(s)) return 0;
  sched_config cur[SA_CHAINS], nxt[SA_CHAINS];
  float cur_score[SA_CHAINS], feats[SA_CHAINS * CM_FEATURES], score[SA_CHAINS];
  for (int i = 0; i < SA_CHAINS; i++) {
    int64_t idx = i < s->n_pop && i < SA_CHAINS / 2 ? s->pop[i].index : propose_random(s);
    if (idx < 0) return 0;
    space_config(s->sp, idx, &cur[i]);
    cm_features(s->sp, &cur[i], feats + i * CM_FEATURES);
  }
  if (cm_predict(s->model, feats, SA_CHAINS, cur_score)) return 0;
  int cap = 4 * n + SA_CHAINS, nb = 0;
  scored *best = malloc(sizeof(scored) * (size_t)cap);   /* cost = -score: lower is better */
  if (!best) return 0;
  for (int step = 0; step < SA_STEPS; step++) {
    double temp = 1.0 - 0.95 * step / SA_STEPS;
    for (int i = 0; i < SA_CHAINS; i++) {
      nxt[i] = cur[i];
      do mutate(s, &nxt[i]);
      while (!space_valid(s->sp, &nxt[i]) && pcg32_next(&s->rng) % 8);
      cm_features(s->sp, &nxt[i], feats + i * CM_FEATURES);
    }
    if (cm_predict(s->model, feats, SA_CHAINS, score)) break;
    for (int i = 0; i < SA_CHAINS; i++) {
      int64_t idx = space_index(s->sp, &nxt[i]);
      if (space_valid(s->sp, &nxt[i]) && !search_seen(s, idx)) {   /* a candidate for the batch */
        int dup = 0;
        for (int j = 0; j < nb; j++) dup |= best[j].index == idx;
        if (!dup) {
          if (nb < cap) best[nb++] = (scored){idx, -score[i]};
          else {
            int worst = 0;
            for (int j = 1; j < nb; j++)
              if (best[j].cost > best[worst].cost) worst = j;
            if (-score[i] < best[worst].cost) best[worst] = (scored){idx, -score[i]};
          }
        }
      }
      if (score[i] > cur_score[i] || pcg32_float(&s->rng) < exp((score[i] - cur_score[i]) / temp))
        cur[i] = nxt[i], cur_score[i] = score[i];
    }
  }
  for (int i = 1; i < nb; i++)   /* best predicted first; ties by index, so runs repeat */
    for (int j = i; j > 0 && (best[j - 1].cost > best[j].cost || (best[j - 1].cost == best[j].cost && best[j - 1].index > best[j].index)); j--) {
      scored t = best[j];
      best[j] = best[j - 1];
      best[j - 1] = t;
    }
  int k = 0, want = n - n * XGB_EPSILON_PERCENT / 100;
  for (int i = 0; i < nb && k < want; i++) {
    if (search_seen(s, best[i].index)) continue;
    search_mark(s, best[i].index);
    out[k++] = best[i].index;
  }
  free(best);
  return k;
}

int search_next(search *s, int64_t *out, int n) {
  int k = 0;
  if (s->kind == SEARCH_XGB && !s->exhausted) k = propose_xgb(s, out, n);   /* the rest: random picks */
  while (k < n && !s->exhausted) {
    int64_t idx = s->kind == SEARCH_GRID ? propose_grid(s) : s->kind == SEARCH_GA ? propose_ga(s) : propose_random(s);   /* xgb: epsilon */
    if (idx < 0) { s->exhausted = 1; break; }
    search_mark(s, idx);
    out[k++] = idx;
  }
  return k;
}
