/* layout_algebra.c: layout strings (NCHW, NCHW16c, OIHW16i32o) and the index
 * mapping between a primal coordinate and a physical one. */
#include <ctype.h>
#include <string.h>
#include "compiler_int.h"

int layout_parse(const char *s, layout_t *l) {
  memset(l, 0, sizeof *l);
  while (*s) {
    if (l->n == TEMPER_MAX_DIMS) return -1;   /* a tensor has no more dimensions than that */
    if (isupper((unsigned char)*s)) {
      for (int i = 0; i < l->n; i++)   /* each primal axis once: NCWW is no layout */
        if (l->axis[i] == *s) return -1;
      l->axis[l->n++] = *s++;
      continue;
    }
    int f = 0;
    while (isdigit((unsigned char)*s)) {
      f = f * 10 + (*s++ - '0');
      if (f > 4096) return -1;
    }
    if (!f || !islower((unsigned char)*s)) return -1;
    for (int i = 0; i < l->n; i++)   /* one split per axis */
      if (l->axis[i] == *s) return -1;
    l->axis[l->n] = *s++;
    l->factor[l->n++] = f;
  }
  for (int i = 0; i < l->n; i++)   /* a sub-axis needs its primal axis */
    if (l->factor[i] && !strchr(l->axis, toupper((unsigned char)l->axis[i]))) return -1;
  return l->n ? 0 : -1;
}

static int sub_factor(const layout_t *l, char upper) {
  for (int i = 0; i < l->n; i++)
    if (l->factor[i] && toupper((unsigned char)l->axis[i]) == upper) return l->factor[i];
  return 1;
}

static int primal_pos(const char *axes, char a) {
  const char *p = strchr(axes, toupper((unsigned char)a));
  return p ? (int)(p - axes) : -1;
}

int layout_shape(const layout_t *l, const char *axes, const int64_t *dims, shape_t *out) {
  int np = 0;
  for (int i = 0; i < l->n; i++) np += !l->factor[i];
  if (np != (int)strlen(axes)) return -1;
  out->ndim = l->n;
  for (int i = 0; i < l->n; i++) {
    int p = primal_pos(axes, l->axis[i]);
    if (p < 0) return -1;
    if (l->factor[i]) out->d[i] = l->factor[i];
    else {
      int64_t f = sub_factor(l, l->axis[i]);
      out->d[i] = (dims[p] + f - 1) / f;
    }
  }
  return 0;
}

int layout_block(const char *layout, char axis) {
  layout_t l;
  if (layout_parse(layout, &l)) return 0;
  for (int i = 0; i < l.n; i++)
    if (l.factor[i] && l.axis[i] == axis) return l.factor[i];
  return 0;
}
