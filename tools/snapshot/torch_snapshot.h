/*
 * torch_snapshot.h: a PyTorch memory snapshot (torch.cuda.memory._snapshot(),
 * as _dump_snapshot pickles it), read through one walker: torch_snapshot.c is
 * the only code that knows the dict's keys and their types. The trace reader
 * (read_torch.c), the mid-run state (seed.c), --verify's view (snap_view.c)
 * and the recorded settings (settings.c) consume the typed records below.
 *
 * The schema (PyTorch 2.x: c10/cuda/CUDACachingAllocator.cpp, the
 * TraceEntry and SegmentInfo it exports, and torch/cuda/memory.py):
 *
 *   {"segments": [{"device", "address", "total_size", "stream", "segment_type",
 *                  "segment_pool_id", "is_expandable", "blocks": [{"address", "size",
 *                  "requested_size", "state"}, ...]}, ...],
 *    "device_traces": [[{"action", "addr", "size", "stream", "device_free",
 *                        "user_metadata", "compile_context", "time_us",
 *                        "frames", "device", "pool_id"}, ...], ...], (one list per device)
 *    "allocator_settings": {"expandable_segments", "max_split_size",
 *                           "garbage_collection_threshold",
 *                           "roundup_power2_divisions", "PYTORCH_CUDA_ALLOC_CONF"}}
 *
 * Older layouts read through the same records: a bare list of segments
 * (torch.cuda.memory_snapshot(), PyTorch 1.13's _snapshot()) is a document
 * with segments and no device_traces; PyTorch 2.0 blocks without 'address'
 * get it computed (ga_torch_block) and those without 'requested_size' take
 * history[0].real_size.
 *
 * Records are decoded on demand from the parsed pickle, never copied in bulk:
 * a hostile file can put one list in many places (the pickle memo), and a
 * flattened copy could then cost far more memory than the file. Every field
 * says whether it was there and of the right type, so each consumer keeps its
 * own rules (required or defaulted) and its own messages.
 *
 * Thread-safety: read-only walks over an immutable document; the file cache
 * behind ga_torch_load is not thread-safe (snapfile.h).
 */
#ifndef GA_TOOLS_SNAPSHOT_TORCH_SNAPSHOT_H
#define GA_TOOLS_SNAPSHOT_TORCH_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GA_TORCH_MAX_DEVICES 1024 /* device indices at or above this are garbled input */

struct ga_pickle;   /* pickle_read.h */
struct ga_pk_value; /* pickle_read.h: the walker's own business */

/* An integer field: addresses, sizes and streams are int64 in PyTorch's dicts. */
typedef enum ga_torch_kind {
    GA_TORCH_MISSING = 0, /* the key is not there (or the record is not a dict) */
    GA_TORCH_INT,         /* an int (within 64 bits) */
    GA_TORCH_WRONG        /* something else */
} ga_torch_kind_t;

typedef struct ga_torch_int {
    ga_torch_kind_t kind;
    uint64_t v; /* GA_TORCH_INT: the int64 as its bits; else 0 */
} ga_torch_int_t;

/* ga_torch_int_get: f as a strict reader takes it: an int; missing gives
 * dflt unless required. false when missing and required, or of another type. */
static inline bool ga_torch_int_get(ga_torch_int_t f, bool required, uint64_t dflt, uint64_t *out)
{
    *out = f.kind == GA_TORCH_INT ? f.v : dflt;
    return f.kind == GA_TORCH_INT || (f.kind == GA_TORCH_MISSING && !required);
}

/* A list the schema names (device_traces, one device's trace, segments, a
 * segment's blocks), described for checks and messages. */
typedef struct ga_torch_list {
    bool present;                /* the key (or index) is there */
    bool is_list;                /* ... and holds a list */
    const char *type;            /* its type name ("list", "dict", ...) when present, for messages */
    size_t n;                    /* items when a list, else 0 */
    const struct ga_pk_value *v; /* the list itself (walker-private) */
} ga_torch_list_t;

/* The document. */
typedef struct ga_torch_snapshot {
    bool is_dict;                       /* the root is a dict (PyTorch 1.13 wrote a list of segments) */
    bool is_list;                       /* the root is a list: taken as the segments, no traces */
    const char *root_type;              /* the root's type name, for messages */
    ga_torch_list_t traces;             /* device_traces: item d is device d's trace */
    ga_torch_list_t segments;           /* segments: the final state, every device */
    const struct ga_pk_value *settings; /* allocator_settings (walker-private: ga_torch_settings) */
    ga_torch_list_t annotations;        /* external_annotations (2.6+): record_function ranges, every device */
} ga_torch_snapshot_t;

/* Trace entry actions (TraceEntry::Action, by the names the pickle holds). */
typedef enum ga_torch_action {
    GA_ACT_NONE = 0, /* 'action' is missing or not a str, or the entry is not a dict */
    GA_ACT_ALLOC,
    GA_ACT_FREE_REQUESTED,
    GA_ACT_FREE_COMPLETED,
    GA_ACT_SEGMENT_ALLOC,
    GA_ACT_SEGMENT_FREE,
    GA_ACT_SEGMENT_MAP,
    GA_ACT_SEGMENT_UNMAP,
    GA_ACT_OOM,
    GA_ACT_SNAPSHOT,
    GA_ACT_ANNOTATE,
    GA_ACT_OTHER /* a str this walker does not know (a newer PyTorch) */
} ga_torch_action_t;

/* One entry of a device's trace. */
typedef struct ga_torch_entry {
    bool is_dict;
    ga_torch_action_t action;
    ga_torch_int_t addr; /* the block or segment address (absent in oom entries) */
    ga_torch_int_t size; /* bytes (the request in alloc and oom entries) */
    ga_torch_int_t stream;
    ga_torch_int_t device_free; /* oom: the device's free memory then */
    ga_torch_int_t time_us;     /* when (2.2+) */
    const char *text;           /* user_metadata when a str (2.9+: _set_memory_metadata's string on
                                   every entry, "" when none; the annotate entries' note), else
                                   NULL; not NUL-terminated, points into the file */
    size_t text_len;
    const char *compile_context; /* compile_context when a str (2.8+: "N/A" outside a compiled region),
                                    else NULL; not NUL-terminated, points into the file */
    size_t compile_context_len;
    ga_torch_int_t device;            /* 'device': no PyTorch builder read writes it (the list's index is the
                              device); kept when a file has it */
    bool has_pool_id;                 /* 'pool_id' is a pair of ints (pytorch/pytorch PR #177717, TraceEntry's
                              mempool_): */
    int64_t pool_id[2];               /*   it, else (0, 0) */
    const struct ga_pk_value *frames; /* 'frames' when a non-empty list, else NULL (ga_torch_frame) */
} ga_torch_entry_t;

/* One recorded stack frame (innermost first, as PyTorch lists them). The
 * strings are not NUL-terminated and point into the file; NULL when missing
 * or not a str. */
typedef struct ga_torch_frame {
    const char *filename, *name;
    size_t filename_len, name_len;
    int64_t line; /* 0 when missing or not an int */
} ga_torch_frame_t;

/* ga_torch_frames_count: the items of an entry's frames (0 for NULL). */
size_t ga_torch_frames_count(const struct ga_pk_value *frames);
/* ga_torch_frame: frame i (< the count) of frames. */
void ga_torch_frame(const struct ga_pk_value *frames, size_t i, ga_torch_frame_t *out);

/* One item of external_annotations: a record_function range's START or END
 * ("Optimizer.step#AdamW.step"), as _record_memory_history records them. */
typedef enum ga_torch_stage { GA_STAGE_OTHER = 0, GA_STAGE_START, GA_STAGE_END } ga_torch_stage_t;
typedef struct ga_torch_annotation {
    bool is_dict;
    ga_torch_stage_t stage; /* 'stage' "START" or "END"; OTHER when missing or another value */
    const char *name;       /* 'name' when a str, else NULL; not NUL-terminated, points into the file */
    size_t name_len;
    ga_torch_int_t device, time_us;
} ga_torch_annotation_t;

/* ga_torch_annotation: external_annotations[i] (i < s->annotations.n). */
void ga_torch_annotation(const ga_torch_snapshot_t *s, size_t i, ga_torch_annotation_t *out);

/* A block's 'state'. */
typedef enum ga_torch_state {
    GA_STATE_NONE = 0,     /* missing or not a str, or the block is not a dict */
    GA_STATE_INACTIVE,     /* "inactive" */
    GA_STATE_ALLOCATED,    /* "active_allocated" */
    GA_STATE_PENDING_FREE, /* "active_pending_free" */
    GA_STATE_OTHER         /* another str */
} ga_torch_state_t;

typedef struct ga_torch_block {
    bool is_dict;
    ga_torch_state_t state;
    ga_torch_int_t address, size, requested_size;
    bool address_computed;            /* no 'address' key (PyTorch 2.0): the segment's address plus the
                                    sizes of the blocks before it */
    bool requested_from_history;      /* no 'requested_size' (1.13/2.0): history[0].real_size */
    const struct ga_pk_value *frames; /* its allocation's stack: 'frames' (2.1+) or history[0].frames
                                         (1.13/2.0) when a non-empty list, else NULL (ga_torch_frame) */
} ga_torch_block_t;

/* One segment of the final state. */
typedef struct ga_torch_segment {
    bool is_dict;
    ga_torch_int_t device, address, total_size, stream;
    bool expandable; /* is_expandable is True */
    bool small;      /* segment_type is "small" */
    /* segment_pool_id (MempoolId_t, PyTorch 2.1+): (0, 0) for the default
     * pools, also when missing or not a pair of ints (older snapshots have
     * no private pools to tell); anything else a CUDA-graph or MemPool
     * private pool, whose blocks never serve the default pools. */
    int64_t pool_id[2];
    ga_torch_list_t blocks;           /* its blocks, in address order as PyTorch lists them */
    const struct ga_pk_value *frames; /* the stack that made it: 'frames' when a non-empty list, else NULL
                                         (ga_torch_frame) */
    /* ga_torch_block's cursor for blocks without 'address' (scratch space). */
    bool walk_ok;
    size_t walk_next;
    uint64_t walk_off;
} ga_torch_segment_t;

/* allocator_settings (newer releases: AllocatorConfigInfo, the effective
 * configuration) as recorded. */
typedef struct ga_torch_settings {
    bool present;             /* allocator_settings is a dict */
    bool has_fields;          /* it names expandable_segments, max_split_size, garbage_collection_threshold,
                                   roundup_power2_divisions or graph_capture_record_stream_reuse */
    bool expandable_segments; /* expandable_segments is True */
    bool max_split_size_int;  /* max_split_size is an int: */
    int64_t max_split_size;   /*   bytes; -1 (or a big int, not kept) when unlimited */
    double gc_threshold;      /* garbage_collection_threshold when a float, else 0 (off) */
    bool roundup_dict;        /* roundup_power2_divisions is a dict: */
    int64_t roundup[16];      /*   divisions per interval starting at 1, 2, 4, ... 32768 MB (0 if not an int) */
    bool capture_reuse;       /* graph_capture_record_stream_reuse is True (2.9+) */
    const char *conf_text;    /* PYTORCH_CUDA_ALLOC_CONF when a str, else NULL (not NUL-terminated) */
    size_t conf_text_len;
} ga_torch_settings_t;

/* ga_torch_open: describe the parsed pickle pk (which must outlive s). */
void ga_torch_open(const struct ga_pickle *pk, ga_torch_snapshot_t *s);

/* ga_torch_check (snap_check.c): refuse what no real snapshot declares:
 * more than GA_TORCH_MAX_DEVICES device traces, a negative size, a segment,
 * block, mapping or allocation larger than GA_TRACE_BYTES_MAX
 * (tools/readers/limits.h; an oom entry's request may be any size), an
 * address range past 2^63, more block visits than len (the pickle's length)
 * could hold. 0, or -1 with err ("PATH: device_traces[D][I]: ..."). Fields
 * absent or of another type are left to the walkers' callers. */
int ga_torch_check(const ga_torch_snapshot_t *s, size_t len, const char *path, char *err, size_t errlen);

/* ga_torch_trace: device_traces[device] (present is false past the list's end). */
ga_torch_list_t ga_torch_trace(const ga_torch_snapshot_t *s, size_t device);

/* ga_torch_entry: entry i (< trace->n) of a trace list. */
void ga_torch_entry(const ga_torch_list_t *trace, size_t i, ga_torch_entry_t *out);

/* ga_torch_segment: segments[i] (i < s->segments.n). */
void ga_torch_segment(const ga_torch_snapshot_t *s, size_t i, ga_torch_segment_t *out);

/* ga_torch_block: block b (< g->blocks.n) of segment g. Without an
 * 'address' key it is computed from g's address and the earlier blocks'
 * sizes (address_computed; still missing when one of those is not an int).
 * g must be the caller's writable copy (its cursor makes an in-order walk
 * linear). */
void ga_torch_block(const ga_torch_segment_t *g, size_t b, ga_torch_block_t *out);

/* ga_torch_settings: allocator_settings. */
void ga_torch_settings(const ga_torch_snapshot_t *s, ga_torch_settings_t *out);

/*
 * ga_torch_devices: the devices a replay has a unit for: those whose trace
 * has entries or that hold final segments, in index order; device 0 when there
 * is none. Fills devices[GA_TORCH_MAX_DEVICES] and returns how many; returns
 * 0 with *bad set to the index of the first segment that is not a dict with an
 * int device below GA_TORCH_MAX_DEVICES (a missing device counts as 0).
 */
size_t ga_torch_devices(const ga_torch_snapshot_t *s, int *devices, size_t *bad);

/*
 * ga_torch_recorded_conf: the allocator settings snapshot s recorded, as the
 * PYTORCH_CUDA_ALLOC_CONF string galloc replays them with, in conf (len
 * bytes), and the recorded PYTORCH_CUDA_ALLOC_CONF text in text (text_len
 * bytes, "" if none). Returns whether settings were recorded (conf "" and
 * false when none). settings.c has the mapping.
 */
bool ga_torch_recorded_conf(const ga_torch_snapshot_t *s, char *conf, size_t len, char *text, size_t text_len);

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_SNAPSHOT_TORCH_SNAPSHOT_H */
