/* refine.c: temper refine MODEL --db DB — the arguments of refine_run
 * (tuner/refine.c) and the printing of its outcome. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "refine.h"

static int usage(void) {
  fprintf(stderr, "usage: temper refine MODEL --db DB [--threads N] [--pairs P] [--alternatives K] [--min-gain PCT]\n"
                  "                     [--exhaustive] [--params DIR] [--seed S]\n");
  return 2;
}

static void print_base(void *ctx, const db_chooser *dc) {
  (void)ctx;
  cli_print_choices(dc);
}

/* runs refine and prints its outcome: 0, or 1 after printing the error */
int cli_refine(const refine_opts *o) {
  refine_result r;
  diag d = {0};
  if (refine_run(o, &r, &d)) { fprintf(stderr, "temper refine: %s\n", d.msg); return 1; }
  if (!r.changed)
    printf("refined in %.0f s: 0 of %d workloads changed; no alternative beat the records' choice twice\n", r.seconds, r.workloads);
  else
    printf("refined in %.0f s: %d of %d workloads changed; the model runs %.3f ms against %.3f ms with the records' choice "
           "(%+.2f%%, won %d of %d pairs)\n", r.seconds, r.changed, r.workloads, r.refined_s * 1e3, r.base_s * 1e3, r.rel * 100,
           r.wins, r.pairs);
  printf("compared %d alternatives in the whole model; skipped %d whose workload's share of the model bounds the gain under "
         "--min-gain and %d whose own steps gained too little in the screen (%d programs); stopped %d comparisons once the "
         "candidate could no longer win\n", r.tried, r.pruned, r.screened_out, r.screen_programs, r.stopped_early);
  if (r.changed && !r.stored) printf("not kept: together the changes lost to the records' choice\n");
  char where[1024];
  db_shown(o->db, where, sizeof where);
  printf("%s: %d choice%s for this model at %d thread%s (temper build and temper run --db use them)\n", where, r.stored,
         r.stored == 1 ? "" : "s", o->threads, o->threads > 1 ? "s" : "");
  return 0;
}

int cmd_refine(int argc, char **argv) {
  refine_opts o = refine_defaults();
  o.on_base = print_base;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int flag = cli_data_flag(&o.data, argc, argv, &i);
    if (flag < 0) return 2;
    if (flag) continue;
    if (!strcmp(a, "--db") && v) o.db = v, i++;
    else if (!strcmp(a, "--threads") && v) o.threads = atoi(v), i++;
    else if (!strcmp(a, "--pairs") && v) o.pairs = atoi(v), i++;
    else if (!strcmp(a, "--alternatives") && v) o.alternatives = atoi(v), i++;
    else if (!strcmp(a, "--min-gain") && v) o.min_gain = atof(v) / 100, i++;
    else if (!strcmp(a, "--exhaustive")) o.exhaustive = 1;
    else if (a[0] == '-') { fprintf(stderr, "temper refine: unknown option '%s'\n", a); return usage(); }
    else if (!o.model) o.model = a;
    else return usage();
  }
  if (!o.model || !o.db) return usage();
  if (o.threads < 1 || o.threads > 256 || o.pairs < 2 || o.pairs > 100000 || o.alternatives < 1 || o.alternatives > REFINE_MAX_ALT) {
    fprintf(stderr, "temper refine: --threads expects 1..256, --pairs at least 2, --alternatives 1..%d\n", REFINE_MAX_ALT);
    return 2;
  }
  return cli_refine(&o);
}
