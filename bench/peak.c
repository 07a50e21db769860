/* peak.c: the machine's fp32 FMA peak per thread (bench/fma_peak.h): FMA
 * chains from registers, and the same with one operand broadcast from memory
 * (what conv kernels issue), at 512 bits with AVX-512, else 256 with AVX2.
 * usage: bench/peak [threads]     prints GFLOP/s per variant */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "fma_peak.h"

typedef struct job { int bcast; double gflops; } job;

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
      pthread_create(&th[i], NULL, run, &jobs[i]);
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
  return 0;
}
