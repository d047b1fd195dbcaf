/*
 * snapshot.h: build PyTorch's memory snapshot dictionary (what
 * torch.cuda.memory._snapshot() returns and _dump_snapshot pickles) and write
 * it as pickle or JSON, for PyTorch's memory visualizer (MemoryViz.js) and
 * torch.cuda._memory_viz.
 *
 * The pool describes its state without knowing the format:
 *
 *   ga_snapshot_t s;
 *   ga_snapshot_init(&s, &trace, device);
 *   for each segment (any order; written in address order):
 *       ga_snapshot_segment(&s, &info);
 *       for each block of it, in address order:
 *           ga_snapshot_block(&s, size, requested_size, state, stack_id);
 *   ga_snapshot_settings(&s, &settings);
 *   rc = ga_snapshot_commit(&s, rc, &trace, path, GALLOC_SNAPSHOT_PICKLE, msg, sizeof(msg));
 *
 * As in PyTorch's snapshot() (DeviceCachingAllocator::snapshot), a block's
 * address is the segment's plus the sizes of the blocks before it (blocks
 * tile their segment), and a segment's total_size, allocated_size,
 * active_size and requested_size are sums over its blocks: all sizes; sizes
 * of allocated blocks; sizes of active (allocated or pending free) blocks;
 * requested sizes of active blocks. A "snapshot" trace entry with
 * size = total active bytes is recorded by ga_snapshot_commit, as PyTorch
 * records one.
 *
 * In token mode (trace.h) the stack ids of blocks, segments and entries are
 * a trace source's tokens: their frames are the source's, asked for while
 * writing (with the action of the entry, "block" or "segment").
 *
 * Writing streams from the recorder's rings: the caller must hold the
 * allocator's lock from the first ga_snapshot_segment until the write
 * returns, and the ga_trace_t must outlive the snapshot.
 *
 * Locking: a snapshot is used by one thread; see above for the recorder.
 */
#ifndef GA_TRACE_SNAPSHOT_H
#define GA_TRACE_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <galloc/galloc_status.h>
#include <galloc/galloc_trace.h>
#include "trace/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A block's state, PyTorch's strings. */
typedef enum ga_snapshot_block_state {
    GA_SNAPSHOT_INACTIVE = 0,           /* "inactive": free, cached */
    GA_SNAPSHOT_ACTIVE_ALLOCATED = 1,   /* "active_allocated": live */
    GA_SNAPSHOT_ACTIVE_PENDING_FREE = 2 /* "active_pending_free": freed, waiting on stream events */
} ga_snapshot_block_state_t;

/* What the caller says about a segment. */
typedef struct ga_snapshot_segment_info {
    int device;         /* "device" */
    uint64_t address;   /* "address" */
    uint64_t stream;    /* "stream" (written as int64, as PyTorch's int64_t(stream)) */
    bool is_large;      /* "segment_type": "large" if true, else "small" */
    bool is_expandable; /* "is_expandable" */
    int64_t pool_id[2]; /* "segment_pool_id" 2-tuple; (0, 0) = default pool */
    uint32_t stack_id;  /* "frames": the segment's allocation stack (0 = none) */
} ga_snapshot_segment_info_t;

/* A segment as stored: info plus sums over its blocks. */
typedef struct ga_snapshot_segment {
    ga_snapshot_segment_info_t info; /* as the caller gave it */
    size_t first_block;              /* index in blocks */
    size_t nblocks;                  /* its blocks, address order */
    uint64_t total_size;             /* sum of block sizes */
    uint64_t allocated_size;         /* sum of sizes of allocated blocks */
    uint64_t active_size;            /* sum of sizes of active blocks */
    uint64_t requested_size;         /* sum of requested sizes of active blocks */
} ga_snapshot_segment_t;

typedef struct ga_snapshot_block {
    uint64_t size;           /* "size" */
    uint64_t requested_size; /* "requested_size" */
    uint32_t stack_id;       /* "frames" (0 = none) */
    uint8_t state;           /* a ga_snapshot_block_state_t */
} ga_snapshot_block_t;

/* Most entries of roundup_power2_divisions (PyTorch has 16). */
#define GA_SNAPSHOT_ROUNDUP_MAX 32

/* "allocator_settings", with memory_snapshot.cpp's keys and value types. */
typedef struct ga_snapshot_settings {
    const char *alloc_conf;                 /* "PYTORCH_CUDA_ALLOC_CONF": the settings string in force (copied) */
    int64_t max_split_size;                 /* "max_split_size": bytes; -1 = unlimited (SIZE_MAX as int64) */
    double garbage_collection_threshold;    /* "garbage_collection_threshold" (float) */
    bool expandable_segments;               /* "expandable_segments" */
    int64_t pinned_num_register_threads;    /* "pinned_num_register_threads" */
    bool release_lock_on_cudamalloc;        /* "release_lock_on_cudamalloc" */
    bool pinned_use_cuda_host_register;     /* "pinned_use_cuda_host_register" */
    bool graph_capture_record_stream_reuse; /* "graph_capture_record_stream_reuse" (newest PyTorch) */
    size_t roundup_count;                   /* entries in roundup_power2_divisions */
    int64_t roundup_power2_divisions[GA_SNAPSHOT_ROUNDUP_MAX]; /* written as {"1": d0, "2": d1, "4": d2, ...} */
} ga_snapshot_settings_t;

typedef struct ga_snapshot {
    ga_trace_t *trace;               /* frames, trace, annotations; NULL = none of them */
    int device;                      /* the allocator's device */
    ga_snapshot_segment_t *segs;     /* in the order given; sorted by address when written */
    size_t nsegs;                    /* segments in use */
    size_t segs_cap;                 /* slots of segs */
    ga_snapshot_block_t *blocks;     /* every segment's blocks, segment after segment */
    size_t nblocks;                  /* blocks in use */
    size_t blocks_cap;               /* slots of blocks */
    bool has_settings;               /* ga_snapshot_settings was called */
    ga_snapshot_settings_t settings; /* alloc_conf points at conf_copy */
    char *conf_copy;                 /* owned */
    uint64_t total_active;           /* sum of active_size over segments */
} ga_snapshot_t;

/* ga_snapshot_init: empty snapshot of `device`'s allocator, whose recorder is
 * trace (NULL: no frames, empty device_traces and external_annotations). */
void ga_snapshot_init(ga_snapshot_t *s, ga_trace_t *trace, int device);

/* ga_snapshot_destroy: free what the builder allocated. */
void ga_snapshot_destroy(ga_snapshot_t *s);

/* ga_snapshot_segment: start a segment; its blocks follow. GALLOC_OK or
 * GALLOC_E_NOMEM (snapshot unchanged). */
galloc_status_t ga_snapshot_segment(ga_snapshot_t *s, const ga_snapshot_segment_info_t *info);

/* ga_snapshot_block: the next block (address order) of the last segment.
 * GALLOC_OK; GALLOC_E_INVAL (no segment yet, bad state); GALLOC_E_NOMEM
 * (snapshot unchanged). */
galloc_status_t ga_snapshot_block(ga_snapshot_t *s, uint64_t size, uint64_t requested_size,
                                  ga_snapshot_block_state_t state, uint32_t stack_id);

/* ga_snapshot_settings: the allocator_settings to write (copied). Without
 * this call the dict is written empty. GALLOC_OK, GALLOC_E_INVAL (more than
 * GA_SNAPSHOT_ROUNDUP_MAX roundup entries), GALLOC_E_NOMEM. */
galloc_status_t ga_snapshot_settings(ga_snapshot_t *s, const ga_snapshot_settings_t *settings);

/* ga_snapshot_total_active: bytes in active blocks (the "snapshot" entry's size). */
static inline uint64_t ga_snapshot_total_active(const ga_snapshot_t *s)
{
    return s->total_active;
}

/* ga_snapshot_write: symbolize the frames still unresolved (cold: libdw) and
 * write the snapshot to out (not closed). Returns GALLOC_OK, GALLOC_E_IO (a
 * write failed), GALLOC_E_INVAL (bad format, NULL out), GALLOC_E_NOMEM. */
galloc_status_t ga_snapshot_write(ga_snapshot_t *s, FILE *out, galloc_snapshot_format_t format);

/* ga_snapshot_write_path: ga_snapshot_write to a new file at path. On
 * failure the partial file is removed and err (if non-NULL, errlen bytes)
 * names the path and the OS error. */
galloc_status_t ga_snapshot_write_path(ga_snapshot_t *s, const char *path, galloc_snapshot_format_t format, char *err,
                                       size_t errlen);

/* ga_snapshot_commit: what every snapshot ends with, whatever the outcome of
 * building it (built: the status of the builder calls). If building failed,
 * only destroys s. Otherwise records PyTorch's "snapshot" trace entry (the
 * active bytes) in trace (not in token mode: a replay's record took no
 * snapshot there), writes s to path (ga_snapshot_write_path) and
 * destroys s. On failure msg (len bytes) holds "snapshot: " and the reason
 * (the path and OS error where the write failed), for the caller's ga_fail. */
galloc_status_t ga_snapshot_commit(ga_snapshot_t *s, galloc_status_t built, ga_trace_t *trace, const char *path,
                                   galloc_snapshot_format_t format, char *msg, size_t len);

/* ga_snapshot_state_name: PyTorch's string for a block state. Static. */
const char *ga_snapshot_state_name(ga_snapshot_block_state_t state);

#ifdef __cplusplus
}
#endif
#endif /* GA_TRACE_SNAPSHOT_H */
