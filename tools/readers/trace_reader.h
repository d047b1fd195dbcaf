/*
 * trace_reader.h: allocation traces as a stream of replay events, whatever the
 * file format (RAPIDS RMM logging CSV, PyTorch memory snapshot pickle,
 * galloc's text trace of docs/trace-format.md, Umpire replay log, PyTorch
 * profiler Chrome trace).
 *
 * A reader yields one ga_event_t at a time. The CSV, text and Umpire readers
 * stream the file through a fixed buffer (memory does not grow with the
 * file); the Chrome trace reader streams the JSON but keeps its CUDA memory
 * events (to sort them by time) and the ranges that may enclose them (their
 * stacks); the snapshot reader holds the decoded
 * pickle. Both are bounded for a gzip file, and sizes no device has are
 * refused (limits.h; docs/trace-format.md, "Memory bounds on any input").
 * A file may hold several "units" (a snapshot or Chrome trace has one
 * trace per device); each unit is replayed on its own.
 *
 * Errors name the file and the place: "FILE:LINE: problem" for the text
 * formats ("FILE:LINE: column C: problem" for an Umpire log), "FILE: byte N:
 * problem" for a pickle or Chrome trace, "FILE: device_traces[D][I]:
 * problem" for a snapshot entry. No input makes a reader crash or leak.
 *
 * Not thread-safe: one reader per thread.
 */
#ifndef GA_TOOLS_READERS_TRACE_READER_H
#define GA_TOOLS_READERS_TRACE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The formats, from the registry formats.def (its descriptors say what each
 * is): GA_FORMAT_RMM (RAPIDS RMM logging CSV), GA_FORMAT_TORCH (PyTorch
 * snapshot pickle), GA_FORMAT_GALLOC (galloc text), GA_FORMAT_UMPIRE (LLNL
 * Umpire replay log), GA_FORMAT_KINETO (PyTorch profiler Chrome trace). */
typedef enum ga_format {
    GA_FORMAT_AUTO = 0, /* detect from the first bytes */
#define GA_FORMAT(id, name) GA_FORMAT_##id,
#include "tools/readers/formats.def"
#undef GA_FORMAT
    GA_FORMAT_END /* one past the last */
} ga_format_t;

typedef enum ga_event_kind {
    GA_EV_ALLOC,          /* id, size, stream: an allocation that succeeded in the traced run */
    GA_EV_FREE,           /* id; stream = the stream the free was ordered on, or GA_STREAM_NONE */
    GA_EV_FREE_PENDING,   /* id: freed by the user, reuse waits on other streams' work (snapshot
                             free_requested without an immediate free_completed) */
    GA_EV_FREE_COMPLETED, /* id: that deferred free finished (snapshot free_completed) */
    GA_EV_RECORD_STREAM,  /* id, stream: the block is also used on stream (Tensor.record_stream) */
    GA_EV_STREAM_SYNC,    /* stream: the host waited for the stream's work */
    GA_EV_EMPTY_CACHE,    /* torch.cuda.empty_cache(); size: see ga_replay_empty_cache */
    GA_EV_SET_FRACTION,   /* fraction: torch.cuda.set_per_process_memory_fraction() */
    GA_EV_OOM,            /* size, stream: an allocation that FAILED in the traced run */
    GA_EV_ANNOTATE,       /* text: a user marker ("step 8847"), kept for OOM reports */
    GA_EV_RESERVE,        /* size, stream: memory the traced allocator had reserved before the trace
                             began and not allocated: grow reserved to size bytes with one cached free
                             segment, as far as the device has room (ga_replay_reserve) */
    GA_EV_SNAPSHOT,       /* size: the traced run took a snapshot here (PyTorch's "snapshot" trace entry,
                             size = its active bytes then): a marker, replayed into a recorded history
                             only (galloc_record_snapshot_entry), no allocator call */
    /* Sleep and wake (galloc_sleep.h; the text format only). text: a tag, or
     * a tag list "a,b" or "*" (every tag), not NUL-terminated and valid until
     * the next ga_reader_next, as an annotation's. */
    GA_EV_TAG_BEGIN, /* text: one tag: the allocations after it belong to it (galloc_tag_begin) */
    GA_EV_TAG_END,   /* text: that tag's scope ends (galloc_tag_end) */
    GA_EV_SLEEP,     /* text: the tags put to sleep; text2: those offloaded to the host (NULL, 0:
                             none; the contents of the others are discarded) (galloc_sleep) */
    GA_EV_WAKE       /* text: the tags woken (galloc_wake) */
} ga_event_kind_t;

#define GA_EV_LAST GA_EV_WAKE /* the highest kind, for range checks */
#define GA_TAG_LIST_MAX 256   /* a tag list's longest text, NUL included (readers refuse longer ones) */

#define GA_STREAM_NONE UINT64_MAX /* "no stream given" in GA_EV_FREE */
#define GA_EVF_PROLOGUE 0x1u      /* recreates a block that was live before the trace began */
#define GA_EVF_SEEDED                                                                                                  \
    0x2u /* with GA_EVF_PROLOGUE: a stand-in block for bytes the trace says were
                                     live before it began (not a request of the job; never freed) */
/* Set by tools/job, never by a reader: a GA_EV_ALLOC the trace never frees (live at its end:
 * weights, optimizer state), as opposed to a transient one. */
#define GA_EVF_KEPT 0x4u

/* One frame of what a record says made an allocation, whatever the format.
 * Strings are not NUL-terminated and belong to the reader (valid until its
 * next ga_reader_next); NULL with length 0 when the record has none. */
typedef struct ga_frame {
    const char *file; /* a source file ("train.py", "??" for an unknown C++ one), NULL if none */
    size_t file_len;
    const char *name; /* a function, op, range or label ("step", "at::_ops::mm::call(...)", "aten::mm") */
    size_t name_len;
    int64_t line; /* 0 when unknown */
} ga_frame_t;

/* What a record carries about the code behind an allocation (tools/owners
 * classifies it into a site and a phase: docs/owners.md). */
typedef enum ga_stack_kind {
    GA_STACK_NONE = 0,   /* nothing recorded for this event */
    GA_STACK_FRAMES,     /* a call stack, innermost first: Python frames (file, line, function) and, with
                            stacks="all", C++ frames (file "??", "" or a .cpp, line 0); a snapshot adds the
                            record_function annotations in force (external_annotations), outermost, as
                            frames with a name only */
    GA_STACK_RANGES,     /* the profiler's ranges that enclose the event on its thread, innermost first:
                            ops ("aten::mm"), autograd nodes ("autograd::engine::evaluate_function:
                            MmBackward0"), Python functions (the range "train.py(35): step" as file
                            "train.py", line 35, name "step"), annotations ("ProfilerStep#3",
                            "Optimizer.step#AdamW.step"), name only: a Kineto trace (kineto_ranges.c) */
    GA_STACK_ANNOTATION, /* one frame, name = the annotation in force (galloc text: the last annotate) */
    GA_STACK_ALLOCATOR,  /* one frame, name = the allocator that served it (an Umpire log); a second,
                            outer frame may name the allocation (named_allocate) */
    GA_STACK_THREAD      /* one frame, name = the thread that made it ("thread 140213"; an RMM log) */
} ga_stack_kind_t;

/* A recorded stack: n frames read through frame(data, i, out). key(data, i),
 * when not NULL, is an identity of frame i: frames with equal keys are equal
 * (a snapshot's shared frame objects), so a stack can be recognized without
 * reading its strings; 0 means "no identity". All of it is the reader's and
 * valid until its next ga_reader_next. */
typedef struct ga_stack {
    ga_stack_kind_t kind;
    size_t n;
    const void *data;
    void (*frame)(const void *data, size_t i, ga_frame_t *out);
    uintptr_t (*key)(const void *data, size_t i);
} ga_stack_t;

typedef struct ga_event {
    ga_event_kind_t kind;
    uint32_t flags;   /* GA_EVF_* */
    uint64_t id;      /* the traced pointer (or the text format's id): the key of the pointer map */
    uint64_t size;    /* bytes requested */
    uint64_t stream;  /* stream handle as traced; 0 is the default stream */
    double fraction;  /* GA_EV_SET_FRACTION */
    uint64_t where;   /* 1-based line (CSV, text, Umpire) or entry index (snapshot,
                           Chrome traceEvents), for messages */
    const char *text; /* GA_EV_ANNOTATE, the tag events: not NUL-terminated, valid until the next
                           ga_reader_next */
    size_t text_len;
    const char *text2; /* GA_EV_SLEEP: the offload list, as text; NULL when none */
    size_t text2_len;
    const void *frames;   /* a snapshot entry's recorded stack (ga_torch_frame), NULL if none; valid
                           while the reader is open */
    uint64_t place;       /* GA_EV_ALLOC: the device address of the segment the traced run allocated for
                           it (a snapshot's segment_alloc or segment_map just before; a new expandable
                           segment's first map is at its reservation's base), 0 if none was recorded */
    uint64_t device_free; /* GA_EV_OOM from a snapshot: the device's free bytes when the traced run failed
                             (the entry's device_free), 0 if not recorded */
    uint64_t released;    /* GA_EV_OOM from a snapshot: bytes the traced run's OOM path released just before
                             it (the segment_free / segment_unmap entries it follows) */
    int64_t time_us;      /* when the traced run made the call (microseconds since the epoch), 0 if unknown */
    int64_t pool_id[2];   /* a snapshot entry's 'pool_id' (its MemPool, pytorch/pytorch PR #177717), (0, 0)
                             when the entry has none or is the default pool's; not replayed (yet) */
    ga_stack_t stack;     /* GA_EV_ALLOC, GA_EV_OOM: what made the request (kind NONE when the record has
                             nothing; for a GA_EVF_PROLOGUE event, only what the record says of its
                             allocation: a snapshot's final block's frames); valid until the next
                             ga_reader_next */
} ga_event_t;

typedef struct ga_reader ga_reader_t;

/*
 * ga_reader_open: open path ("-" is stdin, streamed formats only) in format
 * fmt (GA_FORMAT_AUTO detects it). Returns 0 and *out, or -1 with err set and
 * *out NULL.
 */
int ga_reader_open(const char *path, ga_format_t fmt, ga_reader_t **out, char *err, size_t errlen);

/* ga_reader_close: release everything (NULL is a no-op). */
void ga_reader_close(ga_reader_t *r);

/* ga_reader_units: how many separately replayed traces the file holds (>= 1). */
size_t ga_reader_units(const ga_reader_t *r);

/* ga_reader_unit_label: "" for a single-unit file, "device 1" for a snapshot's
 * second device trace. Static or reader-owned. */
const char *ga_reader_unit_label(const ga_reader_t *r, size_t unit);

/* ga_reader_unit_device: the device index unit recorded (a snapshot's device
 * trace), 0 for formats without one. */
int ga_reader_unit_device(const ga_reader_t *r, size_t unit);

/* ga_reader_begin: position at the start of unit (units in order, each once;
 * unit 0 is where a fresh reader stands). Returns 0, or -1 with err set. */
int ga_reader_begin(ga_reader_t *r, size_t unit, char *err, size_t errlen);

/* ga_reader_next: the next event of the current unit. Returns 1 with *ev
 * filled, 0 at the end of the unit, -1 with err set (the file is bad: the
 * message names file and line or offset; further calls keep returning -1). */
int ga_reader_next(ga_reader_t *r, ga_event_t *ev, char *err, size_t errlen);

/* ga_reader_format: the format detected or forced. */
ga_format_t ga_reader_format(const ga_reader_t *r);

/* ga_reader_device_memory: device size recorded in the trace for the current
 * unit (galloc header device_memory; a Chrome trace's deviceProperties
 * totalGlobalMem of the unit's device), 0 when the trace does not say. */
uint64_t ga_reader_device_memory(const ga_reader_t *r);

/* ga_reader_snapshot: the parsed PyTorch snapshot a torch-format reader
 * holds (its settings, final segments and trace: tools/snapshot), valid
 * while r is open; NULL for the other formats. */
struct ga_torch_snapshot;
const struct ga_torch_snapshot *ga_reader_snapshot(const ga_reader_t *r);

/* ga_reader_progress: fraction in [0, 1] of the current unit consumed, for a
 * progress bar (-1 when unknown, e.g. reading a pipe). */
double ga_reader_progress(const ga_reader_t *r);

/* ga_reader_notes: counts a reader skipped on purpose (informational entries
 * such as snapshot segment_alloc, or entries with an action it does not
 * replay); prologue: allocations recreated for blocks live before the trace. */

/* What a trace says about memory in use before its first event: a profiler
 * trace or allocator log often starts after the model was loaded. */
typedef enum ga_start_kind {
    GA_START_EVENTS = 0, /* nothing beyond the events (the format has no totals, or the events hold it) */
    GA_START_SEEDED,     /* the trace's totals say what was live and reserved before its first event:
                            the reader's prologue recreates it (live: GA_EVF_SEEDED blocks; the
                            reserved remainder: one GA_EV_RESERVE) */
    GA_START_UNKNOWN     /* the trace may start mid-run and has no totals to tell (older Kineto
                            layout): the replay starts empty and leaves that memory out */
} ga_start_kind_t;

typedef struct ga_reader_start {
    ga_start_kind_t kind;     /* see above */
    uint64_t live;            /* GA_START_SEEDED: bytes allocated before the first event */
    uint64_t reserved;        /* GA_START_SEEDED: bytes reserved at the first event */
    uint64_t peak_allocated;  /* the trace's own maximum of its allocated total, 0 if it has none */
    uint64_t peak_reserved;   /* ... and of its reserved total */
    bool by_size;             /* the trace has no addresses (older Kineto layout): each free was matched
                                to the most recent live allocation of the same size (LIFO) */
    uint64_t unmatched_frees; /* by_size: frees with no live allocation of their size, skipped */
} ga_reader_start_t;

typedef struct ga_reader_notes {
    uint64_t skipped;        /* entries read but not replayed */
    uint64_t prologue;       /* GA_EVF_PROLOGUE events of the current unit */
    ga_reader_start_t start; /* the current unit's state before its first event */
} ga_reader_notes_t;
void ga_reader_notes(const ga_reader_t *r, ga_reader_notes_t *out);

/* ga_reader_format_name: "rmm", "torch", "galloc", "umpire", "kineto" (the
 * registry's names), "auto". ga_reader_format_parse: the reverse, also taking
 * a format's aliases ("pytorch" for torch); false for an unknown name. */
const char *ga_reader_format_name(ga_format_t f);
bool ga_reader_format_parse(const char *s, ga_format_t *out);

/* ga_reader_format_list: "rmm, torch, galloc, umpire, kineto": every name
 * --format takes besides auto, in the registry's order, into buf. */
void ga_reader_format_list(char *buf, size_t len);

/* ga_reader_format_help: one line per format for the help texts,
 * "  NAME     what it is\n", in the registry's order. */
void ga_reader_format_help(FILE *out);

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_READERS_TRACE_READER_H */
