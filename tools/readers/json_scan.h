/*
 * json_scan.h: a pull tokenizer for the JSON trace formats (Umpire replay
 * logs, Kineto Chrome traces). Private to tools/ (read_umpire.c,
 * read_kineto.c).
 *
 * Why not a tree: a profiler trace can be gigabytes of JSON of which only the
 * "[memory]" events matter, so the readers walk the document token by token
 * and keep what they need; memory is this struct (one short string buffer and
 * a bit stack of open containers), whatever the input size.
 *
 * The scanner checks the grammar as it goes (commas, colons, matching
 * brackets, one top-level value) and hands out values and object keys only;
 * punctuation is consumed inside. Strings longer than GA_JSON_STR_MAX are read
 * to their end but kept truncated (flagged): keys and names the readers look
 * for are short, and the names they keep (profiler ranges with a file path,
 * allocators) fit in 1 KiB. Input comes from one buffer or from a refill
 * callback, so a token may span chunks.
 *
 * Not thread-safe: one scanner per reader.
 */
#ifndef GA_TOOLS_READERS_JSON_SCAN_H
#define GA_TOOLS_READERS_JSON_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GA_JSON_STR_MAX 1023 /* bytes of a string or number kept (a profiler range's name, a path) */
#define GA_JSON_MAX_DEPTH 64 /* deeper nesting is refused: no trace needs it */

typedef enum ga_json_tok {
    GA_JSON_ERR = -1, /* malformed or unreadable; j->msg says why, j->at where */
    GA_JSON_EOF = 0,  /* the top-level value has ended and only blanks follow */
    GA_JSON_OBJ,      /* '{' */
    GA_JSON_OBJ_END,  /* '}' */
    GA_JSON_ARR,      /* '[' */
    GA_JSON_ARR_END,  /* ']' */
    GA_JSON_KEY,      /* an object key (text in s); its value comes next */
    GA_JSON_STR,      /* a string value (text in s, escapes decoded) */
    GA_JSON_NUM,      /* a number (its text in s, grammar checked) */
    GA_JSON_LIT       /* true, false or null (text in s) */
} ga_json_tok_t;

/* refill: the next chunk of input in *p, *n; returns 1, 0 at end of input,
 * -1 on a read error (the scanner then reports "read error"). */
typedef int (*ga_json_refill_fn)(void *ctx, const char **p, size_t *n);

typedef struct ga_json {
    const char *p, *end;         /* unread bytes of the current chunk */
    ga_json_refill_fn refill;    /* NULL: the first buffer is all there is */
    void *ctx;                   /* refill's argument */
    bool eof;                    /* refill said end of input */
    uint64_t base;               /* input offset of the current chunk's first byte */
    const char *chunk;           /* the current chunk's first byte */
    int state;                   /* what the grammar expects next (json_scan.c) */
    unsigned depth;              /* open containers */
    uint64_t is_obj;             /* bit d: container at depth d+1 is an object */
    char s[GA_JSON_STR_MAX + 1]; /* text of the last KEY/STR/NUM/LIT, NUL-terminated */
    size_t n;                    /* its length (<= GA_JSON_STR_MAX) */
    bool trunc;                  /* the string was longer than GA_JSON_STR_MAX */
    uint64_t at;                 /* input offset of the last token, or of the error */
    char msg[96];                /* the error, when GA_JSON_ERR was returned */
} ga_json_t;

/* ga_json_init: scan buf[0..n) and then, if refill is not NULL, its chunks. */
void ga_json_init(ga_json_t *j, const char *buf, size_t n, ga_json_refill_fn refill, void *ctx);

/* ga_json_next: the next token. After GA_JSON_ERR, keeps returning it. */
ga_json_tok_t ga_json_next(ga_json_t *j);

/* ga_json_member: inside an object, the next member: 1 with its key read
 * (text in s; the value comes next), 0 at the object's end ('}' read), -1 on
 * a scan error (msg says why). The loop every object walk starts with. */
int ga_json_member(ga_json_t *j);

/* ga_json_skip: having just received tok, skip the rest of that value (a
 * whole object or array; nothing for a scalar). 0, or -1 on a scan error. */
int ga_json_skip(ga_json_t *j, ga_json_tok_t tok);

/* ga_json_int: the last NUM as a signed 64-bit integer (no fraction or
 * exponent, in range). ga_json_double: as a double. */
bool ga_json_int(const ga_json_t *j, int64_t *out);
bool ga_json_double(const ga_json_t *j, double *out);

/* ga_json_milli: the last NUM times 1000 as a signed 64-bit integer, exact
 * to the third decimal (digits past it dropped: Chrome traces write
 * microseconds with three decimals, so this is their nanoseconds). false if
 * out of range. */
bool ga_json_milli(const ga_json_t *j, int64_t *out);

/* ga_json_is: the last token's text equals lit (and was not truncated). */
bool ga_json_is(const ga_json_t *j, const char *lit);

#endif /* GA_TOOLS_READERS_JSON_SCAN_H */
