/*
 * index.h: a unit's owners, indexed once while the trace is read (tools/job):
 * every allocation gets an owner CLASS, the tuple (site, phase, stream, pool)
 * its record says made it (site.h classifies the stack), so that a replay
 * attributes live bytes with one array index per event whatever the
 * configuration. Sites and classes are interned: the index grows with the
 * distinct sites, stacks and classes a trace has, never with its events
 * (a snapshot's 8,716 entries hold 54 distinct stacks, 11 sites).
 *
 * Class ids fit the 16 bits a loaded event keeps them in (ga_job_ev_t.owner):
 * past GA_OWNERS_MAX_CLASSES distinct classes, the rest are merged into one
 * overflow class (site kind GA_SITE_OVERFLOW), and the index says so.
 *
 * Stacks are recognized by their frames' identities (ga_stack_t.key: a
 * snapshot's frames are shared objects) without reading their strings; a
 * stack without identities is classified each time it is met.
 *
 * Not thread-safe while indexing; read-only afterwards (fit's threads share it).
 */
#ifndef GA_TOOLS_OWNERS_INDEX_H
#define GA_TOOLS_OWNERS_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/addrmap.h"
#include "tools/owners/site.h"
#include "tools/readers/trace_reader.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GA_OWNERS_MAX_CLASSES 65535u /* distinct classes kept apart; the next id is the overflow class */
#define GA_OWNER_OVERFLOW 65535u     /* the class of everything past that */

/* One frame of a site's representative stack, copied (NUL-terminated). */
typedef struct ga_owner_frame {
    const char *file; /* "" when none */
    const char *name; /* "" when none */
    int64_t line;
} ga_owner_frame_t;

/* A site: a name a person can act on (site.h), with the whole stack of the
 * first allocation that named it. */
typedef struct ga_owner_site {
    char *key;               /* ga_site_class_t.key */
    ga_site_kind_t kind;     /* what the key names */
    ga_owner_frame_t *stack; /* n_stack frames, innermost first (their strings in the same block) */
    size_t n_stack;
} ga_owner_site_t;

/* A class: who made a block, as a replay attributes it. */
typedef struct ga_owner_class {
    uint32_t site;   /* into sites */
    uint8_t phase;   /* ga_phase_t */
    uint32_t stream; /* into streams */
    uint32_t pool;   /* into pools (0: the default pools) */
} ga_owner_class_t;

typedef struct ga_owners_index {
    ga_owner_site_t *sites;
    size_t n_sites, cap_sites;
    ga_owner_class_t *classes; /* n_classes (<= GA_OWNERS_MAX_CLASSES + 1 with the overflow class) */
    size_t n_classes, cap_classes;
    uint64_t *streams; /* the traced stream of each stream index */
    size_t n_streams, cap_streams;
    int64_t (*pools)[2]; /* segment_pool_id of each pool index; pools[0] is (0, 0) */
    size_t n_pools, cap_pools;
    uint32_t kinds;   /* 1 << ga_stack_kind_t of every stack met: what the breakdown is keyed by */
    bool overflow;    /* some classes were merged into GA_OWNER_OVERFLOW */
    uint64_t indexed; /* allocations indexed */
    /* Interning (freed by ga_owners_index_done): */
    ga_addrmap_t stack_map;              /* stack identity hash -> stack record */
    struct ga_owner_stackrec *stackrecs; /* distinct stacks met with identities */
    size_t n_stackrecs, cap_stackrecs;
    uintptr_t *keys; /* the frame identities of those stacks, end to end */
    size_t n_keys, cap_keys;
    ga_addrmap_t site_map;  /* site key hash -> site index */
    ga_addrmap_t class_map; /* class tuple hash -> class id */
    uintptr_t *scratch;     /* one stack's frame identities while it is looked up */
    size_t cap_scratch;
} ga_owners_index_t;

/* ga_owners_index_init: an empty index (allocates nothing yet). */
void ga_owners_index_init(ga_owners_index_t *x);

/*
 * ga_owners_index_event: the class of allocation event e (GA_EV_ALLOC or
 * GA_EV_OOM) from its stack and stream, in the default pools. A
 * GA_EVF_PROLOGUE event without a stack is GA_SITE_BEFORE (allocated before
 * the trace); any other event without one GA_SITE_NONE. Returns 0 with *cls
 * set, or -1 when host memory ran out (the index is unchanged).
 */
int ga_owners_index_event(ga_owners_index_t *x, const ga_event_t *e, uint16_t *cls);

/*
 * ga_owners_index_block: the class of a block live before the trace began
 * (a mid-run snapshot's seeded state): its stack (kind NONE: GA_SITE_BEFORE),
 * stream and pool. 0 or -1 as above.
 */
int ga_owners_index_block(ga_owners_index_t *x, const ga_stack_t *st, uint64_t stream, const int64_t pool[2],
                          uint16_t *cls);

/* ga_owners_index_done: drop the interning tables once the unit is read
 * (what remains is what reports need). */
void ga_owners_index_done(ga_owners_index_t *x);

/* ga_owners_index_bytes: the host memory the index holds (after
 * ga_owners_index_done: its sites with their stacks, classes, streams, pools). */
size_t ga_owners_index_bytes(const ga_owners_index_t *x);

/* ga_owners_index_free: release everything; the index is empty again. */
void ga_owners_index_free(ga_owners_index_t *x);

/* ga_owners_keyed_by: what the unit's breakdown is keyed by, for reports:
 * "recorded stacks", "profiler ranges", "annotations", "allocators",
 * "threads", several joined by " and ", or "nothing: the record carries no
 * stacks". */
const char *ga_owners_keyed_by(const ga_owners_index_t *x, char *buf, size_t len);

/* ga_owners_class_of: class c's record (c < x->n_classes). */
static inline const ga_owner_class_t *ga_owners_class_of(const ga_owners_index_t *x, uint32_t c)
{
    return &x->classes[c];
}

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_OWNERS_INDEX_H */
