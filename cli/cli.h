/* cli.h: what the subcommands share: loading a model and its data. */
#ifndef TEMPER_CLI_H
#define TEMPER_CLI_H
#include <jansson.h>
#include "engine.h"
#include "program.h"
#include "space.h"
#include "choose.h"

/* --params DIR, --seed S, --input NAME=FILE.npy (argv[*i] and its value;
 * *i advanced): 1 if it was one of them, 0 if not, -1 (printed) if malformed */
int cli_data_flag(program_opts *o, int argc, char **argv, int *i);
/* program_read + program_data; prints the error; 0 on success */
int cli_load(const char *model, const program_opts *o, program *p);
/* program_compile; prints the error; 0 on success */
int cli_compile(program *p, temper_engine *e, const pipeline_opts *po, int threads);
struct conv_site;
int cli_config_choose(void *ctx, const char *key, const struct task_space *s, const struct conv_site *site, struct sched_config *out, char *err, size_t n);
json_t *cli_load_config_file(const char *path);   /* prints the error; NULL on failure */

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
/* temper refine's run and printout, also at the end of temper tune */
struct refine_opts;
int cli_refine(const struct refine_opts *o);
int cmd_report(int argc, char **argv);
/* writes the report to out_path (through a temporary file: a failure keeps the last one); prints the error */
struct report_opts;
int cli_write_report(const struct report_opts *o, const char *out_path);
struct tune_task;
int cli_find_task(struct tune_task *tasks, int n, const char *k);
int cli_load_tasks(const char *model, const program_opts *o, program *p, struct tune_task **tasks, int *n, int *vec);
#endif
