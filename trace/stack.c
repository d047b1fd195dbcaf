/*
 * stack.c: stack capture and the deduplicating stack store (see stack.h).
 *
 * Two indexes by hash in galloc's one hash map (util/addrmap.h): frames by
 * (pc) or (filename, name, line), stacks by the hash of their frame sequence.
 * The hot path (a stack seen before) hashes the raw frames and compares them
 * with the stored ones; only a new stack reaches insert_stack, which makes
 * every allocation it needs before publishing the stack.
 */
#include "trace/stack.h"

#include <stdlib.h>
#include <string.h>

#ifdef GA_TRACE_NO_LIBUNWIND
#include <execinfo.h>
#else
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif

/* One frame of a stack being looked up: what identifies it. */
typedef struct frame_key {
    uintptr_t pc;
    int64_t line;
    uint32_t filename;
    uint32_t name;
} frame_key_t;

/* An entry of either index: a frame's or a stack's id under its hash. */
typedef struct index_entry {
    uintptr_t key; /* ga_addrmap_hash_key(hash) */
    uint32_t id;   /* in frames or stacks */
} index_entry_t;

/* A stack being looked up: its frames, for the stack index's compare. */
typedef struct stack_key {
    const ga_trace_stacks_t *s;
    const frame_key_t *keys;
    uint32_t n;
} stack_key_t;

/* A frame being looked up, for the frame index's compare. */
typedef struct frame_lookup {
    const ga_trace_stacks_t *s;
    const frame_key_t *k;
} frame_lookup_t;

static uint64_t frame_hash(const frame_key_t *k)
{
    if (k->pc != 0)
        return ga_addrmap_hash_combine(1, k->pc);
    return ga_addrmap_hash_combine(ga_addrmap_hash_combine(ga_addrmap_hash_combine(2, k->filename), k->name),
                                   (uint64_t)k->line);
}

static bool frame_matches(const ga_trace_frame_t *f, const frame_key_t *k)
{
    if (k->pc != 0)
        return f->pc == k->pc;
    return f->pc == 0 && f->filename == k->filename && f->name == k->name && f->line == k->line;
}

__attribute__((noinline)) void ga_trace_stack_capture_raw(ga_trace_raw_stack_t *raw, bool native, unsigned skip,
                                                          ga_trace_frames_fn fn, void *ctx)
{
    raw->npcs = 0;
    raw->nuser = 0;
    if (native) {
        void *pcs[GA_TRACE_MAX_FRAMES + GA_TRACE_MAX_SKIP + 1];
        if (skip > GA_TRACE_MAX_SKIP)
            skip = GA_TRACE_MAX_SKIP;
#ifdef GA_TRACE_NO_LIBUNWIND
        int n = backtrace(pcs, (int)(sizeof(pcs) / sizeof(pcs[0])));
#else
        int n = unw_backtrace(pcs, (int)(sizeof(pcs) / sizeof(pcs[0])));
#endif
        /* pcs[0] is this function; the caller's frames start at 1. */
        for (int i = 1 + (int)skip; i < n && raw->npcs < GA_TRACE_MAX_FRAMES; i++)
            raw->pcs[raw->npcs++] = (uintptr_t)pcs[i];
    }
    if (fn == NULL || raw->npcs >= GA_TRACE_MAX_FRAMES)
        return;
    ga_trace_user_frame_t uf[GA_TRACE_MAX_FRAMES];
    size_t room = GA_TRACE_MAX_FRAMES - raw->npcs;
    size_t m = fn(ctx, uf, room);
    if (m > room)
        m = room;
    size_t used = 0;
    for (size_t i = 0; i < m; i++) {
        const char *file = uf[i].filename != NULL ? uf[i].filename : "";
        const char *name = uf[i].name != NULL ? uf[i].name : "";
        size_t fl = strnlen(file, GA_TRACE_RAW_TEXT);
        size_t nl = strnlen(name, GA_TRACE_RAW_TEXT);
        if (used + fl + nl > GA_TRACE_RAW_TEXT)
            break; /* out of text space: keep the innermost frames only */
        memcpy(raw->text + used, file, fl);
        memcpy(raw->text + used + fl, name, nl);
        raw->user[raw->nuser].file_off = (uint16_t)used;
        raw->user[raw->nuser].file_len = (uint16_t)fl;
        raw->user[raw->nuser].name_off = (uint16_t)(used + fl);
        raw->user[raw->nuser].name_len = (uint16_t)nl;
        raw->user[raw->nuser].line = uf[i].line;
        raw->nuser++;
        used += fl + nl;
    }
}

void ga_trace_stacks_init(ga_trace_stacks_t *s, ga_trace_strtab_t *strings)
{
    memset(s, 0, sizeof(*s));
    s->strings = strings;
    ga_addrmap_init(&s->frame_index, sizeof(index_entry_t));
    ga_addrmap_init(&s->stack_index, sizeof(index_entry_t));
}

void ga_trace_stacks_free(ga_trace_stacks_t *s)
{
    free(s->frames);
    ga_addrmap_destroy(&s->frame_index);
    free(s->ids);
    free(s->stacks);
    ga_addrmap_destroy(&s->stack_index);
    ga_trace_stacks_init(s, s->strings);
}

const uint32_t *ga_trace_stacks_get(const ga_trace_stacks_t *s, uint32_t id, uint32_t *n)
{
    if (id == 0 || id >= s->nstacks) {
        *n = 0;
        return NULL;
    }
    *n = s->stacks[id].nframes;
    return s->ids + s->stacks[id].first;
}

const ga_trace_frame_t *ga_trace_stacks_frame(const ga_trace_stacks_t *s, uint32_t frame_id)
{
    if (frame_id == 0 || frame_id >= s->nframes)
        return NULL;
    return &s->frames[frame_id];
}

static bool grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t ncap = *cap == 0 ? 64 : *cap;
    while (ncap < need)
        ncap *= 2;
    void *p = realloc(*arr, ncap * elem);
    if (p == NULL)
        return false;
    *arr = p;
    *cap = ncap;
    return true;
}

static bool same_frame(const void *entry, const void *ctx)
{
    const frame_lookup_t *l = ctx;
    return frame_matches(&l->s->frames[((const index_entry_t *)entry)->id], l->k);
}

static uint32_t find_frame(const ga_trace_stacks_t *s, const frame_key_t *k, uint64_t h)
{
    frame_lookup_t l = {s, k};
    const index_entry_t *e = ga_addrmap_find_match(&s->frame_index, ga_addrmap_hash_key(h), same_frame, &l);
    return e != NULL ? e->id : 0;
}

static uint32_t add_frame(ga_trace_stacks_t *s, const frame_key_t *k)
{
    uint64_t h = frame_hash(k);
    uint32_t id = find_frame(s, k, h);
    if (id != 0)
        return id;
    if (s->nframes == 0)
        s->nframes = 1; /* id 0 is reserved */
    size_t cap = s->frames_cap;
    if (s->nframes == UINT32_MAX || !grow((void **)&s->frames, &cap, (size_t)s->nframes + 1, sizeof(*s->frames)))
        return 0;
    s->frames_cap = (uint32_t)cap;
    if (ga_addrmap_reserve(&s->frame_index, 1) != GALLOC_OK)
        return 0;
    ga_trace_frame_t *f = &s->frames[s->nframes];
    memset(f, 0, sizeof(*f));
    f->pc = k->pc;
    f->line = k->line;
    f->filename = k->filename;
    f->name = k->name;
    id = s->nframes++;
    ((index_entry_t *)ga_addrmap_insert(&s->frame_index, ga_addrmap_hash_key(h)))->id = id;
    return id;
}

static bool same_stack(const void *entry, const void *ctx)
{
    const stack_key_t *k = ctx;
    const ga_trace_stack_t *st = &k->s->stacks[((const index_entry_t *)entry)->id];
    if (st->nframes != k->n)
        return false;
    uint32_t j = 0;
    while (j < k->n && frame_matches(&k->s->frames[k->s->ids[st->first + j]], &k->keys[j]))
        j++;
    return j == k->n;
}

static uint32_t find_stack(const ga_trace_stacks_t *s, const frame_key_t *keys, uint32_t n, uint64_t h)
{
    stack_key_t k = {s, keys, n};
    const index_entry_t *e = ga_addrmap_find_match(&s->stack_index, ga_addrmap_hash_key(h), same_stack, &k);
    return e != NULL ? e->id : 0;
}

/* Cold path: a stack not seen before. */
static uint32_t insert_stack(ga_trace_stacks_t *s, const frame_key_t *keys, uint32_t n, uint64_t h)
{
    if (s->nstacks == 0)
        s->nstacks = 1; /* id 0 is the empty stack */
    size_t ids_cap = s->ids_cap;
    size_t stacks_cap = s->stacks_cap;
    if (s->nstacks == UINT32_MAX || !grow((void **)&s->ids, &ids_cap, s->nids + n, sizeof(*s->ids)))
        return 0;
    s->ids_cap = ids_cap;
    if (!grow((void **)&s->stacks, &stacks_cap, (size_t)s->nstacks + 1, sizeof(*s->stacks)))
        return 0;
    s->stacks_cap = (uint32_t)stacks_cap;
    if (ga_addrmap_reserve(&s->stack_index, 1) != GALLOC_OK)
        return 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t fid = add_frame(s, &keys[i]);
        if (fid == 0)
            return 0; /* frames added so far stay: they are valid, shared entries */
        s->ids[s->nids + i] = fid;
    }
    ga_trace_stack_t *st = &s->stacks[s->nstacks];
    st->first = s->nids;
    st->nframes = n;
    s->nids += n;
    uint32_t id = s->nstacks++;
    ((index_entry_t *)ga_addrmap_insert(&s->stack_index, ga_addrmap_hash_key(h)))->id = id;
    return id;
}

uint32_t ga_trace_stacks_intern(ga_trace_stacks_t *s, const ga_trace_raw_stack_t *raw)
{
    frame_key_t keys[GA_TRACE_MAX_FRAMES];
    uint32_t n = 0;
    uint64_t h = 0x243F6A8885A308D3ull;
    for (uint32_t i = 0; i < raw->npcs && n < GA_TRACE_MAX_FRAMES; i++, n++) {
        keys[n].pc = raw->pcs[i];
        keys[n].line = 0;
        keys[n].filename = 0;
        keys[n].name = 0;
        h = ga_addrmap_hash_combine(h, keys[n].pc);
    }
    for (uint32_t i = 0; i < raw->nuser && n < GA_TRACE_MAX_FRAMES; i++, n++) {
        const char *t = raw->text;
        if (ga_trace_strtab_intern(s->strings, t + raw->user[i].file_off, raw->user[i].file_len, &keys[n].filename) !=
                GALLOC_OK ||
            ga_trace_strtab_intern(s->strings, t + raw->user[i].name_off, raw->user[i].name_len, &keys[n].name) !=
                GALLOC_OK) {
            s->failures++;
            return 0;
        }
        keys[n].pc = 0;
        keys[n].line = raw->user[i].line;
        h = ga_addrmap_hash_combine(ga_addrmap_hash_combine(ga_addrmap_hash_combine(h, keys[n].filename), keys[n].name),
                                    (uint64_t)keys[n].line);
    }
    if (n == 0)
        return 0;
    uint32_t id = find_stack(s, keys, n, h);
    if (id != 0)
        return id;
    id = insert_stack(s, keys, n, h);
    if (id == 0)
        s->failures++;
    return id;
}

galloc_status_t ga_trace_stacks_intern_frames(ga_trace_stacks_t *s, const galloc_frame_t *frames, size_t n,
                                              uint32_t *id)
{
    if (n == 0) {
        *id = 0;
        return GALLOC_OK;
    }
    if (n > UINT32_MAX || n > SIZE_MAX / sizeof(frame_key_t))
        return GALLOC_E_NOMEM;
    frame_key_t *keys = malloc(n * sizeof(*keys));
    if (keys == NULL)
        return GALLOC_E_NOMEM;
    uint64_t h = 0x243F6A8885A308D3ull; /* as ga_trace_stacks_intern: one stack, one hash */
    galloc_status_t st = GALLOC_OK;
    for (size_t i = 0; i < n && st == GALLOC_OK; i++) {
        const char *file = frames[i].filename, *name = frames[i].name;
        keys[i].pc = 0;
        keys[i].line = frames[i].line;
        st = ga_trace_strtab_intern_all(s->strings, file, file != NULL ? strlen(file) : 0, &keys[i].filename);
        if (st == GALLOC_OK)
            st = ga_trace_strtab_intern_all(s->strings, name, name != NULL ? strlen(name) : 0, &keys[i].name);
        h = ga_addrmap_hash_combine(ga_addrmap_hash_combine(ga_addrmap_hash_combine(h, keys[i].filename), keys[i].name),
                                    (uint64_t)keys[i].line);
    }
    uint32_t found = 0;
    if (st == GALLOC_OK) {
        found = find_stack(s, keys, (uint32_t)n, h);
        if (found == 0)
            found = insert_stack(s, keys, (uint32_t)n, h);
        if (found == 0)
            st = GALLOC_E_NOMEM;
    }
    free(keys);
    if (st == GALLOC_OK)
        *id = found;
    return st;
}
