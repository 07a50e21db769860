/* refine.h: choosing each workload's schedule by timing the whole model
 * (see refine.c's header for the method). */
#ifndef TEMPER_REFINE_H
#define TEMPER_REFINE_H
#include <stdio.h>
#include "choose.h"
#include "program.h"

typedef struct refine_opts {
  const char *model, *db;
  program_opts data;        /* the model's weights and inputs */
  int threads, pairs, alternatives;
  double min_gain;          /* relative: the least gain kept */
  int exhaustive;           /* every alternative in its own whole-model comparison, no screen */
  FILE *log;                /* a line per alternative timed (NULL: stdout) */
  /* called once the records' choice is known (to print it); may be NULL */
  void (*on_base)(void *ctx, const db_chooser *dc);
  void *ctx;
} refine_opts;

typedef struct refine_result {
  int workloads, tried;     /* conv2d workloads; alternatives timed */
  int changed;              /* workloads whose choice changed */
  int stored;               /* choices stored for the model (0 when together they did not win) */
  double base_s, refined_s; /* the model with the records' choice, and refined (0: nothing changed, not timed) */
  double rel;               /* refined against base, relative (negative: faster) */
  int wins, pairs;          /* of the final paired comparison */
  double seconds;           /* the search's time */
  int pruned;               /* alternatives not timed: their workload's share bounds the gain under min_gain */
  int stopped_early;        /* comparisons stopped once the candidate could no longer win */
  int screened_out;         /* alternatives whose own steps gained too little in the screen: not compared */
  int screen_programs;      /* programs the screen timed */
} refine_result;

/* the defaults of temper refine (and of the refine that ends temper tune) */
refine_opts refine_defaults(void);

/* refine_run: times the model with each workload's strongest alternatives
 * and stores the winners for this model, target and thread count in the
 * database (replacing earlier ones). An error returns its status with the
 * message in d; the database is left as it was unless the choices were
 * stored. */
temper_status refine_run(const refine_opts *o, refine_result *res, diag *d);
#endif
