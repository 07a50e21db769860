/* main.c: a C program using a model built by `temper build`.
 *
 *   temper build examples/resnet18.relay -o model.so
 *   cc -O2 -I. examples/c_app/main.c model.so -Wl,-rpath,'$ORIGIN' -o classify
 *   ./classify input.npy          # prints the top-5 classes
 *
 * The input is a NumPy .npy file (float32, C order) of the model's input
 * shape; with no file, a fixed pattern is used. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model.h"

/* a minimal .npy reader: float32, little-endian, C order */
static float *read_npy(const char *path, size_t want) {
  FILE *f = fopen(path, "rb");
  if (!f) { perror(path); return NULL; }
  unsigned char head[10];
  if (fread(head, 1, 10, f) != 10 || memcmp(head, "\x93NUMPY", 6) || head[6] != 1) {
    fprintf(stderr, "%s: not a version-1 .npy file\n", path);
    fclose(f);
    return NULL;
  }
  size_t hlen = head[8] | (size_t)head[9] << 8;
  char *dict = calloc(1, hlen + 1);
  if (!dict || fread(dict, 1, hlen, f) != hlen || !strstr(dict, "'<f4'")) {
    fprintf(stderr, "%s: expected a float32 array\n", path);
    free(dict);
    fclose(f);
    return NULL;
  }
  free(dict);
  float *x = malloc(sizeof(float) * want);
  size_t got = x ? fread(x, sizeof(float), want, f) : 0;
  fclose(f);
  if (got != want) {
    fprintf(stderr, "%s: expected %zu floats, found %zu\n", path, want, got);
    free(x);
    return NULL;
  }
  return x;
}

int main(int argc, char **argv) {
  if (temper_model_num_inputs() != 1) { fprintf(stderr, "this example feeds models with one input\n"); return 1; }
  size_t n_in = temper_model_input_size(0), n_out = temper_model_output_size(0);
  float *x = NULL;
  if (argc > 1) x = read_npy(argv[1], n_in);
  else if ((x = malloc(sizeof(float) * n_in)))
    for (size_t i = 0; i < n_in; i++) x[i] = (float)((i * 7919) % 255) / 255.0f - 0.5f;
  float *y = malloc(sizeof(float) * n_out);
  if (!x || !y) return 1;
  temper_model *m = temper_model_create(1);
  if (!m) { fprintf(stderr, "cannot create the model: %s\n", temper_model_create_error()); return 1; }
  const float *ins[1] = {x};
  float *outs[1] = {y};
  if (temper_model_run(m, ins, &n_in, outs, &n_out)) { fprintf(stderr, "run failed: %s\n", temper_model_error(m)); return 1; }
  printf("input %s: %zu floats; output: %zu classes\ntop-5:\n", temper_model_input_name(0), n_in, n_out);
  for (int k = 0; k < 5 && k < (int)n_out; k++) {   /* pick the k-th largest */
    size_t best = 0;
    for (size_t i = 1; i < n_out; i++)
      if (y[i] > y[best]) best = i;
    printf("  class %4zu  %.6f\n", best, y[best]);
    y[best] = -1e30f;
  }
  temper_model_destroy(m);
  free(x);
  free(y);
  return 0;
}
