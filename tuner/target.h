/* target.h: one place that knows machines — the host as a database target,
 * `--target` specs, and how closely a database's target matches the one a
 * build is for (graded matching: a build uses records of the closest
 * level that has any). */
#ifndef TEMPER_TARGET_H
#define TEMPER_TARGET_H
#include "codegen.h"
#include "db.h"

/* ORDER LEVEL: how a database target matches the build's */
#define TARGET_LEVELS(X)                                      \
  X(EXACT, "exact target")                                    \
  X(FEATURES, "same features, other CPU")                     \
  X(SUBSET, "compatible subset of features")
typedef enum target_level {
#define X(id, name) TARGET_##id,
  TARGET_LEVELS(X)
#undef X
  TARGET_LEVEL_COUNT
} target_level;
extern const char *const target_level_names[TARGET_LEVEL_COUNT];

/* this machine as records name it: triple, CPU, features, LLVM, cores */
void target_host(db_target *t);
/* the per-core L1d and L2 of a CPU LLVM names (sapphirerapids: 48 KB and
 * 2 MB); 0 if not known (generic names such as x86-64-v3 among them) */
int target_cpu_caches(const char *cpu, int64_t *l1d, int64_t *l2);
/* a cg_target for a database target (its vector width from its features,
 * its caches from its CPU's name where known, else 0: this machine's) */
void target_to_cg(const db_target *d, cg_target *t);
/* --target CPU[:FEATURES] (well-known CPUs need no feature list), with the
 * CPU's caches where target_cpu_caches knows them, else this machine's; -1
 * if the CPU is unknown and no features are given */
int target_from_spec(const char *spec, cg_target *t);
/* how database target d matches t: a level, or -1 if its code may not run there */
int target_match(const db_target *d, const cg_target *t);
#endif
