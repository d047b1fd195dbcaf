/*
 * lease.c: the lease file of shared blocks (lease.h).
 */
#include "util/lease.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* One slot: its state, changed only by compare-and-swap, and the export's cookie. */
typedef struct slot {
    _Atomic uint32_t state;
    uint32_t pad;
    uint64_t cookie;
} slot_t;

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
            uint32_t want = GA_LEASE_FREE;
            if (atomic_load(&s->state) != GA_LEASE_FREE)
                continue;
            s->cookie = cookie; /* no reader reads a FREE slot's cookie */
            if (atomic_compare_exchange_strong(&s->state, &want, GA_LEASE_EXPORTED)) {
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
    uint32_t st = atomic_load(&slot_at(l->map, slot)->state);
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
    uint32_t want = GA_LEASE_EXPORTED;
    return atomic_compare_exchange_strong(&slot_at(l->map, slot)->state, &want, GA_LEASE_FREE) ? 0 : EBUSY;
}

void ga_lease_release(ga_lease_t *l, uint32_t slot)
{
    if (slot < l->slots)
        atomic_store(&slot_at(l->map, slot)->state, GA_LEASE_FREE);
}

int ga_lease_join(const char *path, uint32_t slot, uint64_t cookie, ga_lease_reader_t *r)
{
    int fd = open(path, O_RDWR | O_CLOEXEC);
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
    slot_t *s = err == 0 ? (slot_t *)((char *)page + (off - page_off)) : NULL;
    uint32_t want = GA_LEASE_EXPORTED;
    /* The cookie is read only while the slot is EXPORTED: the CAS below fails if
     * it was revoked and taken again in between. */
    if (err == 0 && (atomic_load(&s->state) != GA_LEASE_EXPORTED || s->cookie != cookie ||
                     !atomic_compare_exchange_strong(&s->state, &want, GA_LEASE_OPENED)))
        err = EINVAL;
    if (err != 0) {
        if (page != MAP_FAILED)
            (void)munmap(page, (size_t)pg);
        (void)close(fd); /* drops the lock, if taken */
        return err;
    }
    *r = (ga_lease_reader_t){.fd = fd, .page = page, .at = off - page_off, .slot = slot};
    return 0;
}

static void drop(ga_lease_reader_t *r, uint32_t from, uint32_t to)
{
    slot_t *s = (slot_t *)((char *)r->page + r->at);
    uint32_t want = from;
    (void)atomic_compare_exchange_strong(&s->state, &want, to);
    (void)munmap(r->page, (size_t)sysconf(_SC_PAGESIZE));
    (void)close(r->fd); /* drops the lock after the state changed */
    *r = (ga_lease_reader_t){.fd = -1};
}

void ga_lease_unjoin(ga_lease_reader_t *r)
{
    drop(r, GA_LEASE_OPENED, GA_LEASE_EXPORTED);
}

void ga_lease_leave(ga_lease_reader_t *r)
{
    drop(r, GA_LEASE_OPENED, GA_LEASE_CLOSED);
}
