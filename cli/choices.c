/* choices.c: printing the chooser's report (tuner/choose.h): the schedule of
 * every workload and where it came from, the fallbacks with their share of
 * the model's FLOPs. */
#include <stdio.h>
#include "cli.h"

int cli_print_choices(const db_chooser *dc) {
  chooser_summary s;
  db_chooser_summary(dc, &s);
  printf("%-66s %5s  %s\n", "workload", "count", "schedule");
  for (int i = 0; i < s.n_workloads; i++) {
    chooser_entry c;
    db_chooser_get(dc, i, &c);
    if (c.predicted) {
      printf("%-66.66s %5d  predicted by the cost model (no record): %s\n", c.key, c.count, c.predicted_config);
      continue;
    }
    if (!c.config) {
      printf("%-66.66s %5d  default config (no record)\n", c.key, c.count);
      continue;
    }
    if (c.median_s > 0)
      printf("%-66.66s %5d  %s (%s): %.3f ms (%.1f GFLOP/s)%s %s\n", c.key, c.count, c.pretuned ? "pre-tuned" : "record",
             c.level_name, c.median_s * 1e3, c.flops / c.median_s * 1e-9,
             c.threads != s.threads ? " [nearest measured thread count]" : "", c.config);
    else   /* refine's choice of the default config, never measured alone here */
      printf("%-66.66s %5d  default config (no record of it) %s\n", c.key, c.count, c.config);
    if (c.pretuned) printf("    from the shipped log %s (no record of yours)\n", c.pretuned);
    if (c.threads != s.threads)
      printf("    measured at %d thread%s; this build runs %d\n", c.threads, c.threads > 1 ? "s" : "", s.threads);
    if (c.in_context && c.default_moved)
      printf("    temper refine (%.10s) chose the default config over the records' pick %s; the default here is now "
             "another (an older temper's defaults, or another block from the producer): it runs instead\n", c.refined_at, c.replaced);
    else if (c.in_context)
      printf("    chosen in context by temper refine (%.10s): %.3f ms faster in the whole model than the records' pick %s\n",
             c.refined_at, c.gain_s * 1e3, c.replaced);
    else if (c.fastest_s < c.median_s)
      printf("    chosen over the fastest record (%.3f ms) to spare a layout transform or reads from other cores\n", c.fastest_s * 1e3);
  }
  if (s.n_stale) printf("ignored %d record%s of older template versions\n", s.n_stale, s.n_stale > 1 ? "s" : "");
  if (s.refine_hint)
    printf("no choices of temper refine for this model at %d thread%s: `temper refine MODEL --db DB --threads %d` times "
           "the records' alternatives in the whole model\n", s.threads, s.threads > 1 ? "s" : "", s.threads);
  if (s.stale_choices)
    printf("ignored %d choice%s of temper refine: the records changed since (run temper refine again)\n", s.stale_choices,
           s.stale_choices > 1 ? "s" : "");
  if (s.default_moved)
    printf("%d choice%s of temper refine took a default config that is not the default here now (an older temper's, or "
           "another block from the producer): the build runs today's default there (`temper refine` weighs it in the whole "
           "model)\n", s.default_moved,
           s.default_moved > 1 ? "s" : "");
  if (s.default_unmeasured)
    printf("%d workload%s no record of today's default config, which an untuned build runs and this one does not (the "
           "database was tuned with other defaults, an older temper's): `temper tune` measures it and `temper refine` "
           "weighs it in the whole model\n", s.default_unmeasured, s.default_unmeasured > 1 ? "s have" : " has");
  if (s.n_pretuned)
    printf("pre-tuned: %d of %d workloads from shipped logs (--no-pretuned: the default configs instead)\n", s.n_pretuned, s.n_workloads);
  if (s.n_fell && !s.n_predicted)
    printf("fallback: %d of %d workloads use the default config: %.1f%% of the model's conv2d FLOPs\n", s.n_fell, s.n_workloads,
           100 * s.fell_flops_share);
  else if (s.n_fell)
    printf("fallback: %d of %d workloads have no record, %d of them the cost model's pick (--predict): %.1f%% of the model's conv2d FLOPs\n",
           s.n_fell, s.n_workloads, s.n_predicted, 100 * s.fell_flops_share);
  if (s.est_s > 0)
    printf("estimated conv2d latency from the records: %.2f ms%s\n", s.est_s * 1e3,
           s.est_complete ? "" : " (workloads without records not counted)");
  return s.n_fell;
}
