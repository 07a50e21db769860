/* db_pg.c: the shared backend, a PostgreSQL server through libpq; the only
 * file that includes libpq-fe.h. Parameters and rows travel as text; a
 * double is written with 17 significant digits, so it comes back exact. */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "db.h"
#include "db_int.h"

struct db_conn {
  PGconn *pg;
  char url[1024];     /* as given, with its password */
  char shown[1024];   /* as messages show it: the password replaced by *** */
  char err[1024];
};

struct db_cursor {
  db_conn *c;
  PGresult *r;
  int row, rows;
};

int db_is_url(const char *where) { return !strncmp(where, "postgresql://", 13) || !strncmp(where, "postgres://", 11); }

/* the URL without its password: user:secret@host and ?password=secret */
static void redact(const char *url, char *out, size_t n) {
  const char *scheme = strstr(url, "://");
  const char *host = scheme ? scheme + 3 : url;
  const char *at = strchr(host, '@'), *slash = strchr(host, '/');
  const char *colon = at && (!slash || at < slash) ? memchr(host, ':', (size_t)(at - host)) : NULL;
  if (colon) snprintf(out, n, "%.*s:***%s", (int)(colon - url), url, at);
  else snprintf(out, n, "%s", url);
  char *pw = strstr(out, "password=");
  if (pw && pw > out && (pw[-1] == '?' || pw[-1] == '&')) {
    char tmp[1024];
    const char *end = strchr(pw, '&');
    snprintf(tmp, sizeof tmp, "%.*s***%s", (int)(pw + 9 - out), out, end ? end : "");
    snprintf(out, n, "%s", tmp);
  }
}

void db_shown(const char *where, char *out, size_t n) {
  if (db_is_url(where)) redact(where, out, n);
  else snprintf(out, n, "%s", where);
}

static void keep_error(db_conn *c, const char *msg) {
  snprintf(c->err, sizeof c->err, "%s", msg && *msg ? msg : "unknown PostgreSQL error");
  size_t len = strlen(c->err);
  while (len && (c->err[len - 1] == '\n' || c->err[len - 1] == ' ')) c->err[--len] = 0;
}

static void quiet(void *arg, const char *message) { (void)arg, (void)message; }   /* NOTICEs are not errors */

/* a connection's settings, again after a reconnect */
static int session(db_conn *c) {
  PQsetNoticeProcessor(c->pg, quiet, NULL);
  PGresult *r = PQexec(c->pg, "SET client_min_messages = warning; SET TIME ZONE 'UTC'");
  int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
  if (!ok) keep_error(c, PQerrorMessage(c->pg));
  PQclear(r);
  return ok ? 0 : -1;
}

static void pg_close(db_conn *c) {
  if (!c) return;
  PQfinish(c->pg);
  free(c);
}

static temper_status pg_open(const char *url, db_conn **out, char *err, size_t n) {
  *out = NULL;
  db_conn *c = calloc(1, sizeof *c);
  if (!c) { snprintf(err, n, "out of memory"); return TEMPER_ENOMEM; }
  snprintf(c->url, sizeof c->url, "%s", url);
  redact(url, c->shown, sizeof c->shown);
  /* the URL's own settings win over these defaults (later entries override) */
  const char *keys[] = {"connect_timeout", "application_name", "dbname", NULL};
  const char *vals[] = {"10", "temper", url, NULL};
  c->pg = PQconnectdbParams(keys, vals, 1);
  if (!c->pg || PQstatus(c->pg) != CONNECTION_OK) {
    keep_error(c, c->pg ? PQerrorMessage(c->pg) : "out of memory");
    snprintf(err, n, "%s: cannot connect to the PostgreSQL server: %s", c->shown, c->err);
    pg_close(c);
    return TEMPER_EDB;
  }
  if (session(c)) {
    snprintf(err, n, "%s: %s", c->shown, c->err);
    pg_close(c);
    return TEMPER_EDB;
  }
  *out = c;
  return TEMPER_OK;
}

static const char *pg_errmsg(db_conn *c) { return c->err; }
static int pg_lost(db_conn *c) { return PQstatus(c->pg) == CONNECTION_BAD; }

static int pg_reconnect(db_conn *c) {
  PQreset(c->pg);
  if (PQstatus(c->pg) != CONNECTION_OK) {
    keep_error(c, PQerrorMessage(c->pg));
    return -1;
  }
  return session(c);
}

static int pg_exec(db_conn *c, const char *sql) {
  PGresult *r = PQexec(c->pg, sql);
  ExecStatusType st = PQresultStatus(r);
  int ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
  if (!ok) keep_error(c, r ? PQresultErrorMessage(r) : PQerrorMessage(c->pg));
  PQclear(r);
  return ok ? 0 : -1;
}

enum { PG_MAX_PARAMS = 32 };

static db_cursor *pg_query(db_conn *c, const char *sql, const db_param *p, int n) {
  if (n > PG_MAX_PARAMS) { keep_error(c, "too many parameters"); return NULL; }
  char num[PG_MAX_PARAMS][32];
  const char *vals[PG_MAX_PARAMS];
  for (int i = 0; i < n; i++) {
    switch (p[i].type) {
    case DB_P_NULL: vals[i] = NULL; break;
    case DB_P_INT: snprintf(num[i], sizeof num[i], "%lld", (long long)p[i].i), vals[i] = num[i]; break;
    case DB_P_DOUBLE: snprintf(num[i], sizeof num[i], "%.17g", p[i].f), vals[i] = num[i]; break;
    case DB_P_TEXT: vals[i] = p[i].s; break;
    }
  }
  PGresult *r = PQexecParams(c->pg, sql, n, NULL, vals, NULL, NULL, 0);
  ExecStatusType st = PQresultStatus(r);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    keep_error(c, r ? PQresultErrorMessage(r) : PQerrorMessage(c->pg));
    PQclear(r);
    return NULL;
  }
  db_cursor *q = calloc(1, sizeof *q);
  if (!q) { PQclear(r); keep_error(c, "out of memory"); return NULL; }
  *q = (db_cursor){c, r, -1, PQntuples(r)};
  return q;
}

static int pg_next(db_cursor *q) { return ++q->row < q->rows ? 1 : 0; }

static const char *pg_text(db_cursor *q, int col) {
  if (q->row < 0 || q->row >= q->rows || col >= PQnfields(q->r) || PQgetisnull(q->r, q->row, col)) return NULL;
  return PQgetvalue(q->r, q->row, col);
}

static int64_t pg_i64(db_cursor *q, int col) {
  const char *t = pg_text(q, col);
  return t ? strtoll(t, NULL, 10) : 0;
}

static double pg_f64(db_cursor *q, int col) {
  const char *t = pg_text(q, col);
  return t ? strtod(t, NULL) : 0;
}

static void pg_done(db_cursor *q) {
  if (!q) return;
  PQclear(q->r);
  free(q);
}

static const char *pg_where(db_conn *c) { return c->shown; }

const db_backend db_pg_backend = {
    .name = "PostgreSQL",
    .id_type = "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
    .text_type = "TEXT COLLATE \"C\"",
    .begin_write = "BEGIN",
    .skip_locked = " FOR UPDATE SKIP LOCKED",
    .now_s = "extract(epoch from clock_timestamp())::double precision",
    .json_int = "((%s)::jsonb->>'%s')",
    .table_exists = "SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = $1",
    .any_table = "SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = current_schema() LIMIT 1",
    .open = pg_open,
    .close = pg_close,
    .errmsg = pg_errmsg,
    .lost = pg_lost,
    .reconnect = pg_reconnect,
    .exec = pg_exec,
    .query = pg_query,
    .next = pg_next,
    .text = pg_text,
    .i64 = pg_i64,
    .f64 = pg_f64,
    .done = pg_done,
    .where = pg_where,
};
