/*
 * lease_int.h: ga_lease_join's steps (lease.c), for util/ and its tests only.
 *
 * ga_lease_join is attach, check, commit (detach on a refusal); the tests
 * call the steps apart to let the producer act between the check and the
 * commit, as another process may. No locking of its own: the reader owns r.
 * Each returns 0 or an errno value, as lease.h.
 */
#ifndef GA_UTIL_LEASE_INT_H
#define GA_UTIL_LEASE_INT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ga_lease_reader_t, of lease.h (this header's target sits below lease.h's). */
struct ga_lease_reader;

/* ga_lease_attach: open the file at path, map slot's page and take the
 * shared lock on it; the slot is not changed. EINVAL: no such slot. */
int ga_lease_attach(const char *path, uint32_t slot, struct ga_lease_reader *r);
/* ga_lease_check: 0 if the slot is EXPORTED with cookie, EINVAL if not: a
 * refusal before any swap (the commit decides). */
int ga_lease_check(const struct ga_lease_reader *r, uint64_t cookie);
/* ga_lease_commit: EXPORTED -> OPENED in one compare-and-swap that also
 * expects cookie; EINVAL (nothing changed) if the slot holds another state
 * or another export's cookie. */
int ga_lease_commit(struct ga_lease_reader *r, uint64_t cookie);
/* ga_lease_detach: unmap and close, which drops the lock; the slot is not changed. */
void ga_lease_detach(struct ga_lease_reader *r);

#ifdef __cplusplus
}
#endif
#endif /* GA_UTIL_LEASE_INT_H */
