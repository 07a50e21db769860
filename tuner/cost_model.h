/* cost_model.h: a learned cost model for the search: XGBoost (C API,
 * rank:pairwise, one thread) over features of a config and its loop nest.
 * Labels are log throughput; the model only has to rank configs of a
 * workload, so one query group per workload. */
#ifndef TEMPER_COST_MODEL_H
#define TEMPER_COST_MODEL_H
#include "space.h"

enum { CM_FEATURES = 22 };

/* The features of config c of a task (documented in cost_model.c). */
void cm_features(const task_space *sp, const sched_config *c, float *out);

typedef struct cost_model cost_model;
cost_model *cm_create(void);
void cm_destroy(cost_model *m);
/* trains from scratch on n rows x[n][CM_FEATURES], labels y[n], in query
 * groups of the given sizes (summing to n); 0 on success */
int cm_train(cost_model *m, const float *x, const float *y, int n, const unsigned *groups, int n_groups);
/* scores of n rows (higher: faster); 0 on success. An untrained model fails. */
int cm_predict(cost_model *m, const float *x, int n, float *out);
int cm_trained(const cost_model *m);
#endif
