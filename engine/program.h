/* program.h: a model with its data, compiled and ready to run — what
 * `temper run`, `build --check`, refine and the differential tester each
 * did for themselves:
 *
 *   program_read    text or ONNX → graph (typed)
 *   program_data    a value for every parameter of @main: the inputs from
 *                   .npy files or seeded, the weights from a params
 *                   directory or seeded (ONNX: the model's own)
 *   program_reference   (optional) the reference interpreter's outputs
 *   program_optimize  bind the weights, run the passes with a chooser
 *   program_compile   and make the executor, with its inputs set
 *
 * The steps are separate so a caller can look at the graph in between (a
 * chooser takes the model's signature before the passes rewrite it). */
#ifndef TEMPER_PROGRAM_H
#define TEMPER_PROGRAM_H
#include "engine.h"

enum { PROGRAM_MAX_INPUTS = 32 };

typedef struct program_opts {
  const char *params_dir;   /* weights from DIR/NAME.npy; NULL: seeded */
  uint64_t seed;            /* of the seeded data */
  int n_inputs;             /* inputs given as files: NAME=FILE.npy */
  const char *input_names[PROGRAM_MAX_INPUTS];
  const char *input_files[PROGRAM_MAX_INPUTS];
} program_opts;

typedef struct program {
  temper_graph *g;          /* the model; after program_compile, fused */
  int n_params;             /* @main's parameters before binding */
  float **values;           /* a value for each */
  int *is_input;            /* which stay inputs (the others are bound as weights) */
  const char **names;       /* their names (the graph's arena) */
  float **ref;              /* program_reference: one per output */
  int n_ref;
  exec *x;                  /* program_compile */
} program;

/* path ending in .onnx: the ONNX importer; else the text format */
temper_status program_read(program *p, const char *path, diag *d);
/* program_data: needs program_read; fills values and is_input. Without
 * input files the first parameter is the input; an ONNX model's inputs are
 * all its remaining parameters. */
temper_status program_data(program *p, const program_opts *o, diag *d);
/* program_reference: needs program_data, before program_compile */
temper_status program_reference(program *p, diag *d);
/* program_bind: binds the weights (the inputs stay parameters), as the
 * tuner's task extraction wants the model */
temper_status program_bind(program *p, diag *d);
/* program_optimize: binds the weights and runs the pipeline with po (what
 * an ahead-of-time build needs); program_compile also makes the executor
 * on `threads` threads, with the inputs set */
temper_status program_optimize(program *p, const pipeline_opts *po, diag *d);
temper_status program_compile(program *p, temper_engine *e, const pipeline_opts *po, int threads, diag *d);
/* the value given for an input by name, NULL if it is not one */
const float *program_input(const program *p, const char *name);
void program_free(program *p);   /* and zeroes it; a zeroed program frees as nothing */
#endif
