/*
 * fit_table.c: galloc fit's ranked table (ga_fit_table_text in fit.h) and the
 * lines under it that say what its figures are and how it is ordered, so no
 * cell reads as a contradiction of another: the rule the rows are ranked by
 * (ga_fit_better), the moment frag@peak is taken at, and what "-" and
 * "> 64x" under min device mean. Each line is printed where it applies.
 */
#include <stdlib.h>
#include <string.h>

#include "tools/fit/fit.h"
#include "tools/readers/units.h"

double ga_fit_frag_at_peak(const ga_fit_run_t *r)
{
    /* With tags asleep both sides count their blocks: allocated has them, so
     * reserved gets their address space back (bytes asleep). */
    int64_t held = r->peak_reserved + r->asleep_at_peak;
    return held > 0 ? 1.0 - (double)r->allocated_at_peak / (double)held : 0.0;
}

bool ga_fit_capped(const ga_fit_job_t *job)
{
    return job->job->n_units && job->job->units[job->ref].cap.inferred;
}

static void fits_cell(const ga_fit_result_t *r, char *b, size_t n)
{
    snprintf(b, n, "%s", r->run.failed ? "err" : r->run.fits ? "yes" : r->run.depends ? "cap?" : "no");
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
    if (r->run.oom.at_start) /* the state the trace starts in: before event 0 */
        snprintf(ev, sizeof(ev), "before event 0");
    else
        ga_units_format_count(r->run.fail_event, ev, sizeof(ev));
    if (job->job->n_units > 1)
        snprintf(b, n, "#%zu:%s %s", r->run.fail_unit + 1, ev, ga_oom_class_name(r->run.oom.cls));
    else
        snprintf(b, n, "%s %s", ev, ga_oom_class_name(r->run.oom.cls));
}

/* What the cells shown hold that needs saying under the table. */
typedef struct seen {
    bool not_searched; /* a "-" under min device of a row that replayed */
    bool beyond;       /* a "> 64x" */
    bool at_start;     /* a first OOM before event 0: the peaks are of the state's seeded part */
    size_t refused;    /* rows left out: their configuration could not be made */
} seen_t;

void ga_fit_table_text(FILE *out, const ga_fit_job_t *job, const ga_fit_outcome_t *oc, size_t top)
{
    char d[32], e[32];
    seen_t s = {0};
    fprintf(out, "%4s  %-4s  %13s  %14s  %9s  %11s  %-22s  %s\n", "rank", "fits", "peak reserved", "peak allocated",
            "frag@peak", ga_fit_capped(job) ? "min cap" : "min device", "first OOM (event)", "configuration");
    size_t shown = 0;
    for (size_t i = 0; i < oc->n; i++) {
        const ga_fit_result_t *r = &oc->results[i];
        if (r->run.refused != GALLOC_OK) { /* said on stderr; a row of "-" would say nothing */
            s.refused++;
            continue;
        }
        if (shown >= top && !r->recorded)
            continue;
        shown++;
        char oom[64], minm[32], f[8];
        first_oom_cell(job, r, oom, sizeof(oom));
        s.at_start |= !r->run.fits && !r->run.failed && r->run.oom.at_start;
        fits_cell(r, f, sizeof(f));
        if (!r->min_searched) {
            snprintf(minm, sizeof(minm), "-");
            s.not_searched |= !r->run.failed;
        } else if (r->min_memory == 0) {
            snprintf(minm, sizeof(minm), "> 64x");
            s.beyond = true;
        } else {
            ga_units_format_size(r->min_memory, minm, sizeof(minm));
        }
        ga_units_format_bytes(r->run.peak_reserved, d, sizeof(d));
        ga_units_format_bytes(r->run.peak_allocated, e, sizeof(e));
        fprintf(out, "%4zu  %-4s  %13s  %14s  %8.1f%%  %11s  %-22s  %s\n", i + 1, f, d, e,
                100.0 * ga_fit_frag_at_peak(&r->run), minm, oom, ga_fit_conf_name(job, r));
    }
    size_t listed = oc->n - s.refused;
    if (listed > top)
        fprintf(out, "(%zu of %zu shown: --top N for more, --json for all)\n", top, listed);
    if (s.refused)
        fprintf(out, "(%zu configuration%s could not be made and %s left out: said on stderr)\n", s.refused,
                s.refused == 1 ? "" : "s", s.refused == 1 ? "is" : "are");
    /* the rule of ga_fit_better, in its order */
    fprintf(out,
            "ranked: fitting first; then the smaller peak reserved, peaks within %.1f %% of each other being a tie "
            "(a replay predicts a real run's peak to about that), which goes to the job's own run, then to the "
            "shorter setting; of those that do not fit, the one whose first OOM comes later first\n",
            100.0 * GA_FIT_TIE);
    fprintf(out,
            "frag@peak: the share of peak reserved not allocated at the moment reserved first reached its peak%s "
            "(later allocations may fill it: peak allocated can then equal peak reserved)\n",
            job->sleep_events && !job->no_sleep ? ", bytes asleep counted on both sides" : "");
    if (s.at_start)
        fprintf(out,
                "before event 0: the state the trace starts in does not fit, and nothing after it is replayed; the "
                "peaks are of the part of it seeded before the request that failed\n");
    if (s.not_searched)
        fprintf(out,
                "%s -: not searched: --bisect N bisects the N best configurations and the job's own run "
                "(default 10); --bisect all bisects every one\n",
                ga_fit_capped(job) ? "min cap" : "min device");
    if (s.beyond)
        fprintf(out, "%s > 64x: it fits no %s up to 64 times this one\n", ga_fit_capped(job) ? "min cap" : "min device",
                ga_fit_capped(job) ? "cap" : "device");
}
