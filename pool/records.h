/*
 * records.h: block and segment records, recycled through free lists and
 * allocated in chunks (records.c), one record pool per stripe. Get, put and
 * the reserve check are inline: every malloc reserves, every split gets a
 * block record and every merge puts one back.
 *
 * Locking: a stripe's records are its streams': the stripe's lock or the
 * locked path covers them (stripe.h).
 */
#ifndef GA_POOL_RECORDS_H
#define GA_POOL_RECORDS_H

#include "pool/types.h"

#ifdef __cplusplus
extern "C" {
#endif

void ga_pool_records_init(ga_records_t *r);
void ga_pool_records_destroy(ga_records_t *r);
/* Grow the free lists to n block and m segment records (GALLOC_E_NOMEM). */
galloc_status_t ga_pool_records_grow(ga_records_t *r, size_t n_blocks, size_t n_segments);

/* The records of a stream's blocks and segments come from its stripe's own
 * chunks, so that threads on their own streams never write the same cache
 * line of records (false sharing halved their throughput). */
static inline ga_records_t *ga_pool_records_of(ga_pool_t *p, galloc_stream_t stream)
{
    return &p->stripes[ga_stripe_of(stream)].records;
}

/* Ensure at least n block records and m segment records are free: a compare
 * when they are (always, once warm), else a chunk from the host (cold). */
static inline galloc_status_t ga_pool_records_reserve(ga_records_t *r, size_t n_blocks, size_t n_segments)
{
    if (__builtin_expect(r->n_free_blocks >= n_blocks && r->n_free_segments >= n_segments, 1))
        return GALLOC_OK;
    return ga_pool_records_grow(r, n_blocks, n_segments);
}

/* A reserved record (never NULL after a successful reserve). */
static inline ga_block_t *ga_pool_records_get_block(ga_records_t *r)
{
    ga_block_t *b = r->free_blocks;
    if (b != NULL) {
        r->free_blocks = b->link;
        r->n_free_blocks--;
    }
    return b;
}

static inline void ga_pool_records_put_block(ga_records_t *r, ga_block_t *b)
{
    b->link = r->free_blocks;
    r->free_blocks = b;
    r->n_free_blocks++;
}

static inline ga_segment_t *ga_pool_records_get_segment(ga_records_t *r)
{
    ga_segment_t *s = r->free_segments;
    if (s != NULL) {
        r->free_segments = s->next;
        r->n_free_segments--;
    }
    return s;
}

static inline void ga_pool_records_put_segment(ga_records_t *r, ga_segment_t *s)
{
    s->next = r->free_segments;
    r->free_segments = s;
    r->n_free_segments++;
}

#ifdef __cplusplus
}
#endif
#endif /* GA_POOL_RECORDS_H */
