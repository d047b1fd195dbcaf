/*
 * report.h: what `galloc replay` prints: a side-by-side table per trace
 * (report_text.c) or one JSON document for the whole run (report_json.c).
 */
#ifndef GA_TOOLS_REPORT_H
#define GA_TOOLS_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "tools/replay.h"
#include "tools/trace_reader.h"

/* One replayed trace (one unit of one file), or one that could not be read. */
typedef struct ga_report_trace {
    const char *path;       /* as given on the command line */
    const char *unit;       /* "" or "device 1" */
    ga_format_t format;     /* detected or forced (AUTO if the file could not be opened) */
    const char *backend;    /* "sim" unless --backend */
    const ga_replay_t *rp;  /* NULL when the file could not be opened */
    const char *error;      /* open or read failure, NULL if none */
    const char *plot_path;  /* plot written there, NULL if none */
    const char *plot_error; /* why the plot failed, NULL if it did not */
} ga_report_trace_t;

/* Text: a table per trace, a column per configuration, then OOM details. */
void ga_report_text(FILE *out, const ga_report_trace_t *t);

/* JSON: begin writes the document's head, trace one entry of "traces",
 * end closes the document. */
void ga_report_json_begin(FILE *out, const char *backend);
void ga_report_json_trace(FILE *out, const ga_report_trace_t *t, bool first);
void ga_report_json_end(FILE *out);

/* ga_report_verdict: "fits", "OOM (fragmentation)", "OOM", "error" for a
 * column (shared by both outputs). */
const char *ga_report_verdict(const ga_replay_column_t *c);

/* Above this much reserved-but-unallocated memory at an OOM, the failure
 * points to fragmentation rather than a job that is too big (the lesson's
 * 1 GB rule of thumb). */
#define GA_REPORT_FRAGMENTATION_BYTES ((int64_t)1 << 30)

#endif /* GA_TOOLS_REPORT_H */
