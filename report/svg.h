/* svg.h: plots as inline SVG, for the tuning report: axes with labelled
 * units and ticks (linear or log), lines with markers, horizontal bars with
 * a legend. Styles differ in colour *and* in lightness, dash and marker,
 * so a plot printed in grayscale still tells its series apart. */
#ifndef TEMPER_SVG_H
#define TEMPER_SVG_H
#include "compiler_int.h"

enum { SVG_STYLES = 6 };

typedef struct svg_plot {
  strbuf *b;
  double left, top, w, h;   /* the plot area, in pixels */
  double xmin, xmax, ymin, ymax;
  int xlog, ylog;
} svg_plot;

/* opens <svg> of width × height with a title, axis labels (with units) and
 * ticks; the ranges are widened to nice numbers; a log axis needs min > 0 */
void svg_begin(svg_plot *p, strbuf *b, int width, int height, const char *title, const char *xlabel, const char *ylabel, double xmin,
               double xmax, double ymin, double ymax, int xlog, int ylog);
/* a series: a line through the points with markers every `mark` points (0: none) */
void svg_line(svg_plot *p, const double *x, const double *y, int n, int style, int mark);
/* a marker of a style at one point, and one below the x axis at x */
void svg_marker(svg_plot *p, double x, double y, int style);
void svg_tick_mark(svg_plot *p, double x, int style, const char *title);
/* a legend box in the top-right corner of the plot area */
void svg_legend(svg_plot *p, const char *const *names, const int *styles, int n, int with_lines);
void svg_end(svg_plot *p);

/* horizontal bars: n rows with k series each (values[row * k + s]), row
 * labels at the left, values written at each bar's end in `unit` */
void svg_hbars(strbuf *b, int width, const char *title, const char *xlabel, const char *const *labels, const double *values, int n,
               int k, const char *const *series, const char *unit);

/* text made safe for XML */
void svg_text(strbuf *b, const char *s);
#endif
