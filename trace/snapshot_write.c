/*
 * snapshot_write.c: walk a snapshot model and emit PyTorch's snapshot
 * dictionary through either emitter (pickle or JSON).
 *
 * Keys and value types, verified against pytorch/pytorch
 * torch/csrc/cuda/memory_snapshot.cpp _memory_snapshot_pickled() (commits
 * 127b7ad1e585768808db4c3d1420a39ca7ac7338, newest read, and
 * 00067369c9339bed950762afec327514d6fa2566), against what
 * torch/utils/viz/MemoryViz.js (00067369...) and torch/cuda/_memory_viz.py
 * (0044eb6704e63eec2a52110f4b1a44331e3d4342) read, and against the TypedDicts
 * in torch/cuda/memory.py _snapshot() (00b65a04a2d30e498eedcb1e3476abd547f428f1):
 *   root: "segments" list, "device_traces" list of lists (one per device;
 *     MemoryViz indexes it by segment device), "allocator_settings" dict,
 *     "external_annotations" list.
 *   segment: device int, address int, total_size int, allocated_size int,
 *     active_size int, requested_size int, stream int (int64_t(stream)),
 *     segment_type "large"|"small", segment_pool_id (int, int) tuple,
 *     is_expandable bool, frames list, blocks list.
 *   block: address int, size int, requested_size int, state
 *     "active_allocated"|"active_pending_free"|"inactive", frames list.
 *   trace entry: action str, then "device_free" int for "oom" or "addr" int
 *     otherwise (never both), size int, stream int, compile_context str
 *     ("N/A" unless a compile context is pushed: record_trace), user_metadata
 *     str (the recording thread's galloc_set_memory_metadata string, "" when
 *     none), frames list, time_us int. No device and no pool id: PyTorch's
 *     TraceEntry holds both (device_, mempool_), its builders write neither
 *     (docs/trace-format.md, "Trace-entry fields").
 *   frame: name str, filename str, line int.
 *   allocator_settings: PYTORCH_CUDA_ALLOC_CONF str, max_split_size int
 *     (int64_t of size_t: -1 when unlimited), garbage_collection_threshold
 *     float, expandable_segments bool, pinned_num_register_threads int,
 *     release_lock_on_cudamalloc bool, pinned_use_cuda_host_register bool,
 *     graph_capture_record_stream_reuse bool (127b7ad only),
 *     roundup_power2_divisions dict {"1": int, "2": int, "4": int, ...} (key
 *     1, doubling, per entry).
 *   external_annotation: the metadata pairs (record_function's annotations:
 *     "name", "stage" = "START"|"END"), then device int, time_us int.
 * Where galloc differs, deliberately:
 *   - PyTorch writes "frames" into a trace entry only when it has a context;
 *     galloc always writes it (an empty list when none), as PyTorch does for
 *     segments and blocks; MemoryViz and _memory_viz.py accept both.
 *   - Key order: PyTorch inserts "frames" last (after symbolizing); galloc
 *     writes it in place. Dicts are unordered for every reader.
 *   - None for addresses any more: they are written as int64, as PyTorch's
 *     newest casts them (the viewer's unpickler cannot mix the BigInt an
 *     address >= 2^63 would become with numbers); sizes stay unsigned.
 * Sharing (pickle): each distinct frames list, frame dict and frame string is
 * written once and then referenced (BINPUT, then BINGET / LONG_BINGET), as
 * Python's pickler does for the objects PyTorch's snapshot shares; identity is
 * the trace layer's interning (strtab.c, stack.c: one id per distinct string,
 * frame and stack). JSON has no references and repeats them.
 *
 * In token mode (trace.h) every frames list of a non-zero id is the trace
 * source's frames of (token, action), written whole: the source is asked
 * once per distinct (token, action), and its frames are interned into the
 * writer's own string table and stack store (every frame, every byte:
 * ga_trace_stacks_intern_frames), so that the thousands of tokens of a replay
 * share the few stacks their recording repeats. Without the memory to intern
 * a list is written as it comes (the file is then only larger).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "trace/emit.h"
#include "trace/snapshot.h"
#include "util/addrmap.h"

/* What a frames list belongs to: a trace action (ga_trace_action_t), or a
 * snapshot block or segment; a trace source is told which by its name. */
enum { FRAMES_BLOCK = GA_TRACE_ACTION_COUNT, FRAMES_SEGMENT, FRAMES_KINDS };
_Static_assert(FRAMES_KINDS <= 16, "a kind must fit the low 4 bits of a token memo key");

/* Token mode: the stack a (token, kind) frames list was interned as
 * (util/addrmap), so the source is asked for each pair once. */
typedef struct token_stack {
    uintptr_t key;  /* token << 4 | kind (never 0: tokens are not) */
    uint32_t stack; /* its id in the writer's own store (0: no frames) */
    uint32_t pad;   /* zero: entries are a multiple of uintptr_t */
} token_stack_t;

/* Pickle memo numbers by id (a stack's, a frame's or a string's): memo + 1,
 * 0 = not written yet. Grows with the ids (token mode interns while it writes). */
typedef struct memo_tab {
    uint32_t *v;
    size_t cap;
} memo_tab_t;

typedef struct writer {
    ga_trace_emitter_t *e;
    const ga_snapshot_t *s;
    const ga_trace_stacks_t *stacks;  /* where frames lists are read: the trace's, or own_stacks in token
                                         mode; NULL: no frames */
    const ga_trace_strtab_t *strings; /* their text */
    const galloc_trace_source_t *src; /* token mode: every non-zero id's frames; NULL otherwise */
    ga_trace_strtab_t own_strings;    /* token mode: the source's strings, each once */
    ga_trace_stacks_t own_stacks;     /* token mode: the source's frames and stacks, each once */
    ga_addrmap_t tokens;              /* token mode: token_stack_t by (token, kind) */
    memo_tab_t stack_memo, frame_memo, str_memo;
    uint32_t empty_memo; /* memo + 1 of the shared empty frames list */
    bool memo;           /* the emitter memoizes (pickle) */
} writer_t;

/* "1", "2", "4", ...: roundup_power2_divisions keys (std::to_string of 1 << i). */
static const char *const pow2_keys[GA_SNAPSHOT_ROUNDUP_MAX] = {
    "1",        "2",        "4",        "8",         "16",        "32",        "64",         "128",
    "256",      "512",      "1024",     "2048",      "4096",      "8192",      "16384",      "32768",
    "65536",    "131072",   "262144",   "524288",    "1048576",   "2097152",   "4194304",    "8388608",
    "16777216", "33554432", "67108864", "134217728", "268435456", "536870912", "1073741824", "2147483648",
};

static void put_cstr(ga_trace_emitter_t *e, const char *s)
{
    ga_trace_emit_str(e, s, strlen(s));
}

/* The memo slot of id in m (grown to hold it), or NULL without the memory:
 * the value is then written in full, which costs size only. */
static uint32_t *memo_slot(memo_tab_t *m, size_t id)
{
    if (id >= m->cap) {
        size_t cap = m->cap == 0 ? 256 : m->cap;
        while (cap <= id && cap <= SIZE_MAX / 2 / sizeof(*m->v))
            cap *= 2;
        if (cap <= id)
            return NULL;
        uint32_t *v = realloc(m->v, cap * sizeof(*v));
        if (v == NULL)
            return NULL;
        memset(v + m->cap, 0, (cap - m->cap) * sizeof(*v));
        m->v = v;
        m->cap = cap;
    }
    return &m->v[id];
}

/* Write a value again if memo already names it (true), else leave *slot
 * where the caller stores the memo of the value it writes (NULL: no memo). */
static bool memo_again(writer_t *w, memo_tab_t *m, size_t id, uint32_t **slot)
{
    *slot = w->memo ? memo_slot(m, id) : NULL;
    if (*slot != NULL && **slot != 0) {
        ga_trace_emit_memo_get(w->e, **slot - 1);
        return true;
    }
    return false;
}

static void memo_keep(writer_t *w, uint32_t *slot)
{
    if (slot != NULL)
        *slot = ga_trace_emit_memo_put(w->e) + 1;
}

/* A frame's string: each distinct one written once, as Python's pickler
 * writes a str object it has seen as a reference. */
static void write_string(writer_t *w, uint32_t sid)
{
    uint32_t *slot;
    if (sid == 0) {
        ga_trace_emit_atom(w->e, "");
        return;
    }
    if (memo_again(w, &w->str_memo, sid, &slot))
        return;
    size_t len;
    const char *text = ga_trace_strtab_get(w->strings, sid, &len);
    ga_trace_emit_str(w->e, text, len);
    memo_keep(w, slot);
}

/* One frame dict, {"name", "filename", "line"}, as PyTorch's frames lists
 * hold; each distinct frame written once. */
static void write_frame(writer_t *w, uint32_t fid)
{
    ga_trace_emitter_t *e = w->e;
    uint32_t *slot;
    if (memo_again(w, &w->frame_memo, fid, &slot))
        return;
    const ga_trace_frame_t *f = ga_trace_stacks_frame(w->stacks, fid);
    bool known = f != NULL && (f->pc == 0 || f->symbolized);
    ga_trace_emit_begin_dict(e);
    ga_trace_emit_key(e, "name");
    if (known)
        write_string(w, f->name);
    else
        ga_trace_emit_atom(e, "??");
    ga_trace_emit_key(e, "filename");
    if (known)
        write_string(w, f->filename);
    else
        ga_trace_emit_atom(e, "??");
    ga_trace_emit_key(e, "line");
    ga_trace_emit_i64(e, known ? f->line : 0);
    ga_trace_emit_end_dict(e);
    memo_keep(w, slot);
}

/* A stack of the store as a frames list; each distinct one written once. */
static void write_stack(writer_t *w, uint32_t stack_id)
{
    ga_trace_emitter_t *e = w->e;
    uint32_t n = 0;
    const uint32_t *ids = w->stacks != NULL ? ga_trace_stacks_get(w->stacks, stack_id, &n) : NULL;
    uint32_t *slot;
    if (n == 0) {
        slot = w->memo ? &w->empty_memo : NULL;
        if (slot != NULL && *slot != 0) {
            ga_trace_emit_memo_get(e, *slot - 1);
            return;
        }
    } else if (memo_again(w, &w->stack_memo, stack_id, &slot)) {
        return;
    }
    ga_trace_emit_begin_list(e);
    for (uint32_t i = 0; i < n && ga_trace_emit_ok(e); i++)
        write_frame(w, ids[i]);
    ga_trace_emit_end_list(e);
    memo_keep(w, slot);
}

static const char *kind_name(int kind)
{
    if (kind == FRAMES_BLOCK)
        return "block";
    if (kind == FRAMES_SEGMENT)
        return "segment";
    return ga_trace_action_name((ga_trace_action_t)kind);
}

/* Token mode without the memory to intern: the source's frames written as
 * they come, every frame and byte (only larger). */
static void write_frames_plain(writer_t *w, const galloc_frame_t *f, size_t n)
{
    ga_trace_emitter_t *e = w->e;
    ga_trace_emit_begin_list(e);
    for (size_t i = 0; i < n && ga_trace_emit_ok(e); i++) {
        ga_trace_emit_begin_dict(e);
        ga_trace_emit_key(e, "name");
        put_cstr(e, f[i].name != NULL ? f[i].name : "");
        ga_trace_emit_key(e, "filename");
        put_cstr(e, f[i].filename != NULL ? f[i].filename : "");
        ga_trace_emit_key(e, "line");
        ga_trace_emit_i64(e, f[i].line);
        ga_trace_emit_end_dict(e);
    }
    ga_trace_emit_end_list(e);
}

/* Token mode: the source's frames for (token, kind), interned into the
 * writer's own store the first time the pair is met, so that equal stacks,
 * frames and strings of different tokens are written once (each token of a
 * replay is one recorded event, and a recording repeats a few stacks over
 * thousands of events). */
static void write_token_frames(writer_t *w, uint32_t token, int kind)
{
    uintptr_t key = (uintptr_t)token << 4 | (uintptr_t)kind;
    const token_stack_t *known = ga_addrmap_find(&w->tokens, key);
    if (known != NULL) {
        write_stack(w, known->stack);
        return;
    }
    const galloc_frame_t *f = NULL;
    size_t n = w->src->frames(w->src->ctx, token, kind_name(kind), &f);
    if (f == NULL)
        n = 0;
    uint32_t id = 0;
    if (ga_trace_stacks_intern_frames(&w->own_stacks, f, n, &id) != GALLOC_OK) {
        write_frames_plain(w, f, n);
        return;
    }
    if (ga_addrmap_reserve(&w->tokens, 1) == GALLOC_OK) { /* else only asked again next time */
        token_stack_t *t = ga_addrmap_insert(&w->tokens, key);
        t->stack = id;
        t->pad = 0;
    }
    write_stack(w, id);
}

/* kind: whose list it is (a ga_trace_action_t, FRAMES_BLOCK, FRAMES_SEGMENT). */
static void write_frames(writer_t *w, uint32_t stack_id, int kind)
{
    if (w->src != NULL && stack_id != 0)
        write_token_frames(w, stack_id, kind);
    else
        write_stack(w, w->src != NULL ? 0 : stack_id);
}

static void write_segment(writer_t *w, const ga_snapshot_segment_t *seg)
{
    ga_trace_emitter_t *e = w->e;
    const ga_snapshot_segment_info_t *in = &seg->info;
    ga_trace_emit_begin_dict(e);
    ga_trace_emit_key(e, "device");
    ga_trace_emit_i64(e, in->device);
    ga_trace_emit_key(e, "address");
    /* int64 as PyTorch writes it (memory_snapshot.cpp): the viewer's unpickler
     * cannot mix the BigInt an address >= 2^63 would become with numbers. */
    ga_trace_emit_i64(e, (int64_t)in->address);
    ga_trace_emit_key(e, "total_size");
    ga_trace_emit_u64(e, seg->total_size);
    ga_trace_emit_key(e, "allocated_size");
    ga_trace_emit_u64(e, seg->allocated_size);
    ga_trace_emit_key(e, "active_size");
    ga_trace_emit_u64(e, seg->active_size);
    ga_trace_emit_key(e, "requested_size");
    ga_trace_emit_u64(e, seg->requested_size);
    ga_trace_emit_key(e, "stream");
    ga_trace_emit_i64(e, (int64_t)in->stream);
    ga_trace_emit_key(e, "segment_type");
    ga_trace_emit_atom(e, in->is_large ? "large" : "small");
    ga_trace_emit_key(e, "segment_pool_id");
    ga_trace_emit_tuple2(e, in->pool_id[0], in->pool_id[1]);
    ga_trace_emit_key(e, "is_expandable");
    ga_trace_emit_bool(e, in->is_expandable);
    ga_trace_emit_key(e, "frames");
    write_frames(w, in->stack_id, FRAMES_SEGMENT);
    ga_trace_emit_key(e, "blocks");
    ga_trace_emit_begin_list(e);
    uint64_t addr = in->address;
    for (size_t i = 0; i < seg->nblocks; i++) {
        const ga_snapshot_block_t *b = &w->s->blocks[seg->first_block + i];
        ga_trace_emit_begin_dict(e);
        ga_trace_emit_key(e, "address");
        ga_trace_emit_i64(e, (int64_t)addr);
        ga_trace_emit_key(e, "size");
        ga_trace_emit_u64(e, b->size);
        ga_trace_emit_key(e, "requested_size");
        ga_trace_emit_u64(e, b->requested_size);
        ga_trace_emit_key(e, "state");
        ga_trace_emit_atom(e, ga_snapshot_state_name((ga_snapshot_block_state_t)b->state));
        ga_trace_emit_key(e, "frames");
        write_frames(w, b->stack_id, FRAMES_BLOCK);
        ga_trace_emit_end_dict(e);
        addr += b->size;
    }
    ga_trace_emit_end_list(e);
    ga_trace_emit_end_dict(e);
}

static void write_entry(writer_t *w, const ga_trace_entry_t *t)
{
    ga_trace_emitter_t *e = w->e;
    ga_trace_emit_begin_dict(e);
    ga_trace_emit_key(e, "action");
    ga_trace_emit_atom(e, ga_trace_action_name((ga_trace_action_t)t->action));
    if (t->action == GA_TRACE_OOM) {
        ga_trace_emit_key(e, "device_free");
        ga_trace_emit_u64(e, t->extra.device_free);
    } else {
        ga_trace_emit_key(e, "addr");
        ga_trace_emit_i64(e, (int64_t)t->addr);
    }
    ga_trace_emit_key(e, "size");
    ga_trace_emit_u64(e, t->size);
    ga_trace_emit_key(e, "stream");
    ga_trace_emit_i64(e, (int64_t)t->stream);
    ga_trace_emit_key(e, "compile_context");
    ga_trace_emit_atom(e, "N/A");
    ga_trace_emit_key(e, "user_metadata");
    if (t->metadata != 0 && w->s->trace != NULL) {
        /* The trace's own table also in token mode: the id is never a token. */
        size_t len;
        const char *text = ga_trace_strtab_get(&w->s->trace->strings, t->metadata, &len);
        ga_trace_emit_str(e, text, len);
    } else {
        ga_trace_emit_atom(e, "");
    }
    ga_trace_emit_key(e, "frames");
    write_frames(w, t->stack_id, t->action);
    ga_trace_emit_key(e, "time_us");
    ga_trace_emit_i64(e, t->time_us);
    ga_trace_emit_end_dict(e);
}

static int device_count(const ga_snapshot_t *s)
{
    int max = s->device;
    if (s->trace != NULL && s->trace->device > max)
        max = s->trace->device;
    for (size_t i = 0; i < s->nsegs; i++)
        if (s->segs[i].info.device > max)
            max = s->segs[i].info.device;
    return max < 0 ? 1 : max + 1;
}

static void write_traces(writer_t *w)
{
    ga_trace_emitter_t *e = w->e;
    const ga_trace_t *t = w->s->trace;
    int n = device_count(w->s);
    ga_trace_emit_begin_list(e);
    for (int d = 0; d < n; d++) {
        ga_trace_emit_begin_list(e);
        if (t != NULL && d == t->device) {
            size_t count = ga_trace_ring_size(&t->events);
            for (size_t i = 0; i < count && ga_trace_emit_ok(e); i++) {
                const ga_trace_entry_t *te = ga_trace_ring_at(&t->events, i);
                if (te->action != GA_TRACE_ANNOTATE)
                    write_entry(w, te);
            }
        }
        ga_trace_emit_end_list(e);
    }
    ga_trace_emit_end_list(e);
}

/* The scalar allocator_settings, in memory_snapshot.cpp's order: each key
 * once, with its value's type and its member of ga_snapshot_settings_t.
 * roundup_power2_divisions, a dict, follows them. */
typedef enum setting_type { SETTING_STR, SETTING_I64, SETTING_F64, SETTING_BOOL } setting_type_t;

static const struct setting {
    const char *key;
    setting_type_t type;
    size_t offset; /* in ga_snapshot_settings_t */
} settings[] = {
/* One row a line (clang-format would open the macro as a block). */
/* clang-format off */
#define SETTING_(key, type, member) {key, type, offsetof(ga_snapshot_settings_t, member)}
    /* clang-format on */
    SETTING_("PYTORCH_CUDA_ALLOC_CONF", SETTING_STR, alloc_conf),
    SETTING_("max_split_size", SETTING_I64, max_split_size),
    SETTING_("garbage_collection_threshold", SETTING_F64, garbage_collection_threshold),
    SETTING_("expandable_segments", SETTING_BOOL, expandable_segments),
    SETTING_("pinned_num_register_threads", SETTING_I64, pinned_num_register_threads),
    SETTING_("release_lock_on_cudamalloc", SETTING_BOOL, release_lock_on_cudamalloc),
    SETTING_("pinned_use_cuda_host_register", SETTING_BOOL, pinned_use_cuda_host_register),
    SETTING_("graph_capture_record_stream_reuse", SETTING_BOOL, graph_capture_record_stream_reuse),
#undef SETTING_
};

static void write_setting(ga_trace_emitter_t *e, const struct setting *k, const ga_snapshot_settings_t *st)
{
    const void *v = (const char *)st + k->offset;
    ga_trace_emit_key(e, k->key);
    switch (k->type) {
    case SETTING_STR: put_cstr(e, *(const char *const *)v); break;
    case SETTING_I64: ga_trace_emit_i64(e, *(const int64_t *)v); break;
    case SETTING_F64: ga_trace_emit_f64(e, *(const double *)v); break;
    case SETTING_BOOL: ga_trace_emit_bool(e, *(const bool *)v); break;
    }
}

static void write_settings(writer_t *w)
{
    ga_trace_emitter_t *e = w->e;
    const ga_snapshot_settings_t *st = &w->s->settings;
    ga_trace_emit_begin_dict(e);
    if (w->s->has_settings) {
        for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++)
            write_setting(e, &settings[i], st);
        ga_trace_emit_key(e, "roundup_power2_divisions");
        ga_trace_emit_begin_dict(e);
        for (size_t i = 0; i < st->roundup_count; i++) {
            ga_trace_emit_key(e, pow2_keys[i]);
            ga_trace_emit_i64(e, st->roundup_power2_divisions[i]);
        }
        ga_trace_emit_end_dict(e);
    }
    ga_trace_emit_end_dict(e);
}

static void write_annotations(writer_t *w)
{
    ga_trace_emitter_t *e = w->e;
    const ga_trace_t *t = w->s->trace;
    ga_trace_emit_begin_list(e);
    size_t count = t != NULL ? ga_trace_ring_size(&t->annotations) : 0;
    for (size_t i = 0; i < count && ga_trace_emit_ok(e); i++) {
        const ga_trace_entry_t *a = ga_trace_ring_at(&t->annotations, i);
        size_t len;
        const char *text;
        ga_trace_emit_begin_dict(e);
        ga_trace_emit_key(e, "name");
        text = ga_trace_strtab_get(&t->strings, a->extra.annotation.name, &len);
        ga_trace_emit_str(e, text, len);
        ga_trace_emit_key(e, "stage");
        text = ga_trace_strtab_get(&t->strings, a->extra.annotation.stage, &len);
        ga_trace_emit_str(e, text, len);
        ga_trace_emit_key(e, "device");
        ga_trace_emit_i64(e, t->device);
        ga_trace_emit_key(e, "time_us");
        ga_trace_emit_i64(e, a->time_us);
        ga_trace_emit_end_dict(e);
    }
    ga_trace_emit_end_list(e);
}

static int by_address(const void *a, const void *b)
{
    uint64_t x = ((const ga_snapshot_segment_t *)a)->info.address;
    uint64_t y = ((const ga_snapshot_segment_t *)b)->info.address;
    return x < y ? -1 : x > y;
}

galloc_status_t ga_snapshot_write(ga_snapshot_t *s, FILE *out, galloc_snapshot_format_t format)
{
    const ga_trace_emitter_ops_t *ops;
    if (format == GALLOC_SNAPSHOT_PICKLE)
        ops = &ga_trace_pickle;
    else if (format == GALLOC_SNAPSHOT_JSON)
        ops = &ga_trace_json;
    else
        return GALLOC_E_INVAL;
    if (out == NULL)
        return GALLOC_E_INVAL;
    ga_trace_emitter_t *e = malloc(sizeof(*e));
    if (e == NULL)
        return GALLOC_E_NOMEM;
    writer_t w = {.e = e, .s = s};
    ga_trace_strtab_init(&w.own_strings);
    ga_trace_stacks_init(&w.own_stacks, &w.own_strings);
    ga_addrmap_init(&w.tokens, sizeof(token_stack_t));
    if (s->trace != NULL && ga_trace_tokens(s->trace)) {
        w.src = &s->trace->source; /* ids are tokens: no stack of the store is named */
        w.stacks = &w.own_stacks;
        w.strings = &w.own_strings;
    } else if (s->trace != NULL) {
        /* Best effort: frames it cannot resolve are written as "??". */
        (void)ga_trace_stacks_symbolize(&s->trace->stacks);
        w.stacks = &s->trace->stacks;
        w.strings = &s->trace->strings;
    }
    ga_trace_emit_start(e, ops, out);
    w.memo = ga_trace_emit_can_memo(e);
    if (s->nsegs > 1)
        qsort(s->segs, s->nsegs, sizeof(*s->segs), by_address);

    ga_trace_emit_begin_dict(e);
    ga_trace_emit_key(e, "segments");
    ga_trace_emit_begin_list(e);
    for (size_t i = 0; i < s->nsegs && ga_trace_emit_ok(e); i++)
        write_segment(&w, &s->segs[i]);
    ga_trace_emit_end_list(e);
    ga_trace_emit_key(e, "device_traces");
    write_traces(&w);
    ga_trace_emit_key(e, "allocator_settings");
    write_settings(&w);
    ga_trace_emit_key(e, "external_annotations");
    write_annotations(&w);
    ga_trace_emit_end_dict(e);

    galloc_status_t rc = ga_trace_emit_finish(e);
    free(w.stack_memo.v);
    free(w.frame_memo.v);
    free(w.str_memo.v);
    ga_addrmap_destroy(&w.tokens);
    ga_trace_stacks_free(&w.own_stacks);
    ga_trace_strtab_free(&w.own_strings);
    free(e);
    return rc;
}
