/* main.c: the temper command: one file per subcommand. */
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "measure.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: temper <command> [options]\n"
          "  run MODEL|OUT.so   compile in memory (or load a built library) and run (--check compares with the reference)\n"
          "  lower MODEL        print the fused program (--fused) or every kernel's loop IR (--loops), LLVM IR, assembly\n"
          "  space MODEL        the tuning tasks and their knob spaces (--task K for one)\n"
          "  tune MODEL --db DB   tune every conv2d workload, recording every measurement\n"
          "  refine MODEL --db DB choose among the records by timing the whole model (kept in the database)\n"
          "  build MODEL -o OUT.so  a library with the best recorded schedules (--db DB; --check runs it)\n"
          "  db show|targets DB   what a tuning database holds, and which tuners hold which tasks\n"
          "  report DB [MODEL] -o REPORT.html   where the time goes and how tuning went, as a page with plots\n"
          "  db export DB | db import DB IN.jsonl... | db merge OUT_DB IN_DB...   tuning logs between machines\n"
          "  DB is a file (SQLite, created if missing) or postgresql://user@host:port/dbname (shared by many tuners)\n"
          "  version            print the version\n"
          "See docs/cli.md for every option.\n");
}

int main(int argc, char **argv) {
  if (argc < 2) { usage(stderr); return 2; }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "run")) return cmd_run(argc - 1, argv + 1);
  if (!strcmp(cmd, "lower")) return cmd_lower(argc - 1, argv + 1);
  if (!strcmp(cmd, "space")) return cmd_space(argc - 1, argv + 1);
  if (!strcmp(cmd, "tune")) return cmd_tune(argc - 1, argv + 1);
  if (!strcmp(cmd, "db")) return cmd_db(argc - 1, argv + 1);
  if (!strcmp(cmd, "build")) return cmd_build(argc - 1, argv + 1);
  if (!strcmp(cmd, "refine")) return cmd_refine(argc - 1, argv + 1);
  if (!strcmp(cmd, "report")) return cmd_report(argc - 1, argv + 1);
  if (!strcmp(cmd, "__runner")) return runner_main();   /* hidden: the tuner's measuring process */
  if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) { printf("temper %s\n", TEMPER_VERSION); return 0; }
  if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) { usage(stdout); return 0; }
  fprintf(stderr, "temper: unknown command '%s'\n", cmd);
  usage(stderr);
  return 2;
}
