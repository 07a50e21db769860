/* log.c: export, import and merge of tuning records as JSON lines, with
 * Jansson (exact doubles and int64, errors with line and column). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include "log.h"
#include "tune.h"

static json_t *record_json(const db_record *r, const db_target *t, const char *op, const char *desc, double flops) {
  json_t *o = json_object(), *w = json_object(), *tg = json_object();
  json_t *d = json_loads(desc, 0, NULL), *cfg = json_loads(r->config, 0, NULL);
  json_object_set_new(o, "format", json_string("temper-log"));
  json_object_set_new(o, "version", json_integer(LOG_FORMAT_VERSION));
  json_object_set_new(w, "key", json_string(r->workload));
  json_object_set_new(w, "op", json_string(op));
  json_object_set_new(w, "description", d ? d : json_string(desc));
  json_object_set_new(w, "flops", json_real(flops));
  json_object_set_new(o, "workload", w);
  json_object_set_new(tg, "triple", json_string(t->triple));
  json_object_set_new(tg, "cpu", json_string(t->cpu));
  json_object_set_new(tg, "features", json_string(t->features));
  json_object_set_new(tg, "llvm_version", json_string(t->llvm_version));
  json_object_set_new(tg, "cores", json_integer(t->cores));
  json_object_set_new(o, "target", tg);
  json_object_set_new(o, "template", json_string(r->tmpl));
  json_object_set_new(o, "template_version", json_integer(r->tmpl_version));
  json_object_set_new(o, "config", cfg ? cfg : json_string(r->config));
  json_object_set_new(o, "config_index", json_integer(r->config_index));
  json_object_set_new(o, "threads", json_integer(r->threads));
  json_object_set_new(o, "status", json_string(db_status_names[r->status]));
  int ok = r->status == DB_OK;
  json_object_set_new(o, "median_s", ok ? json_real(r->median_s) : json_null());
  json_object_set_new(o, "min_s", ok ? json_real(r->min_s) : json_null());
  json_object_set_new(o, "max_s", ok ? json_real(r->max_s) : json_null());
  json_object_set_new(o, "rounds", ok ? json_integer(r->rounds) : json_null());
  json_object_set_new(o, "gflops", ok ? json_real(r->gflops) : json_null());
  json_object_set_new(o, "measured_at", json_string(r->measured_at));
  json_object_set_new(o, "host", json_string(r->host));
  json_object_set_new(o, "temper_version", json_string(r->temper_version));
  json_object_set_new(o, "remeasure", json_boolean(r->remeasure));
  json_object_set_new(o, "error", r->error[0] ? json_string(r->error) : json_null());
  return o;
}

enum { DUMP_FLAGS = JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17) };

typedef struct export_ctx {
  temper_db *db;
  FILE *out;
  const log_filter *f;
  int n;
  db_target_row *targets;
  int n_targets;
  char *buf;                /* merge: lines gathered in memory */
  size_t len, cap;
} export_ctx;

static const db_target *target_of(export_ctx *x, int64_t id) {
  for (int i = 0; i < x->n_targets; i++)
    if (x->targets[i].id == id) return &x->targets[i].t;
  return NULL;
}

static temper_status export_one(void *ctx, const db_record *r, const char *op, const char *desc, double flops) {
  export_ctx *x = ctx;
  const db_target *t = target_of(x, r->target_id);
  if (!t) return TEMPER_EDB;
  if (x->f && x->f->task && !strstr(r->workload, x->f->task)) return TEMPER_OK;
  if (x->f && x->f->target && strcmp(x->f->target, t->cpu)) return TEMPER_OK;
  json_t *o = record_json(r, t, op, desc, flops);
  char *line = json_dumps(o, DUMP_FLAGS);
  json_decref(o);
  if (!line) return TEMPER_ENOMEM;
  size_t n = strlen(line);
  if (x->out) {
    fputs(line, x->out);
    fputc('\n', x->out);
  } else {
    if (x->len + n + 2 > x->cap) {
      size_t nc = (x->cap + n + 2) * 2;
      char *nb = realloc(x->buf, nc);
      if (!nb) { free(line); return TEMPER_ENOMEM; }
      x->buf = nb;
      x->cap = nc;
    }
    memcpy(x->buf + x->len, line, n);
    x->len += n;
    x->buf[x->len++] = '\n';
    x->buf[x->len] = 0;
  }
  free(line);
  x->n++;
  return TEMPER_OK;
}

temper_status log_write_record(FILE *out, const db_record *r, const db_target *t, const char *op, const char *desc, double flops) {
  json_t *o = record_json(r, t, op, desc, flops);
  char *line = json_dumps(o, DUMP_FLAGS);
  json_decref(o);
  if (!line) return TEMPER_ENOMEM;
  int bad = fprintf(out, "%s\n", line) < 0;
  free(line);
  return bad ? TEMPER_EIO : TEMPER_OK;
}

temper_status log_export(temper_db *db, FILE *out, const log_filter *f, int *n_written, diag *d) {
  export_ctx x = {.db = db, .out = out, .f = f};
  temper_status s = db_targets(db, &x.targets, &x.n_targets);
  if (!s) s = db_foreach(db, f && f->best_only, export_one, &x);
  free(x.targets);
  if (n_written) *n_written = x.n;
  if (s) return diag_fail(d, s, "%s", s == TEMPER_EDB ? db_errmsg(db) : "out of memory exporting");
  return TEMPER_OK;
}

/* ---- import ---- */
typedef struct line_err { char msg[256]; } line_err;

static int want_str(json_t *o, const char *k, char *dst, size_t n, line_err *e) {
  json_t *v = json_object_get(o, k);
  if (!json_is_string(v)) { snprintf(e->msg, sizeof e->msg, "field %s: %s", k, v ? "expected a string" : "missing"); return -1; }
  str_copy(dst, n, json_string_value(v));
  return 0;
}

static int want_int(json_t *o, const char *k, int64_t *dst, line_err *e) {
  json_t *v = json_object_get(o, k);
  if (!json_is_integer(v)) { snprintf(e->msg, sizeof e->msg, "field %s: %s", k, v ? "expected an integer" : "missing"); return -1; }
  *dst = json_integer_value(v);
  return 0;
}

static int want_num(json_t *o, const char *k, double *dst, line_err *e) {
  json_t *v = json_object_get(o, k);
  if (!json_is_number(v)) { snprintf(e->msg, sizeof e->msg, "field %s: %s", k, v ? "expected a number" : "missing"); return -1; }
  *dst = json_number_value(v);
  return 0;
}

static int desc_workload(json_t *d, conv_workload *w, line_err *e) {
  int64_t v[16] = {0};
  const char *names[] = {"N", "C", "H", "W", "K", "R", "S"};
  for (int i = 0; i < 7; i++)
    if (want_int(d, names[i], &v[i], e)) return -1;
  json_t *st = json_object_get(d, "stride"), *pad = json_object_get(d, "padding"), *dil = json_object_get(d, "dilation");
  if (json_array_size(st) != 2 || json_array_size(pad) != 4 || json_array_size(dil) != 2) {
    snprintf(e->msg, sizeof e->msg, "workload.description: stride, padding and dilation must be arrays of 2, 4 and 2 integers");
    return -1;
  }
  int64_t g;
  if (want_int(d, "groups", &g, e)) return -1;
  *w = (conv_workload){v[0], v[1], v[2], v[3], v[4], v[5], v[6], json_integer_value(json_array_get(st, 0)),
                       json_integer_value(json_array_get(st, 1)), json_integer_value(json_array_get(pad, 0)),
                       json_integer_value(json_array_get(pad, 1)), json_integer_value(json_array_get(pad, 2)),
                       json_integer_value(json_array_get(pad, 3)), json_integer_value(json_array_get(dil, 0)),
                       json_integer_value(json_array_get(dil, 1)), g};
  char why[128];
  if (workload_valid(w, why, sizeof why)) {
    snprintf(e->msg, sizeof e->msg, "workload.description: %s", why);
    return -1;
  }
  return 0;
}

/* one line → a record ready to insert, or a reason */
static int parse_line(const char *text, db_record *r, db_target *t, char *op, char *desc, double *flops, line_err *e) {
  json_error_t je;
  json_t *o = json_loads(text, JSON_DISABLE_EOF_CHECK * 0, &je);
  int rc = -1;
  if (!o) { snprintf(e->msg, sizeof e->msg, "column %d: %s", je.column, je.text); return -1; }
  memset(r, 0, sizeof *r);
  int64_t v;
  json_t *w = json_object_get(o, "workload"), *tg = json_object_get(o, "target"), *cfg = json_object_get(o, "config");
  char fmt[32];
  if (!json_is_object(o)) { snprintf(e->msg, sizeof e->msg, "a record must be a JSON object"); goto out; }
  if (want_str(o, "format", fmt, sizeof fmt, e)) goto out;
  if (strcmp(fmt, "temper-log")) { snprintf(e->msg, sizeof e->msg, "field format: \"%s\" is not \"temper-log\"", fmt); goto out; }
  if (want_int(o, "version", &v, e)) goto out;
  if (v != LOG_FORMAT_VERSION) { snprintf(e->msg, sizeof e->msg, "unknown format version %lld (this temper reads %d)", (long long)v, LOG_FORMAT_VERSION); goto out; }
  if (!json_is_object(w)) { snprintf(e->msg, sizeof e->msg, "field workload: %s", w ? "expected an object" : "missing"); goto out; }
  if (!json_is_object(tg)) { snprintf(e->msg, sizeof e->msg, "field target: %s", tg ? "expected an object" : "missing"); goto out; }
  if (want_str(w, "key", r->workload, sizeof r->workload, e) || want_str(w, "op", op, 32, e) || want_num(w, "flops", flops, e)) goto out;
  json_t *dj = json_object_get(w, "description");
  if (!json_is_object(dj)) { snprintf(e->msg, sizeof e->msg, "field workload.description: expected an object"); goto out; }
  conv_workload cw;
  if (desc_workload(dj, &cw, e)) goto out;
  char key[256];
  workload_key(&cw, key, sizeof key);
  if (strcmp(key, r->workload)) { snprintf(e->msg, sizeof e->msg, "workload.key does not match its description (%.150s)", key); goto out; }
  char *ds = json_dumps(dj, JSON_COMPACT | JSON_PRESERVE_ORDER);
  str_copy(desc, 1024, ds ? ds : "{}");
  free(ds);
  if (want_str(tg, "triple", t->triple, sizeof t->triple, e) || want_str(tg, "cpu", t->cpu, sizeof t->cpu, e) ||
      want_str(tg, "features", t->features, sizeof t->features, e) ||
      want_str(tg, "llvm_version", t->llvm_version, sizeof t->llvm_version, e) || want_int(tg, "cores", &v, e))
    goto out;
  t->cores = (int)v;
  if (want_str(o, "template", r->tmpl, sizeof r->tmpl, e) || want_int(o, "template_version", &v, e)) goto out;
  r->tmpl_version = (int)v;
  int cur = tune_tmpl_version(r->tmpl);
  if (cur < 0) { snprintf(e->msg, sizeof e->msg, "unknown template \"%s\"", r->tmpl); goto out; }
  if (!json_is_object(cfg)) { snprintf(e->msg, sizeof e->msg, "field config: %s", cfg ? "expected an object" : "missing"); goto out; }
  char *cs = json_dumps(cfg, JSON_COMPACT | JSON_PRESERVE_ORDER);
  str_copy(r->config, sizeof r->config, cs ? cs : "");
  free(cs);
  if (want_int(o, "config_index", &r->config_index, e)) goto out;
  if (r->tmpl_version == cur) {   /* a record of today's template must be a point of today's space */
    task_space sp;
    space_build(&cw, cg_vec_of_features(t->features), &sp);
    sched_config c;
    char err[200];
    if (config_parse(&sp, r->config, &c, err, sizeof err)) { snprintf(e->msg, sizeof e->msg, "config not in the space: %s", err); goto out; }
    if (space_index(&sp, &c) != r->config_index) {
      snprintf(e->msg, sizeof e->msg, "config_index %lld does not match the config (%lld)", (long long)r->config_index,
               (long long)space_index(&sp, &c));
      goto out;
    }
    config_json(&sp, &c, r->config, sizeof r->config);   /* canonical */
  }
  if (want_int(o, "threads", &v, e)) goto out;
  if (v < 1 || v > 4096) { snprintf(e->msg, sizeof e->msg, "field threads: %lld is out of range", (long long)v); goto out; }
  r->threads = (int)v;
  char status[32];
  if (want_str(o, "status", status, sizeof status, e)) goto out;
  r->status = DB_STATUS_COUNT;
  for (int i = 0; i < DB_STATUS_COUNT; i++)
    if (!strcmp(status, db_status_names[i])) r->status = (db_status)i;
  if (r->status == DB_STATUS_COUNT) { snprintf(e->msg, sizeof e->msg, "field status: unknown status \"%s\"", status); goto out; }
  if (r->status == DB_OK) {
    if (want_num(o, "median_s", &r->median_s, e) || want_num(o, "min_s", &r->min_s, e) || want_num(o, "max_s", &r->max_s, e) ||
        want_int(o, "rounds", &v, e) || want_num(o, "gflops", &r->gflops, e))
      goto out;
    r->rounds = (int)v;
    if (!(r->median_s > 0) || !(r->min_s > 0) || r->min_s > r->median_s || r->median_s > r->max_s) {
      snprintf(e->msg, sizeof e->msg, "timings must satisfy 0 < min_s <= median_s <= max_s");
      goto out;
    }
  }
  if (want_str(o, "measured_at", r->measured_at, sizeof r->measured_at, e) || want_str(o, "host", r->host, sizeof r->host, e) ||
      want_str(o, "temper_version", r->temper_version, sizeof r->temper_version, e))
    goto out;
  json_t *rm = json_object_get(o, "remeasure"), *er = json_object_get(o, "error");
  if (!json_is_boolean(rm)) { snprintf(e->msg, sizeof e->msg, "field remeasure: %s", rm ? "expected true or false" : "missing"); goto out; }
  r->remeasure = json_is_true(rm);
  if (json_is_string(er)) str_copy(r->error, sizeof r->error, json_string_value(er));
  else if (er && !json_is_null(er)) { snprintf(e->msg, sizeof e->msg, "field error: expected a string or null"); goto out; }
  rc = 0;
out:
  json_decref(o);
  return rc;
}

static void note_bad(log_result *res, int line, const char *msg) {
  if (res->n_bad < 64) {
    res->bad[res->n_bad].line = line;
    str_copy(res->bad[res->n_bad].reason, sizeof res->bad[0].reason, msg);
    res->n_bad++;
  } else {
    res->more_bad++;
  }
}

/* the lines of `text` into db inside one transaction */
static temper_status import_text(temper_db *db, const char *name, char *text, int skip_bad, log_result *res, diag *d) {
  memset(res, 0, sizeof *res);
  temper_status s = db_begin(db);
  if (s) return diag_fail(d, s, "%s", db_errmsg(db));
  int line = 0;
  for (char *p = text; p && *p;) {
    char *nl = strchr(p, '\n');
    if (nl) *nl = 0;
    line++;
    char *q = p;
    while (*q == ' ' || *q == '\t' || *q == '\r') q++;
    if (*q) {
      db_record r;
      db_target t = {0};
      char op[32] = "", desc[1024] = "";
      double flops = 0;
      line_err e = {""};
      if (parse_line(p, &r, &t, op, desc, &flops, &e)) {
        note_bad(res, line, e.msg);
      } else {
        int64_t wid;
        if ((s = db_target_id(db, &t, &r.target_id)) || (s = db_workload_id(db, r.workload, op, desc, flops, &wid))) break;
        if (db_has_record(db, &r)) res->duplicates++;
        else if ((s = db_insert(db, &r))) break;
        else res->imported++;
      }
    }
    p = nl ? nl + 1 : NULL;
  }
  if (s) {
    db_rollback(db);
    return diag_fail(d, s, "%s", db_errmsg(db));
  }
  if ((res->n_bad || res->more_bad) && !skip_bad) {   /* never a partial import by accident */
    db_rollback(db);
    int k = snprintf(d->msg, sizeof d->msg, "%s: %d bad line%s, nothing imported (--skip-bad imports the good ones):", name,
                     res->n_bad + res->more_bad, res->n_bad + res->more_bad > 1 ? "s" : "");
    for (int i = 0; i < res->n_bad && k < (int)sizeof d->msg - 64; i++)
      k += snprintf(d->msg + k, sizeof d->msg - (size_t)k, "\n  %s:%d: %s", name, res->bad[i].line, res->bad[i].reason);
    res->imported = res->duplicates = 0;
    return d->status = TEMPER_EINVAL;
  }
  if ((s = db_commit(db))) return diag_fail(d, s, "%s", db_errmsg(db));
  return TEMPER_OK;
}

temper_status log_import(temper_db *db, const char *path, int skip_bad, log_result *res, diag *d) {
  char err[512];
  char *text = data_read_text(path, err, sizeof err);
  if (!text) return diag_fail(d, TEMPER_EIO, "%s", err);
  temper_status s = import_text(db, path, text, skip_bad, res, d);
  free(text);
  return s;
}

temper_status log_merge(temper_db *out, const char *in, log_result *res, diag *d) {
  temper_db *src = NULL;
  char err[4096];
  if (temper_db_open(in, tune_db_versions(), &src, err, sizeof err)) return diag_fail(d, TEMPER_EDB, "%s", err);
  export_ctx x = {.db = src};
  temper_status s = db_targets(src, &x.targets, &x.n_targets);
  if (!s) s = db_foreach(src, 0, export_one, &x);
  free(x.targets);
  temper_db_close(src);
  if (s) { free(x.buf); return diag_fail(d, s, "%s: cannot read its records", in); }
  s = import_text(out, in, x.buf ? x.buf : (char[]){0}, 0, res, d);
  free(x.buf);
  return s;
}
