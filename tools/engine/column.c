/*
 * column.c: a column (one configuration of one unit) from one replay, or,
 * under a cap the trace shows only as a range, from the parts of that range
 * (replay.h).
 *
 * Outcomes over the range: the replay at each end of [low, high) is probed;
 * where two probes differ (in how many allocations fail, or where the first
 * fails) the caps between are bisected, in steps of GA_ENGINE_CAP_STEP, down
 * to the step where the outcome changes. More memory is assumed never to
 * hurt, so between two equal probes the outcome is the same. Each part is
 * one outcome over a sub-range; the column's figures are those of a replay
 * at the middle of the widest part: the outcome most of the range gives,
 * never one end's alone, with every other part listed beside it.
 */
#include "tools/engine/engine_int.h"

#include <stdlib.h>
#include <string.h>

typedef struct probe {
    uint64_t cap;
    ga_replay_part_t key; /* from = to = cap until the parts are made */
} probe_t;

typedef struct search {
    const ga_job_unit_t *u;
    const ga_replay_opts_t *o;
    const ga_replay_spec_t *spec;
    uint64_t capacity, low;
    probe_t p[2 * GA_REPLAY_MAX_PARTS + 64];
    size_t n;
    int failed; /* host memory */
} search_t;

static bool same(const ga_replay_part_t *a, const ga_replay_part_t *b)
{
    return a->ooms == b->ooms && a->first_oom_event == b->first_oom_event;
}

/* One probe replay at cap: its outcome. */
static ga_replay_part_t probe(search_t *s, uint64_t cap)
{
    ga_replay_column_t c;
    memset(&c, 0, sizeof(c));
    ga_replay_opts_t o = *s->o;
    o.sample = false;
    o.watch_peak = false;
    o.owners = false;
    o.snapshot_paths = NULL;
    o.progress = NULL;
    ga_engine_out_t out = {.first_oom = UINT64_MAX};
    ga_engine_cfg_t g = {
        .o = &o, .spec = s->spec, .capacity = s->capacity, .cap = cap, .classify_cap = s->low, .out = &out};
    ga_replay_part_t k = {.from = cap, .to = cap + 1, .first_oom_event = UINT64_MAX};
    if (ga_engine_run(s->u, &g, &c) != 0)
        s->failed = 1;
    k.ooms = c.ooms_total + (c.create_status != GALLOC_OK); /* a configuration that cannot be made fails */
    k.first_oom_event = out.first_oom;
    k.first_oom_expected = out.first_oom_expected;
    k.peak_reserved = c.stats.reserved_bytes[GALLOC_STAT_ALL].peak;
    ga_replay_column_release(&c);
    return k;
}

static void add(search_t *s, uint64_t cap, ga_replay_part_t k)
{
    if (s->n < sizeof(s->p) / sizeof(s->p[0]))
        s->p[s->n++] = (probe_t){cap, k};
}

static int by_cap(const void *a, const void *b)
{
    uint64_t x = ((const probe_t *)a)->cap, y = ((const probe_t *)b)->cap;
    return x < y ? -1 : x > y;
}

/* Where between probes a (lower cap) and b the outcome changes: probes
 * added down to one step apart. */
static void bisect(search_t *s, probe_t a, probe_t b, int depth)
{
    if (same(&a.key, &b.key) || b.cap - a.cap <= GA_ENGINE_CAP_STEP || depth > 48 || s->failed)
        return;
    uint64_t mid = a.cap + (b.cap - a.cap) / 2 / GA_ENGINE_CAP_STEP * GA_ENGINE_CAP_STEP;
    if (mid <= a.cap)
        mid = a.cap + GA_ENGINE_CAP_STEP;
    probe_t m = {mid, probe(s, mid)};
    add(s, mid, m.key);
    bisect(s, a, m, depth + 1);
    bisect(s, m, b, depth + 1);
}

/* The parts of [low, high) from the sorted probes: a run of equal outcomes
 * is one part; a change between two probes falls at the upper one. */
static size_t make_parts(search_t *s, uint64_t high, ga_replay_part_t *parts)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (n > 0 && same(&parts[n - 1], &s->p[i].key))
            continue;
        if (n == GA_REPLAY_MAX_PARTS)
            break;
        parts[n] = s->p[i].key;
        parts[n].from = s->p[i].cap;
        if (n > 0)
            parts[n - 1].to = parts[n].from;
        n++;
    }
    if (n > 0)
        parts[n - 1].to = high;
    return n;
}

/* The cap of the column's figures: the middle of its widest part, on a step. */
static uint64_t main_cap(const ga_replay_part_t *parts, size_t n, size_t *widest)
{
    *widest = 0;
    for (size_t i = 1; i < n; i++)
        if (parts[i].to - parts[i].from > parts[*widest].to - parts[*widest].from)
            *widest = i;
    const ga_replay_part_t *w = &parts[*widest];
    uint64_t mid = w->from + (w->to - w->from) / 2 / GA_ENGINE_CAP_STEP * GA_ENGINE_CAP_STEP;
    return mid < w->to ? mid : w->from;
}

int ga_replay_column(const ga_job_unit_t *u, const ga_replay_opts_t *o, const ga_replay_spec_t *spec,
                     const char *snapshot_path, ga_replay_column_t *c)
{
    ga_engine_out_t out = {.first_oom = UINT64_MAX};
    ga_engine_cfg_t g = {.o = o,
                         .spec = spec,
                         .capacity = o->device_memory ? o->device_memory : u->memory,
                         .cap = o->cap,
                         .full = true,
                         .snapshot_path = snapshot_path,
                         .out = &out};
    const ga_job_cap_t *range = &u->cap;
    if (o->cap != 0 || o->no_cap || !range->inferred)
        return ga_engine_run(u, &g, c);
    search_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return -1;
    *s = (search_t){.u = u, .o = o, .spec = spec, .capacity = g.capacity, .low = range->low};
    uint64_t top = range->high - GA_ENGINE_CAP_STEP > range->low ? range->high - GA_ENGINE_CAP_STEP : range->low;
    probe_t lo = {range->low, probe(s, range->low)};
    add(s, lo.cap, lo.key);
    if (top != lo.cap) {
        probe_t hi = {top, probe(s, top)};
        add(s, hi.cap, hi.key);
        bisect(s, lo, hi, 0);
    }
    qsort(s->p, s->n, sizeof(s->p[0]), by_cap);
    ga_replay_part_t parts[GA_REPLAY_MAX_PARTS];
    size_t n = make_parts(s, range->high, parts), widest;
    int failed = s->failed;
    free(s);
    if (failed || n == 0) /* n: at least the low probe's part, unless a probe failed */
        return -1;
    g.cap = main_cap(parts, n, &widest);
    g.classify_cap = range->low;
    if (ga_engine_run(u, &g, c) != 0)
        return -1;
    memcpy(c->parts, parts, n * sizeof(parts[0]));
    c->n_parts = n;
    c->main_part = widest;
    /* the part's figures are the main run's (its probe ran at the part's lower end) */
    c->parts[widest].peak_reserved = c->stats.reserved_bytes[GALLOC_STAT_ALL].peak;
    return 0;
}

bool ga_replay_fits(const ga_replay_column_t *c)
{
    if (c->create_status != GALLOC_OK)
        return false;
    if (c->n_parts == 0)
        return c->ooms_total == 0;
    for (size_t i = 0; i < c->n_parts; i++)
        if (c->parts[i].ooms > 0)
            return false;
    return true;
}

bool ga_replay_depends(const ga_replay_column_t *c)
{
    bool fit = false, oom = false;
    for (size_t i = 0; i < c->n_parts; i++) {
        fit |= c->parts[i].ooms == 0;
        oom |= c->parts[i].ooms > 0;
    }
    return fit && oom;
}

ga_replay_spec_t ga_replay_default_spec(const ga_job_unit_t *u)
{
    const char *rec = ga_job_recorded(u);
    return (ga_replay_spec_t){.conf = rec != NULL ? rec : "", .recorded = rec != NULL};
}

int ga_replay_run(const ga_job_unit_t *u, const ga_replay_opts_t *o, const ga_replay_spec_t *specs, size_t n,
                  ga_replay_t *out)
{
    memset(out, 0, sizeof(*out));
    ga_replay_spec_t own = ga_replay_default_spec(u);
    if (n == 0) {
        specs = &own;
        n = 1;
    }
    out->unit = u;
    out->events = u->n;
    out->no_sleep = o->no_sleep;
    out->device_memory = o->device_memory ? o->device_memory : u->memory;
    out->cols = calloc(n, sizeof(*out->cols));
    if (out->cols == NULL)
        return -1;
    out->n_cols = n;
    for (size_t i = 0; i < n; i++) {
        const char *snap = o->snapshot_paths != NULL ? o->snapshot_paths[i] : NULL;
        if (ga_replay_column(u, o, &specs[i], snap, &out->cols[i]) != 0) {
            ga_replay_release(out);
            return -1;
        }
    }
    return 0;
}

void ga_replay_release(ga_replay_t *rp)
{
    for (size_t i = 0; rp->cols != NULL && i < rp->n_cols; i++)
        ga_replay_column_release(&rp->cols[i]);
    free(rp->cols);
    rp->cols = NULL;
    rp->n_cols = 0;
}

void ga_replay_series(const ga_replay_t *rp, size_t i, ga_series_t *out)
{
    ga_sampler_series(&rp->cols[i].sampler, rp->cols[i].label, out);
}
