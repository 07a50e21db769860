/* aot.h: ahead-of-time builds. A fused graph becomes one object file with
 * every kernel and the packed weights, a generated C executor that calls the
 * kernels in order over a statically planned arena, and the runtime's thread
 * pool, linked by the system compiler into a shared library that needs only
 * libc, libm and pthreads. */
#ifndef TEMPER_AOT_H
#define TEMPER_AOT_H
#include "engine.h"

typedef struct aot_opts {
  const char *out;          /* OUT.so (OUT.h and maybe OUT.params beside it) */
  const char *emit;         /* NULL: a library; "obj", "asm", "llvm", "loops": that instead, to `out` */
  double embed_limit_mb;    /* weights larger than this go to OUT.params */
  const char *model_name;   /* for the header's comments */
  const char *cc;           /* the system compiler (default "cc") */
} aot_opts;

typedef struct aot_report {
  int n_steps, n_kernels;
  int64_t arena_bytes;      /* planned, with reuse */
  int64_t intermediate_bytes;   /* the sum of all intermediates */
  int64_t params_bytes;
  int params_embedded;
} aot_report;

/* aot_build: needs a fused graph whose weights are bound */
temper_status aot_build(const cg_target *t, temper_graph *g, const aot_opts *o, aot_report *rep, diag *d);
#endif
