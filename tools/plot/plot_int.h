/*
 * plot_int.h: the plot's drawing, separate from files and surfaces (plot.c),
 * so the same code draws on the PNG and the SVG surface. Private to
 * tools/plot. Thread-safety: works only on its arguments.
 */
#ifndef GA_TOOLS_PLOT_PLOT_INT_H
#define GA_TOOLS_PLOT_PLOT_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <cairo.h>

#include "tools/plot/layout.h"
#include "tools/plot/oom_group.h"
#include "tools/plot/plot.h"

/* ga_plot_height: the canvas height for in: the axes plus a legend row per
 * configuration. */
double ga_plot_height(const ga_plot_input_t *in);

/* ga_plot_draw: draw everything on cr, a fresh context of a GA_PLOT_WIDTH x
 * ga_plot_height(in) surface, as layout.h places it. Returns cr's status, or
 * CAIRO_STATUS_NO_MEMORY when the layout could not be made. */
cairo_status_t ga_plot_draw(cairo_t *cr, const ga_plot_input_t *in);

/* The plot stacked by owner (stack_draw.c), as stack.h lays it out, on a
 * GA_PLOT_WIDTH x ga_plot_stack_height(in) surface. Returns as ga_plot_draw. */
cairo_status_t ga_plot_stack_draw(cairo_t *cr, const ga_plot_input_t *in);

/* What both plots draw the same way (paint.c). */
#define GA_PLOT_PALETTE 10
extern const double ga_plot_palette[GA_PLOT_PALETTE][3]; /* matplotlib's tab10 */
/* ga_plot_text_at: s with its anchor (ax, ay in [0, 1] of its extents) at (x, y). */
void ga_plot_text_at(cairo_t *cr, double x, double y, const char *s, double ax, double ay);
void ga_plot_set_font(cairo_t *cr, double size, bool bold);
/* ga_plot_text_in: s in box b on a translucent white ground, left-aligned,
 * made smaller if wider than layout.c's estimate, so it never leaves b. */
void ga_plot_text_in(cairo_t *cr, const ga_plot_rect_t *b, const char *s);
/* ga_plot_draw_axes: f's grid, ticks, frame and axis titles. */
void ga_plot_draw_axes(cairo_t *cr, const ga_plot_layout_t *f, uint64_t events);
/* ga_plot_draw_device: the device's dashed line and f's device label (an arrow when above). */
void ga_plot_draw_device(cairo_t *cr, const ga_plot_layout_t *f, uint64_t device_memory);
/* ga_plot_draw_cross: an OOM's red cross of half-side r at (x, y). */
void ga_plot_draw_cross(cairo_t *cr, double x, double y, double r);
/* ga_plot_draw_oom_group: an OOM group's mark (oom_group.h): its cross at
 * (x, y) and, when it spans events, a red span from x to x_end under it. */
void ga_plot_draw_oom_group(cairo_t *cr, double x, double x_end, double y);

#endif /* GA_TOOLS_PLOT_PLOT_INT_H */
