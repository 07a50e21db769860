/* choose.h: which schedule a build uses for every conv2d, from a tuning
 * database — the choice `temper build` makes and `temper run --db`
 * repeats: the best usable record for this machine (graded target
 * matching, target.h), the template versions in force, the thread count
 * (or the nearest measured), weighing the layout transforms and cross-core
 * reads a config would add; refine's choices where they still apply; the
 * template's default where there is no record. The report is data
 * (db_chooser_get, db_chooser_summary); the CLI prints it. */
#ifndef TEMPER_CHOOSE_H
#define TEMPER_CHOOSE_H
#include "engine.h"
#include "db.h"
#include "space.h"

typedef struct db_chooser db_chooser;
/* dbpath NULL: no database, every workload its default (still listed);
 * on failure a message in err */
temper_status db_chooser_open(const char *dbpath, const cg_target *t, int threads, int exact, db_chooser **dc, char *err, size_t n);
void db_chooser_close(db_chooser *dc);
/* pre-tuned logs (JSON lines, as `temper db export --best-only` writes):
 * a file, or every *.jsonl of a directory in name order; where the database
 * has no record for a workload, the best record of the first log that
 * matches this machine (graded target matching, as for the database). The
 * user's records always win. path NULL, "" or "off": none. */
temper_status db_chooser_use_pretuned(db_chooser *dc, const char *path, char *err, size_t n);
/* where neither the database nor the logs have a record for a workload:
 * the config the cost model trained on the logs predicts fastest, instead
 * of the template's default (reported as predicted, counted a fallback) */
void db_chooser_predict_defaults(db_chooser *dc, int on);
/* every record of the pre-tuned logs whose target matches this machine (the
 * tuner's cost model starts from them) */
temper_status db_chooser_foreach_pretuned(db_chooser *dc, db_record_fn fn, void *ctx);
/* where the shipped logs are: $TEMPER_PRETUNED, else the source tree's logs/ */
const char *db_chooser_pretuned_default(void);
/* a sched_chooser (pipeline_opts.choose); ctx: the db_chooser */
int db_chooser_choose(void *ctx, const char *key, const struct task_space *s, const struct conv_site *site, struct sched_config *out,
                      char *err, size_t n);
/* for `temper refine`: also collect, per workload, up to k alternatives —
 * the default config (what an untuned build runs: its record however slow,
 * or with none — a depthwise default takes its producer's block — as is),
 * then the fastest record of each other class (template, split over
 * threads, channel blocks) within REFINE_SLOWER of the fastest record, from
 * this machine's records */
enum { REFINE_MAX_ALT = 6 };
#define REFINE_SLOWER 1.3
void db_chooser_want_alternatives(db_chooser *dc, int k);
/* the model being built (before its passes): its signature, and refine's
 * choices for it, which then replace the records' pick where that pick is
 * still what refine replaced */
temper_status db_chooser_set_model(db_chooser *dc, temper_graph *g, diag *d);
const char *db_chooser_model(const db_chooser *dc);   /* the signature, 16 hex digits */
void db_chooser_ignore_choices(db_chooser *dc);        /* refine: start from the records alone */

/* what was chosen for one workload */
typedef struct chooser_entry {
  const char *key;
  int count;                /* conv2d nodes of this workload */
  double flops;             /* per occurrence */
  const char *config;       /* NULL: the default config (no record) */
  double median_s;          /* the record's time */
  int threads;              /* the record's thread count (may differ: the nearest measured) */
  int level;                /* how the record's target matched (target_level) */
  const char *level_name;
  const char *pretuned;     /* the shipped log the record came from; NULL: the user's database */
  int predicted;            /* no record: the cost model's pick, predicted_config (config is NULL) */
  const char *predicted_config;
  int stale;                /* records of older template versions, ignored */
  int unusable;             /* records whose config today's space does not hold */
  int default_unmeasured;   /* records, but none of today's default config: tuned with other defaults */
  double fastest_s;         /* the fastest record, when the choice is another */
  int in_context;           /* refine's choice replaced the records' pick ... */
  int default_moved;        /* ... choosing a default that is not the site's now: today's default runs instead */
  double gain_s;            /* ... saving this much in the whole model */
  const char *refined_at;
  const char *replaced;     /* the records' pick it replaced */
  int n_alt;
  const char *alt[REFINE_MAX_ALT];
  double alt_s[REFINE_MAX_ALT];
  const char *alt_tmpl[REFINE_MAX_ALT];   /* its record's template and version */
  int alt_version[REFINE_MAX_ALT];
  int default_alt;          /* the default config's place among alt, -1: not there */
} chooser_entry;
int db_chooser_count(const db_chooser *dc);   /* workloads seen, in first-occurrence order */
void db_chooser_get(const db_chooser *dc, int i, chooser_entry *out);   /* pointers valid until close */

/* the whole choice */
typedef struct chooser_summary {
  int threads, n_workloads, n_found, n_fell;
  int n_pretuned;           /* of n_found, from a shipped log */
  int n_predicted;          /* of n_fell, the cost model's pick instead of the default */
  int n_stale;              /* stale records ignored */
  int stale_choices;        /* refine's choices ignored: the records changed since */
  int default_unmeasured;   /* workloads whose records have none of today's default config */
  int default_moved;        /* refine's choices of a default that is not the site's now, run as today's */
  double fell_flops_share;  /* of the model's conv2d FLOPs on default configs */
  double est_s;             /* the records' estimate of the conv2d time */
  int est_complete;         /* every workload has a record */
  int refine_hint;          /* records, but no refine choices for this model */
} chooser_summary;
void db_chooser_summary(const db_chooser *dc, chooser_summary *out);
#endif
