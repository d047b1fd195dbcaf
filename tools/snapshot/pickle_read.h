/*
 * pickle_read.h: a reader for Python pickles of plain data (protocols 2-5),
 * written for untrusted input: PyTorch memory snapshots from other machines.
 *
 * What it accepts: the opcodes Python's pickler writes for dict, list, tuple,
 * str, bytes, int, float, bool and None, including the memo (MEMOIZE, BINPUT,
 * BINGET and their long forms), framing, LONG1/LONG4 and BINUNICODE8. Anything
 * that would run code or name a class (GLOBAL, STACK_GLOBAL, REDUCE, BUILD,
 * NEWOBJ, INST, OBJ, EXT*, PERSID, out-of-band buffers) and the text opcodes of
 * protocols 0-1 are rejected with a message naming the opcode and byte offset.
 *
 * Why it is safe on hostile bytes: the decoder is a loop over opcodes, never
 * recursive, so nesting depth cannot exhaust the C stack; every length is
 * checked against the bytes left before it is used; every host allocation is
 * charged against a budget (ga_pickle_limits_t), so a small file cannot make
 * the reader allocate without bound; memo indices are bounded too. On error
 * nothing is leaked and *out is NULL.
 *
 * Ownership: strings and bytes point into the caller's buffer (zero copy), so
 * the buffer must outlive the document. Containers may be shared (the memo
 * lets one list appear twice) and even cyclic (a list appended to itself), so
 * a consumer walking the tree must bound its own depth; galloc's snapshot
 * reader only descends along fixed paths.
 */
#ifndef GA_TOOLS_SNAPSHOT_PICKLE_READ_H
#define GA_TOOLS_SNAPSHOT_PICKLE_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ga_pk_type {
    GA_PK_NONE,
    GA_PK_BOOL,
    GA_PK_INT,    /* fits int64_t */
    GA_PK_BIGINT, /* an integer outside int64_t: value not kept */
    GA_PK_FLOAT,
    GA_PK_STR,   /* UTF-8 as written (not validated) */
    GA_PK_BYTES, /* bytes objects */
    GA_PK_LIST,
    GA_PK_TUPLE,
    GA_PK_DICT /* items holds keys and values interleaved: k0, v0, k1, v1, ... */
} ga_pk_type_t;

typedef struct ga_pk_value ga_pk_value_t;
struct ga_pk_value {
    ga_pk_type_t type;
    union {
        bool b;    /* GA_PK_BOOL */
        int64_t i; /* GA_PK_INT */
        double f;  /* GA_PK_FLOAT */
        struct {
            const char *p; /* into the caller's buffer, not NUL-terminated */
            size_t n;      /* length in bytes */
        } s;               /* GA_PK_STR, GA_PK_BYTES */
        struct {
            ga_pk_value_t **items; /* n entries (2 * pairs for a dict) */
            size_t n;              /* entries used */
            size_t cap;            /* entries allocated */
        } seq;                     /* GA_PK_LIST, GA_PK_TUPLE, GA_PK_DICT */
    } u;
};

/* Resource bounds; zero fields take the defaults below. */
typedef struct ga_pickle_limits {
    size_t max_bytes; /* host memory the decoded tree may use (default: 64 MiB + 16 x input) */
    size_t max_marks; /* open MARKs at once, i.e. nesting of tuple/list/dict literals (default 100,000) */
    size_t max_memo;  /* highest memo index + 1 (default: input length + 1) */
} ga_pickle_limits_t;

typedef struct ga_pickle ga_pickle_t;

/*
 * ga_pickle_parse: decode buf[0..len) up to its STOP opcode (trailing bytes
 * are ignored, as pickle.load does). limits may be NULL for the defaults.
 * Returns 0 and sets *out (free with ga_pickle_free), or -1 with *out NULL and
 * err (errlen bytes) holding "byte N: <problem>" where N is the offset of the
 * offending opcode.
 */
int ga_pickle_parse(const uint8_t *buf, size_t len, const ga_pickle_limits_t *limits, ga_pickle_t **out, char *err,
                    size_t errlen);

/* ga_pickle_root: the value STOP returned. Never NULL for a parsed document. */
const ga_pk_value_t *ga_pickle_root(const ga_pickle_t *pk);

/* ga_pickle_protocol: the protocol number from the PROTO opcode (2-5). */
int ga_pickle_protocol(const ga_pickle_t *pk);

/* ga_pickle_free: release the document (NULL is a no-op). */
void ga_pickle_free(ga_pickle_t *pk);

/* ga_pk_dict_get: the value of the str key `key` in dict d (the last one if a
 * key repeats, as Python keeps), or NULL if d is not a dict or has no such key. */
const ga_pk_value_t *ga_pk_dict_get(const ga_pk_value_t *d, const char *key);

/* ga_pk_str_eq: whether v is a str equal to the NUL-terminated s. */
bool ga_pk_str_eq(const ga_pk_value_t *v, const char *s);

/* ga_pk_type_name: "None", "bool", "int", ... for messages. */
const char *ga_pk_type_name(ga_pk_type_t t);

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_SNAPSHOT_PICKLE_READ_H */
