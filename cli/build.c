/* build.c: temper build MODEL --db FILE -o OUT.so — a tuned production
 * library: the best record of every workload for this machine, the
 * template's default where there is none (listed, with its share of the
 * model's FLOPs; --strict refuses), linked with the runtime into OUT.so. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "aot.h"
#include "cli.h"
#include "tune.h"

typedef struct choice {
  char key[256];
  int count;               /* conv2d nodes of this workload */
  double flops;            /* per occurrence */
  int found;               /* a record was used */
  int threads;             /* the record's thread count */
  double median_s;
  char config[512];
  int stale;               /* records of older template versions, ignored */
  int unusable;            /* records whose config today's space does not hold */
  double fastest_s;        /* the fastest record, when layout picked another */
} choice;

typedef struct db_chooser {
  temper_db *db;
  int64_t target_id;       /* 0: the database has no records for this machine */
  int threads;
  choice *c;
  int n, cap;
} db_chooser;

static choice *choice_for(db_chooser *dc, const char *key) {
  for (int i = 0; i < dc->n; i++)
    if (!strcmp(dc->c[i].key, key)) return &dc->c[i];
  if (dc->n == dc->cap) {
    dc->cap = dc->cap ? dc->cap * 2 : 32;
    choice *nc = realloc(dc->c, sizeof(choice) * (size_t)dc->cap);
    if (!nc) return NULL;
    dc->c = nc;
  }
  choice *c = &dc->c[dc->n++];
  memset(c, 0, sizeof *c);
  str_copy(c->key, sizeof c->key, key);
  return c;
}

/* the best record at the build's thread count, else at the nearest measured one */
static int choose_from_db(void *ctx, const char *key, const struct task_space *s, const struct conv_site *site, struct sched_config *out, char *err, size_t n) {
  db_chooser *dc = ctx;
  choice *c = choice_for(dc, key);
  if (!c) { snprintf(err, n, "out of memory"); return -1; }
  c->count++;
  c->flops = workload_flops(&s->w);
  if (c->count > 1) {   /* decided at the first occurrence */
    if (!c->found) return 0;
    return config_parse(s, c->config, out, err, n) ? -1 : 1;
  }
  (void)site;
  if (!dc->db) return 0;
  c->stale = dc->target_id ? db_count_stale(dc->db, key, dc->target_id) : 0;
  if (!dc->target_id) return 0;
  int *thr = NULL, nt = 0, use = dc->threads;
  db_threads_measured(dc->db, key, dc->target_id, &thr, &nt);
  int have = 0;
  for (int i = 0; i < nt; i++) have |= thr[i] == use;
  if (!have && nt) {
    use = thr[0];
    for (int i = 1; i < nt; i++)
      if (abs(thr[i] - dc->threads) < abs(use - dc->threads)) use = thr[i];
  }
  free(thr);
  db_record *recs = NULL;
  int nr = 0;
  if (!nt || db_ok_records(dc->db, key, dc->target_id, use, &recs, &nr) || !nr) { free(recs); return 0; }
  /* the fastest record, counting the layout transform its input block would
   * cost after this producer (bytes moved twice at ~10 GB/s) */
  double t_transform = (double)site->in_floats * 8 / 10e9, best_cost = 0;
  int best = -1;
  char perr[256];
  for (int i = 0; i < nr && i < 64; i++) {
    sched_config cfg;
    if (config_parse(s, recs[i].config, &cfg, perr, sizeof perr)) { c->unusable++; continue; }
    int ib = (int)(cfg.tmpl == TMPL_DEPTHWISE ? cfg_get(s, &cfg, "c_bn") : cfg_get(s, &cfg, "ic_bn"));
    int free_read = site->in_block == 0 && cfg.tmpl != TMPL_DEPTHWISE;   /* NCHW is read as it is */
    double cost = recs[i].median_s + (ib == site->in_block || free_read ? 0 : t_transform);
    if (best < 0 || cost < best_cost) best = i, best_cost = cost, *out = cfg;
  }
  if (best < 0) {
    fprintf(stderr, "temper build: %s: no record's config is in today's space; using the default\n", key);
    free(recs);
    return 0;
  }
  c->found = 1;
  c->threads = use;
  c->median_s = recs[best].median_s;
  c->fastest_s = recs[0].median_s;
  str_copy(c->config, sizeof c->config, recs[best].config);
  free(recs);
  return 1;
}

static int usage(void) {
  fprintf(stderr, "usage: temper build MODEL [--db FILE] -o OUT.so [--params DIR] [--threads N] [--strict] [--target host]\n"
                  "                    [--emit obj|asm|llvm|loops] [--embed-limit MB] [--seed S] [--input NAME=FILE.npy]...\n");
  return 2;
}

int cmd_build(int argc, char **argv) {
  const char *model = NULL, *dbpath = NULL, *out = NULL, *target = "host";
  model_data md = {.seed = 1};
  aot_opts ao = {.embed_limit_mb = 64};
  int threads = 1, strict = 0, rc = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--db") && v) dbpath = v, i++;
    else if (!strcmp(a, "-o") && v) out = v, i++;
    else if (!strcmp(a, "--params") && v) md.params_dir = v, i++;
    else if (!strcmp(a, "--threads") && v) { threads = atoi(v); i++; if (threads < 1 || threads > 256) { fprintf(stderr, "temper build: --threads expects 1..256\n"); return 2; } }
    else if (!strcmp(a, "--strict")) strict = 1;
    else if (!strcmp(a, "--target") && v) target = v, i++;
    else if (!strcmp(a, "--emit") && v) ao.emit = v, i++;
    else if (!strcmp(a, "--embed-limit") && v) ao.embed_limit_mb = atof(v), i++;
    else if (!strcmp(a, "--seed") && v) md.seed = strtoull(v, NULL, 10), i++;
    else if (!strcmp(a, "--input") && v) { if (cli_parse_input_flag(&md, v)) return 2; i++; }
    else if (a[0] == '-') { fprintf(stderr, "temper build: unknown option '%s'\n", a); return usage(); }
    else if (!model) model = a;
    else return usage();
  }
  if (!model || !out) return usage();
  if (strcmp(target, "host")) {
    fprintf(stderr, "temper build: unknown target '%s' (this version builds for the host only: --target host)\n", target);
    return 1;
  }
  temper_graph *g = NULL;
  db_chooser dc = {.threads = threads};
  cg_target t;
  diag d = {0};
  cg_host_target(&t, &d);
  if (dbpath) {
    if (access(dbpath, F_OK)) {
      fprintf(stderr, "temper build: %s: no such database (tune first, or build without --db for the default configs)\n", dbpath);
      goto out;
    }
    char err[4096];
    if (temper_db_open(dbpath, &dc.db, err, sizeof err)) { fprintf(stderr, "temper: %s\n", err); goto out; }
    db_set_tmpl_version_hook(tune_tmpl_version);
    db_target dt;
    tune_host_target(&dt);
    dc.target_id = db_find_target(dc.db, &dt);
  }
  pipeline_opts po = {.vec = t.vec, .choose = choose_from_db, .ctx = &dc};
  if (cli_read_model(model, &g) || cli_model_data(g, &md) || cli_bind_and_optimize(g, &md, &po)) goto out;
  /* the report */
  double total = 0, fell = 0, est = 0;
  int n_fell = 0, n_stale = 0, est_complete = 1;
  for (int i = 0; i < dc.n; i++) total += dc.c[i].flops * dc.c[i].count;
  printf("%-66s %5s  %s\n", "workload", "count", "schedule");
  for (int i = 0; i < dc.n; i++) {
    choice *c = &dc.c[i];
    n_stale += c->stale;
    if (c->found) {
      printf("%-66.66s %5d  record: %.3f ms (%.1f GFLOP/s)%s %s\n", c->key, c->count, c->median_s * 1e3, c->flops / c->median_s * 1e-9,
             c->threads != threads ? " [nearest measured thread count]" : "", c->config);
      if (c->threads != threads)
        printf("    measured at %d thread%s; this build runs %d\n", c->threads, c->threads > 1 ? "s" : "", threads);
      if (c->fastest_s < c->median_s)
        printf("    chosen over the fastest record (%.3f ms) to match its producer's layout\n", c->fastest_s * 1e3);
      est += c->median_s * c->count;
    } else {
      printf("%-66.66s %5d  default config (no record)\n", c->key, c->count);
      fell += c->flops * c->count;
      n_fell++;
      est_complete = 0;
    }
  }
  if (n_stale) printf("ignored %d record%s of older template versions\n", n_stale, n_stale > 1 ? "s" : "");
  if (n_fell)
    printf("fallback: %d of %d workloads use the default config: %.1f%% of the model's conv2d FLOPs\n", n_fell, dc.n,
           total > 0 ? 100 * fell / total : 0);
  if (est > 0)
    printf("estimated conv2d latency from the records: %.2f ms%s\n", est * 1e3, est_complete ? "" : " (workloads without records not counted)");
  if (strict && n_fell) {
    fprintf(stderr, "temper build: --strict: %d workload%s have no tuning record for this machine\n", n_fell, n_fell > 1 ? "s" : "");
    goto out;
  }
  aot_report rep;
  ao.out = out;
  ao.model_name = model;
  if (aot_build(&t, g, &ao, &rep, &d)) { fprintf(stderr, "temper build: %s\n", d.msg); goto out; }
  if (ao.emit) printf("wrote %s (%s of %d kernels)\n", out, ao.emit, rep.n_kernels);
  else
    printf("built %s: %d kernels, %d steps; arena %.2f MB planned (%.2f MB of intermediates without reuse); weights %.1f MB %s\n",
           out, rep.n_kernels, rep.n_steps, rep.arena_bytes / 1048576.0, rep.intermediate_bytes / 1048576.0,
           rep.params_bytes / 1048576.0, rep.params_embedded ? "embedded" : "in a .params file beside it");
  rc = 0;
out:
  free(dc.c);
  temper_db_close(dc.db);
  cli_model_data_free(&md);
  temper_graph_destroy(g);
  return rc;
}
