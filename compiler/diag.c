/* diag.c: one place that builds error messages, chibicc style:
 *   model.relay:3:14: error: expected ')' after arguments
 *     %0 = nn.conv2d(%x, %w;
 *                  ^                                                        */
#include <stdio.h>
#include <string.h>
#include "compiler_int.h"

static void show_line(diag *d, loc_t loc) {
  if (!d->text || loc.line <= 0) return;
  const char *p = d->text;
  for (int l = 1; l < loc.line && p; l++) {
    p = strchr(p, '\n');
    if (p) p++;
  }
  if (!p) return;
  const char *end = strchr(p, '\n');
  int len = end ? (int)(end - p) : (int)strlen(p);
  if (len > 200) len = 200;
  size_t used = strlen(d->msg);
  snprintf(d->msg + used, sizeof d->msg - used, "\n  %.*s\n  %*s^", len, p,
           loc.col > 1 ? loc.col - 1 : 0, "");
}

temper_status diag_error(diag *d, loc_t loc, const char *fmt, ...) {
  if (d->status != TEMPER_OK) return d->status;   /* keep the first error */
  /* a path of any length leaves room for the message: its last 250 characters */
  const char *path = d->path ? d->path : "<input>";
  size_t pl = strlen(path);
  int k = snprintf(d->msg, sizeof d->msg, "%s%s:%d:%d: error: ", pl > 250 ? "..." : "", pl > 250 ? path + pl - 250 : path,
                   loc.line, loc.col);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->msg + k, sizeof d->msg - (size_t)k, fmt, ap);
  va_end(ap);
  show_line(d, loc);
  return d->status = TEMPER_EINVAL;
}

temper_status diag_fail(diag *d, temper_status s, const char *fmt, ...) {
  if (d->status != TEMPER_OK) return d->status;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->msg, sizeof d->msg, fmt, ap);
  va_end(ap);
  return d->status = s;
}

const char *temper_status_str(temper_status s) {
  switch (s) {
  case TEMPER_OK: return "ok";
  case TEMPER_EINVAL: return "invalid input";
  case TEMPER_EUNSUPPORTED: return "unsupported";
  case TEMPER_ENOMEM: return "out of memory";
  case TEMPER_ELLVM: return "LLVM error";
  case TEMPER_EDB: return "database error";
  case TEMPER_EIO: return "I/O error";
  case TEMPER_EINTERNAL: return "internal error";
  }
  return "unknown status";
}
