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

/* One configuration on the plot. */
typedef struct shown {
    char label[GA_FIT_CONF_MAX + 16]; /* legend text */
    ga_fit_run_t run;                 /* its replay at the searched device size */
    ga_sampler_t *samplers;           /* memory over time, one per unit */
    ga_replay_oom_t oom;              /* its first OOM as a plot marker (when !run.fits) */
} shown_t;

static int replay_shown(const ga_fit_job_t *job, const char *conf, shown_t *s, char *err, size_t errlen)
{
    s->samplers = calloc(job->n_units ? job->n_units : 1, sizeof(*s->samplers));
    if (s->samplers == NULL)
        goto err_nomem;
    for (size_t u = 0; u < job->n_units; u++)
        if (ga_sampler_init(&s->samplers[u]) != 0)
            goto err_nomem;
    if (ga_fit_replay_sampled(job, conf, job->device_memory, &s->run, s->samplers) != 0) {
        snprintf(err, errlen, "--plot: configuration \"%s\": %s", conf, s->run.error);
        return -1;
    }
    if (!s->run.fits) {
        s->oom.event = s->run.fail_event;
        s->oom.size = s->run.oom.size;
        s->oom.facts = s->run.oom;
    }
    return 0;

err_nomem:
    snprintf(err, errlen, "--plot: out of host memory");
    return -1;
}

static void shown_free(const ga_fit_job_t *job, shown_t *s)
{
    for (size_t u = 0; s->samplers != NULL && u < job->n_units; u++)
        ga_sampler_free(&s->samplers[u]);
    free(s->samplers);
    s->samplers = NULL;
}

int ga_fit_plot(const ga_fit_job_t *job, const ga_fit_outcome_t *oc, const char *path, char *err, size_t errlen)
{
    shown_t s[2];
    memset(s, 0, sizeof(s));
    const ga_fit_result_t *w = oc->n ? &oc->results[0] : NULL;
    size_t n = w != NULL && w->conf[0] != '\0' ? 2 : 1; /* a winning "defaults" is one line */
    snprintf(s[0].label, sizeof(s[0].label), "%s", job->env[0] ? "environment" : "defaults");
    if (n == 2)
        snprintf(s[1].label, sizeof(s[1].label), "%s: %s", w->run.fits ? "winner" : "closest", w->conf);
    int rc = replay_shown(job, "", &s[0], err, errlen);
    if (rc == 0 && n == 2)
        rc = replay_shown(job, w->conf, &s[1], err, errlen);
    for (size_t u = 0; rc == 0 && u < job->n_units; u++) {
        char *name = ga_outputs_name(path, u, job->n_units);
        if (name == NULL) {
            snprintf(err, errlen, "--plot: out of host memory");
            rc = -1;
            break;
        }
        ga_plot_run_t runs[2];
        for (size_t i = 0; i < n; i++)
            runs[i] = (ga_plot_run_t){.label = s[i].label, .sampler = &s[i].samplers[u], .ooms = &s[i].oom,
                                      .n_ooms = !s[i].run.fits && s[i].run.fail_unit == u};
        rc = ga_outputs_plot_runs(name, job->units[u].label, job->device_memory, job->units[u].n, runs, n, err,
                                  errlen);
        free(name);
    }
    for (size_t i = 0; i < n; i++)
        shown_free(job, &s[i]);
    return rc;
}
