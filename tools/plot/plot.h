/*
 * plot.h: draw memory over time, as `galloc replay --plot FILE` collects it
 * (tools/plot/series.h: per configuration requested / allocated / reserved bytes at
 * sampled event indices, plus OOM markers), to a PNG or SVG file with cairo.
 *
 * The plot: bytes against the event index, the y axis scaled to the job in
 * the unit that suits it; per configuration one colour, reserved as a solid
 * line, allocated dashed, requested dotted (a line that coincides with an
 * earlier configuration's drawn a few pixels higher, said in the legend); OOMs
 * as red crosses on the configuration's reserved curve, those close together
 * one cross with a span, labelled with their count, events and classes
 * (oom_group.h); the device size as a grey dashed ceiling, or an arrow label when it
 * is far above the data; a title, axis labels and ticks, and a legend under
 * the axes (a line-style key, then one colour per configuration). Labels never
 * overlap. layout.h holds these rules.
 *
 * Stacked by owner (some series has bands: galloc replay --plot with owners):
 * one panel per configuration, on the same scales, each with its live bytes
 * stacked by site (its top sites at its first OOM or reserved peak, then
 * "other sites"), its reserved line over them, the device line, its peaks
 * marked and labelled, its OOMs grouped into labelled marks, and a legend of
 * its sites with their bytes at that moment. stack.h holds these rules.
 *
 * Thread-safety: ga_plot_write uses only its arguments and cairo objects it
 * creates (cairo and fontconfig lock their own shared caches), so calls
 * writing different files may run concurrently.
 */
#ifndef GA_TOOLS_PLOT_PLOT_H
#define GA_TOOLS_PLOT_PLOT_H

#include <stddef.h>

#include "tools/plot/series.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * ga_plot_write: draw `in` into `path`; the format comes from the extension,
 * ".png" or ".svg" (any case). Series arrays may be NULL (that line is not
 * drawn) except event_index when n > 0.
 * Returns 0 on success; non-zero with a message in err (errlen bytes,
 * NUL-terminated) for an unknown extension, NULL or inconsistent input (an
 * OOM marker naming a series that does not exist), a file that cannot be
 * created or written (the OS reason is given), or a cairo error. A failed call
 * leaves no partial file behind and frees everything it allocated.
 */
int ga_plot_write(const char *path, const ga_plot_input_t *in, char *err, size_t errlen);

/*
 * ga_plot_check_path: whether ga_plot_write knows path's format (.png, .svg),
 * so a command that runs long before it plots can refuse a bad name first.
 * Returns 0, or non-zero with the message ga_plot_write would give in err.
 */
int ga_plot_check_path(const char *path, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_PLOT_PLOT_H */
