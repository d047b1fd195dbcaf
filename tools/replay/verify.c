/*
 * verify.c: `galloc replay --verify` (see verify.h for what is compared).
 *
 * The replay runs under the snapshot's recorded allocator_settings (or
 * --conf) with galloc recording its own history, writes galloc's snapshot of
 * the final state to a temporary file, and both snapshots go through the one
 * reader of snap_view.c. galloc's snapshot carries no frames: the comparison
 * reads none, and written out in full (PyTorch's pickle memoizes them, so
 * its file holds each once) they were 27 times the recorded file, read back
 * whole: 250 MB of heap for a 3.5 MB snapshot whose replay takes 23 MB. A trace that starts mid-run (the ring buffer wrapped)
 * is replayed from the state reconstructed at its first entry (seed.h): from an
 * empty allocator every later decision could differ for that reason alone and
 * the comparison would prove nothing. Expandable segments are rebuilt too,
 * with the pages mapped at the first entry (seed_resv.h). When the state
 * cannot be reconstructed (an inconsistent trace, two reservations of one
 * stream and pool) the snapshot is refused with exit 2, saying why.
 *
 * A record that holds nothing the replay could get wrong is said so (exit 3)
 * rather than "agrees": without a device event or a block event the replay
 * reproduces, its final segments are the replay's own starting state (seeded
 * from them), so comparing them with themselves would prove nothing.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/engine/replay.h"
#include "tools/readers/units.h"
#include "tools/replay/verify.h"
#include "tools/replay/verify_int.h"
#include "tools/report/outputs.h"
#include "tools/report/report.h"
#include "tools/snapshot/seed.h"
#include "tools/snapshot/snapfile.h"

static void describe(const ga_dev_event_t *e, char *out, size_t len)
{
    if (e == NULL) {
        snprintf(out, len, "(no more device events)");
        return;
    }
    char sz[32];
    ga_units_format_size(e->size, sz, sizeof(sz));
    int n = snprintf(out, len, "%s %" PRIu64 " bytes (%s)", ga_dev_action_name(e->action), e->size, sz);
    if (n > 0 && (size_t)n < len && e->action == GA_DEV_SEGMENT_FREE)
        snprintf(out + n, len - (size_t)n, " of segment #%" PRId64, e->segment);
    else if (n > 0 && (size_t)n < len && e->action == GA_DEV_OOM)
        snprintf(out + n, len - (size_t)n, ", device_free %" PRIu64, e->extra);
}

static void json_event(FILE *out, const ga_dev_event_t *e)
{
    if (e == NULL) {
        fputs("null", out);
        return;
    }
    fprintf(out, "{\"entry\": %zu, \"action\": \"%s\", \"size\": %" PRIu64 ", \"segment\": %" PRId64 "}", e->entry,
            ga_dev_action_name(e->action), e->size, e->segment);
}

typedef struct outcome {
    const char *path, *unit, *settings; /* settings: the config string replayed ("" = defaults) */
    int device;                         /* the snapshot's device index */
    uint64_t device_memory;             /* the sim device's size */
    const char *error;                  /* why it could not be verified, NULL if it was */
    const char *nothing;                /* why there is nothing to verify, NULL if there is something */
    const ga_seed_t *seed;              /* the reconstructed state at the first entry, NULL if none */
    const ga_snap_view_t *rec, *rep;
    const ga_verify_cmp_t *c;
} outcome_t;

/* Why orphan entry e cannot be replayed (snap_view.h). */
static const char *orphan_why(const ga_dev_event_t *e)
{
    return e->action == GA_DEV_SEGMENT_FREE    ? "which the trace had already freed"
           : e->action == GA_DEV_SEGMENT_UNMAP ? "which the trace had already unmapped"
                                               : "which the trace never allocated and no segment holds";
}

/* "1 orphan entry: device_traces[0][3] free_completed of 0x... which ..." */
static void orphan_text(FILE *out, const ga_snap_view_t *v)
{
    const ga_dev_event_t *e = &v->first_orphan;
    if (v->orphans == 1)
        fprintf(out, "1 orphan entry: ");
    else
        fprintf(out, "%zu orphan entries, the first: ", v->orphans);
    fprintf(out, "device_traces[%d][%zu] %s of 0x%" PRIx64 " %s\n", v->device, e->entry, ga_dev_action_name(e->action),
            e->addr, orphan_why(e));
}

static void report_text(FILE *out, const outcome_t *o)
{
    char mem[32];
    ga_units_format_size(o->device_memory, mem, sizeof(mem));
    fprintf(out, "== %s%s%s: verify (settings: %s; sim device %s)\n", o->path, o->unit[0] ? " " : "", o->unit,
            o->settings == NULL ? "-"
            : o->settings[0]    ? o->settings
                                : "PyTorch's defaults",
            mem);
    if (o->error != NULL) {
        fprintf(out, "verdict: cannot verify (the reason is on stderr)\n\n");
        return;
    }
    if (o->rec->orphans > 0)
        orphan_text(out, o->rec);
    if (o->nothing != NULL) {
        fprintf(out, "nothing to verify: %s\nverdict: nothing to verify\n\n", o->nothing);
        return;
    }
    if (o->seed != NULL) {
        const ga_seed_t *sd = o->seed;
        fprintf(out,
                "the trace starts mid-run: the state at its first entry was reconstructed backwards from the "
                "final segments (%zu segments, %" PRIu64 " live blocks) and seeded",
                sd->n_seg, sd->live_blocks);
        if (sd->pending_blocks > 0)
            fprintf(out, ", %" PRIu64 " of the blocks pending free (waiting on a stream)", sd->pending_blocks);
        if (sd->private_segments > 0)
            fprintf(out, ", %zu segments in %zu private pools (MemPool or CUDA graph)", sd->private_segments,
                    sd->private_pools);
        fputc('\n', out);
    }
    const ga_verify_cmp_t *c = o->c;
    fprintf(out,
            "device events: %zu of %zu agree (segment_alloc/free/map/unmap and oom: action and size in order, "
            "re-aligned after a difference, segment_free also by the segment it releases; addresses are not "
            "compared)\n",
            c->ev_agree, c->ev_total);
    fputs("by kind:", out);
    for (int k = 0, n = 0; k < GA_DEV_N_ACTIONS; k++)
        if (c->kind[k].total > 0)
            fprintf(out, "%s %s %zu of %zu", n++ ? "," : "", ga_dev_action_name((ga_dev_action_t)k), c->kind[k].agree,
                    c->kind[k].total);
    fprintf(out, " (each kind in order, re-aligned after a difference within %d events)\n", GA_VERIFY_RESYNC);
    fprintf(out, "final segments: %zu of %zu agree (total size, pool by correspondence, blocks' sizes and states)\n",
            c->seg_agree, c->seg_total);
    if (c->diverged) {
        const ga_dev_event_t *a = c->first < o->rec->n_ev ? &o->rec->ev[c->first] : NULL;
        const ga_dev_event_t *b = c->first_rep < o->rep->n_ev ? &o->rep->ev[c->first_rep] : NULL;
        char as[160], bs[160];
        describe(a, as, sizeof(as));
        describe(b, bs, sizeof(bs));
        fprintf(out, "first divergence at device event %zu:\n", c->first);
        if (a != NULL)
            fprintf(out, "  snapshot device_traces[%d][%zu]: %s\n", o->device, a->entry, as);
        else
            fprintf(out, "  snapshot: %s\n", as);
        if (b != NULL)
            fprintf(out, "  galloc   trace entry %zu: %s\n", b->entry, bs);
        else
            fprintf(out, "  galloc: %s\n", bs);
    }
    if (o->c->seg_first[0])
        fprintf(out, "first final-state difference: %s\n", c->seg_first);
    fprintf(out, "verdict: %s\n\n", c->diverged || c->seg_first[0] ? "diverges" : "agrees");
}

static void report_json(FILE *out, const outcome_t *o, bool first)
{
    fprintf(out, "%s\n    {\"file\": ", first ? "" : ",");
    ga_report_json_str(out, o->path);
    fputs(", \"unit\": ", out);
    ga_report_json_str(out, o->unit);
    fputs(", \"settings\": ", out);
    if (o->settings != NULL)
        ga_report_json_str(out, o->settings);
    else
        fputs("null", out);
    fprintf(out, ", \"device\": %d, \"device_memory\": %" PRIu64 ", \"seeded\": ", o->device, o->device_memory);
    if (o->seed != NULL)
        fprintf(out, "{\"segments\": %zu, \"live_blocks\": %" PRIu64 "}", o->seed->n_seg, o->seed->live_blocks);
    else
        fputs("null", out);
    fputs(", \"error\": ", out);
    if (o->error != NULL) {
        ga_report_json_str(out, o->error);
        fputs(", \"verdict\": \"cannot verify\"}", out);
        return;
    }
    const ga_dev_event_t *e = &o->rec->first_orphan;
    fprintf(out, "null, \"orphan_entries\": %zu, \"first_orphan\": ", o->rec->orphans);
    if (o->rec->orphans > 0) {
        fprintf(out, "{\"entry\": %zu, \"action\": \"%s\", \"addr\": %" PRIu64 ", \"why\": ", e->entry,
                ga_dev_action_name(e->action), e->addr);
        ga_report_json_str(out, orphan_why(e));
        fputs("}", out);
    } else {
        fputs("null", out);
    }
    fputs(", \"reason\": ", out);
    if (o->nothing != NULL) {
        ga_report_json_str(out, o->nothing);
        fputs(", \"verdict\": \"nothing to verify\"}", out);
        return;
    }
    const ga_verify_cmp_t *c = o->c;
    fprintf(out,
            "null, \"verdict\": \"%s\",\n     \"device_events\": {\"total\": %zu, \"agree\": %zu}, "
            "\"segments\": {\"total\": %zu, \"agree\": %zu},\n     ",
            c->diverged || c->seg_first[0] ? "diverges" : "agrees", c->ev_total, c->ev_agree, c->seg_total,
            c->seg_agree);
    fputs("\"by_kind\": {", out);
    for (int k = 0; k < GA_DEV_N_ACTIONS; k++)
        fprintf(out, "%s\"%s\": {\"total\": %zu, \"agree\": %zu}", k ? ", " : "",
                ga_dev_action_name((ga_dev_action_t)k), c->kind[k].total, c->kind[k].agree);
    fputs("},\n     \"first_divergence\": ", out);
    if (c->diverged) {
        fprintf(out, "{\"device_event\": %zu, \"galloc_device_event\": %zu, \"snapshot\": ", c->first, c->first_rep);
        json_event(out, c->first < o->rec->n_ev ? &o->rec->ev[c->first] : NULL);
        fputs(", \"galloc\": ", out);
        json_event(out, c->first_rep < o->rep->n_ev ? &o->rep->ev[c->first_rep] : NULL);
        fputs("}", out);
    } else {
        fputs("null", out);
    }
    fputs(", \"segment_divergence\": ", out);
    if (c->seg_first[0])
        ga_report_json_str(out, c->seg_first);
    else
        fputs("null", out);
    fputs("}", out);
}

void ga_verify_json_begin(FILE *out)
{
    fputs("{\"tool\": \"galloc replay --verify\", \"version\": 1, \"traces\": [", out);
}

void ga_verify_json_end(FILE *out)
{
    fputs("\n  ]\n}\n", out);
}

/* Replay under conf with galloc's history recorded; its snapshot of the final
 * state into tmp. 0, or -1 with err. */
static int replay_to_snapshot(const ga_job_unit_t *u, const ga_verify_opts_t *o, const char *conf, const char *tmp,
                              char *err, size_t errlen)
{
    /* no frames: the comparison reads none, and they were nearly all of the file */
    ga_replay_opts_t ro = {.backend = o->backend,
                           .snapshot_ops = &ga_outputs_snapshot_ops,
                           .snapshot_at_end = true,
                           .snapshot_no_frames = true};
    /* the run as recorded: its segments at the recorded addresses, whatever the settings */
    ga_replay_spec_t spec = {.conf = conf, .recorded = true};
    ga_replay_column_t c;
    memset(&c, 0, sizeof(c));
    if (ga_replay_column(u, &ro, &spec, tmp, &c) != 0) {
        snprintf(err, errlen, "out of host memory replaying the trace");
        ga_replay_column_release(&c);
        return -1;
    }
    if (c.create_status != GALLOC_OK)
        snprintf(err, errlen, "configuration \"%.100s\": %.800s", conf, c.create_error);
    else if (c.n_ooms > 0 && c.ooms[0].facts.at_start) /* nothing replayed: no state to compare */
        snprintf(err, errlen,
                 "the state the trace starts in does not fit the device (a request of %" PRIu64
                 " bytes failed seeding it; --device-memory): %.700s",
                 c.ooms[0].size, c.ooms[0].message);
    else if (c.snapshot_error[0])
        snprintf(err, errlen, "%.900s", c.snapshot_error);
    else if (c.errors)
        snprintf(err, errlen, "the replay failed: %.900s", c.first_error);
    int rc = err[0] ? -1 : 0;
    ga_replay_column_release(&c);
    return rc;
}

/* The view of galloc's snapshot at tmp (device). 0, or -1 with err. */
static int load_replay_view(const char *tmp, int device, ga_snap_view_t *rep, char *err, size_t errlen)
{
    ga_snapfile_t *f;
    if (ga_snapfile_open(tmp, &f, err, errlen) != 0)
        return -1;
    int rc = ga_snap_view_load(ga_snapfile_snapshot(f), tmp, device, 0, rep, err, errlen);
    ga_snapfile_close(f);
    return rc;
}

/* Why the record v holds nothing to verify (into buf), or NULL when it holds
 * a device event or a block event the replay reproduces. */
static const char *nothing_to_verify(const ga_snap_view_t *v, char *buf, size_t len)
{
    if (v->trace_entries == 0 && v->n_seg == 0) {
        snprintf(buf, len, "the snapshot holds no trace entries and no segments for device %d", v->device);
        return buf;
    }
    if (v->trace_entries == 0)
        return "the snapshot has no trace; its segments are the replay's own starting state";
    for (size_t k = 0; k < v->n_ev; k++)
        if (!v->ev[k].orphan)
            return NULL;
    for (size_t k = 0; k < v->n_bev; k++)
        if (!v->bev[k].orphan)
            return NULL;
    if (v->orphans == v->trace_entries)
        snprintf(buf, len, "the trace holds only orphan entries (%zu), which no replay reproduces", v->orphans);
    else
        snprintf(buf, len,
                 "the trace's %zu entries hold no device event and no block event the replay "
                 "reproduces, so its final segments are the replay's own starting state",
                 v->trace_entries);
    return buf;
}

int ga_verify_worst(int a, int b)
{
    /* cannot verify, then diverges, then agrees; nothing to verify only when no unit had anything */
    static const int rank[] = {
        [GA_VERIFY_AGREES] = 1, [GA_VERIFY_DIVERGES] = 2, [GA_VERIFY_CANNOT] = 3, [GA_VERIFY_NOTHING] = 0};
    int ra = a >= 0 && a <= GA_VERIFY_NOTHING ? rank[a] : 3, rb = b >= 0 && b <= GA_VERIFY_NOTHING ? rank[b] : 3;
    return ra >= rb ? a : b;
}

int ga_verify_unit(const ga_job_unit_t *u, const ga_verify_opts_t *o, bool first, FILE *out)
{
    char err[1024] = "", tmp[4096] = "";
    ga_snap_view_t rep;
    memset(&rep, 0, sizeof(rep));
    ga_verify_cmp_t c;
    memset(&c, 0, sizeof(c));
    outcome_t oc = {.path = u->path,
                    .unit = u->unit_label,
                    .rec = &u->view,
                    .rep = &rep,
                    .c = &c,
                    .device = u->device,
                    .device_memory = u->memory};
    char why[256];
    int code = GA_VERIFY_CANNOT, fd = -1;
    if (u->format != GA_FORMAT_TORCH) {
        snprintf(err, sizeof(err), "%s is not a PyTorch snapshot (--verify compares with a snapshot's record)",
                 u->path);
        goto report;
    }
    if (!u->has_view) {
        snprintf(err, sizeof(err), "%s: not a PyTorch 2.x snapshot dict (segments, device_traces lists)", u->path);
        goto report;
    }
    const char *rec = ga_job_recorded(u);
    oc.settings = o->conf != NULL ? o->conf : rec != NULL ? rec : ""; /* "" = none recorded, or the defaults */
    /* before the mid-run check: with nothing to compare, whether the start
     * state can be rebuilt does not matter */
    oc.nothing = nothing_to_verify(&u->view, why, sizeof(why));
    if (oc.nothing != NULL) {
        code = GA_VERIFY_NOTHING;
        goto report;
    }
    if (u->midrun && !u->seeded) {
        snprintf(err, sizeof(err),
                 "the trace starts mid-run (%" PRIu64 " blocks in the final segments or freed in the trace were "
                 "never allocated in the trace, %" PRIu64 " segments never segment_alloc'd) and the state at "
                 "its first entry cannot be reconstructed: %s",
                 u->view.untraced_blocks > u->notes.prologue ? u->view.untraced_blocks : u->notes.prologue,
                 u->view.untraced_segments, u->seed_error[0] ? u->seed_error : "--no-seed");
        goto report;
    }
    oc.seed = u->seeded ? &u->seed : NULL;
    const char *dir = getenv("TMPDIR");
    snprintf(tmp, sizeof(tmp), "%s/galloc-verify-XXXXXX", dir && *dir ? dir : "/tmp");
    fd = mkstemp(tmp);
    if (fd < 0) {
        snprintf(err, sizeof(err), "cannot create a temporary file in %s", dir && *dir ? dir : "/tmp");
        tmp[0] = '\0';
        goto report;
    }
    close(fd);
    if (replay_to_snapshot(u, o, oc.settings, tmp, err, sizeof(err)) != 0 ||
        load_replay_view(tmp, u->device, &rep, err, sizeof(err)) != 0)
        goto report;
    ga_verify_compare(&u->view, &rep, &c);
    code = c.diverged || c.seg_first[0] ? GA_VERIFY_DIVERGES : GA_VERIFY_AGREES;
    /* Nothing on either side: the record check above catches it first (the
     * record's own events are counted here), so this only keeps "agrees"
     * from ever meaning "nothing was compared" should that check change. */
    if (ga_verify_compared(&c) == 0) {
        oc.nothing = "neither the snapshot nor galloc's replay holds a device event, a block event or a final "
                     "segment to compare";
        code = GA_VERIFY_NOTHING;
    }
report:
    oc.error = code == GA_VERIFY_CANNOT ? err : NULL;
    if (oc.error != NULL) /* an error, said once on stderr like every other */
        fprintf(stderr, "galloc replay: %s%s%s: cannot verify: %s\n", u->path, oc.unit[0] ? " " : "", oc.unit, err);
    if (o->json)
        report_json(out, &oc, first);
    else
        report_text(out, &oc);
    if (tmp[0])
        unlink(tmp);
    ga_snap_view_free(&rep);
    return code;
}
