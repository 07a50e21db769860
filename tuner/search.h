/* search.h: search strategies over a task's space. Every proposal is a
 * valid config not measured before for the task's condition (nor proposed
 * earlier in this run); all randomness comes from one PCG32 generator, so
 * the same seed and the same measurements give the same proposals. */
#ifndef TEMPER_SEARCH_H
#define TEMPER_SEARCH_H
#include "space.h"

typedef enum search_kind { SEARCH_RANDOM, SEARCH_GRID, SEARCH_GA, SEARCH_XGB } search_kind;
extern const char *const search_names[4];

typedef struct scored { int64_t index; double cost; } scored;   /* cost: seconds, INFINITY for errors */

typedef struct search {
  search_kind kind;
  const task_space *sp;
  pcg32 rng;
  int64_t *seen;            /* open-addressing set of measured or proposed indices */
  int64_t seen_cap, n_seen;
  int64_t grid_next;
  scored *pop;              /* measured configs, fastest first (GA parents) */
  int n_pop, cap_pop;
  int exhausted;
  struct cost_model *model;  /* SEARCH_XGB */
  float *tx, *ty;            /* transfer rows: records of other workloads (features, log GFLOP/s) */
  unsigned *tgroups;
  int tn, tng;
} search;

/* SEARCH_XGB: rows learned from other workloads of the same template and
 * target, used before (and with) the task's own measurements; copied */
void search_set_transfer(search *s, const float *x, const float *y, int n, const unsigned *groups, int n_groups);

void search_init(search *s, search_kind kind, const task_space *sp, uint64_t seed);
void search_free(search *s);
int search_seen(const search *s, int64_t index);
void search_mark(search *s, int64_t index);
/* a measurement came back (it is also marked seen) */
void search_update(search *s, int64_t index, double cost);
/* up to n new proposals into out; fewer when the space runs out */
int search_next(search *s, int64_t *out, int n);
#endif
