/* db.c: temper db show|targets|export|import|merge — the tuning database
 * and its logs (db/, tuner/log.c); argv and printing only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "log.h"
#include "tune.h"

static int db_usage(void) {
  fprintf(stderr, "usage: temper db show DB\n"
                  "       temper db export DB [-o OUT.jsonl] [--best-only] [--task PATTERN] [--target CPU]\n"
                  "       temper db import DB IN.jsonl... [--skip-bad]\n"
                  "       temper db merge OUT_DB IN_DB...\n"
                  "       temper db targets DB\n"
                  "  DB: a file (SQLite) or postgresql://user@host:port/dbname?sslmode=...\n");
  return 2;
}

static temper_db *open_db(const char *path, int must_exist) {
  if (must_exist && !db_is_url(path) && access(path, F_OK)) { fprintf(stderr, "temper: %s: no such database\n", path); return NULL; }
  temper_db *db = NULL;
  char err[4096];
  if (temper_db_open(path, tune_db_versions(), &db, err, sizeof err)) { fprintf(stderr, "temper: %s\n", err); return NULL; }
  return db;
}

static void print_result(const char *name, const log_result *r) {
  printf("%s: %d imported, %d duplicates skipped", name, r->imported, r->duplicates);
  if (r->n_bad) printf(", %d bad line%s skipped:", r->n_bad + r->more_bad, r->n_bad + r->more_bad > 1 ? "s" : "");
  printf("\n");
  for (int i = 0; i < r->n_bad; i++) printf("  %s:%d: %s\n", name, r->bad[i].line, r->bad[i].reason);
  if (r->more_bad) printf("  ... and %d more\n", r->more_bad);
}

static int db_show_cmd(int argc, char **argv) {
  if (argc != 3) return db_usage();
  temper_db *db = open_db(argv[2], 1);
  if (!db) return 1;
  temper_status s = db_show(db, stdout);
  if (s) fprintf(stderr, "temper: %s\n", db_errmsg(db));
  temper_db_close(db);
  return s ? 1 : 0;
}

static int db_targets_cmd(int argc, char **argv) {
  if (argc != 3) return db_usage();
  temper_db *db = open_db(argv[2], 1);
  if (!db) return 1;
  db_target_row *t = NULL;
  int n = 0;
  temper_status s = db_targets(db, &t, &n);
  if (s) fprintf(stderr, "temper: %s\n", db_errmsg(db));
  else printf("%-4s %-10s %-22s %-6s %5s %8s  %s\n", "id", "cpu", "triple", "llvm", "cores", "records", "features");
  for (int i = 0; !s && i < n; i++)
    printf("%-4lld %-10s %-22s %-6s %5d %8d  %.100s%s\n", (long long)t[i].id, t[i].t.cpu, t[i].t.triple, t[i].t.llvm_version,
           t[i].t.cores, t[i].records, t[i].t.features, strlen(t[i].t.features) > 100 ? "..." : "");
  free(t);
  temper_db_close(db);
  return s ? 1 : 0;
}

static int db_export_cmd(int argc, char **argv) {
  const char *out = NULL;
  log_filter f = {0};
  for (int i = 3; i < argc; i++) {
    if (!strcmp(argv[i], "-o") && i + 1 < argc) out = argv[++i];
    else if (!strcmp(argv[i], "--best-only")) f.best_only = 1;
    else if (!strcmp(argv[i], "--task") && i + 1 < argc) f.task = argv[++i];
    else if (!strcmp(argv[i], "--target") && i + 1 < argc) f.target = argv[++i];
    else return db_usage();
  }
  temper_db *db = open_db(argv[2], 1);
  if (!db) return 1;
  FILE *fo = out ? fopen(out, "w") : stdout;
  if (!fo) { fprintf(stderr, "temper: %s: cannot create\n", out); temper_db_close(db); return 1; }
  diag d = {0};
  int n = 0;
  temper_status s = log_export(db, fo, &f, &n, &d);
  if (out && fclose(fo) && !s) s = diag_fail(&d, TEMPER_EIO, "%s: write failed", out);
  if (s) fprintf(stderr, "temper: %s\n", d.msg);
  else if (out) fprintf(stderr, "exported %d records to %s\n", n, out);
  temper_db_close(db);
  return s ? 1 : 0;
}

/* import IN.jsonl... and merge IN.db...: each input in a transaction of its own */
static int db_import_cmd(int argc, char **argv, int merge) {
  int skip_bad = 0, n_in = 0, rc = 0;
  for (int i = 3; i < argc; i++) {
    if (!strcmp(argv[i], "--skip-bad") && !merge) skip_bad = 1;
    else n_in++;
  }
  if (!n_in) return db_usage();
  temper_db *db = open_db(argv[2], 0);
  if (!db) return 1;
  for (int i = 3; i < argc; i++) {
    if (!strcmp(argv[i], "--skip-bad")) continue;
    log_result r;
    diag d = {0};
    temper_status s = merge ? log_merge(db, argv[i], &r, &d) : log_import(db, argv[i], skip_bad, &r, &d);
    if (s) fprintf(stderr, "temper: %s\n", d.msg), rc = 1;
    else print_result(argv[i], &r);
  }
  temper_db_close(db);
  return rc;
}

int cmd_db(int argc, char **argv) {
  if (argc < 3) return db_usage();
  const char *sub = argv[1];
  if (!strcmp(sub, "show")) return db_show_cmd(argc, argv);
  if (!strcmp(sub, "targets")) return db_targets_cmd(argc, argv);
  if (!strcmp(sub, "export")) return db_export_cmd(argc, argv);
  if (!strcmp(sub, "import") || !strcmp(sub, "merge")) return db_import_cmd(argc, argv, !strcmp(sub, "merge"));
  return db_usage();
}
