/*
 * pool_int.h: the pool's private structures. Only the pool sources and tests/pool/ (through
 * their C shim) include this.
 *
 * Model (PyTorch's DeviceCachingAllocator, c10/cuda/CUDACachingAllocator.cpp):
 *   - a segment is one device allocation; it is tiled by blocks linked in
 *     address order (prev/next); a block is allocated or free;
 *   - every free block sits in the free set of its block pool (small or
 *     large), ordered by (stream, size, address) for best fit;
 *   - every allocated block sits in the pointer map (address -> block,
 *     util/addrmap.h).
 *
 * Locking: the locked path (api/ holds the allocator's lock, and every
 * stripe's while stripe calls may run: ga_pool_quiesce) covers everything
 * here; a stripe call (fast.c) touches only its stripe and the blocks, sets
 * and segments of the stripe's streams, under the stripe's lock (stripe.h).
 * Memory: block and segment records are recycled through free lists; the
 * hot path (cache hit, free) allocates nothing once the pool has warmed up.
 */
#ifndef GA_POOL_INT_H
#define GA_POOL_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc_sleep.h>
#include <galloc/galloc_stats.h>
#include "backend/backend.h"
#include "conf/conf.h"
#include "pool/avl.h"
#include "pool/pool.h"
#include "pool/sizeidx.h"
#include "trace/trace.h"
#include "util/addrmap.h"
#include "util/lock.h"
#include "util/size.h"

#ifdef __cplusplus
extern "C" {
#endif

/* For the hot path's helpers: inlined into malloc and free even where the
 * compiler would keep a call, whose prologue and epilogue cost as much as the
 * helper itself on a cache hit. */
#define GA_HOT static inline __attribute__((always_inline))

/* PyTorch's constants (CUDACachingAllocator.cpp / CachingDeviceAllocator.h). */
#define GA_MIN_BLOCK_SIZE ((size_t)512)           /* kMinBlockSize: rounding unit */
#define GA_SMALL_SIZE ((size_t)1 << 20)           /* kSmallSize: largest small-pool request */
#define GA_SMALL_BUFFER ((size_t)2 << 20)         /* kSmallBuffer: small segment size */
#define GA_LARGE_BUFFER ((size_t)20 << 20)        /* kLargeBuffer: default of large_segment_size_mb */
#define GA_MIN_LARGE_ALLOC ((size_t)10 << 20)     /* kMinLargeAlloc */
#define GA_ROUND_LARGE ((size_t)2 << 20)          /* kRoundLarge: large segment rounding */

typedef struct ga_block ga_block_t;
typedef struct ga_segment ga_segment_t;

/* An event record: a backend event handle, pooled and reused (PyTorch's
 * EventPool). While reserved by record_stream it names the stream to record on;
 * after the block's free it waits in the pool's pending queue. */
typedef struct ga_event {
    uintptr_t handle;         /* backend event (created on the cold path) */
    galloc_stream_t stream;   /* stream the block was used on */
    ga_block_t *block;        /* block waiting on this event (pending only) */
    struct ga_event *next;    /* block's use list / pending queue / free list */
} ga_event_t;

typedef struct ga_private_pool ga_private_pool_t;

/* The free blocks of one stream in one block pool, by (size, address). */
typedef struct ga_stream_set {
    galloc_stream_t stream; /* the stream whose free blocks these are */
    size_t n_free;          /* free mapped blocks in the set (kept per stream: its stripe's lock covers it) */
    ga_sizeidx_t idx;       /* exact best-fit index (sizeidx.h) */
} ga_stream_set_t;

/* PyTorch's BlockPool: the free blocks of one size class. PyTorch keeps them
 * in one set ordered by (stream, size, address); galloc keeps one exact size
 * index per stream, in an array sorted by stream, so that blocks cached on
 * other streams never lengthen a stream's search (blockpool.c). Walks see
 * the same order as PyTorch's single set. */
typedef struct ga_blockpool {
    ga_private_pool_t *owner;           /* the private pool it belongs to, NULL for the default pool */
    ga_stream_set_t **sets;             /* one per stream seen by malloc, sorted by stream; owned */
    size_t n_sets, cap_sets;
    ga_stream_set_t *last;              /* the set the locked path used last (the stripes keep their own) */
    ga_avl_t unmapped;                  /* unmapped expandable ranges by (stream, address) */
    bool is_small;                      /* small pool (<= 1 MiB requests) */
    galloc_stat_pool_t stat;            /* GALLOC_STAT_SMALL_POOL or _LARGE_POOL */
    int64_t get_free_blocks_call_count; /* GC clock: searches while GC is on */
} ga_blockpool_t;

struct ga_block {
    uintptr_t addr;            /* device address */
    size_t size;               /* bytes, a multiple of 512 */
    size_t requested;          /* caller's unrounded size while allocated */
    galloc_stream_t stream;    /* the stream the segment was allocated for */
    ga_blockpool_t *pool;      /* the block pool the segment belongs to */
    ga_segment_t *seg;         /* owning segment */
    ga_block_t *prev, *next;   /* address-ordered neighbours within the segment */
    ga_avl_node_t node;        /* free-set link: size-bin tree (free blocks) or unmapped set */
    ga_block_t *link;          /* record free list (recycled) / release.c's unmap list (free) */
    int64_t gc_count_base;     /* pool GC clock when last inserted into the free set */
    bool allocated;            /* handed out to a caller */
    bool mapped;               /* backed by memory (always, except unmapped expandable ranges) */
    uint32_t event_count;      /* events still to complete before a freed block returns to its pool */
    uint32_t stack_id;         /* trace: stack at allocation (0 = none) */
    ga_event_t *uses;          /* record_stream: one reserved event per other stream used */
};

struct ga_segment {
    uintptr_t base;            /* device address of the segment (expandable: of its VA range) */
    size_t size;               /* bytes obtained from the backend (expandable: VA range size) */
    bool expandable;           /* an expandable segment: a VA range mapped page by page */
    size_t page;               /* expandable: page size (2 MiB small pool, 20 MiB large); vmm: its mapped span */
    galloc_stream_t stream;    /* stream it was allocated for */
    ga_blockpool_t *pool;      /* block pool (small or large) */
    ga_stream_set_t *set;      /* pool's free set for stream: where its free mapped blocks go */
    ga_block_t *head;          /* lowest-address block */
    uint32_t stack_id;         /* trace: stack at the segment's allocation (0 = none) */
    ga_segment_t *prev, *next; /* all live segments (for check, snapshots, destroy) */
    bool vmm;                  /* a tag's plain segment: one va_reserve + one map of `page` bytes (sleep.c) */
    uint64_t *slept;           /* while its tag sleeps: bitmap of the sleep units (expandable: pages; plain:
                                  the one unit) unmapped by sleep, then a scratch bitmap for wake; else NULL */
};

/* PyTorch's PrivatePool: a MemPool's or a graph's small and large pools. */
struct ga_private_pool {
    uint64_t id_a, id_b;          /* MempoolId_t */
    int use_count;                /* users; 0 = freeable */
    size_t segments;              /* live device segments (PyTorch's cudaMalloc_count) */
    ga_blockpool_t small, large;  /* its block pools */
    struct ga_tag *tag;           /* the sleep tag it belongs to, NULL for none (sleep.c) */
    bool asleep;                  /* its tag is asleep: malloc fails with GALLOC_E_ASLEEP */
    ga_private_pool_t *next;      /* all private pools */
};

#define GA_MAX_ROUTES 64

/* An active beginAllocateToPool: which allocations go to which pool. */
typedef struct ga_route {
    ga_private_pool_t *pool;
    int kind;                /* galloc_route_t */
    galloc_stream_t stream;  /* GALLOC_ROUTE_STREAM */
    uintptr_t thread;        /* GALLOC_ROUTE_THREAD: the thread that began it */
} ga_route_t;

/* An entry of the pointer map (PyTorch's allocated_blocks): an allocated
 * block by its address. The map grows only in malloc's reserve, before any
 * other state changes, when the live count passes its previous high mark.
 * There is one map per stripe, holding the blocks of the stripe's streams
 * (stripe.h). */
typedef struct ga_ptr_entry {
    uintptr_t addr;    /* the block's address: the map's key */
    ga_block_t *block; /* the allocated block */
} ga_ptr_entry_t;

/* Record pools: recycled block and segment records, allocated in chunks. */
typedef struct ga_records {
    ga_block_t *free_blocks;     /* recycled block records (linked by b->link) */
    ga_segment_t *free_segments; /* recycled segment records (linked by next) */
    size_t n_free_blocks;        /* length of free_blocks */
    size_t n_free_segments;      /* length of free_segments */
    void *chunks;                /* every chunk allocated, for destroy */
    size_t blocks_total;         /* block records ever allocated (growth counter for tests) */
    size_t segments_total;       /* segment records ever allocated */
} ga_records_t;

/* Per-stream locking (issue 19; stripe.h, stripe.c, fast.c). A stream's
 * cache hits take only the lock of its stripe, picked by a hash of the
 * stream; everything else takes the allocator's lock and every stripe's.
 * GA_STRIPES is a power of two. */
#define GA_STRIPES 16

/* The statistics a stripe's calls change, each with a peak: the escrow rows. */
enum {
    GA_ESC_ALLOCATION,
    GA_ESC_ALLOCATED_BYTES,
    GA_ESC_ACTIVE,
    GA_ESC_ACTIVE_BYTES,
    GA_ESC_REQUESTED_BYTES,
    GA_ESC_INACTIVE_SPLIT,
    GA_ESC_INACTIVE_SPLIT_BYTES,
    GA_ESC_ROWS
};

/* The escrow's slots: on the stripe path allocation and active move
 * together, and so do allocated and active bytes (no stream uses, no
 * events), so each pair shares one slot, granted the headroom of both. */
enum { GA_SLOT_COUNT, GA_SLOT_BYTES, GA_SLOT_REQUESTED, GA_SLOT_SPLIT, GA_SLOT_SPLIT_BYTES, GA_SLOTS };

/* A stripe's share of the stats (stripe.h), per pool index and slot: the
 * headroom `h` left of the `g` bytes (or blocks) below the peak granted to
 * the stripe, and the increases `alloc` (pool entries only: "all"'s are
 * folded at copy time). Every increase takes from h, every decrease gives
 * back, so the stripe's change to each of the slot's stats is g - h and its
 * decreases alloc - (g - h): one or two words a slot on the path. Slots of
 * one pool index are contiguous, so a call addresses them from two bases. */
typedef struct ga_escrow {
    int64_t h[GALLOC_STAT_POOLS][GA_SLOTS];
    int64_t alloc[GALLOC_STAT_POOLS][GA_SLOTS];
    int64_t g[GALLOC_STAT_POOLS][GA_SLOTS];
    /* The stripe's share of current as of the last fold: what its streams'
     * blocks hold (locked-path changes are charged to it too), so the grant
     * can give each stripe the same ceiling. */
    int64_t c[GALLOC_STAT_POOLS][GA_ESC_ROWS];
} ga_escrow_t;

typedef struct ga_stripe {
    ga_lock_t lock;                  /* taken by its streams' cache hits */
    bool touched;                    /* a stripe call ran since the last fold: gets headroom next */
    bool in_mask;                    /* its bit is set in the pool's map_mask */
    ga_stream_set_t *last[2];        /* the set used last, [is_small] */
    ga_records_t records;            /* the records of its streams' blocks and segments (below) */
    ga_addrmap_t ptrs;               /* allocated blocks of its streams, by address (ga_ptr_entry_t) */
    ga_escrow_t esc;
} __attribute__((aligned(64))) ga_stripe_t;

/* The stripe of a stream: a multiplicative hash, so that streams numbered
 * 1, 2, 3 or handles 256 bytes apart land on different stripes. */
static inline unsigned ga_stripe_of(galloc_stream_t stream)
{
    return (unsigned)(((uint64_t)stream * 0x9E3779B97F4A7C15ull) >> 60) & (GA_STRIPES - 1);
}

struct ga_pool {
    ga_conf_t conf;                 /* effective settings (copied at create) */
    ga_backend_t *backend;          /* the device (not owned) */
    int device;                     /* device index, for messages */
    ga_err_t *err;                  /* error sink (the front end's) */
    ga_blockpool_t small, large;    /* PyTorch's small_blocks / large_blocks */
    ga_segment_t *segments;         /* live segments, most recent first */
    galloc_stats_t stats;           /* PyTorch's DeviceStats */
    size_t total_allocated_memory;  /* bytes of live segments (== reserved_bytes.all.current) */
    size_t device_total;            /* device bytes (sizes expandable VA ranges) */
    ga_event_t *events_free;        /* pooled event records with live handles */
    ga_event_t *pending_head;       /* events recorded at frees, oldest first */
    ga_event_t *pending_tail;
    size_t pending_blocks;          /* blocks freed but waiting on events */
    void *event_chunks;             /* allocations holding event records */
    ga_trace_t trace;               /* history (recording off by default); ga_pool_t never moves */
    ga_private_pool_t *private_pools; /* MemPools and graph pools */
    uint64_t next_pool_id;          /* last id handed out by ga_pool_mempool_create */
    ga_route_t routes[GA_MAX_ROUTES]; /* active routes, in begin order */
    size_t n_routes;
    bool set_fraction;              /* a memory fraction was set */
    size_t allowed_memory_maximum;  /* fraction * device total, when set_fraction */
    size_t refused_frees;           /* device frees/unmaps refused since the last full flush began */
    bool plain_rounding;            /* no roundup_power2_divisions interval above 1 (ga_pool_round) */
    struct ga_tag *tags;            /* sleep tags (sleep.h's ga_tag_t), most recent first */
    galloc_sleep_stats_t sleep;     /* sleep counters (tags, tags_asleep and the bytes now are recounted) */
    void *host_orphans;             /* host copies whose host_free was refused, retried later (sleep.c) */
    ga_addrmap_t host_spare;        /* pinned host blocks kept after a wake for the next sleep, by size (tags.c) */
    size_t host_spare_bytes;        /* their bytes (galloc_sleep_stats_t.bytes_host_cached) */
    ga_blockpool_t asleep_bp;       /* where a route to a sleeping tag leads: no sets, owner the tag's pool */
    /* Stripes (stripe.h). `fast` says whether stripe calls may run; it
     * changes only under the allocator's lock and every stripe's. */
    atomic_bool fast;
    uint32_t touched_mask;          /* stripes used since the last grant */
    uint32_t touched_before;        /* and in the span before it */
    uint32_t grant_mask;            /* stripes given headroom at the last grant */
    atomic_uint map_mask;           /* stripes whose pointer map ever held a block: where free looks */
    ga_stripe_t stripes[GA_STRIPES];
};

/* The records of a stream's blocks and segments come from its stripe's own
 * chunks, so that threads on their own streams never write the same cache
 * line of records (false sharing halved their throughput). */
static inline ga_records_t *ga_pool_records_of(ga_pool_t *p, galloc_stream_t stream)
{
    return &p->stripes[ga_stripe_of(stream)].records;
}

/* Request parameters, PyTorch's AllocParams. */
typedef struct ga_alloc_params {
    size_t orig_size;           /* caller's bytes */
    size_t size;                /* rounded (round_size) */
    size_t alloc_size;          /* segment size if a new one is needed */
    galloc_stream_t stream;
    ga_blockpool_t *pool;
    ga_stream_set_t *set;       /* pool's free set for stream (ga_pool_blockpool_prepare) */
    ga_block_t *block;          /* result */
    uint32_t stack_id;          /* trace: the caller's stack (0 = none) */
} ga_alloc_params_t;

/* round.c */
size_t ga_round_size(const ga_conf_t *c, size_t size);
size_t ga_roundup_power2_next_division(size_t size, uint32_t divisions);
size_t ga_allocation_size(const ga_conf_t *c, size_t rounded);
/* Whether conf sets no roundup_power2_divisions above 1, so that round_size
 * is plain 512-byte rounding for every size. */
bool ga_round_is_plain(const ga_conf_t *c);

/* records.c; get, put and the reserve check are inline: every malloc reserves,
 * every split gets a block record and every merge puts one back. */
void ga_pool_records_init(ga_records_t *r);
void ga_pool_records_destroy(ga_records_t *r);
/* Grow the free lists to n block and m segment records (GALLOC_E_NOMEM). */
galloc_status_t ga_pool_records_grow(ga_records_t *r, size_t n_blocks, size_t n_segments);

/* Ensure at least n block records and m segment records are free: a compare
 * when they are (always, once warm), else a chunk from the host (cold). */
static inline galloc_status_t ga_pool_records_reserve(ga_records_t *r, size_t n_blocks, size_t n_segments)
{
    if (__builtin_expect(r->n_free_blocks >= n_blocks && r->n_free_segments >= n_segments, 1))
        return GALLOC_OK;
    return ga_pool_records_grow(r, n_blocks, n_segments);
}

/* A reserved record (never NULL after a successful reserve). */
static inline ga_block_t *ga_pool_records_get_block(ga_records_t *r)
{
    ga_block_t *b = r->free_blocks;
    if (b != NULL) {
        r->free_blocks = b->link;
        r->n_free_blocks--;
    }
    return b;
}

static inline void ga_pool_records_put_block(ga_records_t *r, ga_block_t *b)
{
    b->link = r->free_blocks;
    r->free_blocks = b;
    r->n_free_blocks++;
}

static inline ga_segment_t *ga_pool_records_get_segment(ga_records_t *r)
{
    ga_segment_t *s = r->free_segments;
    if (s != NULL) {
        r->free_segments = s->next;
        r->n_free_segments--;
    }
    return s;
}

static inline void ga_pool_records_put_segment(ga_records_t *r, ga_segment_t *s)
{
    s->next = r->free_segments;
    r->free_segments = s;
    r->n_free_segments++;
}


/* blockpool.c: free sets. The hot operations (prepare, fit, insert, remove)
 * are inline in pool/blockpool.h; walks, the cross-stream lower_bound and the check are in
 * blockpool.c. */
void ga_pool_blockpool_init(ga_blockpool_t *bp, bool is_small);
/* Frees the per-stream sets (the blocks are the records' to free). */
void ga_pool_blockpool_destroy(ga_blockpool_t *bp);
/* The set of `stream`, or NULL; changes nothing (a stripe call's lookup). */
ga_stream_set_t *ga_pool_blockpool_lookup(const ga_blockpool_t *bp, galloc_stream_t stream);
/* Free mapped blocks in all its sets. */
size_t ga_pool_blockpool_count(const ga_blockpool_t *bp);
/* ga_pool_blockpool_prepare when `stream` is not the set used last. */
ga_stream_set_t *ga_pool_blockpool_prepare_slow(ga_blockpool_t *bp, galloc_stream_t stream);
/* The set of a stream that must have one (a segment's, at its creation). */
ga_stream_set_t *ga_pool_blockpool_set_of(ga_blockpool_t *bp, galloc_stream_t stream);
/* Every bin tree well formed and in its bin, the bitmaps mirroring the bins,
 * the sets sorted by stream, the counts agreeing: for the invariant check. */
bool ga_pool_blockpool_trees_ok(const ga_blockpool_t *bp);
/* a orders before b in PyTorch's (stream, size, address) order. */
bool ga_pool_blockpool_before(const ga_block_t *a, const ga_block_t *b);
void ga_pool_blockpool_insert_unmapped(ga_blockpool_t *bp, ga_block_t *b);
void ga_pool_blockpool_remove_unmapped(ga_blockpool_t *bp, ga_block_t *b);
/* First unmapped block of `stream` (lowest address), and its successor. */
ga_block_t *ga_pool_blockpool_unmapped_first(ga_blockpool_t *bp, galloc_stream_t stream);
ga_block_t *ga_pool_blockpool_unmapped_next(ga_block_t *b);
/* First free block not ordered before (stream, size, address 0), or NULL:
 * the next stream's smallest when `stream` has none that large, as in
 * PyTorch's single set (release_available_cached_blocks walks back from it). */
ga_block_t *ga_pool_blockpool_lower_bound(ga_blockpool_t *bp, galloc_stream_t stream, size_t size);
ga_block_t *ga_pool_blockpool_first(ga_blockpool_t *bp);
ga_block_t *ga_pool_blockpool_last(ga_blockpool_t *bp);
/* The next free block of b's own set in (size, address) order, or NULL:
 * reads nothing of another stream's (the stripe path may call it). */
ga_block_t *ga_pool_blockpool_next_in_set(const ga_block_t *b);
/* Neighbours in (stream, size, address) order across the streams' sets. */
ga_block_t *ga_pool_blockpool_next(ga_block_t *b);
ga_block_t *ga_pool_blockpool_prev(ga_block_t *b);

#define GA_BLOCK_OF_NODE(n) ((ga_block_t *)((char *)(n) - offsetof(ga_block_t, node)))

/* (size, address) order inside one stream's set, compared inline. */
static inline bool ga_block_size_addr_before(const ga_block_t *a, const ga_block_t *b)
{
    return a->size < b->size || (a->size == b->size && a->addr < b->addr);
}

static inline bool ga_block_is_split(const ga_block_t *b)
{
    return b->prev != NULL || b->next != NULL;
}

/* malloc.c */
galloc_status_t ga_pool_alloc_block(ga_pool_t *p, ga_alloc_params_t *ap, bool is_retry);

/* expandable.c: expandable segments (expandable_segments:True). */
galloc_status_t ga_pool_try_allocate_expandable(ga_pool_t *p, ga_alloc_params_t *ap);
/* Unmap the whole pages inside a free mapped expandable block; releases the
 * segment's VA range when nothing of it stays mapped. */
void ga_pool_unmap_block(ga_pool_t *p, ga_block_t *b);
/* A device free or unmap refused during a full flush (release_cached_blocks):
 * counted in p->refused_frees, the first one recorded in p->err with the
 * backend's reason. */
void ga_pool_note_refused(ga_pool_t *p, const char *what, uintptr_t addr, size_t bytes);
/* Give an expandable segment back whole (destroy): unmap every mapped page, free the VA. */
void ga_pool_expandable_teardown(ga_pool_t *p, ga_segment_t *seg);

/* streams.c: cross-stream use (record_stream) and deferred frees. */
galloc_status_t ga_pool_record_stream(ga_pool_t *p, void *ptr, galloc_stream_t stream);
/* free() of a block with stream uses: record the events; the block stays active. */
galloc_status_t ga_pool_insert_events(ga_pool_t *p, ga_block_t *b);
/* Return blocks whose events have all completed (start of every malloc). */
galloc_status_t ga_pool_process_events(ga_pool_t *p);
/* Wait for every pending event and return its block (counts num_sync_all_streams
 * once, first). A failed wait returns GALLOC_E_DEVICE: that event and the later
 * ones stay pending, the earlier ones are done. */
galloc_status_t ga_pool_synchronize_and_free_events(ga_pool_t *p);
galloc_status_t ga_pool_stream_synchronize(ga_pool_t *p, galloc_stream_t stream);
void ga_pool_events_destroy(ga_pool_t *p);

/* The trace's mempool id of a block pool ((0, 0) for the default pool). */
static inline const int64_t *ga_pool_id_of(const ga_blockpool_t *bp, int64_t buf[2])
{
    if (bp->owner == NULL)
        return NULL;
    buf[0] = (int64_t)bp->owner->id_a;
    buf[1] = (int64_t)bp->owner->id_b;
    return buf;
}

/* private.c: private pools. */
/* ga_pool_get_pool while some route is active (a MemPool or graph capture). */
ga_blockpool_t *ga_pool_get_routed_pool(ga_pool_t *p, size_t rounded, galloc_stream_t stream);
void ga_pool_release_private_pools(ga_pool_t *p);
/* Free cached bytes of the private pools that are awake (PyTorch's message adds them to "allocated"). */
size_t ga_pool_private_free_bytes(const ga_pool_t *p);
/* tags.c: bytes of allocated blocks in sleeping tags (on no device memory). */
size_t ga_pool_asleep_allocated_bytes(const ga_pool_t *p);
void ga_pool_private_destroy(ga_pool_t *p);

/* release.c: giving cached memory back. */
/* Returns false when the device refuses the free: the segment stays cached,
 * counted as before. The caller decides whether to report it. */
bool ga_pool_release_block(ga_pool_t *p, ga_block_t *b);
/* ga_pool_release_block for a full flush: a refusal is noted (ga_pool_note_refused). */
void ga_pool_release_free_segment(ga_pool_t *p, ga_block_t *b);
bool ga_pool_release_available_cached_blocks(ga_pool_t *p, const ga_alloc_params_t *ap);
/* GALLOC_E_DEVICE when waiting for pending events fails (nothing is released
 * then), or when the device refused to free a segment or unmap a page (every
 * other one is released, the refused ones stay cached and counted). */
galloc_status_t ga_pool_release_cached_blocks(ga_pool_t *p);
void ga_pool_garbage_collect(ga_pool_t *p);

/* free.c */
void ga_pool_free_block(ga_pool_t *p, ga_block_t *b);
/* Absorb src into dst if src is a free neighbour in the same mapped state;
 * returns the bytes absorbed (0 if not merged). */
size_t ga_pool_try_merge(ga_pool_t *p, ga_block_t *dst, ga_block_t *src);
/* A new segment's one block (free, covering it whole), linked into the
 * segment list; seg's base, size, stream, pool and kind are set by the caller. */
void ga_pool_segment_init(ga_pool_t *p, ga_segment_t *seg, ga_block_t *b, uintptr_t addr, size_t size, bool mapped);
/* Segment list maintenance. */
void ga_pool_link_segment(ga_pool_t *p, ga_segment_t *seg);
void ga_pool_unlink_segment(ga_pool_t *p, ga_segment_t *seg);

/* free.c: the part of free after the pointer-map removal (a sleeping block's free, sleep.c). */
void ga_pool_free_held(ga_pool_t *p, ga_block_t *b);
/* release.c: every whole free segment of bp back, free expandable pages unmapped (empty_cache's walk). */
void ga_pool_release_blocks(ga_pool_t *p, ga_blockpool_t *bp);

/* tags.c: the hooks of sleep and wake (pool/sleep_int.h) in the other paths, all cold. */
/* malloc found no free set for ap->pool: GALLOC_E_ASLEEP naming the tag when
 * the pool is asleep (its sets are hidden then), else out of host memory. */
galloc_status_t ga_pool_prepare_failed(ga_pool_t *p, const ga_blockpool_t *bp);
/* free of a pointer not in the pointer map: a sleeping tag's block (freed,
 * its host copy dropped) or GALLOC_E_NOT_OWNED. */
galloc_status_t ga_pool_free_missing(ga_pool_t *p, void *ptr);
/* The allocated block of a sleeping tag at addr (out of the pointer map), or NULL. */
ga_block_t *ga_pool_held_block(const ga_pool_t *p, uintptr_t addr);
/* A tag pool's plain segment: va_reserve + map of *span bytes (size rounded
 * to the granularity). GALLOC_E_UNSUPPORTED (with a message) without virtual
 * memory; the map's or reservation's failure otherwise. */
galloc_status_t ga_pool_vmm_alloc(ga_pool_t *p, size_t size, uintptr_t *addr, size_t *span);
/* Give a plain VMM segment back (unmap + va_release); false when refused. */
bool ga_pool_vmm_free(ga_pool_t *p, ga_segment_t *seg);
/* Whether bp belongs to a tag (its segments come through virtual memory). */
static inline bool ga_pool_is_tagged(const ga_blockpool_t *bp)
{
    return bp->owner != NULL && bp->owner->tag != NULL;
}

/* oom.c */
galloc_status_t ga_pool_oom(ga_pool_t *p, const ga_alloc_params_t *ap);

/* PyTorch's round_size (round.c), inline for the default configuration:
 * requests share 512-byte granularity so allocated_bytes equals PyTorch's. */
static inline size_t ga_pool_round(const ga_pool_t *p, size_t size)
{
    if (__builtin_expect(p->plain_rounding, 1))
        return size < GA_MIN_BLOCK_SIZE ? GA_MIN_BLOCK_SIZE : (size + GA_MIN_BLOCK_SIZE - 1) & ~(GA_MIN_BLOCK_SIZE - 1);
    return ga_round_size(&p->conf, size);
}

/* PyTorch's get_pool: the first active route whose filter accepts the
 * allocation decides (private.c); with none, the default pools by the
 * rounded size. */
static inline ga_blockpool_t *ga_pool_get_pool(ga_pool_t *p, size_t rounded, galloc_stream_t stream)
{
    if (__builtin_expect(p->n_routes == 0, 1))
        return rounded <= GA_SMALL_SIZE ? &p->small : &p->large;
    return ga_pool_get_routed_pool(p, rounded, stream);
}

#ifdef __cplusplus
}
#endif
#endif /* GA_POOL_INT_H */
