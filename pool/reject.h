/*
 * reject.h: throw_on_cudamalloc_oom's preemptive rejection (reject.c): the
 * check alloc_block makes before the device is asked, and the failure it
 * leads to.
 *
 * Locking: the locked path, except that ga_pool_take_rejection is the ops
 * member the front end calls under the allocator's lock right after malloc.
 */
#ifndef GA_POOL_REJECT_H
#define GA_POOL_REJECT_H

#include "allocators/allocator_ops.h"
#include "pool/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* PyTorch's check in alloc_block: with throw_on_cudamalloc_oom, a segment of
 * ap->alloc_size that would take reserved memory past
 * per_process_memory_fraction x device total is refused: counts
 * num_oom_rejections, marks ap->rejected and keeps the figures for the
 * observer. Returns whether it refused. */
bool ga_pool_reject_check(ga_pool_t *p, ga_alloc_params_t *ap);

/* The failure of a refused malloc: GALLOC_E_OOM with PyTorch's message
 * (NativeCachingAllocator::malloc's, for the caller's size); num_ooms,
 * the trace and the OOM path are untouched, as in PyTorch. */
galloc_status_t ga_pool_rejected(ga_pool_t *p, const ga_alloc_params_t *ap);

/* ops member take_rejection: the last refusal's figures, once (false when
 * none is pending). */
bool ga_pool_take_rejection(void *impl, ga_oom_rejection_t *out);

#ifdef __cplusplus
}
#endif
#endif /* GA_POOL_REJECT_H */
