/* run.c: temper run MODEL — compile in memory, run, time, check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli.h"
#include "library.h"

typedef struct run_opts {
  const char *model;
  int threads, repeat, check, profile, no_dw_fusion, no_pw_fusion;
  const char *save_dir;
  const char *config_file;
  const char *db;
  const char *pretuned;
  program_opts data;
} run_opts;

static int usage(void) {
  fprintf(stderr, "usage: temper run MODEL [--threads N] [--repeat N] [--check] [--profile] [--params DIR]\n"
                  "                  [--input NAME=FILE.npy]... [--save-output DIR] [--seed S] [--config-file F | --db DB [--no-pretuned]]\n"
                  "                  [--no-fuse-depthwise] [--no-fuse-expand]\n");
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
    else if (!strcmp(a, "--no-fuse-depthwise")) o->no_dw_fusion = 1;
    else if (!strcmp(a, "--no-fuse-expand")) o->no_pw_fusion = 1;
    else if (!strcmp(a, "--save-output") && v) o->save_dir = v, i++;
    else if (!strcmp(a, "--config-file") && v) o->config_file = v, i++;
    else if (!strcmp(a, "--no-pretuned")) o->pretuned = "off";
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
static int open_chooser(const run_opts *o, const cg_target *t, temper_graph *g, db_chooser **dc) {
  char err[4096];
  diag d = {.path = g->path, .text = g->text};
  if (db_chooser_open(o->db, t, o->threads, 0, dc, err, sizeof err) ||
      db_chooser_use_pretuned(*dc, o->pretuned ? o->pretuned : db_chooser_pretuned_default(), err, sizeof err)) {
    fprintf(stderr, "temper run: %s\n", err);
    return 1;
  }
  if (db_chooser_set_model(*dc, g, &d)) { fprintf(stderr, "%s\n", d.msg); return 1; }
  return 0;
}

/* the model compiled with the schedules --config-file or --db give */
static int compile(const run_opts *o, temper_engine *e, program *p) {
  pipeline_opts po = {.vec = e->target.vec, .no_dw_fusion = o->no_dw_fusion, .no_pw_fusion = o->no_pw_fusion};
  json_t *configs = NULL;
  db_chooser *dc = NULL;
  if (o->config_file && !(configs = cli_load_config_file(o->config_file))) return 1;
  if (configs) po.choose = cli_config_choose, po.ctx = configs;
  if (o->db && open_chooser(o, &e->target, p->g, &dc)) { db_chooser_close(dc); return 1; }
  if (dc) po.choose = db_chooser_choose, po.ctx = dc;
  int bad = cli_compile(p, e, &po, o->threads);
  if (dc && !bad) cli_print_choices(dc);
  db_chooser_close(dc);
  json_decref(configs);
  return bad;
}

static void print_timing(const run_timing *t, int threads) {
  printf("latency: median %.3f ms, min %.3f ms, spread %.1f%% over %d runs (%d thread%s)\n", t->median_s * 1e3, t->min_s * 1e3,
         t->median_s > 0 ? (t->max_s - t->min_s) / t->median_s * 100 : 0, t->repeat, threads, threads == 1 ? "" : "s");
}

static void print_output(int i, const shape_t *s, const float *y) {
  char ty[128];
  type_t t = {.kind = TY_TENSOR, .shape = *s};
  print_type(ty, sizeof ty, &t);
  printf("output %d: %s checksum %.6g\n", i, ty, data_checksum(y, shape_numel(s)));
}

/* per kernel, in call order: its median in sequence and alone */
static int profile(exec *x, int repeat) {
  step_timing *st = calloc((size_t)x->n_steps + 1, sizeof *st);
  if (!st || exec_profile(x, repeat, st)) { free(st); fprintf(stderr, "temper: out of memory\n"); return 1; }
  double total = 0, total_alone = 0;
  printf("  %3s %-60s %11s %11s %s\n", "#", "kernel", "in sequence", "alone", "GFLOP/s in sequence");
  for (int i = 0; i < x->n_steps; i++) {
    total += st[i].in_sequence_s;
    total_alone += st[i].alone_s;
    printf("  %3d %-60.60s %8.3f ms %8.3f ms %7.1f\n", i, x->steps[i].k->name, st[i].in_sequence_s * 1e3, st[i].alone_s * 1e3,
           x->steps[i].k->flops / st[i].in_sequence_s * 1e-9);
  }
  printf("  sum of kernel medians: %.3f ms in sequence, %.3f ms alone\n", total * 1e3, total_alone * 1e3);
  free(st);
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

/* DIR/output_<i>.npy */
static int save(const char *dir, int i, const shape_t *s, const float *y) {
  char path[4096], err[512];
  mkdir(dir, 0777);
  snprintf(path, sizeof path, "%s/output_%d.npy", dir, i);
  if (npy_write(path, s, y, err, sizeof err)) { fprintf(stderr, "temper: %s\n", err); return 1; }
  return 0;
}

static void run_lib(void *l) {
  diag d = {0};
  lib_run(l, &d);
}

/* temper run OUT.so: the library timed like an in-memory model, on the same seeded inputs */
static int run_library(const run_opts *o) {
  built_lib *l = NULL;
  diag d = {0};
  run_timing tm;
  int rc = 1;
  if (lib_open(o->model, o->threads, &l, &d) || lib_inputs_from(l, &o->data, &d) || lib_run(l, &d)) {
    fprintf(stderr, "temper: %s\n", d.msg);
    goto out;
  }
  printf("model: %s (a built library, %d input%s, %d output%s)\n", o->model, lib_num_inputs(l), lib_num_inputs(l) == 1 ? "" : "s",
         lib_num_outputs(l), lib_num_outputs(l) == 1 ? "" : "s");
  if (engine_time(run_lib, l, o->repeat, &tm)) goto out;
  rc = 0;
  for (int i = 0; i < lib_num_outputs(l); i++) {
    shape_t s;
    const float *y = lib_output(l, i, &s);
    print_output(i, &s, y);
    if (o->save_dir && save(o->save_dir, i, &s, y)) rc = 1;
  }
  print_timing(&tm, o->threads);
out:
  lib_close(l);
  return rc;
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
  run_timing tm;
  if (exec_time(p.x, o->repeat, &tm)) { fprintf(stderr, "temper: out of memory\n"); goto out; }
  for (int i = 0; i < p.x->n_outputs; i++) print_output(i, &p.x->output_shapes[i], exec_output(p.x, i));
  print_timing(&tm, o->threads);
  if (o->profile && profile(p.x, o->repeat)) goto out;
  rc = o->check ? check(&p) : 0;
  for (int i = 0; o->save_dir && i < p.x->n_outputs; i++)
    if (save(o->save_dir, i, &p.x->output_shapes[i], exec_output(p.x, i))) rc = 1;
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
  return run_library(&o);
}
