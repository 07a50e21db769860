/* codegen.h: loop IR → LLVM IR → machine code. codegen_llvm.c is the only
 * file that includes llvm-c/; it turns LLVM's "true means failure" plus a
 * message into temper's status and a diag message at each call site. */
#ifndef TEMPER_CODEGEN_H
#define TEMPER_CODEGEN_H
#include "loopir.h"
#include "temper/runtime.h"

typedef struct cg_target {
  char triple[128];
  char cpu[64];
  char features[2048];
  int vec;               /* float lanes of the widest vector: 16 (AVX-512), 8 (AVX2), 4 */
  int64_t l1d, l2;       /* bytes of L1 data cache and of L2 per core, as the default configs and the
                          * templates' split over threads are fitted to them; 0: this machine's */
} cg_target;

/* The machine we run on, as LLVM sees it. */
temper_status cg_host_target(cg_target *t, diag *d);
/* this machine's L1d and L2 per core in bytes (sysconf, else sysfs, else
 * 32 KB and 1 MB: some guests report neither); read once */
void cg_host_caches(int64_t *l1d, int64_t *l2);
/* float lanes of the widest vector an LLVM feature string enables */
int cg_vec_of_features(const char *features);
/* the major version of the LLVM temper compiles with ("19"), as records
 * name their targets */
void cg_llvm_version(char *buf, size_t n);

typedef struct cg_jit cg_jit;   /* one ORC LLJIT; one per thread that compiles */
temper_status cg_jit_create(cg_jit **out, const cg_target *t, diag *d);
void cg_jit_destroy(cg_jit *j);
/* Compiles the kernels into one module at O3, adds it to the JIT, and
 * returns each kernel's entry point in fns[i]. */
temper_status cg_jit_add(cg_jit *j, lfunc *const *fs, int n, temper_kernel_fn *fns, diag *d);
/* Object code for builder threads: one cg_compiler (own target machine)
 * per thread, one LLVM context per compile. */
typedef struct cg_compiler cg_compiler;
temper_status cg_compiler_create(cg_compiler **out, const cg_target *t, diag *d);
void cg_compiler_destroy(cg_compiler *cc);
temper_status cg_compile_object(cg_compiler *cc, lfunc *const *fs, int n, char **data, size_t *size, diag *d);
typedef enum cg_emit_kind { CG_EMIT_OBJ, CG_EMIT_ASM, CG_EMIT_LLVM } cg_emit_kind;
/* Kernels and an optional constant blob (global `blob_name`, 64-byte
 * aligned) as object code, assembly, or LLVM IR text. */
temper_status cg_emit(cg_compiler *cc, lfunc *const *fs, int n, const void *blob, size_t blob_size, const char *blob_name,
                      cg_emit_kind kind, char **data, size_t *size, diag *d);
/* Links object code into the JIT and returns the kernel `name`. */
temper_status cg_jit_add_object(cg_jit *j, const char *data, size_t size, const char *name, temper_kernel_fn *fn, diag *d);

/* The optimised LLVM IR (or the assembly) of one kernel, malloc'd. */
temper_status cg_print_llvm(const cg_target *t, lfunc *f, int assembly, char **text, diag *d);
#endif
