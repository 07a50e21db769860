/* temper.h: the public C API of the temper compiler.
 * Opaque handles, temper_<noun>_<verb> names, strict create/destroy pairs;
 * destroy(NULL) does nothing. Every call that can fail returns a status and
 * leaves a message retrievable from the handle (or an out-parameter). */
#ifndef TEMPER_H
#define TEMPER_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum temper_status {
  TEMPER_OK = 0,
  TEMPER_EINVAL,       /* bad user input: model text, attribute, shape, file */
  TEMPER_EUNSUPPORTED, /* valid input temper does not handle */
  TEMPER_ENOMEM,
  TEMPER_ELLVM,        /* LLVM failed to compile or link */
  TEMPER_EDB,
  TEMPER_EIO,
  TEMPER_EINTERNAL     /* a bug in temper */
} temper_status;

const char *temper_status_str(temper_status s);

#define TEMPER_MAX_DIMS 6

typedef struct temper_graph temper_graph;    /* a parsed model and its arena */
typedef struct temper_engine temper_engine;  /* compile engine: JIT + kernel cache */

/* Parse a model in the Relay-like text format. `path` names it in errors.
 * On failure *graph is NULL and *err (free with free()) holds
 * "path:line:col: error: ..." with the offending line shown. */
temper_status temper_graph_parse(const char *text, const char *path,
                                 temper_graph **graph, char **err);
void temper_graph_destroy(temper_graph *g);
/* The model text of the graph's current state; free() the result. */
char *temper_graph_print(const temper_graph *g);

#ifdef __cplusplus
}
#endif
#endif
