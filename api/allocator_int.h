/*
 * allocator_int.h: api/'s private view of an allocator: the allocator ops
 * table (the vtable behind galloc_malloc & co.) and the object itself.
 *
 * Locking: galloc_allocator_t.lock is taken by every public call; ops members
 * run with it held and need no lock of their own.
 */
#ifndef GA_ALLOCATOR_INT_H
#define GA_ALLOCATOR_INT_H

#include <pthread.h>

#include <galloc/galloc_allocator.h>
#include <galloc/galloc_mempool.h>
#include <galloc/galloc_trace.h>
#include "backend/backend.h"
#include "conf/conf.h"
#include "pool/pool.h"
#include "util/err.h"

/* One allocator implementation: today the native caching pool; the
 * stream-ordered driver pool and user-supplied allocators plug in here. */
typedef struct ga_allocator_ops {
    const char *name; /* "native", ... */
    galloc_status_t (*create)(const ga_conf_t *conf, ga_backend_t *backend, int device, ga_err_t *err, void **impl);
    void (*destroy)(void *impl);
    galloc_status_t (*malloc)(void *impl, size_t size, galloc_stream_t stream, void **ptr);
    galloc_status_t (*free)(void *impl, void *ptr);
    galloc_status_t (*empty_cache)(void *impl);
    galloc_status_t (*record_stream)(void *impl, void *ptr, galloc_stream_t stream);
    galloc_status_t (*stream_synchronize)(void *impl, galloc_stream_t stream);
    galloc_status_t (*set_fraction)(void *impl, double fraction);
    galloc_status_t (*memory_info)(void *impl, size_t *free_bytes, size_t *total_bytes);
    void (*stats)(void *impl, galloc_stats_t *out);
    void (*reset_peak)(void *impl);
    void (*reset_accumulated)(void *impl);
    galloc_status_t (*check)(void *impl);
    void (*fragmentation)(void *impl, galloc_fragmentation_t *out); /* NULL: no pool */
    /* History and snapshots; NULL where the implementation has none. */
    galloc_status_t (*record_history)(void *impl, const galloc_history_options_t *opt);
    galloc_status_t (*snapshot)(void *impl, const char *path, galloc_snapshot_format_t format);
    galloc_status_t (*annotate)(void *impl, const char *stage, const char *name);
    void (*set_frames)(void *impl, galloc_frames_fn fn, void *ctx);
    /* Private pools; NULL where the implementation has none. */
    galloc_status_t (*mempool_create)(void *impl, galloc_mempool_id_t *id);
    galloc_status_t (*mempool_begin)(void *impl, galloc_mempool_id_t id, galloc_route_t route, galloc_stream_t s);
    galloc_status_t (*mempool_end)(void *impl, galloc_mempool_id_t id);
    galloc_status_t (*mempool_release)(void *impl, galloc_mempool_id_t id);
} ga_allocator_ops_t;

extern const ga_allocator_ops_t ga_allocator_native;
extern const ga_allocator_ops_t ga_allocator_async; /* backend:cudaMallocAsync (api/async.c) */
extern const ga_allocator_ops_t ga_allocator_user;  /* galloc_allocator_create_user (api/user.c); create is NULL */

/* galloc_allocator.magic: set by create, changed by destroy (api/allocator.c
 * keeps destroyed headers for a while so that stale handles are caught). */
#define GA_ALLOCATOR_LIVE 0x67616c63u /* "galc" */
#define GA_ALLOCATOR_DEAD 0x64656164u /* "dead" */

/* First statement of every public call: a NULL handle is an invalid argument,
 * a destroyed one says so. */
#define GA_LIVE_OR_RETURN(a)                                                                       \
    do {                                                                                           \
        if ((a) == NULL)                                                                           \
            return GALLOC_E_INVAL;                                                                 \
        if ((a)->magic != GA_ALLOCATOR_LIVE)                                                       \
            return GALLOC_E_DESTROYED;                                                             \
    } while (0)

struct galloc_allocator {
    uint32_t magic;                /* GA_ALLOCATOR_LIVE until destroyed */
    pthread_mutex_t lock;          /* serializes every call */
    const ga_allocator_ops_t *ops; /* the implementation */
    void *impl;                    /* its state */
    ga_backend_t backend;          /* the opened device */
    ga_conf_t conf;                /* effective settings */
    ga_err_t err;                  /* last failure, written under lock */
    int device;                    /* device index */
};

/* The allocator's lock. Its critical sections are short (tens of ns on a
 * cache hit), so a waiter does better spinning briefly than sleeping in the
 * kernel: glibc's adaptive mutex spins first, then sleeps. Two threads
 * hammering one allocator (bench/, pair/fixed_4KiB/threads:2) went from 1.58
 * to 0.69 us of CPU per malloc+free pair; one thread is unchanged. */
static inline int ga_allocator_lock_init(pthread_mutex_t *m)
{
    pthread_mutexattr_t attr;
    if (pthread_mutexattr_init(&attr) != 0)
        return -1;
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
    (void)pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
#endif
    int rc = pthread_mutex_init(m, &attr);
    pthread_mutexattr_destroy(&attr);
    return rc;
}

#endif /* GA_ALLOCATOR_INT_H */
