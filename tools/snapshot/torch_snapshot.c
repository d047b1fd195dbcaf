/*
 * torch_snapshot.c: the one walker of PyTorch's snapshot schema
 * (torch_snapshot.h).
 *
 * A record is decoded in one pass over its dict's items: each key is matched
 * against the names the record has, and a later duplicate overrides an
 * earlier one, as Python keeps the last value of a repeated key (and as
 * ga_pk_dict_get reads it). Nothing is allocated: records are small structs
 * filled on the caller's stack.
 */
#include "tools/snapshot/torch_snapshot.h"

#include <stdio.h>
#include <string.h>

#include "tools/snapshot/pickle_read.h"

static const char *const action_names[] = {
    [GA_ACT_ALLOC] = "alloc",
    [GA_ACT_FREE_REQUESTED] = "free_requested",
    [GA_ACT_FREE_COMPLETED] = "free_completed",
    [GA_ACT_SEGMENT_ALLOC] = "segment_alloc",
    [GA_ACT_SEGMENT_FREE] = "segment_free",
    [GA_ACT_SEGMENT_MAP] = "segment_map",
    [GA_ACT_SEGMENT_UNMAP] = "segment_unmap",
    [GA_ACT_OOM] = "oom",
    [GA_ACT_SNAPSHOT] = "snapshot",
    [GA_ACT_ANNOTATE] = "annotate",
};

static const char *const state_names[] = {
    [GA_STATE_INACTIVE] = "inactive",
    [GA_STATE_ALLOCATED] = "active_allocated",
    [GA_STATE_PENDING_FREE] = "active_pending_free",
};

/* Which of names[1..n) the str v is: 0 when v is not a str, other when it is
 * none of them. */
static int name_index(const ga_pk_value_t *v, const char *const *names, int n, int other)
{
    if (v == NULL || v->type != GA_PK_STR)
        return 0;
    for (int k = 1; k < n; k++)
        if (names[k] != NULL && ga_pk_str_eq(v, names[k]))
            return k;
    return other;
}

static ga_torch_int_t int_field(const ga_pk_value_t *v)
{
    if (v == NULL)
        return (ga_torch_int_t){GA_TORCH_MISSING, 0};
    if (v->type != GA_PK_INT)
        return (ga_torch_int_t){GA_TORCH_WRONG, 0};
    return (ga_torch_int_t){GA_TORCH_INT, (uint64_t)v->u.i};
}

/* A pool id: a tuple of two ints as pickled, a list where the snapshot went
 * through JSON. */
static bool pool_pair(const ga_pk_value_t *v, int64_t out[2])
{
    if (v == NULL || (v->type != GA_PK_TUPLE && v->type != GA_PK_LIST) || v->u.seq.n != 2 ||
        v->u.seq.items[0]->type != GA_PK_INT || v->u.seq.items[1]->type != GA_PK_INT)
        return false;
    out[0] = v->u.seq.items[0]->u.i;
    out[1] = v->u.seq.items[1]->u.i;
    return true;
}

static ga_torch_list_t list_of(const ga_pk_value_t *v)
{
    ga_torch_list_t l = {.v = v};
    if (v == NULL)
        return l;
    l.present = true;
    l.type = ga_pk_type_name(v->type);
    l.is_list = v->type == GA_PK_LIST;
    l.n = l.is_list ? v->u.seq.n : 0;
    return l;
}

/* The i-th key and value of dict d. */
#define KEY(d, i) ((d)->u.seq.items[2 * (i)])
#define VAL(d, i) ((d)->u.seq.items[2 * (i) + 1])

void ga_torch_open(const ga_pickle_t *pk, ga_torch_snapshot_t *s)
{
    const ga_pk_value_t *root = ga_pickle_root(pk);
    memset(s, 0, sizeof(*s));
    s->is_dict = root->type == GA_PK_DICT;
    s->is_list = root->type == GA_PK_LIST;
    s->root_type = ga_pk_type_name(root->type);
    s->traces = list_of(ga_pk_dict_get(root, "device_traces"));
    /* torch.cuda.memory_snapshot() (and 1.13's _snapshot()): the list of
     * segments alone, no trace. */
    s->segments = list_of(s->is_list ? root : ga_pk_dict_get(root, "segments"));
    s->settings = ga_pk_dict_get(root, "allocator_settings");
    s->annotations = list_of(ga_pk_dict_get(root, "external_annotations"));
}

void ga_torch_annotation(const ga_torch_snapshot_t *s, size_t i, ga_torch_annotation_t *out)
{
    const ga_pk_value_t *a = s->annotations.v->u.seq.items[i];
    const ga_pk_value_t *stage = NULL, *name = NULL, *dev = NULL, *time = NULL;
    memset(out, 0, sizeof(*out));
    out->is_dict = a->type == GA_PK_DICT;
    for (size_t k = 0; out->is_dict && k < a->u.seq.n / 2; k++) {
        const ga_pk_value_t *key = KEY(a, k), *v = VAL(a, k);
        if (ga_pk_str_eq(key, "stage"))
            stage = v;
        else if (ga_pk_str_eq(key, "name"))
            name = v;
        else if (ga_pk_str_eq(key, "device"))
            dev = v;
        else if (ga_pk_str_eq(key, "time_us"))
            time = v;
    }
    out->stage = ga_pk_str_eq(stage, "START") ? GA_STAGE_START
                 : ga_pk_str_eq(stage, "END") ? GA_STAGE_END
                                              : GA_STAGE_OTHER;
    if (name != NULL && name->type == GA_PK_STR) {
        out->name = name->u.s.p;
        out->name_len = name->u.s.n;
    }
    out->device = int_field(dev);
    out->time_us = int_field(time);
}

ga_torch_list_t ga_torch_trace(const ga_torch_snapshot_t *s, size_t device)
{
    if (!s->traces.is_list || device >= s->traces.n)
        return (ga_torch_list_t){0};
    return list_of(s->traces.v->u.seq.items[device]);
}

void ga_torch_entry(const ga_torch_list_t *trace, size_t i, ga_torch_entry_t *out)
{
    const ga_pk_value_t *e = trace->v->u.seq.items[i];
    const ga_pk_value_t *action = NULL, *addr = NULL, *size = NULL, *stream = NULL, *dfree = NULL, *meta = NULL,
                        *time = NULL, *cc = NULL, *dev = NULL, *pool = NULL;
    memset(out, 0, sizeof(*out));
    out->is_dict = e->type == GA_PK_DICT;
    for (size_t k = 0; out->is_dict && k < e->u.seq.n / 2; k++) {
        const ga_pk_value_t *key = KEY(e, k), *v = VAL(e, k);
        if (ga_pk_str_eq(key, "action"))
            action = v;
        else if (ga_pk_str_eq(key, "addr"))
            addr = v;
        else if (ga_pk_str_eq(key, "size"))
            size = v;
        else if (ga_pk_str_eq(key, "stream"))
            stream = v;
        else if (ga_pk_str_eq(key, "device_free"))
            dfree = v;
        else if (ga_pk_str_eq(key, "user_metadata"))
            meta = v;
        else if (ga_pk_str_eq(key, "time_us"))
            time = v;
        else if (ga_pk_str_eq(key, "compile_context"))
            cc = v;
        else if (ga_pk_str_eq(key, "device"))
            dev = v;
        else if (ga_pk_str_eq(key, "pool_id"))
            pool = v;
        else if (ga_pk_str_eq(key, "frames") && v->type == GA_PK_LIST && v->u.seq.n > 0)
            out->frames = v;
    }
    int n_actions = (int)(sizeof(action_names) / sizeof(action_names[0]));
    out->action = (ga_torch_action_t)name_index(action, action_names, n_actions, GA_ACT_OTHER);
    out->addr = int_field(addr);
    out->size = int_field(size);
    out->stream = int_field(stream);
    out->device_free = int_field(dfree);
    out->time_us = int_field(time);
    if (meta != NULL && meta->type == GA_PK_STR) {
        out->text = meta->u.s.p;
        out->text_len = meta->u.s.n;
    }
    if (cc != NULL && cc->type == GA_PK_STR) {
        out->compile_context = cc->u.s.p;
        out->compile_context_len = cc->u.s.n;
    }
    out->device = int_field(dev);
    out->has_pool_id = pool_pair(pool, out->pool_id);
}

size_t ga_torch_frames_count(const ga_pk_value_t *frames)
{
    return frames != NULL && frames->type == GA_PK_LIST ? frames->u.seq.n : 0;
}

void ga_torch_frame(const ga_pk_value_t *frames, size_t i, ga_torch_frame_t *out)
{
    const ga_pk_value_t *f = frames->u.seq.items[i];
    memset(out, 0, sizeof(*out));
    for (size_t k = 0; f->type == GA_PK_DICT && k < f->u.seq.n / 2; k++) {
        const ga_pk_value_t *key = KEY(f, k), *v = VAL(f, k);
        if (ga_pk_str_eq(key, "filename") && v->type == GA_PK_STR) {
            out->filename = v->u.s.p;
            out->filename_len = v->u.s.n;
        } else if (ga_pk_str_eq(key, "name") && v->type == GA_PK_STR) {
            out->name = v->u.s.p;
            out->name_len = v->u.s.n;
        } else if (ga_pk_str_eq(key, "line")) {
            ga_torch_int_t l = int_field(v);
            out->line = l.kind == GA_TORCH_INT ? (int64_t)l.v : 0;
        }
    }
}

void ga_torch_segment(const ga_torch_snapshot_t *s, size_t i, ga_torch_segment_t *out)
{
    const ga_pk_value_t *g = s->segments.v->u.seq.items[i];
    const ga_pk_value_t *dev = NULL, *addr = NULL, *total = NULL, *stream = NULL, *ex = NULL, *type = NULL,
                        *blocks = NULL, *pool = NULL;
    memset(out, 0, sizeof(*out));
    out->is_dict = g->type == GA_PK_DICT;
    for (size_t k = 0; out->is_dict && k < g->u.seq.n / 2; k++) {
        const ga_pk_value_t *key = KEY(g, k), *v = VAL(g, k);
        if (ga_pk_str_eq(key, "device"))
            dev = v;
        else if (ga_pk_str_eq(key, "address"))
            addr = v;
        else if (ga_pk_str_eq(key, "total_size"))
            total = v;
        else if (ga_pk_str_eq(key, "stream"))
            stream = v;
        else if (ga_pk_str_eq(key, "is_expandable"))
            ex = v;
        else if (ga_pk_str_eq(key, "segment_type"))
            type = v;
        else if (ga_pk_str_eq(key, "blocks"))
            blocks = v;
        else if (ga_pk_str_eq(key, "segment_pool_id"))
            pool = v;
        else if (ga_pk_str_eq(key, "frames") && v->type == GA_PK_LIST && v->u.seq.n > 0)
            out->frames = v;
    }
    out->device = int_field(dev);
    out->address = int_field(addr);
    out->total_size = int_field(total);
    out->stream = int_field(stream);
    out->expandable = ex != NULL && ex->type == GA_PK_BOOL && ex->u.b;
    out->small = ga_pk_str_eq(type, "small");
    out->blocks = list_of(blocks);
    (void)pool_pair(pool, out->pool_id); /* (0, 0) unless a pair of ints */
}

/* The decoded fields of block b, its address as the dict gives it. */
static void block_fields(const ga_torch_segment_t *g, size_t b, ga_torch_block_t *out)
{
    const ga_pk_value_t *d = g->blocks.v->u.seq.items[b];
    const ga_pk_value_t *state = NULL, *addr = NULL, *size = NULL, *req = NULL, *history = NULL, *frames = NULL;
    memset(out, 0, sizeof(*out));
    out->is_dict = d->type == GA_PK_DICT;
    for (size_t k = 0; out->is_dict && k < d->u.seq.n / 2; k++) {
        const ga_pk_value_t *key = KEY(d, k), *v = VAL(d, k);
        if (ga_pk_str_eq(key, "state"))
            state = v;
        else if (ga_pk_str_eq(key, "address"))
            addr = v;
        else if (ga_pk_str_eq(key, "size"))
            size = v;
        else if (ga_pk_str_eq(key, "requested_size"))
            req = v;
        else if (ga_pk_str_eq(key, "history"))
            history = v;
        else if (ga_pk_str_eq(key, "frames"))
            frames = v;
    }
    int n_states = (int)(sizeof(state_names) / sizeof(state_names[0]));
    out->state = (ga_torch_state_t)name_index(state, state_names, n_states, GA_STATE_OTHER);
    out->address = int_field(addr);
    out->size = int_field(size);
    out->requested_size = int_field(req);
    /* PyTorch 1.13/2.0: the request is history[0].real_size (MemoryViz.js
     * reads it there too). */
    if (req == NULL && history != NULL && history->type == GA_PK_LIST && history->u.seq.n > 0 &&
        history->u.seq.items[0]->type == GA_PK_DICT) {
        const ga_pk_value_t *real = ga_pk_dict_get(history->u.seq.items[0], "real_size");
        if (real != NULL) {
            out->requested_size = int_field(real);
            out->requested_from_history = true;
        }
    }
    if (frames == NULL && history != NULL && history->type == GA_PK_LIST && history->u.seq.n > 0 &&
        history->u.seq.items[0]->type == GA_PK_DICT)
        frames = ga_pk_dict_get(history->u.seq.items[0], "frames");
    if (frames != NULL && frames->type == GA_PK_LIST && frames->u.seq.n > 0)
        out->frames = frames;
}

void ga_torch_block(const ga_torch_segment_t *g, size_t b, ga_torch_block_t *out)
{
    block_fields(g, b, out);
    if (out->address.kind != GA_TORCH_MISSING || g->address.kind != GA_TORCH_INT)
        return;
    /* PyTorch 2.0 blocks have no 'address': the segment's address plus the
     * sizes of the blocks before (the list is in address order, as
     * PyTorch's builder walks the segment). A walk in block order costs
     * one step per block: the segment remembers where the last one ended
     * (g is the caller's own copy, so the cursor is its scratch space). */
    ga_torch_segment_t *w = (ga_torch_segment_t *)g;
    if (!w->walk_ok || w->walk_next > b) {
        w->walk_ok = true;
        w->walk_next = 0;
        w->walk_off = 0;
    }
    while (w->walk_next < b) {
        ga_torch_block_t prev;
        block_fields(g, w->walk_next, &prev);
        if (prev.size.kind != GA_TORCH_INT) {
            w->walk_ok = false;
            return; /* address stays missing: a block before has no int size */
        }
        w->walk_off += prev.size.v;
        w->walk_next++;
    }
    out->address = (ga_torch_int_t){GA_TORCH_INT, g->address.v + w->walk_off};
    out->address_computed = true;
}

void ga_torch_settings(const ga_torch_snapshot_t *s, ga_torch_settings_t *out)
{
    const ga_pk_value_t *d = s->settings;
    memset(out, 0, sizeof(*out));
    if (d == NULL || d->type != GA_PK_DICT)
        return;
    out->present = true;
    const ga_pk_value_t *es = ga_pk_dict_get(d, "expandable_segments");
    const ga_pk_value_t *ms = ga_pk_dict_get(d, "max_split_size");
    const ga_pk_value_t *gc = ga_pk_dict_get(d, "garbage_collection_threshold");
    const ga_pk_value_t *rd = ga_pk_dict_get(d, "roundup_power2_divisions");
    const ga_pk_value_t *text = ga_pk_dict_get(d, "PYTORCH_CUDA_ALLOC_CONF");
    const ga_pk_value_t *cr = ga_pk_dict_get(d, "graph_capture_record_stream_reuse");
    out->has_fields = es != NULL || ms != NULL || gc != NULL || rd != NULL || cr != NULL;
    out->capture_reuse = cr != NULL && cr->type == GA_PK_BOOL && cr->u.b;
    out->expandable_segments = es != NULL && es->type == GA_PK_BOOL && es->u.b;
    out->max_split_size_int = ms != NULL && ms->type == GA_PK_INT;
    out->max_split_size = out->max_split_size_int ? ms->u.i : 0;
    out->gc_threshold = gc != NULL && gc->type == GA_PK_FLOAT ? gc->u.f : 0.0;
    out->roundup_dict = rd != NULL && rd->type == GA_PK_DICT;
    for (int i = 0; out->roundup_dict && i < 16; i++) {
        char key[16];
        snprintf(key, sizeof(key), "%d", 1 << i);
        const ga_pk_value_t *v = ga_pk_dict_get(rd, key);
        out->roundup[i] = v != NULL && v->type == GA_PK_INT ? v->u.i : 0;
    }
    if (text != NULL && text->type == GA_PK_STR) {
        out->conf_text = text->u.s.p;
        out->conf_text_len = text->u.s.n;
    }
}

size_t ga_torch_devices(const ga_torch_snapshot_t *s, int *devices, size_t *bad)
{
    bool used[GA_TORCH_MAX_DEVICES] = {false};
    for (size_t d = 0; d < s->traces.n && d < GA_TORCH_MAX_DEVICES; d++)
        used[d] = ga_torch_trace(s, d).n > 0;
    for (size_t i = 0; i < s->segments.n; i++) {
        ga_torch_segment_t g;
        uint64_t d;
        ga_torch_segment(s, i, &g);
        if (!g.is_dict || !ga_torch_int_get(g.device, false, 0, &d) || d >= GA_TORCH_MAX_DEVICES) {
            *bad = i;
            return 0;
        }
        used[d] = true;
    }
    size_t n = 0;
    for (int d = 0; d < GA_TORCH_MAX_DEVICES; d++)
        if (used[d])
            devices[n++] = d;
    if (n == 0)
        devices[n++] = 0;
    return n;
}
