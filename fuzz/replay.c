/* replay.c: a fuzz target without libFuzzer: runs LLVMFuzzerTestOneInput
 * once on each file given, and on each file of each directory given (the
 * corpus and crasher replay of the suite). Exit 0 when every input ran. */
#include <dirent.h>
#include <sys/stat.h>
#include "fuzz.h"

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) { fprintf(stderr, "replay: %s: cannot open\n", path); return 1; }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *buf = malloc((size_t)(n > 0 ? n : 1));
  size_t got = buf && n > 0 ? fread(buf, 1, (size_t)n, f) : 0;
  fclose(f);
  if (!buf || (n > 0 && got != (size_t)n)) { free(buf); fprintf(stderr, "replay: %s: cannot read\n", path); return 1; }
  LLVMFuzzerTestOneInput(buf, got);
  free(buf);
  return 0;
}

int main(int argc, char **argv) {
  int n = 0, bad = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st)) { fprintf(stderr, "replay: %s: no such file\n", argv[i]); return 1; }
    if (!S_ISDIR(st.st_mode)) { bad |= run_file(argv[i]); n++; continue; }
    DIR *d = opendir(argv[i]);
    for (struct dirent *e; d && (e = readdir(d));) {
      if (e->d_name[0] == '.') continue;
      char p[4096];
      snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
      bad |= run_file(p);
      n++;
    }
    if (d) closedir(d);
  }
  printf("replayed %d inputs\n", n);
  return bad;
}
