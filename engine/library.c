/* library.c: a built library, loaded and run (library.h). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "library.h"

typedef struct model_api {   /* OUT.h's functions */
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

struct built_lib {
  void *handle;
  model_api a;
  void *m;                  /* the instance */
  const char *path;
  int ni, no;
  const float **in;         /* what each input reads */
  float **owned;            /* inputs made by lib_inputs_from */
  float **out;
  size_t *isz, *osz;
};

static temper_status find_api(built_lib *l, diag *d) {
  model_api *a = &l->a;
#define SYM(field, name) *(void **)&a->field = dlsym(l->handle, name)
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
      !a->in_ndim || !a->out_ndim || !a->in_shape || !a->out_shape || !a->in_size || !a->out_size)
    return diag_fail(d, TEMPER_EINVAL, "%s: not a model built by temper (no temper_model_* API)", l->path);
  return TEMPER_OK;
}

static shape_t shape_of(int ndim, const int64_t *dims) {
  shape_t s = {ndim < 0 ? 0 : ndim > TEMPER_MAX_DIMS ? TEMPER_MAX_DIMS : ndim, {0}};
  for (int k = 0; k < s.ndim; k++) s.d[k] = dims[k];
  return s;
}

temper_status lib_open(const char *path, int threads, built_lib **out, diag *d) {
  *out = NULL;
  built_lib *l = calloc(1, sizeof *l);
  if (!l) return diag_fail(d, TEMPER_ENOMEM, "out of memory");
  l->path = path;
  char full[4096];
  snprintf(full, sizeof full, "%s%s", strchr(path, '/') ? "" : "./", path);
  temper_status s = TEMPER_OK;
  if (!(l->handle = dlopen(full, RTLD_NOW | RTLD_LOCAL))) s = diag_fail(d, TEMPER_EIO, "%s: cannot load: %s", path, dlerror());
  if (!s) s = find_api(l, d);
  if (!s) {
    l->ni = l->a.n_in(), l->no = l->a.n_out();
    l->in = calloc((size_t)l->ni + 1, sizeof *l->in);
    l->owned = calloc((size_t)l->ni + 1, sizeof *l->owned);
    l->out = calloc((size_t)l->no + 1, sizeof *l->out);
    l->isz = calloc((size_t)l->ni + 1, sizeof *l->isz);
    l->osz = calloc((size_t)l->no + 1, sizeof *l->osz);
    if (!l->in || !l->owned || !l->out || !l->isz || !l->osz) s = diag_fail(d, TEMPER_ENOMEM, "out of memory");
  }
  for (int i = 0; !s && i < l->ni; i++) l->isz[i] = l->a.in_size(i);
  for (int i = 0; !s && i < l->no; i++)
    if (!(l->out[i] = malloc(sizeof(float) * ((l->osz[i] = l->a.out_size(i)) + 1)))) s = diag_fail(d, TEMPER_ENOMEM, "out of memory");
  if (!s && !(l->m = l->a.create(threads))) s = diag_fail(d, TEMPER_EINVAL, "%s: %s", path, l->a.create_error());
  if (s) {
    lib_close(l);
    return s;
  }
  *out = l;
  return TEMPER_OK;
}

void lib_close(built_lib *l) {
  if (!l) return;
  if (l->m) l->a.destroy(l->m);
  for (int i = 0; l->owned && i < l->ni; i++) free(l->owned[i]);
  for (int i = 0; l->out && i < l->no; i++) free(l->out[i]);
  free(l->in), free(l->owned), free(l->out), free(l->isz), free(l->osz);
  if (l->handle) dlclose(l->handle);
  free(l);
}

int lib_num_inputs(const built_lib *l) { return l->ni; }
const char *lib_input_name(const built_lib *l, int i) { return l->a.in_name(i); }
int lib_num_outputs(const built_lib *l) { return l->no; }
void lib_set_input(built_lib *l, int i, const float *data) { l->in[i] = data; }

temper_status lib_inputs_from(built_lib *l, const program_opts *o, diag *d) {
  for (int k = 0; k < o->n_inputs; k++) {
    int known = 0;
    for (int i = 0; i < l->ni; i++) known |= !strcmp(o->input_names[k], l->a.in_name(i));
    if (!known) return diag_fail(d, TEMPER_EINVAL, "--input %s: the library has no such input", o->input_names[k]);
  }
  for (int i = 0; i < l->ni; i++) {
    shape_t s = shape_of(l->a.in_ndim(i), l->a.in_shape(i));
    const char *file = NULL;
    for (int k = 0; k < o->n_inputs; k++)
      if (!strcmp(o->input_names[k], l->a.in_name(i))) file = o->input_files[k];
    free(l->owned[i]);
    l->owned[i] = NULL;
    if (file) {
      shape_t fs;
      char err[512];
      if (npy_read(file, &fs, &l->owned[i], err, sizeof err)) return diag_fail(d, TEMPER_EINVAL, "%s", err);
      if (!shape_eq(&fs, &s)) return diag_fail(d, TEMPER_EINVAL, "%s: shape does not match input %s", file, l->a.in_name(i));
    } else {   /* the same seeded data as `temper run MODEL` */
      if (!(l->owned[i] = malloc(sizeof(float) * (l->isz[i] + 1)))) return diag_fail(d, TEMPER_ENOMEM, "out of memory");
      data_random_param(l->owned[i], &s, o->seed ^ data_hash_name(l->a.in_name(i)), 1, 0);
    }
    l->in[i] = l->owned[i];
  }
  return TEMPER_OK;
}

temper_status lib_run(built_lib *l, diag *d) {
  for (int i = 0; i < l->ni; i++)
    if (!l->in[i]) return diag_fail(d, TEMPER_EINVAL, "%s: input %s has no data", l->path, l->a.in_name(i));
  if (l->a.run(l->m, l->in, l->isz, l->out, l->osz)) return diag_fail(d, TEMPER_EINVAL, "%s: %s", l->path, l->a.error(l->m));
  return TEMPER_OK;
}

const float *lib_output(const built_lib *l, int i, shape_t *shape) {
  if (i < 0 || i >= l->no) return NULL;
  if (shape) *shape = shape_of(l->a.out_ndim(i), l->a.out_shape(i));
  return l->out[i];
}
