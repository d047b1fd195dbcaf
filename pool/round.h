/*
 * round.h: request rounding and segment sizes (round.c). They decide
 * allocated_bytes and reserved_bytes, so they follow PyTorch to the byte
 * (round_size, get_allocation_size).
 *
 * Locking: none; pure functions of the settings.
 */
#ifndef GA_POOL_ROUND_H
#define GA_POOL_ROUND_H

#include "pool/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* PyTorch's round_size for any settings. */
size_t ga_round_size(const ga_conf_t *c, size_t size);
/* PyTorch's get_allocation_size: the segment a request of `rounded` bytes gets. */
size_t ga_allocation_size(const ga_conf_t *c, size_t rounded);
/* Whether conf sets no roundup_power2_divisions above 1, so that round_size
 * is plain 512-byte rounding for every size. */
bool ga_round_is_plain(const ga_conf_t *c);

/* PyTorch's round_size, inline for the default configuration: requests
 * share 512-byte granularity so allocated_bytes equals PyTorch's. */
static inline size_t ga_pool_round(const ga_pool_t *p, size_t size)
{
    if (__builtin_expect(p->plain_rounding, 1))
        return size < GA_MIN_BLOCK_SIZE ? GA_MIN_BLOCK_SIZE : (size + GA_MIN_BLOCK_SIZE - 1) & ~(GA_MIN_BLOCK_SIZE - 1);
    return ga_round_size(&p->conf, size);
}

#ifdef __cplusplus
}
#endif
#endif /* GA_POOL_ROUND_H */
