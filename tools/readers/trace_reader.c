/*
 * trace_reader.c: the format registry's table (from formats.def), opening a
 * trace file, telling its format from the first bytes, and the calls common
 * to every format (see trace_reader.h).
 *
 * Detection asks every format's probe and takes the highest score (ties: the
 * registry's order). The probes: a pickle starts with PROTO (0x80) and a
 * protocol byte; galloc's text trace has "galloc-trace" as its first line
 * that is not blank or a comment; an RMM log's first line is its CSV header
 * with Action and Pointer columns; an Umpire replay log's first such line is
 * a JSON object with "kind":"replay" or with "category" and "name"; a Chrome trace is JSON naming
 * "traceEvents" in its first bytes (Kineto writes a few small header fields
 * before the events). Anything else is refused with what the first line holds.
 */
#include "tools/readers/reader_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The registry, indexed by ga_format_t. */
static const ga_format_desc_t *const formats[GA_FORMAT_END] = {
#define GA_FORMAT(id, name) [GA_FORMAT_##id] = &ga_format_##name,
#include "tools/readers/formats.def"
#undef GA_FORMAT
};

const char *ga_reader_format_name(ga_format_t f)
{
    if (f == GA_FORMAT_AUTO)
        return "auto";
    return (unsigned)f < GA_FORMAT_END ? formats[f]->name : "?";
}

bool ga_reader_format_parse(const char *s, ga_format_t *out)
{
    if (strcmp(s, "auto") == 0) {
        *out = GA_FORMAT_AUTO;
        return true;
    }
    for (unsigned f = GA_FORMAT_AUTO + 1; f < GA_FORMAT_END; f++) {
        bool match = strcmp(s, formats[f]->name) == 0;
        for (size_t k = 0; !match && formats[f]->aliases[k] != NULL; k++)
            match = strcmp(s, formats[f]->aliases[k]) == 0;
        if (match) {
            *out = (ga_format_t)f;
            return true;
        }
    }
    return false;
}

void ga_reader_format_list(char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (unsigned f = GA_FORMAT_AUTO + 1; f < GA_FORMAT_END && n < len; f++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", formats[f]->name);
}

void ga_reader_format_help(FILE *out)
{
    for (unsigned f = GA_FORMAT_AUTO + 1; f < GA_FORMAT_END; f++)
        fprintf(out, "  %-8s %s\n", formats[f]->name, formats[f]->what);
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

void ga_reader_first_line(const char *p, size_t n, const char **l, size_t *ln)
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

size_t ga_reader_head(const char *p, size_t n, char *head, size_t len)
{
    const char *l;
    size_t ln;
    ga_reader_first_line(p, n, &l, &ln);
    size_t hn = ln < len - 1 ? ln : len - 1;
    memcpy(head, l, hn);
    head[hn] = '\0';
    return hn;
}

/* memmem is a GNU extension. */
bool ga_reader_contains(const char *p, size_t n, const char *lit)
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

/* The format whose probe is surest of p[0..n), AUTO when none is. */
static ga_format_t detect(const char *p, size_t n)
{
    ga_format_t best = GA_FORMAT_AUTO;
    int best_score = 0;
    for (unsigned f = GA_FORMAT_AUTO + 1; f < GA_FORMAT_END; f++) {
        int score = formats[f]->probe(p, n);
        if (score > best_score) {
            best = (ga_format_t)f;
            best_score = score;
        }
    }
    return best;
}

/* A short printable rendering of the first line, for the refusal message. */
static void describe_start(const char *p, size_t n, char *out, size_t len)
{
    const char *l;
    size_t ln;
    ga_reader_first_line(p, n, &l, &ln);
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
    r->forced = fmt != GA_FORMAT_AUTO;
    if (fmt == GA_FORMAT_AUTO) {
        fmt = detect(p, n);
        if (fmt == GA_FORMAT_AUTO) {
            char what[200];
            describe_start(p, n, what, sizeof(what));
            if (n == 0)
                snprintf(err, errlen, "%s: empty file, not a trace", path);
            else if (p[0] == '{' || p[0] == '[')
                snprintf(err, errlen,
                         "%s: JSON that is neither an Umpire replay log (lines with \"kind\":\"replay\" "
                         "or \"category\" and \"name\") nor a Chrome trace with \"traceEvents\"; "
                         "galloc reads snapshots as pickles (torch.cuda.memory._dump_snapshot)",
                         path);
            else
                snprintf(err, errlen,
                         "%s:1: cannot tell the trace format from \"%s\": expected an RMM CSV "
                         "header, a \"galloc-trace 1\" line, JSON or a pickle (use --format to force one)",
                         path, what);
            ga_reader_close(r);
            return -1;
        }
    }
    r->format = fmt;
    r->units = 1;
    int rc = fmt > GA_FORMAT_AUTO && fmt < GA_FORMAT_END ? formats[fmt]->open(r, err, errlen)
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
    ga_reader_t *w = (ga_reader_t *)r; /* the label buffer is scratch space */
    if (r->ops->unit_device != NULL)
        snprintf(w->label, sizeof(w->label), "device %d", r->ops->unit_device(r, unit));
    else if (r->units > 1)
        snprintf(w->label, sizeof(w->label), "unit %zu", unit);
    else
        return "";
    return w->label;
}

int ga_reader_unit_device(const ga_reader_t *r, size_t unit)
{
    return r->ops->unit_device != NULL ? r->ops->unit_device(r, unit) : 0;
}

int ga_reader_begin(ga_reader_t *r, size_t unit, char *err, size_t errlen)
{
    if (unit >= r->units) {
        snprintf(err, errlen, "%s: no unit %zu (the file has %zu)", r->in.path, unit, r->units);
        return -1;
    }
    r->unit = unit;
    r->events = 0;
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
    if (rc > 0)
        r->events++;
    if (rc == 0 && r->events == 0 && r->forced) {
        /* A forced format that finds nothing was most likely the wrong one:
         * replaying nothing would report that the trace fits. */
        const char *name = ga_reader_format_name(r->format);
        snprintf(err, errlen,
                 "%s%s%s: no events found reading it as --format %s (%llu entries skipped): "
                 "not a trace of that format, or one without allocations",
                 r->in.path, r->units > 1 ? ": " : "", r->units > 1 ? ga_reader_unit_label(r, r->unit) : "", name,
                 (unsigned long long)r->notes.skipped);
        rc = -1;
    }
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

const struct ga_torch_snapshot *ga_reader_snapshot(const ga_reader_t *r)
{
    return r->format == GA_FORMAT_TORCH ? ga_torch_reader_snapshot(r) : NULL;
}

double ga_reader_progress(const ga_reader_t *r)
{
    return r->ops->progress != NULL ? r->ops->progress(r) : ga_input_progress(&r->in);
}

void ga_reader_notes(const ga_reader_t *r, ga_reader_notes_t *out)
{
    *out = r->notes;
}
