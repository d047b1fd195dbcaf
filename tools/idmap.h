/*
 * idmap.h: the replay's map from a traced pointer (or trace id) to the block
 * galloc handed out for it, plus the stream it was allocated on.
 *
 * Keys other than 0 live in util's address map (util/addrmap.h: open
 * addressing, kept at most half full, backward-shift deletion), so lookups,
 * inserts and removes cost O(1) expected time however long the trace; memory
 * follows the number of live blocks, not the number of events. Key 0, the
 * address map's empty marker, lives in a side slot.
 *
 * Not thread-safe; one map per replayed configuration.
 */
#ifndef GA_TOOLS_IDMAP_H
#define GA_TOOLS_IDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/addrmap.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ga_idmap_val {
    void *ptr;       /* the galloc block (NULL for a 0-byte allocation) */
    uint64_t stream; /* the stream it was allocated on */
} ga_idmap_val_t;

typedef struct ga_idmap_slot {
    uintptr_t key;      /* the traced id, never 0 (64 bits: see idmap.c) */
    ga_idmap_val_t val; /* its value */
} ga_idmap_slot_t;

/* The most bytes of payload an entry may carry (ga_idmap_init_extra). */
#define GA_IDMAP_EXTRA_MAX 64

typedef struct ga_idmap {
    ga_addrmap_t map;                            /* keys other than 0 (ga_idmap_slot_t, then extra bytes of payload) */
    bool has_zero;                               /* whether key 0 is stored */
    ga_idmap_val_t zero_val;                     /* its value */
    size_t extra;                                /* payload bytes after each value (0: none) */
    uint64_t zero_extra[GA_IDMAP_EXTRA_MAX / 8]; /* key 0's payload */
} ga_idmap_t;

/* ga_idmap_init: an empty map (allocates nothing until the first put). */
void ga_idmap_init(ga_idmap_t *m);

/* ga_idmap_init_extra: an empty map whose every entry also carries `extra`
 * bytes (at most GA_IDMAP_EXTRA_MAX, 8-byte aligned) of the caller's payload
 * (ga_idmap_put_ex, ga_idmap_extra, ga_idmap_remove_ex): what the replay's
 * owners keep per live block, in the slot the map touches anyway. */
void ga_idmap_init_extra(ga_idmap_t *m, size_t extra);

/* ga_idmap_put_ex: ga_idmap_put, and *payload (when not NULL) the entry's
 * payload, for the caller to write (valid until the next change to the map;
 * its bytes are unspecified until then; without payload they are zeroed); a
 * replaced entry's payload is copied to old_payload (may be NULL) first. */
int ga_idmap_put_ex(ga_idmap_t *m, uint64_t key, ga_idmap_val_t val, ga_idmap_val_t *old, void *old_payload,
                    bool *replaced, void **payload);

/* ga_idmap_extra: key's payload (valid until the next change), NULL when absent. */
void *ga_idmap_extra(ga_idmap_t *m, uint64_t key);

/* ga_idmap_remove_ex: ga_idmap_remove, copying the payload to payload (may be NULL). */
bool ga_idmap_remove_ex(ga_idmap_t *m, uint64_t key, ga_idmap_val_t *out, void *payload);

/* ga_idmap_entry_extra: the payload of a slot met walking the map
 * (ga_addrmap_slot of m->map). */
static inline void *ga_idmap_slot_extra(const ga_idmap_t *m, void *slot)
{
    (void)m;
    return (unsigned char *)slot + sizeof(ga_idmap_slot_t);
}

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
    return ga_addrmap_count(&m->map) + (m->has_zero ? 1 : 0);
}

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_IDMAP_H */
