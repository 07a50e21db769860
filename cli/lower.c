/* lower.c: temper lower MODEL [--fused] [--loops] — what the compiler makes
 * of a model: the fused program, or the loop IR of every kernel. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "schedules.h"

int cmd_lower(int argc, char **argv) {
  const char *model = NULL;
  int loops = 0;
  model_data md = {.seed = 1};
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--fused")) loops = 0;
    else if (!strcmp(argv[i], "--loops")) loops = 1;
    else if (!strcmp(argv[i], "--llvm")) loops = 2;
    else if (!strcmp(argv[i], "--asm")) loops = 3;
    else if (!strcmp(argv[i], "--params") && i + 1 < argc) md.params_dir = argv[++i];
    else if (argv[i][0] == '-') { fprintf(stderr, "temper lower: unknown option '%s'\n", argv[i]); return 2; }
    else model = argv[i];
  }
  if (!model) { fprintf(stderr, "usage: temper lower MODEL [--fused | --loops | --llvm | --asm] [--params DIR]\n"); return 2; }
  temper_graph *g = NULL;
  int rc = 1;
  cg_target t;
  diag d = {0};
  cg_host_target(&t, &d);
  pipeline_opts po = {.vec = t.vec};
  if (cli_read_model(model, &g) || cli_model_data(g, &md) || cli_bind_and_optimize(g, &md, &po)) goto out;
  d = (diag){.path = g->path, .text = g->text};
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
    char name[32];
    snprintf(name, sizeof name, "kernel_%d", i);
    lfunc *f = NULL;
    if (sched_lower(c->callee, t.vec, name, &f, &d)) { fprintf(stderr, "temper: %s\n", d.msg); rc = 1; break; }
    char *text = NULL;
    if (loops == 1) text = lf_print(f);
    else if (cg_print_llvm(&t, f, loops == 3, &text, &d)) { fprintf(stderr, "temper: %s\n", d.msg); rc = 1; }
    printf("%s\n", text ? text : "");
    free(text);
    lf_free(f);
  }
  arena_free(&s);
out:
  cli_model_data_free(&md);
  temper_graph_destroy(g);
  return rc;
}
