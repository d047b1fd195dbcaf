/*
 * replay_cli.c: `galloc replay [options] TRACE...`: parse options, replay each
 * trace (each unit of a multi-device snapshot) through every --conf, print the
 * comparison, write the optional snapshot and plot files, and choose the exit
 * code (2 for bad input or usage beats 1 for an OOM beats 0).
 */
#include "tools/replay_cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/outputs.h"
#include "tools/progress.h"
#include "tools/replay.h"
#include "tools/report.h"
#include "tools/trace_reader.h"
#include "tools/units.h"

typedef struct cli {
    const char *backend;      /* --backend, "sim" by default */
    uint64_t device_memory;   /* --device-memory, 0 = from the trace or 80 GiB */
    const char **confs;       /* --conf strings, n_confs of them */
    size_t n_confs;
    ga_format_t format;       /* --format */
    bool json;                /* --json */
    const char *snapshot;     /* --snapshot FILE */
    const char *plot;         /* --plot FILE */
    size_t n_snapshots;       /* snapshot files named so far (numbering) */
    size_t n_plots;           /* plot files named so far */
    bool first_json;          /* no trace written into the JSON document yet */
} cli_t;

void ga_replay_usage(FILE *out)
{
    fputs("usage: galloc replay [options] TRACE...\n"
          "Replay allocation traces through galloc on a simulated GPU, one column per --conf.\n"
          "\n"
          "  --conf STRING         an allocator configuration (PYTORCH_CUDA_ALLOC_CONF syntax, e.g.\n"
          "                        expandable_segments:True or max_split_size_mb:512); repeat to\n"
          "                        compare; none means PyTorch's defaults\n"
          "  --device-memory SIZE  simulated device size (80GiB, 512MiB, 1.5GB, bytes); default:\n"
          "                        the size recorded in the trace, else 80GiB\n"
          "  --backend NAME        device backend (default sim)\n"
          "  --format FMT          auto (default), rmm, torch, galloc\n"
          "  --json                print one JSON document (memory_stats with PyTorch's keys)\n"
          "  --snapshot FILE       write a PyTorch memory snapshot at the first OOM or at the end\n"
          "                        (FILE.json for JSON); numbered FILE.N.ext when several\n"
          "  --plot FILE           plot requested / allocated / reserved memory over the replay\n"
          "  -h, --help            this text\n"
          "\n"
          "TRACE: a RAPIDS RMM log (CSV), a PyTorch snapshot (torch.cuda.memory._dump_snapshot\n"
          "pickle) or a galloc text trace (docs/trace-format.md); - reads standard input.\n"
          "Exit status: 0 no OOM, 1 an OOM in some configuration, 2 bad usage or input.\n",
          out);
}

static int usage_error(const char *fmt, const char *arg)
{
    fputs("galloc replay: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs("\n(galloc replay --help for usage)\n", stderr);
    return GA_EXIT_USAGE;
}

static int parse_args(cli_t *c, int argc, char **argv)
{
    enum { O_BACKEND = 256, O_MEM, O_CONF, O_FORMAT, O_JSON, O_SNAPSHOT, O_PLOT };
    static const struct option opts[] = {
        {"backend", required_argument, NULL, O_BACKEND},   {"device-memory", required_argument, NULL, O_MEM},
        {"conf", required_argument, NULL, O_CONF},         {"format", required_argument, NULL, O_FORMAT},
        {"json", no_argument, NULL, O_JSON},               {"snapshot", required_argument, NULL, O_SNAPSHOT},
        {"plot", required_argument, NULL, O_PLOT},         {"help", no_argument, NULL, 'h'},
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
                return usage_error("bad --format \"%s\" (auto, rmm, torch, galloc)", optarg);
            break;
        case O_JSON: c->json = true; break;
        case O_SNAPSHOT: c->snapshot = optarg; break;
        case O_PLOT: c->plot = optarg; break;
        case 'h': ga_replay_usage(stdout); return -1;
        case ':': return usage_error("option %s needs a value", argv[optind - 1]);
        default: return usage_error("unknown option %s", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return usage_error("%s", "no trace file given");
    if (c->snapshot != NULL && !ga_outputs_have_snapshot())
        return usage_error("--snapshot %s: not available yet (the snapshot writer is not in this build)", c->snapshot);
    if (c->plot != NULL && !ga_outputs_have_plot())
        return usage_error("--plot %s: not available yet (the plot writer is not in this build)", c->plot);
    return 0;
}

/* Write the plot of one replayed trace. Returns 0, or -1 with err set. */
static int write_plot(const char *path, const char *title, const ga_replay_t *rp, char *err, size_t errlen)
{
    size_t nm = 0;
    for (size_t i = 0; i < rp->n_cols; i++)
        nm += rp->cols[i].n_ooms;
    ga_series_t *s = calloc(rp->n_cols ? rp->n_cols : 1, sizeof(*s));
    ga_oom_marker_t *m = calloc(nm ? nm : 1, sizeof(*m));
    int rc = -1;
    if (s == NULL || m == NULL) {
        snprintf(err, errlen, "%s: out of host memory", path);
        goto out;
    }
    size_t k = 0;
    for (size_t i = 0; i < rp->n_cols; i++) {
        ga_replay_series(rp, i, &s[i]);
        for (size_t j = 0; j < rp->cols[i].n_ooms; j++)
            m[k++] = (ga_oom_marker_t){(double)rp->cols[i].ooms[j].event, i};
    }
    ga_plot_input_t in = {.title = title, .device_memory = rp->device_memory, .events = rp->events,
                          .n_series = rp->n_cols, .series = s, .n_ooms = k, .ooms = m};
    rc = ga_outputs_plot(path, &in, err, errlen);
out:
    free(s);
    free(m);
    return rc;
}

/* Replay one unit of an open reader and report it. Returns the exit code
 * this trace asks for. */
static int replay_unit(cli_t *c, ga_reader_t *r, const char *path, size_t unit, bool single_file)
{
    int code = GA_EXIT_OK;
    char err[512] = "", plot_err[512] = "";
    const char *unit_label = ga_reader_unit_label(r, unit);
    bool single = single_file && ga_reader_units(r) == 1;
    size_t nc = c->n_confs ? c->n_confs : 1;
    char **snaps = NULL;
    char *plot_path = NULL;
    if (c->snapshot != NULL) {
        snaps = calloc(nc, sizeof(*snaps));
        for (size_t i = 0; snaps != NULL && i < nc; i++)
            snaps[i] = ga_outputs_name(c->snapshot, c->n_snapshots++, single && nc == 1 ? 1 : 2);
    }
    if (c->plot != NULL)
        plot_path = ga_outputs_name(c->plot, c->n_plots++, single ? 1 : 2);

    ga_replay_t rp;
    memset(&rp, 0, sizeof(rp));
    ga_progress_t prog;
    char title[600];
    snprintf(title, sizeof(title), "%s%s%s", path, unit_label[0] ? " " : "", unit_label);
    ga_progress_start(&prog, title, isatty(STDERR_FILENO) == 1);
    ga_replay_opts_t o = {.backend = c->backend, .device_memory = c->device_memory, .sample = c->plot != NULL,
                          .snapshot_paths = (const char *const *)snaps, .progress = ga_progress_update,
                          .progress_ctx = &prog};
    int rc = -1;
    if (unit == 0 || ga_reader_begin(r, unit, err, sizeof(err)) == 0)
        rc = ga_replay_run(r, &o, c->confs, c->n_confs, &rp);
    ga_progress_done(&prog);
    ga_report_trace_t t = {.path = path, .unit = unit_label, .format = ga_reader_format(r),
                           .backend = c->backend ? c->backend : "sim"};
    if (rc != 0) {
        t.error = err[0] ? err : rp.read_error;
        code = GA_EXIT_USAGE;
    } else {
        t.rp = &rp;
        if (rp.read_failed) {
            t.error = rp.read_error;
            code = GA_EXIT_USAGE;
        }
        for (size_t i = 0; i < rp.n_cols; i++) {
            if (rp.cols[i].create_status != GALLOC_OK || rp.cols[i].snapshot_error[0])
                code = GA_EXIT_USAGE;
            else if (rp.cols[i].ooms_total > 0 && code == GA_EXIT_OK)
                code = GA_EXIT_OOM;
        }
        if (plot_path != NULL) {
            if (write_plot(plot_path, title, &rp, plot_err, sizeof(plot_err)) == 0) {
                t.plot_path = plot_path;
            } else {
                t.plot_error = plot_err;
                code = GA_EXIT_USAGE;
            }
        }
    }
    if (t.error != NULL)
        fprintf(stderr, "galloc replay: %s\n", t.error);
    for (size_t i = 0; t.rp != NULL && i < rp.n_cols; i++)
        if (rp.cols[i].create_status != GALLOC_OK)
            fprintf(stderr, "galloc replay: %s: configuration \"%s\": %s\n", title, rp.cols[i].label,
                    rp.cols[i].create_error);
    if (c->json) {
        ga_report_json_trace(stdout, &t, c->first_json);
        c->first_json = false;
    } else {
        ga_report_text(stdout, &t);
    }
    fflush(stdout);
    if (rc == 0)
        ga_replay_release(&rp);
    for (size_t i = 0; snaps != NULL && i < nc; i++)
        free(snaps[i]);
    free(snaps);
    free(plot_path);
    return code;
}

/* galloc_allocator_create applies these under every --conf: say so, since a
 * forgotten export would otherwise silently change the "defaults" column. */
static void print_environment(void)
{
    static const char *const vars[] = {"PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", "GALLOC_CONF"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        if (getenv(vars[i]) != NULL)
            printf("note: %s=%s is set and applies under every column\n", vars[i], getenv(vars[i]));
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
    if (c.json)
        ga_report_json_begin(stdout, backend);
    else
        print_environment();
    int code = GA_EXIT_OK;
    bool single_file = argc - optind == 1;
    for (int i = optind; i < argc; i++) {
        const char *path = argv[i];
        char err[512];
        ga_reader_t *r = NULL;
        if (ga_reader_open(path, c.format, &r, err, sizeof(err)) != 0) {
            fprintf(stderr, "galloc replay: %s\n", err);
            ga_report_trace_t t = {.path = path, .unit = "", .format = c.format, .backend = backend,
                                   .error = err};
            if (c.json) {
                ga_report_json_trace(stdout, &t, c.first_json);
                c.first_json = false;
            } else {
                ga_report_text(stdout, &t);
            }
            code = GA_EXIT_USAGE;
            continue;
        }
        for (size_t u = 0; u < ga_reader_units(r); u++)
            code = worst(code, replay_unit(&c, r, path, u, single_file));
        ga_reader_close(r);
    }
    if (c.json)
        ga_report_json_end(stdout);
    fflush(stdout);
    free(c.confs);
    return code;
}
