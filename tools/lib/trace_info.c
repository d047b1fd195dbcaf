/*
 * trace_info.c: galloc_tools_trace_info, a trace file summarized through the
 * command's reader registry (tools/readers), so galloc.load_trace in Python
 * reads every format galloc replay reads, with the same detection and the
 * same error messages. It counts events per unit; nothing is replayed.
 */
#include <galloc/galloc_tools.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/readers/trace_reader.h"

/* s as a JSON string; labels and paths are the only strings written. */
static void jstr(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f)
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

typedef struct counts {
    uint64_t events, allocs, frees, ooms, annotations, other; /* per ga_event_kind_t group */
} counts_t;

static void count(counts_t *c, const ga_event_t *ev)
{
    c->events++;
    switch (ev->kind) {
    case GA_EV_ALLOC: c->allocs++; break;
    case GA_EV_FREE:
    case GA_EV_FREE_PENDING: c->frees++; break;
    case GA_EV_OOM: c->ooms++; break;
    case GA_EV_ANNOTATE: c->annotations++; break;
    default: c->other++; break;
    }
}

/* The summary of an open reader into out. 0, or -1 with err set. */
static int summarize(ga_reader_t *r, const char *path, FILE *out, char *err, size_t errlen)
{
    fputs("{\"file\": ", out);
    jstr(out, path);
    fputs(", \"format\": ", out);
    jstr(out, ga_reader_format_name(ga_reader_format(r)));
    fprintf(out, ", \"device_memory\": %" PRIu64 ", \"units\": [", ga_reader_device_memory(r));
    for (size_t u = 0; u < ga_reader_units(r); u++) {
        if (u > 0 && ga_reader_begin(r, u, err, errlen) != 0)
            return -1;
        counts_t c = {0};
        ga_event_t ev;
        int rc;
        while ((rc = ga_reader_next(r, &ev, err, errlen)) == 1)
            count(&c, &ev);
        if (rc < 0)
            return -1;
        fprintf(out, "%s{\"label\": ", u ? ", " : "");
        jstr(out, ga_reader_unit_label(r, u));
        fprintf(out,
                ", \"events\": %" PRIu64 ", \"allocs\": %" PRIu64 ", \"frees\": %" PRIu64 ", \"ooms\": %" PRIu64
                ", \"annotations\": %" PRIu64 ", \"other\": %" PRIu64 "}",
                c.events, c.allocs, c.frees, c.ooms, c.annotations, c.other);
    }
    fputs("]}\n", out);
    return 0;
}

int galloc_tools_trace_info(const char *path, const char *format, char **json, char **messages)
{
    if (json == NULL || messages == NULL)
        return -1;
    *json = NULL;
    *messages = NULL;
    char err[1024] = "";
    ga_format_t fmt = GA_FORMAT_AUTO;
    int status = 2;
    ga_reader_t *r = NULL;
    if (path == NULL) {
        snprintf(err, sizeof(err), "no trace file given");
    } else if (format != NULL && !ga_reader_format_parse(format, &fmt)) {
        char names[128];
        ga_reader_format_list(names, sizeof(names));
        snprintf(err, sizeof(err), "unknown format \"%s\" (auto, %s)", format, names);
    } else if (ga_reader_open(path, fmt, &r, err, sizeof(err)) == 0) {
        size_t len = 0;
        FILE *out = open_memstream(json, &len);
        if (out == NULL) {
            ga_reader_close(r);
            return -1;
        }
        int rc = summarize(r, path, out, err, sizeof(err));
        ga_reader_close(r);
        if (fclose(out) != 0 || *json == NULL) {
            free(*json);
            *json = NULL;
            return -1;
        }
        if (rc == 0) {
            status = 0;
            err[0] = '\0';
        } else {
            free(*json);
            *json = NULL;
        }
    }
    *messages = strdup(err);
    if (*messages == NULL) {
        free(*json);
        *json = NULL;
        return -1;
    }
    return status;
}
