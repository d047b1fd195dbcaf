/*
 * round.c: request rounding and segment sizes.
 *
 * These decide allocated_bytes and reserved_bytes, so they follow PyTorch to
 * the byte: round_size / roundup_power2_next_division / get_allocation_size in
 * pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp (get_round_size and
 * get_allocation_size in c10/core/CachingDeviceAllocator.h on newest main).
 */
#include "pool/round.h"

/* The candidates between 2^k and 2^(k+1) are 2^k + j * 2^k / divisions; the
 * result is the smallest candidate >= size. Exact powers of two stay. */
static size_t roundup_power2_next_division(size_t size, uint32_t divisions)
{
    if ((size & (size - 1)) == 0)
        return size;
    uint64_t floor2 = (uint64_t)1 << ga_conf_floor_log2(size);
    uint64_t step = floor2 >> ga_conf_floor_log2(divisions);
    if (step == 0)
        return (size_t)(floor2 << 1);
    uint64_t down = (uint64_t)size & ~(step - 1);
    return down == size ? size : (size_t)(down + step);
}

size_t ga_round_size(const ga_conf_t *c, size_t size)
{
    if (size < GA_MIN_BLOCK_SIZE)
        return GA_MIN_BLOCK_SIZE;
    uint32_t d = ga_conf_roundup_divisions(c, size);
    /* PyTorch applies power-of-two divisions only above 512 * divisions bytes,
     * so 1200 B under divisions 4 rounds to 1536, not 1280. */
    if (d > 1 && size > GA_MIN_BLOCK_SIZE * d)
        return roundup_power2_next_division(size, d);
    return GA_MIN_BLOCK_SIZE * ((size + GA_MIN_BLOCK_SIZE - 1) / GA_MIN_BLOCK_SIZE);
}

bool ga_round_is_plain(const ga_conf_t *c)
{
    for (size_t i = 0; i < GA_CONF_DIVISION_INTERVALS; i++)
        if (c->roundup_power2_divisions[i] > 1)
            return false;
    return true;
}

size_t ga_allocation_size(const ga_conf_t *c, size_t rounded)
{
    if (rounded <= GA_SMALL_SIZE)
        return GA_SMALL_BUFFER;
    /* kLargeBuffer, which newest PyTorch main makes large_segment_size_mb. */
    if (rounded < GA_MIN_LARGE_ALLOC)
        return (size_t)c->large_segment_size;
    return GA_ROUND_LARGE * ((rounded + GA_ROUND_LARGE - 1) / GA_ROUND_LARGE);
}
