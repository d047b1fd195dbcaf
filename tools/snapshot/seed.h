/*
 * seed.h: the allocator state at a snapshot trace's first entry, for a trace
 * that starts mid-run (its ring buffer wrapped), and a galloc allocator made
 * to hold it.
 *
 * Reconstruction (ga_seed_from_snapshot) walks the trace backwards from the
 * final `segments`, as PyTorch's memory visualizer does for its Allocator
 * State History: undo an alloc -> the block was not live; undo a
 * free_completed -> it was (size: the request rounded to 512 bytes); undo a
 * free_requested -> it was allocated; undo a segment_alloc -> the segment
 * did not exist; undo a segment_free -> it existed, empty. A final block in
 * state active_pending_free (freed by the user, waiting on a stream) that the
 * trace never touches was pending at the first entry too. A block whose
 * free_completed is the trace's only word on it is free space at the first
 * entry (seed.c says why). Blocks freed in the trace report their requested size
 * only, so a gap too small to have been split off (1 MiB or less in a large
 * segment, under 512 bytes in a small one) is given to the block before it,
 * as PyTorch's split rule would have.
 *
 * Expandable segments (seed_resv.h): each reservation's mapped pages are
 * walked back from the final runs (undo a segment_map -> those pages were
 * unmapped; undo a segment_unmap -> they were mapped) and every run mapped at
 * the first entry becomes a segment here (expandable, with its reservation's
 * base and page), tiled with its blocks like any other; under
 * expandable_segments:True every remainder of 512 bytes or more was split
 * off, so a gap of any size is free space. Seeding tiles each reservation
 * from its base in address order (the unmapped holes between runs by
 * placeholders), then frees the holes' placeholders and empties the cache,
 * which unmaps exactly the holes' pages, before it frees the gaps: free
 * pieces inside the runs stay mapped, as they were. A configuration without
 * expandable segments cannot hold a run: its live blocks are then allocated
 * plainly, as --no-seed would.
 *
 * Seeding (ga_seed_apply in replay.h, seed_apply.c) creates each segment with its recorded size and
 * tiles it, in address order, with allocations of its blocks and of its free
 * gaps, then frees the gaps: the allocator then holds the same segments with
 * the same block sizes and states. A pending block is allocated, recorded on
 * the replay's side stream and freed, as the replay does a lone
 * free_requested: it stays active and pending until an allocation polls its
 * event and finds it complete, on a device once the side stream's work is
 * done (a free_completed event synchronizes it), on the sim device, whose
 * events complete when recorded, at the next allocation
 * (docs/trace-format.md); no trace id maps to it, as the user has freed it. A segment of a private pool (segment_pool_id other than (0, 0):
 * a CUDA graph's or a MemPool's) is tiled inside a galloc MemPool made for
 * its pool id, one per distinct id, so the replay's allocations, which are
 * not routed to any pool, never take its free blocks, as PyTorch's do not.
 * Segments the trace frees without having made them, and expandable runs,
 * are taken for the default pools (the trace does not say otherwise). This relies on PyTorch's rules under the
 * default rounding (512 bytes, 2 MiB small and >= 10 MiB large segments
 * rounded to 2 MiB, best fit, split remainders): with roundup_power2_divisions
 * or max_split_size_mb the seeded layout may differ, and --verify shows where.
 */
#ifndef GA_TOOLS_SNAPSHOT_SEED_H
#define GA_TOOLS_SNAPSHOT_SEED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* PyTorch's kSmallSize (1 MiB): the small pool's largest block, and the
 * remainder above which a large block is split (below it the block is handed
 * out whole). */
#define GA_SEED_SMALL_SIZE ((uint64_t)1 << 20)

/* One piece of a segment at the first trace entry: a live block or a gap. */
typedef struct ga_seed_piece {
    uint64_t addr;      /* the recorded address (the trace id of a live block) */
    uint64_t size;      /* bytes */
    bool live;          /* a block live at the first entry; false: free space */
    uint64_t req;       /* live: the bytes requested (requested_size, or the size its free recorded),
                        0 if unknown; the seeded block asks for them when they round to size */
    bool pending;       /* live and freed by the user, waiting on a stream (active_pending_free) */
    const void *frames; /* live and still live at the end: its allocation's recorded stack (the final
                           block's frames, ga_torch_frame; valid while the snapshot is); NULL otherwise:
                           a block the trace frees was allocated before it, by code it does not name */
    uint16_t owner;     /* live: its owner class in the unit's owners index (tools/job sets it) */
    bool kept;          /* live: the trace never frees it (tools/job sets it) */
} ga_seed_piece_t;

typedef struct ga_seed_segment {
    uint64_t addr;      /* recorded address */
    uint64_t size;      /* total_size */
    uint64_t stream;    /* the stream it belongs to */
    bool small;         /* small pool (2 MiB segments of blocks up to 1 MiB) */
    bool expandable;    /* a run of mapped pages of an expandable reservation */
    uint64_t resv;      /* expandable: the reservation's base (runs of one reservation are consecutive) */
    uint64_t page;      /* expandable: its page (2 MiB small, 20 MiB large) */
    int64_t pool_id[2]; /* segment_pool_id: (0, 0) the default pools, else a private pool */
    size_t first, n;    /* its pieces: pc[first .. first + n), address order */
    const void *frames; /* still there at the end (not expandable): the stack that made it (the final
                           segment's frames, ga_torch_frame; valid while the snapshot is); NULL otherwise */
} ga_seed_segment_t;

typedef struct ga_seed {
    ga_seed_segment_t *seg; /* n_seg segments, address order */
    size_t n_seg;
    ga_seed_piece_t *pc; /* n_pc pieces */
    size_t n_pc;
    uint64_t live_blocks;    /* live pieces */
    uint64_t pending_blocks; /* ... of which pending (freed, waiting on a stream) */
    size_t private_segments; /* segments of private pools */
    size_t private_pools;    /* ... and their distinct pool ids */
    uint64_t live_bytes;     /* the live pieces' bytes (pending ones included: active_bytes at the entry) */
    uint64_t reserved_bytes; /* the segments' bytes: reserved_bytes at the entry, what a device held then */
} ga_seed_t;

struct ga_torch_snapshot; /* torch_snapshot.h */

/*
 * ga_seed_from_snapshot: the state of device `device` of snapshot s (path
 * names it in messages) at its trace's first entry. Returns 0, or -1 with err set (unreadable file,
 * a final block that is not inactive and has no size, an expandable segment
 * whose reservation cannot be told: map/unmap entries
 * of a stream with no expandable segment left at the end, runs or entries not
 * in whole pages). Release with ga_seed_free.
 */
int ga_seed_from_snapshot(const struct ga_torch_snapshot *s, const char *path, int device, ga_seed_t *out, char *err,
                          size_t errlen);
void ga_seed_free(ga_seed_t *s);

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_SNAPSHOT_SEED_H */
