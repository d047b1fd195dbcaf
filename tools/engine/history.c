/*
 * history.c: the stacks and times a column's snapshot carries
 * (galloc_set_trace_source): every galloc call of the replay names the event
 * it replays (token = event index + 1), and when the snapshot is written the
 * frames of that event's own recorded entry are handed over, every frame and
 * every byte, with the entry's own time. An alloc's segment_alloc and its
 * block carry the alloc's stack (PyTorch records the allocating call's
 * context on both); a free carries its free_requested entry's stack and its
 * free_completed entry's, each its own.
 */
#include "tools/engine/engine_int.h"

#include <stdlib.h>
#include <string.h>

#include "tools/snapshot/torch_snapshot.h"
#include "util/grow.h"

static uint32_t token(void *ctx)
{
    const ga_replay_column_t *c = ctx;
    return c->cur != NULL && c->cur_index < UINT32_MAX - 1 ? (uint32_t)(c->cur_index + 1) : 0;
}

/* The recorded entry of event i (a snapshot's) that an entry of action
 * stands for: a merged free's completion is the entry after its request, an
 * alloc's segment_alloc or segment_map the entry before it; any other entry
 * the event's own. false when there is none (not a snapshot, a prologue). */
static bool recorded_entry(const ga_job_unit_t *u, size_t i, const char *action, ga_torch_entry_t *out)
{
    ga_event_t e;
    ga_job_event(u, i, &e);
    const ga_torch_snapshot_t *snap = ga_job_snapshot(u);
    if (snap == NULL || (e.flags & GA_EVF_PROLOGUE))
        return false;
    ga_torch_list_t trace = ga_torch_trace(snap, (size_t)u->device);
    if (e.where >= trace.n)
        return false;
    size_t at = (size_t)e.where;
    ga_torch_entry_t x;
    if (e.kind == GA_EV_FREE && strcmp(action, "free_completed") == 0 && at + 1 < trace.n) {
        ga_torch_entry(&trace, at + 1, &x);
        if (x.action == GA_ACT_FREE_COMPLETED)
            at++;
    } else if (e.kind == GA_EV_ALLOC && at > 0 &&
               (strcmp(action, "segment_alloc") == 0 || strcmp(action, "segment_map") == 0)) {
        ga_torch_entry(&trace, at - 1, &x);
        if (x.action == GA_ACT_SEGMENT_ALLOC || x.action == GA_ACT_SEGMENT_MAP)
            at--;
    }
    ga_torch_entry(&trace, at, out);
    return true;
}

static const void *entry_frames(const ga_job_unit_t *u, size_t i, const char *action)
{
    ga_torch_entry_t x;
    if (strcmp(action, "segment_alloc") == 0 || strcmp(action, "segment_map") == 0 || strcmp(action, "block") == 0 ||
        strcmp(action, "segment") == 0)
        action = "alloc"; /* PyTorch records the allocating call's context on its segment and block */
    return recorded_entry(u, i, action, &x) ? x.frames : NULL;
}

static int64_t time_us(void *ctx, uint32_t tok, const char *action)
{
    const ga_replay_column_t *c = ctx;
    if (tok == 0 || tok - 1 >= c->unit->n)
        return 0;
    ga_torch_entry_t x;
    if (recorded_entry(c->unit, tok - 1, action, &x))
        return x.time_us.kind == GA_TORCH_INT ? (int64_t)x.time_us.v : 0;
    ga_event_t e;
    ga_job_event(c->unit, tok - 1, &e);
    return e.time_us;
}

/* The frames of one entry as galloc_frame_t, with NUL-terminated copies of
 * the recorded strings (which point into the file, unterminated). */
static size_t frames(void *ctx, uint32_t tok, const char *action, const galloc_frame_t **out)
{
    ga_replay_column_t *c = ctx;
    *out = NULL;
    if (tok == 0 || tok - 1 >= c->unit->n || c->snapshot_no_frames)
        return 0;
    const void *fr = entry_frames(c->unit, tok - 1, action);
    size_t n = ga_torch_frames_count(fr), text = 0;
    for (size_t k = 0; k < n; k++) {
        ga_torch_frame_t f;
        ga_torch_frame(fr, k, &f);
        text += f.filename_len + f.name_len + 2;
    }
    if (n > c->hist_frames_cap) {
        galloc_frame_t *nf = realloc(c->hist_frames, n * sizeof(*nf));
        if (nf == NULL)
            return 0;
        c->hist_frames = nf;
        c->hist_frames_cap = n;
    }
    if (text > c->hist_text_cap) {
        char *nt = realloc(c->hist_text, text);
        if (nt == NULL)
            return 0;
        c->hist_text = nt;
        c->hist_text_cap = text;
    }
    size_t used = 0;
    for (size_t k = 0; k < n; k++) {
        ga_torch_frame_t f;
        ga_torch_frame(fr, k, &f);
        const char *src[2] = {f.filename, f.name};
        size_t len[2] = {f.filename_len, f.name_len};
        const char *dst[2];
        for (int j = 0; j < 2; j++) {
            if (src[j] != NULL && len[j] > 0)
                memcpy(c->hist_text + used, src[j], len[j]);
            else
                len[j] = 0;
            c->hist_text[used + len[j]] = '\0';
            dst[j] = c->hist_text + used;
            used += len[j] + 1;
        }
        c->hist_frames[k] = (galloc_frame_t){.filename = dst[0], .name = dst[1], .line = f.line};
    }
    *out = c->hist_frames;
    return n;
}

galloc_status_t ga_engine_history_source(ga_replay_column_t *c)
{
    galloc_trace_source_t src = {.struct_size = sizeof(src), .ctx = c, .token = token, .frames = frames};
    /* times of the recorded entries where the trace has them, else galloc's clock */
    bool timed = ga_job_snapshot(c->unit) != NULL || c->unit->time_us != NULL;
    if (timed)
        src.time_us = time_us;
    return galloc_set_trace_source(c->a, &src);
}

void ga_engine_history_free(ga_replay_column_t *c)
{
    free(c->hist_frames);
    free(c->hist_text);
    c->hist_frames = NULL;
    c->hist_text = NULL;
    c->hist_frames_cap = c->hist_text_cap = 0;
}
