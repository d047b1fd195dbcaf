/*
 * kineto_match.c: the older Kineto layout's frees, tied to allocations by
 * size (read_kineto.c says why and what the report says about it).
 */
#include <stdlib.h>

#include "tools/readers/kineto_int.h"

/* An event's place in the size matching: its device, its size, where it is. */
typedef struct by_size {
    uint64_t size; /* |Bytes| */
    size_t pos;    /* in ev (time order) */
    uint16_t dev;  /* Device Id */
} by_size_t;

static int by_dev_size(const void *a, const void *b)
{
    const by_size_t *x = a, *y = b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    if (x->size != y->size)
        return x->size < y->size ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* The older layout: give each allocation an id (its place + 1) and each free
 * the id of the most recent live allocation of its size on its device, or
 * mark it skipped. Sizes never interact, so each (device, size) group is
 * matched on its own with one stack, in time order. */
int ga_kineto_match_by_size(ga_kineto_ev_t *ev, size_t n, uint64_t *unmatched)
{
    by_size_t *g = malloc(n * sizeof(*g));
    size_t *stack = malloc(n * sizeof(*stack));
    if (g == NULL || stack == NULL) {
        free(g);
        free(stack);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        int64_t b = ev[i].bytes;
        g[i] = (by_size_t){.size = b > 0 ? (uint64_t)b : (uint64_t)-b, .pos = i, .dev = ev[i].dev};
    }
    qsort(g, n, sizeof(*g), by_dev_size);
    size_t top = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && (g[i].dev != g[i - 1].dev || g[i].size != g[i - 1].size))
            top = 0; /* a new group: what is still live in the last one stays live */
        ga_kineto_ev_t *m = &ev[g[i].pos];
        if (m->bytes > 0) {
            m->addr = (uint64_t)g[i].pos + 1;
            stack[top++] = g[i].pos;
        } else if (top > 0) {
            m->addr = ev[stack[--top]].addr;
        } else {
            m->skip = true;
            unmatched[m->dev]++;
        }
    }
    free(g);
    free(stack);
    return 0;
}
