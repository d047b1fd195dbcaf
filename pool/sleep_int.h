/*
 * sleep_int.h: sleep and wake (sleep.c, galloc_sleep.h): the model, which
 * tags.c (names, lists, scopes, counters, the hooks in malloc and free,
 * tags.h), check.c and pool.c (destroy) follow too, and sleep.c's helpers.
 * The records (ga_tag_t, ga_sleep_entry_t) are in types.h.
 *
 * Model. A tag is a private pool (ga_private_pool_t.tag) whose segments come
 * through the backend's virtual memory: expandable segments page by page as
 * for the default pools, or, without expandable_segments, one va_reserve and
 * one map of the whole segment (ga_segment_t.vmm). Asleep, every segment of
 * the tag has a bitmap (ga_segment_t.slept) of the sleep units it released:
 * an expandable segment's pages, or a plain segment's single unit. Blocks keep
 * their structure and their `mapped` flags (what was mapped before the sleep),
 * so that wake maps exactly the units whose bits are set. The allocated blocks
 * leave the pointer map for the tag's `held` map, with their host copies:
 * free of such a pointer then misses the pointer map and lands on the cold
 * path (ga_pool_free_missing), so the hot free needs no test for sleep. A
 * route to a sleeping tag leads to ga_pool_t.asleep_bp, a block pool without
 * free sets whose owner is the tag's pool (ga_pool_get_routed_pool, entered
 * only while some route is active); ga_pool_blockpool_prepare_slow refuses
 * it, so malloc's existing failure branch reports GALLOC_E_ASLEEP
 * (ga_pool_prepare_failed). The default pools' malloc and free gain nothing.
 *
 * Accounting: reserved_bytes and total_allocated_memory count mapped bytes,
 * so a unit unmapped by sleep is subtracted from them (its pool's stat) and
 * added back when wake maps it; galloc_check recounts them that way.
 */
#ifndef GA_POOL_SLEEP_INT_H
#define GA_POOL_SLEEP_INT_H

#include "pool/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sleep units of a segment and their size. */
static inline size_t ga_sleep_units(const ga_segment_t *s)
{
    return s->expandable ? s->size / s->page : 1;
}
static inline size_t ga_sleep_unit_bytes(const ga_segment_t *s)
{
    return s->expandable ? s->page : s->size;
}
static inline bool ga_sleep_bit(const uint64_t *bits, size_t i)
{
    return (bits[i / 64] >> (i % 64)) & 1u;
}
/* Bytes of s unmapped by sleep now (0 while awake). */
size_t ga_sleep_seg_bytes(const ga_segment_t *s);
/* galloc_check's part: the held maps, bitmaps and counters of every tag. */
galloc_status_t ga_pool_check_sleep(ga_pool_t *p);

#ifdef __cplusplus
}
#endif
#endif /* GA_POOL_SLEEP_INT_H */
