/* db.h: the tuning database. A path opens an SQLite file (the embedded
 * default: WAL mode, a busy timeout, BEGIN IMMEDIATE for writes); a URL
 * postgresql://… opens a PostgreSQL database that tuners on many machines
 * share. Both hold the same schema; db_int.h says how. Every record is
 * committed as soon as it is measured.
 *
 * Tables: meta (schema version), targets, workloads, runs (one per tune
 * invocation), records (one per measurement, errors included), choices
 * (what `temper refine` kept for a model: a config measured better in the
 * whole network than the one the records chose), leases (which tuner works
 * on which task). The best record is a query, never a stored flag. */
#ifndef TEMPER_DB_H
#define TEMPER_DB_H
#include <stddef.h>
#include <stdint.h>
#include "temper/temper.h"

enum { DB_SCHEMA_VERSION = 4 };

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
/* 1 if `where` names a PostgreSQL database (postgresql:// or postgres://) */
int db_is_url(const char *where);
/* where, as messages show it: a path as is, a URL with its password replaced by *** */
void db_shown(const char *where, char *out, size_t n);
temper_status temper_db_open(const char *path, const db_versions *v, temper_db **db, char *err, size_t n);
void temper_db_close(temper_db *db);
const char *db_errmsg(temper_db *db);
/* the path, or the URL with its password replaced by *** */
const char *db_where(const temper_db *db);
const char *db_backend_name(const temper_db *db);
/* a second connection to the same database (a thread's own) */
temper_status db_reopen(const temper_db *db, temper_db **out, char *err, size_t n);
/* how long a read waits for a server that went away before it fails
 * (default 600 s, or $TEMPER_DB_WAIT); writes of records never wait: they
 * are spooled in memory and written, in order, once the server is back */
void db_set_wait(temper_db *db, double seconds);
/* records measured but not yet written (the server is away) */
int db_pending(const temper_db *db);
/* writes them, waiting for the server as a read does */
temper_status db_flush(temper_db *db);
const db_record *db_pending_records(const temper_db *db);

temper_status db_target_id(temper_db *db, const db_target *t, int64_t *id);
temper_status db_workload_id(temper_db *db, const char *key, const char *op, const char *desc_json, double flops, int64_t *id);
temper_status db_run_begin(temper_db *db, const char *command, uint64_t seed, const char *host, int64_t *id);
/* the run ends, having spent these seconds compiling and measuring */
temper_status db_run_end(temper_db *db, int64_t id, double compile_s, double measure_s);
typedef struct db_run_row {
  int64_t id;
  char command[512], host[64], started_at[32], ended_at[32];
  double compile_s, measure_s;   /* 0 if unknown (older runs, or still running) */
} db_run_row;
temper_status db_runs(temper_db *db, db_run_row **out, int *n);
/* inserts one record in its own transaction (committed on return); with
 * the server away, holds it (db_pending) and returns TEMPER_OK */
temper_status db_insert(temper_db *db, const db_record *r);
/* n records in one transaction; an empty measured_at is set to now in r */
temper_status db_insert_batch(temper_db *db, db_record *r, int n);

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

/* records of (workload, target, threads) that run run_id measured (not re-measurements) */
temper_status db_count_run(temper_db *db, const char *workload, int64_t target_id, int threads, int64_t run_id, int *n);

/* Leases: tuners sharing a database claim a task (workload, target,
 * threads) before they tune it, renew the claim while they work and
 * release it when done; a claim that is not renewed expires (the tuner
 * died), and another tuner takes the task over. Tuners alive at the same
 * time form a round: a task one of them finished is not tuned again by the
 * others. Times are the database's clock, in seconds since 1970. */
typedef struct db_lease_owner {
  char owner[128];          /* unique per tuner process: host, pid, a random part */
  char host[64];
  int64_t run_id;
} db_lease_owner;
typedef enum db_lease_state {
  DB_LEASE_MINE,            /* claimed: tune it */
  DB_LEASE_BUSY,            /* another tuner holds a live lease */
  DB_LEASE_DONE             /* another tuner finished it after round_start */
} db_lease_state;
typedef struct db_lease {
  db_lease_state state;
  int64_t prev_run;         /* taken over from a tuner that stopped: its run id */
  char holder[64];          /* busy or done: the other tuner's host */
} db_lease;
temper_status db_now(temper_db *db, double *seconds);
/* a tuner run joins the tuners alive now: *round_start is their round's
 * start (the earliest start among them), or now if none is alive; renewed
 * with its leases, left with db_lease_release_all */
temper_status db_tuner_join(temper_db *db, const db_lease_owner *me, double ttl_s, double *round_start);
temper_status db_lease_claim(temper_db *db, const char *workload, int64_t target_id, int threads, const db_lease_owner *me,
                             double ttl_s, double round_start, db_lease *out);
/* every live lease of owner, and its tuners row: expire ttl_s from now */
temper_status db_lease_renew(temper_db *db, const char *owner, double ttl_s);
/* 1 if owner still holds the task's lease, 0 if not, -1 on error (a server away is not waited for) */
int db_lease_held(temper_db *db, const char *workload, int64_t target_id, int threads, const char *owner);
/* done: the task is finished (other tuners of this round skip it); else free to take */
temper_status db_lease_release(temper_db *db, const char *workload, int64_t target_id, int threads, const char *owner, int done);
temper_status db_lease_release_all(temper_db *db, const char *owner);

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

/* `temper db show`: one row per (workload, target, threads), refine's
 * choices, and the live leases */
temper_status db_show(temper_db *db, void *file);
/* the template version a record must carry to be used today (-1: a
 * template not in force), from the versions given at open */
int db_tmpl_version(const temper_db *db, const char *tmpl);
#endif
