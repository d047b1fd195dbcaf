/*
 * fit_cli.c: `galloc fit [options] TRACE...`: load the traces, run the search
 * (fit_search.c), print the ranked table or one JSON document, and choose the
 * exit code: 2 for bad usage or input, else 0 when some configuration fits
 * and 1 when none does.
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
#include "tools/snapshot/torch_snapshot.h"

typedef struct cli {
    uint64_t device_memory; /* --device-memory, 0 = from the trace or 80 GiB */
    bool no_recorded;       /* --no-recorded: ignore a snapshot's allocator_settings */
    char recorded[GA_FIT_CONF_MAX]; /* the first snapshot's recorded settings as a conf string */
    char recorded_text[1024];      /* its recorded PYTORCH_CUDA_ALLOC_CONF text */
    bool has_recorded;             /* a snapshot recorded settings */
    ga_format_t format;     /* --format */
    bool json;              /* --json */
    size_t top;             /* --top: rows of the text table */
    const char *plot;       /* --plot FILE: defaults vs winner over time, NULL for none */
    bool plotted;           /* the plot files were written */
    ga_fit_opts_t o;        /* --jobs, --bisect, --max-configs */
} cli_t;

void ga_fit_usage(FILE *out)
{
    char formats[128];
    ga_reader_format_list(formats, sizeof(formats));
    fputs("usage: galloc fit [options] TRACE...\n"
          "Search the PYTORCH_CUDA_ALLOC_CONF settings under which a traced job fits its device:\n"
          "a grid over expandable_segments, max_split_size_mb, roundup_power2_divisions (and\n"
          "garbage_collection_threshold when the trace sets a memory fraction, as PyTorch's GC\n"
          "needs one), refined around the best, replayed in parallel on a simulated GPU.\n"
          "Several traces are one job: a setting must fit them all.\n"
          "\n"
          "  --device-memory SIZE  simulated device size (80GiB, 512MiB, bytes); default: the size\n"
          "                        recorded in the first trace, else 80GiB\n"
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
          "  -h, --help            this text\n"
          "\n"
          "Exit status: 0 some configuration fits, 1 none does, 2 bad usage or input.\n",
          out);
}

static int usage_error(const char *fmt, const char *arg)
{
    fputs("galloc fit: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs("\n(galloc fit --help for usage)\n", stderr);
    return GA_EXIT_USAGE;
}

static int bad_format(const char *arg)
{
    char formats[128], fmt[192];
    ga_reader_format_list(formats, sizeof(formats));
    snprintf(fmt, sizeof(fmt), "bad --format \"%%s\" (auto, %s)", formats);
    return usage_error(fmt, arg);
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
    enum { O_MEM = 256, O_JSON, O_JOBS, O_BISECT, O_MAX, O_TOP, O_FORMAT, O_NOREC, O_PLOT };
    static const struct option opts[] = {
        {"device-memory", required_argument, NULL, O_MEM}, {"json", no_argument, NULL, O_JSON},
        {"jobs", required_argument, NULL, O_JOBS},         {"bisect", required_argument, NULL, O_BISECT},
        {"max-configs", required_argument, NULL, O_MAX},   {"top", required_argument, NULL, O_TOP},
        {"format", required_argument, NULL, O_FORMAT},     {"help", no_argument, NULL, 'h'},
        {"no-recorded", no_argument, NULL, O_NOREC},       {"plot", required_argument, NULL, O_PLOT},
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
                return bad_format(optarg);
            break;
        case O_NOREC: c->no_recorded = true; break;
        case O_PLOT: c->plot = optarg; break;
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

/* The files --plot wrote, one per unit (ga_fit_plot names them so). */
static void print_plot_names(const cli_t *c, const ga_fit_job_t *job, bool json)
{
    for (size_t u = 0; u < job->n_units; u++) {
        char *name = ga_outputs_name(c->plot, u, job->n_units);
        if (json) {
            fputs(u ? ", " : "", stdout);
            ga_report_json_str(stdout, name ? name : "");
        } else {
            printf("%s%s", u ? ", " : "\nPlot (defaults and winner over time): ", name ? name : "");
        }
        free(name);
    }
    if (!json)
        printf("\n");
}

static const char *fmt_bytes(int64_t v, char *b, size_t n)
{
    ga_units_format_bytes(v, b, n);
    return b;
}

/* 1 - allocated / reserved at the reserved peak: the lesson's fragmentation ratio. */
static double frag_at_peak(const ga_fit_run_t *r)
{
    return r->peak_reserved > 0 ? 1.0 - (double)r->allocated_at_peak / (double)r->peak_reserved : 0.0;
}

static void first_oom_cell(const ga_fit_job_t *job, const ga_fit_result_t *r, char *b, size_t n)
{
    char ev[32];
    if (r->run.failed) {
        snprintf(b, n, "error");
        return;
    }
    if (r->run.fits) {
        snprintf(b, n, "-");
        return;
    }
    ga_units_format_count(r->run.fail_event, ev, sizeof(ev));
    if (job->n_units > 1)
        snprintf(b, n, "#%zu:%s %s", r->run.fail_unit + 1, ev, ga_oom_class_name(r->run.oom.cls));
    else
        snprintf(b, n, "%s %s", ev, ga_oom_class_name(r->run.oom.cls));
}

static void print_text(const cli_t *c, const ga_fit_job_t *job, const ga_fit_outcome_t *oc)
{
    char a[32], b[32], d[32], e[32];
    ga_units_format_count(job->events, a, sizeof(a));
    printf("galloc fit: %zu trace%s, %s events, sim device %s\n", job->n_units, job->n_units == 1 ? "" : "s", a,
           fmt_bytes((int64_t)job->device_memory, b, sizeof(b)));
    for (size_t u = 0; job->n_units > 1 && u < job->n_units; u++)
        printf("  #%zu %s\n", u + 1, job->units[u].label);
    size_t replays = 0, nfit = 0;
    for (size_t i = 0; i < oc->n; i++) {
        replays += oc->results[i].replays;
        nfit += oc->results[i].run.fits;
    }
    ga_units_format_count(replays, a, sizeof(a));
    printf("%zu configurations, %zu fit; %s replays in %.1f s on %u threads\n\n", oc->n, nfit, a, oc->seconds,
           oc->jobs);
    printf("%4s  %-4s  %13s  %14s  %9s  %11s  %-22s  %s\n", "rank", "fits", "peak reserved", "peak allocated",
           "frag@peak", "min device", "first OOM (event)", "configuration");
    size_t top = c->top ? c->top : 15;
    for (size_t i = 0; i < oc->n && i < top; i++) {
        const ga_fit_result_t *r = &oc->results[i];
        char oom[64], minm[32];
        first_oom_cell(job, r, oom, sizeof(oom));
        if (!r->min_searched)
            snprintf(minm, sizeof(minm), "-");
        else if (r->min_memory == 0)
            snprintf(minm, sizeof(minm), "> 64x");
        else
            fmt_bytes((int64_t)r->min_memory, minm, sizeof(minm));
        printf("%4zu  %-4s  %13s  %14s  %8.1f%%  %11s  %-22s  %s\n", i + 1, r->run.fits ? "yes" : "no",
               fmt_bytes(r->run.peak_reserved, d, sizeof(d)), fmt_bytes(r->run.peak_allocated, e, sizeof(e)),
               100.0 * frag_at_peak(&r->run), minm, oom, r->conf[0] ? r->conf : "(defaults)");
    }
    if (oc->n > top)
        printf("(%zu of %zu shown: --top N for more, --json for all)\n", top, oc->n);
    for (size_t i = 0; i < oc->n; i++) { /* the defaults first: that is the run that failed */
        const ga_fit_result_t *r = &oc->results[i];
        if (r->conf[0] == '\0' && !r->run.fits && !r->run.failed) {
            ga_units_format_count(r->run.fail_event, a, sizeof(a));
            printf("\nUnder the defaults the job runs out of memory at event %s of %s:\n", a,
                   job->units[r->run.fail_unit].label);
            ga_report_oom_facts(stdout, &r->run.oom);
        }
    }
    size_t nfailed = 0;
    for (size_t i = 0; i < oc->n; i++) {
        if (!oc->results[i].run.failed)
            continue;
        if (nfailed++ < 3) /* usually one cause (a bad environment variable) for all: a few say it */
            printf("configuration \"%s\": %s\n", oc->results[i].conf, oc->results[i].run.error);
    }
    if (nfailed > 3)
        printf("... and %zu more configurations that could not be replayed (see --json)\n", nfailed - 3);
    for (size_t i = 0; c->has_recorded && i < oc->n; i++) {
        const ga_fit_result_t *r = &oc->results[i];
        if (strcmp(r->stage, "recorded") != 0)
            continue;
        printf("\nRecorded settings (the snapshot's allocator_settings, PYTORCH_CUDA_ALLOC_CONF=\"%s\"): "
               "replayed as \"%s\", rank %zu: ",
               c->recorded_text, r->conf[0] ? r->conf : "(defaults)", i + 1);
        if (r->run.failed) {
            printf("error: %s\n", r->run.error);
        } else if (r->run.fits) {
            printf("fits\n");
        } else {
            ga_units_format_count(r->run.fail_event, a, sizeof(a));
            printf("OOM at event %s of %s\n", a, job->units[r->run.fail_unit].label);
            ga_report_oom_facts(stdout, &r->run.oom);
        }
    }
    const ga_fit_result_t *w = oc->n ? &oc->results[0] : NULL;
    if (w != NULL && w->run.fits) {
        if (w->conf[0])
            printf("\nFits: export PYTORCH_CUDA_ALLOC_CONF=\"%s\"\n", w->conf);
        else
            printf("\nFits under PyTorch's defaults: leave PYTORCH_CUDA_ALLOC_CONF unset\n");
        printf("  peak reserved %s, peak allocated %s", fmt_bytes(w->run.peak_reserved, a, sizeof(a)),
               fmt_bytes(w->run.peak_allocated, b, sizeof(b)));
        if (w->min_searched && w->min_memory)
            printf("; fits on a device of %s or more", fmt_bytes((int64_t)w->min_memory, d, sizeof(d)));
        printf("\n");
    } else if (w != NULL) {
        printf("\nNo configuration fits on %s.", fmt_bytes((int64_t)job->device_memory, a, sizeof(a)));
        if (w->min_searched && w->min_memory)
            printf(" The closest, \"%s\", fits on %s.", w->conf[0] ? w->conf : "(defaults)",
                   fmt_bytes((int64_t)w->min_memory, b, sizeof(b)));
        printf("\n");
        if (!w->run.failed) {
            printf("Its first OOM:\n");
            ga_report_oom_facts(stdout, &w->run.oom);
        }
    }
    if (c->plotted)
        print_plot_names(c, job, false);
}

static void print_json(const cli_t *c, const ga_fit_job_t *job, const ga_fit_outcome_t *oc)
{
    printf("{\"tool\": \"galloc fit\", \"version\": 1, \"device_memory\": %" PRIu64 ", \"events\": %" PRIu64
           ",\n \"traces\": [",
           job->device_memory, job->events);
    for (size_t u = 0; u < job->n_units; u++) {
        printf("%s{\"label\": ", u ? ", " : "");
        ga_report_json_str(stdout, job->units[u].label);
        printf(", \"events\": %zu}", job->units[u].n);
    }
    const ga_fit_result_t *w = oc->n && oc->results[0].run.fits ? &oc->results[0] : NULL;
    printf("],\n \"seconds\": %.3f, \"threads\": %u, \"configurations\": %zu, \"fits\": %s,\n"
           " \"pytorch_cuda_alloc_conf\": ",
           oc->seconds, oc->jobs, oc->n, w ? "true" : "false");
    if (w)
        ga_report_json_str(stdout, w->conf);
    else
        fputs("null", stdout);
    fputs(",\n \"recorded_conf\": ", stdout);
    if (c->has_recorded) {
        ga_report_json_str(stdout, c->recorded);
        fputs(", \"recorded_pytorch_cuda_alloc_conf\": ", stdout);
        ga_report_json_str(stdout, c->recorded_text);
    } else {
        fputs("null, \"recorded_pytorch_cuda_alloc_conf\": null", stdout);
    }
    fputs(",\n \"plots\": ", stdout);
    if (c->plotted) {
        fputs("[", stdout);
        print_plot_names(c, job, true);
        fputs("]", stdout);
    } else {
        fputs("null", stdout);
    }
    fputs(",\n \"results\": [", stdout);
    for (size_t i = 0; i < oc->n; i++) {
        const ga_fit_result_t *r = &oc->results[i];
        printf("%s\n  {\"rank\": %zu, \"conf\": ", i ? "," : "", i + 1);
        ga_report_json_str(stdout, r->conf);
        printf(", \"stage\": \"%s\", \"fits\": %s, \"error\": ", r->stage, r->run.fits ? "true" : "false");
        if (r->run.failed)
            ga_report_json_str(stdout, r->run.error);
        else
            fputs("null", stdout);
        printf(",\n   \"peak_reserved_bytes\": %" PRId64 ", \"peak_allocated_bytes\": %" PRId64
               ", \"peak_requested_bytes\": %" PRId64 ", \"allocated_at_peak_bytes\": %" PRId64
               ",\n   \"fragmentation_at_peak\": %.6f, \"external_fragmentation_at_peak\": %.6f"
               ", \"largest_free_block_at_peak\": %" PRId64 ",\n   \"min_device_memory\": ",
               r->run.peak_reserved, r->run.peak_allocated, r->run.peak_requested, r->run.allocated_at_peak,
               frag_at_peak(&r->run), r->run.external_frag_at_peak, r->run.largest_free_at_peak);
        if (r->min_searched && r->min_memory)
            printf("%" PRIu64, r->min_memory);
        else
            fputs("null", stdout);
        printf(", \"min_device_memory_searched\": %s, \"replays\": %" PRIu32 ", \"seconds\": %.3f,\n"
               "   \"first_oom\": ",
               r->min_searched ? "true" : "false", r->replays, r->seconds);
        if (r->run.fits || r->run.failed) {
            fputs("null}", stdout);
            continue;
        }
        printf("{\"trace\": %zu, \"event\": %" PRIu64 ", \"size\": %" PRIu64 ", \"class\": ", r->run.fail_unit,
               r->run.fail_event, r->run.oom.size);
        ga_report_json_oom_facts(stdout, &r->run.oom);
        fputs("}}", stdout);
    }
    fputs("\n ]}\n", stdout);
}

int ga_fit_main(int argc, char **argv)
{
    cli_t c = {.format = GA_FORMAT_AUTO, .o = {.bisect = 10}};
    int rc = parse_args(&c, argc, argv);
    if (rc != 0)
        return rc < 0 ? GA_EXIT_OK : rc;
    static const char *const vars[] = {"PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", "GALLOC_CONF"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        if (getenv(vars[i]) != NULL) /* it would silently apply under every configuration */
            fprintf(stderr, "galloc fit: note: %s=%s is set and applies under every configuration\n", vars[i],
                    getenv(vars[i]));
    ga_fit_job_t job;
    memset(&job, 0, sizeof(job));
    char err[512];
    for (int i = optind; i < argc; i++) {
        if (ga_fit_load(&job, argv[i], c.format, err, sizeof(err)) != 0) {
            fprintf(stderr, "galloc fit: %s\n", err);
            ga_fit_job_free(&job);
            return GA_EXIT_USAGE;
        }
        if (c.no_recorded || c.has_recorded || strcmp(argv[i], "-") == 0)
            continue; /* the first snapshot with settings speaks for the job; stdin cannot be reread */
        int rc2 = ga_torch_recorded_conf(argv[i], c.recorded, sizeof(c.recorded), c.recorded_text,
                                       sizeof(c.recorded_text), err, sizeof(err));
        if (rc2 < 0) {
            fprintf(stderr, "galloc fit: %s\n", err);
            ga_fit_job_free(&job);
            return GA_EXIT_USAGE;
        }
        c.has_recorded = rc2 == 1;
    }
    if (c.has_recorded)
        c.o.recorded = c.recorded;
    job.device_memory = c.device_memory                         ? c.device_memory
                        : job.n_units && job.units[0].device_memory ? job.units[0].device_memory
                                                                    : GA_REPLAY_DEFAULT_MEMORY;
    c.o.progress = isatty(STDERR_FILENO) == 1;
    ga_fit_outcome_t oc;
    if (ga_fit_search(&job, &c.o, &oc, err, sizeof(err)) != 0) {
        fprintf(stderr, "galloc fit: %s\n", err);
        ga_fit_job_free(&job);
        return GA_EXIT_USAGE;
    }
    bool all_failed = oc.n > 0;
    for (size_t i = 0; i < oc.n; i++)
        all_failed &= oc.results[i].run.failed;
    bool plot_failed = false;
    if (c.plot != NULL && !all_failed) {
        plot_failed = ga_fit_plot(&job, &oc, c.plot, err, sizeof(err)) != 0;
        if (plot_failed)
            fprintf(stderr, "galloc fit: %s\n", err);
        c.plotted = !plot_failed;
    }
    if (c.json)
        print_json(&c, &job, &oc);
    else
        print_text(&c, &job, &oc);
    fflush(stdout);
    int code = all_failed || plot_failed ? GA_EXIT_USAGE : oc.n && oc.results[0].run.fits ? GA_EXIT_OK : GA_EXIT_OOM;
    ga_fit_outcome_free(&oc);
    ga_fit_job_free(&job);
    return code;
}
