/*
 * ptrmap.c: allocated blocks by address (PyTorch's allocated_blocks map).
 *
 * Chained hashing through the block's own hash_next link, so insert and
 * remove allocate nothing. The bucket array doubles when the live count would
 * pass the bucket count; ga_ptrmap_reserve does that before the caller changes
 * any state, so a failed growth leaves everything as it was.
 */
#include <stdlib.h>

#include "pool/pool_int.h"

#define INITIAL_BUCKETS 1024

static size_t bucket_of(const ga_ptrmap_t *m, uintptr_t addr)
{
    /* Addresses are multiples of 512: drop those bits, then mix (Fibonacci hashing). */
    uint64_t h = ((uint64_t)addr >> 9) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32) & (m->nbuckets - 1);
}

void ga_pool_ptrmap_init(ga_ptrmap_t *m)
{
    m->buckets = NULL;
    m->nbuckets = 0;
    m->count = 0;
}

void ga_pool_ptrmap_destroy(ga_ptrmap_t *m)
{
    free(m->buckets);
    ga_pool_ptrmap_init(m);
}

galloc_status_t ga_pool_ptrmap_reserve(ga_ptrmap_t *m)
{
    if (m->count + 1 <= m->nbuckets)
        return GALLOC_OK;
    size_t n = m->nbuckets ? m->nbuckets * 2 : INITIAL_BUCKETS;
    ga_block_t **nb = calloc(n, sizeof(*nb));
    if (nb == NULL)
        return GALLOC_E_NOMEM;
    ga_ptrmap_t grown = {nb, n, 0};
    for (size_t i = 0; i < m->nbuckets; i++) {
        ga_block_t *b = m->buckets[i];
        while (b != NULL) {
            ga_block_t *next = b->hash_next;
            ga_pool_ptrmap_insert(&grown, b);
            b = next;
        }
    }
    free(m->buckets);
    *m = grown;
    return GALLOC_OK;
}

void ga_pool_ptrmap_insert(ga_ptrmap_t *m, ga_block_t *b)
{
    size_t i = bucket_of(m, b->addr);
    b->hash_next = m->buckets[i];
    m->buckets[i] = b;
    m->count++;
}

ga_block_t *ga_pool_ptrmap_find(const ga_ptrmap_t *m, uintptr_t addr)
{
    if (m->nbuckets == 0)
        return NULL;
    for (ga_block_t *b = m->buckets[bucket_of(m, addr)]; b != NULL; b = b->hash_next)
        if (b->addr == addr)
            return b;
    return NULL;
}

void ga_pool_ptrmap_remove(ga_ptrmap_t *m, ga_block_t *b)
{
    ga_block_t **link = &m->buckets[bucket_of(m, b->addr)];
    while (*link != b)
        link = &(*link)->hash_next;
    *link = b->hash_next;
    b->hash_next = NULL;
    m->count--;
}
