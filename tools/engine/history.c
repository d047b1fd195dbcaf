/*
 * history.c: the stacks and times a column's snapshot carries
 * (galloc_set_trace_source): every galloc call of the replay names the event
 * it replays (token = event index + 1), and when the snapshot is written the
 * frames of that event's own recorded entry are handed over, every frame and
 * every byte, with the entry's own time. An alloc's segment_alloc and its
 * block carry the alloc's stack (PyTorch records the allocating call's
 * context on both); a free carries its free_requested entry's stack and its
 * free_completed entry's, each its own. Entries a call makes beside its own
 * (the segments an empty_cache or an allocation's OOM path releases, the
 * completions of deferred frees, expandable mappings) are matched by action
 * and address to their recorded entries (entry()), each with its own stack
 * and time. A block whose allocation is still live at the end of the
 * recording is the final state's: it carries that block's recorded frames.
 * The seeding of a mid-run or state-only snapshot's start state
 * names each piece it allocates (ga_seed_apply_named), so the seeded blocks
 * and segments carry the final state's recorded frames.
 */
#include "tools/engine/engine_int.h"

#include <stdlib.h>
#include <string.h>

#include "tools/snapshot/seed.h"
#include "tools/snapshot/torch_snapshot.h"
#include "util/grow.h"

/* Tokens: an event's index + 1 (below SEED_TOKEN); SEED_TOKEN | the index
 * + 1 of the piece of the unit's seeded state an allocation of the seeding
 * is made for; or ENTRY_TOKEN | the index + 1 of one recorded entry of the
 * unit's snapshot trace, named apart from its call's other entries (entry()). */
#define ENTRY_TOKEN 0x80000000u
#define SEED_TOKEN 0x40000000u

static uint32_t token(void *ctx)
{
    const ga_replay_column_t *c = ctx;
    if (c->cur != NULL)
        return c->cur_index + 1 < SEED_TOKEN ? (uint32_t)(c->cur_index + 1) : 0;
    return c->seed_taking != 0 && c->seed_taking < SEED_TOKEN ? SEED_TOKEN | (uint32_t)c->seed_taking : 0;
}

/* A seeded piece's recorded frames: the block's own ("block", its
 * allocation's), or those of the segment it lies in ("segment"). */
static const void *seed_frames(const ga_job_unit_t *u, uint32_t tok, const char *action)
{
    const ga_seed_t *sd = &u->seed;
    size_t k = (tok & ~SEED_TOKEN) - 1;
    if (!u->seeded || k >= sd->n_pc)
        return NULL;
    if (strcmp(action, "segment") != 0)
        return sd->pc[k].frames;
    size_t lo = 0, hi = sd->n_seg; /* the segment whose pieces hold k: first <= k < first + n */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sd->seg[mid].first + sd->seg[mid].n <= k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < sd->n_seg && sd->seg[lo].first <= k ? sd->seg[lo].frames : NULL;
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

/* The recorded entry a token stands for, for an entry of action. */
static bool token_entry(const ga_job_unit_t *u, uint32_t tok, const char *action, ga_torch_entry_t *out)
{
    if (tok == 0 || (tok & (ENTRY_TOKEN | SEED_TOKEN)) == SEED_TOKEN)
        return false;
    if (!(tok & ENTRY_TOKEN))
        return tok - 1 < u->n && recorded_entry(u, tok - 1, action, out);
    const ga_torch_snapshot_t *snap = ga_job_snapshot(u);
    ga_torch_list_t trace = snap != NULL ? ga_torch_trace(snap, (size_t)u->device) : (ga_torch_list_t){0};
    size_t at = (tok & ~ENTRY_TOKEN) - 1;
    if (at >= trace.n)
        return false;
    ga_torch_entry(&trace, at, out);
    return true;
}

/* The allocator's own entries within one call (PyTorch records them around
 * the call's alloc: completions of deferred frees, releases, the new
 * segment), which entry() tells apart by address. */
static ga_torch_action_t own_action(const char *action)
{
    static const struct {
        const char *name;
        ga_torch_action_t act;
    } own[] = {{"free_completed", GA_ACT_FREE_COMPLETED},
               {"segment_alloc", GA_ACT_SEGMENT_ALLOC},
               {"segment_free", GA_ACT_SEGMENT_FREE},
               {"segment_map", GA_ACT_SEGMENT_MAP},
               {"segment_unmap", GA_ACT_SEGMENT_UNMAP}};
    for (size_t k = 0; k < sizeof(own) / sizeof(own[0]); k++)
        if (strcmp(action, own[k].name) == 0)
            return own[k].act;
    return GA_ACT_NONE;
}

static bool is_own(ga_torch_action_t a)
{
    return a == GA_ACT_FREE_COMPLETED || a == GA_ACT_SEGMENT_ALLOC || a == GA_ACT_SEGMENT_FREE ||
           a == GA_ACT_SEGMENT_MAP || a == GA_ACT_SEGMENT_UNMAP;
}

/* Whether recorded entry i is one of want at addr. */
static bool entry_is(const ga_torch_list_t *trace, size_t i, ga_torch_action_t want, uint64_t addr,
                     ga_torch_action_t *act)
{
    ga_torch_entry_t x;
    ga_torch_entry(trace, i, &x);
    *act = x.action;
    uint64_t a;
    return x.action == want && ga_torch_int_get(x.addr, true, 0, &a) && a == addr;
}

/* galloc_trace_source_t.entry: the recorded entry of the current event's
 * call that an entry of galloc's own (a completion, a segment's allocation,
 * mapping, release or unmapping) is, by action and address: PyTorch records
 * those entries next to the call's own, each at its own time with the
 * call's context, and one call may make several (an empty_cache releasing
 * segments). An allocation's come before its entry (its segment_alloc
 * right before it), a free's, an empty_cache's or a synchronize's from its
 * entry on. The run searched is the contiguous stretch of such entries, so
 * a mismatch between the replay and its recording falls back to the call's
 * token. The last match's successor is tried first: the replay releases in
 * the recording's order, so a long release run costs one step per entry. */
static uint32_t entry(void *ctx, const char *action, uint64_t addr, uint64_t size)
{
    (void)size;
    ga_replay_column_t *c = ctx;
    ga_torch_action_t want = own_action(action);
    const ga_torch_snapshot_t *snap = ga_job_snapshot(c->unit);
    if (c->cur == NULL || want == GA_ACT_NONE || snap == NULL || (c->cur->flags & GA_EVF_PROLOGUE))
        return 0;
    ga_torch_list_t trace = ga_torch_trace(snap, (size_t)c->unit->device);
    size_t where = (size_t)c->cur->where, found = SIZE_MAX;
    if (where >= trace.n || trace.n >= SEED_TOKEN)
        return 0;
    ga_torch_action_t act;
    if (c->hist_hint_event == c->cur_index + 1 && c->hist_hint + 1 < trace.n &&
        entry_is(&trace, c->hist_hint + 1, want, addr, &act))
        found = c->hist_hint + 1;
    else if (c->cur->kind == GA_EV_ALLOC || c->cur->kind == GA_EV_OOM) {
        for (size_t i = where; i-- > 0;) {
            if (entry_is(&trace, i, want, addr, &act)) {
                found = i;
                break;
            }
            if (!is_own(act))
                break;
        }
    } else {
        ga_torch_entry_t x;
        ga_torch_entry(&trace, where, &x);
        for (size_t i = is_own(x.action) ? where : where + 1; i < trace.n; i++) {
            if (entry_is(&trace, i, want, addr, &act)) {
                found = i;
                break;
            }
            if (!is_own(act))
                break;
        }
    }
    if (found == SIZE_MAX)
        return 0;
    c->hist_hint = found;
    c->hist_hint_event = c->cur_index + 1;
    return ENTRY_TOKEN | (uint32_t)(found + 1);
}

/* The recorded final state's active blocks of the unit's device, by address:
 * their frames (built on first use). */
static bool final_blocks(ga_replay_column_t *c)
{
    const ga_torch_snapshot_t *snap = ga_job_snapshot(c->unit);
    if (c->hist_final_ready || snap == NULL)
        return c->hist_final_ready;
    ga_idmap_init(&c->hist_final);
    for (size_t i = 0; i < snap->segments.n; i++) {
        ga_torch_segment_t g;
        ga_torch_segment(snap, i, &g);
        if (!g.is_dict || g.device.kind != GA_TORCH_INT || (int64_t)g.device.v != c->unit->device)
            continue;
        for (size_t b = 0; b < g.blocks.n; b++) {
            ga_torch_block_t blk;
            ga_torch_block(&g, b, &blk);
            ga_idmap_val_t v = {(void *)blk.frames, 0};
            if ((blk.state == GA_STATE_ALLOCATED || blk.state == GA_STATE_PENDING_FREE) && blk.frames != NULL &&
                blk.address.kind == GA_TORCH_INT && blk.address.v != 0 &&
                ga_idmap_put(&c->hist_final, blk.address.v, v, NULL, NULL) != 0) {
                ga_idmap_free(&c->hist_final);
                return false; /* out of memory: the alloc entries' frames */
            }
        }
    }
    c->hist_final_ready = true;
    return true;
}

static const void *entry_frames(ga_replay_column_t *c, uint32_t tok, const char *action)
{
    const ga_job_unit_t *u = c->unit;
    ga_torch_entry_t x;
    if ((tok & (ENTRY_TOKEN | SEED_TOKEN)) == SEED_TOKEN)
        return seed_frames(u, tok, action);
    if (!(tok & ENTRY_TOKEN) && tok != 0 && tok - 1 < u->n && strcmp(action, "block") == 0) {
        /* An allocation still live at the end is the final state's block:
         * the recording's own frames for it, wherever the replay writes. */
        ga_event_t e;
        ga_job_event(u, tok - 1, &e);
        ga_idmap_val_t v;
        if (e.kind == GA_EV_ALLOC && (e.flags & GA_EVF_KEPT) && final_blocks(c) &&
            ga_idmap_get(&c->hist_final, e.id, &v))
            return v.ptr;
    }
    if (strcmp(action, "segment_alloc") == 0 || strcmp(action, "segment_map") == 0 || strcmp(action, "block") == 0 ||
        strcmp(action, "segment") == 0)
        action = "alloc"; /* PyTorch records the allocating call's context on its segment and block */
    return token_entry(u, tok, action, &x) ? x.frames : NULL;
}

static int64_t time_us(void *ctx, uint32_t tok, const char *action)
{
    const ga_replay_column_t *c = ctx;
    ga_torch_entry_t x;
    if (token_entry(c->unit, tok, action, &x))
        return x.time_us.kind == GA_TORCH_INT ? (int64_t)x.time_us.v : 0;
    if (tok == 0 || (tok & (ENTRY_TOKEN | SEED_TOKEN)) || tok - 1 >= c->unit->n)
        return 0;
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
    if (c->snapshot_no_frames)
        return 0;
    const void *fr = entry_frames(c, tok, action);
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
    galloc_trace_source_t src = {
        .struct_size = sizeof(src), .ctx = c, .token = token, .frames = frames, .entry = entry};
    c->hist_hint_event = 0;
    /* times of the recorded entries where the trace has them, else galloc's clock */
    bool timed = ga_job_snapshot(c->unit) != NULL || c->unit->time_us != NULL;
    if (timed)
        src.time_us = time_us;
    return galloc_set_trace_source(c->a, &src);
}

void ga_engine_history_free(ga_replay_column_t *c)
{
    if (c->hist_final_ready)
        ga_idmap_free(&c->hist_final);
    c->hist_final_ready = false;
    free(c->hist_frames);
    free(c->hist_text);
    c->hist_frames = NULL;
    c->hist_text = NULL;
    c->hist_frames_cap = c->hist_text_cap = 0;
}
