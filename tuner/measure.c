/* measure.c: builder (config → object code) and the runner process (load,
 * check, time), with the pipe protocol between them. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "measure.h"
#include "schedules.h"

enum { MAGIC = 0x544d5052, PROTOCOL = 2, COLD_BYTES = 96 << 20, MAX_COPIES = 256 };

/* the kernel the tuner measures: the conv2d alone, input in its own
 * blocks, weights packed, as the layout pass would lay it out
 * (config_layouts), in a graph of its own that keeps a copy of cfg */
temper_status task_function(const tune_task *t, const sched_config *cfg, temper_graph **out, node **fn, diag *d) {
  *out = NULL;
  const conv_workload *w = &t->w;
  const task_space *sp = &t->space;
  conv_layouts l;
  config_layouts(sp, cfg, -1, &l);
  temper_graph *g = ir_graph_new("task");
  if (!g) return diag_fail(d, TEMPER_ENOMEM, "out of memory");
  shape_t xs = {5, {w->N, w->C / l.in_blk, w->H, w->W, l.in_blk}};
  shape_t ws = {6, {w->K / l.ob, w->C / w->G / l.ki, w->R, w->S, l.ki, l.ob}};
  int64_t al = l.tile ? winograd_alpha((int)l.tile, (int)w->sh) : 0;
  if (l.tile) ws = (shape_t){5, {w->K / l.ob, al, al, w->C, l.ob}};   /* transformed: OHWI<ob>o */
  node *x = ir_var(g, "p0", &xs), *k = ir_var(g, "p1", &ws);
  node *args[2] = {x, k};
  node *c = x && k ? ir_call(g, l.tile ? OP_CONV2D_WINOGRAD : OP_CONV2D, 2, args, NULL) : NULL;
  node *f = c ? ir_new(g, N_FUNC, (loc_t){0, 0}) : NULL;
  node **params = f ? arena_alloc(&g->a, sizeof(node *) * 2) : NULL;
  sched_config *kept = params ? arena_alloc(&g->a, sizeof *kept) : NULL;
  if (!kept) { temper_graph_destroy(g); return diag_fail(d, TEMPER_ENOMEM, "out of memory"); }
  *kept = *cfg;
  attrs_t *a = c->attrs;
  a->v[ATTR_STRIDES].i[0] = w->sh, a->v[ATTR_STRIDES].i[1] = w->sw;
  a->v[ATTR_PADDING].i[0] = w->pt, a->v[ATTR_PADDING].i[1] = w->pl, a->v[ATTR_PADDING].i[2] = w->pb, a->v[ATTR_PADDING].i[3] = w->pr;
  a->v[ATTR_DILATION].i[0] = w->dh, a->v[ATTR_DILATION].i[1] = w->dw;
  a->v[ATTR_GROUPS].i[0] = w->G;
  config_set_attrs(sp, kept, &l, a);
  params[0] = x;
  params[1] = k;
  f->params = params;
  f->n_params = 2;
  f->body = c;
  f->primitive = 1;
  g->main = f;
  temper_status s = typeinfer(g, d);
  if (s) { temper_graph_destroy(g); return s; }
  *out = g;
  *fn = f;
  return TEMPER_OK;
}

temper_status build_object(cg_compiler *cc, int vec, const tune_task *t, const sched_config *cfg, const char *name,
                           obj_code *out, diag *d) {
  char kname[64];
  str_copy(kname, sizeof kname, name);   /* name may be out->name itself */
  memset(out, 0, sizeof *out);
  str_copy(out->name, sizeof out->name, kname);
  name = out->name;
  temper_graph *g = NULL;
  node *fn = NULL;
  temper_status s = task_function(t, cfg, &g, &fn, d);
  lfunc *f = NULL;
  cg_target here = {.vec = vec};   /* the tuner measures on this machine: its caches */
  if (!s) s = sched_lower(fn, &here, cfg, name, &f, d);
  if (!s) s = cg_compile_object(cc, &f, 1, &out->data, &out->size, d);
  lf_free(f);
  temper_graph_destroy(g);
  return s;
}

/* ---- pipe I/O ---- */
static int write_all(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* reads n bytes; deadline < 0: no limit. -1 error/EOF, -2 timeout */
static int read_all(int fd, void *buf, size_t n, double deadline) {
  char *p = buf;
  while (n) {
    if (deadline >= 0) {
      double left = deadline - data_now();
      if (left <= 0) return -2;
      struct pollfd pf = {fd, POLLIN, 0};
      int pr = poll(&pf, 1, (int)(left * 1000) + 1);
      if (pr < 0 && errno == EINTR) continue;
      if (pr == 0) return -2;
    }
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

static int write_str(int fd, const char *s) {
  uint32_t n = (uint32_t)strlen(s);
  return write_all(fd, &n, 4) || write_all(fd, s, n);
}

static char *read_str(int fd, double deadline) {
  uint32_t n;
  if (read_all(fd, &n, 4, deadline) || n > (64u << 20)) return NULL;
  char *s = malloc(n + 1);
  if (!s || read_all(fd, s, n, deadline)) { free(s); return NULL; }
  s[n] = 0;
  return s;
}

/* ---- the tuner's side ---- */
struct runner {
  char binary[1024];
  pid_t pid;
  int to, from;   /* pipes to and from the child */
};

static int spawn(runner *r, char *err, size_t n) {
  int in[2], out[2];
  if (pipe(in) || pipe(out)) { snprintf(err, n, "pipe: %s", strerror(errno)); return -1; }
  pid_t pid = fork();
  if (pid < 0) { snprintf(err, n, "fork: %s", strerror(errno)); return -1; }
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[0]), close(in[1]), close(out[0]), close(out[1]);
    execl(r->binary, r->binary, "__runner", (char *)NULL);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  r->pid = pid;
  r->to = in[1];
  r->from = out[0];
  return 0;
}

runner *runner_start(const char *binary, char *err, size_t n) {
  signal(SIGPIPE, SIG_IGN);   /* a dead runner shows as EPIPE, not a dead tuner */
  runner *r = calloc(1, sizeof *r);
  if (!r) { snprintf(err, n, "out of memory"); return NULL; }
  snprintf(r->binary, sizeof r->binary, "%s", binary);
  if (access(binary, X_OK)) { snprintf(err, n, "runner %s: %s", binary, strerror(errno)); free(r); return NULL; }
  if (spawn(r, err, n)) { free(r); return NULL; }
  return r;
}

static void kill_child(runner *r, int *sig) {
  if (!r->pid) return;
  close(r->to);
  close(r->from);
  kill(r->pid, SIGKILL);
  int st = 0;
  waitpid(r->pid, &st, 0);
  if (sig) *sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
  r->pid = 0;
}

void runner_stop(runner *r) {
  if (!r) return;
  if (r->pid) {   /* EOF on stdin ends the runner; give it a moment, then kill */
    close(r->to);
    int st;
    for (int i = 0; i < 100 && waitpid(r->pid, &st, WNOHANG) == 0; i++) usleep(2000);
    kill(r->pid, SIGKILL);
    waitpid(r->pid, &st, 0);
    close(r->from);
  }
  free(r);
}


measure_result runner_measure(runner *r, const tune_task *t, const sched_config *cfg, const obj_code *obj,
                              const measure_opts *o, runner_hook hook) {
  measure_result res = {.status = DB_RUNTIME_ERROR};
  char err[200];
  if (!r->pid && spawn(r, err, sizeof err)) {
    snprintf(res.error, sizeof res.error, "cannot restart the runner: %s", err);
    return res;
  }
  char cfgtext[512];
  config_short(&t->space, cfg, cfgtext, sizeof cfgtext);
  uint32_t head[2] = {MAGIC, PROTOCOL};
  int64_t wl[16];
  memcpy(wl, &t->w, sizeof wl);
  uint64_t osize = obj->size;
  int32_t ints[4] = {o->threads, o->repeat, (int32_t)hook, o->warm};
  double minms = o->min_repeat_ms;
  int bad = write_all(r->to, head, sizeof head) || write_all(r->to, wl, sizeof wl) || write_str(r->to, cfgtext) ||
            write_str(r->to, obj->name) || write_all(r->to, &osize, 8) || write_all(r->to, obj->data, obj->size) ||
            write_all(r->to, ints, sizeof ints) || write_all(r->to, &minms, sizeof minms);
  double deadline = data_now() + o->timeout_s;
  int32_t reply[3];
  int rc = bad ? -1 : read_all(r->from, reply, sizeof reply, deadline);
  if (!rc && reply[0] == MAGIC && reply[2] >= 0 && reply[2] <= MEASURE_MAX_ROUNDS) {
    res.status = (db_status)reply[1];
    res.rounds = reply[2];
    char *msg = NULL;
    if (!read_all(r->from, res.times, sizeof(double) * (size_t)res.rounds, deadline) && (msg = read_str(r->from, deadline))) {
      snprintf(res.error, sizeof res.error, "%s", msg);
      free(msg);
      return res;
    }
    rc = -1;
  }
  int sig = 0;
  kill_child(r, &sig);   /* the next measurement starts a fresh runner */
  if (rc == -2) {
    res.status = DB_TIMEOUT;
    snprintf(res.error, sizeof res.error, "no result within %.1f s; the runner was killed", o->timeout_s);
  } else {
    res.status = DB_RUNTIME_ERROR;
    snprintf(res.error, sizeof res.error, "the runner died%s%s", sig ? ": " : "", sig ? strsignal(sig) : "");
  }
  res.rounds = 0;
  return res;
}

/* ---- the runner's side ---- */
typedef struct task_data {
  char key[256];
  float *x, *w, *y;   /* NCHW input, OIHW weight, NCHW reference output */
  int64_t xd[4], wd[4], yd[4];
} task_data;

static void task_data_free(task_data *td) {
  free(td->x);
  free(td->w);
  free(td->y);
  memset(td, 0, sizeof *td);
}

static int task_data_make(task_data *td, const conv_workload *w) {
  char key[256];
  workload_key(w, key, sizeof key);
  if (!strcmp(key, td->key)) return 0;
  task_data_free(td);
  snprintf(td->key, sizeof td->key, "%s", key);
  int64_t OH = workload_out(w, 2), OW = workload_out(w, 3);
  int64_t xd[4] = {w->N, w->C, w->H, w->W}, wd[4] = {w->K, w->C / w->G, w->R, w->S}, yd[4] = {w->N, w->K, OH, OW};
  memcpy(td->xd, xd, sizeof xd), memcpy(td->wd, wd, sizeof wd), memcpy(td->yd, yd, sizeof yd);
  shape_t xs = {4, {xd[0], xd[1], xd[2], xd[3]}}, ws = {4, {wd[0], wd[1], wd[2], wd[3]}};
  td->x = malloc(sizeof(float) * (size_t)shape_numel(&xs));
  td->w = malloc(sizeof(float) * (size_t)shape_numel(&ws));
  td->y = malloc(sizeof(float) * (size_t)(yd[0] * yd[1] * yd[2] * yd[3]));
  if (!td->x || !td->w || !td->y) return -1;
  data_random_param(td->x, &xs, 11, 1, 0);
  data_random_param(td->w, &ws, 12, 0, 0);
  /* the reference: a plain NCHW conv2d node evaluated by the interpreter */
  temper_graph *g = ir_graph_new("ref");
  node *x = ir_var(g, "x", &xs), *k = ir_var(g, "w", &ws), *args[2] = {x, k};
  node *c = ir_call(g, OP_CONV2D, 2, args, NULL);
  attrs_t *a = c->attrs;
  a->v[ATTR_STRIDES].i[0] = w->sh, a->v[ATTR_STRIDES].i[1] = w->sw;
  a->v[ATTR_PADDING].i[0] = w->pt, a->v[ATTR_PADDING].i[1] = w->pl, a->v[ATTR_PADDING].i[2] = w->pb, a->v[ATTR_PADDING].i[3] = w->pr;
  a->v[ATTR_DILATION].i[0] = w->dh, a->v[ATTR_DILATION].i[1] = w->dw;
  a->v[ATTR_GROUPS].i[0] = w->G;
  c->ty.kind = TY_TENSOR;
  c->ty.shape = (shape_t){4, {yd[0], yd[1], yd[2], yd[3]}};
  const float *ins[2] = {td->x, td->w};
  float *outs[1] = {td->y};
  diag d = {0};
  int rc = ref_eval_op(c, ins, outs, &d) ? -1 : 0;
  temper_graph_destroy(g);
  return rc;
}

static void reply(db_status st, int rounds, const double *times, const char *msg) {
  int32_t h[3] = {MAGIC, (int32_t)st, rounds};
  if (write_all(1, h, sizeof h) || write_all(1, times, sizeof(double) * (size_t)rounds) || write_str(1, msg)) _exit(3);
}

static double rel_error(const float *got, const float *want, int64_t n) {
  double err = 0, scale = 1e-30;
  for (int64_t i = 0; i < n; i++) {
    double e = fabs((double)got[i] - (double)want[i]);
    if (!(e <= err)) err = e;
    if (fabs((double)want[i]) > scale) scale = fabs((double)want[i]);
  }
  return err / scale;
}

/* one request: load, check once, time */
static void serve(cg_jit *jit, task_data *td, temper_pool **pool, int *pool_threads) {
  int64_t wl[16];
  conv_workload w;
  char *cfgtext = NULL, *name = NULL, *obj = NULL;
  uint64_t osize;
  int32_t ints[4];
  double minms;
  if (read_all(0, wl, sizeof wl, -1) || !(cfgtext = read_str(0, -1)) || !(name = read_str(0, -1)) ||
      read_all(0, &osize, 8, -1) || osize > (1ull << 30) || !(obj = malloc(osize ? osize : 1)) ||
      read_all(0, obj, osize, -1) || read_all(0, ints, sizeof ints, -1) || read_all(0, &minms, sizeof minms, -1))
    _exit(2);
  memcpy(&w, wl, sizeof w);
  int threads = ints[0], repeat = ints[1] < 1 ? 1 : ints[1] > MEASURE_MAX_ROUNDS ? MEASURE_MAX_ROUNDS : ints[1];
  runner_hook hook = (runner_hook)ints[2];
  int warm = ints[3];
  float *copies[MAX_COPIES];   /* the weights and their copies, rotated over when cold */
  int n_copies = 0;
  tune_task t = {.w = w};
  diag d = {0};
  cg_target tg;
  cg_host_target(&tg, &d);
  space_build(&w, tg.vec, &t.space);
  sched_config cfg;
  char err[256];
  temper_kernel_fn fn = NULL;
  float *xb = NULL, *wb = NULL, *yb = NULL, *want = NULL;
  temper_graph *g = NULL;
  node *f = NULL;
  double times[MEASURE_MAX_ROUNDS];
  if (config_parse(&t.space, cfgtext, &cfg, err, sizeof err)) { reply(DB_COMPILE_ERROR, 0, times, err); goto out; }
  if (task_data_make(td, &w)) { reply(DB_RUNTIME_ERROR, 0, times, "runner: out of memory for the task's data"); goto out; }
  if (task_function(&t, &cfg, &g, &f, &d) || cg_jit_add_object(jit, obj, osize, name, &fn, &d)) {
    reply(DB_COMPILE_ERROR, 0, times, d.msg);
    goto out;
  }
  /* the task's data in the config's layouts */
  const node *c = f->body;
  int64_t nx = shape_numel(&f->params[0]->ty.shape), nw = shape_numel(&f->params[1]->ty.shape), ny = shape_numel(&c->ty.shape);
  xb = aligned_alloc(64, (size_t)(nx * 4 + 64) / 64 * 64);
  wb = aligned_alloc(64, (size_t)(nw * 4 + 64) / 64 * 64);
  yb = aligned_alloc(64, (size_t)(ny * 4 + 64) / 64 * 64);
  want = malloc(sizeof(float) * (size_t)ny);
  if (!xb || !wb || !yb || !want) { reply(DB_RUNTIME_ERROR, 0, times, "runner: out of memory"); goto out; }
  ref_relayout(td->x, "NCHW", xb, c->attrs->v[ATTR_DATA_LAYOUT].s, "NCHW", td->xd);
  double tolerance = 1e-4;
  if (c->op == OP_CONV2D_WINOGRAD) {   /* weights transformed as the compiler does, in the kernel's layout */
    int m = (int)c->attrs->v[ATTR_TILE_SIZE].i[0], st = (int)w.sh, al = winograd_alpha(m, st);
    int64_t ud[4] = {al, al, w.C, w.K};
    float *u = malloc(sizeof(float) * (size_t)(ud[0] * ud[1] * ud[2] * ud[3]));
    if (!u) { reply(DB_RUNTIME_ERROR, 0, times, "runner: out of memory"); goto out; }
    winograd_weight(td->w, w.K, w.C, m, st, u);
    ref_relayout(u, "HWIO", wb, c->attrs->v[ATTR_KERNEL_LAYOUT].s, "HWIO", ud);
    free(u);
    tolerance = winograd_tolerance(m, st);
  } else
    ref_relayout(td->w, "OIHW", wb, c->attrs->v[ATTR_KERNEL_LAYOUT].s, "OIHW", td->wd);
  ref_relayout(td->y, "NCHW", want, c->attrs->v[ATTR_OUT_LAYOUT].s, "NCHW", td->yd);
  memset(yb, 0, sizeof(float) * (size_t)ny);
  if (!*pool || *pool_threads != threads) {
    temper_pool_destroy(*pool);
    *pool = temper_pool_create(threads);
    *pool_threads = threads;
  }
  float *argv[3] = {xb, wb, yb};
  if (hook == HOOK_CRASH) raise(SIGSEGV);
  if (hook == HOOK_HANG)
    for (;;) pause();
  fn(argv, *pool);
  if (hook == HOOK_WRONG) yb[ny / 2] += 1.0f;
  double rel = rel_error(yb, want, ny);
  if (!(rel < tolerance)) {
    snprintf(err, sizeof err, "relative error %.3g against the reference (limit %.0e)", rel, tolerance);
    reply(DB_WRONG_ANSWER, 0, times, err);
    goto out;
  }
  /* cold: as many copies of the weights as make COLD_BYTES, a call each in
   * turn, so every call reads its weights from memory, not from a cache the
   * previous call warmed — as in a network, where each layer's weights were
   * last touched a whole inference ago */
  copies[n_copies++] = wb;
  if (!warm) {
    size_t wbytes = (size_t)(nw * 4 + 64) / 64 * 64;
    int64_t want = (COLD_BYTES + (int64_t)wbytes - 1) / (int64_t)wbytes;
    if (want > MAX_COPIES) want = MAX_COPIES;
    while (n_copies < want && (copies[n_copies] = aligned_alloc(64, wbytes))) memcpy(copies[n_copies++], wb, (size_t)nw * 4);
  }
  int64_t turn = 0;
#define CALL() (argv[1] = copies[turn++ % n_copies], fn(argv, *pool))
  /* number grows until a round lasts min_repeat_ms */
  int number = 1;
  for (;;) {
    double t0 = data_now();
    for (int i = 0; i < number; i++) CALL();
    double el = data_now() - t0;
    if (el * 1e3 >= minms || number >= 1 << 24) break;
    number = el <= 0 ? number * 10 : (int)fmin((double)number * 10, ceil((double)number * minms * 1.1e-3 / el));
  }
  for (int r = 0; r < repeat; r++) {
    double t0 = data_now();
    for (int i = 0; i < number; i++) CALL();
    times[r] = (data_now() - t0) / number;
  }
#undef CALL
  reply(DB_OK, repeat, times, "");
out:
  for (int i = 1; i < n_copies; i++) free(copies[i]);
  free(xb), free(wb), free(yb), free(want);
  temper_graph_destroy(g);
  free(cfgtext), free(name), free(obj);
}

int runner_main(void) {
  signal(SIGPIPE, SIG_DFL);
  diag d = {0};
  cg_target t;
  cg_host_target(&t, &d);
  cg_jit *jit = NULL;
  task_data td = {0};
  temper_pool *pool = NULL;
  int pool_threads = 0, served = 0;
  for (;;) {
    uint32_t head[2];
    if (read_all(0, head, sizeof head, -1)) break;   /* EOF: the tuner is done */
    if (head[0] != MAGIC || head[1] != PROTOCOL) return 2;
    if (!jit || served % 256 == 0) {   /* a fresh JIT now and then, so memory stays flat */
      cg_jit_destroy(jit);
      if (cg_jit_create(&jit, &t, &d)) return 2;
    }
    serve(jit, &td, &pool, &pool_threads);
    served++;
  }
  cg_jit_destroy(jit);
  temper_pool_destroy(pool);
  task_data_free(&td);
  return 0;
}
