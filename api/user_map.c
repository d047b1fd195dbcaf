/* user_map.c: see user_map.h. */
#include <stdlib.h>

#include "api/user_map.h"

#define INITIAL_CAP 256

static size_t home(const ga_user_map_t *m, uintptr_t addr)
{
    /* User pointers need not be 512-aligned: mix every bit above the 16-byte
     * alignment malloc-like allocators give (Fibonacci hashing). */
    return (size_t)((((uint64_t)addr >> 4) * 0x9E3779B97F4A7C15ull) >> m->shift);
}

void ga_user_map_init(ga_user_map_t *m)
{
    m->slots = NULL;
    m->cap = 0;
    m->count = 0;
    m->shift = 64;
}

void ga_user_map_destroy(ga_user_map_t *m)
{
    free(m->slots);
    ga_user_map_init(m);
}

galloc_status_t ga_user_map_reserve(ga_user_map_t *m)
{
    if ((m->count + 1) * 2 <= m->cap)
        return GALLOC_OK;
    size_t cap = m->cap ? m->cap * 2 : INITIAL_CAP;
    ga_user_entry_t *slots = calloc(cap, sizeof(*slots));
    if (slots == NULL)
        return GALLOC_E_NOMEM;
    unsigned shift = 64;
    for (size_t c = cap; c > 1; c >>= 1)
        shift--;
    ga_user_map_t grown = {slots, cap, 0, shift};
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].addr != 0)
            ga_user_map_insert(&grown, &m->slots[i]);
    free(m->slots);
    *m = grown;
    return GALLOC_OK;
}

ga_user_entry_t *ga_user_map_find(const ga_user_map_t *m, uintptr_t addr)
{
    if (m->cap == 0 || addr == 0)
        return NULL;
    for (size_t i = home(m, addr);; i = (i + 1) & (m->cap - 1)) {
        if (m->slots[i].addr == addr)
            return &m->slots[i];
        if (m->slots[i].addr == 0)
            return NULL; /* the load factor <= 1/2 guarantees an empty slot */
    }
}

void ga_user_map_insert(ga_user_map_t *m, const ga_user_entry_t *e)
{
    size_t i = home(m, e->addr);
    while (m->slots[i].addr != 0)
        i = (i + 1) & (m->cap - 1);
    m->slots[i] = *e;
    m->count++;
}

void ga_user_map_remove(ga_user_map_t *m, ga_user_entry_t *e)
{
    size_t mask = m->cap - 1;
    size_t hole = (size_t)(e - m->slots);
    /* Backward shift: pull each later entry of the probe run into the hole
     * unless its home lies cyclically after the hole (it would become
     * unreachable), so lookups never need tombstones. */
    for (size_t j = (hole + 1) & mask; m->slots[j].addr != 0; j = (j + 1) & mask) {
        size_t h = home(m, m->slots[j].addr);
        bool stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
        if (!stays) {
            m->slots[hole] = m->slots[j];
            hole = j;
        }
    }
    m->slots[hole].addr = 0;
    m->count--;
}
