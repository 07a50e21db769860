/* cli.h: what the subcommands share: loading a model and its data. */
#ifndef TEMPER_CLI_H
#define TEMPER_CLI_H
#include <jansson.h>
#include "engine.h"
#include "space.h"

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

/* choose.c: schedules from a tuning database, as `temper build` chooses them */
typedef struct db_chooser db_chooser;
/* dbpath NULL: no database, every workload its default (listed by the report);
 * prints errors, NULL on failure */
db_chooser *db_chooser_open(const char *dbpath, const cg_target *t, int threads, int exact, const char *who);
int db_chooser_choose(void *ctx, const char *key, const struct task_space *s, const struct conv_site *site, struct sched_config *out,
                      char *err, size_t n);   /* a sched_chooser; ctx: the db_chooser */
int db_chooser_report(const db_chooser *dc);  /* prints the choices; returns the workloads that fell back */
/* for `temper refine`: also collect, per workload, up to k alternatives —
 * the fastest record of each other class (template, split over threads,
 * channel blocks) within REFINE_SLOWER of the fastest record, from this
 * machine's records */
enum { REFINE_MAX_ALT = 6 };
#define REFINE_SLOWER 1.3
void db_chooser_want_alternatives(db_chooser *dc, int k);
/* the model being built (before its passes): its signature, and refine's
 * choices for it, which then replace the records' pick where that pick is
 * still what refine replaced; -1 with a message on failure */
int db_chooser_set_model(db_chooser *dc, temper_graph *g);
const char *db_chooser_model(const db_chooser *dc);   /* the signature, 16 hex digits */
void db_chooser_ignore_choices(db_chooser *dc);        /* refine: start from the records alone */
typedef struct chooser_entry {
  const char *key;
  int count;
  double flops;
  const char *config;       /* NULL: the default config */
  double median_s;
  int n_alt;
  const char *alt[REFINE_MAX_ALT];
  double alt_s[REFINE_MAX_ALT];
  const char *alt_tmpl[REFINE_MAX_ALT];   /* its record's template and version */
  int alt_version[REFINE_MAX_ALT];
} chooser_entry;
int db_chooser_count(const db_chooser *dc);   /* workloads seen, in first-occurrence order */
void db_chooser_get(const db_chooser *dc, int i, chooser_entry *out);   /* pointers valid until close */
void db_chooser_close(db_chooser *dc);
int cli_target_from_spec(const char *spec, cg_target *t);   /* --target CPU[:FEATURES]; -1 if unknown */

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
