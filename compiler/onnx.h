/* onnx.h: ONNX models → the graph IR. Parsing uses protobuf-c code generated
 * at build time from Debian's onnx.proto; each ONNX op maps onto the IR ops
 * of the text format, so fusion, knobs and tuning apply unchanged. */
#ifndef TEMPER_ONNX_H
#define TEMPER_ONNX_H
#include "compiler_int.h"

/* Imports path. The model's initializers are its weights (bound as
 * constants); the graph's remaining inputs are main's parameters. Errors name
 * the file and the node. */
temper_status onnx_import(const char *path, temper_graph **out, diag *d);
/* the same from a model in memory; path names it in messages and locates
 * external data */
temper_status onnx_import_mem(const void *data, size_t size, const char *path, temper_graph **out, diag *d);
#endif
