/*
 * strtab.h: interned strings (file names, function names, annotation names).
 *
 * A string is stored once and named by a 32-bit id; id 0 is the empty string.
 * Looking up a string already present allocates nothing, so frames supplied by
 * a framework on every event cost no malloc once their strings have been seen.
 * Text lives in fixed chunks that never move, so a pointer returned by
 * ga_trace_strtab_get stays valid until ga_trace_strtab_free. Strings are
 * cut at GA_TRACE_STRTAB_MAX_LEN when captured (ga_trace_strtab_intern), kept
 * whole when a snapshot writer interns a trace source's frames
 * (ga_trace_strtab_intern_all).
 *
 * Locking: none inside; the owner serializes calls (the pool's lock).
 */
#ifndef GA_TRACE_STRTAB_H
#define GA_TRACE_STRTAB_H

#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc_status.h>
#include "util/addrmap.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest string kept; longer ones are cut at this many bytes (on a UTF-8
 * character boundary), which bounds a chunk's waste and a frame's size. */
#define GA_TRACE_STRTAB_MAX_LEN 4095u

typedef struct ga_trace_strtab_str {
    const char *text; /* NUL-terminated, in a chunk */
    uint32_t len;     /* bytes, without the NUL */
} ga_trace_strtab_str_t;

typedef struct ga_trace_strtab {
    ga_trace_strtab_str_t *strs; /* by id; strs[0] is "" */
    uint32_t count;              /* ids in use, including 0 */
    uint32_t cap;                /* slots of strs */
    ga_addrmap_t index;          /* ids 1.. by the hash of their bytes (util/addrmap.h, an index by hash) */
    char **chunks;               /* text storage */
    size_t nchunks;              /* chunks in use */
    size_t chunks_cap;           /* slots of chunks */
    size_t chunk_used;           /* bytes used in the last chunk */
} ga_trace_strtab_t;

/* ga_trace_strtab_init: empty table; allocates nothing. */
void ga_trace_strtab_init(ga_trace_strtab_t *t);

/* ga_trace_strtab_free: release everything; the table is empty again. */
void ga_trace_strtab_free(ga_trace_strtab_t *t);

/* ga_trace_strtab_intern: the id of s[0..len) (cut at GA_TRACE_STRTAB_MAX_LEN),
 * adding it if new. NULL s is "". Returns GALLOC_OK or GALLOC_E_NOMEM (table
 * unchanged, *id untouched). */
galloc_status_t ga_trace_strtab_intern(ga_trace_strtab_t *t, const char *s, size_t len, uint32_t *id);

/* ga_trace_strtab_intern_all: as ga_trace_strtab_intern, but every byte is
 * kept, whatever the length (a string longer than a chunk gets a chunk of its
 * own): for a trace source's frames, which a snapshot writes whole. A string
 * interned both ways keeps two ids only when the cut changed it. Returns
 * GALLOC_OK, GALLOC_E_NOMEM (table unchanged, *id untouched; also for a
 * string of 4 GiB or more). */
galloc_status_t ga_trace_strtab_intern_all(ga_trace_strtab_t *t, const char *s, size_t len, uint32_t *id);

/* ga_trace_strtab_get: the string of id (and its length if len is non-NULL);
 * "" for an unknown id. */
const char *ga_trace_strtab_get(const ga_trace_strtab_t *t, uint32_t id, size_t *len);

#ifdef __cplusplus
}
#endif
#endif /* GA_TRACE_STRTAB_H */
