/*
 * fit.h: `galloc fit`, the search for the allocator settings under which a
 * traced job fits its device.
 *
 * The traces are read once into memory (ga_fit_load) and shared read-only by
 * every replay; each replay creates its own allocator on its own sim device,
 * so replays run in parallel threads without sharing mutable state. One
 * replay (ga_fit_replay) runs one configuration at one device size over every
 * loaded unit and stops at the first out-of-memory: a configuration fits only
 * if every unit fits. The search (ga_fit_search) replays a grid of the knobs
 * users set in PYTORCH_CUDA_ALLOC_CONF, refines around the best, ranks, and
 * bisects the smallest device size for the leaders. A PyTorch snapshot's
 * recorded allocator settings (ga_torch_recorded_conf, settings.c) are
 * replayed first.
 *
 * Replay semantics are those of replay.c (docs/trace-format.md, "Replay
 * semantics"), except that a configuration's replay ends at its first OOM:
 * what happens after a failed allocation is not the job the user runs.
 */
#ifndef GA_TOOLS_FIT_FIT_H
#define GA_TOOLS_FIT_FIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tools/engine/replay.h"
#include "tools/readers/trace_reader.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Device sizes are searched in steps of this much: PyTorch's large segments
 * are 2 MiB multiples, so a finer answer would be noise. */
#define GA_FIT_GRANULE ((uint64_t)2 << 20)
#define GA_FIT_CONF_MAX 160 /* longest configuration string the search builds */

/* One event in memory (32 bytes): ga_event_t without the text. The array
 * index is the event index galloc replay prints. */
typedef struct ga_fit_event {
    uint64_t id;     /* trace id; for a tag event the offset of its tag list in the unit's tags */
    uint64_t size;   /* bytes; for GA_EV_SET_FRACTION the bits of the double fraction; for GA_EV_SLEEP
                        1 + the offset of its offload list in the unit's tags (0: none) */
    uint64_t stream; /* stream handle, GA_STREAM_NONE when not given */
    uint32_t kind;   /* ga_event_kind_t */
    uint32_t flags;  /* GA_EVF_* */
} ga_fit_event_t;

/* One unit of one trace file (a snapshot has one per device). */
typedef struct ga_fit_unit {
    char *label;              /* "FILE" or "FILE device 1" */
    ga_fit_event_t *ev;       /* n events */
    size_t n;
    uint64_t device_memory;   /* recorded in the trace (a snapshot: its oom entries' bound), 0 if not */
    int device;               /* the device index it recorded (0 without one): messages say "GPU 1" */
    uint64_t max_alloc;       /* largest allocation requested */
    ga_reader_start_t start;  /* what the trace says was in use before its first event */
    char *tags;               /* the tag events' lists, each NUL-terminated (NULL when none) */
    size_t tags_len, tags_cap;
    uint64_t sleep_events;    /* its sleep and wake events */
    uint64_t capped_ooms;     /* its oom entries with room on the device (device_free >= the request):
                                 the traced run was capped by a memory fraction the trace does not record */
} ga_fit_unit_t;

typedef struct ga_fit_job {
    ga_fit_unit_t *units;     /* n_units units, replayed one after the other */
    size_t n_units;
    uint64_t events;          /* over all units */
    uint64_t max_alloc;       /* largest allocation over all units */
    bool sets_fraction;       /* some unit calls set_per_process_memory_fraction: only then does
                                 garbage_collection_threshold do anything, so only then is it searched */
    uint64_t device_memory;   /* the size searched at: --device-memory, else recorded, else 80 GiB */
    /* env: the environment's allocator variables applied under every
     * configuration (--env), as ga_replay_env_text writes them; "" = none
     * applied: the configurations alone (GALLOC_CREATE_NO_ENV), whatever
     * the shell exports. */
    char env[512];
    uint64_t sleep_events;    /* sleep and wake events over all units (galloc_sleep.h): each replay
                                 sleeps and wakes as the trace does */
    bool no_sleep;            /* --no-sleep: those events are skipped (tags still begun and ended) */
    uint64_t capped_ooms;     /* over all units (ga_fit_unit_t.capped_ooms): the verdict then names the
                                 fraction a configuration needs, since fit sizes the device, not the cap */
    bool own_sizes;           /* no --device-memory: a unit with a recorded size runs on it, scaled
                                 by capacity / device_memory when the search tries other sizes */
} ga_fit_job_t;

/*
 * ga_fit_load: read every unit of path into job (appending; job zeroed
 * first by the caller). Returns 0, or -1 with err set ("FILE:LINE: problem",
 * or host memory); the job keeps what was loaded before.
 */
int ga_fit_load(ga_fit_job_t *job, const char *path, ga_format_t fmt, char *err, size_t errlen);

/* ga_fit_job_free: release what ga_fit_load made. */
void ga_fit_job_free(ga_fit_job_t *job);

/* The outcome of one configuration at one device size. */
typedef struct ga_fit_run {
    bool fits;                  /* no OOM in any unit */
    bool failed;                /* the allocator could not be created or a call failed (see error) */
    char error[256];            /* why, "" if not failed */
    size_t fail_unit;           /* the unit of the first OOM (when !fits && !failed) */
    uint64_t fail_event;        /* its event index in that unit */
    ga_oom_facts_t oom;         /* its classification */
    int64_t peak_reserved;      /* reserved_bytes.all.peak, max over units (until the OOM) */
    int64_t peak_allocated;     /* allocated_bytes.all.peak, max over units */
    int64_t peak_requested;     /* requested_bytes.all.peak, max over units */
    int64_t allocated_at_peak;  /* allocated bytes when reserved reached peak_reserved (a sleeping tag's
                                   blocks included: its tensors still exist) */
    int64_t asleep_at_peak;     /* bytes asleep then (galloc_sleep_stats: reserved address space without
                                   physical memory), 0 for a job that does not sleep */
    int64_t largest_free_at_peak;      /* largest cached free block then */
    double external_frag_at_peak;      /* 1 - largest free block / cached free bytes then */
} ga_fit_run_t;

/*
 * ga_fit_replay: replay every unit of job under conf (PYTORCH_CUDA_ALLOC_CONF
 * syntax, "" for the defaults) on a sim device of capacity bytes. Returns 0
 * with *out filled (fits or not), -1 if the configuration is rejected or a
 * call failed (out->failed, out->error). Thread-safe for distinct outs.
 */
int ga_fit_replay(const ga_fit_job_t *job, const char *conf, uint64_t capacity, ga_fit_run_t *out);

/*
 * ga_fit_replay_sampled: ga_fit_replay that also samples each unit's memory
 * over time into samplers[u] (job->n_units of them, each ga_sampler_init'ed;
 * NULL = none), for the plot. A unit's series ends at the OOM that ends the
 * replay; units after it stay empty.
 */
int ga_fit_replay_sampled(const ga_fit_job_t *job, const char *conf, uint64_t capacity, ga_fit_run_t *out,
                          ga_sampler_t *samplers);


/*
 * ga_fit_min_memory: the smallest multiple of GA_FIT_GRANULE on which conf
 * fits job, by bisection between the allocated peak (below which nothing can
 * fit) and a size that fits. at_d is conf's run at job->device_memory. Every
 * answer was replayed and fits, and the size one granule below was replayed
 * (or is below the allocated peak) and does not. Returns the size, or 0 if
 * none up to 64 x the device fits. *replays counts the replays made.
 */
uint64_t ga_fit_min_memory(const ga_fit_job_t *job, const char *conf, const ga_fit_run_t *at_d, uint32_t *replays);

/* One configuration of the search, with its results. */
typedef struct ga_fit_result {
    char conf[GA_FIT_CONF_MAX]; /* PyTorch keys only: ready for PYTORCH_CUDA_ALLOC_CONF; "" = defaults */
    const char *stage;          /* "recorded" (the snapshot's own settings), "grid" or "refine" */
    ga_fit_run_t run;           /* at job->device_memory */
    uint64_t min_memory;        /* smallest fitting device size, 0 = not searched or none found */
    bool min_searched;          /* whether ga_fit_min_memory ran */
    uint32_t replays;           /* replays made for this configuration */
    double seconds;             /* their time */
} ga_fit_result_t;

typedef struct ga_fit_opts {
    unsigned jobs;            /* worker threads; 0 = the number of online CPUs */
    size_t bisect;            /* bisect the device size for this many leaders (SIZE_MAX = all) */
    size_t max_configs;       /* stop after this many configurations (0 = no limit) */
    bool progress;            /* draw a progress line on stderr */
    const char *recorded;     /* the job's recorded settings, replayed first (NULL: none) */
} ga_fit_opts_t;

/* The ranked outcome. */
typedef struct ga_fit_outcome {
    ga_fit_result_t *results; /* n, best first (see ga_fit_rank) */
    size_t n;
    double seconds;           /* wall time of the search */
    unsigned jobs;            /* worker threads used */
} ga_fit_outcome_t;

/*
 * ga_fit_search: run the grid, the refinement and the bisections. Returns 0,
 * or -1 on host memory exhaustion (err set). Release with ga_fit_outcome_free.
 */
int ga_fit_search(const ga_fit_job_t *job, const ga_fit_opts_t *o, ga_fit_outcome_t *out, char *err, size_t errlen);
void ga_fit_outcome_free(ga_fit_outcome_t *out);

/*
 * ga_fit_plot: `galloc fit --plot path`: replay PyTorch's defaults and the
 * winner (oc->results[0], the closest when none fits) at job->device_memory
 * with sampling, and draw one plot per unit (numbered as galloc replay
 * numbers them when there are several), with each run's first OOM marked by
 * its class. Returns 0, or -1 with err set (nothing for later units is
 * written after a failure).
 */
int ga_fit_plot(const ga_fit_job_t *job, const ga_fit_outcome_t *oc, const char *path, char *err, size_t errlen);

/*
 * ga_fit_grid: the first stage's configurations for job, written into
 * confs[0..] (at most cap; each GA_FIT_CONF_MAX bytes). Returns how many.
 * Exposed for tests.
 */
size_t ga_fit_grid(const ga_fit_job_t *job, char (*confs)[GA_FIT_CONF_MAX], size_t cap);

/* ga_fit_better: whether result a ranks before b: fitting first, then the
 * smaller peak reserved, the later first OOM, the shorter string. */
bool ga_fit_better(const ga_fit_result_t *a, const ga_fit_result_t *b);

/* What the report says besides the outcome (from the command line). */
typedef struct ga_fit_report {
    size_t top;                /* rows of the text table, 0 = 15 */
    const char *recorded;      /* the snapshot's recorded settings replayed first, NULL if none */
    const char *recorded_text; /* ... and their PYTORCH_CUDA_ALLOC_CONF text */
    const char *plot;          /* the --plot file name when the plots were written, else NULL */
} ga_fit_report_t;

/* ga_fit_report_text / ga_fit_report_json (fit_report.c): the ranked outcome
 * oc of job as a table with the answer, or as one JSON document. */
void ga_fit_report_text(FILE *out, const ga_fit_job_t *job, const ga_fit_outcome_t *oc, const ga_fit_report_t *rep);
void ga_fit_report_json(FILE *out, const ga_fit_job_t *job, const ga_fit_outcome_t *oc, const ga_fit_report_t *rep);

/* ga_fit_main: `galloc fit` (argv[0] = "fit"). Exit 0 if some configuration
 * fits, 1 if none does, 2 on bad usage or input. */
int ga_fit_main(int argc, char **argv);
void ga_fit_usage(FILE *out);

/* ga_fit_fleet_wanted (fit_fleet.c): whether one of the n traces named is a
 * folder: the command then fits each trace on its own (a fleet of jobs)
 * instead of all of them as one job. */
bool ga_fit_fleet_wanted(int n, char *const *paths);

/* ga_fit_fleet: galloc fit over a fleet. argv as ga_fit_main's after its
 * options were parsed (getopt put them first: argv[1..first) options,
 * argv[first..argc) traces and folders); each trace, folders expanded to
 * their files in name order, is fitted by ga_fit_main on its own; up to jobs
 * traces (0 = every online CPU) at once, each in a child process with the
 * command's own --jobs, reports printed in name order as if run one after
 * another (GALLOC_FLEET_DEBUG=1: start and end of each on stderr). Text: each trace's
 * report under a "== FILE" line; json: one document {"tool": "galloc fit",
 * "version": 1, "fleet": [{"file", "exit_status", "fit": the trace's own
 * document or null}]}. Returns the worst exit status (2 > 1 > 0). */
int ga_fit_fleet(int argc, char **argv, int first, bool json, unsigned jobs);

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_FIT_FIT_H */
