/* db.c: the tuning database — schema, migrations, queries, leases and the
 * spool — written once over db_int.h's backend, so SQLite and PostgreSQL
 * hold the same tables and answer the same questions alike. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "db.h"
#include "db_int.h"

const char *const db_status_names[DB_STATUS_COUNT] = {
#define X(id, name) name,
    DB_STATUSES(X)
#undef X
};

struct temper_db {
  const db_backend *be;
  db_conn *c;
  char where[1024];         /* as given (a URL keeps its password: db_reopen needs it) */
  char err[4096];
  db_versions versions;     /* the template versions in force, given at open */
  int in_tx;                /* inside db_begin … db_commit */
  int no_wait;              /* writing a record: a lost server is not waited for (the record is spooled) */
  double wait_s;            /* how long a read waits for a lost server */
  double next_try;          /* backoff: no reconnect attempt before this (monotonic seconds) */
  double backoff;
  db_record *spool;         /* measurements not yet written: the server was away */
  int n_spool, cap_spool;
};

const char *db_errmsg(temper_db *db) { return db->err; }
const char *db_where(const temper_db *db) { return db->be->where(db->c); }
const char *db_backend_name(const temper_db *db) { return db->be->name; }

static temper_status fail(temper_db *db, const char *what) {
  snprintf(db->err, sizeof db->err, "%s: %s: %s", db_where(db), what, db->be->errmsg(db->c));
  return TEMPER_EDB;
}

static double mono_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
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

/* ---- SQL text: the tokens of db_int.h expanded for this backend ---- */
typedef struct sqlbuf { char *s; size_t len, cap; int oom; } sqlbuf;

static void put(sqlbuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->len + n + 1 > b->cap) {
    size_t nc = (b->len + n + 1) * 2;
    char *ns = realloc(b->s, nc);
    if (!ns) { b->oom = 1; return; }
    b->s = ns, b->cap = nc;
  }
  memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = 0;
}
static void puts_(sqlbuf *b, const char *s) { put(b, s, strlen(s)); }

/* {V:x} — x's template version is the one in force; {STALE:x} — it is not */
static void put_in_force(temper_db *db, sqlbuf *b, const char *alias, int stale) {
  if (!db->versions.n) { puts_(b, stale ? "(1=1)" : "(1=0)"); return; }
  char tmp[128];
  snprintf(tmp, sizeof tmp, "(CASE %s.template", alias);
  puts_(b, tmp);
  for (int i = 0; i < db->versions.n; i++) {
    puts_(b, " WHEN '");
    for (const char *p = db->versions.names[i]; *p; p++) put(b, p, 1 + (*p == '\''));   /* '' inside a literal */
    snprintf(tmp, sizeof tmp, "' THEN %d", db->versions.versions[i]);
    puts_(b, tmp);
  }
  snprintf(tmp, sizeof tmp, " ELSE -1 END %s %s.template_version)", stale ? "<>" : "=", alias);
  puts_(b, tmp);
}

/* {IC:x}, {OC:x}: the input / output channel block of x's config */
static void put_block(temper_db *db, sqlbuf *b, const char *alias, const char *key, const char *alt) {
  char col[64], one[160], two[160], tmp[400];
  snprintf(col, sizeof col, "%s.config", alias);
  snprintf(one, sizeof one, db->be->json_int, col, key);
  snprintf(two, sizeof two, db->be->json_int, col, alt);
  snprintf(tmp, sizeof tmp, "coalesce(%s, %s)", one, two);
  puts_(b, tmp);
}

static char *expand(temper_db *db, const char *sql) {
  sqlbuf b = {0};
  for (const char *p = sql; *p;) {
    const char *open = strchr(p, '{');
    if (!open) { puts_(&b, p); break; }
    put(&b, p, (size_t)(open - p));
    const char *close = strchr(open, '}');
    if (!close) { puts_(&b, open); break; }
    char tok[64];
    snprintf(tok, sizeof tok, "%.*s", (int)(close - open - 1), open + 1);
    char *colon = strchr(tok, ':');
    const char *arg = colon ? (*colon = 0, colon + 1) : "";
    if (!strcmp(tok, "ID")) puts_(&b, db->be->id_type);
    else if (!strcmp(tok, "TEXT")) puts_(&b, db->be->text_type);
    else if (!strcmp(tok, "NOW")) puts_(&b, db->be->now_s);
    else if (!strcmp(tok, "SKIP")) puts_(&b, db->be->skip_locked);
    else if (!strcmp(tok, "V")) put_in_force(db, &b, arg, 0);
    else if (!strcmp(tok, "STALE")) put_in_force(db, &b, arg, 1);
    else if (!strcmp(tok, "IC")) put_block(db, &b, arg, "ic_bn", "c_bn");
    else if (!strcmp(tok, "OC")) put_block(db, &b, arg, "oc_bn", "c_bn");
    else put(&b, open, (size_t)(close - open + 1));   /* not a token: JSON or a literal */
    p = close + 1;
  }
  if (b.oom || !b.s) { free(b.s); return NULL; }
  return b.s;
}

/* ---- running SQL: parameters by a type string, a lost server waited for ---- */
static temper_status flush_spool(temper_db *db);

/* a lost server: reconnect with backoff for up to db->wait_s (0: one
 * attempt, if the backoff allows); 0 when connected again */
static int recover(temper_db *db, double wait_s) {
  double until = mono_now() + wait_s;
  for (;;) {
    double now = mono_now();
    if (now >= db->next_try) {
      if (!db->be->reconnect(db->c)) {
        db->backoff = 0, db->next_try = 0;
        return 0;
      }
      db->backoff = db->backoff ? db->backoff * 2 : 0.25;
      if (db->backoff > 8) db->backoff = 8;
      db->next_try = mono_now() + db->backoff;
    }
    if (mono_now() >= until) return -1;
    double nap = db->next_try - mono_now();
    if (nap > until - mono_now()) nap = until - mono_now();
    if (nap > 0) sleep_s(nap);
  }
}

/* types: one letter per parameter — t text, i int64_t, n int, d double,
 * z NULL (no argument), I int64_t or NULL for 0, T text or NULL for "". NULL on failure, with db->err set. Outside a
 * transaction, a statement that failed because the server went away is run
 * again once the connection is back (reads and idempotent writes only: the
 * callers that insert guard against doubles themselves). */
static db_cursor *vquery(temper_db *db, int wait, const char *sql, const char *types, va_list ap) {
  db_param p[32];
  int n = 0;
  for (const char *t = types; *t && n < 32; t++, n++) {
    p[n] = (db_param){0};
    switch (*t) {
    case 't': p[n].type = DB_P_TEXT, p[n].s = va_arg(ap, const char *); break;
    case 'i': p[n].type = DB_P_INT, p[n].i = va_arg(ap, int64_t); break;
    case 'n': p[n].type = DB_P_INT, p[n].i = va_arg(ap, int); break;
    case 'd': p[n].type = DB_P_DOUBLE, p[n].f = va_arg(ap, double); break;
    case 'I': p[n].i = va_arg(ap, int64_t), p[n].type = p[n].i ? DB_P_INT : DB_P_NULL; break;   /* 0: NULL */
    case 'T': p[n].s = va_arg(ap, const char *), p[n].type = p[n].s[0] ? DB_P_TEXT : DB_P_NULL; break;   /* "": NULL */
    default: p[n].type = DB_P_NULL; break;
    }
  }
  char *text = expand(db, sql);
  if (!text) { snprintf(db->err, sizeof db->err, "%s: out of memory", db_where(db)); return NULL; }
  db_cursor *q = db->be->query(db->c, text, p, n);
  if (!q && wait && !db->no_wait && !db->in_tx && db->be->lost(db->c) && !recover(db, db->wait_s)) {
    flush_spool(db);
    q = db->be->query(db->c, text, p, n);
  }
  if (!q) fail(db, "query");
  free(text);
  return q;
}

/* A transaction the server went away in (rolled back with the
 * connection): 1 once the server is back — waited for as long as a read
 * waits — so the caller runs the whole transaction again from its start;
 * at most LOST_TX_TRIES times. A statement inside a transaction cannot be
 * run again alone: what came before it in the transaction is gone. */
enum { LOST_TX_TRIES = 3 };
static int again_after_loss(temper_db *db, int *tries) {
  if (db->no_wait || db->in_tx || !db->be->lost(db->c) || ++*tries > LOST_TX_TRIES || recover(db, db->wait_s)) return 0;
  flush_spool(db);
  return 1;
}

static db_cursor *query(temper_db *db, const char *sql, const char *types, ...) {
  va_list ap;
  va_start(ap, types);
  db_cursor *q = vquery(db, 1, sql, types, ap);
  va_end(ap);
  return q;
}

/* runs a statement to its end; what: the message's subject on failure */
static temper_status run(temper_db *db, const char *what, const char *sql, const char *types, ...) {
  va_list ap;
  va_start(ap, types);
  db_cursor *q = vquery(db, 1, sql, types, ap);
  va_end(ap);
  if (!q) return fail(db, what);
  int rc;
  while ((rc = db->be->next(q)) == 1) {}
  db->be->done(q);
  return rc ? fail(db, what) : TEMPER_OK;
}

/* the first column of the first row as an integer; *found 0 if no row */
static temper_status one_int(temper_db *db, int64_t *out, int *found, const char *sql, const char *types, ...) {
  va_list ap;
  va_start(ap, types);
  db_cursor *q = vquery(db, 1, sql, types, ap);
  va_end(ap);
  *out = 0;
  if (found) *found = 0;
  if (!q) return fail(db, "lookup");
  int rc = db->be->next(q);
  if (rc == 1) {
    *out = db->be->i64(q, 0);
    if (found) *found = 1;
  }
  db->be->done(q);
  return rc < 0 ? fail(db, "lookup") : TEMPER_OK;
}

static int exec(temper_db *db, const char *sql) {
  char *text = expand(db, sql);
  int rc = text ? db->be->exec(db->c, text) : -1;
  free(text);
  return rc;
}

static const char *col_text(temper_db *db, db_cursor *q, int col) {
  const char *t = db->be->text(q, col);
  return t ? t : "";
}

/* ---- schema ---- */
/* schema version 1 had no error text and no re-measure flag on records */
static const char *schema_v2 =
    "CREATE TABLE IF NOT EXISTS meta(key {TEXT} PRIMARY KEY, value {TEXT} NOT NULL);"
    "CREATE TABLE IF NOT EXISTS targets(id {ID}, triple {TEXT} NOT NULL, cpu {TEXT} NOT NULL,"
    "  features {TEXT} NOT NULL, llvm_version {TEXT} NOT NULL, cores INTEGER NOT NULL,"
    "  UNIQUE(triple, cpu, features, llvm_version, cores));"
    "CREATE TABLE IF NOT EXISTS workloads(id {ID}, key {TEXT} NOT NULL UNIQUE, op {TEXT} NOT NULL,"
    "  description {TEXT} NOT NULL, flops DOUBLE PRECISION NOT NULL);"
    "CREATE TABLE IF NOT EXISTS runs(id {ID}, command {TEXT} NOT NULL, seed BIGINT NOT NULL,"
    "  host {TEXT} NOT NULL, started_at {TEXT} NOT NULL, ended_at {TEXT});"
    "CREATE TABLE IF NOT EXISTS records(id {ID},"
    "  workload_id BIGINT NOT NULL REFERENCES workloads(id), target_id BIGINT NOT NULL REFERENCES targets(id),"
    "  template {TEXT} NOT NULL, template_version INTEGER NOT NULL, config {TEXT} NOT NULL, config_index BIGINT NOT NULL,"
    "  threads INTEGER NOT NULL, status {TEXT} NOT NULL CHECK(status IN ('ok','compile_error','runtime_error','wrong_answer','timeout')),"
    "  median_s DOUBLE PRECISION, min_s DOUBLE PRECISION, max_s DOUBLE PRECISION, rounds INTEGER, gflops DOUBLE PRECISION,"
    "  measured_at {TEXT} NOT NULL, host {TEXT} NOT NULL,"
    "  temper_version {TEXT} NOT NULL, run_id BIGINT REFERENCES runs(id), remeasure INTEGER NOT NULL DEFAULT 0, error {TEXT});"
    "CREATE INDEX IF NOT EXISTS records_best ON records(workload_id, target_id, template, template_version, threads, status, median_s);";

/* schema version 3 adds the choices of `temper refine` */
static const char *schema_v3_choices =
    "CREATE TABLE IF NOT EXISTS choices(id {ID}, model {TEXT} NOT NULL,"
    "  target_id BIGINT NOT NULL REFERENCES targets(id), threads INTEGER NOT NULL,"
    "  workload_id BIGINT NOT NULL REFERENCES workloads(id), template {TEXT} NOT NULL, template_version INTEGER NOT NULL,"
    "  config {TEXT} NOT NULL, replaces {TEXT} NOT NULL, gain_s DOUBLE PRECISION NOT NULL, measured_at {TEXT} NOT NULL,"
    "  host {TEXT} NOT NULL, temper_version {TEXT} NOT NULL, UNIQUE(model, target_id, threads, workload_id));";

/* schema version 4 adds the leases of tuners sharing the database: one row
 * per task (workload, target, threads) ever claimed, and one per tuner run
 * (alive while its expiry is renewed; tuners alive at once form a round);
 * times in seconds since 1970 by the database's clock */
static const char *schema_v4_leases =
    "CREATE TABLE IF NOT EXISTS leases(workload_id BIGINT NOT NULL REFERENCES workloads(id),"
    "  target_id BIGINT NOT NULL REFERENCES targets(id), threads INTEGER NOT NULL, owner {TEXT} NOT NULL, host {TEXT} NOT NULL,"
    "  run_id BIGINT, since {TEXT} NOT NULL, expires DOUBLE PRECISION NOT NULL, done_at DOUBLE PRECISION,"
    "  PRIMARY KEY(workload_id, target_id, threads));"
    "CREATE TABLE IF NOT EXISTS tuners(run_id BIGINT PRIMARY KEY REFERENCES runs(id), owner {TEXT} NOT NULL, host {TEXT} NOT NULL,"
    "  round_start DOUBLE PRECISION NOT NULL, expires DOUBLE PRECISION NOT NULL);";

/* and the time each run spent compiling and measuring (the report's share) */
static const char *schema_v4_runs =
    "ALTER TABLE runs ADD COLUMN compile_s DOUBLE PRECISION; ALTER TABLE runs ADD COLUMN measure_s DOUBLE PRECISION;";

static temper_status set_version(temper_db *db) {
  char v[16];
  snprintf(v, sizeof v, "%d", DB_SCHEMA_VERSION);
  return run(db, "writing the schema version",
             "INSERT INTO meta(key, value) VALUES('schema_version', $1) ON CONFLICT(key) DO UPDATE SET value = excluded.value", "t", v);
}

static int has_table(temper_db *db, const char *name) {
  int64_t one;
  int found;
  return one_int(db, &one, &found, db->be->table_exists, "t", name) ? -1 : found;
}

/* the schema version in the meta table: 0 if none, -1 if unreadable (db->err) */
static int read_version(temper_db *db) {
  db_cursor *q = query(db, "SELECT value FROM meta WHERE key='schema_version'", "");
  if (!q) { fail(db, "reading the schema version"); return -1; }
  int rc = db->be->next(q), version = 0;
  if (rc == 1) {
    const char *text = db->be->text(q, 0);   /* NULL in a crafted file */
    char *end = NULL;
    long v = text ? strtol(text, &end, 10) : -1;
    if (!text || *end || v < 1 || v > 1000000) {   /* the message before done: text belongs to the cursor */
      snprintf(db->err, sizeof db->err, "%s: the schema version in the meta table is not a number (%.100s): not a temper database, or a damaged one",
               db_where(db), text ? text : "NULL");
      version = -1;
    } else version = (int)v;
  } else if (rc < 0) {
    fail(db, "reading the schema version");
    version = -1;
  }
  db->be->done(q);
  return version;
}

/* in the caller's transaction: create, migrate, or refuse */
static temper_status schema(temper_db *db) {
  int have_meta = has_table(db, "meta"), version = 0;
  if (have_meta < 0) return fail(db, "reading the schema");
  if (have_meta && (version = read_version(db)) < 0) return TEMPER_EDB;
  if (version > DB_SCHEMA_VERSION) {
    snprintf(db->err, sizeof db->err,
             "%s: the database has schema version %d, newer than this temper understands (%d); use a newer temper",
             db_where(db), version, DB_SCHEMA_VERSION);
    return TEMPER_EDB;
  }
  if (version == DB_SCHEMA_VERSION) return TEMPER_OK;
  if (version >= 1) {
    if (version == 1 && exec(db, "ALTER TABLE records ADD COLUMN remeasure INTEGER NOT NULL DEFAULT 0;"
                                 "ALTER TABLE records ADD COLUMN error TEXT;"))   /* v1 → v2: error text, re-measure flag */
      return fail(db, "migrating schema version 1 to 2");
    if (version <= 2 && exec(db, schema_v3_choices)) return fail(db, "migrating schema version 2 to 3");   /* v2 → v3: choices */
    if (exec(db, schema_v4_leases) || exec(db, schema_v4_runs)) return fail(db, "migrating schema version 3 to 4");   /* v3 → v4: leases, run times */
    return set_version(db);
  }
  if (have_meta) {
    snprintf(db->err, sizeof db->err, "%s: meta table without a schema version: not a temper database", db_where(db));
    return TEMPER_EDB;
  }
  int64_t any;
  int found;
  if (one_int(db, &any, &found, db->be->any_table, "")) return TEMPER_EDB;
  if (found) {
    snprintf(db->err, sizeof db->err, "%s: a %s database, but not a temper one (no meta table)", db_where(db), db->be->name);
    return TEMPER_EDB;
  }
  if (exec(db, schema_v2) || exec(db, schema_v3_choices) || exec(db, schema_v4_leases) || exec(db, schema_v4_runs))
    return fail(db, "creating the schema");
  return set_version(db);
}

int db_tmpl_version(const temper_db *db, const char *tmpl) {
  for (int i = 0; i < db->versions.n; i++)
    if (!strcmp(db->versions.names[i], tmpl)) return db->versions.versions[i];
  return -1;
}

temper_status temper_db_open(const char *where, const db_versions *v, temper_db **out, char *err, size_t n) {
  *out = NULL;
  temper_db *db = calloc(1, sizeof *db);
  if (!db) { snprintf(err, n, "out of memory"); return TEMPER_ENOMEM; }
  snprintf(db->where, sizeof db->where, "%s", where);
  if (v) db->versions = *v;
  db->be = db_is_url(where) ? &db_pg_backend : &db_sqlite_backend;
  const char *wait = getenv("TEMPER_DB_WAIT");   /* seconds a lost server is waited for */
  db->wait_s = wait && atof(wait) >= 0 ? atof(wait) : 600;
  temper_status s = db->be->open(where, &db->c, err, n);
  if (s) { free(db); return s; }
  /* one schema check at a time: several tuners may start at once on a new database */
  if (exec(db, db->be->begin_write)) { s = fail(db, "cannot lock for the schema check"); goto out; }
  if (db->be == &db_pg_backend && exec(db, "SELECT pg_advisory_xact_lock(7384210)")) {
    s = fail(db, "cannot lock for the schema check");
    exec(db, "ROLLBACK");
    goto out;
  }
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

temper_status db_reopen(const temper_db *db, temper_db **out, char *err, size_t n) {
  return temper_db_open(db->where, &db->versions, out, err, n);
}

void temper_db_close(temper_db *db) {
  if (!db) return;
  if (db->n_spool && !db->be->lost(db->c)) flush_spool(db);
  db->be->close(db->c);
  free(db->spool);
  free(db);
}

void db_set_wait(temper_db *db, double seconds) { db->wait_s = seconds < 0 ? 0 : seconds; }

/* one write statement in its own transaction, unless the caller holds one
 * (db_begin), which then commits it all at once; *id from RETURNING */
static temper_status write1(temper_db *db, const char *what, int64_t *id, const char *sql, const char *types, ...) {
  int own = !db->in_tx;
  if (own && exec(db, db->be->begin_write)) {
    if (!db->be->lost(db->c) || recover(db, db->no_wait ? 0 : db->wait_s) || exec(db, db->be->begin_write))
      return fail(db, "cannot lock for writing");
  }
  va_list ap;
  va_start(ap, types);
  db_cursor *q = vquery(db, 0, sql, types, ap);
  va_end(ap);
  temper_status s = TEMPER_OK;
  int rc = q ? db->be->next(q) : -1;
  if (rc < 0) s = fail(db, what);
  else if (id) *id = rc == 1 ? db->be->i64(q, 0) : 0;
  if (q) {
    while (rc == 1) rc = db->be->next(q);
    db->be->done(q);
  }
  if (!own) return s;
  if (s) exec(db, "ROLLBACK");
  else if (exec(db, "COMMIT")) s = fail(db, "commit");
  return s;
}

temper_status db_begin(temper_db *db) {
  if (exec(db, db->be->begin_write) && (!db->be->lost(db->c) || recover(db, db->wait_s) || exec(db, db->be->begin_write)))
    return fail(db, "cannot lock for writing");
  db->in_tx = 1;
  return TEMPER_OK;
}

temper_status db_commit(temper_db *db) {
  db->in_tx = 0;
  return exec(db, "COMMIT") ? fail(db, "commit") : TEMPER_OK;
}

void db_rollback(temper_db *db) {
  db->in_tx = 0;
  exec(db, "ROLLBACK");
}

/* ---- targets, workloads, runs ---- */
temper_status db_target_id(temper_db *db, const db_target *t, int64_t *id) {
  const char *sel = "SELECT id FROM targets WHERE triple=$1 AND cpu=$2 AND features=$3 AND llvm_version=$4 AND cores=$5";
  int found;
  temper_status s = one_int(db, id, &found, sel, "ttttn", t->triple, t->cpu, t->features, t->llvm_version, t->cores);
  if (s || found) return s;
  s = write1(db, "inserting a target", NULL,
             "INSERT INTO targets(triple, cpu, features, llvm_version, cores) VALUES($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING", "ttttn",
             t->triple, t->cpu, t->features, t->llvm_version, t->cores);
  if (s) return s;
  return one_int(db, id, NULL, sel, "ttttn", t->triple, t->cpu, t->features, t->llvm_version, t->cores);
}

temper_status db_workload_id(temper_db *db, const char *key, const char *op, const char *desc, double flops, int64_t *id) {
  int found;
  temper_status s = one_int(db, id, &found, "SELECT id FROM workloads WHERE key=$1", "t", key);
  if (s || found) return s;
  s = write1(db, "inserting a workload", NULL,
             "INSERT INTO workloads(key, op, description, flops) VALUES($1, $2, $3, $4) ON CONFLICT DO NOTHING", "tttd", key, op, desc,
             flops);
  if (s) return s;
  return one_int(db, id, NULL, "SELECT id FROM workloads WHERE key=$1", "t", key);
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
  char when[32];
  utc_now(when, sizeof when);
  return write1(db, "inserting a run", id, "INSERT INTO runs(command, seed, host, started_at) VALUES($1, $2, $3, $4) RETURNING id", "titt",
                command, (int64_t)seed, host, when);
}

temper_status db_run_end(temper_db *db, int64_t id, double compile_s, double measure_s) {
  char when[32];
  utc_now(when, sizeof when);
  return write1(db, "ending a run", NULL, "UPDATE runs SET ended_at=$1, compile_s=$3, measure_s=$4 WHERE id=$2", "tidd", when, id,
                compile_s, measure_s);
}

temper_status db_runs(temper_db *db, db_run_row **out, int *n) {
  *out = NULL;
  *n = 0;
  db_cursor *q = query(db, "SELECT id, command, host, started_at, ended_at, compile_s, measure_s FROM runs ORDER BY id", "");
  if (!q) return fail(db, "reading runs");
  int cap = 0, rc;
  while ((rc = db->be->next(q)) == 1) {
    db_run_row *no = row_room(*out, &cap, *n, sizeof **out, 16);
    if (!no) { db->be->done(q); free(*out); *out = NULL; *n = 0; return TEMPER_ENOMEM; }
    *out = no;
    db_run_row *r = &(*out)[(*n)++];
    memset(r, 0, sizeof *r);
    r->id = db->be->i64(q, 0);
    snprintf(r->command, sizeof r->command, "%s", col_text(db, q, 1));
    snprintf(r->host, sizeof r->host, "%s", col_text(db, q, 2));
    snprintf(r->started_at, sizeof r->started_at, "%s", col_text(db, q, 3));
    snprintf(r->ended_at, sizeof r->ended_at, "%s", col_text(db, q, 4));
    r->compile_s = db->be->f64(q, 5);
    r->measure_s = db->be->f64(q, 6);
  }
  db->be->done(q);
  return rc ? fail(db, "reading runs") : TEMPER_OK;
}

/* ---- records ---- */
static temper_status insert_record(temper_db *db, const db_record *r) {
  const char *sql =
      "INSERT INTO records(workload_id, target_id, template, template_version, config, config_index, threads, status,"
      " median_s, min_s, max_s, rounds, gflops, measured_at, host, temper_version, run_id, remeasure, error)"
      " VALUES((SELECT id FROM workloads WHERE key=$1), $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,"
      " $17, $18, $19)";
  temper_status s;
  if (r->status == DB_OK)
    s = write1(db, "inserting a record", NULL, sql, "titntintdddndtttInT", r->workload, r->target_id, r->tmpl, r->tmpl_version,
                  r->config, r->config_index, r->threads, db_status_names[r->status], r->median_s, r->min_s, r->max_s, r->rounds,
                  r->gflops, r->measured_at, r->host, r->temper_version, r->run_id, r->remeasure, r->error);
  else
    s = write1(db, "inserting a record", NULL, sql, "titntintzzzzztttInT", r->workload, r->target_id, r->tmpl, r->tmpl_version,
                r->config, r->config_index, r->threads, db_status_names[r->status], r->measured_at, r->host, r->temper_version,
                r->run_id, r->remeasure, r->error);
  return s;
}

/* the spool: measurements made while the server was away, written in order
 * once it is back; one that may have reached the server before the
 * connection broke is looked up first, so a retry never stores it twice */
static temper_status flush_spool(temper_db *db) {
  int k = 0;
  temper_status s = TEMPER_OK;
  for (; k < db->n_spool; k++) {
    if (db_has_record(db, &db->spool[k])) continue;
    if ((s = insert_record(db, &db->spool[k]))) break;
  }
  if (k && k < db->n_spool) memmove(db->spool, db->spool + k, sizeof *db->spool * (size_t)(db->n_spool - k));
  db->n_spool -= k;
  return s;
}

static temper_status spool(temper_db *db, const db_record *r) {
  db_record *no = row_room(db->spool, &db->cap_spool, db->n_spool, sizeof *db->spool, 64);
  if (!no) return TEMPER_ENOMEM;
  db->spool = no;
  db->spool[db->n_spool++] = *r;
  return TEMPER_OK;
}

int db_pending(const temper_db *db) { return db->n_spool; }

temper_status db_flush(temper_db *db) {
  if (!db->n_spool) return TEMPER_OK;
  if (db->be->lost(db->c) && recover(db, db->wait_s)) return fail(db, "the server did not come back");
  return flush_spool(db);
}

const db_record *db_pending_records(const temper_db *db) { return db->spool; }

/* a record is never waited for: with the server away it joins the spool */
static temper_status insert_or_spool(temper_db *db, const db_record *r) {
  if (db->n_spool && !db->in_tx) {   /* the server was away: try again */
    if (db->be->lost(db->c) && recover(db, 0)) return spool(db, r);
    if (flush_spool(db)) return db->be->lost(db->c) ? spool(db, r) : TEMPER_EDB;
  }
  temper_status s = insert_record(db, r);
  if (s && !db->in_tx && db->be->lost(db->c)) return spool(db, r);
  return s;
}

temper_status db_insert_batch(temper_db *db, db_record *r, int n) {
  for (int i = 0; i < n; i++)
    if (!r[i].measured_at[0]) utc_now(r[i].measured_at, sizeof r[i].measured_at);
  temper_status s = TEMPER_OK;
  db->no_wait = 1;
  if (db->n_spool || db->in_tx || n == 1) {   /* one by one: the spool keeps their order */
    for (int i = 0; i < n && !s; i++) s = insert_or_spool(db, &r[i]);
    db->no_wait = 0;
    return s;
  }
  if (exec(db, db->be->begin_write)) s = fail(db, "cannot lock for writing");
  else {
    db->in_tx = 1;
    for (int i = 0; i < n && !s; i++) s = insert_record(db, &r[i]);
    db->in_tx = 0;
    if (s) exec(db, "ROLLBACK");
    else if (exec(db, "COMMIT")) s = fail(db, "commit");
  }
  if (s && db->be->lost(db->c))   /* the server went away: hold them all (a commit that did land is found at the flush) */
    for (int i = 0, e = 0; i < n && !e; i++) e = spool(db, &r[i]), s = e;
  db->no_wait = 0;
  return s;
}

temper_status db_insert(temper_db *db, const db_record *rec) {
  db_record r = *rec;
  if (!r.measured_at[0]) utc_now(r.measured_at, sizeof r.measured_at);   /* fixed now: a retry is the same record */
  db->no_wait = 1;
  temper_status s = insert_or_spool(db, &r);
  db->no_wait = 0;
  return s;
}

/* records of the condition whose template version is the one in force */
#define CONDITION " FROM records r JOIN workloads w ON w.id = r.workload_id WHERE w.key=$1 AND r.target_id=$2 AND r.threads=$3" \
                  " AND {V:r}"

static db_cursor *query_cond(temper_db *db, const char *head, const char *tail, const char *workload, int64_t tid, int threads) {
  char sql[1024];
  snprintf(sql, sizeof sql, "%s" CONDITION "%s", head, tail);
  return query(db, sql, "tin", workload, tid, threads);
}

temper_status db_measured(temper_db *db, const char *workload, int64_t tid, int threads, int64_t **out, int *n) {
  *out = NULL;
  *n = 0;
  db_cursor *q = query_cond(db, "SELECT DISTINCT r.config_index", "", workload, tid, threads);
  if (!q) return fail(db, "reading measured configs");
  int cap = 0, rc;
  while ((rc = db->be->next(q)) == 1) {
    int64_t *no = row_room(*out, &cap, *n, sizeof **out, 64);
    if (!no) { db->be->done(q); free(*out); *out = NULL; *n = 0; return TEMPER_ENOMEM; }
    *out = no;
    (*out)[(*n)++] = db->be->i64(q, 0);
  }
  db->be->done(q);
  if (rc) return fail(db, "reading measured configs");
  /* and what waits in the spool: measured too */
  for (int i = 0; i < db->n_spool; i++) {
    const db_record *r = &db->spool[i];
    if (strcmp(r->workload, workload) || r->target_id != tid || r->threads != threads) continue;
    int64_t *no = row_room(*out, &cap, *n, sizeof **out, 64);
    if (!no) { free(*out); *out = NULL; *n = 0; return TEMPER_ENOMEM; }
    *out = no;
    (*out)[(*n)++] = r->config_index;
  }
  return TEMPER_OK;
}

#define RECORD_COLS "SELECT r.id, w.key, r.target_id, r.template, r.template_version, r.config, r.config_index, r.threads," \
                    " r.status, r.median_s, r.min_s, r.max_s, r.rounds, r.gflops, r.measured_at, r.host, r.temper_version," \
                    " r.run_id, r.remeasure, r.error"

static void read_record(temper_db *db, db_cursor *q, db_record *r) {
  const db_backend *b = db->be;
  memset(r, 0, sizeof *r);
  r->id = b->i64(q, 0);
  snprintf(r->workload, sizeof r->workload, "%s", col_text(db, q, 1));
  r->target_id = b->i64(q, 2);
  snprintf(r->tmpl, sizeof r->tmpl, "%s", col_text(db, q, 3));
  r->tmpl_version = (int)b->i64(q, 4);
  snprintf(r->config, sizeof r->config, "%s", col_text(db, q, 5));
  r->config_index = b->i64(q, 6);
  r->threads = (int)b->i64(q, 7);
  const char *status = col_text(db, q, 8);
  for (int i = 0; i < DB_STATUS_COUNT; i++)
    if (!strcmp(status, db_status_names[i])) r->status = (db_status)i;
  r->median_s = b->f64(q, 9);
  r->min_s = b->f64(q, 10);
  r->max_s = b->f64(q, 11);
  r->rounds = (int)b->i64(q, 12);
  r->gflops = b->f64(q, 13);
  snprintf(r->measured_at, sizeof r->measured_at, "%s", col_text(db, q, 14));
  snprintf(r->host, sizeof r->host, "%s", col_text(db, q, 15));
  snprintf(r->temper_version, sizeof r->temper_version, "%s", col_text(db, q, 16));
  r->run_id = b->i64(q, 17);
  r->remeasure = (int)b->i64(q, 18);
  snprintf(r->error, sizeof r->error, "%s", col_text(db, q, 19));
}

/* all rows of q as records; *out malloc'd */
static temper_status read_records(temper_db *db, db_cursor *q, db_record **out, int *n) {
  int cap = 0, rc;
  while ((rc = db->be->next(q)) == 1) {
    db_record *no = row_room(*out, &cap, *n, sizeof **out, 64);
    if (!no) { db->be->done(q); free(*out); *out = NULL; *n = 0; return TEMPER_ENOMEM; }
    *out = no;
    read_record(db, q, &(*out)[(*n)++]);
  }
  db->be->done(q);
  return rc ? fail(db, "reading records") : TEMPER_OK;
}

temper_status db_ok_records(temper_db *db, const char *workload, int64_t tid, int threads, db_record **out, int *n) {
  *out = NULL;
  *n = 0;
  db_cursor *q = query_cond(db, RECORD_COLS, " AND r.status='ok' ORDER BY r.median_s, r.id", workload, tid, threads);
  return q ? read_records(db, q, out, n) : fail(db, "reading records");
}

int db_best(temper_db *db, const char *workload, int64_t tid, int threads, db_record *out) {
  db_cursor *q = query_cond(db, RECORD_COLS, " AND r.status='ok' ORDER BY r.median_s, r.id LIMIT 1", workload, tid, threads);
  if (!q) return 0;
  int found = db->be->next(q) == 1;
  if (found) read_record(db, q, out);
  db->be->done(q);
  return found;
}

temper_status db_counts(temper_db *db, const char *workload, int64_t tid, int threads, int counts[DB_STATUS_COUNT]) {
  memset(counts, 0, sizeof(int) * DB_STATUS_COUNT);
  db_cursor *q = query_cond(db, "SELECT r.status, count(*)", " GROUP BY r.status", workload, tid, threads);
  if (!q) return fail(db, "counting records");
  int rc;
  while ((rc = db->be->next(q)) == 1)
    for (int i = 0; i < DB_STATUS_COUNT; i++)
      if (!strcmp(col_text(db, q, 0), db_status_names[i])) counts[i] = (int)db->be->i64(q, 1);
  db->be->done(q);
  return rc ? fail(db, "counting records") : TEMPER_OK;
}

temper_status db_count_run(temper_db *db, const char *workload, int64_t tid, int threads, int64_t run_id, int *n) {
  int64_t v;
  temper_status s = one_int(db, &v, NULL, "SELECT count(*)" CONDITION " AND r.run_id=$4 AND r.remeasure=0", "tini", workload, tid,
                            threads, run_id);
  *n = (int)v;
  return s;
}

static temper_status show_leases(temper_db *db, FILE *f) {
  db_cursor *q = query(db,
                       "SELECT w.key, t.cpu, l.threads, l.host, l.since, l.expires - {NOW} FROM leases l"
                       " JOIN workloads w ON w.id=l.workload_id JOIN targets t ON t.id=l.target_id"
                       " WHERE l.done_at IS NULL AND l.expires > {NOW} ORDER BY l.since, w.key",
                       "");
  if (!q) return fail(db, "reading the leases");
  int rc, first = 1;
  while ((rc = db->be->next(q)) == 1) {
    if (first) fprintf(f, "\n%-70s %-8s %3s %-24s %-24s %s\n", "leased task", "target", "thr", "host", "since", "expires in"), first = 0;
    fprintf(f, "%-70s %-8s %3d %-24s %-24s %.0f s\n", col_text(db, q, 0), col_text(db, q, 1), (int)db->be->i64(q, 2),
            col_text(db, q, 3), col_text(db, q, 4), db->be->f64(q, 5));
  }
  db->be->done(q);
  if (rc) return fail(db, "reading the leases");
  q = query(db, "SELECT u.host, u.run_id, r.started_at, r.command FROM tuners u JOIN runs r ON r.id=u.run_id"
                " WHERE u.expires > {NOW} ORDER BY u.run_id", "");
  if (!q) return fail(db, "reading the tuners");
  first = 1;
  while ((rc = db->be->next(q)) == 1) {
    if (first) fprintf(f, "\n%-24s %6s %-24s %s\n", "live tuner", "run", "started", "command"), first = 0;
    fprintf(f, "%-24s %6lld %-24s %.100s\n", col_text(db, q, 0), (long long)db->be->i64(q, 1), col_text(db, q, 2), col_text(db, q, 3));
  }
  db->be->done(q);
  return rc ? fail(db, "reading the tuners") : TEMPER_OK;
}

temper_status db_show(temper_db *db, void *file) {
  FILE *f = file;
  const char *sql =
      "SELECT w.key, t.cpu, r.threads, count(*),"
      " sum(CASE WHEN r.status='ok' THEN 1 ELSE 0 END), sum(CASE WHEN r.status='compile_error' THEN 1 ELSE 0 END),"
      " sum(CASE WHEN r.status='runtime_error' THEN 1 ELSE 0 END), sum(CASE WHEN r.status='wrong_answer' THEN 1 ELSE 0 END),"
      " sum(CASE WHEN r.status='timeout' THEN 1 ELSE 0 END),"
      " (SELECT b.id FROM records b WHERE b.workload_id=w.id AND b.target_id=t.id AND b.threads=r.threads AND b.status='ok'"
      "   AND {V:b} ORDER BY b.median_s, b.id LIMIT 1)"
      " FROM records r JOIN workloads w ON w.id=r.workload_id JOIN targets t ON t.id=r.target_id"
      " GROUP BY w.id, t.id, r.threads ORDER BY w.id, t.id, r.threads";
  db_cursor *q = query(db, sql, "");
  if (!q) return fail(db, "reading the summary");
  fprintf(f, "%-70s %-8s %3s %6s %5s %s %9s %7s  %s\n", "workload", "target", "thr", "trials", "ok", "errors(c/r/w/t)",
          "best GF/s", "spread", "best config");
  int rc;
  while ((rc = db->be->next(q)) == 1) {
    char errs[64];
    snprintf(errs, sizeof errs, "%d/%d/%d/%d", (int)db->be->i64(q, 5), (int)db->be->i64(q, 6), (int)db->be->i64(q, 7),
             (int)db->be->i64(q, 8));
    char cfg[512] = "-";
    double spread = 0, gflops = 0;
    int64_t best_id = db->be->i64(q, 9);
    if (best_id) {   /* the best record's own row: its config and spread */
      db_cursor *b = query(db, RECORD_COLS " FROM records r JOIN workloads w ON w.id=r.workload_id WHERE r.id=$1", "i", best_id);
      if (b && db->be->next(b) == 1) {
        db_record rec;
        read_record(db, b, &rec);
        snprintf(cfg, sizeof cfg, "%s", rec.config);
        if (rec.median_s > 0) spread = (rec.max_s - rec.min_s) / rec.median_s * 100;
        gflops = rec.gflops;
      }
      if (b) db->be->done(b);
    }
    fprintf(f, "%-70s %-8s %3d %6d %5d %-15s %9.1f %6.1f%%  %s\n", col_text(db, q, 0), col_text(db, q, 1), (int)db->be->i64(q, 2),
            (int)db->be->i64(q, 3), (int)db->be->i64(q, 4), errs, gflops, spread, cfg);
  }
  db->be->done(q);
  if (rc) return fail(db, "reading the summary");
  /* what temper refine kept, per model, target and thread count */
  q = query(db,
            "SELECT c.model, t.cpu, c.threads, count(*), sum(c.gain_s), max(c.measured_at) FROM choices c"
            " JOIN targets t ON t.id=c.target_id GROUP BY c.model, t.id, t.cpu, c.threads ORDER BY c.model, t.id, c.threads",
            "");
  if (!q) return fail(db, "reading the choices summary");
  int first = 1;
  while ((rc = db->be->next(q)) == 1) {
    if (first) fprintf(f, "\n%-18s %-8s %3s %7s %13s  %s\n", "refined model", "target", "thr", "choices", "saved", "when"), first = 0;
    fprintf(f, "%-18s %-8s %3d %7d %10.3f ms  %s\n", col_text(db, q, 0), col_text(db, q, 1), (int)db->be->i64(q, 2),
            (int)db->be->i64(q, 3), db->be->f64(q, 4) * 1e3, col_text(db, q, 5));
  }
  db->be->done(q);
  if (rc) return fail(db, "reading the choices summary");
  return show_leases(db, f);
}

temper_status db_threads_measured(temper_db *db, const char *workload, int64_t tid, int **out, int *n) {
  *out = NULL;
  *n = 0;
  db_cursor *q = query(db,
                       "SELECT DISTINCT r.threads FROM records r JOIN workloads w ON w.id=r.workload_id WHERE w.key=$1 AND"
                       " r.target_id=$2 AND r.status='ok' AND {V:r} ORDER BY r.threads",
                       "ti", workload, tid);
  if (!q) return fail(db, "reading thread counts");
  int cap = 0, rc;
  while ((rc = db->be->next(q)) == 1) {
    int *no = row_room(*out, &cap, *n, sizeof **out, 8);
    if (!no) { db->be->done(q); free(*out); *out = NULL; *n = 0; return TEMPER_ENOMEM; }
    *out = no;
    (*out)[(*n)++] = (int)db->be->i64(q, 0);
  }
  db->be->done(q);
  return rc ? fail(db, "reading thread counts") : TEMPER_OK;
}

int db_count_stale(temper_db *db, const char *workload, int64_t tid) {
  int64_t n = 0;
  one_int(db, &n, NULL,
          "SELECT count(*) FROM records r JOIN workloads w ON w.id=r.workload_id WHERE w.key=$1 AND r.target_id=$2 AND {STALE:r}", "ti",
          workload, tid);
  return (int)n;
}

/* ---- whole-database reads for export and matching ---- */
temper_status db_targets(temper_db *db, db_target_row **out, int *n) {
  *out = NULL;
  *n = 0;
  db_cursor *q = query(db,
                       "SELECT t.id, t.triple, t.cpu, t.features, t.llvm_version, t.cores, (SELECT count(*) FROM records r"
                       " WHERE r.target_id=t.id) FROM targets t ORDER BY t.id",
                       "");
  if (!q) return fail(db, "reading targets");
  int cap = 0, rc;
  while ((rc = db->be->next(q)) == 1) {
    db_target_row *no = row_room(*out, &cap, *n, sizeof **out, 8);
    if (!no) { db->be->done(q); free(*out); *out = NULL; *n = 0; return TEMPER_ENOMEM; }
    *out = no;
    db_target_row *r = &(*out)[(*n)++];
    memset(r, 0, sizeof *r);
    r->id = db->be->i64(q, 0);
    snprintf(r->t.triple, sizeof r->t.triple, "%s", col_text(db, q, 1));
    snprintf(r->t.cpu, sizeof r->t.cpu, "%s", col_text(db, q, 2));
    snprintf(r->t.features, sizeof r->t.features, "%s", col_text(db, q, 3));
    snprintf(r->t.llvm_version, sizeof r->t.llvm_version, "%s", col_text(db, q, 4));
    r->t.cores = (int)db->be->i64(q, 5);
    r->records = (int)db->be->i64(q, 6);
  }
  db->be->done(q);
  return rc ? fail(db, "reading targets") : TEMPER_OK;
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
  const char *best = RECORD_COLS ", w.op, w.description, w.flops"
                     " FROM records r JOIN workloads w ON w.id=r.workload_id JOIN targets t ON t.id=r.target_id"
                     " WHERE r.status='ok' AND {V:r} AND r.id = (SELECT b.id FROM records b"
                     "  WHERE b.workload_id=r.workload_id AND b.target_id=r.target_id AND b.threads=r.threads AND b.status='ok' AND"
                     "  {V:b} AND b.template=r.template AND"
                     "  {IC:b} IS NOT DISTINCT FROM {IC:r} AND {OC:b} IS NOT DISTINCT FROM {OC:r}"
                     "  ORDER BY b.median_s, b.id LIMIT 1)"
                     " ORDER BY w.key, t.triple, t.cpu, t.features, t.llvm_version, t.cores, r.threads, r.median_s, r.id";
  db_cursor *q = query(db, best_only ? best : all, "");
  if (!q) return fail(db, "reading records");
  int rc;
  temper_status s = TEMPER_OK;
  while (!s && (rc = db->be->next(q)) == 1) {
    db_record r;
    read_record(db, q, &r);
    s = fn(ctx, &r, col_text(db, q, 20), db->be->text(q, 21) ? col_text(db, q, 21) : "{}", db->be->f64(q, 22));
  }
  db->be->done(q);
  if (s) return s;
  return rc ? fail(db, "reading records") : TEMPER_OK;
}

int db_has_record(temper_db *db, const db_record *r) {
  int64_t one;
  int found = 0;
  one_int(db, &one, &found,
          "SELECT 1 FROM records x JOIN workloads w ON w.id=x.workload_id WHERE w.key=$1 AND x.target_id=$2 AND"
          " x.config=$3 AND x.threads=$4 AND x.host=$5 AND x.measured_at=$6 AND x.remeasure=$7 AND x.status=$8 LIMIT 1",
          "titnttnt", r->workload, r->target_id, r->config, r->threads, r->host, r->measured_at, r->remeasure,
          db_status_names[r->status]);
  return found;
}

/* ---- the choices of refine ---- */
temper_status db_choices_replace(temper_db *db, const char *model, int64_t target_id, int threads, const db_choice *c, int n,
                                 const char *host, const char *temper_version) {
  temper_status s = db_begin(db);
  if (s) return s;
  s = write1(db, "deleting old choices", NULL, "DELETE FROM choices WHERE model=$1 AND target_id=$2 AND threads=$3", "tin", model,
             target_id, threads);
  char when[32];
  utc_now(when, sizeof when);
  for (int i = 0; i < n && !s; i++)
    s = write1(db, "inserting a choice (is the workload in the database?)", NULL,
               "INSERT INTO choices(model, target_id, threads, workload_id, template, template_version, config, replaces,"
               " gain_s, measured_at, host, temper_version) VALUES($1, $2, $3, (SELECT id FROM workloads WHERE key=$4),"
               " $5, $6, $7, $8, $9, $10, $11, $12)",
               "tinttnttdttt", model, target_id, threads, c[i].workload, c[i].tmpl, c[i].tmpl_version, c[i].config, c[i].replaces,
               c[i].gain_s, c[i].measured_at[0] ? c[i].measured_at : when, host, temper_version);
  if (s) {
    db_rollback(db);
    return s;
  }
  return db_commit(db);
}

temper_status db_choices_get(temper_db *db, const char *model, int64_t target_id, int threads, db_choice **out, int *n) {
  *out = NULL;
  *n = 0;
  db_cursor *q = query(db,
                       "SELECT w.key, c.template, c.template_version, c.config, c.replaces, c.gain_s, c.measured_at, c.host"
                       " FROM choices c JOIN workloads w ON w.id = c.workload_id"
                       " WHERE c.model=$1 AND c.target_id=$2 AND c.threads=$3 ORDER BY c.id",
                       "tin", model, target_id, threads);
  if (!q) return fail(db, "reading choices");
  int cap = 0, rc;
  while ((rc = db->be->next(q)) == 1) {
    db_choice *no = row_room(*out, &cap, *n, sizeof **out, 16);
    if (!no) { db->be->done(q); free(*out); *out = NULL; *n = 0; return TEMPER_ENOMEM; }
    *out = no;
    db_choice *c = &(*out)[(*n)++];
    memset(c, 0, sizeof *c);
    snprintf(c->workload, sizeof c->workload, "%s", col_text(db, q, 0));
    snprintf(c->tmpl, sizeof c->tmpl, "%s", col_text(db, q, 1));
    c->tmpl_version = (int)db->be->i64(q, 2);
    snprintf(c->config, sizeof c->config, "%s", col_text(db, q, 3));
    snprintf(c->replaces, sizeof c->replaces, "%s", col_text(db, q, 4));
    c->gain_s = db->be->f64(q, 5);
    snprintf(c->measured_at, sizeof c->measured_at, "%s", col_text(db, q, 6));
    snprintf(c->host, sizeof c->host, "%s", col_text(db, q, 7));
  }
  db->be->done(q);
  return rc ? fail(db, "reading choices") : TEMPER_OK;
}

/* ---- leases: tuners sharing a database split the tasks ---- */
temper_status db_now(temper_db *db, double *s) {
  db_cursor *q = query(db, "SELECT {NOW}", "");
  *s = 0;
  if (!q) return fail(db, "reading the clock");
  int rc = db->be->next(q);
  if (rc == 1) *s = db->be->f64(q, 0);
  db->be->done(q);
  return rc == 1 ? TEMPER_OK : fail(db, "reading the clock");
}

static temper_status lease_claim_once(temper_db *db, int64_t wid, int64_t tid, int threads, const db_lease_owner *me, double ttl_s,
                                      double round_start, db_lease *out) {
  memset(out, 0, sizeof *out);
  char when[32];
  utc_now(when, sizeof when);
  temper_status s = db_begin(db);
  if (s) return s;
  db_cursor *q = query(db, "SELECT owner, host, run_id, expires, done_at, {NOW} FROM leases WHERE workload_id=$1 AND target_id=$2"
                           " AND threads=$3{SKIP}", "iin", wid, tid, threads);
  int rc = q ? db->be->next(q) : -1;
  if (rc < 0) {
    s = fail(db, "reading a lease");
    if (q) db->be->done(q);
    db_rollback(db);
    return s;
  }
  if (rc == 0) {   /* no row, or one locked by another tuner right now */
    db->be->done(q);
    int64_t got = 0;
    s = write1(db, "claiming a lease", &got,
               "INSERT INTO leases(workload_id, target_id, threads, owner, host, run_id, since, expires) VALUES($1, $2, $3, $4, $5, $6,"
               " $7, {NOW} + $8) ON CONFLICT DO NOTHING RETURNING 1",
               "iinttitd", wid, tid, threads, me->owner, me->host, me->run_id, when, ttl_s);
    out->state = got ? DB_LEASE_MINE : DB_LEASE_BUSY;
  } else {
    int mine = !strcmp(col_text(db, q, 0), me->owner);
    snprintf(out->holder, sizeof out->holder, "%s", col_text(db, q, 1));
    int64_t run = db->be->i64(q, 2);
    double expires = db->be->f64(q, 3), now = db->be->f64(q, 5);
    int done = db->be->text(q, 4) != NULL;
    double done_at = db->be->f64(q, 4);
    db->be->done(q);
    if (!mine && done && done_at > round_start) out->state = DB_LEASE_DONE;   /* finished in this round */
    else if (!mine && !done && expires > now) out->state = DB_LEASE_BUSY;
    else {
      out->state = DB_LEASE_MINE;
      out->prev_run = !mine && !done ? run : 0;   /* a tuner that died or stopped: resume from its records */
      if (mine)
        s = write1(db, "renewing a lease", NULL,
                   "UPDATE leases SET expires={NOW} + $4 WHERE workload_id=$1 AND target_id=$2 AND threads=$3", "iind", wid, tid, threads,
                   ttl_s);
      else
        s = write1(db, "taking a lease", NULL,
                   "UPDATE leases SET owner=$4, host=$5, run_id=$6, since=$7, expires={NOW} + $8, done_at=NULL"
                   " WHERE workload_id=$1 AND target_id=$2 AND threads=$3",
                   "iinttitd", wid, tid, threads, me->owner, me->host, me->run_id, when, ttl_s);
    }
  }
  if (s) {
    db_rollback(db);
    return s;
  }
  return db_commit(db);
}

/* One transaction: the task's row locked (PostgreSQL skips a row another
 * tuner holds locked at this instant: that tuner is busy with it), then
 * mine if free, expired, or finished before `round_start`; done if finished
 * in this round; busy if another tuner's lease is live. A server that goes
 * away inside it: the transaction again once it is back. */
temper_status db_lease_claim(temper_db *db, const char *workload, int64_t tid, int threads, const db_lease_owner *me, double ttl_s,
                             double round_start, db_lease *out) {
  memset(out, 0, sizeof *out);
  int64_t wid;
  int found;
  temper_status s = one_int(db, &wid, &found, "SELECT id FROM workloads WHERE key=$1", "t", workload);
  if (s) return s;
  if (!found) {
    snprintf(db->err, sizeof db->err, "%s: no workload %s to lease", db_where(db), workload);
    return TEMPER_EDB;
  }
  for (int tries = 0;;) {
    s = lease_claim_once(db, wid, tid, threads, me, ttl_s, round_start, out);
    if (!s || !again_after_loss(db, &tries)) return s;
  }
}

temper_status db_lease_renew(temper_db *db, const char *owner, double ttl_s) {
  temper_status s = write1(db, "renewing leases", NULL, "UPDATE leases SET expires={NOW} + $2 WHERE owner=$1 AND done_at IS NULL", "td",
                           owner, ttl_s);
  if (!s) s = write1(db, "renewing a tuner", NULL, "UPDATE tuners SET expires={NOW} + $2 WHERE owner=$1", "td", owner, ttl_s);
  return s;
}

/* A tuner joins: the round is the one of the tuners alive now (the
 * earliest start among them), or a new one from now; its row once, also
 * where a commit landed unacknowledged and the join runs again */
static temper_status tuner_join_once(temper_db *db, const db_lease_owner *me, double ttl_s, double *round_start) {
  temper_status s = db_begin(db);
  if (s) return s;
  db_cursor *q = query(db, "SELECT min(round_start), {NOW} FROM tuners WHERE expires > {NOW}", "");
  int rc = q ? db->be->next(q) : -1;
  if (rc == 1) *round_start = db->be->text(q, 0) ? db->be->f64(q, 0) : db->be->f64(q, 1);
  if (q) db->be->done(q);
  if (rc != 1) s = fail(db, "reading the tuners");
  if (!s)
    s = write1(db, "joining the tuners", NULL,
               "INSERT INTO tuners(run_id, owner, host, round_start, expires) VALUES($1, $2, $3, $4, {NOW} + $5)"
               " ON CONFLICT(run_id) DO NOTHING", "ittdd", me->run_id,
               me->owner, me->host, *round_start, ttl_s);
  if (s) {
    db_rollback(db);
    return s;
  }
  return db_commit(db);
}

temper_status db_tuner_join(temper_db *db, const db_lease_owner *me, double ttl_s, double *round_start) {
  for (int tries = 0;;) {
    temper_status s = tuner_join_once(db, me, ttl_s, round_start);
    if (!s || !again_after_loss(db, &tries)) return s;
  }
}

int db_lease_held(temper_db *db, const char *workload, int64_t tid, int threads, const char *owner) {
  int64_t one;
  int found = 0;
  db->no_wait = 1;   /* a server away is no answer: the caller goes on */
  temper_status s = one_int(db, &one, &found,
                            "SELECT 1 FROM leases l JOIN workloads w ON w.id=l.workload_id WHERE w.key=$1 AND l.target_id=$2 AND"
                            " l.threads=$3 AND l.owner=$4 AND l.done_at IS NULL",
                            "tint", workload, tid, threads, owner);
  db->no_wait = 0;
  return s ? -1 : found;
}

temper_status db_lease_release(temper_db *db, const char *workload, int64_t tid, int threads, const char *owner, int done) {
  return write1(db, "releasing a lease", NULL,
                done ? "UPDATE leases SET done_at={NOW}, expires={NOW} WHERE owner=$1 AND target_id=$3 AND threads=$4 AND"
                       " workload_id=(SELECT id FROM workloads WHERE key=$2)"
                     : "UPDATE leases SET expires=0 WHERE owner=$1 AND target_id=$3 AND threads=$4 AND"
                       " workload_id=(SELECT id FROM workloads WHERE key=$2)",
                "ttin", owner, workload, tid, threads);
}

temper_status db_lease_release_all(temper_db *db, const char *owner) {
  temper_status s = write1(db, "releasing leases", NULL, "UPDATE leases SET expires=0 WHERE owner=$1 AND done_at IS NULL", "t", owner);
  if (!s) s = write1(db, "leaving the tuners", NULL, "UPDATE tuners SET expires=0 WHERE owner=$1", "t", owner);
  return s;
}
