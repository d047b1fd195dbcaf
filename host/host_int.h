/*
 * host_int.h: private to host/ and its tests: the host cache's state.
 *
 * Locking: none; the owning allocator's lock is held for every call.
 *
 * Files: cache.c (create, destroy, malloc, free, record_stream, the event
 * queue, empty_cache), pin.c (pinning and unpinning a block: host_alloc, or
 * malloc + page faulting + host_register; the reserve segment; the timing
 * stats), stats.c (the statistics copy, resets and galloc_check's recount).
 *
 * Invariants (ga_host_check recounts them):
 * - every block record of a live block is in `ptrs` under its pointer, in
 *   exactly one state: allocated (handed out), pending (event_count > 0: freed
 *   and waiting on events) or free (in the free list of bucket
 *   ga_host_bucket(size));
 * - allocations.current / allocated_bytes.current = the live blocks / their
 *   sizes; active[b] / active_bytes[b] current = the allocated and pending
 *   blocks of bucket b / their sizes;
 * - every queue entry names a pending block, and a pending block has exactly
 *   event_count entries;
 * - a carved block lies inside the reserve segment, which never shrinks;
 * - only a free block is marked kept (the sleep offload's, counted in
 *   kept_bytes) or orphan (its give-back refused, retried by
 *   ga_host_retry_orphans), never both.
 */
#ifndef GA_HOST_INT_H
#define GA_HOST_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/host.h"
#include "util/addrmap.h"

#ifdef __cplusplus
extern "C" {
#endif

/* MAX_SIZE_INDEX: one free list per ceil(log2(size)), 0..63. */
#define GA_HOST_BUCKETS 64
/* The largest block: its bucket must be < 64 and its power of two must fit. */
#define GA_HOST_MAX_BLOCK ((size_t)1 << 63)
/* PinnedReserveSegment::allocate carves in 4 KiB steps. */
#define GA_HOST_RESERVE_STEP ((size_t)4096)
/* Streams kept in the record itself before a heap array is needed. */
#define GA_HOST_INLINE_STREAMS 4

/* How a block's memory was pinned, so it is given back the same way
 * (PyTorch's use_host_register map). */
typedef enum ga_host_kind {
    GA_HOST_PINNED = 0,     /* backend host_alloc (cuMemHostAlloc / hipHostMalloc) */
    GA_HOST_REGISTERED = 1, /* malloc + backend host_register: unregister, then free */
    GA_HOST_CARVED = 2      /* a piece of the reserve segment: never given back on its own */
} ga_host_kind_t;

typedef struct ga_host_block {
    void *ptr;                /* the block's memory */
    size_t size;              /* its bytes: the rounded (or exact) request; PyTorch's size_ */
    uint8_t kind;             /* ga_host_kind_t */
    bool allocated;           /* handed out (PyTorch's allocated_) */
    bool kept;                /* cached by the sleep offload (ga_host_free_kept): galloc_empty_cache's */
    bool orphan;              /* cached because its give-back was refused (ga_host_free_release) */
    uint32_t event_count;     /* queue entries naming it (PyTorch's event_count_) */
    uint32_t n_streams;       /* streams recorded since its malloc (PyTorch's streams_) */
    uint32_t cap_streams;     /* room in streams */
    galloc_stream_t *streams; /* inline_streams or a heap array */
    galloc_stream_t inline_streams[GA_HOST_INLINE_STREAMS];
    struct ga_host_block *prev, *next; /* its bucket's free list (oldest first), or the record recycle list */
} ga_host_block_t;

/* An entry of ptrs. */
typedef struct ga_host_ptr {
    uintptr_t key;          /* the block's pointer */
    ga_host_block_t *block; /* its record */
} ga_host_ptr_t;

/* A free list: PyTorch's FreeBlockList deque, pushed at the back, taken from
 * the back. */
typedef struct ga_host_list {
    ga_host_block_t *head, *tail;
} ga_host_list_t;

/* An entry of the event queue: an event recorded at a block's free. */
typedef struct ga_host_event {
    uintptr_t event;        /* the backend's event handle */
    ga_host_block_t *block; /* the block it keeps pending */
} ga_host_event_t;

struct ga_host {
    ga_backend_t *backend; /* pinned memory and events (the allocator's) */
    ga_err_t *err;         /* the allocator's error sink */
    /* Settings (conf.h), fixed at create. */
    uint64_t round_threshold;  /* pinned_max_round_threshold_mb in bytes (UINT64_MAX: off) */
    uint64_t max_cached;       /* pinned_max_cached_size_mb in bytes (UINT64_MAX: off) */
    uint64_t reserve_size;     /* pinned_reserve_segment_size_mb in bytes (0: none) */
    bool use_register;         /* pinned_use_cuda_host_register */
    uint32_t register_threads; /* pinned_num_register_threads */

    ga_addrmap_t ptrs;                    /* every live block by pointer (ga_host_ptr_t) */
    ga_host_list_t free[GA_HOST_BUCKETS]; /* free blocks by bucket */
    ga_host_block_t *spare;               /* recycled block records (next-linked) */

    ga_host_event_t *queue; /* ring of pending events, oldest at queue[first] (PyTorch's events_ back) */
    size_t q_cap;           /* 0 or a power of two */
    size_t q_first, q_n;
    uintptr_t *idle; /* events created and not in the queue (PyTorch's EventPool) */
    size_t n_idle, cap_idle;
    size_t n_events; /* events created in all: queue + idle */

    /* The reserve segment (PinnedReserveSegment), made at the first miss. */
    void *reserve;        /* its memory, NULL until made */
    uint8_t reserve_kind; /* how it was pinned (ga_host_kind_t, PINNED or REGISTERED) */
    size_t reserve_used;  /* bytes carved so far (PyTorch's current_ptr_ - start_) */

    /* Statistics (HostStatsStaged): the two slow-path stats, the active
     * stats per bucket (summed at read, peaks included, as getStats does),
     * and the driver calls' timing. */
    galloc_stat_t allocations, allocated_bytes;
    galloc_stat_t active[GA_HOST_BUCKETS], active_bytes[GA_HOST_BUCKETS];
    galloc_host_duration_t host_alloc_time, host_free_time;
    uint64_t kept_bytes; /* sizes of the free blocks marked kept */
};

/* ceil(log2(size)) for size >= 1 (c10::llvm::Log2_64_Ceil): the bucket. */
static inline unsigned ga_host_bucket(size_t size)
{
    return size <= 1 ? 0u : 64u - (unsigned)__builtin_clzll((unsigned long long)(size - 1));
}

/* pin.c. ga_host_pin: new pinned memory of bytes for a block (from the
 * reserve segment when one is configured and has room, making it first if
 * needed), *kind how; host_alloc_time counts each driver pinning. A failure
 * changes nothing but the reserve segment, which stays made once made.
 * ga_host_unpin: give a block's memory back (a carved block: nothing to do);
 * host_free_time counts each driver call; a refusal is the backend's status.
 * ga_host_pin_close: give back the reserve segment (destroy). */
galloc_status_t ga_host_pin(ga_host_t *h, size_t bytes, void **ptr, ga_host_kind_t *kind);
galloc_status_t ga_host_unpin(ga_host_t *h, void *ptr, size_t bytes, ga_host_kind_t kind);
void ga_host_pin_close(ga_host_t *h);

#ifdef __cplusplus
}
#endif
#endif /* GA_HOST_INT_H */
