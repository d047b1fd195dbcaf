/*
 * compare.h: `galloc replay --compare A B`: two records of one job (before
 * and after a code change, or two ranks) replayed each under its own
 * settings with owners, and the sites whose bytes at the reserved peak (and
 * at the allocated peak, in JSON) grew or shrank most, matched by site name
 * (docs/owners.md, "Comparing two records").
 *
 * compare.c loads both files, pairs their units (devices) and replays each
 * pair; compare_diff.c matches two moments' sites and phases; compare_out.c
 * writes the text and the JSON document. Not thread-safe (the command's own
 * state); the diff functions use only their arguments.
 */
#ifndef GA_TOOLS_REPLAY_COMPARE_H
#define GA_TOOLS_REPLAY_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tools/engine/owners.h"
#include "tools/engine/replay.h"
#include "tools/job/job.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What --compare takes from galloc replay's command line. */
typedef struct ga_compare_opts {
    const char *backend; /* --backend, NULL: "sim" */
    const char *conf;    /* --conf given once: both replay it; NULL: each its own run (recorded settings,
                              else PyTorch's defaults) */
    bool no_recorded;    /* --no-recorded: PyTorch's defaults rather than a snapshot's settings */
    ga_job_opts_t job;   /* how the files are read (--format, --device-memory, --reserve, --no-seed) */
    bool env;            /* --env */
    bool no_sleep;       /* --no-sleep */
    bool json;           /* --json: one document */
    size_t top;          /* --top: sites in the text table */
} ga_compare_opts_t;

/*
 * ga_compare_main: compare the records at paths a and b, writing the report
 * to out and problems to stderr. Returns the exit code: GA_EXIT_OK when both
 * replays of every pair of devices ran (an OOM in either is reported, not an
 * error), GA_EXIT_USAGE when a file cannot be read, a configuration cannot be
 * made, no device is in both files, or host memory ran out.
 */
int ga_compare_main(const ga_compare_opts_t *o, const char *a, const char *b, FILE *out);

/* One site in both records (0 in the one it is not in). */
typedef struct ga_compare_site {
    const char *name;         /* the site's key (the records' own strings) */
    int64_t a_bytes, b_bytes; /* its live bytes at the moment in A and in B */
    int64_t a_blocks, b_blocks;
} ga_compare_site_t;

/* One moment (a peak) of two records, side by side. */
typedef struct ga_compare_moment {
    bool a_valid, b_valid;    /* the moment happened in A, in B */
    ga_compare_site_t *sites; /* every site live in either, most change (|B - A|) first, then
                                              the larger of its two figures, then by name */
    size_t n_sites;
    int64_t a_phase[GA_PHASES], b_phase[GA_PHASES]; /* bytes per phase (ga_phase_t) */
    int64_t a_total, b_total;                       /* the sites' bytes: allocated then */
    int64_t a_reserved, b_reserved;                 /* reserved bytes then */
    uint64_t a_event, b_event; /* the event after which it was taken (GA_OWNERS_BEFORE_EVENTS: before
                                              the first) */
} ga_compare_moment_t;

/*
 * ga_compare_moment: the sites of ma (a moment of A's owners wa) and mb (of
 * B's wb) matched by name into *out (release with ga_compare_moment_free).
 * An invalid moment, or NULL owners, contributes nothing. 0, or -1 when
 * host memory ran out.
 */
int ga_compare_moment(const ga_owners_t *wa, const ga_owners_moment_t *ma, const ga_owners_t *wb,
                      const ga_owners_moment_t *mb, ga_compare_moment_t *out);
void ga_compare_moment_free(ga_compare_moment_t *m);

/* One side of a compared pair, for the report. */
typedef struct ga_compare_side {
    const char *path;            /* the file, as given */
    const ga_job_unit_t *u;      /* the unit replayed */
    const ga_replay_column_t *c; /* its replay, with owners */
} ga_compare_side_t;

/* A compared pair: both sides and their two moments. */
typedef struct ga_compare_pair {
    ga_compare_side_t a, b;
    ga_compare_moment_t reserved;  /* at each one's reserved peak */
    ga_compare_moment_t allocated; /* at each one's allocated peak */
} ga_compare_pair_t;

/* ga_compare_text (compare_out.c): one pair as text: both sides' peaks, the
 * top sites at the reserved peak (top rows) by change, the phases' change
 * and the totals. */
void ga_compare_text(FILE *out, const ga_compare_pair_t *p, size_t top);

/*
 * ga_compare_json (compare_out.c): the whole --json document: {"tool":
 * "galloc replay", "version": 2, "backend", "compare": the first pair (null
 * when none), "other_devices": the other pairs, "skipped": the devices in
 * one file only, "error": why no pair was compared (null)}. A pair is {"a":
 * side, "b": side, "moments": {"peak_reserved": ..., "peak_allocated": ...}}
 * with every site (docs/owners.md has the schema).
 */
void ga_compare_json(FILE *out, const char *backend, const ga_compare_pair_t *const *pairs, size_t n,
                     const char *const *skipped, size_t n_skipped, const char *error);

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_REPLAY_COMPARE_H */
