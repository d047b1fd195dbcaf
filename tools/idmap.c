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
    ga_idmap_init_extra(m, 0);
}

void ga_idmap_init_extra(ga_idmap_t *m, size_t extra)
{
    memset(m, 0, offsetof(ga_idmap_t, zero_extra));
    m->extra = extra > GA_IDMAP_EXTRA_MAX ? GA_IDMAP_EXTRA_MAX : (extra + 7) / 8 * 8;
    ga_addrmap_init(&m->map, sizeof(ga_idmap_slot_t) + m->extra);
}

void ga_idmap_free(ga_idmap_t *m)
{
    ga_addrmap_destroy(&m->map);
    ga_idmap_init_extra(m, m->extra);
}

/* The value stored for key, or NULL. */
static ga_idmap_val_t *value_of(ga_idmap_t *m, uint64_t key)
{
    if (key == 0)
        return m->has_zero ? &m->zero_val : NULL;
    ga_idmap_slot_t *s = ga_addrmap_find(&m->map, (uintptr_t)key);
    return s != NULL ? &s->val : NULL;
}

/* The payload of the value v (a slot's, or key 0's). */
static unsigned char *payload_of(ga_idmap_t *m, ga_idmap_val_t *v)
{
    return v == &m->zero_val ? (unsigned char *)m->zero_extra : (unsigned char *)v + sizeof(ga_idmap_val_t);
}

int ga_idmap_put_ex(ga_idmap_t *m, uint64_t key, ga_idmap_val_t val, ga_idmap_val_t *old, void *old_payload,
                    bool *replaced, void **payload)
{
    ga_idmap_val_t *v = value_of(m, key);
    if (replaced != NULL)
        *replaced = v != NULL;
    if (v != NULL) {
        if (old != NULL)
            *old = *v;
        if (old_payload != NULL && m->extra)
            memcpy(old_payload, payload_of(m, v), m->extra);
    } else if (key == 0) {
        m->has_zero = true;
        v = &m->zero_val;
    } else {
        /* The only allocation, before anything changes: a failure leaves the map as it was. */
        if (ga_addrmap_reserve(&m->map, 1) != GALLOC_OK)
            return -1;
        v = &((ga_idmap_slot_t *)ga_addrmap_insert(&m->map, (uintptr_t)key))->val;
    }
    *v = val;
    if (payload != NULL) /* the caller writes it (the replay's owners, after every put) */
        *payload = payload_of(m, v);
    else if (m->extra)
        memset(payload_of(m, v), 0, m->extra);
    return 0;
}

int ga_idmap_put(ga_idmap_t *m, uint64_t key, ga_idmap_val_t val, ga_idmap_val_t *old, bool *replaced)
{
    return ga_idmap_put_ex(m, key, val, old, NULL, replaced, NULL);
}

void *ga_idmap_extra(ga_idmap_t *m, uint64_t key)
{
    ga_idmap_val_t *v = value_of(m, key);
    return v != NULL ? payload_of(m, v) : NULL;
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
    return ga_idmap_remove_ex(m, key, out, NULL);
}

bool ga_idmap_remove_ex(ga_idmap_t *m, uint64_t key, ga_idmap_val_t *out, void *payload)
{
    ga_idmap_val_t *v = value_of(m, key);
    if (v == NULL)
        return false;
    if (out != NULL)
        *out = *v;
    if (payload != NULL && m->extra)
        memcpy(payload, payload_of(m, v), m->extra);
    if (key == 0)
        m->has_zero = false;
    else
        ga_addrmap_remove(&m->map, (unsigned char *)v - offsetof(ga_idmap_slot_t, val));
    return true;
}
