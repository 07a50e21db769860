/* run.c: temper run MODEL — compile in memory, run, time, check. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli.h"

typedef struct run_opts {
  const char *model;
  int threads, repeat, check, profile;
  const char *save_dir;
  const char *config_file;
  const char *db;
} run_opts;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int usage(void) {
  fprintf(stderr, "usage: temper run MODEL [--threads N] [--repeat N] [--check] [--profile] [--params DIR]\n"
                  "                  [--input NAME=FILE.npy]... [--save-output DIR] [--seed S] [--config-file F | --db FILE]\n");
  return 2;
}

static int parse_int(const char *flag, const char *v, int lo, int hi, int *out) {
  char *end;
  long x = v ? strtol(v, &end, 10) : 0;
  if (!v || *end || x < lo || x > hi) {
    fprintf(stderr, "temper: %s expects an integer in [%d, %d], got '%s'\n", flag, lo, hi, v ? v : "");
    return 1;
  }
  *out = (int)x;
  return 0;
}

/* --db: the chooser of `temper build --threads N`, for this model; prints the error */
static int open_chooser(const char *db, const cg_target *t, int threads, temper_graph *g, db_chooser **dc) {
  char err[4096];
  diag d = {.path = g->path, .text = g->text};
  if (db_chooser_open(db, t, threads, 0, dc, err, sizeof err)) { fprintf(stderr, "temper run: %s\n", err); return 1; }
  if (db_chooser_set_model(*dc, g, &d)) { fprintf(stderr, "%s\n", d.msg); return 1; }
  return 0;
}

int cmd_run(int argc, char **argv) {
  run_opts o = {.threads = 1, .repeat = 10};
  model_data md = {.seed = 1};
  int rc = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--threads")) { if (parse_int(a, v, 1, 256, &o.threads)) return 2; i++; }
    else if (!strcmp(a, "--repeat")) { if (parse_int(a, v, 1, 1000000, &o.repeat)) return 2; i++; }
    else if (!strcmp(a, "--check")) o.check = 1;
    else if (!strcmp(a, "--profile")) o.profile = 1;
    else if (!strcmp(a, "--params") && v) { md.params_dir = v; i++; }
    else if (!strcmp(a, "--input") && v) { if (cli_parse_input_flag(&md, v)) return 2; i++; }
    else if (!strcmp(a, "--save-output") && v) { o.save_dir = v; i++; }
    else if (!strcmp(a, "--config-file") && v) { o.config_file = v; i++; }
    else if (!strcmp(a, "--db") && v) { o.db = v; i++; }
    else if (!strcmp(a, "--seed") && v) { md.seed = strtoull(v, NULL, 10); i++; }
    else if (a[0] == '-') { fprintf(stderr, "temper run: unknown option '%s'\n", a); return usage(); }
    else if (!o.model) o.model = a;
    else return usage();
  }
  if (!o.model) return usage();
  if (o.config_file && o.db) {
    fprintf(stderr, "temper run: --config-file and --db both choose the schedules: give one\n");
    cli_model_data_free(&md);
    return 2;
  }
  size_t ml = strlen(o.model);
  if (ml > 3 && !strcmp(o.model + ml - 3, ".so")) {   /* a built library */
    if (o.check || o.profile || o.config_file || o.db || md.params_dir) {
      fprintf(stderr, "temper run: --check, --profile, --config-file, --db and --params need the model's source, not a built library\n");
      cli_model_data_free(&md);
      return 2;
    }
    int r = cli_run_library(o.model, o.threads, o.repeat, &md, o.save_dir);
    cli_model_data_free(&md);
    return r;
  }
  temper_graph *g = NULL;
  temper_engine *e = NULL;
  exec *x = NULL;
  float **ref = NULL;
  int n_ref = 0;
  double *times = NULL;
  if (cli_read_model(o.model, &g) || cli_model_data(g, &md)) goto out;
  diag d = {.path = g->path, .text = g->text};
  if (o.check && ref_eval_func(g->main, (const float *const *)md.values, &ref, &n_ref, &d)) {
    fprintf(stderr, "temper: reference: %s\n", d.msg);
    goto out;
  }
  if (engine_create(&e, &d)) { fprintf(stderr, "temper: %s\n", d.msg); goto out; }
  /* remember which values feed the remaining parameters (inputs) */
  node **in_nodes = calloc((size_t)md.n_params + 1, sizeof(node *));
  float **in_vals = calloc((size_t)md.n_params + 1, sizeof(float *));
  int n_in = 0;
  if (!in_nodes || !in_vals) { free(in_nodes); free(in_vals); goto out; }
  for (int i = 0; i < md.n_params; i++)
    if (md.is_input[i]) in_nodes[n_in] = g->main->params[i], in_vals[n_in++] = md.values[i];
  double t0 = cli_now();
  pipeline_opts po = {.vec = e->target.vec};
  json_t *configs = NULL;
  if (o.config_file && !(configs = cli_load_config_file(o.config_file))) { free(in_nodes); free(in_vals); goto out; }
  if (configs) po.choose = cli_config_choose, po.ctx = configs;
  db_chooser *dc = NULL;   /* --db: the schedules `temper build --threads N` would choose */
  if (o.db && open_chooser(o.db, &e->target, o.threads, g, &dc)) {
    free(in_nodes);
    free(in_vals);
    db_chooser_close(dc);
    goto out;
  }
  if (dc) po.choose = db_chooser_choose, po.ctx = dc;
  int bad = cli_bind_and_optimize(g, &md, &po);
  json_decref(configs);
  if (dc && !bad) cli_print_choices(dc);
  db_chooser_close(dc);
  if (!bad && exec_create(e, g, o.threads, &x, &d)) { fprintf(stderr, "temper: %s\n", d.msg); bad = 1; }
  double t_compile = cli_now() - t0;
  for (int i = 0; !bad && i < x->n_inputs; i++)
    for (int j = 0; j < n_in; j++)
      if (x->inputs[i] == in_nodes[j]) exec_set_input(x, i, in_vals[j]);
  free(in_nodes);
  free(in_vals);
  if (bad) goto out;
  printf("model: %s\ncompiled %d kernels (%d calls) for %s (%s, %d-float vectors) in %.2f s\n", o.model, e->n_compiled,
         x->n_steps, e->target.cpu, e->target.triple, e->target.vec, t_compile);
  exec_run(x);   /* warm-up */
  times = calloc((size_t)o.repeat, sizeof(double));
  if (!times) goto out;
  for (int r = 0; r < o.repeat; r++) {
    double s0 = cli_now();
    exec_run(x);
    times[r] = cli_now() - s0;
  }
  qsort(times, (size_t)o.repeat, sizeof(double), cmp_double);
  double med = times[o.repeat / 2], mn = times[0], mx = times[o.repeat - 1];
  for (int i = 0; i < x->n_outputs; i++) {
    char ty[128];
    type_t t = {.kind = TY_TENSOR, .shape = x->output_shapes[i]};
    print_type(ty, sizeof ty, &t);
    printf("output %d: %s checksum %.6g\n", i, ty, data_checksum(exec_output(x, i), shape_numel(&x->output_shapes[i])));
  }
  printf("latency: median %.3f ms, min %.3f ms, spread %.1f%% over %d runs (%d thread%s)\n", med * 1e3, mn * 1e3,
         med > 0 ? (mx - mn) / med * 100 : 0, o.repeat, o.threads, o.threads == 1 ? "" : "s");
  rc = 0;
  if (o.profile) {   /* per kernel: median over the repeats, in call order */
    /* in sequence (each step as it runs inside a whole inference, with the
     * caches the steps before left) and alone (the step repeated, hot) */
    double *kt = calloc((size_t)o.repeat * (size_t)(x->n_steps + 1), sizeof(double)), *alone = calloc((size_t)o.repeat, sizeof(double));
    double total = 0, total_alone = 0;
    for (int r = 0; kt && r < o.repeat; r++)
      for (int i = 0; i < x->n_steps; i++) {
        double s0 = cli_now();
        exec_run_step(x, i);
        kt[(size_t)i * (size_t)o.repeat + (size_t)r] = cli_now() - s0;
      }
    printf("  %3s %-60s %11s %11s %s\n", "#", "kernel", "in sequence", "alone", "GFLOP/s in sequence");
    for (int i = 0; kt && alone && i < x->n_steps; i++) {
      exec_step *st = &x->steps[i];
      double *ks = kt + (size_t)i * (size_t)o.repeat;
      qsort(ks, (size_t)o.repeat, sizeof(double), cmp_double);
      for (int r = 0; r < o.repeat; r++) {
        double s0 = cli_now();
        st->k->fn(st->argv, x->pool);
        alone[r] = cli_now() - s0;
      }
      qsort(alone, (size_t)o.repeat, sizeof(double), cmp_double);
      double m = ks[o.repeat / 2], a = alone[o.repeat / 2];
      total += m;
      total_alone += a;
      printf("  %3d %-60.60s %8.3f ms %8.3f ms %7.1f\n", i, st->k->name, m * 1e3, a * 1e3, st->k->flops / m * 1e-9);
    }
    printf("  sum of kernel medians: %.3f ms in sequence, %.3f ms alone\n", total * 1e3, total_alone * 1e3);
    free(kt);
    free(alone);
  }
  if (o.check) {   /* against the reference, within what the chosen configs allow (a Winograd tile rounds more) */
    double tol = engine_tolerance(g);
    for (int i = 0; i < x->n_outputs && i < n_ref; i++) {
      double ae, re = data_rel_error(exec_output(x, i), ref[i], shape_numel(&x->output_shapes[i]), &ae);
      int ok = re <= tol;
      printf("check output %d: max abs error %.3g, relative error %.3g (%s %.0e)\n", i, ae, re, ok ? "ok: within" : "FAILED: over", tol);
      if (!ok) rc = 1;
    }
  }
  if (o.save_dir) {
    mkdir(o.save_dir, 0777);
    for (int i = 0; i < x->n_outputs; i++) {
      char path[4096], err[512];
      snprintf(path, sizeof path, "%s/output_%d.npy", o.save_dir, i);
      if (npy_write(path, &x->output_shapes[i], exec_output(x, i), err, sizeof err)) {
        fprintf(stderr, "temper: %s\n", err);
        rc = 1;
      }
    }
  }
out:
  free(times);
  for (int i = 0; i < n_ref; i++) free(ref[i]);
  free(ref);
  exec_destroy(x);
  engine_destroy(e);
  cli_model_data_free(&md);
  temper_graph_destroy(g);
  return rc;
}
