/*
 * replay.c: the replay loop of replay.h. Events are read in chunks; every
 * configuration replays a chunk before the next is read. The per-event work
 * (apply) is one galloc call and one pointer-map operation; everything else
 * (OOM records, samples, snapshots) happens on rare events only. The engine
 * decides when a snapshot is recorded and written; how is the caller's
 * (ga_replay_snapshot_ops_t), so no output code sits below the engine.
 *
 * Invariant: a column's map holds exactly the trace ids whose allocation the
 * column has replayed and not yet freed; an id whose allocation failed maps to
 * {NULL, GA_STREAM_NONE}, so its later free is consumed silently instead of
 * counting as a trace anomaly.
 */
#include "tools/engine/replay.h"
#include "tools/snapshot/torch_snapshot.h"
#include "tools/snapshot/seed.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ANNOTATION_LEN 80 /* the annotation kept for OOM reports (ga_replay_oom_t.annotation) */

/* Shared by every column while one chunk is replayed. */
typedef struct chunk_ctx {
    const ga_event_t *ev;     /* the chunk */
    size_t n;                 /* its events */
    uint64_t first;           /* event index of ev[0] */
    const char *annotation;   /* the last annotate text before the chunk */
} chunk_ctx_t;

static double now(void)
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
        snprintf(c->first_error, sizeof(c->first_error), "event %" PRIu64 " (line/entry %" PRIu64 "): %s: %s%s%s",
                 idx, e->where, call, galloc_strerror(st), msg[0] ? ": " : "", msg);
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
/* galloc_frames_fn: the frames the trace recorded for the event being
 * replayed, so galloc's snapshot of the replay shows the user's code. */
static size_t event_frames(void *ctx, galloc_frame_t *out, size_t max)
{
    ga_replay_column_t *c = ctx;
    const void *fr = c->cur != NULL ? c->cur->frames : NULL;
    size_t n = ga_torch_frames_count(fr), k = 0, used = 0;
    for (; k < n && k < max; k++) {
        ga_torch_frame_t f;
        ga_torch_frame(fr, k, &f);
        const char *src[2] = {f.filename, f.name};
        size_t len[2] = {f.filename_len, f.name_len};
        const char *dst[2] = {"", ""};
        for (int j = 0; j < 2; j++) {
            if (src[j] == NULL || len[j] + 1 > sizeof(c->frame_text) - used)
                continue; /* missing, or no room left: "" */
            memcpy(c->frame_text + used, src[j], len[j]);
            c->frame_text[used + len[j]] = '\0';
            dst[j] = c->frame_text + used;
            used += len[j] + 1;
        }
        out[k] = (galloc_frame_t){.filename = dst[0], .name = dst[1], .line = f.line};
    }
    return k;
}

static void start_recording(ga_replay_column_t *c)
{
    if (c->snapshot_ops == NULL) {
        snprintf(c->snapshot_error, sizeof(c->snapshot_error), "%s: not written: no snapshot writer given",
                 c->snapshot_path);
        c->snapshot_done = true;
    } else if (c->snapshot_ops->record(c->a, c->snapshot_max_entries, c->snapshot_error,
                                       sizeof(c->snapshot_error)) != 0) {
        c->snapshot_done = true; /* nothing to write: the error says why */
    } else {
        c->snapshot_recording = true;
        galloc_set_frames_callback(c->a, event_frames, c);
    }
}

/* An allocation failed with out-of-memory: keep the message and figures. */
static void record_oom(ga_replay_column_t *c, uint64_t idx, const ga_event_t *e, const chunk_ctx_t *x)
{
    c->ooms_total++;
    if (c->n_ooms < GA_REPLAY_MAX_OOMS) {
        ga_replay_oom_t *o = &c->ooms[c->n_ooms++];
        memset(o, 0, sizeof(*o));
        o->event = idx;
        o->where = e->where;
        o->size = e->size;
        o->expected = e->kind == GA_EV_OOM;
        o->prologue = (e->flags & GA_EVF_PROLOGUE) != 0;
        snprintf(o->annotation, sizeof(o->annotation), "%s", x->annotation);
        galloc_last_error(c->a, o->message, sizeof(o->message));
        galloc_stats_t s = {.struct_size = sizeof(s)};
        if (galloc_memory_stats(c->a, &s) == GALLOC_OK) {
            o->allocated = s.allocated_bytes[GALLOC_STAT_ALL].current;
            o->reserved = s.reserved_bytes[GALLOC_STAT_ALL].current;
        }
        ga_replay_classify_oom(c->a, e->size, c->fraction, &o->facts);
    }
    if (c->snapshot_recording && !c->snapshot_at_end)
        write_snapshot(c); /* the first OOM's state is what a user wants to see */
}

static void do_alloc(ga_replay_column_t *c, uint64_t idx, const ga_event_t *e, const chunk_ctx_t *x)
{
    void *p = NULL;
    /* Lifted after the event: the run's later allocations fitted under its real
     * cap, which may lie above this one. (1.0 keeps set_fraction on, as
     * PyTorch 2.x's setMemoryFraction does: only garbage collection notices.) */
    double restore = -1.0;
    if (e->kind == GA_EV_OOM && c->fraction >= 1.0 &&
        ga_replay_oom_cap(c->a, e, &c->cap_low, &c->cap_high, &c->fraction)) {
        c->capped_ooms++;
        restore = 1.0;
    }
    if (c->place && e->place != 0)
        galloc_sim_place(c->a, e->place); /* GALLOC_E_UNSUPPORTED under another placement: nothing to do */
    galloc_status_t st = galloc_malloc(c->a, (size_t)e->size, (galloc_stream_t)e->stream, &p);
    if (c->place && e->place != 0)
        galloc_sim_place(c->a, 0); /* not taken: this replay needed no segment there */
    if (e->kind == GA_EV_OOM) { /* the traced run failed here: does this configuration? */
        c->expected_ooms++;
        if (st == GALLOC_OK) {
            c->expected_avoided++;
            galloc_free(c->a, p);
        } else if (st == GALLOC_E_OOM) {
            record_oom(c, idx, e, x);
        } else {
            note_error(c, idx, e, "galloc_malloc", st);
        }
        if (restore >= 0.0 && galloc_set_memory_fraction(c->a, restore) == GALLOC_OK)
            c->fraction = restore;
        return;
    }
    ga_idmap_val_t v = {p, e->stream}, old;
    if (st != GALLOC_OK) {
        if (st == GALLOC_E_OOM)
            record_oom(c, idx, e, x);
        else
            note_error(c, idx, e, "galloc_malloc", st);
        v.ptr = NULL;
        v.stream = GA_STREAM_NONE; /* its free will be consumed silently */
    }
    bool replaced;
    if (ga_idmap_put(&c->map, e->id, v, &old, &replaced) != 0) {
        if (p != NULL)
            galloc_free(c->a, p);
        c->errors++;
        return;
    }
    if (replaced) { /* the trace lost a free: release the stale block */
        c->duplicates++;
        if (old.ptr != NULL)
            galloc_free(c->a, old.ptr);
    }
}

static void do_free(ga_replay_column_t *c, uint64_t idx, const ga_event_t *e)
{
    ga_idmap_val_t v;
    if (!ga_idmap_remove(&c->map, e->id, &v)) {
        c->unmatched++;
        return;
    }
    if (v.stream == GA_STREAM_NONE)
        return; /* its allocation failed in this configuration */
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
static void do_tag(ga_replay_column_t *c, uint64_t idx, const ga_event_t *e, const chunk_ctx_t *x)
{
    if (c->no_sleep && (e->kind == GA_EV_SLEEP || e->kind == GA_EV_WAKE))
        return;
    galloc_status_t st = ga_replay_tag_call(c->a, e->kind, e->text, e->text2, &c->tags);
    if (st == GALLOC_OK)
        return;
    if (st == GALLOC_E_INVAL && c->tag_anomalies++ == 0) {
        char msg[GALLOC_ERROR_MAX - 256];
        galloc_last_error(c->a, msg, sizeof(msg));
        snprintf(c->first_tag_anomaly, sizeof(c->first_tag_anomaly), "event %" PRIu64 " (line %" PRIu64 "): %s",
                 idx, e->where, msg[0] ? msg : galloc_strerror(st));
    } else if (st == GALLOC_E_OOM && e->kind == GA_EV_WAKE) {
        galloc_sleep_stats_t ss = {0};
        ga_event_t w = *e;
        w.size = galloc_sleep_stats(c->a, &ss) == GALLOC_OK ? ss.bytes_asleep : 0;
        record_oom(c, idx, &w, x);
    } else if (st != GALLOC_E_INVAL) {
        note_error(c, idx, e, e->kind == GA_EV_SLEEP ? "galloc_sleep" : e->kind == GA_EV_WAKE ? "galloc_wake"
                                                                                              : "galloc_tag_begin/end",
                   st);
    }
}

/* Replay one event in one configuration. */
static void apply_event(ga_replay_column_t *c, uint64_t idx, const ga_event_t *e, const chunk_ctx_t *x);

static void apply(ga_replay_column_t *c, uint64_t idx, const ga_event_t *e, const chunk_ctx_t *x)
{
    c->cur = e; /* for event_frames */
    apply_event(c, idx, e, x);
    c->cur = NULL;
}

static void apply_event(ga_replay_column_t *c, uint64_t idx, const ga_event_t *e, const chunk_ctx_t *x)
{
    galloc_status_t st = GALLOC_OK;
    ga_idmap_val_t v;
    switch (e->kind) {
    case GA_EV_ALLOC:
        if ((e->flags & GA_EVF_PROLOGUE) && c->seeded)
            return; /* the seeded state already holds the block */
        do_alloc(c, idx, e, x);
        return;
    case GA_EV_OOM:
        do_alloc(c, idx, e, x);
        return;
    case GA_EV_FREE:
    case GA_EV_FREE_PENDING:
        do_free(c, idx, e);
        return;
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
        break;
    case GA_EV_RESERVE:
        if (c->seeded)
            return; /* a seeded snapshot state holds its own segments */
        st = ga_replay_reserve(c->a, e->size, e->stream);
        break;
    case GA_EV_TAG_BEGIN:
    case GA_EV_TAG_END:
    case GA_EV_SLEEP:
    case GA_EV_WAKE:
        do_tag(c, idx, e, x);
        return;
    case GA_EV_ANNOTATE:
        if (c->snapshot_recording && !c->snapshot_done && e->text != NULL && c->snapshot_ops->annotate != NULL)
            c->snapshot_ops->annotate(c->a, e->text);
        return;
    }
    if (st != GALLOC_OK)
        note_error(c, idx, e, "replaying the event", st);
}

static void replay_chunk(ga_replay_column_t *c, const chunk_ctx_t *x)
{
    double t0 = now();
    if (c->snapshot_path != NULL && !c->snapshot_done) {
        /* The range checks cost two compares per event: only while a
         * snapshot is still to be written, so plain replays keep the loop below. */
        for (size_t i = 0; i < x->n; i++) {
            uint64_t idx = x->first + i;
            if (!c->snapshot_recording && !c->snapshot_done && idx >= c->snapshot_first)
                start_recording(c);
            apply(c, idx, &x->ev[i], x);
            if (idx == c->sampler.next && c->sampler.x != NULL)
                ga_sampler_add_stats(&c->sampler, idx, c->a);
            if (idx >= c->snapshot_last && c->snapshot_recording)
                write_snapshot(c);
        }
        c->events += x->n;
        c->seconds += now() - t0;
        return;
    }
    for (size_t i = 0; i < x->n; i++) {
        uint64_t idx = x->first + i;
        apply(c, idx, &x->ev[i], x);
        if (idx == c->sampler.next && c->sampler.x != NULL)
            ga_sampler_add_stats(&c->sampler, idx, c->a);
    }
    c->events += x->n;
    c->seconds += now() - t0;
}

/* The configuration string handed to galloc: the capacity and placement
 * first, so that a sim_capacity or sim_placement the user wrote in --conf
 * (later in the string) wins. */
static char *make_conf(const char *user, const char *backend, uint64_t capacity, bool recorded)
{
    bool sim = backend == NULL || strcmp(backend, "sim") == 0;
    size_t n = (user ? strlen(user) : 0) + 96;
    char *s = malloc(n);
    if (s == NULL)
        return NULL;
    char cap[40] = "", place[40] = "";
    if (sim && (user == NULL || strstr(user, "sim_capacity") == NULL))
        snprintf(cap, sizeof(cap), "sim_capacity:%" PRIu64 ",", capacity);
    if (sim && (user == NULL || strstr(user, "sim_placement") == NULL))
        snprintf(place, sizeof(place), "sim_placement:%s,", recorded ? "recorded" : "descending");
    snprintf(s, n, "%s%s%s", cap, place, user ? user : "");
    size_t len = strlen(s);
    if (len > 0 && s[len - 1] == ',')
        s[len - 1] = '\0';
    return s;
}

size_t ga_replay_env_text(char *buf, size_t len)
{
    /* galloc_allocator_create's sources (api/allocator.c): PyTorch reads only
     * the first set of its two names; GALLOC_CONF goes over it. */
    const char *pt = getenv("PYTORCH_ALLOC_CONF") ? "PYTORCH_ALLOC_CONF" : "PYTORCH_CUDA_ALLOC_CONF";
    const char *names[] = {pt, "GALLOC_CONF"};
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < 2; i++) {
        const char *v = getenv(names[i]);
        if (v != NULL && n < len)
            n += (size_t)snprintf(buf + n, len - n, "%s%s=%s", n ? " " : "", names[i], v);
    }
    return n < len ? n : len - 1;
}

/* The column's name: what the user wrote, "defaults" only for PyTorch's
 * defaults; the environment, when it applies, is part of the name. */
static char *make_label(const char *user, bool env)
{
    char e[512];
    bool has_user = user != NULL && *user;
    if (!env || ga_replay_env_text(e, sizeof(e)) == 0)
        return strdup(has_user ? user : "defaults");
    size_t n = strlen(e) + (has_user ? strlen(user) : 0) + 8;
    char *s = malloc(n);
    if (s != NULL)
        snprintf(s, n, "%s%s%s", has_user ? user : "", has_user ? " + " : "", e);
    return s;
}

static int setup_column(ga_replay_column_t *c, const char *user, const ga_replay_opts_t *o, uint64_t capacity,
                        size_t i)
{
    c->label = make_label(user, o->env);
    c->conf = make_conf(user, o->backend, capacity, o->place_recorded);
    c->place = o->place_recorded;
    c->no_sleep = o->no_sleep;
    c->ooms = malloc(GA_REPLAY_MAX_OOMS * sizeof(*c->ooms));
    ga_idmap_init(&c->map);
    c->stats.struct_size = sizeof(c->stats);
    c->snapshot_path = o->snapshot_paths ? o->snapshot_paths[i] : NULL;
    c->snapshot_ops = o->snapshot_ops;
    if (c->label == NULL || c->conf == NULL || c->ooms == NULL || (o->sample && ga_sampler_init(&c->sampler) != 0))
        return -1;
    uint32_t flags = o->env ? 0 : GALLOC_CREATE_NO_ENV;
    c->create_status = galloc_allocator_create_ex(o->backend, o->device, c->conf, flags, &c->a, c->create_error,
                                                  sizeof(c->create_error));
    if (c->create_status != GALLOC_OK) {
        c->a = NULL;
        /* The message's offsets count from the string galloc parsed, which
         * starts with the capacity make_conf put first; parse the user's
         * string alone for a message that points into what they wrote. */
        if (c->create_status == GALLOC_E_CONFIG && user != NULL && strcmp(c->conf, user) != 0) {
            galloc_allocator_t *probe = NULL;
            char err[sizeof(c->create_error)];
            if (galloc_allocator_create_ex(o->backend, o->device, user, flags, &probe, err, sizeof(err)) == GALLOC_E_CONFIG)
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
    if (o->seed != NULL) {
        char err[GALLOC_ERROR_MAX - 64];
        if (ga_seed_apply(c->a, &c->map, o->seed, err, sizeof(err)) != 0) {
            c->errors++;
            snprintf(c->first_error, sizeof(c->first_error), "before the first event: %s", err);
        }
        c->seeded = true; /* recording starts below: the seeding is not part of the trace */
    }
    if (c->snapshot_path != NULL && c->snapshot_first == 0)
        start_recording(c); /* before the first event: the prologue is recorded too */
    return 0;
}

/* End of replay: final sample, snapshot if no OOM wrote it, stats, teardown. */
static void finish_column(ga_replay_column_t *c, uint64_t events, bool check)
{
    if (c->a == NULL)
        return;
    if (c->sampler.x != NULL && events > 0)
        ga_sampler_add_stats(&c->sampler, events - 1, c->a);
    if (check) {
        galloc_status_t st = galloc_check(c->a);
        if (st != GALLOC_OK) {
            ga_event_t end = {.where = 0};
            note_error(c, events, &end, "galloc_check after the replay", st);
        }
    }
    write_snapshot(c);
    galloc_memory_stats(c->a, &c->stats);
    c->has_sleep_stats = galloc_sleep_stats(c->a, &c->sleep) == GALLOC_OK;
    galloc_allocator_destroy(c->a); /* releases the blocks still live: no need to free them one by one */
    c->a = NULL;
    ga_idmap_free(&c->map);
}

/* Copy a tag event's lists (the reader's text lives until its next event)
 * into buf, NUL-terminated (the reader keeps them under GA_TAG_LIST_MAX). */
static void keep_tag_text(ga_event_t *e, char (*buf)[GA_TAG_LIST_MAX])
{
    const char *src[2] = {e->text, e->text2};
    size_t len[2] = {e->text_len, e->text2_len};
    for (int i = 0; i < 2; i++) {
        size_t k = len[i] < GA_TAG_LIST_MAX - 1 ? len[i] : GA_TAG_LIST_MAX - 1;
        if (src[i] != NULL)
            memcpy(buf[i], src[i], k);
        buf[i][k] = '\0';
    }
    e->text = buf[0];
    e->text2 = src[1] != NULL ? buf[1] : NULL;
}

/* Read a chunk into ev (*n events). It ends early after an annotate event,
 * so that the annotation (copied into next_annotation: the reader's text is
 * short-lived) applies exactly to the events after it, and after a tag event,
 * whose lists are copied into tag_text. Returns the last ga_reader_next's
 * result: 1 (more to read), 0 (the end) or -1 (out->read_error). */
static int read_chunk(ga_reader_t *r, ga_event_t *ev, size_t *n, ga_replay_t *out, char next_annotation[ANNOTATION_LEN],
                      char (*tag_text)[GA_TAG_LIST_MAX], bool *annotated)
{
    int rc = 1;
    while (*n < GA_REPLAY_CHUNK && (rc = ga_reader_next(r, &ev[*n], out->read_error, sizeof(out->read_error))) > 0) {
        ga_event_t *e = &ev[(*n)++];
        if (e->kind == GA_EV_ANNOTATE) {
            size_t k = e->text_len < ANNOTATION_LEN - 1 ? e->text_len : ANNOTATION_LEN - 1;
            memcpy(next_annotation, e->text, k);
            next_annotation[k] = '\0';
            e->text = next_annotation; /* NUL-terminated, alive while the chunk is replayed */
            e->text_len = k;
            *annotated = true;
            break;
        }
        if (e->kind >= GA_EV_TAG_BEGIN) {
            keep_tag_text(e, tag_text);
            out->tag_events++;
            out->sleep_events += e->kind == GA_EV_SLEEP || e->kind == GA_EV_WAKE;
            break;
        }
    }
    return rc;
}

int ga_replay_run(ga_reader_t *r, const ga_replay_opts_t *o, const char *const *confs, size_t n_confs,
                  ga_replay_t *out)
{
    static const char *const no_conf[] = {NULL};
    memset(out, 0, sizeof(*out));
    if (n_confs == 0) {
        confs = no_conf;
        n_confs = 1;
    }
    out->device_memory = o->device_memory       ? o->device_memory
                         : ga_reader_device_memory(r) ? ga_reader_device_memory(r)
                                                      : GA_REPLAY_DEFAULT_MEMORY;
    out->cols = calloc(n_confs, sizeof(*out->cols));
    ga_event_t *ev = malloc(GA_REPLAY_CHUNK * sizeof(*ev));
    if (out->cols == NULL || ev == NULL)
        goto err_nomem;
    out->n_cols = n_confs;
    for (size_t i = 0; i < n_confs; i++)
        if (setup_column(&out->cols[i], confs[i], o, out->device_memory, i) != 0)
            goto err_nomem;

    char annotation[ANNOTATION_LEN] = "";
    char tag_text[2][GA_TAG_LIST_MAX]; /* the chunk's last event's tag lists, NUL-terminated */
    out->no_sleep = o->no_sleep;
    for (;;) {
        double t0 = now();
        size_t n = 0;
        char next_annotation[ANNOTATION_LEN] = "";
        bool annotated = false;
        int rc = read_chunk(r, ev, &n, out, next_annotation, tag_text, &annotated);
        out->read_seconds += now() - t0;
        chunk_ctx_t x = {.ev = ev, .n = n, .first = out->events, .annotation = annotation};
        for (size_t i = 0; i < n_confs && n > 0; i++)
            if (out->cols[i].a != NULL)
                replay_chunk(&out->cols[i], &x);
        out->events += n;
        if (annotated)
            memcpy(annotation, next_annotation, sizeof(annotation));
        if (o->progress != NULL)
            o->progress(o->progress_ctx, ga_reader_progress(r), out->events);
        if (rc < 0) {
            out->read_failed = true;
            break;
        }
        if (rc == 0) /* the end: a chunk cut at an annotation or tag event has rc 1 */
            break;
    }
    ga_reader_notes(r, &out->notes);
    for (size_t i = 0; i < n_confs; i++)
        finish_column(&out->cols[i], out->events, o->check);
    free(ev);
    return 0;

err_nomem:
    free(ev);
    snprintf(out->read_error, sizeof(out->read_error), "out of host memory setting up the replay");
    ga_replay_release(out);
    return -1;
}

void ga_replay_release(ga_replay_t *rp)
{
    for (size_t i = 0; rp->cols != NULL && i < rp->n_cols; i++) {
        ga_replay_column_t *c = &rp->cols[i];
        galloc_allocator_destroy(c->a);
        ga_idmap_free(&c->map);
        ga_sampler_free(&c->sampler);
        free(c->label);
        free(c->conf);
        free(c->ooms);
    }
    free(rp->cols);
    rp->cols = NULL;
    rp->n_cols = 0;
}

void ga_replay_series(const ga_replay_t *rp, size_t i, ga_series_t *out)
{
    ga_sampler_series(&rp->cols[i].sampler, rp->cols[i].label, out);
}
