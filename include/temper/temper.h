/* temper.h: the public C API of the temper compiler.
 * Opaque handles, temper_<noun>_<verb> names, strict create/destroy pairs;
 * destroy(NULL) does nothing. Every call that can fail returns a status and
 * leaves a message retrievable from the handle (or an out-parameter). */
#ifndef TEMPER_H
#define TEMPER_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum temper_status {
  TEMPER_OK = 0,
  TEMPER_EINVAL,       /* bad user input: model text, attribute, shape, file */
  TEMPER_EUNSUPPORTED, /* valid input temper does not handle */
  TEMPER_ENOMEM,
  TEMPER_ELLVM,        /* LLVM failed to compile or link */
  TEMPER_EDB,
  TEMPER_EIO,
  TEMPER_EINTERNAL     /* a bug in temper */
} temper_status;

const char *temper_status_str(temper_status s);

#define TEMPER_MAX_DIMS 6

typedef struct temper_graph temper_graph;    /* a parsed model and its arena */
typedef struct temper_engine temper_engine;  /* compile engine: JIT + kernel cache */

/* Parse a model in the Relay-like text format. `path` names it in errors.
 * On failure *graph is NULL and *err (free with free()) holds
 * "path:line:col: error: ..." with the offending line shown. */
temper_status temper_graph_parse(const char *text, const char *path,
                                 temper_graph **graph, char **err);
void temper_graph_destroy(temper_graph *g);
/* The model text of the graph's current state; free() the result. */
char *temper_graph_print(const temper_graph *g);

/* ---- embedding temper: compile, tune, build, run (api/temper.c) ----
 * The same steps as the temper command, for a program: every call returns
 * a status and, on failure, a message in *err (free with free(); err may
 * be NULL). */

/* A model's data: weights from params_dir (DIR/NAME.npy) or seeded random
 * data (seed); inputs from .npy files by name, or seeded. NULL: seed 1. */
typedef struct temper_data {
  const char *params_dir;
  uint64_t seed;
  int n_inputs;
  const char *const *input_names;
  const char *const *input_files;
} temper_data;

/* A model compiled in memory and run here. */
typedef struct temper_program temper_program;
typedef struct temper_compile_options {
  const char *db;           /* schedules from this tuning database, as a build at `threads` picks them; NULL: defaults */
  int threads;              /* 0: 1 */
  int check;                /* also evaluate the model with the reference interpreter (temper_program_check) */
  int no_pretuned;          /* with db: not the shipped pre-tuned logs where db has no record */
} temper_compile_options;
temper_status temper_program_create(const char *model_path, const temper_data *data, const temper_compile_options *o,
                                    temper_program **p, char **err);
void temper_program_destroy(temper_program *p);
temper_status temper_program_run(temper_program *p);
int temper_program_num_outputs(const temper_program *p);
/* output i after a run: its floats, *n of them (and its rank and shape if
 * ndim / shape are not NULL); NULL if i is out of range */
const float *temper_program_output(const temper_program *p, int i, int64_t *n, int *ndim, const int64_t **shape);
/* after a run, with check set: the worst normwise relative error against
 * the reference over the outputs, and the tolerance of the schedules used */
temper_status temper_program_check(const temper_program *p, double *rel_err, double *tolerance, char **err);

/* Tuning a model's conv2d workloads into a database (created if missing). */
typedef struct temper_tune_options {
  int trials;               /* new measurements per task (0: 64; with minutes > 0: unbounded) */
  double minutes;           /* wall-clock budget, 0: none */
  int threads;              /* the thread count measured (0: 1) */
  uint64_t seed;            /* of the search (0: 1) */
  const char *task;         /* only workloads whose key contains this, or NULL */
  const char *runner;       /* the temper binary whose hidden runner measures (NULL: /proc/self/exe) */
  void *log;                /* FILE* for progress, or NULL: quiet */
  int no_pretuned;          /* a task without records does not begin with the shipped logs' config */
} temper_tune_options;
temper_status temper_tune(const char *model_path, const temper_data *data, const char *db, const temper_tune_options *o,
                          char **err);

/* Building a library (OUT.so and OUT.h) with the best recorded schedules. */
typedef struct temper_build_options {
  int threads;              /* the thread count it will run at (0: 1) */
  int strict;               /* fail if a workload has no record */
  int no_pretuned;          /* not the shipped pre-tuned logs (docs/tuning.md) where db has no record */
  int fallbacks;            /* out: workloads that used the default config */
} temper_build_options;
temper_status temper_build(const char *model_path, const temper_data *data, const char *db, const char *out_so,
                           temper_build_options *o, char **err);

#ifdef __cplusplus
}
#endif
#endif
