/*
 * allocator_int.h: api/'s private view of an allocator: the object behind
 * galloc_allocator_t, which holds one ops table (allocators/allocator_ops.h)
 * and that implementation's state.
 *
 * Locking: galloc_allocator_t.lock is taken by every public call; ops members
 * run with it held and need no lock of their own.
 */
#ifndef GA_ALLOCATOR_INT_H
#define GA_ALLOCATOR_INT_H

#include <pthread.h>

#include <galloc/galloc_allocator.h>
#include "allocators/allocator_ops.h"
#include "backend/backend.h"
#include "conf/conf.h"
#include "util/err.h"

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

/*
 * The allocator's lock: a futex word that never spins (Drepper's "Futexes Are
 * Tricky", mutex 3). 0 = free, 1 = held, 2 = held and a thread may sleep on it.
 * Uncontended, lock is one compare-and-swap and unlock one exchange, both
 * inline (glibc's pthread_mutex_lock/unlock pair is a call each and dispatches
 * on the mutex type). A contended thread sleeps in the kernel at once instead
 * of spinning: on a 2-core machine shared with other work the holder is often
 * descheduled, and a spinning waiter then burns the core the holder needs
 * (issue 19). The acquire/release atomics carry the happens-before edges, so
 * ThreadSanitizer sees the lock's ordering without knowing it is a lock.
 * Elsewhere than Linux it is a default (non-spinning) pthread mutex.
 */
#if defined(__linux__)
#include <errno.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef struct ga_allocator_lock {
    atomic_int word; /* 0 free, 1 held, 2 held with possible sleepers */
} ga_allocator_lock_t;

static inline int ga_allocator_lock_init(ga_allocator_lock_t *l)
{
    atomic_init(&l->word, 0);
    return 0;
}

static inline void ga_allocator_lock_destroy(ga_allocator_lock_t *l)
{
    (void)l;
}

/* Contended: mark the word 2 (someone may sleep) and sleep until a release.
 * A wait returns early when the word is no longer 2 or on a signal; the loop
 * retries either way. errno is the caller's: galloc never reports through it,
 * so the syscalls' EAGAIN and EINTR are not left behind. */
static __attribute__((noinline, cold, unused)) void ga_allocator_lock_wait(ga_allocator_lock_t *l, int c)
{
    int saved = errno;
    if (c != 2)
        c = atomic_exchange_explicit(&l->word, 2, memory_order_acquire);
    while (c != 0) {
        syscall(SYS_futex, &l->word, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
        c = atomic_exchange_explicit(&l->word, 2, memory_order_acquire);
    }
    errno = saved;
}

/* A release that found a possible sleeper: wake one. */
static __attribute__((noinline, cold, unused)) void ga_allocator_lock_wake(ga_allocator_lock_t *l)
{
    int saved = errno;
    syscall(SYS_futex, &l->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    errno = saved;
}

static inline void ga_allocator_lock(ga_allocator_lock_t *l)
{
    int c = 0;
    if (__builtin_expect(!atomic_compare_exchange_strong_explicit(&l->word, &c, 1, memory_order_acquire,
                                                                  memory_order_relaxed),
                         0))
        ga_allocator_lock_wait(l, c);
}

static inline void ga_allocator_unlock(ga_allocator_lock_t *l)
{
    if (__builtin_expect(atomic_exchange_explicit(&l->word, 0, memory_order_release) == 2, 0))
        ga_allocator_lock_wake(l);
}
#else
typedef struct ga_allocator_lock {
    pthread_mutex_t m; /* default type: sleeps when contended, never spins */
} ga_allocator_lock_t;

static inline int ga_allocator_lock_init(ga_allocator_lock_t *l)
{
    return pthread_mutex_init(&l->m, NULL);
}

static inline void ga_allocator_lock_destroy(ga_allocator_lock_t *l)
{
    pthread_mutex_destroy(&l->m);
}

static inline void ga_allocator_lock(ga_allocator_lock_t *l)
{
    pthread_mutex_lock(&l->m);
}

static inline void ga_allocator_unlock(ga_allocator_lock_t *l)
{
    pthread_mutex_unlock(&l->m);
}
#endif

struct galloc_allocator {
    uint32_t magic;                /* GA_ALLOCATOR_LIVE until destroyed */
    ga_allocator_lock_t lock;      /* serializes every call (below) */
    const ga_allocator_ops_t *ops; /* the implementation */
    void *impl;                    /* its state */
    ga_backend_t backend;          /* the opened device */
    ga_conf_t conf;                /* effective settings */
    ga_err_t err;                  /* last failure, written under lock */
    int device;                    /* device index */
};

#endif /* GA_ALLOCATOR_INT_H */
