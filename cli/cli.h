/* cli.h: what the subcommands share: loading a model and its data. */
#ifndef TEMPER_CLI_H
#define TEMPER_CLI_H
#include <jansson.h>
#include "engine.h"
#include "space.h"
#include "choose.h"

typedef struct model_data {
  const char *params_dir;   /* --params DIR, or NULL for seeded random data */
  uint64_t seed;
  int n_inputs;             /* --input NAME=FILE.npy */
  const char *input_names[32];
  const char *input_files[32];
  /* filled by cli_model_data: one value per @main parameter */
  int n_params;
  float **values;
  int *is_input;
} model_data;

int cli_read_model(const char *path, temper_graph **g);          /* prints the error; 0 on success */
int cli_model_data(temper_graph *g, model_data *md);              /* prints the error; 0 on success */
void cli_model_data_free(model_data *md);
/* binds the non-inputs, runs the passes with the given schedule chooser */
int cli_bind_and_optimize(temper_graph *g, model_data *md, const pipeline_opts *o);
struct conv_site;
int cli_config_choose(void *ctx, const char *key, const struct task_space *s, const struct conv_site *site, struct sched_config *out, char *err, size_t n);
json_t *cli_load_config_file(const char *path);   /* prints the error; NULL on failure */
double cli_now(void);
int cli_parse_input_flag(model_data *md, const char *arg);

/* prints the chooser's report: the schedule of every workload, the
 * fallbacks with their share of the FLOPs; returns the workloads that fell back */
int cli_print_choices(const db_chooser *dc);

int cmd_run(int argc, char **argv);
int cmd_lower(int argc, char **argv);
int cmd_space(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_db(int argc, char **argv);
int cmd_build(int argc, char **argv);
int cmd_refine(int argc, char **argv);
int cli_run_library(const char *path, int threads, int repeat, model_data *md, const char *save_dir);
/* runs a built library once on the given inputs (matched by name) and
 * compares each output with ref; prints a line per output; 0 if all are
 * within tolerance, 1 otherwise (or if it cannot be loaded or run) */
int cli_check_library(const char *path, int threads, int n_inputs, const char *const *names, const float *const *values,
                      float *const *ref, int n_ref, double tolerance);
struct tune_task;
int cli_find_task(struct tune_task *tasks, int n, const char *k);
int cli_load_tasks(const char *model, model_data *md, temper_graph **g, struct tune_task **tasks, int *n, int *vec);
#endif
