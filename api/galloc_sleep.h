/*
 * galloc_sleep.h: sleep and wake. Tagged memory gives its physical device
 * memory back while its virtual addresses stay reserved, and gets new
 * physical memory at the same addresses on wake: pointers the framework holds
 * stay valid across the pair. The use: reinforcement-learning post-training
 * that runs training and inference in one process on one GPU (vLLM's sleep
 * mode, SGLang's torch_memory_saver), here with galloc's caching pool,
 * expandable segments, statistics and snapshots kept.
 *
 * Tags. A tag is a sleepable private pool (galloc_mempool.h) with a name.
 * Allocations reach it through the private-pool routes: by a scope
 * (galloc_tag_begin/galloc_tag_end: the calling thread's allocations), or by
 * marking a MemPool (galloc_mempool_set_tag) and routing to it as usual. A
 * tag's segments are obtained through the backend's virtual-memory ops
 * (va_reserve, then map), with or without expandable_segments, so that their
 * addresses can outlive their physical memory; a backend without them cannot
 * host a tag (GALLOC_E_UNSUPPORTED at the first allocation, with a message).
 *
 * Tag names: 1 to 31 bytes of [A-Za-z0-9_.-]. Tag lists: names separated by
 * commas, e.g. "weights,kv_cache", no empty name; as a "tags" argument NULL
 * or "" means every tag the allocator has, as offload_tags it means none
 * (nothing offloaded).
 *
 * Contents. On sleep, the contents of the allocations of offload_tags are
 * copied to pinned host memory and copied back on wake, byte for byte. The
 * contents of a sleeping tag not in offload_tags are discarded: after wake
 * they are undefined (as vLLM's discarded KV cache), though the pointers are
 * valid.
 *
 * While asleep: allocating from the tag fails with GALLOC_E_ASLEEP and a
 * message naming the tag; freeing one of its blocks is allowed (its offloaded
 * copy is dropped, and it is free, not restored, on wake); empty_cache and
 * garbage collection leave its segments alone.
 *
 * Accounting (galloc_stats_t, PyTorch's keys): reserved_bytes falls by the
 * physical bytes released and rises again on wake; each map and unmap call
 * counts one num_device_alloc / num_device_free, as for expandable segments.
 * allocated_bytes, active_bytes and the block and segment counts do not
 * change: the framework's tensors still exist. galloc's own counters are in
 * galloc_sleep_stats_t; galloc_memory_summary appends a section with them
 * when the allocator has tags. Snapshots show a sleeping tag's segments and
 * blocks as before the sleep (the viewer rebuilds past states from them) and
 * the recorded history marks each tag's sleep and wake with a START / END
 * annotation named "galloc.sleep.<tag>".
 *
 * Failures. A device fault inside sleep or wake leaves each tag of the call
 * either fully awake (contents intact) or fully asleep (every offloaded byte
 * still held on the host); a page whose unmap the device refused stays mapped
 * and counted in reserved_bytes, and a later galloc_sleep of the tag tries it
 * again. galloc_check verifies the sleeping state. Nothing leaks.
 *
 * Thread safety: as every allocator call (the allocator's lock).
 */
#ifndef GALLOC_SLEEP_H
#define GALLOC_SLEEP_H

#include <stdint.h>

#include <galloc/galloc_allocator.h>
#include <galloc/galloc_mempool.h>
#include <galloc/galloc_status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The longest tag name, NUL included. */
#define GALLOC_TAG_MAX 32

/*
 * galloc_tag_begin: until galloc_tag_end(a, tag), allocations made by the
 * calling thread come from tag's pool, created (sleepable, awake) on first
 * use. Returns GALLOC_OK; GALLOC_E_INVAL for a bad name, a tag already begun
 * and not ended, or more active routes than galloc_mempool_begin_allocate
 * allows; GALLOC_E_NOMEM.
 */
GALLOC_API galloc_status_t galloc_tag_begin(galloc_allocator_t *a, const char *tag);

/* galloc_tag_end: end galloc_tag_begin's scope. GALLOC_E_INVAL if tag is not begun. */
GALLOC_API galloc_status_t galloc_tag_end(galloc_allocator_t *a, const char *tag);

/*
 * galloc_mempool_set_tag: make private pool id sleepable under tag (a
 * torch.cuda.MemPool the framework routes to itself). Only a pool that holds
 * no segment yet. Returns GALLOC_OK; GALLOC_E_INVAL for an unknown pool, a
 * pool holding segments, a bad name or a name already in use.
 */
GALLOC_API galloc_status_t galloc_mempool_set_tag(galloc_allocator_t *a, galloc_mempool_id_t id, const char *tag);

/*
 * galloc_sleep: put the tags in `tags` to sleep: copy the allocations of the
 * tags also in offload_tags to pinned host memory, then unmap and release the
 * physical memory of all their segments, keeping the address ranges. A tag
 * already asleep is left so (its refused unmaps are retried). Returns
 * GALLOC_OK; GALLOC_E_INVAL for an unknown tag or a bad list (nothing done);
 * GALLOC_E_UNSUPPORTED when offloading is asked of a backend without host
 * memory and copies (nothing done); GALLOC_E_NOMEM when pinned memory runs
 * out, GALLOC_E_DEVICE when a copy or unmap fails (see Failures).
 */
GALLOC_API galloc_status_t galloc_sleep(galloc_allocator_t *a, const char *tags, const char *offload_tags);

/*
 * galloc_wake: map new physical memory at the same addresses for every
 * sleeping tag in `tags` and copy offloaded contents back. The pinned host
 * blocks that held them are kept for the next sleep, which then pins nothing
 * new for blocks of the same sizes (galloc_empty_cache gives them back). A
 * tag already awake is left so. Returns GALLOC_OK; GALLOC_E_INVAL
 * for an unknown tag or a bad list; GALLOC_E_OOM when the device has not the
 * memory, or the memory fraction does not allow it, even after the cache was
 * given back as malloc would (the tag stays asleep, nothing lost);
 * GALLOC_E_NOMEM; GALLOC_E_DEVICE (see Failures).
 */
GALLOC_API galloc_status_t galloc_wake(galloc_allocator_t *a, const char *tags);

/*
 * galloc_sleep_prepare: pin ahead of need the host memory that galloc_sleep(a,
 * tags, offload_tags) will copy into, so that the sleep pins nothing and is
 * left with its copies (pinning, cuMemHostAlloc, was most of a first sleep's
 * time on an H200: 0.46 s for 1 GiB, against 0.02 s for a sleep whose blocks
 * were pinned already). Takes the same arguments as the sleep it prepares: for
 * every allocated block of each awake tag in `tags` that is also in
 * offload_tags, a pinned host block of the block's size is put in the store
 * that galloc_wake keeps its copies' blocks in, unless one is waiting there
 * already (kept by a wake or pinned by an earlier prepare; one waiting block
 * serves one block of that size). The store is the allocator's host cache
 * (galloc_host.h): a block larger than pinned_max_cached_size_mb is not
 * prepared, since the cache would not keep it. The sleep takes them from the
 * store; blocks allocated after the prepare are pinned by the sleep as before.
 *
 * A tag in `tags` but not in offload_tags (discarded) gets nothing: its
 * contents are not copied. A tag asleep already gets nothing: its copies
 * are held. The blocks stay in the store until a sleep takes them;
 * galloc_empty_cache and destroy give them back (bytes_host_cached in
 * galloc_sleep_stats_t counts them). No device memory is touched.
 *
 * Returns GALLOC_OK (also when there is nothing to pin); GALLOC_E_INVAL for
 * an unknown tag or a bad list (nothing done); GALLOC_E_UNSUPPORTED when a
 * tag to offload is named and the backend has no pinned host memory and
 * copies (nothing done; galloc_sleep would refuse the same); GALLOC_E_NOMEM
 * when pinning is refused (or the backend's host_alloc status, with its
 * reason, in galloc_last_error): what this call pinned is given back, the
 * store is as the call found it (galloc_host_memory_stats' accumulated
 * counters and peaks still count the pins and give-backs made). Thread safety: the allocator's lock, held
 * while it pins.
 */
GALLOC_API galloc_status_t galloc_sleep_prepare(galloc_allocator_t *a, const char *tags, const char *offload_tags);

/* galloc's own sleep counters, named "galloc.sleep.<member>" where they are
 * flattened with PyTorch's keys (never one of PyTorch's names). */
typedef struct galloc_sleep_stats {
    uint64_t tags;                 /* tags the allocator has */
    uint64_t tags_asleep;          /* of which asleep now */
    uint64_t bytes_asleep;         /* reserved address space without physical memory now */
    uint64_t bytes_offloaded;      /* bytes held in pinned host memory now */
    uint64_t peak_bytes_offloaded; /* high-water of bytes_offloaded */
    uint64_t num_sleep;            /* galloc_sleep calls that put at least one tag to sleep */
    uint64_t num_wake;             /* galloc_wake calls that woke at least one tag */
    uint64_t bytes_slept;          /* total physical bytes released by sleeps */
    uint64_t bytes_woken;          /* total physical bytes mapped again by wakes */
    uint64_t num_failed;           /* sleep or wake calls that returned a device or memory error */
    uint64_t bytes_host_cached;    /* pinned host memory waiting for the next sleep's copies: kept by
                                      wakes or pinned ahead by galloc_sleep_prepare in the allocator's
                                      host cache (galloc_host.h; given back by galloc_empty_cache,
                                      galloc_host_empty_cache and destroy) */
} galloc_sleep_stats_t;

/* galloc_sleep_stats: fill *out. GALLOC_E_INVAL for NULL. */
GALLOC_API galloc_status_t galloc_sleep_stats(galloc_allocator_t *a, galloc_sleep_stats_t *out);

/*
 * galloc_tag_asleep: *asleep = 1 if tag is asleep, 0 if awake. GALLOC_E_INVAL
 * for an unknown tag.
 */
GALLOC_API galloc_status_t galloc_tag_asleep(galloc_allocator_t *a, const char *tag, int *asleep);

#ifdef __cplusplus
}
#endif
#endif /* GALLOC_SLEEP_H */
