/*
 * tags.c: sleep tags (galloc_sleep.h): names and lists, the scopes
 * (galloc_tag_begin/end over the private-pool routes), marking a MemPool,
 * the counters, a tag pool's plain VMM segments, and the hooks of sleep in
 * malloc's and free's cold branches. Sleep and wake themselves are in
 * sleep.c; the model is in sleep_int.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool/capture.h"
#include "pool/free.h"
#include "pool/ops.h"
#include "pool/pinned.h"
#include "pool/private.h"
#include "pool/streams.h"
#include "pool/tags.h"
#include "stats/stats.h"
#include "util/assert.h"

static bool name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '-';
}

static bool name_ok(const char *name, size_t len)
{
    if (len == 0 || len >= GALLOC_TAG_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!name_char(name[i]))
            return false;
    return true;
}

ga_tag_t *ga_tag_find(const ga_pool_t *p, const char *name, size_t len)
{
    for (ga_tag_t *t = p->tags; t != NULL; t = t->next)
        if (strlen(t->name) == len && memcmp(t->name, name, len) == 0)
            return t;
    return NULL;
}

galloc_status_t ga_tag_mark(ga_pool_t *p, const char *list, int which, const char *who)
{
    for (ga_tag_t *t = p->tags; t != NULL; t = t->next) {
        bool all = which == 0 && (list == NULL || list[0] == '\0');
        if (which == 0)
            t->sel = all;
        else
            t->offload = false;
    }
    if (list == NULL || list[0] == '\0')
        return GALLOC_OK;
    /* Every name is checked before any is marked: a bad list marks nothing. */
    for (int pass = 0; pass < 2; pass++) {
        const char *s = list;
        for (;;) {
            const char *comma = strchr(s, ',');
            size_t len = comma != NULL ? (size_t)(comma - s) : strlen(s);
            ga_tag_t *t = name_ok(s, len) ? ga_tag_find(p, s, len) : NULL;
            if (t == NULL)
                return ga_fail(p->err, GALLOC_E_INVAL, "%s: '%.*s' in \"%.200s\" is %s", who,
                               (int)(len > 64 ? 64 : len), s, list,
                               name_ok(s, len) ? "not a tag of this allocator" : "not a valid tag name");
            if (pass == 1) {
                if (which == 0)
                    t->sel = true;
                else
                    t->offload = true;
            }
            if (comma == NULL)
                break;
            s = comma + 1;
        }
    }
    return GALLOC_OK;
}

galloc_status_t ga_tag_select_sleep(ga_pool_t *p, const char *tags, const char *offload_tags, const char *who,
                                    bool *any)
{
    char offload_who[48];
    snprintf(offload_who, sizeof(offload_who), "%s (offload_tags)", who);
    galloc_status_t st = ga_tag_mark(p, tags, 0, who);
    if (st == GALLOC_OK)
        st = ga_tag_mark(p, offload_tags, 1, offload_who);
    if (st != GALLOC_OK)
        return st;
    bool copies = false, awake = false;
    for (const ga_tag_t *t = p->tags; t != NULL; t = t->next) {
        awake |= t->sel && !t->asleep;
        copies |= t->sel && !t->asleep && t->offload;
    }
    if (any != NULL)
        *any = awake;
    if (copies && !ga_backend_can_offload(p->backend))
        return ga_fail(p->err, GALLOC_E_UNSUPPORTED,
                       "%s: device backend \"%s\" has no pinned host memory and copies to offload to", who,
                       p->backend->ops->name);
    return GALLOC_OK;
}

static galloc_status_t bad_name(ga_pool_t *p, const char *who, const char *tag)
{
    return ga_fail(p->err, GALLOC_E_INVAL, "%s: \"%.64s\" is not a valid tag name (1 to %d of A-Z a-z 0-9 _ . -)", who,
                   tag, GALLOC_TAG_MAX - 1);
}

static galloc_status_t tag_new(ga_pool_t *p, ga_private_pool_t *pp, const char *name, ga_tag_t **out)
{
    GA_ASSERT(pp != NULL && pp->tag == NULL && !pp->asleep); /* one tag a pool, made awake */
    ga_tag_t *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return ga_fail(p->err, GALLOC_E_NOMEM, "out of host memory creating tag \"%s\"", name);
    memcpy(t->name, name, strlen(name) + 1);
    t->pool = pp;
    ga_addrmap_init(&t->held, sizeof(ga_sleep_entry_t));
    t->next = p->tags;
    p->tags = t;
    pp->tag = t;
    *out = t;
    return GALLOC_OK;
}

galloc_status_t ga_pool_tag_begin(void *impl, const char *tag)
{
    ga_pool_t *p = impl;
    if (!name_ok(tag, strlen(tag)))
        return bad_name(p, "tag_begin", tag);
    ga_tag_t *t = ga_tag_find(p, tag, strlen(tag));
    if (t == NULL) {
        galloc_mempool_id_t id;
        galloc_status_t st = ga_pool_mempool_create(p, &id);
        if (st != GALLOC_OK)
            return st;
        ga_private_pool_t *pp = ga_pool_private_find(p, id);
        st = tag_new(p, pp, tag, &t);
        if (st != GALLOC_OK) {
            pp->use_count = 0; /* an empty freeable pool: the next release deletes it */
            return st;
        }
        t->own_pool = true;
    }
    return ga_pool_mempool_begin(p, (galloc_mempool_id_t){.a = t->pool->id_a, .b = t->pool->id_b}, GALLOC_ROUTE_THREAD,
                                 0);
}

galloc_status_t ga_pool_tag_end(void *impl, const char *tag)
{
    ga_pool_t *p = impl;
    ga_tag_t *t = ga_tag_find(p, tag, strlen(tag));
    if (t == NULL)
        return ga_fail(p->err, GALLOC_E_INVAL, "tag_end: no tag \"%.64s\"", tag);
    return ga_pool_mempool_end(p, (galloc_mempool_id_t){.a = t->pool->id_a, .b = t->pool->id_b});
}

galloc_status_t ga_pool_mempool_set_tag(void *impl, galloc_mempool_id_t id, const char *tag)
{
    ga_pool_t *p = impl;
    ga_private_pool_t *pp = ga_pool_private_find_live(p, id, "mempool_set_tag");
    if (pp == NULL)
        return GALLOC_E_INVAL;
    if (!name_ok(tag, strlen(tag)))
        return bad_name(p, "mempool_set_tag", tag);
    if (pp->tag != NULL || ga_tag_find(p, tag, strlen(tag)) != NULL)
        return ga_fail(p->err, GALLOC_E_INVAL, "mempool_set_tag: %s",
                       pp->tag != NULL ? "the pool has a tag already" : "the tag name is in use");
    if (pp->segments != 0)
        return ga_fail(p->err, GALLOC_E_INVAL, "mempool_set_tag: pool (%llu, %llu) holds %zu segments already",
                       (unsigned long long)id.a, (unsigned long long)id.b, pp->segments);
    ga_tag_t *t;
    return tag_new(p, pp, tag, &t);
}

galloc_status_t ga_pool_sleep_stats(void *impl, galloc_sleep_stats_t *out)
{
    const ga_pool_t *p = impl;
    *out = p->sleep;
    out->tags = out->tags_asleep = out->bytes_asleep = out->bytes_offloaded = 0;
    out->bytes_host_cached = ga_pool_host_kept_bytes(p);
    for (const ga_tag_t *t = p->tags; t != NULL; t = t->next) {
        out->tags++;
        out->tags_asleep += t->asleep;
        out->bytes_asleep += t->bytes_asleep;
        out->bytes_offloaded += t->bytes_offloaded;
    }
    return GALLOC_OK;
}

galloc_status_t ga_pool_tag_asleep(void *impl, const char *tag, int *asleep)
{
    ga_pool_t *p = impl;
    ga_tag_t *t = ga_tag_find(p, tag, strlen(tag));
    if (t == NULL)
        return ga_fail(p->err, GALLOC_E_INVAL, "tag_asleep: no tag \"%.64s\"", tag);
    *asleep = t->asleep;
    return GALLOC_OK;
}

galloc_status_t ga_pool_prepare_failed(ga_pool_t *p, const ga_blockpool_t *bp)
{
    if (bp->owner != NULL && bp->owner->asleep)
        return ga_fail(p->err, GALLOC_E_ASLEEP, "cannot allocate from tag \"%s\": it is asleep (galloc_wake first)",
                       bp->owner->tag->name);
    return ga_fail(p->err, GALLOC_E_NOMEM, "out of host memory for allocator bookkeeping");
}

/* The held entry of a sleeping tag's block at addr, and its tag; NULL if none. */
static ga_sleep_entry_t *find_held(const ga_pool_t *p, uintptr_t addr, ga_tag_t **tag)
{
    for (ga_tag_t *t = p->tags; t != NULL; t = t->next) {
        ga_sleep_entry_t *e = t->asleep ? ga_addrmap_find(&t->held, addr) : NULL;
        if (e != NULL) {
            *tag = t;
            return e;
        }
    }
    return NULL;
}

ga_block_t *ga_pool_held_block(const ga_pool_t *p, uintptr_t addr)
{
    ga_tag_t *t;
    const ga_sleep_entry_t *e = find_held(p, addr, &t);
    return e != NULL ? e->block : NULL;
}

galloc_status_t ga_pool_free_missing(ga_pool_t *p, void *ptr)
{
    ga_tag_t *t;
    ga_sleep_entry_t *e = find_held(p, (uintptr_t)ptr, &t);
    if (e != NULL) {
        ga_block_t *b = e->block;
        if (b->uses != NULL) {
            galloc_status_t st = ga_pool_free_uses(p, b);
            if (st != GALLOC_OK)
                return st;
        }
        /* Free, not restored on wake: its copy goes (kept for a later sleep); the device is not touched. */
        if (e->host != NULL) {
            ga_pool_host_keep(p, e->host);
            t->bytes_offloaded -= b->size;
        }
        GA_ASSERT(t->asleep && b->allocated && t->bytes_offloaded <= SIZE_MAX / 2);
        ga_addrmap_remove(&t->held, e);
        ga_pool_free_held(p, b);
        return GALLOC_OK;
    }
    return ga_fail(p->err, GALLOC_E_NOT_OWNED,
                   "invalid device pointer: %p (not allocated by this allocator, "
                   "already freed, or not the start of a block)",
                   ptr);
}

void ga_pool_tag_forget(ga_pool_t *p, ga_tag_t *t)
{
    for (ga_tag_t **link = &p->tags; *link != NULL; link = &(*link)->next) {
        if (*link == t) {
            *link = t->next;
            break;
        }
    }
    ga_addrmap_destroy(&t->held);
    free(t);
}

void ga_pool_tags_destroy(ga_pool_t *p)
{
    while (p->tags != NULL) {
        ga_tag_t *t = p->tags;
        for (size_t i = 0; i < t->held.cap; i++) {
            ga_sleep_entry_t *e = ga_addrmap_slot(&t->held, i);
            if (e != NULL && e->host != NULL)
                ga_pool_host_drop(p, e->host);
        }
        t->pool->tag = NULL;
        ga_pool_tag_forget(p, t);
    }
    ga_pool_host_spare_release(p);
    ga_pool_host_retry(p);
}

galloc_status_t ga_pool_vmm_alloc(ga_pool_t *p, size_t size, uintptr_t *addr, size_t *span)
{
    const galloc_backend_ops_t *ops = p->backend->ops;
    if (!(GA_BACKEND_HAS(ops, va_reserve) && GA_BACKEND_HAS(ops, va_release) && GA_BACKEND_HAS(ops, map) &&
          GA_BACKEND_HAS(ops, unmap)))
        return ga_fail(p->err, GALLOC_E_UNSUPPORTED,
                       "a sleep tag needs a device backend with virtual memory (va_reserve, map, unmap, va_release); "
                       "\"%s\" has none",
                       ops->name);
    size_t gran = 0;
    if (ga_backend_granularity(p->backend, &gran) != GALLOC_OK || gran == 0)
        gran = 1;
    size_t n = (size + gran - 1) / gran * gran;
    uintptr_t base = 0;
    galloc_status_t st = ga_backend_va_reserve(p->backend, n, &base);
    if (st != GALLOC_OK)
        return st;
    st = ga_backend_map(p->backend, base, n);
    if (st != GALLOC_OK) {
        (void)ga_backend_va_release(p->backend, base, n);
        return st;
    }
    *addr = base;
    *span = n;
    return GALLOC_OK;
}

bool ga_pool_vmm_free(ga_pool_t *p, ga_segment_t *seg)
{
    if (ga_backend_unmap(p->backend, seg->base, seg->page) != GALLOC_OK)
        return false;
    if (ga_backend_va_release(p->backend, seg->base, seg->page) != GALLOC_OK) {
        /* Mapped again, the segment stays as it was; if even that is refused
         * the range is lost to this process, its memory is not. */
        return ga_backend_map(p->backend, seg->base, seg->page) != GALLOC_OK;
    }
    return true;
}

size_t ga_pool_asleep_allocated_bytes(const ga_pool_t *p)
{
    size_t n = 0;
    for (const ga_segment_t *s = p->segments; s != NULL; s = s->next)
        if (s->pool->owner != NULL && s->pool->owner->asleep)
            for (const ga_block_t *b = s->head; b != NULL; b = b->next)
                n += b->allocated ? b->size : 0;
    return n;
}
