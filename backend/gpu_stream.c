/*
 * gpu_stream.c: events, synchronization and the stream-ordered pool of the
 * GPU layer (see gpu.h).
 *
 * Events are created without timing (CU_EVENT_DISABLE_TIMING), as PyTorch's
 * EventPool creates them: the allocator only orders work, and timing events
 * cost more to record. Every live event is tracked, so a stale or foreign
 * handle is refused before it reaches the driver and close destroys leftovers.
 *
 * The stream-ordered pool is the device's default memory pool, set up on first
 * use as PyTorch's CUDAMallocAsyncAllocator does in lazy_init_device
 * (pytorch/pytorch c10/cuda/CUDAMallocAsyncAllocator.cpp): its release
 * threshold is raised to UINT64_MAX so that freed memory stays cached in the
 * pool instead of going back to the device at every synchronization. PyTorch
 * never lowers it again, and neither does galloc: another allocator on the same
 * device may share the pool. (PyTorch also sets the three reuse attributes to
 * 1, which are the driver's defaults; galloc leaves them.)
 */
#include "backend/gpu_int.h"

/* ---- Events and synchronization. ---- */

galloc_status_t ga_gpu_event_create(void *state, uintptr_t *event)
{
    ga_gpu_t *g = state;
    if (event == NULL)
        return ga_gpu_fail(g, GALLOC_E_INVAL, "event_create: event is NULL");
    if (ga_addrmap_reserve(&g->events, 1) != GALLOC_OK)
        return ga_gpu_fail(g, GALLOC_E_NOMEM, "event_create: cannot grow the event table");
    uintptr_t prev, e = 0;
    galloc_status_t st = ga_gpu_enter(g, "event_create", &prev);
    if (st != GALLOC_OK)
        return st;
    ga_gpu_rc_t rc = g->v->event_create(g->vs, &e);
    ga_gpu_leave(g, prev);
    if (rc != 0)
        return ga_gpu_driver_fail(g, GA_GPU_FN_EVENT_CREATE, rc, "event_create");
    ga_gpu_put(&g->events, e, 0);
    *event = e;
    return GALLOC_OK;
}

/* One driver call on a live event of this state. */
static galloc_status_t event_call(ga_gpu_t *g, ga_gpu_fn_t fn, const char *op, uintptr_t e, galloc_stream_t s)
{
    if (ga_addrmap_find(&g->events, e) == NULL)
        return ga_gpu_fail(g, GALLOC_E_INVAL, "%s(%#lx): not a live event of this device", op, (unsigned long)e);
    uintptr_t prev;
    galloc_status_t st = ga_gpu_enter(g, op, &prev);
    if (st != GALLOC_OK)
        return st;
    ga_gpu_rc_t rc = fn == GA_GPU_FN_EVENT_DESTROY  ? g->v->event_destroy(g->vs, e)
                     : fn == GA_GPU_FN_EVENT_RECORD ? g->v->event_record(g->vs, e, s)
                     : fn == GA_GPU_FN_EVENT_QUERY  ? g->v->event_query(g->vs, e)
                                                    : g->v->event_sync(g->vs, e);
    ga_gpu_leave(g, prev);
    if (rc == 0)
        return GALLOC_OK;
    /* Not ready is an answer, not a failure: the last message stays. */
    if (fn == GA_GPU_FN_EVENT_QUERY && g->v->status(rc) == GALLOC_E_NOT_READY)
        return GALLOC_E_NOT_READY;
    return ga_gpu_driver_fail(g, fn, rc, "%s(%#lx)", op, (unsigned long)e);
}

galloc_status_t ga_gpu_event_destroy(void *state, uintptr_t event)
{
    galloc_status_t st = event_call(state, GA_GPU_FN_EVENT_DESTROY, "event_destroy", event, 0);
    if (st == GALLOC_OK)
        ga_gpu_del(&((ga_gpu_t *)state)->events, event);
    return st;
}

galloc_status_t ga_gpu_event_record(void *state, uintptr_t event, galloc_stream_t s)
{
    return event_call(state, GA_GPU_FN_EVENT_RECORD, "event_record", event, s);
}

galloc_status_t ga_gpu_event_query(void *state, uintptr_t event)
{
    return event_call(state, GA_GPU_FN_EVENT_QUERY, "event_query", event, 0);
}

galloc_status_t ga_gpu_event_synchronize(void *state, uintptr_t event)
{
    return event_call(state, GA_GPU_FN_EVENT_SYNC, "event_synchronize", event, 0);
}

galloc_status_t ga_gpu_stream_synchronize(void *state, galloc_stream_t s)
{
    ga_gpu_t *g = state;
    uintptr_t prev;
    galloc_status_t st = ga_gpu_enter(g, "stream_synchronize", &prev);
    if (st != GALLOC_OK)
        return st;
    ga_gpu_rc_t rc = g->v->stream_sync(g->vs, s);
    ga_gpu_leave(g, prev);
    if (rc != 0)
        return ga_gpu_driver_fail(g, GA_GPU_FN_STREAM_SYNC, rc, "stream_synchronize(%#lx)", (unsigned long)s);
    return GALLOC_OK;
}

galloc_status_t ga_gpu_device_synchronize(void *state)
{
    ga_gpu_t *g = state;
    uintptr_t prev;
    galloc_status_t st = ga_gpu_enter(g, "device_synchronize", &prev);
    if (st != GALLOC_OK)
        return st;
    ga_gpu_rc_t rc = g->v->device_sync(g->vs);
    ga_gpu_leave(g, prev);
    if (rc != 0)
        return ga_gpu_driver_fail(g, GA_GPU_FN_DEVICE_SYNC, rc, "device_synchronize on device %d", g->device);
    return GALLOC_OK;
}

/* ---- The stream-ordered pool. ---- */

/* Enter the context with the default pool set up (lazy_init_device). On
 * failure nothing is entered; a failed set-up is retried by the next call. */
static galloc_status_t pool_enter(ga_gpu_t *g, const char *what, uintptr_t *prev)
{
    if (!(g->features & GA_GPU_F_ASYNC))
        return ga_gpu_fail(g, GALLOC_E_UNSUPPORTED,
                           "%s: stream-ordered allocation is unavailable: the %s driver library lacks %s", what,
                           g->v->name, ga_dl_missing(g->vs, GA_GPU_F_ASYNC));
    galloc_status_t st = ga_gpu_enter(g, what, prev);
    if (st != GALLOC_OK || g->pool_ready)
        return st;
    ga_gpu_fn_t fn = GA_GPU_FN_POOL_GET;
    ga_gpu_rc_t rc = g->v->pool_get(g->vs);
    if (rc == 0) {
        fn = GA_GPU_FN_POOL_SET_ATTR;
        rc = g->v->pool_set_attr(g->vs, GA_GPU_POOL_RELEASE_THRESHOLD, UINT64_MAX);
    }
    if (rc != 0) {
        ga_gpu_leave(g, *prev);
        return ga_gpu_driver_fail(g, fn, rc, "%s: setting up device %d's default memory pool", what, g->device);
    }
    g->pool_ready = true;
    return GALLOC_OK;
}

galloc_status_t ga_gpu_malloc_async(void *state, size_t bytes, galloc_stream_t s, uintptr_t *addr)
{
    ga_gpu_t *g = state;
    if (addr == NULL || bytes == 0)
        return ga_gpu_fail(g, GALLOC_E_INVAL, "malloc_async(%zu bytes): %s", bytes,
                           addr == NULL ? "addr is NULL" : "zero bytes");
    if (ga_addrmap_reserve(&g->asyncs, 1) != GALLOC_OK)
        return ga_gpu_fail(g, GALLOC_E_NOMEM, "malloc_async: cannot grow the allocation table");
    uintptr_t prev, a = 0;
    galloc_status_t st = pool_enter(g, "malloc_async", &prev);
    if (st != GALLOC_OK)
        return st;
    ga_gpu_rc_t rc = g->v->malloc_async(g->vs, bytes, s, &a);
    ga_gpu_leave(g, prev);
    if (rc != 0)
        return ga_gpu_driver_fail(g, GA_GPU_FN_MALLOC_ASYNC, rc, "malloc_async(%zu bytes, stream %#lx) on device %d",
                                  bytes, (unsigned long)s, g->device);
    ga_gpu_put(&g->asyncs, a, s);
    *addr = a;
    return GALLOC_OK;
}

galloc_status_t ga_gpu_free_async(void *state, uintptr_t addr, galloc_stream_t s)
{
    ga_gpu_t *g = state;
    if (ga_addrmap_find(&g->asyncs, addr) == NULL)
        return ga_gpu_fail(g, GALLOC_E_INVAL, "free_async(%#lx): not a live stream-ordered allocation",
                           (unsigned long)addr);
    uintptr_t prev;
    galloc_status_t st = pool_enter(g, "free_async", &prev);
    if (st != GALLOC_OK)
        return st;
    ga_gpu_rc_t rc = g->v->free_async(g->vs, addr, s);
    ga_gpu_leave(g, prev);
    if (rc != 0)
        return ga_gpu_driver_fail(g, GA_GPU_FN_FREE_ASYNC, rc, "free_async(%#lx, stream %#lx)", (unsigned long)addr,
                                  (unsigned long)s);
    ga_gpu_del(&g->asyncs, addr);
    return GALLOC_OK;
}

galloc_status_t ga_gpu_pool_trim(void *state, size_t keep_bytes)
{
    ga_gpu_t *g = state;
    uintptr_t prev;
    galloc_status_t st = pool_enter(g, "pool_trim", &prev);
    if (st != GALLOC_OK)
        return st;
    ga_gpu_rc_t rc = g->v->pool_trim(g->vs, keep_bytes);
    ga_gpu_leave(g, prev);
    if (rc != 0)
        return ga_gpu_driver_fail(g, GA_GPU_FN_POOL_TRIM, rc, "pool_trim(%zu)", keep_bytes);
    return GALLOC_OK;
}

galloc_status_t ga_gpu_pool_usage(void *state, uint64_t *reserved_current, uint64_t *reserved_high,
                                  uint64_t *used_current, uint64_t *used_high)
{
    ga_gpu_t *g = state;
    const ga_gpu_pool_attr_t attr[4] = {GA_GPU_POOL_RESERVED_CURRENT, GA_GPU_POOL_RESERVED_HIGH,
                                        GA_GPU_POOL_USED_CURRENT, GA_GPU_POOL_USED_HIGH};
    uint64_t *out[4] = {reserved_current, reserved_high, used_current, used_high};
    uint64_t v[4] = {0, 0, 0, 0};
    uintptr_t prev;
    galloc_status_t st = pool_enter(g, "pool_usage", &prev);
    if (st != GALLOC_OK)
        return st;
    ga_gpu_rc_t rc = 0;
    for (int i = 0; i < 4 && rc == 0; i++)
        if (out[i] != NULL)
            rc = g->v->pool_get_attr(g->vs, attr[i], &v[i]);
    ga_gpu_leave(g, prev);
    if (rc != 0)
        return ga_gpu_driver_fail(g, GA_GPU_FN_POOL_GET_ATTR, rc, "pool_usage on device %d", g->device);
    for (int i = 0; i < 4; i++) /* all or nothing: outputs are written only when every read worked */
        if (out[i] != NULL)
            *out[i] = v[i];
    return GALLOC_OK;
}

/* Setting a high-water mark to 0 resets it to the current value, the only
 * reset the driver allows (PyTorch's resetPeakStats does the same). */
galloc_status_t ga_gpu_pool_reset_peak(void *state)
{
    ga_gpu_t *g = state;
    uintptr_t prev;
    galloc_status_t st = pool_enter(g, "pool_reset_peak", &prev);
    if (st != GALLOC_OK)
        return st;
    ga_gpu_rc_t rc = g->v->pool_set_attr(g->vs, GA_GPU_POOL_RESERVED_HIGH, 0);
    if (rc == 0)
        rc = g->v->pool_set_attr(g->vs, GA_GPU_POOL_USED_HIGH, 0);
    ga_gpu_leave(g, prev);
    if (rc != 0)
        return ga_gpu_driver_fail(g, GA_GPU_FN_POOL_SET_ATTR, rc, "pool_reset_peak on device %d", g->device);
    return GALLOC_OK;
}

void ga_gpu_stream_close(ga_gpu_t *g)
{
    for (size_t i = 0; i < g->events.cap; i++) {
        const ga_gpu_entry_t *e = ga_addrmap_slot(&g->events, i);
        if (e != NULL)
            (void)GA_GPU_TWICE(g->v->event_destroy(g->vs, e->key));
    }
    ga_addrmap_destroy(&g->events);
    for (size_t i = 0; i < g->asyncs.cap; i++) {
        const ga_gpu_entry_t *e = ga_addrmap_slot(&g->asyncs, i);
        if (e != NULL)
            (void)GA_GPU_TWICE(g->v->free_async(g->vs, e->key, (uintptr_t)e->value));
    }
    ga_addrmap_destroy(&g->asyncs);
}
