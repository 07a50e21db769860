/* peak.c: the machine's fp32 FMA peak per thread: 24 independent
 * accumulators of 512-bit (or 256-bit) FMAs from registers, and the same
 * with one operand broadcast from memory (what conv kernels issue).
 * usage: bench/peak [threads]     prints GFLOP/s per variant */
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define ITERS 20000000L
#define ACC24(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) \
                 X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23)

__attribute__((target("avx512f"))) static float fma512(float s) {
  __m512 b = _mm512_set1_ps(s), c = _mm512_set1_ps(0.999f);
#define DECL(i) __m512 a##i = _mm512_set1_ps((float)i);
  ACC24(DECL)
  for (long it = 0; it < ITERS; it++) {
#define STEP(i) a##i = _mm512_fmadd_ps(a##i, c, b);
    ACC24(STEP)
    __asm__ volatile("" : : : "memory");
  }
  __m512 r = _mm512_setzero_ps();
#define SUM(i) r = _mm512_add_ps(r, a##i);
  ACC24(SUM)
  return _mm512_reduce_add_ps(r);
}

__attribute__((target("avx512f"))) static float fma512_bcast(const float *mem) {
  __m512 c = _mm512_set1_ps(0.999f);
  ACC24(DECL)
  for (long it = 0; it < ITERS; it++) {
#define STEPB(i) a##i = _mm512_fmadd_ps(_mm512_set1_ps(mem[i]), c, a##i);
    ACC24(STEPB)
    __asm__ volatile("" : : : "memory");
  }
  __m512 r = _mm512_setzero_ps();
  ACC24(SUM)
  return _mm512_reduce_add_ps(r);
}

typedef struct job { int kind; double gflops; } job;
static float sink;

static void *run(void *arg) {
  job *j = arg;
  float mem[32];
  for (int i = 0; i < 32; i++) mem[i] = 1e-3f * (float)i;
  double t0 = now();
  sink += j->kind == 0 ? fma512(1e-3f) : fma512_bcast(mem);
  double t = now() - t0;
  j->gflops = (double)ITERS * 24 * 16 * 2 / t * 1e-9;
  return NULL;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  const char *names[2] = {"512-bit FMA, registers", "512-bit FMA, broadcast from memory"};
  for (int kind = 0; kind < 2; kind++) {
    pthread_t th[64];
    job jobs[64];
    for (int i = 0; i < threads; i++) {
      jobs[i].kind = kind;
      pthread_create(&th[i], NULL, run, &jobs[i]);
    }
    double total = 0;
    for (int i = 0; i < threads; i++) {
      pthread_join(th[i], NULL);
      total += jobs[i].gflops;
    }
    printf("%-40s %d thread%s: %7.1f GFLOP/s\n", names[kind], threads, threads > 1 ? "s" : "", total);
  }
  return sink == 12345.0f;
}
