/*
 * gpu_ipc.c: sharing device memory between processes, for every vendor, as
 * PyTorch does it (torch.multiprocessing's CUDA tensors; docs/integration.md):
 * a plain segment travels as the driver's 64-byte IPC handle of its base
 * (cuIpcGetMemHandle), which the other process opens once and closes before
 * the exporter may free it (cuIpcOpenMemHandle maps the whole allocation and
 * returns its base; opening in the exporting process itself is refused by the
 * driver); an expandable segment travels page by page as POSIX descriptors of
 * the physical handles map created (cuMemExportToShareableHandle, which is why
 * the vendors' phys_create always requests that type, as PyTorch's expandable
 * segments do), and the other process imports them into a reservation of its
 * own (cuMemImportFromShareableHandle, cuMemMap, cuMemSetAccess), as
 * PyTorch's ExpandableSegment::fromShared does.
 *
 * What this process opened is recorded in g->imports until ipc_close, so
 * close releases whatever the caller left. Each entry also records how much
 * of it is still held (pages mapped, handles imported, the reservation or
 * the open mapping), because a release the driver refuses halfway must be
 * finished by the retry, never redone: an import_pages that fails undoes its
 * steps the same way, and what the driver refused to undo stays as a dead
 * entry that close releases (every driver resource in exactly one list).
 *
 * Locking: the allocator's lock is held for every call.
 */
#include <stdlib.h>

#include "backend/gpu_int.h"

/* The feature, or GALLOC_E_UNSUPPORTED naming the missing symbol. */
static galloc_status_t ipc_ready(ga_gpu_t *g, const char *what)
{
    if (g->features & GA_GPU_F_IPC)
        return GALLOC_OK;
    return ga_gpu_fail(g, GALLOC_E_UNSUPPORTED,
                       "%s: sharing memory between processes is unavailable: the %s driver library lacks %s", what,
                       g->v->name, ga_dl_missing(g->vs, GA_GPU_F_IPC));
}

static ga_gpu_import_t *import_find(ga_gpu_t *g, uintptr_t addr)
{
    for (size_t i = 0; i < g->n_imports; i++)
        if (g->imports[i].addr == addr && !g->imports[i].dead)
            return &g->imports[i];
    return NULL;
}

static void import_drop(ga_gpu_t *g, ga_gpu_import_t *e)
{
    free(e->handles);
    *e = g->imports[--g->n_imports]; /* order does not matter */
}

/* Release what e still holds, last step first (context current); on a
 * refusal stop there, *fn naming the call, and return its code: e records
 * what is left, so calling again continues. */
static ga_gpu_rc_t import_release(ga_gpu_t *g, ga_gpu_import_t *e, ga_gpu_fn_t *fn)
{
    ga_gpu_rc_t rc;
    if (e->page == 0) {
        if (e->held && (rc = g->v->ipc_close(g->vs, e->addr)) != 0) {
            *fn = GA_GPU_FN_IPC_CLOSE;
            return rc;
        }
        e->held = false;
        return 0;
    }
    for (; e->n_mapped > 0; e->n_mapped--) {
        size_t i = e->n_mapped - 1;
        if ((rc = g->v->phys_unmap(g->vs, e->addr + i * e->page, e->page)) != 0) {
            *fn = GA_GPU_FN_PHYS_UNMAP;
            return rc;
        }
    }
    for (size_t i = 0; i < e->n; i++) {
        if (e->handles[i] != 0 && (rc = g->v->phys_release(g->vs, e->handles[i])) != 0) {
            *fn = GA_GPU_FN_PHYS_RELEASE;
            return rc;
        }
        e->handles[i] = 0;
    }
    if (e->held && (rc = g->v->va_free(g->vs, e->addr, e->bytes)) != 0) {
        *fn = GA_GPU_FN_VA_FREE;
        return rc;
    }
    e->held = false;
    return 0;
}

/* Room for one more entry (before any driver call, so recording cannot fail). */
static galloc_status_t imports_grow(ga_gpu_t *g, const char *what)
{
    if (!ga_gpu_grow((void **)&g->imports, &g->cap_imports, g->n_imports + 1, sizeof(ga_gpu_import_t)))
        return ga_gpu_fail(g, GALLOC_E_NOMEM, "%s: cannot grow the table of opened memory", what);
    return GALLOC_OK;
}

galloc_status_t ga_gpu_ipc_export(void *state, uintptr_t addr, void *handle)
{
    ga_gpu_t *g = state;
    galloc_status_t st = ipc_ready(g, "ipc_export");
    if (st != GALLOC_OK)
        return st;
    if (handle == NULL || ga_addrmap_find(&g->segs, addr) == NULL)
        return ga_gpu_fail(g, GALLOC_E_INVAL, "ipc_export(%#lx): %s", (unsigned long)addr,
                           handle == NULL ? "handle is NULL" : "not the base of a live segment from segment_alloc");
    uintptr_t prev;
    if ((st = ga_gpu_enter(g, "ipc_export", &prev)) != GALLOC_OK)
        return st;
    ga_gpu_rc_t rc = g->v->ipc_get(g->vs, addr, handle);
    ga_gpu_leave(g, prev);
    if (rc != 0)
        return ga_gpu_driver_fail(g, GA_GPU_FN_IPC_GET, rc, "ipc_export(%#lx)", (unsigned long)addr);
    return GALLOC_OK;
}

galloc_status_t ga_gpu_ipc_open(void *state, const void *handle, size_t bytes, uintptr_t *addr)
{
    ga_gpu_t *g = state;
    galloc_status_t st = ipc_ready(g, "ipc_open");
    if (st != GALLOC_OK)
        return st;
    if (handle == NULL || addr == NULL || bytes == 0)
        return ga_gpu_fail(g, GALLOC_E_INVAL, "ipc_open(%zu bytes): %s", bytes,
                           bytes == 0 ? "empty segment" : "NULL handle or addr");
    if ((st = imports_grow(g, "ipc_open")) != GALLOC_OK)
        return st;
    uintptr_t prev, a = 0;
    if ((st = ga_gpu_enter(g, "ipc_open", &prev)) != GALLOC_OK)
        return st;
    ga_gpu_rc_t rc = g->v->ipc_open(g->vs, handle, &a);
    bool twice = rc == 0 && import_find(g, a) != NULL;
    if (twice) /* the driver counts opens of one handle: give this one back */
        (void)GA_GPU_TWICE(g->v->ipc_close(g->vs, a));
    ga_gpu_leave(g, prev);
    if (rc != 0)
        return ga_gpu_driver_fail(g, GA_GPU_FN_IPC_OPEN, rc, "ipc_open(%zu bytes)", bytes);
    if (twice)
        return ga_gpu_fail(g, GALLOC_E_INVAL, "ipc_open(%zu bytes): that segment is already open at %#lx", bytes,
                           (unsigned long)a);
    g->imports[g->n_imports++] = (ga_gpu_import_t){.addr = a, .bytes = bytes, .held = true};
    *addr = a;
    return GALLOC_OK;
}

galloc_status_t ga_gpu_ipc_close(void *state, uintptr_t addr)
{
    ga_gpu_t *g = state;
    ga_gpu_import_t *e = import_find(g, addr);
    if (e == NULL)
        return ga_gpu_fail(g, GALLOC_E_INVAL, "ipc_close(%#lx): not an address ipc_open or import_pages returned",
                           (unsigned long)addr);
    uintptr_t prev;
    galloc_status_t st = ga_gpu_enter(g, "ipc_close", &prev);
    if (st != GALLOC_OK)
        return st;
    ga_gpu_fn_t fn = GA_GPU_FN_IPC_CLOSE;
    ga_gpu_rc_t rc = import_release(g, e, &fn);
    ga_gpu_leave(g, prev);
    if (rc != 0)
        return ga_gpu_driver_fail(g, fn, rc, "ipc_close(%#lx)", (unsigned long)addr);
    import_drop(g, e);
    return GALLOC_OK;
}

galloc_status_t ga_gpu_export_page(void *state, uintptr_t addr, int *fd)
{
    ga_gpu_t *g = state;
    galloc_status_t st = ipc_ready(g, "export_page");
    if (st != GALLOC_OK)
        return st;
    const ga_gpu_mapping_t *m = fd != NULL ? ga_gpu_vmm_mapping_at(g, addr) : NULL;
    if (m == NULL)
        return ga_gpu_fail(g, GALLOC_E_INVAL, "export_page(%#lx): %s", (unsigned long)addr,
                           fd == NULL ? "fd is NULL" : "not the start of a live mapping from map");
    uintptr_t prev;
    if ((st = ga_gpu_enter(g, "export_page", &prev)) != GALLOC_OK)
        return st;
    int out = -1;
    ga_gpu_rc_t rc = g->v->phys_export(g->vs, m->handle, &out);
    ga_gpu_leave(g, prev);
    if (rc != 0)
        return ga_gpu_driver_fail(g, GA_GPU_FN_PHYS_EXPORT, rc, "export_page(%#lx)", (unsigned long)addr);
    *fd = out;
    return GALLOC_OK;
}

/* import_pages' driver steps on e (context current): reserve, then per page
 * import, map, set access, each recorded in e as it succeeds. */
static galloc_status_t import_steps(ga_gpu_t *g, ga_gpu_import_t *e, const int *fds)
{
    ga_gpu_rc_t rc = g->v->va_reserve(g->vs, e->bytes, &e->addr);
    if (rc != 0)
        return ga_gpu_driver_fail(g, GA_GPU_FN_VA_RESERVE, rc, "import_pages(%zu x %zu bytes)", e->n, e->page);
    e->held = true;
    for (size_t i = 0; i < e->n; i++) {
        uintptr_t at = e->addr + i * e->page;
        ga_gpu_fn_t fn = GA_GPU_FN_PHYS_IMPORT;
        uint64_t h = 0;
        if ((rc = g->v->phys_import(g->vs, fds[i], &h)) == 0) {
            e->handles[i] = h;
            fn = GA_GPU_FN_PHYS_MAP;
            if ((rc = g->v->phys_map(g->vs, at, e->page, h)) == 0) {
                e->n_mapped = i + 1;
                fn = GA_GPU_FN_SET_ACCESS;
                rc = g->v->set_access(g->vs, at, e->page, g->active_peers, g->n_active);
            }
        }
        if (rc != 0)
            return ga_gpu_driver_fail(g, fn, rc, "import_pages(%zu x %zu bytes): page %zu (descriptor %d)", e->n,
                                      e->page, i, fds[i]);
    }
    return GALLOC_OK;
}

galloc_status_t ga_gpu_import_pages(void *state, const int *fds, size_t n, size_t page, uintptr_t *addr)
{
    ga_gpu_t *g = state;
    galloc_status_t st = ipc_ready(g, "import_pages");
    if (st != GALLOC_OK)
        return st;
    size_t gran = 0;
    if (fds == NULL || addr == NULL || n == 0 || page == 0)
        return ga_gpu_fail(g, GALLOC_E_INVAL, "import_pages(%zu x %zu bytes): NULL or empty argument", n, page);
    if ((st = ga_gpu_granularity(g, &gran)) != GALLOC_OK)
        return st; /* no VMM: recorded */
    if (page % gran != 0 || n > SIZE_MAX / page)
        return ga_gpu_fail(g, GALLOC_E_INVAL, "import_pages(%zu x %zu bytes): pages must be multiples of %zu", n, page,
                           gran);
    uint64_t *handles = calloc(n, sizeof(uint64_t));
    if (handles == NULL || (st = imports_grow(g, "import_pages")) != GALLOC_OK) {
        free(handles);
        return handles == NULL ? ga_gpu_fail(g, GALLOC_E_NOMEM, "import_pages: out of host memory") : st;
    }
    uintptr_t prev;
    if ((st = ga_gpu_enter(g, "import_pages", &prev)) != GALLOC_OK) {
        free(handles);
        return st;
    }
    ga_gpu_import_t *e = &g->imports[g->n_imports++];
    *e = (ga_gpu_import_t){.bytes = n * page, .page = page, .handles = handles, .n = n};
    st = import_steps(g, e, fds);
    if (st != GALLOC_OK) {
        ga_gpu_fn_t fn;
        /* Undo every step; a refused undo leaves the rest to close (its message is not the one to report). */
        if (import_release(g, e, &fn) == 0 || import_release(g, e, &fn) == 0)
            import_drop(g, e);
        else
            e->dead = true;
    }
    ga_gpu_leave(g, prev);
    if (st == GALLOC_OK)
        *addr = e->addr;
    return st;
}

galloc_status_t ga_gpu_ipc_grant(ga_gpu_t *g, int peer)
{
    for (size_t i = 0; i < g->n_imports; i++) {
        const ga_gpu_import_t *e = &g->imports[i];
        for (size_t j = 0; !e->dead && j < e->n_mapped; j++) {
            ga_gpu_rc_t rc = g->v->set_access(g->vs, e->addr + j * e->page, e->page, &peer, 1);
            if (rc != 0)
                return ga_gpu_driver_fail(g, GA_GPU_FN_SET_ACCESS, rc,
                                          "enable_peer_access(%d): granting access to the imported page at %#lx", peer,
                                          (unsigned long)(e->addr + j * e->page));
        }
    }
    return GALLOC_OK;
}

void ga_gpu_ipc_close_all(ga_gpu_t *g)
{
    for (size_t i = 0; i < g->n_imports; i++) {
        ga_gpu_fn_t fn;
        if (import_release(g, &g->imports[i], &fn) != 0)
            (void)import_release(g, &g->imports[i], &fn);
    }
}
