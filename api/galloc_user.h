/*
 * galloc_user.h: wrap the caller's own malloc/free in a galloc allocator, as
 * PyTorch's CUDAPluggableAllocator wraps an alloc_fn/free_fn pair
 * (torch/csrc/cuda/CUDAPluggableAllocator.h), and get galloc's statistics,
 * history and snapshots around it. Every galloc_* call taking a
 * galloc_allocator_t works on the result; those that need a device or a
 * caching pool say GALLOC_E_UNSUPPORTED (below).
 *
 * What the stats mean for a user allocator. galloc sees each allocation only
 * as a pointer and a size, so it counts it as PyTorch's caching allocator
 * would count a block that fills its own segment and is never cached:
 *   - a successful malloc of size bytes: allocation, segment and active +1;
 *     allocated_bytes, reserved_bytes, active_bytes and requested_bytes
 *     + size (the size asked for: galloc does not know the user allocator's
 *     rounding); num_device_alloc + 1. The pool index is small_pool for
 *     size <= 1 MiB (PyTorch's kSmallSize), large_pool above; "all" always.
 *   - a free reverses those and counts num_device_free + 1.
 *   - a NULL from malloc_fn (size > 0) counts num_ooms + 1 and changes
 *     nothing else.
 *   - inactive_split, inactive_split_bytes, oversize_allocations,
 *     oversize_segments, num_alloc_retries and num_sync_all_streams stay 0;
 *     max_split_size is -1 (unlimited).
 * So reserved equals allocated at all times: memory the user allocator keeps
 * cached for itself is invisible to galloc.
 *
 * History and snapshots: with galloc_record_memory_history on, a malloc
 * records "segment_alloc" then "alloc", a free records "free_requested",
 * "free_completed" then "segment_free" (all the same address and size), a
 * NULL from malloc_fn records "oom" (device_free 0). A snapshot shows each
 * live allocation as one segment holding one active_allocated block.
 *
 * Hooks: called with the allocator's lock held, one at a time per allocator,
 * from whichever thread called galloc. A hook must not call galloc on the
 * same allocator.
 */
#ifndef GALLOC_USER_H
#define GALLOC_USER_H

#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc_allocator.h>
#include <galloc/galloc_backend.h>
#include <galloc/galloc_status.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GALLOC_USER_ALLOCATOR_V1 1 /* bump only if an existing member changes meaning */

/*
 * A user allocator: fill it with designated initializers, struct_size =
 * sizeof(galloc_user_allocator_t), version = GALLOC_USER_ALLOCATOR_V1.
 * galloc copies it at creation. Members are appended, never reordered; a
 * member past struct_size counts as NULL.
 */
typedef struct galloc_user_allocator {
    uint32_t struct_size; /* sizeof(galloc_user_allocator_t) the caller compiled with */
    uint32_t version;     /* GALLOC_USER_ALLOCATOR_V1 */
    const char *name;     /* for messages ("rmm", ...); NULL = "user"; copied (63 bytes kept) */
    void *ctx;            /* passed to every hook */

    /* ---- Required. ---- */

    /* malloc_fn: size (> 0) bytes usable on stream, or NULL when out of
     * memory (galloc then returns GALLOC_E_OOM). Each live pointer must be
     * distinct. */
    void *(*malloc_fn)(void *ctx, size_t size, int device, galloc_stream_t stream);
    /* free_fn: give back ptr, with the size and stream it was allocated with
     * (PyTorch's free_fn gets the same). Called once per pointer: at
     * galloc_free, or at galloc_allocator_destroy for pointers still live. */
    void (*free_fn)(void *ctx, void *ptr, size_t size, int device, galloc_stream_t stream);

    /* ---- Optional: NULL = nothing to do. ---- */

    /* record_stream_fn: ptr (live) is used on stream too (galloc_record_stream). */
    void (*record_stream_fn)(void *ctx, void *ptr, galloc_stream_t stream);
    /* empty_cache_fn: release what the user allocator caches (galloc_empty_cache). */
    void (*empty_cache_fn)(void *ctx, int device);
    /* Append new members here. */
} galloc_user_allocator_t;

/*
 * galloc_allocator_create_user: an allocator for device index `device` whose
 * memory comes from user's hooks. galloc_allocator_destroy frees it (calling
 * free_fn for each pointer still live). The returned allocator's
 * galloc_allocator_backend is "user".
 *
 * On it: galloc_malloc, galloc_free, galloc_record_stream, galloc_empty_cache,
 * stats, resets, history, annotations, frames, snapshots, memory_summary,
 * settings and galloc_check (recounts the stats from the live pointers) work
 * as documented; galloc_stream_synchronize, galloc_memory_info,
 * galloc_set_memory_fraction (for a fraction in [0, 1]), galloc_fragmentation
 * and galloc_mempool_* return GALLOC_E_UNSUPPORTED. galloc_record_stream
 * returns GALLOC_E_NOT_OWNED for a pointer that is not live, else GALLOC_OK
 * (with or without record_stream_fn). galloc_malloc returns GALLOC_E_OOM when
 * malloc_fn returns NULL, GALLOC_E_NOMEM when galloc's own bookkeeping could not
 * grow (malloc_fn was not called then), GALLOC_E_CORRUPT when malloc_fn returns
 * a pointer that is already live (it is left alone).
 *
 *   err: if non-NULL, receives a message on failure (errlen bytes).
 * Returns GALLOC_OK; GALLOC_E_INVAL (NULL user or out, device < 0,
 * struct_size too small for the required members, unknown version, NULL
 * malloc_fn or free_fn); GALLOC_E_NOMEM. *out is NULL on failure.
 */
GALLOC_API galloc_status_t galloc_allocator_create_user(const galloc_user_allocator_t *user, int device,
                                                        galloc_allocator_t **out, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif /* GALLOC_USER_H */
