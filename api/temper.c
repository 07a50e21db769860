/* temper.c: the public API of include/temper/temper.h for embedding temper —
 * compile and run a model in memory, tune it into a database, build a
 * library — over engine/program, tuner/ and engine/aot. The top of the
 * module graph: nothing includes it but programs (and cli/). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "aot.h"
#include "choose.h"
#include "program.h"
#include "tune.h"

struct temper_program {
  program p;
  temper_engine *e;
};

/* the message into *err (if wanted); returns s */
static temper_status fail(char **err, temper_status s, const char *msg) {
  if (err) *err = strdup(msg ? msg : temper_status_str(s));
  return s;
}

static void to_opts(const temper_data *data, program_opts *o) {
  *o = (program_opts){.seed = 1};
  if (!data) return;
  o->params_dir = data->params_dir;
  o->seed = data->seed;
  for (int i = 0; i < data->n_inputs && i < PROGRAM_MAX_INPUTS; i++) {
    o->input_names[i] = data->input_names[i];
    o->input_files[i] = data->input_files[i];
  }
  o->n_inputs = data->n_inputs < PROGRAM_MAX_INPUTS ? data->n_inputs : PROGRAM_MAX_INPUTS;
}

/* read and data: the steps every entry point starts with */
static temper_status load(const char *path, const temper_data *data, program *p, diag *d) {
  program_opts o;
  to_opts(data, &o);
  if (data && data->n_inputs > PROGRAM_MAX_INPUTS) return diag_fail(d, TEMPER_EINVAL, "more than %d inputs", PROGRAM_MAX_INPUTS);
  temper_status s = program_read(p, path, d);
  return s ? s : program_data(p, &o, d);
}

temper_status temper_program_create(const char *model_path, const temper_data *data, const temper_compile_options *o,
                                    temper_program **out, char **err) {
  *out = NULL;
  if (err) *err = NULL;
  temper_program *tp = calloc(1, sizeof *tp);
  if (!tp) return fail(err, TEMPER_ENOMEM, NULL);
  temper_compile_options def = {0};
  if (!o) o = &def;
  int threads = o->threads > 0 ? o->threads : 1;
  diag d = {0};
  db_chooser *dc = NULL;
  char msg[4096];
  temper_status s = load(model_path, data, &tp->p, &d);
  if (!s && o->check) s = program_reference(&tp->p, &d);
  if (!s) s = engine_create(&tp->e, &d);
  if (!s && o->db && (s = db_chooser_open(o->db, &tp->e->target, threads, 0, &dc, msg, sizeof msg))) diag_fail(&d, s, "%s", msg);
  if (!s && dc && !o->no_pretuned && (s = db_chooser_use_pretuned(dc, db_chooser_pretuned_default(), msg, sizeof msg)))
    diag_fail(&d, s, "%s", msg);
  if (!s && dc) s = db_chooser_set_model(dc, tp->p.g, &d);
  pipeline_opts po = {.vec = tp->e ? tp->e->target.vec : 16, .choose = dc ? db_chooser_choose : NULL, .ctx = dc};
  if (!s) s = program_compile(&tp->p, tp->e, &po, threads, &d);
  db_chooser_close(dc);
  if (s) {
    temper_program_destroy(tp);
    return fail(err, s, d.msg);
  }
  *out = tp;
  return TEMPER_OK;
}

void temper_program_destroy(temper_program *tp) {
  if (!tp) return;
  program_free(&tp->p);
  engine_destroy(tp->e);
  free(tp);
}

temper_status temper_program_run(temper_program *tp) {
  exec_run(tp->p.x);
  return TEMPER_OK;
}

int temper_program_num_outputs(const temper_program *tp) { return tp->p.x->n_outputs; }

const float *temper_program_output(const temper_program *tp, int i, int64_t *n, int *ndim, const int64_t **shape) {
  const exec *x = tp->p.x;
  if (i < 0 || i >= x->n_outputs) return NULL;
  if (n) *n = shape_numel(&x->output_shapes[i]);
  if (ndim) *ndim = x->output_shapes[i].ndim;
  if (shape) *shape = x->output_shapes[i].d;
  return exec_output(x, i);
}

temper_status temper_program_check(const temper_program *tp, double *rel_err, double *tolerance, char **err) {
  if (err) *err = NULL;
  const program *p = &tp->p;
  if (!p->ref) return fail(err, TEMPER_EINVAL, "the program was compiled without check: no reference to compare with");
  *rel_err = 0;
  *tolerance = engine_tolerance(p->g);
  for (int i = 0; i < p->x->n_outputs && i < p->n_ref; i++) {
    double e = data_rel_error(exec_output(p->x, i), p->ref[i], shape_numel(&p->x->output_shapes[i]), NULL);
    if (!(e <= *rel_err)) *rel_err = e;
  }
  return TEMPER_OK;
}

temper_status temper_tune(const char *model_path, const temper_data *data, const char *dbpath, const temper_tune_options *o,
                          char **err) {
  if (err) *err = NULL;
  temper_tune_options def = {0};
  if (!o) o = &def;
  char self[4096];
  const char *runner = o->runner;
  if (!runner) {
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) return fail(err, TEMPER_EIO, "cannot find the temper binary for the runner");
    self[len] = 0;
    runner = self;
  }
  tune_opts to = {.trials = o->trials > 0 ? o->trials : o->minutes > 0 ? 1000000000 : 64, .minutes = o->minutes,
                  .search = SEARCH_XGB, .seed = o->seed ? o->seed : 1, .build_jobs = (int)sysconf(_SC_NPROCESSORS_ONLN),
                  .top_k = 3, .task_pattern = o->task, .runner_binary = runner, .log = o->log,
                  .m = {.threads = o->threads > 0 ? o->threads : 1, .repeat = 5, .min_repeat_ms = 10, .timeout_s = 10},
                  .pretuned = o->no_pretuned ? NULL : db_chooser_pretuned_default()};
  program p = {0};
  tune_task *tasks = NULL;
  tune_task_result *res = NULL;
  temper_db *db = NULL;
  int n = 0;
  diag d = {0};
  char msg[4096];
  cg_target t;
  temper_status s = cg_host_target(&t, &d);
  if (!s) s = load(model_path, data, &p, &d);
  if (!s) s = program_bind(&p, &d);
  if (!s) s = tasks_extract(p.g, t.vec, &tasks, &n, &d);
  if (!s && (s = temper_db_open(dbpath, tune_db_versions(), &db, msg, sizeof msg))) diag_fail(&d, s, "%s", msg);
  if (!s && !(res = calloc((size_t)n + 1, sizeof *res))) s = diag_fail(&d, TEMPER_ENOMEM, "out of memory");
  if (!s) s = tune_run(db, tasks, n, &to, "temper_tune()", res, &d);
  free(res);
  free(tasks);
  temper_db_close(db);
  program_free(&p);
  return s ? fail(err, s, d.msg) : TEMPER_OK;
}

temper_status temper_build(const char *model_path, const temper_data *data, const char *dbpath, const char *out_so,
                           temper_build_options *o, char **err) {
  if (err) *err = NULL;
  temper_build_options def = {0};
  if (!o) o = &def;
  int threads = o->threads > 0 ? o->threads : 1;
  program p = {0};
  db_chooser *dc = NULL;
  diag d = {0};
  char msg[4096];
  cg_target t;
  temper_status s = cg_host_target(&t, &d);
  if (!s && (s = db_chooser_open(dbpath, &t, threads, 0, &dc, msg, sizeof msg))) diag_fail(&d, s, "%s", msg);
  if (!s && !o->no_pretuned && (s = db_chooser_use_pretuned(dc, db_chooser_pretuned_default(), msg, sizeof msg)))
    diag_fail(&d, s, "%s", msg);
  if (!s) s = load(model_path, data, &p, &d);
  if (!s) s = db_chooser_set_model(dc, p.g, &d);
  pipeline_opts po = {.vec = t.vec, .l1d = t.l1d, .l2 = t.l2, .choose = db_chooser_choose, .ctx = dc};
  if (!s) s = program_optimize(&p, &po, &d);
  if (!s) {
    chooser_summary sum;
    db_chooser_summary(dc, &sum);
    o->fallbacks = sum.n_fell;
    if (o->strict && sum.n_fell)
      s = diag_fail(&d, TEMPER_EINVAL, "%d workload%s have no tuning record for this machine", sum.n_fell, sum.n_fell > 1 ? "s" : "");
  }
  aot_opts ao = {.out = out_so, .embed_limit_mb = 64, .model_name = model_path};
  aot_report rep;
  if (!s) s = aot_build(&t, p.g, &ao, &rep, &d);
  db_chooser_close(dc);
  program_free(&p);
  return s ? fail(err, s, d.msg) : TEMPER_OK;
}
