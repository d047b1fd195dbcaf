/*
 * records.c: recycled block and segment records.
 *
 * Records come from chunks of many records; a released record goes onto a free
 * list and is reused, so steady-state malloc/free never call malloc(). A pool
 * grows only when it is empty (ga_pool_records_reserve, called before any
 * state changes so that a failed growth leaves the allocator untouched). The
 * free lists count their records, so the reserve every malloc makes is one
 * compare (inline in records.h, with get and put).
 * model: jemalloc's edata_cache.
 */
#include <stdlib.h>

#include "pool/records.h"

#define CHUNK_BLOCKS 256
#define CHUNK_SEGMENTS 64

typedef struct chunk {
    struct chunk *next; /* every chunk, for destroy */
} chunk_t;

void ga_pool_records_init(ga_records_t *r)
{
    r->free_blocks = NULL;
    r->free_segments = NULL;
    r->n_free_blocks = 0;
    r->n_free_segments = 0;
    r->chunks = NULL;
    r->blocks_total = 0;
    r->segments_total = 0;
}

void ga_pool_records_destroy(ga_records_t *r)
{
    chunk_t *c = r->chunks;
    while (c != NULL) {
        chunk_t *next = c->next;
        free(c);
        c = next;
    }
    ga_pool_records_init(r);
}

/* Records are laid out right after the chunk header, suitably aligned. */
static void *chunk_new(ga_records_t *r, size_t record_size, size_t n)
{
    size_t header = (sizeof(chunk_t) + 63) & ~(size_t)63;
    /* Cache-line aligned: a chunk serves one stripe (ga_pool_records_of),
     * and its records share no line with another allocation. */
    chunk_t *c = aligned_alloc(64, (header + record_size * n + 63) & ~(size_t)63);
    if (c == NULL)
        return NULL;
    c->next = r->chunks;
    r->chunks = c;
    return (char *)c + header;
}

galloc_status_t ga_pool_records_grow(ga_records_t *r, size_t n_blocks, size_t n_segments)
{
    if (r->n_free_blocks < n_blocks) {
        ga_block_t *blocks = chunk_new(r, sizeof(ga_block_t), CHUNK_BLOCKS);
        if (blocks == NULL)
            return GALLOC_E_NOMEM;
        for (size_t i = 0; i < CHUNK_BLOCKS; i++)
            ga_pool_records_put_block(r, &blocks[i]);
        r->blocks_total += CHUNK_BLOCKS;
    }
    if (r->n_free_segments < n_segments) {
        ga_segment_t *segs = chunk_new(r, sizeof(ga_segment_t), CHUNK_SEGMENTS);
        if (segs == NULL)
            return GALLOC_E_NOMEM; /* block records stay reserved: harmless */
        for (size_t i = 0; i < CHUNK_SEGMENTS; i++)
            ga_pool_records_put_segment(r, &segs[i]);
        r->segments_total += CHUNK_SEGMENTS;
    }
    return GALLOC_OK;
}
