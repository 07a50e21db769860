/* tuner.h: tuning tasks, search strategies, measurement and the tune loop. */
#ifndef TEMPER_TUNER_H
#define TEMPER_TUNER_H
#include "engine.h"
#include "space.h"

/* One task per distinct tunable workload of a model. */
typedef struct tune_task {
  char key[256];            /* workload key */
  conv_workload w;
  task_space space;
  int count;                /* occurrences in the model */
  double flops;             /* per occurrence */
  int64_t n_valid;          /* valid points of the space */
} tune_task;

/* tasks_extract: needs a typed graph with weights bound; runs simplify and
 * fold on it; the tasks in order of first occurrence. *out malloc'd. */
temper_status tasks_extract(temper_graph *g, int vec, tune_task **out, int *n, diag *d);
#endif

