/* lower.c: temper lower MODEL [--fused] [--loops] — what the compiler makes
 * of a model: the fused program, or the loop IR of every kernel. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "schedules.h"
#include "tuner.h"

/* --task K --config JSON: that config for that workload, defaults elsewhere */
typedef struct one_config { const char *key, *config; } one_config;

static int choose_one(void *ctx, const char *key, const struct task_space *s, const struct conv_site *site, struct sched_config *out, char *err, size_t n) {
  (void)site;
  one_config *oc = ctx;
  if (strcmp(key, oc->key)) return 0;
  return config_parse(s, oc->config, out, err, n) ? -1 : 1;
}

/* the workload key of the conv2d a primitive function holds, or "" */
static void fn_workload(const node *fn, char *key, size_t n) {
  key[0] = 0;
  arena s = {0};
  int cnt = 0;
  node **order = ir_topo(&s, fn->body, &cnt);
  for (int i = 0; order && i < cnt; i++) {
    conv_workload w;
    if (!workload_of(order[i], &w)) workload_key(&w, key, n);
  }
  arena_free(&s);
}

int cmd_lower(int argc, char **argv) {
  const char *model = NULL;
  int loops = 0;
  const char *task = NULL, *config = NULL;
  program_opts data = {.seed = 1};
  for (int i = 1; i < argc; i++) {
    int flag = cli_data_flag(&data, argc, argv, &i);
    if (flag < 0) return 2;
    if (flag) continue;
    if (!strcmp(argv[i], "--fused")) loops = 0;
    else if (!strcmp(argv[i], "--loops")) loops = 1;
    else if (!strcmp(argv[i], "--llvm")) loops = 2;
    else if (!strcmp(argv[i], "--asm")) loops = 3;
    else if (!strcmp(argv[i], "--task") && i + 1 < argc) task = argv[++i];
    else if (!strcmp(argv[i], "--config") && i + 1 < argc) config = argv[++i];
    else if (argv[i][0] == '-') { fprintf(stderr, "temper lower: unknown option '%s'\n", argv[i]); return 2; }
    else model = argv[i];
  }
  if (!model || (config && !task)) {
    fprintf(stderr, "usage: temper lower MODEL [--fused | --loops | --llvm | --asm] [--params DIR] [--task K [--config JSON]]\n");
    return 2;
  }
  program p = {0};
  int rc = 1;
  cg_target t;
  diag d = {0};
  cg_host_target(&t, &d);
  pipeline_opts po = {.vec = t.vec};
  char want_key[256] = "";
  one_config oc = {0};
  if (task) {   /* resolve K to a workload key on a scratch copy of the model */
    program tp = {0};
    tune_task *tasks = NULL;
    int nt = 0, vec, k = -1;
    if (!cli_load_tasks(model, &data, &tp, &tasks, &nt, &vec)) k = cli_find_task(tasks, nt, task);
    if (k >= 0) snprintf(want_key, sizeof want_key, "%s", tasks[k].key);
    free(tasks);
    program_free(&tp);
    if (k < 0) goto out;
    if (!loops) loops = 1;
    if (config) {
      oc = (one_config){want_key, config};
      po.choose = choose_one;
      po.ctx = &oc;
    }
  }
  if (cli_load(model, &data, &p)) goto out;
  temper_graph *g = p.g;
  d = (diag){.path = g->path, .text = g->text};
  if (program_optimize(&p, &po, &d)) { fprintf(stderr, "%s\n", d.msg); goto out; }
  if (!loops) {
    char *text = print_graph(g);
    if (!text) goto out;
    fputs(text, stdout);
    free(text);
    rc = 0;
    goto out;
  }
  arena s = {0};
  int n = 0;
  node **order = ir_topo(&s, g->main->body, &n);
  rc = 0;
  for (int i = 0; i < n && !rc; i++) {
    node *c = order[i];
    if (c->kind != N_CALL || c->op >= 0 || !c->callee->primitive) continue;
    if (want_key[0]) {   /* only the task's kernel, once */
      char key[256];
      fn_workload(c->callee, key, sizeof key);
      if (strcmp(key, want_key)) continue;
      want_key[0] = '#';
    }
    char name[32];
    snprintf(name, sizeof name, "kernel_%d", i);
    lfunc *f = NULL;
    if (engine_lower_one(c->callee, t.vec, name, &f, &d)) { fprintf(stderr, "temper: %s\n", d.msg); rc = 1; break; }
    char *text = NULL;
    if (loops == 1) text = lf_print(f);
    else if (cg_print_llvm(&t, f, loops == 3, &text, &d)) { fprintf(stderr, "temper: %s\n", d.msg); rc = 1; }
    printf("%s\n", text ? text : "");
    free(text);
    lf_free(f);
  }
  arena_free(&s);
out:
  program_free(&p);
  return rc;
}
