/*
 * tags.h: sleep tags (tags.c, galloc_sleep.h): names and lists, a tag pool's
 * plain VMM segments, and the hooks of sleep in malloc's and free's cold
 * branches. The pinned host blocks kept between sleeps are pinned.h's; sleep
 * and wake themselves, and the model, are in sleep_int.h.
 *
 * Locking: the locked path.
 */
#ifndef GA_POOL_TAGS_H
#define GA_POOL_TAGS_H

#include "pool/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The tag named by name[0, len), or NULL. */
ga_tag_t *ga_tag_find(const ga_pool_t *p, const char *name, size_t len);
/* Mark the tags named by list (names separated by commas) in sel (which ==
 * 0) or offload (which == 1), clearing the other marks of that kind. NULL or
 * "" marks every tag for sel and none for offload. GALLOC_E_INVAL with a
 * message for a bad name, an empty element or an unknown tag. */
galloc_status_t ga_tag_mark(ga_pool_t *p, const char *list, int which, const char *who);
/* The tags of a sleep, or of its prepare (who names the call in messages):
 * tags marked in sel, offload_tags in offload, as ga_tag_mark; then
 * GALLOC_E_UNSUPPORTED with a message if an awake selected tag is to be
 * offloaded on a backend without pinned host memory and copies. *any (if
 * not NULL): whether some selected tag is awake. */
galloc_status_t ga_tag_select_sleep(ga_pool_t *p, const char *tags, const char *offload_tags, const char *who,
                                    bool *any);
/* A private pool is deleted (release_private_pools): forget its tag. */
void ga_pool_tag_forget(ga_pool_t *p, ga_tag_t *t);
/* Destroy: host copies and tag records (segments are the caller's). */
void ga_pool_tags_destroy(ga_pool_t *p);

/* Whether bp belongs to a tag (its segments come through virtual memory). */
static inline bool ga_pool_is_tagged(const ga_blockpool_t *bp)
{
    return bp->owner != NULL && bp->owner->tag != NULL;
}
/* A tag pool's plain segment: va_reserve + map of *span bytes (size rounded
 * to the granularity). GALLOC_E_UNSUPPORTED (with a message) without virtual
 * memory; the map's or reservation's failure otherwise. */
galloc_status_t ga_pool_vmm_alloc(ga_pool_t *p, size_t size, uintptr_t *addr, size_t *span);
/* Give a plain VMM segment back (unmap + va_release); false when refused. */
bool ga_pool_vmm_free(ga_pool_t *p, ga_segment_t *seg);

/* The hooks in the other paths, all cold. */
/* malloc found no free set for ap->pool: GALLOC_E_ASLEEP naming the tag when
 * the pool is asleep (its sets are hidden then), else out of host memory. */
galloc_status_t ga_pool_prepare_failed(ga_pool_t *p, const ga_blockpool_t *bp);
/* free of a pointer not in the pointer map: a sleeping tag's block (freed,
 * its host copy dropped) or GALLOC_E_NOT_OWNED. */
galloc_status_t ga_pool_free_missing(ga_pool_t *p, void *ptr);
/* The allocated block of a sleeping tag at addr (out of the pointer map), or NULL. */
ga_block_t *ga_pool_held_block(const ga_pool_t *p, uintptr_t addr);
/* Bytes of allocated blocks in sleeping tags (on no device memory): the OOM message. */
size_t ga_pool_asleep_allocated_bytes(const ga_pool_t *p);

#ifdef __cplusplus
}
#endif
#endif /* GA_POOL_TAGS_H */
