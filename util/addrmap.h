/*
 * addrmap.h: galloc's one address map: fixed-size entries keyed by a non-zero
 * uintptr_t (a device address, an event handle, a trace id). Every layer that
 * needs "address -> what I know about it" uses this one: the pool's allocated
 * blocks, the stream-ordered and user allocators' live pointers, the sim and
 * GPU backends' segments and events, the replay tool's traced pointers.
 *
 * Locking: none inside. The caller serializes every call on one map (the
 * allocator's lock, a backend state's caller, a single-threaded tool).
 *
 * Layout: open addressing over a power-of-two array of entries, linear
 * probing. An entry is the caller's struct whose first member is the
 * uintptr_t key; its size is given at init, so a value of any size lives in
 * the slot itself and no user needs a second allocation. Key 0 marks an empty
 * slot, which is why keys are non-zero.
 *
 * Hash: Fibonacci hashing applied twice with a fold in between
 * ((k * phi) ^ ((k * phi) >> 32)) * phi, top bits). One multiply alone
 * clusters aligned keys (512-byte blocks, 2 MiB segments, 16-byte host
 * pointers: up to 4.3 probes per hit at load 1/2 in measurements); the second
 * round keeps every key pattern galloc sees near the random-hash figure (1.5).
 *
 * Invariants: count <= cap / 2, so a probe always reaches an empty slot and
 * runs stay short; no tombstones: remove shifts the rest of the probe run back
 * (backward-shift deletion), so a long life of inserts and removes never
 * slows lookups and never needs a rehash.
 *
 * Memory: only ga_addrmap_reserve allocates (the cold path). The caller
 * reserves before it changes any other state, so a failed growth changes
 * nothing anywhere; insert and remove never allocate and cannot fail, which
 * keeps the allocators' hot paths (malloc, free) allocation-free.
 *
 * Indexes by hash: a map may also index records kept elsewhere (trace/'s
 * interned strings, frames and stacks) by a hash of their contents made
 * non-zero (ga_addrmap_hash_key). Several entries may then share a key:
 * insert adds another, and ga_addrmap_find_match passes each entry of the
 * key to the caller's test, which compares the record itself. find and
 * ga_addrmap_valid are for maps whose keys are distinct.
 */
#ifndef GA_UTIL_ADDRMAP_H
#define GA_UTIL_ADDRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc_status.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GA_ADDRMAP_PHI 0x9E3779B97F4A7C15ull /* 2^64 / golden ratio: Fibonacci hashing's multiplier */

typedef struct ga_addrmap {
    unsigned char *slots; /* cap entries of entry_size bytes; NULL before the first growth */
    size_t cap;           /* 0 or a power of two */
    size_t count;         /* live entries, <= cap / 2 */
    size_t entry_size;    /* bytes per entry: a multiple of sizeof(uintptr_t), first member the key */
    unsigned shift;       /* 64 - log2(cap): the hash's top bits pick the home slot */
} ga_addrmap_t;

/* ga_addrmap_init: an empty map of entry_size-byte entries (a struct whose
 * first member is the uintptr_t key: its size is then a multiple of
 * sizeof(uintptr_t)). Allocates nothing. */
void ga_addrmap_init(ga_addrmap_t *m, size_t entry_size);

/* ga_addrmap_destroy: free the slots; the map is empty again (same entry size). */
void ga_addrmap_destroy(ga_addrmap_t *m);

/* ga_addrmap_grow: ga_addrmap_reserve when the map has no room (cold). */
galloc_status_t ga_addrmap_grow(ga_addrmap_t *m, size_t n);

/* ga_addrmap_reserve: make room for n more inserts (cold path, may allocate).
 * GALLOC_OK, or GALLOC_E_NOMEM with the map unchanged (the growth could not
 * be allocated or its size would overflow). When there is room, an inline
 * compare: every malloc reserves its slot. */
static inline galloc_status_t ga_addrmap_reserve(ga_addrmap_t *m, size_t n)
{
    if (__builtin_expect(n <= m->cap / 2 - m->count, 1)) /* count <= cap / 2: no wrap */
        return GALLOC_OK;
    return ga_addrmap_grow(m, n);
}

/* ga_addrmap_home: the slot where key's probe run starts (m->cap > 0). The
 * first round moves every key bit into the high half, the fold brings them
 * back down, the second round spreads them over the top bits taken. */
static inline size_t ga_addrmap_home(const ga_addrmap_t *m, uintptr_t key)
{
    uint64_t h = (uint64_t)key * GA_ADDRMAP_PHI;
    h = (h ^ (h >> 32)) * GA_ADDRMAP_PHI;
    return (size_t)(h >> m->shift);
}

/* ga_addrmap_find: the entry whose key is key, or NULL (always NULL for key 0). */
void *ga_addrmap_find(const ga_addrmap_t *m, uintptr_t key);

/* ga_addrmap_insert: add key (non-zero, room reserved; not present, except
 * in an index by hash) and return its entry: the key is set, the other
 * members are the caller's to fill (their contents are unspecified). */
void *ga_addrmap_insert(ga_addrmap_t *m, uintptr_t key);

/* ga_addrmap_hash_key: a hash as an index's key: never 0 (its lowest bit is
 * set), and the map's own mixing (ga_addrmap_home) spreads the rest, so the
 * hash need not be folded or finalized first. */
static inline uintptr_t ga_addrmap_hash_key(uint64_t hash)
{
    return (uintptr_t)hash | 1;
}

/* ga_addrmap_hash_combine: the word v into the running hash h of a record
 * made of several words (an index's key, through ga_addrmap_hash_key). A
 * bijection of v for each h and of h for each v, so records differing in
 * one word hash differently; the fold carries the product's high bits down,
 * so the next word's multiply spreads them again. */
static inline uint64_t ga_addrmap_hash_combine(uint64_t h, uint64_t v)
{
    h = (h ^ v) * GA_ADDRMAP_PHI;
    return h ^ (h >> 32);
}

/* ga_addrmap_find_match: in an index by hash, the first entry of key (non-zero)
 * that match(entry, ctx) accepts, or NULL. Inline, so that a constant match
 * is inlined into the probe loop as a hand-written index's compare would be. */
static inline void *ga_addrmap_find_match(const ga_addrmap_t *m, uintptr_t key,
                                          bool (*match)(const void *entry, const void *ctx), const void *ctx)
{
    if (m->cap == 0)
        return NULL;
    for (size_t i = ga_addrmap_home(m, key);; i = (i + 1) & (m->cap - 1)) {
        unsigned char *e = m->slots + i * m->entry_size;
        uintptr_t k = *(const uintptr_t *)e;
        if (k == key && match(e, ctx))
            return e;
        if (k == 0)
            return NULL; /* the load <= 1/2 guarantees an empty slot */
    }
}

/* ga_addrmap_remove: remove entry (from find, insert or ga_addrmap_slot).
 * Other entries may move: pointers into the map are invalid afterwards,
 * except that ga_addrmap_slot(m, i) may be read again for the same i. */
void ga_addrmap_remove(ga_addrmap_t *m, void *entry);

/* ga_addrmap_valid: every entry reachable from its key's home slot and count
 * right; for the owners' invariant checks (galloc_check) of maps whose keys
 * are distinct. */
bool ga_addrmap_valid(const ga_addrmap_t *m);

/* ga_addrmap_slot: the live entry in slot i (i < m->cap), or NULL if the slot
 * is empty: to walk every entry, `for (i = 0; i < m->cap; i++)`. A removal
 * during the walk may move a later entry into slot i (look at i again) or,
 * where a probe run wraps past the end, an entry from the start of the array
 * into a later slot (seen twice). */
static inline void *ga_addrmap_slot(const ga_addrmap_t *m, size_t i)
{
    unsigned char *e = m->slots + i * m->entry_size;
    return *(const uintptr_t *)e != 0 ? e : NULL;
}

/* ga_addrmap_count: live entries. */
static inline size_t ga_addrmap_count(const ga_addrmap_t *m)
{
    return m->count;
}

#ifdef __cplusplus
}
#endif
#endif /* GA_UTIL_ADDRMAP_H */
