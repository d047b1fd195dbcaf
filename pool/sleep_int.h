/*
 * sleep_int.h: sleep and wake's private structures (galloc_sleep.h), shared
 * by tags.c (names, lists, scopes, counters, the hooks in malloc and free),
 * sleep.c (sleep and wake themselves), check.c and pool.c (destroy).
 *
 * Model. A tag is a private pool (ga_private_pool_t.tag) whose segments come
 * through the backend's virtual memory: expandable segments page by page as
 * for the default pools, or, without expandable_segments, one va_reserve and
 * one map of the whole segment (ga_segment_t.vmm). Asleep, every segment of
 * the tag has a bitmap (ga_segment_t.slept) of the sleep units it released:
 * an expandable segment's pages, or a plain segment's single unit. Blocks keep
 * their structure and their `mapped` flags (what was mapped before the sleep),
 * so that wake maps exactly the units whose bits are set. The allocated blocks
 * leave the pointer map for the tag's `held` map, with their host copies:
 * free of such a pointer then misses the pointer map and lands on the cold
 * path (ga_pool_free_missing), so the hot free needs no test for sleep. A
 * route to a sleeping tag leads to ga_pool_t.asleep_bp, a block pool without
 * free sets whose owner is the tag's pool (ga_pool_get_routed_pool, entered
 * only while some route is active); ga_pool_blockpool_prepare_slow refuses
 * it, so malloc's existing failure branch reports GALLOC_E_ASLEEP
 * (ga_pool_prepare_failed). The default pools' malloc and free gain nothing.
 *
 * Accounting: reserved_bytes and total_allocated_memory count mapped bytes,
 * so a unit unmapped by sleep is subtracted from them (its pool's stat) and
 * added back when wake maps it; galloc_check recounts them that way.
 */
#ifndef GA_POOL_SLEEP_INT_H
#define GA_POOL_SLEEP_INT_H

#include "pool/pool_int.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An allocated block of a sleeping tag, in the tag's `held` map. */
typedef struct ga_sleep_entry {
    uintptr_t addr;     /* the block's address: the key */
    ga_block_t *block;  /* the block (allocated, out of the pointer map) */
    void *host;         /* pinned host copy of its b->size bytes, NULL when discarded */
} ga_sleep_entry_t;

typedef struct ga_tag {
    char name[GALLOC_TAG_MAX];
    ga_private_pool_t *pool;  /* its private pool */
    bool own_pool;            /* created by galloc_tag_begin: the tag holds the pool's use */
    bool asleep;
    bool sel, offload;        /* marks of the tag lists of the call under way */
    ga_addrmap_t held;        /* asleep: its allocated blocks (ga_sleep_entry_t) */
    size_t bytes_offloaded;   /* host bytes held now */
    size_t bytes_asleep;      /* device bytes unmapped by sleep now */
    struct ga_tag *next;      /* the pool's tags */
} ga_tag_t;

/* tags.c */
ga_tag_t *ga_tag_find(const ga_pool_t *p, const char *name, size_t len);
/* Mark the tags named by list (names separated by commas) in sel (which ==
 * 0) or offload (which == 1), clearing the other marks of that kind. NULL or
 * "" marks every tag for sel and none for offload. GALLOC_E_INVAL with a
 * message for a bad name, an empty element or an unknown tag. */
galloc_status_t ga_tag_mark(ga_pool_t *p, const char *list, int which, const char *who);
/* Give a host copy back; a refused free is kept and retried (ga_pool_host_retry). */
void ga_pool_host_drop(ga_pool_t *p, void *host, size_t bytes);
void ga_pool_host_retry(ga_pool_t *p);
/* Pinned host blocks kept for the next sleep (tags.c): init (pool create),
 * keep one (given back at once when the map cannot grow), take one of
 * exactly `bytes` (NULL if none), give them all back (galloc_empty_cache,
 * destroy). */
void ga_pool_host_spare_init(ga_pool_t *p);
void ga_pool_host_keep(ga_pool_t *p, void *host, size_t bytes);
void *ga_pool_host_take(ga_pool_t *p, size_t bytes);
void ga_pool_host_spare_release(ga_pool_t *p);
/* A private pool is deleted (release_private_pools): forget its tag. */
void ga_pool_tag_forget(ga_pool_t *p, ga_tag_t *t);
/* Destroy: host copies and tag records (segments are the caller's). */
void ga_pool_tags_destroy(ga_pool_t *p);

/* sleep.c */
/* Sleep units of a segment and their size. */
static inline size_t ga_sleep_units(const ga_segment_t *s)
{
    return s->expandable ? s->size / s->page : 1;
}
static inline size_t ga_sleep_unit_bytes(const ga_segment_t *s)
{
    return s->expandable ? s->page : s->size;
}
static inline bool ga_sleep_bit(const uint64_t *bits, size_t i)
{
    return (bits[i / 64] >> (i % 64)) & 1u;
}
/* Bytes of s unmapped by sleep now (0 while awake). */
size_t ga_sleep_seg_bytes(const ga_segment_t *s);
/* galloc_check's part: the held maps, bitmaps and counters of every tag. */
galloc_status_t ga_pool_check_sleep(ga_pool_t *p);

#ifdef __cplusplus
}
#endif
#endif /* GA_POOL_SLEEP_INT_H */
