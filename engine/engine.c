/* engine.c: the compile engine. Lowers primitive functions to kernels,
 * cached by (canonical text of the function, target, schedule): the text
 * holds every op, attribute and shape, so structurally identical fused
 * functions (ResNet's repeated blocks) compile once. A non-primitive function
 * is lowered by lowering each primitive function it calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine.h"
#include "schedules.h"
#include "space.h"

/* an engine for target t, unchecked */
static temper_status engine_new(temper_engine **out, const cg_target *t, diag *d) {
  *out = NULL;
  temper_engine *e = calloc(1, sizeof *e);
  if (!e) return diag_fail(d, TEMPER_ENOMEM, "out of memory");
  e->target = *t;
  temper_status s = cg_jit_create(&e->jit, &e->target, d);
  if (s) { free(e); return s; }
  *out = e;
  return TEMPER_OK;
}

temper_status engine_create(temper_engine **out, diag *d) {
  *out = NULL;
  cg_target host;
  temper_status s = cg_host_target(&host, d);
  return s ? s : engine_new(out, &host, d);
}

temper_status engine_create_for(temper_engine **out, const cg_target *t, diag *d) {
  *out = NULL;
  cg_target host;
  temper_status s = cg_host_target(&host, d);
  if (s) return s;
  if (t->vec > host.vec)
    return diag_fail(d, TEMPER_EINVAL, "this machine (%s, %d-float vectors) cannot run code for %s (%d-float vectors)", host.cpu, host.vec,
                     t->cpu, t->vec);
  return engine_new(out, t, d);
}

void engine_destroy(temper_engine *e) {
  if (!e) return;
  for (int i = 0; i < e->n_cache; i++) {
    free(e->cache[i]->key);
    free(e->cache[i]->loops);
    free(e->cache[i]);
  }
  free(e->cache);
  cg_jit_destroy(e->jit);
  free(e);
}

double engine_flops(const node *m) {
  if (!m || m->kind != N_CALL) return 0;
  conv_workload w;
  if (op_is_conv(m->op) && !workload_of(m, &w)) return workload_flops(&w);
  if (m->op == OP_DENSE) return 2.0 * (double)shape_numel(&m->ty.shape) * (double)m->args[0]->ty.shape.d[1];
  return (double)shape_numel(&m->ty.shape);
}

double engine_tolerance(const temper_graph *g) {
  double tol = 1e-4;
  arena s = {0};
  int n = 0;
  node **order = ir_topo(&s, g->main->body, &n);
  for (int i = 0; order && i < n; i++) {
    const node *fn = order[i]->kind == N_CALL && order[i]->op == OP_FUNCALL ? order[i]->callee : NULL;
    if (!fn) continue;
    int m = 0;
    node **body = ir_topo(&s, fn->body, &m);
    for (int k = 0; body && k < m; k++)
      if (body[k]->kind == N_CALL && body[k]->op == OP_CONV2D_WINOGRAD) {
        double t = winograd_tolerance((int)body[k]->attrs->v[ATTR_TILE_SIZE].i[0], (int)body[k]->attrs->v[ATTR_STRIDES].i[0]);
        if (t > tol) tol = t;
      }
  }
  arena_free(&s);
  return tol;
}

static kernel *cache_find(temper_engine *e, const char *key) {
  uint64_t h = data_hash_name(key);
  for (int i = 0; i < e->n_cache; i++)
    if (e->cache[i]->hash == h && !strcmp(e->cache[i]->key, key)) return e->cache[i];
  return NULL;
}

/* fused_nn_conv2d_add_nn_relu_1a2b3c4d, as TVM names them */
void engine_kernel_name(const node *fn, uint64_t h, char *out, size_t n) {
  arena s = {0};
  int cnt = 0;
  node **order = ir_topo(&s, fn->body, &cnt);
  size_t k = (size_t)snprintf(out, n, "fused");
  for (int i = 0; order && i < cnt && k + 24 < n; i++) {
    if (order[i]->kind != N_CALL || order[i]->op < 0) continue;
    k += (size_t)snprintf(out + k, n - k, "_%s", ops_table[order[i]->op].name);
  }
  snprintf(out + k, n - k, "_%08x", (unsigned)(h & 0xffffffffu));
  for (char *p = out; *p; p++)
    if (*p == '.') *p = '_';
  arena_free(&s);
}

temper_status engine_lower_one(const node *fn, const cg_target *t, const char *name, lfunc **out, diag *d) {
  prim p;
  temper_status s = sched_prepare(fn, &p, d);
  if (s) return s;
  sched_config parsed;
  const sched_config *cfg;
  s = sched_config_of(p.master, t->vec, &parsed, &cfg, d);
  if (s) return s;
  return sched_lower(fn, t, cfg, name, out, d);
}

/* collects the primitive functions called (transitively) by fn, in order */
static temper_status collect(const node *fn, const node ***prims, int *n, int *cap, diag *d) {
  if (fn->primitive) {
    if (*n == *cap) {
      *cap = *cap ? *cap * 2 : 16;
      const node **np = realloc(*prims, sizeof(node *) * (size_t)*cap);
      if (!np) return diag_fail(d, TEMPER_ENOMEM, "out of memory");
      *prims = np;
    }
    (*prims)[(*n)++] = fn;
    return TEMPER_OK;
  }
  arena s = {0};
  int cnt = 0;
  node **order = ir_topo(&s, fn->body, &cnt);
  temper_status st = order ? TEMPER_OK : diag_fail(d, TEMPER_ENOMEM, "out of memory");
  for (int i = 0; i < cnt && !st; i++) {
    node *x = order[i];
    if (x->kind != N_CALL) continue;
    if (x->op >= 0)
      st = diag_error(d, x->loc, "%s is called directly from a non-primitive function; run fuse first so every op "
                      "sits in a primitive function", ir_op_name(x));
    else
      st = collect(x->callee, prims, n, cap, d);
  }
  arena_free(&s);
  return st;
}

temper_status engine_lower(temper_engine *e, const node *fn, kernel ***out, int *n_out, diag *d) {
  *out = NULL;
  *n_out = 0;
  const node **prims = NULL;
  int n = 0, cap = 0;
  temper_status s = collect(fn, &prims, &n, &cap, d);
  kernel **res = s ? NULL : calloc((size_t)(n ? n : 1), sizeof(kernel *));
  lfunc **todo = s ? NULL : calloc((size_t)(n ? n : 1), sizeof(lfunc *));
  kernel **fresh = s ? NULL : calloc((size_t)(n ? n : 1), sizeof(kernel *));
  int n_todo = 0;
  if (!s && (!res || !todo || !fresh)) s = diag_fail(d, TEMPER_ENOMEM, "out of memory");
  for (int i = 0; i < n && !s; i++) {
    char *text = print_func(prims[i], 0);
    if (!text) { s = diag_fail(d, TEMPER_ENOMEM, "out of memory"); break; }
    size_t kl = strlen(text) + 256;
    char *key = malloc(kl);
    if (!key) { free(text); s = diag_fail(d, TEMPER_ENOMEM, "out of memory"); break; }
    snprintf(key, kl, "%s|%s|%s|vec=%d|l1d=%lld|l2=%lld", text, e->target.triple, e->target.cpu, e->target.vec,
             (long long)e->target.l1d, (long long)e->target.l2);   /* the text holds the schedule */
    free(text);
    kernel *k = cache_find(e, key);
    for (int j = 0; !k && j < n_todo; j++)
      if (!strcmp(fresh[j]->key, key)) k = fresh[j];
    if (k) {
      free(key);
      res[i] = k;
      e->n_hits++;
      continue;
    }
    k = calloc(1, sizeof *k);
    if (!k) { free(key); s = diag_fail(d, TEMPER_ENOMEM, "out of memory"); break; }
    k->key = key;
    k->hash = data_hash_name(key);
    k->n_inputs = prims[i]->n_params;
    engine_kernel_name(prims[i], k->hash, k->name, sizeof k->name);
    prim p;
    conv_workload w;
    if (!sched_prepare(prims[i], &p, d)) {
      k->flops = engine_flops(p.master) + (p.pre ? engine_flops(p.pre) : 0);
      if (p.master && op_is_conv(p.master->op) && !workload_of(p.master, &w)) workload_key(&w, k->workload, sizeof k->workload);
    }
    s = d->status ? d->status : engine_lower_one(prims[i], &e->target, k->name, &todo[n_todo], d);
    if (s) { free(k->key); free(k); break; }
    k->loops = lf_print(todo[n_todo]);
    fresh[n_todo++] = k;
    res[i] = k;
  }
  if (!s && n_todo) {
    temper_kernel_fn *fns = calloc((size_t)n_todo, sizeof *fns);
    if (!fns) s = diag_fail(d, TEMPER_ENOMEM, "out of memory");
    else s = cg_jit_add(e->jit, todo, n_todo, fns, d);
    for (int j = 0; !s && j < n_todo; j++) fresh[j]->fn = fns[j];
    free(fns);
  }
  if (!s) {   /* into the cache */
    if (e->n_cache + n_todo > e->cap) {
      int nc = (e->n_cache + n_todo) * 2;
      kernel **ncache = realloc(e->cache, sizeof(kernel *) * (size_t)nc);
      if (!ncache) s = diag_fail(d, TEMPER_ENOMEM, "out of memory");
      else e->cache = ncache, e->cap = nc;
    }
    for (int j = 0; !s && j < n_todo; j++) e->cache[e->n_cache++] = fresh[j];
    e->n_compiled += s ? 0 : n_todo;
  }
  if (s) {
    for (int j = 0; j < n_todo; j++) {
      free(fresh[j]->key);
      free(fresh[j]->loops);
      free(fresh[j]);
    }
    free(res);
    res = NULL;
    n = 0;
  }
  for (int j = 0; todo && j < n_todo; j++) lf_free(todo[j]);
  free(todo);
  free(fresh);
  free(prims);
  *out = res;
  *n_out = n;
  return s;
}
