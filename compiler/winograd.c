/* winograd.c: Winograd's minimal filtering F(m×m, 3×3) — the transform
 * matrices, the weight transform and a plain reference of the algorithm —
 * for stride 1 and, through its four phases, stride 2.
 *
 * Stride 1. For one dimension, with alpha = m + 2 input points d and 3 taps
 * g, the m outputs y_i = Σ_k d[i+k]·g[k] are  y = Aᵀ[(G g) ⊙ (Bᵀ d)];  in two:
 *   Y = Aᵀ [ (G g Gᵀ) ⊙ (Bᵀ d B) ] A.
 * The matrices come from Cook–Toom interpolation at the points below and
 * infinity (after Lavin & Gray, and the wincnn construction):
 *   Aᵀ[j][i] = p_i^j,  G[i][k] = p_i^k / Π_{l≠i}(p_i − p_l)   (i < alpha−1),
 *   the last column of Aᵀ and the last row of G are those of the point at
 *   infinity; Bᵀ is then the unique matrix that makes the identity hold,
 *   solved here in double precision (and checked by the tests).
 * Points: m=2: 0, ±1; m=4: 0, ±1, ±2; m=6: 0, ±1, ±2, ±1/2. Larger tiles
 * need fewer multiplications (36/16 = 2.25×, 144/36 = 4×, 324/64 = 5.06×
 * fewer than direct for m = 2, 4, 6) but the entries of the matrices grow and
 * so does float32 rounding error: see winograd_tolerance.
 *
 * Stride 2. y_i = d[2i]·g0 + d[2i+1]·g1 + d[2i+2]·g2 splits by the parity
 * of the input point: the even points e_q = d[2q] meet the taps (g0, g2) as a
 * stride-1 correlation with two taps, F(m, 2) (m + 1 points), and the odd ones
 * meet g1 alone. One tile reads alpha = 2m + 1 input points, the block-
 * diagonal transforms
 *
 *        ┌ Bᵀ₂ on d[0], d[2] … d[2m] ┐        ┌ G₂ (g0, g2) ┐        Aᵀ = [ Aᵀ₂ | I_m ]
 *   Bᵀ = │                           │    G = │             │
 *        └ d[1], d[3] … d[2m−1]      ┘        └ g1, m times ┘
 *
 * and the same Y = Aᵀ [U ⊙ V] A in two dimensions: the four phases of the
 * input each meet their part of the kernel (2×2, 2×1, 1×2, 1×1 taps) in one
 * batched multiplication of alpha² = (2m+1)² points, 25/16 = 1.44× (m = 2)
 * and 81/64 = 1.78× (m = 4) fewer than direct. F(m, 2)'s points: m=2: 0, 1;
 * m=3: 0, ±1; m=4: 0, ±1, 1/2. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "compiler_int.h"

static const double points[3][7] = {{0, 1, -1}, {0, 1, -1, 2, -2}, {0, 1, -1, 2, -2, 0.5, -0.5}};
static const double points2[3][4] = {{0, 1}, {0, 1, -1}, {0, 1, -1, 0.5}};   /* F(m, 2), m = 2, 3, 4 */

/* solves the n×n system a·x = b in place (partial pivoting); -1 if singular */
static int solve(double a[8][8], double *b, int n) {
  for (int c = 0; c < n; c++) {
    int p = c;
    for (int r = c + 1; r < n; r++)
      if (fabs(a[r][c]) > fabs(a[p][c])) p = r;
    if (fabs(a[p][c]) < 1e-12) return -1;
    for (int k = 0; k < n; k++) {
      double t = a[c][k];
      a[c][k] = a[p][k];
      a[p][k] = t;
    }
    double t = b[c];
    b[c] = b[p];
    b[p] = t;
    for (int r = 0; r < n; r++) {
      if (r == c) continue;
      double f = a[r][c] / a[c][c];
      for (int k = c; k < n; k++) a[r][k] -= f * a[c][k];
      b[r] -= f * b[c];
    }
  }
  for (int c = 0; c < n; c++) b[c] /= a[c][c];
  return 0;
}

/* Cook–Toom F(m, r) at the finite points p (alpha − 1 = m + r − 2 of them)
 * and infinity: AT (m × alpha), G (alpha × r), BT (alpha × alpha ≤ 8) */
static int cook_toom(int m, int r, const double *p, double AT[6][9], double G[9][3], double BT[9][9]) {
  int a = m + r - 1;
  for (int i = 0; i < a - 1; i++) {
    double f = 1;
    for (int l = 0; l < a - 1; l++)
      if (l != i) f *= p[i] - p[l];
    for (int j = 0; j < m; j++) AT[j][i] = pow(p[i], j);   /* pow(0, 0) = 1 */
    for (int k = 0; k < r; k++) G[i][k] = pow(p[i], k) / f;
  }
  AT[m - 1][a - 1] = 1;
  G[a - 1][r - 1] = 1;
  /* Bᵀ column by column: Σ_ξ Aᵀ[i][ξ] G[ξ][k] Bᵀ[ξ][j] = [j == i + k] for
   * every output i and tap k; least squares through the normal equations
   * (the system is consistent, so the residual is rounding only) */
  double E[18][8];
  for (int i = 0; i < m; i++)
    for (int k = 0; k < r; k++)
      for (int x = 0; x < a; x++) E[i * r + k][x] = AT[i][x] * G[x][k];
  for (int j = 0; j < a; j++) {
    double N[8][8] = {{0}}, rhs[8] = {0};
    for (int q = 0; q < m * r; q++) {
      double t = (j == q / r + q % r) ? 1 : 0;
      for (int x = 0; x < a; x++) {
        rhs[x] += E[q][x] * t;
        for (int y = 0; y < a; y++) N[x][y] += E[q][x] * E[q][y];
      }
    }
    if (solve(N, rhs, a)) return -1;
    for (int x = 0; x < a; x++) BT[x][j] = fabs(rhs[x]) < 1e-12 ? 0 : rhs[x];
  }
  return 0;
}

int winograd_alpha(int m, int s) {
  if (s == 1) return m == 2 || m == 4 || m == 6 ? m + 2 : -1;
  if (s == 2) return m >= 2 && m <= 4 ? 2 * m + 1 : -1;
  return -1;
}

int winograd_mats(int m, int s, wino_mats *w) {
  int a = winograd_alpha(m, s);
  if (a < 0) return -1;
  memset(w, 0, sizeof *w);
  w->m = m;
  w->s = s;
  w->a = a;
  if (s == 1) return cook_toom(m, 3, points[m / 2 - 1], w->AT, w->G, w->BT);
  /* stride 2: F(m, 2) on the even points (transform rows 0 … m), the odd
   * points as they are (rows m+1 … 2m) */
  wino_mats e = {0};
  if (cook_toom(m, 2, points2[m - 2], e.AT, e.G, e.BT)) return -1;
  for (int x = 0; x <= m; x++) {
    for (int q = 0; q <= m; q++) w->BT[x][2 * q] = e.BT[x][q];
    w->G[x][0] = e.G[x][0];
    w->G[x][2] = e.G[x][1];
    for (int i = 0; i < m; i++) w->AT[i][x] = e.AT[i][x];
  }
  for (int q = 0; q < m; q++) {
    w->BT[m + 1 + q][2 * q + 1] = 1;
    w->G[m + 1 + q][1] = 1;
    w->AT[q][m + 1 + q] = 1;
  }
  return 0;
}
/* Bounds on the relative error (max |error| / max |reference|) of a float32
 * Winograd conv2d, used to accept a kernel against the reference (the tuner's
 * runner, the tests). The worst seen by the property test over ResNet's 3×3
 * layers and odd shapes (tests/schedules/test_conv_configs.c prints it) was
 * 2.6e-6, 5.1e-5 and 4.5e-5 for m = 2, 4, 6; the bounds leave 10× or more
 * over the tile's own worst except at m = 4, where 5e-4 leaves 10×. Direct
 * templates are held to 1e-4. */
double winograd_tolerance(int m, int s) {
  if (s == 2) return m <= 3 ? 1e-4 : 2e-4;   /* F(m, 2): 3.4e-6, 2.4e-6, 1.8e-5 worst for m = 2, 3, 4 */
  return m <= 2 ? 1e-4 : m <= 4 ? 5e-4 : 2e-3;
}

void winograd_weight(const float *g, int64_t K, int64_t C, int m, int s, float *u) {
  wino_mats w;
  if (winograd_mats(m, s, &w)) return;
  int a = w.a;
  for (int64_t k = 0; k < K; k++)
    for (int64_t c = 0; c < C; c++) {
      const float *gk = g + (k * C + c) * 9;
      double t[9][3];   /* G g */
      for (int x = 0; x < a; x++)
        for (int q = 0; q < 3; q++) t[x][q] = w.G[x][0] * gk[q] + w.G[x][1] * gk[3 + q] + w.G[x][2] * gk[6 + q];
      for (int x = 0; x < a; x++)
        for (int y = 0; y < a; y++)
          u[((int64_t)(x * a + y) * C + c) * K + k] = (float)(t[x][0] * w.G[y][0] + t[x][1] * w.G[y][1] + t[x][2] * w.G[y][2]);
    }
}

int winograd_conv_ref(const float *x, const float *u, float *y, int64_t N, int64_t C, int64_t H, int64_t W, int64_t K,
                      const int64_t *pad, int m, int s) {
  wino_mats w;
  if (winograd_mats(m, s, &w)) return -1;
  int a = w.a;
  int64_t OH = (H + pad[0] + pad[2] - 3) / s + 1, OW = (W + pad[1] + pad[3] - 3) / s + 1;
  double *v = malloc(sizeof(double) * (size_t)(a * a * C)), *acc = malloc(sizeof(double) * (size_t)(a * a));
  if (!v || !acc) { free(v); free(acc); return -1; }
  for (int64_t n = 0; n < N; n++)
    for (int64_t th = 0; th < OH; th += m)
      for (int64_t tw = 0; tw < OW; tw += m) {
        for (int64_t c = 0; c < C; c++) {   /* V = Bᵀ d B */
          double d[9][9], t[9][9];
          for (int i = 0; i < a; i++)
            for (int j = 0; j < a; j++) {
              int64_t ih = th * s - pad[0] + i, iw = tw * s - pad[1] + j;
              d[i][j] = ih >= 0 && ih < H && iw >= 0 && iw < W ? x[((n * C + c) * H + ih) * W + iw] : 0;
            }
          for (int i = 0; i < a; i++)
            for (int j = 0; j < a; j++) {
              t[i][j] = 0;
              for (int k = 0; k < a; k++) t[i][j] += w.BT[i][k] * d[k][j];
            }
          for (int i = 0; i < a; i++)
            for (int j = 0; j < a; j++) {
              double s = 0;
              for (int k = 0; k < a; k++) s += t[i][k] * w.BT[j][k];
              v[(i * a + j) * C + c] = s;
            }
        }
        for (int64_t k = 0; k < K; k++) {
          for (int e = 0; e < a * a; e++) {
            double s = 0;
            for (int64_t c = 0; c < C; c++) s += v[e * C + c] * u[(e * C + c) * K + k];
            acc[e] = s;
          }
          for (int i = 0; i < m; i++)   /* Y = Aᵀ M A */
            for (int j = 0; j < m; j++) {
              if (th + i >= OH || tw + j >= OW) continue;
              double s = 0;
              for (int p = 0; p < a; p++)
                for (int q = 0; q < a; q++) s += w.AT[i][p] * acc[p * a + q] * w.AT[j][q];
              y[((n * K + k) * OH + th + i) * OW + tw + j] = (float)s;
            }
        }
      }
  free(v);
  free(acc);
  return 0;
}
