/*
 * stack.h: where everything goes on the plot of memory stacked by owner
 * (plot.h: an input whose series have bands), decided before any drawing
 * (stack_draw.c only follows it), so the rules are testable without pixels:
 *
 *   - one panel per configuration, one under the other, on the same scales
 *     (layout.h's y scale and unit over every series, the device line or
 *     arrow), so the panels compare at a glance; each has its title, its
 *     axes and a legend of its bands (the colour, the bytes at the moment
 *     they were chosen at, the site);
 *   - a site keeps its colour in every panel (matched by name) unless that
 *     colour is already taken in the panel; "other sites" is always grey;
 *   - OOMs of a panel close together share one mark, labelled with their
 *     count, events and classes ("3 OOMs (events 40-42): fragmentation"), as
 *     oom_group.h groups them in both plots;
 *   - the peaks (reserved, allocated) are marked at their true values and
 *     labelled with them; labels are placed as layout.h places them: tried
 *     around their point, then stacked away, never over another label, and
 *     left out when no place is free.
 *
 * Private to tools/plot and its tests. Thread-safety: works only on its
 * arguments.
 */
#ifndef GA_TOOLS_PLOT_STACK_H
#define GA_TOOLS_PLOT_STACK_H

#include <stdbool.h>
#include <stddef.h>

#include "tools/plot/layout.h"
#include "tools/plot/oom_group.h"
#include "tools/plot/series.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GA_PLOT_PANEL_H 340.0    /* a panel's plot area height */
#define GA_PLOT_MAX_MARKS 32     /* marks per panel (OOM groups and peaks); later OOMs join the last group */
#define GA_PLOT_BAND_COLORS 8    /* distinct band colours (tab10 without its grey and red) */
#define GA_PLOT_OTHER_COLOR (-1) /* the colour index of "other sites": grey */

/* What a mark marks. */
typedef enum ga_plot_mark_kind {
    GA_PLOT_MARK_OOMS = 0,      /* one or more OOMs close together: a cross */
    GA_PLOT_MARK_PEAK_RESERVED, /* the reserved peak: a filled triangle on the reserved line */
    GA_PLOT_MARK_PEAK_ALLOCATED /* the allocated peak: a hollow triangle at the stack's top */
} ga_plot_mark_kind_t;

/* A marked point with its label. */
typedef struct ga_plot_mark {
    ga_plot_mark_kind_t kind;
    double x, y;        /* the point (device units) */
    double x_end;       /* OOM groups: the x of its last OOM (x when one) */
    size_t count;       /* OOM groups: the OOMs in it */
    size_t first_oom;   /* OOM groups: its first marker (an index into the input's ooms) */
    bool labelled;      /* box holds the label (false: no free place, left out) */
    ga_plot_rect_t box; /* the label's box */
    char text[112];     /* "3 OOMs (events 40-42): fragmentation", "peak reserved 12.00 GiB" */
} ga_plot_mark_t;

/* One configuration's panel. */
typedef struct ga_plot_panel {
    size_t series;          /* the series it shows */
    double title_y;         /* the baseline area of its title (top of the text) */
    ga_plot_layout_t frame; /* its axes: the shared scales with this panel's y0, and its device
                                    label (offset arrays NULL, no OOM labels: marks hold them) */
    ga_plot_mark_t marks[GA_PLOT_MAX_MARKS];
    size_t n_marks;
    int *colors;        /* per band: an index below GA_PLOT_BAND_COLORS, or GA_PLOT_OTHER_COLOR */
    double legend_y;    /* the top of its legend's first row */
    size_t legend_rows; /* rows of its legend (two bands a row) */
} ga_plot_panel_t;

typedef struct ga_plot_stack_layout {
    ga_plot_layout_t axes;   /* the shared scales (layout.h) over every series */
    ga_plot_panel_t *panels; /* one per series, in order */
    size_t n_panels;
    double key_y;  /* the top of the key row under the last panel */
    double height; /* the canvas height */
} ga_plot_stack_layout_t;

/* ga_plot_mark_symbol: the box m's symbol covers (no label goes over it):
 * the reserved peak's triangle above its point, the allocated peak's below
 * (so the two show when the peaks coincide), an OOM group's cross and span. */
ga_plot_rect_t ga_plot_mark_symbol(const ga_plot_mark_t *m);

/* ga_plot_stacked: whether in is drawn stacked (some series has bands). */
bool ga_plot_stacked(const ga_plot_input_t *in);

/* ga_plot_stack_height: the canvas height of in's stacked plot. */
double ga_plot_stack_height(const ga_plot_input_t *in);

/*
 * ga_plot_stack_layout_make: the stacked layout of in (checked by plot.c).
 * 0, or -1 when host memory ran out. Free with ga_plot_stack_layout_free.
 */
int ga_plot_stack_layout_make(const ga_plot_input_t *in, ga_plot_stack_layout_t *out);
void ga_plot_stack_layout_free(ga_plot_stack_layout_t *l);

/* ga_plot_format_bytes: "12.00 GiB", "512.00 MiB", "900 bytes": the figures
 * labels carry, into buf. */
void ga_plot_format_bytes(double bytes, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_PLOT_STACK_H */
