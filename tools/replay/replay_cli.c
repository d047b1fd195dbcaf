/*
 * replay_cli.c: `galloc replay [options] TRACE...`: parse options, replay each
 * trace (each unit of a multi-device snapshot) through every --conf, print the
 * comparison, write the optional snapshot and plot files, and choose the exit
 * code (2 for bad input or usage beats 1 for an OOM beats 0).
 */
#include "tools/replay/replay_cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/engine/replay.h"
#include "tools/readers/trace_reader.h"
#include "tools/readers/units.h"
#include "tools/replay/progress.h"
#include "tools/replay/verify.h"
#include "tools/report/outputs.h"
#include "tools/report/report.h"
#include "tools/snapshot/seed.h"
#include "tools/snapshot/snap_view.h"
#include "tools/snapshot/torch_snapshot.h"

typedef struct cli {
    const char *backend;      /* --backend, "sim" by default */
    uint64_t device_memory;   /* --device-memory, 0 = from the trace or 80 GiB */
    const char **confs;       /* --conf strings, n_confs of them */
    size_t n_confs;
    ga_format_t format;       /* --format */
    bool json;                /* --json */
    const char *snapshot;     /* --snapshot FILE */
    bool snapshot_range;      /* --snapshot-range given */
    uint64_t snapshot_first;  /* its FIRST event index */
    uint64_t snapshot_last;   /* its LAST event index (UINT64_MAX: to the end) */
    size_t snapshot_max;      /* --snapshot-max-entries, 0 = all */
    bool no_recorded;         /* --no-recorded: PyTorch's defaults, not the snapshot's settings */
    bool verify;              /* --verify: compare the replay with the snapshot's record */
    bool no_seed;             /* --no-seed: a mid-run snapshot starts from the reader's prologue */
    bool env;                 /* --env: apply the environment's allocator variables under every column */
    bool no_sleep;            /* --no-sleep: the trace's sleep and wake events are skipped */
    bool have_recorded;       /* the current file recorded allocator_settings (and no --conf) */
    char recorded[1024];      /* ... as a config string ("" = defaults) */
    char recorded_text[1024]; /* ... and its PYTORCH_CUDA_ALLOC_CONF text */
    const char *plot;         /* --plot FILE */
    size_t n_snapshots;       /* snapshot files named so far (numbering) */
    size_t n_plots;           /* plot files named so far */
    bool first_json;          /* no trace written into the JSON document yet */
} cli_t;

void ga_replay_usage(FILE *out)
{
    char formats[128];
    ga_reader_format_list(formats, sizeof(formats));
    fputs("usage: galloc replay [options] TRACE...\n"
          "Replay allocation traces through galloc on a simulated GPU, one column per --conf.\n"
          "\n"
          "  --conf STRING         an allocator configuration (PYTORCH_CUDA_ALLOC_CONF syntax, e.g.\n"
          "                        expandable_segments:True or max_split_size_mb:512); repeat to\n"
          "                        compare; none means PyTorch's defaults, or a snapshot's\n"
          "                        recorded allocator_settings\n"
          "  --device-memory SIZE  simulated device size (80GiB, 512MiB, 1.5GB, bytes); default:\n"
          "                        the size recorded in the trace (a snapshot's oom entries:\n"
          "                        reserved + device_free), else 80GiB\n"
          "  --backend NAME        device backend (default sim)\n",
          out);
    fprintf(out, "  --format FMT          auto (default), %s\n", formats);
    fputs("  --json                print one JSON document (memory_stats with PyTorch's keys)\n"
          "  --no-recorded         ignore a snapshot's recorded allocator_settings: PyTorch's defaults\n"
          "  --no-seed             a snapshot trace that starts mid-run: replay the blocks live before\n"
          "                        it as plain allocations instead of rebuilding the allocator state\n"
          "                        at its first entry from the final segments\n"
          "  --snapshot FILE       write a PyTorch memory snapshot at the first OOM or at the end\n"
          "                        (FILE.json for JSON); numbered FILE.N.ext when several\n"
          "  --snapshot-range FIRST:LAST  record only events FIRST..LAST (0-based replay event\n"
          "                        indices; LAST may be empty: to the end) and write the state after\n"
          "                        LAST, so a huge trace's window opens in the memory visualizer\n"
          "  --snapshot-max-entries N  keep only the last N trace entries (PyTorch's max_entries)\n"
          "  --env                 also apply the environment's PYTORCH_ALLOC_CONF (else\n"
          "                        PYTORCH_CUDA_ALLOC_CONF) and GALLOC_CONF under every column, named\n"
          "                        in its label; without it they are not read: the answer depends\n"
          "                        only on the command line and the trace\n"
          "  --plot FILE           plot requested / allocated / reserved memory over the replay\n"
          "  --no-sleep            skip the trace's sleep and wake events (tags are still begun and\n"
          "                        ended), to compare the peaks with and without sleeping\n"
          "  --verify              TRACE is a PyTorch snapshot: replay it under its recorded settings\n"
          "                        (or --conf) and compare galloc's device events (segment_alloc,\n"
          "                        segment_free, segment_map, segment_unmap, oom) and final segments\n"
          "                        with the recorded ones; exit 1 on a divergence\n"
          "  -h, --help            this text\n"
          "\n"
          "TRACE: a file in one of these formats (told from its first bytes unless --format names\n"
          "one); - reads standard input:\n",
          out);
    ga_reader_format_help(out);
    fputs("Exit status: 0 no OOM, 1 an OOM in some configuration, 2 bad usage or input; with\n"
          "--verify: 0 agrees, 1 diverges, 2 cannot verify.\n",
          out);
}

static int usage_error(const char *fmt, const char *arg)
{
    return ga_report_usage_error("replay", fmt, arg);
}

/* "FIRST:LAST" (LAST empty: to the end) into event indices. 0 or -1. */
static int parse_range(const char *s, uint64_t *first, uint64_t *last)
{
    char *end;
    if (*s < '0' || *s > '9')
        return -1;
    *first = strtoull(s, &end, 10);
    if (*end != ':')
        return -1;
    s = end + 1;
    if (*s == '\0') {
        *last = UINT64_MAX;
        return 0;
    }
    if (*s < '0' || *s > '9')
        return -1;
    *last = strtoull(s, &end, 10);
    return *end == '\0' && *last >= *first ? 0 : -1;
}

static int parse_args(cli_t *c, int argc, char **argv)
{
    enum {
        O_BACKEND = 256, O_MEM, O_CONF, O_FORMAT, O_JSON, O_SNAPSHOT, O_PLOT, O_RANGE, O_MAXENT, O_NOREC, O_VERIFY,
        O_NOSEED, O_ENV, O_NOSLEEP
    };
    static const struct option opts[] = {
        {"backend", required_argument, NULL, O_BACKEND},   {"device-memory", required_argument, NULL, O_MEM},
        {"conf", required_argument, NULL, O_CONF},         {"format", required_argument, NULL, O_FORMAT},
        {"json", no_argument, NULL, O_JSON},               {"snapshot", required_argument, NULL, O_SNAPSHOT},
        {"plot", required_argument, NULL, O_PLOT},         {"help", no_argument, NULL, 'h'},
        {"snapshot-range", required_argument, NULL, O_RANGE},
        {"snapshot-max-entries", required_argument, NULL, O_MAXENT},
        {"no-recorded", no_argument, NULL, O_NOREC},       {"verify", no_argument, NULL, O_VERIFY},
        {"no-seed", no_argument, NULL, O_NOSEED},          {"env", no_argument, NULL, O_ENV},
        {"no-sleep", no_argument, NULL, O_NOSLEEP},
        {NULL, 0, NULL, 0}};
    c->confs = calloc((size_t)argc + 1, sizeof(*c->confs));
    if (c->confs == NULL)
        return usage_error("%s", "out of host memory");
    optind = 0; /* reset getopt: the command may run more than once in a process (tests) */
    opterr = 0;
    int o;
    while ((o = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (o) {
        case O_BACKEND: c->backend = optarg; break;
        case O_MEM:
            if (!ga_units_parse_size(optarg, strlen(optarg), &c->device_memory) || c->device_memory == 0)
                return usage_error("bad --device-memory \"%s\" (e.g. 80GiB, 512MiB, 1.5GB or bytes)", optarg);
            break;
        case O_CONF: c->confs[c->n_confs++] = optarg; break;
        case O_FORMAT:
            if (!ga_reader_format_parse(optarg, &c->format))
                return ga_report_bad_format("replay", optarg);
            break;
        case O_JSON: c->json = true; break;
        case O_SNAPSHOT: c->snapshot = optarg; break;
        case O_PLOT: c->plot = optarg; break;
        case O_RANGE:
            if (parse_range(optarg, &c->snapshot_first, &c->snapshot_last) != 0)
                return usage_error("bad --snapshot-range \"%s\" (FIRST:LAST event indices, FIRST <= LAST)", optarg);
            c->snapshot_range = true;
            break;
        case O_MAXENT: {
            char *end;
            unsigned long long n = strtoull(optarg, &end, 10);
            if (optarg[0] < '0' || optarg[0] > '9' || *end != '\0' || n == 0 || n > SIZE_MAX)
                return usage_error("bad --snapshot-max-entries \"%s\" (a positive number of entries)", optarg);
            c->snapshot_max = (size_t)n;
            break;
        }
        case O_NOREC: c->no_recorded = true; break;
        case O_VERIFY: c->verify = true; break;
        case O_NOSEED: c->no_seed = true; break;
        case O_ENV: c->env = true; break;
        case O_NOSLEEP: c->no_sleep = true; break;
        case 'h': ga_replay_usage(stdout); return -1;
        case ':': return usage_error("option %s needs a value", argv[optind - 1]);
        default: return usage_error("unknown option %s", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return usage_error("%s", "no trace file given");
    if (c->verify && (c->n_confs > 1 || c->snapshot != NULL || c->plot != NULL))
        return usage_error("%s", "--verify takes at most one --conf, and no --snapshot or --plot");
    if ((c->snapshot_range || c->snapshot_max) && c->snapshot == NULL)
        return usage_error("%s", "--snapshot-range and --snapshot-max-entries need --snapshot FILE");
    if (c->snapshot != NULL && !ga_outputs_have_snapshot())
        return usage_error("--snapshot %s: not available yet (the snapshot writer is not in this build)", c->snapshot);
    if (c->plot != NULL && !ga_outputs_have_plot())
        return usage_error("--plot %s: not available yet (the plot writer is not in this build)", c->plot);
    /* Before the replay, not after minutes of it. */
    char err[512];
    if (c->plot != NULL && ga_outputs_plot_check(c->plot, err, sizeof(err)) != 0)
        return usage_error("--plot %s", err);
    if (c->snapshot != NULL && ga_outputs_check_writable(c->snapshot, err, sizeof(err)) != 0)
        return usage_error("--snapshot %s", err);
    return 0;
}

/* Write the plot of one replayed trace: every column with its OOMs. */
static int write_plot(const char *path, const char *title, const ga_replay_t *rp, char *err, size_t errlen)
{
    ga_plot_run_t *runs = calloc(rp->n_cols ? rp->n_cols : 1, sizeof(*runs));
    if (runs == NULL) {
        snprintf(err, errlen, "%s: out of host memory", path);
        return -1;
    }
    for (size_t i = 0; i < rp->n_cols; i++)
        runs[i] = (ga_plot_run_t){.label = rp->cols[i].label, .sampler = &rp->cols[i].sampler,
                                  .ooms = rp->cols[i].ooms, .n_ooms = rp->cols[i].n_ooms};
    int rc = ga_outputs_plot_runs(path, title, rp->device_memory, rp->events, runs, rp->n_cols, err, errlen);
    free(runs);
    return rc;
}

/* What a snapshot adds to its replay (snapshot format, a file not stdin):
 * the device size its oom entries tell, when --device-memory is not given
 * (replaying on a larger device would hide the very OOM being studied); and,
 * for a trace that starts mid-run, the allocator state at its first entry
 * (seed.h), unless --no-seed. Returns whether *seed was made. Problems are
 * left to the reader to report: the replay then runs as for any trace. */
static bool snapshot_context(const cli_t *c, ga_reader_t *r, const char *path, size_t unit, uint64_t *mem,
                             ga_seed_t *seed)
{
    if (ga_reader_format(r) != GA_FORMAT_TORCH || strcmp(path, "-") == 0)
        return false;
    ga_snap_view_t v;
    char err[512];
    if (ga_snap_view_load(path, -1, unit, &v, err, sizeof(err)) != 0)
        return false;
    if (*mem == 0)
        *mem = v.device_memory;
    ga_reader_notes_t n;
    ga_reader_notes(r, &n);
    bool midrun = v.untraced_blocks > 0 || v.untraced_segments > 0 || n.prologue > 0;
    bool made = midrun && !c->no_seed && ga_seed_from_snapshot(path, v.device, seed, err, sizeof(err)) == 0;
    ga_snap_view_free(&v);
    return made;
}

/* The files this unit's outputs go to: --snapshot one per configuration,
 * --plot one, numbered (FILE.N.ext) when the run makes several. */
static void output_names(cli_t *c, bool single, size_t nc, char ***snaps, char **plot_path)
{
    *snaps = NULL;
    *plot_path = NULL;
    if (c->snapshot != NULL) {
        *snaps = calloc(nc, sizeof(**snaps));
        for (size_t i = 0; *snaps != NULL && i < nc; i++)
            (*snaps)[i] = ga_outputs_name(c->snapshot, c->n_snapshots++, single && nc == 1 ? 1 : 2);
    }
    if (c->plot != NULL)
        *plot_path = ga_outputs_name(c->plot, c->n_plots++, single ? 1 : 2);
}

/* A unit that replayed: its plot, and the exit code it asks for (2 for bad
 * input, a configuration that could not be made or a file not written, else
 * 1 for an OOM). t gets the results. */
static int judge(const ga_replay_t *rp, const char *plot_path, const char *title, ga_report_trace_t *t,
                 char *plot_err, size_t errlen)
{
    int code = GA_EXIT_OK;
    t->rp = rp;
    if (rp->read_failed) { /* no verdict and no plot of a trace cut short (report) */
        t->error = rp->read_error;
        return GA_EXIT_USAGE;
    }
    for (size_t i = 0; i < rp->n_cols; i++) {
        if (rp->cols[i].create_status != GALLOC_OK || rp->cols[i].snapshot_error[0])
            code = GA_EXIT_USAGE;
        else if (rp->cols[i].ooms_total > 0 && code == GA_EXIT_OK)
            code = GA_EXIT_OOM;
    }
    if (plot_path != NULL) {
        if (write_plot(plot_path, title, rp, plot_err, errlen) == 0) {
            t->plot_path = plot_path;
        } else {
            t->plot_error = plot_err;
            code = GA_EXIT_USAGE;
        }
    }
    return code;
}

/* Every problem once, on stderr; then the report on stdout. A trace that
 * failed to read has no verdict: a table of the events before the error
 * would read as "fits", so text prints nothing and JSON an entry with the
 * error and no results. */
static void report(cli_t *c, ga_report_trace_t *t, const char *title)
{
    if (t->error != NULL)
        fprintf(stderr, "galloc replay: %s\n", t->error);
    for (size_t i = 0; t->rp != NULL && i < t->rp->n_cols; i++) {
        const ga_replay_column_t *col = &t->rp->cols[i];
        if (col->create_status != GALLOC_OK)
            fprintf(stderr, "galloc replay: %s: configuration \"%s\": %s\n", title, col->label, col->create_error);
        if (col->snapshot_path != NULL && col->snapshot_error[0])
            fprintf(stderr, "galloc replay: %s: configuration \"%s\": snapshot: %s\n", title, col->label,
                    col->snapshot_error);
    }
    if (t->plot_error != NULL)
        fprintf(stderr, "galloc replay: %s: plot: %s\n", title, t->plot_error);
    if (t->error != NULL)
        t->rp = NULL;
    if (t->error != NULL && !c->json)
        return;
    if (c->json) {
        ga_report_json_trace(stdout, t, c->first_json);
        c->first_json = false;
    } else {
        ga_report_text(stdout, t);
    }
    fflush(stdout);
}

/* Replay one unit of an open reader and report it. Returns the exit code
 * this trace asks for. */
static int replay_unit(cli_t *c, ga_reader_t *r, const char *path, size_t unit, bool single_file)
{
    char err[512] = "", plot_err[512] = "", title[600];
    const char *unit_label = ga_reader_unit_label(r, unit);
    size_t nc = c->n_confs ? c->n_confs : 1;
    char **snaps, *plot_path;
    output_names(c, single_file && ga_reader_units(r) == 1, nc, &snaps, &plot_path);
    ga_replay_t rp;
    memset(&rp, 0, sizeof(rp));
    ga_progress_t prog;
    snprintf(title, sizeof(title), "%s%s%s", path, unit_label[0] ? " " : "", unit_label);
    ga_progress_start(&prog, title, isatty(STDERR_FILENO) == 1);
    int rc = -1;
    bool positioned = unit == 0 || ga_reader_begin(r, unit, err, sizeof(err)) == 0;
    uint64_t mem = c->device_memory;
    ga_seed_t seed;
    bool seeded = positioned && snapshot_context(c, r, path, unit, &mem, &seed);
    /* no --conf: the run as recorded, so segments go where the trace says */
    ga_replay_opts_t o = {.backend = c->backend, .device = ga_reader_unit_device(r, unit),
                          .device_memory = mem, .sample = c->plot != NULL,
                          .place_recorded = c->n_confs == 0 && !c->no_recorded,
                          .seed = seeded ? &seed : NULL, .env = c->env, .no_sleep = c->no_sleep,
                          .snapshot_paths = (const char *const *)snaps, .snapshot_ops = &ga_outputs_snapshot_ops,
                          .snapshot_range = c->snapshot_range,
                          .snapshot_first = c->snapshot_first, .snapshot_last = c->snapshot_last,
                          .snapshot_max_entries = c->snapshot_max, .progress = ga_progress_update,
                          .progress_ctx = &prog};
    const char *recorded = c->recorded;
    const char *const *confs = c->have_recorded ? &recorded : c->confs;
    if (positioned)
        rc = ga_replay_run(r, &o, confs, c->have_recorded ? 1 : c->n_confs, &rp);
    ga_progress_done(&prog);
    ga_report_trace_t t = {.path = path, .unit = unit_label, .format = ga_reader_format(r),
                           .backend = c->backend ? c->backend : "sim",
                           .settings = c->have_recorded ? c->recorded : NULL, .settings_text = c->recorded_text,
                           .device_from_snapshot = mem != c->device_memory,
                           .device_from_trace = mem == 0 && ga_reader_device_memory(r) != 0,
                           .seed = seeded ? &seed : NULL};
    if (rc != 0)
        t.error = err[0] ? err : rp.read_error;
    int code = rc != 0 ? GA_EXIT_USAGE : judge(&rp, plot_path, title, &t, plot_err, sizeof(plot_err));
    report(c, &t, title);
    if (rc == 0)
        ga_replay_release(&rp);
    for (size_t i = 0; snaps != NULL && i < nc; i++)
        free(snaps[i]);
    free(snaps);
    free(plot_path);
    if (seeded)
        ga_seed_free(&seed);
    return code;
}

/* The environment's allocator variables are applied only with --env (and
 * then named in every column's label); without it, a variable that is set
 * is said on stderr, so the report itself is the same whatever the shell
 * exports. */
static void print_environment(bool env)
{
    char e[512];
    if (!env && ga_replay_env_text(e, sizeof(e)) > 0)
        fprintf(stderr, "galloc replay: note: %s is set and not applied (--env applies it)\n", e);
}

/* A PyTorch snapshot replays under its own recorded allocator_settings
 * unless --conf or --no-recorded says otherwise: the point of replaying it is
 * to see what that job's allocator did. settings.c owns the mapping. */
static int recorded_settings(cli_t *c, ga_reader_t *r, const char *path)
{
    c->have_recorded = false;
    if (c->n_confs > 0 || c->no_recorded || ga_reader_format(r) != GA_FORMAT_TORCH || strcmp(path, "-") == 0)
        return 0;
    char err[512];
    int rc = ga_torch_recorded_conf(path, c->recorded, sizeof(c->recorded), c->recorded_text,
                                  sizeof(c->recorded_text), err, sizeof(err));
    if (rc < 0) {
        fprintf(stderr, "galloc replay: %s\n", err);
        return -1;
    }
    c->have_recorded = rc == 1;
    return 0;
}

static int worst(int a, int b)
{
    return a == GA_EXIT_USAGE || b == GA_EXIT_USAGE ? GA_EXIT_USAGE : a > b ? a : b;
}

int ga_replay_main(int argc, char **argv)
{
    cli_t c = {.format = GA_FORMAT_AUTO, .first_json = true};
    int rc = parse_args(&c, argc, argv);
    if (rc != 0) {
        free(c.confs);
        return rc < 0 ? GA_EXIT_OK : rc;
    }
    const char *backend = c.backend ? c.backend : "sim";
    print_environment(c.env);
    if (c.json && c.verify)
        ga_verify_json_begin(stdout);
    else if (c.json)
        ga_report_json_begin(stdout, backend, c.env);
    int code = GA_EXIT_OK;
    bool single_file = argc - optind == 1;
    for (int i = optind; i < argc; i++) {
        const char *path = argv[i];
        char err[512];
        ga_reader_t *r = NULL;
        if (ga_reader_open(path, c.format, &r, err, sizeof(err)) != 0) {
            fprintf(stderr, "galloc replay: %s\n", err);
            code = GA_EXIT_USAGE;
            if (c.json && !c.verify) { /* the document still lists every file named */
                ga_report_trace_t t = {.path = path, .unit = "", .format = c.format, .backend = backend,
                                       .error = err};
                ga_report_json_trace(stdout, &t, c.first_json);
                c.first_json = false;
            }
            continue;
        }
        if (c.verify) {
            ga_verify_opts_t vo = {.backend = c.backend, .device_memory = c.device_memory,
                                   .conf = c.n_confs ? c.confs[0] : NULL, .json = c.json};
            for (size_t u = 0; u < ga_reader_units(r); u++) {
                code = worst(code, ga_verify_unit(r, path, u, &vo, c.first_json, stdout));
                c.first_json = false;
            }
            ga_reader_close(r);
            continue;
        }
        if (recorded_settings(&c, r, path) != 0) {
            code = GA_EXIT_USAGE;
            ga_reader_close(r);
            continue;
        }
        for (size_t u = 0; u < ga_reader_units(r); u++)
            code = worst(code, replay_unit(&c, r, path, u, single_file));
        ga_reader_close(r);
    }
    if (c.json && c.verify)
        ga_verify_json_end(stdout);
    else if (c.json)
        ga_report_json_end(stdout);
    fflush(stdout);
    free(c.confs);
    return code;
}
