/*
 * intern.h: one copy of each distinct string a reader keeps for the stacks
 * it hands out (a Kineto trace's range names, an Umpire log's allocator
 * names), and the bound on what a reader may keep. Private to the readers.
 *
 * A string is interned with a tag (a reader's own distinction: a Kineto
 * python_function range is split into file, line and function, another range
 * of the same text is not), and (text, tag) gets an index, in the order first
 * seen, that stays its identity while the table lives: a stack frame's key
 * (trace_reader.h) is that index + 1, so equal frames compare by one word.
 *
 * Memory: the bytes of each distinct string once, 16 bytes per string in the
 * table and 32 to 64 in its index (util/addrmap.h: kept at most half full),
 * each array grown by doubling. Every growth is first offered to the
 * reader's bound (ga_hold_t: ga_input_hold_check for a gzip input), so a
 * gzip bomb of distinct names is refused before the memory is spent.
 *
 * Locking: none; one table per reader, which is used by one thread.
 */
#ifndef GA_TOOLS_READERS_INTERN_H
#define GA_TOOLS_READERS_INTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/addrmap.h"

/* A reader's bound on what it keeps: fn(ctx, more) returns 0 when it may
 * hold `more` bytes beyond what it holds now, else -1 with its message
 * written (the reader's err buffer is in ctx). fn NULL: no bound. */
typedef struct ga_hold {
    int (*fn)(void *ctx, uint64_t more);
    void *ctx;
} ga_hold_t;

/* What an add or a growth returns besides 0. */
#define GA_HOLD_NOMEM (-1)   /* out of host memory: nothing changed */
#define GA_HOLD_REFUSED (-2) /* the bound refused the growth (its message is written): nothing changed */
#define GA_HOLD_LIMIT (-3)   /* past a count the format's indexes can number (2^32 - 1): nothing changed */

/* ga_hold_ask: whether more bytes may be kept (0) or GA_HOLD_REFUSED. */
static inline int ga_hold_ask(const ga_hold_t *h, uint64_t more)
{
    return h == NULL || h->fn == NULL || more == 0 || h->fn(h->ctx, more) == 0 ? 0 : GA_HOLD_REFUSED;
}

/* One interned string. */
typedef struct ga_intern_str {
    size_t off;   /* in bytes */
    uint32_t len; /* its length (a reader's strings are short: at most GA_JSON_STR_MAX) */
    uint32_t tag; /* the reader's tag it was interned with */
} ga_intern_str_t;

typedef struct ga_intern {
    char *bytes;          /* the strings back to back, no terminators */
    size_t used, cap;     /* bytes used and allocated */
    ga_intern_str_t *str; /* the strings in the order first seen */
    size_t n, str_cap;    /* strings and allocated entries */
    ga_addrmap_t index;   /* hash of (text, tag) -> index in str (an index by hash) */
} ga_intern_t;

/* ga_intern_init: an empty table (allocates nothing). */
void ga_intern_init(ga_intern_t *t);

/* ga_intern_free: release everything; the table is empty again. */
void ga_intern_free(ga_intern_t *t);

/* ga_intern_add: the index of (s[0..len), tag), added if new (*added says
 * so; may be NULL). 0, or GA_HOLD_NOMEM, GA_HOLD_REFUSED (hold said no; may
 * be NULL: no bound) or GA_HOLD_LIMIT (2^32 - 1 strings, or a string of
 * 2^32 bytes), the table unchanged. */
int ga_intern_add(ga_intern_t *t, const char *s, size_t len, uint32_t tag, const ga_hold_t *hold, uint32_t *idx,
                  bool *added);

/* ga_intern_get: string i (i < t->n): its text (not NUL-terminated, valid
 * until the next add) and length. */
static inline const char *ga_intern_get(const ga_intern_t *t, uint32_t i, size_t *len)
{
    *len = t->str[i].len;
    return t->bytes + t->str[i].off;
}

/* ga_intern_bytes: the host memory the table holds. */
size_t ga_intern_bytes(const ga_intern_t *t);

/* ga_hold_map_more: bytes ga_addrmap_reserve(m, 1) would allocate (0 when
 * there is room): what a reader offers its bound before an insert. */
size_t ga_hold_map_more(const ga_addrmap_t *m);

#endif /* GA_TOOLS_READERS_INTERN_H */
