/*
 * galloc_host.h: the pinned host cache, PyTorch's CachingHostAllocator
 * (pin_memory(), data loaders, CPU offload; torch.cuda.host_memory_stats())
 * beside an allocator's device pools.
 *
 * Every allocator has one host cache, on its device backend's pinned host
 * memory (cuMemHostAlloc / hipHostMalloc, or with
 * pinned_use_cuda_host_register:True malloc + cuMemHostRegister_v2 /
 * hipHostRegister) and its events. PyTorch has one per process; a block is
 * usable by every device's copies either way (portable pinned memory), and
 * galloc records the events of a block's streams on the allocator's device.
 *
 * The policy is PyTorch's (aten/src/ATen/core/CachingHostAllocator.h,
 * CachingHostAllocatorImpl; aten/src/ATen/cuda/CachingHostAllocator.cpp;
 * docs/host.md says where each rule comes from and where galloc differs):
 * - a request is rounded up to a power of two unless it is larger than
 *   pinned_max_round_threshold_mb or pinned_max_cached_size_mb (then exact);
 *   blocks are never split;
 * - a free block is looked up in the free list of its power-of-two bucket
 *   (ceil(log2(size))), from the most recently freed, the first whose size is
 *   at least the request (PR #192722; before it the bucket's last block was
 *   taken whatever its size);
 * - a miss pins a new block: carved from the reserve segment when
 *   pinned_reserve_segment_size_mb is set (one pinned segment made at the
 *   first miss, carved in 4 KiB steps, never given back before destroy),
 *   else pinned on its own;
 * - galloc_host_record_stream marks a block used on a stream; its free
 *   records one event per such stream, and the block is reused only once
 *   every one of them has completed: events are queried, oldest first, at
 *   every galloc_host_malloc and galloc_host_empty_cache, stopping at the
 *   first that has not (galloc runs no background thread:
 *   pinned_use_background_threads is recorded and has no effect);
 * - a block that becomes free and is larger than pinned_max_cached_size_mb is
 *   given back to the driver at once instead of being cached (PR #171662);
 * - galloc_host_empty_cache gives back every cached block (not blocks waiting
 *   on events, not blocks in use). galloc_empty_cache does not touch the host
 *   cache, as torch.cuda.empty_cache() does not, except for the blocks the
 *   sleep offload keeps for its next sleep (galloc_sleep.h).
 *
 * The sleep offload (galloc_sleep.h) takes its copies' pinned memory from
 * this cache: blocks of each device block's exact size (not rounded), kept
 * in the cache by a wake for the next sleep (bytes_host_cached), counted in
 * these statistics like any block; a kept block may serve a
 * galloc_host_malloc it fits (a request above pinned_max_round_threshold_mb,
 * which is not rounded, of at most the block's size in the same bucket), and
 * pinned_max_cached_size_mb bounds what a wake keeps and what
 * galloc_sleep_prepare pins. A copy freed while its tag sleeps, or kept by a
 * wake, is marked kept; one the driver refuses to take back stays cached,
 * counted here and no longer in bytes_host_cached, until the next sleep,
 * prepare or wake (or galloc_host_empty_cache) gives it back.
 *
 * Thread-safety: every function below may be called from any thread; the
 * host cache calls take the allocator's lock (as galloc_malloc's locked path
 * does). Statuses and messages follow galloc_status.h and galloc_last_error.
 */
#ifndef GALLOC_HOST_H
#define GALLOC_HOST_H

#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc_allocator.h>
#include <galloc/galloc_backend.h>
#include <galloc/galloc_stats.h>
#include <galloc/galloc_status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* PyTorch's DurationStat, in microseconds (c10's CachingAllocator
 * DurationStat: total and count accumulate, max and min are its peaks).
 * avg is total / count (0 while count is 0), computed when read. */
typedef struct galloc_host_duration {
    int64_t avg;   /* total / count, whole microseconds */
    int64_t count; /* calls timed since the last accumulated reset */
    int64_t max;   /* the longest call since the last peak reset */
    int64_t min;   /* the shortest call (0: none, or every one shorter than 1 us) since the last peak reset */
    int64_t total; /* microseconds spent since the last accumulated reset */
} galloc_host_duration_t;

/*
 * GALLOC_HOST_STATS_FIELDS(STAT, DURATION, INT): every statistic of
 * torch.cuda.host_memory_stats(), in the order it returns the flattened keys
 * (sorted by plain string comparison; at::HostStats in
 * aten/src/ATen/core/CachingHostAllocator.h, flattened with "." by
 * torch/cuda/memory.py's host_memory_stats):
 *   STAT(name):     galloc_stat_t name,          keys name.{allocated,current,freed,peak}
 *   DURATION(name): galloc_host_duration_t name, keys name.{avg,count,max,min,total}
 *   INT(name):      int64_t name,                key  name
 * active_requests / active_bytes: blocks handed out and not yet reusable
 * (a freed block stays active until its streams' events complete);
 * allocations / allocated_bytes: blocks the cache owns, active or cached
 * (block sizes, rounded); num_host_alloc / num_host_free: blocks created /
 * given back (allocations.allocated / .freed); host_alloc_time /
 * host_free_time: the driver calls that pin and unpin (the reserve
 * segment's own pinning included, its carved blocks not).
 * As in PyTorch, active_* are summed over the 64 power-of-two buckets, peaks
 * included: active_requests.peak is the sum of each bucket's peak, which can
 * exceed the true peak.
 */
#define GALLOC_HOST_STATS_FIELDS(STAT, DURATION, INT)                                                                  \
    STAT(active_bytes)                                                                                                 \
    STAT(active_requests)                                                                                              \
    STAT(allocated_bytes)                                                                                              \
    STAT(allocations)                                                                                                  \
    DURATION(host_alloc_time)                                                                                          \
    DURATION(host_free_time)                                                                                           \
    INT(num_host_alloc)                                                                                                \
    INT(num_host_free)

/* Number of flattened keys: 4 stats x 4 + 2 durations x 5 + 2 ints = 28. */
#define GALLOC_HOST_STATS_KEY_COUNT 28

/* galloc_host_stats_t: a copy of the host cache's statistics. Set struct_size
 * = sizeof(galloc_host_stats_t) before passing it to galloc_host_memory_stats. */
typedef struct galloc_host_stats {
    uint32_t struct_size; /* sizeof(galloc_host_stats_t) as the caller compiled it */
#define GALLOC_HOST_STATS_STAT_(name) galloc_stat_t name;
#define GALLOC_HOST_STATS_DURATION_(name) galloc_host_duration_t name;
#define GALLOC_HOST_STATS_INT_(name) int64_t name;
    GALLOC_HOST_STATS_FIELDS(GALLOC_HOST_STATS_STAT_, GALLOC_HOST_STATS_DURATION_, GALLOC_HOST_STATS_INT_)
#undef GALLOC_HOST_STATS_STAT_
#undef GALLOC_HOST_STATS_DURATION_
#undef GALLOC_HOST_STATS_INT_
} galloc_host_stats_t;

/*
 * galloc_host_malloc: a block of at least size bytes of pinned host memory at
 * *ptr (PyTorch's CachingHostAllocatorImpl::allocate). size 0 gives *ptr =
 * NULL and GALLOC_OK, counting nothing. Returns GALLOC_E_INVAL (a or ptr
 * NULL), GALLOC_E_DESTROYED, GALLOC_E_UNSUPPORTED (the backend has no pinned
 * host memory, or no host_register for pinned_use_cuda_host_register:True),
 * GALLOC_E_NOMEM (the driver or the host refused the memory; a size above
 * 2^63 bytes), or the backend's status; on failure *ptr is NULL and nothing
 * changed (the message says why, galloc_last_error).
 */
GALLOC_API galloc_status_t galloc_host_malloc(galloc_allocator_t *a, size_t size, void **ptr);

/*
 * galloc_host_free: give back a block from galloc_host_malloc (its exact
 * pointer; NULL is a no-op). With no stream recorded it becomes free at once
 * (cached, or given back to the driver when larger than
 * pinned_max_cached_size_mb); otherwise an event is recorded on each of its
 * streams and it stays active until all have completed. Returns
 * GALLOC_E_NOT_OWNED for a pointer that is not a live block (never
 * allocated, freed already, or inside a block), GALLOC_E_DESTROYED, or the
 * backend's status when recording an event failed (the block is then still
 * allocated, its streams kept); GALLOC_OK otherwise.
 */
GALLOC_API galloc_status_t galloc_host_free(galloc_allocator_t *a, void *ptr);

/*
 * galloc_host_record_stream: mark the live block at ptr (its exact pointer)
 * as used by work queued on stream s, so that its free waits for that work
 * (PyTorch's record_event, which a non_blocking copy makes). Recording a
 * stream twice is one stream. Returns GALLOC_E_NOT_OWNED (not a live block),
 * GALLOC_E_UNSUPPORTED (the backend has no events), GALLOC_E_NOMEM,
 * GALLOC_E_DESTROYED.
 */
GALLOC_API galloc_status_t galloc_host_record_stream(galloc_allocator_t *a, void *ptr, galloc_stream_t s);

/*
 * galloc_host_empty_cache: query the pending events (as a malloc does) and give
 * every cached block back to the driver (torch._C._host_emptyCache,
 * torch.accelerator.empty_host_cache). Blocks in use or waiting on events
 * stay. A block the driver refuses to give back stays cached (counted) and
 * the call returns the backend's status after trying every other block.
 */
GALLOC_API galloc_status_t galloc_host_empty_cache(galloc_allocator_t *a);

/*
 * galloc_host_memory_stats: copy the statistics into *out (out->struct_size
 * must be set; fields past it are not written), as
 * torch.cuda.host_memory_stats() reads them: pending events are not queried
 * first. GALLOC_OK, GALLOC_E_INVAL, GALLOC_E_DESTROYED.
 */
GALLOC_API galloc_status_t galloc_host_memory_stats(galloc_allocator_t *a, galloc_host_stats_t *out);

/* galloc_host_reset_peak_stats: every peak = current, and the durations' max
 * and min to 0 (torch.cuda.reset_peak_host_memory_stats). GALLOC_OK,
 * GALLOC_E_INVAL (a NULL), GALLOC_E_DESTROYED. */
GALLOC_API galloc_status_t galloc_host_reset_peak_stats(galloc_allocator_t *a);

/* galloc_host_reset_accumulated_stats: every allocated and freed to 0, and
 * the durations' total and count to 0 (so num_host_alloc and num_host_free
 * too; torch.cuda.reset_accumulated_host_memory_stats). GALLOC_OK,
 * GALLOC_E_INVAL (a NULL), GALLOC_E_DESTROYED. */
GALLOC_API galloc_status_t galloc_host_reset_accumulated_stats(galloc_allocator_t *a);

/*
 * galloc_host_stats_foreach: visit every one of the 28 keys of s in
 * torch.cuda.host_memory_stats()'s order ("active_bytes.allocated" first,
 * "num_host_free" last). Returns the number of keys visited (28 unless fn
 * stopped early by returning non-zero; 0 if s or fn is NULL). Thread-safe
 * (reads only s). Key strings are static.
 */
GALLOC_API size_t galloc_host_stats_foreach(const galloc_host_stats_t *s, galloc_stats_visit_fn fn, void *ctx);

/* galloc_host_stats_lookup: the value of one flattened key. GALLOC_OK, or
 * GALLOC_E_INVAL for a NULL argument or a key not among the 28. Thread-safe. */
GALLOC_API galloc_status_t galloc_host_stats_lookup(const galloc_host_stats_t *s, const char *key, int64_t *value);

#ifdef __cplusplus
}
#endif
#endif /* GALLOC_HOST_H */
