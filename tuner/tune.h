/* tune.h: the tune loop. */
#ifndef TEMPER_TUNE_H
#define TEMPER_TUNE_H
#include "db.h"
#include "measure.h"
#include "search.h"
#include "tuner.h"

/* ---- the tune loop (tune.c) ---- */

/* measures one config: the real builder + runner, or a fake in tests */
typedef measure_result (*measure_fn)(void *ctx, const tune_task *t, const sched_config *cfg, int64_t index);

typedef struct tune_opts {
  int trials;               /* new measurements per task */
  double minutes;           /* wall-clock budget for the run, 0: none */
  search_kind search;
  uint64_t seed;
  int build_jobs;           /* builder threads */
  measure_opts m;           /* threads, repeat, min_repeat_ms, timeout */
  const char *task_pattern; /* substring of workload keys, or NULL */
  int top_k;                /* re-measured at the end */
  const char *runner_binary;
  measure_fn measure;       /* NULL: build and run for real */
  void *measure_ctx;
  runner_hook (*hook)(void *ctx, const tune_task *t, int64_t index);   /* test hook */
  void *hook_ctx;
  const db_target *target;  /* record under this target instead of the host (tests, imports) */
  void (*on_record)(void *ctx, const tune_task *t, const db_record *r);   /* after each record (benchmarks) */
  void *on_record_ctx;
  void *log;                /* FILE*: progress and summary; NULL: quiet */
  int tty;                  /* live progress lines */
  int no_default;           /* do not measure the default config first (benchmarks of the search alone) */
  const char *pretuned;     /* shipped logs (db_chooser_use_pretuned): a task without a record of this
                               machine measures their config right after the default; NULL: none */
  double lease_s;           /* a task's lease lasts this long unless renewed (0: 60 s) */
  const volatile int *stop; /* set (by Ctrl-C): stop after the batch in progress, release the leases */
} tune_opts;

typedef struct tune_task_result {
  int new_trials, errors;
  double compile_s, measure_s;   /* builder and runner time spent on the task */
  int transfer_rows;             /* xgb: records of other workloads it started from */
  int pretuned;                  /* a shipped log's config was among its first trials */
  int pretuned_rows;             /* xgb: of transfer_rows, records of the shipped logs */
  double best_s, default_s;   /* per call, 0 if unknown */
  char best_config[512];
  char tuned_by[64];             /* another tuner of this round finished the task: its host */
  int64_t resumed_run;           /* the task was taken over from this run (a tuner that stopped) */
} tune_task_result;

/* rows for the cost model: a record's features in its workload's space and
 * its log throughput, one group per workload (records in workload order);
 * a record that is not ok, of a template version no longer in force, or
 * whose config the space does not hold adds nothing */
typedef struct tune_rows {
  float *x, *y;
  unsigned *groups;
  int n, cap, ng, vec;
  char last_key[256];
} tune_rows;
temper_status tune_rows_add(tune_rows *t, const db_record *r);
void tune_rows_free(tune_rows *t);

/* tune_run: tunes every task (matching the pattern) and records every
 * measurement in db as it happens; results[i] for tasks[i]. Tuners that
 * share the database split the tasks by leases (db.h): each task is tuned
 * by one tuner at a time; one finished by another tuner during this run is
 * skipped; one whose tuner stopped is taken over and its budget finished. */
temper_status tune_run(temper_db *db, tune_task *tasks, int n, const tune_opts *o, const char *command,
                       tune_task_result *results, diag *d);
/* the scheduler's expected gain of another batch of task t (see tune.c) */
double tune_task_priority(const tune_task *t, const double *hist, int batches, double best_s);
/* Two programs timed alternately, pair by pair (`temper refine`): the gain
 * of the candidate is the median over pairs of base − candidate, so a drift
 * of the machine's speed, which moves both times of a pair alike, cancels;
 * wins counts the pairs the candidate won. */
typedef struct paired_result {
  int n, wins;
  double base_s;        /* median of the base's times */
  double gain_s;        /* median of the pairwise differences (> 0: the candidate is faster) */
  double rel;           /* gain_s / base_s */
} paired_result;
void tune_paired_compare(const double *base, const double *cand, int n, paired_result *r);
/* faster by at least min_rel, and in at least 60 % of the pairs; a negative
 * min_rel (accept being up to that much slower) drops the pair count */
int tune_paired_better(const paired_result *r, double min_rel);
/* not a loss: faster by the median and in at least half of the pairs (a
 * negative min_rel: as tune_paired_better). For a whole made of changes
 * that each won already (temper refine's final check). */
int tune_paired_no_loss(const paired_result *r, double min_rel);
/* the version in force of a template, by name (-1 unknown) */
int tune_tmpl_version(const char *name);
/* the template versions in force, for temper_db_open */
const db_versions *tune_db_versions(void);
/* the machine as the database records it */
#endif
