/*
 * read_text.c: galloc's own text trace (docs/trace-format.md has the full
 * grammar). One event per line:
 *
 *   galloc-trace 1 device_memory 80GiB
 *   alloc 1 4096 [stream]      free 1 [stream]      record_stream 1 7
 *   stream_sync 7   empty_cache   set_fraction 0.5   oom 20GiB [stream]
 *   annotate step 8847         # a comment
 *   tag_begin train   tag_end train   sleep train,infer offload train   wake *
 *
 * The first line that is neither blank nor a comment is the header; a token
 * starting with '#' ends the line except in annotate, whose text is the rest
 * of the line verbatim. Errors say "FILE:LINE: problem".
 *
 * Stacks: what a text trace says about the code behind a request is the
 * annotation in force ("annotate forward block 3": galloc gen writes one per
 * phase and block). An alloc's or oom's stack is one frame, GA_STACK_ANNOTATION,
 * whose name is the text of the last annotate before it (GA_STACK_NONE before
 * any). The text is copied out of the line buffer (at most a line, 64 KiB,
 * allocated at the first annotate); its key is a count of the distinct texts
 * in a row, so an annotation repeated verbatim keeps its key.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <galloc/galloc_sleep.h>

#include "tools/readers/reader_int.h"
#include "tools/readers/units.h"

#define MAX_TOKENS 8

/* A line read ahead while looking for header directives: it is the first
 * event and next() parses it first. Points into the input buffer, which stays
 * valid until the next ga_input_line. */
typedef struct text {
    char *pending; /* NULL when none */
    size_t pending_len;
    char *note;         /* the annotation in force (GA_INPUT_MAX_LINE bytes, from the first annotate) */
    size_t note_len;    /* its length */
    uintptr_t note_key; /* 0 before the first annotate, then + 1 each time the text changes */
} text_t;

typedef struct verb {
    const char *name;
    ga_event_kind_t kind;
    unsigned min, max; /* arguments after the verb */
    const char *usage;
} verb_t;

static const verb_t verbs[] = {
    {"alloc", GA_EV_ALLOC, 2, 3, "alloc <id> <size> [stream]"},
    {"free", GA_EV_FREE, 1, 2, "free <id> [stream]"},
    {"record_stream", GA_EV_RECORD_STREAM, 2, 2, "record_stream <id> <stream>"},
    {"stream_sync", GA_EV_STREAM_SYNC, 1, 1, "stream_sync <stream>"},
    {"empty_cache", GA_EV_EMPTY_CACHE, 0, 0, "empty_cache"},
    {"set_fraction", GA_EV_SET_FRACTION, 1, 1, "set_fraction <fraction in [0, 1]>"},
    {"oom", GA_EV_OOM, 1, 2, "oom <size> [stream]"},
    {"free_requested", GA_EV_FREE_PENDING, 1, 1, "free_requested <id>"},
    {"free_completed", GA_EV_FREE_COMPLETED, 1, 1, "free_completed <id>"},
    {"tag_begin", GA_EV_TAG_BEGIN, 1, 1, "tag_begin <tag>"},
    {"tag_end", GA_EV_TAG_END, 1, 1, "tag_end <tag>"},
    {"sleep", GA_EV_SLEEP, 1, 3, "sleep <tags> [offload <tags>]"},
    {"wake", GA_EV_WAKE, 1, 1, "wake <tags>"},
};

static bool tok_is(const ga_field_t *t, const char *lit)
{
    return t->n == strlen(lit) && memcmp(t->p, lit, t->n) == 0;
}

static int bad(ga_reader_t *r, char *err, size_t errlen, const char *what, const ga_field_t *t)
{
    if (t != NULL)
        snprintf(err, errlen, "%s:%llu: %s \"%.*s\"", r->in.path, (unsigned long long)r->in.line, what,
                 (int)(t->n > 60 ? 60 : t->n), t->p);
    else
        snprintf(err, errlen, "%s:%llu: %s", r->in.path, (unsigned long long)r->in.line, what);
    return -1;
}

/* Tokens of a line, a '#' token and what follows dropped. */
static size_t tokens(const char *line, size_t n, ga_field_t *t)
{
    size_t k = ga_reader_fields(line, n, 0, t, MAX_TOKENS);
    for (size_t i = 0; i < k && i <= MAX_TOKENS - 1; i++)
        if (t[i].p[0] == '#')
            return i;
    return k;
}

/* The next line that has tokens: the one read ahead by open, else from the
 * file. 1 (*line, *n, t[0..*k) set), 0 at the end, -1 with err. */
static int next_line(ga_reader_t *r, char **line, size_t *n, ga_field_t *t, size_t *k, char *err, size_t errlen)
{
    text_t *x = r->impl;
    if (x->pending != NULL) {
        *line = x->pending;
        *n = x->pending_len;
        x->pending = NULL;
        *k = tokens(*line, *n, t);
        return 1;
    }
    for (;;) {
        int rc = ga_input_line(&r->in, line, n, err, errlen);
        if (rc <= 0)
            return rc;
        *k = tokens(*line, *n, t);
        if (*k > 0)
            return 1;
    }
}

/* Argument i as an id or stream: decimal or 0x hex. */
static bool uint_arg(const ga_field_t *t, size_t i, uint64_t *out)
{
    return ga_units_parse_uint(t[i].p, t[i].n, out);
}

/* Whether t is a tag name (galloc_sleep.h: 1 to GALLOC_TAG_MAX - 1 bytes of
 * [A-Za-z0-9_.-]), or with list, names joined by commas or "*" (every tag). */
static bool tag_arg(const ga_field_t *t, bool list)
{
    if (list && t->n == 1 && t->p[0] == '*')
        return true;
    if (t->n >= GA_TAG_LIST_MAX)
        return false;
    size_t name = 0;
    for (size_t i = 0; i < t->n; i++) {
        char c = t->p[i];
        if (c == ',' && list && name > 0) {
            name = 0;
            continue;
        }
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
                  c == '-';
        if (!ok || ++name >= GALLOC_TAG_MAX)
            return false;
    }
    return name > 0;
}

/* The arguments of a tag event: t[1] the tag (list); for sleep an optional
 * "offload <tags>". 1, or -1. */
static int tag_args(ga_reader_t *r, const verb_t *v, const ga_field_t *t, size_t k, ga_event_t *ev, char *err,
                    size_t errlen)
{
    bool list = v->kind == GA_EV_SLEEP || v->kind == GA_EV_WAKE;
    if (!tag_arg(&t[1], list))
        return bad(r, err, errlen,
                   list ? "bad tag list (names of 1 to 31 of [A-Za-z0-9_.-] joined by commas, or * for every tag)"
                        : "bad tag (1 to 31 of [A-Za-z0-9_.-])",
                   &t[1]);
    ev->text = t[1].p;
    ev->text_len = t[1].n;
    if (k == 2)
        return 1;
    if (k != 4 || !tok_is(&t[2], "offload")) {
        char what[128];
        snprintf(what, sizeof(what), "wrong arguments; usage: %s", v->usage);
        return bad(r, err, errlen, what, NULL);
    }
    if (!tag_arg(&t[3], true))
        return bad(r, err, errlen, "bad offload tag list (names joined by commas, or * for every tag)", &t[3]);
    ev->text2 = t[3].p;
    ev->text2_len = t[3].n;
    return 1;
}

/* The arguments t[1..k) of verb v (their count checked) into ev. 1, or -1. */
static int verb_args(ga_reader_t *r, const verb_t *v, const ga_field_t *t, size_t k, ga_event_t *ev, char *err,
                     size_t errlen)
{
    switch (v->kind) {
    case GA_EV_ALLOC:
        if (!uint_arg(t, 1, &ev->id))
            return bad(r, err, errlen, "bad id (an unsigned integer, decimal or 0x hex)", &t[1]);
        if (!ga_units_parse_size(t[2].p, t[2].n, &ev->size))
            return bad(r, err, errlen, "bad size", &t[2]);
        if (k > 3 && !uint_arg(t, 3, &ev->stream))
            return bad(r, err, errlen, "bad stream", &t[3]);
        break;
    case GA_EV_FREE:
        ev->stream = GA_STREAM_NONE;
        if (k > 2 && !uint_arg(t, 2, &ev->stream))
            return bad(r, err, errlen, "bad stream", &t[2]);
        if (!uint_arg(t, 1, &ev->id))
            return bad(r, err, errlen, "bad id", &t[1]);
        break;
    case GA_EV_FREE_PENDING:
    case GA_EV_FREE_COMPLETED:
    case GA_EV_RECORD_STREAM:
        if (!uint_arg(t, 1, &ev->id))
            return bad(r, err, errlen, "bad id", &t[1]);
        if (v->kind == GA_EV_RECORD_STREAM && !uint_arg(t, 2, &ev->stream))
            return bad(r, err, errlen, "bad stream", &t[2]);
        break;
    case GA_EV_STREAM_SYNC:
        if (!uint_arg(t, 1, &ev->stream))
            return bad(r, err, errlen, "bad stream", &t[1]);
        break;
    case GA_EV_SET_FRACTION:
        if (!ga_units_parse_fraction(t[1].p, t[1].n, &ev->fraction) || ev->fraction > 1.0)
            return bad(r, err, errlen, "bad fraction (a number in [0, 1])", &t[1]);
        break;
    case GA_EV_OOM:
        if (!ga_units_parse_size(t[1].p, t[1].n, &ev->size))
            return bad(r, err, errlen, "bad size", &t[1]);
        if (k > 2 && !uint_arg(t, 2, &ev->stream))
            return bad(r, err, errlen, "bad stream", &t[2]);
        break;
    case GA_EV_TAG_BEGIN:
    case GA_EV_TAG_END:
    case GA_EV_SLEEP:
    case GA_EV_WAKE: return tag_args(r, v, t, k, ev, err, errlen);
    default: break;
    }
    return 1;
}

/* The one frame of a stack: the annotation in force. */
static void note_frame(const void *data, size_t i, ga_frame_t *out)
{
    const text_t *x = data;
    memset(out, 0, sizeof(*out));
    if (i == 0) {
        out->name = x->note;
        out->name_len = x->note_len;
    }
}

static uintptr_t note_key(const void *data, size_t i)
{
    const text_t *x = data;
    return i == 0 ? x->note_key : 0;
}

/* An annotate's text s[0..n) becomes the annotation in force. 0, or -1 out of host memory. */
static int set_note(ga_reader_t *r, const char *s, size_t n, char *err, size_t errlen)
{
    text_t *x = r->impl;
    if (x->note == NULL && (x->note = malloc(GA_INPUT_MAX_LINE)) == NULL) {
        snprintf(err, errlen, "%s:%llu: out of host memory for an annotation", r->in.path,
                 (unsigned long long)r->in.line);
        return -1;
    }
    if (n > GA_INPUT_MAX_LINE) /* a line is shorter: ga_input_line refuses longer ones */
        n = GA_INPUT_MAX_LINE;
    if (x->note_key != 0 && n == x->note_len && memcmp(x->note, s, n) == 0)
        return 0; /* the same text again: the same frame, the same key */
    memcpy(x->note, s, n);
    x->note_len = n;
    x->note_key++;
    return 0;
}

static int text_next(ga_reader_t *r, ga_event_t *ev, char *err, size_t errlen)
{
    ga_field_t t[MAX_TOKENS + 1];
    char *line;
    size_t n, k;
    int rc = next_line(r, &line, &n, t, &k, err, errlen);
    if (rc <= 0)
        return rc;
    memset(ev, 0, sizeof(*ev));
    ev->where = r->in.line;
    if (t[0].p[0] == 'a' && tok_is(&t[0], "annotate")) { /* the text is the rest of the line, verbatim */
        const char *s = t[0].p + t[0].n;
        const char *e = line + n;
        while (s < e && (*s == ' ' || *s == '\t'))
            s++;
        ev->kind = GA_EV_ANNOTATE;
        ev->text = s;
        ev->text_len = (size_t)(e - s);
        return set_note(r, s, ev->text_len, err, errlen) == 0 ? 1 : -1;
    }
    const verb_t *v = NULL; /* alloc and free come first: most lines match at once */
    for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]) && v == NULL; i++)
        if (t[0].p[0] == verbs[i].name[0] && tok_is(&t[0], verbs[i].name))
            v = &verbs[i];
    if (v == NULL)
        return bad(r, err, errlen,
                   "unknown event (expected alloc, free, record_stream, stream_sync, empty_cache, set_fraction, "
                   "oom, annotate, free_requested, free_completed, tag_begin, tag_end, sleep, wake)",
                   &t[0]);
    if (k - 1 < v->min || k - 1 > v->max) {
        char what[128];
        snprintf(what, sizeof(what), "wrong number of arguments; usage: %s", v->usage);
        return bad(r, err, errlen, what, NULL);
    }
    ev->kind = v->kind;
    text_t *x = r->impl;
    if ((v->kind == GA_EV_ALLOC || v->kind == GA_EV_OOM) && x->note_key != 0)
        ev->stack = (ga_stack_t){.kind = GA_STACK_ANNOTATION, .n = 1, .data = x, .frame = note_frame, .key = note_key};
    return verb_args(r, v, t, k, ev, err, errlen);
}

static void text_close(ga_reader_t *r)
{
    text_t *x = r->impl;
    if (x != NULL)
        free(x->note);
    free(r->impl);
    r->impl = NULL;
}

static const ga_reader_ops_t text_ops = {.next = text_next, .close = text_close};

static int parse_device_memory(ga_reader_t *r, const ga_field_t *v, char *err, size_t errlen)
{
    if (!ga_units_parse_size(v->p, v->n, &r->device_memory) || r->device_memory == 0)
        return bad(r, err, errlen, "bad device_memory", v);
    return 0;
}

static int text_open(ga_reader_t *r, char *err, size_t errlen)
{
    ga_field_t t[MAX_TOKENS + 1];
    char *line;
    size_t n, k = 0;
    for (;;) {
        int rc = ga_input_line(&r->in, &line, &n, err, errlen);
        if (rc < 0)
            return -1;
        if (rc == 0) {
            snprintf(err, errlen, "%s: no \"galloc-trace 1\" header line", r->in.path);
            return -1;
        }
        k = tokens(line, n, t);
        if (k > 0)
            break;
    }
    uint64_t version;
    if (!tok_is(&t[0], "galloc-trace") || k < 2)
        return bad(r, err, errlen, "expected the header \"galloc-trace 1 [device_memory <size>]\", found", &t[0]);
    if (!ga_units_parse_u64(t[1].p, t[1].n, &version) || version != 1)
        return bad(r, err, errlen, "unsupported galloc-trace version (this galloc reads version 1)", &t[1]);
    for (size_t i = 2; i < k; i += 2) {
        if (tok_is(&t[i], "device_memory") && i + 1 < k) {
            if (parse_device_memory(r, &t[i + 1], err, errlen) != 0)
                return -1;
        } else {
            return bad(r, err, errlen, "unknown header field (the header takes: device_memory <size>)", &t[i]);
        }
    }
    text_t *x = calloc(1, sizeof(*x));
    if (x == NULL) {
        snprintf(err, errlen, "%s: out of host memory", r->in.path);
        return -1;
    }
    r->impl = x;
    r->ops = &text_ops;
    /* Header directives may also stand on their own lines before the first
     * event ("device_memory <size>"); the first other line is kept for next(). */
    for (;;) {
        int rc = ga_input_line(&r->in, &line, &n, err, errlen);
        if (rc < 0)
            return -1;
        if (rc == 0)
            return 0;
        k = tokens(line, n, t);
        if (k == 0)
            continue;
        if (!tok_is(&t[0], "device_memory")) {
            x->pending = line;
            x->pending_len = n;
            return 0;
        }
        if (k != 2)
            return bad(r, err, errlen, "usage: device_memory <size>", NULL);
        if (parse_device_memory(r, &t[1], err, errlen) != 0)
            return -1;
    }
}

static int text_probe(const char *p, size_t n)
{
    const char *l;
    size_t ln;
    ga_reader_first_line(p, n, &l, &ln);
    return ln >= 12 && memcmp(l, "galloc-trace", 12) == 0 ? GA_PROBE_MAGIC : 0;
}

const ga_format_desc_t ga_format_galloc = {
    .name = "galloc",
    .what = "galloc text trace (docs/trace-format.md)",
    .probe = text_probe,
    .open = text_open,
};
