/* db_int.h: what db.c needs of a SQL engine, and the two engines that give
 * it. db.c holds the schema, the migrations and every query, once; a backend
 * runs SQL with parameters and returns rows as text and numbers.
 *
 *      db.c ── queries, schema, leases, the spool of unwritten records
 *        │ db_backend (this file)
 *        ├── db_sqlite.c   a file path: the embedded default; the only file with sqlite3.h
 *        └── db_pg.c       postgresql://…: libpq; the only file with libpq-fe.h
 *
 * SQL dialect. db.c writes one SQL that both engines accept: parameters are
 * $1, $2 … (the SQLite backend rewrites them to ?1, ?2); upserts are
 * ON CONFLICT … DO NOTHING / DO UPDATE; new ids come back by RETURNING;
 * booleans are summed as CASE … END; NULL-safe equality is IS NOT DISTINCT
 * FROM. What differs is given by the backend as SQL fragments below, and in
 * DDL as the tokens {ID} (an auto-numbered 64-bit key) and {TEXT} (text
 * compared byte by byte, so both engines sort an export alike). */
#ifndef TEMPER_DB_INT_H
#define TEMPER_DB_INT_H
#include <stddef.h>
#include <stdint.h>
#include "temper/temper.h"

typedef struct db_conn db_conn;       /* one backend's connection */
typedef struct db_cursor db_cursor;   /* the rows of one statement */

typedef enum db_ptype { DB_P_NULL, DB_P_INT, DB_P_DOUBLE, DB_P_TEXT } db_ptype;
typedef struct db_param {
  db_ptype type;
  int64_t i;
  double f;
  const char *s;   /* borrowed for the statement's run */
} db_param;

typedef struct db_backend {
  const char *name;            /* "SQLite", "PostgreSQL" */
  const char *id_type;         /* DDL of an auto-numbered primary key */
  const char *text_type;       /* DDL of text sorted by bytes */
  const char *begin_write;     /* a transaction that will write */
  const char *skip_locked;     /* appended to a SELECT of rows to lock */
  const char *now_s;           /* SQL: the database's clock, in seconds since 1970 */
  const char *json_int;        /* printf format (column, key) of an integer member of a JSON text column */
  const char *table_exists;    /* SQL, $1 = name: one row if that table exists */
  const char *any_table;       /* SQL: one row if the database has any table at all */
  /* where: a path or a URL; on failure *c is NULL and err says why */
  temper_status (*open)(const char *where, db_conn **c, char *err, size_t n);
  void (*close)(db_conn *c);
  const char *(*errmsg)(db_conn *c);   /* of the last failure */
  int (*lost)(db_conn *c);             /* the connection to a server is gone */
  int (*reconnect)(db_conn *c);        /* 0: connected again */
  int (*exec)(db_conn *c, const char *sql);   /* 0 ok: statements without parameters or rows */
  /* runs sql with its parameters; NULL on failure (errmsg says why) */
  db_cursor *(*query)(db_conn *c, const char *sql, const db_param *p, int n);
  int (*next)(db_cursor *q);           /* 1 a row, 0 done, -1 failed */
  const char *(*text)(db_cursor *q, int col);   /* NULL for SQL NULL */
  int64_t (*i64)(db_cursor *q, int col);
  double (*f64)(db_cursor *q, int col);
  void (*done)(db_cursor *q);
  const char *(*where)(db_conn *c);    /* the path, or the URL without its password */
} db_backend;

extern const db_backend db_sqlite_backend;
extern const db_backend db_pg_backend;

#endif
