/*
 * galloc_hooks.h: device-memory hooks for embedders. A hook registered on an
 * allocator is told, in order and from the thread whose galloc call caused
 * it, of every range of device memory that appears (a segment allocated, a
 * page mapped into an expandable segment) and disappears (a segment freed,
 * a page unmapped), and of every out-of-memory failure: what PyTorch's
 * attachAllocatorTraceTracker and attachOutOfMemoryObserver give NCCL's
 * buffer registration, symmetric-memory and RDMA libraries
 * (c10/cuda/CUDACachingAllocator.h; docs/hooks.md says where galloc follows
 * PyTorch and where it differs on purpose).
 *
 * The ledger. ALLOC and MAP add a range of device memory; FREE and UNMAP
 * remove one. Every removal names exactly the address and size of one
 * earlier addition that is still present, so a hook can key its own records
 * (a registration handle per range) by address:
 *   - a plain segment is one ALLOC and, when it goes back, one FREE;
 *   - an expandable segment (expandable_segments:True) is told page by page,
 *     as galloc maps it: one MAP per page (2 MiB in the small pool,
 *     large_segment_size, 20 MiB by default, in the large pool) and one UNMAP
 *     per page when empty_cache or the OOM path shrinks it; the address
 *     range reserved around the pages is not memory and is not told;
 *   - sleep (galloc_sleep.h) unmaps a tag's pages (or a plain tagged
 *     segment's one mapping): one UNMAP each; wake maps them back at the same
 *     addresses: one MAP each;
 *   - galloc_allocator_destroy gives every segment back: the FREEs and
 *     UNMAPs of what is still present, flagged GALLOC_HOOK_F_DESTROY.
 * At any moment between galloc calls the sizes a hook has been told of and
 * not told away sum to reserved_bytes.all.current (galloc_stats.h). Memory
 * another process shares (galloc_ipc_open) is not this allocator's and is
 * not told.
 *
 * When. An addition is told after the device call that made the memory
 * succeeded and before any of it reaches a caller; a removal before the
 * device call that gives the memory back (PyTorch tells a segment's free
 * before cudaFree as galloc does, but a page's unmap only after unmapping
 * it: galloc tells it before, so a hook can deregister memory that is still
 * there). If the device refuses to free or unmap, the memory is still
 * present: an addition of the same range follows at once, flagged
 * GALLOC_HOOK_F_RESTORED. OOM: after the last retry failed, before
 * galloc_malloc returns GALLOC_E_OOM; the cache releases of the retries
 * came before it as FREEs and UNMAPs.
 *
 * A hook that fails. fn returns 0 to accept an event. A non-zero return on
 * an addition (ALLOC or MAP, not flagged RESTORED or REPLAY) refuses the
 * memory: the hooks told before it in the same event, and every hook told
 * of the call's earlier pages, are told the matching FREE or UNMAP flagged
 * GALLOC_HOOK_F_UNDO (in reverse order; the refusing hook is not told of
 * the page it refused), galloc gives the memory back to the device, and the
 * call fails with GALLOC_E_HOOK and a message naming the hook, the event
 * and the return value (galloc_last_error); no retry is tried, no stats
 * change, nothing is handed out. That is what a registration hook needs:
 * memory it could not register (ncclCommRegister refused) never reaches a
 * caller. Pages an earlier step of the same malloc mapped and every hook
 * accepted stay mapped and cached, as when the device refuses a later page.
 * A non-zero return on any other event cannot stop it (memory the caller
 * freed goes back; an OOM has happened): galloc counts it
 * (galloc_hook_stats_t.ignored) and goes on.
 *
 * Locking, and what a hook may do. A hook runs on the calling thread with
 * the allocator's lock held (as PyTorch's trace trackers run with the
 * device allocator's mutex held), so every hook sees every event of the
 * allocator in one order (seq), and no other call of this allocator runs
 * meanwhile. A hook may: record the event, take locks of its own that no
 * thread holds while calling into this allocator, register or deregister
 * the range with a library that does not call galloc on this allocator
 * (ncclCommRegister / ncclCommDeregister, ibv_reg_mr / ibv_dereg_mr,
 * cuMemRetainAllocationHandle on a mapped page), call other allocators.
 * A hook must not: call any galloc function on the same allocator
 * (including galloc_hook_remove and the stripe path's malloc and free: it
 * deadlocks); block on a lock or a condition that a thread calling this
 * allocator may hold or need (from Python: the GIL, see below); issue
 * collective calls or wait for other ranks (ncclCommWindowRegister and any
 * other collective: the hook runs on whatever thread allocated, each rank at
 * a different moment, so a collective from it deadlocks or mismatches:
 * PyTorch's torchcomms defers symmetric-window registration to a collective
 * call for this reason); synchronize the device or a stream for long (every
 * other call of the allocator waits); longjmp or throw out of fn.
 *
 * Python. galloc's Python package calls every C function through ctypes,
 * which releases the GIL for the call, so no thread holds the GIL while it
 * waits for an allocator's lock and a Python hook (Allocator.add_hook) may
 * take the GIL under it. A caller that holds the GIL while calling galloc
 * (PyTorch's C++ calls the allocator with the GIL held: galloc's torch
 * plugin) makes a Python hook deadlock: thread A holds the GIL and waits for
 * the allocator's lock, thread B holds that lock and runs the hook, which
 * waits for the GIL. PyTorch's header warns the same of its trackers. With
 * the torch plugin, register hooks in C.
 *
 * Cost. With no hook registered a segment or page event costs one branch on
 * the cold path (where segments are made and freed); cache hits and frees
 * (the stripe path) never make or release segments and are not touched.
 *
 * Which allocators. The caching pool (the native allocator, plain and
 * expandable segments). The stream-ordered allocator
 * (backend:cudaMallocAsync) and a user allocator (galloc_user.h) return
 * GALLOC_E_UNSUPPORTED from galloc_hook_add, as PyTorch's cudaMallocAsync
 * and pluggable allocators refuse attachAllocatorTraceTracker: the driver's
 * pool or the user's code owns their memory, not galloc.
 */
#ifndef GALLOC_HOOKS_H
#define GALLOC_HOOKS_H

#include <stdint.h>

#include <galloc/galloc_allocator.h>
#include <galloc/galloc_mempool.h>
#include <galloc/galloc_status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What happened. The values are ABI: append only. */
typedef enum galloc_hook_kind {
    GALLOC_HOOK_SEGMENT_ALLOC = 0, /* a segment was allocated: [addr, addr + size) is device memory now */
    GALLOC_HOOK_SEGMENT_FREE = 1,  /* a segment is about to be freed: told an ALLOC of this range earlier */
    GALLOC_HOOK_SEGMENT_MAP = 2,   /* a page (or a tag's whole plain segment, at wake) was mapped */
    GALLOC_HOOK_SEGMENT_UNMAP = 3, /* a page is about to be unmapped: told a MAP or ALLOC of this range earlier */
    GALLOC_HOOK_OOM = 4            /* a malloc is about to fail with GALLOC_E_OOM */
} galloc_hook_kind_t;

/* The bit of kind in galloc_hook_t.kinds. */
#define GALLOC_HOOK_KIND_BIT(kind) (1u << (unsigned)(kind))
#define GALLOC_HOOK_KINDS_ALL 0x1fu /* every kind above */

/* galloc_hook_event_t.flags. */
#define GALLOC_HOOK_F_REPLAY 1u   /* ALLOC / MAP: present when the hook was added with GALLOC_HOOK_ADD_REPLAY */
#define GALLOC_HOOK_F_UNDO 2u     /* FREE / UNMAP: takes back an addition this hook accepted, refused by a hook */
#define GALLOC_HOOK_F_RESTORED 4u /* ALLOC / MAP: the device refused the FREE / UNMAP just told: still present */
#define GALLOC_HOOK_F_DESTROY 8u  /* FREE / UNMAP: from galloc_allocator_destroy */

/* One event. Valid during the call only: copy what you keep. */
typedef struct galloc_hook_event {
    uint32_t struct_size;     /* sizeof(galloc_hook_event_t) galloc was built with */
    uint32_t kind;            /* galloc_hook_kind_t */
    uint32_t flags;           /* GALLOC_HOOK_F_* */
    int device;               /* the allocator's device index */
    uint64_t seq;             /* the event's number, from 1, the same for every hook told of it */
    uintptr_t addr;           /* start of the range (OOM: 0) */
    size_t size;              /* bytes of the range; OOM: the request rounded as PyTorch rounds it */
    galloc_stream_t stream;   /* the segment's stream; OOM: the request's */
    galloc_mempool_id_t pool; /* the segment's (or OOM: the request's) private pool; {0, 0}: the default pools */
    /* GALLOC_HOOK_OOM only, 0 otherwise: PyTorch's OutOfMemoryObserver
     * arguments (device, alloc_size, device_total or the fraction's cap,
     * device_free) and the two totals of its message. */
    size_t oom_alloc_size;       /* the segment size the device was asked for ("Tried to allocate") */
    size_t oom_device_total;     /* the device's total memory */
    size_t oom_device_free;      /* the device's free memory after the last retry */
    size_t oom_allowed;          /* set_memory_fraction's cap in bytes, 0 when none is set */
    int64_t oom_allocated_bytes; /* allocated_bytes.all.current */
    int64_t oom_reserved_bytes;  /* reserved_bytes.all.current */
} galloc_hook_event_t;

/* fn: 0 accepts the event; non-zero refuses an addition (see "A hook that
 * fails" above) and is counted for every other event. Called with the
 * allocator's lock held: see "Locking" above. */
typedef int (*galloc_hook_fn)(void *ctx, const galloc_hook_event_t *ev);

/* galloc_hook_t.flags. */
#define GALLOC_HOOK_ADD_REPLAY 1u /* tell the new hook, before galloc_hook_add returns, of the memory present now */

typedef struct galloc_hook {
    uint32_t struct_size; /* sizeof(galloc_hook_t) the caller was built with */
    uint32_t kinds;       /* GALLOC_HOOK_KIND_BIT()s of the kinds to be told of; 0 = every kind */
    uint32_t flags;       /* GALLOC_HOOK_ADD_* */
    galloc_hook_fn fn;    /* required */
    void *ctx;            /* passed to fn; the caller's, it must outlive the hook */
} galloc_hook_t;

/* A registered hook's id, never 0, never reused by the allocator. */
typedef uint64_t galloc_hook_id_t;

/*
 * galloc_hook_add: register hook (copied) on a; it is told of events after
 * every hook added before it. With GALLOC_HOOK_ADD_REPLAY it is first told
 * of every range present now (ALLOCs and MAPs flagged GALLOC_HOOK_F_REPLAY,
 * oldest segment first, pages in address order; a sleeping tag's unmapped
 * pages are not present), under the same hold of the lock, so that nothing
 * is missed or told twice (PyTorch's NCCL hook takes a snapshot first and
 * can race with an allocation between the two); if it refuses one, it is
 * told the UNDOs of the ranges it accepted, it is not registered and the
 * call fails with GALLOC_E_HOOK. Returns GALLOC_OK with *id set;
 * GALLOC_E_INVAL for NULL a, hook, fn or id, a struct_size below
 * galloc_hook_t's first release, unknown kind or flag bits;
 * GALLOC_E_UNSUPPORTED for the stream-ordered and user allocators;
 * GALLOC_E_NOMEM; GALLOC_E_DESTROYED. Thread-safe; never from a hook.
 */
GALLOC_API galloc_status_t galloc_hook_add(galloc_allocator_t *a, const galloc_hook_t *hook, galloc_hook_id_t *id);

/*
 * galloc_hook_remove: unregister hook id; once this returns, fn is not
 * called again for a (so its ctx may be freed). It is not told of the
 * memory still present. Returns GALLOC_OK; GALLOC_E_INVAL for an id not
 * registered on a (removed already, or never); GALLOC_E_UNSUPPORTED as for
 * galloc_hook_add. Thread-safe; never from a hook.
 */
GALLOC_API galloc_status_t galloc_hook_remove(galloc_allocator_t *a, galloc_hook_id_t id);

/* A hook's counters. */
typedef struct galloc_hook_stats {
    uint32_t struct_size; /* set by the caller: sizeof(galloc_hook_stats_t) */
    uint64_t events;      /* events the hook was told of (calls of fn) */
    uint64_t refused;     /* additions it refused (each failed a galloc call with GALLOC_E_HOOK) */
    uint64_t ignored;     /* non-zero returns for events that cannot be refused */
} galloc_hook_stats_t;

/*
 * galloc_hook_stats: hook id's counters into *out (out->struct_size bytes at
 * most). Returns GALLOC_OK; GALLOC_E_INVAL for NULL out, a struct_size
 * below 4 or an unknown id; GALLOC_E_UNSUPPORTED as for galloc_hook_add.
 */
GALLOC_API galloc_status_t galloc_hook_stats(galloc_allocator_t *a, galloc_hook_id_t id, galloc_hook_stats_t *out);

#ifdef __cplusplus
}
#endif
#endif /* GALLOC_HOOKS_H */
