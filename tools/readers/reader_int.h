/*
 * reader_int.h: what the format readers (read_rmm.c, read_text.c,
 * read_torch.c, read_umpire.c, read_kineto.c) share with trace_reader.c.
 * Private to the readers.
 *
 * The format registry, modelled on FFmpeg's AVInputFormat list: each format
 * file defines one ga_format_desc_t (name, probe, open), formats.def lists
 * them, and trace_reader.c builds its table from that list, so detection,
 * --format NAME and the help texts all come from one place. An opened
 * format fills a ga_reader_t's ops and impl; trace_reader.c owns detection,
 * the common fields and the sticky error (after a -1 every further
 * ga_reader_next repeats the same message).
 */
#ifndef GA_TOOLS_READERS_READER_INT_H
#define GA_TOOLS_READERS_READER_INT_H

#include "tools/readers/input.h"
#include "tools/readers/trace_reader.h"

typedef struct ga_reader_ops {
    /* begin: position at unit (only for multi-unit formats; NULL = one unit). */
    int (*begin)(ga_reader_t *r, size_t unit, char *err, size_t errlen);
    /* next: as ga_reader_next. */
    int (*next)(ga_reader_t *r, ga_event_t *ev, char *err, size_t errlen);
    /* progress: as ga_reader_progress. */
    double (*progress)(const ga_reader_t *r);
    /* close: free impl (the input is closed by trace_reader.c). */
    void (*close)(ga_reader_t *r);
    /* unit_device: the device index a unit replays (its label is "device N");
     * NULL = units are not devices ("unit N", or "" for a single unit). */
    int (*unit_device)(const ga_reader_t *r, size_t unit);
} ga_reader_ops_t;

struct ga_reader {
    const ga_reader_ops_t *ops; /* the format's functions */
    ga_format_t format;         /* detected or forced */
    ga_input_t in;              /* the file */
    size_t units;               /* >= 1 */
    size_t unit;                /* the unit being read */
    uint64_t device_memory;     /* from the trace, 0 if not given */
    ga_reader_notes_t notes;    /* skipped entries, prologue events */
    bool forced;                /* the format was forced (--format), not detected */
    uint64_t events;            /* events the current unit has yielded */
    bool failed;                /* a next() returned -1: keep returning it */
    char failmsg[512];          /* the message of that failure */
    char label[32];             /* ga_reader_unit_label's buffer */
    void *impl;                 /* the format's own state */
};

/* How sure a probe is, from the first bytes of a file (FFmpeg's
 * AVPROBE_SCORE_*): the highest score wins, the registry's order breaks ties,
 * 0 is "not this format". */
#define GA_PROBE_MAGIC 100  /* a signature no other format starts with */
#define GA_PROBE_HEADER 75  /* a header line naming the format's own fields */
#define GA_PROBE_LINE 50    /* a first record of the format's shape */
#define GA_PROBE_MENTION 25 /* a key of the format somewhere in the first bytes */

/* One trace format (formats.def lists them). */
typedef struct ga_format_desc {
    const char *name;       /* --format NAME, and the "format" reports print */
    const char *aliases[3]; /* other names --format accepts, NULL-terminated */
    const char *what;       /* what it is, for the help texts */
    /* probe: how sure the first bytes p[0..n) of a file (n may be 0) are of
     * this format, 0 to GA_PROBE_MAGIC. */
    int (*probe)(const char *p, size_t n);
    /* open: called with r->in open and r->format set; sets ops and impl (and
     * units, device_memory where the format has them). 0, or -1 with err. */
    int (*open)(ga_reader_t *r, char *err, size_t errlen);
} ga_format_desc_t;

#define GA_FORMAT(id, name) extern const ga_format_desc_t ga_format_##name;
#include "tools/readers/formats.def"
#undef GA_FORMAT

/* ga_torch_reader_snapshot (read_torch.c): the parsed snapshot of an open
 * torch-format reader. */
const struct ga_torch_snapshot *ga_torch_reader_snapshot(const ga_reader_t *r);

/* ga_reader_first_line: the first line of p[0..n) that is neither blank nor
 * a comment ('#'), without leading blanks; *ln = 0 when there is none. */
void ga_reader_first_line(const char *p, size_t n, const char **l, size_t *ln);

/* ga_reader_head: that first line as a string, cut to len - 1 bytes (a probe
 * looks at a header's start); returns its length. */
size_t ga_reader_head(const char *p, size_t n, char *head, size_t len);

/* ga_reader_contains: whether p[0..n) holds the string lit. */
bool ga_reader_contains(const char *p, size_t n, const char *lit);

/* ga_reader_fields: split line[0..n) at sep (',' for CSV) or, with sep 0, at
 * runs of blanks; up to max fields, each trimmed of blanks. Returns the
 * field count (max + 1 means "more than max"). */
typedef struct ga_field {
    const char *p; /* start */
    size_t n;      /* length */
} ga_field_t;
size_t ga_reader_fields(const char *line, size_t n, char sep, ga_field_t *f, size_t max);

#endif /* GA_TOOLS_READERS_READER_INT_H */
