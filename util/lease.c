/*
 * lease.c: the lease file of shared blocks (lease.h).
 *
 * A slot's state and its export's cookie share one 64-bit word (the state in
 * the low byte, the cookie's upper 56 bits above it), and every change of
 * state is a compare-and-swap of that word. A reader's move EXPORTED ->
 * OPENED thus expects its own cookie as well as the state: checking the
 * cookie and then swapping the state alone would open another export that
 * took the slot in between (the producer revoking the first export and
 * exporting anew: an ABA). The full cookie stays beside the word, and a
 * reader checks it too before its swap.
 */
#include "util/lease.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/lease_int.h"

/* One slot (16 bytes, the span a reader locks). */
typedef struct slot {
    _Atomic uint64_t word;   /* state | cookie's upper 56 bits; changed only by compare-and-swap */
    _Atomic uint64_t cookie; /* the export's whole cookie, written while the slot is FREE */
} slot_t;

#define STATE_MASK 0xffu /* the word's state byte */

/* The word of a slot in state st holding cookie (a FREE slot's word is 0). */
static uint64_t word_of(uint64_t cookie, uint32_t st)
{
    return (cookie & ~(uint64_t)STATE_MASK) | st;
}

static uint32_t state_of(uint64_t word)
{
    return (uint32_t)(word & STATE_MASK);
}

#define FIRST_SLOTS 256 /* one 4 KiB page */

static slot_t *slot_at(void *base, size_t i)
{
    return (slot_t *)base + i;
}

/* An F_OFD lock request on slot i's bytes. */
static struct flock slot_lock(uint32_t i, short type)
{
    return (struct flock){
        .l_type = type, .l_whence = SEEK_SET, .l_start = (off_t)(i * sizeof(slot_t)), .l_len = (off_t)sizeof(slot_t)};
}

void ga_lease_init(ga_lease_t *l)
{
    *l = (ga_lease_t){.fd = -1};
}

void ga_lease_fini(ga_lease_t *l)
{
    if (l->map != NULL)
        (void)munmap(l->map, l->slots * sizeof(slot_t));
    if (l->fd >= 0)
        (void)close(l->fd);
    ga_lease_init(l);
}

/* Create the file, or double it. */
static int grow(ga_lease_t *l)
{
    size_t n = l->slots ? l->slots * 2 : FIRST_SLOTS;
    if (n > UINT32_MAX / 2)
        return ENOSPC;
    int fd = l->fd;
    if (fd < 0 && (fd = memfd_create("galloc-ipc-lease", MFD_CLOEXEC)) < 0)
        return errno;
    int err = 0;
    void *m = MAP_FAILED;
    if (ftruncate(fd, (off_t)(n * sizeof(slot_t))) != 0)
        err = errno;
    else if (l->map == NULL)
        m = mmap(NULL, n * sizeof(slot_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    else
        m = mremap(l->map, l->slots * sizeof(slot_t), n * sizeof(slot_t), MREMAP_MAYMOVE);
    if (err == 0 && m == MAP_FAILED)
        err = errno;
    if (err != 0) {
        if (l->fd < 0)
            (void)close(fd);
        /* else the file may stay longer than the mapping: its new slots are
         * zero (FREE) and the next grow maps them */
        return err;
    }
    l->fd = fd;
    l->map = m;
    l->slots = n;
    return 0;
}

int ga_lease_take(ga_lease_t *l, uint64_t cookie, uint32_t *slot)
{
    for (;;) {
        for (size_t i = 0; i < l->slots; i++) {
            slot_t *s = slot_at(l->map, i);
            uint64_t want = atomic_load(&s->word);
            if (state_of(want) != GA_LEASE_FREE)
                continue;
            atomic_store(&s->cookie, cookie); /* no reader acts on a FREE slot's cookie */
            if (atomic_compare_exchange_strong(&s->word, &want, word_of(cookie, GA_LEASE_EXPORTED))) {
                *slot = (uint32_t)i;
                return 0;
            }
        }
        int err = grow(l);
        if (err != 0)
            return err;
    }
}

int ga_lease_poll(ga_lease_t *l, uint32_t slot, ga_lease_status_t *out)
{
    if (slot >= l->slots)
        return EINVAL;
    uint32_t st = state_of(atomic_load(&slot_at(l->map, slot)->word));
    if (st == GA_LEASE_EXPORTED) {
        *out = GA_LEASE_WAITING;
        return 0;
    }
    if (st == GA_LEASE_CLOSED) {
        *out = GA_LEASE_ENDED;
        return 0;
    }
    if (st != GA_LEASE_OPENED)
        return EINVAL;
    /* Would a write lock conflict? Only with a reader's shared lock (ours is
     * another open file description, and holds none). */
    struct flock fl = slot_lock(slot, F_WRLCK);
    if (fcntl(l->fd, F_OFD_GETLK, &fl) != 0)
        return errno;
    *out = fl.l_type == F_UNLCK ? GA_LEASE_ENDED : GA_LEASE_READING;
    return 0;
}

int ga_lease_revoke(ga_lease_t *l, uint32_t slot)
{
    if (slot >= l->slots)
        return EINVAL;
    slot_t *s = slot_at(l->map, slot);
    uint64_t want = atomic_load(&s->word);
    /* The swap fails if a reader opened it since the load. */
    return state_of(want) == GA_LEASE_EXPORTED && atomic_compare_exchange_strong(&s->word, &want, 0) ? 0 : EBUSY;
}

void ga_lease_release(ga_lease_t *l, uint32_t slot)
{
    if (slot < l->slots)
        atomic_store(&slot_at(l->map, slot)->word, word_of(0, GA_LEASE_FREE));
}

int ga_lease_attach(const char *path, uint32_t slot, ga_lease_reader_t *r)
{
    int fd = open(path, O_RDWR | O_CLOEXEC); /* not kept across exec; a fork shares it (lease.h) */
    if (fd < 0)
        return errno;
    long pg = sysconf(_SC_PAGESIZE);
    size_t off = (size_t)slot * sizeof(slot_t);
    size_t page_off = off - off % (size_t)pg;
    off_t end = lseek(fd, 0, SEEK_END);
    int err = 0;
    void *page = MAP_FAILED;
    if (end < 0 || (size_t)end < off + sizeof(slot_t))
        err = EINVAL; /* no such slot */
    else if ((page = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)page_off)) == MAP_FAILED)
        err = errno;
    if (err == 0) {
        struct flock fl = slot_lock(slot, F_RDLCK);
        if (fcntl(fd, F_OFD_SETLK, &fl) != 0)
            err = errno;
    }
    if (err != 0) {
        if (page != MAP_FAILED)
            (void)munmap(page, (size_t)pg);
        (void)close(fd); /* drops the lock, if taken */
        return err;
    }
    *r = (ga_lease_reader_t){.fd = fd, .page = page, .at = off - page_off, .slot = slot};
    return 0;
}

static slot_t *reader_slot(const ga_lease_reader_t *r)
{
    return (slot_t *)((char *)r->page + r->at);
}

int ga_lease_check(const ga_lease_reader_t *r, uint64_t cookie)
{
    slot_t *s = reader_slot(r);
    if (atomic_load(&s->word) != word_of(cookie, GA_LEASE_EXPORTED) || atomic_load(&s->cookie) != cookie)
        return EINVAL;
    return 0;
}

int ga_lease_commit(ga_lease_reader_t *r, uint64_t cookie)
{
    uint64_t want = word_of(cookie, GA_LEASE_EXPORTED);
    if (!atomic_compare_exchange_strong(&reader_slot(r)->word, &want, word_of(cookie, GA_LEASE_OPENED)))
        return EINVAL; /* not EXPORTED, or another export's since the check */
    r->cookie = cookie;
    return 0;
}

void ga_lease_detach(ga_lease_reader_t *r)
{
    (void)munmap(r->page, (size_t)sysconf(_SC_PAGESIZE));
    (void)close(r->fd); /* drops the lock, after any change of state */
    *r = (ga_lease_reader_t){.fd = -1};
}

int ga_lease_join(const char *path, uint32_t slot, uint64_t cookie, ga_lease_reader_t *r)
{
    ga_lease_reader_t got;
    int err = ga_lease_attach(path, slot, &got);
    if (err != 0)
        return err;
    /* The lock is taken first: a slot this reader opens is never OPENED and unlocked. */
    if ((err = ga_lease_check(&got, cookie)) != 0 || (err = ga_lease_commit(&got, cookie)) != 0) {
        ga_lease_detach(&got);
        return err;
    }
    *r = got;
    return 0;
}

static void drop(ga_lease_reader_t *r, uint32_t from, uint32_t to)
{
    uint64_t want = word_of(r->cookie, from);
    (void)atomic_compare_exchange_strong(&reader_slot(r)->word, &want, word_of(r->cookie, to));
    ga_lease_detach(r);
}

void ga_lease_unjoin(ga_lease_reader_t *r)
{
    drop(r, GA_LEASE_OPENED, GA_LEASE_EXPORTED);
}

void ga_lease_leave(ga_lease_reader_t *r)
{
    drop(r, GA_LEASE_OPENED, GA_LEASE_CLOSED);
}
