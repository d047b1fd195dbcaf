/*
 * check.c: galloc_check's walk. Verifies, in O(n):
 *   - blocks tile every segment exactly, prev/next links agree, each block
 *     names its segment, pool and stream;
 *   - no two free neighbours are left unmerged;
 *   - free blocks are exactly the free sets' members, in (stream, size, address) order;
 *   - allocated blocks are exactly the pointer map's entries;
 *   - the pending-event queue is well formed (tail is its last entry) and holds
 *     exactly the events the freed-but-waiting blocks count;
 *   - every stat's current value equals a recount, and total_allocated_memory
 *     equals reserved_bytes.all.current.
 * The first violation is reported through ga_fail with GALLOC_E_CORRUPT.
 */
#include <inttypes.h>
#include <string.h>

#include "pool/blockpool.h"
#include "pool/ops.h"
#include "pool/sleep_int.h"
#include "pool/stripe.h"
#include "pool/walk.h"

typedef struct recount {
    int64_t v[GALLOC_STAT_POOLS]; /* per pool index, "all" derived */
} recount_t;

/* A list of macro calls, laid out by hand. */
/* clang-format off */
#define RECOUNTS(X)                                                                                \
    X(segment) X(reserved_bytes) X(allocation) X(allocated_bytes) X(active) X(active_bytes)       \
        X(requested_bytes) X(inactive_split) X(inactive_split_bytes)
/* clang-format on */

typedef struct counts {
#define FIELD_(name) recount_t name;
    RECOUNTS(FIELD_)
#undef FIELD_
    int64_t oversize_allocations, oversize_segments;
    size_t free_blocks, allocated_blocks, unmapped_blocks, pending_blocks;
    size_t held_blocks;    /* allocated blocks of sleeping tags (not in the pointer map) */
    size_t pending_events; /* sum of event_count over the blocks waiting on events */
} counts_t;

static void add(recount_t *r, galloc_stat_pool_t pool, int64_t n)
{
    r->v[GALLOC_STAT_ALL] += n;
    r->v[pool] += n;
}

/* An allocated block is in the pointer map, or, a sleeping tag's, in the
 * tag's held map instead (sleep_int.h). */
static galloc_status_t check_allocated(ga_pool_t *p, const ga_segment_t *s, const ga_block_t *b, counts_t *c)
{
    if (s->slept != NULL) {
        const ga_sleep_entry_t *e = ga_addrmap_find(&s->pool->owner->tag->held, b->addr);
        if (e == NULL || e->block != b || ga_pool_allocated_block(p, b->addr) != NULL)
            return ga_fail(p->err, GALLOC_E_CORRUPT,
                           "sleeping block 0x%" PRIxPTR " missing from its tag's map or still in the pointer map",
                           b->addr);
        c->held_blocks++;
        return GALLOC_OK;
    }
    /* In its stream's stripe map (stripe.h); with the counts equal below, no
     * map holds anything else. */
    const ga_ptr_entry_t *e = ga_addrmap_find(&p->stripes[ga_stripe_of(b->stream)].ptrs, b->addr);
    if (e == NULL || e->block != b)
        return ga_fail(p->err, GALLOC_E_CORRUPT,
                       "allocated block 0x%" PRIxPTR " missing from the pointer map of its stream's stripe", b->addr);
    c->allocated_blocks++;
    return GALLOC_OK;
}

static galloc_status_t check_segment(ga_pool_t *p, const ga_segment_t *s, counts_t *c)
{
    galloc_stat_pool_t sp = s->pool->stat;
    int64_t mapped_bytes = 0;
    if (s->head == NULL || s->head->prev != NULL || s->head->addr != s->base)
        return ga_fail(p->err, GALLOC_E_CORRUPT, "segment 0x%" PRIxPTR ": head block missing or misplaced", s->base);
    uintptr_t expect = s->base;
    bool split = s->head->next != NULL;
    for (const ga_block_t *b = s->head; b != NULL; b = b->next) {
        if (b->addr != expect || b->size == 0 || b->size % GA_MIN_BLOCK_SIZE != 0)
            return ga_fail(p->err, GALLOC_E_CORRUPT,
                           "segment 0x%" PRIxPTR ": block at 0x%" PRIxPTR " (size %zu) does not tile the segment",
                           s->base, b->addr, b->size);
        if (b->seg != s || b->pool != s->pool || b->stream != s->stream)
            return ga_fail(p->err, GALLOC_E_CORRUPT, "block 0x%" PRIxPTR ": wrong segment, pool or stream", b->addr);
        if (b->next != NULL && b->next->prev != b)
            return ga_fail(p->err, GALLOC_E_CORRUPT, "block 0x%" PRIxPTR ": next->prev link broken", b->addr);
        if (!b->mapped && (!s->expandable || b->allocated))
            return ga_fail(p->err, GALLOC_E_CORRUPT, "block 0x%" PRIxPTR ": unmapped yet allocated or not expandable",
                           b->addr);
        if (s->expandable && !b->mapped) {
            if ((b->addr - s->base) % s->page != 0 || b->size % s->page != 0)
                return ga_fail(p->err, GALLOC_E_CORRUPT, "unmapped range 0x%" PRIxPTR " not page aligned", b->addr);
            if (b->next != NULL && !b->next->mapped)
                return ga_fail(p->err, GALLOC_E_CORRUPT, "unmapped ranges 0x%" PRIxPTR " and its next left unmerged",
                               b->addr);
            c->unmapped_blocks++;
            expect = b->addr + b->size;
            continue;
        }
        mapped_bytes += (int64_t)b->size;
        if (!b->allocated && b->event_count > 0) {
            /* Freed, waiting on other streams: still active, no longer allocated. */
            c->pending_blocks++;
            c->pending_events += b->event_count;
            add(&c->active, sp, 1);
            add(&c->active_bytes, sp, (int64_t)b->size);
            add(&c->requested_bytes, sp, (int64_t)b->requested);
        } else if (b->allocated) {
            galloc_status_t st = check_allocated(p, s, b, c);
            if (st != GALLOC_OK)
                return st;
            add(&c->allocation, sp, 1);
            add(&c->allocated_bytes, sp, (int64_t)b->size);
            add(&c->active, sp, 1);
            add(&c->active_bytes, sp, (int64_t)b->size);
            add(&c->requested_bytes, sp, (int64_t)b->requested);
            if (b->size >= p->conf.max_split_size)
                c->oversize_allocations++;
        } else {
            if (b->next != NULL && !b->next->allocated && b->next->mapped && b->next->event_count == 0)
                return ga_fail(p->err, GALLOC_E_CORRUPT, "free blocks 0x%" PRIxPTR " and 0x%" PRIxPTR " left unmerged",
                               b->addr, b->next->addr);
            c->free_blocks++;
            if (split && !s->expandable) {
                add(&c->inactive_split, sp, 1);
                add(&c->inactive_split_bytes, sp, (int64_t)b->size);
            }
        }
        expect = b->addr + b->size;
    }
    if (expect != s->base + s->size)
        return ga_fail(p->err, GALLOC_E_CORRUPT, "segment 0x%" PRIxPTR ": blocks cover %zu of %zu bytes", s->base,
                       (size_t)(expect - s->base), s->size);
    if (s->slept != NULL && !(s->pool->owner != NULL && s->pool->owner->tag != NULL && s->pool->owner->tag->asleep))
        return ga_fail(p->err, GALLOC_E_CORRUPT, "segment 0x%" PRIxPTR " has sleep state but no sleeping tag", s->base);
    /* What a sleep unmapped is not reserved (sleep_int.h). */
    int64_t slept = (int64_t)ga_sleep_seg_bytes(s);
    if (s->expandable) {
        /* Reserved memory is what is mapped; PyTorch counts no segment for it. */
        add(&c->reserved_bytes, sp, mapped_bytes - slept);
        return GALLOC_OK;
    }
    add(&c->segment, sp, 1);
    add(&c->reserved_bytes, sp, (int64_t)s->size - slept);
    if (s->size >= p->conf.max_split_size)
        c->oversize_segments++;
    return GALLOC_OK;
}

/* Free-set members must be free, ordered, and counted once. */
static galloc_status_t check_free_set(ga_pool_t *p, ga_blockpool_t *bp, size_t *members)
{
    const ga_block_t *prev = NULL;
    for (ga_block_t *b = ga_pool_blockpool_first(bp); b != NULL; b = ga_pool_blockpool_next(b)) {
        if (b->allocated || !b->mapped || b->pool != bp)
            return ga_fail(p->err, GALLOC_E_CORRUPT, "free set holds block 0x%" PRIxPTR " that is allocated or foreign",
                           b->addr);
        if (prev != NULL && !ga_pool_blockpool_before(prev, b))
            return ga_fail(p->err, GALLOC_E_CORRUPT, "free set out of order at block 0x%" PRIxPTR, b->addr);
        prev = b;
        (*members)++;
    }
    if (!ga_pool_blockpool_trees_ok(bp))
        return ga_fail(p->err, GALLOC_E_CORRUPT, "a free-set tree is malformed (links, heights, balance or order)");
    if (*members != ga_pool_blockpool_count(bp))
        return ga_fail(p->err, GALLOC_E_CORRUPT, "free set count %zu but %zu members", ga_pool_blockpool_count(bp),
                       *members);
    return GALLOC_OK;
}

/* The pending queue after a failed poll or wait must still be whole: a broken
 * tail would lose the events appended next, and with them their blocks. The
 * walk is bounded by the recount, so a cycle is reported, not looped on. */
static galloc_status_t check_pending(ga_pool_t *p, size_t expected)
{
    size_t n = 0;
    const ga_event_t *last = NULL;
    for (const ga_event_t *e = p->pending_head; e != NULL; e = e->next) {
        if (++n > expected)
            return ga_fail(p->err, GALLOC_E_CORRUPT, "pending-event queue longer than the %zu events blocks wait on",
                           expected);
        if (e->block == NULL || e->block->allocated || e->block->event_count == 0)
            return ga_fail(p->err, GALLOC_E_CORRUPT, "pending event on stream %#lx names no waiting block",
                           (unsigned long)e->stream);
        last = e;
    }
    if (n != expected)
        return ga_fail(p->err, GALLOC_E_CORRUPT, "%zu pending events queued but blocks wait on %zu", n, expected);
    if (p->pending_tail != last)
        return ga_fail(p->err, GALLOC_E_CORRUPT, "pending-event queue tail is not its last entry");
    return GALLOC_OK;
}

static galloc_status_t compare(ga_pool_t *p, const char *name, const galloc_stat_t *arr, const recount_t *r)
{
    static const char *const pools[] = {"all", "small_pool", "large_pool"};
    for (int i = 0; i < GALLOC_STAT_POOLS; i++)
        if (arr[i].current != r->v[i])
            return ga_fail(p->err, GALLOC_E_CORRUPT, "stat %s.%s.current is %" PRId64 " but a recount gives %" PRId64,
                           name, pools[i], arr[i].current, r->v[i]);
    return GALLOC_OK;
}

/* Unmapped-set members (expandable ranges) must be unmapped and free. */
static galloc_status_t count_unmapped(ga_pool_t *p, ga_blockpool_t *bp, size_t *members)
{
    for (ga_avl_node_t *n = ga_pool_avl_first(&bp->unmapped); n != NULL; n = ga_pool_avl_next(n)) {
        const ga_block_t *b = (const ga_block_t *)((const char *)n - offsetof(ga_block_t, node));
        if (b->mapped || b->allocated || b->pool != bp)
            return ga_fail(p->err, GALLOC_E_CORRUPT, "unmapped set holds block 0x%" PRIxPTR " that is mapped", b->addr);
        (*members)++;
    }
    return GALLOC_OK;
}

galloc_status_t ga_pool_check(void *impl)
{
    ga_pool_t *p = impl;
    counts_t c = {0};
    galloc_status_t st;
    for (const ga_segment_t *s = p->segments; s != NULL; s = s->next)
        if ((st = check_segment(p, s, &c)) != GALLOC_OK)
            return st;
    size_t in_sets = 0;
    if ((st = check_free_set(p, &p->small, &in_sets)) != GALLOC_OK)
        return st;
    size_t small_members = in_sets;
    in_sets = 0;
    if ((st = check_free_set(p, &p->large, &in_sets)) != GALLOC_OK)
        return st;
    in_sets += small_members;
    for (ga_private_pool_t *pp = p->private_pools; pp != NULL; pp = pp->next) {
        size_t ns = 0, nl = 0, segs = 0;
        if ((st = check_free_set(p, &pp->small, &ns)) != GALLOC_OK ||
            (st = check_free_set(p, &pp->large, &nl)) != GALLOC_OK)
            return st;
        in_sets += ns + nl;
        for (const ga_segment_t *s = p->segments; s != NULL; s = s->next)
            segs += s->pool->owner == pp;
        if (segs != pp->segments)
            return ga_fail(p->err, GALLOC_E_CORRUPT, "private pool (%llu, %llu) counts %zu segments but holds %zu",
                           (unsigned long long)pp->id_a, (unsigned long long)pp->id_b, pp->segments, segs);
    }
    size_t unmapped_members = 0;
    if ((st = count_unmapped(p, &p->small, &unmapped_members)) != GALLOC_OK ||
        (st = count_unmapped(p, &p->large, &unmapped_members)) != GALLOC_OK)
        return st;
    for (ga_private_pool_t *pp = p->private_pools; pp != NULL; pp = pp->next)
        if ((st = count_unmapped(p, &pp->small, &unmapped_members)) != GALLOC_OK ||
            (st = count_unmapped(p, &pp->large, &unmapped_members)) != GALLOC_OK)
            return st;
    if ((st = ga_pool_check_sleep(p)) != GALLOC_OK)
        return st;
    size_t held = 0;
    for (const ga_tag_t *t = p->tags; t != NULL; t = t->next)
        held += ga_addrmap_count(&t->held);
    if (held != c.held_blocks)
        return ga_fail(p->err, GALLOC_E_CORRUPT, "%zu allocated blocks of sleeping tags but %zu held", c.held_blocks,
                       held);
    if (unmapped_members != c.unmapped_blocks)
        return ga_fail(p->err, GALLOC_E_CORRUPT, "%zu unmapped ranges in segments but %zu in the unmapped sets",
                       c.unmapped_blocks, unmapped_members);
    if (in_sets != c.free_blocks)
        return ga_fail(p->err, GALLOC_E_CORRUPT, "%zu free blocks in segments but %zu in the free sets", c.free_blocks,
                       in_sets);
    if (p->pending_blocks != c.pending_blocks)
        return ga_fail(p->err, GALLOC_E_CORRUPT, "%zu blocks wait on events but %zu are counted", c.pending_blocks,
                       p->pending_blocks);
    /* A deferred block's event_count is its deferral, not a queued event. */
    size_t deferred = 0;
    for (const ga_block_t *b = p->deferred; b != NULL; b = b->link) {
        if (++deferred > c.pending_blocks || b->allocated || b->event_count != 1 || b->uses == NULL)
            return ga_fail(p->err, GALLOC_E_CORRUPT,
                           "deferred free at 0x%" PRIxPTR " is not a freed block with stream "
                           "uses waiting on its deferral alone",
                           b->addr);
    }
    if ((st = check_pending(p, c.pending_events - deferred)) != GALLOC_OK)
        return st;
    if (ga_pool_ptr_count(p) != c.allocated_blocks)
        return ga_fail(p->err, GALLOC_E_CORRUPT, "%zu allocated blocks but %zu in the pointer map", c.allocated_blocks,
                       ga_pool_ptr_count(p));
#define COMPARE_(name)                                                                                                 \
    if ((st = compare(p, #name, p->stats.name, &c.name)) != GALLOC_OK)                                                 \
        return st;
    RECOUNTS(COMPARE_)
#undef COMPARE_
    if (!ga_pool_stripe_shares_ok(p))
        return ga_fail(p->err, GALLOC_E_CORRUPT, "the stripes' shares of the statistics do not add up to them");
    if (p->stats.oversize_allocations.current != c.oversize_allocations ||
        p->stats.oversize_segments.current != c.oversize_segments)
        return ga_fail(p->err, GALLOC_E_CORRUPT,
                       "oversize stats (%" PRId64 ", %" PRId64 ") differ from a recount (%" PRId64 ", %" PRId64 ")",
                       p->stats.oversize_allocations.current, p->stats.oversize_segments.current,
                       c.oversize_allocations, c.oversize_segments);
    if ((int64_t)p->total_allocated_memory != p->stats.reserved_bytes[GALLOC_STAT_ALL].current)
        return ga_fail(p->err, GALLOC_E_CORRUPT, "total_allocated_memory %zu differs from reserved_bytes %" PRId64,
                       p->total_allocated_memory, p->stats.reserved_bytes[GALLOC_STAT_ALL].current);
    return GALLOC_OK;
}

/* Fragmentation metrics: one pass over the pool's runs (walk.h). */
static void frag_add(galloc_pool_fragmentation_t *f, int64_t active, int64_t free_bytes, int64_t split_free,
                     int64_t largest, int64_t nfree)
{
    f->reserved_bytes += active + free_bytes;
    f->active_bytes += active;
    f->free_bytes += free_bytes;
    f->inactive_split_bytes += split_free;
    f->free_blocks += nfree;
    if (largest > f->largest_free_block)
        f->largest_free_block = largest;
}

/* A run: a whole plain segment, or a maximal mapped range of an expandable one. */
static int frag_run(void *ctx, const ga_pool_run_t *run)
{
    galloc_pool_fragmentation_t *f = ctx;
    int64_t active = 0, free_bytes = 0, largest = 0, nfree = 0;
    for (const ga_block_t *b = run->first; b != run->end; b = b->next) {
        if (ga_pool_block_state(b) != GALLOC_BLOCK_FREE) {
            active += (int64_t)b->size;
        } else {
            free_bytes += (int64_t)b->size;
            nfree++;
            if ((int64_t)b->size > largest)
                largest = (int64_t)b->size;
        }
    }
    int64_t split_free = active > 0 ? free_bytes : 0;
    frag_add(&f[GALLOC_STAT_ALL], active, free_bytes, split_free, largest, nfree);
    frag_add(&f[run->seg->pool->stat], active, free_bytes, split_free, largest, nfree);
    return 0;
}

void ga_pool_fragmentation(void *impl, galloc_fragmentation_t *out)
{
    const ga_pool_t *p = impl;
    galloc_pool_fragmentation_t f[GALLOC_STAT_POOLS];
    memset(f, 0, sizeof(f));
    /* A sleeping tag's segment holds no device memory to fragment. */
    (void)ga_pool_walk(p, GA_WALK_AWAKE_ONLY, frag_run, f);
    for (int i = 0; i < GALLOC_STAT_POOLS; i++)
        f[i].external_fragmentation =
            f[i].free_bytes > 0 ? 1.0 - (double)f[i].largest_free_block / (double)f[i].free_bytes : 0.0;
    size_t n = out->struct_size < sizeof(*out) ? out->struct_size : sizeof(*out);
    if (n > sizeof(uint32_t))
        memcpy((char *)out + offsetof(galloc_fragmentation_t, pool), f, n - offsetof(galloc_fragmentation_t, pool));
}
