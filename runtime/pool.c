/* pool.c: the thread pool kernels run on. The caller is thread 0; workers
 * spin for a while on a generation counter (kernels come back to back),
 * then sleep on a condition variable. Only libc and pthreads.
 *
 * Each thread owns a contiguous share of a parallel loop (the same share
 * every time, so a thread mostly reads what its core wrote in the layer
 * before) and claims it in halving chunks; a thread that runs out claims
 * chunks of the others' shares. A loop is over when all its iterations
 * are done, not when every worker has looked in: a worker that wakes late
 * finds its share taken and costs nothing. Static shares, each waited for,
 * left ResNet-50 at two threads waiting 1.3 ms per inference (7 %) on
 * whichever core the machine slowed, on shares of unequal work, and on
 * workers waking from sleep. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "temper/runtime.h"

/* one thread's share [next, end), claimed from the front by its owner and
 * by thieves alike; a cache line each */
typedef struct share {
  _Alignas(64) atomic_llong next;
  long long end;
} share;

/* what a loop's threads prefetch as its kernel runs (temper_pool_prefetch) */
typedef struct pf_stream {
  const char *cur, *next;
  int64_t cur_bytes, next_bytes;
} pf_stream;

struct temper_pool {
  int n;                      /* threads including the caller */
  pthread_t *threads;
  pthread_mutex_t mu;
  pthread_cond_t wake;
  /* a seqlock over the job: odd while the caller writes fn, ctx and the
   * shares; a worker counts itself in busy and then checks gen unchanged
   * before it reads them, and the caller waits for busy == 0 after making
   * gen odd — one of the two sees the other */
  atomic_uint gen;
  atomic_int busy;            /* workers inside a job */
  atomic_llong done;          /* iterations of the current loop finished */
  atomic_int stop;
  atomic_int sleepers;        /* workers blocked (or about to block) on wake */
  temper_task_fn fn;
  void *ctx;
  share *shares;              /* one per thread */
  pf_stream pf_next, pf_job;  /* temper_pool_prefetch: for the next loop; the current loop's */
  int64_t pf_cap;             /* the most bytes of it fetched ahead (temper_prefetch_lead) */
};

/* the start of the calling thread's first chunk in the current loop, or -1
 * in its later chunks: kernels prefetch what a thread's range reads once */
static _Thread_local int64_t first_begin;

int64_t temper_task_first(void) { return first_begin; }

/* this thread's part of the current loop's prefetch stream: [at, end),
 * then [at2, end2) */
static _Thread_local const char *pf_at, *pf_end, *pf_at2, *pf_end2;
static _Thread_local int64_t pf_lines;

/* How far the weight stream runs ahead: the next kernel's first bytes are
 * fetched during the current kernel, and the current kernel's stream stays
 * that far ahead of where it reads. Half of this core's L2 (the other half
 * keeps the weight block the kernel re-reads and its input), and at most
 * 512 KB. All of the next weights (ResNet-50's last layers have 4–9 MB)
 * evicted what the running kernel still read: on a Sapphire Rapids-class
 * core (2 MB L2) the 1×1 layers of the last stage took 1.31 ms in the model
 * instead of 0.86 with 512 KB, and the whole model's kernels 51.7 ms at one
 * thread against 49.1 (26.3 against 25.1 at two threads). On Zen 5 (1 MB
 * L2) a quarter, 256 KB, covered less than half of a stage-5 3×3 kernel's
 * 590 KB weight block when the block starts, and the stream fell behind:
 * with 512 KB ResNet-50 at one thread took 0.97× as long in `temper run`
 * and 0.99× as a built library (medians of 14 and 13 alternating pairs),
 * unchanged at two threads and in MobileNetV2 (bench/RESULTS.md).
 * On Intel's server cores (2 MB L2 and more) a short lead, 64 KB, is
 * better: on an Emerald Rapids-class core the tuned ResNet-50 at one
 * thread took 0.953× as long as with 512 KB as a built library (16
 * alternating pairs) and 0.953–0.956× in `temper run --profile` (all 10
 * rounds faster; 128 KB 0.960×, 256 KB 0.976×, none 0.969–0.977×): the
 * 7×7 Winograd layers 0.81×, the 14×14 ones 0.85×, the last stage's 1×1
 * layers 0.93–0.95×. The core's own L2 prefetcher keeps up with the
 * weights, and the longer lead only evicts the blocks a kernel re-reads.
 * At two threads 0.99× (two runs of 20 pairs: no change). */
int64_t temper_prefetch_lead(long l2) {
  if (l2 >= 2L << 20) return 64 << 10;
  int64_t half = (l2 > 0 ? l2 : 1 << 20) / 2;
  return half < (512 << 10) ? half : 512 << 10;
}

/* this core's L2 in bytes, or -1 where neither libc nor the kernel says */
static long l2_bytes(void) {
  long l2 = -1;
#ifdef _SC_LEVEL2_CACHE_SIZE
  l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
  if (l2 <= 0) {   /* where libc does not say: the kernel's view of cpu0 */
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index2/size", "r");
    char unit = 0;
    if (f && fscanf(f, "%ld%c", &l2, &unit) >= 1) l2 *= unit == 'K' ? 1024 : unit == 'M' ? 1048576 : 1;
    else l2 = -1;
    if (f) fclose(f);
  }
  return l2;
}

void temper_pool_prefetch(temper_pool *p, const void *cur, int64_t cur_bytes, const void *next, int64_t next_bytes) {
  if (!p) return;
  p->pf_next = (pf_stream){cur_bytes > 0 ? cur : NULL, next_bytes > 0 ? next : NULL, cur && cur_bytes > 0 ? cur_bytes : 0,
                           next && next_bytes > 0 ? next_bytes : 0};
}

/* Thread i of n: where it reads the weights of a kernel split over output
 * channels, the lines [L·i/n, L·(i+1)/n) of their L; the previous kernel
 * fetched the first cap bytes of that part, so it fetches the rest (a cap
 * ahead of where it reads, as the kernel progresses), then the first cap
 * bytes of its part of the next kernel's. Weights of at most a cap per
 * thread: the next kernel's first cap bytes split among the threads, as
 * that kernel may read them all on every thread. Ranges in whole lines. */
typedef struct pf_range { const char *at, *end; } pf_range;
static int64_t part_lines(const pf_stream *st, int64_t cap, int i, int n, pf_range r[2]) {
  int64_t capl = cap / 64, k = 0, lines = 0;
  r[0] = r[1] = (pf_range){NULL, NULL};
  if (st->cur) {
    int64_t L = (st->cur_bytes + 63) / 64, lo = L * i / n + capl, hi = L * (i + 1) / n;
    if (L / n > capl && lo < hi) r[k++] = (pf_range){st->cur + lo * 64, st->cur + hi * 64}, lines += hi - lo;
  }
  if (st->next) {
    int64_t L = (st->next_bytes + 63) / 64, lo, hi;
    if (L / n > capl) lo = L * i / n, hi = lo + capl;
    else {
      int64_t b = L < capl ? L : capl;
      lo = b * i / n, hi = b * (i + 1) / n;
    }
    if (lo < hi) r[k++] = (pf_range){st->next + lo * 64, st->next + hi * 64}, lines += hi - lo;
  }
  return lines;
}

static void prefetch_part(const pf_stream *st, int64_t cap, int i, int n) {
  pf_at = pf_end = pf_at2 = pf_end2 = NULL;
  pf_lines = 0;
  if (!st) return;
  pf_range r[2], other[2];
  for (int j = 0; j < n; j++) pf_lines += part_lines(st, cap, j, n, other);   /* kernels take lines / calls per call */
  part_lines(st, cap, i, n, r);
  pf_at = r[0].at, pf_end = r[0].end, pf_at2 = r[1].at, pf_end2 = r[1].end;
}

/* at a kernel's entry: the second range once the first is done (a kernel
 * runs in several chunks per thread; the switch waits for the next) */
void temper_prefetch_state(const char **at, const char **end, int64_t *lines) {
  if (pf_at2 && pf_at >= pf_end) pf_at = pf_at2, pf_end = pf_end2, pf_at2 = NULL;
  *at = pf_at;
  *end = pf_end;
  *lines = pf_lines;
}

void temper_prefetch_save(const char *at) { pf_at = at; }

/* how long an idle worker spins before it sleeps: kernels of a model come
 * back to back, and waking from the condition variable took 10–100 µs on
 * a virtual machine (a kernel of ResNet-50 at two threads runs 20–700 µs) */
static const double SPIN_S = 300e-6;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* claims halving chunks of share j until it is empty */
static void run_share(temper_pool *p, int j, int *first) {
  share *sh = &p->shares[j];
  for (;;) {
    long long at = atomic_load_explicit(&sh->next, memory_order_relaxed), left = sh->end - at;
    if (left <= 0) return;
    long long want = (left + 1) / 2, lo = atomic_fetch_add_explicit(&sh->next, want, memory_order_relaxed);
    if (lo >= sh->end) return;
    long long hi = lo + want < sh->end ? lo + want : sh->end;
    first_begin = *first ? lo : -1;
    *first = 0;
    p->fn(p->ctx, lo, hi);
    atomic_fetch_add_explicit(&p->done, hi - lo, memory_order_release);
  }
}

/* thread i: its own share, then the others' leftovers */
static void run_job(temper_pool *p, int i) {
  int first = 1;
  prefetch_part(&p->pf_job, p->pf_cap, i, p->n);
  for (int k = 0; k < p->n; k++) run_share(p, (i + k) % p->n, &first);
}

typedef struct worker_arg { temper_pool *p; int index; } worker_arg;

static void *worker(void *arg) {
  worker_arg *wa = arg;
  temper_pool *p = wa->p;
  int index = wa->index;
  free(wa);
  unsigned seen = 0;
  for (;;) {
    unsigned g;
    double since = 0;
    for (int spins = 0; ((g = atomic_load(&p->gen)) == seen || (g & 1)) && !atomic_load(&p->stop); spins++) {
      if (spins % 1024 != 1023) continue;
      double t = now_s();
      if (!since) since = t;
      if (t - since < SPIN_S) continue;
      pthread_mutex_lock(&p->mu);
      atomic_fetch_add(&p->sleepers, 1);   /* seq_cst: pairs with the caller's gen bump */
      while (atomic_load(&p->gen) == seen && !atomic_load(&p->stop)) pthread_cond_wait(&p->wake, &p->mu);
      atomic_fetch_sub(&p->sleepers, 1);
      pthread_mutex_unlock(&p->mu);
      since = 0;
    }
    if (atomic_load(&p->stop)) return NULL;
    atomic_fetch_add(&p->busy, 1);
    if (atomic_load(&p->gen) == g) {   /* the job seen is still the one published */
      seen = g;
      run_job(p, index);
    }
    atomic_fetch_sub(&p->busy, 1);
  }
}

temper_pool *temper_pool_create(int n_threads) {
  temper_pool *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->n = n_threads < 1 ? 1 : n_threads;
  p->pf_cap = temper_prefetch_lead(l2_bytes());
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  p->threads = calloc((size_t)p->n, sizeof(pthread_t));
  p->shares = aligned_alloc(_Alignof(share), sizeof(share) * (size_t)p->n);
  if (!p->threads || !p->shares) { free(p->threads); free(p->shares); free(p); return NULL; }
  for (int i = 0; i < p->n; i++) {
    atomic_init(&p->shares[i].next, 0);
    p->shares[i].end = 0;
  }
  /* kernels keep scratch tiles on the stack (up to LF_MAX_LOCAL_BYTES per
   * function): a fixed, generous stack rather than whatever the default is */
  pthread_attr_t at;
  int inited = pthread_attr_init(&at) == 0, have_attr = inited && pthread_attr_setstacksize(&at, 16u << 20) == 0;
  for (int i = 1; i < p->n; i++) {
    worker_arg *wa = malloc(sizeof *wa);
    if (!wa) { p->n = i; break; }
    *wa = (worker_arg){p, i};
    if (pthread_create(&p->threads[i], have_attr ? &at : NULL, worker, wa)) { free(wa); p->n = i; break; }
  }
  if (inited) pthread_attr_destroy(&at);
  return p;
}

void temper_pool_destroy(temper_pool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  atomic_store(&p->stop, 1);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  for (int i = 1; i < p->n; i++) pthread_join(p->threads[i], NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->wake);
  free(p->threads);
  free(p->shares);
  free(p);
}

int temper_pool_threads(const temper_pool *p) { return p ? p->n : 1; }

void temper_parallel_for(temper_pool *p, temper_task_fn fn, void *ctx, int64_t n) {
  if (!p || p->n == 1 || n <= 1) {
    first_begin = 0;
    prefetch_part(p ? &p->pf_next : NULL, p ? p->pf_cap : 0, 0, 1);
    if (p) p->pf_next = (pf_stream){0};
    if (n > 0) fn(ctx, 0, n);
    return;
  }
  atomic_fetch_add(&p->gen, 1);                    /* odd: writing */
  while (atomic_load(&p->busy) > 0) sched_yield(); /* a late worker still looking at the last job */
  p->fn = fn;
  p->ctx = ctx;
  for (int i = 0; i < p->n; i++) {
    atomic_store_explicit(&p->shares[i].next, n * i / p->n, memory_order_relaxed);
    p->shares[i].end = n * (i + 1) / p->n;
  }
  atomic_store_explicit(&p->done, 0, memory_order_relaxed);
  p->pf_job = p->pf_next;   /* one loop's */
  p->pf_next = (pf_stream){0};
  atomic_fetch_add(&p->gen, 1);                    /* even: published */
  if (atomic_load(&p->sleepers) > 0) {
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
  }
  run_job(p, 0);
  while (atomic_load_explicit(&p->done, memory_order_acquire) < n) sched_yield();
}
