/* run_so.c: temper run OUT.so — time a built library exactly like an
 * in-memory model: the same seeded inputs, the same report. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli.h"

typedef struct model_api {
  void *(*create)(int);
  const char *(*create_error)(void);
  void (*destroy)(void *);
  int (*run)(void *, const float *const *, const size_t *, float *const *, const size_t *);
  const char *(*error)(const void *);
  int (*n_in)(void), (*n_out)(void);
  const char *(*in_name)(int);
  int (*in_ndim)(int), (*out_ndim)(int);
  const int64_t *(*in_shape)(int), *(*out_shape)(int);
  size_t (*in_size)(int), (*out_size)(int);
} model_api;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* dlopens a built library and finds its API; NULL with the error printed */
static void *library_open(const char *path, model_api *a) {
  char full[4096];
  snprintf(full, sizeof full, "%s%s", strchr(path, '/') ? "" : "./", path);
  void *h = dlopen(full, RTLD_NOW | RTLD_LOCAL);
  if (!h) { fprintf(stderr, "temper: %s: cannot load: %s\n", path, dlerror()); return NULL; }
#define SYM(field, name) *(void **)&a->field = dlsym(h, name)
  SYM(create, "temper_model_create");
  SYM(create_error, "temper_model_create_error");
  SYM(destroy, "temper_model_destroy");
  SYM(run, "temper_model_run");
  SYM(error, "temper_model_error");
  SYM(n_in, "temper_model_num_inputs");
  SYM(n_out, "temper_model_num_outputs");
  SYM(in_name, "temper_model_input_name");
  SYM(in_ndim, "temper_model_input_ndim");
  SYM(out_ndim, "temper_model_output_ndim");
  SYM(in_shape, "temper_model_input_shape");
  SYM(out_shape, "temper_model_output_shape");
  SYM(in_size, "temper_model_input_size");
  SYM(out_size, "temper_model_output_size");
#undef SYM
  if (!a->create || !a->create_error || !a->destroy || !a->run || !a->error || !a->n_in || !a->n_out || !a->in_name ||
      !a->in_ndim || !a->out_ndim || !a->in_shape || !a->out_shape || !a->in_size || !a->out_size) {
    fprintf(stderr, "temper: %s: not a model built by temper (no temper_model_* API)\n", path);
    dlclose(h);
    return NULL;
  }
  return h;
}

static shape_t out_shape(const model_api *a, int i) {
  shape_t s = {a->out_ndim(i), {0}};
  for (int k = 0; k < s.ndim && k < TEMPER_MAX_DIMS; k++) s.d[k] = a->out_shape(i)[k];
  return s;
}

int cli_check_library(const char *path, int threads, int n_inputs, const char *const *names, const float *const *values,
                      float *const *ref, int n_ref, double tolerance) {
  model_api a;
  void *h = library_open(path, &a);
  if (!h) return 1;
  int ni = a.n_in(), no = a.n_out(), rc = 1;
  const float **in = calloc((size_t)ni + 1, sizeof(float *));
  float **out = calloc((size_t)no + 1, sizeof(float *));
  size_t *isz = calloc((size_t)ni + 1, sizeof(size_t)), *osz = calloc((size_t)no + 1, sizeof(size_t));
  void *m = NULL;
  if (!in || !out || !isz || !osz) { fprintf(stderr, "temper: out of memory\n"); goto out; }
  if (no != n_ref) { fprintf(stderr, "temper: %s has %d outputs, the model %d\n", path, no, n_ref); goto out; }
  for (int i = 0; i < ni; i++) {
    for (int k = 0; k < n_inputs && !in[i]; k++)
      if (!strcmp(names[k], a.in_name(i))) in[i] = values[k];
    if (!in[i]) { fprintf(stderr, "temper: %s: input %s is not an input of the model\n", path, a.in_name(i)); goto out; }
    isz[i] = a.in_size(i);
  }
  for (int i = 0; i < no; i++)
    if (!(out[i] = malloc(sizeof(float) * ((osz[i] = a.out_size(i)) + 1)))) { fprintf(stderr, "temper: out of memory\n"); goto out; }
  if (!(m = a.create(threads))) { fprintf(stderr, "temper: %s: %s\n", path, a.create_error()); goto out; }
  if (a.run(m, in, isz, out, osz)) { fprintf(stderr, "temper: %s: %s\n", path, a.error(m)); goto out; }
  rc = 0;
  for (int i = 0; i < no; i++) {
    double abs_err, rel = data_rel_error(out[i], ref[i], (int64_t)osz[i], &abs_err);
    int ok = rel <= tolerance;
    printf("check %s output %d: max abs error %.3g, relative error %.3g (%s %.0e)\n", path, i, abs_err, rel,
           ok ? "ok: within" : "FAILED: over", tolerance);
    if (!ok) rc = 1;
  }
out:
  if (m) a.destroy(m);
  for (int i = 0; out && i < no; i++) free(out[i]);
  free(in), free(out), free(isz), free(osz);
  dlclose(h);
  return rc;
}

int cli_run_library(const char *path, int threads, int repeat, const program_opts *o, const char *save_dir) {
  model_api a;
  void *h = library_open(path, &a);
  if (!h) return 1;
  int ni = a.n_in(), no = a.n_out(), rc = 1;
  float **in = calloc((size_t)ni + 1, sizeof(float *)), **out = calloc((size_t)no + 1, sizeof(float *));
  size_t *isz = calloc((size_t)ni + 1, sizeof(size_t)), *osz = calloc((size_t)no + 1, sizeof(size_t));
  double *times = calloc((size_t)repeat, sizeof(double));
  void *m = NULL;
  if (!in || !out || !isz || !osz || !times) goto out;
  for (int i = 0; i < ni; i++) {
    shape_t s = {a.in_ndim(i), {0}};
    for (int k = 0; k < s.ndim; k++) s.d[k] = a.in_shape(i)[k];
    isz[i] = a.in_size(i);
    const char *file = NULL;
    for (int k = 0; k < o->n_inputs; k++)
      if (!strcmp(o->input_names[k], a.in_name(i))) file = o->input_files[k];
    if (file) {
      shape_t fs;
      char err[512];
      if (npy_read(file, &fs, &in[i], err, sizeof err)) { fprintf(stderr, "temper: %s\n", err); goto out; }
      if (!shape_eq(&fs, &s)) { fprintf(stderr, "temper: %s: shape does not match input %s\n", file, a.in_name(i)); goto out; }
    } else {   /* the same seeded data as `temper run MODEL` */
      in[i] = malloc(sizeof(float) * isz[i]);
      if (!in[i]) goto out;
      data_random_param(in[i], &s, o->seed ^ data_hash_name(a.in_name(i)), 1, 0);
    }
  }
  for (int k = 0; k < o->n_inputs; k++) {
    int known = 0;
    for (int i = 0; i < ni; i++) known |= !strcmp(o->input_names[k], a.in_name(i));
    if (!known) { fprintf(stderr, "temper: --input %s: the library has no such input\n", o->input_names[k]); goto out; }
  }
  for (int i = 0; i < no; i++) {
    osz[i] = a.out_size(i);
    if (!(out[i] = malloc(sizeof(float) * osz[i]))) goto out;
  }
  if (!(m = a.create(threads))) { fprintf(stderr, "temper: %s: %s\n", path, a.create_error()); goto out; }
  printf("model: %s (a built library, %d input%s, %d output%s)\n", path, ni, ni == 1 ? "" : "s", no, no == 1 ? "" : "s");
  if (a.run(m, (const float *const *)in, isz, out, osz)) { fprintf(stderr, "temper: %s: %s\n", path, a.error(m)); goto out; }
  for (int r = 0; r < repeat; r++) {
    double t0 = data_now();
    a.run(m, (const float *const *)in, isz, out, osz);
    times[r] = data_now() - t0;
  }
  qsort(times, (size_t)repeat, sizeof(double), cmp_double);
  for (int i = 0; i < no; i++) {
    shape_t s = out_shape(&a, i);
    char ty[128];
    type_t tt = {.kind = TY_TENSOR, .shape = s};
    print_type(ty, sizeof ty, &tt);
    printf("output %d: %s checksum %.6g\n", i, ty, data_checksum(out[i], (int64_t)osz[i]));
    if (save_dir) {
      mkdir(save_dir, 0777);
      char p[4096], err[512];
      snprintf(p, sizeof p, "%s/output_%d.npy", save_dir, i);
      if (npy_write(p, &s, out[i], err, sizeof err)) { fprintf(stderr, "temper: %s\n", err); goto out; }
    }
  }
  double med = times[repeat / 2], mn = times[0], mx = times[repeat - 1];
  printf("latency: median %.3f ms, min %.3f ms, spread %.1f%% over %d runs (%d thread%s)\n", med * 1e3, mn * 1e3,
         med > 0 ? (mx - mn) / med * 100 : 0, repeat, threads, threads == 1 ? "" : "s");
  rc = 0;
out:
  if (m) a.destroy(m);
  for (int i = 0; in && i < ni; i++) free(in[i]);
  for (int i = 0; out && i < no; i++) free(out[i]);
  free(in), free(out), free(isz), free(osz), free(times);
  dlclose(h);
  return rc;
}
