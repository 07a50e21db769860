/* fuzz_log.c: the JSON-lines log reader (db import) into a database in memory. */
#include "fuzz.h"
#include "log.h"
#include "tune.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_file(data, size, ".jsonl");
  if (!path) return 0;
  temper_db *db = NULL;
  char err[4096];
  if (temper_db_open(":memory:", tune_db_versions(), &db, err, sizeof err)) return 0;
  log_result r;
  diag d = {0};
  log_import(db, path, 1, &r, &d);
  temper_db_close(db);
  return 0;
}
