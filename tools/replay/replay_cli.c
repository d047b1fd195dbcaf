/*
 * replay_cli.c: `galloc replay [options] TRACE...`: parse options, replay each
 * trace (each unit of a multi-device snapshot) through every --conf, print the
 * comparison, write the optional snapshot and plot files, and choose the exit
 * code (2 for bad input or usage beats 1 for an OOM beats 0).
 */
#include "tools/replay/replay_cli.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/engine/replay.h"
#include "tools/job/job.h"
#include "tools/readers/trace_reader.h"
#include "tools/readers/units.h"
#include "tools/replay/compare.h"
#include "tools/replay/progress.h"
#include "tools/replay/verify.h"
#include "tools/report/options.h"
#include "tools/report/outputs.h"
#include "tools/report/report.h"

typedef struct cli {
    const char *backend;    /* --backend, "sim" by default */
    uint64_t device_memory; /* --device-memory, 0 = from the trace or 80 GiB */
    uint64_t reserve;       /* --reserve: memory outside the allocator, taken off a device total */
    const char **confs;     /* --conf strings, n_confs of them */
    size_t n_confs;
    ga_format_t format;      /* --format */
    bool json;               /* --json */
    const char *snapshot;    /* --snapshot FILE */
    bool snapshot_range;     /* --snapshot-range given */
    uint64_t snapshot_first; /* its FIRST event index */
    uint64_t snapshot_last;  /* its LAST event index (UINT64_MAX: to the end) */
    size_t snapshot_max;     /* --snapshot-max-entries, 0 = all */
    bool no_recorded;        /* --no-recorded: PyTorch's defaults, not the snapshot's settings */
    bool verify;             /* --verify: compare the replay with the snapshot's record */
    bool no_seed;            /* --no-seed: a mid-run snapshot starts from the reader's prologue */
    bool env;                /* --env: apply the environment's allocator variables under every column */
    bool no_sleep;           /* --no-sleep: the trace's sleep and wake events are skipped */
    const char *plot;        /* --plot FILE */
    size_t top;              /* --top N: sites shown per moment of the owners */
    bool no_owners;          /* --no-owners: no attribution (a faster replay) */
    bool compare;            /* --compare A B: two records' owners side by side (compare.h) */
    size_t n_snapshots;      /* snapshot files named so far (numbering) */
    size_t n_plots;          /* plot files named so far */
    bool first_json;         /* no trace written into the JSON document yet */
} cli_t;

void ga_replay_usage(FILE *out)
{
    char formats[128];
    ga_reader_format_list(formats, sizeof(formats));
    fputs("usage: galloc replay [options] TRACE...\n"
          "       galloc replay --compare [options] A B\n"
          "Replay allocation traces through galloc on a simulated GPU, one column per --conf.\n"
          "\n"
          "  --conf STRING         an allocator configuration (PYTORCH_CUDA_ALLOC_CONF syntax, e.g.\n"
          "                        expandable_segments:True or max_split_size_mb:512); repeat to\n"
          "                        compare; \"\" is PyTorch's defaults. None: the run as recorded, a\n"
          "                        column labelled \"recorded\" (a snapshot's own allocator_settings,\n"
          "                        its segments at the recorded addresses), else PyTorch's defaults\n"
          "  --device-memory SIZE  simulated device size (80GiB, 512MiB, 1.5GB, bytes); default:\n"
          "                        the size recorded in the trace (a snapshot's oom entries:\n"
          "                        reserved + device_free), else 80GiB\n"
          "  --reserve SIZE        memory on the device the allocator does not own (CUDA context,\n"
          "                        library workspaces, NCCL, other processes), taken off a device's\n"
          "                        total (--device-memory, a trace header, deviceProperties)\n"
          "  --backend NAME        device backend (default sim)\n",
          out);
    fprintf(out, "  --format FMT          auto (default), %s\n", formats);
    fputs("  --json                print one JSON document (memory_stats with PyTorch's keys)\n"
          "  --no-recorded         ignore a snapshot's recorded allocator_settings: PyTorch's defaults\n"
          "  --no-seed             a snapshot trace that starts mid-run: replay the blocks live before\n"
          "                        it as plain allocations instead of rebuilding the allocator state\n"
          "                        at its first entry from the final segments\n"
          "  --snapshot FILE       write a PyTorch memory snapshot at the first OOM the traced run\n"
          "                        did not have, or at the end (FILE.json for JSON); given once: with\n"
          "                        several configurations or devices, one file per column, FILE.N.ext,\n"
          "                        each named in the report\n"
          "  --snapshot-range FIRST:LAST  record only events FIRST..LAST (0-based replay event\n"
          "                        indices; LAST may be empty: to the end) and write the state after\n"
          "                        LAST, so a huge trace's window opens in the memory visualizer\n"
          "  --snapshot-max-entries N  keep only the last N trace entries (PyTorch's max_entries)\n"
          "  --env                 also apply the environment's PYTORCH_ALLOC_CONF (else\n"
          "                        PYTORCH_CUDA_ALLOC_CONF) and GALLOC_CONF under every column, named\n"
          "                        in its label; without it they are not read: the answer depends\n"
          "                        only on the command line and the trace\n"
          "  --top N               the sites shown per moment in \"who holds the memory\" (default 10;\n"
          "                        --json lists every site)\n"
          "  --no-owners           do not attribute memory to the code that allocated it (the report's\n"
          "                        \"who holds the memory\" and --json's \"owners\"): a faster replay\n"
          "  --plot FILE           plot memory over the replay (.png or .svg): per configuration, the\n"
          "                        live bytes stacked by site (the 8 largest at the first OOM, else\n"
          "                        at the reserved peak, and \"other sites\") under the reserved line,\n"
          "                        with the peaks and OOMs marked; with --no-owners, requested /\n"
          "                        allocated / reserved lines\n"
          "  --no-sleep            skip the trace's sleep and wake events (tags are still begun and\n"
          "                        ended), to compare the peaks with and without sleeping\n"
          "  --compare A B         two records of one job (before and after a change, two ranks):\n"
          "                        replay each as recorded (or both under one --conf) with owners,\n"
          "                        and list the sites whose bytes at the reserved peak grew or shrank\n"
          "                        most, matched by name (--top N rows; --json: every site, both\n"
          "                        peaks); devices paired by label. Not with --verify, --snapshot,\n"
          "                        --plot, --no-owners or several --conf; exit 0 when both replayed\n"
          "  --verify              TRACE is a PyTorch snapshot: replay it under its recorded settings\n"
          "                        (or --conf) and compare galloc's device events (segment_alloc,\n"
          "                        segment_free, segment_map, segment_unmap, oom) and final segments\n"
          "                        with the recorded ones (pools by correspondence; orphan entries are\n"
          "                        named, not compared); exit 1 on a divergence, 3 when the snapshot\n"
          "                        holds nothing the replay reproduces\n"
          "  -h, --help            this text\n"
          "\n"
          "TRACE: a file in one of these formats (told from its first bytes unless --format names\n"
          "one); - reads standard input:\n",
          out);
    ga_reader_format_help(out);
    fputs("Exit status: 0 no OOM, 1 an OOM in some configuration, 2 bad usage or input; with\n"
          "--verify: 0 agrees, 1 diverges, 2 cannot verify (bad input, or a mid-run state that\n"
          "cannot be rebuilt), 3 nothing to verify (no trace, or none of its entries is replayed);\n"
          "over several devices or files the worst of 2, 1, 0, and 3 only when all are 3.\n",
          out);
}

#define CMD "replay"

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

/* --snapshot-range FIRST:LAST. */
static int take_range(const char *value, void *cli)
{
    cli_t *c = cli;
    if (parse_range(value, &c->snapshot_first, &c->snapshot_last) != 0)
        return -1;
    c->snapshot_range = true;
    return 0;
}

/* --conf, repeated: confs has room for every argument. */
static int take_conf(const char *value, void *cli)
{
    cli_t *c = cli;
    c->confs[c->n_confs++] = value;
    return 0;
}

/* --snapshot FILE, once: a second name would silently replace the first. */
static int take_snapshot(const char *value, void *cli)
{
    cli_t *c = cli;
    if (c->snapshot != NULL)
        return -1;
    c->snapshot = value;
    return 0;
}

/* What the options say together, and the output paths, before the replay
 * rather than after minutes of it. */
static int check_args(const cli_t *c)
{
    if (c->compare && (c->verify || c->snapshot != NULL || c->plot != NULL || c->no_owners || c->n_confs > 1))
        return ga_report_usage_error(CMD, "%s",
                                     "--compare takes at most one --conf (both records replay it), and no --verify, "
                                     "--snapshot, --plot or --no-owners");
    if (c->verify && (c->n_confs > 1 || c->snapshot != NULL || c->plot != NULL))
        return ga_report_usage_error(CMD, "%s", "--verify takes at most one --conf, and no --snapshot or --plot");
    if ((c->snapshot_range || c->snapshot_max) && c->snapshot == NULL)
        return ga_report_usage_error(CMD, "%s", "--snapshot-range and --snapshot-max-entries need --snapshot FILE");
    if (c->snapshot != NULL && !ga_outputs_have_snapshot())
        return ga_report_usage_error(CMD, "--snapshot %s: not available yet (the snapshot writer is not in this build)",
                                     c->snapshot);
    if (c->plot != NULL && !ga_outputs_have_plot())
        return ga_report_usage_error(CMD, "--plot %s: not available yet (the plot writer is not in this build)",
                                     c->plot);
    int rc = ga_opts_check_plot(CMD, c->plot);
    if (rc == 0)
        rc = ga_opts_check_reserve(CMD, c->device_memory, c->reserve);
    if (rc != 0)
        return rc;
    char err[512];
    if (c->snapshot != NULL && ga_outputs_check_writable(c->snapshot, err, sizeof(err)) != 0)
        return ga_report_usage_error(CMD, "--snapshot %s", err);
    return 0;
}

static int parse_args(cli_t *c, int argc, char **argv)
{
    const ga_opt_t opts[] = {
        GA_OPT_DEVICE_MEMORY(&c->device_memory),
        GA_OPT_RESERVE(&c->reserve),
        GA_OPT_TRACE_FORMAT(&c->format),
        GA_OPT_JSON(&c->json),
        GA_OPT_ENV(&c->env),
        GA_OPT_NO_SLEEP(&c->no_sleep),
        GA_OPT_NO_RECORDED(&c->no_recorded),
        GA_OPT_PLOT(&c->plot),
        {"backend", GA_OPT_STRING, ga_opt_str(&c->backend), NULL, 0, NULL},
        {"conf", GA_OPT_CALL, c, NULL, 0, take_conf},
        {"snapshot", GA_OPT_CALL, c,
         "--snapshot %s: given twice; give it once: several configurations or devices write one numbered file "
         "each (FILE.N.ext), named in the report",
         0, take_snapshot},
        {"snapshot-range", GA_OPT_CALL, c, "bad --snapshot-range \"%s\" (FIRST:LAST event indices, FIRST <= LAST)", 0,
         take_range},
        {"snapshot-max-entries", GA_OPT_COUNT, &c->snapshot_max,
         "bad --snapshot-max-entries \"%s\" (a positive number of entries)", SIZE_MAX, NULL},
        {"verify", GA_OPT_FLAG, ga_opt_bool(&c->verify), NULL, 0, NULL},
        {"no-seed", GA_OPT_FLAG, ga_opt_bool(&c->no_seed), NULL, 0, NULL},
        {"top", GA_OPT_COUNT, &c->top, "bad --top \"%s\" (a positive number of sites)", 1000000, NULL},
        {"no-owners", GA_OPT_FLAG, ga_opt_bool(&c->no_owners), NULL, 0, NULL},
        {"compare", GA_OPT_FLAG, ga_opt_bool(&c->compare), NULL, 0, NULL},
    };
    c->confs = calloc((size_t)argc + 1, sizeof(*c->confs));
    if (c->confs == NULL)
        return ga_report_usage_error(CMD, "%s", "out of host memory");
    int rc = ga_opts_parse(CMD, opts, sizeof(opts) / sizeof(opts[0]), ga_replay_usage, argc, argv);
    if (rc == 0 && c->compare && argc - optind != 2)
        return ga_report_usage_error(CMD, "--compare takes exactly two traces, A and B (%s given)",
                                     argc - optind == 1 ? "one" : "more");
    return rc != 0 ? rc : check_args(c);
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
        runs[i] = (ga_plot_run_t){.label = rp->cols[i].label,
                                  .sampler = &rp->cols[i].sampler,
                                  .ooms = rp->cols[i].ooms,
                                  .n_ooms = rp->cols[i].n_ooms,
                                  .ooms_total = rp->cols[i].ooms_total,
                                  .owners = rp->cols[i].owners};
    int rc = ga_outputs_plot_runs(path, title, rp->device_memory, rp->events, runs, rp->n_cols, err, errlen);
    free(runs);
    return rc;
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

/* A unit that replayed: its plot, and the exit code it asks for (2 for a
 * configuration that could not be made or a file not written, else 1 for an
 * OOM). t gets the results. */
static int judge(const ga_replay_t *rp, const char *plot_path, const char *title, ga_report_trace_t *t, char *plot_err,
                 size_t errlen)
{
    int code = GA_EXIT_OK;
    t->rp = rp;
    for (size_t i = 0; i < rp->n_cols; i++) {
        if (rp->cols[i].create_status != GALLOC_OK || rp->cols[i].snapshot_error[0])
            code = GA_EXIT_USAGE;
        else if (!ga_replay_fits(&rp->cols[i]) && code == GA_EXIT_OK)
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

/* Every problem once, on stderr; then the report on stdout. */
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

/* The columns: each --conf, or the unit's own run (its recorded settings,
 * or PyTorch's defaults under --no-recorded or without any). */
static size_t make_specs(const cli_t *c, const ga_job_unit_t *u, ga_replay_spec_t *specs)
{
    if (c->n_confs == 0) {
        specs[0] = c->no_recorded ? (ga_replay_spec_t){.conf = ""} : ga_replay_default_spec(u);
        return 1;
    }
    for (size_t i = 0; i < c->n_confs; i++)
        specs[i] = (ga_replay_spec_t){.conf = c->confs[i]};
    return c->n_confs;
}

/* Replay one unit of the loaded job and report it. Returns the exit code
 * this trace asks for. */
static int replay_unit(cli_t *c, const ga_job_unit_t *u, bool single_file, size_t units, double load_seconds)
{
    char plot_err[512] = "";
    size_t nc = c->n_confs ? c->n_confs : 1;
    ga_replay_spec_t *specs = calloc(nc, sizeof(*specs));
    char **snaps, *plot_path;
    output_names(c, single_file && units == 1, nc, &snaps, &plot_path);
    ga_replay_t rp;
    memset(&rp, 0, sizeof(rp));
    ga_progress_t prog;
    ga_progress_start(&prog, u->label, isatty(STDERR_FILENO) == 1);
    ga_replay_opts_t o = {.backend = c->backend,
                          .sample = c->plot != NULL,
                          .env = c->env,
                          .no_sleep = c->no_sleep,
                          .snapshot_paths = (const char *const *)snaps,
                          .snapshot_ops = &ga_outputs_snapshot_ops,
                          .snapshot_range = c->snapshot_range,
                          .snapshot_first = c->snapshot_first,
                          .snapshot_last = c->snapshot_last,
                          .snapshot_max_entries = c->snapshot_max,
                          .no_seed = c->no_seed,
                          .owners = !c->no_owners,
                          .progress = ga_progress_update,
                          .progress_ctx = &prog};
    int rc = -1;
    if (specs != NULL && (c->snapshot == NULL || snaps != NULL))
        rc = ga_replay_run(u, &o, specs, make_specs(c, u, specs), &rp);
    ga_progress_done(&prog);
    ga_report_trace_t t = {.path = u->path,
                           .u = u,
                           .format = u->format,
                           .backend = c->backend ? c->backend : "sim",
                           .load_seconds = load_seconds,
                           .top = c->no_owners ? 0 : c->top};
    if (rc != 0)
        t.error = "out of host memory replaying the trace";
    int code = rc != 0 ? GA_EXIT_USAGE : judge(&rp, plot_path, u->label, &t, plot_err, sizeof(plot_err));
    report(c, &t, u->label);
    if (rc == 0)
        ga_replay_release(&rp);
    for (size_t i = 0; snaps != NULL && i < nc; i++)
        free(snaps[i]);
    free(snaps);
    free(plot_path);
    free(specs);
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

static int worst(int a, int b)
{
    return a == GA_EXIT_USAGE || b == GA_EXIT_USAGE ? GA_EXIT_USAGE : a > b ? a : b;
}

/* A file that could not be read: said on stderr, and in the JSON document,
 * which still lists every file named. */
static void unreadable(cli_t *c, const char *path, const char *err, const char *backend)
{
    fprintf(stderr, "galloc replay: %s\n", err);
    if (c->json && !c->verify) {
        ga_report_trace_t t = {.path = path, .format = c->format, .backend = backend, .error = err};
        ga_report_json_trace(stdout, &t, c->first_json);
        c->first_json = false;
    }
}

/* One file: read it once into a job, then every unit through every column
 * (or --verify). Returns its exit code. */
static int one_file(cli_t *c, const char *path, bool single_file, const char *backend)
{
    char err[1024];
    ga_job_t job;
    memset(&job, 0, sizeof(job));
    ga_progress_t prog;
    ga_progress_start(&prog, path, isatty(STDERR_FILENO) == 1);
    ga_job_opts_t jo = {.format = c->format,
                        .device_memory = c->device_memory,
                        .reserve = c->reserve,
                        .no_seed = c->no_seed,
                        .progress = ga_progress_update,
                        .progress_ctx = &prog};
    double t0 = ga_progress_now();
    int rc = ga_job_add(&job, path, &jo, err, sizeof(err));
    ga_replay_infer_caps(&job, c->backend, c->env);
    double load = ga_progress_now() - t0;
    ga_progress_done(&prog);
    if (rc != 0) {
        unreadable(c, path, err, backend);
        ga_job_free(&job); /* what a failed load leaves (its grown tables) */
        return GA_EXIT_USAGE;
    }
    int code = GA_EXIT_OK;
    if (c->verify) {
        ga_verify_opts_t vo = {.backend = c->backend, .conf = c->n_confs ? c->confs[0] : NULL, .json = c->json};
        code = GA_VERIFY_NOTHING;
        for (size_t u = 0; u < job.n_units; u++) {
            code = ga_verify_worst(code, ga_verify_unit(&job.units[u], &vo, c->first_json, stdout));
            c->first_json = false;
        }
    } else {
        for (size_t u = 0; u < job.n_units; u++)
            code = worst(code, replay_unit(c, &job.units[u], single_file, job.n_units, load));
    }
    ga_job_free(&job);
    return code;
}

/* --compare A B (compare.h), with the options that apply to it. */
static int compare(const cli_t *c, const char *a, const char *b)
{
    ga_compare_opts_t o = {
        .backend = c->backend,
        .conf = c->n_confs ? c->confs[0] : NULL,
        .no_recorded = c->no_recorded,
        .job = {.format = c->format, .device_memory = c->device_memory, .reserve = c->reserve, .no_seed = c->no_seed},
        .env = c->env,
        .no_sleep = c->no_sleep,
        .json = c->json,
        .top = c->top};
    return ga_compare_main(&o, a, b, stdout);
}

int ga_replay_main(int argc, char **argv)
{
    cli_t c = {.format = GA_FORMAT_AUTO, .first_json = true, .top = GA_REPORT_TOP};
    int rc = parse_args(&c, argc, argv);
    if (rc != 0) {
        free(c.confs);
        return rc < 0 ? GA_EXIT_OK : rc;
    }
    const char *backend = c.backend ? c.backend : "sim";
    print_environment(c.env);
    if (c.compare) {
        rc = compare(&c, argv[optind], argv[optind + 1]);
        free(c.confs);
        return rc;
    }
    if (c.json && c.verify)
        ga_verify_json_begin(stdout);
    else if (c.json)
        ga_report_json_begin(stdout, backend, c.env);
    int code = c.verify ? GA_VERIFY_NOTHING : GA_EXIT_OK;
    bool single_file = argc - optind == 1;
    for (int i = optind; i < argc; i++) {
        int one = one_file(&c, argv[i], single_file, backend);
        code = c.verify ? ga_verify_worst(code, one) : worst(code, one);
    }
    if (c.json && c.verify)
        ga_verify_json_end(stdout);
    else if (c.json)
        ga_report_json_end(stdout);
    fflush(stdout);
    free(c.confs);
    return code;
}
