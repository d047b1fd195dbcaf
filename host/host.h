/*
 * host.h: the host layer's interface: PyTorch's pinned host caching allocator
 * (CachingHostAllocatorImpl, aten/src/ATen/core/CachingHostAllocator.h, with
 * the CUDA specialization's reserve segment and register path,
 * aten/src/ATen/cuda/CachingHostAllocator.cpp) over one opened backend's
 * pinned host memory and events. What the public galloc_host_* calls
 * (api/galloc_host.h, front/host.c) and the sleep offload (pool/pinned.c)
 * call; docs/host.md is the design.
 *
 * Locking: none inside. The caller holds the owning allocator's lock for
 * every call (the backend it calls into is entered under that lock only).
 *
 * Ownership: a host cache belongs to one allocator; destroy gives back every
 * block it holds, in use or not (the allocator's memory ends with it), and
 * the reserve segment.
 */
#ifndef GA_HOST_H
#define GA_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc_host.h>
#include <galloc/galloc_status.h>
#include "backend/backend.h"
#include "conf/conf.h"
#include "util/err.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ga_host ga_host_t;

/* ga_host_create: an empty host cache with conf's pinned_* settings, pinning
 * through backend and reporting into err (both outlive it). Allocates only
 * its own small state: nothing is pinned before the first malloc (the
 * reserve segment included, as PyTorch makes it at its first miss).
 * GALLOC_OK or GALLOC_E_NOMEM. */
galloc_status_t ga_host_create(const ga_conf_t *conf, ga_backend_t *backend, ga_err_t *err, ga_host_t **out);

/* ga_host_destroy: give back every block (in use, waiting on events or
 * cached), the reserve segment and the events; NULL is a no-op. */
void ga_host_destroy(ga_host_t *h);

/* The calls behind api/galloc_host.h's, with its contracts. */
galloc_status_t ga_host_malloc(ga_host_t *h, size_t size, void **ptr);
galloc_status_t ga_host_free(ga_host_t *h, void *ptr);
galloc_status_t ga_host_record_stream(ga_host_t *h, void *ptr, galloc_stream_t s);
galloc_status_t ga_host_empty_cache(ga_host_t *h);
void ga_host_stats(const ga_host_t *h, galloc_host_stats_t *out); /* out->struct_size is kept */
void ga_host_reset_peak(ga_host_t *h);
void ga_host_reset_accumulated(ga_host_t *h);

/*
 * The sleep offload's side of the cache (pool/pinned.c): its copies have an
 * exact size each (a device block's), so they are neither rounded (that
 * would pin up to twice their bytes) nor given a larger block; and what a
 * wake frees is kept for the next sleep.
 * ga_host_take_exact: a block of exactly size bytes: a cached one of that
 * size (the most recently freed), else a new one (pinned as a miss is:
 * reserve segment, host_alloc or register); *fresh says which. Otherwise
 * ga_host_malloc's contract.
 * ga_host_free_kept: as ga_host_free; once free and cached the block is
 * marked kept (a later malloc may still take it, which unmarks it).
 * ga_host_free_release: as ga_host_free, and the block goes back to the
 * driver now; a refused give-back leaves it cached and marked orphan, for
 * ga_host_retry_orphans (the next sleep, prepare or wake) or empty_cache.
 * ga_host_release_kept: give back every cached kept block (galloc_empty_cache,
 * destroy); a refused one becomes an orphan; the first refusal's status.
 * ga_host_kept_bytes: the sizes of the cached kept blocks
 * (galloc_sleep_stats_t.bytes_host_cached).
 */
galloc_status_t ga_host_take_exact(ga_host_t *h, size_t size, void **ptr, bool *fresh);
galloc_status_t ga_host_free_kept(ga_host_t *h, void *ptr);
galloc_status_t ga_host_free_release(ga_host_t *h, void *ptr);
void ga_host_retry_orphans(ga_host_t *h);
galloc_status_t ga_host_release_kept(ga_host_t *h);
uint64_t ga_host_kept_bytes(const ga_host_t *h);

/* ga_host_check: recount every block, list and statistic; GALLOC_OK or
 * GALLOC_E_CORRUPT with the first violation in err (galloc_check). */
galloc_status_t ga_host_check(ga_host_t *h);

#ifdef __cplusplus
}
#endif
#endif /* GA_HOST_H */
