/* difftest.c: the differential-testing campaign. For seeds S .. S+N-1: a
 * random network (difftest/gen.c), compiled in every mode (defaults, random
 * configs, neighbouring convs with different channel blocks) and compared
 * with the reference interpreter.
 *
 * Each network runs in a child process with a time limit, so a kernel that
 * crashes or hangs is a finding like a wrong answer, and the campaign goes
 * on. A mismatch writes OUT/seed<S>_<mode>.relay/.json and prints the
 * `temper run` line that replays it; a crash or a timeout prints the seed
 * (`build/bench/difftest --seed S --count 1` replays it in the foreground
 * with --no-fork).
 *
 * usage: difftest [--seed S] [--count N] [--threads T] [--out DIR] [--timeout SEC] [--no-fork] [--quiet] */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "difftest.h"
#include "target.h"

typedef struct opts {
  uint64_t seed;
  long count;
  int threads, timeout, fork, quiet;
  const char *out;
  const char *target;   /* --target CPU: compile for it (no wider than the host) instead of the host */
  cg_target tgt;        /* the target, read once in main */
} opts;

typedef struct totals { long networks, runs, kernels, joined, configs, mismatches, errors, crashes, timeouts, ill; double worst; } totals;

/* one network in every mode; prints a line per problem; a line of counts
 * for the parent ("= kernels joined configs mismatches errors ill-conditioned worst") */
static int one_network(const opts *o, uint64_t seed, FILE *report) {
  diag d = {0};
  temper_engine *e = NULL;
  if (o->target ? engine_create_for(&e, &o->tgt, &d) : engine_create(&e, &d)) { fprintf(stderr, "difftest: %s\n", d.msg); return 1; }
  char *text = dt_generate(seed, NULL);
  if (!text) { engine_destroy(e); return 1; }
  long kernels = 0, joined = 0, configs = 0, mismatches = 0, errors = 0, ill = 0;
  double worst = 0;
  for (int m = 0; m < DT_MODE_COUNT; m++) {
    dt_result r;
    diag dd = {0};
    temper_status s = dt_check(e, text, NULL, seed, (dt_mode)m, o->threads, &r, &dd);
    kernels += r.n_kernels;
    joined += r.n_joined;
    configs += r.n_configs;
    ill += r.ill_conditioned;
    if (r.rel_err > worst && !r.mismatch) worst = r.rel_err;
    if (s || r.mismatch) {
      char name[64], err[512];
      snprintf(name, sizeof name, "seed%llu_%s", (unsigned long long)seed, dt_mode_names[m]);
      char *cmd = dt_write_case(o->out, name, text, r.configs, seed, o->threads, err, sizeof err);
      printf("seed %llu, %s configs%s%s: %s\n  replay%s: %s\n", (unsigned long long)seed, dt_mode_names[m], o->target ? " for " : "",
             o->target ? o->target : "", s ? dd.msg : r.detail, o->target ? " (on a machine of that kind)" : "", cmd ? cmd : err);
      free(cmd);
      if (s) errors++;
      else mismatches++;
    }
    free(r.configs);
  }
  fprintf(report, "= %ld %ld %ld %ld %ld %ld %.17g\n", kernels, joined, configs, mismatches, errors, ill, worst);
  fflush(stdout);
  free(text);
  engine_destroy(e);
  return 0;
}

static void add_report(totals *t, const char *line) {
  long k, j, c, mm, er, il;
  double w;
  if (sscanf(line, "= %ld %ld %ld %ld %ld %ld %lg", &k, &j, &c, &mm, &er, &il, &w) != 7) return;
  t->kernels += k, t->joined += j, t->configs += c, t->mismatches += mm, t->errors += er, t->ill += il;
  if (w > t->worst) t->worst = w;
}

/* runs one_network in a child with a time limit; crashes and hangs counted */
static void forked(const opts *o, uint64_t seed, totals *t) {
  int fd[2];
  if (pipe(fd)) { perror("difftest: pipe"); exit(1); }
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    FILE *w = fdopen(fd[1], "w");
    alarm((unsigned)o->timeout);
    int rc = one_network(o, seed, w);
    fclose(w);
    _exit(rc);
  }
  close(fd[1]);
  FILE *r = fdopen(fd[0], "r");
  char line[256];
  while (r && fgets(line, sizeof line, r)) add_report(t, line);
  if (r) fclose(r);
  int st = 0;
  waitpid(pid, &st, 0);
  if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM) {
    t->timeouts++;
    printf("seed %llu: no answer within %d s (replay: difftest --seed %llu --count 1 --no-fork)\n", (unsigned long long)seed,
           o->timeout, (unsigned long long)seed);
  } else if (WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st))) {
    t->crashes++;
    printf("seed %llu: the run died (%s %d) (replay: difftest --seed %llu --count 1 --no-fork)\n", (unsigned long long)seed,
           WIFSIGNALED(st) ? "signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), (unsigned long long)seed);
  }
}

static int usage(void) {
  fprintf(stderr, "usage: difftest [--seed S] [--count N] [--threads T] [--out DIR] [--timeout SEC] [--target CPU] [--no-fork] [--quiet]\n");
  return 2;
}

int main(int argc, char **argv) {
  opts o = {.seed = 1, .count = 100, .threads = 1, .timeout = 120, .fork = 1, .out = "difftest-out"};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--seed") && v) o.seed = strtoull(v, NULL, 10), i++;
    else if (!strcmp(a, "--count") && v) o.count = strtol(v, NULL, 10), i++;
    else if (!strcmp(a, "--threads") && v) o.threads = atoi(v), i++;
    else if (!strcmp(a, "--out") && v) o.out = v, i++;
    else if (!strcmp(a, "--timeout") && v) o.timeout = atoi(v), i++;
    else if (!strcmp(a, "--target") && v) o.target = v, i++;
    else if (!strcmp(a, "--no-fork")) o.fork = 0;
    else if (!strcmp(a, "--quiet")) o.quiet = 1;
    else return usage();
  }
  if (o.count < 1 || o.threads < 1 || o.threads > 256 || o.timeout < 1) return usage();
  if (o.target && target_from_spec(o.target, &o.tgt)) {
    fprintf(stderr, "difftest: unknown target '%s': a CPU name as temper build --target takes (x86-64-v3: AVX2)\n", o.target);
    return 2;
  }
  if (o.target) {   /* one that this machine cannot run: said once, not as a crash per network */
    temper_engine *probe = NULL;
    diag d = {0};
    if (engine_create_for(&probe, &o.tgt, &d)) { fprintf(stderr, "difftest: %s\n", d.msg); return 2; }
    engine_destroy(probe);
  }
  if (mkdir(o.out, 0777) && errno != EEXIST) { fprintf(stderr, "difftest: %s: %s\n", o.out, strerror(errno)); return 1; }
  totals t = {0};
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (long i = 0; i < o.count; i++) {
    uint64_t seed = o.seed + (uint64_t)i;
    if (o.fork) forked(&o, seed, &t);
    else {
      char *buf = NULL;
      size_t len = 0;
      FILE *mem = open_memstream(&buf, &len);
      if (!mem || one_network(&o, seed, mem)) t.crashes++;
      if (mem) fclose(mem);
      if (buf) add_report(&t, buf);
      free(buf);
    }
    t.networks++;
    if (!o.quiet && (t.networks % 100 == 0 || t.networks == o.count)) {
      clock_gettime(CLOCK_MONOTONIC, &t1);
      fprintf(stderr, "difftest: %ld networks, %ld mismatches, %ld errors, %ld crashes, %ld timeouts (%.0f s)\n", t.networks,
              t.mismatches, t.errors, t.crashes, t.timeouts, (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("difftest: seeds %llu..%llu, %ld networks × %d modes, %ld kernels (%ld joined: two conv2d in one), %ld random configs, %d thread%s: "
         "%ld mismatches, %ld errors, %ld crashes, %ld timeouts; worst relative error within tolerance %.2g; %ld ill-conditioned "
         "outputs (within 10× the reference's own movement under rounding); %.0f s\n",
         (unsigned long long)o.seed, (unsigned long long)(o.seed + (uint64_t)o.count - 1), t.networks, DT_MODE_COUNT, t.kernels,
         t.joined, t.configs, o.threads, o.threads == 1 ? "" : "s", t.mismatches, t.errors, t.crashes, t.timeouts, t.worst, t.ill,
         (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
  return t.mismatches || t.errors || t.crashes || t.timeouts;
}
