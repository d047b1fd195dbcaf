/*
 * reader_int.h: what the format readers (read_rmm.c, read_text.c,
 * read_torch.c, read_umpire.c, read_kineto.c) share with trace_reader.c. Private to tools/.
 *
 * Each format fills a ga_reader_t's ops and impl when opened; trace_reader.c
 * owns detection, the common fields and the sticky error (after a -1 every
 * further ga_reader_next repeats the same message).
 */
#ifndef GA_TOOLS_READER_INT_H
#define GA_TOOLS_READER_INT_H

#include "tools/input.h"
#include "tools/trace_reader.h"

typedef struct ga_reader_ops {
    /* begin: position at unit (only for multi-unit formats; NULL = one unit). */
    int (*begin)(ga_reader_t *r, size_t unit, char *err, size_t errlen);
    /* next: as ga_reader_next. */
    int (*next)(ga_reader_t *r, ga_event_t *ev, char *err, size_t errlen);
    /* progress: as ga_reader_progress. */
    double (*progress)(const ga_reader_t *r);
    /* close: free impl (the input is closed by trace_reader.c). */
    void (*close)(ga_reader_t *r);
} ga_reader_ops_t;

struct ga_reader {
    const ga_reader_ops_t *ops;  /* the format's functions */
    ga_format_t format;          /* detected or forced */
    ga_input_t in;               /* the file */
    size_t units;                /* >= 1 */
    size_t unit;                 /* the unit being read */
    uint64_t device_memory;      /* from the trace, 0 if not given */
    ga_reader_notes_t notes;     /* skipped entries, prologue events */
    bool failed;                 /* a next() returned -1: keep returning it */
    char failmsg[512];           /* the message of that failure */
    char label[32];              /* ga_reader_unit_label's buffer */
    void *impl;                  /* the format's own state */
};

/* Open functions, called with r->in open and r->format set. They set ops and
 * impl (and units, device_memory where the format has them). */
int ga_read_rmm_open(ga_reader_t *r, char *err, size_t errlen);
int ga_read_text_open(ga_reader_t *r, char *err, size_t errlen);
int ga_read_torch_open(ga_reader_t *r, char *err, size_t errlen);
int ga_read_umpire_open(ga_reader_t *r, char *err, size_t errlen);
int ga_read_kineto_open(ga_reader_t *r, char *err, size_t errlen);
/* ga_read_kineto_device: the CUDA device index of a Chrome trace's unit. */
int ga_read_kineto_device(const ga_reader_t *r, size_t unit);
/* ga_read_torch_device: the device index of a snapshot's unit. */
int ga_read_torch_device(const ga_reader_t *r, size_t unit);

/* ga_reader_fields: split line[0..n) at sep (',' for CSV) or, with sep 0, at
 * runs of blanks; up to max fields, each trimmed of blanks. Returns the
 * field count (max + 1 means "more than max"). */
typedef struct ga_field {
    const char *p; /* start */
    size_t n;      /* length */
} ga_field_t;
size_t ga_reader_fields(const char *line, size_t n, char sep, ga_field_t *f, size_t max);

#endif /* GA_TOOLS_READER_INT_H */
