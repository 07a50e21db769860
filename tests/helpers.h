/* helpers.h: shared by the test executables. */
#ifndef TEMPER_TEST_HELPERS_H
#define TEMPER_TEST_HELPERS_H
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
#endif
