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

enum { SHOW_FUSED, SHOW_LOOPS, SHOW_LLVM, SHOW_ASM };

typedef struct lower_args {
  const char *model, *task, *config;
  int show;
  program_opts data;
} lower_args;

static int parse_args(int argc, char **argv, lower_args *a) {
  for (int i = 1; i < argc; i++) {
    int flag = cli_data_flag(&a->data, argc, argv, &i);
    if (flag < 0) return 2;
    if (flag) continue;
    if (!strcmp(argv[i], "--fused")) a->show = SHOW_FUSED;
    else if (!strcmp(argv[i], "--loops")) a->show = SHOW_LOOPS;
    else if (!strcmp(argv[i], "--llvm")) a->show = SHOW_LLVM;
    else if (!strcmp(argv[i], "--asm")) a->show = SHOW_ASM;
    else if (!strcmp(argv[i], "--task") && i + 1 < argc) a->task = argv[++i];
    else if (!strcmp(argv[i], "--config") && i + 1 < argc) a->config = argv[++i];
    else if (argv[i][0] == '-') { fprintf(stderr, "temper lower: unknown option '%s'\n", argv[i]); return 2; }
    else a->model = argv[i];
  }
  if (a->model && !(a->config && !a->task)) return 0;
  fprintf(stderr, "usage: temper lower MODEL [--fused | --loops | --llvm | --asm] [--params DIR] [--task K [--config JSON]]\n");
  return 2;
}

/* --task K: the workload key of task K (a row of `temper space`, or a key), on a scratch copy of the model */
static int task_key(const lower_args *a, char *key, size_t n) {
  program tp = {0};
  tune_task *tasks = NULL;
  int nt = 0, vec, k = -1;
  if (!cli_load_tasks(a->model, &a->data, &tp, &tasks, &nt, &vec)) k = cli_find_task(tasks, nt, a->task);
  if (k >= 0) snprintf(key, n, "%s", tasks[k].key);
  free(tasks);
  program_free(&tp);
  return k < 0;
}

/* every kernel's loop IR, LLVM IR or assembly (only want_key's, if given) */
static int print_kernels(const temper_graph *g, const cg_target *t, int show, char *want_key) {
  arena s = {0};
  int n = 0, rc = 0;
  node **order = ir_topo(&s, g->main->body, &n);
  diag d = {0};
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
    if (engine_lower_one(c->callee, t, name, &f, &d)) { fprintf(stderr, "temper: %s\n", d.msg); rc = 1; break; }
    char *text = NULL;
    if (show == SHOW_LOOPS) text = lf_print(f);
    else if (cg_print_llvm(t, f, show == SHOW_ASM, &text, &d)) { fprintf(stderr, "temper: %s\n", d.msg); rc = 1; }
    printf("%s\n", text ? text : "");
    free(text);
    lf_free(f);
  }
  arena_free(&s);
  return rc;
}

int cmd_lower(int argc, char **argv) {
  lower_args a = {.data = {.seed = 1}};
  int rc = parse_args(argc, argv, &a);
  if (rc) return rc;
  cg_target t;
  diag d = {0};
  cg_host_target(&t, &d);
  pipeline_opts po = {.vec = t.vec};
  char want_key[256] = "";
  one_config oc = {want_key, a.config};
  if (a.task && task_key(&a, want_key, sizeof want_key)) return 1;
  if (a.task && a.show == SHOW_FUSED) a.show = SHOW_LOOPS;
  if (a.config) po.choose = choose_one, po.ctx = &oc;
  program p = {0};
  rc = 1;
  if (cli_load(a.model, &a.data, &p)) goto out;
  d = (diag){.path = p.g->path, .text = p.g->text};
  if (program_optimize(&p, &po, &d)) { fprintf(stderr, "%s\n", d.msg); goto out; }
  if (a.show != SHOW_FUSED) rc = print_kernels(p.g, &t, a.show, want_key);
  else {
    char *text = print_graph(p.g);
    if (text) fputs(text, stdout), rc = 0;
    free(text);
  }
out:
  program_free(&p);
  return rc;
}
