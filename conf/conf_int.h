/*
 * conf_int.h: private to conf/ (listed in srcs of //conf, so clang's
 * layering_check keeps every other layer out). The tokenizer and the value
 * readers the conf/ files share.
 *
 * Locking: none; every function is pure over its arguments (no globals, no
 * locale, no heap), so the parser can be fuzzed and called from any thread.
 * Files: conf.c (grammar, keys, a backend's options), lists.c (the values that may be bracketed
 * lists; parser.h, the parser's state, is shared by the two), load.c (defaults, parse, load), value.c
 * (tokens, numbers, sizes, decimals), format.c (the normalized string), options.c (backend options
 * kept in a ga_conf_t: adding, showing, pointing a backend's message at its source), reserve.c (the
 * expandable-segment reserve values: reading, writing, resolving to bytes).
 */
#ifndef GA_CONF_INT_H
#define GA_CONF_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf/conf.h"

#define GA_CONF_MIB ((uint64_t)1 << 20)
#define GA_CONF_GIB ((uint64_t)1 << 30)
#define GA_CONF_LARGE_BUFFER (20 * GA_CONF_MIB)   /* kLargeBuffer: default large_segment_size */
#define GA_CONF_MIN_LARGE_ALLOC_MB 10             /* kMinLargeAlloc / kMB: large_segment_size_mb must exceed it */
#define GA_CONF_MAX_MB (UINT64_MAX / GA_CONF_MIB) /* PyTorch clamps *_mb values here before multiplying */
#define GA_CONF_MAX_DIVISIONS ((uint32_t)1 << 31) /* largest power of two a uint32_t division count holds */
#define GA_CONF_MAX_REGISTER_THREADS 128          /* CUDAAllocatorConfig::pinned_max_register_threads() */
#define GA_CONF_TOK_CAP GA_CONF_PATH_MAX          /* a word keeps at most GA_CONF_TOK_CAP - 1 bytes */

/* Token kinds: the separators are their own character. */
typedef enum ga_tok_kind {
    GA_TOK_END = 0,
    GA_TOK_WORD = 'w',
    GA_TOK_COMMA = ',',
    GA_TOK_COLON = ':',
    GA_TOK_OPEN = '[',
    GA_TOK_CLOSE = ']'
} ga_tok_kind_t;

typedef struct ga_tok {
    ga_tok_kind_t kind;
    size_t off;                 /* byte offset of the token's first character; END: the string's length */
    size_t end;                 /* byte offset just past its last non-space character */
    size_t len;                 /* bytes in the word after dropping whitespace; may be >= GA_CONF_TOK_CAP */
    bool spaced;                /* whitespace was dropped between two characters of the word */
    char text[GA_CONF_TOK_CAP]; /* the word or separator, NUL-terminated, cut at GA_CONF_TOK_CAP - 1 bytes */
} ga_tok_t;

/* The tokenizer's position in a NUL-terminated string; copy it to peek. */
typedef struct ga_lex {
    const char *s; /* the string ("" for NULL) */
    size_t pos;    /* next byte to read; never past the NUL */
} ga_lex_t;

/* Outcome of reading a number. */
typedef enum ga_num {
    GA_NUM_OK = 0,
    GA_NUM_SYNTAX, /* not of the expected form */
    GA_NUM_RANGE,  /* of the form, but does not fit in 64 bits */
    GA_NUM_INEXACT /* a size that is not a whole number of bytes ("1.5B") */
} ga_num_t;

/* Applies string s onto *c (a copy is filled; *c changes only on success). reset: ga_conf_parse's
 * per-parse PyTorch resets; false for one ga_conf_load layer, which changes only the keys it names.
 * source: the string's name for backend options' origins (static), NULL for ga_conf_parse's. */
galloc_status_t ga_conf_parse_onto(const char *s, ga_conf_t *c, bool reset, const char *source, char *err,
                                   size_t errlen);

/* options.c: adds src[off, end) to c->backend_options as one item whose key is the word key (an item of
 * that key already there is dropped first), written in the string named source. False, with c partly
 * changed (the parser works on a copy), when the item would not fit. */
bool ga_conf_options_keep(ga_conf_t *c, const char *src, size_t off, size_t end, const ga_tok_t *key,
                          const char *source);

/* C isspace without the locale: the whitespace the grammar drops. */
bool ga_conf_is_space(char ch);
void ga_conf_lex_init(ga_lex_t *lx, const char *s);
/* The next token. Whitespace (C isspace: " \t\n\v\f\r") is dropped
 * everywhere, also inside a word, as newest PyTorch main's ConfigTokenizer does. */
void ga_conf_lex_next(ga_lex_t *lx, ga_tok_t *t);

/* t is a word equal to w (case-sensitive, as PyTorch compares keys and True/False). */
bool ga_conf_word_is(const ga_tok_t *t, const char *w);
/* Decimal digits only: no sign, no space, no suffix (galloc's own keys). */
ga_num_t ga_conf_read_whole(const ga_tok_t *t, uint64_t *v);
/* A whole number as std::stoull reads it, for PyTorch's keys: [+-] digits, the rest ignored ("512MB" is
 * 512), a '-' wraps modulo 2^64 ("-1" is 2^64 - 1). GA_NUM_SYNTAX without a digit (or for "0x...", which
 * galloc does not read), GA_NUM_RANGE past 64 bits. *cut (if not NULL) tells whether bytes were ignored. */
ga_num_t ga_conf_read_stoull(const ga_tok_t *t, uint64_t *v, bool *cut);
/* Bytes, or a number (optionally with up to 18 decimals) and a unit B, KB, MB, GB, TB (powers of 1000) or
 * KiB, MiB, GiB, TiB (powers of 1024), units case-insensitive: "80GiB", "1.5GB", "1073741824". */
ga_num_t ga_conf_read_size(const ga_tok_t *t, uint64_t *bytes);
/* [+-] digits [. digits] [e [+-] digits], correctly rounded, whatever the process locale. */
ga_num_t ga_conf_read_decimal(const char *text, double *v);
/* The longest prefix of that form, as std::stod reads PyTorch's decimals ("0.8x" is 0.8); hexadecimal,
 * "inf" and "nan" are GA_NUM_SYNTAX (PyTorch's range checks reject the last two anyway). */
ga_num_t ga_conf_read_stod(const char *text, double *v);
/* reserve.c: an expandable_segments_reserve value (PyTorch's parseReserveSpec): a decimal > 0, finite,
 * with an optional 'G'/'g' suffix for GiB (else a fraction of device memory). GA_NUM_SYNTAX for any other
 * form or a value <= 0, GA_NUM_RANGE past a double; *out untouched then. */
ga_num_t ga_conf_read_reserve(const ga_tok_t *t, ga_conf_reserve_t *out);
/* The canonical spelling of r: the shortest decimal that reads back, then "G" for GiB. */
void ga_conf_write_reserve(const ga_conf_reserve_t *r, char *buf, size_t len);
/* Shortest decimal that ga_conf_read_decimal reads back as exactly v; buf holds >= 48 bytes. */
void ga_conf_write_decimal(double v, char *buf, size_t len);
/* The token of string src as a message shows it: as written (inner whitespace kept), bytes outside
 * printable ASCII, '"' and '\' escaped as \xNN, cut after 48 shown bytes with "..." appended; the end of
 * the string is named. */
void ga_conf_show(const char *src, const ga_tok_t *t, char *buf, size_t len);

#endif /* GA_CONF_INT_H */
