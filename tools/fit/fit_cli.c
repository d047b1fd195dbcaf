/*
 * fit_cli.c: `galloc fit [options] TRACE...`: load the traces, run the search
 * (fit_search.c), draw the plot (fit_plot.c), print the ranked table or one
 * JSON document (fit_report.c), and choose the exit code: 2 for bad usage or
 * input, else 0 when some configuration fits and 1 when none does.
 *
 * Several traces (or a snapshot's several devices) are one job: a
 * configuration fits only if it fits every one, as a setting exported for a
 * distributed job applies to every rank.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/fit/fit.h"
#include "tools/readers/units.h"
#include "tools/report/outputs.h"
#include "tools/report/report.h"

typedef ga_fit_cli_t cli_t;

void ga_fit_usage(FILE *out)
{
    char formats[128];
    ga_reader_format_list(formats, sizeof(formats));
    fputs("usage: galloc fit [options] TRACE...|FOLDER...\n"
          "Search the PYTORCH_CUDA_ALLOC_CONF settings under which a traced job fits its device:\n"
          "a grid over expandable_segments, max_split_size_mb, roundup_power2_divisions (and\n"
          "garbage_collection_threshold when the trace sets a memory fraction, as PyTorch's GC\n"
          "needs one), refined around the best, replayed in parallel on a simulated GPU.\n"
          "Several traces are one job: a setting must fit them all. A FOLDER is a fleet: each\n"
          "trace in it (and each other trace named) is fitted on its own, one result per trace.\n"
          "\n"
          "  --device-memory SIZE  simulated device size (80GiB, 512MiB, bytes); default: each\n"
          "                        trace's recorded size, else 80GiB\n"
          "  --reserve SIZE        memory on the device the allocator does not own (CUDA context,\n"
          "                        library workspaces, NCCL, other processes): taken off a device's\n"
          "                        total and added to every smallest device (docs/fit.md)\n"
          "  --json                print one JSON document with every configuration\n"
          "  --jobs N              worker threads (default: every online CPU)\n"
          "  --bisect N|all        find the smallest fitting device size (2 MiB steps) for the N\n"
          "                        best configurations (default 10)\n"
          "  --max-configs N       replay at most N configurations (default: the whole search)\n"
          "  --top N               rows of the ranked table (default 15; --json has all)\n",
          out);
    fprintf(out, "  --format FMT          auto (default), %s\n", formats);
    fputs("  --no-recorded         ignore the allocator_settings a PyTorch snapshot recorded (by\n"
          "                        default they are replayed first and reported as the job's own)\n"
          "  --plot FILE           plot requested / allocated / reserved memory over time under the\n"
          "                        defaults and the winner, the defaults' OOM marked with its class\n"
          "                        (.png or .svg; FILE.N.ext per trace when several)\n"
          "  --env                 replay every configuration over the environment's\n"
          "                        PYTORCH_ALLOC_CONF (else PYTORCH_CUDA_ALLOC_CONF) and GALLOC_CONF;\n"
          "                        without it they are not read: the answer depends only on the\n"
          "                        command line and the traces\n"
          "  --no-sleep            skip the traces' sleep and wake events (tags are still begun and\n"
          "                        ended): does the job fit without sleeping?\n"
          "  -h, --help            this text\n"
          "\n"
          "Exit status: 0 some configuration fits, 1 none does, 2 bad usage or input.\n",
          out);
}

static int usage_error(const char *fmt, const char *arg)
{
    return ga_report_usage_error("fit", fmt, arg);
}

static bool parse_count(const char *s, size_t *out)
{
    uint64_t v;
    if (!ga_units_parse_u64(s, strlen(s), &v) || v == 0 || v > 1000000)
        return false;
    *out = (size_t)v;
    return true;
}

static int parse_args(cli_t *c, int argc, char **argv)
{
    enum { O_MEM = 256, O_JSON, O_JOBS, O_BISECT, O_MAX, O_TOP, O_FORMAT, O_NOREC, O_PLOT, O_ENV, O_NOSLEEP,
           O_RESERVE };
    static const struct option opts[] = {
        {"device-memory", required_argument, NULL, O_MEM}, {"json", no_argument, NULL, O_JSON},
        {"jobs", required_argument, NULL, O_JOBS},         {"bisect", required_argument, NULL, O_BISECT},
        {"max-configs", required_argument, NULL, O_MAX},   {"top", required_argument, NULL, O_TOP},
        {"format", required_argument, NULL, O_FORMAT},     {"help", no_argument, NULL, 'h'},
        {"no-recorded", no_argument, NULL, O_NOREC},       {"plot", required_argument, NULL, O_PLOT},
        {"env", no_argument, NULL, O_ENV},                 {"no-sleep", no_argument, NULL, O_NOSLEEP},
        {"reserve", required_argument, NULL, O_RESERVE},
        {NULL, 0, NULL, 0}};
    optind = 0; /* the command may run more than once in a process (tests) */
    opterr = 0;
    int o;
    size_t v;
    while ((o = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (o) {
        case O_MEM:
            if (!ga_units_parse_size(optarg, strlen(optarg), &c->device_memory) || c->device_memory == 0)
                return usage_error("bad --device-memory \"%s\" (e.g. 80GiB, 512MiB, 1.5GB or bytes)", optarg);
            break;
        case O_RESERVE:
            if (!ga_units_parse_size(optarg, strlen(optarg), &c->reserve))
                return usage_error("bad --reserve \"%s\" (e.g. 1GiB, 512MiB or bytes)", optarg);
            break;
        case O_JSON: c->json = true; break;
        case O_JOBS:
            if (!parse_count(optarg, &v) || v > 256)
                return usage_error("bad --jobs \"%s\" (1 to 256)", optarg);
            c->o.jobs = (unsigned)v;
            break;
        case O_BISECT:
            if (strcmp(optarg, "all") == 0)
                c->o.bisect = SIZE_MAX;
            else if (strcmp(optarg, "0") == 0)
                c->o.bisect = 0;
            else if (!parse_count(optarg, &c->o.bisect))
                return usage_error("bad --bisect \"%s\" (a count or all)", optarg);
            break;
        case O_MAX:
            if (!parse_count(optarg, &c->o.max_configs))
                return usage_error("bad --max-configs \"%s\" (a count >= 1)", optarg);
            break;
        case O_TOP:
            if (!parse_count(optarg, &c->top))
                return usage_error("bad --top \"%s\" (a count >= 1)", optarg);
            break;
        case O_FORMAT:
            if (!ga_reader_format_parse(optarg, &c->format))
                return ga_report_bad_format("fit", optarg);
            break;
        case O_NOREC: c->o.no_recorded = true; break;
        case O_PLOT: c->plot = optarg; break;
        case O_ENV: c->env = true; break;
        case O_NOSLEEP: c->no_sleep = true; break;
        case 'h': ga_fit_usage(stdout); return -1;
        case ':': return usage_error("option %s needs a value", argv[optind - 1]);
        default: return usage_error("unknown option %s", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return usage_error("%s", "no trace file given");
    char err[512];
    if (c->plot != NULL && ga_outputs_plot_check(c->plot, err, sizeof(err)) != 0)
        return usage_error("--plot %s", err); /* before the search, not after minutes of it */
    return 0;
}

/* Every trace into job: read once. 0, or -1 said on stderr. */
static int load(const cli_t *c, char *const *paths, size_t n, ga_job_t *job)
{
    char err[1024];
    ga_job_opts_t jo = {.format = c->format, .device_memory = c->device_memory, .reserve = c->reserve};
    for (size_t i = 0; i < n; i++) {
        if (ga_job_add(job, paths[i], &jo, err, sizeof(err)) != 0) {
            fprintf(stderr, "galloc fit: %s\n", err);
            return -1;
        }
    }
    ga_replay_infer_caps(job, c->backend, c->env);
    return 0;
}

int ga_fit_traces(const cli_t *c, char *const *paths, size_t n, FILE *out)
{
    ga_job_t loaded;
    memset(&loaded, 0, sizeof(loaded));
    ga_fit_job_t job = {.job = &loaded, .backend = c->backend, .no_sleep = c->no_sleep, .reserve = c->reserve};
    /* Only --env lets the shell change the answer; then the report names it. */
    char env[sizeof(job.env)];
    if (ga_replay_env_text(env, sizeof(env)) > 0) {
        if (c->env)
            memcpy(job.env, env, sizeof(env));
        else
            fprintf(stderr, "galloc fit: note: %s is set and not applied (--env applies it)\n", env);
    }
    if (load(c, paths, n, &loaded) != 0) {
        ga_job_free(&loaded);
        return GA_EXIT_USAGE;
    }
    ga_fit_job_init(&job);
    if (c->o.no_recorded) /* the job's recorded settings are ignored: neither replayed nor named */
        job.recorded = job.recorded_text = NULL;
    ga_fit_opts_t o = c->o;
    o.progress = isatty(STDERR_FILENO) == 1;
    ga_fit_outcome_t oc;
    char err[512];
    if (ga_fit_search(&job, &o, &oc, err, sizeof(err)) != 0) {
        fprintf(stderr, "galloc fit: %s\n", err);
        ga_job_free(&loaded);
        return GA_EXIT_USAGE;
    }
    bool all_failed = oc.n > 0;
    size_t nfailed = 0;
    for (size_t i = 0; i < oc.n; i++) {
        all_failed &= oc.results[i].run.failed;
        if (oc.results[i].run.failed && nfailed++ < 3) /* usually one cause (a bad environment variable) */
            fprintf(stderr, "galloc fit: configuration \"%s\": %s\n", oc.results[i].conf, oc.results[i].run.error);
    }
    if (nfailed > 3)
        fprintf(stderr, "galloc fit: ... and %zu more configurations that could not be replayed (see --json)\n",
                nfailed - 3);
    bool plot_failed = false, plotted = false;
    if (c->plot != NULL && !all_failed) {
        plot_failed = ga_fit_plot(&job, &oc, c->plot, err, sizeof(err)) != 0;
        if (plot_failed)
            fprintf(stderr, "galloc fit: %s\n", err);
        plotted = !plot_failed;
    }
    ga_fit_report_t rep = {.top = c->top, .plot = plotted ? c->plot : NULL};
    if (c->json)
        ga_fit_report_json(out, &job, &oc, &rep);
    else
        ga_fit_report_text(out, &job, &oc, &rep);
    fflush(out);
    ga_fit_answer_t a;
    ga_fit_answer(&job, &oc, &a);
    int code = all_failed || plot_failed ? GA_EXIT_USAGE : a.pick != NULL ? GA_EXIT_OK : GA_EXIT_OOM;
    ga_fit_outcome_free(&oc);
    ga_job_free(&loaded);
    return code;
}

int ga_fit_main(int argc, char **argv)
{
    cli_t c = {.format = GA_FORMAT_AUTO, .o = {.bisect = 10}};
    int rc = parse_args(&c, argc, argv);
    if (rc != 0)
        return rc < 0 ? GA_EXIT_OK : rc;
    if (ga_fit_fleet_wanted(argc - optind, argv + optind)) {
        if (c.plot != NULL) /* one plot path would be overwritten by every trace */
            return usage_error("%s", "--plot draws one job: not with a folder of traces");
        return ga_fit_fleet(&c, argv + optind, (size_t)(argc - optind));
    }
    return ga_fit_traces(&c, argv + optind, (size_t)(argc - optind), stdout);
}
