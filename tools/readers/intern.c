/*
 * intern.c: the readers' string table (intern.h): strings back to back in one
 * growing buffer, their places in a growing array, and an index by hash in
 * galloc's one hash map (util/addrmap.h) that finds a string's index from its
 * text. An add reserves everything it may need, asking the reader's bound
 * first, before it changes anything, so a failure leaves the table as it was.
 */
#include "tools/readers/intern.h"

#include <stdlib.h>
#include <string.h>

#define FIRST_BYTES 4096 /* the buffer's first size: a trace's names fit in a few KiB */
#define FIRST_STRS 64
#define MAP_FIRST_CAP 16 /* util/addrmap.c's first capacity (MIN_CAP) */

/* An entry of the index: a string's index under the hash of its text and tag. */
typedef struct index_entry {
    uintptr_t key; /* ga_addrmap_hash_key(hash) */
    uint32_t idx;  /* in str */
} index_entry_t;

/* What an index lookup compares. */
typedef struct lookup {
    const ga_intern_t *t;
    const char *s;
    size_t len;
    uint32_t tag;
} lookup_t;

/* FNV-1a over the bytes, then the tag and length mixed in: the index's own
 * mixing (ga_addrmap_home) spreads the result, so no finalizer is needed. */
static uint64_t hash(const char *s, size_t len, uint32_t tag)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return ga_addrmap_hash_combine(ga_addrmap_hash_combine(h, tag), len);
}

static bool matches(const void *entry, const void *ctx)
{
    const index_entry_t *e = entry;
    const lookup_t *l = ctx;
    const ga_intern_str_t *x = &l->t->str[e->idx];
    return x->tag == l->tag && x->len == l->len && memcmp(l->t->bytes + x->off, l->s, l->len) == 0;
}

void ga_intern_init(ga_intern_t *t)
{
    memset(t, 0, sizeof(*t));
    ga_addrmap_init(&t->index, sizeof(index_entry_t));
}

void ga_intern_free(ga_intern_t *t)
{
    free(t->bytes);
    free(t->str);
    ga_addrmap_destroy(&t->index);
    ga_intern_init(t);
}

size_t ga_hold_map_more(const ga_addrmap_t *m)
{
    if (m->count + 1 <= m->cap / 2)
        return 0;
    return (m->cap ? m->cap * 2 : MAP_FIRST_CAP) * m->entry_size;
}

size_t ga_intern_bytes(const ga_intern_t *t)
{
    return t->cap + t->str_cap * sizeof(*t->str) + t->index.cap * t->index.entry_size;
}

/* The buffer's next size to hold need bytes: doubled until it does. 0 if it
 * would overflow. */
static size_t next_cap(size_t cap, size_t need, size_t first)
{
    size_t c = cap ? cap : first;
    while (c < need) {
        if (c > SIZE_MAX / 2)
            return 0;
        c *= 2;
    }
    return c;
}

int ga_intern_add(ga_intern_t *t, const char *s, size_t len, uint32_t tag, const ga_hold_t *hold, uint32_t *idx,
                  bool *added)
{
    uint64_t h = hash(s, len, tag);
    lookup_t l = {t, s, len, tag};
    const index_entry_t *e = ga_addrmap_find_match(&t->index, ga_addrmap_hash_key(h), matches, &l);
    if (added != NULL)
        *added = e == NULL;
    if (e != NULL) {
        *idx = e->idx;
        return 0;
    }
    if (len > UINT32_MAX || t->n >= UINT32_MAX - 1)
        return GA_HOLD_LIMIT;
    /* Everything the add may allocate, offered to the bound before any of it. */
    size_t bytes_cap = t->used + len > t->cap ? next_cap(t->cap, t->used + len, FIRST_BYTES) : t->cap;
    size_t str_cap = t->n == t->str_cap ? next_cap(t->str_cap, t->n + 1, FIRST_STRS) : t->str_cap;
    if (bytes_cap == 0 || str_cap == 0 || str_cap > SIZE_MAX / sizeof(*t->str))
        return GA_HOLD_NOMEM;
    uint64_t more = (uint64_t)(bytes_cap - t->cap) + (uint64_t)(str_cap - t->str_cap) * sizeof(*t->str) +
                    ga_hold_map_more(&t->index);
    if (ga_hold_ask(hold, more) != 0)
        return GA_HOLD_REFUSED;
    if (bytes_cap != t->cap) {
        char *b = realloc(t->bytes, bytes_cap);
        if (b == NULL)
            return GA_HOLD_NOMEM;
        t->bytes = b;
        t->cap = bytes_cap;
    }
    if (str_cap != t->str_cap) {
        ga_intern_str_t *x = realloc(t->str, str_cap * sizeof(*x));
        if (x == NULL)
            return GA_HOLD_NOMEM;
        t->str = x;
        t->str_cap = str_cap;
    }
    if (ga_addrmap_reserve(&t->index, 1) != GALLOC_OK)
        return GA_HOLD_NOMEM;
    /* Nothing can fail from here. */
    if (len > 0)
        memcpy(t->bytes + t->used, s, len);
    t->str[t->n] = (ga_intern_str_t){.off = t->used, .len = (uint32_t)len, .tag = tag};
    t->used += len;
    index_entry_t *ne = ga_addrmap_insert(&t->index, ga_addrmap_hash_key(h));
    ne->idx = (uint32_t)t->n;
    *idx = (uint32_t)t->n++;
    return 0;
}
