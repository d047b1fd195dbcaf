/*
 * galloc_trace.h: allocation history, snapshots and memory_summary, as PyTorch's
 * torch.cuda.memory._record_memory_history / _snapshot / _dump_snapshot /
 * memory_summary provide them. Snapshots open in PyTorch's memory visualizer
 * (https://pytorch.org/memory_viz, torch/utils/viz/MemoryViz.js).
 */
#ifndef GALLOC_TRACE_H
#define GALLOC_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc_allocator.h>
#include <galloc/galloc_status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What is recorded (PyTorch's `enabled`): nothing, state only (frames of live
 * blocks for snapshots, no trace), or state and the trace of every event. */
typedef enum galloc_history {
    GALLOC_HISTORY_NONE = 0,
    GALLOC_HISTORY_STATE = 1,
    GALLOC_HISTORY_ALL = 2
} galloc_history_t;

/* Which events carry a stack (PyTorch's `context`). */
typedef enum galloc_context {
    GALLOC_CONTEXT_NONE = 0,  /* no stacks */
    GALLOC_CONTEXT_STATE = 1, /* stacks of live allocations only */
    GALLOC_CONTEXT_ALLOC = 2, /* also in the trace's alloc entries */
    GALLOC_CONTEXT_ALL = 3    /* also for frees */
} galloc_context_t;

/* Whose frames (PyTorch's `stacks`): the framework's (through the frames
 * callback, "python") or the framework's plus galloc's native stack ("all"). */
typedef enum galloc_stacks { GALLOC_STACKS_PYTHON = 0, GALLOC_STACKS_ALL = 1 } galloc_stacks_t;

/*
 * Actions left out of the trace (PyTorch's _record_memory_history(skip_actions=
 * [...]), PR #168183): one bit per action name PyTorch accepts there. The
 * values are ABI. PyTorch takes no other name (it ignores "segment_map" and
 * "segment_unmap" silently); galloc refuses other bits instead.
 */
#define GALLOC_SKIP_ALLOC (1u << 0)          /* "alloc" */
#define GALLOC_SKIP_FREE_REQUESTED (1u << 1) /* "free_requested" */
#define GALLOC_SKIP_FREE_COMPLETED (1u << 2) /* "free_completed" */
#define GALLOC_SKIP_SEGMENT_ALLOC (1u << 3)  /* "segment_alloc" */
#define GALLOC_SKIP_SEGMENT_FREE (1u << 4)   /* "segment_free" */
#define GALLOC_SKIP_SNAPSHOT (1u << 7)       /* "snapshot" */
#define GALLOC_SKIP_OOM (1u << 8)            /* "oom" */
#define GALLOC_SKIP_ALL                                                                                                \
    (GALLOC_SKIP_ALLOC | GALLOC_SKIP_FREE_REQUESTED | GALLOC_SKIP_FREE_COMPLETED | GALLOC_SKIP_SEGMENT_ALLOC |         \
     GALLOC_SKIP_SEGMENT_FREE | GALLOC_SKIP_SNAPSHOT | GALLOC_SKIP_OOM)

typedef struct galloc_history_options {
    uint32_t struct_size;     /* sizeof(galloc_history_options_t) */
    galloc_history_t enabled; /* NONE stops recording and drops the trace */
    galloc_context_t context;
    galloc_stacks_t stacks;
    size_t max_entries; /* trace ring buffer size; 0 = PyTorch's default (unbounded: galloc uses SIZE_MAX) */
    /* Appended later (a struct_size that stops before it skips nothing).
     * GALLOC_SKIP_* bits: those actions are not recorded in the trace from
     * now on; each call replaces the set (0 records every action). Entries
     * already recorded stay. */
    uint32_t skip_actions;
} galloc_history_options_t;

/*
 * galloc_record_memory_history: start, change or stop recording (opt NULL or
 * enabled NONE stops). Returns GALLOC_OK, GALLOC_E_INVAL (bad struct_size,
 * enum value or a skip_actions bit outside GALLOC_SKIP_ALL; nothing changed),
 * GALLOC_E_NOMEM (the ring could not be allocated; recording state unchanged).
 */
GALLOC_API galloc_status_t galloc_record_memory_history(galloc_allocator_t *a, const galloc_history_options_t *opt);

typedef enum galloc_snapshot_format {
    GALLOC_SNAPSHOT_PICKLE = 0, /* what torch.cuda.memory._dump_snapshot writes */
    GALLOC_SNAPSHOT_JSON = 1    /* same dictionary as JSON (the visualizer reads both) */
} galloc_snapshot_format_t;

/*
 * galloc_snapshot_write: write the allocator's state and recorded trace as
 * PyTorch's snapshot dictionary (segments, device_traces, allocator_settings,
 * external_annotations) to path. Returns GALLOC_OK, GALLOC_E_INVAL, GALLOC_E_IO
 * (message names the path and the OS error), GALLOC_E_NOMEM.
 */
GALLOC_API galloc_status_t galloc_snapshot_write(galloc_allocator_t *a, const char *path,
                                                 galloc_snapshot_format_t format);

/* One frame of a framework's own stack (e.g. a Python frame). */
typedef struct galloc_frame {
    const char *filename; /* NULL = "" */
    const char *name;     /* function name; NULL = "" */
    int64_t line;
} galloc_frame_t;

/*
 * galloc_frames_fn: fill up to max frames, innermost first, and return how
 * many were filled. The strings need only stay valid until the call returns
 * (galloc copies them). It is called on the allocating thread WITH the
 * allocator's lock held: it must not call galloc, and must not wait for a
 * lock that a thread calling galloc may hold.
 */
typedef size_t (*galloc_frames_fn)(void *ctx, galloc_frame_t *frames, size_t max);

/* galloc_set_frames_callback: where framework frames come from (PyTorch's
 * Python frames); fn NULL removes it. Returns GALLOC_OK or GALLOC_E_INVAL. */
GALLOC_API galloc_status_t galloc_set_frames_callback(galloc_allocator_t *a, galloc_frames_fn fn, void *ctx);

/*
 * A trace source: a caller replaying a recorded run names the recorded event
 * each call stands for (a token), and supplies that event's time and stacks
 * itself, so that a replay's snapshot carries the recording's frames (any
 * depth, any length) and times instead of the replayer's own.
 *
 * Every member is called with the allocator's lock held, on the thread of the
 * galloc call in progress: none may call galloc, nor wait for a lock that a
 * thread calling galloc may hold.
 */
typedef struct galloc_trace_source {
    uint32_t struct_size; /* sizeof(galloc_trace_source_t) */
    void *ctx;            /* passed to every member */
    /* Required. token: the recorded event the current call replays, 0 = none.
     * Called where a stack would be captured (the token is stored in its
     * place) and, when time_us is set, for every trace entry and annotation
     * recorded (for its time). */
    uint32_t (*token)(void *ctx);
    /* Optional, NULL = galloc's clock. time_us: the time of token's event's
     * entry of `action` (as for frames; "annotate" for an annotation), in
     * microseconds since the epoch: one call may make several entries that
     * the replayer recorded at different times (a segment_alloc before its
     * alloc). Never called for token 0. */
    int64_t (*time_us)(void *ctx, uint32_t token, const char *action);
    /* Required. frames: token's recorded stack for an entry of `action`
     * (PyTorch's action string: "alloc", "free_requested", "free_completed",
     * "segment_alloc", "segment_free", "segment_map", "segment_unmap", "oom";
     * "block" for a live block's allocation stack in `segments`, "segment"
     * for a segment's), innermost first: sets *out to n frames, valid until
     * the next call, and returns n (0 = none). Any number of frames, strings of
     * any length (NULL = ""). Called only while a snapshot is written, never
     * for token 0. */
    size_t (*frames)(void *ctx, uint32_t token, const char *action, const galloc_frame_t **out);
    /* Optional (NULL, or a struct_size that stops before it: every entry of a
     * call takes token()'s token). entry: the token of one trace entry the
     * current call records (action as for frames, the entry's address and
     * bytes), for a replayer whose recording shows that entry apart from the
     * call's other entries: each segment one empty_cache releases, at its own
     * time. 0 = the call's token. The entry then takes this token's time
     * (time_us) and, as any entry with context ALLOC or more, its frames.
     * Called for every trace entry recorded while the source is set. */
    uint32_t (*entry)(void *ctx, const char *action, uint64_t addr, uint64_t size);
} galloc_trace_source_t;

/*
 * galloc_set_trace_source: take every stack and time from src (copied) from
 * now on; NULL removes it. While a source is set:
 *   - no stack is captured (the frames callback and native unwinding are not
 *     used): where one would be (same context rules), src->token's token is
 *     stored instead, and a snapshot writes src->frames of it;
 *   - each trace entry and annotation gets src->time_us of the current call's
 *     token (galloc's clock when the token is 0 or time_us is NULL);
 *   - galloc_snapshot_write records no "snapshot" trace entry (the file is a
 *     replay's record, not a live allocator's);
 *   - as in PyTorch's free_block(block, context), the free_completed entry
 *     of a free that completes at once carries the free's token (context
 *     ALL); one that waited on stream events carries the allocation's.
 * Setting a source where none was, or removing it, clears the recorded trace
 * and annotations (as galloc_record_memory_history does when max_entries
 * changes) and the stacks of live blocks and segments: stored ids change
 * meaning between stack ids and tokens. Replacing a source with another keeps
 * them (the new source then resolves the tokens recorded so far).
 * Returns GALLOC_OK; GALLOC_E_INVAL (struct_size too small, token or frames
 * NULL; nothing changed); GALLOC_E_UNSUPPORTED (an allocator without history).
 */
GALLOC_API galloc_status_t galloc_set_trace_source(galloc_allocator_t *a, const galloc_trace_source_t *src);

/*
 * galloc_record_snapshot_entry: record the "snapshot" trace entry that taking
 * a snapshot records (PyTorch's _snapshot(): its size is the active bytes,
 * blocks allocated or pending free, now), without writing one: for a
 * replayer reproducing the snapshots its recording took, which MemoryViz
 * shows as markers in the trace. With a trace source set the entry takes the
 * source's time and frames, as every entry does (galloc_snapshot_write then
 * records none). A no-op unless recording with GALLOC_HISTORY_ALL. Returns
 * GALLOC_OK, GALLOC_E_INVAL (a NULL or destroyed allocator),
 * GALLOC_E_UNSUPPORTED (an allocator without history).
 */
GALLOC_API galloc_status_t galloc_record_snapshot_entry(galloc_allocator_t *a);

/*
 * galloc_record_annotation: a user annotation in the history (PyTorch's
 * torch.cuda.memory._record_annotation / record_function ranges), written to
 * the snapshot's external_annotations. stage is e.g. "START" or "END". A no-op
 * unless recording with GALLOC_HISTORY_ALL. Returns GALLOC_OK, GALLOC_E_INVAL,
 * GALLOC_E_NOMEM.
 */
GALLOC_API galloc_status_t galloc_record_annotation(galloc_allocator_t *a, const char *stage, const char *name);

/* The longest user metadata string, in bytes. */
#define GALLOC_MEMORY_METADATA_MAX 4096

/*
 * galloc_set_memory_metadata: PyTorch's torch.cuda.memory._set_memory_metadata
 * (PR #165490): from now on every trace entry the CALLING THREAD records,
 * on any allocator (any device), carries metadata as its "user_metadata"
 * in snapshots, until the thread sets another; NULL or "" clears it (entries
 * then carry "", as PyTorch's do). Other threads are not affected. The
 * string is copied. Entries recorded before keep theirs. Costs nothing while
 * no thread has metadata set; otherwise each distinct string is kept in
 * each recording allocator's string table until it is destroyed.
 * Returns GALLOC_OK, GALLOC_E_INVAL (longer than GALLOC_MEMORY_METADATA_MAX
 * bytes; the thread's metadata unchanged). Thread-safe.
 */
GALLOC_API galloc_status_t galloc_set_memory_metadata(const char *metadata);

/*
 * galloc_get_memory_metadata: the calling thread's metadata (PyTorch's
 * _get_memory_metadata; "" when none) into buf (len bytes, NUL-terminated,
 * truncated if short; buf may be NULL when len is 0). *needed (if non-NULL)
 * receives its length. Returns GALLOC_OK, GALLOC_E_INVAL (buf NULL with len
 * > 0). Thread-safe.
 */
GALLOC_API galloc_status_t galloc_get_memory_metadata(char *buf, size_t len, size_t *needed);

/*
 * galloc_memory_summary: PyTorch's torch.cuda.memory_summary() table of the
 * allocator's stats into buf (len bytes, NUL-terminated, truncated if short).
 * Returns GALLOC_OK or GALLOC_E_INVAL; *needed (if non-NULL) receives the
 * length of the whole text.
 */
GALLOC_API galloc_status_t galloc_memory_summary(galloc_allocator_t *a, bool abbreviated, char *buf, size_t len,
                                                 size_t *needed);

#ifdef __cplusplus
}
#endif
#endif /* GALLOC_TRACE_H */
