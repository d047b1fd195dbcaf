/*
 * engine_int.h: what the engine's files share (replay.c runs one replay,
 * column.c makes a column of one or more, cap.c infers a unit's cap).
 * Private to tools/engine.
 */
#ifndef GA_TOOLS_ENGINE_ENGINE_INT_H
#define GA_TOOLS_ENGINE_ENGINE_INT_H

#include "tools/engine/replay.h"

/* The state of one replay besides its column. */
typedef struct ga_engine_run {
    size_t min_free;         /* lowest device free memory seen: the reserved peak (watch) */
    int64_t peak_seen;       /* the reserved figure at_peak was taken at */
    bool watch;              /* opts.watch_peak */
    uint64_t first_oom;      /* event index of the first OOM, UINT64_MAX: none */
    bool first_oom_expected; /* it is one the traced run had too */
    const char *annotation;  /* the last annotate text, "" before any */
    uint64_t events;         /* events replayed */
} ga_engine_run_t;

/* What one replay's caller learns besides the column. */
typedef struct ga_engine_out {
    uint64_t first_oom;
    bool first_oom_expected;
} ga_engine_out_t;

/* One replay: which configuration, on what, under which cap. */
typedef struct ga_engine_cfg {
    const ga_replay_opts_t *o;
    const ga_replay_spec_t *spec;
    uint64_t capacity;         /* the sim device's size */
    uint64_t cap;              /* a memory-fraction cap from the first event, bytes (0: none) */
    uint64_t classify_cap;     /* the cap OOMs are classified under (0: cap) */
    bool full;                 /* the column's figures: sample, progress (else a probe) */
    const char *snapshot_path; /* the snapshot to write, NULL: none */
    ga_engine_out_t *out;
} ga_engine_cfg_t;

/* ga_engine_run: replay u under g into c (zeroed). 0, or -1 when host memory
 * ran out; a configuration that cannot be made is a result (create_status). */
int ga_engine_run(const ga_job_unit_t *u, const ga_engine_cfg_t *g, ga_replay_column_t *c);

/* ga_engine_finish: final sample, snapshot, stats, and the allocator's end. */
void ga_engine_finish(ga_replay_column_t *c, const ga_engine_run_t *r, bool check);

/* ga_engine_history_source (history.c): make c's recorded history carry the
 * recorded stacks and times of the events replayed (galloc_set_trace_source).
 * ga_engine_history_free: its buffers. */
galloc_status_t ga_engine_history_source(ga_replay_column_t *c);
void ga_engine_history_free(ga_replay_column_t *c);

/* ga_engine_now: a monotonic clock in seconds. */
double ga_engine_now(void);

/* Caps are searched in steps of this much: every segment, mapping and
 * reserved total is a multiple of 2 MiB, so what a cap admits changes only
 * at multiples of it. */
#define GA_ENGINE_CAP_STEP ((uint64_t)2 << 20)

#endif /* GA_TOOLS_ENGINE_ENGINE_INT_H */
