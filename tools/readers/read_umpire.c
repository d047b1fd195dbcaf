/*
 * read_umpire.c: LLNL Umpire replay logs (UMPIRE_REPLAY=On), one JSON object
 * per line, in either of the two layouts Umpire has written.
 *
 * Since 2022 (Umpire 2022.03, src/umpire/Replay.hpp's "category/name" form):
 *
 *   {"category":"operation","name":"allocate","numeric_args":{"size":128},
 *    "string_args":{"allocator_ref":"0x10379980","pointer":"0x1037a4e0"},...}
 *   {"category":"operation","name":"deallocate",
 *    "string_args":{"allocator_ref":"0x10379980","pointer":"0x1037a4e0"},...}
 *   {"category":"operation","name":"reallocate","numeric_args":{"size":84},
 *    "string_args":{"allocator_ref":"0x10379980","current_ptr":"0x1037a440"},...}
 *   {"category":"operation","name":"reallocate",
 *    "string_args":{"allocator_ref":"0x10379980","new_ptr":"0x1037a4e0"},...}
 *
 * allocate -> GA_EV_ALLOC (id = pointer, size = numeric_args.size);
 * deallocate -> GA_EV_FREE of pointer. A reallocate is two lines: the call
 * (current_ptr, size) and the result (new_ptr). When the allocator
 * reallocates through its own allocate/deallocate, Umpire logs those between
 * the two lines and they are replayed as they come; the reallocate lines then
 * add nothing. When no allocate/deallocate comes between them (a memory
 * resource that calls realloc itself), the pair is replayed as Umpire's
 * fallback does it: allocate new_ptr with the new size, then free
 * current_ptr (a move); in place (new_ptr = current_ptr) that is a free then
 * an allocate of the new size. current_ptr "0" allocates only.
 * register/deregister_external_allocation (memory Umpire did not allocate),
 * copy, move, release and the allocator-building operations are skipped.
 *
 * The older layout (before 2022):
 *
 *   { "kind":"replay", "uid":27494, "timestamp":1558..., "event": "allocate",
 *     "payload": { "allocator_ref": "0x108a8730", "size": 134 },
 *     "result": { "memory_ptr": "0x200040000010" } }
 *   { "kind":"replay", ..., "event": "deallocate",
 *     "payload": { "allocator_ref": "0x108a8730", "memory_ptr": "0x200040000010" } }
 *
 * logs each allocate twice: once when called (payload only) and once when it
 * returns (with result.memory_ptr). Only the second is an allocation that
 * happened, so it becomes GA_EV_ALLOC (id = memory_ptr, size =
 * payload.size); the first is skipped. deallocate -> GA_EV_FREE of
 * payload.memory_ptr. Other events and objects whose kind is not "replay"
 * are skipped.
 *
 * In both layouts the events of all allocators (every resource and every
 * pool built on them) are replayed together, in file order, on one device:
 * the log does not say which resources are GPU memory, and their pointers
 * never collide while live. No stream: Umpire has none in the log.
 *
 * named_allocate (Allocator::allocate(name, bytes), 2022 layout: allocate
 * plus string_args.allocation_name) is an allocation like allocate.
 *
 * Stacks: the log has no call stack; it says which allocator served each
 * request and, for named_allocate, the allocation's name. An allocation's
 * stack is GA_STACK_ALLOCATOR: frame 0 names the allocator, from the line's
 * own tags.allocator_name when it has one, else from the allocator_ref the
 * line names, which make_memory_resource / make_allocator (2022:
 * string_args.allocator_ref, tags.allocator_name) or makeMemoryResource
 * (result: the address; payload.name) / makeAllocator (result.allocator_ref;
 * payload.allocator_name) named earlier (the last naming of a ref wins: an
 * address reused by a new allocator); a named_allocate's second frame names
 * the allocation. A request whose allocator was never named (a log cut after
 * its make lines): GA_STACK_NONE, the address is no name. Allocator names are
 * kept once each (umpire_names.c; frame 0's key is the name's index + 1,
 * the allocation's name has none), with 32 to 64 bytes per allocator_ref
 * named: memory grows with the allocators a program makes, not with the
 * log's length, and for a gzip input within ga_input_hold_check's bound.
 *
 * Blank lines and lines starting with '#' are ignored (Umpire's tutorial log
 * has a comment header). The file is streamed line by line through
 * ga_input: memory is the line buffer and the allocator names whatever the
 * log's length. Errors say "FILE:LINE: column C: problem".
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/readers/json_scan.h"
#include "tools/readers/limits.h"
#include "tools/readers/reader_int.h"
#include "tools/readers/umpire_int.h"
#include "tools/readers/units.h"

/* What one line holds that the replay needs. */
typedef struct line {
    bool replay; /* "kind": "replay" (old layout) */
    bool op;     /* "category": "operation" (2022 layout) */
    int event;   /* E_*: "event" (old) or "name" (2022) */
    bool has_size, has_pptr, has_rptr, has_cur, has_new, has_ref, has_result_ref;
    uint64_t size;               /* payload.size / numeric_args.size */
    uint64_t pptr;               /* payload.memory_ptr / string_args.pointer */
    uint64_t rptr;               /* result.memory_ptr */
    uint64_t cur, new_ptr;       /* string_args.current_ptr, new_ptr (reallocate) */
    uint64_t ref;                /* string_args.allocator_ref / payload.allocator_ref: the allocator */
    uint64_t result_ref;         /* an old make line's result (the string, or result.allocator_ref) */
    ga_umpire_text_t name;       /* the allocator's name: tags.allocator_name; old: payload.name, allocator_name */
    ga_umpire_text_t allocation; /* string_args.allocation_name (named_allocate) */
} line_t;

enum { E_OTHER, E_ALLOCATE, E_NAMED_ALLOCATE, E_DEALLOCATE, E_REALLOCATE, E_MAKE };

typedef struct umpire {
    bool in_realloc;    /* between a reallocate's call line and its result line */
    bool realloc_inner; /* an allocate or deallocate was logged in between */
    uint64_t cur, size; /* the call's current_ptr and size */
    bool has_queued;    /* a second event of a reallocate waits */
    ga_event_t queued;
    ga_umpire_names_t names; /* the allocators named so far, the last allocation's stack */
} umpire_t;

static int bad(ga_reader_t *r, char *err, size_t errlen, const ga_json_t *j, const char *what)
{
    snprintf(err, errlen, "%s:%llu: column %llu: %s", r->in.path, (unsigned long long)r->in.line,
             (unsigned long long)j->at + 1, what);
    return -1;
}

/* A pointer as Umpire prints a void*: "0x..." (or "0") in a string. */
static int pointer(ga_reader_t *r, ga_json_t *j, const char *name, uint64_t *out, bool *has, char *err, size_t errlen)
{
    ga_json_tok_t t = ga_json_next(j);
    if (t == GA_JSON_ERR)
        return bad(r, err, errlen, j, j->msg);
    if (t != GA_JSON_STR || j->trunc || !ga_units_parse_hex(j->s, j->n, out)) {
        char what[96];
        snprintf(what, sizeof(what), "%s is not a hex pointer string", name);
        return bad(r, err, errlen, j, what);
    }
    *has = true;
    return 0;
}

static int size_arg(ga_reader_t *r, ga_json_t *j, const char *name, line_t *l, char *err, size_t errlen)
{
    ga_json_tok_t t = ga_json_next(j);
    int64_t v;
    if (t == GA_JSON_ERR)
        return bad(r, err, errlen, j, j->msg);
    if (t != GA_JSON_NUM || !ga_json_int(j, &v) || v < 0) {
        char what[96];
        snprintf(what, sizeof(what), "%s is not a non-negative integer", name);
        return bad(r, err, errlen, j, what);
    }
    if ((uint64_t)v > GA_TRACE_BYTES_MAX) { /* Umpire logs allocations that succeeded only */
        char what[128];
        snprintf(what, sizeof(what), "%s of %lld bytes is larger than any device (at most %llu TiB)", name,
                 (long long)v, (unsigned long long)(GA_TRACE_BYTES_MAX >> 40));
        return bad(r, err, errlen, j, what);
    }
    l->size = (uint64_t)v;
    l->has_size = true;
    return 0;
}

/* A string member's value into *t (another type is skipped: no name). */
static int string(ga_reader_t *r, ga_json_t *j, ga_umpire_text_t *t, char *err, size_t errlen)
{
    ga_json_tok_t tok = ga_json_next(j);
    if (tok == GA_JSON_STR) {
        memcpy(t->s, j->s, j->n + 1);
        t->n = j->n;
        t->has = true;
        return 0;
    }
    return ga_json_skip(j, tok) != 0 ? bad(r, err, errlen, j, j->msg) : 0;
}

/* An allocator_ref: a "0x..." string names an allocator; anything else names
 * none (it only names, so it is no error). */
static int ref(ga_reader_t *r, ga_json_t *j, uint64_t *out, bool *has, char *err, size_t errlen)
{
    ga_json_tok_t tok = ga_json_next(j);
    if (tok == GA_JSON_STR && !j->trunc && ga_units_parse_hex(j->s, j->n, out) && *out != 0) {
        *has = true;
        return 0;
    }
    return ga_json_skip(j, tok) != 0 ? bad(r, err, errlen, j, j->msg) : 0;
}

/* The members of tags (2022 layout; just opened): allocator_name. */
static int tags(ga_reader_t *r, ga_json_t *j, line_t *l, char *err, size_t errlen)
{
    int more, rc = 0;
    while (rc == 0 && (more = ga_json_member(j)) > 0) {
        if (ga_json_is(j, "allocator_name"))
            rc = string(r, j, &l->name, err, errlen);
        else if (ga_json_skip(j, ga_json_next(j)) != 0)
            return bad(r, err, errlen, j, j->msg);
    }
    if (rc != 0)
        return -1;
    return more < 0 ? bad(r, err, errlen, j, j->msg) : 0;
}

/* The members of numeric_args or string_args (2022 layout; just opened). */
static int args(ga_reader_t *r, ga_json_t *j, line_t *l, bool numeric, char *err, size_t errlen)
{
    int more, rc = 0;
    while (rc == 0 && (more = ga_json_member(j)) > 0) {
        if (numeric && ga_json_is(j, "size"))
            rc = size_arg(r, j, "numeric_args.size", l, err, errlen);
        else if (!numeric && ga_json_is(j, "pointer"))
            rc = pointer(r, j, "string_args.pointer", &l->pptr, &l->has_pptr, err, errlen);
        else if (!numeric && ga_json_is(j, "current_ptr"))
            rc = pointer(r, j, "string_args.current_ptr", &l->cur, &l->has_cur, err, errlen);
        else if (!numeric && ga_json_is(j, "new_ptr"))
            rc = pointer(r, j, "string_args.new_ptr", &l->new_ptr, &l->has_new, err, errlen);
        else if (!numeric && ga_json_is(j, "allocator_ref"))
            rc = ref(r, j, &l->ref, &l->has_ref, err, errlen);
        else if (!numeric && ga_json_is(j, "allocation_name"))
            rc = string(r, j, &l->allocation, err, errlen);
        else if (ga_json_skip(j, ga_json_next(j)) != 0)
            return bad(r, err, errlen, j, j->msg);
    }
    if (rc != 0)
        return -1;
    return more < 0 ? bad(r, err, errlen, j, j->msg) : 0;
}

/* The members of payload or result (just opened); is_payload picks which. */
static int members(ga_reader_t *r, ga_json_t *j, line_t *l, bool is_payload, char *err, size_t errlen)
{
    int more;
    while ((more = ga_json_member(j)) > 0) {
        if (ga_json_is(j, "memory_ptr")) {
            if (pointer(r, j, "memory_ptr", is_payload ? &l->pptr : &l->rptr, is_payload ? &l->has_pptr : &l->has_rptr,
                        err, errlen) != 0)
                return -1;
        } else if (is_payload && ga_json_is(j, "size")) {
            if (size_arg(r, j, "payload.size", l, err, errlen) != 0)
                return -1;
        } else if (ga_json_is(j, "allocator_ref")) {
            if (ref(r, j, is_payload ? &l->ref : &l->result_ref, is_payload ? &l->has_ref : &l->has_result_ref, err,
                    errlen) != 0)
                return -1;
        } else if (is_payload && (ga_json_is(j, "name") || ga_json_is(j, "allocator_name"))) {
            if (string(r, j, &l->name, err, errlen) != 0)
                return -1;
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
    memset(l, 0, offsetof(line_t, name)); /* the texts count by their has */
    l->name.has = false;
    l->allocation.has = false;
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
        bool kind = ga_json_is(&j, "kind"), event = ga_json_is(&j, "event") || ga_json_is(&j, "name");
        bool category = ga_json_is(&j, "category");
        bool numeric = ga_json_is(&j, "numeric_args"), strings = ga_json_is(&j, "string_args");
        bool tagged = ga_json_is(&j, "tags");
        t = ga_json_next(&j);
        if (t == GA_JSON_ERR)
            return bad(r, err, errlen, &j, j.msg);
        if ((payload || result) && t == GA_JSON_OBJ) {
            if (members(r, &j, l, payload, err, errlen) != 0)
                return -1;
        } else if (result && t == GA_JSON_STR) { /* an old makeMemoryResource's address */
            l->has_result_ref = !j.trunc && ga_units_parse_hex(j.s, j.n, &l->result_ref) && l->result_ref != 0;
        } else if (tagged && t == GA_JSON_OBJ) {
            if (tags(r, &j, l, err, errlen) != 0)
                return -1;
        } else if ((numeric || strings) && t == GA_JSON_OBJ) {
            if (args(r, &j, l, numeric, err, errlen) != 0)
                return -1;
        } else if (kind && t == GA_JSON_STR) {
            l->replay = ga_json_is(&j, "replay");
        } else if (category && t == GA_JSON_STR) {
            l->op = ga_json_is(&j, "operation");
        } else if (event && t == GA_JSON_STR) {
            l->event = ga_json_is(&j, "allocate")         ? E_ALLOCATE
                       : ga_json_is(&j, "named_allocate") ? E_NAMED_ALLOCATE
                       : ga_json_is(&j, "deallocate")     ? E_DEALLOCATE
                       : ga_json_is(&j, "reallocate")     ? E_REALLOCATE
                       : ga_json_is(&j, "make_memory_resource") || ga_json_is(&j, "make_allocator") ||
                               ga_json_is(&j, "makeMemoryResource") || ga_json_is(&j, "makeAllocator")
                           ? E_MAKE
                           : E_OTHER;
        } else if (ga_json_skip(&j, t) != 0) {
            return bad(r, err, errlen, &j, j.msg);
        }
    }
    if (more < 0 || ga_json_next(&j) != GA_JSON_EOF)
        return bad(r, err, errlen, &j, j.msg);
    return 0;
}

static int need(ga_reader_t *r, bool has, const char *what, char *err, size_t errlen)
{
    if (!has)
        snprintf(err, errlen, "%s:%llu: %s", r->in.path, (unsigned long long)r->in.line, what);
    return has ? 0 : -1;
}

/* The bound on the allocator names kept (ga_hold_t): for a gzip input, ga_input_hold_check's. */
typedef struct hold_ctx {
    ga_reader_t *r;
    char *err;
    size_t errlen;
} hold_ctx_t;

static int hold_more(void *ctx, uint64_t more)
{
    hold_ctx_t *h = ctx;
    umpire_t *u = h->r->impl;
    return ga_input_hold_check(&h->r->in, ga_umpire_names_held(&u->names) + more, "the Umpire allocator names kept",
                               h->err, h->errlen);
}

/* A failure to keep a name (GA_HOLD_*), as the reader's error. */
static int name_failed(ga_reader_t *r, int rc, char *err, size_t errlen)
{
    if (rc == GA_HOLD_NOMEM)
        snprintf(err, errlen, "%s:%llu: out of host memory keeping allocator names", r->in.path,
                 (unsigned long long)r->in.line);
    else if (rc == GA_HOLD_LIMIT)
        snprintf(err, errlen, "%s:%llu: more than %u allocator names: a garbled or hostile log", r->in.path,
                 (unsigned long long)r->in.line, UINT32_MAX - 1);
    return -1; /* GA_HOLD_REFUSED: ga_input_hold_check wrote the message */
}

/* A make line: ref now names the allocator called name. 0, or -1 with err. */
static int name_allocator(ga_reader_t *r, uint64_t ref, const ga_umpire_text_t *name, char *err, size_t errlen)
{
    umpire_t *u = r->impl;
    hold_ctx_t hc = {r, err, errlen};
    ga_hold_t hold = {hold_more, &hc};
    int rc = ga_umpire_name(&u->names, ref, name, &hold);
    return rc == 0 ? 0 : name_failed(r, rc, err, errlen);
}

/* The stack of an allocation line l made, into *st. 0, or -1 with err. */
static int allocator_stack(ga_reader_t *r, const line_t *l, ga_stack_t *st, char *err, size_t errlen)
{
    umpire_t *u = r->impl;
    hold_ctx_t hc = {r, err, errlen};
    ga_hold_t hold = {hold_more, &hc};
    int rc = ga_umpire_stack(&u->names, &l->name, l->has_ref ? l->ref : 0, &l->allocation, &hold, st);
    return rc == 0 ? 0 : name_failed(r, rc, err, errlen);
}

/* A 2022-layout operation line: 1 with *ev, 0 if it replays nothing. */
static int operation(ga_reader_t *r, const line_t *l, ga_event_t *ev, char *err, size_t errlen)
{
    umpire_t *u = r->impl;
    switch (l->event) {
    case E_ALLOCATE:
    case E_NAMED_ALLOCATE:
        if (need(r, l->has_pptr && l->has_size, "allocate without string_args.pointer and numeric_args.size", err,
                 errlen) != 0)
            return -1;
        u->realloc_inner = true;
        ev->kind = GA_EV_ALLOC;
        ev->id = l->pptr;
        ev->size = l->size;
        return allocator_stack(r, l, &ev->stack, err, errlen) == 0 ? 1 : -1;
    case E_MAKE:
        if (l->has_ref && l->name.has && name_allocator(r, l->ref, &l->name, err, errlen) != 0)
            return -1;
        return 0;
    case E_DEALLOCATE:
        if (need(r, l->has_pptr, "deallocate without string_args.pointer", err, errlen) != 0)
            return -1;
        u->realloc_inner = true;
        ev->kind = GA_EV_FREE;
        ev->id = l->pptr;
        ev->stream = GA_STREAM_NONE;
        return 1;
    case E_REALLOCATE:
        if (l->has_cur) { /* the call */
            if (need(r, l->has_size, "reallocate with current_ptr but no numeric_args.size", err, errlen) != 0)
                return -1;
            u->in_realloc = true;
            u->realloc_inner = false;
            u->cur = l->cur;
            u->size = l->size;
            return 0;
        }
        if (!l->has_new || !u->in_realloc) /* a result without its call (a log cut there) */
            return 0;
        u->in_realloc = false;
        if (u->realloc_inner) /* replayed through the allocate/deallocate lines */
            return 0;
        ga_event_t alloc = *ev, fr = *ev;
        alloc.kind = GA_EV_ALLOC;
        alloc.id = l->new_ptr;
        alloc.size = u->size;
        if (allocator_stack(r, l, &alloc.stack, err, errlen) != 0)
            return -1;
        fr.kind = GA_EV_FREE;
        fr.id = u->cur;
        fr.stream = GA_STREAM_NONE;
        if (u->cur == 0) {
            *ev = alloc;
        } else if (u->cur == l->new_ptr) { /* in place: the block changes size */
            *ev = fr;
            u->queued = alloc;
            u->has_queued = true;
        } else {
            *ev = alloc;
            u->queued = fr;
            u->has_queued = true;
        }
        return 1;
    default: return 0;
    }
}

static int umpire_next(ga_reader_t *r, ga_event_t *ev, char *err, size_t errlen)
{
    umpire_t *u = r->impl;
    char *s;
    size_t n;
    line_t l;
    if (u->has_queued) {
        u->has_queued = false;
        *ev = u->queued;
        return 1;
    }
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
        if (l.op) {
            rc = operation(r, &l, ev, err, errlen);
            if (rc != 0)
                return rc;
        } else if (l.replay && l.event == E_ALLOCATE && l.has_rptr) {
            if (!l.has_size) {
                snprintf(err, errlen, "%s:%llu: allocate with a result but no payload.size", r->in.path,
                         (unsigned long long)r->in.line);
                return -1;
            }
            ev->kind = GA_EV_ALLOC;
            ev->id = l.rptr;
            ev->size = l.size;
            return allocator_stack(r, &l, &ev->stack, err, errlen) == 0 ? 1 : -1;
        } else if (l.replay && l.event == E_MAKE && l.has_result_ref && l.name.has) {
            if (name_allocator(r, l.result_ref, &l.name, err, errlen) != 0) /* then skipped, as other lines */
                return -1;
        } else if (l.replay && l.event == E_DEALLOCATE) {
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

static void umpire_close(ga_reader_t *r)
{
    umpire_t *u = r->impl;
    if (u != NULL)
        ga_umpire_names_free(&u->names);
    free(r->impl);
    r->impl = NULL;
}

static const ga_reader_ops_t umpire_ops = {.next = umpire_next, .close = umpire_close};

static int umpire_open(ga_reader_t *r, char *err, size_t errlen)
{
    umpire_t *u = calloc(1, sizeof(*u));
    if (u == NULL) {
        snprintf(err, errlen, "%s: out of host memory", r->in.path);
        return -1;
    }
    ga_umpire_names_init(&u->names);
    r->impl = u;
    r->ops = &umpire_ops;
    return 0;
}

/* The first event line: a JSON object of kind "replay" (old layout), or one
 * with "category" and "name" (2022 layout: the first is metadata/version). */
static int umpire_probe(const char *p, size_t n)
{
    char head[256];
    size_t hn = ga_reader_head(p, n, head, sizeof(head));
    if (hn == 0 || head[0] != '{')
        return 0;
    bool replay = strstr(head, "\"kind\"") != NULL && strstr(head, "\"replay\"") != NULL;
    bool category = strstr(head, "\"category\"") != NULL && strstr(head, "\"name\"") != NULL;
    return replay || category ? GA_PROBE_LINE : 0;
}

const ga_format_desc_t ga_format_umpire = {
    .name = "umpire",
    .what = "LLNL Umpire replay log (UMPIRE_REPLAY=On), JSON lines, 2022 or older layout",
    .probe = umpire_probe,
    .open = umpire_open,
};
