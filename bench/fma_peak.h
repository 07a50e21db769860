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
#include <time.h>

#define FMA_PEAK_ITERS 20000000L
#define FMA_ACC24(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) \
                     X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23)
#define FMA_ACC12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

static volatile float fma_peak_sink;

static double fma_peak_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- 512-bit ---- */
__attribute__((target("avx512f"))) static double fma_peak_512(int bcast) {
  float mem[32];
  for (int i = 0; i < 32; i++) mem[i] = 1e-3f * (float)i;
  __m512 b = _mm512_set1_ps(1e-3f), c = _mm512_set1_ps(0.999f);
#define FMA_DECL512(i) __m512 a##i = _mm512_set1_ps((float)i);
  FMA_ACC24(FMA_DECL512)
  double t0 = fma_peak_now();
  if (bcast) {
    for (long it = 0; it < FMA_PEAK_ITERS; it++) {
#define FMA_STEPB512(i) a##i = _mm512_fmadd_ps(_mm512_set1_ps(mem[i]), c, a##i);
      FMA_ACC24(FMA_STEPB512)
      __asm__ volatile("" : : : "memory");
    }
  } else {
    for (long it = 0; it < FMA_PEAK_ITERS; it++) {
#define FMA_STEP512(i) a##i = _mm512_fmadd_ps(a##i, c, b);
      FMA_ACC24(FMA_STEP512)
      __asm__ volatile("" : : : "memory");
    }
  }
  double t = fma_peak_now() - t0;
  __m512 r = _mm512_setzero_ps();
#define FMA_SUM512(i) r = _mm512_add_ps(r, a##i);
  FMA_ACC24(FMA_SUM512)
  fma_peak_sink = _mm512_reduce_add_ps(r);
  return (double)FMA_PEAK_ITERS * 24 * 16 * 2 / t * 1e-9;
}

/* ---- 256-bit ---- */
__attribute__((target("avx2,fma"))) static double fma_peak_256(int bcast) {
  float mem[16];
  for (int i = 0; i < 16; i++) mem[i] = 1e-3f * (float)i;
  __m256 b = _mm256_set1_ps(1e-3f), c = _mm256_set1_ps(0.999f);
#define FMA_DECL256(i) __m256 a##i = _mm256_set1_ps((float)i);
  FMA_ACC12(FMA_DECL256)
  double t0 = fma_peak_now();
  if (bcast) {
    for (long it = 0; it < FMA_PEAK_ITERS; it++) {
#define FMA_STEPB256(i) a##i = _mm256_fmadd_ps(_mm256_broadcast_ss(&mem[i]), c, a##i);
      FMA_ACC12(FMA_STEPB256)
      __asm__ volatile("" : : : "memory");
    }
  } else {
    for (long it = 0; it < FMA_PEAK_ITERS; it++) {
#define FMA_STEP256(i) a##i = _mm256_fmadd_ps(a##i, c, b);
      FMA_ACC12(FMA_STEP256)
      __asm__ volatile("" : : : "memory");
    }
  }
  double t = fma_peak_now() - t0;
  __m256 r = _mm256_setzero_ps();
#define FMA_SUM256(i) r = _mm256_add_ps(r, a##i);
  FMA_ACC12(FMA_SUM256)
  float lanes[8];
  _mm256_storeu_ps(lanes, r);
  fma_peak_sink = lanes[0] + lanes[7];
  return (double)FMA_PEAK_ITERS * 12 * 8 * 2 / t * 1e-9;
}

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
