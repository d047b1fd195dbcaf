/* addrmap.c: galloc's one address map (see addrmap.h for layout, hash and invariants). */
#include "util/addrmap.h"

#include <stdlib.h>

#define MIN_CAP 16

static size_t home(const ga_addrmap_t *m, uintptr_t key)
{
    return ga_addrmap_home(m, key);
}

static unsigned char *at(const ga_addrmap_t *m, size_t i)
{
    return m->slots + i * m->entry_size;
}

static uintptr_t key_of(const unsigned char *e)
{
    return *(const uintptr_t *)e;
}

/* entry_size is a multiple of the word size: copy word by word rather than
 * call memcpy for a size the compiler cannot see. */
static void copy_entry(const ga_addrmap_t *m, unsigned char *dst, const unsigned char *src)
{
    uintptr_t *d = (uintptr_t *)dst;
    const uintptr_t *s = (const uintptr_t *)src;
    for (size_t w = 0; w < m->entry_size / sizeof(uintptr_t); w++)
        d[w] = s[w];
}

void ga_addrmap_init(ga_addrmap_t *m, size_t entry_size)
{
    m->slots = NULL;
    m->cap = 0;
    m->count = 0;
    m->entry_size = entry_size;
    m->shift = 64;
}

void ga_addrmap_destroy(ga_addrmap_t *m)
{
    free(m->slots);
    ga_addrmap_init(m, m->entry_size);
}

galloc_status_t ga_addrmap_grow(ga_addrmap_t *m, size_t n)
{
    if (n <= m->cap / 2 - m->count) /* count <= cap / 2: no wrap */
        return GALLOC_OK;
    /* The new cap is below 4 * (count + n): keep it, its byte size and its
     * doubling below SIZE_MAX. */
    size_t limit = SIZE_MAX / 2 / m->entry_size / 4;
    if (m->count > limit || n > limit - m->count)
        return GALLOC_E_NOMEM;
    size_t cap = m->cap ? m->cap : MIN_CAP;
    while ((m->count + n) > cap / 2)
        cap *= 2;
    unsigned char *slots = calloc(cap, m->entry_size);
    if (slots == NULL)
        return GALLOC_E_NOMEM;
    unsigned shift = 64;
    for (size_t c = cap; c > 1; c >>= 1)
        shift--;
    ga_addrmap_t grown = {slots, cap, 0, m->entry_size, shift};
    for (size_t i = 0; i < m->cap; i++) {
        const unsigned char *e = at(m, i);
        if (key_of(e) != 0)
            copy_entry(m, ga_addrmap_insert(&grown, key_of(e)), e);
    }
    free(m->slots);
    *m = grown;
    return GALLOC_OK;
}

void *ga_addrmap_find(const ga_addrmap_t *m, uintptr_t key)
{
    if (m->cap == 0 || key == 0)
        return NULL;
    for (size_t i = home(m, key);; i = (i + 1) & (m->cap - 1)) {
        unsigned char *e = at(m, i);
        if (key_of(e) == key)
            return e;
        if (key_of(e) == 0)
            return NULL; /* the load <= 1/2 guarantees an empty slot */
    }
}

void *ga_addrmap_insert(ga_addrmap_t *m, uintptr_t key)
{
    size_t i = home(m, key);
    while (key_of(at(m, i)) != 0)
        i = (i + 1) & (m->cap - 1);
    unsigned char *e = at(m, i);
    *(uintptr_t *)e = key;
    m->count++;
    return e;
}

void ga_addrmap_remove(ga_addrmap_t *m, void *entry)
{
    size_t mask = m->cap - 1;
    size_t hole = (size_t)((unsigned char *)entry - m->slots) / m->entry_size;
    /* Backward shift: pull each later entry of the probe run into the hole
     * unless its home lies cyclically in (hole, j] (it would then sit before
     * its home and be unreachable), so lookups never need tombstones. */
    for (size_t j = (hole + 1) & mask; key_of(at(m, j)) != 0; j = (j + 1) & mask) {
        size_t h = home(m, key_of(at(m, j)));
        if (((j - h) & mask) >= ((j - hole) & mask)) {
            copy_entry(m, at(m, hole), at(m, j));
            hole = j;
        }
    }
    *(uintptr_t *)at(m, hole) = 0;
    m->count--;
}

bool ga_addrmap_valid(const ga_addrmap_t *m)
{
    size_t seen = 0;
    for (size_t i = 0; i < m->cap; i++) {
        const unsigned char *e = at(m, i);
        if (key_of(e) == 0)
            continue;
        if (ga_addrmap_find(m, key_of(e)) != e)
            return false;
        seen++;
    }
    return seen == m->count && m->count <= m->cap / 2;
}
