#ifndef GA_UTIL_LOCK_H
#define GA_UTIL_LOCK_H

#include <pthread.h>
#include <stdbool.h>

/*
 * lock.h: galloc's lock, a futex word (Drepper's "Futexes Are Tricky", mutex
 * 3). 0 = free, 1 = held, 2 = held and a thread may sleep on it. ga_lock
 * never spins; ga_trylock_briefly (below), for a lock held a cache hit's
 * length, spins a bounded number of tries and then gives up.
 * Uncontended, lock is one compare-and-swap and unlock one exchange, both
 * inline (glibc's pthread_mutex_lock/unlock pair is a call each and dispatches
 * on the mutex type). A contended thread sleeps in the kernel at once instead
 * of spinning: on a 2-core machine shared with other work the holder is often
 * descheduled, and a spinning waiter then burns the core the holder needs
 * (Note: per-stream locking, docs/architecture.md). Used for the allocator's
 * lock (front/) and the pool's stripe locks (pool/stripe.h). The acquire/release atomics carry the happens-before edges, so
 * ThreadSanitizer sees the lock's ordering without knowing it is a lock.
 * Elsewhere than Linux it is a default (non-spinning) pthread mutex.
 */
#if defined(__linux__)
#include <errno.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef struct ga_lock {
    atomic_int word; /* 0 free, 1 held, 2 held with possible sleepers */
} ga_lock_t;

static inline int ga_lock_init(ga_lock_t *l)
{
    atomic_init(&l->word, 0);
    return 0;
}

static inline void ga_lock_destroy(ga_lock_t *l)
{
    (void)l;
}

/* Contended: mark the word 2 (someone may sleep) and sleep until a release.
 * A wait returns early when the word is no longer 2 or on a signal; the loop
 * retries either way. errno is the caller's: galloc never reports through it,
 * so the syscalls' EAGAIN and EINTR are not left behind. */
static __attribute__((noinline, cold, unused)) void ga_lock_wait(ga_lock_t *l, int c)
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
static __attribute__((noinline, cold, unused)) void ga_lock_wake(ga_lock_t *l)
{
    int saved = errno;
    syscall(SYS_futex, &l->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    errno = saved;
}

static inline void ga_lock(ga_lock_t *l)
{
    int c = 0;
    if (__builtin_expect(
            !atomic_compare_exchange_strong_explicit(&l->word, &c, 1, memory_order_acquire, memory_order_relaxed), 0))
        ga_lock_wait(l, c);
}

/* Take the lock only if it is free; true when taken. */
static inline bool ga_trylock(ga_lock_t *l)
{
    int c = 0;
    return atomic_compare_exchange_strong_explicit(&l->word, &c, 1, memory_order_acquire, memory_order_relaxed);
}

static inline void ga_unlock(ga_lock_t *l)
{
    if (__builtin_expect(atomic_exchange_explicit(&l->word, 0, memory_order_release) == 2, 0))
        ga_lock_wake(l);
}
#else
typedef struct ga_lock {
    pthread_mutex_t m; /* default type: sleeps when contended, never spins */
} ga_lock_t;

static inline int ga_lock_init(ga_lock_t *l)
{
    return pthread_mutex_init(&l->m, NULL);
}

static inline void ga_lock_destroy(ga_lock_t *l)
{
    pthread_mutex_destroy(&l->m);
}

static inline void ga_lock(ga_lock_t *l)
{
    pthread_mutex_lock(&l->m);
}

static inline bool ga_trylock(ga_lock_t *l)
{
    return pthread_mutex_trylock(&l->m) == 0;
}

static inline void ga_unlock(ga_lock_t *l)
{
    pthread_mutex_unlock(&l->m);
}
#endif

/* A pause between tries of ga_trylock (a hint to the core, nothing else). */
static inline void ga_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* ga_trylock, retried up to `tries` times with a pause between: for a lock
 * whose holders keep it for a cache hit's length (tens of ns), where waiting
 * in the kernel would cost microseconds. Bounded, so a holder that was
 * descheduled costs at most the tries, never a spinning wait. */
static inline bool ga_trylock_briefly(ga_lock_t *l, int tries)
{
    for (int k = 0; k < tries; k++) {
        if (ga_trylock(l))
            return true;
        ga_cpu_relax();
    }
    return false;
}

#endif /* GA_UTIL_LOCK_H */
