/*
 * fit.h: `galloc fit`, the search for the allocator settings under which a
 * traced job fits its device.
 *
 * The traces are read once into a job (tools/job) and shared read-only by
 * every replay; each replay creates its own allocator on its own sim device,
 * so replays run in parallel threads without sharing mutable state. A row of
 * the search is one configuration replayed over every unit through the
 * engine's ga_replay_column, the same call galloc replay makes for a column:
 * the row of the recorded settings is replay's "recorded" column, figure for
 * figure. A configuration fits only if every unit fits (for a capped unit,
 * under every cap its trace allows). The search (ga_fit_search) replays a
 * grid of the knobs users set in PYTORCH_CUDA_ALLOC_CONF, refines around the
 * best, ranks, and bisects the smallest memory for the leaders.
 */
#ifndef GA_TOOLS_FIT_FIT_H
#define GA_TOOLS_FIT_FIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tools/engine/owners.h"
#include "tools/engine/replay.h"
#include "tools/job/job.h"
#include "tools/readers/trace_reader.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Device sizes are searched in steps of this much: PyTorch's large segments
 * are 2 MiB multiples, so a finer answer would be noise. */
#define GA_FIT_GRANULE ((uint64_t)2 << 20)
#define GA_FIT_CONF_MAX 160 /* longest configuration string the search builds */

/* Peaks within this fraction of each other are a tie (then the shorter
 * setting wins): a replay predicts a real run's peak reserved to about this
 * (docs/fit.md, "How the answer is chosen"), so a smaller margin is noise. */
#define GA_FIT_TIE 0.005
/* A job that fits under its recorded settings is told to change them only
 * if another setting saves at least this fraction of its peak reserved. */
#define GA_FIT_WORTH 0.05
/* A winner whose neighbouring grid value of one knob needs at least this
 * much more (or does not fit) sits next to a cliff: the report says so. */
#define GA_FIT_CLIFF 0.10

/* The job fit searches (read-only during the search). */
typedef struct ga_fit_job {
    ga_job_t *job;       /* the traces, one unit per device */
    const char *backend; /* NULL = sim */
    /* env: the environment's allocator variables applied under every
     * configuration (--env), as ga_replay_env_text writes them; "" = none
     * applied: the configurations alone (GALLOC_CREATE_NO_ENV). */
    char env[512];
    bool no_sleep;    /* --no-sleep: sleep and wake events skipped (tags still begun and ended) */
    uint64_t reserve; /* --reserve: memory outside the allocator, added to a smallest device */
    /* Derived from the units by ga_fit_job_init: */
    uint64_t events;       /* over all units */
    uint64_t max_alloc;    /* largest allocation over all units */
    bool sets_fraction;    /* some unit calls set_per_process_memory_fraction: only then does
                                 garbage_collection_threshold do anything, so only then is it searched */
    uint64_t sleep_events; /* sleep and wake events over all units */
    size_t capped_units;   /* units replayed under an inferred cap range */
    /* ref: the unit a smallest memory is stated for (the others scale with
     * it): the first whose size its own OOM entries tell (the device that ran
     * out of memory), else the first. */
    size_t ref;
    const char *recorded; /* the settings the job recorded (the first file that has them), NULL */
    const char *recorded_text;
} ga_fit_job_t;

/* ga_fit_job_init: job's derived fields from job->job's units. */
void ga_fit_job_init(ga_fit_job_t *job);

/* The outcome of one configuration over every unit. */
typedef struct ga_fit_run {
    bool fits;                 /* no OOM in any unit, whatever the cap in a capped unit's range */
    bool depends;              /* some unit fits under part of its cap range only */
    bool failed;               /* the allocator could not be created or a call failed (see error) */
    galloc_status_t refused;   /* ... the former: the status of galloc_allocator_create (GALLOC_E_CONFIG:
                                  a value out of range, a bad environment variable); GALLOC_OK when it
                                  was made. The table leaves a refused one out; the exit status is 2 */
    char error[256];           /* why, "" if not failed */
    size_t fail_unit;          /* the unit of the first OOM (when !fits && !failed) */
    uint64_t fail_event;       /* its event index in that unit */
    ga_oom_facts_t oom;        /* its classification */
    int64_t peak_reserved;     /* reserved_bytes.all.peak, max over units */
    int64_t peak_allocated;    /* allocated_bytes.all.peak, max over units */
    int64_t peak_requested;    /* requested_bytes.all.peak, max over units */
    int64_t allocated_at_peak; /* of the unit with the largest peak: see ga_replay_at_peak_t */
    int64_t asleep_at_peak;
    int64_t largest_free_at_peak;
    double external_frag_at_peak;
    uint64_t ooms;                            /* allocations that failed, over units */
    uint64_t device_allocs;                   /* num_device_alloc, over units */
    uint64_t device_frees;                    /* num_device_free, over units */
    uint64_t retries;                         /* num_alloc_retries, over units */
    uint64_t expected_ooms, expected_avoided; /* the traced OOM points met and avoided, over units */
} ga_fit_run_t;

/*
 * ga_fit_replay: replay every unit of job under conf (PYTORCH_CUDA_ALLOC_CONF
 * syntax, "" for the defaults; recorded: the job's own run, segments at the
 * recorded addresses) on each unit's own device, as galloc replay does.
 * Returns 0 with *out filled (fits or not), -1 if the configuration is
 * rejected or a call failed (out->failed, out->error). Thread-safe for
 * distinct outs.
 */
int ga_fit_replay(const ga_fit_job_t *job, const char *conf, bool recorded, ga_fit_run_t *out);

/*
 * ga_fit_fits_within: whether conf fits every unit when the allocator may
 * use only `allowed` bytes of the reference unit (and the same share of every
 * other unit's): the device size of an uncapped unit, the cap of a capped one.
 * Each replay stops at its first OOM. A failed call counts as not fitting.
 */
bool ga_fit_fits_within(const ga_fit_job_t *job, const char *conf, bool recorded, uint64_t allowed);

/* ga_fit_allowed: what the allocator may use of the reference unit (ref) as
 * the job ran: its device's size, or for a capped unit the top of its cap
 * range. */
uint64_t ga_fit_allowed(const ga_fit_job_t *job);

/*
 * ga_fit_min_memory: the smallest multiple of GA_FIT_GRANULE the allocator
 * may use (ga_fit_fits_within's allowed) under which conf fits, by bisection
 * between the requested peak (below which nothing can fit) and a size that
 * fits. at_d is conf's run as the job ran. Every answer was replayed and
 * fits, and one granule below was replayed (or is below the requested peak)
 * and does not. Returns the size, or 0 if none up to 64 x fits. *replays
 * counts the replays made.
 */
uint64_t ga_fit_min_memory(const ga_fit_job_t *job, const char *conf, bool recorded, const ga_fit_run_t *at_d,
                           uint32_t *replays);

/* The knobs of one configuration (fit_search.c builds the string from them). */
typedef struct ga_fit_axes {
    bool es;      /* expandable_segments:True */
    uint32_t ms;  /* max_split_size_mb, 0 = unset */
    int rd;       /* roundup_power2_divisions: 0 unset, -1 the per-interval list, else the count */
    double gc;    /* garbage_collection_threshold, 0 = unset */
    uint32_t nsr; /* max_non_split_rounding_mb, 0 = unset */
} ga_fit_axes_t;

/* One configuration of the search, with its results. */
typedef struct ga_fit_result {
    char conf[GA_FIT_CONF_MAX]; /* PyTorch keys only: ready for PYTORCH_CUDA_ALLOC_CONF; "" = defaults */
    const char *stage;          /* "recorded" (the job's own run), "grid", "refine" or "given" (--conf) */
    bool recorded;              /* the job's own run: its recorded settings and segment addresses */
    bool has_axes;              /* axes describe conf (not the recorded row) */
    ga_fit_axes_t axes;
    ga_fit_run_t run;    /* as the job ran (each unit's own device and cap) */
    uint64_t min_memory; /* smallest memory the allocator may use and fit, 0 = not searched or none */
    bool min_searched;   /* whether ga_fit_min_memory ran */
    uint32_t replays;    /* replays made for this configuration */
    double seconds;      /* their time */
} ga_fit_result_t;

typedef struct ga_fit_opts {
    unsigned jobs;      /* worker threads; 0 = the number of online CPUs */
    size_t bisect;      /* bisect the memory for this many leaders (SIZE_MAX = all) */
    size_t max_configs; /* stop after this many configurations (0 = no limit) */
    bool progress;      /* draw a progress line on stderr */
    bool no_recorded;   /* do not replay the job's recorded settings first */
    /* --conf: the settings to check instead of the search (no grid, no
     * refinement; every one bisected): "does my job fit under these, and in
     * how little memory?". n_confs 0: search. */
    const char *const *confs;
    size_t n_confs;
} ga_fit_opts_t;

/* The ranked outcome. */
typedef struct ga_fit_outcome {
    ga_fit_result_t *results; /* n, best first (see ga_fit_better) */
    size_t n;
    double seconds; /* wall time of the search */
    unsigned jobs;  /* worker threads used */
} ga_fit_outcome_t;

/*
 * ga_fit_search: run the recorded settings, the grid, the refinement and the
 * bisections. Returns 0, or -1 on host memory exhaustion (err set). Release
 * with ga_fit_outcome_free.
 */
int ga_fit_search(const ga_fit_job_t *job, const ga_fit_opts_t *o, ga_fit_outcome_t *out, char *err, size_t errlen);
void ga_fit_outcome_free(ga_fit_outcome_t *out);

/*
 * ga_fit_grid: the first stage's configurations for job, written into
 * confs[0..] (at most cap; each GA_FIT_CONF_MAX bytes). Returns how many.
 * Exposed for tests.
 */
size_t ga_fit_grid(const ga_fit_job_t *job, char (*confs)[GA_FIT_CONF_MAX], size_t cap);

/* ga_fit_better: whether result a ranks before b: fitting first (then those
 * that fit under part of a cap range), then the smaller peak reserved, peaks
 * within GA_FIT_TIE of each other being a tie; the later first OOM; the
 * shorter string. */
bool ga_fit_better(const ga_fit_result_t *a, const ga_fit_result_t *b);

/* The answer the report gives (fit_advice.c), from the ranked outcome. */
typedef struct ga_fit_answer {
    const ga_fit_result_t *pick;     /* the configuration to use (NULL: none fits) */
    const ga_fit_result_t *recorded; /* the job's own run, NULL without recorded settings */
    const ga_fit_result_t *closest;  /* nothing fits: the one that gets furthest */
    bool keep_recorded;              /* the recorded settings fit and nothing saves GA_FIT_WORTH */
    double saving;                   /* the lightest's saving over the recorded run, a fraction of its peak */
    const ga_fit_result_t *best;     /* the top-ranked fitting result */
    const ga_fit_result_t *lightest; /* the fitting result with the smallest peak reserved (ties aside) */
    const ga_fit_result_t *cliff;    /* a neighbour of pick that is much worse, NULL if none */
    const ga_fit_result_t *smaller;  /* another result that fits a smaller memory than pick, NULL */
} ga_fit_answer_t;

/* ga_fit_answer: the answer for oc (fit_advice.c). */
void ga_fit_answer(const ga_fit_job_t *job, const ga_fit_outcome_t *oc, ga_fit_answer_t *out);

/* Who holds the memory in the job's own run (its recorded settings, else
 * PyTorch's defaults) and in the answer (the pick, else the closest):
 * fit_owners.c replays each unit of each again with owners
 * (tools/engine/owners.h). */
typedef struct ga_fit_owners {
    const ga_fit_result_t *row[2]; /* the own run's row, the answer's (NULL: none, or the same as the own run) */
    ga_replay_column_t *cols[2];   /* per row, one column per unit (NULL when not replayed) */
} ga_fit_owners_t;

/* ga_fit_owners_run: replay both rows of oc with owners. 0, or -1 when host
 * memory ran out. Release with ga_fit_owners_free. */
int ga_fit_owners_run(const ga_fit_job_t *job, const ga_fit_outcome_t *oc, ga_fit_owners_t *out);
void ga_fit_owners_free(const ga_fit_job_t *job, ga_fit_owners_t *w);

/* A genuine OOM's shortfall: at the OOM of row k, the live bytes must shrink
 * by deficit (the request less the cached free bytes and the free memory the
 * allocator may still take) for the request to fit at that moment. */
typedef struct ga_fit_shrink {
    size_t unit;                      /* the unit that ran out */
    const ga_owners_moment_t *moment; /* its first OOM's owners */
    const ga_owners_t *owners;
    uint64_t deficit; /* bytes */
} ga_fit_shrink_t;

/* ga_fit_shrink: row k's shortfall; false when it fits, failed or its first
 * OOM is not genuine (or has no owners). */
bool ga_fit_shrink(const ga_fit_job_t *job, const ga_fit_owners_t *w, int k, ga_fit_shrink_t *out);

/* ga_fit_owners_text / ga_fit_owners_json: both rows' owners (the text: the
 * unit that ran out, or the reference unit, and the shortfall's holders). */
void ga_fit_owners_text(FILE *out, const ga_fit_job_t *job, const ga_fit_owners_t *w);
void ga_fit_owners_json(FILE *out, const ga_fit_job_t *job, const ga_fit_owners_t *w);

/* ga_fit_conf_name (fit_report.c): how the report names r's configuration:
 * its string; "(recorded: PyTorch's defaults)" for the job's own run under
 * the defaults, "(defaults)" for PyTorch's, "(environment)" under --env. */
const char *ga_fit_conf_name(const ga_fit_job_t *job, const ga_fit_result_t *r);

/* ga_fit_table_text (fit_table.c): the ranked table's first top rows (and
 * the job's own run wherever it ranks; configurations that could not be made
 * left out), then what its figures are: the ranking rule, frag@peak's
 * moment, and what "-" and "> 64x" under min device mean where they appear. */
void ga_fit_table_text(FILE *out, const ga_fit_job_t *job, const ga_fit_outcome_t *oc, size_t top);

/* ga_fit_frag_at_peak: frag@peak: 1 - allocated / reserved at the moment
 * reserved first reached its peak (reserved with the bytes asleep then, as
 * allocated counts a sleeping tag's blocks). */
double ga_fit_frag_at_peak(const ga_fit_run_t *r);

/* ga_fit_capped: the job's smallest memory is a cap (its reference unit is
 * capped by a memory fraction), not a device size. */
bool ga_fit_capped(const ga_fit_job_t *job);

/* What the report says besides the outcome (from the command line). */
typedef struct ga_fit_report {
    size_t top;                    /* rows of the text table, 0 = 15 */
    const char *plot;              /* the --plot file name when the plots were written, else NULL */
    const ga_fit_owners_t *owners; /* who holds the memory (NULL: --no-owners) */
} ga_fit_report_t;

/* ga_fit_report_text / ga_fit_report_json (fit_report.c): the ranked outcome
 * oc of job as a table with the answer, or as one JSON document. */
void ga_fit_report_text(FILE *out, const ga_fit_job_t *job, const ga_fit_outcome_t *oc, const ga_fit_report_t *rep);
void ga_fit_report_json(FILE *out, const ga_fit_job_t *job, const ga_fit_outcome_t *oc, const ga_fit_report_t *rep);

/*
 * ga_fit_plot: `galloc fit --plot path`: replay the job's own run (or
 * PyTorch's defaults) and the answer with sampling, and draw one plot per
 * unit (numbered as galloc replay numbers them when there are several), with
 * each run's first OOM marked by its class. Returns 0, or -1 with err set.
 */
int ga_fit_plot(const ga_fit_job_t *job, const ga_fit_outcome_t *oc, const char *path, char *err, size_t errlen);

/* The command's options, parsed (fit_cli.c). */
typedef struct ga_fit_cli {
    uint64_t device_memory; /* --device-memory, 0 = from the trace or 80 GiB */
    uint64_t reserve;       /* --reserve */
    bool env;               /* --env */
    bool no_sleep;          /* --no-sleep */
    ga_format_t format;     /* --format */
    bool json;              /* --json */
    size_t top;             /* --top */
    const char *plot;       /* --plot FILE */
    bool no_owners;         /* --no-owners: no "who holds the memory" */
    const char *backend;    /* NULL = sim (tests) */
    ga_fit_opts_t o;        /* --jobs, --bisect, --max-configs, --no-recorded */
} ga_fit_cli_t;

/*
 * ga_fit_traces: galloc fit of the n traces at paths as one job under cli,
 * the report written to out, messages to stderr. Returns the exit status:
 * 0 some configuration fits, 1 none does, 2 bad input. The fleet calls it
 * for each trace of a folder.
 */
int ga_fit_traces(const ga_fit_cli_t *cli, char *const *paths, size_t n, FILE *out);

/* ga_fit_main: `galloc fit` (argv[0] = "fit"). Exit 0 if some configuration
 * fits, 1 if none does, 2 on bad usage or input. */
int ga_fit_main(int argc, char **argv);
void ga_fit_usage(FILE *out);

/* ga_fit_fleet_wanted (fit_fleet.c): whether one of the n traces named is a
 * folder: the command then fits each trace on its own (a fleet of jobs)
 * instead of all of them as one job. */
bool ga_fit_fleet_wanted(int n, char *const *paths);

/* ga_fit_fleet: galloc fit over a fleet: each of the n paths, folders
 * expanded to their files in name order, fitted by ga_fit_traces on its own;
 * up to jobs traces (0 = every online CPU) at once, each in a child process,
 * reports printed in name order as if run one after another
 * (GALLOC_FLEET_DEBUG=1: start and end of each on stderr). Text: each trace's
 * report under a "== FILE" line; json: one document {"tool": "galloc fit",
 * "version": 2, "fleet": [{"file", "exit_status", "fit": the trace's own
 * document or null}]}. Returns the worst exit status (2 > 1 > 0). */
int ga_fit_fleet(const ga_fit_cli_t *cli, char *const *paths, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_FIT_FIT_H */
