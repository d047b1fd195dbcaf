/*
 * idmap.c: see idmap.h. Trace ids are 64-bit and the address map's keys are
 * uintptr_t, so the tools need a 64-bit host; key 0 takes the side slot.
 */
#include "tools/idmap.h"

#include <stddef.h>
#include <string.h>

_Static_assert(sizeof(uintptr_t) >= sizeof(uint64_t), "trace ids are 64-bit map keys");

void ga_idmap_init(ga_idmap_t *m)
{
    memset(m, 0, sizeof(*m));
    ga_addrmap_init(&m->map, sizeof(ga_idmap_slot_t));
}

void ga_idmap_free(ga_idmap_t *m)
{
    ga_addrmap_destroy(&m->map);
    ga_idmap_init(m);
}

/* The value stored for key, or NULL. */
static ga_idmap_val_t *value_of(ga_idmap_t *m, uint64_t key)
{
    if (key == 0)
        return m->has_zero ? &m->zero_val : NULL;
    ga_idmap_slot_t *s = ga_addrmap_find(&m->map, (uintptr_t)key);
    return s != NULL ? &s->val : NULL;
}

int ga_idmap_put(ga_idmap_t *m, uint64_t key, ga_idmap_val_t val, ga_idmap_val_t *old, bool *replaced)
{
    ga_idmap_val_t *v = value_of(m, key);
    if (replaced != NULL)
        *replaced = v != NULL;
    if (v != NULL) {
        if (old != NULL)
            *old = *v;
        *v = val;
        return 0;
    }
    if (key == 0) {
        m->has_zero = true;
        m->zero_val = val;
        return 0;
    }
    /* The only allocation, before anything changes: a failure leaves the map as it was. */
    if (ga_addrmap_reserve(&m->map, 1) != GALLOC_OK)
        return -1;
    ((ga_idmap_slot_t *)ga_addrmap_insert(&m->map, (uintptr_t)key))->val = val;
    return 0;
}

bool ga_idmap_get(const ga_idmap_t *m, uint64_t key, ga_idmap_val_t *out)
{
    const ga_idmap_val_t *v = value_of((ga_idmap_t *)m, key); /* read only */
    if (v != NULL && out != NULL)
        *out = *v;
    return v != NULL;
}

bool ga_idmap_remove(ga_idmap_t *m, uint64_t key, ga_idmap_val_t *out)
{
    ga_idmap_val_t *v = value_of(m, key);
    if (v == NULL)
        return false;
    if (out != NULL)
        *out = *v;
    if (key == 0)
        m->has_zero = false;
    else
        ga_addrmap_remove(&m->map, (unsigned char *)v - offsetof(ga_idmap_slot_t, val));
    return true;
}
