/*
 * capture.h: frees of blocks with stream uses while a route is active
 * (PyTorch's deferred_blocks) and graph_capture_record_stream_reuse
 * (capture.c).
 *
 * Locking: the locked path.
 */
#ifndef GA_POOL_CAPTURE_H
#define GA_POOL_CAPTURE_H

#include "pool/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* free() of a block with stream uses: record its events, or, while a route is
 * active, defer them (the block waits on the deferred list, active pending
 * free). Fails only when recording an event fails (nothing changed then). */
galloc_status_t ga_pool_free_uses(ga_pool_t *p, ga_block_t *b);
/* Once no route is active, record the events of every deferred block, oldest
 * first (PyTorch's insert_events_deferred_until_no_capture); while one is,
 * nothing. A failed record stops there: that block and the later ones stay
 * deferred. */
galloc_status_t ga_pool_insert_deferred(ga_pool_t *p);
/* malloc on stream during a route, with graph_capture_record_stream_reuse:
 * return to their pools the deferred blocks of stream whose uses all precede
 * the stream's capture frontier (PyTorch's free_safe_blocks_in_capture). */
void ga_pool_capture_reuse(ga_pool_t *p, galloc_stream_t stream);
/* The last route ended: forget the capture graphs' walks. */
void ga_pool_capture_forget(ga_pool_t *p);
/* Destroy: the deferred blocks' markers and the walks. */
void ga_pool_capture_destroy(ga_pool_t *p);

#ifdef __cplusplus
}
#endif
#endif /* GA_POOL_CAPTURE_H */
