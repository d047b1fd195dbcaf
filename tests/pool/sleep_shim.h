/* sleep_shim.h: C entry points for sleep_check_test: a pool on a backed sim
 * device with one sleeping tag, and the corruptions galloc_check must catch
 * in its sleeping state (pool/sleep_int.h is C; the test sees these). */
#ifndef SLEEP_SHIM_H
#define SLEEP_SHIM_H

#include <galloc/galloc_status.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sleep_shim sleep_shim_t;

/* What to break after the sleep. */
typedef enum sleep_corruption {
    SLEEP_INTACT,          /* nothing: the check passes */
    SLEEP_OFFLOADED_COUNT, /* the tag's bytes_offloaded off by 512 */
    SLEEP_ASLEEP_COUNT,    /* the tag's bytes_asleep off by a page */
    SLEEP_HELD_MISSING,    /* an allocated block dropped from the held map */
    SLEEP_BACK_IN_PTRS,    /* a held block also in the pointer map */
    SLEEP_BIT_FLIPPED,     /* a slept bit cleared without mapping the unit */
    SLEEP_POOL_AWAKE,      /* the tag's pool not marked asleep */
    SLEEP_RESERVED_STAT,   /* reserved_bytes as if nothing had slept */
} sleep_corruption_t;

/* A pool (expandable or not) with tag "w" holding 3 blocks, put to sleep
 * with its contents offloaded, then broken as `what` says. NULL on failure. */
sleep_shim_t *sleep_shim_new(int expandable, sleep_corruption_t what);
galloc_status_t sleep_shim_check(sleep_shim_t *s);
const char *sleep_shim_error(sleep_shim_t *s);
/* Destroy (after repairing, so that destroy gives everything back). */
void sleep_shim_delete(sleep_shim_t *s);

#ifdef __cplusplus
}
#endif
#endif /* SLEEP_SHIM_H */
