/*
 * release.h: giving cached memory back to the device (release.c): the
 * oversize release before a retry, the full flush of empty_cache and of the
 * last retry before an OOM, and the garbage collector.
 *
 * Locking: the locked path.
 */
#ifndef GA_POOL_RELEASE_H
#define GA_POOL_RELEASE_H

#include "pool/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* PyTorch's release_block: b's whole free segment back to the device.
 * Returns false when the device refuses the free: the segment stays cached,
 * counted as before. The caller decides whether to report it. */
bool ga_pool_release_block(ga_pool_t *p, ga_block_t *b);
/* PyTorch's release_available_cached_blocks: free oversize cached blocks of
 * ap's stream to make room for ap; whether enough was released. */
bool ga_pool_release_available_cached_blocks(ga_pool_t *p, const ga_alloc_params_t *ap);
/* PyTorch's release_cached_blocks. GALLOC_E_DEVICE when waiting for pending
 * events fails (nothing is released then), or when the device refused to
 * free a segment or unmap a page (every other one is released, the refused
 * ones stay cached and counted). */
galloc_status_t ga_pool_release_cached_blocks(ga_pool_t *p);
/* Every whole free segment of bp back, free expandable pages unmapped (empty_cache's walk). */
void ga_pool_release_blocks(ga_pool_t *p, ga_blockpool_t *bp);
/* PyTorch's garbage_collect_cached_blocks. */
void ga_pool_garbage_collect(ga_pool_t *p);
/* A device free or unmap refused during a full flush (release_cached_blocks):
 * counted in p->refused_frees, the first one recorded in p->err with the
 * backend's reason. */
void ga_pool_note_refused(ga_pool_t *p, const char *what, uintptr_t addr, size_t bytes);

#ifdef __cplusplus
}
#endif
#endif /* GA_POOL_RELEASE_H */
