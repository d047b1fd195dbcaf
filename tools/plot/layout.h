/*
 * layout.h: where everything on the memory plot goes, decided before any
 * drawing (draw.c only follows it), so the rules are testable without pixels:
 *
 *   - the y axis is scaled to the job: it covers the data with a little
 *     headroom, in the unit that suits it (bytes, KiB, MiB, GiB, TiB); the
 *     device size is drawn as a line only when it is within
 *     GA_PLOT_DEVICE_FACTOR of the data's peak, else named by an arrow label
 *     at the top ("device 80.00 GiB above"), so a 242 MiB job on an 80 GiB
 *     device is not a flat line at the bottom;
 *   - OOMs close together share one cross with a span and one label of
 *     their count, events and classes, grouped as oom_group.h says for both
 *     plots;
 *   - labels never overlap: the device label and each OOM group's label get
 *     a box, tried at a few places around their point and then stacked away
 *     from it, and a label with no free place is left out rather than
 *     printed over another;
 *   - every curve stays visible: a line that coincides with the same line of
 *     an earlier configuration for at least half its samples (it would be
 *     drawn over it) is drawn GA_PLOT_OFFSET_PX higher per earlier copy, and
 *     the legend says so.
 *
 * Text boxes use a conservative width per character (GA_PLOT_CHAR_EM of the
 * font size); draw.c shrinks a text that would not fit its box. Private to
 * tools/plot and its tests. Thread-safety: works only on its arguments.
 */
#ifndef GA_TOOLS_PLOT_LAYOUT_H
#define GA_TOOLS_PLOT_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>

#include "tools/plot/series.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GA_PLOT_WIDTH 1200.0      /* canvas width in pixels (PNG) or points (SVG) */
#define GA_PLOT_AREA_TOP 60.0     /* the plot area's top edge (the title above it) */
#define GA_PLOT_AREA_H 470.0      /* the plot area's height */
#define GA_PLOT_DEVICE_FACTOR 4.0 /* the device line is drawn when device <= factor x data peak */
#define GA_PLOT_OFFSET_PX 3.0     /* the shift of a line that coincides with an earlier one */
#define GA_PLOT_LABEL_FONT 11.0   /* OOM and device labels */
#define GA_PLOT_CHAR_EM 0.66      /* box width per character, in font sizes (wider than sans-serif's) */
#define GA_PLOT_MAX_LABELS 8      /* OOM groups that get their label written by them */

/* An axis-aligned box in device units, y down. */
typedef struct ga_plot_rect {
    double x, y, w, h;
} ga_plot_rect_t;

/* A placed label: its box (text drawn left-aligned, vertically centred). */
typedef struct ga_plot_label {
    ga_plot_rect_t box;
    const char *text; /* for OOM labels the group's text; the device label's text is in the layout */
    size_t group;     /* the ga_plot_layout_t.groups index (OOM labels) */
} ga_plot_label_t;

struct ga_plot_oom_group; /* oom_group.h */

/* The three lines of a configuration, in ga_series_t's order. */
enum { GA_PLOT_REQUESTED, GA_PLOT_ALLOCATED, GA_PLOT_RESERVED, GA_PLOT_LINES };

typedef struct ga_plot_layout {
    double x0, y0, w, h;              /* the plot area (device units) */
    double xmax;                      /* event index at the right edge (0 at the left) */
    double ymax;                      /* bytes at the top edge (0 at the bottom) */
    double ystep;                     /* bytes between y ticks */
    double unit;                      /* bytes per axis unit (1, 2^10, ..., 2^40) */
    const char *unit_name;            /* "bytes", "KiB", "MiB", "GiB", "TiB" */
    double xstep;                     /* events between x ticks */
    double data_max;                  /* the largest value of any line or marked peak (bytes) */
    bool device_line;                 /* device_memory is within the axis: a dashed ceiling */
    bool device_above;                /* device_memory is above the axis: an arrow label at the top */
    bool device_labelled;             /* device_label was placed */
    ga_plot_rect_t device_label;      /* its box (an arrow label includes the arrow at its left) */
    char device_text[64];             /* "device 80.00 GiB" (", above" for an arrow label) */
    struct ga_plot_oom_group *groups; /* the OOM groups, configuration by configuration, each in
                                         event order (crosses placed: y set) */
    size_t n_groups;
    size_t n_labels; /* OOM labels placed, labels[0..n_labels) */
    ga_plot_label_t labels[GA_PLOT_MAX_LABELS];
    size_t n_series; /* configurations: offset and same_as have n_series x GA_PLOT_LINES entries */
    double *offset;  /* n_series x GA_PLOT_LINES: pixels each line is drawn higher (0 mostly) */
    size_t *same_as; /* n_series x GA_PLOT_LINES: the earlier series a line coincides with, or
                              SIZE_MAX */
} ga_plot_layout_t;

/*
 * ga_plot_layout_make: the layout of in (checked by plot.c: series arrays
 * consistent, OOM markers naming existing series). 0, or -1 when host memory
 * ran out. Free with ga_plot_layout_free.
 */
int ga_plot_layout_make(const ga_plot_input_t *in, ga_plot_layout_t *out);
void ga_plot_layout_free(ga_plot_layout_t *l);

/* Device coordinates of an event index and a byte value. */
double ga_plot_layout_x(const ga_plot_layout_t *l, double event);
double ga_plot_layout_y(const ga_plot_layout_t *l, double bytes);

/* ga_plot_oom_point: where OOM marker i's cross goes: on its configuration's
 * reserved line (else allocated, else requested) at its event, offset as
 * that line is. */
void ga_plot_oom_point(const ga_plot_layout_t *l, const ga_plot_input_t *in, size_t i, double *x, double *y);

/* ga_plot_rects_overlap: whether a and b share interior points. */
bool ga_plot_rects_overlap(const ga_plot_rect_t *a, const ga_plot_rect_t *b);

/* The line of kind (GA_PLOT_REQUESTED ...) of s, NULL when not recorded. */
const double *ga_plot_series_line(const ga_series_t *s, int kind);

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_PLOT_LAYOUT_H */
