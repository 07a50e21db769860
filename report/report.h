/* report.h: the tuning report — one self-contained HTML page (inline SVG,
 * nothing from the network) of where a model's time goes and how its
 * tuning went, per target and thread count, from a tuning database:
 *
 *   report_write   db (+ model) → sections (target × threads) of tasks with
 *                  their records in time order → tables and plots
 *
 * With a model: its tasks (workloads without records are the fallbacks),
 * what a build on this machine would choose at each thread count (the
 * records' estimate, refine's changes), and with `measure` the model built
 * that way and timed, kernel by kernel. docs/report.md says how to read it. */
#ifndef TEMPER_REPORT_H
#define TEMPER_REPORT_H
#include <stdio.h>
#include "program.h"

typedef struct report_opts {
  const char *db;               /* a path or a URL */
  const char *model;            /* NULL: every workload of the database */
  program_opts data;            /* the model's parameters */
  int measure;                  /* build the model as `temper build` would, and time it */
  int repeat;                   /* --measure: runs per timing (default 10) */
  const char *svg_dir;          /* also each plot as DIR/NAME.svg (NULL: none) */
  const char *pretuned;         /* the shipped logs the build uses where db has nothing (NULL: none) */
} report_opts;

/* writes the page to out; *n_sections the (target, threads) groups shown */
temper_status report_write(const report_opts *o, FILE *out, int *n_sections, diag *d);
#endif
