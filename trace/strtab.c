/*
 * strtab.c: interned strings (see strtab.h). A hash of each string's bytes
 * keys its id in galloc's one hash map (util/addrmap.h, as an index by
 * hash); text goes into
 * 64 KiB chunks that never move (a longer string, which only
 * ga_trace_strtab_intern_all keeps, into a chunk of its own). Every
 * allocation a new string needs is made before the table is touched, so a
 * failure leaves it as it was.
 */
#include "trace/strtab.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_SIZE ((size_t)64 * 1024) /* > GA_TRACE_STRTAB_MAX_LEN + 1, so any cut string fits a fresh chunk */

/* An entry of the index: a string's id under the hash of its bytes. */
typedef struct index_entry {
    uintptr_t key; /* ga_addrmap_hash_key(hash of the bytes) */
    uint32_t id;   /* in strs */
} index_entry_t;

/* What a lookup compares an indexed string with. */
typedef struct lookup_key {
    const ga_trace_strtab_t *t;
    const char *s;
    uint32_t len;
} lookup_key_t;

/* Eight bytes a step, the last one to eight read as two overlapping halves
 * (or first, middle and last byte): every byte counts, and for a given length
 * a string differing in one step's bytes hashes differently. The map mixes
 * the result again; equal hashes are told apart by comparing the bytes. */
static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 0x243F6A8885A308D3ull ^ (uint64_t)len;
    uint64_t w;
    for (; len > 8; s += 8, len -= 8) {
        memcpy(&w, s, sizeof(w));
        h = ga_addrmap_hash_combine(h, w);
    }
    if (len >= 4) {
        uint32_t first, last;
        memcpy(&first, s, sizeof(first));
        memcpy(&last, s + len - 4, sizeof(last));
        w = (uint64_t)first << 32 | last;
    } else if (len > 0) {
        w = (uint64_t)(unsigned char)s[0] << 16 | (uint64_t)(unsigned char)s[len / 2] << 8 | (unsigned char)s[len - 1];
    } else {
        w = 0;
    }
    return ga_addrmap_hash_combine(h, w);
}

void ga_trace_strtab_init(ga_trace_strtab_t *t)
{
    memset(t, 0, sizeof(*t));
    ga_addrmap_init(&t->index, sizeof(index_entry_t));
}

void ga_trace_strtab_free(ga_trace_strtab_t *t)
{
    for (size_t i = 0; i < t->nchunks; i++)
        free(t->chunks[i]);
    free(t->chunks);
    free(t->strs);
    ga_addrmap_destroy(&t->index);
    ga_trace_strtab_init(t);
}

const char *ga_trace_strtab_get(const ga_trace_strtab_t *t, uint32_t id, size_t *len)
{
    if (id == 0 || id >= t->count) {
        if (len != NULL)
            *len = 0;
        return "";
    }
    if (len != NULL)
        *len = t->strs[id].len;
    return t->strs[id].text;
}

static bool same_string(const void *entry, const void *ctx)
{
    const lookup_key_t *k = ctx;
    const ga_trace_strtab_str_t *e = &k->t->strs[((const index_entry_t *)entry)->id];
    return e->len == k->len && memcmp(e->text, k->s, k->len) == 0;
}

static uint32_t lookup(const ga_trace_strtab_t *t, const char *s, uint32_t len, uint64_t h)
{
    lookup_key_t k = {t, s, len};
    const index_entry_t *e = ga_addrmap_find_match(&t->index, ga_addrmap_hash_key(h), same_string, &k);
    return e != NULL ? e->id : 0;
}

/* Room in strs and the index for one more id. */
static bool reserve_id(ga_trace_strtab_t *t)
{
    if (t->count == UINT32_MAX - 1)
        return false;
    if (t->count + 1 > t->cap) {
        uint32_t cap = t->cap == 0 ? 64 : t->cap * 2;
        ga_trace_strtab_str_t *strs = realloc(t->strs, (size_t)cap * sizeof(*strs));
        if (strs == NULL)
            return false;
        if (t->cap == 0) {
            strs[0].text = "";
            strs[0].len = 0;
            t->count = 1;
        }
        t->strs = strs;
        t->cap = cap;
    }
    return ga_addrmap_reserve(&t->index, 1) == GALLOC_OK;
}

static bool reserve_chunk_slot(ga_trace_strtab_t *t)
{
    if (t->nchunks < t->chunks_cap)
        return true;
    size_t cap = t->chunks_cap == 0 ? 8 : t->chunks_cap * 2;
    char **chunks = realloc(t->chunks, cap * sizeof(*chunks));
    if (chunks == NULL)
        return false;
    t->chunks = chunks;
    t->chunks_cap = cap;
    return true;
}

/* Make room for one more string of len bytes and return where its text goes
 * (NULL: out of memory; nothing visible changed). A string longer than a
 * chunk gets a chunk of its own, slipped in before the chunk being filled so
 * that one stays the last. */
static char *reserve(ga_trace_strtab_t *t, size_t len)
{
    if (!reserve_id(t) || !reserve_chunk_slot(t))
        return NULL;
    if (len + 1 > CHUNK_SIZE) {
        char *own = malloc(len + 1);
        if (own == NULL)
            return NULL;
        if (t->nchunks == 0) {
            t->chunks[t->nchunks++] = own;
            t->chunk_used = CHUNK_SIZE; /* full: the next short string opens a chunk */
        } else {
            t->chunks[t->nchunks] = t->chunks[t->nchunks - 1];
            t->chunks[t->nchunks - 1] = own;
            t->nchunks++;
        }
        return own;
    }
    if (t->nchunks == 0 || t->chunk_used + len + 1 > CHUNK_SIZE) {
        char *chunk = malloc(CHUNK_SIZE);
        if (chunk == NULL)
            return NULL;
        t->chunks[t->nchunks++] = chunk;
        t->chunk_used = 0;
    }
    char *text = t->chunks[t->nchunks - 1] + t->chunk_used;
    t->chunk_used += len + 1;
    return text;
}

/* The id of s[0..len), len > 0, added if new. */
static galloc_status_t intern(ga_trace_strtab_t *t, const char *s, size_t len, uint32_t *id)
{
    if (len >= UINT32_MAX)
        return GALLOC_E_NOMEM; /* a length strs cannot hold */
    uint64_t h = hash_bytes(s, len);
    uint32_t found = lookup(t, s, (uint32_t)len, h);
    if (found != 0) {
        *id = found;
        return GALLOC_OK;
    }
    char *text = reserve(t, len);
    if (text == NULL)
        return GALLOC_E_NOMEM;
    memcpy(text, s, len);
    text[len] = '\0';
    uint32_t nid = t->count++;
    t->strs[nid].text = text;
    t->strs[nid].len = (uint32_t)len;
    ((index_entry_t *)ga_addrmap_insert(&t->index, ga_addrmap_hash_key(h)))->id = nid;
    *id = nid;
    return GALLOC_OK;
}

galloc_status_t ga_trace_strtab_intern(ga_trace_strtab_t *t, const char *s, size_t len, uint32_t *id)
{
    if (s == NULL)
        len = 0;
    if (len > GA_TRACE_STRTAB_MAX_LEN) {
        len = GA_TRACE_STRTAB_MAX_LEN;
        while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80)
            len--; /* do not split a UTF-8 sequence */
    }
    if (len == 0) {
        *id = 0;
        return GALLOC_OK;
    }
    return intern(t, s, len, id);
}

galloc_status_t ga_trace_strtab_intern_all(ga_trace_strtab_t *t, const char *s, size_t len, uint32_t *id)
{
    if (s == NULL || len == 0) {
        *id = 0;
        return GALLOC_OK;
    }
    return intern(t, s, len, id);
}
