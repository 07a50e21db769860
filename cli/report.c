/* report.c: temper report DB [MODEL] -o report.html — the tuning report
 * (report/report.h); argv and printing only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "report.h"

static int usage(void) {
  fprintf(stderr, "usage: temper report DB [MODEL] -o REPORT.html [--measure] [--repeat N] [--svg DIR] [--params DIR] [--no-pretuned]\n"
                  "  DB: a file (SQLite) or postgresql://...; with MODEL: its tasks, and what a build here chooses\n");
  return 2;
}

int cli_write_report(const report_opts *o, const char *out_path) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.part", out_path);
  FILE *f = fopen(tmp, "w");
  if (!f) { fprintf(stderr, "temper report: %s: cannot write\n", out_path); return 1; }
  diag d = {0};
  int n = 0;
  temper_status s = report_write(o, f, &n, &d);
  if (fclose(f) && !s) s = TEMPER_EIO, snprintf(d.msg, sizeof d.msg, "%s: cannot write", out_path);
  if (s || rename(tmp, out_path)) {   /* a failed report leaves the last good one */
    remove(tmp);
    fprintf(stderr, "temper report: %s\n", s ? d.msg : "cannot rename the report into place");
    return 1;
  }
  fprintf(stderr, "report: %s (%d section%s: target × threads)%s%s\n", out_path, n, n == 1 ? "" : "s", o->svg_dir ? "; plots in " : "",
          o->svg_dir ? o->svg_dir : "");
  return 0;
}

int cmd_report(int argc, char **argv) {
  report_opts o = {.repeat = 10, .data = {.seed = 1}, .pretuned = db_chooser_pretuned_default()};
  const char *out = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int df = cli_data_flag(&o.data, argc, argv, &i);
    if (df < 0) return 2;
    if (df) continue;
    if (!strcmp(a, "-o") && v) out = v, i++;
    else if (!strcmp(a, "--svg") && v) o.svg_dir = v, i++;
    else if (!strcmp(a, "--measure")) o.measure = 1;
    else if (!strcmp(a, "--no-pretuned")) o.pretuned = NULL;
    else if (!strcmp(a, "--repeat") && v) {
      o.repeat = atoi(v), i++;
      if (o.repeat < 1 || o.repeat > 10000) { fprintf(stderr, "temper report: --repeat expects 1 to 10000, got '%s'\n", v); return 2; }
    } else if (a[0] == '-') { fprintf(stderr, "temper report: unknown option '%s'\n", a); return usage(); }
    else if (!o.db) o.db = a;
    else if (!o.model) o.model = a;
    else return usage();
  }
  if (!o.db || !out) return usage();
  if (o.measure && !o.model) { fprintf(stderr, "temper report: --measure needs the MODEL\n"); return 2; }
  return cli_write_report(&o, out);
}
