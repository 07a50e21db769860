/* compiler_int.h: the compiler's private structures.
 *
 * The graph IR
 * ------------
 * A model is one function, @main. Its body is a DAG of nodes, all allocated in
 * the graph's arena and never freed one by one:
 *
 *   N_VAR      a function parameter (%x, %conv1_weight, %p0)
 *   N_CONST    a float32 tensor (a bound weight, a folded value, a 0-d literal)
 *   N_CALL     an op (op >= 0) or a call of a function (op == OP_FUNCALL, callee)
 *   N_TUPLE    (%a, %b): concatenate's input, a multi-output result
 *   N_GETITEM  %t.0: a field of a tuple (batch_norm returns a 3-tuple)
 *   N_FUNC     fn (%p0, ..., Primitive=1) { body }
 *
 * Invariants: a body is a DAG; ir_topo gives its nodes in post-order (inputs
 * first). Node ids are unique per graph and index per-pass side tables.
 * Types are filled by typeinfer and kept by later passes.
 *
 * Fusion turns main's body into calls of primitive functions:
 *
 *   %x ─ conv2d ─ add(bias) ─ relu        %0 = fn (%p0, %p1, %p2, Primitive=1) {
 *                                ──fuse──▶    relu(add(conv2d(%p0, %p1), %p2)) };
 *                                          %1 = %0(%x, %w, %b);
 *
 * A primitive function holds at most one complex op (pattern >= PAT_COMM_REDUCE),
 * its master op; the elementwise ops after it are the kernel's epilogue.
 */
#ifndef TEMPER_COMPILER_INT_H
#define TEMPER_COMPILER_INT_H
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include "temper/temper.h"

/* ---- arena (arena.c): memory by lifetime ---- */
typedef struct arena_chunk arena_chunk;
typedef struct arena {
  arena_chunk *head;
  int failed;      /* sticky: an allocation failed; callers check once */
  size_t limit;    /* test hook: fail once this many bytes were handed out (0: none) */
  size_t used;
} arena;
void *arena_alloc(arena *a, size_t n);        /* zeroed, 16-aligned; NULL on OOM */
extern size_t arena_test_limit;               /* test hook: limit for arenas made by ir_graph_new */
char *arena_strdup(arena *a, const char *s);
char *arena_strndup(arena *a, const char *s, size_t n);
void arena_free(arena *a);

/* copies src into dst[n], truncating; always terminated */
static inline void str_copy(char *dst, size_t n, const char *src) {
  size_t k = 0;
  while (k + 1 < n && src[k]) k++;
  for (size_t i = 0; i < k; i++) dst[i] = src[i];
  if (n) dst[k] = 0;
}

/* ---- diagnostics (diag.c) ---- */
typedef struct loc { int line, col; } loc_t;
typedef struct diag {
  const char *path;     /* file name for messages */
  const char *text;     /* source text, to show the line; may be NULL */
  char msg[2048];       /* the first error */
  temper_status status;
} diag;
/* Records "path:line:col: error: <fmt>" plus the source line, returns EINVAL. */
temper_status diag_error(diag *d, loc_t loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Records a message without a source position and returns s. */
temper_status diag_fail(diag *d, temper_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- op patterns, as in TVM ---- */
typedef enum pattern {
  PAT_ELEMWISE = 0, PAT_BROADCAST = 1, PAT_INJECTIVE = 2, PAT_COMM_REDUCE = 3,
  PAT_OUT_EWISE = 4, PAT_TUPLE = 7, PAT_OPAQUE = 8
} pattern;

/* ---- attributes: ORDER ATTR (name, kind) ---- */
typedef enum attr_kind { AK_INT, AK_INT2, AK_PAD, AK_INTS, AK_FLOAT, AK_BOOL, AK_STR } attr_kind;
#define TEMPER_ATTRS(X)                          \
  X(STRIDES, "strides", AK_INT2)                 \
  X(PADDING, "padding", AK_PAD)                  \
  X(DILATION, "dilation", AK_INT2)               \
  X(GROUPS, "groups", AK_INT)                    \
  X(CHANNELS, "channels", AK_INT)                \
  X(KERNEL_SIZE, "kernel_size", AK_INT2)         \
  X(POOL_SIZE, "pool_size", AK_INT2)             \
  X(CEIL_MODE, "ceil_mode", AK_BOOL)             \
  X(COUNT_INCLUDE_PAD, "count_include_pad", AK_BOOL) \
  X(UNITS, "units", AK_INT)                      \
  X(AXIS, "axis", AK_INT)                        \
  X(EPSILON, "epsilon", AK_FLOAT)                \
  X(CENTER, "center", AK_BOOL)                   \
  X(SCALE, "scale", AK_BOOL)                     \
  X(A_MIN, "a_min", AK_FLOAT)                    \
  X(A_MAX, "a_max", AK_FLOAT)                    \
  X(ALPHA, "alpha", AK_FLOAT)                    \
  X(BETA, "beta", AK_FLOAT)                      \
  X(RATE, "rate", AK_FLOAT)                      \
  X(NEWSHAPE, "newshape", AK_INTS)               \
  X(DATA_LAYOUT, "data_layout", AK_STR)          \
  X(KERNEL_LAYOUT, "kernel_layout", AK_STR)      \
  X(OUT_LAYOUT, "out_layout", AK_STR)            \
  X(LAYOUT, "layout", AK_STR)                    \
  X(OUT_DTYPE, "out_dtype", AK_STR)              \
  X(SRC_LAYOUT, "src_layout", AK_STR)            \
  X(DST_LAYOUT, "dst_layout", AK_STR)            \
  X(SCHEDULE, "schedule", AK_STR)                \
  X(PAD_WIDTH, "pad_width", AK_INTS)             \
  X(PAD_VALUE, "pad_value", AK_FLOAT)            \
  X(TILE_SIZE, "tile_size", AK_INT)              \
  X(AXES, "axes", AK_INTS)                       \
  X(BEGIN, "begin", AK_INTS)                     \
  X(END, "end", AK_INTS)                         \
  X(STEP, "step", AK_INTS)

typedef enum attr_id {
#define X(id, name, kind) ATTR_##id,
  TEMPER_ATTRS(X)
#undef X
  ATTR_COUNT
} attr_id;
#define A(id) (1ull << ATTR_##id)

typedef struct attr_val {
  int n;            /* number of ints held (AK_INT2: 2, AK_PAD: 4, AK_INTS: n) */
  int64_t i[8];
  double f;
  char s[200];
} attr_val;
struct sched_config;
typedef struct attrs {
  attr_val v[ATTR_COUNT];
  const struct sched_config *config;   /* conv2d: its schedule config (schedules/space.h, opaque here), set
                                          by the layout pass in the graph's arena; the schedule attribute
                                          is its printed form, for people and the kernel cache key */
} attrs_t;

/* ---- ops: ORDER OP (id, name, pattern, min args, max args, attrs) ---- */
#define CONV_ATTRS (A(STRIDES) | A(PADDING) | A(DILATION) | A(GROUPS) | A(CHANNELS) | \
                    A(KERNEL_SIZE) | A(DATA_LAYOUT) | A(KERNEL_LAYOUT) | A(OUT_LAYOUT) | A(OUT_DTYPE) | A(SCHEDULE))
#define POOL_ATTRS (A(POOL_SIZE) | A(STRIDES) | A(PADDING) | A(DILATION) | A(LAYOUT) | A(CEIL_MODE))
#define TEMPER_OPS(X)                                                                   \
  X(CONV2D, "nn.conv2d", PAT_OUT_EWISE, 2, 2, CONV_ATTRS)                               \
  X(DENSE, "nn.dense", PAT_OUT_EWISE, 2, 2, A(UNITS) | A(OUT_DTYPE))                    \
  X(MAX_POOL2D, "nn.max_pool2d", PAT_OUT_EWISE, 1, 1, POOL_ATTRS)                       \
  X(AVG_POOL2D, "nn.avg_pool2d", PAT_OUT_EWISE, 1, 1, POOL_ATTRS | A(COUNT_INCLUDE_PAD)) \
  X(GLOBAL_AVG_POOL2D, "nn.global_avg_pool2d", PAT_OUT_EWISE, 1, 1, A(LAYOUT))          \
  X(GLOBAL_MAX_POOL2D, "nn.global_max_pool2d", PAT_OUT_EWISE, 1, 1, A(LAYOUT))          \
  X(BIAS_ADD, "nn.bias_add", PAT_BROADCAST, 2, 2, A(AXIS))                              \
  X(RELU, "nn.relu", PAT_ELEMWISE, 1, 1, 0)                                             \
  X(CLIP, "clip", PAT_ELEMWISE, 1, 1, A(A_MIN) | A(A_MAX))                              \
  X(SIGMOID, "sigmoid", PAT_ELEMWISE, 1, 1, 0)                                          \
  X(SQRT, "sqrt", PAT_ELEMWISE, 1, 1, 0)                                                \
  X(HARD_SIGMOID, "nn.hard_sigmoid", PAT_ELEMWISE, 1, 1, A(ALPHA) | A(BETA))            \
  X(HARD_SWISH, "nn.hard_swish", PAT_ELEMWISE, 1, 1, 0)                                 \
  X(LEAKY_RELU, "nn.leaky_relu", PAT_ELEMWISE, 1, 1, A(ALPHA))                          \
  X(TANH, "tanh", PAT_ELEMWISE, 1, 1, 0)                                                \
  X(ERF, "erf", PAT_ELEMWISE, 1, 1, 0)                                                  \
  X(EXP, "exp", PAT_ELEMWISE, 1, 1, 0)                                                  \
  X(ADD, "add", PAT_BROADCAST, 2, 2, 0)                                                 \
  X(SUBTRACT, "subtract", PAT_BROADCAST, 2, 2, 0)                                       \
  X(MULTIPLY, "multiply", PAT_BROADCAST, 2, 2, 0)                                       \
  X(DIVIDE, "divide", PAT_BROADCAST, 2, 2, 0)                                           \
  X(PRELU, "nn.prelu", PAT_BROADCAST, 2, 2, 0)                                          \
  X(BATCH_NORM, "nn.batch_norm", PAT_OPAQUE, 5, 5, A(AXIS) | A(EPSILON) | A(CENTER) | A(SCALE)) \
  X(LAYER_NORM, "nn.layer_norm", PAT_OUT_EWISE, 1, 3, A(AXIS) | A(EPSILON) | A(CENTER) | A(SCALE) | A(LAYOUT)) \
  X(DROPOUT, "nn.dropout", PAT_OPAQUE, 1, 1, A(RATE))                                   \
  X(BATCH_FLATTEN, "nn.batch_flatten", PAT_INJECTIVE, 1, 1, 0)                          \
  X(RESHAPE, "reshape", PAT_INJECTIVE, 1, 1, A(NEWSHAPE))                               \
  X(CONCATENATE, "concatenate", PAT_INJECTIVE, 1, 64, A(AXIS))                          \
  X(SOFTMAX, "nn.softmax", PAT_OPAQUE, 1, 1, A(AXIS))                                   \
  X(LAYOUT_TRANSFORM, "layout_transform", PAT_INJECTIVE, 1, 1, A(SRC_LAYOUT) | A(DST_LAYOUT)) \
  X(PAD, "nn.pad", PAT_INJECTIVE, 1, 1, A(PAD_WIDTH) | A(PAD_VALUE))                    \
  X(TRANSPOSE, "transpose", PAT_INJECTIVE, 1, 1, A(AXES))                               \
  X(STRIDED_SLICE, "strided_slice", PAT_INJECTIVE, 1, 1, A(BEGIN) | A(END) | A(STEP))   \
  X(CONV2D_WINOGRAD, "nn.contrib_conv2d_winograd_without_weight_transform", PAT_OUT_EWISE, 2, 2, CONV_ATTRS | A(TILE_SIZE)) \
  X(WINOGRAD_WEIGHT, "nn.contrib_conv2d_winograd_weight_transform", PAT_OPAQUE, 1, 1, A(TILE_SIZE) | A(STRIDES))

typedef enum op_id {
  OP_FUNCALL = -1,
#define X(id, name, pat, lo, hi, at) OP_##id,
  TEMPER_OPS(X)
#undef X
  OP_COUNT
} op_id;

typedef struct op_info {
  const char *name;
  pattern pat;
  int min_args, max_args;
  uint64_t attrs;          /* allowed attributes */
} op_info;
extern const op_info ops_table[OP_COUNT];
extern const char *const attr_names[ATTR_COUNT];
extern const attr_kind attr_kinds[ATTR_COUNT];
int ops_lookup(const char *name, size_t len);   /* op id or -1 */
int attrs_lookup(const char *name, size_t len); /* attr id or -1 */
void ops_default_attrs(int op, attrs_t *out);
int ops_is_complex(int op);                     /* pattern >= PAT_COMM_REDUCE */

/* ---- types ---- */
typedef struct shape { int ndim; int64_t d[TEMPER_MAX_DIMS]; } shape_t;
typedef enum type_kind { TY_NONE = 0, TY_TENSOR, TY_TUPLE } type_kind;
typedef struct type {
  type_kind kind;
  shape_t shape;           /* TY_TENSOR */
  int n_fields;            /* TY_TUPLE */
  shape_t *fields;
} type_t;
/* elements of a tensor: saturates at INT64_MAX instead of wrapping (a
 * negative dimension counts as huge), so a check against TEMPER_MAX_ELEMS
 * holds whatever the dimensions */
int64_t shape_numel(const shape_t *s);
#define TEMPER_MAX_ELEMS (1ll << 33)   /* the largest tensor a model may declare or compute: 32 GiB of floats */
int shape_eq(const shape_t *a, const shape_t *b);

/* ---- nodes ---- */
typedef enum node_kind { N_VAR, N_CONST, N_CALL, N_TUPLE, N_GETITEM, N_FUNC } node_kind;
typedef struct node node;
struct node {
  node_kind kind;
  int id;                  /* unique in the graph: index of side tables */
  loc_t loc;               /* source position, {0,0} if made by a pass */
  type_t ty;               /* N_VAR: declared; others: by typeinfer */
  const char *name;        /* N_VAR: its name (no %) */
  int op;                  /* N_CALL: op_id, or OP_FUNCALL */
  node *callee;            /* N_CALL with OP_FUNCALL: an N_FUNC */
  int n_args;              /* N_CALL, N_TUPLE */
  node **args;
  attrs_t *attrs;          /* N_CALL of an op */
  int index;               /* N_GETITEM: field; N_CONST: meta index when printed */
  float *data;             /* N_CONST: shape_numel(ty.shape) floats */
  int n_params;            /* N_FUNC */
  node **params;
  node *body;
  int primitive;           /* N_FUNC: Primitive=1 */
  type_t ret_ty_decl;      /* N_FUNC: the declared '-> type', TY_NONE if absent */
};

struct temper_graph {
  arena a;
  int n_nodes;             /* next node id */
  node *main;              /* the N_FUNC @main */
  char *path;              /* for messages */
  char *text;              /* source text (owned), for messages */
  int all_inputs;          /* every parameter of main is a model input (ONNX: weights are constants) */
};

node *ir_new(temper_graph *g, node_kind k, loc_t loc);
node *ir_call(temper_graph *g, int op, int n_args, node **args, const attrs_t *attrs);
node *ir_const(temper_graph *g, const shape_t *s, const float *data); /* copies data */
node *ir_var(temper_graph *g, const char *name, const shape_t *s);
temper_graph *ir_graph_new(const char *path);
/* Nodes reachable from root (not entering nested functions' bodies), in
 * topological order; *n set. Allocated in `scratch`. */
node **ir_topo(arena *scratch, node *root, int *n);
/* How many of the listed nodes use each node: counts[id], sized g->n_nodes. */
int *ir_use_counts(arena *scratch, temper_graph *g, node **order, int n);
const char *ir_op_name(const node *n);   /* "nn.conv2d", or "fn" for a call */

/* ---- passes (one file each) ---- */
temper_status parse_graph(const char *text, const char *path, temper_graph **out, diag *d);
char *print_graph(const temper_graph *g);      /* malloc'd */
char *print_func(const node *fn, int is_main); /* malloc'd */
void print_type(char *buf, size_t n, const type_t *t);
temper_status typeinfer(temper_graph *g, diag *d);
/* Types one node (and any new nodes feeding it) whose inputs are typed. */
temper_status typeinfer_node(temper_graph *g, node *n, diag *d);
temper_status simplify(temper_graph *g, diag *d);
/* sink.c: transpose(f(transpose(x, p), consts), p⁻¹) → f(x, consts'), f elementwise */
temper_status sink_transposes(temper_graph *g, diag *d);
temper_status fold_constants(temper_graph *g, diag *d);
temper_status fuse(temper_graph *g, diag *d);
/* fuse_with: fuse, then a second step: a group whose output feeds only the
 * data input of the complex op of the next group joins that group where
 * join(first group's complex op, second's, ctx) says so — a producer fused
 * into its consumer (the depthwise conv2d into the 1×1 after it). The
 * function then holds two complex ops; its template runs both. */
typedef int (*fuse_join_fn)(const node *producer, const node *consumer, void *ctx);
temper_status fuse_with(temper_graph *g, fuse_join_fn join, void *ctx, diag *d);

/* Rewrites main's body in topological order: f gets each call/tuple/getitem
 * node and its already-rewritten arguments and returns the replacement
 * (ir_with_args(g, n, args) to keep it), NULL on error. Retypes the graph. */
typedef node *(*rewrite_fn)(temper_graph *g, node *n, node **args, void *ctx, diag *d);
temper_status ir_rewrite(temper_graph *g, rewrite_fn f, void *ctx, diag *d);
node *ir_with_args(temper_graph *g, node *n, node **args); /* n itself if args unchanged */

/* Bind main's parameters to constants: params[i] (may be NULL to keep it a
 * parameter). Removes bound parameters from main's signature. */
temper_status bind_params(temper_graph *g, float *const *values, diag *d);

/* ---- reference interpreter (reference.c): plain C, the oracle ---- */
/* Evaluates one op on its inputs. ins[i] has shape of args[i]; out sized by
 * the node's type (for tuple results out[0..n_fields)). */
temper_status ref_eval_op(const node *call, const float *const *ins, float **outs, diag *d);
/* Moves a tensor between layouts of the same primal axes (e.g. "NCHW" and
 * "NCHW16c" with axes "NCHW" and their sizes); padding in dst is zero. */
void ref_relayout(const float *src, const char *sl, float *dst, const char *dl, const char *axes, const int64_t *dims);
/* Evaluates a function on input buffers; outputs malloc'd, one per result field. */
temper_status ref_eval_func(const node *fn, const float *const *inputs, float ***outputs,
                            int *n_outputs, diag *d);

/* ---- Winograd F(m×m, 3×3) (winograd.c) ----
 * nn.contrib_conv2d_winograd_weight_transform(w[K, C, 3, 3], tile_size=m, strides=[s, s])
 *   → U[alpha, alpha, C, K] ("HWIO"), a compile-time constant; alpha is
 *   m + 2 for stride 1 (m = 2, 4, 6) and 2m + 1 for stride 2 (m = 2, 3, 4);
 * nn.contrib_conv2d_winograd_without_weight_transform(x, U, tile_size=m, strides=[s, s], ...)
 *   is the 3×3, dilation-1, groups-1 conv2d of stride s (1 or 2, the same
 *   both ways) of x with the weights whose transform U is, in U's
 *   kernel_layout ("HWIO" or "OHWI<ob>o"). */
typedef struct wino_mats { int m, s, a; double AT[6][9], G[9][3], BT[9][9]; } wino_mats;
int winograd_alpha(int m, int s);                 /* alpha of F(m×m, 3×3) at stride s; -1 if none */
int winograd_mats(int m, int s, wino_mats *w);    /* -1 where winograd_alpha is */
double winograd_tolerance(int m, int s);          /* accepted relative error of a tile size */
void winograd_weight(const float *w, int64_t K, int64_t C, int m, int s, float *u);   /* OIHW → HWIO U */
/* plain NCHW x and HWIO u → NCHW y, in double; -1 out of memory */
int winograd_conv_ref(const float *x, const float *u, float *y, int64_t N, int64_t C, int64_t H, int64_t W, int64_t K,
                      const int64_t *pad, int m, int s);
static inline int op_is_conv(int op) { return op == OP_CONV2D || op == OP_CONV2D_WINOGRAD; }

/* ---- data helpers (data.c, npy.c) ---- */
typedef struct pcg32 { uint64_t state, inc; } pcg32;
void pcg32_seed(pcg32 *r, uint64_t seed, uint64_t seq);
uint32_t pcg32_next(pcg32 *r);
float pcg32_float(pcg32 *r);   /* uniform in [0, 1) */
/* Seeded data for a parameter: weights scaled by fan-in; 1-d vectors in
 * [0.5, 1.5) if positive (scales, variances), else small around 0. */
void data_random_param(float *dst, const shape_t *s, uint64_t seed, int is_input, int positive);
/* Whether a 1-d parameter's name says it must be positive (gamma, var, scale). */
int data_name_positive(const char *name);
/* FNV-1a over n bytes, continuing from h (DATA_HASH_INIT to start): the
 * one hash of names, keys and kernel texts */
#define DATA_HASH_INIT 1469598103934665603ull
uint64_t data_hash(const void *p, size_t n, uint64_t h);
uint64_t data_hash_name(const char *s);   /* data_hash of a string from DATA_HASH_INIT */
double data_now(void);                    /* seconds on the monotonic clock */
/* a growing string: strbuf_printf appends; an allocation failure sticks
 * (failed) and later appends do nothing; free(s) when done */
typedef struct strbuf { char *s; size_t len, cap; int failed; } strbuf;
void strbuf_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
double data_checksum(const float *x, int64_t n);
/* How far got is from want: max |got - want| in *abs_err (may be NULL) and,
 * returned, that over max |want| (normwise relative error; the absolute
 * error where want is all zero). Equal infinities and NaN against NaN count
 * as equal; any other NaN as an infinite error. */
double data_rel_error(const float *got, const float *want, int64_t n, double *abs_err);
/* a whole text file, NUL-terminated (malloc'd); NULL with a message in err
 * (it cannot be read, or it holds NUL bytes: not text) */
char *data_read_text(const char *path, char *err, size_t n);
temper_status npy_read(const char *path, shape_t *shape, float **data, char *err, size_t n);
temper_status npy_write(const char *path, const shape_t *shape, const float *data, char *err, size_t n);

/* ---- layouts (layout_algebra.c): "NCHW", "NCHW16c", "OIHW16i32o" ----
 * Upper-case letters are the primal axes; a number and a lower-case letter
 * split that axis: NCHW16c holds C as (C/16, 16), the 16 innermost. A split
 * axis whose size the factor does not divide is zero-padded. */
typedef struct layout_t {
  int n;                   /* dimensions */
  char axis[8];            /* 'N', 'C', ... or 'c' for a sub-axis */
  int factor[8];           /* sub-axis size, 0 for a primal axis */
} layout_t;
int layout_block(const char *layout, char axis); /* block factor of lower-case axis, 0 none */
/* 0, or -1 if malformed: an axis named twice, a sub-axis without its
 * primal axis or factor, more than TEMPER_MAX_DIMS axes */
int layout_parse(const char *s, layout_t *l);
/* physical shape of a tensor whose primal axes `axes` have sizes `dims` */
int layout_shape(const layout_t *l, const char *axes, const int64_t *dims, shape_t *out);
#endif
