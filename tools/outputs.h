/*
 * outputs.h: the files `galloc replay` writes besides its report: PyTorch
 * snapshots (--snapshot) and memory plots (--plot), and their names when one
 * run produces several.
 *
 * Both depend on parts of galloc built in other packages: the snapshot writer
 * (galloc_record_memory_history / galloc_snapshot_write in api/) and the plot
 * writer (//tools/plot). Each is compiled in only when its macro is defined in
 * tools/BUILD (GA_TOOLS_HAVE_SNAPSHOT, GA_TOOLS_HAVE_PLOT); without it the
 * functions fail with "not available yet" and the option exits 2.
 */
#ifndef GA_TOOLS_OUTPUTS_H
#define GA_TOOLS_OUTPUTS_H

#include <stdbool.h>
#include <stddef.h>

#include "api/galloc.h"
#include "tools/series.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether this build can write snapshots / plots. */
bool ga_outputs_have_snapshot(void);
bool ga_outputs_have_plot(void);

/* ga_outputs_record_history: start recording every event (GALLOC_HISTORY_ALL),
 * so the snapshot carries the replay's trace; max_entries bounds the trace
 * ring as PyTorch's _record_memory_history(max_entries=N) does (0 = keep
 * every entry). 0, or -1 with err set. */
int ga_outputs_record_history(galloc_allocator_t *a, size_t max_entries, char *err, size_t errlen);

/* ga_outputs_snapshot: write a's state and trace to path, as JSON if path ends
 * in ".json", else as the pickle _dump_snapshot writes. 0, or -1 with err. */
int ga_outputs_snapshot(galloc_allocator_t *a, const char *path, char *err, size_t errlen);

/* ga_outputs_annotate: a trace annotation ("step 8847") into the recorded
 * history, so the snapshot's external_annotations carries it. Best effort. */
void ga_outputs_annotate(galloc_allocator_t *a, const char *text);

/* ga_outputs_plot: draw in to path. 0, or -1 with err. */
int ga_outputs_plot(const char *path, const ga_plot_input_t *in, char *err, size_t errlen);

/*
 * ga_outputs_name: the file for the k-th of n outputs made from base: base
 * itself when n == 1, else base with ".<k+1>" before its extension
 * ("snap.pickle" -> "snap.2.pickle"). Returns a malloc'd string or NULL.
 */
char *ga_outputs_name(const char *base, size_t k, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_OUTPUTS_H */
