/*
 * outputs.h: the files `galloc replay` writes besides its report: PyTorch
 * snapshots (--snapshot, handed to the engine as ga_replay_snapshot_ops_t:
 * outputs sit above the engine, never below) and memory plots (--plot, also
 * `galloc fit --plot`), and their names when one run produces several.
 *
 * Both depend on parts of galloc built in other packages: the snapshot writer
 * (galloc_record_memory_history / galloc_snapshot_write, front/) and the plot
 * writer (//tools/plot). Each is compiled in only when its macro is defined in
 * tools/report/BUILD (GA_TOOLS_HAVE_SNAPSHOT, GA_TOOLS_HAVE_PLOT); without it the
 * functions fail with "not available yet" and the option exits 2.
 */
#ifndef GA_TOOLS_REPORT_OUTPUTS_H
#define GA_TOOLS_REPORT_OUTPUTS_H

#include <stdbool.h>
#include <stddef.h>

#include <galloc/galloc.h>
#include "tools/engine/replay.h"
#include "tools/plot/series.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether this build can write snapshots / plots. */
bool ga_outputs_have_snapshot(void);
bool ga_outputs_have_plot(void);

/* ga_outputs_snapshot_ops: galloc's snapshot writer for the replay engine:
 * records every event (GALLOC_HISTORY_ALL, a bounded ring as PyTorch's
 * _record_memory_history(max_entries=N) keeps when asked), writes JSON for a
 * path ending in ".json", else the pickle _dump_snapshot writes, and keeps
 * annotations as START markers in external_annotations. */
extern const ga_replay_snapshot_ops_t ga_outputs_snapshot_ops;

/* ga_outputs_plot: draw in to path. 0, or -1 with err. */
int ga_outputs_plot(const char *path, const ga_plot_input_t *in, char *err, size_t errlen);

/* ga_outputs_plot_check: whether path names a plot format this build can
 * write and can be created (ga_outputs_check_writable), checked before a long
 * run rather than after it. 0, or -1 with err. */
int ga_outputs_plot_check(const char *path, char *err, size_t errlen);

/* ga_outputs_check_writable: whether path can be created or, existing,
 * written: its directory exists and is writable. Leaves no file behind and an
 * existing one untouched. The numbered names (ga_outputs_name) share path's
 * directory, so checking path answers for them. 0, or -1 with err. */
int ga_outputs_check_writable(const char *path, char *err, size_t errlen);

/* One configuration's lines on a plot, as a replay left them. */
typedef struct ga_plot_run {
    const char *label;           /* legend text: the configuration, "defaults" for PyTorch's */
    const ga_sampler_t *sampler; /* its memory over the replay (n == 0: no line) */
    const ga_replay_oom_t *ooms; /* n_ooms failures, each marked with its class */
    size_t n_ooms;
    const struct ga_owners *owners; /* its owners (with the sampler's per-site samples): the plot is
                                       stacked by site; NULL: lines (galloc fit, --no-owners) */
    uint64_t ooms_total;            /* every failure, listed or not (ga_replay_column_t.ooms_total);
                                       0: n_ooms */
} ga_plot_run_t;

/*
 * ga_outputs_plot_runs: the plot of one trace replayed under n configurations
 * (galloc replay's columns, galloc fit's defaults and winner) on a device of
 * device_memory bytes (0: no ceiling line), events events long, to path.
 * The one place replay results become a ga_plot_input_t, so both commands
 * draw the same thing. When a run has owners and per-site samples, every run
 * is a panel of its live bytes stacked by its GA_SAMPLER_TOP_SITES top sites
 * (ga_sampler_bands) under its reserved line, with its peaks marked (plot.h).
 * 0, or -1 with err.
 */
int ga_outputs_plot_runs(const char *path, const char *title, uint64_t device_memory, uint64_t events,
                         const ga_plot_run_t *runs, size_t n, char *err, size_t errlen);

/*
 * ga_outputs_name: the file for the k-th of n outputs made from base: base
 * itself when n == 1, else base with ".<k+1>" before its extension
 * ("snap.pickle" -> "snap.2.pickle"). Returns a malloc'd string or NULL.
 */
char *ga_outputs_name(const char *base, size_t k, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_REPORT_OUTPUTS_H */
