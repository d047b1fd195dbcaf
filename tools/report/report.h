/*
 * report.h: what `galloc replay` prints: a side-by-side table per trace
 * (report_text.c) or one JSON document for the whole run (report_json.c),
 * the OOM figures galloc fit prints the same way, and the exit codes.
 */
#ifndef GA_TOOLS_REPORT_REPORT_H
#define GA_TOOLS_REPORT_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "tools/engine/owners.h"
#include "tools/engine/replay.h"
#include "tools/job/job.h"
#include "tools/readers/trace_reader.h"

/* Exit codes of galloc replay (galloc fit reads 1 as "no configuration fits"). */
#define GA_EXIT_OK 0    /* every trace replayed without an OOM in any configuration */
#define GA_EXIT_OOM 1   /* an allocation ran out of memory in some configuration */
#define GA_EXIT_USAGE 2 /* bad usage or input: unreadable or garbled trace, bad --conf */

/* One replayed trace (one unit of one file), or one that could not be read. */
typedef struct ga_report_trace {
    const char *path;       /* as given on the command line */
    const ga_job_unit_t *u; /* the loaded unit, NULL when the file could not be read */
    ga_format_t format;     /* forced or AUTO when the file could not be read */
    const char *backend;    /* "sim" unless --backend */
    const ga_replay_t *rp;  /* NULL when the file could not be read */
    const char *error;      /* load failure, NULL if none */
    const char *plot_path;  /* plot written there, NULL if none */
    const char *plot_error; /* why the plot failed, NULL if it did not */
    double load_seconds;    /* reading the file */
    size_t top;             /* text: the sites shown per moment of the owners (--top; 0: the owners not shown) */
} ga_report_trace_t;

/* Text: a table per trace, a column per configuration, then OOM details.
 * Nothing for a trace with an error (rp NULL or error set): the caller says
 * it on stderr, and a replay cut short has no verdict. */
void ga_report_text(FILE *out, const ga_report_trace_t *t);

/* JSON: begin writes the document's head, trace one entry of "traces",
 * end closes the document. env: the environment's allocator variables were
 * applied (--env): "environment" lists them; otherwise it is {} (they were
 * not read, whatever is set). */
void ga_report_json_begin(FILE *out, const char *backend, bool env);
void ga_report_json_trace(FILE *out, const ga_report_trace_t *t, bool first);
void ga_report_json_end(FILE *out);

/* ga_report_verdict: "fits", "OOM (fragmentation)", "OOM (genuine)", "error" for a
 * column (shared by both outputs), into buf; where the outcome depends on a
 * cap known as a range, the outcome of the widest part and where it turns:
 * "OOM (genuine) unless the cap >= 14.21 GiB", "fits unless the cap < 2.04 GiB".
 * Returns buf. */
const char *ga_report_verdict(const ga_replay_column_t *c, char *buf, size_t len);

/* ga_report_oom_facts: one indented line: the OOM's class and its figures
 * (shared by galloc replay and galloc fit), and the advice that can work:
 * for fragmentation, the settings the configuration does not have yet (none
 * when it has them all); with none_fits (galloc fit found no configuration
 * that fits the device), no setting at all: the search has shown none is
 * enough. cap: the unit's inferred cap range (NULL or not inferred: the
 * facts' own fraction). */
void ga_report_oom_facts(FILE *out, const ga_oom_facts_t *f, const ga_job_cap_t *cap, bool none_fits);

/* ga_report_oom_message: PyTorch's message of an OOM as galloc gave it, with
 * the figures the trace cannot know said as what they are: a device total
 * known only as the memory the allocator could use ("at least"), a cap known
 * only as a range. Into buf. */
void ga_report_oom_message(const ga_job_unit_t *u, const char *msg, char *buf, size_t len);

/* ga_report_unit_text (unit.c): what the loaded unit is, before any
 * configuration: format, events, device and where its size comes from, the
 * recorded settings, how it starts, its cap. One line each, after prefix.
 * Shared by galloc replay and galloc fit. */
void ga_report_unit_text(FILE *out, const ga_job_unit_t *u, const char *prefix);

/* ga_report_unit_json: the same as JSON members (no braces): "file", "unit",
 * "format", "device", "events" (the prologue's included), "device_memory",
 * "device_memory_source", "recorded_memory", "settings_from_snapshot",
 * "recorded_pytorch_cuda_alloc_conf", "start", "seeded", "seed_error", "cap",
 * "skipped_entries", "prologue_allocs", "tag_events", "sleep_events",
 * "device_memory_assumed" (nothing says the size: the default), "trace_events"
 * (the trace's own, the prologue apart), "device_shown" ({"reserved_peak_bytes",
 * "reserved_first_bytes", "reserved_last_bytes", "largest_request_bytes"}: what
 * the trace shows the device held, each null when it does not say). Shared by
 * replay, fit and the Python API. */
void ga_report_unit_json(FILE *out, const ga_job_unit_t *u);

/* ga_report_unit_events: "4 events, 2 blocks live before the first event
 * (seeded)": the trace's events with the prologue counted apart (blocks
 * live before the first entry, seeded or allocated first; a profiler trace's
 * stand-ins for the memory in use before it), into buf. Returns the length. */
size_t ga_report_unit_events(const ga_job_unit_t *u, char *buf, size_t len);

/* ga_report_cap_text: "[2.00 GiB, 14.22 GiB)" of an inferred cap into buf. */
void ga_report_cap_text(const ga_job_cap_t *cap, char *buf, size_t len);

/* ga_report_json_oom_facts: the JSON value of "class" followed by the figures'
 * members ("fragmentation", "live_bytes": ..., "device_total_bytes": ...). */
void ga_report_json_oom_facts(FILE *out, const ga_oom_facts_t *f);

/* ga_report_usage_error (usage.c): on stderr, "galloc CMD: " and fmt with
 * arg, then where CMD's help is. Returns GA_EXIT_USAGE. */
int ga_report_usage_error(const char *cmd, const char *fmt, const char *arg);

/* ga_report_bad_format: the usage error for an unknown --format arg, with the
 * registry's format names. */
int ga_report_bad_format(const char *cmd, const char *arg);

/* The environment variables galloc_allocator_create applies under every
 * configuration (PyTorch's two names, then galloc's), NULL-terminated: the
 * commands say when one is set, since a forgotten export would silently
 * change the "defaults". */
extern const char *const ga_report_env[];

/* Who holds the memory (owners_text.c, owners_json.c; docs/owners.md).
 * ga_report_owners_text: column c's owners (none: nothing) under tag: the
 * moments asked for (GA_REPORT_OWNERS_*: its reserved peak, its first OOM),
 * top sites each, phases and holes.
 * ga_report_owners_json: the value of a result's "owners" (null without).
 * ga_report_owner_sites_json: the value of a trace's "owners": what it is
 * keyed by and every site with its stack. */
#define GA_REPORT_TOP 10         /* sites shown per moment unless --top says */
#define GA_REPORT_OWNERS_PEAK 1u /* ga_report_owners_text's moments: the reserved peak ... */
#define GA_REPORT_OWNERS_OOM 2u  /* ... the first OOM */
void ga_report_owners_text(FILE *out, const ga_job_unit_t *u, const ga_replay_column_t *c, const char *tag, size_t top,
                           unsigned moments);
void ga_report_owners_json(FILE *out, const ga_job_unit_t *u, const struct ga_owners *w);
void ga_report_owner_sites_json(FILE *out, const ga_owners_index_t *x);

/* ga_report_json_str: s as a JSON string (RFC 8259 escapes, ASCII output). */
void ga_report_json_str(FILE *out, const char *s);

/* ga_report_start_text (start.c): the note lines, each after prefix, on what
 * a trace says about its state before its first event: a mid-run trace's
 * seeded figures and their model, and the trace's own peaks; or what the
 * figures leave out when it cannot tell. Nothing for GA_START_EVENTS. */
void ga_report_start_text(FILE *out, const ga_reader_start_t *s, const char *prefix);

/* ga_report_json_start: the same as a JSON object: {"kind": "events" |
 * "seeded" | "unknown", "live_bytes", "reserved_bytes", "model" (seeded),
 * "not_included" (unknown), "trace_peak_allocated_bytes",
 * "trace_peak_reserved_bytes" (when the trace has totals)}. */
void ga_report_json_start(FILE *out, const ga_reader_start_t *s);

#endif /* GA_TOOLS_REPORT_REPORT_H */
