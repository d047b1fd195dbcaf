/*
 * hooks.c: the caching pool's device-memory hooks (galloc_hooks.h, hooks.h):
 * the registry, the events built from the pool's records, their delivery in
 * registration order, the undo of a refused addition, the replay of what is
 * present when a hook is added, and what destroy gives back.
 *
 * PyTorch's counterpart is DeviceCachingAllocator::record_trace calling
 * every attached AllocatorTraceTracker with a TraceEntry (action, addr,
 * size, stream, device, mempool) under the device allocator's mutex, and
 * malloc's OOM branch calling the OutOfMemoryObserver list (with the mutex
 * released) with (device, alloc_size, allowed or total, device_free)
 * (c10/cuda/CUDACachingAllocator.cpp). galloc's trackers return a status so
 * that an embedder can refuse memory it could not register; docs/hooks.md
 * lists the differences.
 *
 * Invariants: hooks != NULL exactly while n > 0 (ga_pool_hooked); ids count
 * up from 1 and are never reused; seq counts every event told, once per
 * event whatever the number of hooks; a hook is told an event only if its
 * kinds mask has the event's kind, and an UNDO only if it was told the
 * addition it takes back.
 *
 * Locking: the locked path (hooks.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool/hooks.h"
#include "pool/sleep_int.h"

/* One registered hook. */
typedef struct ga_hook_slot {
    galloc_hook_t h;        /* the caller's hook, copied (struct_size: ours) */
    galloc_hook_id_t id;    /* its id */
    uint32_t kinds;         /* h.kinds, 0 resolved to every kind */
    galloc_hook_stats_t st; /* its counters */
} ga_hook_slot_t;

struct ga_hooks {
    ga_hook_slot_t *v;        /* the hooks in registration order; owned */
    size_t n, cap;            /* registered, room */
    galloc_hook_id_t last_id; /* the last id handed out */
    uint64_t seq;             /* events told so far */
};

static const char *kind_name(uint32_t kind)
{
    static const char *const names[] = {"SEGMENT_ALLOC", "SEGMENT_FREE", "SEGMENT_MAP", "SEGMENT_UNMAP", "OOM"};
    return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "?";
}

/* The removal that matches an addition. */
static galloc_hook_kind_t undo_kind(galloc_hook_kind_t kind)
{
    return kind == GALLOC_HOOK_SEGMENT_ALLOC ? GALLOC_HOOK_SEGMENT_FREE : GALLOC_HOOK_SEGMENT_UNMAP;
}

static bool wants(const ga_hook_slot_t *s, uint32_t kind)
{
    return (s->kinds & GALLOC_HOOK_KIND_BIT(kind)) != 0;
}

static void event(ga_pool_t *p, galloc_hook_event_t *ev, galloc_hook_kind_t kind, uint32_t flags, uintptr_t addr,
                  size_t size, galloc_stream_t stream, const ga_blockpool_t *bp)
{
    memset(ev, 0, sizeof(*ev));
    ev->struct_size = sizeof(*ev);
    ev->kind = (uint32_t)kind;
    ev->flags = flags;
    ev->device = p->device;
    ev->seq = ++p->hook_reg->seq;
    ev->addr = addr;
    ev->size = size;
    ev->stream = stream;
    if (bp != NULL && bp->owner != NULL) {
        ev->pool.a = bp->owner->id_a;
        ev->pool.b = bp->owner->id_b;
    }
}

/* One hook told of ev: its return, counted. */
static int call(ga_hook_slot_t *s, const galloc_hook_event_t *ev)
{
    s->st.events++;
    return s->h.fn(s->h.ctx, ev);
}

/* Tell hooks [0, to) that want ev's kind, for an event that cannot be
 * refused; `told` (may be NULL) limits it to the hooks that were told the
 * addition of kind `added` (an UNDO). */
static void tell_all(ga_pool_t *p, const galloc_hook_event_t *ev, size_t to, const galloc_hook_kind_t *added)
{
    struct ga_hooks *r = p->hook_reg;
    for (size_t i = 0; i < to && i < r->n; i++) {
        ga_hook_slot_t *s = &r->v[i];
        if (!wants(s, ev->kind) || (added != NULL && !wants(s, *added)))
            continue;
        if (call(s, ev) != 0)
            s->st.ignored++;
    }
}

/* Take an addition back from hooks [0, to) that were told it. */
static void undo(ga_pool_t *p, galloc_hook_kind_t added, uintptr_t addr, size_t size, galloc_stream_t stream,
                 const ga_blockpool_t *bp, size_t to)
{
    galloc_hook_event_t ev;
    event(p, &ev, undo_kind(added), GALLOC_HOOK_F_UNDO, addr, size, stream, bp);
    tell_all(p, &ev, to, &added);
}

/* A refusal: recorded in the allocator's message (the call fails with it). */
static galloc_status_t refused(ga_pool_t *p, const ga_hook_slot_t *s, const galloc_hook_event_t *ev, int rc)
{
    return ga_fail(p->err, GALLOC_E_HOOK,
                   "device-memory hook %llu refused %s of %zu bytes at %#lx (device %d, stream %#lx, pool (%llu, "
                   "%llu)): it returned %d; the memory went back to the device",
                   (unsigned long long)s->id, kind_name(ev->kind), ev->size, (unsigned long)ev->addr, ev->device,
                   (unsigned long)ev->stream, (unsigned long long)ev->pool.a, (unsigned long long)ev->pool.b, rc);
}

galloc_status_t ga_pool_hook_appear(ga_pool_t *p, galloc_hook_kind_t kind, uintptr_t addr, size_t size,
                                    galloc_stream_t stream, const ga_blockpool_t *bp)
{
    struct ga_hooks *r = p->hooks;
    galloc_hook_event_t ev;
    event(p, &ev, kind, 0, addr, size, stream, bp);
    for (size_t i = 0; i < r->n; i++) {
        ga_hook_slot_t *s = &r->v[i];
        if (!wants(s, kind))
            continue;
        int rc = call(s, &ev);
        if (rc != 0) {
            s->st.refused++;
            galloc_status_t st = refused(p, s, &ev, rc); /* the message before the undo's calls */
            undo(p, kind, addr, size, stream, bp, i);
            return st;
        }
    }
    return GALLOC_OK;
}

galloc_status_t ga_pool_hook_appear_pages(ga_pool_t *p, uintptr_t base, size_t page, size_t n, galloc_stream_t stream,
                                          const ga_blockpool_t *bp)
{
    for (size_t k = 0; k < n; k++) {
        galloc_status_t st = ga_pool_hook_appear(p, GALLOC_HOOK_SEGMENT_MAP, base + k * page, page, stream, bp);
        if (st != GALLOC_OK) {
            while (k-- > 0) /* every hook accepted these pages */
                undo(p, GALLOC_HOOK_SEGMENT_MAP, base + k * page, page, stream, bp, p->hooks->n);
            return st;
        }
    }
    return GALLOC_OK;
}

void ga_pool_hook_disappear(ga_pool_t *p, galloc_hook_kind_t kind, uintptr_t addr, size_t size, galloc_stream_t stream,
                            const ga_blockpool_t *bp, uint32_t flags)
{
    galloc_hook_event_t ev;
    event(p, &ev, kind, flags, addr, size, stream, bp);
    tell_all(p, &ev, p->hooks->n, NULL);
}

void ga_pool_hook_restored(ga_pool_t *p, galloc_hook_kind_t kind, uintptr_t addr, size_t size, galloc_stream_t stream,
                           const ga_blockpool_t *bp)
{
    galloc_hook_event_t ev;
    event(p, &ev, kind, GALLOC_HOOK_F_RESTORED, addr, size, stream, bp);
    tell_all(p, &ev, p->hooks->n, NULL);
}

void ga_pool_hook_oom(ga_pool_t *p, const ga_alloc_params_t *ap, size_t device_free, size_t device_total)
{
    galloc_hook_event_t ev;
    event(p, &ev, GALLOC_HOOK_OOM, 0, 0, ap->size, ap->stream, ap->pool);
    ev.oom_alloc_size = ap->alloc_size;
    ev.oom_device_total = device_total;
    ev.oom_device_free = device_free;
    ev.oom_allowed = p->set_fraction ? p->allowed_memory_maximum : 0;
    ev.oom_allocated_bytes = p->stats.allocated_bytes[GALLOC_STAT_ALL].current;
    ev.oom_reserved_bytes = p->stats.reserved_bytes[GALLOC_STAT_ALL].current;
    tell_all(p, &ev, p->hooks->n, NULL);
}

/* ---- The ranges present: replay and destroy. ---- */

/* Visit every range of seg that holds device memory now, as the hooks were
 * told of it: a plain segment whole, a tag's VMM segment as its one mapping
 * (unless asleep), an expandable segment page by page (pages a sleep
 * unmapped left out). fn returns false to stop; so does the walk. */
typedef bool (*present_fn)(ga_pool_t *p, galloc_hook_kind_t added, uintptr_t addr, size_t size, const ga_segment_t *seg,
                           void *ctx);

static bool visit_present(ga_pool_t *p, const ga_segment_t *seg, present_fn fn, void *ctx)
{
    if (!seg->expandable) {
        if (seg->vmm && seg->slept != NULL && ga_sleep_bit(seg->slept, 0))
            return true;
        return fn(p, GALLOC_HOOK_SEGMENT_ALLOC, seg->base, seg->vmm ? seg->page : seg->size, seg, ctx);
    }
    size_t next = 0; /* the first page not visited yet: neighbouring blocks share pages */
    for (const ga_block_t *b = seg->head; b != NULL; b = b->next) {
        if (!b->mapped)
            continue;
        size_t first = (b->addr - seg->base) / seg->page;
        size_t last = (b->addr + b->size - seg->base + seg->page - 1) / seg->page; /* mapped runs end on pages */
        for (size_t i = first > next ? first : next; i < last; i++) {
            if (seg->slept != NULL && ga_sleep_bit(seg->slept, i))
                continue;
            if (!fn(p, GALLOC_HOOK_SEGMENT_MAP, seg->base + i * seg->page, seg->page, seg, ctx))
                return false;
        }
        if (last > next)
            next = last;
    }
    return true;
}

static bool gone(ga_pool_t *p, galloc_hook_kind_t added, uintptr_t addr, size_t size, const ga_segment_t *seg,
                 void *ctx)
{
    (void)ctx;
    ga_pool_hook_disappear(p, undo_kind(added), addr, size, seg->stream, seg->pool, GALLOC_HOOK_F_DESTROY);
    return true;
}

void ga_pool_hook_segment_gone(ga_pool_t *p, const ga_segment_t *seg)
{
    (void)visit_present(p, seg, gone, NULL);
}

/* Replay to one new hook (slot s, not registered yet). */
typedef struct replay {
    ga_hook_slot_t *s;
    size_t told; /* ranges it accepted (or, undoing, still to take back) */
    int rc;      /* its refusal */
    galloc_hook_event_t refused_ev;
} replay_t;

static bool replay_one(ga_pool_t *p, galloc_hook_kind_t added, uintptr_t addr, size_t size, const ga_segment_t *seg,
                       void *ctx)
{
    replay_t *r = ctx;
    if (!wants(r->s, added))
        return true;
    galloc_hook_event_t ev;
    event(p, &ev, added, GALLOC_HOOK_F_REPLAY, addr, size, seg->stream, seg->pool);
    int rc = call(r->s, &ev);
    if (rc != 0) {
        r->s->st.refused++;
        r->rc = rc;
        r->refused_ev = ev;
        return false;
    }
    r->told++;
    return true;
}

static bool unreplay_one(ga_pool_t *p, galloc_hook_kind_t added, uintptr_t addr, size_t size, const ga_segment_t *seg,
                         void *ctx)
{
    replay_t *r = ctx;
    if (r->told == 0)
        return false;
    if (!wants(r->s, added))
        return true;
    r->told--;
    if (!wants(r->s, undo_kind(added)))
        return true;
    galloc_hook_event_t ev;
    event(p, &ev, undo_kind(added), GALLOC_HOOK_F_UNDO, addr, size, seg->stream, seg->pool);
    if (call(r->s, &ev) != 0)
        r->s->st.ignored++;
    return true;
}

/* Segments oldest first (p->segments is most recent first). */
static bool walk_segments(ga_pool_t *p, present_fn fn, void *ctx)
{
    const ga_segment_t *oldest = p->segments;
    while (oldest != NULL && oldest->next != NULL)
        oldest = oldest->next;
    for (const ga_segment_t *seg = oldest; seg != NULL; seg = seg->prev)
        if (!visit_present(p, seg, fn, ctx))
            return false;
    return true;
}

/* ---- The registry (ops members). ---- */

static ga_hook_slot_t *find(const ga_pool_t *p, galloc_hook_id_t id)
{
    struct ga_hooks *r = p->hooks;
    for (size_t i = 0; r != NULL && i < r->n; i++)
        if (r->v[i].id == id)
            return &r->v[i];
    return NULL;
}

galloc_status_t ga_pool_hook_add(void *impl, const galloc_hook_t *hook, galloc_hook_id_t *id)
{
    ga_pool_t *p = impl;
    *id = 0;
    if (hook->struct_size < sizeof(galloc_hook_t))
        return ga_fail(p->err, GALLOC_E_INVAL, "galloc_hook_add: struct_size %u is below galloc_hook_t's %zu bytes",
                       hook->struct_size, sizeof(galloc_hook_t));
    if (hook->fn == NULL || (hook->kinds & ~GALLOC_HOOK_KINDS_ALL) != 0 || (hook->flags & ~GALLOC_HOOK_ADD_REPLAY) != 0)
        return ga_fail(p->err, GALLOC_E_INVAL, "galloc_hook_add: %s",
                       hook->fn == NULL                              ? "fn is NULL"
                       : (hook->kinds & ~GALLOC_HOOK_KINDS_ALL) != 0 ? "unknown kind bits"
                                                                     : "unknown flag bits");
    if (p->hook_reg == NULL && (p->hook_reg = calloc(1, sizeof(*p->hook_reg))) == NULL)
        return ga_fail(p->err, GALLOC_E_NOMEM, "galloc_hook_add: out of host memory");
    struct ga_hooks *r = p->hook_reg;
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 4;
        ga_hook_slot_t *v = realloc(r->v, cap * sizeof(*v));
        if (v == NULL)
            return ga_fail(p->err, GALLOC_E_NOMEM, "galloc_hook_add: out of host memory");
        r->v = v;
        r->cap = cap;
    }
    ga_hook_slot_t s = {.h = *hook, .id = r->last_id + 1, .kinds = hook->kinds ? hook->kinds : GALLOC_HOOK_KINDS_ALL};
    s.h.struct_size = sizeof(galloc_hook_t);
    s.st.struct_size = sizeof(galloc_hook_stats_t);
    if (hook->flags & GALLOC_HOOK_ADD_REPLAY) {
        replay_t rp = {.s = &s};
        if (!walk_segments(p, replay_one, &rp)) {
            galloc_status_t st = refused(p, &s, &rp.refused_ev, rp.rc);
            (void)walk_segments(p, unreplay_one, &rp);
            return st;
        }
    }
    r->last_id = s.id;
    r->v[r->n++] = s;
    p->hooks = r;
    *id = s.id;
    return GALLOC_OK;
}

galloc_status_t ga_pool_hook_remove(void *impl, galloc_hook_id_t id)
{
    ga_pool_t *p = impl;
    ga_hook_slot_t *s = find(p, id);
    if (s == NULL)
        return ga_fail(p->err, GALLOC_E_INVAL, "galloc_hook_remove: no hook %llu on this allocator",
                       (unsigned long long)id);
    struct ga_hooks *r = p->hook_reg;
    size_t i = (size_t)(s - r->v);
    memmove(&r->v[i], &r->v[i + 1], (r->n - i - 1) * sizeof(*s)); /* the others keep their order */
    if (--r->n == 0)
        p->hooks = NULL;
    return GALLOC_OK;
}

galloc_status_t ga_pool_hook_stats(void *impl, galloc_hook_id_t id, galloc_hook_stats_t *out)
{
    ga_pool_t *p = impl;
    const ga_hook_slot_t *s = find(p, id);
    if (s == NULL)
        return ga_fail(p->err, GALLOC_E_INVAL, "galloc_hook_stats: no hook %llu on this allocator",
                       (unsigned long long)id);
    uint32_t size = out->struct_size;
    memcpy(out, &s->st, size < sizeof(s->st) ? size : sizeof(s->st));
    out->struct_size = size;
    return GALLOC_OK;
}

void ga_pool_hooks_destroy(ga_pool_t *p)
{
    if (p->hook_reg != NULL)
        free(p->hook_reg->v);
    free(p->hook_reg);
    p->hook_reg = p->hooks = NULL;
}
