/*
 * emit.h: a streaming writer of Python values (dict, list, str, int, float,
 * bool, None, 2-tuple) with two formats behind one ops struct: pickle
 * (ga_trace_pickle, what torch.cuda.memory._dump_snapshot writes) and JSON
 * (ga_trace_json; MemoryViz.js and json.load read the same structure).
 *
 * Values go straight to the FILE * through a buffer, so a huge trace is never
 * held twice in memory. Errors are sticky: the first failure (write error,
 * bad nesting) is kept in e->status, later calls do nothing, and
 * ga_trace_emit_finish reports it, so writers need not check every call.
 *
 * Strings are written as UTF-8; bytes that are not valid UTF-8 are replaced by
 * U+FFFD, because Python's unpickler and json reject them.
 *
 * Locking: an emitter is used by one thread at a time.
 */
#ifndef GA_TRACE_EMIT_H
#define GA_TRACE_EMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <galloc/galloc_status.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GA_TRACE_EMIT_MAX_DEPTH 16 /* containers open at once */
#define GA_TRACE_EMIT_BUF 16384    /* bytes buffered before a write to the FILE * */
#define GA_TRACE_EMIT_KEY_MEMO 64  /* distinct constant strings a pickle memoizes */

typedef struct ga_trace_emitter ga_trace_emitter_t;

/* The format's operations. Use the ga_trace_emit_* wrappers, never these. */
typedef struct ga_trace_emitter_ops {
    const char *name;                     /* "pickle" or "json" */
    void (*begin)(ga_trace_emitter_t *e); /* stream header */
    void (*end)(ga_trace_emitter_t *e);   /* stream trailer */
    void (*begin_dict)(ga_trace_emitter_t *e);
    void (*end_dict)(ga_trace_emitter_t *e);
    void (*begin_list)(ga_trace_emitter_t *e);
    void (*end_list)(ga_trace_emitter_t *e);
    void (*key)(ga_trace_emitter_t *e, const char *k);  /* a dict key; k is a constant (its address is its identity) */
    void (*atom)(ga_trace_emitter_t *e, const char *s); /* a constant string value that repeats ("alloc", "inactive") */
    void (*str)(ga_trace_emitter_t *e, const char *s, size_t len);
    void (*i64)(ga_trace_emitter_t *e, int64_t v);
    void (*u64)(ga_trace_emitter_t *e, uint64_t v);
    void (*f64)(ga_trace_emitter_t *e, double v);
    void (*boolean)(ga_trace_emitter_t *e, bool v);
    void (*none)(ga_trace_emitter_t *e);
    void (*tuple2_i64)(ga_trace_emitter_t *e, int64_t a, int64_t b);
    /* Optional (NULL in JSON): name the value just completed so that it can be
     * written again as a reference (pickle BINPUT / BINGET), as PyTorch's
     * pickler does for frames lists shared between entries. */
    uint32_t (*memo_put)(ga_trace_emitter_t *e);
    void (*memo_get)(ga_trace_emitter_t *e, uint32_t memo);
} ga_trace_emitter_ops_t;

extern const ga_trace_emitter_ops_t ga_trace_pickle;
extern const ga_trace_emitter_ops_t ga_trace_json;

/* Per open container. */
typedef struct ga_trace_emit_level {
    uint8_t is_dict;   /* dict (1) or list (0) */
    uint8_t mark_open; /* pickle: a MARK is pending its APPENDS / SETITEMS */
    uint32_t items;    /* values (list) or pairs (dict) so far in this batch (pickle) or in total (JSON) */
} ga_trace_emit_level_t;

struct ga_trace_emitter {
    const ga_trace_emitter_ops_t *ops; /* the format */
    FILE *out;                         /* where the bytes go; not owned */
    galloc_status_t status;            /* first error; GALLOC_OK while all is well */
    int depth;                         /* open containers */
    bool after_key;                    /* a key was written; the next value is its value */
    ga_trace_emit_level_t level[GA_TRACE_EMIT_MAX_DEPTH];
    uint32_t memo_next; /* pickle: next memo index */
    struct {
        const char *s; /* constant string written once and memoized */
        uint32_t memo;
    } key_memo[GA_TRACE_EMIT_KEY_MEMO];
    size_t used;      /* bytes in buf */
    uint64_t written; /* bytes handed to the FILE * */
    unsigned char buf[GA_TRACE_EMIT_BUF];
};

/* ga_trace_emit_start: set up e (caller-owned storage, about 17 KiB) to write
 * ops's format to out and write the stream header. */
void ga_trace_emit_start(ga_trace_emitter_t *e, const ga_trace_emitter_ops_t *ops, FILE *out);

/* ga_trace_emit_finish: write the trailer, flush to out and fflush(out).
 * Returns GALLOC_OK, GALLOC_E_IO (a write or flush failed) or GALLOC_E_INVAL
 * (containers left open or closed twice). Does not close out. */
galloc_status_t ga_trace_emit_finish(ga_trace_emitter_t *e);

/* ga_trace_emit_fail: record a failure (kept only if it is the first). */
void ga_trace_emit_fail(ga_trace_emitter_t *e, galloc_status_t status);

/* ga_trace_emit_value_start: every value of either format starts here: as a
 * dict value right after its key, as the top-level object, or as an item of
 * the innermost list. Returns that list's level, which the format then
 * separates the item in (a ',' in JSON, a batch slot in pickle), or NULL when
 * there is nothing to separate. A value in a dict without its key is a caller
 * bug: recorded as GALLOC_E_INVAL, NULL returned. */
ga_trace_emit_level_t *ga_trace_emit_value_start(ga_trace_emitter_t *e);

static inline bool ga_trace_emit_ok(const ga_trace_emitter_t *e)
{
    return e->status == GALLOC_OK;
}

/* One-line wrappers, one a line. */
/* clang-format off */
static inline void ga_trace_emit_begin_dict(ga_trace_emitter_t *e) { e->ops->begin_dict(e); }
static inline void ga_trace_emit_end_dict(ga_trace_emitter_t *e) { e->ops->end_dict(e); }
static inline void ga_trace_emit_begin_list(ga_trace_emitter_t *e) { e->ops->begin_list(e); }
static inline void ga_trace_emit_end_list(ga_trace_emitter_t *e) { e->ops->end_list(e); }
static inline void ga_trace_emit_key(ga_trace_emitter_t *e, const char *k) { e->ops->key(e, k); }
static inline void ga_trace_emit_atom(ga_trace_emitter_t *e, const char *s) { e->ops->atom(e, s); }
static inline void ga_trace_emit_str(ga_trace_emitter_t *e, const char *s, size_t len) { e->ops->str(e, s, len); }
static inline void ga_trace_emit_i64(ga_trace_emitter_t *e, int64_t v) { e->ops->i64(e, v); }
static inline void ga_trace_emit_u64(ga_trace_emitter_t *e, uint64_t v) { e->ops->u64(e, v); }
static inline void ga_trace_emit_f64(ga_trace_emitter_t *e, double v) { e->ops->f64(e, v); }
static inline void ga_trace_emit_bool(ga_trace_emitter_t *e, bool v) { e->ops->boolean(e, v); }
static inline void ga_trace_emit_none(ga_trace_emitter_t *e) { e->ops->none(e); }
static inline void ga_trace_emit_tuple2(ga_trace_emitter_t *e, int64_t a, int64_t b) { e->ops->tuple2_i64(e, a, b); }
/* clang-format on */

/* Whether this format can write references to earlier values. */
static inline bool ga_trace_emit_can_memo(const ga_trace_emitter_t *e)
{
    return e->ops->memo_put != NULL && e->ops->memo_get != NULL;
}

/* Memoize the value just completed; returns its memo (only if can_memo). */
static inline uint32_t ga_trace_emit_memo_put(ga_trace_emitter_t *e)
{
    return e->ops->memo_put(e);
}

/* Write a reference to a memoized value (only if can_memo). */
static inline void ga_trace_emit_memo_get(ga_trace_emitter_t *e, uint32_t memo)
{
    e->ops->memo_get(e, memo);
}

/* ---- shared by the format implementations (emit.c) ---- */

/* Append n raw bytes to the output. */
void ga_trace_emit_bytes(ga_trace_emitter_t *e, const void *p, size_t n);

/* Hand the buffered bytes to the FILE * (on error, drop them). */
void ga_trace_emit_flush(ga_trace_emitter_t *e);

static inline void ga_trace_emit_byte(ga_trace_emitter_t *e, unsigned char c)
{
    if (e->used == GA_TRACE_EMIT_BUF)
        ga_trace_emit_flush(e);
    e->buf[e->used++] = c;
}

/* Push / pop a container level; false (and status E_INVAL) on bad nesting. */
bool ga_trace_emit_push(ga_trace_emitter_t *e, bool is_dict);
bool ga_trace_emit_pop(ga_trace_emitter_t *e, bool is_dict);

/* Length of s[0..len) once invalid UTF-8 is replaced by U+FFFD (3 bytes each). */
size_t ga_trace_utf8_clean_len(const char *s, size_t len);

/* Call put(e, piece, n) for the pieces of s[0..len) with invalid UTF-8
 * replaced by U+FFFD; pieces never split a character. */
void ga_trace_utf8_clean(ga_trace_emitter_t *e, const char *s, size_t len,
                         void (*put)(ga_trace_emitter_t *e, const char *piece, size_t n));

#ifdef __cplusplus
}
#endif
#endif /* GA_TRACE_EMIT_H */
