/*
 * galloc_inspect.h: what an allocator holds, block by block: the size of one
 * live block (as malloc_usable_size gives a host block's), and a walk over
 * every segment and its blocks (what torch.cuda.memory_snapshot() lists,
 * without writing a file). For tools that attribute memory to its owners
 * (galloc replay's owners at the peak) and for frameworks that want to know
 * where their bytes are.
 */
#ifndef GALLOC_INSPECT_H
#define GALLOC_INSPECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc_allocator.h>
#include <galloc/galloc_mempool.h>
#include <galloc/galloc_status.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * galloc_usable_size: the bytes of the live block at ptr, as galloc_malloc
 * handed it out: what allocated_bytes counts for it (the request rounded as
 * PyTorch rounds it, and more where the block's remainder was too small to
 * split off, or where the block is never split: an oversize block, a
 * no_split MemPool's). A sleeping tag's block keeps its size. For the
 * stream-ordered and user allocators, the request. Returns GALLOC_OK with
 * *size set; GALLOC_E_INVAL for NULL a, ptr or size; GALLOC_E_NOT_OWNED
 * (with a message, galloc_last_error) when ptr is not a live block of a
 * (freed, interior, another allocator's, one opened with galloc_ipc_open);
 * *size is 0 whenever the status is not GALLOC_OK. O(1) expected; on the
 * caching pool it takes only the lock a free of ptr would take (its stream's
 * stripe's: Note: per-stream locking, docs/architecture.md; the allocator's
 * while the stripe path is off, as for free), never every stripe's, except
 * for a sleeping tag's block and a pointer it does not own. Thread-safe.
 */
GALLOC_API galloc_status_t galloc_usable_size(galloc_allocator_t *a, const void *ptr, size_t *size);

/* A block's state in a walk (PyTorch's snapshot strings in brackets). */
typedef enum galloc_block_state {
    GALLOC_BLOCK_FREE = 0,        /* cached, reusable ("inactive") */
    GALLOC_BLOCK_ALLOCATED = 1,   /* live ("active_allocated") */
    GALLOC_BLOCK_PENDING_FREE = 2 /* freed by the caller, waiting on other streams' work ("active_pending_free") */
} galloc_block_state_t;

/* One block of a segment. */
typedef struct galloc_block_view {
    uintptr_t address;          /* its device address */
    size_t size;                /* bytes */
    size_t requested;           /* bytes asked for (0 for a free block) */
    galloc_block_state_t state; /* see above */
} galloc_block_view_t;

/* One segment, as PyTorch's snapshot lists it: a cudaMalloc'd segment, or one
 * contiguous mapped range of an expandable segment (unmapped address space is
 * not memory). Its blocks tile it, in address order. */
typedef struct galloc_segment_view {
    uint32_t struct_size;              /* sizeof(galloc_segment_view_t) this galloc was built with */
    uintptr_t address;                 /* its first byte */
    size_t size;                       /* bytes: the sum of its blocks' sizes */
    galloc_stream_t stream;            /* the stream it belongs to */
    bool small;                        /* the small pool's (blocks of at most 1 MiB) */
    bool expandable;                   /* a mapped range of an expandable segment */
    galloc_mempool_id_t pool;          /* its private pool ({0, 0}: the default pools) */
    const galloc_block_view_t *blocks; /* n_blocks blocks, valid during the callback only */
    size_t n_blocks;
} galloc_segment_view_t;

/* A walk's callback: return 0 to go on, anything else to stop the walk. */
typedef int (*galloc_segment_visit_fn)(void *ctx, const galloc_segment_view_t *segment);

/*
 * galloc_segments_visit: call fn once for every segment a holds (mapped
 * memory only: a sleeping tag's segments are not visited, though snapshots
 * show them as before the sleep), in no particular order, under a's lock: fn
 * must not call galloc on a (it may on another allocator). Sizes: the
 * segments' sizes sum to reserved_bytes.all.current (save a page whose unmap
 * the device refused in a sleep: galloc_sleep.h); the ALLOCATED blocks'
 * sizes to allocated_bytes.all.current less the bytes of sleeping tags'
 * blocks. O(blocks); meant for OOMs, peaks and reports, not the hot path.
 * Returns GALLOC_OK (also when fn stopped the walk); GALLOC_E_INVAL for NULL
 * a or fn; GALLOC_E_UNSUPPORTED for an allocator without segments of its own
 * (the stream-ordered and user allocators); GALLOC_E_NOMEM (with a message)
 * if host memory for a segment's block list ran out (the walk stops there,
 * fn having seen the segments before it; nothing changes).
 * Thread-safe with respect to other threads' calls on a.
 */
GALLOC_API galloc_status_t galloc_segments_visit(galloc_allocator_t *a, galloc_segment_visit_fn fn, void *ctx);

#ifdef __cplusplus
}
#endif
#endif /* GALLOC_INSPECT_H */
