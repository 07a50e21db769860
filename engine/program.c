/* program.c: a model with its data, compiled and ready to run (program.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "onnx.h"
#include "program.h"

temper_status program_read(program *p, const char *path, diag *d) {
  memset(p, 0, sizeof *p);
  size_t n = strlen(path);
  if (n > 5 && !strcmp(path + n - 5, ".onnx")) return onnx_import(path, &p->g, d);
  char err[512];
  char *text = data_read_text(path, err, sizeof err);
  if (!text) return diag_fail(d, TEMPER_EIO, "%s", err);
  char *msg = NULL;
  temper_status s = temper_graph_parse(text, path, &p->g, &msg);
  free(text);
  if (s) diag_fail(d, s, "%s", msg ? msg : temper_status_str(s));
  free(msg);
  return s;
}

/* file's array into *out, which must have p's declared shape */
static temper_status load_npy_for(const node *p, const char *file, float **out, diag *d) {
  shape_t s;
  char err[512];
  if (npy_read(file, &s, out, err, sizeof err)) return diag_fail(d, TEMPER_EINVAL, "%s", err);
  if (shape_eq(&s, &p->ty.shape)) return TEMPER_OK;
  char want[128], got[128];
  type_t tw = {.kind = TY_TENSOR, .shape = p->ty.shape}, tg = {.kind = TY_TENSOR, .shape = s};
  print_type(want, sizeof want, &tw);
  print_type(got, sizeof got, &tg);
  free(*out);
  *out = NULL;
  return diag_fail(d, TEMPER_EINVAL, "%s holds %s but %%%s is %s", file, got, p->name, want);
}

static int param_index(const node *fn, const char *name) {
  for (int i = 0; i < fn->n_params; i++)
    if (!strcmp(fn->params[i]->name, name)) return i;
  return -1;
}

/* "--input NAME: @main has no parameter %NAME (parameters: %a %b)" */
static temper_status no_such_input(const node *fn, const char *name, diag *d) {
  char list[1024] = "";
  size_t k = 0;
  for (int i = 0; i < fn->n_params && k < sizeof list; i++)
    k += (size_t)snprintf(list + k, sizeof list - k, " %%%s", fn->params[i]->name);
  return diag_fail(d, TEMPER_EINVAL, "--input %s: @main has no parameter %%%s (parameters:%s)", name, name, list);
}

temper_status program_data(program *p, const program_opts *o, diag *d) {
  node *fn = p->g->main;
  p->n_params = fn->n_params;
  p->values = calloc((size_t)fn->n_params + 1, sizeof(float *));
  p->is_input = calloc((size_t)fn->n_params + 1, sizeof(int));
  p->names = calloc((size_t)fn->n_params + 1, sizeof(char *));
  if (!p->values || !p->is_input || !p->names) return diag_fail(d, TEMPER_ENOMEM, "out of memory");
  for (int i = 0; i < fn->n_params; i++) p->names[i] = fn->params[i]->name;
  for (int k = 0; k < o->n_inputs; k++) {
    int i = param_index(fn, o->input_names[k]);
    if (i < 0) return no_such_input(fn, o->input_names[k], d);
    p->is_input[i] = 1;
    free(p->values[i]);   /* given twice: the last one */
    p->values[i] = NULL;
    temper_status s = load_npy_for(fn->params[i], o->input_files[k], &p->values[i], d);
    if (s) return s;
  }
  if (o->n_inputs == 0 && fn->n_params > 0) p->is_input[0] = 1;   /* the data input comes first */
  if (p->g->all_inputs)   /* ONNX: the weights are the model's own; every parameter is an input */
    for (int i = 0; i < fn->n_params; i++) p->is_input[i] = 1;
  for (int i = 0; i < fn->n_params; i++) {
    node *q = fn->params[i];
    if (p->values[i]) continue;
    if (!p->is_input[i] && o->params_dir) {
      char path[4096];
      snprintf(path, sizeof path, "%s/%s.npy", o->params_dir, q->name);
      temper_status s = load_npy_for(q, path, &p->values[i], d);
      if (s) return s;
      continue;
    }
    int64_t n = shape_numel(&q->ty.shape);
    if (!(p->values[i] = malloc(sizeof(float) * (size_t)(n ? n : 1)))) return diag_fail(d, TEMPER_ENOMEM, "out of memory");
    data_random_param(p->values[i], &q->ty.shape, o->seed ^ data_hash_name(q->name), p->is_input[i], data_name_positive(q->name));
  }
  return TEMPER_OK;
}

temper_status program_reference(program *p, diag *d) {
  return ref_eval_func(p->g->main, (const float *const *)p->values, &p->ref, &p->n_ref, d);
}

const float *program_input(const program *p, const char *name) {
  for (int i = 0; i < p->n_params; i++)
    if (p->is_input[i] && !strcmp(p->names[i], name)) return p->values[i];
  return NULL;
}

temper_status program_bind(program *p, diag *d) {
  float **bound = calloc((size_t)p->n_params + 1, sizeof(float *));
  if (!bound) return diag_fail(d, TEMPER_ENOMEM, "out of memory");
  for (int i = 0; i < p->n_params; i++) bound[i] = p->is_input[i] ? NULL : p->values[i];
  temper_status s = bind_params(p->g, bound, d);
  free(bound);
  return s;
}

temper_status program_optimize(program *p, const pipeline_opts *po, diag *d) {
  temper_status s = program_bind(p, d);
  return s ? s : pipeline_optimize_with(p->g, po, d);
}

temper_status program_compile(program *p, temper_engine *e, const pipeline_opts *po, int threads, diag *d) {
  temper_status s = program_optimize(p, po, d);
  if (!s) s = exec_create(e, p->g, threads, &p->x, d);
  for (int i = 0; !s && i < p->x->n_inputs; i++) {
    const float *v = program_input(p, p->x->inputs[i]->name);
    if (!v) s = diag_fail(d, TEMPER_EINTERNAL, "input %%%s of the compiled model has no value", p->x->inputs[i]->name);
    else exec_set_input(p->x, i, v);
  }
  return s;
}

void program_free(program *p) {
  exec_destroy(p->x);
  for (int i = 0; i < p->n_ref; i++) free(p->ref[i]);
  free(p->ref);
  for (int i = 0; p->values && i < p->n_params; i++) free(p->values[i]);
  free(p->values);
  free(p->is_input);
  free(p->names);
  temper_graph_destroy(p->g);
  memset(p, 0, sizeof *p);
}
