/*
 * torch_int.h: private to tools/readers (in srcs). The PyTorch snapshot
 * reader's state, shared by read_torch.c (open, the walk over each device's
 * trace, events), torch_prologue.c (the blocks live before the trace's first
 * entry) and torch_stacks.c (an event's stack: its frames and the
 * record_function ranges in force).
 */
#ifndef GA_TORCH_INT_H
#define GA_TORCH_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/idmap.h"
#include "tools/readers/reader_int.h"
#include "tools/snapshot/pickle_read.h"
#include "tools/snapshot/snapfile.h"
#include "tools/snapshot/torch_snapshot.h"

typedef struct ga_torch_pro_block {
    uint64_t addr, size, stream;
    const ga_pk_value_t *frames; /* a block live at the end: its allocation's stack; NULL if unknown */
} ga_torch_pro_block_t;

/* A record_function range's start or end (external_annotations), in time order. */
typedef struct ga_torch_annot {
    int64_t time_us;
    size_t idx; /* its place in external_annotations: ties keep the file's order */
    bool start;
    const char *name;
    size_t len;
} ga_torch_annot_t;

#define GA_TORCH_RD_MAX_OPEN 16 /* ranges in force at once that an event's stack names (deeper: the outermost kept) */

/* What an event's ga_stack_t reads: the entry's frames, then the ranges in
 * force, innermost (latest started) first. */
typedef struct ga_torch_stack_data {
    const ga_pk_value_t *frames;
    size_t n_frames;
    size_t n_open;
    const ga_torch_annot_t *open[GA_TORCH_RD_MAX_OPEN];
} ga_torch_stack_data_t;

typedef struct ga_torch_rd {
    ga_snapfile_t *file;               /* the parsed file (read whole from stdin) */
    size_t len;                        /* the file's length */
    ga_torch_snapshot_t snap;          /* its schema walker */
    int devices[GA_TORCH_MAX_DEVICES]; /* device index of each unit */
    ga_torch_list_t trace;             /* the current unit's entries (n = 0 when it has none) */
    size_t next;                       /* next entry of trace */
    ga_torch_pro_block_t *pro;         /* the current unit's prologue */
    size_t n_pro, pro_next, pro_cap;
    uint64_t place;    /* the address of a segment_alloc or segment_map not yet given to its alloc */
    uint64_t released; /* bytes of the segment_free/unmap run just before an oom entry */
    const char *meta;  /* the last non-annotate entry's str user_metadata in this unit (NULL: none yet) */
    size_t meta_len;
    size_t meta_done; /* 1 + the entry whose user_metadata was last compared (0: none) */
    /* The unit has free_completed entries and no free_requested: recorded with
     * _record_memory_history(skip_actions=["free_requested"]) (PR #168183), so
     * each free_completed is the user's free as well. */
    bool completed_only;
    ga_torch_annot_t *an; /* the current unit's device's external_annotations, by time */
    size_t n_an, an_next;
    const ga_torch_annot_t
        *open[GA_TORCH_RD_MAX_OPEN]; /* the ranges started and not ended before the last event read */
    size_t n_open;
    ga_torch_stack_data_t sd; /* the last event's stack */
} ga_torch_rd_t;

/* "PATH: device_traces[D][i]: what" into err; returns -1. */
int ga_torch_rd_entry_err(ga_reader_t *r, char *err, size_t errlen, size_t i, const char *what);

/* torch_prologue.c. Step 1: frees of addresses the trace never allocated
 * before (live and seen: the trace's addresses, filled here). Step 2: blocks
 * live in `segments` at the end whose address the trace never mentions. Each
 * appends to the unit's prologue; 0, or -1 with a message. */
int ga_torch_rd_prologue_trace(ga_reader_t *r, ga_idmap_t *live, ga_idmap_t *seen, char *err, size_t errlen);
int ga_torch_rd_prologue_segments(ga_reader_t *r, const ga_idmap_t *seen, char *err, size_t errlen);

/* torch_stacks.c. The current unit's device's record_function ranges
 * (external_annotations), by time; 0, or -1 with a message. */
int ga_torch_rd_load_annotations(ga_reader_t *r, char *err, size_t errlen);
/* ev's stack: frames (NULL: none) and, when timed, the ranges in force at
 * ev->time_us (ranges are read in time order: events must come in time order). */
void ga_torch_rd_set_stack(ga_torch_rd_t *t, ga_event_t *ev, const ga_pk_value_t *frames, bool timed);

#endif /* GA_TORCH_INT_H */
