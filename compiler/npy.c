/* npy.c: NumPy .npy files, float32 little-endian C order (format 1.0-3.0). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "compiler_int.h"

temper_status npy_read(const char *path, shape_t *shape, float **data, char *err, size_t en) {
  *data = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) { snprintf(err, en, "%s: cannot open: %s", path, strerror(errno)); return TEMPER_EIO; }
  unsigned char head[12];
  temper_status s = TEMPER_EINVAL;
  char *hdr = NULL;
  if (fread(head, 1, 10, f) != 10 || memcmp(head, "\x93NUMPY", 6)) {
    snprintf(err, en, "%s: not a .npy file (bad magic)", path);
    goto out;
  }
  size_t hlen = head[8] | (size_t)head[9] << 8;
  if (head[6] >= 2) {
    if (fread(head + 10, 1, 2, f) != 2) { snprintf(err, en, "%s: truncated header", path); goto out; }
    hlen |= (size_t)head[10] << 16 | (size_t)head[11] << 24;
  }
  if (hlen > 1 << 20 || !(hdr = calloc(1, hlen + 1)) || fread(hdr, 1, hlen, f) != hlen) {
    snprintf(err, en, "%s: truncated or oversized header", path);
    goto out;
  }
  if (!strstr(hdr, "'descr': '<f4'") && !strstr(hdr, "'descr': '|f4'")) {
    snprintf(err, en, "%s: only float32 ('<f4') arrays are supported", path);
    goto out;
  }
  if (strstr(hdr, "'fortran_order': True")) { snprintf(err, en, "%s: Fortran order is not supported", path); goto out; }
  char *p = strstr(hdr, "'shape': (");
  if (!p) { snprintf(err, en, "%s: header has no shape", path); goto out; }
  p += 10;
  shape->ndim = 0;
  while (*p && *p != ')') {
    char *end;
    long long v = strtoll(p, &end, 10);
    if (end == p) { p++; continue; }
    if (shape->ndim == TEMPER_MAX_DIMS || v < 0 || v > (1ll << 33)) { snprintf(err, en, "%s: bad shape", path); goto out; }
    shape->d[shape->ndim++] = v;
    p = end;
  }
  int64_t n = shape_numel(shape);
  if (n > (1ll << 32)) { snprintf(err, en, "%s: array too large", path); goto out; }
  long here = ftell(f), size = -1;   /* the data must be in the file before anything is allocated for it */
  if (here >= 0 && !fseek(f, 0, SEEK_END)) size = ftell(f), fseek(f, here, SEEK_SET);
  if (size < 0 || (size - here) / 4 < n) {
    snprintf(err, en, "%s: truncated data (expected %lld floats, the file holds %ld)", path, (long long)n, size < here ? 0 : (size - here) / 4);
    goto out;
  }
  *data = malloc(sizeof(float) * (size_t)(n ? n : 1));
  if (!*data) { snprintf(err, en, "%s: out of memory", path); s = TEMPER_ENOMEM; goto out; }
  if (fread(*data, sizeof(float), (size_t)n, f) != (size_t)n) {
    snprintf(err, en, "%s: truncated data (expected %lld floats)", path, (long long)n);
    free(*data);
    *data = NULL;
    goto out;
  }
  s = TEMPER_OK;
out:
  free(hdr);
  fclose(f);
  return s;
}

temper_status npy_write(const char *path, const shape_t *shape, const float *data, char *err, size_t en) {
  char dict[256];
  int k = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
  for (int i = 0; i < shape->ndim; i++)
    k += snprintf(dict + k, sizeof dict - (size_t)k, "%lld%s", (long long)shape->d[i],
                  shape->ndim == 1 ? "," : i + 1 < shape->ndim ? ", " : "");
  k += snprintf(dict + k, sizeof dict - (size_t)k, "), }");
  int total = 10 + k + 1;
  int pad = (64 - total % 64) % 64;
  FILE *f = fopen(path, "wb");
  if (!f) { snprintf(err, en, "%s: cannot create: %s", path, strerror(errno)); return TEMPER_EIO; }
  unsigned hl = (unsigned)(k + pad + 1);
  unsigned char head[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hl & 255), (unsigned char)(hl >> 8)};
  fwrite(head, 1, 10, f);
  fwrite(dict, 1, (size_t)k, f);
  for (int i = 0; i < pad; i++) fputc(' ', f);
  fputc('\n', f);
  int64_t n = shape_numel(shape);
  size_t w = fwrite(data, sizeof(float), (size_t)n, f);
  if (fclose(f) || w != (size_t)n) { snprintf(err, en, "%s: write failed", path); return TEMPER_EIO; }
  return TEMPER_OK;
}
