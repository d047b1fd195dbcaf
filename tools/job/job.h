/*
 * job.h: a traced job, read once. Every command (galloc replay, --verify,
 * galloc fit and its fleet, --snapshot and --plot, and the Python API through
 * tools/lib) takes this object: none of them opens the trace file again, and
 * there is no process-wide cache. What one command knows about the trace,
 * every command knows, so the same file gives the same figures everywhere.
 *
 * A job holds one or more files; each file one or more units (a snapshot or a
 * profiler trace has one per device), replayed one at a time. Per unit:
 *   - its events, in memory (ga_job_event rebuilds each as the readers made
 *     it, with its recorded stack and time where the trace has them), each
 *     allocation with its owner class (who made it: tools/owners/index.h)
 *     and whether the trace ever frees it (GA_EVF_KEPT);
 *   - its device: the memory the allocator could use, and where that figure
 *     comes from; the device's total when the trace records it;
 *   - what it says about the state before its first entry: the reader's
 *     start notes, and for a snapshot that starts mid-run the allocator state
 *     rebuilt at its first entry (seed.h), or why it could not be;
 *   - for a snapshot, the view --verify compares (snap_view.h);
 *   - a memory-fraction cap, when its trace shows one (ga_job_cap_t: the
 *     replay engine infers the range once, tools/engine/cap.c);
 * and per file the allocator settings it recorded.
 *
 * Loading is the only place a trace is read. Not thread-safe while loading;
 * a loaded job is read-only (the cap aside, set once before any replay), so
 * fit's worker threads share it.
 */
#ifndef GA_TOOLS_JOB_JOB_H
#define GA_TOOLS_JOB_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/owners/index.h"
#include "tools/readers/trace_reader.h"
#include "tools/snapshot/seed.h"
#include "tools/snapshot/snap_view.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GA_JOB_DEFAULT_MEMORY ((uint64_t)80 << 30) /* a unit's device when nothing says its size */

/* Where a unit's device size comes from. */
typedef enum ga_job_memory_source {
    GA_JOB_MEM_DEFAULT = 0, /* nothing says: GA_JOB_DEFAULT_MEMORY */
    GA_JOB_MEM_OPTION,      /* --device-memory (device_memory in Python) */
    GA_JOB_MEM_HEADER,      /* a galloc text trace's header: device_memory */
    GA_JOB_MEM_PROPERTIES,  /* a profiler trace's deviceProperties totalGlobalMem: the device's total */
    GA_JOB_MEM_OOM_ENTRIES  /* a snapshot's oom entries: reserved + device_free, what the allocator could
                               use (the device's total less memory outside the allocator, unknown) */
} ga_job_memory_source_t;

/* ga_job_memory_source_text: how a report says where the size comes from. */
const char *ga_job_memory_source_text(ga_job_memory_source_t s);

/* A memory-fraction cap the trace shows: an oom entry that came with room on
 * the device (device_free >= its request). Snapshots do not record the
 * fraction, so the cap is known only as a range, inferred once per unit from
 * the replay of its recorded settings (tools/engine/cap.c) and applied to
 * every configuration. */
typedef struct ga_job_cap {
    uint64_t capped_ooms; /* the unit's oom entries with room on the device (0: no cap shown) */
    bool inferred;        /* [low, high) below is known */
    uint64_t low, high;   /* bytes the allocator could reserve: the cap lay in [low, high) */
    char why[256];        /* !inferred with capped_ooms: why the range is unknown */
} ga_job_cap_t;

/* One event held in memory (40 bytes). */
typedef struct ga_job_ev {
    uint64_t id;   /* the trace id; annotate and tag events: offset of the text in the unit's text */
    uint64_t size; /* bytes; SET_FRACTION: the double's bits; SLEEP: 1 + offset of the offload list (0: none) */
    uint64_t stream;
    uint64_t where; /* line or entry index (ga_event_t.where) */
    uint8_t kind;   /* ga_event_kind_t */
    uint8_t flags;  /* GA_EVF_* (GA_EVF_KEPT set once the unit is read) */
    uint16_t owner; /* GA_EV_ALLOC, GA_EV_OOM: its owner class in the unit's owners index */
    uint32_t extra; /* index into the unit's extras, UINT32_MAX: none */
} ga_job_ev_t;

/* The rare fields of an event (a recorded segment address, an oom's figures). */
typedef struct ga_job_extra {
    uint64_t place, device_free, released;
} ga_job_extra_t;

struct ga_job_file;

typedef struct ga_job_unit {
    char *label;            /* "FILE" or "FILE device 1" */
    const char *path;       /* the file, as given */
    const char *unit_label; /* "" or "device 1" */
    size_t unit;            /* its index in the file */
    int device;             /* the device index it recorded (0 without one) */
    ga_format_t format;
    const struct ga_job_file *file;

    ga_job_ev_t *ev; /* n events */
    size_t n, cap_ev;
    ga_job_extra_t *extras;
    size_t n_extras, cap_extras;
    int64_t *time_us; /* per event, NULL when the trace records no times */
    char *text;       /* annotations and tag lists, each NUL-terminated */
    size_t text_len, text_cap;

    uint64_t allocs, frees, ooms, annotations, other; /* events by kind */
    uint64_t max_alloc;                               /* largest request (seeded stand-ins excluded) */
    uint64_t tag_events, sleep_events;
    bool sets_fraction; /* a set_fraction event (only then does GC run) */

    uint64_t memory;  /* bytes the allocator can use: the sim device's capacity (a device's total
                                 less the reserve, ga_job_opts_t.reserve, when the size is a total) */
    uint64_t reserve; /* the reserve taken off a total (0 when the size is the allocator's own) */
    ga_job_memory_source_t memory_source;
    uint64_t recorded_memory; /* what the trace itself says (0: nothing), whatever --device-memory says */
    ga_job_memory_source_t recorded_source;
    /* What the trace shows the device held, whatever its size is taken to
     * be: lower bounds of the device's size (0: the trace does not say). A
     * snapshot: its final segments' bytes (reserved_last), its segment
     * entries walked back from them (reserved_first: at its first entry;
     * reserved_peak: the most at once, at least both); a profiler trace with
     * totals: its Total Reserved at the first event and at its peak. The
     * largest request is max_alloc. */
    uint64_t reserved_peak, reserved_first, reserved_last;

    ga_reader_notes_t notes; /* the reader's notes: skipped entries, prologue, start */
    bool midrun;             /* a snapshot trace that starts mid-run */
    bool seeded;             /* seed holds the state at the first entry */
    ga_seed_t seed;
    char seed_error[512]; /* midrun && !seeded: why ("" under --no-seed) */
    bool has_view;        /* a snapshot: view is what --verify compares */
    ga_snap_view_t view;

    ga_job_cap_t cap;
    ga_owners_index_t owners; /* who made each allocation (tools/owners/index.h): its classes are the
                                 events' owner fields and the seed's pieces' */
} ga_job_unit_t;

typedef struct ga_job_file {
    char *path;
    ga_format_t format;
    ga_reader_t *reader;      /* kept open: a snapshot's frames point into its parsed file */
    bool has_recorded;        /* a snapshot: its own run can be replayed (settings, segment addresses) */
    bool settings_known;      /* ... and it recorded its allocator settings (older ones: PyTorch's defaults assumed) */
    char recorded[1024];      /* the settings as a configuration string ("" = PyTorch's defaults) */
    char recorded_text[1024]; /* ... and its PYTORCH_CUDA_ALLOC_CONF text */
} ga_job_file_t;

typedef struct ga_job_opts {
    ga_format_t format;     /* --format (AUTO: detect) */
    uint64_t device_memory; /* --device-memory: every unit's size; 0 = the trace's own, else 80 GiB */
    /* reserve: memory on the device the allocator does not own (the CUDA
     * context, library workspaces, NCCL buffers, other processes: --reserve).
     * Taken off a size that is the device's total (the option, a header,
     * deviceProperties, the default), and refused (ga_job_add fails) when
     * not less than it; a snapshot's size from its oom entries is already
     * what the allocator could use. */
    uint64_t reserve;
    bool no_seed; /* --no-seed: no rebuilt start state; the reader's prologue replays instead */
    /* progress: called now and then while reading, with the fraction of the
     * current file read (-1 if unknown) and the events so far; may be NULL. */
    void (*progress)(void *ctx, double fraction, uint64_t events);
    void *progress_ctx;
} ga_job_opts_t;

typedef struct ga_job {
    ga_job_file_t **files; /* each allocated on its own: units point at theirs */
    size_t n_files;
    ga_job_unit_t *units;
    size_t n_units;
    uint64_t events; /* over every unit */
} ga_job_t;

/* ga_job_add: read the trace at path ("-": standard input) into job (zeroed
 * by the caller before the first add), one unit per device it records.
 * Returns 0, or -1 with err ("FILE:LINE: problem", or host memory) and the
 * job's files and units as they were (its tables may have grown: ga_job_free
 * the job in either case). */
int ga_job_add(ga_job_t *job, const char *path, const ga_job_opts_t *o, char *err, size_t errlen);

/* ga_job_free: release everything (a zeroed job is fine). */
void ga_job_free(ga_job_t *job);

/* ga_job_event: event i (< u->n) of u as the reader made it. Its text and
 * frames stay valid while the job does. */
void ga_job_event(const ga_job_unit_t *u, size_t i, ga_event_t *out);

/* ga_job_recorded: the settings of u's own run (a configuration string, ""
 * = PyTorch's defaults): a snapshot's recorded settings, or PyTorch's defaults
 * for one that records none; NULL for a trace without addresses to replay
 * its own run at (not a snapshot). */
const char *ga_job_recorded(const ga_job_unit_t *u);

/* ga_job_snapshot: u's parsed snapshot (torch format), else NULL. */
const struct ga_torch_snapshot *ga_job_snapshot(const ga_job_unit_t *u);

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_JOB_JOB_H */
