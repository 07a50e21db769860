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
#include <unistd.h>
#include "compiler_int.h"

static inline char *read_text(const char *rel) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", TEMPER_SOURCE_DIR, rel);
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

/* ---- a compile engine shared by a test executable (group setup/teardown) ---- */
#ifdef TEMPER_ENGINE_H
static temper_engine *engine;
static inline int engine_setup(void **state) {
  (void)state;
  diag d = {0};
  return engine_create(&engine, &d) == TEMPER_OK ? 0 : -1;
}
static inline int engine_teardown(void **state) {
  (void)state;
  engine_destroy(engine);
  return 0;
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
