/* svg.c: the report's plots as inline SVG (svg.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "svg.h"

/* colour, lightness, dash and marker all differ from one style to the next */
static const char *const colour[SVG_STYLES] = {"#1f3b73", "#e6861a", "#3d8f5a", "#8e3b8e", "#86b4e8", "#b8322a"};
static const char *const dash[SVG_STYLES] = {"", "7,3", "2,2", "9,3,2,3", "1,3", "12,4"};

void svg_text(strbuf *b, const char *s) {
  for (; *s; s++) {
    switch (*s) {
    case '<': strbuf_printf(b, "&lt;"); break;
    case '>': strbuf_printf(b, "&gt;"); break;
    case '&': strbuf_printf(b, "&amp;"); break;
    case '"': strbuf_printf(b, "&quot;"); break;
    default: strbuf_printf(b, "%c", *s);
    }
  }
}

static double to_x(const svg_plot *p, double x) {
  double f = p->xlog ? (log10(x) - log10(p->xmin)) / (log10(p->xmax) - log10(p->xmin)) : (x - p->xmin) / (p->xmax - p->xmin);
  return p->left + f * p->w;
}

static double to_y(const svg_plot *p, double y) {
  double f = p->ylog ? (log10(y) - log10(p->ymin)) / (log10(p->ymax) - log10(p->ymin)) : (y - p->ymin) / (p->ymax - p->ymin);
  return p->top + p->h - f * p->h;
}

/* a tick step of 1, 2 or 5 × 10^k giving about `want` ticks over the range */
static double nice_step(double range, int want) {
  double raw = range / want, e = pow(10, floor(log10(raw))), f = raw / e;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * e;
}

static void widen(double *lo, double *hi, int logscale) {
  if (!(*hi > *lo)) *hi = *lo + (*lo ? fabs(*lo) : 1);
  if (logscale) {
    if (*lo <= 0) *lo = *hi / 1000;
    *lo = pow(10, floor(log10(*lo)));
    *hi = pow(10, ceil(log10(*hi)));
    return;
  }
  double s = nice_step(*hi - *lo, 5);
  *lo = floor(*lo / s) * s;
  *hi = ceil(*hi / s) * s;
}

static void fmt_num(char *buf, size_t n, double v) {
  double a = fabs(v);
  if (a >= 1e6 || (a > 0 && a < 1e-3)) snprintf(buf, n, "%.0e", v);
  else snprintf(buf, n, "%g", v);
}

/* ticks and grid of one axis */
static void axis_ticks(svg_plot *p, int is_x) {
  double lo = is_x ? p->xmin : p->ymin, hi = is_x ? p->xmax : p->ymax;
  int lg = is_x ? p->xlog : p->ylog;
  double vals[64];
  int n = 0;
  if (lg) {
    int decades = (int)lround(log10(hi / lo));
    for (double d = lo; d <= hi * 1.0001 && n < 60; d *= 10) {
      vals[n++] = d;
      if (decades <= 2)
        for (int m = 2; m <= 5 && n < 60; m += 3)
          if (d * m < hi) vals[n++] = d * m;
    }
  } else {
    double s = nice_step(hi - lo, 5);
    for (double v = lo; v <= hi + s * 1e-6 && n < 60; v += s) vals[n++] = fabs(v) < s * 1e-9 ? 0 : v;
  }
  for (int i = 0; i < n; i++) {
    char t[32];
    fmt_num(t, sizeof t, vals[i]);
    if (is_x) {
      double x = to_x(p, vals[i]);
      strbuf_printf(p->b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>", x, p->top, x, p->top + p->h);
      strbuf_printf(p->b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"11\">%s</text>\n", x, p->top + p->h + 14, t);
    } else {
      double y = to_y(p, vals[i]);
      strbuf_printf(p->b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>", p->left, y, p->left + p->w, y);
      strbuf_printf(p->b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\">%s</text>\n", p->left - 5, y + 4, t);
    }
  }
}

void svg_begin(svg_plot *p, strbuf *b, int width, int height, const char *title, const char *xlabel, const char *ylabel, double xmin,
               double xmax, double ymin, double ymax, int xlog, int ylog) {
  widen(&xmin, &xmax, xlog);
  widen(&ymin, &ymax, ylog);
  *p = (svg_plot){b, 62, 28, width - 62 - 14, height - 28 - 46, xmin, xmax, ymin, ymax, xlog, ylog};
  strbuf_printf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                   "font-family=\"sans-serif\" role=\"img\">\n<title>", width, height, width, height);
  svg_text(b, title);
  strbuf_printf(b, "</title>\n<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", width, height);
  strbuf_printf(b, "<text x=\"%.1f\" y=\"16\" font-size=\"13\" font-weight=\"bold\">", p->left);
  svg_text(b, title);
  strbuf_printf(b, "</text>\n");
  axis_ticks(p, 1);
  axis_ticks(p, 0);
  strbuf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#333\"/>\n", p->left, p->top, p->w, p->h);
  strbuf_printf(b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" font-size=\"12\">", p->left + p->w / 2, height - 8);
  svg_text(b, xlabel);
  strbuf_printf(b, "</text>\n<text transform=\"translate(14 %.1f) rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">",
                p->top + p->h / 2);
  svg_text(b, ylabel);
  strbuf_printf(b, "</text>\n");
}

static void marker_at(strbuf *b, double x, double y, int style) {
  const char *c = colour[style % SVG_STYLES];
  switch (style % SVG_STYLES) {
  case 0: strbuf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.2\" fill=\"%s\"/>", x, y, c); break;
  case 1: strbuf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"6\" height=\"6\" fill=\"%s\"/>", x - 3, y - 3, c); break;
  case 2: strbuf_printf(b, "<path d=\"M%.1f %.1fl3.6 6.2h-7.2z\" fill=\"%s\"/>", x, y - 4, c); break;
  case 3: strbuf_printf(b, "<path d=\"M%.1f %.1fl4 4l-4 4l-4 -4z\" fill=\"%s\"/>", x, y - 4, c); break;
  case 4: strbuf_printf(b, "<path d=\"M%.1f %.1fl7 7m0 -7l-7 7\" stroke=\"%s\" stroke-width=\"2\"/>", x - 3.5, y - 3.5, c); break;
  default: strbuf_printf(b, "<path d=\"M%.1f %.1fh8m-4 -4v8\" stroke=\"%s\" stroke-width=\"2\"/>", x - 4, y, c); break;
  }
}

static int inside(const svg_plot *p, double x, double y) {
  return isfinite(x) && isfinite(y) && (!p->xlog || x > 0) && (!p->ylog || y > 0);
}

void svg_line(svg_plot *p, const double *x, const double *y, int n, int style, int mark) {
  int open = 0;
  for (int i = 0; i < n; i++) {
    if (!inside(p, x[i], y[i])) continue;
    strbuf_printf(p->b, open ? " L%.1f %.1f" : "<path d=\"M%.1f %.1f", to_x(p, x[i]), to_y(p, y[i]));
    open = 1;
  }
  if (open) {
    strbuf_printf(p->b, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\"", colour[style % SVG_STYLES]);
    if (*dash[style % SVG_STYLES]) strbuf_printf(p->b, " stroke-dasharray=\"%s\"", dash[style % SVG_STYLES]);
    strbuf_printf(p->b, "/>\n");
  }
  for (int i = 0; mark > 0 && i < n; i += mark)
    if (inside(p, x[i], y[i])) marker_at(p->b, to_x(p, x[i]), to_y(p, y[i]), style);
}

void svg_marker(svg_plot *p, double x, double y, int style) {
  if (inside(p, x, y)) marker_at(p->b, to_x(p, x), to_y(p, y), style);
}

void svg_tick_mark(svg_plot *p, double x, int style, const char *title) {
  if (!inside(p, x, 1)) return;
  strbuf_printf(p->b, "<g><title>");
  svg_text(p->b, title);
  strbuf_printf(p->b, "</title>");
  marker_at(p->b, to_x(p, x), p->top + p->h - 6, style);
  strbuf_printf(p->b, "</g>\n");
}

void svg_legend(svg_plot *p, const char *const *names, const int *styles, int n, int with_lines) {
  double w = 0;
  for (int i = 0; i < n; i++) w = fmax(w, 6.5 * (double)strlen(names[i]));
  w += with_lines ? 44 : 24;
  double x = p->left + p->w - w - 6, y = p->top + 6;
  strbuf_printf(p->b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"white\" fill-opacity=\"0.9\" stroke=\"#999\"/>\n", x,
                y, w, 16 * n + 6);
  for (int i = 0; i < n; i++) {
    double yy = y + 14 + 16 * i;
    int s = styles[i] % SVG_STYLES;
    if (with_lines) {
      strbuf_printf(p->b, "<path d=\"M%.1f %.1fh26\" stroke=\"%s\" stroke-width=\"1.8\"", x + 6, yy - 4, colour[s]);
      if (*dash[s]) strbuf_printf(p->b, " stroke-dasharray=\"%s\"", dash[s]);
      strbuf_printf(p->b, "/>");
    }
    marker_at(p->b, x + (with_lines ? 19 : 10), yy - 4, s);
    strbuf_printf(p->b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">", x + (with_lines ? 38 : 20), yy);
    svg_text(p->b, names[i]);
    strbuf_printf(p->b, "</text>\n");
  }
}

void svg_end(svg_plot *p) { strbuf_printf(p->b, "</svg>\n"); }

void svg_hbars(strbuf *b, int width, const char *title, const char *xlabel, const char *const *labels, const double *values, int n,
               int k, const char *const *series, const char *unit) {
  int row = 6 + 13 * k, label_w = 250, top = 28 + (k > 1 ? 18 : 0);
  int height = top + n * row + 44;
  double vmax = 0;
  for (int i = 0; i < n * k; i++) vmax = fmax(vmax, values[i]);
  double lo = 0, hi = vmax > 0 ? vmax : 1;
  widen(&lo, &hi, 0);
  double w = width - label_w - 70;
  strbuf_printf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                   "font-family=\"sans-serif\" role=\"img\">\n<title>", width, height, width, height);
  svg_text(b, title);
  strbuf_printf(b, "</title>\n<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n<text x=\"8\" y=\"16\" font-size=\"13\" font-weight=\"bold\">",
                width, height);
  svg_text(b, title);
  strbuf_printf(b, "</text>\n");
  double s = nice_step(hi, 5);
  for (double v = 0; v <= hi + s * 1e-6; v += s) {
    double x = label_w + v / hi * w;
    char t[32];
    fmt_num(t, sizeof t, v);
    strbuf_printf(b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>", x, top, x, top + n * row);
    strbuf_printf(b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" font-size=\"11\">%s</text>\n", x, top + n * row + 14, t);
  }
  for (int i = 0; i < n; i++) {
    int y = top + i * row + 3;
    strbuf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" font-size=\"11\">", label_w - 6, y + row / 2 + 1);
    svg_text(b, labels[i]);
    strbuf_printf(b, "</text>\n");
    for (int j = 0; j < k; j++) {
      double v = values[i * k + j], bw = v > 0 ? v / hi * w : 0;
      int s2 = j % SVG_STYLES;
      strbuf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"11\" fill=\"%s\"%s/>", label_w, y + 13 * j, bw, colour[s2],
                    j % 2 ? " fill-opacity=\"0.55\" stroke=\"#333\" stroke-width=\"0.6\"" : "");
      strbuf_printf(b, "<text x=\"%.1f\" y=\"%d\" font-size=\"10\">%.3g %s</text>\n", label_w + bw + 3, y + 13 * j + 9, v, unit);
    }
  }
  strbuf_printf(b, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n", label_w, top, label_w, top + n * row);
  strbuf_printf(b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" font-size=\"12\">", label_w + w / 2, height - 8);
  svg_text(b, xlabel);
  strbuf_printf(b, "</text>\n");
  for (int j = 0, x = label_w; k > 1 && j < k; x += 30 + (int)(6.2 * (double)strlen(series[j])), j++) {
    strbuf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"11\" fill=\"%s\"%s/><text x=\"%d\" y=\"%d\" font-size=\"11\">", x,
                  top - 16, colour[j % SVG_STYLES], j % 2 ? " fill-opacity=\"0.55\" stroke=\"#333\" stroke-width=\"0.6\"" : "", x + 16,
                  top - 6);
    svg_text(b, series[j]);
    strbuf_printf(b, "</text>\n");
  }
  strbuf_printf(b, "</svg>\n");
}
