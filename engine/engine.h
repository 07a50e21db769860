/* engine.h: the compile engine (lower primitive functions to cached
 * kernels) and the in-memory graph executor. */
#ifndef TEMPER_ENGINE_H
#define TEMPER_ENGINE_H
#include "codegen.h"
#include "compiler_int.h"

typedef struct kernel {
  char name[96];          /* fused_<ops>_<hash> */
  uint64_t hash;
  char *key;              /* canonical text of the primitive function + target */
  temper_kernel_fn fn;
  char *loops;            /* printed loop IR */
  int n_inputs;
  double flops;           /* of the master op */
  char workload[192];     /* a conv2d master's workload key (what a chooser is asked for), or "" */
} kernel;

struct temper_engine {
  cg_target target;
  cg_jit *jit;
  kernel **cache;         /* every kernel compiled so far */
  int n_cache, cap;
  int n_compiled, n_hits; /* counters for tests and reports */
};

temper_status engine_create(temper_engine **out, diag *d);
/* An engine compiling for target t instead of the host, whose kernels run
 * here: t's vectors must be no wider than the host's (tests and the
 * differential tester run AVX2 code on AVX-512 machines this way). */
temper_status engine_create_for(temper_engine **out, const cg_target *t, diag *d);
void engine_destroy(temper_engine *e);
/* engine_lower: a primitive function → one kernel; any other function → the
 * kernels of the primitive functions it calls, in call order (repeats share
 * one cached kernel). *out is malloc'd; the kernels belong to the engine. */
temper_status engine_lower(temper_engine *e, const node *fn, kernel ***out, int *n_out, diag *d);
/* engine_lower_one: one primitive function → its loop IR (no codegen): a
 * conv2d by its config — the one the layout pass attached, or, in a fused
 * program written by hand, its schedule attribute parsed here */
temper_status engine_lower_one(const node *fn, const cg_target *t, const char *name, lfunc **out, diag *d);
double engine_flops(const node *master);
/* engine_tolerance: needs a fused graph; the normwise relative error its
 * kernels may show against the reference interpreter: 1e-4, or more where
 * a Winograd tile's transforms round more (winograd_tolerance) */
double engine_tolerance(const temper_graph *g);
void engine_kernel_name(const node *fn, uint64_t h, char *out, size_t n);

/* ---- executor.c ---- */
/* engine_plan: offsets (in floats, at 64-byte boundaries) for n buffers,
 * buffer i written at step first[i] and last read at step last[i]:
 * buffers whose lives do not overlap share space (largest first, each at
 * the lowest offset clear of the placed ones it overlaps). Returns the
 * floats the plan needs. What a built library's arena and the executor
 * both use, so refine measures the memory the library runs in. */
int64_t engine_plan(int n, const int64_t *size, const int *first, const int *last, int64_t *offset);
typedef struct exec_step {
  kernel *k;
  float **argv;
  int n_args;
  const float *w;           /* its largest weights, and those of the next step that has any: */
  int64_t w_bytes;          /* prefetched during this one (temper_pool_prefetch) */
  const float *next_w;
  int64_t next_w_bytes;
} exec_step;
typedef struct exec {
  int n_bufs;
  float **bufs;             /* all in block (executor.c) */
  int64_t *sizes;
  int n_steps;
  exec_step *steps;
  int n_inputs;             /* main's remaining parameters */
  const node **inputs;
  int *input_bufs;
  int n_outputs;
  int *output_bufs;
  shape_t *output_shapes;
  temper_pool *pool;
  int pool_borrowed;        /* exec_share_pool: not destroyed with the exec */
  void *block;              /* the buffers' memory (mmap) */
  size_t block_len;
} exec;
/* exec_create: needs a fused graph (main calls primitive functions only) */
temper_status exec_create(temper_engine *e, temper_graph *g, int threads, exec **out, diag *d);
void exec_destroy(exec *x);
/* runs step i, prefetching the next step's weights as it computes */
void exec_run_step(exec *x, int i);
void exec_set_input(exec *x, int i, const float *data);
/* Timing, as `temper run` reports it: one warm-up call, then `repeat`
 * timed calls of run(ctx); the median, the fastest and the slowest. */
typedef struct run_timing { double median_s, min_s, max_s; int repeat; } run_timing;
temper_status engine_time(void (*run)(void *ctx), void *ctx, int repeat, run_timing *t);
/* one inference, timed per step: step_s[i] the time of step i (n_steps
 * of them); returns the whole time */
double exec_run_timed(exec *x, double *step_s);
/* whole inferences */
temper_status exec_time(exec *x, int repeat, run_timing *t);
/* per step of x (out[n_steps]): its median inside whole inferences ("in
 * sequence", with the caches the steps before left) and repeated alone
 * (hot caches); the difference is what traffic between layers costs */
typedef struct step_timing { double in_sequence_s, alone_s; } step_timing;
temper_status exec_profile(exec *x, int repeat, step_timing *out);
/* runs on p (which outlives x) instead of its own pool: programs timed
 * alternately share one set of threads, none left spinning in between */
void exec_share_pool(exec *x, temper_pool *p);
void exec_run(exec *x);
const float *exec_output(const exec *x, int i);

/* ---- pipeline.c: parse → typeinfer → simplify → fold → layout → fold → fuse ---- */
struct task_space;
struct sched_config;
/* Where a conv2d sits: the channel block its producer's layout has (0:
 * NCHW) and the input's size, so a chooser can weigh a layout transform;
 * and, where the pipeline could join it with its producer or its consumer
 * (layout_join_dw), the floats of the tensors between them that a config
 * sends through memory by not making such a join (each join's tensor
 * written and read again; 0 for a config that makes them all).
 * join_loss NULL: no join at stake. */
typedef struct conv_site {
  int in_block;
  int64_t in_floats;
  int64_t (*join_loss)(const struct conv_site *site, const struct task_space *s, const struct sched_config *c);
  const void *join_ctx;      /* for join_loss: the neighbours, as layout.c sees them */
} conv_site;
/* Chooses the schedule of a conv2d workload: 1 and *out set, 0 for the
 * template default, -1 with a message in err. */
typedef int (*sched_chooser)(void *ctx, const char *workload_key, const struct task_space *s, const conv_site *site,
                             struct sched_config *out, char *err, size_t n);
typedef struct pipeline_opts {
  int vec;                  /* target vector width in floats */
  int64_t l1d, l2;          /* the target core's caches, which the default configs fit (cg_target's; 0: this machine's) */
  sched_chooser choose;     /* NULL: defaults everywhere */
  void *ctx;
  int block_inputs;         /* test hook: convs read blocked input even from an NCHW producer */
  int no_dw_fusion;         /* keep each depthwise conv2d apart from the 1×1 it feeds and the 1×1 that feeds it */
  int no_pw_fusion;         /* keep each expand 1×1 apart from the depthwise it feeds (--no-fuse-expand) */
  int dw_fusion_all;        /* test hook: join every depthwise → 1×1 pair the template can run, whatever its size */
  int pw_fusion_all;        /* test hook: join every 1×1 → depthwise pair the template can run, whatever its
                             * size and stride (before the depthwise → 1×1 after it: fuse visits producers first) */
} pipeline_opts;
temper_status pipeline_optimize(temper_graph *g, int vec, diag *d);
temper_status pipeline_optimize_with(temper_graph *g, const pipeline_opts *o, diag *d);
temper_status layout_alter(temper_graph *g, const pipeline_opts *o, diag *d);
/* fuse_with's join for the pipeline: a depthwise conv2d joins the 1×1
 * stride-1 conv2d it feeds (one kernel, schedules/conv2d_dwpw.c), and a 1×1
 * stride-1 conv2d joins the strided depthwise it feeds (schedules/conv2d_pwdw.c),
 * where their configs read the producer's output block as it is and the
 * joined kernel pays: the producer's output is large enough that the round
 * trip leaves L2 (docs/design.md, "depthwise into the 1×1", "the expand
 * into the depthwise") */
int layout_join_dw(const node *producer, const node *consumer, void *ctx);   /* ctx: the pipeline_opts */
#endif
