/* pool_shim.h: C entry points into the pool's internals for the C++ tests
 * (the pool's private headers are C; the tests only see these plain functions). */
#ifndef POOL_SHIM_H
#define POOL_SHIM_H

#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc_stats.h>
#include <galloc/galloc_status.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pool_shim pool_shim_t;

/* A pool on a fresh sim device of `capacity` bytes configured by conf (a
 * PyTorch-style string). NULL on failure with the reason in err. */
pool_shim_t *pool_shim_new(const char *conf, uint64_t capacity, char *err, size_t errlen);
void pool_shim_delete(pool_shim_t *s);

galloc_status_t pool_shim_malloc(pool_shim_t *s, size_t size, uintptr_t stream, uintptr_t *addr);
galloc_status_t pool_shim_free(pool_shim_t *s, uintptr_t addr);
galloc_status_t pool_shim_empty_cache(pool_shim_t *s);
galloc_status_t pool_shim_record_stream(pool_shim_t *s, uintptr_t addr, uintptr_t stream);
/* Finish the work queued on a stream of the sim device (manual events). */
galloc_status_t pool_shim_stream_sync(pool_shim_t *s, uintptr_t stream);
size_t pool_shim_pending_blocks(pool_shim_t *s);
galloc_status_t pool_shim_set_fraction(pool_shim_t *s, double f);
galloc_status_t pool_shim_check(pool_shim_t *s);
void pool_shim_stats(pool_shim_t *s, galloc_stats_t *out);
const char *pool_shim_error(pool_shim_t *s);

size_t pool_shim_block_records(pool_shim_t *s);          /* block records ever allocated */
size_t pool_shim_free_blocks(pool_shim_t *s, int small); /* members of a free set */
size_t pool_shim_segments(pool_shim_t *s);               /* live segments */
size_t pool_shim_round(const char *conf, size_t size);   /* ga_round_size under conf */
size_t pool_shim_alloc_size(size_t rounded);
void pool_shim_format_size(uint64_t bytes, char *buf, size_t len);
/* A bare AVL tree of keys 0..keys-1 under `ops` random inserts and removes
 * (seeded), its shape checked after each (ga_pool_avl_check) and its order
 * compared with a bitmap. Returns the number of failed checks; *depth gets the
 * largest height seen. Then one node's height is corrupted: *caught says
 * whether the check noticed. */
int pool_shim_avl_exercise(int keys, int ops, unsigned seed, int *depth, int *caught);
/* Sim event faults (ga_sim_set_event_faults): fail the nth event wait or
 * query, or every one from `from` on, counted from the device's open (0 = off). */
void pool_shim_event_faults(pool_shim_t *s, uint64_t sync_nth, uint64_t sync_from, uint64_t query_nth,
                            uint64_t query_from);
/* Make the sim device's Nth allocation fail from now on (0 = off). */
void pool_shim_fail_from(pool_shim_t *s, uint64_t nth);

/* The stripe path (pool/stripe_path.c): 1 when the call was served there, 0
 * when it must take the locked path (nothing changed). quiesce/resume bracket
 * a locked call as front/ does (pool/ops.h). */
int pool_shim_stripe_malloc(pool_shim_t *s, size_t size, uintptr_t stream, uintptr_t *addr);
int pool_shim_stripe_free(pool_shim_t *s, uintptr_t addr);
/* The block's size from the stripe path (1, *size set) or 0 (the locked
 * path's: pool_shim_usable_size, under quiesce). */
int pool_shim_stripe_usable_size(pool_shim_t *s, uintptr_t addr, size_t *size);
galloc_status_t pool_shim_usable_size(pool_shim_t *s, uintptr_t addr, size_t *size);
void pool_shim_quiesce(pool_shim_t *s);
void pool_shim_resume(pool_shim_t *s);
unsigned pool_shim_stripe_of(uintptr_t stream);
/* Recording on (GALLOC_HISTORY_ALL, no stacks) or off. */
galloc_status_t pool_shim_record_history(pool_shim_t *s, int on);

#ifdef __cplusplus
}
#endif
#endif
