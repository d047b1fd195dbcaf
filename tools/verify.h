/*
 * verify.h: `galloc replay --verify SNAPSHOT`: replay a PyTorch snapshot's
 * trace through galloc under the snapshot's own settings and compare what
 * galloc's allocator did with what the traced allocator recorded.
 *
 * Two files: snap_view.c reads the part of a snapshot the comparison needs
 * (the device events of one device's trace and the final segments, from the
 * records of torch_snapshot.c) from either side, the recorded snapshot or the one
 * galloc writes of its replay; verify.c replays, compares and reports.
 *
 * What is compared, and why addresses are not: two devices (or PyTorch and
 * the sim device) hand out different virtual addresses, so an address says
 * nothing about the policy. The device events (segment_alloc, segment_free,
 * segment_map, segment_unmap, oom) are compared in order by action and size;
 * a segment_free must also release the same segment on both sides, named by
 * the ordinal of the segment_alloc that created it (its identity relative to
 * the run, not its address). The final segments are matched the same way and
 * compared by total size and by their blocks' sizes and states in order.
 *
 * Not thread-safe (one verification at a time per thread); no global state.
 */
#ifndef GA_TOOLS_VERIFY_H
#define GA_TOOLS_VERIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tools/trace_reader.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The device events, in the order MemoryViz and PyTorch's trace name them. */
typedef enum ga_dev_action {
    GA_DEV_SEGMENT_ALLOC = 0,
    GA_DEV_SEGMENT_FREE,
    GA_DEV_SEGMENT_MAP,
    GA_DEV_SEGMENT_UNMAP,
    GA_DEV_OOM
} ga_dev_action_t;

/* ga_dev_action_name: "segment_alloc", ... */
const char *ga_dev_action_name(ga_dev_action_t a);

/* One device event of a trace. */
typedef struct ga_dev_event {
    ga_dev_action_t action;
    uint64_t size;    /* bytes (segment, mapping or the failed request) */
    uint64_t addr;    /* as recorded (0 for oom): shown, never compared */
    uint64_t extra;   /* oom: device_free; else 0 */
    size_t entry;     /* index of the entry in device_traces[device] */
    int64_t segment;  /* segment_alloc/free: the ordinal of the segment_alloc that created the
                         segment in this trace, -1 when it was created before the trace began */
} ga_dev_event_t;

/* Block states of a snapshot's segments. */
typedef enum ga_block_state { GA_BLOCK_INACTIVE = 0, GA_BLOCK_ALLOCATED, GA_BLOCK_PENDING_FREE } ga_block_state_t;

typedef struct ga_snap_block {
    uint64_t size;
    ga_block_state_t state;
} ga_snap_block_t;

/* One final segment of the device. */
typedef struct ga_snap_segment {
    uint64_t addr;          /* shown only */
    uint64_t total_size;
    bool expandable;        /* is_expandable */
    int64_t segment;        /* ordinal of the segment_alloc that created it, -1 if not in the trace */
    size_t first_block;     /* its blocks are blocks[first_block .. first_block + n_blocks) */
    size_t n_blocks;
} ga_snap_segment_t;

/* What one device of a snapshot recorded, for the comparison. */
typedef struct ga_snap_view {
    int device;                 /* the device index */
    ga_dev_event_t *ev;         /* n_ev device events in trace order */
    size_t n_ev;
    ga_snap_segment_t *seg;     /* n_seg final segments of the device, in the file's order */
    size_t n_seg;
    ga_snap_block_t *blk;       /* n_blk blocks of those segments */
    size_t n_blk;
    size_t trace_entries;       /* entries in the device's trace */
    uint64_t untraced_blocks;   /* live blocks of the final segments never allocated in the trace,
                                   plus blocks freed in the trace without an alloc: > 0 means the
                                   trace starts mid-run */
    uint64_t untraced_segments; /* final non-expandable segments without a segment_alloc in the trace */
    uint64_t device_memory;     /* a lower bound of the device size from oom entries (reserved then
                                   + device_free), 0 when the trace has no oom entry */
} ga_snap_view_t;

/*
 * ga_snap_view_load: read device `device` of the snapshot at path, or with
 * device < 0 the unit-th device that has trace entries or segments (the units
 * of the trace reader, in the same order). Returns 0, or -1 with err set
 * ("PATH: problem"). Release with ga_snap_view_free.
 */
int ga_snap_view_load(const char *path, int device, size_t unit, ga_snap_view_t *out, char *err, size_t errlen);
void ga_snap_view_free(ga_snap_view_t *v);

/* Options of a verification (from galloc replay's command line). */
typedef struct ga_verify_opts {
    const char *backend;     /* NULL = sim */
    uint64_t device_memory;  /* --device-memory, 0 = the snapshot's bound, else 80 GiB */
    const char *conf;        /* --conf, NULL = the snapshot's recorded settings (or the defaults) */
    bool json;               /* write JSON entries (the caller writes the document's head and end) */
} ga_verify_opts_t;

/*
 * ga_verify_unit: verify unit `unit` of the open snapshot reader r (path as
 * given), printing the report (text, or one JSON entry of "traces" preceded by
 * a comma unless first). Returns the exit code: 0 every compared figure
 * agrees, 1 a divergence, 2 the snapshot cannot be verified (bad input, or a
 * trace that starts mid-run: see the message).
 */
int ga_verify_unit(ga_reader_t *r, const char *path, size_t unit, const ga_verify_opts_t *o, bool first, FILE *out);

/* ga_verify_json_begin / _end: the document around the entries. */
void ga_verify_json_begin(FILE *out);
void ga_verify_json_end(FILE *out);

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_VERIFY_H */
