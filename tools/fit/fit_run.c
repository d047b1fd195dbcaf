/*
 * fit_run.c: the traces in memory, one replay of one configuration at one
 * device size, and the bisection of the smallest device size (fit.h).
 *
 * The event loop makes the engine's calls for the same events (replay.h:
 * ga_replay_call, ga_replay_free_stream; docs/trace-format.md "Replay
 * semantics") but stops at the first OOM and watches for new reserved peaks. A new peak is seen from the device's free
 * memory (galloc_memory_info, O(1)); only then are the peak's figures taken
 * (galloc_memory_stats and the O(blocks) galloc_fragmentation walk), so
 * steady-state events cost one galloc call, one map operation and, for
 * allocations, one memory_info.
 *
 * For `galloc fit --plot` the same replay can also sample memory over time
 * (ga_fit_replay_sampled); the search's replays do not pay for it.
 *
 * Invariant: a replay's pointer map holds exactly the trace ids allocated
 * and not yet freed; the map and allocator belong to one replay (one thread).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"
#include "tools/fit/fit.h"
#include "tools/idmap.h"
#include "tools/snapshot/snap_view.h"

/* Append text[0..n) and a NUL to u's tag lists; its offset in *off. 0 or -1. */
static int push_tags(ga_fit_unit_t *u, const char *text, size_t n, uint64_t *off)
{
    while (u->tags_len + n + 1 > u->tags_cap) { /* ga_grow doubles: a list is under GA_TAG_LIST_MAX */
        char *nt = ga_grow(u->tags, &u->tags_cap, u->tags_cap, 1, 256);
        if (nt == NULL)
            return -1;
        u->tags = nt;
    }
    memcpy(u->tags + u->tags_len, text, n);
    u->tags[u->tags_len + n] = '\0';
    *off = u->tags_len;
    u->tags_len += n + 1;
    return 0;
}

static int push_event(ga_fit_unit_t *u, size_t *cap, const ga_event_t *e)
{
    ga_fit_event_t *nv = ga_grow(u->ev, cap, u->n, sizeof(*nv), 4096);
    if (nv == NULL)
        return -1;
    u->ev = nv;
    ga_fit_event_t *f = &u->ev[u->n++];
    f->id = e->id;
    f->size = e->size;
    if (e->kind == GA_EV_SET_FRACTION)
        memcpy(&f->size, &e->fraction, sizeof(f->size)); /* the only event with a double */
    f->stream = e->stream;
    f->kind = (uint32_t)e->kind;
    f->flags = e->flags;
    if ((e->kind == GA_EV_ALLOC || e->kind == GA_EV_OOM) && !(e->flags & GA_EVF_SEEDED) && e->size > u->max_alloc)
        u->max_alloc = e->size; /* a seeded stand-in block is no request of the job */
    if (ga_replay_oom_capped(e))
        u->capped_ooms++; /* a memory fraction refused it (ga_replay_oom_cap replays it so) */
    if (e->kind >= GA_EV_TAG_BEGIN) { /* the lists into the unit's table (the reader's text is short-lived) */
        uint64_t off = 0;
        if (push_tags(u, e->text, e->text_len, &f->id) != 0 || (e->text2 && push_tags(u, e->text2, e->text2_len, &off) != 0))
            return -1;
        f->size = e->text2 != NULL ? off + 1 : 0;
        u->sleep_events += e->kind == GA_EV_SLEEP || e->kind == GA_EV_WAKE;
    }
    return 0;
}

int ga_fit_load(ga_fit_job_t *job, const char *path, ga_format_t fmt, char *err, size_t errlen)
{
    ga_reader_t *r = NULL;
    if (ga_reader_open(path, fmt, &r, err, errlen) != 0)
        return -1;
    size_t nu = ga_reader_units(r);
    for (size_t u = 0; u < nu; u++) {
        if (u > 0 && ga_reader_begin(r, u, err, errlen) != 0)
            goto err_close;
        ga_fit_unit_t *units = realloc(job->units, (job->n_units + 1) * sizeof(*units));
        if (units == NULL)
            goto err_nomem;
        job->units = units;
        ga_fit_unit_t *un = &units[job->n_units++];
        memset(un, 0, sizeof(*un));
        const char *ul = ga_reader_unit_label(r, u);
        size_t ln = strlen(path) + strlen(ul) + 2;
        un->label = malloc(ln);
        if (un->label == NULL)
            goto err_nomem;
        snprintf(un->label, ln, "%s%s%s", path, ul[0] ? " " : "", ul);
        un->device_memory = ga_reader_device_memory(r);
        un->device = ga_reader_unit_device(r, u);
        if (ga_reader_format(r) == GA_FORMAT_TORCH && strcmp(path, "-") != 0) {
            ga_snap_view_t v; /* each device's own size: its oom entries' bound */
            char verr[256];
            if (ga_snap_view_load(path, -1, u, &v, verr, sizeof(verr)) == 0) {
                un->device_memory = v.device_memory;
                ga_snap_view_free(&v);
            }
        }
        size_t cap = 0;
        ga_event_t e;
        int rc;
        while ((rc = ga_reader_next(r, &e, err, errlen)) > 0)
            if (push_event(un, &cap, &e) != 0)
                goto err_nomem;
        if (rc < 0)
            goto err_close;
        ga_reader_notes_t notes;
        ga_reader_notes(r, &notes);
        un->start = notes.start;
        for (size_t i = 0; i < un->n && !job->sets_fraction; i++)
            job->sets_fraction = un->ev[i].kind == GA_EV_SET_FRACTION;
        job->events += un->n;
        job->sleep_events += un->sleep_events;
        job->capped_ooms += un->capped_ooms;
        if (un->max_alloc > job->max_alloc)
            job->max_alloc = un->max_alloc;
    }
    ga_reader_close(r);
    return 0;

err_nomem:
    snprintf(err, errlen, "%s: out of host memory loading the trace", path);
err_close:
    ga_reader_close(r);
    return -1;
}

void ga_fit_job_free(ga_fit_job_t *job)
{
    for (size_t i = 0; i < job->n_units; i++) {
        free(job->units[i].label);
        free(job->units[i].ev);
        free(job->units[i].tags);
    }
    free(job->units);
    memset(job, 0, sizeof(*job));
}

/* One unit's replay. */
typedef struct run_ctx {
    galloc_allocator_t *a;
    ga_idmap_t map;
    size_t min_free;      /* lowest device free memory seen: the reserved peak */
    double fraction;      /* the memory fraction in force (1.0: none), for classifying an OOM */
    const char *tags;     /* the unit's tag lists (ga_fit_unit_t.tags) */
    bool no_sleep;        /* skip sleep and wake (ga_fit_job_t.no_sleep) */
    ga_replay_tags_t known; /* the tags begun so far */
    ga_fit_run_t *out;
} run_ctx_t;

static int fail_call(run_ctx_t *x, size_t unit, uint64_t idx, const char *call, galloc_status_t st)
{
    char msg[160];
    galloc_last_error(x->a, msg, sizeof(msg));
    x->out->failed = true;
    snprintf(x->out->error, sizeof(x->out->error), "unit %zu event %" PRIu64 ": %s: %s%s%s", unit, idx, call,
             galloc_strerror(st), msg[0] ? ": " : "", msg);
    return -1;
}

/* Reserved memory reached a new high: keep the figures of that moment. */
static void on_peak(run_ctx_t *x)
{
    galloc_stats_t s = {.struct_size = sizeof(s)};
    if (galloc_memory_stats(x->a, &s) != GALLOC_OK)
        return;
    int64_t res = s.reserved_bytes[GALLOC_STAT_ALL].current;
    if (res <= x->out->peak_reserved)
        return; /* an earlier unit peaked higher */
    x->out->peak_reserved = res;
    x->out->allocated_at_peak = s.allocated_bytes[GALLOC_STAT_ALL].current;
    galloc_sleep_stats_t ss = {0};
    x->out->asleep_at_peak = galloc_sleep_stats(x->a, &ss) == GALLOC_OK ? (int64_t)ss.bytes_asleep : 0;
    galloc_fragmentation_t f = {.struct_size = sizeof(f)};
    if (galloc_fragmentation(x->a, &f) == GALLOC_OK) {
        int64_t largest = 0;
        for (int p = 0; p < GALLOC_STAT_POOLS; p++)
            if (f.pool[p].largest_free_block > largest)
                largest = f.pool[p].largest_free_block;
        int64_t fb = f.pool[GALLOC_STAT_ALL].free_bytes;
        x->out->largest_free_at_peak = largest;
        x->out->external_frag_at_peak = fb > 0 ? 1.0 - (double)largest / (double)fb : 0.0;
    }
}

/* A new low of the device's free memory is a new reserved peak. */
static void watch_peak(run_ctx_t *x)
{
    size_t fr, tot;
    if (galloc_memory_info(x->a, &fr, &tot) == GALLOC_OK && fr < x->min_free) {
        x->min_free = fr;
        on_peak(x);
    }
}

/* An allocation (or a traced OOM point): 1 to go on, 0 at an OOM (recorded),
 * -1 on another failure. */
static int alloc_event(run_ctx_t *x, size_t unit, uint64_t idx, const ga_fit_event_t *e)
{
    void *p = NULL;
    galloc_status_t st = galloc_malloc(x->a, (size_t)e->size, (galloc_stream_t)e->stream, &p);
    if (st == GALLOC_E_OOM) {
        x->out->fail_unit = unit;
        x->out->fail_event = idx;
        ga_replay_classify_oom(x->a, e->size, x->fraction, &x->out->oom);
        return 0;
    }
    if (st != GALLOC_OK)
        return fail_call(x, unit, idx, "galloc_malloc", st);
    watch_peak(x);
    if (e->kind == GA_EV_OOM) { /* the traced run failed here; this configuration does not */
        galloc_free(x->a, p);
        return 1;
    }
    bool replaced;
    ga_idmap_val_t v = {p, e->stream}, old;
    if (ga_idmap_put(&x->map, e->id, v, &old, &replaced) != 0) {
        x->out->failed = true;
        snprintf(x->out->error, sizeof(x->out->error), "out of host memory");
        return -1;
    }
    if (replaced && old.ptr != NULL) /* the trace lost a free: release the stale block */
        galloc_free(x->a, old.ptr);
    return 1;
}

/* A tag event: 1 to go on, 0 when a wake finds no memory (an OOM of the
 * bytes still asleep), -1 on another failure (an unknown tag included). */
static int tag_event(run_ctx_t *x, size_t unit, uint64_t idx, const ga_fit_event_t *e)
{
    if (x->no_sleep && (e->kind == GA_EV_SLEEP || e->kind == GA_EV_WAKE))
        return 1;
    const char *offload = e->kind == GA_EV_SLEEP && e->size != 0 ? x->tags + e->size - 1 : NULL;
    galloc_status_t st = ga_replay_tag_call(x->a, (ga_event_kind_t)e->kind, x->tags + e->id, offload, &x->known);
    if (st == GALLOC_E_OOM && e->kind == GA_EV_WAKE) {
        galloc_sleep_stats_t ss = {0};
        x->out->fail_unit = unit;
        x->out->fail_event = idx;
        ga_replay_classify_oom(x->a, galloc_sleep_stats(x->a, &ss) == GALLOC_OK ? ss.bytes_asleep : 0, x->fraction,
                               &x->out->oom);
        return 0;
    }
    if (st != GALLOC_OK)
        return fail_call(x, unit, idx, "replaying the tag event", st);
    if (e->kind == GA_EV_WAKE)
        watch_peak(x); /* the woken memory is reserved again */
    return 1;
}

/* Returns 1 to go on, 0 at an OOM (recorded), -1 on another failure. */
static int step(run_ctx_t *x, size_t unit, uint64_t idx, const ga_fit_event_t *e)
{
    galloc_status_t st = GALLOC_OK;
    ga_idmap_val_t v;
    switch ((ga_event_kind_t)e->kind) {
    case GA_EV_ALLOC:
    case GA_EV_OOM:
        return alloc_event(x, unit, idx, e);
    case GA_EV_FREE:
    case GA_EV_FREE_PENDING: {
        if (!ga_idmap_remove(&x->map, e->id, &v))
            return 1; /* a free of an id not live: replay counts it as an anomaly, fit ignores it */
        galloc_stream_t other;
        if (ga_replay_free_stream((ga_event_kind_t)e->kind, e->stream, v.stream, &other)) {
            st = galloc_record_stream(x->a, v.ptr, other);
            if (st != GALLOC_OK && st != GALLOC_E_UNSUPPORTED)
                return fail_call(x, unit, idx, "galloc_record_stream", st);
        }
        st = galloc_free(x->a, v.ptr);
        return st == GALLOC_OK ? 1 : fail_call(x, unit, idx, "galloc_free", st);
    }
    case GA_EV_RECORD_STREAM:
        if (ga_idmap_get(&x->map, e->id, &v))
            st = galloc_record_stream(x->a, v.ptr, (galloc_stream_t)e->stream);
        break;
    case GA_EV_FREE_COMPLETED:
    case GA_EV_STREAM_SYNC:
    case GA_EV_EMPTY_CACHE:
    case GA_EV_SET_FRACTION: {
        double fraction = 0;
        if (e->kind == GA_EV_SET_FRACTION)
            memcpy(&fraction, &e->size, sizeof(fraction)); /* the only event with a double */
        st = ga_replay_call(x->a, (ga_event_kind_t)e->kind, e->stream, e->size, fraction);
        if (st == GALLOC_OK && e->kind == GA_EV_SET_FRACTION)
            x->fraction = fraction;
        break;
    }
    case GA_EV_RESERVE: {
        st = ga_replay_reserve(x->a, e->size, e->stream);
        size_t fr, tot; /* the cached memory is the reserved figure from here */
        if (st == GALLOC_OK && galloc_memory_info(x->a, &fr, &tot) == GALLOC_OK && fr < x->min_free) {
            x->min_free = fr;
            on_peak(x);
        }
        break;
    }
    case GA_EV_TAG_BEGIN:
    case GA_EV_TAG_END:
    case GA_EV_SLEEP:
    case GA_EV_WAKE:
        return tag_event(x, unit, idx, e);
    case GA_EV_ANNOTATE:
        break;
    }
    if (st != GALLOC_OK && st != GALLOC_E_UNSUPPORTED)
        return fail_call(x, unit, idx, "replaying the event", st);
    return 1;
}

int ga_fit_replay(const ga_fit_job_t *job, const char *conf, uint64_t capacity, ga_fit_run_t *out)
{
    return ga_fit_replay_sampled(job, conf, capacity, out, NULL);
}

int ga_fit_replay_sampled(const ga_fit_job_t *job, const char *conf, uint64_t capacity, ga_fit_run_t *out,
                          ga_sampler_t *samplers)
{
    memset(out, 0, sizeof(*out));
    out->fits = true;
    /* The capacity and placement first: a sim_* key in conf (later in the
     * string) wins. Descending placement: addresses as the CUDA driver hands
     * them out (backend/sim.h), so best fit's address tie-break and
     * empty_cache's release order behave as on a real device. */
    char full[GA_FIT_CONF_MAX + 96];
    snprintf(full, sizeof(full), "sim_capacity:%" PRIu64 ",sim_placement:descending%s%s", capacity, conf && *conf ? "," : "",
             conf ? conf : "");
    for (size_t u = 0; u < job->n_units; u++) {
        const ga_fit_unit_t *un = &job->units[u];
        run_ctx_t x = {.out = out, .min_free = SIZE_MAX, .tags = un->tags, .no_sleep = job->no_sleep};
        const char *uconf = full;
        char own[sizeof(full) + 48];
        if (job->own_sizes && un->device_memory != 0 && job->device_memory != 0) {
            /* this device's own size, scaled as the search scales the job's */
            uint64_t cap = (uint64_t)((double)un->device_memory * ((double)capacity / (double)job->device_memory));
            snprintf(own, sizeof(own), "%s,sim_capacity:%" PRIu64, full, cap ? cap : 1); /* the last one wins */
            uconf = own;
        }
        uint32_t flags = job->env[0] ? 0 : GALLOC_CREATE_NO_ENV; /* only --env reads the environment */
        galloc_status_t st =
            galloc_allocator_create_ex("sim", un->device, uconf, flags, &x.a, out->error, sizeof(out->error));
        if (st != GALLOC_OK) {
            out->failed = true;
            out->fits = false;
            return -1;
        }
        ga_idmap_init(&x.map);
        x.fraction = ga_replay_start_fraction(x.a);
        int rc = 1;
        ga_sampler_t *sm = samplers != NULL && samplers[u].x != NULL ? &samplers[u] : NULL;
        if (sm == NULL) { /* the search's loop: nothing but the replay */
            for (size_t i = 0; i < un->n && rc > 0; i++)
                rc = step(&x, u, i, &un->ev[i]);
        } else {
            size_t i;
            for (i = 0; i < un->n && rc > 0; i++) {
                rc = step(&x, u, i, &un->ev[i]);
                if (i == sm->next && rc > 0)
                    ga_sampler_add_stats(sm, i, x.a);
            }
            if (i > 0) /* the last event replayed: the end, or the OOM the line stops at */
                ga_sampler_add_stats(sm, i - 1, x.a);
        }
        galloc_stats_t s = {.struct_size = sizeof(s)};
        if (galloc_memory_stats(x.a, &s) == GALLOC_OK) {
            if (s.allocated_bytes[GALLOC_STAT_ALL].peak > out->peak_allocated)
                out->peak_allocated = s.allocated_bytes[GALLOC_STAT_ALL].peak;
            if (s.requested_bytes[GALLOC_STAT_ALL].peak > out->peak_requested)
                out->peak_requested = s.requested_bytes[GALLOC_STAT_ALL].peak;
            /* The stats are the authority; on_peak saw the same peak unless
             * reserved rose inside a call that then failed. */
            if (s.reserved_bytes[GALLOC_STAT_ALL].peak > out->peak_reserved)
                out->peak_reserved = s.reserved_bytes[GALLOC_STAT_ALL].peak;
        }
        galloc_allocator_destroy(x.a); /* releases the blocks still live */
        ga_idmap_free(&x.map);
        if (rc < 0) {
            out->fits = false;
            return -1;
        }
        if (rc == 0) {
            out->fits = false;
            return 0;
        }
    }
    return 0;
}

static uint64_t floor_g(uint64_t v)
{
    return v / GA_FIT_GRANULE * GA_FIT_GRANULE;
}

static uint64_t ceil_g(uint64_t v)
{
    return floor_g(v + GA_FIT_GRANULE - 1);
}

/* Replays conf at size; whether it fits (a failed call counts as not). */
static bool fits_at(const ga_fit_job_t *job, const char *conf, uint64_t size, uint32_t *replays)
{
    ga_fit_run_t r;
    (*replays)++;
    return ga_fit_replay(job, conf, size, &r) == 0 && r.fits;
}

uint64_t ga_fit_min_memory(const ga_fit_job_t *job, const char *conf, const ga_fit_run_t *at_d, uint32_t *replays)
{
    uint64_t d = job->device_memory, hi = 0, lo = 0;
    if (at_d->failed)
        return 0;
    if (at_d->fits) {
        /* Nothing fits below the requested peak: reserved >= allocated >=
         * requested at every moment, and reserved <= the device. Not for a
         * job that sleeps: requested counts a sleeping tag's blocks, which
         * hold no device memory. */
        bool sleeps = job->sleep_events > 0 && !job->no_sleep;
        lo = at_d->peak_requested > 0 && !sleeps ? floor_g((uint64_t)at_d->peak_requested - 1) : 0;
        if (d % GA_FIT_GRANULE == 0)
            hi = d;
        else if (fits_at(job, conf, ceil_g(d), replays))
            hi = ceil_g(d);
        else
            return d; /* an odd device size that fits where the next granule does not */
        /* Most of the range is usually above the reserved peak: one replay
         * there (which nearly always fits) saves half the bisection steps. */
        uint64_t p = ceil_g((uint64_t)at_d->peak_reserved);
        if (p > lo && p < hi) {
            if (fits_at(job, conf, p, replays))
                hi = p;
            else
                lo = p;
        }
    } else {
        /* It fails at d: more memory is assumed never to hurt (monotone). */
        lo = floor_g(d);
        if (d > UINT64_MAX / 256)
            return 0; /* no room to search above an absurd device size */
        for (uint64_t c = ceil_g(d * 2); c <= d * 64 && hi == 0; c = ceil_g(c * 2)) {
            if (fits_at(job, conf, c, replays))
                hi = c;
            else
                lo = c;
        }
        if (hi == 0)
            return 0;
    }
    while (hi - lo > GA_FIT_GRANULE) {
        uint64_t mid = lo + floor_g((hi - lo) / 2);
        if (fits_at(job, conf, mid, replays))
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}
