/*
 * galloc_mempool.h: private memory pools, as PyTorch's torch.cuda.MemPool and
 * CUDA-graph pools (beginAllocateToPool / endAllocateToPool / releasePool in
 * c10/cuda/CUDACachingAllocator.cpp).
 *
 * A private pool has its own small and large block pools: its blocks never
 * serve the default pool and the default pool's never serve it. Between
 * galloc_mempool_begin_allocate and galloc_mempool_end_allocate, allocations
 * that match the route (a stream, or the calling thread) come from the pool.
 * While any route is active, galloc behaves as PyTorch does during a capture:
 * pending cross-stream frees are not polled, a block freed with record_stream
 * uses records no event but waits, active pending free, for the first malloc
 * or empty_cache after the last route ends (PyTorch's deferred_blocks), and a
 * failed device allocation is not followed by a cache flush. With
 * graph_capture_record_stream_reuse:True and a backend with capture_info and
 * node_deps (galloc_backend.h), a malloc on stream s during a route returns
 * such a block of s to its pool at once when the capture graph orders every
 * use of it before s's next work (docs/integration.md, "Graph captures").
 * Snapshots show a segment's pool as segment_pool_id.
 */
#ifndef GALLOC_MEMPOOL_H
#define GALLOC_MEMPOOL_H

#include <stdint.h>

#include <galloc/galloc_allocator.h>
#include <galloc/galloc_status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A pool id, PyTorch's MempoolId_t pair; {0, 0} is the default pool. */
typedef struct galloc_mempool_id {
    uint64_t a;
    uint64_t b;
} galloc_mempool_id_t;

/* Which allocations a route sends to a pool. */
typedef enum galloc_route {
    GALLOC_ROUTE_STREAM = 0, /* allocations on one stream (a graph capture) */
    GALLOC_ROUTE_THREAD = 1  /* allocations made by the thread that began the route (torch.cuda.use_mem_pool) */
} galloc_route_t;

/*
 * galloc_mempool_create: a new private pool with use count 1; its id is
 * {0, n} with n counting up from 1, like MemPool's ids. Returns GALLOC_OK,
 * GALLOC_E_INVAL, GALLOC_E_NOMEM.
 */
GALLOC_API galloc_status_t galloc_mempool_create(galloc_allocator_t *a, galloc_mempool_id_t *id);

/*
 * galloc_mempool_create_id: a new private pool with use count 1 and the id
 * given, for a replayer recreating the pools a recorded run had (a CUDA
 * graph's {0, n}, a MemPool's), so that its snapshot names them as the
 * recording did. Later galloc_mempool_create ids count on from above it.
 * Returns GALLOC_OK; GALLOC_E_INVAL ({0, 0}, or an id a pool of this
 * allocator has); GALLOC_E_NOMEM.
 */
GALLOC_API galloc_status_t galloc_mempool_create_id(galloc_allocator_t *a, galloc_mempool_id_t id);

/*
 * galloc_mempool_begin_allocate: route matching allocations to pool id
 * (stream is used for GALLOC_ROUTE_STREAM only). Returns GALLOC_OK;
 * GALLOC_E_INVAL for an unknown or released pool, a pool already being routed
 * to ("already recording to mempool_id" in PyTorch), a bad route, or more than
 * 64 active routes.
 */
GALLOC_API galloc_status_t galloc_mempool_begin_allocate(galloc_allocator_t *a, galloc_mempool_id_t id,
                                                         galloc_route_t route, galloc_stream_t stream);

/* galloc_mempool_end_allocate: stop routing to pool id. GALLOC_E_INVAL if it
 * is not being routed to. */
GALLOC_API galloc_status_t galloc_mempool_end_allocate(galloc_allocator_t *a, galloc_mempool_id_t id);

/* Flags of a pool, PyTorch's torch.cuda.MemPool(use_on_oom=..., no_split=...)
 * (aten/src/ATen/cuda/MemPool.cpp: setUseOnOOM, setNoSplit):
 *   GALLOC_MEMPOOL_USE_ON_OOM  when a default-pool allocation finds no cached
 *       block and the device refuses a new segment, a free cached block of
 *       this pool may serve it, before any cache is freed (PyTorch main's
 *       try_mempool_fallback): searched as the default pool is (best fit by
 *       stream and size), never growing the pool; the block, and the rest of
 *       it when split, stays in this pool, and is counted in the small or
 *       large pool stats by its size as any block is. Pools are tried newest
 *       first (PyTorch's order is a hash set's). Not used once released, nor
 *       while routed to, nor for a sleep tag's pool.
 *   GALLOC_MEMPOOL_NO_SPLIT    blocks of this pool are never split: each
 *       allocation takes a whole free block or a whole new segment (2 MiB for
 *       a small request, 20 MiB for 1-10 MiB), and allocated_bytes counts it
 *       whole while requested_bytes counts the size asked for. */
#define GALLOC_MEMPOOL_USE_ON_OOM 1u
#define GALLOC_MEMPOOL_NO_SPLIT 2u

/*
 * galloc_mempool_set_flags: set pool id's flags (GALLOC_MEMPOOL_* or'ed; 0
 * clears them). They apply from the next allocation on; blocks already split
 * stay split. Returns GALLOC_OK; GALLOC_E_INVAL for an unknown or released
 * pool, or an unknown flag; GALLOC_E_UNSUPPORTED where the allocator has no
 * private pools.
 */
GALLOC_API galloc_status_t galloc_mempool_set_flags(galloc_allocator_t *a, galloc_mempool_id_t id, unsigned flags);

/*
 * galloc_mempool_release: drop one use of pool id. At zero the pool becomes
 * freeable: its cached segments go back to the device at the next
 * galloc_empty_cache (or OOM flush), and the pool disappears once it holds no
 * segment. Blocks still allocated from it stay valid until freed. Returns
 * GALLOC_OK, or GALLOC_E_INVAL for an unknown pool or one still routed to.
 */
GALLOC_API galloc_status_t galloc_mempool_release(galloc_allocator_t *a, galloc_mempool_id_t id);

#ifdef __cplusplus
}
#endif
#endif /* GALLOC_MEMPOOL_H */
