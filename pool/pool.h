/*
 * pool.h: the pool layer's interface: ga_allocator_native, the allocator ops
 * table (allocators/allocator_ops.h) of PyTorch's native caching allocator
 * policy (DeviceCachingAllocator in pytorch/pytorch
 * c10/cuda/CUDACachingAllocator.cpp) over one opened device backend. The
 * front end (front/) picks it unless the configuration asks for
 * backend:cudaMallocAsync, and reaches the pool only through it: the
 * functions behind it are the pool's own (ops.h, pool_ops.c).
 *
 * Locking: allocator_ops.h's contract. Every member runs under the
 * allocator's lock, bracketed by quiesce and resume, except stripe_malloc,
 * stripe_free and stripe_usable_size, which are the pool's stripe path: they
 * take the lock of one stripe at a time only (ga_pool_stripe_malloc,
 * ga_pool_stripe_free, ga_pool_stripe_usable_size).
 */
#ifndef GA_POOL_H
#define GA_POOL_H

#include "allocators/allocator_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The caching pool: the table front/ picks unless the config asks for
 * backend:cudaMallocAsync. */
extern const ga_allocator_ops_t ga_allocator_native;

#ifdef __cplusplus
}
#endif
#endif /* GA_POOL_H */
