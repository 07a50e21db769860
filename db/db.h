/* db.h: the tuning database. One SQLite file, WAL mode, a busy timeout, and
 * BEGIN IMMEDIATE for writes, so several tuners can share it; every record
 * is committed as soon as it is measured. db.c is the only file that
 * includes sqlite3.h.
 *
 * Tables: meta (schema version), targets, workloads, runs (one per tune
 * invocation), records (one per measurement, errors included), choices
 * (what `temper refine` kept for a model: a config measured better in the
 * whole network than the one the records chose). The best record is a
 * query, never a stored flag. */
#ifndef TEMPER_DB_H
#define TEMPER_DB_H
#include <stddef.h>
#include <stdint.h>
#include "temper/temper.h"

enum { DB_SCHEMA_VERSION = 3 };

typedef struct temper_db temper_db;

typedef struct db_target {
  char triple[128];
  char cpu[64];
  char features[2048];
  char llvm_version[32];
  int cores;
} db_target;

/* the outcome of one measurement: ORDER STATUS */
#define DB_STATUSES(X) X(OK, "ok") X(COMPILE_ERROR, "compile_error") X(RUNTIME_ERROR, "runtime_error") \
  X(WRONG_ANSWER, "wrong_answer") X(TIMEOUT, "timeout")
typedef enum db_status {
#define X(id, name) DB_##id,
  DB_STATUSES(X)
#undef X
  DB_STATUS_COUNT
} db_status;
extern const char *const db_status_names[DB_STATUS_COUNT];

typedef struct db_record {
  int64_t id;
  char workload[256];       /* workload key */
  int64_t target_id;
  char tmpl[32];            /* template name and version */
  int tmpl_version;
  char config[512];         /* canonical JSON */
  int64_t config_index;
  int threads;
  db_status status;
  double median_s, min_s, max_s;   /* per call; 0 unless ok */
  int rounds;
  double gflops;
  char measured_at[32];     /* ISO 8601 UTC */
  char host[64];
  char temper_version[16];
  int64_t run_id;
  int remeasure;            /* 1: a re-measurement of a top config */
  char error[256];          /* what went wrong, for errors */
} db_record;

/* The template versions in force (a record of another version is stale):
 * parallel arrays, owned by the caller and outliving the database handle. */
typedef struct db_versions { int n; const char *const *names; const int *versions; } db_versions;

/* Opens (creating if missing) and migrates an older schema in one
 * transaction; refuses a newer schema or a file that is not a database.
 * v: the template versions in force (NULL: none known, every record is
 * stale). On failure *db is NULL and err holds the reason. */
temper_status temper_db_open(const char *path, const db_versions *v, temper_db **db, char *err, size_t n);
void temper_db_close(temper_db *db);
const char *db_errmsg(temper_db *db);

temper_status db_target_id(temper_db *db, const db_target *t, int64_t *id);
temper_status db_workload_id(temper_db *db, const char *key, const char *op, const char *desc_json, double flops, int64_t *id);
temper_status db_run_begin(temper_db *db, const char *command, uint64_t seed, const char *host, int64_t *id);
temper_status db_run_end(temper_db *db, int64_t id);
/* inserts one record in its own transaction (committed on return) */
temper_status db_insert(temper_db *db, const db_record *r);

/* config indices already measured for (workload, target, threads), counting
 * only records of the template versions in force: *out malloc'd */
temper_status db_measured(temper_db *db, const char *workload, int64_t target_id, int threads, int64_t **out, int *n);
/* ok records of the condition, fastest first; *out malloc'd */
temper_status db_ok_records(temper_db *db, const char *workload, int64_t target_id, int threads, db_record **out, int *n);
/* the best ok record of (workload, target, threads) among the template
 * versions in force; 1 if found, 0 if none */
int db_best(temper_db *db, const char *workload, int64_t target_id, int threads, db_record *out);
/* thread counts with ok records of the versions in force, ascending; *out malloc'd */
temper_status db_threads_measured(temper_db *db, const char *workload, int64_t target_id, int **out, int *n);
/* records of (workload, target) whose template version is no longer in force */
int db_count_stale(temper_db *db, const char *workload, int64_t target_id);
/* counts of records per status for (workload, target, threads) */
temper_status db_counts(temper_db *db, const char *workload, int64_t target_id, int threads, int counts[DB_STATUS_COUNT]);

/* an explicit transaction: the writes inside commit together (import) */
temper_status db_begin(temper_db *db);
temper_status db_commit(temper_db *db);
void db_rollback(temper_db *db);

typedef struct db_target_row { int64_t id; db_target t; int records; } db_target_row;
temper_status db_targets(temper_db *db, db_target_row **out, int *n);
/* every record (or only the best per workload, target, threads and input
 * channel block: all a build chooses from), in a deterministic order, with
 * its workload's op, description and FLOPs */
typedef temper_status (*db_record_fn)(void *ctx, const db_record *r, const char *op, const char *desc, double flops);
temper_status db_foreach(temper_db *db, int best_only, db_record_fn fn, void *ctx);
/* a record with the same workload, target, config, threads, host, time, status */
int db_has_record(temper_db *db, const db_record *r);

/* A choice of `temper refine`: for the model with this signature (its conv2d
 * workloads in order), target and thread count, use config for the workload
 * while the records would choose `replaces` — a change of the records makes
 * it stale. gain_s: what it saved in the whole model, measured. */
typedef struct db_choice {
  char workload[256];
  char tmpl[32];
  int tmpl_version;
  char config[512];
  char replaces[512];
  double gain_s;
  char measured_at[32];
  char host[64];
} db_choice;
/* replaces every choice of (model, target, threads) with these, in one transaction */
temper_status db_choices_replace(temper_db *db, const char *model, int64_t target_id, int threads, const db_choice *c, int n,
                                 const char *host, const char *temper_version);
/* the choices of (model, target, threads); *out malloc'd */
temper_status db_choices_get(temper_db *db, const char *model, int64_t target_id, int threads, db_choice **out, int *n);

/* `temper db show`: one row per (workload, target, threads) */
temper_status db_show(temper_db *db, void *file);
/* the template version a record must carry to be used today (-1: a
 * template not in force), from the versions given at open */
int db_tmpl_version(const temper_db *db, const char *tmpl);
#endif
