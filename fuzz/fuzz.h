/* fuzz.h: what the fuzz targets share. Each target file defines
 * LLVMFuzzerTestOneInput for one reader of outside input; built with clang
 * and -fsanitize=fuzzer (cmake -DTEMPER_FUZZ=ON, scripts/fuzz.sh) it is a
 * libFuzzer binary, built otherwise with replay.c it runs the given files
 * and directories once (the suite replays every corpus and crasher file,
 * also under ASan + UBSan). An input may be refused with any message; it
 * may not crash, hang, leak or touch memory it does not own. */
#ifndef TEMPER_FUZZ_H
#define TEMPER_FUZZ_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* data as a NUL-terminated string (malloc'd) */
static inline char *fuzz_string(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s) return NULL;
  memcpy(s, data, size);
  s[size] = 0;
  return s;
}

/* data in a file of this process's own (for readers that take a path);
 * returns the path, static storage */
static inline const char *fuzz_file(const uint8_t *data, size_t size, const char *suffix) {
  static char path[256];
  snprintf(path, sizeof path, "/tmp/temper_fuzz_%d%s", (int)getpid(), suffix);
  FILE *f = fopen(path, "wb");
  if (!f) return NULL;
  if (size) fwrite(data, 1, size, f);
  fclose(f);
  return path;
}
#endif
