/* target.c: machines — the host, --target specs, graded matching. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "target.h"

const char *const target_level_names[TARGET_LEVEL_COUNT] = {
#define X(id, name) name,
    TARGET_LEVELS(X)
#undef X
};

void target_host(db_target *t) {
  memset(t, 0, sizeof *t);
  cg_target c;
  diag d = {0};
  cg_host_target(&c, &d);
  snprintf(t->triple, sizeof t->triple, "%s", c.triple);
  snprintf(t->cpu, sizeof t->cpu, "%s", c.cpu);
  snprintf(t->features, sizeof t->features, "%s", c.features);
  cg_llvm_version(t->llvm_version, sizeof t->llvm_version);
  t->cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
}

/* Per-core L1 data cache and L2 of the CPUs LLVM names, in KB: what a build
 * for one (--target) fits its default configs to. Generic names (x86-64-v3)
 * and CPUs not listed take this machine's. */
static const struct { const char *cpu; int l1d_kb, l2_kb; } cpu_caches[] = {
    {"nehalem", 32, 256},        {"westmere", 32, 256},      {"sandybridge", 32, 256},   {"ivybridge", 32, 256},
    {"haswell", 32, 256},        {"broadwell", 32, 256},     {"skylake", 32, 256},       {"skylake-avx512", 32, 1024},
    {"cascadelake", 32, 1024},   {"cooperlake", 32, 1024},   {"icelake-client", 48, 512}, {"icelake-server", 48, 1280},
    {"tigerlake", 48, 1280},     {"rocketlake", 48, 512},    {"alderlake", 48, 1280},    {"raptorlake", 48, 2048},
    {"meteorlake", 48, 2048},    {"sapphirerapids", 48, 2048}, {"emeraldrapids", 48, 2048}, {"graniterapids", 48, 2048},
    {"znver1", 32, 512},         {"znver2", 32, 512},        {"znver3", 32, 512},        {"znver4", 32, 1024},
    {"znver5", 48, 1024},
};

int target_cpu_caches(const char *cpu, int64_t *l1d, int64_t *l2) {
  for (size_t i = 0; i < sizeof cpu_caches / sizeof cpu_caches[0]; i++)
    if (!strcmp(cpu, cpu_caches[i].cpu)) {
      *l1d = (int64_t)cpu_caches[i].l1d_kb << 10;
      *l2 = (int64_t)cpu_caches[i].l2_kb << 10;
      return 1;
    }
  return 0;
}

void target_to_cg(const db_target *d, cg_target *t) {
  memset(t, 0, sizeof *t);
  snprintf(t->triple, sizeof t->triple, "%s", d->triple);
  snprintf(t->cpu, sizeof t->cpu, "%s", d->cpu);
  snprintf(t->features, sizeof t->features, "%s", d->features);
  t->vec = cg_vec_of_features(t->features);
  target_cpu_caches(t->cpu, &t->l1d, &t->l2);   /* else 0: this machine's */
}

int target_from_spec(const char *spec, cg_target *t) {
  static const char *const avx2[] = {"haswell", "broadwell", "skylake", "alderlake", "znver1", "znver2", "znver3", "x86-64-v3", 0};
  static const char *const avx512[] = {"skylake-avx512", "cascadelake", "icelake-server", "sapphirerapids", "znver4", "znver5",
                                       "x86-64-v4", 0};
  static const char *const base[] = {"x86-64", "x86-64-v2", "nehalem", "westmere", 0};
  cg_target host;
  diag d = {0};
  cg_host_target(&host, &d);
  const char *colon = strchr(spec, ':');
  snprintf(t->triple, sizeof t->triple, "%s", host.triple);
  snprintf(t->cpu, sizeof t->cpu, "%.*s", colon ? (int)(colon - spec) : (int)strlen(spec), spec);
  if (colon) snprintf(t->features, sizeof t->features, "%s", colon + 1);
  else {
    const char *f = NULL;
    for (int i = 0; avx2[i]; i++)
      if (!strcmp(t->cpu, avx2[i])) f = "+sse4.2,+popcnt,+avx,+avx2,+fma,+f16c,+bmi,+bmi2,+lzcnt,+movbe";
    for (int i = 0; avx512[i]; i++)
      if (!strcmp(t->cpu, avx512[i]))
        f = "+sse4.2,+popcnt,+avx,+avx2,+fma,+f16c,+bmi,+bmi2,+lzcnt,+movbe,+avx512f,+avx512bw,+avx512dq,+avx512vl,+avx512cd,+evex512";
    for (int i = 0; base[i]; i++)
      if (!strcmp(t->cpu, base[i])) f = "+sse4.2,+popcnt";
    if (!f) return -1;
    snprintf(t->features, sizeof t->features, "%s", f);
  }
  t->vec = cg_vec_of_features(t->features);
  if (!target_cpu_caches(t->cpu, &t->l1d, &t->l2)) t->l1d = host.l1d, t->l2 = host.l2;
  return 0;
}

/* whether "+x" (n characters of x) is enabled in a feature list */
static int has_feature(const char *features, const char *x, size_t n) {
  for (const char *p = features; (p = strchr(p, '+')); p++)
    if (!strncmp(p + 1, x, n) && (p[1 + n] == ',' || !p[1 + n])) return 1;
  return 0;
}

static int features_subset(const char *a, const char *b) {   /* every +x of a is in b */
  for (const char *p = a; (p = strchr(p, '+'));) {
    p++;
    size_t n = strcspn(p, ",");
    if (!has_feature(b, p, n)) return 0;
    p += n;
  }
  return 1;
}

int target_match(const db_target *d, const cg_target *t) {
  size_t la = strcspn(t->triple, "-"), lb = strcspn(d->triple, "-");
  int same_arch = la == lb && !strncmp(t->triple, d->triple, la);
  int same = features_subset(d->features, t->features) && features_subset(t->features, d->features);
  if (same && !strcmp(d->cpu, t->cpu)) return TARGET_EXACT;
  if (same) return TARGET_FEATURES;
  if (same_arch && features_subset(d->features, t->features)) return TARGET_SUBSET;
  return -1;
}
