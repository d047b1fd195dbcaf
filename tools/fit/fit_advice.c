/*
 * fit_advice.c: the answer galloc fit gives from its ranked outcome
 * (ga_fit_answer in fit.h), by rules a user can check (docs/fit.md, "How the
 * answer is chosen"):
 *   - the smallest change that fits: a job that fits under its recorded
 *     settings keeps them unless another setting saves at least GA_FIT_WORTH
 *     of its peak reserved (a smaller saving is stated, not advised);
 *   - peaks within GA_FIT_TIE are ties, which the shorter string wins
 *     (ga_fit_better), so no winner is picked by noise;
 *   - a pick whose neighbouring value of one knob is much worse (by
 *     GA_FIT_CLIFF, or does not fit) sits next to a cliff: said, with the
 *     neighbour;
 *   - one smallest memory is quoted, the pick's; another result that fits a
 *     smaller one is named beside it.
 */
#include <string.h>

#include "tools/fit/fit.h"

/* Whether a and b differ in exactly one of the knobs with neighbouring
 * values (max_split_size_mb, roundup_power2_divisions, the GC threshold,
 * max_non_split_rounding_mb), expandable_segments being the same. */
static bool one_knob_apart(const ga_fit_axes_t *a, const ga_fit_axes_t *b)
{
    if (a->es != b->es)
        return false;
    int d = (a->ms != b->ms) + (a->rd != b->rd) + (a->gc != b->gc) + (a->nsr != b->nsr);
    return d == 1;
}

static const ga_fit_result_t *cliff_of(const ga_fit_outcome_t *oc, const ga_fit_result_t *pick)
{
    if (pick == NULL || !pick->has_axes)
        return NULL;
    const ga_fit_result_t *worst = NULL;
    for (size_t i = 0; i < oc->n; i++) {
        const ga_fit_result_t *r = &oc->results[i];
        if (r == pick || !r->has_axes || r->run.failed || !one_knob_apart(&r->axes, &pick->axes))
            continue;
        bool much =
            !r->run.fits || (double)r->run.peak_reserved > (1.0 + GA_FIT_CLIFF) * (double)pick->run.peak_reserved;
        if (!much)
            continue;
        if (worst == NULL || (worst->run.fits && (!r->run.fits || r->run.peak_reserved > worst->run.peak_reserved)))
            worst = r;
    }
    return worst;
}

void ga_fit_answer(const ga_fit_job_t *job, const ga_fit_outcome_t *oc, ga_fit_answer_t *out)
{
    (void)job;
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < oc->n; i++) {
        const ga_fit_result_t *r = &oc->results[i];
        if (r->recorded && out->recorded == NULL)
            out->recorded = r;
        if (r->run.fits && out->best == NULL)
            out->best = r;
        if (r->run.fits && (out->lightest == NULL || r->run.peak_reserved < out->lightest->run.peak_reserved))
            out->lightest = r;
    }
    if (out->best == NULL) {
        out->closest = oc->n ? &oc->results[0] : NULL;
        return;
    }
    out->pick = out->best;
    const ga_fit_result_t *rec = out->recorded;
    if (rec != NULL && rec->run.fits) {
        int64_t rp = rec->run.peak_reserved;
        out->saving = rp > 0 ? (double)(rp - out->lightest->run.peak_reserved) / (double)rp : 0.0;
        out->keep_recorded = out->best == rec || out->saving < GA_FIT_WORTH;
        if (out->keep_recorded)
            out->pick = rec;
    }
    out->cliff = cliff_of(oc, out->pick);
    for (size_t i = 0; i < oc->n && out->pick->min_searched && out->pick->min_memory; i++) {
        const ga_fit_result_t *r = &oc->results[i];
        if (r != out->pick && r->min_searched && r->min_memory && r->min_memory < out->pick->min_memory &&
            (out->smaller == NULL || r->min_memory < out->smaller->min_memory))
            out->smaller = r;
    }
}
