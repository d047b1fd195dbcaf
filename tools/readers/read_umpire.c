/*
 * read_umpire.c: LLNL Umpire replay logs (UMPIRE_REPLAY=On), one JSON object
 * per line, as Umpire's UMPIRE_REPLAY macro writes them (src/umpire/Replay.hpp):
 *
 *   { "kind":"replay", "uid":27494, "timestamp":1558..., "event": "allocate",
 *     "payload": { "allocator_ref": "0x108a8730", "size": 134 },
 *     "result": { "memory_ptr": "0x200040000010" } }
 *   { "kind":"replay", ..., "event": "deallocate",
 *     "payload": { "allocator_ref": "0x108a8730", "memory_ptr": "0x200040000010" } }
 *
 * Umpire logs each allocate twice: once when called (payload only) and once
 * when it returns (with result.memory_ptr). Only the second is an allocation
 * that happened, so it becomes GA_EV_ALLOC (id = memory_ptr, size =
 * payload.size); the first is skipped. deallocate -> GA_EV_FREE of
 * payload.memory_ptr (no stream: Umpire has none in the log). Every other
 * event (version, makeMemoryResource, makeAllocator, reallocate, release, ...)
 * and objects whose kind is not "replay" are counted as skipped. Events of
 * all allocators are replayed together, in file order.
 *
 * Blank lines and lines starting with '#' are ignored (Umpire's tutorial log
 * has a comment header). The file is streamed line by line through
 * ga_input: memory is the line buffer whatever the log's length. Errors say
 * "FILE:LINE: column C: problem".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/readers/json_scan.h"
#include "tools/readers/reader_int.h"
#include "tools/readers/units.h"

/* What one line holds that the replay needs. */
typedef struct line {
    bool replay;                /* "kind": "replay" */
    int event;                  /* E_* */
    bool has_size, has_pptr, has_rptr;
    uint64_t size;              /* payload.size */
    uint64_t pptr;              /* payload.memory_ptr */
    uint64_t rptr;              /* result.memory_ptr */
} line_t;

enum { E_OTHER, E_ALLOCATE, E_DEALLOCATE };

static int bad(ga_reader_t *r, char *err, size_t errlen, const ga_json_t *j, const char *what)
{
    snprintf(err, errlen, "%s:%llu: column %llu: %s", r->in.path, (unsigned long long)r->in.line,
             (unsigned long long)j->at + 1, what);
    return -1;
}

/* A pointer as Umpire prints a void*: "0x..." in a string. */
static int pointer(ga_reader_t *r, ga_json_t *j, uint64_t *out, char *err, size_t errlen)
{
    ga_json_tok_t t = ga_json_next(j);
    if (t == GA_JSON_ERR)
        return bad(r, err, errlen, j, j->msg);
    if (t != GA_JSON_STR || j->trunc || !ga_units_parse_hex(j->s, j->n, out))
        return bad(r, err, errlen, j, "memory_ptr is not a hex pointer string");
    return 0;
}

/* The members of payload or result (just opened); is_payload picks which. */
static int members(ga_reader_t *r, ga_json_t *j, line_t *l, bool is_payload, char *err, size_t errlen)
{
    int more;
    while ((more = ga_json_member(j)) > 0) {
        if (ga_json_is(j, "memory_ptr")) {
            if (pointer(r, j, is_payload ? &l->pptr : &l->rptr, err, errlen) != 0)
                return -1;
            *(is_payload ? &l->has_pptr : &l->has_rptr) = true;
        } else if (is_payload && ga_json_is(j, "size")) {
            ga_json_tok_t t = ga_json_next(j);
            int64_t v;
            if (t == GA_JSON_ERR)
                return bad(r, err, errlen, j, j->msg);
            if (t != GA_JSON_NUM || !ga_json_int(j, &v) || v < 0)
                return bad(r, err, errlen, j, "payload.size is not a non-negative integer");
            l->size = (uint64_t)v;
            l->has_size = true;
        } else if (ga_json_skip(j, ga_json_next(j)) != 0) {
            return bad(r, err, errlen, j, j->msg);
        }
    }
    return more < 0 ? bad(r, err, errlen, j, j->msg) : 0;
}

static int parse_line(ga_reader_t *r, const char *s, size_t n, line_t *l, char *err, size_t errlen)
{
    ga_json_t j;
    ga_json_init(&j, s, n, NULL, NULL);
    memset(l, 0, sizeof(*l));
    ga_json_tok_t t = ga_json_next(&j);
    if (t != GA_JSON_OBJ) {
        char what[160];
        snprintf(what, sizeof(what), "not a JSON object (one event per line)%s%s", t == GA_JSON_ERR ? ": " : "",
                 t == GA_JSON_ERR ? j.msg : "");
        return bad(r, err, errlen, &j, what);
    }
    int more;
    while ((more = ga_json_member(&j)) > 0) {
        bool payload = ga_json_is(&j, "payload"), result = ga_json_is(&j, "result");
        bool kind = ga_json_is(&j, "kind"), event = ga_json_is(&j, "event");
        t = ga_json_next(&j);
        if (t == GA_JSON_ERR)
            return bad(r, err, errlen, &j, j.msg);
        if ((payload || result) && t == GA_JSON_OBJ) {
            if (members(r, &j, l, payload, err, errlen) != 0)
                return -1;
        } else if (kind && t == GA_JSON_STR) {
            l->replay = ga_json_is(&j, "replay");
        } else if (event && t == GA_JSON_STR) {
            l->event = ga_json_is(&j, "allocate") ? E_ALLOCATE : ga_json_is(&j, "deallocate") ? E_DEALLOCATE : E_OTHER;
        } else if (ga_json_skip(&j, t) != 0) {
            return bad(r, err, errlen, &j, j.msg);
        }
    }
    if (more < 0 || ga_json_next(&j) != GA_JSON_EOF)
        return bad(r, err, errlen, &j, j.msg);
    return 0;
}

static int umpire_next(ga_reader_t *r, ga_event_t *ev, char *err, size_t errlen)
{
    char *s;
    size_t n;
    line_t l;
    for (;;) {
        int rc = ga_input_line(&r->in, &s, &n, err, errlen);
        if (rc <= 0)
            return rc;
        size_t i = 0;
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i == n || s[i] == '#')
            continue;
        if (parse_line(r, s, n, &l, err, errlen) != 0)
            return -1;
        memset(ev, 0, sizeof(*ev));
        ev->where = r->in.line;
        if (l.replay && l.event == E_ALLOCATE && l.has_rptr) {
            if (!l.has_size) {
                snprintf(err, errlen, "%s:%llu: allocate with a result but no payload.size", r->in.path,
                         (unsigned long long)r->in.line);
                return -1;
            }
            ev->kind = GA_EV_ALLOC;
            ev->id = l.rptr;
            ev->size = l.size;
            return 1;
        }
        if (l.replay && l.event == E_DEALLOCATE) {
            if (!l.has_pptr) {
                snprintf(err, errlen, "%s:%llu: deallocate without payload.memory_ptr", r->in.path,
                         (unsigned long long)r->in.line);
                return -1;
            }
            ev->kind = GA_EV_FREE;
            ev->id = l.pptr;
            ev->stream = GA_STREAM_NONE;
            return 1;
        }
        r->notes.skipped++; /* the call half of an allocate, and every other event */
    }
}

static const ga_reader_ops_t umpire_ops = {.next = umpire_next};

static int umpire_open(ga_reader_t *r, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    r->ops = &umpire_ops;
    return 0;
}

/* The first event line: a JSON object of kind "replay". */
static int umpire_probe(const char *p, size_t n)
{
    char head[256];
    size_t hn = ga_reader_head(p, n, head, sizeof(head));
    bool replay = hn > 0 && head[0] == '{' && strstr(head, "\"kind\"") != NULL && strstr(head, "\"replay\"") != NULL;
    return replay ? GA_PROBE_LINE : 0;
}

const ga_format_desc_t ga_format_umpire = {
    .name = "umpire",
    .what = "LLNL Umpire replay log (UMPIRE_REPLAY=On), JSON lines",
    .probe = umpire_probe,
    .open = umpire_open,
};
