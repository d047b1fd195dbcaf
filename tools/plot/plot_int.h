/*
 * plot_int.h: the plot's drawing, separate from files and surfaces (plot.c),
 * so the same code draws on the PNG and the SVG surface. Private to
 * tools/plot. Thread-safety: works only on its arguments.
 */
#ifndef GA_TOOLS_PLOT_PLOT_INT_H
#define GA_TOOLS_PLOT_PLOT_INT_H

#include <cairo.h>

#include "tools/plot/plot.h"

/* Canvas width in pixels (PNG) or points (SVG). */
#define GA_PLOT_WIDTH 1200.0

/* ga_plot_height: the canvas height for in: the axes plus a legend row per
 * configuration. */
double ga_plot_height(const ga_plot_input_t *in);

/* ga_plot_draw: draw everything on cr, a fresh context of a GA_PLOT_WIDTH x
 * ga_plot_height(in) surface. Errors stay in cr's status (cairo_status). */
void ga_plot_draw(cairo_t *cr, const ga_plot_input_t *in);

#endif /* GA_TOOLS_PLOT_PLOT_INT_H */
