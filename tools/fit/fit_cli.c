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
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/fit/fit.h"
#include "tools/report/options.h"
#include "tools/report/report.h"

typedef ga_fit_cli_t cli_t;

#define MAX_COUNT 1000000 /* the largest --bisect, --max-configs and --top */

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
          "  --conf STRING         check these settings instead of searching (repeat for several;\n"
          "                        \"\" is PyTorch's defaults): each is replayed and its smallest\n"
          "                        memory bisected, beside the recorded run\n"
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
          "  --no-owners           do not replay the job's own run and the answer again to say who\n"
          "                        holds the memory (the code that allocated it: docs/owners.md)\n"
          "  --no-sleep            skip the traces' sleep and wake events (tags are still begun and\n"
          "                        ended): does the job fit without sleeping?\n"
          "  -h, --help            this text\n"
          "\n"
          "Exit status: 0 some configuration fits, 1 none does, 2 bad usage or input.\n",
          out);
}

#define CMD "fit"

/* --jobs N: 1 to 256 worker threads. */
static int take_jobs(const char *value, void *jobs)
{
    size_t n;
    if (!ga_opts_count(value, 256, &n))
        return -1;
    *(unsigned *)jobs = (unsigned)n;
    return 0;
}

/* --bisect N|all (0: none). */
static int take_bisect(const char *value, void *bisect)
{
    if (strcmp(value, "all") == 0)
        *(size_t *)bisect = SIZE_MAX;
    else if (strcmp(value, "0") == 0)
        *(size_t *)bisect = 0;
    else if (!ga_opts_count(value, MAX_COUNT, bisect))
        return -1;
    return 0;
}

/* --conf, repeated: the array has room for every argument (ga_fit_main). */
static int take_conf(const char *value, void *cli)
{
    cli_t *c = cli;
    if (strlen(value) >= GA_FIT_CONF_MAX)
        return -1;
    ((const char **)c->o.confs)[c->o.n_confs++] = value;
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
        {"no-owners", GA_OPT_FLAG, ga_opt_bool(&c->no_owners), NULL, 0, NULL},
        GA_OPT_NO_RECORDED(&c->o.no_recorded),
        GA_OPT_PLOT(&c->plot),
        {"jobs", GA_OPT_CALL, &c->o.jobs, "bad --jobs \"%s\" (1 to 256)", 0, take_jobs},
        {"bisect", GA_OPT_CALL, &c->o.bisect, "bad --bisect \"%s\" (a count or all)", 0, take_bisect},
        {"max-configs", GA_OPT_COUNT, &c->o.max_configs, "bad --max-configs \"%s\" (a count >= 1)", MAX_COUNT, NULL},
        {"top", GA_OPT_COUNT, &c->top, "bad --top \"%s\" (a count >= 1)", MAX_COUNT, NULL},
        {"conf", GA_OPT_CALL, c, "bad --conf \"%s\" (at most 159 characters)", 0, take_conf},
    };
    int rc = ga_opts_parse(CMD, opts, sizeof(opts) / sizeof(opts[0]), ga_fit_usage, argc, argv);
    if (rc == 0)
        rc = ga_opts_check_reserve(CMD, c->device_memory, c->reserve);
    if (rc != 0)
        return rc;
    return ga_opts_check_plot(CMD, c->plot); /* before the search, not after minutes of it */
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
    bool all_failed = oc.n > 0, refused = false;
    size_t nfailed = 0;
    for (size_t i = 0; i < oc.n; i++) {
        all_failed &= oc.results[i].run.failed;
        refused |= oc.results[i].run.refused != GALLOC_OK; /* a --conf the parser refused: bad input */
        if (oc.results[i].run.failed && nfailed++ < 3)     /* usually one cause (a bad environment variable) */
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
    ga_fit_owners_t owners;
    bool owned = !c->no_owners && !all_failed && ga_fit_owners_run(&job, &oc, &owners) == 0;
    if (!c->no_owners && !all_failed && !owned)
        fprintf(stderr, "galloc fit: out of host memory attributing the memory to its owners\n");
    ga_fit_report_t rep = {.top = c->top, .plot = plotted ? c->plot : NULL, .owners = owned ? &owners : NULL};
    if (c->json) /* every configuration, with why it could not be made */
        ga_fit_report_json(out, &job, &oc, &rep);
    else if (!all_failed) /* none made: nothing to rank, and stderr said why */
        ga_fit_report_text(out, &job, &oc, &rep);
    fflush(out);
    if (owned)
        ga_fit_owners_free(&job, &owners);
    ga_fit_answer_t a;
    ga_fit_answer(&job, &oc, &a);
    int code = all_failed || plot_failed || refused ? GA_EXIT_USAGE : a.pick != NULL ? GA_EXIT_OK : GA_EXIT_OOM;
    ga_fit_outcome_free(&oc);
    ga_job_free(&loaded);
    return code;
}

static int fleet(const cli_t *c, char *const *paths, size_t n)
{
    if (c->plot != NULL) /* one plot path would be overwritten by every trace */
        return ga_report_usage_error(CMD, "%s", "--plot draws one job: not with a folder of traces");
    return ga_fit_fleet(c, paths, n);
}

int ga_fit_main(int argc, char **argv)
{
    cli_t c = {.format = GA_FORMAT_AUTO, .o = {.bisect = 10}};
    const char **confs = calloc((size_t)argc + 1, sizeof(*confs));
    if (confs == NULL)
        return ga_report_usage_error(CMD, "%s", "out of host memory");
    c.o.confs = confs;
    int rc = parse_args(&c, argc, argv);
    if (rc == 0 && c.o.n_confs > 0)
        c.o.bisect = SIZE_MAX; /* what was asked about is answered in full */
    if (rc == 0)
        rc = ga_fit_fleet_wanted(argc - optind, argv + optind)
                 ? fleet(&c, argv + optind, (size_t)(argc - optind))
                 : ga_fit_traces(&c, argv + optind, (size_t)(argc - optind), stdout);
    else if (rc < 0)
        rc = GA_EXIT_OK;
    free(confs);
    return rc;
}
