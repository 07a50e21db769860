/* measure.h: building configs into object code (builder threads) and
 * measuring them in a separate runner process, so a kernel that crashes or
 * hangs costs one record, not the tuning run.
 *
 *   tuner ──request: workload, config, object code, threads, timing──▶ runner
 *         ◀──response: status, per-call seconds of every round────────
 *
 * The runner is the temper binary in a hidden mode (`temper __runner`); it
 * makes the task's data itself from fixed seeds, checks the kernel's output
 * against the reference interpreter once per config, then times it. */
#ifndef TEMPER_MEASURE_H
#define TEMPER_MEASURE_H
#include "db.h"
#include "tuner.h"

enum { MEASURE_MAX_ROUNDS = 64 };

typedef struct measure_opts {
  int threads;              /* the kernel's threads: part of the condition */
  int repeat;               /* timed rounds */
  double min_repeat_ms;     /* a round lasts at least this long */
  double timeout_s;         /* a measurement longer than this is a timeout */
  int warm;                 /* 1: every call reads the same weights (hot in cache); 0 (the
                               default): calls rotate over copies of the weights, 96 MB in
                               all, so each reads them from memory as in a whole network */
} measure_opts;

typedef struct measure_result {
  db_status status;
  int rounds;
  double times[MEASURE_MAX_ROUNDS];   /* seconds per call, per round */
  char error[256];
} measure_result;

/* runner test hooks: make a candidate misbehave on purpose */
typedef enum runner_hook { HOOK_NONE, HOOK_CRASH, HOOK_HANG, HOOK_WRONG } runner_hook;

/* The conv2d of a task under a config, as a primitive function with blocked
 * input and output, in a graph of its own (free with temper_graph_destroy). */
temper_status task_function(const tune_task *t, const sched_config *cfg, temper_graph **g, node **fn, diag *d);

typedef struct obj_code { char *data; size_t size; char name[64]; } obj_code;
/* compiles (task, config) with a builder thread's compiler */
temper_status build_object(cg_compiler *cc, int vec, const tune_task *t, const sched_config *cfg, const char *name,
                           obj_code *out, diag *d);

typedef struct runner runner;
/* starts `binary __runner`; NULL with err on failure */
runner *runner_start(const char *binary, char *err, size_t n);
void runner_stop(runner *r);
/* measures one built config; restarts the runner after a crash or hang */
measure_result runner_measure(runner *r, const tune_task *t, const sched_config *cfg, const obj_code *obj,
                              const measure_opts *o, runner_hook hook);
/* the runner's side: serves requests on stdin/stdout until EOF */
int runner_main(void);
#endif
