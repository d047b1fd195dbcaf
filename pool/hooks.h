/*
 * hooks.h: the caching pool's device-memory hooks (galloc_hooks.h; hooks.c):
 * the registry, and one call per event site, each guarded by
 * ga_pool_hooked so that an allocator without hooks pays one predictable
 * branch where segments are made and freed, nothing elsewhere.
 *
 * Sites (each names the range exactly as the device call that makes or
 * releases it):
 *   malloc.c   alloc_block: a new segment (plain, or a tag's VMM segment of
 *              `span` bytes): ga_pool_hook_appear after the device call;
 *   expandable.c map_block: the pages just mapped, ga_pool_hook_appear_pages;
 *              ga_pool_unmap_block: ga_pool_hook_disappear before each page;
 *   release.c  ga_pool_release_block: ga_pool_hook_disappear before the free;
 *   sleep.c    every unit sleep unmaps and wake maps;
 *   oom.c      ga_pool_oom: ga_pool_hook_oom;
 *   pool.c     destroy: ga_pool_hook_segment_gone for every segment.
 * A refused device free or unmap calls ga_pool_hook_restored.
 *
 * Locking: the locked path (the allocator's lock and every stripe's), as
 * every site above; the hooks are called with it held.
 */
#ifndef GA_POOL_HOOKS_H
#define GA_POOL_HOOKS_H

#include <galloc/galloc_hooks.h>
#include "pool/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether any hook is registered: the one test at every site. */
static inline bool ga_pool_hooked(const ga_pool_t *p)
{
    return __builtin_expect(p->hooks != NULL, 0);
}

/* The ops members (allocator_ops.h; galloc_hook_add / _remove / _stats). */
galloc_status_t ga_pool_hook_add(void *impl, const galloc_hook_t *hook, galloc_hook_id_t *id);
galloc_status_t ga_pool_hook_remove(void *impl, galloc_hook_id_t id);
galloc_status_t ga_pool_hook_stats(void *impl, galloc_hook_id_t id, galloc_hook_stats_t *out);
/* Destroy: the registry goes (after ga_pool_hook_segment_gone of every segment). */
void ga_pool_hooks_destroy(ga_pool_t *p);

/*
 * ga_pool_hook_appear: tell the hooks that [addr, addr + size) of block pool
 * bp's segment on stream was allocated (GALLOC_HOOK_SEGMENT_ALLOC) or
 * mapped (_MAP). GALLOC_OK when every hook accepted; GALLOC_E_HOOK, recorded
 * with the hook and its return value, when one refused: the hooks told
 * before it have been told the UNDO, and the caller gives the memory back
 * to the device without telling (the call then fails, changing nothing).
 */
galloc_status_t ga_pool_hook_appear(ga_pool_t *p, galloc_hook_kind_t kind, uintptr_t addr, size_t size,
                                    galloc_stream_t stream, const ga_blockpool_t *bp);
/* The same for n pages of `page` bytes from base, mapped by one device
 * call sequence, in address order: on a refusal every page told before is
 * told its UNMAP (UNDO, last page first) and the caller unmaps all n. */
galloc_status_t ga_pool_hook_appear_pages(ga_pool_t *p, uintptr_t base, size_t page, size_t n, galloc_stream_t stream,
                                          const ga_blockpool_t *bp);
/* [addr, addr + size) is about to be freed (GALLOC_HOOK_SEGMENT_FREE) or
 * unmapped (_UNMAP); flags: GALLOC_HOOK_F_DESTROY or 0. */
void ga_pool_hook_disappear(ga_pool_t *p, galloc_hook_kind_t kind, uintptr_t addr, size_t size, galloc_stream_t stream,
                            const ga_blockpool_t *bp, uint32_t flags);
/* The device refused the free or unmap just told: the range is present
 * again (ALLOC or MAP flagged GALLOC_HOOK_F_RESTORED; refusals ignored). */
void ga_pool_hook_restored(ga_pool_t *p, galloc_hook_kind_t kind, uintptr_t addr, size_t size, galloc_stream_t stream,
                           const ga_blockpool_t *bp);
/* A malloc for ap is about to fail with GALLOC_E_OOM (oom.c's figures). */
void ga_pool_hook_oom(ga_pool_t *p, const ga_alloc_params_t *ap, size_t device_free, size_t device_total);
/* Destroy: every range of seg still present, FREE or UNMAP flagged
 * GALLOC_HOOK_F_DESTROY. */
void ga_pool_hook_segment_gone(ga_pool_t *p, const ga_segment_t *seg);

#ifdef __cplusplus
}
#endif
#endif /* GA_POOL_HOOKS_H */
