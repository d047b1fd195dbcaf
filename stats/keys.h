/*
 * keys.h (stats/ private): the flattened-key view shared by galloc_stats_t
 * (stats.c) and galloc_host_stats_t (host_stats.c). Each file builds a table
 * of (PyTorch key, offset of its int64_t) from its X-macro, sorted in
 * PyTorch's order, which is strcmp order; these walk and search it.
 */
#ifndef GA_STATS_KEYS_H
#define GA_STATS_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc.h>

typedef struct ga_stat_key {
    const char *key; /* flattened PyTorch key */
    size_t offset;   /* offset of its int64_t in the stats struct */
} ga_stat_key_t;

/* fn for each of the n keys of s in table order; returns the number of keys
 * visited when fn returned non-zero, else n (0 when s or fn is NULL). */
size_t ga_stat_keys_foreach(const void *s, const ga_stat_key_t *keys, size_t n, galloc_stats_visit_fn fn, void *ctx);

/* The value of key in s, by binary search of the sorted table: GALLOC_OK, or
 * GALLOC_E_INVAL for an unknown key or a NULL argument. */
galloc_status_t ga_stat_keys_lookup(const void *s, const ga_stat_key_t *keys, size_t n, const char *key,
                                    int64_t *value);

#endif
