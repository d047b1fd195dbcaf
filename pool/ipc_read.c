/*
 * ipc_read.c: the consumer's side of sharing (ipc.h): opening a block of
 * another process, through its handle's bytes (galloc_ipc_open) or from a
 * Unix socket with its descriptors (galloc_ipc_recv), and closing it.
 *
 * An open first joins the producer's lease (the reader's hold, util/lease.h),
 * then maps the memory; a failed map leaves the lease as it was, so the same
 * handle can be opened again.
 */
#include "pool/ipc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pool/ops.h"
#include "util/fdpass.h"
#include "util/grow.h"

/* Open w: lease at lease_path, pages (GALLOC_IPC_PAGES) from fds. */
static galloc_status_t open_wire(ga_pool_t *p, const ga_ipc_wire_t *w, const char *lease_path, const int *fds,
                                 void **ptr)
{
    ga_ipc_t *s = ga_pool_ipc_state(p);
    ga_ipc_open_t *grown = s != NULL ? ga_grow(s->opens, &s->cap_opens, s->n_opens, sizeof(*grown), 8) : NULL;
    if (grown == NULL)
        return ga_fail(p->err, GALLOC_E_NOMEM, "ipc_open: out of host memory");
    s->opens = grown;
    ga_lease_reader_t lease;
    int err = ga_lease_join(lease_path, w->slot, w->cookie, &lease);
    if (err != 0)
        return ga_fail(p->err, GALLOC_E_INVAL,
                       "ipc_open: the export (process %d, slot %" PRIu32 ") cannot be opened: %s", (int)w->pid, w->slot,
                       err == EINVAL   ? "opened before, revoked or ended, or not this handle's"
                       : err == ENOENT ? "its producer is gone"
                                       : strerror(err));
    uintptr_t base = 0;
    galloc_status_t st = w->kind == GALLOC_IPC_PLAIN
                             ? ga_backend_ipc_open(p->backend, w->driver, w->range, &base)
                             : ga_backend_import_pages(p->backend, fds, w->n_pages, w->page, &base);
    if (st != GALLOC_OK) {
        ga_lease_unjoin(&lease);
        char why[256];
        return ga_fail(p->err, st, "ipc_open of %" PRIu64 " bytes from process %d: %s", w->range, (int)w->pid,
                       ga_backend_why(p->backend, st, why, sizeof(why)));
    }
    s->opens[s->n_opens++] = (ga_ipc_open_t){.ptr = base + w->offset, .base = base, .lease = lease};
    *ptr = (void *)(base + w->offset);
    return GALLOC_OK;
}

galloc_status_t ga_pool_ipc_open(void *impl, const galloc_ipc_handle_t *h, void **ptr)
{
    ga_pool_t *p = impl;
    ga_ipc_wire_t w;
    galloc_status_t st = ga_ipc_decode(p, h, &w);
    if (st != GALLOC_OK)
        return st;
    if (w.kind == GALLOC_IPC_PAGES)
        return ga_fail(p->err, GALLOC_E_UNSUPPORTED,
                       "ipc_open: a block of mapped pages (expandable segment or tag) needs its descriptors: "
                       "send it with galloc_ipc_send and open it with galloc_ipc_recv");
    if (w.pid == (int32_t)getpid())
        return ga_fail(p->err, GALLOC_E_INVAL, "ipc_open: the handle is this process's own export");
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)w.pid, (int)w.lease_fd);
    return open_wire(p, &w, path, NULL, ptr);
}

/* Receive the rest of the descriptors after the first batch. */
static int recv_rest(int sock, int *fds, size_t have, size_t want)
{
    while (have < want) {
        size_t n = 0;
        int err = ga_fdpass_recv_fds(sock, fds + have, &n);
        if (err != 0)
            return err;
        if (n == 0 || have + n > want) {
            for (size_t i = 0; i < n; i++)
                (void)close(fds[have + i]);
            return EPROTO;
        }
        have += n;
    }
    return 0;
}

galloc_status_t ga_pool_ipc_recv(void *impl, int sock, galloc_ipc_handle_t *out, void **ptr)
{
    ga_pool_t *p = impl;
    galloc_ipc_handle_t h;
    int first[GA_FDPASS_BATCH];
    size_t n = 0;
    int err = ga_fdpass_recv_msg(sock, h.bytes, sizeof(h.bytes), first, &n);
    if (err != 0)
        return ga_fail(p->err, GALLOC_E_IO, "ipc_recv: receiving on socket %d: %s", sock, strerror(err));
    ga_ipc_wire_t w;
    galloc_status_t st = ga_ipc_decode(p, &h, &w);
    size_t want = st == GALLOC_OK ? 1 + (w.kind == GALLOC_IPC_PAGES ? w.n_pages : 0) : n;
    int *fds = st == GALLOC_OK ? malloc(want * sizeof(int)) : NULL;
    if (st == GALLOC_OK && fds == NULL)
        st = ga_fail(p->err, GALLOC_E_NOMEM, "ipc_recv: out of host memory for %zu descriptors", want);
    if (st != GALLOC_OK) {
        for (size_t i = 0; i < n; i++)
            (void)close(first[i]);
        return st;
    }
    memcpy(fds, first, (n < want ? n : want) * sizeof(int));
    for (size_t i = want; i < n; i++)
        (void)close(first[i]);
    size_t have = n < want ? n : want;
    err = n == 0 ? EPROTO : recv_rest(sock, fds, have, want);
    if (err == 0)
        have = want;
    else
        st = ga_fail(p->err, GALLOC_E_IO, "ipc_recv: the descriptors of the handle on socket %d: %s", sock,
                     strerror(err));
    if (st == GALLOC_OK) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fds[0]);
        st = open_wire(p, &w, path, fds + 1, ptr);
    }
    for (size_t i = 0; i < have; i++)
        (void)close(fds[i]);
    free(fds);
    if (st == GALLOC_OK && out != NULL)
        *out = h;
    return st;
}

galloc_status_t ga_pool_ipc_close(void *impl, void *ptr)
{
    ga_pool_t *p = impl;
    ga_ipc_t *s = p->ipc;
    for (size_t i = 0; s != NULL && i < s->n_opens; i++) {
        ga_ipc_open_t *o = &s->opens[i];
        if (o->ptr != (uintptr_t)ptr)
            continue;
        galloc_status_t st = ga_backend_ipc_close(p->backend, o->base);
        if (st != GALLOC_OK) {
            char why[256];
            return ga_fail(p->err, st, "ipc_close of %p: %s (still open)", ptr,
                           ga_backend_why(p->backend, st, why, sizeof(why)));
        }
        ga_lease_leave(&o->lease);
        *o = s->opens[--s->n_opens];
        return GALLOC_OK;
    }
    return ga_fail(p->err, GALLOC_E_NOT_OWNED, "ipc_close: %p is not a block of another process open here", ptr);
}

void ga_pool_ipc_destroy(ga_pool_t *p)
{
    ga_ipc_t *s = p->ipc;
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n_opens; i++) {
        (void)ga_backend_ipc_close(p->backend, s->opens[i].base);
        ga_lease_leave(&s->opens[i].lease);
    }
    ga_lease_fini(&s->lease);
    free(s->opens);
    free(s->exports);
    free(s);
    p->ipc = NULL;
}
