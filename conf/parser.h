/*
 * parser.h: private to conf/ (in //conf's srcs). The parser's state, shared
 * by conf.c (the grammar, the keys, the end-of-string checks) and lists.c
 * (the values that may be bracketed lists).
 */
#ifndef GA_CONF_PARSER_H
#define GA_CONF_PARSER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf/conf_int.h"

/* A *_mb value whose lower bound (large_segment_size_mb) is known only at the end. */
typedef struct ga_conf_pending {
    bool given;  /* named in this string */
    bool cut;    /* bytes after the number were ignored (std::stoull) */
    size_t off;  /* offset of its value */
    size_t end;  /* one past its last byte */
    uint64_t mb; /* the value as read */
} ga_conf_pending_t;

typedef struct ga_conf_parser {
    ga_lex_t lx;
    ga_tok_t tok;              /* the current token */
    const ga_conf_key_t *keys; /* the table the string's keys are looked up in */
    size_t n_keys;             /* its rows */
    void *out;                 /* the struct the generic kinds (options.h) write into */
    ga_conf_t *c;              /* the copy being filled; NULL when reading a backend's options */
    char *err;                 /* may be NULL */
    size_t errlen;
    bool reset;         /* ga_conf_parse: PyTorch's per-parse resets; false for a ga_conf_load layer */
    const char *source; /* the string's name, for the origins of backend options (NULL: ga_conf_parse's) */
    bool roundup_seen;  /* a second roundup key in one string adds to the first, as in PyTorch */
    ga_conf_pending_t split, nonsplit, large;
} ga_conf_parser_t;

/* The next token into p->tok. */
static inline void ga_conf_next(ga_conf_parser_t *p)
{
    ga_conf_lex_next(&p->lx, &p->tok);
}

static inline bool ga_conf_is_pow2(uint64_t v)
{
    return v != 0 && (v & (v - 1)) == 0;
}

/* The error about the current token: "<key>: expected <allowed>, got
 * "<token>" (offset N)" into p->err. Returns GALLOC_E_CONFIG. */
galloc_status_t ga_conf_fail(ga_conf_parser_t *p, const char *key, const char *allowed);

/* lists.c. roundup_power2_divisions' value, p->tok on its first token;
 * leaves p->tok on its last (']' for a list). */
galloc_status_t ga_conf_apply_roundup(ga_conf_parser_t *p, const char *key);
/* One reserve value (a fraction or a size with a G suffix) into *out. */
galloc_status_t ga_conf_apply_reserve(ga_conf_parser_t *p, const char *key, ga_conf_reserve_t *out);
/* expandable_segments_reserve_by_class's list, p->tok on '['; leaves p->tok
 * on ']'. Replaces p->c's classes (PyTorch publishes a freshly parsed map). */
galloc_status_t ga_conf_apply_reserve_classes(ga_conf_parser_t *p, const char *key);

#endif /* GA_CONF_PARSER_H */
