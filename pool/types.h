/*
 * types.h: the pool's types and PyTorch's constants. Only the pool's sources
 * and tests/pool/ (through their C shims) include it, directly or through the
 * pool's other private headers, one per concern (records.h, blockpool.h,
 * stripe.h, ...).
 *
 * Words (each names one thing, in code, comments and docs):
 *   block       a run of a segment's bytes, a multiple of 512, allocated (in
 *               the pointer map) or free (in its stream set); ga_block_t.
 *   segment     one device allocation (an expandable segment: one reserved
 *               virtual range), tiled by blocks in address order; it and
 *               every block in it belong to one stream; ga_segment_t.
 *   block pool  PyTorch's BlockPool: the small one (requests up to 1 MiB, 2 MiB
 *               segments) or the large one, of the default pools or of a
 *               private pool; ga_blockpool_t (blockpool.h).
 *   stream set  the free blocks of one stream in one block pool, with their
 *               exact best-fit index (sizeidx.h); ga_stream_set_t. A free
 *               mapped block is in the set of its segment's stream, no other.
 *   stripe      one of GA_STRIPES shares of the pool, picked by a hash of the
 *               stream: a lock, a pointer map, block and segment records and
 *               an escrow; ga_stripe_t (stripe.h).
 *   locked path a call under the allocator's lock and, while the stripe path
 *               may run, every stripe's: everything the pool does.
 *   stripe path a cache-hit malloc and a plain free under the lock of the
 *               stream's stripe only (stripe_path.c), falling back to the locked path.
 *   escrow      a stripe's share of the headroom below each statistic's peak,
 *               granted by the locked path and spent by the stripe path, so
 *               that the statistics stay exact; ga_escrow_t (stripe.h).
 *   tag         a sleep tag: a private pool whose memory sleep unmaps and
 *               wake maps back; ga_tag_t (sleep_int.h).
 *   pool id     a private pool's MempoolId_t (id_a, id_b), which the trace
 *               records with each event; the default pools have none (NULL,
 *               PyTorch's (0, 0)).
 *   hot path    a cache-hit malloc and a free, on either path: it allocates
 *               nothing once the pool has warmed up (GA_HOT).
 *
 * Model (PyTorch's DeviceCachingAllocator, c10/cuda/CUDACachingAllocator.cpp):
 *   - a segment is one device allocation; it is tiled by blocks linked in
 *     address order (prev/next); a block is allocated or free;
 *   - every free block sits in the free set of its block pool (small or
 *     large), ordered by (stream, size, address) for best fit;
 *   - every allocated block sits in the pointer map (address -> block,
 *     util/addrmap.h).
 *
 * Locking: the locked path (front/ holds the allocator's lock, and every
 * stripe's while stripe calls may run: ga_pool_quiesce) covers everything
 * here; a stripe call (stripe_path.c) touches only its stripe and the blocks, sets
 * and segments of the stripe's streams, under the stripe's lock (stripe.h).
 * Memory: block and segment records are recycled through free lists; the
 * hot path (cache hit, free) allocates nothing once the pool has warmed up.
 */
#ifndef GA_POOL_TYPES_H
#define GA_POOL_TYPES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc_sleep.h>
#include <galloc/galloc_stats.h>
#include "allocators/allocator_ops.h"
#include "backend/backend.h"
#include "conf/conf.h"
#include "pool/avl.h"
#include "pool/sizeidx.h"
#include "trace/trace.h"
#include "util/addrmap.h"
#include "util/err.h"
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
#define GA_MIN_BLOCK_SIZE ((size_t)512)       /* kMinBlockSize: rounding unit */
#define GA_SMALL_SIZE ((size_t)1 << 20)       /* kSmallSize: largest small-pool request */
#define GA_SMALL_BUFFER ((size_t)2 << 20)     /* kSmallBuffer: small segment size */
#define GA_LARGE_BUFFER ((size_t)20 << 20)    /* kLargeBuffer: default of large_segment_size_mb */
#define GA_MIN_LARGE_ALLOC ((size_t)10 << 20) /* kMinLargeAlloc */
#define GA_ROUND_LARGE ((size_t)2 << 20)      /* kRoundLarge: large segment rounding */

typedef struct ga_pool ga_pool_t;
typedef struct ga_block ga_block_t;
typedef struct ga_segment ga_segment_t;

/* An event record: a backend event handle, pooled and reused (PyTorch's
 * EventPool). While reserved by record_stream it names the stream to record on;
 * after the block's free it waits in the pool's pending queue. */
typedef struct ga_event {
    uintptr_t handle;       /* backend event (created on the cold path) */
    galloc_stream_t stream; /* stream the block was used on */
    ga_block_t *block;      /* block waiting on this event (pending only) */
    struct ga_event *next;  /* block's use list / pending queue / free list */
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
    ga_private_pool_t *owner; /* the private pool it belongs to, NULL for the default pool */
    ga_stream_set_t **sets;   /* one per stream seen by malloc, sorted by stream; owned */
    size_t n_sets, cap_sets;
    ga_stream_set_t *last;              /* the set the locked path used last (the stripes keep their own) */
    ga_avl_t unmapped;                  /* unmapped expandable ranges by (stream, address) */
    bool is_small;                      /* small pool (<= 1 MiB requests) */
    bool no_split;                      /* GALLOC_MEMPOOL_NO_SPLIT: its blocks are handed out whole */
    galloc_stat_pool_t stat;            /* GALLOC_STAT_SMALL_POOL or _LARGE_POOL */
    int64_t get_free_blocks_call_count; /* GC clock: searches while GC is on */
} ga_blockpool_t;

struct ga_block {
    uintptr_t addr;          /* device address */
    size_t size;             /* bytes, a multiple of 512 */
    size_t requested;        /* caller's unrounded size; kept once free (PyTorch's Block::requested_size:
                                a snapshot writes it for inactive blocks), 0 in a record no allocation
                                has used yet (a new segment's, an expandable range's new pieces) */
    galloc_stream_t stream;  /* the stream the segment was allocated for */
    ga_blockpool_t *pool;    /* the block pool the segment belongs to */
    ga_segment_t *seg;       /* owning segment */
    ga_block_t *prev, *next; /* address-ordered neighbours within the segment */
    ga_avl_node_t node;      /* free-set link: size-bin tree (free blocks) or unmapped set */
    ga_block_t *link;        /* record free list (recycled) / release.c's unmap list (free) / the deferred
                                list (freed with stream uses during a route: capture.c) */
    int64_t gc_count_base;   /* pool GC clock when last inserted into the free set */
    bool allocated;          /* handed out to a caller */
    bool mapped;             /* backed by memory (always, except unmapped expandable ranges) */
    bool shared;             /* exported to another process (ipc.h): its free takes the locked path */
    uint32_t event_count;    /* events still to complete before a freed block returns to its pool (1 while
                                deferred: capture.c) */
    uint32_t stack_id;       /* trace: stack at allocation (0 = none) */
    ga_event_t *uses;        /* record_stream: one reserved event per other stream used */
    uintptr_t *markers;      /* deferred in a capture: [n, node...], its free markers (capture.c); else NULL */
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
    uint64_t id_a, id_b;         /* MempoolId_t */
    int use_count;               /* users; 0 = freeable */
    size_t segments;             /* live device segments (PyTorch's cudaMalloc_count) */
    ga_blockpool_t small, large; /* its block pools */
    struct ga_tag *tag;          /* the sleep tag it belongs to, NULL for none (sleep.c) */
    bool asleep;                 /* its tag is asleep: malloc fails with GALLOC_E_ASLEEP */
    bool use_on_oom;             /* GALLOC_MEMPOOL_USE_ON_OOM: default-pool mallocs may take its free blocks */
    ga_private_pool_t *next;     /* all private pools */
};

/* An allocated block of a sleeping tag, in the tag's `held` map. */
typedef struct ga_sleep_entry {
    uintptr_t addr;    /* the block's address: the key */
    ga_block_t *block; /* the block (allocated, out of the pointer map) */
    void *host;        /* pinned host copy of its b->size bytes, NULL when discarded */
} ga_sleep_entry_t;

/* A sleep tag (galloc_sleep.h; the model is in sleep_int.h). */
typedef struct ga_tag {
    char name[GALLOC_TAG_MAX]; /* its name, NUL-terminated */
    ga_private_pool_t *pool;   /* its private pool */
    bool own_pool;             /* created by galloc_tag_begin: the tag holds the pool's use */
    bool asleep;               /* asleep: its units unmapped, its allocated blocks in `held` */
    bool sel, offload;         /* marks of the tag lists of the call under way */
    ga_addrmap_t held;         /* asleep: its allocated blocks (ga_sleep_entry_t) */
    size_t bytes_offloaded;    /* host bytes held now */
    size_t bytes_asleep;       /* device bytes unmapped by sleep now */
    struct ga_tag *next;       /* the pool's tags */
} ga_tag_t;

#define GA_MAX_ROUTES 64

/* An active beginAllocateToPool: which allocations go to which pool. */
typedef struct ga_route {
    ga_private_pool_t *pool;
    int kind;               /* galloc_route_t */
    galloc_stream_t stream; /* GALLOC_ROUTE_STREAM */
    uintptr_t thread;       /* GALLOC_ROUTE_THREAD: the thread that began it */
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

/* Note: per-stream locking (docs/architecture.md; stripe.h, stripe.c,
 * stripe_path.c). A stream's cache hits take only the lock of its stripe,
 * picked by a hash of the stream; everything else takes the allocator's lock and every stripe's.
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

/* A stripe's share of the stats (stripe.h), per pool index and slot. The
 * locked path grants the stripe `granted` bytes (or blocks) of the headroom
 * below the peak; `headroom` is what is left of it. Every increase takes
 * from headroom, every decrease gives back, so the stripe's change to each
 * of the slot's stats is granted - headroom, its increases `increases`, and
 * its decreases increases - (granted - headroom): one or two words a slot on
 * the stripe path. Slots of one pool index are contiguous, so a call
 * addresses them from two bases. */
typedef struct ga_escrow {
    int64_t headroom[GALLOC_STAT_POOLS][GA_SLOTS];  /* left of the grant; below 0 only inside a call that lacks it */
    int64_t increases[GALLOC_STAT_POOLS][GA_SLOTS]; /* since the last fold (pool entries only: "all"'s are
                                                       folded at copy time) */
    int64_t granted[GALLOC_STAT_POOLS][GA_SLOTS];   /* the grant (borrowing moves some between stripes); -1
                                                       while a grant is being worked out */
    /* The stripe's share of current as of the last fold: what its streams'
     * blocks hold (locked-path changes are charged to it too), so the grant
     * can give each stripe the same ceiling. */
    int64_t held[GALLOC_STAT_POOLS][GA_ESC_ROWS];
} ga_escrow_t;

typedef struct ga_stripe {
    ga_lock_t lock;           /* taken by its streams' cache hits */
    bool touched;             /* a stripe call ran since the last fold: gets headroom next */
    bool in_mask;             /* its bit is set in the pool's map_mask */
    ga_stream_set_t *last[2]; /* the set used last, [is_small] */
    ga_records_t records;     /* the records of its streams' blocks and segments (below) */
    ga_addrmap_t ptrs;        /* allocated blocks of its streams, by address (ga_ptr_entry_t) */
    ga_escrow_t esc;          /* its share of the stats (above) */
} __attribute__((aligned(64))) ga_stripe_t;

/* The stripe of a stream: a multiplicative hash, so that streams numbered
 * 1, 2, 3 or handles 256 bytes apart land on different stripes. */
static inline unsigned ga_stripe_of(galloc_stream_t stream)
{
    return (unsigned)(((uint64_t)stream * 0x9E3779B97F4A7C15ull) >> 60) & (GA_STRIPES - 1);
}

struct ga_pool {
    ga_conf_t conf;                /* effective settings (copied at create) */
    ga_backend_t *backend;         /* the device (not owned) */
    int device;                    /* device index, for messages */
    ga_err_t *err;                 /* error sink (the front end's) */
    ga_blockpool_t small, large;   /* PyTorch's small_blocks / large_blocks */
    ga_segment_t *segments;        /* live segments, most recent first */
    galloc_stats_t stats;          /* PyTorch's DeviceStats */
    size_t total_allocated_memory; /* bytes of live segments (== reserved_bytes.all.current) */
    size_t device_total;           /* device bytes (sizes expandable VA ranges) */
    ga_event_t *events_free;       /* pooled event records with live handles */
    ga_event_t *pending_head;      /* events recorded at frees, oldest first */
    ga_event_t *pending_tail;
    size_t pending_blocks;            /* blocks freed but waiting on events or deferred */
    ga_block_t *deferred;             /* freed with stream uses during a route, oldest first (capture.c) */
    struct ga_capture *capture;       /* graph_capture_record_stream_reuse's walks (capture.c); NULL until used */
    void *event_chunks;               /* allocations holding event records */
    ga_trace_t trace;                 /* history (recording off by default); ga_pool_t never moves */
    struct ga_hooks *hooks;           /* device-memory hooks (hooks.c): the registry while one is registered, else
                                         NULL, the one test at every event site (ga_pool_hooked) */
    struct ga_hooks *hook_reg;        /* the registry once the first hook was added (ids, seq), till destroy */
    ga_private_pool_t *private_pools; /* MemPools and graph pools */
    uint64_t next_pool_id;            /* last id handed out by ga_pool_mempool_create */
    ga_route_t routes[GA_MAX_ROUTES]; /* active routes, in begin order */
    size_t n_routes;
    bool set_fraction;             /* a memory fraction was set */
    size_t allowed_memory_maximum; /* fraction * device total, when set_fraction */
    size_t refused_frees;          /* device frees/unmaps refused since the last full flush began */
    bool plain_rounding;           /* no roundup_power2_divisions interval above 1 (ga_pool_round) */
    struct ga_tag *tags;           /* sleep tags (sleep.h's ga_tag_t), most recent first */
    galloc_sleep_stats_t sleep;    /* sleep counters (tags, tags_asleep and the bytes now are recounted) */
    struct ga_host *host;          /* sleep's copies' pinned memory: the allocator's host cache (pinned.c) */
    bool own_host;                 /* host is the pool's own (no allocator handed one over) */
    struct ga_ipc *ipc;            /* exports and blocks of other processes open here (ipc.h); NULL until used */
    ga_blockpool_t asleep_bp;      /* where a route to a sleeping tag leads: no sets, owner the tag's pool */
    /* Stripes (stripe.h). `stripe_path_open` says whether stripe calls may
     * run; it changes only under the allocator's lock and every stripe's. */
    atomic_bool stripe_path_open;
    uint32_t touched_mask;   /* stripes used since the last grant */
    uint32_t touched_before; /* and in the span before it */
    uint32_t grant_mask;     /* stripes given headroom at the last grant */
    atomic_uint map_mask;    /* stripes whose pointer map ever held a block: where free looks */
    /* reserved_bytes.all.current as the last locked call left it, for
     * galloc_memory_reserved to read without a lock: reserved memory changes
     * only under the allocator's lock, and every locked call ends in
     * ga_pool_resume, which stores it (the one place). */
    _Atomic int64_t reserved_seen;
    struct ga_reserve_tag *reserve_tags; /* streams' expandable reserve classes (reserve.h), unordered */
    size_t n_reserve_tags, cap_reserve_tags;
    bool rejection_pending;       /* throw_on_cudamalloc_oom refused a malloc not yet taken (reject.c) */
    ga_oom_rejection_t rejection; /* its figures, for the front end's observer */
    ga_stripe_t stripes[GA_STRIPES];
};

/* Request parameters, PyTorch's AllocParams. */
typedef struct ga_alloc_params {
    size_t orig_size;  /* caller's bytes */
    size_t size;       /* rounded (round_size) */
    size_t alloc_size; /* segment size if a new one is needed */
    galloc_stream_t stream;
    ga_blockpool_t *pool;
    ga_stream_set_t *set; /* pool's free set for stream (ga_pool_blockpool_prepare) */
    ga_block_t *block;    /* result */
    uint32_t stack_id;    /* trace: the caller's stack (0 = none) */
    bool rejected;        /* throw_on_cudamalloc_oom refused a segment (PyTorch's oom_rejection_info) */
} ga_alloc_params_t;

/* A block cut from a larger one: a neighbour in its segment, free or not. */
static inline bool ga_block_is_split(const ga_block_t *b)
{
    return b->prev != NULL || b->next != NULL;
}

#ifdef __cplusplus
}
#endif
#endif /* GA_POOL_TYPES_H */
