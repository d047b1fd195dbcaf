/*
 * grow.h: an array that grows by doubling, the one copy of the idiom the
 * sim's tables and the tools' event and block lists share.
 *
 * Locking: none (the caller owns the array).
 */
#ifndef GA_UTIL_GROW_H
#define GA_UTIL_GROW_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ga_grow: array (used of *cap elements of elem bytes in use), grown if
 * needed to hold one more: to first elements the first time, then twice as
 * many. NULL if out of host memory (or the size would overflow), array and
 * *cap then unchanged: the caller keeps its array and reports the failure. */
static inline void *ga_grow(void *array, size_t *cap, size_t used, size_t elem, size_t first)
{
    if (used < *cap)
        return array;
    size_t n = *cap ? *cap * 2 : first;
    void *t = n <= SIZE_MAX / 2 / elem ? realloc(array, n * elem) : NULL;
    if (t != NULL)
        *cap = n;
    return t;
}

#ifdef __cplusplus
}
#endif
#endif /* GA_UTIL_GROW_H */
