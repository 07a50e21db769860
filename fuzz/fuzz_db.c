/* fuzz_db.c: a database file from elsewhere, opened and read through the
 * queries a build makes (targets, records, refine's choices) and `db show`. */
#include "choose.h"
#include "fuzz.h"
#include "tune.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_file(data, size, ".db");
  if (!path) return 0;
  char wal[300], shm[300];
  snprintf(wal, sizeof wal, "%s-wal", path);
  snprintf(shm, sizeof shm, "%s-shm", path);
  unlink(wal);
  unlink(shm);
  cg_target t = {.triple = "x86_64-pc-linux-gnu", .cpu = "znver4", .features = "+avx,+avx2,+avx512f", .vec = 16};
  db_chooser *dc = NULL;
  char err[4096];
  if (!db_chooser_open(path, &t, 1, 0, &dc, err, sizeof err)) {
    conv_workload w = {1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    task_space sp;
    space_build(&w, 16, &sp);
    char key[256];
    workload_key(&w, key, sizeof key);
    conv_site site = {.in_block = 0, .in_floats = 64 * 56 * 56};
    sched_config c;
    db_chooser_choose(dc, key, &sp, &site, &c, err, sizeof err);
    chooser_summary s;
    db_chooser_summary(dc, &s);
    db_chooser_close(dc);
  }
  temper_db *db = NULL;
  if (!temper_db_open(path, tune_db_versions(), &db, err, sizeof err)) {
    FILE *null = fopen("/dev/null", "w");
    if (null) db_show(db, null), fclose(null);
    temper_db_close(db);
  }
  return 0;
}
