/*
 * fake_gpu_mem.c: the fake driver's linear device memory (cuMemAlloc-style)
 * and its default stream-ordered pools (cuMemAllocAsync-style), see fake_gpu.h.
 * A linear allocation lives in a memfd of its own, so that another process
 * can open it (fake_gpu_ipc.c); pool chunks, which no process shares, are
 * private mappings.
 */
#include <unistd.h>

#include "tests/fake_cuda/fake_gpu_int.h"

#define USED_ALIGN 512 /* the pool's "used" counts allocations at this alignment */

fg_alloc_t *fgi_alloc_find(uint64_t addr)
{
    for (size_t i = 0; i < fg.n_allocs; i++)
        if (fg.allocs[i].addr == addr)
            return &fg.allocs[i];
    return NULL;
}

static void alloc_drop(fg_alloc_t *a)
{
    fg.dev[a->device].used -= a->charged;
    munmap(a->map_base, a->map_len);
    if (a->fd >= 0)
        close(a->fd);
    FG_REMOVE(allocs, (size_t)(a - fg.allocs));
}

/* A new granularity-aligned allocation charged to device; FG_OUT_OF_MEMORY
 * when the device (or the host) is full. */
static fg_rc_t alloc_new(int device, size_t size, int kind, fg_alloc_t **out)
{
    fg_device_t *d = &fg.dev[device];
    size_t charged = fgi_round(size, fg.gran);
    if (charged < size || charged > d->capacity - d->used)
        return FG_OUT_OF_MEMORY;
    if (!fgi_grow((void **)&fg.allocs, &fg.cap_allocs, fg.n_allocs + 1, sizeof(fg_alloc_t)))
        return FG_OUT_OF_MEMORY;
    fg_alloc_t a = {.size = size, .charged = charged, .fd = -1, .device = device, .kind = kind};
    if (kind == FG_SEGMENT) {
        if (!fgi_memfd(charged, &a.fd))
            return FG_OUT_OF_MEMORY;
        if (!fgi_map_fd(a.fd, charged, PROT_READ | PROT_WRITE, &a.map_base, &a.map_len, &a.addr)) {
            close(a.fd);
            return FG_OUT_OF_MEMORY;
        }
    } else if (!fgi_map(charged, PROT_READ | PROT_WRITE, false, &a.map_base, &a.map_len, &a.addr)) {
        return FG_OUT_OF_MEMORY;
    }
    d->used += charged;
    fg.allocs[fg.n_allocs] = a;
    *out = &fg.allocs[fg.n_allocs++];
    return FG_OK;
}

fg_rc_t fg_mem_alloc(uint64_t *addr, size_t bytes)
{
    FG_LOCK();
    int device = 0;
    fg_alloc_t *a = NULL;
    fg_rc_t rc = fgi_need_ctx(&device);
    if (rc == FG_OK && (addr == NULL || bytes == 0))
        rc = fgi_violation(FG_INVALID_VALUE, "%s", addr == NULL ? "dptr is NULL" : "bytesize is 0");
    if (rc == FG_OK)
        rc = alloc_new(device, bytes, FG_SEGMENT, &a);
    if (rc == FG_OK)
        *addr = a->addr;
    FG_UNLOCK();
    return rc;
}

fg_rc_t fg_mem_free(uint64_t addr)
{
    FG_LOCK();
    int device = 0;
    fg_rc_t rc = fgi_need_ctx(&device);
    fg_alloc_t *a = rc == FG_OK ? fgi_alloc_find(addr) : NULL;
    if (rc == FG_OK && (a == NULL || a->kind != FG_SEGMENT))
        rc = fgi_violation(FG_INVALID_VALUE, "%#llx is not a live allocation (double free?)", (unsigned long long)addr);
    else if (rc == FG_OK && a->device != device)
        rc = fgi_violation(FG_INVALID_CONTEXT, "%#llx belongs to device %d, device %d is current",
                           (unsigned long long)addr, a->device, device);
    if (rc == FG_OK)
        alloc_drop(a);
    FG_UNLOCK();
    return rc;
}

fg_rc_t fg_mem_info(size_t *free_bytes, size_t *total_bytes)
{
    FG_LOCK();
    int device = 0;
    fg_rc_t rc = fgi_need_ctx(&device);
    if (rc == FG_OK && (free_bytes == NULL || total_bytes == NULL))
        rc = fgi_violation(FG_INVALID_VALUE, "NULL output");
    if (rc == FG_OK) {
        *free_bytes = fg.dev[device].capacity - fg.dev[device].used;
        *total_bytes = fg.dev[device].capacity;
    }
    FG_UNLOCK();
    return rc;
}

/* ---- Stream-ordered pools. ---- */

static fg_pool_t *pool_of(void *pool)
{
    for (int i = 0; i < fg.ndev; i++)
        if (pool == &fg.dev[i].pool)
            return &fg.dev[i].pool;
    return NULL;
}

/* Release free chunks of device until its pool holds at most keep bytes. */
static void pool_release(int device, uint64_t keep)
{
    fg_pool_t *p = &fg.dev[device].pool;
    for (size_t i = 0; i < fg.n_allocs && p->reserved > keep;) {
        fg_alloc_t *a = &fg.allocs[i];
        if (a->device == device && a->kind == FG_ASYNC_FREE) {
            p->reserved -= a->charged;
            alloc_drop(a); /* the last entry moves into i: look at it next */
        } else {
            i++;
        }
    }
}

void fgi_pool_settle(int device)
{
    fg_pool_t *p = &fg.dev[device].pool;
    if (p->reserved > p->threshold)
        pool_release(device, p->threshold);
}

fg_rc_t fg_pool_default(void **pool, int device)
{
    FG_LOCK();
    fg_rc_t rc = pool == NULL ? fgi_violation(FG_INVALID_VALUE, "pool_out is NULL") : fgi_need_device(device);
    if (rc == FG_OK)
        *pool = &fg.dev[device].pool;
    FG_UNLOCK();
    return rc;
}

static uint64_t *attr_slot(fg_pool_t *p, fg_pool_attr_t attr)
{
    switch (attr) {
    case FG_POOL_REUSE_FOLLOW_EVENTS:
    case FG_POOL_REUSE_OPPORTUNISTIC:
    case FG_POOL_REUSE_INTERNAL_DEPS: return &p->reuse[attr - FG_POOL_REUSE_FOLLOW_EVENTS];
    case FG_POOL_RELEASE_THRESHOLD: return &p->threshold;
    case FG_POOL_RESERVED_CURRENT: return &p->reserved;
    case FG_POOL_RESERVED_HIGH: return &p->reserved_high;
    case FG_POOL_USED_CURRENT: return &p->used;
    case FG_POOL_USED_HIGH: return &p->used_high;
    }
    return NULL;
}

fg_rc_t fg_pool_set(void *pool, fg_pool_attr_t attr, uint64_t value)
{
    FG_LOCK();
    fg_pool_t *p = pool_of(pool);
    uint64_t *slot = p ? attr_slot(p, attr) : NULL;
    fg_rc_t rc = fg.initialized ? FG_OK : fgi_violation(FG_NOT_INITIALIZED, "the driver is not initialized");
    if (rc == FG_OK && p == NULL)
        rc = fgi_violation(FG_INVALID_VALUE, "%p is not a memory pool", pool);
    else if (rc == FG_OK && slot == NULL)
        rc = fgi_violation(FG_INVALID_VALUE, "unknown attribute %d", (int)attr);
    else if (rc == FG_OK && (attr == FG_POOL_RESERVED_CURRENT || attr == FG_POOL_USED_CURRENT))
        rc = fgi_violation(FG_INVALID_VALUE, "attribute %d is read-only", (int)attr);
    else if (rc == FG_OK && (attr == FG_POOL_RESERVED_HIGH || attr == FG_POOL_USED_HIGH) && value != 0)
        rc = fgi_violation(FG_INVALID_VALUE, "a high-water mark can only be reset to 0, not %llu",
                           (unsigned long long)value);
    else if (rc == FG_OK && attr <= FG_POOL_REUSE_INTERNAL_DEPS && value > 1)
        rc = fgi_violation(FG_INVALID_VALUE, "reuse flags are 0 or 1, not %llu", (unsigned long long)value);
    if (rc == FG_OK) {
        if (attr == FG_POOL_RESERVED_HIGH)
            p->reserved_high = p->reserved; /* "resets it to ReservedMemCurrent" */
        else if (attr == FG_POOL_USED_HIGH)
            p->used_high = p->used;
        else
            *slot = value;
    }
    FG_UNLOCK();
    return rc;
}

fg_rc_t fg_pool_get(void *pool, fg_pool_attr_t attr, uint64_t *value)
{
    FG_LOCK();
    fg_pool_t *p = pool_of(pool);
    uint64_t *slot = p ? attr_slot(p, attr) : NULL;
    fg_rc_t rc = fg.initialized ? FG_OK : fgi_violation(FG_NOT_INITIALIZED, "the driver is not initialized");
    if (rc == FG_OK && (p == NULL || slot == NULL || value == NULL))
        rc = fgi_violation(FG_INVALID_VALUE, "bad pool %p, attribute %d or NULL value", pool, (int)attr);
    if (rc == FG_OK)
        *value = *slot;
    FG_UNLOCK();
    return rc;
}

/* The core's attribute of a vendor's number, or -1. */
static int attr_of_number(int attr)
{
    return attr >= FG_POOL_REUSE_FOLLOW_EVENTS + 1 && attr <= FG_POOL_USED_HIGH + 1 ? attr - 1 : -1;
}

fg_rc_t fg_pool_set_number(void *pool, int attr, void *value)
{
    int a = attr_of_number(attr);
    if (a < 0 || value == NULL)
        return fg_violation(FG_INVALID_VALUE, "attribute %d, value %p", attr, value);
    uint64_t v = a <= FG_POOL_REUSE_INTERNAL_DEPS ? (uint64_t)(int64_t) * (int *)value : *(uint64_t *)value;
    return fg_pool_set(pool, (fg_pool_attr_t)a, v);
}

fg_rc_t fg_pool_get_number(void *pool, int attr, void *value)
{
    int a = attr_of_number(attr);
    if (a < 0 || value == NULL)
        return fg_violation(FG_INVALID_VALUE, "attribute %d, value %p", attr, value);
    uint64_t v = 0;
    fg_rc_t rc = fg_pool_get(pool, (fg_pool_attr_t)a, &v);
    if (rc == FG_OK && a <= FG_POOL_REUSE_INTERNAL_DEPS)
        *(int *)value = (int)v;
    else if (rc == FG_OK)
        *(uint64_t *)value = v;
    return rc;
}

fg_rc_t fg_pool_trim(void *pool, size_t keep_bytes)
{
    FG_LOCK();
    fg_pool_t *p = pool_of(pool);
    fg_rc_t rc = fg.initialized ? FG_OK : fgi_violation(FG_NOT_INITIALIZED, "the driver is not initialized");
    if (rc == FG_OK && p == NULL)
        rc = fgi_violation(FG_INVALID_VALUE, "%p is not a memory pool", pool);
    if (rc == FG_OK)
        pool_release(p->device, keep_bytes);
    FG_UNLOCK();
    return rc;
}

/* A free chunk usable now from stream s: freed on s, or its free completed. */
static fg_alloc_t *chunk_reuse(int device, size_t need, fg_stream_t *s)
{
    fg_alloc_t *best = NULL;
    for (size_t i = 0; i < fg.n_allocs; i++) {
        fg_alloc_t *a = &fg.allocs[i];
        if (a->device != device || a->kind != FG_ASYNC_FREE || a->charged < need)
            continue;
        if (a->free_stream != s && a->free_stream->completed < a->free_seq)
            continue;
        if (best == NULL || a->charged < best->charged)
            best = a;
    }
    return best;
}

fg_rc_t fg_malloc_async(uint64_t *addr, size_t bytes, uintptr_t stream)
{
    FG_LOCK();
    int device = 0;
    fg_stream_t *s = NULL;
    fg_alloc_t *a = NULL;
    fg_rc_t rc = fgi_need_ctx(&device);
    if (rc == FG_OK && (addr == NULL || bytes == 0))
        rc = fgi_violation(FG_INVALID_VALUE, "%s", addr == NULL ? "dptr is NULL" : "bytesize is 0");
    if (rc == FG_OK && (s = fgi_stream(stream, device)) == NULL)
        rc = FG_INVALID_HANDLE; /* fgi_stream counted it */
    if (rc == FG_OK) {
        fg_pool_t *p = &fg.dev[device].pool;
        a = chunk_reuse(device, fgi_round(bytes, fg.gran), s);
        if (a == NULL && (rc = alloc_new(device, bytes, FG_ASYNC_LIVE, &a)) == FG_OK) {
            p->reserved += a->charged;
            if (p->reserved > p->reserved_high)
                p->reserved_high = p->reserved;
        }
        if (rc == FG_OK) {
            a->kind = FG_ASYNC_LIVE;
            a->size = bytes;
            p->used += fgi_round(bytes, USED_ALIGN);
            if (p->used > p->used_high)
                p->used_high = p->used;
            *addr = a->addr;
        }
    }
    FG_UNLOCK();
    return rc;
}

fg_rc_t fg_free_async(uint64_t addr, uintptr_t stream)
{
    FG_LOCK();
    int device = 0;
    fg_stream_t *s = NULL;
    fg_rc_t rc = fgi_need_ctx(&device);
    fg_alloc_t *a = rc == FG_OK ? fgi_alloc_find(addr) : NULL;
    if (rc == FG_OK && (a == NULL || a->kind != FG_ASYNC_LIVE))
        rc = fgi_violation(FG_INVALID_VALUE, "%#llx is not a live stream-ordered allocation (double free?)",
                           (unsigned long long)addr);
    else if (rc == FG_OK && a->device != device)
        rc = fgi_violation(FG_INVALID_CONTEXT, "%#llx belongs to device %d, device %d is current",
                           (unsigned long long)addr, a->device, device);
    if (rc == FG_OK && (s = fgi_stream(stream, device)) == NULL)
        rc = FG_INVALID_HANDLE;
    if (rc == FG_OK) {
        a->kind = FG_ASYNC_FREE;
        a->free_stream = s;
        a->free_seq = ++s->submitted;
        if (!fg.manual)
            s->completed = s->submitted;
        fg.dev[device].pool.used -= fgi_round(a->size, USED_ALIGN);
    }
    FG_UNLOCK();
    return rc;
}

int fg_pool_attr(int device, int attr, uint64_t *value)
{
    int a = attr_of_number(attr);
    if (a < 0)
        return -1;
    FG_LOCK();
    uint64_t *slot = device >= 0 && device < fg.ndev ? attr_slot(&fg.dev[device].pool, (fg_pool_attr_t)a) : NULL;
    if (slot != NULL && value != NULL)
        *value = *slot;
    FG_UNLOCK();
    return slot != NULL && value != NULL ? 0 : -1;
}

uint64_t fgi_mem_release_all(int device)
{
    uint64_t live = 0;
    for (size_t i = 0; i < fg.n_allocs;) {
        fg_alloc_t *a = &fg.allocs[i];
        if (device >= 0 && a->device != device) {
            i++;
            continue;
        }
        if (a->kind != FG_ASYNC_FREE)
            live++;
        alloc_drop(a);
    }
    return live;
}
