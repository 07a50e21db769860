/* schedules.h: schedule templates. Each turns one primitive function into a
 * loop-IR kernel; the master op (conv2d, dense, pool, softmax) picks the
 * template and the ops after it become the epilogue, applied to the master's
 * value in registers before the store.
 *
 * Buffers of every kernel: the function's parameters in order, then the
 * output. */
#ifndef TEMPER_SCHEDULES_H
#define TEMPER_SCHEDULES_H
#include "compiler_int.h"
#include "loopir.h"
#include "codegen.h"

/* A primitive function being lowered. */
struct sched_config;
typedef struct prim {
  const node *fn;       /* the N_FUNC, Primitive=1 */
  const node *master;   /* its one complex or opaque op, or NULL; of a
                         * producer-consumer pair, the consumer */
  const node *pre;      /* the producer of such a pair (a depthwise conv2d
                         * whose value, through its epilogue, is the
                         * master's data input), or NULL */
  const struct sched_config *cfg;   /* a conv2d master's config, or NULL */
  int64_t l1d, l2;      /* the target core's caches (cg_target's; 0: this machine's) */
  lfunc *f;
  int out_buf;          /* buffer id of the output */
} prim;

/* Finds the master op; refuses two complex ops naming both, but for a
 * conv2d feeding the data input of a conv2d (fuse_with's pair). */
temper_status sched_prepare(const node *fn, prim *p, diag *d);
/* The config of conv2d m: the one the layout pass attached, else its
 * schedule text (a fused program written by hand) parsed into *buf; *cfg
 * is NULL where m is not a conv2d or has neither. An unparsable schedule
 * is an error naming it. */
temper_status sched_config_of(const node *m, int vec, struct sched_config *buf, const struct sched_config **cfg, diag *d);
/* Lowers a primitive function for target t (its vector width, and its
 * caches where a template fits its split over threads to them): a conv2d
 * master by the template of its config cfg (conv_templates below), any
 * other by its op's schedule. cfg is NULL for a function without a conv2d,
 * or for a conv2d the generic schedule runs. */
temper_status sched_lower(const node *fn, const cg_target *t, const struct sched_config *cfg, const char *name, lfunc **out,
                          diag *d);
/* The same, but SCHED_GENERIC lowers a function without a master op by the
 * generic per-element schedule even where a specialised one applies (the
 * layout copy), so tests can hold the two against each other. */
typedef enum sched_pick { SCHED_BEST, SCHED_GENERIC } sched_pick;
temper_status sched_lower_as(const node *fn, const cg_target *t, const struct sched_config *cfg, const char *name,
                             sched_pick pick, lfunc **out, diag *d);

/* ---- epilogue.c: an op of the function evaluated at one output point ---- */
typedef struct epi {
  prim *p;
  lexpr *master_val;    /* the master op's value at the point */
  int lane_axis;        /* axis the lanes run along (when lanes > 1) */
  int lanes;
  lexpr *limit;         /* lanes >= limit are outside the tensor (or NULL) */
  diag *d;
} epi;
/* x's value at coord (rank of x's shape). */
lexpr *epi_eval(epi *e, const node *x, lexpr *const *coord);
/* buffer id of function parameter v */
int epi_param_buf(const prim *p, const node *v);
/* Row-major strides of a shape. */
void sched_strides(const shape_t *s, int64_t *st);
/* The lanes of the vectors a channel block of b is read in, in a loop that
 * carries them (a reduction): the block itself where it is a power of two
 * or fits one vector (LLVM widens <15 x float> to one register), else the
 * widest power of two up to the vector that divides it, at least 4 —
 * LLVM's legalisation of a <48 x float> or <24 x float> carried round a
 * loop took it apart lane by lane (a layer norm at 380 cycles a pixel) */
int sched_block_lanes(int64_t b, int vec);

/* ---- templates ---- */
temper_status sched_conv2d_nchwc(prim *p, int vec, diag *d);
temper_status sched_conv2d_1x1(prim *p, int vec, diag *d);
temper_status sched_conv2d_depthwise(prim *p, int vec, diag *d);
temper_status sched_conv2d_winograd(prim *p, int vec, diag *d);
/* a depthwise conv2d and the 1×1 conv2d it feeds, one output row at a time */
temper_status sched_conv2d_dwpw(prim *p, int vec, diag *d);
/* a 1×1 conv2d (p->pre) and the depthwise conv2d it feeds (p->master), one kernel (conv2d_pwdw.c) */
temper_status sched_conv2d_pwdw(prim *p, int vec, diag *d);
/* the conv2d templates by id (ORDER TMPL of space.h) */
typedef temper_status (*conv_template_fn)(prim *p, int vec, diag *d);
extern const conv_template_fn conv_templates[];
/* a function that is one layout_transform between NCHW / NCHW<b>c of a parameter */
int sched_is_layout_copy(const node *fn);
temper_status sched_layout_copy(prim *p, int vec, diag *d);
temper_status sched_dense(prim *p, int vec, diag *d);
temper_status sched_softmax(prim *p, diag *d);
temper_status sched_layer_norm(prim *p, diag *d);   /* over one axis, or the channels of NCHW<b>c */
temper_status sched_generic(prim *p, diag *d);   /* elementwise, injective, pools, any conv2d */
#endif
