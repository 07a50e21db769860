/* An embedding of temper through its public API (include/temper/temper.h):
 * tune a model's conv2d workloads a little into a database, build a
 * library from it, and compile and run the model in memory with the same
 * schedules, checked against the reference interpreter.
 *
 *   embed MODEL DB OUT.so TEMPER_BINARY [TRIALS]
 *
 * TEMPER_BINARY measures the candidates in a separate process (its hidden
 * runner), so a crashing kernel cannot take this program down. */
#include <stdio.h>
#include <stdlib.h>
#include <temper/temper.h>

static int report(const char *what, temper_status s, char *err) {
  fprintf(stderr, "embed: %s: %s (%s)\n", what, err ? err : "", temper_status_str(s));
  free(err);
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: embed MODEL DB OUT.so TEMPER_BINARY [TRIALS]\n");
    return 2;
  }
  const char *model = argv[1], *db = argv[2], *out = argv[3];
  char *err = NULL;
  temper_tune_options to = {.trials = argc > 5 ? atoi(argv[5]) : 4, .runner = argv[4]};
  temper_status s = temper_tune(model, NULL, db, &to, &err);
  if (s) return report("tune", s, err);
  temper_build_options bo = {.threads = 1};
  if ((s = temper_build(model, NULL, db, out, &bo, &err))) return report("build", s, err);
  printf("built %s (%d workloads on default configs)\n", out, bo.fallbacks);
  temper_compile_options co = {.db = db, .threads = 1, .check = 1};
  temper_program *p = NULL;
  if ((s = temper_program_create(model, NULL, &co, &p, &err))) return report("compile", s, err);
  temper_program_run(p);
  for (int i = 0; i < temper_program_num_outputs(p); i++) {
    int64_t n = 0;
    const float *y = temper_program_output(p, i, &n, NULL, NULL);
    double sum = 0;
    for (int64_t k = 0; k < n; k++) sum += y[k];
    printf("output %d: %lld floats, sum %.6g\n", i, (long long)n, sum);
  }
  double rel, tol;
  if ((s = temper_program_check(p, &rel, &tol, &err))) {
    temper_program_destroy(p);
    return report("check", s, err);
  }
  printf("check: relative error %.3g (%s %.0e)\n", rel, rel <= tol ? "within" : "OVER", tol);
  temper_program_destroy(p);
  return rel <= tol ? 0 : 1;
}
