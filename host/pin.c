/*
 * pin.c: where the host cache's memory comes from and goes back to: the
 * driver calls of a miss and of a give-back, the reserve segment, and their
 * timing (host_alloc_time, host_free_time).
 *
 * PyTorch reference (aten/src/ATen/cuda/CachingHostAllocator.cpp,
 * CUDACachingHostAllocatorImpl; facts restated, no code copied):
 * - allocate_host_memory tries the reserve segment first, then the slow
 *   path; the reserve segment (get_reserve_segment) is made by the slow path
 *   the first time allocate_host_memory runs with
 *   pinned_reserve_segment_size_mb > 0, of that many MiB, and carves
 *   requests rounded up to 4 KiB from its start (PinnedReserveSegment::
 *   allocate, CachingHostAllocator.h), returning nothing when the rest does
 *   not fit; free_block skips a block the reserve owns, so its bytes never
 *   come back;
 * - allocate_host_memory_slowpath: cudaHostAlloc(size, cudaHostAllocDefault),
 *   or with pinned_use_cuda_host_register malloc(size), one written byte per
 *   4 KiB page from each slice's first whole page (mapPagesForRegister;
 *   pinned_num_register_threads > 1 and size >= 4 KiB x threads: the
 *   threads fault one contiguous slice each, the last slice taking the
 *   remainder) and one cudaHostRegister of the whole block on the calling
 *   thread; the elapsed microseconds (steady clock, truncated) go to
 *   host_alloc_time;
 * - free_block_slowpath: cudaHostUnregister + free, or cudaFreeHost, timed
 *   into host_free_time.
 * galloc differs in two places, on purpose: the faulting threads are
 * started for the call and joined (PyTorch keeps a pool of 128 threads for
 * the process; a library should leave no idle threads), and a thread that
 * cannot be started faults its slice on the calling thread; and the reserve
 * segment is given back at destroy (the allocator ends; PyTorch's lives as
 * long as the process).
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "host/host_int.h"
#include "stats/stats.h"

#define PAGE ((uintptr_t)4096)

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* One slice of mapPagesForRegister's split: [ptr + size * i / n, + size / n),
 * the last to the end. */
typedef struct slice {
    char *ptr;
    size_t size;
    size_t i, n;
} slice_t;

static void fault_slice(const slice_t *s)
{
    uintptr_t base = (uintptr_t)s->ptr;
    uintptr_t start = base + (uintptr_t)((unsigned __int128)s->size * s->i / s->n);
    uintptr_t end = s->i == s->n - 1 ? base + s->size : start + s->size / s->n;
    for (uintptr_t p = (start + PAGE - 1) & ~(PAGE - 1); p < end; p += PAGE)
        *(volatile char *)p = 0;
}

static void *fault_thread(void *arg)
{
    fault_slice(arg);
    return NULL;
}

/* Fault every page of a fresh malloc'd block in, over `threads` threads when
 * the block has at least a page for each. */
static void fault_pages(char *ptr, size_t size, uint32_t threads)
{
    enum { MAX_THREADS = 128 }; /* pinned_num_register_threads' ceiling (conf) */
    size_t n = threads > 1 && size / PAGE >= threads ? threads : 1;
    if (n > MAX_THREADS)
        n = MAX_THREADS;
    slice_t slices[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    bool started[MAX_THREADS] = {false};
    for (size_t i = 0; i < n; i++)
        slices[i] = (slice_t){.ptr = ptr, .size = size, .i = i, .n = n};
    for (size_t i = 1; i < n; i++)
        started[i] = pthread_create(&tid[i], NULL, fault_thread, &slices[i]) == 0;
    fault_slice(&slices[0]);
    for (size_t i = 1; i < n; i++) {
        if (started[i])
            pthread_join(tid[i], NULL);
        else
            fault_slice(&slices[i]);
    }
}

/* The slow path: bytes of new pinned memory, timed. */
static galloc_status_t slowpath(ga_host_t *h, size_t bytes, void **ptr, ga_host_kind_t *kind)
{
    char why[256];
    galloc_status_t st;
    int64_t start = now_ns();
    if (h->use_register) {
        if (!ga_backend_has_host_register(h->backend))
            return ga_fail(h->err, GALLOC_E_UNSUPPORTED,
                           "host_malloc: pinned_use_cuda_host_register:True, but device backend \"%s\" cannot "
                           "register host memory",
                           h->backend->ops->name);
        char *p = malloc(bytes);
        if (p == NULL)
            return ga_fail(h->err, GALLOC_E_NOMEM, "host_malloc: malloc of %zu bytes to register failed", bytes);
        fault_pages(p, bytes, h->register_threads);
        st = ga_backend_host_register(h->backend, p, bytes);
        if (st != GALLOC_OK) {
            ga_backend_why(h->backend, st, why, sizeof(why));
            free(p);
            return ga_fail(h->err, st, "host_malloc: registering %zu bytes of host memory failed: %s", bytes, why);
        }
        *ptr = p;
        *kind = GA_HOST_REGISTERED;
    } else {
        void *p = NULL;
        st = ga_backend_host_alloc(h->backend, bytes, &p);
        if (st != GALLOC_OK)
            return ga_fail(h->err, st, "host_malloc: pinning %zu bytes of host memory failed: %s", bytes,
                           ga_backend_why(h->backend, st, why, sizeof(why)));
        *ptr = p;
        *kind = GA_HOST_PINNED;
    }
    ga_duration_increase(&h->host_alloc_time, (now_ns() - start) / 1000);
    return GALLOC_OK;
}

galloc_status_t ga_host_pin(ga_host_t *h, size_t bytes, void **ptr, ga_host_kind_t *kind)
{
    if (h->reserve_size > 0) {
        if (h->reserve == NULL) {
            ga_host_kind_t k;
            galloc_status_t st = slowpath(h, h->reserve_size, &h->reserve, &k);
            if (st != GALLOC_OK)
                return st;
            h->reserve_kind = (uint8_t)k;
            h->reserve_used = 0;
        }
        size_t step = bytes <= SIZE_MAX - (GA_HOST_RESERVE_STEP - 1)
                          ? (bytes + GA_HOST_RESERVE_STEP - 1) & ~(GA_HOST_RESERVE_STEP - 1)
                          : SIZE_MAX;
        if (step <= h->reserve_size - h->reserve_used) {
            *ptr = (char *)h->reserve + h->reserve_used;
            h->reserve_used += step;
            *kind = GA_HOST_CARVED;
            return GALLOC_OK;
        }
    }
    return slowpath(h, bytes, ptr, kind);
}

galloc_status_t ga_host_unpin(ga_host_t *h, void *ptr, size_t bytes, ga_host_kind_t kind)
{
    if (kind == GA_HOST_CARVED)
        return GALLOC_OK; /* the reserve never gives a piece back */
    char why[256];
    int64_t start = now_ns();
    galloc_status_t st = kind == GA_HOST_REGISTERED ? ga_backend_host_unregister(h->backend, ptr, bytes)
                                                    : ga_backend_host_free(h->backend, ptr, bytes);
    if (st != GALLOC_OK)
        return ga_fail(h->err, st, "host_free: giving back %zu bytes of pinned host memory at %p failed: %s", bytes,
                       ptr, ga_backend_why(h->backend, st, why, sizeof(why)));
    if (kind == GA_HOST_REGISTERED)
        free(ptr);
    ga_duration_increase(&h->host_free_time, (now_ns() - start) / 1000);
    return GALLOC_OK;
}

void ga_host_pin_close(ga_host_t *h)
{
    if (h->reserve == NULL)
        return;
    /* Destroy cannot report: a refused give-back is tried once more, then left. */
    ga_host_kind_t k = (ga_host_kind_t)h->reserve_kind;
    if (ga_host_unpin(h, h->reserve, h->reserve_size, k) != GALLOC_OK)
        (void)ga_host_unpin(h, h->reserve, h->reserve_size, k);
    h->reserve = NULL;
}
