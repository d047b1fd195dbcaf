/*
 * owners.h: who holds the memory at the moments that decide whether a job
 * fits: the peak of allocated bytes, the peak of reserved bytes and each
 * out-of-memory failure, in one configuration's replay (docs/owners.md).
 *
 * Every live block is attributed to the owner class its allocation was
 * indexed with (tools/owners/index.h: site, phase, stream, pool); a moment
 * is the live blocks' figures per class (a cell), with the allocator's
 * totals, and for the reserved peak and OOMs the cached free bytes by
 * segment, with the classes whose blocks sit in each segment that has holes.
 * Invariant, tested on every trace: at each moment the cells' bytes sum to
 * allocated_bytes.all.current exactly, and, where segments are given, the
 * segments' sizes sum to reserved_bytes.all.current.
 *
 * Cost (tracking, owners_track.c): per allocation one galloc_usable_size
 * and one hash insert, per free one hash remove and an array update; the
 * allocated peak is kept by an undo log of bounded length (materialized
 * every GA_OWNERS_LOG_MIN or more events after a new peak), the reserved
 * peaks and OOMs by a walk of the allocator's segments (galloc_segments_visit)
 * when they happen. Memory follows the owner classes and live blocks, not the
 * events.
 */
#ifndef GA_TOOLS_ENGINE_OWNERS_H
#define GA_TOOLS_ENGINE_OWNERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/owners/index.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GA_OWNERS_MAX_OOMS 16              /* OOMs whose owners a column keeps (the first ones; all are counted) */
#define GA_OWNERS_PINS 3                   /* classes named per segment with holes (the largest holders) */
#define GA_OWNERS_BEFORE_EVENTS UINT64_MAX /* a moment's event: the state before the first event */

/* The live blocks of one owner class at a moment. */
typedef struct ga_owner_cell {
    int64_t blocks;      /* live blocks */
    int64_t bytes;       /* their sizes: their share of allocated_bytes */
    int64_t requested;   /* what they asked for */
    int64_t kept_blocks; /* of them, blocks the trace never frees (persistent: weights, optimizer state) */
    int64_t kept_bytes;
    int64_t before; /* of them, blocks live before the trace's first event (age unknown) */
    int64_t ev_sum; /* sum of the other blocks' allocation event indices (mean age: event - ev_sum / n) */
    int64_t timed;  /* of them, blocks with a recorded time ... */
    int64_t us_sum; /* ... and the sum of their allocation times, microseconds after the unit's t0 */
} ga_owner_cell_t;

/* A cell with its class. */
typedef struct ga_owner_entry {
    uint32_t cls; /* into the index's classes */
    ga_owner_cell_t cell;
} ga_owner_entry_t;

/* A segment at a moment, with what it holds. */
typedef struct ga_owner_segment {
    uint64_t address, size;
    uint64_t free_bytes;      /* cached free (reusable) bytes */
    uint64_t largest_free;    /* its largest free block */
    uint64_t pending_bytes;   /* freed, waiting on other streams */
    uint64_t allocated_bytes; /* live blocks' bytes */
    uint32_t blocks, free_blocks;
    uint64_t stream;
    int64_t pool[2]; /* segment_pool_id */
    bool small, expandable;
    uint32_t pins[GA_OWNERS_PINS];      /* the classes holding most of its live bytes (n_pins of them) */
    uint64_t pin_bytes[GA_OWNERS_PINS]; /* ... and those bytes */
    uint32_t n_pins;
} ga_owner_segment_t;

typedef enum ga_owners_moment_kind {
    GA_MOMENT_PEAK_ALLOCATED = 0, /* the first event at which the live blocks' bytes reach their maximum */
    GA_MOMENT_PEAK_RESERVED,      /* the first event at which reserved bytes reach their maximum */
    GA_MOMENT_OOM                 /* an allocation failed (the state right after the failure) */
} ga_owners_moment_kind_t;

/* ga_owners_moment_name: "peak allocated", "peak reserved", "OOM". */
const char *ga_owners_moment_name(ga_owners_moment_kind_t k);

typedef struct ga_owners_moment {
    bool valid; /* the moment happened (an empty replay has no peak) */
    ga_owners_moment_kind_t kind;
    uint64_t event;            /* the index of the event after which the state is taken;
                                     GA_OWNERS_BEFORE_EVENTS: the seeded state, before the first */
    int64_t time_us;           /* that event's recorded time (0: none) */
    int64_t allocated;         /* allocated_bytes.all.current then: the entries' bytes sum to it */
    int64_t reserved;          /* reserved_bytes.all.current then */
    int64_t active;            /* active_bytes.all.current then (allocated + pending free) */
    int64_t requested;         /* requested_bytes.all.current then */
    ga_owner_entry_t *entries; /* classes with live blocks, most bytes first */
    size_t n_entries;
    bool has_segments;            /* segments were walked (reserved peak, OOMs) */
    ga_owner_segment_t *segments; /* every segment, most free bytes first */
    size_t n_segments;
    uint32_t request_cls;  /* OOM: the class of the failed request; UINT32_MAX otherwise */
    uint64_t request_size; /* OOM: bytes requested */
} ga_owners_moment_t;

/* A column's owners. */
typedef struct ga_owners {
    const ga_owners_index_t *index; /* the unit's (sites, classes, streams, pools) */
    int64_t t0_us;                  /* the unit's first recorded time: us_sum is relative to it (0: none) */
    ga_owners_moment_t peak_allocated, peak_reserved;
    ga_owners_moment_t ooms[GA_OWNERS_MAX_OOMS]; /* the first n_ooms OOMs */
    size_t n_ooms;
    uint64_t untracked;   /* live blocks galloc_usable_size could not size (0 unless the allocator
                                       is not galloc's own: then the figures are requests) */
    char error[160];      /* why the owners are incomplete ("" when they are not) */
    uint64_t track_bytes; /* host memory the tracker held at its largest (live blocks' records, per-class
                             cells, the undo log): what owners cost besides the index */
} ga_owners_t;

/* A moment's live blocks summed per site (over its phases, streams and pools). */
typedef struct ga_owner_site_row {
    uint32_t site;                  /* into the index's sites */
    ga_owner_cell_t cell;           /* the sums */
    int64_t phase_bytes[GA_PHASES]; /* its bytes per phase (ga_phase_t) */
} ga_owner_site_row_t;

/* ga_owners_sites: m's entries summed per site, most bytes first (ties: the
 * lower site index), into *rows (malloc'd, the caller frees; NULL when n is
 * 0). 0, or -1 when host memory ran out. */
int ga_owners_sites(const ga_owners_moment_t *m, const ga_owners_index_t *x, ga_owner_site_row_t **rows, size_t *n);

/* ga_owners_phases: m's entries summed per phase into out[GA_PHASES]. */
void ga_owners_phases(const ga_owners_moment_t *m, const ga_owners_index_t *x, ga_owner_cell_t out[GA_PHASES]);

/* ga_owner_cell_add: a += b. */
void ga_owner_cell_add(ga_owner_cell_t *a, const ga_owner_cell_t *b);

/* ga_owner_mean_age: the mean age, at moment m, of c's blocks allocated in
 * the trace: in events (*events) and, over those with a recorded time, in
 * microseconds (*us, -1 when none has one); false when c has no such block
 * (all were live before the trace). t0: the owners' t0_us. */
bool ga_owner_mean_age(const ga_owner_cell_t *c, const ga_owners_moment_t *m, int64_t t0, double *events, double *us);

/* ga_owners_moment_check: the invariant of owners.h at m: the entries' bytes
 * sum to m->allocated, and where segments were walked, their sizes to
 * m->reserved and their live bytes to the entries' bytes less sleeping ones
 * (not checked: a sleeping tag's blocks are in entries but in no segment).
 * true when it holds; else why, in why. */
bool ga_owners_moment_check(const ga_owners_moment_t *m, char *why, size_t len);

/* ga_owners_release: free a column's owners (NULL is a no-op). */
void ga_owners_release(ga_owners_t *w);

/* ga_owners_moment_release: free one moment's arrays. */
void ga_owners_moment_release(ga_owners_moment_t *m);

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_ENGINE_OWNERS_H */
