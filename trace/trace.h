/*
 * trace.h: the trace layer's interface: one recorder per allocator (device)
 * that the pool calls on every event, as PyTorch's DeviceCachingAllocator
 * calls record_trace (c10/cuda/CUDACachingAllocator.cpp). It owns the event
 * ring, the annotation ring (PyTorch keeps annotations in a separate
 * RingBuffer<AnnotationEntry> with the same max_entries), the stack store and
 * the interned strings. Snapshots are built from it with snapshot.h.
 *
 * Locking: none inside. The pool calls everything on one ga_trace_t under its
 * allocator lock, except ga_trace_stack_capture_raw (stack.h), which it may
 * call before taking the lock (a framework callback that needs its own lock,
 * such as Python's GIL, must not run under the allocator's lock).
 *
 * What is recorded follows the options (api/galloc_trace.h), as PyTorch's
 * _record_memory_history does:
 *   enabled NONE: nothing; STATE: stacks for live blocks only (no trace);
 *   ALL: stacks and the trace of every event.
 *   context: STATE: stacks at allocation (for snapshot blocks); ALLOC: those
 *   stacks also in the trace's entries; ALL: stacks captured at frees too
 *   (PyTorch: maybeGatherContext(STATE) in malloc, (ALL) in free, and
 *   record_trace keeps the context only when record_context_ >= ALLOC).
 *   stacks: PYTHON: the framework's frames only (the callback); ALL: plus
 *   galloc's native stack.
 *
 * Token mode (a trace source, galloc_set_trace_source): a replayer names the
 * recorded event of each call with a 32-bit token. Where a stack would be
 * captured the token is stored instead, in the same stack id slots (entries,
 * blocks, segments), and entries take the token's time; snapshots write the
 * source's frames for them. Ids of the two modes must never meet: a change of
 * mode clears the rings here, and the owner clears the ids it keeps.
 *
 * A ga_trace_t must not move in memory after ga_trace_init (the stack store
 * points at its string table).
 */
#ifndef GA_TRACE_TRACE_H
#define GA_TRACE_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc_status.h>
#include <galloc/galloc_trace.h>
#include "trace/ring.h"
#include "trace/stack.h"
#include "trace/strtab.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A clock in microseconds since the Unix epoch (a replay may supply its own). */
typedef int64_t (*ga_trace_clock_fn)(void *ctx);

/* Slots an annotation ring starts with (it grows to max_entries if needed). */
#define GA_TRACE_ANNOTATION_PREALLOC 256

typedef struct ga_trace {
    int device;                   /* the allocator's device index: its list in device_traces */
    galloc_history_t enabled;     /* PyTorch's enabled */
    galloc_context_t context;     /* PyTorch's context */
    galloc_stacks_t stacks_mode;  /* PyTorch's stacks */
    size_t max_entries;           /* ring size in force (SIZE_MAX = unbounded) */
    ga_trace_ring_t events;       /* device trace; started only when enabled == ALL */
    ga_trace_ring_t annotations;  /* GA_TRACE_ANNOTATE entries; started with events */
    ga_trace_strtab_t strings;    /* frame and annotation text */
    ga_trace_stacks_t stacks;     /* kept while any block may hold a stack id: until ga_trace_destroy */
    ga_trace_frames_fn frames_fn; /* the framework's frames (NULL = none) */
    void *frames_ctx;             /* frames_fn's argument */
    ga_trace_clock_fn clock_fn;   /* NULL = CLOCK_REALTIME */
    void *clock_ctx;              /* clock_fn's argument */
    galloc_trace_source_t source; /* token mode while source.token != NULL (see above); zeroed otherwise */
    uint32_t skip;                /* 1 << action for each action not recorded (PyTorch's skip_actions) */
    uint64_t instance;            /* unique per ga_trace_init in the process: metadata.c's cache key */
    uint64_t metadata_dropped;    /* entries recorded with "" because their metadata could not be interned */
} ga_trace_t;

/* ga_trace_init: recording off, nothing allocated. */
void ga_trace_init(ga_trace_t *t, int device);

/* ga_trace_destroy: free everything. Stack ids become invalid. */
void ga_trace_destroy(ga_trace_t *t);

/*
 * ga_trace_configure: galloc_record_memory_history's work. opt NULL or
 * enabled NONE stops recording and drops the trace and annotations (stacks
 * stay: live blocks may still name them). Otherwise records per opt;
 * max_entries 0 means unbounded. Starting the trace (or changing
 * max_entries) starts empty rings; changing only context or stacks keeps the
 * recorded entries. Returns GALLOC_OK; GALLOC_E_INVAL (struct_size too small,
 * enum out of range); GALLOC_E_NOMEM (rings not allocated; nothing changed).
 */
galloc_status_t ga_trace_configure(ga_trace_t *t, const galloc_history_options_t *opt);

/* ga_trace_configure_why: what a status from ga_trace_configure means, for
 * the allocator's last error (static text, never NULL). */
const char *ga_trace_configure_why(galloc_status_t st);

/* ga_trace_clear: drop the recorded entries and annotations, keep recording
 * (PyTorch's clear_history). */
void ga_trace_clear(ga_trace_t *t);

/* ga_trace_set_frames_fn: where framework frames come from (NULL = nowhere). */
void ga_trace_set_frames_fn(ga_trace_t *t, ga_trace_frames_fn fn, void *ctx);

/* ga_trace_set_clock: the clock for time_us (NULL = CLOCK_REALTIME). */
void ga_trace_set_clock(ga_trace_t *t, ga_trace_clock_fn fn, void *ctx);

/*
 * ga_trace_set_source: enter token mode with src (copied), or leave it (src
 * NULL). *mode_changed (if non-NULL) says whether stored ids changed meaning
 * (into or out of token mode): the rings were then cleared, and the owner
 * must clear the ids it keeps (blocks, segments). Returns GALLOC_OK or
 * GALLOC_E_INVAL (struct_size too small, token or frames NULL; nothing
 * changed).
 */
galloc_status_t ga_trace_set_source(ga_trace_t *t, const galloc_trace_source_t *src, bool *mode_changed);

/* ga_trace_tokens: whether stored ids are a source's tokens, not stack ids. */
static inline bool ga_trace_tokens(const ga_trace_t *t)
{
    return t->source.token != NULL;
}

/* ga_trace_now_us: microseconds since the Unix epoch (CLOCK_REALTIME). */
int64_t ga_trace_now_us(void);

/* ga_trace_source_time_us: token mode's clock: the time of the current
 * call's token's entry of action, t's own clock when there is none. */
int64_t ga_trace_source_time_us(const ga_trace_t *t, ga_trace_action_t action);

/* ga_trace_source_entry: token mode's time and stack id of entry e (its
 * addr and size set) of action: the source's token for that entry when it
 * names one (galloc_trace_source_t.entry), else the call's time and
 * stack_id, as ga_trace_push keeps them (context >= ALLOC). */
void ga_trace_source_entry(const ga_trace_t *t, ga_trace_entry_t *e, ga_trace_action_t action, uint32_t stack_id);

/* ga_trace_time_us: t's clock for an entry of action (the source's in token mode). */
static inline int64_t ga_trace_time_us(const ga_trace_t *t, ga_trace_action_t action)
{
    if (ga_trace_tokens(t))
        return ga_trace_source_time_us(t, action);
    return t->clock_fn != NULL ? t->clock_fn(t->clock_ctx) : ga_trace_now_us();
}

/* ga_trace_recording: whether events go to the trace (enabled == ALL). */
static inline bool ga_trace_recording(const ga_trace_t *t)
{
    return t->enabled == GALLOC_HISTORY_ALL;
}

/* ga_trace_wants_stack: whether to capture a stack for an allocation
 * (is_free false: context >= STATE) or a free (is_free true: context ALL). */
static inline bool ga_trace_wants_stack(const ga_trace_t *t, bool is_free)
{
    if (t->enabled == GALLOC_HISTORY_NONE)
        return false;
    return is_free ? t->context == GALLOC_CONTEXT_ALL : t->context >= GALLOC_CONTEXT_STATE;
}

/* ga_trace_capture: capture and intern the current stack per the options,
 * leaving out `skip` innermost frames of the caller's own (this function is
 * never included). Returns the stack id, 0 when stacks are off or empty or
 * memory ran out; in token mode, the source's current token instead (nothing
 * captured). Calls the frames callback: see the locking note above. */
uint32_t ga_trace_capture(ga_trace_t *t, unsigned skip);

/* ga_trace_capture_native: whether t's captures include the native stack. */
static inline bool ga_trace_capture_native(const ga_trace_t *t)
{
    return t->stacks_mode == GALLOC_STACKS_ALL;
}

/* ga_trace_intern: the id of a stack captured with ga_trace_stack_capture_raw
 * (pass ga_trace_capture_native(t), t->frames_fn, t->frames_ctx to it); in
 * token mode the source's current token, as ga_trace_capture. */
uint32_t ga_trace_intern(ga_trace_t *t, const ga_trace_raw_stack_t *raw);

/*
 * User metadata (metadata.c): PyTorch's _set_memory_metadata keeps one string
 * per thread (DeviceCachingAllocator's static thread_local user_metadata)
 * that record_trace copies into every entry the thread records, on any
 * device. galloc keeps the thread's string in thread-local storage and each
 * entry its id in the recording trace's string table. ga_trace_metadata_users
 * counts the threads whose string is not "": while it is 0, recording reads
 * no thread-local storage at all.
 */
extern unsigned ga_trace_metadata_users; /* read and written with __atomic builtins only */

/* ga_trace_metadata_set: the calling thread's metadata ("" or NULL clears
 * it). Returns GALLOC_OK, or GALLOC_E_INVAL (len > GALLOC_MEMORY_METADATA_MAX;
 * nothing changed). */
galloc_status_t ga_trace_metadata_set(const char *s, size_t len);

/* ga_trace_metadata_get: the calling thread's metadata (static per thread,
 * NUL-terminated) and its length. */
const char *ga_trace_metadata_get(size_t *len);

/* ga_trace_metadata_id: the string-table id of the calling thread's metadata
 * in t, interning it on first use (cold: once per thread, string and trace);
 * 0 for "" or when it cannot be interned (counted in t->metadata_dropped). */
uint32_t ga_trace_metadata_id(ga_trace_t *t);

/* ga_trace_entry_metadata: what a new entry of t records as user_metadata. */
static inline uint32_t ga_trace_entry_metadata(ga_trace_t *t)
{
    if (__atomic_load_n(&ga_trace_metadata_users, __ATOMIC_RELAXED) == 0)
        return 0;
    return ga_trace_metadata_id(t);
}

/*
 * ga_trace_push: append an event to the trace and return it (NULL unless
 * recording, or when action is skipped: PyTorch's record_trace leaves an
 * action of skip_actions out of the ring). mempool_id: the block's pool id
 * pair, NULL for (0, 0). stack_id is kept only when context >= ALLOC
 * (PyTorch's record_trace). The entry takes the recording thread's user
 * metadata. O(1), no allocation once the ring is at max_entries (and the
 * thread's metadata, if any, is interned).
 */
static inline ga_trace_entry_t *ga_trace_push(ga_trace_t *t, ga_trace_action_t action, uint64_t addr, uint64_t size,
                                              uint64_t stream, const int64_t *mempool_id, uint32_t stack_id)
{
    if (t->enabled != GALLOC_HISTORY_ALL || ((t->skip >> action) & 1u) != 0)
        return NULL;
    uint32_t metadata = ga_trace_entry_metadata(t);
    ga_trace_entry_t *e = ga_trace_ring_push(&t->events);
    if (e == NULL)
        return NULL;
    e->addr = addr;
    e->size = size;
    e->stream = stream;
    e->extra.device_free = 0;
    e->mempool_id[0] = mempool_id != NULL ? mempool_id[0] : 0;
    e->mempool_id[1] = mempool_id != NULL ? mempool_id[1] : 0;
    if (ga_trace_tokens(t)) {
        ga_trace_source_entry(t, e, action, stack_id);
    } else {
        e->time_us = t->clock_fn != NULL ? t->clock_fn(t->clock_ctx) : ga_trace_now_us();
        e->stack_id = t->context >= GALLOC_CONTEXT_ALLOC ? stack_id : 0;
    }
    e->action = (unsigned)action;
    e->metadata = metadata;
    return e;
}

/* ga_trace_record: ga_trace_push for callers that need not see the entry:
 * the pool's call on every alloc, free and segment event. */
static inline void ga_trace_record(ga_trace_t *t, ga_trace_action_t action, uint64_t addr, uint64_t size,
                                   uint64_t stream, const int64_t *mempool_id, uint32_t stack_id)
{
    (void)ga_trace_push(t, action, addr, size, stream, mempool_id, stack_id);
}

/* ga_trace_record_oom: an "oom" entry: `size` bytes were requested (the
 * request rounded to 512 bytes, as PyTorch records it, not the segment size
 * it then tried to create) and the device had device_free bytes free
 * (PyTorch stores it in addr_). */
void ga_trace_record_oom(ga_trace_t *t, uint64_t size, uint64_t stream, uint64_t device_free, const int64_t *mempool_id,
                         uint32_t stack_id);

/* ga_trace_record_snapshot: PyTorch's "snapshot" entry (size: the active
 * bytes, active) where a snapshot is taken; in token mode with the current
 * call's token, so that it carries the recorded marker's frames and time. */
void ga_trace_record_snapshot(ga_trace_t *t, uint64_t active);

/* ga_trace_annotate: record a user annotation (PyTorch's record_annotation:
 * stage "START"/"END" and a name) at the current time; a no-op unless
 * recording. Returns GALLOC_OK, or GALLOC_E_NOMEM (nothing recorded). */
galloc_status_t ga_trace_annotate(ga_trace_t *t, const char *stage, const char *name);

#ifdef __cplusplus
}
#endif
#endif /* GA_TRACE_TRACE_H */
