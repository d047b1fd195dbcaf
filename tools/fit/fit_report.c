/*
 * fit_report.c: what `galloc fit` prints (fit.h, ga_fit_report_text and
 * ga_fit_report_json): what the job is (each unit as galloc replay describes
 * it, report/unit.c), the ranked configurations, the caveats every answer
 * carries, and the answer (fit_advice.c), or one JSON document with all of
 * it. The caveats are one list for both outputs, so the CLI and the Python
 * API (which reads the JSON) say the same.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/fit/fit.h"
#include "tools/gen/budget.h"
#include "tools/readers/units.h"
#include "tools/report/outputs.h"
#include "tools/report/report.h"

#define MAX_CAVEATS 8
#define CAVEAT_LEN 600

/* The files --plot wrote, one per unit (ga_fit_plot names them so). */
static void plot_names(FILE *out, const ga_fit_job_t *job, const char *plot, bool json)
{
    size_t n = job->job->n_units;
    for (size_t u = 0; u < n; u++) {
        char *name = ga_outputs_name(plot, u, n);
        if (json) {
            fputs(u ? ", " : "", out);
            ga_report_json_str(out, name ? name : "");
        } else {
            fprintf(out, "%s%s", u ? ", " : "\nPlot (the job's own run and the answer over time): ", name ? name : "");
        }
        free(name);
    }
    if (!json)
        fprintf(out, "\n");
}

const char *ga_fit_conf_name(const ga_fit_job_t *job, const ga_fit_result_t *r)
{
    if (r->recorded)
        return r->conf[0] ? r->conf : "(recorded: PyTorch's defaults)";
    return r->conf[0] ? r->conf : job->env[0] ? "(environment)" : "(defaults)";
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

static const ga_job_unit_t *unit(const ga_fit_job_t *job, size_t u)
{
    return &job->job->units[u];
}

/* The caveats every answer of this job carries, one sentence each. */
static size_t caveats(const ga_fit_job_t *job, const ga_fit_answer_t *a, char (*c)[CAVEAT_LEN])
{
    size_t n = 0;
    char x[32], r[80];
    for (size_t u = 0; u < job->job->n_units && n < MAX_CAVEATS - 3; u++) {
        const ga_job_unit_t *un = unit(job, u);
        if (un->cap.inferred) {
            ga_report_cap_text(&un->cap, r, sizeof(r));
            snprintf(c[n++], CAVEAT_LEN,
                     "%s ran under a memory fraction its trace does not record: the cap lay in %s. A configuration "
                     "fits only if it fits under every cap in that range; its smallest memory is the smallest cap "
                     "it fits under",
                     un->label, r);
        } else if (un->cap.capped_ooms) {
            snprintf(c[n++], CAVEAT_LEN,
                     "%s ran under a memory fraction that cannot be placed (%s): replayed without one", un->label,
                     un->cap.why);
        }
        if (un->notes.start.kind == GA_START_UNKNOWN)
            snprintf(c[n++], CAVEAT_LEN,
                     "%s may start mid-run and has no totals: memory in use before its first event is not in "
                     "these figures",
                     un->label);
    }
    if (job->reserve)
        snprintf(c[n++], CAVEAT_LEN, "a smallest device adds %s (--reserve) for memory outside the allocator",
                 fmt_size(job->reserve, x, sizeof(x)));
    else
        snprintf(c[n++], CAVEAT_LEN,
                 "a smallest memory is what the allocator itself needs: a real device needs more for memory "
                 "outside it (the CUDA context, library workspaces, NCCL buffers, other processes; 0.7 GiB for "
                 "PyTorch 2.11 on an H200, docs/fit.md); --reserve SIZE adds it");
    if (a->pick == NULL && a->closest != NULL && a->closest->run.depends)
        snprintf(c[n++], CAVEAT_LEN, "\"%s\" fits under part of the cap range only: where the cap lay decides it",
                 ga_fit_conf_name(job, a->closest));
    return n;
}

/* The job and the search in a few lines. */
static void summary(FILE *out, const ga_fit_job_t *job, const ga_fit_outcome_t *oc)
{
    char a[160], b[32];
    size_t nu = job->job->n_units;
    uint64_t before = 0;
    for (size_t u = 0; u < nu; u++)
        before += unit(job, u)->notes.prologue < unit(job, u)->n ? unit(job, u)->notes.prologue : unit(job, u)->n;
    if (nu == 1) { /* the prologue apart: blocks live before the first event are no events of the job */
        ga_report_unit_events(unit(job, 0), a, sizeof(a));
    } else {
        size_t n = (ga_units_format_count(job->events - before, a, sizeof(a)), strlen(a));
        snprintf(a + n, sizeof(a) - n, " events");
        if (before)
            snprintf(a + n + 7, sizeof(a) - n - 7, ", %" PRIu64 " blocks or stand-ins before their first events",
                     before);
    }
    bool one_size = true; /* every unit on the same size: the header says it */
    for (size_t u = 1; u < nu; u++)
        one_size &= unit(job, u)->memory == unit(job, 0)->memory;
    fprintf(out, "galloc fit: %zu trace%s, %s, sim device%s%s\n", nu, nu == 1 ? "" : "s", a, one_size ? " " : ": ",
            one_size ? fmt_size(unit(job, 0)->memory, b, sizeof(b)) : "each trace's own size");
    for (size_t u = 0; u < nu; u++) {
        const ga_job_unit_t *un = unit(job, u);
        char pre[32] = "";
        if (nu > 1) {
            snprintf(pre, sizeof(pre), "#%zu ", u + 1);
            if (one_size)
                fprintf(out, "  #%zu %s\n", u + 1, un->label);
            else if (un->memory_source == GA_JOB_MEM_DEFAULT)
                fprintf(out, "  #%zu %s (no recorded size: on %s)\n", u + 1, un->label,
                        fmt_size(un->memory, b, sizeof(b)));
            else
                fprintf(out, "  #%zu %s (on its own size: %s)\n", u + 1, un->label, fmt_size(un->memory, b, sizeof(b)));
        }
        ga_report_unit_text(out, un, pre);
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
        fprintf(out,
                "Sleep and wake skipped (--no-sleep): %" PRIu64 " events; every tag stays awake, so this is "
                "the job without sleeping\n",
                job->sleep_events);
    else if (job->sleep_events)
        fprintf(out,
                "The job sleeps and wakes (%" PRIu64 " events): every configuration replays them, so a "
                "sleeping tag's memory is free for the others and peak reserved counts it only while "
                "awake (--no-sleep compares); allocated counts a sleeping tag's blocks too (its tensors "
                "still exist), so it may exceed reserved\n",
                job->sleep_events);
    fprintf(out, "\n");
}

/* "on a device of X or more" (with --reserve, the reserve included), or
 * under a cap, "under a cap of X or more (a memory fraction of F)". */
static void min_text(FILE *out, const ga_fit_job_t *job, uint64_t m)
{
    char a[32], b[32], c[32];
    const ga_job_unit_t *u = unit(job, job->ref);
    if (ga_fit_capped(job)) {
        fprintf(out, "under a cap of %s or more (a memory fraction of at least %.4g of %s)", fmt_size(m, a, sizeof(a)),
                (double)m / (double)u->memory, fmt_size(u->memory, b, sizeof(b)));
        return;
    }
    if (job->reserve)
        fprintf(out, "on a device of %s or more (%s for the allocator + %s reserved)",
                fmt_size(m + job->reserve, a, sizeof(a)), fmt_size(m, b, sizeof(b)),
                fmt_size(job->reserve, c, sizeof(c)));
    else
        fprintf(out, "on a device of %s or more", fmt_size(m, a, sizeof(a)));
}

/* Where r first runs out of memory: "at event 1,234" or "before the first
 * event" (the state the trace starts in does not fit). */
static const char *oom_where(const ga_fit_result_t *r, char *b, size_t n)
{
    char ev[32];
    ga_units_format_count(r->run.fail_event, ev, sizeof(ev));
    snprintf(b, n, r->run.oom.at_start ? "before the first event" : "at event %s", ev);
    return b;
}

static void oom_line(FILE *out, const ga_fit_job_t *job, const ga_fit_result_t *r, bool none_fits)
{
    char a[64];
    fprintf(out, "\"%s\", first runs out of memory %s of %s:\n", ga_fit_conf_name(job, r), oom_where(r, a, sizeof(a)),
            unit(job, r->run.fail_unit)->label);
    if (r->run.oom.size)
        ga_report_oom_facts(out, &r->run.oom, &unit(job, r->run.fail_unit)->cap, none_fits);
}

/* For a trace galloc gen wrote (its header names the model flags): what the
 * memory is for, as galloc budget computes it from those flags. */
static void budget_breakdown(FILE *out, const ga_fit_job_t *job)
{
    for (size_t u = 0; u < job->job->n_units; u++) {
        ga_gen_model_t m;
        ga_budget_t b;
        if (!ga_budget_of_trace(unit(job, u)->label, &m, &b) || !(b.total_overhead < 1e18))
            continue;
        char w[32], g[32], o[32], a[32], t[32], t15[32];
        fprintf(out,
                "What the memory is for (galloc budget of the model flags in %s): weights %s, gradients %s, "
                "optimizer state %s, activations %s; total %s, %s with the formula's 15 %% allocator "
                "overhead.\n",
                unit(job, u)->label, fmt_size((uint64_t)b.weights, w, sizeof(w)),
                fmt_size((uint64_t)b.grads, g, sizeof(g)), fmt_size((uint64_t)b.optimizer, o, sizeof(o)),
                fmt_size((uint64_t)b.activations, a, sizeof(a)), fmt_size((uint64_t)b.total, t, sizeof(t)),
                fmt_size((uint64_t)b.total_overhead, t15, sizeof(t15)));
    }
}

/* The answer when something fits. */
static void answer_fits(FILE *out, const ga_fit_job_t *job, const ga_fit_answer_t *a)
{
    char x[32], y[32];
    const ga_fit_result_t *p = a->pick;
    if (p->recorded && p->conf[0] == '\0') {
        fprintf(out, "\nFits as recorded, under PyTorch's defaults: leave PYTORCH_CUDA_ALLOC_CONF unset\n");
    } else if (p->recorded) { /* the effective settings: the recorded text is only the last string set */
        fprintf(out, "\nFits as recorded: keep PYTORCH_CUDA_ALLOC_CONF=\"%s\"\n", p->conf);
    }
    if (p->recorded) {
        if (a->lightest != p && a->saving > 0)
            fprintf(out, "  \"%s\" would save %.1f %% of peak reserved (%s): below the %.0f %% worth a change\n",
                    ga_fit_conf_name(job, a->lightest), 100.0 * a->saving,
                    fmt_bytes(p->run.peak_reserved - a->lightest->run.peak_reserved, x, sizeof(x)),
                    100.0 * GA_FIT_WORTH);
    } else if (p->conf[0] && job->env[0]) {
        fprintf(out, "\nFits: add \"%s\" over the environment's %s\n", p->conf, job->env);
    } else if (p->conf[0]) {
        fprintf(out, "\nFits: export PYTORCH_CUDA_ALLOC_CONF=\"%s\"\n", p->conf);
    } else if (job->env[0]) {
        fprintf(out, "\nFits under the environment's settings as they are: %s\n", job->env);
    } else {
        fprintf(out, "\nFits under PyTorch's defaults: leave PYTORCH_CUDA_ALLOC_CONF unset\n");
    }
    if (!p->recorded && a->recorded != NULL && a->recorded->run.fits && a->recorded->run.peak_reserved > 0)
        fprintf(out, "  it saves %.1f %% of the recorded run's peak reserved\n",
                100.0 * (double)(a->recorded->run.peak_reserved - p->run.peak_reserved) /
                    (double)a->recorded->run.peak_reserved);
    fprintf(out, "  peak reserved %s, peak allocated %s", fmt_bytes(p->run.peak_reserved, x, sizeof(x)),
            fmt_bytes(p->run.peak_allocated, y, sizeof(y)));
    if (p->min_searched && p->min_memory) {
        fprintf(out, "; fits ");
        min_text(out, job, p->min_memory);
    }
    fprintf(out, "\n");
    if (a->smaller != NULL) {
        fprintf(out, "  \"%s\" fits a smaller one: ", ga_fit_conf_name(job, a->smaller));
        min_text(out, job, a->smaller->min_memory);
        fprintf(out, "\n");
    }
    if (a->cliff != NULL) {
        if (a->cliff->run.fits)
            fprintf(out, "  next to a cliff: \"%s\" needs %s peak reserved (%+.0f %%): the setting is sensitive\n",
                    ga_fit_conf_name(job, a->cliff), fmt_bytes(a->cliff->run.peak_reserved, x, sizeof(x)),
                    100.0 * ((double)a->cliff->run.peak_reserved / (double)p->run.peak_reserved - 1.0));
        else
            fprintf(out, "  next to a cliff: \"%s\" does not fit: the setting is sensitive\n",
                    ga_fit_conf_name(job, a->cliff));
    }
}

/* Why nothing fits when the state a trace starts in is larger than the
 * device (the closest's first OOM is before its first event: every
 * configuration's is, as every one starts from that state). */
static void state_text(FILE *out, const ga_fit_job_t *job, const ga_fit_result_t *c, const char *dev)
{
    char res[32], live[32], cached[32];
    fmt_bytes(c->run.oom.live + c->run.oom.cached_free, res, sizeof(res));
    fmt_bytes(c->run.oom.live, live, sizeof(live));
    fmt_bytes(c->run.oom.cached_free, cached, sizeof(cached));
    fprintf(out,
            "\nNo configuration fits on %s: the state %s starts in does not fit it (%s reserved: %s live + %s "
            "cached free), before the first event. Every configuration starts from that state: genuine, "
            "whatever the settings%s.\n",
            dev, unit(job, c->run.fail_unit)->label, res, live, cached,
            unit(job, c->run.fail_unit)->memory_source == GA_JOB_MEM_DEFAULT
                ? " (the device's size was assumed, not recorded: --device-memory gives the one it ran on)"
                : "");
}

/* The answer when nothing fits. */
static void answer_none(FILE *out, const ga_fit_job_t *job, const ga_fit_outcome_t *oc, const ga_fit_answer_t *a)
{
    char x[32], gap[32], gapb[32], r[80];
    const ga_fit_result_t *m = NULL;
    for (size_t i = 0; i < oc->n; i++)
        if (oc->results[i].min_searched && oc->results[i].min_memory &&
            (m == NULL || oc->results[i].min_memory < m->min_memory))
            m = &oc->results[i];
    uint64_t d = ga_fit_allowed(job);
    if (job->job->n_units > 1) /* whose size the figures below are: the others scale with it */
        fprintf(out, "\nSizes below are those of %s (the other traces' sizes scale with it).",
                unit(job, job->ref)->label);
    if (ga_fit_capped(job)) {
        ga_report_cap_text(&unit(job, job->ref)->cap, r, sizeof(r));
        fprintf(out,
                "\nNo configuration fits under any cap the trace allows (its cap lay in %s): genuine, the job "
                "needs more memory than the cap gave it whatever the settings.\n",
                r);
        if (m != NULL) {
            fprintf(out, "The smallest it fits, under \"%s\": ", ga_fit_conf_name(job, m));
            min_text(out, job, m->min_memory);
            fprintf(out, ".\n");
        }
    } else if (m != NULL && m->min_memory > d) {
        fmt_size(d, x, sizeof(x));
        fmt_size(m->min_memory - d, gap, sizeof(gap));
        ga_units_format_count(m->min_memory - d, gapb, sizeof(gapb));
        if (a->closest != NULL && a->closest->run.oom.at_start)
            state_text(out, job, a->closest, x);
        else
            fprintf(out,
                    "\nNo configuration fits on %s: genuine, the job needs more memory than the device has "
                    "whatever the settings.\n",
                    x);
        fprintf(out, "The smallest device it fits: %s, under \"%s\": %s (%s bytes) more than %s.\n",
                fmt_size(m->min_memory + job->reserve, r, sizeof(r)), ga_fit_conf_name(job, m), gap, gapb, x);
        budget_breakdown(out, job);
    } else if (a->closest != NULL && a->closest->run.oom.at_start) {
        state_text(out, job, a->closest, fmt_size(d, x, sizeof(x)));
    } else {
        fmt_size(d, x, sizeof(x));
        fprintf(out, "\nNo configuration fits on %s%s.\n", x,
                a->closest != NULL && a->closest->min_searched ? ", nor on any device up to 64 times its size" : "");
    }
    if (a->closest != NULL && !a->closest->run.failed) {
        fprintf(out, "The closest, ");
        oom_line(out, job, a->closest, true);
    }
}

/* The job's own run: the recorded settings' row (its rank and outcome); and
 * PyTorch's defaults' OOM, unless those are the recorded settings. */
static void baseline(FILE *out, const ga_fit_job_t *job, const ga_fit_outcome_t *oc, const ga_fit_answer_t *a)
{
    char ev[64];
    bool rec_defaults = false;
    for (size_t i = 0; i < oc->n; i++) {
        const ga_fit_result_t *r = &oc->results[i];
        if (!r->recorded)
            continue;
        rec_defaults = r->conf[0] == '\0';
        fprintf(out,
                "\nRecorded settings (the snapshot's allocator_settings, PYTORCH_CUDA_ALLOC_CONF=\"%s\"): "
                "replayed as \"%s\" at the recorded addresses, rank %zu: ",
                job->recorded_text ? job->recorded_text : "", r->conf[0] ? r->conf : "(defaults)", i + 1);
        if (r->run.failed) {
            fprintf(out, "could not be replayed (said on stderr)\n");
        } else if (r->run.fits) {
            fprintf(out, "fits\n");
        } else {
            fprintf(out, "OOM %s of %s%s\n", oom_where(r, ev, sizeof(ev)), unit(job, r->run.fail_unit)->label,
                    r->run.depends ? " (under part of the cap range)" : "");
            if (r->run.oom.size)
                ga_report_oom_facts(out, &r->run.oom, &unit(job, r->run.fail_unit)->cap, a->pick == NULL);
        }
        break;
    }
    for (size_t i = 0; i < oc->n && !rec_defaults; i++) {
        const ga_fit_result_t *r = &oc->results[i];
        if (r->recorded || r->conf[0] != '\0' || r->run.fits || r->run.failed)
            continue;
        fprintf(out, "\nUnder %s the job runs out of memory %s of %s:\n",
                job->env[0] ? "the environment's settings" : "the defaults", oom_where(r, ev, sizeof(ev)),
                unit(job, r->run.fail_unit)->label);
        if (r->run.oom.size)
            ga_report_oom_facts(out, &r->run.oom, &unit(job, r->run.fail_unit)->cap, a->pick == NULL);
        break;
    }
}

void ga_fit_report_text(FILE *out, const ga_fit_job_t *job, const ga_fit_outcome_t *oc, const ga_fit_report_t *rep)
{
    ga_fit_answer_t a;
    ga_fit_answer(job, oc, &a);
    summary(out, job, oc);
    ga_fit_table_text(out, job, oc, rep->top ? rep->top : 15);
    baseline(out, job, oc, &a);
    if (rep->owners != NULL) /* before the caveats and the answer, which end the report */
        ga_fit_owners_text(out, job, rep->owners);
    char c[MAX_CAVEATS][CAVEAT_LEN];
    size_t n = caveats(job, &a, c);
    for (size_t i = 0; i < n; i++)
        fprintf(out, "%s%s\n", i ? "  " : "\nCaveats:\n  ", c[i]);
    if (a.pick != NULL)
        answer_fits(out, job, &a);
    else
        answer_none(out, job, oc, &a);
    if (rep->plot != NULL)
        plot_names(out, job, rep->plot, false);
}

static void json_result(FILE *out, const ga_fit_result_t *r, size_t rank)
{
    fprintf(out, "\n  {\"rank\": %zu, \"conf\": ", rank);
    ga_report_json_str(out, r->conf);
    fprintf(out, ", \"recorded\": %s, \"stage\": \"%s\", \"fits\": %s, \"depends_on_cap\": %s, \"error\": ",
            r->recorded ? "true" : "false", r->stage, r->run.fits ? "true" : "false",
            r->run.depends ? "true" : "false");
    if (r->run.failed)
        ga_report_json_str(out, r->run.error);
    else
        fputs("null", out);
    if (r->run.refused != GALLOC_OK) /* as galloc replay's column has it: the Python API raises by it */
        fprintf(out, ", \"create_status\": \"%s\"", galloc_status_name(r->run.refused));
    fprintf(out,
            ",\n   \"peak_reserved_bytes\": %" PRId64 ", \"peak_allocated_bytes\": %" PRId64
            ", \"peak_requested_bytes\": %" PRId64 ", \"allocated_at_peak_bytes\": %" PRId64
            ", \"asleep_at_peak_bytes\": %" PRId64 ",\n   \"ooms_total\": %" PRIu64 ", \"num_device_alloc\": %" PRIu64
            ", \"num_device_free\": %" PRIu64 ", \"num_alloc_retries\": %" PRIu64 ", \"expected_ooms\": %" PRIu64
            ", \"expected_ooms_avoided\": %" PRIu64
            ",\n   \"fragmentation_at_peak\": %.6f, \"external_fragmentation_at_peak\": %.6f"
            ", \"largest_free_block_at_peak\": %" PRId64 ",\n   \"min_device_memory\": ",
            r->run.peak_reserved, r->run.peak_allocated, r->run.peak_requested, r->run.allocated_at_peak,
            r->run.asleep_at_peak, r->run.ooms, r->run.device_allocs, r->run.device_frees, r->run.retries,
            r->run.expected_ooms, r->run.expected_avoided, ga_fit_frag_at_peak(&r->run), r->run.external_frag_at_peak,
            r->run.largest_free_at_peak);
    if (r->min_searched && r->min_memory)
        fprintf(out, "%" PRIu64, r->min_memory);
    else
        fputs("null", out);
    fprintf(out,
            ", \"min_device_memory_searched\": %s, \"replays\": %" PRIu32 ", \"seconds\": %.3f,\n   \"first_oom\": ",
            r->min_searched ? "true" : "false", r->replays, r->seconds);
    if (r->run.fits || r->run.failed) {
        fputs("null}", out);
        return;
    }
    fprintf(out, "{\"trace\": %zu, \"event\": %" PRIu64 ", \"size\": %" PRIu64 ", \"class\": ", r->run.fail_unit,
            r->run.fail_event, r->run.oom.size);
    ga_report_json_oom_facts(out, &r->run.oom);
    fputs("}}", out);
}

static void json_ref(FILE *out, const ga_fit_outcome_t *oc, const ga_fit_result_t *r)
{
    if (r == NULL)
        fputs("null", out);
    else
        fprintf(out, "%zu", (size_t)(r - oc->results) + 1);
}

void ga_fit_report_json(FILE *out, const ga_fit_job_t *job, const ga_fit_outcome_t *oc, const ga_fit_report_t *rep)
{
    ga_fit_answer_t a;
    ga_fit_answer(job, oc, &a);
    fprintf(out,
            "{\"tool\": \"galloc fit\", \"version\": 2, \"device_memory\": %" PRIu64 ", \"events\": %" PRIu64
            ", \"reserve\": %" PRIu64 ",\n \"traces\": [",
            job->job->n_units ? unit(job, job->ref)->memory : 0, job->events, job->reserve);
    for (size_t u = 0; u < job->job->n_units; u++) {
        fprintf(out, "%s\n    {\"label\": ", u ? "," : "");
        ga_report_json_str(out, unit(job, u)->label);
        fputs(", ", out);
        ga_report_unit_json(out, unit(job, u));
        fputs("}", out);
    }
    fprintf(out,
            "],\n \"seconds\": %.3f, \"threads\": %u, \"configurations\": %zu, \"fits\": %s,\n"
            " \"pytorch_cuda_alloc_conf\": ",
            oc->seconds, oc->jobs, oc->n, a.pick ? "true" : "false");
    if (a.pick != NULL)
        ga_report_json_str(out, a.pick->conf);
    else
        fputs("null", out);
    fputs(",\n \"answer\": {\"pick\": ", out);
    json_ref(out, oc, a.pick);
    fprintf(out, ", \"keep_recorded\": %s, \"saving\": %.6f, \"best\": ", a.keep_recorded ? "true" : "false", a.saving);
    json_ref(out, oc, a.best);
    fputs(", \"lightest\": ", out);
    json_ref(out, oc, a.lightest);
    fputs(", \"recorded\": ", out);
    json_ref(out, oc, a.recorded);
    fputs(", \"closest\": ", out);
    json_ref(out, oc, a.closest);
    fputs(", \"cliff\": ", out);
    json_ref(out, oc, a.cliff);
    fputs(", \"smaller\": ", out);
    json_ref(out, oc, a.smaller);
    /* min_device_memory is the device's size for the allocator, or under a cap the cap */
    fprintf(out, ", \"min_device_memory_is\": \"%s\"},\n \"caveats\": [", ga_fit_capped(job) ? "cap" : "device");
    char c[MAX_CAVEATS][CAVEAT_LEN];
    size_t n = caveats(job, &a, c);
    for (size_t i = 0; i < n; i++) {
        fputs(i ? ", " : "", out);
        ga_report_json_str(out, c[i]);
    }
    fprintf(out, "],\n \"sleep_events\": %" PRIu64 ", \"no_sleep\": %s", job->sleep_events,
            job->no_sleep ? "true" : "false");
    fputs(",\n \"environment\": ", out); /* what --env applied under every configuration, null: nothing */
    if (job->env[0])
        ga_report_json_str(out, job->env);
    else
        fputs("null", out);
    fputs(",\n \"recorded_conf\": ", out);
    if (job->recorded != NULL) {
        ga_report_json_str(out, job->recorded);
        fputs(", \"recorded_pytorch_cuda_alloc_conf\": ", out);
        ga_report_json_str(out, job->recorded_text ? job->recorded_text : "");
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
    fputs(",\n \"owners\": ", out);
    if (rep->owners != NULL)
        ga_fit_owners_json(out, job, rep->owners);
    else
        fputs("null", out);
    fputs(",\n \"results\": [", out);
    for (size_t i = 0; i < oc->n; i++) {
        fputs(i ? "," : "", out);
        json_result(out, &oc->results[i], i + 1);
    }
    fputs("\n ]}\n", out);
}
