/* space.h: knob spaces, configs and workloads of the conv2d task.
 *
 * A knob space is data: named knobs, each with its candidate values. A
 * task's space is the union of the spaces of its applicable templates (the
 * algorithm is itself a knob); a config is a point of it, with a stable
 * integer index (templates in order, then knobs mixed-radix, the first knob
 * least significant; points taking a candidate added to a knob after records
 * existed come after all the others, so old indices stay) and a canonical
 * JSON text:
 *   {"template":"conv2d_nchwc","ic_bn":16,"oc_bn":32,"ow_bn":14,...}
 * Points whose register tile needs more accumulators than the target has
 * registers for (task_space.regs: REG_BUDGET of AVX-512's 32, 12 of AVX2's
 * 16) are not valid: they have an index but no template builds them.
 *
 * A workload is the identity of a task: op, shapes, strides, padding,
 * dilation, groups, dtype and layout, in one canonical key; the fused
 * epilogue is not part of it. */
#ifndef TEMPER_SPACE_H
#define TEMPER_SPACE_H
#include "compiler_int.h"

enum { SPACE_MAX_KNOBS = 10, SPACE_MAX_CANDS = 24, REG_BUDGET = 28 };

/* ORDER KNOB: every knob of every template, named once */
#define CONV_KNOBS(X)  \
  X(IC_BN, "ic_bn")     \
  X(OC_BN, "oc_bn")     \
  X(OW_BN, "ow_bn")     \
  X(OH_BN, "oh_bn")     \
  X(UNROLL_KW, "unroll_kw") \
  X(ORDER, "order")     \
  X(PAR, "par")         \
  X(M_BN, "m_bn")       \
  X(UNROLL_IC, "unroll_ic") \
  X(LOOP, "loop")       \
  X(TILE, "tile")       \
  X(T_BN, "t_bn")       \
  X(STAGE, "stage")     \
  X(UNROLL_C, "unroll_c") \
  X(OC_SPLIT, "oc_split") \
  X(C_BN, "c_bn")       \
  X(T_BLK, "t_blocks")
typedef enum knob_id {
#define X(id, name) K_##id,
  CONV_KNOBS(X)
#undef X
  K_COUNT
} knob_id;
extern const char *const knob_names[K_COUNT];

typedef enum knob_kind { KNOB_SPLIT, KNOB_CHOICE, KNOB_BOOL } knob_kind;
typedef struct knob {
  knob_id id;
  const char *name;         /* knob_names[id] */
  knob_kind kind;           /* SPLIT: a factor of an axis; CHOICE: one of a list; BOOL: 0/1 */
  int n;                    /* candidates */
  int64_t vals[SPACE_MAX_CANDS];
  int appended;             /* added after records existed, last in its template, its first value the old
                               behaviour: a config text without it means that value, and no index changes */
  int added;                /* candidates added to the knob after records existed: the last `added` of vals.
                               Points taking one are indexed after every template's older points (tmpl_space),
                               so the indices of the points that existed do not change; one such knob per
                               template */
} knob;

/* ORDER TMPL: id, name, version (bump when old measurements become meaningless) */
#define CONV_TEMPLATES(X)             \
  X(NCHWC, "conv2d_nchwc", 2)         \
  X(1X1, "conv2d_1x1", 1)             \
  X(DEPTHWISE, "conv2d_depthwise", 2)  \
  X(WINOGRAD, "conv2d_winograd", 1)
typedef enum conv_tmpl {
#define X(id, name, ver) TMPL_##id,
  CONV_TEMPLATES(X)
#undef X
  TMPL_COUNT
} conv_tmpl;
extern const char *const tmpl_names[TMPL_COUNT];
extern const int tmpl_versions[TMPL_COUNT];

typedef struct conv_workload {
  int64_t N, C, H, W, K, R, S, sh, sw, pt, pl, pb, pr, dh, dw, G;
} conv_workload;

typedef struct tmpl_space {
  conv_tmpl tmpl;
  int n_knobs;
  knob knobs[SPACE_MAX_KNOBS];
  int64_t size;             /* its points: the product of the candidate counts */
  int64_t base;             /* of them those without an added candidate (knob.added): indices offset ..
                               offset + base - 1; the others ext_offset .. ext_offset + size - base - 1,
                               after every template's base points */
  int64_t offset, ext_offset;
} tmpl_space;

typedef struct task_space {
  conv_workload w;
  int vec;                  /* target vector width in floats */
  int regs;                 /* accumulators a register tile may use: REG_BUDGET with 32 vector registers, 12 with 16 */
  int64_t l1d, l2;          /* the cache sizes the default config is fitted to (space_caches) */
  int n_tmpl;
  tmpl_space t[TMPL_COUNT];
  int64_t size;
} task_space;

typedef struct sched_config {
  conv_tmpl tmpl;
  int64_t v[SPACE_MAX_KNOBS];   /* knob values, in the template's knob order */
} sched_config;

/* The workload of a conv2d node (any layout); -1 if it is not one. */
int workload_of(const node *conv, conv_workload *w);
void workload_key(const conv_workload *w, char *buf, size_t n);
/* 0 if w is a conv2d temper can compile (every size in range, groups
 * dividing the channels, the window inside the padded input), else -1
 * with the reason in why (may be NULL): for workloads from elsewhere */
int workload_valid(const conv_workload *w, char *why, size_t n);
int workload_from_key(const char *key, conv_workload *w);   /* the inverse; -1 if not a valid workload's key */
double workload_flops(const conv_workload *w);
int64_t workload_out(const conv_workload *w, int axis);   /* 2: OH, 3: OW */
/* How a kernel of this workload splits its output over threads: over rows
 * (1) when the input is at least a quarter of the weights' size, else over
 * output channels (0). Consecutive layers that split over rows read what
 * the same core wrote; a layer split over channels reads every input
 * channel, half of them (at two threads) from the other core's cache —
 * measured on ResNet-50 at two threads, that costs more than each core
 * reading all the weights (bench/RESULTS.md, "parallel split"). Except
 * where the weights do not stay in half of this core's L2 (s->l2) and the
 * input does: rows outer then read all the weights from L3 once per row
 * tile (ResNet-50's s4_3x3_256_s2 on a 2 MB L2: 2.4 MB seven times, 0.92×
 * as long in the model at one thread with channel blocks outer, 0.985× at
 * two; bench/RESULTS.md, 2026-12-06). */
int conv_split_rows(const task_space *s);
/* whether a config's kernel splits over rows (for the build's choice) */
int config_splits_rows(const task_space *s, const struct sched_config *c);
/* 1 when a conv2d with config c reads an input stored in NCHW<blk>c (blk 0:
 * NCHW) as it is, with no layout transform before it: its own ic_bn; NCHW
 * for the direct templates; for direct templates with one group, any block
 * ic_bn divides (it reads a part of each block); for Winograd, any block
 * that divides ic_bn or that ic_bn divides */
int config_reads_block(const task_space *s, const struct sched_config *c, int64_t blk);
/* 1 when c is a direct config whose output block spans several groups of a
 * grouped conv2d (oc_bn a multiple of the vector, groups of Cg = Kg
 * channels narrower than it): it reads its input in NCHW<b>c for any b
 * that oc_bn divides, its weights in OIHW<Cg>i<oc_bn>o (ic_bn = Cg) */
int config_spans_groups(const task_space *s, const struct sched_config *c);
/* The layouts a conv2d takes with config c — one function for the layout
 * pass, the tuner's measured kernel and the build's chooser, so what is
 * measured is what is built. producer_blk: the channel block its input is
 * stored in (0: NCHW), read as it is where the template can
 * (config_reads_block); -1: the config's own block (as the tuner measures). */
typedef struct conv_layouts {
  int64_t in_blk;           /* input NCHW<in_blk>c, 0: NCHW */
  int64_t ki, ob;           /* weights OIHW<ki>i<ob>o (Winograd: OHWI<ob>o) */
  int64_t out_blk;          /* output NCHW<out_blk>c */
  int64_t tile;             /* Winograd's m, 0 for the direct templates */
} conv_layouts;
void config_layouts(const task_space *s, const sched_config *c, int64_t producer_blk, conv_layouts *out);
/* the layouts into a conv2d's attributes (data, kernel and out layout, tile
 * size) and the config itself (attrs->config = c, so c must live as long
 * as the graph: its arena); the schedule attribute is c's printed form */
void config_set_attrs(const task_space *s, const sched_config *c, const conv_layouts *l, attrs_t *a);
/* Winograd: applies to 3×3, stride 1, dilation 1, one group; output tiles
 * of m×m per image; the tiles of a block (t_bn · t_blocks, at most all);
 * the floats of a config's two scratch tiles (the transformed input V of a
 * tile block, the products M), which the template allocates and
 * space_valid limits */
int winograd_applies(const conv_workload *w);
int64_t winograd_tiles(const conv_workload *w, int64_t m);
int64_t winograd_block(const task_space *s, const sched_config *c);
void winograd_scratch(const task_space *s, const sched_config *c, int64_t *v_floats, int64_t *m_floats);

/* The per-core L1 data and L2 cache sizes of this machine (sysconf, else
 * sysfs, else 32 KiB and 1 MiB; cg_host_caches). */
void space_caches(int64_t *l1d, int64_t *l2);
/* The space of workload w for vec-float vectors, its default config fitted
 * to caches of l1d and l2 bytes per core (the build target's: --target
 * names another machine); l1d, l2 <= 0: this machine's. The knobs and
 * their candidates do not depend on the caches, so a config's index is the
 * same on every machine of one vector width. */
void space_build_for(const conv_workload *w, int vec, int64_t l1d, int64_t l2, task_space *s);
/* space_build_for with this machine's caches: what the tuner measures on */
void space_build(const conv_workload *w, int vec, task_space *s);
const tmpl_space *space_tmpl(const task_space *s, conv_tmpl t);  /* NULL if not applicable */
int64_t space_index(const task_space *s, const sched_config *c);
int space_config(const task_space *s, int64_t index, sched_config *c);   /* -1 out of range */
/* the task-space index of template t's i-th point, 0 <= i < t->size */
int64_t space_tmpl_point(const tmpl_space *t, int64_t i);
int space_valid(const task_space *s, const sched_config *c);
/* the value of knob k in c, -1 if c's template has no such knob */
int64_t cfg_get(const task_space *s, const sched_config *c, knob_id k);
/* The default config, fitted to the target's registers and caches rather
 * than measured on one machine: Winograd for narrow 3×3 stride-1 layers,
 * else the direct (or 1×1, depthwise) template with the register tile that
 * loads the fewest operands per FMA and channel blocks whose weights fit L1
 * (docs/design.md, "default configs"); config_default_direct(.., 0) never
 * picks Winograd (for weights that are not compile-time constants).
 * config_default_at: the same, where the conv2d's input is stored in
 * NCHW<in_blk>c (0: NCHW, -1: unknown): a depthwise conv2d then takes that
 * block when it can, so it needs no layout transform. */
void config_default(const task_space *s, sched_config *c);
void config_default_direct(const task_space *s, sched_config *c, int allow_winograd);
void config_default_at(const task_space *s, int64_t in_blk, int allow_winograd, sched_config *c);

/* Canonical JSON text; the short form key=value list goes into the IR's
 * schedule attribute ("conv2d_nchwc:ic_bn=16,oc_bn=32,..."). */
void config_json(const task_space *s, const sched_config *c, char *buf, size_t n);
void config_short(const task_space *s, const sched_config *c, char *buf, size_t n);
/* Parse either form; refuses knobs, values or templates not in the space
 * with a message naming them. 0 on success. */
int config_parse(const task_space *s, const char *text, sched_config *c, char *err, size_t n);
#endif
