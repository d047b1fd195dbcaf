/*
 * series.h: memory over time, as `galloc replay --plot FILE` and
 * `galloc fit --plot FILE` hand it to the plot writer (tools/plot: ga_plot_write in tools/plot/plot.h).
 *
 * One ga_series_t per configuration (a column of the replay), sampled at the
 * same event indices in every series of one input: every `stride` events on a
 * grid that coarsens as the trace grows, so a series never has more than
 * GA_SERIES_MAX_POINTS points, plus the last event. Values are bytes as
 * doubles (exact up to 2^53 bytes, far beyond any device). OOM markers say
 * where an allocation failed in which configuration.
 *
 * Ownership: everything is owned by the replay and valid only during the
 * ga_plot_write call; the writer copies what it keeps. Plain C, no allocator
 * header needed.
 */
#ifndef GA_TOOLS_PLOT_SERIES_H
#define GA_TOOLS_PLOT_SERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Upper bound of points per series (the last event may add one more). */
#define GA_SERIES_MAX_POINTS 2000

/* One band of a series stacked by owner: the live bytes of one site (the
 * code that allocated them, docs/owners.md), or of all the sites not named. */
typedef struct ga_series_band {
    const char *label;   /* the site ("train.py:35 step"), or "other sites" */
    const double *bytes; /* its live bytes at each of the series' points */
    double at_moment;    /* its bytes at the moment the bands were chosen at (the legend's figure) */
    bool other;          /* the band of the sites not named (drawn grey) */
} ga_series_band_t;

/* One configuration's memory over the replay. Members after reserved are
 * optional: zeroed, the series is drawn as lines. */
typedef struct ga_series {
    const char *label;         /* the --conf string, or "defaults" (PyTorch's defaults) */
    size_t n;                  /* points in each array below */
    const double *event_index; /* x: 0-based event index, strictly increasing */
    const double *requested;   /* bytes the trace asked for and still holds (requested_bytes.all.current) */
    const double *allocated;   /* bytes in allocated blocks, after rounding (allocated_bytes.all.current) */
    const double *reserved;    /* bytes the allocator holds from the device (reserved_bytes.all.current) */
    /* Stacked by owner (galloc replay --plot with owners): when any series of
     * an input has bands, every series is drawn as a panel of stacked bands
     * under its reserved line (plot.h). */
    size_t n_bands;                /* bands, bottom first: the top sites, most bytes first, then "other sites" */
    const ga_series_band_t *bands; /* n_bands */
    const char *bands_at;          /* the moment they were chosen at: "the reserved peak", "the first OOM" */
    bool has_peaks;                /* the peaks below are known */
    double peak_reserved_event;    /* the first event at which reserved memory reached its peak (0 also
                                       for the state a mid-run trace starts in) ... */
    double peak_reserved;          /* ... and that peak, bytes */
    double peak_allocated_event;   /* the same for allocated memory */
    double peak_allocated;
    uint64_t ooms_after; /* OOMs of this configuration after its last marker that the input does not list
                            (a replay details its first 100): its last OOM group's label counts them */
} ga_series_t;

/* An allocation that failed with out-of-memory during the replay. */
typedef struct ga_oom_marker {
    double event_index; /* 0-based event index of the failed allocation */
    size_t series;      /* index into ga_plot_input_t.series of the configuration it failed in */
    const char *label;  /* its class ("fragmentation", "genuine") written by the cross, so the plot
                           says whether a setting can help; NULL or "" for none */
} ga_oom_marker_t;

/* Everything one plot shows: one trace replayed under several configurations. */
typedef struct ga_plot_input {
    const char *title;         /* the trace file (and device, for a multi-device snapshot) */
    uint64_t device_memory;    /* simulated device size in bytes (a ceiling line); 0 = unknown */
    uint64_t events;           /* events replayed (the x range is [0, events)) */
    size_t n_series;           /* configurations */
    const ga_series_t *series; /* n_series entries, in column order */
    size_t n_ooms;             /* OOM markers (at most 100 per configuration are listed) */
    const ga_oom_marker_t *ooms;
} ga_plot_input_t;

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_PLOT_SERIES_H */
