/*
 * user_map.h: the user allocator's live pointers (address -> size, stream,
 * stack), as PyTorch's CUDAPluggableAllocator keeps allocation_metadata_.
 *
 * Open addressing with linear probing and backward-shift deletion: no
 * tombstones, so a steady state of mallocs and frees never rehashes, and
 * insert and remove allocate nothing. The table doubles (the cold path) only
 * in ga_user_map_reserve, which the caller runs before changing any other
 * state, so a failed growth leaves everything as it was.
 *
 * Locking: none inside; the owning allocator's lock is held for every call.
 */
#ifndef GA_API_USER_MAP_H
#define GA_API_USER_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc_backend.h>
#include <galloc/galloc_status.h>

/* One live allocation. addr 0 marks an empty slot (malloc_fn never hands out NULL). */
typedef struct ga_user_entry {
    uintptr_t addr;         /* the pointer malloc_fn returned */
    size_t size;            /* the size asked for */
    galloc_stream_t stream; /* the stream it was allocated on */
    uint32_t stack_id;      /* trace stack of the allocation (0 = none) */
} ga_user_entry_t;

typedef struct ga_user_map {
    ga_user_entry_t *slots; /* cap slots, NULL before the first reserve */
    size_t cap;             /* a power of two, 0 before the first reserve */
    size_t count;           /* live entries; kept <= cap / 2 so probes stay short */
    unsigned shift;         /* 64 - log2(cap): a hash's top bits pick the slot */
} ga_user_map_t;

void ga_user_map_init(ga_user_map_t *m);
void ga_user_map_destroy(ga_user_map_t *m);

/* ga_user_map_reserve: room for one more entry. GALLOC_OK or GALLOC_E_NOMEM
 * (map unchanged). */
galloc_status_t ga_user_map_reserve(ga_user_map_t *m);

/* ga_user_map_find: the entry for addr, or NULL. */
ga_user_entry_t *ga_user_map_find(const ga_user_map_t *m, uintptr_t addr);

/* ga_user_map_insert: add e (e->addr != 0, not present; room reserved). */
void ga_user_map_insert(ga_user_map_t *m, const ga_user_entry_t *e);

/* ga_user_map_remove: remove the entry e (from ga_user_map_find). Entries may
 * move: pointers into the table are invalid afterwards. */
void ga_user_map_remove(ga_user_map_t *m, ga_user_entry_t *e);

#endif /* GA_API_USER_MAP_H */
