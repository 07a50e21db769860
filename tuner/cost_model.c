/* cost_model.c: features of a config, and XGBoost behind a small API.
 *
 * Features (all relative to the workload, so records of other workloads of
 * the same template transfer):
 *   0      template (0 nchwc, 1 1x1, 2 depthwise)
 *   1–4    log2 of the channel blocks and the register tile (ic_bn, oc_bn,
 *          columns ow_bn / m_bn, rows oh_bn)
 *   5–7    unroll, loop order, parallel granularity
 *   8      register tile: accumulators / 28 vector registers
 *   9      lane utilisation: channels of a block / the lanes of its vectors
 *   10     L1: bytes of the weight block one reduction step streams / 48 KiB
 *   11     L1: bytes of the input window of a tile / 48 KiB
 *   12     L2: bytes of one output-channel block's weights / 1 MiB
 *   13     log2 of the reduction trip count per tile (C/g · R · S)
 *   14     arithmetic intensity of the inner step: FMAs / loads
 *   15     log2 of the parallel chunks per thread (two threads)
 *   16     wasted work of the last partial column tile (fraction)
 *   17–21  log2 OW, log2 C, log2 K, R, stride
 * For the Winograd template (3) the same slots hold its analogues: 3 t_bn
 * (tiles per register block), 4 the tile m, 5 unroll_c, 6 stage, 7 par
 * (+ 2·log2 oc_split: 2 and 4 for two and four output-channel groups),
 * 10 the weight bytes of a reduction step, 11 the transformed-input block
 * (alpha²·C·t_bn floats) / 1 MiB, 12 one oc-block's transformed weights /
 * 1 MiB, 13 log2 of the multiplications per output against direct (alpha²/m²
 * of 9), 15 tasks per thread, 16 the wasted work of partial tiles.
 * Records from before oc_split existed have oc_split 1: their features are
 * unchanged.                                                                */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xgboost/c_api.h>
#include "cost_model.h"

static float lg(double x) { return (float)log2(x > 0 ? x : 1); }

void cm_features(const task_space *sp, const sched_config *c, float *f) {
  memset(f, 0, sizeof(float) * CM_FEATURES);
  const conv_workload *w = &sp->w;
  int vec = sp->vec;
  int64_t OH = workload_out(w, 2), OW = workload_out(w, 3), Cg = w->C / w->G;
  int64_t ib, ob, cols, rows = 1, unroll = 0, order = 0, par = 0;
  if (c->tmpl == TMPL_NCHWC) {
    ib = cfg_get(sp, c, K_IC_BN), ob = cfg_get(sp, c, K_OC_BN), cols = cfg_get(sp, c, K_OW_BN), rows = cfg_get(sp, c, K_OH_BN);
    unroll = cfg_get(sp, c, K_UNROLL_KW), order = cfg_get(sp, c, K_ORDER), par = cfg_get(sp, c, K_PAR);
  } else if (c->tmpl == TMPL_1X1) {
    ib = cfg_get(sp, c, K_IC_BN), ob = cfg_get(sp, c, K_OC_BN), cols = cfg_get(sp, c, K_M_BN);
    unroll = cfg_get(sp, c, K_UNROLL_IC), order = cfg_get(sp, c, K_LOOP);
  } else if (c->tmpl == TMPL_WINOGRAD) {   /* the shared slots below, then its own analogues */
    ib = cfg_get(sp, c, K_IC_BN), ob = cfg_get(sp, c, K_OC_BN), cols = cfg_get(sp, c, K_T_BN);
    unroll = cfg_get(sp, c, K_UNROLL_C), order = cfg_get(sp, c, K_STAGE), par = cfg_get(sp, c, K_PAR);
  } else {
    ib = ob = cfg_get(sp, c, K_C_BN), cols = cfg_get(sp, c, K_OW_BN);
    unroll = cfg_get(sp, c, K_UNROLL_KW), par = cfg_get(sp, c, K_PAR);
  }
  int64_t lanes = ob < vec ? ob : vec, nv = (ob + lanes - 1) / lanes, acc = nv * cols * rows;
  f[0] = (float)c->tmpl;
  f[1] = lg((double)ib), f[2] = lg((double)ob), f[3] = lg((double)cols), f[4] = lg((double)rows);
  f[5] = (float)unroll, f[6] = (float)order, f[7] = (float)par;
  f[8] = (float)acc / 28.0f;
  f[9] = (float)ob / (float)(nv * vec);   /* 24 in 16 + 8 lanes: 3/4 */
  f[10] = (float)(ib * ob * w->R * w->S * 4) / 49152.0f;
  f[11] = (float)(((cols - 1) * w->sw + w->S) * ((rows - 1) * w->sh + w->R) * ib * 4) / 49152.0f;
  f[12] = (float)(Cg * ob * w->R * w->S * 4) / 1048576.0f;
  f[13] = lg((double)(Cg * w->R * w->S));
  f[14] = (float)acc / (float)(nv + cols * rows);
  int64_t row_tiles = (OH + rows - 1) / rows;
  int64_t tasks = c->tmpl == TMPL_1X1 ? w->N * (w->K / ob) * ((OH * OW + cols - 1) / cols)
                  : !par            ? w->N * (w->K / ob) * row_tiles
                  : c->tmpl == TMPL_NCHWC && conv_split_rows(sp) ? w->N * row_tiles   /* par=1 over rows: (n, row tile) */
                                                                 : w->N * (w->K / ob);
  f[15] = lg((double)tasks / 2.0);
  int64_t span = c->tmpl == TMPL_1X1 ? OH * OW : OW;
  f[16] = (float)(((span + cols - 1) / cols) * cols - span) / (float)span;
  f[17] = lg((double)OW), f[18] = lg((double)w->C), f[19] = lg((double)w->K), f[20] = (float)w->R, f[21] = (float)w->sh;
  if (c->tmpl == TMPL_WINOGRAD) {
    int64_t m = cfg_get(sp, c, K_TILE), al = winograd_alpha((int)m, (int)w->sh), a2 = al * al, TH = (OH + m - 1) / m, TW = (OW + m - 1) / m;
    f[4] = (float)m;
    f[10] = (float)(ib * ob * 4) / 49152.0f;
    f[11] = (float)(a2 * w->C * cols * 4) / 1048576.0f;
    f[12] = (float)(a2 * w->C * ob * 4) / 1048576.0f;
    f[13] = lg((double)a2 / (double)(m * m) / 9.0);   /* multiplications per output against direct */
    int64_t split = cfg_get(sp, c, K_OC_SPLIT);
    f[7] = (float)par + 2.0f * lg((double)split);
    f[15] = lg((double)(w->N * ((TH * TW + cols - 1) / cols) * (par ? w->K / ob : split)) / 2.0);
    f[16] = (float)(TH * m * TW * m - OH * OW) / (float)(OH * OW);
  }
}

struct cost_model {
  BoosterHandle booster;
  DMatrixHandle train;
  int trained;
};

cost_model *cm_create(void) { return calloc(1, sizeof(cost_model)); }

static void cm_reset(cost_model *m) {
  if (m->booster) XGBoosterFree(m->booster);
  if (m->train) XGDMatrixFree(m->train);
  m->booster = NULL;
  m->train = NULL;
  m->trained = 0;
}

void cm_destroy(cost_model *m) {
  if (!m) return;
  cm_reset(m);
  free(m);
}

int cm_trained(const cost_model *m) { return m && m->trained; }

int cm_train(cost_model *m, const float *x, const float *y, int n, const unsigned *groups, int n_groups) {
  cm_reset(m);
  if (n < 2) return -1;
  if (XGDMatrixCreateFromMat(x, (bst_ulong)n, CM_FEATURES, NAN, &m->train) ||
      XGDMatrixSetFloatInfo(m->train, "label", y, (bst_ulong)n) || XGDMatrixSetUIntInfo(m->train, "group", groups, (bst_ulong)n_groups) ||
      XGBoosterCreate(&m->train, 1, &m->booster))
    return -1;
  /* one thread: with two on this 2-core machine training slows 2–30× */
  const char *params[][2] = {{"objective", "rank:pairwise"}, {"nthread", "1"}, {"max_depth", "6"}, {"eta", "0.3"},
                             {"min_child_weight", "1"}, {"subsample", "1"}, {"seed", "0"}, {"verbosity", "0"}};
  for (size_t i = 0; i < sizeof params / sizeof *params; i++)
    if (XGBoosterSetParam(m->booster, params[i][0], params[i][1])) return -1;
  for (int it = 0; it < 40; it++)
    if (XGBoosterUpdateOneIter(m->booster, it, m->train)) return -1;
  m->trained = 1;
  return 0;
}

int cm_predict(cost_model *m, const float *x, int n, float *out) {
  if (!m->trained || n < 1) return -1;
  DMatrixHandle d;
  if (XGDMatrixCreateFromMat(x, (bst_ulong)n, CM_FEATURES, NAN, &d)) return -1;
  bst_ulong len = 0;
  const float *res = NULL;
  int rc = XGBoosterPredict(m->booster, d, 0, 0, 0, &len, &res);
  if (!rc && len == (bst_ulong)n) memcpy(out, res, sizeof(float) * (size_t)n);
  else rc = -1;
  XGDMatrixFree(d);
  return rc;
}
