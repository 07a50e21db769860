/* data.c: PCG32 (O'Neill's pcg32_random_r) and seeded tensor data. */
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "compiler_int.h"

void pcg32_seed(pcg32 *r, uint64_t seed, uint64_t seq) {
  r->state = 0;
  r->inc = (seq << 1) | 1;
  pcg32_next(r);
  r->state += seed;
  pcg32_next(r);
}

uint32_t pcg32_next(pcg32 *r) {
  uint64_t old = r->state;
  r->state = old * 6364136223846793005ull + r->inc;
  uint32_t xorshifted = (uint32_t)(((old >> 18) ^ old) >> 27);
  uint32_t rot = (uint32_t)(old >> 59);
  return (xorshifted >> rot) | (xorshifted << ((-rot) & 31));
}

float pcg32_float(pcg32 *r) { return (float)(pcg32_next(r) >> 8) * (1.0f / 16777216.0f); }

uint64_t data_hash(const void *p, size_t n, uint64_t h) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

uint64_t data_hash_name(const char *s) { return data_hash(s, strlen(s), DATA_HASH_INIT); }

double data_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Inputs: uniform [-1, 1). Weights (rank >= 2): uniform ±sqrt(3 / fan_in), so
 * activations keep their scale through deep networks. Vectors: scales and
 * variances (rank 1, `positive`) uniform [0.5, 1.5); biases, shifts and means
 * uniform [-0.1, 0.1), so deep models give logits of a sane size. */
void data_random_param(float *dst, const shape_t *s, uint64_t seed, int is_input, int positive) {
  pcg32 r;
  pcg32_seed(&r, seed, 54);
  int64_t n = shape_numel(s);
  if (is_input) {
    for (int64_t i = 0; i < n; i++) dst[i] = pcg32_float(&r) * 2.0f - 1.0f;
  } else if (s->ndim >= 2) {
    int64_t fan_in = n / s->d[0];
    float a = sqrtf(3.0f / (float)(fan_in ? fan_in : 1));
    for (int64_t i = 0; i < n; i++) dst[i] = (pcg32_float(&r) * 2.0f - 1.0f) * a;
  } else if (positive) {
    for (int64_t i = 0; i < n; i++) dst[i] = 0.5f + pcg32_float(&r);
  } else {
    for (int64_t i = 0; i < n; i++) dst[i] = (pcg32_float(&r) * 2.0f - 1.0f) * 0.1f;
  }
}

double data_checksum(const float *x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += (double)x[i] * (double)((i % 7) + 1);
  return s;
}

double data_rel_error(const float *got, const float *want, int64_t n, double *abs_err) {
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < n; i++) {
    double a = got[i], b = want[i], e = a == b || (isnan(a) && isnan(b)) ? 0 : fabs(a - b);
    if (isnan(e)) e = INFINITY;
    if (e > worst) worst = e;
    if (isfinite(b) && fabs(b) > scale) scale = fabs(b);
  }
  if (abs_err) *abs_err = worst;
  return scale > 0 ? worst / scale : worst;
}

int data_name_positive(const char *name) {
  return strstr(name, "var") || strstr(name, "gamma") || strstr(name, "scale") || strstr(name, "std");
}

char *data_read_text(const char *path, char *err, size_t n) {
  FILE *f = fopen(path, "rb");
  if (!f) { snprintf(err, n, "%s: cannot open: %s", path, strerror(errno)); return NULL; }
  size_t cap = 1 << 16, k = 0;
  char *buf = malloc(cap);
  while (buf) {
    size_t r = fread(buf + k, 1, cap - k - 1, f);
    k += r;
    if (k + 1 < cap) break;
    char *nb = realloc(buf, cap *= 2);
    if (!nb) { free(buf); buf = NULL; }
    else buf = nb;
  }
  fclose(f);
  if (!buf) { snprintf(err, n, "%s: out of memory", path); return NULL; }
  buf[k] = 0;
  if (strlen(buf) != k) {
    snprintf(err, n, "%s: not a text file (it contains NUL bytes)", path);
    free(buf);
    return NULL;
  }
  return buf;
}

void strbuf_printf(strbuf *b, const char *fmt, ...) {
  if (b->failed) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
    va_end(ap);
    if (n < 0) { b->failed = 1; return; }
    if (b->s && b->len + (size_t)n < b->cap) { b->len += (size_t)n; return; }
    size_t nc = (b->cap ? b->cap * 2 : 1024) + (size_t)n;
    char *ns = realloc(b->s, nc);
    if (!ns) { b->failed = 1; return; }
    b->s = ns;
    b->cap = nc;
  }
}
