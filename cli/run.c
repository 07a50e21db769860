/* run.c: temper run MODEL — compile in memory, run, time, check. */
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
  program_opts data;
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

/* 0, or 2 after printing the usage */
static int parse_args(int argc, char **argv, run_opts *o) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int data = cli_data_flag(&o->data, argc, argv, &i);
    if (data < 0) return 2;
    if (data) continue;
    if (!strcmp(a, "--threads")) { if (parse_int(a, v, 1, 256, &o->threads)) return 2; i++; }
    else if (!strcmp(a, "--repeat")) { if (parse_int(a, v, 1, 1000000, &o->repeat)) return 2; i++; }
    else if (!strcmp(a, "--check")) o->check = 1;
    else if (!strcmp(a, "--profile")) o->profile = 1;
    else if (!strcmp(a, "--save-output") && v) o->save_dir = v, i++;
    else if (!strcmp(a, "--config-file") && v) o->config_file = v, i++;
    else if (!strcmp(a, "--db") && v) o->db = v, i++;
    else if (a[0] == '-') { fprintf(stderr, "temper run: unknown option '%s'\n", a); return usage(); }
    else if (!o->model) o->model = a;
    else return usage();
  }
  if (!o->model) return usage();
  if (o->config_file && o->db) {
    fprintf(stderr, "temper run: --config-file and --db both choose the schedules: give one\n");
    return 2;
  }
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

/* the model compiled with the schedules --config-file or --db give */
static int compile(const run_opts *o, temper_engine *e, program *p) {
  pipeline_opts po = {.vec = e->target.vec};
  json_t *configs = NULL;
  db_chooser *dc = NULL;
  if (o->config_file && !(configs = cli_load_config_file(o->config_file))) return 1;
  if (configs) po.choose = cli_config_choose, po.ctx = configs;
  if (o->db && open_chooser(o->db, &e->target, o->threads, p->g, &dc)) { db_chooser_close(dc); return 1; }
  if (dc) po.choose = db_chooser_choose, po.ctx = dc;
  int bad = cli_compile(p, e, &po, o->threads);
  if (dc && !bad) cli_print_choices(dc);
  db_chooser_close(dc);
  json_decref(configs);
  return bad;
}

/* per kernel: its median inside whole inferences ("in sequence", with the
 * caches the steps before left) and repeated alone (hot) */
static void profile(exec *x, int repeat) {
  double *kt = calloc((size_t)repeat * (size_t)(x->n_steps + 1), sizeof(double)), *alone = calloc((size_t)repeat, sizeof(double));
  double total = 0, total_alone = 0;
  if (!kt || !alone) { free(kt), free(alone); return; }
  for (int r = 0; r < repeat; r++)
    for (int i = 0; i < x->n_steps; i++) {
      double s0 = data_now();
      exec_run_step(x, i);
      kt[(size_t)i * (size_t)repeat + (size_t)r] = data_now() - s0;
    }
  printf("  %3s %-60s %11s %11s %s\n", "#", "kernel", "in sequence", "alone", "GFLOP/s in sequence");
  for (int i = 0; i < x->n_steps; i++) {
    exec_step *st = &x->steps[i];
    double *ks = kt + (size_t)i * (size_t)repeat;
    qsort(ks, (size_t)repeat, sizeof(double), cmp_double);
    for (int r = 0; r < repeat; r++) {
      double s0 = data_now();
      st->k->fn(st->argv, x->pool);
      alone[r] = data_now() - s0;
    }
    qsort(alone, (size_t)repeat, sizeof(double), cmp_double);
    double m = ks[repeat / 2], a = alone[repeat / 2];
    total += m;
    total_alone += a;
    printf("  %3d %-60.60s %8.3f ms %8.3f ms %7.1f\n", i, st->k->name, m * 1e3, a * 1e3, st->k->flops / m * 1e-9);
  }
  printf("  sum of kernel medians: %.3f ms in sequence, %.3f ms alone\n", total * 1e3, total_alone * 1e3);
  free(kt);
  free(alone);
}

/* one warm-up, then the median of `repeat` timed runs; prints the outputs and the latency */
static int time_and_print(const run_opts *o, exec *x) {
  double *times = calloc((size_t)o->repeat, sizeof(double));
  if (!times) return 1;
  exec_run(x);
  for (int r = 0; r < o->repeat; r++) {
    double s0 = data_now();
    exec_run(x);
    times[r] = data_now() - s0;
  }
  qsort(times, (size_t)o->repeat, sizeof(double), cmp_double);
  double med = times[o->repeat / 2], mn = times[0], mx = times[o->repeat - 1];
  free(times);
  for (int i = 0; i < x->n_outputs; i++) {
    char ty[128];
    type_t t = {.kind = TY_TENSOR, .shape = x->output_shapes[i]};
    print_type(ty, sizeof ty, &t);
    printf("output %d: %s checksum %.6g\n", i, ty, data_checksum(exec_output(x, i), shape_numel(&x->output_shapes[i])));
  }
  printf("latency: median %.3f ms, min %.3f ms, spread %.1f%% over %d runs (%d thread%s)\n", med * 1e3, mn * 1e3,
         med > 0 ? (mx - mn) / med * 100 : 0, o->repeat, o->threads, o->threads == 1 ? "" : "s");
  return 0;
}

/* against the reference, within what the chosen configs allow (a Winograd tile rounds more) */
static int check(const program *p) {
  double tol = engine_tolerance(p->g);
  int rc = 0;
  for (int i = 0; i < p->x->n_outputs && i < p->n_ref; i++) {
    double ae, re = data_rel_error(exec_output(p->x, i), p->ref[i], shape_numel(&p->x->output_shapes[i]), &ae);
    int ok = re <= tol;
    printf("check output %d: max abs error %.3g, relative error %.3g (%s %.0e)\n", i, ae, re, ok ? "ok: within" : "FAILED: over", tol);
    rc |= !ok;
  }
  return rc;
}

static int save(const exec *x, const char *dir) {
  mkdir(dir, 0777);
  for (int i = 0; i < x->n_outputs; i++) {
    char path[4096], err[512];
    snprintf(path, sizeof path, "%s/output_%d.npy", dir, i);
    if (npy_write(path, &x->output_shapes[i], exec_output(x, i), err, sizeof err)) { fprintf(stderr, "temper: %s\n", err); return 1; }
  }
  return 0;
}

static int run_model(const run_opts *o) {
  program p = {0};
  temper_engine *e = NULL;
  diag d = {0};
  int rc = 1;
  if (cli_load(o->model, &o->data, &p)) goto out;
  if (o->check && program_reference(&p, &d)) { fprintf(stderr, "temper: reference: %s\n", d.msg); goto out; }
  if (engine_create(&e, &d)) { fprintf(stderr, "temper: %s\n", d.msg); goto out; }
  double t0 = data_now();
  if (compile(o, e, &p)) goto out;
  printf("model: %s\ncompiled %d kernels (%d calls) for %s (%s, %d-float vectors) in %.2f s\n", o->model, e->n_compiled,
         p.x->n_steps, e->target.cpu, e->target.triple, e->target.vec, data_now() - t0);
  if (time_and_print(o, p.x)) goto out;
  if (o->profile) profile(p.x, o->repeat);
  rc = o->check ? check(&p) : 0;
  if (o->save_dir && save(p.x, o->save_dir)) rc = 1;
out:
  program_free(&p);
  engine_destroy(e);
  return rc;
}

int cmd_run(int argc, char **argv) {
  run_opts o = {.threads = 1, .repeat = 10, .data = {.seed = 1}};
  int rc = parse_args(argc, argv, &o);
  if (rc) return rc;
  size_t ml = strlen(o.model);
  if (ml <= 3 || strcmp(o.model + ml - 3, ".so")) return run_model(&o);
  if (o.check || o.profile || o.config_file || o.db || o.data.params_dir) {   /* a built library */
    fprintf(stderr, "temper run: --check, --profile, --config-file, --db and --params need the model's source, not a built library\n");
    return 2;
  }
  return cli_run_library(o.model, o.threads, o.repeat, &o.data, o.save_dir);
}
