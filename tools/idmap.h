/*
 * idmap.h: the replay's map from a traced pointer (or trace id) to the block
 * galloc handed out for it, plus the stream it was allocated on.
 *
 * Open addressing with linear probing over a power-of-two table, kept at most
 * half full, and backward-shift deletion (no tombstones), so lookups, inserts
 * and removes cost O(1) expected time however long the trace; memory follows
 * the number of live blocks, not the number of events. Keys are 64-bit: the
 * value UINT64_MAX, used as the empty marker, lives in a side slot.
 *
 * Not thread-safe; one map per replayed configuration.
 */
#ifndef GA_TOOLS_IDMAP_H
#define GA_TOOLS_IDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ga_idmap_val {
    void *ptr;       /* the galloc block (NULL for a 0-byte allocation) */
    uint64_t stream; /* the stream it was allocated on */
} ga_idmap_val_t;

typedef struct ga_idmap_slot {
    uint64_t key;        /* UINT64_MAX = empty */
    ga_idmap_val_t val; /* valid when key is not empty */
} ga_idmap_slot_t;

typedef struct ga_idmap {
    ga_idmap_slot_t *slots; /* cap entries */
    size_t cap;              /* power of two, or 0 before the first insert */
    size_t n;                /* keys stored, side slot included */
    bool has_max;            /* whether key UINT64_MAX is stored */
    ga_idmap_val_t max_val; /* its value */
} ga_idmap_t;

/* ga_idmap_init: an empty map (allocates nothing until the first put). */
void ga_idmap_init(ga_idmap_t *m);

/* ga_idmap_free: release the table; the map is empty again. */
void ga_idmap_free(ga_idmap_t *m);

/* ga_idmap_put: insert or replace key. Returns 0, or -1 if the table could
 * not grow (host memory); the map is unchanged then. *old receives the value
 * replaced, and *replaced whether there was one (either may be NULL). */
int ga_idmap_put(ga_idmap_t *m, uint64_t key, ga_idmap_val_t val, ga_idmap_val_t *old, bool *replaced);

/* ga_idmap_get: whether key is present; its value in *out (may be NULL). */
bool ga_idmap_get(const ga_idmap_t *m, uint64_t key, ga_idmap_val_t *out);

/* ga_idmap_remove: remove key; returns whether it was present, its value in
 * *out (may be NULL). */
bool ga_idmap_remove(ga_idmap_t *m, uint64_t key, ga_idmap_val_t *out);

/* ga_idmap_size: number of keys. */
static inline size_t ga_idmap_size(const ga_idmap_t *m)
{
    return m->n;
}

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_IDMAP_H */
