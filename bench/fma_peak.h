/* fma_peak.h: the fp32 FMA peak of one thread, shared by bench/peak and
 * bench/conv2d. Independent FMA chains from registers, or with one operand
 * broadcast from memory (what conv kernels issue), at the widest vector the
 * running CPU has: 24 chains of 512-bit FMAs with AVX-512, 12 chains of
 * 256-bit FMAs with AVX2 + FMA (16 ymm registers; 12 chains still cover two
 * FMA pipes of 4-5 cycles latency). A CPU with neither gets 0 and a message
 * instead of an illegal instruction. */
#ifndef TEMPER_BENCH_FMA_PEAK_H
#define TEMPER_BENCH_FMA_PEAK_H

#include <immintrin.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define FMA_PEAK_ITERS 20000000L
/* X(i, ...) for each chain i, the rest of the arguments passed on */
#define FMA_ACC24(X, ...) \
    X(0, __VA_ARGS__) X(1, __VA_ARGS__) X(2, __VA_ARGS__) X(3, __VA_ARGS__) X(4, __VA_ARGS__) X(5, __VA_ARGS__) \
    X(6, __VA_ARGS__) X(7, __VA_ARGS__) X(8, __VA_ARGS__) X(9, __VA_ARGS__) X(10, __VA_ARGS__) X(11, __VA_ARGS__) \
    X(12, __VA_ARGS__) X(13, __VA_ARGS__) X(14, __VA_ARGS__) X(15, __VA_ARGS__) X(16, __VA_ARGS__) X(17, __VA_ARGS__) \
    X(18, __VA_ARGS__) X(19, __VA_ARGS__) X(20, __VA_ARGS__) X(21, __VA_ARGS__) X(22, __VA_ARGS__) X(23, __VA_ARGS__)
#define FMA_ACC12(X, ...) \
    X(0, __VA_ARGS__) X(1, __VA_ARGS__) X(2, __VA_ARGS__) X(3, __VA_ARGS__) X(4, __VA_ARGS__) X(5, __VA_ARGS__) \
    X(6, __VA_ARGS__) X(7, __VA_ARGS__) X(8, __VA_ARGS__) X(9, __VA_ARGS__) X(10, __VA_ARGS__) X(11, __VA_ARGS__)

static volatile float fma_peak_sink;

static double fma_peak_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One width's measurement as a function NAME compiled for TARGET: V the
 * vector type, LANES floats in it; SET1, FMADD, BCAST (a float's address
 * to a vector) and ADD its intrinsics; ACC the chains, N their count. */
#define FMA_DECL(i, V, SET1, FMADD, BCAST, ADD) V a##i = SET1((float)i);
#define FMA_STEP(i, V, SET1, FMADD, BCAST, ADD) a##i = FMADD(a##i, c, b);
#define FMA_STEPB(i, V, SET1, FMADD, BCAST, ADD) a##i = FMADD(BCAST(&mem[i]), c, a##i);
#define FMA_SUM(i, V, SET1, FMADD, BCAST, ADD) r = ADD(r, a##i);
#define FMA_PEAK_FN(NAME, TARGET, V, LANES, ACC, N, ...)                                   \
  __attribute__((target(TARGET))) static double NAME(int bcast) {                          \
    float mem[32];                                                                         \
    for (int i = 0; i < 32; i++) mem[i] = 1e-3f * (float)i;                                \
    V b, c, r;                                                                             \
    FMA_PEAK_SET(b, 1e-3f, __VA_ARGS__);                                                   \
    FMA_PEAK_SET(c, 0.999f, __VA_ARGS__);                                                  \
    ACC(FMA_DECL, V, __VA_ARGS__)                                                          \
    double t0 = fma_peak_now();                                                            \
    for (long it = 0; it < FMA_PEAK_ITERS; it++) {                                         \
      if (bcast) { ACC(FMA_STEPB, V, __VA_ARGS__) }                                        \
      else { ACC(FMA_STEP, V, __VA_ARGS__) }                                               \
      __asm__ volatile("" : : : "memory");                                                 \
    }                                                                                      \
    double gflops = (double)FMA_PEAK_ITERS * N * LANES * 2 / (fma_peak_now() - t0) * 1e-9; \
    FMA_PEAK_SET(r, 0.0f, __VA_ARGS__);                                                    \
    ACC(FMA_SUM, V, __VA_ARGS__)                                                           \
    float lanes[LANES];                                                                    \
    memcpy(lanes, &r, sizeof lanes);                                                       \
    fma_peak_sink = lanes[0] + lanes[LANES - 1];                                           \
    return gflops;                                                                         \
  }
#define FMA_PEAK_SET(x, v, SET1, FMADD, BCAST, ADD) x = SET1(v)
#define FMA_BCAST512(p) _mm512_set1_ps(*(p))

FMA_PEAK_FN(fma_peak_512, "avx512f", __m512, 16, FMA_ACC24, 24, _mm512_set1_ps, _mm512_fmadd_ps, FMA_BCAST512, _mm512_add_ps)
FMA_PEAK_FN(fma_peak_256, "avx2,fma", __m256, 8, FMA_ACC12, 12, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_broadcast_ss, _mm256_add_ps)

/* The vector width fma_peak_thread uses on this CPU, in bits; 0: neither. */
static int fma_peak_bits(void) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return 512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 256;
  return 0;
}

/* GFLOP/s of one thread at the widest width; bcast: one operand from memory. */
static double fma_peak_thread(int bcast) {
  switch (fma_peak_bits()) {
  case 512: return fma_peak_512(bcast);
  case 256: return fma_peak_256(bcast);
  default: return 0;
  }
}

#endif
