/* library.h: a library made by `temper build`, loaded and ready to run —
 * for `temper run OUT.so` (timing it like an in-memory model, on the same
 * seeded inputs) and `temper build --check` (comparing it with the
 * reference). Its C API (OUT.h: temper_model_*) is found with dlsym. */
#ifndef TEMPER_LIBRARY_H
#define TEMPER_LIBRARY_H
#include "program.h"

typedef struct built_lib built_lib;
/* dlopens path and makes an instance on `threads` threads */
temper_status lib_open(const char *path, int threads, built_lib **out, diag *d);
void lib_close(built_lib *l);
int lib_num_inputs(const built_lib *l);
const char *lib_input_name(const built_lib *l, int i);
int lib_num_outputs(const built_lib *l);
/* the inputs: from o's .npy files by name, else seeded as `temper run
 * MODEL --seed` makes them (the library's own copies) */
temper_status lib_inputs_from(built_lib *l, const program_opts *o, diag *d);
/* input i reads `data` (borrowed; it must hold the input's size) */
void lib_set_input(built_lib *l, int i, const float *data);
temper_status lib_run(built_lib *l, diag *d);
/* output i of the last run, with its shape */
const float *lib_output(const built_lib *l, int i, shape_t *shape);
#endif
