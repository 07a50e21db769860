/* winograd_logits.c: what Winograd's larger tiles do to a whole network's
 * output. Compiles an ONNX model (ResNet-50 from scripts/export_models.py)
 * once with the direct default schedule everywhere, and once per tile size
 * m = 2, 4, 6 with every 3×3 stride-1 conv2d on Winograd F(m×m, 3×3), runs
 * all on the same input, and prints the largest absolute difference of the
 * outputs (the logits) against the direct build, and against the expected
 * output file when one is given.
 *
 * usage: bench/winograd_logits MODEL.onnx INPUT.npy [EXPECTED.npy] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine.h"
#include "onnx.h"
#include "space.h"

/* Winograd with tile m (and sensible blocks) wherever it applies */
static int choose_winograd(void *ctx, const char *key, const struct task_space *s, const struct conv_site *site,
                           struct sched_config *out, char *err, size_t n) {
  (void)key, (void)site, (void)err, (void)n;
  int m = *(int *)ctx;
  const tmpl_space *t = space_tmpl(s, TMPL_WINOGRAD);
  if (!m || !t) return 0;
  for (int64_t i = 0; i < t->size; i++) {   /* the first valid point with tile m, 16-channel blocks */
    sched_config c;
    space_config(s, space_tmpl_point(t, i), &c);
    if (cfg_get(s, &c, K_TILE) == m && cfg_get(s, &c, K_IC_BN) == 16 && cfg_get(s, &c, K_OC_BN) == 16 && cfg_get(s, &c, K_T_BN) >= 4 &&
        space_valid(s, &c)) {
      *out = c;
      return 1;
    }
  }
  return 0;
}

static float *run(temper_engine *e, const char *model, int m, const float *input, int64_t *count) {
  temper_graph *g = NULL;
  diag d = {0};
  if (onnx_import(model, &g, &d)) { fprintf(stderr, "%s\n", d.msg); return NULL; }
  pipeline_opts o = {.vec = e->target.vec, .choose = choose_winograd, .ctx = &m};
  exec *x = NULL;
  float *out = NULL;
  if (pipeline_optimize_with(g, &o, &d) || exec_create(e, g, 2, &x, &d)) fprintf(stderr, "%s\n", d.msg);
  else {
    exec_set_input(x, 0, input);
    exec_run(x);
    *count = shape_numel(&x->output_shapes[0]);
    out = malloc(sizeof(float) * (size_t)*count);
    if (out) memcpy(out, exec_output(x, 0), sizeof(float) * (size_t)*count);
  }
  exec_destroy(x);
  temper_graph_destroy(g);
  return out;
}

static double max_diff(const float *a, const float *b, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - (double)b[i]));
  return m;
}

int main(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "usage: bench/winograd_logits MODEL.onnx INPUT.npy [EXPECTED.npy]\n"); return 2; }
  char err[512];
  shape_t xs, es;
  float *input = NULL, *expected = NULL;
  if (npy_read(argv[2], &xs, &input, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
  if (argc > 3 && npy_read(argv[3], &es, &expected, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
  temper_engine *e = NULL;
  diag d = {0};
  if (engine_create(&e, &d)) { fprintf(stderr, "%s\n", d.msg); return 1; }
  int64_t n = 0, nm = 0;
  float *direct = run(e, argv[1], 0, input, &n);
  if (!direct) return 1;
  double scale = 0;
  for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(direct[i]));
  printf("| build | max abs diff vs direct | relative to max |logit| | max abs diff vs expected |\n|---|---|---|---|\n");
  printf("| direct | 0 | 0 | %s |\n", expected ? "" : "-");
  if (expected) printf("| direct vs expected | | | %.2e |\n", max_diff(direct, expected, n));
  int rc = 0;
  for (int m = 2; m <= 6; m += 2) {
    float *w = run(e, argv[1], m, input, &nm);
    if (!w || nm != n) { rc = 1; free(w); continue; }
    double dd = max_diff(w, direct, n);
    printf("| Winograd m=%d | %.2e | %.2e | ", m, dd, dd / scale);
    if (expected) printf("%.2e |\n", max_diff(w, expected, n));
    else printf("- |\n");
    free(w);
  }
  free(direct);
  free(input);
  free(expected);
  engine_destroy(e);
  return rc;
}
