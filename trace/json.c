/*
 * json.c: the JSON format of the emitter (see emit.h), RFC 8259.
 *
 * Strings escape '"', '\\' and the control characters below 0x20 (as \b, \f,
 * \n, \r, \t or \u00XX) and pass everything else through as UTF-8, as
 * Python's json.dumps(ensure_ascii=False) does. Tuples become 2-element
 * arrays (json has no tuple; Python's json turns tuples into lists too).
 * Floats keep a '.' or an exponent so they read back as floats, with a '.'
 * whatever the C locale's decimal point; NaN and infinities, which JSON cannot
 * express and JSON.parse rejects, are written as null.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/emit.h"

static void put_text(ga_trace_emitter_t *e, const char *s)
{
    ga_trace_emit_bytes(e, s, strlen(s));
}

/* Separate this item from the previous one in its container. */
static void item(ga_trace_emitter_t *e, ga_trace_emit_level_t *l)
{
    if (l->items++ > 0)
        ga_trace_emit_byte(e, ',');
}

static void value_begin(ga_trace_emitter_t *e)
{
    ga_trace_emit_level_t *l = ga_trace_emit_value_start(e);
    if (l != NULL)
        item(e, l);
}

/* Write one clean UTF-8 piece, escaped. */
static void put_escaped(ga_trace_emitter_t *e, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        ga_trace_emit_bytes(e, s + run, i - run);
        run = i + 1;
        char esc[6] = {'\\', 0, 0, 0, 0, 0};
        size_t len = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default:
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            len = 6;
            break;
        }
        ga_trace_emit_bytes(e, esc, len);
    }
    ga_trace_emit_bytes(e, s + run, n - run);
}

static void put_string(ga_trace_emitter_t *e, const char *s, size_t len)
{
    ga_trace_emit_byte(e, '"');
    ga_trace_utf8_clean(e, s, len, put_escaped);
    ga_trace_emit_byte(e, '"');
}

static void j_begin(ga_trace_emitter_t *e)
{
    (void)e;
}

static void j_end(ga_trace_emitter_t *e)
{
    ga_trace_emit_byte(e, '\n');
}

static void j_begin_dict(ga_trace_emitter_t *e)
{
    value_begin(e);
    ga_trace_emit_byte(e, '{');
    ga_trace_emit_push(e, true);
}

static void j_end_dict(ga_trace_emitter_t *e)
{
    if (ga_trace_emit_pop(e, true))
        ga_trace_emit_byte(e, '}');
}

static void j_begin_list(ga_trace_emitter_t *e)
{
    value_begin(e);
    ga_trace_emit_byte(e, '[');
    ga_trace_emit_push(e, false);
}

static void j_end_list(ga_trace_emitter_t *e)
{
    if (ga_trace_emit_pop(e, false))
        ga_trace_emit_byte(e, ']');
}

static void j_key(ga_trace_emitter_t *e, const char *k)
{
    if (e->depth == 0 || !e->level[e->depth - 1].is_dict || e->after_key) {
        ga_trace_emit_fail(e, GALLOC_E_INVAL);
        return;
    }
    item(e, &e->level[e->depth - 1]);
    put_string(e, k, strlen(k));
    ga_trace_emit_byte(e, ':');
    e->after_key = true;
}

static void j_str(ga_trace_emitter_t *e, const char *s, size_t len)
{
    value_begin(e);
    put_string(e, s, len);
}

static void j_atom(ga_trace_emitter_t *e, const char *s)
{
    j_str(e, s, strlen(s));
}

static void j_i64(ga_trace_emitter_t *e, int64_t v)
{
    char b[24];
    value_begin(e);
    snprintf(b, sizeof(b), "%" PRId64, v);
    put_text(e, b);
}

static void j_u64(ga_trace_emitter_t *e, uint64_t v)
{
    char b[24];
    value_begin(e);
    snprintf(b, sizeof(b), "%" PRIu64, v);
    put_text(e, b);
}

static void j_f64(ga_trace_emitter_t *e, double v)
{
    value_begin(e);
    if (!isfinite(v)) {
        put_text(e, "null");
        return;
    }
    /* The shortest of 15, 16, 17 digits that reads back exactly, so 0.8 is
     * "0.8" as in Python's repr (strtod uses the same locale as snprintf). */
    char b[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(b, sizeof(b), "%.*g", prec, v);
        if (strtod(b, NULL) == v)
            break;
    }
    bool has_point = false;
    for (char *p = b; *p != '\0'; p++) {
        if (*p == ',')
            *p = '.'; /* a locale with a decimal comma */
        if (*p == '.' || *p == 'e')
            has_point = true;
    }
    put_text(e, b);
    if (!has_point)
        put_text(e, ".0");
}

static void j_boolean(ga_trace_emitter_t *e, bool v)
{
    value_begin(e);
    put_text(e, v ? "true" : "false");
}

static void j_none(ga_trace_emitter_t *e)
{
    value_begin(e);
    put_text(e, "null");
}

static void j_tuple2_i64(ga_trace_emitter_t *e, int64_t a, int64_t b)
{
    char buf[56];
    value_begin(e);
    snprintf(buf, sizeof(buf), "[%" PRId64 ",%" PRId64 "]", a, b);
    put_text(e, buf);
}

const ga_trace_emitter_ops_t ga_trace_json = {
    .name = "json",
    .begin = j_begin,
    .end = j_end,
    .begin_dict = j_begin_dict,
    .end_dict = j_end_dict,
    .begin_list = j_begin_list,
    .end_list = j_end_list,
    .key = j_key,
    .atom = j_atom,
    .str = j_str,
    .i64 = j_i64,
    .u64 = j_u64,
    .f64 = j_f64,
    .boolean = j_boolean,
    .none = j_none,
    .tuple2_i64 = j_tuple2_i64,
    .memo_put = NULL,
    .memo_get = NULL,
};
