/*
 * sleep.c: galloc_sleep and galloc_wake (galloc_sleep.h; model in
 * sleep_int.h).
 *
 * Sleep, per tag: phase 0 reserves the bookkeeping (the held map, one bitmap
 * pair per segment), phase 1 copies the allocated blocks of an offloaded tag
 * to pinned host memory; a failure in either gives back what it took and the
 * tag stays awake, nothing unmapped. Then the blocks move to the held map and
 * the pool hides its free sets (the tag is asleep), and phase 2 unmaps every
 * unit that was mapped: a refused unmap leaves that unit mapped and counted
 * (a later sleep of the tag tries it again), the tag asleep.
 *
 * Wake, per tag: phase 0 reserves the pointer map's room, phase 1 maps every
 * unit sleep unmapped, phase 2 copies the host copies back; a failure in
 * either unmaps what this call mapped and the tag stays asleep with every
 * host copy held. Phase 3 (cannot fail) puts the blocks back in the pointer
 * map and keeps the host copies' pinned blocks for the next sleep (pinned.c).
 *
 * Counting, as expandable.c: one num_device_free per run of consecutive
 * units unmapped, one num_device_alloc per run mapped; reserved_bytes and
 * total_allocated_memory follow every unit.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool/hooks.h"
#include "pool/ipc.h"
#include "pool/ops.h"
#include "pool/pinned.h"
#include "pool/release.h"
#include "pool/sleep_int.h"
#include "pool/stripe.h"
#include "pool/tags.h"
#include "stats/stats.h"
#include "util/assert.h"

static size_t words(const ga_segment_t *s)
{
    return (ga_sleep_units(s) + 63) / 64;
}

static void bit_set(uint64_t *bits, size_t i, bool on)
{
    if (on)
        bits[i / 64] |= (uint64_t)1 << (i % 64);
    else
        bits[i / 64] &= ~((uint64_t)1 << (i % 64));
}

static uintptr_t unit_addr(const ga_segment_t *s, size_t i)
{
    return s->base + i * s->page; /* plain: i == 0 */
}

size_t ga_sleep_seg_bytes(const ga_segment_t *s)
{
    if (s->slept == NULL)
        return 0;
    size_t n = 0;
    for (size_t w = 0; w < words(s); w++)
        n += (size_t)__builtin_popcountll(s->slept[w]);
    return n * ga_sleep_unit_bytes(s);
}

static void account(ga_pool_t *p, ga_tag_t *t, const ga_segment_t *s, bool mapped)
{
    int64_t ub = (int64_t)ga_sleep_unit_bytes(s);
    p->total_allocated_memory += (size_t)(mapped ? ub : -ub);
    ga_stat_update(p->stats.reserved_bytes, s->pool->stat, mapped ? ub : -ub);
    t->bytes_asleep += (size_t)(mapped ? -ub : ub);
}

/* The next maximal run [*first, *last) of units mapped before the sleep,
 * from block *cur on; false when there is none. */
static bool next_run(const ga_segment_t *s, const ga_block_t **cur, size_t *first, size_t *last)
{
    const ga_block_t *b = *cur;
    while (b != NULL && !b->mapped)
        b = b->next;
    if (b == NULL)
        return false;
    uintptr_t start = b->addr;
    while (b != NULL && b->mapped)
        b = b->next;
    uintptr_t end = b != NULL ? b->addr : s->base + s->size;
    *cur = b;
    if (!s->expandable) {
        *first = 0;
        *last = 1;
    } else { /* mapped runs start and end on pages (expandable.c) */
        *first = (start - s->base) / s->page;
        *last = (end - s->base) / s->page;
    }
    return true;
}

#define FOR_TAG_SEGMENTS(p, t, s)                                                                                      \
    for (ga_segment_t *s = (p)->segments; s != NULL; s = s->next)                                                      \
        if (s->pool->owner == (t)->pool)

static galloc_status_t refused(ga_pool_t *p, const char *what, uintptr_t addr, size_t bytes)
{
    ga_pool_note_refused(p, what, addr, bytes);
    return GALLOC_E_DEVICE;
}

/* Unmap unit i of s, told to the hooks first (and told back if the device
 * refuses: the unit is still mapped). */
static bool unmap_unit(ga_pool_t *p, const ga_segment_t *s, size_t i)
{
    if (ga_pool_hooked(p))
        ga_pool_hook_disappear(p, GALLOC_HOOK_SEGMENT_UNMAP, unit_addr(s, i), s->page, s->stream, s->pool, 0);
    if (ga_backend_unmap(p->backend, unit_addr(s, i), s->page) == GALLOC_OK)
        return true;
    if (ga_pool_hooked(p))
        ga_pool_hook_restored(p, GALLOC_HOOK_SEGMENT_MAP, unit_addr(s, i), s->page, s->stream, s->pool);
    return false;
}

/* Sleep phase 2 for one segment: unmap every mapped unit not unmapped yet. */
static galloc_status_t unmap_segment(ga_pool_t *p, ga_tag_t *t, ga_segment_t *s)
{
    galloc_status_t st = GALLOC_OK;
    const ga_block_t *b = s->head;
    size_t first, last;
    while (next_run(s, &b, &first, &last)) {
        bool in_run = false;
        for (size_t i = first; i < last; i++) {
            if (ga_sleep_bit(s->slept, i)) {
                in_run = false;
                continue;
            }
            if (!unmap_unit(p, s, i)) {
                st = refused(p, "unmap", unit_addr(s, i), s->page);
                in_run = false;
                continue;
            }
            bit_set(s->slept, i, true);
            account(p, t, s, false);
            p->sleep.bytes_slept += ga_sleep_unit_bytes(s);
            if (!in_run)
                p->stats.num_device_free++;
            in_run = true;
        }
    }
    return st;
}

/* Drop a tag's sleeping state: its host copies (kept for the next sleep,
 * tags.c), the held map and the segments' bitmaps; with `restore`, its blocks
 * go back into the pointer map (the end of a wake). */
static void drop_sleep_state(ga_pool_t *p, ga_tag_t *t, bool restore)
{
    for (size_t i = 0; i < t->held.cap; i++) {
        ga_sleep_entry_t *e = ga_addrmap_slot(&t->held, i);
        if (e == NULL)
            continue;
        if (restore)
            ga_pool_ptr_insert(p, e->block);
        if (e->host != NULL)
            ga_pool_host_keep(p, e->host);
    }
    ga_addrmap_destroy(&t->held);
    t->bytes_offloaded = 0;
    FOR_TAG_SEGMENTS(p, t, s)
    {
        free(s->slept);
        s->slept = NULL;
    }
}

/* Undo phases 0 and 1 of a sleep: host copies and bitmaps go, the tag stays awake. */
static void sleep_undo(ga_pool_t *p, ga_tag_t *t)
{
    drop_sleep_state(p, t, false);
}

/* Phase 0 and 1: bookkeeping, then the copies of an offloaded tag. */
static galloc_status_t sleep_prepare(ga_pool_t *p, ga_tag_t *t)
{
    size_t n = 0;
    FOR_TAG_SEGMENTS(p, t, s)
    for (const ga_block_t *b = s->head; b != NULL; b = b->next)
        n += b->allocated;
    if (ga_addrmap_reserve(&t->held, n) != GALLOC_OK)
        return ga_fail(p->err, GALLOC_E_NOMEM, "sleep: out of host memory for tag \"%s\"'s bookkeeping", t->name);
    FOR_TAG_SEGMENTS(p, t, s)
    {
        s->slept = calloc(2 * words(s), sizeof(uint64_t)); /* unmapped units, then wake's scratch */
        if (s->slept == NULL) {
            sleep_undo(p, t);
            return ga_fail(p->err, GALLOC_E_NOMEM, "sleep: out of host memory for tag \"%s\"'s bookkeeping", t->name);
        }
    }
    FOR_TAG_SEGMENTS(p, t, s)
    for (ga_block_t *b = s->head; b != NULL; b = b->next) {
        if (!b->allocated)
            continue;
        ga_sleep_entry_t *e = ga_addrmap_insert(&t->held, b->addr);
        e->block = b;
        e->host = NULL;
        if (!t->offload)
            continue;
        /* a block kept from an earlier wake, else a new one */
        galloc_status_t st = ga_pool_host_take(p, b->size, &e->host);
        if (st != GALLOC_OK) {
            /* The backend's status stands (E_NOMEM for a refusal, E_UNSUPPORTED
             * for a driver without pinned memory), with its reason. */
            char buf[256];
            const char *why = ga_backend_why(p->backend, st, buf, sizeof(buf)); /* before the undo's calls */
            e->host = NULL;
            sleep_undo(p, t);
            return ga_fail(p->err, st, "sleep: tag \"%s\": pinned host memory for %zu bytes refused: %s", t->name,
                           b->size, why);
        }
        t->bytes_offloaded += b->size;
        st = ga_backend_copy_d2h(p->backend, e->host, b->addr, b->size);
        if (st != GALLOC_OK) {
            char buf[256];
            const char *why = ga_backend_why(p->backend, st, buf, sizeof(buf));
            sleep_undo(p, t);
            return ga_fail(p->err, GALLOC_E_DEVICE,
                           "sleep: tag \"%s\": copying %zu bytes at %#lx to the host failed: %s", t->name, b->size,
                           (unsigned long)b->addr, why);
        }
    }
    return GALLOC_OK;
}

static galloc_status_t sleep_tag(ga_pool_t *p, ga_tag_t *t)
{
    if (!t->asleep) {
        galloc_status_t st = sleep_prepare(p, t);
        if (st != GALLOC_OK)
            return st;
        for (size_t i = 0; i < t->held.cap; i++) {
            ga_sleep_entry_t *e = ga_addrmap_slot(&t->held, i);
            if (e != NULL)
                ga_pool_ptr_remove(p, e->addr);
        }
        GA_ASSERT(t->pool->tag == t && !t->pool->asleep);
        t->asleep = t->pool->asleep = true; /* routes to it now fail (ga_pool_get_routed_pool) */
        size_t total = 0;
        for (const ga_tag_t *u = p->tags; u != NULL; u = u->next)
            total += u->bytes_offloaded;
        if (total > p->sleep.peak_bytes_offloaded)
            p->sleep.peak_bytes_offloaded = total;
    }
    galloc_status_t st = GALLOC_OK;
    FOR_TAG_SEGMENTS(p, t, s)
    {
        galloc_status_t s2 = unmap_segment(p, t, s);
        if (st == GALLOC_OK)
            st = s2;
    }
    return st;
}

/* A history annotation ("galloc.sleep.<tag>", START at sleep, END at wake):
 * snapshots keep a sleeping tag's segments and blocks as they were (the
 * viewer rebuilds past states from them), so the trace says when it slept. */
static void annotate(ga_pool_t *p, const char *stage, const ga_tag_t *t)
{
    char name[16 + GALLOC_TAG_MAX];
    snprintf(name, sizeof(name), "galloc.sleep.%s", t->name);
    (void)ga_trace_annotate(&p->trace, stage, name); /* a no-op unless recording */
}

static bool failure(galloc_status_t st)
{
    return st == GALLOC_E_DEVICE || st == GALLOC_E_NOMEM || st == GALLOC_E_OOM;
}

galloc_status_t ga_pool_sleep(void *impl, const char *tags, const char *offload_tags)
{
    ga_pool_t *p = impl;
    bool any;
    galloc_status_t st = ga_tag_select_sleep(p, tags, offload_tags, "sleep", &any);
    if (st != GALLOC_OK)
        return st;
    /* A reader in another process maps the tag's pages: unmapping them here
     * would leave the two processes with different memory. */
    for (ga_tag_t *t = p->tags; t != NULL; t = t->next)
        if (t->sel && !t->asleep && ga_pool_ipc_pool_shared(p, t->pool))
            return ga_fail(p->err, GALLOC_E_INVAL,
                           "sleep: tag \"%s\" holds a block shared with another process (galloc_ipc_export); "
                           "it sleeps once the export ends",
                           t->name);
    ga_pool_host_retry(p);
    p->refused_frees = 0;
    if (any) {
        /* Work queued on any stream may still use the memory about to be copied and unmapped. */
        galloc_status_t sync = ga_backend_device_synchronize(p->backend);
        if (sync != GALLOC_OK && sync != GALLOC_E_UNSUPPORTED) {
            p->sleep.num_failed++;
            return ga_fail(p->err, GALLOC_E_DEVICE, "sleep: synchronizing the device failed: %s",
                           galloc_strerror(sync));
        }
    }
    bool slept = false;
    for (ga_tag_t *t = p->tags; t != NULL; t = t->next) {
        if (!t->sel)
            continue;
        bool was = t->asleep;
        galloc_status_t s2 = sleep_tag(p, t);
        if (!was && t->asleep)
            annotate(p, "START", t);
        slept |= !was && t->asleep;
        if (st == GALLOC_OK)
            st = s2;
    }
    p->sleep.num_sleep += slept;
    p->sleep.num_failed += failure(st);
    return st;
}

/* Unmap the units wake mapped in this call (scratch bitmap) after a failure. */
static void wake_undo(ga_pool_t *p, ga_tag_t *t)
{
    FOR_TAG_SEGMENTS(p, t, s)
    {
        uint64_t *done = s->slept + words(s);
        bool in_run = false;
        for (size_t i = 0; i < ga_sleep_units(s); i++) {
            if (!ga_sleep_bit(done, i)) {
                in_run = false;
                continue;
            }
            bit_set(done, i, false);
            if (!unmap_unit(p, s, i)) {
                (void)refused(p, "unmap", unit_addr(s, i), s->page); /* stays mapped and counted */
                in_run = false;
                continue;
            }
            bit_set(s->slept, i, true);
            account(p, t, s, false);
            if (!in_run)
                p->stats.num_device_free++;
            in_run = true;
        }
    }
}

static galloc_status_t map_segment(ga_pool_t *p, ga_tag_t *t, ga_segment_t *s)
{
    uint64_t *done = s->slept + words(s);
    memset(done, 0, words(s) * sizeof(uint64_t));
    bool in_run = false;
    for (size_t i = 0; i < ga_sleep_units(s); i++) {
        if (!ga_sleep_bit(s->slept, i)) {
            in_run = false;
            continue;
        }
        galloc_status_t st = ga_backend_map(p->backend, unit_addr(s, i), s->page);
        if (st != GALLOC_OK) {
            char why[256];
            return ga_fail(p->err, st == GALLOC_E_OOM ? GALLOC_E_OOM : GALLOC_E_DEVICE,
                           "wake: tag \"%s\": mapping %zu bytes at %#lx failed: %s", t->name, s->page,
                           (unsigned long)unit_addr(s, i), ga_backend_why(p->backend, st, why, sizeof(why)));
        }
        /* A hook that refuses the unit fails the wake (GALLOC_E_HOOK): the
         * unit goes back, and wake_undo takes back what this call mapped. */
        if (ga_pool_hooked(p) && (st = ga_pool_hook_appear(p, GALLOC_HOOK_SEGMENT_MAP, unit_addr(s, i), s->page,
                                                           s->stream, s->pool)) != GALLOC_OK) {
            (void)ga_backend_unmap(p->backend, unit_addr(s, i), s->page);
            return st;
        }
        bit_set(s->slept, i, false);
        bit_set(done, i, true);
        account(p, t, s, true);
        if (!in_run)
            p->stats.num_device_alloc++;
        in_run = true;
    }
    return GALLOC_OK;
}

/* A slot for every held block in its stream's stripe map, for the end of a wake. */
static galloc_status_t reserve_ptrs(ga_pool_t *p, const ga_addrmap_t *held)
{
    size_t n[GA_STRIPES] = {0};
    for (size_t i = 0; i < held->cap; i++) {
        const ga_sleep_entry_t *e = ga_addrmap_slot(held, i);
        if (e != NULL)
            n[ga_stripe_of(e->block->stream)]++;
    }
    for (unsigned i = 0; i < GA_STRIPES; i++)
        if (n[i] > 0 && ga_addrmap_reserve(&p->stripes[i].ptrs, n[i]) != GALLOC_OK)
            return GALLOC_E_NOMEM;
    return GALLOC_OK;
}

static galloc_status_t wake_tag(ga_pool_t *p, ga_tag_t *t)
{
    if (reserve_ptrs(p, &t->held) != GALLOC_OK)
        return ga_fail(p->err, GALLOC_E_NOMEM, "wake: out of host memory for allocator bookkeeping");
    /* The memory fraction caps reserved memory, as it caps malloc's segments. */
    if (p->set_fraction && p->total_allocated_memory + t->bytes_asleep > p->allowed_memory_maximum)
        return ga_fail(p->err, GALLOC_E_OOM,
                       "wake: tag \"%s\" needs %zu bytes; the memory fraction allows %zu reserved, %zu are", t->name,
                       t->bytes_asleep, p->allowed_memory_maximum, p->total_allocated_memory);
    size_t asleep = t->bytes_asleep;
    galloc_status_t st = GALLOC_OK;
    FOR_TAG_SEGMENTS(p, t, s)
    {
        if (st == GALLOC_OK)
            st = map_segment(p, t, s);
        else /* nothing of it mapped by this call */
            memset(s->slept + words(s), 0, words(s) * sizeof(uint64_t));
    }
    for (size_t i = 0; i < t->held.cap && st == GALLOC_OK; i++) {
        ga_sleep_entry_t *e = ga_addrmap_slot(&t->held, i);
        if (e == NULL || e->host == NULL)
            continue;
        galloc_status_t c = ga_backend_copy_h2d(p->backend, e->addr, e->host, e->block->size);
        if (c != GALLOC_OK) {
            char why[256];
            st =
                ga_fail(p->err, GALLOC_E_DEVICE, "wake: tag \"%s\": copying %zu bytes back to %#lx failed: %s", t->name,
                        e->block->size, (unsigned long)e->addr, ga_backend_why(p->backend, c, why, sizeof(why)));
        }
    }
    if (st != GALLOC_OK) {
        wake_undo(p, t);
        return st;
    }
    /* Every unit sleep unmapped is mapped again. */
    GA_ASSERT(t->asleep && t->pool->asleep && t->pool->tag == t && t->bytes_asleep == 0);
    drop_sleep_state(p, t, true);
    t->asleep = t->pool->asleep = false;
    p->sleep.bytes_woken += asleep;
    return GALLOC_OK;
}

galloc_status_t ga_pool_wake(void *impl, const char *tags)
{
    ga_pool_t *p = impl;
    galloc_status_t st = ga_tag_mark(p, tags, 0, "wake");
    if (st != GALLOC_OK)
        return st;
    ga_pool_host_retry(p);
    p->refused_frees = 0;
    bool woke = false;
    for (ga_tag_t *t = p->tags; t != NULL; t = t->next) {
        if (!t->sel || !t->asleep)
            continue;
        galloc_status_t s2 = wake_tag(p, t);
        if (s2 == GALLOC_E_OOM) {
            /* Short of memory: give the cache back, as malloc does before its
             * last retry, and try once more. */
            (void)ga_pool_release_cached_blocks(p);
            s2 = wake_tag(p, t);
        }
        if (!t->asleep)
            annotate(p, "END", t);
        woke |= !t->asleep;
        if (st == GALLOC_OK)
            st = s2;
    }
    p->sleep.num_wake += woke;
    p->sleep.num_failed += failure(st);
    return st;
}

/* One tag's sleeping state against its segments: every allocated block held
 * exactly once, the counters equal to a recount. */
static galloc_status_t check_tag(ga_pool_t *p, const ga_tag_t *t)
{
    size_t blocks = 0, asleep = 0, offloaded = 0;
    FOR_TAG_SEGMENTS(p, t, s)
    {
        if ((s->slept != NULL) != t->asleep)
            return ga_fail(p->err, GALLOC_E_CORRUPT, "tag \"%s\": segment 0x%lx's sleep state disagrees with the tag",
                           t->name, (unsigned long)s->base);
        if (!s->expandable && !s->vmm)
            return ga_fail(p->err, GALLOC_E_CORRUPT, "tag \"%s\": segment 0x%lx is not virtual memory", t->name,
                           (unsigned long)s->base);
        asleep += ga_sleep_seg_bytes(s);
        for (const ga_block_t *b = s->head; b != NULL; b = b->next)
            blocks += b->allocated;
    }
    for (size_t i = 0; i < t->held.cap; i++) {
        const ga_sleep_entry_t *e = ga_addrmap_slot(&t->held, i);
        if (e == NULL)
            continue;
        if (!e->block->allocated || e->block->pool->owner != t->pool || e->block->addr != e->addr)
            return ga_fail(p->err, GALLOC_E_CORRUPT, "tag \"%s\": held entry 0x%lx names no allocated block of the tag",
                           t->name, (unsigned long)e->addr);
        offloaded += e->host != NULL ? e->block->size : 0;
    }
    size_t held = ga_addrmap_count(&t->held);
    if (t->asleep ? held != blocks : held != 0)
        return ga_fail(p->err, GALLOC_E_CORRUPT, "tag \"%s\" holds %zu blocks, its segments have %zu allocated",
                       t->name, held, t->asleep ? blocks : 0);
    if (offloaded != t->bytes_offloaded || asleep != t->bytes_asleep)
        return ga_fail(p->err, GALLOC_E_CORRUPT,
                       "tag \"%s\" counts %zu bytes offloaded and %zu asleep, a recount %zu and %zu", t->name,
                       t->bytes_offloaded, t->bytes_asleep, offloaded, asleep);
    if (t->pool->tag != t || t->pool->asleep != t->asleep)
        return ga_fail(p->err, GALLOC_E_CORRUPT, "tag \"%s\": its pool's state disagrees", t->name);
    return GALLOC_OK;
}

galloc_status_t ga_pool_check_sleep(ga_pool_t *p)
{
    for (const ga_tag_t *t = p->tags; t != NULL; t = t->next) {
        galloc_status_t st = check_tag(p, t);
        if (st != GALLOC_OK)
            return st;
    }
    for (const ga_private_pool_t *pp = p->private_pools; pp != NULL; pp = pp->next)
        if (pp->tag != NULL && ga_tag_find(p, pp->tag->name, strlen(pp->tag->name)) != pp->tag)
            return ga_fail(p->err, GALLOC_E_CORRUPT, "a private pool names a tag the allocator does not have");
    galloc_sleep_stats_t s;
    (void)ga_pool_sleep_stats(p, &s);
    if (s.bytes_offloaded > s.peak_bytes_offloaded || s.tags_asleep > s.tags || s.bytes_woken > s.bytes_slept)
        return ga_fail(p->err, GALLOC_E_CORRUPT,
                       "sleep counters disagree: offloaded %" PRIu64 " > peak %" PRIu64 ", or %" PRIu64 " of %" PRIu64
                       " tags asleep, or %" PRIu64 " bytes woken of %" PRIu64 " slept",
                       s.bytes_offloaded, s.peak_bytes_offloaded, s.tags_asleep, s.tags, s.bytes_woken, s.bytes_slept);
    return GALLOC_OK;
}
