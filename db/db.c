/* db.c: the tuning database on SQLite; the only file that includes
 * sqlite3.h. SQLite's error codes become temper statuses with the message
 * at each call site. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "db.h"

const char *const db_status_names[DB_STATUS_COUNT] = {
#define X(id, name) name,
    DB_STATUSES(X)
#undef X
};

struct temper_db {
  sqlite3 *h;
  char path[1024];
  char err[4096];
  db_versions versions;     /* the template versions in force, given at open */
};

const char *db_errmsg(temper_db *db) { return db->err; }

static temper_status fail(temper_db *db, const char *what) {
  snprintf(db->err, sizeof db->err, "%s: %s: %s", db->path, what, sqlite3_errmsg(db->h));
  return TEMPER_EDB;
}

/* room for one more row in a result array of `cap` rows holding n: grows it
   geometrically from `first`; NULL when out of memory (the array is then
   unchanged, and the caller frees it) */
static void *row_room(void *arr, int *cap, int n, size_t elem, int first) {
  if (n < *cap) return arr;
  int nc = *cap ? *cap * 2 : first;
  void *no = realloc(arr, elem * (size_t)nc);
  if (no) *cap = nc;
  return no;
}

static int exec(temper_db *db, const char *sql) { return sqlite3_exec(db->h, sql, NULL, NULL, NULL); }

/* schema version 1 had no error text and no re-measure flag on records */
static const char *schema_v2 =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS targets(id INTEGER PRIMARY KEY, triple TEXT NOT NULL, cpu TEXT NOT NULL,"
    "  features TEXT NOT NULL, llvm_version TEXT NOT NULL, cores INTEGER NOT NULL,"
    "  UNIQUE(triple, cpu, features, llvm_version, cores));"
    "CREATE TABLE IF NOT EXISTS workloads(id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, op TEXT NOT NULL,"
    "  description TEXT NOT NULL, flops REAL NOT NULL);"
    "CREATE TABLE IF NOT EXISTS runs(id INTEGER PRIMARY KEY, command TEXT NOT NULL, seed INTEGER NOT NULL,"
    "  host TEXT NOT NULL, started_at TEXT NOT NULL, ended_at TEXT);"
    "CREATE TABLE IF NOT EXISTS records(id INTEGER PRIMARY KEY,"
    "  workload_id INTEGER NOT NULL REFERENCES workloads(id), target_id INTEGER NOT NULL REFERENCES targets(id),"
    "  template TEXT NOT NULL, template_version INTEGER NOT NULL, config TEXT NOT NULL, config_index INTEGER NOT NULL,"
    "  threads INTEGER NOT NULL, status TEXT NOT NULL CHECK(status IN ('ok','compile_error','runtime_error','wrong_answer','timeout')),"
    "  median_s REAL, min_s REAL, max_s REAL, rounds INTEGER, gflops REAL, measured_at TEXT NOT NULL, host TEXT NOT NULL,"
    "  temper_version TEXT NOT NULL, run_id INTEGER REFERENCES runs(id), remeasure INTEGER NOT NULL DEFAULT 0, error TEXT);"
    "CREATE INDEX IF NOT EXISTS records_best ON records(workload_id, target_id, template, template_version, threads, status, median_s);";

/* schema version 3 adds the choices of `temper refine` */
static const char *schema_v3_choices =
    "CREATE TABLE IF NOT EXISTS choices(id INTEGER PRIMARY KEY, model TEXT NOT NULL,"
    "  target_id INTEGER NOT NULL REFERENCES targets(id), threads INTEGER NOT NULL,"
    "  workload_id INTEGER NOT NULL REFERENCES workloads(id), template TEXT NOT NULL, template_version INTEGER NOT NULL,"
    "  config TEXT NOT NULL, replaces TEXT NOT NULL, gain_s REAL NOT NULL, measured_at TEXT NOT NULL, host TEXT NOT NULL,"
    "  temper_version TEXT NOT NULL, UNIQUE(model, target_id, threads, workload_id));";

static temper_status set_version(temper_db *db) {
  char sql[128];
  snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', '%d');", DB_SCHEMA_VERSION);
  return exec(db, sql) ? fail(db, "writing the schema version") : TEMPER_OK;
}

/* in the caller's transaction: create, migrate, or refuse */
static temper_status schema(temper_db *db) {
  sqlite3_stmt *st = NULL;
  int have_meta = 0, version = 0;
  if (sqlite3_prepare_v2(db->h, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='meta'", -1, &st, NULL))
    return fail(db, "reading the schema");
  if (sqlite3_step(st) == SQLITE_ROW) have_meta = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  if (have_meta) {
    if (sqlite3_prepare_v2(db->h, "SELECT value FROM meta WHERE key='schema_version'", -1, &st, NULL))
      return fail(db, "reading the schema version");
    if (sqlite3_step(st) == SQLITE_ROW) {
      const char *text = (const char *)sqlite3_column_text(st, 0);   /* NULL in a crafted file */
      char *end = NULL;
      long v = text ? strtol(text, &end, 10) : -1;
      if (!text || *end || v < 1 || v > 1000000) {   /* the message before finalize: text belongs to the statement */
        snprintf(db->err, sizeof db->err, "%s: the schema version in the meta table is not a number (%.100s): not a temper database, or a damaged one",
                 db->path, text ? text : "NULL");
        sqlite3_finalize(st);
        return TEMPER_EDB;
      }
      version = (int)v;
    }
    sqlite3_finalize(st);
  }
  if (version > DB_SCHEMA_VERSION) {
    snprintf(db->err, sizeof db->err,
             "%s: the database has schema version %d, newer than this temper understands (%d); use a newer temper",
             db->path, version, DB_SCHEMA_VERSION);
    return TEMPER_EDB;
  }
  if (version == DB_SCHEMA_VERSION) return TEMPER_OK;
  if (version == 1 || version == 2) {
    if (version == 1 && exec(db, "ALTER TABLE records ADD COLUMN remeasure INTEGER NOT NULL DEFAULT 0;"
                                 "ALTER TABLE records ADD COLUMN error TEXT;"))   /* v1 → v2: error text, re-measure flag */
      return fail(db, "migrating schema version 1 to 2");
    if (exec(db, schema_v3_choices)) return fail(db, "migrating schema version 2 to 3");   /* v2 → v3: choices */
    return set_version(db);
  } else if (have_meta || version) {
    snprintf(db->err, sizeof db->err, "%s: meta table without a schema version: not a temper database", db->path);
    return TEMPER_EDB;
  } else {
    sqlite3_stmt *q = NULL;
    int tables = 0;
    if (!sqlite3_prepare_v2(db->h, "SELECT count(*) FROM sqlite_master", -1, &q, NULL) && sqlite3_step(q) == SQLITE_ROW)
      tables = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    if (tables) {
      snprintf(db->err, sizeof db->err, "%s: an SQLite database, but not a temper one (no meta table)", db->path);
      return TEMPER_EDB;
    }
  }
  if (exec(db, schema_v2) || exec(db, schema_v3_choices)) return fail(db, "creating the schema");
  return set_version(db);
}

int db_tmpl_version(const temper_db *db, const char *tmpl) {
  for (int i = 0; i < db->versions.n; i++)
    if (!strcmp(db->versions.names[i], tmpl)) return db->versions.versions[i];
  return -1;
}

static void sql_tmpl_version(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  const char *t = (const char *)sqlite3_value_text(argv[0]);
  sqlite3_result_int(ctx, t ? db_tmpl_version(sqlite3_user_data(ctx), t) : -1);
}

/* PRAGMA quick_check: a damaged file is refused before anything reads it */
static temper_status quick_check(temper_db *db) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db->h, "PRAGMA quick_check(1)", -1, &st, NULL)) return fail(db, "checking the file");
  int rc = sqlite3_step(st);
  const char *r = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
  temper_status s = TEMPER_OK;
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) s = fail(db, "checking the file");
  else if (r && strcmp(r, "ok")) {
    snprintf(db->err, sizeof db->err, "%s: the database is damaged (quick_check: %.200s)", db->path, r);
    s = TEMPER_EDB;
  }
  sqlite3_finalize(st);
  return s;
}

temper_status temper_db_open(const char *path, const db_versions *v, temper_db **out, char *err, size_t n) {
  *out = NULL;
  temper_db *db = calloc(1, sizeof *db);
  if (!db) { snprintf(err, n, "out of memory"); return TEMPER_ENOMEM; }
  snprintf(db->path, sizeof db->path, "%s", path);
  if (v) db->versions = *v;
  temper_status s = TEMPER_OK;
  if (sqlite3_open_v2(path, &db->h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, NULL)) {
    s = fail(db, "cannot open");
    goto out;
  }
  sqlite3_busy_timeout(db->h, 30000);
  /* a database may come from elsewhere: no writes to the schema or shadow
   * tables by SQL, and nothing in its schema (views, triggers) runs
   * functions that are not harmless */
  sqlite3_db_config(db->h, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
  sqlite3_db_config(db->h, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
  sqlite3_create_function(db->h, "temper_tmpl_version", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, db,
                          sql_tmpl_version, NULL, NULL);
  sqlite3_extended_result_codes(db->h, 1);
  /* the first read tells a corrupt or foreign file apart */
  if (exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;")) {
    s = fail(db, "not a usable SQLite database");
    goto out;
  }
  if ((s = quick_check(db))) goto out;
  if (exec(db, "BEGIN IMMEDIATE")) { s = fail(db, "cannot lock for the schema check"); goto out; }
  s = schema(db);
  if (s) exec(db, "ROLLBACK");
  else if (exec(db, "COMMIT")) s = fail(db, "committing the schema");
out:
  if (s) {
    snprintf(err, n, "%s", db->err);
    temper_db_close(db);
    return s;
  }
  *out = db;
  return TEMPER_OK;
}

void temper_db_close(temper_db *db) {
  if (!db) return;
  sqlite3_close_v2(db->h);
  free(db);
}

/* BEGIN IMMEDIATE … COMMIT around one prepared write, unless the caller
 * holds a transaction (db_begin), which then commits it all at once */
static temper_status write1(temper_db *db, sqlite3_stmt *st, const char *what, int64_t *rowid) {
  temper_status s = TEMPER_OK;
  int own = sqlite3_get_autocommit(db->h);
  if (own && exec(db, "BEGIN IMMEDIATE")) { sqlite3_finalize(st); return fail(db, "cannot lock for writing"); }
  int rc = sqlite3_step(st);
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) s = fail(db, what);
  else if (rowid) *rowid = sqlite3_last_insert_rowid(db->h);
  sqlite3_finalize(st);
  if (!own) return s;
  if (s) exec(db, "ROLLBACK");
  else if (exec(db, "COMMIT")) s = fail(db, "commit");
  return s;
}

temper_status db_begin(temper_db *db) { return exec(db, "BEGIN IMMEDIATE") ? fail(db, "cannot lock for writing") : TEMPER_OK; }
temper_status db_commit(temper_db *db) { return exec(db, "COMMIT") ? fail(db, "commit") : TEMPER_OK; }
void db_rollback(temper_db *db) { exec(db, "ROLLBACK"); }

static temper_status lookup_id(temper_db *db, sqlite3_stmt *st, int64_t *id) {
  int rc = sqlite3_step(st);
  *id = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
  sqlite3_finalize(st);
  return rc == SQLITE_ROW || rc == SQLITE_DONE ? TEMPER_OK : fail(db, "lookup");
}

temper_status db_target_id(temper_db *db, const db_target *t, int64_t *id) {
  const char *sel = "SELECT id FROM targets WHERE triple=?1 AND cpu=?2 AND features=?3 AND llvm_version=?4 AND cores=?5";
  for (int attempt = 0; attempt < 2; attempt++) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->h, attempt ? "INSERT OR IGNORE INTO targets(triple, cpu, features, llvm_version, cores) VALUES(?1,?2,?3,?4,?5)" : sel, -1, &st, NULL))
      return fail(db, "preparing a target query");
    sqlite3_bind_text(st, 1, t->triple, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, t->cpu, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, t->features, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, t->llvm_version, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 5, t->cores);
    if (!attempt) {
      temper_status s = lookup_id(db, st, id);
      if (s || *id) return s;
    } else {
      temper_status s = write1(db, st, "inserting a target", NULL);
      if (s) return s;
    }
  }
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db->h, sel, -1, &st, NULL)) return fail(db, "preparing a target query");
  sqlite3_bind_text(st, 1, t->triple, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 2, t->cpu, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 3, t->features, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 4, t->llvm_version, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(st, 5, t->cores);
  return lookup_id(db, st, id);
}

temper_status db_workload_id(temper_db *db, const char *key, const char *op, const char *desc, double flops, int64_t *id) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db->h, "INSERT OR IGNORE INTO workloads(key, op, description, flops) VALUES(?1, ?2, ?3, ?4)", -1, &st, NULL))
    return fail(db, "preparing a workload insert");
  sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 2, op, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 3, desc, -1, SQLITE_TRANSIENT);
  sqlite3_bind_double(st, 4, flops);
  temper_status s = write1(db, st, "inserting a workload", NULL);
  if (s) return s;
  if (sqlite3_prepare_v2(db->h, "SELECT id FROM workloads WHERE key=?", -1, &st, NULL)) return fail(db, "preparing a workload query");
  sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
  return lookup_id(db, st, id);
}

/* UTC with milliseconds: two measurements of one config by one host differ */
static void utc_now(char *buf, size_t n) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  char base[32];
  strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf, n, "%.19s.%03dZ", base, (int)(ts.tv_nsec / 1000000) % 1000);
}

temper_status db_run_begin(temper_db *db, const char *command, uint64_t seed, const char *host, int64_t *id) {
  sqlite3_stmt *st;
  char when[32];
  utc_now(when, sizeof when);
  if (sqlite3_prepare_v2(db->h, "INSERT INTO runs(command, seed, host, started_at) VALUES(?1, ?2, ?3, ?4)", -1, &st, NULL))
    return fail(db, "preparing a run insert");
  sqlite3_bind_text(st, 1, command, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 2, (sqlite3_int64)seed);
  sqlite3_bind_text(st, 3, host, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 4, when, -1, SQLITE_TRANSIENT);
  return write1(db, st, "inserting a run", id);
}

temper_status db_run_end(temper_db *db, int64_t id) {
  sqlite3_stmt *st;
  char when[32];
  utc_now(when, sizeof when);
  if (sqlite3_prepare_v2(db->h, "UPDATE runs SET ended_at=?1 WHERE id=?2", -1, &st, NULL)) return fail(db, "preparing a run update");
  sqlite3_bind_text(st, 1, when, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 2, id);
  return write1(db, st, "ending a run", NULL);
}

temper_status db_insert(temper_db *db, const db_record *r) {
  sqlite3_stmt *st;
  const char *sql =
      "INSERT INTO records(workload_id, target_id, template, template_version, config, config_index, threads, status,"
      " median_s, min_s, max_s, rounds, gflops, measured_at, host, temper_version, run_id, remeasure, error)"
      " VALUES((SELECT id FROM workloads WHERE key=?1), ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,"
      " NULLIF(?17, 0), ?18, NULLIF(?19, ''))";
  if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL)) return fail(db, "preparing a record insert");
  char when[32];
  if (!r->measured_at[0]) utc_now(when, sizeof when);
  sqlite3_bind_text(st, 1, r->workload, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 2, r->target_id);
  sqlite3_bind_text(st, 3, r->tmpl, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(st, 4, r->tmpl_version);
  sqlite3_bind_text(st, 5, r->config, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 6, r->config_index);
  sqlite3_bind_int(st, 7, r->threads);
  sqlite3_bind_text(st, 8, db_status_names[r->status], -1, SQLITE_STATIC);
  if (r->status == DB_OK) {
    sqlite3_bind_double(st, 9, r->median_s);
    sqlite3_bind_double(st, 10, r->min_s);
    sqlite3_bind_double(st, 11, r->max_s);
    sqlite3_bind_int(st, 12, r->rounds);
    sqlite3_bind_double(st, 13, r->gflops);
  }
  sqlite3_bind_text(st, 14, r->measured_at[0] ? r->measured_at : when, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 15, r->host, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 16, r->temper_version, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 17, r->run_id);
  sqlite3_bind_int(st, 18, r->remeasure);
  sqlite3_bind_text(st, 19, r->error, -1, SQLITE_TRANSIENT);
  return write1(db, st, "inserting a record", NULL);
}

/* records of the condition whose template version is the one in force */
#define CONDITION " FROM records r JOIN workloads w ON w.id = r.workload_id WHERE w.key=?1 AND r.target_id=?2 AND r.threads=?3" \
                  " AND temper_tmpl_version(r.template) = r.template_version"

static sqlite3_stmt *prepare_cond(temper_db *db, const char *head, const char *tail, const char *workload, int64_t tid, int threads) {
  char sql[1024];
  snprintf(sql, sizeof sql, "%s" CONDITION "%s", head, tail);
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL)) return NULL;
  sqlite3_bind_text(st, 1, workload, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 2, tid);
  sqlite3_bind_int(st, 3, threads);
  return st;
}

temper_status db_measured(temper_db *db, const char *workload, int64_t tid, int threads, int64_t **out, int *n) {
  *out = NULL;
  *n = 0;
  sqlite3_stmt *st = prepare_cond(db, "SELECT DISTINCT r.config_index", "", workload, tid, threads);
  if (!st) return fail(db, "preparing a query");
  int cap = 0, rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t *no = row_room(*out, &cap, *n, sizeof **out, 64);
    if (!no) { sqlite3_finalize(st); free(*out); *out = NULL; *n = 0; return TEMPER_ENOMEM; }
    *out = no;
    (*out)[(*n)++] = sqlite3_column_int64(st, 0);
  }
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? TEMPER_OK : fail(db, "reading measured configs");
}

static void read_record(sqlite3_stmt *st, db_record *r) {
  memset(r, 0, sizeof *r);
  r->id = sqlite3_column_int64(st, 0);
  snprintf(r->workload, sizeof r->workload, "%s", (const char *)sqlite3_column_text(st, 1));
  r->target_id = sqlite3_column_int64(st, 2);
  snprintf(r->tmpl, sizeof r->tmpl, "%s", (const char *)sqlite3_column_text(st, 3));
  r->tmpl_version = sqlite3_column_int(st, 4);
  snprintf(r->config, sizeof r->config, "%s", (const char *)sqlite3_column_text(st, 5));
  r->config_index = sqlite3_column_int64(st, 6);
  r->threads = sqlite3_column_int(st, 7);
  const char *status = (const char *)sqlite3_column_text(st, 8);
  for (int i = 0; i < DB_STATUS_COUNT; i++)
    if (status && !strcmp(status, db_status_names[i])) r->status = (db_status)i;
  r->median_s = sqlite3_column_double(st, 9);
  r->min_s = sqlite3_column_double(st, 10);
  r->max_s = sqlite3_column_double(st, 11);
  r->rounds = sqlite3_column_int(st, 12);
  r->gflops = sqlite3_column_double(st, 13);
  snprintf(r->measured_at, sizeof r->measured_at, "%s", (const char *)sqlite3_column_text(st, 14));
  snprintf(r->host, sizeof r->host, "%s", (const char *)sqlite3_column_text(st, 15));
  snprintf(r->temper_version, sizeof r->temper_version, "%s", (const char *)sqlite3_column_text(st, 16));
  r->run_id = sqlite3_column_int64(st, 17);
  r->remeasure = sqlite3_column_int(st, 18);
  if (sqlite3_column_text(st, 19)) snprintf(r->error, sizeof r->error, "%s", (const char *)sqlite3_column_text(st, 19));
}

#define RECORD_COLS "SELECT r.id, w.key, r.target_id, r.template, r.template_version, r.config, r.config_index, r.threads," \
                    " r.status, r.median_s, r.min_s, r.max_s, r.rounds, r.gflops, r.measured_at, r.host, r.temper_version," \
                    " r.run_id, r.remeasure, r.error"

temper_status db_ok_records(temper_db *db, const char *workload, int64_t tid, int threads, db_record **out, int *n) {
  *out = NULL;
  *n = 0;
  sqlite3_stmt *st = prepare_cond(db, RECORD_COLS, " AND r.status='ok' ORDER BY r.median_s, r.id", workload, tid, threads);
  if (!st) return fail(db, "preparing a query");
  int cap = 0, rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    db_record *no = row_room(*out, &cap, *n, sizeof **out, 64);
    if (!no) { sqlite3_finalize(st); free(*out); *out = NULL; *n = 0; return TEMPER_ENOMEM; }
    *out = no;
    read_record(st, &(*out)[(*n)++]);
  }
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? TEMPER_OK : fail(db, "reading records");
}

int db_best(temper_db *db, const char *workload, int64_t tid, int threads, db_record *out) {
  sqlite3_stmt *st = prepare_cond(db, RECORD_COLS, " AND r.status='ok' ORDER BY r.median_s, r.id LIMIT 1", workload, tid, threads);
  if (!st) return 0;
  int found = sqlite3_step(st) == SQLITE_ROW;
  if (found) read_record(st, out);
  sqlite3_finalize(st);
  return found;
}

temper_status db_counts(temper_db *db, const char *workload, int64_t tid, int threads, int counts[DB_STATUS_COUNT]) {
  memset(counts, 0, sizeof(int) * DB_STATUS_COUNT);
  sqlite3_stmt *st = prepare_cond(db, "SELECT r.status, count(*)", " GROUP BY r.status", workload, tid, threads);
  if (!st) return fail(db, "preparing a query");
  while (sqlite3_step(st) == SQLITE_ROW)
    for (int i = 0; i < DB_STATUS_COUNT; i++)
      if (!strcmp((const char *)sqlite3_column_text(st, 0), db_status_names[i])) counts[i] = sqlite3_column_int(st, 1);
  sqlite3_finalize(st);
  return TEMPER_OK;
}

temper_status db_show(temper_db *db, void *file) {
  FILE *f = file;
  const char *sql =
      "SELECT w.key, t.cpu, r.threads, count(*),"
      " sum(r.status='ok'), sum(r.status='compile_error'), sum(r.status='runtime_error'), sum(r.status='wrong_answer'),"
      " sum(r.status='timeout'),"
      " (SELECT max(b.gflops) FROM records b WHERE b.workload_id=r.workload_id AND b.target_id=r.target_id AND"
      "   b.threads=r.threads AND b.status='ok' AND temper_tmpl_version(b.template)=b.template_version),"
      " (SELECT b.config || '|' || b.min_s || '|' || b.max_s || '|' || b.median_s FROM records b WHERE b.workload_id=r.workload_id"
      "   AND b.target_id=r.target_id AND b.threads=r.threads AND b.status='ok' AND"
      "   temper_tmpl_version(b.template)=b.template_version ORDER BY b.median_s, b.id LIMIT 1)"
      " FROM records r JOIN workloads w ON w.id=r.workload_id JOIN targets t ON t.id=r.target_id"
      " GROUP BY r.workload_id, r.target_id, r.threads ORDER BY w.id, t.id, r.threads";
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL)) return fail(db, "preparing the summary");
  fprintf(f, "%-70s %-8s %3s %6s %5s %s %9s %7s  %s\n", "workload", "target", "thr", "trials", "ok", "errors(c/r/w/t)",
          "best GF/s", "spread", "best config");
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    char errs[64];
    snprintf(errs, sizeof errs, "%d/%d/%d/%d", sqlite3_column_int(st, 5), sqlite3_column_int(st, 6), sqlite3_column_int(st, 7),
             sqlite3_column_int(st, 8));
    const char *best = (const char *)sqlite3_column_text(st, 10);
    char cfg[512] = "-";
    double spread = 0;
    if (best) {
      const char *bar = strchr(best, '|');
      snprintf(cfg, sizeof cfg, "%.*s", bar ? (int)(bar - best) : (int)strlen(best), best);
      double mn = 0, mx = 0, md = 0;
      if (bar && sscanf(bar + 1, "%lf|%lf|%lf", &mn, &mx, &md) == 3 && md > 0) spread = (mx - mn) / md * 100;
    }
    fprintf(f, "%-70s %-8s %3d %6d %5d %-15s %9.1f %6.1f%%  %s\n", (const char *)sqlite3_column_text(st, 0),
            (const char *)sqlite3_column_text(st, 1), sqlite3_column_int(st, 2), sqlite3_column_int(st, 3),
            sqlite3_column_int(st, 4), errs, sqlite3_column_double(st, 9), spread, cfg);
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return fail(db, "reading the summary");
  /* what temper refine kept, per model, target and thread count */
  if (sqlite3_prepare_v2(db->h,
                         "SELECT c.model, t.cpu, c.threads, count(*), sum(c.gain_s), max(c.measured_at) FROM choices c"
                         " JOIN targets t ON t.id=c.target_id GROUP BY c.model, c.target_id, c.threads ORDER BY c.model, t.id, c.threads",
                         -1, &st, NULL))
    return fail(db, "preparing the choices summary");
  int first = 1;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (first) fprintf(f, "\n%-18s %-8s %3s %7s %13s  %s\n", "refined model", "target", "thr", "choices", "saved", "when"), first = 0;
    fprintf(f, "%-18s %-8s %3d %7d %10.3f ms  %s\n", (const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1),
            sqlite3_column_int(st, 2), sqlite3_column_int(st, 3), sqlite3_column_double(st, 4) * 1e3,
            (const char *)sqlite3_column_text(st, 5));
  }
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? TEMPER_OK : fail(db, "reading the choices summary");
}

temper_status db_threads_measured(temper_db *db, const char *workload, int64_t tid, int **out, int *n) {
  *out = NULL;
  *n = 0;
  sqlite3_stmt *st;
  const char *sql = "SELECT DISTINCT r.threads FROM records r JOIN workloads w ON w.id=r.workload_id WHERE w.key=?1 AND"
                    " r.target_id=?2 AND r.status='ok' AND temper_tmpl_version(r.template)=r.template_version ORDER BY r.threads";
  if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL)) return fail(db, "preparing a query");
  sqlite3_bind_text(st, 1, workload, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 2, tid);
  int cap = 0, rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int *no = row_room(*out, &cap, *n, sizeof **out, 8);
    if (!no) { sqlite3_finalize(st); free(*out); *out = NULL; *n = 0; return TEMPER_ENOMEM; }
    *out = no;
    (*out)[(*n)++] = sqlite3_column_int(st, 0);
  }
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? TEMPER_OK : fail(db, "reading thread counts");
}

int db_count_stale(temper_db *db, const char *workload, int64_t tid) {
  sqlite3_stmt *st;
  const char *sql = "SELECT count(*) FROM records r JOIN workloads w ON w.id=r.workload_id WHERE w.key=?1 AND r.target_id=?2"
                    " AND temper_tmpl_version(r.template) != r.template_version";
  if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL)) return 0;
  sqlite3_bind_text(st, 1, workload, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 2, tid);
  int n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
  sqlite3_finalize(st);
  return n;
}

/* ---- whole-database reads for export and matching ---- */
temper_status db_targets(temper_db *db, db_target_row **out, int *n) {
  *out = NULL;
  *n = 0;
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db->h, "SELECT t.id, t.triple, t.cpu, t.features, t.llvm_version, t.cores, (SELECT count(*) FROM records r"
                                " WHERE r.target_id=t.id) FROM targets t ORDER BY t.id", -1, &st, NULL))
    return fail(db, "preparing a query");
  int cap = 0, rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    db_target_row *no = row_room(*out, &cap, *n, sizeof **out, 8);
    if (!no) { sqlite3_finalize(st); free(*out); *out = NULL; *n = 0; return TEMPER_ENOMEM; }
    *out = no;
    db_target_row *r = &(*out)[(*n)++];
    memset(r, 0, sizeof *r);
    r->id = sqlite3_column_int64(st, 0);
    snprintf(r->t.triple, sizeof r->t.triple, "%s", (const char *)sqlite3_column_text(st, 1));
    snprintf(r->t.cpu, sizeof r->t.cpu, "%s", (const char *)sqlite3_column_text(st, 2));
    snprintf(r->t.features, sizeof r->t.features, "%s", (const char *)sqlite3_column_text(st, 3));
    snprintf(r->t.llvm_version, sizeof r->t.llvm_version, "%s", (const char *)sqlite3_column_text(st, 4));
    r->t.cores = sqlite3_column_int(st, 5);
    r->records = sqlite3_column_int(st, 6);
  }
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? TEMPER_OK : fail(db, "reading targets");
}

temper_status db_foreach(temper_db *db, int best_only, db_record_fn fn, void *ctx) {
  const char *all = RECORD_COLS ", w.op, w.description, w.flops"
                    " FROM records r JOIN workloads w ON w.id=r.workload_id JOIN targets t ON t.id=r.target_id"
                    " ORDER BY w.key, t.triple, t.cpu, t.features, t.llvm_version, t.cores, r.threads, r.measured_at, r.config_index,"
                    " r.remeasure, r.status, r.id";
  /* the best of each (workload, target, threads, template, input and output
   * channel block): ok, template version in force, fastest. A build weighs
   * the layout transforms a record's blocks (and whether its template reads
   * NCHW) would add, so it chooses among exactly these: with fewer, a build
   * from the exported log could choose differently from one from the full
   * database */
#define IN_BLOCK(x) "coalesce(json_extract(" x ".config, '$.ic_bn'), json_extract(" x ".config, '$.c_bn'))"
#define OUT_BLOCK(x) "coalesce(json_extract(" x ".config, '$.oc_bn'), json_extract(" x ".config, '$.c_bn'))"
  const char *best = RECORD_COLS ", w.op, w.description, w.flops"
                     " FROM records r JOIN workloads w ON w.id=r.workload_id JOIN targets t ON t.id=r.target_id"
                     " WHERE r.status='ok' AND temper_tmpl_version(r.template)=r.template_version AND r.id = (SELECT b.id FROM records b"
                     "  WHERE b.workload_id=r.workload_id AND b.target_id=r.target_id AND b.threads=r.threads AND b.status='ok' AND"
                     "  temper_tmpl_version(b.template)=b.template_version AND b.template=r.template AND"
                     "  " IN_BLOCK("b") " IS " IN_BLOCK("r") " AND " OUT_BLOCK("b") " IS " OUT_BLOCK("r")
                     "  ORDER BY b.median_s, b.id LIMIT 1)"
                     " ORDER BY w.key, t.triple, t.cpu, t.features, t.llvm_version, t.cores, r.threads, r.median_s, r.id";
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db->h, best_only ? best : all, -1, &st, NULL)) return fail(db, "preparing the export");
  int rc;
  temper_status s = TEMPER_OK;
  while (!s && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    db_record r;
    read_record(st, &r);
    const char *op = (const char *)sqlite3_column_text(st, 20), *desc = (const char *)sqlite3_column_text(st, 21);
    s = fn(ctx, &r, op ? op : "", desc ? desc : "{}", sqlite3_column_double(st, 22));
  }
  sqlite3_finalize(st);
  if (s) return s;
  return rc == SQLITE_DONE ? TEMPER_OK : fail(db, "reading records");
}

int db_has_record(temper_db *db, const db_record *r) {
  sqlite3_stmt *st;
  const char *sql = "SELECT 1 FROM records x JOIN workloads w ON w.id=x.workload_id WHERE w.key=?1 AND x.target_id=?2 AND"
                    " x.config=?3 AND x.threads=?4 AND x.host=?5 AND x.measured_at=?6 AND x.remeasure=?7 AND x.status=?8 LIMIT 1";
  if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL)) return 0;
  sqlite3_bind_text(st, 1, r->workload, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 2, r->target_id);
  sqlite3_bind_text(st, 3, r->config, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(st, 4, r->threads);
  sqlite3_bind_text(st, 5, r->host, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 6, r->measured_at, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(st, 7, r->remeasure);
  sqlite3_bind_text(st, 8, db_status_names[r->status], -1, SQLITE_STATIC);
  int found = sqlite3_step(st) == SQLITE_ROW;
  sqlite3_finalize(st);
  return found;
}

temper_status db_choices_replace(temper_db *db, const char *model, int64_t target_id, int threads, const db_choice *c, int n,
                                 const char *host, const char *temper_version) {
  if (exec(db, "BEGIN IMMEDIATE")) return fail(db, "cannot lock for writing");
  sqlite3_stmt *st = NULL;
  temper_status s = TEMPER_OK;
  if (sqlite3_prepare_v2(db->h, "DELETE FROM choices WHERE model=?1 AND target_id=?2 AND threads=?3", -1, &st, NULL)) {
    s = fail(db, "preparing a choice delete");
    goto out;
  }
  sqlite3_bind_text(st, 1, model, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 2, target_id);
  sqlite3_bind_int(st, 3, threads);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) { s = fail(db, "deleting old choices"); goto out; }
  char when[32];
  utc_now(when, sizeof when);
  for (int i = 0; i < n && !s; i++) {
    if (sqlite3_prepare_v2(db->h,
                           "INSERT INTO choices(model, target_id, threads, workload_id, template, template_version, config, replaces,"
                           " gain_s, measured_at, host, temper_version) VALUES(?1, ?2, ?3, (SELECT id FROM workloads WHERE key=?4),"
                           " ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)", -1, &st, NULL)) {
      s = fail(db, "preparing a choice insert");
      break;
    }
    sqlite3_bind_text(st, 1, model, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, target_id);
    sqlite3_bind_int(st, 3, threads);
    sqlite3_bind_text(st, 4, c[i].workload, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 5, c[i].tmpl, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 6, c[i].tmpl_version);
    sqlite3_bind_text(st, 7, c[i].config, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 8, c[i].replaces, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 9, c[i].gain_s);
    sqlite3_bind_text(st, 10, c[i].measured_at[0] ? c[i].measured_at : when, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 11, host, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 12, temper_version, -1, SQLITE_TRANSIENT);
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) s = fail(db, "inserting a choice (is the workload in the database?)");
  }
out:
  if (s) exec(db, "ROLLBACK");
  else if (exec(db, "COMMIT")) s = fail(db, "commit");
  return s;
}

temper_status db_choices_get(temper_db *db, const char *model, int64_t target_id, int threads, db_choice **out, int *n) {
  *out = NULL;
  *n = 0;
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db->h,
                         "SELECT w.key, c.template, c.template_version, c.config, c.replaces, c.gain_s, c.measured_at, c.host"
                         " FROM choices c JOIN workloads w ON w.id = c.workload_id"
                         " WHERE c.model=?1 AND c.target_id=?2 AND c.threads=?3 ORDER BY c.id", -1, &st, NULL))
    return fail(db, "preparing a choice query");
  sqlite3_bind_text(st, 1, model, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 2, target_id);
  sqlite3_bind_int(st, 3, threads);
  int cap = 0, rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    db_choice *no = row_room(*out, &cap, *n, sizeof **out, 16);
    if (!no) { sqlite3_finalize(st); free(*out); *out = NULL; *n = 0; return TEMPER_ENOMEM; }
    *out = no;
    db_choice *c = &(*out)[(*n)++];
    memset(c, 0, sizeof *c);
    snprintf(c->workload, sizeof c->workload, "%s", (const char *)sqlite3_column_text(st, 0));
    snprintf(c->tmpl, sizeof c->tmpl, "%s", (const char *)sqlite3_column_text(st, 1));
    c->tmpl_version = sqlite3_column_int(st, 2);
    snprintf(c->config, sizeof c->config, "%s", (const char *)sqlite3_column_text(st, 3));
    snprintf(c->replaces, sizeof c->replaces, "%s", (const char *)sqlite3_column_text(st, 4));
    c->gain_s = sqlite3_column_double(st, 5);
    snprintf(c->measured_at, sizeof c->measured_at, "%s", (const char *)sqlite3_column_text(st, 6));
    snprintf(c->host, sizeof c->host, "%s", (const char *)sqlite3_column_text(st, 7));
  }
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? TEMPER_OK : fail(db, "reading choices");
}
