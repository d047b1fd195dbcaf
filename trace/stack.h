/*
 * stack.h: capture call stacks at allocator events and store each distinct one
 * once, named by a 32-bit stack id (0 = no stack).
 *
 * Capture is split in two so that it can run where it must:
 *   ga_trace_stack_capture_raw: raw return addresses (libunwind's unw_backtrace,
 *     about 8 ns per frame, ten times cheaper than glibc's backtrace) and the
 *     framework's own frames (a callback; e.g. Python frames, which need the
 *     GIL and so must be gathered before the allocator's lock is taken, as
 *     PyTorch's maybeGatherContext is). No lock, no allocation, no galloc state.
 *   ga_trace_stacks_intern: under the owner's lock, map the raw stack to its id.
 *     A stack seen before costs a hash and a compare; only a new distinct stack
 *     (or new frame text) allocates, on that cold path.
 * Symbolization (file, line, function) happens only when a snapshot is
 * written: ga_trace_stacks_symbolize (symbolize.c).
 *
 * Frame order, as in PyTorch's frames lists: innermost first. With native and
 * framework frames both present, the native frames come first (the allocator
 * side, from the call into galloc outwards) and the framework's after them;
 * galloc cannot interleave them the way PyTorch's combined traceback does.
 *
 * Locking: the store has none; the owner (the pool, under its lock) serializes
 * intern, symbolize and reads. Capture_raw touches no shared state.
 */
#ifndef GA_TRACE_STACK_H
#define GA_TRACE_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc_status.h>
#include <galloc/galloc_trace.h>
#include "trace/strtab.h"
#include "util/addrmap.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GA_TRACE_MAX_FRAMES 64 /* frames kept per stack, native and framework together */
#define GA_TRACE_MAX_SKIP 16   /* innermost native frames a caller may skip */
#define GA_TRACE_RAW_TEXT 4096 /* bytes of framework frame text kept per capture */

/* One frame a framework supplies (the public galloc_frame_t): its strings
 * need only stay valid until the capture that called the callback returns
 * (they are copied). */
typedef galloc_frame_t ga_trace_user_frame_t;

/* Fill up to max_frames frames, innermost first, and return how many were
 * filled. Called on the allocating thread, before the allocator's lock. */
typedef size_t (*ga_trace_frames_fn)(void *ctx, ga_trace_user_frame_t *frames, size_t max_frames);

/* A captured, not yet interned stack (about 6 KiB: lives on the caller's stack). */
typedef struct ga_trace_raw_stack {
    uintptr_t pcs[GA_TRACE_MAX_FRAMES]; /* native return addresses, innermost first */
    uint32_t npcs;                      /* valid pcs */
    uint32_t nuser;                     /* valid user frames */
    struct {
        uint16_t file_off, file_len; /* filename in text */
        uint16_t name_off, name_len; /* name in text */
        int64_t line;
    } user[GA_TRACE_MAX_FRAMES];
    char text[GA_TRACE_RAW_TEXT]; /* framework strings, copied */
} ga_trace_raw_stack_t;

/* One distinct frame. */
typedef struct ga_trace_frame {
    uintptr_t pc;        /* native return address; 0 for a framework frame */
    int64_t line;        /* source line; 0 if unknown (native: until symbolized) */
    uint32_t filename;   /* strtab id (native: until symbolized, 0) */
    uint32_t name;       /* strtab id (native: until symbolized, 0) */
    uint32_t symbolized; /* native frames: filename/name/line are filled */
} ga_trace_frame_t;

/* One distinct stack. */
typedef struct ga_trace_stack {
    size_t first;     /* its frame ids start at ids[first] */
    uint32_t nframes; /* how many, innermost first */
} ga_trace_stack_t;

typedef struct ga_trace_stacks {
    ga_trace_strtab_t *strings; /* text of frames; not owned */
    ga_trace_frame_t *frames;   /* by frame id; [0] unused */
    uint32_t nframes;           /* frame ids in use, including 0 */
    uint32_t frames_cap;        /* slots of frames */
    ga_addrmap_t frame_index;   /* frame ids 1.. by the hash of (pc) or (filename, name, line) */
    uint32_t *ids;              /* frame ids of every stack, concatenated */
    size_t nids;                /* ids in use */
    size_t ids_cap;             /* slots of ids */
    ga_trace_stack_t *stacks;   /* by stack id; [0] unused (the empty stack) */
    uint32_t nstacks;           /* stack ids in use, including 0 */
    uint32_t stacks_cap;        /* slots of stacks */
    ga_addrmap_t stack_index;   /* stack ids 1.. by the hash of their frame sequence */
    uint64_t failures;          /* interns that gave up for lack of memory (the event got stack 0) */
} ga_trace_stacks_t;

/* ga_trace_stack_capture_raw: capture the native stack (if native) minus its
 * `skip` innermost frames (this function itself is never included), then the
 * framework's frames from fn (if fn is non-NULL), into raw. Never fails:
 * frames that do not fit are dropped. Thread-safe; allocates nothing (the
 * first unwind of a thread may let libunwind set up its cache). */
void ga_trace_stack_capture_raw(ga_trace_raw_stack_t *raw, bool native, unsigned skip, ga_trace_frames_fn fn,
                                void *ctx);

/* ga_trace_stacks_init: empty store whose frame text goes to `strings`. */
void ga_trace_stacks_init(ga_trace_stacks_t *s, ga_trace_strtab_t *strings);

/* ga_trace_stacks_free: release the store (not the string table). */
void ga_trace_stacks_free(ga_trace_stacks_t *s);

/* ga_trace_stacks_intern: the id of raw's stack, adding it if new; 0 for an
 * empty stack or when memory for a new one ran out (counted in failures). */
uint32_t ga_trace_stacks_intern(ga_trace_stacks_t *s, const ga_trace_raw_stack_t *raw);

/* ga_trace_stacks_intern_frames: the id of the stack of n framework frames
 * (innermost first; NULL strings are ""), adding it if new, into *id (0 for
 * n 0). Unlike a capture every frame and every byte is kept (no
 * GA_TRACE_MAX_FRAMES, strings through ga_trace_strtab_intern_all): a
 * snapshot writer interns a trace source's frames with it, so that equal
 * stacks, frames and strings get one id each and are written once. Cold:
 * allocates its scratch. Returns GALLOC_OK or GALLOC_E_NOMEM (*id untouched;
 * frames and strings added so far stay, valid and shared). */
galloc_status_t ga_trace_stacks_intern_frames(ga_trace_stacks_t *s, const galloc_frame_t *frames, size_t n,
                                              uint32_t *id);

/* ga_trace_stacks_get: the frame ids of stack id (innermost first) and their
 * number in *n; NULL with *n = 0 for 0 or an unknown id. */
const uint32_t *ga_trace_stacks_get(const ga_trace_stacks_t *s, uint32_t id, uint32_t *n);

/* ga_trace_stacks_frame: frame id's record (NULL for an unknown id). */
const ga_trace_frame_t *ga_trace_stacks_frame(const ga_trace_stacks_t *s, uint32_t frame_id);

/* ga_trace_stacks_symbolize: give every native frame not yet symbolized its
 * function, file and line (elfutils libdw, from the debug info where present;
 * the symbol table or dladdr otherwise; "??" when nothing is known). Results
 * are kept, so each address is resolved once. Returns GALLOC_OK, or
 * GALLOC_E_NOMEM (frames resolved so far keep their names; the rest stay
 * unsymbolized and are written as "??"). */
galloc_status_t ga_trace_stacks_symbolize(ga_trace_stacks_t *s);

#ifdef __cplusplus
}
#endif
#endif /* GA_TRACE_STACK_H */
