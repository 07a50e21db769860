/* common.c: loading models and their parameters for the subcommands. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli.h"
#include "onnx.h"

double cli_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static char *read_file(const char *path) {
  char err[512];
  size_t len = 0;
  char *buf = data_read_file(path, &len, err, sizeof err);
  if (!buf) { fprintf(stderr, "temper: %s\n", err); return NULL; }
  if (strlen(buf) != len) {
    fprintf(stderr, "temper: %s: not a text model (contains NUL bytes)\n", path);
    free(buf);
    return NULL;
  }
  return buf;
}

int cli_read_model(const char *path, temper_graph **g) {
  size_t n = strlen(path);
  if (n > 5 && !strcmp(path + n - 5, ".onnx")) {
    diag d = {.path = path};
    if (onnx_import(path, g, &d)) {
      fprintf(stderr, "%s\n", d.msg);
      return 1;
    }
    return 0;
  }
  char *text = read_file(path);
  if (!text) return 1;
  char *err = NULL;
  temper_status s = temper_graph_parse(text, path, g, &err);
  free(text);
  if (s) {
    fprintf(stderr, "%s\n", err ? err : temper_status_str(s));
    free(err);
    return 1;
  }
  return 0;
}

int cli_parse_input_flag(model_data *md, const char *arg) {
  const char *eq = strchr(arg, '=');
  if (!eq || eq == arg || !eq[1]) {
    fprintf(stderr, "temper: --input expects NAME=FILE.npy, got '%s'\n", arg);
    return 1;
  }
  if (md->n_inputs == 32) { fprintf(stderr, "temper: too many --input flags\n"); return 1; }
  char *name = strndup(arg, (size_t)(eq - arg));
  if (!name) return 1;
  md->input_names[md->n_inputs] = name;
  md->input_files[md->n_inputs++] = eq + 1;
  return 0;
}

static int load_npy_for(const node *p, const char *file, float **out) {
  shape_t s;
  char err[512];
  if (npy_read(file, &s, out, err, sizeof err)) { fprintf(stderr, "temper: %s\n", err); return 1; }
  if (!shape_eq(&s, &p->ty.shape)) {
    char want[128], got[128];
    type_t tw = {.kind = TY_TENSOR, .shape = p->ty.shape}, tg = {.kind = TY_TENSOR, .shape = s};
    print_type(want, sizeof want, &tw);
    print_type(got, sizeof got, &tg);
    fprintf(stderr, "temper: %s holds %s but %%%s is %s\n", file, got, p->name, want);
    free(*out);
    *out = NULL;
    return 1;
  }
  return 0;
}

int cli_model_data(temper_graph *g, model_data *md) {
  node *fn = g->main;
  md->n_params = fn->n_params;
  md->values = calloc((size_t)fn->n_params + 1, sizeof(float *));
  md->is_input = calloc((size_t)fn->n_params + 1, sizeof(int));
  if (!md->values || !md->is_input) { fprintf(stderr, "temper: out of memory\n"); return 1; }
  for (int k = 0; k < md->n_inputs; k++) {
    int found = -1;
    for (int i = 0; i < fn->n_params; i++)
      if (!strcmp(fn->params[i]->name, md->input_names[k])) found = i;
    if (found < 0) {
      fprintf(stderr, "temper: --input %s: @main has no parameter %%%s (parameters:", md->input_names[k], md->input_names[k]);
      for (int i = 0; i < fn->n_params; i++) fprintf(stderr, " %%%s", fn->params[i]->name);
      fprintf(stderr, ")\n");
      return 1;
    }
    md->is_input[found] = 1;
    if (load_npy_for(fn->params[found], md->input_files[k], &md->values[found])) return 1;
  }
  if (md->n_inputs == 0 && fn->n_params > 0) md->is_input[0] = 1;   /* the data input comes first */
  if (g->all_inputs) {   /* ONNX: the weights are the model's own; every parameter is an input */
    for (int i = 0; i < fn->n_params; i++) md->is_input[i] = 1;
    if (md->params_dir) fprintf(stderr, "temper: --params ignored: an ONNX model carries its own weights\n");
  }
  for (int i = 0; i < fn->n_params; i++) {
    node *p = fn->params[i];
    if (md->values[i]) continue;
    if (!md->is_input[i] && md->params_dir) {
      char path[4096];
      snprintf(path, sizeof path, "%s/%s.npy", md->params_dir, p->name);
      if (load_npy_for(p, path, &md->values[i])) return 1;
      continue;
    }
    int64_t n = shape_numel(&p->ty.shape);
    md->values[i] = malloc(sizeof(float) * (size_t)(n ? n : 1));
    if (!md->values[i]) { fprintf(stderr, "temper: out of memory\n"); return 1; }
    data_random_param(md->values[i], &p->ty.shape, md->seed ^ data_hash_name(p->name), md->is_input[i],
                      data_name_positive(p->name));
  }
  return 0;
}

void cli_model_data_free(model_data *md) {
  for (int i = 0; i < md->n_params; i++) free(md->values ? md->values[i] : NULL);
  free(md->values);
  free(md->is_input);
  for (int k = 0; k < md->n_inputs; k++) free((char *)md->input_names[k]);
  md->values = NULL;
  md->is_input = NULL;
  md->n_inputs = 0;
}

int cli_bind_and_optimize(temper_graph *g, model_data *md, const pipeline_opts *o) {
  diag d = {.path = g->path, .text = g->text};
  float **bound = calloc((size_t)md->n_params + 1, sizeof(float *));
  if (!bound) { fprintf(stderr, "temper: out of memory\n"); return 1; }
  for (int i = 0; i < md->n_params; i++) bound[i] = md->is_input[i] ? NULL : md->values[i];
  temper_status s = bind_params(g, bound, &d);
  free(bound);
  if (!s) s = pipeline_optimize_with(g, o, &d);
  if (s) { fprintf(stderr, "%s\n", d.msg); return 1; }
  return 0;
}

/* --config-file: a JSON object from workload key to config (an object, or a
 * string in the short form) */
int cli_config_choose(void *ctx, const char *key, const struct task_space *s, const struct conv_site *site, struct sched_config *out, char *err, size_t n) {
  (void)site;
  json_t *root = ctx, *v = json_object_get(root, key);
  if (!v) return 0;
  char *text = json_is_string(v) ? strdup(json_string_value(v)) : json_dumps(v, JSON_COMPACT);
  if (!text) { snprintf(err, n, "out of memory"); return -1; }
  int rc = config_parse(s, text, out, err, n) ? -1 : 1;
  free(text);
  return rc;
}

json_t *cli_load_config_file(const char *path) {
  json_error_t je;
  json_t *root = json_load_file(path, 0, &je);
  if (!root) {
    fprintf(stderr, "temper: %s:%d:%d: %s\n", path, je.line, je.column, je.text);
    return NULL;
  }
  if (!json_is_object(root)) {
    fprintf(stderr, "temper: %s: expected a JSON object from workload key to config\n", path);
    json_decref(root);
    return NULL;
  }
  return root;
}
