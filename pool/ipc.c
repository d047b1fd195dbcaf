/*
 * ipc.c: sharing blocks with other processes (ipc.h, api/galloc_ipc.h).
 *
 * What PyTorch does, and where galloc differs on purpose (docs/integration.md,
 * "Sharing CUDA tensors between processes"):
 *   - a plain segment travels as the driver's IPC handle of the segment's
 *     base and the block's offset, as shareIpcHandle's 'c' handles; the
 *     consumer maps the whole segment (cuIpcOpenMemHandle cannot do less);
 *   - pages of physical memory travel as one POSIX descriptor each, as
 *     ExpandableSegment::share's; PyTorch's consumer fetches them with
 *     pidfd_getfd, galloc's receives them on a Unix socket (SCM_RIGHTS);
 *   - PyTorch counts a sent block's readers in a shared counter that a dead
 *     reader never decrements; galloc's lease (util/lease.h) lets the kernel
 *     end a dead reader's hold.
 */
#include "pool/ipc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "pool/ops.h"
#include "pool/stripe.h"
#include "util/fdpass.h"
#include "util/grow.h"

_Static_assert(sizeof(ga_ipc_wire_t) <= GALLOC_IPC_HANDLE_BYTES, "the handle holds the wire");

galloc_status_t ga_ipc_decode(ga_pool_t *p, const galloc_ipc_handle_t *h, ga_ipc_wire_t *w)
{
    memcpy(w, h->bytes, sizeof(*w));
    if (w->magic != GA_IPC_MAGIC || w->version != GA_IPC_VERSION ||
        (w->kind != GALLOC_IPC_PLAIN && w->kind != GALLOC_IPC_PAGES) || w->size > w->range ||
        w->offset > w->range - w->size ||
        (w->kind == GALLOC_IPC_PAGES &&
         (w->page == 0 || w->n_pages == 0 || w->range / w->page != w->n_pages || w->range % w->page != 0)))
        return ga_fail(p != NULL ? p->err : NULL, GALLOC_E_FORMAT, "not a galloc IPC handle (version %d)",
                       GA_IPC_VERSION);
    return GALLOC_OK;
}

galloc_status_t galloc_ipc_info(const galloc_ipc_handle_t *handle, galloc_ipc_info_t *info)
{
    ga_ipc_wire_t w;
    if (handle == NULL || info == NULL)
        return GALLOC_E_INVAL;
    galloc_status_t st = ga_ipc_decode(NULL, handle, &w);
    if (st != GALLOC_OK)
        return st;
    *info = (galloc_ipc_info_t){.kind = (galloc_ipc_kind_t)w.kind,
                                .device = w.device,
                                .pid = w.pid,
                                .size = w.size,
                                .offset = w.offset,
                                .range = w.range,
                                .pages = w.kind == GALLOC_IPC_PAGES ? w.n_pages : 0};
    return GALLOC_OK;
}

ga_ipc_t *ga_pool_ipc_state(ga_pool_t *p)
{
    if (p->ipc == NULL && (p->ipc = calloc(1, sizeof(*p->ipc))) != NULL)
        ga_lease_init(&p->ipc->lease);
    return p->ipc;
}

static ga_ipc_export_t *find_export(ga_pool_t *p, const ga_ipc_wire_t *w)
{
    if (p->ipc == NULL || w->pid != (int32_t)getpid())
        return NULL;
    for (size_t i = 0; i < p->ipc->n_exports; i++)
        if (p->ipc->exports[i].slot == w->slot && p->ipc->exports[i].cookie == w->cookie)
            return &p->ipc->exports[i];
    return NULL;
}

/* The live export of p that handle h names (its wire in *w), or a failure
 * recorded for call. */
static galloc_status_t own_export(ga_pool_t *p, const galloc_ipc_handle_t *h, const char *call, ga_ipc_wire_t *w,
                                  ga_ipc_export_t **e)
{
    galloc_status_t st = ga_ipc_decode(p, h, w);
    if (st != GALLOC_OK)
        return st;
    if ((*e = find_export(p, w)) == NULL)
        return ga_fail(p->err, GALLOC_E_INVAL, "%s: not a live export of this allocator", call);
    return GALLOC_OK;
}

static bool block_exported(const ga_ipc_t *s, const ga_block_t *b)
{
    for (size_t i = 0; i < s->n_exports; i++)
        if (s->exports[i].block == b)
            return true;
    return false;
}

/* The span a block of seg shares: the segment (plain), or the pages it covers. */
static void share_span(const ga_segment_t *seg, const ga_block_t *b, ga_ipc_wire_t *w)
{
    if (!seg->expandable && !seg->vmm) {
        w->kind = GALLOC_IPC_PLAIN;
        w->offset = b->addr - seg->base;
        w->range = seg->size;
        return;
    }
    /* An expandable segment maps page by page; a tag's plain segment is one
     * mapping of seg->page bytes. */
    size_t page = seg->page;
    uintptr_t first = seg->base + (b->addr - seg->base) / page * page;
    uintptr_t end = seg->base + (b->addr + b->size - seg->base + page - 1) / page * page;
    w->kind = GALLOC_IPC_PAGES;
    w->page = page;
    w->offset = b->addr - first;
    w->range = end - first;
    w->n_pages = (uint32_t)((end - first) / page);
}

galloc_status_t ga_pool_ipc_export(void *impl, const void *ptr, galloc_ipc_handle_t *h)
{
    ga_pool_t *p = impl;
    ga_block_t *b = ga_pool_allocated_block(p, (uintptr_t)ptr);
    ga_ipc_t *s = p->ipc;
    bool freed = false;
    for (size_t i = 0; b != NULL && s != NULL && i < s->n_exports; i++)
        freed |= s->exports[i].block == b && s->exports[i].freed;
    if (b == NULL || freed)
        return ga_fail(p->err, GALLOC_E_NOT_OWNED,
                       "ipc_export: %p is not the start of a live block of this allocator (device %d)", ptr, p->device);
    ga_ipc_wire_t w = {.magic = GA_IPC_MAGIC,
                       .version = GA_IPC_VERSION,
                       .device = p->device,
                       .pid = (int32_t)getpid(),
                       .size = b->requested};
    share_span(b->seg, b, &w);
    char why[256];
    if (w.kind == GALLOC_IPC_PAGES && !GA_BACKEND_HAS(p->backend->ops, export_page))
        return ga_fail(p->err, GALLOC_E_UNSUPPORTED, "ipc_export: the %s backend cannot export mapped pages",
                       p->backend->ops->name);
    if (w.kind == GALLOC_IPC_PLAIN) {
        galloc_status_t st = ga_backend_ipc_export(p->backend, b->seg->base, w.driver);
        if (st != GALLOC_OK)
            return ga_fail(p->err, st, "ipc_export of %p (segment 0x%" PRIxPTR "): %s", ptr, b->seg->base,
                           st == GALLOC_E_UNSUPPORTED && !GA_BACKEND_HAS(p->backend->ops, ipc_export)
                               ? "the backend cannot share segments between processes"
                               : ga_backend_why(p->backend, st, why, sizeof(why)));
    }
    if ((s = ga_pool_ipc_state(p)) == NULL)
        return ga_fail(p->err, GALLOC_E_NOMEM, "ipc_export: out of host memory");
    ga_ipc_export_t *grown = ga_grow(s->exports, &s->cap_exports, s->n_exports, sizeof(*grown), 8);
    if (grown == NULL)
        return ga_fail(p->err, GALLOC_E_NOMEM, "ipc_export: out of host memory");
    s->exports = grown;
    if (getrandom(&w.cookie, sizeof(w.cookie), 0) != (ssize_t)sizeof(w.cookie))
        return ga_fail(p->err, GALLOC_E_IO, "ipc_export: getrandom failed: %s", strerror(errno));
    int err = ga_lease_take(&s->lease, w.cookie, &w.slot);
    if (err != 0)
        return ga_fail(p->err, err == ENOMEM ? GALLOC_E_NOMEM : GALLOC_E_IO,
                       "ipc_export: the lease file (a memfd) failed: %s", strerror(err));
    w.lease_fd = s->lease.fd;
    s->exports[s->n_exports++] = (ga_ipc_export_t){.block = b, .cookie = w.cookie, .slot = w.slot};
    b->shared = true;
    memset(h, 0, sizeof(*h));
    memcpy(h->bytes, &w, sizeof(w));
    return GALLOC_OK;
}

/* End export i: its slot is free, and its block, when no other export keeps
 * it, is the producer's again or, if the producer freed it, freed now. */
static galloc_status_t end_export(ga_pool_t *p, size_t i, size_t *freed)
{
    ga_ipc_t *s = p->ipc;
    ga_ipc_export_t e = s->exports[i];
    ga_lease_release(&s->lease, e.slot);
    s->exports[i] = s->exports[--s->n_exports];
    if (block_exported(s, e.block))
        return GALLOC_OK;
    e.block->shared = false;
    if (!e.freed)
        return GALLOC_OK;
    galloc_status_t st = ga_pool_free(p, (void *)e.block->addr);
    if (st != GALLOC_OK) { /* events could not be recorded (host memory): it waits for the next collect */
        e.block->shared = true;
        e.slot = UINT32_MAX;
        s->exports[s->n_exports++] = e; /* the slot we freed made the room */
        return st;
    }
    ++*freed;
    return GALLOC_OK;
}

static size_t collect(ga_pool_t *p)
{
    size_t freed = 0;
    ga_ipc_t *s = p->ipc;
    for (size_t i = s != NULL ? s->n_exports : 0; i-- > 0;) {
        ga_lease_status_t ls = GA_LEASE_ENDED;
        if (s->exports[i].slot != UINT32_MAX && ga_lease_poll(&s->lease, s->exports[i].slot, &ls) != 0)
            continue; /* cannot tell: keep it */
        if (ls == GA_LEASE_ENDED)
            (void)end_export(p, i, &freed);
    }
    return freed;
}

size_t ga_pool_ipc_reclaim(ga_pool_t *p)
{
    return collect(p);
}

galloc_status_t ga_pool_ipc_collect(void *impl, size_t *freed)
{
    size_t n = collect(impl);
    if (freed != NULL)
        *freed = n;
    return GALLOC_OK;
}

galloc_status_t ga_pool_ipc_free(ga_pool_t *p, ga_block_t *b)
{
    ga_ipc_t *s = p->ipc;
    for (size_t i = 0; i < s->n_exports; i++) {
        if (s->exports[i].block != b)
            continue;
        if (s->exports[i].freed)
            return ga_fail(p->err, GALLOC_E_NOT_OWNED,
                           "invalid device pointer: 0x%" PRIxPTR " (already freed; it waits for a reader in another "
                           "process)",
                           b->addr);
        s->exports[i].freed = true;
    }
    (void)collect(p);
    return GALLOC_OK;
}

bool ga_pool_ipc_pool_shared(const ga_pool_t *p, const ga_private_pool_t *pp)
{
    for (size_t i = 0; p->ipc != NULL && i < p->ipc->n_exports; i++)
        if (p->ipc->exports[i].block->pool->owner == pp)
            return true;
    return false;
}

galloc_status_t ga_pool_ipc_revoke(void *impl, const galloc_ipc_handle_t *h)
{
    ga_pool_t *p = impl;
    ga_ipc_wire_t w;
    ga_ipc_export_t *e;
    galloc_status_t st = own_export(p, h, "ipc_revoke", &w, &e);
    if (st != GALLOC_OK)
        return st;
    if (ga_lease_revoke(&p->ipc->lease, e->slot) != 0)
        return ga_fail(p->err, GALLOC_E_INVAL,
                       "ipc_revoke: a reader has opened it; it ends when the reader closes it or dies");
    ga_lease_release(&p->ipc->lease, e->slot); /* FREE already; end_export frees it again, harmlessly */
    size_t freed = 0;
    return end_export(p, (size_t)(e - p->ipc->exports), &freed);
}

galloc_status_t ga_pool_ipc_stats(void *impl, galloc_ipc_stats_t *out)
{
    ga_pool_t *p = impl;
    (void)collect(p);
    *out = (galloc_ipc_stats_t){0};
    const ga_ipc_t *s = p->ipc;
    for (size_t i = 0; s != NULL && i < s->n_exports; i++) {
        const ga_block_t *b = s->exports[i].block;
        bool first = true; /* count a block once, at its first export */
        for (size_t j = 0; j < i; j++)
            first &= s->exports[j].block != b;
        if (s->exports[i].slot != UINT32_MAX)
            out->exports++;
        if (first && s->exports[i].freed) {
            out->limbo_blocks++;
            out->limbo_bytes += b->size;
        }
    }
    out->opened = s != NULL ? s->n_opens : 0;
    return GALLOC_OK;
}

galloc_status_t ga_pool_ipc_send(void *impl, int sock, const galloc_ipc_handle_t *h)
{
    ga_pool_t *p = impl;
    ga_ipc_wire_t w;
    ga_ipc_export_t *e;
    galloc_status_t st = own_export(p, h, "ipc_send", &w, &e);
    if (st != GALLOC_OK)
        return st;
    size_t n = w.kind == GALLOC_IPC_PAGES ? w.n_pages : 0;
    int *fds = malloc((n + 1) * sizeof(int));
    if (fds == NULL)
        return ga_fail(p->err, GALLOC_E_NOMEM, "ipc_send: out of host memory for %zu descriptors", n + 1);
    fds[0] = p->ipc->lease.fd;
    size_t made = 0;
    uintptr_t first = e->block->addr - w.offset;
    char why[256];
    for (; made < n; made++) {
        st = ga_backend_export_page(p->backend, first + made * w.page, &fds[1 + made]);
        if (st != GALLOC_OK) {
            st = ga_fail(p->err, st, "ipc_send: exporting page %zu of %zu at 0x%" PRIxPTR ": %s", made + 1, n,
                         first + made * w.page, ga_backend_why(p->backend, st, why, sizeof(why)));
            break;
        }
    }
    if (st == GALLOC_OK) {
        int err = ga_fdpass_send(sock, h->bytes, sizeof(h->bytes), fds, n + 1);
        if (err != 0)
            st = ga_fail(p->err, GALLOC_E_IO, "ipc_send: sending on socket %d: %s", sock, strerror(err));
    }
    for (size_t i = 0; i < made; i++)
        (void)close(fds[1 + i]);
    free(fds);
    return st;
}
