/*
 * fit_plot.c: `galloc fit --plot FILE` (ga_fit_plot in fit.h): the answer as a
 * picture: the job's memory over time under PyTorch's defaults, where that
 * run goes out of memory and of which class (can a setting help?), next to
 * the winning configuration's.
 *
 * The search's replays keep no time series (a sample every stride events in
 * each of hundreds of replays, for two lines); the two runs shown are replayed
 * once more here with sampling and the search's semantics (each stops at its
 * first OOM), so the lines and markers are the runs the table reports.
 * Drawing goes through ga_outputs_plot_runs, as galloc replay's plots do.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/fit/fit.h"
#include "tools/report/outputs.h"

/* One configuration on the plot: its columns, one per unit, with sampling. */
typedef struct shown {
    char label[GA_FIT_CONF_MAX + 24]; /* legend text */
    ga_replay_column_t *cols;         /* one per unit */
} shown_t;

static int replay_shown(const ga_fit_job_t *job, const ga_fit_result_t *r, shown_t *s, char *err, size_t errlen)
{
    size_t n = job->job->n_units;
    s->cols = calloc(n ? n : 1, sizeof(*s->cols));
    if (s->cols == NULL) {
        snprintf(err, errlen, "--plot: out of host memory");
        return -1;
    }
    ga_replay_opts_t o = {
        .backend = job->backend, .env = job->env[0] != '\0', .no_sleep = job->no_sleep, .sample = true};
    ga_replay_spec_t spec = {.conf = r != NULL ? r->conf : "", .recorded = r != NULL && r->recorded};
    for (size_t u = 0; u < n; u++) {
        if (ga_replay_column(&job->job->units[u], &o, &spec, NULL, &s->cols[u]) != 0) {
            snprintf(err, errlen, "--plot: out of host memory");
            return -1;
        }
        if (s->cols[u].create_status != GALLOC_OK) {
            snprintf(err, errlen, "--plot: configuration \"%s\": %s", spec.conf, s->cols[u].create_error);
            return -1;
        }
    }
    return 0;
}

static void shown_free(const ga_fit_job_t *job, shown_t *s)
{
    for (size_t u = 0; s->cols != NULL && u < job->job->n_units; u++)
        ga_replay_column_release(&s->cols[u]);
    free(s->cols);
    s->cols = NULL;
}

int ga_fit_plot(const ga_fit_job_t *job, const ga_fit_outcome_t *oc, const char *path, char *err, size_t errlen)
{
    shown_t s[2];
    memset(s, 0, sizeof(s));
    ga_fit_answer_t a;
    ga_fit_answer(job, oc, &a);
    /* the job's own run (else PyTorch's defaults) and the answer (else the closest) */
    const ga_fit_result_t *base = a.recorded, *other = a.pick != NULL ? a.pick : a.closest;
    size_t n = other != NULL && other != base && (base != NULL || other->conf[0] != '\0') ? 2 : 1;
    snprintf(s[0].label, sizeof(s[0].label), "%s",
             base != NULL  ? "recorded"
             : job->env[0] ? "environment"
                           : "defaults");
    if (n == 2)
        snprintf(s[1].label, sizeof(s[1].label), "%s: %s", a.pick != NULL ? "answer" : "closest",
                 other->conf[0] ? other->conf : "defaults");
    int rc = replay_shown(job, base, &s[0], err, errlen);
    if (rc == 0 && n == 2)
        rc = replay_shown(job, other, &s[1], err, errlen);
    size_t nu = job->job->n_units;
    for (size_t u = 0; rc == 0 && u < nu; u++) {
        char *name = ga_outputs_name(path, u, nu);
        if (name == NULL) {
            snprintf(err, errlen, "--plot: out of host memory");
            rc = -1;
            break;
        }
        ga_plot_run_t runs[2];
        for (size_t i = 0; i < n; i++)
            runs[i] = (ga_plot_run_t){.label = s[i].label,
                                      .sampler = &s[i].cols[u].sampler,
                                      .ooms = s[i].cols[u].ooms,
                                      .n_ooms = s[i].cols[u].n_ooms,
                                      .ooms_total = s[i].cols[u].ooms_total};
        const ga_job_unit_t *un = &job->job->units[u];
        rc = ga_outputs_plot_runs(name, un->label, un->memory, un->n, runs, n, err, errlen);
        free(name);
    }
    for (size_t i = 0; i < n; i++)
        shown_free(job, &s[i]);
    return rc;
}
