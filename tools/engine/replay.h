/*
 * replay.h: replay one unit of a loaded job (tools/job) through galloc
 * configurations, on the simulated device by default. The one engine: galloc
 * replay's columns, galloc fit's rows and bisections, --verify and the Python
 * API all replay through ga_replay_column, so one configuration of one trace
 * gives one set of figures wherever it is asked for.
 *
 * Each configuration replays the unit's events, held in memory, on its own
 * allocator and pointer map; costs per event are O(1): one galloc call and
 * one hash-map operation. What each event does is described in
 * docs/trace-format.md ("Replay semantics"); in short: alloc -> galloc_malloc,
 * free -> galloc_free (after galloc_record_stream when freed on another
 * stream), a deferred free -> record_stream on a side stream then free,
 * expected OOM -> an allocation attempt that is released at once if it
 * succeeds.
 *
 * A unit whose trace shows a memory-fraction cap (ga_job_cap_t) is replayed
 * under that cap from its first event in every configuration. The cap is
 * known only as a range [low, high); a configuration is replayed at both
 * ends, and where they differ the range is split into parts of one outcome
 * each (ga_replay_part_t), found by bisection: the column says which part
 * gives which outcome rather than picking one end.
 */
#ifndef GA_TOOLS_ENGINE_REPLAY_H
#define GA_TOOLS_ENGINE_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc.h>
#include "tools/engine/owners.h"
#include "tools/idmap.h"
#include "tools/job/job.h"
#include "tools/plot/series.h"
#include "tools/readers/trace_reader.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GA_REPLAY_CHUNK 4096   /* events read before each configuration replays them */
#define GA_REPLAY_MAX_OOMS 100 /* OOMs kept in detail per configuration (all are counted) */
#define GA_REPLAY_DEFAULT_MEMORY GA_JOB_DEFAULT_MEMORY
#define GA_REPLAY_MAX_PARTS 8 /* outcomes a column tells apart over a cap range */
/* The stream deferred frees are recorded on: a handle no trace uses. */
#define GA_REPLAY_SIDE_STREAM ((galloc_stream_t)UINTPTR_MAX - 1)

/* Why an allocation ran out of memory (ga_replay_classify_oom). */
typedef enum ga_oom_class {
    GA_OOM_GENUINE = 0,  /* live blocks + the request exceed what the allocator may use (the
                             device, or its memory-fraction share): no allocator setting helps */
    GA_OOM_FRAGMENTATION /* the request fits in cached free bytes + the free memory the allocator
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
    /* at_start: the state a mid-run trace starts in does not fit: its
     * segments hold more than limit, and seeding it (ga_seed_apply) ran out
     * of device memory before the first event (the replay ends there). size
     * is the request the seeding failed on; live and cached_free are the
     * whole state's (its live blocks, and its segments' bytes beyond them).
     * Always genuine: every configuration starts from that state, so no
     * setting helps within the replay. (A seeding that runs out of memory
     * on a state that fits is a limit of the seeding: an error, not this.) */
    bool at_start;
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
    uint64_t event;                 /* 0-based index of the event in the replay (0 for facts.at_start: before
                                       the first event, when nothing was replayed) */
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

/* Points a sampler's arrays hold: the grid's, and the final point. */
#define GA_SAMPLER_CAP (GA_SERIES_MAX_POINTS + 1)

/* The bounded time series of one configuration (see series.h). With owners
 * and sampling both on (galloc replay --plot), each point also records the
 * live bytes of every site of the unit (the owners tracker's per-class cells
 * summed by site): O(sites x GA_SAMPLER_CAP) doubles, 16 KB per site however
 * long the trace (176 KB for a snapshot's 11 sites); which sites a plot
 * shows is decided at the end (ga_sampler_bands), when the moments are known. */
typedef struct ga_sampler {
    size_t n;                      /* points stored */
    uint64_t stride;               /* events between grid points */
    uint64_t next;                 /* next event index to sample */
    uint64_t last;                 /* event index of the last point (valid when n > 0) */
    double *x, *req, *alloc, *res; /* GA_SAMPLER_CAP entries each */
    size_t n_sites;                /* sites sampled (the unit's owners index's n_sites; 0: none) */
    double *site;                  /* n_sites x GA_SAMPLER_CAP, site-major: site s's live bytes at
                                      point p are site[s * GA_SAMPLER_CAP + p] */
    double *pending;               /* n_sites: the next point's per-site bytes, filled before
                                      ga_sampler_add takes the point (zeros unless filled) */
} ga_sampler_t;

/* How a column's history is recorded and its snapshot written. The engine
 * decides when (from the first event or --snapshot-range's FIRST; at the first
 * OOM, after LAST or at the end); the caller supplies how (outputs.h has
 * galloc's writer), so the engine calls no output code itself. */
typedef struct ga_replay_snapshot_ops {
    /* record: start recording a's history, keeping at most max_entries trace
     * entries (0 = all). 0, or -1 with err set (the column then writes none). */
    int (*record)(galloc_allocator_t *a, size_t max_entries, char *err, size_t errlen);
    /* record_state: record the stacks of what is allocated, no trace
     * (PyTorch's enabled="state"), while a snapshot's start state is seeded,
     * so that its blocks and segments carry their recorded frames; record
     * then starts the trace. NULL = the seeded state carries none. 0, or -1
     * with err set (the seeded state then carries no frames either). */
    int (*record_state)(galloc_allocator_t *a, char *err, size_t errlen);
    /* write: a's state and recorded trace to path. 0, or -1 with err set. */
    int (*write)(galloc_allocator_t *a, const char *path, char *err, size_t errlen);
    /* annotate: a trace annotation ("step 8847") into the recorded history;
     * NULL = annotations are not kept. */
    void (*annotate)(galloc_allocator_t *a, const char *text);
    /* mark: a "snapshot" entry into the recorded history where the traced
     * run took a snapshot (GA_EV_SNAPSHOT); NULL = such markers are not kept. */
    void (*mark)(galloc_allocator_t *a);
} ga_replay_snapshot_ops_t;

/* The tags a replay has begun, "a,b" (a trace makes its tags only by
 * tag_begin, so these are all it has): what "offload *" names. Zeroed
 * before the replay. */
typedef struct ga_replay_tags {
    char names[1024];
    bool overflow; /* more names than fit: "offload *" then fails (GALLOC_E_NOMEM) */
} ga_replay_tags_t;

/* One configuration to replay. */
typedef struct ga_replay_spec {
    const char *conf; /* PYTORCH_CUDA_ALLOC_CONF syntax (and galloc's keys); NULL or "" = PyTorch's defaults */
    /* recorded: conf is the settings the unit's trace recorded, and the
     * column is the run as recorded: labelled "recorded", and on sim each
     * segment goes where the trace put it (sim_placement:recorded,
     * ga_event_t.place) instead of where the CUDA driver's policy would
     * (descending), so galloc's choices among equal blocks follow the traced
     * run's. A sim_placement in conf wins either way. */
    bool recorded;
} ga_replay_spec_t;

/* One outcome of a column over part of a cap range. */
typedef struct ga_replay_part {
    uint64_t from, to;        /* caps in [from, to) bytes give this outcome (to == from + 1: one cap) */
    uint64_t ooms;            /* allocations that failed */
    uint64_t first_oom_event; /* UINT64_MAX when none */
    bool first_oom_expected;  /* that OOM is one the traced run had too */
    int64_t peak_reserved;    /* reserved_bytes.all.peak at the part's lower end (the widest part: at the
                                 column's cap, the column's own figure) */
} ga_replay_part_t;

/* The reserved peak's moment (opts.watch_peak): galloc fit's figures. */
typedef struct ga_replay_at_peak {
    int64_t allocated;    /* allocated bytes when reserved reached its peak (a sleeping tag's blocks
                                 included: its tensors still exist) */
    int64_t asleep;       /* bytes asleep then (reserved address space without memory) */
    int64_t largest_free; /* largest cached free block then */
    double external_frag; /* 1 - largest free block / cached free bytes then */
} ga_replay_at_peak_t;

/* One configuration (a column of the comparison). */
typedef struct ga_replay_column {
    char *label;                         /* "recorded" for the recorded settings (spec.recorded), "defaults"
                                            for PyTorch's, else what the user wrote; with opts.env and a
                                            variable set, the variables ("PYTORCH_CUDA_ALLOC_CONF=...") after it */
    char *conf;                          /* the string given to galloc_allocator_create */
    const char *user_conf;               /* spec.conf as given ("" for the defaults) */
    bool recorded;                       /* spec.recorded */
    galloc_allocator_t *a;               /* NULL once destroyed or if creation failed */
    ga_idmap_t map;                      /* trace id -> block */
    galloc_status_t create_status;       /* GALLOC_OK unless creation failed */
    char create_error[GALLOC_ERROR_MAX]; /* the creation failure */
    galloc_stats_t stats;                /* memory_stats at the end of the replay */
    uint64_t events;                     /* events replayed */
    double seconds;                      /* time spent in this configuration's replay */
    uint64_t ooms_total;                 /* allocations that failed with out-of-memory */
    uint64_t expected_ooms;              /* expected OOM points met */
    uint64_t expected_avoided;           /* ... of which this configuration could allocate */
    ga_replay_oom_t *ooms;               /* the first GA_REPLAY_MAX_OOMS failures */
    size_t n_ooms;
    uint64_t unmatched;                       /* frees / record_streams of ids not live in the trace */
    uint64_t duplicates;                      /* allocs of an id already live (the stale block is freed) */
    uint64_t errors;                          /* other failed calls (see first_error) */
    char first_error[GALLOC_ERROR_MAX];       /* the first of those, with its event */
    uint64_t tag_anomalies;                   /* tag events galloc refused with GALLOC_E_INVAL: an unknown
                                            tag, a tag_end without tag_begin (see first_tag_anomaly) */
    char first_tag_anomaly[GALLOC_ERROR_MAX]; /* the first of those, with its event */
    bool no_sleep;                            /* opts.no_sleep: sleep and wake events are skipped */
    ga_replay_tags_t tags;                    /* the tags begun so far */
    bool has_sleep_stats;                     /* sleep holds galloc_sleep_stats at the end */
    galloc_sleep_stats_t sleep;               /* ... bytes slept, offloaded, sleeps and wakes */
    ga_sampler_t sampler;                     /* memory over time, if sampling was asked for */
    double fraction;                          /* the memory fraction in force (1.0: none), for classifying */
    /* The cap (the unit's ga_job_cap_t, or opts.cap): */
    uint64_t cap;                                 /* the cap the figures were replayed under, bytes; 0: none */
    ga_replay_part_t parts[GA_REPLAY_MAX_PARTS];  /* the outcomes over the unit's cap range, by cap */
    size_t n_parts;                               /* 0 without a range */
    size_t main_part;                             /* the widest part: the cap of the figures lies in it */
    ga_replay_at_peak_t at_peak;                  /* opts.watch_peak */
    const char *snapshot_path;                    /* where to write the snapshot, NULL for none */
    const ga_replay_snapshot_ops_t *snapshot_ops; /* how (ga_replay_opts_t.snapshot_ops) */
    uint64_t snapshot_first;                      /* recording starts before this event index */
    uint64_t snapshot_last;                       /* ... and the snapshot is written after this one */
    size_t snapshot_max_entries;                  /* trace ring size, 0 = unbounded */
    bool snapshot_at_end;                         /* write at the end (or snapshot_last), never at an OOM */
    bool snapshot_no_frames;                      /* the snapshot's entries carry no frames (opts) */
    bool snapshot_recording;                      /* the history is being recorded */
    bool seeded;                                  /* the unit's seed was applied: prologue events are skipped */
    bool place;                                   /* tell sim each alloc's recorded segment address */
    const ga_job_unit_t *unit;                    /* the unit replayed */
    const ga_event_t *cur;                        /* the event being replayed (NULL between events) ... */
    uint64_t cur_index;                           /* ... and its index: the token of its calls in the history */
    galloc_frame_t *hist_frames;                  /* history.c's frames of one entry (valid until its next call) */
    size_t hist_frames_cap;
    char *hist_text; /* ... and their strings */
    size_t hist_text_cap;
    size_t seed_taking;       /* 1 + the seed piece being allocated while the seeding runs, else 0 (history.c) */
    ga_idmap_t hist_final;    /* history.c: the recorded final state's active blocks' frames, by address ... */
    bool hist_final_ready;    /* ... once built */
    size_t hist_hint;         /* history.c: the recorded entry its entry() matched last ... */
    uint64_t hist_hint_event; /* ... for this event's index + 1 (0: none) */
    struct ga_owners *owners; /* who held the memory at its peaks and OOMs (opts.owners; owners.h),
                                              NULL when not asked for */
    bool snapshot_done;       /* written (at the first OOM or at the end) */
    char snapshot_error[GALLOC_ERROR_MAX]; /* why writing it failed, "" if it did not */
} ga_replay_column_t;

typedef struct ga_replay_opts {
    const char *backend;    /* device backend, NULL = "sim" */
    uint64_t device_memory; /* sim capacity; 0 = the unit's (ga_job_unit_t.memory) */
    bool sample;            /* collect the time series (--plot) */
    bool check;             /* galloc_check each allocator at the end (tests); a violation
                                      counts in errors / first_error */
    bool watch_peak;        /* fill at_peak (galloc fit) */
    bool owners;            /* attribute live memory to its owners at the peaks and OOMs (column.owners,
                               owners.h): costs a galloc_usable_size and a hash operation per allocation */
    bool stop_at_oom;       /* stop at the first OOM (a bisection needs only fits or not) */
    /* cap: replay under this cap (bytes) instead of the unit's range: one
     * replay, no parts (cap inference, a bisection over the cap). 0: the
     * unit's range when it has one, else none. */
    uint64_t cap;
    bool no_cap; /* ignore the unit's cap range (its inference) */
    /* stop_after_events: replay only the first this many events (0 = all).
     * A count, not the last index: cap inference replays "everything before
     * the first capped OOM", which is the first event alone when that OOM is
     * the second (an index of 0 would have read as "all"). */
    uint64_t stop_after_events;
    const char *const *snapshot_paths;            /* per configuration, or NULL: --snapshot */
    const ga_replay_snapshot_ops_t *snapshot_ops; /* how snapshots are recorded and written; needed
                                                     with snapshot_paths (without: a snapshot_error) */
    /* --snapshot-range FIRST:LAST (when snapshot_range): record from event
     * FIRST, write after event LAST (or at the end, or at the first OOM in
     * the range). Without it the whole replay is recorded. */
    bool snapshot_range;
    uint64_t snapshot_first, snapshot_last;
    size_t snapshot_max_entries; /* --snapshot-max-entries: keep only the last N trace entries (0 = all) */
    bool snapshot_at_end;        /* write the final state, not the first OOM's (--verify) */
    /* snapshot_no_frames: the snapshot's entries carry no stack frames (their
     * times and everything else as usual): --verify compares actions, sizes
     * and segments only, and a snapshot with every recorded frame written out
     * is 27 times the size of PyTorch's, which memoizes them (its reader then
     * made verify 436 MB resident for a 3.5 MB snapshot). */
    bool snapshot_no_frames;
    bool no_seed; /* do not apply the unit's rebuilt start state (its prologue replays) */
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
    /* progress: called now and then with the fraction of the events replayed
     * and their number; may be NULL. */
    void (*progress)(void *ctx, double fraction, uint64_t events);
    void *progress_ctx;
    /* after_event: called after every event replayed (index i of the unit)
     * with the allocator, between calls, so a fuzzer or test can check its
     * invariants event by event (galloc_check); may be NULL. It must leave
     * the allocator's state as it found it. */
    void (*after_event)(void *ctx, galloc_allocator_t *a, uint64_t i);
    void *after_event_ctx;
} ga_replay_opts_t;

/*
 * ga_replay_env_text: the allocator variables galloc_allocator_create would
 * apply, as "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" (several
 * joined by " "), into buf. Returns its length, 0 when none is set.
 */
size_t ga_replay_env_text(char *buf, size_t len);

/* The outcome of replaying one unit. */
typedef struct ga_replay {
    const ga_job_unit_t *unit; /* what was replayed */
    ga_replay_column_t *cols;  /* n_cols configurations */
    size_t n_cols;
    uint64_t device_memory; /* the capacity used */
    uint64_t events;        /* the unit's events */
    bool no_sleep;          /* opts.no_sleep */
} ga_replay_t;

/*
 * ga_replay_column: replay u under spec into *c (zeroed by the caller;
 * release with ga_replay_column_release), with its snapshot to
 * snapshot_path (NULL: none). Under a cap range, the parts and the figures
 * at a cap in the widest part. Returns 0 when the replay ran (even if the
 * configuration failed to be created or ran out of memory: see the column),
 * -1 if host memory ran out (c->first_error says so).
 */
int ga_replay_column(const ga_job_unit_t *u, const ga_replay_opts_t *o, const ga_replay_spec_t *spec,
                     const char *snapshot_path, ga_replay_column_t *c);
void ga_replay_column_release(ga_replay_column_t *c);

/*
 * ga_replay_run: ga_replay_column for each of n specs (n 0: the recorded
 * settings when the unit's file has them, else PyTorch's defaults), the
 * columns of one comparison. Fills *out (release with ga_replay_release).
 * Returns 0, or -1 if host memory ran out.
 */
int ga_replay_run(const ga_job_unit_t *u, const ga_replay_opts_t *o, const ga_replay_spec_t *specs, size_t n,
                  ga_replay_t *out);

/* ga_replay_release: free everything ga_replay_run made. */
void ga_replay_release(ga_replay_t *rp);

/* ga_replay_default_spec: the spec of a unit's own run: its recorded
 * settings (recorded true) when its file has them, else PyTorch's defaults. */
ga_replay_spec_t ga_replay_default_spec(const ga_job_unit_t *u);

/* ga_replay_infer_cap: u->cap's range, from replays of u's own run under
 * caps (cap.c says how). Sets inferred, or why it could not be. A unit
 * without capped OOMs is left as it is. */
void ga_replay_infer_cap(ga_job_unit_t *u, const char *backend, bool env);

/* ga_replay_infer_caps: ga_replay_infer_cap for every unit of job. */
void ga_replay_infer_caps(ga_job_t *job, const char *backend, bool env);

/* ga_replay_fits: the column's configuration fits whatever the cap in its
 * range: no OOM in any part (no OOM at all without a range). */
bool ga_replay_fits(const ga_replay_column_t *c);

/* ga_replay_depends: some part of the range fits and another does not. */
bool ga_replay_depends(const ga_replay_column_t *c);

/* ga_replay_series: the sampled series of column i (valid while rp is). */
void ga_replay_series(const ga_replay_t *rp, size_t i, ga_series_t *out);

/* ga_sampler_series: s as a plot series named label (valid while s is). */
void ga_sampler_series(const ga_sampler_t *s, const char *label, ga_series_t *out);

/* The sampler (sampler.c). init: 0 or -1 (host memory). add: a point at event
 * index x (with pending's per-site bytes when sites are sampled).
 * init_sites: sample n_sites sites too (after init; 0: none), 0 or -1. */
int ga_sampler_init(ga_sampler_t *s);
int ga_sampler_init_sites(ga_sampler_t *s, size_t n_sites);
void ga_sampler_add(ga_sampler_t *s, uint64_t x, double req, double alloc, double res);
/* ga_sampler_add_stats: a point at event index x of a's requested, allocated
 * and reserved bytes (all pools) as galloc_memory_stats reports them now. */
void ga_sampler_add_stats(ga_sampler_t *s, uint64_t x, galloc_allocator_t *a);
void ga_sampler_free(ga_sampler_t *s);

#define GA_SAMPLER_TOP_SITES 8 /* sites a stacked plot names; the rest are "other sites" */

/* A column's sampled sites as plot bands (ga_sampler_bands). */
typedef struct ga_site_bands {
    size_t n;                   /* bands: the top sites, then "other sites" when another site held bytes */
    ga_series_band_t *bands;    /* n, bottom first; labels are the index's site keys, values point into
                                   the sampler (valid while it and the owners are) or into other */
    double *other;              /* "other sites"' values at each point (the sampler's n), NULL when none */
    ga_owners_moment_kind_t by; /* the moment the top sites were chosen at */
} ga_site_bands_t;

/*
 * ga_sampler_bands: the top sites of s (sampled with owners w): up to `top`
 * sites, the largest holders at w's first OOM (else its reserved peak) for
 * up to half of them, then those with the most bytes at any sampled point;
 * bottom first by their bytes at that moment, then by their most bytes; then
 * one "other sites" band summing the rest at each point (left out when it is
 * 0 everywhere). Nothing (n 0) without sampled
 * sites or a valid moment. 0, or -1 when host memory ran out. Free with
 * ga_site_bands_free.
 */
int ga_sampler_bands(const ga_sampler_t *s, const struct ga_owners *w, size_t top, ga_site_bands_t *out);
void ga_site_bands_free(ga_site_bands_t *b);

/* ga_seed_apply's return when the device cannot hold the state. */
#define GA_SEED_OOM 1

/*
 * ga_seed_apply: make the fresh allocator a hold s (the state at a mid-run
 * trace's first entry, seed.h), and map the trace id of every live block to
 * its galloc block in map. Returns 0; GA_SEED_OOM with err set when an
 * allocation ran out of device memory (the device cannot hold the state), and
 * then, with oom not NULL, *oom: the request that failed (size), PyTorch's
 * message whole (message) and the figures classified right after the failure
 * (facts; the caller makes them the state's, facts.at_start); or -1 with err
 * set (another call failed, host memory, a layout this tiling cannot make).
 * On failure a holds the pieces seeded so far (each live one mapped in map)
 * and nothing else: the held-back placeholders and gaps are freed.
 */
int ga_seed_apply(galloc_allocator_t *a, ga_idmap_t *map, const struct ga_seed *s, char *err, size_t errlen,
                  ga_replay_oom_t *oom);

/* ga_seed_apply_named: ga_seed_apply that says, in *taking, which piece of
 * s each allocation is made for (1 + its index in s->pc; 0 between
 * allocations and after), so that a trace source can give the seeded blocks
 * and segments their recorded frames (history.c). Private pools are made
 * with their recorded ids either way (galloc_mempool_create_id). */
int ga_seed_apply_named(galloc_allocator_t *a, ga_idmap_t *map, const struct ga_seed *s, size_t *taking, char *err,
                        size_t errlen, ga_replay_oom_t *oom);

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
 * ga_replay_tag_call: replay a tag event (docs/trace-format.md): GA_EV_TAG_BEGIN
 * and GA_EV_TAG_END of tags (one tag; a begun tag is noted in known),
 * GA_EV_SLEEP of tags offloading offload (NULL: none), GA_EV_WAKE of tags.
 * Lists are NUL-terminated, "*" meaning every tag (for offload: every tag in
 * known). Returns the call's status (GALLOC_E_INVAL: an unknown tag or a
 * scope not begun, a trace anomaly; GALLOC_E_OOM from a wake: the device has
 * not the memory).
 */
galloc_status_t ga_replay_tag_call(galloc_allocator_t *a, ga_event_kind_t kind, const char *tags, const char *offload,
                                   ga_replay_tags_t *known);

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
