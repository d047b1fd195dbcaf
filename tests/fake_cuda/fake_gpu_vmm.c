/*
 * fake_gpu_vmm.c: the fake driver's virtual memory management: address
 * reservations, physical handles, mappings and access (see fake_gpu.h).
 *
 * A reservation is a PROT_NONE private mapping. A handle's memory is a memfd
 * (given its garbage at creation, by pwrite); map maps the file shared over
 * the range (MAP_FIXED), PROT_NONE; set_access changes that mapping's
 * protection; unmap puts a fresh PROT_NONE private mapping back over the
 * range. Data written through one mapping of a handle is seen through every
 * other, in this process or another one that imported it (fake_gpu_ipc.c),
 * as on a GPU. Each mapping also records
 * every device's access (dev_prot), so a test sees which peers can reach a
 * page (fg_access).
 */
#include <unistd.h>

#include "tests/fake_cuda/fake_gpu_int.h"

static fg_resv_t *resv_holding(uint64_t addr, size_t size)
{
    for (size_t i = 0; i < fg.n_resvs; i++) {
        fg_resv_t *r = &fg.resvs[i];
        if (addr >= r->base && addr - r->base < r->size && size <= r->size - (addr - r->base))
            return r;
    }
    return NULL;
}

fg_handle_t *fgi_handle_find(uint64_t id)
{
    for (size_t i = 0; i < fg.n_handles; i++)
        if (fg.handles[i].id == id)
            return &fg.handles[i];
    return NULL;
}

static void handle_drop(fg_handle_t *h)
{
    fg.dev[h->device].used -= h->charged;
    close(h->fd);
    FG_REMOVE(handles, (size_t)(h - fg.handles));
}

/* The mapping starting exactly at addr, or NULL. */
static fg_mapping_t *map_at(uint64_t addr)
{
    for (size_t i = 0; i < fg.n_maps; i++)
        if (fg.maps[i].addr == addr)
            return &fg.maps[i];
    return NULL;
}

static bool overlaps_a_mapping(uint64_t addr, size_t size)
{
    for (size_t i = 0; i < fg.n_maps; i++)
        if (fg.maps[i].addr < addr + size && addr < fg.maps[i].addr + fg.maps[i].size)
            return true;
    return false;
}

/* Undo one mapping: the range becomes a PROT_NONE hole of its reservation again. */
static void map_drop(fg_mapping_t *m)
{
    mmap((void *)(uintptr_t)m->addr, m->size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1,
         0);
    fg_handle_t *h = fgi_handle_find(m->handle);
    if (h != NULL && --h->maps == 0 && h->released)
        handle_drop(h);
    FG_REMOVE(maps, (size_t)(m - fg.maps));
}

fg_rc_t fg_granularity(int device, size_t *bytes)
{
    FG_LOCK();
    fg_rc_t rc = bytes == NULL ? fgi_violation(FG_INVALID_VALUE, "granularity is NULL") : fgi_need_device(device);
    if (rc == FG_OK)
        *bytes = fg.gran;
    FG_UNLOCK();
    return rc;
}

fg_rc_t fg_va_reserve(uint64_t *addr, size_t size, size_t alignment, uint64_t hint, unsigned long long flags)
{
    (void)hint; /* a hint may be ignored by the driver too */
    FG_LOCK();
    int device = 0;
    fg_rc_t rc = fgi_need_ctx(&device);
    if (rc == FG_OK && (addr == NULL || size == 0 || size % fg.gran != 0 || flags != 0 ||
                        (alignment & (alignment - 1)) != 0 || (alignment != 0 && alignment % fg.gran != 0)))
        rc = fgi_violation(FG_INVALID_VALUE,
                           "size %zu, alignment %zu, flags %llu: size must be a non-zero multiple "
                           "of the granularity %zu, alignment 0 or a power-of-two multiple of it, flags 0",
                           size, alignment, flags, fg.gran);
    fg_resv_t r = {.size = size, .device = device};
    size_t align = alignment > fg.gran ? alignment : fg.gran;
    if (rc == FG_OK && !fgi_grow((void **)&fg.resvs, &fg.cap_resvs, fg.n_resvs + 1, sizeof(fg_resv_t)))
        rc = FG_OUT_OF_MEMORY;
    if (rc == FG_OK) {
        r.map_len = size + align;
        r.map_base = mmap(NULL, r.map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (r.map_base == MAP_FAILED)
            rc = FG_OUT_OF_MEMORY; /* address space exhausted */
    }
    if (rc == FG_OK) {
        r.base = fgi_round((uintptr_t)r.map_base, align);
        fg.resvs[fg.n_resvs++] = r;
        fg.last_resv_size = size;
        *addr = r.base;
    }
    FG_UNLOCK();
    return rc;
}

fg_rc_t fg_va_free(uint64_t addr, size_t size)
{
    FG_LOCK();
    int device = 0;
    fg_rc_t rc = fgi_need_ctx(&device);
    size_t i = 0;
    while (rc == FG_OK && i < fg.n_resvs && fg.resvs[i].base != addr)
        i++;
    if (rc == FG_OK && (i == fg.n_resvs || fg.resvs[i].size != size))
        rc = fgi_violation(FG_INVALID_VALUE, "%#llx + %zu is not a whole reservation", (unsigned long long)addr, size);
    else if (rc == FG_OK && overlaps_a_mapping(addr, size))
        rc = fgi_violation(FG_INVALID_VALUE, "%#llx + %zu still has mappings: unmap before release",
                           (unsigned long long)addr, size);
    if (rc == FG_OK) {
        munmap(fg.resvs[i].map_base, fg.resvs[i].map_len);
        FG_REMOVE(resvs, i);
    }
    FG_UNLOCK();
    return rc;
}

fg_rc_t fg_phys_create(uint64_t *handle, size_t size, int device, unsigned long long flags, bool exportable)
{
    FG_LOCK();
    int current = 0;
    fg_rc_t rc = fgi_need_ctx(&current);
    if (rc == FG_OK)
        rc = fgi_need_device(device);
    if (rc == FG_OK && (handle == NULL || size == 0 || size % fg.gran != 0 || flags != 0))
        rc = fgi_violation(FG_INVALID_VALUE,
                           "size %zu, flags %llu: size must be a non-zero multiple of the "
                           "granularity %zu, flags 0",
                           size, flags, fg.gran);
    fg_device_t *d = &fg.dev[device];
    if (rc == FG_OK && (size > d->capacity - d->used ||
                        !fgi_grow((void **)&fg.handles, &fg.cap_handles, fg.n_handles + 1, sizeof(fg_handle_t))))
        rc = FG_OUT_OF_MEMORY;
    int fd = -1;
    if (rc == FG_OK && !fgi_memfd(size, &fd))
        rc = FG_OUT_OF_MEMORY;
    if (rc == FG_OK) {
        /* New physical memory is not zeroed: garbage at the start of every
         * page (see fake_gpu.h); its mappings start PROT_NONE. */
        unsigned char garbage[FAKE_GPU_GARBAGE_RUN];
        memset(garbage, FAKE_GPU_GARBAGE, sizeof(garbage));
        for (size_t at = 0; rc == FG_OK && at < size; at += fg.gran)
            if (pwrite(fd, garbage, sizeof(garbage), (off_t)at) != (ssize_t)sizeof(garbage))
                rc = FG_OUT_OF_MEMORY;
        if (rc != FG_OK)
            close(fd);
    }
    if (rc == FG_OK) {
        d->used += size;
        fg.handles[fg.n_handles++] = (fg_handle_t){.id = ++fg.next_handle,
                                                   .size = size,
                                                   .charged = size,
                                                   .fd = fd,
                                                   .exportable = exportable,
                                                   .device = device};
        *handle = fg.next_handle;
    }
    FG_UNLOCK();
    return rc;
}

fg_rc_t fg_phys_release(uint64_t handle)
{
    FG_LOCK();
    int device = 0;
    fg_rc_t rc = fgi_need_ctx(&device);
    fg_handle_t *h = rc == FG_OK ? fgi_handle_find(handle) : NULL;
    if (rc == FG_OK && (h == NULL || h->released))
        rc = fgi_violation(FG_INVALID_VALUE, "handle %llu is not live (released twice?)", (unsigned long long)handle);
    if (rc == FG_OK) {
        if (h->maps > 0)
            h->released = true; /* freed with its last mapping, as the driver defers it */
        else
            handle_drop(h);
    }
    FG_UNLOCK();
    return rc;
}

fg_rc_t fg_map(uint64_t addr, size_t size, size_t offset, uint64_t handle, unsigned long long flags)
{
    FG_LOCK();
    int device = 0;
    fg_rc_t rc = fgi_need_ctx(&device);
    fg_handle_t *h = rc == FG_OK ? fgi_handle_find(handle) : NULL;
    if (rc == FG_OK && (h == NULL || h->released))
        rc = fgi_violation(FG_INVALID_HANDLE, "handle %llu is not live", (unsigned long long)handle);
    else if (rc == FG_OK && (size == 0 || addr % fg.gran || size % fg.gran || offset % fg.gran || flags != 0 ||
                             offset > h->size || size > h->size - offset))
        rc = fgi_violation(FG_INVALID_VALUE,
                           "%#llx + %zu at offset %zu of a %zu-byte handle, flags %llu: must be "
                           "granularity multiples inside the handle, flags 0",
                           (unsigned long long)addr, size, offset, h->size, flags);
    else if (rc == FG_OK && resv_holding(addr, size) == NULL)
        rc = fgi_violation(FG_INVALID_VALUE, "%#llx + %zu is not inside one reservation", (unsigned long long)addr,
                           size);
    else if (rc == FG_OK && overlaps_a_mapping(addr, size))
        rc = fgi_violation(FG_INVALID_VALUE, "%#llx + %zu overlaps a mapping", (unsigned long long)addr, size);
    if (rc == FG_OK && !fgi_grow((void **)&fg.maps, &fg.cap_maps, fg.n_maps + 1, sizeof(fg_mapping_t)))
        rc = FG_OUT_OF_MEMORY;
    if (rc == FG_OK &&
        mmap((void *)(uintptr_t)addr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, h->fd, (off_t)offset) == MAP_FAILED)
        rc = FG_OUT_OF_MEMORY;
    if (rc == FG_OK) {
        h->maps++;
        fg.maps[fg.n_maps++] = (fg_mapping_t){.addr = addr, .size = size, .handle = handle};
    }
    FG_UNLOCK();
    return rc;
}

fg_rc_t fg_unmap(uint64_t addr, size_t size)
{
    FG_LOCK();
    int device = 0;
    fg_rc_t rc = fgi_need_ctx(&device);
    /* Whole mappings only: walk the run that starts at addr. */
    uint64_t at = addr;
    while (rc == FG_OK && at < addr + size) {
        fg_mapping_t *m = map_at(at);
        if (m == NULL || m->size > addr + size - at)
            rc = fgi_violation(FG_INVALID_VALUE, "%#llx + %zu does not consist of whole mappings (at %#llx)",
                               (unsigned long long)addr, size, (unsigned long long)at);
        else
            at += m->size;
    }
    if (rc == FG_OK && size == 0)
        rc = fgi_violation(FG_INVALID_VALUE, "size is 0");
    for (at = addr; rc == FG_OK && at < addr + size;) {
        fg_mapping_t *m = map_at(at);
        at += m->size;
        map_drop(m);
    }
    FG_UNLOCK();
    return rc;
}

fg_rc_t fg_set_access(uint64_t addr, size_t size, int device, int prot)
{
    FG_LOCK();
    int current = 0;
    fg_rc_t rc = fgi_need_ctx(&current);
    if (rc == FG_OK)
        rc = fgi_need_device(device);
    if (rc == FG_OK && (size == 0 || (prot != 0 && prot != 1 && prot != 3)))
        rc = fgi_violation(FG_INVALID_VALUE, "size %zu, protection %d", size, prot);
    /* Every byte of the range must be mapped. */
    for (uint64_t at = addr; rc == FG_OK && at < addr + size;) {
        size_t i = 0;
        while (i < fg.n_maps && !(fg.maps[i].addr <= at && at < fg.maps[i].addr + fg.maps[i].size))
            i++;
        if (i == fg.n_maps)
            rc = fgi_violation(FG_INVALID_VALUE, "%#llx is not mapped", (unsigned long long)at);
        else
            at = fg.maps[i].addr + fg.maps[i].size;
    }
    /* A peer must be able to reach the device the memory lives on. */
    for (size_t i = 0; rc == FG_OK && i < fg.n_maps; i++) {
        const fg_mapping_t *m = &fg.maps[i];
        const fg_handle_t *h = m->addr < addr + size && addr < m->addr + m->size ? fgi_handle_find(m->handle) : NULL;
        if (h != NULL && h->device != device && fg.peer_blocked[device][h->device])
            rc = fgi_violation(FG_INVALID_DEVICE, "device %d cannot access device %d's memory at %#llx", device,
                               h->device, (unsigned long long)m->addr);
    }
    int p = prot == 3 ? PROT_READ | PROT_WRITE : prot == 1 ? PROT_READ : PROT_NONE;
    for (size_t i = 0; rc == FG_OK && i < fg.n_maps; i++) {
        fg_mapping_t *m = &fg.maps[i];
        if (!(m->addr < addr + size && addr < m->addr + m->size))
            continue;
        m->dev_prot[device] = prot;
        const fg_handle_t *h = fgi_handle_find(m->handle);
        if (h == NULL || h->device == device) { /* the host mapping stands for the owning device's view */
            uint64_t lo = m->addr > addr ? m->addr : addr;
            uint64_t hi = m->addr + m->size < addr + size ? m->addr + m->size : addr + size;
            if (mprotect((void *)(uintptr_t)lo, hi - lo, p) != 0)
                rc = FG_OUT_OF_MEMORY;
            m->prot = prot;
        }
    }
    FG_UNLOCK();
    return rc;
}

uint64_t fgi_vmm_release_all(int device)
{
    uint64_t live = 0;
    for (size_t i = 0; i < fg.n_maps;) {
        fg_resv_t *r = resv_holding(fg.maps[i].addr, fg.maps[i].size);
        if (device >= 0 && r != NULL && r->device != device) {
            i++;
            continue;
        }
        live++;
        map_drop(&fg.maps[i]);
    }
    for (size_t i = 0; i < fg.n_handles;) {
        if (device >= 0 && fg.handles[i].device != device) {
            i++;
            continue;
        }
        live += !fg.handles[i].released;
        handle_drop(&fg.handles[i]);
    }
    for (size_t i = 0; i < fg.n_resvs;) {
        if (device >= 0 && fg.resvs[i].device != device) {
            i++;
            continue;
        }
        live++;
        munmap(fg.resvs[i].map_base, fg.resvs[i].map_len);
        FG_REMOVE(resvs, i);
    }
    return live;
}

int fg_access(uint64_t addr, int device)
{
    FG_LOCK();
    int prot = -1;
    for (size_t i = 0; device >= 0 && device < FAKE_GPU_MAX_DEVICES && i < fg.n_maps; i++)
        if (fg.maps[i].addr <= addr && addr - fg.maps[i].addr < fg.maps[i].size)
            prot = fg.maps[i].dev_prot[device];
    FG_UNLOCK();
    return prot;
}

int fg_mappings_without(int device)
{
    FG_LOCK();
    int n = 0;
    for (size_t i = 0; device >= 0 && device < FAKE_GPU_MAX_DEVICES && i < fg.n_maps; i++)
        n += fg.maps[i].dev_prot[device] != 3;
    FG_UNLOCK();
    return n;
}
