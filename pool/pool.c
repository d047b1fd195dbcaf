/*
 * pool.c: a pool's life cycle and its cold-path calls (memory fraction, device
 * info, peer access, stats copies, empty_cache).
 */
#include <stdlib.h>
#include <string.h>

#include "pool/capture.h"
#include "pool/blockpool.h"
#include "pool/expandable.h"
#include "pool/hooks.h"
#include "pool/ipc.h"
#include "pool/ops.h"
#include "pool/pinned.h"
#include "pool/private.h"
#include "pool/release.h"
#include "pool/reserve.h"
#include "pool/round.h"
#include "pool/sleep_int.h"
#include "pool/streams.h"
#include "pool/stripe.h"
#include "pool/tags.h"
#include "stats/stats.h"

galloc_status_t ga_pool_create(const ga_conf_t *conf, ga_backend_t *backend, int device, ga_err_t *err, void **impl)
{
    *impl = NULL;
    size_t device_free = 0, device_total = 0;
    galloc_status_t st = ga_backend_mem_info(backend, &device_free, &device_total);
    if (st != GALLOC_OK)
        return ga_fail(err, st, "could not read device %d's memory size: %s", device, galloc_strerror(st));
    const galloc_backend_ops_t *ops = backend->ops;
    if (conf->expandable_segments && !(GA_BACKEND_HAS(ops, va_reserve) && GA_BACKEND_HAS(ops, va_release) &&
                                       GA_BACKEND_HAS(ops, map) && GA_BACKEND_HAS(ops, unmap)))
        return ga_fail(err, GALLOC_E_UNSUPPORTED,
                       "expandable_segments:True needs a device backend with virtual memory (va_reserve, map, "
                       "unmap, va_release); \"%s\" has none",
                       ops->name);
    /* The stripes are cache-line aligned (stripe.h): two threads' stripes never share a line. */
    size_t bytes = (sizeof(ga_pool_t) + 63) & ~(size_t)63;
    ga_pool_t *p = aligned_alloc(64, bytes);
    if (p == NULL)
        return ga_fail(err, GALLOC_E_NOMEM, "out of host memory creating the allocator");
    memset(p, 0, bytes);
    p->conf = *conf;
    p->plain_rounding = ga_round_is_plain(conf);
    p->backend = backend;
    p->device = device;
    p->device_total = device_total;
    p->err = err;
    if (ga_pool_host_init(p) != GALLOC_OK) {
        free(p);
        return ga_fail(err, GALLOC_E_NOMEM, "out of host memory creating the allocator");
    }
    ga_trace_init(&p->trace, device);
    ga_pool_blockpool_init(&p->small, true);
    ga_pool_blockpool_init(&p->large, false);
    ga_pool_blockpool_init(&p->asleep_bp, false);
    ga_pool_stripes_init(p);
    ga_stats_init(&p->stats, conf->max_split_size);
    /* per_process_memory_fraction caps the pool from the start. The key is
     * newest main's, whose setMemoryFraction keeps a cap only below 1.0 (an
     * optional maximum), so 1.0 sets none and leaves GC off. The call below
     * follows PyTorch 2.x, where any fraction sets set_fraction (README). */
    if (conf->per_process_memory_fraction < 1.0)
        (void)ga_pool_set_fraction(p, conf->per_process_memory_fraction);
    *impl = p;
    return GALLOC_OK;
}

void ga_pool_destroy(void *impl)
{
    ga_pool_t *p = impl;
    if (p == NULL)
        return;
    ga_pool_ipc_destroy(p); /* other processes' blocks open here; our readers lose theirs with the segments */
    /* Every segment goes back, live blocks or not: the caller's pointers die with the allocator. */
    for (ga_segment_t *s = p->segments; s != NULL; s = s->next) {
        if (ga_pool_hooked(p)) /* told while the memory is still there */
            ga_pool_hook_segment_gone(p, s);
        if (s->expandable) {
            ga_pool_expandable_teardown(p, s);
        } else if (s->vmm) { /* a tag's plain segment, unmapped already if its sleep did */
            if (s->slept == NULL || !ga_sleep_bit(s->slept, 0))
                (void)ga_backend_unmap(p->backend, s->base, s->page);
            (void)ga_backend_va_release(p->backend, s->base, s->page);
        } else {
            (void)ga_backend_segment_free(p->backend, s->base, s->size, s->stream);
        }
        free(s->slept);
    }
    ga_pool_hooks_destroy(p);
    ga_pool_tags_destroy(p);
    ga_pool_reserve_destroy(p);
    ga_pool_host_fini(p);
    ga_pool_capture_destroy(p);
    ga_pool_events_destroy(p);
    ga_pool_private_destroy(p);
    ga_pool_blockpool_destroy(&p->small);
    ga_pool_blockpool_destroy(&p->large);
    ga_trace_destroy(&p->trace);
    ga_pool_stripes_destroy(p);
    free(p);
}

galloc_status_t ga_pool_empty_cache(void *impl)
{
    ga_pool_t *p = impl;
    ga_pool_host_spare_release(p); /* host blocks kept for, or pinned ahead of, the next sleep (pinned.c) */
    return ga_pool_release_cached_blocks(p);
}

galloc_status_t ga_pool_set_fraction(void *impl, double fraction)
{
    ga_pool_t *p = impl;
    if (!(fraction >= 0.0 && fraction <= 1.0))
        return ga_fail(p->err, GALLOC_E_INVAL, "Invalid fraction value: %g. Allowed range: 0~1", fraction);
    size_t device_free, device_total;
    galloc_status_t st = ga_backend_mem_info(p->backend, &device_free, &device_total);
    if (st != GALLOC_OK)
        return ga_fail(p->err, st, "could not read the device's memory size: %s", galloc_strerror(st));
    /* PyTorch truncates fraction * total to bytes (setMemoryFraction). */
    p->allowed_memory_maximum = (size_t)(fraction * (double)device_total);
    p->set_fraction = true;
    return GALLOC_OK;
}

int64_t ga_pool_memory_reserved(void *impl)
{
    ga_pool_t *p = impl;
    return atomic_load_explicit(&p->reserved_seen, memory_order_relaxed);
}

galloc_status_t ga_pool_memory_info(void *impl, size_t *free_bytes, size_t *total_bytes)
{
    ga_pool_t *p = impl;
    galloc_status_t st = ga_backend_mem_info(p->backend, free_bytes, total_bytes);
    if (st != GALLOC_OK)
        return ga_fail(p->err, st, "device memory info failed: %s", galloc_strerror(st));
    return GALLOC_OK;
}

/* The backend keeps the set of peers and grants each page as it maps it, so
 * the pool only asks and reports: its segments, mapped or not, are the
 * backend's to make reachable (backend/gpu_peer.c). Stats do not change. */
galloc_status_t ga_pool_enable_peer_access(void *impl, int peer)
{
    ga_pool_t *p = impl;
    galloc_status_t st = ga_backend_enable_peer_access(p->backend, peer);
    if (st == GALLOC_OK)
        return GALLOC_OK;
    char why[256];
    if (st == GALLOC_E_UNSUPPORTED && !GA_BACKEND_HAS(p->backend->ops, enable_peer_access))
        return ga_fail(p->err, st, "peer access: the %s backend has no peer access (device %d, peer %d)",
                       p->backend->ops->name, p->device, peer);
    return ga_fail(p->err, st, "peer access from device %d to device %d's memory: %s", peer, p->device,
                   ga_backend_why(p->backend, st, why, sizeof(why)));
}

void ga_pool_stats(void *impl, galloc_stats_t *out)
{
    const ga_pool_t *p = impl;
    /* "all"'s allocated and freed are the pools' sums, folded here rather
     * than kept on every malloc and free (stats.h, ga_stat_add). */
    galloc_stats_t full = p->stats;
    ga_stats_fold_all(&full);
    ga_stats_copy(out, &full);
}

void ga_pool_reset_peak(void *impl)
{
    ga_pool_t *p = impl;
    ga_stats_reset_peak(&p->stats);
}

void ga_pool_reset_accumulated(void *impl)
{
    ga_pool_t *p = impl;
    ga_stats_reset_accumulated(&p->stats);
}
