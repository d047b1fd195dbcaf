/*
 * oom_group.h: OOMs close together on a plot share one labelled mark, in
 * both plots (the lines of layout.h and the stacked panels of stack.h): a
 * burst of failures reads as one event with its count, its events and its
 * classes ("100 OOMs (events 460-559): fragmentation"), not a red bar of
 * crosses under a pile of labels.
 *
 * One configuration's OOM markers, in event order, are grouped: an OOM joins
 * the group before it when it lies within GA_PLOT_OOM_GROUP_PX of the group's
 * first OOM (close together), or within GA_PLOT_OOM_RUN_PX of its last (a run:
 * their crosses would touch, however long the run), else it starts a group.
 * Past the caller's limit of groups every later OOM joins the last one. The
 * configuration's OOMs the input does not list (ga_series_t.ooms_after) are
 * counted on its last group's label ("...: fragmentation; 22 more after").
 *
 * Private to tools/plot and its tests. Thread-safety: works only on its
 * arguments.
 */
#ifndef GA_TOOLS_PLOT_OOM_GROUP_H
#define GA_TOOLS_PLOT_OOM_GROUP_H

#include <stdbool.h>
#include <stddef.h>

#include "tools/plot/layout.h"
#include "tools/plot/series.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GA_PLOT_OOM_GROUP_PX 40.0 /* an OOM this close to its group's first OOM joins it */
#define GA_PLOT_OOM_RUN_PX 12.0   /* ... or this close to its last: crosses that would touch */
#define GA_PLOT_OOM_MARK_R 6.5    /* half the side of the box a group's cross covers */
#define GA_PLOT_OOM_SPAN_DY 9.0   /* a group's span is drawn this far under its crosses' line */

/* One group of a configuration's OOMs: one cross at its first, a span to its
 * last, one label. */
typedef struct ga_plot_oom_group {
    size_t series;      /* the configuration (ga_plot_input_t.series index) */
    size_t first_oom;   /* its first marker (an index into ga_plot_input_t.ooms) */
    size_t count;       /* markers in it */
    double first_event; /* the event index of its first marker ... */
    double last_event;  /* ... and of its last */
    double x, x_end;    /* their x (device units) */
    double y;           /* where its cross goes (the caller's: on the reserved line) */
    char text[112];     /* "OOM (event 90): genuine", "3 OOMs (events 40-42): 2
                                    fragmentation, 1 genuine" */
} ga_plot_oom_group_t;

/*
 * ga_plot_oom_groups: the groups of series' OOM markers of in, at most max
 * (max > 0), in event order, into out, on frame's x scale; y is left 0 for
 * the caller. order: scratch room for in->n_ooms indices. Returns the number
 * of groups.
 */
size_t ga_plot_oom_groups(const ga_plot_input_t *in, size_t series, const ga_plot_layout_t *frame, size_t *order,
                          ga_plot_oom_group_t *out, size_t max);

/* ga_plot_oom_group_symbol: the box g's cross and span cover (no label goes
 * over it). */
ga_plot_rect_t ga_plot_oom_group_symbol(const ga_plot_oom_group_t *g);

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_PLOT_OOM_GROUP_H */
