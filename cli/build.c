/* build.c: temper build MODEL --db DB -o OUT.so — a tuned production
 * library: the best record of every workload for this machine (choose.c),
 * the template's default where there is none (listed, with its share of the
 * model's FLOPs; --strict refuses), linked with the runtime into OUT.so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "aot.h"
#include "cli.h"
#include "library.h"
#include "target.h"

static int usage(void) {
  fprintf(stderr, "usage: temper build MODEL [--db DB] -o OUT.so [--params DIR] [--threads N] [--strict]\n"
                  "                    [--target host|CPU|CPU:FEATURES] [--caches L1D,L2] [--match exact|any]\n"
                  "                    [--emit obj|asm|llvm|loops] [--embed-limit MB] [--seed S] [--input NAME=FILE.npy]...\n"
                  "                    [--check] [--no-pretuned | --pretuned PATH] [--predict] [--no-fuse-depthwise]\n"
                  "                    [--no-fuse-expand]\n");
  return 2;
}

/* --check: the library against the reference, on the program's inputs */
static int check_library(const char *path, int threads, const program *p) {
  built_lib *l = NULL;
  diag d = {0};
  int rc = 1;
  double tol = engine_tolerance(p->g);
  if (lib_open(path, threads, &l, &d)) goto out;
  for (int i = 0; i < lib_num_inputs(l); i++) {
    const float *v = program_input(p, lib_input_name(l, i));
    if (!v) { diag_fail(&d, TEMPER_EINVAL, "%s: input %s is not an input of the model", path, lib_input_name(l, i)); goto out; }
    lib_set_input(l, i, v);
  }
  if (lib_num_outputs(l) != p->n_ref) { diag_fail(&d, TEMPER_EINVAL, "%s has %d outputs, the model %d", path, lib_num_outputs(l), p->n_ref); goto out; }
  if (lib_run(l, &d)) goto out;
  rc = 0;
  for (int i = 0; i < p->n_ref; i++) {
    shape_t s;
    const float *y = lib_output(l, i, &s);
    double abs_err, rel = data_rel_error(y, p->ref[i], shape_numel(&s), &abs_err);
    printf("check %s output %d: max abs error %.3g, relative error %.3g (%s %.0e)\n", path, i, abs_err, rel,
           rel <= tol ? "ok: within" : "FAILED: over", tol);
    rc |= !(rel <= tol);
  }
out:
  if (d.msg[0]) fprintf(stderr, "temper build: %s\n", d.msg);
  lib_close(l);
  return rc;
}

typedef struct build_args {
  const char *model, *db, *target, *pretuned, *caches;
  int threads, strict, exact, check, predict, no_dw_fusion, no_pw_fusion;
  program_opts data;
  aot_opts ao;
} build_args;

/* 0, or 2 after printing the usage */
static int parse_args(int argc, char **argv, build_args *b) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int flag = cli_data_flag(&b->data, argc, argv, &i);
    if (flag < 0) return 2;
    if (flag) continue;
    if (!strcmp(a, "--db") && v) b->db = v, i++;
    else if (!strcmp(a, "-o") && v) b->ao.out = v, i++;
    else if (!strcmp(a, "--threads") && v) b->threads = atoi(v), i++;
    else if (!strcmp(a, "--strict")) b->strict = 1;
    else if (!strcmp(a, "--check")) b->check = 1;
    else if (!strcmp(a, "--no-pretuned")) b->pretuned = "off";
    else if (!strcmp(a, "--predict")) b->predict = 1;
    else if (!strcmp(a, "--no-fuse-depthwise")) b->no_dw_fusion = 1;
    else if (!strcmp(a, "--no-fuse-expand")) b->no_pw_fusion = 1;
    else if (!strcmp(a, "--pretuned") && v) b->pretuned = v, i++;
    else if (!strcmp(a, "--target") && v) b->target = v, i++;
    else if (!strcmp(a, "--caches") && v) b->caches = v, i++;
    else if (!strcmp(a, "--match") && v && (!strcmp(v, "exact") || !strcmp(v, "any"))) b->exact = !strcmp(v, "exact"), i++;
    else if (!strcmp(a, "--emit") && v) b->ao.emit = v, i++;
    else if (!strcmp(a, "--embed-limit") && v) b->ao.embed_limit_mb = atof(v), i++;
    else if (a[0] == '-') { fprintf(stderr, "temper build: unknown or incomplete option '%s'\n", a); return usage(); }
    else if (!b->model) b->model = a;
    else return usage();
  }
  if (!b->model || !b->ao.out) return usage();
  if (b->threads < 1 || b->threads > 256) { fprintf(stderr, "temper build: --threads expects 1..256\n"); return 2; }
  if (b->check && (b->ao.emit || strcmp(b->target, "host"))) {
    fprintf(stderr, "temper build: --check runs the library on this machine: it needs a library (no --emit) for the host (no --target)\n");
    return 2;
  }
  return 0;
}

/* a cache size: bytes, or with K or M ("48K", "2M"); -1 if not one */
static int64_t cache_size(const char *s, char **end) {
  int64_t v = strtoll(s, end, 10);
  if (*end == s || v <= 0) return -1;
  if (**end == 'K' || **end == 'k') v <<= 10, (*end)++;
  else if (**end == 'M' || **end == 'm') v <<= 20, (*end)++;
  return v;
}

/* the machine the library is for: this one, or --target's; --caches L1D,L2
 * sets the per-core caches its default configs fit (else the CPU's, where
 * target_cpu_caches knows it, else this machine's) */
static int build_target(const char *spec, const char *caches, cg_target *t) {
  diag d = {0};
  cg_host_target(t, &d);
  int64_t l1d, l2;
  const char *whose = "this machine's";
  if (strcmp(spec, "host")) {
    if (target_from_spec(spec, t)) {
      fprintf(stderr, "temper build: unknown target '%s': give its features, e.g. --target %s:+avx,+avx2,+fma\n", spec, spec);
      return 1;
    }
    if (target_cpu_caches(t->cpu, &l1d, &l2)) whose = "its CPU's";
  }
  if (caches) {
    char *end;
    l1d = cache_size(caches, &end);
    l2 = *end == ',' ? cache_size(end + 1, &end) : -1;
    if (l1d < 8 << 10 || l1d > 1 << 20 || l2 < 128 << 10 || l2 > 1LL << 30 || *end) {
      fprintf(stderr, "temper build: --caches '%s': expected the L1 data cache and the L2 per core, 8K..1M and 128K..1024M "
                      "(e.g. --caches 48K,2M)\n", caches);
      return 2;
    }
    t->l1d = l1d, t->l2 = l2;
    whose = "--caches";
  }
  if (strcmp(spec, "host") || caches)
    printf("target: %s (%s), %d-float vectors, %lld KB L1d and %lld KB L2 per core (%s)\n", t->cpu, t->features, t->vec,
           (long long)(t->l1d >> 10), (long long)(t->l2 >> 10), whose);
  return 0;
}

static void print_built(const aot_opts *ao, const aot_report *rep) {
  if (ao->emit) printf("wrote %s (%s of %d kernels)\n", ao->out, ao->emit, rep->n_kernels);
  else
    printf("built %s: %d kernels, %d steps; arena %.2f MB planned (%.2f MB of intermediates without reuse); weights %.1f MB %s\n",
           ao->out, rep->n_kernels, rep->n_steps, rep->arena_bytes / 1048576.0, rep->intermediate_bytes / 1048576.0,
           rep->params_bytes / 1048576.0, rep->params_embedded ? "embedded" : "in a .params file beside it");
}

int cmd_build(int argc, char **argv) {
  build_args b = {.target = "host", .threads = 1, .data = {.seed = 1}, .ao = {.embed_limit_mb = 64}, .pretuned = db_chooser_pretuned_default()};
  int rc = parse_args(argc, argv, &b);
  if (rc) return rc;
  cg_target t;
  if ((rc = build_target(b.target, b.caches, &t))) return rc;
  program p = {0};
  db_chooser *dc = NULL;
  diag d = {0};
  char err[4096];
  rc = 1;
  if (db_chooser_open(b.db, &t, b.threads, b.exact, &dc, err, sizeof err) || db_chooser_use_pretuned(dc, b.pretuned, err, sizeof err)) {
    fprintf(stderr, "temper build: %s\n", err);
    goto out;
  }
  db_chooser_predict_defaults(dc, b.predict);
  pipeline_opts po = {.vec = t.vec, .l1d = t.l1d, .l2 = t.l2, .choose = db_chooser_choose, .ctx = dc,
                       .no_dw_fusion = b.no_dw_fusion, .no_pw_fusion = b.no_pw_fusion};
  if (cli_load(b.model, &b.data, &p)) goto out;
  d = (diag){.path = p.g->path, .text = p.g->text};
  if (db_chooser_set_model(dc, p.g, &d)) { fprintf(stderr, "%s\n", d.msg); goto out; }
  if (b.check && program_reference(&p, &d)) { fprintf(stderr, "temper build: reference: %s\n", d.msg); goto out; }
  if (program_optimize(&p, &po, &d)) { fprintf(stderr, "%s\n", d.msg); goto out; }
  int n_fell = cli_print_choices(dc);
  if (b.strict && n_fell) {
    fprintf(stderr, "temper build: --strict: %d workload%s have no tuning record for this machine\n", n_fell, n_fell > 1 ? "s" : "");
    goto out;
  }
  aot_report rep;
  b.ao.model_name = b.model;
  if (aot_build(&t, p.g, &b.ao, &rep, &d)) { fprintf(stderr, "temper build: %s\n", d.msg); goto out; }
  print_built(&b.ao, &rep);
  rc = b.check ? check_library(b.ao.out, b.threads, &p) : 0;
out:
  db_chooser_close(dc);
  program_free(&p);
  return rc;
}
