/*
 * snap_view.h: what one device of a PyTorch snapshot recorded, in the terms
 * `galloc replay --verify` compares (verify.h): the device events of its trace
 * in order, each segment_alloc/free named by an ordinal rather than an
 * address, and the final segments with their blocks' sizes and states. Read
 * the same way from a snapshot PyTorch recorded and from one galloc wrote of
 * its replay, from the records of torch_snapshot.c (snap_view.c).
 *
 * Also what the replay learns from a snapshot before it starts: whether the
 * trace starts mid-run (untraced blocks and segments) and a lower bound of the
 * device's size from its oom entries.
 *
 * Orphan entries: frees the trace cannot explain, which no replay can
 * reproduce. A free_requested or free_completed of an address the trace had
 * not allocated before it is a block live before the trace (a mid-run start,
 * which seed.h rebuilds) when the address lies in a segment that existed at
 * the trace's first entry (a final segment no segment_alloc of the trace
 * made, a segment the trace frees without having made it, an expandable
 * segment's mapped or unmapped pages); otherwise it is an orphan. A
 * segment_free of an address the trace already freed without a segment_alloc
 * since, or a segment_unmap of pages it already unmapped without a
 * segment_map since, is an orphan too. Orphans are marked and counted, never
 * compared.
 *
 * Not thread-safe (the file cache, snapfile.h); no other global state.
 */
#ifndef GA_TOOLS_SNAPSHOT_SNAP_VIEW_H
#define GA_TOOLS_SNAPSHOT_SNAP_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The device events, in the order MemoryViz and PyTorch's trace name them. */
typedef enum ga_dev_action {
    GA_DEV_SEGMENT_ALLOC = 0,
    GA_DEV_SEGMENT_FREE,
    GA_DEV_SEGMENT_MAP,
    GA_DEV_SEGMENT_UNMAP,
    GA_DEV_OOM,
    /* The block events (ga_snap_view_t.bev): compared by kind, not in the
     * device-event sequence. */
    GA_DEV_ALLOC,
    GA_DEV_FREE_REQUESTED,
    GA_DEV_FREE_COMPLETED,
    GA_DEV_N_ACTIONS
} ga_dev_action_t;

/* ga_dev_action_name: "segment_alloc", ... */
const char *ga_dev_action_name(ga_dev_action_t a);

/* One device event of a trace. */
typedef struct ga_dev_event {
    ga_dev_action_t action;
    uint64_t size;   /* bytes (segment, mapping or the failed request) */
    uint64_t addr;   /* as recorded (0 for oom): shown, never compared */
    uint64_t extra;  /* oom: device_free; else 0 */
    size_t entry;    /* index of the entry in device_traces[device] */
    int64_t segment; /* segment_alloc/free: the ordinal of the segment_alloc that created the
                         segment in this trace, -1 when it was created before the trace began */
    bool orphan;     /* an orphan entry (see above): not compared */
} ga_dev_event_t;

/* Block states of a snapshot's segments. */
typedef enum ga_block_state { GA_BLOCK_INACTIVE = 0, GA_BLOCK_ALLOCATED, GA_BLOCK_PENDING_FREE } ga_block_state_t;

typedef struct ga_snap_block {
    uint64_t size;
    ga_block_state_t state;
} ga_snap_block_t;

/* One final segment of the device. */
typedef struct ga_snap_segment {
    uint64_t addr; /* shown only */
    uint64_t total_size;
    bool expandable;    /* is_expandable */
    int64_t pool_id[2]; /* segment_pool_id: (0, 0) the default pools, else a private pool */
    int64_t segment;    /* ordinal of the segment_alloc that created it, -1 if not in the trace */
    size_t first_block; /* its blocks are blocks[first_block .. first_block + n_blocks) */
    size_t n_blocks;
} ga_snap_segment_t;

/* What one device of a snapshot recorded, for the comparison. */
typedef struct ga_snap_view {
    int device;         /* the device index */
    ga_dev_event_t *ev; /* n_ev device events in trace order */
    size_t n_ev;
    ga_dev_event_t *bev; /* n_bev block events (alloc, free_requested, free_completed: size
                                   as recorded, segment -1) in trace order */
    size_t n_bev;
    ga_snap_segment_t *seg; /* n_seg final segments of the device, in the file's order */
    size_t n_seg;
    ga_snap_block_t *blk; /* n_blk blocks of those segments */
    size_t n_blk;
    size_t trace_entries;        /* entries in the device's trace */
    uint64_t untraced_blocks;    /* live blocks of the final segments never allocated in the trace,
                                   plus blocks freed in the trace without an alloc inside a segment
                                   that existed at its first entry: > 0 means the trace starts
                                   mid-run */
    size_t orphans;              /* orphan entries (see above), in ev and bev marked orphan */
    ga_dev_event_t first_orphan; /* the first of them (its entry, action and address) */
    uint64_t untraced_segments;  /* final non-expandable segments without a segment_alloc in the trace */
    uint64_t device_memory;      /* a lower bound of the device size from oom entries (reserved then
                                   + device_free), 0 when the trace has no oom entry */
} ga_snap_view_t;

struct ga_torch_snapshot; /* torch_snapshot.h */

/*
 * ga_snap_view_load: read device `device` of snapshot s (path names it in
 * messages), or with device < 0 the unit-th device that has trace entries or
 * segments (the units of the trace reader, in the same order). A bare list
 * of segments (torch.cuda.memory_snapshot()) reads as segments without a
 * trace. Returns 0, or -1 with err set ("PATH: problem"). Release with
 * ga_snap_view_free.
 */
int ga_snap_view_load(const struct ga_torch_snapshot *s, const char *path, int device, size_t unit, ga_snap_view_t *out,
                      char *err, size_t errlen);
void ga_snap_view_free(ga_snap_view_t *v);

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_SNAPSHOT_SNAP_VIEW_H */
