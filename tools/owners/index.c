/*
 * index.c: a unit's owners index (index.h). Three interning tables, each an
 * index by hash in util's address map (the one hash map): stacks by their
 * frames' identities, sites by name, classes by tuple. Streams are few (a
 * handful per job), so they are a list searched from the last one found.
 */
#include "tools/owners/index.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"

/* A distinct stack with identities: where its keys are, and what it is. */
typedef struct ga_owner_stackrec {
    size_t first; /* its keys: x->keys[first .. first + n) */
    size_t n;
    uint32_t kind; /* ga_stack_kind_t */
    uint32_t site;
    uint8_t phase;
} ga_owner_stackrec_t;

/* An index entry: a hash (the map's key) and the record it points at. */
typedef struct ref {
    uintptr_t key;
    uint32_t idx;
} ref_t;

void ga_owners_index_init(ga_owners_index_t *x)
{
    memset(x, 0, sizeof(*x));
    ga_addrmap_init(&x->stack_map, sizeof(ref_t));
    ga_addrmap_init(&x->site_map, sizeof(ref_t));
    ga_addrmap_init(&x->class_map, sizeof(ref_t));
}

void ga_owners_index_done(ga_owners_index_t *x)
{
    ga_addrmap_destroy(&x->stack_map);
    ga_addrmap_destroy(&x->site_map);
    ga_addrmap_destroy(&x->class_map);
    free(x->stackrecs);
    free(x->keys);
    free(x->scratch);
    x->stackrecs = NULL;
    x->keys = x->scratch = NULL;
    x->n_stackrecs = x->cap_stackrecs = x->n_keys = x->cap_keys = x->cap_scratch = 0;
}

void ga_owners_index_free(ga_owners_index_t *x)
{
    ga_owners_index_done(x);
    for (size_t i = 0; i < x->n_sites; i++) {
        free(x->sites[i].key);
        free(x->sites[i].stack);
    }
    free(x->sites);
    free(x->classes);
    free(x->streams);
    free(x->pools);
    ga_owners_index_init(x);
}

size_t ga_owners_index_bytes(const ga_owners_index_t *x)
{
    size_t n = x->cap_sites * sizeof(*x->sites) + x->cap_classes * sizeof(*x->classes) +
               x->cap_streams * sizeof(*x->streams) + x->cap_pools * sizeof(*x->pools);
    for (size_t i = 0; i < x->n_sites; i++) {
        n += strlen(x->sites[i].key) + 1 + x->sites[i].n_stack * sizeof(ga_owner_frame_t);
        for (size_t f = 0; f < x->sites[i].n_stack; f++)
            n += strlen(x->sites[i].stack[f].file) + strlen(x->sites[i].stack[f].name) + 2;
    }
    return n;
}

static uint64_t hash_str(uint64_t h, const char *s)
{
    for (; *s != '\0'; s++)
        h = ga_addrmap_hash_combine(h, (unsigned char)*s);
    return h;
}

/* A copy of st's frames for the site's JSON: one block, strings after the array. */
static int copy_stack(const ga_stack_t *st, ga_owner_site_t *site)
{
    size_t n = st != NULL && st->kind != GA_STACK_NONE ? st->n : 0, bytes = n * sizeof(ga_owner_frame_t);
    ga_frame_t f;
    for (size_t i = 0; i < n; i++) {
        st->frame(st->data, i, &f);
        bytes += (f.file ? f.file_len : 0) + (f.name ? f.name_len : 0) + 2;
    }
    if (n == 0)
        return 0;
    ga_owner_frame_t *fr = malloc(bytes);
    if (fr == NULL)
        return -1;
    char *text = (char *)(fr + n);
    for (size_t i = 0; i < n; i++) {
        st->frame(st->data, i, &f);
        size_t fl = f.file ? f.file_len : 0, nl = f.name ? f.name_len : 0;
        fr[i].file = text;
        if (fl)
            memcpy(text, f.file, fl);
        text[fl] = '\0';
        text += fl + 1;
        fr[i].name = text;
        if (nl)
            memcpy(text, f.name, nl);
        text[nl] = '\0';
        text += nl + 1;
        fr[i].line = f.line;
    }
    site->stack = fr;
    site->n_stack = n;
    return 0;
}

typedef struct site_probe {
    const ga_owners_index_t *x;
    const ga_site_class_t *c;
} site_probe_t;

static bool site_match(const void *entry, const void *ctx)
{
    const ref_t *r = entry;
    const site_probe_t *p = ctx;
    const ga_owner_site_t *s = &p->x->sites[r->idx];
    return s->kind == p->c->kind && strcmp(s->key, p->c->key) == 0;
}

/* The site named by c (made, with st as its stack, if new). 0 or -1. */
static int intern_site(ga_owners_index_t *x, const ga_site_class_t *c, const ga_stack_t *st, uint32_t *out)
{
    uintptr_t key = ga_addrmap_hash_key(hash_str(ga_addrmap_hash_combine(0, (uint64_t)c->kind), c->key));
    site_probe_t probe = {x, c};
    const ref_t *r = ga_addrmap_find_match(&x->site_map, key, site_match, &probe);
    if (r != NULL) {
        *out = r->idx;
        return 0;
    }
    ga_owner_site_t *ns = ga_grow(x->sites, &x->cap_sites, x->n_sites, sizeof(*ns), 16);
    if (ns == NULL)
        return -1;
    x->sites = ns;
    ga_owner_site_t site = {.kind = c->kind};
    if ((site.key = strdup(c->key)) == NULL || copy_stack(st, &site) != 0 ||
        ga_addrmap_reserve(&x->site_map, 1) != GALLOC_OK) {
        free(site.key);
        free(site.stack);
        return -1;
    }
    ref_t *e = ga_addrmap_insert(&x->site_map, key);
    e->idx = (uint32_t)x->n_sites;
    x->sites[x->n_sites] = site;
    *out = (uint32_t)x->n_sites++;
    return 0;
}

/* The index of stream s (added if new). 0 or -1. */
static int intern_stream(ga_owners_index_t *x, uint64_t s, uint32_t *out)
{
    for (size_t i = x->n_streams; i-- > 0;)
        if (x->streams[i] == s) {
            *out = (uint32_t)i;
            return 0;
        }
    uint64_t *nv = ga_grow(x->streams, &x->cap_streams, x->n_streams, sizeof(*nv), 8);
    if (nv == NULL)
        return -1;
    x->streams = nv;
    x->streams[x->n_streams] = s;
    *out = (uint32_t)x->n_streams++;
    return 0;
}

/* The index of pool p, pools[0] being the default pools (0, 0). 0 or -1. */
static int intern_pool(ga_owners_index_t *x, const int64_t p[2], uint32_t *out)
{
    if (x->n_pools == 0) {
        int64_t(*np)[2] = ga_grow(x->pools, &x->cap_pools, 0, sizeof(*np), 4);
        if (np == NULL)
            return -1;
        x->pools = np;
        x->pools[0][0] = x->pools[0][1] = 0;
        x->n_pools = 1;
    }
    for (size_t i = 0; i < x->n_pools; i++)
        if (x->pools[i][0] == p[0] && x->pools[i][1] == p[1]) {
            *out = (uint32_t)i;
            return 0;
        }
    int64_t(*np)[2] = ga_grow(x->pools, &x->cap_pools, x->n_pools, sizeof(*np), 4);
    if (np == NULL)
        return -1;
    x->pools = np;
    x->pools[x->n_pools][0] = p[0];
    x->pools[x->n_pools][1] = p[1];
    *out = (uint32_t)x->n_pools++;
    return 0;
}

typedef struct class_probe {
    const ga_owners_index_t *x;
    const ga_owner_class_t *c;
} class_probe_t;

static bool class_match(const void *entry, const void *ctx)
{
    const ref_t *r = entry;
    const class_probe_t *p = ctx;
    const ga_owner_class_t *a = &p->x->classes[r->idx], *b = p->c;
    return a->site == b->site && a->phase == b->phase && a->stream == b->stream && a->pool == b->pool;
}

/* The overflow class (made on first need), id GA_OWNER_OVERFLOW. */
static int overflow_class(ga_owners_index_t *x, uint16_t *cls)
{
    if (!x->overflow) {
        ga_site_class_t c;
        ga_site_special(GA_SITE_OVERFLOW, &c);
        uint32_t site;
        ga_owner_class_t *nc = ga_grow(x->classes, &x->cap_classes, x->n_classes, sizeof(*nc), 64);
        if (nc == NULL)
            return -1;
        x->classes = nc;
        if (intern_site(x, &c, NULL, &site) != 0)
            return -1;
        x->classes[x->n_classes++] = (ga_owner_class_t){.site = site};
        x->overflow = true;
    }
    *cls = GA_OWNER_OVERFLOW;
    return 0;
}

/* The class (site, phase, stream, pool). 0 or -1. */
static int intern_class(ga_owners_index_t *x, uint32_t site, ga_phase_t phase, uint64_t stream, const int64_t pool[2],
                        uint16_t *cls)
{
    ga_owner_class_t c = {.site = site, .phase = (uint8_t)phase};
    if (intern_stream(x, stream, &c.stream) != 0 || intern_pool(x, pool, &c.pool) != 0)
        return -1;
    uint64_t h = ga_addrmap_hash_combine(ga_addrmap_hash_combine(0, c.site), c.phase);
    h = ga_addrmap_hash_combine(ga_addrmap_hash_combine(h, c.stream), c.pool);
    uintptr_t key = ga_addrmap_hash_key(h);
    class_probe_t probe = {x, &c};
    const ref_t *r = ga_addrmap_find_match(&x->class_map, key, class_match, &probe);
    if (r != NULL) {
        *cls = (uint16_t)r->idx;
        return 0;
    }
    if (x->n_classes - (x->overflow ? 1 : 0) >= GA_OWNERS_MAX_CLASSES)
        return overflow_class(x, cls);
    ga_owner_class_t *nc = ga_grow(x->classes, &x->cap_classes, x->n_classes, sizeof(*nc), 64);
    if (nc == NULL || ga_addrmap_reserve(&x->class_map, 1) != GALLOC_OK) {
        if (nc != NULL)
            x->classes = nc;
        return -1;
    }
    x->classes = nc;
    /* The overflow class keeps id GA_OWNER_OVERFLOW: made only once the ids below are all taken. */
    uint32_t id = (uint32_t)x->n_classes;
    x->classes[x->n_classes++] = c;
    ref_t *e = ga_addrmap_insert(&x->class_map, key);
    e->idx = id;
    *cls = (uint16_t)id;
    return 0;
}

typedef struct stack_probe {
    const ga_owners_index_t *x;
    const uintptr_t *keys;
    size_t n;
    uint32_t kind;
} stack_probe_t;

static bool stack_match(const void *entry, const void *ctx)
{
    const ref_t *r = entry;
    const stack_probe_t *p = ctx;
    const ga_owner_stackrec_t *s = &p->x->stackrecs[r->idx];
    return s->n == p->n && s->kind == p->kind && memcmp(p->x->keys + s->first, p->keys, p->n * sizeof(*p->keys)) == 0;
}

/* st's frame identities into x->scratch; false when a frame has none. */
static bool stack_keys(ga_owners_index_t *x, const ga_stack_t *st, bool *nomem)
{
    *nomem = false;
    if (st->key == NULL || st->n == 0)
        return false;
    if (st->n > x->cap_scratch) {
        uintptr_t *ns = realloc(x->scratch, st->n * sizeof(*ns));
        if (ns == NULL) {
            *nomem = true;
            return false;
        }
        x->scratch = ns;
        x->cap_scratch = st->n;
    }
    for (size_t i = 0; i < st->n; i++)
        if ((x->scratch[i] = st->key(st->data, i)) == 0)
            return false;
    return true;
}

/* The site and phase of st: a stack met before is not classified again. */
static int site_of(ga_owners_index_t *x, const ga_stack_t *st, uint32_t *site, ga_phase_t *phase)
{
    bool nomem;
    bool keyed = stack_keys(x, st, &nomem);
    if (nomem)
        return -1;
    uintptr_t key = 0;
    if (keyed) {
        uint64_t h = ga_addrmap_hash_combine(ga_addrmap_hash_combine(0, (uint64_t)st->kind), st->n);
        for (size_t i = 0; i < st->n; i++)
            h = ga_addrmap_hash_combine(h, x->scratch[i]);
        key = ga_addrmap_hash_key(h);
        stack_probe_t probe = {x, x->scratch, st->n, (uint32_t)st->kind};
        const ref_t *r = ga_addrmap_find_match(&x->stack_map, key, stack_match, &probe);
        if (r != NULL) {
            *site = x->stackrecs[r->idx].site;
            *phase = (ga_phase_t)x->stackrecs[r->idx].phase;
            return 0;
        }
    }
    ga_site_class_t c;
    ga_site_classify(st, &c);
    if (intern_site(x, &c, st, site) != 0)
        return -1;
    *phase = c.phase;
    if (!keyed)
        return 0;
    /* Remember the stack: room first, so a failure leaves the tables as they were. */
    ga_owner_stackrec_t *nr = ga_grow(x->stackrecs, &x->cap_stackrecs, x->n_stackrecs, sizeof(*nr), 64);
    if (nr == NULL)
        return -1;
    x->stackrecs = nr;
    while (x->n_keys + st->n > x->cap_keys) {
        uintptr_t *nk = ga_grow(x->keys, &x->cap_keys, x->cap_keys, sizeof(*nk), 1024);
        if (nk == NULL)
            return -1;
        x->keys = nk;
    }
    if (ga_addrmap_reserve(&x->stack_map, 1) != GALLOC_OK)
        return -1;
    memcpy(x->keys + x->n_keys, x->scratch, st->n * sizeof(*x->keys));
    x->stackrecs[x->n_stackrecs] = (ga_owner_stackrec_t){
        .first = x->n_keys, .n = st->n, .kind = (uint32_t)st->kind, .site = *site, .phase = (uint8_t)*phase};
    x->n_keys += st->n;
    ref_t *e = ga_addrmap_insert(&x->stack_map, key);
    e->idx = (uint32_t)x->n_stackrecs++;
    return 0;
}

static int index_stack(ga_owners_index_t *x, const ga_stack_t *st, ga_site_kind_t none_kind, uint64_t stream,
                       const int64_t pool[2], uint16_t *cls)
{
    uint32_t site;
    ga_phase_t phase = GA_PHASE_OTHER;
    if (st == NULL || st->kind == GA_STACK_NONE || st->n == 0) {
        ga_site_class_t c;
        ga_site_special(none_kind, &c);
        if (intern_site(x, &c, NULL, &site) != 0)
            return -1;
    } else {
        x->kinds |= 1u << st->kind;
        if (site_of(x, st, &site, &phase) != 0)
            return -1;
    }
    if (intern_class(x, site, phase, stream, pool, cls) != 0)
        return -1;
    x->indexed++;
    return 0;
}

int ga_owners_index_event(ga_owners_index_t *x, const ga_event_t *e, uint16_t *cls)
{
    static const int64_t default_pool[2] = {0, 0};
    ga_site_kind_t none = (e->flags & GA_EVF_PROLOGUE) ? GA_SITE_BEFORE : GA_SITE_NONE;
    return index_stack(x, &e->stack, none, e->stream, default_pool, cls);
}

int ga_owners_index_block(ga_owners_index_t *x, const ga_stack_t *st, uint64_t stream, const int64_t pool[2],
                          uint16_t *cls)
{
    return index_stack(x, st, GA_SITE_BEFORE, stream, pool, cls);
}

const char *ga_owners_keyed_by(const ga_owners_index_t *x, char *buf, size_t len)
{
    static const char *const names[] = {
        [GA_STACK_FRAMES] = "recorded stacks", [GA_STACK_RANGES] = "profiler ranges",
        [GA_STACK_ANNOTATION] = "annotations", [GA_STACK_ALLOCATOR] = "allocators",
        [GA_STACK_THREAD] = "threads",
    };
    size_t n = 0;
    buf[0] = '\0';
    for (unsigned k = GA_STACK_FRAMES; k <= GA_STACK_THREAD; k++)
        if ((x->kinds >> k) & 1u)
            if (n < len)
                n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? " and " : "", names[k]);
    if (n == 0)
        snprintf(buf, len, "nothing: the record carries no stacks");
    return buf;
}
