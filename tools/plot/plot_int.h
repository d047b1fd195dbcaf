/*
 * plot_int.h: the plot's drawing, separate from files and surfaces (plot.c),
 * so the same code draws on the PNG and the SVG surface. Private to
 * tools/plot. Thread-safety: works only on its arguments.
 */
#ifndef GA_TOOLS_PLOT_PLOT_INT_H
#define GA_TOOLS_PLOT_PLOT_INT_H

#include <cairo.h>

#include "tools/plot/layout.h"
#include "tools/plot/plot.h"

/* ga_plot_height: the canvas height for in: the axes plus a legend row per
 * configuration. */
double ga_plot_height(const ga_plot_input_t *in);

/* ga_plot_draw: draw everything on cr, a fresh context of a GA_PLOT_WIDTH x
 * ga_plot_height(in) surface, as layout.h places it. Returns cr's status, or
 * CAIRO_STATUS_NO_MEMORY when the layout could not be made. */
cairo_status_t ga_plot_draw(cairo_t *cr, const ga_plot_input_t *in);

#endif /* GA_TOOLS_PLOT_PLOT_INT_H */
