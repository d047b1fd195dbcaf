/*
 * gpu_host.c: pinned host memory and synchronous copies of the GPU layer (see
 * gpu.h), with which galloc_sleep offloads the contents of tagged memory and
 * galloc_wake restores them (api/galloc_sleep.h), and the registering of
 * host memory the caller allocated, the pinned host cache's
 * pinned_use_cuda_host_register path (host/, api/galloc_host.h).
 *
 * Host blocks are page-locked (cuMemHostAlloc with CU_MEMHOSTALLOC_PORTABLE,
 * hipHostMalloc with hipHostMallocDefault), so the copies are DMA transfers
 * that are complete when the call returns: cuMemcpyDtoH returns once the copy
 * has finished, and cuMemcpyHtoD from pinned memory is synchronous with the
 * host. Every live block is tracked, so a foreign pointer or a wrong size is
 * refused before it reaches the driver and close frees what the pool left.
 * Registered ranges (cuMemHostRegister_v2 with CU_MEMHOSTREGISTER_PORTABLE,
 * hipHostRegister with hipHostRegisterDefault) are tracked the same way:
 * an overlap with a live range or an unregister of anything but a live range
 * with its size is refused here, and close unregisters what is left (the
 * memory itself is the caller's).
 *
 * Statuses: a refused host allocation is GALLOC_E_NOMEM when the driver says
 * out of memory (host memory ran out, not the device's) and the driver's
 * status otherwise; a failed copy is always GALLOC_E_DEVICE (never an OOM the
 * pool would answer by freeing cache and retrying). The message names the
 * driver function, its error name and text.
 */
#include "backend/gpu_int.h"

/* The feature must exist: a driver without it is a clear GALLOC_E_UNSUPPORTED. */
static galloc_status_t host_ready(ga_gpu_t *g, const char *what)
{
    if (g->features & GA_GPU_F_HOST)
        return GALLOC_OK;
    return ga_gpu_fail(g, GALLOC_E_UNSUPPORTED,
                       "%s: pinned host memory and copies are unavailable: the %s driver library lacks %s", what,
                       g->v->name, ga_dl_missing(g->vs, GA_GPU_F_HOST));
}

galloc_status_t ga_gpu_host_alloc(void *state, size_t bytes, void **ptr)
{
    ga_gpu_t *g = state;
    if (ptr == NULL || bytes == 0)
        return ga_gpu_fail(g, GALLOC_E_INVAL, "host_alloc(%zu bytes): %s", bytes,
                           ptr == NULL ? "ptr is NULL" : "zero-byte block");
    *ptr = NULL;
    galloc_status_t st = host_ready(g, "host_alloc");
    if (st != GALLOC_OK)
        return st;
    if (ga_addrmap_reserve(&g->hosts, 1) != GALLOC_OK)
        return ga_gpu_fail(g, GALLOC_E_NOMEM, "host_alloc: cannot grow the host block table");
    uintptr_t prev;
    st = ga_gpu_enter(g, "host_alloc", &prev);
    if (st != GALLOC_OK)
        return st;
    void *p = NULL;
    ga_gpu_rc_t rc = g->v->host_alloc(g->vs, bytes, &p);
    ga_gpu_leave(g, prev);
    if (rc != 0) {
        st = ga_gpu_driver_fail(g, GA_GPU_FN_HOST_ALLOC, rc, "host_alloc(%zu bytes of pinned host memory)", bytes);
        return st == GALLOC_E_OOM ? GALLOC_E_NOMEM : st;
    }
    ga_gpu_put(&g->hosts, (uintptr_t)p, bytes);
    *ptr = p;
    return GALLOC_OK;
}

galloc_status_t ga_gpu_host_free(void *state, void *ptr, size_t bytes)
{
    ga_gpu_t *g = state;
    const ga_gpu_entry_t *e = ga_addrmap_find(&g->hosts, (uintptr_t)ptr);
    if (ptr == NULL || e == NULL || e->value != bytes)
        return ga_gpu_fail(g, GALLOC_E_INVAL, "host_free(%p, %zu): not a live host block of that size", ptr, bytes);
    uintptr_t prev;
    galloc_status_t st = ga_gpu_enter(g, "host_free", &prev);
    if (st != GALLOC_OK)
        return st;
    ga_gpu_rc_t rc = g->v->host_free(g->vs, ptr);
    ga_gpu_leave(g, prev);
    if (rc != 0) /* still recorded: close tries again */
        return ga_gpu_driver_fail(g, GA_GPU_FN_HOST_FREE, rc, "host_free(%p, %zu)", ptr, bytes);
    ga_gpu_del(&g->hosts, (uintptr_t)ptr);
    return GALLOC_OK;
}

/* One synchronous copy; to_host picks the direction. */
static galloc_status_t copy(ga_gpu_t *g, bool to_host, void *host, uintptr_t dev, size_t bytes)
{
    const char *op = to_host ? "copy_d2h" : "copy_h2d";
    if (host == NULL || dev == 0)
        return ga_gpu_fail(g, GALLOC_E_INVAL, "%s(%zu bytes): %s address is NULL", op, bytes,
                           host == NULL ? "the host" : "the device");
    galloc_status_t st = host_ready(g, op);
    if (st != GALLOC_OK || bytes == 0)
        return st;
    uintptr_t prev;
    st = ga_gpu_enter(g, op, &prev);
    if (st != GALLOC_OK)
        return st;
    ga_gpu_rc_t rc = to_host ? g->v->copy_d2h(g->vs, host, dev, bytes) : g->v->copy_h2d(g->vs, dev, host, bytes);
    ga_gpu_leave(g, prev);
    if (rc == 0)
        return GALLOC_OK;
    if (to_host)
        ga_gpu_driver_fail(g, GA_GPU_FN_COPY_D2H, rc, "copy_d2h(%zu bytes from device %d at %#lx)", bytes, g->device,
                           (unsigned long)dev);
    else
        ga_gpu_driver_fail(g, GA_GPU_FN_COPY_H2D, rc, "copy_h2d(%zu bytes to device %d at %#lx)", bytes, g->device,
                           (unsigned long)dev);
    return GALLOC_E_DEVICE;
}

galloc_status_t ga_gpu_copy_d2h(void *state, void *dst, uintptr_t src, size_t bytes)
{
    return copy(state, true, dst, src, bytes);
}

galloc_status_t ga_gpu_copy_h2d(void *state, uintptr_t dst, const void *src, size_t bytes)
{
    /* The host side is only read: const is cast away for the shared helper. */
    return copy(state, false, (void *)(uintptr_t)src, dst, bytes);
}

/* The feature must exist: a driver without it is a clear GALLOC_E_UNSUPPORTED. */
static galloc_status_t register_ready(ga_gpu_t *g, const char *what)
{
    if (g->features & GA_GPU_F_HOSTREG)
        return GALLOC_OK;
    return ga_gpu_fail(g, GALLOC_E_UNSUPPORTED,
                       "%s: registering host memory is unavailable: the %s driver library lacks %s", what, g->v->name,
                       ga_dl_missing(g->vs, GA_GPU_F_HOSTREG));
}

galloc_status_t ga_gpu_host_register(void *state, void *ptr, size_t bytes)
{
    ga_gpu_t *g = state;
    uintptr_t a = (uintptr_t)ptr;
    if (ptr == NULL || bytes == 0 || a + bytes < a)
        return ga_gpu_fail(g, GALLOC_E_INVAL, "host_register(%p, %zu bytes): %s", ptr, bytes,
                           ptr == NULL  ? "ptr is NULL"
                           : bytes == 0 ? "zero bytes"
                                        : "the range wraps");
    /* The cold path (a new host cache block): a walk over the live ranges. */
    for (size_t i = 0; i < g->registered.cap; i++) {
        const ga_gpu_entry_t *e = ga_addrmap_slot(&g->registered, i);
        if (e != NULL && e->key < a + bytes && a < e->key + e->value)
            return ga_gpu_fail(g, GALLOC_E_INVAL, "host_register(%p, %zu bytes): overlaps the registered %#lx + %lu",
                               ptr, bytes, (unsigned long)e->key, (unsigned long)e->value);
    }
    galloc_status_t st = register_ready(g, "host_register");
    if (st != GALLOC_OK)
        return st;
    if (ga_addrmap_reserve(&g->registered, 1) != GALLOC_OK)
        return ga_gpu_fail(g, GALLOC_E_NOMEM, "host_register: cannot grow the registered range table");
    uintptr_t prev;
    st = ga_gpu_enter(g, "host_register", &prev);
    if (st != GALLOC_OK)
        return st;
    ga_gpu_rc_t rc = g->v->host_register(g->vs, ptr, bytes);
    ga_gpu_leave(g, prev);
    if (rc != 0) {
        st = ga_gpu_driver_fail(g, GA_GPU_FN_HOST_REGISTER, rc, "host_register(%p, %zu bytes of host memory)", ptr,
                                bytes);
        return st == GALLOC_E_OOM ? GALLOC_E_NOMEM : st;
    }
    ga_gpu_put(&g->registered, a, bytes);
    return GALLOC_OK;
}

galloc_status_t ga_gpu_host_unregister(void *state, void *ptr, size_t bytes)
{
    ga_gpu_t *g = state;
    const ga_gpu_entry_t *e = ga_addrmap_find(&g->registered, (uintptr_t)ptr);
    if (ptr == NULL || e == NULL || e->value != bytes)
        return ga_gpu_fail(g, GALLOC_E_INVAL, "host_unregister(%p, %zu): not a registered range of that size", ptr,
                           bytes);
    uintptr_t prev;
    galloc_status_t st = ga_gpu_enter(g, "host_unregister", &prev);
    if (st != GALLOC_OK)
        return st;
    ga_gpu_rc_t rc = g->v->host_unregister(g->vs, ptr);
    ga_gpu_leave(g, prev);
    if (rc != 0) /* still recorded: close tries again */
        return ga_gpu_driver_fail(g, GA_GPU_FN_HOST_UNREGISTER, rc, "host_unregister(%p, %zu)", ptr, bytes);
    ga_gpu_del(&g->registered, (uintptr_t)ptr);
    return GALLOC_OK;
}

void ga_gpu_host_close(ga_gpu_t *g)
{
    for (size_t i = 0; i < g->registered.cap; i++) {
        const ga_gpu_entry_t *e = ga_addrmap_slot(&g->registered, i);
        if (e != NULL)
            (void)GA_GPU_TWICE(g->v->host_unregister(g->vs, (void *)e->key));
    }
    ga_addrmap_destroy(&g->registered);
    for (size_t i = 0; i < g->hosts.cap; i++) {
        const ga_gpu_entry_t *e = ga_addrmap_slot(&g->hosts, i);
        if (e != NULL)
            (void)GA_GPU_TWICE(g->v->host_free(g->vs, (void *)e->key));
    }
    ga_addrmap_destroy(&g->hosts);
}
