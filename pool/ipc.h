/*
 * ipc.h: sharing blocks with other processes (ipc.c; the model and the rules
 * are api/galloc_ipc.h's). The pool keeps its exports (block, lease slot,
 * cookie) and the blocks of other processes it opened; p->ipc is NULL until
 * the first call, so a pool that never shares pays one test on free's locked
 * path (b->shared) and one on malloc's miss.
 *
 * A block the producer freed while exported stays allocated and in the
 * pointer map, with every export of it marked freed, until its last export
 * ends: then ga_pool_free frees it for real. So check, snapshots and stats
 * see it as allocated, as PyTorch's limbo does.
 *
 * Locking: the locked path (the allocator's lock and every stripe's).
 */
#ifndef GA_POOL_IPC_H
#define GA_POOL_IPC_H

#include <galloc/galloc_backend.h>
#include <galloc/galloc_ipc.h>
#include "pool/types.h"
#include "util/lease.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GA_IPC_MAGIC 0x50494147u /* "GAIP" */
/* 2: a lease slot holds its state and cookie in one word (util/lease.c); a
 * version 1 galloc reads the slot otherwise, so its handles are refused. */
#define GA_IPC_VERSION 2

/* The handle's bytes (native byte order: both ends are on one machine). */
typedef struct ga_ipc_wire {
    uint32_t magic;
    uint16_t version;
    uint8_t kind; /* galloc_ipc_kind_t */
    uint8_t pad0;
    int32_t device;
    int32_t pid;
    uint64_t offset;  /* of the block in the shared range */
    uint64_t size;    /* the block's requested bytes */
    uint64_t range;   /* bytes mapped: the segment, or pages * page */
    uint64_t page;    /* GALLOC_IPC_PAGES: bytes per descriptor */
    uint32_t n_pages; /* GALLOC_IPC_PAGES: descriptors */
    int32_t lease_fd; /* the lease file's descriptor in the producer */
    uint32_t slot;
    uint32_t pad1;
    uint64_t cookie;
    unsigned char driver[GALLOC_BACKEND_IPC_BYTES]; /* GALLOC_IPC_PLAIN: the driver's handle */
} ga_ipc_wire_t;

/* ga_ipc_decode: the wire of a handle, checked; GALLOC_E_FORMAT (recorded in
 * p's sink when p is not NULL) for bytes that are not a handle. */
galloc_status_t ga_ipc_decode(ga_pool_t *p, const galloc_ipc_handle_t *h, ga_ipc_wire_t *w);

/* One export: a block, its lease slot and cookie. */
typedef struct ga_ipc_export {
    ga_block_t *block;
    uint64_t cookie;
    uint32_t slot;
    bool freed; /* the producer freed the block: it waits for this export's end */
} ga_ipc_export_t;

/* A block of another process open here. */
typedef struct ga_ipc_open {
    uintptr_t ptr;           /* the block's address here (what the caller got) */
    uintptr_t base;          /* what the backend mapped: ipc_close's address */
    ga_lease_reader_t lease; /* the hold on its producer's slot */
} ga_ipc_open_t;

typedef struct ga_ipc {
    ga_lease_t lease;
    ga_ipc_export_t *exports;
    size_t n_exports, cap_exports;
    ga_ipc_open_t *opens;
    size_t n_opens, cap_opens;
} ga_ipc_t;

/* The pool's sharing state, made on first use; NULL when out of host memory. */
ga_ipc_t *ga_pool_ipc_state(ga_pool_t *p);

/* The galloc_ipc_* calls, on a pool (impl). */
galloc_status_t ga_pool_ipc_export(void *impl, const void *ptr, galloc_ipc_handle_t *h);
galloc_status_t ga_pool_ipc_send(void *impl, int sock, const galloc_ipc_handle_t *h);
galloc_status_t ga_pool_ipc_recv(void *impl, int sock, galloc_ipc_handle_t *h, void **ptr);
galloc_status_t ga_pool_ipc_open(void *impl, const galloc_ipc_handle_t *h, void **ptr);
galloc_status_t ga_pool_ipc_close(void *impl, void *ptr);
galloc_status_t ga_pool_ipc_revoke(void *impl, const galloc_ipc_handle_t *h);
galloc_status_t ga_pool_ipc_collect(void *impl, size_t *freed);
galloc_status_t ga_pool_ipc_stats(void *impl, galloc_ipc_stats_t *out);

/* ga_pool_free of a block with b->shared: mark its exports freed, then collect. */
galloc_status_t ga_pool_ipc_free(ga_pool_t *p, ga_block_t *b);
/* Collect ended exports (malloc's miss, before the device is asked): the
 * number of blocks freed. */
size_t ga_pool_ipc_reclaim(ga_pool_t *p);
/* Whether a block of private pool pp is exported (a tag that holds one does not sleep). */
bool ga_pool_ipc_pool_shared(const ga_pool_t *p, const ga_private_pool_t *pp);
/* Destroy: close what is open here, drop the lease. */
void ga_pool_ipc_destroy(ga_pool_t *p);

#ifdef __cplusplus
}
#endif
#endif /* GA_POOL_IPC_H */
