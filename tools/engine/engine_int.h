/*
 * engine_int.h: what the engine's files share (replay.c runs one replay,
 * column.c makes a column of one or more, cap.c infers a unit's cap).
 * Private to tools/engine.
 */
#ifndef GA_TOOLS_ENGINE_ENGINE_INT_H
#define GA_TOOLS_ENGINE_ENGINE_INT_H

#include "tools/engine/owners.h"
#include "tools/engine/replay.h"

/* A live block as the owners tracker keeps it (owners_track.c): the
 * payload of its entry in the column's pointer map (ga_idmap_init_extra), so
 * an allocation and a free touch no map but the one the replay touches anyway. */
typedef struct ga_owner_rec {
    uint64_t bytes; /* its size (galloc_usable_size) */
    uint64_t req;   /* the bytes requested */
    int64_t ev;     /* its allocation's event index; -1: live before the trace */
    int64_t us;     /* its allocation's time after the unit's t0; INT64_MIN: none */
    uint16_t cls;   /* its owner class */
    bool kept;      /* the trace never frees it */
    bool live;      /* the tracker counts it (false: a failed or 0-byte allocation's entry) */
} ga_owner_rec_t;

/* One logged change to the cells since the allocated peak. */
typedef struct ga_owner_logent {
    ga_owner_rec_t rec;
    int8_t sign; /* 1: the block became live; -1: it was freed */
} ga_owner_logent_t;

/* A column's owners while it replays (owners.h, owners_track.c). */
typedef struct ga_owners_track {
    ga_owners_t *out; /* the result, handed to the column by ga_owners_track_take */
    const ga_job_unit_t *u;
    galloc_allocator_t *a;
    ga_idmap_t *map;        /* the column's pointer map: trace id -> block, a ga_owner_rec_t each */
    ga_addrmap_t by_addr;   /* during a walk: block address -> class (owners_track.c) */
    ga_owner_cell_t *cells; /* per class: the live blocks now */
    uint64_t *pin_bytes;    /* per class, scratch for a segment's holders (zero between uses) */
    uint32_t *touched;      /* ... the classes a segment touched */
    int64_t total;          /* the live blocks' bytes: allocated_bytes.all.current */
    int64_t peak_total;     /* the highest total so far (-1: none yet) */
    uint64_t peak_event;    /* where it was first reached */
    int64_t peak_time;
    int64_t peak_reserved_then; /* reserved bytes then */
    bool logging;               /* the log undoes the cells to the allocated peak */
    bool peak_folded;           /* peak_allocated holds the current peak's moment */
    ga_owner_logent_t *log;
    size_t n_log, cap_log, log_max;
    int64_t reserved_now;  /* reserved bytes after the last call that may change them */
    int64_t peak_reserved; /* the highest of those (-1: none yet) */
    uint64_t cur_event;    /* the event being attributed */
    int64_t cur_time;
} ga_owners_track_t;

/* ga_owners_track_init: a tracker for a column of u replayed on a, whose
 * pointer map (made with ga_idmap_init_extra(map, sizeof(ga_owner_rec_t)))
 * carries the records. 0, or -1 (host memory). ga_owners_track_destroy
 * frees it and what it has not handed out. */
int ga_owners_track_init(ga_owners_track_t *t, const ga_job_unit_t *u, galloc_allocator_t *a, ga_idmap_t *map);
void ga_owners_track_destroy(ga_owners_track_t *t);
/* ga_owners_track_seeded: the blocks of u's seeded state, as ga_seed_apply mapped them. */
void ga_owners_track_seeded(ga_owners_track_t *t);
/* ga_owners_track_alloc: event idx (e) allocated ptr (NULL: it failed, or
 * asked for 0 bytes: nothing to track); rec is its map entry's payload,
 * which this writes either way. */
void ga_owners_track_alloc(ga_owners_track_t *t, uint64_t idx, const ga_event_t *e, void *ptr, ga_owner_rec_t *rec);
/* ga_owners_track_dealloc: the block whose record is rec is freed. */
void ga_owners_track_dealloc(ga_owners_track_t *t, const ga_owner_rec_t *rec);
/* ga_owners_track_reserved: reserved bytes after event idx; a new high is the reserved peak's moment. */
void ga_owners_track_reserved(ga_owners_track_t *t, uint64_t idx, const ga_event_t *e, int64_t reserved);
/* ga_owners_track_oom: event idx's allocation failed: its moment (the first GA_OWNERS_MAX_OOMS). */
void ga_owners_track_oom(ga_owners_track_t *t, uint64_t idx, const ga_event_t *e);
/* ga_owners_track_start_oom: seeding the state at the first entry ran out of
 * memory asking for size bytes: the OOM moment of the blocks seeded so far
 * (event GA_OWNERS_BEFORE_EVENTS, no request class). */
void ga_owners_track_start_oom(ga_owners_track_t *t, uint64_t size);
/* ga_owners_track_sites: the live bytes per site now (the cells summed by
 * their class's site) into row[0 .. the index's n_sites): a sample point's
 * (sampler.c). O(classes + sites). */
void ga_owners_track_sites(const ga_owners_track_t *t, double *row);
/* ga_owners_track_finish: the end of the replay: the allocated peak's moment. */
void ga_owners_track_finish(ga_owners_track_t *t);
/* ga_owners_track_take: the result (the caller frees it with ga_owners_release). */
ga_owners_t *ga_owners_track_take(ga_owners_track_t *t);

/* The state of one replay besides its column. */
typedef struct ga_engine_run {
    size_t min_free;         /* lowest device free memory seen: the reserved peak (watch) */
    int64_t peak_seen;       /* the reserved figure at_peak was taken at */
    bool watch;              /* opts.watch_peak */
    uint64_t first_oom;      /* event index of the first OOM, UINT64_MAX: none */
    bool first_oom_expected; /* it is one the traced run had too */
    const char *annotation;  /* the last annotate text, "" before any */
    uint64_t events;         /* events replayed */
    ga_owners_track_t *own;  /* the owners tracker (opts.owners), NULL when not asked for */
} ga_engine_run_t;

/* What one replay's caller learns besides the column. */
typedef struct ga_engine_out {
    uint64_t first_oom;
    bool first_oom_expected;
} ga_engine_out_t;

/* One replay: which configuration, on what, under which cap. */
typedef struct ga_engine_cfg {
    const ga_replay_opts_t *o;
    const ga_replay_spec_t *spec;
    uint64_t capacity;         /* the sim device's size */
    uint64_t cap;              /* a memory-fraction cap from the first event, bytes (0: none) */
    uint64_t classify_cap;     /* the cap OOMs are classified under (0: cap) */
    bool full;                 /* the column's figures: sample, progress (else a probe) */
    const char *snapshot_path; /* the snapshot to write, NULL: none */
    ga_engine_out_t *out;
} ga_engine_cfg_t;

/* ga_engine_run: replay u under g into c (zeroed). 0, or -1 when host memory
 * ran out; a configuration that cannot be made is a result (create_status). */
int ga_engine_run(const ga_job_unit_t *u, const ga_engine_cfg_t *g, ga_replay_column_t *c);

/* ga_engine_finish: final sample, snapshot, stats, and the allocator's end. */
void ga_engine_finish(ga_replay_column_t *c, const ga_engine_run_t *r, bool check);

/* ga_engine_history_source (history.c): make c's recorded history carry the
 * recorded stacks and times of the events replayed (galloc_set_trace_source).
 * ga_engine_history_free: its buffers. */
galloc_status_t ga_engine_history_source(ga_replay_column_t *c);
void ga_engine_history_free(ga_replay_column_t *c);

/* conf.c: ga_engine_conf: the string handed to galloc_allocator_create for
 * user (NULL: PyTorch's defaults) on backend, the sim's capacity and
 * placement (recorded: at the trace's addresses) first, so a sim_capacity or
 * sim_placement the user wrote wins; NULL when host memory ran out.
 * ga_engine_label: the column's name ("recorded", "defaults" or the user's
 * string, with the environment's variables when env applies them); NULL
 * when host memory ran out. ga_engine_set_cap: cap bytes of capacity as a
 * memory fraction, truncated as PyTorch does. */
char *ga_engine_conf(const char *user, const char *backend, uint64_t capacity, bool recorded);
char *ga_engine_label(const ga_replay_spec_t *spec, bool env);
galloc_status_t ga_engine_set_cap(galloc_allocator_t *a, uint64_t cap, uint64_t capacity);

/* ga_engine_now: a monotonic clock in seconds. */
double ga_engine_now(void);

/* Caps are searched in steps of this much: every segment, mapping and
 * reserved total is a multiple of 2 MiB, so what a cap admits changes only
 * at multiples of it. */
#define GA_ENGINE_CAP_STEP ((uint64_t)2 << 20)

#endif /* GA_TOOLS_ENGINE_ENGINE_INT_H */
