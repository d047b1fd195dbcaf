/*
 * replay.c: one replay of one configuration over one unit (replay.h). The
 * per-event work (apply) is one galloc call and one pointer-map operation;
 * everything else (OOM records, samples, snapshots, the peak's figures)
 * happens on rare events only. The engine decides when a snapshot is recorded
 * and written; how is the caller's (ga_replay_snapshot_ops_t), so no output
 * code sits below the engine. column.c builds a column from one or more of
 * these runs (a cap known only as a range).
 *
 * Invariant: a column's map holds exactly the trace ids whose allocation the
 * column has replayed and not yet freed; an id whose allocation failed maps to
 * {NULL, GA_STREAM_NONE}, so its later free is consumed silently instead of
 * counting as a trace anomaly.
 */
#include "tools/engine/engine_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/snapshot/seed.h"

double ga_engine_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void note_error(ga_replay_column_t *c, uint64_t idx, const ga_event_t *e, const char *call, galloc_status_t st)
{
    if (c->errors++ == 0) {
        char msg[GALLOC_ERROR_MAX - 256]; /* room for the prefix: the whole line fits first_error */
        galloc_last_error(c->a, msg, sizeof(msg));
        snprintf(c->first_error, sizeof(c->first_error), "event %" PRIu64 " (line/entry %" PRIu64 "): %s: %s%s%s", idx,
                 e->where, call, galloc_strerror(st), msg[0] ? ": " : "", msg);
    }
}

static void write_snapshot(ga_replay_column_t *c)
{
    if (c->snapshot_path == NULL || c->snapshot_done)
        return;
    c->snapshot_done = true;
    if (!c->snapshot_recording) { /* the replay ended before the range began */
        snprintf(c->snapshot_error, sizeof(c->snapshot_error),
                 "%s: not written: --snapshot-range starts at event %" PRIu64 ", after the trace's last event",
                 c->snapshot_path, c->snapshot_first);
        return;
    }
    c->snapshot_ops->write(c->a, c->snapshot_path, c->snapshot_error, sizeof(c->snapshot_error));
}

/* Start recording the history (at the first event of --snapshot-range). */
static void start_recording(ga_replay_column_t *c)
{
    galloc_status_t st;
    if (c->snapshot_ops == NULL) {
        snprintf(c->snapshot_error, sizeof(c->snapshot_error), "%s: not written: no snapshot writer given",
                 c->snapshot_path);
        c->snapshot_done = true;
    } else if ((st = ga_engine_history_source(c)) != GALLOC_OK) { /* before recording: setting it clears the trace */
        snprintf(c->snapshot_error, sizeof(c->snapshot_error),
                 "%s: not written: the recorded stacks cannot be "
                 "attached: %s",
                 c->snapshot_path, galloc_strerror(st));
        c->snapshot_done = true;
    } else if (c->snapshot_ops->record(c->a, c->snapshot_max_entries, c->snapshot_error, sizeof(c->snapshot_error)) !=
               0) {
        c->snapshot_done = true; /* nothing to write: the error says why */
    } else {
        c->snapshot_recording = true;
    }
}

/* Before the start state is seeded or the prologue replays (setup, and
 * the events before the recorded range): record the stacks of what is
 * allocated, no trace yet, under the recorded stacks' source, so that the
 * seeded blocks and segments, and prologue blocks live at the end, carry the
 * frames the snapshot recorded for them. A failure only costs those frames
 * (start_recording says the rest). */
static void start_state(ga_replay_column_t *c)
{
    char err[GALLOC_ERROR_MAX];
    if (c->snapshot_ops == NULL || c->snapshot_ops->record_state == NULL || ga_engine_history_source(c) != GALLOC_OK)
        return;
    (void)c->snapshot_ops->record_state(c->a, err, sizeof(err));
}

/* Reserved memory reached a new high: keep the figures of that moment. */
static void on_peak(ga_replay_column_t *c, ga_engine_run_t *r)
{
    galloc_stats_t s = {.struct_size = sizeof(s)};
    if (galloc_memory_stats(c->a, &s) != GALLOC_OK)
        return;
    int64_t res = s.reserved_bytes[GALLOC_STAT_ALL].current;
    if (res <= r->peak_seen)
        return;
    r->peak_seen = res;
    c->at_peak.allocated = s.allocated_bytes[GALLOC_STAT_ALL].current;
    galloc_sleep_stats_t ss = {0};
    c->at_peak.asleep = galloc_sleep_stats(c->a, &ss) == GALLOC_OK ? (int64_t)ss.bytes_asleep : 0;
    galloc_fragmentation_t f = {.struct_size = sizeof(f)};
    if (galloc_fragmentation(c->a, &f) == GALLOC_OK) {
        int64_t largest = 0;
        for (int p = 0; p < GALLOC_STAT_POOLS; p++)
            if (f.pool[p].largest_free_block > largest)
                largest = f.pool[p].largest_free_block;
        int64_t fb = f.pool[GALLOC_STAT_ALL].free_bytes;
        c->at_peak.largest_free = largest;
        c->at_peak.external_frag = fb > 0 ? 1.0 - (double)largest / (double)fb : 0.0;
    }
}

/* A new low of the device's free memory is a new reserved peak (O(1) per
 * call; the peak's figures only then). With owners, every call that may
 * change reserved memory reports it to the tracker (idx, e: the event). */
static void watch_peak(ga_replay_column_t *c, ga_engine_run_t *r, uint64_t idx, const ga_event_t *e)
{
    size_t fr, tot;
    int64_t reserved;
    if (r->own != NULL && galloc_memory_reserved(c->a, &reserved) == GALLOC_OK) /* cheap: no stripe lock */
        ga_owners_track_reserved(r->own, idx, e, reserved);
    if (!r->watch || galloc_memory_info(c->a, &fr, &tot) != GALLOC_OK)
        return;
    if (fr < r->min_free) {
        r->min_free = fr;
        on_peak(c, r);
    }
}

/* An allocation failed with out-of-memory: keep the message and figures. */
static void record_oom(ga_replay_column_t *c, ga_engine_run_t *r, uint64_t idx, const ga_event_t *e)
{
    c->ooms_total++;
    if (r->first_oom == UINT64_MAX) {
        r->first_oom = idx;
        r->first_oom_expected = e->kind == GA_EV_OOM;
    }
    if (c->n_ooms < GA_REPLAY_MAX_OOMS) {
        ga_replay_oom_t *o = &c->ooms[c->n_ooms++];
        memset(o, 0, sizeof(*o));
        o->event = idx;
        o->where = e->where;
        o->size = e->size;
        o->expected = e->kind == GA_EV_OOM;
        o->prologue = (e->flags & GA_EVF_PROLOGUE) != 0;
        snprintf(o->annotation, sizeof(o->annotation), "%s", r->annotation);
        galloc_last_error(c->a, o->message, sizeof(o->message));
        galloc_stats_t s = {.struct_size = sizeof(s)};
        if (galloc_memory_stats(c->a, &s) == GALLOC_OK) {
            o->allocated = s.allocated_bytes[GALLOC_STAT_ALL].current;
            o->reserved = s.reserved_bytes[GALLOC_STAT_ALL].current;
        }
        ga_replay_classify_oom(c->a, e->size, c->fraction, &o->facts);
    }
    if (r->own != NULL)
        ga_owners_track_oom(r->own, idx, e);
    /* The first OOM's state is what a user wants to see; one the traced run
     * had too (its oom entry) is part of the record, which goes on after it:
     * the snapshot keeps recording, so it holds every entry the trace has. */
    if (c->snapshot_recording && !c->snapshot_at_end && e->kind != GA_EV_OOM)
        write_snapshot(c);
}

static void do_alloc(ga_replay_column_t *c, ga_engine_run_t *r, uint64_t idx, const ga_event_t *e)
{
    void *p = NULL;
    if (c->place && e->place != 0)
        galloc_sim_place(c->a, e->place); /* GALLOC_E_UNSUPPORTED under another placement: nothing to do */
    galloc_status_t st = galloc_malloc(c->a, (size_t)e->size, (galloc_stream_t)e->stream, &p);
    if (c->place && e->place != 0)
        galloc_sim_place(c->a, 0); /* not taken: this replay needed no segment there */
    if (e->kind == GA_EV_OOM) {    /* the traced run failed here: does this configuration? */
        if (st == GALLOC_OK || r->own != NULL)
            watch_peak(c, r, idx, e); /* a failed malloc's OOM path may have released segments */
        c->expected_ooms++;
        if (st == GALLOC_OK) {
            c->expected_avoided++;
            galloc_free(c->a, p);
        } else if (st == GALLOC_E_OOM) {
            record_oom(c, r, idx, e);
        } else {
            note_error(c, idx, e, "galloc_malloc", st);
        }
        return;
    }
    ga_idmap_val_t v = {p, e->stream}, old;
    if (st != GALLOC_OK) {
        v.ptr = NULL;
        v.stream = GA_STREAM_NONE; /* its free will be consumed silently */
    }
    ga_owner_rec_t old_rec;
    void *rec = NULL;
    bool replaced;
    if (ga_idmap_put_ex(&c->map, e->id, v, &old, r->own != NULL ? &old_rec : NULL, &replaced, &rec) != 0) {
        if (p != NULL)
            galloc_free(c->a, p);
        c->errors++;
        return;
    }
    if (r->own != NULL) /* in the map first: a reserved peak's walk finds it there */
        ga_owners_track_alloc(r->own, idx, e, st == GALLOC_OK ? p : NULL, rec);
    if (replaced) { /* the trace lost a free: release the stale block */
        c->duplicates++;
        if (old.ptr != NULL) {
            if (r->own != NULL)
                ga_owners_track_dealloc(r->own, &old_rec);
            galloc_free(c->a, old.ptr);
        }
    }
    if (st == GALLOC_OK || r->own != NULL)
        watch_peak(c, r, idx, e); /* a failed malloc's OOM path may have released segments */
    if (st == GALLOC_E_OOM)
        record_oom(c, r, idx, e);
    else if (st != GALLOC_OK)
        note_error(c, idx, e, "galloc_malloc", st);
}

static void do_free(ga_replay_column_t *c, ga_engine_run_t *r, uint64_t idx, const ga_event_t *e)
{
    ga_idmap_val_t v;
    ga_owner_rec_t rec;
    if (!ga_idmap_remove_ex(&c->map, e->id, &v, r->own != NULL ? &rec : NULL)) {
        c->unmatched++;
        return;
    }
    if (v.stream == GA_STREAM_NONE)
        return; /* its allocation failed in this configuration */
    if (r->own != NULL)
        ga_owners_track_dealloc(r->own, &rec);
    galloc_stream_t other;
    if (ga_replay_free_stream(e->kind, e->stream, v.stream, &other)) {
        galloc_status_t st = galloc_record_stream(c->a, v.ptr, other);
        if (st != GALLOC_OK && st != GALLOC_E_UNSUPPORTED)
            note_error(c, idx, e, "galloc_record_stream", st);
    }
    galloc_status_t st = galloc_free(c->a, v.ptr);
    if (st != GALLOC_OK)
        note_error(c, idx, e, "galloc_free", st);
}

/* A tag event: a refused tag is a trace anomaly, a wake without the memory
 * an OOM (of the bytes still asleep), anything else a failed call. */
static void do_tag(ga_replay_column_t *c, ga_engine_run_t *r, uint64_t idx, const ga_event_t *e)
{
    if (c->no_sleep && (e->kind == GA_EV_SLEEP || e->kind == GA_EV_WAKE))
        return;
    galloc_status_t st = ga_replay_tag_call(c->a, e->kind, e->text, e->text2, &c->tags);
    if (st == GALLOC_OK) {
        if (e->kind == GA_EV_WAKE || (e->kind == GA_EV_SLEEP && r->own != NULL))
            watch_peak(c, r, idx, e); /* the woken memory is reserved again (a sleep gives it back) */
        return;
    }
    if (st == GALLOC_E_INVAL && c->tag_anomalies++ == 0) {
        char msg[GALLOC_ERROR_MAX - 256];
        galloc_last_error(c->a, msg, sizeof(msg));
        snprintf(c->first_tag_anomaly, sizeof(c->first_tag_anomaly), "event %" PRIu64 " (line %" PRIu64 "): %s", idx,
                 e->where, msg[0] ? msg : galloc_strerror(st));
    } else if (st == GALLOC_E_OOM && e->kind == GA_EV_WAKE) {
        galloc_sleep_stats_t ss = {0};
        ga_event_t w = *e;
        w.size = galloc_sleep_stats(c->a, &ss) == GALLOC_OK ? ss.bytes_asleep : 0;
        record_oom(c, r, idx, &w);
    } else if (st != GALLOC_E_INVAL) {
        note_error(c, idx, e,
                   e->kind == GA_EV_SLEEP  ? "galloc_sleep"
                   : e->kind == GA_EV_WAKE ? "galloc_wake"
                                           : "galloc_tag_begin/end",
                   st);
    }
}

static void apply_event(ga_replay_column_t *c, ga_engine_run_t *r, uint64_t idx, const ga_event_t *e)
{
    galloc_status_t st = GALLOC_OK;
    ga_idmap_val_t v;
    switch (e->kind) {
    case GA_EV_ALLOC:
        if ((e->flags & GA_EVF_PROLOGUE) && c->seeded)
            return; /* the seeded state already holds the block */
        do_alloc(c, r, idx, e);
        return;
    case GA_EV_OOM: do_alloc(c, r, idx, e); return;
    case GA_EV_FREE:
    case GA_EV_FREE_PENDING: do_free(c, r, idx, e); return;
    case GA_EV_RECORD_STREAM:
        if (!ga_idmap_get(&c->map, e->id, &v)) {
            c->unmatched++;
            return;
        }
        if (v.stream != GA_STREAM_NONE)
            st = galloc_record_stream(c->a, v.ptr, (galloc_stream_t)e->stream);
        if (st == GALLOC_E_UNSUPPORTED)
            st = GALLOC_OK;
        break;
    case GA_EV_FREE_COMPLETED:
    case GA_EV_STREAM_SYNC:
    case GA_EV_EMPTY_CACHE:
    case GA_EV_SET_FRACTION:
        st = ga_replay_call(c->a, e->kind, e->stream, e->size, e->fraction);
        if (st == GALLOC_OK && e->kind == GA_EV_SET_FRACTION)
            c->fraction = e->fraction;
        if (r->own != NULL && e->kind == GA_EV_EMPTY_CACHE)
            watch_peak(c, r, idx, e); /* segments given back */
        break;
    case GA_EV_RESERVE:
        if (c->seeded)
            return; /* a seeded snapshot state holds its own segments */
        st = ga_replay_reserve(c->a, e->size, e->stream);
        if (st == GALLOC_OK)
            watch_peak(c, r, idx, e); /* the cached memory is the reserved figure from here */
        break;
    case GA_EV_TAG_BEGIN:
    case GA_EV_TAG_END:
    case GA_EV_SLEEP:
    case GA_EV_WAKE: do_tag(c, r, idx, e); return;
    case GA_EV_SNAPSHOT:
        if (c->snapshot_recording && !c->snapshot_done && c->snapshot_ops->mark != NULL)
            c->snapshot_ops->mark(c->a);
        return;
    case GA_EV_ANNOTATE:
        r->annotation = e->text;
        if (c->snapshot_recording && !c->snapshot_done && c->snapshot_ops->annotate != NULL)
            c->snapshot_ops->annotate(c->a, e->text);
        return;
    }
    if (st != GALLOC_OK)
        note_error(c, idx, e, "replaying the event", st);
}

/* The state at the first entry does not fit the device: an OOM before the
 * first event, of the whole state (facts.at_start), and the replay ends
 * there: the events after it would run from a state that never existed. */
static void start_oom(ga_replay_column_t *c, const ga_seed_t *s, const ga_replay_oom_t *oom)
{
    ga_replay_oom_t *o = &c->ooms[c->n_ooms++];
    *o = *oom;
    o->facts.cls = GA_OOM_GENUINE;
    o->facts.at_start = true;
    o->facts.live = (int64_t)s->live_bytes;
    o->facts.cached_free = (int64_t)(s->reserved_bytes - s->live_bytes);
    c->ooms_total++;
}

/* Whether c's replay ended before its first event (start_oom). */
static bool ended_at_start(const ga_replay_column_t *c)
{
    return c->n_ooms > 0 && c->ooms[0].facts.at_start;
}

/* Make the column's allocator and its starting state. 0, or -1 when host
 * memory ran out (the creation failure of a configuration is a result). */
static int setup(const ga_job_unit_t *u, const ga_engine_cfg_t *g, ga_replay_column_t *c)
{
    const ga_replay_opts_t *o = g->o;
    c->unit = u;
    c->user_conf = g->spec->conf ? g->spec->conf : "";
    c->recorded = g->spec->recorded;
    c->label = ga_engine_label(g->spec, o->env);
    c->conf = ga_engine_conf(g->spec->conf, o->backend, g->capacity, g->spec->recorded);
    c->place = g->spec->recorded;
    c->no_sleep = o->no_sleep;
    c->ooms = malloc(GA_REPLAY_MAX_OOMS * sizeof(*c->ooms));
    /* with owners, each live block's record rides in its pointer-map entry */
    ga_idmap_init_extra(&c->map, o->owners && g->full ? sizeof(ga_owner_rec_t) : 0);
    c->stats.struct_size = sizeof(c->stats);
    c->snapshot_path = g->snapshot_path;
    c->snapshot_ops = o->snapshot_ops;
    if (c->label == NULL || c->conf == NULL || c->ooms == NULL ||
        (g->full && o->sample && ga_sampler_init(&c->sampler) != 0) ||
        (g->full && o->sample && o->owners && ga_sampler_init_sites(&c->sampler, u->owners.n_sites) != 0))
        return -1;
    uint32_t flags = o->env ? 0 : GALLOC_CREATE_NO_ENV;
    c->create_status = galloc_allocator_create_ex(o->backend, u->device, c->conf, flags, &c->a, c->create_error,
                                                  sizeof(c->create_error));
    if (c->create_status != GALLOC_OK) {
        c->a = NULL;
        /* The message's offsets count from the string galloc parsed, which
         * starts with the capacity make_conf put first; parse the user's
         * string alone for a message that points into what they wrote. */
        const char *user = g->spec->conf;
        if (c->create_status == GALLOC_E_CONFIG && user != NULL && strcmp(c->conf, user) != 0) {
            galloc_allocator_t *probe = NULL;
            char err[sizeof(c->create_error)];
            if (galloc_allocator_create_ex(o->backend, u->device, user, flags, &probe, err, sizeof(err)) ==
                GALLOC_E_CONFIG)
                snprintf(c->create_error, sizeof(c->create_error), "%s", err);
            galloc_allocator_destroy(probe);
        }
        return 0;
    }
    c->fraction = ga_replay_start_fraction(c->a);
    c->snapshot_first = o->snapshot_range ? o->snapshot_first : 0;
    c->snapshot_last = o->snapshot_range ? o->snapshot_last : UINT64_MAX;
    c->snapshot_max_entries = o->snapshot_max_entries;
    c->snapshot_at_end = o->snapshot_at_end;
    c->snapshot_no_frames = o->snapshot_no_frames;
    if (c->snapshot_path != NULL)
        start_state(c); /* a seeded state's or a prologue's blocks carry their recorded frames */
    if (u->seeded && !o->no_seed) {
        char err[GALLOC_ERROR_MAX - 64];
        ga_replay_oom_t oom;
        int rc = ga_seed_apply_named(c->a, &c->map, &u->seed, &c->seed_taking, err, sizeof(err), &oom);
        c->seed_taking = 0;
        /* An OOM is the state's only when the state is larger than the
         * device: else the tiling's own way of making it (an expandable hole
         * mapped to be unmapped again, a piece a setting rounds up) needed
         * more than the state holds, a limit of the seeding, said as an error. */
        if (rc == GA_SEED_OOM && u->seed.reserved_bytes > oom.facts.limit) {
            start_oom(c, &u->seed, &oom);
        } else if (rc != 0) {
            c->errors++;
            snprintf(c->first_error, sizeof(c->first_error), "before the first event: %s", err);
        }
        c->seeded = true; /* recording starts below: the seeding is not part of the trace */
    }
    if (g->cap != 0) { /* after the seeding: the state at the first entry held under the cap */
        galloc_status_t st = ga_engine_set_cap(c->a, g->cap, g->capacity);
        if (st != GALLOC_OK) {
            ga_event_t none = {.where = 0};
            note_error(c, 0, &none, "galloc_set_memory_fraction (the inferred cap)", st);
        }
        c->cap = g->cap;
        /* an OOM is classified under the lowest cap the trace allows: the
         * verdict must hold whatever the real cap was */
        uint64_t low = g->classify_cap ? g->classify_cap : g->cap;
        c->fraction = (double)low / (double)g->capacity;
    }
    return 0;
}

/* A point of c's time series after event i: the allocator's figures, and
 * with owners the live bytes per site (the tracker's, so taken before the
 * tracker goes). */
static void sample(ga_replay_column_t *c, const ga_engine_run_t *r, uint64_t i)
{
    if (c->sampler.pending != NULL && r->own != NULL)
        ga_owners_track_sites(r->own, c->sampler.pending);
    ga_sampler_add_stats(&c->sampler, i, c->a);
}

/* The first event the history records: the trace's own, never the
 * prologue's (a mid-run trace's earlier state is state, not events). */
static uint64_t first_recorded(const ga_job_unit_t *u, uint64_t first)
{
    uint64_t i = first;
    while (i < u->n && (u->ev[i].flags & GA_EVF_PROLOGUE))
        i++;
    return i;
}

int ga_engine_run(const ga_job_unit_t *u, const ga_engine_cfg_t *g, ga_replay_column_t *c)
{
    const ga_replay_opts_t *o = g->o;
    if (setup(u, g, c) != 0)
        return -1;
    if (c->a == NULL)
        return 0;
    ga_engine_run_t r = {.min_free = SIZE_MAX, .first_oom = UINT64_MAX, .annotation = "", .watch = o->watch_peak};
    ga_owners_track_t own;
    if (o->owners && g->full) {
        if (ga_owners_track_init(&own, u, c->a, &c->map) != 0)
            return -1;
        r.own = &own;
        if (c->seeded && !o->no_seed)
            ga_owners_track_seeded(&own);
    }
    /* the seeded state's reserved memory: the reserved peak when the trace
     * never exceeds it, and at_peak must be of that moment then */
    ga_event_t none = {.where = 0};
    watch_peak(c, &r, GA_OWNERS_BEFORE_EVENTS, &none);
    uint64_t start = c->snapshot_path != NULL ? first_recorded(u, c->snapshot_first) : UINT64_MAX;
    uint64_t end = o->stop_after_events && o->stop_after_events < u->n ? o->stop_after_events : u->n;
    if (ended_at_start(c)) {
        end = 0;
        r.first_oom = 0;
        if (r.own != NULL)
            ga_owners_track_start_oom(r.own, c->ooms[0].size);
        if (c->snapshot_path != NULL) { /* the state as far as it was seeded, with no trace */
            start_recording(c);
            if (c->snapshot_recording && !c->snapshot_at_end)
                write_snapshot(c);
        }
    }
    double t0 = ga_engine_now();
    ga_event_t e;
    uint64_t i;
    for (i = 0; i < end; i++) {
        if (i == start && !c->snapshot_done)
            start_recording(c);
        ga_job_event(u, i, &e);
        c->cur = &e; /* the token of this event's calls (history.c) */
        c->cur_index = i;
        apply_event(c, &r, i, &e);
        c->cur = NULL;
        if (o->after_event != NULL)
            o->after_event(o->after_event_ctx, c->a, i);
        if (i == c->sampler.next && c->sampler.x != NULL)
            sample(c, &r, i);
        if (i >= c->snapshot_last && c->snapshot_recording)
            write_snapshot(c);
        if (o->stop_at_oom && c->ooms_total > 0) {
            i++;
            break;
        }
        if (g->full && o->progress != NULL && (i & 0xfff) == 0xfff)
            o->progress(o->progress_ctx, (double)(i + 1) / (double)u->n, i + 1);
    }
    /* A snapshot with no trace events (a state-only one, or a trace of
     * nothing the replay makes): its state is the answer, so the history
     * starts at the end, with the state and no entries, unless the range
     * asked for began past the trace's events. */
    if (c->snapshot_path != NULL && !c->snapshot_done && !c->snapshot_recording && i == u->n && start >= u->n &&
        c->snapshot_first <= first_recorded(u, 0))
        start_recording(c);
    c->events = i;
    c->seconds = ga_engine_now() - t0;
    if (g->full && o->progress != NULL)
        o->progress(o->progress_ctx, u->n ? (double)i / (double)u->n : 1.0, i);
    r.events = i;
    if (r.own != NULL) { /* before the allocator goes: the last fold reads no allocator, the checks do */
        if (c->sampler.x != NULL && i > 0)
            sample(c, &r, i - 1); /* the final point, with its sites (ga_engine_finish's is then a no-op) */
        ga_owners_track_finish(r.own);
        c->owners = ga_owners_track_take(r.own);
        ga_owners_track_destroy(r.own);
    }
    ga_engine_finish(c, &r, o->check);
    g->out->first_oom = r.first_oom;
    g->out->first_oom_expected = r.first_oom_expected;
    return 0;
}

/* End of replay: final sample, snapshot if no OOM wrote it, stats, teardown. */
void ga_engine_finish(ga_replay_column_t *c, const ga_engine_run_t *r, bool check)
{
    if (c->a == NULL)
        return;
    if (c->sampler.x != NULL && r->events > 0)
        ga_sampler_add_stats(&c->sampler, r->events - 1, c->a);
    if (check) {
        galloc_status_t st = galloc_check(c->a);
        if (st != GALLOC_OK) {
            ga_event_t end = {.where = 0};
            note_error(c, r->events, &end, "galloc_check after the replay", st);
        }
    }
    write_snapshot(c);
    galloc_memory_stats(c->a, &c->stats);
    c->has_sleep_stats = galloc_sleep_stats(c->a, &c->sleep) == GALLOC_OK;
    galloc_allocator_destroy(c->a); /* releases the blocks still live: no need to free them one by one */
    c->a = NULL;
    ga_idmap_free(&c->map);
}

void ga_replay_column_release(ga_replay_column_t *c)
{
    galloc_allocator_destroy(c->a);
    ga_idmap_free(&c->map);
    ga_sampler_free(&c->sampler);
    ga_engine_history_free(c);
    free(c->label);
    free(c->conf);
    free(c->ooms);
    ga_owners_release(c->owners);
    memset(c, 0, sizeof(*c));
}
