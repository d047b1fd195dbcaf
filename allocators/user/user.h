/*
 * user.h: the user allocator's interface to the front end. A user allocator
 * is built by galloc_allocator_create_user (front/allocator.c), never selected
 * by a config string, so its ops table has no create: the front end calls
 * ga_user_create for the state and then uses ga_allocator_user.
 *
 * Locking: as for every ops table (allocators/allocator_ops.h); the caller's
 * hooks run under the allocator's lock too.
 */
#ifndef GA_ALLOCATORS_USER_H
#define GA_ALLOCATORS_USER_H

#include <galloc/galloc_status.h>
#include <galloc/galloc_user.h>
#include "allocators/allocator_ops.h"
#include "util/err.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const ga_allocator_ops_t ga_allocator_user;

/*
 * ga_user_create: the state behind ga_allocator_user for the caller's table
 * (copied: members past its struct_size read as NULL hooks) on device index
 * `device` (passed to the hooks). err is the allocator's sink for this and
 * every later call. Returns GALLOC_OK with *impl set; GALLOC_E_INVAL when the
 * table is too small, of an unknown version or lacks malloc_fn or free_fn;
 * GALLOC_E_NOMEM. On failure *impl is NULL and err says why.
 */
galloc_status_t ga_user_create(const galloc_user_allocator_t *user, int device, ga_err_t *err, void **impl);

#ifdef __cplusplus
}
#endif
#endif /* GA_ALLOCATORS_USER_H */
