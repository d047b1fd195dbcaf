/*
 * read_rmm.c: RAPIDS RMM logging_resource_adaptor CSV (RMM_LOG_FILE).
 *
 *   Thread,Time,Action,Pointer,Size,Stream
 *   140573312345856,08:51:26:245621,allocate,0x7f8a40000000,1024,0x7f8a38001020
 *
 * Columns are found by name in the header, so extra or reordered columns are
 * fine; Action, Pointer and Size are required, Stream is optional (default
 * stream). Actions: "allocate"; "free" or "deallocate" (older logs);
 * "allocate failure" (an allocation that failed in the traced run: replayed
 * as an expected OOM point). Pointers are hex (0x optional, as RMM's own
 * parser reads them with base 16); streams are hex with 0x or decimal. Rows
 * are replayed in file order, which RMM writes in time order even for
 * multi-threaded logs (rapidsai/rmm benchmarks/utilities/log_parser.hpp);
 * threads are not separated, streams are honoured.
 *
 * Stacks: the log records no call stack; what it says about the code behind a
 * request is the thread that made it (spdlog's %t, the OS thread id). An
 * allocation's or failure's stack is one frame, GA_STACK_THREAD, named
 * "thread N" (N the Thread column as a decimal number, its key N + 1: equal
 * threads, equal keys), or "thread TEXT" with the column's text as written
 * (its first 64 bytes, no key) when it is not a number; no Thread column or
 * an empty one: GA_STACK_NONE.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/readers/limits.h"
#include "tools/readers/reader_int.h"
#include "tools/readers/units.h"

#define MAX_COLUMNS 32

#define THREAD_TEXT_MAX 64 /* bytes of a Thread column that is not a number kept in its frame's name */

typedef struct rmm {
    size_t ncol;                              /* columns in the header */
    size_t c_action, c_ptr, c_size, c_stream; /* column indices; c_stream = ncol if absent */
    size_t c_thread;                          /* ncol if absent */
    char thread[16 + THREAD_TEXT_MAX];        /* the last row's frame name, "thread N" */
    size_t thread_len;                        /* its length */
    uintptr_t thread_key;                     /* N + 1, 0 when the column is not a number */
} rmm_t;

static int column(const ga_field_t *f, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (f[i].n == strlen(name) && strncmp(f[i].p, name, f[i].n) == 0)
            return (int)i;
    return -1;
}

static bool is(const ga_field_t *f, const char *lit)
{
    return f->n == strlen(lit) && memcmp(f->p, lit, f->n) == 0;
}

/* A stream handle: RMM prints it as hex with 0x; tolerate decimal too. */
static bool parse_stream(const ga_field_t *f, uint64_t *out)
{
    if (f->n == 0) {
        *out = 0;
        return true;
    }
    return ga_units_parse_uint(f->p, f->n, out) || ga_units_parse_hex(f->p, f->n, out);
}

/* The one frame of a row's stack: its thread. */
static void thread_frame(const void *data, size_t i, ga_frame_t *out)
{
    const rmm_t *m = data;
    memset(out, 0, sizeof(*out));
    if (i == 0) {
        out->name = m->thread;
        out->name_len = m->thread_len;
    }
}

static uintptr_t thread_key(const void *data, size_t i)
{
    const rmm_t *m = data;
    return i == 0 ? m->thread_key : 0;
}

/* ev's stack from the row's Thread column f (NULL: no such column). */
static void thread_stack(rmm_t *m, const ga_field_t *f, ga_event_t *ev)
{
    if (f == NULL || f->n == 0)
        return; /* GA_STACK_NONE, as memset */
    uint64_t n;
    int len;
    if (ga_units_parse_u64(f->p, f->n, &n)) {
        len = snprintf(m->thread, sizeof(m->thread), "thread %llu", (unsigned long long)n);
        m->thread_key = (uintptr_t)(n + 1); /* 0, "no identity", for the one id that wraps */
    } else {
        len = snprintf(m->thread, sizeof(m->thread), "thread %.*s",
                       (int)(f->n < THREAD_TEXT_MAX ? f->n : THREAD_TEXT_MAX), f->p);
        m->thread_key = 0;
    }
    m->thread_len = len > 0 ? (size_t)len : 0;
    ev->stack = (ga_stack_t){.kind = GA_STACK_THREAD, .n = 1, .data = m, .frame = thread_frame, .key = thread_key};
}

static int bad(ga_reader_t *r, char *err, size_t errlen, const char *what, const ga_field_t *f)
{
    snprintf(err, errlen, "%s:%llu: %s \"%.*s\"", r->in.path, (unsigned long long)r->in.line, what,
             (int)(f->n > 60 ? 60 : f->n), f->p);
    return -1;
}

static int rmm_next(ga_reader_t *r, ga_event_t *ev, char *err, size_t errlen)
{
    rmm_t *m = r->impl;
    ga_field_t f[MAX_COLUMNS + 1];
    char *line;
    size_t n;
    for (;;) {
        int rc = ga_input_line(&r->in, &line, &n, err, errlen);
        if (rc <= 0)
            return rc;
        size_t k = ga_reader_fields(line, n, ',', f, MAX_COLUMNS);
        if (k == 1 && f[0].n == 0)
            continue; /* blank line */
        if (k != m->ncol) {
            snprintf(err, errlen, "%s:%llu: %zu%s fields, the header has %zu (truncated or garbled row)", r->in.path,
                     (unsigned long long)r->in.line, k > MAX_COLUMNS ? MAX_COLUMNS : k, k > MAX_COLUMNS ? "+" : "",
                     m->ncol);
            return -1;
        }
        break;
    }
    memset(ev, 0, sizeof(*ev));
    ev->where = r->in.line;
    const ga_field_t *a = &f[m->c_action];
    if (is(a, "allocate"))
        ev->kind = GA_EV_ALLOC;
    else if (is(a, "free") || is(a, "deallocate"))
        ev->kind = GA_EV_FREE;
    else if (is(a, "allocate failure"))
        ev->kind = GA_EV_OOM;
    else
        return bad(r, err, errlen, "unknown action (expected allocate, free, deallocate, allocate failure)", a);
    if (!ga_units_parse_u64(f[m->c_size].p, f[m->c_size].n, &ev->size))
        return bad(r, err, errlen, "bad size", &f[m->c_size]);
    if (ev->kind == GA_EV_ALLOC && ev->size > GA_TRACE_BYTES_MAX) { /* a failed request may be any size */
        char what[128];
        snprintf(what, sizeof(what), "allocation larger than any device (at most %llu TiB): size",
                 (unsigned long long)(GA_TRACE_BYTES_MAX >> 40));
        return bad(r, err, errlen, what, &f[m->c_size]);
    }
    if (m->c_stream < m->ncol && !parse_stream(&f[m->c_stream], &ev->stream))
        return bad(r, err, errlen, "bad stream", &f[m->c_stream]);
    /* A failed allocation's pointer is meaningless (RMM logs nullptr there). */
    if (ev->kind != GA_EV_OOM && !ga_units_parse_hex(f[m->c_ptr].p, f[m->c_ptr].n, &ev->id))
        return bad(r, err, errlen, "bad pointer", &f[m->c_ptr]);
    if (ev->kind == GA_EV_FREE && m->c_stream == m->ncol)
        ev->stream = GA_STREAM_NONE;
    if (ev->kind != GA_EV_FREE)
        thread_stack(m, m->c_thread < m->ncol ? &f[m->c_thread] : NULL, ev);
    return 1;
}

static void rmm_close(ga_reader_t *r)
{
    free(r->impl);
    r->impl = NULL;
}

static const ga_reader_ops_t rmm_ops = {.next = rmm_next, .close = rmm_close};

static int rmm_open(ga_reader_t *r, char *err, size_t errlen)
{
    char *line;
    size_t n;
    int rc;
    do { /* the header is the first non-blank line */
        rc = ga_input_line(&r->in, &line, &n, err, errlen);
        if (rc < 0)
            return -1;
        if (rc == 0) {
            snprintf(err, errlen, "%s: empty file, no RMM header", r->in.path);
            return -1;
        }
    } while (n == 0);
    ga_field_t f[MAX_COLUMNS + 1];
    size_t k = ga_reader_fields(line, n, ',', f, MAX_COLUMNS);
    int ca = column(f, k, "Action"), cp = column(f, k, "Pointer"), cs = column(f, k, "Size");
    int cst = column(f, k, "Stream"), cth = column(f, k, "Thread");
    if (k > MAX_COLUMNS || ca < 0 || cp < 0 || cs < 0) {
        snprintf(err, errlen, "%s:%llu: not an RMM log header (expected Thread,Time,Action,Pointer,Size,Stream)",
                 r->in.path, (unsigned long long)r->in.line);
        return -1;
    }
    rmm_t *m = calloc(1, sizeof(*m));
    if (m == NULL) {
        snprintf(err, errlen, "%s: out of host memory", r->in.path);
        return -1;
    }
    m->ncol = k;
    m->c_action = (size_t)ca;
    m->c_ptr = (size_t)cp;
    m->c_size = (size_t)cs;
    m->c_stream = cst < 0 ? k : (size_t)cst;
    m->c_thread = cth < 0 ? k : (size_t)cth;
    r->impl = m;
    r->ops = &rmm_ops;
    return 0;
}

/* An RMM header names its columns; Action and Pointer are the distinctive two. */
static int rmm_probe(const char *p, size_t n)
{
    char head[256];
    size_t hn = ga_reader_head(p, n, head, sizeof(head));
    bool named = memchr(head, ',', hn) != NULL && strstr(head, "Action") != NULL && strstr(head, "Pointer") != NULL;
    return named ? GA_PROBE_HEADER : 0;
}

const ga_format_desc_t ga_format_rmm = {
    .name = "rmm",
    .what = "RAPIDS RMM log, the CSV of rmm's logging_resource_adaptor",
    .probe = rmm_probe,
    .open = rmm_open,
};
