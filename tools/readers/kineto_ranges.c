/*
 * kineto_ranges.c: the profiler ranges that enclose a CUDA memory event in a
 * Kineto trace, handed out as the allocation's stack (ga_event_t.stack,
 * GA_STACK_RANGES).
 *
 * Kept: complete events ("ph": "X" with "ts", a numeric "dur" >= 0 and an
 * integer pid and tid, or a string of digits) of the categories "cpu_op"
 * ("Operator" before PyTorch 1.11: aten ops, autograd nodes),
 * "user_annotation" (record_function, ProfilerStep#N, optimizer steps) and
 * "python_function" (with_stack=True); not the CUDA runtime's calls, nor
 * anything on a GPU timeline ("kernel", "gpu_user_annotation", ...:
 * kineto_event.c says why). The rules:
 *  - a range encloses an event on the same pid and tid whose ts is in
 *    [ts, ts + dur], both ends included (a zero-length range holds its own
 *    instant), compared as the integer nanoseconds the trace wrote;
 *  - innermost first: the later start is inner; of two starting together,
 *    the shorter; of two identical, the later in the file (Kineto writes a
 *    parent before its children since PyTorch 1.13; older traces wrote the
 *    children first, and an identical pair of theirs comes out reversed);
 *  - ranges need not nest: one that partially overlaps another is in the
 *    stack whenever it holds the event's time, placed by the same rule (no
 *    range of the real traces does that);
 *  - at most GA_KINETO_MAX_DEPTH (1024) ranges a stack: deeper, the outermost
 *    are left out;
 *  - no enclosing range, or a memory event without an integer pid and tid:
 *    GA_STACK_NONE.
 * A python_function range "path/train.py(35): step" is a frame with file
 * "path/train.py", line 35, name "step"; every other range a frame with its
 * name only. A frame's key is its name's index + 1 in the names table.
 * Names longer than GA_JSON_STR_MAX (1023) bytes are cut there.
 *
 * Memory: 24 bytes per range kept while scanning (those of threads without a
 * CUDA memory event are freed after it); each distinct name once, plus 16
 * bytes in the table, 16 for its split and 32 to 64 in the index; about 100
 * bytes per thread; after the scan, 4 bytes per range up to
 * GA_KINETO_MAX_DEPTH for each thread with memory events (its sweep). Every
 * growth is first offered to the reader's bound (ga_hold_t).
 *
 * Layout: one array of ranges per (pid, tid) timeline (24 bytes a range,
 * grown by doubling), found through an index by hash of (pid, tid); names
 * interned once each (intern.h), a python_function name's split into file,
 * line and function kept beside it. After the scan each timeline's ranges
 * are sorted outermost first: by start, then the longer first, then file
 * order; those of a timeline with no CUDA memory event are dropped.
 *
 * The sweep: a unit's memory events come in time order, so each timeline
 * keeps the ranges open at the last event's time (`open`, outermost first).
 * For the next event at t it drops the open ranges that ended before t and
 * opens those that start at or before t and end at or after it, in sorted
 * order, so `open` stays sorted and its reverse is the stack, innermost
 * first. Each range is opened at most once a unit; a drop scans `open`,
 * which is at most GA_KINETO_MAX_DEPTH long (real traces: under 20), so an
 * event costs O(depth) plus the ranges it passes. Nothing is allocated after
 * ga_kineto_ranges_finish.
 */
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"
#include "tools/readers/kineto_int.h"

#define FIRST_RANGES 16 /* a timeline's first array: few threads, most with many ranges */
#define FIRST_THREADS 8
#define FIRST_NAMES 64

/* An entry of the timeline index. */
typedef struct thread_entry {
    uintptr_t key; /* ga_addrmap_hash_key(hash of pid, tid) */
    uint32_t idx;  /* in rs->t */
} thread_entry_t;

typedef struct thread_lookup {
    const ga_kineto_ranges_t *rs;
    int64_t pid, tid;
} thread_lookup_t;

static bool thread_matches(const void *entry, const void *ctx)
{
    const thread_entry_t *e = entry;
    const thread_lookup_t *l = ctx;
    return l->rs->t[e->idx].pid == l->pid && l->rs->t[e->idx].tid == l->tid;
}

void ga_kineto_ranges_init(ga_kineto_ranges_t *rs)
{
    memset(rs, 0, sizeof(*rs));
    ga_addrmap_init(&rs->by_thread, sizeof(thread_entry_t));
    ga_intern_init(&rs->names);
}

void ga_kineto_ranges_free(ga_kineto_ranges_t *rs)
{
    for (size_t i = 0; i < rs->n; i++) {
        free(rs->t[i].r);
        free(rs->t[i].open);
    }
    free(rs->t);
    free(rs->py);
    ga_addrmap_destroy(&rs->by_thread);
    ga_intern_free(&rs->names);
    ga_kineto_ranges_init(rs);
}

/* The bytes an array of cap elements of size elem grows by when it is full
 * (ga_grow's doubling from first), 0 when it is not. */
static uint64_t growth(size_t used, size_t cap, size_t elem, size_t first)
{
    if (used < cap)
        return 0;
    return (uint64_t)(cap ? cap : first) * elem;
}

int ga_kineto_thread(ga_kineto_ranges_t *rs, int64_t pid, int64_t tid, const ga_hold_t *hold, uint32_t *out)
{
    uintptr_t key =
        ga_addrmap_hash_key(ga_addrmap_hash_combine(ga_addrmap_hash_combine(3, (uint64_t)pid), (uint64_t)tid));
    thread_lookup_t l = {rs, pid, tid};
    const thread_entry_t *e = ga_addrmap_find_match(&rs->by_thread, key, thread_matches, &l);
    if (e != NULL) {
        *out = e->idx;
        return 0;
    }
    if (rs->n >= GA_KINETO_NO_THREAD - 1)
        return GA_HOLD_LIMIT;
    uint64_t t_more = growth(rs->n, rs->cap, sizeof(*rs->t), FIRST_THREADS);
    uint64_t map_more = ga_hold_map_more(&rs->by_thread);
    if (ga_hold_ask(hold, t_more + map_more) != 0)
        return GA_HOLD_REFUSED;
    size_t cap = rs->cap;
    ga_kineto_thread_t *t = ga_grow(rs->t, &cap, rs->n, sizeof(*t), FIRST_THREADS);
    if (t == NULL)
        return GA_HOLD_NOMEM;
    rs->t = t;
    rs->cap = cap;
    rs->bytes += t_more;
    size_t before = rs->by_thread.cap;
    if (ga_addrmap_reserve(&rs->by_thread, 1) != GALLOC_OK)
        return GA_HOLD_NOMEM;
    rs->bytes += (rs->by_thread.cap - before) * rs->by_thread.entry_size;
    rs->t[rs->n] = (ga_kineto_thread_t){.pid = pid, .tid = tid};
    thread_entry_t *ne = ga_addrmap_insert(&rs->by_thread, key);
    ne->idx = (uint32_t)rs->n;
    *out = (uint32_t)rs->n++;
    return 0;
}

/* The split of a python_function name "FILE(LINE): NAME" (the profiler's
 * "{filename}({line}): {function}"): the last "(digits): " with text on both
 * sides. A path may hold parentheses, a function name cannot, so the last
 * one is the separator. Other shapes ("<built-in method ...>", "nn.Module:
 * Linear_0") are names only. */
static ga_kineto_pyname_t py_split(const char *s, size_t len)
{
    ga_kineto_pyname_t p = {0, 0, 0};
    for (size_t open = len; open-- > 1;) {
        if (s[open] != '(')
            continue;
        size_t i = open + 1;
        int64_t line = 0;
        while (i < len && s[i] >= '0' && s[i] <= '9' && i - open <= 18)
            line = line * 10 + (s[i++] - '0');
        if (i == open + 1 || i + 3 >= len || s[i] != ')' || s[i + 1] != ':' || s[i + 2] != ' ' ||
            (s[i] >= '0' && s[i] <= '9'))
            continue;
        p.file_len = (uint32_t)open;
        p.func_off = (uint32_t)(i + 3);
        p.line = line;
        return p;
    }
    return p;
}

int ga_kineto_range_add(ga_kineto_ranges_t *rs, uint32_t thread, int64_t start, int64_t dur, const char *name,
                        size_t len, bool python, const ga_hold_t *hold)
{
    ga_kineto_thread_t *th = &rs->t[thread];
    if (th->n >= UINT32_MAX)
        return GA_HOLD_LIMIT;
    uint64_t more = growth(th->n, th->cap, sizeof(*th->r), FIRST_RANGES);
    if (ga_hold_ask(hold, more) != 0)
        return GA_HOLD_REFUSED;
    size_t cap = th->cap;
    ga_kineto_range_t *r = ga_grow(th->r, &cap, th->n, sizeof(*r), FIRST_RANGES);
    if (r == NULL)
        return GA_HOLD_NOMEM;
    th->r = r;
    th->cap = cap;
    rs->bytes += more;
    /* Room for a new name's split first, so that interning is the last step that can fail. */
    uint64_t py_more = growth(rs->names.n, rs->py_cap, sizeof(*rs->py), FIRST_NAMES);
    if (ga_hold_ask(hold, py_more) != 0)
        return GA_HOLD_REFUSED;
    size_t py_cap = rs->py_cap;
    ga_kineto_pyname_t *py = ga_grow(rs->py, &py_cap, rs->names.n, sizeof(*py), FIRST_NAMES);
    if (py == NULL)
        return GA_HOLD_NOMEM;
    rs->py = py;
    rs->py_cap = py_cap;
    rs->bytes += py_more;
    uint32_t idx;
    bool added;
    int rc = ga_intern_add(&rs->names, name, len, python ? GA_KINETO_TAG_PYTHON : 0, hold, &idx, &added);
    if (rc != 0)
        return rc;
    if (added)
        rs->py[idx] = python ? py_split(name, len) : (ga_kineto_pyname_t){0, 0, 0};
    /* dur >= 0 (the scan keeps no other), so INT64_MAX - dur cannot overflow; start may be negative. */
    int64_t end = start > INT64_MAX - dur ? INT64_MAX : start + dur;
    th->r[th->n] = (ga_kineto_range_t){.start = start, .end = end, .name = idx, .seq = (uint32_t)th->n};
    th->n++;
    rs->count++;
    return 0;
}

/* Outermost first: the earlier start, then the later end, then file order. */
static int outer_first(const void *a, const void *b)
{
    const ga_kineto_range_t *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int ga_kineto_ranges_finish(ga_kineto_ranges_t *rs, const ga_hold_t *hold)
{
    for (size_t i = 0; i < rs->n; i++) {
        ga_kineto_thread_t *th = &rs->t[i];
        if (!th->memory || th->n == 0) { /* no event asks for this timeline's ranges */
            rs->bytes -= th->cap * sizeof(*th->r);
            rs->count -= th->n;
            free(th->r);
            th->r = NULL;
            th->n = th->cap = 0;
            continue;
        }
        qsort(th->r, th->n, sizeof(*th->r), outer_first);
        size_t cap = th->n < GA_KINETO_MAX_DEPTH ? th->n : GA_KINETO_MAX_DEPTH;
        if (ga_hold_ask(hold, cap * sizeof(*th->open)) != 0)
            return GA_HOLD_REFUSED;
        th->open = malloc(cap * sizeof(*th->open));
        if (th->open == NULL)
            return GA_HOLD_NOMEM;
        th->open_cap = cap;
        rs->bytes += cap * sizeof(*th->open);
    }
    ga_kineto_ranges_rewind(rs);
    return 0;
}

void ga_kineto_ranges_rewind(ga_kineto_ranges_t *rs)
{
    for (size_t i = 0; i < rs->n; i++) {
        rs->t[i].depth = 0;
        rs->t[i].next = 0;
        rs->t[i].at = INT64_MIN;
    }
}

/* Move th's sweep to time t: drop what ended before it, open what encloses it. */
static void sweep(ga_kineto_thread_t *th, int64_t t)
{
    if (t < th->at) { /* not in time order (cannot happen within a unit): start over */
        th->depth = 0;
        th->next = 0;
    }
    th->at = t;
    size_t w = 0;
    for (size_t i = 0; i < th->depth; i++)
        if (th->r[th->open[i]].end >= t)
            th->open[w++] = th->open[i];
    th->depth = w;
    for (; th->next < th->n && th->r[th->next].start <= t; th->next++) {
        if (th->r[th->next].end < t)
            continue;                    /* over before t: it encloses no later event either */
        if (th->depth == th->open_cap) { /* deeper than GA_KINETO_MAX_DEPTH: drop the outermost */
            memmove(th->open, th->open + 1, (th->depth - 1) * sizeof(*th->open));
            th->depth--;
        }
        th->open[th->depth++] = (uint32_t)th->next;
    }
}

/* Frame i of a stack: the open range depth - 1 - i (innermost first). */
static void range_frame(const void *data, size_t i, ga_frame_t *out)
{
    const ga_kineto_view_t *v = data;
    memset(out, 0, sizeof(*out));
    if (i >= v->t->depth)
        return;
    uint32_t name = v->t->r[v->t->open[v->t->depth - 1 - i]].name;
    size_t len;
    const char *s = ga_intern_get(&v->rs->names, name, &len);
    const ga_kineto_pyname_t *py = &v->rs->py[name];
    if (py->file_len == 0) {
        out->name = s;
        out->name_len = len;
        return;
    }
    out->file = s;
    out->file_len = py->file_len;
    out->line = py->line;
    out->name = s + py->func_off;
    out->name_len = len - py->func_off;
}

/* Frame i's identity: its interned name's index + 1 (the name decides the frame). */
static uintptr_t range_key(const void *data, size_t i)
{
    const ga_kineto_view_t *v = data;
    if (i >= v->t->depth)
        return 0;
    return (uintptr_t)v->t->r[v->t->open[v->t->depth - 1 - i]].name + 1;
}

void ga_kineto_ranges_stack(ga_kineto_ranges_t *rs, uint32_t thread, int64_t t, ga_kineto_view_t *view, ga_stack_t *out)
{
    memset(out, 0, sizeof(*out));
    if (thread == GA_KINETO_NO_THREAD || thread >= rs->n)
        return;
    ga_kineto_thread_t *th = &rs->t[thread];
    if (th->n == 0)
        return;
    sweep(th, t);
    if (th->depth == 0)
        return;
    view->rs = rs;
    view->t = th;
    *out = (ga_stack_t){.kind = GA_STACK_RANGES, .n = th->depth, .data = view, .frame = range_frame, .key = range_key};
}
