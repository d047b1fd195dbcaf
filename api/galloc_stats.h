/*
 * galloc_stats.h: allocator statistics with exactly the keys and values of
 * PyTorch's torch.cuda.memory_stats() / torch.accelerator.memory.memory_stats().
 *
 * One X-macro list, GALLOC_STATS_FIELDS, generates the struct, the resets and
 * the key iterator, so a stat is added in one line and a key cannot be
 * misspelt in one place only. The list is written in the order PyTorch returns
 * the flattened keys (sorted by plain string comparison), so iterating it in
 * order yields PyTorch's 123 keys in PyTorch's order. A counter PyTorch added
 * later sits at its key's place in the list but at the end of the struct
 * (ADDED), so a caller compiled against an older header reads the same
 * members at the same offsets.
 *
 * Source of the names and their meaning: pytorch/pytorch
 * c10/core/CachingDeviceAllocator.h (struct DeviceStats) and torch/cuda/memory.py
 * (memory_stats flattens with "." and sorts).
 */
#ifndef GALLOC_STATS_H
#define GALLOC_STATS_H

#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc_status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One counter: PyTorch's Stat. increase(n): current += n, peak = max(peak,
 * current), allocated += n; decrease(n): current -= n, freed += n. */
typedef struct galloc_stat {
    int64_t current;   /* value now */
    int64_t peak;      /* highest current since creation or the last peak reset */
    int64_t allocated; /* sum of all increases since the last accumulated reset */
    int64_t freed;     /* sum of all decreases since the last accumulated reset */
} galloc_stat_t;

/* Index into a stat array (PyTorch's StatType): the pool a change belongs to. */
typedef enum galloc_stat_pool {
    GALLOC_STAT_ALL = 0,        /* "all": every change, whatever its pool */
    GALLOC_STAT_SMALL_POOL = 1, /* "small_pool": blocks of rounded size <= 1 MiB */
    GALLOC_STAT_LARGE_POOL = 2, /* "large_pool": the rest */
    GALLOC_STAT_POOLS = 3
} galloc_stat_pool_t;

/*
 * GALLOC_STATS_FIELDS(ARRAY, STAT, INT, ADDED): every stat, in PyTorch's key order.
 *   ARRAY(name): galloc_stat_t name[3], keys name.{all,large_pool,small_pool}.{allocated,current,freed,peak}
 *   STAT(name):  galloc_stat_t name,    keys name.{allocated,current,freed,peak}
 *   INT(name):   int64_t name,          key  name
 *   ADDED(name): int64_t name,          key  name; appended to galloc_stats_t (ABI): num_oom_rejections
 *                (PyTorch 2026, PRs #177356/#179473: allocations refused by throw_on_cudamalloc_oom)
 */
#define GALLOC_STATS_FIELDS(ARRAY, STAT, INT, ADDED)                                                                   \
    ARRAY(active)                                                                                                      \
    ARRAY(active_bytes)                                                                                                \
    ARRAY(allocated_bytes)                                                                                             \
    ARRAY(allocation)                                                                                                  \
    ARRAY(inactive_split)                                                                                              \
    ARRAY(inactive_split_bytes)                                                                                        \
    INT(max_split_size)                                                                                                \
    INT(num_alloc_retries)                                                                                             \
    INT(num_device_alloc)                                                                                              \
    INT(num_device_free)                                                                                               \
    ADDED(num_oom_rejections)                                                                                          \
    INT(num_ooms)                                                                                                      \
    INT(num_sync_all_streams)                                                                                          \
    STAT(oversize_allocations)                                                                                         \
    STAT(oversize_segments)                                                                                            \
    ARRAY(requested_bytes)                                                                                             \
    ARRAY(reserved_bytes)                                                                                              \
    ARRAY(segment)

/* Number of flattened keys: 9 arrays x 12 + 2 stats x 4 + 7 ints = 123. */
#define GALLOC_STATS_KEY_COUNT 123

/*
 * galloc_stats_t: a copy of every stat, taken under the allocator's lock.
 * Set struct_size = sizeof(galloc_stats_t) before passing it to
 * galloc_memory_stats (fields past struct_size are not written, so a caller
 * compiled against an older header keeps working).
 */
typedef struct galloc_stats {
    uint32_t struct_size; /* sizeof(galloc_stats_t) as the caller compiled it */
#define GALLOC_STATS_ARRAY_(name) galloc_stat_t name[GALLOC_STAT_POOLS];
#define GALLOC_STATS_STAT_(name) galloc_stat_t name;
#define GALLOC_STATS_INT_(name) int64_t name;
#define GALLOC_STATS_NONE_(name)
    /* The members of the first release, in key order, then those added since. */
    GALLOC_STATS_FIELDS(GALLOC_STATS_ARRAY_, GALLOC_STATS_STAT_, GALLOC_STATS_INT_, GALLOC_STATS_NONE_)
    GALLOC_STATS_FIELDS(GALLOC_STATS_NONE_, GALLOC_STATS_NONE_, GALLOC_STATS_NONE_, GALLOC_STATS_INT_)
#undef GALLOC_STATS_ARRAY_
#undef GALLOC_STATS_STAT_
#undef GALLOC_STATS_INT_
#undef GALLOC_STATS_NONE_
} galloc_stats_t;

/*
 * galloc_stats_visit_fn: called once per key by galloc_stats_foreach with the
 * flattened PyTorch key (e.g. "allocated_bytes.all.current") and its value.
 * Return 0 to continue, non-zero to stop the iteration.
 */
typedef int (*galloc_stats_visit_fn)(void *ctx, const char *key, int64_t value);

/*
 * galloc_stats_foreach: visit every one of the 123 keys of s in PyTorch's order.
 * Returns the number of keys visited (123 unless fn stopped early, 0 if s or
 * fn is NULL). Thread-safe (reads only s). Key strings are static.
 */
GALLOC_API size_t galloc_stats_foreach(const galloc_stats_t *s, galloc_stats_visit_fn fn, void *ctx);

/*
 * galloc_stats_lookup: the value of one flattened key.
 * Returns GALLOC_OK and sets *value; GALLOC_E_INVAL if an argument is NULL or
 * the key is not one of the 123 (value untouched). Thread-safe.
 */
GALLOC_API galloc_status_t galloc_stats_lookup(const galloc_stats_t *s, const char *key, int64_t *value);

/* Fragmentation of one pool index (all / small / large), beyond PyTorch's stats. */
typedef struct galloc_pool_fragmentation {
    int64_t reserved_bytes;        /* device memory held (mapped bytes for expandable segments) */
    int64_t active_bytes;          /* bytes in active blocks (allocated or waiting on streams) */
    int64_t free_bytes;            /* cached free bytes: reserved - active */
    int64_t inactive_split_bytes;  /* free bytes in segments (or mapped runs of expandable
                                     segments) that also hold active blocks: memory
                                     empty_cache cannot give back. PyTorch reports none
                                     for expandable segments; galloc counts them too. */
    int64_t largest_free_block;    /* the biggest single free block */
    int64_t free_blocks;           /* number of free blocks */
    double external_fragmentation; /* 1 - largest_free_block / free_bytes (0 when nothing is free) */
} galloc_pool_fragmentation_t;

typedef struct galloc_fragmentation {
    uint32_t struct_size;                                /* sizeof(galloc_fragmentation_t) */
    galloc_pool_fragmentation_t pool[GALLOC_STAT_POOLS]; /* indexed by galloc_stat_pool_t */
} galloc_fragmentation_t;

#ifdef __cplusplus
}
#endif
#endif /* GALLOC_STATS_H */
