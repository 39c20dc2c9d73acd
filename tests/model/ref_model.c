/* ref_model.c -- double-precision reference models for the tests, written from the
 * definitions (PyTorch semantics, NCHW, plain loops) and sharing no code with model/:
 * softmax regression, the Opacus-example MNIST CNN and Tramer & Boneh's scatter CNN. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"
#include "mtest.h"

static double act(double v, dpgd_activation a)
{
  return a == DPGD_ACT_TANH ? tanh(v) : (v > 0 ? v : 0);
}
static double dact(double out, dpgd_activation a)
{
  return a == DPGD_ACT_TANH ? 1.0 - out * out : (out > 0 ? 1.0 : 0.0);
}

/* loss = logsumexp(z) - z[y]; dz = softmax(z) - onehot(y) when dz != NULL. */
static double xent(const double *z, int K, int y, double *dz)
{
  double m = z[0];
  for (int k = 1; k < K; k++) m = z[k] > m ? z[k] : m;
  double s = 0.0;
  for (int k = 0; k < K; k++) s += exp(z[k] - m);
  if (dz)
    for (int k = 0; k < K; k++) dz[k] = exp(z[k] - m) / s - (k == y);
  return m + log(s) - z[y];
}

/* ---- softmax regression: z = W x + b ------------------------------------------- */
static double softmax_ref(const dpgd_model *m, const double *th, const float *x, int y,
                          double *g)
{
  size_t d = m->d;
  int K = m->n_classes;
  double z[256] = {0}, dz[256];
  for (int k = 0; k < K; k++) {
    z[k] = th[(size_t)K * d + (size_t)k];
    for (size_t j = 0; j < d; j++) z[k] += th[(size_t)k * d + j] * x[j];
  }
  double loss = xent(z, K, y, g ? dz : NULL);
  if (g)
    for (int k = 0; k < K; k++) {
      for (size_t j = 0; j < d; j++) g[(size_t)k * d + j] = dz[k] * x[j];
      g[(size_t)K * d + (size_t)k] = dz[k];
    }
  return loss;
}

/* ---- the CNN ------------------------------------------------------------------- */
enum {
  C1 = 16,
  K1 = 8,
  H0 = 28,
  H1 = 14,
  Q1 = 13,
  C2 = 32,
  K2 = 4,
  H2 = 5,
  Q2 = 4,
  F = 512,
  HID = 32
};
enum {
  W1 = 0,
  B1 = W1 + C1 * K1 * K1,
  W2 = B1 + C1,
  B2 = W2 + C2 * C1 * K2 * K2,
  W3 = B2 + C2,
  B3 = W3 + HID * F,
  W4 = B3 + HID,
  B4 = W4 /* + K * HID */
};

typedef struct cnn_state {
  double a1[C1][H1][H1], p1[C1][Q1][Q1];
  int m1[C1][Q1][Q1]; /* argmax offset 0..3 */
  double a2[C2][H2][H2], p2[C2][Q2][Q2];
  int m2[C2][Q2][Q2];
  double a3[HID], z[256];
} cnn_state;

static void pool(const double *in, double *out, int *arg, int c, int h)
{
  int oh = h - 1;
  for (int ch = 0; ch < c; ch++)
    for (int i = 0; i < oh; i++)
      for (int j = 0; j < oh; j++) {
        int best = 0;
        double mv = in[(ch * h + i) * h + j];
        for (int q = 1; q < 4; q++) {
          double v = in[(ch * h + i + q / 2) * h + j + q % 2];
          if (v > mv) {
            mv = v;
            best = q;
          }
        }
        out[(ch * oh + i) * oh + j] = mv;
        arg[(ch * oh + i) * oh + j] = best;
      }
}

static double cnn_ref(const dpgd_model *m, const double *th, const float *x, int y, double *g)
{
  const int K = m->n_classes;
  const dpgd_activation ac = m->act;
  cnn_state *s = calloc(1, sizeof *s);
  if (!s) abort();
  for (int o = 0; o < C1; o++)
    for (int i = 0; i < H1; i++)
      for (int j = 0; j < H1; j++) {
        double v = th[B1 + o];
        for (int ky = 0; ky < K1; ky++)
          for (int kx = 0; kx < K1; kx++) {
            int iy = 2 * i - 3 + ky, ix = 2 * j - 3 + kx;
            if (iy >= 0 && ix >= 0 && iy < H0 && ix < H0)
              v += th[W1 + (o * K1 + ky) * K1 + kx] * x[iy * H0 + ix];
          }
        s->a1[o][i][j] = act(v, ac);
      }
  pool(&s->a1[0][0][0], &s->p1[0][0][0], &s->m1[0][0][0], C1, H1);
  for (int o = 0; o < C2; o++)
    for (int i = 0; i < H2; i++)
      for (int j = 0; j < H2; j++) {
        double v = th[B2 + o];
        for (int c = 0; c < C1; c++)
          for (int ky = 0; ky < K2; ky++)
            for (int kx = 0; kx < K2; kx++)
              v += th[W2 + ((o * C1 + c) * K2 + ky) * K2 + kx] *
                   s->p1[c][2 * i + ky][2 * j + kx];
        s->a2[o][i][j] = act(v, ac);
      }
  pool(&s->a2[0][0][0], &s->p2[0][0][0], &s->m2[0][0][0], C2, H2);
  const double *f = &s->p2[0][0][0]; /* flatten in (C, H, W) order */
  for (int o = 0; o < HID; o++) {
    double v = th[B3 + o];
    for (int k = 0; k < F; k++) v += th[W3 + o * F + k] * f[k];
    s->a3[o] = act(v, ac);
  }
  const int b4 = B4 + K * HID;
  for (int k = 0; k < K; k++) {
    double v = th[b4 + k];
    for (int o = 0; o < HID; o++) v += th[W4 + k * HID + o] * s->a3[o];
    s->z[k] = v;
  }
  double dz[256];
  double loss = xent(s->z, K, y, g ? dz : NULL);
  if (g) {
    memset(g, 0, dpgd_model_n_params(m) * sizeof *g);
    double da3[HID] = {0}, df[F] = {0};
    for (int k = 0; k < K; k++) {
      g[b4 + k] = dz[k];
      for (int o = 0; o < HID; o++) {
        g[W4 + k * HID + o] = dz[k] * s->a3[o];
        da3[o] += dz[k] * th[W4 + k * HID + o];
      }
    }
    for (int o = 0; o < HID; o++) {
      double dh = da3[o] * dact(s->a3[o], ac);
      g[B3 + o] = dh;
      for (int k = 0; k < F; k++) {
        g[W3 + o * F + k] = dh * f[k];
        df[k] += dh * th[W3 + o * F + k];
      }
    }
    static double da2[C2][H2][H2];
    memset(da2, 0, sizeof da2);
    for (int c = 0; c < C2; c++)
      for (int i = 0; i < Q2; i++)
        for (int j = 0; j < Q2; j++) {
          int q = s->m2[c][i][j];
          da2[c][i + q / 2][j + q % 2] += df[(c * Q2 + i) * Q2 + j];
        }
    static double dp1[C1][Q1][Q1];
    memset(dp1, 0, sizeof dp1);
    for (int o = 0; o < C2; o++)
      for (int i = 0; i < H2; i++)
        for (int j = 0; j < H2; j++) {
          double dy = da2[o][i][j] * dact(s->a2[o][i][j], ac);
          g[B2 + o] += dy;
          for (int c = 0; c < C1; c++)
            for (int ky = 0; ky < K2; ky++)
              for (int kx = 0; kx < K2; kx++) {
                int w = W2 + ((o * C1 + c) * K2 + ky) * K2 + kx;
                g[w] += dy * s->p1[c][2 * i + ky][2 * j + kx];
                dp1[c][2 * i + ky][2 * j + kx] += dy * th[w];
              }
        }
    static double da1[C1][H1][H1];
    memset(da1, 0, sizeof da1);
    for (int c = 0; c < C1; c++)
      for (int i = 0; i < Q1; i++)
        for (int j = 0; j < Q1; j++) {
          int q = s->m1[c][i][j];
          da1[c][i + q / 2][j + q % 2] += dp1[c][i][j];
        }
    for (int o = 0; o < C1; o++)
      for (int i = 0; i < H1; i++)
        for (int j = 0; j < H1; j++) {
          double dy = da1[o][i][j] * dact(s->a1[o][i][j], ac);
          g[B1 + o] += dy;
          for (int ky = 0; ky < K1; ky++)
            for (int kx = 0; kx < K1; kx++) {
              int iy = 2 * i - 3 + ky, ix = 2 * j - 3 + kx;
              if (iy >= 0 && ix >= 0 && iy < H0 && ix < H0)
                g[W1 + (o * K1 + ky) * K1 + kx] += dy * x[iy * H0 + ix];
            }
        }
  }
  free(s);
  return loss;
}

/* ---- the scatter CNN (Tramer & Boneh): x (cin, 7, 7) -------------------------------
 * conv(cin->16, k3, s2, p1) -> act -> conv(16->32, k3, s1, p1) -> act -> flatten (C,H,W)
 * -> fc(512->32) -> act -> fc(32->K). */
enum { SX = 7, SO = 4, SC1 = 16, SC2 = 32, SF = 512 };

typedef struct sc_state {
  double a1[SC1][SO][SO], a2[SC2][SO][SO], a3[HID], z[256];
} sc_state;

/* One 3 x 3 convolution, pad 1, on (cin, h, h) -> (cout, SO, SO) with stride st;
 * y = b + sum w x before the activation. */
static void sc_conv(double *y, const double *w, const double *b, const double *x, int cin,
                    int h, int cout, int st)
{
  for (int o = 0; o < cout; o++)
    for (int i = 0; i < SO; i++)
      for (int j = 0; j < SO; j++) {
        double v = b[o];
        for (int c = 0; c < cin; c++)
          for (int ky = 0; ky < 3; ky++)
            for (int kx = 0; kx < 3; kx++) {
              int iy = st * i - 1 + ky, ix = st * j - 1 + kx;
              if (iy >= 0 && ix >= 0 && iy < h && ix < h)
                v += w[((o * cin + c) * 3 + ky) * 3 + kx] * x[(c * h + iy) * h + ix];
            }
        y[(o * SO + i) * SO + j] = v;
      }
}

/* The adjoint of sc_conv for output gradient dy (cout, SO, SO): gw, gb += and, when
 * dx != NULL, dx (cin, h, h) +=. */
static void sc_conv_back(double *gw, double *gb, double *dx, const double *dy, const double *w,
                         const double *x, int cin, int h, int cout, int st)
{
  for (int o = 0; o < cout; o++)
    for (int i = 0; i < SO; i++)
      for (int j = 0; j < SO; j++) {
        double d = dy[(o * SO + i) * SO + j];
        gb[o] += d;
        for (int c = 0; c < cin; c++)
          for (int ky = 0; ky < 3; ky++)
            for (int kx = 0; kx < 3; kx++) {
              int iy = st * i - 1 + ky, ix = st * j - 1 + kx;
              if (iy < 0 || ix < 0 || iy >= h || ix >= h) continue;
              int q = ((o * cin + c) * 3 + ky) * 3 + kx;
              gw[q] += d * x[(c * h + iy) * h + ix];
              if (dx) dx[(c * h + iy) * h + ix] += d * w[q];
            }
      }
}

/* The two dense layers on f (F), loss, and (g != NULL) their gradients and df. */
static double sc_dense(const dpgd_model *m, const double *th, size_t w3, sc_state *s,
                       const double *f, int y, double *g, double *df)
{
  const int K = m->n_classes;
  const size_t b3 = w3 + HID * SF, w4 = b3 + HID, b4 = w4 + (size_t)K * HID;
  for (int o = 0; o < HID; o++) {
    double v = th[b3 + o];
    for (int k = 0; k < SF; k++) v += th[w3 + (size_t)o * SF + k] * f[k];
    s->a3[o] = act(v, m->act);
  }
  for (int k = 0; k < K; k++) {
    double v = th[b4 + k];
    for (int o = 0; o < HID; o++) v += th[w4 + (size_t)k * HID + o] * s->a3[o];
    s->z[k] = v;
  }
  double dz[256], da3[HID] = {0};
  double loss = xent(s->z, K, y, g ? dz : NULL);
  if (!g) return loss;
  for (int k = 0; k < K; k++) {
    g[b4 + k] = dz[k];
    for (int o = 0; o < HID; o++) {
      g[w4 + (size_t)k * HID + o] = dz[k] * s->a3[o];
      da3[o] += dz[k] * th[w4 + (size_t)k * HID + o];
    }
  }
  for (int o = 0; o < HID; o++) {
    double dh = da3[o] * dact(s->a3[o], m->act);
    g[b3 + o] = dh;
    for (int k = 0; k < SF; k++) {
      g[w3 + (size_t)o * SF + k] = dh * f[k];
      df[k] += dh * th[w3 + (size_t)o * SF + k];
    }
  }
  return loss;
}

static double scatter_cnn_ref(const dpgd_model *m, const double *th, const float *xf, int y,
                              double *g)
{
  const int cin = (int)m->rows;
  const size_t w1 = 0, b1 = w1 + (size_t)SC1 * cin * 9, w2 = b1 + SC1, b2 = w2 + SC2 * SC1 * 9,
               w3 = b2 + SC2;
  sc_state *s = calloc(1, sizeof *s);
  double *x = malloc((size_t)cin * SX * SX * sizeof *x);
  if (!s || !x) abort();
  for (int q = 0; q < cin * SX * SX; q++) x[q] = xf[q];
  double *a1 = &s->a1[0][0][0], *a2 = &s->a2[0][0][0];
  sc_conv(a1, th + w1, th + b1, x, cin, SX, SC1, 2);
  for (int q = 0; q < SC1 * SO * SO; q++) a1[q] = act(a1[q], m->act);
  sc_conv(a2, th + w2, th + b2, a1, SC1, SO, SC2, 1);
  for (int q = 0; q < SF; q++) a2[q] = act(a2[q], m->act);
  double df[SF] = {0}, da1[SC1 * SO * SO] = {0};
  if (g) memset(g, 0, dpgd_model_n_params(m) * sizeof *g);
  double loss = sc_dense(m, th, w3, s, a2, y, g, df);
  if (g) {
    for (int q = 0; q < SF; q++) df[q] *= dact(a2[q], m->act);
    sc_conv_back(g + w2, g + b2, da1, df, th + w2, a1, SC1, SO, SC2, 1);
    for (int q = 0; q < SC1 * SO * SO; q++) da1[q] *= dact(a1[q], m->act);
    sc_conv_back(g + w1, g + b1, NULL, da1, th + w1, x, cin, SX, SC1, 2);
  }
  free(x);
  free(s);
  return loss;
}

static int is_cnn(const dpgd_model *m) { return m->type == dpgd_model_cnn; }
static int is_scatter_cnn(const dpgd_model *m) { return m->type == dpgd_model_scatter_cnn; }

double ref_loss(const dpgd_model *m, const double *theta, const float *x, int y)
{
  if (is_scatter_cnn(m)) return scatter_cnn_ref(m, theta, x, y, NULL);
  return is_cnn(m) ? cnn_ref(m, theta, x, y, NULL) : softmax_ref(m, theta, x, y, NULL);
}

void ref_grad(const dpgd_model *m, const double *theta, const float *x, int y, double *g)
{
  if (is_scatter_cnn(m)) scatter_cnn_ref(m, theta, x, y, g);
  else if (is_cnn(m)) cnn_ref(m, theta, x, y, g);
  else softmax_ref(m, theta, x, y, g);
}
