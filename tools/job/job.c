/*
 * job.c: reading a trace into a job (job.h). Each unit's events go into
 * memory through the format's reader; for a PyTorch snapshot the same parsed
 * file (the reader's, kept open) also gives the recorded settings, the view
 * --verify compares, the device size its oom entries tell and, for a trace
 * that starts mid-run, the allocator state at its first entry.
 */
#include "tools/job/job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"
#include "tools/idmap.h"
#include "tools/readers/units.h"
#include "tools/snapshot/pickle_read.h"
#include "tools/snapshot/torch_snapshot.h"

const char *ga_job_memory_source_text(ga_job_memory_source_t s)
{
    switch (s) {
    case GA_JOB_MEM_OPTION: return "given";
    case GA_JOB_MEM_HEADER: return "from the trace's header";
    case GA_JOB_MEM_PROPERTIES: return "from the trace's deviceProperties totalGlobalMem";
    case GA_JOB_MEM_OOM_ENTRIES: return "from the snapshot: reserved + device_free at its oom entries";
    case GA_JOB_MEM_DEFAULT: break;
    }
    return "not recorded: assumed, --device-memory sets it";
}

/* Append text[0..n) and a NUL to u's text; its offset in *off. 0 or -1. */
static int push_text(ga_job_unit_t *u, const char *text, size_t n, uint64_t *off)
{
    while (u->text_len + n + 1 > u->text_cap) {
        char *nt = ga_grow(u->text, &u->text_cap, u->text_cap, 1, 256);
        if (nt == NULL)
            return -1;
        u->text = nt;
    }
    if (n > 0)
        memcpy(u->text + u->text_len, text, n);
    u->text[u->text_len + n] = '\0';
    *off = u->text_len;
    u->text_len += n + 1;
    return 0;
}

static int push_extra(ga_job_unit_t *u, const ga_event_t *e, uint32_t *idx)
{
    *idx = UINT32_MAX;
    if (e->place == 0 && e->device_free == 0 && e->released == 0)
        return 0;
    if (u->n_extras >= UINT32_MAX - 1)
        return -1;
    ga_job_extra_t *nx = ga_grow(u->extras, &u->cap_extras, u->n_extras, sizeof(*nx), 64);
    if (nx == NULL)
        return -1;
    u->extras = nx;
    u->extras[u->n_extras] =
        (ga_job_extra_t){.place = e->place, .device_free = e->device_free, .released = e->released};
    *idx = (uint32_t)u->n_extras++;
    return 0;
}

/* Times are kept for the formats that record them outside a snapshot (a
 * snapshot's are read from its entries, ga_job_event). */
static int push_time(ga_job_unit_t *u, size_t i, int64_t t)
{
    if (t == 0 && u->time_us == NULL)
        return 0;
    if (u->time_us == NULL) {
        u->time_us = calloc(u->cap_ev ? u->cap_ev : 1, sizeof(*u->time_us));
        if (u->time_us == NULL)
            return -1;
    }
    u->time_us[i] = t;
    return 0;
}

static void count(ga_job_unit_t *u, const ga_event_t *e)
{
    switch (e->kind) {
    case GA_EV_ALLOC: u->allocs++; break;
    case GA_EV_FREE:
    case GA_EV_FREE_PENDING: u->frees++; break;
    case GA_EV_OOM: u->ooms++; break;
    case GA_EV_ANNOTATE: u->annotations++; break;
    default: u->other++; break;
    }
    if ((e->kind == GA_EV_ALLOC || e->kind == GA_EV_OOM) && !(e->flags & GA_EVF_SEEDED) && e->size > u->max_alloc)
        u->max_alloc = e->size; /* a seeded stand-in block is no request of the job */
    u->sets_fraction |= e->kind == GA_EV_SET_FRACTION;
    if (e->kind >= GA_EV_TAG_BEGIN) {
        u->tag_events++;
        u->sleep_events += e->kind == GA_EV_SLEEP || e->kind == GA_EV_WAKE;
    }
    if (e->kind == GA_EV_OOM && e->device_free > 0 && e->device_free >= e->size)
        u->cap.capped_ooms++; /* a memory fraction refused it: the engine infers the cap */
}

static int push_event(ga_job_unit_t *u, const ga_event_t *e)
{
    size_t old_cap = u->cap_ev;
    ga_job_ev_t *nv = ga_grow(u->ev, &u->cap_ev, u->n, sizeof(*nv), 4096);
    if (nv == NULL)
        return -1;
    u->ev = nv;
    if (u->time_us != NULL && u->cap_ev != old_cap) {
        int64_t *nt = realloc(u->time_us, u->cap_ev * sizeof(*nt));
        if (nt == NULL)
            return -1;
        memset(nt + old_cap, 0, (u->cap_ev - old_cap) * sizeof(*nt));
        u->time_us = nt;
    }
    ga_job_ev_t *f = &u->ev[u->n];
    memset(f, 0, sizeof(*f));
    f->id = e->id;
    f->size = e->size;
    f->stream = e->stream;
    f->where = e->where;
    f->kind = (uint8_t)e->kind;
    f->flags = (uint8_t)e->flags;
    if (e->kind == GA_EV_SET_FRACTION)
        memcpy(&f->size, &e->fraction, sizeof(f->size)); /* the only event with a double */
    if (e->kind == GA_EV_ANNOTATE && push_text(u, e->text, e->text_len, &f->id) != 0)
        return -1;
    if (e->kind >= GA_EV_TAG_BEGIN) { /* the lists into the unit's text (the reader's is short-lived) */
        uint64_t off = 0;
        if (push_text(u, e->text, e->text_len, &f->id) != 0 ||
            (e->text2 != NULL && push_text(u, e->text2, e->text2_len, &off) != 0))
            return -1;
        f->size = e->text2 != NULL ? off + 1 : 0;
    }
    if (push_extra(u, e, &f->extra) != 0 || (u->format != GA_FORMAT_TORCH && push_time(u, u->n, e->time_us) != 0))
        return -1;
    if ((e->kind == GA_EV_ALLOC || e->kind == GA_EV_OOM) && ga_owners_index_event(&u->owners, e, &f->owner) != 0)
        return -1;
    count(u, e);
    u->n++;
    return 0;
}

void ga_job_event(const ga_job_unit_t *u, size_t i, ga_event_t *out)
{
    const ga_job_ev_t *f = &u->ev[i];
    memset(out, 0, sizeof(*out));
    out->kind = (ga_event_kind_t)f->kind;
    out->flags = f->flags;
    out->id = f->id;
    out->size = f->size;
    out->stream = f->stream;
    out->where = f->where;
    if (f->kind == GA_EV_SET_FRACTION)
        memcpy(&out->fraction, &f->size, sizeof(out->fraction));
    if (f->kind == GA_EV_ANNOTATE || f->kind >= GA_EV_TAG_BEGIN) {
        out->id = 0;
        out->text = u->text + f->id;
        out->text_len = strlen(out->text);
        if (f->kind == GA_EV_SLEEP && f->size != 0) {
            out->text2 = u->text + f->size - 1;
            out->text2_len = strlen(out->text2);
        }
        if (f->kind != GA_EV_SLEEP)
            out->size = 0;
    }
    if (f->extra != UINT32_MAX) {
        const ga_job_extra_t *x = &u->extras[f->extra];
        out->place = x->place;
        out->device_free = x->device_free;
        out->released = x->released;
    }
    if (u->time_us != NULL)
        out->time_us = u->time_us[i];
    const ga_torch_snapshot_t *snap = ga_job_snapshot(u);
    if (snap != NULL && !(f->flags & GA_EVF_PROLOGUE)) { /* the recorded entry: its stack and time */
        ga_torch_list_t trace = ga_torch_trace(snap, (size_t)u->device);
        if (f->where < trace.n) {
            ga_torch_entry_t e;
            ga_torch_entry(&trace, (size_t)f->where, &e);
            out->frames = e.frames;
            out->time_us = e.time_us.kind == GA_TORCH_INT ? (int64_t)e.time_us.v : 0;
        }
    }
}

const char *ga_job_recorded(const ga_job_unit_t *u)
{
    return u->file != NULL && u->file->has_recorded ? u->file->recorded : NULL;
}

const struct ga_torch_snapshot *ga_job_snapshot(const ga_job_unit_t *u)
{
    return u->file != NULL && u->file->reader != NULL ? ga_reader_snapshot(u->file->reader) : NULL;
}

/* What a snapshot's view shows the device held: its final segments, and
 * walked back through its segment entries, the reserved bytes at its first
 * entry and the most at once. */
static void view_reserved(ga_job_unit_t *u)
{
    const ga_snap_view_t *v = &u->view;
    uint64_t last = 0;
    for (size_t i = 0; i < v->n_seg; i++)
        last += v->seg[i].total_size;
    int64_t delta = 0, most = 0; /* reserved after each entry, less reserved at the first */
    for (size_t i = 0; i < v->n_ev; i++) {
        const ga_dev_event_t *e = &v->ev[i];
        if (e->action == GA_DEV_SEGMENT_ALLOC || e->action == GA_DEV_SEGMENT_MAP)
            delta += (int64_t)e->size;
        else if (e->action == GA_DEV_SEGMENT_FREE || e->action == GA_DEV_SEGMENT_UNMAP)
            delta -= (int64_t)e->size;
        most = delta > most ? delta : most;
    }
    u->reserved_last = last;
    u->reserved_first = delta < 0 || (uint64_t)delta <= last ? last - (uint64_t)delta : 0;
    u->reserved_peak = u->reserved_first + (uint64_t)most;
    if (u->reserved_peak < last) /* entries the view could not place: the final state bounds it still */
        u->reserved_peak = last;
}

/* What a snapshot unit adds: the view, the device size its oom entries
 * tell, and the state at its first entry when it starts mid-run. */
static void snapshot_unit(ga_job_unit_t *u, const ga_job_opts_t *o)
{
    const ga_torch_snapshot_t *snap = ga_job_snapshot(u);
    char err[512];
    if (snap == NULL)
        return;
    if (ga_snap_view_load(snap, u->path, u->device, 0, &u->view, err, sizeof(err)) == 0) {
        u->has_view = true;
        view_reserved(u);
        if (u->view.device_memory != 0) {
            u->recorded_memory = u->view.device_memory;
            u->recorded_source = GA_JOB_MEM_OOM_ENTRIES;
        }
    }
    u->midrun =
        u->notes.prologue > 0 || (u->has_view && (u->view.untraced_blocks > 0 || u->view.untraced_segments > 0));
    if (!u->midrun || o->no_seed)
        return;
    if (ga_seed_from_snapshot(snap, u->path, u->device, &u->seed, u->seed_error, sizeof(u->seed_error)) == 0)
        u->seeded = true;
}

/* A seeded piece's recorded stack: a snapshot block's frames. */
static void piece_frame(const void *data, size_t i, ga_frame_t *out)
{
    ga_torch_frame_t f;
    ga_torch_frame(data, i, &f);
    *out = (ga_frame_t){f.filename, f.filename_len, f.name, f.name_len, f.line};
}

static uintptr_t piece_key(const void *data, size_t i)
{
    return (uintptr_t)((const ga_pk_value_t *)data)->u.seq.items[i];
}

/* The owner classes of the seeded state's live blocks (its segment's stream
 * and pool; the final block's stack, or "allocated before the trace"). */
static int seed_owners(ga_job_unit_t *u)
{
    for (size_t s = 0; s < u->seed.n_seg; s++) {
        const ga_seed_segment_t *g = &u->seed.seg[s];
        for (size_t k = g->first; k < g->first + g->n; k++) {
            ga_seed_piece_t *p = &u->seed.pc[k];
            if (!p->live)
                continue;
            ga_stack_t st = {0};
            if (p->frames != NULL)
                st = (ga_stack_t){.kind = GA_STACK_FRAMES,
                                  .n = ga_torch_frames_count(p->frames),
                                  .data = p->frames,
                                  .frame = piece_frame,
                                  .key = piece_key};
            if (ga_owners_index_block(&u->owners, &st, g->stream, g->pool_id, &p->owner) != 0)
                return -1;
        }
    }
    return 0;
}

/* GA_EVF_KEPT on each allocation the trace never frees (and kept on such
 * seeded blocks): what is live at the end, by trace id. An id allocated
 * again while live lost its free: the earlier block was freed, not kept. */
static int mark_kept(ga_job_unit_t *u)
{
    ga_idmap_t live;
    ga_idmap_init(&live);
    int rc = 0;
    /* seeded pieces first: stream = their index, ptr = a marker that they are pieces */
    for (size_t k = 0; u->seeded && k < u->seed.n_pc && rc == 0; k++)
        if (u->seed.pc[k].live && !u->seed.pc[k].pending)
            rc = ga_idmap_put(&live, u->seed.pc[k].addr, (ga_idmap_val_t){&live, k}, NULL, NULL);
    for (size_t i = 0; i < u->n && rc == 0; i++) {
        const ga_job_ev_t *f = &u->ev[i];
        if (f->kind == GA_EV_ALLOC && !(u->seeded && (f->flags & GA_EVF_PROLOGUE)))
            rc = ga_idmap_put(&live, f->id, (ga_idmap_val_t){NULL, i}, NULL, NULL);
        else if (f->kind == GA_EV_FREE || f->kind == GA_EV_FREE_PENDING)
            ga_idmap_remove(&live, f->id, NULL);
    }
    for (size_t i = 0; i < live.map.cap && rc == 0; i++) {
        const ga_idmap_slot_t *sl = ga_addrmap_slot(&live.map, i);
        if (sl == NULL)
            continue;
        if (sl->val.ptr != NULL)
            u->seed.pc[sl->val.stream].kept = true;
        else
            u->ev[sl->val.stream].flags |= GA_EVF_KEPT;
    }
    if (rc == 0 && live.has_zero) {
        if (live.zero_val.ptr != NULL)
            u->seed.pc[live.zero_val.stream].kept = true;
        else
            u->ev[live.zero_val.stream].flags |= GA_EVF_KEPT;
    }
    ga_idmap_free(&live);
    return rc;
}

static void unit_free(ga_job_unit_t *u)
{
    ga_owners_index_free(&u->owners);
    free(u->label);
    free(u->ev);
    free(u->extras);
    free(u->time_us);
    free(u->text);
    if (u->seeded)
        ga_seed_free(&u->seed);
    if (u->has_view)
        ga_snap_view_free(&u->view);
    memset(u, 0, sizeof(*u));
}

/* Read the current unit of r into u. 0, or -1 with err. */
static int read_unit(ga_job_unit_t *u, ga_reader_t *r, const ga_job_opts_t *o, uint64_t done, char *err, size_t errlen)
{
    ga_event_t e;
    int rc;
    while ((rc = ga_reader_next(r, &e, err, errlen)) > 0) {
        if (push_event(u, &e) != 0) {
            snprintf(err, errlen, "%s: out of host memory loading the trace", u->path);
            return -1;
        }
        if (o->progress != NULL && (u->n & 0xffff) == 0)
            o->progress(o->progress_ctx, ga_reader_progress(r), done + u->n);
    }
    if (rc < 0)
        return -1;
    ga_reader_notes(r, &u->notes);
    return 0;
}

/* The unit's device size: --device-memory, else what the trace says, else
 * the default. 0, or -1 with err: a reserve that leaves the allocator no
 * memory of a size it is taken off. */
static int size_unit(ga_job_unit_t *u, ga_reader_t *r, const ga_job_opts_t *o, char *err, size_t errlen)
{
    if (u->recorded_memory == 0 && ga_reader_device_memory(r) != 0) {
        u->recorded_memory = ga_reader_device_memory(r);
        u->recorded_source = u->format == GA_FORMAT_KINETO ? GA_JOB_MEM_PROPERTIES : GA_JOB_MEM_HEADER;
    }
    if (o->device_memory != 0) {
        u->memory = o->device_memory;
        u->memory_source = GA_JOB_MEM_OPTION;
    } else if (u->recorded_memory != 0) {
        u->memory = u->recorded_memory;
        u->memory_source = u->recorded_source;
    } else {
        u->memory = GA_JOB_DEFAULT_MEMORY;
        u->memory_source = GA_JOB_MEM_DEFAULT;
    }
    if (u->memory_source != GA_JOB_MEM_OOM_ENTRIES && o->reserve != 0) {
        if (o->reserve >= u->memory) {
            char a[32], b[32];
            ga_units_format_size(o->reserve, a, sizeof(a));
            ga_units_format_size(u->memory, b, sizeof(b));
            snprintf(err, errlen,
                     "%s: --reserve %s is not less than the device's %s (%s): the allocator would have no memory; "
                     "a reserve is the memory outside the allocator, a part of the device",
                     u->label, a, b, ga_job_memory_source_text(u->memory_source));
            return -1;
        }
        u->reserve = o->reserve;
        u->memory -= u->reserve;
    }
    return 0;
}

static int add_units(ga_job_t *job, ga_job_file_t *file, const ga_job_opts_t *o, char *err, size_t errlen)
{
    ga_reader_t *r = file->reader;
    size_t nu = ga_reader_units(r);
    ga_job_unit_t *units = realloc(job->units, (job->n_units + nu) * sizeof(*units));
    if (units == NULL) {
        snprintf(err, errlen, "%s: out of host memory", file->path);
        return -1;
    }
    job->units = units;
    memset(units + job->n_units, 0, nu * sizeof(*units));
    size_t first = job->n_units;
    for (size_t k = 0; k < nu; k++) {
        ga_job_unit_t *u = &units[first + k];
        ga_owners_index_init(&u->owners);
        u->path = file->path;
        u->file = file;
        u->unit = k;
        u->format = file->format;
        u->device = ga_reader_unit_device(r, k);
        const char *ul = ga_reader_unit_label(r, k); /* the reader's buffer: copied into the label */
        size_t lp = strlen(file->path), ln = lp + strlen(ul) + 2;
        u->label = malloc(ln);
        if (u->label == NULL) {
            snprintf(err, errlen, "%s: out of host memory", file->path);
            goto fail;
        }
        snprintf(u->label, ln, "%s%s%s", file->path, ul[0] ? " " : "", ul);
        u->unit_label = u->label + lp + (ul[0] ? 1 : 0);
        uint64_t done = 0;
        for (size_t j = first; j < first + k; j++)
            done += units[j].n;
        if ((k > 0 && ga_reader_begin(r, k, err, errlen) != 0) || read_unit(u, r, o, done, err, errlen) != 0)
            goto fail;
    }
    for (size_t k = 0; k < nu; k++) {
        ga_job_unit_t *u = &units[first + k];
        u->reserved_peak = u->notes.start.peak_reserved; /* a profiler trace's own totals (0: none) */
        if (u->notes.start.kind == GA_START_SEEDED)
            u->reserved_first = u->notes.start.reserved;
        snapshot_unit(u, o);
        if (size_unit(u, r, o, err, errlen) != 0)
            goto fail;
        if ((u->seeded && seed_owners(u) != 0) || mark_kept(u) != 0) {
            snprintf(err, errlen, "%s: out of host memory indexing the trace's owners", file->path);
            goto fail;
        }
        ga_owners_index_done(&u->owners);
    }
    job->n_units += nu;
    for (size_t k = 0; k < nu; k++)
        job->events += units[first + k].n;
    return 0;
fail:
    for (size_t k = 0; k < nu; k++)
        unit_free(&units[first + k]);
    return -1;
}

int ga_job_add(ga_job_t *job, const char *path, const ga_job_opts_t *o, char *err, size_t errlen)
{
    ga_job_file_t **files = realloc(job->files, (job->n_files + 1) * sizeof(*files));
    if (files == NULL) {
        snprintf(err, errlen, "%s: out of host memory", path);
        return -1;
    }
    job->files = files;
    ga_job_file_t *f = calloc(1, sizeof(*f));
    if (f == NULL || (f->path = strdup(path)) == NULL) {
        free(f);
        snprintf(err, errlen, "%s: out of host memory", path);
        return -1;
    }
    if (ga_reader_open(path, o->format, &f->reader, err, errlen) != 0) {
        free(f->path);
        free(f);
        return -1;
    }
    f->format = ga_reader_format(f->reader);
    const ga_torch_snapshot_t *snap = ga_reader_snapshot(f->reader);
    if (snap != NULL) { /* a snapshot's own run: its settings, else (older PyTorch) the defaults it ran under */
        f->has_recorded = true;
        f->settings_known =
            ga_torch_recorded_conf(snap, f->recorded, sizeof(f->recorded), f->recorded_text, sizeof(f->recorded_text));
    }
    if (add_units(job, f, o, err, errlen) != 0) {
        ga_reader_close(f->reader);
        free(f->path);
        free(f);
        return -1;
    }
    files[job->n_files++] = f;
    return 0;
}

void ga_job_free(ga_job_t *job)
{
    for (size_t i = 0; i < job->n_units; i++)
        unit_free(&job->units[i]);
    for (size_t i = 0; i < job->n_files; i++) {
        ga_reader_close(job->files[i]->reader);
        free(job->files[i]->path);
        free(job->files[i]);
    }
    free(job->units);
    free(job->files);
    memset(job, 0, sizeof(*job));
}
