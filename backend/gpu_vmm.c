/*
 * gpu_vmm.c: virtual memory for expandable segments, as PyTorch's
 * ExpandableSegment drives the CUDA driver (c10/cuda/CUDACachingAllocator.cpp):
 * reserve an address range once (cuMemAddressReserve), back each page the pool
 * maps with its own physical allocation (cuMemCreate, pinned device memory),
 * map it (cuMemMap) and make it read-write for the device and every active
 * peer in one call (cuMemSetAccess with a descriptor each, as PyTorch's map
 * does with one call per device); unmapping is cuMemUnmap then cuMemRelease
 * of that page's handle. A peer enabled later gets access to every live
 * mapping (ga_gpu_vmm_grant) before it counts as active, so no mapped page
 * ever lacks an active peer's access; a mapping re-made by a wake is a new
 * map and is covered the same way.
 *
 * One handle per map call: the pool maps and unmaps one page per call, so an
 * unmap always covers whole map calls. A driver cannot unmap part of a
 * mapping, so unmap refuses (GALLOC_E_INVAL) a range that cuts one; it may
 * cover several whole ones.
 *
 * Error paths: a map that fails after cuMemCreate / cuMemMap undoes them; an
 * undo the driver refuses leaves an orphan, released before the next map and
 * at close, so device memory is never lost and the pool never sees a page as
 * unmapped while it is still mapped (the next map of it would overlap).
 * An unmap whose cuMemUnmap succeeded counts as done even if cuMemRelease then
 * fails (the handle becomes an orphan): the range is no longer usable, and
 * that is what the pool must believe.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/gpu_int.h"

/* VMM set up on first use: the feature must exist and the granularity be known. */
static galloc_status_t vmm_ready(ga_gpu_t *g, const char *what)
{
    if (!(g->features & GA_GPU_F_VMM))
        return ga_gpu_fail(g, GALLOC_E_UNSUPPORTED,
                           "%s: virtual memory management is unavailable: the %s driver library lacks %s", what,
                           g->v->name, ga_dl_missing(g->vs, GA_GPU_F_VMM));
    if (g->granularity != 0)
        return GALLOC_OK;
    uintptr_t prev;
    size_t gran = 0;
    galloc_status_t st = ga_gpu_enter(g, what, &prev);
    if (st != GALLOC_OK)
        return st;
    ga_gpu_rc_t rc = g->v->granularity(g->vs, &gran);
    ga_gpu_leave(g, prev);
    if (rc != 0)
        return ga_gpu_driver_fail(g, GA_GPU_FN_GRANULARITY, rc, "%s: querying the page granularity", what);
    if (gran == 0 || (gran & (gran - 1)) != 0)
        return ga_gpu_fail(g, GALLOC_E_DEVICE, "%s: the driver reports a granularity of %zu bytes", what, gran);
    g->granularity = gran;
    return GALLOC_OK;
}

static ga_gpu_resv_t *resv_find(ga_gpu_t *g, uintptr_t addr)
{
    for (size_t i = 0; i < g->n_resv; i++)
        if (addr - g->resv[i].base < g->resv[i].bytes) /* wraps high when addr < base */
            return &g->resv[i];
    return NULL;
}

/* Index of the first mapping of r ending after addr (binary search). */
static size_t map_lower(const ga_gpu_resv_t *r, uintptr_t addr)
{
    size_t lo = 0, hi = r->n_maps;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->maps[mid].addr + r->maps[mid].bytes <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Release the orphans left by failed error paths; stops at the first refusal. */
static galloc_status_t orphans_release(ga_gpu_t *g)
{
    while (g->n_orphans > 0) {
        ga_gpu_orphan_t *o = &g->orphans[g->n_orphans - 1];
        ga_gpu_rc_t rc;
        if (o->addr != 0) {
            if ((rc = g->v->phys_unmap(g->vs, o->addr, o->bytes)) != 0)
                return ga_gpu_driver_fail(g, GA_GPU_FN_PHYS_UNMAP, rc,
                                          "releasing a mapping left by an earlier failure");
            o->addr = 0;
        }
        if ((rc = g->v->phys_release(g->vs, o->handle)) != 0)
            return ga_gpu_driver_fail(g, GA_GPU_FN_PHYS_RELEASE, rc, "releasing a handle left by an earlier failure");
        g->n_orphans--;
    }
    return GALLOC_OK;
}

/* Room reserved by the caller (orphans are grown before any driver call). */
static void orphan_add(ga_gpu_t *g, uintptr_t addr, size_t bytes, uint64_t handle)
{
    g->orphans[g->n_orphans++] = (ga_gpu_orphan_t){.addr = addr, .bytes = bytes, .handle = handle};
}

galloc_status_t ga_gpu_granularity(void *state, size_t *bytes)
{
    ga_gpu_t *g = state;
    if (bytes == NULL)
        return ga_gpu_fail(g, GALLOC_E_INVAL, "granularity: NULL output");
    galloc_status_t st = vmm_ready(g, "granularity");
    if (st == GALLOC_OK)
        *bytes = g->granularity;
    return st;
}

galloc_status_t ga_gpu_va_reserve(void *state, size_t bytes, uintptr_t *addr)
{
    ga_gpu_t *g = state;
    if (addr == NULL || bytes == 0)
        return ga_gpu_fail(g, GALLOC_E_INVAL, "va_reserve(%zu bytes): %s", bytes,
                           addr == NULL ? "addr is NULL" : "empty range");
    galloc_status_t st = vmm_ready(g, "va_reserve");
    if (st != GALLOC_OK)
        return st;
    if (bytes > SIZE_MAX - g->granularity)
        return ga_gpu_fail(g, GALLOC_E_OOM, "va_reserve(%zu bytes): larger than the address space", bytes);
    size_t span = (bytes + g->granularity - 1) & ~(g->granularity - 1);
    if (!ga_gpu_grow((void **)&g->resv, &g->cap_resv, g->n_resv + 1, sizeof(ga_gpu_resv_t)))
        return ga_gpu_fail(g, GALLOC_E_NOMEM, "va_reserve: cannot grow the reservation table");
    uintptr_t prev, base = 0;
    if ((st = ga_gpu_enter(g, "va_reserve", &prev)) != GALLOC_OK)
        return st;
    ga_gpu_rc_t rc = g->v->va_reserve(g->vs, span, &base);
    ga_gpu_leave(g, prev);
    if (rc != 0)
        return ga_gpu_driver_fail(g, GA_GPU_FN_VA_RESERVE, rc, "va_reserve(%zu bytes)", span);
    g->resv[g->n_resv++] = (ga_gpu_resv_t){.base = base, .bytes = span};
    *addr = base;
    return GALLOC_OK;
}

galloc_status_t ga_gpu_va_release(void *state, uintptr_t addr, size_t bytes)
{
    ga_gpu_t *g = state;
    ga_gpu_resv_t *r = resv_find(g, addr);
    size_t gran = g->granularity;
    if (r == NULL || r->base != addr || bytes == 0 || (bytes + gran - 1) / gran * gran != r->bytes)
        return ga_gpu_fail(g, GALLOC_E_INVAL, "va_release(%#lx, %zu): not a reserved range of that size",
                           (unsigned long)addr, bytes);
    if (r->n_maps != 0)
        return ga_gpu_fail(g, GALLOC_E_INVAL, "va_release(%#lx, %zu): %zu mappings are still live", (unsigned long)addr,
                           bytes, r->n_maps);
    uintptr_t prev;
    galloc_status_t st = ga_gpu_enter(g, "va_release", &prev);
    if (st != GALLOC_OK)
        return st;
    st = orphans_release(g); /* an orphan mapping may lie in this range */
    ga_gpu_rc_t rc = st == GALLOC_OK ? g->v->va_free(g->vs, r->base, r->bytes) : 0;
    ga_gpu_leave(g, prev);
    if (st != GALLOC_OK)
        return st;
    if (rc != 0)
        return ga_gpu_driver_fail(g, GA_GPU_FN_VA_FREE, rc, "va_release(%#lx, %zu)", (unsigned long)addr, bytes);
    free(r->maps);
    *r = g->resv[--g->n_resv]; /* order does not matter: the last entry fills the hole */
    return GALLOC_OK;
}

/* Check [addr, addr + bytes) is granularity aligned and inside one reservation. */
static ga_gpu_resv_t *range_check(ga_gpu_t *g, const char *op, uintptr_t addr, size_t bytes)
{
    size_t gran = g->granularity;
    if (bytes == 0 || addr % gran != 0 || bytes % gran != 0) {
        ga_gpu_fail(g, GALLOC_E_INVAL, "%s(%#lx, %zu): address and size must be non-zero multiples of %zu", op,
                    (unsigned long)addr, bytes, gran);
        return NULL;
    }
    ga_gpu_resv_t *r = resv_find(g, addr);
    if (r == NULL || bytes > r->bytes - (addr - r->base)) {
        ga_gpu_fail(g, GALLOC_E_INVAL, "%s(%#lx, %zu): not inside one reserved range", op, (unsigned long)addr, bytes);
        return NULL;
    }
    return r;
}

galloc_status_t ga_gpu_map(void *state, uintptr_t addr, size_t bytes)
{
    ga_gpu_t *g = state;
    galloc_status_t st = vmm_ready(g, "map");
    if (st != GALLOC_OK)
        return st;
    ga_gpu_resv_t *r = range_check(g, "map", addr, bytes);
    if (r == NULL)
        return GALLOC_E_INVAL;
    size_t i = map_lower(r, addr);
    if (i < r->n_maps && r->maps[i].addr < addr + bytes)
        return ga_gpu_fail(g, GALLOC_E_INVAL, "map(%#lx, %zu): overlaps the mapping at %#lx", (unsigned long)addr,
                           bytes, (unsigned long)r->maps[i].addr);
    if (!ga_gpu_grow((void **)&r->maps, &r->cap_maps, r->n_maps + 1, sizeof(ga_gpu_mapping_t)) ||
        !ga_gpu_grow((void **)&g->orphans, &g->cap_orphans, g->n_orphans + 1, sizeof(ga_gpu_orphan_t)))
        return ga_gpu_fail(g, GALLOC_E_NOMEM, "map: cannot grow the mapping table");
    uintptr_t prev;
    if ((st = ga_gpu_enter(g, "map", &prev)) != GALLOC_OK)
        return st;
    if ((st = orphans_release(g)) != GALLOC_OK) {
        ga_gpu_leave(g, prev);
        return st;
    }
    uint64_t h = 0;
    ga_gpu_rc_t rc = g->v->phys_create(g->vs, bytes, &h);
    if (rc != 0) {
        ga_gpu_leave(g, prev);
        return ga_gpu_driver_fail(g, GA_GPU_FN_PHYS_CREATE, rc, "map(%#lx, %zu)", (unsigned long)addr, bytes);
    }
    ga_gpu_fn_t failed = GA_GPU_FN_PHYS_MAP;
    rc = g->v->phys_map(g->vs, addr, bytes, h);
    if (rc == 0) {
        failed = GA_GPU_FN_SET_ACCESS;
        rc = g->v->set_access(g->vs, addr, bytes, g->active_peers, g->n_active);
        if (rc != 0 && g->v->phys_unmap(g->vs, addr, bytes) != 0) {
            orphan_add(g, addr, bytes, h); /* still mapped: unmap and release later */
            h = 0;
        }
    }
    if (rc != 0 && h != 0 && g->v->phys_release(g->vs, h) != 0)
        orphan_add(g, 0, 0, h);
    ga_gpu_leave(g, prev);
    if (rc != 0)
        return ga_gpu_driver_fail(g, failed, rc, "map(%#lx, %zu)", (unsigned long)addr, bytes);
    memmove(&r->maps[i + 1], &r->maps[i], (r->n_maps - i) * sizeof(ga_gpu_mapping_t));
    r->maps[i] = (ga_gpu_mapping_t){.addr = addr, .bytes = bytes, .handle = h};
    r->n_maps++;
    return GALLOC_OK;
}

galloc_status_t ga_gpu_unmap(void *state, uintptr_t addr, size_t bytes)
{
    ga_gpu_t *g = state;
    galloc_status_t st = vmm_ready(g, "unmap");
    if (st != GALLOC_OK)
        return st;
    ga_gpu_resv_t *r = range_check(g, "unmap", addr, bytes);
    if (r == NULL)
        return GALLOC_E_INVAL;
    /* The range must be a run of whole, adjacent mappings. */
    size_t first = map_lower(r, addr), last = first;
    uintptr_t at = addr;
    while (last < r->n_maps && at < addr + bytes && r->maps[last].addr == at) {
        at += r->maps[last].bytes;
        last++;
    }
    if (last == first || at != addr + bytes)
        return ga_gpu_fail(g, GALLOC_E_INVAL, "unmap(%#lx, %zu): not a run of whole mapped pages", (unsigned long)addr,
                           bytes);
    if (!ga_gpu_grow((void **)&g->orphans, &g->cap_orphans, g->n_orphans + (last - first), sizeof(ga_gpu_orphan_t)))
        return ga_gpu_fail(g, GALLOC_E_NOMEM, "unmap: cannot grow the orphan table");
    uintptr_t prev;
    if ((st = ga_gpu_enter(g, "unmap", &prev)) != GALLOC_OK)
        return st;
    size_t done = first;
    ga_gpu_rc_t rc = 0;
    for (; done < last; done++) {
        const ga_gpu_mapping_t *m = &r->maps[done];
        if ((rc = g->v->phys_unmap(g->vs, m->addr, m->bytes)) != 0)
            break;
        if (g->v->phys_release(g->vs, m->handle) != 0)
            orphan_add(g, 0, 0, m->handle);
    }
    ga_gpu_leave(g, prev);
    /* The mappings unmapped before a refusal stay unmapped (none for the pool's one page per call). */
    memmove(&r->maps[first], &r->maps[done], (r->n_maps - done) * sizeof(ga_gpu_mapping_t));
    r->n_maps -= done - first;
    if (rc != 0)
        return ga_gpu_driver_fail(g, GA_GPU_FN_PHYS_UNMAP, rc, "unmap(%#lx, %zu): %zu of %zu mappings unmapped",
                                  (unsigned long)addr, bytes, done - first, last - first);
    return GALLOC_OK;
}

const ga_gpu_mapping_t *ga_gpu_vmm_mapping_at(ga_gpu_t *g, uintptr_t addr)
{
    ga_gpu_resv_t *r = resv_find(g, addr);
    size_t i = r != NULL ? map_lower(r, addr) : 0;
    return r != NULL && i < r->n_maps && r->maps[i].addr == addr ? &r->maps[i] : NULL;
}

galloc_status_t ga_gpu_vmm_grant(ga_gpu_t *g, int peer)
{
    if (!(g->features & GA_GPU_F_VMM))
        return GALLOC_OK; /* nothing can be mapped */
    for (size_t i = 0; i < g->n_resv; i++) {
        const ga_gpu_resv_t *r = &g->resv[i];
        for (size_t j = 0; j < r->n_maps; j++) {
            /* Per mapping, not per run: a run may span mappings the driver
             * sees as separate allocations, and setting a page twice is harmless. */
            ga_gpu_rc_t rc = g->v->set_access(g->vs, r->maps[j].addr, r->maps[j].bytes, &peer, 1);
            if (rc != 0)
                return ga_gpu_driver_fail(g, GA_GPU_FN_SET_ACCESS, rc,
                                          "enable_peer_access(%d): granting access to the mapping at %#lx", peer,
                                          (unsigned long)r->maps[j].addr);
        }
    }
    return GALLOC_OK;
}

void ga_gpu_vmm_close(ga_gpu_t *g)
{
    for (size_t i = 0; i < g->n_resv; i++) {
        ga_gpu_resv_t *r = &g->resv[i];
        for (size_t j = 0; j < r->n_maps; j++) {
            if (GA_GPU_TWICE(g->v->phys_unmap(g->vs, r->maps[j].addr, r->maps[j].bytes)))
                (void)GA_GPU_TWICE(g->v->phys_release(g->vs, r->maps[j].handle));
        }
        r->n_maps = 0;
    }
    if (orphans_release(g) != GALLOC_OK)
        (void)orphans_release(g);
    for (size_t i = 0; i < g->n_resv; i++)
        (void)GA_GPU_TWICE(g->v->va_free(g->vs, g->resv[i].base, g->resv[i].bytes));
}
