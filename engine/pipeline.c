/* pipeline.c: the compiler's passes as one column, QBE style. Set
 * TEMPER_DUMP=simplify,sink,fold,layout,fuse (or "all") to print the program after
 * each named step on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine.h"

static void dump(temper_graph *g, const char *step) {
  const char *want = getenv("TEMPER_DUMP");
  if (!want || (!strstr(want, step) && !strstr(want, "all"))) return;
  char *text = print_graph(g);
  fprintf(stderr, "// after %s\n%s", step, text ? text : "(out of memory)\n");
  free(text);
}

#define STEP(name, call)            \
  do {                              \
    temper_status s_ = (call);      \
    if (s_ != TEMPER_OK) return s_; \
    dump(g, name);                  \
  } while (0)

/* pipeline_optimize: needs a parsed graph with parameters bound as wanted;
 * output: typed, fused, every op in a primitive function */
temper_status pipeline_optimize_with(temper_graph *g, const pipeline_opts *o, diag *d) {
  STEP("typeinfer", typeinfer(g, d));
  STEP("simplify", simplify(g, d));
  STEP("sink", sink_transposes(g, d));
  STEP("fold", fold_constants(g, d));
  STEP("layout", layout_alter(g, o, d));
  STEP("fold", fold_constants(g, d));
  STEP("fuse", o->no_dw_fusion ? fuse(g, d) : fuse_with(g, layout_join_dw, (void *)o, d));
  return TEMPER_OK;
}

temper_status pipeline_optimize(temper_graph *g, int vec, diag *d) {
  pipeline_opts o = {.vec = vec};
  return pipeline_optimize_with(g, &o, d);
}
