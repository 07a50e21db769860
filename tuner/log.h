/* log.h: tuning logs as JSON lines (docs/log-format.md): export, import,
 * merge. One record per line, a format version on every line; the same
 * database exports byte-identical files. */
#ifndef TEMPER_LOG_H
#define TEMPER_LOG_H
#include <stdio.h>
#include "db.h"
#include "tuner.h"

enum { LOG_FORMAT_VERSION = 1 };

typedef struct log_filter {
  int best_only;            /* only the best per (workload, target, threads) */
  const char *task;         /* substring of the workload key, or NULL */
  const char *target;       /* CPU name, or NULL for all */
} log_filter;

typedef struct log_bad { int line; char reason[256]; } log_bad;
typedef struct log_result {
  int imported, duplicates;
  int n_bad;
  log_bad bad[64];          /* the first 64 bad lines */
  int more_bad;             /* bad lines beyond those */
} log_result;

/* one record as a log line, to out */
temper_status log_write_record(FILE *out, const db_record *r, const db_target *t, const char *op, const char *desc, double flops);
temper_status log_export(temper_db *db, FILE *out, const log_filter *f, int *n_written, diag *d);
/* one transaction per file; a bad line aborts the file unless skip_bad */
temper_status log_import(temper_db *db, const char *path, int skip_bad, log_result *res, diag *d);
/* every record of the database `in` into `out`, by the import's rules */
temper_status log_merge(temper_db *out, const char *in, log_result *res, diag *d);
#endif
