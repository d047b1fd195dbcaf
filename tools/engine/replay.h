/*
 * replay.h: replay one trace (one unit of a trace file) through several
 * galloc configurations side by side, on the simulated device by default.
 *
 * The trace is read once: events are read in chunks of GA_REPLAY_CHUNK, and
 * each chunk is replayed through every configuration in turn (each has its own
 * allocator and pointer map), so memory stays bounded for streamed formats
 * and each configuration's replay time excludes parsing. Costs per event are
 * O(1): one galloc call and one hash-map operation.
 *
 * What each event does is described in docs/trace-format.md ("Replay
 * semantics"); in short: alloc -> galloc_malloc, free -> galloc_free (after
 * galloc_record_stream when freed on another stream), a deferred free ->
 * record_stream on a side stream then free, expected OOM -> an allocation
 * attempt that is released at once if it succeeds.
 */
#ifndef GA_TOOLS_ENGINE_REPLAY_H
#define GA_TOOLS_ENGINE_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc.h>
#include "tools/idmap.h"
#include "tools/plot/series.h"
#include "tools/readers/trace_reader.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GA_REPLAY_CHUNK 4096            /* events read before each configuration replays them */
#define GA_REPLAY_MAX_OOMS 100          /* OOMs kept in detail per configuration (all are counted) */
#define GA_REPLAY_DEFAULT_MEMORY ((uint64_t)80 << 30)
/* The stream deferred frees are recorded on: a handle no trace uses. */
#define GA_REPLAY_SIDE_STREAM ((galloc_stream_t)UINTPTR_MAX - 1)

/* Why an allocation ran out of memory (ga_replay_classify_oom). */
typedef enum ga_oom_class {
    GA_OOM_GENUINE = 0,   /* live blocks + the request exceed what the allocator may use (the
                             device, or its memory-fraction share): no allocator setting helps */
    GA_OOM_FRAGMENTATION  /* the request fits in cached free bytes + the free memory the allocator
                             may still take, but no single free block or mapping can hold it:
                             settings can help */
} ga_oom_class_t;

/* The figures an OOM is classified by, taken right after the failure (after
 * the allocator's own free-cached-blocks-and-retry path, which moves bytes
 * from cached_free to device_free without changing their sum). */
typedef struct ga_oom_facts {
    ga_oom_class_t cls;         /* see above */
    uint64_t size;              /* bytes requested */
    int64_t live;               /* active bytes: live blocks and blocks waiting on streams */
    int64_t cached_free;        /* reserved but unallocated: free bytes in cached segments */
    int64_t largest_free_block; /* the biggest single cached free block, any pool */
    uint64_t device_free;       /* the device's free memory outside the allocator */
    uint64_t device_total;      /* the device's size */
    double fraction;            /* the per-process memory fraction in force (1.0: no cap) */
    uint64_t limit;             /* bytes the allocator may reserve: fraction x device_total
                                   (truncated as PyTorch does), device_total without a cap */
    uint64_t usable_free;       /* of device_free, what the cap still lets it take:
                                   min(device_free, limit - reserved); device_free without a cap */
    bool has_expandable;        /* the configuration has expandable_segments:True ... */
    bool has_max_split;         /* ... and a max_split_size_mb: advice never repeats what it has */
} ga_oom_facts_t;

/*
 * ga_replay_classify_oom: classify the OOM allocator a just returned for a
 * request of size bytes, under the memory fraction in force (1.0: none; the
 * caller tracks it, since set_fraction events change it during a replay):
 * fragmentation when size <= cached_free + usable_free (enough bytes exist
 * within the cap, only not in one piece), genuine otherwise. With a cap, the
 * device's free memory beyond it cannot be used (PyTorch refuses a segment
 * past allowed_memory_maximum before asking the device), so it does not count.
 * O(blocks): for OOMs only.
 */
void ga_replay_classify_oom(galloc_allocator_t *a, uint64_t size, double fraction, ga_oom_facts_t *out);

/* ga_replay_start_fraction: the fraction a's configuration starts with
 * (per_process_memory_fraction, 1.0 unless set). */
double ga_replay_start_fraction(galloc_allocator_t *a);

/* ga_oom_class_name: "fragmentation" or "genuine". */
const char *ga_oom_class_name(ga_oom_class_t c);

/* One out-of-memory failure. */
typedef struct ga_replay_oom {
    uint64_t event;                 /* 0-based index of the event in the replay */
    uint64_t where;                 /* its line (CSV, text) or entry index (snapshot); 0 in the prologue */
    uint64_t size;                  /* bytes requested */
    bool expected;                  /* the traced run failed here too (RMM "allocate failure", snapshot "oom") */
    bool prologue;                  /* a block recreated from before the trace's first entry */
    int64_t allocated;              /* allocated_bytes.all.current right after the failure */
    int64_t reserved;               /* reserved_bytes.all.current right after the failure */
    ga_oom_facts_t facts;           /* its classification, with the figures */
    char annotation[80];            /* the last annotate text before it, "" if none */
    char message[GALLOC_ERROR_MAX]; /* galloc_last_error: PyTorch's "CUDA out of memory. ..." */
} ga_replay_oom_t;

/* The bounded time series of one configuration (see series.h). */
typedef struct ga_sampler {
    size_t n;                 /* points stored */
    uint64_t stride;          /* events between grid points */
    uint64_t next;            /* next event index to sample */
    uint64_t last;            /* event index of the last point (valid when n > 0) */
    double *x, *req, *alloc, *res; /* GA_SERIES_MAX_POINTS + 1 entries each */
} ga_sampler_t;

/* How a column's history is recorded and its snapshot written. The engine
 * decides when (from the first event or --snapshot-range's FIRST; at the first
 * OOM, after LAST or at the end); the caller supplies how (outputs.h has
 * galloc's writer), so the engine calls no output code itself. */
typedef struct ga_replay_snapshot_ops {
    /* record: start recording a's history, keeping at most max_entries trace
     * entries (0 = all). 0, or -1 with err set (the column then writes none). */
    int (*record)(galloc_allocator_t *a, size_t max_entries, char *err, size_t errlen);
    /* write: a's state and recorded trace to path. 0, or -1 with err set. */
    int (*write)(galloc_allocator_t *a, const char *path, char *err, size_t errlen);
    /* annotate: a trace annotation ("step 8847") into the recorded history;
     * NULL = annotations are not kept. */
    void (*annotate)(galloc_allocator_t *a, const char *text);
} ga_replay_snapshot_ops_t;

/* The tags a replay has begun, "a,b" (a trace makes its tags only by
 * tag_begin, so these are all it has): what "offload *" names. Zeroed
 * before the replay. */
typedef struct ga_replay_tags {
    char names[1024];
    bool overflow; /* more names than fit: "offload *" then fails (GALLOC_E_NOMEM) */
} ga_replay_tags_t;

/* One configuration (a column of the comparison). */
typedef struct ga_replay_column {
    char *label;                         /* what the user wrote, "defaults" for none (PyTorch's
                                            defaults); with opts.env and a variable set, the
                                            variables ("PYTORCH_CUDA_ALLOC_CONF=...") after it */
    char *conf;                          /* the string given to galloc_allocator_create */
    galloc_allocator_t *a;               /* NULL once destroyed or if creation failed */
    ga_idmap_t map;                     /* trace id -> block */
    galloc_status_t create_status;       /* GALLOC_OK unless creation failed */
    char create_error[GALLOC_ERROR_MAX]; /* the creation failure */
    galloc_stats_t stats;                /* memory_stats at the end of the replay */
    uint64_t events;                     /* events replayed */
    double seconds;                      /* time spent in this configuration's replay */
    uint64_t ooms_total;                 /* allocations that failed with out-of-memory */
    uint64_t expected_ooms;              /* expected OOM points met */
    uint64_t expected_avoided;           /* ... of which this configuration could allocate */
    uint64_t capped_ooms;                /* expected OOMs the device had room for (a snapshot's oom
                                            entry with device_free >= its size): the traced run was
                                            capped by a memory fraction, replayed under a cap */
    uint64_t cap_low, cap_high;          /* the last such cap lay in [cap_low, cap_high): at or above
                                            the peak reserved before it, below what the retry after
                                            the flush needed */
    ga_replay_oom_t *ooms;               /* the first GA_REPLAY_MAX_OOMS failures */
    size_t n_ooms;
    uint64_t unmatched;                  /* frees / record_streams of ids not live in the trace */
    uint64_t duplicates;                 /* allocs of an id already live (the stale block is freed) */
    uint64_t errors;                     /* other failed calls (see first_error) */
    char first_error[GALLOC_ERROR_MAX];  /* the first of those, with its event */
    uint64_t tag_anomalies;              /* tag events galloc refused with GALLOC_E_INVAL: an unknown
                                            tag, a tag_end without tag_begin (see first_tag_anomaly) */
    char first_tag_anomaly[GALLOC_ERROR_MAX]; /* the first of those, with its event */
    bool no_sleep;                       /* opts.no_sleep: sleep and wake events are skipped */
    ga_replay_tags_t tags;               /* the tags begun so far */
    bool has_sleep_stats;                /* sleep holds galloc_sleep_stats at the end */
    galloc_sleep_stats_t sleep;          /* ... bytes slept, offloaded, sleeps and wakes */
    ga_sampler_t sampler;                /* memory over time, if sampling was asked for */
    double fraction;                     /* the memory fraction in force (1.0: none), for classifying */
    const char *snapshot_path;           /* where to write the snapshot, NULL for none */
    const ga_replay_snapshot_ops_t *snapshot_ops; /* how (ga_replay_opts_t.snapshot_ops) */
    uint64_t snapshot_first;             /* recording starts before this event index */
    uint64_t snapshot_last;              /* ... and the snapshot is written after this one */
    size_t snapshot_max_entries;         /* trace ring size, 0 = unbounded */
    bool snapshot_at_end;                /* write at the end (or snapshot_last), never at an OOM */
    bool snapshot_recording;             /* the history is being recorded */
    bool seeded;                         /* opts.seed was applied: prologue events are skipped */
    bool place;                          /* tell sim each alloc's recorded segment address */
    const ga_event_t *cur;               /* the event being replayed: its frames go into the history */
    char frame_text[4096];               /* the frames callback's strings (valid during the call) */
    bool snapshot_done;                  /* written (at the first OOM or at the end) */
    char snapshot_error[GALLOC_ERROR_MAX]; /* why writing it failed, "" if it did not */
} ga_replay_column_t;

struct ga_seed; /* seed.h */

typedef struct ga_replay_opts {
    const char *backend;           /* device backend, NULL = "sim" */
    int device;                    /* the device index the trace recorded (messages say "GPU 1",
                                      snapshots keep it); 0 for traces without one */
    /* place_recorded: the configurations replay under the trace's recorded
     * settings, so sim puts each segment at the address the trace recorded
     * (sim_placement:recorded, ga_event_t.place); otherwise sim places
     * segments as the CUDA driver does (sim_placement:descending). A
     * sim_placement in a --conf wins either way. */
    bool place_recorded;
    uint64_t device_memory;        /* sim capacity; 0 = the trace's, else GA_REPLAY_DEFAULT_MEMORY */
    bool sample;                   /* collect the time series (--plot) */
    bool check;                    /* galloc_check each allocator at the end (tests); a violation
                                      counts in errors / first_error */
    const char *const *snapshot_paths; /* per configuration, or NULL: --snapshot */
    const ga_replay_snapshot_ops_t *snapshot_ops; /* how snapshots are recorded and written; needed
                                                     with snapshot_paths (without: a snapshot_error) */
    /* --snapshot-range FIRST:LAST (when snapshot_range): record from event
     * FIRST, write after event LAST (or at the end, or at the first OOM in
     * the range). Without it the whole replay is recorded. */
    bool snapshot_range;
    uint64_t snapshot_first, snapshot_last;
    size_t snapshot_max_entries;   /* --snapshot-max-entries: keep only the last N trace entries (0 = all) */
    bool snapshot_at_end;          /* write the final state, not the first OOM's (--verify) */
    /* seed: the allocator state at the trace's first entry (seed.h), made in
     * every configuration before the first event; the reader's prologue
     * events are then skipped. NULL: start empty and replay the prologue. */
    const struct ga_seed *seed;
    /* env: layer the environment's allocator variables (PYTORCH_ALLOC_CONF,
     * else PYTORCH_CUDA_ALLOC_CONF, then GALLOC_CONF) under every
     * configuration, as galloc_allocator_create does, and say so in the
     * labels (--env). false: the configurations alone, whatever the shell
     * exports (GALLOC_CREATE_NO_ENV), so the answer depends only on the
     * command line and the trace. */
    bool env;
    /* no_sleep: replay the trace's sleep and wake events as nothing (tags
     * are still begun and ended), so the peaks can be compared with and
     * without sleeping (--no-sleep). */
    bool no_sleep;
    /* progress: called between chunks with the fraction read (-1 if unknown)
     * and the events so far; may be NULL. */
    void (*progress)(void *ctx, double fraction, uint64_t events);
    void *progress_ctx;
} ga_replay_opts_t;

/*
 * ga_replay_env_text: the allocator variables galloc_allocator_create would
 * apply, as "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" (several
 * joined by " "), into buf. Returns its length, 0 when none is set.
 */
size_t ga_replay_env_text(char *buf, size_t len);

/* The outcome of replaying one unit. */
typedef struct ga_replay {
    ga_replay_column_t *cols;  /* n_cols configurations */
    size_t n_cols;
    uint64_t device_memory;    /* the capacity used */
    uint64_t events;           /* events read */
    double read_seconds;       /* time spent reading and parsing */
    ga_reader_notes_t notes;   /* skipped entries, prologue events */
    uint64_t tag_events;       /* tag_begin / tag_end / sleep / wake events read */
    uint64_t sleep_events;     /* ... of which sleep and wake (skipped under opts.no_sleep) */
    bool no_sleep;             /* opts.no_sleep */
    bool read_failed;          /* the trace was bad: see read_error (results cover the events before) */
    char read_error[512];
} ga_replay_t;

/*
 * ga_replay_run: replay the current unit of r (after ga_reader_begin) through
 * n_confs configurations (confs[i] is a --conf string; NULL or "" means
 * PyTorch's defaults). Fills *out (release with ga_replay_release). Returns 0
 * when the replay ran (even if a configuration failed to be created or ran
 * out of memory: see the columns), -1 if host memory ran out (out->read_error
 * says so).
 */
int ga_replay_run(ga_reader_t *r, const ga_replay_opts_t *opts, const char *const *confs, size_t n_confs,
                  ga_replay_t *out);

/* ga_replay_release: free everything ga_replay_run made. */
void ga_replay_release(ga_replay_t *rp);

/* ga_replay_series: the sampled series of column i (valid while rp is). */
void ga_replay_series(const ga_replay_t *rp, size_t i, ga_series_t *out);

/* ga_sampler_series: s as a plot series named label (valid while s is). */
void ga_sampler_series(const ga_sampler_t *s, const char *label, ga_series_t *out);

/* The sampler (sampler.c). init: 0 or -1 (host memory). add: a point at event
 * index x. finish: the point of the last event if not already there. */
int ga_sampler_init(ga_sampler_t *s);
void ga_sampler_add(ga_sampler_t *s, uint64_t x, double req, double alloc, double res);
/* ga_sampler_add_stats: a point at event index x of a's requested, allocated
 * and reserved bytes (all pools) as galloc_memory_stats reports them now. */
void ga_sampler_add_stats(ga_sampler_t *s, uint64_t x, galloc_allocator_t *a);
void ga_sampler_free(ga_sampler_t *s);

/*
 * ga_seed_apply: make the fresh allocator a hold s (the state at a mid-run
 * trace's first entry, seed.h), and map the trace id of every live block to
 * its galloc block in map. Returns 0, or -1 with err set (an allocation
 * failed: the device is too small, or the configuration does not allow the
 * layout).
 */
int ga_seed_apply(galloc_allocator_t *a, ga_idmap_t *map, const struct ga_seed *s, char *err, size_t errlen);

/*
 * The replay semantics of the events (docs/trace-format.md), shared by this
 * engine and galloc fit's leaner loop so both do the same calls.
 *
 * ga_replay_free_stream: whether a free event must first record its block on
 * another stream than the one it was allocated on (alloc_stream), and which
 * (*other): a deferred free (GA_EV_FREE_PENDING) waits on the side stream, a
 * free ordered on another stream on that one. The block may be reused only
 * after that stream's work, as galloc_record_stream arranges before the free.
 */
bool ga_replay_free_stream(ga_event_kind_t kind, uint64_t stream, uint64_t alloc_stream, galloc_stream_t *other);

/*
 * ga_replay_call: replay an event that is one galloc call whatever the
 * pointer map holds: GA_EV_FREE_COMPLETED (the side stream's work is done:
 * synchronize it, so deferred frees complete), GA_EV_STREAM_SYNC (stream),
 * GA_EV_EMPTY_CACHE (size, see ga_replay_empty_cache), GA_EV_SET_FRACTION
 * (fraction). Returns the call's status, with GALLOC_E_UNSUPPORTED from a
 * stream call as GALLOC_OK: a backend without streams has nothing to wait for.
 */
galloc_status_t ga_replay_call(galloc_allocator_t *a, ga_event_kind_t kind, uint64_t stream, uint64_t size,
                               double fraction);

/*
 * ga_replay_reserve: replay a GA_EV_RESERVE: grow a's reserved memory to
 * `size` bytes (no more than the device's free memory) with cached free
 * segments on stream, for the memory a mid-run trace's allocator had
 * reserved and not allocated before the trace began. The segments are made
 * by allocating and freeing power-of-two pieces of at least 16 MiB (largest
 * first): such a request is never rounded up by roundup_power2_divisions and
 * gets a segment of exactly its size, so every configuration caches the same
 * bytes (what is left under 16 MiB is not recreated). The peaks are then
 * reset (galloc_stats_reset_peak), so the stand-in allocations are no peak
 * of the job: allocated_bytes.all.peak starts at the live bytes, reserved at
 * what was reserved. Returns GALLOC_OK (a piece the device cannot hold is
 * left out), or the status of a failed call other than out-of-memory.
 */
galloc_status_t ga_replay_reserve(galloc_allocator_t *a, uint64_t size, uint64_t stream);

/* Whether e is a traced OOM that came with room on the device (a snapshot's
 * oom entry with device_free >= its request): a memory fraction refused it. */
static inline bool ga_replay_oom_capped(const ga_event_t *e)
{
    return e->kind == GA_EV_OOM && e->device_free > 0 && e->device_free >= e->size;
}

/*
 * ga_replay_oom_cap: a snapshot's oom entry e whose device had room for the
 * request (device_free >= size) means the traced run was capped by
 * set_per_process_memory_fraction, which snapshots do not record. Sets a cap
 * on a that fails the event the same way (events.c says how it is chosen),
 * with *low / *high the range the real cap lay in and *classify_fraction the
 * fraction to classify the OOM under (the lowest). Returns false, changing
 * nothing, when no cap applies. The caller lifts the cap after the event.
 */
bool ga_replay_oom_cap(galloc_allocator_t *a, const ga_event_t *e, uint64_t *low, uint64_t *high,
                       double *classify_fraction);

/*
 * ga_replay_tag_call: replay a tag event (docs/trace-format.md): GA_EV_TAG_BEGIN
 * and GA_EV_TAG_END of tags (one tag; a begun tag is noted in known),
 * GA_EV_SLEEP of tags offloading offload (NULL: none), GA_EV_WAKE of tags.
 * Lists are NUL-terminated, "*" meaning every tag (for offload: every tag in
 * known). Returns the call's status (GALLOC_E_INVAL: an unknown tag or a
 * scope not begun, a trace anomaly; GALLOC_E_OOM from a wake: the device has
 * not the memory).
 */
galloc_status_t ga_replay_tag_call(galloc_allocator_t *a, ga_event_kind_t kind, const char *tags,
                                   const char *offload, ga_replay_tags_t *known);

/* Replays a GA_EV_EMPTY_CACHE. next_segment is 0 for an explicit empty_cache
 * (text, RMM); from a snapshot it is the size of the segment PyTorch
 * allocated right after releasing cached segments. If the device has room for
 * it, PyTorch's allocation could not have failed there, so the release was
 * torch.cuda.empty_cache() and is replayed; if not, it was the next malloc's
 * OOM path, which galloc's own malloc reproduces, and nothing is done. */
galloc_status_t ga_replay_empty_cache(galloc_allocator_t *a, uint64_t next_segment);

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_ENGINE_REPLAY_H */
