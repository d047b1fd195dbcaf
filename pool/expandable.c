/*
 * expandable.c: expandable segments (expandable_segments:True), as PyTorch's
 * ExpandableSegment, find_expandable_block, map_block, unmap_block and
 * try_allocate_expandable_block do (pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp).
 *
 * One expandable segment per (stream, pool) at a time grows page by page: a
 * virtual range of 1 1/8 the device's memory (or the stream's configured
 * expandable_segments_reserve, reserve.c) is
 * reserved once, pages of 2 MiB (small pool) or large_segment_size (20 MiB by
 * default, large pool) are mapped
 * at the end of what is mapped when a request finds no free block, and whole
 * free pages are unmapped by empty_cache and the OOM path. Inside a segment,
 * blocks split (remainder >= 512 B) and merge like any others; an unmapped
 * range is a block with mapped == false kept in the pool's unmapped set.
 *
 * Accounting as PyTorch's: reserved_bytes follows mapped bytes; each mapping
 * call counts one num_device_alloc, each unmapping call one num_device_free;
 * the segment, oversize_segments and inactive_split stats never count
 * expandable segments.
 */
#include "pool/blockpool.h"
#include "pool/expandable.h"
#include "pool/free.h"
#include "pool/hooks.h"
#include "pool/records.h"
#include "pool/release.h"
#include "pool/reserve.h"
#include "pool/sleep_int.h"
#include "stats/stats.h"

static bool allocatable(const ga_block_t *b)
{
    return b != NULL && !b->allocated && b->event_count == 0;
}

/* Enough free-or-unmapped address space from b on to hold size bytes? */
static bool has_space(const ga_block_t *b, size_t size)
{
    size_t bytes = 0;
    while (bytes < size && allocatable(b)) {
        bytes += b->size;
        b = b->next;
    }
    return bytes >= size;
}

/* A new expandable segment for (stream, pool): its whole range is one
 * unmapped block. The range is the stream's reserve in whole pages
 * (reserve.c); one smaller than size can never hold the request, so it is
 * given back at once and no block is returned (find_expandable_block). */
static ga_block_t *new_segment(ga_pool_t *p, ga_alloc_params_t *ap, size_t size)
{
    size_t page = ap->pool->is_small ? GA_SMALL_BUFFER : (size_t)p->conf.large_segment_size;
    size_t reserve = ga_pool_reserve_bytes(p, ap->stream);
    size_t pages = reserve / page + (reserve % page != 0);
    if (pages == 0)
        pages = 1;
    uintptr_t base = 0;
    if (ga_backend_va_reserve(p->backend, pages * page, &base) != GALLOC_OK)
        return NULL;
    if (pages * page < size) {
        (void)ga_backend_va_release(p->backend, base, pages * page);
        return NULL;
    }
    ga_records_t *r = ga_pool_records_of(p, ap->stream);
    ga_segment_t *seg = ga_pool_records_get_segment(r);
    ga_block_t *b = ga_pool_records_get_block(r);
    seg->base = base;
    seg->size = pages * page;
    seg->expandable = true;
    seg->vmm = false;
    seg->slept = NULL;
    seg->page = page;
    seg->stream = ap->stream;
    seg->pool = ap->pool;
    ga_pool_segment_init(p, seg, b, base, seg->size, false);
    ga_pool_blockpool_insert_unmapped(ap->pool, b);
    if (ap->pool->owner != NULL) /* a sleep tag's: its pool must outlive it */
        ap->pool->owner->segments++;
    return b;
}

/* PyTorch's find_expandable_block: the lowest address of any segment of this
 * stream and pool where enough free and unmapped space follows. */
static ga_block_t *find_block(ga_pool_t *p, ga_alloc_params_t *ap, size_t size)
{
    for (ga_block_t *c = ga_pool_blockpool_unmapped_first(ap->pool, ap->stream); c != NULL && c->stream == ap->stream;
         c = ga_pool_blockpool_unmapped_next(c)) {
        ga_block_t *start = allocatable(c->prev) ? c->prev : c;
        if (has_space(start, size))
            return start;
    }
    return new_segment(p, ap, size);
}

/* Unmap the pages [first, last) of seg, last first, untold: an undo. */
static void unmap_pages(ga_pool_t *p, const ga_segment_t *seg, size_t first, size_t last)
{
    while (last-- > first)
        (void)ga_backend_unmap(p->backend, seg->base + last * seg->page, seg->page);
}

/* Map the pages [first, last) of seg; all or nothing, as ExpandableSegment::map. */
static bool map_pages(ga_pool_t *p, const ga_segment_t *seg, size_t first, size_t last)
{
    for (size_t i = first; i < last; i++) {
        if (ga_backend_map(p->backend, seg->base + i * seg->page, seg->page) != GALLOC_OK) {
            unmap_pages(p, seg, first, i);
            return false;
        }
    }
    return true;
}

/* PyTorch's map_block: back the first `size` bytes (rounded up to pages) of an
 * unmapped block, merge it with free neighbours, count it. GALLOC_E_OOM
 * (the device or the records refused) or GALLOC_E_HOOK (a hook refused a
 * page: every page goes back) change nothing. */
static galloc_status_t map_block(ga_pool_t *p, ga_block_t *b, size_t size, uint32_t stack_id)
{
    ga_segment_t *seg = b->seg;
    size_t first = (b->addr - seg->base) / seg->page;
    size_t last = (b->addr + size - seg->base + seg->page - 1) / seg->page;
    size_t mapped = (last - first) * seg->page;
    if (ga_pool_records_reserve(ga_pool_records_of(p, seg->stream), 1, 0) != GALLOC_OK ||
        !map_pages(p, seg, first, last))
        return GALLOC_E_OOM;
    if (ga_pool_hooked(p)) { /* one MAP per page: each matches the one UNMAP of its page */
        galloc_status_t st =
            ga_pool_hook_appear_pages(p, seg->base + first * seg->page, seg->page, last - first, b->stream, b->pool);
        if (st != GALLOC_OK) {
            unmap_pages(p, seg, first, last);
            return st;
        }
    }
    ga_pool_blockpool_remove_unmapped(b->pool, b);
    b->mapped = true;
    if (mapped < b->size) {
        /* The rest of the range stays unmapped, right after b. */
        ga_block_t *rest = ga_pool_records_get_block(ga_pool_records_of(p, seg->stream));
        *rest = *b;
        rest->requested = 0; /* a new Block in PyTorch's map_block */
        rest->addr = b->addr + mapped;
        rest->size = b->size - mapped;
        rest->mapped = false;
        rest->prev = b;
        rest->next = b->next;
        if (b->next != NULL)
            b->next->prev = rest;
        b->next = rest;
        b->size = mapped;
        ga_pool_blockpool_insert_unmapped(b->pool, rest);
    }
    ga_pool_try_merge(p, b, b->prev);
    ga_pool_try_merge(p, b, b->next);
    ga_pool_blockpool_insert(b->pool, b);
    p->total_allocated_memory += mapped;
    ga_stat_update(p->stats.reserved_bytes, b->pool->stat, (int64_t)mapped);
    p->stats.num_device_alloc++;
    if (seg->stack_id == 0)
        seg->stack_id = stack_id;
    ga_trace_record(&p->trace, GA_TRACE_SEGMENT_MAP, seg->base + first * seg->page, mapped, b->stream, NULL, stack_id);
    return GALLOC_OK;
}

/* PyTorch's try_allocate_expandable_block: map until a free block of at least
 * ap->size exists at the candidate, then take it out of the free set. */
galloc_status_t ga_pool_try_allocate_expandable(ga_pool_t *p, ga_alloc_params_t *ap)
{
    size_t size = ap->size;
    if (ga_pool_records_reserve(ga_pool_records_of(p, ap->stream), 1, 1) != GALLOC_OK)
        return GALLOC_E_NOMEM;
    ga_block_t *c = find_block(p, ap, size);
    if (c == NULL)
        return GALLOC_E_OOM;
    galloc_status_t st;
    if (!c->mapped && (st = map_block(p, c, c->size < size ? c->size : size, ap->stack_id)) != GALLOC_OK)
        return st;
    while (c->size < size) {
        /* invariant: c is free and mapped, followed by an unmapped range */
        ga_block_t *next = c->next;
        size_t remaining = size - c->size;
        if ((st = map_block(p, next, remaining < next->size ? remaining : next->size, ap->stack_id)) != GALLOC_OK)
            return st;
        c = next; /* map_block merged c into next */
    }
    /* The split that follows needs a record; mapped pages stay cached if not. */
    if (ga_pool_records_reserve(ga_pool_records_of(p, ap->stream), 1, 0) != GALLOC_OK)
        return GALLOC_E_NOMEM;
    ga_pool_blockpool_remove(ap->pool, c);
    ap->block = c;
    return GALLOC_OK;
}

/* Give a fully unmapped segment's address range back (release_expandable_segment). */
static void release_segment(ga_pool_t *p, ga_block_t *b)
{
    ga_segment_t *seg = b->seg;
    if (ga_backend_va_release(p->backend, seg->base, seg->size) != GALLOC_OK)
        return; /* keep it: still consistent, retried by the next empty_cache */
    ga_pool_blockpool_remove_unmapped(b->pool, b);
    if (b->pool->owner != NULL)
        b->pool->owner->segments--;
    ga_pool_unlink_segment(p, seg);
    ga_pool_records_put_block(ga_pool_records_of(p, seg->stream), b);
    ga_pool_records_put_segment(ga_pool_records_of(p, seg->stream), seg);
}

void ga_pool_unmap_block(ga_pool_t *p, ga_block_t *b)
{
    ga_segment_t *seg = b->seg;
    /* Only whole pages strictly inside the block (ExpandableSegment::unmap). */
    size_t first = (b->addr - seg->base + seg->page - 1) / seg->page;
    size_t last = (b->addr + b->size - seg->base) / seg->page;
    if (first >= last || ga_pool_records_reserve(ga_pool_records_of(p, seg->stream), 2, 0) != GALLOC_OK)
        return;
    size_t done = first;
    for (; done < last; done++) {
        uintptr_t page = seg->base + done * seg->page;
        if (ga_pool_hooked(p)) /* told before the page goes, so a hook can deregister it while it is there */
            ga_pool_hook_disappear(p, GALLOC_HOOK_SEGMENT_UNMAP, page, seg->page, b->stream, b->pool, 0);
        if (ga_backend_unmap(p->backend, page, seg->page) != GALLOC_OK) {
            if (ga_pool_hooked(p))
                ga_pool_hook_restored(p, GALLOC_HOOK_SEGMENT_MAP, page, seg->page, b->stream, b->pool);
            break;
        }
    }
    if (done < last) /* the refused page and the ones after it stay mapped */
        ga_pool_note_refused(p, "unmap", seg->base + done * seg->page, seg->page);
    if (done == first)
        return;
    uintptr_t ustart = seg->base + first * seg->page;
    size_t usize = (done - first) * seg->page;
    ga_pool_blockpool_remove(b->pool, b);

    size_t before = ustart - b->addr;
    if (before > 0) {
        /* prev? -> free part before the unmapped pages -> b */
        ga_block_t *f = ga_pool_records_get_block(ga_pool_records_of(p, seg->stream));
        *f = *b;
        f->requested = 0; /* a new Block in PyTorch's unmap_block, as the one after */
        f->size = before;
        f->prev = b->prev;
        f->next = b;
        if (b->prev != NULL)
            b->prev->next = f;
        else
            seg->head = f;
        b->prev = f;
        ga_pool_blockpool_insert(b->pool, f);
    }
    size_t after = b->size - before - usize;
    if (after > 0) {
        ga_block_t *f = ga_pool_records_get_block(ga_pool_records_of(p, seg->stream));
        *f = *b;
        f->requested = 0;
        f->addr = ustart + usize;
        f->size = after;
        f->prev = b;
        f->next = b->next;
        if (b->next != NULL)
            b->next->prev = f;
        b->next = f;
        ga_pool_blockpool_insert(b->pool, f);
    }
    b->addr = ustart;
    b->size = usize;
    b->mapped = false;
    ga_pool_try_merge(p, b, b->prev);
    ga_pool_try_merge(p, b, b->next);
    ga_pool_blockpool_insert_unmapped(b->pool, b);
    p->total_allocated_memory -= usize;
    ga_stat_update(p->stats.reserved_bytes, b->pool->stat, -(int64_t)usize);
    p->stats.num_device_free++;
    ga_trace_record(&p->trace, GA_TRACE_SEGMENT_UNMAP, ustart, usize, b->stream, NULL, seg->stack_id);
    if (b->prev == NULL && b->next == NULL)
        release_segment(p, b);
}

void ga_pool_expandable_teardown(ga_pool_t *p, ga_segment_t *seg)
{
    /* Mapped runs start and end on page boundaries: unmap them page by page. */
    for (ga_block_t *b = seg->head; b != NULL; b = b->next) {
        if (!b->mapped)
            continue;
        size_t first = (b->addr - seg->base) / seg->page;
        size_t last = (b->addr + b->size - seg->base + seg->page - 1) / seg->page;
        for (size_t i = first; i < last; i++) {
            uintptr_t a = seg->base + i * seg->page;
            /* A page shared with the previous mapped block was unmapped already;
             * one a sleep unmapped is not mapped now. */
            if ((b->prev != NULL && b->prev->mapped && a < b->addr) || (seg->slept && ga_sleep_bit(seg->slept, i)))
                continue;
            (void)ga_backend_unmap(p->backend, a, seg->page);
        }
    }
    (void)ga_backend_va_release(p->backend, seg->base, seg->size);
}
