/* difftest.h: differential testing — random networks, compiled with random
 * schedule configs, against the reference interpreter.
 *
 *   seed ─ dt_generate ─▶ model text (conv2d DAGs with epilogues, pools,
 *          concat, dense, softmax)
 *        ─ dt_check ─▶ reference interpreter on seeded data
 *                   └▶ bind → passes (each conv2d workload gets a config
 *                      from the chooser of the mode) → kernels → run
 *                   ─▶ compare every output; the configs used, as JSON
 *
 * Everything is seeded by PCG32: the same seed gives the same network, the
 * same configs and the same data, so a mismatch is replayed with
 *   temper run case.relay --config-file case.json --seed S --check
 * (dt_write_case writes both files and prints that line). */
#ifndef TEMPER_DIFFTEST_H
#define TEMPER_DIFFTEST_H
#include <stdint.h>
#include "engine.h"

typedef struct dt_gen_opts {
  int max_ops;        /* ops before the head (each conv2d with its epilogue counts one) */
  int max_hw;         /* largest input height / width */
  int max_channels;   /* largest channel count of the input and of a conv2d */
} dt_gen_opts;
extern const dt_gen_opts dt_gen_defaults;

/* A random network in the text format; malloc'd, NULL out of memory. Its
 * first parameter is the input, the others weights. */
char *dt_generate(uint64_t seed, const dt_gen_opts *o);

typedef enum dt_mode {
  DT_DEFAULT,         /* every conv2d its template's default config */
  DT_RANDOM,          /* a random valid config of the whole space (algorithm included) */
  DT_MIXED_BLOCKS,    /* random, preferring an input block the producer does not have:
                         neighbouring convs with different channel blocks */
  DT_MODE_COUNT
} dt_mode;
extern const char *const dt_mode_names[DT_MODE_COUNT];

typedef struct dt_result {
  int n_kernels;      /* kernels the network compiled to */
  int n_joined;       /* of them, a depthwise conv2d joined with the 1×1 it feeds (conv2d_dwpw.c) */
  int n_configs;      /* conv2d workloads given a config (non-default in the random modes) */
  int mismatch;       /* an output differs from the reference beyond tolerance */
  double rel_err;     /* worst normwise relative error over the outputs held to the tolerance */
  int ill_conditioned;  /* outputs over the tolerance but within 10× the reference's own
                           movement under rounding-level changes of the parameters (difftest.c) */
  double tolerance;   /* what the configs allow (engine_tolerance) */
  char *configs;      /* JSON object workload key → config; malloc'd, free() it */
  char detail[256];   /* which output, how far off */
} dt_result;

/* Compiles `text` with the chooser of `mode` (seeded by seed), runs it at
 * `threads` and compares with the reference interpreter. `configs` (NULL:
 * none) is a JSON object from workload key to config, as --config-file
 * takes it: those workloads get those configs, the others the mode's. A
 * mismatch is a result (r->mismatch), not an error; an error (the model or
 * the compiler refused) returns its status with the message in d. */
temper_status dt_check(temper_engine *e, const char *text, const char *configs, uint64_t seed, dt_mode mode, int threads,
                       dt_result *r, diag *d);

/* Writes DIR/NAME.relay and DIR/NAME.json and returns the command that
 * replays it (malloc'd), NULL on an I/O error (message in err). */
char *dt_write_case(const char *dir, const char *name, const char *text, const char *configs, uint64_t seed, int threads,
                    char *err, size_t n);
#endif
