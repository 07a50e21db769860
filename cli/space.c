/* space.c: temper space MODEL [--task K] — the tuning tasks of a model and
 * their knob spaces. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "tuner.h"

/* K: a row number from `temper space MODEL`, or a workload key */
int cli_find_task(tune_task *tasks, int n, const char *k) {
  char *end;
  long i = strtol(k, &end, 10);
  if (!*end && i >= 0 && i < n) return (int)i;
  for (int j = 0; j < n; j++)
    if (!strcmp(tasks[j].key, k)) return j;
  fprintf(stderr, "temper: no task '%s' in this model (see temper space MODEL)\n", k);
  return -1;
}

int cli_load_tasks(const char *model, const program_opts *o, program *p, tune_task **tasks, int *n, int *vec) {
  cg_target t;
  diag d = {0};
  cg_host_target(&t, &d);
  *vec = t.vec;
  if (cli_load(model, o, p)) return 1;
  d = (diag){.path = p->g->path, .text = p->g->text};
  temper_status s = program_bind(p, &d);
  if (!s) s = tasks_extract(p->g, t.vec, tasks, n, &d);
  if (s) { fprintf(stderr, "%s\n", d.msg); return 1; }
  return 0;
}

int cmd_space(int argc, char **argv) {
  const char *model = NULL, *task = NULL;
  program_opts data = {.seed = 1};
  program p = {0};
  for (int i = 1; i < argc; i++) {
    int flag = cli_data_flag(&data, argc, argv, &i);
    if (flag < 0) return 2;
    if (flag) continue;
    if (!strcmp(argv[i], "--task") && i + 1 < argc) task = argv[++i];
    else if (argv[i][0] == '-') { fprintf(stderr, "temper space: unknown option '%s'\n", argv[i]); return 2; }
    else model = argv[i];
  }
  if (!model) { fprintf(stderr, "usage: temper space MODEL [--task K] [--params DIR]\n"); return 2; }
  tune_task *tasks = NULL;
  int n = 0, vec = 16, rc = 1;
  if (cli_load_tasks(model, &data, &p, &tasks, &n, &vec)) goto out;
  if (!task) {
    double total = 0;
    for (int i = 0; i < n; i++) total += tasks[i].flops * tasks[i].count;
    printf("%-3s %-72s %9s %5s %8s  %s\n", "#", "workload", "MFLOP", "count", "share", "templates (valid points / space)");
    for (int i = 0; i < n; i++) {
      tune_task *t = &tasks[i];
      printf("%-3d %-72s %9.1f %5d %7.1f%%  ", i, t->key, t->flops * 1e-6, t->count, 100 * t->flops * t->count / total);
      for (int k = 0; k < t->space.n_tmpl; k++)
        printf("%s%s", k ? ", " : "", tmpl_names[t->space.t[k].tmpl]);
      printf(" (%lld / %lld)\n", (long long)t->n_valid, (long long)t->space.size);
    }
    printf("%d tasks, %.2f GFLOP in conv2d\n", n, total * 1e-9);
    rc = 0;
    goto out;
  }
  int k = cli_find_task(tasks, n, task);
  if (k < 0) goto out;
  tune_task *t = &tasks[k];
  printf("task %d: %s\n  %.1f MFLOP, %d occurrence%s, %lld points (%lld valid)\n", k, t->key, t->flops * 1e-6, t->count,
         t->count == 1 ? "" : "s", (long long)t->space.size, (long long)t->n_valid);
  for (int i = 0; i < t->space.n_tmpl; i++) {
    const tmpl_space *ts = &t->space.t[i];
    printf("template %s (version %d): %lld points, indices %lld..%lld", tmpl_names[ts->tmpl], tmpl_versions[ts->tmpl],
           (long long)ts->size, (long long)ts->offset, (long long)(ts->offset + ts->base - 1));
    if (ts->size > ts->base)   /* points taking a candidate added later */
      printf(" and %lld..%lld", (long long)ts->ext_offset, (long long)(ts->ext_offset + ts->size - ts->base - 1));
    printf("\n");
    static const char *kinds[] = {"split", "choice", "bool"};
    for (int j = 0; j < ts->n_knobs; j++) {
      printf("  %-10s %-6s", ts->knobs[j].name, kinds[ts->knobs[j].kind]);
      for (int v = 0; v < ts->knobs[j].n; v++) printf(" %lld", (long long)ts->knobs[j].vals[v]);
      printf("\n");
    }
  }
  sched_config c;
  char json[512];
  config_default(&t->space, &c);
  config_json(&t->space, &c, json, sizeof json);
  printf("default config (index %lld): %s\n", (long long)space_index(&t->space, &c), json);
  rc = 0;
out:
  free(tasks);
  program_free(&p);
  return rc;
}
