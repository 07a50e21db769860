/* fuzz_text.c: the text format through the parser, type inference and the
 * passes up to fusion (no code generation). */
#include "engine.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_string(data, size);
  if (!text) return 0;
  temper_graph *g = NULL;
  char *err = NULL;
  if (!temper_graph_parse(text, "fuzz.relay", &g, &err)) {
    diag d = {0};
    float **none = calloc((size_t)g->main->n_params + 1, sizeof(float *));   /* nothing bound: weights stay parameters */
    if (none && !bind_params(g, none, &d)) pipeline_optimize(g, 16, &d);
    free(none);
  }
  free(err);
  temper_graph_destroy(g);
  free(text);
  return 0;
}
