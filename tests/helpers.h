/* helpers.h: shared by the test executables. */
#ifndef TEMPER_TEST_HELPERS_H
#define TEMPER_TEST_HELPERS_H
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <unistd.h>
#include "codegen.h"
#include "compiler_int.h"

/* the host's vector width in floats (16 with AVX-512, 8 with AVX2, 4
 * without): a task that is compiled, run, or recorded under the host's
 * target has its space built for this width, or its configs are not the
 * host's points (an AVX2 machine allows 12 accumulators, not 28) */
static inline int host_vec(void) {
  cg_target t;
  diag d = {0};
  cg_host_target(&t, &d);
  return t.vec;
}

/* a whole file, NUL-terminated (NULL if unreadable) */
/* how many times `what` occurs in s (printed graphs and loop nests) */
static inline int count_in(const char *s, const char *what) {
  int n = 0;
  for (const char *q = s; (q = strstr(q, what)); q += strlen(what)) n++;
  return n;
}

static inline char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n) { free(s); s = NULL; }
  if (s) s[n] = 0;
  fclose(f);
  return s;
}

/* a file of the source tree */
static inline char *read_text(const char *rel) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", TEMPER_SOURCE_DIR, rel);
  return read_file(path);
}

/* parse + typeinfer; fails the test with the message on error */
static inline temper_graph *parse_ok(const char *text) {
  temper_graph *g = NULL;
  char *err = NULL;
  temper_status s = temper_graph_parse(text, "test.relay", &g, &err);
  if (s) fprintf(stderr, "unexpected error: %s\n", err);
  assert_int_equal(s, TEMPER_OK);
  free(err);
  return g;
}

/* parse + typeinfer must fail with a message containing `want` */
static inline void parse_fails(const char *text, const char *want) {
  temper_graph *g = NULL;
  char *err = NULL;
  temper_status s = temper_graph_parse(text, "bad.relay", &g, &err);
  if (s == TEMPER_OK || !err || !strstr(err, want))
    fprintf(stderr, "input:\n%s\nwanted error containing: %s\ngot: %s\n", text, want, err ? err : "(success)");
  assert_int_not_equal(s, TEMPER_OK);
  assert_null(g);
  assert_non_null(err);
  assert_non_null(strstr(err, want));
  free(err);
}

/* ---- pass tests: before/expected programs compared as printed text ---- */
/* runs passes on `before`; the result must print as `expected` does */
static inline void check_pass(const char *before, const char *expected, temper_status (*pass)(temper_graph *, diag *)) {
  temper_graph *g = parse_ok(before);
  diag d = {0};
  temper_status s = pass(g, &d);
  if (s) fprintf(stderr, "pass failed: %s\n", d.msg);
  assert_int_equal(s, TEMPER_OK);
  temper_graph *e = parse_ok(expected);
  char *got = temper_graph_print(g), *want = temper_graph_print(e);
  if (strcmp(got, want)) fprintf(stderr, "got:\n%s\nwant:\n%s\n", got, want);
  assert_string_equal(got, want);
  free(got);
  free(want);
  temper_graph_destroy(g);
  temper_graph_destroy(e);
}

/* ---- a compile engine shared by a test executable (group setup/teardown) ---- */
#ifdef TEMPER_ENGINE_H
#include "target.h"
static temper_engine *engine;
/* exit status ctest reads as "skipped" (SKIP_RETURN_CODE in tests/CMakeLists.txt) */
enum { TEST_SKIP_EXIT = 77 };
/* The engine compiles for the host, or for TEMPER_TEST_TARGET (a CPU name,
 * as `temper build --target` takes): ctest runs the template and
 * differential tests again for AVX2 (x86-64-v3) on an AVX-512 machine, whose
 * 8-float vectors and 12 accumulators give other blocks and tiles. Where the
 * host runs that width already, or cannot run it, the run is skipped. */
static inline int engine_setup(void **state) {
  (void)state;
  diag d = {0};
  const char *spec = getenv("TEMPER_TEST_TARGET");
  if (!spec || !*spec) return engine_create(&engine, &d) == TEMPER_OK ? 0 : -1;
  cg_target t;
  if (target_from_spec(spec, &t)) {
    fprintf(stderr, "TEMPER_TEST_TARGET=%s: not a known CPU\n", spec);
    return -1;
  }
  int hv = host_vec();
  if (t.vec >= hv) {
    fprintf(stderr, "TEMPER_TEST_TARGET=%s: %d-float vectors, and this machine's are %d: skipped (the host run covers it)\n", spec,
            t.vec, hv);
    exit(TEST_SKIP_EXIT);
  }
  if (engine_create_for(&engine, &t, &d)) {
    fprintf(stderr, "TEMPER_TEST_TARGET=%s: %s\n", spec, d.msg);
    return -1;
  }
  fprintf(stderr, "compiling for %s (%d-float vectors) on a machine with %d\n", spec, t.vec, hv);
  return 0;
}
static inline int engine_teardown(void **state) {
  (void)state;
  engine_destroy(engine);
  return 0;
}

/* Compiles `text` (all parameters but the first bound as weights) with the
 * pipeline options o, runs it with `threads`, and compares every output
 * with the reference interpreter: relative error (max |error| / max
 * |output|) under tol. */
static inline void check_against_reference_with(const char *text, int threads, const pipeline_opts *o, double tol) {
  temper_graph *g = parse_ok(text);
  int np = g->main->n_params;
  float **vals = calloc((size_t)np, sizeof(float *));
  for (int i = 0; i < np; i++) {
    node *p = g->main->params[i];
    vals[i] = malloc(sizeof(float) * (size_t)shape_numel(&p->ty.shape) + 4);
    data_random_param(vals[i], &p->ty.shape, 1234 + (uint64_t)i, i == 0, data_name_positive(p->name));
  }
  diag d = {0};
  float **ref = NULL;
  int n_ref = 0;
  assert_int_equal(ref_eval_func(g->main, (const float *const *)vals, &ref, &n_ref, &d), TEMPER_OK);
  float *input = vals[0];
  vals[0] = NULL;
  assert_int_equal(bind_params(g, vals, &d), TEMPER_OK);
  temper_status s = pipeline_optimize_with(g, o, &d);
  exec *x = NULL;
  if (!s) s = exec_create(engine, g, threads, &x, &d);
  if (s) fprintf(stderr, "%s\nfailed: %s\n", text, d.msg);
  assert_int_equal(s, TEMPER_OK);
  assert_int_equal(x->n_inputs, 1);
  exec_set_input(x, 0, input);
  exec_run(x);
  assert_int_equal(x->n_outputs, n_ref);
  for (int k = 0; k < n_ref; k++) {
    int64_t n = shape_numel(&x->output_shapes[k]);
    const float *got = exec_output(x, k);
    double err = 0, scale = 1e-6;
    for (int64_t i = 0; i < n; i++) {
      double e = fabs((double)got[i] - ref[k][i]);
      if (!(e <= err)) err = e;
      if (fabs(ref[k][i]) > scale) scale = fabs(ref[k][i]);
    }
    if (!(err / scale < tol)) fprintf(stderr, "%s\noutput %d: relative error %g (max abs %g)\n", text, k, err / scale, err);
    assert_true(err / scale < tol);
    free(ref[k]);
  }
  free(ref);
  exec_destroy(x);
  free(input);
  for (int i = 1; i < np; i++) free(vals[i]);
  free(vals);
  temper_graph_destroy(g);
}
#endif

/* ---- running the temper command (CLI tests) ---- */
#include <sys/wait.h>
typedef struct result { int code; char *out; } result;

/* runs a shell command in the source tree; code = exit status (128 + signal if killed) */
static inline result sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline result sh(const char *fmt, ...) {
  char cmd[8192], full[8400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  snprintf(full, sizeof full, "cd %s && %s 2>&1", TEMPER_SOURCE_DIR, cmd);
  FILE *p = popen(full, "r");
  result r = {0, calloc(1, 1 << 20)};
  size_t n = fread(r.out, 1, (1 << 20) - 1, p);
  r.out[n] = 0;
  int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

/* the command exited with `code` and said `want` (if given) */
static inline void expect(result r, int code, const char *want) {
  bool said = !want || strstr(r.out, want);
  if (r.code != code || !said)
    fprintf(stderr, "exit %d, output:\n%s\nwanted exit %d and '%s'\n", r.code, r.out, code, want ? want : "");
  free(r.out); /* before the asserts, which jump out of the test */
  assert_int_equal(r.code, code);
  assert_true(said);
}

/* a fresh scratch directory /tmp/<prefix>_<pid>, made empty; scratch_remove deletes it */
static inline void scratch_make(char *dir, size_t size, const char *prefix) {
  snprintf(dir, size, "/tmp/%s_%d", prefix, (int)getpid());
  result r = sh("rm -rf %s && mkdir -p %s", dir, dir);
  free(r.out);
}
static inline void scratch_remove(const char *dir) {
  result r = sh("rm -rf %s", dir);
  free(r.out);
}
#endif
