/* tasks.c: task extraction: one task per distinct conv2d workload, with how
 * often it occurs, after batch norm is folded (the layer as it will run). */
#include <stdlib.h>
#include <string.h>
#include "tuner.h"

temper_status tasks_extract(temper_graph *g, int vec, tune_task **out, int *n_out, diag *d) {
  *out = NULL;
  *n_out = 0;
  temper_status s = typeinfer(g, d);
  if (!s) s = simplify(g, d);
  if (!s) s = fold_constants(g, d);
  if (s) return s;
  arena scratch = {0};
  int n = 0;
  node **order = ir_topo(&scratch, g->main->body, &n);
  tune_task *tasks = calloc((size_t)n + 1, sizeof *tasks);
  int nt = 0;
  if (!order || !tasks) {
    arena_free(&scratch);
    free(tasks);
    return diag_fail(d, TEMPER_ENOMEM, "out of memory");
  }
  for (int i = 0; i < n; i++) {
    conv_workload w;
    if (workload_of(order[i], &w)) continue;
    if (strcmp(order[i]->attrs->v[ATTR_DATA_LAYOUT].s, "NCHW") || strcmp(order[i]->attrs->v[ATTR_KERNEL_LAYOUT].s, "OIHW")) continue;
    char key[256];
    workload_key(&w, key, sizeof key);
    int found = -1;
    for (int k = 0; k < nt; k++)
      if (!strcmp(tasks[k].key, key)) found = k;
    if (found >= 0) { tasks[found].count++; continue; }
    tune_task *t = &tasks[nt++];
    memcpy(t->key, key, sizeof key);
    t->w = w;
    t->count = 1;
    t->flops = workload_flops(&w);
    space_build(&w, vec, &t->space);
    for (int64_t idx = 0; idx < t->space.size; idx++) {
      sched_config c;
      space_config(&t->space, idx, &c);
      t->n_valid += space_valid(&t->space, &c);
    }
  }
  arena_free(&scratch);
  *out = tasks;
  *n_out = nt;
  return TEMPER_OK;
}
