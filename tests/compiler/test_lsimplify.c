/* test_lsimplify.c: compiler/lsimplify.c — index arithmetic simplified with
 * the loops' ranges: the rules on small cases (printed), and a property test
 * (random expressions keep their value at every point of the loops). */
#include <stdlib.h>
#include <string.h>
#include "helpers.h"
#include "loopir.h"

static int64_t floordiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/* the codegen's integer semantics: floor division and a non-negative mod */
static int64_t eval(const lexpr *e, const int64_t *vars) {
  switch (e->k) {
  case LX_INT: return e->ival;
  case LX_VAR: return vars[e->id];
  case LX_SELECT: return eval(e->c, vars) ? eval(e->a, vars) : eval(e->b, vars);
  case LX_BIN: break;
  default: fail_msg("unexpected node kind %d", e->k);
  }
  int64_t a = eval(e->a, vars), b = eval(e->b, vars);
  switch (e->op) {
  case LO_ADD: return a + b;
  case LO_SUB: return a - b;
  case LO_MUL: return a * b;
  case LO_DIV: return floordiv(a, b);
  case LO_MOD: return a - floordiv(a, b) * b;
  case LO_MIN: return a < b ? a : b;
  case LO_MAX: return a > b ? a : b;
  case LO_LT: return a < b;
  case LO_LE: return a <= b;
  case LO_EQ: return a == b;
  case LO_AND: return a && b;
  case LO_OR: return a || b;
  default: fail_msg("unexpected op %d", e->op);
  }
  return 0;
}

/* for a in [0, 10): for i in [0, 28): out[idx] = 0; the store after lf_simplify */
static lstmt *nest(lfunc *f, int a, int i, int64_t lo_i, lexpr *idx) {
  lstmt *la = ls_add(f, f->body, ls_for(f, a, lx_int(f, 0), lx_int(f, 10), LOOP_PARALLEL));
  lstmt *li = ls_add(f, la, ls_for(f, i, lx_int(f, lo_i), lx_int(f, 28), LOOP_SERIAL));
  return ls_add(f, li, ls_store(f, 0, idx, lx_flt(f, 0, 1), 1, NULL));
}

static char *printed(lfunc *f, const lexpr *e) {
  lfunc *g = lf_new("p", 16);
  g->n_vars = f->n_vars;
  memcpy(g->var_names, f->var_names, sizeof f->var_names[0] * (size_t)f->n_vars);
  ls_add(g, g->body, ls_store(g, 0, (lexpr *)e, lx_flt(g, 0, 1), 1, NULL));
  lf_buf(g, "out", 1);
  char *s = lf_print(g);
  lf_free(g);
  char *at = strstr(s, "  out[");
  char *r = strdup(at ? at + 2 : s);
  free(s);
  char *end = strstr(r, "] =");
  if (end) *end = 0;
  return r;
}

static void expect_idx(const char *what, lexpr *(*build)(lfunc *, int, int), int64_t lo_i, const char *want) {
  lfunc *f = lf_new(what, 16);
  lf_buf(f, "out", 1 << 20);
  int a = lf_var(f, "a"), i = lf_var(f, "i");
  lstmt *s = nest(f, a, i, lo_i, build(f, a, i));
  lf_simplify(f);
  char *got = printed(f, s->idx);
  if (strcmp(got, want)) fail_msg("%s: got %s, want %s", what, got, want);
  free(got);
  lf_free(f);
}

static lexpr *flat(lfunc *f, int a, int i) { return lx_add(f, lx_mul(f, lx_var(f, a), lx_int(f, 28)), lx_var(f, i)); }
static lexpr *mod_of_flat(lfunc *f, int a, int i) { return lx_bin(f, LO_MOD, flat(f, a, i), lx_int(f, 28)); }
static lexpr *div_of_flat(lfunc *f, int a, int i) { return lx_bin(f, LO_DIV, flat(f, a, i), lx_int(f, 28)); }
static lexpr *nested_div(lfunc *f, int a, int i) {
  return lx_bin(f, LO_DIV, lx_bin(f, LO_DIV, flat(f, a, i), lx_int(f, 4)), lx_int(f, 7));
}
static lexpr *nested_mod(lfunc *f, int a, int i) {
  (void)i;
  return lx_bin(f, LO_MOD, lx_bin(f, LO_MOD, lx_var(f, a), lx_int(f, 8)), lx_int(f, 4));
}
static lexpr *clamps(lfunc *f, int a, int i) {   /* a concatenate's clamp of an index in range */
  (void)a;
  return lx_bin(f, LO_MIN, lx_bin(f, LO_MAX, lx_var(f, i), lx_int(f, 0)), lx_int(f, 27));
}
static lexpr *decided(lfunc *f, int a, int i) {
  (void)i;
  return lx_select(f, lx_bin(f, LO_LT, lx_var(f, i), lx_int(f, 28)), lx_var(f, a), lx_int(f, 99));
}
static lexpr *minus(lfunc *f, int a, int i) {   /* floor semantics: (28a − 5) / 28 = a − 1 */
  (void)i;
  return lx_bin(f, LO_DIV, lx_bin(f, LO_SUB, lx_mul(f, lx_var(f, a), lx_int(f, 28)), lx_int(f, 5)), lx_int(f, 28));
}

static void test_rules(void **state) {
  (void)state;
  expect_idx("mod", mod_of_flat, 0, "out[i");
  expect_idx("div", div_of_flat, 0, "out[a");
  expect_idx("nested div", nested_div, 0, "out[a");
  expect_idx("nested mod", nested_mod, 0, "out[(a % 4)");
  expect_idx("clamps", clamps, 0, "out[i");
  expect_idx("decided select", decided, 0, "out[a");
  expect_idx("floor", minus, 0, "out[(a + -1)");
  /* i from -1: i may be negative, so (28a + i) % 28 is not i */
  expect_idx("negative range kept", mod_of_flat, -1, "out[(i % 28)");
  expect_idx("negative clamp kept", clamps, -1, "out[max(i, 0)");
}

/* a var bound by no loop around the use has no range: nothing is assumed */
static void test_unbound_var(void **state) {
  (void)state;
  lfunc *f = lf_new("unbound", 16);
  lf_buf(f, "out", 1 << 20);
  int a = lf_var(f, "a"), i = lf_var(f, "i");
  (void)lf_var(f, "free");
  lstmt *la = ls_add(f, f->body, ls_for(f, a, lx_int(f, 0), lx_int(f, 10), LOOP_SERIAL));
  lexpr *e = mod_of_flat(f, a, i);
  lstmt *s = ls_add(f, la, ls_store(f, 0, e, lx_flt(f, 0, 1), 1, NULL));
  /* i's own loop comes after: its range does not reach this store */
  ls_add(f, f->body, ls_for(f, i, lx_int(f, 0), lx_int(f, 28), LOOP_SERIAL));
  lf_simplify(f);
  char *got = printed(f, s->idx);
  assert_string_equal(got, "out[(i % 28)");
  free(got);
  lf_free(f);
}

/* a let's range is its value's: let k = a·28 + i; k / 28 → a */
static void test_let(void **state) {
  (void)state;
  lfunc *f = lf_new("let", 16);
  lf_buf(f, "out", 1 << 20);
  int a = lf_var(f, "a"), i = lf_var(f, "i"), k = lf_var(f, "k");
  lstmt *la = ls_add(f, f->body, ls_for(f, a, lx_int(f, 0), lx_int(f, 10), LOOP_SERIAL));
  lstmt *li = ls_add(f, la, ls_for(f, i, lx_int(f, 0), lx_int(f, 28), LOOP_SERIAL));
  ls_add(f, li, ls_let(f, k, lx_var(f, i)));
  lstmt *s = ls_add(f, li, ls_store(f, 0, lx_bin(f, LO_MOD, lx_var(f, k), lx_int(f, 28)), lx_flt(f, 0, 1), 1, NULL));
  lf_simplify(f);
  char *got = printed(f, s->idx);
  assert_string_equal(got, "out[k");
  free(got);
  lf_free(f);
}

enum { NV = 3 };

static lexpr *random_expr(lfunc *f, pcg32 *r, int depth) {
  uint32_t pick = pcg32_next(r) % (depth <= 0 ? 2 : 9);
  switch (pick) {
  case 0: return lx_var(f, (int)(pcg32_next(r) % NV));
  case 1: return lx_int(f, (int64_t)(pcg32_next(r) % 70) - 10);
  case 2: return lx_add(f, random_expr(f, r, depth - 1), random_expr(f, r, depth - 1));
  case 3: return lx_bin(f, LO_SUB, random_expr(f, r, depth - 1), random_expr(f, r, depth - 1));
  case 4: return lx_mul(f, random_expr(f, r, depth - 1), lx_int(f, (int64_t)(pcg32_next(r) % 64) - 3));
  case 5: return lx_bin(f, LO_DIV, random_expr(f, r, depth - 1), lx_int(f, 1 + pcg32_next(r) % 60));
  case 6: return lx_bin(f, LO_MOD, random_expr(f, r, depth - 1), lx_int(f, 1 + pcg32_next(r) % 60));
  case 7: return lx_bin(f, pcg32_next(r) % 2 ? LO_MIN : LO_MAX, random_expr(f, r, depth - 1), random_expr(f, r, depth - 1));
  default:
    return lx_select(f, lx_bin(f, pcg32_next(r) % 2 ? LO_LT : LO_LE, random_expr(f, r, depth - 1), random_expr(f, r, depth - 1)),
                     random_expr(f, r, depth - 1), random_expr(f, r, depth - 1));
  }
}

/* every random expression has the same value before and after, at every
 * point of its loops (ranges with negative starts too) */
static void test_random_expressions_keep_their_value(void **state) {
  (void)state;
  pcg32 r;
  pcg32_seed(&r, 20261203, 1);
  int changed = 0;
  for (int trial = 0; trial < 300; trial++) {
    lfunc *f = lf_new("random", 16);
    lf_buf(f, "out", 1);
    int v[NV];
    int64_t lo[NV], ext[NV];
    lstmt *at = f->body;
    for (int k = 0; k < NV; k++) {
      v[k] = lf_var(f, "v");
      lo[k] = (int64_t)(pcg32_next(&r) % 12) - 4;
      ext[k] = 1 + pcg32_next(&r) % 12;
      at = ls_add(f, at, ls_for(f, v[k], lx_int(f, lo[k]), lx_int(f, ext[k]), LOOP_SERIAL));
    }
    enum { NE = 8 };
    lexpr *before[NE];
    lstmt *st[NE];
    for (int k = 0; k < NE; k++) {
      before[k] = random_expr(f, &r, 4);
      st[k] = ls_add(f, at, ls_store(f, 0, before[k], lx_flt(f, 0, 1), 1, NULL));
    }
    lf_simplify(f);
    int64_t vals[NV];
    for (vals[0] = lo[0]; vals[0] < lo[0] + ext[0]; vals[0]++)
      for (vals[1] = lo[1]; vals[1] < lo[1] + ext[1]; vals[1]++)
        for (vals[2] = lo[2]; vals[2] < lo[2] + ext[2]; vals[2]++)
          for (int k = 0; k < NE; k++) {
            int64_t want = eval(before[k], vals), got = eval(st[k]->idx, vals);
            if (want != got) {
              char *b = printed(f, before[k]), *a = printed(f, st[k]->idx);
              fail_msg("trial %d: %s became %s: %lld vs %lld at (%lld, %lld, %lld)", trial, b, a, (long long)want,
                       (long long)got, (long long)vals[0], (long long)vals[1], (long long)vals[2]);
            }
          }
    for (int k = 0; k < NE; k++) changed += st[k]->idx != before[k];
    lf_free(f);
  }
  assert_true(changed > 300);   /* the rules fired, not only the identity */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rules),
      cmocka_unit_test(test_unbound_var),
      cmocka_unit_test(test_let),
      cmocka_unit_test(test_random_expressions_keep_their_value),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
