/*
 * gpu_table.c: the GPU layer's open-addressing map (see gpu_table.h).
 * Deletion shifts the following run back instead of leaving tombstones, so a
 * lookup's probe ends at the first empty slot however long the table lives.
 */
#include "backend/gpu_table.h"

#include <stdlib.h>

/* Fibonacci hashing: device addresses share their low bits (alignment). */
static size_t slot_of(uintptr_t key, size_t mask)
{
    return (size_t)(((uint64_t)key * 0x9e3779b97f4a7c15ull) >> 17) & mask;
}

static size_t find(const ga_gpu_table_t *t, uintptr_t key)
{
    size_t mask = t->cap - 1, i = slot_of(key, mask);
    while (t->slots[i].key != 0 && t->slots[i].key != key)
        i = (i + 1) & mask;
    return i;
}

galloc_status_t ga_gpu_table_reserve(ga_gpu_table_t *t)
{
    if (t->count + 1 <= t->cap / 2)
        return GALLOC_OK;
    size_t cap = t->cap ? t->cap * 2 : 16;
    ga_gpu_slot_t *slots = calloc(cap, sizeof(*slots));
    if (slots == NULL)
        return GALLOC_E_NOMEM;
    ga_gpu_table_t n = {.slots = slots, .cap = cap, .count = 0};
    for (size_t i = 0; i < t->cap; i++)
        if (t->slots[i].key != 0)
            ga_gpu_table_put(&n, t->slots[i].key, t->slots[i].value);
    free(t->slots);
    *t = n;
    return GALLOC_OK;
}

void ga_gpu_table_put(ga_gpu_table_t *t, uintptr_t key, uint64_t value)
{
    size_t i = find(t, key);
    if (t->slots[i].key == 0)
        t->count++;
    t->slots[i] = (ga_gpu_slot_t){.key = key, .value = value};
}

bool ga_gpu_table_get(const ga_gpu_table_t *t, uintptr_t key, uint64_t *value)
{
    if (t->cap == 0 || key == 0)
        return false;
    size_t i = find(t, key);
    if (t->slots[i].key == 0)
        return false;
    if (value != NULL)
        *value = t->slots[i].value;
    return true;
}

void ga_gpu_table_del(ga_gpu_table_t *t, uintptr_t key)
{
    if (t->cap == 0 || key == 0)
        return;
    size_t mask = t->cap - 1, i = find(t, key);
    if (t->slots[i].key == 0)
        return;
    t->count--;
    /* Move back every later entry of the run whose home is not in (i, j]. */
    for (size_t j = (i + 1) & mask; t->slots[j].key != 0; j = (j + 1) & mask) {
        size_t home = slot_of(t->slots[j].key, mask);
        if (((j - home) & mask) >= ((j - i) & mask)) {
            t->slots[i] = t->slots[j];
            i = j;
        }
    }
    t->slots[i].key = 0;
}

void ga_gpu_table_free(ga_gpu_table_t *t)
{
    free(t->slots);
    *t = (ga_gpu_table_t){0};
}
