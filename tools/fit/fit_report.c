/*
 * fit_report.c: what `galloc fit` prints (fit.h, ga_fit_report_text and
 * ga_fit_report_json): the ranked configurations, the runs worth a word (the
 * defaults' OOM with its class, configurations that could not be replayed,
 * the job's recorded settings) and the answer, or one JSON document with
 * every configuration. OOM figures are worded as galloc replay words them
 * (report.h).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/fit/fit.h"
#include "tools/gen/budget.h"
#include "tools/readers/units.h"
#include "tools/report/outputs.h"
#include "tools/report/report.h"

/* The files --plot wrote, one per unit (ga_fit_plot names them so). */
static void plot_names(FILE *out, const ga_fit_job_t *job, const char *plot, bool json)
{
    for (size_t u = 0; u < job->n_units; u++) {
        char *name = ga_outputs_name(plot, u, job->n_units);
        if (json) {
            fputs(u ? ", " : "", out);
            ga_report_json_str(out, name ? name : "");
        } else {
            fprintf(out, "%s%s", u ? ", " : "\nPlot (defaults and winner over time): ", name ? name : "");
        }
        free(name);
    }
    if (!json)
        fprintf(out, "\n");
}

/* A configuration's name: "(defaults)" only for PyTorch's defaults; under
 * --env the empty string is the environment's settings. */
static const char *conf_name(const ga_fit_job_t *job, const char *conf)
{
    return conf[0] ? conf : job->env[0] ? "(environment)" : "(defaults)";
}

static const char *fmt_bytes(int64_t v, char *b, size_t n)
{
    ga_units_format_bytes(v, b, n);
    return b;
}

static const char *fmt_size(uint64_t v, char *b, size_t n) /* a device size: never negative */
{
    ga_units_format_size(v, b, n);
    return b;
}

/* 1 - allocated / reserved at the reserved peak: the lesson's fragmentation
 * ratio. With tags asleep both sides count their blocks: allocated has them,
 * so reserved gets their address space back (bytes asleep). */
static double frag_at_peak(const ga_fit_run_t *r)
{
    int64_t held = r->peak_reserved + r->asleep_at_peak;
    return held > 0 ? 1.0 - (double)r->allocated_at_peak / (double)held : 0.0;
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

/* The job and the search in two lines (and the traces when several). */
static void summary(FILE *out, const ga_fit_job_t *job, const ga_fit_outcome_t *oc)
{
    char a[32], b[32];
    ga_units_format_count(job->events, a, sizeof(a));
    /* Units on sizes of their own (fit_run.c): one size in the header would
     * be wrong for some, so it says so and each line gives its own. */
    bool own = false;
    for (size_t u = 0; job->own_sizes && u < job->n_units; u++)
        own |= job->units[u].device_memory != 0 && job->units[u].device_memory != job->device_memory;
    fprintf(out, "galloc fit: %zu trace%s, %s events, sim device%s%s\n", job->n_units, job->n_units == 1 ? "" : "s",
            a, own ? ": " : " ", own ? "each trace's own size" : fmt_size(job->device_memory, b, sizeof(b)));
    for (size_t u = 0; job->n_units > 1 && u < job->n_units; u++) {
        const ga_fit_unit_t *un = &job->units[u];
        if (own && un->device_memory != 0)
            fprintf(out, "  #%zu %s (on its own size: %s)\n", u + 1, un->label, fmt_size(un->device_memory, b, sizeof(b)));
        else if (own)
            fprintf(out, "  #%zu %s (no recorded size: on %s)\n", u + 1, un->label,
                    fmt_size(job->device_memory, b, sizeof(b)));
        else
            fprintf(out, "  #%zu %s\n", u + 1, un->label);
    }
    for (size_t u = 0; u < job->n_units; u++) { /* what a mid-run trace adds, or cannot say */
        char pre[32] = "";
        if (job->n_units > 1)
            snprintf(pre, sizeof(pre), "#%zu ", u + 1);
        ga_report_start_text(out, &job->units[u].start, pre);
    }
    size_t replays = 0, nfit = 0;
    for (size_t i = 0; i < oc->n; i++) {
        replays += oc->results[i].replays;
        nfit += oc->results[i].run.fits;
    }
    ga_units_format_count(replays, a, sizeof(a));
    fprintf(out, "%zu configurations, %zu fit; %s replays in %.1f s on %u threads\n", oc->n, nfit, a, oc->seconds,
            oc->jobs);
    if (job->env[0])
        fprintf(out, "Every configuration replayed over the environment (--env): %s\n", job->env);
    if (job->sleep_events && job->no_sleep)
        fprintf(out, "Sleep and wake skipped (--no-sleep): %" PRIu64 " events; every tag stays awake, so this is "
                     "the job without sleeping\n", job->sleep_events);
    else if (job->sleep_events)
        fprintf(out, "The job sleeps and wakes (%" PRIu64 " events): every configuration replays them, so a "
                     "sleeping tag's memory is free for the others and peak reserved counts it only while "
                     "awake (--no-sleep compares); allocated counts a sleeping tag's blocks too (its tensors "
                     "still exist), so it may exceed reserved\n", job->sleep_events);
    if (job->capped_ooms)
        fprintf(out, "The traced run was capped: %" PRIu64 " traced OOM%s came with room on the device (the oom "
                     "entry's device_free), so set_per_process_memory_fraction refused %s, and traces do not "
                     "record the fraction. The figures are for the whole device: under a cap, a configuration "
                     "fits only if the cap is at least its peak reserved (its smallest device, where searched)\n",
                job->capped_ooms, job->capped_ooms == 1 ? "" : "s", job->capped_ooms == 1 ? "it" : "them");
    fprintf(out, "\n");
}

/* The ranked table, its first `top` rows. */
static void ranking(FILE *out, const ga_fit_job_t *job, const ga_fit_outcome_t *oc, size_t top)
{
    char d[32], e[32];
    fprintf(out, "%4s  %-4s  %13s  %14s  %9s  %11s  %-22s  %s\n", "rank", "fits", "peak reserved", "peak allocated",
            "frag@peak", "min device", "first OOM (event)", "configuration");
    for (size_t i = 0; i < oc->n && i < top; i++) {
        const ga_fit_result_t *r = &oc->results[i];
        char oom[64], minm[32];
        first_oom_cell(job, r, oom, sizeof(oom));
        if (!r->min_searched)
            snprintf(minm, sizeof(minm), "-");
        else if (r->min_memory == 0)
            snprintf(minm, sizeof(minm), "> 64x");
        else
            fmt_size(r->min_memory, minm, sizeof(minm));
        fprintf(out, "%4zu  %-4s  %13s  %14s  %8.1f%%  %11s  %-22s  %s\n", i + 1, r->run.fits ? "yes" : "no",
                fmt_bytes(r->run.peak_reserved, d, sizeof(d)), fmt_bytes(r->run.peak_allocated, e, sizeof(e)),
                100.0 * frag_at_peak(&r->run), minm, oom, conf_name(job, r->conf));
    }
    if (oc->n > top)
        fprintf(out, "(%zu of %zu shown: --top N for more, --json for all)\n", top, oc->n);
}

/* The runs worth a word: the defaults' OOM, the job's recorded settings
 * (configurations that could not be replayed are errors: fit_cli.c says them
 * on stderr). */
static void notes(FILE *out, const ga_fit_job_t *job, const ga_fit_outcome_t *oc, const ga_fit_report_t *rep)
{
    char a[32];
    for (size_t i = 0; i < oc->n; i++) { /* the defaults first: that is the run that failed */
        const ga_fit_result_t *r = &oc->results[i];
        if (r->conf[0] == '\0' && !r->run.fits && !r->run.failed) {
            ga_units_format_count(r->run.fail_event, a, sizeof(a));
            fprintf(out, "\nUnder %s the job runs out of memory at event %s of %s:\n",
                    job->env[0] ? "the environment's settings" : "the defaults", a, job->units[r->run.fail_unit].label);
            ga_report_oom_facts(out, &r->run.oom, !(oc->n && oc->results[0].run.fits));
        }
    }
    for (size_t i = 0; rep->recorded != NULL && i < oc->n; i++) {
        const ga_fit_result_t *r = &oc->results[i];
        if (strcmp(r->stage, "recorded") != 0)
            continue;
        fprintf(out, "\nRecorded settings (the snapshot's allocator_settings, PYTORCH_CUDA_ALLOC_CONF=\"%s\"): "
                     "replayed as \"%s\", rank %zu: ",
                rep->recorded_text, conf_name(job, r->conf), i + 1);
        if (r->run.failed) {
            fprintf(out, "could not be replayed (said on stderr)\n");
        } else if (r->run.fits) {
            fprintf(out, "fits\n");
        } else {
            ga_units_format_count(r->run.fail_event, a, sizeof(a));
            fprintf(out, "OOM at event %s of %s\n", a, job->units[r->run.fail_unit].label);
            ga_report_oom_facts(out, &r->run.oom, !oc->results[0].run.fits);
        }
    }
}

/* For a trace galloc gen wrote (its header names the model flags): what the
 * memory is for, as galloc budget computes it from those flags. */
static void budget_breakdown(FILE *out, const ga_fit_job_t *job)
{
    for (size_t u = 0; u < job->n_units; u++) {
        ga_gen_model_t m;
        ga_budget_t b;
        if (!ga_budget_of_trace(job->units[u].label, &m, &b) || !(b.total_overhead < 1e18))
            continue;
        char w[32], g[32], o[32], a[32], t[32], t15[32];
        fprintf(out, "What the memory is for (galloc budget of the model flags in %s): weights %s, gradients %s, "
                     "optimizer state %s, activations %s; total %s, %s with the formula's 15 %% allocator "
                     "overhead.\n",
                job->units[u].label, fmt_size((uint64_t)b.weights, w, sizeof(w)),
                fmt_size((uint64_t)b.grads, g, sizeof(g)), fmt_size((uint64_t)b.optimizer, o, sizeof(o)),
                fmt_size((uint64_t)b.activations, a, sizeof(a)), fmt_size((uint64_t)b.total, t, sizeof(t)),
                fmt_size((uint64_t)b.total_overhead, t15, sizeof(t15)));
    }
}

/* The answer: the winner to export, or the closest and its first OOM. */
static void verdict(FILE *out, const ga_fit_job_t *job, const ga_fit_outcome_t *oc)
{
    char a[32], b[32], d[32];
    const ga_fit_result_t *w = oc->n ? &oc->results[0] : NULL;
    if (w != NULL && w->run.fits) {
        if (w->conf[0] && job->env[0])
            fprintf(out, "\nFits: add \"%s\" over the environment's %s\n", w->conf, job->env);
        else if (w->conf[0])
            fprintf(out, "\nFits: export PYTORCH_CUDA_ALLOC_CONF=\"%s\"\n", w->conf);
        else if (job->env[0])
            fprintf(out, "\nFits under the environment's settings as they are: %s\n", job->env);
        else
            fprintf(out, "\nFits under PyTorch's defaults: leave PYTORCH_CUDA_ALLOC_CONF unset\n");
        fprintf(out, "  peak reserved %s, peak allocated %s", fmt_bytes(w->run.peak_reserved, a, sizeof(a)),
                fmt_bytes(w->run.peak_allocated, b, sizeof(b)));
        if (w->min_searched && w->min_memory)
            fprintf(out, "; fits on a device of %s or more", fmt_size(w->min_memory, d, sizeof(d)));
        fprintf(out, "\n");
        if (job->capped_ooms && job->device_memory) {
            uint64_t need = w->min_searched && w->min_memory ? w->min_memory : (uint64_t)w->run.peak_reserved;
            fprintf(out, "  only with a memory fraction of at least %.4g (%s of %s): the traced run's cap was lower, "
                         "and it ran out of memory\n",
                    (double)need / (double)job->device_memory, fmt_size(need, d, sizeof(d)),
                    fmt_size(job->device_memory, a, sizeof(a)));
        }
    } else if (w != NULL) {
        /* Nothing fits: the search has shown no setting is enough, so the
         * verdict is genuine, with the shortfall to the smallest device
         * some configuration fits, and no OOM line below may advise a
         * setting. */
        const ga_fit_result_t *m = NULL;
        for (size_t i = 0; i < oc->n; i++)
            if (oc->results[i].min_searched && oc->results[i].min_memory &&
                (m == NULL || oc->results[i].min_memory < m->min_memory))
                m = &oc->results[i];
        fmt_size(job->device_memory, a, sizeof(a));
        if (m != NULL && m->min_memory > job->device_memory) {
            char gap[32], gapb[32];
            fmt_size(m->min_memory - job->device_memory, gap, sizeof(gap));
            ga_units_format_count(m->min_memory - job->device_memory, gapb, sizeof(gapb));
            fprintf(out, "\nNo configuration fits on %s: genuine, the job needs more memory than the device has "
                         "whatever the settings.\nThe smallest device it fits: %s, under \"%s\": %s (%s bytes) "
                         "more than %s.\n",
                    a, fmt_size(m->min_memory, b, sizeof(b)), conf_name(job, m->conf), gap, gapb, a);
            budget_breakdown(out, job);
        } else {
            fprintf(out, "\nNo configuration fits on %s%s.\n", a,
                    w->min_searched ? ", nor on any device up to 64 times its size" : "");
        }
        if (!w->run.failed) {
            ga_units_format_count(w->run.fail_event, b, sizeof(b));
            fprintf(out, "The closest, \"%s\", first runs out of memory at event %s of %s:\n", conf_name(job, w->conf),
                    b, job->units[w->run.fail_unit].label);
            ga_report_oom_facts(out, &w->run.oom, true);
        }
    }
}

void ga_fit_report_text(FILE *out, const ga_fit_job_t *job, const ga_fit_outcome_t *oc, const ga_fit_report_t *rep)
{
    summary(out, job, oc);
    ranking(out, job, oc, rep->top ? rep->top : 15);
    notes(out, job, oc, rep);
    verdict(out, job, oc);
    if (rep->plot != NULL)
        plot_names(out, job, rep->plot, false);
}

void ga_fit_report_json(FILE *out, const ga_fit_job_t *job, const ga_fit_outcome_t *oc, const ga_fit_report_t *rep)
{
    fprintf(out, "{\"tool\": \"galloc fit\", \"version\": 1, \"device_memory\": %" PRIu64 ", \"events\": %" PRIu64
           ",\n \"traces\": [",
           job->device_memory, job->events);
    for (size_t u = 0; u < job->n_units; u++) {
        fprintf(out, "%s{\"label\": ", u ? ", " : "");
        ga_report_json_str(out, job->units[u].label);
        fprintf(out, ", \"events\": %zu, \"start\": ", job->units[u].n);
        ga_report_json_start(out, &job->units[u].start);
        fputs("}", out);
    }
    const ga_fit_result_t *w = oc->n && oc->results[0].run.fits ? &oc->results[0] : NULL;
    fprintf(out, "],\n \"seconds\": %.3f, \"threads\": %u, \"configurations\": %zu, \"fits\": %s,\n"
           " \"pytorch_cuda_alloc_conf\": ",
           oc->seconds, oc->jobs, oc->n, w ? "true" : "false");
    if (w)
        ga_report_json_str(out, w->conf);
    else
        fputs("null", out);
    fprintf(out, ",\n \"sleep_events\": %" PRIu64 ", \"no_sleep\": %s, \"capped_ooms\": %" PRIu64, job->sleep_events,
            job->no_sleep ? "true" : "false", job->capped_ooms);
    fputs(",\n \"environment\": ", out); /* what --env applied under every configuration, null: nothing */
    if (job->env[0])
        ga_report_json_str(out, job->env);
    else
        fputs("null", out);
    fputs(",\n \"recorded_conf\": ", out);
    if (rep->recorded != NULL) {
        ga_report_json_str(out, rep->recorded);
        fputs(", \"recorded_pytorch_cuda_alloc_conf\": ", out);
        ga_report_json_str(out, rep->recorded_text);
    } else {
        fputs("null, \"recorded_pytorch_cuda_alloc_conf\": null", out);
    }
    fputs(",\n \"plots\": ", out);
    if (rep->plot != NULL) {
        fputs("[", out);
        plot_names(out, job, rep->plot, true);
        fputs("]", out);
    } else {
        fputs("null", out);
    }
    fputs(",\n \"results\": [", out);
    for (size_t i = 0; i < oc->n; i++) {
        const ga_fit_result_t *r = &oc->results[i];
        fprintf(out, "%s\n  {\"rank\": %zu, \"conf\": ", i ? "," : "", i + 1);
        ga_report_json_str(out, r->conf);
        fprintf(out, ", \"stage\": \"%s\", \"fits\": %s, \"error\": ", r->stage, r->run.fits ? "true" : "false");
        if (r->run.failed)
            ga_report_json_str(out, r->run.error);
        else
            fputs("null", out);
        fprintf(out, ",\n   \"peak_reserved_bytes\": %" PRId64 ", \"peak_allocated_bytes\": %" PRId64
               ", \"peak_requested_bytes\": %" PRId64 ", \"allocated_at_peak_bytes\": %" PRId64
               ", \"asleep_at_peak_bytes\": %" PRId64
               ",\n   \"fragmentation_at_peak\": %.6f, \"external_fragmentation_at_peak\": %.6f"
               ", \"largest_free_block_at_peak\": %" PRId64 ",\n   \"min_device_memory\": ",
               r->run.peak_reserved, r->run.peak_allocated, r->run.peak_requested, r->run.allocated_at_peak,
               r->run.asleep_at_peak,
               frag_at_peak(&r->run), r->run.external_frag_at_peak, r->run.largest_free_at_peak);
        if (r->min_searched && r->min_memory)
            fprintf(out, "%" PRIu64, r->min_memory);
        else
            fputs("null", out);
        fprintf(out, ", \"min_device_memory_searched\": %s, \"replays\": %" PRIu32 ", \"seconds\": %.3f,\n"
               "   \"first_oom\": ",
               r->min_searched ? "true" : "false", r->replays, r->seconds);
        if (r->run.fits || r->run.failed) {
            fputs("null}", out);
            continue;
        }
        fprintf(out, "{\"trace\": %zu, \"event\": %" PRIu64 ", \"size\": %" PRIu64 ", \"class\": ", r->run.fail_unit,
               r->run.fail_event, r->run.oom.size);
        ga_report_json_oom_facts(out, &r->run.oom);
        fputs("}}", out);
    }
    fputs("\n ]}\n", out);
}

