/* aot.c: ahead-of-time builds: plan buffers, emit kernels and weights as one
 * object, generate the executor in C, link a shared library.
 *
 * Buffer plan: every intermediate lives from the step that writes it to the
 * last step that reads it; intermediates whose lives do not overlap share
 * arena space (greedy, largest first, lowest offset that fits). Model inputs
 * are read where the caller keeps them and model outputs written there. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "aot.h"
#include "engine.h"
#include "schedules.h"

extern const char temper_runtime_pool_c[], temper_runtime_h[];

typedef enum buf_kind { B_INPUT, B_OUTPUT, B_PARAM, B_ARENA } buf_kind;
typedef struct abuf {
  buf_kind kind;
  int index;             /* input / output number */
  int64_t offset;        /* floats into the params blob or the arena */
  int64_t size;          /* floats */
  int first, last;       /* steps that write and last read it */
} abuf;

typedef struct astep { int kernel; int n_args; int args[72]; } astep;

typedef struct plan {
  abuf *bufs;
  int n_bufs;
  astep *steps;
  int n_steps;
  lfunc **kernels;
  int n_kernels;
  char **keys;
  float *params;
  int64_t params_floats;
  int64_t arena_floats, inter_floats;
  int *out_buf;          /* per model output: its buffer */
  int n_outputs, n_inputs;
  const node **inputs, **outputs;
} plan;

static void plan_free(plan *p) {
  for (int i = 0; i < p->n_kernels; i++) {
    lf_free(p->kernels[i]);
    free(p->keys[i]);
  }
  free(p->kernels);
  free(p->keys);
  free(p->bufs);
  free(p->steps);
  free(p->params);
  free(p->out_buf);
  free(p->inputs);
  free(p->outputs);
}

static int64_t align16(int64_t n) { return (n + 15) / 16 * 16; }   /* floats: 64 bytes */

static int add_buf(plan *p, buf_kind k, int64_t size) {
  p->bufs[p->n_bufs] = (abuf){.kind = k, .size = size, .first = -1, .last = -1};
  return p->n_bufs++;
}

/* the arena's buffers share space where their lives do not overlap (engine_plan) */
static int plan_arena(plan *p) {
  int n = 0;
  int64_t *size = calloc((size_t)p->n_bufs + 1, sizeof(int64_t)), *off = calloc((size_t)p->n_bufs + 1, sizeof(int64_t));
  int *first = calloc((size_t)p->n_bufs + 1, sizeof(int)), *last = calloc((size_t)p->n_bufs + 1, sizeof(int));
  int ok = size && off && first && last;
  for (int i = 0; ok && i < p->n_bufs; i++)
    if (p->bufs[i].kind == B_ARENA) size[n] = p->bufs[i].size, first[n] = p->bufs[i].first, last[n++] = p->bufs[i].last;
  if (ok) ok = (p->arena_floats = engine_plan(n, size, first, last, off)) >= 0;
  for (int i = 0, k = 0; ok && i < p->n_bufs; i++)
    if (p->bufs[i].kind == B_ARENA) p->bufs[i].offset = off[k++], p->inter_floats += align16(p->bufs[i].size);
  free(size), free(off), free(first), free(last);
  return ok ? 0 : -1;
}

static temper_status make_plan(const cg_target *t, temper_graph *g, plan *p, diag *d) {
  memset(p, 0, sizeof *p);
  arena s = {0};
  int n = 0;
  node **order = ir_topo(&s, g->main->body, &n);
  int *buf_of = order ? arena_alloc(&s, sizeof(int) * (size_t)(g->n_nodes + 1)) : NULL;
  node *body = g->main->body;
  p->n_outputs = body->kind == N_TUPLE ? body->n_args : 1;
  p->n_inputs = g->main->n_params;
  p->bufs = calloc((size_t)(n + p->n_inputs + p->n_outputs + 2), sizeof(abuf));
  p->steps = calloc((size_t)n + 1, sizeof(astep));
  p->kernels = calloc((size_t)n + 1, sizeof(lfunc *));
  p->keys = calloc((size_t)n + 1, sizeof(char *));
  p->out_buf = calloc((size_t)p->n_outputs, sizeof(int));
  p->inputs = calloc((size_t)p->n_inputs + 1, sizeof(node *));
  p->outputs = calloc((size_t)p->n_outputs, sizeof(node *));
  temper_status st = TEMPER_OK;
  if (!buf_of || !p->bufs || !p->steps || !p->kernels || !p->keys || !p->out_buf || !p->inputs || !p->outputs) {
    st = diag_fail(d, TEMPER_ENOMEM, "out of memory");
    goto out;
  }
  for (int i = 0; i < p->n_inputs; i++) {
    node *v = g->main->params[i];
    int b = add_buf(p, B_INPUT, shape_numel(&v->ty.shape));
    p->bufs[b].index = i;
    buf_of[v->id] = b;
    p->inputs[i] = v;
  }
  /* weights: the constants, packed one after another */
  for (int i = 0; i < n; i++)
    if (order[i]->kind == N_CONST) p->params_floats += align16(shape_numel(&order[i]->ty.shape));
  p->params = calloc((size_t)p->params_floats + 16, sizeof(float));
  if (!p->params) { st = diag_fail(d, TEMPER_ENOMEM, "out of memory for the weights"); goto out; }
  int64_t poff = 0;
  for (int i = 0; i < n && !st; i++) {
    node *v = order[i];
    if (v->kind == N_CONST) {
      int b = add_buf(p, B_PARAM, shape_numel(&v->ty.shape));
      p->bufs[b].offset = poff;
      memcpy(p->params + poff, v->data, sizeof(float) * (size_t)p->bufs[b].size);
      poff += align16(p->bufs[b].size);
      buf_of[v->id] = b;
    } else if (v->kind == N_TUPLE) {
      buf_of[v->id] = v->n_args ? buf_of[v->args[0]->id] : -1;
    } else if (v->kind == N_GETITEM) {
      if (v->args[0]->kind != N_TUPLE) { st = diag_fail(d, TEMPER_EUNSUPPORTED, "projection of an op's tuple result"); break; }
      buf_of[v->id] = buf_of[v->args[0]->args[v->index]->id];
    } else if (v->kind == N_CALL) {
      if (v->op >= 0 || !v->callee->primitive) {
        st = diag_error(d, v->loc, "%s is not a call of a primitive function: fuse the graph first", ir_op_name(v));
        break;
      }
      char *text = print_func(v->callee, 0);
      if (!text) { st = diag_fail(d, TEMPER_ENOMEM, "out of memory"); break; }
      int k = -1;
      for (int j = 0; j < p->n_kernels; j++)
        if (!strcmp(p->keys[j], text)) k = j;
      if (k >= 0) free(text);
      else {
        k = p->n_kernels;
        char name[96];
        engine_kernel_name(v->callee, data_hash_name(text), name, sizeof name);
        st = engine_lower_one(v->callee, t, name, &p->kernels[k], d);
        if (st) { free(text); break; }
        p->keys[p->n_kernels++] = text;
      }
      astep *a = &p->steps[p->n_steps];
      a->kernel = k;
      a->n_args = v->n_args + 1;
      for (int j = 0; j < v->n_args; j++) {
        int b = buf_of[v->args[j]->id];
        a->args[j] = b;
        if (p->bufs[b].kind == B_ARENA) p->bufs[b].last = p->n_steps;
      }
      int ob = add_buf(p, B_ARENA, shape_numel(&v->ty.shape));
      p->bufs[ob].first = p->bufs[ob].last = p->n_steps;
      a->args[v->n_args] = ob;
      buf_of[v->id] = ob;
      p->n_steps++;
    }
  }
  if (st) goto out;
  /* model outputs written by a step go straight to the caller's memory */
  for (int i = 0; i < p->n_outputs; i++) {
    node *o = body->kind == N_TUPLE ? body->args[i] : body;
    p->outputs[i] = o;
    int b = buf_of[o->id];
    if (p->bufs[b].kind == B_ARENA) {
      int taken = 0;
      for (int j = 0; j < i; j++) taken |= p->out_buf[j] == b;
      if (!taken) {
        p->bufs[b].kind = B_OUTPUT;
        p->bufs[b].index = i;
      }
    }
    p->out_buf[i] = b;
  }
  if (plan_arena(p)) st = diag_fail(d, TEMPER_ENOMEM, "out of memory");
out:
  arena_free(&s);
  return st;
}

static void shape_list(FILE *f, const shape_t *s) {
  for (int i = 0; i < s->ndim; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)s->d[i]);
}

/* OUT.h: the stable C API of every built model */
static int write_header(const char *path, const plan *p, const aot_opts *o) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fprintf(f, "/* %s: built by temper %s from %s. */\n#ifndef TEMPER_MODEL_H\n#define TEMPER_MODEL_H\n#include <stddef.h>\n#include <stdint.h>\n\n",
          path, TEMPER_VERSION, o->model_name ? o->model_name : "a model");
  fprintf(f, "/* Inputs (float32, C order):\n");
  for (int i = 0; i < p->n_inputs; i++) {
    fprintf(f, " *   %d %s: (", i, p->inputs[i]->name);
    shape_list(f, &p->inputs[i]->ty.shape);
    fprintf(f, ")\n");
  }
  fprintf(f, " * Outputs:\n");
  for (int i = 0; i < p->n_outputs; i++) {
    fprintf(f, " *   %d output_%d: (", i, i);
    shape_list(f, &p->outputs[i]->ty.shape);
    fprintf(f, ")\n");
  }
  fprintf(f, " */\n#define TEMPER_MODEL_INPUTS %d\n#define TEMPER_MODEL_OUTPUTS %d\n\n", p->n_inputs, p->n_outputs);
  fprintf(f,
          "typedef struct temper_model temper_model;\n\n"
          "/* A model instance running on `threads` threads (the caller is one of them).\n"
          " * NULL on failure; temper_model_create_error() says why. Separate instances\n"
          " * may run concurrently; one instance runs one call at a time. */\n"
          "temper_model *temper_model_create(int threads);\n"
          "const char *temper_model_create_error(void);\n"
          "void temper_model_destroy(temper_model *m);\n\n"
          "/* Runs the model: inputs[i] holds input_sizes[i] floats, outputs[i] room for\n"
          " * output_sizes[i]. 0 on success; -1 if a size is wrong (see temper_model_error). */\n"
          "int temper_model_run(temper_model *m, const float *const *inputs, const size_t *input_sizes,\n"
          "                     float *const *outputs, const size_t *output_sizes);\n"
          "const char *temper_model_error(const temper_model *m);\n\n"
          "/* The inputs and outputs: names, ranks, shapes, element counts. */\n"
          "int temper_model_num_inputs(void);\nint temper_model_num_outputs(void);\n"
          "const char *temper_model_input_name(int i);\nconst char *temper_model_output_name(int i);\n"
          "int temper_model_input_ndim(int i);\nint temper_model_output_ndim(int i);\n"
          "const int64_t *temper_model_input_shape(int i);\nconst int64_t *temper_model_output_shape(int i);\n"
          "size_t temper_model_input_size(int i);\nsize_t temper_model_output_size(int i);\n\n#endif\n");
  return fclose(f);
}

static const char *arg_expr(const plan *p, int b, char *buf, size_t n) {
  const abuf *x = &p->bufs[b];
  switch (x->kind) {
  case B_INPUT: snprintf(buf, n, "(float *)in[%d]", x->index); break;
  case B_OUTPUT: snprintf(buf, n, "out[%d]", x->index); break;
  case B_PARAM: snprintf(buf, n, "(float *)(P + %lld)", (long long)x->offset); break;
  case B_ARENA: snprintf(buf, n, "A + %lld", (long long)x->offset); break;
  }
  return buf;
}

/* the executor, in C: one call per step over the planned buffers */
static int write_source(const char *path, const char *header, const plan *p, int embedded) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fprintf(f, "/* generated by temper build: the executor of one model */\n#define _GNU_SOURCE\n#include <dlfcn.h>\n#include <stdint.h>\n#include <stdio.h>\n"
             "#include <stdlib.h>\n#include <string.h>\n#include <sys/mman.h>\n#include \"%s\"\n#include \"temper/runtime.h\"\n\n#define API __attribute__((visibility(\"default\")))\n\n",
          header);
  for (int k = 0; k < p->n_kernels; k++) fprintf(f, "void %s(float *const *args, temper_pool *pool);\n", p->kernels[k]->name);
  if (embedded) fprintf(f, "extern const float temper_weights[];\n");
  fprintf(f, "\n#define ARENA_FLOATS %lldll\n#define PARAM_FLOATS %lldll\n\n", (long long)p->arena_floats, (long long)p->params_floats);
  fprintf(f, "static const char *const input_names[] = {");
  for (int i = 0; i < p->n_inputs; i++) fprintf(f, "\"%s\", ", p->inputs[i]->name);
  fprintf(f, "0};\nstatic const char *const output_names[] = {");
  for (int i = 0; i < p->n_outputs; i++) fprintf(f, "\"output_%d\", ", i);
  fprintf(f, "0};\nstatic const int input_ndim[] = {");
  for (int i = 0; i < p->n_inputs; i++) fprintf(f, "%d, ", p->inputs[i]->ty.shape.ndim);
  fprintf(f, "0};\nstatic const int output_ndim[] = {");
  for (int i = 0; i < p->n_outputs; i++) fprintf(f, "%d, ", p->outputs[i]->ty.shape.ndim);
  fprintf(f, "0};\nstatic const int64_t input_shape[][6] = {");
  for (int i = 0; i < p->n_inputs; i++) { fprintf(f, "{"); shape_list(f, &p->inputs[i]->ty.shape); fprintf(f, "}, "); }
  fprintf(f, "{0}};\nstatic const int64_t output_shape[][6] = {");
  for (int i = 0; i < p->n_outputs; i++) { fprintf(f, "{"); shape_list(f, &p->outputs[i]->ty.shape); fprintf(f, "}, "); }
  fprintf(f, "{0}};\nstatic const size_t input_size[] = {");
  for (int i = 0; i < p->n_inputs; i++) fprintf(f, "%lld, ", (long long)shape_numel(&p->inputs[i]->ty.shape));
  fprintf(f, "0};\nstatic const size_t output_size[] = {");
  for (int i = 0; i < p->n_outputs; i++) fprintf(f, "%lld, ", (long long)shape_numel(&p->outputs[i]->ty.shape));
  fprintf(f, "0};\n\n");
  fprintf(f,
          "struct block { void *raw; size_t len; };\n"
          "struct temper_model { temper_pool *pool; float *arena; const float *params; struct block arena_mem, params_mem; char error[256]; };\n"
          "/* the arena and loaded weights: zeroed, 2 MB-aligned, asked for 2 MB pages (a hint: fewer TLB misses, and\n"
          " * the cache sets the buffers fall in follow from their offsets) */\n"
          "static float *big_alloc(size_t bytes, struct block *b) {\n"
          "  size_t page = (size_t)2 << 20, n = (bytes + page - 1) / page * page + page;\n"
          "  char *raw = mmap(0, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);\n"
          "  if (raw == MAP_FAILED) return 0;\n"
          "  char *p = (char *)(((uintptr_t)raw + page - 1) / page * page);\n"
          "#ifdef MADV_HUGEPAGE\n  madvise(p, n - page, MADV_HUGEPAGE);\n#endif\n"
          "  b->raw = raw, b->len = n;\n  return (float *)p;\n}\n"
          "static void big_free(struct block *b) { if (b->raw) munmap(b->raw, b->len); }\n"
          "static __thread char create_error[512];\n"
          "API const char *temper_model_create_error(void) { return create_error; }\n"
          "API const char *temper_model_error(const temper_model *m) { return m ? m->error : \"no model\"; }\n"
          "API int temper_model_num_inputs(void) { return %d; }\nAPI int temper_model_num_outputs(void) { return %d; }\n"
          "API const char *temper_model_input_name(int i) { return i >= 0 && i < %d ? input_names[i] : 0; }\n"
          "API const char *temper_model_output_name(int i) { return i >= 0 && i < %d ? output_names[i] : 0; }\n"
          "API int temper_model_input_ndim(int i) { return i >= 0 && i < %d ? input_ndim[i] : -1; }\n"
          "API int temper_model_output_ndim(int i) { return i >= 0 && i < %d ? output_ndim[i] : -1; }\n"
          "API const int64_t *temper_model_input_shape(int i) { return i >= 0 && i < %d ? input_shape[i] : 0; }\n"
          "API const int64_t *temper_model_output_shape(int i) { return i >= 0 && i < %d ? output_shape[i] : 0; }\n"
          "API size_t temper_model_input_size(int i) { return i >= 0 && i < %d ? input_size[i] : 0; }\n"
          "API size_t temper_model_output_size(int i) { return i >= 0 && i < %d ? output_size[i] : 0; }\n\n",
          p->n_inputs, p->n_outputs, p->n_inputs, p->n_outputs, p->n_inputs, p->n_outputs, p->n_inputs, p->n_outputs, p->n_inputs,
          p->n_outputs);
  if (!embedded)
    fprintf(f,
            "/* the weights live beside the library: NAME.params for NAME.so */\n"
            "static float *load_params(struct block *b) {\n"
            "  Dl_info info;\n  char path[4096];\n"
            "  const char *env = getenv(\"TEMPER_MODEL_PARAMS\");\n"
            "  if (env) snprintf(path, sizeof path, \"%%s\", env);\n"
            "  else {\n"
            "    if (!dladdr((void *)temper_model_create, &info) || !info.dli_fname) { snprintf(create_error, sizeof create_error, \"cannot locate the library\"); return 0; }\n"
            "    snprintf(path, sizeof path, \"%%s\", info.dli_fname);\n"
            "    char *dot = strrchr(path, '.');\n"
            "    if (dot && !strcmp(dot, \".so\")) strcpy(dot, \".params\");\n"
            "    else strncat(path, \".params\", sizeof path - strlen(path) - 1);\n"
            "  }\n"
            "  FILE *f = fopen(path, \"rb\");\n"
            "  if (!f) { snprintf(create_error, sizeof create_error, \"%%s: cannot open the weights\", path); return 0; }\n"
            "  float *p = big_alloc((size_t)PARAM_FLOATS * 4 + 64, b);\n"
            "  size_t got = p ? fread(p, sizeof(float), (size_t)PARAM_FLOATS, f) : 0;\n"
            "  int extra = fgetc(f) != EOF;\n  fclose(f);\n"
            "  if (!p || got != (size_t)PARAM_FLOATS || extra) { snprintf(create_error, sizeof create_error, \"%%s: expected %%lld floats of weights\", path, PARAM_FLOATS); big_free(b); return 0; }\n"
            "  return p;\n}\n\n");
  fprintf(f,
          "API temper_model *temper_model_create(int threads) {\n"
          "  temper_model *m = calloc(1, sizeof *m);\n"
          "  if (!m) { snprintf(create_error, sizeof create_error, \"out of memory\"); return 0; }\n"
          "  m->arena = big_alloc((size_t)ARENA_FLOATS * 4 + 64, &m->arena_mem);\n"
          "  if (!m->arena) { snprintf(create_error, sizeof create_error, \"out of memory for the arena\"); free(m); return 0; }\n");
  if (embedded) fprintf(f, "  m->params = temper_weights;\n");
  else fprintf(f, "  m->params = load_params(&m->params_mem);\n  if (!m->params) { big_free(&m->arena_mem); free(m); return 0; }\n");
  fprintf(f,
          "  m->pool = temper_pool_create(threads < 1 ? 1 : threads);\n"
          "  if (!m->pool) { snprintf(create_error, sizeof create_error, \"cannot start %%d threads\", threads); big_free(&m->params_mem); big_free(&m->arena_mem); free(m); return 0; }\n"
          "  return m;\n}\n\n"
          "API void temper_model_destroy(temper_model *m) {\n  if (!m) return;\n  temper_pool_destroy(m->pool);\n"
          "  big_free(&m->params_mem);\n  big_free(&m->arena_mem);\n  free(m);\n}\n\n"
          "API int temper_model_run(temper_model *m, const float *const *in, const size_t *in_sizes, float *const *out, const size_t *out_sizes) {\n"
          "  if (!m) return -1;\n"
          "  for (int i = 0; i < %d; i++)\n"
          "    if (!in || !in[i] || !in_sizes || in_sizes[i] != input_size[i]) {\n"
          "      snprintf(m->error, sizeof m->error, \"input %%d (%%s): expected %%zu floats, got %%zu\", i, input_names[i], input_size[i], in_sizes && in ? in_sizes[i] : (size_t)0);\n"
          "      return -1;\n    }\n"
          "  for (int i = 0; i < %d; i++)\n"
          "    if (!out || !out[i] || !out_sizes || out_sizes[i] != output_size[i]) {\n"
          "      snprintf(m->error, sizeof m->error, \"output %%d: expected room for %%zu floats, got %%zu\", i, output_size[i], out_sizes && out ? out_sizes[i] : (size_t)0);\n"
          "      return -1;\n    }\n"
          "  float *A = m->arena;\n  const float *P = m->params;\n  (void)A;\n  (void)P;\n",
          p->n_inputs, p->n_outputs);
  char buf[96];
  for (int si = 0; si < p->n_steps; si++) {
    const astep *a = &p->steps[si];
    /* its largest weights and those of the next step that has any, prefetched as it computes */
    int nb = -1, cb = -1;
    for (int j = 0; j + 1 < a->n_args; j++) {
      int b = a->args[j];
      if (p->bufs[b].kind == B_PARAM && (cb < 0 || p->bufs[b].size > p->bufs[cb].size)) cb = b;
    }
    for (int sj = si + 1; sj < p->n_steps && nb < 0; sj++)
      for (int j = 0; j + 1 < p->steps[sj].n_args; j++) {
        int b = p->steps[sj].args[j];
        if (p->bufs[b].kind == B_PARAM && (nb < 0 || p->bufs[b].size > p->bufs[nb].size)) nb = b;
      }
    if (nb >= 0 || cb >= 0) {
      char buf2[96];
      fprintf(f, "  temper_pool_prefetch(m->pool, %s, %lldll, %s, %lldll);\n", cb >= 0 ? arg_expr(p, cb, buf, sizeof buf) : "NULL",
              cb >= 0 ? (long long)p->bufs[cb].size * 4 : 0LL, nb >= 0 ? arg_expr(p, nb, buf2, sizeof buf2) : "NULL",
              nb >= 0 ? (long long)p->bufs[nb].size * 4 : 0LL);
    }
    fprintf(f, "  { float *const args[] = {");
    for (int j = 0; j < a->n_args; j++) fprintf(f, "%s%s", j ? ", " : "", arg_expr(p, a->args[j], buf, sizeof buf));
    fprintf(f, "}; %s(args, m->pool); }\n", p->kernels[a->kernel]->name);
  }
  for (int i = 0; i < p->n_outputs; i++) {   /* outputs that no step wrote: inputs, weights, repeats */
    const abuf *b = &p->bufs[p->out_buf[i]];
    if (b->kind == B_OUTPUT && b->index == i) continue;
    fprintf(f, "  memcpy(out[%d], %s, sizeof(float) * %lld);\n", i, arg_expr(p, p->out_buf[i], buf, sizeof buf),
            (long long)shape_numel(&p->outputs[i]->ty.shape));
  }
  fprintf(f, "  return 0;\n}\n");
  return fclose(f);
}

static int write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t w = fwrite(data, 1, n, f);
  return fclose(f) || w != n ? -1 : 0;
}

static temper_status run_cc(const char *cc, char *const argv[], diag *d) {
  pid_t pid = fork();
  if (pid < 0) return diag_fail(d, TEMPER_EIO, "fork: %s", strerror(errno));
  if (pid == 0) {
    execvp(cc, argv);
    fprintf(stderr, "temper: cannot run the system compiler '%s': %s\n", cc, strerror(errno));
    _exit(127);
  }
  int st;
  waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st))
    return diag_fail(d, TEMPER_EIO, "the system compiler '%s' failed (exit %d) linking the model", cc, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  return TEMPER_OK;
}

temper_status aot_build(const cg_target *t, temper_graph *g, const aot_opts *o, aot_report *rep, diag *d) {
  memset(rep, 0, sizeof *rep);
  plan p;
  temper_status s = make_plan(t, g, &p, d);
  cg_compiler *cc = NULL;
  char dir[] = "/tmp/temper-build-XXXXXX";
  int have_dir = 0;
  char *obj = NULL;
  size_t obj_size = 0;
  if (s) goto out;
  rep->n_steps = p.n_steps;
  rep->n_kernels = p.n_kernels;
  rep->arena_bytes = p.arena_floats * 4;
  rep->intermediate_bytes = p.inter_floats * 4;
  rep->params_bytes = p.params_floats * 4;
  rep->params_embedded = (double)rep->params_bytes <= o->embed_limit_mb * 1048576.0;
  if ((s = cg_compiler_create(&cc, t, d))) goto out;
  if (o->emit && !strcmp(o->emit, "loops")) {
    FILE *f = fopen(o->out, "w");
    if (!f) { s = diag_fail(d, TEMPER_EIO, "%s: cannot create: %s", o->out, strerror(errno)); goto out; }
    for (int k = 0; k < p.n_kernels; k++) {
      char *text = lf_print(p.kernels[k]);
      fprintf(f, "%s\n", text ? text : "");
      free(text);
    }
    fclose(f);
    goto out;
  }
  cg_emit_kind kind = !o->emit || !strcmp(o->emit, "obj") ? CG_EMIT_OBJ : !strcmp(o->emit, "asm") ? CG_EMIT_ASM : CG_EMIT_LLVM;
  if (o->emit && kind == CG_EMIT_OBJ && strcmp(o->emit, "obj")) {
    s = diag_fail(d, TEMPER_EINVAL, "--emit expects obj, asm, llvm or loops, got '%s'", o->emit);
    goto out;
  }
  if (o->emit && strcmp(o->emit, "obj") && strcmp(o->emit, "asm") && strcmp(o->emit, "llvm")) {
    s = diag_fail(d, TEMPER_EINVAL, "--emit expects obj, asm, llvm or loops, got '%s'", o->emit);
    goto out;
  }
  s = cg_emit(cc, p.kernels, p.n_kernels, rep->params_embedded ? p.params : NULL,
              rep->params_embedded ? (size_t)p.params_floats * 4 : 0, rep->params_embedded ? "temper_weights" : NULL, kind, &obj,
              &obj_size, d);
  if (s) goto out;
  if (o->emit) {
    if (write_file(o->out, obj, obj_size)) s = diag_fail(d, TEMPER_EIO, "%s: cannot write: %s", o->out, strerror(errno));
    goto out;
  }
  /* a library: header and weights beside OUT.so, sources in a scratch directory */
  if (!mkdtemp(dir)) { s = diag_fail(d, TEMPER_EIO, "cannot make a scratch directory: %s", strerror(errno)); goto out; }
  have_dir = 1;
  char header[4096], src[4200], kobj[4200], pool[4200], rth[4200], params[4200], incdir[4200];
  snprintf(header, sizeof header, "%s", o->out);
  char *dot = strrchr(header, '.');
  if (dot && !strcmp(dot, ".so")) *dot = 0;
  snprintf(params, sizeof params, "%s.params", header);
  strncat(header, ".h", sizeof header - strlen(header) - 1);
  snprintf(src, sizeof src, "%s/model.c", dir);
  snprintf(kobj, sizeof kobj, "%s/kernels.o", dir);
  snprintf(pool, sizeof pool, "%s/pool.c", dir);
  snprintf(incdir, sizeof incdir, "%s/temper", dir);
  snprintf(rth, sizeof rth, "%s/temper/runtime.h", dir);
  mkdir(incdir, 0700);
  /* the executor includes the header by absolute path: cc runs elsewhere */
  char absdir[4096], header_abs[8300];
  char hcopy[4096];
  snprintf(hcopy, sizeof hcopy, "%s", header);
  char *slash = strrchr(hcopy, '/');
  const char *hbase = slash ? slash + 1 : hcopy;
  if (slash) *slash = 0;
  if (!realpath(slash ? (hcopy[0] ? hcopy : "/") : ".", absdir)) {
    s = diag_fail(d, TEMPER_EIO, "%s: cannot resolve the output directory: %s", o->out, strerror(errno));
    goto out;
  }
  snprintf(header_abs, sizeof header_abs, "%s/%s", absdir, hbase);
  if (write_header(header, &p, o) || write_source(src, header_abs, &p, rep->params_embedded) || write_file(kobj, obj, obj_size) ||
      write_file(pool, temper_runtime_pool_c, strlen(temper_runtime_pool_c)) ||
      write_file(rth, temper_runtime_h, strlen(temper_runtime_h))) {
    s = diag_fail(d, TEMPER_EIO, "cannot write the build files (%s): %s", header, strerror(errno));
    goto out;
  }
  if (!rep->params_embedded && write_file(params, p.params, (size_t)p.params_floats * 4)) {
    s = diag_fail(d, TEMPER_EIO, "%s: cannot write: %s", params, strerror(errno));
    goto out;
  }
  if (rep->params_embedded) remove(params);   /* a stale one would not be used anyway */
  char idir[4300];
  snprintf(idir, sizeof idir, "-I%s", dir);
  const char *ccname = o->cc ? o->cc : "cc";
  char *const argv[] = {(char *)ccname, "-shared", "-fPIC", "-O2", "-fvisibility=hidden", "-o", (char *)o->out, idir, src, pool, kobj,
                        "-lm", "-lpthread", "-Wl,--as-needed", "-Wl,-z,noexecstack", NULL};
  s = run_cc(ccname, argv, d);
out:
  if (have_dir) {
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) (void)0;
  }
  free(obj);
  cg_compiler_destroy(cc);
  plan_free(&p);
  return s;
}
