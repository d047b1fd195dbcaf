/*
 * streams.h: blocks used on more than one stream (streams.c): the events a
 * free records and the blocks that wait on them (PyTorch's insert_events,
 * process_events, synchronize_and_free_events). record_stream and
 * stream_synchronize themselves are ops (pool.h).
 *
 * Locking: the locked path.
 */
#ifndef GA_POOL_STREAMS_H
#define GA_POOL_STREAMS_H

#include "pool/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* free() of a block with stream uses: record the events; the block stays active. */
galloc_status_t ga_pool_insert_events(ga_pool_t *p, ga_block_t *b);
/* Return blocks whose events have all completed (start of every malloc). */
galloc_status_t ga_pool_process_events(ga_pool_t *p);
/* Wait for every pending event and return its block (counts num_sync_all_streams
 * once, first). A failed wait returns GALLOC_E_DEVICE: that event and the later
 * ones stay pending, the earlier ones are done. */
galloc_status_t ga_pool_synchronize_and_free_events(ga_pool_t *p);
/* The events record_stream reserved for b go back unused (the capture graph
 * orders b's uses: capture.c). */
void ga_pool_uses_release(ga_pool_t *p, ga_block_t *b);
/* Destroy: the event records and their backend events. */
void ga_pool_events_destroy(ga_pool_t *p);

#ifdef __cplusplus
}
#endif
#endif /* GA_POOL_STREAMS_H */
