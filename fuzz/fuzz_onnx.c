/* fuzz_onnx.c: the ONNX importer (from memory) through the passes up to fusion. */
#include "engine.h"
#include "fuzz.h"
#include "onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  temper_graph *g = NULL;
  diag d = {0};
  if (!onnx_import_mem(data, size, "/nonexistent/fuzz.onnx", &g, &d)) {
    diag d2 = {0};
    pipeline_optimize(g, 16, &d2);
  }
  temper_graph_destroy(g);
  return 0;
}
