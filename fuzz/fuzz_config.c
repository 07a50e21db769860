/* fuzz_config.c: the config parser (--config, --config-file, the database's
 * config texts) against the spaces of a few workloads. The first byte
 * picks the workload. */
#include "fuzz.h"
#include "space.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const conv_workload ws[4] = {{1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
                                      {1, 256, 14, 14, 1024, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},
                                      {1, 32, 13, 13, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 32},
                                      {2, 12, 7, 9, 24, 5, 3, 1, 2, 2, 1, 0, 1, 2, 1, 3}};
  if (!size) return 0;
  task_space sp;
  space_build(&ws[data[0] % 4], data[0] & 4 ? 8 : 16, &sp);
  char *text = fuzz_string(data + 1, size - 1), err[512], back[1024];
  sched_config c;
  if (text && !config_parse(&sp, text, &c, err, sizeof err)) {
    config_json(&sp, &c, back, sizeof back);   /* what parses prints and parses back the same */
    sched_config c2;
    if (config_parse(&sp, back, &c2, err, sizeof err) || space_index(&sp, &c) != space_index(&sp, &c2)) abort();
  }
  free(text);
  return 0;
}
