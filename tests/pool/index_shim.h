/* index_shim.h: C entry points into one block pool's free-block index
 * (pool/blockpool.c over pool/sizeidx.h) for the white-box index test. The
 * blocks are fake records in a fixed array of slots, on fake segments (one per
 * stream); nothing touches a device. Slots are named by index; -1 is "none". */
#ifndef INDEX_SHIM_H
#define INDEX_SHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct index_shim index_shim_t;

/* A small or large block pool with `slots` block records and a prepared free
 * set for each of the n streams. NULL when out of memory. */
index_shim_t *index_shim_new(int small, size_t slots, const uintptr_t *streams, size_t n);
void index_shim_delete(index_shim_t *x);
/* Put slot i (not in the set) into it as a free block (stream must be one of
 * the prepared ones; size a multiple of 512; (stream, size, addr) unique). */
void index_shim_insert(index_shim_t *x, size_t i, uintptr_t stream, size_t size, uintptr_t addr);
void index_shim_remove(index_shim_t *x, size_t i);
/* ga_pool_blockpool_lower_bound: first block not before (stream, size, 0). */
long index_shim_lower_bound(index_shim_t *x, uintptr_t stream, size_t size);
/* ga_pool_blockpool_fit on the stream's set: best fit within that stream. */
long index_shim_fit(index_shim_t *x, uintptr_t stream, size_t size);
/* ga_pool_blockpool_fit_rounded (malloc's): size a multiple of 512, >= 512. */
long index_shim_fit_rounded(index_shim_t *x, uintptr_t stream, size_t size);
long index_shim_first(index_shim_t *x);
long index_shim_last(index_shim_t *x);
long index_shim_next(index_shim_t *x, size_t i);
long index_shim_prev(index_shim_t *x, size_t i);
/* ga_pool_blockpool_trees_ok: bitmaps, bins, trees and counts consistent. */
int index_shim_ok(index_shim_t *x);
/* Free blocks in the pool (its n_free). */
size_t index_shim_count(index_shim_t *x);
/* The bin of a block size, and of a search key (sizeidx.h). */
unsigned index_shim_bin(size_t size);
unsigned index_shim_key_bin(size_t size);
unsigned index_shim_bins(void);

#ifdef __cplusplus
}
#endif
#endif
