/*
 * json_scan.c: see json_scan.h. A byte-at-a-time state machine over RFC 8259
 * JSON: each byte is looked at once, nothing is allocated, and every read
 * goes through peek()/take(), which stop at the chunk's end, so no input can
 * make it read out of bounds. The grammar state says what may come next;
 * an error names the byte offset where the input went wrong.
 */
#include "tools/readers/json_scan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    S_VALUE,          /* a value (top level, after ':' or an array's ',') */
    S_VALUE_OR_CLOSE, /* just after '[' */
    S_KEY_OR_CLOSE,   /* just after '{' */
    S_KEY,            /* after an object's ',' */
    S_AFTER,          /* a value ended: ',' or the container's close */
    S_DONE,           /* the top-level value ended */
    S_FAILED          /* an error was returned: repeat it */
};

void ga_json_init(ga_json_t *j, const char *buf, size_t n, ga_json_refill_fn refill, void *ctx)
{
    memset(j, 0, sizeof(*j));
    j->p = j->chunk = buf;
    j->end = buf + n;
    j->refill = refill;
    j->ctx = ctx;
    j->state = S_VALUE;
}

static uint64_t offset(const ga_json_t *j)
{
    return j->base + (uint64_t)(j->p - j->chunk);
}

static ga_json_tok_t fail(ga_json_t *j, const char *msg)
{
    if (j->state != S_FAILED) {
        j->at = offset(j);
        snprintf(j->msg, sizeof(j->msg), "%s", msg);
        j->state = S_FAILED;
    }
    return GA_JSON_ERR;
}

/* The next byte without consuming it, or -1 at the end of input (-2 after a
 * read error, reported by the caller through fail()). */
static int peek(ga_json_t *j)
{
    while (j->p == j->end) {
        if (j->refill == NULL || j->eof)
            return -1;
        const char *p;
        size_t n;
        j->base = offset(j);
        int rc = j->refill(j->ctx, &p, &n);
        if (rc < 0) {
            j->eof = true;
            return -2;
        }
        if (rc == 0) {
            j->eof = true;
            return -1;
        }
        j->p = j->chunk = p;
        j->end = p + n;
    }
    return (unsigned char)*j->p;
}

static void take(ga_json_t *j)
{
    j->p++;
}

static int skip_blanks(ga_json_t *j)
{
    int c;
    while ((c = peek(j)) == ' ' || c == '\t' || c == '\n' || c == '\r')
        take(j);
    return c;
}

static void keep(ga_json_t *j, char c)
{
    if (j->n < GA_JSON_STR_MAX)
        j->s[j->n++] = c;
    else
        j->trunc = true;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A string, the opening quote already taken. Non-ASCII \u escapes are kept
 * as '?': the readers compare ASCII names only. */
static ga_json_tok_t string(ga_json_t *j, ga_json_tok_t tok)
{
    for (;;) {
        int c = peek(j);
        if (c < 0)
            return fail(j, c == -2 ? "read error" : "unterminated string (truncated file?)");
        if (c < 0x20)
            return fail(j, "control character in a string");
        take(j);
        if (c == '"')
            break;
        if (c != '\\') {
            keep(j, (char)c);
            continue;
        }
        c = peek(j);
        if (c < 0)
            return fail(j, "unterminated string (truncated file?)");
        take(j);
        static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
        const char *k = c != 0 ? strchr(from, c) : NULL;
        if (k != NULL) {
            keep(j, to[k - from]);
        } else if (c == 'u') {
            unsigned v = 0;
            for (int i = 0; i < 4; i++) {
                int h = hexval(peek(j));
                if (h < 0)
                    return fail(j, "bad \\u escape in a string");
                take(j);
                v = v * 16 + (unsigned)h;
            }
            keep(j, v > 0 && v < 0x80 ? (char)v : '?');
        } else {
            return fail(j, "bad escape in a string");
        }
    }
    j->s[j->n] = '\0';
    return tok;
}

/* -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)? */
static bool number_ok(const char *s)
{
    if (*s == '-')
        s++;
    if (*s == '0')
        s++;
    else if (*s >= '1' && *s <= '9')
        while (*s >= '0' && *s <= '9')
            s++;
    else
        return false;
    if (*s == '.') {
        s++;
        if (!(*s >= '0' && *s <= '9'))
            return false;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            s++;
        if (!(*s >= '0' && *s <= '9'))
            return false;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    return *s == '\0';
}

static ga_json_tok_t scalar(ga_json_t *j, int c)
{
    if (c == '"') {
        take(j);
        return string(j, GA_JSON_STR);
    }
    bool num = c == '-' || (c >= '0' && c <= '9');
    if (!num && c != 't' && c != 'f' && c != 'n')
        return fail(j, c < 0 ? "unexpected end (truncated file?)" : "expected a value");
    /* A number or literal runs to the next delimiter; 64 bytes is more than
     * any int64 or double needs. */
    while ((c = peek(j)) >= 0 && c != ',' && c != '}' && c != ']' && c != ' ' && c != '\t' && c != '\n' && c != '\r' &&
           c != ':') {
        if (j->n >= 64)
            return fail(j, num ? "number too long" : "expected a value");
        j->s[j->n++] = (char)c;
        take(j);
    }
    j->s[j->n] = '\0';
    if (num)
        return number_ok(j->s) ? GA_JSON_NUM : fail(j, "bad number");
    if (strcmp(j->s, "true") == 0 || strcmp(j->s, "false") == 0 || strcmp(j->s, "null") == 0)
        return GA_JSON_LIT;
    return fail(j, "expected a value");
}

static bool top_is_obj(const ga_json_t *j)
{
    return (j->is_obj >> (j->depth - 1)) & 1u;
}

static ga_json_tok_t open_container(ga_json_t *j, bool obj)
{
    if (j->depth == GA_JSON_MAX_DEPTH)
        return fail(j, "nested too deep");
    take(j);
    j->is_obj = obj ? j->is_obj | (1ull << j->depth) : j->is_obj & ~(1ull << j->depth);
    j->depth++;
    j->state = obj ? S_KEY_OR_CLOSE : S_VALUE_OR_CLOSE;
    return obj ? GA_JSON_OBJ : GA_JSON_ARR;
}

static ga_json_tok_t close_container(ga_json_t *j, bool obj)
{
    take(j);
    j->depth--;
    j->state = j->depth > 0 ? S_AFTER : S_DONE;
    return obj ? GA_JSON_OBJ_END : GA_JSON_ARR_END;
}

ga_json_tok_t ga_json_next(ga_json_t *j)
{
    if (j->state == S_FAILED)
        return GA_JSON_ERR;
    j->n = 0;
    j->trunc = false;
    j->s[0] = '\0';
    for (;;) {
        int c = skip_blanks(j);
        j->at = offset(j);
        if (c == -2)
            return fail(j, "read error");
        switch (j->state) {
        case S_DONE: return c < 0 ? GA_JSON_EOF : fail(j, "text after the end of the JSON value");
        case S_AFTER:
            if (c == ',') {
                take(j);
                j->state = top_is_obj(j) ? S_KEY : S_VALUE;
                continue;
            }
            if (c == (top_is_obj(j) ? '}' : ']'))
                return close_container(j, top_is_obj(j));
            return fail(j, c < 0           ? "unexpected end (truncated file?)"
                           : top_is_obj(j) ? "expected ',' or '}'"
                                           : "expected ',' or ']'");
        case S_KEY_OR_CLOSE:
        case S_KEY: {
            if (c == '}' && j->state == S_KEY_OR_CLOSE)
                return close_container(j, true);
            if (c != '"')
                return fail(j, c < 0 ? "unexpected end (truncated file?)" : "expected a key string");
            take(j);
            uint64_t at = j->at;
            if (string(j, GA_JSON_KEY) == GA_JSON_ERR)
                return GA_JSON_ERR;
            c = skip_blanks(j);
            if (c != ':')
                return fail(j, c == -2 ? "read error"
                               : c < 0 ? "unexpected end (truncated file?)"
                                       : "expected ':' after a key");
            take(j);
            j->state = S_VALUE;
            j->at = at;
            return GA_JSON_KEY;
        }
        case S_VALUE_OR_CLOSE:
            if (c == ']')
                return close_container(j, false);
            /* fall through */
        default: { /* S_VALUE */
            if (c == '{' || c == '[')
                return open_container(j, c == '{');
            ga_json_tok_t t = scalar(j, c);
            if (t != GA_JSON_ERR)
                j->state = j->depth > 0 ? S_AFTER : S_DONE;
            return t;
        }
        }
    }
}

int ga_json_member(ga_json_t *j)
{
    ga_json_tok_t t = ga_json_next(j);
    return t == GA_JSON_KEY ? 1 : t == GA_JSON_OBJ_END ? 0 : -1;
}

int ga_json_skip(ga_json_t *j, ga_json_tok_t tok)
{
    if (tok != GA_JSON_OBJ && tok != GA_JSON_ARR)
        return tok == GA_JSON_ERR ? -1 : 0;
    unsigned target = j->depth - 1;
    for (;;) {
        ga_json_tok_t t = ga_json_next(j);
        if (t == GA_JSON_ERR)
            return -1;
        if ((t == GA_JSON_OBJ_END || t == GA_JSON_ARR_END) && j->depth == target)
            return 0;
    }
}

bool ga_json_int(const ga_json_t *j, int64_t *out)
{
    if (j->n == 0 || strpbrk(j->s, ".eE") != NULL)
        return false;
    errno = 0;
    char *e;
    long long v = strtoll(j->s, &e, 10);
    if (errno != 0 || *e != '\0')
        return false;
    *out = (int64_t)v;
    return true;
}

bool ga_json_double(const ga_json_t *j, double *out)
{
    if (j->n == 0)
        return false;
    char *e;
    *out = strtod(j->s, &e);
    return *e == '\0';
}

bool ga_json_milli(const ga_json_t *j, int64_t *out)
{
    const char *p = j->s;
    if (j->n == 0 || j->trunc)
        return false;
    if (strpbrk(p, "eE") != NULL) { /* 1.5e6: no writer of traces uses it; as a double, exact enough */
        double d;
        if (!ga_json_double(j, &d) || !(d > -9.2e15 && d < 9.2e15))
            return false;
        *out = (int64_t)(d * 1000.0);
        return true;
    }
    bool neg = *p == '-';
    p += neg;
    uint64_t v = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > ((uint64_t)INT64_MAX / 1000 - 10) / 10) /* v * 1000 + 999 stays below INT64_MAX */
            return false;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    v *= 1000;
    if (*p == '.')
        for (uint64_t scale = 100; *++p >= '0' && *p <= '9'; scale /= 10)
            v += (uint64_t)(*p - '0') * scale; /* scale reaches 0: later digits add nothing */
    if (*p != '\0')
        return false;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return true;
}

bool ga_json_is(const ga_json_t *j, const char *lit)
{
    return !j->trunc && strcmp(j->s, lit) == 0;
}
