/* loopir.h: the small loop IR between schedules and LLVM.
 *
 * A kernel is a statement tree over named float32 buffers:
 *   for (serial | parallel | unrolled) loops, int lets, float "slots"
 *   (register accumulators, possibly vectors), stores, if/else;
 * expressions are int64 index arithmetic and float math on scalars or
 * vectors of `lanes` floats. A load or store of lanes > 1 walks memory with
 * a lane stride (1: contiguous, 0: broadcast, other: gather/scatter) and an
 * optional lane limit (lanes >= limit are masked off).
 *
 * Only a top-level parallel loop runs on the thread pool (codegen outlines
 * it); nested ones run serially. Everything lives in one arena per kernel. */
#ifndef TEMPER_LOOPIR_H
#define TEMPER_LOOPIR_H
#include "compiler_int.h"

typedef enum lx_kind {
  LX_INT, LX_FLT, LX_VAR, LX_SLOT, LX_BIN, LX_UN, LX_SELECT, LX_LOAD, LX_BCAST, LX_FMA, LX_I2F, LX_SPLAT_GROUPS
} lx_kind;
typedef enum lx_op {
  /* int */ LO_ADD, LO_SUB, LO_MUL, LO_DIV, LO_MOD, LO_MIN, LO_MAX, LO_LT, LO_LE, LO_EQ, LO_AND, LO_OR,
  /* float */ LO_FADD, LO_FSUB, LO_FMUL, LO_FDIV, LO_FMAX, LO_FMIN, LO_FLT, LO_FGT,
  /* float unary */ LO_EXP, LO_SQRT, LO_NEG, LO_HSUM /* sum of lanes → scalar */
} lx_op;

typedef struct lexpr lexpr;
struct lexpr {
  lx_kind k;
  int lanes;          /* 1: scalar */
  int is_float;       /* else int64 (or i1 for comparisons) */
  lx_op op;
  int64_t ival;
  double fval;
  int id;             /* LX_VAR: var id; LX_SLOT: slot id; LX_LOAD: buffer */
  lexpr *a, *b, *c;   /* operands; LX_LOAD: a = element index of lane 0 */
  int64_t stride;     /* LX_LOAD: lane stride */
  lexpr *limit;       /* LX_LOAD: lanes >= limit read 0 (NULL: all lanes) */
  /* lf_simplify's memo: the node's result and integer range in scope `gen` */
  lexpr *simp;
  int simp_gen, range_gen, range_known;
  int64_t range_lo, range_hi;
};

typedef enum ls_kind { LS_FOR, LS_SEQ, LS_LET, LS_DECL, LS_SET, LS_STORE, LS_IF, LS_PREFETCH, LS_PREFETCH_NEXT } ls_kind;
typedef enum loop_kind { LOOP_SERIAL, LOOP_PARALLEL, LOOP_UNROLL } loop_kind;

typedef struct lstmt lstmt;
struct lstmt {
  ls_kind k;
  int id;             /* LS_FOR / LS_LET: var; LS_DECL / LS_SET: slot; LS_STORE: buffer */
  lexpr *lo, *ext;    /* LS_FOR: [lo, lo + ext) */
  loop_kind loop;
  lstmt **body;       /* LS_SEQ, LS_FOR (a SEQ), LS_IF (then, else) */
  int n_body, cap;
  lexpr *val;         /* LS_LET, LS_DECL, LS_SET, LS_STORE: value */
  lexpr *idx;         /* LS_STORE: element index of lane 0 */
  int64_t stride;     /* LS_STORE: lane stride */
  lexpr *limit;       /* LS_STORE: store only lanes < limit */
  lexpr *cond;        /* LS_IF */
  int first_var;      /* LS_FOR: a var holding the first iteration this thread runs (-1: none) */
};

/* A local buffer is scratch memory of the kernel, not an argument: each
 * function of the kernel (the kernel itself and each outlined parallel body)
 * gets its own copy on its stack, 64-byte aligned, uninitialised. Inside a
 * parallel loop it is private to the thread running the chunk. Local
 * buffers come after the arguments (inputs, then the output). */
typedef struct lbuf { const char *name; int64_t size; int local; } lbuf;
enum { LF_MAX_LOCAL_BYTES = 2 << 20 };   /* per function; pool threads get 16 MB stacks */

enum { LF_MAX_VARS = 2048, LF_MAX_SLOTS = 16384 };

typedef struct lfunc {
  arena a;
  const char *name;
  int n_bufs;         /* inputs, the output, then local buffers */
  lbuf bufs[72];
  int n_vars;
  const char *var_names[LF_MAX_VARS];
  int n_slots;
  int slot_lanes[LF_MAX_SLOTS];
  lstmt *body;        /* a SEQ */
  int vec;            /* target vector width in floats */
  lexpr oom_e;        /* returned by builders once the arena failed */
  lstmt oom_s;
} lfunc;

lfunc *lf_new(const char *name, int vec);
void lf_free(lfunc *f);
int lf_buf(lfunc *f, const char *name, int64_t size);
int lf_local(lfunc *f, const char *name, int64_t size);   /* after every lf_buf */
int lf_n_args(const lfunc *f);                             /* buffers that are arguments */
int lf_var(lfunc *f, const char *name);
int lf_slot(lfunc *f, int lanes);

lexpr *lx_int(lfunc *f, int64_t v);
lexpr *lx_flt(lfunc *f, double v, int lanes);
lexpr *lx_var(lfunc *f, int var);
lexpr *lx_slot(lfunc *f, int slot);
lexpr *lx_bin(lfunc *f, lx_op op, lexpr *a, lexpr *b);   /* folds int constants */
lexpr *lx_un(lfunc *f, lx_op op, lexpr *a);
lexpr *lx_select(lfunc *f, lexpr *c, lexpr *a, lexpr *b);
lexpr *lx_load(lfunc *f, int buf, lexpr *idx, int lanes, int64_t stride, lexpr *limit);
lexpr *lx_bcast(lfunc *f, lexpr *a, int lanes);          /* a itself if lanes == a->lanes */
lexpr *lx_fma(lfunc *f, lexpr *a, lexpr *b, lexpr *c);   /* a*b + c */
/* vector a's lanes in groups of `group` (dividing its lanes), each lane
 * taking lane k of its group: lane l = a[(l / group) * group + k] (a group
 * conv2d's block of several groups, conv2d_nchwc.c). group in stride, k in
 * ival. */
lexpr *lx_splat_groups(lfunc *f, lexpr *a, int group, int k);
#define lx_add(f, a, b) lx_bin(f, LO_ADD, a, b)
#define lx_mul(f, a, b) lx_bin(f, LO_MUL, a, b)

lstmt *ls_seq(lfunc *f);
lstmt *ls_for(lfunc *f, int var, lexpr *lo, lexpr *ext, loop_kind k);  /* body: ls_body() */
lstmt *ls_let(lfunc *f, int var, lexpr *v);
lstmt *ls_decl(lfunc *f, int slot, lexpr *init);
lstmt *ls_set(lfunc *f, int slot, lexpr *v);
lstmt *ls_store(lfunc *f, int buf, lexpr *idx, lexpr *v, int64_t stride, lexpr *limit);
lstmt *ls_if(lfunc *f, lexpr *cond);            /* then: ->body[0], else: ->body[1] */
/* a hint to bring the line of buf[idx] into the caches; no effect on results */
lstmt *ls_prefetch(lfunc *f, int buf, lexpr *idx);
/* a step of the stream the executor asks for (the next kernel's weights,
 * temper_pool_prefetch): `calls` is how often the statement runs in the
 * whole kernel, over all threads, so that each run takes its share; no
 * effect on results */
lstmt *ls_prefetch_next(lfunc *f, int64_t calls);
/* a var, set before the loop's first iteration to the first iteration this
 * thread runs (of a parallel loop: the start of its range; else lo) */
int ls_first_var(lfunc *f, lstmt *loop, const char *name);
lstmt *ls_add(lfunc *f, lstmt *seq, lstmt *s);  /* appends to a SEQ / FOR; returns s */
lstmt *ls_then(lstmt *s);
lstmt *ls_else(lstmt *s);

/* Integer index arithmetic simplified with the ranges of the loops and lets
 * around it (lsimplify.c): a composed reshape's / and % by constants, a
 * concatenate's clamps and selects decided where the ranges tell. */
void lf_simplify(lfunc *f);

/* Printed form for `temper lower --loops`; malloc'd. */
char *lf_print(const lfunc *f);
#endif
