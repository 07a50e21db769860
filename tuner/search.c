/* search.c: random (without repeats), grid, and a genetic search that
 * breeds from the fastest measured configs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "search.h"

const char *const search_names[3] = {"random", "grid", "ga"};

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

int search_next(search *s, int64_t *out, int n) {
  int k = 0;
  while (k < n && !s->exhausted) {
    int64_t idx = s->kind == SEARCH_GRID ? propose_grid(s) : s->kind == SEARCH_GA ? propose_ga(s) : propose_random(s);
    if (idx < 0) { s->exhausted = 1; break; }
    search_mark(s, idx);
    out[k++] = idx;
  }
  return k;
}
