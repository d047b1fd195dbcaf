/*
 * kineto_int.h: what read_kineto.c shares with kineto_match.c (the older
 * layout's frees) and kineto_ranges.c (the ranges that enclose a memory
 * event). Private to the readers; not thread-safe (one reader per thread).
 */
#ifndef GA_TOOLS_READERS_KINETO_INT_H
#define GA_TOOLS_READERS_KINETO_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/readers/intern.h"
#include "tools/readers/json_scan.h"
#include "tools/readers/trace_reader.h"

#define GA_KINETO_MAX_DEVICES 1024     /* Device Id above this is refused as garbled */
#define GA_KINETO_NO_THREAD UINT32_MAX /* a memory event whose pid or tid is not an integer */

/* One kept CUDA [memory] event (40 bytes). */
typedef struct ga_kineto_ev {
    int64_t ts;      /* nanoseconds: ts as traced (microseconds, 3 decimals), times 1000 */
    uint64_t addr;   /* Addr (the older layout: an id from ga_kineto_match_by_size) */
    int64_t bytes;   /* Bytes: > 0 allocation, < 0 free */
    uint32_t index;  /* position in traceEvents (saturates at UINT32_MAX) */
    uint32_t thread; /* its (pid, tid) in the ranges' threads, GA_KINETO_NO_THREAD if none */
    uint16_t dev;    /* Device Id */
    bool skip;       /* a free matched to no live allocation (older layout): not replayed */
} ga_kineto_ev_t;

/* A trace event's category, for its ranges (kineto_event.c says which). */
#define GA_KINETO_CAT_OTHER 0  /* not kept, or no "cat" */
#define GA_KINETO_CAT_RANGE 1  /* an operator or annotation range: its name only */
#define GA_KINETO_CAT_PYTHON 2 /* python_function: "FILE(LINE): NAME" */

/* The members of one trace event the reader uses (kineto_event.c). */
typedef struct ga_kineto_fields {
    bool memory;   /* name is "[memory]" */
    bool complete; /* ph is "X" (a complete event: ts and dur) */
    int cat;       /* GA_KINETO_CAT_* */
    bool has_ts, has_dur, has_pid, has_tid, has_addr, has_bytes, has_type, has_id, has_ta, has_tr;
    bool bad_addr;                         /* Addr is there but not an integer (a missing one is the older layout) */
    int64_t ts, dur;                       /* nanoseconds; dur >= 0 when has_dur */
    int64_t pid, tid;                      /* the thread */
    int64_t addr, bytes, type, id, ta, tr; /* args; ta, tr: Total Allocated, Total Reserved */
    size_t name_len;                       /* name[0..name_len): the event's name (cut at GA_JSON_STR_MAX) */
    char name[GA_JSON_STR_MAX + 1];        /* last: not cleared per event */
} ga_kineto_fields_t;

/* ga_kineto_event: the members of a trace event object (just opened) into
 * *f. 0 at the object's end, -1 on a scan error (j->msg says why). */
int ga_kineto_event(ga_json_t *j, ga_kineto_fields_t *f);

/* ga_kineto_int_member: the value of a member just keyed: 0 with *out and
 * *has set, 1 if not an integer (skipped, left unset), -1 on a scan error. */
int ga_kineto_int_member(ga_json_t *j, int64_t *out, bool *has);

/* ga_kineto_match_by_size: for a trace without Addr, ev[0..n) in time order:
 * set each allocation's addr to a unique id (its place + 1) and each free's
 * to the id of the most recent allocation of the same size on the same
 * device still live (LIFO); a free with none gets skip and counts in
 * unmatched[dev] (GA_KINETO_MAX_DEVICES entries). Returns 0, or -1 out of host memory
 * (ev untouched). */
int ga_kineto_match_by_size(ga_kineto_ev_t *ev, size_t n, uint64_t *unmatched);

/* The ranges (kineto_ranges.c: which are kept, the matching rules, the memory). */

#define GA_KINETO_MAX_DEPTH 1024 /* ranges in one stack: deeper, the outermost are dropped */
#define GA_KINETO_TAG_PYTHON 1u  /* the intern tag of a python_function range's name */

/* One kept range (24 bytes). */
typedef struct ga_kineto_range {
    int64_t start, end; /* nanoseconds: ts and ts + dur (saturated) */
    uint32_t name;      /* in the names table */
    uint32_t seq;       /* its place among its thread's ranges in file order (ties) */
} ga_kineto_range_t;

/* One (pid, tid) timeline. */
typedef struct ga_kineto_thread {
    int64_t pid, tid;       /* as traced (integers, or strings of decimal digits) */
    ga_kineto_range_t *r;   /* its ranges: in file order while scanning, then sorted (finish) */
    size_t n, cap;          /* ranges kept and allocated */
    uint32_t *open;         /* the sweep's ranges enclosing its time, outermost first (indexes in r) */
    size_t depth, open_cap; /* how many, and room for min(n, GA_KINETO_MAX_DEPTH) */
    size_t next;            /* the sweep: first range (sorted) not yet reached */
    int64_t at;             /* the sweep's time */
    bool memory;            /* a CUDA memory event is on this thread */
} ga_kineto_thread_t;

/* What a python_function name splits into: "FILE(LINE): NAME". */
typedef struct ga_kineto_pyname {
    uint32_t file_len; /* FILE's bytes; 0: not of that form (the name is the whole text) */
    uint32_t func_off; /* NAME's offset in the text */
    int64_t line;      /* LINE */
} ga_kineto_pyname_t;

typedef struct ga_kineto_ranges {
    ga_kineto_thread_t *t;  /* the threads, in the order first seen */
    size_t n, cap;          /* threads and allocated entries */
    ga_addrmap_t by_thread; /* hash of (pid, tid) -> index in t (an index by hash) */
    ga_intern_t names;      /* range names, tagged GA_KINETO_TAG_PYTHON or 0 */
    ga_kineto_pyname_t *py; /* per name: its split (file_len 0 for other ranges) */
    size_t py_cap;          /* allocated entries of py */
    size_t bytes;           /* host memory of t, the ranges, open arrays, by_thread and py */
    uint64_t count;         /* ranges kept */
} ga_kineto_ranges_t;

/* What a stack's data points to: the thread whose open ranges it is. */
typedef struct ga_kineto_view {
    const ga_kineto_ranges_t *rs;
    const ga_kineto_thread_t *t;
} ga_kineto_view_t;

void ga_kineto_ranges_init(ga_kineto_ranges_t *rs);
void ga_kineto_ranges_free(ga_kineto_ranges_t *rs);

/* ga_kineto_ranges_held: what the ranges hold (threads, ranges, names). */
static inline size_t ga_kineto_ranges_held(const ga_kineto_ranges_t *rs)
{
    return rs->bytes + ga_intern_bytes(&rs->names);
}

/* ga_kineto_thread: the index of (pid, tid), added if new. 0 or GA_HOLD_*. */
int ga_kineto_thread(ga_kineto_ranges_t *rs, int64_t pid, int64_t tid, const ga_hold_t *hold, uint32_t *out);

/* ga_kineto_range_add: keep the range [start, start + dur] named
 * name[0..len) (python: a python_function range) on thread. 0 or GA_HOLD_*,
 * nothing kept then. */
int ga_kineto_range_add(ga_kineto_ranges_t *rs, uint32_t thread, int64_t start, int64_t dur, const char *name,
                        size_t len, bool python, const ga_hold_t *hold);

/* ga_kineto_ranges_finish: after the scan: drop the ranges of threads without
 * memory events, sort each thread's, make room for its sweep. 0 or GA_HOLD_*. */
int ga_kineto_ranges_finish(ga_kineto_ranges_t *rs, const ga_hold_t *hold);

/* ga_kineto_ranges_rewind: every sweep back to the start (a unit begins). */
void ga_kineto_ranges_rewind(ga_kineto_ranges_t *rs);

/* ga_kineto_ranges_stack: the ranges of thread enclosing time t (t not
 * below the thread's previous call since the rewind), innermost first, into
 * *out (GA_STACK_NONE when none, or thread is GA_KINETO_NO_THREAD); view is
 * its data and must live as long as it. */
void ga_kineto_ranges_stack(ga_kineto_ranges_t *rs, uint32_t thread, int64_t t, ga_kineto_view_t *view,
                            ga_stack_t *out);

#endif /* GA_TOOLS_READERS_KINETO_INT_H */
