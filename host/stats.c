/*
 * stats.c: the host cache's statistics as getStats reads them
 * (CachingHostAllocatorImpl::getStats, aten/src/ATen/core/CachingHostAllocator.h):
 * allocations and allocated_bytes as kept; num_host_alloc / num_host_free
 * their allocated / freed; active_requests and active_bytes the sums over
 * the 64 buckets of current, allocated, freed and peak (PyTorch's comment:
 * the summed peak is an approximation, not the true peak); the timing
 * stats as kept. The resets are resetPeakStats / resetAccumulatedStats,
 * bucket by bucket. And the invariant recount behind galloc_check.
 */
#include <string.h>

#include "host/host_int.h"
#include "stats/stats.h"

static void add_bucket(galloc_stat_t *acc, const galloc_stat_t *s)
{
    acc->current += s->current;
    acc->peak += s->peak;
    acc->allocated += s->allocated;
    acc->freed += s->freed;
}

void ga_host_stats(const ga_host_t *h, galloc_host_stats_t *out)
{
    galloc_host_stats_t v;
    memset(&v, 0, sizeof(v));
    v.struct_size = out->struct_size;
    v.allocations = h->allocations;
    v.allocated_bytes = h->allocated_bytes;
    v.num_host_alloc = h->allocations.allocated;
    v.num_host_free = h->allocations.freed;
    for (unsigned i = 0; i < GA_HOST_BUCKETS; i++) {
        add_bucket(&v.active_requests, &h->active[i]);
        add_bucket(&v.active_bytes, &h->active_bytes[i]);
    }
    v.host_alloc_time = ga_duration_read(h->host_alloc_time);
    v.host_free_time = ga_duration_read(h->host_free_time);
    size_t n = out->struct_size < sizeof(v) ? out->struct_size : sizeof(v);
    memcpy(out, &v, n);
}

void ga_host_reset_peak(ga_host_t *h)
{
    ga_stat_reset_peak(&h->allocations);
    ga_stat_reset_peak(&h->allocated_bytes);
    for (unsigned i = 0; i < GA_HOST_BUCKETS; i++) {
        ga_stat_reset_peak(&h->active[i]);
        ga_stat_reset_peak(&h->active_bytes[i]);
    }
    ga_duration_reset_peak(&h->host_alloc_time);
    ga_duration_reset_peak(&h->host_free_time);
}

void ga_host_reset_accumulated(ga_host_t *h)
{
    ga_stat_reset_accumulated(&h->allocations);
    ga_stat_reset_accumulated(&h->allocated_bytes);
    for (unsigned i = 0; i < GA_HOST_BUCKETS; i++) {
        ga_stat_reset_accumulated(&h->active[i]);
        ga_stat_reset_accumulated(&h->active_bytes[i]);
    }
    ga_duration_reset_accumulated(&h->host_alloc_time);
    ga_duration_reset_accumulated(&h->host_free_time);
}

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond))                                                                                                   \
            return ga_fail(h->err, GALLOC_E_CORRUPT, "host cache: " __VA_ARGS__);                                      \
    } while (0)

galloc_status_t ga_host_check(ga_host_t *h)
{
    int64_t blocks = 0, bytes = 0, active[GA_HOST_BUCKETS] = {0}, active_bytes[GA_HOST_BUCKETS] = {0};
    uint64_t pending_events = 0, kept = 0;
    size_t listed = 0;
    for (unsigned i = 0; i < GA_HOST_BUCKETS; i++) {
        const ga_host_block_t *prev = NULL;
        for (const ga_host_block_t *b = h->free[i].head; b != NULL; prev = b, b = b->next) {
            CHECK(b->prev == prev, "free list %u is not linked both ways at %p", i, b->ptr);
            CHECK(ga_host_bucket(b->size) == i, "block %p of %zu bytes is in free list %u", b->ptr, b->size, i);
            CHECK(!b->allocated && b->event_count == 0, "block %p is in a free list but %s", b->ptr,
                  b->allocated ? "allocated" : "waiting on events");
            const ga_host_ptr_t *e = ga_addrmap_find(&h->ptrs, (uintptr_t)b->ptr);
            CHECK(e != NULL && e->block == b, "free block %p is not in the pointer map", b->ptr);
            CHECK(!(b->kept && b->orphan), "free block %p is both kept and an orphan", b->ptr);
            kept += b->kept ? b->size : 0;
            listed++;
        }
        CHECK(h->free[i].tail == prev, "free list %u's tail is not its last block", i);
    }
    size_t free_blocks = 0;
    for (size_t k = 0; k < h->ptrs.cap; k++) {
        const ga_host_ptr_t *e = ga_addrmap_slot(&h->ptrs, k);
        if (e == NULL)
            continue;
        const ga_host_block_t *b = e->block;
        CHECK(e->key == (uintptr_t)b->ptr && b->size > 0, "pointer map entry %#lx names block %p",
              (unsigned long)e->key, b->ptr);
        blocks++;
        bytes += (int64_t)b->size;
        bool is_free = !b->allocated && b->event_count == 0;
        free_blocks += is_free;
        CHECK(is_free || (!b->kept && !b->orphan), "block %p is in use but marked %s", b->ptr,
              b->kept ? "kept" : "orphan");
        CHECK(!(b->allocated && b->event_count > 0), "block %p is allocated with %u pending events", b->ptr,
              b->event_count);
        pending_events += b->event_count;
        if (!is_free) {
            unsigned i = ga_host_bucket(b->size);
            active[i]++;
            active_bytes[i] += (int64_t)b->size;
        }
        if (b->kind == GA_HOST_CARVED)
            CHECK(h->reserve != NULL && (const char *)b->ptr >= (const char *)h->reserve &&
                      (const char *)b->ptr + b->size <= (const char *)h->reserve + h->reserve_used,
                  "carved block %p + %zu is not inside the reserve segment's carved part", b->ptr, b->size);
    }
    CHECK(listed == free_blocks, "%zu blocks are free but %zu are in the free lists", free_blocks, listed);
    CHECK(pending_events == h->q_n, "%lu events pending in blocks, %zu in the queue", (unsigned long)pending_events,
          h->q_n);
    for (size_t k = 0; k < h->q_n; k++) {
        const ga_host_block_t *b = h->queue[(h->q_first + k) & (h->q_cap - 1)].block;
        const ga_host_ptr_t *e = ga_addrmap_find(&h->ptrs, (uintptr_t)b->ptr);
        CHECK(e != NULL && e->block == b && b->event_count > 0 && !b->allocated,
              "queued event %zu names block %p, which is not pending", k, b->ptr);
    }
    CHECK(h->n_idle + h->q_n == h->n_events, "%zu idle and %zu queued events, %zu created", h->n_idle, h->q_n,
          h->n_events);
    CHECK(kept == h->kept_bytes, "kept bytes %lu, recounted %lu", (unsigned long)h->kept_bytes, (unsigned long)kept);
    CHECK(h->allocations.current == blocks && h->allocated_bytes.current == bytes,
          "allocations %ld / allocated_bytes %ld, recounted %ld / %ld", (long)h->allocations.current,
          (long)h->allocated_bytes.current, (long)blocks, (long)bytes);
    for (unsigned i = 0; i < GA_HOST_BUCKETS; i++)
        CHECK(h->active[i].current == active[i] && h->active_bytes[i].current == active_bytes[i],
              "bucket %u: active %ld / %ld bytes, recounted %ld / %ld", i, (long)h->active[i].current,
              (long)h->active_bytes[i].current, (long)active[i], (long)active_bytes[i]);
    return GALLOC_OK;
}
