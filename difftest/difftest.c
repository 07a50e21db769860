/* difftest.c: one network through the compiler and through the reference
 * interpreter, with schedule configs drawn by the mode's chooser; the
 * comparison, and a mismatch written as a case `temper run` replays. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "difftest.h"
#include "space.h"

const char *const dt_mode_names[DT_MODE_COUNT] = {"default", "random", "mixed-blocks"};

typedef struct chooser {
  pcg32 rng;
  dt_mode mode;
  json_t *configs;    /* workload key → config object: one config per workload, as --config-file has it */
  int n_configs;
} chooser;

static int64_t rnd_index(chooser *c, int64_t size) {
  uint64_t r = ((uint64_t)pcg32_next(&c->rng) << 32) | pcg32_next(&c->rng);
  return (int64_t)(r % (uint64_t)size);
}

/* a random valid config; in DT_MIXED_BLOCKS one that cannot read the
 * producer's block as it is when one exists (so a transform sits between
 * them); 0 if no valid config was found */
static int draw(chooser *c, const task_space *s, const conv_site *site, sched_config *out) {
  int found = 0;
  for (int tries = 0; tries < 400; tries++) {
    sched_config cfg;
    if (space_config(s, rnd_index(c, s->size), &cfg) || !space_valid(s, &cfg)) continue;
    if (!found) *out = cfg, found = 1;
    if (c->mode != DT_MIXED_BLOCKS || !config_reads_block(s, &cfg, site->in_block)) { *out = cfg; return 1; }
  }
  return found;
}

static int choose(void *ctx, const char *key, const struct task_space *s, const conv_site *site, struct sched_config *out,
                  char *err, size_t n) {
  chooser *c = ctx;
  json_t *have = json_object_get(c->configs, key);
  if (have) {   /* the same workload elsewhere in the network: the same config, as a replay would give it */
    char *text = json_is_string(have) ? strdup(json_string_value(have)) : json_dumps(have, JSON_COMPACT);
    int bad = !text || config_parse(s, text, out, err, n);
    free(text);
    if (!text) snprintf(err, n, "out of memory");
    return bad ? -1 : 1;
  }
  if (c->mode == DT_DEFAULT || !draw(c, s, site, out)) return 0;
  char buf[1024];
  config_json(s, out, buf, sizeof buf);
  json_t *obj = json_loads(buf, 0, NULL);
  if (!obj || json_object_set_new(c->configs, key, obj)) { snprintf(err, n, "out of memory"); return -1; }
  c->n_configs++;
  return 1;
}

/* seeded values for every parameter, as `temper run MODEL --seed S` makes them */
static float **make_data(const temper_graph *g, uint64_t seed) {
  const node *fn = g->main;
  float **v = calloc((size_t)fn->n_params + 1, sizeof(float *));
  for (int i = 0; v && i < fn->n_params; i++) {
    const node *p = fn->params[i];
    int64_t n = shape_numel(&p->ty.shape);
    if (!(v[i] = malloc(sizeof(float) * (size_t)(n ? n : 1)))) return v;
    data_random_param(v[i], &p->ty.shape, seed ^ data_hash_name(p->name), i == 0, data_name_positive(p->name));
  }
  return v;
}

static void free_data(float **v, int n) {
  for (int i = 0; v && i < n; i++) free(v[i]);
  free(v);
}

/* How far the reference itself moves each output when every parameter
 * moves by a few units in the last place (relative 4e-7, seeded): sens[k].
 * An output that is the small difference of large terms — a sum that
 * nearly cancels, then clipped so that only that difference is left —
 * moves far under rounding, and the compiled kernels round differently
 * from the interpreter (other summation orders, FMAs): seed 1300606 had
 * an output of norm 9e-5 made of terms near 0.2, off by 3.4e-8, 3.6e-4
 * of its norm against a tolerance of 1e-4. Such an output is held to ten
 * times its sensitivity instead; a wrong kernel is off by the size of its
 * terms, far beyond. Computed only when an output misses the tolerance. */
static temper_status ref_sensitivity(const char *text, uint64_t seed, float **ref, int n_ref, const shape_t *shapes, double *sens,
                                     diag *d) {
  temper_graph *g = NULL;
  char *err = NULL;
  temper_status s = temper_graph_parse(text, "difftest.relay", &g, &err);
  free(err);
  if (s) return diag_fail(d, s, "the network no longer parses");
  int np = g->main->n_params, n2 = 0;
  float **vals = make_data(g, seed), **ref2 = NULL;
  pcg32 rng;
  pcg32_seed(&rng, seed, 0x5e45);
  for (int i = 0; vals && i < np; i++) {
    if (!vals[i]) { s = diag_fail(d, TEMPER_ENOMEM, "out of memory"); break; }
    for (int64_t j = 0, n = shape_numel(&g->main->params[i]->ty.shape); j < n; j++)
      vals[i][j] *= 1.0f + 4e-7f * (2.0f * pcg32_float(&rng) - 1.0f);
  }
  if (!vals) s = diag_fail(d, TEMPER_ENOMEM, "out of memory");
  if (!s) s = ref_eval_func(g->main, (const float *const *)vals, &ref2, &n2, d);
  if (!s && n2 != n_ref) s = diag_fail(d, TEMPER_EINTERNAL, "the reference gave %d outputs, then %d", n_ref, n2);
  for (int k = 0; !s && k < n_ref; k++) sens[k] = data_rel_error(ref2[k], ref[k], shape_numel(&shapes[k]), NULL);
  for (int k = 0; k < n2; k++) free(ref2[k]);
  free(ref2);
  free_data(vals, np);
  temper_graph_destroy(g);
  return s;
}

/* runs the fused graph on the input and compares with ref */
static temper_status run_and_compare(temper_engine *e, temper_graph *g, const char *text, uint64_t seed, const float *input,
                                     float **ref, int n_ref, int threads, dt_result *r, diag *d) {
  exec *x = NULL;
  temper_status s = exec_create(e, g, threads, &x, d);
  if (s) return s;
  r->n_kernels = r->n_joined = 0;
  for (int i = 0; i < x->n_steps; i++) {
    int seen = 0;
    for (int j = 0; j < i && !seen; j++) seen = x->steps[j].k == x->steps[i].k;
    r->n_kernels += !seen;
    const char *nm = x->steps[i].k->name, *c1 = strstr(nm, "conv2d");
    r->n_joined += !seen && c1 && strstr(c1 + 1, "conv2d");
  }
  for (int i = 0; i < x->n_inputs; i++) exec_set_input(x, i, input);
  exec_run(x);
  if (x->n_outputs != n_ref) s = diag_fail(d, TEMPER_EINTERNAL, "%d outputs compiled, %d in the reference", x->n_outputs, n_ref);
  double *sens = NULL;
  for (int k = 0; !s && k < n_ref; k++) {
    double abs_err, rel = data_rel_error(exec_output(x, k), ref[k], shape_numel(&x->output_shapes[k]), &abs_err);
    if (!(rel <= r->tolerance) && !isnan(rel) && !sens) {
      if (!(sens = calloc((size_t)n_ref, sizeof *sens))) s = diag_fail(d, TEMPER_ENOMEM, "out of memory");
      else s = ref_sensitivity(text, seed, ref, n_ref, x->output_shapes, sens, d);
      if (s) break;
    }
    if (!(rel <= r->tolerance) && sens && rel <= 10 * sens[k]) {   /* rounding, where the output cancels */
      r->ill_conditioned++;
      continue;
    }
    if (rel > r->rel_err || isnan(rel)) r->rel_err = rel;
    if (!(rel <= r->tolerance) && !r->mismatch) {
      r->mismatch = 1;
      snprintf(r->detail, sizeof r->detail, "output %d: relative error %.3g (max abs %.3g) over the tolerance %.0e", k, rel, abs_err,
               r->tolerance);
    }
  }
  free(sens);
  exec_destroy(x);
  return s;
}

/* dt_check: the network against the reference; see difftest.h */
temper_status dt_check(temper_engine *e, const char *text, const char *configs, uint64_t seed, dt_mode mode, int threads,
                       dt_result *r, diag *d) {
  memset(r, 0, sizeof *r);
  temper_graph *g = NULL;
  char *err = NULL;
  temper_status s = temper_graph_parse(text, "difftest.relay", &g, &err);
  if (s) {
    diag_fail(d, s, "%s", err ? err : temper_status_str(s));
    free(err);
    return s;
  }
  int np = g->main->n_params;
  float **vals = make_data(g, seed), **ref = NULL;
  int n_ref = 0;
  chooser c = {.mode = mode, .configs = configs ? json_loads(configs, 0, NULL) : json_object()};
  if (configs && !json_is_object(c.configs)) {
    json_decref(c.configs);
    temper_graph_destroy(g);
    return diag_fail(d, TEMPER_EINVAL, "the configs are not a JSON object from workload key to config");
  }
  pcg32_seed(&c.rng, seed, 0xc0f1);
  for (int i = 0; vals && i < np; i++)
    if (!vals[i]) { free_data(vals, np); vals = NULL; }
  if (!vals || !c.configs) s = diag_fail(d, TEMPER_ENOMEM, "out of memory");
  if (!s) s = ref_eval_func(g->main, (const float *const *)vals, &ref, &n_ref, d);
  float *input = vals ? vals[0] : NULL;
  if (!s) {
    vals[0] = NULL;   /* the input stays a parameter; the weights are bound */
    s = bind_params(g, vals, d);
  }
  /* every depthwise → 1×1 pair the fused template can run is joined, as
   * the build joins only large ones, so the small networks here exercise
   * it; and in every other network every 1×1 → depthwise pair first (the
   * build joins only large ones before a strided depthwise) */
  pipeline_opts o = {.vec = e->target.vec, .l1d = e->target.l1d, .l2 = e->target.l2, .choose = choose, .ctx = &c, .dw_fusion_all = 1, .pw_fusion_all = (int)(seed & 1)};
  if (!s) s = pipeline_optimize_with(g, &o, d);
  if (!s) {
    r->tolerance = engine_tolerance(g);
    s = run_and_compare(e, g, text, seed, input, ref, n_ref, threads, r, d);
  }
  r->n_configs = c.n_configs;
  r->configs = json_dumps(c.configs, JSON_INDENT(2) | JSON_SORT_KEYS);
  if (!r->configs && !s) s = diag_fail(d, TEMPER_ENOMEM, "out of memory");
  json_decref(c.configs);
  for (int i = 0; i < n_ref; i++) free(ref[i]);
  free(ref);
  free(input);
  free_data(vals, np);
  temper_graph_destroy(g);
  return s;
}

static int write_text(const char *path, const char *text, char *err, size_t n) {
  FILE *f = fopen(path, "w");
  if (!f || fputs(text, f) < 0 || fclose(f)) {
    snprintf(err, n, "%s: %s", path, strerror(errno));
    return -1;
  }
  return 0;
}

char *dt_write_case(const char *dir, const char *name, const char *text, const char *configs, uint64_t seed, int threads,
                    char *err, size_t n) {
  char model[4096], cfg[4096];
  snprintf(model, sizeof model, "%s/%s.relay", dir, name);
  snprintf(cfg, sizeof cfg, "%s/%s.json", dir, name);
  if (write_text(model, text, err, n) || write_text(cfg, configs ? configs : "{}\n", err, n)) return NULL;
  size_t len = strlen(model) + strlen(cfg) + 128;
  char *cmd = malloc(len);
  if (cmd) snprintf(cmd, len, "temper run %s --config-file %s --seed %llu --threads %d --check", model, cfg,
                    (unsigned long long)seed, threads);
  return cmd;
}
