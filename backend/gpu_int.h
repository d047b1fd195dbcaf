/*
 * gpu_int.h: the GPU layer's private state, shared by gpu.c (open, close,
 * segments, messages), gpu_vmm.c (virtual memory), gpu_stream.c (events,
 * synchronization, the stream-ordered pool), gpu_host.c, gpu_peer.c,
 * gpu_ipc.c (memory shared between processes) and gpu_graph.c (stream capture
 * graphs, which hold no state here). Only backend/gpu*.c include it.
 *
 * Locking: none; the allocator's lock is held for every call into a state.
 * Invariants: every driver resource the state holds is in exactly one of
 * segs, asyncs, events, hosts, registered, resv[].maps, orphans or imports (another
 * process's memory opened here: an ipc_open mapping, or import_pages'
 * reservation with its handles and mappings), so close can release it;
 * resv[i].maps is sorted by address and its entries never overlap.
 */
#ifndef GA_BACKEND_GPU_INT_H
#define GA_BACKEND_GPU_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/gpu.h"
#include "util/addrmap.h"

#define GA_GPU_MAGIC 0x47505531u /* "GPU1": rejects a state that is not ours */

/* An entry of segs, asyncs, events and hosts (util/addrmap.h). Their reserve runs
 * before the driver call that creates the resource, so recording it after a
 * successful call cannot fail (a failed call changes nothing). */
typedef struct ga_gpu_entry {
    uintptr_t key;  /* a device address or an event handle */
    uint64_t value; /* segs, hosts: bytes; asyncs: the stream; events: unused */
} ga_gpu_entry_t;

/* One map call: a physical handle mapped over [addr, addr + bytes). */
typedef struct ga_gpu_mapping {
    uintptr_t addr;  /* start, granularity aligned */
    size_t bytes;    /* the size map was given */
    uint64_t handle; /* the physical allocation behind it */
} ga_gpu_mapping_t;

/* A va_reserve range and what is mapped in it. */
typedef struct ga_gpu_resv {
    uintptr_t base;         /* start, as the driver returned it */
    size_t bytes;           /* size reserved (a multiple of the granularity) */
    ga_gpu_mapping_t *maps; /* live mappings, by address */
    size_t n_maps, cap_maps;
} ga_gpu_resv_t;

/* A device given access to this state's memory (enable_peer_access). */
typedef struct ga_gpu_peer {
    int device;    /* its ordinal */
    uintptr_t ctx; /* its primary context, retained until close (0: not yet) */
    bool linked;   /* the driver's peer access from its context to ours is on (plain segments) */
    bool active;   /* every mapping has its access and every later map grants it */
} ga_gpu_peer_t;

/* A driver resource whose release failed on an error path: the pool believes
 * it gone, so the state releases it later (before the next map, and at close). */
typedef struct ga_gpu_orphan {
    uintptr_t addr;  /* mapped range still to unmap (0: only the handle is left) */
    size_t bytes;    /* its size */
    uint64_t handle; /* physical handle still to release */
} ga_gpu_orphan_t;

/* Another process's memory mapped here (gpu_ipc.c): what ipc_open or
 * import_pages gave, and how much of it is still held, so that a release
 * the driver refused halfway is finished by a retry or by close. */
typedef struct ga_gpu_import {
    uintptr_t addr;    /* the address returned: the key of ipc_close */
    size_t bytes;      /* ipc_open: the caller's size; import_pages: n * page, reserved */
    size_t page;       /* import_pages: bytes per page; 0 for an ipc_open */
    uint64_t *handles; /* import_pages: page i's imported handle, 0 once released (or never imported) */
    size_t n;          /* import_pages: pages */
    size_t n_mapped;   /* import_pages: pages [0, n_mapped) are mapped */
    bool held;         /* ipc_open: the mapping is open; import_pages: the range is reserved */
    bool dead;         /* a failed import_pages' leftovers: unknown to callers, close releases them */
} ga_gpu_import_t;

typedef struct ga_gpu {
    uint32_t magic;           /* GA_GPU_MAGIC while open */
    const ga_gpu_vendor_t *v; /* the vendor's primitives */
    void *vs;                 /* the vendor's state (library, device, pool) */
    uint32_t features;        /* GA_GPU_F_* the library provides */
    int device;               /* device ordinal */
    uintptr_t ctx;            /* the device's primary context, retained until close */
    size_t granularity;       /* VMM page size, 0 until first queried */
    bool pool_ready;          /* default pool found and its release threshold raised */
    ga_addrmap_t segs;        /* segment_alloc ranges: address -> bytes (ga_gpu_entry_t) */
    ga_addrmap_t asyncs;      /* malloc_async ranges: address -> stream (ga_gpu_entry_t) */
    ga_addrmap_t events;      /* live events: handle -> 0 (ga_gpu_entry_t) */
    ga_addrmap_t hosts;       /* live host_alloc blocks: address -> bytes (ga_gpu_entry_t) */
    ga_addrmap_t registered;  /* live host_register ranges: address -> bytes (ga_gpu_entry_t) */
    ga_gpu_resv_t *resv;      /* live reservations, unordered (one per expandable segment) */
    size_t n_resv, cap_resv;
    ga_gpu_orphan_t *orphans; /* resources left by failed error paths */
    size_t n_orphans, cap_orphans;
    ga_gpu_peer_t *peers; /* devices being or given access, in the order asked */
    size_t n_peers, cap_peers;
    int *active_peers; /* ordinals of the active peers, for map's set_access */
    size_t n_active;
    ga_gpu_import_t *imports; /* other processes' memory opened here (gpu_ipc.c) */
    size_t n_imports, cap_imports;
    char msg[512]; /* the last failure, for error_string */
} ga_gpu_t;

/* Record a failure of the state's own (a contract violation: GALLOC_E_INVAL,
 * host memory: GALLOC_E_NOMEM, a missing feature); returns st. */
__attribute__((format(printf, 3, 4))) galloc_status_t ga_gpu_fail(ga_gpu_t *g, galloc_status_t st, const char *fmt,
                                                                  ...);
/* Record a driver failure: "<what>: <function> failed: <name>: <text>";
 * returns the vendor's status for rc. */
__attribute__((format(printf, 4, 5))) galloc_status_t ga_gpu_driver_fail(ga_gpu_t *g, ga_gpu_fn_t fn, ga_gpu_rc_t rc,
                                                                         const char *fmt, ...);

/* Make the state's context current for a sequence of primitives and restore
 * the caller's afterwards (the context is per thread, and galloc may be called
 * from any thread). A failure to switch is GALLOC_E_DEVICE, recorded. */
galloc_status_t ga_gpu_enter(ga_gpu_t *g, const char *what, uintptr_t *prev);
void ga_gpu_leave(ga_gpu_t *g, uintptr_t prev);

/* Grow an array of elem-sized entries so that `need` fit (cold path). */
bool ga_gpu_grow(void **array, size_t *cap, size_t need, size_t elem);

/* gpu_vmm.c: VMM teardown at close (context current). */
void ga_gpu_vmm_close(ga_gpu_t *g);
/* gpu_stream.c: events and stream-ordered allocations left at close (context current). */
void ga_gpu_stream_close(ga_gpu_t *g);
/* gpu_host.c: pinned host blocks and registered ranges left at close (context current). */
void ga_gpu_host_close(ga_gpu_t *g);
/* gpu_ipc.c: other processes' memory left at close (context current). */
void ga_gpu_ipc_close_all(ga_gpu_t *g);
/* gpu_ipc.c: give device peer read-write access to every imported page
 * (context current); GALLOC_OK or the first refusal, recorded. */
galloc_status_t ga_gpu_ipc_grant(ga_gpu_t *g, int peer);
/* gpu_vmm.c: the live mapping starting exactly at addr, or NULL. */
const ga_gpu_mapping_t *ga_gpu_vmm_mapping_at(ga_gpu_t *g, uintptr_t addr);
/* gpu_peer.c: release the peers' contexts (at close, after everything else). */
void ga_gpu_peer_close(ga_gpu_t *g);
/* gpu_vmm.c: give device peer read-write access to every live mapping (context
 * current); GALLOC_OK or the first refusal, recorded. */
galloc_status_t ga_gpu_vmm_grant(ga_gpu_t *g, int peer);

/* Close cannot report failure and whatever it leaves stays allocated for the
 * process's lifetime, so each release there is tried twice: one transient
 * refusal (or one injected fault) does not leak. */
#define GA_GPU_TWICE(call) ((call) == 0 || (call) == 0)

/* Record key -> value in one of segs, asyncs, events, hosts (room reserved). A key
 * the driver hands out again while live keeps one entry, with the new value. */
static inline void ga_gpu_put(ga_addrmap_t *m, uintptr_t key, uint64_t value)
{
    if (key == 0)
        return; /* never a live address or handle: nothing to record */
    ga_gpu_entry_t *e = ga_addrmap_find(m, key);
    if (e == NULL)
        e = ga_addrmap_insert(m, key);
    e->value = value;
}

/* Forget key if it is recorded. */
static inline void ga_gpu_del(ga_addrmap_t *m, uintptr_t key)
{
    void *e = ga_addrmap_find(m, key);
    if (e != NULL)
        ga_addrmap_remove(m, e);
}

#endif /* GA_BACKEND_GPU_INT_H */
