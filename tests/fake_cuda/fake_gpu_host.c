/*
 * fake_gpu_host.c: the fake driver's pinned host memory (cuMemHostAlloc-style
 * blocks, tracked so a leak is counted) and its synchronous copies between
 * host and device memory (see fake_gpu.h: Contents, Pinned host memory).
 */
#include "tests/fake_cuda/fake_gpu_int.h"

#include <unistd.h>

static fg_host_t *host_find(const void *ptr)
{
    for (size_t i = 0; i < fg.n_hosts; i++)
        if (fg.hosts[i].ptr == ptr)
            return &fg.hosts[i];
    return NULL;
}

static void host_drop(fg_host_t *h)
{
    fg.host_bytes -= h->size;
    munmap(h->ptr, h->map_len);
    FG_REMOVE(hosts, (size_t)(h - fg.hosts));
}

fg_rc_t fg_host_alloc(void **ptr, size_t bytes)
{
    FG_LOCK();
    int device = 0;
    fg_rc_t rc = fgi_need_ctx(&device);
    if (rc == FG_OK && (ptr == NULL || bytes == 0))
        rc = fgi_violation(FG_INVALID_VALUE, "%s", ptr == NULL ? "pp is NULL" : "bytesize is 0");
    fg_host_t h = {.size = bytes, .device = device};
    if (rc == FG_OK && !fgi_grow((void **)&fg.hosts, &fg.cap_hosts, fg.n_hosts + 1, sizeof(fg_host_t)))
        rc = FG_OUT_OF_MEMORY;
    if (rc == FG_OK) {
        h.map_len = fgi_round(bytes, (size_t)sysconf(_SC_PAGESIZE));
        h.ptr = mmap(NULL, h.map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (h.ptr == MAP_FAILED)
            rc = FG_OUT_OF_MEMORY;
    }
    if (rc == FG_OK) {
        fg.hosts[fg.n_hosts++] = h;
        fg.host_bytes += bytes;
        if (fg.host_bytes > fg.peak_host_bytes)
            fg.peak_host_bytes = fg.host_bytes;
        *ptr = h.ptr;
    }
    FG_UNLOCK();
    return rc;
}

fg_rc_t fg_host_alloc_flags(void **ptr, size_t bytes, unsigned flags, unsigned allowed)
{
    if ((flags & ~allowed) != 0)
        return fg_violation(FG_INVALID_VALUE, "bad host allocation flags %#x", flags);
    return fg_host_alloc(ptr, bytes);
}

fg_rc_t fg_host_free(void *ptr)
{
    FG_LOCK();
    int device = 0;
    fg_rc_t rc = fgi_need_ctx(&device);
    fg_host_t *h = rc == FG_OK ? host_find(ptr) : NULL;
    if (rc == FG_OK && h == NULL)
        rc = fgi_violation(FG_INVALID_VALUE, "%p is not a live pinned host block (double free?)", ptr);
    if (rc == FG_OK)
        host_drop(h);
    FG_UNLOCK();
    return rc;
}

static bool is_device_memory(uint64_t addr, size_t n);

fg_rc_t fg_host_register(void *ptr, size_t bytes, unsigned flags, unsigned allowed)
{
    if ((flags & ~allowed) != 0)
        return fg_violation(FG_INVALID_VALUE, "bad host register flags %#x", flags);
    FG_LOCK();
    int device = 0;
    fg_rc_t rc = fgi_need_ctx(&device);
    uintptr_t p = (uintptr_t)ptr;
    if (rc == FG_OK && (ptr == NULL || bytes == 0 || p + bytes < p))
        rc = fgi_violation(FG_INVALID_VALUE, "host register of %p + %zu: %s", ptr, bytes,
                           ptr == NULL ? "NULL pointer" : "empty or wrapping range");
    if (rc == FG_OK && is_device_memory(p, bytes))
        rc = fgi_violation(FG_INVALID_VALUE, "host register of %p + %zu: device memory", ptr, bytes);
    for (size_t i = 0; rc == FG_OK && i < fg.n_hosts; i++)
        if ((uintptr_t)fg.hosts[i].ptr < p + bytes && p < (uintptr_t)fg.hosts[i].ptr + fg.hosts[i].size)
            rc = fgi_violation(FG_HOST_ALREADY_REGISTERED, "host register of %p + %zu: overlaps pinned block %p", ptr,
                               bytes, fg.hosts[i].ptr);
    for (size_t i = 0; rc == FG_OK && i < fg.n_regs; i++)
        if ((uintptr_t)fg.regs[i].ptr < p + bytes && p < (uintptr_t)fg.regs[i].ptr + fg.regs[i].size)
            rc = fgi_violation(FG_HOST_ALREADY_REGISTERED, "host register of %p + %zu: overlaps registered %p + %zu",
                               ptr, bytes, fg.regs[i].ptr, fg.regs[i].size);
    if (rc == FG_OK && !fgi_grow((void **)&fg.regs, &fg.cap_regs, fg.n_regs + 1, sizeof(fg_reg_t)))
        rc = FG_OUT_OF_MEMORY;
    if (rc == FG_OK) {
        /* The driver walks the pages to lock them: a bad range faults here, in the test. */
        (void)*(volatile const char *)ptr;
        (void)*((volatile const char *)ptr + bytes - 1);
        fg.regs[fg.n_regs++] = (fg_reg_t){.ptr = ptr, .size = bytes, .device = device};
        fg.reg_bytes += bytes;
        if (fg.reg_bytes > fg.peak_reg_bytes)
            fg.peak_reg_bytes = fg.reg_bytes;
    }
    FG_UNLOCK();
    return rc;
}

fg_rc_t fg_host_unregister(void *ptr)
{
    FG_LOCK();
    int device = 0;
    fg_rc_t rc = fgi_need_ctx(&device);
    size_t i = 0;
    while (rc == FG_OK && i < fg.n_regs && fg.regs[i].ptr != ptr)
        i++;
    if (rc == FG_OK && i == fg.n_regs)
        rc = fgi_violation(FG_HOST_NOT_REGISTERED, "host unregister of %p: not the start of a registered range", ptr);
    if (rc == FG_OK) {
        fg.reg_bytes -= fg.regs[i].size;
        FG_REMOVE(regs, i);
    }
    FG_UNLOCK();
    return rc;
}

/* Whether [addr, addr + n) overlaps any device memory (linear or reserved). */
static bool is_device_memory(uint64_t addr, size_t n)
{
    for (size_t i = 0; i < fg.n_allocs; i++)
        if (fg.allocs[i].addr < addr + n && addr < fg.allocs[i].addr + fg.allocs[i].charged)
            return true;
    for (size_t i = 0; i < fg.n_resvs; i++)
        if (fg.resvs[i].base < addr + n && addr < fg.resvs[i].base + fg.resvs[i].size)
            return true;
    return false;
}

/* The device side of a copy: live linear memory of device, or mapped pages of
 * device's handles with at least the access `prot` (1 read, 3 read-write). */
static fg_rc_t device_range(uint64_t addr, size_t n, int device, int prot)
{
    for (size_t i = 0; i < fg.n_allocs; i++) {
        const fg_alloc_t *a = &fg.allocs[i];
        if (a->kind != FG_ASYNC_FREE && a->addr <= addr && addr - a->addr < a->size && n <= a->size - (addr - a->addr))
            return a->device == device ? FG_OK
                                       : fgi_violation(FG_INVALID_VALUE,
                                                       "%#llx belongs to device %d, device %d is "
                                                       "current",
                                                       (unsigned long long)addr, a->device, device);
    }
    for (uint64_t at = addr; at < addr + n;) {
        size_t i = 0;
        while (i < fg.n_maps && !(fg.maps[i].addr <= at && at < fg.maps[i].addr + fg.maps[i].size))
            i++;
        if (i == fg.n_maps)
            return fgi_violation(FG_INVALID_VALUE, "%#llx + %zu: %#llx is not live device memory (unmapped or freed)",
                                 (unsigned long long)addr, n, (unsigned long long)at);
        if ((fg.maps[i].prot & prot) != prot)
            return fgi_violation(FG_INVALID_VALUE, "%#llx is mapped without %s access", (unsigned long long)at,
                                 prot == 3 ? "read-write" : "read");
        for (size_t h = 0; h < fg.n_handles; h++)
            if (fg.handles[h].id == fg.maps[i].handle && fg.handles[h].device != device)
                return fgi_violation(FG_INVALID_VALUE, "%#llx is memory of device %d, device %d is current",
                                     (unsigned long long)at, fg.handles[h].device, device);
        at = fg.maps[i].addr + fg.maps[i].size;
    }
    return FG_OK;
}

/* The host side of a copy: not device memory, and inside its pinned block if
 * it starts in one. */
static fg_rc_t host_range(const void *host, size_t n)
{
    uint64_t p = (uintptr_t)host;
    if (host == NULL || is_device_memory(p, n))
        return fgi_violation(FG_INVALID_VALUE, "host pointer %p is %s", host, host == NULL ? "NULL" : "device memory");
    for (size_t i = 0; i < fg.n_hosts; i++) {
        uint64_t b = (uintptr_t)fg.hosts[i].ptr;
        if (b <= p && p - b < fg.hosts[i].size && n > fg.hosts[i].size - (p - b))
            return fgi_violation(FG_INVALID_VALUE, "%p + %zu runs past its %zu-byte pinned block", host, n,
                                 fg.hosts[i].size);
    }
    return FG_OK;
}

static fg_rc_t copy(void *host, uint64_t dev, size_t bytes, bool to_host)
{
    FG_LOCK();
    int device = 0;
    fg_rc_t rc = fgi_need_ctx(&device);
    if (rc == FG_OK && bytes > 0)
        rc = host_range(host, bytes);
    if (rc == FG_OK && bytes > 0)
        rc = device_range(dev, bytes, device, to_host ? 1 : 3);
    if (rc == FG_OK && bytes > 0) {
        if (to_host) {
            memcpy(host, (const void *)(uintptr_t)dev, bytes);
            fg.copied_d2h += bytes;
        } else {
            memcpy((void *)(uintptr_t)dev, host, bytes);
            fg.copied_h2d += bytes;
        }
    }
    FG_UNLOCK();
    return rc;
}

fg_rc_t fg_copy_d2h(void *dst, uint64_t src, size_t bytes)
{
    return copy(dst, src, bytes, true);
}

fg_rc_t fg_copy_h2d(uint64_t dst, const void *src, size_t bytes)
{
    return copy((void *)(uintptr_t)src, dst, bytes, false);
}

uint64_t fgi_host_release_all(int device)
{
    uint64_t live = 0;
    for (size_t i = 0; i < fg.n_regs;) { /* forgotten: the memory is the caller's */
        if (device >= 0 && fg.regs[i].device != device) {
            i++;
            continue;
        }
        live++;
        fg.reg_bytes -= fg.regs[i].size;
        FG_REMOVE(regs, i);
    }
    for (size_t i = 0; i < fg.n_hosts;) {
        if (device >= 0 && fg.hosts[i].device != device) {
            i++;
            continue;
        }
        live++;
        host_drop(&fg.hosts[i]);
    }
    return live;
}
