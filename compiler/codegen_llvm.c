/* codegen_llvm.c: loop IR → LLVM IR through the LLVM-C API, O3, ORC LLJIT.
 * Explicit vector types for vector lanes (not the auto-vectorizer's guess);
 * masked loads/stores for partial vectors, gathers/scatters for strided
 * lanes; a parallel loop is outlined into fn(ctx, begin, end) and handed to
 * temper_parallel_for with the live loop variables packed into ctx. */
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include "codegen.h"

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static void init_llvm(void) {
  LLVMInitializeNativeTarget();
  LLVMInitializeNativeAsmPrinter();
  LLVMInitializeNativeAsmParser();
}

static temper_status llvm_fail(diag *d, LLVMErrorRef err, const char *what) {
  char *msg = LLVMGetErrorMessage(err);
  temper_status s = diag_fail(d, TEMPER_ELLVM, "LLVM: %s: %s", what, msg);
  LLVMDisposeErrorMessage(msg);
  return s;
}

temper_status cg_host_target(cg_target *t, diag *d) {
  pthread_once(&init_once, init_llvm);
  char *triple = LLVMGetDefaultTargetTriple(), *cpu = LLVMGetHostCPUName(), *feat = LLVMGetHostCPUFeatures();
  snprintf(t->triple, sizeof t->triple, "%s", triple);
  snprintf(t->cpu, sizeof t->cpu, "%s", cpu);
  snprintf(t->features, sizeof t->features, "%s", feat);
  LLVMDisposeMessage(triple);
  LLVMDisposeMessage(cpu);
  LLVMDisposeMessage(feat);
  t->vec = cg_vec_of_features(t->features);
  cg_host_caches(&t->l1d, &t->l2);
  (void)d;
  return TEMPER_OK;
}

/* a size in bytes from sysfs ("48K"), 0 if absent */
static int64_t sysfs_cache(int index) {
  char path[96], buf[32];
  snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  int64_t v = 0;
  if (fgets(buf, sizeof buf, f)) {
    char *end;
    v = strtoll(buf, &end, 10);
    if (*end == 'K') v <<= 10;
    else if (*end == 'M') v <<= 20;
  }
  fclose(f);
  return v > 0 ? v : 0;
}

static int64_t host_l1d, host_l2;
static pthread_once_t caches_once = PTHREAD_ONCE_INIT;
static void read_caches(void) {
  long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  host_l1d = l1 > 0 ? l1 : sysfs_cache(0);   /* index0: the L1 data cache on x86 Linux */
  host_l2 = l2 > 0 ? l2 : sysfs_cache(2);
  if (host_l1d < 8 << 10) host_l1d = 32 << 10;
  if (host_l2 < 128 << 10) host_l2 = 1 << 20;
}

void cg_host_caches(int64_t *l1d, int64_t *l2) {
  pthread_once(&caches_once, read_caches);
  *l1d = host_l1d;
  *l2 = host_l2;
}

/* +x as a whole entry of a feature list ("+avx" is not "+avx2") */
static int has_feature(const char *features, const char *x) {
  size_t n = strlen(x);
  for (const char *p = features; (p = strstr(p, x)); p += n)
    if ((p == features || p[-1] == ',') && (p[n] == ',' || !p[n])) return 1;
  return 0;
}

int cg_vec_of_features(const char *f) {
  if (has_feature(f, "+avx512f")) return 16;
  if (has_feature(f, "+avx2") || has_feature(f, "+avx")) return 8;
  return 4;
}

void cg_llvm_version(char *buf, size_t n) {
  unsigned major, minor, patch;
  LLVMGetVersion(&major, &minor, &patch);
  snprintf(buf, n, "%u", major);   /* the major version: records name targets by it */
}

static LLVMTargetMachineRef make_tm(const cg_target *t, diag *d) {
  LLVMTargetRef target;
  char *err = NULL;
  if (LLVMGetTargetFromTriple(t->triple, &target, &err)) {
    diag_fail(d, TEMPER_ELLVM, "LLVM: unknown target %s: %s", t->triple, err);
    LLVMDisposeMessage(err);
    return NULL;
  }
  return LLVMCreateTargetMachine(target, t->triple, t->cpu, t->features, LLVMCodeGenLevelAggressive, LLVMRelocPIC,
                                 LLVMCodeModelDefault);
}

/* ---- per-module state ---- */
typedef struct cg {
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  LLVMTypeRef i1, i32, i64, f32, ptr, void_t;
  LLVMTypeRef task_ty, pfor_ty;   /* void(ptr, i64, i64); temper_parallel_for */
  LLVMTypeRef tfirst_ty;          /* i64(): temper_task_first */
  LLVMValueRef tfirst;
  LLVMTypeRef pfstate_ty, pfsave_ty;   /* temper_prefetch_state / _save */
  LLVMValueRef pfstate, pfsave;
  int has_pfnext;                 /* the kernel has prefetch_next statements */
  LLVMValueRef pfor;
  const cg_target *t;
  const lfunc *lf;
  char *slot_set;                 /* per slot of lf: assigned by an LS_SET */
  int n_outlined;
  int oom;                        /* sticky: an allocation failed; the module is discarded */
  diag *d;
} cg;

/* per-LLVM-function state */
/* Common subexpressions: an expression generated in the current block is
 * reused while none of the vars, slots or memory it reads was written since.
 * Schedules repeat index arithmetic freely (28 columns share a row base);
 * this keeps the IR, and LLVM's time on it, small. */
enum { CSE_SIZE = 4096, CSE_DEPS = 8 };
typedef struct cse_entry {
  const lexpr *e;
  uint64_t hash;
  LLVMValueRef v;
  LLVMBasicBlockRef bb;
  int n_deps;
  int dep[CSE_DEPS];               /* var v: v; slot s: -(s + 2); memory: -1 */
  unsigned ver[CSE_DEPS];
} cse_entry;

typedef struct cgfn {
  LLVMValueRef fn, pool;
  LLVMValueRef bufs[72];
  LLVMValueRef *vars;              /* allocas, i64, one per loop-IR var */
  LLVMValueRef *slots;             /* allocas, one per slot */
  LLVMBasicBlockRef entry;
  unsigned *var_ver, *slot_ver, mem_ver;
  cse_entry *cse;
  const char *slot_set;            /* per slot: ever assigned after its declaration */
  LLVMValueRef *slot_val;          /* a slot never assigned is an SSA value */
  LLVMValueRef pf_at, pf_end, pf_lines;   /* this thread's prefetch stream (allocas), if the kernel has one */
} cgfn;

static LLVMTypeRef vty(cg *c, int lanes) { return lanes > 1 ? LLVMVectorType(c->f32, (unsigned)lanes) : c->f32; }

static LLVMValueRef intrinsic(cg *c, const char *name, LLVMTypeRef *tys, size_t n, LLVMTypeRef *fnty) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  *fnty = LLVMIntrinsicGetType(c->ctx, id, tys, n);
  return LLVMGetIntrinsicDeclaration(c->mod, id, tys, n);
}

static LLVMValueRef call_intr(cg *c, const char *name, LLVMTypeRef *tys, size_t nt, LLVMValueRef *args, unsigned na) {
  LLVMTypeRef fty;
  LLVMValueRef fn = intrinsic(c, name, tys, nt, &fty);
  return LLVMBuildCall2(c->b, fty, fn, args, na, "");
}

static LLVMValueRef splat(cg *c, LLVMValueRef v, int lanes) {
  LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(v), (unsigned)lanes);
  LLVMValueRef ins = LLVMBuildInsertElement(c->b, LLVMGetUndef(vt), v, LLVMConstInt(c->i32, 0, 0), "");
  LLVMValueRef zeros = LLVMConstNull(LLVMVectorType(c->i32, (unsigned)lanes));
  return LLVMBuildShuffleVector(c->b, ins, LLVMGetUndef(vt), zeros, "");
}

static void set_fast(LLVMValueRef v, int reassoc) {
  if (LLVMCanValueUseFastMathFlags(v))
    LLVMSetFastMathFlags(v, LLVMFastMathAllowContract | (reassoc ? LLVMFastMathAllowReassoc : 0));
}

static LLVMValueRef gen(cg *c, cgfn *F, const lexpr *e);

/* a float or i32 constant shaped like a value of `lanes` lanes (1: scalar) */
static LLVMValueRef kconst(cg *c, int lanes, int is_int, double v) {
  LLVMValueRef k = is_int ? LLVMConstInt(c->i32, (unsigned long long)(long long)v, 1) : LLVMConstReal(c->f32, v);
  if (lanes == 1) return k;
  LLVMValueRef ks[64];
  for (int i = 0; i < lanes; i++) ks[i] = k;
  return LLVMConstVector(ks, (unsigned)lanes);
}

/* e^x inline, for scalars and vectors alike (LLVM's llvm.exp on a vector
 * becomes one libm call per lane: 16 calls for a SiLU of 16 floats).
 * x = n·ln2 + r with |r| <= ln2/2, e^r by a degree-6 polynomial (the
 * classic minimax coefficients for float; error within 2 ulp of expf on
 * the whole range), 2^n as two exponent-field factors so that n from −150
 * to 128 gives the denormals, 0 and ∞ that expf gives; NaN stays NaN. */
static LLVMValueRef gen_exp(cg *c, LLVMValueRef x) {
  LLVMBuilderRef B = c->b;
  LLVMTypeRef t = LLVMTypeOf(x);
  int lanes = LLVMGetTypeKind(t) == LLVMVectorTypeKind ? (int)LLVMGetVectorSize(t) : 1;
  LLVMTypeRef it = lanes == 1 ? c->i32 : LLVMVectorType(c->i32, (unsigned)lanes);
  LLVMValueRef args[3];
  args[0] = x, args[1] = kconst(c, lanes, 0, -104.0);
  LLVMValueRef xc = call_intr(c, "llvm.maxnum", &t, 1, args, 2);
  args[0] = xc, args[1] = kconst(c, lanes, 0, 89.0);
  xc = call_intr(c, "llvm.minnum", &t, 1, args, 2);
  args[0] = LLVMBuildFAdd(B, LLVMBuildFMul(B, xc, kconst(c, lanes, 0, 1.44269504088896341), ""), kconst(c, lanes, 0, 0.5), "");
  LLVMValueRef n = call_intr(c, "llvm.floor", &t, 1, args, 1);
  /* r = x − n·ln2, ln2 in two parts so that n·ln2_hi is exact */
  args[0] = n, args[1] = kconst(c, lanes, 0, -0.693359375), args[2] = xc;
  LLVMValueRef r = call_intr(c, "llvm.fma", &t, 1, args, 3);
  args[0] = n, args[1] = kconst(c, lanes, 0, 2.12194440e-4), args[2] = r;
  r = call_intr(c, "llvm.fma", &t, 1, args, 3);
  static const double poly[] = {1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1};
  LLVMValueRef p = kconst(c, lanes, 0, poly[0]);
  for (int i = 1; i < 6; i++) {
    args[0] = p, args[1] = r, args[2] = kconst(c, lanes, 0, poly[i]);
    p = call_intr(c, "llvm.fma", &t, 1, args, 3);
  }
  /* e^r = 1 + r + r²·p */
  args[0] = LLVMBuildFMul(B, r, r, ""), args[1] = p, args[2] = LLVMBuildFAdd(B, r, kconst(c, lanes, 0, 1.0), "");
  LLVMValueRef er = call_intr(c, "llvm.fma", &t, 1, args, 3);
  LLVMValueRef ni = LLVMBuildFPToSI(B, n, it, "");
  LLVMValueRef n1 = LLVMBuildAShr(B, ni, kconst(c, lanes, 1, 1), ""), n2 = LLVMBuildSub(B, ni, n1, "");
  LLVMValueRef s1 = LLVMBuildBitCast(B, LLVMBuildShl(B, LLVMBuildAdd(B, n1, kconst(c, lanes, 1, 127), ""), kconst(c, lanes, 1, 23), ""), t, "");
  LLVMValueRef s2 = LLVMBuildBitCast(B, LLVMBuildShl(B, LLVMBuildAdd(B, n2, kconst(c, lanes, 1, 127), ""), kconst(c, lanes, 1, 23), ""), t, "");
  LLVMValueRef v = LLVMBuildFMul(B, LLVMBuildFMul(B, er, s1, ""), s2, "");
  return LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealUNO, x, x, ""), x, v, "");
}

static LLVMValueRef to_bool(cg *c, LLVMValueRef v) {
  LLVMTypeRef t = LLVMTypeOf(v);
  if (t == c->i1 || (LLVMGetTypeKind(t) == LLVMVectorTypeKind && LLVMGetElementType(t) == c->i1)) return v;
  return LLVMBuildICmp(c->b, LLVMIntNE, v, LLVMConstInt(LLVMTypeOf(v), 0, 0), "");
}

/* lanes < limit, as a mask */
static LLVMValueRef lane_mask(cg *c, cgfn *F, const lexpr *limit, int lanes) {
  if (!limit) {
    LLVMValueRef ones[64];
    for (int i = 0; i < lanes; i++) ones[i] = LLVMConstInt(c->i1, 1, 0);
    return LLVMConstVector(ones, (unsigned)lanes);
  }
  LLVMValueRef iota[64];
  for (int i = 0; i < lanes; i++) iota[i] = LLVMConstInt(c->i64, (unsigned long long)i, 0);
  LLVMValueRef lim = splat(c, gen(c, F, limit), lanes);
  return LLVMBuildICmp(c->b, LLVMIntSLT, LLVMConstVector(iota, (unsigned)lanes), lim, "");
}

/* vector of lane addresses base + (idx + l*stride) */
static LLVMValueRef lane_ptrs(cg *c, LLVMValueRef base, LLVMValueRef idx, int64_t stride, int lanes) {
  LLVMValueRef offs[64];
  for (int i = 0; i < lanes; i++) offs[i] = LLVMConstInt(c->i64, (unsigned long long)(stride * i), 1);
  LLVMValueRef v = LLVMBuildAdd(c->b, splat(c, idx, lanes), LLVMConstVector(offs, (unsigned)lanes), "");
  return LLVMBuildGEP2(c->b, c->f32, base, &v, 1, "");
}

static LLVMValueRef gen_load(cg *c, cgfn *F, const lexpr *e) {
  LLVMValueRef idx = gen(c, F, e->a), base = F->bufs[e->id];
  LLVMValueRef p = LLVMBuildGEP2(c->b, c->f32, base, &idx, 1, "");
  if (e->lanes == 1) return LLVMBuildLoad2(c->b, c->f32, p, "");
  LLVMTypeRef vt = vty(c, e->lanes);
  if (e->stride == 0) return splat(c, LLVMBuildLoad2(c->b, c->f32, p, ""), e->lanes);
  if (e->stride == 1 && !e->limit) {
    LLVMValueRef l = LLVMBuildLoad2(c->b, vt, p, "");
    LLVMSetAlignment(l, 4);
    return l;
  }
  LLVMValueRef mask = lane_mask(c, F, e->limit, e->lanes);
  if (e->stride == 1) {
    LLVMTypeRef tys[2] = {vt, c->ptr};
    LLVMValueRef args[4] = {p, LLVMConstInt(c->i32, 4, 0), mask, LLVMConstNull(vt)};
    return call_intr(c, "llvm.masked.load", tys, 2, args, 4);
  }
  LLVMValueRef ptrs = lane_ptrs(c, base, idx, e->stride, e->lanes);
  LLVMTypeRef tys[2] = {vt, LLVMVectorType(c->ptr, (unsigned)e->lanes)};
  LLVMValueRef args[4] = {ptrs, LLVMConstInt(c->i32, 4, 0), mask, LLVMConstNull(vt)};
  return call_intr(c, "llvm.masked.gather", tys, 2, args, 4);
}

static LLVMValueRef gen_bin(cg *c, cgfn *F, const lexpr *e) {
  LLVMValueRef a = gen(c, F, e->a), b = gen(c, F, e->b), r = NULL;
  LLVMBuilderRef B = c->b;
  switch (e->op) {
  case LO_ADD: return LLVMBuildNSWAdd(B, a, b, "");
  case LO_SUB: return LLVMBuildNSWSub(B, a, b, "");
  case LO_MUL: return LLVMBuildNSWMul(B, a, b, "");
  case LO_DIV: {   /* floor division (divisors are positive) */
    LLVMValueRef q = LLVMBuildSDiv(B, a, b, ""), rem = LLVMBuildSRem(B, a, b, "");
    LLVMValueRef neg = LLVMBuildICmp(B, LLVMIntSLT, rem, LLVMConstInt(c->i64, 0, 0), "");
    return LLVMBuildSelect(B, neg, LLVMBuildSub(B, q, LLVMConstInt(c->i64, 1, 0), ""), q, "");
  }
  case LO_MOD: {
    LLVMValueRef rem = LLVMBuildSRem(B, a, b, "");
    LLVMValueRef neg = LLVMBuildICmp(B, LLVMIntSLT, rem, LLVMConstInt(c->i64, 0, 0), "");
    return LLVMBuildSelect(B, neg, LLVMBuildAdd(B, rem, b, ""), rem, "");
  }
  case LO_MIN: return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, a, b, ""), a, b, "");
  case LO_MAX: return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSGT, a, b, ""), a, b, "");
  case LO_LT: return LLVMBuildICmp(B, LLVMIntSLT, a, b, "");
  case LO_LE: return LLVMBuildICmp(B, LLVMIntSLE, a, b, "");
  case LO_EQ: return LLVMBuildICmp(B, LLVMIntEQ, a, b, "");
  case LO_AND: return LLVMBuildAnd(B, to_bool(c, a), to_bool(c, b), "");
  case LO_OR: return LLVMBuildOr(B, to_bool(c, a), to_bool(c, b), "");
  case LO_FADD: r = LLVMBuildFAdd(B, a, b, ""); break;
  case LO_FSUB: r = LLVMBuildFSub(B, a, b, ""); break;
  case LO_FMUL: r = LLVMBuildFMul(B, a, b, ""); break;
  case LO_FDIV: r = LLVMBuildFDiv(B, a, b, ""); break;
  case LO_FMAX: case LO_FMIN: {
    LLVMTypeRef t = LLVMTypeOf(a);
    LLVMValueRef args[2] = {a, b};
    return call_intr(c, e->op == LO_FMAX ? "llvm.maxnum" : "llvm.minnum", &t, 1, args, 2);
  }
  case LO_FLT: return LLVMBuildFCmp(B, LLVMRealOLT, a, b, "");
  case LO_FGT: return LLVMBuildFCmp(B, LLVMRealOGT, a, b, "");
  default: break;
  }
  if (r) set_fast(r, 0);
  return r;
}

static uint64_t ex_hash(const lexpr *e) {
  uint64_t h = (uint64_t)e->k * 0x9E3779B97F4A7C15ull ^ (uint64_t)e->op * 31 ^ (uint64_t)e->lanes * 131 ^
               (uint64_t)e->ival * 0x100000001B3ull ^ (uint64_t)e->id * 7919 ^ (uint64_t)e->stride * 104729;
  uint64_t fb;
  memcpy(&fb, &e->fval, sizeof fb);
  h ^= fb * 0xff51afd7ed558ccdull;
  const lexpr *kids[4] = {e->a, e->b, e->c, e->limit};
  for (int i = 0; i < 4; i++) h = h * 1099511628211ull ^ (kids[i] ? ex_hash(kids[i]) : 0);
  return h;
}

static int ex_equal(const lexpr *x, const lexpr *y) {
  if (x == y) return 1;
  if (!x || !y || x->k != y->k || x->op != y->op || x->lanes != y->lanes || x->is_float != y->is_float || x->ival != y->ival ||
      x->fval != y->fval || x->id != y->id || x->stride != y->stride)
    return 0;
  return ex_equal(x->a, y->a) && ex_equal(x->b, y->b) && ex_equal(x->c, y->c) && ex_equal(x->limit, y->limit);
}

/* what e reads: -1 if too many to track */
static int ex_deps(const lexpr *e, int *dep, int n) {
  if (!e || n < 0) return n;
  int d = e->k == LX_VAR ? e->id : e->k == LX_SLOT ? -(e->id + 2) : e->k == LX_LOAD ? -1 : INT32_MIN;
  if (d != INT32_MIN) {
    int have = 0;
    for (int i = 0; i < n; i++) have |= dep[i] == d;
    if (!have) {
      if (n == CSE_DEPS) return -1;
      dep[n++] = d;
    }
  }
  n = ex_deps(e->a, dep, n);
  n = ex_deps(e->b, dep, n);
  n = ex_deps(e->c, dep, n);
  return ex_deps(e->limit, dep, n);
}

static unsigned dep_ver(cgfn *F, int d) { return d >= 0 ? F->var_ver[d] : d == -1 ? F->mem_ver : F->slot_ver[-d - 2]; }

static LLVMValueRef gen_raw(cg *c, cgfn *F, const lexpr *e);

static LLVMValueRef gen(cg *c, cgfn *F, const lexpr *e) {
  if (e->k == LX_INT || e->k == LX_FLT || !F->cse) return gen_raw(c, F, e);
  uint64_t h = ex_hash(e);
  LLVMBasicBlockRef bb = LLVMGetInsertBlock(c->b);
  cse_entry *slot = &F->cse[h % CSE_SIZE];
  if (slot->e && slot->hash == h && slot->bb == bb && ex_equal(slot->e, e)) {
    int ok = 1;
    for (int i = 0; i < slot->n_deps && ok; i++) ok = dep_ver(F, slot->dep[i]) == slot->ver[i];
    if (ok) return slot->v;
  }
  LLVMValueRef v = gen_raw(c, F, e);
  int dep[CSE_DEPS];
  int nd = ex_deps(e, dep, 0);
  if (nd >= 0 && LLVMGetInsertBlock(c->b) == bb) {
    *slot = (cse_entry){.e = e, .hash = h, .v = v, .bb = bb, .n_deps = nd};
    for (int i = 0; i < nd; i++) slot->dep[i] = dep[i], slot->ver[i] = dep_ver(F, dep[i]);
  }
  return v;
}

static LLVMValueRef gen_raw(cg *c, cgfn *F, const lexpr *e) {
  switch (e->k) {
  case LX_INT: return LLVMConstInt(c->i64, (unsigned long long)e->ival, 1);
  case LX_FLT: {
    LLVMValueRef v = LLVMConstReal(c->f32, e->fval);
    if (e->lanes == 1) return v;
    LLVMValueRef el[64];
    for (int i = 0; i < e->lanes; i++) el[i] = v;
    return LLVMConstVector(el, (unsigned)e->lanes);
  }
  case LX_VAR: return LLVMBuildLoad2(c->b, c->i64, F->vars[e->id], "");
  case LX_SLOT:
    if (!F->slot_set[e->id] && F->slot_val[e->id]) return F->slot_val[e->id];
    return LLVMBuildLoad2(c->b, vty(c, e->lanes), F->slots[e->id], "");
  case LX_BIN: return gen_bin(c, F, e);
  case LX_UN: {
    LLVMValueRef a = gen(c, F, e->a);
    LLVMTypeRef t = LLVMTypeOf(a);
    if (e->op == LO_NEG) return LLVMBuildFNeg(c->b, a, "");
    if (e->op == LO_HSUM) {
      LLVMValueRef args[2] = {LLVMConstReal(c->f32, -0.0), a};
      LLVMValueRef r = call_intr(c, "llvm.vector.reduce.fadd", &t, 1, args, 2);
      set_fast(r, 1);
      return r;
    }
    if (e->op == LO_EXP) return gen_exp(c, a);
    return call_intr(c, "llvm.sqrt", &t, 1, &a, 1);
  }
  case LX_SELECT: {
    LLVMValueRef cond = to_bool(c, gen(c, F, e->c));
    return LLVMBuildSelect(c->b, cond, gen(c, F, e->a), gen(c, F, e->b), "");
  }
  case LX_LOAD: return gen_load(c, F, e);
  case LX_BCAST: return splat(c, gen(c, F, e->a), e->lanes);
  case LX_FMA: {
    LLVMValueRef args[3] = {gen(c, F, e->a), gen(c, F, e->b), gen(c, F, e->c)};
    LLVMTypeRef t = LLVMTypeOf(args[0]);
    return call_intr(c, "llvm.fma", &t, 1, args, 3);
  }
  case LX_I2F: return LLVMBuildSIToFP(c->b, gen(c, F, e->a), c->f32, "");
  case LX_SPLAT_GROUPS: {
    LLVMValueRef a = gen(c, F, e->a), el[64];
    for (int l = 0; l < e->lanes; l++) el[l] = LLVMConstInt(c->i32, (unsigned long long)((l / e->stride) * e->stride + e->ival), 0);
    return LLVMBuildShuffleVector(c->b, a, LLVMGetPoison(LLVMTypeOf(a)), LLVMConstVector(el, (unsigned)e->lanes), "");
  }
  }
  return NULL;
}

static void gen_stmt(cg *c, cgfn *F, const lstmt *s);

static void gen_store(cg *c, cgfn *F, const lstmt *s) {
  LLVMValueRef v = gen(c, F, s->val), idx = gen(c, F, s->idx), base = F->bufs[s->id];
  LLVMValueRef p = LLVMBuildGEP2(c->b, c->f32, base, &idx, 1, "");
  int lanes = s->val->lanes;
  if (lanes == 1 || (s->stride == 1 && !s->limit)) {
    LLVMValueRef st = LLVMBuildStore(c->b, v, p);
    LLVMSetAlignment(st, 4);
    return;
  }
  LLVMTypeRef vt = vty(c, lanes);
  LLVMValueRef mask = lane_mask(c, F, s->limit, lanes);
  if (s->stride == 1) {
    LLVMTypeRef tys[2] = {vt, c->ptr};
    LLVMValueRef args[4] = {v, p, LLVMConstInt(c->i32, 4, 0), mask};
    call_intr(c, "llvm.masked.store", tys, 2, args, 4);
    return;
  }
  LLVMValueRef ptrs = lane_ptrs(c, base, idx, s->stride, lanes);
  LLVMTypeRef tys[2] = {vt, LLVMVectorType(c->ptr, (unsigned)lanes)};
  LLVMValueRef args[4] = {v, ptrs, LLVMConstInt(c->i32, 4, 0), mask};
  call_intr(c, "llvm.masked.scatter", tys, 2, args, 4);
}

/* a serial loop over [lo, lo + ext) on var (an alloca) */
static void gen_loop(cg *c, cgfn *F, int var, LLVMValueRef lo, LLVMValueRef end, LLVMValueRef first, const lstmt *s) {
  LLVMBuilderRef B = c->b;
  LLVMBasicBlockRef cond = LLVMAppendBasicBlockInContext(c->ctx, F->fn, "loop.cond");
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c->ctx, F->fn, "loop.body");
  LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(c->ctx, F->fn, "loop.exit");
  LLVMBuildStore(B, lo, F->vars[var]);
  F->var_ver[var]++;
  if (s->first_var >= 0) {   /* the thread's first iteration: lo here; when outlined, see gen_parallel */
    LLVMBuildStore(B, first ? first : lo, F->vars[s->first_var]);
    F->var_ver[s->first_var]++;
  }
  LLVMBuildBr(B, cond);
  LLVMPositionBuilderAtEnd(B, cond);
  LLVMValueRef i = LLVMBuildLoad2(B, c->i64, F->vars[var], "");
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, i, end, ""), body, exit);
  LLVMPositionBuilderAtEnd(B, body);
  for (int k = 0; k < s->n_body; k++) gen_stmt(c, F, s->body[k]);
  LLVMValueRef i2 = LLVMBuildLoad2(B, c->i64, F->vars[var], "");
  LLVMBuildStore(B, LLVMBuildNSWAdd(B, i2, LLVMConstInt(c->i64, 1, 0), ""), F->vars[var]);
  F->var_ver[var]++;
  LLVMBuildBr(B, cond);
  LLVMPositionBuilderAtEnd(B, exit);
}

static void fn_attrs(cg *c, LLVMValueRef fn) {
  LLVMAddTargetDependentFunctionAttr(fn, "target-cpu", c->t->cpu);
  LLVMAddTargetDependentFunctionAttr(fn, "target-features", c->t->features);
  unsigned kind = LLVMGetEnumAttributeKindForName("nounwind", 8);
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c->ctx, kind, 0));
}

/* allocas for every var and slot, at the top of the function; -1 (and
 * c->oom) out of memory */
static int fn_allocas(cg *c, cgfn *F) {
  F->vars = calloc((size_t)c->lf->n_vars + 1, sizeof(LLVMValueRef));
  F->slots = calloc((size_t)c->lf->n_slots + 1, sizeof(LLVMValueRef));
  F->var_ver = calloc((size_t)c->lf->n_vars + 1, sizeof(unsigned));
  F->slot_ver = calloc((size_t)c->lf->n_slots + 1, sizeof(unsigned));
  F->cse = calloc(CSE_SIZE, sizeof(cse_entry));
  if (!F->vars || !F->slots || !F->var_ver || !F->slot_ver || !F->cse) {
    c->oom = 1;
    return -1;
  }
  for (int i = 0; i < c->lf->n_vars; i++) F->vars[i] = LLVMBuildAlloca(c->b, c->i64, c->lf->var_names[i]);
  for (int i = lf_n_args(c->lf); i < c->lf->n_bufs; i++) {   /* local buffers: this function's own */
    LLVMValueRef a = LLVMBuildAlloca(c->b, LLVMArrayType2(c->f32, (uint64_t)c->lf->bufs[i].size), c->lf->bufs[i].name);
    LLVMSetAlignment(a, 64);
    F->bufs[i] = a;
  }
  F->slot_set = c->slot_set;
  F->slot_val = calloc((size_t)c->lf->n_slots + 1, sizeof(LLVMValueRef));
  if (!F->slot_val) {
    c->oom = 1;
    return -1;
  }
  for (int i = 0; i < c->lf->n_slots; i++)
    if (c->slot_set[i]) F->slots[i] = LLVMBuildAlloca(c->b, vty(c, c->lf->slot_lanes[i]), "acc");
  if (c->has_pfnext) {   /* the stream's state in registers, from and back to the runtime at entry and exit */
    F->pf_at = LLVMBuildAlloca(c->b, c->ptr, "pf_at");
    F->pf_end = LLVMBuildAlloca(c->b, c->ptr, "pf_end");
    F->pf_lines = LLVMBuildAlloca(c->b, c->i64, "pf_lines");
    LLVMValueRef a[3] = {F->pf_at, F->pf_end, F->pf_lines};
    LLVMBuildCall2(c->b, c->pfstate_ty, c->pfstate, a, 3, "");
  }
  return 0;
}

static void fn_return(cg *c, cgfn *F) {
  if (F->pf_at) {
    LLVMValueRef at = LLVMBuildLoad2(c->b, c->ptr, F->pf_at, "");
    LLVMBuildCall2(c->b, c->pfsave_ty, c->pfsave, &at, 1, "");
  }
  LLVMBuildRetVoid(c->b);
}

static void fn_free(cgfn *F) {
  free(F->slot_val);
  free(F->vars);
  free(F->slots);
  free(F->var_ver);
  free(F->slot_ver);
  free(F->cse);
}

static void load_bufs(cg *c, cgfn *F, LLVMValueRef args) {
  for (int i = 0; i < lf_n_args(c->lf); i++) {
    LLVMValueRef idx = LLVMConstInt(c->i64, (unsigned long long)i, 0);
    LLVMValueRef p = LLVMBuildGEP2(c->b, c->ptr, args, &idx, 1, "");
    F->bufs[i] = LLVMBuildLoad2(c->b, c->ptr, p, c->lf->bufs[i].name);
  }
}

/* ctx layout: [0] = args pointer, [1 + v] = value of var v */
static void gen_parallel(cg *c, cgfn *F, const lstmt *s, LLVMValueRef lo, LLVMValueRef ext) {
  LLVMBuilderRef B = c->b;
  int nv = c->lf->n_vars;
  char name[160];
  snprintf(name, sizeof name, "%s.par%d", c->lf->name, c->n_outlined++);
  LLVMValueRef sub = LLVMAddFunction(c->mod, name, c->task_ty);
  LLVMSetLinkage(sub, LLVMInternalLinkage);
  fn_attrs(c, sub);
  /* caller: pack ctx and call the pool */
  LLVMTypeRef ctx_ty = LLVMArrayType(c->i64, (unsigned)(nv + 1));
  LLVMBasicBlockRef here = LLVMGetInsertBlock(B);
  LLVMPositionBuilder(B, F->entry, LLVMGetFirstInstruction(F->entry));
  LLVMValueRef ctx = LLVMBuildAlloca(B, ctx_ty, "ctx");
  LLVMPositionBuilderAtEnd(B, here);
  LLVMValueRef zero = LLVMConstInt(c->i64, 0, 0);
  LLVMValueRef args_ptr = LLVMGetParam(F->fn, 0);
  LLVMValueRef slot0 = LLVMBuildGEP2(B, c->i64, ctx, &zero, 1, "");
  LLVMBuildStore(B, args_ptr, slot0);
  LLVMBuildStore(B, lo, F->vars[s->id]);
  for (int v = 0; v < nv; v++) {
    LLVMValueRef idx = LLVMConstInt(c->i64, (unsigned long long)(v + 1), 0);
    LLVMValueRef p = LLVMBuildGEP2(B, c->i64, ctx, &idx, 1, "");
    LLVMBuildStore(B, LLVMBuildLoad2(B, c->i64, F->vars[v], ""), p);
  }
  LLVMValueRef cargs[4] = {F->pool, sub, ctx, ext};
  LLVMBuildCall2(B, c->pfor_ty, c->pfor, cargs, 4, "");
  /* the outlined body */
  cgfn G = {.fn = sub};
  G.entry = LLVMAppendBasicBlockInContext(c->ctx, sub, "entry");
  LLVMPositionBuilderAtEnd(B, G.entry);
  if (fn_allocas(c, &G)) { fn_free(&G); return; }
  LLVMValueRef gctx = LLVMGetParam(sub, 0);
  LLVMValueRef gargs = LLVMBuildLoad2(B, c->ptr, gctx, "args");
  G.pool = LLVMConstNull(c->ptr);   /* nested parallel loops run serially */
  load_bufs(c, &G, gargs);
  for (int v = 0; v < nv; v++) {
    LLVMValueRef idx = LLVMConstInt(c->i64, (unsigned long long)(v + 1), 0);
    LLVMValueRef p = LLVMBuildGEP2(B, c->i64, gctx, &idx, 1, "");
    LLVMBuildStore(B, LLVMBuildLoad2(B, c->i64, p, ""), G.vars[v]);
  }
  LLVMValueRef base = LLVMBuildLoad2(B, c->i64, G.vars[s->id], "");
  LLVMValueRef begin = LLVMBuildNSWAdd(B, base, LLVMGetParam(sub, 1), "");
  LLVMValueRef end = LLVMBuildNSWAdd(B, base, LLVMGetParam(sub, 2), "");
  /* a thread's first chunk starts at base + temper_task_first(); a later
   * chunk (the pool balances threads with chunks) has no first iteration */
  LLVMValueRef first = NULL;
  if (s->first_var >= 0) {
    LLVMValueRef tf = LLVMBuildCall2(B, c->tfirst_ty, c->tfirst, NULL, 0, "");
    first = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, tf, LLVMConstInt(c->i64, 0, 0), ""), LLVMConstInt(c->i64, (unsigned long long)-1, 1),
                            LLVMBuildNSWAdd(B, base, tf, ""), "first");
  }
  gen_loop(c, &G, s->id, begin, end, first, s);
  fn_return(c, &G);
  fn_free(&G);
  LLVMPositionBuilderAtEnd(B, here);
}

static void gen_stmt(cg *c, cgfn *F, const lstmt *s) {
  if (c->oom) return;
  LLVMBuilderRef B = c->b;
  switch (s->k) {
  case LS_SEQ:
    for (int i = 0; i < s->n_body; i++) gen_stmt(c, F, s->body[i]);
    break;
  case LS_FOR: {
    LLVMValueRef lo = gen(c, F, s->lo), ext = gen(c, F, s->ext);
    if (s->loop == LOOP_PARALLEL && !LLVMIsNull(F->pool)) gen_parallel(c, F, s, lo, ext);
    else gen_loop(c, F, s->id, lo, LLVMBuildNSWAdd(B, lo, ext, ""), NULL, s);
    break;
  }
  case LS_LET: LLVMBuildStore(B, gen(c, F, s->val), F->vars[s->id]); F->var_ver[s->id]++; break;
  case LS_DECL: case LS_SET: {
    LLVMValueRef v = gen(c, F, s->val);
    if (!c->slot_set[s->id]) F->slot_val[s->id] = v;   /* single assignment: no memory */
    else LLVMBuildStore(B, v, F->slots[s->id]);
    F->slot_ver[s->id]++;
    break;
  }
  case LS_STORE: gen_store(c, F, s); F->mem_ver++; break;
  case LS_PREFETCH_NEXT: {   /* the next ceil(lines / calls) lines of the stream, inline: no call in the loop nest */
    LLVMValueRef calls = LLVMConstInt(c->i64, (unsigned long long)s->val->ival, 0);
    LLVMValueRef lines = LLVMBuildLoad2(B, c->i64, F->pf_lines, ""), at0 = LLVMBuildLoad2(B, c->ptr, F->pf_at, "");
    LLVMValueRef k = LLVMBuildSDiv(B, LLVMBuildAdd(B, lines, LLVMBuildSub(B, calls, LLVMConstInt(c->i64, 1, 0), ""), ""), calls, "");
    LLVMValueRef kb = LLVMBuildMul(B, k, LLVMConstInt(c->i64, 64, 0), "");
    LLVMValueRef lim = LLVMBuildGEP2(B, LLVMInt8TypeInContext(c->ctx), at0, &kb, 1, "");
    LLVMValueRef end = LLVMBuildLoad2(B, c->ptr, F->pf_end, "");
    LLVMBasicBlockRef cond = LLVMAppendBasicBlockInContext(c->ctx, F->fn, "pf.cond");
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c->ctx, F->fn, "pf.body");
    LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(c->ctx, F->fn, "pf.exit");
    LLVMBuildBr(B, cond);
    LLVMPositionBuilderAtEnd(B, cond);
    LLVMValueRef at = LLVMBuildLoad2(B, c->ptr, F->pf_at, "");
    LLVMValueRef go = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntULT, at, lim, ""), LLVMBuildICmp(B, LLVMIntULT, at, end, ""), "");
    LLVMBuildCondBr(B, go, body, exit);
    LLVMPositionBuilderAtEnd(B, body);
    LLVMTypeRef tys[1] = {c->ptr};
    LLVMValueRef args[4] = {at, LLVMConstInt(c->i32, 0, 0), LLVMConstInt(c->i32, 2, 0), LLVMConstInt(c->i32, 1, 0)};
    call_intr(c, "llvm.prefetch", tys, 1, args, 4);
    LLVMValueRef step = LLVMConstInt(c->i64, 64, 0);
    LLVMBuildStore(B, LLVMBuildGEP2(B, LLVMInt8TypeInContext(c->ctx), at, &step, 1, ""), F->pf_at);
    LLVMBuildBr(B, cond);
    LLVMPositionBuilderAtEnd(B, exit);
    break;
  }
  case LS_PREFETCH: {   /* llvm.prefetch(ptr, read, keep in every level, data) */
    LLVMValueRef idx = gen(c, F, s->idx);
    LLVMValueRef p = LLVMBuildGEP2(B, c->f32, F->bufs[s->id], &idx, 1, "");
    LLVMTypeRef tys[1] = {c->ptr};
    LLVMValueRef args[4] = {p, LLVMConstInt(c->i32, 0, 0), LLVMConstInt(c->i32, 3, 0), LLVMConstInt(c->i32, 1, 0)};
    call_intr(c, "llvm.prefetch", tys, 1, args, 4);
    break;
  }
  case LS_IF: {
    LLVMBasicBlockRef th = LLVMAppendBasicBlockInContext(c->ctx, F->fn, "then");
    LLVMBasicBlockRef el = LLVMAppendBasicBlockInContext(c->ctx, F->fn, "else");
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(c->ctx, F->fn, "join");
    LLVMBuildCondBr(B, to_bool(c, gen(c, F, s->cond)), th, el);
    LLVMPositionBuilderAtEnd(B, th);
    gen_stmt(c, F, s->body[0]);
    LLVMBuildBr(B, join);
    LLVMPositionBuilderAtEnd(B, el);
    gen_stmt(c, F, s->body[1]);
    LLVMBuildBr(B, join);
    LLVMPositionBuilderAtEnd(B, join);
    break;
  }
  }
}

static int has_pfnext(const lstmt *s) {
  if (s->k == LS_PREFETCH_NEXT) return 1;
  for (int i = 0; i < s->n_body; i++)
    if (has_pfnext(s->body[i])) return 1;
  return 0;
}

static void mark_sets(const lstmt *s, char *set) {
  if (s->k == LS_SET) set[s->id] = 1;
  for (int i = 0; i < s->n_body; i++) mark_sets(s->body[i], set);
}

static void gen_kernel(cg *c, const lfunc *f) {
  c->lf = f;
  c->n_outlined = 0;
  c->slot_set = calloc((size_t)f->n_slots + 1, 1);
  if (!c->slot_set) { c->oom = 1; return; }
  mark_sets(f->body, c->slot_set);
  c->has_pfnext = has_pfnext(f->body);
  LLVMTypeRef params[2] = {c->ptr, c->ptr};
  LLVMValueRef fn = LLVMAddFunction(c->mod, f->name, LLVMFunctionType(c->void_t, params, 2, 0));
  fn_attrs(c, fn);
  cgfn F = {.fn = fn, .pool = LLVMGetParam(fn, 1)};
  F.entry = LLVMAppendBasicBlockInContext(c->ctx, fn, "entry");
  LLVMPositionBuilderAtEnd(c->b, F.entry);
  if (fn_allocas(c, &F)) {
    fn_free(&F);
    free(c->slot_set);
    c->slot_set = NULL;
    return;
  }
  load_bufs(c, &F, LLVMGetParam(fn, 0));
  /* a non-constant pool: outline parallel loops at run time's choice */
  F.pool = LLVMGetParam(fn, 1);
  gen_stmt(c, &F, f->body);
  fn_return(c, &F);
  fn_free(&F);
  free(c->slot_set);
  c->slot_set = NULL;
}

static void cg_begin(cg *c, LLVMContextRef ctx, const cg_target *t, diag *d) {
  memset(c, 0, sizeof *c);
  c->ctx = ctx;
  c->t = t;
  c->d = d;
  c->mod = LLVMModuleCreateWithNameInContext("temper", ctx);
  c->b = LLVMCreateBuilderInContext(ctx);
  c->i1 = LLVMInt1TypeInContext(ctx);
  c->i32 = LLVMInt32TypeInContext(ctx);
  c->i64 = LLVMInt64TypeInContext(ctx);
  c->f32 = LLVMFloatTypeInContext(ctx);
  c->ptr = LLVMPointerTypeInContext(ctx, 0);
  c->void_t = LLVMVoidTypeInContext(ctx);
  LLVMTypeRef tp[3] = {c->ptr, c->i64, c->i64};
  c->task_ty = LLVMFunctionType(c->void_t, tp, 3, 0);
  LLVMTypeRef pp[4] = {c->ptr, c->ptr, c->ptr, c->i64};
  c->pfor_ty = LLVMFunctionType(c->void_t, pp, 4, 0);
  c->pfor = LLVMAddFunction(c->mod, "temper_parallel_for", c->pfor_ty);
  c->tfirst_ty = LLVMFunctionType(c->i64, NULL, 0, 0);
  c->tfirst = LLVMAddFunction(c->mod, "temper_task_first", c->tfirst_ty);
  LLVMTypeRef sp[3] = {c->ptr, c->ptr, c->ptr};
  c->pfstate_ty = LLVMFunctionType(c->void_t, sp, 3, 0);
  c->pfstate = LLVMAddFunction(c->mod, "temper_prefetch_state", c->pfstate_ty);
  c->pfsave_ty = LLVMFunctionType(c->void_t, &c->ptr, 1, 0);
  c->pfsave = LLVMAddFunction(c->mod, "temper_prefetch_save", c->pfsave_ty);
}

/* verify, set the target, O3 */
static temper_status cg_finish(cg *c, LLVMTargetMachineRef tm) {
  char *err = NULL;
  LLVMDisposeBuilder(c->b);
  c->b = NULL;
  if (c->oom) return diag_fail(c->d, TEMPER_ENOMEM, "out of memory generating LLVM IR");
  if (LLVMVerifyModule(c->mod, LLVMReturnStatusAction, &err)) {
    temper_status s = diag_fail(c->d, TEMPER_EINTERNAL, "generated LLVM IR is invalid: %.1500s", err);
    LLVMDisposeMessage(err);
    return s;
  }
  LLVMDisposeMessage(err);
  if (getenv("TEMPER_TIMING")) {
    long n = 0;
    for (LLVMValueRef fn = LLVMGetFirstFunction(c->mod); fn; fn = LLVMGetNextFunction(fn))
      for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
        for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in)) n++;
    fprintf(stderr, "codegen: %ld instructions before optimisation\n", n);
  }
  LLVMSetTarget(c->mod, c->t->triple);
  LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
  char *dls = LLVMCopyStringRepOfTargetData(dl);
  LLVMSetDataLayout(c->mod, dls);
  LLVMDisposeMessage(dls);
  LLVMDisposeTargetData(dl);
  LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
  LLVMPassBuilderOptionsSetLoopVectorization(opts, 1);
  LLVMPassBuilderOptionsSetSLPVectorization(opts, 1);
  /* the schedule decides what is unrolled (unroll_kw, unroll_ic); LLVM unrolling
   * small loops on its own multiplies compile time for no speed */
  LLVMPassBuilderOptionsSetLoopUnrolling(opts, getenv("TEMPER_LLVM_UNROLL") != NULL);
  const char *pipeline = getenv("TEMPER_PASSES") ? getenv("TEMPER_PASSES") : "default<O3>";
  LLVMErrorRef e = LLVMRunPasses(c->mod, pipeline, tm, opts);
  LLVMDisposePassBuilderOptions(opts);
  if (e) return llvm_fail(c->d, e, "optimisation");
  return TEMPER_OK;
}

/* ---- JIT ---- */
struct cg_jit {
  LLVMOrcLLJITRef jit;
  LLVMTargetMachineRef tm;   /* for the optimisation pipeline */
  cg_target t;
};

temper_status cg_jit_create(cg_jit **out, const cg_target *t, diag *d) {
  pthread_once(&init_once, init_llvm);
  *out = NULL;
  cg_jit *j = calloc(1, sizeof *j);
  if (!j) return diag_fail(d, TEMPER_ENOMEM, "out of memory");
  j->t = *t;
  if (!(j->tm = make_tm(t, d))) { free(j); return d->status; }
  LLVMOrcJITTargetMachineBuilderRef jtmb;
  LLVMErrorRef e = LLVMOrcJITTargetMachineBuilderDetectHost(&jtmb);
  if (e) { LLVMDisposeTargetMachine(j->tm); free(j); return llvm_fail(d, e, "detecting the host"); }
  LLVMOrcLLJITBuilderRef b = LLVMOrcCreateLLJITBuilder();
  LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(b, jtmb);
  e = LLVMOrcCreateLLJIT(&j->jit, b);
  if (e) { LLVMDisposeTargetMachine(j->tm); free(j); return llvm_fail(d, e, "creating the JIT"); }
  /* the runtime's entry points, and libm (expf) from the process */
  LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(j->jit);
  LLVMJITSymbolFlags fl = {LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable, 0};
  LLVMOrcCSymbolMapPair sym[4] = {
      {LLVMOrcLLJITMangleAndIntern(j->jit, "temper_parallel_for"), {(LLVMOrcJITTargetAddress)(uintptr_t)&temper_parallel_for, fl}},
      {LLVMOrcLLJITMangleAndIntern(j->jit, "temper_task_first"), {(LLVMOrcJITTargetAddress)(uintptr_t)&temper_task_first, fl}},
      {LLVMOrcLLJITMangleAndIntern(j->jit, "temper_prefetch_state"), {(LLVMOrcJITTargetAddress)(uintptr_t)&temper_prefetch_state, fl}},
      {LLVMOrcLLJITMangleAndIntern(j->jit, "temper_prefetch_save"), {(LLVMOrcJITTargetAddress)(uintptr_t)&temper_prefetch_save, fl}}};
  e = LLVMOrcJITDylibDefine(jd, LLVMOrcAbsoluteSymbols(sym, 4));
  LLVMOrcDefinitionGeneratorRef gen_ref;
  if (!e) e = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen_ref, LLVMOrcLLJITGetGlobalPrefix(j->jit), NULL, NULL);
  if (e) { cg_jit_destroy(j); return llvm_fail(d, e, "setting up JIT symbols"); }
  LLVMOrcJITDylibAddGenerator(jd, gen_ref);
  *out = j;
  return TEMPER_OK;
}

void cg_jit_destroy(cg_jit *j) {
  if (!j) return;
  if (j->jit) LLVMOrcDisposeLLJIT(j->jit);
  if (j->tm) LLVMDisposeTargetMachine(j->tm);
  free(j);
}

temper_status cg_jit_add(cg_jit *j, lfunc *const *fs, int n, temper_kernel_fn *fns, diag *d) {
  LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
  cg c;
  double t0 = data_now();
  cg_begin(&c, LLVMOrcThreadSafeContextGetContext(tsc), &j->t, d);
  for (int i = 0; i < n; i++) gen_kernel(&c, fs[i]);
  double t1 = data_now();
  temper_status s = cg_finish(&c, j->tm);
  double t2 = data_now();
  if (s) {
    LLVMDisposeModule(c.mod);
    LLVMOrcDisposeThreadSafeContext(tsc);
    return s;
  }
  LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(c.mod, tsc);
  LLVMOrcDisposeThreadSafeContext(tsc);
  LLVMErrorRef e = LLVMOrcLLJITAddLLVMIRModule(j->jit, LLVMOrcLLJITGetMainJITDylib(j->jit), tsm);
  if (e) return llvm_fail(d, e, "adding a module");   /* the JIT owns tsm even when it fails */
  for (int i = 0; i < n; i++) {
    LLVMOrcExecutorAddress addr = 0;
    e = LLVMOrcLLJITLookup(j->jit, &addr, fs[i]->name);
    if (e) return llvm_fail(d, e, "looking up a kernel");
    fns[i] = (temper_kernel_fn)(uintptr_t)addr;
  }
  if (getenv("TEMPER_TIMING"))
    fprintf(stderr, "codegen: %d kernels: build IR %.1f ms, optimise %.1f ms, machine code %.1f ms\n", n, (t1 - t0) * 1e3,
            (t2 - t1) * 1e3, (data_now() - t2) * 1e3);
  return TEMPER_OK;
}

temper_status cg_print_llvm(const cg_target *t, lfunc *f, int assembly, char **text, diag *d) {
  pthread_once(&init_once, init_llvm);
  *text = NULL;
  LLVMTargetMachineRef tm = make_tm(t, d);
  if (!tm) return d->status;
  LLVMContextRef ctx = LLVMContextCreate();
  cg c;
  cg_begin(&c, ctx, t, d);
  gen_kernel(&c, f);
  temper_status s = cg_finish(&c, tm);
  if (s == TEMPER_OK && !assembly) {
    char *ir = LLVMPrintModuleToString(c.mod);
    *text = strdup(ir);
    LLVMDisposeMessage(ir);
    if (!*text) s = diag_fail(d, TEMPER_ENOMEM, "out of memory");
  } else if (s == TEMPER_OK) {
    char *err = NULL;
    LLVMMemoryBufferRef mb = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, c.mod, LLVMAssemblyFile, &err, &mb)) {
      s = diag_fail(d, TEMPER_ELLVM, "LLVM: emitting assembly: %s", err);
      LLVMDisposeMessage(err);
    } else {
      size_t n = LLVMGetBufferSize(mb);
      *text = malloc(n + 1);
      if (*text) {
        memcpy(*text, LLVMGetBufferStart(mb), n);
        (*text)[n] = 0;
      } else {
        s = diag_fail(d, TEMPER_ENOMEM, "out of memory");
      }
      LLVMDisposeMemoryBuffer(mb);
    }
  }
  LLVMDisposeModule(c.mod);
  LLVMContextDispose(ctx);
  LLVMDisposeTargetMachine(tm);
  return s;
}

/* ---- object code: what builder threads make and the runner loads ---- */
struct cg_compiler {
  LLVMTargetMachineRef tm;
  cg_target t;
};

temper_status cg_compiler_create(cg_compiler **out, const cg_target *t, diag *d) {
  pthread_once(&init_once, init_llvm);
  *out = NULL;
  cg_compiler *cc = calloc(1, sizeof *cc);
  if (!cc) return diag_fail(d, TEMPER_ENOMEM, "out of memory");
  cc->t = *t;
  if (!(cc->tm = make_tm(t, d))) { free(cc); return d->status; }
  *out = cc;
  return TEMPER_OK;
}

void cg_compiler_destroy(cg_compiler *cc) {
  if (!cc) return;
  LLVMDisposeTargetMachine(cc->tm);
  free(cc);
}

temper_status cg_compile_object(cg_compiler *cc, lfunc *const *fs, int n, char **data, size_t *size, diag *d) {
  return cg_emit(cc, fs, n, NULL, 0, NULL, CG_EMIT_OBJ, data, size, d);
}

/* kernels (and a constant blob, 64-byte aligned) as object code, assembly or LLVM IR */
temper_status cg_emit(cg_compiler *cc, lfunc *const *fs, int n, const void *blob, size_t blob_size, const char *blob_name,
                      cg_emit_kind kind, char **data, size_t *size, diag *d) {
  *data = NULL;
  *size = 0;
  LLVMContextRef ctx = LLVMContextCreate();
  cg c;
  cg_begin(&c, ctx, &cc->t, d);
  for (int i = 0; i < n; i++) gen_kernel(&c, fs[i]);
  if (blob_name) {
    LLVMValueRef init = LLVMConstStringInContext(ctx, blob ? (const char *)blob : "", (unsigned)blob_size, 1);
    LLVMValueRef gv = LLVMAddGlobal(c.mod, LLVMTypeOf(init), blob_name);
    LLVMSetInitializer(gv, init);
    LLVMSetGlobalConstant(gv, 1);
    LLVMSetAlignment(gv, 64);
    LLVMSetLinkage(gv, LLVMExternalLinkage);
  }
  temper_status s = cg_finish(&c, cc->tm);
  if (!s && kind == CG_EMIT_LLVM) {
    char *ir = LLVMPrintModuleToString(c.mod);
    *size = strlen(ir);
    *data = strdup(ir);
    LLVMDisposeMessage(ir);
    if (!*data) s = diag_fail(d, TEMPER_ENOMEM, "out of memory");
  } else if (!s) {
    char *err = NULL;
    LLVMMemoryBufferRef mb = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(cc->tm, c.mod, kind == CG_EMIT_ASM ? LLVMAssemblyFile : LLVMObjectFile, &err, &mb)) {
      s = diag_fail(d, TEMPER_ELLVM, "LLVM: emitting object code: %s", err);
      LLVMDisposeMessage(err);
    } else {
      *size = LLVMGetBufferSize(mb);
      *data = malloc(*size ? *size : 1);
      if (*data) memcpy(*data, LLVMGetBufferStart(mb), *size);
      else s = diag_fail(d, TEMPER_ENOMEM, "out of memory");
      LLVMDisposeMemoryBuffer(mb);
    }
  }
  LLVMDisposeModule(c.mod);
  LLVMContextDispose(ctx);
  return s;
}

temper_status cg_jit_add_object(cg_jit *j, const char *data, size_t size, const char *name, temper_kernel_fn *fn, diag *d) {
  *fn = NULL;
  LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRangeCopy(data, size, name);
  LLVMErrorRef e = LLVMOrcLLJITAddObjectFile(j->jit, LLVMOrcLLJITGetMainJITDylib(j->jit), mb);
  if (e) return llvm_fail(d, e, "loading object code");
  LLVMOrcExecutorAddress addr = 0;
  e = LLVMOrcLLJITLookup(j->jit, &addr, name);
  if (e) return llvm_fail(d, e, "looking up a kernel in object code");
  *fn = (temper_kernel_fn)(uintptr_t)addr;
  return TEMPER_OK;
}
