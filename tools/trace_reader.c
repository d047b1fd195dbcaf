/*
 * trace_reader.c: opening a trace file, telling its format from the first
 * bytes, and the calls common to every format (see trace_reader.h).
 *
 * Detection, in order: a pickle starts with PROTO (0x80) and a protocol byte;
 * galloc's text trace has "galloc-trace" as its first line that is not blank
 * or a comment; an RMM log's first line is its CSV header with Action and
 * Pointer columns; an Umpire replay log's first such line is a JSON object
 * with "kind":"replay"; a Chrome trace is JSON naming "traceEvents" in its
 * first bytes (Kineto writes a few small header fields before the events).
 * Anything else is refused with what the first line holds.
 */
#include "tools/reader_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const format_names[] = {"auto", "rmm", "torch", "galloc", "umpire", "kineto"};
#define N_FORMATS (sizeof(format_names) / sizeof(format_names[0]))

const char *ga_reader_format_name(ga_format_t f)
{
    return (unsigned)f < N_FORMATS ? format_names[f] : "?";
}

bool ga_reader_format_parse(const char *s, ga_format_t *out)
{
    for (unsigned i = 0; i < N_FORMATS; i++)
        if (strcmp(s, format_names[i]) == 0) {
            *out = (ga_format_t)i;
            return true;
        }
    if (strcmp(s, "pytorch") == 0 || strcmp(s, "snapshot") == 0) {
        *out = GA_FORMAT_TORCH;
        return true;
    }
    if (strcmp(s, "chrome") == 0 || strcmp(s, "profiler") == 0) {
        *out = GA_FORMAT_KINETO;
        return true;
    }
    return false;
}

size_t ga_reader_fields(const char *line, size_t n, char sep, ga_field_t *f, size_t max)
{
    size_t k = 0, i = 0;
    if (sep == 0) {
        for (;;) {
            while (i < n && (line[i] == ' ' || line[i] == '\t'))
                i++;
            if (i == n)
                return k;
            size_t s = i;
            while (i < n && line[i] != ' ' && line[i] != '\t')
                i++;
            if (k == max)
                return max + 1;
            f[k].p = line + s;
            f[k].n = i - s;
            k++;
        }
    }
    for (;;) {
        size_t s = i;
        while (i < n && line[i] != sep)
            i++;
        size_t e = i;
        while (s < e && (line[s] == ' ' || line[s] == '\t'))
            s++;
        while (e > s && (line[e - 1] == ' ' || line[e - 1] == '\t'))
            e--;
        if (k == max)
            return max + 1;
        f[k].p = line + s;
        f[k].n = e - s;
        k++;
        if (i == n)
            return k;
        i++; /* past the separator */
    }
}

/* The first line of the peeked bytes that is neither blank nor a comment. */
static void first_line(const char *p, size_t n, const char **l, size_t *ln)
{
    size_t i = 0;
    while (i < n) {
        size_t s = i;
        while (i < n && p[i] != '\n')
            i++;
        size_t e = i;
        if (i < n)
            i++;
        while (s < e && (p[s] == ' ' || p[s] == '\t' || p[s] == '\r'))
            s++;
        if (s == e || p[s] == '#')
            continue;
        *l = p + s;
        *ln = e - s;
        return;
    }
    *l = p;
    *ln = 0;
}

/* Whether p[0..n) holds the string lit (memmem is a GNU extension). */
static bool has(const char *p, size_t n, const char *lit)
{
    size_t k = strlen(lit);
    for (size_t i = 0; i + k <= n; i++) {
        const char *q = memchr(p + i, lit[0], n - i);
        if (q == NULL || (size_t)(q - p) + k > n)
            return false;
        i = (size_t)(q - p);
        if (memcmp(q, lit, k) == 0)
            return true;
    }
    return false;
}

static ga_format_t detect(const char *p, size_t n)
{
    if (n >= 2 && (unsigned char)p[0] == 0x80 && p[1] >= 2 && p[1] <= 5)
        return GA_FORMAT_TORCH;
    const char *l;
    size_t ln;
    first_line(p, n, &l, &ln);
    if (ln >= 12 && memcmp(l, "galloc-trace", 12) == 0)
        return GA_FORMAT_GALLOC;
    /* An RMM header names its columns; Action and Pointer are the distinctive two. */
    char head[256];
    size_t hn = ln < sizeof(head) - 1 ? ln : sizeof(head) - 1;
    memcpy(head, l, hn);
    head[hn] = '\0';
    if (memchr(head, ',', hn) != NULL && strstr(head, "Action") != NULL && strstr(head, "Pointer") != NULL)
        return GA_FORMAT_RMM;
    if (hn > 0 && head[0] == '{' && strstr(head, "\"kind\"") != NULL && strstr(head, "\"replay\"") != NULL)
        return GA_FORMAT_UMPIRE;
    if (ln > 0 && (l[0] == '{' || l[0] == '[') && has(p, n, "\"traceEvents\""))
        return GA_FORMAT_KINETO;
    return GA_FORMAT_AUTO;
}

/* A short printable rendering of the first line, for the refusal message. */
static void describe_start(const char *p, size_t n, char *out, size_t len)
{
    const char *l;
    size_t ln;
    first_line(p, n, &l, &ln);
    size_t o = 0;
    for (size_t i = 0; i < ln && i < 40 && o + 5 < len; i++) {
        unsigned char c = (unsigned char)l[i];
        if (c >= 0x20 && c < 0x7f)
            out[o++] = (char)c;
        else
            o += (size_t)snprintf(out + o, len - o, "\\x%02x", c);
    }
    out[o] = '\0';
}

int ga_reader_open(const char *path, ga_format_t fmt, ga_reader_t **out, char *err, size_t errlen)
{
    *out = NULL;
    ga_reader_t *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        snprintf(err, errlen, "%s: out of host memory", path);
        return -1;
    }
    if (ga_input_open(&r->in, path, err, errlen) != 0) {
        free(r);
        return -1;
    }
    const char *p;
    size_t n;
    ga_input_peek(&r->in, &p, &n);
    if (fmt == GA_FORMAT_AUTO) {
        fmt = detect(p, n);
        if (fmt == GA_FORMAT_AUTO) {
            char what[200];
            describe_start(p, n, what, sizeof(what));
            if (n == 0)
                snprintf(err, errlen, "%s: empty file, not a trace", path);
            else if (p[0] == '{' || p[0] == '[')
                snprintf(err, errlen, "%s: JSON that is neither an Umpire replay log (\"kind\":\"replay\" lines) "
                                      "nor a Chrome trace with \"traceEvents\"; galloc reads snapshots as pickles "
                                      "(torch.cuda.memory._dump_snapshot)",
                         path);
            else
                snprintf(err, errlen, "%s:1: cannot tell the trace format from \"%s\": expected an RMM CSV "
                                      "header, a \"galloc-trace 1\" line, JSON or a pickle (use --format to force one)",
                         path, what);
            ga_reader_close(r);
            return -1;
        }
    }
    r->format = fmt;
    r->units = 1;
    int rc = fmt == GA_FORMAT_RMM      ? ga_read_rmm_open(r, err, errlen)
             : fmt == GA_FORMAT_TORCH  ? ga_read_torch_open(r, err, errlen)
             : fmt == GA_FORMAT_GALLOC ? ga_read_text_open(r, err, errlen)
             : fmt == GA_FORMAT_UMPIRE ? ga_read_umpire_open(r, err, errlen)
             : fmt == GA_FORMAT_KINETO ? ga_read_kineto_open(r, err, errlen)
                                       : (snprintf(err, errlen, "%s: no format given", path), -1);
    if (rc != 0) {
        ga_reader_close(r);
        return -1;
    }
    *out = r;
    return 0;
}

void ga_reader_close(ga_reader_t *r)
{
    if (r == NULL)
        return;
    if (r->ops != NULL && r->ops->close != NULL)
        r->ops->close(r);
    ga_input_close(&r->in);
    free(r);
}

size_t ga_reader_units(const ga_reader_t *r)
{
    return r->units;
}

const char *ga_reader_unit_label(const ga_reader_t *r, size_t unit)
{
    if (r->units <= 1 && r->format != GA_FORMAT_TORCH && r->format != GA_FORMAT_KINETO)
        return "";
    ga_reader_t *w = (ga_reader_t *)r; /* the label buffer is scratch space */
    if (r->format == GA_FORMAT_TORCH && r->impl != NULL) {
        snprintf(w->label, sizeof(w->label), "device %d", ga_read_torch_device(r, unit));
    } else if (r->format == GA_FORMAT_KINETO && r->impl != NULL) {
        snprintf(w->label, sizeof(w->label), "device %d", ga_read_kineto_device(r, unit));
    } else {
        snprintf(w->label, sizeof(w->label), "unit %zu", unit);
    }
    return w->label;
}

int ga_reader_begin(ga_reader_t *r, size_t unit, char *err, size_t errlen)
{
    if (unit >= r->units) {
        snprintf(err, errlen, "%s: no unit %zu (the file has %zu)", r->in.path, unit, r->units);
        return -1;
    }
    r->unit = unit;
    r->failed = false;
    memset(&r->notes, 0, sizeof(r->notes));
    if (r->ops->begin != NULL)
        return r->ops->begin(r, unit, err, errlen);
    return 0;
}

int ga_reader_next(ga_reader_t *r, ga_event_t *ev, char *err, size_t errlen)
{
    if (r->failed) {
        snprintf(err, errlen, "%s", r->failmsg);
        return -1;
    }
    int rc = r->ops->next(r, ev, err, errlen);
    if (rc < 0) {
        r->failed = true;
        snprintf(r->failmsg, sizeof(r->failmsg), "%s", err);
    }
    return rc;
}

ga_format_t ga_reader_format(const ga_reader_t *r)
{
    return r->format;
}

uint64_t ga_reader_device_memory(const ga_reader_t *r)
{
    return r->device_memory;
}

double ga_reader_progress(const ga_reader_t *r)
{
    return r->ops->progress != NULL ? r->ops->progress(r) : ga_input_progress(&r->in);
}

void ga_reader_notes(const ga_reader_t *r, ga_reader_notes_t *out)
{
    *out = r->notes;
}
