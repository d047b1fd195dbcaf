/*
 * verify_int.h (private to tools/replay): the comparison behind
 * `galloc replay --verify` (verify_cmp.c), kept apart from the replay and the
 * reports (verify.c). verify.h says what is compared and why.
 *
 * Not thread-safe (one comparison at a time per thread); no global state.
 */
#ifndef GA_TOOLS_REPLAY_VERIFY_INT_H
#define GA_TOOLS_REPLAY_VERIFY_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "tools/snapshot/snap_view.h"

/* After a difference the sequences are re-aligned: the smallest skip, on
 * either side, of at most GA_VERIFY_RESYNC events after which GA_VERIFY_RUN
 * events agree again (fewer at the end). One early tie-break that adds or
 * drops an event then costs that event, not everything after it. */
#define GA_VERIFY_RESYNC 16
#define GA_VERIFY_RUN 3

/* Agreement of one event kind (or of all device events). */
typedef struct ga_verify_kind {
    size_t total, agree; /* max of both sides' counts; aligned pairs that agree */
} ga_verify_kind_t;

/* The outcome of one comparison. */
typedef struct ga_verify_cmp {
    size_t ev_total, ev_agree;               /* device events: max of both sides; aligned pairs that agree */
    bool diverged;                           /* some device event differs (or one side has more) */
    size_t first;                            /* the first differing device event of the snapshot (index into ev) */
    size_t first_rep;                        /* ... and galloc's event it was compared with */
    ga_verify_kind_t kind[GA_DEV_N_ACTIONS]; /* every kind of event alone, aligned the same way */
    size_t seg_total, seg_agree;             /* final segments: max of both sides; those that agree */
    char seg_first[512];                     /* the first segment difference, "" if none */
} ga_verify_cmp_t;

/* ga_verify_compare: rec (the snapshot's record) against rep (galloc's
 * snapshot of its replay) into *c. Orphan entries of either side are left
 * out (snap_view.h). */
void ga_verify_compare(const ga_snap_view_t *rec, const ga_snap_view_t *rep, ga_verify_cmp_t *c);

/* ga_verify_compared: how many figures c compared (events of every kind and
 * final segments, either side's count); 0 means there was nothing to compare. */
size_t ga_verify_compared(const ga_verify_cmp_t *c);

#endif /* GA_TOOLS_REPLAY_VERIFY_INT_H */
