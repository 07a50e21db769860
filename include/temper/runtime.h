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
/* Runs fn over [0, n) and returns when all of it is done. Each thread owns
 * one contiguous share (the same for the same n) and runs it in chunks;
 * a thread that finishes early runs chunks of the others' shares. Every
 * index is run exactly once. pool == NULL runs fn(ctx, 0, n) inline. */
void temper_parallel_for(temper_pool *p, temper_task_fn fn, void *ctx, int64_t n);
/* Inside fn: the begin of this thread's first chunk of the current loop,
 * or -1 in a later chunk. */
int64_t temper_task_first(void);
/* The weights the next parallel loop's kernel reads (cur) and those of the
 * kernel after it (next): the loop's threads prefetch them a little at a
 * time, as its kernel runs (the loop IR's prefetch_next), so the stream
 * from memory overlaps compute instead of stalling. Each thread fetches
 * what it will read of cur (its n-th, as a kernel split over output
 * channels reads it) a lead ahead (temper_prefetch_lead); the first lead
 * came with the loop before — then the first lead of its part of next
 * (more evicts what the running kernel reads). Used by one loop; NULLs
 * clear it. */
void temper_pool_prefetch(temper_pool *p, const void *cur, int64_t cur_bytes, const void *next, int64_t next_bytes);
/* The lead in bytes on a core with an L2 of l2 bytes (≤ 0: not known):
 * half of it, at most 512 KB; 64 KB from 2 MB on (Intel's server cores,
 * whose own L2 prefetcher keeps up; runtime/pool.c has the measurements). */
int64_t temper_prefetch_lead(long l2);
/* Inside fn, for compiled kernels: this thread's part of that data, from
 * *at (where it got to) to *end, and the lines of the whole; a kernel
 * prefetches it inline and hands back where it got to at its return. The
 * part is two ranges at most; the second starts at an entry after the
 * first is done. */
void temper_prefetch_state(const char **at, const char **end, int64_t *lines);
void temper_prefetch_save(const char *at);

/* The signature of every compiled kernel: args[0..n_in) are the inputs,
 * args[n_in] the output, all float32. */
typedef void (*temper_kernel_fn)(float *const *args, temper_pool *pool);
#endif
