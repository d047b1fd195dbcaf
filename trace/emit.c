/*
 * emit.c: what both output formats share: the output buffer and its error
 * handling, container nesting, and UTF-8 cleaning (see emit.h).
 */
#include "trace/emit.h"

#include <string.h>

void ga_trace_emit_fail(ga_trace_emitter_t *e, galloc_status_t status)
{
    if (e->status == GALLOC_OK)
        e->status = status;
}

void ga_trace_emit_flush(ga_trace_emitter_t *e)
{
    if (e->used != 0 && e->status == GALLOC_OK) {
        if (fwrite(e->buf, 1, e->used, e->out) != e->used)
            ga_trace_emit_fail(e, GALLOC_E_IO);
        else
            e->written += e->used;
    }
    e->used = 0;
}

void ga_trace_emit_bytes(ga_trace_emitter_t *e, const void *p, size_t n)
{
    const unsigned char *c = p;
    while (n > 0) {
        if (e->used == GA_TRACE_EMIT_BUF)
            ga_trace_emit_flush(e);
        size_t k = GA_TRACE_EMIT_BUF - e->used;
        if (k > n)
            k = n;
        memcpy(e->buf + e->used, c, k);
        e->used += k;
        c += k;
        n -= k;
    }
}

void ga_trace_emit_start(ga_trace_emitter_t *e, const ga_trace_emitter_ops_t *ops, FILE *out)
{
    e->ops = ops;
    e->out = out;
    e->status = out != NULL ? GALLOC_OK : GALLOC_E_INVAL;
    e->depth = 0;
    e->after_key = false;
    e->memo_next = 0;
    memset(e->key_memo, 0, sizeof(e->key_memo));
    e->used = 0;
    e->written = 0;
    ops->begin(e);
}

galloc_status_t ga_trace_emit_finish(ga_trace_emitter_t *e)
{
    if (e->depth != 0 || e->after_key)
        ga_trace_emit_fail(e, GALLOC_E_INVAL);
    if (e->status == GALLOC_OK)
        e->ops->end(e);
    ga_trace_emit_flush(e);
    /* stdio buffers too: a full disk (/dev/full) shows up only here. */
    if (e->out != NULL && (fflush(e->out) != 0 || ferror(e->out)))
        ga_trace_emit_fail(e, GALLOC_E_IO);
    return e->status;
}

bool ga_trace_emit_push(ga_trace_emitter_t *e, bool is_dict)
{
    if (e->depth == GA_TRACE_EMIT_MAX_DEPTH) {
        ga_trace_emit_fail(e, GALLOC_E_INVAL);
        return false;
    }
    ga_trace_emit_level_t *l = &e->level[e->depth++];
    l->is_dict = is_dict;
    l->mark_open = 0;
    l->items = 0;
    return true;
}

bool ga_trace_emit_pop(ga_trace_emitter_t *e, bool is_dict)
{
    if (e->depth == 0 || e->level[e->depth - 1].is_dict != is_dict || e->after_key) {
        ga_trace_emit_fail(e, GALLOC_E_INVAL);
        return false;
    }
    e->depth--;
    return true;
}

/* Length of the valid UTF-8 sequence at p (n bytes available), 0 if invalid.
 * Strict (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
    unsigned char c = p[0];
    if (c < 0x80)
        return 1;
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else {
        return 0;
    }
    if (n < len || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    return len;
}

static const char replacement[3] = {(char)0xEF, (char)0xBF, (char)0xBD}; /* U+FFFD */

size_t ga_trace_utf8_clean_len(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t out = 0;
    for (size_t i = 0; i < len;) {
        size_t k = utf8_seq(p + i, len - i);
        if (k == 0) {
            out += sizeof(replacement);
            i++;
        } else {
            out += k;
            i += k;
        }
    }
    return out;
}

void ga_trace_utf8_clean(ga_trace_emitter_t *e, const char *s, size_t len,
                         void (*put)(ga_trace_emitter_t *e, const char *piece, size_t n))
{
    const unsigned char *p = (const unsigned char *)s;
    size_t run = 0; /* start of the pending valid run */
    size_t i = 0;
    while (i < len) {
        size_t k = utf8_seq(p + i, len - i);
        if (k != 0) {
            i += k;
            continue;
        }
        if (i > run)
            put(e, s + run, i - run);
        put(e, replacement, sizeof(replacement));
        i++;
        run = i;
    }
    if (len > run)
        put(e, s + run, len - run);
}

ga_trace_emit_level_t *ga_trace_emit_value_start(ga_trace_emitter_t *e)
{
    if (e->after_key) {
        e->after_key = false;
        return NULL;
    }
    if (e->depth == 0)
        return NULL;
    ga_trace_emit_level_t *l = &e->level[e->depth - 1];
    if (l->is_dict) {
        ga_trace_emit_fail(e, GALLOC_E_INVAL);
        return NULL;
    }
    return l;
}
