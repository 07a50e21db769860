/* db_sqlite.c: the embedded backend, one SQLite file in WAL mode; the only
 * file that includes sqlite3.h. A file may come from elsewhere, so it is
 * opened defensively and checked before anything reads it. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "db_int.h"

struct db_conn {
  sqlite3 *h;
  char path[1024];
  char err[1024];
};

struct db_cursor {
  db_conn *c;
  sqlite3_stmt *st;
};

static const char *sq_errmsg(db_conn *c) { return c->err[0] ? c->err : sqlite3_errmsg(c->h); }

static void sq_close(db_conn *c) {
  if (!c) return;
  sqlite3_close_v2(c->h);
  free(c);
}

static int sq_exec(db_conn *c, const char *sql) {
  c->err[0] = 0;
  return sqlite3_exec(c->h, sql, NULL, NULL, NULL);
}

/* PRAGMA quick_check: a damaged file is refused before anything reads it */
static int quick_check(db_conn *c) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(c->h, "PRAGMA quick_check(1)", -1, &st, NULL)) return -1;
  int rc = sqlite3_step(st), bad = 0;
  const char *r = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) bad = -1;
  else if (r && strcmp(r, "ok")) {
    snprintf(c->err, sizeof c->err, "the database is damaged (quick_check: %.200s)", r);
    bad = 1;
  }
  sqlite3_finalize(st);
  return bad;
}

static temper_status sq_open(const char *path, db_conn **out, char *err, size_t n) {
  *out = NULL;
  db_conn *c = calloc(1, sizeof *c);
  if (!c) { snprintf(err, n, "out of memory"); return TEMPER_ENOMEM; }
  snprintf(c->path, sizeof c->path, "%s", path);
  const char *what = NULL;
  if (sqlite3_open_v2(path, &c->h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, NULL)) {
    what = "cannot open";
    goto fail;
  }
  sqlite3_busy_timeout(c->h, 30000);
  /* no writes to the schema or shadow tables by SQL, and nothing in a
   * crafted schema (views, triggers) runs functions that are not harmless */
  sqlite3_db_config(c->h, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
  sqlite3_db_config(c->h, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
  sqlite3_extended_result_codes(c->h, 1);
  /* the first read tells a corrupt or foreign file apart */
  /* switching to WAL can meet another connection's lock without the busy
   * handler being asked (a new file opened by several tuners at once) */
  int rc, tries = 0;
  while (((rc = sq_exec(c, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;")) & 0xff) == SQLITE_BUSY &&
         tries++ < 3000)
    sqlite3_sleep(10);
  if (rc) {
    what = "not a usable SQLite database";
    goto fail;
  }
  int qc = quick_check(c);
  if (qc < 0) what = "checking the file";
  if (qc) goto fail;
  *out = c;
  return TEMPER_OK;
fail:
  if (what) snprintf(err, n, "%s: %s: %s", path, what, c->h ? sqlite3_errmsg(c->h) : "out of memory");
  else snprintf(err, n, "%s: %s", path, c->err);
  sq_close(c);
  return TEMPER_EDB;
}

static int sq_lost(db_conn *c) { (void)c; return 0; }
static int sq_reconnect(db_conn *c) { (void)c; return 0; }

/* $N → ?N outside string literals: one SQL text for both engines */
static char *to_sqlite(const char *sql) {
  size_t len = strlen(sql);
  char *out = malloc(len + 1);
  if (!out) return NULL;
  int quoted = 0;
  for (size_t i = 0; i <= len; i++) {
    quoted ^= sql[i] == '\'';
    out[i] = sql[i] == '$' && !quoted ? '?' : sql[i];
  }
  return out;
}

static db_cursor *sq_query(db_conn *c, const char *sql, const db_param *p, int n) {
  c->err[0] = 0;
  db_cursor *q = calloc(1, sizeof *q);
  char *text = to_sqlite(sql);
  if (!q || !text) {
    free(q), free(text);
    snprintf(c->err, sizeof c->err, "out of memory");
    return NULL;
  }
  q->c = c;
  int rc = sqlite3_prepare_v2(c->h, text, -1, &q->st, NULL);
  free(text);
  if (rc) { free(q); return NULL; }
  for (int i = 0; i < n; i++) {
    switch (p[i].type) {
    case DB_P_NULL: sqlite3_bind_null(q->st, i + 1); break;
    case DB_P_INT: sqlite3_bind_int64(q->st, i + 1, p[i].i); break;
    case DB_P_DOUBLE: sqlite3_bind_double(q->st, i + 1, p[i].f); break;
    case DB_P_TEXT: sqlite3_bind_text(q->st, i + 1, p[i].s, -1, SQLITE_TRANSIENT); break;
    }
  }
  return q;
}

static int sq_next(db_cursor *q) {
  int rc = sqlite3_step(q->st);
  return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

static const char *sq_text(db_cursor *q, int col) { return (const char *)sqlite3_column_text(q->st, col); }
static int64_t sq_i64(db_cursor *q, int col) { return sqlite3_column_int64(q->st, col); }
static double sq_f64(db_cursor *q, int col) { return sqlite3_column_double(q->st, col); }

static void sq_done(db_cursor *q) {
  if (!q) return;
  /* keep the statement's error for errmsg: finalize returns it again */
  if (sqlite3_finalize(q->st) && !q->c->err[0]) snprintf(q->c->err, sizeof q->c->err, "%s", sqlite3_errmsg(q->c->h));
  free(q);
}

static const char *sq_where(db_conn *c) { return c->path; }

const db_backend db_sqlite_backend = {
    .name = "SQLite",
    .id_type = "INTEGER PRIMARY KEY",
    .text_type = "TEXT",
    .begin_write = "BEGIN IMMEDIATE",
    .skip_locked = "",
    .now_s = "((julianday('now') - 2440587.5) * 86400.0)",
    .json_int = "json_extract(%s, '$.%s')",
    .table_exists = "SELECT 1 FROM sqlite_master WHERE type='table' AND name=$1",
    .any_table = "SELECT 1 FROM sqlite_master LIMIT 1",
    .open = sq_open,
    .close = sq_close,
    .errmsg = sq_errmsg,
    .lost = sq_lost,
    .reconnect = sq_reconnect,
    .exec = sq_exec,
    .query = sq_query,
    .next = sq_next,
    .text = sq_text,
    .i64 = sq_i64,
    .f64 = sq_f64,
    .done = sq_done,
    .where = sq_where,
};
