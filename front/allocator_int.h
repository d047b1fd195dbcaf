/*
 * allocator_int.h: the front end's private view of an allocator: the object
 * behind galloc_allocator_t, which holds one ops table
 * (allocators/allocator_ops.h) and that implementation's state.
 *
 * Locking: galloc_allocator_t.lock is taken by every public call; ops members
 * run with it held and need no lock of their own, except stripe_malloc,
 * stripe_free and stripe_usable_size (allocators/allocator_ops.h), tried
 * first without it.
 */
#ifndef GA_ALLOCATOR_INT_H
#define GA_ALLOCATOR_INT_H

#include <pthread.h>

#include <galloc/galloc_allocator.h>
#include "allocators/allocator_ops.h"
#include "backend/backend.h"
#include "conf/conf.h"
#include "host/host.h"
#include "util/err.h"
#include "util/lock.h"

/* galloc_allocator.magic: set by create, changed by destroy (front/allocator.c
 * keeps destroyed headers for a while so that stale handles are caught). */
#define GA_ALLOCATOR_LIVE 0x67616c63u /* "galc" */
#define GA_ALLOCATOR_DEAD 0x64656164u /* "dead" */

/* First statement of every public call: a NULL handle is an invalid argument,
 * a destroyed one says so. */
#define GA_LIVE_OR_RETURN(a)                                                                                           \
    do {                                                                                                               \
        if ((a) == NULL)                                                                                               \
            return GALLOC_E_INVAL;                                                                                     \
        if ((a)->magic != GA_ALLOCATOR_LIVE)                                                                           \
            return GALLOC_E_DESTROYED;                                                                                 \
    } while (0)

struct galloc_allocator {
    uint32_t magic;                       /* GA_ALLOCATOR_LIVE until destroyed */
    ga_lock_t lock;                       /* serializes every call (below) */
    const ga_allocator_ops_t *ops;        /* the implementation */
    void *impl;                           /* its state */
    ga_backend_t backend;                 /* the opened device */
    ga_host_t *host;                      /* its pinned host cache (galloc_host.h, front/host.c) */
    ga_conf_t conf;                       /* effective settings */
    ga_err_t err;                         /* last failure, written under lock */
    int device;                           /* device index */
    galloc_oom_rejection_fn rejection_fn; /* galloc_set_oom_rejection_observer's; NULL = none (under lock) */
    void *rejection_ctx;                  /* its context */
};

/* The allocator's lock, and with it the implementation's quiesce: no
 * stripe member runs until ga_front_unlock_all (allocator_ops.h). */
static inline void ga_front_lock_all(galloc_allocator_t *a)
{
    ga_lock(&a->lock);
    if (a->ops->quiesce != NULL)
        a->ops->quiesce(a->impl);
}

static inline void ga_front_unlock_all(galloc_allocator_t *a)
{
    if (a->ops->resume != NULL)
        a->ops->resume(a->impl);
    ga_unlock(&a->lock);
}

/* Run expr under the lock. */
#define LOCKED(a, expr)                                                                                                \
    do {                                                                                                               \
        ga_front_lock_all(a);                                                                                          \
        expr;                                                                                                          \
        ga_front_unlock_all(a);                                                                                        \
    } while (0)

/* A call to an optional ops member, under the lock: GALLOC_E_UNSUPPORTED
 * where the implementation has none. */
#define MEMPOOL_CALL(a, member, ...)                                                                                   \
    do {                                                                                                               \
        GA_LIVE_OR_RETURN(a);                                                                                          \
        if ((a)->ops->member == NULL)                                                                                  \
            return GALLOC_E_UNSUPPORTED;                                                                               \
        galloc_status_t st_;                                                                                           \
        LOCKED(a, st_ = (a)->ops->member((a)->impl, __VA_ARGS__));                                                     \
        return st_;                                                                                                    \
    } while (0)

/* front/host.c: make the allocator's host cache and hand it to the
 * implementation (its attach_host, where it has one); GALLOC_E_NOMEM. */
galloc_status_t ga_front_host_attach(galloc_allocator_t *a);

#endif /* GA_ALLOCATOR_INT_H */
