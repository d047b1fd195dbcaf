/*
 * ring.h: the trace ring buffer, PyTorch's RingBuffer<TraceEntry>
 * (c10/cuda/CUDACachingAllocator.cpp, later c10/util/RingBuffer.h): entries
 * are appended until max_entries are held, then each new entry overwrites the
 * oldest. Readers see the entries oldest first (PyTorch's getEntries does a
 * rotate_copy from alloc_trace_next).
 *
 * Locking: none inside. The owner (the pool, under its allocator's lock)
 * serializes every call on one ring.
 *
 * Memory: the slots are allocated by ga_trace_ring_start (when recording
 * starts), all at once when max_entries is at most GA_TRACE_RING_PREALLOC_MAX
 * (the caller chose a bounded ring of at most 64 MiB). A larger or unbounded
 * ring (PyTorch's default max_entries is sys.maxsize) cannot be preallocated:
 * it starts at GA_TRACE_RING_GROW_START slots and doubles on a cold path when
 * full, as PyTorch's std::vector does. Once the ring holds max_entries,
 * recording allocates nothing.
 *
 * Invariants: count <= cap <= max; next < count once count == max (next is
 * the oldest entry and the slot the next push overwrites), next == 0 before.
 */
#ifndef GA_TRACE_RING_H
#define GA_TRACE_RING_H

#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc_status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What happened, in PyTorch's TraceEntry::Action order (CUDACachingAllocator.h);
 * ga_trace_action_name gives the string memory_snapshot.cpp writes. ANNOTATE is
 * galloc's: user annotations (PyTorch's record_annotation), kept in their own
 * ring and written to "external_annotations", never to "device_traces". */
typedef enum ga_trace_action {
    GA_TRACE_ALLOC = 0,          /* "alloc": a block handed out */
    GA_TRACE_FREE_REQUESTED = 1, /* "free_requested": the user freed it */
    GA_TRACE_FREE_COMPLETED = 2, /* "free_completed": back in the pool (stream events done) */
    GA_TRACE_SEGMENT_ALLOC = 3,  /* "segment_alloc": a device allocation */
    GA_TRACE_SEGMENT_FREE = 4,   /* "segment_free": a device release */
    GA_TRACE_SEGMENT_MAP = 5,    /* "segment_map": pages mapped into an expandable segment */
    GA_TRACE_SEGMENT_UNMAP = 6,  /* "segment_unmap": pages unmapped from one */
    GA_TRACE_SNAPSHOT = 7,       /* "snapshot": a snapshot was taken (size = active bytes) */
    GA_TRACE_OOM = 8,            /* "oom": an allocation failed (size requested, device_free) */
    GA_TRACE_ANNOTATE = 9,       /* a user annotation (stage, name) */
    GA_TRACE_ACTION_COUNT = 10
} ga_trace_action_t;

/* One event: 64 bytes, so that recording is a single cache-line store. */
typedef struct ga_trace_entry {
    uint64_t addr;   /* block or segment address (0 for snapshot and oom) */
    uint64_t size;   /* bytes: block/segment/mapped size, requested size (oom), active bytes (snapshot) */
    uint64_t stream; /* the stream handle, written as PyTorch's int64_t(stream) */
    union {
        uint64_t device_free; /* GA_TRACE_OOM: the device's free bytes */
        struct {
            uint32_t name;  /* GA_TRACE_ANNOTATE: interned string id of the name */
            uint32_t stage; /* GA_TRACE_ANNOTATE: interned string id of the stage ("START", "END") */
        } annotation;
    } extra;
    int64_t time_us;       /* microseconds since the Unix epoch (PyTorch's time_us) */
    int64_t mempool_id[2]; /* the pool's MempoolId_t; (0, 0) for the default pool */
    uint32_t stack_id;     /* ga_trace_stacks id, 0 = no frames */
    unsigned action : 8;   /* a ga_trace_action_t */
    /* user_metadata: the recording thread's string (galloc_set_memory_metadata,
     * PyTorch's TraceEntry::user_metadata_) as its id in the trace's string
     * table, 0 = "". 24 bits keep the entry at 64 bytes; an id past
     * GA_TRACE_METADATA_ID_MAX is recorded as "" (metadata.c counts it). */
    unsigned metadata : 24;
} ga_trace_entry_t;

#define GA_TRACE_METADATA_ID_MAX ((1u << 24) - 1)

/* Rings of up to this many slots (64 MiB) are allocated whole when started. */
#define GA_TRACE_RING_PREALLOC_MAX ((size_t)1 << 20)

/* Slots a larger or unbounded ring starts with (4 MiB) before it grows. */
#define GA_TRACE_RING_GROW_START ((size_t)1 << 16)

typedef struct ga_trace_ring {
    ga_trace_entry_t *buf;  /* cap slots; NULL when not started */
    size_t cap;             /* slots allocated */
    size_t max;             /* PyTorch's max_entries (>= 1 once started, 0 = not started) */
    size_t count;           /* slots holding an entry */
    size_t next;            /* oldest entry once count == max; 0 before */
    uint64_t overwritten;   /* entries lost to wrapping since the last clear */
    uint64_t grow_failures; /* times growing failed; max was then lowered to cap */
} ga_trace_ring_t;

/* ga_trace_action_name: PyTorch's string for an action ("alloc", ...), "annotate"
 * for GA_TRACE_ANNOTATE, "unknown" otherwise. Static. */
const char *ga_trace_action_name(ga_trace_action_t action);

/* ga_trace_ring_init: an empty, stopped ring; allocates nothing. */
void ga_trace_ring_init(ga_trace_ring_t *r);

/* ga_trace_ring_start: allocate the slots for max_entries (0 is taken as 1,
 * as PyTorch's setMaxEntries does) and empty the ring; at most `initial` slots
 * up front when 0 < initial < the preallocation rule above. On GALLOC_E_NOMEM
 * the ring is unchanged. A started ring is restarted (its entries dropped). */
galloc_status_t ga_trace_ring_start(ga_trace_ring_t *r, size_t max_entries, size_t initial);

/* ga_trace_ring_stop: free the slots; the ring is stopped and empty. */
void ga_trace_ring_stop(ga_trace_ring_t *r);

/* ga_trace_ring_clear: drop every entry, keep the slots (PyTorch's clear()). */
void ga_trace_ring_clear(ga_trace_ring_t *r);

/* Cold path of ga_trace_ring_push: not started (NULL), or grow. */
ga_trace_entry_t *ga_trace_ring_push_slow(ga_trace_ring_t *r);

/* ga_trace_ring_push: the slot the caller fills for a new entry, or NULL when
 * the ring is stopped. O(1); allocates only while an oversized ring grows. */
static inline ga_trace_entry_t *ga_trace_ring_push(ga_trace_ring_t *r)
{
    if (r->count < r->cap)
        return &r->buf[r->count++];
    if (r->count == r->max && r->max != 0) {
        /* Full: overwrite the oldest, which the next slot then becomes. */
        ga_trace_entry_t *slot = &r->buf[r->next];
        if (++r->next == r->count)
            r->next = 0;
        r->overwritten++;
        return slot;
    }
    return ga_trace_ring_push_slow(r);
}

/* ga_trace_ring_size: number of entries held. */
static inline size_t ga_trace_ring_size(const ga_trace_ring_t *r)
{
    return r->count;
}

/* ga_trace_ring_at: the i-th entry, oldest first (i < size). */
static inline const ga_trace_entry_t *ga_trace_ring_at(const ga_trace_ring_t *r, size_t i)
{
    size_t j = r->next + i;
    if (j >= r->count)
        j -= r->count;
    return &r->buf[j];
}

#ifdef __cplusplus
}
#endif
#endif /* GA_TRACE_RING_H */
