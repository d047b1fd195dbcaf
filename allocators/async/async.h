/*
 * async.h: the stream-ordered allocator's interface to the front end: its ops
 * table, which front/allocator.c picks for backend:cudaMallocAsync (and
 * hipMallocAsync). create fails with GALLOC_E_UNAVAILABLE, naming what is
 * missing, when the device backend or its driver cannot allocate
 * stream-ordered, with GALLOC_E_NOMEM, or with the backend's status when
 * setting up the device's pool fails. destroy frees every live pointer,
 * synchronizes the device and trims the pool.
 *
 * Locking: as for every ops table (allocators/allocator_ops.h).
 */
#ifndef GA_ALLOCATORS_ASYNC_H
#define GA_ALLOCATORS_ASYNC_H

#include "allocators/allocator_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const ga_allocator_ops_t ga_allocator_async;

#ifdef __cplusplus
}
#endif
#endif /* GA_ALLOCATORS_ASYNC_H */
