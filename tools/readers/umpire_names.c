/*
 * umpire_names.c: the allocator behind each request of an Umpire log, for the
 * stacks read_umpire.c hands out (GA_STACK_ALLOCATOR; its top comment says
 * where the names come from). Names are interned once each (intern.h); an
 * index by allocator_ref (util/addrmap.h, 16 bytes an entry, at most half
 * full) gives a ref's name. Memory follows the allocators a program makes,
 * not the log's length, and every growth is offered to the reader's bound.
 */
#include <string.h>

#include "tools/readers/umpire_int.h"

/* An allocator named by a make line: its ref, and its name in names. */
typedef struct ref_entry {
    uintptr_t key; /* allocator_ref, never 0 */
    uint32_t name; /* in names */
} ref_entry_t;

void ga_umpire_names_init(ga_umpire_names_t *u)
{
    memset(u, 0, sizeof(*u));
    ga_intern_init(&u->names);
    ga_addrmap_init(&u->refs, sizeof(ref_entry_t));
}

void ga_umpire_names_free(ga_umpire_names_t *u)
{
    ga_intern_free(&u->names);
    ga_addrmap_destroy(&u->refs);
}

size_t ga_umpire_names_held(const ga_umpire_names_t *u)
{
    return ga_intern_bytes(&u->names) + u->refs.cap * u->refs.entry_size;
}

int ga_umpire_name(ga_umpire_names_t *u, uint64_t ref, const ga_umpire_text_t *name, const ga_hold_t *hold)
{
    uint32_t idx;
    int rc = ga_intern_add(&u->names, name->s, name->n, 0, hold, &idx, NULL);
    if (rc != 0)
        return rc;
    ref_entry_t *e = ga_addrmap_find(&u->refs, (uintptr_t)ref);
    if (e == NULL) {
        rc = ga_hold_ask(hold, ga_hold_map_more(&u->refs));
        if (rc != 0)
            return rc;
        if (ga_addrmap_reserve(&u->refs, 1) != GALLOC_OK)
            return GA_HOLD_NOMEM;
        e = ga_addrmap_insert(&u->refs, (uintptr_t)ref);
    }
    e->name = idx;
    return 0;
}

/* A stack's frames: the allocator, then a named_allocate's name. */
static void alloc_frame(const void *data, size_t i, ga_frame_t *out)
{
    const ga_umpire_names_t *u = data;
    memset(out, 0, sizeof(*out));
    if (i == 0) {
        out->name = ga_intern_get(&u->names, u->stack_name, &out->name_len);
    } else if (i == 1 && u->stack_allocation.has) {
        out->name = u->stack_allocation.s;
        out->name_len = u->stack_allocation.n;
    }
}

/* Frame 0's key: its name's index + 1; an allocation's name has none (not interned: it may differ per request). */
static uintptr_t alloc_key(const void *data, size_t i)
{
    const ga_umpire_names_t *u = data;
    return i == 0 ? (uintptr_t)u->stack_name + 1 : 0;
}

int ga_umpire_stack(ga_umpire_names_t *u, const ga_umpire_text_t *tag, uint64_t ref, const ga_umpire_text_t *allocation,
                    const ga_hold_t *hold, ga_stack_t *st)
{
    uint32_t idx;
    memset(st, 0, sizeof(*st));
    if (tag->has) {
        int rc = ga_intern_add(&u->names, tag->s, tag->n, 0, hold, &idx, NULL);
        if (rc != 0)
            return rc;
    } else {
        const ref_entry_t *e = ref != 0 ? ga_addrmap_find(&u->refs, (uintptr_t)ref) : NULL;
        if (e == NULL)
            return 0; /* an allocator never named: its address is no name */
        idx = e->name;
    }
    u->stack_name = idx;
    u->stack_allocation.has = allocation->has;
    if (allocation->has) {
        memcpy(u->stack_allocation.s, allocation->s, allocation->n);
        u->stack_allocation.n = allocation->n;
    }
    *st = (ga_stack_t){
        .kind = GA_STACK_ALLOCATOR, .n = allocation->has ? 2 : 1, .data = u, .frame = alloc_frame, .key = alloc_key};
    return 0;
}
