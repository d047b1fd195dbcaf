/*
 * idmap.c: see idmap.h. Device pointers share their low bits (512-byte
 * blocks, 2 MiB segments) and high bits (one VA range), so keys are mixed with
 * a 64-bit finalizer (splitmix64's) before taking the low bits as the slot.
 */
#include "tools/idmap.h"

#include <stdlib.h>
#include <string.h>

#define EMPTY UINT64_MAX
#define MIN_CAP 64

static inline uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

void ga_idmap_init(ga_idmap_t *m)
{
    memset(m, 0, sizeof(*m));
}

void ga_idmap_free(ga_idmap_t *m)
{
    free(m->slots);
    ga_idmap_init(m);
}

static ga_idmap_slot_t *alloc_table(size_t cap)
{
    ga_idmap_slot_t *s = malloc(cap * sizeof(*s));
    if (s != NULL)
        for (size_t i = 0; i < cap; i++)
            s[i].key = EMPTY;
    return s;
}

/* Insert into a table known to have room and not to hold key. */
static void place(ga_idmap_slot_t *slots, size_t cap, uint64_t key, ga_idmap_val_t val)
{
    size_t mask = cap - 1, i = (size_t)mix(key) & mask;
    while (slots[i].key != EMPTY)
        i = (i + 1) & mask;
    slots[i].key = key;
    slots[i].val = val;
}

static int grow(ga_idmap_t *m)
{
    size_t ncap = m->cap ? m->cap * 2 : MIN_CAP;
    if (ncap > SIZE_MAX / 2 / sizeof(ga_idmap_slot_t))
        return -1;
    ga_idmap_slot_t *ns = alloc_table(ncap);
    if (ns == NULL)
        return -1;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key != EMPTY)
            place(ns, ncap, m->slots[i].key, m->slots[i].val);
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
    return 0;
}

static ga_idmap_slot_t *find(const ga_idmap_t *m, uint64_t key)
{
    if (m->cap == 0)
        return NULL;
    size_t mask = m->cap - 1, i = (size_t)mix(key) & mask;
    for (;;) {
        ga_idmap_slot_t *s = &m->slots[i];
        if (s->key == key)
            return s;
        if (s->key == EMPTY)
            return NULL;
        i = (i + 1) & mask;
    }
}

int ga_idmap_put(ga_idmap_t *m, uint64_t key, ga_idmap_val_t val, ga_idmap_val_t *old, bool *replaced)
{
    if (replaced != NULL)
        *replaced = false;
    if (key == EMPTY) {
        if (m->has_max) {
            if (old != NULL)
                *old = m->max_val;
            if (replaced != NULL)
                *replaced = true;
        } else {
            m->n++;
        }
        m->has_max = true;
        m->max_val = val;
        return 0;
    }
    ga_idmap_slot_t *s = find(m, key);
    if (s != NULL) {
        if (old != NULL)
            *old = s->val;
        if (replaced != NULL)
            *replaced = true;
        s->val = val;
        return 0;
    }
    /* Keep the table at most half full: probe runs stay short. */
    if ((m->n + 1) * 2 > m->cap && grow(m) != 0)
        return -1;
    place(m->slots, m->cap, key, val);
    m->n++;
    return 0;
}

bool ga_idmap_get(const ga_idmap_t *m, uint64_t key, ga_idmap_val_t *out)
{
    if (key == EMPTY) {
        if (m->has_max && out != NULL)
            *out = m->max_val;
        return m->has_max;
    }
    ga_idmap_slot_t *s = find(m, key);
    if (s != NULL && out != NULL)
        *out = s->val;
    return s != NULL;
}

bool ga_idmap_remove(ga_idmap_t *m, uint64_t key, ga_idmap_val_t *out)
{
    if (key == EMPTY) {
        if (!m->has_max)
            return false;
        if (out != NULL)
            *out = m->max_val;
        m->has_max = false;
        m->n--;
        return true;
    }
    ga_idmap_slot_t *s = find(m, key);
    if (s == NULL)
        return false;
    if (out != NULL)
        *out = s->val;
    /* Backward-shift deletion: pull later entries of the probe run into the
     * hole unless their home slot lies cyclically after the hole. */
    size_t mask = m->cap - 1, hole = (size_t)(s - m->slots), j = hole;
    for (;;) {
        j = (j + 1) & mask;
        if (m->slots[j].key == EMPTY)
            break;
        size_t home = (size_t)mix(m->slots[j].key) & mask;
        /* Entry j may move to hole iff home is not in (hole, j] cyclically. */
        bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!stays) {
            m->slots[hole] = m->slots[j];
            hole = j;
        }
    }
    m->slots[hole].key = EMPTY;
    m->n--;
    return true;
}
