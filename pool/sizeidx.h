/*
 * sizeidx.h: the exact free-block index of one stream in one block pool: bins
 * over block sizes, a two-level bitmap of the non-empty bins, and one ordered
 * tree per bin. It answers PyTorch's best-fit query (get_free_block's
 * lower_bound on BlockComparatorSize in c10/cuda/CUDACachingAllocator.cpp:
 * the smallest block of at least n bytes, lowest address among equals) in a
 * bounded number of steps, whatever the number of free blocks.
 *
 * Bins. Block sizes are multiples of 512 B (kMinBlockSize); u = size / 512.
 *   - Exact bins 0 .. 4095 hold one size each, u = bin + 1: 512 B .. 2 MiB.
 *     Every small-pool block lives here (a small segment is 2 MiB), and so do
 *     the large pool's blocks up to 2 MiB. Inside an exact bin the tree is
 *     ordered by address only, so its leftmost node is the answer.
 *   - Above 2 MiB, TLSF classes (Masmano et al., "TLSF: a new dynamic memory
 *     allocator for real-time systems", 2004): 16 classes per power of two,
 *     u in [2^f + s 2^(f-4), 2^f + (s+1) 2^(f-4)) for f = 12 .. 54. A class's
 *     tree is ordered by (size, address), so a descent by size inside the one
 *     class that straddles the request finds the exact lower bound; every
 *     later bin holds only larger blocks.
 * The bin of a size never decreases with the size, so walking the set bins in
 * order and each tree in order visits the blocks in (size, address) order:
 * PyTorch's order within one stream.
 *
 * Bitmap. Bit i of words[] says bins[i] is non-empty; bit w of top[] says
 * words[w] may be non-zero. The first non-empty bin at or after i is then at
 * most two masked words and two count-trailing-zeros away. Emptying a bin
 * clears its word bit only: a top bit left over is cleared by the next search
 * that finds its word empty, so a remove (every split and merge makes one)
 * does not test and rewrite the top level.
 *
 * Invariants: bit i set <=> bins[i] != NULL; words[w] != 0 => top bit w set;
 * every block in bins[i] has ga_sizeidx_bin(size) == i; exact bins hold one
 * size. The index knows nothing of blocks: blockpool.c owns the trees' nodes.
 *
 * Locking: none; its stream set's covers it (blockpool.h).
 */
#ifndef GA_SIZEIDX_H
#define GA_SIZEIDX_H

#include <stddef.h>
#include <stdint.h>

#include "pool/avl.h"

#define GA_SIZEIDX_EXACT_LOG 12u /* 4096 exact bins: up to 2 MiB, the small segment */
#define GA_SIZEIDX_EXACT (1u << GA_SIZEIDX_EXACT_LOG)
#define GA_SIZEIDX_SUB_LOG 4u /* 16 classes per power of two above */
#define GA_SIZEIDX_SUB (1u << GA_SIZEIDX_SUB_LOG)
#define GA_SIZEIDX_MAX_LOG 54u /* u < 2^55 for any 64-bit size */
#define GA_SIZEIDX_BINS (GA_SIZEIDX_EXACT + (GA_SIZEIDX_MAX_LOG - GA_SIZEIDX_EXACT_LOG + 1u) * GA_SIZEIDX_SUB)
#define GA_SIZEIDX_WORDS ((GA_SIZEIDX_BINS + 63u) / 64u)
#define GA_SIZEIDX_TOP ((GA_SIZEIDX_WORDS + 63u) / 64u)
#define GA_SIZEIDX_NONE GA_SIZEIDX_BINS /* "no bin" from the searches */

typedef struct ga_sizeidx {
    uint64_t top[GA_SIZEIDX_TOP];         /* bit w: words[w] != 0 */
    uint64_t words[GA_SIZEIDX_WORDS];     /* bit i % 64 of word i / 64: bins[i] != NULL */
    ga_avl_node_t *bins[GA_SIZEIDX_BINS]; /* one tree per bin, by (size, address) */
} ga_sizeidx_t;

/* The bin of u = size / 512 units, u >= 1. */
static inline unsigned ga_sizeidx_bin_units(uint64_t u)
{
    if (u <= GA_SIZEIDX_EXACT)
        return (unsigned)u - 1u;
    unsigned f = 63u - (unsigned)__builtin_clzll(u);
    if (f > GA_SIZEIDX_MAX_LOG)
        return GA_SIZEIDX_NONE;
    unsigned s = (unsigned)(u >> (f - GA_SIZEIDX_SUB_LOG)) & (GA_SIZEIDX_SUB - 1u);
    return GA_SIZEIDX_EXACT + (f - GA_SIZEIDX_EXACT_LOG) * GA_SIZEIDX_SUB + s;
}

/* The bin a block of `size` bytes (a multiple of 512, >= 512) lives in. */
static inline unsigned ga_sizeidx_bin(size_t size)
{
    return ga_sizeidx_bin_units((uint64_t)size >> 9);
}

/* The first bin that can hold a block of at least `size` bytes (any size: a
 * search key need not be a multiple of 512); GA_SIZEIDX_NONE past the end. */
static inline unsigned ga_sizeidx_key_bin(size_t size)
{
    uint64_t u = ((uint64_t)size >> 9) + ((size & 511u) != 0);
    return ga_sizeidx_bin_units(u != 0 ? u : 1);
}

static inline void ga_sizeidx_set(ga_sizeidx_t *x, unsigned bin)
{
    unsigned w = bin >> 6;
    x->words[w] |= (uint64_t)1 << (bin & 63u);
    x->top[w >> 6] |= (uint64_t)1 << (w & 63u);
}

/* The bin is empty now; its top bit goes at the next search (see above). */
static inline void ga_sizeidx_clear(ga_sizeidx_t *x, unsigned bin)
{
    x->words[bin >> 6] &= ~((uint64_t)1 << (bin & 63u));
}

/* The first non-empty bin >= bin, or GA_SIZEIDX_NONE; clears the stale top
 * bits it passes. */
static inline unsigned ga_sizeidx_find_ge(ga_sizeidx_t *x, unsigned bin)
{
    if (bin >= GA_SIZEIDX_BINS)
        return GA_SIZEIDX_NONE;
    unsigned w = bin >> 6;
    uint64_t m = x->words[w] & (~(uint64_t)0 << (bin & 63u));
    if (m != 0)
        return (w << 6) | (unsigned)__builtin_ctzll(m);
    w++;
    unsigned t = w >> 6;
    if (t >= GA_SIZEIDX_TOP)
        return GA_SIZEIDX_NONE;
    uint64_t tm = x->top[t] & (~(uint64_t)0 << (w & 63u));
    for (;;) {
        while (tm == 0) {
            if (++t >= GA_SIZEIDX_TOP)
                return GA_SIZEIDX_NONE;
            tm = x->top[t];
        }
        w = (t << 6) | (unsigned)__builtin_ctzll(tm);
        if (x->words[w] != 0)
            return (w << 6) | (unsigned)__builtin_ctzll(x->words[w]);
        x->top[t] &= ~((uint64_t)1 << (w & 63u)); /* stale */
        tm &= tm - 1;
    }
}

/* The last non-empty bin <= bin (bin < GA_SIZEIDX_BINS), or GA_SIZEIDX_NONE;
 * clears the stale top bits it passes. */
static inline unsigned ga_sizeidx_find_le(ga_sizeidx_t *x, unsigned bin)
{
    unsigned w = bin >> 6;
    uint64_t m = x->words[w] & (~(uint64_t)0 >> (63u - (bin & 63u)));
    if (m != 0)
        return (w << 6) | (63u - (unsigned)__builtin_clzll(m));
    if (w == 0)
        return GA_SIZEIDX_NONE;
    w--;
    unsigned t = w >> 6;
    uint64_t tm = x->top[t] & (~(uint64_t)0 >> (63u - (w & 63u)));
    for (;;) {
        while (tm == 0) {
            if (t == 0)
                return GA_SIZEIDX_NONE;
            tm = x->top[--t];
        }
        unsigned hi = 63u - (unsigned)__builtin_clzll(tm);
        w = (t << 6) | hi;
        if (x->words[w] != 0)
            return (w << 6) | (63u - (unsigned)__builtin_clzll(x->words[w]));
        x->top[t] &= ~((uint64_t)1 << hi); /* stale */
        tm &= ~((uint64_t)1 << hi);
    }
}

#endif /* GA_SIZEIDX_H */
