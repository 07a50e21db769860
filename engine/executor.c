/* executor.c: runs a fused graph in memory: one step per call of a
 * primitive function, in topological order, over buffers allocated once
 * (first-touching memory inside a timed loop would measure page faults).
 *
 * Every buffer — the inputs, each step's output and a copy of each
 * constant — lives in one block at 64-byte boundaries, backed by 2 MB
 * pages where the kernel gives them: the steps' intermediates share an
 * arena planned by liveness as a built library's (engine_plan), the rest
 * follow in creation order. The same program gets the same placement each
 * time it is built (the cache sets its buffers fall in follow from their
 * offsets, not from which physical pages malloc happened to return;
 * refine compares two builds and measured up to 2 % between two builds of
 * one program with 4 KB pages), and the weights' TLB misses go. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "engine.h"

enum { EXEC_PAGE = 2 << 20 };

/* buffers get their addresses in exec_place, once all are known */
static int new_buf(exec *x, int64_t size, float *data) {
  x->sizes[x->n_bufs] = size;
  x->bufs[x->n_bufs] = data;   /* the constant's data until placed */
  return x->n_bufs++;
}

static int64_t align16(int64_t floats) { return (floats + 15) / 16 * 16; }

int64_t engine_plan(int n, const int64_t *size, const int *first, const int *last, int64_t *offset) {
  int *order = malloc(sizeof(int) * (size_t)(n + 1));
  int64_t total = 0;
  if (!order) return -1;
  for (int i = 0; i < n; i++) order[i] = i;
  for (int i = 1; i < n; i++)   /* largest first; stable */
    for (int j = i; j > 0 && size[order[j - 1]] < size[order[j]]; j--) {
      int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  for (int i = 0; i < n; i++) {
    int b = order[i];
    int64_t off = 0;
    for (int moved = 1; moved;) {   /* slide up past every placed, overlapping neighbour */
      moved = 0;
      for (int j = 0; j < i; j++) {
        int o = order[j];
        int live = !(last[b] < first[o] || last[o] < first[b]);
        if (live && off < offset[o] + align16(size[o]) && offset[o] < off + align16(size[b])) {
          off = offset[o] + align16(size[o]);
          moved = 1;
        }
      }
    }
    offset[b] = off;
    if (off + align16(size[b]) > total) total = off + align16(size[b]);
  }
  free(order);
  return total;
}

/* One block for every buffer, 2 MB-aligned and asked for 2 MB pages: the
 * constants (copied in), the inputs and outputs, and the steps'
 * intermediates planned as a built library plans its arena (engine_plan:
 * they share space where their lives do not overlap). planned[i]: buffer i
 * is an intermediate, live from step first[i] to last[i]. */
static int exec_place(exec *x, const char *planned, const int *first, const int *last) {
  int64_t *size = calloc((size_t)x->n_bufs + 1, sizeof(int64_t)), *off = calloc((size_t)x->n_bufs + 1, sizeof(int64_t));
  int *f = calloc((size_t)x->n_bufs + 1, sizeof(int)), *l = calloc((size_t)x->n_bufs + 1, sizeof(int));
  int n = 0, ok = size && off && f && l;
  for (int i = 0; ok && i < x->n_bufs; i++)
    if (planned[i]) size[n] = x->sizes[i], f[n] = first[i], l[n++] = last[i];
  int64_t arena = ok ? engine_plan(n, size, f, l, off) : -1;
  size_t total = (size_t)(arena < 0 ? 0 : arena) * 4 + 64;
  for (int i = 0; i < x->n_bufs; i++)
    if (!planned[i]) total += (size_t)align16(x->sizes[i]) * 4 + 64;
  total = (total + EXEC_PAGE - 1) / EXEC_PAGE * EXEC_PAGE;
  size_t len = total + EXEC_PAGE;
  char *raw = arena < 0 ? MAP_FAILED : mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw != MAP_FAILED) {
    char *base = (char *)(((uintptr_t)raw + EXEC_PAGE - 1) / EXEC_PAGE * EXEC_PAGE);
#ifdef MADV_HUGEPAGE
    madvise(base, total, MADV_HUGEPAGE);   /* a hint: without it, 4 KB pages and the same offsets */
#endif
    x->block = raw;
    x->block_len = len;
    size_t at = (size_t)arena * 4 + 64;   /* the arena first, then the rest in creation order */
    for (int i = 0, k = 0; i < x->n_bufs; i++) {
      if (planned[i]) {
        x->bufs[i] = (float *)(base + off[k++] * 4);
        continue;
      }
      float *p = (float *)(base + at);
      if (x->bufs[i]) memcpy(p, x->bufs[i], (size_t)x->sizes[i] * 4);
      x->bufs[i] = p;
      at += (size_t)align16(x->sizes[i]) * 4 + 64;
    }
  }
  free(size), free(off), free(f), free(l);
  return raw == MAP_FAILED ? -1 : 0;
}

temper_status exec_create(temper_engine *e, temper_graph *g, int threads, exec **out, diag *d) {
  *out = NULL;
  exec *x = calloc(1, sizeof *x);
  arena s = {0};
  int n = 0;
  node **order = ir_topo(&s, g->main->body, &n);
  int *buf_of = order ? arena_alloc(&s, sizeof(int) * (size_t)(g->n_nodes + 1)) : NULL;
  int *field0 = order ? arena_alloc(&s, sizeof(int) * (size_t)(g->n_nodes + 1)) : NULL;
  int *weights = order ? arena_alloc(&s, sizeof(int) * (size_t)(n + 1)) : NULL;   /* per step: its largest constant's buffer, or -1 */
  int **argb = order ? arena_alloc(&s, sizeof(int *) * (size_t)(n + 1)) : NULL;     /* per step: its arguments' buffers */
  if (!x || !buf_of || !field0 || !weights || !argb) goto oom;
  int cap = n + g->main->n_params + 1;
  x->bufs = calloc((size_t)cap, sizeof(float *));
  x->sizes = calloc((size_t)cap, sizeof(int64_t));
  x->steps = calloc((size_t)n + 1, sizeof(exec_step));
  x->inputs = calloc((size_t)g->main->n_params + 1, sizeof(node *));
  x->input_bufs = calloc((size_t)g->main->n_params + 1, sizeof(int));
  if (!x->bufs || !x->sizes || !x->steps || !x->inputs || !x->input_bufs) goto oom;
  for (int i = 0; i < g->main->n_params; i++) {
    node *p = g->main->params[i];
    int b = new_buf(x, shape_numel(&p->ty.shape), NULL);
    buf_of[p->id] = b;
    x->inputs[x->n_inputs] = p;
    x->input_bufs[x->n_inputs++] = b;
  }
  for (int i = 0; i < n; i++) {
    node *v = order[i];
    switch (v->kind) {
    case N_VAR: case N_FUNC: break;
    case N_CONST:
      buf_of[v->id] = new_buf(x, shape_numel(&v->ty.shape), v->data);
      break;
    case N_TUPLE: field0[v->id] = v->n_args ? buf_of[v->args[0]->id] : -1; break;
    case N_GETITEM: {
      node *t = v->args[0];
      if (t->kind != N_TUPLE) {
        exec_destroy(x);
        arena_free(&s);
        return diag_fail(d, TEMPER_EUNSUPPORTED, "projection of a tuple-valued op result is not supported by the executor");
      }
      buf_of[v->id] = buf_of[t->args[v->index]->id];
      break;
    }
    case N_CALL: {
      kernel **ks = NULL;
      int nk = 0;
      temper_status st = v->op >= 0 ? diag_error(d, v->loc, "%s outside a primitive function: run fuse first", ir_op_name(v))
                                    : engine_lower(e, v->callee, &ks, &nk, d);
      if (st == TEMPER_OK && nk != 1) {
        free(ks);
        st = diag_fail(d, TEMPER_EUNSUPPORTED, "main calls a non-primitive function; only one level of calls is supported");
      }
      if (st) { exec_destroy(x); arena_free(&s); return st; }
      exec_step *step = &x->steps[x->n_steps++];
      step->k = ks[0];
      free(ks);
      step->n_args = v->n_args + 1;
      step->argv = calloc((size_t)step->n_args, sizeof(float *));
      int *ab = arena_alloc(&s, sizeof(int) * (size_t)step->n_args);
      if (!step->argv || !ab) goto oom;
      argb[x->n_steps - 1] = ab;
      int ob = new_buf(x, shape_numel(&v->ty.shape), NULL);
      buf_of[v->id] = ob;
      weights[x->n_steps - 1] = -1;
      for (int j = 0; j < v->n_args; j++) {
        int b = buf_of[v->args[j]->id], *wb = &weights[x->n_steps - 1];
        ab[j] = b;
        if (v->args[j]->kind == N_CONST && (*wb < 0 || x->sizes[b] > x->sizes[*wb])) *wb = b;
      }
      ab[v->n_args] = ob;
      break;
    }
    }
  }
  node *body = g->main->body;
  x->n_outputs = body->kind == N_TUPLE ? body->n_args : 1;
  x->output_bufs = calloc((size_t)x->n_outputs, sizeof(int));
  x->output_shapes = calloc((size_t)x->n_outputs, sizeof(shape_t));
  if (!x->output_bufs || !x->output_shapes) goto oom;
  for (int i = 0; i < x->n_outputs; i++) {
    node *o = body->kind == N_TUPLE ? body->args[i] : body;
    x->output_bufs[i] = buf_of[o->id];
    x->output_shapes[i] = o->ty.shape;
  }
  /* the steps' outputs that are not the model's: planned, live from the
   * step that writes them to the last that reads them */
  char *planned = arena_alloc(&s, (size_t)x->n_bufs + 1);
  int *first = arena_alloc(&s, sizeof(int) * (size_t)(x->n_bufs + 1)), *last = arena_alloc(&s, sizeof(int) * (size_t)(x->n_bufs + 1));
  if (!planned || !first || !last) goto oom;
  memset(planned, 0, (size_t)x->n_bufs + 1);
  for (int i = 0; i < x->n_steps; i++) {
    int ob = argb[i][x->steps[i].n_args - 1];
    planned[ob] = 1, first[ob] = last[ob] = i;
  }
  for (int i = 0; i < x->n_steps; i++)
    for (int j = 0; j < x->steps[i].n_args - 1; j++) last[argb[i][j]] = i;
  for (int i = 0; i < x->n_outputs; i++) planned[x->output_bufs[i]] = 0;
  if (exec_place(x, planned, first, last)) goto oom;
  for (int i = 0; i < x->n_steps; i++)
    for (int j = 0; j < x->steps[i].n_args; j++) x->steps[i].argv[j] = x->bufs[argb[i][j]];
  /* a step's weights and those of the next step that has any, prefetched
   * as it computes: threads stream them from memory meanwhile */
  for (int i = x->n_steps - 1, next = -1; i >= 0; i--) {
    x->steps[i].w = weights[i] >= 0 ? x->bufs[weights[i]] : NULL;
    x->steps[i].w_bytes = weights[i] >= 0 ? x->sizes[weights[i]] * 4 : 0;
    x->steps[i].next_w = next >= 0 ? x->bufs[next] : NULL;
    x->steps[i].next_w_bytes = next >= 0 ? x->sizes[next] * 4 : 0;
    if (weights[i] >= 0) next = weights[i];
  }
  x->pool = temper_pool_create(threads);
  if (!x->pool) goto oom;
  arena_free(&s);
  *out = x;
  return TEMPER_OK;
oom:
  exec_destroy(x);
  arena_free(&s);
  return diag_fail(d, TEMPER_ENOMEM, "out of memory");
}

void exec_destroy(exec *x) {
  if (!x) return;
  if (x->block) munmap(x->block, x->block_len);
  for (int i = 0; i < x->n_steps; i++) free(x->steps[i].argv);
  free(x->bufs);
  free(x->sizes);
  free(x->steps);
  free(x->inputs);
  free(x->input_bufs);
  free(x->output_bufs);
  free(x->output_shapes);
  if (!x->pool_borrowed) temper_pool_destroy(x->pool);
  free(x);
}

void exec_share_pool(exec *x, temper_pool *p) {
  if (!x->pool_borrowed) temper_pool_destroy(x->pool);
  x->pool = p;
  x->pool_borrowed = 1;
}

void exec_set_input(exec *x, int i, const float *data) {
  memcpy(x->bufs[x->input_bufs[i]], data, sizeof(float) * (size_t)x->sizes[x->input_bufs[i]]);
}

void exec_run_step(exec *x, int i) {
  exec_step *st = &x->steps[i];
  temper_pool_prefetch(x->pool, st->w, st->w_bytes, st->next_w, st->next_w_bytes);
  st->k->fn(st->argv, x->pool);
}

void exec_run(exec *x) {
  for (int i = 0; i < x->n_steps; i++) exec_run_step(x, i);
}

double exec_run_timed(exec *x, double *step_s) {
  double t0 = data_now(), prev = t0;
  for (int i = 0; i < x->n_steps; i++) {
    exec_run_step(x, i);
    double now = data_now();
    step_s[i] = now - prev;
    prev = now;
  }
  return prev - t0;
}

const float *exec_output(const exec *x, int i) { return x->bufs[x->output_bufs[i]]; }

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

temper_status engine_time(void (*run)(void *ctx), void *ctx, int repeat, run_timing *t) {
  double *times = calloc((size_t)(repeat > 0 ? repeat : 1), sizeof(double));
  if (!times) return TEMPER_ENOMEM;
  run(ctx);   /* warm-up */
  for (int r = 0; r < repeat; r++) {
    double s0 = data_now();
    run(ctx);
    times[r] = data_now() - s0;
  }
  qsort(times, (size_t)repeat, sizeof(double), cmp_double);
  *t = (run_timing){times[repeat / 2], times[0], times[repeat - 1], repeat};
  free(times);
  return TEMPER_OK;
}

static void run_exec(void *x) { exec_run(x); }

temper_status exec_time(exec *x, int repeat, run_timing *t) { return engine_time(run_exec, x, repeat, t); }

/* The alone times re-run a step after whole inferences: its inputs may
 * hold what later steps wrote into the shared arena (finite activations of
 * the same model), which changes nothing a step's time depends on. */
temper_status exec_profile(exec *x, int repeat, step_timing *out) {
  double *seq = calloc((size_t)repeat * (size_t)(x->n_steps + 1), sizeof(double)), *alone = calloc((size_t)repeat, sizeof(double));
  if (!seq || !alone) { free(seq), free(alone); return TEMPER_ENOMEM; }
  for (int r = 0; r < repeat; r++)
    for (int i = 0; i < x->n_steps; i++) {
      double s0 = data_now();
      exec_run_step(x, i);
      seq[(size_t)i * (size_t)repeat + (size_t)r] = data_now() - s0;
    }
  for (int i = 0; i < x->n_steps; i++) {
    exec_step *st = &x->steps[i];
    double *ks = seq + (size_t)i * (size_t)repeat;
    qsort(ks, (size_t)repeat, sizeof(double), cmp_double);
    for (int r = 0; r < repeat; r++) {
      double s0 = data_now();
      st->k->fn(st->argv, x->pool);
      alone[r] = data_now() - s0;
    }
    qsort(alone, (size_t)repeat, sizeof(double), cmp_double);
    out[i] = (step_timing){ks[repeat / 2], alone[repeat / 2]};
  }
  free(seq);
  free(alone);
  return TEMPER_OK;
}
