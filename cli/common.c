/* common.c: loading models and their parameters for the subcommands. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli.h"

int cli_data_flag(program_opts *o, int argc, char **argv, int *i) {
  const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
  if (!v || (strcmp(a, "--params") && strcmp(a, "--seed") && strcmp(a, "--input"))) return 0;
  (*i)++;
  if (!strcmp(a, "--params")) o->params_dir = v;
  else if (!strcmp(a, "--seed")) {
    char *end;
    o->seed = strtoull(v, &end, 10);
    if (*end || !*v) { fprintf(stderr, "temper: --seed expects a non-negative integer, got '%s'\n", v); return -1; }
  } else {
    const char *eq = strchr(v, '=');
    if (!eq || eq == v || !eq[1]) { fprintf(stderr, "temper: --input expects NAME=FILE.npy, got '%s'\n", v); return -1; }
    if (o->n_inputs == PROGRAM_MAX_INPUTS) { fprintf(stderr, "temper: too many --input flags\n"); return -1; }
    static char names[PROGRAM_MAX_INPUTS][256];   /* argv outlives the command; the names need their own copy */
    snprintf(names[o->n_inputs], sizeof names[0], "%.*s", (int)(eq - v), v);
    o->input_names[o->n_inputs] = names[o->n_inputs];
    o->input_files[o->n_inputs++] = eq + 1;
  }
  return 1;
}

int cli_load(const char *model, const program_opts *o, program *p) {
  diag d = {0};
  if (program_read(p, model, &d)) { fprintf(stderr, "%s\n", d.msg); return 1; }
  if (p->g->all_inputs && o->params_dir) fprintf(stderr, "temper: --params ignored: an ONNX model carries its own weights\n");
  d = (diag){.path = p->g->path, .text = p->g->text};
  if (program_data(p, o, &d)) { fprintf(stderr, "temper: %s\n", d.msg); return 1; }
  return 0;
}

int cli_compile(program *p, temper_engine *e, const pipeline_opts *po, int threads) {
  diag d = {.path = p->g->path, .text = p->g->text};
  if (program_compile(p, e, po, threads, &d)) { fprintf(stderr, "%s\n", d.msg); return 1; }
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
