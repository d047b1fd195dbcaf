/*
 * lease.h: who still reads a shared block, across processes and deaths.
 *
 * A producer keeps one lease file (a memfd) of slots, one per export. A
 * slot holds a state and the export's random cookie. Its reader, in another
 * process, opens the file anew (through /proc: a new open file description,
 * so that its lock is its own and not the producer's), takes a shared
 * open-file-description lock (F_OFD_SETLK) on the slot's bytes and moves the
 * slot from EXPORTED to OPENED; closing moves it to CLOSED and drops the
 * lock. The kernel drops the locks of a process that dies, so the producer
 * tells a live reader (OPENED, lock held) from one that closed or died
 * (CLOSED, or OPENED with no lock) with F_OFD_GETLK, without a counter a
 * dead reader can leave behind. The reader takes its lock before it marks
 * the slot OPENED, so OPENED without a lock means the reader is gone.
 *
 * Only these two parties write a slot, the producer under its allocator's
 * lock and the reader through atomic compare-and-swap, so a cookie must
 * match before a reader changes anything. The state and the cookie share one
 * word that each step swaps whole, so a reader's cookie check and its move
 * are one atomic step: a handle whose export was revoked never opens the
 * export that took its slot next (lease.c).
 *
 * A reader's open of the file is O_CLOEXEC: an exec'd program does not
 * inherit it. A fork does: the child shares the open file description and
 * with it the reader's lock, so a slot whose reader died without leaving
 * reads as held (READING) until every child that inherited the descriptor
 * has closed it or exited. The reader's ga_lease_leave ends the slot at once
 * (CLOSED), whatever its children hold.
 *
 * Every call returns 0 or an errno value (EINVAL: a bad slot or cookie, or a
 * state that does not allow the step).
 */
#ifndef GA_UTIL_LEASE_H
#define GA_UTIL_LEASE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A slot's state. */
enum { GA_LEASE_FREE = 0, GA_LEASE_EXPORTED = 1, GA_LEASE_OPENED = 2, GA_LEASE_CLOSED = 3 };

/* What the producer learns of a slot (ga_lease_poll). */
typedef enum ga_lease_status {
    GA_LEASE_WAITING, /* exported, not opened yet */
    GA_LEASE_READING, /* a live reader holds it */
    GA_LEASE_ENDED    /* its reader closed it or died */
} ga_lease_status_t;

/* The producer's lease file. */
typedef struct ga_lease {
    int fd;       /* the memfd, -1 until ga_lease_init */
    void *map;    /* its slots, mapped shared */
    size_t slots; /* slots mapped */
} ga_lease_t;

/* A reader's hold on one slot of another process's lease file. */
typedef struct ga_lease_reader {
    int fd;          /* its own open of the file (O_CLOEXEC; a fork inherits it, and the lock) */
    void *page;      /* the page that holds the slot, mapped shared */
    size_t at;       /* the slot's offset in that page */
    uint32_t slot;   /* the slot held */
    uint64_t cookie; /* the export's, which each later step expects in the slot */
} ga_lease_reader_t;

/* ga_lease_init: an empty lease (no file until the first take). */
void ga_lease_init(ga_lease_t *l);
/* ga_lease_fini: unmap and close (readers still holding slots keep their own open). */
void ga_lease_fini(ga_lease_t *l);
/* ga_lease_take: a free slot set EXPORTED with cookie, creating or growing the file. */
int ga_lease_take(ga_lease_t *l, uint64_t cookie, uint32_t *slot);
/* ga_lease_poll: where slot stands (an errno for a bad slot). */
int ga_lease_poll(ga_lease_t *l, uint32_t slot, ga_lease_status_t *out);
/* ga_lease_revoke: EXPORTED -> FREE; EBUSY once a reader opened it. */
int ga_lease_revoke(ga_lease_t *l, uint32_t slot);
/* ga_lease_release: the slot is FREE again (after ga_lease_poll said ENDED). */
void ga_lease_release(ga_lease_t *l, uint32_t slot);

/* ga_lease_join: open the lease file at path (the producer's, through
 * /proc/<pid>/fd/<n>, or /proc/self/fd/<n> for a received descriptor), lock
 * slot and move it EXPORTED -> OPENED if its cookie matches: EINVAL
 * otherwise (wrong cookie, opened before, revoked or ended). */
int ga_lease_join(const char *path, uint32_t slot, uint64_t cookie, ga_lease_reader_t *r);
/* ga_lease_unjoin: back to EXPORTED and unlocked (the open that followed the
 * join failed: the export can be opened again). */
void ga_lease_unjoin(ga_lease_reader_t *r);
/* ga_lease_leave: OPENED -> CLOSED, unlock, close. */
void ga_lease_leave(ga_lease_reader_t *r);

#ifdef __cplusplus
}
#endif
#endif /* GA_UTIL_LEASE_H */
