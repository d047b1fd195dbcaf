/*
 * sim_host.c: the sim device's pinned host memory and copies (sim.h, "Host
 * memory and copies"): what galloc_sleep offloads to and galloc_wake restores
 * from.
 */
#include "backend/sim_int.h"

galloc_status_t ga_sim_host_alloc(void *state, size_t bytes, void **ptr)
{
    sim_t *sim = state;
    if (ptr == NULL || bytes == 0)
        return ga_sim_fail(sim, GALLOC_E_INVAL, "host_alloc(%zu bytes): %s", bytes,
                           ptr == NULL ? "ptr is NULL" : "zero bytes");
    galloc_status_t st = ga_sim_op_fault(sim, "host_alloc", GALLOC_E_NOMEM);
    if (st != GALLOC_OK)
        return st;
    if (ga_addrmap_reserve(&sim->host, 1) != GALLOC_OK)
        return ga_sim_fail(sim, GALLOC_E_NOMEM, "host table: cannot grow past %zu entries", sim->host.cap / 2);
    void *p = malloc(bytes);
    if (p == NULL)
        return ga_sim_fail(sim, GALLOC_E_NOMEM, "host_alloc: %zu bytes of host memory refused", bytes);
    *(host_t *)ga_addrmap_insert(&sim->host, (uintptr_t)p) = (host_t){.addr = (uintptr_t)p, .bytes = bytes};
    sim->host_bytes += bytes;
    *ptr = p;
    return GALLOC_OK;
}

galloc_status_t ga_sim_host_free(void *state, void *ptr, size_t bytes)
{
    sim_t *sim = state;
    host_t *h = ga_addrmap_find(&sim->host, (uintptr_t)ptr);
    if (h == NULL || h->bytes != bytes)
        return ga_sim_fail(sim, GALLOC_E_INVAL, "host_free(%p, %zu): %s", ptr, bytes,
                           h == NULL ? "not a live host_alloc block" : "not its size");
    galloc_status_t st = ga_sim_op_fault(sim, "host_free", GALLOC_E_DEVICE);
    if (st != GALLOC_OK)
        return st;
    ga_addrmap_remove(&sim->host, h);
    sim->host_bytes -= bytes;
    free(ptr);
    return GALLOC_OK;
}

galloc_status_t ga_sim_host_register(void *state, void *ptr, size_t bytes)
{
    sim_t *sim = state;
    uintptr_t a = (uintptr_t)ptr;
    if (ptr == NULL || bytes == 0 || a + bytes < a)
        return ga_sim_fail(sim, GALLOC_E_INVAL, "host_register(%p, %zu bytes): %s", ptr, bytes,
                           ptr == NULL  ? "ptr is NULL"
                           : bytes == 0 ? "zero bytes"
                                        : "the range wraps");
    for (size_t i = 0; i < sim->reg.cap; i++) {
        const host_t *h = ga_addrmap_slot(&sim->reg, i);
        if (h != NULL && h->addr < a + bytes && a < h->addr + h->bytes)
            return ga_sim_fail(sim, GALLOC_E_INVAL, "host_register(%p, %zu bytes): overlaps the registered %p + %zu",
                               ptr, bytes, (void *)h->addr, h->bytes);
    }
    galloc_status_t st = ga_sim_op_fault(sim, "host_register", GALLOC_E_NOMEM);
    if (st != GALLOC_OK)
        return st;
    if (ga_addrmap_reserve(&sim->reg, 1) != GALLOC_OK)
        return ga_sim_fail(sim, GALLOC_E_NOMEM, "registered range table: cannot grow past %zu entries",
                           sim->reg.cap / 2);
    *(host_t *)ga_addrmap_insert(&sim->reg, a) = (host_t){.addr = a, .bytes = bytes};
    sim->reg_bytes += bytes;
    return GALLOC_OK;
}

galloc_status_t ga_sim_host_unregister(void *state, void *ptr, size_t bytes)
{
    sim_t *sim = state;
    host_t *h = ga_addrmap_find(&sim->reg, (uintptr_t)ptr);
    if (h == NULL || h->bytes != bytes)
        return ga_sim_fail(sim, GALLOC_E_INVAL, "host_unregister(%p, %zu): %s", ptr, bytes,
                           h == NULL ? "not a registered range" : "not its size");
    galloc_status_t st = ga_sim_op_fault(sim, "host_unregister", GALLOC_E_DEVICE);
    if (st != GALLOC_OK)
        return st;
    ga_addrmap_remove(&sim->reg, h);
    sim->reg_bytes -= bytes;
    return GALLOC_OK;
}

void ga_sim_host_close(sim_t *sim)
{
    ga_addrmap_destroy(&sim->reg); /* the memory is the caller's */
    for (size_t i = 0; i < sim->host.cap; i++) {
        const host_t *h = ga_addrmap_slot(&sim->host, i);
        if (h != NULL)
            free((void *)h->addr);
    }
    ga_addrmap_destroy(&sim->host);
}

/* Whether [addr, addr + bytes) lies inside one live segment or on mapped
 * pages of one reservation: what a copy may touch. */
static bool device_range_ok(sim_t *sim, uintptr_t addr, size_t bytes)
{
    if (bytes == 0 || addr + bytes < addr)
        return false;
    for (size_t i = 0; i < sim->segs.cap; i++) {
        const seg_t *s = ga_addrmap_slot(&sim->segs, i);
        if (s != NULL && addr >= s->addr && addr + bytes <= s->addr + s->bytes)
            return true;
    }
    resv_t *r = ga_sim_resv_find(sim, addr);
    if (r == NULL || addr + bytes > r->base + r->bytes)
        return false;
    for (size_t p = (addr - r->base) / GRAN; p <= (addr + bytes - 1 - r->base) / GRAN; p++)
        if (!((r->map[p / 64] >> (p % 64)) & 1u))
            return false;
    return true;
}

static galloc_status_t copy(sim_t *sim, const char *op, void *dst, const void *src, uintptr_t dev, const void *host,
                            size_t bytes)
{
    if (host == NULL || !device_range_ok(sim, dev, bytes))
        return ga_sim_fail(sim, GALLOC_E_INVAL, "%s(0x%" PRIxPTR ", %zu bytes): %s", op, dev, bytes,
                           host == NULL ? "host pointer is NULL"
                                        : "device range not in one live segment or mapped range");
    galloc_status_t st = ga_sim_op_fault(sim, op, GALLOC_E_DEVICE);
    if (st != GALLOC_OK)
        return st;
    if (sim->backed) /* unbacked memory has no contents */
        memcpy(dst, src, bytes);
    return GALLOC_OK;
}

galloc_status_t ga_sim_copy_d2h(void *state, void *dst, uintptr_t src, size_t bytes)
{
    return copy(state, "copy_d2h", dst, (const void *)src, src, dst, bytes);
}

galloc_status_t ga_sim_copy_h2d(void *state, uintptr_t dst, const void *src, size_t bytes)
{
    return copy(state, "copy_h2d", (void *)dst, src, dst, src, bytes);
}
