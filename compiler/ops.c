/* ops.c: the op and attribute tables (from the X-macro lists) and defaults. */
#include <string.h>
#include "compiler_int.h"

const op_info ops_table[OP_COUNT] = {
#define X(id, name, pat, lo, hi, at) {name, pat, lo, hi, at},
    TEMPER_OPS(X)
#undef X
};
const char *const attr_names[ATTR_COUNT] = {
#define X(id, name, kind) name,
    TEMPER_ATTRS(X)
#undef X
};
const attr_kind attr_kinds[ATTR_COUNT] = {
#define X(id, name, kind) kind,
    TEMPER_ATTRS(X)
#undef X
};

int ops_lookup(const char *name, size_t len) {
  for (int i = 0; i < OP_COUNT; i++)
    if (strlen(ops_table[i].name) == len && !memcmp(ops_table[i].name, name, len)) return i;
  return -1;
}

int attrs_lookup(const char *name, size_t len) {
  for (int i = 0; i < ATTR_COUNT; i++)
    if (strlen(attr_names[i]) == len && !memcmp(attr_names[i], name, len)) return i;
  return -1;
}

int ops_is_complex(int op) { return op >= 0 && ops_table[op].pat >= PAT_COMM_REDUCE && ops_table[op].pat <= PAT_OUT_EWISE; }

static void set2(attrs_t *a, attr_id id, int64_t x, int64_t y) {
  a->v[id].n = 2;
  a->v[id].i[0] = x;
  a->v[id].i[1] = y;
}

static void set_str(attrs_t *a, attr_id id, const char *s) {
  strncpy(a->v[id].s, s, sizeof a->v[id].s - 1);
}

/* Relay's defaults for each op's attributes. */
void ops_default_attrs(int op, attrs_t *a) {
  memset(a, 0, sizeof *a);
  set2(a, ATTR_STRIDES, 1, 1);
  set2(a, ATTR_DILATION, 1, 1);
  set2(a, ATTR_KERNEL_SIZE, 0, 0);
  set2(a, ATTR_POOL_SIZE, 1, 1);
  a->v[ATTR_PADDING].n = 4;
  a->v[ATTR_GROUPS].i[0] = 1;
  a->v[ATTR_EPSILON].f = 1e-5;
  a->v[ATTR_CENTER].i[0] = 1;
  a->v[ATTR_SCALE].i[0] = 1;
  a->v[ATTR_RATE].f = 0.5;
  set_str(a, ATTR_DATA_LAYOUT, "NCHW");
  set_str(a, ATTR_KERNEL_LAYOUT, "OIHW");
  set_str(a, ATTR_LAYOUT, "NCHW");
  switch (op) {
  case OP_BIAS_ADD: case OP_BATCH_NORM: a->v[ATTR_AXIS].i[0] = 1; break;
  case OP_SOFTMAX: case OP_LAYER_NORM: a->v[ATTR_AXIS].i[0] = -1; break;
  case OP_CONV2D_WINOGRAD: set_str(a, ATTR_KERNEL_LAYOUT, "HWIO"); break;
  case OP_HARD_SIGMOID: a->v[ATTR_ALPHA].f = 0.2, a->v[ATTR_BETA].f = 0.5; break;   /* ONNX's defaults */
  case OP_LEAKY_RELU: a->v[ATTR_ALPHA].f = 0.01; break;
  default: break;
  }
}

