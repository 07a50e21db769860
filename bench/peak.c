/* peak.c: the machine's fp32 FMA peak per thread (bench/fma_peak.h): FMA
 * chains from registers, and the same with one operand broadcast from memory
 * (what conv kernels issue), at 512 bits with AVX-512, else 256 with AVX2;
 * then the rate at which the threads read memory (256 MB, split between
 * them: far past any L3 here), the bound of a layer whose weights come
 * from memory in a whole network.
 * usage: bench/peak [threads]     prints GFLOP/s per variant, then GB/s */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fma_peak.h"

typedef struct job { int bcast; double gflops; } job;

/* one thread's part of the memory read: the sum of its words (integers,
 * so the compiler may vectorise and reorder it); bytes per second of the
 * fastest of 5 passes */
typedef struct part { const uint32_t *p; size_t n; double bytes_s; uint32_t sum; } part;
static volatile uint32_t read_sink;
static void *read_part(void *arg) {
  part *q = arg;
  double best = 0;
  for (int pass = 0; pass < 5; pass++) {
    uint32_t s = 0;
    double t0 = fma_peak_now();
    for (size_t i = 0; i < q->n; i++) s += q->p[i];
    double r = (double)q->n * sizeof *q->p / (fma_peak_now() - t0);
    if (r > best) best = r;
    q->sum += s;
  }
  q->bytes_s = best;
  return NULL;
}

static void *run(void *arg) {
  job *j = arg;
  j->gflops = fma_peak_thread(j->bcast);
  return NULL;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  if (threads < 1 || threads > 64) {
    fprintf(stderr, "peak: threads must be 1..64, got '%s'\n", argv[1]);
    return 2;
  }
  int bits = fma_peak_bits();
  if (!bits) {
    fprintf(stderr, "peak: this CPU has neither AVX-512F nor AVX2+FMA; no FMA peak to measure\n");
    return 1;
  }
  for (int bcast = 0; bcast < 2; bcast++) {
    pthread_t th[64];
    job jobs[64];
    for (int i = 0; i < threads; i++) {
      jobs[i].bcast = bcast;
      if (pthread_create(&th[i], NULL, run, &jobs[i])) {
        fprintf(stderr, "peak: cannot start FMA thread %d of %d\n", i + 1, threads);
        return 1;
      }
    }
    double total = 0;
    for (int i = 0; i < threads; i++) {
      pthread_join(th[i], NULL);
      total += jobs[i].gflops;
    }
    char name[64];
    snprintf(name, sizeof name, "%d-bit FMA, %s", bits, bcast ? "broadcast from memory" : "registers");
    printf("%-40s %d thread%s: %7.1f GFLOP/s\n", name, threads, threads > 1 ? "s" : "", total);
  }
  size_t n = (size_t)64 << 20;   /* 256 MB of words */
  uint32_t *mem = malloc(n * sizeof *mem);
  if (!mem) {
    fprintf(stderr, "peak: cannot allocate 256 MB for the memory read\n");
    return 1;
  }
  for (size_t i = 0; i < n; i++) mem[i] = (uint32_t)(i & 7);
  pthread_t th[64];
  part parts[64];
  for (int i = 0; i < threads; i++) {
    parts[i] = (part){mem + n / (size_t)threads * (size_t)i, n / (size_t)threads, 0, 0};
    if (pthread_create(&th[i], NULL, read_part, &parts[i])) {
      fprintf(stderr, "peak: cannot start memory-read thread %d of %d\n", i + 1, threads);
      return 1;
    }
  }
  double bytes_s = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join(th[i], NULL);
    bytes_s += parts[i].bytes_s;
    read_sink += parts[i].sum;
  }
  free(mem);
  printf("%-40s %d thread%s: %7.1f GB/s\n", "memory read (256 MB)", threads, threads > 1 ? "s" : "", bytes_s * 1e-9);
  return 0;
}
