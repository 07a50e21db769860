/* runtime.h: what kernels and built models call at run time.
 * Only libc and pthreads; linked into every built model. */
#ifndef TEMPER_RUNTIME_H
#define TEMPER_RUNTIME_H
#include <stdint.h>

typedef struct temper_pool temper_pool;
typedef void (*temper_task_fn)(void *ctx, int64_t begin, int64_t end);

/* A pool of n_threads workers, the caller counting as one. NULL on failure. */
temper_pool *temper_pool_create(int n_threads);
void temper_pool_destroy(temper_pool *p);
int temper_pool_threads(const temper_pool *p);
/* Runs fn over [0, n) split into one contiguous chunk per thread; returns
 * when all chunks are done. pool == NULL runs fn(ctx, 0, n) inline. */
void temper_parallel_for(temper_pool *p, temper_task_fn fn, void *ctx, int64_t n);

/* The signature of every compiled kernel: args[0..n_in) are the inputs,
 * args[n_in] the output, all float32. */
typedef void (*temper_kernel_fn)(float *const *args, temper_pool *pool);
#endif
