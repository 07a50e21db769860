/* conv2d_common.h: what the conv2d templates share: the blocked shapes of a
 * conv2d in NCHW<ib>c / OIHW<ib>i<ob>o / NCHW<ob>c, its config, and the
 * epilogue store of one accumulator vector. */
#ifndef TEMPER_CONV2D_COMMON_H
#define TEMPER_CONV2D_COMMON_H
#include "schedules.h"
#include "space.h"

/* vectors per output block a template may hold in registers at most: blocks
 * of up to 64 channels (space.c) in vectors of 4 floats and more. Arrays of
 * a block's vectors are sized by it; conv_ctx_init refuses a larger nv.
 * (They were sized 4, AVX-512's 64 / 16: on AVX2 a block of 48 or 64 wrote
 * past them and a depthwise kernel took the wrong weight vectors.) */
enum { CONV_MAX_NV = 16 };

typedef struct conv_ctx {
  prim *p;
  lfunc *f;
  conv_workload w;
  task_space space;
  sched_config cfg;
  int64_t OH, OW, Cg, Kg;
  int64_t ib, ob;           /* input / output channel blocks of the computation */
  int64_t sb, SB;           /* the block the input is stored in (NCHW<sb>c), and blocks of
                             * all channels: sb = ib but where the conv reads its producer's
                             * blocks as they are (config_reads_block) */
  int x_nchw;               /* the input is plain NCHW (ib is then only a loop block) */
  int y_nchw;               /* the function ends in a transform to NCHW: store there */
  int64_t CB, KB;           /* blocks of all input / output channels */
  int lanes, nv;            /* floats per vector, vectors per output block */
  int tail;                 /* lanes of the block's last vector where lanes does not divide ob (24 = 16 + 8), else 0 */
  int xb, wb;               /* buffer ids */
  int64_t pf_calls;         /* how often the template's prefetch_next runs in the kernel */
  int to_row;               /* conv_store writes the value of row_node into local buffer
                             * row_buf, one output row [KB][OW][ob], instead of the output
                             * (a producer's row in conv2d_dwpw.c) */
  int row_buf;
  const node *row_node;
  int64_t row_rows;         /* to_row: the buffer holds row_rows rows of one block [row_rows][OW][ob]
                             * and the store goes to row slot variable row_slot (conv2d_pwdw.c's
                             * ring); 0: one row of all blocks [KB][OW][ob] */
  int row_slot;
  int64_t ring_rows;        /* the input is read from buffer xb as a ring of ring_rows rows of the
                             * block being computed, [ring_rows][W][ib], row ih in slot
                             * ih % ring_rows (conv2d_pwdw.c's depthwise); 0: the input */
  diag *d;
} conv_ctx;

/* Reads the blocked conv2d and its schedule attribute. */
temper_status conv_ctx_init(conv_ctx *c, prim *p, int vec, diag *d);
static inline lexpr *CI(conv_ctx *c, int64_t v) { return lx_int(c->f, v); }
static inline lexpr *CV(conv_ctx *c, int v) { return lx_var(c->f, v); }
/* element index of input (n, channel block icb, channel ici within it, ih, iw) */
lexpr *conv_x_index(conv_ctx *c, lexpr *n, lexpr *icb, lexpr *ici, lexpr *ih, lexpr *iw);
/* how many lanes of an output block's vector j are channels: NULL for all,
 * the tail count for a partly filled last vector (loads read 0 past it,
 * stores leave memory past it alone) */
lexpr *conv_lane_limit(conv_ctx *c, int j);
/* weight vector j at element index wi of the block's first lane (masked for the tail) */
lexpr *conv_weight_vec(conv_ctx *c, lexpr *wi, int j);
/* epilogue of accumulator vector j (lanes kb*ob + j*lanes ...) at (n, oh, ow), stored */
void conv_store(conv_ctx *c, lstmt *blk, int acc, lexpr *n, lexpr *kb, lexpr *oh, lexpr *ow, int j);
/* 0 <= v < hi */
lexpr *conv_in_range(conv_ctx *c, lexpr *v, int64_t hi);
/* For a kernel split over output channels (each thread reads all of image
 * n's input, much of it written by the other cores as the layer before):
 * at the first task of a thread's range, prefetch that input, so the misses
 * overlap instead of stalling one by one inside the reduction. Appends to
 * the parallel loop's body `body`; nothing above CONV_PREFETCH_BYTES. */
enum { CONV_PREFETCH_BYTES = 512 << 10 };
void conv_prefetch_input(conv_ctx *c, lstmt *loop, lstmt *body, lexpr *n);
/* For a kernel split over rows: when cond holds (a task starting a row tile
 * on this thread), prefetch the input positions [pos, pos + span) of the
 * (h, w) plane of every input channel block of image n — the window the
 * tile's reduction walks. Blocked input only. */
void conv_prefetch_span(conv_ctx *c, lstmt *body, lexpr *cond, lexpr *n, lexpr *pos, int64_t span);
lexpr *conv_clamp(conv_ctx *c, lexpr *v, int64_t hi);
/* n accumulators of a register tile, declared zero in blk */
void conv_acc_zero(conv_ctx *c, lstmt *blk, int *acc, int n);
/* One input channel block of a 1×1 tile of mn positions, in loop body lb:
 * for ic < ib (unrolled when unroll_ic)
 *   w[j] = W[wbase + ic·ob + j·lanes]
 *   acc[t·nv + j] += bcast(x[xbase + off(t) + ic·ic_stride]) · w[j]
 * reading buffer xbuf (the input, or conv2d_dwpw.c's row). wbase and xbase
 * are variables; off(t) is variable off_var[t] where off_var is given, else
 * t·off_step. */
void conv_1x1_block(conv_ctx *c, lstmt *lb, int xbuf, int vxb, int vwb, int mn, const int *off_var, int64_t off_step,
                    int64_t ic_stride, int unroll_ic, const int *acc);
/* A joined pair (p->pre feeding p->master, conv2d_dwpw.c and
 * conv2d_pwdw.c): the producer's view of the function — its epilogue ends
 * at the consumer's data input — with its parsed schedule, and both
 * contexts, which the templates use in place (they point into the
 * struct: it stays where it was initialised). */
typedef struct conv_pair {
  prim pre_view;
  sched_config parsed;
  conv_ctx pre, cons;
} conv_pair;
temper_status conv_pair_init(conv_pair *cp, prim *p, int vec, diag *d);
/* conv2d_depthwise.c: output row (n, cb, oh) of a depthwise conv2d by its
 * config, stored by conv_store */
void dw_emit_row(conv_ctx *c, lstmt *blk, lexpr *n, lexpr *cb, lexpr *oh);
#endif
